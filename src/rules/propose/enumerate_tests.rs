//! Tests of `enumerate`: the candidates each parameter type and family proposes, by their text.
use super::*;
use std::path::Path;

#[test]
fn candidates_check_against_their_api() {
    let src = "api torch.gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = false) -> Tensor {}\n";
    let checked = crate::check::check_text(Path::new("t.sfz"), src);
    let api = &checked.spec.apis[0];
    let cands = candidates(api);
    assert!(cands.iter().any(|c| c.text == "dim in -max(input.ndim, 1)..max(input.ndim, 1);"));
    assert!(cands.iter().any(|c| c.text == "index.values in 0..(if input.ndim == 0 then 1 else input.shape[dim]);"));
    // A dimension index is never bounded by another dimension's size.
    let transpose = crate::check::check_text(Path::new("t.sfz"), "api torch.transpose(input: Tensor, dim0: int, dim1: int) -> Tensor {}\n");
    assert!(!candidates(&transpose.spec.apis[0]).iter().any(|c| c.name.contains("_within_")));
    let text = crate::rules::rules_text(&api.name, &cands, None);
    let checked = crate::check::check_text(Path::new("t.sfz"), &format!("{src}\n{text}"));
    assert!(!checked.has_errors(), "{:?}", checked.diags.iter().map(|d| &d.message).collect::<Vec<_>>());
    assert_eq!(checked.spec.rules.len(), cands.len());
}

/// Bitwise kernels take bool and the integers, of each operand and of the pair: candidates
/// that `integral` (no bool) and `not_bool` (floats too) miss; they check.
#[test]
fn integer_or_bool_candidates_check() {
    let src = "api torch.bitwise_and(input: Tensor, other: Tensor) -> Tensor {}\n";
    let checked = crate::check::check_text(Path::new("t.sfz"), src);
    let cands = candidates(&checked.spec.apis[0]);
    let text_of = |name: &str| cands.iter().find(|c| c.name == name).map(|c| c.text.clone());
    assert_eq!(text_of("other_integral_or_bool").as_deref(), Some("other.dtype in [bool, uint8, int8, int16, int32, int64];"));
    assert_eq!(
        text_of("input_other_promote_integral_or_bool").as_deref(),
        Some("input.dtype in [bool, uint8, int8, int16, int32, int64] and other.dtype in [bool, uint8, int8, int16, int32, int64];")
    );
    assert_eq!(text_of("input_nonempty_but_batch").as_deref(), Some("forall i in 1..input.ndim: input.shape[i] >= 1;"));
    let text = crate::rules::rules_text(&checked.spec.apis[0].name, &cands, None);
    let checked = crate::check::check_text(Path::new("t.sfz"), &format!("{src}\n{text}"));
    assert!(!checked.has_errors(), "{:?}", checked.diags.iter().map(|d| &d.message).collect::<Vec<_>>());
}

/// The families of `more_checks` check, each on an operator that needs it.
#[test]
fn more_check_candidates_check() {
    for (src, name, expected) in [
        ("api torch.diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor {}\n", "dim1_dim2_distinct_dims_of_input", "(if dim1 < 0 then dim1 + max(input.ndim, 1) else dim1) != (if dim2 < 0 then dim2 + max(input.ndim, 1) else dim2);"),
        ("api torch.take(input: Tensor, index: Tensor) -> Tensor {}\n", "index_indexes_input_flat", "index.values in 0..input.numel;"),
        (
            "api torch.add(input: Tensor, other: Tensor, *, alpha: Scalar = 1) -> Tensor {}\n",
            "alpha_kind_fits_input_other",
            "alpha.dtype != bool;\n    input.dtype not in [bool, uint8, int8, int16, int32, int64] or other.dtype not in [bool, uint8, int8, int16, int32, int64] or alpha.dtype == int64;",
        ),
        ("api torch.masked_fill(input: Tensor, mask: Tensor, value: Scalar) -> Tensor {}\n", "value_unsigned_fits_input", "input.dtype != uint8 or value >= 0;"),
        ("api torch.arange(start: Scalar, end: Scalar, step: Scalar = 1) -> Tensor {}\n", "start_end_follow_step", "(start <= end and step > 0) or (start >= end and step < 0);"),
        (
            "api torch.reflection_pad1d(input: Tensor, padding: int[2]) -> Tensor {}\n",
            "padding_reflects_input",
            "len(padding) % 2 == 0;\n    len(padding) <= 2 * input.ndim;\n    forall i in 0..len(padding) / 2: input.shape[input.ndim - 1 - i] + padding[2 * i] + padding[2 * i + 1] >= 1 and padding[2 * i] < input.shape[input.ndim - 1 - i] and padding[2 * i + 1] < input.shape[input.ndim - 1 - i];",
        ),
        ("api torch.histc(input: Tensor, bins: int = 100, min: Scalar = 0, max: Scalar = 0) -> Tensor {}\n", "min_lt_max", "min < max;"),
        ("api torch.pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor {}\n", "input_channels_divisible_by_upscale_factor_squared", "upscale_factor >= 1;\n    input.ndim >= 3;\n    input.shape[-3] % (upscale_factor * upscale_factor) == 0;"),
        ("api torch.linalg.lu_factor(A: Tensor, *, pivot: bool = true) -> (Tensor, Tensor) {}\n", "pivot_true", "pivot == true;"),
        ("api torch.glu(input: Tensor, dim: int = -1) -> Tensor {}\n", "input_dim_even", "input.ndim >= 1;\n    input.shape[dim] % 2 == 0;"),
        ("api torch.view_as_real(input: Tensor) -> Tensor {}\n", "input_complex", "input.dtype in [complex64, complex128];"),
        ("api torch.select(input: Tensor, dim: int, index: int) -> Tensor {}\n", "index_position_in_input_dim", "index >= -(if input.ndim == 0 then 1 else input.shape[dim]) and index < (if input.ndim == 0 then 1 else input.shape[dim]);"),
        (
            "api torch.narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor {}\n",
            "start_length_span_in_input_dim",
            "start >= -(if input.ndim == 0 then 1 else input.shape[dim]) and start <= (if input.ndim == 0 then 1 else input.shape[dim]);\n    length >= 0;\n    (if start < 0 then start + (if input.ndim == 0 then 1 else input.shape[dim]) else start) + length <= (if input.ndim == 0 then 1 else input.shape[dim]);",
        ),
        (
            "api torch.gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = false) -> Tensor {}\n",
            "index_within_input_but_dim",
            "index.ndim == input.ndim;\n    forall i in 0..index.ndim: i == (if dim < 0 then dim + max(index.ndim, 1) else dim) or index.shape[i] <= input.shape[i];",
        ),
        ("api torch.scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor {}\n", "index_within_src", "index.ndim == src.ndim;\n    forall i in 0..index.ndim: index.shape[i] <= src.shape[i];"),
        (
            "api torch.select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor {}\n",
            "src_slices_input_at_dim",
            "src.ndim + 1 == input.ndim;\n    forall i in 0..src.ndim: src.shape[i] == input.shape[if i < (if dim < 0 then dim + max(input.ndim, 1) else dim) then i else i + 1];",
        ),
        ("api torch.conv3d(input: Tensor, weight: Tensor, groups: int = 1) -> Tensor {}\n", "weight_count_divisible_by_groups", "groups >= 1;\n    weight.ndim >= 1;\n    weight.shape[0] % groups == 0;"),
        ("api torch.binary_cross_entropy(input: Tensor, target: Tensor) -> Tensor {}\n", "input_values_in_unit", "input.dtype in [float16, bfloat16, float32, float64];\n    input.values in 0.0..=1.0;"),
        ("api torch.bincount(input: Tensor, weights: Tensor? = None, minlength: int = 0) -> Tensor {}\n", "input_values_nonnegative", "input.values >= 0.0;"),
        ("api torch.one_hot(input: Tensor, num_classes: int = -1) -> Tensor {}\n", "input_values_below_num_classes", "num_classes >= 1;\n    input.values in 0..num_classes;"),
        ("api torch.nll_loss(input: Tensor, target: Tensor) -> Tensor {}\n", "target_classes_of_input", "input.ndim >= 2;\n    input.shape[1] >= 1;\n    target.values in 0..input.shape[1];"),
        ("api torch.cartesian_prod(tensors: Tensor[]) -> Tensor {}\n", "tensors_elements_ndim_1", "forall t in tensors: t.ndim == 1;"),
        (
            "api torch.chain_matmul(matrices: Tensor[]) -> Tensor {}\n",
            "matrices_chained",
            "forall i in 1..len(matrices): matrices[i - 1].ndim >= 1 and matrices[i].ndim >= 1 and matrices[i - 1].shape[-1] == matrices[i].shape[0];",
        ),
        (
            "api torch.multi_margin_loss(input: Tensor, target: Tensor, p: Scalar = 1) -> Tensor {}\n",
            "target_classes_along_last_of_input",
            "input.ndim >= 1;\n    input.shape[-1] >= 1;\n    target.values in 0..input.shape[-1];",
        ),
        ("api torch.index_fill_(input: Tensor, dim: int, index: Tensor, value: Tensor) -> Tensor {}\n", "index_indexes_input_dim", "index.values in 0..(if input.ndim == 0 then 1 else input.shape[dim]);"),
        ("api torch.upsample_nearest1d(input: Tensor, output_size: int[]?, scale_factors: float[]?) -> Tensor {}\n", "output_size_len_spatial_of_input", "len(output_size) == input.ndim - 2;"),
        ("api torch.upsample_nearest1d(input: Tensor, output_size: int[]?, scale_factors: float[]?) -> Tensor {}\n", "output_size_given", "output_size != None;"),
        (
            "api torch.gru_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor? = None, b_hh: Tensor? = None) -> Tensor {}\n",
            "w_ih_gates_3_of_w_hh",
            "w_ih.ndim == 2;\n    w_hh.ndim == 2;\n    w_ih.shape[0] == 3 * w_hh.shape[1];",
        ),
        ("api torch.__iand__(input: Tensor, other: Tensor) -> Tensor {}\n", "other_casts_into_input", "other.dtype == bool or (input.dtype in [uint8, int8, int16, int32, int64] and other.dtype in [uint8, int8, int16, int32, int64]) or (input.dtype in [float16, bfloat16, float32, float64] and other.dtype not in [complex64, complex128]) or input.dtype in [complex64, complex128];"),
    ] {
        let checked = crate::check::check_text(Path::new("t.sfz"), src);
        assert!(!checked.has_errors(), "{src}: {:?}", checked.diags.iter().map(|d| &d.message).collect::<Vec<_>>());
        let cands = candidates(&checked.spec.apis[0]);
        assert_eq!(cands.iter().find(|c| c.name == name).map(|c| c.text.as_str()), Some(expected), "{src}");
        let text = crate::rules::rules_text(&checked.spec.apis[0].name, &cands, None);
        let checked = crate::check::check_text(Path::new("t.sfz"), &format!("{src}\n{text}"));
        assert!(!checked.has_errors(), "{src}: {:?}", checked.diags.iter().map(|d| &d.message).collect::<Vec<_>>());
    }
    assert!(!is_in_place("torch.__and__") && is_in_place("torch.__iand__") && is_in_place("torch.abs_") && !is_in_place("torch.abs"));
}

/// Tensor lists get candidates for their lengths, their elements and the relations between
/// them (cat's "all agree but in `dim`", pairwise broadcasting, two lists walked in step),
/// and tensors relations with sizes (layer_norm's trailing sizes); all check.
#[test]
fn list_and_relation_candidates_check() {
    for (src, expected) in [
        (
            "api torch.cat(tensors: Tensor[], dim: int = 0) -> Tensor {}\n",
            "forall t in tensors: t.ndim == tensors[0].ndim and (forall k in 0..t.ndim: k == dim or k == dim + t.ndim or t.shape[k] == tensors[0].shape[k]);",
        ),
        ("api torch.stack(tensors: Tensor[], dim: int = 0) -> Tensor {}\n", "dim in -(tensors[0].ndim + 1)..tensors[0].ndim + 1;"),
        ("api torch.broadcast_tensors(tensors: Tensor[]) -> Tensor[] {}\n", "forall a in tensors: forall b in tensors: broadcastable(a, b);"),
        ("api torch._foreach_add(input: Tensor[], other: Tensor[], *, alpha: Scalar = 1) -> Tensor[] {}\n", "len(input) == len(other);\n    forall i in 0..len(input): input[i].shape == other[i].shape;"),
        ("api torch._foreach_mul(input: Tensor[], other: Tensor) -> Tensor[] {}\n", "forall a in input: broadcastable(a, other);"),
        ("api torch._foreach_exp_(input: Tensor[]) {}\n", "input[*].dtype in [float16, bfloat16, float32, float64, complex64, complex128];"),
        (
            "api torch.mul_(input: Tensor, other: Tensor) -> Tensor {}\n",
            "other.dtype == bool or (input.dtype in [uint8, int8, int16, int32, int64] and other.dtype in [uint8, int8, int16, int32, int64]) or (input.dtype in [float16, bfloat16, float32, float64] and other.dtype not in [complex64, complex128]) or input.dtype in [complex64, complex128];",
        ),
        (
            "api torch.layer_norm(input: Tensor, normalized_shape: int[], weight: Tensor? = None) -> Tensor {}\n",
            "len(normalized_shape) <= input.ndim;\n    forall i in 0..len(normalized_shape): normalized_shape[i] == input.shape[input.ndim - len(normalized_shape) + i];",
        ),
        (
            "api torch.gru(input: Tensor, hx: Tensor, params: Tensor[], has_biases: bool, num_layers: int, dropout: float, train: bool, bidirectional: bool, batch_first: bool) -> (Tensor, Tensor) {}\n",
            "len(params) == num_layers * (if bidirectional then 2 else 1) * (if has_biases then 4 else 2);",
        ),
        (
            "api torch.mul_(input: Tensor, other: Tensor) -> Tensor {}\n",
            "other.ndim <= input.ndim;\n    forall i in 0..other.ndim: other.shape[i] == 1 or other.shape[i] == input.shape[input.ndim - other.ndim + i];",
        ),
        (
            "api torch._upsample_nearest_exact2d_backward(grad_output: Tensor, output_size: int[2], input_size: int[4], scales_h: float? = None, scales_w: float? = None) -> Tensor {}\n",
            "len(output_size) <= grad_output.ndim;\n    forall i in 0..len(output_size): output_size[i] == grad_output.shape[grad_output.ndim - len(output_size) + i];",
        ),
        ("api torch.group_norm(input: Tensor, num_groups: int) -> Tensor {}\n", "num_groups >= 1;\n    input.shape[1] % num_groups == 0;"),
        (
            "api torch.max_pool2d(input: Tensor, kernel_size: int[2], stride: int[2] = [1, 1], padding: int[2] = [0, 0]) -> Tensor {}\n",
            "len(padding) == len(kernel_size);\n    forall i in 0..len(padding): 2 * padding[i] <= kernel_size[i];",
        ),
        (
            "api torch.conv2d(input: Tensor, weight: Tensor, bias: Tensor? = None, stride: int[2] = 1, padding: int[2] = 0, dilation: int[2] = 1, groups: int = 1) -> Tensor {}\n",
            "input.ndim >= 2;\n    weight.ndim >= 2;\n    input.shape[1] == weight.shape[1] * groups;",
        ),
        ("api torch.max_pool2d_with_indices_backward(grad_output: Tensor, input: Tensor, indices: Tensor) -> Tensor {}\n", "input.ndim >= 2;\n    indices.values in 0..input.shape[-1] * input.shape[-2];"),
        (
            "api torch.max_pool1d(input: Tensor, kernel_size: int[], stride: int[] = [], padding: int[] = [0], dilation: int[] = [1]) -> Tensor {}\n",
            "len(padding) == len(kernel_size);\n    len(dilation) == len(kernel_size);\n    len(kernel_size) <= input.ndim;\n    forall i in 0..len(kernel_size): dilation[i] * (kernel_size[i] - 1) + 1 <= input.shape[input.ndim - len(kernel_size) + i] + 2 * padding[i];",
        ),
        ("api torch.max_pool1d(input: Tensor, kernel_size: int[], stride: int[] = []) -> Tensor {}\n", "len(stride) == 0 or len(stride) == len(kernel_size);"),
        ("api torch.conv3d(input: Tensor, weight: Tensor, stride: int[3] = [1, 1, 1]) -> Tensor {}\n", "len(stride) == weight.ndim - 2;"),
        ("api torch.conv1d(input: Tensor, weight: Tensor, bias: Tensor? = None) -> Tensor {}\n", "bias.ndim == 1;\n    weight.ndim >= 1;\n    bias.shape[0] == weight.shape[0];"),
        ("api torch.conv3d(input: Tensor, weight: Tensor, stride: int[3] = [1, 1, 1]) -> Tensor {}\n", "input.ndim >= weight.ndim - 1;\n    input.ndim <= weight.ndim;"),
        (
            "api torch.conv2d(input: Tensor, weight: Tensor, bias: Tensor? = None, stride: int[2] = 1, padding: int[2] = 0, dilation: int[2] = 1, groups: int = 1) -> Tensor {}\n",
            "weight.ndim >= 3;\n    input.ndim >= weight.ndim - 1;\n    len(padding) == weight.ndim - 2;\n    len(dilation) == weight.ndim - 2;\n    forall i in 2..weight.ndim: dilation[i - 2] * (weight.shape[i] - 1) + 1 <= input.shape[input.ndim - weight.ndim + i] + 2 * padding[i - 2];",
        ),
    ] {
        let checked = crate::check::check_text(Path::new("t.sfz"), src);
        let api = &checked.spec.apis[0];
        let cands = candidates(api);
        assert!(cands.iter().any(|c| c.text == expected), "{expected} not among {:?}", cands.iter().map(|c| &c.text).collect::<Vec<_>>());
        let text = crate::rules::rules_text(&api.name, &cands, None);
        let checked = crate::check::check_text(Path::new("t.sfz"), &format!("{src}\n{text}"));
        assert!(!checked.has_errors(), "{src}: {:?}", checked.diags.iter().filter(|d| d.is_error()).map(|d| &d.message).collect::<Vec<_>>());
        assert_eq!(checked.spec.rules.len(), cands.len());
    }
}

/// A backward operator's `grad_output` and `indices` come from its forward's outputs: no
/// candidate is about them, while the forward's own arguments keep theirs.
#[test]
fn no_candidate_is_about_a_parameter_the_forward_fills() {
    let src = "api torch.max_pool2d_with_indices(input: Tensor, kernel_size: int[2], stride: int[2], padding: int[2] = [0, 0]) -> (Tensor, Tensor) {}\n\n\
        api torch.max_pool2d_with_indices_backward(grad_output: Tensor, input: Tensor, kernel_size: int[2], stride: int[2], padding: int[2], indices: Tensor) -> Tensor {\n    \
        from torch.max_pool2d_with_indices(input = input, kernel_size = kernel_size, stride = stride, padding = padding) {\n        \
        grad_output: like(result.0);\n        indices: result.1;\n    }\n}\n";
    let checked = crate::check::check_text(Path::new("t.sfz"), src);
    assert!(!checked.has_errors(), "{:?}", checked.diags.iter().map(|d| &d.message).collect::<Vec<_>>());
    let backward = &checked.spec.apis[1];
    assert!(backward.from.is_some());
    let cands = candidates(backward);
    assert!(cands.iter().any(|c| c.name == "padding_at_most_half_of_kernel_size"), "{:?}", cands.iter().map(|c| &c.name).collect::<Vec<_>>());
    for c in &cands {
        assert!(!c.text.contains("grad_output") && !c.text.contains("indices"), "{}", c.text);
    }
    // Without the filter the same parameters get candidates.
    assert!(every_candidate(backward).iter().any(|c| c.text.contains("indices")));
}

/// A fed parameter that `like(p, shape)` reads lends the forward's input its dtype: its
/// dtype candidates stay, and those about its shape, which the forward's output gives, do not.
#[test]
fn a_fed_parameter_a_like_reads_keeps_its_dtype_candidates() {
    let src = "api torch.upsample_nearest1d(input: Tensor, output_size: int[]?, scale_factors: float[]?) -> Tensor {}\n\n\
        api torch.upsample_nearest1d_backward(grad_output: Tensor, output_size: int[], input_size: int[3], scales: float? = None) -> Tensor {\n    \
        from torch.upsample_nearest1d(input = like(grad_output, input_size), output_size = output_size) {\n        \
        grad_output: like(result);\n    }\n}\n";
    let checked = crate::check::check_text(Path::new("t.sfz"), src);
    assert!(!checked.has_errors(), "{:?}", checked.diags.iter().map(|d| &d.message).collect::<Vec<_>>());
    let cands = candidates(&checked.spec.apis[1]);
    let about = |w: &str| cands.iter().filter(|c| c.text.contains(w)).map(|c| c.name.as_str()).collect::<Vec<_>>();
    assert!(about("grad_output.dtype").contains(&"grad_output_floating"), "{:?}", about("grad_output"));
    assert!(about("grad_output.ndim").is_empty() && about("grad_output.shape").is_empty(), "{:?}", about("grad_output"));
    assert!(reads_only_dtype_or_values("grad_output.values >= 0.0;", &["grad_output"], &["grad_output"]));
    assert!(!reads_only_dtype_or_values("grad_output.dtype == input.dtype and grad_output.ndim == 1;", &["grad_output"], &["grad_output"]));
    assert!(!reads_only_dtype_or_values("indices.dtype == int64;", &["grad_output"], &["grad_output", "indices"]));
}

/// The conditional families (emptiness unless a size is given, dtypes unless one is given,
/// promoted dtypes, flags) check against APIs that have the parameters they need.
#[test]
fn conditional_candidates_check() {
    for (src, expected) in [
        ("api torch.fft.fft(input: Tensor, n: int? = None, dim: int = -1, norm: str? = None) -> Tensor {}\n", "n != None or input.ndim == 0 or input.shape[dim] >= 1;"),
        ("api torch.log_softmax(input: Tensor, dim: int, dtype: dtype? = None) -> Tensor {}\n", "dtype != None or input.dtype in [float16, bfloat16, float32, float64];"),
        ("api torch.amin(input: Tensor, dim: int[] = [], keepdim: bool = false) -> Tensor {}\n", "forall i in 0..len(dim): input.ndim == 0 or input.shape[dim[i]] >= 1;"),
        ("api torch.sum(input: Tensor, dim: int[1]?, keepdim: bool = false, *, dtype: dtype? = None) -> Tensor {}\n", "dim != None or input.numel > 0;"),
        ("api torch.argmax(input: Tensor, dim: int? = None, keepdim: bool = false) -> Tensor {}\n", "dim != None or input.numel > 0;"),
        ("api torch.zeros_like(input: Tensor, *, dtype: dtype? = None, pin_memory: bool? = None) -> Tensor {}\n", "pin_memory == false;"),
        ("api torch.unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor {}\n", "size <= (if input.ndim == 0 then 1 else input.shape[dimension]);"),
        (
            "api torch.nextafter(input: Tensor, other: Tensor) -> Tensor {}\n",
            "input.dtype in [float16, bfloat16, float32, float64] or other.dtype in [float16, bfloat16, float32, float64];",
        ),
    ] {
        let checked = crate::check::check_text(Path::new("t.sfz"), src);
        let api = &checked.spec.apis[0];
        let cands = candidates(api);
        assert!(cands.iter().any(|c| c.text == expected), "{expected} not among {:?}", cands.iter().map(|c| &c.text).collect::<Vec<_>>());
        let text = crate::rules::rules_text(&api.name, &cands, None);
        let checked = crate::check::check_text(Path::new("t.sfz"), &format!("{src}\n{text}"));
        assert!(!checked.has_errors(), "{src}: {:?}", checked.diags.iter().filter(|d| d.is_error()).map(|d| &d.message).collect::<Vec<_>>());
        assert_eq!(checked.spec.rules.len(), cands.len());
    }
}
