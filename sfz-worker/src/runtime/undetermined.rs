//! Whether an output the checks found wrong is one the call leaves unwritten: called again on
//! fresh copies of the same inputs (the generator reseeded by the recipes), a kernel that writes
//! every element returns the same bits; one that returns `empty()` memory returns whatever the
//! allocator hands it. Asked only after a check disagreed, so it costs nothing on agreeing cases.
use tch::Tensor;

use super::checks::Failure;
use super::executor::{Called, Executor};
use super::materialize::materialize;
use sfz_wire::case::{Arg, Case};

/// What calling the original again says of one of its outputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Written {
    /// The same bits every time: the values are the kernel's.
    Determined,
    /// Other values on another call: uninitialised memory, a finding of its own.
    Garbage,
    /// Unwritten here, and an output the call does not compute at all for ordinary inputs: on
    /// the same call with every empty dimension made 1, it has no elements (`native_batch_norm`'s
    /// saved statistics in eval mode, allocated with the channels' size only for an empty batch).
    NotComputed,
}

/// Calls after the first: allocations in between move what an unwritten output is given.
const CALLS: usize = 2;

impl Executor {
    /// Whether output `output` of `main` (the call of `case`) is determined by the inputs.
    pub(super) fn written(&mut self, case: &Case, main: &Called, output: usize) -> Result<Written, Failure> {
        let Some(Some(first)) = main.tensors.get(output) else { return Ok(Written::Determined) };
        if first.numel() == 0 {
            return Ok(Written::Determined);
        }
        for _ in 0..CALLS {
            // Memory of the output's size, written and freed just before the call: an output the
            // kernel leaves unwritten is likely to be given it, and to differ.
            let scratch: Vec<Tensor> = (0..8).map(|_| first.f_full_like(7)).collect::<Result<_, _>>()?;
            drop(scratch);
            let inputs = self.materialize(case.op, case, &mut |r| materialize(r)).map_err(Failure::from)?;
            let again = self.invoke_variant(case.op, case, &inputs, &[])?;
            let Some(Some(second)) = again.tensors.get(output) else { return Ok(Written::Determined) };
            if !same_bits(first, second)? {
                return Ok(if self.computed_when_nonempty(case, output)? == Some(false) { Written::NotComputed } else { Written::Garbage });
            }
        }
        Ok(Written::Determined)
    }

    /// Whether output `output` has elements when every empty dimension of the inputs is made 1;
    /// None when no input is empty or that call cannot be made.
    fn computed_when_nonempty(&mut self, case: &Case, output: usize) -> Result<Option<bool>, Failure> {
        let mut filled = case.clone();
        let mut changed = false;
        for arg in &mut filled.args {
            let recipes: &mut [_] = match arg {
                Arg::Tensor(r) => std::slice::from_mut(r),
                Arg::TensorList(rs) => rs,
                _ => continue,
            };
            for r in recipes {
                for d in r.shape.iter_mut().filter(|d| **d == 0) {
                    *d = 1;
                    changed = true;
                }
            }
        }
        if !changed {
            return Ok(None);
        }
        let Ok(inputs) = self.materialize(filled.op, &filled, &mut |r| materialize(r)) else { return Ok(None) };
        let Ok(called) = self.invoke_variant(filled.op, &filled, &inputs, &[]) else { return Ok(None) };
        if !matches!(called.outcome, sfz_wire::outcome::Outcome::Returned { .. }) {
            return Ok(None);
        }
        Ok(called.tensors.get(output).and_then(Option::as_ref).map(|t| t.numel() > 0))
    }
}

/// Equal shapes, dtypes and values, a NaN equal to a NaN.
fn same_bits(a: &Tensor, b: &Tensor) -> Result<bool, tch::TchError> {
    if a.size() != b.size() || a.f_kind()? != b.f_kind()? {
        return Ok(false);
    }
    let mut equal = a.f_eq_tensor(b)?;
    if a.is_floating_point() || a.is_complex() {
        equal = equal.f_logical_or(&a.f_isnan()?.f_logical_and(&b.f_isnan()?)?)?;
    }
    Ok(bool::try_from(equal.f_all()?)?)
}

#[cfg(test)]
mod tests {
    use super::same_bits;
    use tch::{Kind, Tensor};

    #[test]
    fn nans_in_the_same_places_are_the_same_bits() {
        let a = Tensor::from_slice(&[1.0f32, f32::NAN]);
        assert!(same_bits(&a, &a.copy()).unwrap());
        assert!(!same_bits(&a, &Tensor::from_slice(&[1.0f32, 2.0])).unwrap());
        assert!(!same_bits(&a, &a.to_kind(Kind::Double)).unwrap(), "another dtype");
    }
}
