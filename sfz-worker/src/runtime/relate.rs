//! Metamorphic relations in the worker: both sides of a `variant::Relation` evaluated
//! elementwise on the case's tensors (and the calls they make), compared where the guard holds.
use sfz::case::Case;
use sfz::variant::{CheckOutcome, Relation};

use super::checks::Failure;
use super::executor::{Called, Executor, Inputs};

impl Executor {
    pub(super) fn relation(&mut self, _relation: &Relation, _case: &Case, _main: &Called, _inputs: &Inputs) -> Result<CheckOutcome, Failure> {
        Err(Failure::Skip("relations are not evaluated yet".into()))
    }
}
