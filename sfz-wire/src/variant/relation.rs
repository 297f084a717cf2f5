//! Metamorphic relations: what must hold between calls, e.g. scale invariance
//! (`f(s * x) == f(x)`), homogeneity, shift invariance, or an identity between two APIs
//! (`log(i0(x)) == log(i0e(x)) + abs(x)`).
//!
//! The checker lowers a `relation` statement to a `Relation` whose calls of other APIs name them
//! (`Callee::Api`); the plan resolves those to ops loaded beside the API's own (`Callee::Op`); the
//! worker evaluates both sides elementwise in float64 and compares them where the guard holds.
//! A relation is a differential check like the others (`Variant::Relation`): only its verdict
//! leaves the worker.
use serde::{Deserialize, Serialize};

use super::{Tolerance, Tolerances};

/// `forall s in [scalars]: guard => lhs == rhs`, checked on every case of its API.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Relation {
    /// Its name, unique within the API (the finding's signature names it).
    pub name: String,
    /// The source text of the statement, for messages and reproducers.
    pub text: String,
    /// The values the `forall` variable takes; one is chosen per case from the case's seed.
    /// Empty when the relation has no such variable.
    pub scalars: Vec<f64>,
    /// An elementwise condition: only elements where it holds are compared (a special
    /// function's identity holds only where its value is representable, say).
    pub guard: Option<RelExpr>,
    pub lhs: RelExpr,
    pub rhs: RelExpr,
    /// `|lhs - rhs| <= atol + rtol * |rhs|`, per dtype of the left side.
    pub tolerances: Tolerances,
}

/// An expression of a relation, evaluated elementwise on tensors (numbers broadcast).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum RelExpr {
    /// Output `k` of the original call (`result`, `result.k`, a named output).
    Result(usize),
    /// The argument of the API's parameter `p` as the case gives it: a tensor, or a number.
    Param(usize),
    /// The `forall` variable.
    Scalar,
    Const(f64),
    Unary(RelFn, Box<RelExpr>),
    Binary(RelOp, Box<RelExpr>, Box<RelExpr>),
    /// A call, and which of its outputs: the API itself with some arguments replaced
    /// (`self(input = input * s)`; the others as in the case), or another API.
    Call {
        callee: Callee,
        args: Vec<(usize, RelExpr)>,
        output: usize,
    },
}

/// Who a relation calls. `args` of a call are (parameter index of the callee, value).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Callee {
    /// The API the relation belongs to.
    Itself,
    /// Another API, by its Python name; its parameters are those of its `api` item.
    Api(String),
    /// Another API resolved by the plan: op `index` of the worker's op table (the name stays,
    /// for messages and reproducers).
    Op { index: u32, api: String },
}

/// Elementwise functions of relations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RelFn {
    Neg,
    Abs,
    Log,
    Exp,
    Sqrt,
    Log1p,
    Expm1,
    Not,
    /// `finite(x)`: true where the element is neither NaN nor infinite.
    Finite,
}

impl RelFn {
    /// The name a relation writes (`abs(x)`); `Neg` and `Not` are prefix operators.
    pub fn name(self) -> &'static str {
        match self {
            RelFn::Neg => "-",
            RelFn::Abs => "abs",
            RelFn::Log => "log",
            RelFn::Exp => "exp",
            RelFn::Sqrt => "sqrt",
            RelFn::Log1p => "log1p",
            RelFn::Expm1 => "expm1",
            RelFn::Not => "not",
            RelFn::Finite => "finite",
        }
    }

    /// The function a relation names in a call, if any.
    pub fn from_name(name: &str) -> Option<RelFn> {
        Some(match name {
            "abs" => RelFn::Abs,
            "log" => RelFn::Log,
            "exp" => RelFn::Exp,
            "sqrt" => RelFn::Sqrt,
            "log1p" => RelFn::Log1p,
            "expm1" => RelFn::Expm1,
            "finite" => RelFn::Finite,
            _ => return None,
        })
    }
}

/// Elementwise binary operators of relations (comparisons and logic for guards).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RelOp {
    Add,
    Sub,
    Mul,
    Div,
    /// `a ** b` is not in the language; `pow(a, b)` is.
    Pow,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
}

impl RelOp {
    pub fn symbol(self) -> &'static str {
        match self {
            RelOp::Add => "+",
            RelOp::Sub => "-",
            RelOp::Mul => "*",
            RelOp::Div => "/",
            RelOp::Pow => "pow",
            RelOp::Lt => "<",
            RelOp::Le => "<=",
            RelOp::Gt => ">",
            RelOp::Ge => ">=",
            RelOp::And => "and",
            RelOp::Or => "or",
        }
    }
}

/// The tolerances a relation gets unless it says otherwise: its two sides are different
/// computations of one value (a few roundings each, a log or an exp between them), so wider
/// than a same-computation check, and far below the orders of magnitude a broken kernel is off.
pub const DEFAULT_TOLERANCES: Tolerances = Tolerances {
    float16: Tolerance { rtol: 1e-2, atol: 1e-3 },
    bfloat16: Tolerance { rtol: 5e-2, atol: 1e-2 },
    float32: Tolerance { rtol: 1e-4, atol: 1e-5 },
    float64: Tolerance { rtol: 1e-9, atol: 1e-12 },
};

/// A seed of a case: its tensors' seeds mixed, so the same case chooses the same scalar (and
/// the gradient check the same elements) in the worker and in its reproducer.
/// Why a low-precision case that breaks a relation is skipped when the same values in float64
/// break it too: the relation does not hold there, whatever the precision. Validation counts
/// such a case as refuting the relation.
pub const FAILS_IN_FLOAT64: &str = "the relation fails in float64 too at this input: it does not hold here, whatever the precision";

pub fn case_seed(case: &crate::case::Case) -> u64 {
    let mut h = 0x9e37_79b9_7f4a_7c15u64;
    for r in case.args.iter().flat_map(crate::case::Arg::tensors) {
        h = crate::seed::mix(h ^ r.seed);
    }
    h
}

impl Relation {
    /// The scalar case `seed` uses, if the relation has a `forall` variable.
    pub fn scalar_for(&self, seed: u64) -> Option<f64> {
        (!self.scalars.is_empty()).then(|| self.scalars[(seed % self.scalars.len() as u64) as usize])
    }

    /// The API's own parameters a call of itself gives a value made with the `forall` variable
    /// (`input` in `self(input = input * s)`): the arguments the relation's scale changes.
    pub fn scaled_params(&self) -> Vec<usize> {
        let mut out = Vec::new();
        for e in [Some(&self.lhs), Some(&self.rhs), self.guard.as_ref()].into_iter().flatten() {
            e.visit(&mut |e| {
                if let RelExpr::Call { callee: Callee::Itself, args, .. } = e {
                    for (p, value) in args {
                        let mut scaled = false;
                        value.visit(&mut |v| scaled |= *v == RelExpr::Scalar);
                        if scaled && !out.contains(p) {
                            out.push(*p);
                        }
                    }
                }
            });
        }
        out
    }

    /// Every `Callee::Api` name it calls, in first-call order.
    pub fn apis(&self) -> Vec<String> {
        let mut out = Vec::new();
        for e in [Some(&self.lhs), Some(&self.rhs), self.guard.as_ref()].into_iter().flatten() {
            e.visit(&mut |e| {
                if let RelExpr::Call { callee: Callee::Api(name), .. } = e {
                    if !out.contains(name) {
                        out.push(name.clone());
                    }
                }
            });
        }
        out
    }

    /// Rewrites every `Callee::Api` with `resolve(name)`.
    pub fn resolve(&mut self, resolve: &mut dyn FnMut(&str) -> Option<u32>) {
        for e in [Some(&mut self.lhs), Some(&mut self.rhs), self.guard.as_mut()].into_iter().flatten() {
            e.visit_mut(&mut |e| {
                if let RelExpr::Call { callee, .. } = e {
                    if let Callee::Api(name) = callee {
                        if let Some(index) = resolve(name) {
                            *callee = Callee::Op { index, api: name.clone() };
                        }
                    }
                }
            });
        }
    }
}

impl RelExpr {
    /// Calls `f` on this expression and every one inside it, parents first.
    pub fn visit(&self, f: &mut dyn FnMut(&RelExpr)) {
        f(self);
        match self {
            RelExpr::Unary(_, a) => a.visit(f),
            RelExpr::Binary(_, a, b) => {
                a.visit(f);
                b.visit(f);
            }
            RelExpr::Call { args, .. } => args.iter().for_each(|(_, a)| a.visit(f)),
            RelExpr::Result(_) | RelExpr::Param(_) | RelExpr::Scalar | RelExpr::Const(_) => {}
        }
    }

    fn visit_mut(&mut self, f: &mut dyn FnMut(&mut RelExpr)) {
        f(self);
        match self {
            RelExpr::Unary(_, a) => a.visit_mut(f),
            RelExpr::Binary(_, a, b) => {
                a.visit_mut(f);
                b.visit_mut(f);
            }
            RelExpr::Call { args, .. } => args.iter_mut().for_each(|(_, a)| a.visit_mut(f)),
            RelExpr::Result(_) | RelExpr::Param(_) | RelExpr::Scalar | RelExpr::Const(_) => {}
        }
    }
}
