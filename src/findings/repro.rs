//! Standalone Python reproducers: a script that rebuilds every input exactly as the worker did
//! (see `runtime::materialize` for the recipe semantics, `PY_MAKE` for their Python text) and
//! makes the one call.
//!
//! The call goes through the public API (`torch.nn.functional.conv2d(x, w, ...)`, `x.add(y)`)
//! when the binding reaches the operator that API reaches, else through
//! `torch.ops.<ns>.<name>.<overload>(...)` with the binding's arguments in schema order. The
//! script's last act tells a verifier what happened: a crash kills Python with the signal, an
//! error propagates as an exception (non-zero exit), and a call that returns prints one line
//! `sfz-outputs: [...]` (dtype, shape, NaN and inf counts, finite range per output, flattened as
//! the worker flattens them).
use std::fmt::Write as _;

use crate::case::{Arg, Case, DType, Fill, Layout, Special, TensorRecipe};
use crate::ops::binding::{ArgSource, OpBinding, Transform};
use crate::ops::registry::{self, PyCall};
use crate::ops::schema;
use crate::spec::ApiSpec;

/// The Python function that builds a tensor from a recipe, exactly as `runtime::materialize`.
pub const PY_MAKE: &str = r#"def make(dtype, shape, fill, seed, layout="contiguous", specials=()):
    kind, a, b = fill
    if kind == "uniform":
        torch.manual_seed(seed)
        if dtype.is_complex:
            v = torch.view_as_complex(torch.empty(list(shape) + [2], dtype=torch.float64).uniform_(a, b)).to(dtype)
        else:
            v = torch.empty(shape, dtype=torch.float64).uniform_(a, b).to(dtype)
    elif kind == "int":
        torch.manual_seed(seed)
        v = torch.randint(a, b, shape, dtype=torch.int64).to(dtype)
    else:
        v = torch.empty(shape, dtype=torch.float64).fill_(a).to(dtype)
    n = v.numel()
    for i, x in specials:
        if n:
            v.view(-1).select(0, i % n).copy_(torch.tensor(x, dtype=torch.float64))
    if layout == "transposed" and v.dim() >= 2:
        v = v.transpose(-1, -2).contiguous().transpose(-1, -2)
    elif layout == "strided" and v.dim() >= 1:
        s = torch.zeros(list(shape[:-1]) + [2 * shape[-1]], dtype=dtype)
        s[..., ::2].copy_(v)
        v = s[..., ::2]
    return v
"#;

/// Summarises outputs as the worker's `Outcome` does, one JSON line.
const PY_SUMMARY: &str = r#"def summary(v, out):
    if isinstance(v, torch.Tensor):
        d = {"dtype": str(v.dtype).replace("torch.", ""), "shape": list(v.shape), "nan": 0, "inf": 0}
        flat = v.detach().reshape(-1)
        if v.is_floating_point() or v.is_complex():
            d["nan"] = int(torch.isnan(flat).sum())
            d["inf"] = int(torch.isinf(flat).sum())
            parts = torch.view_as_real(flat).reshape(-1) if v.is_complex() else flat
            flat = parts[torch.isfinite(parts)]
        flat = flat.double()
        if flat.numel():
            d["min"] = flat.min().item()
            d["max"] = flat.max().item()
        out.append({"tensor": d})
    elif isinstance(v, (tuple, list)):
        for e in v:
            summary(e, out)
    elif isinstance(v, bool):
        out.append({"bool": v})
    elif isinstance(v, int):
        out.append({"int": v})
    elif isinstance(v, float):
        out.append({"float": v})
    elif v is None:
        out.append(None)
    else:
        out.append({"other": type(v).__name__})
    return out
"#;

/// The Python expression that builds one tensor: `make(torch.float32, [2, 3], ("uniform", -1.0, 1.0), 7)`.
pub fn python_tensor(r: &TensorRecipe) -> String {
    let fill = match r.fill {
        Fill::Uniform { lo, hi } => format!("(\"uniform\", {}, {})", py_float(lo), py_float(hi)),
        Fill::Int { lo, hi } => format!("(\"int\", {lo}, {hi})"),
        Fill::Constant(c) => format!("(\"constant\", {}, None)", py_float(c)),
    };
    let mut s = format!("make({}, {}, {fill}, {}", py_dtype(r.dtype), py_ints(&r.shape), r.seed);
    let layout = match r.layout {
        Layout::Contiguous => None,
        Layout::Transposed => Some("transposed"),
        Layout::Strided => Some("strided"),
    };
    if layout.is_some() || !r.specials.is_empty() {
        let _ = write!(s, ", \"{}\"", layout.unwrap_or("contiguous"));
    }
    if !r.specials.is_empty() {
        let specials: Vec<String> = r.specials.iter().map(|(i, v)| format!("({i}, {})", py_special(*v))).collect();
        let _ = write!(s, ", [{}]", specials.join(", "));
    }
    s.push(')');
    s
}

/// A float as Python reads it back to the same double.
pub fn py_float(v: f64) -> String {
    if v.is_nan() {
        "float(\"nan\")".into()
    } else if v.is_infinite() {
        if v > 0.0 { "float(\"inf\")".into() } else { "float(\"-inf\")".into() }
    } else {
        // Debug prints the shortest text that reads back to the same double, with a `.0` or an
        // exponent, which Python accepts as a float literal.
        format!("{v:?}")
    }
}

fn py_special(s: Special) -> String {
    py_float(s.value())
}

fn py_dtype(d: DType) -> String {
    format!("torch.{}", d.name())
}

fn py_ints(xs: &[i64]) -> String {
    format!("[{}]", xs.iter().map(i64::to_string).collect::<Vec<_>>().join(", "))
}

fn py_str(s: &str) -> String {
    // A JSON string literal is a valid Python string literal.
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// Python names a script defines itself; parameters with these names are renamed.
const RESERVED: &[&str] = &["torch", "make", "summary", "json", "sys", "result"];

const PY_KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del", "elif", "else", "except",
    "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try",
    "while", "with", "yield",
];

fn py_var(name: &str, index: usize) -> String {
    let ident = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !name.starts_with(|c: char| c.is_ascii_digit());
    if !ident {
        format!("arg{index}")
    } else if PY_KEYWORDS.contains(&name) || RESERVED.contains(&name) {
        format!("{name}_")
    } else {
        name.to_string()
    }
}

/// A case argument as a Python expression; tensors are the variables defined for them.
fn py_value(arg: &Arg, var: &str) -> String {
    match arg {
        Arg::None | Arg::Omitted => "None".into(),
        Arg::Bool(b) => if *b { "True".into() } else { "False".into() },
        Arg::Int(i) => i.to_string(),
        Arg::Float(f) => py_float(*f),
        Arg::Str(s) => py_str(s),
        Arg::Dtype(d) => py_dtype(*d),
        Arg::IntList(xs) => py_ints(xs),
        Arg::FloatList(xs) => format!("[{}]", xs.iter().map(|x| py_float(*x)).collect::<Vec<_>>().join(", ")),
        Arg::BoolList(xs) => format!("[{}]", xs.iter().map(|b| if *b { "True" } else { "False" }).collect::<Vec<_>>().join(", ")),
        Arg::Tensor(_) | Arg::TensorList(_) => var.to_string(),
    }
}

/// The reproducer for one case of `api`, bound by `binding`. `header_comment` opens the script
/// as comment lines (what was found, when, by which sfz).
pub fn python_reproducer(api: &ApiSpec, binding: &OpBinding, case: &Case, header_comment: &str) -> String {
    let mut out = String::new();
    for line in header_comment.lines() {
        let _ = writeln!(out, "{}", format!("# {line}").trim_end());
    }
    out.push_str("# Standalone reproducer written by sfz; needs torch 2.13.0 (pip install torch==2.13.0).\n");
    out.push_str("import json\n\nimport torch\n\n");
    out.push_str("# sfz workers run single-threaded; reductions can round differently with more threads.\n");
    out.push_str("torch.set_num_threads(1)\n\n\n");
    out.push_str(PY_MAKE);
    out.push_str("\n\n");
    out.push_str(PY_SUMMARY);
    out.push_str("\n\n");

    // One variable per tensor-valued argument, named after its parameter.
    let vars: Vec<String> = (0..case.args.len()).map(|i| py_var(api.params.get(i).map_or("", |p| p.name.as_str()), i)).collect();
    for (i, arg) in case.args.iter().enumerate() {
        match arg {
            Arg::Tensor(r) => {
                let _ = writeln!(out, "{} = {}", vars[i], python_tensor(r));
            }
            Arg::TensorList(rs) => {
                let items: Vec<String> = rs.iter().map(python_tensor).collect();
                let _ = writeln!(out, "{} = [\n    {},\n]", vars[i], items.join(",\n    "));
            }
            _ => {}
        }
    }
    let call = match registry::python_call(&api.name) {
        Some(form) if registry::is_public_mapping(api, binding) => public_call(api, &form, case, &vars),
        _ => ops_call(binding, case, &vars),
    };
    let _ = writeln!(out, "\nresult = {call}");
    out.push_str("print(\"sfz-outputs:\", json.dumps(summary(result, [])))\n");
    out
}

/// `torch.nn.functional.conv2d(input, weight, None, [2, 2], padding=[1, 1])`: positional in
/// spec order up to the first omitted or keyword-only parameter, keywords after.
fn public_call(api: &ApiSpec, form: &PyCall, case: &Case, vars: &[String]) -> String {
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

/// `torch.ops.aten.sum.dim_IntList(input, [1], True)`: the binding's arguments in schema order.
fn ops_call(binding: &OpBinding, case: &Case, vars: &[String]) -> String {
    let (ns, name) = binding.name.split_once("::").unwrap_or(("aten", binding.name.as_str()));
    let overload = if binding.overload.is_empty() { "default" } else { binding.overload.as_str() };
    let parsed = schema::parse(&binding.schema).ok();
    let mut parts = Vec::new();
    let mut positional = true;
    for (position, source) in binding.args.iter().enumerate() {
        let arg_schema = parsed.as_ref().and_then(|s| s.args.get(position));
        let value = match source {
            ArgSource::Default if arg_schema.is_some_and(|a| a.default.is_none()) => Some("None".to_string()),
            ArgSource::Default => None,
            ArgSource::Value(v) => Some(py_value(v, "None")),
            ArgSource::Output(k) => Some(format!("out{k}")),
            ArgSource::Param { index, transform } => {
                let arg = case.args.get(*index).unwrap_or(&Arg::Omitted);
                let var = vars.get(*index).map_or("None", String::as_str);
                match (arg, transform) {
                    (Arg::Omitted, Transform::OmittedAs(v)) => Some(py_value(v, var)),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::catalog::Catalog;
    use std::path::Path;

    fn api(src: &str) -> ApiSpec {
        let checked = crate::check::check_text(Path::new("t.sfz"), src);
        assert!(!checked.has_errors(), "{:?}", checked.diags);
        checked.spec.apis.into_iter().next().expect("one api")
    }

    fn bind(a: &ApiSpec) -> OpBinding {
        let c = Catalog::from_schemas(include_str!("../../tests/fixtures/schemas-2.13.0.txt").lines());
        registry::resolve(a, &c).unwrap()
    }

    fn recipe() -> TensorRecipe {
        TensorRecipe { dtype: DType::Float32, shape: vec![2, 3], fill: Fill::Uniform { lo: -1.5, hi: 2.0 }, seed: 42, layout: Layout::Contiguous, specials: vec![] }
    }

    #[test]
    fn floats_render_as_python_reads_them() {
        assert_eq!(py_float(1.0), "1.0");
        assert_eq!(py_float(-0.0), "-0.0");
        assert_eq!(py_float(1e-7), "1e-7");
        assert_eq!(py_float(f64::INFINITY), "float(\"inf\")");
        assert_eq!(py_float(f64::NEG_INFINITY), "float(\"-inf\")");
        assert_eq!(py_float(f64::NAN), "float(\"nan\")");
        assert_eq!(py_float(0.1 + 0.2), "0.30000000000000004");
    }

    #[test]
    fn tensors_render_with_their_whole_recipe() {
        assert_eq!(python_tensor(&recipe()), "make(torch.float32, [2, 3], (\"uniform\", -1.5, 2.0), 42)");
        let r = TensorRecipe { layout: Layout::Strided, specials: vec![(3, Special::NegInf)], fill: Fill::Int { lo: 0, hi: 5 }, dtype: DType::BFloat16, ..recipe() };
        assert_eq!(python_tensor(&r), "make(torch.bfloat16, [2, 3], (\"int\", 0, 5), 42, \"strided\", [(3, float(\"-inf\"))])");
    }

    #[test]
    fn public_calls_are_positional_until_a_gap_then_keywords() {
        let a = api("api torch.nn.functional.conv2d(input: Tensor, weight: Tensor, bias: Tensor? = None, stride: int[2] = [1, 1], padding: int[2] = [0, 0], dilation: int[2] = [1, 1], groups: int = 1) -> Tensor {}");
        let case = Case {
            op: 0,
            args: vec![Arg::Tensor(recipe()), Arg::Tensor(recipe()), Arg::None, Arg::IntList(vec![2, 2]), Arg::Omitted, Arg::IntList(vec![1, 1]), Arg::Int(1)],
        };
        let script = python_reproducer(&a, &bind(&a), &case, "crash: SIGSEGV\nseed 7");
        assert!(script.starts_with("# crash: SIGSEGV\n# seed 7\n"), "{script}");
        assert!(script.contains("\nresult = torch.nn.functional.conv2d(input, weight, None, [2, 2], dilation=[1, 1], groups=1)\n"), "{script}");
        assert!(script.contains("input = make(torch.float32"), "{script}");
    }

    #[test]
    fn keyword_only_parameters_and_methods() {
        let a = api("api torch.nn.functional.softmax(input: Tensor, dim: int, *, dtype: dtype? = None) -> Tensor {}");
        let case = Case { op: 0, args: vec![Arg::Tensor(recipe()), Arg::Int(-1), Arg::Dtype(DType::Float64)] };
        assert!(python_reproducer(&a, &bind(&a), &case, "").contains("result = torch.nn.functional.softmax(input, -1, dtype=torch.float64)"));
        let a = api("api torch.Tensor.add(self: Tensor, other: Tensor, *, alpha: Scalar = 1) -> Tensor {}");
        let case = Case { op: 0, args: vec![Arg::Tensor(recipe()), Arg::Tensor(recipe()), Arg::Float(f64::INFINITY)] };
        let script = python_reproducer(&a, &bind(&a), &case, "");
        assert!(script.contains("result = self.add(other, alpha=float(\"inf\"))"), "{script}");
    }

    #[test]
    fn pinned_operators_go_through_torch_ops() {
        let a = api("#[aten(\"aten::_softmax\")]\napi torch.nn.functional.softmax(input: Tensor, dim: int, half_to_float: bool = false) -> Tensor {}");
        let case = Case { op: 0, args: vec![Arg::Tensor(recipe()), Arg::Int(1), Arg::Omitted] };
        let script = python_reproducer(&a, &bind(&a), &case, "");
        assert!(script.contains("result = torch.ops.aten._softmax.default(input, 1, False)"), "{script}");
        let a = api("#[aten(\"aten::sum.dim_IntList\")]\napi torch.special.total(input: Tensor, dim: int[]?, *, dtype: dtype? = None) -> Tensor {}");
        let case = Case { op: 0, args: vec![Arg::Tensor(recipe()), Arg::None, Arg::Dtype(DType::Float64)] };
        let script = python_reproducer(&a, &bind(&a), &case, "");
        assert!(script.contains("result = torch.ops.aten.sum.dim_IntList(input, None, dtype=torch.float64)"), "{script}");
    }
}
