//! UI tests: every `tests/ui/**/*.sfz` is checked, and its diagnostics as `sfz check` renders
//! them (no colour) are snapshotted together with the source. See tests/ui/README.md.
use sfz::check;
use sfz::diag::{render_all, RenderConfig};

#[test]
fn ui() {
    insta::glob!("ui/**/*.sfz", |path| {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let rel = path.strip_prefix(root).unwrap_or(path).to_path_buf();
        let source = std::fs::read_to_string(path).expect("ui test file is readable");
        // Check through the relative path so file names in the output do not depend on the
        // checkout's location.
        let checked = check::check_text(&rel, &source);
        let rendered = render_all(&checked.map, &checked.diags, RenderConfig { color: false });
        let mut snapshot = String::new();
        for (n, line) in source.lines().enumerate() {
            snapshot.push_str(&format!("{:>3} | {line}\n", n + 1));
        }
        snapshot.push_str("---\n");
        snapshot.push_str(if rendered.is_empty() { "(no diagnostics)\n" } else { &rendered });
        insta::assert_snapshot!(snapshot);
    });
}
