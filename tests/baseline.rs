//! `sfz report` over causes: a baseline of known causes, `--new-since` an earlier folder,
//! `--fail-on-new`, `--issue`, and E0108 for a baseline that cannot be used.
mod common;
use common::process::{run, sfz, write};

use std::path::Path;

/// A finding line as `sfz fuzz` writes it (format 3 stores the cause; this one is read from the
/// signature, as an older line is).
fn line(id: &str, api: &str, oracle: &str, signature: &str, signal: Option<&str>) -> String {
    serde_json::json!({
        "id": id, "api": api, "aten": "aten::x", "oracle": oracle, "signature": signature, "message": format!("{signature}\nmore"),
        "signal": signal, "seed": 9, "case_index": 1, "case": {"op": 0, "args": []}, "inputs": [], "repro": format!("repro/{id}.py"),
        "elapsed_s": 1.0, "sfz_version": "0.1.0", "torch_version": "2.13.0", "mode": "conform", "format": 2
    })
    .to_string()
}

fn folder(root: &Path, name: &str, lines: &[String]) -> std::path::PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(dir.join("repro")).expect("mkdir");
    std::fs::write(dir.join("findings.jsonl"), lines.iter().map(|l| format!("{l}\n")).collect::<String>()).expect("write");
    for l in lines {
        let v: serde_json::Value = serde_json::from_str(l).expect("json");
        std::fs::write(dir.join(v["repro"].as_str().expect("repro")), "import torch\nprint('reproducer')\n").expect("write repro");
    }
    dir
}

fn campaign(root: &Path) -> std::path::PathBuf {
    folder(
        root,
        "now",
        &[
            line("crash-a", "torch.max_pool3d_with_indices_backward", "crash", "memory error in at::native::kernel", Some("SIGSEGV")),
            line("layout-a", "torch.max_pool3d_with_indices_backward", "layout", "other memory layout: memory error", Some("SIGABRT")),
            line("overflow-n", "torch.linalg.vector_norm", "overflow", "premature inf in output 0: an unscaled sum of squares overflows float32", None),
            line("relation-l", "torch.nn.functional.layer_norm", "relation", "relation scale_invariant does not hold: an unscaled sum of squares overflows float32", None),
            line("precision-c", "torch.cosine_similarity", "precision", "values differ in output 0", None),
            line("precision-c2", "torch.ops.aten.cosine_similarity", "precision", "values differ in output 0", None),
        ],
    )
}

#[test]
fn causes_are_listed_once_worst_first_and_known_ones_apart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let now = campaign(dir.path());
    let (code, stdout, stderr) = run(sfz().args(["report", "--no-baseline"]).arg(&now));
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.starts_with("6 unique findings (crash 1, layout 1, overflow 1, precision 2, relation 1): 3 new causes (memory 1, wrong 1, large 1)"), "{stdout}");
    let rows: Vec<&str> = stdout.lines().filter(|l| ["memory ", "wrong ", "large "].iter().any(|s| l.trim_start().starts_with(s))).collect();
    assert_eq!(rows.len(), 3, "{stdout}");
    assert!(rows[0].contains("crash-a") && rows[1].contains("precision-c") && rows[2].contains("overflow-n"), "{stdout}");

    let baseline =
        write(dir.path(), "known.toml", "[[known]]\nname = \"squares-overflow\"\ntext = \"an unscaled sum of squares overflows\"\nissue = \"https://example.org/issues/1\"\n");
    let (code, stdout, _) = run(sfz().arg("report").arg(&now).arg("--baseline").arg(&baseline).arg("--fail-on-new"));
    assert_eq!(code, 1, "new causes fail the gate: {stdout}");
    assert!(stdout.contains(": 2 new causes"), "{stdout}");
    assert!(stdout.contains("1 known cause (baseline), not listed: squares-overflow (2 findings, https://example.org/issues/1)"), "{stdout}");
}

#[test]
fn new_since_lists_only_causes_the_earlier_folder_did_not_report() {
    let dir = tempfile::tempdir().expect("tempdir");
    let now = campaign(dir.path());
    let before = folder(dir.path(), "before", &[line("crash-b", "torch.max_pool3d_with_indices_backward", "out", "out= variant: memory error", Some("SIGSEGV"))]);
    let (code, stdout, stderr) = run(sfz().args(["report", "--no-baseline", "--fail-on-new"]).arg(&now).arg("--new-since").arg(&before));
    assert_eq!(code, 1, "{stderr}");
    assert!(stdout.contains(": 2 new causes (wrong 1, large 1)"), "{stdout}");
    assert!(!stdout.contains("crash-a"), "the memory corruption was reported before: {stdout}");
    // The JSON says the same, cause by cause, and gates the same way.
    let (code, stdout, stderr) = run(sfz().args(["report", "--no-baseline", "--fail-on-new", "--json"]).arg(&now).arg("--new-since").arg(&before));
    assert_eq!(code, 1, "{stderr}");
    let json: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    let new: Vec<bool> = json["causes"].as_array().expect("causes").iter().map(|c| c["new"] == true).collect();
    assert_eq!(new.iter().filter(|n| **n).count(), 2, "{json}");
    assert!(json["causes"].as_array().expect("causes").iter().any(|c| c["new"] == false && c["findings"].to_string().contains("crash-a")), "{json}");
    // Against itself, nothing is new and the gate passes.
    let (code, stdout, _) = run(sfz().args(["report", "--no-baseline", "--fail-on-new"]).arg(&now).arg("--new-since").arg(&now));
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.contains(": 0 new causes"), "{stdout}");
    // A folder that is not a campaign.
    let (code, _, stderr) = run(sfz().args(["report", "--no-baseline", "--color=never"]).arg(&now).arg("--new-since").arg(dir.path()));
    assert_eq!(code, 2);
    assert!(stderr.contains("error[E0105]"), "{stderr}");
}

#[test]
fn an_umbrella_report_names_the_cause_its_operators_and_one_reproducer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let now = campaign(dir.path());
    let (code, stdout, stderr) = run(sfz().args(["report", "--no-baseline", "--issue", "relation-l"]).arg(&now));
    assert_eq!(code, 0, "{stderr}");
    insta::assert_snapshot!(stdout);
    let (code, _, stderr) = run(sfz().args(["report", "--no-baseline", "--color=never", "--issue", "no-such-id"]).arg(&now));
    assert_eq!(code, 2);
    assert!(stderr.contains("error[E0101]"), "{stderr}");
}

#[test]
fn a_baseline_that_cannot_be_used_is_e0108_pointing_at_the_problem() {
    let dir = tempfile::tempdir().expect("tempdir");
    let now = campaign(dir.path());
    let bad = write(dir.path(), "bad.toml", "[[known]]\nname = \"squares\"\ncause = \"premture\"\n\n[[known]]\nname = \"all\"\nissue = \"https://example.org\"\n");
    let (code, stdout, stderr) = run(sfz().args(["report", "--color=never"]).arg(&now).arg("--baseline").arg(&bad));
    assert_eq!(code, 2, "{stdout}");
    assert!(stdout.is_empty(), "nothing is reported against a broken baseline: {stdout}");
    insta::assert_snapshot!(stderr.replace(&dir.path().display().to_string(), "<tmp>"));
    let spec = write(dir.path(), "exp.sfz", "api torch.exp(input: Tensor) -> Tensor {}\n");
    let (code, _, stderr) =
        run(sfz().args(["fuzz", "--color=never", "--iterations", "1", "--baseline"]).arg(dir.path().join("missing.toml")).arg(&spec).arg("--out").arg(dir.path().join("out")));
    assert_eq!(code, 2);
    assert!(stderr.contains("error[E0108]: cannot read the baseline"), "{stderr}");
}

/// The baseline shipped with sfz is valid.
#[test]
fn the_shipped_baseline_reads() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("baseline.toml");
    let text = std::fs::read_to_string(&path).expect("baseline.toml is shipped");
    let baseline = sfz::findings::baseline::Baseline::parse(&text).unwrap_or_else(|p| panic!("{p:?}"));
    assert!(!baseline.entries.is_empty());
    assert!(baseline.entries.iter().all(|e| e.note.is_some()), "every entry says why it is known");
}
