//! Which differential oracles an API keeps. An API without an `oracles` clause gets every oracle
//! that applies to it (`check::IMPLIED_ORACLES`, less those its operator has no twin for);
//! `sfz infer --oracles` runs them on conforming inputs of ordinary magnitude and records the
//! verdict as rules: one validated rule naming the oracles that stayed silent, with how many
//! cases they saw, and one rejected rule per oracle that disagreed, with the first disagreement
//! as its reason. A rejected rule refutes its oracle: the API no longer gets it.
use super::{rule_text, Candidate, Judged};
use crate::spec::{RuleSource, RuleStatus};
use crate::wire::oracle::Oracle;

/// What validation concluded for one API.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct OracleVerdicts {
    pub api: String,
    /// Conforming cases run.
    pub cases: u64,
    /// The oracles that stayed silent.
    pub kept: Vec<Oracle>,
    /// The oracles that disagreed on ordinary inputs, with the first disagreement.
    pub refuted: Vec<(Oracle, String)>,
}

/// The name of the rule that keeps oracles, and of the one that refutes `oracle`.
pub const KEPT_RULE: &str = "oracles_hold";
pub fn refuted_rule(oracle: Oracle) -> String {
    format!("not_{oracle}")
}

/// The rules recording `v`, and the names of earlier ones they replace.
pub fn rules(v: &OracleVerdicts, previous: &[String]) -> (Vec<(Judged, Option<String>)>, Vec<String>) {
    let mut out = Vec::new();
    if !v.kept.is_empty() {
        let candidate =
            Candidate { name: KEPT_RULE.into(), text: format!("oracles {};", v.kept.iter().map(|o| o.as_str()).collect::<Vec<_>>().join(", ")), source: RuleSource::Inferred };
        out.push((Judged { candidate, status: RuleStatus::Validated, confidence: None, evidence: vec![("cases".into(), v.cases as i64), ("disagreed".into(), 0)] }, None));
    }
    for (oracle, reason) in &v.refuted {
        let candidate = Candidate { name: refuted_rule(*oracle), text: format!("oracles {oracle};"), source: RuleSource::Inferred };
        let judged = Judged { candidate, status: RuleStatus::Rejected, confidence: None, evidence: vec![("cases".into(), v.cases as i64)] };
        out.push((judged, Some(reason.clone())));
    }
    // Earlier verdicts on the same oracles go; so does an earlier refutation now kept.
    let replace = previous.iter().filter(|n| *n == KEPT_RULE || n.starts_with("not_")).cloned().collect();
    (out, replace)
}

/// One rule's text with its `reason` attribute.
pub fn rule_with_reason(api: &str, rule: &Judged, reason: Option<&str>) -> String {
    let text = rule_text(api, rule);
    match (reason, text.find("]\n")) {
        (Some(r), Some(end)) => format!("{}, reason({})]\n{}", &text[..end], quote(r), &text[end + 2..]),
        _ => text,
    }
}

/// A string literal of the language: one line, at most 200 characters, `"` and `\` escaped.
fn quote(s: &str) -> String {
    let line: String = s.lines().next().unwrap_or("").chars().take(200).collect();
    format!("\"{}\"", line.replace('\\', "\\\\").replace('"', "\\\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_become_a_validated_and_rejected_rules() {
        let v = OracleVerdicts {
            api: "torch.round".into(),
            cases: 200,
            kept: vec![Oracle::Precision, Oracle::Layout],
            refuted: vec![(Oracle::Gradient, "gradient of output 0 differs: \"x\" 0 vs 1".into())],
        };
        let (rules, replace) = rules(&v, &["not_out".into(), "small".into()]);
        assert_eq!(replace, vec!["not_out".to_string()]);
        let texts: Vec<String> = rules.iter().map(|(r, why)| rule_with_reason("torch.round", r, why.as_deref())).collect();
        assert!(
            texts[0]
                .starts_with("#[status(validated), source(inferred), evidence(cases = 200, disagreed = 0)]\nrule oracles_hold for torch.round {\n    oracles precision, layout;"),
            "{}",
            texts[0]
        );
        assert!(texts[1].contains("status(rejected)") && texts[1].contains(r#"reason("gradient of output 0 differs: \"x\" 0 vs 1")"#), "{}", texts[1]);
        assert!(texts[1].contains("rule not_gradient for torch.round {\n    oracles gradient;"), "{}", texts[1]);
    }
}
