//! Syntax trees kept between runs. A spec collection is hundreds of kilobytes and, once the
//! solver's verdicts are cached (`sat`), parsing it is most of a warm `sfz check`. One file per
//! `sfz` build maps a hash of a file's text to its tree; only texts that parsed without a
//! diagnostic are kept, so a broken file is parsed again for its messages. Nothing is cached
//! unless `load` was called (the editor's buffers change with every keystroke).
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::ast::Module;
use crate::diag::{reading_spans_of, Diagnostic, FileId};
use crate::syntax;

/// Trees kept at most; past it, those this run did not use are dropped.
const MAX_ENTRIES: usize = 4096;

#[derive(Default)]
struct Memo {
    trees: HashMap<u64, Vec<u8>>,
    used: HashSet<u64>,
    dirty: bool,
}

static MEMO: Mutex<Option<Memo>> = Mutex::new(None);

fn key(text: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

/// `syntax::parse`, through the cache when one is loaded.
pub fn parse(file: FileId, text: &str) -> (Module, Vec<Diagnostic>) {
    let k = key(text);
    let stored = {
        let mut memo = MEMO.lock().unwrap_or_else(|e| e.into_inner());
        let Some(memo) = memo.as_mut() else { return syntax::parse(file, text) };
        memo.used.insert(k);
        memo.trees.get(&k).cloned()
    };
    // A tree that does not read back (a corrupt file) is parsed again.
    if let Some(module) = stored.and_then(|bytes| reading_spans_of(file, || postcard::from_bytes::<Module>(&bytes).ok())) {
        return (module, Vec::new());
    }
    let (module, diags) = syntax::parse(file, text);
    if diags.is_empty() {
        if let Ok(bytes) = postcard::to_stdvec(&module) {
            let mut memo = MEMO.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(memo) = memo.as_mut() {
                memo.trees.insert(k, bytes);
                memo.dirty = true;
            }
        }
    }
    (module, diags)
}

/// Turns the cache on with the trees saved by an earlier run. A missing or unreadable file is
/// an empty cache.
pub fn load(path: &Path) {
    let trees = std::fs::read(path).ok().and_then(|bytes| postcard::from_bytes::<HashMap<u64, Vec<u8>>>(&bytes).ok()).unwrap_or_default();
    *MEMO.lock().unwrap_or_else(|e| e.into_inner()) = Some(Memo { trees, ..Memo::default() });
}

/// Writes the trees if any are new (atomically, so concurrent runs never read half a file).
pub fn save(path: &Path) -> std::io::Result<()> {
    let mut guard = MEMO.lock().unwrap_or_else(|e| e.into_inner());
    let Some(memo) = guard.as_mut().filter(|m| m.dirty) else { return Ok(()) };
    if memo.trees.len() > MAX_ENTRIES {
        let used = std::mem::take(&mut memo.used);
        memo.trees.retain(|k, _| used.contains(k));
        memo.used = used;
    }
    super::write_cache(path, &postcard::to_stdvec(&memo.trees).map_err(std::io::Error::other)?)?;
    memo.dirty = false;
    Ok(())
}

/// Where the trees are kept: in `cache_dir`, one file per `sfz` build, because a tree is only
/// as good as the parser that built it.
pub fn default_path() -> Option<PathBuf> {
    super::cache_dir().map(|d| d.join(format!("parsed-{:016x}.bin", super::build_key())))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One test, since the cache is process-wide.
    #[test]
    fn a_cached_tree_reads_back_as_the_parse_of_its_file_and_a_corrupt_cache_is_empty() {
        let dir = std::env::temp_dir().join(format!("sfz-parsed-{}", std::process::id()));
        let path = dir.join("parsed.bin");
        let text = "/// Doc.\napi torch.abs(input: Tensor) -> Tensor {\n    input.ndim <= 3; // why\n}\n";
        load(&path);
        let (fresh, diags) = parse(FileId(3), text);
        assert!(diags.is_empty(), "{diags:?}");
        save(&path).unwrap();
        // A new run: the tree comes from the file, its spans in this run's file.
        load(&path);
        assert!(MEMO.lock().unwrap().as_ref().unwrap().trees.contains_key(&key(text)));
        let (cached, diags) = parse(FileId(7), text);
        assert!(diags.is_empty());
        assert_eq!(format!("{:?}", cached.items), format!("{:?}", fresh.items).replace("FileId(3)", "FileId(7)"));
        assert_eq!(cached.comments.len(), 1);
        assert_eq!(cached.comments[0].span.file, FileId(7));
        // A broken text is not kept: its diagnostics come from parsing it again.
        let (_, diags) = parse(FileId(1), "api (");
        assert!(!diags.is_empty());
        assert!(!MEMO.lock().unwrap().as_ref().unwrap().trees.contains_key(&key("api (")));
        // A corrupt file is an empty cache, and parsing still works.
        std::fs::write(&path, b"\xff\x00garbage").unwrap();
        load(&path);
        assert!(MEMO.lock().unwrap().as_ref().unwrap().trees.is_empty());
        let (again, diags) = parse(FileId(3), text);
        assert!(diags.is_empty());
        assert_eq!(format!("{:?}", again.items), format!("{:?}", fresh.items));
        *MEMO.lock().unwrap() = None;
        let _ = std::fs::remove_dir_all(&dir);
    }
}
