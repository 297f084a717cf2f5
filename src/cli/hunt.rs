//! `sfz hunt`: run the `program` items of spec files in workers and search for inputs that make
//! an intermediate NaN or INF (random mutation or gradient-guided, with soft assertions);
//! a report per program and a Python reproducer per bug go to --out as they are found.
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::ValueEnum;
use serde::Serialize;

use super::fuzz::parse_duration;
use super::Color;
use crate::diag::{self, RenderConfig};
use crate::numeric::driver::{hunt_program, HuntConfig, Outcome};
use crate::numeric::hunt::Strategy;
use crate::numeric::program::ProgramSpec;
use crate::numeric::report::{python_reproducer, report, Report};
use crate::numeric::soft::{self, SoftModels};
use crate::worker::supervisor::{self, HuntWorker};
use crate::check;

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum StrategyArg {
    Gradient,
    Random,
    /// Both, one after the other, for comparison.
    Both,
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Spec files, or directories to search for `*.sfz`.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    #[arg(long, value_enum, default_value_t = StrategyArg::Gradient)]
    pub strategy: StrategyArg,
    /// Program evaluations per episode.
    #[arg(long, default_value_t = 400, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub budget: u32,
    /// Episodes per program, each from fresh starting inputs.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub episodes: u32,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Soft-assertion models (default: those in the standard library, trained by `sfz train`).
    #[arg(long)]
    pub models: Option<PathBuf>,
    /// Run without soft assertions.
    #[arg(long)]
    pub no_soft: bool,
    /// Only programs whose name contains one of these strings.
    #[arg(long)]
    pub program: Vec<String>,
    /// Folder for reports and reproducers.
    #[arg(long, default_value = "sfz-hunt")]
    pub out: PathBuf,
    /// An episode running longer than this is a hang.
    #[arg(long, value_parser = parse_duration, default_value = "20s")]
    pub timeout: Duration,
    /// Print the reports as one JSON array on stdout.
    #[arg(long)]
    pub json: bool,
    /// The worker executable (default: `sfz-worker` next to `sfz`).
    #[arg(long)]
    pub worker: Option<PathBuf>,
}

/// Checks `paths` and returns their runnable programs (filtered by name), or prints the
/// diagnostics and returns None.
pub fn programs(paths: &[PathBuf], filter: &[String], color: Color) -> anyhow::Result<Option<Vec<ProgramSpec>>> {
    super::missing_paths(paths)?;
    let checked = check::check_paths(paths);
    if checked.has_errors() {
        eprint!("{}", diag::render_all(&checked.map, &checked.diags, RenderConfig { color: color.stderr() }));
        eprintln!("sfz: the specs have errors; fix them first (`sfz check` shows the same)");
        return Ok(None);
    }
    let mut programs = checked.spec.programs;
    programs.retain(|p| p.runnable && (filter.is_empty() || filter.iter().any(|f| p.name.contains(f.as_str()))));
    Ok(Some(programs))
}

/// The soft-assertion models to use: None with a warning when they cannot be loaded.
pub fn load_models(path: Option<&Path>, off: bool) -> Option<SoftModels> {
    if off {
        return None;
    }
    match soft::load(path) {
        Ok(m) if m.models.is_empty() => {
            eprintln!("warning: the soft-assertion models hold no op; hunting without soft assertions (run `sfz train`)");
            None
        }
        Ok(m) => Some(m),
        Err(e) => {
            eprintln!("warning: {e}; hunting without soft assertions");
            None
        }
    }
}

/// Figures over several programs.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Tally {
    pub programs: usize,
    pub found: usize,
    pub mean_ms: f64,
    pub max_ms: f64,
}

pub fn tally(outcomes: &[(&ProgramSpec, Outcome)]) -> Tally {
    let times: Vec<f64> = outcomes
        .iter()
        .filter(|(_, o)| matches!(o.status, crate::numeric::driver::Status::Found(_)))
        .map(|(_, o)| o.elapsed.as_secs_f64() * 1e3)
        .collect();
    Tally {
        programs: outcomes.len(),
        found: times.len(),
        mean_ms: if times.is_empty() { 0.0 } else { times.iter().sum::<f64>() / times.len() as f64 },
        max_ms: times.iter().copied().fold(0.0, f64::max),
    }
}

pub fn run(args: Args, color: Color) -> anyhow::Result<ExitCode> {
    let Some(programs) = programs(&args.paths, &args.program, color)? else { return Ok(ExitCode::from(1)) };
    if programs.is_empty() {
        eprintln!("sfz: no runnable `program` items in {}", args.paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "));
        return Ok(ExitCode::from(1));
    }
    std::fs::create_dir_all(&args.out)?;
    let models = load_models(args.models.as_deref(), args.no_soft);
    let worker_exe = args.worker.clone().unwrap_or_else(supervisor::default_worker_exe);
    let mut worker = HuntWorker::start(&worker_exe, args.timeout)?;
    let strategies: &[Strategy] = match args.strategy {
        StrategyArg::Gradient => &[Strategy::Gradient],
        StrategyArg::Random => &[Strategy::Random],
        StrategyArg::Both => &[Strategy::Gradient, Strategy::Random],
    };
    let mut reports: Vec<Report> = Vec::new();
    for &strategy in strategies {
        let config = HuntConfig { strategy, budget: args.budget, episodes: args.episodes, seed: args.seed, models: models.clone(), collect: false };
        let mut outcomes = Vec::new();
        for p in &programs {
            let outcome = hunt_program(&mut worker, p, &config);
            let mut r = report(p, &outcome, strategy);
            // On disk before the next program runs: reproducer first, then the report.
            let header = format!("sfz hunt: program `{}`, {} search, seed {}\nNaN/INF at step `{}`: {}", p.name, strategy.name(), args.seed, r.step.clone().unwrap_or_default(), r.expr.clone().unwrap_or_default());
            if let Some(py) = python_reproducer(p, &outcome, &header) {
                let file = format!("{}.{}.py", p.name, strategy.name());
                std::fs::write(args.out.join(&file), py)?;
                r.reproducer = Some(file);
            }
            std::fs::write(args.out.join(format!("{}.{}.json", p.name, strategy.name())), serde_json::to_string_pretty(&r)?)?;
            if !args.json {
                println!("{}", line(&r));
            }
            reports.push(r);
            outcomes.push((p, outcome));
        }
        let t = tally(&outcomes);
        if !args.json {
            println!(
                "{}: {} of {} programs with a NaN/INF, mean {:.1} ms, max {:.1} ms to find\n",
                strategy.name(),
                t.found,
                t.programs,
                t.mean_ms,
                t.max_ms
            );
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&reports)?);
    } else {
        println!("reports and reproducers: {}", args.out.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// One line per program for the terminal.
fn line(r: &Report) -> String {
    let soft = r.soft_assertion.as_ref().map(|s| format!("  soft: {} p={:.2} at eval {}", s.step, s.probability, s.eval)).unwrap_or_default();
    match r.status {
        "bug" => format!(
            "bug      {:<32} {} at `{}` ({}) {} NaN {} INF, severity {}, {:.1} ms, {} evals{soft}",
            r.program,
            r.oracle.unwrap_or(""),
            r.step.as_deref().unwrap_or(""),
            r.op.as_deref().unwrap_or(""),
            r.nan,
            r.inf,
            r.severity,
            r.elapsed_ms,
            r.evals
        ),
        "clean" => format!("clean    {:<32} {} evals, {:.1} ms{soft}", r.program, r.evals, r.elapsed_ms),
        s => format!("{s:<8} {:<32} {}", r.program, r.message.as_deref().unwrap_or("")),
    }
}
