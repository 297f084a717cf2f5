//! What libtorch's complaint says about a candidate: which of its parameters the complaint
//! names (`relevance`) and whether it is about dtypes (`about_dtypes`, `same_kind`).
use super::candidates::Checked;
use crate::rules;
use crate::spec::ApiSpec;

/// How many of the parameters a candidate constrains a complaint names (`self` is `input`;
/// digits are `N` in both, as `errors::complaint` writes them; `pad` names `padding`):
/// libtorch's message says which arguments it checked, and a rule relating two of them
/// (`2 * padding <= kernel_size` against "pad should be at most half of effective kernel size")
/// is likelier than one about either alone.
pub(super) fn relevance(api: &ApiSpec, complaint: &str, candidate: &Checked) -> usize {
    // `N` and `T` are where the complaint's key took out a number and a dtype: no parameter's
    // name (`native_group_norm`'s `N` is not named by "greater than N").
    let words: Vec<String> = rules::words(complaint).filter(|w| !matches!(*w, "N" | "T")).map(|w| w.to_ascii_lowercase()).collect();
    let text = candidate.constraints.iter().map(|c| c.text.as_str()).collect::<Vec<_>>().join(" ");
    let uses = |name: &str| rules::words(&text).any(|w| w == name);
    let named = |name: &str| {
        // Numbers made uniform as in the complaint's key (`mat2` is `matn`).
        let name: String = name.to_ascii_lowercase().chars().map(|c| if c.is_ascii_digit() { 'n' } else { c }).collect();
        words.iter().any(|w| {
            *w == name
                || (name == "input" && w == "self")
                || (w.len() >= 3 && name.starts_with(w.as_str()))
                || (name.len() >= 3 && w.starts_with(name.as_str()))
                || abbreviates(&name, w)
        })
    };
    let params: Vec<&str> = api.params.iter().map(|p| p.name.as_str()).filter(|n| uses(n)).collect();
    if params.is_empty() {
        return 0;
    }
    // Any one named is enough to be relevant: `dim in -input.ndim..input.ndim` answers
    // `Dimension out of range` although the complaint does not say `input`.
    params.iter().filter(|p| named(p)).count()
}

/// Whether a parameter's name shortens each part of a word of the complaint: the schema's `w_ih`
/// is the message's `weight_ih`.
fn abbreviates(name: &str, word: &str) -> bool {
    let (parts, long): (Vec<&str>, Vec<&str>) = (name.split('_').collect(), word.split('_').collect());
    parts.len() > 1 && parts.len() == long.len() && parts.iter().zip(&long).all(|(p, l)| !p.is_empty() && l.starts_with(p))
}

/// Whether libtorch complains about dtypes (`mixed dtype`, `not implemented for 'Half'`,
/// `expected scalar type`) rather than about ranks, sizes or values.
pub(super) fn about_dtypes(complaint: &str) -> bool {
    let lower = complaint.to_ascii_lowercase();
    // `T` is where `errors::complaint` took a dtype's name out ("Expected a T tensor for index").
    let names_a_dtype = rules::words(complaint).any(|w| w == "T");
    names_a_dtype || ["dtype", "scalar type", "not implemented for", "type t", "can't be cast", "cannot be cast"].iter().any(|k| lower.contains(k))
}

/// Whether (1) or not (0) a candidate is of the complaint's kind: rules about dtypes for a
/// complaint about dtypes, others for the rest. A rule of the other kind silences a complaint
/// only by tripping an earlier check (`weight.ndim == 0` against `mixed dtype`).
pub(super) fn same_kind(complaint: &str, candidate: &Checked) -> usize {
    let dtype_rule = candidate.constraints.iter().all(|c| c.category == crate::spec::Category::Dtype);
    usize::from(about_dtypes(complaint) == dtype_rule)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::infer::candidates::candidates_of;
    use std::path::Path;

    /// A complaint names parameters in libtorch's words: `self` for `input`, `mat2` as `matN`
    /// once numbers are made uniform, `pad` for `padding`, `Dimension` for `dim`.
    #[test]
    fn complaints_name_the_parameters_they_check() {
        let src = "api torch.addmm(input: Tensor, mat1: Tensor, mat2: Tensor, padding: int = 0, dim: int = 0) -> Tensor {}\n\
            #[status(candidate)] rule same for torch.addmm { input.dtype == mat2.dtype; }\n\
            #[status(candidate)] rule pad for torch.addmm { padding >= 0; }\n\
            #[status(candidate)] rule dim for torch.addmm { dim in -input.ndim..input.ndim; }\n\
            #[status(candidate)] rule rank for torch.addmm { mat1.ndim == 2; }\n";
        let checked = crate::check::check_text(Path::new("t.sfz"), src);
        assert!(!checked.has_errors(), "{:?}", checked.diags.iter().map(|d| &d.message).collect::<Vec<_>>());
        let api = &checked.spec.apis[0];
        let rules = candidates_of(&checked.spec);
        let named = |complaint: &str| -> Vec<&str> {
            let key = crate::oracle::errors::complaint(complaint);
            rules.iter().filter(|r| relevance(api, &key, r) > 0).map(|r| r.candidate.name.as_str()).collect()
        };
        // `dim`'s rule bounds it by `input`'s rank: `self` names it.
        assert_eq!(named("self and mat2 must have the same dtype, but got Half and Bool"), ["same", "dim", "rank"]);
        assert_eq!(named("pad should be at most half of effective kernel size"), ["pad"]);
        assert_eq!(named("Dimension out of range (expected to be in range of [-2, 1], but got 3)"), ["dim"]);
        assert!(named("negative strides are not supported").is_empty());
        // The key's `N` for a number names no parameter called `N`; "groups" names `group`.
        let src = "api torch.native_group_norm(input: Tensor, N: int, C: int, group: int) -> Tensor {}\n\
            #[status(candidate)] rule n for torch.native_group_norm { N >= 1; }\n\
            #[status(candidate)] rule group for torch.native_group_norm { group >= 1; }\n";
        let checked = crate::check::check_text(Path::new("t.sfz"), src);
        let (api, rules) = (&checked.spec.apis[0], candidates_of(&checked.spec));
        let key = crate::oracle::errors::complaint("Expected num groups to be greater than 0, got 0");
        assert_eq!(rules.iter().filter(|r| relevance(api, &key, r) > 0).map(|r| r.candidate.name.as_str()).collect::<Vec<_>>(), ["group"]);
        // The schema's `w_ih` is the message's `weight_ih`; `b_ih` is not.
        let src = "api torch.rnn_tanh_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor) -> Tensor {}\n\
            #[status(candidate)] rule gates for torch.rnn_tanh_cell { w_ih.shape[0] == w_hh.shape[1]; }\n\
            #[status(candidate)] rule bias for torch.rnn_tanh_cell { b_ih.ndim == 1; }\n";
        let checked = crate::check::check_text(Path::new("t.sfz"), src);
        let (api, rules) = (&checked.spec.apis[0], candidates_of(&checked.spec));
        let key = crate::oracle::errors::complaint("weight_ih first dim must be 1 * hidden_size = 2, but got 3");
        assert_eq!(rules.iter().filter(|r| relevance(api, &key, r) > 0).map(|r| r.candidate.name.as_str()).collect::<Vec<_>>(), ["gates"]);
    }
}
