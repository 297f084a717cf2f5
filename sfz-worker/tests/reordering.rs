//! The false-alarm rate of the `cuda` check's allowance for reordered reductions, measured on the
//! CPU: a reduction against the same reduction split in two (what a GPU's other order does), in
//! float32 and float16 (sum, matmul, cumsum, 2-norm, conv1d), judged by `REORDERINGS · n · u · m`
//! as `rounding_allowance` computes it (`m`: the call on the inputs' absolute values in float64;
//! `n`: input elements per output element, or the longest input dimension). Every pair is an
//! honest computation, so every pair beyond the bound is a false alarm.
use sfz_worker::runtime::checks::REORDERINGS;
use tch::{Device, Kind, Tensor};

/// Rounds of each reduction; printed rates are over all of them.
const TRIALS: i64 = 300;

fn unit_roundoff(k: Kind) -> f64 {
    match k {
        Kind::Half => 2f64.powi(-11),
        _ => 2f64.powi(-24),
    }
}

/// Counts (beyond the allowance, beyond the CPU-vs-CPU tolerance alone) over the elements.
#[derive(Default, Debug)]
struct Tally {
    elements: u64,
    beyond_bound: u64,
    beyond_plain: u64,
}

impl Tally {
    /// `a` and `b`: the two orders; `m`: magnitudes in float64; `inputs`: the float inputs.
    fn see(&mut self, a: &Tensor, b: &Tensor, m: &Tensor, inputs: &[&Tensor], kind: Kind) {
        let elements: i64 = inputs.iter().map(|t| t.numel() as i64).sum();
        let longest = inputs.iter().flat_map(|t| t.size()).max().unwrap_or(1);
        let n = (elements / (a.numel() as i64).max(1)).max(longest).max(1) as f64;
        let allowance = m.abs() * (REORDERINGS * n * unit_roundoff(kind));
        let diff = (a.to_kind(Kind::Double) - b.to_kind(Kind::Double)).abs();
        let (rtol, atol) = if kind == Kind::Half { (1e-3, 1e-5) } else { (1.3e-6, 1e-5) };
        let plain = b.to_kind(Kind::Double).abs() * rtol + atol;
        self.elements += a.numel() as u64;
        self.beyond_bound += i64::try_from(diff.gt_tensor(&(&plain + &allowance)).sum(Kind::Int64)).expect("count") as u64;
        self.beyond_plain += i64::try_from(diff.gt_tensor(&plain).sum(Kind::Int64)).expect("count") as u64;
    }
}

fn uniform(shape: &[i64], kind: Kind) -> Tensor {
    (Tensor::rand(shape, (Kind::Double, Device::Cpu)) * 20.0 - 10.0).to_kind(kind)
}

fn size(lo: i64, hi: i64) -> i64 {
    lo + i64::try_from(Tensor::randint(hi - lo, [1], (Kind::Int64, Device::Cpu))).expect("size")
}

#[test]
fn reordered_reductions_stay_within_the_allowance() {
    tch::manual_seed(21);
    let mut report = Vec::new();
    for kind in [Kind::Float, Kind::Half] {
        let (mut sum, mut matmul, mut cumsum) = (Tally::default(), Tally::default(), Tally::default());
        let (mut norm, mut conv) = (Tally::default(), Tally::default());
        for _ in 0..TRIALS {
            // sum against the sum of its two parts.
            let n = size(2, 8192);
            let x = uniform(&[n], kind);
            let k = size(1, n);
            let split = x.narrow(0, 0, k).sum(kind) + x.narrow(0, k, n - k).sum(kind);
            sum.see(&x.sum(kind), &split, &x.to_kind(Kind::Double).abs().sum(Kind::Double), &[&x], kind);

            // matmul against a matmul blocked along the inner dimension.
            let (r, inner, c) = (size(1, 64), size(2, 512), size(1, 64));
            let a = uniform(&[r, inner], kind);
            let b = uniform(&[inner, c], kind);
            let h = size(1, inner);
            let blocked = a.narrow(1, 0, h).matmul(&b.narrow(0, 0, h)) + a.narrow(1, h, inner - h).matmul(&b.narrow(0, h, inner - h));
            let m = a.to_kind(Kind::Double).abs().matmul(&b.to_kind(Kind::Double).abs());
            matmul.see(&a.matmul(&b), &blocked, &m, &[&a, &b], kind);

            // cumsum against a cumsum restarted halfway, carrying the first part's total.
            let x = uniform(&[n], kind);
            let first = x.narrow(0, 0, k).cumsum(0, kind);
            let carry = first.narrow(0, k - 1, 1);
            let second = x.narrow(0, k, n - k).cumsum(0, kind) + carry;
            let split = Tensor::cat(&[first, second], 0);
            cumsum.see(&x.cumsum(0, kind), &split, &x.to_kind(Kind::Double).abs().cumsum(0, Kind::Double), &[&x], kind);

            // The 2-norm against the norm of the two parts' norms.
            let parts = Tensor::stack(&[x.narrow(0, 0, k).norm(), x.narrow(0, k, n - k).norm()], 0);
            norm.see(&x.norm(), &parts.norm(), &x.to_kind(Kind::Double).abs().norm(), &[&x], kind);

            // conv1d against the sum of two convolutions over halves of the input channels.
            let (channels, length, width) = (size(2, 32), size(8, 256), size(1, 8));
            let input = uniform(&[2, channels, length], kind);
            let weight = uniform(&[4, channels, width], kind);
            let h = size(1, channels);
            let half = |from: i64, len: i64| input.narrow(1, from, len).conv1d::<Tensor>(&weight.narrow(1, from, len), None, 1, 0, 1, 1);
            let m = input.to_kind(Kind::Double).abs().conv1d::<Tensor>(&weight.to_kind(Kind::Double).abs(), None, 1, 0, 1, 1);
            conv.see(&input.conv1d::<Tensor>(&weight, None, 1, 0, 1, 1), &(half(0, h) + half(h, channels - h)), &m, &[&input, &weight], kind);
        }
        for (name, t) in [("sum", &sum), ("matmul", &matmul), ("cumsum", &cumsum), ("norm", &norm), ("conv1d", &conv)] {
            report.push(format!("{kind:?} {name}: {} of {} elements beyond the allowance, {} beyond the plain tolerance", t.beyond_bound, t.elements, t.beyond_plain));
            assert_eq!(t.beyond_bound, 0, "{kind:?} {name}: {t:?}");
        }
    }
    println!("{}", report.join("\n"));
}
