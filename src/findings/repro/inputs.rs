//! The inputs of a script: each tensor rebuilt inline from its recipe, as the worker built it,
//! and one variable per argument.
use std::fmt::Write as _;

use super::forward;
use super::python::{py_dtype, py_float, py_ints, py_special, py_var};
use crate::ops::binding::OpBinding;
use crate::spec::ApiSpec;
use crate::wire::case::{Arg, Case, DType, Fill, Layout, TensorRecipe};

/// The tensor inputs of a case, built inline, one block per tensor; then, for an API with a
/// `from` statement, its forward's call and the arguments it fills.
pub fn inputs(case: &Case, binding: &OpBinding, vars: &[String]) -> String {
    let mut out = String::new();
    let bound = forward::bound(case, binding);
    for (i, arg) in case.args.iter().enumerate() {
        if bound.contains(&i) {
            continue;
        }
        match arg {
            Arg::Tensor(r) => {
                for line in tensor_lines(&vars[i], r) {
                    let _ = writeln!(out, "{line}");
                }
            }
            Arg::TensorList(rs) => {
                let names: Vec<String> = (0..rs.len()).map(|k| format!("{}_{k}", vars[i])).collect();
                for (name, r) in names.iter().zip(rs) {
                    for line in tensor_lines(name, r) {
                        let _ = writeln!(out, "{line}");
                    }
                }
                let _ = writeln!(out, "{} = [{}]", vars[i], names.join(", "));
            }
            _ => {}
        }
    }
    for line in forward::lines(case, binding, vars) {
        let _ = writeln!(out, "{line}");
    }
    out
}

/// The script lines that build one tensor as `runtime::materialize` does, ending with `var`
/// bound to it.
pub fn tensor_lines(var: &str, r: &TensorRecipe) -> Vec<String> {
    let mut lines = Vec::new();
    let shape = py_ints(&r.shape);
    let cast = |from: DType| if r.dtype == from { String::new() } else { format!(".to({})", py_dtype(r.dtype)) };
    match r.fill {
        Fill::Uniform { lo, hi } => {
            lines.push(format!("torch.manual_seed({})", r.seed));
            if r.dtype.is_complex() {
                let mut pairs = r.shape.clone();
                pairs.push(2);
                lines.push(format!(
                    "{var} = torch.view_as_complex(torch.empty({}, dtype=torch.float64).uniform_({}, {})){}",
                    py_ints(&pairs),
                    py_float(lo),
                    py_float(hi),
                    cast(DType::Complex128)
                ));
            } else {
                lines.push(format!("{var} = torch.empty({shape}, dtype=torch.float64).uniform_({}, {}){}", py_float(lo), py_float(hi), cast(DType::Float64)));
            }
        }
        Fill::Int { lo, hi } => {
            lines.push(format!("torch.manual_seed({})", r.seed));
            lines.push(format!("{var} = torch.randint({lo}, {hi}, {shape}){}", cast(DType::Int64)));
        }
        Fill::Constant(c) => lines.push(format!("{var} = torch.full({shape}, {}, dtype=torch.float64){}", py_float(c), cast(DType::Float64))),
    }
    let n = r.numel();
    if n > 0 {
        for (i, v) in &r.specials {
            // Copied from a float64 tensor, unchecked, as the worker does (NaN into an int tensor too).
            lines.push(format!("{var}.view(-1)[{}] = torch.tensor({}, dtype=torch.float64)", i % n, py_special(*v)));
        }
    }
    if let Some(e) = relayout(var, r, r.layout) {
        lines.push(format!("{var} = {e}"));
    }
    lines
}

/// An expression giving `var` (built contiguous, with recipe `r`'s shape and dtype) the layout
/// `to`, same values; None when that changes nothing.
pub(super) fn relayout(var: &str, r: &TensorRecipe, to: Layout) -> Option<String> {
    let ndim = r.shape.len();
    match to {
        Layout::Transposed if ndim >= 2 => Some(format!("{var}.mT.contiguous().mT")),
        Layout::Strided if ndim >= 1 => {
            let mut wide = r.shape.clone();
            if let Some(last) = wide.last_mut() {
                *last *= 2;
            }
            Some(format!("torch.zeros({}, dtype={})[..., ::2].copy_({var})", py_ints(&wide), py_dtype(r.dtype)))
        }
        // The first slice along dim 0 repeated with stride 0, as the worker builds it.
        Layout::Expanded if ndim >= 1 && r.shape[0] >= 1 => Some(format!("{var}.narrow(0, 0, 1).expand({})", py_ints(&r.shape))),
        Layout::Sliced if ndim >= 1 => {
            let larger: Vec<i64> = r.shape.iter().map(|d| d + 1).collect();
            Some(format!("torch.zeros({}, dtype={})[{}].copy_({var})", py_ints(&larger), py_dtype(r.dtype), vec!["1:"; ndim].join(", ")))
        }
        _ => None,
    }
}

/// One variable per argument, named after its parameter.
pub fn vars(api: &ApiSpec, case: &Case) -> Vec<String> {
    (0..case.args.len()).map(|i| py_var(api.params.get(i).map_or("", |p| p.name.as_str()), i)).collect()
}
