//! Forward mode: the call again with one leaf a dual tensor (libtorch's forward AD, as
//! `torch.autograd.forward_ad` in Python), whose output tangents give the derivative of
//! `sum(w * outputs)` along the leaf's tangent. Reverse mode gives the same number as
//! `sum(grad * tangent)`; where the two differ, finite differences along the tangent decide
//! which side is wrong, and where they cannot be trusted (a kink, whose subgradients the two
//! modes may choose differently), nothing is reported.
use tch::{Kind, Tensor};

use super::super::checks::{first_line, Failure};
use super::super::executor::Executor;
use super::super::ffi;
use super::numeric::Direction;
use super::{objective, Probe};
use sfz_wire::errors::{classify, ErrorKind};
use sfz_wire::outcome::Outcome;
use sfz_wire::variant::{CheckOutcome, GradientKind, GradientMismatch, Tolerance};

pub(super) enum Verdict {
    /// The modes agree (or cannot be told apart); forward mode's derivative along the tangent.
    Agree { forward: f64 },
    /// Neither mode sees this leaf (the objective does not depend on it).
    NoTangent,
    /// Forward mode is not implemented for the operator (or refused the dual input): why.
    Unsupported(String),
    /// Forward mode failed with an internal error where the call returned: a finding.
    Raised(CheckOutcome),
    /// The two modes disagree and finite differences side with one of them: a finding.
    Differs(CheckOutcome),
}

/// An open forward-AD level, closed on drop (its dual tensors become plain ones again).
struct Level(i64);

impl Level {
    fn enter() -> Option<Level> {
        // SAFETY: no arguments; the shim catches every C++ exception.
        let level = unsafe { ffi::sfz_enter_dual_level() };
        (level >= 0).then_some(Level(level))
    }
}

impl Drop for Level {
    fn drop(&mut self) {
        // SAFETY: the level was entered by `enter` on this thread and is the innermost one.
        unsafe { ffi::sfz_exit_dual_level(self.0) }
    }
}

/// A projection of a derivative and the sum of its terms' magnitudes (what its rounding is
/// relative to).
#[derive(Clone, Copy)]
struct Projection {
    value: f64,
    magnitude: f64,
}

impl Projection {
    /// `sum(a * b)` and `sum(|a| * |b|)`.
    fn of(a: &Tensor, b: &Tensor) -> Result<Projection, tch::TchError> {
        let value = a.f_mul(b)?.f_sum(Kind::Double)?.f_double_value(&[])?;
        let magnitude = a.f_abs()?.f_mul(&b.f_abs()?)?.f_sum(Kind::Double)?.f_double_value(&[])?;
        Ok(Projection { value, magnitude })
    }

    fn close(self, other: f64, other_magnitude: f64, tol: Tolerance) -> bool {
        if !self.value.is_finite() || !other.is_finite() {
            return self.value.is_nan() && other.is_nan() || self.value == other;
        }
        (self.value - other).abs() <= tol.atol + tol.rtol * self.magnitude.max(other_magnitude).max(other.abs())
    }
}

impl Executor {
    /// Reverse against forward mode along leaf `leaf`'s tangent.
    pub(super) fn forward_mode(&mut self, probe: &Probe, leaf: usize, eps: f64, tol: Tolerance) -> Result<Verdict, Failure> {
        let primal = &probe.leaves[leaf].2;
        let tangent = objective::tangent(&primal.size(), leaf)?;
        let grad = &probe.grads[leaf];
        let reverse = if grad.defined() { Projection::of(grad, &tangent)? } else { Projection { value: 0.0, magnitude: 0.0 } };
        let forward = match self.tangent_projection(probe, leaf, &tangent)? {
            Ok(Some(p)) => p,
            Ok(None) if !grad.defined() => return Ok(Verdict::NoTangent),
            Ok(None) => Projection { value: 0.0, magnitude: 0.0 },
            Err(verdict) => return Ok(verdict),
        };
        let agree = Verdict::Agree { forward: forward.value };
        if reverse.close(forward.value, forward.magnitude, tol) {
            return Ok(agree);
        }
        // Both non-finite: `non_finite` judges the gradient itself.
        if !reverse.value.is_finite() && !forward.value.is_finite() {
            return Ok(agree);
        }
        // An element tied with another input (`clip_(x, max=m)` at x == m) has a derivative by
        // convention, which the two modes may choose apart, and the tangent moves every element.
        if self.ties(probe, leaf)?.is_some_and(|tied| tied.contains(&true)) {
            return Ok(agree);
        }
        let Some(numeric) = self.difference(probe, leaf, Direction::Along(&tangent), eps)? else {
            return Ok(agree);
        };
        let sides = |right: Projection, wrong: Projection| numeric.admits(right.value, tol) && numeric.refutes(wrong.value, tol);
        if !sides(reverse, forward) && !sides(forward, reverse) {
            return Ok(agree);
        }
        let (arg, tensor, _) = &probe.leaves[leaf];
        Ok(Verdict::Differs(CheckOutcome::Gradient(GradientMismatch {
            kind: GradientKind::Forward,
            arg: *arg,
            tensor: *tensor,
            index: 0,
            analytic: reverse.value,
            numeric: forward.value,
            differences: Some(numeric.value),
            checked: 1,
            nonsmooth: 0,
        })))
    }

    /// `sum(w * tangent outputs)` with leaf `leaf` dual along `tangent`: None when no output
    /// carries a tangent; the inner Err is the verdict when forward mode cannot run.
    fn tangent_projection(&mut self, probe: &Probe, leaf: usize, tangent: &Tensor) -> Result<Result<Option<Projection>, Verdict>, Failure> {
        let Some(level) = Level::enter() else {
            return Ok(Err(Verdict::Unsupported("a forward-AD level could not be entered".into())));
        };
        let inputs = probe.with_leaf(leaf, |plain| Tensor::f_internal_make_dual(&plain, tangent, level.0))?;
        let called = self.invoke(probe.case.op, &probe.case, &inputs, &[], true).map_err(Failure::from)?;
        if let Outcome::Raised { class, message, .. } = &called.outcome {
            return Ok(Err(match classify(*class, message) {
                ErrorKind::Internal { .. } | ErrorKind::Unchecked { .. } => Verdict::Raised(CheckOutcome::Raised { class: *class, message: format!("forward mode: {message}") }),
                _ => Verdict::Unsupported(first_line(message).to_string()),
            }));
        }
        let mut total: Option<Projection> = None;
        for (out, w) in called.tensors.iter().zip(&probe.weights) {
            let (Some(out), Some(w)) = (out, w) else { continue };
            if out.f_kind()? != Kind::Double {
                continue;
            }
            let (_, t) = Tensor::f_internal_unpack_dual(out, level.0)?;
            if !t.defined() {
                continue;
            }
            if t.size() != w.size() {
                return Ok(Err(Verdict::Unsupported("an output's tangent has another shape than the output".into())));
            }
            let p = Projection::of(&t, w)?;
            total = Some(match total {
                Some(s) => Projection { value: s.value + p.value, magnitude: s.magnitude + p.magnitude },
                None => p,
            });
        }
        // The duals go before their level does.
        drop(called);
        drop(inputs);
        drop(level);
        Ok(Ok(total))
    }
}
