//! The values a running program holds and one step applied to them: a table operation mapped
//! to its tch call, or an ATen operator called by schema (`aten`).
use tch::{Kind, Tensor};

use crate::runtime::materialize::kind;

use sfz_wire::case::DType;
use sfz_wire::program::ir::{Operand, Step};
use sfz_wire::program::ops::NumOp;

/// A value of a running program.
pub(super) enum V {
    T(Tensor),
    F(f64),
    I(i64),
    B(bool),
    D(DType),
    N,
    L(Vec<i64>),
    /// A list of tensors (an ATen operator's `Tensor[]`; None in a `Tensor?[]`).
    Ts(Vec<Option<Tensor>>),
    S(String),
}

impl V {
    pub(super) fn tensor(&self) -> Option<&Tensor> {
        match self {
            V::T(t) => Some(t),
            _ => None,
        }
    }

    pub(super) fn shallow(&self) -> V {
        match self {
            V::T(t) => V::T(t.shallow_clone()),
            V::F(v) => V::F(*v),
            V::I(v) => V::I(*v),
            V::B(v) => V::B(*v),
            V::D(d) => V::D(*d),
            V::N => V::N,
            V::L(v) => V::L(v.clone()),
            V::Ts(ts) => V::Ts(ts.iter().map(|t| t.as_ref().map(Tensor::shallow_clone)).collect()),
            V::S(s) => V::S(s.clone()),
        }
    }
}

pub(super) type R<T> = Result<T, tch::TchError>;

pub(super) fn operand(vals: &[V], o: &Operand) -> V {
    match o {
        Operand::Value(v) => vals[*v as usize].shallow(),
        Operand::Float(v) => V::F(*v),
        Operand::Int(v) => V::I(*v),
        Operand::Bool(v) => V::B(*v),
        Operand::Dtype(d) => V::D(*d),
        Operand::None => V::N,
        Operand::Ints(v) => V::L(v.clone()),
        Operand::Tensors(vs) => V::Ts(vs.iter().map(|v| v.and_then(|v| vals[v as usize].tensor().map(Tensor::shallow_clone))).collect()),
        Operand::Str(s) => V::S(s.clone()),
    }
}

pub(super) fn err(msg: &str) -> tch::TchError {
    tch::TchError::Kind(msg.to_string())
}

fn t(v: &V) -> R<Tensor> {
    match v {
        V::T(t) => Ok(t.shallow_clone()),
        // A Python number next to a tensor: a 0-d tensor, which type promotion treats alike.
        V::F(x) => Ok(Tensor::from(*x)),
        V::I(x) => Ok(Tensor::from(*x as f64)),
        _ => Err(err("expected a tensor or a number")),
    }
}

fn num(v: &V) -> R<f64> {
    match v {
        V::F(x) => Ok(*x),
        V::I(x) => Ok(*x as f64),
        _ => Err(err("expected a number")),
    }
}

fn int(v: &V) -> R<i64> {
    match v {
        V::I(x) => Ok(*x),
        _ => Err(err("expected an int")),
    }
}

fn boolean(v: &V) -> R<bool> {
    match v {
        V::B(x) => Ok(*x),
        _ => Err(err("expected a bool")),
    }
}

/// `dim`: None (all dimensions), an int or a list.
fn dims(v: &V) -> R<Option<Vec<i64>>> {
    match v {
        V::N => Ok(None),
        V::I(x) => Ok(Some(vec![*x])),
        V::L(x) => Ok(Some(x.clone())),
        _ => Err(err("expected dimensions")),
    }
}

/// One step on its operands.
pub(super) fn apply_step(step: &Step, a: &[V]) -> R<Tensor> {
    match &step.aten {
        Some(call) => super::aten::call(call, a),
        None => apply(step.op, a),
    }
}

/// One table operation on its operands.
pub(super) fn apply(op: NumOp, a: &[V]) -> R<Tensor> {
    let x = || t(&a[0]);
    Ok(match op {
        NumOp::Exp => x()?.f_exp()?,
        NumOp::Expm1 => x()?.f_expm1()?,
        NumOp::Log => x()?.f_log()?,
        NumOp::Log1p => x()?.f_log1p()?,
        NumOp::Log2 => x()?.f_log2()?,
        NumOp::Log10 => x()?.f_log10()?,
        NumOp::Sqrt => x()?.f_sqrt()?,
        NumOp::Rsqrt => x()?.f_rsqrt()?,
        NumOp::Reciprocal => x()?.f_reciprocal()?,
        NumOp::Abs => x()?.f_abs()?,
        NumOp::Neg => x()?.f_neg()?,
        NumOp::Sin => x()?.f_sin()?,
        NumOp::Cos => x()?.f_cos()?,
        NumOp::Tan => x()?.f_tan()?,
        NumOp::Tanh => x()?.f_tanh()?,
        NumOp::Sigmoid => x()?.f_sigmoid()?,
        NumOp::Acos => x()?.f_acos()?,
        NumOp::Asin => x()?.f_asin()?,
        NumOp::Atan => x()?.f_atan()?,
        NumOp::Sinh => x()?.f_sinh()?,
        NumOp::Cosh => x()?.f_cosh()?,
        NumOp::Square => x()?.f_square()?,
        NumOp::Erfinv => x()?.f_erfinv()?,
        NumOp::Add => x()?.f_add(&t(&a[1])?)?,
        NumOp::Sub => x()?.f_sub(&t(&a[1])?)?,
        NumOp::Mul => x()?.f_mul(&t(&a[1])?)?,
        NumOp::Div => x()?.f_div(&t(&a[1])?)?,
        NumOp::Pow => match &a[1] {
            V::T(e) => x()?.f_pow(e)?,
            v => x()?.f_pow_tensor_scalar(num(v)?)?,
        },
        NumOp::Atan2 => x()?.f_atan2(&t(&a[1])?)?,
        NumOp::Maximum => x()?.f_maximum(&t(&a[1])?)?,
        NumOp::Minimum => x()?.f_minimum(&t(&a[1])?)?,
        NumOp::Softmax => x()?.f_softmax(int(&a[1])?, None::<Kind>)?,
        NumOp::LogSoftmax => x()?.f_log_softmax(int(&a[1])?, None::<Kind>)?,
        NumOp::Logsumexp => {
            let d = dims(&a[1])?.unwrap_or_default();
            x()?.f_logsumexp(d.as_slice(), boolean(&a[2])?)?
        }
        NumOp::Sum => match dims(&a[1])? {
            None => x()?.f_sum(None::<Kind>)?,
            Some(d) => x()?.f_sum_dim_intlist(d.as_slice(), boolean(&a[2])?, None::<Kind>)?,
        },
        NumOp::Mean => match dims(&a[1])? {
            None => x()?.f_mean(None::<Kind>)?,
            Some(d) => x()?.f_mean_dim(d.as_slice(), boolean(&a[2])?, None::<Kind>)?,
        },
        NumOp::Var | NumOp::Std => {
            let d = dims(&a[1])?;
            let c = int(&a[2])?;
            let keep = boolean(&a[3])?;
            if op == NumOp::Var {
                x()?.f_var_correction(d.as_deref(), c, keep)?
            } else {
                x()?.f_std_correction(d.as_deref(), c, keep)?
            }
        }
        NumOp::Norm => {
            let d = dims(&a[2])?.unwrap_or_default();
            x()?.f_norm_scalaropt_dim(num(&a[1])?, d.as_slice(), boolean(&a[3])?)?
        }
        NumOp::Amax => x()?.f_amax(dims(&a[1])?.unwrap_or_default().as_slice(), boolean(&a[2])?)?,
        NumOp::Amin => x()?.f_amin(dims(&a[1])?.unwrap_or_default().as_slice(), boolean(&a[2])?)?,
        NumOp::Clamp => match (&a[1], &a[2]) {
            (V::N, V::N) => return Err(err("clamp needs min or max")),
            (lo, V::N) => x()?.f_clamp_min(num(lo)?)?,
            (V::N, hi) => x()?.f_clamp_max(num(hi)?)?,
            (lo, hi) => x()?.f_clamp(num(lo)?, num(hi)?)?,
        },
        NumOp::ClampMin => x()?.f_clamp_min(num(&a[1])?)?,
        NumOp::To => match &a[1] {
            V::D(d) => x()?.f_to_kind(kind(*d))?,
            _ => return Err(err("expected a dtype")),
        },
        NumOp::Matmul => x()?.f_matmul(&t(&a[1])?)?,
        NumOp::Normalize => {
            // torch.nn.functional.normalize: x / max(‖x‖_p, eps) along dim.
            let xs = x()?;
            let n = xs.f_norm_scalaropt_dim(num(&a[1])?, [int(&a[2])?].as_slice(), true)?;
            xs.f_div(&n.f_clamp_min(num(&a[3])?)?.f_expand_as(&xs)?)?
        }
        NumOp::Relu => x()?.f_relu()?,
        NumOp::Linear => {
            let bias = match &a[2] {
                V::N => None,
                b => Some(t(b)?),
            };
            x()?.f_linear(&t(&a[1])?, bias)?
        }
        NumOp::Softplus => x()?.f_softplus()?,
        NumOp::LogSigmoid => x()?.f_log_sigmoid()?,
        NumOp::Reshape => x()?.f_reshape(dims(&a[1])?.unwrap_or_default().as_slice())?,
        NumOp::Transpose => x()?.f_transpose(int(&a[1])?, int(&a[2])?)?,
        NumOp::Aten => return Err(err("an ATen step without its operator")),
    })
}
