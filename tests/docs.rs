//! The examples in the documentation are specs that check without errors, and are formatted.
use std::path::Path;

/// The ```sfz blocks of a markdown file, with the line each starts on.
fn sfz_blocks(markdown: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (n, line) in markdown.lines().enumerate() {
        match (&mut current, line.trim_start()) {
            (None, "```sfz") => current = Some((n + 2, String::new())),
            (Some(_), "```") => out.extend(current.take()),
            (Some((_, text)), _) => {
                text.push_str(line);
                text.push('\n');
            }
            (None, _) => {}
        }
    }
    out
}

fn check_examples(doc: &str, min: usize) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(doc);
    let markdown = std::fs::read_to_string(&path).expect("readable");
    let blocks = sfz_blocks(&markdown);
    assert!(blocks.len() >= min, "{doc}: only {} examples found", blocks.len());
    for (line, text) in blocks {
        let checked = sfz::check::check_text(Path::new("example.sfz"), &text);
        let errors: Vec<_> = checked.diags.iter().filter(|d| d.is_error()).collect();
        assert!(errors.is_empty(), "{doc}:{line}: the example has errors: {errors:?}\n{text}");
        let formatted = sfz::fmt::format_text(&text).expect("parses");
        assert_eq!(formatted, text, "{doc}:{line}: the example is not formatted");
    }
}

#[test]
fn language_reference_examples() {
    check_examples("docs/LANGUAGE.md", 10);
}

#[test]
fn readme_examples() {
    check_examples("README.md", 1);
}

#[test]
fn oracle_guide_examples() {
    check_examples("docs/ORACLES.md", 1);
}

#[test]
fn numeric_guide_examples() {
    check_examples("docs/NUMERIC.md", 1);
}
