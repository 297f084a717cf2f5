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
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Set when the triage must end now (the campaign's clock ran out, or the grace after a signal
/// did): every loop here stops at its next case, and what it has not finished stays pending
/// (`findings::TriageState::Pending`) for `sfz fuzz --resume` to finish.
pub static STOP: AtomicBool = AtomicBool::new(false);

/// Whether the triage must end now (`STOP`).
pub fn stopped() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// When the triage must have ended (the campaign's deadline less its margin), or None.
static DEADLINE: Mutex<Option<Instant>> = Mutex::new(None);

/// Sets the instant the triage must have ended by (None: no clock).
pub fn set_deadline(deadline: Option<Instant>) {
    *DEADLINE.lock().unwrap_or_else(|e| e.into_inner()) = deadline;
}

/// Whether a case that may run `longest` (a hang's confirmation runs to its timeout) still fits
/// before the triage's deadline; true without one. One that does not is left pending, not
/// started: `STOP` ends loops between cases, not a case in flight.
pub fn fits(longest: Duration) -> bool {
    DEADLINE.lock().unwrap_or_else(|e| e.into_inner()).is_none_or(|d| Instant::now() + longest <= d)
}
