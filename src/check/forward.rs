//! `from` statements: some parameters of an API filled from the outputs of a call of another API
//! (a backward operator fed by its forward), checked once every API and its validated rules are
//! known, since the forward may be specified anywhere.
//!
//! The forward is called with the API's own parameters, constants, or `like(p, shape)` (a fresh
//! tensor for a forward input the API only knows the size of). Its constraints become the API's,
//! with its parameters replaced by what the call passes them: a conforming input is one the
//! forward accepts, so the bound parameters are consistent with the others. A constraint that
//! reads a forward parameter the call passes no parameter or scalar for is left out (it speaks of
//! a value the API does not choose).
use super::expr::param_text;
use super::items::api_signature;
use super::scope::ItemRef;
use super::symbols::hover_text;
use super::types::{const_value, value_fits};
use super::{classify, Checker};
use crate::ast::{self, ExprKind, ItemKind, StmtKind};
use crate::diag::suggest::closest;
use crate::diag::{codes, Diagnostic, Span};
use crate::spec::{value_text, ApiSpec, BinOp, Builtin, Constraint, FromSpec, Origin, ParamSpec, ParamType, Prop, TExpr, Value};
use crate::wire::case::{Arg, Bind, FwdArg, ShapePart};

/// The largest tensor a `like(p, shape)` argument builds: the generation limit of tensors.
pub const LIKE_MAX_NUMEL: i64 = 1000;

/// What a forward parameter stands for in the forward's constraints once inherited.
#[derive(Clone)]
enum Sub {
    /// The calling API's parameter.
    Param(usize),
    /// A scalar constant.
    Lit(Value),
    /// A fresh tensor of parameter `param`'s dtype whose shape is `shape` (an int list).
    Like { param: usize, shape: TExpr },
    /// Nothing the API chooses (a default, None, a list constant): constraints reading it are
    /// left out.
    Drop,
}

impl Checker<'_> {
    /// Checks the `from` statements of every API, records them in its `from` and adds the
    /// forward's constraints to its `requires`. `items` are the APIs' items, parallel to `apis`.
    pub(super) fn forward_statements(&mut self, apis: &mut [ApiSpec], items: &[ItemRef]) {
        let loader = self.loader;
        let body = |item: &ItemRef| match &loader.modules[item.module].ast.items[item.index].kind {
            ItemKind::Api(api) => Some(&api.body),
            _ => None,
        };
        let has_from: Vec<bool> = items.iter().map(|it| body(it).is_some_and(|b| b.stmts.iter().any(|s| matches!(s.kind, StmtKind::From(_))))).collect();
        for (i, item) in items.iter().enumerate() {
            let Some(body) = body(item) else { continue };
            let mut first: Option<Span> = None;
            for stmt in &body.stmts {
                let StmtKind::From(f) = &stmt.kind else { continue };
                if let Some(prev) = first {
                    self.error(
                        Diagnostic::new(codes::E0005, format!("`{}` has two `from` statements", apis[i].name))
                            .with_label(stmt.span, "a second forward here")
                            .with_secondary(prev, "first `from` here")
                            .with_help("an API is fed by one forward call; bind every parameter it fills in one `from` block"),
                    );
                    continue;
                }
                first = Some(stmt.span);
                if let Some((spec, inherited)) = self.forward_stmt(i, apis, &has_from, item.module, f, stmt.span) {
                    apis[i].requires.extend(inherited);
                    apis[i].from = Some(spec);
                }
            }
        }
    }

    /// One `from` statement of API `i`: the checked statement and the constraints it adds.
    fn forward_stmt(&mut self, i: usize, apis: &[ApiSpec], has_from: &[bool], module: usize, f: &ast::From, span: Span) -> Option<(FromSpec, Vec<Constraint>)> {
        let api = &apis[i];
        let name = &f.callee.name;
        let Some(j) = apis.iter().position(|a| &a.name == name) else {
            let mut d = Diagnostic::new(codes::E0024, format!("no API `{name}` to call in `from`")).with_label(f.callee.span, "not an api item of a checked or imported file");
            d = match closest(name, apis.iter().map(|a| a.name.as_str())) {
                Some(s) => d.with_help(format!("did you mean `{s}`?")),
                None => d.with_help(format!("specify the forward as an `api` item (`sfz init {name}` writes one), in this file or one it imports")),
            };
            self.error(d);
            return None;
        };
        let callee = &apis[j];
        if callee.name == api.name {
            self.error(
                Diagnostic::new(codes::E0024, format!("`{name}` cannot be its own forward"))
                    .with_label(f.callee.span, "the API this statement belongs to")
                    .with_help("name the API whose outputs feed this one's parameters"),
            );
            return None;
        }
        if has_from[j] {
            self.error(
                Diagnostic::new(codes::E0024, format!("the forward `{name}` has a `from` statement itself"))
                    .with_label(f.callee.span, "its inputs come from another call")
                    .with_secondary(callee.span, "specified here")
                    .with_help("call the first API of the chain: sfz follows one `from` per case"),
            );
            return None;
        }
        self.reference(f.callee.span, Some(callee.span), || {
            hover_text(&api_signature(callee), "The forward: called first on the case's arguments; its outputs fill the parameters bound below.")
        });
        let who = format!("`{name}`");
        let args = self.forward_args(api, callee, &who, &f.args, f.callee.span);
        let binds = self.binds(api, callee, &who, &f.binds, args.as_deref());
        let (args, binds) = (args?, binds?);
        let (args, subs): (Vec<FwdArg>, Vec<Sub>) = args.into_iter().unzip();
        let mut inherited = Vec::new();
        for c in &callee.requires {
            if let Some(t) = inherit(&c.expr, &subs) {
                inherited.push(classify::constraint(t, c.span, format!("{} (from `{name}`)", c.text), Origin::Inline, &api.params));
            }
        }
        let file = self.loader.modules[module].file;
        // A bound parameter is given (the worker fills a tensor argument only).
        for (b, fb) in binds.iter().zip(&f.binds) {
            if api.params[b.param].optional {
                let t = TExpr::Binary(BinOp::Ne, Box::new(TExpr::Param(b.param)), Box::new(TExpr::Lit(Value::None)));
                inherited.push(classify::constraint(t, fb.span, format!("{} != None (bound by `from`)", api.params[b.param].name), Origin::Inline, &api.params));
            }
        }
        // A `like(p, shape)` shape is one a generated tensor may have.
        for (a, s) in f.args.iter().zip(args.iter()) {
            let FwdArg::Like { shape, .. } = s else { continue };
            let texpr = shape_texpr(shape);
            let text = shape_source(self, file, &a.value);
            let nonneg = TExpr::Binary(BinOp::Ge, Box::new(TExpr::Each(Box::new(texpr.clone()))), Box::new(TExpr::Lit(Value::Int(0))));
            let small = TExpr::Binary(BinOp::Le, Box::new(TExpr::Call(Builtin::Prod, vec![texpr])), Box::new(TExpr::Lit(Value::Int(LIKE_MAX_NUMEL))));
            inherited.push(classify::constraint(nonneg, a.value.span, format!("{text}[*] >= 0 (a shape for `{name}`)"), Origin::Inline, &api.params));
            inherited.push(classify::constraint(small, a.value.span, format!("prod({text}) <= {LIKE_MAX_NUMEL} (a shape for `{name}`)"), Origin::Inline, &api.params));
        }
        let callee = Box::new(ApiSpec { requires: Vec::new(), ensures: Vec::new(), relations: Vec::new(), from: None, ..callee.clone() });
        Some((FromSpec { callee, span, args, binds }, inherited))
    }

    /// The forward's arguments, one per parameter of `callee`, with what each stands for in its
    /// constraints; None after an error.
    fn forward_args(&mut self, api: &ApiSpec, callee: &ApiSpec, who: &str, args: &[ast::CallArg], at: Span) -> Option<Vec<(FwdArg, Sub)>> {
        let params = &callee.params;
        let mut given: Vec<Option<(FwdArg, Sub)>> = vec![None; params.len()];
        let mut ok = true;
        let bound = self.bind_call_args(who, params, args, codes::E0025);
        for (a, index) in args.iter().zip(bound) {
            let Some(x) = index else {
                ok = false;
                continue;
            };
            match self.forward_arg(api, &params[x], who, &a.value) {
                Some(v) => given[x] = Some(v),
                None => ok = false,
            }
        }
        let mut out = Vec::with_capacity(params.len());
        for (p, g) in params.iter().zip(given) {
            match g {
                Some(v) => out.push(v),
                None if p.default.is_none() && !p.optional => {
                    if ok {
                        self.error(
                            Diagnostic::new(codes::E0014, format!("{who} needs an argument for `{}`", p.name))
                                .with_label(at, format!("`{}` is not given", p.name))
                                .with_secondary(p.span, "declared here without a default")
                                .with_help(format!("pass one of this API's parameters or a constant: `{} = ...`", p.name)),
                        );
                    }
                    ok = false;
                }
                None => out.push((FwdArg::Default, default_sub(p))),
            }
        }
        ok.then_some(out)
    }

    /// One argument of the forward call, for its parameter `want`.
    fn forward_arg(&mut self, api: &ApiSpec, want: &ParamSpec, who: &str, e: &ast::Expr) -> Option<(FwdArg, Sub)> {
        let e = strip(e);
        let mismatch = |c: &mut Self, found: String, span: Span| {
            c.error(
                Diagnostic::new(codes::E0025, format!("`{}` of {who} cannot take {found}", want.name))
                    .with_label(span, format!("expected {}", describe(want)))
                    .with_secondary(want.span, "declared here")
                    .with_help("pass a parameter of the same type, or a constant that fits it"),
            );
        };
        if let ExprKind::Name(n) = &e.kind {
            if let Some(k) = api.param_index(n) {
                let p = &api.params[k];
                self.reference(e.span, Some(p.span), || hover_text(&param_text(p), "A parameter."));
                if !compatible(p, want) {
                    mismatch(self, format!("`{n}`, {}", describe(p)), e.span);
                    return None;
                }
                return Some((FwdArg::Param(k), Sub::Param(k)));
            }
        }
        if let ExprKind::Call(f, args) = &e.kind {
            if matches!(&f.kind, ExprKind::Name(n) if n == "like") {
                return self.like_arg(api, want, who, args, e.span);
            }
        }
        let Some(v) = const_value(e) else {
            let what = match &e.kind {
                ExprKind::Name(n) => format!("`{n}` is not a parameter of `{}`", api.name),
                _ => "not a parameter, a constant or `like(param, shape)`".to_string(),
            };
            self.error(
                Diagnostic::new(codes::E0025, format!("invalid argument for `{}` of {who}", want.name))
                    .with_label(e.span, what)
                    .with_help("a forward is called with this API's parameters, constants, or `like(param, shape)` (a fresh tensor of that shape)"),
            );
            return None;
        };
        if (v == Value::None && !want.optional) || (v != Value::None && !value_fits(&v, &want.ty)) {
            mismatch(self, format!("`{}`", value_text(&v)), e.span);
            return None;
        }
        let sub = match &v {
            Value::Bool(_) | Value::Int(_) | Value::Float(_) | Value::Str(_) | Value::Dtype(_) => Sub::Lit(v.clone()),
            _ => Sub::Drop,
        };
        Some((FwdArg::Value(v.to_arg(&want.ty).unwrap_or(Arg::None)), sub))
    }

    /// `like(p, shape)`: a fresh tensor with `p`'s recipe and this shape.
    fn like_arg(&mut self, api: &ApiSpec, want: &ParamSpec, who: &str, args: &[ast::CallArg], span: Span) -> Option<(FwdArg, Sub)> {
        let help = "write `like(grad_output, input_size)`: a tensor built as `grad_output` is (its dtype and values), with the shape `input_size` (an int list parameter, or a list of int parameters and constants); or `like(output)`, with `output`'s own shape";
        if want.ty != ParamType::Tensor {
            self.error(
                Diagnostic::new(codes::E0025, format!("`{}` of {who} is not a tensor", want.name))
                    .with_label(span, "`like(...)` builds a tensor")
                    .with_secondary(want.span, format!("declared {}", describe(want)))
                    .with_help("pass a parameter or a constant"),
            );
            return None;
        }
        let (p, shape) = match args {
            [p, shape] => (p, Some(shape)),
            [p] => (p, None),
            _ => {
                self.error(
                    Diagnostic::new(codes::E0014, "`like` in a forward call takes one or two arguments").with_label(span, format!("called with {}", args.len())).with_help(help),
                );
                return None;
            }
        };
        let bad = |c: &mut Self, span: Span, what: &str| {
            c.error(Diagnostic::new(codes::E0025, format!("invalid `like` argument for `{}` of {who}", want.name)).with_label(span, what.to_string()).with_help(help));
        };
        let tensor = match &strip(&p.value).kind {
            ExprKind::Name(n) => api.param_index(n).filter(|&k| api.params[k].ty == ParamType::Tensor),
            _ => None,
        };
        let Some(tensor) = tensor else {
            bad(self, p.value.span, "not a Tensor parameter of this API");
            return None;
        };
        // `like(output)`: a forward input the API knows only by what the forward made of it
        // (`sigmoid_backward`'s `output`), built as that parameter is, with its shape.
        let Some(shape) = shape else {
            let parts = vec![ShapePart::Shape(tensor)];
            return Some((FwdArg::Like { param: tensor, shape: parts.clone() }, Sub::Like { param: tensor, shape: shape_texpr(&parts) }));
        };
        let int_param = |n: &str| api.param_index(n).filter(|&k| !api.params[k].optional && api.params[k].ty == ParamType::Int);
        let parts: Option<Vec<ShapePart>> = match &strip(&shape.value).kind {
            ExprKind::Name(n) => match api.param_index(n) {
                Some(k) if !api.params[k].optional && matches!(api.params[k].ty, ParamType::IntList(_)) => Some(vec![ShapePart::List(k)]),
                Some(k) if int_param(n) == Some(k) => Some(vec![ShapePart::Int(k)]),
                _ => None,
            },
            ExprKind::List(items) => items
                .iter()
                .map(|item| match &strip(item).kind {
                    ExprKind::Name(n) => int_param(n).map(ShapePart::Int),
                    _ => match const_value(item) {
                        Some(Value::Int(v)) if v >= 0 => Some(ShapePart::Const(v)),
                        _ => None,
                    },
                })
                .collect(),
            _ => None,
        };
        let Some(parts) = parts else {
            bad(self, shape.value.span, "not a shape: an int list parameter, or a list of int parameters and constants");
            return None;
        };
        let texpr = shape_texpr(&parts);
        Some((FwdArg::Like { param: tensor, shape: parts }, Sub::Like { param: tensor, shape: texpr }))
    }

    /// The bindings of a `from` block; None after an error. `args` are the forward's arguments
    /// when they checked (a parameter passed to the forward cannot also be bound).
    fn binds(&mut self, api: &ApiSpec, callee: &ApiSpec, who: &str, binds: &[ast::FromBind], args: Option<&[(FwdArg, Sub)]>) -> Option<Vec<Bind>> {
        let mut out: Vec<(Bind, Span)> = Vec::new();
        let mut ok = true;
        let help = "bind a Tensor parameter to an output: `indices: result.1;`, or to a fresh tensor of its shape and dtype: `grad_output: like(result.0);`";
        for b in binds {
            let docs = b.docs.iter().map(|d| d.text.as_str()).collect::<Vec<_>>().join("\n");
            let Some(k) = api.param_index(&b.param.name) else {
                ok = false;
                let mut d = Diagnostic::new(codes::E0026, format!("`{}` has no parameter `{}` to bind", api.name, b.param.name)).with_label(b.param.span, "no such parameter");
                d = match closest(&b.param.name, api.params.iter().map(|p| p.name.as_str())) {
                    Some(s) => d.with_help(format!("did you mean `{s}`?")),
                    None => d.with_help(help),
                };
                self.error(d);
                continue;
            };
            let p = &api.params[k];
            self.reference(b.param.span, Some(p.span), || hover_text(&param_text(p), if docs.is_empty() { "A parameter filled from the forward's output." } else { &docs }));
            if p.ty != ParamType::Tensor {
                ok = false;
                self.error(
                    Diagnostic::new(codes::E0026, format!("cannot bind `{}`: it is not a tensor", p.name))
                        .with_label(b.param.span, format!("declared {}", describe(p)))
                        .with_secondary(p.span, "declared here")
                        .with_help("a forward's outputs fill Tensor parameters; pass the others to the forward instead"),
                );
                continue;
            }
            if let Some((_, prev)) = out.iter().find(|(o, _)| o.param == k) {
                ok = false;
                self.error(
                    Diagnostic::new(codes::E0026, format!("`{}` is bound twice", p.name))
                        .with_label(b.param.span, "bound again here")
                        .with_secondary(*prev, "first bound here")
                        .with_help("bind each parameter once"),
                );
                continue;
            }
            if args.is_some_and(|a| a.iter().any(|(f, _)| matches!(f, FwdArg::Param(q) if *q == k))) {
                ok = false;
                self.error(
                    Diagnostic::new(codes::E0026, format!("`{}` is passed to the forward and bound to its output", p.name))
                        .with_label(b.param.span, "bound here")
                        .with_help("a parameter is either an input of the forward or filled from its outputs"),
                );
                continue;
            }
            match self.bind_value(callee, who, &b.value) {
                Some((output, like)) => out.push((Bind { param: k, output, like }, b.param.span)),
                None => ok = false,
            }
        }
        ok.then(|| out.into_iter().map(|(b, _)| b).collect())
    }

    /// `result`, `result.k`, `result.name`, or `like(...)` of one: (output, like).
    fn bind_value(&mut self, callee: &ApiSpec, who: &str, e: &ast::Expr) -> Option<(usize, bool)> {
        let mut e = strip(e);
        let mut like = false;
        if let ExprKind::Call(f, args) = &e.kind {
            if matches!(&f.kind, ExprKind::Name(n) if n == "like") && args.len() == 1 && args[0].name.is_none() {
                like = true;
                e = strip(&args[0].value);
            }
        }
        let outs = &callee.returns;
        let count = format!("it has {} output{}", outs.len(), if outs.len() == 1 { "" } else { "s" });
        let output = match &e.kind {
            ExprKind::Name(n) if n == "result" => {
                if outs.len() != 1 {
                    self.error(
                        Diagnostic::new(codes::E0026, format!("which output of {who}?"))
                            .with_label(e.span, count)
                            .with_help(format!("name one: `result.0` .. `result.{}`", outs.len().saturating_sub(1))),
                    );
                    return None;
                }
                0
            }
            ExprKind::Field(base, field) if matches!(&strip(base).kind, ExprKind::Name(n) if n == "result") => {
                let found = match field.name.parse::<usize>() {
                    Ok(k) => (k < outs.len()).then_some(k),
                    Err(_) => outs.iter().position(|r| r.name == field.name),
                };
                let Some(k) = found else {
                    let mut d = Diagnostic::new(codes::E0026, format!("{who} has no output `{}`", field.name)).with_label(field.span, count);
                    let named: Vec<&str> = outs.iter().map(|r| r.name.as_str()).filter(|n| !n.starts_with("result")).collect();
                    d = match closest(&field.name, named.iter().copied()) {
                        Some(s) => d.with_help(format!("did you mean `result.{s}`?")),
                        None => d.with_help("outputs count from 0: `result.0`"),
                    };
                    self.error(d);
                    return None;
                };
                k
            }
            _ => {
                self.error(
                    Diagnostic::new(codes::E0026, "a bound parameter takes an output of the forward")
                        .with_label(e.span, "not `result`, `result.k` or `like(result.k)`")
                        .with_help("write `indices: result.1;` (the output itself) or `grad_output: like(result.0);` (fresh values of its shape and dtype)"),
                );
                return None;
            }
        };
        self.reference(e.span, None, || hover_text(&format!("{}: {}", outs[output].name, outs[output].ty.describe()), "An output of the forward."));
        if outs[output].ty != ParamType::Tensor {
            self.error(
                Diagnostic::new(codes::E0026, format!("output {output} of {who} is not a tensor"))
                    .with_label(e.span, format!("it is {}", outs[output].ty.describe()))
                    .with_help("bind a Tensor parameter to a Tensor output"),
            );
            return None;
        }
        if outs[..output].iter().any(|r| r.ty == ParamType::TensorList) {
            self.error(
                Diagnostic::new(codes::E0026, format!("output {output} of {who} follows a list of tensors"))
                    .with_label(e.span, "its position among the flattened outputs is not known before the call")
                    .with_help("bind outputs before the list"),
            );
            return None;
        }
        Some((output, like))
    }
}

fn strip(e: &ast::Expr) -> &ast::Expr {
    match &e.kind {
        ExprKind::Paren(inner) => strip(inner),
        _ => e,
    }
}

/// A parameter's type for messages: "an int[2]", "a Tensor?".
fn describe(p: &ParamSpec) -> String {
    let t = format!("{}{}", p.ty.describe(), if p.optional { "?" } else { "" });
    let vowel = t.starts_with(|c: char| "aeiouAEIOU".contains(c));
    format!("{} {t}", if vowel { "an" } else { "a" })
}

/// Whether every value `have` holds is one `want` accepts.
pub fn compatible(have: &ParamSpec, want: &ParamSpec) -> bool {
    if have.optional && !want.optional {
        return false;
    }
    use ParamType as T;
    match (&have.ty, &want.ty) {
        (a, b) if a == b => true,
        (T::IntList(a), T::IntList(b)) | (T::FloatList(a), T::FloatList(b)) | (T::BoolList(a), T::BoolList(b)) => a.is_none() || b.is_none(),
        (T::IntList(_), T::FloatList(_)) => true,
        (T::Int, T::Float | T::Scalar | T::IntList(_)) => true,
        (T::Float, T::Scalar) | (T::Scalar, T::Float) => true,
        (T::Enum(_), T::Str) => true,
        (T::Enum(a), T::Enum(b)) => a.iter().all(|v| b.contains(v)),
        _ => false,
    }
}

/// What an omitted forward parameter stands for: its default when a scalar.
fn default_sub(p: &ParamSpec) -> Sub {
    match &p.default {
        Some(v @ (Value::Bool(_) | Value::Int(_) | Value::Float(_) | Value::Str(_) | Value::Dtype(_))) => Sub::Lit(v.clone()),
        _ => Sub::Drop,
    }
}

/// The shape of a `like` argument as an int-list expression.
fn shape_texpr(parts: &[ShapePart]) -> TExpr {
    match parts {
        [ShapePart::List(k)] => TExpr::Param(*k),
        [ShapePart::Shape(k)] => TExpr::Prop(Box::new(TExpr::Param(*k)), Prop::Shape),
        parts => TExpr::List(
            parts
                .iter()
                .map(|p| match p {
                    ShapePart::Int(k) | ShapePart::List(k) => TExpr::Param(*k),
                    ShapePart::Const(v) => TExpr::Lit(Value::Int(*v)),
                    // Only ever alone (`like(p)`), above.
                    ShapePart::Shape(k) => TExpr::Prop(Box::new(TExpr::Param(*k)), Prop::Shape),
                })
                .collect(),
        ),
    }
}

/// The source text of a `like(p, shape)` argument's shape.
fn shape_source(c: &Checker, file: crate::diag::FileId, like: &ast::Expr) -> String {
    match &strip(like).kind {
        ExprKind::Call(_, args) if args.len() == 2 => c.loader.map.get(file).slice(args[1].value.span).to_string(),
        _ => c.loader.map.get(file).slice(like.span).to_string(),
    }
}

/// A forward constraint over the calling API's parameters; None when it reads something the
/// call does not pass (see `Sub::Drop`) or the values of a fresh tensor.
fn inherit(e: &TExpr, subs: &[Sub]) -> Option<TExpr> {
    let go = |x: &TExpr| inherit(x, subs).map(Box::new);
    Some(match e {
        TExpr::Param(p) => match subs.get(*p)? {
            Sub::Param(k) => TExpr::Param(*k),
            Sub::Lit(v) => TExpr::Lit(v.clone()),
            Sub::Like { .. } | Sub::Drop => return None,
        },
        TExpr::Prop(base, prop) => {
            if let TExpr::Param(p) = &**base {
                if let Some(Sub::Like { param, shape }) = subs.get(*p) {
                    return match prop {
                        Prop::Shape => Some(shape.clone()),
                        Prop::Ndim => Some(match shape {
                            TExpr::List(items) => TExpr::Lit(Value::Int(items.len() as i64)),
                            s => TExpr::Prop(Box::new(s.clone()), Prop::Len),
                        }),
                        Prop::Numel => Some(TExpr::Call(Builtin::Prod, vec![shape.clone()])),
                        Prop::Dtype => Some(TExpr::Prop(Box::new(TExpr::Param(*param)), Prop::Dtype)),
                        Prop::Values | Prop::Len => None,
                    };
                }
            }
            TExpr::Prop(go(base)?, *prop)
        }
        TExpr::Lit(_) | TExpr::Result(_) | TExpr::Bound(_) => e.clone(),
        TExpr::Index(a, b) => TExpr::Index(go(a)?, go(b)?),
        TExpr::Each(a) => TExpr::Each(go(a)?),
        TExpr::Unary(op, a) => TExpr::Unary(*op, go(a)?),
        TExpr::Binary(op, a, b) => TExpr::Binary(*op, go(a)?, go(b)?),
        TExpr::Range { lo, hi, inclusive } => TExpr::Range { lo: go(lo)?, hi: go(hi)?, inclusive: *inclusive },
        TExpr::List(items) => TExpr::List(items.iter().map(|x| inherit(x, subs)).collect::<Option<_>>()?),
        TExpr::If(c, a, b) => TExpr::If(go(c)?, go(a)?, go(b)?),
        TExpr::Forall { var, range, body } => TExpr::Forall { var: *var, range: go(range)?, body: go(body)? },
        TExpr::Exists { var, range, body } => TExpr::Exists { var: *var, range: go(range)?, body: go(body)? },
        TExpr::Call(b, args) => TExpr::Call(*b, args.iter().map(|x| inherit(x, subs)).collect::<Option<_>>()?),
    })
}

#[cfg(test)]
mod tests {
    use crate::check::check_text;
    use crate::wire::case::{Bind, FwdArg, ShapePart};
    use std::path::Path;

    const POOL: &str = r#"
api torch.ops.aten.max_pool2d_with_indices(input: Tensor, kernel_size: int[2], stride: int[2], padding: int[2] = [0, 0]) -> (Tensor, Tensor) {
    input.ndim == 4;
    kernel_size[*] >= 1;
    padding[*] <= kernel_size[*] / 2;
    input.values in -1.0..1.0;
}

api torch.ops.aten.max_pool2d_with_indices_backward(grad_output: Tensor, input: Tensor, kernel_size: int[2], stride: int[2], padding: int[2], indices: Tensor?) {
    from torch.ops.aten.max_pool2d_with_indices(input, kernel_size, stride, padding) {
        grad_output: like(result.0);
        indices: result.1;
    }
}
"#;

    #[test]
    fn a_backward_inherits_its_forwards_constraints() {
        let checked = check_text(Path::new("t.sfz"), POOL);
        assert!(!checked.has_errors(), "{:?}", checked.diags);
        let b = &checked.spec.apis[1];
        let from = b.from.as_ref().expect("from");
        assert_eq!(from.callee.name, "torch.ops.aten.max_pool2d_with_indices");
        assert_eq!(from.args, vec![FwdArg::Param(1), FwdArg::Param(2), FwdArg::Param(3), FwdArg::Param(4)]);
        assert_eq!(from.binds, vec![Bind { param: 0, output: 0, like: true }, Bind { param: 5, output: 1, like: false }]);
        let texts: Vec<&str> = b.requires.iter().map(|c| c.text.as_str()).collect();
        assert!(texts.contains(&"input.ndim == 4 (from `torch.ops.aten.max_pool2d_with_indices`)"), "{texts:?}");
        assert!(texts.contains(&"indices != None (bound by `from`)"), "{texts:?}");
        assert_eq!(b.requires.len(), 5, "{texts:?}");
        assert!(b.requires.iter().all(|c| c.params.iter().all(|&p| p < b.params.len())));
    }

    #[test]
    fn like_builds_a_forward_input_from_a_size() {
        let src = r#"
api torch.upsample_nearest2d(input: Tensor, output_size: int[2]) {
    input.ndim == 4;
    input.shape[0] >= 1;
}
api torch.upsample_nearest2d_backward(grad_output: Tensor, output_size: int[2], input_size: int[4]) {
    from torch.upsample_nearest2d(like(grad_output, input_size), output_size) {
        grad_output: like(result);
    }
}
"#;
        let checked = check_text(Path::new("t.sfz"), src);
        assert!(!checked.has_errors(), "{:?}", checked.diags);
        let b = &checked.spec.apis[1];
        assert_eq!(b.from.as_ref().unwrap().args[0], FwdArg::Like { param: 0, shape: vec![ShapePart::List(2)] });
        let texts: Vec<&str> = b.requires.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "input.ndim == 4 (from `torch.upsample_nearest2d`)",
                "input.shape[0] >= 1 (from `torch.upsample_nearest2d`)",
                "input_size[*] >= 0 (a shape for `torch.upsample_nearest2d`)",
                "prod(input_size) <= 1000 (a shape for `torch.upsample_nearest2d`)"
            ]
        );
        assert!(b.requires.iter().all(|c| c.params == [2]), "{:?}", b.requires);
    }

    #[test]
    fn like_of_one_parameter_builds_a_forward_input_of_its_shape() {
        let src = r#"
api torch.tanh(input: Tensor) -> Tensor {
    input.ndim >= 1;
}
api torch.tanh_backward(grad_output: Tensor, output: Tensor) -> Tensor {
    from torch.tanh(input = like(output)) {
        grad_output: like(result);
        output: result;
    }
}
"#;
        let checked = check_text(Path::new("t.sfz"), src);
        assert!(!checked.has_errors(), "{:?}", checked.diags);
        let b = &checked.spec.apis[1];
        assert_eq!(b.from.as_ref().unwrap().args[0], FwdArg::Like { param: 1, shape: vec![ShapePart::Shape(1)] });
        let texts: Vec<&str> = b.requires.iter().map(|c| c.text.as_str()).collect();
        assert!(texts.contains(&"input.ndim >= 1 (from `torch.tanh`)"), "{texts:?}");
        // Three arguments are none of `like`'s forms.
        let bad = check_text(Path::new("t.sfz"), &src.replace("like(output)", "like(output, output, output)"));
        assert!(bad.diags.iter().any(|d| d.code == crate::diag::codes::E0014), "{:?}", bad.diags);
    }
}
