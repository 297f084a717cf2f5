//! Breaking one constraint on purpose (violate mode). Symbolic constraints are broken by the
//! solver (their negation replaces them); what is left here is breaking a concrete constraint
//! through a drawn value, breaking what the declarations imply (a None, a value of the wrong
//! type, a list of the wrong length, a string outside an enum), and pushing a broken int to an
//! extreme. The generator then checks with the evaluator that exactly the chosen constraint is
//! broken.
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::plan::Declared;
use super::values::{arg_vals, bounds_of_one};
use crate::solve::value_target;
use crate::spec::{ApiSpec, Builtin, Category, ParamType, TExpr};
use crate::wire::case::{Arg, DType, Special, TensorRecipe};

/// Ints that break ranges in interesting ways: the ends of int32 and int64, and just past them.
pub const EXTREME_INTS: [i64; 8] = [i64::MAX, i64::MIN, i32::MAX as i64, i32::MIN as i64, 1 << 31, -(1 << 31) - 1, 1 << 40, -(1 << 40)];

/// A value just outside `lo` (when `below`) or `hi`, integer-valued so every dtype holds it
/// exactly; sometimes a few steps further out.
fn outside(lo: Option<(f64, bool)>, hi: Option<(f64, bool)>, below: bool, rng: &mut ChaCha8Rng) -> Option<f64> {
    let step = if rng.random_bool(0.7) { 0.0 } else { rng.random_range(1..4) as f64 };
    if below {
        let (v, open) = lo?;
        Some(if open { v.floor() - step } else { v.ceil() - 1.0 - step })
    } else {
        let (v, closed) = hi?;
        Some(if closed { v.floor() + 1.0 + step } else { v.ceil() + step })
    }
}

/// Whether a tensor of this dtype holds `v` exactly, so that what the evaluator judges (the
/// value written) is what the tensor holds.
pub fn holds_exactly(dtype: DType, v: f64) -> bool {
    if let Some((lo, hi)) = dtype.int_bounds() {
        // Through i128: int64's maximum is not a double, and 2^63 must not pass for it.
        return v.fract() == 0.0 && v >= lo as f64 && (v as i128) <= hi as i128;
    }
    let f32_exact = (v as f32) as f64 == v;
    let bf16_exact = f32_exact && (v as f32).to_bits() & 0xFFFF == 0;
    match dtype {
        DType::Float64 | DType::Complex128 => true,
        DType::Float32 | DType::Complex64 => f32_exact,
        DType::BFloat16 => bf16_exact,
        // float16: 11 significant bits (more than bfloat16's 8), finite up to 65504, normal
        // from 2^-14.
        _ => bf16_exact && v.abs() <= 65504.0 && (v == 0.0 || v.abs() >= 2f64.powi(-14)),
    }
}

/// The greatest (or least) value of an integral dtype that a double holds exactly.
pub fn int_extreme(dtype: DType, greatest: bool) -> f64 {
    let (lo, hi) = dtype.int_bounds().unwrap_or((0, 0));
    match (dtype, greatest) {
        // The largest double below 2^63.
        (DType::Int64, true) => 9_223_372_036_854_774_784.0,
        (_, true) => hi as f64,
        (_, false) => lo as f64,
    }
}

/// The tensor of `arg` to write a breaking value into: a non-empty one.
fn tensor_mut<'a>(arg: &'a mut Arg, rng: &mut ChaCha8Rng) -> Option<&'a mut TensorRecipe> {
    match arg {
        Arg::Tensor(t) if t.numel() > 0 => Some(t),
        Arg::TensorList(ts) => {
            let nonempty: Vec<usize> = (0..ts.len()).filter(|&i| ts[i].numel() > 0).collect();
            let i = *nonempty.get(rng.random_range(0..nonempty.len().max(1)))?;
            ts.get_mut(i)
        }
        _ => None,
    }
}

/// Breaks `requires[k]`, a concrete constraint, through the parameter whose values it bounds:
/// one element outside the range (or a NaN for `finite`), or a float argument outside its bounds.
/// False when that is impossible for this case (an empty tensor, a dtype that cannot hold any
/// value outside the range).
pub fn break_concrete(api: &ApiSpec, k: usize, args: &mut [Arg], rng: &mut ChaCha8Rng) -> bool {
    let Some(c) = api.requires.get(k) else { return false };
    let Some(p) = value_target(&c.expr) else { return false };
    let known = arg_vals(api, args);
    if let TExpr::Call(f @ (Builtin::Finite | Builtin::NoNan), _) = &c.expr {
        let Some(t) = args.get_mut(p).and_then(|a| tensor_mut(a, rng)) else { return false };
        if !(t.dtype.is_floating() || t.dtype.is_complex()) {
            return false;
        }
        let index = rng.random_range(0..t.numel());
        let inf = *f == Builtin::Finite && rng.random_bool(0.5);
        t.specials.push((index, if inf { Special::PosInf } else { Special::Nan }));
        return true;
    }
    let (lo, hi) = bounds_of_one(api, k, p, &known);
    let mut sides = vec![true, false];
    if rng.random_bool(0.5) {
        sides.reverse();
    }
    match args.get_mut(p) {
        Some(Arg::Float(x)) => {
            for below in sides {
                if let Some(v) = outside(lo, hi, below, rng) {
                    *x = v;
                    return true;
                }
            }
            false
        }
        Some(arg @ (Arg::Tensor(_) | Arg::TensorList(_))) => {
            let Some(t) = tensor_mut(arg, rng) else { return false };
            let extreme = rng.random_bool(0.25);
            for below in sides {
                let Some(mut v) = outside(lo, hi, below, rng) else { continue };
                if extreme {
                    // The far end of what the dtype holds, on the same side.
                    let far = match t.dtype.int_bounds() {
                        Some(_) => int_extreme(t.dtype, !below),
                        None => {
                            if below {
                                -1e30
                            } else {
                                1e30
                            }
                        }
                    };
                    if t.dtype != DType::Bool && (if below { far < v } else { far > v }) && holds_exactly(t.dtype, far) {
                        v = far;
                    }
                }
                if holds_exactly(t.dtype, v) {
                    let index = rng.random_range(0..t.numel());
                    t.specials.push((index, Special::Value(v)));
                    return true;
                }
            }
            false
        }
        _ => false,
    }
}

/// Pushes the int that breaks a one-parameter range constraint to an extreme (the ends of int32
/// and int64, ...). The caller keeps the result only if the evaluator agrees it still breaks
/// exactly that constraint.
pub fn extreme_int(api: &ApiSpec, k: usize, args: &mut [Arg], rng: &mut ChaCha8Rng) -> bool {
    let Some(c) = api.requires.get(k) else { return false };
    if c.category != Category::Range || c.params.len() != 1 {
        return false;
    }
    let v = EXTREME_INTS[rng.random_range(0..EXTREME_INTS.len())];
    match args.get_mut(c.params[0]) {
        Some(Arg::Int(x)) => {
            *x = v;
            true
        }
        Some(Arg::IntList(xs)) if !xs.is_empty() => {
            let i = rng.random_range(0..xs.len());
            xs[i] = v;
            true
        }
        _ => false,
    }
}

/// A value of another type than the parameter's, which Python's argument parser and the
/// operator's schema both refuse.
fn wrong_type(ty: &ParamType, current: &Arg, rng: &mut ChaCha8Rng) -> Arg {
    let pick = |rng: &mut ChaCha8Rng, options: Vec<Arg>| options[rng.random_range(0..options.len())].clone();
    match ty {
        ParamType::Tensor => pick(rng, vec![Arg::Int(1), Arg::Float(0.5), Arg::IntList(vec![1, 2])]),
        ParamType::TensorList => match current {
            Arg::TensorList(ts) if !ts.is_empty() && rng.random_bool(0.5) => Arg::Tensor(ts[0].clone()),
            _ => pick(rng, vec![Arg::Int(1), Arg::Float(0.5)]),
        },
        ParamType::Int => pick(rng, vec![Arg::Float(1.5), Arg::Str("1".into())]),
        ParamType::Float | ParamType::Scalar => Arg::Str("1.0".into()),
        ParamType::Bool => Arg::Str("True".into()),
        ParamType::Str | ParamType::Enum(_) => Arg::Int(0),
        ParamType::Dtype => Arg::Str("float32".into()),
        ParamType::IntList(_) => pick(rng, vec![Arg::Float(1.5), Arg::FloatList(vec![1.5, 2.5])]),
        ParamType::FloatList(_) => Arg::Str("1.0".into()),
        ParamType::BoolList(_) => Arg::Str("True".into()),
    }
}

/// Breaks a declaration constraint in the case's arguments.
pub fn break_declared(api: &ApiSpec, d: &Declared, args: &mut [Arg], rng: &mut ChaCha8Rng) -> bool {
    let p = d.param();
    let Some(param) = api.params.get(p) else { return false };
    let Some(arg) = args.get_mut(p) else { return false };
    match d {
        Declared::NotNone(_) => *arg = Arg::None,
        Declared::Type(_) => *arg = wrong_type(&param.ty, arg, rng),
        Declared::Length(_, n) => {
            let n = *n as usize;
            // One more or, when that is not 1 (which Python broadcasts), one fewer element.
            let len = if n > 2 && rng.random_bool(0.5) { n - 1 } else { n + 1 };
            *arg = match (&param.ty, &*arg) {
                (ParamType::FloatList(_), _) => Arg::FloatList((0..len).map(|i| 1.0 + i as f64).collect()),
                (ParamType::BoolList(_), _) => Arg::BoolList(vec![false; len]),
                (_, Arg::IntList(xs)) if !xs.is_empty() => Arg::IntList((0..len).map(|i| xs[i % xs.len()]).collect()),
                _ => Arg::IntList(vec![1; len]),
            };
        }
        Declared::EnumValue(_) => {
            let ParamType::Enum(values) = &param.ty else { return false };
            let base = values.get(rng.random_range(0..values.len().max(1))).cloned().unwrap_or_default();
            let candidates = [format!("{base}_"), base.to_uppercase(), String::new(), "none".to_string()];
            let Some(v) = candidates.into_iter().find(|c| !values.contains(c)) else { return false };
            *arg = Arg::Str(v);
        }
    }
    true
}

/// Whether each declaration constraint holds for the arguments, judged from the arguments and
/// the parameter types alone.
pub fn declared_hold(api: &ApiSpec, declared: &[Declared], args: &[Arg]) -> Vec<bool> {
    declared
        .iter()
        .map(|d| {
            let p = d.param();
            let (Some(param), Some(arg)) = (api.params.get(p), args.get(p)) else { return true };
            match d {
                Declared::NotNone(_) => !matches!(arg, Arg::None),
                Declared::Type(_) => type_fits(&param.ty, arg),
                Declared::Length(_, n) => match arg {
                    Arg::IntList(xs) => xs.len() == *n as usize,
                    Arg::FloatList(xs) => xs.len() == *n as usize,
                    Arg::BoolList(xs) => xs.len() == *n as usize,
                    _ => true,
                },
                Declared::EnumValue(_) => match (&param.ty, arg) {
                    (ParamType::Enum(values), Arg::Str(s)) => values.contains(s),
                    _ => true,
                },
            }
        })
        .collect()
}

/// Whether an argument is a value of the declared type (None and omitted always fit here; the
/// `NotNone` constraint judges None).
pub fn type_fits(ty: &ParamType, arg: &Arg) -> bool {
    match (ty, arg) {
        (_, Arg::None | Arg::Omitted) => true,
        (ParamType::Tensor, Arg::Tensor(_)) => true,
        (ParamType::TensorList, Arg::TensorList(_)) => true,
        (ParamType::Int, Arg::Int(_)) => true,
        (ParamType::Float, Arg::Float(_) | Arg::Int(_)) => true,
        (ParamType::Scalar, Arg::Float(_) | Arg::Int(_) | Arg::Bool(_)) => true,
        (ParamType::Bool, Arg::Bool(_)) => true,
        (ParamType::Str | ParamType::Enum(_), Arg::Str(_)) => true,
        (ParamType::Dtype, Arg::Dtype(_)) => true,
        // A single int stands for a list of it, as in Python (`stride=2`).
        (ParamType::IntList(_), Arg::IntList(_) | Arg::Int(_)) => true,
        (ParamType::FloatList(_), Arg::FloatList(_) | Arg::IntList(_)) => true,
        (ParamType::BoolList(_), Arg::BoolList(_)) => true,
        _ => false,
    }
}
