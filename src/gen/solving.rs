//! Solving an API's pools: the jobs (ordinary and boundary models, huge models, one job per
//! constraint to break), run on every core, each with its own seed, and put together per API.
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::solve::{self, Boundary, SolveError, SymModel};
use crate::spec::ApiSpec;
use crate::wire::case::DType;

use super::{cache, huge_limits, GenConfig, Strategy};

pub use crate::seed::mix;

/// The seed of one solving job: the run's seed, the API, and which pool.
fn job_seed(config: &GenConfig, api_index: usize, job: u64) -> u64 {
    mix(config.seed ^ mix(api_index as u64) ^ mix(job.wrapping_add(0x51)))
}

/// Solves the ordinary pool of one API on the calling thread.
pub fn solve_pool(api: &ApiSpec, config: &GenConfig, api_index: usize) -> Result<Vec<SymModel>, SolveError> {
    crate::solve::sample(api, &config.limits, config.pool_size, mix(config.seed ^ mix(api_index as u64)))
}

/// Everything solved for one API.
#[derive(Clone, Debug, Default)]
pub struct ApiPools {
    pub models: Vec<SymModel>,
    pub boundary: Vec<(Boundary, SymModel)>,
    pub huge: Vec<SymModel>,
    /// Per `requires` constraint: models that break it and keep the others (violate mode).
    /// Empty when it cannot be broken, was not solved, or the mode does not violate.
    pub violating: Vec<Vec<SymModel>>,
    /// Per `requires` constraint that cannot be broken alone: why (for the report).
    pub unbreakable: BTreeMap<usize, String>,
    /// Per parameter, the dtypes conforming inputs can give it.
    pub dtypes: Vec<Vec<DType>>,
}

impl ApiPools {
    /// Pools of plain models only (tests, benchmarks).
    pub fn of_models(models: Vec<SymModel>) -> ApiPools {
        ApiPools { models, ..ApiPools::default() }
    }
}

/// One unit of solving work.
#[derive(Clone, Copy, Debug)]
pub enum Job {
    /// Ordinary models, boundary models and feasible dtypes.
    Conform,
    Huge,
    /// Models breaking `requires[k]`.
    Violate(usize),
}

/// The jobs an API needs under this configuration.
pub fn jobs(api: &ApiSpec, config: &GenConfig) -> Vec<Job> {
    let mut jobs = vec![Job::Conform];
    if config.strategy == Strategy::Solver && config.mutation.huge > 0.0 {
        jobs.push(Job::Huge);
    }
    if config.mode.violate_ratio() > 0.0 {
        jobs.extend((0..api.requires.len()).map(Job::Violate));
    }
    jobs
}

/// What one job produced.
#[derive(Clone, Debug)]
pub enum JobResult {
    Conform(Result<solve::Solved, SolveError>),
    Huge(Result<Vec<SymModel>, SolveError>),
    Violate(usize, Result<Vec<SymModel>, SolveError>),
}

/// Runs one job in a fresh z3 context (on the calling thread). A job that panics fails with
/// `SolveError::Internal` rather than taking the campaign down: the other APIs still run.
pub fn run_job(api: &ApiSpec, config: &GenConfig, api_index: usize, job: Job) -> JobResult {
    guarded(job, || solve_job(api, config, api_index, job))
}

/// `run`'s result, or the job failed with the panic's message if it panicked.
fn guarded(job: Job, run: impl FnOnce() -> JobResult) -> JobResult {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)).unwrap_or_else(|payload| {
        let message =
            payload.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| payload.downcast_ref::<String>().cloned()).unwrap_or_else(|| "a panic without a message".into());
        let e = SolveError::Internal(message);
        match job {
            Job::Conform => JobResult::Conform(Err(e)),
            Job::Huge => JobResult::Huge(Err(e)),
            Job::Violate(k) => JobResult::Violate(k, Err(e)),
        }
    })
}

fn solve_job(api: &ApiSpec, config: &GenConfig, api_index: usize, job: Job) -> JobResult {
    match job {
        Job::Conform => {
            let count = if config.strategy == Strategy::Naive { 1 } else { config.pool_size };
            JobResult::Conform(solve::solve(api, &config.limits, count, mix(config.seed ^ mix(api_index as u64))))
        }
        Job::Huge => JobResult::Huge(solve::sample_huge(api, &huge_limits(&config.limits), 2, job_seed(config, api_index, 1))),
        Job::Violate(k) => JobResult::Violate(k, solve::sample_violating(api, &config.limits, k, config.violation_pool_size, job_seed(config, api_index, 2 + k as u64))),
    }
}

/// Puts one API's job results together. Fails when its ordinary models could not be solved
/// (the API is then skipped); a constraint that cannot be broken alone is only noted.
pub fn assemble(api: &ApiSpec, results: Vec<JobResult>) -> Result<ApiPools, SolveError> {
    let mut pool = ApiPools { violating: vec![Vec::new(); api.requires.len()], ..ApiPools::default() };
    for r in results {
        match r {
            JobResult::Conform(solved) => {
                let solved = solved?;
                pool.models = solved.models;
                pool.boundary = solved.boundary;
                pool.dtypes = solved.dtypes;
            }
            JobResult::Huge(Ok(models)) => pool.huge = models,
            // Huge models are a bonus; their absence needs no report.
            JobResult::Huge(Err(_)) => {}
            JobResult::Violate(k, Ok(models)) => {
                if models.is_empty() {
                    pool.unbreakable.insert(k, "no model breaks it alone".into());
                }
                if let Some(slot) = pool.violating.get_mut(k) {
                    *slot = models;
                }
            }
            JobResult::Violate(k, Err(SolveError::Unsat { .. })) => {
                pool.unbreakable.insert(k, "it cannot be broken while the other constraints hold".into());
            }
            JobResult::Violate(k, Err(e)) => {
                pool.unbreakable.insert(k, e.to_string());
            }
        }
    }
    Ok(pool)
}

/// Solves everything one API needs under this configuration, on the calling thread.
pub fn solve_api(api: &ApiSpec, config: &GenConfig, api_index: usize) -> Result<ApiPools, SolveError> {
    let results = jobs(api, config).into_iter().map(|j| run_job(api, config, api_index, j)).collect();
    assemble(api, results)
}

/// Solves many APIs' pools on every core, job by job (an API with many constraints has as many
/// violation jobs, so jobs balance the threads better than APIs). One result per API, in order.
pub fn solve_all(apis: &[&ApiSpec], config: &GenConfig) -> Vec<Result<ApiPools, SolveError>> {
    solve_all_until(apis, config, &SolveBudget::default()).into_iter().map(|r| r.expect("solving without a budget runs every job")).collect()
}

/// When solving must end, and whom it tells how far it got.
#[derive(Default)]
pub struct SolveBudget<'a> {
    /// No job starts after this; a job under way finishes (each solver call is bounded by
    /// `Limits`).
    pub deadline: Option<std::time::Instant>,
    /// Asked between jobs: true ends solving as the deadline does (a signal).
    pub stop: Option<&'a (dyn Fn() -> bool + Sync)>,
    /// Told the jobs done and the jobs in all, after each job.
    pub progress: Option<&'a (dyn Fn(usize, usize) + Sync)>,
    /// Jobs solved by earlier runs of this build, read instead of solved, and where new ones
    /// are kept.
    pub cache: Option<&'a cache::SolveCache>,
}

/// Why a constraint has no violating pool when solving ran out of time before its job.
pub const UNSOLVED_IN_TIME: &str = "not solved within the time given to solving";

/// `solve_all` within `budget`: every API's ordinary pool first (so that as many APIs as
/// possible can run), then huge models, then the violating pools. None for an API whose ordinary
/// pool was not solved in time; a constraint whose violating job did not run is unbreakable
/// for this campaign (`UNSOLVED_IN_TIME`). Which job runs when never changes what it solves
/// (each job has its own seed), so without a deadline the pools are the same on any machine.
pub fn solve_all_until(apis: &[&ApiSpec], config: &GenConfig, budget: &SolveBudget) -> Vec<Option<Result<ApiPools, SolveError>>> {
    let mut work: Vec<(usize, Job)> = apis.iter().enumerate().flat_map(|(i, api)| jobs(api, config).into_iter().map(move |j| (i, j))).collect();
    work.sort_by_key(|(_, j)| match j {
        Job::Conform => 0,
        Job::Huge => 1,
        Job::Violate(_) => 2,
    });
    let per_api: Vec<Mutex<Vec<JobResult>>> = apis.iter().map(|_| Mutex::new(Vec::new())).collect();
    run_jobs(apis, config, budget, &work, &|i, r| per_api[i].lock().expect("results lock").push(r));
    apis.iter().zip(per_api).map(|(api, results)| partial(api, config, results.into_inner().expect("results lock"))).collect()
}

/// Solves within `budget` and hands each API's pools to `ready` as soon as they can be fuzzed (a
/// campaign fuzzes the first APIs while the rest solve): every API's ordinary pool first, in
/// order, each handed over alone as it is solved (`complete` false when more jobs follow), then
/// the rest of each API's jobs (huge models, violating pools), its whole pools handed over again
/// once they are done. When the budget ends, an API with more than its ordinary pool is handed
/// over with what it has (`UNSOLVED_IN_TIME` for the rest). Returns, per API, whether `ready`
/// heard of it.
pub fn solve_streaming(apis: &[&ApiSpec], config: &GenConfig, budget: &SolveBudget, ready: &(dyn Fn(usize, Result<ApiPools, SolveError>, bool) + Sync)) -> Vec<bool> {
    let per_api: Vec<Vec<Job>> = apis.iter().map(|api| jobs(api, config)).collect();
    let mut work: Vec<(usize, Job)> = per_api.iter().enumerate().flat_map(|(i, jobs)| jobs.iter().map(move |&j| (i, j))).collect();
    work.sort_by_key(|(_, j)| !matches!(j, Job::Conform));
    let left: Vec<AtomicUsize> = per_api.iter().map(|j| AtomicUsize::new(j.len())).collect();
    let results: Vec<Mutex<Vec<JobResult>>> = apis.iter().map(|_| Mutex::new(Vec::new())).collect();
    // 0: nothing handed over; 1: the ordinary pool; 2: everything.
    let handed: Vec<AtomicUsize> = apis.iter().map(|_| AtomicUsize::new(0)).collect();
    run_jobs(apis, config, budget, &work, &|i, r| {
        // Under the API's lock, so that its ordinary pool is handed over before the whole.
        let mut mine = results[i].lock().expect("results lock");
        let ordinary = matches!(r, JobResult::Conform(_)).then(|| r.clone());
        mine.push(r);
        if left[i].fetch_sub(1, Ordering::AcqRel) == 1 {
            let all = std::mem::take(&mut *mine);
            // Unless its ordinary pool failed and was handed over as such.
            if handed[i].swap(2, Ordering::Relaxed) != 2 {
                ready(i, assemble(apis[i], all), true);
            }
        } else if let Some(ordinary) = ordinary {
            let pools = assemble(apis[i], vec![ordinary]);
            // An API whose ordinary pool failed is done with: nothing more is handed over.
            handed[i].store(if pools.is_ok() { 1 } else { 2 }, Ordering::Relaxed);
            ready(i, pools, false);
        }
    });
    for (i, api) in apis.iter().enumerate() {
        if handed[i].load(Ordering::Relaxed) == 2 {
            continue;
        }
        let mine = std::mem::take(&mut *results[i].lock().expect("results lock"));
        let more = mine.len() > 1;
        if let Some(pools) = partial(api, config, mine).filter(|_| more) {
            ready(i, pools, true);
        }
    }
    handed.into_iter().map(|h| h.into_inner() > 0).collect()
}

/// One API's pools from the jobs that ran: None without its ordinary pool; a violating job
/// that did not run leaves its constraint unbreakable (`UNSOLVED_IN_TIME`).
fn partial(api: &ApiSpec, config: &GenConfig, results: Vec<JobResult>) -> Option<Result<ApiPools, SolveError>> {
    if !results.iter().any(|r| matches!(r, JobResult::Conform(_))) {
        return None;
    }
    let ran: Vec<usize> = results.iter().filter_map(|r| if let JobResult::Violate(k, _) = r { Some(*k) } else { None }).collect();
    let mut pools = assemble(api, results);
    if let Ok(p) = &mut pools {
        for k in jobs(api, config).into_iter().filter_map(|j| if let Job::Violate(k) = j { Some(k) } else { None }).filter(|k| !ran.contains(k)) {
            p.unbreakable.insert(k, UNSOLVED_IN_TIME.into());
        }
    }
    Some(pools)
}

/// Runs `work` in its order on every core until the budget ends, each result to `done` (on the
/// thread that solved it) as it comes.
fn run_jobs(apis: &[&ApiSpec], config: &GenConfig, budget: &SolveBudget, work: &[(usize, Job)], done: &(dyn Fn(usize, JobResult) + Sync)) {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(work.len().max(1));
    let next = AtomicUsize::new(0);
    let finished = AtomicUsize::new(0);
    let over = || budget.deadline.is_some_and(|d| std::time::Instant::now() >= d) || budget.stop.is_some_and(|stop| stop());
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    while !over() {
                        let Some(&(i, job)) = work.get(next.fetch_add(1, Ordering::Relaxed)) else { break };
                        let cached = budget.cache.and_then(|c| c.get(apis[i], config, i, job));
                        let result = cached.unwrap_or_else(|| {
                            let solved = run_job(apis[i], config, i, job);
                            if let Some(c) = budget.cache {
                                c.put(apis[i], config, i, job, &solved);
                            }
                            solved
                        });
                        done(i, result);
                        let n = finished.fetch_add(1, Ordering::Relaxed) + 1;
                        if let Some(progress) = budget.progress {
                            progress(n, work.len());
                        }
                    }
                })
            })
            .collect();
        // `run_job` catches a job's panic; one outside it is a bug in this loop (or in `done`).
        for h in handles {
            h.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job that panics fails with its own kind of result, carrying the message, and the
    /// caller goes on (`solve_all` runs the other jobs, `plan` skips only that API with W0008).
    #[test]
    fn a_panicking_job_is_an_internal_solver_error() {
        let violate = guarded(Job::Violate(3), || panic!("unexpected term {}", 7));
        assert!(matches!(&violate, JobResult::Violate(3, Err(SolveError::Internal(m))) if m == "unexpected term 7"), "{violate:?}");
        let conform = guarded(Job::Conform, || panic!("no message arguments"));
        assert!(matches!(&conform, JobResult::Conform(Err(SolveError::Internal(m))) if m == "no message arguments"), "{conform:?}");
        let fine = guarded(Job::Huge, || JobResult::Huge(Ok(Vec::new())));
        assert!(matches!(fine, JobResult::Huge(Ok(ref v)) if v.is_empty()));
        // An API whose ordinary models panicked is skipped with the message, not run without them.
        let api = crate::check::check_text(std::path::Path::new("t.sfz"), "api torch.abs(input: Tensor) -> Tensor {}\n").spec.apis.remove(0);
        assert_eq!(assemble(&api, vec![conform]).err(), Some(SolveError::Internal("no message arguments".into())));
    }
}
