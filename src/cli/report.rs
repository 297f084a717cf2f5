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
use crate::findings::baseline::{Baseline, LoadError};
use crate::findings::{self, causes, report, verify, SkippedLine};

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
    /// Known causes (a TOML baseline; see docs/ORACLES.md): their findings are counted apart,
    /// not listed as new. Default: `baseline.toml` of the sfz checkout, when there is one.
    #[arg(long)]
    pub baseline: Option<PathBuf>,
    /// Use no baseline: every cause is listed.
    #[arg(long, conflicts_with = "baseline")]
    pub no_baseline: bool,
    /// List only causes this earlier findings folder did not report.
    #[arg(long, value_name = "DIR")]
    pub new_since: Option<PathBuf>,
    /// Exit with status 1 when any cause is listed as new (for CI gates).
    #[arg(long)]
    pub fail_on_new: bool,
    /// Print the umbrella report of the cause a finding id belongs to, in the shape of
    /// PyTorch's issue template, and nothing else.
    #[arg(long, value_name = "FINDING")]
    pub issue: Option<String>,
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
    let baseline = match baseline_of(&args, color) {
        Ok(b) => b,
        Err(code) => return Ok(code),
    };
    let before = match &args.new_since {
        Some(earlier) => match findings::load(earlier) {
            Ok(l) => Some(l),
            Err(e) => {
                let d = Diagnostic::new(codes::E0105, format!("`{}` is not a findings folder to compare with", earlier.display()))
                    .with_note(e.to_string())
                    .with_help("give the --out folder of an earlier `sfz fuzz` run");
                eprint!("{}", diag::render_all(&SourceMap::default(), &[d], RenderConfig { color: color.stderr() }));
                return Ok(ExitCode::from(2));
            }
        },
        None => None,
    };
    let unique = report::unique(&loaded);
    if let Some(id) = &args.issue {
        let groups = causes::group(&unique, baseline.as_ref());
        let Some(group) = groups.iter().find(|g| g.findings.iter().any(|f| f.id == *id)) else {
            let d = Diagnostic::new(codes::E0101, format!("no listed finding `{id}` in `{}`", dir.display()))
                .with_help("give the id of a finding `sfz report` lists (the FINDING column)");
            eprint!("{}", diag::render_all(&SourceMap::default(), &[d], RenderConfig { color: color.stderr() }));
            return Ok(ExitCode::from(2));
        };
        print!("{}", findings::issue::umbrella(&dir, group));
        return Ok(ExitCode::SUCCESS);
    }
    let mut verified = HashMap::new();
    if !args.verify {
        // The last `--verify`'s verdicts, for the reproducers it ran as they are now.
        verified = findings::verified::load(&dir, &unique).unwrap_or_else(|why| {
            let d = Diagnostic::new(codes::W0104, format!("{} is not a record of verifications", dir.join(findings::verified::FILE).display()))
                .with_note(why)
                .with_help("`sfz report --verify` runs the reproducers again and writes it anew");
            eprint!("{}", diag::render(&SourceMap::default(), &d, RenderConfig { color: color.stderr() }));
            HashMap::new()
        });
    } else {
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
        findings::verified::save(&dir, &unique, &verified);
    }
    // A finding whose reproducer did not reproduce is no report: it is listed apart.
    let (unique, unreproduced): (Vec<&findings::Finding>, Vec<&findings::Finding>) = unique.into_iter().partition(|f| findings::verified::listable(f, &verified));
    let md = dir.join("report.md");
    let sarif = dir.join("report.sarif");
    std::fs::write(&md, report::markdown(&dir, &loaded, &verified))?;
    std::fs::write(&sarif, serde_json::to_string_pretty(&report::sarif(&loaded, &verified))?)?;
    let groups = causes::group(&unique, baseline.as_ref());
    let earlier: Option<std::collections::HashSet<causes::CauseKey>> = before.as_ref().map(|l| report::unique(l).iter().map(|f| causes::key(f)).collect());
    if args.json {
        let json = report::to_json(&loaded, &verified, baseline.as_ref(), earlier.as_ref());
        println!("{}", serde_json::to_string_pretty(&json)?);
        let any_new = json["causes"].as_array().is_some_and(|cs| cs.iter().any(|c| c["new"] == true));
        return Ok(if args.fail_on_new && any_new { ExitCode::from(1) } else { ExitCode::SUCCESS });
    }
    let (known, listed): (Vec<&causes::CauseGroup>, Vec<&causes::CauseGroup>) = groups.iter().partition(|g| g.known.is_some());
    let (seen, new): (Vec<&causes::CauseGroup>, Vec<&causes::CauseGroup>) = listed.into_iter().partition(|g| earlier.as_ref().is_some_and(|e| e.contains(&g.key)));
    let new: Vec<causes::CauseGroup> = new.into_iter().cloned().collect();
    let mix: Vec<String> = report::by_oracle(&unique).iter().map(|(o, n)| format!("{o} {n}")).collect();
    println!(
        "{} unique finding{}{}: {} new cause{}{}",
        unique.len(),
        if unique.len() == 1 { "" } else { "s" },
        if mix.is_empty() { String::new() } else { format!(" ({})", mix.join(", ")) },
        new.len(),
        if new.len() == 1 { "" } else { "s" },
        if new.is_empty() { String::new() } else { format!(" ({})", report::by_severity(&new)) },
    );
    if !new.is_empty() {
        print!("{}", report::cause_table(&new, &verified));
    }
    if !known.is_empty() {
        // One line per baseline entry, whatever number of causes it knows.
        let mut entries: Vec<(&findings::baseline::Entry, usize)> = Vec::new();
        for g in &known {
            let k = g.known.expect("partitioned on it");
            match entries.iter_mut().find(|(e, _)| e.name == k.name) {
                Some((_, n)) => *n += g.findings.len(),
                None => entries.push((k, g.findings.len())),
            }
        }
        let each: Vec<String> = entries
            .iter()
            .map(|(k, n)| format!("{} ({n} finding{}{})", k.name, if *n == 1 { "" } else { "s" }, k.issue.as_deref().map_or(String::new(), |i| format!(", {i}"))))
            .collect();
        println!("{} known cause{} (baseline), not listed: {}", entries.len(), if entries.len() == 1 { "" } else { "s" }, each.join("; "));
    }
    if let Some(earlier) = &args.new_since {
        println!("{} cause{} {} reported before, not listed", seen.len(), if seen.len() == 1 { "" } else { "s" }, earlier.display());
    }
    if let Some(note) = report::set_apart_note(&loaded) {
        println!("{note}");
    }
    if let Some(note) = report::unconfirmed_note(&loaded) {
        println!("{note}");
    }
    if !unreproduced.is_empty() {
        let ids: Vec<&str> = unreproduced.iter().map(|f| f.id.as_str()).collect();
        println!("{} finding{} whose reproducer did not reproduce when verified, not listed: {}", ids.len(), if ids.len() == 1 { "" } else { "s" }, ids.join(", "));
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
    if args.fail_on_new && !new.is_empty() {
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// The baseline the report reads: `--baseline FILE`, else the checkout's `baseline.toml` when
/// sfz runs from a checkout that has one; an unreadable or invalid one is E0108.
fn baseline_of(args: &Args, color: Color) -> Result<Option<Baseline>, ExitCode> {
    if args.no_baseline {
        return Ok(None);
    }
    let path = match &args.baseline {
        Some(p) => p.clone(),
        None => match default_baseline() {
            Some(p) => p,
            None => return Ok(None),
        },
    };
    load_baseline(&path, color).map(Some)
}

/// The baseline shipped with sfz: `baseline.toml` at the root of the checkout it was built in.
pub fn default_baseline() -> Option<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("baseline.toml");
    path.is_file().then_some(path)
}

/// Reads a baseline, rendering its problems as E0108 diagnostics.
pub fn load_baseline(path: &Path, color: Color) -> Result<Baseline, ExitCode> {
    match Baseline::load(path) {
        Ok(b) => Ok(b),
        Err(LoadError::Read(e)) => {
            let d =
                Diagnostic::new(codes::E0108, format!("cannot read the baseline `{}`", path.display())).with_note(e).with_help("give the path of a TOML baseline of known causes");
            eprint!("{}", diag::render_all(&SourceMap::default(), &[d], RenderConfig { color: color.stderr() }));
            Err(ExitCode::from(2))
        }
        Err(LoadError::Invalid { text, problems }) => {
            let mut map = SourceMap::default();
            let file = map.add(path.display().to_string(), text);
            let diags: Vec<Diagnostic> = problems
                .into_iter()
                .map(|p| {
                    let d = Diagnostic::new(codes::E0108, format!("invalid baseline: {}", p.message)).with_label(Span::new(file, p.span.start, p.span.end), "here");
                    match p.help {
                        Some(h) => d.with_help(h),
                        None => d,
                    }
                })
                .collect();
            eprint!("{}", diag::render_all(&map, &diags, RenderConfig { color: color.stderr() }));
            Err(ExitCode::from(2))
        }
    }
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
