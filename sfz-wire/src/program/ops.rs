//! The operations a `program` may call: Python names, parameters with their kinds and defaults.
//! A table, not match arms: the checker reads it to lower calls and report wrong arguments, the
//! worker's interpreter maps each `NumOp` to one tch call, the reproducer renders it back.
use serde::{Deserialize, Serialize};

/// One operation of the program IR.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum NumOp {
    Exp,
    Expm1,
    Log,
    Log1p,
    Log2,
    Log10,
    Sqrt,
    Rsqrt,
    Reciprocal,
    Abs,
    Neg,
    Sin,
    Cos,
    Tan,
    Tanh,
    Sigmoid,
    Acos,
    Asin,
    Atan,
    Sinh,
    Cosh,
    Square,
    Erfinv,
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    Atan2,
    Maximum,
    Minimum,
    Softmax,
    LogSoftmax,
    Logsumexp,
    Sum,
    Mean,
    Var,
    Std,
    Norm,
    Amax,
    Amin,
    Clamp,
    ClampMin,
    To,
    Matmul,
    Normalize,
    Relu,
    Linear,
    Softplus,
    LogSigmoid,
    Reshape,
    Transpose,
    /// Any ATen operator, called by schema (`ir::AtenCall` names it): no table entry's
    /// parameters, no objective of its own.
    Aten,
}

/// What an argument may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A tensor: a tensor parameter or an earlier `let`.
    Tensor,
    /// A tensor or a number (a literal or a `float`/`int` parameter).
    Number,
    /// A tensor or None (an optional bias).
    OptTensor,
    /// An int literal or an `int` parameter.
    Int,
    /// An int, a list of ints, or None.
    Dims,
    /// A number literal or a `float`/`int` parameter.
    Float,
    /// A number or None.
    OptFloat,
    Bool,
    /// A dtype name.
    Dtype,
}

impl Kind {
    pub fn describe(self) -> &'static str {
        match self {
            Kind::Tensor => "a tensor",
            Kind::Number => "a tensor or a number",
            Kind::OptTensor => "a tensor or None",
            Kind::Int => "an int",
            Kind::Dims => "an int, a list of ints or None",
            Kind::Float => "a number",
            Kind::OptFloat => "a number or None",
            Kind::Bool => "a bool",
            Kind::Dtype => "a dtype",
        }
    }
}

/// A default value of an optional parameter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Default {
    None,
    Int(i64),
    Float(f64),
    Bool(bool),
}

/// One parameter: its Python name, kind and default (None: required).
pub type Param = (&'static str, Kind, Option<Default>);

/// One entry of the table.
pub struct OpSig {
    pub op: NumOp,
    /// Python functions that call it (`torch.exp`, `torch.nn.functional.softmax`).
    pub functions: &'static [&'static str],
    /// The tensor method name (`x.exp()`), when there is one; `self` is the first parameter.
    pub method: Option<&'static str>,
    pub params: &'static [Param],
}

const X: Param = ("input", Kind::Tensor, None);
const DIM_NONE: Param = ("dim", Kind::Dims, Some(Default::None));
const KEEPDIM: Param = ("keepdim", Kind::Bool, Some(Default::Bool(false)));

macro_rules! unary {
    ($op:ident, $py:literal) => {
        OpSig { op: NumOp::$op, functions: &[concat!("torch.", $py)], method: Some($py), params: &[X] }
    };
}

macro_rules! binary {
    ($op:ident, $py:literal) => {
        OpSig { op: NumOp::$op, functions: &[concat!("torch.", $py)], method: Some($py), params: &[("input", Kind::Number, None), ("other", Kind::Number, None)] }
    };
}

/// Every operation a program may call.
pub static OPS: &[OpSig] = &[
    unary!(Exp, "exp"),
    unary!(Expm1, "expm1"),
    unary!(Log, "log"),
    unary!(Log1p, "log1p"),
    unary!(Log2, "log2"),
    unary!(Log10, "log10"),
    unary!(Sqrt, "sqrt"),
    unary!(Rsqrt, "rsqrt"),
    unary!(Reciprocal, "reciprocal"),
    unary!(Abs, "abs"),
    unary!(Neg, "neg"),
    unary!(Sin, "sin"),
    unary!(Cos, "cos"),
    unary!(Tan, "tan"),
    OpSig { op: NumOp::Tanh, functions: &["torch.tanh", "torch.nn.functional.tanh"], method: Some("tanh"), params: &[X] },
    OpSig { op: NumOp::Sigmoid, functions: &["torch.sigmoid", "torch.nn.functional.sigmoid"], method: Some("sigmoid"), params: &[X] },
    unary!(Acos, "acos"),
    unary!(Asin, "asin"),
    unary!(Atan, "atan"),
    unary!(Sinh, "sinh"),
    unary!(Cosh, "cosh"),
    unary!(Square, "square"),
    unary!(Erfinv, "erfinv"),
    binary!(Add, "add"),
    binary!(Sub, "sub"),
    binary!(Mul, "mul"),
    binary!(Div, "div"),
    OpSig { op: NumOp::Pow, functions: &["torch.pow"], method: Some("pow"), params: &[("input", Kind::Tensor, None), ("exponent", Kind::Number, None)] },
    OpSig { op: NumOp::Atan2, functions: &["torch.atan2"], method: Some("atan2"), params: &[("input", Kind::Tensor, None), ("other", Kind::Tensor, None)] },
    OpSig { op: NumOp::Maximum, functions: &["torch.maximum"], method: Some("maximum"), params: &[("input", Kind::Tensor, None), ("other", Kind::Tensor, None)] },
    OpSig { op: NumOp::Minimum, functions: &["torch.minimum"], method: Some("minimum"), params: &[("input", Kind::Tensor, None), ("other", Kind::Tensor, None)] },
    OpSig { op: NumOp::Softmax, functions: &["torch.softmax", "torch.nn.functional.softmax"], method: Some("softmax"), params: &[X, ("dim", Kind::Int, None)] },
    OpSig { op: NumOp::LogSoftmax, functions: &["torch.log_softmax", "torch.nn.functional.log_softmax"], method: Some("log_softmax"), params: &[X, ("dim", Kind::Int, None)] },
    OpSig { op: NumOp::Logsumexp, functions: &["torch.logsumexp"], method: Some("logsumexp"), params: &[X, ("dim", Kind::Dims, None), KEEPDIM] },
    OpSig { op: NumOp::Sum, functions: &["torch.sum"], method: Some("sum"), params: &[X, DIM_NONE, KEEPDIM] },
    OpSig { op: NumOp::Mean, functions: &["torch.mean"], method: Some("mean"), params: &[X, DIM_NONE, KEEPDIM] },
    OpSig { op: NumOp::Var, functions: &["torch.var"], method: Some("var"), params: &[X, DIM_NONE, ("correction", Kind::Int, Some(Default::Int(1))), KEEPDIM] },
    OpSig { op: NumOp::Std, functions: &["torch.std"], method: Some("std"), params: &[X, DIM_NONE, ("correction", Kind::Int, Some(Default::Int(1))), KEEPDIM] },
    OpSig {
        op: NumOp::Norm,
        functions: &["torch.norm", "torch.linalg.vector_norm"],
        method: Some("norm"),
        params: &[X, ("p", Kind::Float, Some(Default::Float(2.0))), DIM_NONE, KEEPDIM],
    },
    OpSig { op: NumOp::Amax, functions: &["torch.amax"], method: Some("amax"), params: &[X, DIM_NONE, KEEPDIM] },
    OpSig { op: NumOp::Amin, functions: &["torch.amin"], method: Some("amin"), params: &[X, DIM_NONE, KEEPDIM] },
    OpSig {
        op: NumOp::Clamp,
        functions: &["torch.clamp", "torch.clip"],
        method: Some("clamp"),
        params: &[X, ("min", Kind::OptFloat, Some(Default::None)), ("max", Kind::OptFloat, Some(Default::None))],
    },
    OpSig { op: NumOp::ClampMin, functions: &["torch.clamp_min"], method: Some("clamp_min"), params: &[X, ("min", Kind::Float, None)] },
    OpSig { op: NumOp::To, functions: &[], method: Some("to"), params: &[X, ("dtype", Kind::Dtype, None)] },
    OpSig { op: NumOp::Matmul, functions: &["torch.matmul"], method: Some("matmul"), params: &[("input", Kind::Tensor, None), ("other", Kind::Tensor, None)] },
    OpSig {
        op: NumOp::Normalize,
        functions: &["torch.nn.functional.normalize"],
        method: None,
        params: &[X, ("p", Kind::Float, Some(Default::Float(2.0))), ("dim", Kind::Int, Some(Default::Int(1))), ("eps", Kind::Float, Some(Default::Float(1e-12)))],
    },
    OpSig { op: NumOp::Relu, functions: &["torch.relu", "torch.nn.functional.relu"], method: Some("relu"), params: &[X] },
    OpSig {
        op: NumOp::Linear,
        functions: &["torch.nn.functional.linear", "torch.linear"],
        method: None,
        params: &[X, ("weight", Kind::Tensor, None), ("bias", Kind::OptTensor, Some(Default::None))],
    },
    // Only the default beta = 1, threshold = 20 (tch's softplus takes no other).
    OpSig { op: NumOp::Softplus, functions: &["torch.nn.functional.softplus"], method: None, params: &[X] },
    OpSig { op: NumOp::LogSigmoid, functions: &["torch.nn.functional.logsigmoid"], method: None, params: &[X] },
    OpSig { op: NumOp::Reshape, functions: &["torch.reshape"], method: Some("reshape"), params: &[X, ("shape", Kind::Dims, None)] },
    OpSig { op: NumOp::Transpose, functions: &["torch.transpose"], method: Some("transpose"), params: &[X, ("dim0", Kind::Int, None), ("dim1", Kind::Int, None)] },
    // Named by `torch.ops.aten.NAME.OVERLOAD`, resolved against libtorch's schemas, not here.
    OpSig { op: NumOp::Aten, functions: &[], method: None, params: &[] },
];

impl NumOp {
    pub fn sig(self) -> &'static OpSig {
        OPS.iter().find(|s| s.op == self).expect("every op has a table entry")
    }

    /// The Python function that calls it, for reports and reproducers.
    pub fn python(self) -> String {
        match self {
            NumOp::To => "torch.Tensor.to".into(),
            NumOp::Aten => "torch.ops.aten".into(),
            op => op.sig().functions[0].to_string(),
        }
    }

    /// A short name (`exp`, `softmax`), for reports and model files.
    pub fn short(self) -> &'static str {
        let s = self.sig();
        s.method.or_else(|| s.functions.first().and_then(|f| f.rsplit('.').next())).unwrap_or("aten")
    }
}

/// The op a function path names (`torch.exp`, `torch.nn.functional.softmax`).
pub fn by_function(path: &str) -> Option<&'static OpSig> {
    OPS.iter().find(|s| s.functions.contains(&path))
}

/// The op a tensor method names (`x.log()`).
pub fn by_method(name: &str) -> Option<&'static OpSig> {
    OPS.iter().find(|s| s.method == Some(name))
}
