//! An output the kernel never writes, against real libtorch: named as such whichever check
//! compared it, or not judged where ordinary inputs of the call do not compute it.
mod common;
use common::reference::{executor, f32s, verdict};

use sfz::wire::case::{Arg, Case, DType, Fill, Layout, TensorRecipe};
use sfz::wire::variant::{Accuracy, CheckOutcome};

/// Freed memory of 7s, of another size for each `i`: what the next call's unwritten output is
/// given (a thread's fresh memory is zeros, the head of a freed chunk the allocator's pointers).
fn sevens(i: usize) {
    drop((0..=i).map(|k| tch::Tensor::full([4 << (k % 10)], 7.0, (tch::Kind::Float, tch::Device::Cpu))).collect::<Vec<_>>());
}

/// An output the kernel never writes is compared with garbage by any check: `multi_margin_loss`
/// summing an empty batch returns `empty()` memory (a finding: the sum of nothing is 0), and
/// `_batch_norm_impl_index` in eval mode returns uninitialised saved statistics for an empty
/// input only, where non-empty inputs get none (not judged).
#[test]
fn an_output_left_unwritten_is_named_as_such_or_not_judged_where_ordinary_inputs_lack_it() {
    let _rng = common::rng_lock();
    let mut loss = executor(
        "api torch.ops.aten.multi_margin_loss(self: Tensor, target: Tensor, p: int = 1, margin: float = 1.0, weight: Tensor? = None, reduction: int = 1) -> Tensor {}",
        Accuracy::Forward,
    );
    let target = TensorRecipe { dtype: DType::Int64, shape: vec![0], fill: Fill::Int { lo: 0, hi: 2 }, seed: 2, layout: Layout::Contiguous, specials: vec![] };
    let args = vec![Arg::Tensor(f32s(&[0, 2], -10.0, 10.0, 1)), Arg::Tensor(target), Arg::Int(1), Arg::Float(1.3), Arg::Tensor(f32s(&[2], 0.5, 2.0, 3)), Arg::Int(2)];
    // Garbage may happen to lie within the tolerance of 0 (the allocator's own words in freed
    // memory): it agrees then, and is named whenever it does not.
    let mut named = 0;
    for i in 0..32 {
        let got = verdict(&mut loss, &Case { op: 0, args: args.clone(), forward: None });
        match &got {
            CheckOutcome::Values(m) if m.undetermined && m.output == 0 => named += 1,
            CheckOutcome::Agree { .. } => {}
            _ => panic!("{got:?}"),
        }
        sevens(i);
    }
    assert!(named > 0, "no call returned garbage outside the tolerance");

    let mut norm = executor(
        "api torch.ops.aten._batch_norm_impl_index(input: Tensor, weight: Tensor?, bias: Tensor?, running_mean: Tensor?, running_var: Tensor?, training: bool, momentum: float, eps: float, cudnn_enabled: bool) -> (Tensor, Tensor, Tensor, Tensor, int) {}",
        Accuracy::Forward,
    );
    let args = |shape: &[i64]| {
        vec![
            Arg::Tensor(f32s(shape, -10.0, 10.0, 4)),
            Arg::None,
            Arg::None,
            Arg::Tensor(f32s(&[8], -10.0, 10.0, 5)),
            Arg::Tensor(f32s(&[8], 0.01, 10.0, 6)),
            Arg::Bool(false),
            Arg::Float(0.3),
            Arg::Float(1e-3),
            Arg::Bool(false),
        ]
    };
    let mut skipped = 0;
    for i in 0..32 {
        let got = verdict(&mut norm, &Case { op: 0, args: args(&[5, 8, 0, 0]), forward: None });
        match &got {
            CheckOutcome::Skipped(why) if why.contains("left unwritten") => skipped += 1,
            // Garbage beyond what float32 holds is not compared at all.
            CheckOutcome::Agree { .. } => {}
            _ => panic!("{got:?}"),
        }
        sevens(i);
    }
    assert!(skipped > 0, "no call returned garbage that was compared");
    let got = verdict(&mut norm, &Case { op: 0, args: args(&[5, 8, 2, 2]), forward: None });
    assert!(matches!(got, CheckOutcome::Agree { .. }), "{got:?}");
}
