//! `sfz replay FINDING`: runs one recorded finding again in a fresh worker (a worker's death up
//! to 64 calls in a row) and says whether it still reproduces (exit 0) or not (exit 1).
use std::path::PathBuf;
use std::process::ExitCode;

use super::Color;
use crate::diag::{self, RenderConfig, SourceMap};
use crate::fuzz::replay::{self, ReplayError};
use crate::worker::{default_worker_exe, PoolConfig};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A finding id (or a unique prefix of one), or `DIR/ID`.
    pub finding: String,
    /// The findings folder, when FINDING is a bare id.
    #[arg(long, default_value = "sfz-out")]
    pub dir: PathBuf,
    /// Spec files declaring the API (default: the file the finding records).
    #[arg(long = "spec")]
    pub specs: Vec<PathBuf>,
    /// A case running longer than this is a hang.
    #[arg(long, value_parser = super::fuzz::parse_duration, default_value = "10s")]
    pub timeout: std::time::Duration,
    /// Print the result as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// The worker executable (default: `sfz-worker` next to `sfz`).
    #[arg(long)]
    pub worker: Option<PathBuf>,
}

pub fn run(args: Args, color: Color) -> anyhow::Result<ExitCode> {
    let (dir, id) = match args.finding.rsplit_once('/') {
        Some((d, id)) if !d.is_empty() => (PathBuf::from(d), id.to_string()),
        _ => (args.dir.clone(), args.finding.clone()),
    };
    let render = RenderConfig { color: color.stderr() };
    let fail = |e: ReplayError| -> anyhow::Result<ExitCode> {
        match e {
            ReplayError::Diagnostic(d) => {
                eprint!("{}", diag::render(&SourceMap::default(), &d, render));
                Ok(ExitCode::from(2))
            }
            ReplayError::Store(e) => Err(e.into()),
            ReplayError::Pool(e) => Err(e.into()),
        }
    };
    let (finding, loaded) = match replay::find(&dir, &id) {
        Ok(f) => f,
        Err(e) => return fail(e),
    };
    eprint!("{}", super::report::skipped_lines(&loaded.path, &loaded.text, &loaded.skipped, color));
    let pool = PoolConfig { worker_exe: args.worker.clone().unwrap_or_else(default_worker_exe), timeout: args.timeout, ..PoolConfig::default() };
    let r = match replay::replay(&finding, &args.specs, pool) {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        let verdict = match (r.on_call, r.calls) {
            (Some(k), _) if r.as_finding.is_some() => format!("reproduces as {} (on call {k} in a row), the same defect's other outcome", r.as_finding.as_deref().unwrap_or("")),
            (Some(k), _) if k > 1 => format!("reproduces (on call {k} in a row)"),
            (Some(_), _) => "reproduces".to_string(),
            (None, n) if n > 1 => format!("does not reproduce ({n} calls in a row)"),
            (None, _) => "does not reproduce".to_string(),
        };
        println!("{} ({} on {}): {verdict}", r.id, r.oracle, r.api);
        println!("  expected: {}", r.signature);
        println!("  the call: {}", r.outcome);
        for d in &r.detections {
            println!("  detected: {d}");
        }
    }
    Ok(if r.reproduced { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
