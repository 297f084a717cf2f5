//! The formula-rewrite oracle's patterns: chains with a numerically stable equivalent (log of a
//! softmax → log_softmax, log of a sum of exps → logsumexp, log of a sigmoid → logsigmoid). The
//! worker evaluates the stable form beside the chain; a finite chain that differs from it by
//! more than the tolerance has lost precision the stable form keeps (a finding even before
//! anything turns NaN or INF).
use serde::{Deserialize, Serialize};

use super::ir::{Operand, ProgramIr, Step};
use super::ops::NumOp;

/// A chain ending at `step` and the stable form that computes the same value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rewrite {
    /// The step whose output the chain produces.
    pub step: u32,
    /// The stable form, reading the chain's own input.
    pub stable: Step,
}

/// Absolute and relative tolerance of the comparison: float32 rounds a log-probability of
/// magnitude 100 by ~1e-5, while a denormal probability loses 1e-3 and more.
pub const ATOL: f64 = 1e-3;
pub const RTOL: f64 = 1e-5;

/// Every rewrite site of a program.
pub fn find(ir: &ProgramIr) -> Vec<Rewrite> {
    let n = ir.params.len() as u32;
    // The step that computes value `v`, if it is a step.
    let producer = |v: &Operand| match v {
        Operand::Value(v) if *v >= n => ir.steps.get((*v - n) as usize),
        _ => None,
    };
    let mut out = Vec::new();
    for (k, step) in ir.steps.iter().enumerate() {
        if step.op != NumOp::Log {
            continue;
        }
        let Some(inner) = step.args.first().and_then(producer) else { continue };
        let stable = match inner.op {
            NumOp::Softmax => Some((NumOp::LogSoftmax, inner.args.clone())),
            NumOp::Sigmoid => Some((NumOp::LogSigmoid, inner.args[..1].to_vec())),
            // logsumexp needs its dimensions: a sum over all of them is left alone.
            NumOp::Sum if !matches!(inner.args.get(1), Some(Operand::None) | None) => inner
                .args
                .first()
                .and_then(producer)
                .filter(|e| e.op == NumOp::Exp)
                .map(|e| (NumOp::Logsumexp, vec![e.args[0].clone(), inner.args[1].clone(), inner.args[2].clone()])),
            _ => None,
        };
        if let Some((op, args)) = stable {
            out.push(Rewrite { step: k as u32, stable: Step::table(op.python(), op, args) });
        }
    }
    out
}

/// Whether a naive value differs from the stable one beyond the tolerance.
pub fn differs(naive: f64, stable: f64) -> bool {
    (naive - stable).abs() > ATOL + RTOL * stable.abs()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ir(steps: Vec<Step>) -> ProgramIr {
        ProgramIr { params: vec!["x".into()], steps, ensures: Vec::new() }
    }

    fn step(name: &str, op: NumOp, args: Vec<Operand>) -> Step {
        Step::table(name.into(), op, args)
    }

    #[test]
    fn the_three_chains_are_found_and_others_are_not() {
        let p = ir(vec![
            step("p", NumOp::Softmax, vec![Operand::Value(0), Operand::Int(-1)]),
            step("l", NumOp::Log, vec![Operand::Value(1)]),
            step("e", NumOp::Exp, vec![Operand::Value(0)]),
            step("s", NumOp::Sum, vec![Operand::Value(3), Operand::Int(1), Operand::Bool(false)]),
            step("lse", NumOp::Log, vec![Operand::Value(4)]),
            step("all", NumOp::Sum, vec![Operand::Value(3), Operand::None, Operand::Bool(false)]),
            step("lall", NumOp::Log, vec![Operand::Value(6)]),
            step("g", NumOp::Sigmoid, vec![Operand::Value(0)]),
            step("lg", NumOp::Log, vec![Operand::Value(8)]),
            step("plain", NumOp::Log, vec![Operand::Value(0)]),
        ]);
        let found: Vec<(u32, NumOp)> = find(&p).iter().map(|r| (r.step, r.stable.op)).collect();
        assert_eq!(found, [(1, NumOp::LogSoftmax), (4, NumOp::Logsumexp), (8, NumOp::LogSigmoid)]);
        assert_eq!(find(&p)[1].stable.args, [Operand::Value(0), Operand::Int(1), Operand::Bool(false)]);
        assert!(differs(-92.0, -92.5) && !differs(-92.0, -92.00001));
    }
}
