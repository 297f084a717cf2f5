//! A case's arguments in words, one per parameter, for findings and reports.
use crate::plan::ApiPlan;
use crate::wire::case::Case;

/// Each argument in words: `input = float32[2, 3] uniform in [-10, 10)`.
pub fn inputs(plan: &ApiPlan, case: &Case) -> Vec<String> {
    use crate::wire::case::{Arg, Fill};
    let tensor = |t: &crate::wire::case::TensorRecipe| {
        let fill = match t.fill {
            Fill::Uniform { lo, hi } => format!("uniform in [{lo}, {hi})"),
            Fill::Int { lo, hi } => format!("integers in [{lo}, {hi})"),
            Fill::Constant(v) => format!("all {v}"),
        };
        let specials = if t.specials.is_empty() { String::new() } else { format!(", {} special values", t.specials.len()) };
        let layout = match t.layout {
            crate::wire::case::Layout::Contiguous => String::new(),
            other => format!(", {} layout", format!("{other:?}").to_lowercase()),
        };
        format!("{}{:?} {fill}{specials}{layout} (seed {})", t.dtype, t.shape, t.seed)
    };
    // What a forward fills is named by the output it comes from.
    let forward = plan.binding.forward.as_ref().zip(case.forward.as_ref());
    let fed = |i: usize| {
        let (call, f) = forward?;
        let b = f.binds.iter().find(|b| b.param == i)?;
        let broken = f.broken.as_ref().filter(|x| x.param == i).map_or(String::new(), |x| format!(", broken: {}", x.kind.describe()));
        let values = match &case.args[i] {
            Arg::Tensor(t) if b.like => match t.fill {
                Fill::Uniform { lo, hi } => format!(" (values uniform in [{lo}, {hi}), seed {})", t.seed),
                Fill::Int { lo, hi } => format!(" (integers in [{lo}, {hi}), seed {})", t.seed),
                Fill::Constant(v) => format!(" (all {v})"),
            },
            Arg::Tensor(_) => String::new(),
            _ => return None,
        };
        let what = if b.like { "fresh values like" } else { "a copy of" };
        Some(format!("{what} output {} of {}{values}{broken}", b.output, call.api))
    };
    plan.api
        .params
        .iter()
        .zip(&case.args)
        .enumerate()
        .map(|(i, (p, a))| {
            if let Some(v) = fed(i) {
                return format!("{} = {v}", p.name);
            }
            let v = match a {
                Arg::Omitted => "(default)".to_string(),
                Arg::None => "None".to_string(),
                Arg::Tensor(t) => tensor(t),
                Arg::TensorList(ts) => format!("[{}]", ts.iter().map(tensor).collect::<Vec<_>>().join(", ")),
                Arg::Float(f) => format!("{f:?}"),
                Arg::Str(s) => format!("{s:?}"),
                Arg::Dtype(d) => format!("torch.{d}"),
                Arg::Int(i) => i.to_string(),
                Arg::Bool(b) => {
                    if *b {
                        "True".into()
                    } else {
                        "False".into()
                    }
                }
                Arg::IntList(v) => format!("{v:?}"),
                Arg::FloatList(v) => format!("{v:?}"),
                Arg::BoolList(v) => format!("{v:?}"),
            };
            format!("{} = {v}", p.name)
        })
        .collect()
}
