//! A fuzzing campaign: the planned APIs and their solved pools in, cases through the worker
//! pool, verdicts into the findings store, a summary out. Case `i` is generated from the seed
//! and `i` alone, so a run with `--seed S --iterations N` executes the same cases every time.
pub mod record;
pub mod replay;
pub mod stats;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::case::Case;
use crate::findings::{finding_id, Finding, Key, SpecLocation, Store};
use crate::gen::{values, Generator};
use crate::oracle::{self, Status};
use crate::outcome::{signal_name, Execution};
use crate::plan::ApiPlan;
use crate::solve::SymModel;
use crate::worker::supervisor::{Pool, PoolConfig, PoolError};
pub use stats::{Skipped, Summary};

/// How long and how a campaign runs.
#[derive(Clone, Debug)]
pub struct FuzzConfig {
    pub seed: u64,
    /// Stop after this many cases.
    pub iterations: Option<u64>,
    /// Stop after this long.
    pub time: Option<Duration>,
    pub pool: PoolConfig,
    /// Candidate cases to run per finding while shrinking it (in a worker of its own, beside the
    /// campaign); None: findings are not minimized.
    pub minimize: Option<u64>,
    /// Where each plan's API is specified (parallel to the plans, or empty).
    pub locations: Vec<Option<SpecLocation>>,
}

/// What the campaign tells its caller while it runs (the CLI draws a progress bar).
pub trait Observer: Sync {
    fn progress(&self, executions: u64, findings: u64, elapsed: Duration);
    fn finding(&self, finding: &Finding);
    /// A finding's case was shrunk (or shrinking found nothing smaller).
    fn minimized(&self, _finding: &Finding) {}
}

/// Set from a signal handler to stop a campaign early; the summary is still produced.
pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);

#[derive(Debug, thiserror::Error)]
pub enum FuzzError {
    #[error(transparent)]
    Pool(#[from] PoolError),
    #[error("nothing to fuzz: every API was skipped")]
    NothingToFuzz,
}

/// Runs the campaign. `plans` and `pools` are parallel.
pub fn run(
    plans: &[ApiPlan],
    pools: Vec<Vec<SymModel>>,
    skipped: Vec<Skipped>,
    store: &Store,
    config: &FuzzConfig,
    observer: &dyn Observer,
) -> Result<Summary, FuzzError> {
    if pools.iter().all(Vec::is_empty) {
        return Err(FuzzError::NothingToFuzz);
    }
    let names: Vec<String> = plans.iter().map(|p| p.api.name.clone()).collect();
    let generator = Generator::new(plans.iter().map(|p| p.api.clone()).collect(), pools, config.seed);
    let counters = stats::Counters::new(plans.len());
    let mut pool_config = config.pool.clone();
    let (ops, checks) = crate::plan::op_table(plans);
    pool_config.ops = ops;
    pool_config.checks = checks.clone();
    let oracles: Vec<Vec<&str>> = checks.iter().map(|cs| cs.iter().map(|c| c.oracle.as_str()).collect()).collect();
    let minimizer_config = PoolConfig { workers: 1, in_flight: 8, ..pool_config.clone() };
    let pool = Pool::start(pool_config)?;
    let (sender, jobs) = crossbeam_channel::unbounded::<Finding>();
    let to_minimize = std::sync::Mutex::new(Some(sender));
    let torch_version = pool.torch_version().to_string();

    let start = Instant::now();
    let next_index = AtomicU64::new(0);
    let next = || -> Option<(u64, Case)> {
        if INTERRUPTED.load(Ordering::Relaxed) || config.time.is_some_and(|t| start.elapsed() >= t) {
            return None;
        }
        let index = next_index.fetch_add(1, Ordering::Relaxed);
        if config.iterations.is_some_and(|n| index >= n) {
            return None;
        }
        let generated = generator.case(index)?;
        if !generated.conforms {
            counters.apis[generated.api].nonconforming.fetch_add(1, Ordering::Relaxed);
        }
        Some((index, Case { op: generated.api as u32, args: generated.args }))
    };
    let sink = |index: u64, case: &Case, exec: Execution| {
        let api_index = case.op as usize;
        let Some(plan) = plans.get(api_index) else { return };
        let verdict = oracle::judge(&plan.api, &checks[api_index], case, &exec);
        counters.count(api_index, verdict.status, true);
        if exec.killed_worker() {
            counters.restarts.fetch_add(1, Ordering::Relaxed);
        }
        if let Execution::Checked { checks: reports, .. } = &exec {
            counters.checks(&oracles[api_index], reports);
        }
        // Validity feedback: libtorch rejecting a case the spec calls valid means the spec
        // misses a constraint.
        if verdict.status == Status::Invalid || verdict.status == Status::Schema {
            let conforms = values::conforms(&plan.api, &case.args).iter().all(|c| *c != Some(false));
            if conforms {
                if let Some(e) = &verdict.error {
                    counters.rejection(&plan.api.name, e);
                }
            }
        }
        for d in verdict.detections {
            let key = Key { api: plan.api.name.clone(), oracle: d.oracle.to_string(), signature: d.signature.clone() };
            if store.seen(&key) {
                counters.duplicates.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            let id = finding_id(&key);
            let finding = Finding {
                id: id.clone(),
                api: plan.api.name.clone(),
                aten: plan.binding.qualified(),
                oracle: d.oracle.to_string(),
                signature: d.signature,
                message: d.message,
                signal: d.signal.map(signal_name),
                seed: config.seed,
                case_index: index,
                case: case.clone(),
                inputs: describe_inputs(plan, case),
                repro: format!("repro/{id}.py"),
                elapsed_s: start.elapsed().as_secs_f64(),
                sfz_version: env!("CARGO_PKG_VERSION").to_string(),
                torch_version: torch_version.clone(),
                format: crate::findings::store::FORMAT,
                check: match &d.evidence {
                    oracle::Evidence::Differential { check, .. } => checks[api_index].get(*check).cloned(),
                    _ => None,
                },
                evidence: d.evidence,
                spec: config.locations.get(api_index).cloned().flatten(),
                original: None,
                minimization: None,
                pinned: Some(format!("repro/{id}.sfz")),
            };
            let script = record::reproducer(plan, &finding);
            match store.record(finding.clone(), &script) {
                Ok(true) => {
                    if let Some(p) = &finding.pinned {
                        if let Err(e) = store.write_file(p, &record::pinned(plan, &finding)) {
                            eprintln!("sfz: could not write {p}: {e}");
                        }
                    }
                    counters.findings.fetch_add(1, Ordering::Relaxed);
                    *counters.by_oracle.lock().expect("counters lock").entry(finding.oracle.clone()).or_insert(0) += 1;
                    observer.finding(&finding);
                    // A hang costs a timeout per candidate: not worth shrinking.
                    if config.minimize.is_some() && finding.oracle != "hang" {
                        if let Some(tx) = to_minimize.lock().expect("sender lock").as_ref() {
                            let _ = tx.send(finding);
                        }
                    }
                }
                Ok(false) => {
                    counters.duplicates.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => eprintln!("sfz: could not write finding {id}: {e}"),
            }
        }
        if index % 512 == 0 {
            observer.progress(counters.executions(), counters.findings.load(Ordering::Relaxed), start.elapsed());
        }
    };
    let mut seconds = 0.0;
    std::thread::scope(|scope| {
        // Findings are shrunk beside the campaign, in a worker of their own started on the first.
        let minimizer = scope.spawn(|| {
            let mut pool: Option<Pool> = None;
            for finding in jobs.iter() {
                let Some(api_index) = plans.iter().position(|p| p.api.name == finding.api) else { continue };
                if pool.is_none() {
                    match Pool::start(minimizer_config.clone()) {
                        Ok(p) => pool = Some(p),
                        Err(e) => {
                            eprintln!("sfz: cannot start a worker to minimize findings: {e}");
                            return;
                        }
                    }
                }
                let Some(p) = &pool else { return };
                let budget = record::budget(config.minimize.unwrap_or(0));
                match record::minimize_finding(p, &plans[api_index], &checks[api_index], store, &finding, budget) {
                    Ok(updated) => observer.minimized(&updated),
                    Err(e) => eprintln!("sfz: could not write the minimized finding {}: {e}", finding.id),
                }
            }
        });
        pool.run(&next, &sink);
        seconds = start.elapsed().as_secs_f64();
        // Closing the channel lets the minimizer finish what is queued and stop.
        to_minimize.lock().expect("sender lock").take();
        let _ = minimizer.join();
    });
    observer.progress(counters.executions(), counters.findings.load(Ordering::Relaxed), start.elapsed());
    Ok(counters.summary(&names, seconds, config.pool.workers, config.seed, skipped, store.dir().display().to_string()))
}

/// Each argument in words: `input = float32[2, 3] uniform in [-10, 10)`.
pub fn describe_inputs(plan: &ApiPlan, case: &Case) -> Vec<String> {
    use crate::case::{Arg, Fill};
    let tensor = |t: &crate::case::TensorRecipe| {
        let fill = match t.fill {
            Fill::Uniform { lo, hi } => format!("uniform in [{lo}, {hi})"),
            Fill::Int { lo, hi } => format!("integers in [{lo}, {hi})"),
            Fill::Constant(v) => format!("all {v}"),
        };
        let specials = if t.specials.is_empty() { String::new() } else { format!(", {} special values", t.specials.len()) };
        format!("{}{:?} {fill}{specials} (seed {})", t.dtype, t.shape, t.seed)
    };
    plan.api
        .params
        .iter()
        .zip(&case.args)
        .map(|(p, a)| {
            let v = match a {
                Arg::Omitted => "(default)".to_string(),
                Arg::None => "None".to_string(),
                Arg::Tensor(t) => tensor(t),
                Arg::TensorList(ts) => format!("[{}]", ts.iter().map(tensor).collect::<Vec<_>>().join(", ")),
                Arg::Float(f) => format!("{f:?}"),
                Arg::Str(s) => format!("{s:?}"),
                Arg::Dtype(d) => format!("torch.{d}"),
                Arg::Int(i) => i.to_string(),
                Arg::Bool(b) => if *b { "True".into() } else { "False".into() },
                Arg::IntList(v) => format!("{v:?}"),
                Arg::FloatList(v) => format!("{v:?}"),
                Arg::BoolList(v) => format!("{v:?}"),
            };
            format!("{} = {v}", p.name)
        })
        .collect()
}
