//! Inputs inside a value domain. A domain (`ensures input.values > 0.0 => no_nan(result)`) is
//! judged only on cases whose values lie inside its guard, and ordinary fills, drawn around 0,
//! rarely do; so half of an API's conforming cases draw their values with one guard's bounds
//! added to the API's constraints.
use crate::spec::{ApiSpec, BinOp, Category, Constraint, Prop, TExpr};

/// Per `ensures` clause whose guard bounds tensor values: the API with those bounds as
/// constraints. Empty when no clause has such a guard.
pub fn steered(api: &ApiSpec) -> Vec<ApiSpec> {
    api.ensures
        .iter()
        .filter_map(|c| {
            let TExpr::Binary(BinOp::Implies, guard, _) = &c.expr else { return None };
            let atoms = guard.operands(BinOp::And);
            let bounds: Vec<Constraint> = atoms
                .into_iter()
                .filter(|a| bounds_values(a))
                .filter_map(|a| {
                    let p = crate::solve::value_target(a)?;
                    Some(Constraint { expr: a.clone(), span: c.span, text: c.text.clone(), origin: c.origin.clone(), category: Category::Range, params: vec![p] })
                })
                .collect();
            if bounds.is_empty() {
                return None;
            }
            let mut inside = api.clone();
            inside.requires.extend(bounds);
            Some(inside)
        })
        .collect()
}

/// `p.values op number` or `p.values in lo..hi` with literal bounds.
fn bounds_values(e: &TExpr) -> bool {
    let literal = |e: &TExpr| match e {
        TExpr::Lit(_) => true,
        TExpr::Unary(_, x) => matches!(**x, TExpr::Lit(_)),
        TExpr::Range { lo, hi, .. } => matches!(**lo, TExpr::Lit(_) | TExpr::Unary(..)) && matches!(**hi, TExpr::Lit(_) | TExpr::Unary(..)),
        _ => false,
    };
    let values = |e: &TExpr| matches!(e, TExpr::Prop(b, Prop::Values) if matches!(**b, TExpr::Param(_)));
    match e {
        TExpr::Binary(op, l, r) if op.is_comparison() || *op == BinOp::In => (values(l) && literal(r)) || (literal(l) && values(r)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(text: &str) -> ApiSpec {
        let checked = crate::check::check_text(std::path::Path::new("t.sfz"), text);
        assert!(!checked.has_errors(), "{:?}", checked.diags);
        checked.spec.apis.into_iter().next().expect("one api")
    }

    #[test]
    fn a_guard_on_values_becomes_constraints_and_others_do_not() {
        let a = api(
            "api torch.log(input: Tensor) -> Tensor {\n    ensures input.values > 0.0 and input.ndim >= 1 => no_nan(result);\n    ensures input.numel > 0 => finite(result);\n}\n",
        );
        let s = steered(&a);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].requires.len(), a.requires.len() + 1);
        let added = s[0].requires.last().unwrap();
        assert_eq!(added.params, vec![0]);
        // Values drawn under the added bound satisfy the guard.
        let plan = super::super::plan::GenPlan::new(&s[0]);
        let models = crate::solve::sample(&s[0], &crate::solve::Limits::default(), 4, 1).expect("models");
        let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(3);
        for m in &models {
            let args = super::super::values::concretize(&s[0], &plan, m, None, &mut rng);
            let crate::wire::case::Arg::Tensor(t) = &args[0] else { panic!("a tensor") };
            match t.fill {
                crate::wire::case::Fill::Uniform { lo, .. } => assert!(lo > 0.0, "{t:?}"),
                crate::wire::case::Fill::Int { lo, .. } => assert!(lo > 0, "{t:?}"),
                crate::wire::case::Fill::Constant(v) => assert!(v > 0.0, "{t:?}"),
            }
        }
    }
}
