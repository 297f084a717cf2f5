//! Expressions: name resolution, type checking and lowering to `TExpr` in one walk.
//! A user's mistake becomes a diagnostic and the `Ty::Error` type, which later checks accept
//! silently so that one mistake yields one message.
use std::collections::HashMap;

use super::scope::ItemRef;
use super::symbols::{hover_text, BUILTINS, PROPERTIES};
use super::types::{comparable, Ty};
use super::Checker;
use crate::ast::{self, ExprKind, ItemKind};
use crate::diag::suggest::closest;
use crate::diag::{codes, Diagnostic, Span};
use crate::spec::{BinOp, Builtin, ParamSpec, ParamType, Prop, ReturnSpec, TExpr, UnOp, Value};
use crate::wire::case::DType;

/// What names mean while checking one expression.
pub struct Env<'a> {
    pub module: usize,
    pub params: &'a [ParamSpec],
    /// Names standing for caller expressions while a constraint set is expanded.
    pub subst: Option<&'a HashMap<String, (TExpr, Ty)>>,
    /// The outputs, in `ensures`.
    pub results: Option<&'a [ReturnSpec]>,
    /// forall/exists variables in scope: name, id, type, where bound.
    pub bound: Vec<(String, u32, Ty, Span)>,
}

impl<'a> Env<'a> {
    pub fn new(module: usize, params: &'a [ParamSpec]) -> Self {
        Env { module, params, subst: None, results: None, bound: Vec::new() }
    }
}

/// Tensor properties and their types.
const TENSOR_PROPS: &[(&str, Prop)] = &[("dtype", Prop::Dtype), ("ndim", Prop::Ndim), ("shape", Prop::Shape), ("numel", Prop::Numel), ("values", Prop::Values)];

fn prop_ty(p: Prop) -> Ty {
    match p {
        Prop::Dtype => Ty::Dtype,
        Prop::Ndim | Prop::Numel | Prop::Len => Ty::Int,
        Prop::Shape => Ty::List(Box::new(Ty::Int)),
        Prop::Values => Ty::Values,
    }
}

impl Checker<'_> {
    /// Checks a constraint: a boolean expression.
    pub fn constraint(&mut self, env: &mut Env, e: &ast::Expr) -> TExpr {
        let (t, ty) = self.expr(env, e);
        self.expect_bool(&ty, e.span);
        t
    }

    pub fn expect_bool(&mut self, ty: &Ty, span: Span) {
        if !matches!(ty.strip_opt(), Ty::Bool | Ty::Error) {
            self.error(
                Diagnostic::new(codes::E0006, "constraint is not a boolean")
                    .with_label(span, format!("this is {}", ty.a()))
                    .with_help("a constraint is a condition, e.g. `input.ndim <= 4` or `dim in 0..input.ndim`"),
            );
        }
    }

    pub fn expr(&mut self, env: &mut Env, e: &ast::Expr) -> (TExpr, Ty) {
        match &e.kind {
            ExprKind::Int(v) => (TExpr::Lit(Value::Int(*v)), Ty::Int),
            ExprKind::Float { value, .. } => (TExpr::Lit(Value::Float(*value)), Ty::Float),
            ExprKind::Str(s) => (TExpr::Lit(Value::Str(s.clone())), Ty::Str),
            ExprKind::Bool(b) => (TExpr::Lit(Value::Bool(*b)), Ty::Bool),
            ExprKind::None => (TExpr::Lit(Value::None), Ty::None),
            ExprKind::Paren(inner) => self.expr(env, inner),
            ExprKind::Name(name) => self.name(env, name, e.span),
            ExprKind::Field(base, field) => self.field(env, base, field),
            ExprKind::Index(base, index) => {
                let (b, bty) = self.expr(env, base);
                let (i, ity) = self.expr(env, index);
                if !matches!(ity, Ty::Int | Ty::Error) {
                    self.error(Diagnostic::new(codes::E0006, "index is not an int").with_label(index.span, format!("this is {}", ity.a())));
                }
                let elem = self.element_type(&bty, base.span);
                (TExpr::Index(Box::new(b), Box::new(i)), elem)
            }
            ExprKind::Each(base) => {
                let (b, bty) = self.expr(env, base);
                let elem = self.element_type(&bty, base.span);
                (TExpr::Each(Box::new(b)), elem)
            }
            ExprKind::Call(callee, args) => self.call(env, callee, args, e.span),
            ExprKind::List(items) => self.list(env, items),
            ExprKind::Unary(op, inner) => {
                let (t, ty) = self.expr(env, inner);
                match op {
                    UnOp::Not => {
                        self.expect_bool(&ty, inner.span);
                        (TExpr::Unary(UnOp::Not, Box::new(t)), Ty::Bool)
                    }
                    UnOp::Neg => {
                        if !ty.is_numeric() {
                            self.mismatch(inner.span, "a number", &ty);
                            return (t, Ty::Error);
                        }
                        // Fold literals so `-1` is a constant, not an operation.
                        let folded = match t {
                            TExpr::Lit(Value::Int(v)) => TExpr::Lit(Value::Int(v.wrapping_neg())),
                            TExpr::Lit(Value::Float(v)) => TExpr::Lit(Value::Float(-v)),
                            t => TExpr::Unary(UnOp::Neg, Box::new(t)),
                        };
                        (folded, ty.strip_opt().clone())
                    }
                }
            }
            ExprKind::Binary(op, l, r) => self.binary(env, *op, l, r, e.span),
            ExprKind::Range { lo, hi, inclusive } => {
                let (l, lty) = self.expr(env, lo);
                let (h, hty) = self.expr(env, hi);
                for (ty, span) in [(&lty, lo.span), (&hty, hi.span)] {
                    if !ty.is_numeric() {
                        self.mismatch(span, "a number", ty);
                    }
                }
                let elem = if matches!(lty, Ty::Float) || matches!(hty, Ty::Float) { Ty::Float } else { Ty::Int };
                (TExpr::Range { lo: Box::new(l), hi: Box::new(h), inclusive: *inclusive }, Ty::Range(Box::new(elem)))
            }
            ExprKind::If { cond, then, els } => {
                let c = self.constraint(env, cond);
                let (t, tty) = self.expr(env, then);
                let (f, fty) = match els {
                    Some(els) => self.expr(env, els),
                    // `if c then x` is the implication `c => x`.
                    None => (TExpr::Lit(Value::Bool(true)), Ty::Bool),
                };
                if !comparable(&tty, &fty) {
                    self.error(
                        Diagnostic::new(codes::E0006, "`if` branches have different types")
                            .with_label(then.span, tty.describe())
                            .with_secondary(els.as_ref().map_or(e.span, |x| x.span), fty.describe()),
                    );
                }
                (TExpr::If(Box::new(c), Box::new(t), Box::new(f)), tty)
            }
            ExprKind::Forall { var, range, body } | ExprKind::Exists { var, range, body } => {
                let forall = matches!(e.kind, ExprKind::Forall { .. });
                let (r, rty) = self.expr(env, range);
                let var_ty = match &rty {
                    Ty::Range(elem) => (**elem).clone(),
                    Ty::List(elem) => (**elem).clone(),
                    Ty::Error => Ty::Error,
                    other => {
                        self.mismatch(range.span, "a range like `0..x.ndim` or a list", other);
                        Ty::Error
                    }
                };
                let id = self.next_var;
                self.next_var += 1;
                self.reference(var.span, Some(var.span), || hover_text(&format!("{}: {}", var.name, var_ty.describe()), "A variable bound by a quantifier."));
                env.bound.push((var.name.clone(), id, var_ty, var.span));
                let b = self.constraint(env, body);
                env.bound.pop();
                let (range, body) = (Box::new(r), Box::new(b));
                let t = if forall { TExpr::Forall { var: id, range, body } } else { TExpr::Exists { var: id, range, body } };
                (t, Ty::Bool)
            }
        }
    }

    fn name(&mut self, env: &mut Env, name: &str, span: Span) -> (TExpr, Ty) {
        if let Some((_, id, ty, def)) = env.bound.iter().rev().find(|(n, ..)| n == name) {
            let (id, ty, def) = (*id, ty.clone(), *def);
            self.reference(span, Some(def), || hover_text(&format!("{name}: {}", ty.describe()), "A variable bound by a quantifier."));
            return (TExpr::Bound(id), ty);
        }
        if let Some(subst) = env.subst {
            if let Some((t, ty)) = subst.get(name) {
                return (t.clone(), ty.clone());
            }
        }
        if let Some(i) = env.params.iter().position(|p| p.name == name) {
            let p = &env.params[i];
            self.reference(span, Some(p.span), || hover_text(&param_text(p), "A parameter."));
            return (TExpr::Param(i), Ty::of_param(&p.ty, p.optional));
        }
        if let Some(results) = env.results {
            if name == "result" {
                let tys: Vec<String> = results.iter().map(|r| r.ty.describe()).collect();
                let shown = if tys.len() == 1 { tys[0].clone() } else { format!("({})", tys.join(", ")) };
                self.reference(span, None, || hover_text(&format!("result: {shown}"), "The output of the call (in `ensures`)."));
                return match results {
                    [one] => (TExpr::Result(0), Ty::of_param(&one.ty, false)),
                    many => (TExpr::Lit(Value::None), Ty::Tuple(many.iter().map(|r| Ty::of_param(&r.ty, false)).collect())),
                };
            }
            if let Some(i) = results.iter().position(|r| r.name == name) {
                return (TExpr::Result(i), Ty::of_param(&results[i].ty, false));
            }
        }
        if let Some(d) = DType::from_name(name) {
            self.reference(span, None, || hover_text(&format!("dtype {}", d.name()), &format!("`torch.{}`", d.name())));
            return (TExpr::Lit(Value::Dtype(d)), Ty::Dtype);
        }
        if let Some(item) = self.scopes.lookup(env.module, name) {
            let module = &self.loader.modules[item.module];
            let ast_item = &module.ast.items[item.index];
            let def_span = ast_item.kind.name().map(|n| n.span);
            let docs = ast_item.docs.iter().map(|d| d.text.as_str()).collect::<Vec<_>>().join("\n");
            self.used.insert(item);
            if let ItemKind::Dtypes(_) = ast_item.kind {
                let set = self.dtype_group(item).unwrap_or_default();
                let names = set.iter().map(|d| d.name()).collect::<Vec<_>>().join(", ");
                self.reference(span, def_span, || hover_text(&format!("dtypes {name} = [{names}]"), &docs));
                return (TExpr::Lit(Value::DtypeSet(set)), Ty::DtypeSet);
            }
            let what = match ast_item.kind.keyword() {
                k @ ("api" | "oracle") => format!("an {k}"),
                k => format!("a `{k}` item"),
            };
            self.error(Diagnostic::new(codes::E0006, format!("`{name}` is a {what}, not a value")).with_label(span, "used as a value here").with_help(match ast_item.kind {
                ItemKind::Constraints(_) => format!("apply a constraint set as a statement: `{name}(...);`"),
                _ => "constraints compare parameters, their properties and constants".to_string(),
            }));
            return (TExpr::Lit(Value::None), Ty::Error);
        }
        self.unknown_name(env, name, span);
        (TExpr::Lit(Value::None), Ty::Error)
    }

    fn unknown_name(&mut self, env: &Env, name: &str, span: Span) {
        if let Some(why) = unsupported_dtype(name) {
            self.error(
                Diagnostic::new(codes::E0003, format!("dtype `{name}` is not supported"))
                    .with_label(span, "torch has this dtype; sfz cannot make tensors of it")
                    .with_note(why)
                    .with_help("leave the API's dtypes to those sfz generates, or leave the API unspecified for now"),
            );
            return;
        }
        let dtype_names: Vec<&str> = DType::ALL.iter().map(|d| d.name()).collect();
        let looks_like_dtype =
            ["float", "int", "uint", "complex", "bfloat", "bool", "half", "double"].iter().any(|p| name.starts_with(p)) || closest(name, dtype_names.iter().copied()).is_some();
        if looks_like_dtype {
            let mut d = Diagnostic::new(codes::E0003, format!("unknown dtype `{name}`")).with_label(span, "not a dtype");
            d = match closest(name, dtype_names.iter().copied()) {
                Some(s) => d.with_help(format!("did you mean `{s}`?")),
                None => d.with_help(format!("the dtypes are {}", dtype_names.join(", "))),
            };
            self.error(d);
            return;
        }
        let mut candidates: Vec<String> = env.params.iter().map(|p| p.name.clone()).collect();
        candidates.extend(env.bound.iter().map(|(n, ..)| n.clone()));
        if let Some(subst) = env.subst {
            candidates.extend(subst.keys().cloned());
        }
        if let Some(results) = env.results {
            candidates.push("result".into());
            candidates.extend(results.iter().map(|r| r.name.clone()));
        }
        candidates.extend(self.scopes.visible(env.module));
        let mut d = Diagnostic::new(codes::E0002, format!("cannot find `{name}` in this scope")).with_label(span, "not found");
        if let Some(s) = closest(name, candidates.iter().map(String::as_str)) {
            d = d.with_help(format!("did you mean `{s}`?"));
        } else if !env.params.is_empty() {
            let names: Vec<&str> = env.params.iter().map(|p| p.name.as_str()).collect();
            d = d.with_help(format!("the parameters are {}", names.join(", ")));
        }
        if env.results.is_none() && name == "result" {
            d = d.with_note("`result` names the output only in `ensures` clauses");
        }
        self.error(d);
    }

    fn field(&mut self, env: &mut Env, base: &ast::Expr, field: &ast::Ident) -> (TExpr, Ty) {
        let (b, bty) = self.expr(env, base);
        match bty.strip_opt() {
            Ty::Error => (b, Ty::Error),
            Ty::Tensor => match TENSOR_PROPS.iter().find(|(n, _)| *n == field.name) {
                Some(&(_, prop)) => {
                    self.property_hover(field);
                    (TExpr::Prop(Box::new(b), prop), prop_ty(prop))
                }
                None => self.no_property(field, &bty, &["dtype", "ndim", "shape", "numel", "values"]),
            },
            // A Scalar's kind (`alpha.dtype == int64`): int64, float64 or bool, as it is passed.
            Ty::Float if field.name == "dtype" && matches!(b, TExpr::Param(i) if env.params.get(i).is_some_and(|p| p.ty == ParamType::Scalar)) => {
                self.property_hover(field);
                (TExpr::Prop(Box::new(b), Prop::Dtype), Ty::Dtype)
            }
            Ty::List(_) if field.name == "len" => {
                self.property_hover(field);
                (TExpr::Prop(Box::new(b), Prop::Len), Ty::Int)
            }
            Ty::List(_) => self.no_property(field, &bty, &["len"]),
            Ty::Tuple(elems) => match field.name.parse::<usize>() {
                Ok(i) if i < elems.len() => (TExpr::Result(i), elems[i].clone()),
                _ => {
                    let n = elems.len();
                    self.error(
                        Diagnostic::new(codes::E0007, format!("no output `{}`", field.name))
                            .with_label(field.span, format!("the call returns {n} values: `.0` to `.{}`", n.saturating_sub(1))),
                    );
                    (b, Ty::Error)
                }
            },
            other => {
                let other = other.clone();
                self.no_property(field, &other, &[])
            }
        }
    }

    fn property_hover(&mut self, field: &ast::Ident) {
        if let Some((name, ty, doc)) = PROPERTIES.iter().find(|(n, ..)| *n == field.name) {
            self.reference(field.span, None, || hover_text(&format!("{name}: {ty}"), doc));
        }
    }

    fn no_property(&mut self, field: &ast::Ident, ty: &Ty, available: &[&str]) -> (TExpr, Ty) {
        let mut d = Diagnostic::new(codes::E0007, format!("no property `{}` on {}", field.name, ty.a())).with_label(field.span, "unknown property");
        d = match (closest(&field.name, available.iter().copied()), available.is_empty()) {
            (Some(s), _) => d.with_help(format!("did you mean `{s}`?")),
            (None, false) => d.with_help(format!("{} has: {}", ty.a(), available.join(", "))),
            (None, true) => d.with_note(format!("{} has no properties; tensors have dtype, ndim, shape, numel and values, lists have len, a Scalar has dtype (its kind)", ty.a())),
        };
        self.error(d);
        (TExpr::Lit(Value::None), Ty::Error)
    }

    fn element_type(&mut self, ty: &Ty, span: Span) -> Ty {
        match ty.strip_opt() {
            Ty::List(elem) => (**elem).clone(),
            Ty::Error => Ty::Error,
            other => {
                let other = other.clone();
                self.mismatch(span, "a list (e.g. `x.shape`)", &other);
                Ty::Error
            }
        }
    }

    fn list(&mut self, env: &mut Env, items: &[ast::Expr]) -> (TExpr, Ty) {
        let mut out = Vec::new();
        let mut elem: Option<Ty> = None;
        for item in items {
            let (t, ty) = self.expr(env, item);
            match &elem {
                None => elem = Some(ty),
                Some(prev) if !comparable(prev, &ty) => {
                    self.error(
                        Diagnostic::new(codes::E0006, "list elements have different types").with_label(item.span, format!("this is {}, the first element {}", ty.a(), prev.a())),
                    );
                }
                Some(_) => {}
            }
            out.push(t);
        }
        // A list of dtype constants is a dtype set.
        let dtypes: Option<Vec<DType>> = out
            .iter()
            .map(|t| match t {
                TExpr::Lit(Value::Dtype(d)) => Some(*d),
                _ => None,
            })
            .collect();
        if let (Some(ds), false) = (dtypes, out.is_empty()) {
            return (TExpr::Lit(Value::DtypeSet(ds)), Ty::DtypeSet);
        }
        let consts: Option<Vec<Value>> = out
            .iter()
            .map(|t| match t {
                TExpr::Lit(v) => Some(v.clone()),
                _ => None,
            })
            .collect();
        let ty = Ty::List(Box::new(elem.unwrap_or(Ty::Error)));
        match consts {
            Some(vs) => (TExpr::Lit(Value::List(vs)), ty),
            None => (TExpr::List(out), ty),
        }
    }

    fn binary(&mut self, env: &mut Env, op: BinOp, l: &ast::Expr, r: &ast::Expr, span: Span) -> (TExpr, Ty) {
        let (lt, lty) = self.expr(env, l);
        let (rt, rty) = self.expr(env, r);
        let ty = match op {
            BinOp::And | BinOp::Or | BinOp::Implies => {
                self.expect_bool(&lty, l.span);
                self.expect_bool(&rty, r.span);
                Ty::Bool
            }
            BinOp::Eq | BinOp::Ne => {
                if !comparable(&lty, &rty) {
                    self.compare_error(op, l, &lty, r, &rty);
                }
                Ty::Bool
            }
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
                let ok = |t: &Ty| t.is_numeric() || matches!(t, Ty::Values);
                if !(ok(&lty) && ok(&rty)) || (matches!(lty, Ty::Values) && matches!(rty, Ty::Values)) {
                    self.compare_error(op, l, &lty, r, &rty);
                }
                Ty::Bool
            }
            BinOp::In | BinOp::NotIn => {
                if !member_ok(&lty, &rty) {
                    self.error(
                        Diagnostic::new(codes::E0006, format!("cannot test {} for membership in {}", lty.a(), rty.a()))
                            .with_label(r.span, format!("this is {}", rty.a()))
                            .with_secondary(l.span, format!("this is {}", lty.a()))
                            .with_help("use a range for numbers (`x in 0..4`), a dtype set for dtypes (`t.dtype in floating`), a list for strings"),
                    );
                }
                Ty::Bool
            }
            BinOp::Add if matches!((&lty, &rty), (Ty::DtypeSet, Ty::DtypeSet)) => {
                // Union of dtype sets, folded when both are constants.
                if let (TExpr::Lit(Value::DtypeSet(a)), TExpr::Lit(Value::DtypeSet(b))) = (&lt, &rt) {
                    let mut u = a.clone();
                    u.extend(b.iter().filter(|d| !a.contains(d)));
                    return (TExpr::Lit(Value::DtypeSet(u)), Ty::DtypeSet);
                }
                Ty::DtypeSet
            }
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem => {
                for (ty, e) in [(&lty, l), (&rty, r)] {
                    if !ty.is_numeric() {
                        self.error(
                            Diagnostic::new(codes::E0006, format!("cannot apply `{}` to {}", op.symbol(), ty.a()))
                                .with_label(e.span, format!("this is {}", ty.a()))
                                .with_help("arithmetic works on ints and floats, e.g. `weight.shape[1] * groups`"),
                        );
                        return (TExpr::Lit(Value::None), Ty::Error);
                    }
                }
                if matches!(lty.strip_opt(), Ty::Float) || matches!(rty.strip_opt(), Ty::Float) {
                    Ty::Float
                } else if lty.is_error() || rty.is_error() {
                    Ty::Error
                } else {
                    Ty::Int
                }
            }
        };
        let _ = span;
        (TExpr::Binary(op, Box::new(lt), Box::new(rt)), ty)
    }

    fn compare_error(&mut self, op: BinOp, l: &ast::Expr, lty: &Ty, r: &ast::Expr, rty: &Ty) {
        let mut d = Diagnostic::new(codes::E0006, format!("cannot compare {} with {}", lty.a(), rty.a()))
            .with_label(r.span, format!("this is {}", rty.a()))
            .with_secondary(l.span, format!("this is {}", lty.a()))
            .with_note(format!("`{}` needs two values of comparable types", op.symbol()));
        if matches!(lty, Ty::Dtype) || matches!(rty, Ty::Dtype) {
            d = d.with_help("compare a dtype with a dtype name, e.g. `input.dtype == float32`");
        }
        self.error(d);
    }

    fn call(&mut self, env: &mut Env, callee: &ast::Expr, args: &[ast::CallArg], span: Span) -> (TExpr, Ty) {
        let ExprKind::Name(name) = &callee.kind else {
            self.error(
                Diagnostic::new(codes::E0006, "only built-in functions and constraint sets can be called here")
                    .with_label(callee.span, "not a function")
                    .with_help("calls of torch APIs belong in `program` items"),
            );
            return (TExpr::Lit(Value::None), Ty::Error);
        };
        if let Some(b) = Builtin::from_name(name) {
            if let Some((_, sig, doc)) = BUILTINS.iter().find(|(n, ..)| *n == name) {
                self.reference(callee.span, None, || hover_text(sig, doc));
            }
            return self.builtin(env, b, args, span);
        }
        if let Some(item) = self.scopes.lookup(env.module, name) {
            if let ItemKind::Constraints(_) = self.loader.modules[item.module].ast.items[item.index].kind {
                self.reference_item(callee.span, item);
                let parts = self.expand_set(env, item, name, args, span);
                let conj = parts.into_iter().map(|(t, _)| t).reduce(|a, b| TExpr::Binary(BinOp::And, Box::new(a), Box::new(b)));
                return (conj.unwrap_or(TExpr::Lit(Value::Bool(true))), Ty::Bool);
            }
        }
        let mut candidates: Vec<&str> = vec!["len", "min", "max", "abs", "prod", "finite", "no_nan", "contiguous", "broadcastable"];
        let visible = self.scopes.visible(env.module);
        candidates.extend(visible.iter().map(String::as_str));
        let mut d = Diagnostic::new(codes::E0002, format!("cannot find function `{name}`")).with_label(callee.span, "not a function or constraint set");
        d = match closest(name, candidates) {
            Some(s) => d.with_help(format!("did you mean `{s}`?")),
            None => d.with_help("the built-in functions are len, min, max, abs, prod, finite, no_nan, contiguous and broadcastable"),
        };
        self.error(d);
        (TExpr::Lit(Value::None), Ty::Error)
    }

    fn builtin(&mut self, env: &mut Env, b: Builtin, args: &[ast::CallArg], span: Span) -> (TExpr, Ty) {
        let checked: Vec<(TExpr, Ty, Span)> = args
            .iter()
            .map(|a| {
                let (t, ty) = self.expr(env, &a.value);
                (t, ty, a.value.span)
            })
            .collect();
        let arity_ok = match b {
            Builtin::Len | Builtin::Abs | Builtin::Prod | Builtin::Finite | Builtin::NoNan | Builtin::Contiguous => checked.len() == 1,
            Builtin::Min | Builtin::Max => !checked.is_empty(),
            Builtin::Broadcastable => checked.len() >= 2,
        };
        if !arity_ok {
            let want = match b {
                Builtin::Min | Builtin::Max => "at least one argument",
                Builtin::Broadcastable => "at least two arguments",
                _ => "one argument",
            };
            self.error(Diagnostic::new(codes::E0014, format!("`{}` takes {want}", b.name())).with_label(span, format!("called with {}", checked.len())));
            return (TExpr::Lit(Value::None), Ty::Error);
        }
        let ty = match b {
            Builtin::Len => {
                let (_, ty, s) = &checked[0];
                if !matches!(ty.strip_opt(), Ty::List(_) | Ty::Error) {
                    self.mismatch(*s, "a list", ty);
                }
                Ty::Int
            }
            Builtin::Prod => {
                let (_, ty, s) = &checked[0];
                if !matches!(ty.strip_opt(), Ty::List(e) if matches!(**e, Ty::Int | Ty::Error)) && !ty.is_error() {
                    self.mismatch(*s, "a list of ints", ty);
                }
                Ty::Int
            }
            Builtin::Min | Builtin::Max | Builtin::Abs => {
                let mut out = Ty::Int;
                for (_, ty, s) in &checked {
                    if !ty.is_numeric() {
                        self.mismatch(*s, "a number", ty);
                    } else if matches!(ty.strip_opt(), Ty::Float) {
                        out = Ty::Float;
                    }
                }
                out
            }
            Builtin::Finite | Builtin::NoNan | Builtin::Contiguous => {
                let (_, ty, s) = &checked[0];
                if !matches!(ty.strip_opt(), Ty::Tensor | Ty::Error) {
                    self.mismatch(*s, "a Tensor", ty);
                }
                Ty::Bool
            }
            Builtin::Broadcastable => {
                for (_, ty, s) in &checked {
                    let ok = matches!(ty.strip_opt(), Ty::Tensor | Ty::Error) || matches!(ty.strip_opt(), Ty::List(e) if matches!(**e, Ty::Int));
                    if !ok {
                        self.mismatch(*s, "a Tensor or a shape", ty);
                    }
                }
                Ty::Bool
            }
        };
        (TExpr::Call(b, checked.into_iter().map(|(t, _, _)| t).collect()), ty)
    }

    /// Expands a constraint set applied to arguments: its body's constraints, with the set's
    /// parameters replaced by the argument expressions. Returns each constraint and its text.
    pub fn expand_set(&mut self, env: &mut Env, item: ItemRef, name: &str, args: &[ast::CallArg], span: Span) -> Vec<(TExpr, String)> {
        if let Some(at) = self.expanding.iter().position(|&i| i == item) {
            let through: Vec<String> =
                self.expanding[at + 1..].iter().filter_map(|i| self.loader.modules[i.module].ast.items[i.index].kind.name().map(|n| format!("`{}`", n.name))).collect();
            let via = if through.is_empty() { String::new() } else { format!(" (through {})", through.join(", ")) };
            // Reported even while expanding quietly: the cycle is only found inside an expansion.
            self.diags.push(
                Diagnostic::new(codes::E0006, format!("constraint set `{name}` applies itself{via}"))
                    .with_label(span, "this application closes the cycle")
                    .with_help("a constraint set cannot be defined in terms of itself; inline the shared constraints"),
            );
            return Vec::new();
        }
        self.expanding.push(item);
        let out = self.expand_set_body(env, item, name, args, span);
        self.expanding.pop();
        out
    }

    fn expand_set_body(&mut self, env: &mut Env, item: ItemRef, name: &str, args: &[ast::CallArg], span: Span) -> Vec<(TExpr, String)> {
        let module = &self.loader.modules[item.module];
        let ItemKind::Constraints(set) = &module.ast.items[item.index].kind else { return Vec::new() };
        let set_params: Vec<&ast::Param> = set.params.iter().filter(|p| matches!(p.kind, ast::ParamKind::Named { .. })).collect();
        if args.len() != set_params.len() {
            self.error(
                Diagnostic::new(codes::E0014, format!("`{name}` takes {} arguments", set_params.len()))
                    .with_label(span, format!("called with {}", args.len()))
                    .with_secondary(set.name.span, "defined here"),
            );
            return Vec::new();
        }
        self.used.insert(item);
        let mut subst = HashMap::new();
        let specs = self.set_params(item);
        for ((arg, p), spec) in args.iter().zip(&set_params).zip(&specs) {
            let (t, ty) = self.expr(env, &arg.value);
            let want = Ty::of_param(&spec.ty, spec.optional);
            if !assignable(&ty, &want) {
                self.error(
                    Diagnostic::new(codes::E0006, format!("argument does not fit parameter `{}` of `{name}`", spec.name))
                        .with_label(arg.value.span, format!("this is {}, the parameter {}", ty.a(), want.a()))
                        .with_secondary(p.span, "parameter declared here"),
                );
            }
            subst.insert(spec.name.clone(), (t, ty));
        }
        let body = set.body.clone();
        let file = module.file;
        let set_module = item.module;
        let mut out = Vec::new();
        self.quiet += 1;
        for stmt in &body.stmts {
            if let ast::StmtKind::Require { expr, .. } = &stmt.kind {
                let mut inner = Env { module: set_module, params: &[], subst: Some(&subst), results: None, bound: env.bound.clone() };
                let text = self.loader.map.get(file).slice(expr.span).to_string();
                // A set applied inside a set gives its constraints one by one, as at an API: the
                // solver takes each apart (a `forall` inside an `and` it would not).
                if let Some((nested, nested_name, nested_args)) = self.set_application(set_module, expr) {
                    for (t, part) in self.expand_set(&mut inner, nested, nested_name, nested_args, expr.span) {
                        out.push((t, format!("{text}: {part}")));
                    }
                    continue;
                }
                let t = self.constraint(&mut inner, expr);
                out.push((t, text));
            }
        }
        self.quiet -= 1;
        out
    }

    /// The constraint set `expr` applies, with its name and arguments, when it is one's
    /// application (`channel_stats(input, weight)`) as seen from `module`.
    pub fn set_application<'e>(&self, module: usize, expr: &'e ast::Expr) -> Option<(ItemRef, &'e str, &'e [ast::CallArg])> {
        let ast::ExprKind::Call(callee, args) = &expr.kind else { return None };
        let ExprKind::Name(name) = &callee.kind else { return None };
        let item = self.scopes.lookup(module, name)?;
        matches!(self.loader.modules[item.module].ast.items[item.index].kind, ItemKind::Constraints(_)).then_some((item, name.as_str(), args.as_slice()))
    }

    pub fn mismatch(&mut self, span: Span, expected: &str, found: &Ty) {
        if found.is_error() {
            return;
        }
        self.error(Diagnostic::new(codes::E0006, "mismatched types").with_label(span, format!("expected {expected}, found {}", found.describe())));
    }
}

/// Whether `lhs in rhs` makes sense.
fn member_ok(lhs: &Ty, rhs: &Ty) -> bool {
    use Ty::*;
    match (lhs.strip_opt(), rhs) {
        (Error, _) | (_, Error) => true,
        (l, Range(_)) => l.is_numeric() || matches!(l, Values),
        (Dtype, DtypeSet) => true,
        (Dtype, List(e)) => matches!(**e, Dtype | Error),
        (l, List(e)) => comparable(l, e),
        _ => false,
    }
}

/// Whether a value of type `have` can stand for a parameter of type `want`.
fn assignable(have: &Ty, want: &Ty) -> bool {
    match (have, want) {
        (Ty::Error, _) => true,
        (Ty::Opt(h), Ty::Opt(w)) => assignable(h, w),
        (Ty::Opt(h), w) => assignable(h, w),
        (h, Ty::Opt(w)) => matches!(h, Ty::None) || assignable(h, w),
        (Ty::Int, Ty::Float) => true,
        (Ty::Enum(_), Ty::Str) | (Ty::Str, Ty::Enum(_)) => true,
        (Ty::List(h), Ty::List(w)) => assignable(h, w),
        (h, w) => h == w,
    }
}

/// `name: type?` as written in a signature.
pub fn param_text(p: &ParamSpec) -> String {
    let mut s = format!("{}{}: {}{}", if p.variadic { "*" } else { "" }, p.name, p.ty.describe(), if p.optional { "?" } else { "" });
    if let Some(d) = &p.default {
        s.push_str(&format!(" = {}", crate::spec::value_text(d)));
    }
    s
}

/// Why a torch dtype that sfz does not generate is missing, for the ones people will write.
fn unsupported_dtype(name: &str) -> Option<&'static str> {
    Some(match name {
        "qint8" | "quint8" | "qint32" | "quint4x2" | "quint2x4" => {
            "a quantized tensor carries a scale and a zero point besides its values; sfz's generator does not make quantized tensors, so a spec cannot ask for them"
        }
        "float8_e4m3fn" | "float8_e5m2" | "float8_e4m3fnuz" | "float8_e5m2fnuz" => "the float8 dtypes have few CPU kernels; sfz's generator does not make them",
        "uint16" | "uint32" | "uint64" | "complex32" | "chalf" => "sfz's generator does not make tensors of this dtype (most CPU kernels lack it)",
        _ => return None,
    })
}
