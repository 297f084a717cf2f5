//! The plausibility standard for numerical verdicts (docs/ORACLES.md, "Plausible inputs"): a
//! wrong, premature or non-finite value is a finding only where a careful implementation in that
//! dtype would have done better. Inputs at the extremes are still generated (they find crashes),
//! but a numerical disagreement there is counted, not reported: no maintainer fixes an overflow
//! of a weight of 1.1e36 in float32, a NaN of a normalization whose variance is no float, or a
//! guard the caller switched off (`eps=-0.0`).
use std::fmt;

use crate::spec::ApiSpec;
use crate::wire::case::{Arg, Case, DType, Fill, TensorRecipe};
use crate::wire::oracle::Oracle;
use crate::wire::variant::{Check, CheckOutcome, CheckReport, Variant};

/// Why a numerical verdict's input is not one a maintainer acts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Implausible {
    /// A floating input (scaled by a relation's factor, for a relation) is larger in magnitude
    /// than `input_limit` of its dtype.
    InputNearLimit,
    /// A floating input's mean square is above its dtype's largest value, or nonzero below its
    /// smallest normal one: the variance a normalization needs, the second moment of the data,
    /// is not representable (values of 1e25 in float32; 1e-26 in complex64). Not asked of a cause that names an overflowing sum of squares, the
    /// premature overflow a rescaling norm avoids.
    SpreadNearLimit,
    /// A floating input holds values at the dtype's smallest: every value of its fill (or a
    /// float argument) below `small_limit` but not 0, or a subnormal special value. Their
    /// squares and products underflow, and libm, LAPACK and vectorized kernels may flush them.
    InputNearSmallest,
    /// A floating input holds NaN or an infinity, and two paths of one operator disagree on
    /// it: garbage in, two garbages out (a polynomial of NaN is 3.6e8 in one layout and -0.5 in
    /// the other). Whether a NaN propagates is the float64 reference's question.
    NonFiniteInput,
    /// A normalization layer's input is one value throughout: its variance is 0, the centred
    /// values are the rounding of the mean, and 1/sqrt(eps) (316 at 1e-5) amplifies them
    /// (`group_norm` of ones gives its bias plus 1.2e-5; `layer_norm` of a constant 6.4e18 in
    /// bfloat16 gives 9.9e12).
    ZeroVariance,
    /// A float parameter named `eps` (or `epsilon`) is 0 or negative: the documented guard
    /// against division by zero is switched off.
    GuardOff,
    /// A BLAS or LAPACK operator's matrix may be exactly singular (drawn from integers or a
    /// constant, or holding placed values), and two paths or two precisions disagree on it: at a
    /// singular matrix a determinant's logarithm, an inverse or a solve is the rounding of an LU
    /// pivot that is 0 in exact arithmetic (`logdet` of an integer 3x3 is -inf in one layout and
    /// -31.7 in the other). A gradient there is still judged: a determinant is a polynomial.
    SingularMatrix,
    /// The true result (the float64 reference, the relation's other side, the value a premature
    /// inf should have been) is not finite, within a factor `RESULT_HEADROOM` of the largest
    /// value of the output's dtype, or subnormal in it.
    ResultNearLimit,
}

impl Implausible {
    pub fn describe(self) -> &'static str {
        match self {
            Implausible::InputNearLimit => "inputs near the dtype's largest value",
            Implausible::SpreadNearLimit => "inputs whose mean square leaves the dtype",
            Implausible::InputNearSmallest => "inputs near the dtype's smallest value",
            Implausible::NonFiniteInput => "values disagreeing on NaN or inf inputs",
            Implausible::ZeroVariance => "a normalization of one value throughout (zero variance)",
            Implausible::GuardOff => "eps switched off (<= 0)",
            Implausible::ResultNearLimit => "a true result near the dtype's limits",
            Implausible::SingularMatrix => "a matrix that may be exactly singular (integer, constant or placed values)",
        }
    }
}

impl fmt::Display for Implausible {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

/// The true result must stay this factor below the dtype's largest value: cosh(89) = 2.2e38 in
/// float32 (1.5x below the top) and a polynomial's 2.9e307 in float64 (6x) are no findings;
/// i0(88.8) = 1.5e37 (22x) is.
pub const RESULT_HEADROOM: f64 = 16.0;

/// The largest plausible input magnitude of a floating dtype: its largest value to the power
/// 3/4 (float32 and bfloat16: 1.2e29; float16: 4,100; float64: 1e231). It keeps the values whose
/// squares overflow while their norm does not (1e19 in float32, 256 in float16: the premature
/// overflow a rescaling implementation avoids) and drops those within a few orders of magnitude
/// of the top, where any product overflows.
pub fn input_limit(dtype: DType) -> Option<f64> {
    dtype.limits().map(|(max, _, _)| max.powf(0.75))
}

/// The smallest plausible input magnitude of a floating dtype: its smallest normal value to the
/// power 3/4 (float32 and bfloat16: 1.4e-29; float16: 6.9e-4; float64: 1e-231), the mirror of
/// `input_limit`.
pub fn small_limit(dtype: DType) -> Option<f64> {
    dtype.limits().map(|(_, tiny, _)| tiny.powf(0.75))
}

/// Whether an oracle holds values to a true result or to finiteness: its verdicts follow this
/// standard. Crashes, hangs, internal errors and the consistency of two paths of one operator do
/// not.
pub fn judges_numbers(oracle: Oracle) -> bool {
    matches!(oracle, Oracle::Overflow | Oracle::NanInf | Oracle::Precision | Oracle::Relation | Oracle::Gradient)
}

/// Whether a verdict compares two paths of one operator on their values (layout, out=,
/// in-place): its inputs are held to the same limits as a numerical verdict's, and it says
/// nothing on NaN or inf inputs. Crashes, raises and structure are judged anywhere.
pub fn compares_paths(oracle: Oracle, cause: &super::Cause) -> bool {
    matches!(oracle, Oracle::Layout | Oracle::Out | Oracle::Inplace) && matches!(cause, super::Cause::Values { .. })
}

/// Why a disagreement of two paths (`compares_paths`) on the case's inputs is implausible: a
/// NaN or inf input, or the input limits of `inputs_named` with the result's headroom (a
/// variance near the top is inf on one path and 1.9e38 on the other).
pub fn paths_inputs_named(names: &[&str], case: &Case) -> Option<Implausible> {
    if holds(case, |x| !x.is_finite()) {
        return Some(Implausible::NonFiniteInput);
    }
    inputs_named(names, case, RESULT_HEADROOM.sqrt(), true)
}

/// Why the inputs of a verdict by `oracle` with `cause` on `api` (parameters `names`, inputs
/// scaled by `scale`) are implausible, or None: for two paths, `paths_inputs_named`; for a
/// numerical verdict, the input limits, a NaN input, a normalization of one constant. What the
/// campaign (`detection`) and `sfz report` (on older folders) both ask.
pub fn verdict_inputs(oracle: Oracle, cause: &super::Cause, api: &str, names: &[&str], case: &Case, scale: f64) -> Option<Implausible> {
    if (compares_paths(oracle, cause) || matches!(oracle, Oracle::Precision | Oracle::Relation)) && maybe_singular(api, case) {
        return Some(Implausible::SingularMatrix);
    }
    if compares_paths(oracle, cause) {
        return paths_inputs_named(names, case);
    }
    if !judges_numbers(oracle) {
        return None;
    }
    inputs_named(names, case, scale, spread_asked(api, cause))
        .or_else(|| nan_input(cause, case))
        .or_else(|| zero_variance(api, names, case))
        .or_else(|| second_moment_underflows(api, case))
}

/// Whether a BLAS or LAPACK operator's matrices may be exactly singular: a matrix input drawn
/// from integers or a constant, or holding placed special values (a 0 on a triangle's
/// diagonal). From a continuous distribution, singularity has probability 0.
pub fn maybe_singular(api: &str, case: &Case) -> bool {
    let lapack = crate::ops::registry::implied_op(api).is_some_and(|op| crate::wire::tags::class(&op) == crate::wire::tags::OpClass::BlasLapack);
    lapack
        && case
            .args
            .iter()
            .flat_map(Arg::tensors)
            .any(|t| t.shape.len() >= 2 && (t.dtype.is_floating() || t.dtype.is_complex()) && (!matches!(t.fill, Fill::Uniform { .. }) || !t.specials.is_empty()))
}

/// Why a numerical verdict on a normalization layer's case is degenerate: its first floating
/// input (the data it normalizes) is one constant, or each group it normalizes holds one
/// element (`Implausible::ZeroVariance`). Either way the variance is 0 and the output is the
/// bias, reached through `(x - mean) / sqrt(eps)`, whose rounding `eps` amplifies.
pub fn zero_variance(api: &str, names: &[&str], case: &Case) -> Option<Implausible> {
    // A backward's sums over its gradient (`native_group_norm_backward`'s bias gradient) do
    // not divide by the deviation: they are judged on constant inputs too.
    if !normalizes(api) || api.contains("backward") {
        return None;
    }
    let data = case.args.iter().flat_map(Arg::tensors).find(|t| t.dtype.is_floating() || t.dtype.is_complex())?;
    let constant = matches!(data.fill, Fill::Constant(_)) && data.specials.is_empty();
    (data.numel() > 0 && (constant || group_size(api, names, case, &data.shape) == Some(1))).then_some(Implausible::ZeroVariance)
}

/// How many elements each group a normalization layer normalizes holds, where the API says:
/// `group_norm` (channels per group times the spatial size), `layer_norm` (the normalized
/// shape), `instance_norm` (the spatial size). `rms_norm` divides by no deviation, and
/// `batch_norm` raises for one value per channel in training.
fn group_size(api: &str, names: &[&str], case: &Case, shape: &[i64]) -> Option<i64> {
    let arg = |name: &str| names.iter().position(|n| *n == name).and_then(|k| case.args.get(k));
    let int = |name: &str| match arg(name) {
        Some(Arg::Int(v)) => Some(*v),
        _ => None,
    };
    let spatial: i64 = shape.iter().skip(2).product();
    if api.contains("group_norm") {
        // `native_group_norm(input, weight, bias, N, C, HxW, group, eps)` names its sizes.
        if let (Some(c), Some(hxw), Some(g)) = (int("C"), int("HxW"), int("group")) {
            return (g > 0).then(|| c / g * hxw);
        }
        let g = int("num_groups")?;
        return (g > 0).then(|| shape.get(1).copied().unwrap_or(0) / g * spatial);
    }
    if api.contains("layer_norm") && !api.contains("rms") {
        return match arg("normalized_shape") {
            Some(Arg::IntList(dims)) => Some(dims.iter().product()),
            _ => None,
        };
    }
    (api.contains("instance_norm") && shape.len() > 2).then_some(spatial)
}

/// Whether `api` is a normalization layer (it divides by a standard deviation it computes).
fn normalizes(api: &str) -> bool {
    const NORMALIZATIONS: &[&str] = &["batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm", "local_response_norm"];
    NORMALIZATIONS.iter().any(|n| api.contains(n))
}

/// Whether the inputs' mean square is asked of a numerical verdict on operator `api`: always,
/// but for a cause naming an overflowing sum of squares of a norm (`vector_norm` at 2e20: the
/// norm is representable, only its unscaled squares are not). A normalization layer needs the
/// variance itself, and a variance beyond the dtype is no premature overflow.
pub fn spread_asked(api: &str, cause: &super::Cause) -> bool {
    cause.squares().is_none() || normalizes(api)
}

/// Whether a float argument or a floating tensor's special value or constant fill of the case
/// is such a value.
fn holds(case: &Case, is: impl Fn(f64) -> bool) -> bool {
    case.args.iter().any(|a| match a {
        Arg::Float(x) => is(*x),
        _ => a
            .tensors()
            .filter(|t| t.dtype.is_floating() || t.dtype.is_complex())
            .any(|t| t.specials.iter().any(|(_, s)| is(s.value())) || matches!(t.fill, Fill::Constant(x) if is(x))),
    })
}

/// Why a numerical verdict on values (`Cause::Values`: the float64 reference or a relation's
/// other side disagrees) is implausible for a NaN input: the reference is given the same NaN,
/// and where two computations of a NaN differ (`softshrink_backward` of NaN is 2 in float32
/// and 0 in float64), neither is a number to hold the other to. A NaN from finite inputs is
/// `nan_inf`'s, and a wrong value beside a NaN is found without it.
pub fn nan_input(cause: &super::Cause, case: &Case) -> Option<Implausible> {
    (matches!(cause, super::Cause::Values { .. }) && holds(case, f64::is_nan)).then_some(Implausible::NonFiniteInput)
}

/// `inputs`, with the parameters' names (in the case's order) in place of the API; `spread`:
/// whether the inputs' mean square is asked too.
pub fn inputs_named(names: &[&str], case: &Case, scale: f64, spread: bool) -> Option<Implausible> {
    let scale = if scale.is_finite() && scale != 0.0 { scale.abs().max(1.0) } else { 1.0 };
    let tensors: Vec<&TensorRecipe> = case.args.iter().flat_map(Arg::tensors).filter(|t| t.dtype.is_floating() || t.dtype.is_complex()).collect();
    for t in &tensors {
        if let Some(why) = tensor(t, scale, spread) {
            return Some(why);
        }
    }
    if case.args.iter().flat_map(Arg::tensors).any(integer_near_limit) {
        return Some(Implausible::InputNearLimit);
    }
    // A float argument computes in the case's widest floating dtype (float32 without one).
    let dtype = tensors.iter().map(|t| t.dtype).max_by(|a, b| limit_of(*a).total_cmp(&limit_of(*b))).unwrap_or(DType::Float32);
    let limit = input_limit(dtype).unwrap_or(f64::MAX);
    for (k, arg) in case.args.iter().enumerate() {
        let Arg::Float(x) = arg else { continue };
        if matches!(names.get(k).copied(), Some("eps" | "epsilon")) && *x <= 0.0 {
            return Some(Implausible::GuardOff);
        }
        if x.is_finite() && x.abs() * scale > limit {
            return Some(Implausible::InputNearLimit);
        }
        if *x != 0.0 && x.abs() < small_limit(dtype).unwrap_or(0.0) {
            return Some(Implausible::InputNearSmallest);
        }
    }
    None
}

/// Whether an integer tensor of 16 bits or more holds a value beyond half its dtype's range
/// (int64's 9.2e18, int16's -32768): arithmetic on it wraps, and its quotients leave what any
/// floating dtype resolves (floor(9.2e18 / 3) in float64 is itself). An 8-bit type's whole
/// range is ordinary data (a pixel of 255).
fn integer_near_limit(t: &TensorRecipe) -> bool {
    let Some((lo, hi)) = t.dtype.int_bounds().filter(|_| t.dtype.size() >= 2) else { return false };
    let v = crate::eval::TensorVal::of_recipe(t);
    t.numel() > 0 && (v.min <= lo as f64 / 2.0 || v.max >= hi as f64 / 2.0)
}

fn limit_of(dtype: DType) -> f64 {
    dtype.limits().map_or(0.0, |l| l.0)
}

/// One floating tensor's values against its dtype's limits.
fn tensor(t: &TensorRecipe, scale: f64, spread: bool) -> Option<Implausible> {
    let (max, _, _) = t.dtype.limits()?;
    let limit = input_limit(t.dtype)?;
    let v = crate::eval::TensorVal::of_recipe(t);
    if v.min.abs().max(v.max.abs()) * scale > limit {
        return Some(Implausible::InputNearLimit);
    }
    if near_smallest(t) {
        return Some(Implausible::InputNearSmallest);
    }
    // A complex element's squared modulus sums its two parts' squares.
    let parts = if t.dtype.is_complex() { 2.0 } else { 1.0 };
    (spread && parts * mean_square(t) * scale * scale > max).then_some(Implausible::SpreadNearLimit)
}

/// The operators whose definition divides by a second moment of the data (a variance, a
/// covariance), besides the normalization layers.
const SECOND_MOMENT: &[&str] = &["corrcoef", "cov", "var", "std", "var_mean", "std_mean"];

/// Why a verdict on an operator that divides by a second moment is implausible: a floating
/// input's mean square is nonzero below its dtype's smallest normal value, so the variance
/// underflows and 0/0 is NaN (`corrcoef` of complex64 values of 1e-26). Elsewhere values of
/// 1e-20 are ordinary.
fn second_moment_underflows(api: &str, case: &Case) -> Option<Implausible> {
    let base = api.rsplit('.').next().unwrap_or(api);
    if !normalizes(api) && !SECOND_MOMENT.contains(&base) {
        return None;
    }
    case.args.iter().flat_map(Arg::tensors).filter(|t| t.dtype.is_floating() || t.dtype.is_complex()).find_map(|t| {
        let (_, tiny, _) = t.dtype.limits()?;
        let parts = if t.dtype.is_complex() { 2.0 } else { 1.0 };
        let ms = parts * mean_square(t);
        (ms > 0.0 && ms < tiny).then_some(Implausible::SpreadNearLimit)
    })
}

/// Whether a recipe fills values at its dtype's smallest: a fill whose every value is below
/// `small_limit` but not 0 (a range, a constant), or a subnormal special value.
fn near_smallest(t: &TensorRecipe) -> bool {
    let (Some((_, tiny, _)), Some(small)) = (t.dtype.limits(), small_limit(t.dtype)) else { return false };
    let fill = match t.fill {
        Fill::Uniform { lo, hi } => lo.abs().max(hi.abs()) < small && (lo != 0.0 || hi != 0.0),
        Fill::Constant(x) => x != 0.0 && x.abs() < small,
        Fill::Int { .. } => false,
    };
    fill || t.specials.iter().any(|(_, s)| s.value() != 0.0 && s.value().abs() < tiny)
}

/// The mean of a tensor's squared elements as its recipe fills them: the fill's second moment
/// over the elements it fills, the finite special values over theirs.
fn mean_square(t: &TensorRecipe) -> f64 {
    let n = t.numel().max(1) as f64;
    let fill = match t.fill {
        // Scaled: the squares of 1e222 leave float64 itself (inf - inf would read as NaN).
        Fill::Uniform { lo, hi } => {
            let s = lo.abs().max(hi.abs()).max(f64::MIN_POSITIVE);
            let (a, b) = (lo / s, hi / s);
            (a * a + a * b + b * b) / 3.0 * s * s
        }
        Fill::Int { lo, hi } => {
            let (a, b) = (lo as f64, (hi - 1).max(lo) as f64);
            (a * a + a * b + b * b) / 3.0
        }
        Fill::Constant(x) => x * x,
    };
    let specials: Vec<f64> = t.specials.iter().map(|(_, s)| s.value()).filter(|v| v.is_finite()).collect();
    let k = (specials.len() as f64).min(n);
    (fill * (n - k) + specials.iter().map(|v| v * v).sum::<f64>()) / n
}

/// Whether a true result `expected` of dtype `dtype` is comfortably representable.
pub fn result(expected: f64, dtype: Option<DType>) -> Option<Implausible> {
    result_through(expected, dtype, 1.0)
}

/// `result` for a computation whose honest intermediates are up to `factor` times its result.
fn result_through(expected: f64, dtype: Option<DType>, factor: f64) -> Option<Implausible> {
    let (max, tiny) = dtype.and_then(DType::limits).map_or((f64::MAX, 0.0), |l| (l.0, l.1));
    // At the bottom, the input's limit (`small_limit`, at least 16x the smallest normal): a
    // result that small comes through intermediates at one end of the range or the other
    // (complex64 silu at -88 is 1e-36, 100x above float32's smallest normal, where exp(88) is
    // half of float32's largest value), and no maintainer acts on its last digits.
    let bottom = dtype.and_then(small_limit).unwrap_or(0.0).max(tiny * RESULT_HEADROOM);
    let near_tiny = expected != 0.0 && expected.abs() < bottom;
    (!expected.is_finite() || expected.abs() * factor > max / RESULT_HEADROOM || near_tiny).then_some(Implausible::ResultNearLimit)
}

/// How many times its true result the intermediates of an honest computation may be: a
/// polynomial's three-term recurrence (`hermite_polynomial_h(x, n)`: `H_{k+1} = 2x H_k - 2k
/// H_{k-1}`) adds terms up to about `2n` times the value they cancel to; otherwise 1.
fn intermediates_factor(api: &str, names: &[&str], case: &Case) -> f64 {
    if !crate::wire::tags::degree_recurrence(api) {
        return 1.0;
    }
    let degree = largest_named(names, case, "n").unwrap_or(0.0);
    if degree.is_finite() {
        (2.0 * degree).max(1.0)
    } else {
        1.0
    }
}

/// The largest magnitude argument `name` of a case holds (an int, a float, a tensor's values);
/// None where the API has no such argument or it is of another kind.
fn largest_named(names: &[&str], case: &Case, name: &str) -> Option<f64> {
    let arg = names.iter().position(|n| *n == name).and_then(|k| case.args.get(k))?;
    Some(match arg {
        Arg::Int(v) => (*v as f64).abs(),
        Arg::Float(v) => v.abs(),
        Arg::Tensor(t) => {
            let v = crate::eval::TensorVal::of_recipe(t);
            v.min.abs().max(v.max.abs())
        }
        _ => return None,
    })
}

/// Whether a Hermite polynomial's recurrence may form terms beyond `dtype` at the case's inputs,
/// whatever its result: near a zero of `H_n` the value is far below the terms `2x H_k` and
/// `2k H_{k-1}` that cancel to it (float32 `H_38(-7.17)` is -9.2e34 through terms of 8e38). Its
/// terms are bounded by Cramér's envelope, `|H_k(x)| <= 1.086 sqrt(2^k k!) e^(x^2/2)` (and
/// `sqrt(k!) e^(x^2/4)` for `He_k`), times `2(|x| + n)`; past `dtype`'s largest value a
/// premature inf is the recurrence's own.
fn envelope_beyond(api: &str, names: &[&str], case: &Case, dtype: Option<DType>) -> Option<Implausible> {
    let physicists = match api.strip_prefix("torch.special.")? {
        "hermite_polynomial_h" => true,
        "hermite_polynomial_he" => false,
        _ => return None,
    };
    let (max, ..) = dtype?.limits()?;
    let (x, n) = (largest_named(names, case, "x")?, largest_named(names, case, "n")?.floor().min(1e4));
    if !x.is_finite() || !n.is_finite() {
        return None;
    }
    let ln_factorial: f64 = (2..=n as u64).map(|k| (k as f64).ln()).sum();
    let ln_envelope = 1.086f64.ln() + if physicists { 0.5 * (n * std::f64::consts::LN_2 + ln_factorial) + x * x / 2.0 } else { 0.5 * ln_factorial + x * x / 4.0 };
    let ln_terms = ln_envelope + (2.0 * (x + n)).max(1.0).ln();
    (ln_terms > (max / RESULT_HEADROOM).ln()).then_some(Implausible::ResultNearLimit)
}

/// Why detection `d` of a case is implausible, or None: its inputs (scaled by its relation's
/// factor), then the true result its check compared with. Only numerical oracles are judged.
pub fn detection(api: &ApiSpec, checks: &[Check], case: &Case, reports: &[CheckReport], d: &super::Detection) -> Option<Implausible> {
    let k = match d.evidence {
        super::Evidence::Differential { check, .. } => Some(check),
        _ => None,
    };
    let check = k.and_then(|k| checks.get(k));
    let scale = match check.map(|c| &c.variant) {
        Some(Variant::Relation(r)) => r.scalar_for(crate::wire::variant::relation::case_seed(case)).unwrap_or(1.0),
        _ => 1.0,
    };
    // Garbage is no number: the inputs' magnitudes do not excuse it.
    if matches!(d.cause, super::Cause::Uninitialised { .. }) {
        return None;
    }
    let names: Vec<&str> = api.params.iter().map(|p| p.name.as_str()).collect();
    if let Some(why) = verdict_inputs(d.oracle, &d.cause, &api.name, &names, case, scale) {
        return Some(why);
    }
    if !judges_numbers(d.oracle) {
        return None;
    }
    let factor = intermediates_factor(&api.name, &names, case);
    match k.and_then(|k| reports.get(k)).map(|r| &r.outcome) {
        Some(CheckOutcome::Values(m)) => match &m.premature {
            Some(p) => result_through(p.expected, m.dtype, factor).or_else(|| envelope_beyond(&api.name, &names, case, m.dtype)),
            // A gradient's reference is finite differences: its size says nothing of the result.
            None if matches!(check.map(|c| &c.variant), Some(Variant::Gradient { .. })) => None,
            None => result_through(m.expected, m.dtype, factor),
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::{inputs_named, paths_inputs_named, result, zero_variance, Implausible};
    use crate::wire::case::{Arg, Case, DType, Fill, Special, TensorRecipe};

    fn tensor(dtype: DType, fill: Fill, specials: Vec<(u64, Special)>) -> Arg {
        Arg::Tensor(TensorRecipe { dtype, shape: vec![4], fill, seed: 0, layout: Default::default(), specials })
    }

    fn judged(args: Vec<Arg>, scale: f64) -> Option<Implausible> {
        inputs_named(&["input", "normalized_shape", "eps"], &Case { op: 0, args, forward: None }, scale, true)
    }

    /// Both sides of the standard, on the examples docs/ORACLES.md gives.
    #[test]
    fn the_premature_overflow_class_is_kept_and_the_extremes_are_not() {
        let uniform = |lo, hi| Fill::Uniform { lo, hi };
        // Norms and normalization layers at 1e19 in float32, 256 in float16: kept (their mean
        // squares are representable; their sums of squares are not).
        assert_eq!(judged(vec![tensor(DType::Float32, uniform(-1e19, 1e19), vec![])], 1.0), None);
        assert_eq!(judged(vec![tensor(DType::Float32, Fill::Constant(1e19), vec![])], 1.0), None);
        assert_eq!(judged(vec![tensor(DType::Float16, uniform(-256.0, 256.0), vec![])], 1.0), None);
        // A norm at 2e20 whose cause names the overflowing squares is not asked its spread.
        let norm = Case { op: 0, args: vec![tensor(DType::Float32, uniform(1e20, 3e20), vec![])], forward: None };
        assert_eq!(inputs_named(&["input"], &norm, 1.0, false), None);
        assert_eq!(inputs_named(&["input"], &norm, 1.0, true), Some(Implausible::SpreadNearLimit));
        // Values of 1e25 in float32: the variance a normalization needs is 1e50.
        assert_eq!(judged(vec![tensor(DType::Float32, uniform(-1e25, 1e25), vec![])], 1.0), Some(Implausible::SpreadNearLimit));
        // One element of 1e21 among four: its square alone leaves float32.
        assert_eq!(judged(vec![tensor(DType::Float32, uniform(-1.0, 1.0), vec![(1, Special::Value(1e21))])], 1.0), Some(Implausible::SpreadNearLimit));
        // A weight of 1.1e36, float32's largest value, bfloat16's: not.
        assert_eq!(judged(vec![tensor(DType::Float32, Fill::Constant(1.1e36), vec![])], 1.0), Some(Implausible::InputNearLimit));
        assert_eq!(judged(vec![tensor(DType::BFloat16, uniform(-1.0, 1.0), vec![(2, Special::Value(3.0e38))])], 1.0), Some(Implausible::InputNearLimit));
        assert_eq!(judged(vec![tensor(DType::Float16, uniform(-6e4, 6e4), vec![])], 1.0), Some(Implausible::InputNearLimit));
        // A relation that scales inputs of 1e12 by 1e15 reaches 1e27: its mean square leaves.
        assert_eq!(judged(vec![tensor(DType::Float32, uniform(-1e12, 1e12), vec![])], 1e15), Some(Implausible::SpreadNearLimit));
        assert_eq!(judged(vec![tensor(DType::Float32, uniform(-1e19, 1e19), vec![])], 1e15), Some(Implausible::InputNearLimit));
        // Values at the dtype's smallest, subnormal ones, are as far from ordinary as its
        // largest (a complex log1p of -1e-42, an SVD of entries of 3e-43); eps switched off too.
        assert_eq!(judged(vec![tensor(DType::Float32, uniform(-1.0, 1.0), vec![(0, Special::Value(1e-40))])], 1.0), Some(Implausible::InputNearSmallest));
        assert_eq!(judged(vec![tensor(DType::Float32, uniform(-1.2e-42, -2.9e-43), vec![])], 1.0), Some(Implausible::InputNearSmallest));
        // Values of 1e-37 (a corrcoef whose variance underflows) too; 1e-20 is ordinary.
        assert_eq!(judged(vec![tensor(DType::Float32, uniform(4.5e-38, 1.8e-37), vec![])], 1.0), Some(Implausible::InputNearSmallest));
        assert_eq!(judged(vec![tensor(DType::Float32, uniform(-1e-20, 1e-20), vec![])], 1.0), None);
        // A float argument of 5e-324 (a p-norm's p) is at float64's smallest.
        let f64_tensor = tensor(DType::Float64, uniform(-10.0, 10.0), vec![]);
        assert_eq!(judged(vec![f64_tensor, Arg::IntList(vec![4]), Arg::Float(5e-324)], 1.0), Some(Implausible::InputNearSmallest));
        // A complex element's squared modulus holds both parts: 2.5e19 in complex64 leaves.
        assert_eq!(judged(vec![tensor(DType::Complex64, uniform(-2.5e19, -6.2e18), vec![])], 1.0), Some(Implausible::SpreadNearLimit));
        assert_eq!(judged(vec![tensor(DType::Float32, uniform(-2.5e19, -6.2e18), vec![])], 1.0), None);
        // Float64 values of 1e222: their mean square leaves float64 itself.
        assert_eq!(judged(vec![tensor(DType::Float64, uniform(-1e222, 1e222), vec![])], 1.0), Some(Implausible::SpreadNearLimit));
        // A second moment below the smallest normal value: `corrcoef` of complex64 values of
        // 1e-26; the same values elsewhere are ordinary.
        let tiny = Case { op: 0, args: vec![tensor(DType::Complex64, uniform(-1e-26, 1e-26), vec![])], forward: None };
        assert_eq!(super::second_moment_underflows("torch.corrcoef", &tiny), Some(Implausible::SpreadNearLimit));
        assert_eq!(super::second_moment_underflows("torch.exp", &tiny), None);
        let normal = Case { op: 0, args: vec![tensor(DType::Float32, uniform(-1e-15, 1e-15), vec![])], forward: None };
        assert_eq!(super::second_moment_underflows("torch.var", &normal), None, "squares of 1e-30 are normal");
        let ordinary = tensor(DType::Float32, uniform(-1.0, 1.0), vec![]);
        assert_eq!(judged(vec![ordinary.clone(), Arg::IntList(vec![4]), Arg::Float(-0.0)], 1.0), Some(Implausible::GuardOff));
        assert_eq!(judged(vec![ordinary, Arg::IntList(vec![4]), Arg::Float(1e-5)], 1.0), None);
        // Integers beyond half their range (int64's 9.2e18: remainder's gradient -floor(self /
        // other) is then self / other in float64); an 8-bit 255 is an ordinary pixel.
        let ints = |dtype, special: f64| tensor(dtype, Fill::Int { lo: -10, hi: 11 }, vec![(0, Special::Value(special))]);
        assert_eq!(judged(vec![ints(DType::Int64, 9.223372036854775e18)], 1.0), Some(Implausible::InputNearLimit));
        assert_eq!(judged(vec![ints(DType::Int16, -32768.0)], 1.0), Some(Implausible::InputNearLimit));
        assert_eq!(judged(vec![ints(DType::Int16, 1000.0)], 1.0), None);
        assert_eq!(judged(vec![tensor(DType::UInt8, Fill::Int { lo: 0, hi: 256 }, vec![])], 1.0), None);
    }

    #[test]
    fn a_true_result_needs_headroom_below_the_largest_value() {
        // i0(88.8) in float32 is 1.5e37; cosh(89) 2.2e38.
        assert_eq!(result(1.5e37, Some(DType::Float32)), None);
        assert_eq!(result(2.2e38, Some(DType::Float32)), Some(Implausible::ResultNearLimit));
        assert_eq!(result(f64::INFINITY, Some(DType::Float32)), Some(Implausible::ResultNearLimit));
        assert_eq!(result(f64::NAN, Some(DType::Float64)), Some(Implausible::ResultNearLimit));
        assert_eq!(result(1e300, Some(DType::Float64)), None);
        assert_eq!(result(2e4, Some(DType::Float16)), Some(Implausible::ResultNearLimit));
        // A polynomial's 2.9e307 in float64 is 6x below the top; a subnormal expit is no
        // ordinary value either.
        assert_eq!(result(2.9e307, Some(DType::Float64)), Some(Implausible::ResultNearLimit));
        // The same factor in every dtype: i0(711) in float64 (4.6e306, 40x) is a finding as
        // i0(88.8) is in float32.
        assert_eq!(result(4.6e306, Some(DType::Float64)), None);
        assert_eq!(result(-4.5e-40, Some(DType::Float32)), Some(Implausible::ResultNearLimit));
        assert_eq!(result(-1.05e-37, Some(DType::Float32)), Some(Implausible::ResultNearLimit));
        // At the bottom, the inputs' limit: complex64 silu_backward at -88 (1e-36); float16's
        // limit is 16x its smallest normal.
        assert_eq!(result(1e-36, Some(DType::Float32)), Some(Implausible::ResultNearLimit));
        assert_eq!(result(1e-29, Some(DType::Float32)), Some(Implausible::ResultNearLimit));
        assert_eq!(result(1e-25, Some(DType::Float32)), None);
        assert_eq!(result(5e-4, Some(DType::Float16)), Some(Implausible::ResultNearLimit));
        assert_eq!(result(2e-3, Some(DType::Float16)), None);
        assert_eq!(result(1e-200, Some(DType::Float64)), None);
        assert_eq!(result(0.0, Some(DType::Float32)), None);
    }

    /// A polynomial's recurrence forms terms up to 2n times its value: float32
    /// hermite_polynomial_h of degree 40 at -5.6e36 (60x below the top) is no comfortable
    /// result, while degree 2 at 100x below is, and other operators keep the plain headroom.
    #[test]
    fn a_recurrences_result_needs_headroom_for_its_terms() {
        use super::{intermediates_factor, result_through};
        let names = ["input", "n"];
        let with_degree = |n: Arg| Case { op: 0, args: vec![tensor(DType::Float32, Fill::Constant(3.0), vec![]), n], forward: None };
        let degrees = Arg::Tensor(TensorRecipe { dtype: DType::Int16, shape: vec![4], fill: Fill::Int { lo: 21, hi: 41 }, seed: 1, layout: Default::default(), specials: vec![] });
        let factor = intermediates_factor("torch.special.hermite_polynomial_h", &names, &with_degree(degrees));
        assert_eq!(factor, 80.0);
        assert_eq!(result_through(-5.6e36, Some(DType::Float32), factor), Some(Implausible::ResultNearLimit));
        // 100x below the top: too close for degree 40, enough for degree 2.
        assert_eq!(result_through(-3.4e36, Some(DType::Float32), factor), Some(Implausible::ResultNearLimit));
        assert_eq!(result_through(-3.4e36, Some(DType::Float32), intermediates_factor("torch.special.hermite_polynomial_h", &names, &with_degree(Arg::Int(2)))), None);
        assert_eq!(intermediates_factor("torch.special.i0", &["input"], &with_degree(Arg::Int(40))), 1.0);
    }

    /// Two layouts' (or float32's and float64's) determinant of an integer matrix that may be
    /// singular is the rounding of a zero pivot: not judged. On a continuous draw it is, and a
    /// gradient at a singular matrix is (a determinant is a polynomial); other operators too.
    #[test]
    fn a_lapack_disagreement_at_a_matrix_that_may_be_singular_is_implausible() {
        use super::verdict_inputs;
        use crate::oracle::Cause;
        use crate::wire::oracle::Oracle;
        use crate::wire::variant::GradientKind;
        let matrix = |fill: Fill, specials: Vec<(u64, Special)>| Case {
            op: 0,
            args: vec![Arg::Tensor(TensorRecipe { dtype: DType::Float64, shape: vec![3, 3], fill, seed: 1, layout: Default::default(), specials })],
            forward: None,
        };
        let values = Cause::Values { output: 0, squares: None, powers: None };
        let integers = matrix(Fill::Int { lo: -8, hi: 1 }, vec![]);
        assert_eq!(verdict_inputs(Oracle::Layout, &values, "torch.logdet", &["input"], &integers, 1.0), Some(Implausible::SingularMatrix));
        assert_eq!(verdict_inputs(Oracle::Precision, &values, "torch.linalg.inv", &["A"], &integers, 1.0), Some(Implausible::SingularMatrix));
        let placed = matrix(Fill::Uniform { lo: -10.0, hi: 10.0 }, vec![(0, Special::Value(0.0))]);
        assert_eq!(verdict_inputs(Oracle::Layout, &values, "torch.logdet", &["input"], &placed, 1.0), Some(Implausible::SingularMatrix));
        let drawn = matrix(Fill::Uniform { lo: -10.0, hi: 10.0 }, vec![]);
        assert_eq!(verdict_inputs(Oracle::Layout, &values, "torch.logdet", &["input"], &drawn, 1.0), None);
        let gradient = Cause::Gradient { param: "A".into(), against: GradientKind::Forward };
        assert_eq!(verdict_inputs(Oracle::Gradient, &gradient, "torch.linalg.det", &["A"], &integers, 1.0), None);
        assert_eq!(verdict_inputs(Oracle::Layout, &values, "torch.median", &["input"], &integers, 1.0), None, "not LAPACK");
    }

    /// Hermite's recurrence near a zero of `H_n`: float32 `H_38` with x up to 7.2 forms terms
    /// of 8e38 (c42f), which Cramér's envelope bounds; at x up to 2 and degree 10 its terms are
    /// small, and a float64 case has all the room it needs.
    #[test]
    fn hermites_terms_are_bounded_by_its_envelope_not_its_value() {
        use super::envelope_beyond;
        let names = ["x", "n"];
        let case = |x: f64, n: i64| Case { op: 0, args: vec![tensor(DType::Float32, Fill::Uniform { lo: -x, hi: x }, vec![]), Arg::Int(n)], forward: None };
        let h = "torch.special.hermite_polynomial_h";
        assert_eq!(envelope_beyond(h, &names, &case(7.2, 38), Some(DType::Float32)), Some(Implausible::ResultNearLimit));
        assert_eq!(envelope_beyond(h, &names, &case(2.0, 10), Some(DType::Float32)), None);
        assert_eq!(envelope_beyond(h, &names, &case(7.2, 38), Some(DType::Float64)), None);
        assert_eq!(envelope_beyond("torch.special.hermite_polynomial_he", &names, &case(2.0, 10), Some(DType::Float32)), None);
        assert_eq!(envelope_beyond("torch.special.laguerre_polynomial_l", &names, &case(7.2, 38), Some(DType::Float32)), None, "another envelope");
    }

    #[test]
    fn a_normalization_of_one_constant_is_degenerate_but_its_backward_sums_are_not() {
        let constant = Case {
            op: 0,
            args: vec![Arg::Tensor(TensorRecipe { dtype: DType::Float32, shape: vec![1, 2], fill: Fill::Constant(1.0), seed: 0, layout: Default::default(), specials: vec![] })],
            forward: None,
        };
        let names = ["input", "num_groups"];
        assert_eq!(zero_variance("torch.group_norm", &names, &constant), Some(Implausible::ZeroVariance));
        assert_eq!(zero_variance("torch.native_group_norm_backward", &names, &constant), None);
        assert_eq!(zero_variance("torch.exp", &names, &constant), None);
        let spread = Case {
            op: 0,
            args: vec![Arg::Tensor(TensorRecipe {
                dtype: DType::Float32,
                shape: vec![1, 2],
                fill: Fill::Uniform { lo: -1.0, hi: 1.0 },
                seed: 0,
                layout: Default::default(),
                specials: vec![],
            })],
            forward: None,
        };
        assert_eq!(zero_variance("torch.group_norm", &names, &spread), None);
        // Four groups of one channel and no spatial extent: one element each, whatever values.
        let data = |shape: Vec<i64>| {
            Arg::Tensor(TensorRecipe { dtype: DType::Float32, shape, fill: Fill::Uniform { lo: -10.0, hi: 10.0 }, seed: 0, layout: Default::default(), specials: vec![] })
        };
        let singles = Case { op: 0, args: vec![data(vec![3, 4, 1]), Arg::Int(4)], forward: None };
        assert_eq!(zero_variance("torch.group_norm", &names, &singles), Some(Implausible::ZeroVariance));
        let pairs = Case { op: 0, args: vec![data(vec![3, 4, 1]), Arg::Int(2)], forward: None };
        assert_eq!(zero_variance("torch.group_norm", &names, &pairs), None);
        let native = ["input", "weight", "bias", "N", "C", "HxW", "group", "eps"];
        let native_singles =
            Case { op: 0, args: vec![data(vec![3, 4, 1]), Arg::None, Arg::None, Arg::Int(3), Arg::Int(4), Arg::Int(1), Arg::Int(4), Arg::Float(1e-5)], forward: None };
        assert_eq!(zero_variance("torch.native_group_norm", &native, &native_singles), Some(Implausible::ZeroVariance));
        let layer = Case { op: 0, args: vec![data(vec![3, 4, 1]), Arg::IntList(vec![1])], forward: None };
        assert_eq!(zero_variance("torch.layer_norm", &["input", "normalized_shape"], &layer), Some(Implausible::ZeroVariance));
        assert_eq!(zero_variance("torch.instance_norm", &["input"], &Case { op: 0, args: vec![data(vec![2, 3, 1])], forward: None }), Some(Implausible::ZeroVariance));
        assert_eq!(zero_variance("torch.rms_norm", &["input", "normalized_shape"], &layer), None);
    }

    #[test]
    fn two_paths_are_not_held_to_agree_on_nan_or_at_the_limits() {
        let case = |specials, fill| Case {
            op: 0,
            args: vec![Arg::Tensor(TensorRecipe { dtype: DType::Float64, shape: vec![4], fill, seed: 0, layout: Default::default(), specials })],
            forward: None,
        };
        let ordinary = Fill::Uniform { lo: -10.0, hi: 10.0 };
        assert_eq!(paths_inputs_named(&["x"], &case(vec![], ordinary.clone())), None);
        assert_eq!(paths_inputs_named(&["x"], &case(vec![(1, Special::Nan)], ordinary.clone())), Some(Implausible::NonFiniteInput));
        assert_eq!(paths_inputs_named(&["x"], &case(vec![(3, Special::Value(f64::MAX))], ordinary)), Some(Implausible::InputNearLimit));
        // A mean square beyond the dtype: both paths compute garbage (a variance of 1e39).
        assert_eq!(paths_inputs_named(&["x"], &case(vec![], Fill::Uniform { lo: -1e200, hi: 1e200 })), Some(Implausible::SpreadNearLimit));
        assert_eq!(paths_inputs_named(&["x"], &case(vec![], Fill::Uniform { lo: -1e100, hi: 1e100 })), None);
    }
}
