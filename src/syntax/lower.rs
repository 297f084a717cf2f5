//! pest pairs → syntax tree. The grammar guarantees the shape of each pair, so the only
//! diagnostics here are about literals the grammar cannot judge (an int that overflows).
use std::cell::RefCell;
use std::sync::LazyLock;

use pest::iterators::{Pair, Pairs};
use pest::pratt_parser::{Assoc, Op, PrattParser};

use super::Rule;
use crate::ast::*;
use crate::diag::{codes::E0015, Diagnostic, FileId, Span};

static PRATT: LazyLock<PrattParser<Rule>> = LazyLock::new(|| {
    PrattParser::new()
        .op(Op::infix(Rule::implies_op, Assoc::Right))
        .op(Op::infix(Rule::or_op, Assoc::Left))
        .op(Op::infix(Rule::and_op, Assoc::Left))
        .op(Op::prefix(Rule::not_op))
        .op(Op::infix(Rule::eq_op, Assoc::Left)
            | Op::infix(Rule::ne_op, Assoc::Left)
            | Op::infix(Rule::lt_op, Assoc::Left)
            | Op::infix(Rule::le_op, Assoc::Left)
            | Op::infix(Rule::gt_op, Assoc::Left)
            | Op::infix(Rule::ge_op, Assoc::Left)
            | Op::infix(Rule::in_op, Assoc::Left)
            | Op::infix(Rule::not_in_op, Assoc::Left))
        .op(Op::infix(Rule::range_op, Assoc::Left) | Op::infix(Rule::range_incl_op, Assoc::Left))
        .op(Op::infix(Rule::add_op, Assoc::Left) | Op::infix(Rule::sub_op, Assoc::Left))
        .op(Op::infix(Rule::mul_op, Assoc::Left) | Op::infix(Rule::div_op, Assoc::Left) | Op::infix(Rule::rem_op, Assoc::Left))
        .op(Op::prefix(Rule::neg_op))
        .op(Op::postfix(Rule::field) | Op::postfix(Rule::index) | Op::postfix(Rule::call))
});

pub struct Lower<'d> {
    pub file: FileId,
    /// Offset of the parsed slice in the file.
    pub base: usize,
    pub diags: &'d mut Vec<Diagnostic>,
}

/// Keyword tokens appear as pairs; the tree does not need them.
fn is_keyword(rule: Rule) -> bool {
    matches!(
        rule,
        Rule::kw_api
            | Rule::kw_rule
            | Rule::kw_program
            | Rule::kw_use
            | Rule::kw_let
            | Rule::kw_requires
            | Rule::kw_ensures
            | Rule::kw_oracles
            | Rule::kw_oracle
            | Rule::kw_relation
            | Rule::kw_from
            | Rule::kw_dtypes
            | Rule::kw_constraints
            | Rule::kw_type
            | Rule::kw_for
            | Rule::kw_if
            | Rule::kw_then
            | Rule::kw_else
            | Rule::kw_forall
            | Rule::kw_exists
            | Rule::kw_in
    )
}

fn children(pair: Pair<'_, Rule>) -> impl Iterator<Item = Pair<'_, Rule>> {
    pair.into_inner().filter(|p| !is_keyword(p.as_rule()))
}

impl Lower<'_> {
    pub fn item(&mut self, pair: Pair<'_, Rule>) -> Item {
        let cell = RefCell::new(Vec::new());
        let item = Ctx { file: self.file, base: self.base, diags: &cell }.item(pair);
        self.diags.extend(cell.into_inner());
        item
    }
}

/// The lowering context; diagnostics sit in a RefCell so the Pratt closures can share it.
struct Ctx<'a> {
    file: FileId,
    base: usize,
    diags: &'a RefCell<Vec<Diagnostic>>,
}

impl Ctx<'_> {
    fn span(&self, pair: &Pair<'_, Rule>) -> Span {
        let s = pair.as_span();
        Span::new(self.file, self.base + s.start(), self.base + s.end())
    }

    fn ident(&self, pair: Pair<'_, Rule>) -> Ident {
        Ident { name: pair.as_str().to_string(), span: self.span(&pair) }
    }

    fn doc(&self, pair: Pair<'_, Rule>) -> Doc {
        let span = self.span(&pair);
        let text = pair.as_str().trim_start_matches("///");
        let text = text.strip_prefix(' ').unwrap_or(text).trim_end().to_string();
        Doc { text, span }
    }

    fn item(&self, pair: Pair<'_, Rule>) -> Item {
        let span = self.span(&pair);
        let mut docs = Vec::new();
        let mut attrs = Vec::new();
        let mut kind = None;
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::doc => docs.push(self.doc(p)),
                Rule::attribute => attrs.extend(p.into_inner().map(|a| self.attr(a))),
                Rule::use_item => kind = Some(ItemKind::Use(self.use_item(p))),
                Rule::api_item => kind = Some(ItemKind::Api(self.api(p))),
                Rule::rule_item => kind = Some(ItemKind::Rule(self.rule(p))),
                Rule::program_item => kind = Some(ItemKind::Program(self.program(p))),
                Rule::dtypes_item => kind = Some(ItemKind::Dtypes(self.dtypes(p))),
                Rule::constraints_item => kind = Some(ItemKind::Constraints(self.constraint_set(p))),
                Rule::type_item => kind = Some(ItemKind::TypeAlias(self.type_alias(p))),
                Rule::oracle_item => kind = Some(ItemKind::Oracle(self.oracle_decl(p))),
                r => unreachable!("item child {r:?}"),
            }
        }
        Item { docs, attrs, kind: kind.expect("grammar: an item has a kind"), span }
    }

    fn attr(&self, pair: Pair<'_, Rule>) -> Attr {
        let span = self.span(&pair);
        let mut inner = pair.into_inner();
        let name = self.ident(inner.next().expect("attr name"));
        let mut args = Vec::new();
        let mut assign = false;
        for p in inner {
            match p.as_rule() {
                Rule::attr_args => args.extend(p.into_inner().map(|a| self.attr_arg(a))),
                Rule::attr_value => {
                    assign = true;
                    let span = self.span(&p);
                    args.push(AttrArg { key: None, value: self.lit(p), span });
                }
                r => unreachable!("attr child {r:?}"),
            }
        }
        Attr { name, args, assign, span }
    }

    fn attr_arg(&self, pair: Pair<'_, Rule>) -> AttrArg {
        let span = self.span(&pair);
        let mut key = None;
        let mut value = None;
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::ident => key = Some(self.ident(p)),
                Rule::attr_value => value = Some(self.lit(p)),
                r => unreachable!("attr_arg child {r:?}"),
            }
        }
        AttrArg { key, value: value.expect("attr value"), span }
    }

    fn lit(&self, pair: Pair<'_, Rule>) -> Lit {
        let p = pair.into_inner().next().expect("attr_value holds a literal");
        match p.as_rule() {
            Rule::neg_number => {
                let num = p.into_inner().next().expect("number");
                match self.lit_number(num) {
                    Lit::Int(v) => Lit::Int(-v),
                    Lit::Float { value, text } => Lit::Float { value: -value, text: format!("-{text}") },
                    other => other,
                }
            }
            Rule::int_lit | Rule::float_lit => self.lit_number(p),
            Rule::string => Lit::Str(unescape(p.into_inner().next().map_or("", |s| s.as_str()))),
            Rule::bool_lit => Lit::Bool(p.as_str() == "true"),
            Rule::ident => Lit::Ident(p.as_str().to_string()),
            r => unreachable!("literal {r:?}"),
        }
    }

    fn lit_number(&self, p: Pair<'_, Rule>) -> Lit {
        match self.number(p).kind {
            ExprKind::Int(v) => Lit::Int(v),
            ExprKind::Float { value, text } => Lit::Float { value, text },
            _ => unreachable!("numbers are ints or floats"),
        }
    }

    fn use_item(&self, pair: Pair<'_, Rule>) -> Use {
        let path_pair = children(pair).next().expect("use path");
        let mut path = Vec::new();
        let mut tree = UseTree::Single;
        for p in path_pair.into_inner() {
            match p.as_rule() {
                Rule::ident => path.push(self.ident(p)),
                Rule::use_glob => tree = UseTree::Glob(self.span(&p)),
                Rule::use_group => tree = UseTree::Group(p.into_inner().map(|i| self.ident(i)).collect()),
                r => unreachable!("use child {r:?}"),
            }
        }
        Use { path, tree }
    }

    fn api(&self, pair: Pair<'_, Rule>) -> Api {
        let mut path = None;
        let mut params = Vec::new();
        let mut returns = None;
        let mut body = None;
        for p in children(pair) {
            match p.as_rule() {
                Rule::api_path => path = Some(self.ident(p)),
                Rule::params => params = self.params(p),
                Rule::returns => returns = Some(self.returns(p)),
                Rule::body => body = Some(self.body(p)),
                r => unreachable!("api child {r:?}"),
            }
        }
        Api { path: path.expect("api path"), params, returns, body: body.expect("api body") }
    }

    fn params(&self, pair: Pair<'_, Rule>) -> Vec<Param> {
        pair.into_inner().map(|p| self.param(p)).collect()
    }

    fn param(&self, pair: Pair<'_, Rule>) -> Param {
        let span = self.span(&pair);
        let mut docs = Vec::new();
        let mut name = None;
        let mut ty = None;
        let mut default = None;
        let mut kw_only = false;
        let mut variadic = false;
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::doc => docs.push(self.doc(p)),
                Rule::kw_only => kw_only = true,
                Rule::variadic => variadic = true,
                Rule::ident => name = Some(self.ident(p)),
                Rule::ty => ty = Some(self.ty(p)),
                Rule::expr => default = Some(self.expr(p)),
                r => unreachable!("param child {r:?}"),
            }
        }
        let kind = if kw_only { ParamKind::KwOnlyMarker } else { ParamKind::Named { name: name.expect("param name"), ty: ty.expect("param type"), default, variadic } };
        Param { docs, kind, span }
    }

    fn ty(&self, pair: Pair<'_, Rule>) -> Type {
        let span = self.span(&pair);
        let mut inner = pair.into_inner();
        let union = self.ty_union(inner.next().expect("type body"));
        match inner.next() {
            Some(_optional) => Type { kind: TypeKind::Optional(Box::new(union)), span },
            None => union,
        }
    }

    fn ty_union(&self, pair: Pair<'_, Rule>) -> Type {
        let span = self.span(&pair);
        let mut parts: Vec<Type> = pair.into_inner().map(|p| self.ty_postfix(p)).collect();
        if parts.len() == 1 {
            parts.pop().expect("one part")
        } else {
            Type { kind: TypeKind::Union(parts), span }
        }
    }

    fn ty_postfix(&self, pair: Pair<'_, Rule>) -> Type {
        let mut inner = pair.into_inner();
        let mut ty = self.ty_atom(inner.next().expect("type atom"));
        for suffix in inner {
            let span = ty.span.to(self.span(&suffix));
            let len = suffix.into_inner().next().map(|n| match self.int(&n) {
                Some(v) if (0..=u32::MAX as i64).contains(&v) => v as u32,
                _ => {
                    self.diags.borrow_mut().push(Diagnostic::new(E0015, "list length out of range").with_label(self.span(&n), "must fit in 0..=4294967295"));
                    0
                }
            });
            ty = Type { kind: TypeKind::List(Box::new(ty), len), span };
        }
        ty
    }

    fn ty_atom(&self, pair: Pair<'_, Rule>) -> Type {
        let span = self.span(&pair);
        let p = pair.into_inner().next().expect("type atom body");
        let kind = match p.as_rule() {
            Rule::string => TypeKind::StrLit(unescape(p.into_inner().next().map_or("", |s| s.as_str()))),
            Rule::ty_tuple => TypeKind::Tuple(p.into_inner().map(|t| self.ty(t)).collect()),
            Rule::ident => TypeKind::Named(self.ident(p)),
            r => unreachable!("type atom {r:?}"),
        };
        Type { kind, span }
    }

    fn returns(&self, pair: Pair<'_, Rule>) -> Returns {
        let p = pair.into_inner().next().expect("returns body");
        match p.as_rule() {
            Rule::ty => Returns::Single(self.ty(p)),
            Rule::ret_fields => Returns::Named(
                p.into_inner()
                    .map(|f| {
                        let mut inner = f.into_inner();
                        let name = self.ident(inner.next().expect("field name"));
                        (name, self.ty(inner.next().expect("field type")))
                    })
                    .collect(),
            ),
            r => unreachable!("returns {r:?}"),
        }
    }

    fn rule(&self, pair: Pair<'_, Rule>) -> crate::ast::Rule {
        let mut it = children(pair);
        let name = self.ident(it.next().expect("rule name"));
        let target = self.ident(it.next().expect("rule target"));
        let body = self.body(it.next().expect("rule body"));
        crate::ast::Rule { name, target, body }
    }

    fn program(&self, pair: Pair<'_, Rule>) -> Program {
        let (name, params, body) = self.named_params_body(pair);
        Program { name, params, body }
    }

    fn constraint_set(&self, pair: Pair<'_, Rule>) -> ConstraintSet {
        let (name, params, body) = self.named_params_body(pair);
        ConstraintSet { name, params, body }
    }

    fn named_params_body(&self, pair: Pair<'_, Rule>) -> (Ident, Vec<Param>, Body) {
        let mut name = None;
        let mut params = Vec::new();
        let mut body = None;
        for p in children(pair) {
            match p.as_rule() {
                Rule::ident => name = Some(self.ident(p)),
                Rule::params => params = self.params(p),
                Rule::body => body = Some(self.body(p)),
                r => unreachable!("child {r:?}"),
            }
        }
        (name.expect("name"), params, body.expect("body"))
    }

    fn dtypes(&self, pair: Pair<'_, Rule>) -> DtypesDef {
        let mut it = children(pair);
        let name = self.ident(it.next().expect("dtypes name"));
        let value = self.expr(it.next().expect("dtypes value"));
        DtypesDef { name, value }
    }

    fn type_alias(&self, pair: Pair<'_, Rule>) -> TypeAlias {
        let mut it = children(pair);
        let name = self.ident(it.next().expect("type name"));
        let ty = self.ty(it.next().expect("type"));
        TypeAlias { name, ty }
    }

    fn oracle_decl(&self, pair: Pair<'_, Rule>) -> OracleDecl {
        let mut name = None;
        let mut params = Vec::new();
        for p in children(pair) {
            match p.as_rule() {
                Rule::ident => name = Some(self.ident(p)),
                Rule::params => params = self.params(p),
                r => unreachable!("oracle child {r:?}"),
            }
        }
        OracleDecl { name: name.expect("oracle name"), params }
    }

    fn body(&self, pair: Pair<'_, Rule>) -> Body {
        let span = self.span(&pair);
        Body { stmts: pair.into_inner().map(|s| self.stmt(s)).collect(), span }
    }

    fn stmt(&self, pair: Pair<'_, Rule>) -> Stmt {
        let span = self.span(&pair);
        let mut docs = Vec::new();
        let mut kind = None;
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::doc => docs.push(self.doc(p)),
                Rule::requires_stmt => {
                    let explicit = p.clone().into_inner().any(|c| c.as_rule() == Rule::kw_requires);
                    let expr = self.expr(children(p).find(|c| c.as_rule() == Rule::expr).expect("requires expr"));
                    kind = Some(StmtKind::Require { expr, explicit });
                }
                Rule::ensures_stmt => {
                    let expr = self.expr(children(p).find(|c| c.as_rule() == Rule::expr).expect("ensures expr"));
                    kind = Some(StmtKind::Ensure(expr));
                }
                Rule::let_stmt => {
                    let mut it = children(p);
                    let name = self.ident(it.next().expect("let name"));
                    kind = Some(StmtKind::Let(name, self.expr(it.next().expect("let value"))));
                }
                Rule::oracles_stmt => {
                    kind = Some(StmtKind::Oracles(children(p).map(|o| self.oracle_ref(o)).collect()));
                }
                Rule::relation_stmt => {
                    let (mut name, mut tolerances, mut expr) = (None, Vec::new(), None);
                    for c in children(p) {
                        match c.as_rule() {
                            Rule::ident => name = Some(self.ident(c)),
                            Rule::call_args => tolerances = self.call_args(c),
                            Rule::expr => expr = Some(self.expr(c)),
                            r => unreachable!("relation child {r:?}"),
                        }
                    }
                    kind = Some(StmtKind::Relation { name: name.expect("relation name"), tolerances, expr: expr.expect("relation expr") });
                }
                Rule::from_stmt => kind = Some(StmtKind::From(self.forward_stmt(p))),
                r => unreachable!("stmt child {r:?}"),
            }
        }
        Stmt { docs, kind: kind.expect("statement kind"), span }
    }

    fn forward_stmt(&self, pair: Pair<'_, Rule>) -> From {
        let (mut callee, mut args, mut binds, mut block) = (None, Vec::new(), Vec::new(), None);
        for c in children(pair) {
            match c.as_rule() {
                Rule::api_path => callee = Some(self.ident(c)),
                Rule::call_args => args = self.call_args(c),
                Rule::from_block => {
                    block = Some(self.span(&c));
                    for b in c.into_inner() {
                        let span = self.span(&b);
                        let (mut docs, mut param, mut value) = (Vec::new(), None, None);
                        for part in b.into_inner() {
                            match part.as_rule() {
                                Rule::doc => docs.push(self.doc(part)),
                                Rule::ident => param = Some(self.ident(part)),
                                Rule::expr => value = Some(self.expr(part)),
                                r => unreachable!("from binding child {r:?}"),
                            }
                        }
                        binds.push(FromBind { docs, param: param.expect("bound parameter"), value: value.expect("bound value"), span });
                    }
                }
                r => unreachable!("from child {r:?}"),
            }
        }
        From { callee: callee.expect("from callee"), args, binds, block: block.expect("from block") }
    }

    fn oracle_ref(&self, pair: Pair<'_, Rule>) -> OracleRef {
        let span = self.span(&pair);
        let mut inner = pair.into_inner();
        let name = self.ident(inner.next().expect("oracle name"));
        let args = inner.next().map(|a| self.call_args(a)).unwrap_or_default();
        OracleRef { name, args, span }
    }

    fn call_args(&self, pair: Pair<'_, Rule>) -> Vec<CallArg> {
        pair.into_inner()
            .map(|arg| {
                let mut name = None;
                let mut value = None;
                for p in arg.into_inner() {
                    match p.as_rule() {
                        Rule::ident => name = Some(self.ident(p)),
                        Rule::expr => value = Some(self.expr(p)),
                        r => unreachable!("call arg child {r:?}"),
                    }
                }
                CallArg { name, value: value.expect("argument value") }
            })
            .collect()
    }

    fn expr(&self, pair: Pair<'_, Rule>) -> Expr {
        self.pratt(pair.into_inner())
    }

    fn pratt(&self, pairs: Pairs<'_, Rule>) -> Expr {
        PRATT
            .map_primary(|p| self.primary(p))
            .map_prefix(|op, rhs| {
                let span = self.span(&op).to(rhs.span);
                let op = if op.as_rule() == Rule::not_op { UnOp::Not } else { UnOp::Neg };
                Expr { kind: ExprKind::Unary(op, Box::new(rhs)), span }
            })
            .map_postfix(|lhs, op| {
                let span = lhs.span.to(self.span(&op));
                let kind = match op.as_rule() {
                    Rule::field => {
                        let f = op.into_inner().next().expect("field name");
                        ExprKind::Field(Box::new(lhs), self.ident(f))
                    }
                    Rule::index => {
                        let i = op.into_inner().next().expect("index body");
                        if i.as_rule() == Rule::each {
                            ExprKind::Each(Box::new(lhs))
                        } else {
                            ExprKind::Index(Box::new(lhs), Box::new(self.expr(i)))
                        }
                    }
                    Rule::call => {
                        let args = op.into_inner().next().map(|a| self.call_args(a)).unwrap_or_default();
                        ExprKind::Call(Box::new(lhs), args)
                    }
                    r => unreachable!("postfix {r:?}"),
                };
                Expr { kind, span }
            })
            .map_infix(|lhs, op, rhs| {
                let span = lhs.span.to(rhs.span);
                let bin = |b| ExprKind::Binary(b, Box::new(lhs.clone()), Box::new(rhs.clone()));
                let kind = match op.as_rule() {
                    Rule::implies_op => bin(BinOp::Implies),
                    Rule::or_op => bin(BinOp::Or),
                    Rule::and_op => bin(BinOp::And),
                    Rule::eq_op => bin(BinOp::Eq),
                    Rule::ne_op => bin(BinOp::Ne),
                    Rule::lt_op => bin(BinOp::Lt),
                    Rule::le_op => bin(BinOp::Le),
                    Rule::gt_op => bin(BinOp::Gt),
                    Rule::ge_op => bin(BinOp::Ge),
                    Rule::in_op => bin(BinOp::In),
                    Rule::not_in_op => bin(BinOp::NotIn),
                    Rule::add_op => bin(BinOp::Add),
                    Rule::sub_op => bin(BinOp::Sub),
                    Rule::mul_op => bin(BinOp::Mul),
                    Rule::div_op => bin(BinOp::Div),
                    Rule::rem_op => bin(BinOp::Rem),
                    Rule::range_op | Rule::range_incl_op => {
                        ExprKind::Range { lo: Box::new(lhs.clone()), hi: Box::new(rhs.clone()), inclusive: op.as_rule() == Rule::range_incl_op }
                    }
                    r => unreachable!("infix {r:?}"),
                };
                Expr { kind, span }
            })
            .parse(pairs)
    }

    fn primary(&self, pair: Pair<'_, Rule>) -> Expr {
        let span = self.span(&pair);
        let kind = match pair.as_rule() {
            Rule::int_lit | Rule::float_lit => return self.number(pair),
            Rule::string => ExprKind::Str(unescape(pair.into_inner().next().map_or("", |s| s.as_str()))),
            Rule::bool_lit => ExprKind::Bool(pair.as_str() == "true"),
            Rule::none_lit => ExprKind::None,
            Rule::ident => ExprKind::Name(pair.as_str().to_string()),
            Rule::list => ExprKind::List(pair.into_inner().map(|e| self.expr(e)).collect()),
            Rule::paren => ExprKind::Paren(Box::new(self.expr(pair.into_inner().next().expect("paren body")))),
            Rule::if_expr => {
                let mut it = children(pair);
                let cond = Box::new(self.expr(it.next().expect("if cond")));
                let then = Box::new(self.expr(it.next().expect("if then")));
                let els = it.next().map(|e| Box::new(self.expr(e)));
                ExprKind::If { cond, then, els }
            }
            Rule::forall_expr | Rule::exists_expr => {
                let forall = pair.as_rule() == Rule::forall_expr;
                let mut it = children(pair);
                let var = self.ident(it.next().expect("bound name"));
                let range = Box::new(self.expr(it.next().expect("range")));
                let body = Box::new(self.expr(it.next().expect("body")));
                if forall {
                    ExprKind::Forall { var, range, body }
                } else {
                    ExprKind::Exists { var, range, body }
                }
            }
            r => unreachable!("primary {r:?}"),
        };
        Expr { kind, span }
    }

    fn int(&self, pair: &Pair<'_, Rule>) -> Option<i64> {
        let text: String = pair.as_str().chars().filter(|&c| c != '_').collect();
        match text.strip_prefix("0x") {
            Some(hex) => i64::from_str_radix(hex, 16).ok(),
            None => text.parse().ok(),
        }
    }

    fn number(&self, pair: Pair<'_, Rule>) -> Expr {
        let span = self.span(&pair);
        let text = pair.as_str();
        let kind = if pair.as_rule() == Rule::int_lit {
            match self.int(&pair) {
                Some(v) => ExprKind::Int(v),
                None => {
                    self.diags.borrow_mut().push(
                        Diagnostic::new(E0015, "integer literal out of range")
                            .with_label(span, "does not fit in a 64-bit signed integer")
                            .with_help("ints in specs are 64-bit; use a float literal for larger magnitudes"),
                    );
                    ExprKind::Int(0)
                }
            }
        } else {
            let value = match text {
                "inf" => f64::INFINITY,
                "nan" => f64::NAN,
                _ => text.chars().filter(|&c| c != '_').collect::<String>().parse().unwrap_or(f64::NAN),
            };
            ExprKind::Float { value, text: text.to_string() }
        };
        Expr { kind, span }
    }
}

/// Resolves `\"`, `\\`, `\n`, `\t`; other escapes keep the escaped character.
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}
