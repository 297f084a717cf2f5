//! `sfz fuzz`: check specs, plan them against libtorch's operators, solve their pools, run the
//! campaign with a progress bar, print the summary.
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use super::Color;
use clap::Parser;

use crate::campaign::manifest::spec_digest;
use crate::campaign::{Manifest, Progress, Shard};
use crate::diag::{self, codes, Diagnostic, RenderConfig};
use crate::findings::{Finding, Store};
use crate::fuzz::{self, FuzzConfig, Observer, Skipped, Summary};
use crate::gen::{GenConfig, Mode, Mutation, Strategy};
use crate::ops::catalog::Catalog;
use crate::solve::Limits;
use crate::worker::{default_worker_exe, fetch_catalog, PoolConfig};
use crate::{check, plan};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Spec files, or directories to search for `*.sfz`.
    #[arg(required_unless_present = "resume")]
    pub paths: Vec<PathBuf>,
    /// Seed of the run: the same seed and iterations execute the same cases.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The wall time of the whole command (`30s`, `10m`, `1h`): solving, fuzzing, confirming
    /// and shrinking findings, and the report all fit in it; findings not triaged by then are
    /// kept as found, marked pending, and `--resume` finishes them first. Without --time or
    /// --iterations, runs until Ctrl-C.
    #[arg(long, allow_hyphen_values = true)]
    pub time: Option<String>,
    /// Stop after this many cases.
    #[arg(long)]
    pub iterations: Option<u64>,
    /// Worker processes (default: one per core).
    #[arg(long, short = 'j')]
    pub workers: Option<usize>,
    /// Cases sent ahead to each worker; more hides pipe latency.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub in_flight: u64,
    /// A case running longer than this is a hang.
    #[arg(long, value_parser = parse_duration, default_value = "2s")]
    pub timeout: Duration,
    /// Memory limit of each worker, in MiB (at least 64), or `none` (also `0`) for no limit: a
    /// campaign with the `cuda` oracle on a GPU needs `none`, as CUDA reserves far more address
    /// space than it uses.
    #[arg(long, default_value = "4096")]
    pub memory_mb: String,
    /// Models solved per API before fuzzing starts.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub pool_size: u64,
    /// `conform` (every constraint obeyed), `violate` (exactly one constraint broken per case),
    /// or `mixed:RATIO` (that fraction violating; `mixed` alone is 0.2).
    #[arg(long, default_value = "conform", value_parser = Mode::parse)]
    pub mode: Mode,
    /// `solver` (z3-solved pools) or `naive` (independent random draws rejected until they
    /// conform; a baseline, conform mode only).
    #[arg(long, default_value = "solver", value_parser = Strategy::parse)]
    pub generator: Strategy,
    /// Boundary mutators and their probability per case, over the default mix:
    /// `special=0.3,layout=0`, or `none`. Mutators: boundary, huge, special, layout, scalar, dtype.
    #[arg(long, default_value = "default", value_parser = Mutation::parse)]
    pub mutate: Mutation,
    /// Time limit of one solver call, in milliseconds; an API whose solving gives up is skipped.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u32).range(1..))]
    pub solver_timeout: u32,
    /// Resource limit of one solver call, in z3's units: unlike the timeout, it gives up at the
    /// same point on any machine, loaded or not (for reproducible skips).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub solver_rlimit: Option<u32>,
    /// Only APIs whose name contains one of these strings.
    #[arg(long)]
    pub api: Vec<String>,
    /// Folder for findings and reproducers.
    #[arg(long, default_value = "sfz-out")]
    pub out: PathBuf,
    /// Print the summary as one JSON object on stdout (and no progress bar).
    #[arg(long)]
    pub json: bool,
    /// Known causes (a TOML baseline): their findings are recorded, marked, and counted apart.
    /// Default: `baseline.toml` of the sfz checkout, when there is one.
    #[arg(long)]
    pub baseline: Option<PathBuf>,
    /// Use no baseline.
    #[arg(long, conflicts_with = "baseline")]
    pub no_baseline: bool,
    /// Solve every API's inputs afresh instead of reading the pools this build solved before
    /// for the same specs and settings (kept in the cache folder, `$SFZ_CACHE_DIR` or
    /// `~/.cache/sfz`).
    #[arg(long)]
    pub no_solve_cache: bool,
    /// The worker executable (default: `sfz-worker` next to `sfz`).
    #[arg(long)]
    pub worker: Option<PathBuf>,
    /// Candidate cases run per finding while shrinking its input (0: keep findings as found).
    #[arg(long, default_value_t = 300)]
    pub minimize: u64,
    /// Worker deaths after which an API's cases stop running, a hang counting for 8 (0: never).
    #[arg(long, default_value_t = crate::fuzz::QUARANTINE_AFTER)]
    pub quarantine: u64,
    /// Time the differential oracles may take, as a share of the rest of the campaign's time
    /// (1 would keep half the crash-only throughput if checking were all; 0.75 leaves room for
    /// shrinking and confirming the findings checks make), `all` to check every case, or `none`
    /// for none at all (a crash-only campaign). Cases of a dtype and rank mix not yet checked
    /// are always checked, unless `none`.
    #[arg(long, default_value = "0.75", value_parser = parse_share)]
    pub check_share: CheckShare,
    /// Run shard K of N (`--shard 2/4`): this process takes its part of the APIs and a case
    /// stream of its own; N processes with the same seed cover the campaign once.
    /// --time and --iterations apply to each shard.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// With --shard: balance the shards by the time each API's cases took in this earlier
    /// campaign's folder (its `summaries.jsonl`; a merged folder holds every shard's). Without
    /// it, an API costs one call plus one per differential check.
    #[arg(long, value_name = "DIR", requires = "shard")]
    pub costs: Option<PathBuf>,
    /// Continue the campaign whose findings folder this is, where it stopped (the same
    /// arguments, the cases not yet judged, the time left); its findings are not reported again.
    /// Findings the clock or a signal left pending (not yet confirmed and shrunk) are triaged
    /// first; with no time left, they are all this run does. `--time T` here gives the resumed
    /// run T of its own.
    #[arg(long, value_name = "DIR", conflicts_with = "paths")]
    pub resume: Option<PathBuf>,
}

/// `--check-share`.
#[derive(Clone, Copy, Debug)]
pub enum CheckShare {
    /// Every case.
    All,
    /// Checked time at most this share of the rest.
    Share(f64),
    /// No differential check at all.
    Off,
}

impl CheckShare {
    /// The worker's budget: None checks every case.
    fn budget(self) -> Option<f64> {
        match self {
            CheckShare::All => None,
            CheckShare::Share(s) => Some(s),
            CheckShare::Off => Some(0.0),
        }
    }
}

fn parse_share(s: &str) -> Result<CheckShare, String> {
    match s {
        "all" => return Ok(CheckShare::All),
        "none" => return Ok(CheckShare::Off),
        _ => {}
    }
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(CheckShare::Share(v)),
        _ => Err(format!("`{s}` is not a share; write a number such as 0.5 or 1, `all` or `none`")),
    }
}

/// `--memory-mb`: MiB per worker, or None for no limit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MemoryLimit(pub Option<u64>);

impl MemoryLimit {
    /// The smallest limit a worker starts under (libtorch alone takes tens of MiB).
    pub const MIN_MB: u64 = 64;

    /// `none` or `0`: no limit; a whole number of MiB of at least `MIN_MB`: that limit.
    pub fn parse(s: &str) -> Result<MemoryLimit, String> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("none") {
            return Ok(MemoryLimit(None));
        }
        match s.parse::<u64>() {
            Ok(0) => Ok(MemoryLimit(None)),
            Ok(mb) if mb >= Self::MIN_MB => Ok(MemoryLimit(Some(mb))),
            Ok(mb) => Err(format!("{mb} MiB is below the {} MiB a worker needs to start", Self::MIN_MB)),
            Err(_) => Err("the limit is a whole number of MiB or `none`".into()),
        }
    }
}

/// `500ms`, `30s`, `10m`, `2h`, or a plain number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).map_or((s, ""), |i| s.split_at(i));
    let v: f64 = num.parse().map_err(|_| format!("`{s}` is not a duration; write e.g. 30s, 10m or 1h"))?;
    let secs = match unit {
        "" | "s" => v,
        "ms" => v / 1000.0,
        "m" | "min" => v * 60.0,
        "h" => v * 3600.0,
        other => return Err(format!("unknown unit `{other}` in `{s}`; use ms, s, m or h")),
    };
    if !secs.is_finite() || secs <= 0.0 {
        return Err(format!("`{s}` must be a positive duration"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// The share of `--time` (of what is left once the specs are checked) after which no solving job
/// starts: an API solved later would get few cases. The APIs not solved by then are skipped
/// (`plan::NOT_SOLVED_IN_TIME`).
const SOLVE_SHARE: f64 = 0.4;

/// How long after the first stop signal the process ends whatever it is doing (its workers
/// killed, the folder as the last atomic write left it): well inside Slurm's 30 s from SIGTERM
/// to SIGKILL.
const HARD_STOP: Duration = Duration::from_secs(10);

/// Less time left than this, a resumed campaign runs no more cases.
const MIN_RESUMED_TIME: Duration = Duration::from_secs(2);

struct Bar {
    bar: ProgressBar,
    quiet: bool,
    /// When the command must be over (`--time`).
    deadline: Option<Instant>,
    phase: std::sync::Mutex<fuzz::Phase>,
    /// The last counts, to redraw on a change of phase.
    counts: std::sync::Mutex<(u64, u64, Duration)>,
    /// Solving's jobs done, of all, and the APIs, while it runs.
    solving: std::sync::Mutex<Option<(usize, usize, usize)>>,
}

impl Bar {
    /// `, 12 s left` under a deadline.
    fn left(&self) -> String {
        self.deadline.map_or(String::new(), |d| format!("  {:.0} s left", d.saturating_duration_since(Instant::now()).as_secs_f64()))
    }

    /// Solving has done `done` of `all` jobs for `apis` APIs.
    fn solving(&self, done: usize, all: usize, apis: usize) {
        *self.solving.lock().expect("bar lock") = (done < all).then_some((done, all, apis));
        self.redraw();
    }

    fn redraw(&self) {
        let (executions, findings, elapsed) = *self.counts.lock().expect("bar lock");
        let rate = executions as f64 / elapsed.as_secs_f64().max(1e-9);
        let solving = *self.solving.lock().expect("bar lock");
        let jobs = solving.map_or(String::new(), |(done, all, apis)| format!("solving {done} of {all} jobs ({apis} APIs)"));
        let phase = match *self.phase.lock().expect("bar lock") {
            fuzz::Phase::Solving => {
                self.bar.set_message(format!("{jobs}{}", self.left()));
                return;
            }
            fuzz::Phase::Fuzzing if solving.is_some() => format!("fuzzing, {jobs}"),
            fuzz::Phase::Fuzzing => "fuzzing".to_string(),
            fuzz::Phase::Triage { waiting } => format!("confirming and shrinking ({waiting} waiting)"),
        };
        self.bar.set_message(format!("{phase}  {rate:>9.0} execs/s  {findings} findings{}", self.left()));
    }
}

impl Observer for Bar {
    fn progress(&self, executions: u64, findings: u64, elapsed: Duration) {
        self.bar.set_position(executions);
        *self.counts.lock().expect("bar lock") = (executions, findings, elapsed);
        self.redraw();
    }

    fn phase(&self, phase: fuzz::Phase) {
        *self.phase.lock().expect("bar lock") = phase;
        self.redraw();
    }

    fn finding(&self, f: &Finding) {
        if !self.quiet {
            let first = f.message.lines().next().unwrap_or("");
            self.bar.println(format!("new {} on {}: {first}\n    reproducer: {}", f.oracle, f.api, f.repro));
        }
    }

    fn minimized(&self, f: &Finding) {
        if let (false, Some(m)) = (self.quiet, &f.minimization) {
            if m.steps > 0 {
                self.bar.println(format!("    {}: input shrunk from {} to {} elements", f.id, m.elements_before, m.elements_after));
            }
        }
    }

    fn trouble(&self, message: &str) {
        self.bar.suspend(|| eprintln!("sfz: {message}"));
    }
}

pub fn run(args: Args, color: Color) -> anyhow::Result<ExitCode> {
    // `--time` counts from here: checking, solving, fuzzing, triage and the summary.
    let command_start = Instant::now();
    let render = RenderConfig { color: color.stderr() };
    // `--resume DIR --time T`: this run's own time, in place of what the campaign has left.
    let more_time = args.resume.as_ref().and(args.time.clone());
    let (args, progress, started) = match &args.resume {
        Some(dir) => match resumed(dir) {
            Ok(resumed) => resumed,
            Err(d) => {
                eprint!("{}", diag::render(&diag::SourceMap::default(), &d, render));
                return Ok(ExitCode::from(2));
            }
        },
        None => (args, Progress::default(), None),
    };
    let shard = match args.shard.as_deref().map(Shard::parse).transpose() {
        Ok(s) => s,
        Err(e) => {
            let text = args.shard.as_deref().unwrap_or("");
            let d = Diagnostic::new(codes::E0103, format!("`{text}` is not a shard")).with_note(e.to_string()).with_help(
                "write --shard K/N with 1 <= K <= N, e.g. --shard 1/4 for the first of four (Slurm: --shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT with --array=1-N)",
            );
            eprint!("{}", diag::render(&diag::SourceMap::default(), &d, render));
            return Ok(ExitCode::from(2));
        }
    };
    let memory_mb = match MemoryLimit::parse(&args.memory_mb) {
        Ok(m) => m.0,
        Err(why) => {
            let d = Diagnostic::new(codes::E0106, format!("`{}` is not a memory limit", args.memory_mb))
                .with_note(why)
                .with_help("write --memory-mb with a number of MiB of at least 64 (e.g. 4096), or `none` (or 0) for no limit, as a GPU run needs");
            eprint!("{}", diag::render(&diag::SourceMap::default(), &d, render));
            return Ok(ExitCode::from(2));
        }
    };
    let time = match more_time.as_deref().or(args.time.as_deref()).map(parse_duration).transpose() {
        Ok(t) => t,
        Err(why) => {
            let d = Diagnostic::new(codes::E0109, format!("`{}` is not a campaign time", more_time.as_deref().or(args.time.as_deref()).unwrap_or("")))
                .with_note(why)
                .with_help("write --time with a positive duration such as 30s, 10m or 2h (the wall time of the whole campaign), or --iterations N for a number of cases");
            eprint!("{}", diag::render(&diag::SourceMap::default(), &d, render));
            return Ok(ExitCode::from(2));
        }
    };
    if progress.finished {
        eprintln!("sfz: the campaign in {} has already run to its end; nothing to resume", args.out.display());
        return Ok(ExitCode::SUCCESS);
    }
    super::missing_paths(&args.paths)?;
    // Fail on an unusable output folder before any work starts.
    let baseline = match (&args.baseline, args.no_baseline) {
        (_, true) => None,
        (Some(path), _) => Some(path.clone()),
        (None, false) => super::report::default_baseline(),
    };
    let baseline = match baseline.map(|p| super::report::load_baseline(&p, color)).transpose() {
        Ok(b) => b,
        Err(code) => return Ok(code),
    };
    let store = Store::open(&args.out)?;
    eprint!("{}", super::report::skipped_lines(&args.out.join("findings.jsonl"), &store.previous, &store.skipped, color));

    // The check's caches, as `sfz check` keeps them (satisfiability verdicts, syntax trees):
    // uncached, checking a large spec folder takes seconds of the campaign's --time.
    let (sat_cache, trees) = (check::sat::default_path(), check::parsed::default_path());
    if let Some(path) = &sat_cache {
        check::sat::load(path);
    }
    if let Some(path) = &trees {
        check::parsed::load(path);
    }
    let checked = check::check_paths(&args.paths);
    // A cache that cannot be written only makes the next run slower.
    if let Some(path) = &sat_cache {
        let _ = check::sat::save(path);
    }
    if let Some(path) = &trees {
        let _ = check::parsed::save(path);
    }
    if checked.has_errors() {
        eprint!("{}", diag::render_all(&checked.map, &checked.diags, render));
        eprintln!("sfz: the specs have errors; fix them first (`sfz check` shows the same)");
        return Ok(ExitCode::from(1));
    }

    let worker_exe = args.worker.clone().unwrap_or_else(default_worker_exe);
    // Cached per worker binary, as `sfz check` caches it: no libtorch to load before solving.
    let catalog = match super::check::catalog(&worker_exe) {
        Ok(c) => c,
        Err(_) => Catalog::from_schemas(fetch_catalog(&worker_exe)?),
    };
    let mut spec = checked.spec;
    if !args.api.is_empty() {
        spec.apis.retain(|a| args.api.iter().any(|f| a.name.contains(f.as_str())));
    }
    let (mut plans, plan_diags) = plan::plan(&spec, &catalog);
    if matches!(args.check_share, CheckShare::Off) {
        plans.iter_mut().for_each(|p| p.checks.clear());
    }
    let mut skipped: Vec<Skipped> = Vec::new();
    if !plan_diags.is_empty() {
        eprint!("{}", diag::render_all(&checked.map, &plan_diags, render));
        let planned: Vec<&str> = plans.iter().map(|p| p.api.name.as_str()).collect();
        for api in spec.apis.iter().filter(|a| !planned.contains(&a.name.as_str())) {
            skipped.push(Skipped { api: api.name.clone(), reason: "no matching libtorch operator (see above)".into() });
        }
    }
    let digest = spec_digest(checked.map.ids().map(|id| checked.map.get(id)).map(|f| (f.name.as_str(), f.text.as_str())));
    let mine = match (shard, started.as_ref().and_then(|m| m.apis.clone())) {
        (None, _) => None,
        // A resumed shard takes what it took, whatever the costs say now.
        (Some(_), Some(apis)) => Some(apis.into_iter().collect::<std::collections::HashSet<String>>()),
        (Some(shard), None) => {
            let measured = match &args.costs {
                Some(dir) => crate::campaign::costs::measured(dir)
                    .map_err(|e| anyhow::anyhow!("cannot read the costs in `{}`: {e} (give the --out folder of an earlier campaign)", dir.display()))?,
                None => Default::default(),
            };
            Some(shard_apis(shard, &spec.apis, &plans, &measured))
        }
    };
    match &started {
        Some(m) if m.specs != digest => eprintln!("sfz: warning: the specs changed since this campaign started; a case index now makes another case"),
        Some(_) => {}
        // A resumed campaign keeps the manifest that started it.
        None => {
            let mut apis: Option<Vec<String>> = mine.as_ref().map(|m| m.iter().cloned().collect());
            if let Some(a) = &mut apis {
                a.sort();
            }
            let manifest = Manifest {
                sfz_version: env!("CARGO_PKG_VERSION").to_string(),
                argv: own_argv(),
                cwd: std::env::current_dir().unwrap_or_default(),
                seed: args.seed,
                shard,
                specs: digest.clone(),
                apis,
            };
            manifest.write(&args.out).map_err(|e| anyhow::anyhow!("cannot write the campaign manifest in `{}`: {e}", args.out.display()))?;
        }
    }
    if let (Some(shard), Some(mine)) = (shard, mine) {
        plans.retain(|p| mine.contains(&p.api.name));
        skipped.retain(|s| mine.contains(&s.api));
        if plans.is_empty() && skipped.is_empty() {
            eprintln!("sfz: shard {shard} has no APIs: there are {} and {} shards", spec.apis.len(), shard.count);
            let _ = Progress { finished: true, ..progress }.write(&args.out);
            return Ok(ExitCode::SUCCESS);
        }
    }
    let seed = shard.map_or(args.seed, |s| s.seed(args.seed));

    if args.generator == Strategy::Naive && args.mode != Mode::Conform {
        eprintln!("sfz: the naive generator only makes conforming inputs; use `--mode conform` with it");
        return Ok(ExitCode::from(2));
    }
    let gen_config = GenConfig {
        seed,
        pool_size: args.pool_size as usize,
        limits: Limits { timeout_ms: args.solver_timeout, rlimit: args.solver_rlimit, ..Limits::default() },
        mode: args.mode,
        strategy: args.generator,
        mutation: args.mutate.clone(),
        ..Default::default()
    };
    // A resumed campaign whose time is spent but whose triage is not runs no case: it triages
    // the findings left pending, with no deadline, and skips solving.
    let mut triage_only = false;
    let mut iterations = args.iterations;
    let time = match time {
        Some(t) if more_time.is_some() => Some(t),
        Some(t) => match t.checked_sub(Duration::from_secs_f64(progress.elapsed_s)) {
            // What a campaign that ran to its clock leaves unspent (its end margin) is no time
            // to run in.
            Some(left) if left >= MIN_RESUMED_TIME || started.is_none() => Some(left),
            _ if args.minimize > 0 && !store.pending().is_empty() => {
                eprintln!("sfz: the campaign in {} has used its --time; triaging the findings it left pending", args.out.display());
                triage_only = true;
                iterations = Some(progress.next_case);
                None
            }
            _ => {
                eprintln!("sfz: the campaign in {} has used its --time; nothing to resume", args.out.display());
                let _ = Progress { finished: true, ..progress }.write(&args.out);
                return Ok(ExitCode::SUCCESS);
            }
        },
        None => None,
    };
    let deadline = time.map(|t| command_start + t);
    install_interrupt_handler();
    let bar = if args.json { ProgressBar::hidden() } else { ProgressBar::new_spinner() };
    bar.set_style(ProgressStyle::with_template("{spinner} {elapsed_precise} {pos:>10} execs {msg}").unwrap_or_else(|_| ProgressStyle::default_spinner()));
    bar.enable_steady_tick(Duration::from_millis(200));
    let observer =
        Bar { bar: bar.clone(), quiet: args.json, deadline, phase: std::sync::Mutex::new(fuzz::Phase::Solving), counts: Default::default(), solving: Default::default() };
    // Every core solves. Under --time, solving runs beside the campaign, which fuzzes each API
    // as soon as it is solved; without, every API is solved first, so that case `i` is the same
    // on any machine.
    let solve_start = Instant::now();
    let stop = || fuzz::INTERRUPTED.load(Ordering::Relaxed);
    let shown = |done: usize, all: usize| observer.solving(done, all, plans.len());
    let cache = if args.no_solve_cache { None } else { crate::gen::cache::SolveCache::open() };
    // Under --time: no job starts in the last part of it, where an API's few cases would not
    // pay for its solving.
    let solve_deadline = deadline.map(|d| solve_start + d.saturating_duration_since(solve_start).mul_f64(SOLVE_SHARE));
    let solve_end: std::sync::Mutex<Option<f64>> = Default::default();
    let streamed_skips: std::sync::Mutex<Vec<Skipped>> = Default::default();
    let streamed = |ready: &(dyn Fn(usize, crate::gen::ApiPools) + Sync), ended: &(dyn Fn() -> bool + Sync)| {
        let stop = || stop() || ended();
        let budget = crate::gen::SolveBudget { deadline: solve_deadline, stop: Some(&stop), progress: Some(&shown), cache: cache.as_ref() };
        let failed = |d: Option<Diagnostic>, s: Skipped| {
            if let Some(d) = d {
                bar.suspend(|| eprint!("{}", diag::render_all(&checked.map, &[d], render)));
            }
            streamed_skips.lock().expect("skips lock").push(s);
        };
        let unsolved = plan::solve_pools_streaming(&plans, &gen_config, &budget, ready, &failed);
        streamed_skips.lock().expect("skips lock").extend(unsolved);
        *solve_end.lock().expect("solve lock") = Some(solve_start.elapsed().as_secs_f64());
    };
    let too_short = || {
        let asked = args.time.as_deref().unwrap_or("");
        Diagnostic::new(codes::E0110, format!("--time {asked} is too short to solve any API's inputs"))
            .with_note(format!("no solving starts after {:.0}% of the time, and by then it had finished none of the {} APIs", 100.0 * SOLVE_SHARE, plans.len()))
            .with_help("give a longer --time, or fewer APIs (--api NAME, --shard K/N)")
    };
    if !triage_only && solve_deadline.is_some_and(|d| d <= Instant::now()) {
        bar.finish_and_clear();
        eprint!("{}", diag::render(&diag::SourceMap::default(), &too_short(), render));
        return Ok(ExitCode::from(1));
    }
    let pools = if triage_only {
        fuzz::Pools::Solved(vec![Default::default(); plans.len()])
    } else if deadline.is_some() {
        fuzz::Pools::Streamed(&streamed)
    } else {
        let budget = crate::gen::SolveBudget { deadline: None, stop: Some(&stop), progress: Some(&shown), cache: cache.as_ref() };
        let (pools, pool_diags, pool_skips) = plan::solve_pools_until(&plans, &gen_config, &budget);
        *solve_end.lock().expect("solve lock") = Some(solve_start.elapsed().as_secs_f64());
        bar.suspend(|| eprint!("{}", diag::render_all(&checked.map, &pool_diags, render)));
        skipped.extend(pool_skips);
        if stop() {
            return Ok(stopped_while_solving(&bar, &args.out, progress, command_start));
        }
        fuzz::Pools::Solved(pools)
    };

    let workers = args.workers.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())).max(1);
    if progress.next_case > 0 {
        eprintln!("sfz: resuming at case {} after {:.1} s", progress.next_case, progress.elapsed_s);
    }
    let config = FuzzConfig {
        seed,
        iterations,
        time,
        pool: PoolConfig {
            worker_exe,
            workers,
            in_flight: args.in_flight as usize,
            timeout: args.timeout,
            memory_mb,
            ops: Vec::new(),
            check_share: args.check_share.budget(),
            ..PoolConfig::default()
        },
        gen: gen_config.clone(),
        minimize: (args.minimize > 0).then_some(args.minimize),
        locations: plans.iter().map(|p| location(&checked.map, p.api.span)).collect(),
        quarantine: (args.quarantine > 0).then_some(args.quarantine),
        first_case: progress.next_case,
        elapsed_before: progress.elapsed_s,
        baseline,
        deadline,
        started: Some(command_start),
    };
    let result = fuzz::run(&plans, pools, skipped, &store, &config, &observer);
    let streamed_skips = streamed_skips.into_inner().expect("skips lock");
    let unsolved = streamed_skips.iter().filter(|s| s.reason == plan::NOT_SOLVED_IN_TIME).count() as u64;
    let summary = match result {
        Ok(mut s) => {
            s.solve_seconds = solve_end.into_inner().expect("solve lock").unwrap_or(0.0);
            s.solved_beside = !triage_only && deadline.is_some();
            s.shard = shard.map(|s| s.to_string());
            s.unsolved = unsolved;
            s.skipped.extend(streamed_skips);
            s.wall_seconds = command_start.elapsed().as_secs_f64();
            s
        }
        Err(fuzz::FuzzError::NothingToFuzz) if fuzz::INTERRUPTED.load(Ordering::Relaxed) => {
            return Ok(stopped_while_solving(&bar, &args.out, progress, command_start));
        }
        Err(fuzz::FuzzError::NothingToFuzz) if unsolved > 0 => {
            bar.finish_and_clear();
            eprint!("{}", diag::render(&diag::SourceMap::default(), &too_short(), render));
            return Ok(ExitCode::from(1));
        }
        Err(fuzz::FuzzError::NothingToFuzz) => {
            bar.finish_and_clear();
            eprintln!("sfz: nothing to fuzz: every API was skipped (see the messages above)");
            return Ok(ExitCode::from(1));
        }
        Err(e) => return Err(e.into()),
    };
    bar.finish_and_clear();
    // One line per run or resumption, which merging sums; a folder that takes no more writes
    // does without.
    let _ = append_summary(&args.out, &summary);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        eprint!("{}", table(&summary));
    }
    if summary.unwritten > 0 {
        let d = Diagnostic::new(
            codes::E0104,
            format!("{} finding{} could not be written to `{}`", summary.unwritten, if summary.unwritten == 1 { "" } else { "s" }, args.out.display()),
        )
        .with_note(format!("the first: {}", summary.write_error.as_deref().unwrap_or("unknown error")))
        .with_note(format!("the campaign stopped; the findings already in the folder are intact, and every case below {} was judged", summary.next_case))
        .with_help(format!("free space in (or give write access to) the folder, then continue with `sfz fuzz --resume {}`", args.out.display()));
        eprint!("{}", diag::render(&diag::SourceMap::default(), &d, render));
        return Ok(ExitCode::from(2));
    }
    if summary.triage_pending > 0 {
        eprintln!(
            "sfz: {} finding{} not yet confirmed and shrunk (triage pending); `sfz fuzz --resume {}` finishes them first",
            summary.triage_pending,
            if summary.triage_pending == 1 { " is" } else { "s are" },
            args.out.display()
        );
    }
    if summary.stopped_by.is_some() {
        return Ok(stopped_status());
    }
    Ok(ExitCode::SUCCESS)
}

/// The exit status of a campaign a signal stopped: 128 + the signal (130 for SIGINT, 143 for
/// SIGTERM), as a shell reports a process the signal killed.
/// A campaign stopped by a signal before any case ran: said so, its clock kept for `--resume`.
fn stopped_while_solving(bar: &ProgressBar, out: &Path, progress: Progress, command_start: Instant) -> ExitCode {
    bar.finish_and_clear();
    eprintln!("sfz: stopped while solving; nothing ran (`sfz fuzz --resume {}` starts it again)", out.display());
    let _ = Progress { elapsed_s: progress.elapsed_s + command_start.elapsed().as_secs_f64(), ..progress }.write(out);
    stopped_status()
}

fn stopped_status() -> ExitCode {
    match fuzz::SIGNAL.load(Ordering::Relaxed) {
        0 => ExitCode::from(130),
        sig => ExitCode::from((128 + sig) as u8),
    }
}

/// The arguments after `fuzz` this process was given, as the manifest keeps them.
fn own_argv() -> Vec<String> {
    let mut argv: Vec<String> = std::env::args().skip(1).collect();
    if let Some(i) = argv.iter().position(|a| a == "fuzz") {
        argv.remove(i);
    }
    argv
}

/// The arguments, progress and manifest of the campaign of folder `dir`, or E0105. Relative paths
/// mean what they meant when it started, so this process moves to that folder.
fn resumed(dir: &Path) -> Result<(Args, Progress, Option<Manifest>), Diagnostic> {
    let not_a_campaign = |why: String| {
        Diagnostic::new(codes::E0105, format!("`{}` is not a campaign sfz can resume", dir.display()))
            .with_note(why)
            .with_help("give the --out folder of a `sfz fuzz` run (it holds campaign.json), or start a campaign with `sfz fuzz SPECS --out DIR`")
    };
    let manifest = Manifest::load(dir).map_err(|e| not_a_campaign(e.to_string()))?;
    let out = std::fs::canonicalize(dir).map_err(|e| not_a_campaign(e.to_string()))?;
    std::env::set_current_dir(&manifest.cwd).map_err(|e| not_a_campaign(format!("cannot enter `{}`, where it started: {e}", manifest.cwd.display())))?;
    let argv = ["sfz", "fuzz"].into_iter().map(String::from).chain(manifest.argv.iter().cloned());
    let mut args = match super::Cli::try_parse_from(argv) {
        Ok(super::Cli { command: super::Command::Fuzz(args), .. }) => *args,
        Ok(_) => return Err(not_a_campaign("its manifest holds no `sfz fuzz` command".into())),
        Err(e) => return Err(not_a_campaign(format!("its command line no longer parses: {}", e.kind()))),
    };
    args.out = out;
    args.resume = None;
    let progress = Progress::load(&args.out);
    Ok((args, progress, Some(manifest)))
}

/// The names of the APIs shard `shard` takes. An API costs its measured time per case where
/// `measured` has it (the median of the measured ones where not); with no measurement, it is
/// estimated as one call plus one per differential check planned for it (a check runs the
/// case again), one for an API without a plan.
fn shard_apis(shard: Shard, apis: &[crate::spec::ApiSpec], plans: &[plan::ApiPlan], measured: &std::collections::HashMap<String, f64>) -> std::collections::HashSet<String> {
    let (_, checks) = plan::op_table(plans);
    let names: Vec<&str> = apis.iter().map(|a| a.name.as_str()).collect();
    let estimates: Vec<f64> = apis.iter().map(|a| plans.iter().position(|p| p.api.name == a.name).map_or(1.0, |i| 1.0 + checks.get(i).map_or(0, Vec::len) as f64)).collect();
    let costs = crate::campaign::costs::blend(&names, measured, &estimates);
    shard.take(&names, &costs).into_iter().map(|i| names[i].to_string()).collect()
}

/// Appends the summary as one line of `summaries.jsonl`.
fn append_summary(dir: &Path, summary: &Summary) -> std::io::Result<()> {
    use std::io::Write;
    let line = serde_json::to_string(summary).map_err(std::io::Error::other)?;
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(dir.join(crate::campaign::merge::SUMMARIES))?;
    f.write_all(format!("{line}\n").as_bytes())
}

/// The file and 1-based line of a span, as a finding records where its API is specified.
pub fn location(map: &crate::diag::SourceMap, span: crate::diag::Span) -> Option<crate::findings::SpecLocation> {
    if span.file.0 as usize >= map.len() {
        return None;
    }
    let file = map.get(span.file);
    let (line, _) = file.line_col_utf16(span.lo as usize);
    Some(crate::findings::SpecLocation { file: file.name.clone(), line: line + 1 })
}

/// Stop signals received (SIGINT, SIGTERM).
static SIGNALS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Ctrl-C, and a scheduler's SIGTERM before its SIGKILL, stop the campaign: no new case starts,
/// the triage has `fuzz::SIGNAL_GRACE` more, then the summary is printed, nothing found is lost,
/// and `--resume` goes on from there. A second signal, or `HARD_STOP` after the first, ends the
/// process at once: its workers killed first, the folder as the last atomic write left it
/// (findings appended line by line, rewritten by rename), the triage left pending.
fn install_interrupt_handler() {
    extern "C" fn on_interrupt(sig: libc::c_int) {
        if SIGNALS.fetch_add(1, Ordering::Relaxed) == 0 {
            fuzz::SIGNAL.store(sig, Ordering::Relaxed);
        }
        fuzz::INTERRUPTED.store(true, Ordering::Relaxed);
    }
    // SAFETY: the handler only touches atomics, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_interrupt as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_interrupt as *const () as libc::sighandler_t);
    }
    // The watcher that ends the process: outside the handler, where allocating is allowed.
    std::thread::spawn(|| {
        let mut first: Option<Instant> = None;
        loop {
            std::thread::sleep(Duration::from_millis(20));
            let n = SIGNALS.load(Ordering::Relaxed);
            if n == 0 {
                continue;
            }
            let since = *first.get_or_insert_with(Instant::now);
            if n >= 2 || since.elapsed() >= HARD_STOP {
                crate::worker::kill_descendants();
                let sig = fuzz::SIGNAL.load(Ordering::Relaxed);
                let why = if n >= 2 { "by a second signal" } else { "10 s after the signal" };
                eprintln!("\nsfz: stopped at once {why}; findings not triaged stay pending (`sfz fuzz --resume` finishes them)");
                // SAFETY: ends the process without running destructors (other threads are mid-work).
                unsafe { libc::_exit(128 + sig) };
            }
        }
    });
}

fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The end-of-run table.
pub fn table(s: &Summary) -> String {
    let mut out = String::new();
    let pct = |part: u64, whole: u64| if whole == 0 { 0.0 } else { 100.0 * part as f64 / whole as f64 };
    out.push_str(&format!(
        "\n  executions  {} in {:.1} s ({} execs/s, {} worker{}; pools solved{} in {:.1} s)\n",
        thousands(s.executions),
        s.seconds,
        thousands(s.execs_per_second.round() as u64),
        s.workers,
        if s.workers == 1 { "" } else { "s" },
        if s.solved_beside { " beside the cases" } else { "" },
        s.solve_seconds
    ));
    let first = s.first_case_seconds.map_or("no case ran".to_string(), |t| format!("first case after {t:.1} s"));
    let stopped = s.stopped_by.as_ref().map_or(String::new(), |sig| format!(", stopped by {sig}"));
    out.push_str(&format!("  clock       {first}, {:.1} s in all{stopped}\n", s.wall_seconds));
    if s.unsolved > 0 {
        out.push_str(&format!("  unsolved    {} APIs not solved within the solving share of --time (skipped)\n", thousands(s.unsolved)));
    }
    if s.triage_pending > 0 {
        out.push_str(&format!("  pending     {} findings recorded as found, not yet confirmed and shrunk (--resume finishes them)\n", s.triage_pending));
    }
    out.push_str(&format!("  generation  {} mode, {} generator\n", s.mode, s.generator));
    out.push_str(&format!("  invalid     {} ({:.1}% rejected by argument checks)\n", thousands(s.invalid_arguments), pct(s.invalid_arguments, s.executions)));
    let conform: u64 = s.apis.iter().map(|a| a.conform_executions).sum();
    let violate: u64 = s.apis.iter().map(|a| a.violate_executions).sum();
    if conform > 0 {
        out.push_str(&format!("  conforming  {} cases, {:.1}% accepted by libtorch\n", thousands(conform), 100.0 * s.conform_valid_rate));
    }
    if violate > 0 {
        let accepted: u64 = s.apis.iter().map(|a| a.violate_accepted).sum();
        out.push_str(&format!(
            "  violating   {} cases, {:.1}% rejected ({:.1}% naming the broken constraint), {} accepted\n",
            thousands(violate),
            100.0 * s.violate_rejected_rate,
            100.0 * s.violate_matched_rate,
            thousands(accepted)
        ));
    }
    let by: Vec<String> = s.findings_by_oracle.iter().map(|(o, n)| format!("{o} {n}")).collect();
    out.push_str(&format!(
        "  findings    {} new{}, {} duplicate occurrences, {} worker restarts\n",
        s.findings,
        if by.is_empty() { String::new() } else { format!(" ({})", by.join(", ")) },
        thousands(s.duplicates),
        s.worker_restarts
    ));
    if !s.findings_by_severity.is_empty() {
        let by: Vec<String> = s.findings_by_severity.iter().map(|(sev, n)| format!("{sev} {n}")).collect();
        let known = if s.known_findings > 0 { format!("; {} of a cause the baseline knows", s.known_findings) } else { String::new() };
        out.push_str(&format!("  severity    {} (worst first){known}\n", by.join(", ")));
    }
    if !s.implausible.is_empty() {
        let total: u64 = s.implausible.values().sum();
        let by: Vec<String> = s.implausible.iter().map(|(why, n)| format!("{why} {}", thousands(*n))).collect();
        out.push_str(&format!("  implausible {} numerical disagreements counted, not reported: {}\n", thousands(total), by.join(", ")));
    }
    if s.spec_findings > 0 {
        out.push_str(&format!("  spec        {} inputs the spec allows were rejected (spec-findings.jsonl)\n", s.spec_findings));
    }
    out.push_str(&format!("  seed        {}   findings in {}\n\n", s.seed, s.out));
    let width = s.apis.iter().map(|a| a.api.len()).max().unwrap_or(3).max(3);
    out.push_str(&format!("  {:width$}  {:>10}  {:>7}  {:>8}  {:>7}  {:>9}  {:>8}  {:>6}\n", "API", "execs", "valid", "failures", "dtypes", "branches", "boundary", "combos"));
    for a in &s.apis {
        let (dtypes, branches, boundary, combos) = match &a.coverage {
            Some(c) => {
                let reached: usize = c.dtypes.values().map(Vec::len).sum();
                let possible: usize = c.dtypes_possible.values().map(Vec::len).sum();
                (
                    format!("{reached}/{possible}"),
                    format!("{}/{}", c.outcomes_reached, c.outcomes_total),
                    format!("{}/{}", c.boundary_classes, crate::gen::coverage::Class::ALL.len()),
                    c.combos.to_string(),
                )
            }
            None => Default::default(),
        };
        out.push_str(&format!(
            "  {:width$}  {:>10}  {:>6.1}%  {:>8}  {:>7}  {:>9}  {:>8}  {:>6}\n",
            a.api,
            thousands(a.executions),
            100.0 * a.valid_rate,
            a.failures,
            dtypes,
            branches,
            boundary,
            combos
        ));
    }
    let rejected: Vec<&crate::fuzz::stats::ApiSummary> = s.apis.iter().filter(|a| !a.rejected_valid.is_empty()).collect();
    if !rejected.is_empty() {
        out.push_str("\n  libtorch rejected inputs the spec allows (a constraint missing from the spec?):\n");
        for a in rejected {
            for (msg, n) in a.rejected_valid.iter().take(3) {
                out.push_str(&format!("    {} ({n}x): {msg}\n", a.api));
            }
        }
    }
    let accepted: Vec<&crate::fuzz::stats::ApiSummary> = s.apis.iter().filter(|a| !a.accepted_violations.is_empty()).collect();
    if !accepted.is_empty() {
        out.push_str("\n  libtorch accepted inputs that break a constraint (stricter than libtorch, or a missing check?):\n");
        for a in accepted {
            for (c, n) in a.accepted_violations.iter().take(3) {
                out.push_str(&format!("    {} ({n}x): {c}\n", a.api));
            }
        }
    }
    // Unsolved APIs are counted above; a campaign over a large folder would list thousands.
    for sk in s.skipped.iter().filter(|sk| sk.reason != plan::NOT_SOLVED_IN_TIME) {
        out.push_str(&format!("  skipped {}: {}\n", sk.api, sk.reason));
    }
    for a in s.apis.iter().filter(|a| a.quarantined) {
        out.push_str(&format!("  quarantined {}: it killed the worker {} times; {} later cases not run (--quarantine)\n", a.api, a.worker_deaths, thousands(a.quarantined_cases)));
    }
    out
}
