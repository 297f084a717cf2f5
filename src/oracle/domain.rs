//! What a returned call's values say by themselves: NaN or inf from finite inputs (`nan_inf`),
//! a NaN inside a value domain the spec states (`ensures GUARD => no_nan(result)`), and the
//! other postconditions. Each is asked only where the inputs make a finite result expected.
use crate::eval::{self, Bindings, Val};
use crate::spec::ApiSpec;
use crate::wire::case::Case;
use crate::wire::oracle::Oracle;
use crate::wire::outcome::Output;

use super::{cause, Cause, Detection, Evidence};

/// The first output holding NaN or inf, as a `nan_inf` detection (the caller has asked whether
/// the inputs were finite).
pub(super) fn nonfinite(outputs: &[Output]) -> Option<Detection> {
    outputs.iter().enumerate().find_map(|(i, o)| {
        let Output::Tensor(t) = o else { return None };
        if t.nan == 0 && t.inf == 0 {
            return None;
        }
        let values = match (t.nan > 0, t.inf > 0) {
            (true, true) => cause::NonFinite::NanAndInf,
            (true, false) => cause::NonFinite::Nan,
            _ => cause::NonFinite::Inf,
        };
        let dtype = t.dtype.map_or("?".to_string(), |d| d.to_string());
        Some(Detection {
            oracle: Oracle::NanInf,
            // No dtype in the cause: one cause seen in float16 and float32 is one finding.
            cause: Cause::NonFinite { output: i, values },
            message: format!("output {i} ({dtype}, shape {:?}) holds {} NaN and {} inf from finite inputs", t.shape, t.nan, t.inf),
            signal: None,
            exit: None,
            evidence: Evidence::NonFinite { output: i },
        })
    })
}

/// Whether a BLAS or LAPACK operator's matrices may be exactly singular (`plausible::
/// maybe_singular`): there a solve or an inverse is inf or NaN by definition (`triangular_solve`
/// of a lower triangle from `randint(-8, 1)`).
pub(super) fn maybe_singular(api: &ApiSpec, case: &Case) -> bool {
    super::plausible::maybe_singular(&api.name, case)
}

/// Whether every input of the call is known finite. A copy of a forward's floating output
/// (`_masked_softmax_backward`'s `output`) holds what the forward made, NaN included (a row
/// masked whole), which its placeholder recipe does not say: a NaN there is the forward's.
pub(super) fn inputs_known_finite(case: &Case) -> bool {
    let copies_floating = case.forward.as_ref().is_some_and(|f| {
        f.binds.iter().any(|b| !b.like && matches!(case.args.get(b.param), Some(crate::wire::case::Arg::Tensor(r)) if r.dtype.is_floating() || r.dtype.is_complex()))
    });
    case.inputs_finite() && !copies_floating
}

/// A value domain: `ensures GUARD => no_nan(...)` (or `finite`), a NaN where the function is
/// defined, which the `nan_inf` oracle names; for several outputs, a conjunction of those
/// (`no_nan(result.0) and no_nan(result.1)`).
pub fn is_domain(e: &crate::spec::TExpr) -> bool {
    use crate::spec::{BinOp, Builtin, TExpr};
    match e {
        TExpr::Binary(BinOp::Implies, _, consequent) => is_domain(consequent),
        TExpr::Binary(BinOp::And, left, right) => is_domain(left) && is_domain(right),
        TExpr::Call(Builtin::NoNan | Builtin::Finite, args) => args.iter().any(|a| matches!(a, TExpr::Result(_))),
        _ => false,
    }
}

/// Whether a value domain judges this call. A domain speaks of finite, real, non-empty inputs
/// that the result's dtype can hold: a NaN from an inf, a complex pole, the mean of nothing, or
/// an input cast to a dtype it overflows (`log_softmax(9e18, dtype=float16)`) is no finding of it.
fn domain_applies(case: &Case, outputs: &[Output]) -> bool {
    let tensors: Vec<&crate::wire::case::TensorRecipe> = case.args.iter().flat_map(crate::wire::case::Arg::tensors).collect();
    let complex = tensors.iter().any(|t| t.dtype.is_complex())
        || outputs.iter().any(|o| matches!(o, Output::Tensor(t) if t.dtype.is_some_and(|d| d.is_complex())))
        || case.args.iter().any(|a| matches!(a, crate::wire::case::Arg::Dtype(d) if d.is_complex()));
    if !inputs_known_finite(case) || complex || tensors.iter().any(|t| t.numel() == 0) {
        return false;
    }
    let largest = tensors.iter().map(|t| {
        let v = crate::eval::TensorVal::of_recipe(t);
        v.min.abs().max(v.max.abs())
    });
    let largest = largest.fold(0.0, f64::max);
    let room = outputs.iter().filter_map(|o| match o {
        Output::Tensor(t) => t.dtype.and_then(|d| d.limits()).map(|(max, _, _)| max),
        _ => None,
    });
    room.fold(f64::INFINITY, f64::min) >= largest
}

/// `ensures` clauses that the outputs violate.
pub(super) fn postconditions(api: &ApiSpec, case: &Case, outputs: &[Output]) -> Vec<Detection> {
    if api.ensures.is_empty() {
        return Vec::new();
    }
    let params: Vec<Val> = case
        .args
        .iter()
        .zip(&api.params)
        .map(|(a, p)| match a {
            crate::wire::case::Arg::Omitted => p.default.as_ref().map(crate::gen::values::value_val).unwrap_or(Val::None),
            a => Val::of_arg(a),
        })
        .collect();
    let results: Vec<Val> = outputs.iter().map(Val::of_output).collect();
    let optional: Vec<bool> = api.params.iter().map(|p| p.optional).collect();
    let b = Bindings { params: &params, results: &results };
    let finite = domain_applies(case, outputs) && !maybe_singular(api, case);
    api.ensures
        .iter()
        .enumerate()
        .filter(|(_, c)| (finite || !is_domain(&c.expr)) && eval::holds(&c.expr, &b, &c.params, &optional) == Some(false))
        .map(|(clause, c)| {
            let domain = is_domain(&c.expr);
            Detection {
                oracle: if domain { Oracle::NanInf } else { Oracle::Postcondition },
                cause: Cause::Ensures { clause: c.text.clone() },
                message: if domain {
                    format!("NaN from finite inputs inside the domain where `{}` is defined (`ensures {}`)", api.name, c.text)
                } else {
                    format!("postcondition `{}` does not hold", c.text)
                },
                signal: None,
                exit: None,
                evidence: Evidence::Postcondition { clause },
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::wire::case::{Arg, Case, DType, Fill, TensorRecipe};

    /// A domain of several outputs is a conjunction; a guard before it keeps it one.
    #[test]
    fn conjunctions_of_domains_are_domains() {
        let src = "api torch.linalg.qr(A: Tensor) -> (Q: Tensor, R: Tensor) {\n    ensures no_nan(Q) and no_nan(R);\n    ensures A.ndim == 2 => finite(Q) and no_nan(R);\n    ensures no_nan(Q) and Q.ndim >= 2;\n}\n";
        let checked = crate::check::check_text(std::path::Path::new("t.sfz"), src);
        assert!(!checked.has_errors(), "{:?}", checked.diags.iter().map(|d| &d.message).collect::<Vec<_>>());
        let domains: Vec<bool> = checked.spec.apis[0].ensures.iter().map(|c| super::is_domain(&c.expr)).collect();
        assert_eq!(domains, [true, true, false]);
    }

    /// A backward fed a copy of its forward's floating output does not know that input finite
    /// (the forward may have made NaN of finite inputs); a fresh `like` tensor or an integer copy
    /// (indices) is as its recipe says.
    #[test]
    fn a_copy_of_a_forwards_floating_output_is_not_known_finite() {
        use crate::wire::case::{Bind, Forward};
        let tensor = |dtype| Arg::Tensor(TensorRecipe { dtype, shape: vec![2], fill: Fill::Constant(0.0), seed: 0, layout: Default::default(), specials: Vec::new() });
        let fed = |like: bool, dtype| Case {
            op: 0,
            args: vec![tensor(DType::Float32), tensor(dtype)],
            forward: Some(Forward { binds: vec![Bind { param: 1, output: 0, like }], broken: None }),
        };
        assert!(super::inputs_known_finite(&Case { op: 0, args: vec![tensor(DType::Float32)], forward: None }));
        assert!(!super::inputs_known_finite(&fed(false, DType::Float16)), "a copy of softmax's output");
        assert!(super::inputs_known_finite(&fed(true, DType::Float16)), "a grad_output drawn from its recipe");
        assert!(super::inputs_known_finite(&fed(false, DType::Int64)), "max_pool's indices");
    }

    /// A value domain of a solver is not judged on matrices that may be exactly singular
    /// (integers, a constant, placed values); it is on a continuous draw, and on other operators.
    #[test]
    fn a_solvers_domain_is_not_judged_on_matrices_that_may_be_singular() {
        let src = "api torch.triangular_solve(input: Tensor, A: Tensor) -> (solution: Tensor, cloned_coefficient: Tensor) {\n    ensures no_nan(solution);\n}\napi torch.exp(input: Tensor) -> Tensor {\n    ensures no_nan(result);\n}\n";
        let checked = crate::check::check_text(std::path::Path::new("t.sfz"), src);
        let matrix = |fill: Fill| Arg::Tensor(TensorRecipe { dtype: DType::Float64, shape: vec![3, 3], fill, seed: 1, layout: Default::default(), specials: Vec::new() });
        let case = |fill: Fill| Case { op: 0, args: vec![matrix(Fill::Uniform { lo: 0.0, hi: 20.0 }), matrix(fill)], forward: None };
        let (solve, exp) = (&checked.spec.apis[0], &checked.spec.apis[1]);
        assert!(super::maybe_singular(solve, &case(Fill::Int { lo: -8, hi: 1 })));
        assert!(super::maybe_singular(solve, &case(Fill::Constant(1.0))));
        assert!(!super::maybe_singular(solve, &case(Fill::Uniform { lo: -10.0, hi: 10.0 })));
        assert!(!super::maybe_singular(exp, &Case { op: 0, args: vec![matrix(Fill::Int { lo: -8, hi: 1 })], forward: None }), "not a solver");
    }
}
