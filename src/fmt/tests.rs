use super::format_text;

/// Formats, and checks that formatting again changes nothing.
fn fmt(src: &str) -> String {
    let once = format_text(src).unwrap_or_else(|d| panic!("syntax errors: {d:?}"));
    let twice = format_text(&once).unwrap_or_else(|d| panic!("output does not parse: {d:?}\n{once}"));
    assert_eq!(once, twice, "not a fixed point");
    once
}

#[test]
fn canonical_spacing_and_indentation() {
    let out = fmt("api   torch.exp( input :Tensor )->Tensor{input.ndim<=4 ;ensures result.shape==input.shape;oracles crash,hang;}");
    assert_eq!(out, "api torch.exp(input: Tensor) -> Tensor {\n    input.ndim <= 4;\n    ensures result.shape == input.shape;\n    oracles crash, hang;\n}\n");
}

#[test]
fn long_signatures_break_one_parameter_per_line() {
    let src = "api torch.nn.functional.conv2d(input: Tensor, weight: Tensor, bias: Tensor? = None, stride: int[2] = [1, 1], groups: int = 1) -> Tensor {}";
    let out = fmt(src);
    assert!(out.starts_with("api torch.nn.functional.conv2d(\n    input: Tensor,\n"), "{out}");
    assert!(out.contains("    groups: int = 1,\n) -> Tensor {}"), "{out}");
}

#[test]
fn comments_are_kept_in_place() {
    let src = "// header\n\nuse std::dtypes::floating; // why\n\n/// doc\napi f(\n    // before x\n    x: int, // after x\n) {\n    // first\n    x > 0; // trailing\n\n    // second\n    x < 4;\n    // last\n}\n// end\n";
    assert_eq!(fmt(src), src);
}

#[test]
fn comments_inside_expressions_move_before_their_statement() {
    let out = fmt("api f(x: int) {\n    x in [1, // one\n        2];\n}\n");
    assert_eq!(out, "api f(x: int) {\n    // one\n    x in [1, 2];\n}\n");
}

#[test]
fn literals_keep_their_text() {
    let out = fmt("api f(x: int) { x in 0x10..1_000; x.values in 1e-3..2.; s == \"a\\\"b\"; }");
    assert!(out.contains("x in 0x10..1_000;"), "{out}");
    assert!(out.contains("x.values in 1e-3..2.;"), "{out}");
    assert!(out.contains("s == \"a\\\"b\";"), "{out}");
}

#[test]
fn tokens_that_would_merge_keep_a_space() {
    // `1. ..2` is a range from the float `1.`; `1...2` would not parse.
    let out = fmt("api f(x: float) { x in 1. ..2.0; }");
    assert!(out.contains("x in 1. ..2.0;"), "{out}");
}

#[test]
fn symbolic_operators_become_words() {
    let out = fmt("api f(x: int) { !(x > 1) && x < 3 || x == 0; }");
    assert!(out.contains("not (x > 1) and x < 3 or x == 0;"), "{out}");
}

#[test]
fn long_quantifiers_break_after_the_colon() {
    let src = "api f(input: Tensor, index: Tensor, dim: int) { forall d in 0..input.ndim: d == dim or d == dim + input.ndim or index.shape[d] <= input.shape[d]; }";
    let out = fmt(src);
    assert!(out.contains("    forall d in 0..input.ndim:\n        d == dim or d == dim + input.ndim or index.shape[d] <= input.shape[d];\n"), "{out}");
}

#[test]
fn items_are_separated_by_one_blank_line_and_use_runs_stay_together() {
    let out = fmt("use std::a::b;\nuse std::a::c;\napi f() {}\n\n\n\napi g() {}\n");
    assert_eq!(out, "use std::a::b;\nuse std::a::c;\n\napi f() {}\n\napi g() {}\n");
}

#[test]
fn attributes_and_docs() {
    let out = fmt("/// A rule.\n#[status(candidate)]\n#[source(llm), confidence(0.7), evidence(pass=3,fail=0)]\nrule r for torch.exp { input.ndim <= 4; }");
    assert_eq!(out, "/// A rule.\n#[status(candidate), source(llm), confidence(0.7), evidence(pass = 3, fail = 0)]\nrule r for torch.exp {\n    input.ndim <= 4;\n}\n");
}

#[test]
fn syntax_errors_are_refused() {
    assert!(format_text("api f( {").is_err());
}

#[test]
fn empty_and_comment_only_files() {
    assert_eq!(fmt(""), "");
    assert_eq!(fmt("  \n\n"), "");
    assert_eq!(fmt("// only\n\n\n// comments"), "// only\n\n// comments\n");
}
