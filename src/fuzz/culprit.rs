//! The culprit of an unconfirmed death. A worker that died on a case that, alone in a fresh
//! worker, does not die again most likely met damage an earlier case did: a heap overflow glibc
//! notices at a later free. The supervisor hands over the cases the dead worker answered before
//! (`Execution::earlier`); each is run alone, most recent first, in a fresh worker as a death is
//! confirmed (up to `CONFIRM_CALLS` calls in a row, with its API's checks, as in the campaign),
//! and the first that kills it is the culprit: a finding of its own API, confirmed like any other.
use std::collections::HashSet;
use std::time::Instant;

use crate::case::Case;
use crate::oracle::{self, Detection};
use crate::plan::ApiPlan;
use crate::variant::Check;
use crate::worker::supervisor::Pool;

use super::record;

/// How long the search for one death's culprit may take (each candidate costs a fork and up to
/// `CONFIRM_CALLS` calls with its checks).
pub const SEARCH_TIME: std::time::Duration = std::time::Duration::from_secs(20);

/// An earlier case that kills a fresh worker by itself.
pub struct Culprit {
    /// Its index in the campaign, and the case.
    pub index: u64,
    pub case: Case,
    /// The death it caused, judged as the campaign judges it.
    pub detection: Detection,
    /// The call, counted from 1, on which the fresh worker died.
    pub call: u32,
}

/// Runs the cases in `earlier` (oldest first, as the supervisor gives them) alone in fresh
/// workers of `pool`, each distinct case once, until one kills its worker by a fatal signal (an
/// out-of-memory kill does not count) or `deadline` passes. Cases of the ops in `suspects` (APIs
/// already found guilty: one damaging API kills many innocents) go first, then the most recent
/// first. `plans` and `checks` are the campaign's, indexed by `Case::op`.
pub fn find(pool: &Pool, plans: &[ApiPlan], checks: &[Vec<Check>], earlier: &[(u64, Case)], suspects: &HashSet<u32>, deadline: Instant) -> Option<Culprit> {
    let mut order: Vec<&(u64, Case)> = earlier.iter().rev().collect();
    order.sort_by_key(|(_, case)| !suspects.contains(&case.op));
    let mut tried = HashSet::new();
    for (index, case) in order {
        if Instant::now() >= deadline {
            return None;
        }
        let Some(plan) = plans.get(case.op as usize) else { continue };
        if !tried.insert(serde_json::to_string(case).unwrap_or_default()) {
            continue;
        }
        let api_checks = checks.get(case.op as usize).map_or(&[][..], Vec::as_slice);
        let kills = |exec: &crate::outcome::Execution| oracle::judge(&plan.api, api_checks, case, exec).detections.into_iter().find(|d| d.signal.is_some_and(|s| s != libc::SIGKILL));
        pool.retire();
        let ran = record::run_until(pool, case, record::CONFIRM_CALLS, kills);
        if let Some((at, detection)) = ran.shown {
            pool.retire();
            return Some(Culprit { index: *index, case: case.clone(), detection, call: at as u32 + 1 });
        }
    }
    pool.retire();
    None
}
