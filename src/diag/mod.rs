//! Diagnostics: one renderer-neutral `Diagnostic` value that the terminal renderer, the JSON
//! output and the language server all present, so message text has a single source.
pub mod codes;
mod render;
mod source;
pub mod suggest;

pub use codes::{lookup, Code, CodeInfo, CODES};
pub use render::{render, render_all, to_json, RenderConfig};
pub use source::{reading_spans_of, FileId, SourceFile, SourceMap, Span};

/// How bad a diagnostic is. Errors make `sfz check` exit 1; warnings do not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// A source location with a message saying what is there.
#[derive(Clone, Debug, PartialEq)]
pub struct Label {
    pub span: Span,
    pub message: String,
    /// The primary label is where the problem is; secondary ones give context.
    pub primary: bool,
}

/// A problem found in a spec.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    pub code: Code,
    pub severity: Severity,
    /// A short lower-case title stating the problem.
    pub message: String,
    pub labels: Vec<Label>,
    /// Facts: expected vs found, what the constraint was.
    pub notes: Vec<String>,
    /// How to fix it.
    pub help: Option<String>,
}

impl Diagnostic {
    /// An error or warning (as its code's registry entry says) with a message and no labels yet.
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Diagnostic { code, severity: code.info().severity, message: message.into(), labels: Vec::new(), notes: Vec::new(), help: None }
    }

    pub fn with_label(mut self, span: Span, message: impl Into<String>) -> Self {
        let primary = self.labels.iter().all(|l| !l.primary);
        self.labels.push(Label { span, message: message.into(), primary });
        self
    }

    pub fn with_secondary(mut self, span: Span, message: impl Into<String>) -> Self {
        self.labels.push(Label { span, message: message.into(), primary: false });
        self
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// The primary span, if any label has one.
    pub fn primary_span(&self) -> Option<Span> {
        self.labels.iter().find(|l| l.primary).map(|l| l.span)
    }
}

/// Sorts diagnostics by file and position, errors before warnings at the same place.
pub fn sort(diags: &mut [Diagnostic]) {
    diags.sort_by_key(|d| {
        let s = d.primary_span().unwrap_or_default();
        (s.file, s.lo, s.hi, d.severity)
    });
}
