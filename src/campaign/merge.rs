//! Several findings folders (the shards of a campaign, runs on different machines) into one:
//! a finding per key, as within a run, with its reproducer, original and pinned case; spec
//! findings per (API, signature); every run's summary line kept, so statistics sum, and each
//! API's coverage over the runs in `coverage.json`.
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use super::{Manifest, Progress};
use crate::findings::{load, Finding, Key, StoreError};

/// One line per run (and resumption) of `sfz fuzz` in a folder: its `--json` summary.
pub const SUMMARIES: &str = "summaries.jsonl";
const SPEC_FINDINGS: &str = "spec-findings.jsonl";
/// Each API's coverage over the merged runs (`campaign::coverage`).
pub const COVERAGE: &str = "coverage.json";

/// What merging did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Merged {
    /// Findings written (one per key) and occurrences of a key already taken.
    pub findings: usize,
    pub duplicates: usize,
    pub spec_findings: usize,
    /// Runs whose summaries were summed, and their executions and seconds.
    pub runs: usize,
    pub executions: u64,
    /// Of those executions, the ones of runs killed before their summary, counted from the
    /// folder's progress (not in the per-API figures).
    pub unsummarized: u64,
    pub seconds: f64,
    /// Executions per API over all runs.
    pub api_executions: BTreeMap<String, u64>,
    /// APIs whose coverage over all runs went to `coverage.json`.
    pub coverage_apis: usize,
    /// Folders that disagree on what made them (merged all the same).
    pub disagreements: Vec<Disagreement>,
}

/// Folders written by different sfz versions, or from different specs: each folder with what
/// it says (versions, or the digest of its specs).
#[derive(Clone, Debug, PartialEq)]
pub enum Disagreement {
    Versions(Vec<(PathBuf, String)>),
    Specs(Vec<(PathBuf, String)>),
}

#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot write `{}`: {source}", path.display())]
    Write { path: PathBuf, source: std::io::Error },
}

/// Merges `dirs` into `out` (created; its findings, spec findings and summaries are replaced).
/// The first folder to hold a key gives its finding, unless it is an unconfirmed death and a
/// later folder's is not.
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<Merged, MergeError> {
    let loaded = dirs.iter().map(|d| load(d).map(|l| (d.clone(), l))).collect::<Result<Vec<_>, _>>()?;
    let write_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| MergeError::Write { path, source }
    };
    fs::create_dir_all(out.join("repro")).map_err(write_err(out))?;
    let mut merged = Merged { disagreements: disagreements(&loaded), ..Merged::default() };

    // Findings: one per key.
    let mut chosen: Vec<(usize, Finding)> = Vec::new();
    let mut by_key: HashMap<Key, usize> = HashMap::new();
    for (source, (_, l)) in loaded.iter().enumerate() {
        for f in &l.findings {
            match by_key.get(&f.key()) {
                Some(&i) => {
                    merged.duplicates += 1;
                    if chosen[i].1.confirmed == Some(false) && f.confirmed != Some(false) {
                        chosen[i] = (source, f.clone());
                    }
                }
                None => {
                    by_key.insert(f.key(), chosen.len());
                    chosen.push((source, f.clone()));
                }
            }
        }
    }
    let mut lines = String::new();
    for (source, f) in &chosen {
        let from = &loaded[*source].0;
        for file in [Some(&f.repro), f.pinned.as_ref(), f.original.as_ref().map(|o| &o.repro)].into_iter().flatten() {
            copy(&from.join(file), &out.join(file))?;
        }
        lines.push_str(&serde_json::to_string(f).map_err(|e| MergeError::Write { path: out.join("findings.jsonl"), source: std::io::Error::other(e) })?);
        lines.push('\n');
    }
    merged.findings = chosen.len();
    write(&out.join("findings.jsonl"), &lines)?;

    // Spec findings: one per (API, signature).
    let mut seen = HashSet::new();
    let mut spec_lines = String::new();
    for (dir, _) in &loaded {
        for line in fs::read_to_string(dir.join(SPEC_FINDINGS)).unwrap_or_default().lines() {
            let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else { continue };
            let field = |k: &str| v.get(k).and_then(|x| x.as_str()).unwrap_or("").to_string();
            if !seen.insert((field("api"), field("signature"))) {
                continue;
            }
            let repro = field("repro");
            if !repro.is_empty() {
                fs::create_dir_all(out.join("spec")).map_err(write_err(out))?;
                copy(&dir.join(&repro), &out.join(&repro))?;
            }
            spec_lines.push_str(line);
            spec_lines.push('\n');
            merged.spec_findings += 1;
        }
    }
    if merged.spec_findings > 0 {
        write(&out.join(SPEC_FINDINGS), &spec_lines)?;
    }

    // Statistics: every run's summary, summed; a run killed before it wrote its summary (kill
    // -9) left only the progress file, whose case count covers every run of the folder.
    let mut summaries = String::new();
    for (dir, _) in &loaded {
        let mut summed = 0;
        for line in fs::read_to_string(dir.join(SUMMARIES)).unwrap_or_default().lines() {
            let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else { continue };
            merged.runs += 1;
            summed += v["executions"].as_u64().unwrap_or(0);
            merged.seconds += v["seconds"].as_f64().unwrap_or(0.0);
            for a in v["apis"].as_array().into_iter().flatten() {
                *merged.api_executions.entry(a["api"].as_str().unwrap_or("").to_string()).or_insert(0) += a["executions"].as_u64().unwrap_or(0);
            }
            summaries.push_str(line);
            summaries.push('\n');
        }
        let unsummarized = Progress::load(dir).next_case.saturating_sub(summed);
        merged.executions += summed + unsummarized;
        merged.unsummarized += unsummarized;
    }
    write(&out.join(SUMMARIES), &summaries)?;
    let coverage = super::coverage::over_summaries(summaries.lines());
    merged.coverage_apis = coverage.len();
    if !coverage.is_empty() {
        let text = serde_json::to_string_pretty(&coverage).map_err(|e| MergeError::Write { path: out.join(COVERAGE), source: std::io::Error::other(e) })?;
        write(&out.join(COVERAGE), &text)?;
    }
    Ok(merged)
}

/// The versions each folder's findings and manifest name, and its specs' digest, where more
/// than one occurs over the folders.
fn disagreements(loaded: &[(PathBuf, crate::findings::Loaded)]) -> Vec<Disagreement> {
    let mut out = Vec::new();
    let versions: Vec<(PathBuf, BTreeSet<String>)> = loaded
        .iter()
        .map(|(dir, l)| {
            let mut v: BTreeSet<String> = l.findings.iter().map(|f| f.sfz_version.clone()).collect();
            v.extend(Manifest::load(dir).ok().map(|m| m.sfz_version));
            (dir.clone(), v)
        })
        .collect();
    if versions.iter().flat_map(|(_, v)| v).collect::<BTreeSet<_>>().len() > 1 {
        out.push(Disagreement::Versions(versions.into_iter().filter(|(_, v)| !v.is_empty()).map(|(d, v)| (d, v.into_iter().collect::<Vec<_>>().join(", "))).collect()));
    }
    let specs: Vec<(PathBuf, String)> = loaded.iter().filter_map(|(dir, _)| Manifest::load(dir).ok().map(|m| (dir.clone(), m.specs))).collect();
    if specs.iter().map(|(_, s)| s).collect::<BTreeSet<_>>().len() > 1 {
        out.push(Disagreement::Specs(specs));
    }
    out
}

/// Copies a file of a folder, unless it is the same file (merging into one of the inputs).
fn copy(from: &Path, to: &Path) -> Result<(), MergeError> {
    if !from.is_file() || fs::canonicalize(from).ok() == fs::canonicalize(to).ok() {
        return Ok(());
    }
    if let Some(parent) = to.parent() {
        fs::create_dir_all(parent).map_err(|source| MergeError::Write { path: parent.to_path_buf(), source })?;
    }
    fs::copy(from, to).map(|_| ()).map_err(|source| MergeError::Write { path: to.to_path_buf(), source })
}

fn write(path: &Path, text: &str) -> Result<(), MergeError> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    fs::write(&tmp, text).and_then(|()| fs::rename(&tmp, path)).map_err(|source| MergeError::Write { path: path.to_path_buf(), source })
}
