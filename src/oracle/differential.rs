//! Differential oracles, parent side: from an API's `oracles` clause to the checks its cases run
//! with (`variant::Check`), and from the worker's check reports to detections.
//!
//! Which disagreements are findings: values or structure that differ; the variant raising while
//! the original returns; the variant failing an internal assert or leaking a C++ exception (even
//! when the original raised too); the variant accepting what the original rejects, except for
//! `precision` and `cuda`, whose variants legitimately support more dtypes (a float64 or CUDA
//! kernel where the float16 CPU one is missing). Out-of-memory and schema errors of a variant are
//! never findings: they are about the machine or about sfz's binding of the twin.
use crate::diag::{codes, Diagnostic};
use crate::ops::binding::OpBinding;
use crate::ops::catalog::Catalog;
use crate::ops::tags::{self, OpClass};
use crate::ops::twins;
use crate::spec::{ApiSpec, OracleUse, Value};
use crate::wire::case::Case;
use crate::wire::oracle::Oracle;
use crate::wire::outcome::{signal_name, Outcome};
use crate::wire::variant::{Accuracy, Check, CheckOutcome, CheckReport, GradientKind, Tolerance, Tolerances, Variant};
use crate::worker::Execution;

use super::errors::{self, ErrorKind};
use super::{Cause, Detection, Disagreement, Evidence, Place, Signal};

/// The differential oracles, in the order their checks run. (`overflow`, the premature-overflow
/// verdict of the float64 reference, is not among them: named alone, the precision check runs
/// but only its premature inf, NaN and 0 are findings.)
pub const DIFFERENTIAL: &[Oracle] = &[Oracle::Precision, Oracle::Layout, Oracle::Out, Oracle::Inplace, Oracle::Gradient, Oracle::Cuda];

/// One check of an API as planned: the check, and the operator its variant calls when that is
/// not the API's own (the `out=` overload, the in-place twin). The campaign appends those
/// operators to the pool's op table and points the check at them.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedCheck {
    pub check: Check,
    /// The other operators its variant calls: the twin of `out` and `inplace`, the APIs a
    /// relation calls (in `Relation::apis` order).
    pub twins: Vec<OpBinding>,
}

impl PlannedCheck {
    /// The check with the op indices of its twins (parallel to `twins`) set.
    pub fn with_ops(&self, ops: &[u32]) -> Check {
        let mut c = self.check.clone();
        match &mut c.variant {
            Variant::Out { op: o } | Variant::InPlace { op: o, .. } => *o = ops.first().copied().unwrap_or(0),
            Variant::Relation(r) => {
                let names = r.apis();
                r.resolve(&mut |name| names.iter().position(|n| n == name).and_then(|i| ops.get(i).copied()));
            }
            _ => {}
        }
        c
    }

    /// The twin of `out` and `inplace`.
    pub fn twin(&self) -> Option<&OpBinding> {
        self.twins.first()
    }
}

/// The checks an API's differential oracles ask for. An oracle that cannot apply (no `out=`
/// overload, no in-place twin) is left out with a W0101 warning at its use.
pub fn plan_checks(api: &ApiSpec, binding: &OpBinding, catalog: &Catalog) -> (Vec<PlannedCheck>, Vec<Diagnostic>) {
    let mut checks = Vec::new();
    let mut diags = Vec::new();
    for &oracle in DIFFERENTIAL {
        // `overflow` alone asks for the precision check too.
        let asked = if oracle == Oracle::Precision && !api.has_oracle(oracle) { Oracle::Overflow } else { oracle };
        let Some(u) = api.oracle_use(asked) else { continue };
        let implied = !api.oracles_written;
        if implied && api.refuted(oracle) {
            continue;
        }
        // Sizes, strides and flags are no values to compare with a float64 or relaid copy.
        if implied && matches!(oracle, Oracle::Precision | Oracle::Layout) && catalog.get(&binding.name, &binding.overload).is_some_and(|s| s.returns_only_facts()) {
            continue;
        }
        let tolerances = tolerances(u);
        let accuracy = accuracy_of(binding);
        let planned = |variant, twin: Option<OpBinding>| PlannedCheck { check: Check { oracle: asked, variant, tolerances, accuracy }, twins: twin.into_iter().collect() };
        match oracle {
            Oracle::Precision => checks.push(planned(Variant::Promote, None)),
            Oracle::Layout => checks.push(planned(Variant::Layout, None)),
            Oracle::Cuda => checks.push(planned(Variant::Cuda, None)),
            Oracle::Gradient => {
                if let Some(why) = super::differentiable::why_not(api) {
                    if !implied {
                        diags.push(not_applicable(u, &format!("`{}` has nothing to differentiate: {why}", api.name)));
                    }
                    continue;
                }
                let eps = float_arg(u, "eps").unwrap_or(1e-6);
                let samples = match u.args.iter().find(|(n, _)| n == "samples") {
                    Some((_, Value::Int(n))) => (*n).clamp(1, 1000) as u32,
                    _ => 8,
                };
                let t = Tolerance { rtol: float_arg(u, "rtol").unwrap_or(1e-3), atol: float_arg(u, "atol").unwrap_or(1e-5) };
                checks.push(PlannedCheck {
                    check: Check { oracle: Oracle::Gradient, variant: Variant::Gradient { eps, samples }, tolerances: Tolerances::uniform(t), accuracy },
                    twins: Vec::new(),
                });
            }
            Oracle::Out => match twins::out_binding(binding, catalog) {
                Some(b) => checks.push(planned(Variant::Out { op: 0 }, Some(b))),
                None if implied => {}
                None => diags.push(not_applicable(u, &format!("`{}` has no out= overload taking the same arguments", binding.qualified()))),
            },
            Oracle::Inplace => match twins::inplace_binding(binding, catalog) {
                Some((b, arg)) => checks.push(planned(Variant::InPlace { op: 0, arg }, Some(b))),
                None if implied => {}
                None => diags.push(not_applicable(u, &format!("`{}` has no in-place form (`{}_`) taking the same arguments", binding.qualified(), binding.name))),
            },
            _ => {}
        }
    }
    // Named, or implied by a value domain (`rules::domains`), which `nan_inf` judges.
    if api.has_oracle(Oracle::NanInf) || api.ensures.iter().any(|c| super::is_domain(&c.expr)) {
        let check = Check { oracle: Oracle::NanInf, variant: Variant::Defined, tolerances: Tolerances::uniform(Tolerance::EXACT), accuracy: Accuracy::Backward };
        checks.push(PlannedCheck { check, twins: Vec::new() });
    }
    (checks, diags)
}

/// What accuracy the operator of `binding` promises, by its kind.
pub fn accuracy_of(binding: &OpBinding) -> Accuracy {
    match tags::class(&binding.name) {
        OpClass::Pointwise => Accuracy::Forward,
        OpClass::BlasLapack => Accuracy::BackwardInSafeRange,
        OpClass::Other => Accuracy::Backward,
    }
}

/// Whether the float64 reference judged the case's NaN and inf (`Variant::Defined` compared):
/// where it agreed, the function itself is not finite there; where it disagreed, its own
/// `nan_inf` verdict holds the true value and is judged by it (`plausible`: a NaN where the true
/// value overflows the dtype is no finding). Either way it speaks for a domain's `ensures`.
pub fn nan_judged_by_reference(checks: &[Check], reports: &[CheckReport]) -> bool {
    checks.iter().zip(reports).any(|(c, r)| c.variant == Variant::Defined && matches!(r.outcome, CheckOutcome::Agree { .. } | CheckOutcome::Values(_)))
}

fn not_applicable(u: &OracleUse, why: &str) -> Diagnostic {
    Diagnostic::new(codes::W0101, format!("oracle `{}` does not apply here", u.name))
        .with_label(u.span, why.to_string())
        .with_help(format!("remove `{}` from the oracles clause; the other oracles run", u.name))
}

fn float_arg(u: &OracleUse, name: &str) -> Option<f64> {
    match u.args.iter().find(|(n, _)| n == name)?.1 {
        Value::Float(f) => Some(f),
        Value::Int(i) => Some(i as f64),
        _ => None,
    }
}

/// The `[rtol, atol]` pairs of an oracle use, per dtype (the declaration's defaults filled in by
/// the checker; exact where neither says anything).
pub fn tolerances(u: &OracleUse) -> Tolerances {
    let pair = |name: &str| match u.args.iter().find(|(n, _)| n == name).map(|(_, v)| v) {
        Some(Value::List(items)) => {
            let num = |v: &Value| match v {
                Value::Float(f) => Some(*f),
                Value::Int(i) => Some(*i as f64),
                _ => None,
            };
            match items.as_slice() {
                [r, a] => Tolerance { rtol: num(r).unwrap_or(0.0), atol: num(a).unwrap_or(0.0) },
                _ => Tolerance::EXACT,
            }
        }
        _ => Tolerance::EXACT,
    };
    Tolerances { float16: pair("float16"), bfloat16: pair("bfloat16"), float32: pair("float32"), float64: pair("float64") }
}

/// Detections from the check reports of a case whose call completed with `outcome`.
pub fn judge_reports(api: &ApiSpec, checks: &[Check], case: &Case, outcome: &Outcome, reports: &[CheckReport]) -> Vec<Detection> {
    checks.iter().zip(reports).enumerate().filter_map(|(k, (check, report))| judge_one(api, k, check, case, outcome, &report.outcome)).collect()
}

/// The message's clause naming the squares-overflow cause, where the worker saw the inputs' sum of
/// squares (scaled by the relation's `s`, for a relation) leave the dtype the operator accumulates
/// in while their sums did not (`ValueMismatch::squares_overflow`): a cause many operators share.
fn squares_clause(m: &crate::wire::variant::ValueMismatch) -> String {
    match (m.squares_overflow, m.powers_overflow) {
        (Some(acc), _) => format!("; the inputs' sum of squares leaves {acc}, which the operator accumulates in without rescaling"),
        (None, Some(acc)) => format!("; the inputs' sum of |x|^p leaves the range of {acc}, which the operator accumulates in without rescaling"),
        (None, None) => String::new(),
    }
}

fn judge_one(api: &ApiSpec, k: usize, check: &Check, case: &Case, outcome: &Outcome, report: &CheckOutcome) -> Option<Detection> {
    let what = check.variant.describe();
    let detection = |cause: Cause, message: String, how: Disagreement| {
        Some(Detection { oracle: oracle_name(check), cause, message, signal: None, exit: None, evidence: Evidence::Differential { check: k, what: how } })
    };
    // What the original left unwritten: one cause whichever check compared it (`nan_inf`'s
    // float64 reference too, on a garbage NaN).
    if let CheckOutcome::Values(m) = report {
        if m.undetermined {
            let dtype = m.dtype.map_or("scalar".to_string(), |d| d.to_string());
            return detection(
                Cause::Uninitialised { output: m.output },
                format!(
                    "output {} ({dtype}) holds uninitialised memory: the call returns other values for it each time it runs on the same inputs (element {} was {}; the {what} gave {})",
                    m.output, m.index, m.actual, m.expected
                ),
                Disagreement::Uninitialised { output: m.output },
            );
        }
    }
    if check.variant == Variant::Defined {
        return None;
    }
    match report {
        CheckOutcome::Agree { .. } | CheckOutcome::BothRaised | CheckOutcome::Skipped(_) => None,
        // Contiguous copies of the strided inputs agree with the reference: the strides went
        // wrong, whichever oracle's check saw it.
        CheckOutcome::Values(m) if m.strided => {
            let dtype = m.dtype.map_or("scalar".to_string(), |d| d.to_string());
            Some(Detection {
                oracle: Oracle::Layout,
                cause: Cause::Values { output: m.output, squares: None, powers: None },
                message: format!(
                    "output {} ({dtype}) is wrong for a strided input: element {} is {} where the float64 reference (rounded) is {}, and the same call on contiguous copies of the inputs agrees with the reference; {} of {} elements differ beyond rtol={} atol={}",
                    m.output, m.index, m.actual, m.expected, m.mismatched, m.total, m.tolerance.rtol, m.tolerance.atol
                ),
                signal: None,
                exit: None,
                evidence: Evidence::Differential { check: k, what: Disagreement::Values { output: m.output, dtype: m.dtype, tolerance: m.tolerance } },
            })
        }
        // A documented overflow (Sleef's cosh rounds results near the top of the range to inf)
        // refuted by a rejected rule: the element is the operator's promise, not a finding.
        CheckOutcome::Values(m) if m.premature.is_some() && api.refuted(Oracle::Overflow) => None,
        CheckOutcome::Values(m) if m.premature.is_some() => {
            let p = m.premature.as_ref()?;
            let dtype = m.dtype.map_or("?".to_string(), |d| d.to_string());
            let what = p.what.describe();
            let (reference, how) = if p.extrapolated {
                ("the same call just below the input extrapolates to", Disagreement::Extrapolated { output: m.output })
            } else {
                ("the float64 reference is", Disagreement::Values { output: m.output, dtype: m.dtype, tolerance: m.tolerance })
            };
            let why = squares_clause(m);
            Some(Detection {
                oracle: Oracle::Overflow,
                // No dtype: one cause seen in float16 and float32 is one finding.
                cause: Cause::Premature { output: m.output, what: what.to_string(), squares: m.squares_overflow, powers: m.powers_overflow },
                message: format!(
                    "output {} ({dtype}) is {what} at element {} where {reference} {} (representable in {dtype}): {} of {} elements are such; an intermediate of the computation left the dtype's range{why}",
                    m.output, p.index, p.expected, p.count, m.total
                ),
                signal: None,
                exit: None,
                evidence: Evidence::Differential { check: k, what: how },
            })
        }
        // `overflow` alone judges only premature values.
        CheckOutcome::Values(_) if check.oracle == Oracle::Overflow => None,
        // A relation speaks of finite inputs: negating or scaling an inf proves nothing.
        CheckOutcome::Values(_) if matches!(check.variant, Variant::Relation(_)) && !case.inputs_finite() => None,
        CheckOutcome::Values(m) if matches!(check.variant, Variant::Relation(_)) => {
            let Variant::Relation(r) = &check.variant else { return None };
            let dtype = m.dtype.map_or("scalar".to_string(), |d| d.to_string());
            let s = r.scalar_for(crate::wire::variant::relation::case_seed(case)).map_or(String::new(), |s| format!(" with s = {s}"));
            let why = squares_clause(m);
            detection(
                Cause::Relation { name: r.name.clone(), squares: m.squares_overflow, powers: m.powers_overflow },
                format!(
                    "`{}` does not hold{s}: element {} is {} on the left ({dtype}) and {} on the right; {} of {} elements differ beyond rtol={} atol={}{why}",
                    r.text, m.index, m.actual, m.expected, m.mismatched, m.total, m.tolerance.rtol, m.tolerance.atol
                ),
                Disagreement::Values { output: m.output, dtype: m.dtype, tolerance: m.tolerance },
            )
        }
        CheckOutcome::Values(m) => {
            let dtype = m.dtype.map_or("scalar".to_string(), |d| d.to_string());
            let (actual, expected) = match check.variant {
                Variant::Promote => ("the original", "the float64 reference (rounded)"),
                Variant::Gradient { .. } => ("analytic", "numeric"),
                _ => ("the variant", "the original"),
            };
            // The dtype stays in the message, not the signature: one cause seen in float32 and
            // float64 is one finding.
            let why = squares_clause(m);
            detection(
                Cause::Values { output: m.output, squares: m.squares_overflow, powers: m.powers_overflow },
                format!(
                    "output {} ({dtype}) differs from the {what}: element {} is {} in {actual} and {} in {expected}; {} of {} elements differ beyond rtol={} atol={} (largest difference {}){why}",
                    m.output, m.index, m.actual, m.expected, m.mismatched, m.total, m.tolerance.rtol, m.tolerance.atol, m.max_abs
                ),
                Disagreement::Values { output: m.output, dtype: m.dtype, tolerance: m.tolerance },
            )
        }
        CheckOutcome::Structure { output, what: how } => detection(
            Cause::Structure { output: *output, what: errors::normalize(how) },
            format!("output {output} differs from the {what}: {how}"),
            Disagreement::Structure { output: *output },
        ),
        CheckOutcome::Gradient(g) => {
            let param = api.params.get(g.arg).map_or_else(|| format!("argument {}", g.arg), |p| format!("`{}`", p.name));
            let dtype = case.args.get(g.arg).and_then(|a| a.tensors().filter(|r| r.dtype.is_floating()).nth(g.tensor)).map_or("?".to_string(), |r| r.dtype.to_string());
            let message = match g.kind {
                GradientKind::Numeric => format!(
                    "d/d{param}[{}] ({dtype} input, in float64) of sum(w * outputs) is {} by backward but {} by central differences ({} elements checked, {} skipped where differences cannot be trusted)",
                    g.index, g.analytic, g.numeric, g.checked, g.nonsmooth
                ),
                GradientKind::Forward => format!(
                    "the derivative of sum(w * outputs) along a fixed tangent of {param} ({dtype} input, in float64) is {} by backward but {} by forward mode; finite differences give {}",
                    g.analytic,
                    g.numeric,
                    g.differences.map_or("nothing".to_string(), |d| d.to_string())
                ),
                GradientKind::NonFinite => format!(
                    "d/d{param}[{}] ({dtype} input, in float64) of sum(w * outputs) is {} by backward although every output is finite and central differences give {}",
                    g.index, g.analytic, g.numeric
                ),
                GradientKind::Second => format!(
                    "the second derivative t·H·u of sum(w * outputs) in {param} ({dtype} input, in float64; u projects the gradient, t is a fixed tangent) is {} by double backward but {} by central differences of the gradient",
                    g.analytic, g.numeric
                ),
                GradientKind::Layout => format!(
                    "d/d{param}[{}] ({dtype} input, in float64) of sum(w * outputs) is {} by backward through the case's non-contiguous inputs but {} through contiguous copies of the same values",
                    g.index, g.analytic, g.numeric
                ),
                GradientKind::InPlace => format!(
                    "d/d{param}[{}] ({dtype} input, in float64) of sum(w * output) is {} by backward through the in-place form but {} through the out-of-place one",
                    g.index, g.analytic, g.numeric
                ),
            };
            detection(
                Cause::Gradient { param: param.clone(), against: g.kind },
                message,
                Disagreement::Derivative(super::GradientAt { kind: g.kind, arg: g.arg, tensor: g.tensor, index: g.index }),
            )
        }
        CheckOutcome::Raised { class, message } => {
            // Counted apart (`fuzz::stats`), a spec finding for an argument error: no bug.
            if matches!(check.variant, Variant::Cuda) && matches!(outcome, Outcome::Returned { .. }) && super::device::classify_cuda_only(*class, message).is_some() {
                return None;
            }
            let first = message.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
            match errors::classify(*class, message) {
                ErrorKind::Internal { signature } | ErrorKind::Unchecked { signature } => {
                    detection(Cause::Internal { place: Place::Check(what.to_string()), what: signature }, format!("the {what} fails: {message}"), Disagreement::VariantFails)
                }
                ErrorKind::Argument if matches!(check.variant, Variant::Layout) && errors::is_overlapping_write(message) => None,
                ErrorKind::Argument if matches!(outcome, Outcome::Returned { .. }) => detection(
                    Cause::OnlyVariantRaises { check: what.to_string(), message: errors::normalize(first) },
                    format!("the original call returns but the {what} raises: {message}"),
                    Disagreement::VariantRaises,
                ),
                _ => None,
            }
        }
        CheckOutcome::Returned => {
            if matches!(check.variant, Variant::Promote | Variant::Cuda | Variant::Gradient { .. }) {
                return None;
            }
            let Outcome::Raised { class, message, .. } = outcome else { return None };
            if errors::classify(*class, message) != ErrorKind::Argument {
                return None;
            }
            // An in-place write into an expanded input raises; the other layout copies it apart.
            if matches!(check.variant, Variant::Layout) && errors::is_overlapping_write(message) {
                return None;
            }
            let first = message.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
            detection(
                Cause::OnlyOriginalRaises { message: errors::normalize(first) },
                format!("the original call raises but the {what} returns; the original says: {message}"),
                Disagreement::OriginalRaises,
            )
        }
    }
}

/// The detection for a worker that died or hung inside check `check`.
pub fn judge_in_check(checks: &[Check], check: u32, failure: &Execution) -> Option<Detection> {
    let c = checks.get(check as usize)?;
    let what = c.variant.describe();
    let oracle = oracle_name(c);
    let evidence = Evidence::Differential { check: check as usize, what: Disagreement::VariantFails };
    match failure {
        Execution::Crashed { signal, stderr, frames, between_calls, .. } => Some(Detection {
            oracle,
            cause: super::death_cause(Place::Check(what.to_string()), *signal, stderr, frames, *between_calls),
            message: format!("the worker was killed by {} while running the {what}\n{}", signal_name(*signal), super::tail_with_frames(stderr, frames, *between_calls)),
            signal: Some(Signal(*signal)),
            exit: None,
            evidence,
        }),
        Execution::Exited { code, stderr, .. } => Some(Detection {
            oracle,
            cause: super::exit_cause(Place::Check(what.to_string()), *code, stderr),
            message: format!("the worker exited with status {code} while running the {what}\n{}", super::tail(stderr)),
            signal: None,
            exit: Some(*code),
            evidence,
        }),
        // A variant repeats the call (the gradient check up to 2 * samples + 2 times), so a
        // case near the timeout passes it inside a check without anything hanging; the `hang`
        // oracle judges the call itself.
        Execution::TimedOut { .. } => None,
        _ => None,
    }
}

/// The oracle a check's detections name: `precision` for the float64 reference (but for its
/// premature overflow, `judge_one`), `relation` for every relation's check.
fn oracle_name(check: &Check) -> Oracle {
    if check.oracle == Oracle::Overflow || matches!(check.variant, Variant::Promote | Variant::Defined) {
        return Oracle::Precision;
    }
    if matches!(check.variant, Variant::Relation(_)) {
        return Oracle::Relation;
    }
    check.oracle
}
