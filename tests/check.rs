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
