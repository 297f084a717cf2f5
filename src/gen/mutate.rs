//! Boundary mutation: extreme and special values where most bugs live. Two levels:
//!
//! - *symbolic* edges come from the solver as boundary models (empty and 0-d tensors, unit and
//!   maximal dimensions, ints at the ends of what the constraints allow, None for optionals,
//!   empty lists, mixed dtypes and ranks) and huge models (one tensor of 2^14 elements or more);
//!   a case draws from them with probability `boundary` and `huge`;
//! - a *dtype* redraw gives a drawn model's tensors another dtype the constraints allow (the
//!   pool holds only so many models, so without it a run sees few dtype and rank pairings);
//! - *value* mutators rewrite a drawn case: special elements in a tensor (NaN, ±inf, -0.0,
//!   denormals, 0, ±1, the dtype's extremes), a non-contiguous layout (transposed, strided,
//!   expanded, sliced), float arguments at extremes, unconstrained ints at the ends of int64.
//!
//! A value mutation that would break a constraint the case must keep (every one in conform
//! mode, every one but the chosen one in violate mode) is undone: the generator re-checks the
//! case with the evaluator after each. Each mutator has a probability per case; `Default` is the
//! mix measured to keep conform mode's valid rate above 95% while reaching the most boundary
//! classes (see the README's figures).
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::violate::{holds_exactly, int_extreme, EXTREME_INTS};
use crate::solve::{value_target, SymModel, SymValue};
use crate::spec::{ApiSpec, ParamType};
use crate::wire::case::{Arg, DType, Layout, Special, TensorRecipe};

/// Probability per case of each mutator.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Mutation {
    /// Draw the symbolic part from a boundary model instead of an ordinary one.
    pub boundary: f64,
    /// Draw it from a huge model (one tensor of at least 2^14 elements).
    pub huge: f64,
    /// Write special values into one tensor.
    pub special: f64,
    /// Lay one tensor out non-contiguously.
    pub layout: f64,
    /// Put a float argument, or an int no constraint mentions, at an extreme.
    pub scalar: f64,
    /// Give the model's tensors another feasible dtype before concretising it.
    pub dtype: f64,
    /// Fill one floating tensor with values at a cliff of its dtype (`gen::cliff`).
    pub cliff: f64,
}

impl Default for Mutation {
    fn default() -> Self {
        Mutation { boundary: 0.2, huge: 0.002, special: 0.2, layout: 0.15, scalar: 0.1, dtype: 0.3, cliff: 0.15 }
    }
}

impl Mutation {
    /// No mutation at all.
    pub fn none() -> Self {
        Mutation { boundary: 0.0, huge: 0.0, special: 0.0, layout: 0.0, scalar: 0.0, dtype: 0.0, cliff: 0.0 }
    }

    pub const NAMES: [&'static str; 7] = ["boundary", "huge", "special", "layout", "scalar", "dtype", "cliff"];

    /// Parses `none`, `default`, or `name=p,name=p` over the default mix.
    pub fn parse(text: &str) -> Result<Mutation, String> {
        let text = text.trim();
        match text {
            "none" | "off" => return Ok(Mutation::none()),
            "default" | "" => return Ok(Mutation::default()),
            _ => {}
        }
        let mut m = Mutation::default();
        for part in text.split(',') {
            let (name, p) = part.split_once('=').ok_or_else(|| format!("`{part}` is not name=probability (names: {})", Mutation::NAMES.join(", ")))?;
            let p: f64 = p.trim().parse().map_err(|_| format!("`{p}` is not a probability"))?;
            if !(0.0..=1.0).contains(&p) {
                return Err(format!("the probability of `{name}` must be within 0 and 1, not {p}"));
            }
            let slot = match name.trim() {
                "boundary" => &mut m.boundary,
                "huge" => &mut m.huge,
                "special" => &mut m.special,
                "layout" => &mut m.layout,
                "scalar" => &mut m.scalar,
                "dtype" => &mut m.dtype,
                "cliff" => &mut m.cliff,
                other => return Err(format!("unknown mutator `{other}` (names: {})", Mutation::NAMES.join(", "))),
            };
            *slot = p;
        }
        Ok(m)
    }
}

/// Special element values, by kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Nan,
    PosInf,
    NegInf,
    NegZero,
    Denormal,
    Zero,
    One,
    MinusOne,
    Max,
    Min,
}

const FLOAT_KINDS: [Kind; 10] = [Kind::Nan, Kind::PosInf, Kind::NegInf, Kind::NegZero, Kind::Denormal, Kind::Zero, Kind::One, Kind::MinusOne, Kind::Max, Kind::Min];
const INT_KINDS: [Kind; 5] = [Kind::Zero, Kind::One, Kind::MinusOne, Kind::Max, Kind::Min];

/// The largest finite value and the smallest positive denormal of a floating dtype.
fn float_limits(dtype: DType) -> (f64, f64) {
    match dtype {
        DType::Float16 => (65504.0, 2f64.powi(-24)),
        DType::BFloat16 => (f32::from_bits(0x7F7F_0000) as f64, f32::from_bits(0x0001_0000) as f64),
        DType::Float32 | DType::Complex64 => (f32::MAX as f64, f32::from_bits(1) as f64),
        _ => (f64::MAX, f64::from_bits(1)),
    }
}

fn special_value(dtype: DType, kind: Kind) -> Option<Special> {
    if let Some((lo, _)) = dtype.int_bounds() {
        // Specials are written as float64: int64's extremes are the nearest doubles within range.
        let v = match kind {
            Kind::Zero => 0.0,
            Kind::One => 1.0,
            Kind::MinusOne if lo < 0 => -1.0,
            Kind::Max => int_extreme(dtype, true),
            Kind::Min => int_extreme(dtype, false),
            _ => return None,
        };
        return holds_exactly(dtype, v).then_some(Special::Value(v));
    }
    let (max, tiny) = float_limits(dtype);
    Some(match kind {
        Kind::Nan => Special::Nan,
        Kind::PosInf => Special::PosInf,
        Kind::NegInf => Special::NegInf,
        Kind::NegZero => Special::NegZero,
        Kind::Denormal => Special::Value(tiny),
        Kind::Zero => Special::Value(0.0),
        Kind::One => Special::Value(1.0),
        Kind::MinusOne => Special::Value(-1.0),
        Kind::Max => Special::Value(max),
        Kind::Min => Special::Value(-max),
    })
}

/// Parameters whose values some constraint bounds: they get no NaN or inf (the evaluator cannot
/// judge a non-finite element against a range, so it would slip through as conforming).
fn value_bounded(api: &ApiSpec) -> Vec<bool> {
    let mut out = vec![false; api.params.len()];
    for c in &api.requires {
        if let Some(p) = value_target(&c.expr) {
            if let Some(slot) = out.get_mut(p) {
                *slot = true;
            }
        }
    }
    out
}

/// The tensors of a case, with their parameter index.
fn tensors_mut(args: &mut [Arg]) -> Vec<(usize, &mut TensorRecipe)> {
    let mut out = Vec::new();
    for (p, a) in args.iter_mut().enumerate() {
        match a {
            Arg::Tensor(t) => out.push((p, t)),
            Arg::TensorList(ts) => out.extend(ts.iter_mut().map(|t| (p, t))),
            _ => {}
        }
    }
    out
}

/// Writes one to three special values into one non-empty tensor. False when there is none.
pub fn special(api: &ApiSpec, args: &mut [Arg], rng: &mut ChaCha8Rng) -> bool {
    let bounded = value_bounded(api);
    let mut ts: Vec<(usize, &mut TensorRecipe)> = tensors_mut(args).into_iter().filter(|(_, t)| t.numel() > 0 && t.layout != Layout::Expanded).collect();
    if ts.is_empty() {
        return false;
    }
    let i = rng.random_range(0..ts.len());
    let (p, t) = &mut ts[i];
    let kinds: &[Kind] = if t.dtype.int_bounds().is_some() { &INT_KINDS } else { &FLOAT_KINDS };
    let n = rng.random_range(1..=3);
    let mut wrote = false;
    for _ in 0..n {
        let kind = kinds[rng.random_range(0..kinds.len())];
        let Some(s) = special_value(t.dtype, kind) else { continue };
        if !s.is_finite() && bounded.get(*p).copied().unwrap_or(false) {
            continue;
        }
        let index = rng.random_range(0..t.numel());
        t.specials.push((index, s));
        wrote = true;
    }
    wrote
}

/// Gives one tensor a non-contiguous layout that applies to its rank. False when none applies.
pub fn layout(args: &mut [Arg], rng: &mut ChaCha8Rng) -> bool {
    let mut ts: Vec<(usize, &mut TensorRecipe)> = tensors_mut(args).into_iter().filter(|(_, t)| !t.shape.is_empty() && t.layout == Layout::Contiguous).collect();
    if ts.is_empty() {
        return false;
    }
    let i = rng.random_range(0..ts.len());
    let t = &mut ts[i].1;
    let mut options = vec![Layout::Strided, Layout::Sliced];
    if t.shape.len() >= 2 {
        options.push(Layout::Transposed);
    }
    // Expanding repeats the first slice, which would drop specials written elsewhere.
    if t.specials.is_empty() && t.shape[0] >= 2 {
        options.push(Layout::Expanded);
    }
    t.layout = options[rng.random_range(0..options.len())];
    true
}

/// Puts one float argument at an extreme (±inf, NaN, -0.0, the largest and smallest doubles), or
/// an int that no constraint mentions at an end of int64. False when the case has neither.
pub fn scalar(api: &ApiSpec, args: &mut [Arg], rng: &mut ChaCha8Rng) -> bool {
    let mentioned = |p: usize| api.requires.iter().any(|c| c.params.contains(&p));
    let candidates: Vec<usize> = args
        .iter()
        .enumerate()
        .filter(|(p, a)| match a {
            Arg::Float(_) => true,
            Arg::Int(_) => !mentioned(*p) && api.params.get(*p).is_some_and(|x| x.ty == ParamType::Int),
            _ => false,
        })
        .map(|(p, _)| p)
        .collect();
    if candidates.is_empty() {
        return false;
    }
    let p = candidates[rng.random_range(0..candidates.len())];
    match &mut args[p] {
        Arg::Float(x) => {
            const FLOATS: [f64; 8] = [f64::INFINITY, f64::NEG_INFINITY, f64::NAN, -0.0, f64::MAX, f64::MIN_POSITIVE, 5e-324, 1e20];
            *x = FLOATS[rng.random_range(0..FLOATS.len())];
        }
        Arg::Int(x) => *x = EXTREME_INTS[rng.random_range(0..EXTREME_INTS.len())],
        _ => return false,
    }
    true
}

/// A copy of `model` where one tensor parameter with a choice takes another of its `feasible`
/// dtypes, and so does every tensor that shared its old dtype (equalities between parameters'
/// dtypes survive). None when no parameter has a choice. The caller re-checks the case: a
/// relation other than equality may still break.
pub fn redraw_dtype(model: &SymModel, feasible: &[Vec<DType>], rng: &mut ChaCha8Rng) -> Option<SymModel> {
    let choices: Vec<(usize, DType)> = model
        .iter()
        .enumerate()
        .filter_map(|(p, v)| match v {
            SymValue::Tensor { dtype, .. } if feasible.get(p).is_some_and(|f| f.iter().any(|d| d != dtype)) => Some((p, *dtype)),
            _ => None,
        })
        .collect();
    if choices.is_empty() {
        return None;
    }
    let (p, old) = choices[rng.random_range(0..choices.len())];
    let others: Vec<DType> = feasible[p].iter().copied().filter(|d| *d != old).collect();
    let new = others[rng.random_range(0..others.len())];
    let mut out = model.clone();
    for v in &mut out {
        match v {
            SymValue::Tensor { dtype, .. } if *dtype == old => *dtype = new,
            SymValue::TensorList(items) => {
                for item in items.iter_mut().filter(|item| item.0 == old) {
                    item.0 = new;
                }
            }
            _ => {}
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn a_dtype_redraw_moves_every_tensor_that_shared_the_dtype() {
        let model = vec![
            SymValue::Tensor { dtype: DType::Float32, shape: vec![2] },
            SymValue::Tensor { dtype: DType::Float32, shape: vec![3] },
            SymValue::Tensor { dtype: DType::Int64, shape: vec![1] },
            SymValue::Int(4),
        ];
        let feasible = vec![vec![DType::Float32, DType::Float64], vec![DType::Float32, DType::Float64], vec![DType::Int64], vec![]];
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let out = redraw_dtype(&model, &feasible, &mut rng).expect("two parameters have a choice");
        let dtypes: Vec<Option<DType>> = out.iter().map(|v| if let SymValue::Tensor { dtype, .. } = v { Some(*dtype) } else { None }).collect();
        assert_eq!(dtypes, vec![Some(DType::Float64), Some(DType::Float64), Some(DType::Int64), None]);
        assert_eq!(out[3], SymValue::Int(4));
    }

    #[test]
    fn no_choice_no_redraw() {
        let model = vec![SymValue::Tensor { dtype: DType::Int64, shape: vec![1] }];
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        assert_eq!(redraw_dtype(&model, &[vec![DType::Int64]], &mut rng), None);
    }
}
