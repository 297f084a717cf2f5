//! `program` items: compositions of calls that `sfz hunt` runs in workers (see `numeric`).
//! Checked here: the parameters' types resolve, every name used is a parameter, an earlier
//! `let`, a quantified variable, a dtype, a visible item, a built-in function or the root of a
//! dotted path (`torch.softmax`); a `let` name is bound once; each `let` lowers to steps of the
//! program IR (wrong calls are E0020); `requires` over parameters only become the inputs'
//! constraints, checked as an API's are. An `ensures` bounding a `let`'s values is a range the
//! hunt's range oracle checks; other `ensures` and `requires` that read a `let` are checked for
//! names only.
use std::collections::HashMap;

use super::lowering::Lowerer;
use super::symbols::{hover_text, BUILTINS};
use super::Checker;
use crate::ast::{self, ExprKind, StmtKind};
use crate::diag::suggest::closest;
use crate::diag::{codes, Diagnostic, Span};
use crate::spec::ProgramSpec;
use crate::spec::{ApiSpec, Origin};
use crate::wire::case::DType;
use crate::wire::program::ir::ProgramIr;
use crate::wire::program::range::StepRange;

/// Every plain name an expression mentions.
fn mentioned(e: &ast::Expr, out: &mut Vec<String>) {
    match &e.kind {
        ExprKind::Name(n) => out.push(n.clone()),
        ExprKind::Field(b, _) | ExprKind::Each(b) | ExprKind::Paren(b) | ExprKind::Unary(_, b) => mentioned(b, out),
        ExprKind::Call(c, args) => {
            mentioned(c, out);
            args.iter().for_each(|a| mentioned(&a.value, out));
        }
        ExprKind::Index(a, b) | ExprKind::Binary(_, a, b) | ExprKind::Range { lo: a, hi: b, .. } => {
            mentioned(a, out);
            mentioned(b, out);
        }
        ExprKind::List(items) => items.iter().for_each(|i| mentioned(i, out)),
        ExprKind::If { cond, then, els } => {
            mentioned(cond, out);
            mentioned(then, out);
            if let Some(e) = els {
                mentioned(e, out);
            }
        }
        ExprKind::Forall { range, body, .. } | ExprKind::Exists { range, body, .. } => {
            mentioned(range, out);
            mentioned(body, out);
        }
        _ => {}
    }
}

/// The range an `ensures` declares for a value's elements, in the forms the range oracle runs:
/// `v.values in LO..HI`, `v.values >= C`, `v.values <= C` (and `>`,
/// `<`, which round to the same test), with number literals. Other `ensures` are checked for names only.
fn declared_range(e: &ast::Expr) -> Option<(String, f64, f64)> {
    fn values_of(e: &ast::Expr) -> Option<String> {
        match &e.kind {
            ExprKind::Field(base, f) if f.name == "values" => match &base.kind {
                ExprKind::Name(n) => Some(n.clone()),
                _ => None,
            },
            ExprKind::Paren(inner) => values_of(inner),
            _ => None,
        }
    }
    let inf = f64::INFINITY;
    let ExprKind::Binary(op, a, b) = &e.kind else { return None };
    let name = values_of(a)?;
    match (op, &b.kind) {
        (ast::BinOp::In, ExprKind::Range { lo, hi, .. }) => Some((name, lo.number()?, hi.number()?)),
        (ast::BinOp::Ge | ast::BinOp::Gt, _) => Some((name, b.number()?, inf)),
        (ast::BinOp::Le | ast::BinOp::Lt, _) => Some((name, -inf, b.number()?)),
        _ => None,
    }
}

impl Checker<'_> {
    pub fn check_program(&mut self, module: usize, program: &ast::Program) -> ProgramSpec {
        let params = self.params(module, &program.params);
        let file = self.loader.modules[module].file;
        let loader = self.loader;
        let text = move |s: Span| loader.map.get(file).slice(s).to_string();
        let mut lowerer = Lowerer::new(&params, &text);
        let mut requires = Vec::new();
        let mut ranges = Vec::new();
        let errors_before = self.diags.iter().filter(|d| d.is_error()).count();
        self.body_scope(program.body.span, &params, false);
        // Name → where it is bound.
        let mut names: HashMap<String, Span> = params.iter().map(|p| (p.name.clone(), p.span)).collect();
        for stmt in &program.body.stmts {
            match &stmt.kind {
                StmtKind::Let(name, value) => {
                    self.program_names(module, value, &names, &mut Vec::new());
                    if let Some(prev) = names.get(&name.name) {
                        self.error(
                            Diagnostic::new(codes::E0005, format!("`{}` is bound twice", name.name))
                                .with_label(name.span, "bound again here")
                                .with_secondary(*prev, "first bound here")
                                .with_help("give each `let` its own name"),
                        );
                        continue;
                    }
                    self.reference(name.span, Some(name.span), || hover_text(&format!("let {}", name.name), "A value computed by the program."));
                    names.insert(name.name.clone(), name.span);
                    lowerer.lower_let(&name.name, value);
                }
                StmtKind::Require { expr, .. } => {
                    let mut used = Vec::new();
                    mentioned(expr, &mut used);
                    let on_lets = used.iter().any(|n| names.contains_key(n) && !params.iter().any(|p| &p.name == n));
                    if on_lets {
                        self.program_names(module, expr, &names, &mut Vec::new());
                    } else {
                        requires.extend(self.requirement(module, &params, expr, file, Origin::Inline));
                    }
                }
                StmtKind::Ensure(expr) => {
                    self.program_names(module, expr, &names, &mut Vec::new());
                    if let Some(r) = declared_range(expr) {
                        ranges.push((r, text(expr.span)));
                    }
                }
                StmtKind::Oracles(refs) => {
                    for r in refs {
                        self.oracle_use(module, r);
                    }
                }
                StmtKind::Relation { .. } | StmtKind::From(_) => self.misplaced(stmt, "a program holds `let`, constraints and `ensures`"),
            }
        }
        let Lowerer { steps, step_text, diags, .. } = lowerer;
        for d in diags {
            self.error(d);
        }
        let runnable = self.diags.iter().filter(|d| d.is_error()).count() == errors_before && !steps.is_empty();
        let inputs = ApiSpec {
            name: program.name.name.clone(),
            span: program.name.span,
            aten: None,
            params: params.clone(),
            returns: Vec::new(),
            requires,
            ensures: Vec::new(),
            oracles: Vec::new(),
            oracles_written: false,
            refuted_oracles: Vec::new(),
            relations: Vec::new(),
            from: None,
        };
        // A declared range holds for the step that computes the `let`'s value.
        let ensures = ranges
            .into_iter()
            .filter_map(|((name, lo, hi), declared)| {
                let step = steps.iter().rposition(|s| s.name == name)? as u32;
                Some(StepRange { step, lo, hi, declared: Some(declared) })
            })
            .collect();
        let ir = ProgramIr { params: params.iter().map(|p| p.name.clone()).collect(), steps, ensures };
        ProgramSpec { name: program.name.name.clone(), span: program.name.span, inputs, ir, step_text, runnable }
    }

    /// Reports names that mean nothing in a program; `bound` holds quantified variables.
    fn program_names(&mut self, module: usize, e: &ast::Expr, names: &HashMap<String, Span>, bound: &mut Vec<String>) {
        match &e.kind {
            ExprKind::Name(n) => {
                if let Some(&def) = names.get(n) {
                    self.reference(e.span, Some(def), || hover_text(n, ""));
                } else if !(bound.contains(n) || DType::from_name(n).is_some() || n == "torch" || self.scopes.lookup(module, n).is_some()) {
                    let mut candidates: Vec<&str> = names.keys().map(String::as_str).collect();
                    candidates.extend(bound.iter().map(String::as_str));
                    let mut d = Diagnostic::new(codes::E0002, format!("cannot find `{n}` in this program")).with_label(e.span, "not found");
                    if let Some(s) = closest(n, candidates) {
                        d = d.with_help(format!("did you mean `{s}`?"));
                    }
                    self.error(d);
                }
            }
            // `torch.nn.functional.softmax(...)`: only the root of a dotted path is a name.
            ExprKind::Field(base, _) | ExprKind::Each(base) | ExprKind::Paren(base) | ExprKind::Unary(_, base) => self.program_names(module, base, names, bound),
            ExprKind::Call(callee, args) => {
                match &callee.kind {
                    ExprKind::Name(f) if BUILTINS.iter().any(|(b, ..)| b == f) => {}
                    _ => self.program_names(module, callee, names, bound),
                }
                for a in args {
                    self.program_names(module, &a.value, names, bound);
                }
            }
            ExprKind::Index(a, b) | ExprKind::Binary(_, a, b) | ExprKind::Range { lo: a, hi: b, .. } => {
                self.program_names(module, a, names, bound);
                self.program_names(module, b, names, bound);
            }
            ExprKind::List(items) => items.iter().for_each(|i| self.program_names(module, i, names, bound)),
            ExprKind::If { cond, then, els } => {
                self.program_names(module, cond, names, bound);
                self.program_names(module, then, names, bound);
                if let Some(els) = els {
                    self.program_names(module, els, names, bound);
                }
            }
            ExprKind::Forall { var, range, body } | ExprKind::Exists { var, range, body } => {
                self.program_names(module, range, names, bound);
                bound.push(var.name.clone());
                self.program_names(module, body, names, bound);
                bound.pop();
            }
            ExprKind::Int(_) | ExprKind::Float { .. } | ExprKind::Str(_) | ExprKind::Bool(_) | ExprKind::None => {}
        }
    }
}
