//! The formatter: snapshots of `tests/fmt/*.sfz` formatted, and the properties every formatted
//! file has: it is a fixed point, it parses to the same tree, and every comment survives.
use std::path::Path;

use sfz::diag::FileId;
use sfz::fmt::format_text;

/// The items of a text's tree, printed without spans, and its comments' texts.
fn shape(text: &str) -> (String, Vec<String>) {
    let (m, diags) = sfz::syntax::parse(FileId(0), text);
    assert!(diags.is_empty(), "{diags:?}");
    let comments = m.comments.iter().map(|c| c.text.clone()).collect();
    (strip_spans(&format!("{:?}", m.items)), comments)
}

/// Removes `span: Span { .. }` fields and `Glob(Span { .. })` payloads from a Debug rendering.
fn strip_spans(debug: &str) -> String {
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

/// Formats and checks the properties; returns the formatted text.
fn format_checked(text: &str) -> String {
    let out = format_text(text).unwrap_or_else(|d| panic!("{d:?}"));
    assert_eq!(format_text(&out).as_deref().unwrap_or(""), out, "formatting is not a fixed point:\n{out}");
    let (before, mut comments_before) = shape(text);
    let (after, mut comments_after) = shape(&out);
    assert_eq!(before, after, "formatting changed the tree:\n{out}");
    comments_before.sort();
    comments_after.sort();
    assert_eq!(comments_before, comments_after, "formatting lost or changed a comment:\n{out}");
    out
}

#[test]
fn snapshots() {
    insta::glob!("fmt/*.sfz", |path| {
        let text = std::fs::read_to_string(path).expect("readable");
        insta::assert_snapshot!(format_checked(&text));
    });
}

/// `sfz fmt` on the repository's specs changes nothing: they are kept formatted.
#[test]
fn repository_specs_are_formatted() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = sfz::check::expand_paths(&[root.join("specs"), root.join("stdlib"), root.join("examples")]);
    assert!(files.len() >= 8);
    for f in files {
        let text = std::fs::read_to_string(&f).expect("readable");
        assert_eq!(format_checked(&text), text, "{} is not formatted; run `sfz fmt` on it", f.display());
    }
}

/// Every UI test that parses keeps its tree through the formatter (they hold odd corners).
#[test]
fn ui_tests_keep_their_tree() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for f in sfz::check::expand_paths(&[root.join("tests/ui")]) {
        let text = std::fs::read_to_string(&f).expect("readable");
        if sfz::syntax::parse(FileId(0), &text).1.is_empty() {
            format_checked(&text);
        }
    }
}
