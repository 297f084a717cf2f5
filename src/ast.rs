//! The syntax tree: plain data mirroring the grammar, a span on every node, no semantic information.
//! The formatter prints it back; the checker resolves it into `spec`.
use serde::{Deserialize, Serialize};

use crate::diag::Span;
pub use crate::spec::{BinOp, UnOp};

/// One parsed file.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Module {
    pub items: Vec<Item>,
    /// Ordinary comments (`//`, `/* */`) with their spans, for the formatter.
    pub comments: Vec<Comment>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comment {
    pub span: Span,
    pub text: String,
}

/// A name with its location.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

/// A `///` line, without the slashes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Doc {
    pub text: String,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Item {
    pub docs: Vec<Doc>,
    pub attrs: Vec<Attr>,
    pub kind: ItemKind,
    pub span: Span,
}

/// The keyword an item starts with: what kind of item it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Keyword {
    Use,
    Api,
    Rule,
    Program,
    Dtypes,
    Constraints,
    Type,
    Oracle,
}

impl Keyword {
    pub fn as_str(self) -> &'static str {
        match self {
            Keyword::Use => "use",
            Keyword::Api => "api",
            Keyword::Rule => "rule",
            Keyword::Program => "program",
            Keyword::Dtypes => "dtypes",
            Keyword::Constraints => "constraints",
            Keyword::Type => "type",
            Keyword::Oracle => "oracle",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ItemKind {
    Use(Use),
    Api(Api),
    Rule(Rule),
    Program(Program),
    Dtypes(DtypesDef),
    Constraints(ConstraintSet),
    TypeAlias(TypeAlias),
    Oracle(OracleDecl),
}

impl ItemKind {
    /// The keyword that introduces the item, for messages.
    pub fn keyword(&self) -> &'static str {
        self.key().as_str()
    }

    /// What kind of item this is, without its contents.
    pub fn key(&self) -> Keyword {
        match self {
            ItemKind::Use(_) => Keyword::Use,
            ItemKind::Api(_) => Keyword::Api,
            ItemKind::Rule(_) => Keyword::Rule,
            ItemKind::Program(_) => Keyword::Program,
            ItemKind::Dtypes(_) => Keyword::Dtypes,
            ItemKind::Constraints(_) => Keyword::Constraints,
            ItemKind::TypeAlias(_) => Keyword::Type,
            ItemKind::Oracle(_) => Keyword::Oracle,
        }
    }

    /// The name the item defines, if it defines one.
    pub fn name(&self) -> Option<&Ident> {
        match self {
            ItemKind::Use(_) => None,
            ItemKind::Api(a) => Some(&a.path),
            ItemKind::Rule(r) => Some(&r.name),
            ItemKind::Program(p) => Some(&p.name),
            ItemKind::Dtypes(d) => Some(&d.name),
            ItemKind::Constraints(c) => Some(&c.name),
            ItemKind::TypeAlias(t) => Some(&t.name),
            ItemKind::Oracle(o) => Some(&o.name),
        }
    }
}

/// `#[name]`, `#[name = value]` or `#[name(args)]`; several may share one `#[...]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Attr {
    pub name: Ident,
    pub args: Vec<AttrArg>,
    /// True for the `name = value` form (its one argument is in `args`).
    pub assign: bool,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AttrArg {
    pub key: Option<Ident>,
    pub value: Lit,
    pub span: Span,
}

/// A literal in an attribute.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Lit {
    Int(i64),
    Float { value: f64, text: String },
    Str(String),
    Bool(bool),
    Ident(String),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Use {
    /// The module path, e.g. `std::dtypes`, plus the last segment for `Single`.
    pub path: Vec<Ident>,
    pub tree: UseTree,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum UseTree {
    /// `use a::b::c;` imports `c` from `a::b`.
    Single,
    /// `use a::b::{c, d};`
    Group(Vec<Ident>),
    /// `use a::b::*;`
    Glob(Span),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Api {
    /// The dotted Python path, e.g. `torch.nn.functional.conv2d`, as one identifier.
    pub path: Ident,
    pub params: Vec<Param>,
    pub returns: Option<Returns>,
    pub body: Body,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Param {
    pub docs: Vec<Doc>,
    pub kind: ParamKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ParamKind {
    /// A bare `*`: the parameters after it are keyword-only.
    KwOnlyMarker,
    Named {
        name: Ident,
        ty: Type,
        default: Option<Expr>,
        /// `*name: T[]`: Python's `*args` (`torch.block_diag(*tensors)`).
        variadic: bool,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Type {
    pub kind: TypeKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum TypeKind {
    Named(Ident),
    /// `T[]` or `T[N]`.
    List(Box<Type>, Option<u32>),
    Tuple(Vec<Type>),
    /// `"a" | "b"`: a string enum. Other unions are rejected by the checker.
    Union(Vec<Type>),
    StrLit(String),
    Optional(Box<Type>),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Returns {
    Single(Type),
    Named(Vec<(Ident, Type)>),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    pub name: Ident,
    pub target: Ident,
    pub body: Body,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Program {
    pub name: Ident,
    pub params: Vec<Param>,
    pub body: Body,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DtypesDef {
    pub name: Ident,
    pub value: Expr,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConstraintSet {
    pub name: Ident,
    pub params: Vec<Param>,
    pub body: Body,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TypeAlias {
    pub name: Ident,
    pub ty: Type,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OracleDecl {
    pub name: Ident,
    pub params: Vec<Param>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Body {
    pub stmts: Vec<Stmt>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stmt {
    pub docs: Vec<Doc>,
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum StmtKind {
    /// A precondition; `explicit` when written with the `requires` keyword.
    Require {
        expr: Expr,
        explicit: bool,
    },
    Ensure(Expr),
    Let(Ident, Expr),
    Oracles(Vec<OracleRef>),
    /// `relation name(tolerances): expr;` (a metamorphic relation; `tolerances` are
    /// `float32 = [rtol, atol]` arguments, empty when the parentheses are left out).
    Relation {
        name: Ident,
        tolerances: Vec<CallArg>,
        expr: Expr,
    },
    /// `from api(args) { param: value; ... }`: parameters filled from a call of another API.
    From(From),
}

/// A `from` statement: the forward API called with the statement's arguments, and what each
/// bound parameter takes of its outputs (`result.1`, `like(result.0)`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct From {
    pub callee: Ident,
    pub args: Vec<CallArg>,
    pub binds: Vec<FromBind>,
    /// The braces of the bindings.
    pub block: Span,
}

/// `param: value;` in a `from` block.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FromBind {
    pub docs: Vec<Doc>,
    pub param: Ident,
    pub value: Expr,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OracleRef {
    pub name: Ident,
    pub args: Vec<CallArg>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

impl Expr {
    /// The value of a number literal, possibly negated or in parentheses.
    pub fn number(&self) -> Option<f64> {
        match &self.kind {
            ExprKind::Int(v) => Some(*v as f64),
            ExprKind::Float { value, .. } => Some(*value),
            ExprKind::Unary(UnOp::Neg, inner) => inner.number().map(|v| -v),
            ExprKind::Paren(inner) => inner.number(),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ExprKind {
    Int(i64),
    /// The literal's text is kept so the formatter prints it as written.
    Float {
        value: f64,
        text: String,
    },
    Str(String),
    Bool(bool),
    None,
    Name(String),
    Field(Box<Expr>, Ident),
    Index(Box<Expr>, Box<Expr>),
    /// `xs[*]`
    Each(Box<Expr>),
    Call(Box<Expr>, Vec<CallArg>),
    List(Vec<Expr>),
    Paren(Box<Expr>),
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    Range {
        lo: Box<Expr>,
        hi: Box<Expr>,
        inclusive: bool,
    },
    If {
        cond: Box<Expr>,
        then: Box<Expr>,
        els: Option<Box<Expr>>,
    },
    Forall {
        var: Ident,
        range: Box<Expr>,
        body: Box<Expr>,
    },
    Exists {
        var: Ident,
        range: Box<Expr>,
        body: Box<Expr>,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallArg {
    pub name: Option<Ident>,
    pub value: Expr,
}
