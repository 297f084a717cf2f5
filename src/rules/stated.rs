//! Values of a number parameter that libtorch states. A `Scalar`, `int` or `float` is drawn from a
//! wide range, so a check that takes a few values only (`multi_margin_loss`: "only p == 1 and
//! p == 2 supported") refuses nearly every input, and no enumerated candidate names those values.
//! The complaint names the parameter and each value: `sfz infer` proposes `p in [1, 2]` from it,
//! a candidate judged like any other.
use super::infer::Checked;
use super::Candidate;
use crate::spec::{ApiSpec, BinOp, Category, Constraint, Origin, ParamType, RuleSource, TExpr, Value};

/// At most this many values make a set; a longer list is not a few values.
const MAX_VALUES: usize = 6;

/// One candidate per number parameter whose values the first line of `message` states.
pub fn candidates(api: &ApiSpec, message: &str) -> Vec<Checked> {
    let line = message.lines().next().unwrap_or_default();
    // What the input held comes after these; the values wanted come before.
    let lower = line.to_ascii_lowercase();
    let end = ["but got", ", got", " got ", "instead", "but received"].iter().filter_map(|t| lower.find(t)).min().unwrap_or(line.len());
    let wanted = &line[..end];
    let mut out = Vec::new();
    for (i, p) in api.params.iter().enumerate() {
        let fed = api.from.iter().flat_map(|f| &f.binds).any(|b| b.param == i);
        if fed || !matches!(p.ty, ParamType::Scalar | ParamType::Int | ParamType::Float) {
            continue;
        }
        let values = stated(wanted, &p.name);
        if values.is_empty() || values.len() > MAX_VALUES {
            continue;
        }
        out.push(candidate(api, i, values));
    }
    out
}

/// The numbers `text` states for `name`, each with its text: after `name ==` or `name =` (each time it says so), or
/// listed after `name must be` / `should be` / `can only be` (`1 or 2`, `0, 1, or 2`).
fn stated(text: &str, name: &str) -> Vec<(Value, String)> {
    let mut out: Vec<(Value, String)> = Vec::new();
    let mut at = 0;
    while let Some(k) = text[at..].find(name) {
        let start = at + k;
        at = start + name.len();
        let word_before = text[..start].chars().next_back().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
        let rest = &text[at..];
        if word_before || rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let rest = rest.trim_start();
        let (listed, rest) = if let Some(r) = rest.strip_prefix("==").or_else(|| rest.strip_prefix('=')) {
            (false, r)
        } else if let Some(r) = ["must be", "should be", "can only be"].iter().find_map(|v| rest.strip_prefix(v)) {
            (true, r)
        } else {
            continue;
        };
        let mut rest = rest.trim_start();
        loop {
            let Some((v, len)) = number(rest) else { break };
            if !out.iter().any(|(o, _)| *o == v) {
                out.push((v, rest[..len].to_string()));
            }
            rest = rest[len..].trim_start();
            if !listed {
                break;
            }
            rest = rest.trim_start_matches(',').trim_start();
            rest = rest.strip_prefix("or ").or_else(|| rest.strip_prefix("and ")).unwrap_or(rest).trim_start();
        }
    }
    out
}

/// A number at the start of `text` (`2`, `-1`, `0.5`) and its length; a number glued to letters
/// (`2D`) is none.
fn number(text: &str) -> Option<(Value, usize)> {
    let len = text.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-')).unwrap_or(text.len());
    let digits = text[..len].trim_end_matches('.');
    if text[len..].starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        return None;
    }
    if let Ok(n) = digits.parse::<i64>() {
        return Some((Value::Int(n), digits.len()));
    }
    digits.parse::<f64>().ok().filter(|f| f.is_finite()).map(|f| (Value::Float(f), digits.len()))
}

fn candidate(api: &ApiSpec, i: usize, stated: Vec<(Value, String)>) -> Checked {
    let p = &api.params[i];
    let (values, list): (Vec<Value>, Vec<String>) = stated.into_iter().unzip();
    let text = format!("{} in [{}]", p.name, list.join(", "));
    let expr = TExpr::Binary(BinOp::In, Box::new(TExpr::Param(i)), Box::new(TExpr::Lit(Value::List(values))));
    let constraint = Constraint { expr, span: api.span, text: text.clone(), origin: Origin::Inline, category: Category::Enum, params: vec![i] };
    Checked {
        candidate: Candidate { name: format!("{}_stated_values", p.name), text: format!("{text};"), source: RuleSource::Inferred },
        constraints: vec![constraint],
        evidence: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::case::Arg;
    use std::path::Path;

    const SRC: &str = "api torch.multi_margin_loss(input: Tensor, target: Tensor, p: Scalar = 1, margin: Scalar = 1, weight: Tensor? = None, reduction: int = 1) -> Tensor {}\n";

    fn texts(message: &str) -> Vec<String> {
        let checked = crate::check::check_text(Path::new("t.sfz"), SRC);
        candidates(&checked.spec.apis[0], message).into_iter().map(|c| c.candidate.text).collect()
    }

    #[test]
    fn values_are_read_where_the_complaint_states_them() {
        assert_eq!(texts("only p == 1 and p == 2 supported"), ["p in [1, 2];"]);
        assert_eq!(texts("margin must be 0.5 or -1, but got 3"), ["margin in [0.5, -1];"]);
        assert_eq!(texts("reduction should be 0, 1, or 2"), ["reduction in [0, 1, 2];"]);
        // Not the value the input held, not a tensor's rank, not a parameter inside a name.
        assert_eq!(texts("expected p == 3 but got p == 4"), ["p in [3];"]);
        assert!(texts("Given groups=2, weight of size [4, 2], expected input[1, 4] to have 4 channels").is_empty());
        assert!(texts("input must be 2D").is_empty());
        assert!(texts("dropout p must be in [0, 1]").is_empty());
        assert!(texts("cp == 1 only").is_empty());
    }

    #[test]
    fn the_candidate_evaluates_as_its_text_would() {
        let checked = crate::check::check_text(Path::new("t.sfz"), SRC);
        let api = &checked.spec.apis[0];
        let c = candidates(api, "only p == 1 and p == 2 supported").remove(0);
        let mut probe = api.clone();
        probe.requires = c.constraints.clone();
        let written = crate::check::check_text(Path::new("t.sfz"), &format!("{}\nrule r for torch.multi_margin_loss {{\n    {}\n}}\n", SRC, c.candidate.text));
        assert!(!written.has_errors(), "{:?}", written.diags);
        let tensor = |shape: Vec<i64>| {
            Arg::Tensor(crate::wire::case::TensorRecipe {
                dtype: crate::wire::case::DType::Float32,
                shape,
                fill: crate::wire::case::Fill::Constant(0.0),
                seed: 0,
                layout: Default::default(),
                specials: Vec::new(),
            })
        };
        let args = |p: f64| vec![tensor(vec![2, 3]), tensor(vec![2]), Arg::Float(p), Arg::Float(1.0), Arg::None, Arg::Int(1)];
        assert_eq!(crate::gen::values::conforms(&probe, &args(2.0)), vec![Some(true)]);
        assert_eq!(crate::gen::values::conforms(&probe, &args(3.0)), vec![Some(false)]);
    }
}
