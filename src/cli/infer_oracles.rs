//! `sfz infer --oracles`: the differential oracles each API without an `oracles` clause would
//! get, run on conforming inputs of ordinary magnitude (no mutators), and the verdicts written
//! back as rules (`rules::oracles`). One campaign per file, findings kept in a scratch folder.
use std::path::Path;
use std::time::Duration;

use crate::findings::{store, Finding, Store};
use crate::fuzz::{self, FuzzConfig, Observer};
use crate::gen::{GenConfig, Mutation};
use crate::ops::catalog::Catalog;
use crate::rules::oracles::{self, OracleVerdicts};
use crate::spec::Spec;
use crate::worker::supervisor::PoolConfig;

/// What a validation campaign runs with.
pub struct Validation<'a> {
    pub worker: &'a Path,
    pub workers: usize,
    pub timeout: Duration,
    pub seed: u64,
    /// Conforming cases per API.
    pub cases: u64,
    /// Wall time per API, at most.
    pub budget: Duration,
}

struct Quiet;

impl Observer for Quiet {
    fn progress(&self, _: u64, _: u64, _: Duration) {}
    fn finding(&self, _: &Finding) {}
}

/// The verdicts for the APIs of `spec` that have no `oracles` clause, and the new text of the
/// file with them written as rules.
pub fn validate(spec: &Spec, text: &str, catalog: &Catalog, v: &Validation) -> anyhow::Result<(Vec<OracleVerdicts>, String)> {
    let apis = spec.apis.iter().filter(|a| !a.oracles_written).cloned().collect();
    let implied = Spec { apis, rules: Vec::new(), programs: Vec::new() };
    // Refutations from earlier runs are judged again.
    let implied = Spec {
        apis: implied
            .apis
            .into_iter()
            .map(|mut a| {
                a.refuted_oracles.clear();
                a
            })
            .collect(),
        ..implied
    };
    let (plans, _) = crate::plan::plan(&implied, catalog);
    let plans: Vec<_> = plans.into_iter().filter(|p| !p.checks.is_empty()).collect();
    if plans.is_empty() {
        return Ok((Vec::new(), text.to_string()));
    }
    let gen = GenConfig { seed: v.seed, mutation: Mutation::none(), ..GenConfig::default() };
    let (pools, _, _) = crate::plan::solve_pools(&plans, &gen);
    let scratch = tempfile_dir()?;
    let store = Store::open(&scratch)?;
    let n = plans.len() as u64;
    let config = FuzzConfig {
        seed: v.seed,
        iterations: Some(v.cases * n),
        time: Some(v.budget * n as u32),
        pool: PoolConfig { worker_exe: v.worker.to_path_buf(), workers: v.workers, timeout: v.timeout, memory_mb: Some(4096), ..PoolConfig::default() },
        gen,
        minimize: None,
        locations: Vec::new(),
        quarantine: Some(fuzz::QUARANTINE_AFTER),
        first_case: 0,
        elapsed_before: 0.0,
    };
    let summary = match fuzz::run(&plans, pools, Vec::new(), &store, &config, &Quiet) {
        Ok(s) => s,
        Err(fuzz::FuzzError::NothingToFuzz) => return Ok((Vec::new(), text.to_string())),
        Err(e) => return Err(e.into()),
    };
    drop(store);
    let findings = store::load(&scratch).map(|l| l.findings).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&scratch);
    let mut verdicts = Vec::new();
    let mut text = text.to_string();
    for plan in &plans {
        let cases = summary.apis.iter().find(|a| a.api == plan.api.name).map_or(0, |a| a.conform_executions);
        if cases == 0 {
            continue;
        }
        let mut verdict = OracleVerdicts { api: plan.api.name.clone(), cases, ..Default::default() };
        for check in &plan.checks {
            let name = check.check.oracle.clone();
            if verdict.kept.contains(&name) || verdict.refuted.iter().any(|(o, _)| *o == name) {
                continue;
            }
            // A premature overflow is a finding of `overflow`, not a refutation of `precision`.
            match findings.iter().find(|f| f.api == plan.api.name && f.oracle == name) {
                Some(f) => verdict.refuted.push((name, f.message.lines().next().unwrap_or("").to_string())),
                None => verdict.kept.push(name),
            }
        }
        let previous: Vec<String> = spec.rules.iter().filter(|r| r.api == plan.api.name).map(|r| r.meta.name.clone()).collect();
        let (rules, replace) = oracles::rules(&verdict, &previous);
        if let Some(t) = crate::rules::write_rules_with_reasons(&text, &plan.api.name, &rules, &replace) {
            text = t;
        }
        verdicts.push(verdict);
    }
    Ok((verdicts, text))
}

fn tempfile_dir() -> anyhow::Result<std::path::PathBuf> {
    let dir =
        std::env::temp_dir().join(format!("sfz-oracles-{}-{}", std::process::id(), std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos())));
    std::fs::create_dir_all(&dir).map_err(|e| anyhow::anyhow!("cannot create the scratch folder `{}`: {e}", dir.display()))?;
    Ok(dir)
}
