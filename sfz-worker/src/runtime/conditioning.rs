//! How much of a difference from the float64 reference the input's own rounding explains.
//!
//! An operator that only promises backward stability (`Accuracy::Backward`: linear algebra,
//! reductions, convolutions) returns the exact result of an input within a few roundings of the
//! one it was given. At an ill-conditioned point (a nearly singular matrix, a rank-deficient QR)
//! that result may be far from the exact result of the exact input, or overflow where the
//! reference does not, and neither is a bug. So before such a mismatch becomes a finding, the
//! reference is computed again on inputs moved by a quarter to two unit roundoffs of their
//! original dtype (pseudo-random signs and sizes, deterministic per element): where the reference moves by more than
//! its own size, or stops being finite, the element is not judged; elsewhere `K · spread` is
//! added to the element's allowance, `K = 4 · n` for the longest input dimension `n` (the
//! backward error of the usual algorithms grows with it). Premature overflows of intermediates
//! (a square, a sum of squares) stay findings: there the reference barely moves.
//!
//! Pointwise operators (`Accuracy::Forward`) promise more: the result of the exact input. Yet a
//! float32 implementation computes in float32, and where the function is steep relative to its
//! value (an oscillatory Bessel function at 1e8, a polynomial of degree 10^4) its own
//! intermediate roundings move the result as much as moving the input would. So there the
//! allowance grows by `FORWARD · spread` only, and nothing is left unjudged but where the
//! reference stops being defined nearby: an error many times what the input's rounding
//! explains (orders of magnitude at a pole, a wrong sign where the function is smooth) stays a
//! finding, and a NaN or inf against a finite reference always does.
//!
//! BLAS and LAPACK operators (`Accuracy::BackwardInSafeRange`) are not judged at all on an input
//! with a magnitude beyond the square root of its dtype's largest value or smallest normal: they
//! do not scale the products they form, so overflow or underflow there is their documented
//! behaviour, not a defect. A scalar factor (`addmm`'s `alpha`) narrows that range: BLAS may
//! scale an operand by it before the product (reference `dgemm` does), so `alpha · a · b` must
//! be representable as well.
use tch::{Kind, Tensor};

use super::checks::Failure;
use super::compare::Allowance;
use super::executor::{Called, Executor, Inputs};
use sfz_wire::case::{Arg, Case, DType};
use sfz_wire::outcome::Outcome;
use sfz_wire::seed::mix;
use sfz_wire::variant::Accuracy;

/// Moved copies of the inputs the reference is recomputed on: a few, since one pattern of signs
/// may keep a structure (a rank-1 matrix stays rank 1 when its rows move alike).
const PROBES: u64 = 4;

/// Probes in all where the first `PROBES` already show the input ill-posed in some element of
/// some output (a backward-stable operator only). Then the outputs the same factorization
/// decides are suspect too, and a discrete one (the sign of a determinant, `-1`, `0` or `1`)
/// moves only when a probe happens to cross the singularity: `slogdet` of a matrix whose rows
/// are all equal is `-1` in four probes out of four about one time in sixteen.
const ILL_POSED_PROBES: u64 = 16;

/// How many times the spread a forward-accurate operator's error may be: a few roundings of
/// the operator's own intermediates, each of which moves the result like one input rounding.
const FORWARD: f64 = 8.0;

/// Per output: the allowance the conditioning adds, and where the output is not judged at all.
pub(super) struct Conditioning {
    outputs: Vec<Option<(Tensor, Tensor)>>,
}

impl Executor {
    /// The conditioning of `reference` (the float64 call on `promoted`, which are `original`'s
    /// tensors promoted) at this input, for an operator that promises `accuracy`.
    pub(super) fn conditioning(&mut self, op: u32, case: &Case, original: &Inputs, promoted: &Inputs, reference: &Called, accuracy: Accuracy) -> Result<Conditioning, Failure> {
        let longest = promoted.tensors.iter().filter(|t| t.is_floating_point() || t.is_complex()).flat_map(|t| t.size()).max().unwrap_or(1).max(1);
        let forward = accuracy == Accuracy::Forward;
        let k = if forward { FORWARD } else { 4.0 * longest as f64 };
        let mut spread: Vec<Option<Tensor>> = reference.tensors.iter().map(|_| None).collect();
        let mut undefined: Vec<Option<Tensor>> = reference.tensors.iter().map(|_| None).collect();
        for probe in 1..=ILL_POSED_PROBES {
            // Past the first few, only where the input already shows ill-posed somewhere.
            if probe == PROBES + 1 && (forward || !Self::any_ill_posed(reference, &spread, &undefined, k)?) {
                break;
            }
            let mut index = 0u64;
            let moved = promoted.map(|_, t| {
                index += 1;
                let Some(of) = original.tensors.get(index as usize - 1).and_then(|o| o.f_kind().ok()).and_then(low_precision) else {
                    return Ok(t.shallow_clone());
                };
                rounded_away(t, of, probe * 0x9e37_79b9 + index)
            })?;
            let called = self.invoke_variant(op, case, &moved, &[])?;
            let returned = matches!(called.outcome, Outcome::Returned { .. });
            for (i, r) in reference.tensors.iter().enumerate() {
                let Some(r) = r.as_ref().filter(|r| wide(r)) else { continue };
                // Raised, or a different shape: the result is not defined near this input.
                let Some(p) = called.tensors.get(i).and_then(Option::as_ref).filter(|p| returned && p.size() == r.size()) else {
                    undefined[i] = Some(r.f_ones_like()?.f_to_kind(Kind::Bool)?);
                    continue;
                };
                let moved_by = p.f_sub(r)?.f_abs()?.f_to_kind(Kind::Double)?;
                let lost = p.f_isfinite()?.f_logical_not()?;
                spread[i] = Some(match spread[i].take() {
                    Some(s) => s.f_maximum(&moved_by)?,
                    None => moved_by,
                });
                undefined[i] = Some(match undefined[i].take() {
                    Some(u) => u.f_logical_or(&lost)?,
                    None => lost,
                });
            }
        }
        let outputs = Self::verdicts(reference, &spread, &undefined, k, forward)?;
        Ok(Conditioning { outputs })
    }

    /// Per output: the slack (`k` times the spread) and the elements not judged (the reference
    /// stopped being finite nearby; for a backward-stable operator, or the slack exceeds the
    /// reference's own magnitude).
    fn verdicts(reference: &Called, spread: &[Option<Tensor>], undefined: &[Option<Tensor>], k: f64, forward: bool) -> Result<Vec<Option<(Tensor, Tensor)>>, tch::TchError> {
        let mut outputs = Vec::with_capacity(reference.tensors.len());
        for (i, r) in reference.tensors.iter().enumerate() {
            let (Some(r), Some(lost)) = (r.as_ref(), undefined[i].as_ref()) else {
                outputs.push(None);
                continue;
            };
            let slack = match &spread[i] {
                Some(s) => s.f_nan_to_num(f64::INFINITY, f64::INFINITY, f64::INFINITY)?.f_mul_scalar(k)?,
                None => r.f_zeros_like()?.f_to_kind(Kind::Double)?,
            };
            let unjudged = if forward {
                lost.shallow_clone()
            } else {
                let magnitude = r.f_abs()?.f_to_kind(Kind::Double)?;
                lost.f_logical_or(&slack.f_gt_tensor(&magnitude)?)?
            };
            outputs.push(Some((slack, unjudged)));
        }
        Ok(outputs)
    }

    /// Whether some element of some output is ill-posed at this input as far as the probes so
    /// far show.
    fn any_ill_posed(reference: &Called, spread: &[Option<Tensor>], undefined: &[Option<Tensor>], k: f64) -> Result<bool, tch::TchError> {
        for (_, unjudged) in Self::verdicts(reference, spread, undefined, k, false)?.into_iter().flatten() {
            if bool::try_from(unjudged.f_any()?)? {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

impl Conditioning {
    /// The reference with every unjudged element NaN (a comparison against a rounded
    /// reference skips those), and `allowance` grown by the slack.
    pub(super) fn apply(&self, reference: &Called, allowance: &[Option<Allowance>]) -> Result<(Called, Vec<Option<Allowance>>), tch::TchError> {
        let mut tensors = Vec::with_capacity(reference.tensors.len());
        let mut allowed = Vec::with_capacity(reference.tensors.len());
        for (i, r) in reference.tensors.iter().enumerate() {
            let before = allowance.get(i).and_then(Option::as_ref);
            match (r, self.outputs.get(i).and_then(Option::as_ref)) {
                (Some(r), Some((slack, unjudged))) => {
                    tensors.push(Some(r.f_masked_fill(unjudged, f64::NAN)?));
                    allowed.push(Some(match before {
                        // A comparison reads a non-finite rounding as none.
                        Some(a) => a.map(|t| t.f_nan_to_num(0.0, 0.0, 0.0)?.f_add(slack))?,
                        None => Allowance { rounding: slack.shallow_clone(), no_headroom: slack.f_zeros_like()?.f_to_kind(Kind::Bool)? },
                    }));
                }
                (r, _) => {
                    tensors.push(r.as_ref().map(Tensor::shallow_clone));
                    allowed.push(before.map(|a| a.map(|t| Ok(t.shallow_clone()))).transpose()?);
                }
            }
        }
        Ok((Called { outcome: reference.outcome.clone(), tensors }, allowed))
    }
}

/// Why the inputs of `case` (`original`) are beyond the range in which BLAS and LAPACK form
/// products safely (see the module's doc), or hold NaN or inf, or None when every nonzero
/// magnitude is within it.
pub(super) fn beyond_safe_range(case: &Case, original: &Inputs) -> Result<Option<String>, tch::TchError> {
    beyond_safe_range_of(&original.tensors, scalar_factor(case))
}

/// The largest magnitude of `case`'s float arguments, at least 1 (infinite for an infinite one):
/// a factor such as `alpha` or `beta` may multiply any operand before BLAS forms its products.
pub(super) fn scalar_factor(case: &Case) -> f64 {
    case.args.iter().filter_map(|a| if let Arg::Float(v) = a { Some(v.abs()) } else { None }).filter(|v| !v.is_nan()).fold(1.0, f64::max)
}

/// `beyond_safe_range` of any tensors, float64 and complex128 ones included (a relation
/// scales a float64 matrix of 1e140 by 2^60, where double-precision LAPACK overflows too), for
/// products scaled by `factor` (at least 1).
pub(super) fn beyond_safe_range_of(tensors: &[Tensor], factor: f64) -> Result<Option<String>, tch::TchError> {
    for t in tensors {
        let Some(dtype) = floating(t.f_kind()?) else { continue };
        let Some((max, normal, _)) = dtype.limits() else { continue };
        // In double precision: a complex64 modulus may overflow float32 where its parts do not.
        let wide = if dtype.is_complex() { Kind::ComplexDouble } else { Kind::Double };
        let magnitude = t.f_to_kind(wide)?.f_abs()?.f_to_kind(Kind::Double)?;
        // How a NaN or an inf travels through a factorization or a convolution is no promise of
        // theirs (which pivot it meets first, whether oneDNN multiplies it by a padding zero).
        if !bool::try_from(magnitude.f_isfinite()?.f_all()?)? {
            return Ok(Some("an input holds NaN or inf, whose path through BLAS and LAPACK is unspecified".into()));
        }
        let judged = magnitude.f_isfinite()?.f_logical_and(&magnitude.f_ne(0.0)?)?;
        let values = magnitude.f_masked_select(&judged)?;
        if values.numel() == 0 {
            continue;
        }
        let (largest, smallest) = (values.f_max()?.double_value(&[]), values.f_min()?.double_value(&[]));
        if largest > max.sqrt() {
            return Ok(Some(format!("an input magnitude of {largest:e} is beyond the square root of the dtype's largest value, where BLAS and LAPACK products may overflow")));
        }
        if largest > (max / factor).sqrt() {
            return Ok(Some(format!("an input magnitude of {largest:e} times a scalar factor of {factor:e} leaves no room for BLAS and LAPACK products in the dtype's range")));
        }
        if smallest < normal.sqrt() {
            return Ok(Some(format!("an input magnitude of {smallest:e} is below the square root of the dtype's smallest normal, where BLAS and LAPACK products may underflow")));
        }
    }
    Ok(None)
}

/// The dtype a reduction of `tensors`, scaled by `factor` (1, or a relation's `s`), accumulates
/// in (float32 for half, bfloat16 and float32; float64 for float64 and the complex dtypes' parts)
/// when the sum of squares of some tensor leaves its range there while its plain sums and
/// differences stay in it, or None. That is an unscaled norm, variance or distance overflowing
/// on the way (`linalg.norm` of float32 values of 1e19 returns inf, `layer_norm` zeros; a
/// relation's scale of 2^60 takes inputs of magnitude 10 there): one cause across operators
/// (`ValueMismatch::squares_overflow`). A magnitude whose sums already overflow (a loss of
/// inputs near float32's largest value) is some other cause, and so is a true result (`result`,
/// the magnitude the reference or the relation's right side holds) within a factor 16 of the
/// range: a product with a small constant overflows there (`hardswish`'s `x * relu6(x + 3)`).
pub(super) fn squares_overflow<'a>(tensors: impl IntoIterator<Item = &'a Tensor>, factor: f64, result: f64) -> Result<Option<DType>, tch::TchError> {
    power_sum_overflow(tensors, 2.0, factor, result)
}

/// `squares_overflow` for the sum of |x|^p of a p-norm (p >= 2): `n · largest^p` beyond the
/// accumulator's range; for p above 2 also below its smallest subnormal, where every term
/// underflows and the norm is 0 (`norm_except_dim` with pow 16 of 1e-3 in float16).
pub(super) fn power_sum_overflow<'a>(tensors: impl IntoIterator<Item = &'a Tensor>, p: f64, factor: f64, result: f64) -> Result<Option<DType>, tch::TchError> {
    for t in tensors {
        let Some(dtype) = floating(t.f_kind()?) else { continue };
        let Some((max, _, _)) = dtype.limits() else { continue };
        if t.numel() == 0 {
            continue;
        }
        let (accumulates, range) = if max > f32::MAX as f64 { (DType::Float64, f64::MAX) } else { (DType::Float32, f32::MAX as f64) };
        let n = t.numel() as f64;
        // Twice the magnitude: a distance squares differences (`pdist`).
        let largest = 2.0 * finite_magnitudes(t)?.f_max()?.double_value(&[]) * factor;
        // `n · largest^p` beyond the range (in logarithms, so that the power cannot overflow
        // float64), `n · largest` within it.
        if largest > 0.0 && p * largest.ln() + n.ln() > range.ln() && largest * n <= range && result.abs() * 16.0 <= range {
            return Ok(Some(accumulates));
        }
        let smallest = if accumulates == DType::Float64 { 5e-324 } else { 1.4e-45 };
        // Every term below it: the largest itself, not a distance's twice.
        if p > 2.0 && largest > 0.0 && p * (largest / 2.0).ln() + n.ln() < f64::ln(smallest) && result != 0.0 {
            return Ok(Some(accumulates));
        }
    }
    Ok(None)
}

/// A tensor's magnitudes (a complex element's modulus) in float64, its infinite and NaN ones 0.
fn finite_magnitudes(t: &Tensor) -> Result<Tensor, tch::TchError> {
    let wide = if t.is_complex() { Kind::ComplexDouble } else { Kind::Double };
    let m = t.f_to_kind(wide)?.f_abs()?.f_to_kind(Kind::Double)?;
    m.f_masked_fill(&m.f_isfinite()?.f_logical_not()?, 0.0)
}

/// The sum of a tensor's finite magnitudes, in float64; 0 for an empty or non-floating one. An
/// inf's own arithmetic is no sum overflowing, so it counts 0.
pub(super) fn finite_magnitude_sum(t: &Tensor) -> Result<f64, tch::TchError> {
    if t.numel() == 0 || (!t.is_floating_point() && !t.is_complex()) {
        return Ok(0.0);
    }
    Ok(finite_magnitudes(t)?.f_sum(Kind::Double)?.double_value(&[]))
}

/// The largest finite magnitude among `tensors` (0 when they have none).
pub(super) fn finite_max<'a>(tensors: impl IntoIterator<Item = &'a Tensor>) -> Result<f64, tch::TchError> {
    let mut largest = 0f64;
    for t in tensors.into_iter().filter(|t| t.numel() > 0) {
        largest = largest.max(finite_magnitudes(t)?.f_max()?.double_value(&[]));
    }
    Ok(largest)
}

/// Why a BLAS or LAPACK result is not judged although its inputs are in range: some element of
/// the float64 reference is beyond the largest value of the original's dtype, so the
/// original's coupled intermediates overflow and may spoil the elements that are in range.
pub(super) fn result_beyond_range(main: &Called, reference: &Called) -> Result<Option<String>, tch::TchError> {
    let Outcome::Returned { outputs, .. } = &main.outcome else { return Ok(None) };
    for (k, output) in outputs.iter().enumerate() {
        let sfz_wire::outcome::Output::Tensor(info) = output else { continue };
        let (Some(dtype), Some(Some(r))) = (info.dtype, reference.tensors.get(k)) else { continue };
        let Some((max, ..)) = (dtype.is_floating() || dtype.is_complex()).then(|| dtype.limits()).flatten() else { continue };
        let magnitude = r.f_abs()?.f_to_kind(Kind::Double)?;
        let beyond = magnitude.f_isfinite()?.f_logical_and(&magnitude.f_gt(max)?)?;
        if beyond.f_any()?.int64_value(&[]) != 0 {
            return Ok(Some(format!("the float64 result of output {k} leaves the range of {dtype:?}, so BLAS and LAPACK intermediates overflow")));
        }
    }
    Ok(None)
}

/// The dtype of a floating or complex tensor.
fn floating(k: Kind) -> Option<DType> {
    match k {
        Kind::Double => Some(DType::Float64),
        Kind::ComplexDouble => Some(DType::Complex128),
        k => low_precision(k),
    }
}

/// The dtype of a tensor the reference promotes.
fn low_precision(k: Kind) -> Option<DType> {
    Some(match k {
        Kind::Half => DType::Float16,
        Kind::BFloat16 => DType::BFloat16,
        Kind::Float => DType::Float32,
        Kind::ComplexFloat => DType::Complex64,
        _ => return None,
    })
}

/// A float64 or complex128 tensor: what a reference output is when it can be probed.
fn wide(t: &Tensor) -> bool {
    t.f_kind().is_ok_and(|k| matches!(k, Kind::Double | Kind::ComplexDouble))
}

/// `t` moved by a quarter to two roundings of dtype `of` (its own before a widening; float64
/// too), per element as `moves` draws them from `seed`; other tensors as they are.
pub(super) fn nudged(t: &Tensor, of: Kind, seed: u64) -> Result<Tensor, tch::TchError> {
    match floating(of) {
        Some(of) => rounded_away(t, of, seed),
        None => Ok(t.shallow_clone()),
    }
}

/// `t` moved per element by the roundings `moves` draws from `seed`, each a rounding of dtype
/// `of`: relative to the value, but never less than `of`'s denormal spacing, which is absolute
/// (a float32 denormal of 1e-42 is only 3 significant bits: one rounding moves it by 0.1 %).
/// A complex tensor is moved relatively. The result keeps `t`'s dtype.
fn rounded_away(t: &Tensor, of: DType, seed: u64) -> Result<Tensor, tch::TchError> {
    let (Some(u), Some((_, _, spacing))) = (of.unit_roundoff(), of.limits()) else { return Ok(t.shallow_clone()) };
    let kind = t.f_kind()?;
    let m = Tensor::from_slice(&moves(t.numel(), seed)).f_reshape(t.size())?;
    if t.is_complex() {
        // The factor in the tensor's own real precision, so that the product keeps its dtype.
        let real = match kind {
            Kind::ComplexHalf => Kind::Half,
            Kind::ComplexFloat => Kind::Float,
            _ => Kind::Double,
        };
        return t.f_mul(&m.f_mul_scalar(u)?.f_add_scalar(1.0)?.f_to_kind(real)?);
    }
    let x = t.f_to_kind(Kind::Double)?;
    // At most a quarter of the value, so that two of them keep its sign (the smallest denormal
    // moved by its own spacing would reach 0 or cross it); an exact zero stays.
    let magnitude = x.f_abs()?;
    let step = magnitude.f_mul_scalar(u)?.f_clamp_min(spacing)?.f_minimum(&magnitude.f_mul_scalar(0.25)?)?;
    x.f_add(&m.f_mul(&step)?)?.f_to_kind(kind)
}

/// `n` moves in roundings, each of either sign and a size between 1/4 and 2, the same for the
/// same `seed`. The sizes vary: where the result oscillates faster than one rounding moves the
/// input (j1 at 1e9, where a rounding is close to 20 pi), moves of one size can all land on the
/// same phase and make the point look well-conditioned.
fn moves(n: usize, seed: u64) -> Vec<f64> {
    (0..n as u64)
        .map(|i| {
            let bits = mix(seed ^ mix(i));
            let size = 0.25 + 1.75 * ((bits >> 11) as f64 / (1u64 << 53) as f64);
            if bits & 1 == 0 {
                size
            } else {
                -size
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::moves;

    #[test]
    fn moves_are_deterministic_and_mixed_in_sign_and_size() {
        let a = moves(64, 7);
        assert_eq!(a, moves(64, 7));
        assert_ne!(a, moves(64, 8));
        let plus = a.iter().filter(|s| **s > 0.0).count();
        assert!((16..=48).contains(&plus), "{plus} of 64 positive");
        assert!(a.iter().all(|m| (0.25..=2.0).contains(&m.abs())));
        let small = a.iter().filter(|m| m.abs() < 1.0).count();
        assert!((8..=40).contains(&small), "{small} of 64 below one rounding");
    }
}
