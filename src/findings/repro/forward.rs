//! The forward of a `from` statement in a reproducer: the forward called through `torch.ops`,
//! then the bound arguments made from its outputs and broken as the case says, as the worker
//! does it (`sfz-worker/src/runtime/forward.rs`). Shapes of outputs are known only when the
//! script runs, so these lines compute them.
use super::call::ops_call;
use super::inputs::tensor_lines;
use super::python::py_float;
use crate::ops::binding::{ForwardCall, OpBinding};
use crate::ops::schema;
use crate::wire::case::{Arg, Break, BreakKind, Case, Fill, FwdArg, Layout, ShapePart, TensorRecipe};

/// The variable holding the forward's outputs.
pub const OUT: &str = "fwd_out";

/// The argument indices the forward fills in this case (tensor arguments only, as in the
/// worker), or none when the binding or the case has no forward.
pub fn bound(case: &Case, binding: &OpBinding) -> Vec<usize> {
    match (&case.forward, &binding.forward) {
        (Some(f), Some(_)) => f.binds.iter().filter(|b| matches!(case.args.get(b.param), Some(Arg::Tensor(_)))).map(|b| b.param).collect(),
        _ => Vec::new(),
    }
}

/// The script lines after the plain inputs: the forward call and each bound argument.
pub fn lines(case: &Case, binding: &OpBinding, vars: &[String]) -> Vec<String> {
    let (Some(f), Some(forward)) = (&case.forward, &binding.forward) else { return Vec::new() };
    let bound = bound(case, binding);
    if bound.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let names: Vec<&str> = bound.iter().map(|&p| vars[p].as_str()).collect();
    out.push(format!("# `{}` is called first; its outputs feed {} (the spec's `from` statement)", forward.api, names.join(", ")));
    let (call, first) = forward_call(case, forward, vars, &mut out);
    out.push(format!("{OUT} = {call}"));
    let several = schema::parse(&forward.binding.schema).map_or(true, |s| s.returns.len() != 1);
    let output = |k: usize| if several { format!("{OUT}[{k}]") } else { OUT.to_string() };
    for b in f.binds.iter().filter(|b| bound.contains(&b.param)) {
        let var = &vars[b.param];
        let o = output(b.output);
        let broken = f.broken.as_ref().filter(|x| x.param == b.param);
        if let Some(x) = broken {
            out.push(format!("# broken on purpose (sfz's violation): `{var}` with {}", x.kind.describe()));
        }
        if b.like {
            let Some(Arg::Tensor(r)) = case.args.get(b.param) else { continue };
            out.push(format!("fwd_shape = list({o}.shape)"));
            if let Some(x) = broken {
                out.extend(break_shape(x));
            }
            out.extend(like_lines(var, r, "fwd_shape", &format!("{o}.dtype")));
        } else {
            out.push(format!("{var} = {o}.clone(memory_format=torch.contiguous_format)"));
            if let Some(x) = broken {
                out.extend(break_direct(var, x, first.as_deref()));
            }
        }
    }
    out
}

/// The forward's call, with the lines building its `like(...)` inputs pushed to `out`; and
/// the variable of its first tensor input (the plane's reference).
fn forward_call(case: &Case, forward: &ForwardCall, vars: &[String], out: &mut Vec<String>) -> (String, Option<String>) {
    let mut args = Vec::with_capacity(forward.args.len());
    let mut fvars = Vec::with_capacity(forward.args.len());
    let mut first = None;
    for (k, a) in forward.args.iter().enumerate() {
        match a {
            FwdArg::Param(p) => {
                let arg = case.args.get(*p).cloned().unwrap_or(Arg::Omitted);
                let var = vars.get(*p).cloned().unwrap_or_else(|| "None".into());
                match &arg {
                    Arg::Tensor(_) => {
                        first.get_or_insert_with(|| var.clone());
                    }
                    Arg::TensorList(ts) if !ts.is_empty() => {
                        first.get_or_insert_with(|| format!("{var}_0"));
                    }
                    _ => {}
                }
                args.push(arg);
                fvars.push(var);
            }
            FwdArg::Value(v) => {
                args.push(v.clone());
                fvars.push("None".into());
            }
            FwdArg::Default => {
                args.push(Arg::Omitted);
                fvars.push("None".into());
            }
            FwdArg::Like { param, shape } => {
                let var = format!("fwd_input{k}");
                match (case.args.get(*param), ShapePart::shape(shape, &case.args)) {
                    (Some(Arg::Tensor(r)), Some(shape)) => {
                        let recipe = like_input(r, shape);
                        out.extend(tensor_lines(&var, &recipe));
                        args.push(Arg::Tensor(recipe));
                    }
                    // The worker refuses such a case before calling anything.
                    _ => args.push(Arg::None),
                }
                first.get_or_insert_with(|| var.clone());
                fvars.push(var);
            }
        }
    }
    let fcase = Case { op: 0, args, forward: None };
    (ops_call(&forward.binding, &fcase, &fvars, &[]), first)
}

/// As `runtime::forward::like_input`: `p`'s recipe with that shape and a seed of its own.
pub fn like_input(r: &TensorRecipe, shape: Vec<i64>) -> TensorRecipe {
    TensorRecipe { shape, seed: crate::seed::mix(r.seed), ..r.clone() }
}

/// Lines changing the list `fwd_shape` as `case::broken_shape` does.
fn break_shape(x: &Break) -> Vec<String> {
    let s = x.seed;
    match x.kind {
        BreakKind::DimUp => vec![format!("if fwd_shape:\n    fwd_shape[{s} % len(fwd_shape)] += 1")],
        BreakKind::DimDown => vec![
            "fwd_nonempty = [d for d in range(len(fwd_shape)) if fwd_shape[d] > 0]".into(),
            format!("if fwd_nonempty:\n    fwd_shape[fwd_nonempty[{s} % len(fwd_nonempty)]] -= 1"),
        ],
        BreakKind::Batch => vec!["if fwd_shape:\n    fwd_shape[0] += 1".into()],
        BreakKind::EmptyBatch => vec!["if fwd_shape:\n    fwd_shape[0] = 0".into()],
        BreakKind::PlaneUp | BreakKind::PlaneDown | BreakKind::Outside => Vec::new(),
    }
}

/// Lines breaking a copied output `var` as `runtime::forward::break_direct` does.
fn break_direct(var: &str, x: &Break, first: Option<&str>) -> Vec<String> {
    let s = x.seed;
    let plane = |sign: &str| {
        let Some(x0) = first else { return vec![format!("fwd_plane = {sign}1")] };
        vec![
            format!("fwd_lead, fwd_most = 0, max(min({x0}.dim(), {var}.dim()) - 1, 0)"),
            format!("while fwd_lead < fwd_most and {x0}.shape[fwd_lead] == {var}.shape[fwd_lead]:\n    fwd_lead += 1"),
            format!("fwd_plane = {sign}max({x0}.shape[fwd_lead:].numel(), 1)"),
        ]
    };
    let mut out = match x.kind {
        BreakKind::PlaneUp => plane(""),
        BreakKind::PlaneDown => plane("-"),
        BreakKind::Outside => vec![format!("fwd_plane = max({}.numel(), 1)", first.unwrap_or("torch.empty(0)"))],
        _ => {
            let mut lines = vec![format!("fwd_shape = list({var}.shape)")];
            lines.extend(break_shape(x));
            lines.push(format!("fwd_broken = torch.zeros(fwd_shape, dtype={var}.dtype)"));
            lines.push(format!("fwd_region = tuple(slice(0, min(a, b)) for a, b in zip(fwd_shape, {var}.shape))"));
            lines.push(format!("fwd_broken[fwd_region] = {var}[fwd_region]"));
            lines.push(format!("{var} = fwd_broken"));
            return lines;
        }
    };
    out.push(format!("if {var}.numel():\n    {var}.view(-1)[{s} % {var}.numel()] += fwd_plane"));
    out
}

/// Lines building `var` from recipe `r` with a shape and dtype known when the script runs
/// (`shape`, `dtype`: Python expressions), as `runtime::materialize` builds it.
fn like_lines(var: &str, r: &TensorRecipe, shape: &str, dtype: &str) -> Vec<String> {
    let mut lines = Vec::new();
    match r.fill {
        Fill::Uniform { lo, hi } => {
            let (lo, hi) = (py_float(lo), py_float(hi));
            lines.push(format!("torch.manual_seed({})", r.seed));
            lines.push(format!(
                "if {dtype}.is_complex:\n    {var} = torch.view_as_complex(torch.empty(list({shape}) + [2], dtype=torch.float64).uniform_({lo}, {hi})).to({dtype})\nelse:\n    {var} = torch.empty({shape}, dtype=torch.float64).uniform_({lo}, {hi}).to({dtype})"
            ));
        }
        Fill::Int { lo, hi } => {
            lines.push(format!("torch.manual_seed({})", r.seed));
            lines.push(format!("{var} = torch.randint({lo}, {hi}, {shape}).to({dtype})"));
        }
        Fill::Constant(c) => lines.push(format!("{var} = torch.full({shape}, {}, dtype=torch.float64).to({dtype})", py_float(c))),
    }
    for (i, v) in &r.specials {
        lines.push(format!("if {var}.numel():\n    {var}.view(-1)[{i} % {var}.numel()] = torch.tensor({}, dtype=torch.float64)", py_float(v.value())));
    }
    match r.layout {
        Layout::Contiguous => {}
        Layout::Transposed => lines.push(format!("if {var}.dim() >= 2:\n    {var} = {var}.mT.contiguous().mT")),
        Layout::Strided => {
            lines.push(format!("if {var}.dim() >= 1:\n    {var} = torch.zeros(list({var}.shape[:-1]) + [2 * {var}.shape[-1]], dtype={var}.dtype)[..., ::2].copy_({var})"))
        }
        Layout::Expanded => lines.push(format!("if {var}.dim() >= 1 and {var}.shape[0] >= 1:\n    {var} = {var}.narrow(0, 0, 1).expand({var}.shape)")),
        Layout::Sliced => {
            lines.push(format!("if {var}.dim() >= 1:\n    {var} = torch.zeros([d + 1 for d in {var}.shape], dtype={var}.dtype)[(slice(1, None),) * {var}.dim()].copy_({var})"))
        }
    }
    lines
}
