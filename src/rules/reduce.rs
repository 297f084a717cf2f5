//! Implication between constraints, decided by z3: a rule that the API's other constraints imply
//! excludes no input, so it is dropped from an inferred set (W0005 reports the same in `check`).
use crate::solve::{self, Limits, Problem, SolveError};
use crate::spec::{ApiSpec, BinOp, Category, Constraint, Origin, TExpr, UnOp};

/// The conjunction of some constraints' expressions (None for none).
pub fn conjunction(cs: &[Constraint]) -> Option<TExpr> {
    cs.iter().map(|c| c.expr.clone()).reduce(|a, b| TExpr::Binary(BinOp::And, Box::new(a), Box::new(b)))
}

/// `base` with `extra` constraints added and, when `negate` is given, the negation of their
/// conjunction. The negation carries no optional-parameter guard, so it asks for a present
/// parameter that breaks the constraint (samples are checked with the evaluator anyway).
pub fn with(base: &ApiSpec, extra: &[&[Constraint]], negate: Option<&[Constraint]>) -> ApiSpec {
    let mut api = base.clone();
    for cs in extra {
        api.requires.extend(cs.iter().cloned());
    }
    if let Some(expr) = negate.and_then(conjunction) {
        api.requires.push(Constraint {
            expr: TExpr::Unary(UnOp::Not, Box::new(expr)),
            span: base.span,
            text: "(negated candidate)".into(),
            origin: Origin::Inline,
            category: Category::Invariant,
            params: Vec::new(),
        });
    }
    api
}

/// Whether `base` plus `others` imply `rule`: z3 finds no input that satisfies them and breaks
/// the rule. False when z3 cannot tell (a concrete constraint, a timeout).
pub fn implied(base: &ApiSpec, others: &[&[Constraint]], rule: &[Constraint], limits: &Limits) -> bool {
    let probe = with(base, others, Some(rule));
    // A negation the solver cannot encode is dropped by `Problem`, which then finds models.
    let n = probe.requires.len() - 1;
    solve::fresh(|| {
        let p = Problem::new(&probe, limits, &[]);
        p.is_symbolic(n) && matches!(p.check(), Err(SolveError::Unsat { .. }))
    })
}

/// Whether z3 finds an input that satisfies `base` plus `extra`, within the limits they give
/// themselves (`Limits::for_api`).
fn satisfiable(base: &ApiSpec, extra: &[&[Constraint]], limits: &Limits) -> bool {
    solve::check_sat(&with(base, extra, None), limits).is_ok()
}

/// Indices of `rules` that the others (and `base`) do not imply: a minimal set that says as much
/// as all of them, found greedily from the last rule back (earlier rules, chosen first by
/// `infer`, are the more explanatory ones and are kept when two imply each other). A rule that
/// names a rank lifts the solver's rank bound (`conv3d`'s `weight.ndim == 5`): the others may
/// imply it only under that bound, and have no solution without it, so it is kept then.
pub fn minimal(base: &ApiSpec, rules: &[Vec<Constraint>], limits: &Limits) -> Vec<usize> {
    let mut keep: Vec<usize> = (0..rules.len()).collect();
    for i in (0..rules.len()).rev() {
        let others: Vec<&[Constraint]> = keep.iter().filter(|&&k| k != i).map(|&k| rules[k].as_slice()).collect();
        if implied(base, &others, &rules[i], limits) && satisfiable(base, &others, limits) {
            keep.retain(|&k| k != i);
        }
    }
    keep
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn a_weaker_rule_is_implied_by_a_stronger_one() {
        let src =
            "api torch.sum(input: Tensor, dim: int) {}\nrule a for torch.sum { input.ndim >= 2; }\nrule b for torch.sum { input.ndim >= 1; }\nrule c for torch.sum { dim >= 0; }\n";
        let checked = crate::check::check_text(Path::new("t.sfz"), src);
        let mut base = checked.spec.apis[0].clone();
        base.requires.clear();
        let rules: Vec<Vec<Constraint>> = checked.spec.rules.iter().map(|r| r.constraints.clone()).collect();
        let limits = Limits::default();
        assert!(implied(&base, &[&rules[0]], &rules[1], &limits));
        assert!(!implied(&base, &[&rules[1]], &rules[0], &limits));
        assert_eq!(minimal(&base, &rules, &limits), vec![0, 2]);
    }

    #[test]
    fn a_rule_whose_rank_the_others_need_is_kept() {
        // `c` follows from `a` and `b`, but only it names rank 5, which the solver's tensors
        // reach only when some constraint names it: without `c`, `a` and `b` have no solution.
        let src = "api torch.f(input: Tensor, weight: Tensor) {}\nrule a for torch.f { weight.ndim == 1; }\n\
            rule b for torch.f { input.ndim == weight.ndim + 4; }\nrule c for torch.f { input.ndim == 5; }\nrule d for torch.f { input.ndim >= 1; }\n";
        let checked = crate::check::check_text(Path::new("t.sfz"), src);
        assert!(!checked.has_errors(), "{:?}", checked.diags);
        let mut base = checked.spec.apis[0].clone();
        base.requires.clear();
        let rules: Vec<Vec<Constraint>> = checked.spec.rules.iter().map(|r| r.constraints.clone()).collect();
        let limits = Limits::default();
        assert!(implied(&base, &[&rules[0], &rules[1]], &rules[2], &limits));
        // From the back: d goes (c implies it), c stays (a and b alone have no solution), b goes
        // (a and c imply it). Dropping c would have kept a and b: no input at all.
        let keep = minimal(&base, &rules, &limits);
        assert_eq!(keep, vec![0, 2]);
        let kept: Vec<&[Constraint]> = keep.iter().map(|&k| rules[k].as_slice()).collect();
        assert!(satisfiable(&base, &kept, &limits));
    }

    #[test]
    fn none_tests_on_concrete_parameters_reach_the_solver() {
        // A string or float parameter has no solver variable, but its presence has one.
        let src = "api torch.linalg.svd(A: Tensor, *, driver: str? = None) {}\nrule a for torch.linalg.svd { driver == None; }\n";
        let checked = crate::check::check_text(Path::new("t.sfz"), src);
        let mut base = checked.spec.apis[0].clone();
        base.requires.clear();
        let rule = &checked.spec.rules[0].constraints;
        assert!(!implied(&base, &[], rule, &Limits::default()));
        assert!(implied(&base, &[rule], rule, &Limits::default()));
    }
}
