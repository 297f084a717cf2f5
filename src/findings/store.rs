//! The findings folder: `findings.jsonl` (one line per unique finding, appended and flushed the
//! moment it is found, so killing sfz loses none) and `repro/<id>.py`. Reopening a folder reloads
//! what it holds, so a second run does not report the same finding again.
use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::case::Case;

/// One unique finding, as stored.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Finding {
    pub id: String,
    pub api: String,
    /// The ATen operator the call reached, e.g. `aten::conv2d`.
    pub aten: String,
    pub oracle: String,
    pub signature: String,
    pub message: String,
    /// The signal's name when the worker died by one.
    pub signal: Option<String>,
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
}

/// The dedup key: the same oracle firing on the same API for the same cause is one finding.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    pub api: String,
    pub oracle: String,
    pub signature: String,
}

impl Finding {
    pub fn key(&self) -> Key {
        Key { api: self.api.clone(), oracle: self.oracle.clone(), signature: self.signature.clone() }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot use `{dir}` as the findings folder: {source}")]
    Unusable { dir: PathBuf, source: std::io::Error },
}

struct Inner {
    file: File,
    /// Occurrences per key, this run and earlier ones.
    seen: HashMap<Key, u64>,
    new: Vec<Finding>,
}

pub struct Store {
    dir: PathBuf,
    inner: Mutex<Inner>,
    /// Lines of an existing findings.jsonl that could not be read, with why.
    pub skipped: Vec<String>,
}

impl Store {
    /// Opens (creating) the folder; fails before any work starts when it is not writable.
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        let unusable = |source| StoreError::Unusable { dir: dir.to_path_buf(), source };
        fs::create_dir_all(dir.join("repro")).map_err(unusable)?;
        let path = dir.join("findings.jsonl");
        let mut seen = HashMap::new();
        let mut skipped = Vec::new();
        if let Ok(f) = File::open(&path) {
            for (n, line) in BufReader::new(f).lines().enumerate() {
                let Ok(line) = line else { break };
                if line.trim().is_empty() {
                    continue;
                }
                match serde_json::from_str::<Finding>(&line) {
                    Ok(f) => {
                        seen.insert(f.key(), 1);
                    }
                    Err(e) => skipped.push(format!("{}:{}: {e}", path.display(), n + 1)),
                }
            }
        }
        let file = OpenOptions::new().create(true).append(true).open(&path).map_err(unusable)?;
        // Prove the folder is writable now, not at the first finding.
        let probe = dir.join(".sfz-write-test");
        fs::write(&probe, b"").map_err(unusable)?;
        let _ = fs::remove_file(probe);
        Ok(Store { dir: dir.to_path_buf(), inner: Mutex::new(Inner { file, seen, new: Vec::new() }), skipped })
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
        let repro = self.dir.join(&finding.repro);
        let tmp = repro.with_extension("py.tmp");
        fs::write(&tmp, reproducer)?;
        fs::rename(&tmp, &repro)?;
        let mut line = serde_json::to_string(&finding).map_err(std::io::Error::other)?;
        line.push('\n');
        inner.file.write_all(line.as_bytes())?;
        inner.file.flush()?;
        inner.seen.insert(finding.key(), 1);
        inner.new.push(finding);
        Ok(true)
    }

    /// Findings recorded by this run, in order.
    pub fn new_findings(&self) -> Vec<Finding> {
        self.inner.lock().expect("store lock").new.clone()
    }

    /// How often each key occurred (this run's duplicates included).
    pub fn occurrences(&self, key: &Key) -> u64 {
        self.inner.lock().expect("store lock").seen.get(key).copied().unwrap_or(0)
    }
}

/// A short stable id: oracle, op name, and a hash of the key.
pub fn finding_id(key: &Key) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.api.bytes().chain([0]).chain(key.oracle.bytes()).chain([0]).chain(key.signature.bytes()) {
        h ^= b as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    let op = key.api.rsplit('.').next().unwrap_or(&key.api);
    format!("{}-{}-{:08x}", key.oracle, op, h as u32)
}
