//! `program` items lowered to a straight-line IR: each step is one operation of the table in
//! `ops` applied to operands (parameters, earlier steps, constants). The checker lowers every
//! program (`check::lowering`, wrong calls are E0020); workers interpret the IR with tch,
//! keeping every intermediate so that oracles and soft assertions can look at each.
use serde::{Deserialize, Serialize};

use super::ops::NumOp;
use crate::case::DType;

/// One operand of a step. Values are numbered parameters first, then steps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Operand {
    Value(u32),
    Float(f64),
    Int(i64),
    Bool(bool),
    Dtype(DType),
    None,
    Ints(Vec<i64>),
}

/// One operation applied to its operands, in the table's parameter order (defaults filled in).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// The `let` name for the step that computes a `let`'s value, else `let.k` for an
    /// intermediate inside it.
    pub name: String,
    pub op: NumOp,
    pub args: Vec<Operand>,
}

/// What a worker needs to run a program: the parameter count and the steps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProgramIr {
    /// Parameter names, in order (value `i` is parameter `i`).
    pub params: Vec<String>,
    pub steps: Vec<Step>,
    /// Ranges the program's `ensures` declare for its `let`s (the range oracle).
    #[serde(default)]
    pub ensures: Vec<super::range::StepRange>,
}

impl ProgramIr {
    /// The name of value `v` (a parameter or a step).
    pub fn value_name(&self, v: u32) -> &str {
        let v = v as usize;
        if v < self.params.len() {
            &self.params[v]
        } else {
            &self.steps[v - self.params.len()].name
        }
    }

    /// The value indices a step reads.
    pub fn reads(step: &Step) -> impl Iterator<Item = u32> + '_ {
        step.args.iter().filter_map(|a| match a {
            Operand::Value(v) => Some(*v),
            _ => None,
        })
    }
}
