//! Whether an API has anything for the `gradient` oracle to differentiate, read from its spec:
//! a tensor input that may be real floating, and a tensor output. Which outputs depend
//! differentiably on which inputs is libtorch's to say, at run time: the worker skips a case
//! whose outputs do not require grad, and counts a backward that is "not implemented" apart.
use crate::spec::{ApiSpec, BinOp, ParamType, TExpr, Value};
use crate::wire::case::DType;

/// Why `gradient` has nothing to check on `api`, or None when it may.
pub fn why_not(api: &ApiSpec) -> Option<String> {
    if !api.returns.iter().any(|r| matches!(r.ty, ParamType::Tensor | ParamType::TensorList)) {
        return Some("it returns no tensor".into());
    }
    let tensors: Vec<usize> = api.params.iter().enumerate().filter(|(_, p)| matches!(p.ty, ParamType::Tensor | ParamType::TensorList)).map(|(i, _)| i).collect();
    if tensors.is_empty() {
        return Some("it takes no tensor".into());
    }
    if tensors.iter().any(|&i| allowed_dtypes(api, i).is_none_or(|ds| ds.iter().any(|d| d.is_floating()))) {
        return None;
    }
    Some("none of its tensor inputs may be float16, bfloat16, float32 or float64 (the spec's `dtype in` constraints)".into())
}

/// The dtypes a tensor parameter's `dtype in [...]` and `dtype == d` constraints leave it, or
/// None when none constrains it.
fn allowed_dtypes(api: &ApiSpec, param: usize) -> Option<Vec<DType>> {
    let mut allowed: Option<Vec<DType>> = None;
    for c in &api.requires {
        let TExpr::Binary(op @ (BinOp::In | BinOp::Eq), lhs, rhs) = &c.expr else { continue };
        if !is_dtype_of(lhs, param) {
            continue;
        }
        let Some(set) = dtypes(rhs).filter(|_| matches!(op, BinOp::In | BinOp::Eq)) else { continue };
        allowed = Some(match allowed {
            Some(before) => before.into_iter().filter(|d| set.contains(d)).collect(),
            None => set,
        });
    }
    allowed
}

/// `p.dtype` or `p[*].dtype` of parameter `param`.
fn is_dtype_of(e: &TExpr, param: usize) -> bool {
    let TExpr::Prop(of, crate::spec::Prop::Dtype) = e else { return false };
    match of.as_ref() {
        TExpr::Param(i) => *i == param,
        TExpr::Each(inner) | TExpr::Index(inner, _) => matches!(inner.as_ref(), TExpr::Param(i) if *i == param),
        _ => false,
    }
}

/// The dtypes a literal names.
fn dtypes(e: &TExpr) -> Option<Vec<DType>> {
    match e {
        TExpr::Lit(Value::Dtype(d)) => Some(vec![*d]),
        TExpr::Lit(Value::DtypeSet(ds)) => Some(ds.clone()),
        TExpr::List(items) => items.iter().map(dtypes).collect::<Option<Vec<_>>>().map(|v| v.concat()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::why_not;
    use crate::check::first_api as api;

    #[test]
    fn a_floating_or_unconstrained_tensor_input_is_differentiable() {
        assert_eq!(why_not(&api("api torch.exp(input: Tensor) -> Tensor {}")), None);
        assert_eq!(why_not(&api("api torch.exp(input: Tensor) -> Tensor { input.dtype in [int64, float32]; }")), None);
    }

    #[test]
    fn integer_inputs_or_no_tensor_output_are_named() {
        let ints = why_not(&api("api torch.bitwise_not(input: Tensor) -> Tensor { input.dtype in [int32, int64]; }")).expect("a reason");
        assert!(ints.contains("float32"), "{ints}");
        let ints = why_not(&api("api torch.bitwise_not(input: Tensor) -> Tensor { input.dtype == int64; }")).expect("a reason");
        assert!(ints.contains("dtype in"), "{ints}");
        assert_eq!(why_not(&api("api torch.numel(input: Tensor) -> int {}")).as_deref(), Some("it returns no tensor"));
    }
}
