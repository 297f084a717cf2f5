//! `campaign.json` and `progress.json` in a findings folder. The manifest is written when a
//! campaign starts: the command line that started it (so `--resume` runs the same campaign),
//! the sfz version and a digest of the specs (so merging can tell folders of different
//! campaigns apart). Progress is rewritten atomically while it runs: every case below
//! `next_case` has been judged and its findings are on disk.
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::Shard;

/// The manifest's file name in a findings folder.
pub const MANIFEST: &str = "campaign.json";
/// The progress file's name in a findings folder.
pub const PROGRESS: &str = "progress.json";

/// What started a campaign.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub sfz_version: String,
    /// The arguments after `sfz fuzz`, as given.
    pub argv: Vec<String>,
    /// The folder they were given in (relative paths in `argv` are relative to it).
    pub cwd: PathBuf,
    /// The run's seed (before any shard derivation) and shard.
    pub seed: u64,
    #[serde(default)]
    pub shard: Option<Shard>,
    /// FNV-1a over the checked spec files' names and texts, in order: equal digests, equal specs.
    pub specs: String,
    /// The APIs a shard took, so that a resumed shard takes them again even if the costs it
    /// was balanced by have changed since (case `i` depends on them).
    #[serde(default)]
    pub apis: Option<Vec<String>>,
}

/// How far a campaign got.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    /// Every case with a lower index has been judged.
    pub next_case: u64,
    /// Seconds the campaign had run, over all its resumptions.
    pub elapsed_s: f64,
    /// Whether it ended by its own limits (rather than by a kill, a signal or a full disk).
    pub finished: bool,
}

/// Why a folder cannot be resumed or read as a campaign.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("`{}` holds no {MANIFEST}", dir.display())]
    Missing { dir: PathBuf },
    #[error("cannot read `{}`: {reason}", path.display())]
    Unreadable { path: PathBuf, reason: String },
}

impl Manifest {
    /// Reads a folder's manifest.
    pub fn load(dir: &Path) -> Result<Manifest, ManifestError> {
        let path = dir.join(MANIFEST);
        if !path.is_file() {
            return Err(ManifestError::Missing { dir: dir.to_path_buf() });
        }
        let text = std::fs::read_to_string(&path).map_err(|e| ManifestError::Unreadable { path: path.clone(), reason: e.to_string() })?;
        serde_json::from_str(&text).map_err(|e| ManifestError::Unreadable { path, reason: e.to_string() })
    }

    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        write_atomic(&dir.join(MANIFEST), &serde_json::to_string_pretty(self).map_err(std::io::Error::other)?)
    }
}

impl Progress {
    /// A folder's progress; none recorded is the start.
    pub fn load(dir: &Path) -> Progress {
        std::fs::read_to_string(dir.join(PROGRESS)).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default()
    }

    /// Rewrites the progress file; a kill at any moment leaves the old one or the new one.
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        write_atomic(&dir.join(PROGRESS), &serde_json::to_string(self).map_err(std::io::Error::other)?)
    }
}

/// The digest of spec files (name and text each), as `Manifest::specs` holds it.
pub fn spec_digest<'a>(files: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (name, text) in files {
        for b in name.bytes().chain([0]).chain(text.bytes()).chain([0]) {
            h ^= b as u64;
            h = h.wrapping_mul(0x100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

fn write_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let result = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
