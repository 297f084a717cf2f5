//! What the last `sfz report --verify` found, kept in the folder (`verified.json`) so that later
//! reports list apart the findings whose reproducers did not reproduce without running them
//! again. Each entry holds a hash of the script it ran: a reproducer rewritten since (a finding
//! shrunk by `--resume`) is not judged by an old run.
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::verify::Verification;
use super::Finding;

/// The file in a findings folder.
pub const FILE: &str = "verified.json";

#[derive(Serialize, Deserialize)]
struct Entry {
    script: u64,
    #[serde(flatten)]
    verification: Verification,
}

/// The hash of finding `f`'s reproducer as it is in `dir` now; None when it cannot be read.
fn script_hash(dir: &Path, f: &Finding) -> Option<u64> {
    let text = std::fs::read(dir.join(&f.repro)).ok()?;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    Some(h.finish())
}

/// Records `verified` (by finding id) beside the findings, with the scripts' hashes, merged into
/// what earlier runs recorded. Best effort: a folder that takes no writes keeps no record.
pub fn save(dir: &Path, findings: &[&Finding], verified: &HashMap<String, Verification>) {
    let mut entries: HashMap<String, Entry> = read(dir).and_then(Result::ok).unwrap_or_default();
    for f in findings {
        let (Some(v), Some(script)) = (verified.get(&f.id), script_hash(dir, f)) else { continue };
        entries.insert(f.id.clone(), Entry { script, verification: v.clone() });
    }
    if let Ok(text) = serde_json::to_string_pretty(&entries) {
        let _ = std::fs::write(dir.join(FILE), text);
    }
}

/// The recorded verifications of `findings` whose reproducers are the scripts that ran. A
/// record that cannot be read is Err with the parser's words (the caller warns, W0104, and goes
/// on without it).
pub fn load(dir: &Path, findings: &[&Finding]) -> Result<HashMap<String, Verification>, String> {
    let Some(entries) = read(dir) else { return Ok(HashMap::new()) };
    let entries = entries?;
    Ok(findings
        .iter()
        .filter_map(|f| {
            let e = entries.get(&f.id)?;
            (script_hash(dir, f) == Some(e.script)).then(|| (f.id.clone(), e.verification.clone()))
        })
        .collect())
}

/// The file's entries; None where there is no file.
fn read(dir: &Path) -> Option<Result<HashMap<String, Entry>, String>> {
    let text = std::fs::read_to_string(dir.join(FILE)).ok()?;
    Some(serde_json::from_str(&text).map_err(|e| e.to_string()))
}

/// Whether a finding is one to list: its reproducer reproduced (or died otherwise), or was not
/// run.
pub fn listable(f: &Finding, verified: &HashMap<String, Verification>) -> bool {
    verified.get(&f.id).is_none_or(|v| v.reproduced || v.differently)
}
