//! Which cases run their op's differential checks. A check costs one or more further calls of
//! the op, so checking every case would cut a campaign's throughput several times over; with a
//! share, a worker checks a case when the time it has spent on checked cases is within `share`
//! times the time it spent on everything else, so throughput stays at least `1 / (1 + share)` of
//! the unchecked campaign's. The last part of the share is kept for cases of a kind the worker
//! has not checked yet (its op, and each tensor's dtype and rank): rare kinds are where the
//! checks find most.
use std::collections::HashSet;
use std::time::{Duration, Instant};

use sfz_wire::case::{Arg, Case};

pub struct CheckBudget {
    /// None: every case is checked (confirmation, replay, minimization).
    share: Option<f64>,
    start: Instant,
    checking: Duration,
    seen: HashSet<(u32, Vec<(u8, usize)>)>,
}

/// Kinds remembered at most; past it, the budget alone decides.
const MAX_KINDS: usize = 100_000;

/// The part of the share a case of a kind already checked may use.
const SEEN: f64 = 0.8;

impl CheckBudget {
    pub fn new(share: Option<f64>) -> Self {
        CheckBudget { share, start: Instant::now(), checking: Duration::ZERO, seen: HashSet::new() }
    }

    /// Whether `case` runs its checks: while the checked time is within the share, a case of a
    /// kind not checked yet; while it is within `SEEN` of the share, any case. The share bounds
    /// every check (novel kinds checked regardless took a 20-second campaign over specs/ to 0.41
    /// of its crash-only throughput), and the last part of it is kept for the kinds not seen.
    pub fn admits(&mut self, case: &Case) -> bool {
        let Some(share) = self.share else { return true };
        let other = self.start.elapsed().saturating_sub(self.checking).as_secs_f64();
        let key = (case.op, kind(case));
        let novel = self.seen.len() < MAX_KINDS && !self.seen.contains(&key);
        let admitted = self.checking.as_secs_f64() <= share * other * if novel { 1.0 } else { SEEN };
        if admitted && novel {
            self.seen.insert(key);
        }
        admitted
    }

    /// Records the time a checked case took.
    pub fn spent(&mut self, d: Duration) {
        self.checking += d;
    }
}

/// The dtype and rank of every tensor argument.
fn kind(case: &Case) -> Vec<(u8, usize)> {
    let tensor = |t: &sfz_wire::case::TensorRecipe| (t.dtype as u8, t.shape.len());
    case.args
        .iter()
        .flat_map(|a| match a {
            Arg::Tensor(t) => vec![tensor(t)],
            Arg::TensorList(ts) => ts.iter().map(tensor).collect(),
            _ => Vec::new(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_to_the_share_and_keeps_its_end_for_new_kinds() {
        let case = Case { op: 0, args: vec![Arg::Int(1)], forward: None };
        let other = Case { op: 1, args: vec![Arg::Int(1)], forward: None };
        let mut b = CheckBudget::new(Some(0.5));
        assert!(b.admits(&case), "nothing spent yet");
        b.spent(Duration::from_secs(3600));
        assert!(!b.admits(&case), "an hour of checks against a moment of anything else");
        assert!(!b.admits(&other), "a new kind too: the share bounds every check");
        // 100 s so far, 45 of them checking: 45 <= 1.0 * 55, but not <= 0.8 * 55.
        let mut b = CheckBudget { share: Some(1.0), start: Instant::now() - Duration::from_secs(100), checking: Duration::from_secs(45), seen: HashSet::new() };
        assert!(b.admits(&case), "a new kind gets the whole share");
        assert!(!b.admits(&case), "a seen one only the first part of it");
        assert!(b.admits(&other));
        let mut all = CheckBudget::new(None);
        all.spent(Duration::from_secs(3600));
        assert!(all.admits(&case));
    }
}
