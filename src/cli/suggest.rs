//! `sfz suggest`: candidate rules from a language model, or from the enumerative generator when
//! no model is configured or the model fails; written into the spec file as `status(candidate)`.
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use super::Color;
use crate::diag::{self, codes, Diagnostic, RenderConfig, SourceMap};
use crate::rules::propose::{enumerate, llm};
use crate::rules::{self, Candidate, Judged};
use crate::spec::RuleStatus;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Spec files (rewritten in place), or operator names (`torch.sum`), whose skeletons are
    /// added to --out first.
    #[arg(required = true)]
    pub targets: Vec<String>,
    /// The spec file operator names go to (created if missing).
    #[arg(long, short = 'o')]
    pub out: Option<PathBuf>,
    /// Only APIs whose name contains one of these strings.
    #[arg(long)]
    pub api: Vec<String>,
    /// Base URL of an OpenAI-compatible API, e.g. `http://127.0.0.1:8080/v1` (else
    /// $SFZ_LLM_ENDPOINT, else `endpoint` in ~/.config/sfz/llm.conf).
    #[arg(long)]
    pub endpoint: Option<String>,
    /// Model name (else $SFZ_LLM_MODEL, else `model` in the config file).
    #[arg(long)]
    pub model: Option<String>,
    /// API key (else $SFZ_LLM_API_KEY, else `api_key` in the config file).
    #[arg(long)]
    pub api_key: Option<String>,
    /// Per request.
    #[arg(long, value_parser = super::fuzz::parse_duration, default_value = "120s")]
    pub timeout: Duration,
    /// Requests per API: the first, and re-asks with the diagnostics of an answer that did not check.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=10))]
    pub rounds: u64,
    /// Use the enumerative generator only, even when an endpoint is configured.
    #[arg(long)]
    pub offline: bool,
    /// Print what would be written instead of writing it.
    #[arg(long)]
    pub dry_run: bool,
    /// Print per-API figures as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// The `sfz-worker` binary that reads libtorch's schemas (default: next to `sfz`).
    #[arg(long)]
    pub worker: Option<PathBuf>,
    /// Conforming inputs run per API before asking the model, whose argument errors go into the
    /// prompt (0: none).
    #[arg(long, default_value_t = 64)]
    pub probe_cases: u64,
}

/// Workers running the APIs of one file, for the errors of their rejected inputs.
struct Probe {
    pool: crate::worker::Pool,
    apis: Vec<crate::spec::ApiSpec>,
}

impl Probe {
    /// None when no API plans or no worker starts: the prompt then goes without errors.
    fn start(spec: &crate::spec::Spec, catalog: &crate::ops::catalog::Catalog, worker: &std::path::Path) -> Option<Probe> {
        let (plans, _) = crate::plan::plan(spec, catalog);
        if plans.is_empty() {
            return None;
        }
        let config = crate::worker::PoolConfig { worker_exe: worker.to_path_buf(), workers: 1, ops: plans.iter().map(|p| p.binding.clone()).collect(), ..Default::default() };
        let pool = crate::worker::Pool::start(config).ok()?;
        Some(Probe { pool, apis: plans.into_iter().map(|p| p.api).collect() })
    }

    /// `rejections::prompt_text` for one API (empty when it did not plan).
    fn rejections(&self, api: &str, cases: usize) -> String {
        let Some(index) = self.apis.iter().position(|a| a.name == api) else { return String::new() };
        let runner = super::infer::PoolRunner { pool: &self.pool, apis: &self.apis };
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let (ran, found) = rules::rejections::collect(&self.apis[index], index, &runner, cases, 0, &crate::solve::Limits::default(), deadline);
        rules::rejections::prompt_text(ran, &found, 8)
    }
}

#[derive(serde::Serialize)]
struct ApiFigures {
    api: String,
    /// `llm` or `enumerative`.
    source: &'static str,
    proposed: usize,
    rounds: usize,
    /// Answers that had diagnostics.
    answers_with_diagnostics: usize,
    /// Why the model was not used, when it was configured.
    fallback: Option<String>,
    seconds: f64,
}

pub fn run(args: Args, color: Color) -> anyhow::Result<ExitCode> {
    let render = RenderConfig { color: color.stderr() };
    let worker = args.worker.clone().unwrap_or_else(crate::worker::default_worker_exe);
    let catalog = super::check::catalog(&worker).map_err(|e| anyhow::anyhow!("cannot read libtorch's operator schemas: {e}"))?;
    let files = super::infer::files(&args.targets, args.out.as_ref(), &catalog, render)?;
    let settings = llm::Settings { endpoint: args.endpoint.clone(), model: args.model.clone(), api_key: args.api_key.clone(), timeout: Some(args.timeout) };
    let endpoint = if args.offline { None } else { settings.resolve() };
    let mut figures = Vec::new();
    let mut failed = false;
    // After one endpoint failure that no retry can fix (unreachable), later APIs go offline at once.
    let mut endpoint_down: Option<String> = None;
    for path in &files {
        let mut text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("cannot read `{}`: {e}", path.display()))?;
        let checked = crate::check::check_text(path, &text);
        if checked.has_errors() {
            eprint!("{}", diag::render_all(&checked.map, &checked.diags, render));
            eprintln!("sfz suggest: `{}` has errors; fix them first", path.display());
            failed = true;
            continue;
        }
        // The model is shown what libtorch said about conforming inputs it rejected: workers
        // run a sample of each API first (not when the answer would come from enumeration).
        let probe = if endpoint.is_some() && args.probe_cases > 0 { Probe::start(&checked.spec, &catalog, &worker) } else { None };
        for api in checked.spec.apis.iter().filter(|a| args.api.is_empty() || args.api.iter().any(|f| a.name.contains(f.as_str()))) {
            let start = std::time::Instant::now();
            let api_text = item_text(&text, &api.name);
            let schema = crate::ops::registry::resolve(api, &catalog).ok().map(|b| b.schema.clone());
            let mut fig = ApiFigures { api: api.name.clone(), source: "enumerative", proposed: 0, rounds: 0, answers_with_diagnostics: 0, fallback: None, seconds: 0.0 };
            let mut candidates: Option<Vec<Candidate>> = None;
            if let Some(ep) = &endpoint {
                let outcome = match &endpoint_down {
                    Some(why) => Err(why.clone()),
                    None => llm::suggest(
                        ep,
                        path,
                        &text,
                        &api.name,
                        &api_text,
                        schema.as_deref(),
                        &probe.as_ref().map_or(String::new(), |p| p.rejections(&api.name, args.probe_cases as usize)),
                        args.rounds as usize,
                    )
                    .map_err(|e| {
                        if matches!(e, llm::LlmError::Unreachable(_)) {
                            endpoint_down = Some(e.to_string());
                        }
                        e.to_string()
                    }),
                };
                match outcome {
                    Ok(s) => {
                        fig.source = "llm";
                        fig.rounds = s.rounds;
                        fig.answers_with_diagnostics = s.dropped;
                        candidates = Some(s.candidates);
                    }
                    Err(why) => {
                        let d = Diagnostic::new(codes::W0007, format!("no usable answer from the language model at {} for `{}`", ep.base_url, api.name))
                            .with_note(why.clone())
                            .with_help("the enumerative generator's candidates are used instead");
                        eprint!("{}", diag::render(&SourceMap::default(), &d, render));
                        fig.fallback = Some(why);
                    }
                }
            }
            let candidates = candidates.unwrap_or_else(|| {
                let existing: Vec<&str> = checked.spec.rules.iter().filter(|r| r.api == api.name).map(|r| r.meta.name.as_str()).collect();
                enumerate::candidates(api).into_iter().filter(|c| !existing.contains(&c.name.as_str())).collect()
            });
            fig.proposed = candidates.len();
            // Rules of the same names that are still candidates are replaced; judged ones stay.
            let replace: Vec<String> = checked.spec.rules.iter().filter(|r| r.api == api.name && r.meta.status == RuleStatus::Candidate).map(|r| r.meta.name.clone()).collect();
            let judged: Vec<Judged> = candidates.into_iter().filter(|c| !judged_already(&checked.spec, &api.name, c)).map(Judged::candidate).collect();
            match rules::write_rules(&text, &api.name, &judged, &replace) {
                Some(t) => text = t,
                None => eprintln!("sfz suggest: could not write the candidates of {}", api.name),
            }
            fig.seconds = start.elapsed().as_secs_f64();
            if !args.json {
                eprintln!(
                    "{}: {} candidate{} from {}{}",
                    fig.api,
                    fig.proposed,
                    if fig.proposed == 1 { "" } else { "s" },
                    fig.source,
                    if fig.source == "llm" { format!(" ({} request{})", fig.rounds, if fig.rounds == 1 { "" } else { "s" }) } else { String::new() }
                );
            }
            figures.push(fig);
        }
        if !super::write_back("suggest", "the candidates", path, &text, args.dry_run, render)? {
            failed = true;
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&figures)?);
    }
    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// A candidate whose constraints a validated or rejected rule of the API already states.
fn judged_already(spec: &crate::spec::Spec, api: &str, c: &Candidate) -> bool {
    let norm = |s: &str| s.split_whitespace().collect::<String>().replace(';', "");
    spec.rules.iter().filter(|r| r.api == api && r.meta.status != RuleStatus::Candidate).any(|r| {
        let text: String = r.constraints.iter().map(|k| k.text.as_str()).collect::<Vec<_>>().join("");
        norm(&text) == norm(&c.text)
    })
}

/// The source of an `api` item (docs and attributes included), for the prompt.
fn item_text(text: &str, api: &str) -> String {
    let (module, _) = crate::syntax::parse(diag::FileId(0), text);
    module.items.iter().find(|i| matches!(&i.kind, crate::ast::ItemKind::Api(a) if a.path.name == api)).and_then(|i| text.get(i.span.range())).unwrap_or(api).to_string()
}
