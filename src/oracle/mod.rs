//! Verdicts on executions: which oracles fire for a case and with what cause (`cause::Cause`: an
//! assert's location, a death and the frame it died in, a relation broken), so findings group by
//! cause rather than by input.
pub mod cause;
pub mod device;
pub mod differentiable;
pub mod differential;
mod domain;
pub mod plausible;
pub use crate::wire::errors;

use serde::{Deserialize, Serialize};

use crate::spec::ApiSpec;
use crate::wire::case::{Arg, Case, DType};
use crate::wire::oracle::Oracle;
use crate::wire::outcome::{signal_name, Outcome};
use crate::wire::variant::{Check, GradientKind, Tolerance};
use crate::worker::frames::Frame;
use crate::worker::Execution;
pub use domain::is_domain;
use domain::{inputs_known_finite, maybe_singular, nonfinite, postconditions};
use errors::ErrorKind;

pub use cause::{Cause, Death, Place, Signal};

/// Inputs smaller than this that exhaust memory are reported: a small input asking for
/// gigabytes is a size computation gone wrong.
pub const OOM_INPUT_ELEMENTS: u64 = 1 << 20;

/// ... unless an int argument is this large: `diag(v, 2**31)` asks for a 2^31-square matrix,
/// and saying it cannot allocate that is libtorch doing its job.
pub const OOM_INT_ARGUMENT: i64 = 1 << 20;

/// Inputs this large (huge models) are judged for crashes and internal errors only: a timeout on
/// them is the cost of their size (`matrix_exp` of a 1024-square float16 matrix, `pdist` of 8,192
/// points), not a hang, and float64-promotion differences there are honest rounding.
pub const LARGE_INPUT_ELEMENTS: u64 = 1 << 14;

/// Whether an allocation of the size the message names could be the call's honest result: at
/// most 16 bytes (a complex128) per element of the outer product of its input tensors, or of
/// the square of their elements (and int arguments). `outer` of two 16,384-element vectors, operands broadcast
/// against each other, `diag` of a 16,382-element vector (a 16,382-square matrix) rightly need
/// that much; a size computation gone wrong asks for far more.
fn explained_by_inputs(case: &Case, message: &str) -> bool {
    let Some(bytes) = message.split("tried to allocate ").nth(1).and_then(|r| r.split(' ').next()).and_then(|n| n.parse::<f64>().ok()) else {
        return false;
    };
    let numels: Vec<f64> = case.args.iter().flat_map(Arg::tensors).map(|t| t.numel().max(1) as f64).collect();
    let product: f64 = numels.iter().product();
    // An int argument can widen the square: `diag(v, -1)` of n elements is (n + 1)-square.
    let total: f64 = numels.iter().sum::<f64>() + largest_int(case).min(OOM_INT_ARGUMENT) as f64;
    bytes <= 16.0 * product.max(total * total)
}

/// The largest magnitude of an int argument of the case (in lists too).
fn largest_int(case: &Case) -> i64 {
    case.args
        .iter()
        .flat_map(|a| match a {
            Arg::Int(x) => vec![*x],
            Arg::IntList(xs) => xs.clone(),
            _ => Vec::new(),
        })
        .map(|x| x.checked_abs().unwrap_or(i64::MAX))
        .max()
        .unwrap_or(0)
}

/// How one case ended, for statistics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// Returned normally.
    Ok,
    /// Rejected by libtorch's argument checks.
    Invalid,
    /// The call did not match the operator's schema (a spec error).
    Schema,
    /// An internal error, a crash, a hang or an out-of-memory.
    Failed,
}

/// One oracle firing.
#[derive(Clone, Debug, PartialEq)]
pub struct Detection {
    pub oracle: Oracle,
    /// Stable across inputs with the same cause; its display text is the finding's signature.
    pub cause: Cause,
    /// The message a human reads: the error text, the signal, the violated postcondition.
    pub message: String,
    /// The signal the worker died by.
    pub signal: Option<Signal>,
    /// The status the worker exited with (in the call or in a check).
    pub exit: Option<i32>,
    /// What a reproducer has to show.
    pub evidence: Evidence,
}

/// What a reproducer must show for a detection to count as reproduced.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum Evidence {
    /// The call itself fails: a crash, a hang, an out-of-memory, an internal error.
    #[default]
    Call,
    /// Output `output` holds NaN or inf.
    NonFinite { output: usize },
    /// `ensures` clause number `clause` of the API does not hold.
    Postcondition { clause: usize },
    /// Differential check number `check` of the API disagrees.
    Differential { check: usize, what: Disagreement },
}

/// How a differential check disagreed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Disagreement {
    /// Values of output `output` differ beyond `tolerance`.
    Values { output: usize, dtype: Option<DType>, tolerance: Tolerance },
    /// Output `output` differs in dtype or shape (or the outputs in number or kind).
    Structure { output: usize },
    /// The variant raises while the original returns.
    VariantRaises,
    /// The original raises while the variant returns.
    OriginalRaises,
    /// The variant itself fails (an internal error, a crash, a hang), whatever the original did.
    VariantFails,
    /// Analytic and numeric gradients differ (a finding written before `Derivative`).
    Gradient,
    /// A gradient disagrees with another way of computing it, or is not finite, at `GradientAt`.
    Derivative(GradientAt),
    /// Output `output` (float64) is infinite where the same call just below the input, along
    /// `t · x`, extrapolates to a representable value (`sfz-worker/src/runtime/ray.rs`).
    Extrapolated { output: usize },
    /// Output `output` differs between two calls of the original on the same inputs: memory
    /// the kernel never wrote.
    Uninitialised { output: usize },
}

/// Where a gradient finding is: which mode disagrees, the floating input (case argument and
/// tensor within it) and its element.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct GradientAt {
    pub kind: GradientKind,
    pub arg: usize,
    pub tensor: usize,
    pub index: u64,
}

#[derive(Clone, Debug)]
pub struct Verdict {
    pub status: Status,
    pub detections: Vec<Detection>,
    /// Numerical detections left out because their input is implausible (`plausible`), with why:
    /// counted, not reported.
    pub implausible: Vec<(Oracle, plausible::Implausible)>,
    /// The libtorch error text when the call raised (for validity feedback).
    pub error: Option<String>,
}

/// Judges one execution against the API's oracles and postconditions; `checks` are the
/// differential checks the API's cases run with (their reports come in `Execution::Checked`).
pub fn judge(api: &ApiSpec, checks: &[Check], case: &Case, exec: &Execution) -> Verdict {
    match exec {
        Execution::Checked { outcome, checks: reports } => {
            let mut v = judge_outcome(api, case, outcome);
            if differential::nan_judged_by_reference(checks, reports) {
                v.detections.retain(|d| d.oracle != Oracle::NanInf);
            }
            let mut judged = differential::judge_reports(api, checks, case, outcome, reports);
            // What the true value should be is asked only where the spec says the op is defined,
            // as for `nan_inf` (a class weight of -1.7e38 where the spec's are in 0.5..2.0);
            // layout, out= and in-place twins must agree with the call everywhere.
            if judged.iter().any(|d| judges_truth(d.oracle)) && !within_bounds(api, case) {
                judged.retain(|d| !judges_truth(d.oracle) || matches!(d.cause, Cause::Uninitialised { .. }));
            }
            v.detections.extend(judged);
            v.set_aside_implausible(api, checks, case, reports);
            v
        }
        Execution::InCheck { check, failure } => {
            Verdict { status: Status::Failed, detections: differential::judge_in_check(checks, *check, failure).into_iter().collect(), implausible: Vec::new(), error: None }
        }
        Execution::Completed(outcome) => {
            let mut v = judge_outcome(api, case, outcome);
            // The float64 reference says whether a NaN is the function's own; unasked, the
            // NaN is not judged (the check share left the case unchecked).
            if checks.iter().any(|c| c.variant == crate::wire::variant::Variant::Defined) {
                v.detections.retain(|d| d.oracle != Oracle::NanInf);
            }
            v.set_aside_implausible(api, checks, case, &[]);
            v
        }
        _ => judge_failure(api, case, exec),
    }
}

impl Verdict {
    /// Moves the numerical detections whose input is implausible to `implausible`.
    fn set_aside_implausible(&mut self, api: &ApiSpec, checks: &[Check], case: &Case, reports: &[crate::wire::variant::CheckReport]) {
        let mut kept = Vec::with_capacity(self.detections.len());
        for d in std::mem::take(&mut self.detections) {
            match plausible::detection(api, checks, case, reports, &d) {
                Some(why) => self.implausible.push((d.oracle, why)),
                None => kept.push(d),
            }
        }
        self.detections = kept;
    }
}

/// A worker that died or hung in the call itself.
fn judge_failure(api: &ApiSpec, case: &Case, exec: &Execution) -> Verdict {
    let enabled = |oracle| api.has_oracle(oracle);
    let mut detections = Vec::new();
    let status = match exec {
        Execution::Crashed { signal, stderr, frames, between_calls, .. } => {
            // We only SIGKILL on timeouts (reported as such); a SIGKILL here is the kernel's
            // out-of-memory killer.
            if *signal == libc::SIGKILL {
                if enabled(Oracle::Oom) {
                    detections.push(Detection {
                        oracle: Oracle::Oom,
                        cause: Cause::Killed,
                        message: tail(stderr),
                        signal: Some(Signal(*signal)),
                        exit: None,
                        evidence: Evidence::Call,
                    });
                }
            } else if enabled(Oracle::Crash) {
                detections.push(Detection {
                    oracle: Oracle::Crash,
                    cause: death_cause(Place::Call, *signal, stderr, frames, *between_calls),
                    message: format!("worker killed by {}\n{}", signal_name(*signal), tail_with_frames(stderr, frames, *between_calls)),
                    signal: Some(Signal(*signal)),
                    exit: None,
                    evidence: Evidence::Call,
                });
            }
            Status::Failed
        }
        Execution::Exited { code, stderr, .. } => {
            if enabled(Oracle::Crash) {
                detections.push(Detection {
                    oracle: Oracle::Crash,
                    cause: exit_cause(Place::Call, *code, stderr),
                    message: format!("worker exited with status {code}\n{}", tail(stderr)),
                    signal: None,
                    exit: Some(*code),
                    evidence: Evidence::Call,
                });
            }
            Status::Failed
        }
        Execution::TimedOut { millis } => {
            if enabled(Oracle::Hang) && case.input_elements() < LARGE_INPUT_ELEMENTS {
                detections.push(Detection {
                    oracle: Oracle::Hang,
                    cause: Cause::Hang,
                    message: format!("no answer after {millis} ms"),
                    signal: None,
                    exit: None,
                    evidence: Evidence::Call,
                });
            }
            Status::Failed
        }
        _ => Status::Ok,
    };
    Verdict { status, detections, implausible: Vec::new(), error: None }
}

/// A call the worker saw to the end (returned or raised).
fn judge_outcome(api: &ApiSpec, case: &Case, outcome: &Outcome) -> Verdict {
    let enabled = |oracle| api.has_oracle(oracle);
    let mut detections = Vec::new();
    let mut error = None;
    let status = match outcome {
        Outcome::Raised { class, message, .. } => {
            error = Some(message.clone());
            match errors::classify(*class, message) {
                ErrorKind::Argument => Status::Invalid,
                ErrorKind::Schema => Status::Schema,
                // A private operator asserts the preconditions its callers keep: an assert
                // reached from outside them is a mistyped call (`_is_any_true` of a float
                // tensor), not a bug. The public operators reaching the same code are fuzzed too.
                ErrorKind::Internal { .. } if api.is_private() => Status::Invalid,
                ErrorKind::Internal { signature } | ErrorKind::Unchecked { signature } => {
                    if enabled(Oracle::InternalError) {
                        let cause = Cause::Internal { place: Place::of_raised(message), what: signature };
                        detections.push(Detection { oracle: Oracle::InternalError, cause, message: message.clone(), signal: None, exit: None, evidence: Evidence::Call });
                    }
                    Status::Failed
                }
                ErrorKind::OutOfMemory => {
                    if enabled(Oracle::Oom) && case.input_elements() < OOM_INPUT_ELEMENTS && largest_int(case) < OOM_INT_ARGUMENT && !explained_by_inputs(case, message) {
                        detections.push(Detection {
                            oracle: Oracle::Oom,
                            cause: Cause::OutOfMemory { message: errors::normalize(message) },
                            message: message.clone(),
                            signal: None,
                            exit: None,
                            evidence: Evidence::Call,
                        });
                        Status::Failed
                    } else {
                        Status::Invalid
                    }
                }
            }
        }
        Outcome::Returned { outputs, .. } => {
            // Values outside the spec's bounds (a cliff: `gen::cliff`) may rightly give inf or
            // break a postcondition; those bounds are what make a finite result expected.
            // Asked only when something fired: evaluating bounds costs more than the call.
            if enabled(Oracle::NanInf) && inputs_known_finite(case) && !maybe_singular(api, case) {
                if let Some(d) = nonfinite(outputs).filter(|_| within_bounds(api, case)) {
                    detections.push(d);
                }
            }
            let broken = postconditions(api, case, outputs);
            if !broken.is_empty() && within_bounds(api, case) {
                detections.extend(broken);
            }
            Status::Ok
        }
    };
    Verdict { status, detections, implausible: Vec::new(), error }
}

/// The oracles that hold a result to its true value (the float64 reference, a relation, finite
/// differences), as opposed to another path of the same operator.
fn judges_truth(oracle: Oracle) -> bool {
    matches!(oracle, Oracle::Precision | Oracle::Overflow | Oracle::Relation | Oracle::Gradient)
}

/// True when the case's arguments satisfy every constraint of the API the evaluator can judge.
fn within_bounds(api: &ApiSpec, case: &Case) -> bool {
    crate::gen::values::conforms(api, &case.args).iter().all(|v| *v != Some(false))
}

/// What a death by `signal` in `place` is keyed by. A memory error (SIGSEGV, SIGBUS, or an abort
/// by glibc or the fortified C library finding memory damaged) is one class whatever signal or
/// words it ended with: one overrun segfaults in one process and trips the allocator in the next.
/// With native frames (`worker::frames`), the cause names the frame it died in, so two defects of
/// one operator stay apart and one defect met through several operators shares a cause; without,
/// the last meaningful stderr line. A memory error met `between_calls` (building the next inputs,
/// freeing a result) was done by an earlier call: no frame of it is named.
pub fn death_cause(place: Place, signal: i32, stderr: &str, frames: &[Frame], between_calls: bool) -> Cause {
    let last = last_words(stderr);
    let memory = matches!(signal, libc::SIGSEGV | libc::SIGBUS) || (signal == libc::SIGABRT && last.is_some_and(errors::memory_damage));
    let death = if memory { Death::Memory } else { Death::Signal(Signal(signal)) };
    let site = crate::worker::frames::site(frames).filter(|_| !(memory && between_calls));
    let words = match (&site, last) {
        (Some(_), _) if memory => None,
        (_, Some(l)) if !(memory && errors::memory_damage(l)) => Some(errors::crash_cause(&errors::normalize(l))),
        _ => None,
    };
    Cause::Died { place, death, site: site.map(str::to_string), words }
}

/// An exit from inside a call is keyed by its status and the last meaningful stderr line.
fn exit_cause(place: Place, code: i32, stderr: &str) -> Cause {
    let words = last_words(stderr).map(|l| errors::crash_cause(&errors::normalize(l)));
    Cause::Died { place, death: Death::Exit(code), site: None, words }
}

/// The last meaningful line a dying process printed (an uncaught exception's type, an abort
/// message), past the warnings earlier cases left.
fn last_words(stderr: &str) -> Option<&str> {
    // A dying process prints its cause last: what comes before the last warning's end is older.
    let lines: Vec<&str> = stderr.lines().map(str::trim).collect();
    let after = lines.iter().rposition(|l| ends_warning(l)).map_or(0, |i| i + 1);
    lines[after..].iter().rev().find(|l| !l.is_empty() && !l.starts_with("Exception raised from") && !l.starts_with("frame #")).copied()
}

/// A libtorch warning (`[W1123 07:15:41.27 Resize.cpp:31] Warning: ...`): the worker's stderr
/// keeps those of earlier cases, and none says why a process died.
fn is_warning(line: &str) -> bool {
    line.starts_with("[W") && line.contains("] Warning: ")
}

/// The line that ends a libtorch warning: a one-line warning, or the last line of one that spans
/// several (`... strictly less\nthan the reduction factor (...). (function operator())`).
fn ends_warning(line: &str) -> bool {
    is_warning(line) || (line.ends_with(')') && line.contains(" (function "))
}

/// `tail` of stderr, then the native frames that are not infrastructure.
fn tail_with_frames(stderr: &str, frames: &[Frame], between_calls: bool) -> String {
    let shown = crate::worker::frames::describe(frames, 12);
    let when = if between_calls { " (between calls of operators: the damage was done earlier)" } else { "" };
    if shown.is_empty() {
        tail(stderr)
    } else {
        format!("{}\nnative frames{when}, innermost first:\n{shown}", tail(stderr))
    }
}

fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

#[cfg(test)]
mod tests {
    use crate::wire::case::{Arg, Case, DType, Fill, TensorRecipe};

    fn vector(n: i64) -> Arg {
        Arg::Tensor(TensorRecipe { dtype: DType::Complex128, shape: vec![n], fill: Fill::Constant(0.0), seed: 0, layout: Default::default(), specials: Vec::new() })
    }

    #[test]
    fn allocations_the_inputs_explain_are_no_oom_finding() {
        let alloc = |bytes: u64| format!("DefaultCPUAllocator: can't allocate memory: you tried to allocate {bytes} bytes. Error code 12");
        // diag of a 16,382-element complex128 vector: a 16,382-square matrix.
        let diag = Case { op: 0, args: vec![vector(16382)], forward: None };
        assert!(super::explained_by_inputs(&diag, &alloc(4_293_918_784)));
        // ... and of a 16,381-element one below the main diagonal: a 16,382-square matrix too.
        let below = Case { op: 0, args: vec![vector(16381), Arg::Int(-1)], forward: None };
        assert!(super::explained_by_inputs(&below, &alloc(4_293_918_784)));
        assert!(!super::explained_by_inputs(&Case { op: 0, args: vec![vector(16381)], forward: None }, &alloc(4_293_918_784)), "without the offset the square is smaller");
        // outer of two vectors.
        let outer = Case { op: 0, args: vec![vector(16384), vector(16384)], forward: None };
        assert!(super::explained_by_inputs(&outer, &alloc(16 * 16384 * 16384)));
        // A size computation gone wrong asks for far more than either.
        assert!(!super::explained_by_inputs(&diag, &alloc(1 << 50)));
        assert!(!super::explained_by_inputs(&Case { op: 0, args: vec![vector(8)], forward: None }, &alloc(1 << 33)));
        assert!(!super::explained_by_inputs(&diag, "no size in this message"));
    }

    #[test]
    fn a_nan_the_float64_reference_holds_too_is_no_nan_inf_finding() {
        use crate::wire::oracle::Oracle;
        use crate::wire::outcome::{Outcome, Output, TensorInfo};
        use crate::wire::variant::{Accuracy, Check, CheckOutcome, CheckReport, Tolerance, Tolerances, Variant};
        use crate::worker::Execution;
        let checked = crate::check::check_text(std::path::Path::new("t.sfz"), "api torch.div(input: Tensor, other: Tensor) -> Tensor {\n    oracles crash, nan_inf;\n}\n");
        assert!(!checked.has_errors(), "{:?}", checked.diags);
        let api = &checked.spec.apis[0];
        let zeros = Arg::Tensor(TensorRecipe { dtype: DType::Float32, shape: vec![3], fill: Fill::Constant(0.0), seed: 0, layout: Default::default(), specials: Vec::new() });
        let case = Case { op: 0, args: vec![zeros.clone(), zeros], forward: None };
        let checks = [Check { oracle: Oracle::NanInf, variant: Variant::Defined, tolerances: Tolerances::uniform(Tolerance::EXACT), accuracy: Accuracy::Forward }];
        let nan = Output::Tensor(TensorInfo { dtype: Some(DType::Float32), shape: vec![3], nan: 3, inf: 0, min: None, max: None });
        let outcome = Outcome::Returned { outputs: vec![nan], micros: 1 };
        let judged = |report: CheckOutcome| {
            let exec = Execution::Checked { outcome: outcome.clone(), checks: vec![CheckReport { outcome: report, micros: 0 }] };
            super::judge(api, &checks, &case, &exec).detections.iter().map(|d| d.oracle).collect::<Vec<_>>()
        };
        assert_eq!(judged(CheckOutcome::Agree { max_abs: 0.0, max_rel: 0.0 }), Vec::<Oracle>::new(), "the reference is NaN there too");
        assert_eq!(judged(CheckOutcome::Skipped("no input to compute in float64".into())), vec![Oracle::NanInf]);
        // A case the check share left unchecked: the reference was not asked, nothing is judged.
        assert!(super::judge(api, &checks, &case, &Execution::Completed(outcome.clone())).detections.is_empty());
        // Without the reference among the checks (a probe of the call alone), the NaN speaks.
        assert_eq!(super::judge(api, &[], &case, &Execution::Completed(outcome.clone())).detections[0].oracle, Oracle::NanInf);
    }

    #[test]
    fn a_documented_overflow_refuted_by_a_rejected_rule_is_no_finding() {
        use crate::wire::oracle::Oracle;
        use crate::wire::outcome::{Outcome, Output, TensorInfo};
        use crate::wire::variant::{Accuracy, Check, CheckOutcome, CheckReport, Premature, PrematureKind, Tolerance, Tolerances, ValueMismatch, Variant};
        use crate::worker::Execution;
        let spec = "api torch.cosh(input: Tensor) -> Tensor {}\n\nrule checked for torch.cosh {\n    oracles precision;\n}\n";
        let refuting = format!("{spec}\n#[status(rejected), reason(\"documented\")]\nrule sleef for torch.cosh {{\n    oracles overflow;\n}}\n");
        let x = Arg::Tensor(TensorRecipe { dtype: DType::Float32, shape: vec![1], fill: Fill::Constant(87.0), seed: 0, layout: Default::default(), specials: Vec::new() });
        let case = Case { op: 0, args: vec![x], forward: None };
        let tolerance = Tolerance { rtol: 1e-5, atol: 1e-5 };
        let checks = [Check { oracle: Oracle::Precision, variant: Variant::Promote, tolerances: Tolerances::uniform(tolerance), accuracy: Accuracy::Forward }];
        let inf = Output::Tensor(TensorInfo { dtype: Some(DType::Float32), shape: vec![1], nan: 0, inf: 1, min: None, max: None });
        // cosh(87) = 3.0e37 would be within 16x of the top: 1.5e37 is a value with headroom.
        let premature = Premature { what: PrematureKind::Inf, index: 0, actual: f64::INFINITY, expected: 1.5e37, count: 1, extrapolated: false };
        let m = ValueMismatch {
            output: 0,
            dtype: Some(DType::Float32),
            index: 0,
            actual: f64::INFINITY,
            expected: 1.5e37,
            mismatched: 1,
            total: 1,
            max_abs: 0.0,
            max_rel: 0.0,
            tolerance,
            premature: Some(premature),
            squares_overflow: None,
            powers_overflow: None,
            strided: false,
            undetermined: false,
        };
        let exec = Execution::Checked { outcome: Outcome::Returned { outputs: vec![inf], micros: 1 }, checks: vec![CheckReport { outcome: CheckOutcome::Values(m), micros: 0 }] };
        let judged = |text: &str| {
            let checked = crate::check::check_text(std::path::Path::new("t.sfz"), text);
            assert!(!checked.has_errors(), "{:?}", checked.diags);
            super::judge(&checked.spec.apis[0], &checks, &case, &exec).detections.iter().map(|d| d.oracle).collect::<Vec<_>>()
        };
        assert_eq!(judged(spec), vec![Oracle::Overflow]);
        assert_eq!(judged(&refuting), Vec::<Oracle>::new());
    }

    /// Outside the spec's value bounds (a cliff put 5.0 where the spec says 0.5..2.0), the true
    /// value is not asked for; another path of the operator still must agree, but not at the
    /// dtype's limits (a class weight of -1.7e38), where both paths compute garbage.
    #[test]
    fn truth_is_judged_within_the_specs_bounds_and_consistency_everywhere() {
        use crate::wire::oracle::Oracle;
        use crate::wire::outcome::{Outcome, Output, TensorInfo};
        use crate::wire::variant::{Accuracy, Check, CheckOutcome, CheckReport, Tolerance, Tolerances, ValueMismatch, Variant};
        use crate::worker::Execution;
        let checked = crate::check::check_text(
            std::path::Path::new("t.sfz"),
            "api torch.exp(input: Tensor) -> Tensor {\n    input.values in 0.5..2.0;\n    oracles crash, precision, layout;\n}\n",
        );
        assert!(!checked.has_errors(), "{:?}", checked.diags);
        let api = &checked.spec.apis[0];
        let tolerance = Tolerance { rtol: 1e-5, atol: 1e-5 };
        let checks = [
            Check { oracle: Oracle::Precision, variant: Variant::Promote, tolerances: Tolerances::uniform(tolerance), accuracy: Accuracy::Forward },
            Check { oracle: Oracle::Layout, variant: Variant::Layout, tolerances: Tolerances::uniform(tolerance), accuracy: Accuracy::Forward },
        ];
        let m = ValueMismatch {
            output: 0,
            dtype: Some(DType::Float32),
            index: 0,
            actual: 1.0,
            expected: 2.0,
            mismatched: 1,
            total: 1,
            max_abs: 1.0,
            max_rel: 0.5,
            tolerance,
            premature: None,
            squares_overflow: None,
            powers_overflow: None,
            strided: false,
            undetermined: false,
        };
        let exec_outcome =
            || Outcome::Returned { outputs: vec![Output::Tensor(TensorInfo { dtype: Some(DType::Float32), shape: vec![1], nan: 0, inf: 0, min: None, max: None })], micros: 1 };
        let outcome = exec_outcome();
        let strided = ValueMismatch { strided: true, ..m.clone() };
        let exec = Execution::Checked {
            outcome: outcome.clone(),
            checks: vec![CheckReport { outcome: CheckOutcome::Values(m.clone()), micros: 0 }, CheckReport { outcome: CheckOutcome::Values(m.clone()), micros: 0 }],
        };
        let judged = |value: f64, exec: &Execution| {
            let x = Arg::Tensor(TensorRecipe { dtype: DType::Float32, shape: vec![1], fill: Fill::Constant(value), seed: 0, layout: Default::default(), specials: Vec::new() });
            super::judge(api, &checks, &Case { op: 0, args: vec![x], forward: None }, exec).detections.iter().map(|d| d.oracle).collect::<Vec<_>>()
        };
        assert_eq!(judged(1.0, &exec), vec![Oracle::Precision, Oracle::Layout]);
        assert_eq!(judged(5.0, &exec), vec![Oracle::Layout]);
        assert_eq!(judged(-1.7e38, &exec), Vec::<Oracle>::new());
        // The reference's disagreement that contiguous copies do not have is the layout's.
        let exec = Execution::Checked {
            outcome,
            checks: vec![CheckReport { outcome: CheckOutcome::Values(strided), micros: 0 }, CheckReport { outcome: CheckOutcome::Agree { max_abs: 0.0, max_rel: 0.0 }, micros: 0 }],
        };
        assert_eq!(judged(1.0, &exec), vec![Oracle::Layout]);
        // Garbage the original returns is no number to hold to plausibility: found wherever.
        let garbage = ValueMismatch { undetermined: true, ..m.clone() };
        let exec = Execution::Checked {
            outcome: exec_outcome(),
            checks: vec![CheckReport { outcome: CheckOutcome::Values(garbage.clone()), micros: 0 }, CheckReport { outcome: CheckOutcome::Values(garbage), micros: 0 }],
        };
        assert_eq!(judged(-1.7e38, &exec), vec![Oracle::Precision, Oracle::Layout]);
        let x = Arg::Tensor(TensorRecipe { dtype: DType::Float32, shape: vec![1], fill: Fill::Constant(5.0), seed: 0, layout: Default::default(), specials: Vec::new() });
        let causes: Vec<super::Cause> = super::judge(api, &checks, &Case { op: 0, args: vec![x], forward: None }, &exec).detections.into_iter().map(|d| d.cause).collect();
        assert_eq!(causes, vec![super::Cause::Uninitialised { output: 0 }; 2]);
    }

    #[test]
    fn an_in_place_write_into_an_expanded_input_that_raises_is_no_layout_finding() {
        use crate::wire::oracle::Oracle;
        use crate::wire::outcome::{ErrorClass, Outcome};
        use crate::wire::variant::{Accuracy, Check, CheckOutcome, CheckReport, Tolerance, Tolerances, Variant};
        use crate::worker::Execution;
        let checked = crate::check::check_text(std::path::Path::new("t.sfz"), "api torch.abs_(input: Tensor) -> Tensor {\n    oracles crash, layout;\n}\n");
        assert!(!checked.has_errors(), "{:?}", checked.diags);
        let api = &checked.spec.apis[0];
        let x = Arg::Tensor(TensorRecipe { dtype: DType::Float32, shape: vec![3, 2], fill: Fill::Constant(1.0), seed: 0, layout: Default::default(), specials: Vec::new() });
        let case = Case { op: 0, args: vec![x], forward: None };
        let checks = [Check { oracle: Oracle::Layout, variant: Variant::Layout, tolerances: Tolerances::uniform(Tolerance::EXACT), accuracy: Accuracy::Forward }];
        let raised = |message: &str| Outcome::Raised { class: ErrorClass::C10, message: message.into(), micros: 1 };
        let judged = |outcome: Outcome| {
            let exec = Execution::Checked { outcome, checks: vec![CheckReport { outcome: CheckOutcome::Returned, micros: 0 }] };
            super::judge(api, &checks, &case, &exec).detections.iter().map(|d| d.oracle).collect::<Vec<_>>()
        };
        let overlap =
            "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.";
        assert!(judged(raised(overlap)).is_empty(), "the expanded input is what made the write invalid");
        // Any other argument error that only one layout raises is a finding.
        assert_eq!(judged(raised("view size is not compatible with input tensor's size and stride")), vec![Oracle::Layout]);
    }

    #[test]
    fn an_internal_assert_of_a_private_operator_is_a_mistyped_call() {
        use crate::wire::outcome::{ErrorClass, Outcome};
        let assert = "self.scalar_type() == at::kBool INTERNAL ASSERT FAILED at \"/__w/pytorch/pytorch/aten/src/ATen/native/ReduceOps.cpp\":2148, please report a bug to PyTorch.";
        let raised = Outcome::Raised { class: ErrorClass::C10, message: assert.into(), micros: 1 };
        let case = Case { op: 0, args: vec![vector(2)], forward: None };
        for (src, bug) in [
            ("api torch._is_any_true(input: Tensor) -> Tensor {}\n", false),
            ("api torch.ops.aten._is_any_true(input: Tensor) -> Tensor {}\n", false),
            ("#[aten(\"aten::_is_all_true\")]\napi torch.all_true(input: Tensor) -> Tensor {}\n", false),
            ("api torch.any(input: Tensor) -> Tensor {}\n", true),
        ] {
            let api = crate::check::first_api(src);
            let v = super::judge_outcome(&api, &case, &raised);
            assert_eq!(v.status == super::Status::Failed, bug, "{src}");
            assert_eq!(v.detections.len(), usize::from(bug), "{src}");
        }
    }

    #[test]
    fn a_warning_left_by_an_earlier_case_is_no_crash_cause() {
        let sign = |signal, stderr: &str| super::death_cause(super::Place::Call, signal, stderr, &[], false).to_string();
        let stderr = "[W1123 08:12:01.123456789 Resize.cpp:31] Warning: An output with one or more elements was resized since it had shape [2], which does not match the required output shape [3]. (function _resize_output_check)\n";
        assert_eq!(sign(libc::SIGFPE, stderr), "SIGFPE");
        // glibc's words for a damaged heap are a memory error, as a segfault is.
        let heap = format!("{stderr}malloc_consolidate(): invalid chunk size\n");
        assert_eq!(sign(libc::SIGABRT, &heap), "memory error");
        assert_eq!(sign(libc::SIGABRT, "malloc(): memory corruption (fast)\n"), "memory error");
        assert_eq!(
            sign(libc::SIGABRT, "terminate called after throwing an instance of 'std::bad_alloc'\n"),
            "SIGABRT: terminate called after throwing an instance of 'std::bad_alloc'"
        );
        // A warning over two lines: its second line is no cause either.
        let var = "[W1123 10:50:01.1 ReduceOps.cpp:1818] Warning: var(): degrees of freedom is <= 0. Correction should be strictly less\nthan the reduction factor (input numel divided by output numel). (function operator())\n";
        assert_eq!(sign(libc::SIGFPE, var), "SIGFPE");
        assert_eq!(
            sign(libc::SIGSEGV, &format!("{var}Intel oneMKL ERROR: Parameter 3 was incorrect on entry to ZGEBAL.\n")),
            "memory error: Intel oneMKL ERROR: Parameter N was incorrect on entry to ?GEBAL."
        );
    }

    /// With native frames, the frame it died in keys a death; a memory error keeps no words of
    /// the allocator's, other signals keep their last line.
    #[test]
    fn a_death_with_frames_is_keyed_by_its_site() {
        let frame = |module: &str, function: &str| crate::worker::frames::Frame { module: module.into(), offset: 1, function: Some(function.into()) };
        let frames = [frame("libc.so.6", "abort"), frame("libtorch_cpu.so", "c10::free_cpu"), frame("libtorch_cpu.so", "at::native::{anon}::cpu_max_pool_backward")];
        assert_eq!(
            super::death_cause(super::Place::Call, libc::SIGABRT, "free(): invalid next size (fast)\n", &frames, false).to_string(),
            "memory error in at::native::{anon}::cpu_max_pool_backward"
        );
        assert_eq!(super::death_cause(super::Place::Call, libc::SIGSEGV, "", &frames, false).to_string(), "memory error in at::native::{anon}::cpu_max_pool_backward");
        assert_eq!(super::death_cause(super::Place::Call, libc::SIGFPE, "", &frames, false).to_string(), "SIGFPE in at::native::{anon}::cpu_max_pool_backward");
        // Between calls (building the next inputs), a damaged heap names no frame; another
        // signal keeps its site.
        let building = [frame("libc.so.6", "malloc"), frame("libtorch_cpu.so", "at::native::randint")];
        assert_eq!(super::death_cause(super::Place::Call, libc::SIGABRT, "malloc(): invalid size (unsorted)\n", &building, true).to_string(), "memory error");
        assert_eq!(super::death_cause(super::Place::Call, libc::SIGSEGV, "", &building, false).to_string(), "memory error in at::native::randint");
        assert_eq!(super::death_cause(super::Place::Call, libc::SIGFPE, "", &frames, true).to_string(), "SIGFPE in at::native::{anon}::cpu_max_pool_backward");
    }
}
