//! Differential oracles, minimization, replay, reports and verified reproducers end to end: real
//! `sfz` and `sfz-worker` binaries, real libtorch, the planted `sfz_test::buggy` operator (see
//! sfz-worker/csrc/shim.cpp: y = x * x with one bug per value of `bug`), and pip torch for the
//! reproducers.
//!
//! One campaign over the planted operator is shared by the tests that only read its folder;
//! tests that change a folder work on a copy.
mod common;
use common::process::{run, sfz};

use sfz::wire::oracle::Oracle;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Diagnostics of a run's stderr, without the progress lines, with `dir` written `<tmp>`.
fn diagnostics(stderr: &str, dir: &Path) -> String {
    let kept: Vec<&str> = stderr.lines().filter(|l| !l.contains("execs") && !l.starts_with("minimized") && !l.contains('\r')).collect();
    kept.join("\n").replace(&dir.display().to_string(), "<tmp>")
}

/// The planted operator with every differential oracle on, and an API whose `inplace` oracle
/// cannot apply (torch.sum has no in-place form).
const BUGGY: &str = r#"/// y = x * x; `bug` plants one bug (shim.cpp): 1 layout, 2 float32 precision, 3 out= values,
/// 4 in-place values, 5 out= raises, 6 backward, 7 out= segfaults; 0 is correct everywhere.
#[aten("sfz_test::buggy")]
api sfz_test.buggy(input: Tensor, bug: int) -> Tensor {
    input.dtype in [float32, float64];
    input.ndim in 1..3;
    input.shape[*] in 2..5;
    input.values in -2.0..2.0;
    bug in [0, 1, 2, 3, 4, 5, 6, 7];
    oracles crash, internal_error, precision, layout, out, inplace, gradient, cuda;
}

api torch.sum(input: Tensor) -> Tensor {
    input.dtype in [float32];
    oracles crash, inplace;
}
"#;

/// A finished campaign over `BUGGY`: its folder, JSON summary and stderr.
struct Campaign {
    dir: PathBuf,
    out: PathBuf,
    summary: serde_json::Value,
    stderr: String,
}

fn campaign() -> &'static Campaign {
    static CAMPAIGN: OnceLock<Campaign> = OnceLock::new();
    CAMPAIGN.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir").keep();
        let spec = dir.join("buggy.sfz");
        std::fs::write(&spec, BUGGY).expect("write spec");
        let out = dir.join("out");
        let (code, stdout, stderr) = run(sfz()
            .args(["fuzz", "--color=never", "--json", "--iterations", "300", "--seed", "5", "--workers", "1", "--mutate", "none", "--check-share", "all"])
            .arg(&spec)
            .arg("--out")
            .arg(&out)
            .current_dir(&dir));
        assert_eq!(code, 0, "{stderr}");
        Campaign { dir, out, summary: json(&stdout), stderr }
    })
}

/// The findings of a folder as JSON values.
fn findings(out: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(out.join("findings.jsonl")).expect("findings.jsonl");
    text.lines().map(json).collect()
}

fn bug_of(f: &serde_json::Value) -> i64 {
    f["case"]["args"][1]["Int"].as_i64().unwrap_or_else(|| panic!("bug argument: {f}"))
}

/// Copies a findings folder (files and `repro/`).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir").flatten() {
        let p = entry.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(entry.file_name()));
        } else {
            std::fs::copy(&p, to.join(entry.file_name())).expect("copy");
        }
    }
}

#[test]
fn each_differential_oracle_fires_on_its_planted_bug_and_agrees_elsewhere() {
    let c = campaign();
    let found = findings(&c.out);
    // Which bug each oracle found: exactly the planted ones (minimization keeps `bug`: no
    // other value shows the same disagreement).
    let mut fired: Vec<(String, i64)> = found.iter().map(|f| (f["oracle"].as_str().unwrap_or("").to_string(), bug_of(f))).collect();
    fired.sort();
    fired.dedup();
    let expected: Vec<(String, i64)> =
        [("gradient", 6), ("inplace", 4), ("layout", 1), ("out", 3), ("out", 5), ("out", 7), ("precision", 2)].iter().map(|(o, b)| (o.to_string(), *b)).collect();
    assert_eq!(fired, expected, "{found:#?}");
    for f in &found {
        match f["oracle"].as_str().unwrap_or("") {
            // The out= overload refusing bug 5 while the functional call returns.
            "out" if bug_of(f) == 5 => {
                assert!(f["signature"].as_str().unwrap_or("").starts_with("only the out= variant raises"), "{f}");
                assert_eq!(f["evidence"]["Differential"]["what"], "VariantRaises");
            }
            // The worker killed inside the out= check: a finding of that check, not of the call.
            "out" if bug_of(f) == 7 => {
                assert_eq!(f["signal"], "SIGSEGV");
                // Keyed by the frame it died in, the planted bug's own function.
                assert_eq!(f["signature"], "out= variant: memory error in {anon}::test_buggy_out", "{f}");
            }
            "precision" => assert_eq!(f["case"]["args"][0]["Tensor"]["dtype"], "Float32", "only float32 is off: {f}"),
            _ => {}
        }
        assert!(c.out.join(f["repro"].as_str().expect("repro")).is_file());
        assert!(c.out.join(f["pinned"].as_str().expect("pinned")).is_file());
    }
    // Every check ran and mostly agreed (bug 0 and the bugs of the other oracles); CUDA runs
    // where there is a GPU and is skipped, saying why, where there is none.
    let checks = &c.summary["checks"];
    for oracle in ["precision", "layout", "out", "inplace", "gradient"] {
        let s = &checks[oracle];
        assert!(s["cases"].as_u64().unwrap_or(0) > 0 && s["agreed"].as_u64().unwrap_or(0) > s["disagreed"].as_u64().unwrap_or(0), "{oracle}: {s}");
    }
    // The out= overload raising for bug 5 is counted apart from value disagreements.
    assert!(checks["out"]["one_raised"].as_u64().unwrap_or(0) > 0 && checks["layout"]["one_raised"] == 0, "{checks}");
    let cuda = &checks["cuda"];
    let count = |k: &str| cuda[k].as_u64().unwrap_or(0);
    let unavailable = |k: &String| k.starts_with("CUDA is not available");
    if has_gpu() {
        // It ran, found nothing (the planted operator has no CUDA bug) and never said "no GPU".
        assert!(count("skipped") < count("cases") && count("disagreed") == 0 && count("one_raised") == 0, "{cuda}");
        assert!(cuda["skip_reasons"].as_object().is_none_or(|r| !r.keys().any(unavailable)), "{cuda}");
    } else {
        assert_eq!(cuda["skipped"], cuda["cases"], "{cuda}");
        assert!(cuda["skip_reasons"].as_object().is_some_and(|r| r.keys().all(unavailable)), "{cuda}");
    }
}

/// Whether this machine has an NVIDIA GPU and its driver (the driver lists its GPUs here).
fn has_gpu() -> bool {
    std::fs::read_dir("/proc/driver/nvidia/gpus").is_ok_and(|mut d| d.next().is_some())
}

#[test]
fn an_oracle_that_cannot_apply_is_a_warning_and_the_rest_runs() {
    let c = campaign();
    insta::assert_snapshot!(diagnostics(&c.stderr, &c.dir));
    let apis: Vec<&str> = c.summary["apis"].as_array().expect("apis").iter().filter_map(|a| a["api"].as_str()).collect();
    assert!(apis.contains(&"torch.sum"), "torch.sum still runs: {apis:?}");
}

#[test]
fn minimization_shrinks_a_finding_and_keeps_the_original() {
    let c = campaign();
    let found = findings(&c.out);
    let mut shrunk = 0;
    for f in &found {
        let m = &f["minimization"];
        assert!(m.is_object(), "every finding went through minimization: {f}");
        let (before, after) = (m["elements_before"].as_u64().unwrap_or(0), m["elements_after"].as_u64().unwrap_or(0));
        assert!(after <= before);
        if f["original"].is_object() {
            shrunk += 1;
            assert!(after < before || m["steps"].as_u64() > Some(0), "{m}");
            let original = c.out.join(f["original"]["repro"].as_str().expect("original repro"));
            assert!(original.is_file(), "the original reproducer is kept");
            assert_ne!(std::fs::read_to_string(&original).ok(), std::fs::read_to_string(c.out.join(f["repro"].as_str().unwrap_or(""))).ok());
            assert_eq!(f["original"]["case"]["args"][1], f["case"]["args"][1], "the bug stays planted");
            // The message is the smaller case's; the original's is kept with it.
            assert!(f["original"]["message"].is_string(), "{f}");
            if f["original"]["message"].as_str().is_some_and(|m| m.contains(" elements differ")) {
                assert_ne!(f["original"]["message"], f["message"], "{f}");
            }
        }
        // Planted bugs need at most two elements (layout: a non-contiguous pair) to show.
        assert!(after <= 2, "minimized to {after} elements: {f}");
    }
    assert!(shrunk >= 3, "most inputs started larger than their minimum: {found:#?}");
}

#[test]
fn replay_reproduces_a_finding_and_names_bad_ids_and_vanished_apis() {
    let c = campaign();
    let found = findings(&c.out);
    let layout = found.iter().find(|f| f["oracle"] == "layout").expect("a layout finding");
    let id = layout["id"].as_str().expect("id");
    let (code, stdout, stderr) = run(sfz().arg("replay").arg(c.out.join(id)));
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.starts_with(&format!("{id} (layout on sfz_test.buggy): reproduces")), "{stdout}");

    let (code, stdout, _) = run(sfz().args(["replay", "--json", "--dir"]).arg(&c.out).arg(id));
    assert_eq!(code, 0);
    let r = json(&stdout);
    assert_eq!(r["reproduced"], true);
    assert!(r["detections"].as_array().is_some_and(|d| d.iter().any(|d| d.as_str().is_some_and(|s| s.starts_with("layout: ")))), "{r}");

    // An id that is not there.
    let (code, _, stderr) = run(sfz().args(["replay", "--color=never", "--dir"]).arg(&c.out).arg("layout-nope"));
    assert_eq!(code, 2);
    insta::assert_snapshot!("replay_unknown_id", stderr.replace(&c.dir.display().to_string(), "<tmp>"));

    // The spec no longer declares the API.
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = dir.path().join("renamed.sfz");
    std::fs::write(&spec, BUGGY.replace("api sfz_test.buggy(", "api sfz_test.buggy2(")).expect("write");
    let (code, _, stderr) = run(sfz().args(["replay", "--color=never", "--spec"]).arg(&spec).arg(c.out.join(id)));
    assert_eq!(code, 2);
    insta::assert_snapshot!("replay_vanished_api", stderr.replace(&dir.path().display().to_string(), "<tmp>").replace(id, "<id>"));

    // The spec declares it, but the operator registry has no such operator any more.
    std::fs::write(&spec, BUGGY.replace("sfz_test::buggy", "sfz_test::buggy_gone")).expect("write");
    let (code, _, stderr) = run(sfz().args(["replay", "--color=never", "--spec"]).arg(&spec).arg(c.out.join(id)));
    assert_eq!(code, 2);
    insta::assert_snapshot!("replay_operator_gone", stderr.replace(&dir.path().display().to_string(), "<tmp>").replace(id, "<id>"));
}

#[test]
fn report_prints_a_table_and_writes_markdown_sarif_and_json() {
    let c = campaign();
    let copy = tempfile::tempdir().expect("tempdir");
    copy_dir(&c.out, copy.path());
    let (code, stdout, stderr) = run(sfz().args(["report", "--color=never"]).arg(copy.path()));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stderr, "");
    // Input sizes before minimization depend on the generator; after it, on the bugs alone.
    let normalized: String = stdout
        .replace(&copy.path().display().to_string(), "<tmp>")
        .split(" (from ")
        .enumerate()
        .map(|(i, part)| if i == 0 { part.to_string() } else { format!(" (from N){}", &part[part.find(')').map_or(0, |k| k + 1)..]) })
        .collect();
    insta::assert_snapshot!(normalized);

    let md = std::fs::read_to_string(copy.path().join("report.md")).expect("report.md written");
    let found = findings(copy.path());
    for f in &found {
        let id = f["id"].as_str().unwrap_or("");
        assert!(md.contains(&format!("## {id}")), "{id} has a section");
    }
    assert!(md.contains("```python\n# sfz finding"), "reproducers are inline");

    let sarif = json(&std::fs::read_to_string(copy.path().join("report.sarif")).expect("report.sarif written"));
    assert_eq!(sarif["version"], "2.1.0");
    assert!(sarif["$schema"].as_str().is_some_and(|s| s.contains("sarif-2.1.0")));
    let run0 = &sarif["runs"][0];
    assert_eq!(run0["tool"]["driver"]["name"], "sfz");
    let rules: Vec<&str> = run0["tool"]["driver"]["rules"].as_array().expect("rules").iter().filter_map(|r| r["id"].as_str()).collect();
    let results = run0["results"].as_array().expect("results");
    assert_eq!(results.len(), found.len());
    let base = run0["originalUriBaseIds"]["FINDINGS"]["uri"].as_str().expect("a FINDINGS base");
    let folder = std::path::PathBuf::from(base.strip_prefix("file://").expect("a file URI"));
    for r in results {
        let rule = r["ruleId"].as_str().expect("ruleId");
        assert_eq!(rules.get(r["ruleIndex"].as_u64().expect("ruleIndex") as usize), Some(&rule));
        assert!(r["message"]["text"].as_str().is_some_and(|t| !t.is_empty()));
        let loc = &r["locations"][0]["physicalLocation"];
        assert!(loc["artifactLocation"]["uri"].as_str().is_some_and(|u| u.ends_with("buggy.sfz")), "{r}");
        assert!(loc["region"]["startLine"].as_u64().is_some_and(|l| l >= 1));
        let repro = &r["relatedLocations"][0]["physicalLocation"]["artifactLocation"];
        assert_eq!(repro["uriBaseId"], "FINDINGS");
        assert!(folder.join(repro["uri"].as_str().expect("uri")).is_file(), "the reproducer resolves against FINDINGS: {r}");
    }

    let (code, stdout, _) = run(sfz().args(["report", "--json"]).arg(copy.path()));
    assert_eq!(code, 0);
    let j = json(&stdout);
    assert_eq!(j["unique"].as_u64(), Some(found.len() as u64));
    assert_eq!(j["by_oracle"]["out"], 3);
    assert_eq!(j["verified"], serde_json::Value::Null);
    assert_eq!(j["findings"].as_array().map(Vec::len), Some(found.len()));
}

#[test]
fn unreadable_lines_are_skipped_with_a_warning_and_the_rest_is_reported() {
    let c = campaign();
    let copy = tempfile::tempdir().expect("tempdir");
    copy_dir(&c.out, copy.path());
    let path = copy.path().join("findings.jsonl");
    let text = std::fs::read_to_string(&path).expect("read");
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let total = lines.len();
    // A line cut short (a disk that filled up), and a line from an older sfz: format 1 had no
    // evidence, check, minimization or pinned spec.
    lines[1] = lines[1][..40].to_string();
    let mut old = json(&lines[2]);
    for field in ["format", "evidence", "check", "spec", "original", "minimization", "pinned", "mode", "violated"] {
        old.as_object_mut().expect("object").remove(field);
    }
    lines[2] = old.to_string();
    std::fs::write(&path, lines.join("\n") + "\n").expect("write");
    let (code, stdout, stderr) = run(sfz().args(["report", "--color=never", "--json"]).arg(copy.path()));
    assert_eq!(code, 0, "{stderr}");
    insta::assert_snapshot!(stderr.replace(&copy.path().display().to_string(), "<tmp>"));
    let j = json(&stdout);
    assert_eq!(j["unique"].as_u64(), Some(total as u64 - 1), "only the cut line is left out");
    assert_eq!(j["skipped_lines"][0]["line"], 2);
}

/// Real torch APIs whose findings pip torch reproduces, and a planted one it cannot (pip torch
/// has no `sfz_test` operators). The log of negatives is a float64 NaN: no wider reference says
/// the function is undefined there (in float32 the float64 reference would, and no finding).
const REAL: &str = r#"api torch.log(input: Tensor) -> Tensor {
    input.dtype in [float64];
    input.values in -2.0..-1.0;
    oracles nan_inf;
}

api torch.exp(input: Tensor) -> Tensor {
    input.dtype in [float32];
    ensures result.ndim == 9;
}

#[aten("sfz_test::buggy")]
api sfz_test.buggy(input: Tensor, bug: int) -> Tensor {
    input.dtype in [float32];
    bug in [3];
    oracles out;
}
"#;

#[test]
fn verify_runs_each_reproducer_under_pip_torch_and_marks_those_that_reproduce() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = dir.path().join("real.sfz");
    std::fs::write(&spec, REAL).expect("write");
    let out = dir.path().join("out");
    let (code, _, stderr) =
        run(sfz().args(["fuzz", "--json", "--iterations", "60", "--seed", "1", "--workers", "1", "--mutate", "none", "--check-share", "all"]).arg(&spec).arg("--out").arg(&out));
    assert_eq!(code, 0, "{stderr}");
    let (code, stdout, stderr) = run(sfz().args(["report", "--verify", "--json"]).arg(&out));
    assert_eq!(code, 0, "{stderr}");
    let j = json(&stdout);
    let verdicts: std::collections::BTreeMap<String, bool> = j["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| (format!("{} {}", f["oracle"].as_str().unwrap_or(""), f["api"].as_str().unwrap_or("")), f["verification"]["reproduced"].as_bool().unwrap_or(false)))
        .collect();
    let expected: std::collections::BTreeMap<String, bool> =
        [("nan_inf torch.log", true), ("out sfz_test.buggy", false), ("postcondition torch.exp", true)].iter().map(|(k, v)| (k.to_string(), *v)).collect();
    assert_eq!(verdicts, expected, "{j:#}");
    assert_eq!(j["verified"]["reproduced"], 2);
    assert_eq!(j["verified"]["run"], 3);
    let md = std::fs::read_to_string(out.join("report.md")).expect("report.md");
    assert!(md.contains("Reproducers run under pip torch: 2 of 3 reproduce."), "{md}");
    // The finding that did not reproduce is no cause: listed apart, and a later report without
    // --verify remembers it (the verdicts are kept in the folder, per script).
    let causes = |j: &serde_json::Value| {
        j["causes"]
            .as_array()
            .expect("causes")
            .iter()
            .flat_map(|c| c["apis"].as_array().cloned().unwrap_or_default())
            .filter_map(|a| a.as_str().map(str::to_string))
            .collect::<Vec<_>>()
    };
    assert!(!causes(&j).contains(&"sfz_test.buggy".to_string()) && causes(&j).contains(&"torch.log".to_string()), "{j:#}");
    assert_eq!(j["not_reproduced"].as_array().map(Vec::len), Some(1), "{j:#}");
    let (code, stdout, stderr) = run(sfz().args(["report", "--json"]).arg(&out));
    assert_eq!(code, 0, "{stderr}");
    let again = json(&stdout);
    assert_eq!(causes(&again), causes(&j));
    assert_eq!(again["not_reproduced"], j["not_reproduced"]);
    let (_, table, _) = run(sfz().arg("report").arg(&out));
    assert!(table.contains("1 finding whose reproducer did not reproduce when verified, not listed: out-"), "{table}");
    // A record that cannot be read is a warning, and the report goes on without it.
    let record = out.join("verified.json");
    let kept = std::fs::read_to_string(&record).expect("verified.json");
    std::fs::write(&record, "{ not json").expect("write");
    let (code, stdout, stderr) = run(sfz().args(["report", "--json"]).arg(&out));
    assert_eq!(code, 0, "{stderr}");
    insta::assert_snapshot!(stderr.replace(&out.display().to_string(), "<out>"));
    assert_eq!(json(&stdout)["not_reproduced"].as_array().map(Vec::len), Some(0));
    std::fs::write(&record, kept).expect("write");
    // A script that dies by a signal instead of failing as recorded shows a bug in another form:
    // not reproduced, but said apart.
    let log = j["findings"].as_array().expect("findings").iter().find(|f| f["api"] == "torch.log").expect("the log finding").clone();
    let script = out.join(log["repro"].as_str().expect("repro path"));
    let text = std::fs::read_to_string(&script).expect("script");
    std::fs::write(&script, text.replacen("import torch\n", "import torch\nimport ctypes\nctypes.string_at(0)\n", 1)).expect("write");
    let (code, stdout, stderr) = run(sfz().args(["report", "--verify", "--json"]).arg(&out));
    assert_eq!(code, 0, "{stderr}");
    let j = json(&stdout);
    assert_eq!((j["verified"]["reproduced"].as_i64(), j["verified"]["differently"].as_i64()), (Some(1), Some(1)), "{j:#}");
    let md = std::fs::read_to_string(out.join("report.md")).expect("report.md");
    assert!(md.contains("1 of 3 reproduce. 1 more crashes instead of failing as recorded.") && md.contains("does not reproduce as recorded, but crashes"), "{md}");
}

#[test]
fn a_worker_death_that_does_not_recur_alone_is_listed_apart() {
    let c = campaign();
    // The planted segfault kills a fresh worker again: confirmed.
    let found = findings(&c.out);
    let segfault = found.iter().find(|f| f["signal"] == "SIGSEGV").expect("the out= segfault");
    assert_eq!(segfault["confirmed"], true, "{segfault}");
    assert!(found.iter().filter(|f| f["signal"].is_null()).all(|f| f["confirmed"].is_null()), "only deaths are confirmed");
    // A death that did not recur (here: marked by hand) leaves the table and is named below it.
    let copy = tempfile::tempdir().expect("tempdir");
    copy_dir(&c.out, copy.path());
    let path = copy.path().join("findings.jsonl");
    let lines: Vec<String> = std::fs::read_to_string(&path)
        .expect("read")
        .lines()
        .map(|l| {
            let mut f = json(l);
            if f["signal"] == "SIGSEGV" {
                f["confirmed"] = serde_json::Value::Bool(false);
            }
            f.to_string()
        })
        .collect();
    std::fs::write(&path, lines.join("\n") + "\n").expect("write");
    let id = segfault["id"].as_str().expect("id");
    let (code, stdout, _) = run(sfz().arg("report").arg(copy.path()));
    assert_eq!(code, 0);
    assert!(stdout.starts_with(&format!("{} unique findings", found.len() - 1)), "{stdout}");
    assert!(
        stdout
            .contains(&format!("1 more finding not listed: the worker died, but not again when the case ran alone in a fresh worker (memory corrupted by an earlier case?): {id}")),
        "{stdout}"
    );
    let (_, stdout, _) = run(sfz().args(["report", "--json"]).arg(copy.path()));
    assert_eq!(json(&stdout)["unconfirmed"][0], id);
}

#[test]
fn one_assert_reached_through_two_apis_is_one_shared_cause() {
    let c = campaign();
    let copy = tempfile::tempdir().expect("tempdir");
    copy_dir(&c.out, copy.path());
    let path = copy.path().join("findings.jsonl");
    let text = std::fs::read_to_string(&path).expect("read");
    let first: serde_json::Value = serde_json::from_str(text.lines().next().expect("a finding")).expect("JSON");
    let variant = |api: &str, id: &str, signature: &str| {
        let mut f = first.clone();
        f["api"] = api.into();
        f["id"] = id.into();
        f["oracle"] = "internal_error".into();
        f["signature"] = signature.into();
        f["cause"] = serde_json::json!({"kind": "internal", "place": "call", "what": signature});
        f.to_string()
    };
    let lines = [
        variant("torch.a", "internal_error-a-1", "INTERNAL ASSERT aten/src/ATen/native/Foo.cpp:12"),
        variant("torch.b", "internal_error-b-2", "INTERNAL ASSERT aten/src/ATen/native/Foo.cpp:12"),
        variant("torch.c", "internal_error-c-3", "INTERNAL ASSERT aten/src/ATen/native/Foo.cpp:99"),
    ];
    std::fs::write(&path, lines.join("\n") + "\n").expect("write");
    let (code, stdout, stderr) = run(sfz().args(["report", "--json"]).arg(copy.path()));
    assert_eq!(code, 0, "{stderr}");
    let causes = json(&stdout)["shared_causes"].clone();
    assert_eq!(causes.as_array().map(Vec::len), Some(1), "{causes}");
    assert_eq!(causes[0]["findings"], serde_json::json!(["internal_error-a-1", "internal_error-b-2"]));
}

/// A worker that dies in one check of damage another check did (the in-place form taints the
/// process, the out= overload dies in it: bug 8) is confirmed with the check that died alone,
/// as its reproducer runs it: the out= overload alone never dies, so the finding is unconfirmed
/// and its script, which would exit 0, is not reported as a bug.
#[test]
fn a_death_in_a_check_is_confirmed_with_that_check_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = dir.path().join("tainted.sfz");
    let text = "#[aten(\"sfz_test::buggy\")]\napi sfz_test.buggy(input: Tensor, bug: int) -> Tensor {\n    input.dtype in [float32];\n    input.ndim in 1..2;\n    input.shape[*] in 2..4;\n    bug in [8];\n    oracles crash, inplace, out;\n}\n";
    std::fs::write(&spec, text).expect("write spec");
    let out = dir.path().join("out");
    let (code, _, stderr) =
        run(sfz().args(["fuzz", "--json", "--iterations", "4", "--seed", "1", "--workers", "1", "--mutate", "none", "--check-share", "all"]).arg(&spec).arg("--out").arg(&out));
    assert_eq!(code, 0, "{stderr}");
    let found = findings(&out);
    let died: Vec<&serde_json::Value> = found.iter().filter(|f| f["oracle"] == "out").collect();
    assert!(!died.is_empty(), "the out= check died after the in-place check tainted the worker: {found:#?}");
    for f in died {
        assert_eq!(f["confirmed"].as_bool(), Some(false), "the out= overload alone never dies: {f}");
    }
}

/// `culprit::locate` finds where a culprit's damage kills a fresh worker: the call alone, then
/// each check alone. Here the second check (bug 9: the in-place form taints the process and dies
/// in a tainted one) dies on the second call; the death names it by its place among all the
/// API's checks (1, `inplace`), not by its place in the one-check pool that ran it (0, which
/// would name `layout`).
#[test]
fn a_culprits_death_in_a_check_names_that_check_among_all_of_its_apis() {
    use sfz::wire::case::{Arg, Case, DType, Fill, Layout, TensorRecipe};
    use sfz::worker::{fetch_catalog, PoolConfig};
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = dir.path().join("nine.sfz");
    let text = "#[aten(\"sfz_test::buggy\")]\napi sfz_test.buggy(input: Tensor, bug: int) -> Tensor {\n    input.dtype in [float32];\n    bug in [9];\n    oracles crash, layout, inplace;\n}\n";
    std::fs::write(&spec, text).expect("write spec");
    let worker = Path::new(env!("CARGO_BIN_EXE_sfz")).with_file_name("sfz-worker");
    let catalog = sfz::ops::catalog::Catalog::from_schemas(fetch_catalog(&worker).expect("the worker lists its operators"));
    let checked = sfz::check::check_paths(&[spec]);
    let (plans, diags) = sfz::plan::plan(&checked.spec, &catalog);
    assert_eq!(plans.len(), 1, "{diags:?}");
    let (ops, checks) = sfz::plan::op_table(&plans);
    let oracles: Vec<Oracle> = checks[0].iter().map(|c| c.oracle).collect();
    assert_eq!(oracles, [Oracle::Layout, Oracle::Inplace]);
    let config = PoolConfig { worker_exe: worker, ops, checks: checks.clone(), ..PoolConfig::default() };
    let input = TensorRecipe { dtype: DType::Float32, shape: vec![2, 2], fill: Fill::Uniform { lo: -1.0, hi: 1.0 }, seed: 1, layout: Layout::Contiguous, specials: vec![] };
    let case = Case { op: 0, args: vec![Arg::Tensor(input), Arg::Int(9)], forward: None };
    let (place, death, call) = sfz::triage::culprit::locate(&config, &plans[0], &checks[0], &case, None).expect("the case kills a fresh worker by itself");
    assert_eq!((place, call, death.oracle), (Some(1), 2, Oracle::Inplace), "{death:?}");
    assert!(matches!(death.evidence, sfz::oracle::Evidence::Differential { check: 1, .. }), "{death:?}");
}
