//! `sfz fmt`: the canonical layout of a spec. The tree is printed back through a small pretty
//! printer (`doc`), so line breaks depend on width, not on how the input was broken.
//!
//! What is kept: every token's meaning, doc comments, ordinary comments, literals as written
//! (ints and strings are printed from their source text, floats from the text the parser kept),
//! and single blank lines between statements and items. What is canonical: indentation (four
//! spaces), spacing, trailing commas in broken lists, one `#[...]` per item, `and`/`or`/`not`
//! for `&&`/`||`/`!`. A text with syntax errors is refused, never guessed at.
//!
//! Comments are anchored to items, parameters and statements. A comment that sits inside
//! something smaller (an expression, a type, a `use` group) is moved to its own line before
//! the enclosing anchor, so no comment is ever lost. The output is a fixed point: formatting it
//! again changes nothing (a property test checks this, and that the tree is unchanged).
mod doc;

use doc::{concat, group, if_break, nest, text, Doc};

use crate::ast::*;
use crate::diag::{Diagnostic, FileId, Span};

/// Lines are broken to fit in this many columns where the grammar allows.
pub const WIDTH: usize = 100;
const INDENT: usize = 4;

/// Formats a file's text, or returns its syntax errors (a formatter does not guess).
pub fn format_text(text: &str) -> Result<String, Vec<Diagnostic>> {
    let (module, diags) = crate::syntax::parse(FileId(0), text);
    if diags.iter().any(Diagnostic::is_error) {
        return Err(diags);
    }
    Ok(format_module(text, &module))
}

/// Formats a parsed module; `src` is the text it was parsed from (literals and comments are
/// read from it).
pub fn format_module(src: &str, module: &Module) -> String {
    let mut p = Printer { src, comments: &module.comments, next: 0 };
    let mut out = String::new();
    let mut last_end = 0u32;
    let mut prev: Option<(&'static str, bool)> = None;
    let push = |out: &mut String, blank: bool, chunk: &str| {
        if !out.is_empty() {
            out.push('\n');
            if blank {
                out.push('\n');
            }
        }
        out.push_str(chunk);
    };
    for item in &module.items {
        let before = p.take_before(item.span.lo);
        let doc = p.item(item);
        // Comments inside the item that no anchor took (in a type, a `use` group, a list)
        // move before it.
        let inner = p.take_before(item.span.hi);
        let trailing = p.trailing(item.span.hi);
        let mut rendered = doc::render(&doc, WIDTH);
        if let Some(c) = trailing {
            rendered.push(' ');
            rendered.push_str(&c.text);
        }
        let multiline = rendered.contains('\n');
        let keyword = item.kind.keyword();
        // Items are separated by a blank line, except runs of one-line items of one kind
        // (`use` lines, `dtypes` groups), where the source's choice is kept.
        let forced = prev.is_some_and(|(k, ml)| k != keyword || ml || multiline);
        let mut first = true;
        for c in &before {
            let blank = (first && forced) || p.blank_between(last_end, c.span.lo);
            push(&mut out, blank, &c.text);
            last_end = c.span.hi;
            first = false;
        }
        // The item's blank line goes before the comments moved out of it.
        let mut blank = (first && forced) || p.blank_between(last_end, item.span.lo);
        for c in &inner {
            push(&mut out, blank, &c.text);
            blank = false;
        }
        push(&mut out, blank, &rendered);
        last_end = trailing.map_or(item.span.hi, |c| c.span.hi);
        prev = Some((keyword, multiline));
    }
    for c in p.take_before(u32::MAX) {
        let blank = p.blank_between(last_end, c.span.lo);
        push(&mut out, blank, &c.text);
        last_end = c.span.hi;
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

/// One element of a bracketed list, with the comments anchored to it.
struct Elem<'a> {
    before: Vec<&'a Comment>,
    doc: Doc,
    trailing: Option<&'a Comment>,
}

impl Elem<'_> {
    fn plain(doc: Doc) -> Self {
        Elem { before: Vec::new(), doc, trailing: None }
    }
}

/// `open a, b close`, or one element per line with a trailing comma when it does not fit or
/// when a comment must end a line.
fn delimited(open: &str, elems: Vec<Elem>, close: &str) -> Doc {
    if elems.is_empty() {
        return text(format!("{open}{close}"));
    }
    let commented = elems.iter().any(|e| !e.before.is_empty() || e.trailing.is_some());
    let line = || if commented { Doc::HardLine } else { Doc::Line };
    let first = if commented { Doc::HardLine } else { Doc::SoftLine };
    let mut inner = vec![first];
    let n = elems.len();
    for (i, e) in elems.into_iter().enumerate() {
        for c in e.before {
            inner.push(text(c.text.clone()));
            inner.push(Doc::HardLine);
        }
        inner.push(e.doc);
        inner.push(if i + 1 < n { text(",") } else { if_break(text(","), text("")) });
        if let Some(c) = e.trailing {
            inner.push(text(format!(" {}", c.text)));
        }
        if i + 1 < n {
            inner.push(line());
        }
    }
    let last = if commented { Doc::HardLine } else { Doc::SoftLine };
    group(concat([text(open), nest(INDENT, concat(inner)), last, text(close)]))
}

/// `a, b, c` joined with breakable separators (no brackets), for `oracles` clauses.
fn joined(parts: Vec<Doc>) -> Doc {
    let mut out = Vec::new();
    for (i, p) in parts.into_iter().enumerate() {
        if i > 0 {
            out.push(text(","));
        }
        out.push(Doc::Line);
        out.push(p);
    }
    concat(out)
}

/// Something printed on its own line in a braced block (`Printer::block`), the comments around
/// it anchored to it.
trait Anchor {
    fn span(&self) -> Span;
}

impl Anchor for Stmt {
    fn span(&self) -> Span {
        self.span
    }
}

impl Anchor for FromBind {
    fn span(&self) -> Span {
        self.span
    }
}

struct Printer<'a> {
    src: &'a str,
    comments: &'a [Comment],
    /// The first comment not printed yet.
    next: usize,
}

impl<'a> Printer<'a> {
    /// The comments not yet printed that start before `pos`.
    fn take_before(&mut self, pos: u32) -> Vec<&'a Comment> {
        let start = self.next;
        while self.comments.get(self.next).is_some_and(|c| c.span.lo < pos) {
            self.next += 1;
        }
        self.comments[start..self.next].iter().collect()
    }

    /// The next comment, if it follows `end` on the same line with only a separator between.
    fn trailing(&mut self, end: u32) -> Option<&'a Comment> {
        let c = self.comments.get(self.next)?;
        let gap = self.src.get(end as usize..c.span.lo as usize)?;
        if gap.chars().all(|ch| matches!(ch, ' ' | '\t' | ',')) {
            self.next += 1;
            Some(c)
        } else {
            None
        }
    }

    /// Where a node's last token ends. pest spans of rules that end in an optional part
    /// (`x: T` before an absent `= default`) also cover the whitespace and comments after them.
    fn content_end(&self, span: Span) -> u32 {
        let mut end = span.hi as usize;
        loop {
            let trimmed = self.src.get(span.lo as usize..end).map_or(0, |s| s.trim_end().len());
            end = span.lo as usize + trimmed;
            // The last comment starting before `end` (comments are sorted by position).
            let i = self.comments.partition_point(|c| (c.span.lo as usize) < end);
            match i.checked_sub(1).map(|i| &self.comments[i]) {
                Some(c) if end <= c.span.hi as usize && c.span.lo >= span.lo => end = c.span.lo as usize,
                _ => return end as u32,
            }
        }
    }

    /// Whether the source has a blank line between two offsets.
    fn blank_between(&self, from: u32, to: u32) -> bool {
        self.src.get(from as usize..to as usize).is_some_and(|s| s.matches('\n').count() >= 2)
    }

    /// The source text of a span ("" if the span is not on character boundaries).
    fn slice(&self, span: Span) -> &'a str {
        self.src.get(span.range()).unwrap_or("")
    }

    fn docs(&self, docs: &[crate::ast::Doc]) -> Vec<Doc> {
        docs.iter()
            .flat_map(|d| {
                let line = if d.text.is_empty() { "///".to_string() } else { format!("/// {}", d.text) };
                [text(line), Doc::HardLine]
            })
            .collect()
    }

    fn item(&mut self, item: &Item) -> Doc {
        let mut parts = self.docs(&item.docs);
        if !item.attrs.is_empty() {
            let attrs = item.attrs.iter().map(|a| Elem::plain(attr(a))).collect();
            parts.push(delimited("#[", attrs, "]"));
            parts.push(Doc::HardLine);
        }
        parts.push(match &item.kind {
            ItemKind::Use(u) => self.use_item(u),
            ItemKind::Api(api) => {
                let mut head = vec![text(format!("api {}", api.path.name)), self.params(&api.params)];
                if let Some(r) = &api.returns {
                    head.push(text(" -> "));
                    head.push(match r {
                        Returns::Single(t) => ty(t),
                        Returns::Named(fields) => {
                            let elems = fields.iter().map(|(n, t)| Elem::plain(concat([text(format!("{}: ", n.name)), ty(t)]))).collect();
                            delimited("(", elems, ")")
                        }
                    });
                }
                head.push(text(" "));
                head.push(self.body(&api.body));
                concat(head)
            }
            ItemKind::Rule(r) => concat([text(format!("rule {} for {} ", r.name.name, r.target.name)), self.body(&r.body)]),
            ItemKind::Program(prog) => concat([text(format!("program {}", prog.name.name)), self.params(&prog.params), text(" "), self.body(&prog.body)]),
            ItemKind::Constraints(set) => concat([text(format!("constraints {}", set.name.name)), self.params(&set.params), text(" "), self.body(&set.body)]),
            ItemKind::Dtypes(d) => concat([text(format!("dtypes {} = ", d.name.name)), self.expr(&d.value), text(";")]),
            ItemKind::TypeAlias(t) => concat([text(format!("type {} = ", t.name.name)), ty(&t.ty), text(";")]),
            ItemKind::Oracle(o) => {
                let params = if o.params.is_empty() { text("") } else { self.params(&o.params) };
                concat([text(format!("oracle {}", o.name.name)), params, text(";")])
            }
        });
        concat(parts)
    }

    fn use_item(&mut self, u: &Use) -> Doc {
        let path = u.path.iter().map(|i| i.name.as_str()).collect::<Vec<_>>().join("::");
        match &u.tree {
            UseTree::Single => text(format!("use {path};")),
            UseTree::Glob(_) => text(format!("use {path}::*;")),
            UseTree::Group(names) => {
                // Names in a group are anchors, as parameters are: `floating, // why`.
                let mut elems = Vec::new();
                for n in names {
                    let before = self.take_before(n.span.lo);
                    let trailing = self.trailing(n.span.hi);
                    elems.push(Elem { before, doc: text(n.name.clone()), trailing });
                }
                concat([text(format!("use {path}::")), delimited("{", elems, "}"), text(";")])
            }
        }
    }

    fn params(&mut self, params: &[Param]) -> Doc {
        let mut elems = Vec::new();
        for p in params {
            let mut before = self.take_before(p.span.lo);
            let mut parts = self.docs(&p.docs);
            parts.push(match &p.kind {
                ParamKind::KwOnlyMarker => text("*"),
                ParamKind::Named { name, ty: t, default, variadic } => {
                    let star = if *variadic { "*" } else { "" };
                    let mut d = vec![text(format!("{star}{}: ", name.name)), ty(t)];
                    if let Some(e) = default {
                        d.push(text(" = "));
                        d.push(self.expr(e));
                    }
                    concat(d)
                }
            });
            let end = self.content_end(p.span);
            before.extend(self.take_before(end));
            let trailing = self.trailing(end);
            elems.push(Elem { before, doc: concat(parts), trailing });
        }
        // Parameters with doc comments are laid out one per line.
        let documented = params.iter().any(|p| !p.docs.is_empty());
        let list = delimited("(", elems, ")");
        if documented {
            if let Doc::Group { doc, .. } = list {
                return Doc::Group { doc, forced: true };
            }
        }
        list
    }

    fn body(&mut self, body: &Body) -> Doc {
        self.block(&body.stmts, body.span, Printer::stmt)
    }

    /// A braced block of `items` one per line (a body's statements, a `from` statement's
    /// bindings), each with its comments: those before it keep their blank lines, those inside it
    /// move before it (after its blank line), one after it on its line stays there.
    fn block<T: Anchor>(&mut self, items: &[T], braces: Span, print: impl Fn(&mut Self, &T) -> Doc) -> Doc {
        let mut inner = Vec::new();
        let mut last_end = braces.lo + 1;
        let mut first = true;
        let mut push = |inner: &mut Vec<Doc>, blank: bool, d: Doc| {
            inner.push(Doc::HardLine);
            if blank && !first {
                inner.push(Doc::HardLine);
            }
            inner.push(d);
            first = false;
        };
        for item in items {
            let span = item.span();
            for c in self.take_before(span.lo) {
                let blank = self.blank_between(last_end, c.span.lo);
                push(&mut inner, blank, text(c.text.clone()));
                last_end = c.span.hi;
            }
            // Printed first: an item with a block of its own (`from`) takes the comments in it.
            let d = print(self, item);
            let mut blank = self.blank_between(last_end, span.lo);
            for c in self.take_before(span.hi) {
                push(&mut inner, blank, text(c.text.clone()));
                blank = false;
            }
            let d = match self.trailing(span.hi) {
                Some(c) => {
                    last_end = c.span.hi;
                    concat([d, text(format!(" {}", c.text))])
                }
                None => {
                    last_end = span.hi;
                    d
                }
            };
            push(&mut inner, blank, d);
        }
        for c in self.take_before(braces.hi) {
            let blank = self.blank_between(last_end, c.span.lo);
            push(&mut inner, blank, text(c.text.clone()));
            last_end = c.span.hi;
        }
        if inner.is_empty() {
            return text("{}");
        }
        concat([text("{"), nest(INDENT, concat(inner)), Doc::HardLine, text("}")])
    }

    fn stmt(&mut self, stmt: &Stmt) -> Doc {
        let mut parts = self.docs(&stmt.docs);
        let (keyword, body) = match &stmt.kind {
            StmtKind::Require { expr, explicit } => (if *explicit { "requires " } else { "" }, self.expr(expr)),
            StmtKind::Ensure(expr) => ("ensures ", self.expr(expr)),
            StmtKind::Let(name, expr) => {
                return concat(parts.into_iter().chain([text(format!("let {} = ", name.name)), self.expr(expr), text(";")]));
            }
            StmtKind::Oracles(refs) => {
                let refs = refs.iter().map(|r| self.oracle_ref(r)).collect();
                parts.push(group(concat([text("oracles"), nest(INDENT, joined(refs)), text(";")])));
                return concat(parts);
            }
            StmtKind::Relation { name, tolerances, expr } => {
                parts.push(text(format!("relation {}", name.name)));
                if !tolerances.is_empty() {
                    parts.push(self.call_args(tolerances));
                }
                // Too long for one line, the body moves under the header (the header stays whole).
                parts.push(text(":"));
                parts.push(group(concat([nest(INDENT, concat([Doc::Line, self.expr(expr)])), text(";")])));
                return concat(parts);
            }
            StmtKind::From(f) => {
                parts.push(text(format!("from {}", f.callee.name)));
                parts.push(self.call_args(&f.args));
                parts.push(text(" "));
                parts.push(self.forward_block(f));
                return concat(parts);
            }
        };
        parts.push(text(keyword));
        parts.push(body);
        parts.push(text(";"));
        concat(parts)
    }

    /// The bindings of a `from` statement, one per line, with comments anchored to them as
    /// statements are in a body.
    fn forward_block(&mut self, f: &From) -> Doc {
        self.block(&f.binds, f.block, |p, b| {
            let mut parts = p.docs(&b.docs);
            parts.push(text(format!("{}: ", b.param.name)));
            parts.push(p.expr(&b.value));
            parts.push(text(";"));
            concat(parts)
        })
    }

    fn oracle_ref(&self, r: &OracleRef) -> Doc {
        if r.args.is_empty() {
            return text(r.name.name.clone());
        }
        concat([text(r.name.name.clone()), self.call_args(&r.args)])
    }

    fn call_args(&self, args: &[CallArg]) -> Doc {
        let elems = args
            .iter()
            .map(|a| {
                let value = self.expr(&a.value);
                Elem::plain(match &a.name {
                    Some(n) => concat([text(format!("{} = ", n.name)), value]),
                    None => value,
                })
            })
            .collect();
        delimited("(", elems, ")")
    }

    fn expr(&self, e: &Expr) -> Doc {
        match &e.kind {
            ExprKind::Int(v) => {
                // As written (`0x1F`, `1_000`) when the source text is the literal.
                let s = self.slice(e.span);
                if s.starts_with(|c: char| c.is_ascii_digit()) && s.chars().all(|c| c.is_ascii_hexdigit() || c == '_' || c == 'x') {
                    text(s)
                } else {
                    text(v.to_string())
                }
            }
            ExprKind::Float { text: t, .. } => text(t.clone()),
            ExprKind::Str(s) => {
                let src = self.slice(e.span);
                if src.len() >= 2 && src.starts_with('"') && src.ends_with('"') {
                    text(src)
                } else {
                    text(crate::syntax::quote(s))
                }
            }
            ExprKind::Bool(b) => text(b.to_string()),
            ExprKind::None => text("None"),
            ExprKind::Name(n) => text(n.clone()),
            ExprKind::Field(base, f) => {
                // `1 .x` must not print as `1.x` (a float); such a base keeps a space.
                let sep = if matches!(base.kind, ExprKind::Int(_) | ExprKind::Float { .. }) { " ." } else { "." };
                concat([self.expr(base), text(format!("{sep}{}", f.name))])
            }
            ExprKind::Index(base, i) => concat([self.expr(base), text("["), self.expr(i), text("]")]),
            ExprKind::Each(base) => concat([self.expr(base), text("[*]")]),
            ExprKind::Call(callee, args) => concat([self.expr(callee), self.call_args(args)]),
            ExprKind::List(items) => delimited("[", items.iter().map(|i| Elem::plain(self.expr(i))).collect(), "]"),
            ExprKind::Paren(inner) => concat([text("("), self.expr(inner), text(")")]),
            ExprKind::Unary(UnOp::Not, inner) => concat([text("not "), self.expr(inner)]),
            ExprKind::Unary(UnOp::Neg, inner) => concat([text("-"), self.expr(inner)]),
            ExprKind::Binary(op @ (BinOp::And | BinOp::Or | BinOp::Implies), _, _) => self.chain(*op, e),
            // A long comparison may break before its operator; arithmetic stays on one line.
            ExprKind::Binary(op, l, r) if op.is_comparison() => group(concat([self.expr(l), nest(INDENT, concat([Doc::Line, text(format!("{} ", op.symbol())), self.expr(r)]))])),
            ExprKind::Binary(op, l, r) => concat([self.expr(l), text(format!(" {} ", op.symbol())), self.expr(r)]),
            ExprKind::Range { lo, hi, inclusive } => {
                // `1. ..2`: a float written with a bare dot keeps a space before the range.
                let lo_dot = matches!(&lo.kind, ExprKind::Float { text, .. } if text.ends_with('.'));
                let op = match (lo_dot, inclusive) {
                    (false, false) => "..",
                    (false, true) => "..=",
                    (true, false) => " ..",
                    (true, true) => " ..=",
                };
                concat([self.expr(lo), text(op), self.expr(hi)])
            }
            ExprKind::If { cond, then, els } => {
                let mut parts = vec![Doc::Line, text("then "), self.expr(then)];
                if let Some(els) = els {
                    parts.extend([Doc::Line, text("else "), self.expr(els)]);
                }
                group(concat([text("if "), self.expr(cond), nest(INDENT, concat(parts))]))
            }
            ExprKind::Forall { .. } | ExprKind::Exists { .. } => {
                // Directly nested quantifiers share one header line: `forall i in a: forall j in b:`.
                let mut head = Vec::new();
                let mut body = e;
                while let ExprKind::Forall { var, range, body: inner } | ExprKind::Exists { var, range, body: inner } = &body.kind {
                    let q = if matches!(body.kind, ExprKind::Forall { .. }) { "forall" } else { "exists" };
                    if !head.is_empty() {
                        head.push(text(" "));
                    }
                    head.extend([text(format!("{q} {} in ", var.name)), self.expr(range), text(":")]);
                    body = inner;
                }
                head.push(nest(INDENT, concat([Doc::Line, self.expr(body)])));
                group(concat(head))
            }
        }
    }

    /// `a and b and c` as one group that breaks before each operator.
    fn chain(&self, op: BinOp, e: &Expr) -> Doc {
        let mut operands = Vec::new();
        flatten(op, e, &mut operands);
        let mut rest = Vec::new();
        for o in &operands[1..] {
            rest.extend([Doc::Line, text(format!("{} ", op.symbol())), self.expr(o)]);
        }
        group(concat([self.expr(operands[0]), nest(INDENT, concat(rest))]))
    }
}

/// The operands of a chain of one logical operator, in order (`=>` nests to the right, the
/// others to the left).
fn flatten<'e>(op: BinOp, e: &'e Expr, out: &mut Vec<&'e Expr>) {
    match &e.kind {
        ExprKind::Binary(o, l, r) if *o == op => {
            if op == BinOp::Implies {
                out.push(l);
                flatten(op, r, out);
            } else {
                flatten(op, l, out);
                out.push(r);
            }
        }
        _ => out.push(e),
    }
}

fn attr(a: &Attr) -> Doc {
    if a.assign {
        if let Some(arg) = a.args.first() {
            return text(format!("{} = {}", a.name.name, lit(&arg.value)));
        }
    }
    if a.args.is_empty() {
        return text(a.name.name.clone());
    }
    let elems = a
        .args
        .iter()
        .map(|arg| {
            Elem::plain(text(match &arg.key {
                Some(k) => format!("{} = {}", k.name, lit(&arg.value)),
                None => lit(&arg.value),
            }))
        })
        .collect();
    concat([text(a.name.name.clone()), delimited("(", elems, ")")])
}

fn lit(l: &Lit) -> String {
    match l {
        Lit::Int(v) => v.to_string(),
        Lit::Float { text, .. } => text.clone(),
        Lit::Str(s) => crate::syntax::quote(s),
        Lit::Bool(b) => b.to_string(),
        Lit::Ident(s) => s.clone(),
    }
}

fn ty(t: &Type) -> Doc {
    text(type_text(t))
}

/// A type as source text; the tree keeps tuples (and so parentheses) explicitly.
pub fn type_text(t: &Type) -> String {
    match &t.kind {
        TypeKind::Named(n) => n.name.clone(),
        TypeKind::List(elem, len) => format!("{}[{}]", type_text(elem), len.map(|n| n.to_string()).unwrap_or_default()),
        TypeKind::Tuple(elems) => format!("({})", elems.iter().map(type_text).collect::<Vec<_>>().join(", ")),
        TypeKind::Union(parts) => parts.iter().map(type_text).collect::<Vec<_>>().join(" | "),
        TypeKind::StrLit(s) => crate::syntax::quote(s),
        TypeKind::Optional(inner) => format!("{}?", type_text(inner)),
    }
}

#[cfg(test)]
mod tests;
