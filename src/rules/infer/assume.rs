//! What a search pass assumes of its inputs (non-empty tensors of rank 1 or more) and which
//! parameters it leaves out (`Pass`, `pin`).
use crate::gen::values;
use crate::rules::reduce;
use crate::solve::{self, Limits};
use crate::spec::{ApiSpec, Constraint};
use crate::wire::case::Arg;

/// The assumptions that `api` allows, taken greedily in order: all of them when they fit
/// together (one z3 check), else each that fits with the ones kept before it.
pub(super) fn compatible(api: &ApiSpec, assumptions: &[Constraint], limits: &Limits) -> Vec<Constraint> {
    let fits = |kept: &[Constraint]| solve::check_sat(&reduce::with(api, &[kept], None), limits).is_ok();
    if fits(assumptions) {
        return assumptions.to_vec();
    }
    let mut kept = Vec::new();
    for a in assumptions {
        kept.push(a.clone());
        if !fits(&kept) {
            kept.pop();
        }
    }
    kept
}

/// `t.numel > 0` and `t.ndim >= 1` for every tensor parameter and every element of a tensor
/// list (vacuous for an absent optional one): empty and 0-d tensors slip past many of
/// libtorch's checks.
pub(super) fn nonempty_constraints(api: &ApiSpec) -> Vec<Constraint> {
    use crate::spec::{BinOp, Category, Origin, ParamType, Prop, TExpr, Value};
    api.params
        .iter()
        .enumerate()
        .filter(|(_, p)| matches!(p.ty, ParamType::Tensor | ParamType::TensorList))
        .flat_map(|(i, p)| {
            let list = p.ty == ParamType::TensorList;
            // A list's elements are bound to one quantified variable (the constraint's only one).
            let of = if list { TExpr::Bound(0) } else { TExpr::Param(i) };
            let prop = |prop| Box::new(TExpr::Prop(Box::new(of.clone()), prop));
            let each = |body: TExpr| if list { TExpr::Forall { var: 0, range: Box::new(TExpr::Param(i)), body: Box::new(body) } } else { body };
            let name = if list { "t" } else { p.name.as_str() };
            let text = |prop: &str| if list { format!("forall t in {}: t.{prop}", p.name) } else { format!("{name}.{prop}") };
            let c = |expr, text: String| Constraint { expr, span: api.span, text, origin: Origin::Inline, category: Category::Shape, params: vec![i] };
            [
                c(each(TExpr::Binary(BinOp::Gt, prop(Prop::Numel), Box::new(TExpr::Lit(Value::Int(0))))), text("numel > 0")),
                c(each(TExpr::Binary(BinOp::Ge, prop(Prop::Ndim), Box::new(TExpr::Lit(Value::Int(1))))), text("ndim >= 1")),
            ]
        })
        .collect()
}

/// The tensor parameter a constraint makes 0-d (`x.ndim == 0`).
pub(super) fn rank_zero(c: &Constraint) -> Option<usize> {
    use crate::spec::{BinOp, Prop, TExpr, Value};
    match &c.expr {
        TExpr::Binary(BinOp::Eq, l, r) => match (&**l, &**r) {
            (TExpr::Prop(t, Prop::Ndim), TExpr::Lit(Value::Int(0))) => match &**t {
                TExpr::Param(p) => Some(*p),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
}

/// Whether a constraint is the `ndim >= 1` half of the non-empty assumption (of a tensor, or
/// of each element of a list).
pub(super) fn is_rank_assumption(c: &Constraint) -> bool {
    use crate::spec::{BinOp, Prop, TExpr, Value};
    fn at_least_1(e: &TExpr) -> bool {
        match e {
            TExpr::Forall { body, .. } => at_least_1(body),
            TExpr::Binary(BinOp::Ge, l, r) => matches!((&**l, &**r), (TExpr::Prop(_, Prop::Ndim), TExpr::Lit(Value::Int(1)))),
            _ => false,
        }
    }
    at_least_1(&c.expr)
}

/// A stage of the search: what it assumes of the inputs, and the parameters its inputs leave
/// out (their defaults apply).
#[derive(Clone, Copy)]
pub(super) struct Pass<'a> {
    pub(super) assume: &'a [Constraint],
    pub(super) pinned: &'a [usize],
}

/// `args` with the parameters of `pinned` left out (None where there is no default), the ones
/// that no longer conform to `api` dropped (a rule relating a left-out parameter to another was solved for a drawn value).
pub(super) fn pin(api: &ApiSpec, mut args: Vec<Vec<Arg>>, pinned: &[usize]) -> Vec<Vec<Arg>> {
    if pinned.is_empty() {
        return args;
    }
    for a in &mut args {
        for &p in pinned {
            if let Some(slot) = a.get_mut(p) {
                *slot = if api.params.get(p).is_some_and(|p| p.default.is_none()) { Arg::None } else { Arg::Omitted };
            }
        }
    }
    args.retain(|a| values::conforms(api, a).iter().all(|c| *c != Some(false)));
    args
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::infer::InferConfig;
    use crate::solve::SymValue;
    use std::path::Path;

    #[test]
    fn the_end_probes_assume_only_what_the_rules_allow() {
        let src = "api torch.masked_fill(input: Tensor, mask: Tensor, value: Tensor) -> Tensor { value.ndim == 0; }\n";
        let checked = crate::check::check_text(Path::new("t.sfz"), src);
        let api = &checked.spec.apis[0];
        let kept: Vec<String> = compatible(api, &nonempty_constraints(api), &InferConfig::default().limits).into_iter().map(|c| c.text).collect();
        assert_eq!(kept, ["input.numel > 0", "input.ndim >= 1", "mask.numel > 0", "mask.ndim >= 1", "value.numel > 0"]);
    }

    /// The search's first pass keeps the elements of a tensor list non-empty and of rank 1 or
    /// more, as it does tensors (cat refuses 0-d elements and would refute true rules).
    #[test]
    fn nonempty_reaches_the_elements_of_tensor_lists() {
        let checked = crate::check::check_text(Path::new("t.sfz"), "api torch.cat(tensors: Tensor[], dim: int = 0) -> Tensor {}\n");
        let base = &checked.spec.apis[0];
        let nonempty = nonempty_constraints(base);
        assert_eq!(nonempty.len(), 2, "{:?}", nonempty.iter().map(|c| &c.text).collect::<Vec<_>>());
        let api = reduce::with(base, &[&nonempty], None);
        let models = crate::solve::sample(&api, &Limits::default(), 32, 1).unwrap();
        assert!(models.len() > 4);
        for m in &models {
            let SymValue::TensorList(items) = &m[0] else { panic!("{m:?}") };
            assert!(items.iter().all(|(_, shape)| !shape.is_empty() && shape.iter().all(|&d| d > 0)), "{items:?}");
        }
    }
}
