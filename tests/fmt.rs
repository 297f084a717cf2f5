//! The formatter: snapshots of `tests/fmt/*.sfz` formatted, and the properties every formatted
//! file has: it is a fixed point, it parses to the same tree, and every comment survives.
use std::path::Path;

mod common;

use common::format_checked;
use sfz::diag::FileId;

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
