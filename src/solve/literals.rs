//! The constants an API's constraints compare each parameter with. They widen the default
//! domains, which are otherwise blind to the constraints: an int drawn from `Limits::int_range`
//! can never meet `ms == 3000`, and a `str` parameter (drawn at its default) can never take the
//! other values of `mode in ["reflect", "circular"]`.
use crate::spec::{ApiSpec, BinOp, ParamSpec, ParamType, Prop, TExpr, Value};

/// Per parameter, in declaration order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Literals {
    pub ints: Vec<i64>,
    pub strs: Vec<String>,
}

/// The literals each parameter of `api` is compared with (`==`, `!=`, `<`, `in` a list or a
/// range of constants), deduplicated, in order of appearance.
pub fn of_api(api: &ApiSpec) -> Vec<Literals> {
    let mut out = vec![Literals::default(); api.params.len()];
    for c in &api.requires {
        walk(&c.expr, &mut out);
    }
    out
}

/// The largest rank an API's constraints name for a tensor (`x.ndim == 5`, `x.ndim in 3..=5`,
/// `x.ndim >= 5`), so the solver's tensors can reach it although `Limits::max_ndim` is lower:
/// `conv3d`'s weight is 5-D. At most `RANK_CAP`; None when no constraint names a rank.
pub fn named_rank(api: &ApiSpec) -> Option<u32> {
    fn walk(e: &TExpr, best: &mut Option<i64>) {
        if let TExpr::Binary(op, a, b) = e {
            for (x, y, flipped) in [(a, b, false), (b, a, true)] {
                if matches!(&**x, TExpr::Prop(_, Prop::Ndim)) {
                    let k = match (&**y, op) {
                        (TExpr::Lit(Value::Int(k)), BinOp::Gt) if !flipped => Some(k + 1),
                        (TExpr::Lit(Value::Int(k)), BinOp::Lt) if flipped => Some(k + 1),
                        (TExpr::Lit(Value::Int(k)), _) => Some(*k),
                        (TExpr::Range { hi, inclusive, .. }, BinOp::In) => match &**hi {
                            TExpr::Lit(Value::Int(k)) => Some(if *inclusive { *k } else { k - 1 }),
                            _ => None,
                        },
                        _ => None,
                    };
                    if let Some(k) = k {
                        *best = Some(best.map_or(k, |b| b.max(k)));
                    }
                }
            }
        }
        e.children().into_iter().for_each(|x| walk(x, best));
    }
    let mut best = None;
    for c in &api.requires {
        walk(&c.expr, &mut best);
    }
    best.filter(|&k| k > 0).map(|k| k.min(RANK_CAP as i64) as u32)
}

/// The Scalar parameters whose kind a constraint reads (`alpha.dtype == int64`). The others
/// stay floats, as they were before the language could say more: a constraint that names the
/// kind opts its Scalar into ints and bools.
pub fn kinds_read(api: &ApiSpec) -> Vec<String> {
    fn walk(e: &TExpr, api: &ApiSpec, out: &mut Vec<String>) {
        if let TExpr::Prop(base, Prop::Dtype) = e {
            if let TExpr::Param(i) = &**base {
                if let Some(p) = api.params.get(*i).filter(|p| p.ty == ParamType::Scalar && !out.contains(&p.name)) {
                    out.push(p.name.clone());
                }
            }
        }
        e.children().into_iter().for_each(|x| walk(x, api, out));
    }
    let mut out = Vec::new();
    for c in &api.requires {
        walk(&c.expr, api, &mut out);
    }
    out
}

/// The highest rank a constraint can lift the solver's tensors to.
pub const RANK_CAP: u32 = 6;

/// The values a `str` parameter is drawn from: its default first, then the ones its constraints
/// name (`lits` is its entry of `of_api`); empty when they name none (it stays at its default).
pub fn string_values(p: &ParamSpec, lits: &Literals) -> Vec<String> {
    if lits.strs.is_empty() {
        return Vec::new();
    }
    let mut values: Vec<String> = match &p.default {
        Some(Value::Str(d)) => vec![d.clone()],
        _ => Vec::new(),
    };
    for s in &lits.strs {
        if !values.contains(s) {
            values.push(s.clone());
        }
    }
    values
}

fn walk(e: &TExpr, out: &mut [Literals]) {
    if let TExpr::Binary(op, a, b) = e {
        if let Some(i) = param(a) {
            compared(*op, i, b, out);
        }
        if let Some(i) = param(b) {
            compared(*op, i, a, out);
        }
    }
    e.children().into_iter().for_each(|x| walk(x, out));
}

/// The parameter an operand stands for: itself, or each element of it (`xs[*]`).
fn param(e: &TExpr) -> Option<usize> {
    match e {
        TExpr::Param(i) => Some(*i),
        TExpr::Each(x) => match &**x {
            TExpr::Param(i) => Some(*i),
            _ => None,
        },
        _ => None,
    }
}

fn compared(op: BinOp, i: usize, other: &TExpr, out: &mut [Literals]) {
    let Some(slot) = out.get_mut(i) else { return };
    let comparison = matches!(op, BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge);
    match other {
        TExpr::Lit(v) if comparison => add(v, slot),
        TExpr::Lit(Value::List(vs)) if matches!(op, BinOp::In | BinOp::NotIn) => vs.iter().for_each(|v| add(v, slot)),
        TExpr::List(xs) if matches!(op, BinOp::In | BinOp::NotIn) => {
            for x in xs {
                if let TExpr::Lit(v) = x {
                    add(v, slot);
                }
            }
        }
        TExpr::Range { lo, hi, .. } if matches!(op, BinOp::In | BinOp::NotIn) => {
            for bound in [lo, hi] {
                if let TExpr::Lit(v) = &**bound {
                    add(v, slot);
                }
            }
        }
        _ => {}
    }
}

fn add(v: &Value, slot: &mut Literals) {
    match v {
        Value::Int(x) if !slot.ints.contains(x) => slot.ints.push(*x),
        Value::Str(s) if !slot.strs.contains(s) => slot.strs.push(s.clone()),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    #[test]
    fn the_largest_rank_a_constraint_names_lifts_the_solvers_tensors() {
        let rank = |body: &str| {
            let src = format!("api torch.f(input: Tensor, weight: Tensor) -> Tensor {{\n    {body}\n}}\n");
            let checked = crate::check::check_text(Path::new("t.sfz"), &src);
            assert!(!checked.has_errors(), "{:?}", checked.diags.iter().map(|d| &d.message).collect::<Vec<_>>());
            let api = checked.spec.apis[0].clone();
            (super::named_rank(&api), api)
        };
        assert_eq!(rank("input.ndim == 2;").0, Some(2));
        assert_eq!(rank("input.ndim in 3..=5;").0, Some(5));
        assert_eq!(rank("input.ndim in 3..5; weight.ndim > 5;").0, Some(6));
        assert_eq!(rank("weight.ndim == 6 or input.ndim == 9;").0, Some(super::RANK_CAP));
        assert_eq!(rank("input.numel > 0;").0, None);
        // The default limits stop at 4; a 5-D weight is still drawn.
        let (_, api) = rank("weight.ndim == 5; input.ndim == 4;");
        let limits = crate::solve::Limits::default();
        assert_eq!(limits.max_ndim, 4);
        let models = crate::solve::sample(&api, &limits, 3, 1).expect("satisfiable");
        assert!(!models.is_empty());
    }

    #[test]
    fn literals_are_collected_per_parameter() {
        let src = "api torch.f(input: Tensor, mode: str = \"a\", ms: int, k: int, xs: int[]) -> Tensor {\n    mode in [\"b\", \"c\"];\n    mode != \"d\";\n    ms == 3000 or k > 100;\n    k in 0..=500;\n    xs[*] >= 64;\n    input.ndim == 2;\n}\n";
        let checked = crate::check::check_text(Path::new("t.sfz"), src);
        assert!(!checked.has_errors(), "{:?}", checked.diags.iter().map(|d| &d.message).collect::<Vec<_>>());
        let lits = super::of_api(&checked.spec.apis[0]);
        assert_eq!(lits[1].strs, ["b", "c", "d"]);
        assert_eq!(lits[2].ints, [3000]);
        assert_eq!(lits[3].ints, [100, 0, 500]);
        assert_eq!(lits[4].ints, [64]);
        assert_eq!(lits[0], super::Literals::default());
    }
}
