//! `program` items: compositions of API calls, reserved for numerical checks that another part
//! of sfz will run. Until then they are parsed, formatted and checked for names only: the
//! parameters' types resolve, every name used is a parameter, an earlier `let`, a quantified
//! variable, a dtype, a visible item, a built-in function or the root of a dotted path
//! (`torch.softmax`); a `let` name is bound once. Values are not typed (a call's result has no
//! type yet) and nothing is executed.
use std::collections::HashMap;

use super::scope::closest;
use super::symbols::{hover_text, BUILTINS};
use super::Checker;
use crate::ast::{self, ExprKind, StmtKind};
use crate::case::DType;
use crate::diag::{codes, Diagnostic, Span};

impl Checker<'_> {
    pub fn check_program(&mut self, module: usize, program: &ast::Program) {
        let params = self.params(module, &program.params);
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
                    self.reference(name.span, Some(name.span), hover_text(&format!("let {}", name.name), "A value computed by the program."));
                    names.insert(name.name.clone(), name.span);
                }
                StmtKind::Require { expr, .. } | StmtKind::Ensure(expr) => self.program_names(module, expr, &names, &mut Vec::new()),
                StmtKind::Oracles(refs) => {
                    for r in refs {
                        self.oracle_use(module, r);
                    }
                }
            }
        }
    }

    /// Reports names that mean nothing in a program; `bound` holds quantified variables.
    fn program_names(&mut self, module: usize, e: &ast::Expr, names: &HashMap<String, Span>, bound: &mut Vec<String>) {
        match &e.kind {
            ExprKind::Name(n) => {
                if let Some(&def) = names.get(n) {
                    self.reference(e.span, Some(def), hover_text(n, ""));
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
            ExprKind::Field(base, _) | ExprKind::Each(base) | ExprKind::Paren(base) | ExprKind::Unary(_, base) => {
                self.program_names(module, base, names, bound)
            }
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
