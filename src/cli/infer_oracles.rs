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
use crate::rules::propose::relations;
use crate::spec::Spec;
use crate::worker::PoolConfig;

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
    fn trouble(&self, message: &str) {
        eprintln!("sfz: {message}");
    }
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
    // Relations are judged apart (`validate_relations`), and `nan_inf` by the domain learned
    // (`rules::domains`): their checks are no oracle to keep.
    let mut plans = plans;
    for p in &mut plans {
        p.checks.retain(|c| !matches!(c.check.variant, crate::wire::variant::Variant::Relation(_) | crate::wire::variant::Variant::Defined));
    }
    let plans: Vec<_> = plans.into_iter().filter(|p| !p.checks.is_empty()).collect();
    if plans.is_empty() {
        return Ok((Vec::new(), text.to_string()));
    }
    let Some((summary, findings)) = campaign(&plans, v)? else { return Ok((Vec::new(), text.to_string())) };
    let mut verdicts = Vec::new();
    let mut text = text.to_string();
    for plan in &plans {
        let cases = summary.apis.iter().find(|a| a.api == plan.api.name).map_or(0, |a| a.conform_executions);
        if cases == 0 {
            continue;
        }
        let mut verdict = OracleVerdicts { api: plan.api.name.clone(), cases, ..Default::default() };
        for check in &plan.checks {
            let name = check.check.oracle;
            if verdict.kept.contains(&name) || verdict.refuted.iter().any(|(o, _)| *o == name) {
                continue;
            }
            // A premature overflow is a finding of `overflow`, not a refutation of `precision`;
            // a worker that died inside the check met a defect (max_pool2d_with_indices_backward
            // corrupting its heap in the float64 reference), which says nothing of the oracle.
            let died = |f: &&Finding| f.signal.is_some() || f.exit.is_some();
            match findings.iter().find(|f| f.api == plan.api.name && f.oracle == name && !died(f)) {
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

/// A conform-mode campaign of `plans` without mutators, `v.cases` per API; its summary and
/// findings (None when nothing could run).
fn campaign(plans: &[crate::plan::ApiPlan], v: &Validation) -> anyhow::Result<Option<(crate::fuzz::stats::Summary, Vec<Finding>)>> {
    let gen = GenConfig { seed: v.seed, mutation: Mutation::none(), ..GenConfig::default() };
    let (pools, _, _) = crate::plan::solve_pools(plans, &gen);
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
        deadline: None,
        started: None,
        baseline: None,
    };
    let summary = match fuzz::run(plans, fuzz::Pools::Solved(pools), Vec::new(), &store, &config, &Quiet) {
        Ok(s) => s,
        Err(fuzz::FuzzError::NothingToFuzz) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    drop(store);
    let findings = store::load(&scratch).map(|l| l.findings).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(Some((summary, findings)))
}

/// Per API, the relations kept and those refuted.
#[derive(Clone, Debug, Default)]
pub struct RelationVerdicts {
    pub api: String,
    pub cases: u64,
    pub kept: Vec<String>,
    pub refuted: Vec<String>,
}

/// What one proposed relation did in the validation campaign.
struct RelationRun<'a> {
    /// The proposal's name (`odd`, `relations::CONTROL`) and statement.
    name: &'a str,
    statement: &'a str,
    /// The relation's name in the scratch spec, as its findings' signatures give it.
    relation: &'a str,
    /// Cases it held on, and cases it failed on in float64 too.
    agreed: u64,
    refuted: u64,
}

/// Cases a relation must have been compared and held on to be kept.
const MIN_RELATION_CASES: u64 = 30;

/// The candidate relations of `rules::propose::relations` for the APIs of `spec`, run on ordinary
/// inputs with ordinary scales; those that held are written as validated rules.
pub fn validate_relations(path: &Path, spec: &Spec, text: &str, catalog: &Catalog, v: &Validation) -> anyhow::Result<(Vec<RelationVerdicts>, String)> {
    // Every candidate as a validated rule of a scratch copy of the file without the relations
    // earlier runs inferred (judged again), checked with it.
    let inferred = |api: &str| -> Vec<String> {
        let mine = spec.rules.iter().filter(|r| r.api == api && r.meta.name.starts_with(relations::PREFIX) && r.meta.source == crate::spec::RuleSource::Inferred);
        mine.map(|r| r.meta.name.clone()).collect()
    };
    let mut synthetic = text.to_string();
    for api in &spec.apis {
        if let Some(t) = crate::rules::write_rules(&synthetic, &api.name, &[], &inferred(&api.name)) {
            synthetic = t;
        }
    }
    let mut proposed: Vec<(String, String, String)> = Vec::new();
    for api in &spec.apis {
        let candidates = relations::candidates(api, &inferred(&api.name));
        let control = relations::control(api).filter(|_| !candidates.is_empty()).map(|c| (relations::CONTROL.to_string(), c));
        for (name, statement) in candidates.into_iter().chain(control) {
            let k = proposed.len();
            synthetic.push_str(&format!("\n#[status(validated)]\nrule sfz_relation_{k} for {} {{\n    {statement}\n}}\n", api.name));
            proposed.push((api.name.clone(), name, statement));
        }
    }
    let checked = crate::check::check_text(path, &synthetic);
    let mut apis: Vec<crate::spec::ApiSpec> = Vec::new();
    for api in &checked.spec.apis {
        let mut a = api.clone();
        a.relations.retain(|r| matches!(&r.origin, crate::spec::Origin::Rule(m) if m.name.starts_with("sfz_relation_")));
        if a.relations.is_empty() || !spec.apis.iter().any(|s| s.name == a.name) {
            continue;
        }
        for r in &mut a.relations {
            r.relation.scalars = relations::ordinary(&r.relation.scalars);
        }
        apis.push(a);
    }
    let (mut plans, _) = crate::plan::plan(&Spec { apis, rules: Vec::new(), programs: Vec::new() }, catalog);
    for p in &mut plans {
        p.checks.retain(|c| c.check.oracle == crate::wire::oracle::Oracle::Relation);
    }
    plans.retain(|p| !p.checks.is_empty());
    if plans.is_empty() {
        return Ok((Vec::new(), text.to_string()));
    }
    let Some((summary, findings)) = campaign(&plans, v)? else { return Ok((Vec::new(), text.to_string())) };
    let mut verdicts = Vec::new();
    let mut text = text.to_string();
    for plan in &plans {
        let Some(s) = summary.apis.iter().find(|a| a.api == plan.api.name) else { continue };
        let mut verdict = RelationVerdicts { api: plan.api.name.clone(), cases: s.conform_executions, ..Default::default() };
        let mut rules = Vec::new();
        // Per check: the proposal it runs, what it did.
        let runs: Vec<RelationRun> = plan
            .checks
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let crate::wire::variant::Variant::Relation(rel) = &c.check.variant else { return None };
                let r = plan.api.relations.iter().find(|r| r.relation.name == rel.name)?;
                let crate::spec::Origin::Rule(m) = &r.origin else { return None };
                let k = m.name.strip_prefix("sfz_relation_").and_then(|k| k.parse::<usize>().ok())?;
                let (_, name, statement) = &proposed[k];
                Some(RelationRun {
                    name,
                    statement,
                    relation: &r.relation.name,
                    agreed: s.checks_agreed.get(i).copied().unwrap_or(0),
                    refuted: s.checks_refuted.get(i).copied().unwrap_or(0),
                })
            })
            .collect();
        let vacuous = runs.iter().find(|r| r.name == relations::CONTROL).map_or(0, |r| r.agreed);
        for run in runs.iter().filter(|r| r.name != relations::CONTROL) {
            let (name, statement) = (run.name, run.statement);
            // Held: compared and agreed on enough cases where the input mattered, never
            // disagreed.
            let agreed = relations::evidence(run.agreed, vacuous);
            // Broken: a finding, or a low-precision case that float64 breaks too (no finding in
            // a campaign, where the relation is taken as given; here it is what is judged).
            let broken =
                run.refuted > 0 || findings.iter().any(|f| f.api == plan.api.name && matches!(&f.cause, crate::oracle::Cause::Relation { name, .. } if *name == run.relation));
            if broken {
                verdict.refuted.push(name.to_string());
            } else if agreed >= MIN_RELATION_CASES {
                verdict.kept.push(name.to_string());
                rules.push(relations::kept(name, statement, agreed));
            }
        }
        // A kept relation that a wider kept one implies is not written.
        let kept = verdict.kept.clone();
        let wider = |name: &str| relations::implied_by(name).is_some_and(|w| kept.iter().any(|k| k == w));
        rules.retain(|r| r.candidate.name.strip_prefix(relations::PREFIX).is_none_or(|n| !wider(n)));
        verdict.kept.retain(|k| !wider(k));
        if let Some(t) = crate::rules::write_rules(&text, &plan.api.name, &rules, &inferred(&plan.api.name)) {
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
