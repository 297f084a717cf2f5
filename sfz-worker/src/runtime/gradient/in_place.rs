//! The gradient through an operator's in-place twin (`sigmoid_` for `sigmoid`, the one the
//! `inplace` check calls) against the out-of-place gradient. An in-place derivative formula is
//! written separately (it may use the result where the input was overwritten), so it can be
//! wrong where the out-of-place one is right; both are analytic, so they must agree up to
//! float64 rounding. The twin writes into a copy of its input, as `x.clone().sigmoid_()` does
//! under autograd.
use tch::Tensor;

use super::objective::{self, first_difference};
use super::{mismatch, Probe};
use crate::runtime::checks::Failure;
use crate::runtime::executor::Executor;
use sfz_wire::case::Case;
use sfz_wire::outcome::Outcome;
use sfz_wire::variant::{CheckOutcome, GradientKind, Tolerance, Variant};

impl Executor {
    /// A finding where the twin's gradient differs; None where it agrees or cannot be judged:
    /// the operator has no in-place twin among its checks, more than its first output is
    /// differentiated (the twin returns only that one), or the twin's forward values already
    /// differ (the `inplace` check's finding).
    pub(super) fn in_place_gradient(&mut self, case: &Case, probe: &Probe, tol: Tolerance) -> Result<Option<CheckOutcome>, Failure> {
        let twin = self.checks.get(case.op as usize).and_then(|checks| {
            checks.iter().find_map(|c| match c.variant {
                Variant::InPlace { op, .. } => Some(op),
                _ => None,
            })
        });
        let Some(twin) = twin else { return Ok(None) };
        let [Some(weight), rest @ ..] = probe.weights.as_slice() else { return Ok(None) };
        if rest.iter().any(Option::is_some) {
            return Ok(None);
        }
        let leaves: Vec<Tensor> = probe.leaves.iter().map(|(_, _, l)| Ok(l.f_detach()?.copy().set_requires_grad(true))).collect::<Result<_, tch::TchError>>()?;
        // Every input a copy: the twin writes into one, and a leaf may not be written in place.
        let mut k = 0;
        let inputs = probe.inputs.map(|_, t| {
            if t.requires_grad() {
                k += 1;
                tch::with_grad(|| leaves[k - 1].f_mul_scalar(1.0))
            } else {
                objective::copy_of(t)
            }
        })?;
        let called = tch::with_grad(|| self.invoke(twin, &probe.case, &inputs, &[], true)).map_err(Failure::from)?;
        if !matches!(called.outcome, Outcome::Returned { .. }) {
            return Ok(None);
        }
        let written = &called.tensors[..called.tensors.len().min(1)];
        let weights = [Some(weight.shallow_clone())];
        if objective::weighted_difference(written, &probe.at_x0[..1], &weights)?.is_none_or(|d| d.abs() > tol.atol + tol.rtol * probe.mass) {
            return Ok(None);
        }
        let Some(loss) = tch::with_grad(|| objective::objective_of(written, &weights))?.filter(Tensor::requires_grad) else {
            return Ok(None);
        };
        let wrt: Vec<&Tensor> = leaves.iter().collect();
        // A backward of the twin that raises where the out-of-place one did not: the twin's
        // derivative is not implemented, a documented limit.
        let Ok(grads) = Tensor::f_run_backward(&[&loss], &wrt, false, false) else { return Ok(None) };
        Ok(first_difference(&grads, &probe.grads, tol)?.map(|d| mismatch(probe, GradientKind::InPlace, d.leaf, d.index, d.got, d.expected, d.compared, 0)))
    }
}
