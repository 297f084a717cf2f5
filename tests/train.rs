//! `sfz train` end to end: with no files it trains on the one-op sweep (each op alone, over
//! ordinary values and the dtype's cliffs) in a real worker, and every op that can turn
//! non-finite from finite inputs gets positives.
mod common;
use common::process::{run, sfz};

#[test]
fn the_one_op_sweep_gives_positives_to_every_op_that_can_go_non_finite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("models.json");
    let sweep = dir.path().join("sweep.sfz");
    let (code, stdout, stderr) = run(sfz().args(["train", "--budget", "20", "--episodes", "1", "--out"]).arg(&out).arg("--sweep-out").arg(&sweep));
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("trained 50 op models"), "{stdout}");
    let (code, _, stderr) = run(sfz().arg("check").arg(&sweep));
    assert_eq!(code, 0, "the sweep's programs are a spec a user can read and run: {stderr}");
    let m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).expect("models")).expect("JSON");
    assert_eq!(m["version"], sfz::wire::program::soft::VERSION);
    let positives = |op: &str| m["models"][op]["positives"].as_u64().unwrap_or_else(|| panic!("a model for {op}"));
    for op in ["Exp", "Log", "Div", "Pow", "Sqrt", "Square", "Mul", "Sum", "Var", "Matmul", "To", "Acos", "Erfinv", "Cosh"] {
        assert!(positives(op) > 0, "{op}: {}", m["models"][op]);
    }
    // Bounded ops never go non-finite from finite inputs.
    for op in ["Abs", "Sigmoid", "Tanh", "Softmax"] {
        assert_eq!(positives(op), 0, "{op}");
    }
}

#[test]
fn the_hunt_goes_on_without_soft_assertions_when_their_file_is_missing() {
    let dir = tempfile::tempdir().expect("tempdir");
    assert!(sfz::cli::hunt::load_models(Some(&dir.path().join("none.json")), false).is_none());
}
