//! The counts a complaint names. libtorch says which rank or length it wanted ("Expected 2D or 3D
//! tensor", "kernel_size must be ... of size 1", "offsets has to be a 1D Tensor"), but the
//! complaint's key (`oracle::errors::complaint`) writes every number as `N`, so that one check
//! is one key. The search reads the numbers back from one raw message and ranks first the
//! candidates that fix a rank or a length to one of them (`x.ndim == 2`, `len(kernel_size) == 1`).
use crate::spec::{BinOp, Builtin, Constraint, Prop, TExpr, Value};

/// The small numbers (0 to 8) a line of libtorch's message (the first, as `infer` keeps it)
/// states as wanted: those standing alone as a word or before a unit (`2D`, `3-D`, `1-dim`), in
/// the part before what it got (`but got`, `got`, `instead`), which describes the rejected
/// input. Digits inside a name (`conv3d`, `_weight_int8pack_mm`) are not counts.
pub fn named(line: &str) -> Vec<i64> {
    let lower = line.to_ascii_lowercase();
    let end = ["but got", ", got", " got ", "got:", "instead", "but received", ", received"].iter().filter_map(|t| lower.find(t)).min().unwrap_or(lower.len());
    let wanted = &lower[..end];
    let bytes = wanted.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !bytes[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        // Digits after a letter are part of a name (`conv3d`); after a minus sign, a negative number.
        let inside_name = start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || matches!(bytes[start - 1], b'_' | b'.' | b'-'));
        // A count stands alone (`size 1`, `3-D`) or carries the unit of a rank (`2D`, `1dim`);
        // glued to other letters it is a width (`8bit`) or a shape (`2x3`), before a digit after
        // a point a fraction.
        let rest = &wanted[i..];
        let alone = match rest.as_bytes().first() {
            None => true,
            Some(b'.') => !rest[1..].starts_with(|c: char| c.is_ascii_digit()),
            Some(&c) => !c.is_ascii_alphanumeric() && c != b'_',
        };
        let with_unit = rest.starts_with('d') && !rest[1..].starts_with(|c: char| c.is_ascii_alphabetic() && c != 'i');
        if inside_name || !(alone || with_unit) || quoted_size(wanted, start, i) || position(&wanted[..start]) {
            continue;
        }
        if let Ok(n) = wanted[start..i].parse::<i64>() {
            if n <= 8 && !out.contains(&n) {
                out.push(n);
            }
        }
    }
    // Counts in words ("at least three dimensions"); not "one", which is mostly "one of". A
    // vector is 1-d and a matrix 2-d ("Expected non-empty vector or matrix", "Index is supposed
    // to be a vector"), as words of their own, not inside a name (`matrix_norm` is one word).
    for w in crate::rules::words(wanted) {
        let n = match w {
            "vector" => 1,
            "matrix" => 2,
            "two" => 2,
            "three" => 3,
            "four" => 4,
            "five" => 5,
            _ => continue,
        };
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

/// Whether the number at `start..end` is one of a list of numbers in brackets or parentheses: a
/// size or shape quoted from the input ("The size of tensor a (3) must match", "Expected target
/// size [2]"), or a range of values ("in the range [0, 1]"), not a count wanted.
fn quoted_size(text: &str, start: usize, end: usize) -> bool {
    let listed = |c: char| c.is_ascii_digit() || matches!(c, ' ' | ',' | '-' | '.');
    let before = text[..start].trim_end_matches(listed);
    let after = text[end..].trim_start_matches(listed);
    (before.ends_with('[') && after.starts_with(']')) || (before.ends_with('(') && after.starts_with(')'))
}

/// Whether a number after `before` is a position along the dimensions ("at non-singleton
/// dimension 1", "apart from dimension 0", "for dimension 2 with size 3"), not a rank.
fn position(before: &str) -> bool {
    let mut words = before.split_whitespace().rev();
    matches!(words.next(), Some("dimension" | "dim")) && matches!(words.next(), Some("at" | "from" | "for" | "along" | "non-singleton" | "singleton"))
}

/// The ranks or lengths a one-statement candidate fixes or bounds: `x.ndim == 2` → [2],
/// `x.ndim in 2..=3` → [2, 3], `len(l) == 1` → [1], `x.ndim >= 2` → [2]; and the size it fixes
/// (`grid.shape[-1] == 2` → [2], as "expected grid to have size 2 in last dimension" stated
/// it); None for any other rule.
pub fn fixed(constraints: &[Constraint]) -> Option<Vec<i64>> {
    let [c] = constraints else { return None };
    let counted = |e: &TExpr| matches!(e, TExpr::Prop(_, Prop::Ndim | Prop::Len)) || matches!(e, TExpr::Call(Builtin::Len, _));
    let sized = |e: &TExpr| matches!(e, TExpr::Index(x, _) if matches!(&**x, TExpr::Prop(_, Prop::Shape)));
    let int = |e: &TExpr| if let TExpr::Lit(Value::Int(n)) = e { Some(*n) } else { None };
    // The rank of each element of a list (`forall t in xs: t.ndim == 1`) is a rank too.
    let expr = match &c.expr {
        TExpr::Forall { body, .. } => &**body,
        e => e,
    };
    match expr {
        TExpr::Binary(BinOp::Eq | BinOp::Ge | BinOp::Le, l, r) if counted(l) => int(r).map(|n| vec![n]),
        TExpr::Binary(BinOp::Eq, l, r) if sized(l) => int(r).map(|n| vec![n]),
        TExpr::Binary(BinOp::In, l, r) if counted(l) => match &**r {
            TExpr::Range { lo, hi, inclusive } => {
                let (lo, hi) = (int(lo)?, int(hi)?);
                let hi = if *inclusive { hi } else { hi - 1 };
                (hi >= lo && hi - lo < 8).then(|| (lo..=hi).collect())
            }
            TExpr::List(items) => items.iter().map(int).collect(),
            _ => None,
        },
        _ => None,
    }
}

/// Whether a candidate fixes counts and the complaint names each of them (1), or not (0).
pub fn hinted(named: &[i64], constraints: &[Constraint]) -> usize {
    usize::from(!named.is_empty() && fixed(constraints).is_some_and(|f| f.iter().all(|n| named.contains(n))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_read_from_what_the_message_wanted() {
        let cases: [(&str, &[i64]); 9] = [
            ("max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for input, but got:[2, 3, 4, 5]", &[2, 3, 0]),
            ("max_pool1d() kernel_size must be an int, list of ints or tuple of ints of size 1 but got size 3", &[1]),
            ("offsets has to be a 1D Tensor, but got Tensor of dimension 2", &[1]),
            ("_weight_int8pack_mm_cpu : expect A to be 2D tensor.", &[2]),
            ("Expected 4D (unbatched) or 5D (batched) input to conv3d, but got input of size: [2, 3, 4]", &[4, 5]),
            ("torch.histogramdd: input tensor should have at least 2 dimensions", &[2]),
            ("Expected 3-D tensor, got 4-D", &[3]),
            ("linalg.matrix_norm: Order 3 not supported.", &[3]),
            ("weight should have at least three dimensions", &[3]),
        ];
        for (message, want) in cases {
            assert_eq!(named(message), want, "{message}");
        }
        // Sizes and shapes quoted from the input, value ranges and positions are not counts.
        assert_eq!(named("The size of tensor a (3) must match the size of tensor b (5) at non-singleton dimension 2"), Vec::<i64>::new());
        assert_eq!(named("quantile() q values must be in the range [0, 1]"), Vec::<i64>::new());
        assert_eq!(named("Expected index [2, 3] to be no larger than self [4, 5] apart from dimension 1"), Vec::<i64>::new());
        assert_eq!(named("Expected non-empty vector or matrix with optional 0-dim batch size, but got: [2, 3, 4]"), [0, 1, 2]);
        assert_eq!(named("linalg.matrix_norm: Order 3 not supported."), [3]);
        // Digits in names and widths are not counts.
        assert_eq!(named("\"max_pool2d\" not implemented for 'Half' in conv3d, 8bit"), Vec::<i64>::new());
        assert_eq!(named("max_pool1d() Invalid computed output size: -2"), Vec::<i64>::new());
    }

    #[test]
    fn candidates_fixing_a_named_count_are_hinted() {
        let spec = "api torch.f(x: Tensor, k: int[], xs: Tensor[]) -> Tensor {\n  requires x.ndim == 2;\n  requires x.ndim in 2..=3;\n  requires len(k) == 1;\n  requires x.ndim >= 4;\n  requires x.numel > 0;\n  requires forall t in xs: t.ndim == 1;\n  requires x.shape[-1] == 2;\n  requires x.shape[0] >= 1;\n}\n";
        let checked = crate::check::check_text(std::path::Path::new("t.sfz"), spec);
        let api = &checked.spec.apis[0];
        let fixed: Vec<Option<Vec<i64>>> = api.requires.iter().map(|c| fixed(std::slice::from_ref(c))).collect();
        assert_eq!(fixed, [Some(vec![2]), Some(vec![2, 3]), Some(vec![1]), Some(vec![4]), None, Some(vec![1]), Some(vec![2]), None]);
        let named = named("Expected 2D or 3D tensor, size 1, but got 4");
        let hints: Vec<usize> = api.requires.iter().map(|c| hinted(&named, std::slice::from_ref(c))).collect();
        assert_eq!(hints, [1, 1, 1, 0, 0, 1, 1, 0]);
    }
}
