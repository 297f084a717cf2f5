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

/// The offset of the first operator past `max` in one statement (between `;`, `{` and `}`),
/// outside strings and comments. Operators, brackets and the keywords that build expressions
/// each count once: together they bound how deep an expression's tree can be, which brackets
/// alone do not (`not not not ...`, `a => a => ...` and `x.a.b.c...` nest without them).
pub fn too_complex(text: &str, max: usize) -> Option<usize> {
    const WORDS: &[&str] = &["not", "and", "or", "in", "if", "then", "else", "forall", "exists"];
    let mut skip = Vec::new();
    scan(text, |lo, hi, _| skip.push((lo, hi)));
    let mut skip = skip.into_iter().peekable();
    let b = text.as_bytes();
    let mut count = 0usize;
    let mut i = 0;
    while i < b.len() {
        while skip.peek().is_some_and(|&(_, hi)| hi <= i) {
            skip.next();
        }
        if let Some(&(lo, hi)) = skip.peek() {
            if lo <= i {
                i = hi;
                continue;
            }
        }
        let c = b[i];
        let mut len = 1;
        match c {
            b';' | b'{' | b'}' => count = 0,
            b'a'..=b'z' | b'A'..=b'Z' | b'_' | b'0'..=b'9' => {
                len = b[i..].iter().take_while(|c| c.is_ascii_alphanumeric() || **c == b'_').count();
                if c.is_ascii_lowercase() && WORDS.contains(&&text[i..i + len]) {
                    count += 1;
                }
            }
            b'=' | b'!' | b'<' | b'>' | b'&' | b'|' | b'.' | b'+' | b'-' | b'*' | b'/' | b'%' | b'(' | b'[' => {
                // Two-character operators (`==`, `..`, `=>`, `&&`) count once; a bare `=`
                // (a default, a named argument) not at all.
                len = match b.get(i + 1) {
                    Some(b'=' | b'>' | b'&' | b'|' | b'.') if c != b'(' && c != b'[' => 2,
                    _ => 1,
                };
                if !(c == b'=' && len == 1) {
                    count += 1;
                }
            }
            _ => {}
        }
        if count > max {
            return Some(i);
        }
        i += len;
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
        // A `//` comment, but not a `///` doc comment (`////` is a plain comment again).
        let doc = rest.starts_with("///") && !rest.starts_with("////");
        if rest.starts_with("//") && !doc {
            pos = rest.find('\n').map_or(text.len(), |n| pos + n);
        } else if let Some(body) = rest.strip_prefix("/*") {
            pos = body.find("*/").map_or(text.len(), |n| pos + 2 + n + 2);
        } else {
            return pos;
        }
    }
}

/// The start of the next line after `pos` that begins (in column 0) with an item keyword, an
/// attribute or a doc comment, outside block comments (`comments`, sorted); the end of the text
/// if there is none.
pub fn next_item_start(text: &str, comments: &[Comment], pos: usize) -> usize {
    // Bytes, not chars: `at` may fall inside a character (the last byte of a comment).
    let next_line = |at: usize| text.as_bytes()[at..].iter().position(|&b| b == b'\n').map_or(text.len(), |n| at + n + 1);
    let mut line_start = next_line(pos.min(text.len()));
    while line_start < text.len() {
        // Inside a block comment: continue after it.
        let i = comments.partition_point(|c| (c.span.lo as usize) < line_start);
        if let Some(c) = i.checked_sub(1).map(|i| &comments[i]).filter(|c| c.span.hi as usize > line_start) {
            line_start = next_line(c.span.hi as usize - 1);
            continue;
        }
        let line = &text[line_start..];
        let starts_item = line.starts_with("#[")
            || (line.starts_with("///") && !line.starts_with("////"))
            || ITEM_STARTS.iter().any(|kw| line.starts_with(kw) && !line[kw.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_'));
        if starts_item {
            return line_start;
        }
        line_start = next_line(line_start);
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
    fn complexity_counts_operators_per_statement() {
        assert_eq!(too_complex("not not x; not not x;", 2), None);
        assert_eq!(too_complex("not not not x;", 2), Some(8));
        // `==` is one operator, `=` none, strings and comments nothing.
        assert_eq!(too_complex("a == b = c \"and and\" // or or\n", 1), None);
        assert_eq!(too_complex("x.a.b", 1), Some(3));
    }

    #[test]
    fn recovery_resumes_at_column_zero_keywords() {
        let text = "api broken(\n  x: int\napi ok() {}\n";
        assert_eq!(&text[next_item_start(text, &[], 0)..], "api ok() {}\n");
        let text = "api a(\n/*\napi no\n*/\napi yes\n";
        assert_eq!(&text[next_item_start(text, &comments(FileId(0), text), 0)..], "api yes\n");
    }

    #[test]
    fn doc_comments_are_not_trivia() {
        assert_eq!(skip_trivia("  // c\n/// doc\napi", 0), 7);
    }
}
