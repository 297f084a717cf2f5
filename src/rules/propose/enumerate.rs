//! The offline candidate generator: constraints a torch API commonly has, enumerated from its
//! parameters' types alone (DocTer's categories): dtype groups, ranks, non-emptiness, valid
//! dimensions, equalities and orderings between int and shape parameters, signs and ranges of
//! numbers. Most are wrong for any given API; `sfz infer` keeps those executions support.
use crate::rules::Candidate;
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

const FULL: &str = "[float32, float64, complex64, complex128]";
const INTEGRAL: &str = "[uint8, int8, int16, int32, int64]";
const INTEGRAL_OR_BOOL: &str = "[bool, uint8, int8, int16, int32, int64]";
const FLOATING: &str = "[float16, bfloat16, float32, float64]";
const COMPLEX: &str = "[complex64, complex128]";

/// `abs_`, `mul_`, `_foreach_add_` and the in-place dunders (`__iand__`, not `__and__`):
/// written in place.
fn is_in_place(api: &str) -> bool {
    let base = api.rsplit('.').next().unwrap_or(api);
    let dunder = base.starts_with("__") && base.ends_with("__");
    (base.ends_with('_') && !dunder) || (dunder && base.starts_with("__i"))
}
const HALF: &str = "[float16, bfloat16]";

/// Every candidate for an API, deduplicated by text, in a stable order (weakest of a family
/// first, so that ties in `infer` go to the more general rule). None is about a parameter a
/// `from` statement fills (a backward's `grad_output`, `indices`, saved `mean`): the forward's
/// outputs replace whatever was drawn for it, so no rule on it changes an input, and the
/// search's probes go to the forward's own arguments.
///
/// A fed parameter that a `like(p, shape)` argument reads is the exception: the forward's input
/// is built with its dtype and fill, so its rules on those stay (`upsample_nearest1d_backward`'s
/// kernel refuses the uint8 that the forward takes, and only `grad_output.dtype` picks the
/// forward's `input` dtype).
pub fn candidates(api: &ApiSpec) -> Vec<Candidate> {
    use crate::wire::case::FwdArg;
    let name = |i: usize| api.params.get(i).map(|p| p.name.as_str());
    let fed: Vec<&str> = api.from.iter().flat_map(|f| &f.binds).filter_map(|b| name(b.param)).collect();
    let lent: Vec<&str> = api.from.iter().flat_map(|f| &f.args).filter_map(|a| if let FwdArg::Like { param, .. } = a { name(*param) } else { None }).collect();
    let mut out = every_candidate(api);
    out.retain(|c| !crate::rules::words(&c.text).any(|w| fed.contains(&w)) || reads_only_dtype_or_values(&c.text, &lent, &fed));
    out
}

/// Whether every mention in `text` of a `fed` parameter is of the dtype or values of one in
/// `lent`, and there is one.
fn reads_only_dtype_or_values(text: &str, lent: &[&str], fed: &[&str]) -> bool {
    let mut mentioned = false;
    for w in crate::rules::words(text).filter(|w| fed.contains(w)) {
        // `words` gives slices of `text`: what follows this one.
        let after = &text[w.as_ptr() as usize - text.as_ptr() as usize + w.len()..];
        if !lent.contains(&w) || !(after.starts_with(".dtype") || after.starts_with(".values")) {
            return false;
        }
        mentioned = true;
    }
    mentioned
}

fn every_candidate(api: &ApiSpec) -> Vec<Candidate> {
    let mut out = Vec::new();
    let mut add = |name: String, text: String| {
        if !out.iter().any(|c: &Candidate| c.text == text) {
            out.push(Candidate { name, text, source: RuleSource::Inferred });
        }
    };
    let params = Params::of(api);
    // The order of the families is the order of the candidates.
    tensor_basics(&params, &mut add);
    list_families(api, &params, &mut add);
    pairs(&params, &mut add);
    in_place(api, &params, &mut add);
    relations(api, &params.tensors, &params.ints, &mut add);
    int_families(&params, &mut add);
    int_list_families(&params, &mut add);
    optional_families(api, &params, &mut add);
    index_values(&params, &mut add);
    added_later(api, &params, &mut add);
    out
}

/// An API's parameters by kind, as the candidate families read them.
struct Params<'a> {
    tensors: Vec<&'a str>,
    lists: Vec<&'a str>,
    ints: Vec<&'a str>,
    /// Ints and int lists that can index a shape (an optional one is `int?`, no index).
    dims: Vec<&'a str>,
    dim_lists: Vec<&'a str>,
    /// With their fixed lengths, if any.
    int_lists: Vec<(&'a str, Option<u32>)>,
    numbers: Vec<&'a str>,
}

impl<'a> Params<'a> {
    fn of(api: &'a ApiSpec) -> Params<'a> {
        Params {
            tensors: names(api, |t| matches!(t, ParamType::Tensor)),
            lists: names(api, |t| matches!(t, ParamType::TensorList)),
            ints: names(api, |t| matches!(t, ParamType::Int)),
            dims: api.params.iter().filter(|p| p.ty == ParamType::Int && !p.optional).map(|p| p.name.as_str()).collect(),
            dim_lists: api.params.iter().filter(|p| matches!(p.ty, ParamType::IntList(_)) && !p.optional).map(|p| p.name.as_str()).collect(),
            int_lists: api.params.iter().filter_map(|p| if let ParamType::IntList(n) = p.ty { Some((p.name.as_str(), n)) } else { None }).collect(),
            numbers: names(api, |t| matches!(t, ParamType::Float | ParamType::Scalar)),
        }
    }
}

/// Per tensor: the dtype groups, non-emptiness, ranks, squareness.
fn tensor_basics(p: &Params, add: &mut impl FnMut(String, String)) {
    let Params { tensors, .. } = p;
    for t in tensors {
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
}

/// Per tensor list: length, dtypes, ranks and shapes of its elements, and their relations to
/// ints and tensors.
fn list_families(api: &ApiSpec, p: &Params, add: &mut impl FnMut(String, String)) {
    let Params { tensors, lists, ints, dims, .. } = p;
    for l in lists {
        add(format!("{l}_nonempty_list"), format!("len({l}) >= 1;"));
        for (group, list) in DTYPE_GROUPS.iter().filter(|(g, _)| matches!(*g, "floating" | "numeric" | "full_floating")) {
            add(format!("{l}_{group}"), format!("{l}[*].dtype in {list};"));
        }
        add(format!("{l}_same_dtype"), format!("forall i in 0..len({l}): {l}[i].dtype == {l}[0].dtype;"));
        add(format!("{l}_same_ndim"), format!("forall i in 0..len({l}): {l}[i].ndim == {l}[0].ndim;"));
        add(format!("{l}_same_shape"), format!("forall i in 0..len({l}): {l}[i].shape == {l}[0].shape;"));
        add(format!("{l}_elements_ndim_at_least_1"), format!("forall t in {l}: t.ndim >= 1;"));
        add(format!("{l}_elements_nonempty"), format!("forall t in {l}: t.numel > 0;"));
        // Concatenation: the elements agree in every dimension but one (a constant one here,
        // a `dim` parameter below); hstack and vstack concatenate along 1 and 0.
        for k in 0..=1 {
            add(format!("{l}_same_except_dim_{k}"), same_except(l, &k.to_string()));
        }
        // Pairwise broadcastable means broadcastable together (per dimension, every size other
        // than 1 equals every other).
        add(format!("{l}_broadcast"), format!("forall a in {l}: forall b in {l}: broadcastable(a, b);"));
        for d in dims {
            add(format!("{d}_dim_of_{l}"), format!("{d} in -max({l}[0].ndim, 1)..max({l}[0].ndim, 1);"));
            add(format!("{d}_new_dim_of_{l}"), format!("{d} in -({l}[0].ndim + 1)..{l}[0].ndim + 1;"));
            add(format!("{l}_same_except_{d}"), same_except(l, d));
        }
        // A list whose length an int gives (`num_layers` weights, one tensor per split).
        for n in ints {
            add(format!("len_{l}_is_{n}"), format!("len({l}) == {n};"));
        }
        // An RNN's weights: w_ih and w_hh (and two biases) per layer and direction.
        let has = |name: &str| api.params.iter().any(|p| p.name == name && p.ty == ParamType::Bool);
        if ints.contains(&"num_layers") && has("bidirectional") && has("has_biases") {
            add(format!("len_{l}_per_layer_and_direction"), format!("len({l}) == num_layers * (if bidirectional then 2 else 1) * (if has_biases then 4 else 2);"));
        }
        for t in tensors {
            add(format!("{l}_broadcast_with_{t}"), format!("forall a in {l}: broadcastable(a, {t});"));
            add(format!("{l}_shaped_like_{t}"), format!("forall a in {l}: a.shape == {t}.shape;"));
            add(format!("{l}_dtype_of_{t}"), format!("forall a in {l}: a.dtype == {t}.dtype;"));
        }
    }
}

/// Per pair of lists and per pair of tensors: lengths, dtypes, shapes and promotions that agree.
fn pairs(p: &Params, add: &mut impl FnMut(String, String)) {
    let Params { tensors, lists, .. } = p;
    // Two lists walked in step (`_foreach_add(self, other)`): one element of each per index.
    for (i, a) in lists.iter().enumerate() {
        for b in lists.iter().skip(i + 1) {
            add(format!("{a}_{b}_same_len"), format!("len({a}) == len({b});"));
            add(format!("{a}_{b}_same_shapes"), format!("len({a}) == len({b});\n    forall i in 0..len({a}): {a}[i].shape == {b}[i].shape;"));
            add(format!("{a}_{b}_broadcast"), format!("len({a}) == len({b});\n    forall i in 0..len({a}): broadcastable({a}[i], {b}[i]);"));
            add(format!("{a}_{b}_same_dtypes"), format!("len({a}) == len({b});\n    forall i in 0..len({a}): {a}[i].dtype == {b}[i].dtype;"));
        }
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
            // Kernels that exist for some dtypes only see the promoted dtype: one operand of the
            // group suffices (an int tensor and a float one make a float result) and the pair
            // must not promote to a half type.
            for (group, list) in DTYPE_GROUPS.iter().filter(|(g, _)| matches!(*g, "floating" | "floating_or_complex")) {
                add(format!("{a}_{b}_promote_{group}"), format!("{a}.dtype in {list} or {b}.dtype in {list};"));
            }
            add(format!("{a}_{b}_promote_not_half"), format!("{a}.dtype in {FULL} or {b}.dtype in {FULL} or ({a}.dtype not in {HALF} and {b}.dtype not in {HALF});"));
        }
    }
}

/// An in-place operator writes its result into its first tensor: the promoted dtype must
/// cast into it (`int_tensor.mul_(float_tensor)` raises; a bool or integer operand is fine).
fn in_place(api: &ApiSpec, p: &Params, add: &mut impl FnMut(String, String)) {
    let Params { tensors, .. } = p;
    if let (true, Some(into)) = (is_in_place(&api.name), tensors.first()) {
        for o in tensors.iter().skip(1) {
            add(
                format!("{o}_casts_into_{into}"),
                format!(
                    "{o}.dtype == bool or ({into}.dtype in {INTEGRAL} and {o}.dtype in {INTEGRAL}) or ({into}.dtype in {FLOATING} and {o}.dtype not in {COMPLEX}) or {into}.dtype in {COMPLEX};"
                ),
            );
        }
    }
}

/// Per int: a dimension of a tensor, signs and ranges; per pair of ints, an order; an int
/// bounded by a dimension's size.
fn int_families(p: &Params, add: &mut impl FnMut(String, String)) {
    let Params { tensors, ints, dims, .. } = p;
    for d in ints {
        for t in tensors {
            add(format!("{d}_dim_of_{t}"), format!("{d} in -max({t}.ndim, 1)..max({t}.ndim, 1);"));
        }
        // Reductions and transforms along a dimension need something there.
        for t in tensors.iter().filter(|_| dims.contains(d)) {
            add(format!("{t}_{d}_nonempty"), format!("{t}.ndim == 0 or {t}.shape[{d}] >= 1;"));
        }
        for t in tensors {
            add(format!("{d}_new_dim_of_{t}"), format!("{d} in -({t}.ndim + 1)..{t}.ndim + 1;"));
        }
        add(format!("{d}_nonnegative"), format!("{d} >= 0;"));
        add(format!("{d}_positive"), format!("{d} >= 1;"));
        add(format!("{d}_small"), format!("{d} in 0..=16;"));
        add(format!("{d}_at_least_2"), format!("{d} >= 2;"));
    }
    for (i, a) in ints.iter().enumerate() {
        for b in ints.iter().skip(i + 1) {
            add(format!("{a}_{b}_distinct"), format!("{a} != {b};"));
            add(format!("{a}_le_{b}"), format!("{a} <= {b};"));
            add(format!("{a}_eq_{b}"), format!("{a} == {b};"));
        }
    }
    // A size or length along a dimension another int names: at most that dimension's size. A
    // dimension index is no size (`dim0 <= input.shape[dim1]` would only mimic a range rule).
    for a in ints.iter().filter(|a| !is_dim(a)) {
        for d in dims.iter().filter(|d| *d != a) {
            for t in tensors {
                add(format!("{a}_within_{t}_{d}"), format!("{a} <= (if {t}.ndim == 0 then 1 else {t}.shape[{d}]);"));
            }
        }
    }
}

/// Per int list: dimensions of a tensor, signs, lengths.
fn int_list_families(p: &Params, add: &mut impl FnMut(String, String)) {
    let Params { tensors, dim_lists, int_lists, .. } = p;
    for (l, n) in int_lists {
        for t in tensors {
            add(format!("{l}_dims_of_{t}"), format!("{l}[*] in -max({t}.ndim, 1)..max({t}.ndim, 1);"));
            add(
                format!("{l}_distinct_dims_of_{t}"),
                format!(
                    "{l}[*] in -max({t}.ndim, 1)..max({t}.ndim, 1);\n    forall i in 0..len({l}): forall j in 0..len({l}): i == j or {} != {};",
                    wrapped(&format!("{l}[i]"), t),
                    wrapped(&format!("{l}[j]"), t)
                ),
            );
            if n.is_none() {
                add(format!("{l}_len_ndim_of_{t}"), format!("len({l}) == {t}.ndim;"));
                add(format!("{l}_len_at_most_ndim_of_{t}"), format!("len({l}) <= {t}.ndim;"));
            }
        }
        // Reductions over the listed dimensions need something in each, and something at all
        // when the list is empty (all dimensions).
        for t in tensors.iter().filter(|_| dim_lists.contains(l)) {
            add(format!("{t}_{l}_nonempty"), format!("forall i in 0..len({l}): {t}.ndim == 0 or {t}.shape[{l}[i]] >= 1;"));
            add(format!("{t}_nonempty_without_{l}"), format!("len({l}) >= 1 or {t}.numel > 0;"));
        }
        add(format!("{l}_nonnegative"), format!("{l}[*] >= 0;"));
        add(format!("{l}_positive"), format!("{l}[*] >= 1;"));
        if n.is_none() {
            add(format!("{l}_nonempty_list"), format!("len({l}) >= 1;"));
        }
    }
    // A list with one entry per spatial dimension, after the batch and channel ones, or after
    // one leading dimension (`upsample_nearest1d.vec`'s `output_size`: "output_size->size() ==
    // spatial_dimensions"). Float lists are drawn, not solved, so their lengths are not here.
    for (l, _) in int_lists.iter().filter(|(_, n)| n.is_none()) {
        for t in tensors {
            add(format!("{l}_len_spatial_of_{t}"), format!("len({l}) == {t}.ndim - 2;"));
            add(format!("{l}_len_but_first_of_{t}"), format!("len({l}) == {t}.ndim - 1;"));
        }
    }
}

/// Optional parameters, flags, strings and dtypes at their usual values, and the signs and
/// ranges of numbers.
fn optional_families(api: &ApiSpec, p: &Params, add: &mut impl FnMut(String, String)) {
    let Params { tensors, dims, numbers, .. } = p;
    // Optional parameters left out, strings at their default, dtypes of the usual groups.
    for p in &api.params {
        let n = &p.name;
        if p.optional && p.ty != ParamType::Tensor {
            add(format!("{n}_none"), format!("{n} == None;"));
        }
        // One the schema gives no default may be one of two of which exactly one must be given
        // ("Must specify exactly one of output_size and scale_factors").
        if p.optional && p.default.is_none() {
            add(format!("{n}_given"), format!("{n} != None;"));
        }
        // Emptiness and dtypes that matter only when an optional parameter is left out: a
        // reduction over all elements (dim None) needs some; a size given (n) pads an empty
        // dimension; a dtype given replaces the input's.
        if p.optional && matches!(p.ty, ParamType::Int | ParamType::IntList(_)) {
            for t in tensors {
                add(format!("{t}_nonempty_without_{n}"), format!("{n} != None or {t}.numel > 0;"));
            }
        }
        if p.optional && p.ty == ParamType::Dtype {
            for t in tensors {
                for (group, list) in DTYPE_GROUPS.iter().filter(|(g, _)| matches!(*g, "floating" | "floating_or_complex")) {
                    add(format!("{t}_{group}_without_{n}"), format!("{n} != None or {t}.dtype in {list};"));
                }
            }
        }
        // A flag libtorch refuses on this machine (`pin_memory=True` without an accelerator) or
        // that turns a soft failure into an error (`check_errors`).
        if p.ty == ParamType::Bool {
            add(format!("{n}_false"), format!("{n} == false;"));
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
    for x in numbers {
        add(format!("{x}_nonnegative"), format!("{x} >= 0.0;"));
        add(format!("{x}_positive"), format!("{x} > 0.0;"));
        add(format!("{x}_unit_interval"), format!("{x} in 0.0..=1.0;"));
    }
    // A transform along `dim` of an empty dimension needs a size (`n`) to pad it to.
    for p in api.params.iter().filter(|p| p.optional && p.ty == ParamType::Int) {
        for d in dims.iter().filter(|d| **d != p.name) {
            for t in tensors {
                add(format!("{t}_{d}_nonempty_without_{}", p.name), format!("{} != None or {t}.ndim == 0 or {t}.shape[{d}] >= 1;", p.name));
            }
        }
    }
}

/// Index tensors: values within a dimension of the indexed tensor; a 0-d one is indexed as
/// if it had one dimension of size 1, as `dim` wraps (`index_fill_` of a scalar).
fn index_values(p: &Params, add: &mut impl FnMut(String, String)) {
    let Params { tensors, ints, .. } = p;
    for idx in tensors.iter().filter(|t| is_index(t)) {
        for t in tensors.iter().filter(|t| *t != idx) {
            for d in ints {
                add(format!("{idx}_indexes_{t}_{d}"), format!("{idx}.values in 0..(if {t}.ndim == 0 then 1 else {t}.shape[{d}]);"));
            }
            add(format!("{idx}_indexes_{t}"), format!("{idx}.values in 0..{t}.shape[0];"));
        }
    }
}

/// Families added after the others, last so that the candidates before keep their places (and
/// the search its random streams) from before they existed.
fn added_later(api: &ApiSpec, p: &Params, add: &mut impl FnMut(String, String)) {
    let Params { tensors, lists, ints, dims, numbers, .. } = p;
    // Volumetric operators (`conv3d`, `max_pool3d`) take 5-D batches. Last, so the candidates
    // before keep their places (and the search its random streams) from before they existed.
    for t in tensors {
        add(format!("{t}_ndim_5"), format!("{t}.ndim == 5;"));
    }
    // `_foreach_exp_` takes complex elements too. Last, for the same reason.
    for l in lists {
        add(format!("{l}_floating_or_complex"), format!("{l}[*].dtype in [float16, bfloat16, float32, float64, complex64, complex128];"));
    }
    // The ranks and lengths a complaint names ("Expected 2D or 3D", "of size 1"), which the
    // search ranks first (`counts`). An `int[1]` of a schema is written `int[]`, since most take
    // any length (`sum`'s dims), but a 1-d pooling's `kernel_size` takes one. Last, for the
    // same reason.
    for t in tensors {
        for (a, b) in [(1, 2), (2, 3), (4, 5)] {
            add(format!("{t}_ndim_{a}_or_{b}"), format!("{t}.ndim in {a}..={b};"));
        }
    }
    for l in unfixed_lists(api) {
        for k in 1..=3 {
            add(format!("{l}_len_{k}"), format!("len({l}) == {k};"));
        }
    }
    // Last, for the same reason.
    windows(api, tensors, add);
    // Bitwise and integer kernels (`bitwise_and`, shifts, `gcd`) exist for bool and the
    // integers only, and see the promoted dtype: an integer tensor with a bool one is fine, with
    // a float one is not. `integral` leaves bool out and `not_bool` lets floats in. Last, for
    // the same reason.
    for t in tensors {
        add(format!("{t}_integral_or_bool"), format!("{t}.dtype in {INTEGRAL_OR_BOOL};"));
    }
    // Pooling, upsampling and convolution take an empty batch but no other empty dimension
    // ("Expected input to have non-zero size for non-batch dimensions"). Last, for the same
    // reason.
    for t in tensors {
        add(format!("{t}_nonempty_but_batch"), format!("forall i in 1..{t}.ndim: {t}.shape[i] >= 1;"));
    }
    more_checks(api, tensors, ints, dims, numbers, add);
    for (i, a) in tensors.iter().enumerate() {
        for b in tensors.iter().skip(i + 1) {
            add(format!("{a}_{b}_promote_integral_or_bool"), format!("{a}.dtype in {INTEGRAL_OR_BOOL} and {b}.dtype in {INTEGRAL_OR_BOOL};"));
        }
    }
    element_values(tensors, ints, add);
    element_ranks(lists, add);
}

/// The rank every element of a tensor list must have ("Expect a 1D vector", `cartesian_prod`;
/// "the first tensor must be 1D or 2D", `multi_dot`), and shapes that chain. Appended last.
fn element_ranks(lists: &[&str], add: &mut impl FnMut(String, String)) {
    for l in lists {
        add(format!("{l}_elements_ndim_1"), format!("forall t in {l}: t.ndim == 1;"));
        add(format!("{l}_elements_ndim_2"), format!("forall t in {l}: t.ndim == 2;"));
        add(format!("{l}_elements_ndim_1_or_2"), format!("forall t in {l}: t.ndim in 1..=2;"));
        // Matrices multiplied in turn (`chain_matmul`, `multi_dot`): each one's columns are the
        // next one's rows.
        add(format!("{l}_at_least_two"), format!("len({l}) >= 2;"));
        add(format!("{l}_chained"), format!("forall i in 1..len({l}): {l}[i - 1].ndim >= 1 and {l}[i].ndim >= 1 and {l}[i - 1].shape[-1] == {l}[i].shape[0];"));
    }
}

/// Checks libtorch makes on a tensor's elements: probabilities ("all elements of input should
/// be between 0 and 1"), counts ("bincount only supports 1-d non-negative integral inputs"),
/// class labels below an int ("Class values must be smaller than num_classes") or below the
/// class dimension of the scores ("Target 5 is out of bounds", the second of a batch). Last, so
/// that the candidates before keep their places.
fn element_values(tensors: &[&str], ints: &[&str], add: &mut impl FnMut(String, String)) {
    for t in tensors.iter().filter(|t| !is_index(t)) {
        // Floating only: on an integer tensor it would stand for "small", the labels below
        // (`one_hot` took it over `input_values_below_num_classes`, narrowing its inputs to 0 and 1).
        add(format!("{t}_values_in_unit"), format!("{t}.dtype in {FLOATING};\n    {t}.values in 0.0..=1.0;"));
        add(format!("{t}_values_nonnegative"), format!("{t}.values >= 0.0;"));
    }
    for t in tensors {
        for n in ints.iter().filter(|n| !is_dim(n)) {
            add(format!("{t}_values_below_{n}"), format!("{n} >= 1;\n    {t}.values in 0..{n};"));
        }
        for x in tensors.iter().filter(|x| *x != t) {
            add(format!("{t}_classes_of_{x}"), format!("{x}.ndim >= 2;\n    {x}.shape[1] >= 1;\n    {t}.values in 0..{x}.shape[1];"));
        }
    }
    // Scores with their classes along the last dimension, 1-d or a batch of rows
    // (`multi_margin_loss`: "target out of range"). After the others: appended last.
    for t in tensors {
        for x in tensors.iter().filter(|x| *x != t) {
            add(format!("{t}_classes_along_last_of_{x}"), format!("{x}.ndim >= 1;\n    {x}.shape[-1] >= 1;\n    {t}.values in 0..{x}.shape[-1];"));
        }
    }
}

/// Checks seen in the ends of searches, each a family of its own. Appended after the others, so
/// that the candidates before keep their places.
fn more_checks(api: &ApiSpec, tensors: &[&str], ints: &[&str], dims: &[&str], numbers: &[&str], add: &mut impl FnMut(String, String)) {
    // `view_as_real`, `imag`: complex inputs only (no group above has them alone).
    for t in tensors {
        add(format!("{t}_complex"), format!("{t}.dtype in {COMPLEX};"));
    }
    // A flag a CPU build requires on (`linalg.lu_factor`'s `pivot`).
    for p in api.params.iter().filter(|p| p.ty == ParamType::Bool) {
        add(format!("{}_true", p.name), format!("{} == true;", p.name));
    }
    // Bounds given as two numbers (`histc`'s min and max, `rrelu`'s lower and upper).
    for (i, a) in numbers.iter().enumerate() {
        for b in numbers.iter().skip(i + 1) {
            add(format!("{a}_le_{b}"), format!("{a} <= {b};"));
            add(format!("{a}_lt_{b}"), format!("{a} < {b};"));
        }
    }
    // A range walked by a step of the sign that leads from one bound to the other (`arange`,
    // `range`: "upper bound and lower bound inconsistent with step sign").
    if let Some(step) = numbers.iter().find(|n| **n == "step") {
        let bounds: Vec<&&str> = numbers.iter().filter(|n| *n != step).collect();
        for (i, a) in bounds.iter().enumerate() {
            for b in bounds.iter().skip(i + 1) {
                add(format!("{a}_{b}_follow_{step}"), format!("({a} <= {b} and {step} > 0) or ({a} >= {b} and {step} < 0);"));
            }
        }
    }
    // Two dimensions of one tensor that must differ, or come in order, once wrapped
    // (`diagonal`'s dim1 and dim2: 1 and -1 of a 2-d tensor are one; `flatten`'s start_dim and
    // end_dim).
    for (i, a) in dims.iter().enumerate() {
        for b in dims.iter().skip(i + 1) {
            for t in tensors {
                add(format!("{a}_{b}_distinct_dims_of_{t}"), format!("{} != {};", wrapped(a, t), wrapped(b, t)));
                add(format!("{a}_{b}_ordered_dims_of_{t}"), format!("{} <= {};", wrapped(a, t), wrapped(b, t)));
            }
        }
    }
    // Index values into the flattened tensor (`take`, `put`).
    for idx in tensors.iter().filter(|t| is_index(t)) {
        for t in tensors.iter().filter(|t| *t != idx) {
            add(format!("{idx}_indexes_{t}_flat"), format!("{idx}.values in 0..{t}.numel;"));
        }
    }
    for t in tensors {
        // `glu` halves a dimension.
        for d in dims {
            add(format!("{t}_{d}_even"), format!("{t}.ndim >= 1;\n    {t}.shape[{d}] % 2 == 0;"));
        }
        // `pixel_shuffle` and `pixel_unshuffle`: channels by the square of a factor, height and
        // width by the factor.
        for n in ints.iter().filter(|n| !is_dim(n)) {
            add(format!("{t}_channels_divisible_by_{n}_squared"), format!("{n} >= 1;\n    {t}.ndim >= 3;\n    {t}.shape[-3] % ({n} * {n}) == 0;"));
            add(format!("{t}_plane_divisible_by_{n}"), format!("{n} >= 1;\n    {t}.ndim >= 2;\n    {t}.shape[-1] % {n} == 0 and {t}.shape[-2] % {n} == 0;"));
        }
    }
    // A Scalar's kind and sign as the tensors it meets need them: an integral result takes no
    // float `alpha` ("For integral input tensors, argument alpha must not be a floating point
    // number") and a bool alpha only for a bool result; a negative float does not convert to
    // uint8 ("value cannot be converted to type uint8_t without overflow").
    let scalars = api.params.iter().filter(|p| p.ty == ParamType::Scalar).map(|p| p.name.as_str());
    let plain: Vec<&str> = tensors.iter().copied().filter(|t| !is_index(t)).collect();
    for s in scalars {
        add(format!("{s}_int"), format!("{s}.dtype == int64;"));
        for (i, a) in plain.iter().enumerate() {
            add(format!("{s}_kind_fits_{a}"), format!("{s}.dtype != bool;\n    {a}.dtype not in {INTEGRAL_OR_BOOL} or {s}.dtype == int64;"));
            add(format!("{s}_unsigned_fits_{a}"), format!("{a}.dtype != uint8 or {s} >= 0;"));
            for b in plain.iter().skip(i + 1) {
                add(
                    format!("{s}_kind_fits_{a}_{b}"),
                    format!("{s}.dtype != bool;\n    {a}.dtype not in {INTEGRAL_OR_BOOL} or {b}.dtype not in {INTEGRAL_OR_BOOL} or {s}.dtype == int64;"),
                );
            }
        }
    }
    // Padding as ATen's pad operators take it: (before, after) pairs from the last dimension
    // backwards, a negative pad cropping. Every padded size stays at least one ("input (W: 4)
    // is too small. Calculated output W: 0"); a reflection pads less than the size it
    // reflects, a circular pad at most that size; a constant pad crops each side within it.
    let pads = api.params.iter().filter(|p| matches!(p.ty, ParamType::IntList(_)) && (p.name == "pad" || p.name == "padding")).map(|p| p.name.as_str());
    for l in pads {
        for t in tensors.iter().filter(|t| !is_index(t)) {
            let size = format!("{t}.shape[{t}.ndim - 1 - i]");
            let pairs = format!("len({l}) % 2 == 0;\n    len({l}) <= 2 * {t}.ndim;\n    forall i in 0..len({l}) / 2: {size} + {l}[2 * i] + {l}[2 * i + 1] >= 1");
            add(format!("{l}_pads_{t}"), format!("{pairs};"));
            add(format!("{l}_reflects_{t}"), format!("{pairs} and {l}[2 * i] < {size} and {l}[2 * i + 1] < {size};"));
            add(format!("{l}_wraps_{t}"), format!("{pairs} and {l}[2 * i] <= {size} and {l}[2 * i + 1] <= {size};"));
            // `constant_pad_nd` crops each side on its own first: neither crops more than the size.
            add(format!("{l}_crops_within_{t}"), format!("{pairs} and {size} + {l}[2 * i] >= 0 and {size} + {l}[2 * i + 1] >= 0;"));
        }
    }
    positions(tensors, ints, dims, add);
    // Gather and scatter: an index no larger than the tensor it indexes in every dimension but
    // the one it indexes along, and no larger than the source it takes from in any ("Size does
    // not match at dimension 1 expected index [4, 3] to be no larger than self [4, 2] apart from
    // dimension 0").
    for x in tensors {
        for y in tensors.iter().filter(|y| *y != x) {
            add(format!("{x}_within_{y}"), format!("{x}.ndim == {y}.ndim;\n    forall i in 0..{x}.ndim: {x}.shape[i] <= {y}.shape[i];"));
            for d in dims {
                add(format!("{x}_within_{y}_but_{d}"), format!("{x}.ndim == {y}.ndim;\n    forall i in 0..{x}.ndim: i == {} or {x}.shape[i] <= {y}.shape[i];", wrapped(d, x)));
                // A slice along `d`, shaped as `select` leaves it (`select_scatter`'s `src`: "expected
                // src to have a size equal to the slice of self").
                add(
                    format!("{x}_slices_{y}_at_{d}"),
                    format!("{x}.ndim + 1 == {y}.ndim;\n    forall i in 0..{x}.ndim: {x}.shape[i] == {y}.shape[if i < {w} then i else i + 1];", w = wrapped(d, y)),
                );
            }
        }
    }
    // Grouped convolution: the output channels (a weight's first size) split into the groups
    // ("expected weight to be at least 2 at dimension 0").
    for t in tensors {
        for n in ints.iter().filter(|n| n.contains("groups")) {
            add(format!("{t}_count_divisible_by_{n}"), format!("{n} >= 1;\n    {t}.ndim >= 1;\n    {t}.shape[0] % {n} == 0;"));
        }
    }
}

/// An int that is a position along a dimension another int names, negative ones counting from
/// the end (`select`'s index: "index 5 out of range for tensor of size [3] at dimension 0"), and
/// a start with a length that stays within that dimension (`narrow`: "start (2) + length (3)
/// exceeds dimension size (4)").
fn positions(tensors: &[&str], ints: &[&str], dims: &[&str], add: &mut impl FnMut(String, String)) {
    let sizes: Vec<&str> = ints.iter().copied().filter(|a| !is_dim(a)).collect();
    for a in &sizes {
        for d in dims.iter().filter(|d| *d != a) {
            for t in tensors {
                let size = format!("(if {t}.ndim == 0 then 1 else {t}.shape[{d}])");
                add(format!("{a}_position_in_{t}_{d}"), format!("{a} >= -{size} and {a} < {size};"));
                for b in sizes.iter().filter(|b| *b != a) {
                    add(
                        format!("{a}_{b}_span_in_{t}_{d}"),
                        format!("{a} >= -{size} and {a} <= {size};\n    {b} >= 0;\n    (if {a} < 0 then {a} + {size} else {a}) + {b} <= {size};"),
                    );
                }
            }
        }
    }
}

/// A tensor that indexes another (`index`, `indices`), by the names ATen's schemas give it: its
/// values are positions, so rules about numbers and padding leave it out.
fn is_index(t: &str) -> bool {
    t.contains("index") || t.contains("indices")
}

/// An int that names a dimension (`dim`, `dim1`, `axis`), by its name: no size or count, so
/// rules that compare sizes leave it out.
fn is_dim(n: &str) -> bool {
    n.contains("dim") || n.contains("axis")
}

/// Dimension `d` of tensor `t` with a negative one wrapped (a 0-d tensor wraps as a 1-d one).
fn wrapped(d: &str, t: &str) -> String {
    format!("(if {d} < 0 then {d} + max({t}.ndim, 1) else {d})")
}

/// `forall t in l`: the elements have one rank and agree in every dimension but `dim` (an int
/// parameter, possibly negative, or a constant).
fn same_except(l: &str, dim: &str) -> String {
    format!("forall t in {l}: t.ndim == {l}[0].ndim and (forall k in 0..t.ndim: k == {dim} or k == {dim} + t.ndim or t.shape[k] == {l}[0].shape[k]);")
}

/// Relations between tensors and sizes that normalization, pooling-backward and loss operators
/// check: a tensor shaped like the trailing sizes of another (`weight` of `layer_norm`), a
/// 1-D tensor as long as the channels, a size an int or int list gives, indices within a plane.
fn relations(api: &ApiSpec, tensors: &[&str], ints: &[&str], add: &mut impl FnMut(String, String)) {
    let size_lists: Vec<&str> = api.params.iter().filter(|p| matches!(p.ty, ParamType::IntList(_)) && !p.optional).map(|p| p.name.as_str()).collect();
    for t in tensors {
        for l in &size_lists {
            add(format!("{l}_trailing_sizes_of_{t}"), format!("len({l}) <= {t}.ndim;\n    forall i in 0..len({l}): {l}[i] == {t}.shape[{t}.ndim - len({l}) + i];"));
            add(format!("{l}_sizes_of_{t}"), format!("{t}.shape == {l};"));
        }
        for n in ints.iter().filter(|n| !is_dim(n)) {
            for k in ["0", "1", "-1"] {
                let at = k.replace('-', "last");
                add(format!("{t}_shape_{at}_is_{n}"), format!("{t}.shape[{k}] == {n};"));
            }
            add(format!("{t}_channels_divisible_by_{n}"), format!("{n} >= 1;\n    {t}.shape[1] % {n} == 0;"));
        }
    }
    for (i, a) in tensors.iter().enumerate() {
        for b in tensors.iter().skip(i + 1) {
            for (x, y) in [(a, b), (b, a)] {
                add(format!("{x}_trailing_shape_of_{y}"), format!("{x}.ndim <= {y}.ndim;\n    forall i in 0..{x}.ndim: {x}.shape[i] == {y}.shape[{y}.ndim - {x}.ndim + i];"));
                add(format!("{x}_per_channel_of_{y}"), format!("{x}.ndim == 1;\n    {x}.shape[0] == {y}.shape[1];"));
                // Broadcasting into `y` without changing its shape: what an in-place `y.op_(x)`
                // needs, and a gradient shaped like the input it flows to.
                add(
                    format!("{x}_broadcasts_to_{y}"),
                    format!("{x}.ndim <= {y}.ndim;\n    forall i in 0..{x}.ndim: {x}.shape[i] == 1 or {x}.shape[i] == {y}.shape[{y}.ndim - {x}.ndim + i];"),
                );
            }
        }
    }
    // Windows (pooling, convolution): a padding at most half its kernel, a kernel within the
    // input's trailing sizes, a weight whose spatial sizes fit the input's and whose input
    // channels times `groups` are the input's.
    let lists: Vec<&str> = api.params.iter().filter(|p| matches!(p.ty, ParamType::IntList(_))).map(|p| p.name.as_str()).collect();
    for a in &lists {
        for b in lists.iter().filter(|b| *b != a) {
            add(format!("{a}_at_most_half_of_{b}"), format!("len({a}) == len({b});\n    forall i in 0..len({a}): 2 * {a}[i] <= {b}[i];"));
        }
        for t in tensors {
            add(format!("{a}_fits_in_{t}"), format!("len({a}) <= {t}.ndim;\n    forall i in 0..len({a}): {a}[i] <= {t}.shape[{t}.ndim - len({a}) + i];"));
        }
    }
    for w in tensors.iter().filter(|w| w.contains("weight")) {
        for x in tensors.iter().filter(|x| *x != w) {
            add(format!("{w}_window_fits_{x}"), format!("{w}.ndim == {x}.ndim;\n    forall i in 2..{x}.ndim: {w}.shape[i] <= {x}.shape[i];"));
            add(format!("{x}_channels_of_{w}"), format!("{x}.ndim >= 2;\n    {w}.ndim >= 2;\n    {x}.shape[1] == {w}.shape[1];"));
            for g in ints.iter().filter(|n| n.contains("groups")) {
                add(format!("{x}_channels_of_{w}_{g}"), format!("{x}.ndim >= 2;\n    {w}.ndim >= 2;\n    {x}.shape[1] == {w}.shape[1] * {g};"));
            }
        }
    }
    // Recurrent weights stack one block per gate: `w_ih` and `w_hh` have a gate count (1 for
    // a plain RNN, 3 for a GRU, 4 for an LSTM) times the hidden size rows, and the hidden size
    // is `w_hh`'s column count ("weight_ih first dim must be 3 * hidden_size").
    let recurrent: Vec<&str> = tensors.iter().copied().filter(|t| t.starts_with("w_") || t.starts_with("weight_")).collect();
    for w in &recurrent {
        for h in &recurrent {
            for gates in [1, 3, 4] {
                add(format!("{w}_gates_{gates}_of_{h}"), format!("{w}.ndim == 2;\n    {h}.ndim == 2;\n    {w}.shape[0] == {gates} * {h}.shape[1];"));
            }
        }
    }
    // Indices into the last two dimensions of the input, flattened (max_pool's `indices`).
    for idx in tensors.iter().filter(|t| is_index(t)) {
        for t in tensors.iter().filter(|t| *t != idx) {
            add(format!("{idx}_indexes_{t}_plane"), format!("{t}.ndim >= 2;\n    {idx}.values in 0..{t}.shape[-1] * {t}.shape[-2];"));
        }
    }
}

/// The arithmetic of sliding windows (pooling, convolution): a window dilated and padded fits the
/// input, so the output has at least one element (`(L + 2p - d(k - 1) - 1) / s + 1 >= 1`), the
/// check behind "Invalid computed output size" and "Kernel size can't be greater than actual
/// input size"; and the per-dimension lists agree in length, or one is empty (`stride=[]` means
/// the kernel's). The parameters are found by the names ATen's schemas give them.
fn windows(api: &ApiSpec, tensors: &[&str], add: &mut impl FnMut(String, String)) {
    let list = |name: &str| api.params.iter().find(|p| p.name == name && matches!(p.ty, ParamType::IntList(_)) && !p.optional).map(|p| p.name.as_str());
    let (padding, dilation) = (list("padding"), list("dilation"));
    let dilated = |d: Option<&str>, i: &str, k: &str| d.map_or(k.to_string(), |d| format!("{d}[{i}] * ({k} - 1) + 1"));
    // Without dilation too: `avg_pool2d` has none, and a dilated rule is no use while its
    // dilations are left at their defaults.
    let dilations: Vec<Option<&str>> = if dilation.is_some() { vec![None, dilation] } else { vec![None] };
    if let (Some(k), Some(p)) = (list("kernel_size"), padding) {
        for t in tensors.iter().filter(|t| !t.contains("indices")) {
            for &d in &dilations {
                let same_len = d.map_or(String::new(), |d| format!("\n    len({d}) == len({k});"));
                add(
                    format!("{k}{}_fits_padded_{t}", d.map_or(String::new(), |d| format!("_{d}"))),
                    format!(
                        "len({p}) == len({k});{same_len}\n    len({k}) <= {t}.ndim;\n    forall i in 0..len({k}): {} <= {t}.shape[{t}.ndim - len({k}) + i] + 2 * {p}[i];",
                        dilated(d, "i", &format!("{k}[i]"))
                    ),
                );
            }
        }
    }
    // A convolution's weight has two dimensions more than its spatial lists are long, and the
    // input as many (batched) or one fewer (unbatched): "expected stride to be ... a list of 3
    // values to match the convolution dimensions", "Expected 4D (unbatched) or 5D (batched)".
    for w in tensors.iter().filter(|w| w.contains("weight")) {
        for l in ["stride", "padding", "dilation"].into_iter().filter_map(list) {
            add(format!("{l}_len_spatial_of_{w}"), format!("len({l}) == {w}.ndim - 2;"));
        }
        for x in tensors.iter().filter(|x| *x != w && !x.contains("bias")) {
            add(format!("{x}_batched_or_not_for_{w}"), format!("{x}.ndim >= {w}.ndim - 1;\n    {x}.ndim <= {w}.ndim;"));
            if let Some(p) = padding {
                let same_len = dilation.map_or(String::new(), |d| format!("\n    len({d}) == {w}.ndim - 2;"));
                add(
                    format!("{w}_window_fits_padded_{x}"),
                    format!(
                        "{w}.ndim >= 3;\n    {x}.ndim >= {w}.ndim - 1;\n    len({p}) == {w}.ndim - 2;{same_len}\n    forall i in 2..{w}.ndim: {} <= {x}.shape[{x}.ndim - {w}.ndim + i] + 2 * {p}[i - 2];",
                        dilated(dilation, "i - 2", &format!("{w}.shape[i]"))
                    ),
                );
            }
        }
        // A bias per output channel: the weight's first dimension (`conv2d`). A transposed
        // convolution's is its second times `groups`, which this does not cover.
        for b in tensors.iter().filter(|b| b.contains("bias")) {
            add(format!("{b}_per_output_channel_of_{w}"), format!("{b}.ndim == 1;\n    {w}.ndim >= 1;\n    {b}.shape[0] == {w}.shape[0];"));
        }
    }
    let unfixed = unfixed_lists(api);
    for a in &unfixed {
        for b in unfixed.iter().filter(|b| *b != a) {
            add(format!("{a}_len_of_{b}"), format!("len({a}) == len({b});"));
            add(format!("{a}_empty_or_len_of_{b}"), format!("len({a}) == 0 or len({a}) == len({b});"));
        }
    }
}

/// The int lists of no fixed length that are always given (`kernel_size: int[]`, where a
/// schema's `int[1]` may take one element or any number).
fn unfixed_lists(api: &ApiSpec) -> Vec<&str> {
    api.params.iter().filter(|p| p.ty == ParamType::IntList(None) && !p.optional).map(|p| p.name.as_str()).collect()
}

fn names(api: &ApiSpec, pred: impl Fn(&ParamType) -> bool) -> Vec<&str> {
    api.params.iter().filter(|p| pred(&p.ty)).map(|p| p.name.as_str()).collect()
}

#[cfg(test)]
#[path = "enumerate_tests.rs"]
mod tests;
