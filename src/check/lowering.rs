//! Lowering of a `program` body's `let` statements to the IR of `wire::program::ir`, checking
//! each call against the table of `wire::program::ops` (E0020). `torch.ops.aten.NAME.OVERLOAD`
//! calls any ATen operator by schema; its arguments are in schema order (keyword-only ones last,
//! by name), and libtorch checks them when the worker calls the operator.
use crate::ast::{self, ExprKind};
use crate::diag::{codes, Diagnostic, Span};
use crate::spec::{BinOp, ParamSpec, ParamType, UnOp};
use crate::wire::case::DType;
use crate::wire::program::ir::{AtenCall, Operand, Step};
use crate::wire::program::ops::{self, Kind, NumOp, OpSig};

/// Lowers a program body's `let` statements; errors go to `diags`. `text` returns the source of
/// a span.
pub struct Lowerer<'a> {
    params: &'a [ParamSpec],
    /// `let` names bound so far, with their value index.
    lets: Vec<(String, u32)>,
    pub steps: Vec<Step>,
    pub step_text: Vec<String>,
    pub diags: Vec<Diagnostic>,
    text: &'a dyn Fn(Span) -> String,
    /// The `let` being lowered and how many intermediates it made.
    current: String,
    inner: u32,
}

/// What an operand is, for checking it against a parameter's kind.
#[derive(Clone, Copy, PartialEq)]
enum Shape {
    Tensor,
    IntLike,
    FloatLike,
    BoolLike,
    DtypeLike,
    NoneLike,
    IntsLike,
    Other,
}

impl<'a> Lowerer<'a> {
    pub fn new(params: &'a [ParamSpec], text: &'a dyn Fn(Span) -> String) -> Self {
        Lowerer { params, lets: Vec::new(), steps: Vec::new(), step_text: Vec::new(), diags: Vec::new(), text, current: String::new(), inner: 0 }
    }

    /// Lowers `let name = value;`. Names the checker already rejected lower to nothing.
    pub fn lower_let(&mut self, name: &str, value: &ast::Expr) {
        self.current = name.to_string();
        self.inner = 0;
        let first_new = (self.params.len() + self.steps.len()) as u32;
        let Some(op) = self.expr(value) else { return };
        let index = match op {
            Operand::Value(v) if v >= first_new => v,
            // `let q = p;`: an identity step keeps one step per `let`.
            Operand::Value(v) if self.shape_of(&Operand::Value(v)) == Shape::Tensor => self.push(NumOp::Mul, vec![Operand::Value(v), Operand::Float(1.0)], value.span),
            _ => {
                self.error(value.span, "a `let` must hold a tensor", "compute it from a tensor parameter");
                return;
            }
        };
        // The last step of the expression takes the `let`'s own name.
        if let Some(k) = index.checked_sub(self.params.len() as u32) {
            self.steps[k as usize].name = name.to_string();
        }
        self.lets.push((name.to_string(), index));
    }

    fn is_step(&self, v: u32) -> bool {
        v as usize >= self.params.len()
    }

    fn error(&mut self, span: Span, msg: &str, help: &str) {
        let mut d = Diagnostic::new(codes::E0020, msg.to_string()).with_label(span, "here");
        if !help.is_empty() {
            d = d.with_help(help.to_string());
        }
        self.diags.push(d);
    }

    fn push(&mut self, op: NumOp, args: Vec<Operand>, span: Span) -> u32 {
        self.inner += 1;
        let name = format!("{}.{}", self.current, self.inner);
        self.steps.push(Step::table(name, op, args));
        self.step_text.push((self.text)(span));
        (self.params.len() + self.steps.len() - 1) as u32
    }

    fn shape_of(&self, op: &Operand) -> Shape {
        match op {
            Operand::Value(v) if self.is_step(*v) => Shape::Tensor,
            Operand::Value(v) => match &self.params[*v as usize].ty {
                ParamType::Tensor => Shape::Tensor,
                ParamType::Int => Shape::IntLike,
                ParamType::Float | ParamType::Scalar => Shape::FloatLike,
                ParamType::Bool => Shape::BoolLike,
                ParamType::Dtype => Shape::DtypeLike,
                ParamType::IntList(_) => Shape::IntsLike,
                _ => Shape::Other,
            },
            Operand::Float(_) => Shape::FloatLike,
            Operand::Int(_) => Shape::IntLike,
            Operand::Bool(_) => Shape::BoolLike,
            Operand::Dtype(_) => Shape::DtypeLike,
            Operand::None => Shape::NoneLike,
            Operand::Ints(_) => Shape::IntsLike,
            Operand::Tensors(_) | Operand::Str(_) => Shape::Other,
        }
    }

    fn fits(kind: Kind, s: Shape) -> bool {
        use Shape::*;
        match kind {
            Kind::Tensor => s == Tensor,
            Kind::Number => matches!(s, Tensor | IntLike | FloatLike),
            Kind::OptTensor => matches!(s, Tensor | NoneLike),
            Kind::Int => s == IntLike,
            Kind::Dims => matches!(s, IntLike | IntsLike | NoneLike),
            Kind::Float => matches!(s, IntLike | FloatLike),
            Kind::OptFloat => matches!(s, IntLike | FloatLike | NoneLike),
            Kind::Bool => s == BoolLike,
            Kind::Dtype => s == DtypeLike,
        }
    }

    /// Lowers an expression to an operand, adding steps for the calls in it. None when it was
    /// reported (or names something the name check already reported).
    fn expr(&mut self, e: &ast::Expr) -> Option<Operand> {
        match &e.kind {
            ExprKind::Int(v) => Some(Operand::Int(*v)),
            ExprKind::Float { value, .. } => Some(Operand::Float(*value)),
            ExprKind::Bool(b) => Some(Operand::Bool(*b)),
            ExprKind::None => Some(Operand::None),
            ExprKind::Str(s) => Some(Operand::Str(s.clone())),
            ExprKind::Paren(inner) => self.expr(inner),
            ExprKind::Name(n) => {
                if let Some((_, v)) = self.lets.iter().rev().find(|(l, _)| l == n) {
                    return Some(Operand::Value(*v));
                }
                if let Some(i) = self.params.iter().position(|p| &p.name == n) {
                    return Some(Operand::Value(i as u32));
                }
                if let Some(d) = DType::from_name(n) {
                    return Some(Operand::Dtype(d));
                }
                None
            }
            ExprKind::Field(base, f) if is_torch_path(base) && DType::from_name(&f.name).is_some() => DType::from_name(&f.name).map(Operand::Dtype),
            ExprKind::List(items) => {
                let mut ints = Vec::new();
                let mut tensors = Vec::new();
                for i in items {
                    match self.expr(i)? {
                        Operand::Int(v) if tensors.is_empty() => ints.push(v),
                        Operand::Value(v) if ints.is_empty() && self.shape_of(&Operand::Value(v)) == Shape::Tensor => tensors.push(Some(v)),
                        // `Tensor?[]`: `index`'s `[None, i]` for `x[:, i]`.
                        Operand::None if ints.is_empty() => tensors.push(None),
                        _ => {
                            self.error(i.span, "a list in a program holds int literals, or tensors and None", "write dimensions as literals: `dim = [0, 1]`");
                            return None;
                        }
                    }
                }
                Some(if tensors.is_empty() { Operand::Ints(ints) } else { Operand::Tensors(tensors) })
            }
            ExprKind::Index(base, k) => match (&base.kind, &k.kind) {
                (ExprKind::Call(callee, args), ExprKind::Int(k)) if aten_path(callee).is_some() => self.aten(base, callee, args, *k as u32),
                _ => {
                    self.error(e.span, "a program indexes only the outputs of an ATen operator", "write `torch.ops.aten.NAME.OVERLOAD(..)[k]`");
                    None
                }
            },
            ExprKind::Unary(UnOp::Neg, inner) => match self.expr(inner)? {
                Operand::Int(v) => Some(Operand::Int(v.wrapping_neg())),
                Operand::Float(v) => Some(Operand::Float(-v)),
                v => {
                    self.check_kind(Kind::Tensor, &v, inner.span, "-")?;
                    Some(Operand::Value(self.push(NumOp::Neg, vec![v], e.span)))
                }
            },
            ExprKind::Binary(op @ (BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div), a, b) => {
                let (x, y) = (self.expr(a)?, self.expr(b)?);
                let num = match op {
                    BinOp::Add => NumOp::Add,
                    BinOp::Sub => NumOp::Sub,
                    BinOp::Mul => NumOp::Mul,
                    _ => NumOp::Div,
                };
                self.check_kind(Kind::Number, &x, a.span, num.short())?;
                self.check_kind(Kind::Number, &y, b.span, num.short())?;
                if self.shape_of(&x) != Shape::Tensor && self.shape_of(&y) != Shape::Tensor {
                    self.error(e.span, "arithmetic on two numbers in a program", "one side must be a tensor; write the constant out");
                    return None;
                }
                Some(Operand::Value(self.push(num, vec![x, y], e.span)))
            }
            ExprKind::Call(callee, args) => self.call(e, callee, args),
            _ => {
                self.error(e.span, "this expression cannot be computed by a program", "a program computes with calls, `+ - * /` and unary `-`");
                None
            }
        }
    }

    fn check_kind(&mut self, kind: Kind, v: &Operand, span: Span, op: &str) -> Option<()> {
        if Self::fits(kind, self.shape_of(v)) {
            Some(())
        } else {
            let d = Diagnostic::new(codes::E0020, format!("wrong kind of argument to `{op}`")).with_label(span, format!("expected {}", kind.describe()));
            self.diags.push(d);
            None
        }
    }

    /// `torch.ops.aten.NAME.OVERLOAD(args)[output]`.
    fn aten(&mut self, e: &ast::Expr, callee: &ast::Expr, args: &[ast::CallArg], output: u32) -> Option<Operand> {
        let (name, overload) = aten_path(callee)?;
        if overload.is_none() {
            self.error(callee.span, "an ATen operator is called with its overload", "write `torch.ops.aten.NAME.default(..)` or the overload's name");
            return None;
        }
        let mut out = Vec::with_capacity(args.len());
        let mut keywords = Vec::new();
        for a in args {
            match &a.name {
                Some(n) => keywords.push(n.name.clone()),
                None if !keywords.is_empty() => {
                    self.error(a.value.span, "a positional argument after a keyword argument", "keyword-only arguments come last, in the schema's order");
                    return None;
                }
                None => {}
            }
            out.push(self.expr(&a.value)?);
        }
        if !out.iter().any(|o| matches!(o, Operand::Tensors(vs) if vs.iter().any(Option::is_some)) || self.shape_of(o) == Shape::Tensor) {
            self.error(e.span, "an ATen call in a program needs a tensor argument", "a factory's values are parameters of the program");
            return None;
        }
        let index = self.push(NumOp::Aten, out, e.span);
        let k = (index as usize) - self.params.len();
        self.steps[k].aten = Some(AtenCall { name: format!("aten::{name}"), overload: overload.unwrap_or_default(), output, keywords });
        Some(Operand::Value(index))
    }

    fn call(&mut self, e: &ast::Expr, callee: &ast::Expr, args: &[ast::CallArg]) -> Option<Operand> {
        if aten_path(callee).is_some() {
            return self.aten(e, callee, args, 0);
        }
        let (sig, receiver): (&OpSig, Option<&ast::Expr>) = match &callee.kind {
            _ if is_torch_path(callee) => {
                let path = dotted(callee).unwrap_or_default();
                match ops::by_function(&path) {
                    Some(s) => (s, None),
                    None => {
                        let names: Vec<&str> = ops::OPS.iter().flat_map(|s| s.functions.iter().copied()).collect();
                        let help = match crate::diag::suggest::closest(&path, names) {
                            Some(s) => format!("did you mean `{s}`?"),
                            None => "see `docs/NUMERIC.md` for the operations programs may call".to_string(),
                        };
                        self.error(callee.span, &format!("`{path}` is not an operation programs can run"), &help);
                        return None;
                    }
                }
            }
            ExprKind::Field(base, method) => match ops::by_method(&method.name) {
                Some(s) => (s, Some(&**base)),
                None => {
                    let names: Vec<&str> = ops::OPS.iter().filter_map(|s| s.method).collect();
                    let help = match crate::diag::suggest::closest(&method.name, names) {
                        Some(s) => format!("did you mean `.{s}()`?"),
                        None => "see `docs/NUMERIC.md` for the operations programs may call".to_string(),
                    };
                    self.error(method.span, &format!("`.{}()` is not an operation programs can run", method.name), &help);
                    return None;
                }
            },
            _ => {
                self.error(callee.span, "a program calls `torch.` functions and tensor methods only", "");
                return None;
            }
        };
        let name = sig.method.or(sig.functions.first().copied()).unwrap_or("?");
        let mut slots: Vec<Option<(Operand, Span)>> = vec![None; sig.params.len()];
        let mut next = 0;
        if let Some(r) = receiver {
            slots[0] = Some((self.expr(r)?, r.span));
            next = 1;
        }
        for a in args {
            let k = match &a.name {
                Some(n) => match sig.params.iter().position(|p| p.0 == n.name) {
                    Some(k) => k,
                    None => {
                        let ps: Vec<&str> = sig.params.iter().map(|p| p.0).collect();
                        self.error(n.span, &format!("`{name}` has no parameter `{}`", n.name), &format!("its parameters are {}", ps.join(", ")));
                        return None;
                    }
                },
                None => {
                    if next >= sig.params.len() {
                        self.error(a.value.span, &format!("too many arguments to `{name}`"), &format!("it takes {}", sig.params.len()));
                        return None;
                    }
                    next += 1;
                    next - 1
                }
            };
            if slots[k].is_some() {
                self.error(a.value.span, &format!("`{}` of `{name}` is given twice", sig.params[k].0), "");
                return None;
            }
            let v = self.expr(&a.value)?;
            slots[k] = Some((v, a.value.span));
        }
        let mut out = Vec::with_capacity(slots.len());
        for (slot, (pname, kind, default)) in slots.into_iter().zip(sig.params) {
            match (slot, default) {
                (Some((v, span)), _) => {
                    self.check_kind(*kind, &v, span, name)?;
                    out.push(v);
                }
                (None, Some(d)) => out.push(match d {
                    ops::Default::None => Operand::None,
                    ops::Default::Int(v) => Operand::Int(*v),
                    ops::Default::Float(v) => Operand::Float(*v),
                    ops::Default::Bool(v) => Operand::Bool(*v),
                }),
                (None, None) => {
                    self.error(e.span, &format!("`{name}` needs `{pname}`"), &format!("pass {} as `{pname}`", kind.describe()));
                    return None;
                }
            }
        }
        Some(Operand::Value(self.push(sig.op, out, e.span)))
    }
}

/// `torch.ops.aten.NAME.OVERLOAD` → (NAME, Some(OVERLOAD), "" for `default`); (NAME, None)
/// without an overload.
fn aten_path(e: &ast::Expr) -> Option<(String, Option<String>)> {
    let path = dotted(e)?;
    let rest = path.strip_prefix("torch.ops.aten.")?;
    Some(match rest.split_once('.') {
        Some((name, "default")) => (name.to_string(), Some(String::new())),
        Some((name, overload)) => (name.to_string(), Some(overload.to_string())),
        None => (rest.to_string(), None),
    })
}

/// `torch`, `torch.nn`, ...: a dotted path rooted at `torch`.
fn is_torch_path(e: &ast::Expr) -> bool {
    dotted(e).is_some_and(|p| p == "torch" || p.starts_with("torch."))
}

fn dotted(e: &ast::Expr) -> Option<String> {
    match &e.kind {
        ExprKind::Name(n) => Some(n.clone()),
        ExprKind::Field(base, f) => Some(format!("{}.{}", dotted(base)?, f.name)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use crate::check::check_text;

    #[test]
    fn lets_lower_to_named_steps_with_defaults_filled() {
        let text = "program p(x: Tensor) {\n    x.dtype == float32;\n    let p = torch.softmax(x, dim = -1);\n    let l = -torch.log(p).mean();\n}\n";
        let c = check_text(std::path::Path::new("p.sfz"), text);
        assert!(!c.has_errors(), "{:?}", c.diags);
        let p = &c.spec.programs[0];
        assert!(p.runnable);
        let steps: Vec<String> = p.ir.steps.iter().map(|s| format!("{} = {:?}{:?}", s.name, s.op, s.args)).collect();
        assert_eq!(steps, ["p = Softmax[Value(0), Int(-1)]", "l.1 = Log[Value(1)]", "l.2 = Mean[Value(2), None, Bool(false)]", "l = Neg[Value(3)]",]);
        assert_eq!(p.step_text[1], "torch.log(p)");
        // The parameter-only requirement became an input constraint.
        assert_eq!(p.inputs.requires.len(), 1);
    }

    #[test]
    fn aten_calls_lower_by_name_overload_and_output_and_misuse_is_e0020() {
        let text = "program p(x: Tensor, y: Tensor) {\n    x.dtype == float32;\n    let m = torch.ops.aten.max.dim(x, 1)[1];\n    let c = torch.ops.aten.cat.default([x, y], 0);\n    let o = torch.ops.aten.ones_like.default(x, dtype = None);\n    let d = torch.ops.aten.div.Tensor_mode(x, y, rounding_mode = \"floor\");\n    let i = torch.ops.aten.index.Tensor(x, [None, y]);\n}\n";
        let c = check_text(std::path::Path::new("p.sfz"), text);
        assert!(!c.has_errors(), "{:?}", c.diags);
        let steps = &c.spec.programs[0].ir.steps;
        let calls: Vec<(&str, &str, u32, usize)> =
            steps.iter().filter_map(|s| s.aten.as_ref().map(|a| (a.name.as_str(), a.overload.as_str(), a.output, a.keywords.len()))).collect();
        assert_eq!(
            calls,
            [("aten::max", "dim", 1, 0), ("aten::cat", "", 0, 0), ("aten::ones_like", "", 0, 1), ("aten::div", "Tensor_mode", 0, 1), ("aten::index", "Tensor", 0, 0)]
        );
        use crate::wire::program::ir::Operand;
        assert_eq!(steps[1].args[0], Operand::Tensors(vec![Some(0), Some(1)]));
        // A string (`rounding_mode`) and a `Tensor?[]` holding None are operands too.
        assert_eq!(steps[3].args[2], Operand::Str("floor".into()));
        assert_eq!(steps[4].args[1], Operand::Tensors(vec![None, Some(1)]));
        for (bad, says) in [
            ("torch.ops.aten.add(x, x)", "with its overload"),
            ("torch.ops.aten.ones_like.default(dtype = None, x)", "positional argument after a keyword"),
            ("torch.ops.aten.zeros.default([2, 3])", "needs a tensor argument"),
            ("torch.exp(x)[0]", "indexes only the outputs of an ATen operator"),
        ] {
            let text = format!("program p(x: Tensor) {{\n    x.dtype == float32;\n    let v = {bad};\n}}\n");
            let c = check_text(std::path::Path::new("p.sfz"), &text);
            let d = c.diags.iter().find(|d| d.code == crate::diag::codes::E0020).unwrap_or_else(|| panic!("{bad}: {:?}", c.diags));
            assert!(d.message.contains(says), "{bad}: {}", d.message);
        }
    }
}
