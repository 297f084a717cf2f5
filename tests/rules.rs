//! `sfz init`, `sfz suggest` and `sfz infer` end to end: the real binary, real workers and
//! libtorch, and a local OpenAI-compatible server on loopback that serves recorded answers
//! (tests/fixtures/llm/), malformed ones included.
mod common;
use common::process::run;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn sfz() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sfz"));
    // No endpoint from the environment or a config file of the machine running the tests.
    c.env_remove("SFZ_LLM_ENDPOINT").env_remove("SFZ_LLM_MODEL").env_remove("SFZ_LLM_API_KEY").env("SFZ_CONFIG_DIR", "/nonexistent");
    c
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/llm").join(name)).expect("fixture")
}

/// What the fake server answers to one request.
#[derive(Clone)]
enum Reply {
    Answer(String),
    Status(u16),
    /// Say nothing for this long.
    Stall(Duration),
}

/// A chat-completions server on loopback replying from a script (the last reply repeats).
/// Returns its base URL and the request bodies it received.
fn serve(replies: Vec<Reply>) -> (String, Arc<Mutex<Vec<serde_json::Value>>>) {
    let server = tiny_http::Server::http("127.0.0.1:0").expect("bind loopback");
    let port = server.server_addr().to_ip().expect("ip").port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for (i, mut req) in server.incoming_requests().enumerate() {
            let mut body = String::new();
            let _ = req.as_reader().read_to_string(&mut body);
            log.lock().unwrap().push(serde_json::from_str(&body).unwrap_or(serde_json::Value::Null));
            let reply = replies.get(i).or(replies.last()).cloned().unwrap_or(Reply::Status(500));
            let _ = match reply {
                Reply::Answer(text) => {
                    let json = serde_json::json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]});
                    req.respond(tiny_http::Response::from_string(json.to_string()))
                }
                Reply::Status(code) => req.respond(tiny_http::Response::from_string("{\"error\": \"slow down\"}").with_status_code(code)),
                Reply::Stall(d) => {
                    std::thread::sleep(d);
                    req.respond(tiny_http::Response::from_string("{}"))
                }
            };
        }
    });
    (format!("http://127.0.0.1:{port}/v1"), seen)
}

fn relu_file(dir: &Path) -> PathBuf {
    let p = dir.join("relu.sfz");
    std::fs::write(&p, "/// aten::relu(Tensor self) -> Tensor\napi torch.relu(input: Tensor) -> Tensor {}\n").expect("write");
    p
}

#[test]
fn init_writes_canonical_skeletons_and_names_the_closest_operators() {
    let (code, stdout, stderr) = run(sfz().args(["init", "--color=never", "torch.gather", "aten::add.Scalar", "torch.linalg.inv"]));
    assert_eq!(code, 0, "{stderr}");
    insta::assert_snapshot!("init_skeletons", stdout);
    let (code, _, stderr) = run(sfz().args(["init", "--color=never", "torch.sofmax"]));
    assert_eq!(code, 1);
    insta::assert_snapshot!("init_unknown_operator", stderr);
}

#[test]
fn suggest_reasks_with_diagnostics_and_keeps_what_checks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = relu_file(dir.path());
    let (url, seen) = serve(vec![Reply::Answer(fixture("prose.txt")), Reply::Answer(fixture("mixed.txt")), Reply::Answer(fixture("good.txt"))]);
    let (code, _, stderr) = run(sfz().args(["suggest", "--color=never", "--endpoint", &url, "--model", "recorded"]).arg(&file));
    assert_eq!(code, 0, "{stderr}");
    let text = std::fs::read_to_string(&file).expect("read back");
    assert!(text.contains("#[status(candidate), source(llm)]\nrule not_bool for torch.relu"), "{text}");
    assert!(text.contains("rule matrix_only for torch.relu"), "{text}");
    assert!(!text.contains("uses_unknown_name") && !text.contains("x.ndim"), "{text}");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 3, "prose, then a mixed answer, then a clean one");
    let first = seen[0]["messages"][1]["content"].as_str().unwrap_or("");
    assert!(first.contains("api torch.relu(input: Tensor)") && first.contains("aten::relu(Tensor self)"), "signature and schema: {first}");
    assert!(first.contains("Applies the rectified linear unit") || first.contains("relu("), "torch's docs in the prompt: {first}");
    let reask = seen[2]["messages"].as_array().and_then(|m| m.last()).and_then(|m| m["content"].as_str()).unwrap_or("");
    assert!(reask.contains("E0002") && reask.contains("`x`"), "the diagnostics go back to the model: {reask}");
    assert_eq!(seen[0]["model"], "recorded");
}

/// Where enumeration cannot name a relation, the model sees what libtorch said about the
/// conforming inputs it rejected: each error once, with how often and one input.
#[test]
fn suggest_shows_the_model_libtorchs_errors_on_rejected_inputs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("cat.sfz");
    std::fs::write(&file, "/// aten::cat(Tensor[] tensors, int dim=0) -> Tensor\napi torch.cat(tensors: Tensor[], dim: int = 0) -> Tensor {}\n").expect("write");
    let (url, seen) = serve(vec![Reply::Answer(fixture("good.txt"))]);
    let (code, _, stderr) = run(sfz().args(["suggest", "--color=never", "--endpoint", &url]).arg(&file));
    assert_eq!(code, 0, "{stderr}");
    let seen = seen.lock().unwrap();
    let first = seen[0]["messages"][1]["content"].as_str().unwrap_or("");
    assert!(first.contains("libtorch rejected inputs that satisfy the constraints above"), "{first}");
    assert!(first.contains("Dimension out of range") && first.contains("e.g. for tensors = ["), "cat's errors with an input: {first}");
    // Without probe cases the prompt has no errors.
    let (url, seen) = serve(vec![Reply::Answer(fixture("good.txt"))]);
    let (code, _, stderr) = run(sfz().args(["suggest", "--color=never", "--probe-cases", "0", "--endpoint", &url]).arg(&file));
    assert_eq!(code, 0, "{stderr}");
    let first = seen.lock().unwrap()[0]["messages"][1]["content"].as_str().unwrap_or("").to_string();
    assert!(!first.contains("libtorch rejected"), "{first}");
}

#[test]
fn endpoint_failures_fall_back_to_enumerated_candidates() {
    for (replies, expect) in [
        (vec![Reply::Status(429)], "rate limited"),
        (vec![Reply::Status(500)], "HTTP 500"),
        (vec![Reply::Answer(fixture("prose.txt"))], "no answer checked after 2 round(s)"),
        (vec![Reply::Stall(Duration::from_secs(3))], "no answer within"),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = relu_file(dir.path());
        let (url, _) = serve(replies);
        let (code, _, stderr) = run(sfz().args(["suggest", "--color=never", "--rounds", "2", "--timeout", "1s", "--endpoint", &url]).arg(&file));
        assert_eq!(code, 0, "{stderr}");
        assert!(stderr.contains("warning[W0007]") && stderr.contains(expect), "{expect}: {stderr}");
        let text = std::fs::read_to_string(&file).expect("read back");
        assert!(text.contains("#[status(candidate), source(inferred)]\nrule input_numeric for torch.relu"), "{text}");
    }
    // Nothing listening at all.
    let dir = tempfile::tempdir().expect("tempdir");
    let file = relu_file(dir.path());
    let (code, _, stderr) = run(sfz().args(["suggest", "--color=never", "--endpoint", "http://127.0.0.1:9/v1"]).arg(&file));
    assert_eq!(code, 0, "{stderr}");
    insta::assert_snapshot!("suggest_unreachable", stderr.lines().filter(|l| !l.contains("candidates from")).collect::<Vec<_>>().join("\n"));
}

#[test]
fn infer_validates_and_rejects_llm_candidates_against_libtorch_and_is_incremental() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = relu_file(dir.path());
    let (url, _) = serve(vec![Reply::Answer(fixture("good.txt"))]);
    let (code, _, stderr) = run(sfz().args(["suggest", "--color=never", "--endpoint", &url]).arg(&file));
    assert_eq!(code, 0, "{stderr}");
    let (code, stdout, stderr) = run(sfz().args(["infer", "--color=never", "--no-enumerate", "--budget", "10s", "--workers", "1", "--json"]).arg(&file));
    assert_eq!(code, 0, "{stderr}");
    let text = std::fs::read_to_string(&file).expect("read back");
    // Bool inputs are rejected by relu: a true rule. Ranks other than 2 run fine: a false one.
    let flat: String = text.split_whitespace().collect();
    let at = |s: &str| flat.find(s).unwrap_or_else(|| panic!("no `{s}` in {text}"));
    assert!(at("#[status(validated),source(llm),confidence(") < at("rulenot_boolfortorch.relu{"), "{text}");
    assert!(at("evidence(pass=") < at("rulenot_boolfortorch.relu{"), "{text}");
    assert!(at("rulenot_bool") < at("#[status(rejected),source(llm),evidence(violating_ok="), "{text}");
    assert!(at("#[status(rejected)") < at("rulematrix_onlyfortorch.relu{"), "{text}");
    let results: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(results[0]["validated"][0], serde_json::json!(["llm", 1]), "{results}");
    assert_eq!(results[0]["rejected"][0], serde_json::json!(["llm", 1]), "{results}");
    // The result checks and is formatted.
    let (code, _, stderr) = run(sfz().args(["check", "--color=never"]).arg(&file));
    assert_eq!(code, 0, "{stderr}");
    let (code, _, stderr) = run(sfz().args(["fmt", "--check", "--color=never"]).arg(&file));
    assert_eq!(code, 0, "{stderr}");
    // A second run has nothing left to validate and leaves the file alone.
    let (code, stdout, stderr) = run(sfz().args(["infer", "--color=never", "--no-enumerate", "--budget", "10s", "--workers", "1", "--json"]).arg(&file));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(std::fs::read_to_string(&file).expect("read back"), text);
    let again: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(again[0]["proposed"], serde_json::json!([]), "{again}");
}

#[test]
fn infer_from_operator_names_enumerates_offline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("ops.sfz");
    let (code, _, stderr) = run(sfz().args(["infer", "--color=never", "--budget", "10s", "--workers", "1", "torch.transpose", "-o"]).arg(&file));
    assert_eq!(code, 0, "{stderr}");
    let text = std::fs::read_to_string(&file).expect("written");
    assert!(text.contains("api torch.transpose(input: Tensor, dim0: int, dim1: int) -> Tensor"), "{text}");
    assert!(text.contains("dim0 in -max(input.ndim, 1)..max(input.ndim, 1);"), "{text}");
    assert!(stderr.contains("torch.transpose: proposed") && stderr.contains("-> 100%"), "{stderr}");
    let (code, _, stderr) = run(sfz().args(["infer", "--color=never", "torch.transpos", "-o"]).arg(&file));
    assert_ne!(code, 0);
    assert!(stderr.contains("error[E0019]") && stderr.contains("torch.transpose"), "{stderr}");
}

/// An operator with no kernel for CPU tensors is not searched (every input would be
/// refused), and `--prune` removes it; an API left below `--min-valid` is reported with the
/// complaint libtorch raised most (a budget too short for `multi_margin_loss` to be solved).
#[test]
fn infer_skips_operators_without_a_cpu_kernel_and_names_what_stops_the_rest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("ops.sfz");
    let (code, stdout, stderr) = run(sfz().args(["infer", "--color=never", "--json", "--prune", "--budget", "2s", "--workers", "1", "torch.batch_norm_stats", "-o"]).arg(&file));
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("torch.batch_norm_stats: not run: aten::batch_norm_stats has no kernel for CPU tensors"), "{stderr}");
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(json[0]["no_cpu_kernel"], true, "{stdout}");
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    assert!(!text.contains("api torch.batch_norm_stats("), "pruned: {text}");

    let file = dir.path().join("loss.sfz");
    let (code, _, stderr) = run(sfz().args(["infer", "--color=never", "--budget", "2s", "--workers", "1", "torch.multi_margin_loss", "-o"]).arg(&file));
    assert_eq!(code, 0, "{stderr}");
    let still = stderr.lines().find(|l| l.starts_with("  libtorch still refuses ")).unwrap_or_else(|| panic!("{stderr}"));
    assert!(still.contains("% of the inputs with: "), "{still}");
    assert!(stderr.contains("= hint: write the rule it asks for by hand, or ask a model: `sfz suggest "), "{stderr}");
}

/// Two optional lists of which exactly one must be given, one entry per spatial dimension:
/// `upsample_nearest1d.vec` is refused until `output_size` is given, `scale_factors` left out
/// and the list as long as the input has dimensions after batch and channel.
#[test]
fn infer_gives_one_of_two_optional_lists_as_long_as_the_spatial_dimensions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("up.sfz");
    let (code, _, stderr) = run(sfz().args(["infer", "--color=never", "--budget", "10s", "--workers", "1", "--seed", "0", "torch.upsample_nearest1d", "-o"]).arg(&file));
    assert_eq!(code, 0, "{stderr}");
    let text = std::fs::read_to_string(&file).expect("written");
    for rule in ["output_size != None;", "len(output_size) == input.ndim - 2;", "scale_factors == None;"] {
        assert!(text.contains(rule), "{rule}: {text}");
    }
    let line = stderr.lines().find(|l| l.starts_with("torch.upsample_nearest1d: proposed")).unwrap_or_else(|| panic!("{stderr}"));
    assert!(line.contains("-> 100%") || line.contains("-> 9"), "{line}");
}

/// `index_fill`'s accepted inputs are of one-element indices whose drawn value landed inside
/// the dimension, though their fill range reaches outside it: the rule on the index's values is
/// probed, not refuted by them, and the search gets past "index N is out of bounds".
#[test]
fn infer_probes_an_index_rule_that_accepted_inputs_may_have_obeyed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("fill.sfz");
    let (code, _, stderr) = run(sfz().args(["infer", "--color=never", "--budget", "20s", "--workers", "1", "--seed", "89", "torch.index_fill", "-o"]).arg(&file));
    assert_eq!(code, 0, "{stderr}");
    let line = stderr.lines().find(|l| l.starts_with("torch.index_fill: proposed")).unwrap_or_else(|| panic!("{stderr}"));
    assert!(line.contains("-> 100%") || line.contains("-> 9"), "{line}");
    let text = std::fs::read_to_string(&file).expect("written");
    assert!(text.contains("index.values in 0.."), "{text}");
}

/// A backward operator named to infer comes with its forward, as `sfz init` writes it: the
/// forward's rules, inferred first, become the backward's (`huber_loss_backward` needs the
/// forward's positive delta and broadcasting target), and pruning keeps a forward while a kept
/// backward calls it.
#[test]
fn infer_feeds_a_backward_operator_from_its_forwards_rules() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("bw.sfz");
    let (code, _, stderr) =
        run(sfz().args(["infer", "--color=never", "--prune", "--budget", "10s", "--workers", "1", "--seed", "0", "torch.huber_loss_backward", "-o"]).arg(&file));
    assert_eq!(code, 0, "{stderr}");
    let text = std::fs::read_to_string(&file).expect("written");
    assert!(text.contains("from torch.huber_loss(input = input, target = target, reduction = reduction, delta = delta)"), "{text}");
    assert!(text.contains("api torch.huber_loss(") && text.contains("rule input_target_broadcast for torch.huber_loss {"), "{text}");
    let line = stderr.lines().find(|l| l.starts_with("torch.huber_loss_backward: proposed")).unwrap_or_else(|| panic!("{stderr}"));
    assert!(line.contains("-> 100%") || line.contains("-> 9"), "{line}");
    let (code, _, stderr) = run(sfz().args(["check", "--color=never"]).arg(&file));
    assert_eq!(code, 0, "{stderr}");
}

/// String parameters learn their value sets: qr's from libtorch's error for an unknown mode,
/// fft's from the docs (its error lists none); each value was tried against libtorch. The budget
/// is a ceiling: a loaded machine needs more than the 6 s an idle one takes.
#[test]
fn infer_learns_string_value_sets_from_errors_and_docs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("ops.sfz");
    let (code, stdout, stderr) = run(sfz().args(["infer", "--color=never", "--budget", "20s", "--workers", "1", "--json", "torch.linalg.qr", "torch.fft.fft", "-o"]).arg(&file));
    assert_eq!(code, 0, "{stderr}");
    let text = std::fs::read_to_string(&file).expect("written");
    let flat: String = text.split_whitespace().collect();
    assert!(flat.contains("values_from_errors=3,values_ok=3") && flat.contains("rulemode_values") && text.contains("mode in [\"reduced\", \"r\", \"complete\"];"), "{text}");
    assert!(flat.contains("values_from_docs=3,values_ok=3") && text.contains("norm in [\"forward\", \"backward\", \"ortho\"];"), "{text}");
    let results: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    for r in results.as_array().expect("array") {
        assert!(r["validated"].as_array().expect("validated").contains(&serde_json::json!(["errors", 1])), "{r}");
    }
    let (code, _, stderr) = run(sfz().args(["check", "--color=never"]).arg(&file));
    assert_eq!(code, 0, "{stderr}");
}

/// A rule an earlier inference validated while the string only took its default is refuted
/// once the values are learned, and the next run marks it rejected (incremental runs included).
#[test]
fn learned_values_refute_an_earlier_rule_that_kept_the_string_away() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("div.sfz");
    std::fs::write(
        &file,
        "api torch.div(input: Tensor, other: Tensor, *, rounding_mode: str?) -> Tensor {\n    input.dtype in [float32, float64];\n    other.dtype in [float32, float64];\n    broadcastable(input, other);\n}\n\n#[status(validated), source(inferred)]\nrule rounding_mode_none for torch.div {\n    rounding_mode == None;\n}\n",
    )
    .expect("write");
    let (code, _, stderr) = run(sfz().args(["infer", "--color=never", "--budget", "6s", "--workers", "1"]).arg(&file));
    assert_eq!(code, 0, "{stderr}");
    let text = std::fs::read_to_string(&file).expect("read back");
    let flat: String = text.split_whitespace().collect();
    assert!(flat.contains("#[status(rejected),source(inferred),evidence(violating_ok=") && flat.contains("rulerounding_mode_nonefortorch.div{"), "{text}");
    assert!(text.contains("rounding_mode in [\"trunc\", \"floor\"];"), "{text}");
    let (code, _, stderr) = run(sfz().args(["check", "--color=never"]).arg(&file));
    assert_eq!(code, 0, "{stderr}");
}

/// `torch.ops.aten` names, in-place and out= operators: a skeleton from `sfz init`, checked,
/// fuzzed, a finding replayed, and its reproducer calling the operator as a user pastes it.
#[test]
fn torch_ops_aten_names_work_from_init_to_replay() {
    let names = [
        "torch.ops.aten.max_pool2d_with_indices_backward",
        "torch.ops.aten.add.out",
        "torch.ops.aten.abs_",
        "torch.Tensor.add",
        "torch.nn.functional.relu",
        "torch.special.expit",
        "torch.linalg.vector_norm",
        "torch.fft.fft",
    ];
    let (code, stdout, stderr) = run(sfz().args(["init", "--color=never"]).args(names));
    assert_eq!(code, 0, "{stderr}");
    for name in names {
        assert!(stdout.contains(&format!("api {name}(")), "{name}: {stdout}");
    }
    assert!(stdout.contains("aten::max_pool2d_with_indices_backward(Tensor grad_output"), "{stdout}");
    let dir = tempfile::tempdir().expect("tempdir");
    let skeletons = dir.path().join("skeletons.sfz");
    std::fs::write(&skeletons, &stdout).expect("write");
    let (code, _, stderr) = run(sfz().args(["check", "--color=never"]).arg(&skeletons));
    assert_eq!(code, 0, "{stderr}");

    // A postcondition abs_ cannot keep: a finding on a torch.ops.aten API.
    let spec = dir.path().join("abs.sfz");
    let text = "api torch.ops.aten.abs_(input: Tensor) -> Tensor {\n    input.dtype in [float32];\n    input.values in -4.0..4.0;\n    ensures result.values in 0.0..=1.0;\n}\n";
    std::fs::write(&spec, text).expect("write");
    let out = dir.path().join("out");
    let (code, _, stderr) = run(sfz().args(["fuzz", "--color=never", "--iterations", "50", "--workers", "1", "--seed", "1", "--mutate", "none"]).arg(&spec).arg("--out").arg(&out));
    assert_eq!(code, 0, "{stderr}");
    let findings = std::fs::read_to_string(out.join("findings.jsonl")).expect("findings.jsonl");
    let first: serde_json::Value = serde_json::from_str(findings.lines().next().expect("a finding")).expect("json");
    let id = first["id"].as_str().expect("id");
    assert!(id.starts_with("postcondition-abs_-"), "{id}");
    let (code, stdout, stderr) = run(sfz().args(["replay", "--dir"]).arg(&out).arg(id));
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.starts_with(&format!("{id} (postcondition on torch.ops.aten.abs_): reproduces")), "{stdout}");
    let repro = std::fs::read_to_string(out.join("repro").join(format!("{id}.py"))).expect("reproducer");
    assert!(repro.contains("result = torch.ops.aten.abs_.default(input)\n"), "{repro}");
}

#[test]
fn init_names_what_it_cannot_generate() {
    // aten::record_stream takes a Stream: the one argument type sfz has no value for.
    let (code, _, stderr) = run(sfz().args(["init", "--color=never", "aten::record_stream", "torch.abs"]));
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("warning: cannot write a spec for `aten::record_stream`: argument `Stream s` has a type sfz cannot generate (Stream)"), "{stderr}");
}
