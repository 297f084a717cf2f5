//! The findings folder: `findings.jsonl` (one line per unique finding, appended and flushed the
//! moment it is found, so killing sfz loses none) and `repro/<id>.py`. Reopening a folder reloads
//! what it holds, so a second run does not report the same finding again.
use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::oracle::{Cause, Evidence, Signal};
use crate::wire::case::Case;
use crate::wire::oracle::Oracle;
use crate::wire::variant::Check;

/// The format of the lines this sfz writes. Lines of earlier formats are read (missing fields
/// take their defaults; a line before 3 has its cause read from its signature); lines of a later
/// one are skipped with a warning.
pub const FORMAT: u32 = 3;

fn format_1() -> u32 {
    1
}

/// Filled in from the signature by `parse_lines` for a line written before causes were stored.
fn unread_cause() -> Cause {
    Cause::Other { text: String::new() }
}
/// One unique finding, as stored.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Finding {
    pub id: String,
    pub api: String,
    /// The ATen operator the call reached, e.g. `aten::conv2d`.
    pub aten: String,
    pub oracle: Oracle,
    /// The cause's display text (what the id hashes, what people read).
    pub signature: String,
    /// What went wrong and where (lines of format 3 on; read from `signature` for older ones).
    #[serde(default = "unread_cause")]
    pub cause: Cause,
    pub message: String,
    /// The signal the worker died by, written as its name.
    pub signal: Option<Signal>,
    /// The worker's exit status when it exited (in the call or in a check). Lines written before
    /// this field get it from their signature when read (`parse_lines`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit: Option<i32>,
    pub seed: u64,
    /// With `seed`, regenerates the case (`sfz fuzz --seed S` makes case `case_index`).
    pub case_index: u64,
    pub case: Case,
    /// The arguments in words, one per parameter.
    pub inputs: Vec<String>,
    /// Path of the reproducer, relative to the folder.
    pub repro: String,
    /// Seconds since the run started.
    pub elapsed_s: f64,
    pub sfz_version: String,
    pub torch_version: String,
    /// How the input was generated: `conform`, `violate`, or `nonconforming` (meant to conform,
    /// but generation could not fit its values to every constraint).
    #[serde(default)]
    pub mode: Option<String>,
    /// In violate mode, the constraint the input broke on purpose.
    #[serde(default)]
    pub violated: Option<crate::gen::Violation>,
    /// The line's format (1: written before differential oracles).
    #[serde(default = "format_1")]
    pub format: u32,
    /// What a reproducer has to show.
    #[serde(default)]
    pub evidence: Evidence,
    /// The differential check that disagreed, for differential oracles.
    #[serde(default)]
    pub check: Option<Check>,
    /// Where the API is specified.
    #[serde(default)]
    pub spec: Option<SpecLocation>,
    /// The case as first found, when `case` is a minimized version of it.
    #[serde(default)]
    pub original: Option<Original>,
    /// What minimization did.
    #[serde(default)]
    pub minimization: Option<Minimization>,
    /// A spec pinned to this case (`repro/<id>.sfz`), relative to the folder.
    #[serde(default)]
    pub pinned: Option<String>,
    /// For a worker that died: whether the case killed a fresh worker again when run alone.
    /// False means another case probably corrupted the worker's memory earlier and this one only
    /// met the damage (reports list such findings apart). None: not a death, or not checked.
    #[serde(default)]
    pub confirmed: Option<bool>,
    /// For a confirmed death: the call, counted from 1, on which the case killed the fresh worker
    /// it ran in over and over. Above 1, one call damages the heap and a later one meets it (glibc
    /// notices at a free): the reproducer and the minimizer repeat the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls: Option<u32>,
    /// For an unconfirmed death: the finding of the earlier case, run in the same worker before
    /// it, that kills a fresh worker by itself (`triage::culprit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub culprit: Option<String>,
    /// For a confirmed hang: why it is the cost of the input rather than a bug (`triage::cost`).
    /// Reports list such findings apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explained: Option<String>,
    /// For a finding that is not a death: the death finding its input showed too, called alone
    /// in a fresh worker (`triage::also_dies`). One defect whose outcome varies with the process's
    /// memory (`linalg.eigvals` on a NaN: MKL's "illegal value" as a failed assert, or SIGSEGV):
    /// reports list it under that finding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_as: Option<String>,
    /// The name of the baseline entry that knows this finding's cause, when the campaign ran with
    /// a baseline (`findings::baseline`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub known: Option<String>,
    /// Where its triage stands: `pending` for a finding recorded as found whose confirmation
    /// or shrinking the campaign's clock (or a signal) cut short; absent once triaged, or for a
    /// campaign that does no triage (`--minimize 0`). `sfz fuzz --resume` finishes the pending
    /// ones first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub triage: Option<TriageState>,
}

/// `Finding::triage`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TriageState {
    /// Recorded as found; not yet confirmed, shrunk and probed.
    Pending,
}

/// A spec file and the 1-based line of an API in it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SpecLocation {
    pub file: String,
    pub line: u32,
}

/// A finding's case as first found, kept when a smaller one replaces it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Original {
    pub case: Case,
    pub inputs: Vec<String>,
    /// Its reproducer, relative to the folder.
    pub repro: String,
    /// What the oracle said about it (the finding's `message` is the minimized case's).
    #[serde(default)]
    pub message: Option<String>,
}

/// What shrinking a finding's input did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Minimization {
    /// Candidate cases run.
    pub executions: u64,
    /// Smaller cases that still fired and were kept, one after another.
    pub steps: u32,
    pub seconds: f64,
    /// Elements over all input tensors, before and after.
    pub elements_before: u64,
    pub elements_after: u64,
}

/// The dedup key: the same oracle firing on the same API for the same cause is one finding.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    pub api: String,
    pub oracle: Oracle,
    pub cause: Cause,
}

impl Finding {
    pub fn key(&self) -> Key {
        Key { api: self.api.clone(), oracle: self.oracle, cause: self.cause.clone() }
    }

    /// Whether the worker died running the finding's case (the call or a check): by a signal,
    /// or by exiting.
    pub fn worker_died(&self) -> bool {
        self.signal.is_some() || self.exit.is_some()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot use `{dir}` as the findings folder: {source}")]
    Unusable { dir: PathBuf, source: std::io::Error },
    #[error("`{}` holds no findings.jsonl; is it a folder `sfz fuzz --out` wrote?", dir.display())]
    NotAFindingsFolder { dir: PathBuf },
    #[error("cannot read `{}`: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
}

/// A line of findings.jsonl that could not be used.
#[derive(Clone, Debug, PartialEq)]
pub struct SkippedLine {
    /// 1-based.
    pub line: usize,
    pub reason: String,
}

/// The readable findings of a folder, and the lines that were not.
#[derive(Clone, Debug, Default)]
pub struct Loaded {
    /// The findings.jsonl path and its text (for pointing at skipped lines).
    pub path: PathBuf,
    pub text: String,
    pub findings: Vec<Finding>,
    pub skipped: Vec<SkippedLine>,
}

/// Reads a findings folder without changing it.
pub fn load(dir: &Path) -> Result<Loaded, StoreError> {
    let path = dir.join("findings.jsonl");
    if !path.is_file() {
        return Err(StoreError::NotAFindingsFolder { dir: dir.to_path_buf() });
    }
    let bytes = fs::read(&path).map_err(|source| StoreError::Read { path: path.clone(), source })?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let (findings, skipped) = parse_lines(&text);
    Ok(Loaded { path, text, findings, skipped })
}

/// Every readable finding of a findings.jsonl text, and why the other lines are not.
pub fn parse_lines(text: &str) -> (Vec<Finding>, Vec<SkippedLine>) {
    let mut findings = Vec::new();
    let mut skipped = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Finding>(line) {
            Ok(f) if f.format > FORMAT => skipped.push(SkippedLine { line: n + 1, reason: format!("written by a newer sfz (format {}, this one reads up to {FORMAT})", f.format) }),
            Ok(mut f) => {
                if f.format < 3 {
                    f.cause = Cause::from_legacy(f.oracle, f.signal.map(Signal::name).as_deref(), &f.signature);
                }
                f.exit = f.exit.or_else(|| legacy_exit(&f));
                findings.push(f);
            }
            Err(e) => skipped.push(SkippedLine { line: n + 1, reason: e.to_string() }),
        }
    }
    (findings, skipped)
}

/// The exit status of a line written before `Finding::exit` existed: its cause names it.
fn legacy_exit(f: &Finding) -> Option<i32> {
    match f.cause {
        Cause::Died { death: crate::oracle::Death::Exit(code), .. } if f.signal.is_none() => Some(code),
        _ => None,
    }
}

struct Inner {
    file: File,
    /// Every line of the file, in order (unreadable ones kept verbatim, so rewriting the file to
    /// update a finding loses nothing).
    lines: Vec<String>,
    /// Occurrences per key, this run and earlier ones.
    seen: HashMap<Key, u64>,
    new: Vec<Finding>,
}

pub struct Store {
    dir: PathBuf,
    inner: Mutex<Inner>,
    /// Lines of an existing findings.jsonl that could not be read, with why.
    pub skipped: Vec<SkippedLine>,
    /// The existing findings.jsonl's text, for pointing at skipped lines.
    pub previous: String,
}

impl Store {
    /// Opens (creating) the folder; fails before any work starts when it is not writable.
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        let unusable = |source| StoreError::Unusable { dir: dir.to_path_buf(), source };
        fs::create_dir_all(dir.join("repro")).map_err(unusable)?;
        let path = dir.join("findings.jsonl");
        let previous = fs::read(&path).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
        let (old, skipped) = parse_lines(&previous);
        let seen: HashMap<Key, u64> = old.iter().map(|f| (f.key(), 1)).collect();
        let lines: Vec<String> = previous.lines().filter(|l| !l.trim().is_empty()).map(String::from).collect();
        let file = OpenOptions::new().create(true).append(true).open(&path).map_err(unusable)?;
        // Prove the folder is writable now, not at the first finding.
        let probe = dir.join(".sfz-write-test");
        fs::write(&probe, b"").map_err(unusable)?;
        let _ = fs::remove_file(probe);
        Ok(Store { dir: dir.to_path_buf(), inner: Mutex::new(Inner { file, lines, seen, new: Vec::new() }), skipped, previous })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether this cause is already recorded (counting the occurrence).
    pub fn seen(&self, key: &Key) -> bool {
        let mut inner = self.inner.lock().expect("store lock");
        match inner.seen.get_mut(key) {
            Some(n) => {
                *n += 1;
                true
            }
            None => false,
        }
    }

    /// Records a new finding: the reproducer first, then the line. Returns false (and writes
    /// nothing) when the key is already known.
    pub fn record(&self, finding: Finding, reproducer: &str) -> std::io::Result<bool> {
        let mut inner = self.inner.lock().expect("store lock");
        if let Some(n) = inner.seen.get_mut(&finding.key()) {
            *n += 1;
            return Ok(false);
        }
        write_atomic(&self.dir.join(&finding.repro), reproducer)?;
        let line = serde_json::to_string(&finding).map_err(std::io::Error::other)?;
        // A full disk can take half a line: cut it off again, or the next line would be glued
        // to it and both lost.
        let before = inner.file.metadata()?.len();
        if let Err(e) = inner.file.write_all(format!("{line}\n").as_bytes()).and_then(|()| inner.file.flush()) {
            let _ = inner.file.set_len(before);
            return Err(e);
        }
        inner.lines.push(line);
        inner.seen.insert(finding.key(), 1);
        inner.new.push(finding);
        Ok(true)
    }

    /// Writes a file of the folder (a pinned spec, a kept original reproducer), atomically.
    pub fn write_file(&self, relative: &str, text: &str) -> std::io::Result<()> {
        write_atomic(&self.dir.join(relative), text)
    }

    /// Replaces a recorded finding (same id): its reproducer first, then findings.jsonl,
    /// rewritten whole and renamed into place, so that a kill at any moment leaves either the
    /// old line or the new one.
    pub fn update(&self, finding: Finding, reproducer: &str) -> std::io::Result<()> {
        let mut inner = self.inner.lock().expect("store lock");
        write_atomic(&self.dir.join(&finding.repro), reproducer)?;
        let line = serde_json::to_string(&finding).map_err(std::io::Error::other)?;
        let id_of = |l: &str| serde_json::from_str::<serde_json::Value>(l).ok().and_then(|v| v.get("id").and_then(|i| i.as_str()).map(String::from));
        match inner.lines.iter().position(|l| id_of(l).as_deref() == Some(finding.id.as_str())) {
            Some(i) => inner.lines[i] = line,
            None => inner.lines.push(line),
        }
        let path = self.dir.join("findings.jsonl");
        let text: String = inner.lines.iter().map(|l| format!("{l}\n")).collect();
        let tmp = path.with_extension("jsonl.tmp");
        let written = File::create(&tmp).and_then(|mut f| f.write_all(text.as_bytes()).and_then(|()| f.sync_all()));
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(e);
        }
        fs::rename(&tmp, &path)?;
        inner.file = OpenOptions::new().append(true).open(&path)?;
        if let Some(f) = inner.new.iter_mut().find(|f| f.id == finding.id) {
            *f = finding;
        }
        Ok(())
    }

    /// Findings recorded by this run, in order.
    pub fn new_findings(&self) -> Vec<Finding> {
        self.inner.lock().expect("store lock").new.clone()
    }

    /// The finding this run recorded with `id`, as last updated (or, failing that, as an
    /// earlier run of the folder left it).
    pub fn recorded(&self, id: &str) -> Option<Finding> {
        let inner = self.inner.lock().expect("store lock");
        inner.new.iter().find(|f| f.id == id).cloned().or_else(|| inner.lines.iter().rev().filter_map(|l| parse_lines(l).0.pop()).find(|f| f.id == id))
    }

    /// The folder's findings whose triage an earlier run left pending (`Finding::triage`).
    pub fn pending(&self) -> Vec<Finding> {
        let inner = self.inner.lock().expect("store lock");
        let text: String = inner.lines.iter().map(|l| format!("{l}\n")).collect();
        parse_lines(&text).0.into_iter().filter(|f| f.triage == Some(TriageState::Pending)).collect()
    }

    /// How often each key occurred (this run's duplicates included).
    pub fn occurrences(&self, key: &Key) -> u64 {
        self.inner.lock().expect("store lock").seen.get(key).copied().unwrap_or(0)
    }
}

/// Writes beside `path` and renames into place; a failed write leaves `path` as it was and no
/// half-written temporary behind.
fn write_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let result = fs::write(&tmp, text).and_then(|()| fs::rename(&tmp, path));
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// A short stable id: oracle, op name, and a hash of the key.
pub fn finding_id(key: &Key) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let signature = key.cause.to_string();
    for b in key.api.bytes().chain([0]).chain(key.oracle.as_str().bytes()).chain([0]).chain(signature.bytes()) {
        h ^= b as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    // `torch.ops.aten.add.out` is `add.out`: its last part alone would only name the overload.
    let op = key.api.strip_prefix("torch.ops.aten.").unwrap_or_else(|| key.api.rsplit('.').next().unwrap_or(&key.api));
    format!("{}-{}-{:08x}", key.oracle, op, h as u32)
}

/// A finding as an older sfz wrote it (its cause read from its signature; its signal from the
/// signature's words), for unit tests across the crate.
#[cfg(test)]
pub fn older_finding(id: &str, api: &str, oracle: &str, signature: &str) -> Finding {
    let signal = if signature.contains("memory error") { Some("SIGABRT") } else { signature.split(' ').next().filter(|w| w.starts_with("SIG")) };
    let line = serde_json::json!({
        "id": id, "api": api, "aten": "aten::x", "oracle": oracle, "signature": signature, "message": "",
        "signal": signal, "seed": 0, "case_index": 0, "case": {"op": 0, "args": []}, "inputs": [], "repro": "",
        "elapsed_s": 0.0, "sfz_version": "", "torch_version": "", "mode": "conform"
    });
    parse_lines(&line.to_string()).0.remove(0)
}

#[cfg(test)]
mod tests {
    use super::{finding_id, Key};

    #[test]
    fn ids_name_the_operator() {
        let cause = crate::oracle::Cause::from_legacy(crate::wire::oracle::Oracle::Crash, Some("SIGSEGV"), "SIGSEGV");
        let id = |api: &str| finding_id(&Key { api: api.into(), oracle: crate::wire::oracle::Oracle::Crash, cause: cause.clone() });
        assert!(id("torch.linalg.inv").starts_with("crash-inv-"));
        assert!(id("torch.ops.aten.add.out").starts_with("crash-add.out-"), "{}", id("torch.ops.aten.add.out"));
        assert!(id("torch.ops.aten.abs_").starts_with("crash-abs_-"));
    }

    /// A line as written before `Finding::exit`: the exit status was only in the signature.
    fn line(oracle: &str, signature: &str, signal: Option<&str>) -> String {
        serde_json::json!({
            "id": "x", "api": "torch.abs", "aten": "aten::abs", "oracle": oracle, "signature": signature, "message": "",
            "signal": signal, "seed": 0, "case_index": 0, "case": {"op": 0, "args": []}, "inputs": [], "repro": "",
            "elapsed_s": 0.0, "sfz_version": "", "torch_version": ""
        })
        .to_string()
    }

    #[test]
    fn an_exit_named_only_by_the_signature_of_an_older_line_is_read_as_an_exit() {
        let exit = |oracle: &str, signature: &str, signal: Option<&str>| {
            let (found, skipped) = super::parse_lines(&line(oracle, signature, signal));
            assert!(skipped.is_empty(), "{skipped:?}");
            found[0].exit
        };
        assert_eq!(exit("layout", "the layout variant: exit 3: terminate called", None), Some(3));
        assert_eq!(exit("crash", "exit 1", None), Some(1));
        assert_eq!(exit("crash", "exit 134: free(): invalid pointer", None), Some(134));
        assert_eq!(exit("crash", "SIGSEGV", Some("SIGSEGV")), None);
        assert_eq!(exit("precision", "values differ in output 0", None), None);
    }

    #[test]
    fn a_finding_reads_back_as_written() {
        let (found, _) = super::parse_lines(&line("internal_error", "INTERNAL ASSERT a.cpp:1", None));
        let mut f = found[0].clone();
        assert_eq!((f.oracle, f.exit), (crate::wire::oracle::Oracle::InternalError, None));
        let text = serde_json::to_string(&f).unwrap();
        assert!(text.contains(r#""oracle":"internal_error""#) && !text.contains("exit"), "{text}");
        f.oracle = crate::wire::oracle::Oracle::Crash;
        f.exit = Some(7);
        let (again, _) = super::parse_lines(&serde_json::to_string(&f).unwrap());
        assert_eq!((again[0].oracle, again[0].exit), (crate::wire::oracle::Oracle::Crash, Some(7)));
        let (unknown, skipped) = super::parse_lines(&line("no_such_oracle", "s", None));
        assert!(unknown.is_empty() && skipped.len() == 1, "an oracle sfz never wrote is an unreadable line");
    }
}
