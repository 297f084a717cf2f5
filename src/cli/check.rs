//! `sfz check`: parse and type-check specs, print diagnostics.
use std::path::PathBuf;
use std::process::ExitCode;

use super::{Color, Format};
use crate::check;
use crate::diag::{self, RenderConfig, Severity};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Spec files, or directories to search for `*.sfz`.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// `human` (rustc-style) or `json` (one object with every diagnostic).
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Solve every API's constraints afresh instead of reusing verdicts cached by earlier runs.
    #[arg(long)]
    pub no_cache: bool,
    /// Do not compare the APIs' signatures with libtorch's operator schemas.
    #[arg(long)]
    pub no_signatures: bool,
    /// The `sfz-worker` binary that reads libtorch's schemas (default: next to `sfz`).
    #[arg(long)]
    pub worker: Option<PathBuf>,
}

pub fn run(args: Args, color: Color) -> anyhow::Result<ExitCode> {
    super::missing_paths(&args.paths)?;
    // Satisfiability verdicts from earlier runs: solving is most of the time of a check.
    let cache = if args.no_cache { None } else { check::sat::default_path() };
    if let Some(path) = &cache {
        check::sat::load(path);
    }
    let mut checked = check::check_paths(&args.paths);
    if let Some(path) = &cache {
        // A cache that cannot be written only makes the next run slower.
        let _ = check::sat::save(path);
    }
    // Signatures are compared for specs without errors (a broken API would only add noise).
    let signatures: Result<(), String> = if args.no_signatures {
        Err("--no-signatures".into())
    } else if checked.has_errors() {
        Err("the specs have errors".into())
    } else {
        let worker = args.worker.clone().unwrap_or_else(crate::worker::default_worker_exe);
        catalog(&worker).map(|catalog| {
            checked.diags.extend(check::signatures::compare(&checked, &catalog));
            diag::sort(&mut checked.diags);
        })
    };
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
