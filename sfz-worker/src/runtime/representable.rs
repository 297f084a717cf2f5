//! Arguments the original's dtype cannot hold. A float16 call casts a scalar of 1e300 (or an
//! int64 element of 9e18) to inf, a scalar of 5e-324 to 0 and an int16 element of 32767 to
//! 32768, while the float64 reference keeps them: the two compute different functions, so the
//! precision check does not compare them.
use tch::Kind;

use super::executor::{Called, Inputs};
use sfz_wire::case::{Arg, Case, DType};
use sfz_wire::outcome::{Outcome, Output};

/// The real dtype of a complex one.
fn real(d: DType) -> DType {
    match d {
        DType::Complex64 => DType::Float32,
        DType::Complex128 => DType::Float64,
        d => d,
    }
}

/// Whether casting `t` to `kind` changes a value.
fn changed_by(t: &tch::Tensor, kind: Kind) -> Result<bool, tch::TchError> {
    let exact = t.f_to_kind(Kind::Double)?;
    let cast = t.f_to_kind(kind)?.f_to_kind(Kind::Double)?;
    Ok(!bool::try_from(cast.f_eq_tensor(&exact)?.f_all()?)?)
}

/// Whether casting `t` to `kind` turns a finite value infinite.
fn overflows_in(t: &tch::Tensor, kind: Kind) -> Result<bool, tch::TchError> {
    let lost = t.f_isfinite()?.f_logical_and(&t.f_to_kind(kind)?.f_isfinite()?.f_logical_not()?)?;
    bool::try_from(lost.f_any()?)
}

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

/// Why the case holds a scalar argument the original's output dtype cannot represent, if it does.
pub(super) fn unrepresentable_scalar(case: &Case, main: &Called) -> Option<String> {
    let dtype = narrowest(main)?;
    let (max, normal, _) = dtype.limits()?;
    case.args.iter().find_map(|arg| {
        let value = match arg {
            Arg::Float(f) => *f,
            Arg::Int(i) => *i as f64,
            _ => return None,
        };
        let magnitude = value.abs();
        let lost = magnitude.is_finite() && (magnitude > max || (magnitude != 0.0 && magnitude < normal && matches!(arg, Arg::Float(_))));
        lost.then(|| format!("the argument {value:e} is not representable in {dtype:?}, which the call computes in"))
    })
}

/// `case` with its float arguments rounded to the dtype the original computes in (its
/// narrowest floating output's), or None when none changes: a threshold the call compares in
/// float16 (`softshrink_backward`) is that float16 number.
pub(super) fn scalars_rounded(case: &Case, main: &Called) -> Option<Case> {
    let kind = super::materialize::kind(real(narrowest(main)?));
    let round = |v: f64| tch::Tensor::from(v).f_to_kind(kind).and_then(|t| t.f_to_kind(Kind::Double)).map(|t| t.double_value(&[])).unwrap_or(v);
    let mut rounded = case.clone();
    let mut changed = false;
    for arg in &mut rounded.args {
        let values: &mut [f64] = match arg {
            Arg::Float(v) => std::slice::from_mut(v),
            Arg::FloatList(vs) => vs,
            _ => continue,
        };
        for v in values.iter_mut().filter(|v| v.is_finite()) {
            let r = round(*v);
            changed |= r != *v;
            *v = r;
        }
    }
    changed.then_some(rounded)
}

/// Why the case holds an argument the original's output dtype cannot represent, if it does.
pub(super) fn unrepresentable(case: &Case, inputs: &Inputs, main: &Called) -> Result<Option<String>, tch::TchError> {
    let Some(dtype) = narrowest(main) else { return Ok(None) };
    if let Some(why) = unrepresentable_scalar(case, main) {
        return Ok(Some(why));
    }
    let computes = super::materialize::kind(real(dtype));
    // The elements of a tensor list (`_foreach_sigmoid`) are computed each in its own dtype.
    let singles = case.args.iter().enumerate().filter(|(_, a)| !matches!(a, Arg::TensorList(_))).flat_map(|(i, _)| inputs.of(i));
    for t in singles {
        let k = t.f_kind()?;
        // A complex input is cast part by part.
        let parts = if t.is_complex() { t.f_view_as_real()? } else { t.shallow_clone() };
        let floating = t.is_floating_point() || t.is_complex();
        if t.numel() == 0 || k == Kind::Bool || parts.f_kind()? == computes {
            continue;
        }
        // What the call casts to the dtype it computes in: integer inputs (type promotion, a
        // `dtype` argument), and 0-dim floating ones, which take the dtype of the dimensioned
        // inputs. Where the cast changes a value (32767 is 32768 in float16, a float64 scalar
        // tensor of 1e-300 is 0 beside a bfloat16 one), the call computes on other numbers than
        // the reference does. A dimensioned floating input is cast only by a `dtype` argument,
        // whose rounding is the call's business and which the reference makes too (`promote`);
        // but a complex one it cannot make (`cumprod(z, dtype=bfloat16)`): where that cast
        // overflows, the call computes on infinities the reference never sees.
        if floating && t.dim() > 0 {
            if t.is_complex() && overflows_in(&parts, computes)? {
                return Ok(Some(format!("an input holds values beyond {dtype:?}, which the call computes in")));
            }
        } else if changed_by(&parts, computes)? {
            let what = if floating { "a 0-dim input" } else { "an integer input" };
            return Ok(Some(format!("{what} holds values {dtype:?}, which the call computes in, cannot represent")));
        }
    }
    Ok(None)
}
