//! `sfz lsp` tested as an editor uses it: the real binary started as a process, JSON-RPC over
//! its stdin and stdout.
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

use serde_json::{json, Value};

/// A client speaking to one `sfz lsp` process.
struct Client {
    child: Child,
    stdin: ChildStdin,
    incoming: Receiver<Value>,
    next_id: i64,
    /// Messages read while waiting for something else.
    backlog: Vec<Value>,
}

impl Client {
    fn start(cache: &std::path::Path, worker: &std::path::Path) -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_sfz"))
            .arg("lsp")
            .arg("--worker")
            .arg(worker)
            .env("SFZ_CACHE_DIR", cache)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("sfz lsp starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            loop {
                let mut len = None;
                loop {
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let line = line.trim_end();
                    if line.is_empty() {
                        break;
                    }
                    if let Some(n) = line.strip_prefix("Content-Length: ") {
                        len = n.parse::<usize>().ok();
                    }
                }
                let mut body = vec![0; len.expect("Content-Length header")];
                r.read_exact(&mut body).expect("message body");
                if tx.send(serde_json::from_slice(&body).expect("JSON body")).is_err() {
                    return;
                }
            }
        });
        Client { child, stdin, incoming: rx, next_id: 0, backlog: Vec::new() }
    }

    fn send(&mut self, msg: Value) {
        let body = msg.to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).expect("write");
        self.stdin.flush().expect("flush");
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let msg = self.wait(|m| m["id"] == json!(id));
        assert!(msg.get("error").is_none(), "{method} failed: {msg}");
        msg["result"].clone()
    }

    fn wait(&mut self, want: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.backlog.iter().position(&want) {
            return self.backlog.remove(i);
        }
        loop {
            let msg = self.incoming.recv_timeout(Duration::from_secs(30)).expect("the server answers within 30 s");
            if want(&msg) {
                return msg;
            }
            self.backlog.push(msg);
        }
    }

    /// The next diagnostics published for a URI.
    fn diagnostics(&mut self, uri: &str) -> Vec<Value> {
        let msg = self.wait(|m| m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == uri);
        msg["params"]["diagnostics"].as_array().cloned().unwrap_or_default()
    }
}

fn codes(diags: &[Value]) -> Vec<String> {
    diags.iter().map(|d| d["code"].as_str().unwrap_or("").to_string()).collect()
}

fn change(client: &mut Client, uri: &str, version: i32, text: &str) {
    client.notify("textDocument/didChange", json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]}));
}

const BROKEN: &str = "use std::dtypes::floating;\n\napi torch.exp(input: Tensor {\n    input.dtype in floating;\n}\n";
const TYPE_ERROR: &str = "use std::dtypes::floating;\n\napi torch.exp(input: Tensor) {\n    input.dtype == 3;\n}\n";
const FIXED: &str = "use std::dtypes::floating;\n\napi torch.exp(input: Tensor) {\n    input.dtype in floating;\n}\n";

#[test]
fn a_session_as_an_editor_runs_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("spec.sfz");
    let uri = format!("file://{}", path.display());
    // No worker and no cached schemas: signatures are not compared.
    let mut client = Client::start(dir.path(), &dir.path().join("no-worker"));

    let init = client.request("initialize", json!({"processId": null, "rootUri": null, "capabilities": {}}));
    let caps = &init["capabilities"];
    for cap in ["hoverProvider", "definitionProvider", "completionProvider", "documentFormattingProvider"] {
        assert!(!caps[cap].is_null(), "missing {cap} in {caps}");
    }
    client.notify("initialized", json!({}));

    // A syntax error: only it is reported, not the name errors it would cause.
    client.notify("textDocument/didOpen", json!({"textDocument": {"uri": uri, "languageId": "sfz", "version": 1, "text": BROKEN}}));
    let diags = client.diagnostics(&uri);
    assert_eq!(codes(&diags), ["E0001"], "{diags:?}");
    assert_eq!(diags[0]["range"]["start"], json!({"line": 2, "character": 28}));
    assert_eq!(diags[0]["severity"], json!(1));

    // Syntax fixed, a type error left.
    change(&mut client, &uri, 2, TYPE_ERROR);
    let diags = client.diagnostics(&uri);
    assert_eq!(codes(&diags), ["W0001", "E0006"], "{diags:?}");
    assert!(diags[1]["message"].as_str().unwrap_or("").starts_with("cannot compare a dtype with an int"), "{}", diags[1]);
    assert_eq!(diags[0]["severity"], json!(2));

    // Everything fixed: an empty list clears the editor's markers.
    change(&mut client, &uri, 3, FIXED);
    assert_eq!(client.diagnostics(&uri), Vec::<Value>::new());

    // Hover on a parameter shows its type; on a stdlib name, its docs.
    let hover = client.request("textDocument/hover", json!({"textDocument": {"uri": uri}, "position": {"line": 3, "character": 6}}));
    assert!(hover["contents"]["value"].as_str().unwrap_or("").contains("input: Tensor"), "{hover}");
    let hover = client.request("textDocument/hover", json!({"textDocument": {"uri": uri}, "position": {"line": 3, "character": 22}}));
    let text = hover["contents"]["value"].as_str().unwrap_or("");
    assert!(text.contains("dtypes floating = [float16, bfloat16, float32, float64]") && text.contains("real floating-point"), "{hover}");

    // Go to definition crosses into the stdlib, which exists on disk.
    let def = client.request("textDocument/definition", json!({"textDocument": {"uri": uri}, "position": {"line": 0, "character": 19}}));
    let target = def["uri"].as_str().unwrap_or("").to_string();
    assert!(target.ends_with("/dtypes.sfz"), "{def}");
    let target_path = target.trim_start_matches("file://");
    let line = def["range"]["start"]["line"].as_u64().expect("a line") as usize;
    let stdlib_text = std::fs::read_to_string(target_path).expect("the stdlib file exists");
    assert!(stdlib_text.lines().nth(line).unwrap_or("").contains("dtypes floating"), "{def}");

    // Completion after `input.` offers properties, even though the text does not parse yet.
    let typing = "use std::dtypes::floating;\n\napi torch.exp(input: Tensor) {\n    input.dtype in floating;\n    input.\n}\n";
    change(&mut client, &uri, 4, typing);
    let items = client.request("textDocument/completion", json!({"textDocument": {"uri": uri}, "position": {"line": 4, "character": 10}}));
    let labels: Vec<&str> = items.as_array().into_iter().flatten().filter_map(|i| i["label"].as_str()).collect();
    assert!(labels.contains(&"shape") && labels.contains(&"dtype"), "{labels:?}");
    assert_eq!(codes(&client.diagnostics(&uri)), ["E0001"]);

    // Formatting returns one edit with the canonical text.
    change(&mut client, &uri, 5, "api torch.exp(input:Tensor){input.ndim<=4;}");
    let edits = client.request("textDocument/formatting", json!({"textDocument": {"uri": uri}, "options": {"tabSize": 4, "insertSpaces": true}}));
    assert_eq!(edits[0]["newText"], json!("api torch.exp(input: Tensor) {\n    input.ndim <= 4;\n}\n"));

    client.request("shutdown", Value::Null);
    client.notify("exit", Value::Null);
    let status = client.child.wait().expect("the server exits");
    assert!(status.success(), "{status}");
}

/// With schemas cached (as `sfz check` leaves them), an API libtorch cannot call as declared is
/// reported as the editor types; the server starts no worker for it.
#[test]
fn signatures_are_compared_with_cached_schemas() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Any file stands for the worker: the cache is keyed by it.
    let worker = dir.path().join("sfz-worker");
    std::fs::write(&worker, "not a worker").expect("write");
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/schemas-2.13.0.txt");
    let cached = sfz::check::signatures::cache_path_in(dir.path(), &worker).expect("a cache path");
    std::fs::copy(fixture, cached).expect("copy");
    let uri = format!("file://{}", dir.path().join("spec.sfz").display());
    let mut client = Client::start(dir.path(), &worker);
    client.request("initialize", json!({"processId": null, "rootUri": null, "capabilities": {}}));
    client.notify("initialized", json!({}));
    let text = "api torch.exp(input: Tensor, dim: int) {}\n";
    client.notify("textDocument/didOpen", json!({"textDocument": {"uri": uri, "languageId": "sfz", "version": 1, "text": text}}));
    assert_eq!(codes(&client.diagnostics(&uri)), ["E0017"]);
    change(&mut client, &uri, 2, "api torch.exp(input: Tensor) {}\n");
    assert_eq!(client.diagnostics(&uri), Vec::<Value>::new());
    // Completion of API names comes from the same schemas.
    change(&mut client, &uri, 3, "api torch.ex");
    let items = client.request("textDocument/completion", json!({"textDocument": {"uri": uri}, "position": {"line": 0, "character": 12}}));
    let labels: Vec<&str> = items.as_array().into_iter().flatten().filter_map(|i| i["label"].as_str()).collect();
    assert!(labels.contains(&"torch.exp") && labels.contains(&"torch.linalg.inv"), "{} labels", labels.len());
    client.request("shutdown", Value::Null);
    client.notify("exit", Value::Null);
    assert!(client.child.wait().expect("exits").success());
}
