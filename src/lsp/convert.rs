//! Between sfz's values and the protocol's: file URIs and paths, byte offsets and UTF-16
//! positions, and the one adapter from `diag::Diagnostic` to `lsp_types::Diagnostic` (the message
//! text is the checker's; nothing here words a problem anew).
use std::path::{Path, PathBuf};
use std::str::FromStr;

use lsp_types::{DiagnosticRelatedInformation, DiagnosticSeverity, Location, NumberOrString, Position, Range, Uri};

use crate::diag::{Diagnostic, FileId, Severity, SourceFile, SourceMap, Span};

/// `file:///a/b%20c.sfz` for `/a/b c.sfz`.
pub fn path_to_uri(path: &Path) -> Option<Uri> {
    let mut s = String::from("file://");
    for b in path.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    Uri::from_str(&s).ok()
}

/// The path of a `file:` URI (percent escapes decoded); None for other schemes.
pub fn uri_to_path(uri: &Uri) -> Option<PathBuf> {
    let rest = uri.as_str().strip_prefix("file://")?;
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1).copied().and_then(hex), bytes.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, ..) => {
                out.push(b);
                i += 1;
            }
        }
    }
    Some(PathBuf::from(String::from_utf8(out).ok()?))
}

pub fn position(file: &SourceFile, offset: usize) -> Position {
    let (line, character) = file.line_col_utf16(offset);
    Position { line, character }
}

pub fn range(file: &SourceFile, span: Span) -> Range {
    Range { start: position(file, span.lo as usize), end: position(file, span.hi as usize) }
}

pub fn offset(file: &SourceFile, pos: Position) -> usize {
    file.offset_utf16(pos.line, pos.character)
}

/// The protocol's form of a diagnostic. The primary label gives the range and ends the first
/// line of the message; secondary labels become related information (where `locate` knows
/// their file); notes and help follow as lines.
pub fn diagnostic(map: &SourceMap, d: &Diagnostic, locate: &dyn Fn(FileId) -> Option<Uri>) -> lsp_types::Diagnostic {
    let primary = d.labels.iter().find(|l| l.primary);
    let at = primary.map_or_else(Range::default, |l| range(map.get(l.span.file), l.span));
    let mut message = d.message.clone();
    if let Some(l) = primary.filter(|l| !l.message.is_empty()) {
        message.push_str(&format!("\n{}", l.message));
    }
    for n in &d.notes {
        message.push_str(&format!("\nnote: {n}"));
    }
    if let Some(h) = &d.help {
        message.push_str(&format!("\nhelp: {h}"));
    }
    let related: Vec<DiagnosticRelatedInformation> = d
        .labels
        .iter()
        .filter(|l| !l.primary)
        .filter_map(|l| {
            let uri = locate(l.span.file)?;
            Some(DiagnosticRelatedInformation { location: Location { uri, range: range(map.get(l.span.file), l.span) }, message: l.message.clone() })
        })
        .collect();
    lsp_types::Diagnostic {
        range: at,
        severity: Some(match d.severity {
            Severity::Error => DiagnosticSeverity::ERROR,
            Severity::Warning => DiagnosticSeverity::WARNING,
        }),
        code: Some(NumberOrString::String(d.code.as_str().to_string())),
        source: Some("sfz".into()),
        message,
        related_information: (!related.is_empty()).then_some(related),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_round_trip_through_uris() {
        for p in ["/a/b.sfz", "/with space/é.sfz", "/x%y/z#w.sfz"] {
            let uri = path_to_uri(Path::new(p)).expect("valid uri");
            assert_eq!(uri_to_path(&uri).as_deref(), Some(Path::new(p)), "{}", uri.as_str());
        }
        assert_eq!(path_to_uri(Path::new("/a b")).map(|u| u.as_str().to_string()).as_deref(), Some("file:///a%20b"));
    }

    #[test]
    fn positions_count_utf16_units() {
        let f = SourceFile::new("t", "é𝄞x\nab");
        // é is one unit, 𝄞 two: x is at column 3.
        assert_eq!(position(&f, "é𝄞".len()), Position { line: 0, character: 3 });
        assert_eq!(offset(&f, Position { line: 0, character: 3 }), "é𝄞".len());
        assert_eq!(offset(&f, Position { line: 1, character: 1 }), "é𝄞x\na".len());
        // Past the end of a line or the file clamps.
        assert_eq!(offset(&f, Position { line: 0, character: 99 }), "é𝄞x".len());
        assert_eq!(offset(&f, Position { line: 9, character: 0 }), f.text.len());
    }
}
