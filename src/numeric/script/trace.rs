//! Running a script under sfz's tracer (`python/sfz_trace/tracer.py`, embedded here and written
//! beside the findings) and reading back what it recorded: every torch operation between the
//! markers (or of the whole script, up to a bound), with its arguments' dtypes, shapes and value
//! ranges and the user's file:line.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;

/// The helper a script imports (`import sfz_trace`) and the tracer that runs it.
const HELPER: &str = include_str!("../../../python/sfz_trace/__init__.py");
const TRACER: &str = include_str!("../../../python/sfz_trace/tracer.py");

/// How the script's run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// It ran to its end, or the tracer stopped it (end marker, op bound).
    Ok,
    /// It raised (`error` holds its traceback) or exited non-zero.
    Raised,
    /// The tracer could not run it at all (`error` says why).
    Error,
}

/// One recorded torch call.
#[derive(Clone, Debug, Deserialize)]
pub struct TracedOp {
    /// `torch.softmax`, `torch.nn.functional.softmax`, `Tensor.__rsub__`, `Tensor.add_`.
    pub func: String,
    /// Positional arguments as JSON: a tensor is `{"t": value}`, a dtype `{"dtype": name}`, an
    /// int list `{"ints": [..]}`, anything else the tracer cannot say `{"other": type}`.
    pub args: Vec<serde_json::Value>,
    #[serde(default)]
    pub kwargs: BTreeMap<String, serde_json::Value>,
    /// The user's frame that made the call (None: no frame outside torch).
    pub file: Option<String>,
    pub line: u32,
    pub code: String,
    /// The value index of each tensor output (None for a non-tensor output).
    pub outputs: Vec<Option<u32>>,
    /// The ATen operators the call ran, in order (below autograd, after decompositions).
    #[serde(default)]
    pub aten: Vec<AtenOp>,
}

/// One ATen operator a recorded call ran.
#[derive(Clone, Debug, Deserialize)]
pub struct AtenOp {
    /// `aten::nll_loss_forward`.
    pub name: String,
    pub overload: String,
    /// In schema order, as `TracedOp::args` encodes them; trailing defaults left out.
    pub args: Vec<serde_json::Value>,
    /// Flattened, as the dispatcher returns them.
    pub outputs: Vec<Option<u32>>,
    /// Tagged `nondeterministic_seeded` (a sampler: `randn`, `bernoulli_`, `native_dropout`).
    #[serde(default)]
    pub random: bool,
    /// The tracer could not record it.
    #[serde(default)]
    pub error: bool,
    /// The names of the trailing arguments that are keyword-only.
    #[serde(default)]
    pub keywords: Vec<String>,
    /// Why a program cannot replay it (a string argument), when it cannot.
    #[serde(default)]
    pub unreplayable: Option<String>,
}

/// One tensor seen by the trace: an input of the traced region or an op's output.
#[derive(Clone, Debug, Deserialize)]
pub struct TracedValue {
    pub dtype: String,
    pub shape: Vec<i64>,
    #[serde(default)]
    pub nan: u64,
    #[serde(default)]
    pub inf: u64,
    /// Over the finite elements (absent for dtypes without an order, such as bool).
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// The op that produced it; None for a tensor made before the traced region.
    pub op: Option<u32>,
    /// A leaf that requires grad: a weight training changes.
    #[serde(default)]
    pub trainable: bool,
    /// The script's name for a weight (`model.fc.weight`), when one holds it.
    #[serde(default)]
    pub name: Option<String>,
}

/// What the tracer wrote.
#[derive(Clone, Debug, Deserialize)]
pub struct Trace {
    pub script: PathBuf,
    pub status: RunStatus,
    pub error: Option<String>,
    #[serde(default)]
    pub ops: Vec<TracedOp>,
    #[serde(default)]
    pub values: Vec<TracedValue>,
    /// `start()` was called.
    #[serde(default)]
    pub marked: bool,
    /// `end()` was reached.
    #[serde(default)]
    pub ended: bool,
    /// The op bound stopped the script.
    #[serde(default)]
    pub truncated: bool,
    /// The first `backward()` stopped a script without markers (one training step traced).
    #[serde(default)]
    pub backward: bool,
    #[serde(default = "yes")]
    pub imports_torch: bool,
}

fn yes() -> bool {
    true
}

/// Settings of a trace.
#[derive(Clone, Debug)]
pub struct TraceConfig {
    /// The venv's Python (the one with torch).
    pub python: PathBuf,
    /// Operations recorded before the script is stopped.
    pub max_ops: u32,
    /// Wall time the script may run.
    pub timeout: Duration,
    /// Where the tracer's files and the record go.
    pub dir: PathBuf,
}

/// Why a script could not be traced.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("cannot read the script {path}: {source}")]
    Missing { path: String, source: std::io::Error },
    #[error("cannot run {python}: {source} (set SFZ_PYTHON to the Python that has torch)")]
    Python { python: String, source: std::io::Error },
    #[error("the script ran past {0:?} before the trace was complete; put `sfz_trace.start()`/`end()` around the part to hunt, or raise --trace-timeout")]
    Timeout(Duration),
    #[error("the tracer wrote no record; its output:\n{0}")]
    NoRecord(String),
    #[error("cannot write the tracer's files in {dir}: {source}")]
    Write { dir: String, source: std::io::Error },
    /// The script raised before anything was traced; its traceback.
    #[error("the script raised before any torch operation was traced; its traceback:\n{0}")]
    Raised(String),
    #[error("the script does not import torch: there is nothing to hunt")]
    NoTorch,
    #[error("the script performed no torch operation{0}")]
    NoOps(&'static str),
}

impl TraceError {
    /// What the user can do about it.
    pub fn help(&self) -> &'static str {
        match self {
            TraceError::Missing { .. } => "give the path of a Python script (`sfz hunt train.py`)",
            TraceError::Python { .. } => "run scripts/setup.sh, which installs torch into ~/.cache/sfz/venv, or set SFZ_PYTHON",
            TraceError::Timeout(_) => "mark the part to hunt with `sfz_trace.start()`/`end()`, or raise --trace-timeout",
            TraceError::NoRecord(_) | TraceError::Write { .. } => "check that the --out folder is writable and has space",
            TraceError::Raised(_) => "fix the error the traceback shows (the script must run under the venv's Python: `SFZ_PYTHON=... python script.py`), or move `sfz_trace.start()` past the part that needs what is missing",
            TraceError::NoTorch => "hunt a script that computes with torch, or write a `program` item in a .sfz file",
            TraceError::NoOps(_) => "make sure the marked part (or the script) runs torch operations; arguments for the script go after `--`",
        }
    }
}

/// Writes the tracer next to the findings (`dir/sfz_trace/`) and returns the folder to put on
/// PYTHONPATH.
fn install(dir: &Path) -> Result<PathBuf, TraceError> {
    let pkg = dir.join("sfz_trace");
    let write = |name: &str, text: &str| std::fs::write(pkg.join(name), text);
    std::fs::create_dir_all(&pkg)
        .and_then(|()| write("__init__.py", HELPER))
        .and_then(|()| write("tracer.py", TRACER))
        .map_err(|source| TraceError::Write { dir: pkg.display().to_string(), source })?;
    Ok(dir.to_path_buf())
}

/// Runs `script` (with `args`) under the tracer and returns its record, or why there is none.
/// A record that holds no operation is an error with the reason (the script's traceback when
/// it raised).
pub fn run(script: &Path, args: &[String], config: &TraceConfig) -> Result<Trace, TraceError> {
    std::fs::metadata(script).map_err(|source| TraceError::Missing { path: script.display().to_string(), source })?;
    let path = install(&config.dir)?;
    let stem = script.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "script".into());
    let record = config.dir.join(format!("{stem}.trace.json"));
    let _ = std::fs::remove_file(&record);
    let log = config.dir.join(format!("{stem}.trace.log"));
    let log_file = std::fs::File::create(&log).map_err(|source| TraceError::Write { dir: config.dir.display().to_string(), source })?;
    let mut pythonpath = std::ffi::OsString::from(&path);
    if let Some(old) = std::env::var_os("PYTHONPATH") {
        pythonpath.push(":");
        pythonpath.push(old);
    }
    let mut child = Command::new(&config.python)
        .args(["-m", "sfz_trace.tracer"])
        .arg(&record)
        .arg(config.max_ops.to_string())
        .arg(script)
        .args(args)
        .env("PYTHONPATH", pythonpath)
        .stdin(Stdio::null())
        .stdout(log_file.try_clone().map_err(|source| TraceError::Write { dir: config.dir.display().to_string(), source })?)
        .stderr(log_file)
        .spawn()
        .map_err(|source| TraceError::Python { python: config.python.display().to_string(), source })?;
    let deadline = Instant::now() + config.timeout;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(TraceError::Timeout(config.timeout));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(source) => return Err(TraceError::Python { python: config.python.display().to_string(), source }),
        }
    }
    let output = std::fs::read_to_string(&log).unwrap_or_default();
    let text = std::fs::read_to_string(&record).map_err(|_| TraceError::NoRecord(tail(&output)))?;
    let trace: Trace = serde_json::from_str(&text).map_err(|e| TraceError::NoRecord(format!("{e}\n{}", tail(&output))))?;
    validate(trace)
}

/// The reasons a record is unusable, in the order a user should hear them.
pub fn validate(trace: Trace) -> Result<Trace, TraceError> {
    if !trace.ops.is_empty() {
        return Ok(trace);
    }
    match (trace.status, &trace.error) {
        (RunStatus::Raised, Some(tb)) => Err(TraceError::Raised(tb.clone())),
        (RunStatus::Error, e) => Err(TraceError::NoRecord(e.clone().unwrap_or_default())),
        _ if !trace.imports_torch => Err(TraceError::NoTorch),
        _ if trace.marked => Err(TraceError::NoOps(" between `start()` and `end()`")),
        _ => Err(TraceError::NoOps("")),
    }
}

fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

impl Trace {
    /// Warnings about a usable record: a script that stopped early or never reached `end()`.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.status == RunStatus::Raised {
            let last = self.error.as_deref().and_then(|e| e.lines().rev().find(|l| !l.trim().is_empty())).unwrap_or("").trim();
            notes.push(format!("the script raised after {} traced operations ({last}); hunting what was traced", self.ops.len()));
        }
        if self.marked && !self.ended && !self.truncated {
            notes.push(format!("the script never reached `sfz_trace.end()`; hunting the {} operations traced", self.ops.len()));
        }
        if self.backward {
            notes.push(format!("traced one training step: the {} operations before the first backward(), then stopped the script", self.ops.len()));
        }
        if self.truncated {
            notes.push(format!("traced the first {} operations, then stopped the script (--trace-ops)", self.ops.len()));
        }
        notes
    }
}
