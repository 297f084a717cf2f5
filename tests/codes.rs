//! The diagnostic code registry is the only place codes exist: each has an explanation page with
//! the fixed headings, and each is exercised by at least one snapshot test.
use std::path::Path;

#[test]
fn every_code_has_a_page_with_the_fixed_headings() {
    for info in sfz::diag::CODES {
        for heading in ["## What it means", "## Example", "## How to fix"] {
            assert!(info.explanation.contains(heading), "{} page lacks `{heading}`", info.code);
        }
        assert!(info.explanation.starts_with(&format!("# {}: {}", info.code, info.title)), "{} page title", info.code);
    }
}

#[test]
fn every_page_is_registered() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/errors");
    for entry in std::fs::read_dir(dir).expect("docs/errors exists") {
        let name = entry.expect("entry").file_name().to_string_lossy().trim_end_matches(".md").to_string();
        assert!(sfz::diag::lookup(&name).is_some(), "docs/errors/{name}.md has no registry entry");
    }
}

#[test]
fn every_code_appears_in_a_snapshot() {
    let mut text = String::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    collect(&root, &mut text);
    for info in sfz::diag::CODES {
        let shown = text.contains(&format!("[{}]", info.code)) || text.contains(&format!("\"code\": \"{}\"", info.code));
        assert!(shown, "no snapshot under tests/ shows {}", info.code);
    }
}

/// No spec is known to make the solver's encoding panic (`gen::run_job` catches it), so the
/// warning that skips such an API is rendered here from the function `sfz fuzz`'s planner calls.
#[test]
fn a_solver_failure_skips_the_api_with_w0008() {
    let src = "api torch.abs(input: Tensor) -> Tensor {\n    input.ndim >= 1;\n}\n";
    let checked = sfz::check::check_text(Path::new("spec.sfz"), src);
    let (diag, skipped) = sfz::plan::solver_failure(&checked.spec.apis[0], "unexpected term in an index");
    assert_eq!(skipped.reason, "solver failure: unexpected term in an index");
    insta::assert_snapshot!(sfz::diag::render_all(&checked.map, &[diag], Default::default()));
}

fn collect(dir: &Path, out: &mut String) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = entry.path();
        if p.is_dir() {
            collect(&p, out);
        } else if p.extension().is_some_and(|e| e == "snap") {
            out.push_str(&std::fs::read_to_string(&p).unwrap_or_default());
        }
    }
}
