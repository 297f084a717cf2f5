//! Items: APIs (parameters, defaults, returns, body), rules, constraint sets, dtype groups and
//! oracle clauses.
use super::expr::{param_text, Env};
use super::scope::ItemRef;
use super::symbols::{hover_text, TYPES};
use super::types::{const_value, param_type, value_fits, Ty};
use super::{classify, Checker};
use crate::ast::{self, ItemKind, ParamKind, StmtKind};
use crate::diag::suggest::closest;
use crate::diag::{codes, Diagnostic, Span};
use crate::spec::{value_text, ApiSpec, Constraint, OracleUse, Origin, ParamSpec, ParamType, RelationSpec, ReturnSpec, RuleMeta, RuleSource, RuleSpec, RuleStatus, TExpr, Value};
use crate::wire::case::DType;
use crate::wire::oracle::Oracle;

/// Oracles an API gets when it has no `oracles` clause.
pub const DEFAULT_ORACLES: &[Oracle] = &[Oracle::Crash, Oracle::Hang, Oracle::InternalError, Oracle::Oom];
/// The differential oracles an API without an `oracles` clause also gets, where they apply
/// (`gradient` where the API has a tensor output and may take a real floating tensor: its
/// finite differences are trusted only where they are, see `sfz-worker/src/runtime/gradient`).
pub const IMPLIED_ORACLES: &[Oracle] = &[Oracle::Precision, Oracle::Layout, Oracle::Out, Oracle::Inplace, Oracle::Gradient];

impl Checker<'_> {
    /// Reads a parameter list: names, types, optionality, keyword-only markers, defaults.
    pub fn params(&mut self, module: usize, params: &[ast::Param]) -> Vec<ParamSpec> {
        let mut out: Vec<ParamSpec> = Vec::new();
        let mut kw_only = false;
        let all_names: Vec<&str> = params
            .iter()
            .filter_map(|p| match &p.kind {
                ParamKind::Named { name, .. } => Some(name.name.as_str()),
                ParamKind::KwOnlyMarker => None,
            })
            .collect();
        let mut variadic_seen: Option<Span> = None;
        for p in params {
            let ParamKind::Named { name, ty, default, variadic } = &p.kind else {
                if let Some(star) = variadic_seen {
                    self.error(
                        Diagnostic::new(codes::E0027, "a bare `*` after a variadic parameter")
                            .with_label(p.span, "not allowed here")
                            .with_secondary(star, "the parameters after this one are already keyword-only")
                            .with_help("remove the `*`"),
                    );
                }
                kw_only = true;
                continue;
            };
            if let Some(prev) = out.iter().find(|q| q.name == name.name) {
                self.error(
                    Diagnostic::new(codes::E0005, format!("parameter `{}` is declared twice", name.name))
                        .with_label(name.span, "declared again here")
                        .with_secondary(prev.span, "first declared here"),
                );
                continue;
            }
            self.type_references(module, ty);
            let mut alias = |n: &str| self.type_alias(module, n);
            let mut diags = Vec::new();
            let resolved = param_type(ty, &mut alias, &mut diags);
            for d in diags {
                self.error(d);
            }
            let Some((kind, optional)) = resolved else { continue };
            if *variadic && !self.variadic_param(p, &kind, optional, kw_only, variadic_seen) {
                continue;
            }
            let default = default.as_ref().and_then(|d| self.default_value(d, &name.name, &kind, optional, &out, &all_names));
            let spec = ParamSpec { name: name.name.clone(), span: name.span, ty: kind, optional, kw_only, variadic: *variadic, default };
            if *variadic {
                // As in Python, what follows `*args` is passed by keyword.
                variadic_seen = Some(p.span);
                kw_only = true;
            }
            let docs = p.docs.iter().map(|d| d.text.as_str()).collect::<Vec<_>>().join("\n");
            self.reference(name.span, Some(name.span), || hover_text(&param_text(&spec), &docs));
            out.push(spec);
        }
        out
    }

    /// Whether a `*name: T[]` parameter is one Python can have: a list, without a default, not
    /// None, the only one, before any keyword-only parameter. Reports E0027 where not.
    fn variadic_param(&mut self, p: &ast::Param, kind: &ParamType, optional: bool, kw_only: bool, seen: Option<Span>) -> bool {
        let ParamKind::Named { name, default, .. } = &p.kind else { return false };
        let list = matches!(kind, ParamType::TensorList | ParamType::IntList(None) | ParamType::FloatList(None) | ParamType::BoolList(None));
        let problem = if !list || optional {
            Some(("a variadic parameter is a list of unfixed length", format!("declare it `*{}: Tensor[]` (or `int[]`, `float[]`, `bool[]`)", name.name)))
        } else if default.is_some() {
            Some(("a variadic parameter has no default: it may be given no values", "remove the default".to_string()))
        } else if seen.is_some() {
            Some(("Python takes one `*args` parameter", "make the second a list parameter".to_string()))
        } else if kw_only {
            Some(("a variadic parameter after `*`", "move it before the keyword-only parameters".to_string()))
        } else {
            None
        };
        let Some((message, help)) = problem else { return true };
        let mut d = Diagnostic::new(codes::E0027, format!("invalid variadic parameter `{}`", name.name)).with_label(p.span, message).with_help(help);
        if let Some(first) = seen {
            d = d.with_secondary(first, "the variadic parameter");
        }
        self.error(d);
        false
    }

    /// Hovers for the names in a written type: built-in types and aliases.
    pub fn type_references(&mut self, module: usize, ty: &ast::Type) {
        match &ty.kind {
            ast::TypeKind::Named(id) => {
                if let Some((name, doc)) = TYPES.iter().find(|(n, _)| *n == id.name) {
                    self.reference(id.span, None, || hover_text(name, doc));
                } else if let Some(item) = self.scopes.lookup(module, &id.name) {
                    self.reference_item(id.span, item);
                }
            }
            ast::TypeKind::List(t, _) | ast::TypeKind::Optional(t) => self.type_references(module, t),
            ast::TypeKind::Tuple(ts) | ast::TypeKind::Union(ts) => ts.iter().for_each(|t| self.type_references(module, t)),
            ast::TypeKind::StrLit(_) => {}
        }
    }

    fn default_value(&mut self, d: &ast::Expr, param: &str, ty: &ParamType, optional: bool, earlier: &[ParamSpec], all: &[&str]) -> Option<Value> {
        if let Some(v) = const_value(d) {
            if v == Value::None && !optional {
                self.error(
                    Diagnostic::new(codes::E0010, format!("`{param}` defaults to None but is not optional"))
                        .with_label(d.span, "None is not a value of this type")
                        .with_help(format!("declare it optional: `{param}: {}? = None`", ty.describe())),
                );
                return None;
            }
            if !value_fits(&v, ty) {
                self.error(
                    Diagnostic::new(codes::E0010, format!("default of `{param}` does not fit its type"))
                        .with_label(d.span, format!("expected a value of type {}", ty.describe()))
                        .with_note(format!("found `{}`", value_text(&v))),
                );
                return None;
            }
            return Some(v);
        }
        // Not a constant: name the problem precisely when it refers to a parameter.
        let mut names = Vec::new();
        collect_names(d, &mut names);
        if let Some((n, span)) = names.iter().find(|(n, _)| all.contains(&n.as_str())) {
            if earlier.iter().any(|p| &p.name == n) {
                self.error(
                    Diagnostic::new(codes::E0010, format!("default of `{param}` refers to parameter `{n}`"))
                        .with_label(*span, "defaults must be constants")
                        .with_help("express the relation as a constraint in the body instead"),
                );
            } else {
                self.error(
                    Diagnostic::new(codes::E0008, format!("parameter `{n}` is used before it is declared"))
                        .with_label(*span, format!("`{n}` is declared after `{param}`"))
                        .with_help("defaults are constants; relate parameters with constraints in the body"),
                );
            }
        } else {
            self.error(
                Diagnostic::new(codes::E0010, format!("default of `{param}` is not a constant")).with_label(d.span, "expected a literal, a list of literals, a dtype or None"),
            );
        }
        None
    }

    fn type_alias(&mut self, module: usize, name: &str) -> Option<ast::Type> {
        let item = self.scopes.lookup(module, name)?;
        match &self.loader.modules[item.module].ast.items[item.index].kind {
            ItemKind::TypeAlias(t) => {
                self.used.insert(item);
                Some(t.ty.clone())
            }
            _ => None,
        }
    }

    /// The dtypes of a `dtypes` item (memoised; None after an error or a cycle).
    pub fn dtype_group(&mut self, item: ItemRef) -> Option<Vec<DType>> {
        if let Some(v) = self.dtype_groups.get(&item) {
            return v.clone();
        }
        if !self.in_progress.insert(item) {
            let ItemKind::Dtypes(def) = &self.loader.modules[item.module].ast.items[item.index].kind else { return None };
            self.error(
                Diagnostic::new(codes::E0006, format!("dtype group `{}` is defined in terms of itself", def.name.name)).with_label(def.name.span, "cycle through this definition"),
            );
            return None;
        }
        let ItemKind::Dtypes(def) = &self.loader.modules[item.module].ast.items[item.index].kind else { return None };
        let value = def.value.clone();
        let mut env = Env::new(item.module, &[]);
        let (t, ty) = self.expr(&mut env, &value);
        let result = match t {
            TExpr::Lit(Value::DtypeSet(ds)) => Some(ds),
            _ => {
                if !ty.is_error() {
                    self.error(
                        Diagnostic::new(codes::E0006, "a dtype group must be a list of dtypes")
                            .with_label(value.span, format!("this is {}", ty.a()))
                            .with_help("write `dtypes name = [float32, float64];` or combine groups with `+`"),
                    );
                }
                None
            }
        };
        self.in_progress.remove(&item);
        self.dtype_groups.insert(item, result.clone());
        result
    }

    /// The parameters of a constraint set (checked once, memoised).
    pub fn set_params(&mut self, item: ItemRef) -> Vec<ParamSpec> {
        if let Some(p) = self.set_params.get(&item) {
            return p.clone();
        }
        let ItemKind::Constraints(set) = &self.loader.modules[item.module].ast.items[item.index].kind else { return Vec::new() };
        let params = set.params.clone();
        self.quiet += 1;
        let specs = self.params(item.module, &params);
        self.quiet -= 1;
        self.set_params.insert(item, specs.clone());
        specs
    }

    /// Checks a constraint set's body once on its own, with its parameters as the scope.
    pub fn check_constraint_set(&mut self, item: ItemRef, set: &ast::ConstraintSet) {
        let params = self.params(item.module, &set.params);
        self.reference_item(set.name.span, item);
        self.body_scope(set.body.span, &params, false);
        self.set_params.insert(item, params.clone());
        for stmt in &set.body.stmts {
            match &stmt.kind {
                StmtKind::Require { expr, .. } => {
                    let mut env = Env::new(item.module, &params);
                    self.constraint(&mut env, expr);
                }
                // Checked once every API is known (`relations`).
                StmtKind::Relation { .. } => {}
                _ => self.misplaced(stmt, "a constraint set holds constraints and relations"),
            }
        }
    }

    pub(super) fn misplaced(&mut self, stmt: &ast::Stmt, why: &str) {
        self.error(
            Diagnostic::new(codes::E0016, "statement not allowed here")
                .with_label(stmt.span, why.to_string())
                .with_help("`let` belongs in programs; `from` in APIs; `ensures` and `oracles` in APIs and rules; `relation` in APIs, rules and constraint sets"),
        );
    }

    /// Checks an API item into an `ApiSpec`.
    pub fn check_api(&mut self, module: usize, item: &ast::Item, api: &ast::Api) -> ApiSpec {
        let aten = self.api_attrs(item);
        let params = self.params(module, &api.params);
        let returns = self.returns(module, api.returns.as_ref());
        let file = self.loader.modules[module].file;
        let mut spec = ApiSpec {
            name: api.path.name.clone(),
            span: api.path.span,
            aten,
            params,
            returns,
            requires: Vec::new(),
            ensures: Vec::new(),
            oracles: Vec::new(),
            oracles_written: false,
            refuted_oracles: Vec::new(),
            relations: Vec::new(),
            from: None,
        };
        let docs = item.docs.iter().map(|d| d.text.as_str()).collect::<Vec<_>>().join("\n");
        self.reference(api.path.span, Some(api.path.span), || hover_text(&api_signature(&spec), &docs));
        self.body_scope(api.body.span, &spec.params, true);
        let mut saw_oracles = false;
        for stmt in &api.body.stmts {
            match &stmt.kind {
                StmtKind::Require { expr, .. } => {
                    let cs = self.requirement(module, &spec.params, expr, file, Origin::Inline);
                    spec.requires.extend(cs);
                }
                StmtKind::Ensure(expr) => {
                    let c = self.postcondition(module, &spec.params, &spec.returns, expr, file, Origin::Inline);
                    spec.ensures.push(c);
                }
                StmtKind::Oracles(refs) => {
                    saw_oracles = true;
                    for r in refs {
                        if let Some(u) = self.oracle_use(module, r) {
                            if !spec.oracles.iter().any(|o: &OracleUse| o.name == u.name) {
                                spec.oracles.push(u);
                            }
                        }
                    }
                }
                // Checked once every API is known: a relation (or a `from`) may call any of them.
                StmtKind::Relation { .. } | StmtKind::From(_) => {}
                StmtKind::Let(..) => self.misplaced(stmt, "an API body holds constraints, `ensures`, `oracles`, relations and `from`"),
            }
        }
        spec.oracles_written = saw_oracles;
        if !saw_oracles {
            spec.oracles = DEFAULT_ORACLES.iter().map(|n| OracleUse { name: n.to_string(), span: api.path.span, args: Vec::new(), written: false }).collect();
            let implied = self.implied_oracles(module, api.path.span);
            spec.oracles.extend(implied);
        }
        spec
    }

    /// One `ensures` statement.
    fn postcondition(&mut self, module: usize, params: &[ParamSpec], returns: &[ReturnSpec], expr: &ast::Expr, file: crate::diag::FileId, origin: Origin) -> Constraint {
        let mut env = Env::new(module, params);
        env.results = Some(returns);
        let t = self.constraint(&mut env, expr);
        let text = self.loader.map.get(file).slice(expr.span).to_string();
        classify::constraint(t, expr.span, text, origin, params)
    }

    /// One `requires` statement: a constraint, or a constraint set applied (several constraints).
    pub(super) fn requirement(&mut self, module: usize, params: &[ParamSpec], expr: &ast::Expr, file: crate::diag::FileId, origin: Origin) -> Vec<Constraint> {
        let mut env = Env::new(module, params);
        let whole = self.loader.map.get(file).slice(expr.span).to_string();
        if let Some((item, name, args)) = self.set_application(module, expr) {
            if let ast::ExprKind::Call(callee, _) = &expr.kind {
                self.reference_item(callee.span, item);
            }
            return self
                .expand_set(&mut env, item, name, args, expr.span)
                .into_iter()
                .map(|(t, text)| classify::constraint(t, expr.span, format!("{whole}: {text}"), origin.clone(), params))
                .collect();
        }
        let t = self.constraint(&mut env, expr);
        vec![classify::constraint(t, expr.span, whole, origin, params)]
    }

    fn returns(&mut self, module: usize, returns: Option<&ast::Returns>) -> Vec<ReturnSpec> {
        let read = |c: &mut Self, ty: &ast::Type| {
            let mut alias = |n: &str| c.type_alias(module, n);
            let mut diags = Vec::new();
            let r = param_type(ty, &mut alias, &mut diags);
            for d in diags {
                c.error(d);
            }
            r.map(|(t, _)| t)
        };
        match returns {
            None => vec![ReturnSpec { name: "result".into(), ty: ParamType::Tensor }],
            Some(ast::Returns::Single(ty)) => {
                if let ast::TypeKind::Tuple(elems) = &ty.kind {
                    if elems.iter().any(|e| matches!(&e.kind, ast::TypeKind::Named(n) if n.name == "Tensor")) {
                        return elems.iter().enumerate().filter_map(|(i, e)| read(self, e).map(|t| ReturnSpec { name: format!("result.{i}"), ty: t })).collect();
                    }
                }
                read(self, ty).map(|t| vec![ReturnSpec { name: "result".into(), ty: t }]).unwrap_or_default()
            }
            Some(ast::Returns::Named(fields)) => {
                let mut out: Vec<ReturnSpec> = Vec::new();
                for (name, ty) in fields {
                    if out.iter().any(|r| r.name == name.name) {
                        self.error(Diagnostic::new(codes::E0005, format!("output `{}` is declared twice", name.name)).with_label(name.span, "declared again here"));
                        continue;
                    }
                    if let Some(t) = read(self, ty) {
                        out.push(ReturnSpec { name: name.name.clone(), ty: t });
                    }
                }
                out
            }
        }
    }

    pub(super) fn oracle_use(&mut self, module: usize, r: &ast::OracleRef) -> Option<OracleUse> {
        let item = self.scopes.lookup(module, &r.name.name).filter(|i| matches!(self.loader.modules[i.module].ast.items[i.index].kind, ItemKind::Oracle(_)));
        let Some(item) = item else {
            let known = self.known_oracles();
            let mut d = Diagnostic::new(codes::E0011, format!("unknown oracle `{}`", r.name.name)).with_label(r.name.span, "no such oracle");
            d = match closest(&r.name.name, known.iter().map(String::as_str)) {
                Some(s) => d.with_help(format!("did you mean `{s}`?")),
                None => d.with_help(format!("the oracles are {}", known.join(", "))),
            };
            self.error(d);
            return None;
        };
        let decl_item = &self.loader.modules[item.module].ast.items[item.index];
        let ItemKind::Oracle(decl) = &decl_item.kind else { return None };
        self.reference_item(r.name.span, item);
        // The declaration was checked on its own; here it only supplies parameters.
        self.quiet += 1;
        let decl_params = self.params(item.module, &decl.params.clone());
        self.quiet -= 1;
        let mut args: Vec<(String, Value)> = Vec::new();
        for (i, a) in r.args.iter().enumerate() {
            let param = match &a.name {
                Some(n) => decl_params.iter().find(|p| p.name == n.name),
                None => decl_params.get(i),
            };
            let Some(param) = param else {
                let names: Vec<&str> = decl_params.iter().map(|p| p.name.as_str()).collect();
                let what = a.name.as_ref().map_or("a positional argument".to_string(), |n| format!("`{}`", n.name));
                self.error(
                    Diagnostic::new(codes::E0012, format!("oracle `{}` takes no {what}", r.name.name))
                        .with_label(a.name.as_ref().map_or(a.value.span, |n| n.span), "unknown argument")
                        .with_help(if names.is_empty() { "this oracle takes no arguments".to_string() } else { format!("it takes {}", names.join(", ")) }),
                );
                continue;
            };
            if args.iter().any(|(n, _)| *n == param.name) {
                self.error(Diagnostic::new(codes::E0012, format!("argument `{}` given twice", param.name)).with_label(a.value.span, "again here"));
                continue;
            }
            match const_value(&a.value) {
                Some(v) if value_fits(&v, &param.ty) && v != Value::None => args.push((param.name.clone(), float_if_float(v, &param.ty))),
                _ => self.error(
                    Diagnostic::new(codes::E0012, format!("invalid value for `{}`", param.name))
                        .with_label(a.value.span, format!("expected a constant of type {}", param.ty.describe())),
                ),
            }
        }
        let complete = self.complete_oracle_args(r, &decl_params, &args);
        Some(OracleUse { name: r.name.name.clone(), span: r.span, args: complete, written: !r.args.is_empty() })
    }

    /// Every parameter of an oracle gets a value: the argument, else the declared default.
    fn complete_oracle_args(&mut self, r: &ast::OracleRef, decl_params: &[ParamSpec], args: &[(String, Value)]) -> Vec<(String, Value)> {
        let mut complete = Vec::new();
        for p in decl_params {
            match (args.iter().find(|(n, _)| *n == p.name), &p.default) {
                (Some((_, v)), _) => complete.push((p.name.clone(), v.clone())),
                (None, Some(d)) => complete.push((p.name.clone(), float_if_float(d.clone(), &p.ty))),
                (None, None) => self.error(
                    Diagnostic::new(codes::E0012, format!("oracle `{}` needs a value for `{}`", r.name.name, p.name))
                        .with_label(r.span, format!("`{}` has no default", p.name))
                        .with_secondary(p.span, "declared here")
                        .with_help(format!("write `{}({} = ...)`", r.name.name, p.name)),
                ),
            }
        }
        complete
    }

    /// The differential oracles an API without an `oracles` clause gets, at their declared
    /// defaults (the plan drops those that cannot apply and those a rule refuted).
    fn implied_oracles(&mut self, module: usize, span: crate::diag::Span) -> Vec<OracleUse> {
        let mut uses = Vec::new();
        for oracle in IMPLIED_ORACLES {
            let name = oracle.as_str();
            let Some(item) = self.scopes.lookup(module, name) else { continue };
            let ItemKind::Oracle(decl) = &self.loader.modules[item.module].ast.items[item.index].kind else { continue };
            self.quiet += 1;
            let decl_params = self.params(item.module, &decl.params.clone());
            let r = ast::OracleRef { name: ast::Ident { name: name.to_string(), span }, args: Vec::new(), span };
            let args = self.complete_oracle_args(&r, &decl_params, &[]);
            self.quiet -= 1;
            uses.push(OracleUse { name: name.to_string(), span, args, written: false });
        }
        uses
    }

    /// W0004 for an oracle declared outside the stdlib: sfz runs only the oracles it implements,
    /// which `std::oracles` declares.
    pub fn check_oracle_decl(&mut self, item: ItemRef, decl: &ast::OracleDecl) {
        self.params(item.module, &decl.params);
        self.reference_item(decl.name.span, item);
        if !self.loader.modules[item.module].is_std() {
            self.error(
                Diagnostic::new(codes::W0004, format!("oracle `{}` has no implementation", decl.name.name))
                    .with_label(decl.name.span, "declared here, outside the stdlib")
                    .with_note("sfz runs only the oracles it implements, which `std::oracles` declares; this one never fires")
                    .with_help("use one of the stdlib's oracles, or implement it in sfz (src/oracle/) and declare it in stdlib/oracles.sfz"),
            );
        }
    }

    /// Names of every declared oracle (the prelude's).
    pub fn known_oracles(&self) -> Vec<String> {
        let Some(p) = self.scopes.prelude else { return Vec::new() };
        let mut names: Vec<String> = self.loader.modules[p]
            .ast
            .items
            .iter()
            .filter_map(|i| match &i.kind {
                ItemKind::Oracle(o) => Some(o.name.name.clone()),
                _ => None,
            })
            .collect();
        names.sort();
        names
    }

    /// `#[aten("aten::name.overload")]` is the one attribute an API takes.
    fn api_attrs(&mut self, item: &ast::Item) -> Option<String> {
        let mut aten = None;
        for a in &item.attrs {
            match (a.name.name.as_str(), a.args.as_slice()) {
                ("aten", [ast::AttrArg { key: None, value: ast::Lit::Str(s), .. }]) if s.contains("::") => aten = Some(s.clone()),
                ("aten", _) => self.error(
                    Diagnostic::new(codes::E0016, "malformed `aten` attribute")
                        .with_label(a.span, "expected one string naming an operator")
                        .with_help("write `#[aten(\"aten::embedding\")]` or `#[aten(\"aten::sum.dim_IntList\")]`"),
                ),
                (other, _) => self.error(
                    Diagnostic::new(codes::E0016, format!("unknown attribute `{other}` on an api"))
                        .with_label(a.name.span, "not an api attribute")
                        .with_help("an api takes `#[aten(\"aten::name.overload\")]`"),
                ),
            }
        }
        aten
    }

    /// Reads a rule's metadata attributes. A rule with none is a validated, manual rule.
    fn rule_meta(&mut self, item: &ast::Item, name: &str) -> RuleMeta {
        let mut meta = RuleMeta { name: name.to_string(), status: RuleStatus::Validated, source: RuleSource::Manual, confidence: None, evidence: Vec::new(), reason: None };
        for a in &item.attrs {
            let one_ident = match a.args.as_slice() {
                [ast::AttrArg { key: None, value: ast::Lit::Ident(s), .. }] => Some(s.as_str()),
                _ => None,
            };
            let bad = |c: &mut Self, want: &str| {
                c.error(Diagnostic::new(codes::E0016, format!("invalid `{}` attribute", a.name.name)).with_label(a.span, format!("expected {want}")));
            };
            match a.name.name.as_str() {
                "status" => match one_ident {
                    Some("candidate") => meta.status = RuleStatus::Candidate,
                    Some("validated") => meta.status = RuleStatus::Validated,
                    Some("rejected") => meta.status = RuleStatus::Rejected,
                    _ => bad(self, "`candidate`, `validated` or `rejected`"),
                },
                "source" => match one_ident {
                    Some("manual") => meta.source = RuleSource::Manual,
                    Some("llm") => meta.source = RuleSource::Llm,
                    Some("inferred") => meta.source = RuleSource::Inferred,
                    _ => bad(self, "`manual`, `llm` or `inferred`"),
                },
                "confidence" => match a.args.as_slice() {
                    [ast::AttrArg { key: None, value: ast::Lit::Float { value, .. }, .. }] if (0.0..=1.0).contains(value) => meta.confidence = Some(*value),
                    [ast::AttrArg { key: None, value: ast::Lit::Int(v @ 0..=1), .. }] => meta.confidence = Some(*v as f64),
                    _ => bad(self, "a number in 0..=1"),
                },
                "evidence" => {
                    for arg in &a.args {
                        match (&arg.key, &arg.value) {
                            (Some(k), ast::Lit::Int(v)) if *v >= 0 => meta.evidence.push((k.name.clone(), *v)),
                            _ => bad(self, "counts like `evidence(pass = 120, fail = 0)`"),
                        }
                    }
                }
                "reason" => match a.args.as_slice() {
                    [ast::AttrArg { key: None, value: ast::Lit::Str(s), .. }] => meta.reason = Some(s.clone()),
                    _ => bad(self, "one string, like `reason(\"transpose(x, 1, 1) is valid\")`"),
                },
                other => self.error(
                    Diagnostic::new(codes::E0016, format!("unknown attribute `{other}` on a rule"))
                        .with_label(a.name.span, "not a rule attribute")
                        .with_help("a rule takes status, source, confidence, evidence and reason"),
                ),
            }
        }
        meta
    }

    /// Checks a rule against its target API's parameters. Returns its constraints (in the
    /// `RuleSpec`), its relations and its `oracles`, whatever its status; the caller folds them
    /// into the API as the status says.
    pub fn check_rule(
        &mut self,
        module: usize,
        item: &ast::Item,
        rule: &ast::Rule,
        target: Option<&ApiSpec>,
        apis: &[ApiSpec],
    ) -> Option<(RuleSpec, Vec<RelationSpec>, Vec<OracleUse>)> {
        let meta = self.rule_meta(item, &rule.name.name);
        let Some(api) = target else {
            let mut d = Diagnostic::new(codes::E0002, format!("cannot find API `{}`", rule.target.name)).with_label(rule.target.span, "no api item with this name is loaded");
            if let Some(s) = closest(&rule.target.name, apis.iter().map(|a| a.name.as_str())) {
                d = d.with_help(format!("did you mean `{s}`?"));
            } else {
                d = d.with_help("a rule refines an api defined in a checked file or one it imports");
            }
            self.error(d);
            return None;
        };
        let file = self.loader.modules[module].file;
        self.reference(rule.target.span, Some(api.span), || hover_text(&api_signature(api), ""));
        self.body_scope(rule.body.span, &api.params, false);
        let mut constraints = Vec::new();
        let mut ensures = Vec::new();
        let mut oracles: Vec<OracleUse> = Vec::new();
        for stmt in &rule.body.stmts {
            match &stmt.kind {
                StmtKind::Require { expr, .. } => {
                    constraints.extend(self.requirement(module, &api.params, expr, file, Origin::Rule(meta.clone())));
                }
                StmtKind::Ensure(expr) => ensures.push(self.postcondition(module, &api.params, &api.returns, expr, file, Origin::Rule(meta.clone()))),
                StmtKind::Oracles(refs) => {
                    for r in refs {
                        if let Some(u) = self.oracle_use(module, r) {
                            if !oracles.iter().any(|o| o.name == u.name) {
                                oracles.push(u);
                            }
                        }
                    }
                }
                StmtKind::Relation { .. } => {}
                _ => self.misplaced(stmt, "a rule holds constraints, `ensures`, `oracles` and relations"),
            }
        }
        let mut ctx = super::relations::RelCtx::new(module, &api.params, Some(&api.returns), apis, format!("`{}`", api.name));
        let mut relations = Vec::new();
        self.body_relations(&mut ctx, &rule.body, &Origin::Rule(meta.clone()), &mut relations);
        Some((RuleSpec { meta, api: api.name.clone(), span: rule.name.span, constraints, ensures }, relations, oracles))
    }

    pub fn ty_of_param(p: &ParamSpec) -> Ty {
        Ty::of_param(&p.ty, p.optional)
    }

    pub fn span_of(&self, item: ItemRef) -> Span {
        self.loader.modules[item.module].ast.items[item.index].span
    }
}

fn collect_names(e: &ast::Expr, out: &mut Vec<(String, Span)>) {
    use ast::ExprKind::*;
    match &e.kind {
        Name(n) => out.push((n.clone(), e.span)),
        Field(b, _) | Each(b) | Paren(b) | Unary(_, b) => collect_names(b, out),
        Index(a, b) | Binary(_, a, b) | Range { lo: a, hi: b, .. } => {
            collect_names(a, out);
            collect_names(b, out);
        }
        Call(c, args) => {
            collect_names(c, out);
            args.iter().for_each(|a| collect_names(&a.value, out));
        }
        List(items) => items.iter().for_each(|i| collect_names(i, out)),
        _ => {}
    }
}

/// `api name(params) -> returns`, for hovers.
pub fn api_signature(api: &ApiSpec) -> String {
    let mut params = Vec::new();
    let mut kw = false;
    for p in &api.params {
        if p.kw_only && !kw {
            params.push("*".to_string());
            kw = true;
        }
        params.push(param_text(p));
    }
    let returns = match api.returns.as_slice() {
        [one] if one.name == "result" => one.ty.describe(),
        many => format!("({})", many.iter().map(|r| format!("{}: {}", r.name, r.ty.describe())).collect::<Vec<_>>().join(", ")),
    };
    format!("api {}({}) -> {returns}", api.name, params.join(", "))
}

/// A whole number given for a float parameter, as a float.
fn float_if_float(v: Value, ty: &ParamType) -> Value {
    match (v, ty) {
        (Value::Int(i), ParamType::Float) => Value::Float(i as f64),
        (v, _) => v,
    }
}
