//! The gradient check (∇Fuzz's idea), in float64 on the case's own values. Three ways to the
//! derivative of `sum(w * outputs)` for fixed weights w:
//! - reverse mode (`backward`), the gradient under test;
//! - forward mode along a fixed tangent per input (`dual`): analytic too, so a kink or a large
//!   magnitude does not make the two disagree where their formulas agree;
//! - finite differences (`numeric`), trusted only at elements where two step sizes and both
//!   one-sided differences agree, so a kink or a jump is skipped, not reported.
//!
//! What is a finding, most certain first: backward (or forward mode) failing with an internal
//! error where the call returned; reverse and forward mode disagreeing where finite differences
//! along the tangent side with one of them; a NaN or inf gradient element where the outputs
//! and finite differences are finite and moderate; a gradient through the case's own
//! non-contiguous inputs that differs from the contiguous one (`relaid`), or through the
//! operator's in-place twin from the out-of-place one (`in_place`); a gradient element
//! that differs from trusted finite differences.
mod dual;
mod in_place;
mod numeric;
mod objective;
mod relaid;
mod second;

use tch::{Kind, Tensor};

use super::checks::{first_line, Failure};
use super::executor::{Called, Executor, Inputs};
use numeric::Direction;
use sfz_wire::case::{Arg, Case};
use sfz_wire::errors::{classify, ErrorKind};
use sfz_wire::outcome::{ErrorClass, Outcome};
use sfz_wire::tags;
use sfz_wire::variant::relation::case_seed;
use sfz_wire::variant::{promote_dtype_args, CheckOutcome, GradientKind, GradientMismatch, Tolerance};

/// One gradient check in this many also checks second order (`second`).
const SECOND_ORDER_EVERY: u64 = 4;

/// A true derivative above this is no "moderate" value: a formula that overflows on the way to
/// it is at the edge of float64, not wrong.
const MODERATE: f64 = 1e100;

/// The differentiated call: float64 leaves for every real floating input, and the call's
/// outputs and gradients at them.
pub(super) struct Probe {
    /// The case with its dtype arguments promoted, as the leaves are.
    case: Case,
    /// (case argument, tensor within it, leaf): contiguous float64, requiring grad.
    leaves: Vec<(usize, usize, Tensor)>,
    /// The call's inputs: the leaves in place of the floating tensors.
    inputs: Inputs,
    /// The operator writes into its inputs: every call gets copies (`fresh`).
    mutates: bool,
    weights: Vec<Option<Tensor>>,
    /// The outputs at the case's values, copied.
    at_x0: Vec<Option<Tensor>>,
    /// `sum(|w * outputs|)` over the finite outputs: what their rounding is relative to.
    mass: f64,
    /// Reverse mode's gradient per leaf (undefined where the objective does not depend on it).
    grads: Vec<Tensor>,
}

impl Executor {
    /// The gradient check of one case; `eps` is the relative finite-difference step, `samples`
    /// the elements compared with finite differences.
    pub(super) fn gradient(&mut self, case: &Case, main: &Called, inputs: &Inputs, eps: f64, samples: u32, tol: Tolerance) -> Result<CheckOutcome, Failure> {
        if !matches!(main.outcome, Outcome::Returned { .. }) {
            return Err(Failure::Skip("the call raised".into()));
        }
        if inputs.tensors.iter().any(|t| t.f_kind().is_ok_and(|k| matches!(k, Kind::ComplexHalf | Kind::ComplexFloat | Kind::ComplexDouble))) {
            return Err(Failure::Skip("complex inputs are not differentiated".into()));
        }
        // An infinite scale or bound (`addbmm(alpha = -inf)`) makes every derivative inf or NaN.
        if case.args.iter().any(|a| matches!(a, Arg::Float(v) if !v.is_finite())) {
            return Err(Failure::Skip("a floating argument is infinite".into()));
        }
        if tags::full_rank_gradient(self.op_name(case.op)) && rank_deficient(inputs)? {
            return Err(Failure::Skip("the gradient is documented only for matrices whose leading columns have full rank".into()));
        }
        let probe = match self.reverse(case, inputs)? {
            Ok(probe) => probe,
            Err(raised) => return Ok(raised),
        };
        let mut why_not = Vec::new();
        // A factorization's or solver's two modes round differently by the matrix's condition
        // (a Householder product of large reflectors agrees to 0.3%): they are held to 1%.
        let blas = tags::class(self.op_name(case.op)) == tags::OpClass::BlasLapack;
        let modes = if blas { Tolerance { rtol: tol.rtol.max(1e-2), atol: tol.atol } } else { tol };
        // Per leaf: forward mode's derivative along its tangent (None: it could not run).
        let mut forward = vec![None; probe.leaves.len()];
        for (leaf, along) in forward.iter_mut().enumerate() {
            match self.forward_mode(&probe, leaf, eps, modes)? {
                dual::Verdict::Agree { forward: f } => *along = Some(f),
                dual::Verdict::NoTangent => {}
                dual::Verdict::Unsupported(why) => why_not.push(why),
                dual::Verdict::Raised(outcome) | dual::Verdict::Differs(outcome) => return Ok(outcome),
            }
        }
        if let Some(found) = self.non_finite(&probe, eps, tol, &forward)? {
            return Ok(found);
        }
        // The same derivative through the case's non-contiguous inputs. A failure to call or
        // differentiate there is the `layout` check's to judge.
        if let Ok(Some(found)) = self.relaid_gradient(case, &probe, tol) {
            return Ok(found);
        }
        // The same derivative through the in-place twin, where the operator has one.
        if let Ok(Some(found)) = self.in_place_gradient(case, &probe, tol) {
            return Ok(found);
        }
        // A factorization's or solver's gradient is as ill-conditioned as the matrix (a rank
        // about to drop, singular values about to meet), and finite differences of it are no
        // reference: only the two analytic modes judge BLAS and LAPACK operators.
        if blas {
            return match forward.iter().any(Option::is_some) {
                true => Ok(CheckOutcome::Agree { max_abs: 0.0, max_rel: 0.0 }),
                false => Err(Failure::Skip("finite differences do not judge a BLAS or LAPACK operator's gradient, and forward mode could not run".into())),
            };
        }
        let seed = case_seed(case);
        let first = self.sampled(&probe, eps, samples, tol, seed, &forward, &why_not)?;
        // Second order where first order agrees, on one leaf of one case in `SECOND_ORDER_EVERY`
        // (each costs six calls with backward): a campaign still sees it on every operator.
        if matches!(first, CheckOutcome::Agree { .. }) && seed % SECOND_ORDER_EVERY == 0 {
            let leaf = ((seed / SECOND_ORDER_EVERY) % probe.leaves.len() as u64) as usize;
            if let Ok(Some(found)) = self.second_order(&probe, leaf, eps, tol) {
                return Ok(found);
            }
        }
        Ok(first)
    }

    /// Reverse mode: the leaves, the float64 call, and backward of `sum(w * outputs)`. The
    /// inner Err is a finding: backward failed with an internal error.
    fn reverse(&mut self, case: &Case, inputs: &Inputs) -> Result<Result<Probe, CheckOutcome>, Failure> {
        // Contiguous, so that element i of the storage is element i in logical order.
        let mut leaves: Vec<(usize, usize, Tensor)> = Vec::new();
        let mut position = Vec::new();
        let grad_inputs = inputs.map(|arg, t| {
            if is_real_floating(t) {
                let leaf = t.f_to_kind(Kind::Double)?.f_contiguous()?.f_detach()?.set_requires_grad(true);
                let within = position.iter().filter(|&&a| a == arg).count();
                position.push(arg);
                leaves.push((arg, within, leaf.shallow_clone()));
                Ok(leaf)
            } else {
                Ok(t.shallow_clone())
            }
        })?;
        if leaves.is_empty() {
            return Err(Failure::Skip("no floating input".into()));
        }
        // At an infinite input a gradient is a limit (atan2's at y = -inf is inf/inf), which
        // no formula is held to.
        for (_, _, leaf) in &leaves {
            if leaf.f_isfinite()?.f_all()?.f_int64_value(&[])? == 0 {
                return Err(Failure::Skip("a floating input is NaN or infinite".into()));
            }
        }
        let case2 = promote_dtype_args(case);
        // An operator that writes into its inputs (`abs_`, `index_put_`) is given copies: a
        // leaf cannot be written in place, and each call must start from the same values.
        let mutates = self.mutates(case.op);
        let forward = tch::with_grad(|| -> Result<_, Failure> {
            let given = fresh(&grad_inputs, mutates)?;
            self.invoke(case.op, &case2, &given, &[], true).map_err(Failure::from)
        })?;
        if let Outcome::Raised { message, .. } = &forward.outcome {
            return Err(Failure::Skip(format!("the float64 call raised: {}", first_line(message))));
        }
        // libtorch says which outputs are differentiable: those that require grad (the mean
        // and rstd of `native_layer_norm`, a loss's workspace are not). Only they are weighed.
        // Outputs the math leaves open (singular vectors, eigenvectors: up to a sign or phase)
        // are not weighed either: a loss of them is not gauge-invariant, and torch documents
        // their gradients only for losses that are.
        let open = tags::not_unique(self.op_name(case.op));
        let mut weights = objective::weights(&forward.tensors)?;
        for (k, (w, t)) in weights.iter_mut().zip(&forward.tensors).enumerate() {
            if !t.as_ref().is_some_and(|t| t.requires_grad()) || open.contains(&k) {
                *w = None;
            }
        }
        // Under grad mode too: the objective is part of the graph that backward walks.
        let loss = tch::with_grad(|| objective::objective_of(&forward.tensors, &weights))?;
        let Some(loss) = loss.filter(|l| l.requires_grad()) else {
            return Err(Failure::Skip("no floating output depends differentiably on the floating inputs".into()));
        };
        let wrt: Vec<&Tensor> = leaves.iter().map(|(_, _, t)| t).collect();
        let grads = match Tensor::f_run_backward(&[&loss], &wrt, false, false) {
            Ok(g) => g,
            Err(e) => return status("backward", e.to_string()).map(Err),
        };
        drop(loss);
        // Copies, not detached views: the outputs of a view op (reshape, transpose) share the
        // leaves' memory, which the perturbations write into.
        let at_x0 = objective::copies(&forward.tensors)?;
        // A random operator (`_standard_gamma`, `rrelu`) draws anew on every call: differences
        // of two draws are no derivative.
        let again = self.invoke(case.op, &case2, &fresh(&grad_inputs, mutates)?, &[], true).map_err(Failure::from)?;
        let same = matches!(again.outcome, Outcome::Returned { .. }) && objective::weighted_difference(&again.tensors, &at_x0, &weights)?.is_some_and(|d| d == 0.0);
        if !same {
            return Err(Failure::Skip("the operator returns another value when called again (a random operator)".into()));
        }
        drop(again);
        let mut mass = 0f64;
        for (t, w) in at_x0.iter().zip(&weights) {
            let (Some(t), Some(w)) = (t, w) else { continue };
            if t.f_kind()? == Kind::Double && t.numel() > 0 {
                let finite = t.f_nan_to_num(0.0, 0.0, 0.0)?.f_abs()?;
                mass += finite.f_mul(w)?.f_sum(Kind::Double)?.f_double_value(&[])?;
            }
        }
        Ok(Ok(Probe { case: case2, leaves, inputs: grad_inputs, mutates, weights, at_x0, mass, grads }))
    }

    /// The first NaN or inf element of a gradient while every output is finite, where trusted
    /// finite differences give a finite, moderate value: a derivative formula that overflows or
    /// divides by zero before the derivative does.
    ///
    /// Not where forward mode, along the whole input, is not finite either: where both modes blow up
    /// the point is one where the derivative is documented to (the standard deviation of a
    /// constant, a norm of zeros), whatever differences of the other outputs say.
    fn non_finite(&mut self, probe: &Probe, eps: f64, tol: Tolerance, forward: &[Option<f64>]) -> Result<Option<CheckOutcome>, Failure> {
        for (out, w) in probe.at_x0.iter().zip(&probe.weights) {
            let (Some(out), Some(_)) = (out, w) else { continue };
            if out.f_isfinite()?.f_all()?.f_int64_value(&[])? == 0 {
                return Ok(None);
            }
        }
        for (leaf, grad) in probe.grads.iter().enumerate() {
            if !grad.defined() || forward[leaf].is_some_and(|f| !f.is_finite()) {
                continue;
            }
            let bad = grad.f_isfinite()?.f_logical_not()?.f_reshape([-1i64])?.f_nonzero()?;
            if bad.size()[0] == 0 {
                continue;
            }
            let index = bad.f_int64_value(&[0, 0])? as u64;
            let analytic = grad.f_reshape([-1i64])?.f_double_value(&[index as i64])?;
            let Some(estimate) = self.confirmed(probe, leaf, index, eps, analytic, tol)? else { continue };
            if estimate.value.abs() <= MODERATE {
                return Ok(Some(mismatch(probe, GradientKind::NonFinite, leaf, index, analytic, estimate.value, 1, 0)));
            }
        }
        Ok(None)
    }

    /// Reverse mode against trusted finite differences at up to `samples` elements.
    #[allow(clippy::too_many_arguments)]
    fn sampled(&mut self, probe: &Probe, eps: f64, samples: u32, tol: Tolerance, seed: u64, forward: &[Option<f64>], why_not: &[String]) -> Result<CheckOutcome, Failure> {
        let sizes: Vec<u64> = probe.leaves.iter().map(|(_, _, t)| t.numel() as u64).collect();
        if sizes.iter().all(|&n| n == 0) {
            return Err(Failure::Skip("the floating inputs have no elements".into()));
        }
        // Per leaf: both modes say the input does not matter (round, ceil, nextafter: a
        // gradient of 0 by definition, where finite differences straddle a step): nothing to
        // compare.
        let mut by_definition = Vec::with_capacity(probe.grads.len());
        for (grad, along) in probe.grads.iter().zip(forward) {
            let zero = !grad.defined() || grad.numel() == 0 || grad.f_abs()?.f_max()?.f_double_value(&[])? == 0.0;
            by_definition.push(zero && *along == Some(0.0));
        }
        let ties = (0..probe.leaves.len()).map(|leaf| self.ties(probe, leaf)).collect::<Result<Vec<_>, _>>()?;
        let (mut checked, mut untrusted) = (0u32, 0u32);
        let (mut max_abs, mut max_rel) = (0f64, 0f64);
        for (leaf, index) in objective::pick_elements(&sizes, samples as usize, seed) {
            let grad = &probe.grads[leaf];
            if by_definition[leaf] || ties[leaf].as_ref().is_some_and(|t| t.get(index as usize).copied().unwrap_or(false)) {
                untrusted += 1;
                continue;
            }
            let analytic = if grad.defined() { grad.f_reshape([-1i64])?.f_double_value(&[index as i64])? } else { 0.0 };
            // A non-finite gradient is `non_finite`'s to judge.
            let Some(estimate) = self.difference(probe, leaf, Direction::Element(index), eps)?.filter(|_| analytic.is_finite()) else {
                untrusted += 1;
                continue;
            };
            if estimate.refutes(analytic, tol) {
                if let Some(confirmed) = self.confirmed(probe, leaf, index, eps, analytic, tol)? {
                    return Ok(mismatch(probe, GradientKind::Numeric, leaf, index, analytic, confirmed.value, checked + 1, untrusted));
                }
                untrusted += 1;
                continue;
            }
            if !estimate.precise(tol) {
                untrusted += 1;
                continue;
            }
            checked += 1;
            let diff = (analytic - estimate.value).abs();
            max_abs = max_abs.max(diff);
            if estimate.value != 0.0 {
                max_rel = max_rel.max(diff / estimate.value.abs());
            }
        }
        if checked == 0 {
            let mut why = "no sampled element is a point where finite differences can be trusted".to_string();
            if let Some(first) = why_not.first() {
                why.push_str(&format!("; forward mode: {first}"));
            }
            return Err(Failure::Skip(why));
        }
        Ok(CheckOutcome::Agree { max_abs, max_rel })
    }
}

impl Executor {
    /// Per element of leaf `leaf`, whether another input holds the same value at an output
    /// element the leaf's element reaches (the two broadcast together): at such a tie a
    /// derivative is a convention, not a limit (maximum's split in halves, nextafter's 0 at
    /// `self == other`), which finite differences, smooth across it, do not judge. None where
    /// no other input broadcasts with the leaf.
    pub(super) fn ties(&self, probe: &Probe, leaf: usize) -> Result<Option<Vec<bool>>, Failure> {
        let (arg, within, x) = &probe.leaves[leaf];
        let own = probe.inputs.ranges.get(*arg).map(|&(start, _)| start + within);
        let mut tied: Option<Tensor> = None;
        for (k, t) in probe.inputs.tensors.iter().enumerate() {
            if Some(k) == own || !t.defined() || t.numel() == 0 || t.f_kind().is_ok_and(|k| matches!(k, Kind::ComplexHalf | Kind::ComplexFloat | Kind::ComplexDouble | Kind::Bool))
            {
                continue;
            }
            let Ok(both) = Tensor::f_broadcast_tensors(&[x.f_detach()?, t.f_detach()?.f_to_kind(Kind::Double)?]) else { continue };
            // Back to the leaf's shape: an element ties where any output it reaches does.
            let equal = both[0].f_eq_tensor(&both[1])?.f_to_kind(Kind::Double)?.f_sum_to_size(x.size().as_slice())?.f_gt(0.0)?;
            tied = Some(match tied {
                Some(before) => before.f_logical_or(&equal)?,
                None => equal,
            });
        }
        match tied {
            Some(t) => Ok(Some(Vec::<bool>::try_from(&t.f_reshape([-1i64])?)?)),
            None => Ok(None),
        }
    }

    /// Finite differences at element `index` that refute `analytic` with the step `eps` and
    /// again with a step 64 times smaller, agreeing with each other: a function that varies on
    /// a scale below the first step (atan2 near the origin) changes its estimate as the step
    /// shrinks, while a wrong derivative stays refuted.
    fn confirmed(&mut self, probe: &Probe, leaf: usize, index: u64, eps: f64, analytic: f64, tol: Tolerance) -> Result<Option<numeric::Estimate>, Failure> {
        let at = |ex: &mut Executor, step: f64| ex.difference(probe, leaf, Direction::Element(index), step);
        let (Some(first), Some(second)) = (at(self, eps)?, at(self, eps / 64.0)?) else { return Ok(None) };
        let consistent = second.admits(first.value, tol) || first.admits(second.value, tol);
        Ok((first.refutes(analytic, tol) && second.refutes(analytic, tol) && consistent).then_some(second))
    }
}

/// The finding for a gradient that disagrees.
#[allow(clippy::too_many_arguments)]
fn mismatch(probe: &Probe, kind: GradientKind, leaf: usize, index: u64, analytic: f64, numeric: f64, checked: u32, nonsmooth: u32) -> CheckOutcome {
    let (arg, tensor, _) = &probe.leaves[leaf];
    CheckOutcome::Gradient(GradientMismatch { kind, arg: *arg, tensor: *tensor, index, analytic, numeric, differences: None, checked, nonsmooth })
}

/// What a derivative's failure is: an internal error (or one libtorch does not check) is a
/// finding; "not implemented" and the like are the operator's documented limits, counted apart.
fn status(mode: &str, message: String) -> Result<CheckOutcome, Failure> {
    match classify(ErrorClass::C10, &message) {
        ErrorKind::Internal { .. } | ErrorKind::Unchecked { .. } => Ok(CheckOutcome::Raised { class: ErrorClass::C10, message: format!("{mode}: {message}") }),
        _ => Err(Failure::Skip(format!("{mode} raised: {}", first_line(&message)))),
    }
}

impl Probe {
    /// The probe's inputs with real floating ones detached (copied where the operator writes
    /// into its inputs) and leaf `leaf`'s passed through `replace` (a dual tensor, a moved leaf).
    fn with_leaf(&self, leaf: usize, mut replace: impl FnMut(Tensor) -> Result<Tensor, tch::TchError>) -> Result<Inputs, tch::TchError> {
        let mut floating = 0;
        self.inputs.map(|_, t| {
            if !is_real_floating(t) {
                return Ok(t.shallow_clone());
            }
            floating += 1;
            let plain = if self.mutates { objective::copy_of(t)? } else { t.f_detach()? };
            if floating - 1 == leaf {
                replace(plain)
            } else {
                Ok(plain)
            }
        })
    }
}

/// Inputs for one more call: the probe's own, or (an operator that writes into its inputs)
/// copies of them, which are differentiable copies of the leaves under grad mode.
fn fresh(inputs: &Inputs, mutates: bool) -> Result<Inputs, tch::TchError> {
    inputs.map(|_, t| {
        if !mutates {
            Ok(t.shallow_clone())
        } else if t.requires_grad() {
            t.f_mul_scalar(1.0)
        } else {
            objective::copy_of(t)
        }
    })
}

/// Whether a floating input holds a matrix whose first min(m, n) columns are linearly
/// dependent (a zero column, two equal ones), judged in float64 by `matrix_rank`'s default
/// tolerance.
fn rank_deficient(inputs: &Inputs) -> Result<bool, tch::TchError> {
    for t in &inputs.tensors {
        if !is_real_floating(t) || t.dim() < 2 || t.numel() == 0 {
            continue;
        }
        let size = t.size();
        let k = size[size.len() - 2].min(size[size.len() - 1]);
        let leading = t.f_to_kind(Kind::Double)?.f_narrow(-1, 0, k)?;
        // A NaN or inf is `reverse`'s to skip; the SVD behind the rank refuses it.
        if leading.f_isfinite()?.f_all()?.f_int64_value(&[])? == 0 {
            continue;
        }
        let rank = leading.f_linalg_matrix_rank_atol_rtol_float(None, None, false)?;
        if rank.f_min()?.f_int64_value(&[])? < k {
            return Ok(true);
        }
    }
    Ok(false)
}

fn is_real_floating(t: &Tensor) -> bool {
    t.f_kind().is_ok_and(|k| matches!(k, Kind::Half | Kind::BFloat16 | Kind::Float | Kind::Double))
}
