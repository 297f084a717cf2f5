//! From a spec's Python API to an ATen operator: which operator and overload, and which case
//! argument feeds each schema argument (an `OpBinding`).
//!
//! Most APIs need nothing written here. The Python name gives the operator (`torch.X`,
//! `torch.Tensor.X` and `torch.nn.functional.X` → `aten::X`; `torch.linalg.X` → `aten::linalg_X`;
//! `torch.special.X` → `aten::special_X`; `torch.fft.X` → `aten::fft_X`; `torch.ops.aten.X` →
//! `aten::X`, and `torch.ops.aten.X.overload` that overload alone), or
//! `#[aten("aten::name.overload")]` names it; parameters map by name (`input` also reaches `self`,
//! or `A` for linalg; a name torch's docs give a positional parameter reaches the schema argument
//! at that position); and the overload is the one whose schema takes every declared parameter
//! with a compatible type and leaves the fewest arguments to defaults. Mutating overloads
//! (`abs_`, `out=`) bind too, when no functional one fits: a worker owns its inputs.
//!
//! The `WRAPPERS` table is for Python functions whose ATen signature differs: renamed arguments,
//! parameters Python consumes itself, and values Python rewrites before the call. Adding an op
//! costs one entry there, or nothing.
use std::cmp::Reverse;
use std::fmt;

use super::binding::{ArgSource, OpBinding, Transform};
use super::catalog::{split_qualified, Catalog};
use super::schema::{OpSchema, SchemaType};
use crate::spec::{ApiSpec, ParamType, Value};
use crate::wire::case::Arg;

/// A Python-level wrapper around ATen operators.
struct Wrapper {
    api: &'static str,
    /// Operators to try, most preferred first: `aten::name` (every overload) or
    /// `aten::name.overload`. Empty: the operator the name implies.
    ops: &'static [&'static str],
    /// Spec parameter → schema argument, where the names differ.
    renames: &'static [(&'static str, &'static str)],
    /// Parameters Python consumes before reaching ATen; they feed no schema argument.
    python_only: &'static [&'static str],
    /// Values Python rewrites before the call.
    adjust: &'static [(&'static str, Adjust)],
}

/// A Python-level rewrite of one parameter's value.
#[derive(Clone, Copy, Debug)]
enum Adjust {
    /// None becomes `[]` (`F.max_pool2d`'s `stride=None` means "same as kernel_size", which
    /// ATen spells as an empty list).
    NoneAsEmptyIntList,
    /// `F.embedding`'s `padding_idx`: None → -1, negative → counted from the end of `weight`.
    EmbeddingPaddingIdx { weight: &'static str },
}

const NONE: &[&str] = &[];

/// Python wrappers whose ATen signature differs from the public one.
const WRAPPERS: &[Wrapper] = &[
    // F.embedding(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse)
    // calls aten::embedding(weight, indices, ...). max_norm renormalises `weight` in place in
    // Python first, which sfz does not model, so a spec declaring it fails to resolve.
    Wrapper {
        api: "torch.nn.functional.embedding",
        ops: &["aten::embedding"],
        renames: &[("input", "indices")],
        python_only: NONE,
        adjust: &[("padding_idx", Adjust::EmbeddingPaddingIdx { weight: "weight" })],
    },
    // `return_indices` picks the operator in Python; here the spec's declared returns do (one
    // tensor: max_pool2d, two: max_pool2d_with_indices).
    Wrapper {
        api: "torch.nn.functional.max_pool1d",
        ops: &["aten::max_pool1d", "aten::max_pool1d_with_indices"],
        renames: &[],
        python_only: &["return_indices"],
        adjust: &[("stride", Adjust::NoneAsEmptyIntList)],
    },
    Wrapper {
        api: "torch.nn.functional.max_pool2d",
        ops: &["aten::max_pool2d", "aten::max_pool2d_with_indices"],
        renames: &[],
        python_only: &["return_indices"],
        adjust: &[("stride", Adjust::NoneAsEmptyIntList)],
    },
    Wrapper {
        api: "torch.nn.functional.max_pool3d",
        ops: &["aten::max_pool3d", "aten::max_pool3d_with_indices"],
        renames: &[],
        python_only: &["return_indices"],
        adjust: &[("stride", Adjust::NoneAsEmptyIntList)],
    },
    // F.dropout(input, p, training, inplace) → aten::dropout(input, p, train).
    Wrapper { api: "torch.nn.functional.dropout", ops: NONE, renames: &[("training", "train")], python_only: NONE, adjust: &[] },
];

/// Parameters of `torch.nn.functional.*` that Python consumes itself whenever the schema has no
/// argument of that name. `inplace=True` makes Python call the in-place twin (`relu_`), which
/// computes the same values, so the out-of-place operator stands for both.
const NN_PYTHON_ONLY: &[&str] = &["inplace", "_stacklevel"];

/// How Python calls an API.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PyCall {
    /// A module-level function, by its dotted path: `torch.nn.functional.conv2d`.
    Function(String),
    /// A `torch.Tensor` method: the first parameter is the receiver.
    Method(String),
}

/// The Python call form of an API name, when sfz knows the namespace.
pub fn python_call(api: &str) -> Option<PyCall> {
    implied_op(api)?;
    match api.strip_prefix("torch.Tensor.") {
        Some(method) => Some(PyCall::Method(method.to_string())),
        None => Some(PyCall::Function(api.to_string())),
    }
}

/// The ATen operator a Python name implies: `torch.linalg.inv` → `aten::linalg_inv`,
/// `torch.ops.aten.sum.dim_IntList` → `aten::sum`.
pub fn implied_op(api: &str) -> Option<String> {
    if let Some((base, _)) = torch_ops_parts(api) {
        return Some(format!("aten::{base}"));
    }
    implied_parts(api).map(|(prefix, base)| format!("aten::{prefix}{base}"))
}

/// The overload a `torch.ops.aten` name pins: `torch.ops.aten.sum.dim_IntList` → `dim_IntList`,
/// `torch.ops.aten.exp.default` → `` (the default overload); None for `torch.ops.aten.sum` (the
/// packet: Python picks among every overload) and for other names.
pub fn implied_overload(api: &str) -> Option<&str> {
    torch_ops_parts(api)?.1.map(|o| if o == "default" { "" } else { o })
}

/// `torch.ops.aten.X` → (X, None); `torch.ops.aten.X.overload` → (X, Some(overload)).
fn torch_ops_parts(api: &str) -> Option<(&str, Option<&str>)> {
    let rest = api.strip_prefix("torch.ops.aten.")?;
    let (base, overload) = match rest.split_once('.') {
        Some((base, overload)) => (base, Some(overload)),
        None => (rest, None),
    };
    (is_ident(base) && overload.is_none_or(is_ident)).then_some((base, overload))
}

fn is_ident(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !s.starts_with(|c: char| c.is_ascii_digit())
}

fn implied_parts(api: &str) -> Option<(&'static str, &str)> {
    const NAMESPACES: &[(&str, &str)] =
        &[("torch.nn.functional.", ""), ("torch.Tensor.", ""), ("torch.linalg.", "linalg_"), ("torch.special.", "special_"), ("torch.fft.", "fft_"), ("torch.", "")];
    let (prefix, base) = NAMESPACES.iter().find_map(|(ns, prefix)| api.strip_prefix(ns).map(|base| (*prefix, base)))?;
    is_ident(base).then_some((prefix, base))
}

/// True when the binding calls the very operator Python's public API reaches for this spec, so
/// that a reproducer may call the public API instead of `torch.ops.aten`.
pub fn is_public_mapping(api: &ApiSpec, binding: &OpBinding) -> bool {
    if python_call(&api.name).is_none() || !is_python_callable(&api.name) {
        return false;
    }
    let listed = wrapper(&api.name).is_some_and(|w| w.ops.iter().any(|op| split_qualified(op).0 == binding.name));
    (listed || implied_op(&api.name).as_deref() == Some(binding.name.as_str())) && takes_spec_params(api)
}

/// Whether a Python function takes the spec's parameters where a call puts them: positional ones
/// at their index, keyword-only ones by name. `F.batch_norm` takes `running_mean` second, so a
/// spec written with `aten::batch_norm`'s order is called through `torch.ops.aten`. A builtin
/// (bound from the schema itself) takes them as the binding does. `torch.block_diag(*tensors)`
/// is called by name only by a spec that declares `*tensors: Tensor[]`: a list passed as one
/// argument is an error there.
fn takes_spec_params(api: &ApiSpec) -> bool {
    let Some(params) = python_params(&api.name) else { return true };
    let split = params.iter().position(|p| p.starts_with('*')).unwrap_or(params.len());
    let positional = &params[..split];
    let variadic = params.get(split).and_then(|p| p.strip_prefix('*')).filter(|name| !name.is_empty());
    // A method's receiver is `self` in Python whatever the spec calls it.
    let receiver = usize::from(api.name.starts_with("torch.Tensor."));
    api.params.iter().enumerate().skip(receiver).all(|(i, p)| {
        if p.variadic {
            i == split && variadic == Some(p.name.as_str())
        } else if p.kw_only {
            params.contains(&p.name.as_str())
        } else {
            positional.get(i) == Some(&p.name.as_str())
        }
    })
}

/// The public callables of torch 2.13.0's Python API (data/python_api.txt, written by
/// scripts/extract_python_api.py), each with its parameters where it is written in Python.
static PYTHON_API: std::sync::LazyLock<std::collections::HashMap<&'static str, Option<Vec<&'static str>>>> = std::sync::LazyLock::new(|| {
    include_str!("../../data/python_api.txt")
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| match l.split_once('(') {
            Some((name, rest)) => (name, Some(rest.trim_end_matches(')').split(", ").filter(|p| !p.is_empty()).collect())),
            None => (l, None),
        })
        .collect()
});

/// Whether torch 2.13.0's Python API has a callable of this name. `aten::mse_loss` exists,
/// `torch.mse_loss` does not.
pub fn is_python_callable(api: &str) -> bool {
    PYTHON_API.contains_key(api)
}

/// The parameters of a public function written in Python, in order, `*` before the keyword-only
/// ones; None for a builtin or an unknown name.
pub fn python_params(api: &str) -> Option<&'static [&'static str]> {
    PYTHON_API.get(api)?.as_deref()
}

fn wrapper(api: &str) -> Option<&'static Wrapper> {
    WRAPPERS.iter().find(|w| w.api == api)
}

/// Why an API could not be bound to an operator.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ResolveError {
    /// The name is outside the namespaces sfz maps (`torch.`, `torch.Tensor.`,
    /// `torch.nn.functional.`, `torch.linalg.`, `torch.special.`, `torch.fft.`) and no
    /// `#[aten]` attribute names the operator.
    #[error("`{api}` does not name an ATen operator sfz can find; add #[aten(\"aten::name.overload\")]")]
    UnmappedName { api: String },
    /// `#[aten("...")]` is not of the form `ns::name` or `ns::name.overload`.
    #[error("`{text}` is not an operator name; write `aten::name` or `aten::name.overload`")]
    BadAten { api: String, text: String },
    /// No operator of that name; `suggestions` are the closest known names.
    #[error("no operator `{op}` in libtorch (for `{api}`){}", did_you_mean(suggestions))]
    UnknownOp { api: String, op: String, suggestions: Vec<String> },
    /// The operator exists but not this overload; `available` lists its overloads.
    #[error("`{op}` has no overload `{overload}`; it has {}", quoted_list(available))]
    UnknownOverload { api: String, op: String, overload: String, available: Vec<String> },
    /// Every overload was tried; each rejection says why it did not fit.
    #[error("no overload of `{op}` matches the parameters of `{api}`:{}", rejection_lines(rejections))]
    NoMatch { api: String, op: String, rejections: Vec<Rejection> },
    /// Several overloads fit equally well; `#[aten]` should pick one.
    #[error("`{api}` matches several overloads equally well: {}; pick one with #[aten(\"...\")]", quoted_list(candidates))]
    Ambiguous { api: String, candidates: Vec<String> },
}

/// Why one overload does not fit.
#[derive(Clone, Debug, PartialEq)]
pub struct Rejection {
    /// The overload's full schema text.
    pub schema: String,
    pub reason: Mismatch,
}

/// The first problem found with one overload. `param` indexes the spec's parameters, so a
/// diagnostic can point at the declaration.
#[derive(Clone, Debug, PartialEq)]
pub enum Mismatch {
    /// The schema has no argument for this parameter.
    UnknownParam { param: usize, name: String },
    /// The schema argument's type cannot hold the parameter's values.
    Type { param: usize, name: String, arg: String, expected: String, found: String },
    /// The spec allows None but the schema argument is not optional.
    NoneNotAccepted { param: usize, name: String, arg: String, ty: String },
    /// The spec's default cannot stand in for the schema argument, which has none.
    Default { param: usize, name: String, reason: String },
    /// Two parameters reach the same schema argument.
    Duplicate { arg: String, first: String, second: String },
    /// A schema argument with no default that no parameter provides.
    Missing { arg: String, ty: String },
    /// `...` arguments (TorchScript-only operators) cannot be bound.
    Varargs,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mismatch::UnknownParam { name, .. } => write!(f, "no argument for parameter `{name}`"),
            Mismatch::Type { name, arg, expected, found, .. } => {
                write!(f, "parameter `{name}` is {found} but argument `{arg}` is {expected}")
            }
            Mismatch::NoneNotAccepted { name, arg, ty, .. } => {
                write!(f, "parameter `{name}` may be None but argument `{arg}` is {ty}")
            }
            Mismatch::Default { name, reason, .. } => write!(f, "default of parameter `{name}`: {reason}"),
            Mismatch::Duplicate { arg, first, second } => write!(f, "parameters `{first}` and `{second}` both reach argument `{arg}`"),
            Mismatch::Missing { arg, ty } => write!(f, "required argument `{ty} {arg}` has no parameter"),
            Mismatch::Varargs => f.write_str("takes varargs"),
        }
    }
}

fn did_you_mean(suggestions: &[String]) -> String {
    if suggestions.is_empty() {
        String::new()
    } else {
        format!("; did you mean {}?", quoted_list(suggestions))
    }
}

fn quoted_list(items: &[String]) -> String {
    items.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", ")
}

fn rejection_lines(rejections: &[Rejection]) -> String {
    // Out-variants and in-place twins reject for the same dull reason; show the interesting ones first.
    let mut sorted: Vec<&Rejection> = rejections.iter().collect();
    sorted.sort_by_key(|r| matches!(r.reason, Mismatch::Missing { .. }));
    let mut out = String::new();
    for r in sorted.iter().take(8) {
        out.push_str(&format!("\n  {}\n    {}", r.schema, r.reason));
    }
    if sorted.len() > 8 {
        out.push_str(&format!("\n  ... and {} more", sorted.len() - 8));
    }
    out
}

/// Binds an API to one overload of its operator.
pub fn resolve(api: &ApiSpec, catalog: &Catalog) -> Result<OpBinding, ResolveError> {
    let wrap = wrapper(&api.name);
    let (op, candidates) = candidates(api, catalog, wrap)?;
    let mut rejections = Vec::new();
    let mut fits: Vec<(Score, OpBinding)> = Vec::new();
    for (rank, schema) in candidates.iter().enumerate() {
        match bind(api, schema, wrap) {
            Ok((mut score, binding)) => {
                score.rank = Reverse(if wrap.is_some() { rank } else { 0 });
                fits.push((score, binding));
            }
            Err(reason) => rejections.push(Rejection { schema: schema.text.clone(), reason }),
        }
    }
    fits.sort_by_key(|(score, _)| Reverse(*score));
    match fits.as_slice() {
        [] => Err(ResolveError::NoMatch { api: api.name.clone(), op, rejections }),
        [(best, _), (second, _), ..] if best == second => {
            Err(ResolveError::Ambiguous { api: api.name.clone(), candidates: fits.iter().take_while(|(s, _)| s == best).map(|(_, b)| b.qualified()).collect() })
        }
        _ => Ok(fits.swap_remove(0).1),
    }
}

/// The operator name (for messages) and the overloads to try.
fn candidates<'c>(api: &ApiSpec, catalog: &'c Catalog, wrap: Option<&Wrapper>) -> Result<(String, Vec<&'c OpSchema>), ResolveError> {
    let unknown = |op: &str| ResolveError::UnknownOp { api: api.name.clone(), op: op.to_string(), suggestions: catalog.suggest(op, 3) };
    if let Some(text) = &api.aten {
        let (name, overload) = split_qualified(text);
        let valid = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        let well_formed = name.split_once("::").is_some_and(|(ns, base)| valid(ns) && valid(base)) && (overload.is_empty() || valid(overload));
        if !well_formed {
            return Err(ResolveError::BadAten { api: api.name.clone(), text: text.clone() });
        }
        if !catalog.contains(name) {
            return Err(unknown(name));
        }
        if overload.is_empty() {
            return Ok((name.to_string(), catalog.overloads(name).collect()));
        }
        return match catalog.get(name, overload) {
            Some(s) => Ok((text.clone(), vec![s])),
            None => Err(ResolveError::UnknownOverload {
                api: api.name.clone(),
                op: name.to_string(),
                overload: overload.to_string(),
                available: catalog.overloads(name).map(|s| if s.overload.is_empty() { "(default)".to_string() } else { s.overload.clone() }).collect(),
            }),
        };
    }
    if let Some(w) = wrap.filter(|w| !w.ops.is_empty()) {
        let mut out = Vec::new();
        for op in w.ops {
            let (name, overload) = split_qualified(op);
            if !catalog.contains(name) {
                return Err(unknown(name));
            }
            out.extend(catalog.overloads(name).filter(|s| overload.is_empty() || s.overload == overload));
        }
        return Ok((w.ops.join(" | "), out));
    }
    let op = implied_op(&api.name).ok_or_else(|| ResolveError::UnmappedName { api: api.name.clone() })?;
    if !catalog.contains(&op) {
        return Err(unknown(&op));
    }
    if let Some(overload) = implied_overload(&api.name) {
        // `torch.ops.aten.X.overload` names one overload, as `#[aten]` would.
        return match catalog.get(&op, overload) {
            Some(s) => Ok((s.qualified(), vec![s])),
            None => Err(ResolveError::UnknownOverload {
                api: api.name.clone(),
                available: catalog.overloads(&op).map(|s| if s.overload.is_empty() { "default".to_string() } else { s.overload.clone() }).collect(),
                op,
                overload: overload.to_string(),
            }),
        };
    }
    let overloads = catalog.overloads(&op).collect();
    Ok((op, overloads))
}

/// How well an overload fits; larger is better. Field order is priority order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Score {
    /// The schema returns as many values as the spec declares (or the spec declares none).
    returns: bool,
    /// Writes to no argument: the functional form over `out=` and in-place variants.
    functional: bool,
    /// Fewer schema arguments left to their defaults.
    leftovers: Reverse<usize>,
    /// Sum over parameters of how exactly their type matches (see `compat`).
    exactness: u32,
    /// Position in the wrapper's list of operators; earlier wins.
    rank: Reverse<usize>,
}

/// Binds the spec's parameters to one schema, or says why not.
fn bind(api: &ApiSpec, schema: &OpSchema, wrap: Option<&Wrapper>) -> Result<(Score, OpBinding), Mismatch> {
    if schema.args.iter().any(|a| a.ty == SchemaType::Varargs) {
        return Err(Mismatch::Varargs);
    }
    let mut sources: Vec<Option<(usize, Transform)>> = vec![None; schema.args.len()];
    let mut exactness = 0;
    for (index, p) in api.params.iter().enumerate() {
        let Some(k) = target(api, schema, wrap, &p.name) else {
            if is_python_only(&api.name, wrap, &p.name) {
                continue;
            }
            return Err(Mismatch::UnknownParam { param: index, name: p.name.clone() });
        };
        let arg = &schema.args[k];
        if let Some((first, _)) = &sources[k] {
            return Err(Mismatch::Duplicate { arg: arg.name.clone(), first: api.params[*first].name.clone(), second: p.name.clone() });
        }
        exactness += compat(&p.ty, &arg.ty).ok_or_else(|| Mismatch::Type {
            param: index,
            name: p.name.clone(),
            arg: arg.name.clone(),
            expected: arg.ty.to_string(),
            found: p.ty.describe(),
        })?;
        let adjust = wrap.and_then(|w| w.adjust.iter().find(|(n, _)| *n == p.name)).map(|(_, a)| *a);
        let mut transform = match adjust {
            None => Transform::Identity,
            Some(Adjust::NoneAsEmptyIntList) => Transform::NoneAs(Arg::IntList(Vec::new())),
            Some(Adjust::EmbeddingPaddingIdx { weight }) => match api.param_index(weight) {
                Some(weight) => Transform::EmbeddingPaddingIdx { weight },
                None => return Err(Mismatch::Default { param: index, name: p.name.clone(), reason: format!("needs a parameter `{weight}`") }),
            },
        };
        if p.optional && !arg.ty.is_optional() && adjust.is_none() {
            return Err(Mismatch::NoneNotAccepted { param: index, name: p.name.clone(), arg: arg.name.clone(), ty: arg.ty.to_string() });
        }
        if let (Some(default), None) = (&p.default, &arg.default) {
            // An omitted argument normally takes the schema's default; this one has none, so
            // the spec's (Python's) default stands in. Optional arguments take None anyway.
            let needed = !(arg.ty.is_optional() && *default == Value::None);
            if needed {
                if transform != Transform::Identity {
                    return Err(Mismatch::Default { param: index, name: p.name.clone(), reason: "the schema has no default and the value is rewritten".into() });
                }
                let value = default.to_arg(&p.ty).ok_or_else(|| Mismatch::Default {
                    param: index,
                    name: p.name.clone(),
                    reason: format!("cannot pass {default:?} for argument `{}`, which has no default", arg.name),
                })?;
                transform = Transform::OmittedAs(value);
            }
        }
        sources[k] = Some((index, transform));
    }
    let mut leftovers = 0;
    let mut args = Vec::with_capacity(schema.args.len());
    for (source, arg) in sources.into_iter().zip(&schema.args) {
        match source {
            Some((index, transform)) => args.push(ArgSource::Param { index, transform }),
            // A `Device` without default is the CPU, where sfz's tensors are.
            None if arg.default.is_some() || arg.ty.is_optional() || arg.ty == SchemaType::Device => {
                leftovers += 1;
                args.push(ArgSource::Default);
            }
            None => return Err(Mismatch::Missing { arg: arg.name.clone(), ty: arg.ty.to_string() }),
        }
    }
    let declared = api.returns.len();
    let score =
        Score { returns: declared == 0 || declared == schema.returns.len(), functional: !schema.has_mutable_args(), leftovers: Reverse(leftovers), exactness, rank: Reverse(0) };
    let binding = OpBinding { name: schema.name.clone(), overload: schema.overload.clone(), args, schema: schema.text.clone(), forward: None };
    Ok((score, binding))
}

/// The schema argument a parameter feeds.
fn target(api: &ApiSpec, schema: &OpSchema, wrap: Option<&Wrapper>, name: &str) -> Option<usize> {
    if let Some((_, to)) = wrap.and_then(|w| w.renames.iter().find(|(from, _)| *from == name)) {
        return schema.arg_index(to);
    }
    if let Some(k) = schema.arg_index(name) {
        return Some(k);
    }
    // Python says `input` where ATen says `self` (or `A` in linalg); a spec that also declares
    // the other name keeps both literal.
    let aliases: &[&str] = match name {
        "input" => &["self", "A"],
        "self" => &["input"],
        "A" => &["self", "input"],
        _ => &[],
    };
    if let Some(k) = aliases.iter().filter(|a| api.param_index(a).is_none()).find_map(|a| schema.arg_index(a)) {
        return Some(k);
    }
    if wrap.is_some() {
        return None;
    }
    // The documented Python spelling (`torch.linalg.vector_norm(x, ...)`, where the schema says
    // `self`) reaches the schema argument at the same position, when the docs renamed that
    // argument (its own name is not Python's) and the spec does not declare it by that name too.
    let python = super::docs::python_params(&api.name)?;
    let i = python.positional.iter().position(|p| p == name)?;
    let k = schema.args.iter().enumerate().filter(|(_, a)| !a.kw_only).nth(i)?.0;
    let arg = &schema.args[k].name;
    (!python.contains(arg) && api.param_index(arg).is_none()).then_some(k)
}

fn is_python_only(api: &str, wrap: Option<&Wrapper>, name: &str) -> bool {
    wrap.is_some_and(|w| w.python_only.contains(&name)) || (api.starts_with("torch.nn.functional.") && NN_PYTHON_ONLY.contains(&name))
}

/// How exactly a schema type holds a parameter's values: 2 the same kind, 1 by a conversion
/// Python also makes (an int where a float or Scalar goes, an int broadcast to `int[N]`), None
/// not at all.
fn compat(param: &ParamType, ty: &SchemaType) -> Option<u32> {
    use SchemaType as S;
    let base = ty.strip_optional();
    let list_elem = match base {
        S::List(elem, n) => Some((elem.as_ref(), *n)),
        _ => None,
    };
    match param {
        ParamType::Tensor => matches!(base, S::Tensor).then_some(2),
        ParamType::TensorList => match list_elem? {
            (S::Tensor, _) => Some(2),
            (S::Optional(inner), _) if **inner == S::Tensor => Some(1),
            _ => None,
        },
        ParamType::Int => match base {
            S::Int | S::SymInt => Some(2),
            S::Float | S::Scalar => Some(1),
            S::List(elem, Some(_)) if elem.is_int() => Some(1),
            _ => None,
        },
        ParamType::Float => match base {
            S::Float => Some(2),
            S::Scalar => Some(1),
            _ => None,
        },
        ParamType::Scalar => match base {
            S::Scalar => Some(2),
            S::Float => Some(1),
            _ => None,
        },
        ParamType::Bool => matches!(base, S::Bool).then_some(2),
        ParamType::Str | ParamType::Enum(_) => matches!(base, S::Str).then_some(2),
        ParamType::Dtype => matches!(base, S::ScalarType).then_some(2),
        ParamType::IntList(n) => match list_elem? {
            (elem, m) if elem.is_int() => lengths_agree(*n, m).then_some(2),
            _ => None,
        },
        ParamType::FloatList(n) => match list_elem? {
            (S::Float, m) => lengths_agree(*n, m).then_some(2),
            _ => None,
        },
        ParamType::BoolList(n) => match list_elem? {
            (S::Bool, m) => lengths_agree(*n, m).then_some(2),
            _ => None,
        },
    }
}

/// `int[1]` in a schema takes lists of any length (dims); a longer fixed length must agree.
fn lengths_agree(spec: Option<u32>, schema: Option<u32>) -> bool {
    match (spec, schema) {
        (Some(n), Some(m)) if m > 1 => n == m,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::first_api as api;
    use std::path::Path;

    fn catalog() -> Catalog {
        Catalog::from_schemas(include_str!("../../tests/fixtures/schemas-2.13.0.txt").lines())
    }

    #[test]
    fn only_names_python_has_are_called_by_name() {
        assert!(is_python_callable("torch.exp") && is_python_callable("torch.nn.functional.mse_loss") && is_python_callable("torch.Tensor.exp"));
        assert!(!is_python_callable("torch.mse_loss"), "aten::mse_loss has no torch.mse_loss");
    }

    fn resolved(src: &str) -> OpBinding {
        let a = api(src);
        resolve(&a, &catalog()).unwrap_or_else(|e| panic!("{e}"))
    }

    fn param(index: usize) -> ArgSource {
        ArgSource::Param { index, transform: Transform::Identity }
    }

    #[test]
    fn names_map_to_operators() {
        assert_eq!(implied_op("torch.exp").as_deref(), Some("aten::exp"));
        assert_eq!(implied_op("torch.Tensor.add").as_deref(), Some("aten::add"));
        assert_eq!(implied_op("torch.nn.functional.conv2d").as_deref(), Some("aten::conv2d"));
        assert_eq!(implied_op("torch.linalg.inv").as_deref(), Some("aten::linalg_inv"));
        assert_eq!(implied_op("torch.special.erf").as_deref(), Some("aten::special_erf"));
        assert_eq!(implied_op("torch.fft.fft").as_deref(), Some("aten::fft_fft"));
        assert_eq!(implied_op("torch.nn.Conv2d.forward"), None);
        assert_eq!(implied_op("numpy.exp"), None);
        assert_eq!(python_call("torch.Tensor.add"), Some(PyCall::Method("add".into())));
        assert_eq!(python_call("torch.exp"), Some(PyCall::Function("torch.exp".into())));
    }

    #[test]
    fn sum_with_dims_picks_dim_int_list() {
        let b = resolved("api torch.sum(input: Tensor, dim: int[]? = None, keepdim: bool = false) -> Tensor {}");
        assert_eq!(b.qualified(), "aten::sum.dim_IntList");
        assert_eq!(b.args, vec![param(0), param(1), param(2), ArgSource::Default]);
        let b = resolved("api torch.sum(input: Tensor) -> Tensor {}");
        assert_eq!(b.qualified(), "aten::sum");
    }

    #[test]
    fn softmax_picks_int_overload() {
        let b = resolved("api torch.nn.functional.softmax(input: Tensor, dim: int, *, dtype: dtype? = None) -> Tensor {}");
        assert_eq!(b.qualified(), "aten::softmax.int");
        assert_eq!(b.args, vec![param(0), param(1), param(2)]);
    }

    #[test]
    fn conv2d_padding_type_picks_overload() {
        let ints = "api torch.nn.functional.conv2d(input: Tensor, weight: Tensor, bias: Tensor? = None, stride: int[2] = [1, 1], padding: int[2] = [0, 0], dilation: int[2] = [1, 1], groups: int = 1) -> Tensor {}";
        assert_eq!(resolved(ints).qualified(), "aten::conv2d");
        let strs = ints.replace("padding: int[2] = [0, 0]", "padding: \"valid\" | \"same\" = \"valid\"");
        let b = resolved(&strs);
        assert_eq!(b.qualified(), "aten::conv2d.padding");
        assert!(b.schema.contains("str padding=\"valid\""));
    }

    #[test]
    fn embedding_swaps_arguments_and_rewrites_padding_idx() {
        let b = resolved("api torch.nn.functional.embedding(input: Tensor, weight: Tensor, padding_idx: int? = None) -> Tensor {}");
        assert_eq!(b.qualified(), "aten::embedding");
        assert_eq!(
            b.args,
            vec![param(1), param(0), ArgSource::Param { index: 2, transform: Transform::EmbeddingPaddingIdx { weight: 1 } }, ArgSource::Default, ArgSource::Default]
        );
    }

    #[test]
    fn max_pool2d_follows_declared_returns() {
        let params = "input: Tensor, kernel_size: int[2], stride: int[2]? = None, padding: int[2] = [0, 0], dilation: int[2] = [1, 1], ceil_mode: bool = false";
        let b = resolved(&format!("api torch.nn.functional.max_pool2d({params}) -> Tensor {{}}"));
        assert_eq!(b.qualified(), "aten::max_pool2d");
        assert_eq!(b.args[2], ArgSource::Param { index: 2, transform: Transform::NoneAs(Arg::IntList(vec![])) });
        let b = resolved(&format!("api torch.nn.functional.max_pool2d({params}, return_indices: bool = false) -> (Tensor, Tensor) {{}}"));
        assert_eq!(b.qualified(), "aten::max_pool2d_with_indices");
        assert_eq!(b.args.len(), 6, "return_indices feeds nothing");
    }

    #[test]
    fn relu_inplace_is_python_only() {
        let b = resolved("api torch.nn.functional.relu(input: Tensor, inplace: bool = false) -> Tensor {}");
        assert_eq!(b.qualified(), "aten::relu");
        assert_eq!(b.args, vec![param(0)]);
        // Outside torch.nn.functional an unknown parameter is an error.
        let e = resolve(&api("api torch.relu(input: Tensor, inplace: bool = false) -> Tensor {}"), &catalog()).unwrap_err();
        assert!(matches!(&e, ResolveError::NoMatch { rejections, .. } if rejections.iter().any(|r| matches!(r.reason, Mismatch::UnknownParam { param: 1, .. }))), "{e}");
    }

    #[test]
    fn the_twenty_starting_apis_resolve() {
        let checked = crate::check::check_paths(&[Path::new(env!("CARGO_MANIFEST_DIR")).join("specs")]);
        let c = catalog();
        // Every API resolves; the twenty of the files specs/ started with as listed.
        let starting = ["elementwise.sfz", "indexing.sfz", "linalg.sfz", "nn.sfz", "reductions.sfz", "shape.sfz"];
        let mut got = Vec::new();
        for a in &checked.spec.apis {
            let line = format!("{} -> {}", a.name, resolve(a, &c).unwrap_or_else(|e| panic!("{e}")).qualified());
            let file = Path::new(&checked.map.get(a.span.file).name).to_path_buf();
            // The inferred ones and the later hand-written families resolve too (`resolve`
            // panics on any that does not).
            let in_starting = file.parent().is_some_and(|d| d.ends_with("specs")) && file.file_name().is_some_and(|f| starting.iter().any(|s| f == *s));
            if in_starting {
                got.push(line);
            }
        }
        got.sort();
        let expected = [
            "torch.cat -> aten::cat",
            "torch.cumsum -> aten::cumsum",
            "torch.exp -> aten::exp",
            "torch.gather -> aten::gather",
            "torch.index_select -> aten::index_select",
            "torch.linalg.inv -> aten::linalg_inv",
            "torch.log -> aten::log",
            "torch.logsumexp -> aten::logsumexp",
            "torch.matmul -> aten::matmul",
            "torch.mean -> aten::mean.dim",
            "torch.nn.functional.conv2d -> aten::conv2d",
            "torch.nn.functional.embedding -> aten::embedding",
            "torch.nn.functional.max_pool2d -> aten::max_pool2d",
            "torch.nn.functional.softmax -> aten::softmax.int",
            "torch.relu -> aten::relu",
            "torch.reshape -> aten::reshape",
            "torch.sqrt -> aten::sqrt",
            "torch.sum -> aten::sum.dim_IntList",
            "torch.tanh -> aten::tanh",
            "torch.transpose -> aten::transpose.int",
        ];
        assert_eq!(got, expected);
    }

    #[test]
    fn omitted_parameters_without_schema_default_take_the_spec_default() {
        let b = resolved("api torch.nn.functional.dropout(input: Tensor, p: float = 0.5, training: bool = true, inplace: bool = false) -> Tensor {}");
        assert_eq!(b.qualified(), "aten::dropout");
        assert_eq!(
            b.args,
            vec![
                param(0),
                ArgSource::Param { index: 1, transform: Transform::OmittedAs(Arg::Float(0.5)) },
                ArgSource::Param { index: 2, transform: Transform::OmittedAs(Arg::Bool(true)) },
            ]
        );
    }

    #[test]
    fn linalg_input_reaches_a_and_methods_bind_self() {
        assert_eq!(resolved("api torch.linalg.inv(input: Tensor) -> Tensor {}").args, vec![param(0)]);
        let b = resolved("api torch.Tensor.add(self: Tensor, other: Tensor, *, alpha: Scalar = 1) -> Tensor {}");
        assert_eq!(b.qualified(), "aten::add.Tensor");
        let b = resolved("api torch.Tensor.add(self: Tensor, other: Scalar) -> Tensor {}");
        assert_eq!(b.qualified(), "aten::add.Scalar");
    }

    #[test]
    fn aten_attribute_overrides() {
        let b = resolved("#[aten(\"aten::sum.dim_IntList\")]\napi torch.sum(input: Tensor, dim: int[]?, keepdim: bool = false) -> Tensor {}");
        assert_eq!(b.qualified(), "aten::sum.dim_IntList");
        let e = resolve(&api("#[aten(\"aten::sum.nope\")]\napi torch.sum(input: Tensor) -> Tensor {}"), &catalog()).unwrap_err();
        assert!(matches!(&e, ResolveError::UnknownOverload { available, .. } if available.contains(&"dim_IntList".to_string())), "{e}");
    }

    #[test]
    fn diagnostics_carry_what_a_user_needs() {
        let e = resolve(&api("api torch.sofmax(input: Tensor, dim: int) -> Tensor {}"), &catalog()).unwrap_err();
        let ResolveError::UnknownOp { suggestions, .. } = &e else { panic!("{e:?}") };
        assert_eq!(suggestions.first().map(String::as_str), Some("aten::softmax"));
        assert!(e.to_string().contains("did you mean `aten::softmax`"), "{e}");

        let e = resolve(&api("api torch.exp(input: Tensor, base: float) -> Tensor {}"), &catalog()).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("aten::exp(Tensor self) -> Tensor") && text.contains("no argument for parameter `base`"), "{text}");

        let e = resolve(&api("api torch.cumsum(input: Tensor, dim: float) -> Tensor {}"), &catalog()).unwrap_err();
        assert!(e.to_string().contains("parameter `dim` is float but argument `dim` is int"), "{e}");

        let e = resolve(&api("api torch.cumsum(input: Tensor, dim: int?) -> Tensor {}"), &catalog()).unwrap_err();
        assert!(e.to_string().contains("may be None"), "{e}");

        let e = resolve(&api("api torch.gather(input: Tensor, index: Tensor) -> Tensor {}"), &catalog()).unwrap_err();
        assert!(e.to_string().contains("required argument `int dim` has no parameter"), "{e}");

        let e = resolve(&api("api torch.nn.Linear(input: Tensor) -> Tensor {}"), &catalog()).unwrap_err();
        assert!(matches!(e, ResolveError::UnmappedName { .. }), "{e}");
    }

    #[test]
    fn equally_good_overloads_are_ambiguous() {
        // aten::std.dim (unbiased=True) and aten::std.correction (correction=None) both take
        // `dim` and leave two arguments to their defaults.
        let e = resolve(&api("api torch.std(input: Tensor, dim: int[]?) -> Tensor {}"), &catalog()).unwrap_err();
        let ResolveError::Ambiguous { candidates, .. } = &e else { panic!("{e:?}") };
        assert_eq!(candidates.len(), 2, "{candidates:?}");
        // A Scalar `other` fits aten::add.Scalar only.
        let b = resolve(&api("api torch.add(input: Tensor, other: int) -> Tensor {}"), &catalog());
        assert_eq!(b.map(|b| b.qualified()), Ok("aten::add.Scalar".into()));
    }

    #[test]
    fn torch_ops_names_resolve() {
        assert_eq!(implied_op("torch.ops.aten.max_pool2d_with_indices_backward").as_deref(), Some("aten::max_pool2d_with_indices_backward"));
        assert_eq!(implied_op("torch.ops.aten.sum.dim_IntList").as_deref(), Some("aten::sum"));
        assert_eq!(implied_overload("torch.ops.aten.sum.dim_IntList"), Some("dim_IntList"));
        assert_eq!(implied_overload("torch.ops.aten.exp.default"), Some(""));
        assert_eq!(implied_overload("torch.ops.aten.exp"), None);
        assert_eq!(implied_op("torch.ops.aten.sum.a.b"), None);
        assert_eq!(python_call("torch.ops.aten.sum.dim_IntList"), Some(PyCall::Function("torch.ops.aten.sum.dim_IntList".into())));
        // The packet picks among the overloads as `torch.sum` does; an overload pins one.
        let b = resolved("api torch.ops.aten.sum(self: Tensor, dim: int[]?, keepdim: bool = false) -> Tensor {}");
        assert_eq!(b.qualified(), "aten::sum.dim_IntList");
        let b = resolved("api torch.ops.aten.exp.default(self: Tensor) -> Tensor {}");
        assert_eq!(b.qualified(), "aten::exp");
        let b = resolved("api torch.ops.aten.max_pool2d_with_indices_backward.grad_input(grad_output: Tensor, self: Tensor, kernel_size: int[2], stride: int[2], padding: int[2], dilation: int[2], ceil_mode: bool, indices: Tensor, *, grad_input: Tensor) -> Tensor {}");
        assert_eq!(b.qualified(), "aten::max_pool2d_with_indices_backward.grad_input");
        // Mutating operators bind: the worker owns its inputs.
        assert_eq!(resolved("api torch.ops.aten.abs_(self: Tensor) -> Tensor {}").qualified(), "aten::abs_");
        let e = resolve(&api("api torch.ops.aten.sum.nope(self: Tensor) -> Tensor {}"), &catalog()).unwrap_err();
        assert!(
            matches!(&e, ResolveError::UnknownOverload { available, .. } if available.contains(&"dim_IntList".to_string()) && available.contains(&"default".to_string())),
            "{e}"
        );
        // A pinned overload is not silently replaced by a better fitting one.
        let e = resolve(&api("api torch.ops.aten.add.Scalar(self: Tensor, other: Tensor) -> Tensor {}"), &catalog()).unwrap_err();
        assert!(matches!(e, ResolveError::NoMatch { .. }), "{e}");
    }

    #[test]
    fn documented_python_parameter_names_reach_schema_arguments() {
        // torch.linalg.vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None): `x` is `self`.
        let b = resolved("api torch.linalg.vector_norm(x: Tensor, ord: Scalar = 2, dim: int[]? = None) -> Tensor {}");
        assert_eq!(b.qualified(), "aten::linalg_vector_norm");
        assert_eq!(b.args[..3], [param(0), param(1), param(2)]);
        // An undocumented name still fails, naming the parameter.
        let e = resolve(&api("api torch.linalg.vector_norm(y: Tensor) -> Tensor {}"), &catalog()).unwrap_err();
        assert!(e.to_string().contains("no argument for parameter `y`"), "{e}");
        // A wrapper maps names through its table only: F.embedding's `max_norm` (fourth in Python)
        // is not aten::embedding's fourth argument, `scale_grad_by_freq`.
        let e = resolve(&api("api torch.nn.functional.embedding(input: Tensor, weight: Tensor, padding_idx: int? = None, max_norm: float? = None) -> Tensor {}"), &catalog())
            .unwrap_err();
        assert!(e.to_string().contains("no argument for parameter `max_norm`"), "{e}");
    }

    #[test]
    fn public_mapping_is_recognised() {
        let a = api("api torch.nn.functional.max_pool2d(input: Tensor, kernel_size: int[2]) -> (Tensor, Tensor) {}");
        let b = resolve(&a, &catalog()).unwrap();
        assert!(is_public_mapping(&a, &b));
        let a = api("#[aten(\"aten::_softmax\")]\napi torch.nn.functional.softmax(input: Tensor, dim: int, half_to_float: bool) -> Tensor {}");
        let b = resolve(&a, &catalog()).unwrap();
        assert!(!is_public_mapping(&a, &b));
        // F.batch_norm takes (input, running_mean, running_var, weight, ...): a spec in
        // aten::batch_norm's order is called through torch.ops.aten. F.group_norm takes
        // aten::group_norm's order: called by name.
        let aten_order = "api torch.nn.functional.batch_norm(input: Tensor, weight: Tensor?, bias: Tensor?, running_mean: Tensor?, running_var: Tensor?, training: bool, momentum: float, eps: float, cudnn_enabled: bool) -> Tensor {}";
        let a = api(aten_order);
        let b = resolve(&a, &catalog()).unwrap();
        assert!(!is_public_mapping(&a, &b));
        let a = api("api torch.nn.functional.group_norm(input: Tensor, num_groups: int, weight: Tensor? = None, bias: Tensor? = None, eps: float = 1e-05) -> Tensor {}");
        let b = resolve(&a, &catalog()).unwrap();
        assert!(is_public_mapping(&a, &b));
        assert_eq!(python_params("torch.nn.functional.softmax"), Some(&["input", "dim", "_stacklevel", "dtype"][..]));
        assert_eq!(python_params("torch.exp"), None);
    }

    #[test]
    fn a_variadic_python_function_is_called_by_name_only_by_a_variadic_spec() {
        // torch.block_diag(*tensors): a list passed as one argument raises TypeError there.
        let a = api("api torch.block_diag(*tensors: Tensor[]) -> Tensor {}");
        let b = resolve(&a, &catalog()).unwrap();
        assert!(is_public_mapping(&a, &b));
        let a = api("api torch.block_diag(tensors: Tensor[]) -> Tensor {}");
        let b = resolve(&a, &catalog()).unwrap();
        assert!(!is_public_mapping(&a, &b));
        // What follows `*tensors` is keyword-only in Python.
        let a = api("api torch.meshgrid(*tensors: Tensor[], indexing: str) -> Tensor[] {}");
        let b = resolve(&a, &catalog()).unwrap();
        assert!(is_public_mapping(&a, &b));
        assert_eq!(python_params("torch.meshgrid"), Some(&["*tensors", "indexing"][..]));
    }
}
