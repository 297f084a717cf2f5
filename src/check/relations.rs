//! `relation` statements: metamorphic relations between calls (`f(s * x) == f(x)`), checked and
//! lowered to `variant::Relation` in one walk, as `expr` does for constraints.
//!
//! Relations are checked after every API has been read, because one may call any loaded API
//! wherever it is defined. A constraint set's relations are checked once on their own, with the
//! set's parameters standing for the API's (`self` is whatever API the set is applied to); applied
//! in an API or rule body, they are instantiated by substituting the application's arguments for
//! the set's parameters in the syntax tree (keyword names of calls included, so `self(x = x * s)`
//! becomes `self(input = input * s)`) and lowered again against the API.
use std::collections::HashMap;

use super::expr::param_text;
use super::items::api_signature;
use super::scope::ItemRef;
use super::symbols::hover_text;
use super::Checker;
use crate::ast::{self, BinOp, ExprKind, ItemKind, StmtKind, UnOp};
use crate::diag::suggest::closest;
use crate::diag::{codes, Diagnostic, Span};
use crate::spec::{ApiSpec, Origin, ParamSpec, ParamType, RelationSpec, ReturnSpec};
use crate::wire::variant::relation::{Callee, RelExpr, RelFn, RelOp, Relation, DEFAULT_TOLERANCES};
use crate::wire::variant::{Tolerance, Tolerances};

/// What names mean in the relations of one API, rule or constraint set.
pub struct RelCtx<'a> {
    pub module: usize,
    /// The parameters `self` takes and names refer to: the API's, or the constraint set's.
    pub params: &'a [ParamSpec],
    /// The outputs; None in a constraint set, whose outputs are those of the API it is applied to.
    pub outputs: Option<&'a [ReturnSpec]>,
    /// Every API loaded: the ones a relation may call.
    pub apis: &'a [ApiSpec],
    /// Who the relations belong to, for messages: "`torch.exp`", "constraint set `odd`".
    pub owner: String,
    /// The `forall` variable of the relation being checked, and where it is bound.
    var: Option<(String, Span)>,
}

impl<'a> RelCtx<'a> {
    pub fn new(module: usize, params: &'a [ParamSpec], outputs: Option<&'a [ReturnSpec]>, apis: &'a [ApiSpec], owner: String) -> Self {
        RelCtx { module, params, outputs, apis, owner, var: None }
    }
}

/// What a relation expression computes: numbers (elementwise on tensors) or conditions (guards).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Num,
    Bool,
}

/// The elementwise functions a relation may call, for messages and hovers.
const FUNCTIONS: &str = "abs, log, exp, sqrt, log1p, expm1, finite and pow";
/// Built-in functions of constraints that are not elementwise.
const NOT_ELEMENTWISE: &[&str] = &["len", "min", "max", "prod", "contiguous", "broadcastable"];

impl Checker<'_> {
    /// Checks the `relation` statements of a body (and those of the constraint sets it applies),
    /// appending each to `out`; a name used twice is E0005.
    pub(super) fn body_relations(&mut self, ctx: &mut RelCtx, body: &ast::Body, origin: &Origin, out: &mut Vec<RelationSpec>) {
        let loader = self.loader;
        let file = loader.modules[ctx.module].file;
        for stmt in &body.stmts {
            match &stmt.kind {
                StmtKind::Relation { name, tolerances, expr } => {
                    let docs = stmt.docs.iter().map(|d| d.text.as_str()).collect::<Vec<_>>().join("\n");
                    self.reference(name.span, Some(name.span), || hover_text(&format!("relation {}", name.name), &docs));
                    let span = name.span.to(expr.span);
                    let text = format!("relation {}", loader.map.get(file).slice(span));
                    if let Some(relation) = self.relation(ctx, name, tolerances, expr, text) {
                        self.push_relation(ctx, out, RelationSpec { relation, span, origin: origin.clone() });
                    }
                }
                StmtKind::Require { expr, .. } => {
                    if let Some((item, _, args)) = self.set_application(ctx.module, expr) {
                        let whole = loader.map.get(file).slice(expr.span).to_string();
                        self.instantiate(ctx, item, args, expr.span, &whole, origin, out);
                    }
                }
                _ => {}
            }
        }
    }

    /// Checks a constraint set's relations on their own: `self` takes the set's parameters.
    pub(super) fn check_set_relations(&mut self, item: ItemRef, apis: &[ApiSpec]) {
        let loader = self.loader;
        let ItemKind::Constraints(set) = &loader.modules[item.module].ast.items[item.index].kind else { return };
        if !set.body.stmts.iter().any(|s| matches!(s.kind, StmtKind::Relation { .. })) {
            return;
        }
        let params = self.set_params(item);
        let mut ctx = RelCtx::new(item.module, &params, None, apis, format!("constraint set `{}`", set.name.name));
        let body = ast::Body { stmts: set.body.stmts.iter().filter(|s| matches!(s.kind, StmtKind::Relation { .. })).cloned().collect(), span: set.body.span };
        self.body_relations(&mut ctx, &body, &Origin::Inline, &mut Vec::new());
    }

    /// Adds a relation unless its API already has one of that name (E0005).
    pub(super) fn push_relation(&mut self, ctx: &RelCtx, out: &mut Vec<RelationSpec>, r: RelationSpec) {
        if let Some(prev) = out.iter().find(|p| p.relation.name == r.relation.name) {
            self.error(
                Diagnostic::new(codes::E0005, format!("relation `{}` is defined twice for {}", r.relation.name, ctx.owner))
                    .with_label(r.span, "defined again here")
                    .with_secondary(prev.span, "first defined here")
                    .with_help("give each relation of an API its own name (findings are named by it)"),
            );
            return;
        }
        out.push(r);
    }

    /// The relations of constraint set `item` applied to `args` (and of the sets it applies).
    /// Mistakes inside the set were reported where it is defined; what goes wrong only in this
    /// application (a set parameter used as a keyword of `self` bound to something other than a
    /// parameter, say) is reported once, at the application.
    #[allow(clippy::too_many_arguments)]
    fn instantiate(&mut self, ctx: &mut RelCtx, item: ItemRef, args: &[ast::CallArg], at: Span, whole: &str, origin: &Origin, out: &mut Vec<RelationSpec>) {
        // A cycle is reported by the constraint expansion of the same statement.
        if self.expanding.contains(&item) {
            return;
        }
        let loader = self.loader;
        let module = &loader.modules[item.module];
        let ItemKind::Constraints(set) = &module.ast.items[item.index].kind else { return };
        let names: Vec<String> = set
            .params
            .iter()
            .filter_map(|p| match &p.kind {
                ast::ParamKind::Named { name, .. } => Some(name.name.clone()),
                ast::ParamKind::KwOnlyMarker => None,
            })
            .collect();
        // A wrong count is E0014 from the constraint expansion.
        if names.len() != args.len() {
            return;
        }
        let map: HashMap<String, ast::Expr> = names.into_iter().zip(args.iter().map(|a| a.value.clone())).collect();
        let set_name = set.name.name.clone();
        self.expanding.push(item);
        for stmt in &set.body.stmts {
            match &stmt.kind {
                StmtKind::Relation { name, tolerances, expr } => {
                    if self.has_errors_in(stmt.span) {
                        continue;
                    }
                    let expr = subst(expr, &map);
                    let text = format!("{whole}: relation {}", loader.map.get(module.file).slice(name.span.to(expr.span)));
                    self.quiet += 1;
                    let saved = self.captured.replace(Vec::new());
                    let lowered = self.relation(ctx, name, tolerances, &expr, text);
                    let caught = std::mem::replace(&mut self.captured, saved).unwrap_or_default();
                    self.quiet -= 1;
                    match (lowered, caught.into_iter().find(Diagnostic::is_error)) {
                        (Some(relation), None) => self.push_relation(ctx, out, RelationSpec { relation, span: at, origin: origin.clone() }),
                        (_, Some(first)) => {
                            let label = first.labels.iter().find(|l| l.primary).map_or(first.message.clone(), |l| l.message.clone());
                            self.error(
                                Diagnostic::new(first.code, format!("relation `{}` of `{set_name}` does not apply to {}", name.name, ctx.owner))
                                    .with_label(at, format!("{}: {label}", first.message))
                                    .with_secondary(name.span, "relation defined here")
                                    .with_help(first.help.unwrap_or_else(|| "pass the API's own parameters to the set's parameters".into())),
                            );
                        }
                        (None, None) => {}
                    }
                }
                StmtKind::Require { expr, .. } => {
                    if let Some((inner, _, inner_args)) = self.set_application(item.module, expr) {
                        let inner_args: Vec<ast::CallArg> = inner_args.iter().map(|a| ast::CallArg { name: a.name.clone(), value: subst(&a.value, &map) }).collect();
                        self.instantiate(ctx, inner, &inner_args, at, whole, origin, out);
                    }
                }
                _ => {}
            }
        }
        self.expanding.pop();
    }

    /// Checks one relation and lowers it; None after an error.
    pub(super) fn relation(&mut self, ctx: &mut RelCtx, name: &ast::Ident, tolerances: &[ast::CallArg], expr: &ast::Expr, text: String) -> Option<Relation> {
        ctx.var = None;
        let tolerances = self.tolerances(tolerances);
        let mut body = strip(expr);
        let mut scalars = Vec::new();
        let mut ok = true;
        if let ExprKind::Forall { var, range, body: inner } = &body.kind {
            match scalar_list(range) {
                Ok(values) => scalars = values,
                Err((span, why)) => {
                    ok = false;
                    self.error(
                        Diagnostic::new(codes::E0021, "the `forall` of a relation takes a list of numbers")
                            .with_label(span, why)
                            .with_help("write the values the variable takes: `forall s in [0.5, 2.0, 1e10]: ...`"),
                    );
                }
            }
            self.reference(var.span, Some(var.span), || hover_text(&format!("{}: float", var.name), "The relation's `forall` variable: each case uses one of its values."));
            ctx.var = Some((var.name.clone(), var.span));
            body = strip(inner);
        }
        let (guard, cmp) = match &body.kind {
            ExprKind::Binary(BinOp::Implies, g, c) => (Some(&**g), strip(c)),
            _ => (None, body),
        };
        let guard = guard.map(|g| self.rel_expect(ctx, g, Kind::Bool));
        let ExprKind::Binary(BinOp::Eq, l, r) = &cmp.kind else {
            self.error(
                Diagnostic::new(codes::E0021, "a relation must state `lhs == rhs`")
                    .with_label(cmp.span, "this is not a comparison with `==`")
                    .with_help("write `relation name: lhs == rhs;`, with an optional `forall s in [..]:` before it and a guard: `abs(x) < 10.0 => lhs == rhs`"),
            );
            return None;
        };
        let lhs = self.rel_expect(ctx, l, Kind::Num);
        let rhs = self.rel_expect(ctx, r, Kind::Num);
        let guard = match guard {
            Some(g) => Some(g?),
            None => None,
        };
        let (lhs, rhs, tolerances) = (lhs?, rhs?, tolerances?);
        ok.then(|| Relation { name: name.name.clone(), text, scalars, guard, lhs, rhs, tolerances })
    }

    /// `float32 = [rtol, atol], ...`: the defaults with these replaced.
    fn tolerances(&mut self, args: &[ast::CallArg]) -> Option<Tolerances> {
        let mut t = DEFAULT_TOLERANCES;
        let mut seen: Vec<&str> = Vec::new();
        let mut ok = true;
        let help = "write `[rtol, atol]` per dtype, two numbers >= 0: `relation r(float32 = [1e-4, 1e-5]): ...`";
        for a in args {
            let Some(key) = &a.name else {
                ok = false;
                self.error(Diagnostic::new(codes::E0022, "a relation's tolerance must name its dtype").with_label(a.value.span, "which dtype is this for?").with_help(help));
                continue;
            };
            let slot = match key.name.as_str() {
                "float16" => &mut t.float16,
                "bfloat16" => &mut t.bfloat16,
                "float32" => &mut t.float32,
                "float64" => &mut t.float64,
                other => {
                    ok = false;
                    self.error(
                        Diagnostic::new(codes::E0022, format!("no tolerance for `{other}`"))
                            .with_label(key.span, "not a floating dtype")
                            .with_help("tolerances are given for float16, bfloat16, float32 and float64 (complex dtypes use their components'; integers compare exactly)"),
                    );
                    continue;
                }
            };
            if seen.contains(&key.name.as_str()) {
                ok = false;
                self.error(Diagnostic::new(codes::E0022, format!("tolerance for `{}` given twice", key.name)).with_label(key.span, "given again here").with_help("keep one"));
                continue;
            }
            seen.push(&key.name);
            match tolerance_pair(&a.value) {
                Ok((rtol, atol)) => *slot = Tolerance { rtol, atol },
                Err(why) => {
                    ok = false;
                    self.error(Diagnostic::new(codes::E0022, format!("invalid tolerance for `{}`", key.name)).with_label(a.value.span, why).with_help(help));
                }
            }
        }
        ok.then_some(t)
    }

    /// Lowers `e`, which must compute `want`.
    fn rel_expect(&mut self, ctx: &mut RelCtx, e: &ast::Expr, want: Kind) -> Option<RelExpr> {
        let (x, kind) = self.rel_expr(ctx, e)?;
        if kind == want {
            return Some(x);
        }
        let d = match want {
            Kind::Bool => Diagnostic::new(codes::E0021, "a guard must be a condition")
                .with_label(e.span, "this is a number")
                .with_help("compare with `<`, `<=`, `>`, `>=`, combine with `and`, `or`, `not`, or test `finite(x)`"),
            Kind::Num => Diagnostic::new(codes::E0021, "expected a number or a tensor, found a condition")
                .with_label(e.span, "this is a condition")
                .with_help("conditions belong in the guard, before `=>`"),
        };
        self.error(d);
        None
    }

    fn rel_expr(&mut self, ctx: &mut RelCtx, e: &ast::Expr) -> Option<(RelExpr, Kind)> {
        use Kind::*;
        match &e.kind {
            ExprKind::Int(v) => Some((RelExpr::Const(*v as f64), Num)),
            ExprKind::Float { value, .. } => Some((RelExpr::Const(*value), Num)),
            ExprKind::Paren(inner) => self.rel_expr(ctx, inner),
            ExprKind::Name(name) => self.rel_name(ctx, name, e.span),
            ExprKind::Field(base, field) => self.rel_field(ctx, e, base, field),
            ExprKind::Call(callee, args) => self.rel_call(ctx, callee, args, e.span, None),
            ExprKind::Unary(UnOp::Neg, inner) => {
                let x = self.rel_expect(ctx, inner, Num)?;
                Some((if let RelExpr::Const(v) = x { RelExpr::Const(-v) } else { RelExpr::Unary(RelFn::Neg, Box::new(x)) }, Num))
            }
            ExprKind::Unary(UnOp::Not, inner) => Some((RelExpr::Unary(RelFn::Not, Box::new(self.rel_expect(ctx, inner, Bool)?)), Bool)),
            ExprKind::Binary(op, l, r) => {
                let (rop, arg, out) = match op {
                    BinOp::Add => (RelOp::Add, Num, Num),
                    BinOp::Sub => (RelOp::Sub, Num, Num),
                    BinOp::Mul => (RelOp::Mul, Num, Num),
                    BinOp::Div => (RelOp::Div, Num, Num),
                    BinOp::Lt => (RelOp::Lt, Num, Bool),
                    BinOp::Le => (RelOp::Le, Num, Bool),
                    BinOp::Gt => (RelOp::Gt, Num, Bool),
                    BinOp::Ge => (RelOp::Ge, Num, Bool),
                    BinOp::And => (RelOp::And, Bool, Bool),
                    BinOp::Or => (RelOp::Or, Bool, Bool),
                    BinOp::Eq | BinOp::Ne => {
                        return self.not_elementwise(e.span, "a second comparison with `==` or `!=`", "`==` compares the relation's two sides, once, after the guard")
                    }
                    BinOp::Implies => return self.not_elementwise(e.span, "a nested `=>`", "the guard comes once, before `lhs == rhs`: `guard => lhs == rhs`"),
                    BinOp::In | BinOp::NotIn => return self.not_elementwise(e.span, "a membership test", "a guard compares with `<`, `<=`, `>`, `>=`: `x > 0.0 and x < 1.0`"),
                    BinOp::Rem => {
                        return self.not_elementwise(
                            e.span,
                            "`%`",
                            "relations compute with `+ - * /`, unary `-` and the functions abs, log, exp, sqrt, log1p, expm1, finite and pow",
                        )
                    }
                };
                let a = self.rel_expect(ctx, l, arg);
                let b = self.rel_expect(ctx, r, arg);
                Some((RelExpr::Binary(rop, Box::new(a?), Box::new(b?)), out))
            }
            ExprKind::Str(_) => self.not_elementwise(e.span, "a string", "a relation computes with numbers and tensors"),
            ExprKind::Bool(_) | ExprKind::None => self.not_elementwise(e.span, "a constant that is not a number", "a relation computes with numbers and tensors"),
            ExprKind::List(_) => self.not_elementwise(e.span, "a list", "a relation computes elementwise; lists of values belong after `forall s in`"),
            ExprKind::Index(..) | ExprKind::Each(_) => self.not_elementwise(e.span, "indexing", "a relation is applied to every element; it cannot pick one"),
            ExprKind::Range { .. } => self.not_elementwise(e.span, "a range", "bound values in the guard: `x > 0.0 and x < 1.0 => ...`"),
            ExprKind::If { .. } => self.not_elementwise(e.span, "`if`", "restrict where the relation is checked with a guard: `cond => lhs == rhs`"),
            ExprKind::Forall { .. } | ExprKind::Exists { .. } => {
                self.not_elementwise(e.span, "a quantifier here", "a relation has at most one `forall`, at its start, over a list of numbers")
            }
        }
    }

    fn not_elementwise(&mut self, span: Span, what: &str, help: &str) -> Option<(RelExpr, Kind)> {
        self.error(Diagnostic::new(codes::E0021, "not an elementwise expression").with_label(span, format!("{what} is not allowed in a relation")).with_help(help.to_string()));
        None
    }

    fn rel_name(&mut self, ctx: &mut RelCtx, name: &str, span: Span) -> Option<(RelExpr, Kind)> {
        if let Some((var, def)) = &ctx.var {
            if var == name {
                self.reference(span, Some(*def), || hover_text(&format!("{name}: float"), "The relation's `forall` variable: each case uses one of its values."));
                return Some((RelExpr::Scalar, Kind::Num));
            }
        }
        if let Some(i) = ctx.params.iter().position(|p| p.name == name) {
            let p = &ctx.params[i];
            self.reference(span, Some(p.span), || hover_text(&param_text(p), "A parameter."));
            if !elementwise(&p.ty) {
                self.error(
                    Diagnostic::new(codes::E0021, format!("parameter `{name}` is {}, not a tensor or a number", p.ty.describe()))
                        .with_label(span, "not elementwise")
                        .with_help("a relation computes with Tensor, int, float, Scalar and bool parameters"),
                );
                return None;
            }
            return Some((RelExpr::Param(i), Kind::Num));
        }
        if name == "result" {
            return match ctx.outputs {
                None | Some([_]) => {
                    let ty = ctx.outputs.map_or("the API's first output".to_string(), |o| o[0].ty.describe());
                    self.reference(span, None, || hover_text(&format!("result: {ty}"), "The output of the original call."));
                    Some((RelExpr::Result(0), Kind::Num))
                }
                Some([]) => {
                    self.error(Diagnostic::new(codes::E0021, format!("{} has no outputs", ctx.owner)).with_label(span, "nothing to compare"));
                    None
                }
                Some(many) => {
                    self.error(
                        Diagnostic::new(codes::E0021, format!("{} has {} outputs", ctx.owner, many.len()))
                            .with_label(span, "which one?")
                            .with_help(format!("select one: `result.0` or `{}`", many[0].name)),
                    );
                    None
                }
            };
        }
        if let Some(k) = ctx.outputs.and_then(|o| o.iter().position(|r| r.name == name)) {
            self.reference(span, None, || hover_text(&format!("{name}: {}", ctx.outputs.unwrap_or_default()[k].ty.describe()), "An output of the original call."));
            return Some((RelExpr::Result(k), Kind::Num));
        }
        if name == "self" {
            self.error(
                Diagnostic::new(codes::E0021, "`self` must be called")
                    .with_label(span, "the API itself, not a value")
                    .with_help("`self(input = input * 2.0)` calls the API with an argument replaced; `result` is the original call's output"),
            );
            return None;
        }
        let mut candidates: Vec<String> = ctx.params.iter().map(|p| p.name.clone()).collect();
        candidates.extend(ctx.var.iter().map(|(v, _)| v.clone()));
        candidates.push("result".into());
        candidates.extend(ctx.outputs.unwrap_or_default().iter().map(|r| r.name.clone()));
        let mut d = Diagnostic::new(codes::E0002, format!("cannot find `{name}` in this relation")).with_label(span, "not a parameter, an output or the `forall` variable");
        d = match closest(name, candidates.iter().map(String::as_str)) {
            Some(s) => d.with_help(format!("did you mean `{s}`?")),
            None => d.with_help(format!(
                "a relation names parameters ({}), `result` and its `forall` variable",
                ctx.params.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", ")
            )),
        };
        self.error(d);
        None
    }

    fn rel_field(&mut self, ctx: &mut RelCtx, e: &ast::Expr, base: &ast::Expr, field: &ast::Ident) -> Option<(RelExpr, Kind)> {
        // A named output of a multi-output call or of `result`: the same as `.k`.
        let named = self.named_output(ctx, base, &field.name);
        let Some(k) = field.name.parse::<usize>().ok().or(named) else {
            if let Some(path) = path_text(e) {
                let root = path.split('.').next().unwrap_or_default();
                let value = ctx.params.iter().any(|p| p.name == root)
                    || ctx.var.as_ref().is_some_and(|(v, _)| v == root)
                    || root == "result"
                    || ctx.outputs.unwrap_or_default().iter().any(|r| r.name == root);
                if !value {
                    return self.not_elementwise(e.span, &format!("`{path}` without a call"), "call an API with its arguments: `torch.special.i0e(input)`");
                }
            }
            return self.not_elementwise(field.span, &format!("`.{}`", field.name), "a relation compares values elementwise: `.k` or an output's name selects an output of a call, but properties of a whole tensor (`.shape`, `.dtype`, ...) are not values");
        };
        match &base.kind {
            ExprKind::Name(n) if n == "result" && !ctx.params.iter().any(|p| &p.name == n) => {
                if let Some(outs) = ctx.outputs {
                    if k >= outs.len() {
                        self.error(
                            Diagnostic::new(codes::E0007, format!("{} has no output {k}", ctx.owner))
                                .with_label(e.span, format!("it has {} output{}", outs.len(), if outs.len() == 1 { "" } else { "s" }))
                                .with_help("outputs count from 0: `result.0`"),
                        );
                        return None;
                    }
                }
                self.reference(e.span, None, || hover_text(&format!("result.{k}"), "An output of the original call."));
                Some((RelExpr::Result(k), Kind::Num))
            }
            ExprKind::Call(callee, args) => self.rel_call(ctx, callee, args, e.span, Some(k)),
            _ => self.not_elementwise(e.span, &format!("`.{k}` here"), "`.N` selects an output of `result` or of a call: `self(x = -x).1`"),
        }
    }

    /// The index of output `name` of what `base` computes (`result`, `self(...)` or an API call),
    /// when its outputs are known and one has that name.
    fn named_output(&self, ctx: &RelCtx, base: &ast::Expr, name: &str) -> Option<usize> {
        let outputs: &[ReturnSpec] = match &strip(base).kind {
            ExprKind::Name(n) if n == "result" && !ctx.params.iter().any(|p| &p.name == n) => ctx.outputs?,
            ExprKind::Call(callee, _) => match path_text(callee)?.as_str() {
                "self" => ctx.outputs?,
                path => &ctx.apis.iter().find(|a| a.name == path)?.returns,
            },
            _ => return None,
        };
        outputs.iter().position(|r| r.name == name)
    }

    /// A call: an elementwise function, `self(...)`, or another API; `output` is `.N` after it.
    fn rel_call(&mut self, ctx: &mut RelCtx, callee: &ast::Expr, args: &[ast::CallArg], span: Span, output: Option<usize>) -> Option<(RelExpr, Kind)> {
        let Some(path) = path_text(callee) else {
            return self.not_elementwise(callee.span, "calling this", "a relation calls the functions abs, log, exp, sqrt, log1p, expm1, finite and pow, `self(...)` or an API");
        };
        let function = RelFn::from_name(&path).map(Some).or_else(|| (path == "pow").then_some(None));
        if let Some(f) = function {
            let sig = if f.is_none() { "pow(a, b)".to_string() } else { format!("{path}(x)") };
            self.reference(callee.span, None, || hover_text(&sig, "An elementwise function of relations."));
            if let Some(k) = output {
                return self.not_elementwise(span, &format!("`.{k}` after `{path}`"), "`.N` selects an output of `self(...)` or of an API call");
            }
            let want = if f.is_none() { 2 } else { 1 };
            if args.len() != want || args.iter().any(|a| a.name.is_some()) {
                self.error(
                    Diagnostic::new(codes::E0014, format!("`{path}` takes {}", if want == 1 { "one argument" } else { "two arguments" }))
                        .with_label(span, format!("called with {}", args.len()))
                        .with_help(format!("write `{sig}`")),
                );
                return None;
            }
            let xs: Vec<Option<RelExpr>> = args.iter().map(|a| self.rel_expect(ctx, &a.value, Kind::Num)).collect();
            let mut xs = xs.into_iter().collect::<Option<Vec<_>>>()?.into_iter();
            let a = xs.next()?;
            return Some(match f {
                None => (RelExpr::Binary(RelOp::Pow, Box::new(a), Box::new(xs.next()?)), Kind::Num),
                Some(RelFn::Finite) => (RelExpr::Unary(RelFn::Finite, Box::new(a)), Kind::Bool),
                Some(f) => (RelExpr::Unary(f, Box::new(a)), Kind::Num),
            });
        }
        let (callee_id, who, params, outputs): (Callee, String, &[ParamSpec], Option<&[ReturnSpec]>) = if path == "self" {
            self.reference(callee.span, None, || {
                hover_text("self(...)", "The API the relation belongs to, called again with the arguments given replaced and the others as in the case.")
            });
            (Callee::Itself, "`self`".to_string(), ctx.params, ctx.outputs)
        } else if let Some(api) = ctx.apis.iter().find(|a| a.name == path) {
            self.reference(callee.span, Some(api.span), || hover_text(&api_signature(api), ""));
            (Callee::Api(path.clone()), format!("`{path}`"), &api.params[..], Some(&api.returns[..]))
        } else if NOT_ELEMENTWISE.contains(&path.as_str()) {
            return self.not_elementwise(callee.span, &format!("`{path}`"), &format!("the functions of relations are {FUNCTIONS}"));
        } else {
            // E0021 rather than E0002: what a relation may call is its own short list.
            let mut d = Diagnostic::new(codes::E0021, format!("unknown function or API `{path}` in a relation"))
                .with_label(callee.span, "not a function of relations, `self`, or a loaded api item");
            let names: Vec<&str> = ctx.apis.iter().map(|a| a.name.as_str()).chain(["self", "abs", "log", "exp", "sqrt", "log1p", "expm1", "finite", "pow"]).collect();
            d = match closest(&path, names) {
                Some(s) => d.with_help(format!("did you mean `{s}`?")),
                None => d.with_help(
                    "a relation calls `self(...)`, an API specified in a checked file or one it imports, or one of the functions abs, log, exp, sqrt, log1p, expm1, finite and pow",
                ),
            };
            self.error(d);
            return None;
        };
        let output = output.unwrap_or(0);
        if let Some(outs) = outputs {
            if output >= outs.len() {
                self.error(
                    Diagnostic::new(codes::E0007, format!("{who} has no output {output}"))
                        .with_label(span, format!("it has {} output{}", outs.len(), if outs.len() == 1 { "" } else { "s" }))
                        .with_help("outputs count from 0"),
                );
                return None;
            }
        }
        let args = self.rel_args(ctx, &who, params, args, span, matches!(callee_id, Callee::Api(_)));
        Some((RelExpr::Call { callee: callee_id, args: args?, output }, Kind::Num))
    }

    /// Maps a call's arguments to the callee's parameter indices. For another API, every
    /// parameter without a default must be given; `self` takes the case's for the rest.
    fn rel_args(&mut self, ctx: &mut RelCtx, who: &str, params: &[ParamSpec], args: &[ast::CallArg], span: Span, needs_all: bool) -> Option<Vec<(usize, RelExpr)>> {
        let mut out: Vec<(usize, RelExpr)> = Vec::new();
        let mut ok = true;
        let bound = self.bind_call_args(who, params, args, codes::E0023);
        for (a, index) in args.iter().zip(bound) {
            let value = self.rel_expect(ctx, &a.value, Kind::Num);
            let (Some(i), Some(value)) = (index, value) else {
                ok = false;
                continue;
            };
            if !elementwise(&params[i].ty) {
                ok = false;
                self.error(
                    Diagnostic::new(codes::E0023, format!("cannot pass a computed value to `{}`", param_text(&params[i])))
                        .with_label(a.value.span, "a relation passes tensors and numbers")
                        .with_help("leave this parameter as the case gives it (for `self`) or at its default"),
                );
            } else {
                out.push((i, value));
            }
        }
        if needs_all {
            for (i, p) in params.iter().enumerate() {
                if p.default.is_none() && !p.optional && !out.iter().any(|(j, _)| *j == i) && ok {
                    ok = false;
                    self.error(
                        Diagnostic::new(codes::E0014, format!("{who} needs an argument for `{}`", p.name))
                            .with_label(span, format!("`{}` is not given", p.name))
                            .with_secondary(p.span, "declared here without a default")
                            .with_help(format!("pass it: `{} = ...`", p.name)),
                    );
                }
            }
        }
        ok.then_some(out)
    }
}

/// Parameter types a relation computes with.
fn elementwise(ty: &ParamType) -> bool {
    matches!(ty, ParamType::Tensor | ParamType::Int | ParamType::Float | ParamType::Scalar | ParamType::Bool)
}

fn strip(e: &ast::Expr) -> &ast::Expr {
    match &e.kind {
        ExprKind::Paren(inner) => strip(inner),
        _ => e,
    }
}

/// `a.b.c` as text, for a name or a dotted path.
fn path_text(e: &ast::Expr) -> Option<String> {
    match &e.kind {
        ExprKind::Name(n) => Some(n.clone()),
        ExprKind::Field(base, f) if !f.name.starts_with(|c: char| c.is_ascii_digit()) => Some(format!("{}.{}", path_text(base)?, f.name)),
        _ => None,
    }
}

/// The values of `forall s in [..]`, or where and why it is not a list of numbers.
fn scalar_list(range: &ast::Expr) -> Result<Vec<f64>, (Span, String)> {
    let ExprKind::List(items) = &strip(range).kind else {
        return Err((range.span, "not a list of numbers".into()));
    };
    if items.is_empty() {
        return Err((range.span, "the list is empty".into()));
    }
    items.iter().map(|i| i.number().ok_or((i.span, "not a number".into()))).collect()
}

/// `[rtol, atol]`: two numbers, neither negative nor NaN.
fn tolerance_pair(e: &ast::Expr) -> Result<(f64, f64), String> {
    let ExprKind::List(items) = &strip(e).kind else { return Err("expected `[rtol, atol]`, a list of two numbers".into()) };
    if items.len() != 2 {
        return Err(format!("expected two numbers `[rtol, atol]`, found {}", items.len()));
    }
    let mut v = [0.0; 2];
    for (k, item) in items.iter().enumerate() {
        let which = ["rtol", "atol"][k];
        match item.number() {
            Some(x) if x >= 0.0 => v[k] = x,
            Some(x) if x < 0.0 => return Err(format!("{which} is negative")),
            Some(_) => return Err(format!("{which} is not a number")),
            None => return Err(format!("{which} is not a number literal")),
        }
    }
    Ok((v[0], v[1]))
}

/// `e` with a constraint set's parameters replaced by the application's arguments. A keyword of
/// a call that names a parameter bound to a bare name is renamed too (`self(x = ..)`).
fn subst(e: &ast::Expr, map: &HashMap<String, ast::Expr>) -> ast::Expr {
    let mut e = e.clone();
    subst_in(&mut e, map);
    e
}

fn subst_in(e: &mut ast::Expr, map: &HashMap<String, ast::Expr>) {
    match &mut e.kind {
        ExprKind::Name(n) => {
            if let Some(r) = map.get(n.as_str()) {
                *e = r.clone();
            }
        }
        ExprKind::Field(b, _) | ExprKind::Each(b) | ExprKind::Paren(b) | ExprKind::Unary(_, b) => subst_in(b, map),
        ExprKind::Index(a, b) | ExprKind::Binary(_, a, b) | ExprKind::Range { lo: a, hi: b, .. } => {
            subst_in(a, map);
            subst_in(b, map);
        }
        ExprKind::Call(callee, args) => {
            // The callee names a function or an API, never a set's parameter.
            if !matches!(callee.kind, ExprKind::Name(_)) && path_text(callee).is_none() {
                subst_in(callee, map);
            }
            for a in args {
                if let Some(k) = &mut a.name {
                    if let Some(ast::Expr { kind: ExprKind::Name(p), .. }) = map.get(k.name.as_str()) {
                        k.name = p.clone();
                    }
                }
                subst_in(&mut a.value, map);
            }
        }
        ExprKind::List(xs) => xs.iter_mut().for_each(|x| subst_in(x, map)),
        ExprKind::If { cond, then, els } => {
            subst_in(cond, map);
            subst_in(then, map);
            if let Some(x) = els {
                subst_in(x, map);
            }
        }
        ExprKind::Forall { var, range, body } | ExprKind::Exists { var, range, body } => {
            subst_in(range, map);
            if map.contains_key(&var.name) {
                let mut inner = map.clone();
                inner.remove(&var.name);
                subst_in(body, &inner);
            } else {
                subst_in(body, map);
            }
        }
        ExprKind::Int(_) | ExprKind::Float { .. } | ExprKind::Str(_) | ExprKind::Bool(_) | ExprKind::None => {}
    }
}

#[cfg(test)]
mod tests {
    /// `trapz`'s homogeneity scales `y` alone; `layer_norm`'s scale invariance `input` and `eps`.
    #[test]
    fn the_parameters_the_scale_changes_are_those_a_call_of_itself_gives_s() {
        let text = "api torch.trapz(y: Tensor, x: Tensor) -> Tensor {\n    relation h: forall s in [4.0]: self(y = y * s, x = -x) == -s * result;\n}\napi torch.layer_norm(input: Tensor, normalized_shape: int[], eps: float = 1e-5) -> Tensor {\n    relation i: forall s in [4.0]: self(input = input * s, eps = eps * s * s) == result;\n}\n";
        let checked = crate::check::check_text(std::path::Path::new("t.sfz"), text);
        assert!(!checked.has_errors(), "{:?}", checked.diags);
        let scaled: Vec<Vec<usize>> = checked.spec.apis.iter().map(|a| a.relations[0].relation.scaled_params()).collect();
        assert_eq!(scaled, [vec![0], vec![0, 2]]);
    }
}
