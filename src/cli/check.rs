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
}

pub fn run(args: Args, color: Color) -> anyhow::Result<ExitCode> {
    super::missing_paths(&args.paths)?;
    // Satisfiability verdicts from earlier runs: solving is most of the time of a check.
    let cache = if args.no_cache { None } else { check::sat::default_path() };
    if let Some(path) = &cache {
        check::sat::load(path);
    }
    let checked = check::check_paths(&args.paths);
    if let Some(path) = &cache {
        // A cache that cannot be written only makes the next run slower.
        let _ = check::sat::save(path);
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
