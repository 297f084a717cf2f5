//! The gradient through the case's own memory layouts against the gradient through contiguous
//! copies of the same values. A backward kernel that reads a transposed, strided or offset
//! input as if it were contiguous gives another gradient, while forward mode and finite
//! differences, computed on contiguous leaves, see nothing wrong.
//!
//! The views are made from the leaves by differentiable operations (`transpose`, `stack`,
//! `constant_pad_nd` and slicing), so autograd carries the gradient back to the same leaves. An
//! expanded input is left contiguous: its gradient sums over the repeated slices, which is
//! another function of the leaf. Where the forward values already differ between the layouts,
//! the `layout` check has the finding.
use tch::Tensor;

use super::objective::{self, first_difference};
use super::{is_real_floating, mismatch, Probe};
use crate::runtime::checks::Failure;
use crate::runtime::executor::Executor;
use sfz_wire::case::{Case, Layout};
use sfz_wire::outcome::Outcome;
use sfz_wire::tags;
use sfz_wire::variant::{CheckOutcome, GradientKind, Tolerance};

/// The layouts a gradient is compared through.
fn relaid_layout(layout: Layout, ndim: usize) -> bool {
    match layout {
        Layout::Transposed => ndim >= 2,
        Layout::Strided | Layout::Sliced => ndim >= 1,
        Layout::Contiguous | Layout::Expanded => false,
    }
}

/// `t`'s values in `layout`, as a differentiable view of `t` (see `materialize`, which builds
/// the same layouts from recipes).
pub(super) fn relaid(t: &Tensor, layout: Layout) -> Result<Tensor, tch::TchError> {
    let ndim = t.dim();
    if !relaid_layout(layout, ndim) {
        return Ok(t.shallow_clone());
    }
    match layout {
        Layout::Transposed => t.f_transpose(-1, -2)?.f_contiguous()?.f_transpose(-1, -2),
        // Every other element of a last dimension twice as long.
        Layout::Strided => Tensor::f_stack(&[t.shallow_clone(), t.f_zeros_like()?], -1)?.f_flatten(-2, -1)?.f_slice(-1, 0, None::<i64>, 2),
        // A view at offset (1, 1, ...) into a buffer one larger in every dimension.
        _ => {
            let padded = t.f_constant_pad_nd([1i64, 0].repeat(ndim).as_slice())?;
            (0..ndim as i64).try_fold(padded, |v, d| v.f_slice(d, 1, None::<i64>, 1))
        }
    }
}

impl Executor {
    /// The first gradient element that differs between the case's layouts and contiguous
    /// copies, or None (no leaf is relaid, or they agree).
    pub(super) fn relaid_gradient(&mut self, case: &Case, probe: &Probe, tol: Tolerance) -> Result<Option<CheckOutcome>, Failure> {
        // A write into a view writes the buffer around it: another operation. An operator that
        // reads strides by definition computes another function of another layout.
        if probe.mutates || tags::reads_strides(self.op_name(case.op)) {
            return Ok(None);
        }
        let layouts: Vec<Layout> = probe
            .leaves
            .iter()
            .map(|(arg, within, leaf)| {
                let layout = case.args.get(*arg).and_then(|a| a.tensors().nth(*within)).map_or(Layout::Contiguous, |r| r.layout);
                if relaid_layout(layout, leaf.dim()) {
                    layout
                } else {
                    Layout::Contiguous
                }
            })
            .collect();
        if layouts.iter().all(|l| *l == Layout::Contiguous) {
            return Ok(None);
        }
        let leaves: Vec<Tensor> = probe.leaves.iter().map(|(_, _, l)| Ok(l.f_detach()?.copy().set_requires_grad(true))).collect::<Result<_, tch::TchError>>()?;
        let mut k = 0;
        let inputs = probe.inputs.map(|_, t| {
            if !is_real_floating(t) {
                return Ok(t.shallow_clone());
            }
            k += 1;
            tch::with_grad(|| relaid(&leaves[k - 1], layouts[k - 1]))
        })?;
        let called = tch::with_grad(|| self.invoke(case.op, &probe.case, &inputs, &[], true)).map_err(Failure::from)?;
        if !matches!(called.outcome, Outcome::Returned { .. }) {
            return Err(Failure::Skip("the call raised with its inputs relaid".into()));
        }
        // Other forward values are the layout check's finding, not a derivative's.
        if objective::weighted_difference(&called.tensors, &probe.at_x0, &probe.weights)?.is_none_or(|d| d.abs() > tol.atol + tol.rtol * probe.mass) {
            return Ok(None);
        }
        let Some(loss) = tch::with_grad(|| objective::objective_of(&called.tensors, &probe.weights))?.filter(Tensor::requires_grad) else {
            return Ok(None);
        };
        let wrt: Vec<&Tensor> = leaves.iter().collect();
        let Ok(grads) = Tensor::f_run_backward(&[&loss], &wrt, false, false) else {
            return Err(Failure::Skip("backward raised with the inputs relaid".into()));
        };
        // Every leaf: a relaid input changes the others' gradients too (a strided `v` and `g`'s
        // gradient in `_weight_norm_interface`).
        Ok(first_difference(&grads, &probe.grads, tol)?.map(|d| mismatch(probe, GradientKind::Layout, d.leaf, d.index, d.got, d.expected, d.compared, 0)))
    }
}

#[cfg(test)]
mod tests {
    use super::relaid;
    use sfz_wire::case::Layout;
    use tch::{Kind, Tensor};

    /// Each view holds the leaf's values, is laid out as `materialize` lays the recipe out
    /// (not contiguous; a storage offset for `Sliced`), and carries a gradient of ones back.
    #[test]
    fn views_keep_the_values_take_the_layout_and_carry_the_gradient() {
        for layout in [Layout::Transposed, Layout::Strided, Layout::Sliced] {
            let leaf = Tensor::arange(12, (Kind::Double, tch::Device::Cpu)).reshape([3, 4]).set_requires_grad(true);
            let view = relaid(&leaf, layout).unwrap();
            assert!(!view.is_contiguous(), "{layout:?}: {:?}", view.stride());
            assert_eq!(view.size(), leaf.size());
            assert!(view.allclose(&leaf, 0.0, 0.0, false), "{layout:?}");
            match layout {
                Layout::Transposed => assert_eq!(view.stride(), [1, 3]),
                Layout::Strided => assert_eq!(view.stride(), [8, 2]),
                _ => assert_eq!(view.storage_offset(), 6),
            }
            let grad = Tensor::run_backward(&[view.sum(Kind::Double)], &[&leaf], false, false);
            assert!(grad[0].allclose(&leaf.ones_like(), 0.0, 0.0, false), "{layout:?}");
        }
        // A vector has no second dimension to transpose: it stays as it is.
        let v = Tensor::ones([3], (Kind::Double, tch::Device::Cpu));
        assert!(relaid(&v, Layout::Transposed).unwrap().is_contiguous());
    }
}
