//! What the gradient check differentiates and compares: `sum(w * outputs)` for fixed weights,
//! fixed tangents, detached copies, and the seeded choice of elements.
use tch::{Device, Kind, Tensor};

use sfz_wire::variant::Tolerance;

/// A fixed weight per element of every floating output, in [0.5, 1.5): `sum(w * out)` depends
/// on every element, with no two weights of a small output alike.
pub(super) fn weights(outputs: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>, tch::TchError> {
    outputs
        .iter()
        .enumerate()
        .map(|(k, t)| match t {
            Some(t) if t.f_kind()? == Kind::Double => Ok(Some(spread(&t.size(), 0.618_033_988_749_894_9, 0.377 * k as f64)?)),
            _ => Ok(None),
        })
        .collect()
}

/// Detached copies of outputs (None stays None).
pub(super) fn copies(outputs: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>, tch::TchError> {
    outputs.iter().map(|t| t.as_ref().map(copy_of).transpose()).collect()
}

/// A detached copy in memory of its own (a `detach` alone shares the original's storage).
pub(super) fn copy_of(t: &Tensor) -> Result<Tensor, tch::TchError> {
    let mut c = t.f_empty_like()?;
    c.f_copy_(&t.f_detach()?)?;
    Ok(c)
}

/// `sum_k sum(w_k * (a_k - b_k))` over the floating outputs, or None when a side lacks one.
pub(super) fn weighted_difference(a: &[Option<Tensor>], b: &[Option<Tensor>], weights: &[Option<Tensor>]) -> Result<Option<f64>, tch::TchError> {
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
pub(super) fn objective_of(outputs: &[Option<Tensor>], weights: &[Option<Tensor>]) -> Result<Option<Tensor>, tch::TchError> {
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

/// Where two reverse-mode gradients of the same objective differ first.
pub(super) struct Difference {
    pub leaf: usize,
    /// The flat index of the element in the leaf.
    pub index: u64,
    pub got: f64,
    pub expected: f64,
    /// How many elements of the leaf were compared.
    pub compared: u32,
}

/// The first leaf and element where two reverse-mode gradients of the same objective differ
/// beyond `tol` (plus float64 rounding of the largest element: another path may sum in another
/// order). Leaves undefined on a side are passed over.
pub(super) fn first_difference(grads: &[Tensor], reference: &[Tensor], tol: Tolerance) -> Result<Option<Difference>, tch::TchError> {
    for (leaf, (other, expected)) in grads.iter().zip(reference).enumerate() {
        if !other.defined() || !expected.defined() {
            continue;
        }
        let (a, b) = (other.f_to_kind(Kind::Double)?.f_flatten(0, -1)?, expected.f_to_kind(Kind::Double)?.f_flatten(0, -1)?);
        if a.size() != b.size() {
            continue;
        }
        let scale = b.f_abs()?.f_nan_to_num(0.0, 0.0, 0.0)?.f_max()?.f_double_value(&[])?;
        let allowed = b.f_abs()?.f_mul_scalar(tol.rtol)?.f_add_scalar(tol.atol.max(1e-12 * scale))?;
        let apart = a.f_sub(&b)?.f_abs()?.f_gt_tensor(&allowed)?;
        // NaN on one side only differs; NaN on both does not.
        let one_nan = a.f_isnan()?.f_logical_xor(&b.f_isnan()?)?;
        let differs = apart.f_logical_or(&one_nan)?;
        if differs.f_any()?.f_int64_value(&[])? == 0 {
            continue;
        }
        let index = differs.f_to_kind(Kind::Int64)?.f_argmax(0, false)?.f_int64_value(&[])?;
        let (got, expected) = (a.f_double_value(&[index])?, b.f_double_value(&[index])?);
        return Ok(Some(Difference { leaf, index: index as u64, got, expected, compared: a.numel() as u32 }));
    }
    Ok(None)
}

/// Up to `samples` (leaf, element) pairs: every element when there are few, else a seeded
/// spread over all of them, in increasing order.
pub(super) fn pick_elements(sizes: &[u64], samples: usize, seed: u64) -> Vec<(usize, u64)> {
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

/// The tangent forward mode pushes through leaf `leaf`: fixed values in [0.5, 1.5), another
/// low-discrepancy sequence than the weights', so that no tangent is proportional to a weight.
pub(super) fn tangent(size: &[i64], leaf: usize) -> Result<Tensor, tch::TchError> {
    spread(size, 0.754_877_666_246_692_7, 0.569_840_290_998_053_2 + 0.291 * leaf as f64)
}

/// The projection of a leaf's gradient whose derivative double backward gives (`second`):
/// another sequence again, so that it is proportional to no tangent.
pub(super) fn projection(size: &[i64]) -> Result<Tensor, tch::TchError> {
    spread(size, 0.569_840_290_998_053_2, 0.25)
}

/// `frac(i * step + offset) + 0.5` over a tensor of `size` in float64: the sequence the
/// reproducers write out again (`findings::repro::gradient`).
fn spread(size: &[i64], step: f64, offset: f64) -> Result<Tensor, tch::TchError> {
    let n: i64 = size.iter().product();
    let i = Tensor::f_arange(n, (Kind::Double, Device::Cpu))?;
    i.f_mul_scalar(step)?.f_add_scalar(offset)?.f_frac()?.f_add_scalar(0.5)?.f_reshape(size)
}
