//! The range oracle's bounds: where a step's output must lie. An op's own range (a probability
//! in [0, 1], an absolute value, a norm or a variance non-negative, a log-probability
//! non-positive) and a range the program declares for a `let` (`ensures v.values >= 0.0`). A
//! finite output outside it, from finite inputs, is a wrong number even where nothing turned
//! NaN or INF.
use std::f64::consts::{FRAC_PI_2, PI};

use serde::{Deserialize, Serialize};

use super::ir::ProgramIr;
use super::ops::NumOp;
use crate::case::DType;

/// A range one step's output must stay in.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepRange {
    pub step: u32,
    pub lo: f64,
    pub hi: f64,
    /// The `ensures` that declared it, or None for the op's own range.
    pub declared: Option<String>,
}

/// The range of an op's output wherever it is defined (NaN outside is the NaN/INF oracle's).
pub fn of_op(op: NumOp) -> Option<(f64, f64)> {
    use NumOp::*;
    let inf = f64::INFINITY;
    Some(match op {
        Exp | Sqrt | Rsqrt | Abs | Square | Relu | Softplus | Var | Std | Norm => (0.0, inf),
        Cosh => (1.0, inf),
        Expm1 => (-1.0, inf),
        Sigmoid | Softmax => (0.0, 1.0),
        LogSoftmax | LogSigmoid => (-inf, 0.0),
        Tanh | Sin | Cos => (-1.0, 1.0),
        Acos => (0.0, PI),
        Asin | Atan => (-FRAC_PI_2, FRAC_PI_2),
        Atan2 => (-PI, PI),
        _ => return None,
    })
}

/// Every range of a program: each step's op range, then the declared ones.
pub fn of_program(ir: &ProgramIr) -> Vec<StepRange> {
    let ops = ir.steps.iter().enumerate().filter_map(|(k, s)| of_op(s.op).map(|(lo, hi)| StepRange { step: k as u32, lo, hi, declared: None }));
    ops.chain(ir.ensures.iter().cloned()).collect()
}

/// `[lo, hi]` widened by the rounding of a bound to `dtype` (a float32 π is above π) and a few
/// of its units: what a value must leave to be outside.
pub fn limits(lo: f64, hi: f64, dtype: Option<DType>) -> (f64, f64) {
    // The dtype's machine epsilon (twice its unit roundoff); float32's where it is unknown.
    let eps = 2.0 * dtype.and_then(DType::unit_roundoff).unwrap_or(f32::EPSILON as f64 / 2.0);
    let slack = |b: f64| 4.0 * eps * b.abs().max(f64::MIN_POSITIVE);
    (lo - slack(lo), hi + slack(hi))
}

/// Whether `v` lies outside `[lo, hi]` beyond `limits`.
pub fn outside(lo: f64, hi: f64, v: f64, dtype: Option<DType>) -> bool {
    let (lo, hi) = limits(lo, hi, dtype);
    v < lo || v > hi
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_of_a_bound_is_inside_and_a_real_excursion_is_not() {
        let (lo, hi) = of_op(NumOp::Acos).unwrap_or_default();
        assert!(!outside(lo, hi, std::f32::consts::PI as f64, Some(DType::Float32)));
        assert!(outside(lo, hi, 3.2, Some(DType::Float32)));
        let (lo, hi) = of_op(NumOp::Var).unwrap_or_default();
        assert!(outside(lo, hi, -1e-30, Some(DType::Float32)) && !outside(lo, hi, 0.0, Some(DType::Float32)) && !outside(lo, hi, 1e30, None));
        assert_eq!(of_op(NumOp::Sub), None);
    }
}
