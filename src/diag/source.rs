//! Source files and byte spans into them.
use std::ops::Range;

/// Index of a file in a `SourceMap`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FileId(pub u32);

/// A byte range in one file. Spans are half-open: `lo..hi`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Span {
    pub file: FileId,
    pub lo: u32,
    pub hi: u32,
}

std::thread_local! {
    /// The file whose spans are being read back (`Span`'s `Deserialize`).
    static READING: std::cell::Cell<FileId> = const { std::cell::Cell::new(FileId(0)) };
}

/// Runs `f`, reading back every span it deserializes as a span of `file`. A stored syntax tree
/// (the parse cache) is of one file's text, whichever id that file has in this run, so spans
/// are stored without it.
pub fn reading_spans_of<T>(file: FileId, f: impl FnOnce() -> T) -> T {
    let before = READING.with(|r| r.replace(file));
    let out = f();
    READING.with(|r| r.set(before));
    out
}

impl serde::Serialize for Span {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (self.lo, self.hi).serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for Span {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Span, D::Error> {
        let (lo, hi) = <(u32, u32)>::deserialize(d)?;
        Ok(Span { file: READING.with(|r| r.get()), lo, hi })
    }
}

impl Span {
    pub fn new(file: FileId, lo: usize, hi: usize) -> Span {
        Span { file, lo: lo as u32, hi: hi as u32 }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span { file: self.file, lo: self.lo.min(other.lo), hi: self.hi.max(other.hi) }
    }

    pub fn range(self) -> Range<usize> {
        self.lo as usize..self.hi as usize
    }

    pub fn contains(self, offset: usize) -> bool {
        (self.lo as usize) <= offset && offset <= (self.hi as usize)
    }
}

/// One loaded file: a display name (usually its path) and its text.
#[derive(Clone, Debug)]
pub struct SourceFile {
    pub name: String,
    pub text: String,
    line_starts: Vec<usize>,
}

impl SourceFile {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Self {
        let text = text.into();
        let line_starts = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect();
        SourceFile { name: name.into(), text, line_starts }
    }

    /// Zero-based line and UTF-16 column of a byte offset (what LSP positions count).
    pub fn line_col_utf16(&self, offset: usize) -> (u32, u32) {
        let offset = offset.min(self.text.len());
        let line = self.line_of(offset);
        let start = self.line_starts[line];
        let col = self.text.get(start..offset).map(|s| s.encode_utf16().count()).unwrap_or(0);
        (line as u32, col as u32)
    }

    /// Byte offset of an LSP position (line, UTF-16 column), clamped to the text.
    pub fn offset_utf16(&self, line: u32, col: u32) -> usize {
        let Some(&start) = self.line_starts.get(line as usize) else { return self.text.len() };
        let mut units = 0u32;
        for (i, ch) in self.text[start..].char_indices() {
            if units >= col || ch == '\n' {
                return start + i;
            }
            units += ch.len_utf16() as u32;
        }
        self.text.len()
    }

    pub fn line_of(&self, offset: usize) -> usize {
        match self.line_starts.binary_search(&offset) {
            Ok(l) => l,
            Err(l) => l - 1,
        }
    }

    pub fn line_starts(&self) -> &[usize] {
        &self.line_starts
    }

    /// The text a span covers ("" when it does not fall on this file's character boundaries).
    pub fn slice(&self, span: Span) -> &str {
        self.text.get(span.range()).unwrap_or("")
    }
}

/// All files of one check, addressed by `FileId`.
#[derive(Clone, Debug, Default)]
pub struct SourceMap {
    files: Vec<SourceFile>,
}

impl SourceMap {
    pub fn add(&mut self, name: impl Into<String>, text: impl Into<String>) -> FileId {
        self.files.push(SourceFile::new(name, text));
        FileId(self.files.len() as u32 - 1)
    }

    pub fn get(&self, id: FileId) -> &SourceFile {
        &self.files[id.0 as usize]
    }

    pub fn find(&self, name: &str) -> Option<FileId> {
        self.files.iter().position(|f| f.name == name).map(|i| FileId(i as u32))
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    pub fn ids(&self) -> impl Iterator<Item = FileId> {
        (0..self.files.len() as u32).map(FileId)
    }

    pub fn slice(&self, span: Span) -> &str {
        self.get(span.file).slice(span)
    }
}
