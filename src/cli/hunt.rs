//! `sfz hunt`: run the `program` items of spec files in workers and search for inputs that make
//! an intermediate NaN or INF (random mutation or gradient-guided, with soft assertions);
//! a report per program and a Python reproducer per bug go to --out as they are found.
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::ValueEnum;
use serde::Serialize;

use super::fuzz::parse_duration;
use super::Color;
use crate::check;
use crate::diag::{self, codes, Diagnostic, RenderConfig};
use crate::findings::verify;
use crate::numeric::driver::{hunt_program, HuntConfig, Outcome, Status};
use crate::numeric::report::{python_reproducer, report, HuntStatus, Report};
use crate::numeric::script::lower::{self, Lowered};
use crate::numeric::script::site::{self, ScriptFinding};
use crate::numeric::script::trace::{self, TraceConfig};
use crate::spec::ProgramSpec;
use crate::wire::program::hunt::Strategy;
use crate::wire::program::soft::{self, SoftModels};
use crate::worker::{default_worker_exe, HuntWorker};

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum StrategyArg {
    Gradient,
    Random,
    /// Both, one after the other, for comparison.
    Both,
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Spec files, directories to search for `*.sfz`, or PyTorch scripts (`*.py`) to trace and hunt.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Arguments for the scripts (after `--`).
    #[arg(last = true)]
    pub script_args: Vec<String>,
    /// Torch calls a script may make before the trace stops it (a script that trains is traced
    /// for its first steps only).
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub trace_ops: u32,
    /// Wall time a script may run under the tracer.
    #[arg(long, value_parser = parse_duration, default_value = "120s")]
    pub trace_timeout: Duration,
    /// Workers hunting programs in parallel (default: one per core).
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
    #[arg(long, value_enum, default_value_t = StrategyArg::Gradient)]
    pub strategy: StrategyArg,
    /// Program evaluations per episode.
    #[arg(long, default_value_t = 400, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub budget: u32,
    /// Episodes per program, each from fresh starting inputs.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub episodes: u32,
    /// Wall time for the whole hunt (`90s`, `5m`), tracing included: programs share what is left
    /// after tracing, and each hunts episode after episode until its share is spent (instead of
    /// stopping after --episodes). No episode starts after the time is up.
    #[arg(long, value_parser = parse_duration)]
    pub time: Option<Duration>,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Soft-assertion models (default: those in the standard library, trained by `sfz train`).
    #[arg(long)]
    pub models: Option<PathBuf>,
    /// Run without soft assertions.
    #[arg(long)]
    pub no_soft: bool,
    /// Gradient search: pick each target at random, ignoring the soft assertions (a baseline
    /// to measure them against).
    #[arg(long)]
    pub random_targets: bool,
    /// Only programs whose name contains one of these strings.
    #[arg(long)]
    pub program: Vec<String>,
    /// Folder for reports and reproducers.
    #[arg(long, default_value = "sfz-hunt")]
    pub out: PathBuf,
    /// An episode running longer than this is a hang.
    #[arg(long, value_parser = parse_duration, default_value = "20s")]
    pub timeout: Duration,
    /// Run the wider-float oracle on traced scripts too (an output that differs from the same
    /// program in float64 beyond what conditioning explains). It always runs on `program` items;
    /// on a script it is off by default: its float16 and float32 rounding is usually by design.
    #[arg(long)]
    pub wider: bool,
    /// An input of the scripts to hold as data, by the name the script gives it (`x`, `labels`,
    /// `model.fc.weight`): it keeps the range of values the script gave it and the search never
    /// moves it. Repeat for several.
    #[arg(long, value_name = "NAME")]
    pub fix: Vec<String>,
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
    let times: Vec<f64> = outcomes.iter().filter(|(_, o)| matches!(o.status, crate::numeric::driver::Status::Found(_))).map(|(_, o)| o.elapsed.as_secs_f64() * 1e3).collect();
    Tally {
        programs: outcomes.len(),
        found: times.len(),
        mean_ms: if times.is_empty() { 0.0 } else { times.iter().sum::<f64>() / times.len() as f64 },
        max_ms: times.iter().copied().fold(0.0, f64::max),
    }
}

/// The program's parameters held as data, by position.
fn fixed_params(program: &ProgramSpec, lowered: &Lowered) -> Vec<u32> {
    program.inputs.params.iter().enumerate().filter(|(_, p)| lowered.origins.get(&p.name).is_some_and(|o| o.fixed)).map(|(i, _)| i as u32).collect()
}

/// How much of the traced scripts the hunt could search: calls replayed, calls whose values it
/// chooses (factories, samplers), calls it cannot replay. None without scripts.
fn replayed(targets: &[Target]) -> Option<String> {
    let lowered: Vec<&Lowered> = targets.iter().filter_map(|t| t.script.as_ref().map(|s| &s.lowered)).collect();
    if lowered.is_empty() {
        return None;
    }
    let traced: usize = lowered.iter().map(|l| l.traced).sum();
    let inputs: usize = lowered.iter().map(|l| l.skipped.iter().filter(|s| s.input).count()).sum();
    let cut: usize = lowered.iter().map(|l| l.skipped.iter().filter(|s| !s.input).count()).sum();
    let replayed = traced.saturating_sub(inputs + cut);
    Some(format!("searchable: {replayed} of {traced} traced calls replayed, {inputs} factories and samplers whose values the hunt chooses, {cut} cannot be replayed"))
}

/// A program to hunt and, when it was traced from a script, what maps it back.
struct Target {
    program: ProgramSpec,
    script: Option<Traced>,
}

/// A script's trace as lowered: the `.sfz` file written, the map back, the notes.
struct Traced {
    script: PathBuf,
    sfz: PathBuf,
    lowered: Lowered,
}

/// Traces `script`, writes its program beside the findings and checks it. Errors are the
/// user's (a script that does not run) and are printed here.
fn trace_script(script: &Path, args: &Args, worker: &mut Option<HuntWorker>, color: Color) -> anyhow::Result<Option<Target>> {
    let dir = args.out.join("trace");
    std::fs::create_dir_all(&dir)?;
    let config = TraceConfig { python: verify::default_python(), max_ops: args.trace_ops, timeout: args.trace_timeout, dir };
    let trace = match trace::run(script, &args.script_args, &config) {
        Ok(t) => t,
        Err(e) => {
            let d = Diagnostic::new(codes::E0107, format!("cannot hunt {}", script.display())).with_note(e.to_string()).with_help(e.help());
            eprint!("{}", diag::render(&diag::SourceMap::default(), &d, RenderConfig { color: color.stderr() }));
            return Ok(None);
        }
    };
    for note in trace.notes() {
        eprintln!("note: {}: {note}", script.display());
    }
    let stem: String = script.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let name = format!("traced_{}", stem.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect::<String>());
    let fixed: BTreeSet<String> = args.fix.iter().cloned().collect();
    let lowered = lower::lower(&trace, &name, &fixed);
    if let Some(d) = unknown_fixed(script, &fixed, &lowered) {
        eprint!("{}", diag::render(&diag::SourceMap::default(), &d, RenderConfig { color: color.stderr() }));
        return Ok(None);
    }
    let inputs = lowered.skipped.iter().filter(|s| s.input).count();
    if inputs > 0 {
        eprintln!("note: {}: {inputs} traced calls are factories or samplers; the hunt chooses their values", script.display());
    }
    let cut: Vec<&lower::Skipped> = lowered.skipped.iter().filter(|s| !s.input).collect();
    if !cut.is_empty() {
        eprintln!("note: {}: {} traced calls cannot be replayed; their outputs are inputs of the hunt:", script.display(), cut.len());
        // One line per call site, with how often it was called.
        let mut seen: Vec<(String, usize)> = Vec::new();
        for s in cut {
            let key = format!("{}:{} {} ({})", s.site.file, s.site.line, s.site.func, s.reason);
            match seen.iter_mut().find(|(k, _)| *k == key) {
                Some((_, n)) => *n += 1,
                None => seen.push((key, 1)),
            }
        }
        for (key, n) in seen {
            eprintln!("  {key}{}", if n > 1 { format!(" x{n}") } else { String::new() });
        }
    }
    if lowered.lets.is_empty() {
        let d = Diagnostic::new(codes::E0107, format!("cannot hunt {}", script.display()))
            .with_note(format!("none of its {} traced calls is an operation sfz can replay", trace.ops.len()))
            .with_help("docs/NUMERIC.md lists the operations a hunt replays; write the chain to hunt as a `program` item, or trace a part of the script that uses them");
        eprint!("{}", diag::render(&diag::SourceMap::default(), &d, RenderConfig { color: color.stderr() }));
        return Ok(None);
    }
    let sfz = args.out.join(format!("{name}.sfz"));
    let mut lowered = lowered;
    let mut cut: BTreeMap<u32, String> = BTreeMap::new();
    loop {
        std::fs::write(&sfz, &lowered.text)?;
        let checked = check::check_paths(std::slice::from_ref(&sfz));
        if checked.has_errors() {
            eprint!("{}", diag::render_all(&checked.map, &checked.diags, RenderConfig { color: color.stderr() }));
            eprintln!("error: the program traced from {} does not check; this is a bug in sfz, please report it with {}", script.display(), sfz.display());
            return Ok(None);
        }
        let Some(program) = checked.spec.programs.into_iter().find(|p| p.name == name) else {
            anyhow::bail!("the traced program {name} is missing from {}", sfz.display());
        };
        // A replayed ATen call libtorch rejects is cut, and the hunt goes on with the rest.
        match rejected_aten_call(&program, worker, args) {
            Some((value, reason)) if cut.len() < MAX_CUTS && !cut.contains_key(&value) => {
                eprintln!("note: {}: libtorch rejects a replayed call, {reason}; its outputs become inputs of the hunt", script.display());
                cut.insert(value, format!("libtorch rejects it as replayed: {reason}"));
                lowered = lower::lower_cutting(&trace, &name, &cut, &fixed);
            }
            _ => return Ok(Some(Target { program, script: Some(Traced { script: script.to_path_buf(), sfz, lowered }) })),
        }
    }
}

/// E0107 when a `--fix` name holds no input of the script's hunt: a typo would otherwise hunt
/// the data the user meant to hold. Its help lists the names the inputs have.
fn unknown_fixed(script: &Path, fixed: &BTreeSet<String>, lowered: &Lowered) -> Option<Diagnostic> {
    let names: BTreeSet<&str> = lowered.origins.values().filter_map(|o| o.name.as_deref()).collect();
    let unknown: Vec<&str> = fixed.iter().map(String::as_str).filter(|n| !names.contains(n)).collect();
    if unknown.is_empty() {
        return None;
    }
    let quoted = |ns: &mut dyn Iterator<Item = &str>| ns.map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ");
    let help = if names.is_empty() {
        "no input of this hunt has a name in the script; only a tensor a variable or a module's parameter holds when a traced call uses it can be held".to_string()
    } else {
        format!("the inputs of this hunt that have names: {}", quoted(&mut names.iter().copied()))
    };
    Some(
        Diagnostic::new(codes::E0107, format!("cannot hunt {}", script.display()))
            .with_note(format!("--fix names {}, which no input of the hunt is called", quoted(&mut unknown.iter().copied())))
            .with_help(help),
    )
}

/// Replayed ATen calls a script's program may have cut before it is hunted as it is.
const MAX_CUTS: usize = 16;

/// Runs a traced program once on starting inputs: the trace value of the ATen step libtorch
/// rejected and why, when one was.
fn rejected_aten_call(program: &ProgramSpec, worker: &mut Option<HuntWorker>, args: &Args) -> Option<(u32, String)> {
    if !program.ir.steps.iter().any(|s| s.aten.is_some()) {
        return None;
    }
    if worker.is_none() {
        *worker = HuntWorker::start(&args.worker.clone().unwrap_or_else(default_worker_exe), args.timeout).ok();
    }
    let config = HuntConfig { strategy: Strategy::Once, budget: 1, episodes: 1, seed: args.seed, ..HuntConfig::default() };
    let outcome = hunt_program(worker.as_mut()?, program, &config);
    let Status::Rejected(message) = &outcome.status else { return None };
    let step = program.ir.steps.get(outcome.last.as_ref()?.rejected_step? as usize)?;
    step.aten.as_ref()?;
    let value = crate::numeric::script::lower::traced_value(&step.name)?;
    Some((value, message.lines().next().unwrap_or("").to_string()))
}

pub fn run(args: Args, color: Color) -> anyhow::Result<ExitCode> {
    let (scripts, specs): (Vec<PathBuf>, Vec<PathBuf>) = args.paths.iter().cloned().partition(|p| p.extension().is_some_and(|e| e == "py"));
    std::fs::create_dir_all(&args.out)?;
    let mut targets: Vec<Target> = Vec::new();
    let mut failed = false;
    let deadline = args.time.map(|t| std::time::Instant::now() + t);
    // One worker runs each traced program once before the hunt (`rejected_aten_call`).
    let mut preflight: Option<HuntWorker> = None;
    for (k, script) in scripts.iter().enumerate() {
        if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            eprintln!("note: the time was up before {} of {} scripts were traced; they are not hunted", scripts.len() - k, scripts.len());
            break;
        }
        match trace_script(script, &args, &mut preflight, color)? {
            Some(t) => targets.push(t),
            None => failed = true,
        }
    }
    drop(preflight);
    if !args.fix.is_empty() && !specs.is_empty() {
        eprintln!("note: --fix holds inputs of traced scripts only; `program` items are hunted as their constraints say");
    }
    if !specs.is_empty() {
        let Some(programs) = programs(&specs, &args.program, color)? else { return Ok(ExitCode::from(2)) };
        if programs.is_empty() {
            eprintln!("sfz: no runnable `program` items in {}", specs.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "));
            return Ok(ExitCode::from(2));
        }
        targets.extend(programs.into_iter().map(|program| Target { program, script: None }));
    }
    if targets.is_empty() {
        return Ok(ExitCode::from(2));
    }
    let models = load_models(args.models.as_deref(), args.no_soft);
    let worker_exe = args.worker.clone().unwrap_or_else(default_worker_exe);
    let jobs = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())).clamp(1, targets.len().max(1));
    let strategies: &[Strategy] = match args.strategy {
        StrategyArg::Gradient => &[Strategy::Gradient],
        StrategyArg::Random => &[Strategy::Random],
        StrategyArg::Both => &[Strategy::Gradient, Strategy::Random],
    };
    let mut reports: Vec<Report> = Vec::new();
    for &strategy in strategies {
        let base = HuntConfig {
            strategy,
            budget: args.budget,
            episodes: args.episodes,
            seed: args.seed,
            models: models.clone(),
            collect: false,
            random_targets: args.random_targets,
            ..HuntConfig::default()
        };
        let mut outcomes: Vec<(usize, Outcome)> = Vec::new();
        // Programs spread over `jobs` workers; each finishing program is written and printed at once.
        let next = std::sync::atomic::AtomicUsize::new(0);
        let (tx, rx) = crossbeam_channel::unbounded::<(usize, Outcome)>();
        let started: anyhow::Result<()> = std::thread::scope(|scope| {
            let mut handles = Vec::new();
            for _ in 0..jobs {
                let (tx, next, targets, base, exe, deadline) = (tx.clone(), &next, &targets, &base, &worker_exe, deadline);
                handles.push(scope.spawn(move || -> anyhow::Result<()> {
                    let mut worker = HuntWorker::start(exe, args.timeout)?;
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(t) = targets.get(i) else { return Ok(()) };
                        let mut config = base.clone();
                        // An equal share of the time left for each program not yet started.
                        config.deadline = deadline.map(|d| {
                            let now = std::time::Instant::now();
                            let waiting = (targets.len() - i) as u32;
                            now + d.saturating_duration_since(now) * (jobs as u32).min(waiting) / waiting.max(1)
                        });
                        config.wider = args.wider || t.script.is_none();
                        if let Some(s) = &t.script {
                            config.max_numel = s.lowered.max_numel.max(config.max_numel);
                            config.max_dim = s.lowered.max_dim.max(config.max_dim);
                            config.fixed = fixed_params(&t.program, &s.lowered);
                        }
                        let _ = tx.send((i, hunt_program(&mut worker, &t.program, &config)));
                    }
                }));
            }
            drop(tx);
            for (i, outcome) in rx.iter() {
                let t = &targets[i];
                let r = record(t, &outcome, strategy, &args)?;
                if !args.json {
                    println!("{}", line(&r));
                    if let Some(s) = &r.script {
                        println!("{}", script_lines(s));
                    }
                }
                reports.push(r);
                outcomes.push((i, outcome));
            }
            handles.into_iter().try_for_each(|h| h.join().unwrap_or_else(|_| Err(anyhow::anyhow!("a hunt thread panicked; this is a bug in sfz"))))
        });
        started?;
        outcomes.sort_by_key(|(i, _)| *i);
        let pairs: Vec<(&ProgramSpec, Outcome)> = outcomes.into_iter().map(|(i, o)| (&targets[i].program, o)).collect();
        let t = tally(&pairs);
        if !args.json {
            let searched: f64 = pairs.iter().map(|(_, o)| o.elapsed.as_secs_f64()).sum();
            let evals: u64 = pairs.iter().map(|(_, o)| o.evals).sum();
            println!(
                "{}: {} of {} programs with a NaN/INF, mean {:.1} ms, max {:.1} ms to find ({} workers); searched {searched:.1} s, {evals} evaluations",
                strategy.name(),
                t.found,
                t.programs,
                t.mean_ms,
                t.max_ms,
                jobs
            );
            if let Some(line) = replayed(&targets) {
                println!("{line}");
            }
            println!();
        }
    }
    let bad = reports.iter().any(|r| r.status.is_bad());
    if args.json {
        println!("{}", serde_json::to_string_pretty(&reports)?);
    } else {
        println!("reports and reproducers: {}", args.out.display());
    }
    Ok(if failed {
        ExitCode::from(2)
    } else if bad {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Writes one program's reproducer (first) and report, and returns the report.
fn record(t: &Target, outcome: &Outcome, strategy: Strategy, args: &Args) -> anyhow::Result<Report> {
    let p = &t.program;
    let mut r = report(p, outcome, strategy);
    if let (Some(s), Status::Found(f)) = (&t.script, &outcome.status) {
        r.script = site::explain(p, &s.lowered, f);
    }
    let mut header = format!(
        "sfz hunt: program `{}`, {} search, seed {}\nNaN/INF at step `{}`: {}",
        p.name,
        strategy.name(),
        args.seed,
        r.step.clone().unwrap_or_default(),
        r.expr.clone().unwrap_or_default()
    );
    if let Some(s) = &t.script {
        header.push_str(&format!("\ntraced from {} (program: {})", s.script.display(), s.sfz.display()));
    }
    if let Some(s) = &r.script {
        header.push_str(&format!("\nfirst bad value: {}:{}  {}", s.site.file, s.site.line, s.site.code));
    }
    if let Some(py) = python_reproducer(p, outcome, &header) {
        let file = format!("{}.{}.py", p.name, strategy.name());
        std::fs::write(args.out.join(&file), py)?;
        r.reproducer = Some(file);
    }
    std::fs::write(args.out.join(format!("{}.{}.json", p.name, strategy.name())), serde_json::to_string_pretty(&r)?)?;
    Ok(r)
}

/// The script side of a finding, indented under its line.
fn script_lines(s: &ScriptFinding) -> String {
    let made = s.guard_site.as_ref().map(|g| format!(", made at {}:{} `{}`", g.file, g.line, g.code)).unwrap_or_else(|| ", an input of the traced region".into());
    let name = s.guard_variable.as_ref().map(|v| format!("`{v}` ({})", s.guard)).unwrap_or_else(|| format!("`{}`", s.guard));
    let mut text = format!("         at {}:{}  {}\n         guard {name}{made}: {}", s.site.file, s.site.line, s.site.code, s.advice);
    for d in &s.drivers {
        let what = if d.weight { "weight" } else { "input" };
        let name = d.name.as_ref().map(|n| format!("`{n}` ({})", d.param)).unwrap_or_else(|| format!("`{}`", d.param));
        text.push_str(&format!("\n         driven by {what} {name}: magnitude {}, the script showed up to {}", magnitude(d.found), magnitude(d.seen)));
    }
    text
}

/// A magnitude as people write it: `9.94`, `0.177`, `1.2e+38`.
fn magnitude(x: f64) -> String {
    if x == 0.0 || (1e-3..1e4).contains(&x) {
        format!("{}", (x * 1e3).round() / 1e3)
    } else {
        format!("{x:.2e}")
    }
}

/// One line per program for the terminal.
fn line(r: &Report) -> String {
    let soft = r.soft_assertion.as_ref().map(|s| format!("  soft: {} p={:.2} at eval {}", s.step, s.probability, s.eval)).unwrap_or_default();
    match r.status {
        HuntStatus::Bug => format!(
            "bug      {:<32} {} at `{}` ({}) {} NaN {} INF, severity {}, {:.1} ms, {} evals{soft}",
            r.program,
            r.oracle.unwrap_or(""),
            r.step.as_deref().unwrap_or(""),
            r.op.as_deref().unwrap_or(""),
            r.nan,
            r.inf,
            r.severity.as_str(),
            r.elapsed_ms,
            r.evals
        ),
        HuntStatus::Clean => format!("clean    {:<32} {} evals, {:.1} ms{soft}", r.program, r.evals, r.elapsed_ms),
        HuntStatus::Hang => format!("hang     {:<32} {}", r.program, r.message.as_deref().unwrap_or("")),
        s => format!("{:<8} {:<32} {}", s.as_str(), r.program, r.message.as_deref().unwrap_or("")),
    }
}
