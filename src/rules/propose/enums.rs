//! Value sets of string parameters, learned from libtorch itself. A `str` parameter is drawn at
//! its default unless a constraint names other values, so a skeleton never tries
//! `rounding_mode="floor"` or `mode="reflect"`. libtorch says what it accepts when given a value
//! it does not know ("expected one of 'reduced' (default), 'r', or 'complete'"): `sfz infer` passes
//! a probe string, reads the values out of the errors (or, when the errors list none, out of the
//! parameter's documentation), tries each value, and keeps those some input runs with as
//! `p in [...]`, a rule validated by those runs.
use std::time::Instant;

use crate::gen::mix;
use crate::ops::docs;
use crate::oracle::Status;
use crate::rules::infer::{sample, InferConfig, Learned, Runner};
use crate::rules::Candidate;
use crate::spec::{ApiSpec, BinOp, Category, Constraint, Origin, ParamType, RuleSource, TExpr, Value};
use crate::wire::case::Arg;

/// A value no API accepts for a string parameter.
pub const PROBE: &str = "sfz_probe_value";

/// Inputs per probe and per value tried.
const CASES: usize = 6;

/// The values an error message lists as the accepted ones, `probe` excluded: quoted words when
/// there are any (`'trunc', or 'floor'`), else the words of the list after "one of", "either",
/// "be" (`must be either sum, prod, mean, amax or amin, got ...`).
pub fn values_in_message(message: &str, probe: &str) -> Vec<String> {
    let line = message.lines().next().unwrap_or_default();
    let mut out = Vec::new();
    let quoted = quoted_words(line);
    if !quoted.is_empty() {
        for w in quoted {
            push_word(&mut out, &w, probe);
        }
        return out;
    }
    let lower = line.to_ascii_lowercase();
    let Some(start) = ["one of", "either", "only be", "to be", "must be", "should be"].iter().find_map(|a| lower.find(a).map(|i| i + a.len())) else {
        return out;
    };
    let rest = &line[start..];
    let end = [", but", " but ", ", got", " got ", ", received", " received", ", found", " found "]
        .iter()
        .filter_map(|t| rest.find(t))
        .chain(rest.rfind('.').filter(|i| *i + 1 == rest.trim_end().len()))
        .min()
        .unwrap_or(rest.len());
    let list = rest[..end].replace(" or ", ",").replace(" and ", ",");
    for w in list.split(',') {
        let w = w.trim().trim_start_matches(['(', '[', ':']).trim_end_matches([')', ']', '.', ';']).trim();
        let w = w.strip_prefix("or ").unwrap_or(w);
        push_word(&mut out, w.split_whitespace().next().unwrap_or_default(), probe);
    }
    // A sentence that names no list ("to be positive"): one word is no value set.
    if out.len() < 2 {
        out.clear();
    }
    out
}

/// The values a docstring quotes in the entry of parameter `param` (` ``"forward"`` `, `'none'`).
pub fn values_in_docs(doc: &str, param: &str) -> Vec<String> {
    let mut out = Vec::new();
    let Some(start) = doc.find(&format!("{param} (")) else { return out };
    // The entry ends where the next parameter's begins (`name (type...`) or at a section
    // heading (Returns, Example, Keyword args).
    let body = &doc[start..];
    let mut end = body.len();
    for (i, line) in body.lines().enumerate().skip(1) {
        let t = line.trim_start();
        let indent = line.len() - t.len();
        let next_param = t.split_once(" (").is_some_and(|(w, _)| !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')) && indent <= 4;
        if next_param || t.starts_with("Returns") || t.starts_with("Example") || t.starts_with("Keyword") {
            end = body.lines().take(i).map(|l| l.len() + 1).sum();
            break;
        }
    }
    for w in quoted_words(&body[..end.min(body.len())]) {
        push_word(&mut out, &w, "");
    }
    out
}

fn quoted_words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for q in ['\'', '"'] {
        let parts: Vec<&str> = text.split(q).collect();
        for w in parts.iter().skip(1).step_by(2).take(parts.len().saturating_sub(1) / 2) {
            out.push(w.to_string());
        }
    }
    out
}

/// Keeps `w` when it looks like an option value: a short identifier-like word.
fn push_word(out: &mut Vec<String>, w: &str, probe: &str) {
    let ok = !w.is_empty() && w.len() <= 24 && w != probe && w != "None" && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok && !out.iter().any(|x| x == w) {
        out.push(w.to_string());
    }
}

/// The `str` parameters of `api` that no constraint gives values to.
fn open_strings(api: &ApiSpec) -> Vec<usize> {
    let literals = crate::solve::literals::of_api(api);
    api.params.iter().enumerate().filter(|(i, p)| p.ty == ParamType::Str && literals[*i].strs.is_empty()).map(|(i, _)| i).collect()
}

/// Learns the value sets of `api`'s open string parameters; `index` is its index for the runner.
pub fn learn(api: &ApiSpec, index: usize, runner: &dyn Runner, config: &InferConfig, deadline: Instant) -> Vec<Learned> {
    let mut out = Vec::new();
    for i in open_strings(api) {
        let name = &api.params[i].name;
        let seed = mix(config.seed ^ 0xe5 ^ mix(index as u64) ^ mix(i as u64));
        // Inputs libtorch accepts as they are, so that an error after the change is about it.
        let drawn = sample(api, 2 * CASES, seed, &config.limits, None);
        let ran = runner.run_with_errors(index, &drawn, deadline);
        let lists_values = |e: &Option<String>| e.as_deref().is_some_and(|e| values_in_message(e, PROBE).len() >= 2);
        let accepted_as_drawn = ran.iter().any(|(s, _)| *s == Status::Ok);
        // A string with no default is drawn empty, which its own check refuses first
        // (`scatter_reduce`'s `reduce`), so no input may run as drawn. Then the inputs whose
        // refusal lists the values stand in, and a value counts when its inputs get past that
        // check: accepted, or refused for something else.
        let stand_in = !accepted_as_drawn && api.params[i].default.is_none();
        let base: Vec<Vec<Arg>> = drawn
            .into_iter()
            .zip(&ran)
            .filter(|(_, (s, e))| if stand_in { *s == Status::Invalid && lists_values(e) } else { *s == Status::Ok })
            .map(|(a, _)| a)
            .take(CASES)
            .collect();
        if base.is_empty() {
            continue;
        }
        let with = |value: &str| -> Vec<Vec<Arg>> {
            base.iter()
                .map(|args| {
                    let mut a = args.clone();
                    a[i] = Arg::Str(value.to_string());
                    a
                })
                .collect()
        };
        let probed = runner.run_with_errors(index, &with(PROBE), deadline);
        let rejected: Vec<&str> = probed.iter().filter(|(s, _)| *s == Status::Invalid).filter_map(|(_, e)| e.as_deref()).collect();
        // A parameter that takes any string (an einsum equation, a file name) has no set.
        if rejected.len() * 2 <= probed.len() {
            continue;
        }
        let mut values: Vec<String> = Vec::new();
        for e in &rejected {
            for v in values_in_message(e, PROBE) {
                if !values.contains(&v) {
                    values.push(v);
                }
            }
        }
        let from = if values.is_empty() { "docs" } else { "errors" };
        if values.is_empty() {
            values = docs::lookup(&api.name).map(|d| values_in_docs(d, name)).unwrap_or_default();
        }
        if let Some(Value::Str(d)) = &api.params[i].default {
            if !values.contains(d) {
                values.insert(0, d.clone());
            }
        }
        if values.len() < 2 {
            continue;
        }
        // Each value on the same inputs: kept when some run gets past the argument checks.
        let mut kept = Vec::new();
        let mut accepted = Vec::new();
        let mut runs = 0i64;
        for v in &values {
            let cases = with(v);
            let statuses = runner.run_with_errors(index, &cases, deadline);
            runs += statuses.len() as i64;
            let past = stand_in && statuses.iter().any(|(s, e)| *s == Status::Invalid && !lists_values(e));
            let ok: Vec<Vec<Arg>> = cases.into_iter().zip(&statuses).filter(|(_, (s, _))| *s == Status::Ok).map(|(a, _)| a).collect();
            if !ok.is_empty() || past {
                kept.push(v.clone());
                accepted.extend(ok);
            }
        }
        if kept.len() < 2 {
            continue;
        }
        let list = kept.iter().map(|v| format!("{v:?}")).collect::<Vec<_>>().join(", ");
        let text = format!("{name} in [{list}]");
        let set = TExpr::Lit(Value::List(kept.iter().map(|v| Value::Str(v.clone())).collect()));
        let constraint = Constraint {
            expr: TExpr::Binary(BinOp::In, Box::new(TExpr::Param(i)), Box::new(set)),
            span: api.span,
            text: text.clone(),
            origin: Origin::Inline,
            category: Category::Enum,
            params: vec![i],
        };
        out.push(Learned {
            candidate: Candidate { name: format!("{name}_values"), text: format!("{text};"), source: RuleSource::Inferred },
            constraint,
            evidence: vec![
                ("probe_rejected".into(), rejected.len() as i64),
                ("probe_ok".into(), (probed.len() - rejected.len()) as i64),
                (format!("values_from_{from}"), values.len() as i64),
                ("values_ok".into(), kept.len() as i64),
                ("runs".into(), runs),
            ],
            accepted,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Messages libtorch 2.13 gives for a string it does not know.
    #[test]
    fn values_are_read_out_of_libtorch_errors() {
        let p = "zz";
        let cases: &[(&str, &[&str])] = &[
            ("approximate argument must be either none or tanh.", &["none", "tanh"]),
            ("div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'zz'", &["trunc", "floor"]),
            ("qr received unrecognized mode 'zz' but expected one of 'reduced' (default), 'r', or 'complete'", &["reduced", "r", "complete"]),
            ("Expected UPLO argument to be 'L' or 'U', but got zz", &["L", "U"]),
            ("torch.searchsorted(): side can only be 'left' or 'right' but got zz", &["left", "right"]),
            ("reduce argument must be either sum, prod, mean, amax or amin, got zz", &["sum", "prod", "mean", "amax", "amin"]),
            ("index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got zz.", &["prod", "mean", "amax", "amin"]),
            ("torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: zz", &["xy", "ij"]),
            ("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)", &["gels", "gelsy", "gelsd", "gelss"]),
            ("quantile() interpolation must be one of linear, lower, higher, midpoint or nearest, but got zz", &["linear", "lower", "higher", "midpoint", "nearest"]),
            ("reduce argument must be either add or multiply.", &["add", "multiply"]),
            // No list: nothing.
            ("Unrecognised padding mode zz", &[]),
            ("Invalid normalization mode: \"zz\"", &[]),
            ("linalg.cond got an invalid norm type: zz", &[]),
            ("expected dim to be positive", &[]),
        ];
        for (message, expected) in cases {
            assert_eq!(values_in_message(message, p), *expected, "{message}");
        }
    }

    /// Refuses as `scatter_reduce` does: a `reduce` it does not know first (listing the ones it
    /// does), then a 0-d input.
    struct ReduceLike;
    impl Runner for ReduceLike {
        fn run_with_errors(&self, _: usize, cases: &[Vec<Arg>], _: Instant) -> Vec<(Status, Option<String>)> {
            cases
                .iter()
                .map(|args| match (&args[0], &args[1]) {
                    (_, Arg::Str(r)) if r != "sum" && r != "amax" => (Status::Invalid, Some(format!("reduce argument must be either sum or amax, got {r}"))),
                    (Arg::Tensor(t), _) if t.shape.is_empty() => (Status::Invalid, Some("expected a 1-D input at least".into())),
                    _ => (Status::Ok, None),
                })
                .collect()
        }
    }

    /// A string with no default is drawn empty and refused before anything else: the inputs
    /// whose refusal lists the values stand in, and each value that gets past the check is kept.
    #[test]
    fn a_string_without_default_learns_its_values_from_refused_inputs() {
        let src = "api torch.f(input: Tensor, reduce: str) -> Tensor {}\n";
        let checked = crate::check::check_text(std::path::Path::new("t.sfz"), src);
        assert!(!checked.has_errors(), "{:?}", checked.diags);
        let config = InferConfig::default();
        let learned = learn(&checked.spec.apis[0], 0, &ReduceLike, &config, Instant::now() + std::time::Duration::from_secs(60));
        assert_eq!(learned.len(), 1, "{learned:?}");
        assert_eq!(learned[0].candidate.text, "reduce in [\"sum\", \"amax\"];");
    }

    #[test]
    fn values_are_read_out_of_a_parameter_entry_in_the_docs() {
        let doc = "Args:\n    input (Tensor): the input tensor.\n    n (int, optional): Signal length.\n    norm (str, optional): Normalization mode. For the forward transform\n        (:func:`~torch.fft.fft`), these correspond to:\n\n        * ``\"forward\"`` - normalize by ``1/n``\n        * ``\"backward\"`` - no normalization\n        * ``\"ortho\"`` - normalize by ``1/sqrt(n)``\n\n    out (Tensor, optional): the output, not 'this'.\n";
        assert_eq!(values_in_docs(doc, "norm"), ["forward", "backward", "ortho"]);
        assert!(values_in_docs(doc, "dim").is_empty());
        // From the embedded docs of torch 2.13.
        let fft = docs::lookup("torch.fft.fft").expect("docs of torch.fft.fft");
        assert_eq!(values_in_docs(fft, "norm"), ["forward", "backward", "ortho"]);
    }
}
