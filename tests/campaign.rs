//! Campaigns larger than one process, end to end with real workers: shards that cover a
//! campaign once, merging their folders, resuming a killed campaign, and a full output disk.
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::process::{run, sfz};

use common::campaign::{keys, CAMPAIGN, FIXED};

fn json(stdout: &str) -> serde_json::Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("summary is JSON ({e}): {stdout}"))
}

fn spec(dir: &Path) -> PathBuf {
    let p = dir.join("campaign.sfz");
    std::fs::write(&p, CAMPAIGN).expect("write spec");
    p
}

#[test]
fn bad_shards_and_resume_of_a_folder_that_is_no_campaign_are_coded_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = spec(dir.path());
    let mut shown = String::new();
    for bad in ["3/2", "0/0", "a/b"] {
        let (code, _, stderr) = run(sfz().args(["fuzz", "--color=never", "--shard", bad]).arg(&spec));
        assert_eq!(code, 2, "{stderr}");
        shown.push_str(&stderr);
        let (code, _, stderr) = run(sfz().args(["infer", "--color=never", "--dry-run", "--shard", bad]).arg(&spec));
        assert_eq!(code, 2, "{stderr}");
        assert!(stderr.contains("error[E0103]"), "{stderr}");
    }
    let (code, _, stderr) = run(sfz().args(["fuzz", "--color=never", "--resume"]).arg(dir.path()));
    assert_eq!(code, 2, "{stderr}");
    shown.push_str(&stderr.replace(&dir.path().display().to_string(), "<tmp>"));
    insta::assert_snapshot!(shown);
}

#[test]
fn bad_memory_limits_are_coded_errors_and_none_or_zero_means_no_limit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = spec(dir.path());
    let mut shown = String::new();
    for bad in ["12", "lots", "-1"] {
        let (code, _, stderr) = run(sfz().args(["fuzz", "--color=never", &format!("--memory-mb={bad}")]).arg(&spec));
        assert_eq!(code, 2, "{stderr}");
        shown.push_str(&stderr);
    }
    insta::assert_snapshot!(shown);
    for none in ["none", "0"] {
        let out = dir.path().join(format!("out-{none}"));
        let (code, _, stderr) = run(sfz().args(FIXED).args(["--iterations", "50", "--memory-mb", none]).arg(&spec).arg("--out").arg(&out));
        assert_eq!(code, 0, "{stderr}");
    }
}

#[test]
fn shards_cover_the_campaign_once_and_merge_to_the_keys_of_one_process() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = spec(dir.path());
    let mut apis = Vec::new();
    for k in 1..=2 {
        let out = dir.path().join(format!("shard-{k}"));
        let (code, stdout, stderr) = run(sfz().args(FIXED).args(["--iterations", "600", "--shard", &format!("{k}/2")]).arg(&spec).arg("--out").arg(&out));
        assert_eq!(code, 0, "{stderr}");
        let s = json(&stdout);
        assert_eq!(s["shard"], format!("{k}/2"));
        apis.extend(s["apis"].as_array().expect("apis").iter().map(|a| a["api"].as_str().unwrap_or("").to_string()));
        // The same shard again: the same cases (a shard is reproducible).
        let (_, again, _) = run(sfz().args(FIXED).args(["--iterations", "600", "--shard", &format!("{k}/2")]).arg(&spec).arg("--out").arg(dir.path().join(format!("again-{k}"))));
        let per_api = |s: &serde_json::Value| s["apis"].as_array().expect("apis").iter().map(|a| (a["api"].to_string(), a["executions"].as_u64())).collect::<Vec<_>>();
        assert_eq!(per_api(&s), per_api(&json(&again)));
    }
    apis.sort();
    assert_eq!(apis, ["sfz_test.buggy", "sfz_test.raise_signal", "torch.exp"], "every API in exactly one shard");

    let merged = dir.path().join("merged");
    let (code, stdout, stderr) = run(sfz().arg("report").arg(dir.path().join("shard-1")).arg(dir.path().join("shard-2")).arg("--out").arg(&merged));
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("merged 2 folders") && stderr.contains("2 runs with 1200 executions"), "{stderr}");
    assert!(!stderr.contains("W0103"), "one campaign's shards agree: {stderr}");
    assert!(stdout.contains("unique finding"), "{stdout}");
    // Each API's coverage from the shard that ran it.
    let coverage: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(merged.join("coverage.json")).expect("coverage.json")).expect("JSON");
    let covered: Vec<&String> = coverage.as_object().expect("an object per API").keys().collect();
    assert_eq!(covered, ["sfz_test.buggy", "sfz_test.raise_signal", "torch.exp"], "{coverage}");
    assert!(coverage["torch.exp"]["cases"].as_u64() > Some(0) && coverage["torch.exp"]["dtypes"]["input"].as_array().is_some_and(|d| !d.is_empty()), "{coverage}");

    let whole = dir.path().join("whole");
    let (code, _, stderr) = run(sfz().args(FIXED).args(["--iterations", "1200"]).arg(&spec).arg("--out").arg(&whole));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(keys(&merged), keys(&whole));
    for line in std::fs::read_to_string(merged.join("findings.jsonl")).expect("merged").lines() {
        let f: serde_json::Value = serde_json::from_str(line).expect("JSON");
        assert!(merged.join(f["repro"].as_str().expect("repro")).is_file(), "reproducer copied: {line}");
        assert!(merged.join(f["pinned"].as_str().expect("pinned")).is_file(), "pinned case copied: {line}");
    }
}

#[test]
fn merging_folders_of_different_versions_warns_and_merges_where_keys_agree() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = spec(dir.path());
    let a = dir.path().join("a");
    let (code, _, stderr) = run(sfz().args(FIXED).args(["--iterations", "200", "--api", "raise_signal"]).arg(&spec).arg("--out").arg(&a));
    assert_eq!(code, 0, "{stderr}");
    // The same findings as an older sfz would have written them, from other specs.
    let b = dir.path().join("b");
    std::fs::create_dir_all(b.join("repro")).expect("mkdir");
    for entry in std::fs::read_dir(a.join("repro")).expect("repro") {
        let p = entry.expect("entry").path();
        std::fs::copy(&p, b.join("repro").join(p.file_name().expect("name"))).expect("copy");
    }
    let text = std::fs::read_to_string(a.join("findings.jsonl")).expect("findings");
    std::fs::write(b.join("findings.jsonl"), text.replace(&format!("\"sfz_version\":\"{}\"", env!("CARGO_PKG_VERSION")), "\"sfz_version\":\"0.0.9\"")).expect("write");
    let manifest = std::fs::read_to_string(a.join("campaign.json")).expect("manifest");
    let mut m: serde_json::Value = serde_json::from_str(&manifest).expect("JSON");
    m["specs"] = "0000000000000000".into();
    m["sfz_version"] = "0.0.9".into();
    std::fs::write(b.join("campaign.json"), m.to_string()).expect("write");

    let (code, _, stderr) = run(sfz().args(["report", "--color=never"]).arg(&a).arg(&b).arg("--out").arg(dir.path().join("m")));
    assert_eq!(code, 0, "{stderr}");
    let digest = m["specs"].as_str().unwrap_or_default().to_string();
    let ours: serde_json::Value = serde_json::from_str(&manifest).expect("JSON");
    let warnings: String = stderr.lines().filter(|l| !l.starts_with("merged ")).collect::<Vec<_>>().join("\n");
    insta::assert_snapshot!(warnings
        .replace(&dir.path().display().to_string(), "<tmp>")
        .replace(ours["specs"].as_str().unwrap_or("?"), "<digest>")
        .replace(&digest, "<other digest>")
        .replace(env!("CARGO_PKG_VERSION"), "<version>"));
    assert_eq!(keys(&dir.path().join("m")), keys(&a), "equal keys are one finding");

    let (code, _, stderr) = run(sfz().arg("report").arg(&a).arg(&b));
    assert_eq!(code, 2, "several folders need --out: {stderr}");
}

#[test]
fn a_campaign_killed_by_sigkill_resumes_where_it_stopped_and_loses_no_finding() {
    killed_and_resumed(&[]);
}

#[test]
fn a_shard_killed_by_sigkill_resumes_its_own_cases_and_loses_no_finding() {
    killed_and_resumed(&["--shard", "2/2"]);
}

/// Kills a campaign of 3000 cases (`extra` arguments added) with SIGKILL past case 1000,
/// resumes it, and compares it with the same campaign never killed.
fn killed_and_resumed(extra: &[&str]) {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = spec(dir.path());
    let out = dir.path().join("out");
    let mut child =
        sfz().args(FIXED).args(["--iterations", "3000"]).args(extra).arg(&spec).arg("--out").arg(&out).stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("sfz starts");
    let progress = out.join("progress.json");
    let deadline = Instant::now() + Duration::from_secs(180);
    let next_case = |p: &Path| std::fs::read_to_string(p).ok().and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok()).and_then(|v| v["next_case"].as_u64()).unwrap_or(0);
    while next_case(&progress) < 1000 {
        assert!(Instant::now() < deadline, "no progress within three minutes");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().expect("SIGKILL sfz");
    let _ = child.wait();
    let before = keys(&out);
    let stopped_at = next_case(&progress);

    let (code, stdout, stderr) = run(sfz().args(["fuzz", "--json", "--resume"]).arg(&out));
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains(&format!("resuming at case {stopped_at}")), "{stderr}");
    let s = json(&stdout);
    assert_eq!(s["executions"].as_u64(), Some(3000 - stopped_at), "the resumed run judged the cases left: {s}");
    let after = keys(&out);
    assert!(after.is_superset(&before), "nothing lost");
    let lines = std::fs::read_to_string(out.join("findings.jsonl")).expect("findings").lines().count();
    assert_eq!(lines, after.len(), "nothing found before the kill is reported again");

    // The same campaign, never killed, finds the same keys.
    let whole = dir.path().join("whole");
    let (code, _, stderr) = run(sfz().args(FIXED).args(["--iterations", "3000"]).args(extra).arg(&spec).arg("--out").arg(&whole));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(after, keys(&whole));

    // The killed run wrote no summary; merging counts its cases from the progress file.
    let (code, _, stderr) = run(sfz().arg("report").arg(&out).arg("--out").arg(dir.path().join("merged")));
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains(&format!("1 runs with 3000 executions ({stopped_at} of them by runs killed before their summary")), "{stderr}");

    // A finished campaign has nothing left.
    let (code, _, stderr) = run(sfz().args(["fuzz", "--resume"]).arg(&out));
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("nothing to resume"), "{stderr}");
}

/// A tmpfs of `size` mounted at `dir` for the life of the value (the test runs as root, as CI does).
struct Mount(PathBuf);

impl Mount {
    fn tmpfs(dir: &Path, size: &str) -> Mount {
        std::fs::create_dir_all(dir).expect("mount point");
        let status = Command::new("mount").args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"]).arg(dir).status().expect("mount runs");
        assert!(status.success(), "mounting a small tmpfs needs root (CI runs the suite as root)");
        Mount(dir.to_path_buf())
    }

    fn resize(&self, size: &str) {
        let status = Command::new("mount").args(["-o", &format!("remount,size={size}")]).arg(&self.0).status().expect("mount runs");
        assert!(status.success());
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_output_disk_stops_the_campaign_with_e0104_and_resume_goes_on_once_there_is_space() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = spec(dir.path());
    let disk = Mount::tmpfs(&dir.path().join("disk"), "40k");
    let out = dir.path().join("disk/out");
    let (code, stdout, stderr) = run(sfz().args(FIXED).args(["--iterations", "1200"]).arg(&spec).arg("--out").arg(&out));
    assert_eq!(code, 2, "a full disk is not a success: {stderr}");
    let s = json(&stdout);
    let unwritten = s["unwritten"].as_u64().unwrap_or(0);
    assert!(unwritten >= 1, "{s}");
    assert!(s["executions"].as_u64().unwrap_or(0) < 1200, "the campaign stopped: {s}");
    let first = stderr.lines().find(|l| l.contains("error[E0104]")).unwrap_or_else(|| panic!("E0104: {stderr}"));
    assert!(first.contains(&format!("{unwritten} finding")), "{first}");
    let error: String = stderr.lines().skip_while(|l| !l.contains("error[E0104]")).collect::<Vec<_>>().join("\n");
    let error = error.replace(&dir.path().display().to_string(), "<tmp>");
    let error: String =
        error.lines().map(|l| if l.contains("the first:") { " = note: the first: <finding>: No space left on device (os error 28)" } else { l }).collect::<Vec<_>>().join("\n");
    let error = regex_lite_digits(&error);
    insta::assert_snapshot!(error);
    // Everything written is whole: every line parses, every reproducer is there.
    let written = keys(&out);
    for line in std::fs::read_to_string(out.join("findings.jsonl")).expect("findings").lines() {
        let f: serde_json::Value = serde_json::from_str(line).expect("whole line");
        assert!(out.join(f["repro"].as_str().expect("repro")).is_file());
    }

    disk.resize("8m");
    let (code, _, stderr) = run(sfz().args(["fuzz", "--json", "--resume"]).arg(&out));
    assert_eq!(code, 0, "{stderr}");
    let whole = dir.path().join("whole");
    let (code, _, stderr) = run(sfz().args(FIXED).args(["--iterations", "1200"]).arg(&spec).arg("--out").arg(&whole));
    assert_eq!(code, 0, "{stderr}");
    let resumed = keys(&out);
    assert!(resumed.is_superset(&written));
    assert_eq!(resumed, keys(&whole), "the findings not written are found again");
}

/// Numbers in a message replaced by N (counts that depend on the order cases finish in);
/// digits inside a word (`E0104`) stay.
fn regex_lite_digits(text: &str) -> String {
    let mut out = String::new();
    let (mut in_word, mut in_number) = (false, false);
    for c in text.chars() {
        if c.is_ascii_digit() && !in_word {
            if !in_number {
                out.push('N');
            }
            in_number = true;
            continue;
        }
        in_word = c.is_alphanumeric() && (in_word || c.is_alphabetic());
        in_number = false;
        out.push(c);
    }
    out
}

#[test]
fn an_output_folder_that_turns_read_only_stops_the_campaign_with_e0104_and_resume_goes_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = spec(dir.path());
    let out = dir.path().join("out");
    let repro = out.join("repro");
    std::fs::create_dir_all(&repro).expect("mkdir");
    // The folder opens fine (sfz proves it writable at the start); its reproducers cannot be
    // written: a read-only bind mount over `repro/`, which even root cannot write.
    let bind = Command::new("mount").arg("--bind").arg(&repro).arg(&repro).status().expect("mount runs");
    assert!(bind.success(), "a bind mount needs root (CI runs the suite as root)");
    let ro = Mount(repro.clone());
    assert!(Command::new("mount").args(["-o", "remount,bind,ro"]).arg(&repro).status().expect("mount runs").success());
    let (code, stdout, stderr) = run(sfz().args(FIXED).args(["--iterations", "1200"]).arg(&spec).arg("--out").arg(&out));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("error[E0104]") && stderr.contains("Read-only file system"), "{stderr}");
    assert!(json(&stdout)["unwritten"].as_u64().unwrap_or(0) >= 1);
    assert_eq!(std::fs::read_to_string(out.join("findings.jsonl")).expect("findings").lines().count(), 0, "no line without its reproducer");
    drop(ro);
    let (code, _, stderr) = run(sfz().args(["fuzz", "--json", "--resume"]).arg(&out));
    assert_eq!(code, 0, "{stderr}");
    let whole = dir.path().join("whole");
    let (code, _, stderr) = run(sfz().args(FIXED).args(["--iterations", "1200"]).arg(&spec).arg("--out").arg(&whole));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(keys(&out), keys(&whole));
}

#[test]
fn infer_shards_take_whole_spec_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let a = dir.path().join("a.sfz");
    let b = dir.path().join("b.sfz");
    std::fs::write(&a, "api torch.exp(input: Tensor) {\n    input.dtype in [float32];\n}\n\napi torch.log(input: Tensor) {\n    input.dtype in [float32];\n}\n").expect("write");
    std::fs::write(&b, "api torch.relu(input: Tensor) {\n    input.dtype in [float32];\n}\n").expect("write");
    let mut printed = Vec::new();
    for k in 1..=2 {
        let (code, stdout, stderr) = run(sfz().args(["infer", "--dry-run", "--no-enumerate", "--shard", &format!("{k}/2")]).arg(&a).arg(&b));
        assert_eq!(code, 0, "{stderr}");
        printed.push(stdout);
    }
    // The file with two APIs is one shard's, the other the other's.
    assert!(printed[0].contains("torch.exp") && printed[0].contains("torch.log") && !printed[0].contains("torch.relu"), "{}", printed[0]);
    assert!(printed[1].contains("torch.relu") && !printed[1].contains("torch.exp"), "{}", printed[1]);
    let (code, _, stderr) = run(sfz().args(["infer", "--dry-run", "--no-enumerate", "--shard", "3/3"]).arg(&a).arg(&b));
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("shard 3/3 has nothing to infer"), "{stderr}");
}

#[test]
fn sigterm_to_the_whole_job_stops_the_campaign_without_a_finding_and_leaves_it_resumable() {
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = spec(dir.path());
    let out = dir.path().join("out");
    // A scheduler signals every process of the job: sfz and its workers alike.
    let child = sfz()
        .args(FIXED)
        .args(["--iterations", "100000000"])
        .arg(&spec)
        .arg("--out")
        .arg(&out)
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sfz starts");
    let deadline = Instant::now() + Duration::from_secs(180);
    while std::fs::read_to_string(out.join("progress.json")).is_err() {
        assert!(Instant::now() < deadline, "no progress within three minutes");
        std::thread::sleep(Duration::from_millis(50));
    }
    let group = format!("-{}", child.id());
    assert!(Command::new("kill").args(["-TERM", "--", &group]).status().expect("kill runs").success());
    let output = child.wait_with_output().expect("sfz ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(143), "the exit status says SIGTERM stopped it: {stderr}");
    let s = json(&String::from_utf8_lossy(&output.stdout));
    assert!(s["executions"].as_u64().unwrap_or(0) < 100_000_000);
    let progress: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("progress.json")).expect("progress")).expect("JSON");
    assert_eq!(progress["finished"], false);
    assert_eq!(progress["next_case"], s["next_case"]);
    assert!(keys(&out).iter().all(|(_, _, sig)| !sig.contains("SIGTERM")), "the stop signal is no finding: {:?}", keys(&out));
}

#[test]
fn shards_balanced_by_an_earlier_campaigns_measured_costs_still_cover_every_api_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = spec(dir.path());
    let earlier = dir.path().join("earlier");
    let (code, _, stderr) = run(sfz().args(FIXED).args(["--iterations", "300"]).arg(&spec).arg("--out").arg(&earlier));
    assert_eq!(code, 0, "{stderr}");
    let line = std::fs::read_to_string(earlier.join("summaries.jsonl")).expect("the run's summary is kept");
    let summary: serde_json::Value = serde_json::from_str(line.lines().next().expect("a line")).expect("JSON");
    assert!(summary["apis"].as_array().expect("apis").iter().all(|a| a["micros"].as_u64().unwrap_or(0) > 0), "each API's time is measured: {summary}");
    let mut apis = Vec::new();
    for k in 1..=2 {
        let (code, stdout, stderr) = run(sfz()
            .args(FIXED)
            .args(["--iterations", "100", "--shard", &format!("{k}/2"), "--costs"])
            .arg(&earlier)
            .arg(&spec)
            .arg("--out")
            .arg(dir.path().join(format!("s{k}"))));
        assert_eq!(code, 0, "{stderr}");
        let took: Vec<String> = json(&stdout)["apis"].as_array().expect("apis").iter().map(|a| a["api"].as_str().unwrap_or("").to_string()).collect();
        // The manifest keeps what the shard took: a resumed shard takes it again, costs or not.
        let manifest: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join(format!("s{k}/campaign.json"))).expect("manifest")).expect("JSON");
        assert_eq!(manifest["apis"], serde_json::json!(took));
        apis.extend(took);
    }
    apis.sort();
    assert_eq!(apis, ["sfz_test.buggy", "sfz_test.raise_signal", "torch.exp"]);
    let (code, _, stderr) = run(sfz().args(["fuzz", "--shard", "1/2", "--costs"]).arg(dir.path()).arg(&spec));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("cannot read the costs"), "{stderr}");
}

#[test]
fn bad_times_are_coded_errors_and_a_time_too_short_to_solve_anything_says_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = spec(dir.path());
    let mut shown = String::new();
    for bad in ["0", "-3", "soon"] {
        let (code, _, stderr) = run(sfz().args(["fuzz", "--color=never", &format!("--time={bad}")]).arg(&spec).arg("--out").arg(dir.path().join("out")));
        assert_eq!(code, 2, "{stderr}");
        shown.push_str(&stderr);
    }
    // Checking alone takes longer than a millisecond: no time is left to solve in.
    let (code, _, stderr) = run(sfz().args(["fuzz", "--color=never", "--time=1ms"]).arg(&spec).arg("--out").arg(dir.path().join("out")));
    assert_eq!(code, 1, "{stderr}");
    shown.push_str(&stderr);
    insta::assert_snapshot!(shown);
}

/// Lines of a findings folder whose triage is pending.
fn pending(out: &Path) -> usize {
    std::fs::read_to_string(out.join("findings.jsonl")).unwrap_or_default().lines().filter(|l| l.contains(r#""triage":"pending""#)).count()
}

#[test]
fn a_timed_campaign_ends_on_time_and_resume_triages_what_it_left_pending() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = spec(dir.path());
    let out = dir.path().join("out");
    let started = Instant::now();
    let (code, stdout, stderr) = run(sfz().args(["fuzz", "--json", "--color=never", "--workers", "1", "--seed", "7", "--time", "3s"]).arg(&spec).arg("--out").arg(&out));
    let wall = started.elapsed();
    assert_eq!(code, 0, "{stderr}");
    // Three seconds asked; the bound leaves room for a loaded machine, not for a triage tail.
    assert!(wall < Duration::from_secs(30), "a --time 3s campaign took {wall:?}");
    let s = json(&stdout);
    assert!(s["findings"].as_u64().unwrap_or(0) >= 1, "{s}");
    assert!(s["first_case_seconds"].as_f64().is_some_and(|t| t < 3.0), "{s}");
    assert!(s["wall_seconds"].as_f64().is_some_and(|t| t > 0.0), "{s}");
    let left = pending(&out);
    assert_eq!(s["triage_pending"].as_u64(), Some(left as u64), "{s}");
    let before = keys(&out);
    let (code, stdout, stderr) = run(sfz().args(["fuzz", "--json", "--resume"]).arg(&out));
    assert_eq!(code, 0, "{stderr}");
    if left > 0 {
        // Its time is spent: the resumed run runs no case and triages the pending findings.
        assert!(stderr.contains("triaging the findings it left pending"), "{stderr}");
        let s = json(&stdout);
        assert_eq!(s["executions"].as_u64(), Some(0), "{s}");
        assert_eq!(s["triage_pending"].as_u64(), Some(0), "{s}");
        assert_eq!(pending(&out), 0);
    } else {
        assert!(stderr.contains("nothing to resume"), "{stderr}");
    }
    let after = keys(&out);
    assert!(after.is_superset(&before), "nothing lost");
    let lines = std::fs::read_to_string(out.join("findings.jsonl")).expect("findings").lines().count();
    assert_eq!(lines, after.len(), "nothing reported twice");
}

#[test]
fn sigterm_during_triage_ends_within_its_grace_and_resume_finishes_the_rest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = spec(dir.path());
    let out = dir.path().join("out");
    let mut child = sfz()
        .args(["fuzz", "--json", "--color=never", "--workers", "1", "--seed", "7", "--iterations", "100000000"])
        .arg(&spec)
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sfz starts");
    let deadline = Instant::now() + Duration::from_secs(180);
    // Signalled once there are findings, most still in their triage.
    let found = |out: &Path| std::fs::read_to_string(out.join("findings.jsonl")).unwrap_or_default().lines().count();
    while found(&out) < 2 {
        assert!(Instant::now() < deadline, "no findings within three minutes");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(Command::new("kill").args(["-TERM", &child.id().to_string()]).status().expect("kill runs").success());
    let signalled = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(signalled.elapsed() < Duration::from_secs(25), "still running 25 s after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    let output = child.wait_with_output().expect("sfz ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(status.code(), Some(143), "{stderr}");
    let s = json(&String::from_utf8_lossy(&output.stdout));
    assert_eq!(s["stopped_by"], "SIGTERM", "{s}");
    let progress: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("progress.json")).expect("progress")).expect("JSON");
    assert_eq!(progress["finished"], false);
    assert_eq!(progress["next_case"], s["next_case"]);
    let before = keys(&out);
    assert_eq!(pending(&out) as u64, s["triage_pending"].as_u64().unwrap_or(u64::MAX), "{s}");

    // Ten seconds more: the pending findings go first, then more cases.
    let (code, stdout, stderr) = run(sfz().args(["fuzz", "--json", "--resume"]).arg(&out).args(["--time", "10s"]));
    assert_eq!(code, 0, "{stderr}");
    let s = json(&stdout);
    assert!(stderr.contains(&format!("resuming at case {}", progress["next_case"])), "{stderr}");
    let after = keys(&out);
    assert!(after.is_superset(&before), "nothing lost");
    let lines = std::fs::read_to_string(out.join("findings.jsonl")).expect("findings").lines().count();
    assert_eq!(lines, after.len(), "nothing reported twice");
    assert_eq!(pending(&out) as u64, s["triage_pending"].as_u64().unwrap_or(u64::MAX), "{s}");
}
