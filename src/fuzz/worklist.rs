//! What becomes of a detection: a finding recorded at once (its reproducer and pinned spec on
//! disk), then, beside the campaign, a worker's death confirmed alone, a hang explained or kept,
//! an unconfirmed death traced to its culprit, a finding shrunk, and its input probed for a death
//! of the same defect.
use std::collections::{BinaryHeap, HashMap};
use std::sync::atomic::Ordering;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::findings::{finding_id, Finding, Key, Store};
use crate::gen::Generator;
use crate::oracle;
use crate::plan::ApiPlan;
use crate::wire::case::Case;
use crate::wire::oracle::Oracle;
use crate::wire::variant::Check;
use crate::worker::{Pool, PoolConfig};

use super::{stats, FuzzConfig, Meta, Observer};
use crate::findings::record;
use crate::triage::{alone, also_dies, cost, culprit, shrink};

/// The campaign's findings: how they are made, written, and worked on after.
pub(super) struct Triage<'a> {
    pub plans: &'a [ApiPlan],
    /// Each API's differential checks, as the workers run them.
    pub checks: &'a [Vec<Check>],
    pub store: &'a Store,
    pub counters: &'a stats::Counters,
    pub observer: &'a dyn Observer,
    pub config: &'a FuzzConfig,
    pub generator: &'a Generator,
    /// The pool configuration of the work beside the campaign (one worker, at nice 10).
    pub minimizer: PoolConfig,
    pub torch_version: String,
    pub start: Instant,
}

/// What a finding's worker ran before it died, where a culprit may be.
pub(super) type Earlier = Vec<(u64, Case)>;

/// Later occurrences of a recorded death tried for its confirmation, at most. A campaign records
/// a cause's first occurrence; when that case did not kill a fresh worker alone (which write a
/// process survives depends on its heap), a later one of the same cause may.
pub(super) const LATER_TRIES: u64 = 3;

/// Work for the triage beside the campaign.
pub(super) enum Job {
    /// A finding just recorded.
    New(Finding, Earlier),
    /// A later occurrence of a recorded death (the finding it would be, with the same id).
    Again(Finding, Earlier),
}

impl Job {
    fn finding(&self) -> &Finding {
        match self {
            Job::New(f, _) | Job::Again(f, _) => f,
        }
    }
}

/// The triage's queue, worst first: the findings an earlier run left pending (`--resume`), then
/// by severity (`findings::severity`, worst first), a new finding before a later occurrence of
/// a recorded one, and the newest first. A clock that runs out leaves the least of it undone.
#[derive(Default)]
pub(super) struct Queue {
    state: Mutex<QueueState>,
    ready: Condvar,
}

#[derive(Default)]
struct QueueState {
    jobs: BinaryHeap<Queued>,
    closed: bool,
    pushed: u64,
}

struct Queued {
    /// Greatest first.
    rank: (bool, std::cmp::Reverse<crate::findings::severity::Severity>, bool, u64),
    job: Job,
}

impl PartialEq for Queued {
    fn eq(&self, other: &Self) -> bool {
        self.rank == other.rank
    }
}
impl Eq for Queued {}
impl PartialOrd for Queued {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Queued {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.rank.cmp(&other.rank)
    }
}

impl Queue {
    /// Queues a job; `resumed`: a finding an earlier run left pending, which goes first.
    pub fn push(&self, job: Job, resumed: bool) {
        let mut state = self.state.lock().expect("queue lock");
        state.pushed += 1;
        let severity = crate::findings::severity::of(job.finding());
        let rank = (resumed, std::cmp::Reverse(severity), matches!(job, Job::New(..)), state.pushed);
        state.jobs.push(Queued { rank, job });
        self.ready.notify_one();
    }

    /// The next job, waiting for one while the queue is open; None once it is closed and empty,
    /// or when the triage must stop (`triage::STOP`: what is left stays pending).
    pub fn pop(&self) -> Option<Job> {
        let mut state = self.state.lock().expect("queue lock");
        loop {
            if crate::triage::stopped() {
                return None;
            }
            if let Some(q) = state.jobs.pop() {
                return Some(q.job);
            }
            if state.closed {
                return None;
            }
            state = self.ready.wait_timeout(state, Duration::from_millis(50)).expect("queue lock").0;
        }
    }

    /// No more jobs will come: `pop` ends once the queue is empty.
    pub fn close(&self) {
        self.state.lock().expect("queue lock").closed = true;
        self.ready.notify_all();
    }

    /// Jobs waiting.
    pub fn len(&self) -> usize {
        self.state.lock().expect("queue lock").jobs.len()
    }
}

impl Triage<'_> {
    /// Runs one job of the queue in the minimizer's pool `p`; a new finding whose work ran to
    /// its end is no longer pending.
    pub fn run(&self, p: &Pool, suspects: &mut HashMap<u32, culprit::Place>, job: Job) {
        match job {
            Job::New(finding, earlier) => {
                let id = finding.id.clone();
                if self.work(p, suspects, finding, &earlier) && !crate::triage::stopped() {
                    self.triaged(&id);
                }
            }
            Job::Again(occurrence, earlier) => self.again(p, suspects, occurrence, &earlier),
        }
    }

    /// The plan a finding was made under: its API's, and where two spec files declare the same
    /// API (`torch.multi_margin_loss` in two modules, with other checks), the one at the spec
    /// location the finding names.
    fn plan_of(&self, f: &Finding) -> Option<usize> {
        let named = |i: &usize| self.plans[*i].api.name == f.api;
        let at = |i: &usize| f.spec.is_none() || self.config.locations.get(*i).cloned().flatten() == f.spec;
        (0..self.plans.len()).find(|i| named(i) && at(i)).or_else(|| (0..self.plans.len()).find(named))
    }

    /// Marks finding `id` triaged (`Finding::triage` cleared), as last recorded.
    fn triaged(&self, id: &str) {
        let Some(mut f) = self.store.recorded(id) else { return };
        if f.triage.is_none() {
            return;
        }
        f.triage = None;
        let Some(plan) = self.plan_of(&f).map(|i| &self.plans[i]) else { return };
        if let Err(e) = self.store.update(f.clone(), &record::reproducer(plan, &f)) {
            self.counters.unwritten(format!("the update of finding {}: {e}", f.id));
        }
    }

    /// What generation knew about case `index`, generated again (case `i` is a function of the
    /// seed and `i`).
    pub fn meta_of(&self, index: u64) -> Meta {
        self.generator.case(index).map_or(Meta { conforms: false, violated: None }, |g| Meta { conforms: g.conforms, violated: g.violated })
    }

    /// A finding of case `index`, as the campaign records it.
    pub fn finding(&self, api_index: usize, index: u64, case: &Case, d: oracle::Detection, meta: Meta) -> Finding {
        let plan = &self.plans[api_index];
        let violation = meta.violated.and_then(|v| self.generator.violations(api_index, index).get(v));
        let id = finding_id(&Key { api: plan.api.name.clone(), oracle: d.oracle, cause: d.cause.clone() });
        Finding {
            id: id.clone(),
            api: plan.api.name.clone(),
            aten: plan.binding.qualified(),
            oracle: d.oracle,
            signature: d.cause.to_string(),
            cause: d.cause,
            message: d.message,
            signal: d.signal,
            exit: d.exit,
            seed: self.config.seed,
            case_index: index,
            case: case.clone(),
            inputs: crate::findings::describe::inputs(plan, case),
            repro: format!("repro/{id}.py"),
            elapsed_s: self.start.elapsed().as_secs_f64(),
            sfz_version: env!("CARGO_PKG_VERSION").to_string(),
            torch_version: self.torch_version.clone(),
            mode: Some(
                match (violation.is_some(), meta.conforms) {
                    (true, _) => "violate",
                    (false, true) => "conform",
                    (false, false) => "nonconforming",
                }
                .to_string(),
            ),
            violated: violation.cloned(),
            format: crate::findings::store::FORMAT,
            check: match &d.evidence {
                oracle::Evidence::Differential { check, .. } => self.checks[api_index].get(*check).cloned(),
                _ => None,
            },
            evidence: d.evidence,
            spec: self.config.locations.get(api_index).cloned().flatten(),
            original: None,
            minimization: None,
            pinned: Some(format!("repro/{id}.sfz")),
            confirmed: None,
            calls: None,
            culprit: None,
            explained: None,
            same_as: None,
            known: None,
            triage: None,
        }
    }

    /// Writes a new finding (its reproducer, its pinned spec) and counts it; false for a duplicate.
    pub fn keep(&self, finding: &Finding) -> bool {
        let Some(plan) = self.plan_of(finding).map(|i| &self.plans[i]) else { return false };
        let mut marked;
        let finding = match self.config.baseline.as_ref().and_then(|b| b.matching(finding)) {
            Some(entry) => {
                marked = finding.clone();
                marked.known = Some(entry.name.clone());
                &marked
            }
            None => finding,
        };
        match self.store.record(finding.clone(), &record::reproducer(plan, finding)) {
            Ok(true) => {
                if let Some(p) = &finding.pinned {
                    if let Err(e) = self.store.write_file(p, &record::pinned(plan, finding)) {
                        self.counters.unwritten(format!("{p}: {e}"));
                    }
                }
                self.counters.findings.fetch_add(1, Ordering::Relaxed);
                if finding.known.is_some() {
                    self.counters.known.fetch_add(1, Ordering::Relaxed);
                }
                *self.counters.by_severity.lock().expect("counters lock").entry(crate::findings::severity::of(finding)).or_insert(0) += 1;
                *self.counters.by_oracle.lock().expect("counters lock").entry(finding.oracle).or_insert(0) += 1;
                self.observer.finding(finding);
                true
            }
            Ok(false) => {
                self.counters.duplicates.fetch_add(1, Ordering::Relaxed);
                false
            }
            Err(e) => {
                self.counters.unwritten(format!("finding {}: {e}", finding.id));
                false
            }
        }
    }

    /// Rewrites a recorded finding and its reproducer after work on it.
    fn update(&self, api_index: usize, finding: &Finding) {
        match self.store.update(finding.clone(), &record::reproducer(&self.plans[api_index], finding)) {
            Ok(()) => self.observer.minimized(finding),
            Err(e) => self.counters.unwritten(format!("the update of finding {}: {e}", finding.id)),
        }
    }

    /// The work on one finding beside the campaign, in the minimizer's pool `p`. A dead worker
    /// blames the case in flight; memory corrupted by an earlier case kills it just as well: a
    /// death is confirmed alone first, and one that is not is kept, marked, not shrunk, and the
    /// cases its worker ran before are searched for the culprit. Nor is a hang shrunk (a timeout
    /// per candidate); a confirmed one may be the cost of its input. False when a step that
    /// would not fit before the deadline was left undone: the finding stays pending.
    pub fn work(&self, p: &Pool, suspects: &mut HashMap<u32, culprit::Place>, mut finding: Finding, earlier: &[(u64, Case)]) -> bool {
        let Some(api_index) = self.plan_of(&finding) else { return true };
        // The pool a death is confirmed in goes on to shrink it.
        let mut alone = None;
        if alone::died(&finding) {
            let config = alone::confirm_config(&self.minimizer, &finding);
            // A hang's confirmation lasts its whole timeout: past the deadline, it stays pending.
            if finding.oracle == Oracle::Hang && !crate::triage::fits(config.timeout) {
                return false;
            }
            let confirming = Pool::start(config);
            finding.calls = match &confirming {
                Ok(pool) => alone::confirm(pool, &self.plans[api_index], &self.checks[api_index], &finding),
                Err(_) => Some(1),
            };
            // Cut short by the clock: neither confirmed nor refuted; it stays pending as found.
            if crate::triage::stopped() {
                return false;
            }
            finding.confirmed = Some(finding.calls.is_some());
            alone = confirming.ok().filter(|_| finding.oracle != Oracle::Hang);
        }
        if finding.confirmed == Some(false) {
            match self.blame_culprit(p, earlier, suspects) {
                // The culprit is this finding's own cause (one key) in an earlier case, which
                // kills a fresh worker alone: that case stands for the finding from now on.
                Some(blamed) if blamed.id == finding.id => {
                    self.stands_for_it(p, api_index, &blamed);
                    return true;
                }
                blamed => finding.culprit = blamed.map(|b| b.id),
            }
        }
        if finding.oracle == Oracle::Hang && finding.confirmed == Some(true) {
            // The probe's largest scale may run to the timeout; past the deadline the hang
            // stays pending, to be explained by `--resume`.
            if !crate::triage::fits(self.minimizer.timeout) {
                self.update(api_index, &finding);
                return false;
            }
            finding.explained = cost::explain_hang(p, &finding.case, self.minimizer.timeout);
        }
        if finding.confirmed == Some(false) || finding.oracle == Oracle::Hang {
            self.update(api_index, &finding);
            return true;
        }
        self.shrink_and_follow(p, alone.as_ref(), api_index, &finding);
        true
    }

    /// Shrinks a finding (see `shrink`), and follows the shrunk case into the operators that
    /// also die of it.
    fn shrink_and_follow(&self, p: &Pool, alone: Option<&Pool>, api_index: usize, finding: &Finding) {
        if let Some(shrunk) = self.shrink(p, alone, api_index, finding) {
            if also_dies::applies(&shrunk) {
                self.also_dies(p, api_index, shrunk);
            }
        }
    }

    /// An earlier case of the worker, dead alone of the finding's own cause, stands for the
    /// finding from now on: recorded, then shrunk.
    fn stands_for_it(&self, p: &Pool, api_index: usize, blamed: &Finding) {
        self.update(api_index, blamed);
        self.shrink(p, None, api_index, blamed);
    }

    /// A later occurrence of a recorded death that was not confirmed: confirmed alone, or through
    /// an earlier case of its worker with the same cause, it stands for the finding from now on.
    pub fn again(&self, p: &Pool, suspects: &mut HashMap<u32, culprit::Place>, mut occurrence: Finding, earlier: &[(u64, Case)]) {
        let Some(api_index) = self.plan_of(&occurrence) else { return };
        if self.store.recorded(&occurrence.id).is_none_or(|recorded| recorded.confirmed != Some(false)) {
            return;
        }
        let Ok(confirming) = Pool::start(alone::confirm_config(&self.minimizer, &occurrence)) else { return };
        occurrence.calls = alone::confirm(&confirming, &self.plans[api_index], &self.checks[api_index], &occurrence);
        if occurrence.calls.is_some() {
            occurrence.confirmed = Some(true);
            self.update(api_index, &occurrence);
            let alone = Some(&confirming).filter(|_| occurrence.oracle != Oracle::Hang);
            self.shrink_and_follow(p, alone, api_index, &occurrence);
            return;
        }
        drop(confirming);
        if let Some(blamed) = self.blame_culprit(p, earlier, suspects).filter(|b| b.id == occurrence.id) {
            self.stands_for_it(p, api_index, &blamed);
        }
    }

    /// Shrinks a finding in `p`; a worker's death in a pool of its own (`alone`: the one it was
    /// confirmed in), with the checks it was confirmed with. Returns the finding as updated.
    fn shrink(&self, p: &Pool, alone: Option<&Pool>, api_index: usize, finding: &Finding) -> Option<Finding> {
        let budget = shrink::budget(self.config.minimize.unwrap_or(0));
        let death = alone::died(finding) && finding.oracle != Oracle::Hang;
        let started = (death && alone.is_none()).then(|| Pool::start(alone::alone_config(&self.minimizer, finding, api_index)).ok()).flatten();
        let own = if death { alone.or(started.as_ref()) } else { None };
        let checks = if own.is_some() { alone::judged_alone(finding, &self.checks[api_index]) } else { self.checks[api_index].clone() };
        match shrink::minimize_finding(own.unwrap_or(p), &self.plans[api_index], &checks, self.store, finding, budget) {
            Ok(updated) => {
                self.observer.minimized(&updated);
                Some(updated)
            }
            Err(e) => {
                self.counters.unwritten(format!("the minimized finding {}: {e}", finding.id));
                None
            }
        }
    }

    /// A finding whose input, called alone in a fresh worker, kills it too: the death is recorded
    /// (confirmed on that call) unless it is already, and the finding names it.
    fn also_dies(&self, p: &Pool, api_index: usize, mut finding: Finding) {
        let Some((call, d)) = also_dies::probe(&self.minimizer, &self.plans[api_index], &finding) else { return };
        let key = Key { api: finding.api.clone(), oracle: d.oracle, cause: d.cause.clone() };
        let id = finding_id(&key);
        if !self.store.seen(&key) {
            let mut dead = self.finding(api_index, finding.case_index, &finding.case, d, self.meta_of(finding.case_index));
            dead.calls = Some(call);
            dead.confirmed = Some(true);
            if self.keep(&dead) {
                self.shrink(p, None, api_index, &dead);
            }
        }
        finding.same_as = Some(id);
        self.update(api_index, &finding);
    }

    /// The earlier case that kills a fresh worker by itself, located and confirmed as any death
    /// (the call alone, or one check alone): its finding, recorded (and shrunk) when new.
    /// `suspects`: the APIs found guilty so far, with the place their damage was done.
    fn blame_culprit(&self, p: &Pool, earlier: &[(u64, Case)], suspects: &mut HashMap<u32, culprit::Place>) -> Option<Finding> {
        let found = culprit::find(p, self.plans, self.checks, earlier, suspects, Instant::now() + culprit::SEARCH_TIME)?;
        let api_index = found.case.op as usize;
        let (place, detection, call) = culprit::locate(&self.minimizer, &self.plans[api_index], &self.checks[api_index], &found.case, suspects.get(&found.case.op).copied())?;
        suspects.insert(found.case.op, place);
        let mut blamed = self.finding(api_index, found.index, &found.case, detection, self.meta_of(found.index));
        blamed.calls = Some(call);
        blamed.confirmed = Some(true);
        if self.keep(&blamed) {
            self.shrink(p, None, api_index, &blamed);
        }
        Some(blamed)
    }
}
