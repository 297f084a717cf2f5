//! Backward operators fed by their forward (`from` statements): the forward is called on the
//! case's arguments, then the parameters it binds are filled from its outputs (a copy of the
//! output, or a fresh tensor of its shape and dtype drawn from the parameter's own recipe), and
//! one of them is broken on purpose when the case says so (`case::Break`).
//!
//! Everything here is repeated by the Python reproducer (`findings::repro`), step for step: the
//! forward through `torch.ops`, `like` tensors rebuilt from recipes with the output's shape, a
//! direct binding copied contiguous, and the breakage with the seed the case carries.
use tch::{Device, Tensor};

use sfz_wire::case::{broken_shape, plane, Arg, Bind, Break, BreakKind, Case, FwdArg, ShapePart, TensorRecipe};
use sfz_wire::outcome::{ErrorClass, Outcome};

use super::executor::{schema_error, Executor, Inputs, LoadedForward, Rejected};
use super::materialize::dtype_of;

impl Executor {
    /// The tensors of the bound arguments `bound`, from one call of `forward` on the case's
    /// other arguments (`plain`: those already built, by case argument).
    pub(super) fn feed(
        &self,
        forward: &LoadedForward,
        case: &Case,
        bound: &[&Bind],
        plain: &[Option<Vec<Tensor>>],
        build: &mut dyn FnMut(&TensorRecipe) -> Result<Tensor, tch::TchError>,
    ) -> Result<Vec<(usize, Tensor)>, Rejected> {
        let invalid = |message: String| Rejected { class: ErrorClass::Value, message };
        let mut args = Vec::with_capacity(forward.args.len());
        let mut inputs = Inputs::default();
        for a in &forward.args {
            let start = inputs.tensors.len();
            match a {
                FwdArg::Param(p) => {
                    let Some(arg) = case.args.get(*p) else { return Err(schema_error(format!("the forward reads argument {p} but the case has {}", case.args.len()))) };
                    match plain.get(*p).and_then(Option::as_ref) {
                        Some(ts) => inputs.tensors.extend(ts.iter().map(Tensor::shallow_clone)),
                        None => {
                            for r in arg.tensors() {
                                inputs.tensors.push(build(r).map_err(|e| schema_error(format!("cannot build argument {p}: {e}")))?);
                            }
                        }
                    }
                    args.push(arg.clone());
                }
                FwdArg::Value(v) => args.push(v.clone()),
                FwdArg::Default => args.push(Arg::Omitted),
                FwdArg::Like { param, shape } => {
                    // A violation may have made the source None, or the shape not a list.
                    let Some(Arg::Tensor(r)) = case.args.get(*param) else { return Err(invalid(format!("the forward's input `like(...)` needs argument {param} to be a tensor"))) };
                    let Some(shape) = ShapePart::shape(shape, &case.args) else {
                        return Err(invalid("the forward's input `like(...)` has no shape: its size is not an int list".into()));
                    };
                    let recipe = like_input(r, shape);
                    inputs.tensors.push(build(&recipe).map_err(|e| invalid(format!("cannot build the forward's input `like(...)`: {e}")))?);
                    args.push(Arg::Tensor(recipe));
                }
            }
            inputs.ranges.push((start, inputs.tensors.len()));
        }
        let fcase = Case { op: case.op, args, forward: None };
        let called = self.call_op(&forward.op, &fcase, &inputs, &[], true)?;
        if let Outcome::Raised { class, message, .. } = called.outcome {
            // The inputs are not valid for the forward: an invalid input of this API too (an
            // internal assert of the forward keeps its class, and is a finding).
            return Err(Rejected { class, message: format!("the forward `{}` raised: {message}", forward.api) });
        }
        let first = inputs.tensors.first().map(Tensor::size).unwrap_or_default();
        let mut out = Vec::with_capacity(bound.len());
        for b in bound {
            let Some(Some(o)) = called.tensors.get(b.output) else {
                return Err(schema_error(format!("output {} of the forward `{}` is not a tensor", b.output, forward.api)));
            };
            let broken = case.forward.as_ref().and_then(|f| f.broken.as_ref()).filter(|x| x.param == b.param);
            let t = if b.like {
                let Some(Arg::Tensor(r)) = case.args.get(b.param) else { return Err(schema_error(format!("argument {} is not a tensor", b.param))) };
                let dtype = dtype_of(o).ok_or_else(|| schema_error(format!("output {} of the forward has a dtype sfz does not build", b.output)))?;
                let mut shape = o.size();
                if let Some(x) = broken {
                    shape = broken_shape(x.kind, x.seed, &shape).unwrap_or(shape);
                }
                let recipe = TensorRecipe { dtype, shape, ..r.clone() };
                build(&recipe).map_err(|e| schema_error(format!("cannot build argument {} like output {}: {e}", b.param, b.output)))?
            } else {
                direct(o, broken, &first).map_err(|e| invalid(format!("cannot copy output {} of the forward into argument {}: {e}", b.output, b.param)))?
            };
            out.push((b.param, t));
        }
        Ok(out)
    }
}

/// The recipe of a `like(p, shape)` forward input: `p`'s, with that shape and a seed of its
/// own (so that it and `p`, when `p` is bound too, do not start from the same numbers).
pub fn like_input(r: &TensorRecipe, shape: Vec<i64>) -> TensorRecipe {
    TensorRecipe { shape, seed: sfz_wire::seed::mix(r.seed), ..r.clone() }
}

/// A contiguous copy of output `o`, broken as `broken` says.
fn direct(o: &Tensor, broken: Option<&Break>, first: &[i64]) -> Result<Tensor, tch::TchError> {
    let mut copy = Tensor::f_zeros(o.size(), (o.f_kind()?, Device::Cpu))?;
    copy.f_copy_(o)?;
    match broken {
        Some(x) => break_direct(copy, x, first),
        None => Ok(copy),
    }
}

/// A copied output broken as `x` says; `first` is the shape of the forward's first tensor
/// input (the plane's reference).
fn break_direct(t: Tensor, x: &Break, first: &[i64]) -> Result<Tensor, tch::TchError> {
    let numel = t.numel() as u64;
    let delta = match x.kind {
        BreakKind::PlaneUp => Some(plane(first, &t.size())),
        BreakKind::PlaneDown => Some(-plane(first, &t.size())),
        BreakKind::Outside => Some(first.iter().product::<i64>().max(1)),
        _ => None,
    };
    if let Some(delta) = delta {
        if numel == 0 {
            return Ok(t);
        }
        let mut element = t.f_view([-1i64])?.f_select(0, (x.seed % numel) as i64)?;
        // A 0-d tensor, not a Scalar: see `materialize` on tch's Scalars.
        let _alias = element.f_add_(&Tensor::from(delta))?;
        return Ok(t);
    }
    let Some(shape) = broken_shape(x.kind, x.seed, &t.size()) else { return Ok(t) };
    // Zeros in the new shape, the old values where both shapes have them.
    let mut to = Tensor::f_zeros(shape.as_slice(), (t.f_kind()?, Device::Cpu))?;
    let (mut a, mut b) = (to.shallow_clone(), t.shallow_clone());
    for (d, (&n, &m)) in shape.iter().zip(t.size().iter()).enumerate() {
        a = a.f_narrow(d as i64, 0, n.min(m))?;
        b = b.f_narrow(d as i64, 0, n.min(m))?;
    }
    a.f_copy_(&b)?;
    to = to.f_contiguous()?;
    Ok(to)
}
