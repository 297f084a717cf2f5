//! From a solved symbolic model to concrete arguments: tensor recipes (dtype and shape from the
//! model, a fill whose range comes from the spec's value constraints), ints and enums as solved,
//! floats drawn within the bounds their constraints give.
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::plan::GenPlan;
use crate::eval::{self, Bindings, TensorVal, Val};
// Whether a case conforms is the evaluator's to say; many stages ask it here.
pub use crate::eval::{arg_vals, conforms, conforms_reading, value_val};
use crate::solve::{SymModel, SymValue};
use crate::spec::{ApiSpec, BinOp, ParamType, Prop, TExpr, Value};
use crate::wire::case::{Arg, DType, Fill, TensorRecipe};

/// Default element range when the spec gives none.
const DEFAULT_SPAN: f64 = 10.0;

/// Bounds on one value, from the constraints that compare it with expressions.
#[derive(Clone, Copy, Debug)]
struct Bounds {
    lo: Option<f64>,
    hi: Option<f64>,
    /// `lo` is excluded (`x > lo`); `hi` is excluded unless `hi_closed`.
    lo_open: bool,
    hi_closed: bool,
}

impl Bounds {
    fn none() -> Self {
        Bounds { lo: None, hi: None, lo_open: false, hi_closed: false }
    }

    fn tighten_lo(&mut self, v: f64, open: bool) {
        if self.lo.is_none_or(|l| v > l) {
            self.lo = Some(v);
            self.lo_open = open;
        }
    }

    fn tighten_hi(&mut self, v: f64, closed: bool) {
        if self.hi.is_none_or(|h| v < h) {
            self.hi = Some(v);
            self.hi_closed = closed;
        }
    }
}

/// The parameter values known before anything concrete is drawn: shapes, ints, enums.
pub fn symbolic_vals(model: &SymModel) -> Vec<Val> {
    model
        .iter()
        .map(|v| match v {
            SymValue::Absent => Val::None,
            SymValue::Tensor { dtype, shape } => Val::Tensor(unknown_values(*dtype, shape)),
            SymValue::TensorList(ts) => Val::List(ts.iter().map(|(d, s)| Val::Tensor(unknown_values(*d, s))).collect()),
            SymValue::Int(i) => Val::Int(*i),
            SymValue::Bool(b) => Val::Bool(*b),
            SymValue::Enum(s) => Val::Str(s.clone()),
            SymValue::Dtype(d) => Val::Dtype(*d),
            SymValue::IntList(v) => Val::List(v.iter().map(|&i| Val::Int(i)).collect()),
            SymValue::BoolList(v) => Val::List(v.iter().map(|&b| Val::Bool(b)).collect()),
            SymValue::Scalar(_) | SymValue::Concrete => Val::Unknown,
        })
        .collect()
}

fn unknown_values(dtype: DType, shape: &[i64]) -> TensorVal {
    TensorVal { dtype: Some(dtype), shape: shape.to_vec(), min: f64::NEG_INFINITY, max: f64::INFINITY, max_closed: true, nonfinite: true, nan: true, contiguous: None }
}

/// Bounds that the `requires` constraints (but `skip`) put on parameter `p` (its values for a
/// tensor, itself for a number), given what is already known.
fn bounds_of(api: &ApiSpec, p: usize, known: &[Val], skip: Option<usize>) -> Bounds {
    let constraints = api.requires.iter().enumerate().filter(|(k, _)| Some(*k) != skip).map(|(_, c)| c);
    bounds_from(constraints, p, known)
}

/// Bounds that these constraints put on parameter `p`.
fn bounds_from<'c>(constraints: impl Iterator<Item = &'c crate::spec::Constraint>, p: usize, known: &[Val]) -> Bounds {
    let mut b = Bounds::none();
    // `p.values`, and for a tensor list `p[*].values` (every element's).
    let is_target = |e: &TExpr| match e {
        TExpr::Prop(base, Prop::Values) => match &**base {
            TExpr::Param(i) => *i == p,
            TExpr::Each(list) => matches!(**list, TExpr::Param(i) if i == p),
            _ => false,
        },
        TExpr::Param(i) => *i == p,
        _ => false,
    };
    let bindings = Bindings { params: known, results: &[] };
    let number = |e: &TExpr| eval_number(e, &bindings);
    let mut parts = Vec::new();
    for c in constraints {
        conjuncts(&c.expr, &bindings, &mut parts);
    }
    for e in parts {
        let (op, l, r, l_target, r_target) = match e {
            TExpr::Binary(op, l, r) => (op, l, r, is_target(l), is_target(r)),
            // `forall t in p: t.values in ..`: the same bound on every element of a tensor list.
            TExpr::Forall { var, range, body } if matches!(**range, TExpr::Param(i) if i == p) => {
                let TExpr::Binary(op, l, r) = &**body else { continue };
                let element = |e: &TExpr| matches!(e, TExpr::Prop(b, Prop::Values) if matches!(**b, TExpr::Bound(v) if v == *var));
                (op, l, r, element(l), element(r))
            }
            _ => continue,
        };
        match (op, l_target, r_target) {
            (BinOp::In, true, false) => {
                if let TExpr::Range { lo, hi, inclusive } = &**r {
                    if let Some(v) = number(lo) {
                        b.tighten_lo(v, false);
                    }
                    if let Some(v) = number(hi) {
                        b.tighten_hi(v, *inclusive);
                    }
                }
            }
            (BinOp::Ge | BinOp::Gt, true, false) => {
                if let Some(v) = number(r) {
                    b.tighten_lo(v, *op == BinOp::Gt);
                }
            }
            (BinOp::Le | BinOp::Lt, true, false) => {
                if let Some(v) = number(r) {
                    b.tighten_hi(v, *op == BinOp::Le);
                }
            }
            (BinOp::Le | BinOp::Lt, false, true) => {
                if let Some(v) = number(l) {
                    b.tighten_lo(v, *op == BinOp::Lt);
                }
            }
            (BinOp::Ge | BinOp::Gt, false, true) => {
                if let Some(v) = number(l) {
                    b.tighten_hi(v, *op == BinOp::Ge);
                }
            }
            _ => {}
        }
    }
    b
}

/// The parts of constraint `e` that must hold given what is known: both sides of an `and`, the
/// branch of an `if` the known values choose, the side of an `or` whose other side they make
/// false, the consequence of an `=>` whose premise they make true; `e` itself otherwise. So a
/// bound behind a guard (`if len(bufs) == 0 then momentum == 0.0 else momentum in 0.1..0.99`)
/// bounds the drawn value once the guard's parameters are known.
fn conjuncts<'e>(e: &'e TExpr, b: &Bindings, out: &mut Vec<&'e TExpr>) {
    let decided = |c: &TExpr| eval::holds(c, b, &[], &[]);
    match e {
        TExpr::Binary(BinOp::And, l, r) => {
            conjuncts(l, b, out);
            conjuncts(r, b, out);
        }
        TExpr::Binary(BinOp::Or, l, r) => match (decided(l), decided(r)) {
            (Some(true), _) | (_, Some(true)) => {}
            (Some(false), _) => conjuncts(r, b, out),
            (_, Some(false)) => conjuncts(l, b, out),
            _ => {}
        },
        TExpr::Binary(BinOp::Implies, l, r) => {
            if decided(l) == Some(true) {
                conjuncts(r, b, out);
            }
        }
        TExpr::If(c, then, otherwise) => match decided(c) {
            Some(true) => conjuncts(then, b, out),
            Some(false) => conjuncts(otherwise, b, out),
            None => {}
        },
        _ => out.push(e),
    }
}

/// The values a float or Scalar parameter `p` is limited to by `p in [a, b, ...]` or `p == a`
/// (`multi_margin_loss`'s `p in [1, 2]`), when a constraint other than `skip` limits it so; the
/// range bounds of `bounds_of` cannot say that.
fn choices_of(api: &ApiSpec, p: usize, known: &[Val], skip: Option<usize>) -> Option<Vec<f64>> {
    let bindings = Bindings { params: known, results: &[] };
    let mut out: Option<Vec<f64>> = None;
    let mut parts = Vec::new();
    for (_, c) in api.requires.iter().enumerate().filter(|(k, _)| Some(*k) != skip) {
        conjuncts(&c.expr, &bindings, &mut parts);
    }
    for e in parts {
        let TExpr::Binary(op, l, r) = e else { continue };
        let values: Option<Vec<f64>> = match (op, &**l, &**r) {
            (BinOp::In, TExpr::Param(i), TExpr::List(items)) if *i == p => items.iter().map(|e| eval_number(e, &bindings)).collect(),
            (BinOp::In, TExpr::Param(i), TExpr::Lit(Value::List(items))) if *i == p => items
                .iter()
                .map(|v| match v {
                    Value::Int(x) => Some(*x as f64),
                    Value::Float(x) => Some(*x),
                    _ => None,
                })
                .collect(),
            (BinOp::Eq, TExpr::Param(i), e) | (BinOp::Eq, e, TExpr::Param(i)) if *i == p => eval_number(e, &bindings).map(|v| vec![v]),
            _ => None,
        };
        if let Some(values) = values {
            // Several such constraints: the values all of them allow.
            out = Some(match out {
                Some(prev) => prev.into_iter().filter(|v| values.contains(v)).collect(),
                None => values,
            });
        }
    }
    out.filter(|v| !v.is_empty())
}

/// The numeric value of an int or float expression over known parameters: literals,
/// parameters, ndim/numel/shape reads, arithmetic and min/max/abs/len.
pub fn eval_number(e: &TExpr, b: &Bindings) -> Option<f64> {
    use TExpr::*;
    Some(match e {
        Lit(Value::Int(i)) => *i as f64,
        Lit(Value::Float(f)) => *f,
        Param(i) => match b.params.get(*i)? {
            Val::Int(v) => *v as f64,
            Val::Float(v) => *v,
            _ => return None,
        },
        Prop(base, crate::spec::Prop::Ndim) => eval_tensor(base, b)?.shape.len() as f64,
        Prop(base, crate::spec::Prop::Numel) => eval_tensor(base, b)?.numel() as f64,
        Index(base, index) => {
            let i = eval_number(index, b)? as i64;
            let list: Vec<f64> = match &**base {
                Prop(t, crate::spec::Prop::Shape) => eval_tensor(t, b)?.shape.iter().map(|&d| d as f64).collect(),
                Param(p) => match b.params.get(*p)? {
                    Val::List(xs) => xs.iter().map(|x| if let Val::Int(v) = x { Some(*v as f64) } else { None }).collect::<Option<_>>()?,
                    _ => return None,
                },
                _ => return None,
            };
            let k = if i < 0 { i + list.len() as i64 } else { i };
            *list.get(usize::try_from(k).ok()?)?
        }
        Unary(crate::spec::UnOp::Neg, inner) => -eval_number(inner, b)?,
        Binary(op, l, r) => {
            let (x, y) = (eval_number(l, b)?, eval_number(r, b)?);
            match op {
                BinOp::Add => x + y,
                BinOp::Sub => x - y,
                BinOp::Mul => x * y,
                // `/` on two ints is floor division; with a float on either side, true division.
                BinOp::Div if y != 0.0 && integral(l, b) && integral(r, b) => (x / y).floor(),
                BinOp::Div if y != 0.0 => x / y,
                BinOp::Rem if y != 0.0 => x.rem_euclid(y),
                _ => return None,
            }
        }
        Call(crate::spec::Builtin::Max, args) => args.iter().map(|a| eval_number(a, b)).collect::<Option<Vec<_>>>()?.into_iter().fold(f64::NEG_INFINITY, f64::max),
        Call(crate::spec::Builtin::Min, args) => args.iter().map(|a| eval_number(a, b)).collect::<Option<Vec<_>>>()?.into_iter().fold(f64::INFINITY, f64::min),
        Call(crate::spec::Builtin::Abs, args) => eval_number(&args[0], b)?.abs(),
        Call(crate::spec::Builtin::Prod, args) => match &args[0] {
            Param(p) => match b.params.get(*p)? {
                Val::List(xs) => xs.iter().map(|x| if let Val::Int(v) = x { Some(*v as f64) } else { None }).product::<Option<f64>>()?,
                _ => return None,
            },
            Prop(t, crate::spec::Prop::Shape) => eval_tensor(t, b)?.numel() as f64,
            _ => return None,
        },
        Call(crate::spec::Builtin::Len, args) => match &args[0] {
            Param(p) => match b.params.get(*p)? {
                Val::List(xs) => xs.len() as f64,
                _ => return None,
            },
            Prop(t, crate::spec::Prop::Shape) => eval_tensor(t, b)?.shape.len() as f64,
            _ => return None,
        },
        _ => return None,
    })
}

/// Whether a number `eval_number` reads is an int: literals and parameters by their kind, reads
/// of shapes, sizes and int lists, and arithmetic on ints only.
fn integral(e: &TExpr, b: &Bindings) -> bool {
    use TExpr::*;
    match e {
        Lit(v) => !matches!(v, Value::Float(_)),
        Param(i) => !matches!(b.params.get(*i), Some(Val::Float(_))),
        Unary(_, inner) => integral(inner, b),
        Binary(_, l, r) => integral(l, b) && integral(r, b),
        Call(_, args) => args.iter().all(|a| integral(a, b)),
        _ => true,
    }
}

fn eval_tensor(e: &TExpr, b: &Bindings) -> Option<TensorVal> {
    match e {
        TExpr::Param(i) => match b.params.get(*i)? {
            Val::Tensor(t) => Some(t.clone()),
            _ => None,
        },
        TExpr::Index(base, index) => {
            let i = eval_number(index, b)? as i64;
            let TExpr::Param(p) = **base else { return None };
            let Val::List(xs) = b.params.get(p)? else { return None };
            let k = if i < 0 { i + xs.len() as i64 } else { i };
            match xs.get(usize::try_from(k).ok()?)? {
                Val::Tensor(t) => Some(t.clone()),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The fill of a tensor of this dtype within these bounds.
fn fill_for(dtype: DType, b: Bounds) -> Fill {
    if dtype == DType::Bool {
        // Only 0 and 1 exist: keep those the bounds allow (both when neither fits, which the
        // evaluator then rejects).
        let inside = |v: f64| b.lo.is_none_or(|l| if b.lo_open { v > l } else { v >= l }) && b.hi.is_none_or(|h| if b.hi_closed { v <= h } else { v < h });
        return match (inside(0.0), inside(1.0)) {
            (false, true) => Fill::Constant(1.0),
            (true, false) => Fill::Constant(0.0),
            _ => Fill::Int { lo: 0, hi: 2 },
        };
    }
    if dtype.is_integral() {
        let (tmin, tmax) = dtype.int_bounds().expect("integral dtypes have bounds");
        let lo = b.lo.map(|v| if b.lo_open { v.floor() as i64 + 1 } else { v.ceil() as i64 });
        let hi = b.hi.map(|v| if b.hi_closed { v.floor() as i64 + 1 } else { v.ceil() as i64 });
        let (lo, hi) = match (lo, hi) {
            (Some(l), Some(h)) => (l, h),
            (Some(l), None) => (l, l.saturating_add(DEFAULT_SPAN as i64 * 2)),
            (None, Some(h)) => (h.saturating_sub(DEFAULT_SPAN as i64 * 2), h),
            (None, None) => (-(DEFAULT_SPAN as i64), DEFAULT_SPAN as i64 + 1),
        };
        let lo = lo.clamp(tmin, tmax);
        let hi = hi.clamp(tmin.saturating_add(1), tmax.saturating_add(1).max(tmin + 1)).max(lo + 1);
        return Fill::Int { lo, hi };
    }
    let (lo, hi) = match (b.lo, b.hi) {
        (Some(l), Some(h)) => (l, h),
        (Some(l), None) => (l, l + 2.0 * DEFAULT_SPAN),
        (None, Some(h)) => (h - 2.0 * DEFAULT_SPAN, h),
        (None, None) => (-DEFAULT_SPAN, DEFAULT_SPAN),
    };
    if lo >= hi {
        return Fill::Constant(lo);
    }
    // An open lower bound (`values > 0`) excludes lo itself: start just above it.
    let lo = if b.lo_open { lo + (hi - lo) * 1e-6 } else { lo };
    Fill::Uniform { lo, hi }
}

fn recipe(dtype: DType, shape: &[i64], bounds: Bounds, rng: &mut ChaCha8Rng) -> TensorRecipe {
    TensorRecipe { dtype, shape: shape.to_vec(), fill: fill_for(dtype, bounds), seed: rng.random_range(0..1u64 << 53), layout: Default::default(), specials: Vec::new() }
}

fn draw_float(b: Bounds, rng: &mut ChaCha8Rng) -> f64 {
    let (lo, hi) = match (b.lo, b.hi) {
        (Some(l), Some(h)) if l < h => (l, h),
        (Some(l), Some(_)) => return l,
        (Some(l), None) => (l, l + 4.0),
        (None, Some(h)) => (h - 4.0, h),
        (None, None) => (-4.0, 4.0),
    };
    let v = rng.random_range(lo..hi);
    if b.lo_open && v <= lo {
        lo + (hi - lo) * 0.5
    } else {
        v
    }
}

/// An int in `b` (within [-4, 4] where unbounded), as `draw_float` draws a float; the lower
/// bound when there is none.
fn draw_int(b: Bounds, rng: &mut ChaCha8Rng) -> i64 {
    let lo = b.lo.map(|l| if b.lo_open { l.floor() + 1.0 } else { l.ceil() });
    let hi = b.hi.map(|h| if b.hi_closed { h.floor() } else { h.ceil() - 1.0 });
    let (lo, hi) = match (lo, hi) {
        (Some(l), Some(h)) => (l, h),
        (Some(l), None) => (l, l + 4.0),
        (None, Some(h)) => (h - 4.0, h),
        (None, None) => (-4.0, 4.0),
    };
    if lo >= hi {
        return lo as i64;
    }
    rng.random_range(lo as i64..=hi as i64)
}

/// A Scalar of the kind the solver chose, or a float parameter (`Float64`): a bool, an int (one
/// of the whole `choices` when a constraint lists values), or a float (one of `choices`, or
/// within the bounds).
fn scalar(kind: DType, choices: Option<Vec<f64>>, b: Bounds, rng: &mut ChaCha8Rng) -> Arg {
    let pick = |xs: &[f64], rng: &mut ChaCha8Rng| xs[rng.random_range(0..xs.len())];
    match kind {
        DType::Bool => Arg::Bool(rng.random_bool(0.5)),
        DType::Int64 => {
            let whole: Vec<f64> = choices.unwrap_or_default().into_iter().filter(|v| v.fract() == 0.0 && v.abs() < 9.0e15).collect();
            Arg::Int(if whole.is_empty() { draw_int(b, rng) } else { pick(&whole, rng) as i64 })
        }
        _ => Arg::Float(match choices {
            Some(values) => pick(&values, rng),
            None => draw_float(b, rng),
        }),
    }
}

/// Concrete arguments for one model, drawn in the plan's order (a parameter after those its
/// bounds read) within the bounds of every constraint but `skip`. Parameters with a default are
/// sometimes left out, so the op's own default is exercised too.
pub fn concretize(api: &ApiSpec, plan: &GenPlan, model: &SymModel, skip: Option<usize>, rng: &mut ChaCha8Rng) -> Vec<Arg> {
    let mut known = symbolic_vals(model);
    let mut args = vec![Arg::Omitted; model.len().min(api.params.len())];
    for &i in &plan.order {
        let (Some(v), Some(p)) = (model.get(i), api.params.get(i)) else { continue };
        let bounds = bounds_of(api, i, &known, skip);
        let arg = match v {
            SymValue::Absent => {
                if p.default == Some(Value::None) && rng.random_bool(0.5) {
                    Arg::Omitted
                } else {
                    Arg::None
                }
            }
            SymValue::Tensor { dtype, shape } => Arg::Tensor(recipe(*dtype, shape, bounds, rng)),
            SymValue::TensorList(ts) => Arg::TensorList(ts.iter().map(|(d, s)| recipe(*d, s, bounds, rng)).collect()),
            SymValue::Int(x) => Arg::Int(*x),
            SymValue::Bool(x) => Arg::Bool(*x),
            SymValue::Enum(s) => Arg::Str(s.clone()),
            SymValue::Dtype(d) => Arg::Dtype(*d),
            SymValue::IntList(xs) => Arg::IntList(xs.clone()),
            SymValue::BoolList(xs) => Arg::BoolList(xs.clone()),
            SymValue::Scalar(kind) => scalar(*kind, choices_of(api, i, &known, skip), bounds, rng),
            SymValue::Concrete => match &p.ty {
                ParamType::Float | ParamType::Scalar => scalar(DType::Float64, choices_of(api, i, &known, skip), bounds, rng),
                ParamType::FloatList(n) => {
                    let len = n.unwrap_or_else(|| rng.random_range(0..=4)) as usize;
                    Arg::FloatList((0..len).map(|_| draw_float(bounds, rng)).collect())
                }
                ParamType::Str => match &p.default {
                    Some(Value::Str(s)) => Arg::Str(s.clone()),
                    _ => Arg::Str(String::new()),
                },
                _ => Arg::Omitted,
            },
        };
        // Leave out a defaulted parameter now and then when the case equals its default anyway.
        let arg = match (&p.default, &arg) {
            (Some(d), a) if rng.random_bool(0.25) && equals_default(a, d) => Arg::Omitted,
            _ => arg,
        };
        known[i] = Val::of_arg(&arg);
        args[i] = arg;
    }
    args
}

fn equals_default(a: &Arg, d: &Value) -> bool {
    match (a, d) {
        (Arg::Int(x), Value::Int(y)) => x == y,
        (Arg::Bool(x), Value::Bool(y)) => x == y,
        (Arg::Str(x), Value::Str(y)) => x == y,
        (Arg::IntList(xs), Value::List(ys)) => xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| *y == Value::Int(*x)),
        _ => false,
    }
}

/// A lower or upper bound: the value, and whether it is included.
pub type Bound = Option<(f64, bool)>;

/// Bounds constraint `k` alone puts on parameter `p`, given the case's other values.
pub fn bounds_of_one(api: &ApiSpec, k: usize, p: usize, known: &[Val]) -> (Bound, Bound) {
    let b = bounds_from(api.requires.get(k).into_iter(), p, known);
    (b.lo.map(|v| (v, b.lo_open)), b.hi.map(|v| (v, b.hi_closed)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `/` in a bound is floor division on two ints and true division with a float on either
    /// side, as the language says (`scales >= output_size[0] * 1.0 / input.shape[2]`: 7/15).
    #[test]
    fn a_bound_divides_as_its_operands_types_say() {
        let api = crate::check::first_api("api torch.upsample_nearest1d(input: Tensor, output_size: int[1], scales: float? = None) -> Tensor {\n    scales >= output_size[0] * 1.0 / input.shape[2];\n    scales < (output_size[0] + 1) * 1.0 / input.shape[2];\n}\n");
        let known = [Val::Tensor(unknown_values(DType::Float32, &[1, 1, 15])), Val::List(vec![Val::Int(7)]), Val::Unknown];
        let b = bounds_of(&api, 2, &known, None);
        assert_eq!((b.lo, b.hi), (Some(7.0 / 15.0), Some(8.0 / 15.0)));
        let ints = crate::check::first_api("api torch.narrow(input: Tensor, length: int, start: float) -> Tensor {\n    start <= length / 2;\n}\n");
        assert_eq!(bounds_of(&ints, 2, &[Val::Unknown, Val::Int(7), Val::Unknown], None).hi, Some(3.0), "floor division of two ints");
    }

    /// A bound behind a guard bounds the drawn float once the known values decide the guard:
    /// an `if`'s branch, an `or`'s other side, an `=>`'s consequence; an undecided guard bounds
    /// nothing.
    #[test]
    fn guarded_bounds_bound_the_value_once_the_guard_is_decided() {
        let api = crate::check::first_api(
            "api torch.ops.aten._foreach_lerp.Scalar(self: Tensor[], tensors1: Tensor[], weight: Scalar) -> Tensor[] {\n\
                 if len(tensors1) == 0 then weight == 0.0 else weight in 0.1..0.99;\n\
                 len(self) == 0 or weight >= 0.2;\n\
                 len(self) >= 1 => weight <= 0.9;\n\
             }\n",
        );
        let list = |n: usize| Val::List((0..n).map(|_| Val::Tensor(unknown_values(DType::Float32, &[2]))).collect());
        let b = bounds_of(&api, 2, &[list(2), list(2), Val::Unknown], None);
        assert_eq!((b.lo, b.hi, b.hi_closed), (Some(0.2), Some(0.9), true));
        assert_eq!(choices_of(&api, 2, &[list(0), list(0), Val::Unknown], None), Some(vec![0.0]));
        // The lists unknown: no guard is decided.
        let b = bounds_of(&api, 2, &[Val::Unknown, Val::Unknown, Val::Unknown], None);
        assert_eq!((b.lo, b.hi), (None, None));
    }

    /// A case's fill range that reaches outside a value rule breaks it as a recipe (`Fill`: some
    /// element will lie outside), but not surely as a case that ran (`Drawn`: its one element
    /// may have landed inside); a range wholly outside breaks it either way.
    #[test]
    fn a_fill_range_reaching_outside_a_value_rule_surely_breaks_it_only_as_a_recipe() {
        let api = crate::check::first_api("api torch.take(input: Tensor, index: Tensor) -> Tensor {\n    index.values in 0..input.numel;\n    index.values >= 0;\n}\n");
        let tensor = |dtype, shape: &[i64], lo, hi| {
            Arg::Tensor(TensorRecipe { dtype, shape: shape.to_vec(), fill: Fill::Int { lo, hi }, seed: 1, layout: Default::default(), specials: Vec::new() })
        };
        let input = tensor(DType::Float32, &[3], 0, 1);
        let reaching = [input.clone(), tensor(DType::Int64, &[1], -5, 6)];
        assert_eq!(conforms_reading(&api, &reaching, eval::Bounds::Fill), vec![Some(false), Some(false)]);
        assert_eq!(conforms_reading(&api, &reaching, eval::Bounds::Drawn), vec![None, None]);
        let outside = [input.clone(), tensor(DType::Int64, &[1], -9, -4)];
        assert_eq!(conforms_reading(&api, &outside, eval::Bounds::Drawn), vec![Some(false), Some(false)]);
        let inside = [input, tensor(DType::Int64, &[1], 0, 3)];
        assert_eq!(conforms_reading(&api, &inside, eval::Bounds::Drawn), vec![Some(true), Some(true)]);
    }

    /// A Scalar whose kind a constraint reads is drawn of each kind the constraints allow, and
    /// the drawn case conforms (no float `alpha` with an integral input); one whose kind no
    /// constraint reads stays a float.
    #[test]
    fn a_scalar_is_drawn_of_the_kinds_its_constraints_allow() {
        use rand::SeedableRng;
        let draw = |src: &str| {
            let api = crate::check::first_api(src);
            let models = crate::solve::sample(&api, &crate::solve::Limits::default(), 40, 7).expect("solvable");
            let plan = GenPlan::new(&api);
            let mut rng = ChaCha8Rng::seed_from_u64(3);
            let mut kinds = std::collections::BTreeSet::new();
            for m in &models {
                let args = concretize(&api, &plan, m, None, &mut rng);
                assert!(conforms(&api, &args).iter().all(|c| *c == Some(true)), "{args:?}");
                match &args[2] {
                    Arg::Int(_) => kinds.insert("int"),
                    Arg::Float(_) => kinds.insert("float"),
                    Arg::Bool(_) => kinds.insert("bool"),
                    Arg::Omitted => kinds.insert("omitted"),
                    a => panic!("{a:?}"),
                };
            }
            kinds.remove("omitted");
            kinds.into_iter().collect::<Vec<_>>()
        };
        let kinds = draw(
            "api torch.add(input: Tensor, other: Tensor, *, alpha: Scalar = 1) -> Tensor {\n\
                 alpha.dtype != bool;\n\
                 input.dtype in [float32, float64] or alpha.dtype == int64;\n\
             }\n",
        );
        assert_eq!(kinds, ["float", "int"]);
        let kinds = draw("api torch.add(input: Tensor, other: Tensor, *, alpha: Scalar = 1) -> Tensor {}\n");
        assert_eq!(kinds, ["float"]);
    }
}
