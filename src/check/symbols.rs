//! What the checker learned about names, for the language server: each resolved reference with
//! its definition's span and a hover text. Recorded as a side effect of checking, so the editor
//! and `sfz check` can never disagree about what a name means.
use crate::diag::Span;

/// One resolved use of a name.
#[derive(Clone, Debug)]
pub struct SymbolRef {
    pub span: Span,
    /// Where the name is defined (None for built-ins).
    pub def: Option<Span>,
    /// Markdown shown on hover: the name's type or its doc comment.
    pub hover: String,
}

#[derive(Clone, Debug, Default)]
pub struct Symbols {
    pub refs: Vec<SymbolRef>,
}

impl Symbols {
    pub fn reference(&mut self, span: Span, def: Option<Span>, hover: String) {
        self.refs.push(SymbolRef { span, def, hover });
    }

    /// The innermost reference covering a byte offset of a file.
    pub fn at(&self, file: crate::diag::FileId, offset: usize) -> Option<&SymbolRef> {
        self.refs
            .iter()
            .filter(|r| r.span.file == file && r.span.contains(offset))
            .min_by_key(|r| r.span.hi - r.span.lo)
    }
}
