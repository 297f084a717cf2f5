//! Differential checks: a case run again in a changed form (a *variant*) and compared with the
//! original inside the worker. Only verdicts cross the process boundary (agreement, the first
//! mismatching element, the variant's error), never tensors.
//!
//! The parent derives the checks of an API from its `oracles` clause once (`oracle::differential`)
//! and hands them to each worker with `Request::Checks`; after that every case of the API comes
//! back as `Execution::Checked` with one `CheckReport` per check, in order.
use serde::{Deserialize, Serialize};

use crate::case::{Arg, Case, DType, Layout, TensorRecipe};
use crate::oracle::Oracle;
use crate::outcome::ErrorClass;

pub mod relation;

pub use relation::Relation;

/// How a variant changes the call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Variant {
    /// Every float16, bfloat16 and float32 input (and `dtype` argument) promoted to float64,
    /// complex64 to complex128: the same values, computed in double precision. The original's
    /// outputs are compared with the reference's rounded to the original's dtype.
    Promote,
    /// Every input tensor with the other memory layout: contiguous ones made non-contiguous
    /// (transposed, or every other element of a wider buffer), non-contiguous ones contiguous.
    Layout,
    /// The operator's `out=` overload, loaded at index `op`, writing into tensors the worker
    /// allocates empty with the dtypes of the original's outputs.
    Out { op: u32 },
    /// The operator's in-place twin, loaded at index `op`, applied to a copy of case argument
    /// `arg`; the copy afterwards is compared with the original's first output.
    InPlace { op: u32, arg: usize },
    /// Reverse-mode gradients of `sum(w * outputs)` with respect to the real floating inputs
    /// (promoted to float64), compared at up to `samples` input elements with central finite
    /// differences of step `eps`. Elements where the one-sided slopes disagree are not smooth
    /// there and are skipped.
    Gradient { eps: f64, samples: u32 },
    /// The same call with every input on the first CUDA device.
    Cuda,
    /// A metamorphic relation between calls (`f(s * x) == f(x)`), evaluated on the case.
    Relation(Box<Relation>),
    /// The float64 reference (`Promote`, integer and boolean inputs promoted too), asked where the
    /// call returned NaN or inf (skipped at once elsewhere): it agrees
    /// when the reference is not finite at any element where the call is not, that is, when the
    /// function itself is undefined or infinite there (`cholesky_inverse` of a singular matrix,
    /// 0 / 0), or when the call computes on a value its dtype cannot hold (an `eps` of 1e-308 is
    /// 0 in bfloat16). Never a finding itself; its agreement silences `nan_inf` on the case, and
    /// a case the check share left unchecked is not judged by `nan_inf` at all.
    Defined,
}

impl Variant {
    /// How reports and reproducers name it.
    pub fn describe(&self) -> &'static str {
        match self {
            Variant::Promote => "float64 reference",
            Variant::Layout => "other memory layout",
            Variant::Out { .. } => "out= variant",
            Variant::InPlace { .. } => "in-place variant",
            Variant::Gradient { .. } => "gradient check",
            Variant::Cuda => "CUDA",
            Variant::Relation(_) => "relation",
            Variant::Defined => "float64 reference of a non-finite result",
        }
    }
}

/// `|actual - expected| <= atol + rtol * |expected|`, elementwise, as `torch.isclose`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tolerance {
    pub rtol: f64,
    pub atol: f64,
}

impl Tolerance {
    pub const EXACT: Tolerance = Tolerance { rtol: 0.0, atol: 0.0 };

    pub fn close(self, actual: f64, expected: f64) -> bool {
        if actual == expected || (actual.is_nan() && expected.is_nan()) {
            return true;
        }
        if !actual.is_finite() || !expected.is_finite() {
            return false;
        }
        (actual - expected).abs() <= self.atol + self.rtol * expected.abs()
    }
}

/// Tolerances per floating dtype (complex dtypes use their component's); integers and bools
/// compare exactly.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tolerances {
    pub float16: Tolerance,
    pub bfloat16: Tolerance,
    pub float32: Tolerance,
    pub float64: Tolerance,
}

impl Tolerances {
    /// One tolerance for every floating dtype.
    pub fn uniform(t: Tolerance) -> Tolerances {
        Tolerances { float16: t, bfloat16: t, float32: t, float64: t }
    }

    pub fn for_dtype(&self, dtype: Option<DType>) -> Tolerance {
        match dtype {
            Some(DType::Float16) => self.float16,
            Some(DType::BFloat16) => self.bfloat16,
            Some(DType::Float32 | DType::Complex64) => self.float32,
            Some(DType::Float64 | DType::Complex128) => self.float64,
            _ => Tolerance::EXACT,
        }
    }
}

/// One differential check of an API: a variant and how closely it must agree.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// The oracle that asked for it (`precision` or `overflow`, `layout`, `out`, `inplace`,
    /// `gradient`, `cuda`, `nan_inf`, `relation`).
    pub oracle: Oracle,
    pub variant: Variant,
    pub tolerances: Tolerances,
    /// What the float64 reference holds a result to (only `Variant::Promote` reads it).
    #[serde(default)]
    pub accuracy: Accuracy,
}

/// What accuracy an operator promises, which decides whether the conditioning of the input
/// excuses a difference from the float64 reference.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Accuracy {
    /// Close to the exact result of the exact input: what pointwise math (`sin`, `lgamma`)
    /// promises. A large error at a pole is a finding; an error within a few times what
    /// moving the input by its rounding explains is the kernel's own float32 arithmetic.
    #[default]
    Forward,
    /// The exact result of an input within a few roundings of the given one (backward
    /// stability): reductions, normalizations, scans. A difference that moving the input by its
    /// dtype's rounding explains is agreement (`sfz-worker/src/runtime/conditioning.rs`).
    Backward,
    /// Backward stability while the products of input elements are representable: BLAS and
    /// LAPACK do not scale their intermediates, so an input with a magnitude beyond the square
    /// root of its dtype's range (largest or smallest normal) is not judged.
    BackwardInSafeRange,
}

/// What one check found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum CheckOutcome {
    /// Both sides returned and agree; the largest absolute and relative differences seen (for
    /// tuning tolerances).
    Agree { max_abs: f64, max_rel: f64 },
    /// Both sides raised (the variant's error is in `Raised` when it matters, see below).
    BothRaised,
    /// The check does not apply to this case, or cannot run here; why.
    Skipped(String),
    /// The variant raised. The original's outcome says whether it returned (an inconsistency)
    /// or raised as well (then only an internal error of the variant is a finding).
    Raised { class: ErrorClass, message: String },
    /// The original raised but the variant returned.
    Returned,
    /// The outputs differ in number, kind, dtype or shape.
    Structure { output: usize, what: String },
    /// Output values differ beyond the tolerance.
    Values(ValueMismatch),
    /// An analytic gradient differs from its finite-difference estimate.
    Gradient(GradientMismatch),
}

/// The first element (in logical order) of an output where the two sides disagree.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ValueMismatch {
    pub output: usize,
    pub dtype: Option<DType>,
    /// Flat index of the first mismatching element, and its two values (the real parts for complex).
    pub index: u64,
    pub actual: f64,
    pub expected: f64,
    /// Elements that differ, of `total`.
    pub mismatched: u64,
    pub total: u64,
    /// Largest differences over the finite pairs.
    pub max_abs: f64,
    pub max_rel: f64,
    /// The tolerance applied.
    pub tolerance: Tolerance,
    /// Elements the original computed as inf, NaN or 0 where the float64 reference is finite
    /// and representable in the original's dtype (the `precision` check only).
    #[serde(default)]
    pub premature: Option<Premature>,
    /// A relation's check only: the dtype (float32 or float64) whose range the sums of squares
    /// of the inputs, scaled up by the relation's `s`, leave. The operator does not rescale
    /// them, so what broke the relation is that overflow (`layer_norm` divides by an infinite
    /// variance, `linalg.norm` returns inf), a cause many operators share.
    #[serde(default)]
    pub squares_overflow: Option<DType>,
    /// As `squares_overflow`, for a p-norm of p above 2 (`vector_norm(ord=3)`, `renorm(p=3)`):
    /// the dtype the inputs' sum of |x|^p leaves (above its largest value, or below its smallest
    /// where every term underflows) while their plain sums stay in it.
    #[serde(default)]
    pub powers_overflow: Option<DType>,
    /// The float64 reference's check only: the call agrees with the reference on contiguous
    /// copies of its strided inputs, so the strides, not the arithmetic, went wrong (a kernel
    /// that reads a strided bias as contiguous): a `layout` finding, whatever check saw it.
    #[serde(default)]
    pub strided: bool,
    /// The original call gives this output other values when called again on the same inputs:
    /// it holds memory the kernel never wrote (`multi_margin_loss` summing an empty batch), and
    /// what the check compared it with says nothing.
    #[serde(default)]
    pub undetermined: bool,
}

/// A result that overflowed (or underflowed) before its true value did: the original's
/// element is inf, NaN or 0 where the float64 reference, rounded to the original's dtype, is
/// finite, more than 0.1% below its largest value, and (for 0) beyond what rounding of its terms explains.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Premature {
    pub what: PrematureKind,
    /// The first such element (flat, logical order) and its two values.
    pub index: u64,
    pub actual: f64,
    pub expected: f64,
    /// How many elements are such.
    pub count: u64,
    /// `expected` is not a wider reference but the value extrapolated along the ray `t · x`
    /// just below the input (a float64 result, which has no wider dtype).
    #[serde(default)]
    pub extrapolated: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PrematureKind {
    Inf,
    Nan,
    Zero,
}

impl PrematureKind {
    pub fn describe(self) -> &'static str {
        match self {
            PrematureKind::Inf => "inf",
            PrematureKind::Nan => "NaN",
            PrematureKind::Zero => "0",
        }
    }
}

/// A gradient that disagrees with another way of computing it, or is not finite where it
/// should be.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GradientMismatch {
    #[serde(default)]
    pub kind: GradientKind,
    /// The case argument (and tensor within a list) differentiated.
    pub arg: usize,
    pub tensor: usize,
    /// Flat index of the element (`Forward`: 0, the whole input is the direction).
    pub index: u64,
    /// Reverse mode's value: the element of the gradient of `sum(w * outputs)`, or (`Forward`)
    /// its projection on the tangent.
    pub analytic: f64,
    /// The other side: finite differences, or forward mode's `sum(w * tangent outputs)`.
    pub numeric: f64,
    /// `Forward` only: finite differences along the tangent, which side with one mode.
    #[serde(default)]
    pub differences: Option<f64>,
    /// Elements compared, and those skipped as not smooth.
    pub checked: u32,
    pub nonsmooth: u32,
}

/// Which two gradients disagree.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GradientKind {
    /// Reverse mode against central finite differences, at an element where differences with
    /// two step sizes and from both sides agree.
    #[default]
    Numeric,
    /// Reverse mode against forward mode (both analytic) along a fixed tangent.
    Forward,
    /// Reverse mode gives NaN or inf where the outputs and finite differences are finite.
    NonFinite,
    /// Double backward (`t · H u`, the derivative of the projected gradient along a tangent)
    /// against central differences of the gradient: `analytic` and `numeric` are those two.
    Second,
    /// Reverse mode through the case's non-contiguous inputs (transposed, strided, offset)
    /// against reverse mode through contiguous copies: `analytic` and `numeric` are those two.
    Layout,
    /// Reverse mode through the operator's in-place twin (on a copy of its input) against
    /// reverse mode through the out-of-place operator: `analytic` and `numeric` are those two.
    InPlace,
}

impl GradientKind {
    /// What the other side is, in a sentence.
    pub fn describe(self) -> &'static str {
        match self {
            GradientKind::Numeric => "differs from finite differences",
            GradientKind::Forward => "differs between reverse and forward mode",
            GradientKind::NonFinite => "is not finite where finite differences are",
            GradientKind::Second => "has a derivative (double backward) that differs from finite differences",
            GradientKind::Layout => "differs between a non-contiguous input and its contiguous copy",
            GradientKind::InPlace => "differs between the in-place form and the out-of-place one",
        }
    }

    pub const ALL: [GradientKind; 6] = [GradientKind::Numeric, GradientKind::Forward, GradientKind::NonFinite, GradientKind::Second, GradientKind::Layout, GradientKind::InPlace];
}

/// The report of one check, in the order of the request's checks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckReport {
    pub outcome: CheckOutcome,
    /// Time the check took in the worker.
    pub micros: u32,
}

/// The case with its `dtype` arguments promoted as inputs are.
pub fn promote_dtype_args(case: &Case) -> Case {
    let mut c = case.clone();
    for arg in &mut c.args {
        if let Arg::Dtype(d) = arg {
            *d = promote_dtype(*d);
        }
    }
    c
}

/// float16, bfloat16, float32 → float64; complex64 → complex128; others unchanged.
pub fn promote_dtype(d: DType) -> DType {
    match d {
        DType::Float16 | DType::BFloat16 | DType::Float32 => DType::Float64,
        DType::Complex64 => DType::Complex128,
        other => other,
    }
}

/// The other layout for a recipe: a contiguous tensor becomes transposed (when its last two
/// dimensions have more than one element each) or strided (when its last one does); a
/// non-contiguous one becomes contiguous. False when nothing would change.
pub fn flip_layout(r: &mut TensorRecipe) -> bool {
    let dims = r.shape.len();
    let last = |k: usize| if dims >= k { r.shape[dims - k] } else { 0 };
    let to = match r.layout {
        Layout::Transposed | Layout::Strided | Layout::Expanded | Layout::Sliced => Layout::Contiguous,
        Layout::Contiguous if last(1) > 1 && last(2) > 1 => Layout::Transposed,
        Layout::Contiguous if last(1) > 1 => Layout::Strided,
        Layout::Contiguous => return false,
    };
    r.layout = to;
    true
}
