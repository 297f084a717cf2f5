//! Premature overflow where no wider dtype exists: a float64 pointwise result that is infinite
//! although the function's value is representable.
//!
//! The same call on the inputs scaled by `t = 1 - h, 1 - 2h, 1 - 3h` walks up to the input along
//! a ray; per element, `h` is the first of `2^-12, 2^-10, 2^-8, 2^-6` at which all three values
//! are finite and nonzero (`i0` overflows from 709.8 on, its value only past 713.9). Where
//! `log |f|` along it is smooth (positive, nearly equal steps: the
//! exponential growth of `exp`, `cosh`, `i0` near the top of the range), its quadratic
//! extrapolation to `t = 1` is the magnitude of the true value. An element that is infinite while
//! that magnitude is below the dtype's largest value by more than 1% (plus twice the curvature
//! of the fit) overflowed in an intermediate, as `exp(x) * g(x)` does when `exp(x)` alone
//! leaves the range first. A pole at the input has no smooth steps and is never judged; the
//! reproducer repeats the same arithmetic in Python.
//!
//! A NaN has no such neighbour (the check of where results are defined asks about it): where
//! the true value overflows, a recurrence's `inf - inf` gives NaN instead of inf
//! (`hermite_polynomial_he(1.79e308, 10)`), which no campaign should report as a wrong number. So each operand of the element is halved (and, apart, doubled:
//! `k1(5e-324)` is 2e323) until the result is finite; where `log |f|` then grows, walking back,
//! by at least as much per step as it did over the last two (a polynomial's `n ln 2`, an
//! exponential's more), that growth carried back to the input is a lower bound of the true
//! magnitude, and a bound beyond the range means the NaN stands for an honest overflow.
use tch::{Kind, Tensor};

use super::checks::Failure;
use super::executor::{Called, Executor, Inputs};
use sfz_wire::case::{Case, DType};
use sfz_wire::outcome::{Outcome, Output, TensorInfo};
use sfz_wire::tags;
use sfz_wire::variant::{CheckOutcome, Premature, PrematureKind, Tolerance, ValueMismatch};

/// The steps of the ray, relative to the input, tried in order.
pub const STEPS: [f64; 4] = [1.0 / 4096.0, 1.0 / 1024.0, 1.0 / 256.0, 1.0 / 64.0];

/// How many halvings (or doublings) of an operand the NaN check tries: enough to bring
/// float64's largest value below 1 (and its smallest denormal above it).
const HALVINGS: usize = 1100;

/// How many NaN elements of an output the NaN check looks at: each costs a call.
const NAN_SAMPLES: usize = 3;

/// The float64 outputs `pick` chooses.
fn float64_outputs(outputs: &[Output], pick: fn(&TensorInfo) -> bool) -> Vec<usize> {
    outputs.iter().enumerate().filter(|(_, o)| matches!(o, Output::Tensor(i) if i.dtype == Some(DType::Float64) && pick(i))).map(|(k, _)| k).collect()
}

/// Whether three values along the ray can be extrapolated at all.
fn usable(near: [f64; 3]) -> bool {
    near.iter().all(|v| v.is_finite() && *v != 0.0)
}

/// How the extrapolation judges one element, from the values at `1 - h`, `1 - 2h`, `1 - 3h`:
/// the extrapolated magnitude's logarithm when the steps are smooth and the value grows.
pub fn extrapolate(near: [f64; 3]) -> Option<f64> {
    if !usable(near) || near.iter().any(|v| v.signum() != near[0].signum()) {
        return None;
    }
    let [l1, l2, l3] = near.map(|v| v.abs().ln());
    let (d1, d2) = (l1 - l2, l2 - l3);
    let smooth = d1 > 0.0 && d2 > 0.0 && (d1 - d2).abs() <= 0.1 * d1;
    smooth.then_some(l1 + d1 + (d1 - d2))
}

/// Whether an infinite element whose extrapolated log-magnitude is `log` overflowed early.
pub fn premature(log: f64, near: [f64; 3]) -> bool {
    let [l1, l2, l3] = near.map(|v| v.abs().ln());
    let curvature = ((l1 - l2) - (l2 - l3)).abs();
    log < f64::MAX.ln() - 0.01 - 2.0 * curvature
}

/// Whether the values of `f` along a walk from an input, one operand halved (or doubled) `i`
/// times at `halved[i]` (`halved[0]` the input itself), say that its magnitude at the input is
/// beyond float64's range (see the module's doc).
pub fn overflows_along(halved: &[f64]) -> bool {
    let usable = |v: f64| v.is_finite() && v != 0.0;
    let Some(i) = (1..halved.len().saturating_sub(2)).find(|&i| halved[i..i + 3].iter().all(|v| usable(*v))) else { return false };
    let [l0, l1, l2] = [halved[i], halved[i + 1], halved[i + 2]].map(|v| v.abs().ln());
    let (d1, d2) = (l0 - l1, l1 - l2);
    d2 > 0.0 && d1 >= 0.9 * d2 && l0 + i as f64 * d1 > f64::MAX.ln() + 1.0
}

impl Executor {
    /// The float64 overflow check of a pointwise case (see the module's doc).
    pub(super) fn ray(&mut self, case: &Case, main: &Called, inputs: &Inputs) -> Result<CheckOutcome, Failure> {
        let Outcome::Returned { outputs, .. } = &main.outcome else {
            return Err(Failure::Skip("the call raised".into()));
        };
        let infinite = float64_outputs(outputs, |i| i.inf > 0);
        if infinite.is_empty() {
            return Err(Failure::Skip("no input to promote and no infinite float64 result".into()));
        }
        for t in &inputs.tensors {
            if t.is_floating_point() && t.f_isfinite()?.f_all()?.int64_value(&[]) == 0 {
                return Err(Failure::Skip("an input is not finite".into()));
            }
        }
        // Per step size, the three calls below the input.
        let mut near: Vec<Vec<Vec<Option<Tensor>>>> = Vec::with_capacity(STEPS.len());
        for h in STEPS {
            let mut calls = Vec::with_capacity(3);
            for k in 1..=3 {
                let t = 1.0 - k as f64 * h;
                // A polynomial's degree stays: scaled, it would drop by one (see `tags::integer_degree`).
                let scaled = inputs.map(|arg, x| if x.is_floating_point() && !self.is_degree(case.op, arg) { x.f_mul_scalar(t) } else { Ok(x.shallow_clone()) })?;
                let called = self.invoke_variant(case.op, case, &scaled, &[])?;
                if !matches!(called.outcome, Outcome::Returned { .. }) {
                    return Err(Failure::Skip("the call raised just below the input".into()));
                }
                calls.push(called.tensors);
            }
            near.push(calls);
        }
        let values = |t: &Tensor| Vec::<f64>::try_from(&t.f_to_kind(Kind::Double)?.f_contiguous()?.f_reshape([-1i64])?);
        for k in infinite {
            let Some(Some(main_k)) = main.tensors.get(k) else { continue };
            let result = values(main_k)?;
            // steps[s][i]: output k at 1 - (i + 1) * STEPS[s].
            let mut steps = Vec::with_capacity(STEPS.len());
            for calls in &near {
                let mut at = Vec::with_capacity(3);
                for c in calls {
                    match c.get(k) {
                        Some(Some(t)) if t.size() == main_k.size() => at.push(values(t)?),
                        _ => return Err(Failure::Skip("the output changed shape just below the input".into())),
                    }
                }
                steps.push(at);
            }
            let mut found: Option<Premature> = None;
            for (j, y) in result.iter().enumerate() {
                if !y.is_infinite() {
                    continue;
                }
                let Some(at) = steps.iter().map(|s| [s[0][j], s[1][j], s[2][j]]).find(|at| usable(*at)) else { continue };
                let Some(log) = extrapolate(at).filter(|l| premature(*l, at) && at[0].signum() == y.signum()) else { continue };
                match &mut found {
                    Some(p) => p.count += 1,
                    None => found = Some(Premature { what: PrematureKind::Inf, index: j as u64, actual: *y, expected: at[0].signum() * log.exp(), count: 1, extrapolated: true }),
                }
            }
            if let Some(p) = found {
                return Ok(CheckOutcome::Values(ValueMismatch {
                    output: k,
                    dtype: Some(DType::Float64),
                    index: p.index,
                    actual: p.actual,
                    expected: p.expected,
                    mismatched: p.count,
                    total: result.len() as u64,
                    max_abs: 0.0,
                    max_rel: 0.0,
                    tolerance: Tolerance::EXACT,
                    premature: Some(p),
                    squares_overflow: None,
                    powers_overflow: None,
                    strided: false,
                    undetermined: false,
                }));
            }
        }
        Ok(CheckOutcome::Agree { max_abs: 0.0, max_rel: 0.0 })
    }

    /// Whether the NaN elements of a pointwise call's float64 outputs (a few of each) all stand
    /// for true values beyond the range (see the module's doc): per element, calls on vectors
    /// holding its operands, one of them halved, or doubled, 0 to `HALVINGS` times; one such
    /// walk along which the value grows past the range explains the NaN. And any NaN of an
    /// interpolation whose input reaches past half the range.
    pub(super) fn nans_overflow(&mut self, case: &Case, main: &Called, inputs: &Inputs) -> Result<bool, Failure> {
        let Outcome::Returned { outputs, .. } = &main.outcome else { return Ok(false) };
        let nan = float64_outputs(outputs, |i| i.nan > 0);
        if nan.is_empty() {
            return Ok(false);
        }
        // An interpolation's weights sum beyond 1 in magnitude (bicubic's 1.28): an input past
        // half the range leaves its partial sums no headroom, and inf - inf is NaN.
        if tags::interpolates(self.op_name(case.op)) && super::conditioning::finite_max(inputs.tensors.iter().filter(|t| t.is_floating_point()))? > f64::MAX / 2.0 {
            return Ok(true);
        }
        if tags::class(self.op_name(case.op)) != tags::OpClass::Pointwise {
            return Ok(false);
        }
        let flat = |t: &Tensor| t.f_to_kind(Kind::Double)?.f_contiguous()?.f_reshape([-1i64]);
        let walk = |factor: f64| Tensor::from_slice(&(0..HALVINGS).map(|i| f64::powi(factor, i as i32)).collect::<Vec<_>>());
        let (halved, doubled) = (walk(0.5), walk(2.0));
        for k in nan {
            let Some(Some(out)) = main.tensors.get(k) else { return Ok(false) };
            let shape = out.size();
            let elements: Vec<i64> = Vec::<i64>::try_from(&flat(out)?.f_isnan()?.f_nonzero()?.f_reshape([-1i64])?)?;
            for &e in elements.iter().take(NAN_SAMPLES) {
                // Each input's element that output element `e` reads.
                let mut operands = Vec::with_capacity(inputs.tensors.len());
                for t in &inputs.tensors {
                    let Ok(wide) = t.f_broadcast_to(shape.as_slice()) else { return Ok(false) };
                    operands.push(flat(&wide)?.double_value(&[e]));
                }
                // A huge operand halved (`hermite_polynomial_he(1.79e308, 10)`), a tiny one
                // doubled (`modified_bessel_k1(5e-324)`, about 2e323).
                // A polynomial's degree is not walked: halved, it is another polynomial.
                let degree = |i: usize| inputs.ranges.iter().position(|&(start, end)| (start..end).contains(&i)).is_some_and(|arg| self.is_degree(case.op, arg));
                let walks: Vec<usize> =
                    (0..operands.len()).filter(|&i| inputs.tensors[i].is_floating_point() && operands[i].is_finite() && operands[i] != 0.0 && !degree(i)).collect();
                let mut explained = false;
                for (walked, steps) in walks.into_iter().flat_map(|i| [(i, &halved), (i, &doubled)]) {
                    let mut index = 0;
                    let vectors = inputs.map(|_, t| {
                        index += 1;
                        let x = Tensor::from_slice(&[operands[index - 1]]).f_expand([HALVINGS as i64], false)?;
                        let x = if index - 1 == walked { x.f_mul(steps)? } else { x.f_contiguous()? };
                        x.f_to_kind(t.f_kind()?)
                    })?;
                    let called = self.invoke_variant(case.op, case, &vectors, &[])?;
                    let Some(Some(y)) = called.tensors.get(k).filter(|_| matches!(called.outcome, Outcome::Returned { .. })) else { continue };
                    if y.size() == [HALVINGS as i64] && overflows_along(&Vec::<f64>::try_from(&flat(y)?)?) {
                        explained = true;
                        break;
                    }
                }
                if !explained {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::{extrapolate, overflows_along, premature, STEPS};

    fn at(f: impl Fn(f64) -> f64, x: f64) -> [f64; 3] {
        [1.0, 2.0, 3.0].map(|k| f(x * (1.0 - k * STEPS[0])))
    }

    #[test]
    fn exponential_growth_extrapolates_to_its_value() {
        // cosh(710) = 1.1e308 is representable although exp(710) is not.
        let near = at(|x| (x - 2f64.ln()).exp(), 710.0);
        let log = extrapolate(near).unwrap();
        assert!((log - (710.0 - 2f64.ln())).abs() < 1e-6, "{log}");
        assert!(premature(log, near));
        // exp(710) itself is beyond the range: its inf is honest.
        let near = at(f64::exp, 709.9);
        assert!(!premature(extrapolate(near).unwrap(), near));
    }

    #[test]
    fn a_polynomial_beyond_the_range_is_an_honest_overflow_and_one_within_it_is_not() {
        let halved = |f: &dyn Fn(f64) -> f64, x: f64| (0..1100).map(|i| f(x * 0.5f64.powi(i))).collect::<Vec<_>>();
        // x^10 at 1.79e308 is 3e3082; NaN where it leaves the range, as a recurrence's inf - inf.
        let pow10 = |x: f64| if x.powi(10).is_finite() { x.powi(10) } else { f64::NAN };
        assert!(overflows_along(&halved(&pow10, 1.79e308)));
        // At 1e30 it is 1e300, in range: a NaN there is no overflow.
        assert!(!overflows_along(&halved(&|x: f64| if x > 1e29 { f64::NAN } else { x.powi(10) }, 1e30)));
        // A value that shrinks as its input grows (sinc) never stands for an overflow.
        assert!(!overflows_along(&halved(&|x: f64| if x > 1e300 { f64::NAN } else { (x.sin() / x).abs().max(1e-300) }, 1e308)));
    }

    #[test]
    fn a_pole_is_not_smooth() {
        // 1 / (1 - x) near x = 1: log-magnitude steps of ln 2 and ln 1.5.
        assert_eq!(extrapolate(at(|x| 1.0 / (1.0 - x), 1.0)), None);
    }
}
