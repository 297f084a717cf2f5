//! The culprit of an unconfirmed death. A worker that died on a case that, alone in a fresh
//! worker, does not die again most likely met damage an earlier case did: a heap overflow glibc
//! notices at a later free. The supervisor hands over the cases the dead worker answered before
//! (`Execution::earlier`); each is run alone, most recent first, in a fresh worker as a death is
//! confirmed (up to `CONFIRM_CALLS` calls in a row, with its API's checks, as in the campaign),
//! and the first that kills it is the culprit. `locate` then finds where its damage is done (the
//! call alone, or one check alone, as any death is confirmed), which names its finding.
use std::collections::{HashMap, HashSet};
use std::time::Instant;

use crate::oracle::{self, Detection};
use crate::plan::ApiPlan;
use crate::wire::case::Case;
use crate::wire::variant::Check;
use crate::worker::Execution;
use crate::worker::{Pool, PoolConfig};

use super::alone;

/// How long the search for one death's culprit may take (each candidate costs a fork and up to
/// `CONFIRM_CALLS` calls with its checks).
pub const SEARCH_TIME: std::time::Duration = std::time::Duration::from_secs(5);

/// Where a culprit's damage is done, once found: in the call (None) or in check `k`.
pub type Place = Option<usize>;

/// An earlier case that kills a fresh worker by itself: its index in the campaign, and the case.
pub struct Culprit {
    pub index: u64,
    pub case: Case,
}

/// Runs the cases in `earlier` (oldest first, as the supervisor gives them) alone in fresh
/// workers of `pool`, each distinct case once, until one kills its worker by a fatal signal (an
/// out-of-memory kill does not count) or `deadline` passes. Cases of the ops in `suspects` (APIs
/// already found guilty, with where: one damaging API kills many innocents) go first, then the most recent
/// first. `plans` and `checks` are the campaign's, indexed by `Case::op`.
pub fn find(pool: &Pool, plans: &[ApiPlan], checks: &[Vec<Check>], earlier: &[(u64, Case)], suspects: &HashMap<u32, Place>, deadline: Instant) -> Option<Culprit> {
    let mut order: Vec<&(u64, Case)> = earlier.iter().rev().collect();
    order.sort_by_key(|(_, case)| !suspects.contains_key(&case.op));
    let mut tried = HashSet::new();
    for (index, case) in order {
        if Instant::now() >= deadline || super::stopped() {
            return None;
        }
        let Some(plan) = plans.get(case.op as usize) else { continue };
        if !tried.insert(serde_json::to_string(case).unwrap_or_default()) {
            continue;
        }
        let api_checks = checks.get(case.op as usize).map_or(&[][..], Vec::as_slice);
        pool.retire();
        if alone::run_until(pool, case, alone::CONFIRM_CALLS, |exec| kills(plan, api_checks, case, exec)).shown.is_some() {
            pool.retire();
            return Some(Culprit { index: *index, case: case.clone() });
        }
    }
    pool.retire();
    None
}

/// Where `case` kills a fresh worker by itself, as a death is confirmed (`alone::alone_config`):
/// the call alone, then each of its API's checks alone with the call, `known` (the place found
/// for the same API before) first. Returns the place, the death (its evidence naming the check by
/// its place among all the API's checks), and the call, counted from 1, on which it came. The
/// search ran the case with every check: the damage of max_pool2d's gradient check kills a later
/// round's forward call, and the finding to name is the gradient check's.
pub fn locate(config: &PoolConfig, plan: &ApiPlan, checks: &[Check], case: &Case, known: Option<Place>) -> Option<(Place, Detection, u32)> {
    let op = case.op as usize;
    let mut places: Vec<Place> = std::iter::once(None).chain((0..checks.len()).map(Some)).collect();
    if let Some(k) = known {
        places.retain(|p| *p != k);
        places.insert(0, k);
    }
    for place in places {
        let only: Vec<Check> = place.and_then(|k| checks.get(k).cloned()).into_iter().collect();
        let Ok(pool) = Pool::start(alone::only_checks(config, op, only.clone())) else { continue };
        if let Some((at, mut detection)) = alone::run_until(&pool, case, alone::CONFIRM_CALLS, |exec| kills(plan, &only, case, exec)).shown {
            if let (Some(k), oracle::Evidence::Differential { check, .. }) = (place, &mut detection.evidence) {
                *check = k;
            }
            return Some((place, detection, at as u32 + 1));
        }
    }
    None
}

/// The death by a fatal signal (not an out-of-memory kill) a verdict holds, if any.
fn kills(plan: &ApiPlan, checks: &[Check], case: &Case, exec: &Execution) -> Option<Detection> {
    oracle::judge(&plan.api, checks, case, exec).detections.into_iter().find(|d| d.signal.is_some_and(|s| s != oracle::Signal::KILL))
}
