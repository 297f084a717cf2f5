//! Loading modules: the files named on the command line, the stdlib modules and files they
//! import, each parsed once. `std::X` is the embedded `stdlib/X.sfz`; any other path `a::b` is
//! the file `a/b.sfz` next to the importing file.
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::parsed;
use crate::ast::{self, ItemKind, UseTree};
use crate::diag::{codes, Diagnostic, FileId, SourceMap, Span};
use crate::stdlib;

/// Index of a loaded module.
pub type ModId = usize;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ModKey {
    Std(String),
    File(PathBuf),
}

/// One parsed module.
pub struct Module {
    pub key: ModKey,
    pub file: FileId,
    pub ast: ast::Module,
    /// Named on the command line (or opened in the editor), not only imported.
    pub root: bool,
    /// A file of the stdlib's sources (`.../stdlib/dtypes.sfz`), checked as the stdlib is.
    pub stdlib_file: bool,
    /// Resolved imports: for each `use` item index, the module it names (None if unresolved).
    pub imports: Vec<(usize, Option<ModId>)>,
}

impl Module {
    pub fn is_std(&self) -> bool {
        matches!(self.key, ModKey::Std(_)) || self.stdlib_file
    }
}

/// Parses `files` of `map`, in order, on up to as many threads as there are cores.
fn parse_all(map: &SourceMap, files: &[FileId]) -> Vec<(ast::Module, Vec<Diagnostic>)> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(files.len());
    if threads <= 1 {
        return files.iter().map(|&f| parsed::parse(f, &map.get(f).text)).collect();
    }
    // Largest first, each to the thread with the least text so far.
    let mut order: Vec<usize> = (0..files.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(map.get(files[i]).text.len()));
    let mut shares: Vec<(usize, Vec<usize>)> = vec![(0, Vec::new()); threads];
    for i in order {
        let share = shares.iter_mut().min_by_key(|(len, _)| *len).expect("threads >= 1");
        share.0 += map.get(files[i]).text.len();
        share.1.push(i);
    }
    let mut out: Vec<Option<(ast::Module, Vec<Diagnostic>)>> = (0..files.len()).map(|_| None).collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> =
            shares.iter().map(|(_, share)| scope.spawn(move || share.iter().map(|&i| (i, parsed::parse(files[i], &map.get(files[i]).text))).collect::<Vec<_>>())).collect();
        for h in handles {
            for (i, parsed) in h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)) {
                out[i] = Some(parsed);
            }
        }
    });
    out.into_iter().map(|p| p.expect("every file parsed")).collect()
}

/// Loads modules into a source map, following imports.
#[derive(Default)]
pub struct Loader {
    pub map: SourceMap,
    pub modules: Vec<Module>,
    pub diags: Vec<Diagnostic>,
    by_key: HashMap<ModKey, ModId>,
    /// In-memory texts that replace files on disk (the editor's unsaved buffers).
    overlays: HashMap<PathBuf, String>,
}

impl Loader {
    pub fn with_overlays(overlays: HashMap<PathBuf, String>) -> Self {
        let overlays = overlays.into_iter().map(|(p, t)| (normalize(&p), t)).collect();
        Loader { overlays, ..Default::default() }
    }

    /// Loads a root file. Read errors become E0018 diagnostics with no span.
    pub fn load_root(&mut self, path: &Path) -> Option<ModId> {
        self.load_roots(std::slice::from_ref(&path.to_path_buf())).pop().flatten()
    }

    /// Loads root files, in order, parsing them on all cores (a spec collection is hundreds of
    /// kilobytes; parsing is most of a check), then their imports.
    pub fn load_roots(&mut self, paths: &[PathBuf]) -> Vec<Option<ModId>> {
        let mut ids = vec![None; paths.len()];
        let mut fresh: Vec<(usize, ModKey, FileId)> = Vec::new();
        for (i, path) in paths.iter().enumerate() {
            let key = ModKey::File(normalize(path));
            if let Some(&id) = self.by_key.get(&key) {
                self.modules[id].root = true;
                ids[i] = Some(id);
                continue;
            }
            if fresh.iter().any(|(_, k, _)| *k == key) {
                continue;
            }
            match self.read(path) {
                Ok(text) => fresh.push((i, key, self.map.add(path.display().to_string(), text))),
                Err(msg) => self
                    .diags
                    .push(Diagnostic::new(codes::E0018, format!("cannot read `{}`", path.display())).with_note(msg).with_help("check the path and that the file is UTF-8 text")),
            }
        }
        let files: Vec<FileId> = fresh.iter().map(|(_, _, f)| *f).collect();
        let mut parsed = parse_all(&self.map, &files).into_iter();
        let mut added = Vec::new();
        for ((i, key, file), ast) in fresh.into_iter().zip(parsed.by_ref()) {
            let id = self.add_parsed(key, file, ast, true);
            ids[i] = Some(id);
            added.push(id);
        }
        for id in added {
            self.resolve_imports(id);
        }
        // A path named twice is one module.
        for (i, path) in paths.iter().enumerate() {
            if ids[i].is_none() {
                ids[i] = self.by_key.get(&ModKey::File(normalize(path))).copied();
            }
        }
        ids
    }

    /// Loads `std::name` (the prelude `std::oracles` is loaded for every check).
    pub fn load_std(&mut self, name: &str) -> Option<ModId> {
        let key = ModKey::Std(name.to_string());
        if let Some(&id) = self.by_key.get(&key) {
            return Some(id);
        }
        let text = stdlib::source(name)?;
        let id = self.add(key, stdlib::display_path(name), text.to_string(), false);
        self.resolve_imports(id);
        Some(id)
    }

    fn read(&self, path: &Path) -> Result<String, String> {
        if let Some(text) = self.overlays.get(&normalize(path)) {
            return Ok(text.clone());
        }
        let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
        String::from_utf8(bytes).map_err(|e| format!("not UTF-8: invalid byte at offset {}", e.utf8_error().valid_up_to()))
    }

    fn add(&mut self, key: ModKey, name: String, text: String, root: bool) -> ModId {
        let file = self.map.add(name, text);
        let parsed = parsed::parse(file, &self.map.get(file).text);
        self.add_parsed(key, file, parsed, root)
    }

    fn add_parsed(&mut self, key: ModKey, file: FileId, (ast, diags): (ast::Module, Vec<Diagnostic>), root: bool) -> ModId {
        self.diags.extend(diags);
        let id = self.modules.len();
        let stdlib_file = match &key {
            ModKey::File(p) => {
                let in_stdlib_dir = p.parent().and_then(Path::file_name).is_some_and(|d| d == "stdlib");
                let stem = p.file_stem().and_then(|s| s.to_str()).unwrap_or("");
                in_stdlib_dir && stdlib::source(stem).is_some()
            }
            ModKey::Std(_) => false,
        };
        self.modules.push(Module { key: key.clone(), file, ast, root, stdlib_file, imports: Vec::new() });
        self.by_key.insert(key, id);
        id
    }

    /// Loads what the module's `use` items name and records the result per item.
    fn resolve_imports(&mut self, id: ModId) {
        let uses: Vec<(usize, ast::Use, Span)> = self.modules[id]
            .ast
            .items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| match &item.kind {
                ItemKind::Use(u) => Some((i, u.clone(), item.span)),
                _ => None,
            })
            .collect();
        // Imports resolve next to the importing file; they are named in messages relative to
        // it as the user named it, so output does not depend on where the checkout lives.
        let base_dir = match &self.modules[id].key {
            ModKey::File(_) => Path::new(&self.map.get(self.modules[id].file).name).parent().map(Path::to_path_buf).unwrap_or_default(),
            ModKey::Std(_) => PathBuf::new(),
        };
        let is_std = self.modules[id].is_std();
        let mut imports = Vec::new();
        for (index, u, span) in uses {
            let module_path: &[ast::Ident] = match u.tree {
                UseTree::Single => &u.path[..u.path.len().saturating_sub(1)],
                _ => &u.path,
            };
            let target = self.resolve_module(module_path, &base_dir, is_std, span);
            imports.push((index, target));
        }
        self.modules[id].imports = imports;
    }

    fn resolve_module(&mut self, path: &[ast::Ident], base_dir: &Path, from_std: bool, span: Span) -> Option<ModId> {
        let Some(first) = path.first() else {
            self.diags.push(
                Diagnostic::new(codes::E0013, "unresolved import")
                    .with_label(span, "a `use` names a module and an item")
                    .with_help("write `use std::dtypes::floating;` or `use std::dtypes::*;`"),
            );
            return None;
        };
        let whole = path.iter().map(|i| i.name.as_str()).collect::<Vec<_>>().join("::");
        let module_span = first.span.to(path.last().map_or(first.span, |l| l.span));
        if first.name == "std" {
            let found = (path.len() == 2).then(|| self.load_std(&path[1].name)).flatten();
            if found.is_none() {
                let names: Vec<String> = stdlib::MODULES.iter().map(|(n, _)| format!("std::{n}")).collect();
                self.diags.push(
                    Diagnostic::new(codes::E0013, format!("unresolved import `{whole}`"))
                        .with_label(module_span, "no such stdlib module")
                        .with_help(format!("the stdlib modules are {}", names.join(", "))),
                );
            }
            return found;
        }
        if from_std {
            return None;
        }
        let mut file = base_dir.to_path_buf();
        for seg in path {
            file.push(&seg.name);
        }
        file.set_extension("sfz");
        let key = ModKey::File(normalize(&file));
        if let Some(&id) = self.by_key.get(&key) {
            return Some(id);
        }
        match self.read(&file) {
            Ok(text) => {
                let id = self.add(key, file.display().to_string(), text, false);
                self.resolve_imports(id);
                Some(id)
            }
            Err(msg) => {
                self.diags.push(
                    Diagnostic::new(codes::E0013, format!("unresolved import `{whole}`"))
                        .with_label(module_span, format!("cannot read `{}`", file.display()))
                        .with_note(msg)
                        .with_help("`std::X` is a stdlib module; any other path is a .sfz file relative to this one"),
                );
                None
            }
        }
    }
}

/// An absolute, `.`/`..`-free form of a path, so one file loads once however it is named.
pub fn normalize(path: &Path) -> PathBuf {
    let abs = if path.is_absolute() { path.to_path_buf() } else { std::env::current_dir().unwrap_or_default().join(path) };
    let mut out = PathBuf::new();
    for c in abs.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}
