//! Text → syntax tree. `parse` never fails: it returns the items it could read and a diagnostic
//! for each it could not. Recovery is per item: after a malformed item the parser resumes at the
//! next line that starts an item, so one file reports several errors.
mod errors;
mod lexical;
mod lower;

use pest::Parser as _;

use crate::ast::Module;
use crate::diag::{codes::E0001, Diagnostic, FileId, Span};

#[derive(pest_derive::Parser)]
#[grammar = "../grammar/sfz.pest"]
pub(crate) struct SfzParser;

/// Brackets nested deeper than this are refused before parsing, so that no input can exhaust the
/// stack of the parser or of the passes that walk the tree.
pub const MAX_NESTING: usize = 64;

/// Syntax errors reported per file before parsing stops (a binary or a wrong file would
/// otherwise give one per line).
pub const MAX_SYNTAX_ERRORS: usize = 100;

/// Operators allowed in one statement. Trees also deepen without brackets (`not not ...`,
/// `a => b => ...`, `x.a.b...`), so their depth is bounded by counting operators; a real
/// constraint has a few dozen.
pub const MAX_OPERATORS: usize = 1024;

/// A string literal that reads back as `s` (the escapes `parse` reads: `\"`, `\\`, `\n`, `\t`).
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Parses one file.
pub fn parse(file: FileId, text: &str) -> (Module, Vec<Diagnostic>) {
    let mut module = Module { items: Vec::new(), comments: lexical::comments(file, text) };
    let mut diags = Vec::new();
    if let Some(at) = lexical::too_deep(text, MAX_NESTING) {
        diags.push(
            Diagnostic::new(E0001, "nesting too deep")
                .with_label(Span::new(file, at, at + 1), format!("more than {MAX_NESTING} open brackets here"))
                .with_help("split the expression with `let` bindings or named constraint sets"),
        );
        return (module, diags);
    }
    if let Some(at) = lexical::too_complex(text, MAX_OPERATORS) {
        diags.push(
            Diagnostic::new(E0001, "expression too long")
                .with_label(Span::new(file, at, at + 1), format!("more than {MAX_OPERATORS} operators in one statement"))
                .with_help("split it into several statements (each is a constraint that must hold) or a constraint set"),
        );
        return (module, diags);
    }

    let mut pos = lexical::skip_trivia(text, 0);
    while pos < text.len() {
        match parse_item(text, &module.comments, pos) {
            Ok(mut pairs) => {
                let entry = pairs.next().expect("item_entry matched");
                let item_pair = entry.into_inner().find(|p| p.as_rule() == Rule::item).expect("item_entry holds an item");
                let end = pos + item_pair.as_span().end();
                let mut lower = lower::Lower { file, base: pos, diags: &mut diags };
                module.items.push(lower.item(item_pair));
                pos = lexical::skip_trivia(text, end);
            }
            Err(err) => {
                diags.push(errors::to_diagnostic(file, text, pos, &err));
                pos = lexical::next_item_start(text, &module.comments, pos);
                let errors = diags.iter().filter(|d| d.code == E0001).count();
                if errors >= MAX_SYNTAX_ERRORS && pos < text.len() {
                    diags.push(
                        Diagnostic::new(E0001, format!("stopped after {MAX_SYNTAX_ERRORS} syntax errors"))
                            .with_label(Span::new(file, pos, pos), "the rest of the file was not read")
                            .with_help("fix the errors above; is this an sfz spec?"),
                    );
                    break;
                }
            }
        }
    }
    (module, diags)
}

/// Parses the item at `pos`. pest builds an error by scanning its whole input, so each item is
/// parsed in a window reaching to where the next item seems to start; only when the parse runs
/// into the window's end is the window widened (doubling), so a file of many broken items
/// costs linear time, not quadratic.
fn parse_item<'t>(text: &'t str, comments: &[crate::ast::Comment], pos: usize) -> Result<pest::iterators::Pairs<'t, Rule>, pest::error::Error<Rule>> {
    let mut limit = lexical::next_item_start(text, comments, pos);
    loop {
        let window = &text[pos..limit];
        match SfzParser::parse(Rule::item_entry, window).map_err(|e| parse_with_detail(window).unwrap_or(e)) {
            Err(e) if limit < text.len() && error_offset(&e) >= window.trim_end().len() => {
                limit = lexical::next_item_start(text, comments, pos + 2 * (limit - pos));
            }
            result => return result,
        }
    }
}

/// Parses again recording what the grammar tried (for "expected ..." in messages), which
/// makes pest several times slower and so is done only for items that failed. pest's switch is
/// process-wide: it is turned on and off under a lock, and parses that are not in this
/// function only ever see it on (slower, same result).
fn parse_with_detail(window: &str) -> Option<pest::error::Error<Rule>> {
    static DETAIL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = DETAIL.lock().unwrap_or_else(|e| e.into_inner());
    pest::set_error_detail(true);
    let result = SfzParser::parse(Rule::item_entry, window);
    pest::set_error_detail(false);
    result.err()
}

fn error_offset(e: &pest::error::Error<Rule>) -> usize {
    match e.location {
        pest::error::InputLocation::Pos(p) => p,
        pest::error::InputLocation::Span((p, _)) => p,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::{BinOp, ExprKind, ItemKind, StmtKind};
    use crate::diag::SourceMap;

    fn parse_str(text: &str) -> (Module, Vec<Diagnostic>) {
        parse(FileId(0), text)
    }

    #[test]
    fn parses_an_api_with_constraints() {
        let (m, d) = parse_str(
            r#"use std::dtypes::{floating, integral};
/// Applies a 2-D convolution.
#[aten("aten::conv2d")]
api torch.nn.functional.conv2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor? = None,
    stride: int[2] = [1, 1],
    padding: "same" | "valid" = "valid",
    *,
    groups: int = 1,
) -> Tensor {
    input.dtype in floating;
    input.ndim in 3..=4;
    weight.shape[1] * groups == input.shape[-3];
    forall d in 0..input.ndim: input.shape[d] > 0;
    if padding == "same" then stride[*] == 1;
    not (groups < 1) and groups <= 4;
    ensures result.dtype == input.dtype;
    oracles crash, nan_inf(rtol = 1e-3);
}
"#,
        );
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(m.items.len(), 2);
        let ItemKind::Api(api) = &m.items[1].kind else { panic!("not an api") };
        assert_eq!(api.path.name, "torch.nn.functional.conv2d");
        assert_eq!(api.params.len(), 7);
        assert_eq!(api.body.stmts.len(), 8);
        let StmtKind::Require { expr, .. } = &api.body.stmts[1].kind else { panic!() };
        assert!(matches!(expr.kind, ExprKind::Binary(BinOp::In, _, _)));
    }

    #[test]
    fn precedence_is_arithmetic_then_range_then_comparison_then_logic() {
        let (m, d) = parse_str("api f(a: int) { a + 1 * 2 in 0..a - 1 or a == 0; }");
        assert!(d.is_empty(), "{d:?}");
        let ItemKind::Api(api) = &m.items[0].kind else { panic!() };
        let StmtKind::Require { expr, .. } = &api.body.stmts[0].kind else { panic!() };
        let ExprKind::Binary(BinOp::Or, lhs, _) = &expr.kind else { panic!("{expr:?}") };
        let ExprKind::Binary(BinOp::In, add, range) = &lhs.kind else { panic!("{lhs:?}") };
        assert!(matches!(add.kind, ExprKind::Binary(BinOp::Add, _, _)));
        assert!(matches!(range.kind, ExprKind::Range { inclusive: false, .. }));
    }

    #[test]
    fn an_item_spanning_what_looks_like_item_starts_still_parses() {
        // `type` at column 0 inside a body is a name, not an item: the window widens.
        let (m, d) = parse_str("api f(type: int) {\ntype > 0;\ntype < 9;\n}\napi g() {}\n");
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(m.items.len(), 2);
        let (m, d) = parse_str("api f() {\n/*\napi x\n*/\n}\n");
        assert!(d.is_empty() && m.items.len() == 1, "{d:?}");
    }

    #[test]
    fn recovers_after_a_broken_item() {
        let text = "api a(x: int) { x > 0 }\napi b(y: int) { y > 0; }\napi c(z: ) {}\n";
        let (m, d) = parse_str(text);
        assert_eq!(m.items.len(), 1, "only b parses");
        assert_eq!(d.len(), 2, "{d:?}");
        let mut map = SourceMap::default();
        map.add("t.sfz", text);
        let out = crate::diag::render_all(&map, &d, Default::default());
        assert!(out.contains("expected"), "{out}");
    }
}
