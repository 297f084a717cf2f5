//! Presenting diagnostics: the terminal (codespan-reporting) and JSON for tools. The language
//! server has its own thin adapter in `lsp`; all three read the same `Diagnostic`.
use codespan_reporting::diagnostic as cs;
use codespan_reporting::files::{self, Files};
use codespan_reporting::term::{self, termcolor};

use super::{Diagnostic, FileId, Severity, SourceMap};

/// Terminal rendering options.
#[derive(Clone, Copy, Debug, Default)]
pub struct RenderConfig {
    pub color: bool,
}

/// Renders one diagnostic as text (rustc style), with ANSI colours when asked.
pub fn render(map: &SourceMap, diag: &Diagnostic, config: RenderConfig) -> String {
    let cs_diag = to_codespan(diag);
    let term_config = term::Config::default();
    if config.color {
        let mut buf = termcolor::Buffer::ansi();
        let styles = term::Styles::default();
        let mut writer = term::StylesWriter::new(&mut buf, &styles);
        if term::emit_to_write_style(&mut writer, &term_config, map, &cs_diag).is_ok() {
            return String::from_utf8_lossy(buf.as_slice()).into_owned();
        }
    }
    term::emit_into_string(&term_config, map, &cs_diag).unwrap_or_else(|e| format!("{}: {} ({e})\n", diag.code, diag.message))
}

/// Renders many diagnostics, one after another.
pub fn render_all(map: &SourceMap, diags: &[Diagnostic], config: RenderConfig) -> String {
    diags.iter().map(|d| render(map, d, config)).collect()
}

fn to_codespan(diag: &Diagnostic) -> cs::Diagnostic<FileId> {
    let base = match diag.severity {
        Severity::Error => cs::Diagnostic::error(),
        Severity::Warning => cs::Diagnostic::warning(),
    };
    let labels = diag
        .labels
        .iter()
        .map(|l| {
            let label = if l.primary { cs::Label::primary(l.span.file, l.span.range()) } else { cs::Label::secondary(l.span.file, l.span.range()) };
            label.with_message(l.message.clone())
        })
        .collect();
    let mut notes = diag.notes.iter().map(|n| format!("note: {n}")).collect::<Vec<_>>();
    if let Some(help) = &diag.help {
        notes.push(format!("help: {help}"));
    }
    base.with_code(diag.code.as_str()).with_message(diag.message.clone()).with_labels(labels).with_notes(notes)
}

/// A diagnostic as a JSON object: code, severity, message, file, 1-based line and column of the
/// primary label, labels with byte offsets, notes and help.
pub fn to_json(map: &SourceMap, diag: &Diagnostic) -> serde_json::Value {
    let label = |l: &super::Label| {
        let file = map.get(l.span.file);
        let (line, col) = file.line_col_utf16(l.span.lo as usize);
        serde_json::json!({
            "file": file.name,
            "start": l.span.lo,
            "end": l.span.hi,
            "line": line + 1,
            "column": col + 1,
            "message": l.message,
            "primary": l.primary,
        })
    };
    let primary = diag.labels.iter().find(|l| l.primary);
    serde_json::json!({
        "code": diag.code.as_str(),
        "severity": diag.severity,
        "message": diag.message,
        "file": primary.map(|l| map.get(l.span.file).name.clone()),
        "line": primary.map(|l| map.get(l.span.file).line_col_utf16(l.span.lo as usize).0 + 1),
        "column": primary.map(|l| map.get(l.span.file).line_col_utf16(l.span.lo as usize).1 + 1),
        "labels": diag.labels.iter().map(label).collect::<Vec<_>>(),
        "notes": diag.notes,
        "help": diag.help,
    })
}

impl<'a> Files<'a> for SourceMap {
    type FileId = FileId;
    type Name = &'a str;
    type Source = &'a str;

    fn name(&'a self, id: FileId) -> Result<&'a str, files::Error> {
        self.checked(id).map(|f| f.name.as_str())
    }

    fn source(&'a self, id: FileId) -> Result<&'a str, files::Error> {
        self.checked(id).map(|f| f.text.as_str())
    }

    fn line_index(&'a self, id: FileId, byte_index: usize) -> Result<usize, files::Error> {
        Ok(self.checked(id)?.line_of(byte_index))
    }

    fn line_range(&'a self, id: FileId, line_index: usize) -> Result<std::ops::Range<usize>, files::Error> {
        let file = self.checked(id)?;
        let starts = file.line_starts();
        let start = *starts.get(line_index).ok_or(files::Error::LineTooLarge { given: line_index, max: starts.len() - 1 })?;
        let end = starts.get(line_index + 1).copied().unwrap_or(file.text.len());
        Ok(start..end)
    }
}

impl SourceMap {
    fn checked(&self, id: FileId) -> Result<&super::SourceFile, files::Error> {
        if (id.0 as usize) < self.len() {
            Ok(self.get(id))
        } else {
            Err(files::Error::FileMissing)
        }
    }
}
