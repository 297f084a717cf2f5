//! Completion: what may be typed at a position, from the text before it on its line (the
//! context) and the last analysis without syntax errors (the names). Half-typed text does not
//! parse, so the names come from the last good analysis, whose bodies cover the cursor up to a
//! few characters' drift; that is enough to know which parameters are in scope.
use lsp_types::{CompletionItem, CompletionItemKind, Documentation, MarkupContent, MarkupKind};

use crate::ast::Keyword;
use crate::check::symbols::{BodyScope, Visible, BUILTINS, PROPERTIES, TYPES};
use crate::stdlib;
use crate::wire::case::DType;

/// What the analysis knows that completion needs.
pub struct Names<'a> {
    /// The parameters in scope at the cursor, if it is in a body.
    pub scope: Option<&'a BodyScope>,
    /// The names the file can use.
    pub visible: &'a [Visible],
    /// APIs specified in the loaded files (for `rule ... for`).
    pub apis: Vec<String>,
    /// Python API names libtorch has operators for (from the cached catalog; may be empty).
    pub torch_apis: &'a [String],
}

/// Keywords that start a statement in a body.
const STMT_KEYWORDS: &[&str] = &["requires", "ensures", "oracles", "relation", "forall", "exists", "if", "not", "let"];
/// Keywords inside expressions.
const EXPR_KEYWORDS: &[&str] = &["and", "or", "not", "in", "then", "else", "true", "false", "None"];
/// Keywords that start an item.
const ITEM_KEYWORDS: &[&str] = &["api", "rule", "use", "dtypes", "constraints", "type", "oracle", "program"];

/// Completions at the end of `before` (the text from the start of the file to the cursor).
pub fn complete(before: &str, names: &Names) -> Vec<CompletionItem> {
    let line = before.rsplit('\n').next().unwrap_or("");
    let word_start = line.len() - line.bytes().rev().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_').count();
    let head = line[..word_start].trim_start();

    // `use std::` and `use std::module::` (or inside its `{...}` group).
    if let Some(path) = head.strip_prefix("use ") {
        let path = path.trim_start();
        if path == "std::" {
            return stdlib::MODULES.iter().map(|(m, _)| item(m, CompletionItemKind::MODULE, &format!("std::{m}"), "")).collect();
        }
        if let Some(rest) = path.strip_prefix("std::") {
            let module = rest.split("::").next().unwrap_or("");
            return stdlib_items(module);
        }
        return Vec::new();
    }
    // `rule name for <API>`
    if head.starts_with("rule ") && format!("{} ", head.trim_end()).contains(" for ") {
        return names.apis.iter().map(|a| item(a, CompletionItemKind::FUNCTION, "api", "")).collect();
    }
    // `api <torch path>`: the dots are part of the name being typed.
    if let Some(path) = line.trim_start().strip_prefix("api ") {
        if !path.contains('(') {
            return names.torch_apis.iter().map(|a| item(a, CompletionItemKind::FUNCTION, "torch API", "")).collect();
        }
    }
    // `x.` : a property.
    if head.ends_with('.') && head[..head.len() - 1].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == ']' || c == ')') {
        return PROPERTIES.iter().map(|(n, ty, doc)| item(n, CompletionItemKind::PROPERTY, ty, doc)).collect();
    }
    // An `oracles` clause.
    let stmt = head.rsplit([';', '{']).next().unwrap_or("").trim_start();
    if stmt.starts_with("oracles ") || stmt == "oracles" {
        return names.visible.iter().filter(|v| v.kind == Keyword::Oracle).map(visible_item).collect();
    }
    // A parameter's type: `name: ` in a parameter list.
    if in_type_position(head) && names.scope.is_none() {
        let mut out: Vec<CompletionItem> = TYPES.iter().map(|(n, doc)| item(n, CompletionItemKind::CLASS, "type", doc)).collect();
        out.extend(names.visible.iter().filter(|v| v.kind == Keyword::Type).map(visible_item));
        return out;
    }
    let Some(scope) = names.scope else {
        return ITEM_KEYWORDS.iter().map(|k| item(k, CompletionItemKind::KEYWORD, "item", "")).collect();
    };
    // An expression in a body.
    let mut out = Vec::new();
    for (name, sig) in &scope.params {
        out.push(item(name, CompletionItemKind::VARIABLE, sig, ""));
    }
    if scope.has_results {
        out.push(item("result", CompletionItemKind::VARIABLE, "the output", "The output of the call, in `ensures` clauses."));
    }
    for d in DType::ALL {
        out.push(item(d.name(), CompletionItemKind::CONSTANT, "dtype", ""));
    }
    out.extend(names.visible.iter().filter(|v| matches!(v.kind, Keyword::Dtypes | Keyword::Constraints)).map(visible_item));
    for (name, sig, doc) in BUILTINS {
        out.push(item(name, CompletionItemKind::FUNCTION, sig, doc));
    }
    let at_stmt_start = head.is_empty() || head.ends_with(';') || head.ends_with('{');
    for k in if at_stmt_start { STMT_KEYWORDS } else { EXPR_KEYWORDS } {
        out.push(item(k, CompletionItemKind::KEYWORD, "keyword", ""));
    }
    out
}

/// After `(` or `,` and a name and a colon, with only a partial word after it.
fn in_type_position(head: &str) -> bool {
    let Some(before_colon) = head.trim_end().strip_suffix(':') else { return false };
    let before_name = before_colon.trim_end().trim_end_matches(|c: char| c.is_ascii_alphanumeric() || c == '_');
    before_name.len() < before_colon.trim_end().len() && {
        let t = before_name.trim_end();
        t.is_empty() || t.ends_with('(') || t.ends_with(',')
    }
}

/// The importable items of `std::module`, with their docs.
fn stdlib_items(module: &str) -> Vec<CompletionItem> {
    let Some(src) = stdlib::source(module) else { return Vec::new() };
    let (m, _) = crate::syntax::parse(crate::diag::FileId(0), src);
    m.items
        .iter()
        .filter_map(|i| {
            let name = i.kind.name()?;
            let docs = i.docs.iter().map(|d| d.text.as_str()).collect::<Vec<_>>().join("\n");
            Some(item(&name.name, kind_of(i.kind.key()), i.kind.keyword(), &docs))
        })
        .chain(std::iter::once(item("*", CompletionItemKind::MODULE, "everything", "")))
        .collect()
}

fn kind_of(keyword: Keyword) -> CompletionItemKind {
    match keyword {
        Keyword::Dtypes => CompletionItemKind::ENUM,
        Keyword::Constraints => CompletionItemKind::FUNCTION,
        Keyword::Type => CompletionItemKind::CLASS,
        Keyword::Oracle => CompletionItemKind::EVENT,
        _ => CompletionItemKind::REFERENCE,
    }
}

fn visible_item(v: &Visible) -> CompletionItem {
    item(&v.name, kind_of(v.kind), &v.detail, &v.docs)
}

fn item(label: &str, kind: CompletionItemKind, detail: &str, docs: &str) -> CompletionItem {
    CompletionItem {
        label: label.to_string(),
        kind: Some(kind),
        detail: (!detail.is_empty()).then(|| detail.to_string()),
        documentation: (!docs.is_empty()).then(|| Documentation::MarkupContent(MarkupContent { kind: MarkupKind::Markdown, value: docs.to_string() })),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::{FileId, Span};

    fn labels(before: &str, scope: Option<&BodyScope>) -> Vec<String> {
        let visible = vec![
            Visible { name: "floating".into(), kind: Keyword::Dtypes, detail: String::new(), docs: String::new() },
            Visible { name: "crash".into(), kind: Keyword::Oracle, detail: String::new(), docs: String::new() },
            Visible { name: "Pair".into(), kind: Keyword::Type, detail: String::new(), docs: String::new() },
        ];
        let names = Names { scope, visible: &visible, apis: vec!["torch.exp".into()], torch_apis: &["torch.add".to_string()] };
        complete(before, &names).into_iter().map(|c| c.label).collect()
    }

    fn body() -> BodyScope {
        BodyScope { span: Span::new(FileId(0), 0, 100), params: vec![("input".into(), "input: Tensor".into())], has_results: true }
    }

    #[test]
    fn contexts() {
        assert!(labels("use std::", None).contains(&"dtypes".to_string()));
        assert!(labels("use std::dtypes::fl", None).contains(&"floating".to_string()));
        assert!(labels("use std::dtypes::{complex, ", None).contains(&"integral".to_string()));
        assert_eq!(labels("rule r for tor", None), ["torch.exp"]);
        assert_eq!(labels("api torch.a", None), ["torch.add"]);
        assert!(labels("    input.", Some(&body())).contains(&"shape".to_string()));
        assert_eq!(labels("    oracles crash, ", Some(&body())), ["crash"]);
        let ty = labels("api f(x: ", None);
        assert!(ty.contains(&"Tensor".to_string()) && ty.contains(&"Pair".to_string()), "{ty:?}");
        let expr = labels("    input.dtype in fl", Some(&body()));
        for want in ["input", "result", "float32", "floating", "max", "and"] {
            assert!(expr.contains(&want.to_string()), "{want} missing from {expr:?}");
        }
        assert!(labels("", None).contains(&"api".to_string()));
    }
}
