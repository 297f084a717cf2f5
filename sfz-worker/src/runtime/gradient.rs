//! The gradient check: reverse-mode gradients of a weighted sum of the outputs against central
//! finite differences in float64, on a seeded sample of the input elements.
use tch::{Device, Kind, Tensor};

use super::checks::{first_line, Failure};
use super::executor::{Called, Executor, Inputs};
use sfz_wire::case::Case;
use sfz_wire::errors::{classify, ErrorKind};
use sfz_wire::outcome::{ErrorClass, Outcome};
use sfz_wire::variant::relation::case_seed;
use sfz_wire::variant::{promote_dtype_args, CheckOutcome, GradientMismatch, Tolerance};

impl Executor {
    /// Reverse-mode gradients against central finite differences, in float64.
    pub(super) fn gradient(&mut self, case: &Case, main: &Called, inputs: &Inputs, eps: f64, samples: u32, tol: Tolerance) -> Result<CheckOutcome, Failure> {
        if !matches!(main.outcome, Outcome::Returned { .. }) {
            return Err(Failure::Skip("the call raised".into()));
        }
        if inputs.tensors.iter().any(|t| t.f_kind().is_ok_and(|k| matches!(k, Kind::ComplexHalf | Kind::ComplexFloat | Kind::ComplexDouble))) {
            return Err(Failure::Skip("complex inputs are not differentiated".into()));
        }
        // Leaves: every real floating input, in float64, contiguous (so that element i of the
        // storage is element i in logical order).
        let mut leaves: Vec<(usize, usize, Tensor)> = Vec::new();
        let mut position = Vec::new();
        let grad_inputs = inputs.map(|arg, t| {
            let k = t.f_kind()?;
            if matches!(k, Kind::Half | Kind::BFloat16 | Kind::Float | Kind::Double) {
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
        let case2 = promote_dtype_args(case);
        let forward = tch::with_grad(|| self.invoke(case.op, &case2, &grad_inputs, &[], true));
        let forward = forward.map_err(Failure::from)?;
        if let Outcome::Raised { message, .. } = &forward.outcome {
            return Err(Failure::Skip(format!("the float64 call raised: {}", first_line(message))));
        }
        let weights = weights(&forward.tensors)?;
        // Under grad mode too: the objective is part of the graph that backward walks.
        let objective = tch::with_grad(|| objective_of(&forward.tensors, &weights))?;
        let Some(loss) = objective.filter(|l| l.requires_grad()) else {
            return Err(Failure::Skip("no floating output depends on the floating inputs".into()));
        };
        let wrt: Vec<&Tensor> = leaves.iter().map(|(_, _, t)| t).collect();
        let grads = match Tensor::f_run_backward(&[&loss], &wrt, false, false) {
            Ok(g) => g,
            Err(e) => {
                let message = e.to_string();
                return match classify(ErrorClass::C10, &message) {
                    ErrorKind::Internal { .. } | ErrorKind::Unchecked { .. } => Ok(CheckOutcome::Raised { class: ErrorClass::C10, message }),
                    _ => Err(Failure::Skip(format!("backward raised: {}", first_line(&message)))),
                };
            }
        };
        drop(loss);
        // Copies, not detached views: the outputs of a view op (reshape, transpose) share the
        // leaves' memory, which the perturbations below write into.
        let at_x0 = copies(&forward.tensors)?;
        // The largest finite output magnitude: what a step must change to be seen.
        let mut scale = 0f64;
        for t in at_x0.iter().flatten() {
            if t.f_kind()? == Kind::Double && t.numel() > 0 {
                let finite = t.f_nan_to_num(0.0, 0.0, 0.0)?;
                scale = scale.max(finite.f_abs()?.f_max()?.f_double_value(&[])?);
            }
        }
        // Up to `samples` elements, spread over all leaves, chosen from the recipes' seeds.
        let sizes: Vec<u64> = leaves.iter().map(|(_, _, t)| t.numel() as u64).collect();
        if sizes.iter().all(|&n| n == 0) {
            return Err(Failure::Skip("the floating inputs have no elements".into()));
        }
        let picks = pick_elements(&sizes, samples as usize, case_seed(case));
        let (mut checked, mut nonsmooth) = (0u32, 0u32);
        let (mut max_abs, mut max_rel) = (0f64, 0f64);
        for (leaf, index) in picks {
            let grad = &grads[leaf];
            let analytic = if grad.defined() { grad.f_reshape([-1i64])?.f_double_value(&[index as i64])? } else { 0.0 };
            let data = leaves[leaf].2.f_detach()?.f_reshape([-1i64])?;
            let mut element = data.f_select(0, index as i64)?;
            let x0 = element.f_double_value(&[])?;
            // The steps float64 can take from x0: none from a non-finite element, and none (or a
            // rounded one) from an element so large that x0 + eps rounds back near x0.
            let (up, down) = ((x0 + eps) - x0, x0 - (x0 - eps));
            if !x0.is_finite() || (up - eps).abs() > 1e-3 * eps || (down - eps).abs() > 1e-3 * eps {
                nonsmooth += 1;
                continue;
            }
            let mut at = |x: f64| -> Result<Option<Vec<Option<Tensor>>>, Failure> {
                element.f_copy_(&Tensor::from(x))?;
                let called = self.invoke(case.op, &case2, &grad_inputs, &[], true).map_err(Failure::from)?;
                Ok(if matches!(called.outcome, Outcome::Returned { .. }) { Some(copies(&called.tensors)?) } else { None })
            };
            let plus = at(x0 + eps)?;
            let minus = at(x0 - eps)?;
            element.f_copy_(&Tensor::from(x0))?;
            let (Some(plus), Some(minus)) = (plus, minus) else {
                nonsmooth += 1;
                continue;
            };
            // Differences elementwise before the weighted sum: a difference of two large sums
            // would lose the small change to rounding.
            let (Some(central), Some(right), Some(left)) =
                (weighted_difference(&plus, &minus, &weights)?, weighted_difference(&plus, &at_x0, &weights)?, weighted_difference(&at_x0, &minus, &weights)?)
            else {
                nonsmooth += 1;
                continue;
            };
            let numeric = central / (up + down);
            // A kink (or a jump) within eps makes the one-sided slopes disagree: no derivative
            // there to check.
            if !numeric.is_finite() || !tol.close(right / up, left / down) {
                nonsmooth += 1;
                continue;
            }
            // A change of the outputs below their rounding is invisible to differences: an
            // element of 1e30 absorbs a step of 1e-6 (numeric 0, whatever the derivative).
            if analytic.abs().max(numeric.abs()) * eps < 1e3 * f64::EPSILON * scale {
                nonsmooth += 1;
                continue;
            }
            checked += 1;
            let diff = (analytic - numeric).abs();
            if diff.is_finite() {
                max_abs = max_abs.max(diff);
                if numeric != 0.0 {
                    max_rel = max_rel.max(diff / numeric.abs());
                }
            }
            if !tol.close(analytic, numeric) {
                let (arg, tensor, _) = &leaves[leaf];
                return Ok(CheckOutcome::Gradient(GradientMismatch { arg: *arg, tensor: *tensor, index, analytic, numeric, checked, nonsmooth }));
            }
        }
        if checked == 0 {
            return Err(Failure::Skip("no sampled element is a smooth point".into()));
        }
        Ok(CheckOutcome::Agree { max_abs, max_rel })
    }
}

/// A fixed weight per element of every floating output, in [0.5, 1.5): `sum(w * out)` depends
/// on every element, with no two weights of a small output alike.
fn weights(outputs: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>, tch::TchError> {
    outputs
        .iter()
        .enumerate()
        .map(|(k, t)| match t {
            Some(t) if t.f_kind()? == Kind::Double => {
                let n = t.numel() as i64;
                let i = Tensor::f_arange(n, (Kind::Double, Device::Cpu))?;
                // (i * 0.618... + k * 0.377...) mod 1, a low-discrepancy sequence.
                let frac = i.f_mul_scalar(0.618_033_988_749_894_9)?.f_add_scalar(0.377 * k as f64)?.f_frac()?;
                Ok(Some(frac.f_add_scalar(0.5)?.f_reshape(t.size())?))
            }
            _ => Ok(None),
        })
        .collect()
}

/// Detached copies of outputs (None stays None).
fn copies(outputs: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>, tch::TchError> {
    outputs
        .iter()
        .map(|t| {
            t.as_ref()
                .map(|t| {
                    let mut c = t.f_empty_like()?;
                    c.f_copy_(&t.f_detach()?)?;
                    Ok(c)
                })
                .transpose()
        })
        .collect()
}

/// `sum_k sum(w_k * (a_k - b_k))` over the floating outputs, or None when a side lacks one.
fn weighted_difference(a: &[Option<Tensor>], b: &[Option<Tensor>], weights: &[Option<Tensor>]) -> Result<Option<f64>, tch::TchError> {
    let mut total = 0.0;
    let mut any = false;
    for ((x, y), w) in a.iter().zip(b).zip(weights) {
        let (Some(x), Some(y), Some(w)) = (x, y, w) else { continue };
        if x.size() != w.size() || y.size() != w.size() {
            return Ok(None);
        }
        total += x.f_sub(y)?.f_mul(w)?.f_sum(Kind::Double)?.f_double_value(&[])?;
        any = true;
    }
    Ok(any.then_some(total))
}

/// `sum_k sum(w_k * out_k)` over the floating outputs, or None when there is none.
fn objective_of(outputs: &[Option<Tensor>], weights: &[Option<Tensor>]) -> Result<Option<Tensor>, tch::TchError> {
    let mut total: Option<Tensor> = None;
    for (t, w) in outputs.iter().zip(weights) {
        let (Some(t), Some(w)) = (t, w) else { continue };
        if t.size() != w.size() || t.f_kind()? != Kind::Double {
            continue;
        }
        let term = t.f_mul(w)?.f_sum(Kind::Double)?;
        total = Some(match total {
            Some(s) => s.f_add(&term)?,
            None => term,
        });
    }
    Ok(total)
}

/// Up to `samples` (leaf, element) pairs: every element when there are few, else a seeded
/// spread over all of them, in increasing order.
pub fn pick_elements(sizes: &[u64], samples: usize, seed: u64) -> Vec<(usize, u64)> {
    let total: u64 = sizes.iter().sum();
    let flat: Vec<u64> = if total <= samples as u64 {
        (0..total).collect()
    } else {
        let mut chosen = std::collections::BTreeSet::new();
        let mut h = seed;
        while chosen.len() < samples {
            h = sfz_wire::seed::mix(h);
            chosen.insert(h % total);
        }
        chosen.into_iter().collect()
    };
    flat.into_iter()
        .map(|mut i| {
            let mut leaf = 0;
            while i >= sizes[leaf] {
                i -= sizes[leaf];
                leaf += 1;
            }
            (leaf, i)
        })
        .collect()
}
