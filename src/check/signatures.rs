//! Declared signatures against libtorch's operator schemas: E0004 when no operator answers to an
//! API, E0017 when the parameters fit none of its overloads. The judgement is the planner's
//! (`ops::registry::resolve`, worded by `ops::diagnostic::resolve_diagnostic`), so `sfz check` and `sfz fuzz`
//! cannot disagree about whether an API can be called.
//!
//! The schemas come from libtorch itself, through a worker; that costs a second or two, so the
//! list is cached on disk, keyed by the worker binary (its path, size and modification time: a
//! rebuild against another libtorch changes them). This module only reads and writes the cache;
//! starting a worker is the command line's business.
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use super::Checked;
use crate::diag::Diagnostic;
use crate::ops::catalog::Catalog;
use crate::ops::registry;

/// Where the schemas of the libtorch behind `worker_exe` are cached.
pub fn cache_path(worker_exe: &Path) -> Option<PathBuf> {
    cache_path_in(&super::cache_dir()?, worker_exe)
}

/// The cache file for `worker_exe` in a cache directory (None if there is no such worker).
pub fn cache_path_in(dir: &Path, worker_exe: &Path) -> Option<PathBuf> {
    let meta = std::fs::metadata(worker_exe).ok()?;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    worker_exe.canonicalize().unwrap_or_else(|_| worker_exe.to_path_buf()).hash(&mut h);
    meta.len().hash(&mut h);
    meta.modified().ok().hash(&mut h);
    Some(dir.join(format!("schemas-{:016x}.txt", h.finish())))
}

/// The cached schemas of the libtorch behind `worker_exe`, if a run saved them.
pub fn cached_catalog(worker_exe: &Path) -> Option<Catalog> {
    let text = std::fs::read_to_string(cache_path(worker_exe)?).ok()?;
    let catalog = Catalog::from_schemas(text.lines().filter(|l| !l.trim().is_empty()));
    (!catalog.is_empty()).then_some(catalog)
}

/// Saves schemas read from a worker, atomically (one schema per line).
pub fn save_catalog(worker_exe: &Path, schemas: &[String]) -> std::io::Result<()> {
    let Some(path) = cache_path(worker_exe) else { return Ok(()) };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, schemas.join("\n"))?;
    std::fs::rename(tmp, path)
}

/// E0004 and E0017 for the checked APIs that libtorch cannot be called with as declared. Only
/// meaningful for specs without errors: the caller asks when `checked` has none.
pub fn compare(checked: &Checked, catalog: &Catalog) -> Vec<Diagnostic> {
    checked.spec.apis.iter().filter_map(|api| registry::resolve(api, catalog).err().map(|e| crate::ops::diagnostic::resolve_diagnostic(api, &e))).collect()
}

/// Python names of the operators in a catalog, for completing `api` items: `aten::add` is
/// `torch.add`, `aten::linalg_inv` is `torch.linalg.inv`. Private operators are left out.
pub fn python_names(catalog: &Catalog) -> Vec<String> {
    let mut names: Vec<String> = catalog
        .names()
        .into_iter()
        .filter_map(|q| q.strip_prefix("aten::"))
        .filter(|n| !n.starts_with('_') && !n.ends_with('_'))
        .map(|n| {
            for (prefix, module) in [("linalg_", "linalg"), ("special_", "special"), ("fft_", "fft")] {
                if let Some(rest) = n.strip_prefix(prefix) {
                    return format!("torch.{module}.{rest}");
                }
            }
            format!("torch.{n}")
        })
        .collect();
    names.sort();
    names.dedup();
    names
}
