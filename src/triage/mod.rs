//! What happens after a detection, beside the campaign: a worker's death confirmed alone in a
//! fresh worker (`alone`), an unconfirmed one traced to the earlier case that did the damage
//! (`culprit`), a hang explained by the cost of its input (`cost`), a finding shrunk (`shrink`)
//! and its input probed for a death of the same defect (`also_dies`). The campaign's queue of
//! this work is `fuzz::worklist`; `sfz replay` runs a finding alone as confirmation does.
pub mod alone;
pub mod also_dies;
pub mod cost;
pub mod culprit;
pub mod shrink;

use std::sync::atomic::{AtomicBool, Ordering};

/// Set when the triage must end now (the campaign's clock ran out, or the grace after a signal
/// did): every loop here stops at its next case, and what it has not finished stays pending
/// (`findings::TriageState::Pending`) for `sfz fuzz --resume` to finish.
pub static STOP: AtomicBool = AtomicBool::new(false);

/// Whether the triage must end now (`STOP`).
pub fn stopped() -> bool {
    STOP.load(Ordering::Relaxed)
}
