//! `sfz report DIR`: the unique findings of a folder as a table, `report.md` and `report.sarif`
//! written beside them; `--verify` runs every reproducer under pip torch first. With several
//! folders (the shards of a campaign) and `--out`, they are merged into that folder first.
use std::collections::HashMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use super::Color;
use crate::campaign::merge::{self, Disagreement};
use crate::diag::{self, codes, Diagnostic, RenderConfig, SourceMap, Span};
use crate::findings::{self, report, verify, SkippedLine};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The findings folder (`sfz fuzz --out`), or several to merge into --out.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Merge the folders into this one (one finding per key, reproducers and pinned cases
    /// copied, spec findings and run statistics kept) and report on it.
    #[arg(long)]
    pub out: Option<PathBuf>,
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
    let dir = match (&args.out, args.dirs.as_slice()) {
        (None, [one]) => one.clone(),
        (None, _) => {
            eprintln!("sfz report: several folders are merged into one; say which with --out DIR");
            return Ok(ExitCode::from(2));
        }
        (Some(out), dirs) => {
            let started = std::time::Instant::now();
            let merged = merge::merge(dirs, out)?;
            eprint!("{}", disagreement_warnings(&merged.disagreements, color));
            eprintln!(
                "merged {} folder{} into {} in {:.2} s: {} findings ({} duplicates dropped), {} spec findings, {} runs with {} executions{}, coverage of {} APIs in {}",
                dirs.len(),
                if dirs.len() == 1 { "" } else { "s" },
                out.display(),
                started.elapsed().as_secs_f64(),
                merged.findings,
                merged.duplicates,
                merged.spec_findings,
                merged.runs,
                merged.executions,
                if merged.unsummarized > 0 { format!(" ({} of them by runs killed before their summary, counted from progress.json)", merged.unsummarized) } else { String::new() },
                merged.coverage_apis,
                merge::COVERAGE
            );
            out.clone()
        }
    };
    let loaded = findings::load(&dir)?;
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
            verified.insert(f.id.clone(), verify::verify(f, &dir, &python, args.timeout));
        }
        if progress {
            eprint!("\r\x1b[K");
        }
    }
    let md = dir.join("report.md");
    let sarif = dir.join("report.sarif");
    std::fs::write(&md, report::markdown(&dir, &loaded, &verified))?;
    std::fs::write(&sarif, serde_json::to_string_pretty(&report::sarif(&loaded, &verified))?)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report::to_json(&loaded, &verified))?);
        return Ok(ExitCode::SUCCESS);
    }
    let mix: Vec<String> = report::by_oracle(&unique).iter().map(|(o, n)| format!("{o} {n}")).collect();
    println!(
        "{} unique finding{}{}{}",
        unique.len(),
        if unique.len() == 1 { "" } else { "s" },
        if mix.is_empty() { String::new() } else { format!(" ({})", mix.join(", ")) },
        report::causes_suffix(&unique)
    );
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
        println!(
            "reproducers: {yes} of {} reproduce under {}{}",
            verified.len(),
            args.python.clone().unwrap_or_else(verify::default_python).display(),
            report::differently_note(&verified)
        );
    }
    println!("wrote {} and {}", md.display(), sarif.display());
    Ok(ExitCode::SUCCESS)
}

/// W0103 warnings for folders merged although they disagree on version or specs.
fn disagreement_warnings(disagreements: &[Disagreement], color: Color) -> String {
    let diags: Vec<Diagnostic> = disagreements
        .iter()
        .map(|d| {
            let (title, each) = match d {
                Disagreement::Versions(v) => ("the merged folders were written by different sfz versions", v),
                Disagreement::Specs(s) => ("the merged folders come from campaigns over different specs (their campaign.json digests differ)", s),
            };
            each.iter()
                .fold(Diagnostic::new(codes::W0103, title), |d, (dir, what)| d.with_note(format!("{}: {what}", dir.display())))
                .with_help("merge folders of one campaign (the shards of one `sfz fuzz --shard`), or read the counts with this in mind; equal keys were merged")
        })
        .collect();
    diag::render_all(&SourceMap::default(), &diags, RenderConfig { color: color.stderr() })
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
