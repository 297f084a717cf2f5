//! `sfz infer`: validate candidate rules against libtorch and write the result back.
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::Color;
use crate::campaign::Shard;
use crate::diag::{self, codes, Diagnostic, RenderConfig, SourceMap};
use crate::ops::catalog::Catalog;
use crate::oracle::{self, Status};
use crate::rules::domains::{self, Observe, Seen};
use crate::rules::infer::{self, ApiResult, InferConfig, Runner};
use crate::rules::propose::{enumerate, FromErrors};
use crate::rules::{self, Candidate};
use crate::spec::{ApiSpec, Origin, RuleSource, RuleStatus, Spec};
use crate::wire::case::{Arg, Case};
use crate::worker::{default_worker_exe, Pool, PoolConfig};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Spec files to infer rules for (rewritten in place), or operator names (`torch.sum`), whose
    /// skeletons are added to --out first.
    #[arg(required = true)]
    pub targets: Vec<String>,
    /// The spec file operator names go to (created if missing).
    #[arg(long, short = 'o')]
    pub out: Option<PathBuf>,
    /// Only APIs whose name contains one of these strings.
    #[arg(long)]
    pub api: Vec<String>,
    /// Wall time per API (`20s`, `2m`).
    #[arg(long, value_parser = super::fuzz::parse_duration, default_value = "30s")]
    pub budget: Duration,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Worker processes (default: one per core).
    #[arg(long, short = 'j')]
    pub workers: Option<usize>,
    /// Validate again the rules earlier runs validated (manual rules are never touched).
    #[arg(long)]
    pub revalidate: bool,
    /// Only the candidates in the file (from `sfz suggest` or written by hand), none enumerated.
    #[arg(long)]
    pub no_enumerate: bool,
    /// Also write the enumerated candidates that were rejected (candidates from the file always are).
    #[arg(long)]
    pub keep_rejected: bool,
    /// Remove from the file the APIs whose inference did not reach --min-valid (for growing a
    /// spec collection with only what fuzzes without noise).
    #[arg(long)]
    pub prune: bool,
    /// With --prune: the share of conforming inputs libtorch must accept.
    #[arg(long, default_value_t = 0.9)]
    pub min_valid: f64,
    /// Print what would be written instead of writing it.
    #[arg(long)]
    pub dry_run: bool,
    /// Print the per-API results as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// A case running longer than this counts as accepted (it passed the argument checks).
    #[arg(long, value_parser = super::fuzz::parse_duration, default_value = "2s")]
    pub timeout: Duration,
    /// The worker executable (default: `sfz-worker` next to `sfz`).
    #[arg(long)]
    pub worker: Option<PathBuf>,
    /// Also run the differential oracles each API without an `oracles` clause gets on ordinary
    /// conforming inputs, and record which stayed silent and which disagreed (refuted) as rules.
    #[arg(long)]
    pub oracles: bool,
    /// With --oracles: conforming cases per API.
    #[arg(long, default_value_t = 300)]
    pub oracle_cases: u64,
    /// Take shard K of N of the spec files (`--shard 2/4`), balanced by their APIs: a file is
    /// rewritten by one shard only, so N processes never write the same file.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
}

/// Cases through a worker pool, one API at a time.
pub(super) struct PoolRunner<'a> {
    pub(super) pool: &'a Pool,
    pub(super) apis: &'a [ApiSpec],
}

impl PoolRunner<'_> {
    /// What `see` makes of each case's execution, for the cases started before `deadline`.
    fn each<T: Clone + Send>(&self, api: usize, cases: &[Vec<Arg>], deadline: Instant, unseen: T, see: impl Fn(&Case, crate::worker::Execution) -> T + Sync) -> Vec<T> {
        let seen: Mutex<Vec<T>> = Mutex::new(vec![unseen; cases.len()]);
        let next_index = std::sync::atomic::AtomicUsize::new(0);
        let next = || {
            if Instant::now() >= deadline {
                return None;
            }
            let i = next_index.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            // A `from` statement's forward fills its parameters, as in a campaign.
            let forward = self.apis[api].from.as_ref().map(|f| crate::wire::case::Forward { binds: f.binds.clone(), broken: None });
            cases.get(i).map(|args| (i as u64, Case { op: api as u32, args: args.clone(), forward }))
        };
        let sink = |i: u64, case: &Case, exec: crate::worker::Execution| {
            let t = see(case, exec);
            if let Some(s) = seen.lock().unwrap_or_else(|e| e.into_inner()).get_mut(i as usize) {
                *s = t;
            }
        };
        self.pool.run(&next, &sink);
        // Cases are handed out in order: those below the counter were started.
        let started = next_index.load(std::sync::atomic::Ordering::Relaxed).min(cases.len());
        let mut seen = seen.into_inner().unwrap_or_else(|e| e.into_inner());
        seen.truncate(started);
        seen
    }
}

impl Runner for PoolRunner<'_> {
    fn run_with_errors(&self, api: usize, cases: &[Vec<Arg>], deadline: Instant) -> Vec<(Status, Option<String>)> {
        self.each(api, cases, deadline, (Status::Invalid, None), |case, exec| {
            let verdict = oracle::judge(&self.apis[api], &[], case, &exec);
            (verdict.status, verdict.error)
        })
    }
}

impl Observe for PoolRunner<'_> {
    fn observe(&self, api: usize, cases: &[Vec<Arg>], deadline: Instant) -> Vec<Seen> {
        self.each(api, cases, deadline, Seen::default(), |_, exec| {
            let crate::worker::Execution::Completed(crate::wire::outcome::Outcome::Returned { outputs, .. }) = exec else { return Seen::default() };
            let floating: Vec<&crate::wire::outcome::TensorInfo> = outputs
                .iter()
                .filter_map(|o| match o {
                    crate::wire::outcome::Output::Tensor(t) if t.dtype.is_some_and(|d| d.is_floating() || d.is_complex()) => Some(t),
                    _ => None,
                })
                .collect();
            Seen { returned: true, floating: !floating.is_empty(), nan: floating.iter().any(|t| t.nan > 0) }
        })
    }
}

/// Candidates for one API, checked against the file: those the file holds (status candidate, or
/// validated by an earlier inference when revalidating) and the enumerated ones.
fn candidates_for(path: &Path, text: &str, spec: &Spec, api: &ApiSpec, enumerate_too: bool, revalidate: bool) -> Vec<infer::Checked> {
    let mut out = Vec::new();
    for r in spec.rules.iter().filter(|r| r.api == api.name) {
        let again = revalidate && r.meta.status == RuleStatus::Validated && r.meta.source != RuleSource::Manual;
        if r.meta.status == RuleStatus::Candidate || again {
            let body: Vec<String> = r.constraints.iter().map(|c| format!("{};", c.text.trim_end_matches(';'))).collect();
            out.push(infer::Checked {
                candidate: Candidate { name: r.meta.name.clone(), text: body.join("\n    "), source: r.meta.source.clone() },
                constraints: r.constraints.clone(),
                evidence: None,
            });
        }
    }
    if !enumerate_too {
        return out;
    }
    let existing: Vec<&str> = spec.rules.iter().filter(|r| r.api == api.name).map(|r| r.meta.name.as_str()).collect();
    let enumerated: Vec<Candidate> = enumerate::candidates(api).into_iter().filter(|c| !existing.contains(&c.name.as_str())).collect();
    // Check them all in one go, appended to the file under numbered names, and keep those that
    // check without errors.
    let mut synthetic = text.to_string();
    let mut ranges = Vec::new();
    for (i, c) in enumerated.iter().enumerate() {
        synthetic.push('\n');
        let lo = synthetic.len();
        synthetic.push_str(&format!("#[status(candidate)]\nrule sfz_candidate_{i} for {} {{\n    {}\n}}\n", api.name, c.text));
        ranges.push(lo..synthetic.len());
    }
    let checked = crate::check::check_text(path, &synthetic);
    let bad: Vec<usize> =
        checked.diags.iter().filter(|d| d.is_error()).filter_map(|d| d.primary_span()).filter_map(|s| ranges.iter().position(|r| r.contains(&(s.lo as usize)))).collect();
    for r in checked.spec.rules.iter().filter(|r| r.api == api.name) {
        let Some(i) = r.meta.name.strip_prefix("sfz_candidate_").and_then(|n| n.parse::<usize>().ok()) else { continue };
        if bad.contains(&i) || r.constraints.is_empty() {
            continue;
        }
        out.push(infer::Checked { candidate: enumerated[i].clone(), constraints: r.constraints.clone(), evidence: None });
    }
    out
}

/// API `name` of the file's current `text`, planned again: a backward operator's requires then
/// hold the rules this run wrote for its forward. None when it no longer checks or plans.
fn refreshed(path: &Path, text: &str, name: &str, revalidate: bool, catalog: &Catalog) -> Option<ApiSpec> {
    let checked = crate::check::check_text(path, text);
    let api = checked.spec.apis.iter().find(|a| a.name == name)?;
    let spec = Spec { apis: vec![base_of(api, revalidate)], rules: Vec::new(), programs: Vec::new() };
    crate::plan::plan(&spec, catalog).0.into_iter().next().map(|p| p.api)
}

/// The APIs of the file's `text` whose `from` statement calls `name`.
fn callers(path: &Path, text: &str, name: &str) -> Vec<String> {
    let checked = crate::check::check_text(path, text);
    checked.spec.apis.iter().filter(|a| a.from.as_ref().is_some_and(|f| f.callee.name == name)).map(|a| a.name.clone()).collect()
}

/// The API as inference starts from it: with `--revalidate`, without the rules to validate again.
fn base_of(api: &ApiSpec, revalidate: bool) -> ApiSpec {
    let mut base = api.clone();
    if revalidate {
        base.requires.retain(|c| !matches!(&c.origin, Origin::Rule(m) if m.source != RuleSource::Manual));
    }
    base
}

/// Spec files to work on: existing paths as given; operator names become skeletons in --out.
pub(super) fn files(targets: &[String], out: Option<&PathBuf>, catalog: &Catalog, render: RenderConfig) -> anyhow::Result<Vec<PathBuf>> {
    let (paths, names): (Vec<&String>, Vec<&String>) = targets.iter().partition(|t| Path::new(t.as_str()).exists());
    let mut files: Vec<PathBuf> = crate::check::expand_paths(&paths.iter().map(PathBuf::from).collect::<Vec<_>>());
    if names.is_empty() {
        return Ok(files);
    }
    let Some(out) = out else {
        anyhow::bail!("`{}` is not a file; to infer rules for operators, name the spec file with --out FILE", names[0]);
    };
    let existing = std::fs::read_to_string(out).unwrap_or_default();
    let mut text = existing.clone();
    let mut defined: Vec<String> = crate::check::check_text(out, &existing).spec.apis.into_iter().map(|a| a.name).collect();
    let mut unknown = 0;
    for name in names {
        match rules::skeleton::skeleton(name, catalog) {
            Ok(s) if defined.contains(&s.api) => {}
            Ok(s) => {
                // As `sfz init` writes them: a backward operator with its forward.
                for item in rules::skeleton::items_for(s, catalog, &mut defined).0 {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(&item);
                }
            }
            Err(rules::skeleton::InitError::Unknown { suggestions, .. }) => {
                unknown += 1;
                eprint!("{}", diag::render(&SourceMap::default(), &super::init::unknown_operator(name, &suggestions), render));
            }
            Err(e) => eprintln!("warning: {e}"),
        }
    }
    if unknown > 0 {
        anyhow::bail!("{unknown} name(s) are no libtorch operator (see above); nothing was changed");
    }
    std::fs::write(out, crate::fmt::format_text(&text).unwrap_or(text)).map_err(|e| anyhow::anyhow!("cannot write `{}`: {e}", out.display()))?;
    files.push(out.clone());
    Ok(files)
}

pub fn run(args: Args, color: Color) -> anyhow::Result<ExitCode> {
    let render = RenderConfig { color: color.stderr() };
    let shard = match args.shard.as_deref().map(Shard::parse).transpose() {
        Ok(s) => s,
        Err(e) => {
            let d = Diagnostic::new(codes::E0103, format!("`{}` is not a shard", args.shard.as_deref().unwrap_or(""))).with_note(e.to_string()).with_help(
                "write --shard K/N with 1 <= K <= N, e.g. --shard 1/4 for the first of four (Slurm: --shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT with --array=1-N)",
            );
            eprint!("{}", diag::render(&SourceMap::default(), &d, render));
            return Ok(ExitCode::from(2));
        }
    };
    let worker = args.worker.clone().unwrap_or_else(default_worker_exe);
    let catalog = super::check::catalog(&worker).map_err(|e| anyhow::anyhow!("cannot read libtorch's operator schemas: {e}"))?;
    let targets = match shard {
        Some(shard) => shard_targets(shard, &args.targets),
        None => args.targets.clone(),
    };
    if targets.is_empty() {
        eprintln!("sfz infer: shard {} has nothing to infer (more shards than spec files and operators)", args.shard.as_deref().unwrap_or(""));
        return Ok(ExitCode::SUCCESS);
    }
    let files = files(&targets, args.out.as_ref(), &catalog, render)?;
    let config = InferConfig {
        seed: args.seed,
        budget: args.budget,
        restart_below: args.min_valid,
        trace: std::env::var_os("SFZ_INFER_DEBUG").is_some(),
        keep_rejected: args.keep_rejected,
        ..InferConfig::default()
    };
    let mut results: Vec<ApiResult> = Vec::new();
    let mut failed = false;
    for path in &files {
        let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("cannot read `{}`: {e}", path.display()))?;
        let checked = crate::check::check_text(path, &text);
        if checked.has_errors() {
            eprint!("{}", diag::render_all(&checked.map, &checked.diags, render));
            eprintln!("sfz infer: `{}` has errors; fix them first", path.display());
            failed = true;
            continue;
        }
        let mut spec = checked.spec.clone();
        spec.apis.retain(|a| args.api.is_empty() || args.api.iter().any(|f| a.name.contains(f.as_str())));
        let bases: Vec<ApiSpec> = spec.apis.iter().map(|a| base_of(a, args.revalidate)).collect();
        let base_spec = Spec { apis: bases, rules: Vec::new(), programs: Vec::new() };
        let (plans, diags) = crate::plan::plan(&base_spec, &catalog);
        if !diags.is_empty() {
            eprint!("{}", diag::render_all(&checked.map, &diags, render));
        }
        if plans.is_empty() {
            continue;
        }
        let pool = pool_for(&args, &worker, &plans)?;
        let apis: Vec<ApiSpec> = plans.iter().map(|p| p.api.clone()).collect();
        let runner = PoolRunner { pool: &pool, apis: &apis };
        let mut text = text;
        // APIs pruned below --min-valid but kept while another API's `from` calls them.
        let mut callees_below: Vec<String> = Vec::new();
        for (i, plan) in plans.iter().enumerate() {
            let original = spec.apis.iter().find(|a| a.name == plan.api.name).unwrap_or(&plan.api);
            // A backward operator's inputs obey its forward's rules, which this run may have
            // just written: its search starts from the file as it is now.
            let refreshed = if original.from.is_some() { refreshed(path, &text, &plan.api.name, args.revalidate, &catalog) } else { None };
            let plan = &crate::plan::ApiPlan { api: refreshed.unwrap_or_else(|| plan.api.clone()), ..plan.clone() };
            let cands = candidates_for(path, &text, &checked.spec, original, !args.no_enumerate, args.revalidate);
            if cands.is_empty() && args.no_enumerate {
                // Nothing to validate (a second run with --no-enumerate): no execution needed.
                // With enumeration on, an API with no candidate (a backward operator whose
                // inputs all come from its forward) still runs: its figure decides --prune.
                results.push(ApiResult { api: plan.api.name.clone(), conclusive: true, ..Default::default() });
                continue;
            }
            let considered: Vec<Candidate> = cands.iter().map(|c| c.candidate.clone()).collect();
            let config = InferConfig { learn_values: !args.no_enumerate, ..config.clone() };
            if catalog.get(&plan.binding.name, &plan.binding.overload).is_some_and(|s| !s.cpu) {
                // Every input would be refused: no search, and --prune treats it as any API left
                // without valid inputs.
                eprintln!(
                    "{}: not run: {}{} has no kernel for CPU tensors (torch registers it for CUDA, sparse or nested tensors, or none), so no rule makes an input valid here",
                    plan.api.name,
                    plan.binding.name,
                    if plan.binding.overload.is_empty() { String::new() } else { format!(".{}", plan.binding.overload) }
                );
                results.push(ApiResult { api: plan.api.name.clone(), conclusive: true, no_cpu_kernel: true, ..Default::default() });
                if args.prune && callers(path, &text, &plan.api.name).is_empty() {
                    eprintln!("{}: pruned (no kernel for CPU tensors)", plan.api.name);
                    if let Some(t) = rules::remove_api(&text, &plan.api.name) {
                        text = t;
                    }
                }
                continue;
            }
            let mut result = infer::infer_api(&plan.api, i, cands, &runner, &FromErrors, &config);
            let below = !result.conclusive || result.valid_after.is_none_or(|v| v < args.min_valid);
            if !args.json {
                for t in &result.trace {
                    eprintln!("{t}");
                }
                eprintln!("{}", line(&result));
                if let Some((message, share)) = result.complaint.as_ref().filter(|_| below) {
                    eprintln!("  libtorch still refuses {} of the inputs with: {message}", pct(Some(*share)));
                    if message.contains("with arguments from the '") {
                        eprintln!("  = note: no kernel takes these inputs' backend or layout; no rule makes them valid");
                    } else {
                        eprintln!("  = hint: write the rule it asks for by hand, or ask a model: `sfz suggest {} --api {}`", path.display(), plan.api.name);
                    }
                }
            }
            // Candidates from the file that were not judged stay candidates, but enumerated ones
            // (from `sfz suggest --offline`) are only worth keeping once validated.
            let mut replace: Vec<String> = considered.iter().map(|c| c.name.clone()).collect();
            for c in considered {
                if c.source != RuleSource::Inferred && !result.rules.iter().any(|r| r.candidate.name == c.name) {
                    result.rules.push(rules::Judged::candidate(c));
                }
            }
            replace.extend(result.rules.iter().map(|r| r.candidate.name.clone()));
            let called = args.prune && below && !callers(path, &text, &plan.api.name).is_empty();
            if called {
                callees_below.push(plan.api.name.clone());
            }
            let written = if args.prune && below && !called {
                eprintln!("{}: pruned (valid inputs {} < {:.0}%)", plan.api.name, pct(result.valid_after), 100.0 * args.min_valid);
                rules::remove_api(&text, &plan.api.name)
            } else {
                rules::write_rules(&text, &plan.api.name, &result.rules, &replace)
            };
            match written {
                Some(t) => text = t,
                None => eprintln!("sfz infer: could not write the rules of {} (the file no longer parses)", plan.api.name),
            }
            results.push(result);
        }
        drop(pool);
        // A forward kept for its backward goes once no API calls it any more.
        for name in callees_below {
            if callers(path, &text, &name).is_empty() {
                eprintln!("{name}: pruned (no API left that it feeds)");
                if let Some(t) = rules::remove_api(&text, &name) {
                    text = t;
                }
            }
        }
        if args.oracles {
            text = validate_oracles(path, &text, &args, &catalog, &worker, render)?;
            text = learn_domains(path, &text, &args, &catalog, &worker, render)?;
            text = validate_relations(path, &text, &args, &catalog, &worker, render)?;
        }
        if !super::write_back("infer", "the inferred rules", path, &text, args.dry_run, render)? {
            failed = true;
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&results)?);
    }
    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// The targets shard `shard` takes: whole spec files (folders expanded), each costing its
/// number of APIs, and operator names, costing one each. A file is rewritten by one shard only;
/// the operators of each shard go to its own --out.
fn shard_targets(shard: Shard, targets: &[String]) -> Vec<String> {
    let (paths, names): (Vec<&String>, Vec<&String>) = targets.iter().partition(|t| Path::new(t.as_str()).exists());
    let files = crate::check::expand_paths(&paths.iter().map(PathBuf::from).collect::<Vec<_>>());
    let mut items: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let mut costs: Vec<f64> = files.iter().map(|f| std::fs::read_to_string(f).map_or(1.0, |t| crate::check::check_text(f, &t).spec.apis.len().max(1) as f64)).collect();
    items.extend(names.iter().map(|n| n.to_string()));
    costs.extend(names.iter().map(|_| 1.0));
    let refs: Vec<&str> = items.iter().map(String::as_str).collect();
    shard.take(&refs, &costs).into_iter().map(|i| items[i].clone()).collect()
}

/// The checked spec of a file's text with the APIs `--api` selects; None (errors printed) when
/// the text has errors.
fn selected(path: &Path, text: &str, args: &Args, render: RenderConfig) -> Option<Spec> {
    let checked = crate::check::check_text(path, text);
    if checked.has_errors() {
        eprint!("{}", diag::render_all(&checked.map, &checked.diags, render));
        return None;
    }
    let mut spec = checked.spec;
    spec.apis.retain(|a| args.api.is_empty() || args.api.iter().any(|f| a.name.contains(f.as_str())));
    Some(spec)
}

/// `--oracles` on one file's text (with this run's rules written): the new text.
fn validate_oracles(path: &Path, text: &str, args: &Args, catalog: &Catalog, worker: &Path, render: RenderConfig) -> anyhow::Result<String> {
    let Some(spec) = selected(path, text, args, render) else { return Ok(text.to_string()) };
    let (verdicts, text) = super::infer_oracles::validate(&spec, text, catalog, &validation(args, worker))?;
    if !args.json {
        for v in &verdicts {
            let refuted: Vec<String> = v.refuted.iter().map(|(o, why)| format!("{o} ({why})")).collect();
            eprintln!(
                "{}: oracles kept {}; refuted {} ({} cases)",
                v.api,
                if v.kept.is_empty() { "none".into() } else { v.kept.iter().map(|o| o.as_str()).collect::<Vec<_>>().join(", ") },
                if refuted.is_empty() { "none".into() } else { refuted.join("; ") },
                v.cases
            );
        }
    }
    Ok(text)
}

/// `--oracles`, third part: the candidate relations of `rules::propose::relations`, kept where they hold.
fn validate_relations(path: &Path, text: &str, args: &Args, catalog: &Catalog, worker: &Path, render: RenderConfig) -> anyhow::Result<String> {
    let Some(spec) = selected(path, text, args, render) else { return Ok(text.to_string()) };
    let (verdicts, text) = super::infer_oracles::validate_relations(path, &spec, text, catalog, &validation(args, worker))?;
    if !args.json {
        for v in &verdicts {
            let list = |xs: &[String]| if xs.is_empty() { "none".to_string() } else { xs.join(", ") };
            eprintln!("{}: relations kept {}; refuted {} ({} cases)", v.api, list(&v.kept), list(&v.refuted), v.cases);
        }
    }
    Ok(text)
}

/// Worker processes: `-j`, or one per core.
fn workers(args: &Args) -> usize {
    args.workers.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())).max(1)
}

/// A worker pool with the operators of `plans` loaded.
fn pool_for(args: &Args, worker: &Path, plans: &[crate::plan::ApiPlan]) -> anyhow::Result<Pool> {
    Ok(Pool::start(PoolConfig {
        worker_exe: worker.to_path_buf(),
        workers: workers(args),
        timeout: args.timeout,
        ops: plans.iter().map(|p| p.binding.clone()).collect(),
        ..PoolConfig::default()
    })?)
}

fn validation<'a>(args: &Args, worker: &'a Path) -> super::infer_oracles::Validation<'a> {
    super::infer_oracles::Validation { worker, workers: workers(args), timeout: args.timeout, seed: args.seed, cases: args.oracle_cases, budget: args.budget }
}

/// `--oracles`, second part: the domain of each API without a hand-written `nan_inf` (or a
/// domain rule by hand), learned and written as a rule (`rules::domains`).
fn learn_domains(path: &Path, text: &str, args: &Args, catalog: &Catalog, worker: &Path, render: RenderConfig) -> anyhow::Result<String> {
    let Some(spec) = selected(path, text, args, render) else { return Ok(text.to_string()) };
    let manual = |a: &ApiSpec| {
        a.oracles_written && a.has_oracle(crate::wire::oracle::Oracle::NanInf)
            || spec.rules.iter().any(|r| r.api == a.name && r.meta.name == domains::RULE && r.meta.source == RuleSource::Manual)
    };
    let apis: Vec<ApiSpec> = spec.apis.iter().filter(|a| !manual(a)).cloned().collect();
    let (plans, _) = crate::plan::plan(&Spec { apis, rules: Vec::new(), programs: Vec::new() }, catalog);
    if plans.is_empty() {
        return Ok(text.to_string());
    }
    let pool = pool_for(args, worker, &plans)?;
    let apis: Vec<ApiSpec> = plans.iter().map(|p| p.api.clone()).collect();
    let runner = PoolRunner { pool: &pool, apis: &apis };
    let limits = InferConfig::default().limits;
    let mut text = text.to_string();
    for (i, api) in apis.iter().enumerate() {
        let rule = domains::learn(api, i, &runner, args.seed, &limits, Instant::now() + args.budget);
        if !args.json {
            eprintln!("{}: domain {}", api.name, rule.as_ref().map_or("none found".to_string(), |r| format!("`{}` ({} cases)", r.candidate.text, r.evidence[0].1)));
        }
        let rules: Vec<rules::Judged> = rule.into_iter().collect();
        if let Some(t) = rules::write_rules(&text, &api.name, &rules, &[domains::RULE.to_string()]) {
            text = t;
        }
    }
    Ok(text)
}

fn counts(c: &[(String, usize)]) -> String {
    if c.is_empty() {
        return "0".into();
    }
    c.iter().map(|(k, n)| format!("{n} {k}")).collect::<Vec<_>>().join(", ")
}

fn pct(r: Option<f64>) -> String {
    r.map_or("-".into(), |r| format!("{:.0}%", 100.0 * r))
}

/// One line per API: what was proposed, kept, and the valid-input rate before and after.
fn line(r: &ApiResult) -> String {
    format!(
        "{}: proposed {}; validated {}; rejected {}; valid inputs {} -> {}{} ({}{} cases, {:.1} s)",
        r.api,
        counts(&r.proposed),
        counts(&r.validated),
        counts(&r.rejected),
        pct(r.valid_before),
        pct(r.valid_after),
        if r.conclusive { "" } else { " (inconclusive: no rule kept)" },
        if r.restarts > 0 { format!("{} searches, ", r.restarts + 1) } else { String::new() },
        r.cases,
        r.seconds
    )
}
