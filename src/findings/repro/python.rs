//! How values are spelled in a Python script: literals, dtypes, tensors compared as the worker
//! compares them, tolerances, and parameter names made into variables.
use crate::spec::Value;
use crate::wire::case::{Arg, DType, Special};
use crate::wire::variant::{promote_dtype, Tolerance};

/// Python names a script defines itself; parameters with these names are renamed.
const RESERVED: &[&str] = &[
    "torch",
    "math",
    "result",
    "expected",
    "variant",
    "out",
    "f",
    "e",
    "xs",
    "fwd_out",
    "fwd_shape",
    "fwd_plane",
    "fwd_broken",
    "fwd_region",
    "fwd_lead",
    "fwd_most",
    "fwd_nonempty",
    // Python's builtins the scripts call (`clip`'s `max` made `max(2 ** -10, ...)` a call of a
    // tensor) and names the scripts assign after the inputs.
    "max",
    "min",
    "abs",
    "sum",
    "float",
    "int",
    "bool",
    "len",
    "range",
    "print",
    "isinstance",
    "enumerate",
    "any",
    "all",
    "zip",
    "list",
    "str",
    "value",
    "grad",
    "r",
    "at",
    "limit",
    "near",
    "leaves",
    "weighed",
    "tangent",
    "numeric",
    "backward",
    "forward",
];

/// A constant in Python.
pub(super) fn py_lit(v: &Value) -> Option<String> {
    Some(match v {
        Value::None => "None".into(),
        Value::Bool(b) => {
            if *b {
                "True".into()
            } else {
                "False".into()
            }
        }
        Value::Int(i) => i.to_string(),
        Value::Float(f) => py_float(*f),
        Value::Str(s) => py_str(s),
        Value::Dtype(d) => py_dtype(*d),
        Value::DtypeSet(ds) => format!("({},)", ds.iter().map(|d| py_dtype(*d)).collect::<Vec<_>>().join(", ")),
        Value::List(items) => format!("[{}]", items.iter().map(py_lit).collect::<Option<Vec<_>>>()?.join(", ")),
    })
}

/// A value made comparable exactly as the worker compares: float64 for real floating dtypes,
/// complex128 for complex ones, as is for integers and bools.
pub(super) fn comparable(e: &str, dtype: Option<DType>) -> String {
    match dtype {
        Some(d) if d.is_complex() => format!("{e}.to(torch.complex128)"),
        Some(d) if d.is_floating() => format!("{e}.double()"),
        _ => e.to_string(),
    }
}

pub(super) fn tol_args(t: Tolerance) -> String {
    format!("rtol={}, atol={}", py_float(t.rtol), py_float(t.atol))
}

/// `promote_dtype` for scripts that mention dtypes directly.
pub fn promoted(d: DType) -> DType {
    promote_dtype(d)
}

/// A float as Python reads it back to the same double.
pub fn py_float(v: f64) -> String {
    if v.is_nan() {
        "float(\"nan\")".into()
    } else if v.is_infinite() {
        if v > 0.0 {
            "float(\"inf\")".into()
        } else {
            "float(\"-inf\")".into()
        }
    } else {
        // Debug prints the shortest text that reads back to the same double, with a `.0` or an
        // exponent, which Python accepts as a float literal.
        format!("{v:?}")
    }
}

pub(super) fn py_special(s: Special) -> String {
    py_float(s.value())
}

pub(super) fn py_dtype(d: DType) -> String {
    format!("torch.{}", d.name())
}

pub(super) fn py_ints(xs: &[i64]) -> String {
    format!("[{}]", xs.iter().map(i64::to_string).collect::<Vec<_>>().join(", "))
}

pub fn py_str(s: &str) -> String {
    // A JSON string literal is a valid Python string literal.
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// Python's keywords: a parameter with one of these names is renamed in a script.
const PY_KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global",
    "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with", "yield",
];

pub(super) fn py_var(name: &str, index: usize) -> String {
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
pub(super) fn py_value(arg: &Arg, var: &str) -> String {
    match arg {
        Arg::None | Arg::Omitted => "None".into(),
        Arg::Bool(b) => {
            if *b {
                "True".into()
            } else {
                "False".into()
            }
        }
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
