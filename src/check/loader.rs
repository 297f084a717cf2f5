//! Loading modules: the files named on the command line, the stdlib modules and files they
//! import, each parsed once. `std::X` is the embedded `stdlib/X.sfz`; any other path `a::b` is
//! the file `a/b.sfz` next to the importing file.
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::ast::{self, ItemKind, UseTree};
use crate::diag::{codes, Diagnostic, FileId, SourceMap, Span};
use crate::{stdlib, syntax};

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
        let key = ModKey::File(normalize(path));
        if let Some(&id) = self.by_key.get(&key) {
            self.modules[id].root = true;
            return Some(id);
        }
        let text = match self.read(path) {
            Ok(t) => t,
            Err(msg) => {
                self.diags
                    .push(Diagnostic::new(codes::E0018, format!("cannot read `{}`", path.display())).with_note(msg).with_help("check the path and that the file is UTF-8 text"));
                return None;
            }
        };
        let id = self.add(key, path.display().to_string(), text, true);
        self.resolve_imports(id);
        Some(id)
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
        let (ast, diags) = syntax::parse(file, &self.map.get(file).text);
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
