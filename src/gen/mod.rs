//! Inputs from a plan. Per API, the solver's models of the symbolic part are solved ahead into
//! pools (ordinary, boundary, huge, and one per breakable constraint for violate mode); per case,
//! the generator picks a pool and a model, draws concrete values in the plan's order, breaks the
//! chosen constraint in violate mode, applies the boundary mutators, and checks the result with
//! the evaluator. Case `i` of a run is a pure function of the run's seed and `i`, so `--seed`
//! reproduces a run whatever the worker scheduling.
pub mod cache;
pub mod cliff;
pub mod coverage;
pub mod domain;
pub mod mutate;
pub mod naive;
pub mod plan;
pub mod values;
pub mod violate;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::solve::{self, Boundary, Limits, SolveError, SymModel};
use crate::spec::{ApiSpec, Category};
use crate::wire::case::{Arg, Break, DType, Forward};
pub use mutate::Mutation;
use plan::{GenPlan, Target};

/// Which inputs a run generates.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum Mode {
    /// Every constraint obeyed.
    Conform,
    /// Exactly one constraint of one parameter broken (DocTer's VI mode).
    Violate,
    /// Violating with this probability, conforming otherwise.
    Mixed(f64),
}

impl Mode {
    /// `conform`, `violate`, `mixed` (a fifth violating) or `mixed:0.3`.
    pub fn parse(text: &str) -> Result<Mode, String> {
        match text.trim() {
            "conform" => Ok(Mode::Conform),
            "violate" => Ok(Mode::Violate),
            "mixed" => Ok(Mode::Mixed(0.2)),
            other => match other.strip_prefix("mixed:").or_else(|| other.strip_prefix("mixed=")) {
                Some(r) => match r.parse::<f64>() {
                    Ok(r) if (0.0..=1.0).contains(&r) => Ok(Mode::Mixed(r)),
                    _ => Err(format!("the ratio in `{other}` must be a number within 0 and 1 (the fraction of violating cases)")),
                },
                None => Err(format!("unknown mode `{other}`: use conform, violate, mixed or mixed:RATIO")),
            },
        }
    }

    /// Fraction of violating cases.
    pub fn violate_ratio(self) -> f64 {
        match self {
            Mode::Conform => 0.0,
            Mode::Violate => 1.0,
            Mode::Mixed(r) => r,
        }
    }

    pub fn name(self) -> String {
        match self {
            Mode::Conform => "conform".into(),
            Mode::Violate => "violate".into(),
            Mode::Mixed(r) => format!("mixed:{r}"),
        }
    }
}

/// How the symbolic part of a case is found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Strategy {
    /// z3-solved pools (the default).
    Solver,
    /// Independent random draws per parameter, rejected by the evaluator (the baseline).
    Naive,
}

impl Strategy {
    pub fn parse(text: &str) -> Result<Strategy, String> {
        match text.trim() {
            "solver" | "z3" => Ok(Strategy::Solver),
            "naive" => Ok(Strategy::Naive),
            other => Err(format!("unknown generator `{other}`: use solver or naive")),
        }
    }
}

/// Generation settings.
#[derive(Clone, Debug)]
pub struct GenConfig {
    pub seed: u64,
    /// Models solved per API before fuzzing starts.
    pub pool_size: usize,
    /// Models solved per breakable constraint (violate and mixed modes).
    pub violation_pool_size: usize,
    pub limits: Limits,
    pub mode: Mode,
    pub strategy: Strategy,
    pub mutation: Mutation,
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig { seed: 0, pool_size: 64, violation_pool_size: 8, limits: Limits::default(), mode: Mode::Conform, strategy: Strategy::Solver, mutation: Mutation::default() }
    }
}

/// The limits of huge models: one tensor may hold up to 2^20 elements, a dimension 2^14.
pub fn huge_limits(limits: &Limits) -> Limits {
    Limits { max_dim: 1 << 14, max_numel: 1 << 20, ..limits.clone() }
}

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
#[derive(Debug)]
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
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(work.len().max(1));
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let over = || budget.deadline.is_some_and(|d| std::time::Instant::now() >= d) || budget.stop.is_some_and(|stop| stop());
    let results: Vec<(usize, JobResult)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut out = Vec::new();
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
                        out.push((i, result));
                        let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                        if let Some(progress) = budget.progress {
                            progress(n, work.len());
                        }
                    }
                    out
                })
            })
            .collect();
        // `run_job` catches a job's panic; one outside it is a bug in this loop.
        handles.into_iter().flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
    });
    let mut per_api: Vec<Vec<JobResult>> = apis.iter().map(|_| Vec::new()).collect();
    for (i, r) in results {
        per_api[i].push(r);
    }
    apis.iter()
        .zip(per_api)
        .map(|(api, results)| {
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
        })
        .collect()
}

/// One violation the generator can produce, for reports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Violation {
    pub target: Target,
    pub category: Category,
    /// The constraint in the spec's words.
    pub text: String,
    /// Names of the parameters it constrains.
    pub params: Vec<String>,
}

impl Violation {
    fn of(api: &ApiSpec, target: &Target) -> Violation {
        match target {
            Target::Requires(k) => {
                let c = &api.requires[*k];
                Violation {
                    target: target.clone(),
                    category: c.category,
                    text: c.text.clone(),
                    params: c.params.iter().filter_map(|&p| api.params.get(p).map(|x| x.name.clone())).collect(),
                }
            }
            Target::Declared(d) => {
                Violation { target: target.clone(), category: d.category(), text: d.text(api), params: api.params.get(d.param()).map(|x| vec![x.name.clone()]).unwrap_or_default() }
            }
            Target::Bound { param, kind } => {
                let name = api.params.get(*param).map_or("?", |p| p.name.as_str());
                let forward = api.from.as_ref().map_or("?", |f| f.callee.name.as_str());
                Violation {
                    target: target.clone(),
                    category: if kind.is_value() { Category::Range } else { Category::Shape },
                    text: format!("{name} from {forward}, with {}", kind.describe()),
                    params: vec![name.to_string()],
                }
            }
        }
    }
}

/// One generated call.
#[derive(Clone, Debug)]
pub struct Generated {
    /// Index of the API among those the generator serves.
    pub api: usize,
    pub args: Vec<Arg>,
    /// Whether the evaluator found every constraint satisfied (or undecidable).
    pub conforms: bool,
    /// In violate mode, the index into `Generator::violations(api)` of the one broken constraint.
    pub violated: Option<usize>,
    /// For an API with a `from` statement: the parameters its forward fills, and the breakage
    /// of one (`Target::Bound`).
    pub forward: Option<Forward>,
}

/// Per API, what the generator prepared.
struct Prepared {
    plan: GenPlan,
    pools: ApiPools,
    /// Breakable constraints by category.
    by_category: Vec<(Category, Vec<usize>)>,
    violations: Vec<Violation>,
    /// The API inside each of its value domains (`domain::steered`), with its plan.
    inside: Vec<(ApiSpec, GenPlan)>,
}

/// Produces cases from solved pools. Shared by the supervisor's worker threads.
pub struct Generator {
    apis: Vec<ApiSpec>,
    prepared: Vec<Prepared>,
    config: GenConfig,
}

impl Generator {
    /// `apis` and `pools` are parallel; APIs with an empty ordinary pool are never chosen (under
    /// the naive strategy, every API is).
    pub fn new(apis: Vec<ApiSpec>, pools: Vec<ApiPools>, config: GenConfig) -> Self {
        let prepared = apis
            .iter()
            .zip(pools)
            .map(|(api, pools)| {
                let plan = GenPlan::new(api);
                let violable: Vec<bool> = (0..api.requires.len()).map(|k| pools.violating.get(k).is_some_and(|m| !m.is_empty())).collect();
                let mut violations = Vec::new();
                let mut by_category = Vec::new();
                for (cat, targets) in plan.targets(api, &violable) {
                    let start = violations.len();
                    violations.extend(targets.iter().map(|t| Violation::of(api, t)));
                    by_category.push((cat, (start..violations.len()).collect()));
                }
                // The forward's bindings broken: a group of their own, drawn as often as a
                // category (they are what a `from` statement is for).
                let bound = GenPlan::bound_targets(api);
                if !bound.is_empty() {
                    let start = violations.len();
                    violations.extend(bound.iter().map(|t| Violation::of(api, t)));
                    by_category.push((Category::Shape, (start..violations.len()).collect()));
                }
                let inside = domain::steered(api).into_iter().map(|a| {
                    let plan = GenPlan::new(&a);
                    (a, plan)
                });
                Prepared { plan, pools, by_category, violations, inside: inside.collect() }
            })
            .collect();
        Generator { apis, prepared, config }
    }

    /// Pools of ordinary models only, conform mode, no mutation (tests, benchmarks).
    pub fn simple(apis: Vec<ApiSpec>, pools: Vec<Vec<SymModel>>, seed: u64) -> Self {
        let config = GenConfig { seed, mutation: Mutation::none(), ..GenConfig::default() };
        Generator::new(apis, pools.into_iter().map(ApiPools::of_models).collect(), config)
    }

    pub fn apis(&self) -> &[ApiSpec] {
        &self.apis
    }

    pub fn config(&self) -> &GenConfig {
        &self.config
    }

    /// The violations API `api` can be given, in the order `Generated::violated` indexes.
    pub fn violations(&self, api: usize) -> &[Violation] {
        self.prepared.get(api).map_or(&[], |p| &p.violations)
    }

    /// The pools of API `api`.
    pub fn pools(&self, api: usize) -> &ApiPools {
        &self.prepared[api].pools
    }

    fn live(&self) -> Vec<usize> {
        (0..self.apis.len()).filter(|&i| self.config.strategy == Strategy::Naive || !self.prepared[i].pools.models.is_empty()).collect()
    }

    /// The case with this index: which API (uniformly among those with models), conforming or
    /// violating (per the mode), which model, which values, which mutations.
    pub fn case(&self, index: u64) -> Option<Generated> {
        let live = self.live();
        if live.is_empty() {
            return None;
        }
        let mut rng = ChaCha8Rng::seed_from_u64(mix(self.config.seed ^ mix(index)));
        let api = live[rng.random_range(0..live.len())];
        let ratio = self.config.mode.violate_ratio();
        if ratio > 0.0 && rng.random_bool(ratio) {
            if let Some(g) = self.violating(api, &mut rng) {
                return Some(g);
            }
        }
        self.conforming(api, &mut rng)
    }

    fn conforming(&self, api: usize, rng: &mut ChaCha8Rng) -> Option<Generated> {
        let spec = &self.apis[api];
        let prep = &self.prepared[api];
        if self.config.strategy == Strategy::Naive {
            let mut last = None;
            for _ in 0..naive::NAIVE_TRIES {
                let model = naive::draw(spec, &self.config.limits, rng);
                let mut args = values::concretize(spec, &prep.plan, &model, None, rng);
                if Check::Conform.holds(spec, &prep.plan, &args) {
                    let conforms = self.mutate(api, &mut args, Check::Conform, rng);
                    return Some(Generated { api, args, conforms, violated: None, forward: self.forward(api, None) });
                }
                last = Some(args);
            }
            return last.map(|args| Generated { api, args, conforms: false, violated: None, forward: self.forward(api, None) });
        }
        let pools = &prep.pools;
        let m = &self.config.mutation;
        let mut last = None;
        for _ in 0..4 {
            let model = if !pools.huge.is_empty() && rng.random_bool(m.huge) {
                &pools.huge[rng.random_range(0..pools.huge.len())]
            } else if !pools.boundary.is_empty() && rng.random_bool(m.boundary) {
                &pools.boundary[rng.random_range(0..pools.boundary.len())].1
            } else {
                pools.models.get(rng.random_range(0..pools.models.len().max(1)))?
            };
            let redrawn = if m.dtype > 0.0 && rng.random_bool(m.dtype) { mutate::redraw_dtype(model, &pools.dtypes, rng) } else { None };
            let model = redrawn.as_ref().unwrap_or(model);
            let mut args = match prep.inside.len() {
                0 => values::concretize(spec, &prep.plan, model, None, rng),
                n if rng.random_bool(0.5) => {
                    let (inside, plan) = &prep.inside[rng.random_range(0..n)];
                    values::concretize(inside, plan, model, None, rng)
                }
                _ => values::concretize(spec, &prep.plan, model, None, rng),
            };
            if Check::Conform.holds(spec, &prep.plan, &args) {
                let conforms = self.mutate(api, &mut args, Check::Conform, rng);
                return Some(Generated { api, args, conforms, violated: None, forward: self.forward(api, None) });
            }
            last = Some(args);
        }
        last.map(|args| Generated { api, args, conforms: false, violated: None, forward: self.forward(api, None) })
    }

    /// A case breaking one constraint: a category uniformly among those the API has, a
    /// constraint uniformly within it. None when no attempt broke exactly that constraint.
    fn violating(&self, api: usize, rng: &mut ChaCha8Rng) -> Option<Generated> {
        let spec = &self.apis[api];
        let prep = &self.prepared[api];
        if prep.by_category.is_empty() || prep.pools.models.is_empty() {
            return None;
        }
        let (_, members) = &prep.by_category[rng.random_range(0..prep.by_category.len())];
        let v = members[rng.random_range(0..members.len())];
        let target = &prep.violations[v].target;
        for _ in 0..4 {
            let (model, skip) = match target {
                Target::Requires(k) => {
                    let pool = &prep.pools.violating[*k];
                    (&pool[rng.random_range(0..pool.len())], Some(*k))
                }
                Target::Declared(_) | Target::Bound { .. } => (&prep.pools.models[rng.random_range(0..prep.pools.models.len())], None),
            };
            let mut args = values::concretize(spec, &prep.plan, model, skip, rng);
            let check = Check::Violate(target);
            match target {
                Target::Requires(k) => {
                    // A concrete constraint is broken through a value; a symbolic one already is.
                    if !check.holds(spec, &prep.plan, &args) && !violate::break_concrete(spec, *k, &mut args, rng) {
                        continue;
                    }
                    if rng.random_bool(0.3) {
                        let before = args.clone();
                        if violate::extreme_int(spec, *k, &mut args, rng) && !check.holds(spec, &prep.plan, &args) {
                            args = before;
                        }
                    }
                }
                Target::Declared(d) => {
                    if !violate::break_declared(spec, d, &mut args, rng) {
                        continue;
                    }
                }
                // The inputs conform; the worker breaks the binding after the forward.
                Target::Bound { param, kind } => {
                    if !matches!(args.get(*param), Some(Arg::Tensor(_))) || !Check::Conform.holds(spec, &prep.plan, &args) {
                        continue;
                    }
                    // A cliff past a value bound would break more than the binding.
                    let before = args.clone();
                    if !self.mutate(api, &mut args, Check::Conform, rng) {
                        args = before;
                    }
                    let broken = Break { param: *param, kind: *kind, seed: rng.random() };
                    return Some(Generated { api, args, conforms: false, violated: Some(v), forward: self.forward(api, Some(broken)) });
                }
            }
            if check.holds(spec, &prep.plan, &args) {
                self.mutate(api, &mut args, check, rng);
                return Some(Generated { api, args, conforms: false, violated: Some(v), forward: self.forward(api, None) });
            }
        }
        None
    }

    /// What a case of API `api` says about its `from` statement: the parameters the forward
    /// fills, and `broken`.
    fn forward(&self, api: usize, broken: Option<Break>) -> Option<Forward> {
        self.apis[api].from.as_ref().map(|f| Forward { binds: f.binds.clone(), broken })
    }

    /// Applies each value mutator with its probability, undoing one that breaks `check`. The
    /// cliff mutator may break value bounds of the tensor it rewrites (and only those): false
    /// when it did, so the case no longer conforms.
    fn mutate(&self, api: usize, args: &mut [Arg], check: Check, rng: &mut ChaCha8Rng) -> bool {
        let spec = &self.apis[api];
        let plan = &self.prepared[api].plan;
        let m = &self.config.mutation;
        type Mutator = fn(&ApiSpec, &mut [Arg], &mut ChaCha8Rng) -> bool;
        let mutators: [(f64, Mutator); 3] = [(m.special, mutate::special), (m.layout, |_, args, rng| mutate::layout(args, rng)), (m.scalar, mutate::scalar)];
        for (p, f) in mutators {
            if p > 0.0 && rng.random_bool(p) {
                let before = args.to_vec();
                if f(spec, args, rng) && !check.holds(spec, plan, args) {
                    args.clone_from_slice(&before);
                }
            }
        }
        // Last: a cliff changes a whole fill, which the mutators above would have to respect.
        if m.cliff > 0.0 && rng.random_bool(m.cliff) {
            let before = args.to_vec();
            if let Some(p) = cliff::cliff(args, rng) {
                if check.holds(spec, plan, args) {
                    return true;
                }
                if matches!(check, Check::Conform) && only_value_bounds_break(spec, plan, args, p) {
                    return false;
                }
                args.clone_from_slice(&before);
            }
        }
        true
    }
}

/// True when every constraint the case breaks bounds the values of parameter `p` (and the
/// declared types still hold): what a cliff may break.
fn only_value_bounds_break(api: &ApiSpec, plan: &GenPlan, args: &[Arg], p: usize) -> bool {
    let verdicts = values::conforms(api, args);
    let declared = violate::declared_hold(api, &plan.declared, args);
    declared.iter().all(|&d| d) && verdicts.iter().zip(&api.requires).all(|(v, c)| *v != Some(false) || (solve::value_target(&c.expr) == Some(p) && bounds_values(&c.expr)))
}

/// A comparison of a tensor's values (`t.values in lo..hi`, `t.values >= 0`) or `finite(t)`.
fn bounds_values(e: &crate::spec::TExpr) -> bool {
    use crate::spec::{Builtin, Prop, TExpr};
    match e {
        TExpr::Binary(op, l, r) if op.is_comparison() => matches!(&**l, TExpr::Prop(_, Prop::Values)) || matches!(&**r, TExpr::Prop(_, Prop::Values)),
        TExpr::Call(Builtin::Finite | Builtin::NoNan, _) => true,
        _ => false,
    }
}

/// What a case must satisfy, judged by the evaluator (and the declaration checks).
#[derive(Clone, Copy)]
enum Check<'a> {
    /// No constraint broken.
    Conform,
    /// This one broken, no other.
    Violate(&'a Target),
}

impl Check<'_> {
    fn holds(self, api: &ApiSpec, plan: &GenPlan, args: &[Arg]) -> bool {
        let verdicts = values::conforms(api, args);
        let declared = violate::declared_hold(api, &plan.declared, args);
        match self {
            Check::Conform => verdicts.iter().all(|v| *v != Some(false)) && declared.iter().all(|&d| d),
            Check::Violate(target) => {
                let requires_ok = verdicts.iter().enumerate().all(|(k, v)| match target {
                    Target::Requires(t) if *t == k => *v == Some(false),
                    _ => *v != Some(false),
                });
                let declared_ok = plan.declared.iter().zip(&declared).all(|(d, &held)| match target {
                    Target::Declared(t) if t == d => !held,
                    _ => held,
                });
                requires_ok && declared_ok
            }
        }
    }
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
