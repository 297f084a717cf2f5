//! pest errors → diagnostics in the user's words: "expected `;` or an operator, found `}`".
use pest::error::{Error, InputLocation};

use super::Rule;
use crate::diag::{codes::E0001, Diagnostic, FileId, Span};

/// Converts an error from parsing `text[base..]` into a diagnostic with absolute spans.
pub fn to_diagnostic(file: FileId, text: &str, base: usize, err: &Error<Rule>) -> Diagnostic {
    let at = base
        + match err.location {
            InputLocation::Pos(p) => p,
            InputLocation::Span((p, _)) => p,
        };
    let at = at.min(text.len());
    let found = found_token(text, at);
    let mut expected: Vec<String> = Vec::new();
    if let Some(attempts) = err.parse_attempts() {
        // Literal tokens (`;`, `)`) the grammar would have accepted here. pest does not export
        // the token type, so read its display form and skip character ranges.
        for tok in attempts.expected_tokens() {
            let token = tok.to_string();
            let is_range = token.chars().count() == 4 && token.contains("..");
            let trivia = matches!(token.as_str(), "//" | "/*" | "\u{FEFF}");
            if !token.trim().is_empty() && !is_range && !trivia && token != "BUILTIN_RULE" {
                push_unique(&mut expected, format!("`{token}`"));
            }
        }
    }
    if let pest::error::ErrorVariant::ParsingError { positives, .. } = &err.variant {
        for rule in positives {
            if let Some(desc) = describe(*rule) {
                push_unique(&mut expected, desc.to_string());
            }
        }
    }
    expected.retain(|e| !e.is_empty());
    // Tokens that only start a described construct add nothing next to its description.
    let has = |d: &str| expected.iter().any(|e| e == d);
    let (name, ty, expr) = (has("a name"), has("a type"), has("an expression"));
    if name || ty || expr {
        expected.retain(|e| e != "`_`");
    }
    if ty || expr {
        expected.retain(|e| e != "`\"`" && e != "`(`");
    }
    if expr {
        expected.retain(|e| e != "`[`" && e != "`!`" && e != "`-`");
    }
    // Many token alternatives (every operator) read better as one word.
    let operators = ["`and`", "`or`", "`in`", "`not`", "`+`", "`-`", "`*`", "`/`", "`%`", "`==`", "`!=`", "`<`", "`>`", "`<=`", "`>=`", "`..`", "`..=`", "`=>`", "`||`", "`&&`"];
    if expected.iter().filter(|e| operators.contains(&e.as_str())).count() > 2 {
        expected.retain(|e| !operators.contains(&e.as_str()) && e != "`.`" && e != "`[`" && e != "`(`");
        expected.push("an operator".into());
    }
    let found_desc = match &found {
        None => "end of file".to_string(),
        Some(tok) => format!("`{tok}`"),
    };
    let message = if expected.is_empty() { format!("unexpected {found_desc}") } else { format!("expected {}, found {found_desc}", join_or(&expected)) };
    let len = found.as_ref().map_or(0, |t| t.len()).max(if at < text.len() { 1 } else { 0 });
    let mut diag = Diagnostic::new(E0001, message).with_label(Span::new(file, at, at + len), label_for(&found));
    // A missing `;` shows at the next token, often on a later line: point at the line it ends.
    if expected.iter().any(|e| e == "`;`") {
        let before = text[..at].trim_end();
        if !before.is_empty() && text[before.len()..at].contains('\n') {
            let end = before.len();
            let start = before[..end].char_indices().next_back().map_or(0, |(i, _)| i);
            diag = diag.with_secondary(Span::new(file, start, end), "`;` may be missing after this");
        }
    }
    if found.as_deref() == Some("//") {
        diag = diag.with_help("`//` starts a comment; `/` on two ints is already floor division");
    }
    diag
}

fn label_for(found: &Option<String>) -> String {
    match found.as_deref() {
        None => "the file ends here".into(),
        Some(_) => "unexpected here".into(),
    }
}

fn push_unique(v: &mut Vec<String>, s: String) {
    if !v.contains(&s) {
        v.push(s);
    }
}

fn join_or(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// The token at `at`: a word, a number, a string start, or one punctuation mark (two for `//`).
fn found_token(text: &str, at: usize) -> Option<String> {
    let rest = text.get(at..)?;
    let c = rest.chars().next()?;
    if c.is_alphanumeric() || c == '_' {
        let end = rest.find(|ch: char| !(ch.is_alphanumeric() || ch == '_')).unwrap_or(rest.len());
        return Some(rest[..end].to_string());
    }
    for two in ["//", "..", "==", "!=", "<=", ">=", "=>", "->", "::", "#["] {
        if rest.starts_with(two) {
            return Some(two.to_string());
        }
    }
    Some(c.to_string())
}

/// User words for grammar rules; None for rules that only add noise to a message.
fn describe(rule: Rule) -> Option<&'static str> {
    Some(match rule {
        Rule::item | Rule::item_entry | Rule::file => "an item (`api`, `rule`, `use`, ...)",
        Rule::expr | Rule::primary | Rule::prefix | Rule::not_op | Rule::neg_op => "an expression",
        Rule::ident => "a name",
        Rule::api_path => "an API path like `torch.exp`",
        Rule::ty | Rule::ty_union | Rule::ty_postfix | Rule::ty_atom => "a type",
        Rule::param | Rule::params => "a parameter",
        Rule::stmt | Rule::requires_stmt => "a constraint",
        Rule::body => "`{`",
        Rule::string => "a string",
        Rule::int_lit => "an integer",
        Rule::float_lit => "a number",
        Rule::attr | Rule::attr_value => "an attribute",
        Rule::oracle_ref => "an oracle name",
        Rule::relation_stmt => "a relation",
        Rule::from_stmt => "a `from` statement",
        Rule::from_bind => "a binding `param: result.k;`",
        Rule::doc => "a doc comment",
        Rule::returns => "`->`",
        _ => return None,
    })
}
