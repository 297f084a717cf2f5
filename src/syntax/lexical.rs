//! Small scans over raw text that the grammar does not do: comments for the formatter, the
//! nesting guard, and finding where to resume after an error.
use crate::ast::Comment;
use crate::diag::{FileId, Span};

/// Words that start an item at the beginning of a line: where recovery resumes.
const ITEM_STARTS: &[&str] = &["api", "rule", "program", "use", "dtypes", "constraints", "type", "oracle"];

/// Calls `f(start, end, kind)` for each comment and string in `text`, kind 'c' or 's'.
fn scan(text: &str, mut f: impl FnMut(usize, usize, char)) {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = text[i..].find('\n').map_or(b.len(), |n| i + n);
                f(i, end, 'c');
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let end = text[i + 2..].find("*/").map_or(b.len(), |n| i + 2 + n + 2);
                f(i, end, 'c');
                i = end;
            }
            b'"' => {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'"' && b[j] != b'\n' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                let end = (j + 1).min(b.len());
                f(i, end, 's');
                i = end;
            }
            _ => i += 1,
        }
    }
}

/// Ordinary comments (not `///` doc comments, which belong to the tree).
pub fn comments(file: FileId, text: &str) -> Vec<Comment> {
    let mut out = Vec::new();
    scan(text, |lo, hi, kind| {
        let s = &text[lo..hi];
        let is_doc = s.starts_with("///") && !s.starts_with("////");
        if kind == 'c' && !is_doc {
            out.push(Comment { span: Span::new(file, lo, hi), text: s.trim_end().to_string() });
        }
    });
    out
}

/// The offset of the first bracket nested deeper than `max`, outside strings and comments.
pub fn too_deep(text: &str, max: usize) -> Option<usize> {
    let mut skip = Vec::new();
    scan(text, |lo, hi, _| skip.push((lo, hi)));
    let mut skip = skip.into_iter().peekable();
    let mut depth = 0usize;
    for (i, c) in text.bytes().enumerate() {
        while skip.peek().is_some_and(|&(_, hi)| hi <= i) {
            skip.next();
        }
        if skip.peek().is_some_and(|&(lo, _)| lo <= i) {
            continue;
        }
        match c {
            b'(' | b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return Some(i);
                }
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

/// Skips whitespace and ordinary comments from `pos`.
pub fn skip_trivia(text: &str, mut pos: usize) -> usize {
    let b = text.as_bytes();
    loop {
        while pos < b.len() && (b[pos].is_ascii_whitespace() || text[pos..].starts_with('\u{FEFF}')) {
            pos += if b[pos].is_ascii() { 1 } else { 3 };
        }
        let rest = &text[pos..];
        if rest.starts_with("//") && !(rest.starts_with("///") && !rest.starts_with("////")) {
            pos = rest.find('\n').map_or(text.len(), |n| pos + n);
        } else if rest.starts_with("/*") {
            pos = rest[2..].find("*/").map_or(text.len(), |n| pos + 2 + n + 2);
        } else {
            return pos;
        }
    }
}

/// The start of the next line after `pos` that begins (in column 0) with an item keyword, an
/// attribute or a doc comment; the end of the text if there is none.
pub fn next_item_start(text: &str, pos: usize) -> usize {
    let mut line_start = text[pos..].find('\n').map_or(text.len(), |n| pos + n + 1);
    while line_start < text.len() {
        let line = &text[line_start..];
        let starts_item = line.starts_with("#[")
            || (line.starts_with("///") && !line.starts_with("////"))
            || ITEM_STARTS.iter().any(|kw| {
                line.starts_with(kw) && !line[kw.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
            });
        if starts_item {
            return line_start;
        }
        line_start = line.find('\n').map_or(text.len(), |n| line_start + n + 1);
    }
    text.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_ignores_brackets_in_strings_and_comments() {
        assert_eq!(too_deep("(((\"((((((\"))) // ((((((", 3), None);
        assert_eq!(too_deep("((((", 3), Some(3));
    }

    #[test]
    fn recovery_resumes_at_column_zero_keywords() {
        let text = "api broken(\n  x: int\napi ok() {}\n";
        assert_eq!(&text[next_item_start(text, 0)..], "api ok() {}\n");
    }

    #[test]
    fn doc_comments_are_not_trivia() {
        assert_eq!(skip_trivia("  // c\n/// doc\napi", 0), 7);
    }
}
