//! Values at the dtype's cliffs: where floating arithmetic breaks although the true result is
//! representable. One floating tensor of a case gets a fill of magnitudes near
//!
//! - `sqrt(max)`: a square (a norm, a variance) overflows;
//! - `max / n` for a tensor of n elements: a sum of n terms overflows;
//! - `log(max)`: an exponential overflows (a special function's scaled form does not);
//! - the smallest normal and the denormals: a square underflows, a reciprocal overflows;
//! - the non-positive integers: the poles of the gamma family;
//! - the whole tensor scaled by a large or small power of ten while staying representable
//!   (a scale-invariant operation must not notice).
//!
//! Such values usually lie outside a spec's value bounds, which are written so that a finite
//! result is expected: the generator keeps the case anyway when only value bounds of the
//! rewritten tensor break (it is then not conforming), and only oracles with a reference of
//! their own (the float64 reference, relations, crashes) judge it.
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::wire::case::{Arg, Fill, Layout, TensorRecipe};

/// The cliffs, in the order `pick` draws them from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cliff {
    SqrtMax,
    MaxOverN,
    LogMax,
    SmallestNormal,
    Denormal,
    Poles,
    Scaled,
}

pub const CLIFFS: [Cliff; 7] = [Cliff::SqrtMax, Cliff::MaxOverN, Cliff::LogMax, Cliff::SmallestNormal, Cliff::Denormal, Cliff::Poles, Cliff::Scaled];

/// The fill for one tensor at `cliff`, or None when it does not apply (an integer tensor).
/// A uniform fill spans at most the dtype's largest value: `uniform_(-2m, 2m)` with `4m` beyond
/// it is refused by libtorch, and the case would be lost.
pub fn fill(recipe: &TensorRecipe, cliff: Cliff, rng: &mut ChaCha8Rng) -> Option<Fill> {
    let (max, ..) = recipe.dtype.limits()?;
    Some(match at(recipe, cliff, rng)? {
        Fill::Uniform { lo, hi } if hi - lo > max => {
            let c = max / (hi - lo) * (1.0 - 1e-9);
            Fill::Uniform { lo: lo * c, hi: hi * c }
        }
        f => f,
    })
}

fn at(recipe: &TensorRecipe, cliff: Cliff, rng: &mut ChaCha8Rng) -> Option<Fill> {
    let (max, normal, denormal) = recipe.dtype.limits()?;
    let n = recipe.numel().max(1) as f64;
    // A band around a magnitude, one sign or both: [m/2, 2m), [-2m, -m/2) or [-2m, 2m).
    let band = |m: f64, rng: &mut ChaCha8Rng| -> Fill {
        let (lo, hi) = (m * 0.5, (m * 2.0).min(max));
        match rng.random_range(0..3) {
            0 => Fill::Uniform { lo, hi },
            1 => Fill::Uniform { lo: -hi, hi: -lo },
            _ => Fill::Uniform { lo: -hi, hi },
        }
    };
    Some(match cliff {
        Cliff::SqrtMax => band(max.sqrt() * rng.random_range(0.5..2.0), rng),
        // n terms of max/n: the sum is max-sized, a sum of squares far beyond.
        Cliff::MaxOverN => band(max / n * rng.random_range(0.25..1.0), rng),
        Cliff::LogMax => {
            // Just below and just above the point where exp overflows.
            let l = max.ln();
            let (lo, hi) = (l * 0.97, l * 1.02);
            if rng.random_bool(0.5) {
                Fill::Uniform { lo, hi }
            } else {
                Fill::Uniform { lo: -hi, hi: -lo }
            }
        }
        Cliff::SmallestNormal => band(normal * rng.random_range(1.0..16.0), rng),
        Cliff::Denormal => band(denormal * rng.random_range(1.0..1024.0), rng),
        // Integers in [-8, 0]: poles of gamma, digamma, polygamma (and 0 of log and reciprocals).
        Cliff::Poles => Fill::Int { lo: -8, hi: 1 },
        Cliff::Scaled => {
            // The tensor's own values times 10^k, as large (or small) as the dtype allows.
            let (lo, hi) = match recipe.fill {
                Fill::Uniform { lo, hi } => (lo, hi),
                Fill::Int { lo, hi } => (lo as f64, hi as f64),
                Fill::Constant(v) => (v, v),
            };
            let top = lo.abs().max(hi.abs()).max(1.0);
            let decades = (max / top).log10().floor() - 1.0;
            if decades < 1.0 {
                return None;
            }
            let k = if rng.random_bool(0.75) { rng.random_range(1.0..=decades).floor() } else { -rng.random_range(1.0..=decades.min(30.0)).floor() };
            let s = 10f64.powf(k);
            Fill::Uniform { lo: lo * s, hi: hi * s }
        }
    })
}

/// Rewrites the fill of one non-empty floating tensor of the case at a random cliff. Returns
/// the parameter it rewrote, or None when no tensor can take one.
pub fn cliff(args: &mut [Arg], rng: &mut ChaCha8Rng) -> Option<usize> {
    cliff_among(args, &CLIFFS, rng)
}

/// The cliffs where a function itself changes (its poles, zero, the smallest magnitudes), not
/// where arithmetic overflows: a NaN at one of them may be the function's own.
pub const OF_THE_FUNCTION: [Cliff; 3] = [Cliff::SmallestNormal, Cliff::Denormal, Cliff::Poles];

/// `cliff`, drawing among `kinds` only.
pub fn cliff_among(args: &mut [Arg], kinds: &[Cliff], rng: &mut ChaCha8Rng) -> Option<usize> {
    let mut ts: Vec<(usize, &mut TensorRecipe)> = Vec::new();
    for (p, a) in args.iter_mut().enumerate() {
        match a {
            Arg::Tensor(t) => ts.push((p, t)),
            Arg::TensorList(list) => ts.extend(list.iter_mut().map(|t| (p, t))),
            _ => {}
        }
    }
    ts.retain(|(_, t)| t.numel() > 0 && t.dtype.limits().is_some() && t.layout != Layout::Expanded);
    if ts.is_empty() {
        return None;
    }
    let i = rng.random_range(0..ts.len());
    let (p, t) = &mut ts[i];
    let cliff = kinds[rng.random_range(0..kinds.len())];
    let fill = fill(t, cliff, rng)?;
    t.fill = fill;
    Some(*p)
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;
    use crate::wire::case::DType;

    fn recipe(dtype: DType, n: i64) -> TensorRecipe {
        TensorRecipe { dtype, shape: vec![n], fill: Fill::Uniform { lo: -3.0, hi: 3.0 }, seed: 1, layout: Layout::Contiguous, specials: Vec::new() }
    }

    fn bounds(f: &Fill) -> (f64, f64) {
        match *f {
            Fill::Uniform { lo, hi } => (lo, hi),
            Fill::Int { lo, hi } => (lo as f64, hi as f64),
            Fill::Constant(v) => (v, v),
        }
    }

    #[test]
    fn every_cliff_stays_representable_in_its_dtype() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for dtype in [DType::Float16, DType::BFloat16, DType::Float32, DType::Float64] {
            let (max, _, _) = dtype.limits().unwrap();
            for cliff in CLIFFS {
                for i in 0..100 {
                    // One element: `max / n` is the largest value itself.
                    let f = fill(&recipe(dtype, if i % 2 == 0 { 64 } else { 1 }), cliff, &mut rng).expect("floating tensors take every cliff");
                    let (lo, hi) = bounds(&f);
                    assert!(lo <= hi && lo.abs() <= max && hi.abs() <= max, "{dtype} {cliff:?}: [{lo}, {hi}] leaves the range");
                    assert!(hi - lo <= max, "{dtype} {cliff:?}: [{lo}, {hi}] is wider than uniform_ takes");
                }
            }
        }
    }

    #[test]
    fn squares_of_the_sqrt_max_band_overflow_while_the_values_do_not() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let f = fill(&recipe(DType::Float32, 8), Cliff::SqrtMax, &mut rng).unwrap();
        let (lo, hi) = bounds(&f);
        let top = lo.abs().max(hi.abs());
        assert!(top * top > f32::MAX as f64 && top < f32::MAX as f64);
    }

    #[test]
    fn integer_tensors_take_no_cliff() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut args = vec![Arg::Tensor(TensorRecipe { dtype: DType::Int64, ..recipe(DType::Float32, 4) })];
        assert_eq!(cliff(&mut args, &mut rng), None);
    }
}
