//! `sfz check`: parse and type-check specs, print diagnostics.
use std::path::PathBuf;
use std::process::ExitCode;

use super::{Color, Format};
use crate::check;
use crate::diag::{self, RenderConfig, Severity};
use crate::wire::oracle::Oracle;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Spec files, or directories to search for `*.sfz`.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// `human` (rustc-style) or `json` (one object with every diagnostic).
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Parse every file and solve every API's constraints afresh instead of reusing the syntax
    /// trees and verdicts cached by earlier runs.
    #[arg(long)]
    pub no_cache: bool,
    /// Do not compare the APIs' signatures with libtorch's operator schemas.
    #[arg(long)]
    pub no_signatures: bool,
    /// The `sfz-worker` binary that reads libtorch's schemas (default: next to `sfz`).
    #[arg(long)]
    pub worker: Option<PathBuf>,
    /// Also say, per oracle, on how many APIs a campaign would run its checks (written or
    /// implied, less those refuted or not applicable), and how many relations it would check.
    #[arg(long)]
    pub oracles: bool,
}

pub fn run(args: Args, color: Color) -> anyhow::Result<ExitCode> {
    super::missing_paths(&args.paths)?;
    // Satisfiability verdicts from earlier runs: solving is most of the time of a check.
    // And the files' syntax trees: parsing is most of the rest.
    let cache = if args.no_cache { None } else { check::sat::default_path() };
    let trees = if args.no_cache { None } else { check::parsed::default_path() };
    if let Some(path) = &cache {
        check::sat::load(path);
    }
    if let Some(path) = &trees {
        check::parsed::load(path);
    }
    let mut checked = check::check_paths(&args.paths);
    // A cache that cannot be written only makes the next run slower.
    if let Some(path) = &cache {
        let _ = check::sat::save(path);
    }
    if let Some(path) = &trees {
        let _ = check::parsed::save(path);
    }
    // Signatures are compared for specs without errors (a broken API would only add noise).
    let mut coverage = None;
    let signatures: Result<(), String> = if args.no_signatures {
        Err("--no-signatures".into())
    } else if checked.has_errors() {
        Err("the specs have errors".into())
    } else {
        let worker = args.worker.clone().unwrap_or_else(crate::worker::default_worker_exe);
        catalog(&worker).map(|catalog| {
            checked.diags.extend(check::signatures::compare(&checked, &catalog));
            diag::sort(&mut checked.diags);
            if args.oracles {
                let (c, warnings) = OracleCoverage::of(&checked.spec, &catalog);
                // The oracles that cannot apply (W0101), as a campaign would say.
                checked.diags.extend(warnings);
                diag::sort(&mut checked.diags);
                coverage = Some(c);
            }
        })
    };
    if args.oracles && coverage.is_none() {
        anyhow::bail!("--oracles needs libtorch's operators and specs without errors: {}", signatures.as_ref().err().map_or("", String::as_str));
    }
    let errors = checked.diags.iter().filter(|d| d.severity == Severity::Error).count();
    let warnings = checked.diags.len() - errors;
    match args.format {
        Format::Json => {
            let out = serde_json::json!({
                "files": checked.roots.len(),
                "apis": checked.spec.apis.len(),
                "errors": errors,
                "warnings": warnings,
                "signatures_compared": signatures.is_ok(),
                "oracles": coverage.as_ref().map(OracleCoverage::to_json),
                "diagnostics": checked.diags.iter().map(|d| diag::to_json(&checked.map, d)).collect::<Vec<_>>(),
            });
            println!("{}", serde_json::to_string_pretty(&out)?);
        }
        Format::Human => {
            let config = RenderConfig { color: color.stderr() };
            eprint!("{}", diag::render_all(&checked.map, &checked.diags, config));
            let summary = format!(
                "checked {} file{}, {} API{}: {} error{}, {} warning{}",
                checked.roots.len(),
                plural(checked.roots.len()),
                checked.spec.apis.len(),
                plural(checked.spec.apis.len()),
                errors,
                plural(errors),
                warnings,
                plural(warnings)
            );
            eprintln!("{summary}");
            if let Some(c) = &coverage {
                eprint!("{}", c.table());
            }
            match &signatures {
                Err(why) if !args.no_signatures && errors == 0 => {
                    eprintln!("note: signatures were not compared with libtorch's operators: {why}")
                }
                _ => {}
            }
        }
    }
    Ok(if errors > 0 { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// Per oracle, the APIs a campaign would check with it (`plan::plan`'s checks; `overflow`
/// rides on the precision check, the crash family runs everywhere), and the relations.
struct OracleCoverage {
    apis: usize,
    per_oracle: Vec<(Oracle, usize)>,
    relations: usize,
}

impl OracleCoverage {
    /// The coverage, and the plan's warnings about oracles that cannot apply.
    fn of(spec: &crate::spec::Spec, catalog: &crate::ops::catalog::Catalog) -> (OracleCoverage, Vec<crate::diag::Diagnostic>) {
        let (plans, diags) = crate::plan::plan(spec, catalog);
        let warnings = diags.into_iter().filter(|d| d.severity == Severity::Warning).collect();
        let count = |oracle: Oracle| {
            plans.iter().filter(|p| p.checks.iter().any(|c| c.check.oracle == oracle || (oracle == Oracle::Precision && c.check.oracle == Oracle::Overflow))).count()
        };
        let shown = [Oracle::Precision, Oracle::Layout, Oracle::Out, Oracle::Inplace, Oracle::Gradient, Oracle::NanInf, Oracle::Relation];
        let coverage = OracleCoverage {
            apis: plans.len(),
            per_oracle: shown.iter().map(|&o| (o, count(o))).collect(),
            relations: plans.iter().map(|p| p.checks.iter().filter(|c| c.check.oracle == Oracle::Relation).count()).sum(),
        };
        (coverage, warnings)
    }

    fn table(&self) -> String {
        let mut out = format!(
            "oracles on {} planned APIs (besides crash, hang, internal_error, oom on all):
",
            self.apis
        );
        for (oracle, n) in &self.per_oracle {
            let extra = if *oracle == Oracle::Relation { format!(" ({} relations)", self.relations) } else { String::new() };
            out.push_str(&format!("  {:<10} {n:>5}{extra}\n", oracle.as_str()));
        }
        out
    }

    fn to_json(&self) -> serde_json::Value {
        let mut per: serde_json::Map<String, serde_json::Value> = self.per_oracle.iter().map(|(o, n)| (o.as_str().to_string(), (*n).into())).collect();
        per.insert("apis".into(), self.apis.into());
        per.insert("relations".into(), self.relations.into());
        serde_json::Value::Object(per)
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// libtorch's operator schemas: cached, or read from a worker and cached.
pub(super) fn catalog(worker: &std::path::Path) -> Result<crate::ops::catalog::Catalog, String> {
    if let Some(c) = check::signatures::cached_catalog(worker) {
        return Ok(c);
    }
    let schemas = crate::worker::fetch_catalog(worker).map_err(|e| e.to_string())?;
    // Not cached, the schemas are read again next time; no more harm than that.
    let _ = check::signatures::save_catalog(worker, &schemas);
    Ok(crate::ops::catalog::Catalog::from_schemas(schemas))
}
