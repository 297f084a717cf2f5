//! Input generation benchmark: the figures issue 5 asks for, on specs/ against real libtorch.
//!
//! `cargo bench --bench generate` runs every part; name parts to run a subset:
//! `cargo bench --bench generate -- solve cases valid violate cost combos`.
//!
//! - `solve`: time to solve each API's pools (conform and violate jobs), one thread.
//! - `cases`: generated cases per second on one thread, per strategy, mode and mutation mix.
//! - `valid`: conform mode, 20 s campaign: the fraction of executions libtorch accepted, per API.
//! - `violate`: violate mode, 20 s: the fraction rejected, and rejected for the broken constraint.
//! - `cost`: execs/s with cases generated per execution (z3-solved pools, concretisation,
//!   mutation, evaluator checks) against replaying the same number of pre-generated cases.
//! - `combos`: distinct (dtype, rank, boundary class) combinations per API in 10 s campaigns:
//!   the naive generator, the solver without mutation, the solver with the default mix.
//! - `mix`: valid rate and combinations for candidate mutation mixes (how the default was chosen).
//!
//! Campaigns use two workers, 16 cases in flight each, like `sfz fuzz` on this machine.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sfz::findings::Store;
use sfz::fuzz::{self, FuzzConfig, Observer, Summary};
use sfz::gen::coverage::Coverage;
use sfz::gen::{GenConfig, Generator, Mode, Mutation, Strategy};
use sfz::ops::catalog::Catalog;
use sfz::oracle::{self, Status};
use sfz::plan::{self, ApiPlan};
use sfz::wire::case::Case;
use sfz::worker::{fetch_catalog, Pool, PoolConfig};

fn worker_exe() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_sfz")).with_file_name("sfz-worker")
}

fn plans() -> Vec<ApiPlan> {
    let checked = sfz::check::check_paths(&[Path::new(env!("CARGO_MANIFEST_DIR")).join("specs")]);
    assert!(!checked.has_errors(), "specs/ must check clean");
    let catalog = Catalog::from_schemas(fetch_catalog(&worker_exe()).expect("the worker lists its operators"));
    let (plans, diags) = plan::plan(&checked.spec, &catalog);
    assert!(diags.is_empty(), "every spec plans");
    plans
}

fn pool_config(plans: &[ApiPlan]) -> PoolConfig {
    PoolConfig {
        worker_exe: worker_exe(),
        workers: 2,
        in_flight: 16,
        timeout: Duration::from_secs(2),
        ops: plans.iter().map(|p| p.binding.clone()).collect(),
        ..PoolConfig::default()
    }
}

struct Quiet;

impl Observer for Quiet {
    fn progress(&self, _: u64, _: u64, _: Duration) {}
    fn finding(&self, _: &sfz::findings::Finding) {}
    fn trouble(&self, message: &str) {
        eprintln!("sfz: {message}");
    }
}

/// A campaign through `fuzz::run`, as `sfz fuzz` runs it, after solving its pools.
fn campaign(plans: &[ApiPlan], gen: GenConfig, seconds: u64) -> (Summary, f64) {
    let t = Instant::now();
    let (pools, _, skipped) = plan::solve_pools(plans, &gen);
    let solve = t.elapsed().as_secs_f64();
    let out = tempfile::tempdir().expect("tempdir");
    let store = Store::open(out.path()).expect("store");
    let config = FuzzConfig {
        seed: gen.seed,
        iterations: None,
        time: Some(Duration::from_secs(seconds)),
        pool: pool_config(plans),
        minimize: None,
        locations: Vec::new(),
        quarantine: Some(fuzz::QUARANTINE_AFTER),
        gen,
        first_case: 0,
        elapsed_before: 0.0,
        deadline: None,
        started: None,
        baseline: None,
    };
    let summary = fuzz::run(plans, fuzz::Pools::Solved(pools), skipped, &store, &config, &Quiet).expect("campaign runs");
    (summary, solve)
}

fn short(api: &str) -> &str {
    api.strip_prefix("torch.nn.functional.").or_else(|| api.strip_prefix("torch.")).unwrap_or(api)
}

fn solve(plans: &[ApiPlan]) {
    let config = GenConfig { mode: Mode::Violate, ..base_config() };
    println!("\n## solve: pools per API, one thread (pool {}, {} per broken constraint)\n", config.pool_size, config.violation_pool_size);
    println!("| API | conform job (s) | violate jobs (s) | models | boundary | breakable / constraints |");
    println!("|---|---|---|---|---|---|");
    let (mut total_c, mut total_v) = (0.0, 0.0);
    for (i, p) in plans.iter().enumerate() {
        let t = Instant::now();
        let conform = sfz::gen::run_job(&p.api, &config, i, sfz::gen::Job::Conform);
        let tc = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let violate: Vec<_> = (0..p.api.requires.len()).map(|k| sfz::gen::run_job(&p.api, &config, i, sfz::gen::Job::Violate(k))).collect();
        let tv = t.elapsed().as_secs_f64();
        total_c += tc;
        total_v += tv;
        let mut results = vec![conform];
        results.extend(violate);
        let pools = sfz::gen::assemble(&p.api, results).expect("solvable");
        let breakable = pools.violating.iter().filter(|m| !m.is_empty()).count();
        println!("| {} | {tc:.2} | {tv:.2} | {} | {} | {breakable} / {} |", short(&p.api.name), pools.models.len(), pools.boundary.len(), p.api.requires.len());
    }
    println!("| all | {total_c:.2} | {total_v:.2} | | | |");
}

fn cases(plans: &[ApiPlan]) {
    println!("\n## cases: generated cases per second, one thread (2 s each)\n");
    println!("| generator | mode | mutation | cases/s | conforming |");
    println!("|---|---|---|---|---|");
    let apis: Vec<_> = plans.iter().map(|p| p.api.clone()).collect();
    for (strategy, mode, mutation, label) in [
        (Strategy::Naive, Mode::Conform, Mutation::none(), "none"),
        (Strategy::Solver, Mode::Conform, Mutation::none(), "none"),
        (Strategy::Solver, Mode::Conform, Mutation::default(), "default"),
        (Strategy::Solver, Mode::Violate, Mutation::default(), "default"),
    ] {
        let config = GenConfig { seed: 1, strategy, mode, mutation, ..base_config() };
        let (pools, _, _) = plan::solve_pools(plans, &config);
        let generator = Generator::new(apis.clone(), pools, config);
        let t = Instant::now();
        let (mut n, mut ok) = (0u64, 0u64);
        while t.elapsed() < Duration::from_secs(secs(2)) {
            for _ in 0..256 {
                let g = generator.case(n).expect("a case");
                ok += g.conforms as u64;
                n += 1;
            }
        }
        let label_strategy = if strategy == Strategy::Naive { "naive" } else { "solver" };
        println!("| {label_strategy} | {} | {label} | {:.0} | {:.1}% |", mode.name(), n as f64 / t.elapsed().as_secs_f64(), 100.0 * ok as f64 / n as f64);
    }
}

fn valid(plans: &[ApiPlan]) {
    println!("\n## valid: conform mode, default mutation mix, 20 s\n");
    let (s, solve) = campaign(plans, GenConfig { seed: 11, ..base_config() }, secs(20));
    println!(
        "{} executions, {:.0} execs/s, pools solved in {solve:.1} s; valid rate over conforming executions: {:.2}%\n",
        s.executions,
        s.execs_per_second,
        100.0 * s.conform_valid_rate
    );
    println!("| API | conforming execs | valid | spec findings (first) |");
    println!("|---|---|---|---|");
    for a in &s.apis {
        let first = a.rejected_valid.iter().next().map(|(m, n)| format!("{n}x {m}")).unwrap_or_default();
        println!("| {} | {} | {:.2}% | {} |", short(&a.api), a.conform_executions, 100.0 * a.conform_valid_rate, first.replace('|', "\\|"));
    }
}

fn violate(plans: &[ApiPlan]) {
    println!("\n## violate: violate mode, default mutation mix, 20 s\n");
    let (s, _) = campaign(plans, GenConfig { seed: 12, mode: Mode::Violate, ..base_config() }, secs(20));
    println!(
        "{} violating executions: {:.1}% rejected by libtorch, {:.1}% rejected with an error naming the broken constraint\n",
        s.executions,
        100.0 * s.violate_rejected_rate,
        100.0 * s.violate_matched_rate
    );
    println!("| API | execs | rejected | named | accepted (most frequent constraint) |");
    println!("|---|---|---|---|---|");
    for a in &s.apis {
        let top = a.accepted_violations.iter().max_by_key(|(_, n)| **n).map(|(c, n)| format!("{n}x `{c}`")).unwrap_or_default();
        let r = |x: u64| if a.violate_executions == 0 { 0.0 } else { 100.0 * x as f64 / a.violate_executions as f64 };
        println!("| {} | {} | {:.1}% | {:.1}% | {} |", short(&a.api), a.violate_executions, r(a.violate_rejected), r(a.violate_matched), top.replace('|', "\\|"));
    }
}

/// Runs cases through a pool with the same judging sink; returns execs/s.
fn drive(plans: &[ApiPlan], seconds: u64, make: &(dyn Fn(u64) -> Option<Case> + Sync)) -> f64 {
    let pool = Pool::start(pool_config(plans)).expect("workers start");
    let start = Instant::now();
    let index = AtomicU64::new(0);
    let done = AtomicU64::new(0);
    let statuses = Mutex::new(BTreeMap::<String, u64>::new());
    let next = || {
        if start.elapsed() >= Duration::from_secs(seconds) {
            return None;
        }
        let i = index.fetch_add(1, Ordering::Relaxed);
        make(i).map(|c| (i, c))
    };
    let coverage: Vec<Coverage> = plans.iter().map(|p| Coverage::new(&p.api)).collect();
    // The per-execution work of `fuzz::run`'s sink that does not depend on how the case was
    // made: judging and coverage.
    let sink = |_: u64, case: &Case, exec: sfz::worker::Execution| {
        let api = &plans[case.op as usize].api;
        let verdict = oracle::judge(api, &[], case, &exec);
        coverage[case.op as usize].record(api, &case.args, verdict.status == Status::Ok);
        if verdict.status == Status::Failed {
            *statuses.lock().expect("lock").entry("failed".into()).or_insert(0) += 1;
        }
        done.fetch_add(1, Ordering::Relaxed);
    };
    pool.run(&next, &sink);
    done.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64()
}

fn cost(plans: &[ApiPlan]) {
    println!("\n## cost: execs/s, generation per execution vs replaying pre-generated cases (10 s each, 3 rounds)\n");
    let config = GenConfig { seed: 13, ..base_config() };
    let (pools, _, _) = plan::solve_pools(plans, &config);
    let generator = Generator::new(plans.iter().map(|p| p.api.clone()).collect(), pools, config);
    let pregenerated: Vec<Case> =
        (0..if smoke() { 4_096 } else { 65_536 }).map(|i| generator.case(i).map(|g| Case { op: g.api as u32, args: g.args, forward: None }).expect("a case")).collect();
    println!("| round | generated (execs/s) | replayed (execs/s) | ratio |");
    println!("|---|---|---|---|");
    let mut ratios = Vec::new();
    for round in 1..=3 {
        let generated = drive(plans, secs(10), &|i| generator.case(i).map(|g| Case { op: g.api as u32, args: g.args, forward: None }));
        let replayed = drive(plans, secs(10), &|i| Some(pregenerated[(i % pregenerated.len() as u64) as usize].clone()));
        ratios.push(generated / replayed);
        println!("| {round} | {generated:.0} | {replayed:.0} | {:.2} |", generated / replayed);
    }
    ratios.sort_by(f64::total_cmp);
    println!("\nmedian ratio {:.2}", ratios[1]);
}

fn combos(plans: &[ApiPlan]) {
    println!("\n## combos: distinct (dtype, rank, boundary class) per API, 10 s campaigns\n");
    let runs = [
        ("naive", GenConfig { seed: 14, strategy: Strategy::Naive, mutation: Mutation::none(), ..base_config() }),
        ("solver, no mutation", GenConfig { seed: 14, mutation: Mutation::none(), ..base_config() }),
        ("solver, default mix", GenConfig { seed: 14, ..base_config() }),
    ];
    let mut table: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut totals = Vec::new();
    for (label, gen) in runs {
        let (s, _) = campaign(plans, gen, secs(10));
        let mut total = (0, 0);
        for a in &s.apis {
            let c = a.coverage.as_ref().expect("coverage");
            total.0 += c.combos;
            total.1 += c.accepted_combos;
            table.entry(short(&a.api).to_string()).or_default().push(format!("{} ({})", c.combos, c.accepted_combos));
        }
        totals.push(format!("{} ({})", total.0, total.1));
        println!("{label}: {} executions, {:.1}% valid", s.executions, 100.0 * (1.0 - s.invalid_arguments as f64 / s.executions.max(1) as f64));
    }
    println!("\ncombinations reached (of which among cases libtorch accepted)\n");
    println!("| API | naive | solver, no mutation | solver, default mix |");
    println!("|---|---|---|---|");
    for (api, cells) in &table {
        println!("| {api} | {} |", cells.join(" | "));
    }
    println!("| all | {} |", totals.join(" | "));
}

fn mix(plans: &[ApiPlan]) {
    println!("\n## mix: candidate mutation mixes, conform mode, 10 s each\n");
    println!("| mix | valid (conforming) | combos | accepted combos | boundary classes (sum over APIs) |");
    println!("|---|---|---|---|---|");
    for text in [
        "none",
        "boundary=0.1,huge=0.001,special=0.1,layout=0.1,scalar=0.05,dtype=0.1",
        "dtype=0",
        "default",
        "dtype=0.6",
        "boundary=0.35,huge=0.005,special=0.35,layout=0.3,scalar=0.2,dtype=0.5",
    ] {
        let mutation = Mutation::parse(text).expect("mix parses");
        let (s, _) = campaign(plans, GenConfig { seed: 15, mutation, ..base_config() }, secs(10));
        let (mut combos, mut accepted, mut classes) = (0, 0, 0);
        for a in &s.apis {
            let c = a.coverage.as_ref().expect("coverage");
            combos += c.combos;
            accepted += c.accepted_combos;
            classes += c.boundary_classes;
        }
        println!("| {text} | {:.2}% | {combos} | {accepted} | {classes} |", 100.0 * s.conform_valid_rate);
    }
}

/// Under `cargo test --all-targets` (no `--bench` argument) every part runs on every
/// `SMOKE_STRIDE`th API and every timed part for a second: a smoke test that keeps the benchmark
/// from rotting without costing CI minutes (the full set solves its pools 17 times over).
static SMOKE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
const SMOKE_STRIDE: usize = 25;

fn smoke() -> bool {
    *SMOKE.get().unwrap_or(&false)
}

/// The default generation config, with small pools in the smoke test.
fn base_config() -> GenConfig {
    let config = GenConfig::default();
    if smoke() {
        GenConfig { pool_size: 8, ..config }
    } else {
        config
    }
}

fn secs(full: u64) -> u64 {
    if smoke() {
        1
    } else {
        full
    }
}

fn main() {
    let _ = SMOKE.set(!std::env::args().any(|a| a == "--bench"));
    let wanted: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let all = ["solve", "cases", "valid", "violate", "cost", "combos", "mix"];
    let run = |name: &str| wanted.is_empty() || wanted.iter().any(|w| w == name);
    if !all.iter().any(|p| run(p)) {
        println!("nothing to run; parts: {}", all.join(" "));
        return;
    }
    let plans = plans();
    let plans: Vec<ApiPlan> = if smoke() { plans.into_iter().step_by(SMOKE_STRIDE).collect() } else { plans };
    println!("# generation benchmark: {} APIs from specs/", plans.len());
    type Part = (&'static str, fn(&[ApiPlan]));
    let parts: [Part; 7] = [("solve", solve), ("cases", cases), ("valid", valid), ("violate", violate), ("cost", cost), ("combos", combos), ("mix", mix)];
    for (name, f) in parts {
        if run(name) {
            f(&plans);
        }
    }
}
