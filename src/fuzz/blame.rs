//! Does libtorch's complaint name the constraint violate mode broke? A heuristic on the error
//! text: the message mentions one of the constraint's parameters by name, or uses words that
//! belong to the constraint's category (a dtype error says "dtype" or "scalar type", a rank
//! error "dimension" or "3D", a range error "out of range" or "must be"). Good enough for a rate
//! that tells a spec whose violations libtorch notices for the stated reason from one whose
//! violations fail for some other reason; the README reports it next to a hand check.
use crate::spec::Category;

/// Words that libtorch uses when it rejects an input for a reason of this category.
fn keywords(c: Category) -> &'static [&'static str] {
    match c {
        Category::Dtype => &[
            "dtype",
            "scalar type",
            "scalartype",
            "not implemented for",
            "expected scalar",
            "floating point",
            "complex",
            "integral",
            "bool",
            "long",
            "float",
            "half",
            "double",
            "promot",
        ],
        Category::Ndim => &["dim", "-d", "d input", "d tensor", "rank", "dimensional", "batched", "unbatched", "vector", "matrix", "matrices", "scalar"],
        Category::Shape => &["size", "shape", "dimension", "must match", "cannot be multiplied", "mat1", "square", "empty", "kernel", "numel", "elements"],
        Category::Range => &[
            "out of range",
            "out of bounds",
            "must be",
            "should be",
            "expected",
            "positive",
            "negative",
            "non-negative",
            "greater",
            "less than",
            "invalid",
            "index",
            "overflow",
            "too large",
            "padding",
            "stride",
            "dilation",
            "groups",
        ],
        Category::Enum => &["mode", "reduction", "unknown", "invalid", "expected one of", "not supported"],
        Category::Structure => &["expected a value of type", "argument", "none", "optional", "length", "list", "expected", "size", "tuple", "sequence"],
        Category::Invariant => &["match", "same", "size", "shape", "dtype", "expected", "must", "equal", "broadcast", "dimension"],
    }
}

/// Whether `message` blames the broken constraint, given its category and parameter names.
pub fn matches(category: Category, params: &[String], message: &str) -> bool {
    let lower = message.to_lowercase();
    let word = |w: &str| {
        lower.match_indices(w).any(|(i, _)| {
            let before = lower[..i].chars().next_back();
            let after = lower[i + w.len()..].chars().next();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '_') && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
    };
    params.iter().any(|p| p.len() > 1 && word(&p.to_lowercase())) || keywords(category).iter().any(|k| lower.contains(k))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_blame_by_name_or_by_category() {
        let p = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(matches(Category::Range, &p(&["dim"]), "Dimension out of range (expected to be in range of [-2, 1], but got 5)"));
        assert!(matches(Category::Dtype, &p(&["input"]), "\"exp_vml_cpu\" not implemented for 'Bool'"));
        assert!(matches(Category::Structure, &p(&["weight"]), "Expected a value of type 'Tensor' for argument 'weight' but instead found type 'int'."));
        assert!(matches(Category::Ndim, &p(&["input"]), "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [2, 3]"));
        // A name inside another word does not count; nor does a message about something else.
        assert!(!matches(Category::Dtype, &p(&["dim"]), "Dimension out of range"));
    }
}
