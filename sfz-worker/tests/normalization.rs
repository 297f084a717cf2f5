//! Normalization layers against real libtorch: the rounding of their folded form is allowed for.
mod common;
use common::reference::{executor, f32s, verdict};

use sfz::wire::case::{Arg, Case};
use sfz::wire::variant::{Accuracy, CheckOutcome};

/// A normalization evaluates `x · (w·rstd) + (b - mean·w·rstd)`: where |x| is large against its
/// group's spread the two terms cancel in the dtype, though the function is well conditioned
/// (c40f: float32 pairs near -88, 0.28 apart, 3e-4 off). That rounding is allowed for.
#[test]
fn a_normalizations_folded_form_may_round_at_large_offsets() {
    let _rng = common::rng_lock();
    let mut ln = executor(
        "api torch.native_layer_norm(input: Tensor, normalized_shape: int[], weight: Tensor?, bias: Tensor?, eps: float) -> (Tensor, Tensor, Tensor) {}",
        Accuracy::Backward,
    );
    let case = Case {
        op: 0,
        args: vec![
            Arg::Tensor(f32s(&[6, 2, 2, 2], -90.49729583310972, -86.0611538805063, 7233677929968660)),
            Arg::IntList(vec![2]),
            Arg::Tensor(f32s(&[2], -10.0, 10.0, 7892906887161155)),
            Arg::Tensor(f32s(&[2], -10.0, 10.0, 2938967914198288)),
            Arg::Float(0.0005967997590467488),
        ],
        forward: None,
    };
    let got = verdict(&mut ln, &case);
    assert!(matches!(got, CheckOutcome::Agree { .. }), "{got:?}");
    let mut gn = executor(
        "api torch.native_group_norm(input: Tensor, weight: Tensor?, bias: Tensor?, N: int, C: int, HxW: int, group: int, eps: float) -> (Tensor, Tensor, Tensor) {}",
        Accuracy::Backward,
    );
    let case = Case {
        op: 0,
        args: vec![
            Arg::Tensor(f32s(&[2, 2, 2], -90.49729583310972, -86.0611538805063, 1909469385653133)),
            Arg::Tensor(f32s(&[2], -10.0, 10.0, 8532582735086706)),
            Arg::None,
            Arg::Int(2),
            Arg::Int(2),
            Arg::Int(2),
            Arg::Int(2),
            Arg::Float(0.00012671864431997663),
        ],
        forward: None,
    };
    let got = verdict(&mut gn, &case);
    assert!(matches!(got, CheckOutcome::Agree { .. }), "{got:?}");
}

/// The same folded form in batch and instance normalization, over the batch's statistics and
/// each instance's (c37f: float32 `instance_norm` at 86–90).
#[test]
fn batch_and_instance_norms_fold_alike() {
    let _rng = common::rng_lock();
    let mut bn = executor("api torch.batch_norm(input: Tensor, weight: Tensor?, bias: Tensor?, running_mean: Tensor?, running_var: Tensor?, training: bool, momentum: float, eps: float, cudnn_enabled: bool) -> Tensor {}", Accuracy::Backward);
    let mut inorm = executor("api torch.instance_norm(input: Tensor, weight: Tensor?, bias: Tensor?, running_mean: Tensor?, running_var: Tensor?, use_input_stats: bool, momentum: float, eps: float, cudnn_enabled: bool) -> Tensor {}", Accuracy::Backward);
    for seed in 0..8 {
        let near = |shape: &[i64], s: u64| Arg::Tensor(f32s(shape, -90.5, -86.0, s));
        let weight = || Arg::Tensor(f32s(&[3], -10.0, 10.0, 100 + seed));
        let tail = |flag: bool| vec![Arg::None, Arg::None, Arg::Bool(flag), Arg::Float(0.1), Arg::Float(1e-4), Arg::Bool(false)];
        let mut args = vec![near(&[2, 3], seed), weight(), Arg::None];
        args.extend(tail(true));
        let got = verdict(&mut bn, &Case { op: 0, args, forward: None });
        assert!(matches!(got, CheckOutcome::Agree { .. }), "batch_norm, seed {seed}: {got:?}");
        let mut args = vec![near(&[1, 3, 2], seed), weight(), Arg::None];
        args.extend(tail(true));
        let got = verdict(&mut inorm, &Case { op: 0, args, forward: None });
        assert!(matches!(got, CheckOutcome::Agree { .. }), "instance_norm, seed {seed}: {got:?}");
    }
}
