//! The campaign the shard, merge, resume and Slurm tests run, and what they compare.
use std::collections::BTreeSet;
use std::path::Path;

/// Planted bugs of the test operators (shim.cpp): `buggy`'s differential ones, and a crash per
/// signal of `raise_signal`; every key turns up within a few hundred cases.
pub const CAMPAIGN: &str = r#"#[aten("sfz_test::buggy")]
api sfz_test.buggy(input: Tensor, bug: int) -> Tensor {
    input.dtype in [float32, float64];
    input.ndim in 1..3;
    input.shape[*] in 2..5;
    input.values in -2.0..2.0;
    bug in [0, 1, 2, 3, 4, 6];
    oracles crash, internal_error, precision, layout, out, inplace, gradient;
}

#[aten("sfz_test::raise_signal")]
api sfz_test.raise_signal(sig: int) {
    sig in [0, 4, 6, 7, 8, 11];
    oracles crash, hang, internal_error, oom;
}

api torch.exp(input: Tensor) {
    input.dtype in [float32];
}
"#;

/// The arguments every campaign here runs with: one worker, every case checked, no shrinking,
/// no quarantine, so that a run executes every case and which keys it finds depends on its cases
/// only.
pub const FIXED: &[&str] = &["fuzz", "--json", "--color=never", "--workers", "1", "--check-share", "all", "--minimize", "0", "--quarantine", "0", "--seed", "7"];

/// The (API, oracle, signature) keys of a findings folder.
pub fn keys(dir: &Path) -> BTreeSet<(String, String, String)> {
    let text = std::fs::read_to_string(dir.join("findings.jsonl")).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    text.lines()
        .map(|l| {
            let f: serde_json::Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("a whole JSON line ({e}): {l}"));
            (f["api"].as_str().unwrap_or("").into(), f["oracle"].as_str().unwrap_or("").into(), f["signature"].as_str().unwrap_or("").into())
        })
        .collect()
}
