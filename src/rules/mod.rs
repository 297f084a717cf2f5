//! Rules from schemas, language models and executions: `sfz init` writes an API's skeleton from
//! its operator schema (`skeleton`), `sfz suggest` proposes candidate rules (`propose::llm`, with
//! the offline `propose::enumerate` generator as fallback), `sfz infer` keeps the candidates
//! executions support (`infer`, with the candidates libtorch's errors suggest handed in from
//! `propose`) and drops those others imply (`reduce`); `sfz suggest` shows a model the errors
//! libtorch raised on conforming inputs (`rejections`). Results go back into the spec file as
//! `rule` items with their status and evidence, through the formatter (`write_rules`).
pub mod domains;
pub mod infer;
pub mod oracles;
pub mod propose;
pub mod reduce;
pub mod rejections;
#[cfg(test)]
mod search_tests;
pub mod skeleton;

use crate::ast::ItemKind;
use crate::spec::{RuleSource, RuleStatus};

/// A proposed rule: a name and its constraint statements (each ending in `;`).
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    pub name: String,
    pub text: String,
    pub source: RuleSource,
}

/// A rule to write: a candidate with what became of it.
#[derive(Clone, Debug, PartialEq)]
pub struct Judged {
    pub candidate: Candidate,
    pub status: RuleStatus,
    pub confidence: Option<f64>,
    /// Named counts, e.g. `[("pass", 58), ("fail", 0)]`.
    pub evidence: Vec<(String, i64)>,
}

impl Judged {
    /// A candidate not yet judged.
    pub fn candidate(candidate: Candidate) -> Judged {
        Judged { candidate, status: RuleStatus::Candidate, confidence: None, evidence: Vec::new() }
    }
}

fn status_word(s: &RuleStatus) -> &'static str {
    match s {
        RuleStatus::Candidate => "candidate",
        RuleStatus::Validated => "validated",
        RuleStatus::Rejected => "rejected",
    }
}

fn source_word(s: &RuleSource) -> &'static str {
    match s {
        RuleSource::Manual => "manual",
        RuleSource::Llm => "llm",
        RuleSource::Inferred => "inferred",
    }
}

/// One `rule` item's text (not yet formatted).
pub fn rule_text(api: &str, rule: &Judged) -> String {
    let mut attrs = vec![format!("status({})", status_word(&rule.status)), format!("source({})", source_word(&rule.candidate.source))];
    if let Some(c) = rule.confidence {
        attrs.push(format!("confidence({})", (c.clamp(0.0, 1.0) * 100.0).round() / 100.0));
    }
    if !rule.evidence.is_empty() {
        attrs.push(format!("evidence({})", rule.evidence.iter().map(|(k, v)| format!("{k} = {v}")).collect::<Vec<_>>().join(", ")));
    }
    format!("#[{}]\nrule {} for {api} {{\n    {}\n}}\n", attrs.join(", "), rule.candidate.name, rule.candidate.text.trim())
}

/// Candidate rules for an API, as text; `status` overrides the candidate status when given.
pub fn rules_text(api: &str, candidates: &[Candidate], status: Option<RuleStatus>) -> String {
    candidates
        .iter()
        .map(|c| {
            let mut j = Judged::candidate(c.clone());
            if let Some(s) = &status {
                j.status = s.clone();
            }
            rule_text(api, &j)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A rule name made safe: letters, digits and `_`, not starting with a digit, at most 60 chars.
pub fn sanitize_name(name: &str) -> String {
    let mut s: String = name.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' }).collect();
    while s.contains("__") {
        s = s.replace("__", "_");
    }
    let s = s.trim_matches('_').chars().take(60).collect::<String>();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        format!("r_{s}")
    } else {
        s
    }
}

/// Writes rules for `api` into a spec file's text: rules of that API whose names are in
/// `replace` are removed, the new ones go right after the API's last item (the API or one of its
/// rules), and the file is formatted. A new rule whose name a kept rule already has gets a
/// numeric suffix. Returns None when the text does not parse.
pub fn write_rules(text: &str, api: &str, rules: &[Judged], replace: &[String]) -> Option<String> {
    let rules: Vec<(Judged, Option<String>)> = rules.iter().map(|r| (r.clone(), None)).collect();
    write_rules_with_reasons(text, api, &rules, replace)
}

/// `write_rules`, each rule with an optional `reason` attribute.
pub fn write_rules_with_reasons(text: &str, api: &str, rules: &[(Judged, Option<String>)], replace: &[String]) -> Option<String> {
    let (module, diags) = crate::syntax::parse(crate::diag::FileId(0), text);
    if diags.iter().any(|d| d.is_error()) {
        return None;
    }
    let mut removals: Vec<(usize, usize)> = Vec::new();
    let mut kept_names: Vec<String> = Vec::new();
    let mut anchor: Option<usize> = None;
    for item in &module.items {
        match &item.kind {
            ItemKind::Api(a) if a.path.name == api => anchor = Some(item.span.hi as usize),
            ItemKind::Rule(r) if r.target.name == api => {
                if replace.contains(&r.name.name) {
                    removals.push((item.span.lo as usize, item.span.hi as usize));
                } else {
                    kept_names.push(r.name.name.clone());
                    anchor = Some(item.span.hi as usize);
                }
            }
            _ => {}
        }
    }
    let mut block = String::new();
    for (rule, reason) in rules {
        let mut r = rule.clone();
        let base = r.candidate.name.clone();
        let mut n = 2;
        while kept_names.contains(&r.candidate.name) {
            r.candidate.name = format!("{base}_{n}");
            n += 1;
        }
        kept_names.push(r.candidate.name.clone());
        block.push('\n');
        block.push_str(&oracles::rule_with_reason(api, &r, reason.as_deref()));
    }
    // Apply from the end so earlier offsets stay valid.
    let anchor = anchor.unwrap_or(text.len());
    let mut edits: Vec<(usize, usize, String)> = removals.into_iter().map(|(lo, hi)| (lo, hi, String::new())).collect();
    edits.push((anchor, anchor, block));
    edits.sort_by_key(|e| std::cmp::Reverse((e.0, e.1)));
    let mut out = text.to_string();
    for (lo, hi, with) in edits {
        if lo <= hi && hi <= out.len() {
            out.replace_range(lo..hi, &with);
        }
    }
    Some(crate::fmt::format_text(&out).unwrap_or(out))
}

/// Removes an `api` item and its rules from a file's text (formatted). None when the text does
/// not parse.
pub fn remove_api(text: &str, api: &str) -> Option<String> {
    let (module, diags) = crate::syntax::parse(crate::diag::FileId(0), text);
    if diags.iter().any(|d| d.is_error()) {
        return None;
    }
    let mut out = text.to_string();
    for item in module.items.iter().rev() {
        let hit = match &item.kind {
            ItemKind::Api(a) => a.path.name == api,
            ItemKind::Rule(r) => r.target.name == api,
            _ => false,
        };
        if hit {
            out.replace_range(item.span.range(), "");
        }
    }
    Some(crate::fmt::format_text(&out).unwrap_or(out))
}

/// The identifiers of a text (a rule's statement, libtorch's complaint): runs of letters,
/// digits and underscores.
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|w| !w.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_are_written_after_their_api_and_replace_old_ones() {
        let text = "api torch.exp(input: Tensor) {}\n\n#[status(candidate), source(llm)]\nrule a for torch.exp {\n    input.ndim >= 1;\n}\n\napi torch.log(input: Tensor) {}\n";
        let judged = Judged {
            candidate: Candidate { name: "a".into(), text: "input.ndim >= 1;".into(), source: RuleSource::Llm },
            status: RuleStatus::Rejected,
            confidence: Some(0.9),
            evidence: vec![("pass".into(), 3), ("fail".into(), 0)],
        };
        let out = write_rules(text, "torch.exp", &[judged], &["a".to_string()]).unwrap();
        assert_eq!(out.matches("rule a for torch.exp").count(), 1, "{out}");
        assert!(out.contains("#[status(rejected), source(llm), confidence(0.9), evidence(pass = 3, fail = 0)]"), "{out}");
        assert!(out.find("rule a").unwrap() < out.find("api torch.log").unwrap(), "{out}");
        assert_eq!(crate::fmt::format_text(&out).unwrap(), out, "formatted");
    }

    #[test]
    fn an_api_is_removed_with_its_rules() {
        let text = "api torch.exp(input: Tensor) {}\n\nrule a for torch.exp {\n    input.ndim >= 1;\n}\n\napi torch.log(input: Tensor) {}\n";
        let out = remove_api(text, "torch.exp").unwrap();
        assert_eq!(out, "api torch.log(input: Tensor) {}\n");
    }

    #[test]
    fn names_are_sanitized() {
        assert_eq!(sanitize_name("Input-Dtype: float"), "input_dtype_float");
        assert_eq!(sanitize_name("3d"), "r_3d");
    }
}
