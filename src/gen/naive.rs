//! The naive baseline (`--generator naive`): every parameter drawn on its own from its default
//! domain, no solver, the whole draw rejected by the evaluator until it conforms (a bounded
//! number of times). It is what a fuzzer without constraint solving does, kept so that the
//! solver's benefit is measured against something real.
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::solve::{Limits, SymModel, SymValue};
use crate::spec::{ApiSpec, ParamType};
use crate::wire::case::DType;

/// Draws before the naive generator gives up on conforming and sends the last draw.
pub const NAIVE_TRIES: usize = 8;

fn shape(limits: &Limits, rng: &mut ChaCha8Rng) -> Vec<i64> {
    let ndim = rng.random_range(0..=limits.max_ndim) as usize;
    let mut dims: Vec<i64> = (0..ndim).map(|_| rng.random_range(0..=limits.max_dim)).collect();
    // Keep the element count within the limit by shrinking the largest dimension.
    while dims.iter().product::<i64>() > limits.max_numel {
        if let Some(d) = dims.iter_mut().max() {
            *d /= 2;
        }
    }
    dims
}

fn list_len(fixed: Option<u32>, limits: &Limits, rng: &mut ChaCha8Rng) -> usize {
    fixed.map_or_else(|| rng.random_range(0..=limits.max_list_len) as usize, |n| n as usize)
}

/// One independent draw per parameter: a uniform dtype, rank and sizes for tensors, a uniform
/// int within `limits.int_range`, a coin for bools and for the presence of optionals.
pub fn draw(api: &ApiSpec, limits: &Limits, rng: &mut ChaCha8Rng) -> SymModel {
    let dtype = |rng: &mut ChaCha8Rng| DType::ALL[rng.random_range(0..DType::ALL.len())];
    let int = |rng: &mut ChaCha8Rng| rng.random_range(limits.int_range.0..=limits.int_range.1);
    api.params
        .iter()
        .map(|p| {
            if p.optional && rng.random_bool(0.5) {
                return SymValue::Absent;
            }
            match &p.ty {
                ParamType::Tensor => SymValue::Tensor { dtype: dtype(rng), shape: shape(limits, rng) },
                ParamType::TensorList => {
                    let n = rng.random_range(1..=limits.max_tensor_list) as usize;
                    SymValue::TensorList((0..n).map(|_| (dtype(rng), shape(limits, rng))).collect())
                }
                ParamType::Int => SymValue::Int(int(rng)),
                ParamType::Bool => SymValue::Bool(rng.random_bool(0.5)),
                ParamType::Enum(values) => SymValue::Enum(values.get(rng.random_range(0..values.len().max(1))).cloned().unwrap_or_default()),
                ParamType::Dtype => SymValue::Dtype(dtype(rng)),
                ParamType::IntList(n) => {
                    let len = list_len(*n, limits, rng);
                    SymValue::IntList((0..len).map(|_| int(rng)).collect())
                }
                ParamType::BoolList(n) => {
                    let len = list_len(*n, limits, rng);
                    SymValue::BoolList((0..len).map(|_| rng.random_bool(0.5)).collect())
                }
                ParamType::Float | ParamType::Scalar | ParamType::Str | ParamType::FloatList(_) => SymValue::Concrete,
            }
        })
        .collect()
}
