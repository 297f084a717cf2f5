//! `sfz fmt`: rewrite specs in the canonical layout, check that they are, or format stdin.
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use super::Color;
use crate::diag::{self, RenderConfig, SourceMap};
use crate::{check, fmt};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Spec files or directories to search for `*.sfz`; `-` reads stdin and writes stdout.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Change no file; list those not formatted and exit 1 if there are any (for CI).
    #[arg(long)]
    pub check: bool,
}

pub fn run(args: Args, color: Color) -> anyhow::Result<ExitCode> {
    let config = RenderConfig { color: color.stderr() };
    if args.paths.len() == 1 && args.paths[0].as_os_str() == "-" {
        let mut bytes = Vec::new();
        std::io::stdin().read_to_end(&mut bytes)?;
        let Ok(text) = String::from_utf8(bytes) else { anyhow::bail!("stdin is not UTF-8 text") };
        return Ok(match fmt::format_text(&text) {
            Ok(out) => {
                std::io::stdout().write_all(out.as_bytes())?;
                ExitCode::SUCCESS
            }
            Err(diags) => {
                report("<stdin>", &text, &diags, config);
                ExitCode::from(1)
            }
        });
    }
    super::missing_paths(&args.paths)?;
    let mut failed = false;
    let mut unformatted = 0;
    for path in check::expand_paths(&args.paths) {
        let text = match std::fs::read(&path).map(String::from_utf8) {
            Ok(Ok(t)) => t,
            Ok(Err(_)) => {
                eprintln!("error: {} is not UTF-8 text", path.display());
                failed = true;
                continue;
            }
            Err(e) => {
                eprintln!("error: cannot read {}: {e}", path.display());
                failed = true;
                continue;
            }
        };
        match fmt::format_text(&text) {
            Ok(out) if out == text => {}
            Ok(_) if args.check => {
                println!("{}", path.display());
                unformatted += 1;
            }
            Ok(out) => std::fs::write(&path, out)?,
            Err(diags) => {
                report(&path.display().to_string(), &text, &diags, config);
                failed = true;
            }
        }
    }
    if unformatted > 0 {
        eprintln!("{unformatted} file{} not formatted; run `sfz fmt` on {}", if unformatted == 1 { "" } else { "s" }, if unformatted == 1 { "it" } else { "them" });
    }
    Ok(if failed || unformatted > 0 { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// Syntax errors that stop a file from being formatted, rendered as `sfz check` does.
fn report(name: &str, text: &str, diags: &[diag::Diagnostic], config: RenderConfig) {
    let mut map = SourceMap::default();
    map.add(name, text);
    eprint!("{}", diag::render_all(&map, diags, config));
}
