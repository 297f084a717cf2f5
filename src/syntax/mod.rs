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

/// Parses one file.
pub fn parse(file: FileId, text: &str) -> (Module, Vec<Diagnostic>) {
    pest::set_error_detail(true);
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

    let mut pos = lexical::skip_trivia(text, 0);
    while pos < text.len() {
        match SfzParser::parse(Rule::item_entry, &text[pos..]) {
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
                pos = lexical::next_item_start(text, pos);
            }
        }
    }
    (module, diags)
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
