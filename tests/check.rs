//! What checking produces beyond diagnostics: the checked spec that planning and generation
//! read (oracle arguments, folded rules, programs).
use std::path::Path;

use sfz::spec::Value;

fn check(text: &str) -> sfz::check::Checked {
    sfz::check::check_text(Path::new("t.sfz"), text)
}

fn codes(c: &sfz::check::Checked) -> Vec<&str> {
    c.diags.iter().map(|d| d.code.as_str()).collect()
}

#[test]
fn oracle_arguments_are_completed_with_defaults() {
    let c = check(
        "oracle allclose(rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = false);\n\
         api torch.exp(input: Tensor) { oracles crash, allclose(1e-3, atol = 1); }\n",
    );
    assert_eq!(codes(&c), ["W0004"]);
    let o = &c.spec.apis[0].oracles[1];
    assert_eq!(o.name, "allclose");
    let args: Vec<(&str, &Value)> = o.args.iter().map(|(n, v)| (n.as_str(), v)).collect();
    assert_eq!(args, [("rtol", &Value::Float(1e-3)), ("atol", &Value::Float(1.0)), ("equal_nan", &Value::Bool(false))]);
}

fn fixture_catalog() -> sfz::ops::catalog::Catalog {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/schemas-2.13.0.txt")).expect("fixture");
    sfz::ops::catalog::Catalog::from_schemas(text.lines())
}

/// Every API of the repository's specs can be called as declared.
#[test]
fn the_specs_match_libtorchs_schemas() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let checked = sfz::check::check_paths(&[root.join("specs"), root.join("examples")]);
    assert!(!checked.has_errors());
    let diags = sfz::check::signatures::compare(&checked, &fixture_catalog());
    assert!(diags.is_empty(), "{}", sfz::diag::render_all(&checked.map, &diags, Default::default()));
}

#[test]
fn signatures_that_do_not_match_are_reported() {
    let text = "api torch.exp(input: Tensor, dim: int) {}\n\napi torch.expp(input: Tensor) {}\n\napi torch.linalg.inv(A: Tensor) {}\n";
    let checked = check(text);
    let diags = sfz::check::signatures::compare(&checked, &fixture_catalog());
    insta::assert_snapshot!(sfz::diag::render_all(&checked.map, &diags, Default::default()));
}

#[test]
fn python_names_of_operators_for_completion() {
    let names = sfz::check::signatures::python_names(&fixture_catalog());
    for want in ["torch.add", "torch.linalg.inv", "torch.special.erf", "torch.fft.fft"] {
        assert!(names.iter().any(|n| n == want), "{want}");
    }
    assert!(!names.iter().any(|n| n.starts_with("torch._")));
}
