//! Which cases run their op's differential checks. A check costs one or more further calls of
//! the op, so checking every case would cut a campaign's throughput several times over; with a
//! share, a worker checks a case when the time it has spent on checked cases is within `share`
//! times the time it spent on everything else, so throughput stays at least `1 / (1 + share)` of
//! the unchecked campaign's. A case of a kind the worker has not checked yet (its op, and each
//! tensor's dtype and rank) is checked regardless: rare kinds are where the checks find most.
use std::collections::HashSet;
use std::time::{Duration, Instant};

use sfz::case::{Arg, Case};

pub struct CheckBudget {
    /// None: every case is checked (confirmation, replay, minimization).
    share: Option<f64>,
    start: Instant,
    checking: Duration,
    seen: HashSet<(u32, Vec<(u8, usize)>)>,
}

/// Kinds remembered at most; past it, the budget alone decides.
const MAX_KINDS: usize = 100_000;

impl CheckBudget {
    pub fn new(share: Option<f64>) -> Self {
        CheckBudget { share, start: Instant::now(), checking: Duration::ZERO, seen: HashSet::new() }
    }

    /// Whether `case` runs its checks.
    pub fn admits(&mut self, case: &Case) -> bool {
        let Some(share) = self.share else { return true };
        if self.seen.len() < MAX_KINDS && self.seen.insert((case.op, kind(case))) {
            return true;
        }
        let other = self.start.elapsed().saturating_sub(self.checking);
        self.checking.as_secs_f64() <= share * other.as_secs_f64()
    }

    /// Records the time a checked case took.
    pub fn spent(&mut self, d: Duration) {
        self.checking += d;
    }
}

/// The dtype and rank of every tensor argument.
fn kind(case: &Case) -> Vec<(u8, usize)> {
    let tensor = |t: &sfz::case::TensorRecipe| (t.dtype as u8, t.shape.len());
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
    fn checks_novel_kinds_then_keeps_to_the_share() {
        let case = Case { op: 0, args: vec![Arg::Int(1)], forward: None };
        let mut b = CheckBudget::new(Some(0.5));
        assert!(b.admits(&case), "a new kind is checked");
        b.spent(Duration::from_secs(3600));
        assert!(!b.admits(&case), "an hour of checks against a moment of anything else");
        let other = Case { op: 1, args: vec![Arg::Int(1)], forward: None };
        assert!(b.admits(&other), "another op's first case is new");
        let mut all = CheckBudget::new(None);
        all.spent(Duration::from_secs(3600));
        assert!(all.admits(&case));
    }
}
