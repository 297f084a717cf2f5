//! `sfz hunt script.py` end to end: real scripts traced under the venv's Python with real torch,
//! hunted in real workers, reproducers run under pip torch.
mod common;
use common::process::{run, sfz, write};

use std::path::Path;
use std::process::Command;

/// Hunts `script` with --json; exit code, the reports, stderr.
fn hunt(script: &Path, out: &Path, extra: &[&str]) -> (i32, Vec<serde_json::Value>, String) {
    let (code, stdout, stderr) = run(sfz().args(["hunt", "--json", "--seed", "1", "-j", "1"]).arg(script).arg("--out").arg(out).args(extra));
    let reports = serde_json::from_str::<serde_json::Value>(&stdout).ok().and_then(|v| v.as_array().cloned()).unwrap_or_default();
    (code, reports, stderr)
}

const MARKED: &str = "import torch
import sfz_trace

x = torch.randn(4, 10)
sfz_trace.start()
p = torch.softmax(x * 3, dim=-1)
loss = -torch.log(p).mean()
sfz_trace.end()
raise SystemExit('never reached under sfz')
";

#[test]
fn a_marked_script_is_traced_lowered_and_hunted_and_the_finding_names_its_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let script = write(dir.path(), "marked.py", MARKED);
    let out = dir.path().join("out");
    let (code, reports, stderr) = hunt(&script, &out, &[]);
    assert_eq!(code, 1, "found, so exit 1: {stderr}");
    let r = &reports[0];
    assert_eq!((r["status"].as_str(), r["op"].as_str()), (Some("bug"), Some("torch.log")), "{r}");
    // The script's own line, and the value to guard by the script's name for it.
    assert_eq!(r["script"]["site"]["line"], 7, "{r}");
    assert!(r["script"]["site"]["code"].as_str().unwrap().contains("torch.log(p)"), "{r}");
    assert_eq!(r["script"]["guard_variable"], "p", "{r}");
    assert_eq!(r["script"]["guard_site"]["line"], 6, "{r}");
    // The program is written beside the findings and hunts alone, as a spec.
    let sfz_file = out.join("traced_marked.sfz");
    let text = std::fs::read_to_string(&sfz_file).expect("the traced program");
    assert!(text.contains("torch.softmax") && text.contains("torch.log"), "{text}");
    let (code, _, stderr) = run(sfz().args(["hunt", "--seed", "1"]).arg(&sfz_file).arg("--out").arg(dir.path().join("again")));
    assert_eq!(code, 1, "{stderr}");
    // The reproducer shows the bad value under pip torch.
    let python = sfz::findings::verify::default_python();
    let repro = Command::new(&python).arg(out.join(r["reproducer"].as_str().expect("a reproducer"))).output().expect("python runs");
    let said = String::from_utf8_lossy(&repro.stdout);
    assert_eq!(repro.status.code(), Some(1), "{said}");
    // Which oracle fires first depends on the starting inputs the solver gave (a probability
    // that turns denormal before 0 is the rewrite oracle's); the reproducer shows that one.
    let marker = if r["oracle"] == "rewrite" { "sfz-rewrite: v3 differs from torch.log_softmax" } else { "sfz-nonfinite:" };
    assert!(said.contains(marker), "{r}\n{said}");
}

#[test]
fn the_fixed_script_is_clean_and_exits_0() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fixed = MARKED.replace("p = torch.softmax(x * 3, dim=-1)\nloss = -torch.log(p).mean()", "loss = -torch.log_softmax(x * 3, dim=-1).mean()");
    let script = write(dir.path(), "fixed.py", &fixed);
    let (code, reports, stderr) = hunt(&script, &dir.path().join("out"), &["--budget", "100", "--episodes", "2"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(reports[0]["status"], "clean", "{reports:?}");
}

#[test]
fn a_training_script_is_traced_for_one_step_with_its_data_loader_and_model() {
    let dir = tempfile::tempdir().expect("tempdir");
    let script = write(
        dir.path(),
        "train.py",
        "import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
X = torch.randn(64, 4)
Y = (X.sum(1) > 0).float()
loader = DataLoader(TensorDataset(X, Y), batch_size=16)
model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(10**9):
    for xb, yb in loader:
        p = torch.sigmoid(model(xb).squeeze(1))
        loss = -(yb * torch.log(p) + (1 - yb) * torch.log(1 - p)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
",
    );
    let (code, reports, stderr) = hunt(&script, &dir.path().join("out"), &[]);
    assert!(stderr.contains("traced one training step"), "{stderr}");
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(reports[0]["script"]["site"]["line"], 12, "{reports:?}");
}

/// A bug only trained weights reach: zero-initialised logits are harmless, large ones make
/// softmax underflow; the loss is a library call (`F.nll_loss`) the op table does not know.
const TRAINED: &str = "import torch
import torch.nn.functional as F
torch.manual_seed(0)
W = torch.zeros(4, 3, requires_grad=True)
x = torch.randn(16, 4)
y = torch.randint(0, 3, (16,))
opt = torch.optim.SGD([W], lr=0.1)
for step in range(3):
    probs = F.softmax(x @ W, dim=1)
    loss = F.nll_loss(torch.log(probs), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
";

#[test]
fn a_weight_training_moves_is_a_variable_and_library_losses_replay_as_aten_operators() {
    let dir = tempfile::tempdir().expect("tempdir");
    let script = write(dir.path(), "trained.py", TRAINED);
    let out = dir.path().join("out");
    let (code, reports, stderr) = hunt(&script, &out, &[]);
    assert_eq!(code, 1, "{stderr}");
    let r = &reports[0];
    assert_eq!((r["op"].as_str(), &r["script"]["site"]["line"]), (Some("torch.log"), &serde_json::json!(10)), "{r}");
    // The zero weight drove it, by its script name, far beyond the zeros the script showed.
    let driver = &r["script"]["drivers"][0];
    assert_eq!((driver["weight"].as_bool(), driver["name"].as_str()), (Some(true), Some("W")), "{r}");
    assert!(driver["found"].as_f64().unwrap() > 1.0 && driver["seen"] == 0.0, "{r}");
    let text = std::fs::read_to_string(out.join("traced_trained.sfz")).expect("program");
    assert!(text.contains("torch.ops.aten.nll_loss_forward.default("), "{text}");
    assert!(!stderr.contains("cannot be replayed"), "{stderr}");
    // The fix stays clean, and with --time it hunts episode after episode until the time is
    // spent rather than stopping after --episodes.
    let fixed = write(dir.path(), "trained_fixed.py", &TRAINED.replace("F.nll_loss(torch.log(probs), y)", "F.nll_loss(F.log_softmax(x @ W, dim=1), y)"));
    let (code, reports, stderr) = hunt(&fixed, &dir.path().join("out2"), &["--time", "6s", "--episodes", "1", "--budget", "50"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(reports[0]["status"], "clean", "{reports:?}");
    assert!(reports[0]["episodes"].as_u64().unwrap() > 1, "{reports:?}");
}

#[test]
fn a_decorated_function_is_what_gets_traced() {
    let dir = tempfile::tempdir().expect("tempdir");
    let script = write(
        dir.path(),
        "deco.py",
        "import torch
import sfz_trace

@sfz_trace.trace
def std(x):
    var = (x * x).mean() - x.mean() ** 2
    return torch.sqrt(var)

print(std(torch.randn(100) + 5))
",
    );
    let out = dir.path().join("out");
    let (code, reports, stderr) = hunt(&script, &out, &[]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(reports[0]["op"], "torch.sqrt", "{reports:?}");
    let text = std::fs::read_to_string(out.join("traced_deco.sfz")).expect("program");
    assert!(!text.contains("randn"), "only the decorated call is traced: {text}");
}

#[test]
fn scripts_that_cannot_be_hunted_say_why() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    // It raises before the markers: the script's own traceback.
    let raises = write(dir.path(), "raises.py", "import torch, sfz_trace\ndef load():\n    raise FileNotFoundError('data.csv')\nx = load()\nsfz_trace.start()\ny = torch.log(x)\n");
    let (code, _, stderr) = hunt(&raises, &out, &["--color=never"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("error[E0107]: cannot hunt"), "a coded error: {stderr}");
    assert!(stderr.contains("raised before any torch operation") && stderr.contains("raises.py\", line 3, in load") && stderr.contains("FileNotFoundError: data.csv"), "{stderr}");
    assert!(!stderr.contains("tracer.py"), "the tracer's frames are not the user's: {stderr}");
    // It does not parse.
    let broken = write(dir.path(), "broken.py", "import torch\nx = (\n");
    let (code, _, stderr) = hunt(&broken, &out, &[]);
    assert_eq!(code, 2);
    assert!(stderr.contains("SyntaxError"), "{stderr}");
    // It does not import torch.
    let plain = write(dir.path(), "plain.py", "print('hello')\n");
    let (code, _, stderr) = hunt(&plain, &out, &["--color=never"]);
    assert_eq!(code, 2);
    insta::assert_snapshot!(stderr.replace(&dir.path().display().to_string(), "<tmp>"));
    // Nothing it calls can be replayed (an operator outside the aten namespace is in no
    // worker's registry).
    let opaque = write(dir.path(), "opaque.py", "import torch\nx = torch.rand(4, 3)\ny = torch.ops.prims.convert_element_type(x, torch.float64)\n");
    let (code, _, stderr) = hunt(&opaque, &out, &["--color=never"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("error[E0107]") && stderr.contains("none of its 2 traced calls is an operation sfz can replay"), "{stderr}");
    // It never reaches end(): what was traced is hunted, and the user is told.
    let open = write(dir.path(), "open.py", "import torch, sfz_trace\nx = torch.rand(8)\nsfz_trace.start()\ny = torch.sqrt(x - 0.5)\n");
    let (code, reports, stderr) = hunt(&open, &out, &[]);
    assert!(stderr.contains("never reached `sfz_trace.end()`"), "{stderr}");
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(reports[0]["op"], "torch.sqrt");
    // A call the program cannot replay is listed, and the chain after it is hunted from its output.
    // Seeded, with enough rows that the cut value is seen as both 0 and 1 (a value seen as one
    // constant stays that constant: with 4 unseeded rows, all 1 one run in sixteen).
    let cut = write(
        dir.path(),
        "cut.py",
        "import torch\ntorch.manual_seed(0)\nx = torch.rand(64, 3)\ny = torch.ops.prims.convert_element_type(x[:, 0], torch.float64)\nz = torch.log(torch.div(y, 0.5, rounding_mode='floor'))\n",
    );
    let (code, reports, stderr) = hunt(&cut, &out, &[]);
    assert!(stderr.contains("cut.py:4 torch.ops.prims.convert_element_type") && stderr.contains("an operator outside the aten namespace"), "{stderr}");
    assert!(!stderr.contains("__getitem__"), "indexing replays as the ATen operators it ran: {stderr}");
    assert!(!stderr.contains("cut.py:5 torch.div") && !stderr.contains("a string argument"), "a string argument replays: {stderr}");
    assert_eq!((code, reports[0]["op"].as_str()), (1, Some("torch.log")), "{stderr}");
}

/// `--fix x`: data the user holds keeps its range and is never moved, so a log that needs `x`
/// moved to 0 is clean; a name no input has is a coded error listing the names there are.
#[test]
fn an_input_held_as_data_is_not_searched() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    let script = write(
        dir.path(),
        "held.py",
        "import torch, sfz_trace\nx = torch.rand(8) + 0.5\nw = torch.ones(8, requires_grad=True)\nsfz_trace.start()\ny = torch.log(x) * w\nsfz_trace.end()\n",
    );
    let (code, reports, stderr) = hunt(&script, &out, &[]);
    assert_eq!((code, reports[0]["op"].as_str()), (1, Some("torch.log")), "x is searched down to 0: {stderr}");
    let (code, _, stderr) = hunt(&script, &out, &["--fix", "x"]);
    assert_eq!(code, 0, "x held in [0.5, 1.5]: {stderr}");
    let text = std::fs::read_to_string(out.join("traced_held.sfz")).expect("program");
    assert!(text.contains("// Held as data (--fix): x0 (x)"), "{text}");
    let (code, _, stderr) = hunt(&script, &out, &["--fix", "X", "--color=never"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("error[E0107]: cannot hunt") && stderr.contains("--fix names `X`, which no input of the hunt is called"), "{stderr}");
    assert!(stderr.contains("`w`") && stderr.contains("`x`"), "the names there are: {stderr}");
}

#[test]
fn programs_are_spread_over_workers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let programs = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/numerical/softmax.sfz");
    let (code, stdout, stderr) =
        run(sfz().args(["hunt", "--seed", "1", "-j", "2", "--program", "softmax_log", "--program", "naive_softmax"]).arg(&programs).arg("--out").arg(dir.path()));
    assert_eq!(code, 1, "{stderr}");
    assert!(stdout.contains("(2 workers)"), "{stdout}");
    for name in ["softmax_log ", "softmax_log_fixed", "naive_softmax ", "naive_softmax_fixed"] {
        assert!(stdout.contains(name), "{name} in {stdout}");
    }
}

/// The formula-rewrite oracle: a log of a softmax whose probabilities turn denormal but never 0
/// is finite, so NaN/INF stays silent; against log_softmax it has lost precision. The fix is
/// clean, and the reproducer shows both values.
#[test]
fn the_rewrite_oracle_flags_a_finite_log_of_softmax_that_lost_precision() {
    let dir = tempfile::tempdir().expect("tempdir");
    let body = "    x.dtype == float32;\n    x.ndim == 1;\n    x.shape[0] == 4;\n    x.values in -100.0..0.0;\n";
    let spec = write(
        dir.path(),
        "rw.sfz",
        &format!("program denormal(x: Tensor) {{\n{body}    let p = torch.softmax(x, dim = 0);\n    let l = torch.log(p);\n}}\n\nprogram denormal_fixed(x: Tensor) {{\n{body}    let l = torch.log_softmax(x, dim = 0);\n}}\n"),
    );
    let out = dir.path().join("out");
    let (code, reports, stderr) = hunt(&spec, &out, &[]);
    assert_eq!(code, 1, "{stderr}");
    let r = reports.iter().find(|r| r["program"] == "denormal").expect("a report");
    assert_eq!((r["status"].as_str(), r["oracle"].as_str(), r["step"].as_str()), (Some("bug"), Some("rewrite"), Some("l")), "{r}");
    assert!(r["message"].as_str().unwrap().contains("torch.log_softmax"), "{r}");
    assert_eq!(reports.iter().find(|r| r["program"] == "denormal_fixed").unwrap()["status"], "clean");
    let python = sfz::findings::verify::default_python();
    let repro = Command::new(&python).arg(out.join(r["reproducer"].as_str().unwrap())).output().expect("python runs");
    let said = String::from_utf8_lossy(&repro.stdout);
    assert_eq!(repro.status.code(), Some(1), "{said}");
    assert!(said.contains("sfz-rewrite: l differs from torch.log_softmax"), "{said}");
}

/// Runs a reproducer under pip torch: its exit code and stdout.
fn reproduce(out: &Path, report: &serde_json::Value) -> (Option<i32>, String) {
    let python = sfz::findings::verify::default_python();
    let repro = Command::new(&python).arg(out.join(report["reproducer"].as_str().expect("a reproducer"))).output().expect("python runs");
    (repro.status.code(), String::from_utf8_lossy(&repro.stdout).into_owned())
}

/// The range oracle: a variance computed as E[x²] - E[x]² is never NaN here (no square root),
/// but cancellation makes it negative, which the program's `ensures` rules out; the op's own
/// ranges (a square is non-negative) hold throughout. In float64 there is no wider float to
/// compare with, so the range is what tells. The two-pass form is clean.
#[test]
fn the_range_oracle_flags_a_value_outside_its_declared_range() {
    let dir = tempfile::tempdir().expect("tempdir");
    let body = "    x.dtype == float64;\n    x.ndim == 1;\n    x.shape[0] == 64;\n    x.values in 100000000.0..100000001.0;\n";
    let spec = write(
        dir.path(),
        "range.sfz",
        &format!(
            "program moments(x: Tensor) {{\n{body}    let v = (x * x).mean() - x.mean() * x.mean();\n    ensures v.values >= 0.0;\n}}\n\n\
             program moments_fixed(x: Tensor) {{\n{body}    let d = x - x.mean();\n    let v = (d * d).mean();\n    ensures v.values >= 0.0;\n}}\n"
        ),
    );
    let out = dir.path().join("out");
    let (code, reports, stderr) = hunt(&spec, &out, &["--strategy", "random"]);
    assert_eq!(code, 1, "{stderr}");
    let r = reports.iter().find(|r| r["program"] == "moments").expect("a report");
    assert_eq!((r["status"].as_str(), r["oracle"].as_str(), r["step"].as_str()), (Some("bug"), Some("range"), Some("v")), "{r}");
    assert!(r["message"].as_str().unwrap().contains("is outside [0.0, inf], which `v.values >= 0.0` declares"), "{r}");
    let (code, said) = reproduce(&out, r);
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("sfz-range: v outside [0.0, inf]"), "{said}");
    assert_eq!(reports.iter().find(|r| r["program"] == "moments_fixed").unwrap()["status"], "clean");
}

/// The wider-float oracle: the same variance by moments, with values whose cancellation leaves
/// float32 noise that stays non-negative, against the program run in float64; the two-pass
/// form agrees with float64, and so does an ill-conditioned but stable chain (the cosine of a
/// large angle), which rounding the inputs alone explains.
#[test]
fn the_wider_oracle_flags_cancellation_float64_does_not_have() {
    let dir = tempfile::tempdir().expect("tempdir");
    let body = "    x.dtype == float32;\n    x.ndim == 1;\n    x.shape[0] == 64;\n    x.values in 1000.0..1001.0;\n";
    let spec = write(
        dir.path(),
        "wider.sfz",
        &format!(
            "program moments(x: Tensor) {{\n{body}    let v = torch.abs((x * x).mean() - x.mean() * x.mean());\n}}\n\n\
             program moments_fixed(x: Tensor) {{\n{body}    let d = x - x.mean();\n    let v = (d * d).mean();\n}}\n\n\
             program far_cosine(x: Tensor) {{\n    x.dtype == float32;\n    x.ndim == 1;\n    x.shape[0] == 8;\n    x.values in 100000.0..200000.0;\n    let c = torch.cos(x);\n}}\n"
        ),
    );
    let out = dir.path().join("out");
    let (code, reports, stderr) = hunt(&spec, &out, &["--strategy", "random"]);
    assert_eq!(code, 1, "{stderr}");
    let r = reports.iter().find(|r| r["program"] == "moments").expect("a report");
    assert_eq!((r["status"].as_str(), r["oracle"].as_str(), r["step"].as_str()), (Some("bug"), Some("wider"), Some("v")), "{r}");
    assert!(r["message"].as_str().unwrap().contains("where the same program in float64 gives"), "{r}");
    let (code, said) = reproduce(&out, r);
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("sfz-wider: v differs from the same program in float64"), "{said}");
    for clean in ["moments_fixed", "far_cosine"] {
        assert_eq!(reports.iter().find(|r| r["program"] == clean).unwrap()["status"], "clean", "{clean}: {reports:?}");
    }
}
