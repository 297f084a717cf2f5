//! Which parameter each argument of a call binds to, for the calls a spec writes out: a
//! relation's `self(...)` and calls of other APIs, and a `from` statement's forward. Python's
//! rules: positional arguments first and in order, keyword-only parameters by name, each
//! parameter once.
use super::expr::param_text;
use super::symbols::hover_text;
use super::Checker;
use crate::ast;
use crate::diag::suggest::closest;
use crate::diag::{codes, Code, Diagnostic};
use crate::spec::ParamSpec;

impl Checker<'_> {
    /// Per argument, the index of the parameter it binds to; None where the argument is in
    /// error, reported with `code` (an unknown keyword, a positional argument after a keyword
    /// one, a parameter given twice) or E0014 (too many positional arguments). `who` names the
    /// callee in messages.
    pub(super) fn bind_call_args(&mut self, who: &str, params: &[ParamSpec], args: &[ast::CallArg], code: Code) -> Vec<Option<usize>> {
        let positional: Vec<usize> = (0..params.len()).filter(|&i| !params[i].kw_only).collect();
        let (mut next, mut keyword_seen) = (0, false);
        let mut bound: Vec<Option<usize>> = Vec::with_capacity(args.len());
        for a in args {
            let index = match &a.name {
                Some(k) => {
                    keyword_seen = true;
                    match params.iter().position(|p| p.name == k.name) {
                        Some(i) => {
                            self.reference(k.span, Some(params[i].span), || hover_text(&param_text(&params[i]), "A parameter."));
                            Some(i)
                        }
                        None => {
                            let d = Diagnostic::new(code, format!("{who} has no parameter `{}`", k.name)).with_label(k.span, "no such parameter");
                            self.error(match closest(&k.name, params.iter().map(|p| p.name.as_str())) {
                                Some(s) => d.with_help(format!("did you mean `{s}`?")),
                                None => d.with_help(format!("its parameters are {}", params.iter().map(|p| format!("`{}`", p.name)).collect::<Vec<_>>().join(", "))),
                            });
                            None
                        }
                    }
                }
                None if keyword_seen => {
                    self.error(
                        Diagnostic::new(code, "positional argument after a keyword argument")
                            .with_label(a.value.span, "give its parameter's name")
                            .with_help("write positional arguments first, or name this one: `name = ...`"),
                    );
                    None
                }
                None => {
                    let i = positional.get(next).copied();
                    next += 1;
                    if i.is_none() {
                        self.error(
                            Diagnostic::new(codes::E0014, format!("{who} takes {} positional argument{}", positional.len(), if positional.len() == 1 { "" } else { "s" }))
                                .with_label(a.value.span, "one too many")
                                .with_help("pass keyword-only parameters by name"),
                        );
                    }
                    i
                }
            };
            let twice = index.filter(|i| bound.contains(&Some(*i)));
            if let Some(i) = twice {
                self.error(
                    Diagnostic::new(code, format!("argument `{}` given twice", params[i].name))
                        .with_label(a.name.as_ref().map_or(a.value.span, |n| n.span), "given again here")
                        .with_help("give each parameter once"),
                );
            }
            bound.push(if twice.is_some() { None } else { index });
        }
        bound
    }
}
