//! Values of a number parameter that libtorch states. A `Scalar`, `int` or `float` is drawn from a
//! wide range, so a check that takes a few values only (`multi_margin_loss`: "only p == 1 and
//! p == 2 supported") refuses nearly every input, and no enumerated candidate names those values.
//! The complaint names the parameter and each value: `sfz infer` proposes `p in [1, 2]` from it,
//! a candidate judged like any other. Likewise a size libtorch states for a tensor's last
//! dimension ("expected grid to have size 2 in last dimension", "inputs dimension -1 must have
//! length 3"): `grid.shape[-1] == 2`, which no enumerated candidate fixes to a constant.
use crate::rules::infer::counts;
use crate::rules::infer::Checked;
use crate::spec::{ApiSpec, BinOp, Category, ParamType, Prop, TExpr, Value};

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
        if api.fed(i) || !matches!(p.ty, ParamType::Scalar | ParamType::Int | ParamType::Float) {
            continue;
        }
        let values = stated(wanted, &p.name);
        if values.is_empty() || values.len() > MAX_VALUES {
            continue;
        }
        out.push(candidate(api, i, values));
    }
    out.extend(last_sizes(api, wanted));
    out
}

/// `t.shape[-1] == n` for each tensor parameter, when the complaint wants its last dimension of
/// one size `n`. Every tensor gets one, as the complaint may name them together ("inputs"); the
/// search ranks those it names first.
fn last_sizes(api: &ApiSpec, wanted: &str) -> Vec<Checked> {
    let lower = wanted.to_ascii_lowercase();
    if !(lower.contains("last dim") || lower.contains("dimension -1") || lower.contains("dim -1")) {
        return Vec::new();
    }
    let [n] = counts::named(wanted)[..] else { return Vec::new() };
    if n < 1 {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (i, p) in api.params.iter().enumerate() {
        if api.fed(i) || p.ty != ParamType::Tensor {
            continue;
        }
        let text = format!("{}.shape[-1] == {n}", p.name);
        let last = TExpr::Index(Box::new(TExpr::Prop(Box::new(TExpr::Param(i)), Prop::Shape)), Box::new(TExpr::Lit(Value::Int(-1))));
        let expr = TExpr::Binary(BinOp::Eq, Box::new(last), Box::new(TExpr::Lit(Value::Int(n))));
        out.push(Checked::inferred(api, format!("{}_last_size_{n}", p.name), i, text, expr, Category::Shape));
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
        while let Some((v, len)) = number(rest) {
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
    Checked::inferred(api, format!("{}_stated_values", p.name), i, text, expr, Category::Enum)
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
    fn a_last_size_is_read_where_the_complaint_states_it() {
        let src = "api torch.grid_sampler_2d(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int, align_corners: bool) -> Tensor {}\n";
        let checked = crate::check::check_text(Path::new("t.sfz"), src);
        let api = &checked.spec.apis[0];
        let texts = |m: &str| candidates(api, m).into_iter().map(|c| c.candidate.text).collect::<Vec<_>>();
        assert_eq!(
            texts("grid_sampler(): expected grid to have size 2 in last dimension, but got grid with sizes [1, 3, 3, 3]"),
            ["input.shape[-1] == 2;", "grid.shape[-1] == 2;"]
        );
        assert_eq!(texts("linalg.cross: inputs dimension -1 must have length 3. Got 4 and 4"), ["input.shape[-1] == 3;", "grid.shape[-1] == 3;"]);
        // No size, or not the last dimension.
        assert!(texts("expected grid to have the same batch size as input").is_empty());
        assert!(texts("expected size 2 at dimension 1").is_empty());
        // The hand-built constraint evaluates as its text would.
        let c = candidates(api, "expected grid to have size 2 in last dimension").remove(1);
        let written = crate::check::check_text(Path::new("t.sfz"), &format!("{src}\nrule r for torch.grid_sampler_2d {{\n    {}\n}}\n", c.candidate.text));
        assert!(!written.has_errors(), "{:?}", written.diags);
        let mut probe = api.clone();
        probe.requires = c.constraints.clone();
        let args = |last: i64| vec![tensor(vec![1, 2, 3, 3]), tensor(vec![1, 3, 3, last]), Arg::Int(0), Arg::Int(0), Arg::Bool(false)];
        assert_eq!(crate::gen::values::conforms(&probe, &args(2)), vec![Some(true)]);
        assert_eq!(crate::gen::values::conforms(&probe, &args(3)), vec![Some(false)]);
    }

    fn tensor(shape: Vec<i64>) -> Arg {
        Arg::Tensor(crate::wire::case::TensorRecipe {
            dtype: crate::wire::case::DType::Float32,
            shape,
            fill: crate::wire::case::Fill::Constant(0.0),
            seed: 0,
            layout: Default::default(),
            specials: Vec::new(),
        })
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
        let args = |p: f64| vec![tensor(vec![2, 3]), tensor(vec![2]), Arg::Float(p), Arg::Float(1.0), Arg::None, Arg::Int(1)];
        assert_eq!(crate::gen::values::conforms(&probe, &args(2.0)), vec![Some(true)]);
        assert_eq!(crate::gen::values::conforms(&probe, &args(3.0)), vec![Some(false)]);
    }
}
