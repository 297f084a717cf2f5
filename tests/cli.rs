//! The `sfz` command end to end: real binaries, real workers, real libtorch.
mod common;
use common::process::{run, sfz, write};

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn json(stdout: &str) -> serde_json::Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("summary is JSON ({e}): {stdout}"))
}

/// Test operators the worker registers (see csrc/shim.cpp): `sig` 0 does nothing, 11 is SIGSEGV.
const CRASHY: &str = r#"
api torch.exp(input: Tensor) {
    input.dtype in [float32];
}

#[aten("sfz_test::raise_signal")]
api sfz_test.raise_signal(sig: int) {
    sig in [0, 11];
    oracles crash, hang, internal_error, oom;
}
"#;

#[test]
fn check_reports_unreadable_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("latin1.sfz");
    std::fs::write(&bad, b"api torch.exp(input: Tensor) { // caf\xe9\n}\n").expect("write");
    let (code, _, stderr) = run(sfz().arg("check").arg("--color=never").arg(&bad));
    assert_eq!(code, 1);
    insta::assert_snapshot!(stderr.replace(&dir.path().display().to_string(), "<tmp>"));
}

/// `check --oracles` counts the APIs each oracle would run on: written ones, implied ones less
/// those a rejected rule refutes or that cannot apply (sin has no in-place twin taking `out`),
/// and relations.
#[test]
fn check_says_on_how_many_apis_each_oracle_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = write(
        dir.path(),
        "apis.sfz",
        r#"api torch.exp(input: Tensor) -> Tensor {
    relation odd: self(input = -input) == -result;
}

api torch.sin(input: Tensor) -> Tensor {
    oracles crash, precision;
}

api torch.cos(input: Tensor) -> Tensor {}

#[status(rejected), source(manual), reason("a test")]
rule no_layout for torch.cos {
    oracles layout;
}

api torch.bitwise_not(input: Tensor) -> Tensor {
    input.dtype in [int32, int64];
    oracles crash, gradient;
}
"#,
    );
    let (code, stdout, stderr) = run(sfz().args(["check", "--oracles", "--format", "json"]).arg(&spec));
    assert_eq!(code, 0, "{stderr}");
    let oracles = &json(&stdout)["oracles"];
    assert_eq!(oracles["apis"], 4, "{oracles}");
    assert_eq!(oracles["precision"], 3, "{oracles}");
    // Implied on exp and cos; asked for on bitwise_not, whose inputs are integers: a warning
    // that names why.
    assert_eq!(oracles["gradient"], 2, "{oracles}");
    let gradient = json(&stdout)["diagnostics"].as_array().expect("diagnostics").iter().find(|d| d["code"] == "W0101").cloned().expect("a W0101");
    assert!(gradient["message"].as_str().is_some_and(|m| m.contains("`gradient`")), "{gradient}");
    assert!(gradient.to_string().contains("nothing to differentiate"), "{gradient}");
    assert_eq!(oracles["layout"], 1, "exp only: sin names its oracles, cos refutes layout: {oracles}");
    assert_eq!(oracles["relation"], 1, "{oracles}");
    assert_eq!(oracles["relations"], 1, "{oracles}");
    let (code, _, stderr) = run(sfz().args(["check", "--oracles", "--no-signatures"]).arg(&spec));
    assert_eq!(code, 2, "--oracles needs the operators: {stderr}");
    assert!(stderr.contains("--oracles needs libtorch's operators"), "{stderr}");
}

#[test]
fn fuzz_reports_apis_it_cannot_call_and_runs_the_rest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = write(
        dir.path(),
        "apis.sfz",
        "api torch.expp(input: Tensor) {\n}\n\napi torch.exp(input: Tensor, dim: int) {\n}\n\napi torch.relu(input: Tensor) {\n    input.dtype in [float32];\n}\n",
    );
    let out = dir.path().join("out");
    let (code, stdout, stderr) =
        run(sfz().args(["fuzz", "--color=never", "--json", "--iterations", "300", "--seed", "1"]).arg(&spec).arg("--out").arg(&out).current_dir(dir.path()));
    assert_eq!(code, 0, "{stderr}");
    let summary = json(&stdout);
    assert_eq!(summary["executions"], 300);
    assert_eq!(summary["apis"].as_array().map(Vec::len), Some(1), "only relu runs");
    assert_eq!(summary["skipped"].as_array().map(Vec::len), Some(2));
    // The diagnostics name the problems at the API names.
    let diags: String = stderr.lines().filter(|l| !l.contains("execs")).collect::<Vec<_>>().join("\n");
    insta::assert_snapshot!(diags.replace(&dir.path().display().to_string(), "<tmp>"));
}

#[test]
fn a_crash_is_recorded_with_its_input_and_the_run_goes_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = write(dir.path(), "crashy.sfz", CRASHY);
    let out = dir.path().join("out");
    let (code, stdout, stderr) = run(sfz().args(["fuzz", "--json", "--iterations", "40", "--workers", "1", "--seed", "3"]).arg(&spec).arg("--out").arg(&out));
    assert_eq!(code, 0, "{stderr}");
    let summary = json(&stdout);
    assert_eq!(summary["executions"], 40, "every case ran, before and after the crashes");
    assert_eq!(summary["findings_by_oracle"]["crash"], 1, "one cause, one finding: {summary}");
    assert!(summary["worker_restarts"].as_u64().unwrap_or(0) >= 1);
    let line = std::fs::read_to_string(out.join("findings.jsonl")).expect("findings written");
    let finding: serde_json::Value = serde_json::from_str(line.lines().next().expect("one line")).expect("JSON line");
    assert_eq!(finding["oracle"], "crash");
    assert_eq!(finding["signal"], "SIGSEGV");
    assert_eq!(finding["api"], "sfz_test.raise_signal");
    assert_eq!(finding["case"]["args"][0]["Int"], 11, "the exact input is recorded");
    assert_eq!(finding["mode"], "conform");
    assert!(out.join(finding["repro"].as_str().expect("repro path")).is_file());
}

/// One overrun that aborts in glibc's free in one case and segfaults in the other is one
/// finding, keyed by the function both died in (`sfz_test::overrun`, csrc/shim.cpp).
#[test]
fn one_memory_error_dying_by_two_signals_is_one_finding_named_by_its_frame() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = write(dir.path(), "overrun.sfz", "#[aten(\"sfz_test::overrun\")]\napi sfz_test.overrun(how: int) {\n    how in [0, 1];\n    oracles crash;\n}\n");
    let out = dir.path().join("out");
    let (code, stdout, stderr) = run(sfz().args(["fuzz", "--json", "--iterations", "40", "--workers", "1", "--seed", "3", "--minimize", "0"]).arg(&spec).arg("--out").arg(&out));
    assert_eq!(code, 0, "{stderr}");
    let summary = json(&stdout);
    assert!(summary["worker_restarts"].as_u64().unwrap_or(0) >= 2, "{summary}");
    assert_eq!(summary["findings_by_oracle"]["crash"], 1, "{summary}");
    let line = std::fs::read_to_string(out.join("findings.jsonl")).expect("findings written");
    let finding: serde_json::Value = serde_json::from_str(line.lines().next().expect("one line")).expect("JSON line");
    assert_eq!(finding["signature"], "memory error in {anon}::test_overrun", "{finding}");
    assert!(finding["message"].as_str().is_some_and(|m| m.contains("native frames, innermost first:\n  {anon}::test_overrun (sfz-worker+0x")), "{finding}");
}

#[test]
fn an_api_that_keeps_killing_workers_is_quarantined_and_the_others_run_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = write(dir.path(), "crashy.sfz", CRASHY);
    let out = dir.path().join("out");
    let args = ["fuzz", "--json", "--iterations", "600", "--workers", "1", "--in-flight", "4", "--seed", "3", "--minimize", "0", "--quarantine", "5"];
    let (code, stdout, stderr) = run(sfz().args(args).arg(&spec).arg("--out").arg(&out));
    assert_eq!(code, 0, "{stderr}");
    let summary = json(&stdout);
    let apis = summary["apis"].as_array().expect("apis");
    let api = |name: &str| apis.iter().find(|a| a["api"] == name).unwrap_or_else(|| panic!("{name} in {summary}"));
    let crashy = api("sfz_test.raise_signal");
    assert_eq!(crashy["quarantined"], true, "{crashy}");
    // Cases already in flight when it was quarantined still ran.
    let deaths = crashy["worker_deaths"].as_u64().unwrap_or(0);
    assert!((5..=5 + 4).contains(&deaths), "{crashy}");
    assert!(crashy["quarantined_cases"].as_u64().unwrap_or(0) > 100, "{crashy}");
    assert_eq!(api("torch.exp")["quarantined"], false);
    // Every case index either ran or was set aside.
    let ran: u64 = apis.iter().map(|a| a["executions"].as_u64().unwrap_or(0) + a["quarantined_cases"].as_u64().unwrap_or(0)).sum();
    assert_eq!(ran, 600, "{summary}");
    assert_eq!(summary["findings_by_oracle"]["crash"], 1);
}

#[test]
fn a_seed_reproduces_the_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let quickstart = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/quickstart.sfz");
    let summary = |name: &str| {
        let (code, stdout, stderr) =
            run(sfz().args(["fuzz", "--json", "--iterations", "3000", "--seed", "42", "--workers", "2"]).arg(&quickstart).arg("--out").arg(dir.path().join(name)));
        assert_eq!(code, 0, "{stderr}");
        let s = json(&stdout);
        s["apis"].as_array().expect("apis").iter().map(|a| (a["api"].to_string(), a["executions"].as_u64())).collect::<Vec<_>>()
    };
    assert_eq!(summary("a"), summary("b"));
}

#[test]
fn bad_input_gets_a_clear_error_before_any_work() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, _, stderr) = run(sfz().args(["fuzz", "no/such/spec.sfz", "--iterations", "1"]));
    assert_eq!(code, 2);
    assert!(stderr.contains("no such file or directory: no/such/spec.sfz"), "{stderr}");

    let spec = write(dir.path(), "ok.sfz", "api torch.exp(input: Tensor) {\n}\n");
    let blocker = write(dir.path(), "file", "not a folder");
    let (code, _, stderr) = run(sfz().arg("fuzz").arg(&spec).arg("--out").arg(blocker.join("out")));
    assert_eq!(code, 2);
    assert!(stderr.contains("cannot use") && stderr.contains("findings folder"), "{stderr}");

    let (code, _, stderr) = run(sfz().arg("fuzz").arg(&spec).args(["--time", "5x"]));
    assert_eq!(code, 2);
    assert!(stderr.contains("unknown unit `x`"), "{stderr}");

    let (code, _, stderr) = run(sfz().arg("fuzz").arg(&spec).args(["--check-share=-1"]));
    assert_eq!(code, 2);
    assert!(stderr.contains("`-1` is not a share"), "{stderr}");

    let (code, _, stderr) = run(sfz().args(["explain", "E9999"]));
    assert_eq!(code, 2);
    assert!(stderr.contains("no diagnostic code `E9999`"), "{stderr}");
}

#[test]
fn kill_dash_nine_loses_no_finding() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = write(dir.path(), "crashy.sfz", CRASHY);
    let out = dir.path().join("out");
    let mut child = sfz().args(["fuzz", "--json", "--workers", "1"]).arg(&spec).arg("--out").arg(&out).stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("sfz starts");
    let findings = out.join("findings.jsonl");
    let deadline = Instant::now() + Duration::from_secs(120);
    while std::fs::read_to_string(&findings).map_or(true, |t| t.lines().next().is_none()) {
        assert!(Instant::now() < deadline, "no finding within two minutes");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().expect("SIGKILL sfz");
    let _ = child.wait();
    let text = std::fs::read_to_string(&findings).expect("findings survive");
    for line in text.lines() {
        let f: serde_json::Value = serde_json::from_str(line).expect("every line is complete JSON");
        assert!(out.join(f["repro"].as_str().expect("repro")).is_file(), "the reproducer is written before its line");
    }
}

#[test]
fn violate_mode_breaks_one_constraint_per_case_and_libtorch_names_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = write(
        dir.path(),
        "cumsum.sfz",
        "api torch.cumsum(input: Tensor, dim: int) -> Tensor {\n    input.dtype in [float32, float64];\n    dim in -max(input.ndim, 1)..max(input.ndim, 1);\n}\n",
    );
    let out = dir.path().join("out");
    let (code, stdout, stderr) = run(sfz().args(["fuzz", "--json", "--iterations", "400", "--seed", "2", "--mode", "violate"]).arg(&spec).arg("--out").arg(&out));
    assert_eq!(code, 0, "{stderr}");
    let s = json(&stdout);
    assert_eq!(s["mode"], "violate");
    let api = &s["apis"][0];
    assert_eq!(api["violate_executions"], 400, "every case breaks a constraint: {api}");
    // Out-of-range dims and wrong types are refused, and for the stated reason. A dtype outside
    // [float32, float64] is accepted: the spec is stricter than libtorch there.
    assert!(s["violate_matched_rate"].as_f64().unwrap_or(0.0) > 0.5, "{s}");
    assert!(api["accepted_violations"]["input.dtype in [float32, float64]"].as_u64().unwrap_or(0) > 0, "{api}");
    assert!(api["violate_matched"].as_u64() <= api["violate_rejected"].as_u64());
    // Coverage names the constraints' outcomes: every one was broken at some point.
    for c in api["coverage"]["constraints"].as_array().expect("constraints") {
        assert!(c["broken"].as_u64().unwrap_or(0) > 0, "{c}");
    }
}

#[test]
fn inputs_the_spec_allows_and_libtorch_rejects_become_spec_findings() {
    let dir = tempfile::tempdir().expect("tempdir");
    // The spec forgets that `dim` must index a dimension of `input`.
    let spec = write(dir.path(), "cumsum.sfz", "api torch.cumsum(input: Tensor, dim: int) -> Tensor {\n    input.dtype in [float32];\n    dim in -6..6;\n}\n");
    let out = dir.path().join("out");
    // A long timeout: a loaded machine once took 2 s over the first call of a fresh worker, and
    // that slow call is recorded (unconfirmed) as a hang, which is not what this test is about.
    let (code, stdout, stderr) =
        run(sfz().args(["fuzz", "--json", "--iterations", "300", "--seed", "4", "--mutate", "none", "--timeout", "60s"]).arg(&spec).arg("--out").arg(&out));
    assert_eq!(code, 0, "{stderr}");
    let s = json(&stdout);
    assert!(s["spec_findings"].as_u64().unwrap_or(0) >= 1, "{s}");
    assert!(s["conform_valid_rate"].as_f64().unwrap_or(1.0) < 1.0);
    let text = std::fs::read_to_string(out.join("spec-findings.jsonl")).expect("spec findings written");
    let first: serde_json::Value = serde_json::from_str(text.lines().next().expect("a line")).expect("JSON");
    assert_eq!(first["kind"], "constraint missing?");
    assert!(first["message"].as_str().unwrap_or("").contains("Dimension out of range"), "{first}");
    assert!(out.join(first["repro"].as_str().expect("repro")).is_file());
    // A spec finding is not a libtorch bug.
    assert_eq!(std::fs::read_to_string(out.join("findings.jsonl")).unwrap_or_default(), "");
}

#[test]
fn a_solver_timeout_skips_that_api_and_the_run_goes_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Distinct dims need a quadratic number of nonlinear terms: slow to solve.
    let spec = write(
        dir.path(),
        "slow.sfz",
        "api torch.exp(input: Tensor) -> Tensor {\n}\n\napi torch.sum(input: Tensor, dim: int[]? = None) -> Tensor {\n    dim[*] in -max(input.ndim, 1)..max(input.ndim, 1);\n    forall i in 0..len(dim): forall j in 0..len(dim):\n        i == j or (if dim[i] < 0 then dim[i] + max(input.ndim, 1) else dim[i]) != (if dim[j] < 0 then dim[j] + max(input.ndim, 1) else dim[j]);\n}\n",
    );
    let out = dir.path().join("out");
    // z3's resource limit, not the wall clock, so that a loaded machine gives up at the same point.
    let (code, stdout, stderr) =
        run(sfz().args(["fuzz", "--color=never", "--json", "--iterations", "200", "--solver-rlimit", "10000"]).arg(&spec).arg("--out").arg(&out).current_dir(dir.path()));
    assert_eq!(code, 0, "{stderr}");
    let s = json(&stdout);
    assert_eq!(s["executions"], 200);
    assert_eq!(s["skipped"][0]["api"], "torch.sum");
    assert_eq!(s["skipped"][0]["reason"], "solver resource limit (10000)");
    let diags: String = stderr.lines().filter(|l| !l.contains("execs")).collect::<Vec<_>>().join("\n");
    insta::assert_snapshot!(diags.replace(&dir.path().display().to_string(), "<tmp>"));
}

#[test]
fn generation_options_are_checked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = write(dir.path(), "ok.sfz", "api torch.exp(input: Tensor) {\n}\n");
    let (code, _, stderr) = run(sfz().arg("fuzz").arg(&spec).args(["--generator", "naive", "--mode", "violate"]));
    assert_eq!(code, 2);
    assert!(stderr.contains("the naive generator only makes conforming inputs"), "{stderr}");
    let (code, _, stderr) = run(sfz().arg("fuzz").arg(&spec).args(["--mutate", "specials=0.5"]));
    assert_eq!(code, 2);
    assert!(stderr.contains("unknown mutator `specials`"), "{stderr}");
    let (code, _, stderr) = run(sfz().arg("fuzz").arg(&spec).args(["--mode", "mixed:2"]));
    assert_eq!(code, 2);
    assert!(stderr.contains("must be a number within 0 and 1"), "{stderr}");
}

#[test]
fn hunt_finds_the_numerical_bug_and_not_its_fix_and_writes_a_reproducer_that_fires() {
    let dir = tempfile::tempdir().expect("tempdir");
    let programs = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/numerical/softmax.sfz");
    let out = dir.path().join("hunt");
    let (code, stdout, stderr) =
        run(sfz().args(["hunt", "--json", "--seed", "1", "--program", "softmax_log", "--program", "softmax_log_fixed"]).arg(&programs).arg("--out").arg(&out));
    assert_eq!(code, 1, "a hunt that finds a bug exits 1: {stderr}");
    let reports = json(&stdout);
    let reports = reports.as_array().expect("one report per program");
    let report = |name: &str| reports.iter().find(|r| r["program"] == name).unwrap_or_else(|| panic!("{name} in {stdout}"));
    let bug = report("softmax_log");
    assert_eq!((bug["status"].as_str(), bug["oracle"].as_str(), bug["op"].as_str()), (Some("bug"), Some("nan_inf"), Some("torch.log")), "{bug}");
    assert_eq!(report("softmax_log_fixed")["status"], "clean");
    assert!(out.join("softmax_log.gradient.json").is_file());
    assert!(!out.join("softmax_log_fixed.gradient.py").exists(), "no reproducer for a clean program");
    // The reproducer runs under pip torch and names the step the report names.
    let python = sfz::findings::verify::default_python();
    let repro = Command::new(&python).arg(out.join("softmax_log.gradient.py")).output().expect("python runs");
    assert_eq!(repro.status.code(), Some(1), "{}", String::from_utf8_lossy(&repro.stderr));
    let said = format!("{}{}", String::from_utf8_lossy(&repro.stdout), String::from_utf8_lossy(&repro.stderr));
    assert!(said.contains(bug["step"].as_str().expect("a step")), "{said}");
    // Only the fixed program: nothing found, exit 0.
    let (code, _, stderr) = run(sfz().args(["hunt", "--seed", "1", "--program", "softmax_log_fixed"]).arg(&programs).arg("--out").arg(dir.path().join("fixed")));
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn a_case_that_is_only_slow_is_not_confirmed_as_a_hang() {
    let dir = tempfile::tempdir().expect("tempdir");
    // 30 ms of spinning: past a 20 ms timeout, well within the 200 ms a confirmation allows.
    let spec = write(dir.path(), "slow.sfz", "#[aten(\"sfz_test::spin\")]\napi sfz_test.spin(ms: int) {\n    ms in [30];\n    oracles crash, hang, internal_error, oom;\n}\n");
    let out = dir.path().join("out");
    let args = ["fuzz", "--json", "--iterations", "1", "--workers", "1", "--in-flight", "1", "--timeout", "20ms", "--seed", "1"];
    let (code, stdout, stderr) = run(sfz().args(args).arg(&spec).arg("--out").arg(&out));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(json(&stdout)["findings_by_oracle"]["hang"], 1);
    let line = std::fs::read_to_string(out.join("findings.jsonl")).expect("findings written");
    let finding: serde_json::Value = serde_json::from_str(line.lines().last().expect("a line")).expect("JSON line");
    assert_eq!(finding["oracle"], "hang");
    assert_eq!(finding["confirmed"], false, "it finished alone: {finding}");
    let (code, stdout, _) = run(sfz().args(["report", "--json"]).arg(&out));
    assert_eq!(code, 0);
    assert_eq!(json(&stdout)["unique"], 0, "an unconfirmed hang is listed apart, not as a finding");
}

/// A crash that shows one call late (as a heap overflow noticed at a later free) is confirmed on
/// the call in a row that dies, minimized on cases each called alone in a fresh worker (a
/// smaller case that merely died in a worker an earlier candidate had tainted is no reproducer:
/// under 4 elements nothing taints), and its reproducer and `sfz replay` repeat the call.
#[test]
fn a_crash_that_shows_late_is_confirmed_minimized_and_replayed_by_repeating_the_call() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = write(dir.path(), "taint.sfz", "#[aten(\"sfz_test::taint\")]\napi sfz_test.taint(input: Tensor, arm: int) -> Tensor {\n    input.dtype in [float32];\n    input.numel >= 8;\n    arm in [3];\n    oracles crash, hang, internal_error, oom;\n}\n");
    let out = dir.path().join("out");
    let (code, stdout, stderr) = run(sfz().args(["fuzz", "--json", "--iterations", "20", "--workers", "1", "--seed", "1", "--mutate", "none"]).arg(&spec).arg("--out").arg(&out));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(json(&stdout)["findings_by_oracle"]["crash"], 1, "{stdout}");
    let line = std::fs::read_to_string(out.join("findings.jsonl")).expect("findings written");
    let finding = json(line.lines().last().expect("a line"));
    assert_eq!((finding["confirmed"].as_bool(), finding["calls"].as_u64()), (Some(true), Some(2)), "the first call taints, the second dies: {finding}");
    let m = &finding["minimization"];
    let after = m["elements_after"].as_u64().expect("minimized");
    assert!((4..=m["elements_before"].as_u64().unwrap_or(0)).contains(&after), "no case under 4 elements kills a worker alone: {finding}");
    let script = std::fs::read_to_string(out.join(finding["repro"].as_str().expect("repro"))).expect("reproducer");
    assert!(script.contains("for _ in range(64):\n    try:\n        torch.ops.sfz_test.taint"), "{script}");
    let id = finding["id"].as_str().expect("id");
    let (code, stdout, stderr) = run(sfz().args(["replay", "--dir"]).arg(&out).arg(id));
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("reproduces (on call 2 in a row)"), "{stdout}");
}

/// An innocent op that dies of the damage an earlier case did in the same worker is not
/// confirmed alone; the cases its worker ran before are run alone in turn, and the one that
/// kills a fresh worker by itself (a `taint` case) is recorded, confirmed, and named as its
/// culprit.
#[test]
fn an_unconfirmed_death_names_the_earlier_case_that_kills_a_worker_by_itself() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = write(
        dir.path(),
        "culprit.sfz",
        "#[aten(\"sfz_test::taint\")]\napi sfz_test.taint(input: Tensor, arm: int) -> Tensor {\n    input.dtype in [float32];\n    input.numel >= 8;\n    arm in [3];\n    oracles crash, hang, internal_error, oom;\n}\n\n#[aten(\"sfz_test::fragile\")]\napi sfz_test.fragile(input: Tensor) -> Tensor {\n    input.dtype in [float32];\n    oracles crash, hang, internal_error, oom;\n}\n",
    );
    let out = dir.path().join("out");
    let (code, stdout, stderr) = run(sfz().args(["fuzz", "--json", "--iterations", "40", "--workers", "1", "--seed", "1", "--mutate", "none"]).arg(&spec).arg("--out").arg(&out));
    assert_eq!(code, 0, "{stderr}");
    let text = std::fs::read_to_string(out.join("findings.jsonl")).expect("findings written");
    let findings: Vec<serde_json::Value> = text.lines().map(json).collect();
    let victim = findings.iter().find(|f| f["api"] == "sfz_test.fragile").unwrap_or_else(|| panic!("fragile died after a taint case: {text}\n{stdout}"));
    assert_eq!(victim["confirmed"].as_bool(), Some(false), "fragile alone never dies: {victim}");
    let culprit = victim["culprit"].as_str().unwrap_or_else(|| panic!("a culprit named: {victim}"));
    let blamed = findings.iter().find(|f| f["id"] == culprit).unwrap_or_else(|| panic!("the culprit {culprit} is a finding: {text}"));
    assert_eq!((blamed["api"].as_str(), blamed["confirmed"].as_bool(), blamed["calls"].as_u64()), (Some("sfz_test.taint"), Some(true), Some(2)), "{blamed}");
    let (code, stdout, stderr) = run(sfz().args(["report"]).arg(&out));
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains(&format!("traced to an earlier case in the same worker that kills a fresh worker by itself: {culprit} (sfz_test.taint crash) for 1")), "{stdout}");
}

/// A finding whose input, called alone in a fresh worker, also kills it (an assert in one
/// process, a segfault in another, as `linalg.eigvals` on a NaN) is one defect: it names the
/// death's finding, reports list it under that death, and its replay counts either outcome.
#[test]
fn a_finding_whose_input_also_kills_a_fresh_worker_is_listed_under_that_death() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = write(
        dir.path(),
        "wobbly.sfz",
        "#[aten(\"sfz_test::wobbly\")]\napi sfz_test.wobbly(input: Tensor) -> Tensor {\n    input.dtype in [float32];\n    oracles crash, hang, internal_error, oom;\n}\n",
    );
    let out = dir.path().join("out");
    let (code, stdout, stderr) = run(sfz().args(["fuzz", "--json", "--iterations", "20", "--workers", "1", "--seed", "1", "--mutate", "none"]).arg(&spec).arg("--out").arg(&out));
    assert_eq!(code, 0, "{stderr}");
    let text = std::fs::read_to_string(out.join("findings.jsonl")).expect("findings written");
    let findings: Vec<serde_json::Value> = text.lines().map(json).collect();
    let assert = findings.iter().find(|f| f["oracle"] == "internal_error").unwrap_or_else(|| panic!("the first call asserts: {text}\n{stdout}"));
    let death = assert["same_as"].as_str().unwrap_or_else(|| panic!("the assert's input also dies: {assert}"));
    let dead = findings.iter().find(|f| f["id"] == death).unwrap_or_else(|| panic!("{death} is a finding: {text}"));
    assert_eq!((dead["oracle"].as_str(), dead["confirmed"].as_bool(), dead["calls"].as_u64()), (Some("crash"), Some(true), Some(2)), "{dead}");
    let script = std::fs::read_to_string(out.join(assert["repro"].as_str().expect("repro"))).expect("reproducer");
    assert!(script.contains(&format!("also kills the process, in other runs (sfz finding {death})")), "{script}");
    let (code, stdout, stderr) = run(sfz().args(["report", "--json"]).arg(&out));
    assert_eq!(code, 0, "{stderr}");
    let report = json(&stdout);
    assert_eq!(report["unique"], 1, "{stdout}");
    assert_eq!(report["findings"][0]["id"].as_str(), Some(death), "{stdout}");
    assert_eq!(report["same_defect"][0]["finding"], assert["id"], "{stdout}");
    assert_eq!(report["same_defect"][0]["under"].as_str(), Some(death), "{stdout}");
    // Replay counts the other outcome: with the assert's signature changed so that the first
    // call no longer shows it, the death on the second call reproduces the finding.
    let id = assert["id"].as_str().expect("id");
    let edited: Vec<String> =
        text.lines().map(|l| if l.contains(&format!("\"id\":\"{id}\"")) { l.replace("csrc/shim.cpp:", "csrc/elsewhere.cpp:") } else { l.to_string() }).collect();
    std::fs::write(out.join("findings.jsonl"), edited.join("\n") + "\n").expect("rewrite findings");
    let (code, stdout, stderr) = run(sfz().args(["replay", "--dir"]).arg(&out).arg(id));
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains(&format!("reproduces as {death} (on call 2 in a row), the same defect's other outcome")), "{stdout}");
}

/// A hang whose time grows with an integer argument (a loop of 2^40 turns) is the cost of its
/// input, listed apart with the growth that explains it; one that never ends whatever the
/// integer's size (a negative `n`) stays a finding.
#[test]
fn a_hang_that_is_the_cost_of_a_huge_integer_is_explained_not_reported() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = write(
        dir.path(),
        "hangs.sfz",
        "#[aten(\"sfz_test::grind\")]\napi sfz_test.grind(input: Tensor, n: int) -> Tensor {\n    input.dtype in [float32];\n    n in [1099511627776];\n    oracles crash, hang, internal_error, oom;\n}\n\n#[aten(\"sfz_test::stuck\")]\napi sfz_test.stuck(input: Tensor, n: int) -> Tensor {\n    input.dtype in [float32];\n    n in [-1099511627776];\n    oracles crash, hang, internal_error, oom;\n}\n",
    );
    let out = dir.path().join("out");
    // The probes that explain the hang are timed against the same timeout: at 200 ms, a probe
    // of ~50 ms ran past it beside the rest of the suite on a loaded machine.
    let args = ["fuzz", "--json", "--iterations", "8", "--workers", "1", "--in-flight", "1", "--timeout", "1s", "--seed", "1", "--mutate", "none"];
    let (code, stdout, stderr) = run(sfz().args(args).arg(&spec).arg("--out").arg(&out));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(json(&stdout)["findings_by_oracle"]["hang"], 2, "{stdout}");
    let (code, stdout, stderr) = run(sfz().args(["report", "--json"]).arg(&out));
    assert_eq!(code, 0, "{stderr}");
    let report = json(&stdout);
    assert_eq!(report["unique"], 1, "{stdout}");
    assert_eq!(report["findings"][0]["api"], "sfz_test.stuck", "{stdout}");
    let explained = report["explained"].as_array().expect("explained");
    assert_eq!(explained.len(), 1, "{stdout}");
    let why = explained[0]["why"].as_str().expect("why");
    assert!(explained[0]["finding"].as_str().is_some_and(|id| id.starts_with("hang-grind-")), "{stdout}");
    assert!(why.contains("grows with its integer arguments") && why.contains("at 2^40"), "{why}");
}

/// A hang whose confirmation (ten timeouts alone) would run past the campaign's clock is left
/// pending, not marked triaged unconfirmed: it is listed apart until `--resume` confirms it,
/// and then listed.
#[test]
fn a_hang_the_clock_leaves_unconfirmed_stays_pending_until_resume_confirms_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = write(
        dir.path(),
        "stuck.sfz",
        "#[aten(\"sfz_test::stuck\")]\napi sfz_test.stuck(input: Tensor, n: int) -> Tensor {\n    input.dtype in [float32];\n    n in [-1099511627776];\n    oracles crash, hang, internal_error, oom;\n}\n",
    );
    let out = dir.path().join("out");
    let args = ["fuzz", "--json", "--time", "3s", "--workers", "1", "--in-flight", "1", "--timeout", "300ms", "--seed", "1", "--mutate", "none"];
    let (code, stdout, stderr) = run(sfz().args(args).arg(&spec).arg("--out").arg(&out));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(json(&stdout)["findings_by_oracle"]["hang"], 1, "{stdout}");
    assert_eq!(json(&stdout)["triage_pending"], 1, "{stdout}");
    let (code, stdout, stderr) = run(sfz().args(["report", "--json"]).arg(&out));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(json(&stdout)["unique"], 0, "not listed before it is confirmed: {stdout}");
    let (code, stdout, stderr) = run(sfz().args(["fuzz", "--json", "--resume"]).arg(&out));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(json(&stdout)["triage_pending"], 0, "{stdout}");
    let line = std::fs::read_to_string(out.join("findings.jsonl")).expect("findings written");
    let finding: serde_json::Value = serde_json::from_str(line.lines().last().expect("a line")).expect("JSON line");
    assert_eq!(finding["confirmed"], true, "{finding}");
    let (code, stdout, stderr) = run(sfz().args(["report", "--json"]).arg(&out));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(json(&stdout)["unique"], 1, "listed once confirmed: {stdout}");
}

/// A reader that stops early (`sfz explain E0001 | head -1`) closes sfz's stdout: sfz ends as a
/// program killed by SIGPIPE does (status 141), without a panic's message and backtrace.
#[test]
fn a_closed_stdout_ends_sfz_quietly() {
    // The reading end is closed before sfz starts: closed after, sfz may have written first.
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let child = sfz().args(["explain", "E0001"]).stdout(writer).stderr(std::process::Stdio::piped()).spawn().expect("sfz starts");
    let out = child.wait_with_output().expect("sfz ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(141), "{stderr}");
}

/// Operators that write files (`from_file` with `shared = True` creates the file it maps) write
/// them into the workers' scratch folder, never into the directory sfz was started from.
#[test]
fn files_operators_write_land_outside_the_working_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "from_file.sfz", "api torch.from_file(filename: str, shared: bool? = None, size: int? = 0) -> Tensor {\n    shared == true;\n    size == 8;\n}\n");
    let (code, stdout, stderr) = run(sfz().current_dir(dir.path()).args(["fuzz", "from_file.sfz", "--iterations", "50", "-j", "1", "--json", "--out", "out"]));
    assert_eq!(code, 0, "{stderr}");
    assert!(json(&stdout)["apis"][0]["executions"].as_u64() > Some(0), "the operator ran: {stdout}");
    let mut left: Vec<String> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    left.sort();
    assert_eq!(left, ["from_file.sfz", "out"]);
}
