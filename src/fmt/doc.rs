//! A small Wadler-style pretty printer: the formatter builds a `Doc` and `render` lays it out
//! within a width, breaking the outermost groups that do not fit first (the algorithm Prettier
//! uses: a group is flat when it and the text up to the next possible break fit on the line).

/// A document: text with places where a line may break.
#[derive(Clone, Debug)]
pub enum Doc {
    Text(String),
    /// A space when its group is flat, a newline (plus indentation) when broken.
    Line,
    /// Nothing when flat, a newline when broken.
    SoftLine,
    /// Always a newline; the groups around it are broken.
    HardLine,
    /// Raises the indentation of the lines inside by this many columns.
    Nest(usize, Box<Doc>),
    /// Laid out flat if it fits, else broken. `forced` when it holds a `HardLine`.
    Group {
        doc: Box<Doc>,
        forced: bool,
    },
    /// The first when the enclosing group is broken, the second when flat.
    IfBreak(Box<Doc>, Box<Doc>),
    Concat(Vec<Doc>),
}

pub fn text(s: impl Into<String>) -> Doc {
    Doc::Text(s.into())
}

pub fn concat(parts: impl IntoIterator<Item = Doc>) -> Doc {
    Doc::Concat(parts.into_iter().collect())
}

pub fn nest(indent: usize, doc: Doc) -> Doc {
    Doc::Nest(indent, Box::new(doc))
}

pub fn group(doc: Doc) -> Doc {
    let forced = doc.has_hard_line();
    Doc::Group { doc: Box::new(doc), forced }
}

pub fn if_break(broken: Doc, flat: Doc) -> Doc {
    Doc::IfBreak(Box::new(broken), Box::new(flat))
}

impl Doc {
    fn has_hard_line(&self) -> bool {
        match self {
            Doc::HardLine => true,
            // A multi-line text (a block comment) cannot be laid out flat either.
            Doc::Text(s) => s.contains('\n'),
            Doc::Line | Doc::SoftLine => false,
            Doc::Nest(_, d) => d.has_hard_line(),
            Doc::Group { forced, .. } => *forced,
            Doc::IfBreak(b, f) => b.has_hard_line() || f.has_hard_line(),
            Doc::Concat(ds) => ds.iter().any(Doc::has_hard_line),
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Flat,
    Break,
}

/// Lays the document out within `width` columns. Lines carry no trailing whitespace.
pub fn render(doc: &Doc, width: usize) -> String {
    let mut out = String::new();
    let mut col = 0usize;
    let mut stack: Vec<(usize, Mode, &Doc)> = vec![(0, Mode::Break, doc)];
    while let Some((indent, mode, d)) = stack.pop() {
        match d {
            Doc::Text(s) => {
                out.push_str(s);
                col = match s.rfind('\n') {
                    Some(i) => s.len() - i - 1,
                    None => col + s.chars().count(),
                };
            }
            Doc::Line | Doc::SoftLine if mode == Mode::Flat => {
                if matches!(d, Doc::Line) {
                    out.push(' ');
                    col += 1;
                }
            }
            Doc::Line | Doc::SoftLine | Doc::HardLine => {
                while out.ends_with(' ') {
                    out.pop();
                }
                out.push('\n');
                out.extend(std::iter::repeat_n(' ', indent));
                col = indent;
            }
            Doc::Nest(n, inner) => stack.push((indent + n, mode, inner)),
            Doc::Group { doc: inner, forced } => {
                let flat = !forced && fits(width.saturating_sub(col) as isize, (indent, Mode::Flat, inner), &stack);
                stack.push((indent, if flat { Mode::Flat } else { Mode::Break }, inner));
            }
            Doc::IfBreak(broken, flat) => stack.push((indent, mode, if mode == Mode::Break { broken } else { flat })),
            Doc::Concat(parts) => stack.extend(parts.iter().rev().map(|p| (indent, mode, p))),
        }
    }
    while out.ends_with(' ') {
        out.pop();
    }
    out
}

/// Whether `next` laid out flat, followed by the rest up to its first line break, fits in
/// `room` columns.
fn fits(mut room: isize, next: (usize, Mode, &Doc), rest: &[(usize, Mode, &Doc)]) -> bool {
    let mut local = vec![next];
    let mut rest = rest.iter().rev();
    loop {
        if room < 0 {
            return false;
        }
        let (indent, mode, d) = match local.pop() {
            Some(x) => x,
            None => match rest.next() {
                Some(&x) => x,
                None => return true,
            },
        };
        match d {
            Doc::Text(s) => {
                if s.contains('\n') {
                    return mode == Mode::Break;
                }
                room -= s.chars().count() as isize;
            }
            Doc::Line if mode == Mode::Flat => room -= 1,
            Doc::SoftLine if mode == Mode::Flat => {}
            Doc::Line | Doc::SoftLine | Doc::HardLine => return true,
            Doc::Nest(n, inner) => local.push((indent + n, mode, inner)),
            // Inside the group being measured everything is flat. A later group is measured in
            // the mode around it: after a broken one its first break ends the line, and the
            // group decides for itself when its turn comes.
            Doc::Group { doc: inner, forced } => {
                if *forced && mode == Mode::Flat {
                    return false;
                }
                local.push((indent, if *forced { Mode::Break } else { mode }, inner));
            }
            Doc::IfBreak(broken, flat) => local.push((indent, mode, if mode == Mode::Break { broken } else { flat })),
            Doc::Concat(parts) => local.extend(parts.iter().rev().map(|p| (indent, mode, p))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> Doc {
        let mut parts = vec![text("(")];
        let mut inner = vec![Doc::SoftLine];
        for (i, it) in items.iter().enumerate() {
            if i > 0 {
                inner.push(text(","));
                inner.push(Doc::Line);
            }
            inner.push(text(*it));
        }
        inner.push(if_break(text(","), text("")));
        parts.push(nest(4, concat(inner)));
        parts.push(Doc::SoftLine);
        parts.push(text(")"));
        group(concat(parts))
    }

    #[test]
    fn a_group_that_fits_stays_flat() {
        assert_eq!(render(&list(&["a", "b"]), 20), "(a, b)");
    }

    #[test]
    fn a_group_that_does_not_fit_breaks_with_a_trailing_comma() {
        assert_eq!(render(&list(&["alpha", "beta"]), 10), "(\n    alpha,\n    beta,\n)");
    }

    #[test]
    fn text_after_a_group_counts_toward_its_fit() {
        let d = concat([list(&["a", "b"]), text(" -> something long")]);
        assert_eq!(render(&d, 12), "(\n    a,\n    b,\n) -> something long");
    }

    #[test]
    fn a_hard_line_forces_its_group() {
        let d = group(concat([text("a"), Doc::Line, text("b"), Doc::HardLine, text("c")]));
        assert_eq!(render(&d, 80), "a\nb\nc");
    }
}
