//! `sfz lsp`: a language server over stdio, built on the same parse, check and format as the
//! command line (lsp-server + lsp-types).
//!
//! **Architecture Invariant:** the server never executes a spec: it parses, checks (z3 included,
//! memoised) and formats. No worker is started, no libtorch is loaded.
//!
//! Diagnostics are published for a document after every change, as one list that may be empty:
//! an empty list is how an editor learns that an error is gone. A document with syntax errors
//! gets only those (a half-typed item would otherwise cascade into name errors); hover, go to
//! definition and completion then use its last analysis without syntax errors. Changes that
//! arrive together are analysed once, after the last of them.
mod completion;
pub mod convert;

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use lsp_server::{Connection, ErrorCode, Message, Notification, Request, Response};
use lsp_types::notification::{self as notif, Notification as _};
use lsp_types::request::{self as req, Request as _};
use lsp_types::{
    CompletionOptions, GotoDefinitionResponse, Hover, HoverContents, HoverProviderCapability, InitializeParams, Location, MarkupContent, MarkupKind, OneOf,
    PublishDiagnosticsParams, ServerCapabilities, TextDocumentContentChangeEvent, TextDocumentSyncCapability, TextDocumentSyncKind, TextEdit, Uri,
};

use crate::check::{self, Checked, Inputs};
use crate::diag::{FileId, SourceFile, SourceMap};

/// Runs the server on stdin/stdout until the client shuts it down.
pub fn run_stdio(config: Config) -> anyhow::Result<()> {
    let (conn, io) = Connection::stdio();
    serve(conn, config)?;
    io.join()?;
    Ok(())
}

/// How the server is set up.
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// The `sfz-worker` binary whose libtorch's schemas (cached by `sfz check`) signatures are
    /// compared with; None for the one next to `sfz`.
    pub worker_exe: Option<PathBuf>,
}

/// Runs the server on a connection (stdio, or an in-memory one in tests).
pub fn serve(conn: Connection, config: Config) -> anyhow::Result<()> {
    let caps = ServerCapabilities {
        text_document_sync: Some(TextDocumentSyncCapability::Kind(TextDocumentSyncKind::INCREMENTAL)),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        definition_provider: Some(OneOf::Left(true)),
        completion_provider: Some(CompletionOptions { trigger_characters: Some(vec![".".into(), ":".into(), " ".into()]), ..Default::default() }),
        document_formatting_provider: Some(OneOf::Left(true)),
        ..Default::default()
    };
    let init = conn.initialize(serde_json::to_value(caps)?)?;
    let _params: InitializeParams = serde_json::from_value(init).unwrap_or_default();
    let mut server = Server {
        conn,
        docs: HashMap::new(),
        dirty: BTreeSet::new(),
        stdlib_dir: materialize_stdlib(),
        worker_exe: config.worker_exe.unwrap_or_else(crate::wire::protocol::default_worker_exe),
        catalog: None,
    };
    server.run()
}

/// An open document.
struct Document {
    uri: Uri,
    text: String,
    version: i32,
    /// The last analysis of a text without syntax errors.
    good: Option<Analysis>,
}

/// A check of one document with the editor's buffers as overlays.
struct Analysis {
    checked: Checked,
    file: FileId,
    /// The text it analysed: offsets are into this.
    text: String,
}

struct Server {
    conn: Connection,
    docs: HashMap<PathBuf, Document>,
    /// Documents changed since they were last analysed.
    dirty: BTreeSet<PathBuf>,
    /// Where the embedded stdlib is written, so go to definition can open it.
    stdlib_dir: Option<PathBuf>,
    worker_exe: PathBuf,
    /// libtorch's schemas as `sfz check` cached them, and their Python names. The server never
    /// starts a worker itself; until a check has cached them, signatures are not compared.
    catalog: Option<(crate::ops::catalog::Catalog, Vec<String>)>,
}

impl Server {
    fn run(&mut self) -> anyhow::Result<()> {
        while let Ok(msg) = self.conn.receiver.recv() {
            match msg {
                Message::Request(r) => {
                    if self.conn.handle_shutdown(&r)? {
                        return Ok(());
                    }
                    // Answers describe the text as it is now.
                    self.flush();
                    let id = r.id.clone();
                    let response = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.request(r))) {
                        Ok(Ok(value)) => Response::new_ok(id, value),
                        Ok(Err(e)) => Response::new_err(id, ErrorCode::InvalidParams as i32, e.to_string()),
                        Err(_) => Response::new_err(id, ErrorCode::InternalError as i32, bug_message()),
                    };
                    self.conn.sender.send(response.into())?;
                }
                Message::Notification(n) => self.notification(n)?,
                Message::Response(_) => {}
            }
            // Analyse once the burst of messages is over.
            if self.conn.receiver.is_empty() {
                self.flush();
            }
        }
        Ok(())
    }

    fn notification(&mut self, n: Notification) -> anyhow::Result<()> {
        match n.method.as_str() {
            notif::DidOpenTextDocument::METHOD => {
                let p: lsp_types::DidOpenTextDocumentParams = serde_json::from_value(n.params)?;
                if let Some(path) = convert::uri_to_path(&p.text_document.uri) {
                    let doc = Document { uri: p.text_document.uri, text: p.text_document.text, version: p.text_document.version, good: None };
                    self.docs.insert(path.clone(), doc);
                    self.dirty.insert(path);
                }
            }
            notif::DidChangeTextDocument::METHOD => {
                let p: lsp_types::DidChangeTextDocumentParams = serde_json::from_value(n.params)?;
                let Some(path) = convert::uri_to_path(&p.text_document.uri) else { return Ok(()) };
                let Some(doc) = self.docs.get_mut(&path) else { return Ok(()) };
                for change in p.content_changes {
                    apply_change(&mut doc.text, change);
                }
                doc.version = p.text_document.version;
                self.dirty.insert(path.clone());
                // Open documents that import this one see the change too.
                for (other, d) in &self.docs {
                    if d.good.as_ref().is_some_and(|a| a.checked.map.find(&path.display().to_string()).is_some()) {
                        self.dirty.insert(other.clone());
                    }
                }
            }
            notif::DidCloseTextDocument::METHOD => {
                let p: lsp_types::DidCloseTextDocumentParams = serde_json::from_value(n.params)?;
                if let Some(path) = convert::uri_to_path(&p.text_document.uri) {
                    self.docs.remove(&path);
                    self.dirty.remove(&path);
                    // A closed file's problems are no longer shown.
                    self.publish(p.text_document.uri, Vec::new(), None)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn request(&mut self, r: Request) -> anyhow::Result<serde_json::Value> {
        Ok(match r.method.as_str() {
            req::HoverRequest::METHOD => {
                let p: lsp_types::HoverParams = serde_json::from_value(r.params)?;
                serde_json::to_value(self.hover(&p.text_document_position_params))?
            }
            req::GotoDefinition::METHOD => {
                let p: lsp_types::GotoDefinitionParams = serde_json::from_value(r.params)?;
                serde_json::to_value(self.definition(&p.text_document_position_params))?
            }
            req::Completion::METHOD => {
                let p: lsp_types::CompletionParams = serde_json::from_value(r.params)?;
                serde_json::to_value(self.completion(&p.text_document_position))?
            }
            req::Formatting::METHOD => {
                let p: lsp_types::DocumentFormattingParams = serde_json::from_value(r.params)?;
                serde_json::to_value(self.formatting(&p.text_document.uri))?
            }
            _ => serde_json::Value::Null,
        })
    }

    /// Analyses every changed document and publishes its diagnostics.
    fn flush(&mut self) {
        while let Some(path) = self.dirty.pop_first() {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.analyse(&path)));
            if result.is_err() {
                let params = lsp_types::ShowMessageParams { typ: lsp_types::MessageType::ERROR, message: bug_message() };
                let _ = self.conn.sender.send(Notification::new(notif::ShowMessage::METHOD.into(), params).into());
            }
        }
    }

    fn analyse(&mut self, path: &Path) {
        let Some(doc) = self.docs.get(path) else { return };
        let (uri, version, text) = (doc.uri.clone(), doc.version, doc.text.clone());
        // Syntax first: its errors alone are shown until they are fixed.
        let (_, syntax) = crate::syntax::parse(FileId(0), &text);
        if syntax.iter().any(crate::diag::Diagnostic::is_error) {
            let mut map = SourceMap::default();
            map.add(path.display().to_string(), text);
            let diags = syntax.iter().map(|d| convert::diagnostic(&map, d, &|_| Some(uri.clone()))).collect();
            let _ = self.publish(uri, diags, Some(version));
            return;
        }
        let overlays = self.docs.iter().map(|(p, d)| (p.clone(), d.text.clone())).collect();
        let mut checked = check::check(Inputs { paths: vec![path.to_path_buf()], overlays, symbols: true });
        let Some(file) = checked.map.find(&path.display().to_string()) else { return };
        if self.catalog.is_none() {
            self.catalog = check::signatures::cached_catalog(&self.worker_exe).map(|c| {
                let names = check::signatures::python_names(&c);
                (c, names)
            });
        }
        if let Some((catalog, _)) = self.catalog.as_ref().filter(|_| !checked.has_errors()) {
            checked.diags.extend(check::signatures::compare(&checked, catalog));
        }
        let locate = |f: FileId| self.file_uri(&checked.map, f);
        let diags = checked.diags.iter().filter(|d| d.primary_span().is_some_and(|s| s.file == file)).map(|d| convert::diagnostic(&checked.map, d, &locate)).collect();
        let _ = self.publish(uri, diags, Some(version));
        if let Some(doc) = self.docs.get_mut(path) {
            doc.good = Some(Analysis { checked, file, text });
        }
    }

    fn publish(&self, uri: Uri, diagnostics: Vec<lsp_types::Diagnostic>, version: Option<i32>) -> anyhow::Result<()> {
        let params = PublishDiagnosticsParams { uri, diagnostics, version };
        self.conn.sender.send(Notification::new(notif::PublishDiagnostics::METHOD.into(), params).into())?;
        Ok(())
    }

    /// The URI of a file of an analysis: the stdlib's are materialised copies.
    fn file_uri(&self, map: &SourceMap, file: FileId) -> Option<Uri> {
        let name = &map.get(file).name;
        match name.strip_prefix("<std>/") {
            Some(std_file) => convert::path_to_uri(&self.stdlib_dir.as_ref()?.join(std_file)),
            None => convert::path_to_uri(Path::new(name)),
        }
    }

    /// The document's last good analysis and the byte offset of a position in it.
    fn locate(&self, pos: &lsp_types::TextDocumentPositionParams) -> Option<(&Analysis, usize)> {
        let path = convert::uri_to_path(&pos.text_document.uri)?;
        let doc = self.docs.get(&path)?;
        let analysis = doc.good.as_ref()?;
        let offset = convert::offset(analysis.checked.map.get(analysis.file), pos.position);
        Some((analysis, offset))
    }

    fn hover(&self, pos: &lsp_types::TextDocumentPositionParams) -> Option<Hover> {
        let (a, offset) = self.locate(pos)?;
        let sym = a.checked.symbols.at(a.file, offset)?;
        Some(Hover {
            contents: HoverContents::Markup(MarkupContent { kind: MarkupKind::Markdown, value: sym.hover.clone() }),
            range: Some(convert::range(a.checked.map.get(a.file), sym.span)),
        })
    }

    fn definition(&self, pos: &lsp_types::TextDocumentPositionParams) -> Option<GotoDefinitionResponse> {
        let (a, offset) = self.locate(pos)?;
        let def = a.checked.symbols.at(a.file, offset)?.def?;
        let uri = self.file_uri(&a.checked.map, def.file)?;
        Some(GotoDefinitionResponse::Scalar(Location { uri, range: convert::range(a.checked.map.get(def.file), def) }))
    }

    fn completion(&self, pos: &lsp_types::TextDocumentPositionParams) -> Option<Vec<lsp_types::CompletionItem>> {
        let path = convert::uri_to_path(&pos.text_document.uri)?;
        let doc = self.docs.get(&path)?;
        // The context is read from the current text, the names from the last good analysis.
        let current = SourceFile::new("", doc.text.clone());
        let offset = convert::offset(&current, pos.position);
        let before = &doc.text[..offset];
        let empty = Vec::new();
        let (scope, visible, apis) = match &doc.good {
            Some(a) => {
                // The same place in the analysed text: the drift is what was typed since.
                let drift = doc.text.len() as isize - a.text.len() as isize;
                let at = (offset as isize - drift.max(0)).max(0) as usize;
                let scope = a.checked.symbols.scope_at(a.file, at);
                let visible = a.checked.symbols.visible.get(&a.file).unwrap_or(&empty);
                (scope, visible, a.checked.spec.apis.iter().map(|x| x.name.clone()).collect())
            }
            None => (None, &empty, Vec::new()),
        };
        let torch_apis = self.catalog.as_ref().map_or(&[][..], |(_, names)| names.as_slice());
        let names = completion::Names { scope, visible, apis, torch_apis };
        Some(completion::complete(before, &names))
    }

    fn formatting(&self, uri: &Uri) -> Option<Vec<TextEdit>> {
        let path = convert::uri_to_path(uri)?;
        let doc = self.docs.get(&path)?;
        // A text with syntax errors is not formatted: no edits.
        let formatted = crate::fmt::format_text(&doc.text).ok()?;
        if formatted == doc.text {
            return Some(Vec::new());
        }
        let file = SourceFile::new("", doc.text.clone());
        let range = lsp_types::Range { start: convert::position(&file, 0), end: convert::position(&file, doc.text.len()) };
        Some(vec![TextEdit { range, new_text: formatted }])
    }
}

/// Applies one change: a range replaced, or the whole text when there is no range.
fn apply_change(text: &mut String, change: TextDocumentContentChangeEvent) {
    match change.range {
        Some(range) => {
            let file = SourceFile::new("", std::mem::take(text));
            let lo = convert::offset(&file, range.start);
            let hi = convert::offset(&file, range.end).max(lo);
            let mut s = file.text;
            s.replace_range(lo..hi, &change.text);
            *text = s;
        }
        None => *text = change.text,
    }
}

/// Writes the embedded stdlib to the cache directory, so that go to definition can open it.
fn materialize_stdlib() -> Option<PathBuf> {
    let dir = check::cache_dir().unwrap_or_else(std::env::temp_dir).join(format!("stdlib-{}", env!("CARGO_PKG_VERSION")));
    std::fs::create_dir_all(&dir).ok()?;
    for (name, src) in crate::stdlib::MODULES {
        let path = dir.join(format!("{name}.sfz"));
        if std::fs::read_to_string(&path).ok().as_deref() != Some(src) {
            std::fs::write(&path, src).ok()?;
        }
    }
    Some(dir)
}

fn bug_message() -> String {
    "sfz lsp hit an internal error: this is a bug in sfz. Please report it with the file you were editing.".into()
}
