//! What a name means in a module: its own items, then its imports, then the prelude
//! (`std::oracles`). Also "did you mean" suggestions.
use crate::diag::suggest::closest;
use std::cell::Cell;
use std::collections::HashMap;

use super::loader::{Loader, ModId};
use crate::ast::{ItemKind, UseTree};
use crate::diag::{codes, Diagnostic, Span};

/// An item in a loaded module.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ItemRef {
    pub module: ModId,
    pub index: usize,
}

/// A name brought in by a `use`.
#[derive(Debug)]
pub struct Import {
    pub item: ItemRef,
    /// The imported name in the `use` (or the `*`), for the unused-import warning.
    pub span: Span,
    pub used: Cell<bool>,
}

/// Names per module.
#[derive(Default)]
pub struct Scopes {
    /// Items each module defines, by name. API items are keyed by their dotted path.
    pub defs: Vec<HashMap<String, ItemRef>>,
    pub imports: Vec<HashMap<String, Import>>,
    pub prelude: Option<ModId>,
}

impl Scopes {
    /// Builds definitions (reporting duplicates) and resolves imports (reporting missing items).
    pub fn build(loader: &Loader, prelude: Option<ModId>, diags: &mut Vec<Diagnostic>) -> Scopes {
        let mut scopes = Scopes { prelude, ..Default::default() };
        for (m, module) in loader.modules.iter().enumerate() {
            let mut defs: HashMap<String, ItemRef> = HashMap::new();
            for (index, item) in module.ast.items.iter().enumerate() {
                let Some(name) = item.kind.name() else { continue };
                // Rules are named per API; they may share a name across APIs.
                if matches!(item.kind, ItemKind::Rule(_)) {
                    continue;
                }
                if let Some(prev) = defs.get(&name.name) {
                    let prev_span = module.ast.items[prev.index].kind.name().map_or(item.span, |n| n.span);
                    diags.push(
                        Diagnostic::new(codes::E0005, format!("`{}` is defined twice", name.name))
                            .with_label(name.span, "redefined here")
                            .with_secondary(prev_span, "first defined here"),
                    );
                    continue;
                }
                defs.insert(name.name.clone(), ItemRef { module: m, index });
            }
            scopes.defs.push(defs);
        }
        for module in &loader.modules {
            let mut imports = HashMap::new();
            for &(use_index, target) in &module.imports {
                let Some(target) = target else { continue };
                let ItemKind::Use(u) = &module.ast.items[use_index].kind else { continue };
                let names: Vec<&crate::ast::Ident> = match &u.tree {
                    UseTree::Single => u.path.last().into_iter().collect(),
                    UseTree::Group(names) => names.iter().collect(),
                    UseTree::Glob(span) => {
                        for (name, &item) in &scopes.defs[target] {
                            if is_importable(loader, item) {
                                imports.insert(name.clone(), Import { item, span: *span, used: Cell::new(false) });
                            }
                        }
                        continue;
                    }
                };
                for name in names {
                    match scopes.defs[target].get(&name.name) {
                        Some(&item) if is_importable(loader, item) => {
                            imports.insert(name.name.clone(), Import { item, span: name.span, used: Cell::new(false) });
                        }
                        _ => {
                            let available: Vec<&str> = scopes.defs[target].iter().filter(|(_, &i)| is_importable(loader, i)).map(|(n, _)| n.as_str()).collect();
                            let mut d = Diagnostic::new(codes::E0013, format!("unresolved import `{}`", name.name)).with_label(name.span, "no such item in this module");
                            d = match closest(&name.name, available.iter().copied()) {
                                Some(s) => d.with_help(format!("did you mean `{s}`?")),
                                None => {
                                    let mut names = available.clone();
                                    names.sort();
                                    d.with_help(format!("the module defines: {}", names.join(", ")))
                                }
                            };
                            diags.push(d);
                        }
                    }
                }
            }
            scopes.imports.push(imports);
        }
        scopes
    }

    /// Looks a name up in a module's scope; marks imports as used.
    pub fn lookup(&self, module: ModId, name: &str) -> Option<ItemRef> {
        if let Some(&item) = self.defs[module].get(name) {
            return Some(item);
        }
        if let Some(import) = self.imports[module].get(name) {
            import.used.set(true);
            return Some(import.item);
        }
        let prelude = self.prelude?;
        self.defs[prelude].get(name).copied()
    }

    /// What a name means in a module, without marking an import used (for completion).
    pub fn peek(&self, module: ModId, name: &str) -> Option<ItemRef> {
        if let Some(&item) = self.defs[module].get(name) {
            return Some(item);
        }
        if let Some(import) = self.imports[module].get(name) {
            return Some(import.item);
        }
        self.defs[self.prelude?].get(name).copied()
    }

    /// Every name visible in a module (for suggestions and completion).
    pub fn visible(&self, module: ModId) -> Vec<String> {
        let mut names: Vec<String> = self.defs[module].keys().chain(self.imports[module].keys()).cloned().collect();
        if let Some(p) = self.prelude {
            names.extend(self.defs[p].keys().cloned());
        }
        names.sort();
        names.dedup();
        names
    }
}

/// APIs and rules are not imported by name; everything else is.
fn is_importable(loader: &Loader, item: ItemRef) -> bool {
    !matches!(loader.modules[item.module].ast.items[item.index].kind, ItemKind::Api(_) | ItemKind::Rule(_) | ItemKind::Use(_))
}
