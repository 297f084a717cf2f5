//! Spec findings: libtorch rejected an input that the spec says is valid, so the spec misses a
//! constraint (or states one wrongly). They are not libtorch bugs and never go to
//! `findings.jsonl`; they go to `spec-findings.jsonl` (one line per API and normalised error,
//! flushed at once) with a reproducer under `spec/`, so the spec can be fixed.
use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::wire::case::Case;

/// One input the spec allows and libtorch refuses.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SpecFinding {
    pub id: String,
    pub api: String,
    pub aten: String,
    /// What to fix: "constraint missing?".
    pub kind: String,
    /// The error, normalised (the dedup key within the API).
    pub signature: String,
    /// libtorch's message for this input.
    pub message: String,
    pub seed: u64,
    pub case_index: u64,
    pub case: Case,
    /// The arguments in words.
    pub inputs: Vec<String>,
    /// Path of the reproducer, relative to the folder.
    pub repro: String,
}

struct Inner {
    file: Option<File>,
    seen: HashSet<(String, String)>,
    count: u64,
}

/// The spec findings of a run, in the findings folder.
pub struct SpecStore {
    dir: PathBuf,
    inner: Mutex<Inner>,
}

impl SpecStore {
    /// Files are created at the first finding; a folder without spec findings gets none. Those
    /// the folder holds already (an earlier run, a resumed one) are not recorded again.
    pub fn new(dir: &Path) -> SpecStore {
        let seen = fs::read_to_string(dir.join("spec-findings.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| Some((v.get("api")?.as_str()?.to_string(), v.get("signature")?.as_str()?.to_string())))
            .collect();
        SpecStore { dir: dir.to_path_buf(), inner: Mutex::new(Inner { file: None, seen, count: 0 }) }
    }

    /// Whether this (API, signature) is already recorded in the folder.
    pub fn seen(&self, api: &str, signature: &str) -> bool {
        self.inner.lock().expect("spec store lock").seen.contains(&(api.to_string(), signature.to_string()))
    }

    /// Records a new spec finding: the reproducer first, then the line. False when known.
    pub fn record(&self, finding: &SpecFinding, reproducer: &str) -> std::io::Result<bool> {
        let mut inner = self.inner.lock().expect("spec store lock");
        if inner.seen.contains(&(finding.api.clone(), finding.signature.clone())) {
            return Ok(false);
        }
        fs::create_dir_all(self.dir.join("spec"))?;
        let repro = self.dir.join(&finding.repro);
        fs::write(&repro, reproducer)?;
        if inner.file.is_none() {
            inner.file = Some(OpenOptions::new().create(true).append(true).open(self.dir.join("spec-findings.jsonl"))?);
        }
        let mut line = serde_json::to_string(finding).map_err(std::io::Error::other)?;
        line.push('\n');
        let file = inner.file.as_mut().expect("opened above");
        // Cut off half a line a full disk left, as the findings store does.
        let before = file.metadata()?.len();
        if let Err(e) = file.write_all(line.as_bytes()).and_then(|()| file.flush()) {
            let _ = file.set_len(before);
            return Err(e);
        }
        inner.seen.insert((finding.api.clone(), finding.signature.clone()));
        inner.count += 1;
        Ok(true)
    }

    /// Spec findings recorded by this run.
    pub fn count(&self) -> u64 {
        self.inner.lock().expect("spec store lock").count
    }
}
