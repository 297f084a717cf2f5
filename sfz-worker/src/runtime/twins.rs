//! The checks that run a twin of the call: the same values in the other memory layout, the
//! out= overload, the in-place one, the call on CUDA. Each must agree with the original call
//! (with the rounding a reordering of the same arithmetic explains).
use tch::{Device, Kind, Tensor};

use super::checks::{compare_allowing, compare_outputs, consistency, cuda_available, first_output, promoted_kind, Failure, Mode, REORDERINGS};
use super::executor::{Called, Executor, Inputs};
use super::materialize::materialize;
use super::representable;
use sfz_wire::binding::ArgSource;
use sfz_wire::case::{Arg, Case, Layout};
use sfz_wire::outcome::{Outcome, Output};
use sfz_wire::tags;
use sfz_wire::variant::{flip_layout, promote_dtype_args, Accuracy, CheckOutcome, Tolerances};

impl Executor {
    /// Each input tensor in the other memory layout.
    pub(super) fn layout(&mut self, case: &Case, main: &Called, given: &Inputs, tol: &Tolerances, accuracy: Accuracy) -> Result<CheckOutcome, Failure> {
        let mut flipped = case.clone();
        let mut changed = false;
        for arg in &mut flipped.args {
            match arg {
                Arg::Tensor(r) => changed |= flip_layout(r),
                Arg::TensorList(rs) => rs.iter_mut().for_each(|r| changed |= flip_layout(r)),
                _ => {}
            }
        }
        if !changed {
            return Err(Failure::Skip("no input has more than one element along its last dimensions".into()));
        }
        // The same values in the other layout: a non-contiguous input is built as the original
        // was and copied contiguous (an expanded one repeats its first slice: rebuilding it
        // contiguous from its recipe would give other values); a contiguous one is rebuilt
        // transposed or strided, which copies the same values.
        let inputs = self
            .materialize(case.op, case, &mut |r| {
                if r.layout == Layout::Contiguous {
                    let mut to = r.clone();
                    flip_layout(&mut to);
                    materialize(&to)
                } else {
                    materialize(r)?.f_contiguous()
                }
            })
            .map_err(Failure::from)?;
        let variant = self.invoke_variant(case.op, &flipped, &inputs, &[])?;
        if let Some(c) = consistency(main, &variant) {
            return Ok(c);
        }
        let verdict = self.reordered(case, &inputs, main, &variant, tol)?;
        if !matches!(verdict, CheckOutcome::Values(_)) || self.mutates(case.op) {
            return Ok(verdict);
        }
        // Each side within what the float64 reference allows it (rounding, the conditioning of
        // the input: a determinant's blocked factorization takes other pivots in another
        // layout) is each its own honest rounding, however far apart the two are.
        let honest = |c: Result<CheckOutcome, Failure>| matches!(c, Ok(CheckOutcome::Agree { .. }));
        // Values the call's dtype cannot hold (int32's 2^31 - 1 summed in bfloat16) round by the
        // order a sum takes them in, which a layout may change: only an element's own
        // arithmetic (a pointwise operator's) must agree then.
        if tags::class(self.op_name(case.op)) != tags::OpClass::Pointwise {
            if let Some(why) = representable::unrepresentable(case, given, main)? {
                return Err(Failure::Skip(why));
            }
        }
        if honest(self.promote(case, main, given, tol, accuracy, false)) && honest(self.promote(&flipped, &variant, &inputs, tol, accuracy, false)) {
            return Ok(CheckOutcome::Agree { max_abs: 0.0, max_rel: 0.0 });
        }
        Ok(verdict)
    }

    /// The out= overload writing into fresh empty tensors.
    pub(super) fn out(&mut self, op: u32, case: &Case, main: &Called, inputs: &Inputs, tol: &Tolerances) -> Result<CheckOutcome, Failure> {
        let slots = self.op(op).map_err(Failure::from)?.binding.args.iter().filter_map(|a| if let ArgSource::Output(k) = a { Some(*k) } else { None }).max();
        let Some(last) = slots else { return Err(Failure::Skip("the out= overload has no output argument".into())) };
        // A functional call that refused to cast its result into the dtype it allocated leaves
        // out='s dtypes a guess: out= then writes into a dtype that can hold it, and no
        // difference says anything.
        if let Outcome::Raised { message, .. } = &main.outcome {
            if message.contains("can't be cast to") {
                return Err(Failure::Skip("the functional call refused a cast out= would be given another dtype for".into()));
            }
        }
        let fallback = inputs.tensors.first().and_then(|t| t.f_kind().ok()).unwrap_or(Kind::Float);
        let mut outs = Vec::new();
        for k in 0..=last {
            let kind = main.tensors.get(k).and_then(Option::as_ref).and_then(|t| t.f_kind().ok()).unwrap_or(fallback);
            outs.push(Tensor::f_empty([0i64], (kind, Device::Cpu))?);
        }
        let variant = self.invoke_variant(op, case, inputs, &outs)?;
        if let Some(c) = consistency(main, &variant) {
            return Ok(c);
        }
        // What the caller sees is the tensors it passed, written.
        let written = Called { outcome: variant.outcome.clone(), tensors: outs.into_iter().map(Some).collect() };
        Ok(compare_outputs(&written, main, tol, Mode::Same))
    }

    /// The in-place twin applied to a fresh copy of argument `arg`.
    pub(super) fn in_place(&mut self, op: u32, arg: usize, case: &Case, main: &Called, tol: &Tolerances) -> Result<CheckOutcome, Failure> {
        let Some(Arg::Tensor(recipe)) = case.args.get(arg) else { return Err(Failure::Skip("the mutated argument is not a tensor".into())) };
        if let Outcome::Returned { outputs, .. } = &main.outcome {
            match outputs.first() {
                Some(Output::Tensor(t)) if t.dtype == Some(recipe.dtype) && t.shape == recipe.shape => {}
                _ => return Err(Failure::Skip("the result's dtype or shape is not the input's, so the in-place form cannot hold it".into())),
            }
        }
        // Fresh copies; an expanded input (many elements sharing memory) is copied contiguous, as
        // `clone()` does in Python: libtorch refuses to write in place into overlapping memory.
        let inputs = self.materialize(case.op, case, &mut |r| if r.layout == Layout::Expanded { materialize(r)?.f_contiguous() } else { materialize(r) }).map_err(Failure::from)?;
        let variant = self.invoke_variant(op, case, &inputs, &[])?;
        if let Some(c) = consistency(main, &variant) {
            return Ok(c);
        }
        let Some(mutated) = inputs.of(arg).first() else { return Err(Failure::Skip("the mutated argument was not built".into())) };
        // Both sides as the original's first output (its dtype and shape are the input's).
        let first = first_output(&main.outcome);
        let written = Called { outcome: first.clone(), tensors: vec![Some(mutated.shallow_clone())] };
        let expected = Called { outcome: first, tensors: main.tensors.iter().take(1).map(|t| t.as_ref().map(Tensor::shallow_clone)).collect() };
        let plain = compare_outputs(&written, &expected, tol, Mode::Same);
        if !matches!(plain, CheckOutcome::Values(_)) {
            return Ok(plain);
        }
        // The in-place kernel may round in another order or at another precision than the
        // out-of-place one (index_add_ scales `source` in the input's dtype before adding):
        // within what each may honestly round is agreement. The inputs above were written
        // into, so the allowance is computed on fresh ones.
        let originals = self.materialize(case.op, case, &mut materialize).map_err(Failure::from)?;
        self.reordered(case, &originals, &expected, &written, tol)
    }

    /// The same inputs on the first CUDA device.
    pub(super) fn cuda(&mut self, case: &Case, main: &Called, inputs: &Inputs, tol: &Tolerances) -> Result<CheckOutcome, Failure> {
        if let Err(why) = cuda_available() {
            return Err(Failure::Skip(why.clone()));
        }
        let on_gpu = inputs.map(|_, t| t.f_to_device(Device::Cuda(0)))?;
        let variant = self.invoke_variant(case.op, case, &on_gpu, &[])?;
        if let Some(c) = consistency(main, &variant) {
            return Ok(c);
        }
        let tensors = variant.tensors.iter().map(|t| t.as_ref().map(|t| t.f_to_device(Device::Cpu)).transpose()).collect::<Result<_, _>>()?;
        let variant = Called { outcome: variant.outcome, tensors };
        self.reordered(case, inputs, main, &variant, tol)
    }

    /// Compares a variant that may sum in another order than the original (the GPU, another
    /// memory layout): within what the two orders may each honestly round (the precision
    /// check's allowance, once per side) is agreement.
    fn reordered(&mut self, case: &Case, inputs: &Inputs, main: &Called, variant: &Called, tol: &Tolerances) -> Result<CheckOutcome, Failure> {
        let plain = compare_outputs(variant, main, tol, Mode::Same);
        if !matches!(plain, CheckOutcome::Values(_)) {
            return Ok(plain);
        }
        // Where BLAS and LAPACK promise nothing (products beyond the range, NaN or inf in the
        // input), another order of their products may honestly end elsewhere.
        if let Some(why) = self.blas_beyond_safe_range(case, inputs)? {
            return Err(Failure::Skip(why));
        }
        // A scalar the compute dtype cannot hold (an exponent of 5e-324 is 0 in float32) may be
        // rounded by one kernel path and kept by another: neither computes what was asked.
        if let Some(why) = representable::unrepresentable_scalar(case, main) {
            return Err(Failure::Skip(why));
        }
        let promoted = inputs.map(|_, t| match promoted_kind(t.f_kind()?, false) {
            Some(k) => t.f_to_kind(k),
            None => Ok(t.shallow_clone()),
        })?;
        let allowance = self.rounding_allowance(case.op, &promote_dtype_args(case), &promoted, main)?;
        let both_sides = allowance.iter().map(|a| a.as_ref().map(|a| a.map(|t| t.f_mul_scalar(REORDERINGS))).transpose()).collect::<Result<Vec<_>, _>>()?;
        Ok(compare_allowing(variant, main, tol, Mode::Same, &both_sides))
    }
}
