//! How a planned API reaches its ATen operator: which operator, and where each schema argument
//! comes from. The plan builds bindings once; workers resolve them to dispatcher handles once.
use serde::{Deserialize, Serialize};

use crate::case::{Arg, FwdArg};

/// One callable op: `aten::conv2d` overload `""`, and one source per schema argument.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpBinding {
    /// Qualified operator name, e.g. `aten::conv2d`.
    pub name: String,
    /// Overload name, `""` for the default overload.
    pub overload: String,
    /// One entry per schema argument, in schema order.
    pub args: Vec<ArgSource>,
    /// The operator's schema as the catalog printed it: argument names and defaults for
    /// diagnostics and for reproducers that call `torch.ops.aten.<name>.<overload>`.
    #[serde(default)]
    pub schema: String,
    /// For an API with a `from` statement: the forward the worker calls first, whose outputs
    /// fill some of the case's arguments (`case::Forward` says which).
    #[serde(default)]
    pub forward: Option<Box<ForwardCall>>,
}

/// The forward of a `from` statement, resolved: its operator and where each of its arguments
/// comes from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ForwardCall {
    /// The forward API's Python name, for messages and reproducers.
    pub api: String,
    /// Its operator; `ArgSource::Param` indices there are the forward API's parameters.
    pub binding: OpBinding,
    /// Per parameter of the forward API: the case's argument, a constant, its default, or a
    /// fresh tensor.
    pub args: Vec<FwdArg>,
}

impl OpBinding {
    /// `aten::sum.dim_IntList`, or `aten::exp` for the default overload.
    pub fn qualified(&self) -> String {
        if self.overload.is_empty() {
            self.name.clone()
        } else {
            format!("{}.{}", self.name, self.overload)
        }
    }
}

/// Where the value of one schema argument comes from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ArgSource {
    /// The case's argument at this index (spec parameter order). An `Arg::Omitted` there means
    /// the schema default.
    Param { index: usize, transform: Transform },
    /// The schema's default value.
    Default,
    /// A fixed value.
    Value(Arg),
    /// An `out=` argument (a `Tensor(a!)` of an out overload): a tensor the worker allocates,
    /// empty, with the dtype of output `k` of the functional call the out overload stands for.
    Output(usize),
}

/// A Python-level adjustment between the public API and the ATen operator.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum Transform {
    #[default]
    Identity,
    /// None becomes this value (e.g. `padding_idx=None` is `-1` in `aten::embedding`).
    NoneAs(Arg),
    /// An omitted case argument becomes this value: the Python default, for a schema argument
    /// that has no default of its own (e.g. `F.dropout`'s `training=True` → `train`).
    OmittedAs(Arg),
    /// `F.embedding`'s `padding_idx`: None is -1, a negative index counts from the end of the
    /// weight's first dimension (the case argument at `weight`).
    EmbeddingPaddingIdx { weight: usize },
}
