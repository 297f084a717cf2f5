//! Second order (double backward), where libtorch defines it. For one leaf `x`, with fixed
//! projections `u` and `t` of its shape, `t · H u` by differentiating `sum(u * grad)` once more
//! (reverse over reverse) is held to central differences of `s ↦ sum(u * grad(x + s·t))`,
//! trusted as first-order differences are (two step sizes and both one-sided differences
//! agree). H, the Hessian of `sum(w * outputs)`, is symmetric: the two are the same number.
//! A double backward that fails with an internal error where backward ran is a finding too.
use tch::{Kind, Tensor};

use super::super::checks::Failure;
use super::super::executor::Executor;
use super::numeric::{slope, Differences, Estimate, GOLDEN, LARGEST, SMALLEST};
use super::{fresh, objective, status, Probe, MODERATE};
use sfz_wire::outcome::Outcome;
use sfz_wire::variant::{CheckOutcome, GradientKind, GradientMismatch, Tolerance};

/// The gradient of the objective with respect to leaf `leaf` at value `at` (the other leaves
/// as they are), and the leaf it was taken at; with `create_graph`, differentiable once more.
struct GradientAt {
    leaf: Tensor,
    grad: Tensor,
}

impl Executor {
    /// Double backward against differences of the gradient along leaf `leaf`'s tangent: a
    /// finding, or None (they agree, or cannot judge).
    pub(super) fn second_order(&mut self, probe: &Probe, leaf: usize, eps: f64, tol: Tolerance) -> Result<Option<CheckOutcome>, Failure> {
        let x0 = objective::copy_of(&probe.leaves[leaf].2.f_detach()?)?;
        if x0.numel() == 0 {
            return Ok(None);
        }
        // The tangent moves every element: one that ties with another input (atan2 at the
        // origin, maximum's split) sits where the first derivative is a convention, and the
        // second none at all.
        if self.ties(probe, leaf)?.is_some_and(|t| t.contains(&true)) {
            return Ok(None);
        }
        let largest = x0.f_abs()?.f_max()?.f_double_value(&[])?;
        if !largest.is_finite() || largest > LARGEST {
            return Ok(None);
        }
        let u = objective::projection(&x0.size())?;
        let t = objective::tangent(&x0.size(), leaf)?;
        let Some(at) = self.gradient_at(probe, leaf, &x0, true)? else { return Ok(None) };
        // A gradient that does not depend on the leaf (a linear operator) has no second
        // derivative to check.
        if !at.grad.requires_grad() {
            return Ok(None);
        }
        // Where the gradient is already NaN or inf (atan2 at the origin) there is no second
        // derivative to hold double backward to; a first-order NaN is `non_finite`'s to judge.
        if at.grad.f_isfinite()?.f_all()?.f_int64_value(&[])? == 0 {
            return Ok(None);
        }
        // Under grad mode: the projection is part of the graph differentiated again.
        let projected = tch::with_grad(|| at.grad.f_mul(&u)?.f_sum(Kind::Double))?;
        let hu = match Tensor::f_run_backward(&[&projected], &[&at.leaf], false, false) {
            Ok(mut g) => g.remove(0),
            Err(e) => return status("double backward", e.to_string()).map(Some),
        };
        let analytic = if hu.defined() { hu.f_mul(&t)?.f_sum(Kind::Double)?.f_double_value(&[])? } else { 0.0 };
        let mass = at.grad.f_abs()?.f_mul(&u)?.f_sum(Kind::Double)?.f_double_value(&[])?;
        drop((projected, at));
        let Some(estimate) = self.gradient_slope(probe, leaf, &x0, &u, &t, eps * largest.max(SMALLEST), mass)? else { return Ok(None) };
        let finding = |numeric: Estimate| {
            let (arg, tensor, _) = &probe.leaves[leaf];
            Some(CheckOutcome::Gradient(GradientMismatch {
                kind: GradientKind::Second,
                arg: *arg,
                tensor: *tensor,
                index: 0,
                analytic,
                numeric: numeric.value,
                differences: None,
                checked: 1,
                nonsmooth: 0,
            }))
        };
        if !analytic.is_finite() {
            return Ok((estimate.precise(tol) && estimate.value.abs() <= MODERATE).then(|| finding(estimate)).flatten());
        }
        if !estimate.refutes(analytic, tol) {
            return Ok(None);
        }
        // Confirmed with a step 64 times smaller, as first-order findings are.
        let Some(again) = self.gradient_slope(probe, leaf, &x0, &u, &t, eps / 64.0 * largest.max(SMALLEST), mass)? else { return Ok(None) };
        let consistent = again.admits(estimate.value, tol) || estimate.admits(again.value, tol);
        Ok((again.refutes(analytic, tol) && consistent).then(|| finding(again)).flatten())
    }

    /// The slope of `s ↦ sum(u * grad(x0 + s·t))` at 0 by finite differences with step `h`.
    #[allow(clippy::too_many_arguments)]
    fn gradient_slope(&mut self, probe: &Probe, leaf: usize, x0: &Tensor, u: &Tensor, t: &Tensor, h: f64, mass: f64) -> Result<Option<Estimate>, Failure> {
        let mut values = [0.0; 5];
        for (k, s) in [h, -h, GOLDEN * h, -GOLDEN * h, 0.0].into_iter().enumerate() {
            let at = x0.f_add(&t.f_mul_scalar(s)?)?;
            let Some(g) = self.gradient_at(probe, leaf, &at, false)? else { return Ok(None) };
            values[k] = g.grad.f_mul(u)?.f_sum(Kind::Double)?.f_double_value(&[])?;
        }
        let [plus, minus, plus2, minus2, zero] = values;
        let d = Differences { c1: plus - minus, c2: plus2 - minus2, right: plus - zero, left: zero - minus };
        Ok(slope(d, [h, h, GOLDEN * h, GOLDEN * h], mass))
    }

    /// Backward of the objective at leaf `leaf` = `at`; None where the call raised, the
    /// objective does not depend on the leaf, or backward failed (first order judges those).
    fn gradient_at(&mut self, probe: &Probe, leaf: usize, at: &Tensor, create_graph: bool) -> Result<Option<GradientAt>, Failure> {
        let x = objective::copy_of(&at.f_detach()?)?.set_requires_grad(true);
        let inputs = probe.with_leaf(leaf, |_| Ok(x.shallow_clone()))?;
        let called = tch::with_grad(|| -> Result<_, Failure> {
            let given = fresh(&inputs, probe.mutates)?;
            self.invoke(probe.case.op, &probe.case, &given, &[], true).map_err(Failure::from)
        })?;
        if !matches!(called.outcome, Outcome::Returned { .. }) {
            return Ok(None);
        }
        let loss = tch::with_grad(|| objective::objective_of(&called.tensors, &probe.weights))?;
        let Some(loss) = loss.filter(|l| l.requires_grad()) else { return Ok(None) };
        let grad = match tch::with_grad(|| Tensor::f_run_backward(&[&loss], &[&x], create_graph, create_graph)) {
            Ok(mut g) => g.remove(0),
            Err(_) => return Ok(None),
        };
        if !grad.defined() || grad.f_isfinite()?.f_all()?.f_int64_value(&[])? == 0 {
            return Ok(None);
        }
        Ok(Some(GradientAt { leaf: x, grad }))
    }
}
