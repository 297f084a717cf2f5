//! A fuzzing campaign: the planned APIs and their solved pools in, cases through the worker
//! pool, verdicts into the findings store, a summary out. Case `i` is generated from the seed
//! and `i` alone, so a run with `--seed S --iterations N` executes the same cases every time.
pub mod blame;
pub mod replay;
pub mod spec_findings;
pub mod stats;
mod worklist;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::findings::{self, finding_id, Finding, Key, SpecLocation, Store};
use crate::gen::coverage::Coverage;
use crate::gen::{ApiPools, GenConfig, Generator, Strategy};
use crate::oracle::{self, Status};
use crate::plan::ApiPlan;
pub use crate::plan::Skipped;
use crate::wire::case::Case;
use crate::wire::oracle::Oracle;
use crate::wire::variant::CheckOutcome;
use crate::worker::Execution;
use crate::worker::{Pool, PoolConfig, PoolError};
use spec_findings::{SpecFinding, SpecStore};
pub use stats::Summary;

/// How long and how a campaign runs.
#[derive(Clone, Debug)]
pub struct FuzzConfig {
    pub seed: u64,
    /// Stop after this many cases.
    pub iterations: Option<u64>,
    /// Stop after this long.
    pub time: Option<Duration>,
    pub pool: PoolConfig,
    /// How cases are generated (its seed is `seed`).
    pub gen: GenConfig,
    /// Candidate cases to run per finding while shrinking it (in a worker of its own, beside the
    /// campaign); None: findings are not minimized.
    pub minimize: Option<u64>,
    /// Where each plan's API is specified (parallel to the plans, or empty).
    pub locations: Vec<Option<SpecLocation>>,
    /// Worker deaths (crashes, hangs, out of memory) after which an API is quarantined: its
    /// later cases are generated (case `i` stays a function of the seed and `i`) but not run.
    /// An API that keeps killing workers has long been recorded, costs a restart (a timeout for
    /// a hang) per case, and may corrupt memory that later cases of other APIs die of.
    /// None: never.
    pub quarantine: Option<u64>,
    /// The first case index (a resumed campaign goes on where it stopped).
    pub first_case: u64,
    /// Seconds earlier runs of this campaign took (`--resume`), added to the progress file's.
    pub elapsed_before: f64,
    /// Known causes: their findings are recorded, marked, and counted apart.
    pub baseline: Option<crate::findings::baseline::Baseline>,
    /// When the whole command must be over (`--time`, counted from the command's start): new
    /// cases stop early enough to leave the triage its share (`triage_reserve`), and the triage
    /// stops `END_MARGIN` before it; what it has not finished stays pending. None: `time`
    /// after the start of `run`, if given.
    pub deadline: Option<Instant>,
    /// When the command started, for the time to the first case (None: the start of `run`).
    pub started: Option<Instant>,
}

/// What the end of a campaign takes after the triage stops (its workers killed, the summary
/// and progress written).
pub const END_MARGIN: Duration = Duration::from_millis(400);

/// Cases end this long before the triage's last margin: those in flight finish, the pool stops.
const LAST_CASES: Duration = Duration::from_secs(1);

/// The triage's time after the first SIGINT or SIGTERM (a second one ends the process at once).
pub const SIGNAL_GRACE: Duration = Duration::from_secs(3);

/// The time a queued finding is expected to take in the triage (a confirmation, a shrink).
const TRIAGE_PER_FINDING: Duration = Duration::from_secs(3);

/// The share of a campaign's time that the triage's reserve may take at most.
const TRIAGE_SHARE: f64 = 0.3;

/// How long before `deadline` new cases pause: the findings waiting for triage at
/// `TRIAGE_PER_FINDING` each, at most `TRIAGE_SHARE` of `total`, plus `END_MARGIN`. It grows
/// with the findings, so a campaign that finds much triages much; cases go on once the triage
/// has caught up.
pub fn triage_reserve(waiting: usize, total: Duration) -> Duration {
    (TRIAGE_PER_FINDING * waiting as u32).min(total.mul_f64(TRIAGE_SHARE)) + END_MARGIN
}

/// Where a campaign's pools come from.
pub enum Pools<'a> {
    /// Solved before it, parallel to the plans: every API from the first case (`--iterations`:
    /// case `i` is then the same on any machine).
    Solved(Vec<ApiPools>),
    /// Solved while it runs (`--time`): the first cases come as soon as one API is solved.
    Streamed(&'a Solver<'a>),
}

/// Solving beside a campaign: called once, on a thread of its own, with where each API's pools
/// go and whether the campaign has ended (solving stops then); returns when solving is over.
pub type Solver<'a> = dyn Fn(&(dyn Fn(usize, ApiPools) + Sync), &(dyn Fn() -> bool + Sync)) + Sync + 'a;

/// The campaign's phase, for a progress display.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Phase {
    /// No API solved yet: no case can run.
    Solving,
    /// Cases running.
    Fuzzing,
    /// New cases stopped; `waiting` findings queued for confirming and shrinking.
    Triage { waiting: usize },
}

/// Cases per second while solving runs beside the campaign: enough to start at once and show
/// what the first APIs do, little enough to leave the solver the cores. Measured on 2 cores
/// (`sfz fuzz specs/ --time 2m`, a cold cache), cases at full speed beside the solver halved the
/// APIs solved in the solving share, and with them the findings.
const CASES_WHILE_SOLVING: u32 = 20;

/// The default quarantine threshold.
pub const QUARANTINE_AFTER: u64 = 32;

/// A hang counts for this many deaths towards quarantine (4 hangs under the default).
pub const HANG_WEIGHT: u64 = 8;

/// What the campaign tells its caller while it runs (the CLI draws a progress bar).
pub trait Observer: Sync {
    fn progress(&self, executions: u64, findings: u64, elapsed: Duration);
    /// The phase changed, or the triage's queue did.
    fn phase(&self, _phase: Phase) {}
    fn finding(&self, finding: &Finding);
    /// A finding's case was shrunk (or shrinking found nothing smaller).
    fn minimized(&self, _finding: &Finding) {}
    /// Trouble beside the campaign the user should hear of (a worker that would not start, a
    /// pool's deaths outside any case); the campaign goes on. Only `cli` prints.
    fn trouble(&self, message: &str);
}

/// Set from a signal handler to stop a campaign early; the summary is still produced.
pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// The first stop signal received (`SIGINT`, `SIGTERM`), 0 for none: the exit status says it.
pub static SIGNAL: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

#[derive(Debug, thiserror::Error)]
pub enum FuzzError {
    #[error(transparent)]
    Pool(#[from] PoolError),
    #[error("nothing to fuzz: every API was skipped")]
    NothingToFuzz,
}

/// What generation knew about a case, kept from `next` until its execution is judged.
#[derive(Clone, Copy)]
struct Meta {
    conforms: bool,
    violated: Option<usize>,
}

/// Cases in flight, by index. Sharded so the worker threads rarely meet on a lock.
struct Pending {
    shards: Vec<Mutex<HashMap<u64, Meta>>>,
}

impl Pending {
    fn new() -> Pending {
        Pending { shards: (0..32).map(|_| Mutex::new(HashMap::new())).collect() }
    }

    fn shard(&self, index: u64) -> &Mutex<HashMap<u64, Meta>> {
        &self.shards[(index % self.shards.len() as u64) as usize]
    }

    fn put(&self, index: u64, meta: Meta) {
        self.shard(index).lock().expect("pending lock").insert(index, meta);
    }

    fn take(&self, index: u64) -> Option<Meta> {
        self.shard(index).lock().expect("pending lock").remove(&index)
    }

    fn peek(&self, index: u64) -> Option<Meta> {
        self.shard(index).lock().expect("pending lock").get(&index).copied()
    }

    /// The lowest index still in flight.
    fn lowest(&self) -> Option<u64> {
        self.shards.iter().filter_map(|s| s.lock().expect("pending lock").keys().min().copied()).min()
    }
}

/// Runs the campaign over `plans`.
pub fn run(plans: &[ApiPlan], pools: Pools, skipped: Vec<Skipped>, store: &Store, config: &FuzzConfig, observer: &dyn Observer) -> Result<Summary, FuzzError> {
    // A resumed campaign may have findings to triage and no case left to run.
    let to_triage = if config.minimize.is_some() { store.pending() } else { Vec::new() };
    if matches!(&pools, Pools::Solved(p) if p.iter().all(|p| p.models.is_empty())) && to_triage.is_empty() {
        return Err(FuzzError::NothingToFuzz);
    }
    let names: Vec<String> = plans.iter().map(|p| p.api.name.clone()).collect();
    let gen_config = GenConfig { seed: config.seed, ..config.gen.clone() };
    let generator = Generator::waiting(plans.iter().map(|p| p.api.clone()).collect(), gen_config.clone());
    let (solved, solver) = match pools {
        Pools::Solved(p) => (p, None),
        Pools::Streamed(s) => (Vec::new(), Some(s)),
    };
    let counters = stats::Counters::new(plans.len());
    let coverage: Vec<Coverage> = plans.iter().map(|p| Coverage::new(&p.api)).collect();
    let spec_store = SpecStore::new(store.dir());
    let pending = Pending::new();
    let mut pool_config = config.pool.clone();
    let (ops, checks) = crate::plan::op_table(plans);
    pool_config.ops = ops;
    pool_config.checks = checks.clone();
    let oracles: Vec<Vec<Oracle>> = checks.iter().map(|cs| cs.iter().map(|c| c.oracle).collect()).collect();
    // Shrinking, confirming and tracing findings yield the cores to the campaign's workers.
    let minimizer_config = PoolConfig { workers: 1, in_flight: 8, nice: 10, check_share: None, ..pool_config.clone() };
    let pool = Pool::start(pool_config)?;
    let queue = worklist::Queue::default();
    crate::triage::STOP.store(false, Ordering::Relaxed);
    // Findings an earlier run of this folder left pending go first.
    let to_triage_count = to_triage.len();
    for f in to_triage {
        queue.push(worklist::Job::New(f, Vec::new()), true);
    }
    let torch_version = pool.torch_version().to_string();

    let start = Instant::now();
    let deadline = config.deadline.or_else(|| config.time.map(|t| start + t));
    crate::triage::set_deadline(deadline.map(|d| d.checked_sub(END_MARGIN).unwrap_or(d)));
    // The time cases may take, the triage's share of which is capped (`triage_reserve`).
    let total = deadline.map_or(Duration::ZERO, |d| d.saturating_duration_since(start));
    let first_case: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    let next_index = AtomicU64::new(config.first_case);
    // Every case below the lowest one in flight is judged and its findings are on disk. An
    // index enters the in-flight set under this lock as it is taken, so none is ever between.
    let dispatch = Mutex::new(());
    let reserve = || {
        let _guard = dispatch.lock().expect("dispatch lock");
        let index = next_index.fetch_add(1, Ordering::Relaxed);
        pending.put(index, Meta { conforms: true, violated: None });
        index
    };
    let judged_below = || {
        let _guard = dispatch.lock().expect("dispatch lock");
        pending.lowest().unwrap_or_else(|| next_index.load(Ordering::Relaxed).min(config.iterations.unwrap_or(u64::MAX)))
    };
    let progress_lock = Mutex::new(());
    let save_progress = |finished: bool| {
        let _guard = progress_lock.lock().expect("progress lock");
        // The command's time, solving included: `--time` counts all of it.
        let p = crate::campaign::Progress { next_case: judged_below(), elapsed_s: config.elapsed_before + config.started.unwrap_or(start).elapsed().as_secs_f64(), finished };
        // Best effort: without it a resumed campaign repeats more cases, and loses nothing.
        let _ = p.write(store.dir());
    };
    // An API joins from the next case index: none below it was made without it and is made
    // again with it (`Generator::join`). One without models is skipped, under the naive
    // strategy too: its pool holds the one model that proved its constraints satisfiable.
    let join = |api: usize, pools: ApiPools| {
        if pools.models.is_empty() {
            return;
        }
        let prepared = generator.prepare(api, pools);
        let _guard = dispatch.lock().expect("dispatch lock");
        generator.join(api, prepared, next_index.load(Ordering::Relaxed));
    };
    for (api, pools) in solved.into_iter().enumerate() {
        join(api, pools);
    }
    let solving = AtomicBool::new(solver.is_some());
    // Cases wait for the triage (`triage_reserve`).
    let paused = AtomicBool::new(false);
    // When the last case while solving was dispatched.
    let last_while_solving: Mutex<Option<Instant>> = Mutex::new(None);
    let quarantined = AtomicU64::new(0);
    let next = || -> Option<(u64, Case)> {
        let (index, generated) = loop {
            // A finding that could not be written stops the campaign: the next ones would be
            // lost too.
            let unwritable = counters.unwritten.load(Ordering::Relaxed) > 0;
            let now = Instant::now();
            let over = deadline.is_some_and(|d| now + triage_reserve(0, total) + LAST_CASES >= d);
            if INTERRUPTED.load(Ordering::Relaxed) || unwritable || over {
                return None;
            }
            // Cases pause while the findings waiting need the time left, and go on if the
            // triage is done with them first: the campaign takes all of its time.
            let reserved = deadline.is_some_and(|d| now + triage_reserve(queue.len(), total) >= d);
            paused.store(reserved, Ordering::Relaxed);
            if reserved {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
            let solving_now = solving.load(Ordering::Relaxed);
            // Every API so far quarantined: wait for the next to be solved.
            let all_quarantined = quarantined.load(Ordering::Relaxed) >= generator.joined() as u64;
            if all_quarantined && !solving_now {
                return None;
            }
            if all_quarantined {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
            // While solving runs, cases trickle (`CASES_WHILE_SOLVING`): the solver keeps the
            // cores, and the campaign's breadth, the APIs it reaches, comes from it.
            if solving_now {
                let mut last = last_while_solving.lock().expect("solving lock");
                let due = last.map_or(Instant::now(), |t| t + Duration::from_secs(1) / CASES_WHILE_SOLVING);
                let now = Instant::now();
                if now < due {
                    drop(last);
                    std::thread::sleep(due - now);
                    continue;
                }
                *last = Some(now);
            }
            let index = reserve();
            if config.iterations.is_some_and(|n| index >= n) {
                pending.take(index);
                return None;
            }
            let Some(generated) = generator.case(index) else {
                pending.take(index);
                return None;
            };
            let c = &counters.apis[generated.api];
            if !c.quarantined.load(Ordering::Relaxed) {
                break (index, generated);
            }
            pending.take(index);
            c.quarantined_cases.fetch_add(1, Ordering::Relaxed);
        };
        if !generated.conforms && generated.violated.is_none() {
            counters.apis[generated.api].nonconforming.fetch_add(1, Ordering::Relaxed);
        }
        pending.put(index, Meta { conforms: generated.conforms, violated: generated.violated });
        first_case.get_or_init(Instant::now);
        Some((index, Case { op: generated.api as u32, args: generated.args, forward: generated.forward }))
    };
    let triage =
        worklist::Triage { plans, checks: &checks, store, counters: &counters, observer, config, generator: &generator, minimizer: minimizer_config, torch_version, start };
    let judge = |index: u64, case: &Case, exec: Execution| {
        let api_index = case.op as usize;
        let Some(plan) = plans.get(api_index) else { return };
        // A case whose entry is gone (it was re-sent after a worker died) is generated again:
        // case `index` is a function of the seed and the index. The entry leaves only once
        // the case's findings are on disk, so the progress file never passes a case in work.
        let meta = pending.peek(index).unwrap_or_else(|| triage.meta_of(index));
        let violation = meta.violated.and_then(|v| generator.violations(api_index, index).get(v));
        let verdict = oracle::judge(&plan.api, &checks[api_index], case, &exec);
        counters.count(api_index, verdict.status, true);
        counters.implausible(&verdict.implausible);
        if exec.killed_worker() {
            counters.restarts.fetch_add(1, Ordering::Relaxed);
            let c = &counters.apis[api_index];
            let deaths = c.worker_deaths.fetch_add(1, Ordering::Relaxed) + 1;
            let hung = matches!(exec, Execution::TimedOut { .. });
            let hangs = c.hangs.fetch_add(u64::from(hung), Ordering::Relaxed) + u64::from(hung);
            // A hang costs a whole timeout, hundreds of crashes' worth of restarts.
            let over = |q: u64| deaths >= q || hangs >= (q / HANG_WEIGHT).max(1);
            if config.quarantine.is_some_and(over) && !c.quarantined.swap(true, Ordering::Relaxed) {
                quarantined.fetch_add(1, Ordering::Relaxed);
            }
        }
        if let Execution::Checked { checks: reports, .. } = &exec {
            counters.checks(&oracles[api_index], reports);
            counters.per_check(api_index, reports);
        }
        let rejected = matches!(verdict.status, Status::Invalid | Status::Schema);
        let c = &counters.apis[api_index];
        // The worker words a forward's error so (`runtime::forward`).
        if rejected && verdict.error.as_deref().is_some_and(|e| e.starts_with("the forward `")) {
            c.forward_rejected.fetch_add(1, Ordering::Relaxed);
        }
        match violation {
            Some(v) => {
                c.violate.fetch_add(1, Ordering::Relaxed);
                if rejected {
                    c.violate_rejected.fetch_add(1, Ordering::Relaxed);
                    if verdict.error.as_deref().is_some_and(|e| blame::matches(v.category, &v.params, e)) {
                        c.violate_matched.fetch_add(1, Ordering::Relaxed);
                    }
                } else if verdict.status == Status::Ok {
                    c.violate_accepted.fetch_add(1, Ordering::Relaxed);
                    counters.accepted_violation(&plan.api.name, &v.text);
                }
            }
            None if meta.conforms => {
                c.conform.fetch_add(1, Ordering::Relaxed);
                // Validity feedback: libtorch rejecting a case the spec calls valid means the
                // spec misses a constraint.
                if rejected {
                    c.conform_rejected.fetch_add(1, Ordering::Relaxed);
                    if let Some(e) = &verdict.error {
                        counters.rejection(&plan.api.name, e);
                        record_spec_finding(&spec_store, &counters, plan, case, index, config.seed, e);
                    }
                }
                // An argument check only the CUDA side makes, for an input the spec allows.
                if let Execution::Checked { checks: reports, .. } = &exec {
                    for (oracle, r) in oracles[api_index].iter().zip(reports) {
                        if let (Oracle::Cuda, CheckOutcome::Raised { class, message }) = (oracle, &r.outcome) {
                            if crate::oracle::device::classify_cuda_only(*class, message) == Some(crate::oracle::device::DeviceError::Argument) {
                                record_spec_finding(&spec_store, &counters, plan, case, index, config.seed, &format!("on CUDA only: {message}"));
                            }
                        }
                    }
                }
            }
            None => {}
        }
        coverage[api_index].record(&plan.api, &case.args, verdict.status == Status::Ok);
        counters.apis[api_index].micros.fetch_add(worker_micros(&exec), Ordering::Relaxed);
        let send = |job| queue.push(job, false);
        for d in verdict.detections {
            let key = Key { api: plan.api.name.clone(), oracle: d.oracle, cause: d.cause.clone() };
            if store.seen(&key) {
                counters.duplicates.fetch_add(1, Ordering::Relaxed);
                // A later death of a cause whose first one may not confirm.
                let later = store.occurrences(&key) - 1;
                if config.minimize.is_some() && d.signal.is_some_and(|s| s != crate::oracle::Signal::KILL) && later <= worklist::LATER_TRIES {
                    send(worklist::Job::Again(triage.finding(api_index, index, case, d, meta), exec.earlier().to_vec()));
                }
                continue;
            }
            let mut finding = triage.finding(api_index, index, case, d, meta);
            // Recorded pending, so that a campaign killed before its triage says so on disk.
            if config.minimize.is_some() {
                finding.triage = Some(findings::TriageState::Pending);
            }
            if triage.keep(&finding) && config.minimize.is_some() {
                // Hangs go too, to be confirmed; they are not shrunk (a timeout per candidate).
                // A death carries the cases its worker ran before, where its culprit may be.
                send(worklist::Job::New(finding, exec.earlier().to_vec()));
            }
        }
        if index % 512 == 0 {
            observer.progress(counters.executions(), counters.findings.load(Ordering::Relaxed), start.elapsed());
        }
    };
    let sink = |index: u64, case: &Case, exec: Execution| {
        // Once stopping, a worker dead of the stop signal itself (a scheduler signals every
        // process of a job; Ctrl-C the whole process group) is no finding; the case stays
        // unjudged, and a resumed campaign runs it again.
        let stop_signal = matches!(exec, Execution::Crashed { signal, .. } if signal == libc::SIGTERM || signal == libc::SIGINT);
        if stop_signal && INTERRUPTED.load(Ordering::Relaxed) {
            return;
        }
        judge(index, case, exec);
        pending.take(index);
        if index % 512 == 0 {
            save_progress(false);
        }
    };
    let mut seconds = 0.0;
    let ended = AtomicBool::new(false);
    let fuzzing = AtomicBool::new(true);
    // Whether any API has joined (solving may still be at it): no case runs before.
    let started = || generator.joined() > 0;
    std::thread::scope(|scope| {
        if let Some(solve) = solver {
            scope.spawn(|| {
                solve(&join, &|| !fuzzing.load(Ordering::Relaxed));
                solving.store(false, Ordering::Relaxed);
            });
        }
        // The clock: the triage stops `END_MARGIN` before the deadline, or `SIGNAL_GRACE` after
        // the first stop signal; the display hears of the phase.
        scope.spawn(|| {
            let mut signalled: Option<Instant> = None;
            let mut shown = None;
            let mut ticks = 0u32;
            while !ended.load(Ordering::Relaxed) {
                ticks = ticks.wrapping_add(1);
                let now = Instant::now();
                if INTERRUPTED.load(Ordering::Relaxed) {
                    signalled.get_or_insert(now);
                }
                let late = deadline.is_some_and(|d| now + END_MARGIN >= d) || signalled.is_some_and(|t| now >= t + SIGNAL_GRACE);
                if late {
                    crate::triage::STOP.store(true, Ordering::Relaxed);
                }
                let phase = match (started(), fuzzing.load(Ordering::Relaxed)) {
                    (false, true) => Phase::Solving,
                    (true, true) if !paused.load(Ordering::Relaxed) => Phase::Fuzzing,
                    _ => Phase::Triage { waiting: queue.len() },
                };
                // Once a second regardless, so that the time left moves.
                if shown != Some(phase) || ticks % 50 == 0 {
                    observer.phase(phase);
                    shown = Some(phase);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        // Findings are shrunk beside the campaign, in a worker of their own started on the first.
        let minimizer = scope.spawn(|| {
            let mut pool: Option<Pool> = None;
            let mut suspects = HashMap::new();
            while let Some(job) = queue.pop() {
                if pool.is_none() {
                    match Pool::start(triage.minimizer.clone()) {
                        Ok(p) => pool = Some(p),
                        Err(e) => {
                            observer.trouble(&format!("cannot start a worker to minimize findings: {e}"));
                            return;
                        }
                    }
                }
                let Some(p) = &pool else { return };
                triage.run(p, &mut suspects, job);
            }
        });
        // No case before the first API joins; none at all if solving ends without one.
        while !started() {
            let late = INTERRUPTED.load(Ordering::Relaxed) || deadline.is_some_and(|d| Instant::now() + END_MARGIN >= d);
            if late || !solving.load(Ordering::Relaxed) {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // The pool's own troubles (deaths outside any case, a worker given up), said once each.
        let stats = if started() { pool.run(&next, &sink) } else { Default::default() };
        let mut troubles: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
        for e in &stats.errors {
            *troubles.entry(e.as_str()).or_insert(0) += 1;
        }
        for (e, n) in troubles {
            observer.trouble(&format!("{e}{}", if n > 1 { format!(" ({n} times)") } else { String::new() }));
        }
        seconds = start.elapsed().as_secs_f64();
        fuzzing.store(false, Ordering::Relaxed);
        // Closing the queue lets the triage finish what is queued (or what the clock allows)
        // and stop.
        queue.close();
        let _ = minimizer.join();
        ended.store(true, Ordering::Relaxed);
    });
    observer.progress(counters.executions(), counters.findings.load(Ordering::Relaxed), start.elapsed());
    // Ended by its own limits, not by a signal or a folder that took no more findings.
    // A campaign whose clock left findings pending is not finished: `--resume` triages them.
    let pending = if config.minimize.is_some() { store.pending().len() as u64 } else { 0 };
    let stopped = INTERRUPTED.load(Ordering::Relaxed) || counters.unwritten.load(Ordering::Relaxed) > 0;
    save_progress(!stopped && pending == 0);
    let mut summary = counters.summary(&names, seconds, config.pool.workers, config.seed, skipped, store.dir().display().to_string());
    summary.mode = gen_config.mode.name();
    summary.generator = match gen_config.strategy {
        Strategy::Solver => "solver".into(),
        Strategy::Naive => "naive".into(),
    };
    summary.mutation = gen_config.mutation.clone();
    summary.spec_findings = spec_store.count();
    summary.next_case = judged_below();
    summary.first_case_seconds = first_case.get().map(|t| t.saturating_duration_since(config.started.unwrap_or(start)).as_secs_f64());
    summary.triage_pending = pending;
    summary.stopped_by = match SIGNAL.load(Ordering::Relaxed) {
        libc::SIGINT => Some("SIGINT".into()),
        libc::SIGTERM => Some("SIGTERM".into()),
        _ if INTERRUPTED.load(Ordering::Relaxed) => Some("interrupted".into()),
        _ => None,
    };
    for (i, a) in summary.apis.iter_mut().enumerate() {
        let api = &plans[i].api;
        let Some(pools) = generator.pools(i) else { continue };
        a.coverage = Some(coverage[i].report(api, &pools.dtypes));
        a.unbreakable = pools.unbreakable.iter().filter_map(|(k, why)| api.requires.get(*k).map(|c| (c.text.clone(), why.clone()))).collect();
    }
    if !started() && to_triage_count == 0 {
        return Err(FuzzError::NothingToFuzz);
    }
    Ok(summary)
}

/// The worker time of an execution: the call and every check (a hang: its timeout).
fn worker_micros(exec: &Execution) -> u64 {
    let call = exec.outcome().map_or(0, |o| match o {
        crate::wire::outcome::Outcome::Returned { micros, .. } | crate::wire::outcome::Outcome::Raised { micros, .. } => u64::from(*micros),
    });
    match exec {
        Execution::TimedOut { millis } => millis * 1000,
        Execution::Checked { checks, .. } => call + checks.iter().map(|c| u64::from(c.micros)).sum::<u64>(),
        Execution::InCheck { failure, .. } => call + worker_micros(failure),
        _ => call,
    }
}

/// Writes a spec finding for a conforming case libtorch rejected, once per API and error.
fn record_spec_finding(spec_store: &SpecStore, counters: &stats::Counters, plan: &ApiPlan, case: &Case, index: u64, seed: u64, error: &str) {
    let first = error.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    let signature = crate::oracle::errors::normalize(first);
    if spec_store.seen(&plan.api.name, &signature) {
        return;
    }
    let key = Key { api: plan.api.name.clone(), oracle: Oracle::Spec, cause: crate::oracle::Cause::Rejected { message: signature.clone() } };
    let id = finding_id(&key);
    let finding = SpecFinding {
        id: id.clone(),
        api: plan.api.name.clone(),
        aten: plan.binding.qualified(),
        kind: "constraint missing?".into(),
        signature,
        message: first.to_string(),
        seed,
        case_index: index,
        case: case.clone(),
        inputs: crate::findings::describe::inputs(plan, case),
        repro: format!("spec/{id}.py"),
    };
    let header = format!("sfz spec finding {id} on {}: the spec allows this input, libtorch rejects it (constraint missing?)\n{first}", plan.api.name);
    let script = findings::repro::call_script(&plan.api, &plan.binding, case, &header);
    if let Err(e) = spec_store.record(&finding, &script) {
        counters.unwritten(format!("spec finding {id}: {e}"));
    }
}
