//! What a name means in a module: its own items, then its imports, then the prelude
//! (`std::oracles`). Also "did you mean" suggestions.
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
                            let available: Vec<&str> = scopes.defs[target]
                                .iter()
                                .filter(|(_, &i)| is_importable(loader, i))
                                .map(|(n, _)| n.as_str())
                                .collect();
                            let mut d = Diagnostic::new(codes::E0013, format!("unresolved import `{}`", name.name))
                                .with_label(name.span, "no such item in this module");
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

/// The candidate closest to `name` by edit distance, if close enough to be a likely typo.
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .map(|c| (edit_distance(name, c), c))
        .filter(|&(d, c)| d <= limit && c != name)
        .min_by_key(|&(d, c)| (d, c.len(), c))
        .map(|(_, c)| c)
}

/// Edit distance over chars where swapping two adjacent characters costs one edit
/// (optimal string alignment), since transposed letters are the commonest typo.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_names_only() {
        assert_eq!(closest("inptu", ["input", "weight"]), Some("input"));
        assert_eq!(closest("zzz", ["input", "weight"]), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("inptu", "input"), 1);
    }
}
