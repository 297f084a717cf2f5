//! Backward operators fed by their forward (`from` statements), end to end with real workers:
//! conforming inputs are consistent (the bound arguments come from the forward), violations start
//! from them and break one binding, and reproducers call the forward too.
use std::path::Path;

mod common;
use common::process::{run, sfz, write};

/// Two forwards with the constraints they need, and their backwards fed by them.
const FED: &str = r#"
use std::constraints::pool_like;
use std::dtypes::floating;

api torch.max_pool2d_with_indices(
    input: Tensor,
    kernel_size: int[2],
    stride: int[2],
    padding: int[2] = [0, 0],
    dilation: int[2] = [1, 1],
    ceil_mode: bool = false,
) -> (Tensor, Tensor) {
    input.dtype in floating;
    pool_like(input, kernel_size, stride, padding, dilation);
    kernel_size[*] <= 3;
    stride[*] <= 2;
    // A dilated window may lie in the padding and point past the input (a known bug).
    dilation[*] == 1;
}

api torch.max_pool2d_with_indices_backward(
    grad_output: Tensor,
    input: Tensor,
    kernel_size: int[2],
    stride: int[2],
    padding: int[2],
    dilation: int[2],
    ceil_mode: bool,
    indices: Tensor,
) -> Tensor {
    from torch.max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode) {
        grad_output: like(result.0);
        indices: result.1;
    }
}

api torch.native_layer_norm(input: Tensor, normalized_shape: int[], weight: Tensor?, bias: Tensor?, eps: float) -> (Tensor, Tensor, Tensor) {
    input.dtype in [float32, float64];
    len(normalized_shape) in 1..=input.ndim;
    forall i in 0..len(normalized_shape): normalized_shape[i] == input.shape[i - len(normalized_shape)];
    weight.shape == normalized_shape;
    bias.shape == normalized_shape;
    weight.dtype == input.dtype;
    bias.dtype == input.dtype;
    eps > 0.0;
}

api torch.native_layer_norm_backward(
    grad_out: Tensor,
    input: Tensor,
    normalized_shape: int[],
    mean: Tensor,
    rstd: Tensor,
    weight: Tensor?,
    bias: Tensor?,
    output_mask: bool[3],
) -> (Tensor, Tensor, Tensor) {
    from torch.native_layer_norm(input, normalized_shape, weight, bias, 1e-5) {
        grad_out: like(result.0);
        mean: result.1;
        rstd: result.2;
    }
    // The gradient of a bias that is not there is refused ("tensor does not have a device").
    if bias == None then output_mask[2] == false;
}
"#;

fn json(stdout: &str) -> serde_json::Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("summary is JSON ({e}): {stdout}"))
}

/// The share of conforming inputs libtorch accepted, per API, in a conform-mode campaign.
fn valid_rates(spec: &Path, out: &Path) -> std::collections::BTreeMap<String, f64> {
    let (code, stdout, stderr) = run(sfz()
        .args(["fuzz", "--json", "--iterations", "600", "--seed", "3", "--workers", "1", "--mutate", "none", "--minimize", "0", "--api", "_backward"])
        .arg(spec)
        .arg("--out")
        .arg(out));
    assert_eq!(code, 0, "{stderr}");
    let j = json(&stdout);
    j["apis"].as_array().expect("apis").iter().map(|a| (a["api"].as_str().unwrap_or("").to_string(), a["conform_valid_rate"].as_f64().unwrap_or(0.0))).collect()
}

#[test]
fn backward_operators_fed_by_their_forward_take_valid_inputs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fed = write(dir.path(), "fed.sfz", FED);
    let rates = valid_rates(&fed, &dir.path().join("fed"));
    for api in ["torch.max_pool2d_with_indices_backward", "torch.native_layer_norm_backward"] {
        assert!(rates[api] >= 0.9, "{api}: {rates:?}");
    }
    // The same backwards fed by nothing: their gradients, indices and statistics are random.
    let mut in_from = false;
    let unfed: String = FED
        .lines()
        .filter(|l| {
            in_from |= l.trim_start().starts_with("from ");
            let keep = !in_from;
            in_from &= *l != "    }";
            keep
        })
        .map(|l| format!("{l}\n"))
        .collect();
    let unfed = write(dir.path(), "unfed.sfz", &unfed);
    let (code, _, stderr) = run(sfz().arg("check").arg(&unfed));
    assert_eq!(code, 0, "{stderr}");
    let rates = valid_rates(&unfed, &dir.path().join("unfed"));
    for api in ["torch.max_pool2d_with_indices_backward", "torch.native_layer_norm_backward"] {
        assert!(rates[api] < 0.1, "{api}: {rates:?}");
    }
}

#[test]
fn broken_forwards_kill_the_unchecked_pooling_backward_and_the_reproducer_does_too() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fed = write(dir.path(), "fed.sfz", FED);
    let out = dir.path().join("out");
    let (code, stdout, stderr) = run(sfz()
        .args(["fuzz", "--json", "--iterations", "800", "--seed", "5", "--workers", "1", "--mutate", "none", "--mode", "violate", "--check-share", "none"])
        .args(["--api", "torch.max_pool2d_with_indices_backward"])
        .arg(&fed)
        .arg("--out")
        .arg(&out));
    assert_eq!(code, 0, "{stderr}");
    let j = json(&stdout);
    let api = &j["apis"][0];
    // Most breakages are refused by argument checks; indices moved within the input are not.
    assert!(api["violate_executions"].as_u64().unwrap_or(0) > 500, "{api}");
    let accepted = api["accepted_violations"].as_object().expect("accepted violations");
    assert!(accepted.keys().any(|k| k.contains("indices from torch.max_pool2d_with_indices, with one element plus its plane's size")), "{accepted:?}");
    // Indices past the input, and a forward's broken geometry (dilation with padding), are
    // written through: the worker dies. Which of them dies first, and which death recurs alone
    // in a fresh worker, depends on the heap; deaths with one cause are one finding.
    let findings: Vec<serde_json::Value> =
        std::fs::read_to_string(out.join("findings.jsonl")).expect("findings").lines().map(|l| serde_json::from_str(l).expect("a finding")).collect();
    let crash = findings
        .iter()
        .find(|f| f["oracle"] == "crash" && f["confirmed"] == true && f["case"]["forward"]["binds"].as_array().is_some_and(|b| !b.is_empty()))
        .unwrap_or_else(|| panic!("a confirmed crash on a fed case: {findings:#?}"));
    let script = std::fs::read_to_string(out.join(crash["repro"].as_str().expect("repro"))).expect("script");
    assert!(script.contains("fwd_out = torch.ops.aten.max_pool2d_with_indices.default(") && script.contains("on purpose"), "{script}");
    // The pinned case is a spec of its own: the forward declared, the `from` statement kept.
    let pinned = out.join(crash["repro"].as_str().expect("repro").replace(".py", ".sfz"));
    let text = std::fs::read_to_string(&pinned).expect("pinned case");
    assert!(text.contains("from torch.max_pool2d_with_indices(") && text.contains("api torch.max_pool2d_with_indices("), "{text}");
    let (code, _, stderr) = run(sfz().arg("check").arg(&pinned));
    assert_eq!(code, 0, "{stderr}");
    let (code, stdout, stderr) = run(sfz().args(["report", "--verify", "--json"]).arg(&out));
    assert_eq!(code, 0, "{stderr}");
    let j = json(&stdout);
    // A death that recurs alone in a fresh worker reproduces under Python too. One that does not
    // (the broken write landed in memory nothing read) is listed apart as unconfirmed: which
    // write a process survives depends on its heap.
    let listed: Vec<&serde_json::Value> = j["findings"].as_array().expect("findings").iter().filter(|f| f["oracle"] == "crash").collect();
    assert!(!listed.is_empty(), "{j:#}");
    for f in listed {
        assert_eq!(f["verification"]["reproduced"], true, "{f:#}");
    }
}

/// A forward input the backward knows only by what the forward made of it: `like(output)` builds
/// it as `output` is (dtype, shape, values, the mutator's cliffs), so `tanh_backward` gets
/// outputs tanh can produce. Unfed, a cliff value of 1e19 as `output` squares to inf in float32
/// where the float64 reference is finite: a false premature overflow (judged false in a campaign).
/// A relation changing a fed argument keeps the dtype the forward gave it, not its recipe's.
#[test]
fn an_output_fed_from_a_forward_built_like_it_is_one_the_forward_can_produce() {
    let fed = "api torch.tanh(input: Tensor) -> Tensor {\n    input.dtype == float32;\n}\n\napi torch.tanh_backward(grad_output: Tensor, output: Tensor) -> Tensor {\n    from torch.tanh(input = like(output)) {\n        grad_output: like(result);\n        output: result;\n    }\n    output.dtype == float32;\n    relation odd: self(grad_output = -grad_output) == -result;\n    oracles precision;\n}\n";
    let unfed = fed.replace(
        "    from torch.tanh(input = like(output)) {\n        grad_output: like(result);\n        output: result;\n    }\n",
        "    grad_output.shape == output.shape;\n    grad_output.dtype == float32;\n",
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let findings = |name: &str, text: &str| {
        let spec = write(dir.path(), &format!("{name}.sfz"), text);
        let out = dir.path().join(name);
        let (code, stdout, stderr) = run(sfz()
            .args(["fuzz", "--json", "--iterations", "1500", "--seed", "1", "--workers", "1", "--check-share", "all", "--api", "_backward"])
            .arg(&spec)
            .arg("--out")
            .arg(&out));
        assert_eq!(code, 0, "{stderr}");
        let s = json(&stdout);
        assert!(s["conform_valid_rate"].as_f64().unwrap_or(0.0) >= 0.9, "{s}");
        let text = std::fs::read_to_string(out.join("findings.jsonl")).unwrap_or_default();
        let oracles = text.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).expect("JSON")["oracle"].as_str().unwrap_or("").to_string()).collect::<Vec<_>>();
        let implausible: u64 = s["implausible"].as_object().map_or(0, |m| m.values().filter_map(|v| v.as_u64()).sum());
        (oracles, implausible)
    };
    // Unfed, the disagreement is there, at an input no maintainer acts on: the plausibility
    // standard counts it instead of reporting it (oracle::plausible).
    let (reported, implausible) = findings("unfed", &unfed);
    assert!(implausible > 0, "cliff values as tanh's output overflow its derivative: {reported:?}");
    assert!(!reported.iter().any(|o| o == "overflow"), "{reported:?}");
    assert_eq!(findings("fed", fed).0, Vec::<String>::new());
}
