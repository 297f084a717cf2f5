//! The script of a gradient finding, in float64 as the worker computed it (`sfz-worker/src/
//! runtime/gradient`): `f` takes the floating inputs, `weighted` is `sum(w * outputs)` with the
//! worker's weights, and the script prints both sides of what disagrees before it asserts.
//! A finding written before the gradient's kinds were stored gets `torch.autograd.gradcheck`.
use std::fmt::Write as _;

use super::call::{call, ops_call};
use super::python::{py_float, tol_args};
use super::Writer;
use crate::oracle::GradientAt;
use crate::wire::case::{Arg, Layout, TensorRecipe};
use crate::wire::variant::{promote_dtype_args, GradientKind, Tolerance};

/// `f(*xs)` over the floating inputs and `x`, their float64 values.
struct Differentiable {
    def: String,
    /// `f_in_place(*xs)`, the same through the operator's in-place twin, where the script has it.
    def_in_place: Option<String>,
    /// The floating inputs' expressions (`input`, `tensors_1`).
    inputs: Vec<String>,
    /// Per case argument, how many floating inputs come before it.
    before: Vec<usize>,
    /// The floating inputs' memory layouts in the case.
    layouts: Vec<Layout>,
}

const WEIGHTED: &str = "\
def flat(out):
    return [t for r in (out if isinstance(out, (list, tuple)) else [out]) for t in (r if isinstance(r, (list, tuple)) else [r])]


def spread(t, step, offset):
    return (torch.arange(t.numel(), dtype=torch.float64) * step + offset).frac().add(0.5).reshape(t.shape)


def weighted_difference(a, b=None):
    \"\"\"sum(w * (a - b)) over the differentiable outputs, with sfz's fixed weights w.\"\"\"
    total = 0.0
    for k, t in enumerate(flat(a)):
        if weighed[k]:
            d = t if b is None else t - flat(b)[k]
            total = total + (spread(t, 0.6180339887498949, 0.377 * k) * d).sum()
    return total


";

/// The worker's layouts (`materialize`) as differentiable views of a contiguous leaf.
const RELAID: &str = "\
def relaid(t, layout):
    \"\"\"t's values in the case's memory layout, as a view autograd differentiates through.\"\"\"
    if layout == \"transposed\" and t.dim() >= 2:
        return t.transpose(-1, -2).contiguous().transpose(-1, -2)
    if layout == \"strided\" and t.dim() >= 1:
        return torch.stack([t, torch.zeros_like(t)], -1).flatten(-2)[..., ::2]
    if layout == \"sliced\" and t.dim() >= 1:
        return torch.nn.functional.pad(t, [1, 0] * t.dim())[(slice(1, None),) * t.dim()]
    return t


";

/// How `RELAID` names a layout (an expanded input stays contiguous: its gradient sums the
/// repeated slices).
fn layout_name(layout: Layout) -> &'static str {
    match layout {
        Layout::Transposed => "transposed",
        Layout::Strided => "strided",
        Layout::Sliced => "sliced",
        Layout::Contiguous | Layout::Expanded => "contiguous",
    }
}

impl Writer<'_> {
    fn differentiable(&self) -> Differentiable {
        let r = self.r;
        let case = promote_dtype_args(r.case);
        let floating = |rec: &TensorRecipe| rec.dtype.is_floating() && !rec.dtype.is_complex();
        let mut inputs = Vec::new();
        let mut layouts = Vec::new();
        let mut before = Vec::new();
        let mut lists = Vec::new();
        let mut vars = self.vars.clone();
        for (i, arg) in case.args.iter().enumerate() {
            before.push(inputs.len());
            match arg {
                Arg::Tensor(rec) if floating(rec) => {
                    vars[i] = format!("xs[{}]", inputs.len());
                    inputs.push(self.vars[i].clone());
                    layouts.push(rec.layout);
                }
                Arg::TensorList(rs) => {
                    let list = self.vars[i].clone();
                    let items: Vec<String> = rs
                        .iter()
                        .enumerate()
                        .map(|(k, rec)| {
                            let element = format!("{}_{k}", self.vars[i]);
                            if floating(rec) {
                                inputs.push(element);
                                layouts.push(rec.layout);
                                format!("xs[{}]", inputs.len() - 1)
                            } else {
                                element
                            }
                        })
                        .collect();
                    // The list keeps its name, so that the call spells it as it would the
                    // original's (`torch.block_diag(*tensors)`).
                    lists.push(format!("    {list} = [{}]\n", items.join(", ")));
                    vars[i] = list;
                }
                _ => {}
            }
        }
        let body = call(r.api, r.binding, &case, &vars);
        // Copies: an operator that writes into its input (`sin_`) may not write into a leaf.
        let lists = lists.concat();
        let def = format!("def f(*xs):\n    xs = [x.clone() for x in xs]\n{lists}    return {body}\n\n\n");
        // The in-place twin the worker differentiated too, on the same copies.
        let twin = r.twin.map(|twin| ops_call(twin, &case, &vars, &[]));
        let def_in_place = twin.map(|body| format!("def f_in_place(*xs):\n    xs = [x.clone() for x in xs]\n{lists}    return {body}\n\n\n"));
        Differentiable { def, def_in_place, inputs, before, layouts }
    }

    /// The legacy script: `torch.autograd.gradcheck` over the floating inputs.
    pub(super) fn gradcheck(&mut self, eps: f64, tol: Tolerance) -> String {
        let d = self.differentiable();
        let leaves: Vec<String> = d.inputs.iter().map(|v| format!("{v}.double().requires_grad_()")).collect();
        let tuple = if leaves.len() == 1 { format!("({},)", leaves[0]) } else { format!("({})", leaves.join(", ")) };
        format!(
            "{}# Fails with GradcheckError (\"Jacobian mismatch\") while backward disagrees with finite differences.\ntorch.autograd.gradcheck(f, {tuple}, eps={}, {}, check_undefined_grad=False)\n",
            d.def,
            py_float(eps),
            tol_args(tol)
        )
    }

    /// Backward, then forward mode, as the worker ran them: a derivative that fails raises.
    pub(super) fn gradient_fails(&mut self) -> String {
        let d = self.differentiable();
        let mut out = self.prelude(&d);
        out.push_str("print(\"backward:\", torch.autograd.grad(weighted_difference(f(*leaves)), leaves, allow_unused=True))\n");
        out.push_str("import torch.autograd.forward_ad as fwAD\n\n");
        out.push_str("for i, v in enumerate(x):\n    with fwAD.dual_level():\n        duals = [fwAD.make_dual(t, torch.ones_like(t)) if j == i else t for j, t in enumerate(x)]\n        print(\"forward mode:\", [fwAD.unpack_dual(t).tangent for t in flat(f(*duals)) if isinstance(t, torch.Tensor)])\n");
        out
    }

    /// The script of one disagreement at `at`.
    pub(super) fn derivative(&mut self, at: GradientAt, eps: f64, tol: Tolerance) -> String {
        let d = self.differentiable();
        let leaf = d.before.get(at.arg).copied().unwrap_or(0) + at.tensor;
        let name = d.inputs.get(leaf).cloned().unwrap_or_else(|| "the input".into());
        let mut out = self.prelude(&d);
        if at.kind == GradientKind::Forward {
            out.push_str("import torch.autograd.forward_ad as fwAD\n");
        }
        let _ = writeln!(out, "i = {leaf}  # {name}");
        out.push_str("grad = torch.autograd.grad(weighted_difference(f(*leaves)), leaves, allow_unused=True)[i]\n");
        out.push_str("grad = torch.zeros_like(x[i]) if grad is None else grad\n\n\n");
        let (rtol, atol) = (py_float(tol.rtol), py_float(tol.atol));
        match at.kind {
            GradientKind::Forward => {
                self.uses_math = true;
                out.push_str(&format!(
                    "def along(t):\n    \"\"\"The inputs moved by t along the tangent.\"\"\"\n    return [v + t * tangent if j == i else v for j, v in enumerate(x)]\n\n\n\
                     tangent = spread(x[i], 0.7548776662466927, 0.5698402909980532 + 0.291 * i)\n\
                     backward = (grad * tangent).sum().item()\n\
                     with fwAD.dual_level():\n    duals = [fwAD.make_dual(v, tangent) if j == i else v for j, v in enumerate(x)]\n    out = flat(f(*duals))\n    tangents = [fwAD.unpack_dual(t).tangent if isinstance(t, torch.Tensor) else None for t in out]\n\
                     forward = float(sum((spread(t, 0.6180339887498949, 0.377 * k) * t).sum() for k, t in enumerate(tangents) if t is not None and weighed[k]))\n\
                     h = {eps} * max(2 ** -10, x[i].abs().max().item())\n\
                     numeric = float(weighted_difference(f(*along(h)), f(*along(-h)))) / (2 * h)\n\
                     print(\"along a fixed tangent of {name}: backward\", backward, \"forward mode\", forward, \"finite differences\", numeric)\n\
                     assert math.isclose(backward, forward, rel_tol={rtol}, abs_tol={atol}), \"reverse and forward mode disagree\"\n",
                    eps = py_float(eps),
                ));
            }
            GradientKind::Second => {
                self.uses_math = true;
                out.push_str(&format!(
                    "def projected_gradient(xs, create_graph=False):\n    \"\"\"sum(u * the gradient of {name}) at inputs xs, and that input.\"\"\"\n    ls = [v.detach().requires_grad_() for v in xs]\n    g = torch.autograd.grad(weighted_difference(f(*ls)), ls[i], create_graph=create_graph)[0]\n    return (g * u).sum(), ls[i]\n\n\n\
                     u = spread(x[i], 0.5698402909980532, 0.25)\n\
                     tangent = spread(x[i], 0.7548776662466927, 0.5698402909980532 + 0.291 * i)\n\
                     s, leaf = projected_gradient(x, create_graph=True)\n\
                     hu = torch.autograd.grad(s, leaf, allow_unused=True)[0]\n\
                     double_backward = 0.0 if hu is None else (hu * tangent).sum().item()\n\
                     h = {eps} * max(2 ** -10, x[i].abs().max().item())\n\
                     along = lambda t: [v + t * tangent if j == i else v for j, v in enumerate(x)]\n\
                     numeric = (projected_gradient(along(h))[0].item() - projected_gradient(along(-h))[0].item()) / (2 * h)\n\
                     print(\"second derivative in {name}: double backward\", double_backward, \"differences of the gradient\", numeric)\n\
                     assert math.isclose(double_backward, numeric, rel_tol={rtol}, abs_tol={atol}), \"double backward disagrees with differences of the gradient\"\n",
                    eps = py_float(eps),
                ));
            }
            GradientKind::Layout => {
                let layouts: Vec<&str> = d.layouts.iter().map(|l| layout_name(*l)).collect();
                out.push_str(RELAID);
                // `f` copies its inputs, and a copy of a strided view is contiguous: the views
                // are made after the copies.
                out.push_str(&d.def.replacen(
                    "def f(*xs):\n    xs = [x.clone() for x in xs]\n",
                    "def f_relaid(*xs):\n    xs = [relaid(x.clone(), l) for x, l in zip(xs, layouts)]\n",
                    1,
                ));
                out.push_str(&format!(
                    "layouts = [{}]\n\
                     relaid_leaves = [t.detach().requires_grad_() for t in x]\n\
                     relaid_grad = torch.autograd.grad(weighted_difference(f_relaid(*relaid_leaves)), relaid_leaves, allow_unused=True)[i]\n\
                     relaid_grad = torch.zeros_like(x[i]) if relaid_grad is None else relaid_grad\n\
                     print(\"d/d{name}[{index}]: backward through the non-contiguous inputs\", relaid_grad.reshape(-1)[{index}].item(), \"through contiguous copies\", grad.reshape(-1)[{index}].item())\n\
                     atol = max({atol}, 1e-12 * grad.abs().nan_to_num(0.0, 0.0, 0.0).max().item())\n\
                     torch.testing.assert_close(relaid_grad, grad, rtol={rtol}, atol=atol, equal_nan=True, msg=\"backward differs through a non-contiguous input\")\n",
                    layouts.iter().map(|l| format!("\"{l}\"")).collect::<Vec<_>>().join(", "),
                    index = at.index,
                ));
            }
            GradientKind::InPlace => {
                out.push_str(d.def_in_place.as_deref().unwrap_or("f_in_place = f  # the in-place twin is unknown to this script\n\n\n"));
                out.push_str(&format!(
                    "in_place_leaves = [t.detach().requires_grad_() for t in x]\n\
                     in_place_grad = torch.autograd.grad(weighted_difference(f_in_place(*in_place_leaves)), in_place_leaves, allow_unused=True)[i]\n\
                     in_place_grad = torch.zeros_like(x[i]) if in_place_grad is None else in_place_grad\n\
                     print(\"d/d{name}[{index}]: backward through the in-place form\", in_place_grad.reshape(-1)[{index}].item(), \"through the out-of-place one\", grad.reshape(-1)[{index}].item())\n\
                     atol = max({atol}, 1e-12 * grad.abs().nan_to_num(0.0, 0.0, 0.0).max().item())\n\
                     torch.testing.assert_close(in_place_grad, grad, rtol={rtol}, atol=atol, equal_nan=True, msg=\"backward differs through the in-place form\")\n",
                    index = at.index,
                ));
            }
            GradientKind::Numeric | GradientKind::NonFinite => {
                self.uses_math = true;
                out.push_str(&format!(
                    "def moved(t):\n    \"\"\"The inputs with element {index} of {name} moved by t.\"\"\"\n    y = [v.clone() for v in x]\n    y[i].view(-1)[{index}] += t\n    return y\n\n\n\
                     backward = grad.reshape(-1)[{index}].item()\n\
                     h = {eps} * max(2 ** -10, abs(x[i].reshape(-1)[{index}].item()))\n\
                     numeric = float(weighted_difference(f(*moved(h)), f(*moved(-h)))) / (2 * h)\n\
                     print(\"d/d{name}[{index}]: backward\", backward, \"central differences\", numeric)\n",
                    index = at.index,
                    eps = py_float(eps),
                ));
                if at.kind == GradientKind::NonFinite {
                    out.push_str("assert math.isfinite(backward), \"the gradient is not finite where the outputs and finite differences are\"\n");
                } else {
                    let _ = writeln!(out, "assert math.isclose(backward, numeric, rel_tol={rtol}, abs_tol={atol}), \"backward disagrees with finite differences\"");
                }
            }
        }
        out
    }

    /// `f`, the weights, the float64 inputs `x` and their leaves.
    fn prelude(&mut self, d: &Differentiable) -> String {
        let mut out = d.def.clone();
        out.push_str(WEIGHTED);
        let x: Vec<String> = d.inputs.iter().map(|v| format!("{v}.double().contiguous()")).collect();
        let _ = writeln!(out, "x = [{}]", x.join(", "));
        out.push_str("leaves = [t.detach().requires_grad_() for t in x]\n");
        out.push_str("# The outputs autograd differentiates (those that require grad) are weighed.\n");
        out.push_str("weighed = [isinstance(t, torch.Tensor) and t.dtype == torch.float64 and t.requires_grad for t in flat(f(*leaves))]\n");
        out
    }
}
