//! Re-running one recorded finding in a fresh worker: its exact case, its API as the spec now
//! declares it (the oracle that fired kept on, its recorded tolerances used), judged as the
//! campaign judged it.
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::diag::{codes, Diagnostic};
use crate::findings::{self, Finding};
use crate::ops::catalog::Catalog;
use crate::oracle;
use crate::plan::{self, ApiPlan};
use crate::spec::{OracleUse, Spec};
use crate::triage::{alone, also_dies};
use crate::wire::oracle::Oracle;
use crate::wire::outcome::Outcome;
use crate::worker::Execution;
use crate::worker::{fetch_catalog, Pool, PoolConfig, PoolError};

/// What a replay saw.
#[derive(Clone, Debug, Serialize)]
pub struct Replay {
    pub id: String,
    pub api: String,
    pub oracle: Oracle,
    pub signature: String,
    /// The same oracle fired with the same signature (an abort: in the same place).
    pub reproduced: bool,
    /// Every detection of this execution, as `oracle: signature`.
    pub detections: Vec<String>,
    /// How the call ended, in words: the call that showed the cause, else the first.
    pub outcome: String,
    /// How many times in a row the case could be called, at most: more than once for a worker's
    /// death, whose calls stop at the one that shows the cause.
    pub calls: u32,
    /// The call, counted from 1, that showed the cause.
    pub on_call: Option<u32>,
    /// For a finding listed under a death (`Finding::same_as`) that showed that death instead:
    /// the death's finding, the same defect's other outcome.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub as_finding: Option<String>,
}

/// Why a replay could not run: a diagnostic (unknown finding, API gone) or the worker.
#[derive(Debug)]
pub enum ReplayError {
    Diagnostic(Box<Diagnostic>),
    Store(findings::StoreError),
    Pool(PoolError),
}

/// Finds a finding by id (or unique id prefix) in `dir`. Skipped lines are returned for warnings.
pub fn find(dir: &Path, id: &str) -> Result<(Finding, findings::Loaded), ReplayError> {
    let loaded = findings::load(dir).map_err(ReplayError::Store)?;
    let exact = loaded.findings.iter().find(|f| f.id == id);
    let prefixed: Vec<&Finding> = loaded.findings.iter().filter(|f| f.id.starts_with(id)).collect();
    let found = match (exact, prefixed.as_slice()) {
        (Some(f), _) => f.clone(),
        (None, [f]) => (*f).clone(),
        (None, many) => {
            let mut d = Diagnostic::new(codes::E0101, format!("no finding `{id}` in `{}`", dir.display()));
            d = if many.len() > 1 {
                d.with_note(format!("`{id}` starts {} ids: {}", many.len(), many.iter().take(5).map(|f| f.id.as_str()).collect::<Vec<_>>().join(", ")))
                    .with_help("give more of the id")
            } else {
                d.with_note(format!("the folder holds {} findings", loaded.findings.len())).with_help(format!("`sfz report {}` lists them", dir.display()))
            };
            return Err(ReplayError::Diagnostic(Box::new(d)));
        }
    };
    Ok((found, loaded))
}

/// The plan to replay a finding with: its API from `specs` (default: the file the finding
/// records), with the finding's oracle on and its recorded check.
pub fn plan_for(finding: &Finding, specs: &[PathBuf], catalog: &Catalog) -> Result<(ApiPlan, Vec<crate::wire::variant::Check>), ReplayError> {
    let gone = |note: String, help: &str| {
        ReplayError::Diagnostic(Box::new(
            Diagnostic::new(codes::E0102, format!("`{}` of finding {} is no longer known", finding.api, finding.id)).with_note(note).with_help(help.to_string()),
        ))
    };
    let paths: Vec<PathBuf> = if specs.is_empty() { finding.spec.iter().map(|s| PathBuf::from(&s.file)).collect() } else { specs.to_vec() };
    if paths.is_empty() {
        return Err(gone("the finding does not say which spec declares its API (it predates sfz recording that)".into(), "pass the spec with --spec PATH"));
    }
    if let Some(missing) = paths.iter().find(|p| !p.exists()) {
        return Err(gone(format!("the spec `{}` no longer exists", missing.display()), "pass the spec that declares the API with --spec PATH"));
    }
    let checked = crate::check::check_paths(&paths);
    let Some(mut api) = checked.spec.apis.iter().find(|a| a.name == finding.api).cloned() else {
        let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        return Err(gone(format!("no API `{}` in {}", finding.api, shown.join(", ")), "the API was renamed or removed; pass the spec that declares it with --spec PATH"));
    };
    if !api.has_oracle(finding.oracle) {
        api.oracles.push(OracleUse { name: finding.oracle.to_string(), span: api.span, args: Vec::new(), written: false });
    }
    let (mut plans, diags) = plan::plan(&Spec { apis: vec![api], rules: Vec::new(), programs: Vec::new() }, catalog);
    let Some(mut plan) = plans.pop() else {
        let why = diags.first().map_or_else(|| "it cannot be planned".to_string(), |d| d.notes.first().cloned().unwrap_or_else(|| d.message.clone()));
        return Err(gone(format!("the operator registry no longer resolves it: {why}"), "check the spec against this libtorch with `sfz fuzz`"));
    };
    // The check as recorded: its tolerances (and gradient settings), not today's defaults.
    if let Some(recorded) = &finding.check {
        if let Some(planned) = plan.checks.iter_mut().find(|c| c.check.oracle == recorded.oracle) {
            planned.check.tolerances = recorded.tolerances;
            if matches!(recorded.variant, crate::wire::variant::Variant::Gradient { .. }) {
                planned.check.variant = recorded.variant.clone();
            }
        }
    }
    let (_, checks) = plan::op_table(std::slice::from_ref(&plan));
    Ok((plan, checks.into_iter().next().unwrap_or_default()))
}

/// Replays a finding: plans its API, runs its case in a fresh worker, judges it. A worker's death
/// gets the calls in a row confirmation gave it (`alone::CONFIRM_CALLS`): heap damage shows at a
/// later free, and one call that returns proves nothing.
pub fn replay(finding: &Finding, specs: &[PathBuf], pool: PoolConfig) -> Result<Replay, ReplayError> {
    let catalog = Catalog::from_schemas(fetch_catalog(&pool.worker_exe).map_err(ReplayError::Pool)?);
    let (plan, checks) = plan_for(finding, specs, &catalog)?;
    let (ops, all_checks) = plan::op_table(std::slice::from_ref(&plan));
    // A death is replayed as confirmation ran it: the call alone, or with the check that died.
    let pool = Pool::start(alone::alone_config(&PoolConfig { ops, checks: all_checks, ..pool }, finding, 0)).map_err(ReplayError::Pool)?;
    let checks = alone::judged_alone(finding, &checks);
    let case = crate::wire::case::Case { op: 0, ..finding.case.clone() };
    // A finding listed under a death shows either outcome, and gets the calls its probe had.
    let runs = if finding.same_as.is_some() { alone::calls_for(finding).max(also_dies::PROBE_CALLS) } else { alone::calls_for(finding) };
    let other = |d: &oracle::Detection| finding.same_as.is_some() && also_dies::is_death(d);
    let judge = |exec: &Execution| Some(oracle::judge(&plan.api, &checks, &case, exec)).filter(|v| v.detections.iter().any(|d| alone::same_cause(finding, d) || other(d)));
    let ran = alone::run_until(&pool, &case, runs, judge);
    let as_finding = match &ran.shown {
        Some((_, v)) if !v.detections.iter().any(|d| alone::same_cause(finding, d)) => finding.same_as.clone(),
        _ => None,
    };
    // The execution to describe: the one that showed the cause, else the first the worker gave.
    let described = match ran.shown {
        Some((at, verdict)) => ran.execs[at].as_ref().map(|exec| (exec, verdict, Some(at as u32 + 1))),
        None => ran.execs.iter().flatten().next().map(|exec| (exec, oracle::judge(&plan.api, &checks, &case, exec), None)),
    };
    let replayed = |reproduced, detections, outcome, on_call| Replay {
        id: finding.id.clone(),
        api: finding.api.clone(),
        oracle: finding.oracle,
        signature: finding.signature.clone(),
        reproduced,
        detections,
        outcome,
        calls: runs as u32,
        on_call,
        as_finding: as_finding.clone(),
    };
    Ok(match described {
        None => replayed(false, vec![], "the worker could not run it".into(), None),
        Some((exec, verdict, on_call)) => replayed(on_call.is_some(), verdict.detections.iter().map(|d| format!("{}: {}", d.oracle, d.cause)).collect(), describe(exec), on_call),
    })
}

fn describe(exec: &Execution) -> String {
    let outcome = |o: &Outcome| match o {
        Outcome::Returned { outputs, .. } => format!("returned {} output{}", outputs.len(), if outputs.len() == 1 { "" } else { "s" }),
        Outcome::Raised { message, .. } => format!("raised: {}", message.lines().next().unwrap_or("")),
    };
    match exec {
        Execution::Completed(o) => outcome(o),
        Execution::Checked { outcome: o, checks } => format!("{} ({} differential checks ran)", outcome(o), checks.len()),
        Execution::Crashed { signal, .. } => format!("the worker died with {}", crate::wire::outcome::signal_name(*signal)),
        Execution::Exited { code, .. } => format!("the worker exited with status {code}"),
        Execution::TimedOut { millis } => format!("no answer after {millis} ms"),
        Execution::InCheck { check, failure } => format!("the call returned, then check {check} failed: {}", describe(failure)),
    }
}
