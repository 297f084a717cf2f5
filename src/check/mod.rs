//! Syntax tree → checked spec. Resolves names across modules, checks types, expands constraint
//! sets and folds validated rules into their APIs. Checking never fails: every user mistake is a
//! diagnostic, and what could be checked is still returned.
mod call_args;
mod classify;
mod expr;
pub mod forward;
mod items;
pub mod loader;
mod lowering;
pub mod parsed;
mod programs;
mod relations;
pub mod sat;
mod scope;
pub mod signatures;
pub mod symbols;
mod types;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

pub use items::DEFAULT_ORACLES;

use crate::ast::{ItemKind, Keyword};
use crate::diag::{self, codes, Diagnostic, FileId, SourceMap};
use crate::spec::{ApiSpec, ParamSpec, Spec};
use crate::wire::case::DType;
use loader::{Loader, ModId};
use scope::{ItemRef, Scopes};
use symbols::Symbols;

/// The result of checking some files.
pub struct Checked {
    pub map: SourceMap,
    pub spec: Spec,
    /// Sorted by file and position.
    pub diags: Vec<Diagnostic>,
    pub symbols: Symbols,
    /// The files named as roots, in order.
    pub roots: Vec<FileId>,
}

impl Checked {
    pub fn has_errors(&self) -> bool {
        self.diags.iter().any(Diagnostic::is_error)
    }
}

/// What to check: files or directories (searched for `*.sfz`), and in-memory texts that
/// replace files on disk (an editor's unsaved buffers).
#[derive(Clone, Debug, Default)]
pub struct Inputs {
    pub paths: Vec<PathBuf>,
    pub overlays: HashMap<PathBuf, String>,
    /// Whether `Checked::symbols` is filled (definitions, hovers and completions, for editors):
    /// a command-line check never reads them, and their hover texts are a fifth of its time.
    pub symbols: bool,
}

/// The directory sfz caches things in between runs: `$SFZ_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/sfz`, else `~/.cache/sfz`.
pub fn cache_dir() -> Option<PathBuf> {
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    var("SFZ_CACHE_DIR").or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("sfz"))).or_else(|| var("HOME").map(|d| d.join(".cache").join("sfz")))
}

/// A key of this `sfz` build (its executable's size and modification time): what a cache keeps
/// is only as good as the code that computed it.
pub fn build_key() -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    if let Some(meta) = std::env::current_exe().ok().and_then(|exe| std::fs::metadata(exe).ok()) {
        meta.len().hash(&mut h);
        meta.modified().ok().hash(&mut h);
    }
    h.finish()
}

/// Writes a cache file atomically (a temporary file renamed over it), so that concurrent runs
/// never read half a file.
pub(crate) fn write_cache(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

/// Checks files and directories.
pub fn check_paths(paths: &[PathBuf]) -> Checked {
    check(Inputs { paths: paths.to_vec(), overlays: HashMap::new(), symbols: false })
}

/// Checks one in-memory text as if it were the file `path` (imports resolve next to it).
pub fn check_text(path: &Path, text: &str) -> Checked {
    check(Inputs { paths: vec![path.to_path_buf()], overlays: HashMap::from([(path.to_path_buf(), text.to_string())]), symbols: true })
}

/// The first API of a spec text, checked by the real checker (unit tests across the crate).
#[cfg(test)]
pub fn first_api(src: &str) -> crate::spec::ApiSpec {
    let checked = check_text(Path::new("t.sfz"), src);
    assert!(!checked.has_errors(), "{:?}", checked.diags);
    checked.spec.apis.into_iter().next().expect("one api")
}

/// The `.sfz` files a path names: itself, or those under it (sorted, recursively).
pub fn expand_paths(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut found = Vec::new();
            collect_sfz(p, &mut found);
            found.sort();
            out.extend(found);
        } else {
            out.push(p.clone());
        }
    }
    out
}

fn collect_sfz(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect_sfz(&p, out);
        } else if p.extension().is_some_and(|x| x == "sfz") {
            out.push(p);
        }
    }
}

pub fn check(inputs: Inputs) -> Checked {
    let mut loader = Loader::with_overlays(inputs.overlays);
    let prelude = loader.load_std("oracles");
    let mut roots = Vec::new();
    for id in loader.load_roots(&expand_paths(&inputs.paths)).into_iter().flatten() {
        roots.push(loader.modules[id].file);
    }
    let mut diags = std::mem::take(&mut loader.diags);
    let scopes = Scopes::build(&loader, prelude, &mut diags);
    let mut checker = Checker {
        loader: &loader,
        scopes,
        diags,
        quiet: 0,
        used: HashSet::new(),
        dtype_groups: HashMap::new(),
        in_progress: HashSet::new(),
        expanding: Vec::new(),
        set_params: HashMap::new(),
        symbols: Symbols::default(),
        record_symbols: inputs.symbols,
        next_var: 0,
        captured: None,
    };
    let spec = checker.run();
    let Checker { mut diags, symbols, .. } = checker;
    diag::sort(&mut diags);
    diags.dedup();
    Checked { map: loader.map, spec, diags, symbols, roots }
}

/// The state of one check.
pub struct Checker<'l> {
    loader: &'l Loader,
    scopes: Scopes,
    diags: Vec<Diagnostic>,
    /// Above zero while re-checking text whose errors were already reported (constraint-set
    /// expansion): diagnostics are dropped.
    quiet: u32,
    /// Items referred to at least once (for W0002).
    used: HashSet<ItemRef>,
    dtype_groups: HashMap<ItemRef, Option<Vec<DType>>>,
    in_progress: HashSet<ItemRef>,
    /// Constraint sets being expanded, innermost last (a set that applies itself is a cycle).
    expanding: Vec<ItemRef>,
    set_params: HashMap<ItemRef, Vec<ParamSpec>>,
    symbols: Symbols,
    /// Whether `symbols` is filled (`Inputs::symbols`).
    record_symbols: bool,
    /// Next id for a forall/exists variable.
    next_var: u32,
    /// While Some, diagnostics dropped for `quiet` are kept here instead (a constraint set's
    /// relation instantiated in an API: its first error is reported at the application).
    captured: Option<Vec<Diagnostic>>,
}

impl Checker<'_> {
    fn error(&mut self, d: Diagnostic) {
        if self.quiet == 0 {
            self.diags.push(d);
        } else if let Some(c) = &mut self.captured {
            c.push(d);
        }
    }

    fn run(&mut self) -> Spec {
        let loader = self.loader;
        let mut apis: Vec<ApiSpec> = Vec::new();
        // Which module each API came from: rules prefer the API of their own module.
        let mut api_modules: Vec<ModId> = Vec::new();
        // The item of each API, whose relations are checked once every API is known.
        let mut api_items: Vec<ItemRef> = Vec::new();
        // APIs without errors, whose constraints are then solved together.
        let mut to_solve: Vec<usize> = Vec::new();
        let mut programs = Vec::new();
        for (m, module) in loader.modules.iter().enumerate() {
            // Two files may each specify an API; one file may not specify it twice.
            let mut api_spans: HashMap<String, crate::diag::Span> = HashMap::new();
            for (index, item) in module.ast.items.iter().enumerate() {
                let item_ref = ItemRef { module: m, index };
                match &item.kind {
                    ItemKind::Dtypes(_) => {
                        self.dtype_group(item_ref);
                    }
                    ItemKind::Constraints(set) => self.check_constraint_set(item_ref, set),
                    ItemKind::TypeAlias(alias) => {
                        let mut diags = Vec::new();
                        let mut resolve = |n: &str| if n == alias.name.name { None } else { self.alias_ast(m, n) };
                        types::param_type(&alias.ty, &mut resolve, &mut diags);
                        diags.into_iter().for_each(|d| self.error(d));
                    }
                    ItemKind::Oracle(o) => self.check_oracle_decl(item_ref, o),
                    ItemKind::Program(p) => {
                        let program = self.check_program(m, p);
                        programs.push(program);
                    }
                    ItemKind::Api(api) if !module.is_std() => {
                        let spec = self.check_api(m, item, api);
                        // Only a well-formed API is worth a satisfiability check: a reported
                        // mistake (an out-of-range literal read as 0) would make it noise.
                        let well_formed = !self.has_errors_in(item.span);
                        if let Some(prev) = api_spans.get(&spec.name) {
                            self.error(
                                Diagnostic::new(codes::E0005, format!("API `{}` is specified twice", spec.name))
                                    .with_label(api.path.span, "specified again here")
                                    .with_secondary(*prev, "first specified here"),
                            );
                            continue;
                        }
                        api_spans.insert(spec.name.clone(), spec.span);
                        if well_formed {
                            to_solve.push(apis.len());
                        }
                        apis.push(spec);
                        api_modules.push(m);
                        api_items.push(item_ref);
                    }
                    _ => {}
                }
            }
        }
        // Relations may call any loaded API: constraint sets' own first (their mistakes are
        // reported there, once), then each API's.
        for (m, module) in loader.modules.iter().enumerate() {
            for (index, item) in module.ast.items.iter().enumerate() {
                if let ItemKind::Constraints(_) = item.kind {
                    self.check_set_relations(ItemRef { module: m, index }, &apis);
                }
            }
        }
        for (i, item) in api_items.iter().enumerate() {
            let ItemKind::Api(api) = &loader.modules[item.module].ast.items[item.index].kind else { continue };
            let mut ctx = relations::RelCtx::new(item.module, &apis[i].params, Some(&apis[i].returns), &apis, format!("`{}`", apis[i].name));
            let mut found = Vec::new();
            self.body_relations(&mut ctx, &api.body, &crate::spec::Origin::Inline, &mut found);
            apis[i].relations = found;
        }
        // Each rule with the index of the API it refines: the API of its own module if there is
        // one, else the first loaded (a rejected rule's refutations reach every loaded one).
        let mut rules: Vec<(crate::spec::RuleSpec, usize, crate::diag::Span)> = Vec::new();
        let mut rule_spans: HashMap<(usize, String), crate::diag::Span> = HashMap::new();
        for (m, module) in loader.modules.iter().enumerate() {
            for item in &module.ast.items {
                let ItemKind::Rule(rule) = &item.kind else { continue };
                let own = apis.iter().zip(&api_modules).position(|(a, &am)| am == m && a.name == rule.target.name);
                let target = own.or_else(|| apis.iter().position(|a| a.name == rule.target.name));
                let Some((r, relations, oracles)) = self.check_rule(m, item, rule, target.map(|i| &apis[i]), &apis) else { continue };
                let Some(i) = target else { continue };
                if let Some(prev) = rule_spans.insert((i, rule.name.name.clone()), rule.name.span) {
                    self.error(
                        Diagnostic::new(codes::E0005, format!("rule `{}` for `{}` is defined twice", rule.name.name, apis[i].name))
                            .with_label(rule.name.span, "defined again here")
                            .with_secondary(prev, "first defined here")
                            .with_help("rules of one API need distinct names"),
                    );
                    continue;
                }
                // A validated rule's oracles and relations join its API's, as its constraints
                // do below; a rejected rule's oracles are refuted for the API; a candidate's
                // wait.
                match r.meta.status {
                    crate::spec::RuleStatus::Validated => {
                        // A rule that gives an oracle its tolerances refines the bare use
                        // another rule made (`oracles_hold`'s inferred `precision`), in
                        // whichever order the files come.
                        for u in oracles {
                            match apis[i].oracles.iter_mut().find(|o| o.name == u.name) {
                                None => apis[i].oracles.push(u),
                                Some(o) if !o.written && u.written => *o = u,
                                Some(_) => {}
                            }
                        }
                        let ctx = relations::RelCtx::new(m, &[], None, &[], format!("`{}`", apis[i].name));
                        let mut all = std::mem::take(&mut apis[i].relations);
                        for rel in relations {
                            self.push_relation(&ctx, &mut all, rel);
                        }
                        apis[i].relations = all;
                    }
                    crate::spec::RuleStatus::Rejected => {
                        let reason = r.meta.reason.clone().unwrap_or_else(|| format!("rejected by rule `{}`", r.meta.name));
                        // A refutation written away from its API (specs/documented.sfz: what
                        // torch documents) holds for every spec of that API, not the first.
                        let every: Vec<usize> = match own {
                            Some(_) => vec![i],
                            None => apis.iter().enumerate().filter(|(_, a)| a.name == rule.target.name).map(|(k, _)| k).collect(),
                        };
                        for k in every {
                            for u in &oracles {
                                if !apis[k].refuted_oracles.iter().any(|(o, _)| *o == u.name) {
                                    apis[k].refuted_oracles.push((u.name.clone(), reason.clone()));
                                }
                            }
                        }
                    }
                    crate::spec::RuleStatus::Candidate => {}
                }
                rules.push((r, i, item.span));
            }
        }
        for (r, i, _) in &rules {
            if r.meta.status == crate::spec::RuleStatus::Validated {
                apis[*i].requires.extend(r.constraints.iter().cloned());
                apis[*i].ensures.extend(r.ensures.iter().cloned());
            }
        }
        // After folding: a forward's validated rules are its constraints too.
        self.forward_statements(&mut apis, &api_items);
        // After folding, so that a validated rule contradicting its API is reported too.
        self.satisfiable(&apis, &to_solve);
        self.redundant_rules(&apis, &to_solve, &rules);
        self.unused();
        self.record_names();
        Spec { apis, rules: rules.into_iter().map(|(r, ..)| r).collect(), programs }
    }

    /// Records a reference for the language server (not while re-checking expanded text).
    fn reference(&mut self, span: crate::diag::Span, def: Option<crate::diag::Span>, hover: impl FnOnce() -> String) {
        if self.quiet == 0 && self.record_symbols {
            self.symbols.reference(span, def, hover());
        }
    }

    /// Records a reference to an item: its definition and its signature and docs as hover.
    fn reference_item(&mut self, span: crate::diag::Span, item: ItemRef) {
        if !self.record_symbols {
            return;
        }
        let ast_item = &self.loader.modules[item.module].ast.items[item.index];
        let def = ast_item.kind.name().map(|n| n.span);
        let hover = self.item_hover(item);
        self.reference(span, def, || hover);
    }

    /// An item's one-line signature and its doc comment, as hover markdown.
    fn item_hover(&mut self, item: ItemRef) -> String {
        let ast_item = &self.loader.modules[item.module].ast.items[item.index];
        let docs = ast_item.docs.iter().map(|d| d.text.as_str()).collect::<Vec<_>>().join("\n");
        symbols::hover_text(&self.item_detail(item), &docs)
    }

    /// An item's signature or value in one line.
    fn item_detail(&mut self, item: ItemRef) -> String {
        let ast_item = &self.loader.modules[item.module].ast.items[item.index];
        let params = |ps: &[crate::ast::Param]| {
            ps.iter()
                .map(|p| match &p.kind {
                    crate::ast::ParamKind::KwOnlyMarker => "*".to_string(),
                    crate::ast::ParamKind::Named { name, ty, variadic, .. } => format!("{}{}: {}", if *variadic { "*" } else { "" }, name.name, crate::fmt::type_text(ty)),
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        match &ast_item.kind {
            ItemKind::Dtypes(d) => {
                let name = d.name.name.clone();
                let set = self.dtype_group(item).unwrap_or_default();
                format!("dtypes {name} = [{}]", set.iter().map(|d| d.name()).collect::<Vec<_>>().join(", "))
            }
            ItemKind::Constraints(c) => format!("constraints {}({})", c.name.name, params(&c.params)),
            ItemKind::TypeAlias(t) => format!("type {} = {}", t.name.name, crate::fmt::type_text(&t.ty)),
            ItemKind::Oracle(o) if o.params.is_empty() => format!("oracle {}", o.name.name),
            ItemKind::Oracle(o) => format!("oracle {}({})", o.name.name, params(&o.params)),
            ItemKind::Program(p) => format!("program {}({})", p.name.name, params(&p.params)),
            ItemKind::Api(a) => format!("api {}({})", a.path.name, params(&a.params)),
            ItemKind::Rule(r) => format!("rule {} for {}", r.name.name, r.target.name),
            ItemKind::Use(_) => String::new(),
        }
    }

    /// Notes the parameters visible in a body, for completion.
    fn body_scope(&mut self, span: crate::diag::Span, params: &[ParamSpec], has_results: bool) {
        if self.quiet == 0 && self.record_symbols {
            let params = params.iter().map(|p| (p.name.clone(), expr::param_text(p))).collect();
            self.symbols.scopes.push(symbols::BodyScope { span, params, has_results });
        }
    }

    /// For each root file: hovers on imported names, and every name it can use.
    fn record_names(&mut self) {
        if !self.record_symbols {
            return;
        }
        let loader = self.loader;
        for (m, module) in loader.modules.iter().enumerate() {
            if !module.root {
                continue;
            }
            let imports: Vec<(crate::diag::Span, ItemRef, bool)> = self.scopes.imports[m].values().map(|i| (i.span, i.item, loader.map.slice(i.span) == "*")).collect();
            for (span, item, glob) in imports {
                if !glob {
                    self.reference_item(span, item);
                }
            }
            let mut visible = Vec::new();
            for name in self.scopes.visible(m) {
                let Some(item) = self.scopes.peek(m, &name) else { continue };
                let ast_item = &loader.modules[item.module].ast.items[item.index];
                let kind = ast_item.kind.key();
                if matches!(kind, Keyword::Api | Keyword::Rule | Keyword::Use) {
                    continue;
                }
                let docs = ast_item.docs.iter().map(|d| d.text.as_str()).collect::<Vec<_>>().join("\n");
                let detail = self.item_detail(item);
                visible.push(symbols::Visible { name, kind, detail, docs });
            }
            self.symbols.visible.insert(module.file, visible);
        }
    }

    fn has_errors_in(&self, span: crate::diag::Span) -> bool {
        self.diags.iter().filter(|d| d.is_error()).filter_map(Diagnostic::primary_span).any(|s| s.file == span.file && s.lo >= span.lo && s.hi <= span.hi)
    }

    /// E0009 when no call can meet an API's constraints, with the conflicting ones labelled.
    fn satisfiable(&mut self, apis: &[ApiSpec], which: &[usize]) {
        let mut chosen: Vec<&ApiSpec> = Vec::new();
        for &i in which {
            let terms = sat::encoded_terms(&apis[i]);
            if terms > sat::MAX_TERMS {
                self.error(
                    Diagnostic::new(codes::W0003, format!("the constraints of `{}` are too large to solve", apis[i].name))
                        .with_label(apis[i].span, format!("about {terms:.0e} terms once quantifiers are unrolled"))
                        .with_note("sfz did not check that these constraints can hold, and cannot generate inputs for them")
                        .with_help("nest fewer quantifiers, or quantify over smaller ranges"),
                );
                continue;
            }
            chosen.push(&apis[i]);
        }
        for (api, core) in chosen.iter().zip(sat::unsat_cores(&chosen)) {
            if let Some(core) = core {
                self.unsatisfiable(api, &core);
            }
        }
    }

    /// W0005 for a rule its API's other constraints already imply: it can never exclude an
    /// input, so validating or keeping it adds nothing. Rejected rules are records, never
    /// warned about; rules with errors, or of APIs with errors, are not judged.
    fn redundant_rules(&mut self, apis: &[ApiSpec], well_formed: &[usize], rules: &[(crate::spec::RuleSpec, usize, crate::diag::Span)]) {
        let mut probes = Vec::new();
        let mut which = Vec::new();
        for (r, i, item_span) in rules {
            if r.meta.status == crate::spec::RuleStatus::Rejected || r.constraints.is_empty() || !well_formed.contains(i) || self.has_errors_in(*item_span) {
                continue;
            }
            if let Some(probe) = sat::without_rule(&apis[*i], r) {
                probes.push(probe);
                which.push((r, &apis[*i]));
            }
        }
        let chosen: Vec<&ApiSpec> = probes.iter().collect();
        for ((r, api), (probe, core)) in which.into_iter().zip(probes.iter().zip(sat::unsat_cores(&chosen))) {
            let negation = probe.requires.len() - 1;
            let Some(core) = core.filter(|c| c.contains(&negation)) else { continue };
            let mut d =
                Diagnostic::new(codes::W0005, format!("rule `{}` adds nothing to `{}`", r.meta.name, api.name)).with_label(r.span, "implied by the API's other constraints");
            for &k in core.iter().filter(|&&k| k != negation) {
                if let Some(c) = probe.requires.get(k) {
                    d = d.with_secondary(c.span, "this implies it");
                }
            }
            let d = d.with_note("the solver also assumes the limits inputs are generated within (rank <= 4, dims <= 8, at most 1000 elements per tensor)");
            self.error(d.with_help("remove the rule, or mark it `#[status(rejected)]` to keep it as a record"));
        }
    }

    fn unsatisfiable(&mut self, api: &ApiSpec, core: &[usize]) {
        let mut d = Diagnostic::new(codes::E0009, format!("the constraints of `{}` cannot all hold", api.name)).with_label(api.span, "no input satisfies this API's constraints");
        for &i in core {
            if let Some(c) = api.requires.get(i) {
                d = d.with_secondary(c.span, "conflicts");
            }
        }
        if core.is_empty() {
            d = d.with_note("the conflict involves the limits sfz generates within (rank <= 4, dims <= 8, at most 1000 elements per tensor)");
        }
        self.error(d.with_help("relax or remove one of the conflicting constraints"));
    }

    fn alias_ast(&mut self, module: ModId, name: &str) -> Option<crate::ast::Type> {
        let item = self.scopes.lookup(module, name)?;
        match &self.loader.modules[item.module].ast.items[item.index].kind {
            ItemKind::TypeAlias(t) => Some(t.ty.clone()),
            _ => None,
        }
    }

    /// W0001 for imports nothing used; W0002 for definitions nothing used, in files that
    /// specify APIs (a file of shared definitions is meant to be imported).
    fn unused(&mut self) {
        let loader = self.loader;
        for (m, module) in loader.modules.iter().enumerate() {
            if module.is_std() {
                continue;
            }
            let mut by_use: HashMap<crate::diag::Span, bool> = HashMap::new();
            for import in self.scopes.imports[m].values() {
                // Used through this import, not merely used somewhere (stdlib groups use each other).
                let used = import.used.get();
                let entry = by_use.entry(import.span).or_insert(false);
                *entry |= used;
            }
            let mut unused: Vec<_> = by_use.into_iter().filter(|(_, used)| !used).map(|(s, _)| s).collect();
            unused.sort();
            for span in unused {
                let name = loader.map.slice(span).to_string();
                let what = if name == "*" { "nothing from this glob import is used".to_string() } else { format!("`{name}` is never used") };
                self.error(Diagnostic::new(codes::W0001, format!("unused import `{name}`")).with_label(span, what).with_help("remove it from the `use` item"));
            }
            let specifies = module.ast.items.iter().any(|i| matches!(i.kind, ItemKind::Api(_) | ItemKind::Rule(_)));
            if !specifies || !module.root {
                continue;
            }
            for (index, item) in module.ast.items.iter().enumerate() {
                let reusable = matches!(item.kind, ItemKind::Constraints(_) | ItemKind::Dtypes(_) | ItemKind::TypeAlias(_));
                let item_ref = ItemRef { module: m, index };
                if reusable && !self.used.contains(&item_ref) {
                    let name = item.kind.name().expect("reusable items are named");
                    self.error(
                        Diagnostic::new(codes::W0002, format!("`{}` is never used", name.name))
                            .with_label(name.span, format!("{} defined here", item.kind.keyword()))
                            .with_help("apply it, or remove it"),
                    );
                }
            }
        }
    }
}
