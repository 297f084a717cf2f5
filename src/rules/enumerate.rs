//! The offline candidate generator: constraints a torch API commonly has, enumerated from its
//! parameters' types alone (DocTer's categories): dtype groups, ranks, non-emptiness, valid
//! dimensions, equalities and orderings between int and shape parameters, signs and ranges of
//! numbers. Most are wrong for any given API; `sfz infer` keeps those executions support.
use super::Candidate;
use crate::spec::{ApiSpec, ParamType, RuleSource};

/// dtype groups, weakest first, spelled out so a rule needs no import.
const DTYPE_GROUPS: &[(&str, &str)] = &[
    ("not_bool", "[uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64, complex64, complex128]"),
    ("real", "[bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64]"),
    ("numeric", "[uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64]"),
    ("not_half", "[bool, uint8, int8, int16, int32, int64, float32, float64, complex64, complex128]"),
    ("numeric_not_half", "[uint8, int8, int16, int32, int64, float32, float64, complex64, complex128]"),
    ("real_not_half", "[uint8, int8, int16, int32, int64, float32, float64]"),
    ("floating_or_complex", "[float16, bfloat16, float32, float64, complex64, complex128]"),
    ("floating", "[float16, bfloat16, float32, float64]"),
    ("full_floating", "[float32, float64]"),
    ("full_floating_or_complex", "[float32, float64, complex64, complex128]"),
    ("integral", "[uint8, int8, int16, int32, int64]"),
    ("index", "[int32, int64]"),
    ("int64", "[int64]"),
    ("bool", "[bool]"),
];

/// Every candidate for an API, deduplicated by text, in a stable order (weakest of a family
/// first, so that ties in `infer` go to the more general rule).
pub fn candidates(api: &ApiSpec) -> Vec<Candidate> {
    let mut out = Vec::new();
    let mut add = |name: String, text: String| {
        if !out.iter().any(|c: &Candidate| c.text == text) {
            out.push(Candidate { name, text, source: RuleSource::Inferred });
        }
    };
    let tensors: Vec<&str> = names(api, |t| matches!(t, ParamType::Tensor));
    let lists: Vec<&str> = names(api, |t| matches!(t, ParamType::TensorList));
    let ints: Vec<&str> = names(api, |t| matches!(t, ParamType::Int));
    let int_lists: Vec<(&str, Option<u32>)> =
        api.params.iter().filter_map(|p| if let ParamType::IntList(n) = p.ty { Some((p.name.as_str(), n)) } else { None }).collect();
    let numbers: Vec<&str> = names(api, |t| matches!(t, ParamType::Float | ParamType::Scalar));

    for t in &tensors {
        for (group, list) in DTYPE_GROUPS {
            add(format!("{t}_{group}"), format!("{t}.dtype in {list};"));
        }
        add(format!("{t}_nonempty"), format!("{t}.numel > 0;"));
        for k in 1..=3 {
            add(format!("{t}_ndim_at_least_{k}"), format!("{t}.ndim >= {k};"));
        }
        for k in 0..=4 {
            add(format!("{t}_ndim_{k}"), format!("{t}.ndim == {k};"));
        }
        add(format!("{t}_ndim_at_most_2"), format!("{t}.ndim <= 2;"));
        add(format!("{t}_ndim_3_or_4"), format!("{t}.ndim in 3..=4;"));
        add(format!("{t}_square"), format!("{t}.shape[-1] == {t}.shape[-2];"));
    }
    for l in &lists {
        add(format!("{l}_nonempty_list"), format!("len({l}) >= 1;"));
        for (group, list) in DTYPE_GROUPS.iter().filter(|(g, _)| matches!(*g, "floating" | "numeric" | "full_floating")) {
            add(format!("{l}_{group}"), format!("{l}[*].dtype in {list};"));
        }
        add(format!("{l}_same_dtype"), format!("forall i in 0..len({l}): {l}[i].dtype == {l}[0].dtype;"));
        add(format!("{l}_same_ndim"), format!("forall i in 0..len({l}): {l}[i].ndim == {l}[0].ndim;"));
        add(format!("{l}_same_shape"), format!("forall i in 0..len({l}): {l}[i].shape == {l}[0].shape;"));
    }
    for (i, a) in tensors.iter().enumerate() {
        for b in tensors.iter().skip(i + 1) {
            add(format!("{a}_{b}_same_dtype"), format!("{a}.dtype == {b}.dtype;"));
            add(format!("{a}_{b}_broadcast"), format!("broadcastable({a}, {b});"));
            add(format!("{a}_{b}_same_ndim"), format!("{a}.ndim == {b}.ndim;"));
            add(format!("{a}_{b}_same_shape"), format!("{a}.shape == {b}.shape;"));
            add(format!("{a}_{b}_matmul"), format!("{a}.shape[-1] == {b}.shape[-2];"));
            add(format!("{a}_{b}_last_dim"), format!("{a}.shape[-1] == {b}.shape[-1];"));
            add(format!("{a}_{b}_first_dim"), format!("{a}.shape[0] == {b}.shape[0];"));
            add(format!("{a}_{b}_inner"), format!("{a}.shape[-1] == {b}.shape[0];"));
            add(format!("{a}_{b}_channels"), format!("{a}.shape[1] == {b}.shape[1];"));
        }
    }
    for d in &ints {
        for t in &tensors {
            add(format!("{d}_dim_of_{t}"), format!("{d} in -max({t}.ndim, 1)..max({t}.ndim, 1);"));
        }
        for t in &tensors {
            add(format!("{d}_new_dim_of_{t}"), format!("{d} in -({t}.ndim + 1)..{t}.ndim + 1;"));
        }
        add(format!("{d}_nonnegative"), format!("{d} >= 0;"));
        add(format!("{d}_positive"), format!("{d} >= 1;"));
        add(format!("{d}_small"), format!("{d} in 0..=16;"));
    }
    for (i, a) in ints.iter().enumerate() {
        for b in ints.iter().skip(i + 1) {
            add(format!("{a}_{b}_distinct"), format!("{a} != {b};"));
            add(format!("{a}_le_{b}"), format!("{a} <= {b};"));
            add(format!("{a}_eq_{b}"), format!("{a} == {b};"));
        }
    }
    for (l, n) in &int_lists {
        for t in &tensors {
            add(format!("{l}_dims_of_{t}"), format!("{l}[*] in -max({t}.ndim, 1)..max({t}.ndim, 1);"));
            add(
                format!("{l}_distinct_dims_of_{t}"),
                format!(
                    "{l}[*] in -max({t}.ndim, 1)..max({t}.ndim, 1);\n    forall i in 0..len({l}): forall j in 0..len({l}): i == j or (if {l}[i] < 0 then {l}[i] + max({t}.ndim, 1) else {l}[i]) != (if {l}[j] < 0 then {l}[j] + max({t}.ndim, 1) else {l}[j]);"
                ),
            );
            if n.is_none() {
                add(format!("{l}_len_ndim_of_{t}"), format!("len({l}) == {t}.ndim;"));
                add(format!("{l}_len_at_most_ndim_of_{t}"), format!("len({l}) <= {t}.ndim;"));
            }
        }
        add(format!("{l}_nonnegative"), format!("{l}[*] >= 0;"));
        add(format!("{l}_positive"), format!("{l}[*] >= 1;"));
        if n.is_none() {
            add(format!("{l}_nonempty_list"), format!("len({l}) >= 1;"));
        }
    }
    // Optional parameters left out, strings at their default, dtypes of the usual groups.
    for p in &api.params {
        let n = &p.name;
        if p.optional && p.ty != ParamType::Tensor {
            add(format!("{n}_none"), format!("{n} == None;"));
        }
        match (&p.ty, &p.default) {
            (ParamType::Str, Some(crate::spec::Value::Str(d))) => add(format!("{n}_default"), format!("{n} == \"{d}\";")),
            (ParamType::Dtype, _) => {
                for (group, list) in DTYPE_GROUPS.iter().filter(|(g, _)| matches!(*g, "floating" | "full_floating" | "numeric" | "floating_or_complex")) {
                    add(format!("{n}_{group}"), format!("{n} in {list};"));
                }
            }
            _ => {}
        }
    }
    for x in &numbers {
        add(format!("{x}_nonnegative"), format!("{x} >= 0.0;"));
        add(format!("{x}_positive"), format!("{x} > 0.0;"));
        add(format!("{x}_unit_interval"), format!("{x} in 0.0..=1.0;"));
    }
    // Index tensors: values within a dimension of the indexed tensor.
    for idx in tensors.iter().filter(|t| t.contains("index") || t.contains("indices")) {
        for t in tensors.iter().filter(|t| *t != idx) {
            for d in &ints {
                add(format!("{idx}_indexes_{t}_{d}"), format!("{idx}.values in 0..{t}.shape[{d}];"));
            }
            add(format!("{idx}_indexes_{t}"), format!("{idx}.values in 0..{t}.shape[0];"));
        }
    }
    out
}

fn names(api: &ApiSpec, pred: impl Fn(&ParamType) -> bool) -> Vec<&str> {
    api.params.iter().filter(|p| pred(&p.ty)).map(|p| p.name.as_str()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn candidates_check_against_their_api() {
        let src = "api torch.gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = false) -> Tensor {}\n";
        let checked = crate::check::check_text(Path::new("t.sfz"), src);
        let api = &checked.spec.apis[0];
        let cands = candidates(api);
        assert!(cands.iter().any(|c| c.text == "dim in -max(input.ndim, 1)..max(input.ndim, 1);"));
        assert!(cands.iter().any(|c| c.text == "index.values in 0..input.shape[dim];"));
        let text = super::super::rules_text(&api.name, &cands, None);
        let checked = crate::check::check_text(Path::new("t.sfz"), &format!("{src}\n{text}"));
        assert!(!checked.has_errors(), "{:?}", checked.diags.iter().map(|d| &d.message).collect::<Vec<_>>());
        assert_eq!(checked.spec.rules.len(), cands.len());
    }
}
