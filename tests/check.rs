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

/// Relations are lowered into the checked API: parameters and outputs by index, calls with
/// their callee's parameter indices, the `forall` values, tolerances; a constraint set's relation
/// is instantiated for the API applying it; rules fold in by status.
#[test]
fn relations_are_lowered_and_rules_fold_in_by_status() {
    use sfz::wire::variant::relation::{Callee, RelExpr, RelFn, RelOp, DEFAULT_TOLERANCES};
    let c = check(
        "api torch.special.i0(input: Tensor) -> Tensor {}\n\
         api torch.special.i0e(input: Tensor) -> Tensor {\n\
             relation identity: finite(torch.special.i0(input)) => log(torch.special.i0(input)) == log(result) + abs(input);\n\
         }\n\
         api torch.max(input: Tensor, dim: int) -> (values: Tensor, indices: Tensor) {\n\
             relation scaled(float32 = [1e-3, 0.0]): forall s in [2.0, -0.5]: self(input = input * s).values == s * values;\n\
         }\n\
         constraints odd(x: Tensor) { relation odd: self(x = -x) == -result; }\n\
         api torch.sin(input: Tensor) -> Tensor { odd(input); }\n\
         #[status(validated)] rule even for torch.special.i0 { relation even: self(input = -input) == result; oracles crash; }\n\
         #[status(candidate)] rule maybe for torch.special.i0 { relation maybe: self(input = input) == result; }\n\
         #[status(rejected), reason(\"inf is right for large inputs\")] rule no_inf for torch.special.i0 { oracles nan_inf; }\n",
    );
    assert!(!c.has_errors(), "{:?}", c.diags);
    let api = |name: &str| c.spec.apis.iter().find(|a| a.name == name).expect("api");
    let call = |callee: Callee, args: Vec<(usize, RelExpr)>, output: usize| RelExpr::Call { callee, args, output };

    let i0e = &api("torch.special.i0e").relations[0].relation;
    let i0 = call(Callee::Api("torch.special.i0".into()), vec![(0, RelExpr::Param(0))], 0);
    assert_eq!(i0e.name, "identity");
    assert_eq!(i0e.guard, Some(RelExpr::Unary(RelFn::Finite, Box::new(i0.clone()))));
    assert_eq!(i0e.lhs, RelExpr::Unary(RelFn::Log, Box::new(i0)));
    assert_eq!(
        i0e.rhs,
        RelExpr::Binary(RelOp::Add, Box::new(RelExpr::Unary(RelFn::Log, Box::new(RelExpr::Result(0)))), Box::new(RelExpr::Unary(RelFn::Abs, Box::new(RelExpr::Param(0)))))
    );
    assert!(i0e.scalars.is_empty());
    assert_eq!(i0e.tolerances, DEFAULT_TOLERANCES);
    assert_eq!(i0e.apis(), ["torch.special.i0"]);

    let max = &api("torch.max").relations[0].relation;
    assert_eq!(max.scalars, [2.0, -0.5]);
    assert_eq!(max.tolerances.float32.rtol, 1e-3);
    assert_eq!(max.tolerances.float64, DEFAULT_TOLERANCES.float64);
    let scaled = RelExpr::Binary(RelOp::Mul, Box::new(RelExpr::Param(0)), Box::new(RelExpr::Scalar));
    assert_eq!(max.lhs, call(Callee::Itself, vec![(0, scaled)], 0));
    assert_eq!(max.rhs, RelExpr::Binary(RelOp::Mul, Box::new(RelExpr::Scalar), Box::new(RelExpr::Result(0))));

    let sin = &api("torch.sin").relations;
    assert_eq!(sin.len(), 1);
    assert_eq!(sin[0].relation.lhs, call(Callee::Itself, vec![(0, RelExpr::Unary(RelFn::Neg, Box::new(RelExpr::Param(0))))], 0));

    let i0 = api("torch.special.i0");
    let names: Vec<&str> = i0.relations.iter().map(|r| r.relation.name.as_str()).collect();
    assert_eq!(names, ["even"]);
    assert!(i0.oracles.iter().any(|o| o.name == "crash"));
    assert_eq!(i0.refuted_oracles, [("nan_inf".to_string(), "inf is right for large inputs".to_string())]);
}

/// The language server's hovers come from the checker: names inside a relation get theirs, and
/// half-typed relations (as an editor sends them) check without panicking.
#[test]
fn relations_have_hovers_and_partial_ones_do_not_panic() {
    let text = "api torch.special.i0(input: Tensor) -> Tensor {}\n\
                api torch.exp(input: Tensor) -> Tensor {\n    /// doubling\n    relation twice: forall s in [2.0]: self(input = input * s) == torch.special.i0(input);\n}\n";
    let c = check(text);
    assert!(!c.has_errors(), "{:?}", c.diags);
    let root = c.roots[0];
    let hover_at = |needle: &str, skip: usize| {
        let offset = text.match_indices(needle).nth(skip).expect("needle").0 + 1;
        c.symbols.at(root, offset).map(|s| s.hover.clone()).unwrap_or_default()
    };
    assert!(hover_at("twice", 0).contains("doubling"));
    assert!(hover_at("self(", 0).contains("self(...)"));
    assert!(hover_at("s)", 0).contains("s: float"));
    assert!(hover_at("torch.special.i0(input)", 0).contains("torch.special.i0"));
    for cut in (text.find("relation").unwrap()..text.len()).step_by(3) {
        check(&text[..cut]);
    }
    // An API whose return type did not parse has no outputs: `result` is an error, not a panic
    // (found by tests/robustness.rs's mutated specs).
    let c = check(
        "api torch.mH(input: Tensor) -> apiTensor {}
rule r for torch.mH {
    relation odd: self(input = -input) == -result;
}
",
    );
    assert!(c.diags.iter().any(|d| d.message.contains("has no outputs")), "{:?}", c.diags.iter().map(|d| &d.message).collect::<Vec<_>>());
}

/// A rule that gives an oracle its tolerances refines a bare use of it, whether the bare use
/// comes from the body, a rule before it or a rule after it; of two uses with tolerances the
/// first stands.
#[test]
fn a_rules_tolerances_refine_a_bare_oracle_in_any_order() {
    let bare = "#[status(validated)] rule inferred for torch.special.i0 { oracles precision; }\n";
    let tuned = "#[status(validated)] rule tuned for torch.special.i0 { oracles precision(float32 = [5e-4, 1e-4]); }\n";
    let other = "#[status(validated)] rule other for torch.special.i0 { oracles precision(float32 = [1e-1, 1e-1]); }\n";
    for rules in [format!("{bare}{tuned}"), format!("{tuned}{bare}"), format!("{tuned}{other}")] {
        let c = check(&format!("api torch.special.i0(input: Tensor) -> Tensor {{ oracles crash, precision; }}\n{rules}"));
        assert!(!c.has_errors(), "{:?}", c.diags);
        let uses: Vec<_> = c.spec.apis[0].oracles.iter().filter(|o| o.name == "precision").collect();
        assert_eq!(uses.len(), 1, "{rules}");
        assert!(!uses[0].args.is_empty(), "the tolerances stand: {rules}");
        assert!(format!("{:?}", uses[0].args).contains("0.0005"), "the first tolerances: {:?}", uses[0].args);
    }
}
