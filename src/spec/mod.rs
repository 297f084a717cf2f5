//! The checked spec: what `check` produces from the syntax tree and `plan` and `gen` consume.
//!
//! Names are resolved (parameters are indices, dtypes are `DType`s, constraint sets are expanded
//! inline), types are known to agree, and every constraint remembers where it came from so that a
//! violation or a rejected rule can point back at the text. Nothing here refers to libtorch.
//! `each` and `none_tests` walk `TExpr`s for the evaluator and the solver alike.
mod each;
mod none_tests;

use serde::{Deserialize, Serialize};

use crate::diag::Span;
use crate::wire::case::DType;
use crate::wire::oracle::Oracle;

/// All APIs and programs of the checked files, in source order.
#[derive(Clone, Debug, Default)]
pub struct Spec {
    pub apis: Vec<ApiSpec>,
    /// Every `rule` item, whatever its status. Validated rules are also folded into their
    /// API's `requires`.
    pub rules: Vec<RuleSpec>,
    /// Every `program` item, lowered to its IR (`wire::program::ir`).
    pub programs: Vec<ProgramSpec>,
}

/// A `rule` item: constraints on one API, with their provenance.
#[derive(Clone, Debug)]
pub struct RuleSpec {
    pub meta: RuleMeta,
    /// The target API's name.
    pub api: String,
    pub span: Span,
    pub constraints: Vec<Constraint>,
    /// Its `ensures` clauses (a value domain: `ensures GUARD => no_nan(result)`).
    pub ensures: Vec<Constraint>,
}

/// One `api` item, with the validated rules that target it folded in.
#[derive(Clone, Debug)]
pub struct ApiSpec {
    /// The Python path, e.g. `torch.nn.functional.conv2d`.
    pub name: String,
    pub span: Span,
    /// An explicit operator from `#[aten("aten::name.overload")]`, overriding name-based lookup.
    pub aten: Option<String>,
    /// Parameters in declaration order (Python's order).
    pub params: Vec<ParamSpec>,
    pub returns: Vec<ReturnSpec>,
    /// Preconditions: what a valid call satisfies.
    pub requires: Vec<Constraint>,
    /// Postconditions on the outputs of a call that returned.
    pub ensures: Vec<Constraint>,
    pub oracles: Vec<OracleUse>,
    /// True when the API's body has an `oracles` clause; otherwise `oracles` holds the crash
    /// family and the plan adds every differential oracle that applies and was not refuted.
    pub oracles_written: bool,
    /// Oracles a `rule` with status `rejected` refuted for this API, with the reason it gives.
    pub refuted_oracles: Vec<(String, String)>,
    /// Metamorphic relations: written in the body, or from validated rules.
    pub relations: Vec<RelationSpec>,
    /// The `from` statement: parameters filled from a call of another API (a backward operator
    /// fed by its forward).
    pub from: Option<FromSpec>,
}

/// A `from` statement, checked. The forward's constraints, with its parameters replaced by
/// what the call passes them, are already among the calling API's `requires`.
#[derive(Clone, Debug)]
pub struct FromSpec {
    /// The forward API as checked (its name, parameters, outputs and `#[aten]`), so that the
    /// plan can resolve its operator without the file that declares it.
    pub callee: Box<ApiSpec>,
    /// The statement.
    pub span: Span,
    /// Per parameter of the callee: where its argument comes from.
    pub args: Vec<crate::wire::case::FwdArg>,
    /// The parameters its outputs fill.
    pub binds: Vec<crate::wire::case::Bind>,
}

/// A `relation` statement, checked.
#[derive(Clone, Debug)]
pub struct RelationSpec {
    pub relation: crate::wire::variant::Relation,
    pub span: Span,
    pub origin: Origin,
}

impl ApiSpec {
    /// A private operator (`torch._is_any_true`, `torch.ops.aten._conj`): its callers inside
    /// PyTorch uphold its preconditions, which it asserts rather than checks.
    pub fn is_private(&self) -> bool {
        let last = |path: &str| path.rsplit(['.', ':']).find(|s| !s.is_empty()).map(str::to_string).unwrap_or_default();
        let base = match &self.aten {
            Some(aten) => last(aten.split('.').next().unwrap_or(aten)),
            None => last(self.name.strip_prefix("torch.ops.aten.").map_or(&self.name, |rest| rest.split('.').next().unwrap_or(rest))),
        };
        base.starts_with('_') && !base.starts_with("__")
    }

    /// Whether parameter `i` is filled by the forward call of a `from` statement, whatever a
    /// case draws for it.
    pub fn fed(&self, i: usize) -> bool {
        self.from.iter().flat_map(|f| &f.binds).any(|b| b.param == i)
    }

    pub fn param_index(&self, name: &str) -> Option<usize> {
        self.params.iter().position(|p| p.name == name)
    }

    /// The use of `oracle` in the API's oracles (its clause, or the ones it gets without one).
    pub fn oracle_use(&self, oracle: Oracle) -> Option<&OracleUse> {
        self.oracles.iter().find(|u| u.oracle() == Some(oracle))
    }

    /// Whether the API's oracles include `oracle`.
    pub fn has_oracle(&self, oracle: Oracle) -> bool {
        self.oracle_use(oracle).is_some()
    }

    /// Whether a rejected rule refuted `oracle` for this API.
    pub fn refuted(&self, oracle: Oracle) -> bool {
        self.refuted_oracles.iter().any(|(name, _)| Oracle::parse(name) == Some(oracle))
    }
}

/// The kind of value a parameter holds (optionality is on `ParamSpec`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ParamType {
    Tensor,
    TensorList,
    Int,
    Float,
    Bool,
    Str,
    /// A string from a fixed set (`"mean" | "sum"`).
    Enum(Vec<String>),
    /// A torch.dtype argument (e.g. softmax's `dtype=`).
    Dtype,
    /// A number that may be int or float (ATen `Scalar`).
    Scalar,
    /// `int[]`, or `int[N]` when the length is fixed.
    IntList(Option<u32>),
    FloatList(Option<u32>),
    BoolList(Option<u32>),
}

impl ParamType {
    pub fn describe(&self) -> String {
        match self {
            ParamType::Tensor => "Tensor".into(),
            ParamType::TensorList => "Tensor[]".into(),
            ParamType::Int => "int".into(),
            ParamType::Float => "float".into(),
            ParamType::Bool => "bool".into(),
            ParamType::Str => "str".into(),
            ParamType::Enum(vs) => vs.iter().map(|v| format!("{v:?}")).collect::<Vec<_>>().join(" | "),
            ParamType::Dtype => "dtype".into(),
            ParamType::Scalar => "Scalar".into(),
            ParamType::IntList(n) => list_name("int", *n),
            ParamType::FloatList(n) => list_name("float", *n),
            ParamType::BoolList(n) => list_name("bool", *n),
        }
    }
}

fn list_name(elem: &str, len: Option<u32>) -> String {
    match len {
        Some(n) => format!("{elem}[{n}]"),
        None => format!("{elem}[]"),
    }
}

/// A constant value: a default, a literal in a constraint.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Dtype(DType),
    DtypeSet(Vec<DType>),
    List(Vec<Value>),
}

#[derive(Clone, Debug)]
pub struct ParamSpec {
    pub name: String,
    pub span: Span,
    pub ty: ParamType,
    /// `T?`: None is an accepted value.
    pub optional: bool,
    /// Declared after a bare `*` or a variadic parameter: Python takes it by keyword only.
    pub kw_only: bool,
    /// `*tensors: Tensor[]`: Python's `*args`, the list spread into positional arguments.
    pub variadic: bool,
    /// The default value; a parameter with a default may be omitted from a call.
    pub default: Option<Value>,
}

#[derive(Clone, Debug)]
pub struct ReturnSpec {
    /// `result` for a single unnamed output, else the declared name or `result.N`.
    pub name: String,
    pub ty: ParamType,
}

/// Where a constraint came from.
#[derive(Clone, Debug, PartialEq)]
pub enum Origin {
    /// Written in the api body (possibly through a constraint set).
    Inline,
    /// A `rule` item; its name and metadata.
    Rule(RuleMeta),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum RuleStatus {
    Candidate,
    Validated,
    Rejected,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum RuleSource {
    Manual,
    Llm,
    Inferred,
}

#[derive(Clone, Debug, PartialEq)]
pub struct RuleMeta {
    pub name: String,
    pub status: RuleStatus,
    pub source: RuleSource,
    pub confidence: Option<f64>,
    /// Counts from validation, e.g. `[("pass", 120), ("fail", 0)]`.
    pub evidence: Vec<(String, i64)>,
    /// `reason("...")`: why the rule has its status (a rejected rule's oracles are refuted
    /// with it).
    pub reason: Option<String>,
}

/// What a constraint is about, for violation modes and coverage (DocTer's categories).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Category {
    Dtype,
    Ndim,
    Shape,
    Range,
    Enum,
    Structure,
    /// Relates two or more parameters.
    Invariant,
}

/// One boolean constraint over the parameters (requires) or outputs (ensures).
#[derive(Clone, Debug)]
pub struct Constraint {
    pub expr: TExpr,
    pub span: Span,
    /// The source text, for messages and reports.
    pub text: String,
    pub origin: Origin,
    pub category: Category,
    /// Parameters the constraint mentions.
    pub params: Vec<usize>,
}

/// A resolved, typed expression.
#[derive(Clone, Debug, PartialEq)]
pub enum TExpr {
    Lit(Value),
    Param(usize),
    /// Output `i` of the call (in `ensures`).
    Result(usize),
    /// A variable bound by `forall`/`exists`, by index into the binding stack.
    Bound(u32),
    Prop(Box<TExpr>, Prop),
    Index(Box<TExpr>, Box<TExpr>),
    /// `xs[*]`: every element; the enclosing comparison holds for each.
    Each(Box<TExpr>),
    Unary(UnOp, Box<TExpr>),
    Binary(BinOp, Box<TExpr>, Box<TExpr>),
    Range {
        lo: Box<TExpr>,
        hi: Box<TExpr>,
        inclusive: bool,
    },
    List(Vec<TExpr>),
    If(Box<TExpr>, Box<TExpr>, Box<TExpr>),
    Forall {
        var: u32,
        range: Box<TExpr>,
        body: Box<TExpr>,
    },
    Exists {
        var: u32,
        range: Box<TExpr>,
        body: Box<TExpr>,
    },
    Call(Builtin, Vec<TExpr>),
}

impl Value {
    /// The constant as the case argument of a parameter of type `ty` (an int for a float is a
    /// float); None for a dtype set, or a list of the wrong elements.
    pub fn to_arg(&self, ty: &ParamType) -> Option<crate::wire::case::Arg> {
        use crate::wire::case::Arg;
        Some(match self {
            Value::None => Arg::None,
            Value::Bool(b) => Arg::Bool(*b),
            Value::Int(i) if matches!(ty, ParamType::Float) => Arg::Float(*i as f64),
            Value::Int(i) => Arg::Int(*i),
            Value::Float(f) => Arg::Float(*f),
            Value::Str(s) => Arg::Str(s.clone()),
            Value::Dtype(d) => Arg::Dtype(*d),
            Value::DtypeSet(_) => return None,
            Value::List(items) => match ty {
                ParamType::IntList(_) => Arg::IntList(items.iter().map(|x| if let Value::Int(i) = x { Some(*i) } else { None }).collect::<Option<_>>()?),
                ParamType::FloatList(_) => Arg::FloatList(
                    items
                        .iter()
                        .map(|x| match x {
                            Value::Int(i) => Some(*i as f64),
                            Value::Float(f) => Some(*f),
                            _ => None,
                        })
                        .collect::<Option<_>>()?,
                ),
                ParamType::BoolList(_) => Arg::BoolList(items.iter().map(|x| if let Value::Bool(b) = x { Some(*b) } else { None }).collect::<Option<_>>()?),
                _ => return None,
            },
        })
    }
}

/// Renders a constant as spec source text.
pub fn value_text(v: &Value) -> String {
    match v {
        Value::None => "None".into(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => format!("{f:?}"),
        Value::Str(s) => format!("{s:?}"),
        Value::Dtype(d) => d.name().into(),
        Value::DtypeSet(ds) => format!("[{}]", ds.iter().map(|d| d.name()).collect::<Vec<_>>().join(", ")),
        Value::List(items) => format!("[{}]", items.iter().map(value_text).collect::<Vec<_>>().join(", ")),
    }
}

impl TExpr {
    /// The operands of a chain of `op` (`a and b and c`: a, b, c); the expression itself when it
    /// is no such chain.
    pub fn operands(&self, op: BinOp) -> Vec<&TExpr> {
        match self {
            TExpr::Binary(o, a, b) if *o == op => {
                let mut out = a.operands(op);
                out.extend(b.operands(op));
                out
            }
            e => vec![e],
        }
    }

    /// The expressions directly inside this one, left to right.
    pub fn children(&self) -> Vec<&TExpr> {
        match self {
            TExpr::Prop(x, _) | TExpr::Each(x) | TExpr::Unary(_, x) => vec![x],
            TExpr::Index(a, b) | TExpr::Binary(_, a, b) | TExpr::Range { lo: a, hi: b, .. } => vec![a, b],
            TExpr::List(xs) | TExpr::Call(_, xs) => xs.iter().collect(),
            TExpr::If(c, t, f) => vec![c, t, f],
            TExpr::Forall { range, body, .. } | TExpr::Exists { range, body, .. } => vec![range, body],
            TExpr::Lit(_) | TExpr::Param(_) | TExpr::Result(_) | TExpr::Bound(_) => Vec::new(),
        }
    }
}

/// A property of a tensor or a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Prop {
    Dtype,
    Ndim,
    Shape,
    Numel,
    /// The elements of a tensor, for value-range constraints.
    Values,
    /// The length of a list.
    Len,
}

impl Prop {
    pub fn name(self) -> &'static str {
        match self {
            Prop::Dtype => "dtype",
            Prop::Ndim => "ndim",
            Prop::Shape => "shape",
            Prop::Numel => "numel",
            Prop::Values => "values",
            Prop::Len => "len",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum UnOp {
    Not,
    Neg,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum BinOp {
    Or,
    And,
    Implies,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    In,
    NotIn,
    Add,
    Sub,
    Mul,
    /// Floor division on ints, true division on floats.
    Div,
    Rem,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Or => "or",
            BinOp::And => "and",
            BinOp::Implies => "=>",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::In => "in",
            BinOp::NotIn => "not in",
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
        }
    }

    pub fn is_comparison(self) -> bool {
        matches!(self, BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::In | BinOp::NotIn)
    }
}

/// Functions the language provides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Builtin {
    Len,
    Min,
    Max,
    Abs,
    /// `prod(xs)`: the product of a list of ints (1 for an empty list).
    Prod,
    /// `finite(t)`: every element of t is finite.
    Finite,
    /// `no_nan(t)`: no element of t is NaN (±inf allowed): the function is defined there.
    NoNan,
    /// `contiguous(t)`.
    Contiguous,
    /// `broadcastable(a, b)`: the shapes broadcast together.
    Broadcastable,
}

impl Builtin {
    pub fn from_name(name: &str) -> Option<Builtin> {
        Some(match name {
            "len" => Builtin::Len,
            "min" => Builtin::Min,
            "max" => Builtin::Max,
            "abs" => Builtin::Abs,
            "prod" => Builtin::Prod,
            "finite" => Builtin::Finite,
            "no_nan" => Builtin::NoNan,
            "contiguous" => Builtin::Contiguous,
            "broadcastable" => Builtin::Broadcastable,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Builtin::Len => "len",
            Builtin::Min => "min",
            Builtin::Max => "max",
            Builtin::Abs => "abs",
            Builtin::Prod => "prod",
            Builtin::Finite => "finite",
            Builtin::NoNan => "no_nan",
            Builtin::Contiguous => "contiguous",
            Builtin::Broadcastable => "broadcastable",
        }
    }
}

/// An oracle named in an `oracles` clause, with its arguments.
#[derive(Clone, Debug, PartialEq)]
pub struct OracleUse {
    /// As written: a spec may declare and name an oracle sfz does not implement (W0004).
    pub name: String,
    pub span: Span,
    /// Every parameter's value: the arguments written, the declared defaults for the rest.
    pub args: Vec<(String, Value)>,
    /// Whether any argument was written (a tolerance stated, not defaulted).
    pub written: bool,
}

impl OracleUse {
    /// The oracle it names; None for one sfz does not implement.
    pub fn oracle(&self) -> Option<Oracle> {
        Oracle::parse(&self.name)
    }
}

/// A checked program: its inputs as an API-like spec (parameters and the `requires` that only
/// mention parameters, which the solver and generator serve as for an API) and its IR.
#[derive(Clone, Debug)]
pub struct ProgramSpec {
    pub name: String,
    pub span: Span,
    pub inputs: ApiSpec,
    pub ir: crate::wire::program::ir::ProgramIr,
    /// The source text of each step's expression, for reports.
    pub step_text: Vec<String>,
    /// False when lowering reported an error: such a program is never run.
    pub runnable: bool,
}
