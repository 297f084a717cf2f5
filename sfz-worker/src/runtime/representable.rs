//! Arguments the original's dtype cannot hold. A float16 call casts a scalar of 1e300 (or an
//! int64 element of 9e18) to inf and a scalar of 5e-324 to 0, while the float64 reference keeps
//! them: the two compute different functions, so the precision check does not compare them.
use tch::Kind;

use super::executor::{Called, Inputs};
use sfz::case::{Arg, Case, DType};
use sfz::outcome::{Outcome, Output};

/// The narrowest floating dtype among the original's outputs.
fn narrowest(main: &Called) -> Option<DType> {
    let Outcome::Returned { outputs, .. } = &main.outcome else { return None };
    outputs
        .iter()
        .filter_map(|o| match o {
            Output::Tensor(t) => t.dtype.filter(|d| matches!(d, DType::Float16 | DType::BFloat16 | DType::Float32 | DType::Complex64)),
            _ => None,
        })
        .min_by(|a, b| a.limits().map(|l| l.0).partial_cmp(&b.limits().map(|l| l.0)).unwrap_or(std::cmp::Ordering::Equal))
}

/// Why the case holds an argument the original's output dtype cannot represent, if it does.
pub(super) fn unrepresentable(case: &Case, inputs: &Inputs, main: &Called) -> Result<Option<String>, tch::TchError> {
    let Some(dtype) = narrowest(main) else { return Ok(None) };
    let Some((max, normal, _)) = dtype.limits() else { return Ok(None) };
    for arg in &case.args {
        let value = match arg {
            Arg::Float(f) => *f,
            Arg::Int(i) => *i as f64,
            _ => continue,
        };
        let magnitude = value.abs();
        if magnitude.is_finite() && (magnitude > max || (magnitude != 0.0 && magnitude < normal && matches!(arg, Arg::Float(_)))) {
            return Ok(Some(format!("the argument {value:e} is not representable in {dtype:?}, which the call computes in")));
        }
    }
    for t in &inputs.tensors {
        let k = t.f_kind()?;
        if t.numel() == 0 || t.is_floating_point() || t.is_complex() || k == Kind::Bool {
            continue;
        }
        let largest = t.f_abs()?.f_max()?.f_to_kind(Kind::Double)?.double_value(&[]);
        if largest > max {
            return Ok(Some(format!("an integer input of magnitude {largest:e} is not representable in {dtype:?}, which the call computes in")));
        }
    }
    Ok(None)
}
