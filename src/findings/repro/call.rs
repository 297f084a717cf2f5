//! The call itself: through the public Python API when the binding reaches the operator that
//! API reaches, else through `torch.ops` with the binding's arguments in schema order.
use super::python::py_value;
use crate::ops::binding::{ArgSource, OpBinding, Transform};
use crate::ops::registry::{self, PyCall};
use crate::ops::schema::{self, SchemaType};
use crate::spec::ApiSpec;
use crate::wire::case::{Arg, Case};

/// The call of `api` on `case` with these argument expressions.
pub fn call(api: &ApiSpec, binding: &OpBinding, case: &Case, vars: &[String]) -> String {
    match registry::python_call(&api.name) {
        Some(form) if registry::is_public_mapping(api, binding) => public_call(api, &form, case, vars),
        _ => ops_call(binding, case, vars, &[]),
    }
}

/// `torch.nn.functional.conv2d(input, weight, None, [2, 2], padding=[1, 1])`: positional in
/// spec order up to the first omitted or keyword-only parameter, keywords after.
pub(super) fn public_call(api: &ApiSpec, form: &PyCall, case: &Case, vars: &[String]) -> String {
    let mut positional = true;
    let mut parts = Vec::new();
    let mut receiver = None;
    for (i, arg) in case.args.iter().enumerate() {
        let param = api.params.get(i);
        if i == 0 && matches!(form, PyCall::Method(_)) {
            receiver = Some(py_value(arg, &vars[i]));
            continue;
        }
        if matches!(arg, Arg::Omitted) || param.is_some_and(|p| p.kw_only) {
            positional = false;
        }
        if matches!(arg, Arg::Omitted) {
            continue;
        }
        let value = py_value(arg, &vars[i]);
        match param {
            Some(p) if p.variadic => parts.push(format!("*{value}")),
            Some(p) if !positional => parts.push(format!("{}={value}", p.name)),
            _ => parts.push(value),
        }
    }
    match (form, receiver) {
        (PyCall::Method(m), Some(r)) => format!("{r}.{m}({})", parts.join(", ")),
        (PyCall::Method(m), None) => format!("torch.Tensor.{m}({})", parts.join(", ")),
        (PyCall::Function(f), _) => format!("{f}({})", parts.join(", ")),
    }
}

/// `torch.ops.aten.sum.dim_IntList(input, [1], True)`: the binding's arguments in schema order;
/// `outs` name the tensors of `ArgSource::Output` arguments.
pub(super) fn ops_call(binding: &OpBinding, case: &Case, vars: &[String], outs: &[String]) -> String {
    let (ns, name) = binding.name.split_once("::").unwrap_or(("aten", binding.name.as_str()));
    let overload = if binding.overload.is_empty() { "default" } else { binding.overload.as_str() };
    let parsed = schema::parse(&binding.schema).ok();
    let mut parts = Vec::new();
    let mut positional = true;
    for (position, source) in binding.args.iter().enumerate() {
        let arg_schema = parsed.as_ref().and_then(|s| s.args.get(position));
        let value = match source {
            // The worker's CPU for a `Device` without default (`_resize_output`).
            ArgSource::Default if arg_schema.is_some_and(|a| a.default.is_none() && a.ty == SchemaType::Device) => Some("torch.device(\"cpu\")".to_string()),
            ArgSource::Default if arg_schema.is_some_and(|a| a.default.is_none()) => Some("None".to_string()),
            ArgSource::Default => None,
            ArgSource::Value(v) => Some(py_value(v, "None")),
            ArgSource::Output(k) => Some(outs.get(*k).cloned().unwrap_or_else(|| "None".into())),
            ArgSource::Param { index, transform } => {
                let arg = case.args.get(*index).unwrap_or(&Arg::Omitted);
                let var = vars.get(*index).map_or("None", String::as_str);
                match (arg, transform) {
                    (Arg::Omitted, Transform::OmittedAs(v)) => Some(py_value(v, var)),
                    // An optional argument without a default (`Tensor? bias`) must be passed:
                    // the worker pushes None for it.
                    (Arg::Omitted, _) if arg_schema.is_some_and(|a| a.default.is_none() && a.ty.is_optional()) => Some("None".to_string()),
                    (Arg::Omitted, _) => None,
                    (Arg::None, Transform::NoneAs(v)) => Some(py_value(v, var)),
                    (_, Transform::EmbeddingPaddingIdx { weight }) => Some(py_value(&padding_idx(arg, case.args.get(*weight)), var)),
                    _ => Some(py_value(arg, var)),
                }
            }
        };
        let Some(value) = value else {
            positional = false;
            continue;
        };
        if arg_schema.is_some_and(|a| a.kw_only) {
            positional = false;
        }
        match arg_schema {
            Some(a) if !positional => parts.push(format!("{}={value}", a.name)),
            // Without the schema's names nothing after a gap can be placed.
            None if !positional => break,
            _ => parts.push(value),
        }
    }
    format!("torch.ops.{ns}.{name}.{overload}({})", parts.join(", "))
}

/// What F.embedding passes on for `padding_idx` (its range check is left to the public call).
fn padding_idx(arg: &Arg, weight: Option<&Arg>) -> Arg {
    match (arg, weight) {
        (Arg::None, _) => Arg::Int(-1),
        (Arg::Int(p), Some(Arg::Tensor(w))) if *p < 0 => Arg::Int(p + w.shape.first().copied().unwrap_or(0)),
        (other, _) => other.clone(),
    }
}
