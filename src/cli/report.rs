//! `sfz report DIR`: the unique findings of a folder as a table, `report.md` and `report.sarif`
//! written beside them; `--verify` runs every reproducer under pip torch first.
use std::collections::HashMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use super::Color;
use crate::diag::{self, codes, Diagnostic, RenderConfig, SourceMap, Span};
use crate::findings::{self, report, verify, SkippedLine};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The findings folder (`sfz fuzz --out`).
    pub dir: PathBuf,
    /// Run each reproducer under Python and mark the ones that show their bug.
    #[arg(long)]
    pub verify: bool,
    /// The Python with torch 2.13.0 to verify with (default: $SFZ_PYTHON, else the set-up venv's).
    #[arg(long)]
    pub python: Option<PathBuf>,
    /// How long one reproducer may run when verifying (a hang reproduces by running past it).
    #[arg(long, value_parser = super::fuzz::parse_duration, default_value = "60s")]
    pub timeout: Duration,
    /// Print the report as one JSON object on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, color: Color) -> anyhow::Result<ExitCode> {
    let loaded = findings::load(&args.dir)?;
    eprint!("{}", skipped_lines(&loaded.path, &loaded.text, &loaded.skipped, color));
    let unique = report::unique(&loaded);
    let mut verified = HashMap::new();
    if args.verify {
        let python = args.python.clone().unwrap_or_else(verify::default_python);
        let progress = !args.json && std::io::stderr().is_terminal();
        for (k, f) in unique.iter().enumerate() {
            if progress {
                eprint!("\rverifying {}/{}: {}\x1b[K", k + 1, unique.len(), f.id);
            }
            verified.insert(f.id.clone(), verify::verify(f, &args.dir, &python, args.timeout));
        }
        if progress {
            eprint!("\r\x1b[K");
        }
    }
    let md = args.dir.join("report.md");
    let sarif = args.dir.join("report.sarif");
    std::fs::write(&md, report::markdown(&args.dir, &loaded, &verified))?;
    std::fs::write(&sarif, serde_json::to_string_pretty(&report::sarif(&loaded, &verified))?)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report::to_json(&loaded, &verified))?);
        return Ok(ExitCode::SUCCESS);
    }
    let mix: Vec<String> = report::by_oracle(&unique).iter().map(|(o, n)| format!("{o} {n}")).collect();
    println!("{} unique finding{}{}", unique.len(), if unique.len() == 1 { "" } else { "s" }, if mix.is_empty() { String::new() } else { format!(" ({})", mix.join(", ")) });
    if !unique.is_empty() {
        print!("{}", report::table(&unique, &verified));
        print!("{}", report::shared_causes_text(&unique));
    }
    if let Some(note) = report::unconfirmed_note(&loaded) {
        println!("{note}");
    }
    if let Some(note) = report::explained_note(&loaded) {
        println!("{note}");
    }
    if let Some(note) = report::same_defect_note(&loaded) {
        println!("{note}");
    }
    if args.verify {
        let yes = verified.values().filter(|v| v.reproduced).count();
        println!("reproducers: {yes} of {} reproduce under {}{}", verified.len(), args.python.clone().unwrap_or_else(verify::default_python).display(), report::differently_note(&verified));
    }
    println!("wrote {} and {}", md.display(), sarif.display());
    Ok(ExitCode::SUCCESS)
}

/// W0102 warnings for unreadable lines of a findings.jsonl, pointing at each line.
pub fn skipped_lines(path: &Path, text: &str, skipped: &[SkippedLine], color: Color) -> String {
    if skipped.is_empty() {
        return String::new();
    }
    let mut map = SourceMap::default();
    let file = map.add(path.display().to_string(), text.to_string());
    let starts: Vec<usize> = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect();
    let diags: Vec<Diagnostic> = skipped
        .iter()
        .map(|s| {
            let lo = starts.get(s.line - 1).copied().unwrap_or(0);
            let hi = text[lo..].find('\n').map_or(text.len(), |n| lo + n);
            Diagnostic::new(codes::W0102, format!("skipped line {} of the findings", s.line))
                .with_label(Span::new(file, lo, hi.min(lo + 80)), "this finding cannot be read")
                .with_note(s.reason.clone())
                .with_help("the other findings are used; a line from another sfz version may need that version")
        })
        .collect();
    diag::render_all(&map, &diags, RenderConfig { color: color.stderr() })
}
