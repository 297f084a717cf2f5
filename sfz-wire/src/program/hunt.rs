//! One hunt episode, as a worker runs it: a program, its starting inputs, a strategy and a
//! budget of program evaluations; back comes whether an intermediate turned non-finite from
//! finite inputs (the NaN/INF oracle), the inputs that did it and the path that led there.
use serde::{Deserialize, Serialize};

use super::ir::ProgramIr;
use super::soft::SoftModels;
use crate::case::{Arg, DType};

/// How the inputs move between evaluations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Strategy {
    /// Evaluate the starting inputs only.
    Once,
    /// Random mutation: resample or perturb within the inputs' bounds.
    Random,
    /// Autograd: step the inputs along the gradient of an objective on the intermediate a soft
    /// assertion (or, without models, a round robin over risky steps) points at.
    Gradient,
}

impl Strategy {
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Once => "once",
            Strategy::Random => "random",
            Strategy::Gradient => "gradient",
        }
    }
}

/// A hunt request.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct HuntRequest {
    pub program: ProgramIr,
    /// One argument per program parameter (tensors as recipes).
    pub inputs: Vec<Arg>,
    /// Per parameter: the value bounds a search keeps a tensor in (from its fill).
    pub bounds: Vec<Option<(f64, f64)>>,
    pub strategy: Strategy,
    /// Program evaluations (forward passes) the episode may spend.
    pub budget: u32,
    pub seed: u64,
    /// Soft-assertion models for the program's ops, if loaded.
    pub models: Option<SoftModels>,
    /// Return one training record per step and evaluation (for `sfz train`).
    pub collect: bool,
    /// Gradient search: pick each target at random instead of by the soft assertions or a
    /// round robin (the baseline the soft assertions are measured against).
    #[serde(default)]
    pub random_targets: bool,
    /// Whether the wider-float oracle runs (off for traced scripts unless asked: their float16
    /// and float32 rounding is usually by design, and their fixes address NaN/INF).
    pub wider: bool,
    /// Parameters held as the user's data (`sfz hunt --fix`): never moved by the search.
    #[serde(default)]
    pub fixed: Vec<u32>,
}

/// Statistics of one tensor, cheap to compute and enough for soft assertions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    pub numel: u64,
    /// Over the finite elements; 0 when none.
    pub min: f64,
    pub max: f64,
    pub abs_min: f64,
    pub abs_max: f64,
    pub nan: u64,
    pub inf: u64,
}

impl Stats {
    pub fn finite(&self) -> bool {
        self.nan == 0 && self.inf == 0
    }
}

/// What one step of one evaluation looked like.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepObs {
    pub dtype: Option<DType>,
    pub out: Stats,
}

/// A training record: an op's input statistics and what its output did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub op: super::ops::NumOp,
    pub features: Vec<f64>,
    /// The output holds NaN or INF although the inputs were finite.
    pub nonfinite: bool,
    /// The output is finite but differs from a float64 evaluation by more than the dtype's
    /// tolerance.
    pub imprecise: bool,
}

/// One tensor input as found: its values, exactly (as f64 widened from the dtype).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InputValues {
    pub dtype: DType,
    pub shape: Vec<i64>,
    pub values: Vec<f64>,
}

/// One point of the search path.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PathPoint {
    pub eval: u32,
    /// The step whose objective moved the inputs (gradient), or None (random).
    pub target: Option<u32>,
    pub objective: f64,
    /// The move: `start`, `resample`, `perturb`, `sign`, `polyak`, `extreme`.
    pub action: String,
}

/// The NaN/INF oracle fired.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Found {
    /// The first step whose output is non-finite while its inputs are finite.
    pub step: u32,
    /// The evaluation (1-based) that found it.
    pub eval: u32,
    pub nan: u64,
    pub inf: u64,
    /// The tensor inputs at that evaluation, per parameter (None for non-tensors).
    pub inputs: Vec<Option<InputValues>>,
    /// Every step's output statistics at that evaluation.
    pub steps: Vec<StepObs>,
    /// Microseconds from the episode's start.
    pub micros: u64,
    /// Which oracle fired at `step`, and what it compared.
    #[serde(default)]
    pub fired: Fired,
}

/// The oracle that fired, with what it saw.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum Fired {
    /// The step's output holds NaN or INF although its inputs are finite.
    #[default]
    NonFinite,
    /// The chain ending at the step is finite but differs from its stable form.
    Rewrite(RewriteFound),
    /// The step's finite output left its range (the op's own, or one the program declares).
    Range(RangeFound),
    /// The program's output (a step no other step reads) in its own dtype is far from the same
    /// program run in float64 on the same inputs.
    Wider(WiderFound),
}

impl Fired {
    /// The oracle's name in reports.
    pub fn name(&self) -> &'static str {
        match self {
            Fired::NonFinite => "nan_inf",
            Fired::Rewrite(_) => "rewrite",
            Fired::Range(_) => "range",
            Fired::Wider(_) => "wider",
        }
    }
}

/// The range oracle fired: the range and the value furthest outside it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RangeFound {
    pub range: super::range::StepRange,
    pub value: f64,
}

/// The wider-float oracle fired: the element that differs most, in the program's dtype and in
/// float64.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WiderFound {
    pub got: f64,
    pub want: f64,
}

/// The wider-float oracle's tolerance, relative to the float64 value: far above the rounding of
/// a well-conditioned chain (float32 ~1e-7, half types ~1e-3 per step), far below the error of
/// a cancellation that leaves only noise.
pub fn wider_tolerance(dtype: Option<DType>) -> f64 {
    match dtype {
        Some(DType::Float16) | Some(DType::BFloat16) => 1e-1,
        _ => 1e-2,
    }
}

/// The wider-float oracle fires only where the error is this many times what rounding the
/// inputs alone moves the float64 result by (`WIDER_DRAWS` random draws underestimate the worst
/// case, hence the margin): an unstable formula, not an ill-conditioned problem.
pub const WIDER_CONDITIONING: f64 = 32.0;
pub const WIDER_DRAWS: u64 = 4;

/// Whether a value computed in a narrower float is far from its float64 counterpart. `scale`
/// is the largest float64 magnitude of the same output: an element a millionth of it (a
/// probability beside the likely ones) is excused.
pub fn wider_differs(got: f64, want: f64, scale: f64, dtype: Option<DType>) -> bool {
    got.is_finite() && want.is_finite() && (got - want).abs() > wider_tolerance(dtype) * want.abs() + (1e-6 * scale).max(wider_atol(dtype))
}

/// The absolute part of the tolerance, as in `torch.testing`'s closeness: a loss of 6e-10 that
/// float32 rounds to 0 next to terms of magnitude 1 is float32's resolution, not an unstable
/// formula.
pub fn wider_atol(dtype: Option<DType>) -> f64 {
    match dtype {
        Some(DType::Float16) | Some(DType::BFloat16) => 1e-2,
        _ => 1e-4,
    }
}

/// The formula-rewrite oracle fired: the stable form and the largest difference seen.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RewriteFound {
    pub stable: super::rewrite::Rewrite,
    pub naive: f64,
    pub stable_value: f64,
}

/// The strongest soft-assertion warning of an episode.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SoftSignal {
    pub step: u32,
    /// The predicted probability of a non-finite output.
    pub probability: f64,
    /// The evaluation at which it first passed the threshold.
    pub eval: u32,
}

/// What an episode ended with.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HuntResult {
    pub found: Option<Found>,
    pub evals: u32,
    pub micros: u64,
    /// The path (at most `MAX_PATH` points, the last ones kept).
    pub path: Vec<PathPoint>,
    pub soft: Option<SoftSignal>,
    /// The strongest warning of the precision model (output imprecise against float64).
    pub imprecise: Option<SoftSignal>,
    pub records: Vec<Record>,
    /// The program could not run at all (a libtorch error on the starting inputs): not a bug.
    pub rejected: Option<String>,
    /// The step whose call libtorch rejected on the starting inputs, when one did.
    #[serde(default)]
    pub rejected_step: Option<u32>,
}

/// Path points kept per episode.
pub const MAX_PATH: usize = 64;

/// Input features of an op from the statistics of its (up to two) tensor operands, its (up to
/// two) number arguments (an exponent, a clamp bound, an eps; 0 when absent) and the dtype: per
/// operand max, min, abs-min, abs-max, log10 magnitude; then dtype code, log10 size, the
/// numbers.
pub fn features(operands: &[Stats], scalars: [f64; 2], dtype: Option<DType>) -> Vec<f64> {
    let mut f = Vec::with_capacity(14);
    for k in 0..2 {
        match operands.get(k) {
            Some(s) => {
                f.extend([s.max, s.min, s.abs_min, s.abs_max, (s.abs_max + 1e-300).log10()]);
            }
            None => f.extend([0.0, 0.0, 1.0, 1.0, 0.0]),
        }
    }
    f.push(dtype.map_or(0.0, |d| d.aten_id() as f64));
    f.push((operands.first().map_or(1, |s| s.numel).max(1) as f64).log10());
    f.extend(scalars);
    f.iter().map(|v| v.clamp(-1e300, 1e300)).collect()
}

/// Probability above which a soft assertion counts as firing.
pub const FIRE: f64 = 0.5;
