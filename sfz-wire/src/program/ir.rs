//! `program` items lowered to a straight-line IR: each step is one operation of the table in
//! `ops`, or any ATen operator called by schema (`AtenCall`), applied to operands (parameters,
//! earlier steps, constants). The checker lowers every
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
    /// A list of tensors (`Tensor[]` of an ATen operator: `cat`, `stack`), with None where a
    /// `Tensor?[]` holds one (`index` of `x[:, i]`).
    Tensors(Vec<Option<u32>>),
    /// A string (`div`'s `rounding_mode`, `gelu`'s `approximate`).
    Str(String),
}

/// An ATen operator a step calls through the dispatcher, as `sfz fuzz` calls it: any operator
/// libtorch registers is replayable, not only those of the table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AtenCall {
    /// `aten::nll_loss_forward`.
    pub name: String,
    /// `default` is the empty overload.
    pub overload: String,
    /// Which of its flattened outputs the step's value is.
    pub output: u32,
    /// The names of the trailing arguments, which are keyword-only (Python passes them by name;
    /// the dispatcher takes them in schema order, as they are written).
    #[serde(default)]
    pub keywords: Vec<String>,
}

impl AtenCall {
    /// The argument texts of a call, the trailing keyword-only ones written `name{eq}value`
    /// (`" = "` in a program, `"="` in Python).
    pub fn arguments(&self, texts: &[String], eq: &str) -> Vec<String> {
        let first_keyword = texts.len().saturating_sub(self.keywords.len());
        texts.iter().enumerate().map(|(i, t)| if i < first_keyword { t.clone() } else { format!("{}{eq}{t}", self.keywords[i - first_keyword]) }).collect()
    }

    /// `torch.ops.aten.nll_loss_forward.default`: how Python calls it.
    pub fn python(&self) -> String {
        let overload = if self.overload.is_empty() { "default" } else { &self.overload };
        format!("torch.ops.{}.{overload}", self.name.replace("::", "."))
    }
}

/// One operation applied to its operands, in the table's parameter order (defaults filled in).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// The `let` name for the step that computes a `let`'s value, else `let.k` for an
    /// intermediate inside it.
    pub name: String,
    pub op: NumOp,
    /// Which operator, when `op` is `NumOp::Aten`; its arguments are positional, in schema
    /// order, trailing ones left to their defaults.
    #[serde(default)]
    pub aten: Option<AtenCall>,
    pub args: Vec<Operand>,
}

impl Step {
    /// A step of the table.
    pub fn table(name: String, op: NumOp, args: Vec<Operand>) -> Step {
        Step { name, op, aten: None, args }
    }

    /// The Python function it calls, for reports and reproducers.
    pub fn python(&self) -> String {
        match &self.aten {
            Some(a) => a.python(),
            None => self.op.python(),
        }
    }

    /// A short name (`exp`, `nll_loss_forward`).
    pub fn short(&self) -> &str {
        match &self.aten {
            Some(a) => a.name.strip_prefix("aten::").unwrap_or(&a.name),
            None => self.op.short(),
        }
    }
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
        step.args.iter().flat_map(|a| {
            let (one, list): (Option<u32>, &[Option<u32>]) = match a {
                Operand::Value(v) => (Some(*v), &[]),
                Operand::Tensors(vs) => (None, vs),
                _ => (None, &[]),
            };
            one.into_iter().chain(list.iter().flatten().copied())
        })
    }
}
