//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod campaign;
pub mod process;

use sfz::diag::FileId;

/// A text's tree printed without spans, and its comments' texts: what formatting must keep.
pub fn shape(text: &str) -> (String, Vec<String>) {
    let (m, diags) = sfz::syntax::parse(FileId(0), text);
    assert!(diags.is_empty(), "{diags:?}");
    let mut comments: Vec<String> = m.comments.iter().map(|c| c.text.clone()).collect();
    comments.sort();
    (strip_spans(&format!("{:?}", m.items)), comments)
}

/// Removes `Span { .. }` values from a Debug rendering.
pub fn strip_spans(debug: &str) -> String {
    let mut out = String::with_capacity(debug.len());
    let mut rest = debug;
    while let Some(i) = rest.find("Span {") {
        out.push_str(&rest[..i]);
        let end = rest[i..].find('}').map_or(rest.len(), |j| i + j + 1);
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// Formats a text that parses and checks what every formatted text must be: a fixed point with
/// the same tree and the same comments. Returns the formatted text.
pub fn format_checked(text: &str) -> String {
    let out = sfz::fmt::format_text(text).unwrap_or_else(|d| panic!("{d:?}"));
    let again = sfz::fmt::format_text(&out).unwrap_or_else(|d| panic!("the formatted text does not parse: {d:?}\n{out}"));
    assert_eq!(again, out, "formatting is not a fixed point:\n{out}");
    assert_eq!(shape(text), shape(&out), "formatting changed the tree or a comment:\n{out}");
    out
}
