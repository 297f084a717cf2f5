//! Whether an output the checks found wrong is one the call leaves unwritten: called again on
//! fresh copies of the same inputs (the generator reseeded by the recipes), a kernel that writes
//! every element returns the same bits; one that returns `empty()` memory returns poison where
//! ATen poisons what it allocates, and otherwise whatever the allocator hands it. Asked only
//! after a check disagreed, so it costs nothing on agreeing cases.
use tch::Tensor;

use super::checks::Failure;
use super::executor::{Called, Executor};
use super::ffi;
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
        // Poisoned first: garbage that the allocator hands out alike on every call (a small
        // output in a freed chunk holds the allocator's own pointer) shows as poison there.
        let poisoned = {
            let inputs = self.materialize(case.op, case, &mut |r| materialize(r)).map_err(Failure::from)?;
            let _poison = Poison::on();
            self.invoke_variant(case.op, case, &inputs, &[])?
        };
        let mut unwritten = match poisoned.tensors.get(output) {
            Some(Some(again)) => shows_poison(first, again)?,
            _ => false,
        };
        for call in 0..CALLS {
            if unwritten {
                break;
            }
            // Memory of the output's size, written and freed just before the call, as many
            // times as calls so far: an output the kernel leaves unwritten is likely to be given
            // another piece of it each time, and to differ.
            let scratch: Vec<Tensor> = (0..8 + call).map(|_| first.f_full_like(7)).collect::<Result<_, _>>()?;
            drop(scratch);
            let inputs = self.materialize(case.op, case, &mut |r| materialize(r)).map_err(Failure::from)?;
            let again = self.invoke_variant(case.op, case, &inputs, &[])?;
            let Some(Some(second)) = again.tensors.get(output) else { return Ok(Written::Determined) };
            unwritten = !same_bits(first, second)?;
        }
        if !unwritten {
            return Ok(Written::Determined);
        }
        Ok(if self.computed_when_nonempty(case, output)? == Some(false) { Written::NotComputed } else { Written::Garbage })
    }

    /// Whether output `output` has elements when every empty dimension of the inputs is made 1;
    /// None when no input is empty or that call cannot be made.
    fn computed_when_nonempty(&mut self, case: &Case, output: usize) -> Result<Option<bool>, Failure> {
        let mut filled = case.clone();
        let mut changed = false;
        for d in filled.args.iter_mut().flat_map(Arg::tensors_mut).flat_map(|r| r.shape.iter_mut()).filter(|d| **d == 0) {
            *d = 1;
            changed = true;
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

/// ATen's poisoning of the memory it allocates uninitialised, on while this lives. Never left on:
/// the checks compare against calls made without it.
struct Poison;

impl Poison {
    fn on() -> Poison {
        // SAFETY: sets two flags of libtorch's global context; the worker is single-threaded.
        unsafe { ffi::sfz_poison_uninitialised(true) };
        Poison
    }
}

impl Drop for Poison {
    fn drop(&mut self) {
        // SAFETY: as in `on`.
        unsafe { ffi::sfz_poison_uninitialised(false) };
    }
}

/// Whether the poisoned call's output differs from the first and is poison (NaN) wherever it
/// does: the deterministic mode's other algorithms (another summation order) differ in other
/// ways. An integer output's poison is its type's largest value; any difference counts there.
fn shows_poison(first: &Tensor, poisoned: &Tensor) -> Result<bool, tch::TchError> {
    if first.size() != poisoned.size() || first.f_kind()? != poisoned.f_kind()? {
        return Ok(false);
    }
    let differs = same_elements(first, poisoned)?.f_logical_not()?;
    if !bool::try_from(differs.f_any()?)? {
        return Ok(false);
    }
    if !(first.is_floating_point() || first.is_complex()) {
        return Ok(true);
    }
    Ok(!bool::try_from(differs.f_logical_and(&poisoned.f_isnan()?.f_logical_not()?)?.f_any()?)?)
}

/// Per element: equal, a NaN equal to a NaN.
fn same_elements(a: &Tensor, b: &Tensor) -> Result<Tensor, tch::TchError> {
    let equal = a.f_eq_tensor(b)?;
    if a.is_floating_point() || a.is_complex() {
        return equal.f_logical_or(&a.f_isnan()?.f_logical_and(&b.f_isnan()?)?);
    }
    Ok(equal)
}

/// Equal shapes, dtypes and values, a NaN equal to a NaN.
fn same_bits(a: &Tensor, b: &Tensor) -> Result<bool, tch::TchError> {
    if a.size() != b.size() || a.f_kind()? != b.f_kind()? {
        return Ok(false);
    }
    bool::try_from(same_elements(a, b)?.f_all()?)
}

#[cfg(test)]
mod tests {
    use super::{same_bits, shows_poison};
    use tch::{Kind, Tensor};

    #[test]
    fn poison_is_nan_wherever_the_poisoned_call_differs() {
        let first = Tensor::from_slice(&[1.0f32, 3e-5]);
        assert!(shows_poison(&first, &Tensor::from_slice(&[1.0f32, f32::NAN])).unwrap());
        assert!(!shows_poison(&first, &first.copy()).unwrap(), "the same values");
        assert!(!shows_poison(&first, &Tensor::from_slice(&[1.0f32 + f32::EPSILON, f32::NAN])).unwrap(), "another rounding too");
        let ints = Tensor::from_slice(&[1i64, 2]);
        assert!(shows_poison(&ints, &Tensor::from_slice(&[1i64, i64::MAX])).unwrap());
    }

    #[test]
    fn nans_in_the_same_places_are_the_same_bits() {
        let a = Tensor::from_slice(&[1.0f32, f32::NAN]);
        assert!(same_bits(&a, &a.copy()).unwrap());
        assert!(!same_bits(&a, &Tensor::from_slice(&[1.0f32, 2.0])).unwrap());
        assert!(!same_bits(&a, &a.to_kind(Kind::Double)).unwrap(), "another dtype");
    }
}
