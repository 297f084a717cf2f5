//! Whether a value disagreement with the float64 reference is the layout's: the call with its
//! strided inputs made contiguous (the same values) agrees with the reference. Then the kernel
//! mishandles the strides (`native_group_norm` with a strided bias), and the finding is a
//! `layout` one (`ValueMismatch::strided`), not a numerical cause it is not. The `layout` check
//! itself may not see it: it flips every input, and a kernel that refuses a transposed input
//! raises there instead.
use super::checks::Failure;
use super::executor::Executor;
use super::materialize::materialize;
use sfz_wire::case::{Arg, Case, Layout};
use sfz_wire::variant::{Accuracy, CheckOutcome, Tolerances};

impl Executor {
    /// Whether `case`, whose inputs include a non-contiguous one, agrees with the float64
    /// reference once every input is contiguous. False where no input is strided or where the
    /// operator writes into its inputs.
    pub(super) fn contiguous_agrees(&mut self, case: &Case, tol: &Tolerances, accuracy: Accuracy) -> Result<bool, Failure> {
        if self.mutates(case.op) {
            return Ok(false);
        }
        let mut contiguous = case.clone();
        let mut strided = false;
        for arg in &mut contiguous.args {
            let recipes: Vec<_> = match arg {
                Arg::Tensor(r) => vec![r],
                Arg::TensorList(rs) => rs.iter_mut().collect(),
                _ => continue,
            };
            for r in recipes.into_iter().filter(|r| r.layout != Layout::Contiguous) {
                r.layout = Layout::Contiguous;
                strided = true;
            }
        }
        if !strided {
            return Ok(false);
        }
        // Built as the original was, then copied: an expanded input keeps its repeated values.
        let inputs = self.materialize(case.op, case, &mut |r| materialize(r)?.f_contiguous()).map_err(Failure::from)?;
        let called = self.invoke_variant(case.op, &contiguous, &inputs, &[])?;
        Ok(matches!(self.promote(&contiguous, &called, &inputs, tol, accuracy, false), Ok(CheckOutcome::Agree { .. })))
    }
}
