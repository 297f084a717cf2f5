//! The language tooling's figures, on a generated spec set of 300 APIs (10 files of 30):
//!
//! 1. `sfz check` on the set: the real binary, cold (no cached satisfiability verdicts, so z3
//!    solves all 300 APIs) and warm (verdicts and operator schemas cached, as on a re-run);
//!    and `sfz check specs/`, the repository's specs, warm with and without the syntax trees
//!    cached;
//! 2. the language server: time from a `didChange` on a 2,000-line file to the
//!    `publishDiagnostics` that answers it, over edits that each change one API;
//! 3. `sfz fmt`: every spec of the repository and of the set formatted twice, the second pass a
//!    fixed point.
//!
//! Run: `cargo bench --bench lang`. The generated APIs name real operators through
//! `#[aten(...)]`, so the signature comparison is real too.
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use lsp_server::{Connection, Message, Notification, Request, RequestId};
use serde_json::json;

/// One API, the `i`th of the set: five shapes of spec, with numbers that vary with `i` so that no
/// two APIs have the same constraints (the checker would solve each shape once otherwise).
fn api(i: usize) -> String {
    let k = 1 + i % 7;
    let r = 1 + i % 4;
    match i % 5 {
        0 => format!(
            "/// Elementwise exponential, variant {i}.\n#[aten(\"aten::exp\")]\napi torch.bench.exp_{i}(input: Tensor) -> Tensor {{\n    input.dtype in floating;\n    input.ndim <= {r};\n    input.numel <= {};\n    input.values in -{k}.0..{k}.0;\n    ensures result.shape == input.shape;\n    oracles crash, hang, internal_error, oom, nan_inf;\n}}\n",
            100 + 10 * i
        ),
        1 => format!(
            "/// Convolution, variant {i}.\n#[aten(\"aten::conv2d\")]\napi torch.bench.conv2d_{i}(\n    input: Tensor,\n    weight: Tensor,\n    bias: Tensor? = None,\n    stride: Size2 = [1, 1],\n    padding: Size2 = [0, 0],\n    dilation: Size2 = [1, 1],\n    groups: int = 1,\n) -> Tensor {{\n    input.dtype in full_floating;\n    weight.ndim == 4;\n    conv_like(input, weight, bias, stride, padding, dilation, groups);\n    groups <= {};\n    stride[*] <= {};\n    padding[*] <= 2;\n    dilation[*] <= 2;\n    input.values in -10.0..10.0;\n    weight.values in -{k}.0..{k}.0;\n}}\n",
            1 + i % 3,
            2 + i % 3
        ),
        2 => format!(
            "/// Sum over dimensions, variant {i}.\n#[aten(\"aten::sum.dim_IntList\")]\napi torch.bench.sum_{i}(input: Tensor, dim: int[]? = None, keepdim: bool = false) -> Tensor {{\n    reduction_like(input, dim);\n    input.ndim >= {};\n    input.numel <= {};\n    oracles crash, hang, internal_error, oom;\n}}\n",
            r - 1,
            64 * k
        ),
        3 => format!(
            "/// Matrix product, variant {i}.\n#[aten(\"aten::matmul\")]\napi torch.bench.matmul_{i}(input: Tensor, other: Tensor) -> Tensor {{\n    input.dtype in full_floating;\n    same_dtype(input, other);\n    input.ndim in 1..={r};\n    other.ndim in 1..={};\n    input.shape[-1] == (if other.ndim == 1 then other.shape[0] else other.shape[-2]);\n    forall i in 3..=min(input.ndim, other.ndim):\n        input.shape[-i] == other.shape[-i] or input.shape[-i] == 1 or other.shape[-i] == 1;\n    input.shape[-1] <= {};\n    ensures result.dtype == input.dtype;\n}}\n",
            1 + (i + 1) % 4,
            k + 1
        ),
        _ => format!(
            "/// Gather along a dimension, variant {i}.\n#[aten(\"aten::gather\")]\napi torch.bench.gather_{i}(input: Tensor, dim: int, index: Tensor) -> Tensor {{\n    input.ndim in 1..={r};\n    valid_dim(input, dim);\n    index.dtype == int64;\n    index.ndim == input.ndim;\n    forall d in 0..input.ndim:\n        d == dim or d == dim + input.ndim or index.shape[d] <= input.shape[d];\n    index.values in 0..input.shape[dim];\n    input.shape[0] <= {};\n    ensures result.shape == index.shape;\n}}\n",
            k + 1
        ),
    }
}

const HEADER: &str = "use std::dtypes::{floating, full_floating};\nuse std::constraints::{conv_like, reduction_like, same_dtype, valid_dim};\nuse std::types::Size2;\n";

/// Writes the 300-API set: `n` files of 30 APIs each.
fn write_set(dir: &Path, files: usize) -> Vec<PathBuf> {
    (0..files)
        .map(|f| {
            let mut text = String::from(HEADER);
            for i in 0..30 {
                text.push('\n');
                text.push_str(&api(f * 30 + i));
            }
            let path = dir.join(format!("set_{f:02}.sfz"));
            std::fs::write(&path, text).expect("write the set");
            path
        })
        .collect()
}

fn time_cmd(cmd: &mut Command) -> Duration {
    let start = Instant::now();
    let out = cmd.output().expect("sfz runs");
    let took = start.elapsed();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    took
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn bench_check(set: &Path, cache: &Path) {
    let sfz = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_sfz"));
        c.env("SFZ_CACHE_DIR", cache).arg("check");
        c
    };
    // Cold: nothing cached, z3 solves every API (the schemas are fetched in a separate run
    // first, so that starting a worker is not counted).
    time_cmd(sfz().arg(set));
    let cold: Vec<Duration> = (0..3).map(|_| time_cmd(sfz().arg("--no-cache").arg(set))).collect();
    let warm: Vec<Duration> = (0..10).map(|_| time_cmd(sfz().arg(set))).collect();
    println!("sfz check, 300 APIs, cold (z3 on every API)   median {:>10}   (runs: {})", ms(median(cold.clone())), cold.len());
    println!("sfz check, 300 APIs, warm (verdicts cached)   median {:>10}   target < 200 ms", ms(median(warm)));
    // In-process, without the process start: what the language server pays per check.
    let files = sfz::check::expand_paths(&[set.to_path_buf()]);
    let start = Instant::now();
    let checked = sfz::check::check_paths(&files);
    assert!(!checked.has_errors(), "{}", sfz::diag::render_all(&checked.map, &checked.diags, Default::default()));
    println!("check in process, 300 APIs, memo empty (z3)   {:>17}", ms(start.elapsed()));
}

/// `sfz check specs/` (789 APIs, 805 KB), warm: the verdicts cached, and the syntax trees cached
/// or not (their file removed before each such run, so that it parses every file).
fn bench_specs(cache: &Path) {
    let specs = Path::new(env!("CARGO_MANIFEST_DIR")).join("specs");
    let run = || time_cmd(Command::new(env!("CARGO_BIN_EXE_sfz")).env("SFZ_CACHE_DIR", cache).arg("check").arg(&specs));
    let forget_trees = || {
        for entry in std::fs::read_dir(cache).expect("the cache folder").flatten() {
            if entry.file_name().to_string_lossy().starts_with("parsed-") {
                std::fs::remove_file(entry.path()).expect("remove the trees");
            }
        }
    };
    run();
    let (mut parsing, mut cached) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        forget_trees();
        parsing.push(run());
        cached.push(run());
    }
    println!("sfz check specs/, warm, trees parsed         median {:>10}", ms(median(parsing)));
    println!("sfz check specs/, warm, trees cached         median {:>10}   target < 200 ms", ms(median(cached)));
}

/// A client on an in-memory connection to a server thread.
struct Lsp {
    conn: Connection,
    next: i32,
}

impl Lsp {
    fn request(&mut self, method: &str, params: serde_json::Value) -> serde_json::Value {
        self.next += 1;
        let id = RequestId::from(self.next);
        self.conn.sender.send(Message::Request(Request::new(id.clone(), method.into(), params))).expect("send");
        loop {
            if let Message::Response(r) = self.conn.receiver.recv().expect("answer") {
                if r.id == id {
                    return r.result.unwrap_or_default();
                }
            }
        }
    }

    fn notify(&self, method: &str, params: serde_json::Value) {
        self.conn.sender.send(Message::Notification(Notification::new(method.into(), params))).expect("send");
    }

    /// The next diagnostics for `uri`, with the version they answer.
    fn diagnostics(&self, uri: &str) -> (Option<i64>, usize) {
        loop {
            if let Message::Notification(n) = self.conn.receiver.recv().expect("notification") {
                if n.method == "textDocument/publishDiagnostics" && n.params["uri"] == uri {
                    return (n.params["version"].as_i64(), n.params["diagnostics"].as_array().map_or(0, Vec::len));
                }
            }
        }
    }
}

fn bench_lsp(dir: &Path) {
    let (server, client) = Connection::memory();
    // The worker next to `sfz`: its schemas were cached by the check runs.
    let worker = Path::new(env!("CARGO_BIN_EXE_sfz")).with_file_name("sfz-worker");
    let config = sfz::lsp::Config { worker_exe: Some(worker) };
    let thread = std::thread::spawn(move || sfz::lsp::serve(server, config));
    let mut lsp = Lsp { conn: client, next: 0 };
    lsp.request("initialize", json!({"capabilities": {}}));
    lsp.notify("initialized", json!({}));

    let mut text = String::from(HEADER);
    let mut i = 0;
    while text.lines().count() < 2000 {
        text.push('\n');
        text.push_str(&api(10_000 + i));
        i += 1;
    }
    let lines = text.lines().count();
    let path = dir.join("big.sfz");
    let uri = format!("file://{}", path.display());
    let start = Instant::now();
    lsp.notify("textDocument/didOpen", json!({"textDocument": {"uri": uri, "languageId": "sfz", "version": 0, "text": text}}));
    let (_, n) = lsp.diagnostics(&uri);
    assert_eq!(n, 0, "the generated file checks clean");
    println!("lsp didOpen, {lines} lines ({i} APIs, z3 on each)   {:>17}", ms(start.elapsed()));

    // Each edit changes the bound of one API's `numel` or ndim constraint: a new API for z3.
    let mut times = Vec::new();
    let mut cpu = Vec::new();
    for edit in 1..=30 {
        let needle = "input.ndim <= ";
        let at = text.match_indices(needle).nth(edit % 20).map(|(p, _)| p + needle.len()).expect("an edit site");
        let digit = (b'1' + (edit % 4) as u8) as char;
        text.replace_range(at..at + 1, &digit.to_string());
        let pos = sfz::diag::SourceFile::new("", text.clone());
        let (line, col) = pos.line_col_utf16(at);
        let change = json!({
            "range": {"start": {"line": line, "character": col}, "end": {"line": line, "character": col + 1}},
            "text": digit.to_string(),
        });
        let (start, start_cpu) = (Instant::now(), process_cpu());
        lsp.notify("textDocument/didChange", json!({"textDocument": {"uri": uri, "version": edit}, "contentChanges": [change]}));
        let (version, n) = lsp.diagnostics(&uri);
        times.push(start.elapsed());
        cpu.push(process_cpu().saturating_sub(start_cpu));
        assert_eq!((version, n), (Some(edit as i64), 0));
    }
    let max = times.iter().max().copied().unwrap_or_default();
    println!("lsp didChange -> diagnostics, {lines} lines     median {:>10}, max {} over {} edits   target < 50 ms", ms(median(times.clone())), ms(max), times.len());
    // CPU time the process spent per edit (the client thread only waits): the figure a loaded
    // machine does not inflate, unlike the wall time above.
    println!("lsp didChange, CPU time per edit              median {:>10}, max {}", ms(median(cpu.clone())), ms(cpu.iter().max().copied().unwrap_or_default()));
    lsp.request("shutdown", serde_json::Value::Null);
    lsp.notify("exit", serde_json::Value::Null);
    let _ = thread.join();
}

/// User + system CPU time of this process so far.
fn process_cpu() -> Duration {
    // SAFETY: getrusage writes into the zeroed struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let tv = |t: libc::timeval| Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

fn bench_fmt(set: &Path) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = sfz::check::expand_paths(&[root.join("specs"), root.join("stdlib"), root.join("examples"), set.to_path_buf()]);
    let texts: Vec<String> = files.iter().map(|f| std::fs::read_to_string(f).expect("readable")).collect();
    let bytes: usize = texts.iter().map(String::len).sum();
    let start = Instant::now();
    let mut repo_changed = 0;
    for (f, t) in files.iter().zip(&texts) {
        let once = sfz::fmt::format_text(t).expect("formats");
        let twice = sfz::fmt::format_text(&once).expect("formats");
        assert_eq!(once, twice, "{}: not a fixed point", f.display());
        repo_changed += usize::from(!f.starts_with(set) && &once != t);
    }
    println!(
        "sfz fmt twice, {} files ({} KB)              {:>17}   fixed point: yes; repository files it would change: {repo_changed}",
        files.len(),
        bytes / 1024,
        ms(start.elapsed()),
    );
}

fn main() {
    // `cargo bench` passes `--bench`; anything else is a filter we do not take.
    let dir = tempfile::tempdir().expect("tempdir");
    let set = dir.path().join("set");
    std::fs::create_dir_all(&set).expect("mkdir");
    let files = write_set(&set, 10);
    assert_eq!(files.len(), 10);
    let cache = dir.path().join("cache");
    // The in-process parts (check, the server) use the same cache as the commands: still
    // single-threaded here, so setting the variable is sound.
    std::env::set_var("SFZ_CACHE_DIR", &cache);
    println!("sfz language tooling, {} cores", std::thread::available_parallelism().map_or(1, |n| n.get()));
    bench_check(&set, &cache);
    bench_specs(&cache);
    bench_lsp(dir.path());
    bench_fmt(&set);
}
