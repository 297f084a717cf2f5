//! Reproducers of relation findings: both sides of the relation written as the Python
//! expressions the worker evaluated (torch's type promotion, the case's `s`), compared in float64
//! with the tolerance of the left side's dtype, where the guard holds.
use std::fmt::Write;

use super::call::call;
use super::python::{py_float, py_value, tol_args};
use super::Writer;
use crate::ops::registry::{self, PyCall};
use crate::wire::case::Arg;
use crate::wire::variant::relation::{case_seed, Callee, RelExpr, RelFn, RelOp, Relation};
use crate::wire::variant::Tolerance;

impl Writer<'_> {
    /// The script's body for a relation that did not hold.
    pub(super) fn relation(&mut self, r: &Relation, tolerance: Tolerance) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# {}", r.text.lines().next().unwrap_or(""));
        let s = r.scalar_for(case_seed(self.r.case));
        if let Some(s) = s {
            let _ = writeln!(out, "s = {}", py_float(s));
        }
        let _ = writeln!(out, "result = {}", call(self.r.api, self.r.binding, self.r.case, &self.vars));
        // The sides start from the inputs as given, as the worker's do.
        out.push_str(&self.rebuilt());
        let _ = writeln!(out, "lhs = torch.as_tensor({})", self.rel(&r.lhs, s));
        let _ = writeln!(out, "rhs = torch.as_tensor({})", self.rel(&r.rhs, s));
        // In double precision; a complex side makes both complex128 (`.double()` would drop
        // the imaginary parts), as the worker compares them.
        let _ = writeln!(out, "wide = torch.complex128 if lhs.is_complex() or rhs.is_complex() else torch.float64");
        let _ = writeln!(out, "lhs, rhs = torch.broadcast_tensors(lhs.to(wide), rhs.to(wide))");
        if let Some(g) = &r.guard {
            let _ = writeln!(out, "holds = torch.as_tensor({}).bool().broadcast_to(lhs.shape)  # compared only here", self.rel(g, s));
            let _ = writeln!(out, "lhs, rhs = torch.where(holds, lhs, 0.0), torch.where(holds, rhs, 0.0)");
        }
        let _ = writeln!(out, "torch.testing.assert_close(lhs, rhs, {}, equal_nan=True)", tol_args(tolerance));
        out
    }

    /// A relation expression in Python.
    fn rel(&self, e: &RelExpr, s: Option<f64>) -> String {
        match e {
            RelExpr::Result(k) => self.output("result", *k),
            RelExpr::Param(p) => match self.r.case.args.get(*p) {
                Some(arg) => py_value(arg, self.vars.get(*p).map_or("", String::as_str)),
                None => "None".into(),
            },
            RelExpr::Scalar => "s".into(),
            RelExpr::Const(c) => py_float(*c),
            RelExpr::Unary(f, a) => {
                let a = self.rel(a, s);
                match f {
                    // As the worker negates: a complex zero part changes sign (see `relate`).
                    RelFn::Neg => format!("({a} * -1)"),
                    RelFn::Not => format!("torch.logical_not(torch.as_tensor({a}))"),
                    RelFn::Finite => format!("torch.isfinite(torch.as_tensor({a}))"),
                    // On a number the worker computes in float64.
                    f => format!("torch.{}(torch.as_tensor({a}, dtype=torch.float64) if not isinstance({a}, torch.Tensor) else {a})", f.name()),
                }
            }
            RelExpr::Binary(op, a, b) => {
                let (a, b) = (self.rel(a, s), self.rel(b, s));
                match op {
                    RelOp::Pow => format!("torch.pow({a}, {b})"),
                    RelOp::And => format!("torch.logical_and(torch.as_tensor({a}), torch.as_tensor({b}))"),
                    RelOp::Or => format!("torch.logical_or(torch.as_tensor({a}), torch.as_tensor({b}))"),
                    op => format!("({a} {} {b})", op.symbol()),
                }
            }
            RelExpr::Call { callee: Callee::Itself, args, output } => {
                let mut case = self.r.case.clone();
                let mut vars = self.vars.clone();
                for (p, a) in args {
                    match (case.args.get(*p), number(a, &case, s)) {
                        (Some(Arg::Tensor(_)), _) => vars[*p] = format!("({}).to({}.dtype)", self.rel(a, s), self.vars[*p]),
                        (Some(Arg::Int(_)), Some(x)) if x.fract() == 0.0 => case.args[*p] = Arg::Int(x as i64),
                        (Some(_), Some(x)) => case.args[*p] = Arg::Float(x),
                        _ => {}
                    }
                }
                let c = call(self.r.api, self.r.binding, &case, &vars);
                self.output(&format!("({c})"), *output)
            }
            RelExpr::Call { callee: Callee::Op { api, .. } | Callee::Api(api), args, output } => {
                let f = match registry::python_call(api) {
                    Some(PyCall::Method(m)) => format!("torch.Tensor.{m}"),
                    _ => api.clone(),
                };
                let mut given: Vec<&(usize, RelExpr)> = args.iter().collect();
                given.sort_by_key(|(p, _)| *p);
                let args: Vec<String> = given.iter().map(|(_, a)| self.rel(a, s)).collect();
                let c = format!("{f}({})", args.join(", "));
                if *output == 0 {
                    c
                } else {
                    format!("{c}[{output}]")
                }
            }
        }
    }
}

/// The value of an expression made of numbers only (a scalar argument's new value).
fn number(e: &RelExpr, case: &crate::wire::case::Case, s: Option<f64>) -> Option<f64> {
    Some(match e {
        RelExpr::Scalar => s?,
        RelExpr::Const(c) => *c,
        RelExpr::Param(p) => match case.args.get(*p)? {
            Arg::Int(i) => *i as f64,
            Arg::Float(x) => *x,
            _ => return None,
        },
        RelExpr::Unary(RelFn::Neg, a) => -number(a, case, s)?,
        RelExpr::Binary(op, a, b) => {
            let (x, y) = (number(a, case, s)?, number(b, case, s)?);
            match op {
                RelOp::Add => x + y,
                RelOp::Sub => x - y,
                RelOp::Mul => x * y,
                RelOp::Div => x / y,
                RelOp::Pow => x.powf(y),
                _ => return None,
            }
        }
        _ => return None,
    })
}
