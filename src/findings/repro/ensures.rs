//! `ensures` clauses written as Python assertions, where sfz can write them.
use super::python::{py_lit, py_value};
use super::Writer;
use crate::spec::{BinOp, Builtin, Prop, TExpr, UnOp};
use crate::wire::case::Arg;

impl Writer<'_> {
    /// An `ensures` expression in Python, or None where sfz cannot write it.
    pub(super) fn expr(&mut self, e: &TExpr) -> Option<String> {
        Some(match e {
            TExpr::Lit(v) => py_lit(v)?,
            TExpr::Param(i) => {
                let arg = self.r.case.args.get(*i)?;
                match arg {
                    Arg::Omitted => py_lit(self.r.api.params.get(*i)?.default.as_ref()?)?,
                    a => py_value(a, &self.vars[*i]),
                }
            }
            TExpr::Result(k) => self.output("result", *k),
            TExpr::Prop(inner, p) => {
                let x = self.expr(inner)?;
                match p {
                    Prop::Dtype => format!("{x}.dtype"),
                    Prop::Ndim => format!("{x}.dim()"),
                    Prop::Shape => format!("list({x}.shape)"),
                    Prop::Numel => format!("{x}.numel()"),
                    Prop::Len => format!("len({x})"),
                    Prop::Values => return None,
                }
            }
            TExpr::Index(x, i) => format!("{}[{}]", self.expr(x)?, self.expr(i)?),
            TExpr::Unary(UnOp::Not, x) => format!("(not {})", self.expr(x)?),
            TExpr::Unary(UnOp::Neg, x) => format!("(-{})", self.expr(x)?),
            TExpr::Binary(op, a, b) => return self.binary(*op, a, b),
            TExpr::If(c, a, b) => format!("({} if {} else {})", self.expr(a)?, self.expr(c)?, self.expr(b)?),
            TExpr::List(items) => format!("[{}]", items.iter().map(|i| self.expr(i)).collect::<Option<Vec<_>>>()?.join(", ")),
            TExpr::Call(f, args) => {
                let args: Vec<String> = args.iter().map(|a| self.expr(a)).collect::<Option<_>>()?;
                match f {
                    Builtin::Finite => format!("bool(torch.isfinite({}).all())", args.first()?),
                    Builtin::NoNan => format!("not bool(torch.isnan({}).any())", args.first()?),
                    Builtin::Contiguous => format!("{}.is_contiguous()", args.first()?),
                    Builtin::Len => format!("len({})", args.first()?),
                    Builtin::Min => format!("min({})", args.join(", ")),
                    Builtin::Max => format!("max({})", args.join(", ")),
                    Builtin::Abs => format!("abs({})", args.first()?),
                    Builtin::Prod => {
                        self.uses_math = true;
                        format!("math.prod({})", args.first()?)
                    }
                    Builtin::Broadcastable => return None,
                }
            }
            TExpr::Range { .. } | TExpr::Bound(_) | TExpr::Each(_) | TExpr::Forall { .. } | TExpr::Exists { .. } => return None,
        })
    }

    fn binary(&mut self, op: BinOp, a: &TExpr, b: &TExpr) -> Option<String> {
        // `t.values OP x` and `t.values in lo..hi` hold for every element.
        let values = |e: &TExpr| matches!(e, TExpr::Prop(_, Prop::Values));
        let tensor_of = |w: &mut Writer, e: &TExpr| match e {
            TExpr::Prop(inner, Prop::Values) => w.expr(inner),
            other => w.expr(other),
        };
        if values(a) || values(b) {
            // A complex tensor's values are its components, as the worker bounds them.
            let x = tensor_of(self, a)?;
            let x = if values(a) {
                self.uses_components = true;
                format!("components({x})")
            } else {
                x
            };
            return Some(match (op, b) {
                (BinOp::In | BinOp::NotIn, TExpr::Range { lo, hi, inclusive }) => {
                    let upper = if *inclusive { "<=" } else { "<" };
                    let inside = format!("(({x} >= {}) & ({x} {upper} {}))", self.expr(lo)?, self.expr(hi)?);
                    if op == BinOp::In {
                        format!("bool({inside}.all())")
                    } else {
                        format!("bool((~{inside}).all())")
                    }
                }
                _ if op.is_comparison() => {
                    let y = tensor_of(self, b)?;
                    let y = if values(b) {
                        self.uses_components = true;
                        format!("components({y})")
                    } else {
                        y
                    };
                    format!("bool(({x} {} {y}).all())", op.symbol())
                }
                _ => return None,
            });
        }
        let x = self.expr(a)?;
        Some(match (op, b) {
            (BinOp::In | BinOp::NotIn, TExpr::Range { lo, hi, inclusive }) => {
                let upper = if *inclusive { "<=" } else { "<" };
                let inside = format!("({} <= {x} {upper} {})", self.expr(lo)?, self.expr(hi)?);
                if op == BinOp::In {
                    inside
                } else {
                    format!("(not {inside})")
                }
            }
            (BinOp::Implies, _) => format!("((not {x}) or {})", self.expr(b)?),
            (BinOp::And, _) => format!("({x} and {})", self.expr(b)?),
            (BinOp::Or, _) => format!("({x} or {})", self.expr(b)?),
            (BinOp::In, _) => format!("({x} in {})", self.expr(b)?),
            (BinOp::NotIn, _) => format!("({x} not in {})", self.expr(b)?),
            // Floor division on ints and true division on floats cannot be told apart here.
            (BinOp::Div, _) => return None,
            (op, _) => format!("({x} {} {})", op.symbol(), self.expr(b)?),
        })
    }
}
