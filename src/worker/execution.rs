//! What became of one case, seen from the supervisor: an outcome the worker reported, or the
//! worker's death or hang around it. Only the parent sees it; the worker sends `outcome`s.
use serde::{Deserialize, Serialize};

use crate::wire::outcome::Outcome;
use crate::wire::variant::CheckReport;

/// How many cases a worker answered before it died the supervisor keeps with the death.
pub const EARLIER_CASES: usize = 256;

/// What became of one case, seen from the supervisor.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Execution {
    Completed(Outcome),
    /// The worker died by this signal while the case was the oldest in flight. `earlier`: the
    /// cases the same worker answered before, oldest first (up to `EARLIER_CASES`), where damage
    /// the allocator noticed only now may have been done. `frames`: the native frames of the
    /// thread that died, innermost first (`frames::take`), out of `stderr`.
    Crashed {
        signal: i32,
        stderr: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        frames: Vec<super::frames::Frame>,
        /// The worker died between calls of operators (building inputs, comparing, freeing
        /// outputs): a damaged heap noticed there was damaged earlier, and no frame is its site.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        between_calls: bool,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        earlier: Vec<(u64, crate::wire::case::Case)>,
    },
    /// The worker exited (not by signal) while running the case, e.g. `exit()` from inside torch.
    Exited {
        code: i32,
        stderr: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        earlier: Vec<(u64, crate::wire::case::Case)>,
    },
    /// The case ran past the per-case timeout; the worker was killed.
    TimedOut {
        millis: u64,
    },
    /// The case ran with differential checks (see `variant`): its outcome, and one report per
    /// check of its API, in order.
    Checked {
        outcome: Outcome,
        checks: Vec<CheckReport>,
    },
    /// The call itself completed, then the worker died or hung (`failure`: `Crashed`, `Exited`
    /// or `TimedOut`) while running differential check number `check` of the case.
    InCheck {
        check: u32,
        failure: Box<Execution>,
    },
}

impl Execution {
    /// The call's own outcome, when the worker reported one.
    pub fn outcome(&self) -> Option<&Outcome> {
        match self {
            Execution::Completed(o) | Execution::Checked { outcome: o, .. } => Some(o),
            _ => None,
        }
    }

    /// The cases the worker that died answered before this one, oldest first: empty unless it died.
    pub fn earlier(&self) -> &[(u64, crate::wire::case::Case)] {
        match self {
            Execution::Crashed { earlier, .. } | Execution::Exited { earlier, .. } => earlier,
            Execution::InCheck { failure, .. } => failure.earlier(),
            _ => &[],
        }
    }

    /// True when the worker died or was killed (a restart followed).
    pub fn killed_worker(&self) -> bool {
        !matches!(self, Execution::Completed(_) | Execution::Checked { .. })
    }
}
