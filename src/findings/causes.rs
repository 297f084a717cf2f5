//! The findings of a folder as the causes a maintainer counts: findings that differ only in the
//! dtype, the alias, the overload, the Python name, or the check that met a memory error are one
//! cause, listed once with its variants; causes ranked worst first.
use std::collections::BTreeMap;

use serde::Serialize;

use super::baseline::{Baseline, Entry};
use super::severity::{self, Severity};
use super::Finding;
use crate::oracle::{Cause, Death};
use crate::wire::case::DType;
use crate::wire::oracle::Oracle;

/// What makes findings one cause.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum CauseKey {
    /// The memory errors of one operator family, in any check and frame: a kernel that writes out
    /// of bounds damages the heap, and the damage is found where the allocator next looks.
    MemoryErrors { family: String },
    /// An unscaled sum of squares left this dtype: one defect class across operators, relations
    /// and the two oracles that see it (`overflow`, `relation`).
    SquaresOverflow { dtype: DType },
    /// A p-norm's unscaled sum of |x|^p (p above 2) left this dtype's range: as `SquaresOverflow`.
    PowersOverflow { dtype: DType },
    /// A cause that names one defect wherever it shows (an assert's location, the native frame
    /// a worker died in): one cause through any operators.
    Specific { text: String },
    /// Deaths of one operator family (of any rank, as `MemoryErrors`) on an input with an empty
    /// tensor: a kernel that does not guard the empty case, whatever it then dies of (a division
    /// by the zero size, a read past an empty buffer), wherever (`pdist`'s backward dies with
    /// SIGFPE in two frames and with SIGSEGV on `[0, n]` inputs) and in whichever check's call
    /// (`max_pool3d_with_indices_backward` in the call and in its float64 reference).
    EmptyInputDeaths { family: String },
    /// Outputs one operator family leaves unwritten, whichever check compared them (the out=
    /// form and another layout both disagree with garbage).
    Uninitialised { family: String },
    /// Anything else: one operator family, one oracle, one cause.
    Family { family: String, oracle: Oracle, text: String },
}

/// One cause: its findings (the representative first), how bad it is, and the baseline entry
/// that knows it.
#[derive(Clone, Debug)]
pub struct CauseGroup<'a> {
    pub key: CauseKey,
    pub findings: Vec<&'a Finding>,
    pub severity: Severity,
    pub known: Option<&'a Entry>,
}

impl CauseGroup<'_> {
    /// The finding that stands for the cause: the worst, then the smallest input.
    pub fn representative(&self) -> &Finding {
        self.findings[0]
    }

    /// A short title naming the cause class.
    pub fn title(&self) -> String {
        match &self.key {
            CauseKey::MemoryErrors { family } => format!("memory corruption in {family}"),
            CauseKey::SquaresOverflow { dtype } => format!("premature overflow: {} {dtype}", crate::oracle::cause::SQUARES_OVERFLOW),
            CauseKey::PowersOverflow { dtype } => format!("premature overflow: {} {dtype}", crate::oracle::cause::POWERS_OVERFLOW),
            CauseKey::Specific { text } => text.clone(),
            CauseKey::EmptyInputDeaths { family } => format!("{family}: the worker dies on an empty tensor"),
            CauseKey::Uninitialised { family } => format!("{family}: an output holds uninitialised memory"),
            CauseKey::Family { family, oracle, text } => format!("{family}: {oracle}: {text}"),
        }
    }

    /// The APIs the cause shows through, in order of first finding.
    pub fn apis(&self) -> Vec<&str> {
        let mut apis: Vec<&str> = Vec::new();
        for f in &self.findings {
            if !apis.contains(&f.api.as_str()) {
                apis.push(&f.api);
            }
        }
        apis
    }

    /// A stable name for `sfz report --issue`: the representative's id.
    pub fn id(&self) -> &str {
        &self.representative().id
    }
}

/// The operator family of an API: its canonical name (an alias names the API it stands for)
/// without namespace, overload, in-place or out= suffix, leading underscores, `_backward`,
/// `_interface`, or the marks of ATen's internal entry points (`native_`, `_legit`,
/// `_impl_index`, `_with_update`, `_functional`, ...):
/// `torch.ops.aten.max_pool2d_with_indices_backward.grad_input` and `torch.max_pool2d` are
/// `max_pool2d_with_indices` and `max_pool2d`.
pub fn family(api: &str) -> String {
    // An in-place form's docs say nothing of aliases (`torch.arctan2_`); its out-of-place name's
    // do (`torch.arctan2` is `torch.atan2`).
    let base = api.strip_suffix('_').filter(|b| !b.ends_with('_')).unwrap_or(api);
    let canonical = crate::ops::docs::canonical(base);
    let mut name = canonical.as_str();
    for prefix in ["torch.ops.aten.", "torch.nn.functional.", "torch.special.", "torch.linalg.", "torch.fft.", "torch.Tensor.", "torch."] {
        if let Some(rest) = name.strip_prefix(prefix) {
            name = rest;
            break;
        }
    }
    // `add.out`, `max_pool2d_with_indices_backward.grad_input`: the overload is no family.
    if canonical.starts_with("torch.ops.aten.") {
        name = name.split('.').next().unwrap_or(name);
    }
    let mut name = name.trim_start_matches('_').to_string();
    // ATen's own entry points to a public kernel: `native_batch_norm`,
    // `_native_batch_norm_legit_no_training`, `_batch_norm_impl_index`,
    // `_batch_norm_with_update_functional` all run `batch_norm`'s CPU kernel.
    if let Some(rest) = name.strip_prefix("native_") {
        name = rest.to_string();
    }
    // `max_pool2d` is `max_pool2d_with_indices` without its second output, one kernel; the
    // public `_weight_norm` is `_weight_norm_interface` with autograd around it.
    for suffix in ["_backward", "_out", "_", "_with_indices", "_interface", "_functional", "_no_training", "_legit", "_impl_index", "_with_update", "_no_update"] {
        if let Some(rest) = name.strip_suffix(suffix) {
            name = rest.to_string();
        }
    }
    // The fused optimizer steps are one kernel pattern (`_fused_adam`, `_fused_adamw`,
    // `_fused_sgd`, `_fused_adagrad` walk parameter, gradient and state buffers alike): what
    // one gets wrong (a non-dense parameter beside a contiguous gradient), all do.
    if name.strip_prefix("fused_").is_some_and(|o| FUSED_OPTIMIZERS.contains(&o)) {
        return "fused_optimizer_step".to_string();
    }
    // The anti-aliased resamplings are one separable kernel whose filter (bilinear, bicubic,
    // Lanczos) is a parameter: what its index and weight computation gets wrong, all three do.
    if name.starts_with("upsample_") && name.ends_with("_aa") {
        return "upsample_aa".to_string();
    }
    if let Some((_, public)) = HELPERS.iter().find(|(helper, _)| *helper == name) {
        return public.to_string();
    }
    name
}

/// ATen helpers that are the whole kernel of one operator, which calls nothing else
/// (`fused_moving_avg_obs_fake_quant` returns the helper's first output; `thnn_conv2d` is
/// `_slow_conv2d_forward`'s first output, differentiated by `_slow_conv2d_backward`).
const HELPERS: &[(&str, &str)] = &[("fused_moving_avg_obs_fq_helper", "fused_moving_avg_obs_fake_quant"), ("slow_conv2d_forward", "thnn_conv2d"), ("slow_conv2d", "thnn_conv2d")];

/// The optimizers ATen has a fused step for (`_fused_<name>`).
const FUSED_OPTIMIZERS: &[&str] = &["adam", "adamw", "sgd", "adagrad"];

/// A family without the dimensions it names (`conv1d`, `conv2d`, `conv3d` → `conv`): memory
/// errors of one kernel template die in every rank of it (the three convolutions at oneDNN's
/// `convolution_forward::do_compute`, the max-pool backwards writing through bad indices).
fn undimensioned(family: &str) -> String {
    let mut out = String::with_capacity(family.len());
    let bytes = family.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let ends_word = |k: usize| k >= bytes.len() || bytes[k] == b'_';
        if bytes[i].is_ascii_digit() && bytes.get(i + 1) == Some(&b'd') && ends_word(i + 2) && i > 0 && bytes[i - 1].is_ascii_alphabetic() {
            i += 2;
            continue;
        }
        out.push(bytes[i] as char);
        i += 1;
    }
    out
}

/// The cause a finding belongs to.
pub fn key(f: &Finding) -> CauseKey {
    if matches!(f.cause, Cause::Died { .. }) && f.case.args.iter().flat_map(|a| a.tensors()).any(|r| r.numel() == 0) {
        return CauseKey::EmptyInputDeaths { family: undimensioned(&family(&f.api)) };
    }
    if matches!(f.cause, Cause::Uninitialised { .. }) {
        return CauseKey::Uninitialised { family: family(&f.api) };
    }
    if f.cause.is_memory_error() {
        return CauseKey::MemoryErrors { family: undimensioned(&family(&f.api)) };
    }
    if let Some(dtype) = f.cause.squares() {
        return CauseKey::SquaresOverflow { dtype };
    }
    if let Some(dtype) = f.cause.powers() {
        return CauseKey::PowersOverflow { dtype };
    }
    // A death keyed by its frame or a specific message is one defect through any operator, in
    // the call or a check (the place is left out).
    match &f.cause {
        Cause::Died { death, site: Some(site), .. } => {
            let what = match death {
                Death::Memory => crate::oracle::cause::MEMORY_ERROR.to_string(),
                Death::Signal(s) => s.name(),
                Death::Exit(code) => format!("exit {code}"),
            };
            return CauseKey::Specific { text: format!("{what} in {site}") };
        }
        Cause::Internal { .. } if f.cause.is_specific() => return CauseKey::Specific { text: f.cause.class_text() },
        c if c.is_specific() => return CauseKey::Specific { text: c.to_string() },
        _ => {}
    }
    // A failure of a backward's forward call is the forward's.
    let api = match f.cause.place() {
        Some(crate::oracle::Place::Forward(forward)) => forward.as_str(),
        _ => f.api.as_str(),
    };
    CauseKey::Family { family: family(api), oracle: f.oracle, text: f.cause.class_text() }
}

/// The findings grouped by cause, worst first (then most findings, then first found); within a
/// cause, the worst finding with the smallest input first.
pub fn group<'a>(findings: &[&'a Finding], baseline: Option<&'a Baseline>) -> Vec<CauseGroup<'a>> {
    let mut by_key: BTreeMap<CauseKey, Vec<&'a Finding>> = BTreeMap::new();
    let mut order: Vec<CauseKey> = Vec::new();
    for f in findings {
        let k = key(f);
        if !by_key.contains_key(&k) {
            order.push(k.clone());
        }
        by_key.entry(k).or_default().push(f);
    }
    let mut groups: Vec<(usize, CauseGroup<'a>)> = order
        .into_iter()
        .enumerate()
        .map(|(first, key)| {
            let mut fs = by_key.remove(&key).unwrap_or_default();
            // A finding of the operator that failed stands for the cause before one whose
            // backward only met its forward failing (named after the op that failed).
            let through_forward = |f: &Finding| matches!(f.cause.place(), Some(crate::oracle::Place::Forward(_)));
            fs.sort_by_key(|f| (severity::of(f), through_forward(f), f.case.input_elements()));
            let severity = fs.iter().map(|f| severity::of(f)).min().unwrap_or(Severity::Degenerate);
            let known = baseline.and_then(|b| fs.iter().find_map(|f| b.matching(f)));
            (first, CauseGroup { key, findings: fs, severity, known })
        })
        .collect();
    groups.sort_by_key(|(first, g)| (g.severity, std::cmp::Reverse(g.findings.len()), *first));
    groups.into_iter().map(|(_, g)| g).collect()
}

#[cfg(test)]
mod tests {
    use super::{family, group, CauseKey};
    use crate::findings::severity::Severity;
    use crate::findings::Finding;

    use crate::findings::store::older_finding as finding;

    /// The ids of `fs` as `group` groups them, worst first.
    fn grouped_ids(fs: &[Finding]) -> Vec<Vec<String>> {
        let refs: Vec<&Finding> = fs.iter().collect();
        group(&refs, None).iter().map(|g| g.findings.iter().map(|f| f.id.clone()).collect()).collect()
    }

    #[test]
    fn a_family_is_the_operator_without_namespace_overload_alias_or_direction() {
        assert_eq!(family("torch.ops.aten.max_pool2d_with_indices_backward.grad_input"), "max_pool2d");
        assert_eq!(family("torch.nn.functional.max_pool2d"), "max_pool2d");
        assert_eq!(family("torch.ops.aten.add.out"), "add");
        assert_eq!(family("torch.abs_"), "abs");
        assert_eq!(family("torch._foo_backward"), "foo");
        assert_eq!(family("torch.divide"), family("torch.div"), "an alias is its API");
        assert_eq!(family("torch.arctan2_"), family("torch.atan2"), "and an alias's in-place form too");
        assert_eq!(family("torch.max_pool2d_with_indices_backward"), family("torch.max_pool2d"), "one kernel with or without its indices");
        assert_eq!(family("torch.ops.aten._weight_norm_interface.default"), family("torch._weight_norm"), "the kernel behind the public op");
        assert_eq!(family("torch._weight_norm_interface_backward"), "weight_norm");
        for internal in [
            "torch.native_batch_norm",
            "torch._native_batch_norm_legit_no_training",
            "torch._batch_norm_impl_index_backward",
            "torch._batch_norm_with_update_functional",
            "torch._batch_norm_no_update",
        ] {
            assert_eq!(family(internal), "batch_norm", "{internal}");
        }
        assert_eq!(family("torch.native_layer_norm_backward"), "layer_norm");
        for step in ["torch.ops.aten._fused_adam.default", "torch.ops.aten._fused_adamw_.default", "torch._fused_sgd", "torch._fused_adagrad_"] {
            assert_eq!(family(step), "fused_optimizer_step", "{step}");
        }
        assert_eq!(family("torch._fused_moving_avg_obs_fq_helper"), "fused_moving_avg_obs_fake_quant", "not an optimizer: the public op's helper");
        for resampling in ["torch._upsample_bilinear2d_aa_backward", "torch._upsample_bicubic2d_aa", "torch.ops.aten._upsample_lanczos2d_aa.out"] {
            assert_eq!(family(resampling), "upsample_aa", "{resampling}");
        }
        assert_eq!(family("torch.upsample_bilinear2d"), "upsample_bilinear2d", "without antialiasing, its own kernel");
        for conv in ["torch._slow_conv2d_forward", "torch._slow_conv2d_backward", "torch.thnn_conv2d"] {
            assert_eq!(family(conv), "thnn_conv2d", "{conv}");
        }
        assert_eq!(family("torch.batch_norm_update_stats"), "batch_norm_update_stats", "another operator");
    }

    /// One operator's heap damage found by its call and by two checks is one cause, ranked
    /// first; an overload's precision finding and the operator's are one cause; another
    /// operator's is another.
    #[test]
    fn variants_of_one_cause_are_one_group_and_the_worst_comes_first() {
        let fs = [
            finding("a", "torch.ops.aten.cosine_similarity", "precision", "values differ in output 0"),
            finding("b", "torch.cosine_similarity", "precision", "values differ in output 0"),
            finding("c", "torch.max_pool3d_with_indices_backward", "layout", "other memory layout: memory error"),
            finding("d", "torch.max_pool3d_with_indices_backward", "crash", "memory error in at::native::kernel"),
            finding("e", "torch.ops.aten.max_pool3d_with_indices_backward.grad_input", "out", "out= variant: memory error"),
            finding("f", "torch.mul", "precision", "values differ in output 0"),
            finding("g", "torch.linalg.ldl_factor", "internal_error", "INTERNAL ASSERT a.cpp:1"),
            finding("h", "torch.linalg.ldl_factor_ex", "internal_error", "INTERNAL ASSERT a.cpp:1"),
        ];
        let refs: Vec<&Finding> = fs.iter().collect();
        let groups = group(&refs, None);
        let ids: Vec<Vec<&str>> = groups.iter().map(|g| g.findings.iter().map(|f| f.id.as_str()).collect()).collect();
        assert_eq!(ids, vec![vec!["c", "d", "e"], vec!["a", "b"], vec!["f"], vec!["g", "h"]], "{groups:#?}");
        assert_eq!(groups[0].key, CauseKey::MemoryErrors { family: "max_pool".into() });
        assert_eq!(groups.iter().map(|g| g.severity).collect::<Vec<_>>(), [Severity::MemoryCorruption, Severity::SilentWrong, Severity::SilentWrong, Severity::Error]);
    }

    /// Garbage an operator returns disagrees with its out= form and its other layout alike: one
    /// cause; another operator's is another.
    #[test]
    fn outputs_left_unwritten_are_one_cause_whichever_check_compared_them() {
        let unwritten = |id: &str, api: &str, oracle: &str| Finding { cause: crate::oracle::Cause::Uninitialised { output: 0 }, ..finding(id, api, oracle, "") };
        let fs = [
            unwritten("a", "torch.multi_margin_loss", "out"),
            unwritten("b", "torch.ops.aten.multi_margin_loss.default", "layout"),
            finding("c", "torch.multi_margin_loss", "layout", "values differ in output 0"),
            unwritten("d", "torch.nll_loss", "out"),
        ];
        let refs: Vec<&Finding> = fs.iter().collect();
        let groups = group(&refs, None);
        let ids: Vec<Vec<&str>> = groups.iter().map(|g| g.findings.iter().map(|f| f.id.as_str()).collect()).collect();
        assert_eq!(ids, vec![vec!["a", "b"], vec!["c"], vec!["d"]], "{groups:#?}");
        assert_eq!(groups[0].title(), "multi_margin_loss: an output holds uninitialised memory");
    }

    /// A p-norm's sum of |x|^p leaving float32 is one cause across operators and oracles, apart
    /// from the sum of squares.
    #[test]
    fn power_sums_that_leave_the_range_are_one_cause_apart_from_squares() {
        use crate::oracle::Cause;
        use crate::wire::case::DType;
        let with = |id: &str, api: &str, oracle: &str, cause: Cause| Finding { cause, ..finding(id, api, oracle, "") };
        let powers = Some(DType::Float32);
        let fs = [
            with("a", "torch.renorm", "precision", Cause::Values { output: 0, squares: None, powers }),
            with("b", "torch.embedding_renorm_", "overflow", Cause::Premature { output: 0, what: "inf".into(), squares: None, powers }),
            with("c", "torch.linalg.vector_norm", "overflow", Cause::Premature { output: 0, what: "inf".into(), squares: powers, powers: None }),
        ];
        let refs: Vec<&Finding> = fs.iter().collect();
        let groups = group(&refs, None);
        let ids: Vec<Vec<&str>> = groups.iter().map(|g| g.findings.iter().map(|f| f.id.as_str()).collect()).collect();
        assert_eq!(ids, vec![vec!["a", "b"], vec!["c"]], "{groups:#?}");
        assert_eq!(groups[0].title(), "premature overflow: an unscaled sum of p-th powers leaves the range of float32");
        assert_eq!(fs[0].cause.to_string(), "values differ in output 0: an unscaled sum of p-th powers leaves the range of float32");
    }

    #[test]
    fn memory_errors_of_one_kernel_in_every_rank_are_one_cause() {
        assert_eq!(super::undimensioned("conv1d"), "conv");
        assert_eq!(super::undimensioned("max_pool3d"), "max_pool");
        assert_eq!(super::undimensioned("upsample_bilinear2d_aa"), "upsample_bilinear_aa");
        assert_eq!(super::undimensioned("fft2"), "fft2");
        assert_eq!(super::undimensioned("pdist"), "pdist");
        let fs = [
            finding("a", "torch.conv1d", "crash", "memory error in ideep::convolution_forward::do_compute"),
            finding("b", "torch.conv3d", "crash", "memory error in ideep::convolution_forward::do_compute"),
            finding("c", "torch.conv1d", "precision", "values differ in output 0"),
            finding("d", "torch.conv3d", "precision", "values differ in output 0"),
        ];
        let ids = grouped_ids(&fs);
        // Wrong values stay per operator: only memory errors are one cause across ranks.
        assert_eq!(ids, vec![vec!["a", "b"], vec!["c"], vec!["d"]]);
    }

    /// A wrong derivative of one family is one cause whichever input's and whichever reference
    /// showed it, and whichever filter of the anti-aliased resampling (a forward's `input` against forward mode, its backward's `grad_output` against
    /// finite differences); a NaN derivative is another cause.
    #[test]
    fn wrong_derivatives_of_one_family_are_one_cause() {
        let fs = [
            finding("a", "torch._upsample_bicubic2d_aa", "gradient", "gradient of `input` differs between reverse and forward mode"),
            finding("b", "torch._upsample_bicubic2d_aa_backward", "gradient", "gradient of `grad_output` differs from finite differences"),
            finding("c", "torch._upsample_bicubic2d_aa", "gradient", "gradient of `input` is not finite where finite differences are"),
            finding("d", "torch.upsample_bicubic2d", "gradient", "gradient of `input` differs from finite differences"),
            finding("e", "torch._upsample_lanczos2d_aa", "gradient", "gradient of `input` differs from finite differences"),
        ];
        let ids = grouped_ids(&fs);
        // Lanczos is the anti-aliased kernel with another filter; bicubic without it is not.
        assert_eq!(ids, vec![vec!["a", "b", "e"], vec!["c"], vec!["d"]]);
    }

    /// A backward whose forward raised and the forward's own finding of that error are one
    /// cause, and the forward's finding stands for it: it names the operator that failed.
    #[test]
    fn the_operator_that_failed_stands_for_its_cause() {
        use crate::oracle::{Cause, Place};
        let mut through = finding("b", "torch.native_batch_norm_backward", "internal_error", "x");
        through.cause =
            Cause::Internal { place: Place::Forward("torch.native_batch_norm".into()), what: "StdException: the forward `torch.native_batch_norm` raised: length_error".into() };
        let mut own = finding("a", "torch.native_batch_norm", "internal_error", "x");
        own.cause = Cause::Internal { place: Place::Call, what: "StdException: length_error".into() };
        let ids = grouped_ids(&[through, own]);
        assert_eq!(ids, vec![vec!["a", "b"]]);
    }

    /// A family's deaths on an empty tensor are one cause whatever signal and frame they end
    /// in; the same deaths on a non-empty input, or in another family, stay apart.
    #[test]
    fn deaths_of_one_family_on_an_empty_tensor_are_one_cause() {
        use crate::wire::case::{Arg, DType, Fill, Layout, TensorRecipe};
        let shaped = |id: &str, api: &str, signature: &str, shape: &[i64]| {
            let mut f = finding(id, api, "gradient", signature);
            f.case.args =
                vec![Arg::Tensor(TensorRecipe { dtype: DType::Float32, shape: shape.to_vec(), fill: Fill::Constant(0.0), seed: 0, layout: Layout::Contiguous, specials: vec![] })];
            f
        };
        let fs = [
            shaped("a", "torch.pdist", "gradient check: SIGFPE in at::native::Dist::run_backward_parallel_pdist", &[0, 5]),
            shaped("b", "torch.pdist", "gradient check: memory error", &[0, 3]),
            shaped("c", "torch.pdist", "gradient check: SIGFPE in at::native::pdist_backward_kernel_impl", &[0, 8]),
            shaped("d", "torch.pdist", "gradient check: SIGFPE in at::native::pdist_backward_kernel_impl", &[2, 8]),
            shaped("e", "torch.cdist", "gradient check: SIGFPE in at::native::cdist_backward", &[0, 8]),
            // Another rank of one kernel template, and a check's own call of the operator.
            shaped("f", "torch.max_pool3d_with_indices_backward", "memory error", &[0, 1, 2, 2, 2]),
            shaped("g", "torch.max_pool2d_with_indices_backward", "memory error", &[0, 1, 2, 2]),
            {
                let mut f = shaped("h", "torch.max_pool3d_with_indices_backward", "float64 reference: memory error", &[0, 1, 2, 2, 2]);
                f.oracle = crate::wire::oracle::Oracle::Precision;
                f
            },
        ];
        let ids = grouped_ids(&fs);
        assert_eq!(ids, vec![vec!["b", "a", "c"], vec!["f", "g", "h"], vec!["d"], vec!["e"]]);
    }

    /// An out= variant that does not resize its output shows as another shape or as one of
    /// libtorch's shape complaints: one cause. Its other errors stay apart.
    #[test]
    fn an_out_variants_shape_errors_are_one_cause() {
        let fs = [
            finding("a", "torch.binary_cross_entropy_backward", "out", "output 0: shape [2, 3] vs [3]"),
            finding("b", "torch.binary_cross_entropy_backward", "out", "only the out= variant raises: output with shape [N] doesn't match the broadcast shape [N, N]"),
            finding(
                "c",
                "torch.binary_cross_entropy_backward",
                "out",
                "only the out= variant raises: The size of tensor a (N) must match the size of tensor b (N) at non-singleton dimension N",
            ),
            finding("d", "torch.binary_cross_entropy_backward", "out", "only the out= variant raises: expected scalar type Float but found Double"),
        ];
        let ids = grouped_ids(&fs);
        assert_eq!(ids, vec![vec!["a", "b", "c"], vec!["d"]]);
    }
}
