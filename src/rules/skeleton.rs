//! `sfz init`: an `api` item for any ATen operator, written from its schema alone (parameter
//! names, types, defaults, optionality, keyword-only markers, outputs). The skeleton has no
//! constraints: `sfz suggest` and `sfz infer` add them as rules.
//!
//! An operator name may be given as Python (`torch.sum`, `torch.linalg.inv`,
//! `torch.ops.aten.sum.dim_IntList`), as ATen (`aten::sum`, `aten::sum.dim_IntList`) or bare
//! (`sum`). Without an overload, it is the one whose arguments sfz can all generate, functional
//! before out= before in-place, with the most arguments; when the resolver would pick another
//! overload from the parameters alone, the skeleton names it with `#[aten(...)]`. Arguments no
//! spec type holds are left out when libtorch can do without them: a default, None for an
//! optional (`Generator?`, `Layout?`, `MemoryFormat?`), the CPU for a `Device`.
use std::path::Path;

use crate::ops::catalog::{split_qualified, Catalog};
use crate::ops::registry;
use crate::ops::schema::{OpSchema, SchemaArg, SchemaType};
use crate::spec::ParamType;

/// A skeleton that could be made.
#[derive(Clone, Debug)]
pub struct Skeleton {
    /// The Python path of the API (`torch.sum`).
    pub api: String,
    /// The overload it binds to (`aten::sum.dim_IntList`).
    pub qualified: String,
    /// The `api` item's text, canonical.
    pub text: String,
    /// The overload has a CPU kernel (else the worker, which calls on the CPU, cannot run it).
    pub cpu: bool,
}

/// Why no skeleton could be made for a name.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum InitError {
    /// No operator of that name; `suggestions` are the closest known names (Python spelling).
    #[error("no operator `{name}` in libtorch{}", did_you_mean(suggestions))]
    Unknown { name: String, suggestions: Vec<String> },
    /// The operator exists, but every overload takes something sfz cannot generate, writes to
    /// an argument, or does not resolve back to itself.
    #[error("cannot write a spec for `{name}`: {reason}")]
    Unsupported { name: String, reason: String },
}

fn did_you_mean(s: &[String]) -> String {
    if s.is_empty() {
        String::new()
    } else {
        format!("; did you mean {}?", s.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", "))
    }
}

/// `aten::linalg_inv` → `torch.linalg.inv`.
pub fn python_name(op: &str) -> String {
    let base = op.strip_prefix("aten::").unwrap_or(op);
    for (prefix, module) in [("linalg_", "linalg"), ("special_", "special"), ("fft_", "fft")] {
        if let Some(rest) = base.strip_prefix(prefix) {
            return format!("torch.{module}.{rest}");
        }
    }
    format!("torch.{base}")
}

/// The operator a user's name designates, and the overload when the name pins one:
/// `(aten::sum, None)`, `(aten::sum, Some("dim_IntList"))`, `(aten::exp, Some(""))` for
/// `torch.ops.aten.exp.default`.
fn operator_of(name: &str) -> Option<(String, Option<String>)> {
    let name = name.trim();
    if name.contains("::") {
        let (op, overload) = split_qualified(name);
        return Some((op.to_string(), (!overload.is_empty()).then(|| overload.to_string())));
    }
    let api = if name.starts_with("torch.") { name.to_string() } else { format!("torch.{name}") };
    let op = registry::implied_op(&api)?;
    Some((op, registry::implied_overload(&api).map(str::to_string)))
}

/// Public operators of the catalog (what `sfz init --all` covers): `aten::` names that are not
/// private (`_foo`) nor in-place (`foo_`), sorted.
pub fn public_ops(catalog: &Catalog) -> Vec<String> {
    catalog.names().into_iter().filter(|n| n.strip_prefix("aten::").is_some_and(|b| !b.starts_with('_') && !b.ends_with('_'))).map(str::to_string).collect()
}

/// The skeleton for one name.
pub fn skeleton(name: &str, catalog: &Catalog) -> Result<Skeleton, InitError> {
    let unknown = || {
        let op = operator_of(name).map(|(op, _)| op).unwrap_or_else(|| format!("aten::{name}"));
        // Suggestions in the user's spelling: `torch.ops.aten.ne` for `torch.ops.aten.nope`.
        let spell = |op: &str| match name.trim().starts_with("torch.ops.aten.") {
            true => format!("torch.ops.aten.{}", op.strip_prefix("aten::").unwrap_or(op)),
            false => python_name(op),
        };
        InitError::Unknown { name: name.to_string(), suggestions: catalog.suggest(&op, 3).iter().map(|s| spell(s)).collect() }
    };
    let (op, overload) = operator_of(name).ok_or_else(unknown)?;
    if !catalog.contains(&op) {
        return Err(unknown());
    }
    let unsupported = |reason: String| InitError::Unsupported { name: name.to_string(), reason };
    let schema = match overload {
        None => best_overload(catalog, &op).map_err(unsupported)?,
        Some(overload) => {
            let s = catalog.get(&op, &overload).ok_or_else(|| {
                let names: Vec<String> = catalog.overloads(&op).map(|s| if s.overload.is_empty() { "default".into() } else { s.overload.clone() }).collect();
                unsupported(format!("`{op}` has no overload `{overload}` (it has {})", names.join(", ")))
            })?;
            params_of(s).map_err(unsupported)?;
            s
        }
    };
    let api = if name.starts_with("torch.") { name.trim().to_string() } else { python_name(&op) };
    let qualified = schema.qualified();
    // Without `#[aten]` first; the attribute only when the resolver would not find this overload.
    for explicit in [false, true] {
        let text = render(&api, schema, explicit);
        let checked = crate::check::check_text(Path::new("skeleton.sfz"), &text);
        if checked.has_errors() {
            let first = checked.diags.iter().find(|d| d.is_error()).map(|d| d.message.clone()).unwrap_or_default();
            return Err(unsupported(format!("the skeleton does not check ({first}); this is a bug in sfz")));
        }
        let Some(spec) = checked.spec.apis.first() else { continue };
        match registry::resolve(spec, catalog) {
            Ok(b) if b.qualified() == qualified => {
                let text = crate::fmt::format_text(&text).unwrap_or(text);
                return Ok(Skeleton { api, qualified, text, cpu: schema.cpu });
            }
            Ok(_) => continue,
            Err(e) if explicit => return Err(unsupported(e.to_string())),
            Err(_) => continue,
        }
    }
    Err(unsupported(format!("`{qualified}` does not resolve back to itself")))
}

/// The overload of `op` whose arguments can all be generated: one with a CPU kernel if any
/// (`addmm.dtype` is CUDA-only), a functional one if any (then
/// one that writes only to `out=` arguments, then an in-place one: `abs_` has nothing else, and
/// a worker owns its inputs), with the most arguments (more tensors first: `add.Tensor` over
/// `add.Scalar`; fewer strings: `conv2d` over `conv2d.padding`); catalog order breaks ties.
/// Without one, why the first overload cannot be written.
fn best_overload<'c>(catalog: &'c Catalog, op: &str) -> Result<&'c OpSchema, String> {
    // How well an overload fits, best first.
    type Rank = (bool, u8, usize, usize, usize);
    let mut best: Option<(Rank, &OpSchema)> = None;
    let mut first_reason = None;
    for s in catalog.overloads(op) {
        if s.varargs_returns {
            first_reason.get_or_insert_with(|| format!("`{}` returns varargs", s.qualified()));
            continue;
        }
        let params = match params_of(s) {
            Ok(params) => params,
            Err(reason) => {
                // The overload is named when it is not the operator itself.
                first_reason.get_or_insert_with(|| if s.overload.is_empty() { reason } else { format!("overload `{}`: {reason}", s.qualified()) });
                continue;
            }
        };
        let writes_out_only = s.args.iter().filter(|a| a.mutable).all(|a| a.kw_only);
        let kind = match (s.has_mutable_args() || s.overload.ends_with("out"), writes_out_only) {
            (false, _) => 2,
            (true, true) => 1,
            (true, false) => 0,
        };
        let tensors = s.args.iter().filter(|a| matches!(a.ty.strip_optional(), SchemaType::Tensor)).count();
        // Strings last: the generator knows no values for a free `str`.
        let strings = s.args.iter().filter(|a| matches!(a.ty.strip_optional(), SchemaType::Str)).count();
        let key = (s.cpu, kind, params.len(), tensors, usize::MAX - strings);
        if best.as_ref().is_none_or(|(k, _)| key > *k) {
            best = Some((key, s));
        }
    }
    best.map(|(_, s)| s).ok_or_else(|| first_reason.unwrap_or_else(|| format!("`{op}` has no overloads")))
}

/// One spec parameter: its text, and whether it comes after `*`.
struct Param {
    text: String,
    kw_only: bool,
}

/// The parameters of a schema in spec syntax; arguments sfz cannot generate are left to their
/// defaults (an error when they have none).
fn params_of(s: &OpSchema) -> Result<Vec<Param>, String> {
    let has_input = s.args.iter().any(|a| a.name == "input");
    let mut out = Vec::new();
    for a in &s.args {
        let Some(ty) = spec_type(&a.ty) else {
            // Left to its default, or None (`Generator? generator`, `Layout? layout`): the
            // worker passes None for an optional argument no parameter feeds.
            // A `Device` without default: the worker passes the CPU.
            if a.default.is_some() || a.ty.is_optional() || a.ty == SchemaType::Device {
                continue;
            }
            return Err(format!("argument `{} {}` has a type sfz cannot generate ({})", a.ty, a.name, a.ty.strip_optional()));
        };
        let name = if a.name == "self" && !has_input { "input".to_string() } else { a.name.clone() };
        if !is_ident(&name) {
            if a.default.is_some() || a.ty.is_optional() {
                // `nan_to_num`'s `float? nan=None`: a spec cannot name it; libtorch's default stands.
                continue;
            }
            return Err(format!("argument name `{name}` is a keyword of the spec language"));
        }
        let default = match &a.default {
            None => String::new(),
            // `int[2] stride=[]` ("as kernel_size"): no `int[2]` value says that, so the
            // parameter is declared without a default and fuzzed with two values.
            Some(d) if is_short_fixed_list(d, &a.ty) => String::new(),
            Some(d) => match default_text(d, &a.ty) {
                Some(t) => format!(" = {t}"),
                // A default the language cannot write: leave the argument to libtorch.
                None => continue,
            },
        };
        out.push(Param { text: format!("{name}: {ty}{default}"), kw_only: a.kw_only });
    }
    Ok(out)
}

const KEYWORDS: &[&str] = &["let", "requires", "ensures", "oracles", "if", "then", "else", "forall", "exists", "in", "not", "and", "or", "true", "false", "None", "inf", "nan"];

fn is_ident(name: &str) -> bool {
    !name.is_empty() && !KEYWORDS.contains(&name) && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !name.starts_with(|c: char| c.is_ascii_digit())
}

/// A schema type in spec syntax, or None when sfz cannot generate it.
fn spec_type(ty: &SchemaType) -> Option<String> {
    use SchemaType as S;
    Some(match ty {
        S::Optional(inner) => format!("{}?", spec_type(inner)?),
        S::Tensor => "Tensor".into(),
        S::Int | S::SymInt => "int".into(),
        S::Float => "float".into(),
        S::Bool => "bool".into(),
        S::Str => "str".into(),
        S::Scalar => "Scalar".into(),
        S::ScalarType => "dtype".into(),
        S::List(elem, n) => {
            let e = match elem.as_ref() {
                S::Tensor => "Tensor",
                S::Optional(t) if **t == S::Tensor => "Tensor",
                e if e.is_int() => "int",
                S::Float => "float",
                S::Bool => "bool",
                _ => return None,
            };
            match n {
                // `int[1]` takes a list of any length (dims).
                Some(n) if *n > 1 && e != "Tensor" => format!("{e}[{n}]"),
                _ => format!("{e}[]"),
            }
        }
        _ => return None,
    })
}

/// A schema default in spec syntax, or None when it has no spelling there.
fn default_text(d: &str, ty: &SchemaType) -> Option<String> {
    let d = d.trim();
    if d == "None" {
        return ty.is_optional().then(|| "None".into());
    }
    let base = ty.strip_optional();
    match base {
        SchemaType::Bool => match d {
            "True" => Some("true".into()),
            "False" => Some("false".into()),
            _ => None,
        },
        SchemaType::Int | SchemaType::SymInt => d.parse::<i64>().ok().map(|v| v.to_string()),
        SchemaType::Float | SchemaType::Scalar => float_text(d, matches!(base, SchemaType::Float)),
        SchemaType::Str => {
            let inner = d.strip_prefix('"')?.strip_suffix('"')?;
            (!inner.contains(['\\', '"', '\''])).then(|| format!("\"{inner}\""))
        }
        SchemaType::List(elem, n) => {
            let items: Vec<String> = if let Some(inner) = d.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
                inner.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect()
            } else {
                // `int[2] stride=1` broadcasts a single value.
                vec![d.to_string(); n.unwrap_or(1) as usize]
            };
            let items: Option<Vec<String>> = items.iter().map(|i| default_text(i, elem)).collect();
            Some(format!("[{}]", items?.join(", ")))
        }
        _ => None,
    }
}

/// A written-out list default (`[]`) shorter or longer than its type's fixed length (`int[2]`).
fn is_short_fixed_list(d: &str, ty: &SchemaType) -> bool {
    let SchemaType::List(_, Some(n)) = ty.strip_optional() else { return false };
    let Some(inner) = d.trim().strip_prefix('[').and_then(|r| r.strip_suffix(']')) else { return false };
    *n > 1 && inner.split(',').filter(|s| !s.trim().is_empty()).count() != *n as usize
}

/// `1.` → `1.0`, `1e-08` → `1e-08`, `inf` → `inf`; an int stays an int for a Scalar.
fn float_text(d: &str, float: bool) -> Option<String> {
    if let Ok(i) = d.parse::<i64>() {
        return Some(if float { format!("{i}.0") } else { i.to_string() });
    }
    let v: f64 = d.parse().ok()?;
    if v.is_infinite() {
        return Some(if v > 0.0 { "inf".into() } else { "-inf".into() });
    }
    if !v.is_finite() {
        return None;
    }
    Some(format!("{v:?}"))
}

/// The return clause: `-> Tensor`, `-> (Tensor, Tensor)`, `-> (values: Tensor, indices: Tensor)`.
fn returns_text(s: &OpSchema) -> Option<String> {
    let tys: Option<Vec<String>> = s.returns.iter().map(|r| spec_type(&r.ty)).collect();
    let tys = tys?;
    let named = s.returns.iter().all(|r| !r.name.is_empty() && is_ident(&r.name)) && s.returns.len() > 1;
    // An unnamed tuple is one type and must not mix (`-> (float, int)`); named outputs may.
    let mixed = tys.iter().any(|t| *t != tys[0]);
    match tys.as_slice() {
        [] => None,
        [one] => Some(format!(" -> {one}")),
        many if named => Some(format!(" -> ({})", s.returns.iter().zip(many).map(|(r, t)| format!("{}: {t}", r.name)).collect::<Vec<_>>().join(", "))),
        many if mixed => Some(format!(" -> ({})", many.iter().enumerate().map(|(i, t)| format!("out{i}: {t}")).collect::<Vec<_>>().join(", "))),
        many => Some(format!(" -> ({})", many.join(", "))),
    }
}

fn render(api: &str, s: &OpSchema, explicit: bool) -> String {
    let params = params_of(s).unwrap_or_default();
    let mut parts = Vec::new();
    let mut kw = false;
    for p in &params {
        if p.kw_only && !kw {
            parts.push("*".to_string());
            kw = true;
        }
        parts.push(p.text.clone());
    }
    let returns = returns_text(s).unwrap_or_default();
    let body: String = s.args.iter().filter_map(|a| documented_enum(a).map(|values| format!("    {} in {values};\n", a.name))).collect();
    let attr = if explicit { format!("#[aten(\"{}\")]\n", s.qualified()) } else { String::new() };
    let cpu = if s.cpu { "" } else { "/// No CPU kernel: sfz calls operators on the CPU, so every case of this one fails.\n" };
    format!("/// {}\n{cpu}{attr}api {api}({}){returns} {{\n{body}}}\n", s.text, parts.join(", "))
}

/// The values an integer argument documented as an enum takes: ATen's `int reduction` is
/// `at::Reduction` (0 none, 1 mean, 2 sum); 23 is an invalid argument, not a case.
fn documented_enum(a: &SchemaArg) -> Option<&'static str> {
    (a.name == "reduction" && matches!(a.ty.strip_optional(), SchemaType::Int)).then_some("[0, 1, 2]")
}

/// A `*_backward` skeleton whose `from` statement calls its forward, and the forward's own
/// skeleton (its `api` item must be in the file too).
#[derive(Clone, Debug)]
pub struct Wired {
    pub forward: Skeleton,
    pub backward: Skeleton,
}

/// Names a gradient parameter has: it takes fresh values shaped like the forward's first output.
const GRADS: &[&str] = &["grad_output", "grad_out", "grad", "grad_y", "grad_in"];
/// Int list parameters that give the size of the forward's input (`select_backward`'s
/// `input_sizes`, `upsample_nearest2d_backward`'s `input_size`).
const SIZES: &[&str] = &["input_size", "input_sizes", "self_sizes", "self_size", "sizes", "input_shape"];
/// Tensor parameters that are outputs of the forward when it returns them unnamed: the first
/// output, then the others in order (`native_layer_norm_backward`'s `mean` and `rstd`).
const FIRST_OUTPUTS: &[&str] = &["output", "result", "out"];
const OTHER_OUTPUTS: &[&str] = &["indices", "mean", "rstd", "invstd", "save_mean", "save_invstd", "save_var", "total_weight", "is_target", "mask", "result1", "result2"];
/// A forward parameter and the backward parameter that stands for it under another name.
const SYNONYMS: &[(&str, &str)] = &[("training", "train"), ("dimension", "dim"), ("input", "self"), ("self", "input")];

/// The forward operators `op` (`aten::X_backward`) may be the backward of, most specific first:
/// `X_forward`, `X`, then `X` without its last words (`embedding_dense_backward` is the
/// backward of `embedding`).
fn forward_candidates(op: &str) -> Vec<String> {
    let Some(base) = op.strip_suffix("_backward") else { return Vec::new() };
    let mut out = vec![format!("{base}_forward"), base.to_string()];
    let mut shorter = base;
    while let Some((head, _)) = shorter.rsplit_once('_') {
        if head.ends_with("::") || head.ends_with("::_") || head.is_empty() {
            break;
        }
        out.push(head.to_string());
        shorter = head;
    }
    out
}

/// Wires a `*_backward` skeleton to its forward: its parameters matched by name (and a few
/// synonyms), the gradient bound to fresh values like the forward's first output, tensor
/// parameters named as outputs (`indices`, `mean`, `rstd`, `save_mean`, ...) bound to them by
/// name or in order. A forward input the backward only knows the size of is `like(grad, size)`;
/// a forward parameter the backward lacks is left to its default, or given a plain constant
/// (0.1, 1, false, a list of ones). None when the operator is no backward, its forward is not
/// in the catalog, or they cannot be wired (the forward needs a tensor the backward has no
/// size for, the result does not check).
pub fn wire(backward: &Skeleton, catalog: &Catalog) -> Option<Wired> {
    let (op, _) = split_qualified(&backward.qualified);
    forward_candidates(op).into_iter().filter(|f| catalog.contains(f)).find_map(|f| wire_to(backward, &f, catalog))
}

/// The api items skeleton `s` adds to a file that defines the APIs in `defined` (which grows by
/// what is added): a backward operator wired to its forward, whose item goes first unless the
/// file has it (its rules then feed the backward's inputs); any other operator alone. The flag
/// says whether it was wired.
pub fn items_for(s: Skeleton, catalog: &Catalog, defined: &mut Vec<String>) -> (Vec<String>, bool) {
    defined.push(s.api.clone());
    match wire(&s, catalog) {
        Some(w) => {
            let mut items = Vec::new();
            if !defined.contains(&w.forward.api) {
                defined.push(w.forward.api.clone());
                items.push(w.forward.text);
            }
            items.push(w.backward.text);
            (items, true)
        }
        None => (vec![s.text], false),
    }
}

/// `wire` with this forward operator.
fn wire_to(backward: &Skeleton, forward_op: &str, catalog: &Catalog) -> Option<Wired> {
    let forward = skeleton(forward_op, catalog).ok()?;
    let spec = |s: &Skeleton| crate::check::check_text(Path::new("skeleton.sfz"), &s.text).spec.apis.into_iter().next();
    let (fwd, bwd) = (spec(&forward)?, spec(backward)?);
    let tensor_out = |k: usize| fwd.returns.get(k).is_some_and(|r| r.ty == ParamType::Tensor);
    let grad = bwd.params.iter().position(|p| GRADS.contains(&p.name.as_str()) && p.ty == ParamType::Tensor && !p.optional)?;
    if !tensor_out(0) {
        return None;
    }
    // The bindings: the gradient, then outputs by name, then outputs in order.
    let mut binds: Vec<(usize, usize, bool)> = vec![(grad, 0, true)];
    let named: Vec<Option<usize>> = bwd.params.iter().map(|p| fwd.returns.iter().position(|r| r.name == p.name)).collect();
    for (i, p) in bwd.params.iter().enumerate() {
        if let Some(k) = named[i].filter(|&k| i != grad && p.ty == ParamType::Tensor && tensor_out(k)) {
            binds.push((i, k, false));
        }
    }
    let taken = |binds: &[(usize, usize, bool)], k: usize| binds.iter().any(|&(_, o, like)| o == k && !like);
    let mut next = 1;
    for (i, p) in bwd.params.iter().enumerate() {
        if binds.iter().any(|b| b.0 == i) || p.ty != ParamType::Tensor || fwd.param_index(&p.name).is_some() {
            continue;
        }
        let k = if FIRST_OUTPUTS.contains(&p.name.as_str()) && !taken(&binds, 0) {
            0
        } else if OTHER_OUTPUTS.contains(&p.name.as_str()) {
            while next < fwd.returns.len() && taken(&binds, next) {
                next += 1;
            }
            next
        } else {
            continue;
        };
        if tensor_out(k) {
            binds.push((i, k, false));
        }
    }
    // The forward's arguments.
    let bound = |i: usize| binds.iter().any(|b| b.0 == i);
    let mut args = Vec::new();
    let mut main_tensor = true;
    for fp in &fwd.params {
        let by_name = bwd.param_index(&fp.name).filter(|&i| !bound(i) && i != grad);
        let by_synonym = || SYNONYMS.iter().filter(|(f, _)| *f == fp.name).find_map(|(_, b)| bwd.param_index(b)).filter(|&i| !bound(i) && i != grad);
        let is_tensor = fp.ty == ParamType::Tensor;
        if let Some(i) = by_name.or_else(by_synonym).filter(|&i| crate::check::forward::compatible(&bwd.params[i], fp)) {
            args.push(format!("{} = {}", fp.name, bwd.params[i].name));
        } else if is_tensor && main_tensor {
            // The forward's main input, known to the backward by its size only.
            let g = &bwd.params[grad].name;
            if let Some(size) = bwd.params.iter().find(|p| SIZES.contains(&p.name.as_str()) && matches!(p.ty, ParamType::IntList(_)) && !p.optional) {
                args.push(format!("{} = like({g}, {})", fp.name, size.name));
            } else if let (true, Some(n)) = (fp.name == "weight", bwd.params.iter().find(|p| p.name == "num_weights" && p.ty == ParamType::Int && !p.optional)) {
                // An embedding table: `num_weights` rows of 8.
                args.push(format!("{} = like({g}, [{}, 8])", fp.name, n.name));
            } else if let Some(&(i, _, _)) = binds.iter().find(|&&(_, k, like)| k == 0 && !like) {
                // Known by what the forward made of it (`sigmoid_backward`'s `output`): built as
                // that parameter is, so the output is one the forward can produce.
                args.push(format!("{} = like({})", fp.name, bwd.params[i].name));
            } else if fp.default.is_none() && !fp.optional {
                return None;
            }
        } else if fp.default.is_none() && !fp.optional {
            args.push(format!("{} = {}", fp.name, constant(&fp.ty)?));
        }
        if is_tensor {
            main_tensor = false;
        }
    }
    let single = fwd.returns.len() == 1;
    let output = |k: usize| if single { "result".to_string() } else { format!("result.{k}") };
    let lines: Vec<String> = binds
        .iter()
        .map(|&(i, k, like)| {
            let value = if like { format!("like({})", output(k)) } else { output(k) };
            format!("        {}: {value};", bwd.params[i].name)
        })
        .collect();
    let statement = format!("    from {}({}) {{\n{}\n    }}\n", fwd.name, args.join(", "), lines.join("\n"));
    // The statement goes last in the body, after the constraints `render` wrote.
    let body = backward.text.trim_end().strip_suffix('}')?.trim_end().to_string();
    let text = format!("{body}\n{statement}}}\n");
    let together = format!("{}\n{text}", forward.text);
    let checked = crate::check::check_text(Path::new("skeleton.sfz"), &together);
    if checked.has_errors() {
        return None;
    }
    let text = crate::fmt::format_text(&text).unwrap_or(text);
    Some(Wired { forward, backward: Skeleton { text, ..backward.clone() } })
}

/// A plain constant for a forward parameter the backward does not have.
fn constant(ty: &ParamType) -> Option<String> {
    Some(match ty {
        ParamType::Float | ParamType::Scalar => "0.1".into(),
        ParamType::Int => "1".into(),
        ParamType::Bool => "false".into(),
        ParamType::IntList(n) => format!("[{}]", vec!["1"; n.unwrap_or(1) as usize].join(", ")),
        _ => return None,
    })
}

/// Whether an argument is one the skeleton declares (for tests and the enumerator).
pub fn declares(a: &SchemaArg) -> bool {
    spec_type(&a.ty).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> Catalog {
        Catalog::from_schemas(include_str!("../../tests/fixtures/schemas-2.13.0.txt").lines())
    }

    #[test]
    fn sum_takes_the_dim_overload_and_its_defaults() {
        let s = skeleton("torch.sum", &catalog()).unwrap();
        assert_eq!(s.qualified, "aten::sum.dim_IntList");
        let flat: String = s.text.lines().skip(1).map(str::trim).collect::<Vec<_>>().join(" ");
        assert!(flat.contains("api torch.sum( input: Tensor, dim: int[]?, keepdim: bool = false, *, dtype: dtype? = None, ) -> Tensor"), "{flat}");
    }

    #[test]
    fn an_overload_without_a_cpu_kernel_is_the_last_choice() {
        // As the worker lists them: `addmm.dtype` has more arguments but no CPU kernel.
        let lines = include_str!("../../tests/fixtures/schemas-2.13.0.txt").lines().map(|l| {
            if l.starts_with("aten::addmm.dtype(") || l.starts_with("aten::mm.dtype(") || l.starts_with("aten::_cudnn_rnn") {
                format!("{}{l}", crate::ops::catalog::NO_CPU)
            } else {
                l.to_string()
            }
        });
        let c = Catalog::from_schemas(lines);
        assert_eq!(skeleton("torch.addmm", &c).unwrap().qualified, "aten::addmm");
        assert_eq!(skeleton("torch.mm", &c).unwrap().qualified, "aten::mm");
        // Without a fact, the most arguments win: the `dtype` overload.
        assert_eq!(skeleton("torch.addmm", &catalog()).unwrap().qualified, "aten::addmm.dtype");
        // An operator with no CPU overload still gets a skeleton, which says so.
        let s = skeleton("aten::_cudnn_rnn", &c).unwrap();
        assert!(s.text.contains("No CPU kernel"), "{}", s.text);
    }

    #[test]
    fn names_in_every_spelling() {
        let c = catalog();
        assert_eq!(skeleton("aten::linalg_inv", &c).unwrap().api, "torch.linalg.inv");
        assert_eq!(skeleton("exp", &c).unwrap().qualified, "aten::exp");
        // The parameters alone pick add.Scalar: no attribute needed.
        let s = skeleton("aten::add.Scalar", &c).unwrap();
        assert!(s.text.contains("api torch.add(input: Tensor, other: Scalar, alpha: Scalar = 1)") && !s.text.contains("#[aten"), "{}", s.text);
        // A named overload is the one the skeleton binds to, attribute or not.
        for q in ["aten::std.correction", "aten::std.dim", "aten::pow.Tensor_Scalar", "aten::softmax.int"] {
            assert_eq!(skeleton(q, &c).unwrap().qualified, q);
        }
        assert_eq!(skeleton("torch.add", &c).unwrap().qualified, "aten::add.Tensor");
        let conv = skeleton("torch.conv2d", &c).unwrap();
        assert!(conv.text.contains("stride: int[2] = [1, 1]"), "{}", conv.text);
    }

    #[test]
    fn unknown_names_get_the_closest() {
        let e = skeleton("torch.sofmax", &catalog()).unwrap_err();
        assert!(matches!(&e, InitError::Unknown { suggestions, .. } if suggestions.first().map(String::as_str) == Some("torch.softmax")), "{e}");
        let e = skeleton("torch.ops.aten.sofmax", &catalog()).unwrap_err();
        assert!(matches!(&e, InitError::Unknown { suggestions, .. } if suggestions.first().map(String::as_str) == Some("torch.ops.aten.softmax")), "{e}");
        let e = skeleton("torch.ops.aten.sum.nope", &catalog()).unwrap_err();
        assert!(e.to_string().contains("`aten::sum` has no overload `nope` (it has default, ") && e.to_string().contains("dim_IntList"), "{e}");
    }

    #[test]
    fn in_place_out_only_and_list_operators_get_skeletons() {
        let c = catalog();
        assert_eq!(skeleton("aten::abs_", &c).unwrap().qualified, "aten::abs_");
        // A functional overload still wins over the out= one.
        assert_eq!(skeleton("torch.ops.aten.add", &c).unwrap().qualified, "aten::add.Tensor");
        let out = skeleton("torch.ops.aten.add.out", &c).unwrap();
        let flat: String = out.text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains("*, alpha: Scalar = 1, out: Tensor, ) -> Tensor"), "{flat}");
        assert!(skeleton("torch.ops.aten.cat", &c).unwrap().text.contains("tensors: Tensor[]"));
        // `Generator? generator` is left to None, `Device device` to the worker's CPU.
        assert!(!skeleton("aten::bernoulli", &c).unwrap().text.contains("generator:"));
        assert!(!skeleton("aten::_resize_output", &c).unwrap().text.contains("device:"));
    }

    #[test]
    fn nearly_every_operator_gets_a_skeleton() {
        let c = catalog();
        let ops: Vec<&str> = c.names().into_iter().filter(|n| n.starts_with("aten::")).collect();
        let refused: Vec<String> = ops.iter().filter_map(|op| skeleton(op, &c).err()).map(|e| e.to_string()).collect();
        assert_eq!(ops.len(), 1588);
        // Left: a `Stream` (record_stream) and a `Layout` without default.
        assert!(refused.len() <= 2, "{refused:#?}");
    }

    #[test]
    fn backward_operators_are_fed_by_their_forward() {
        let c = catalog();
        let wired = |name: &str| wire(&skeleton(name, &c).unwrap(), &c).map(|w| (w.forward.qualified, w.backward.text.split_whitespace().collect::<Vec<_>>().join(" ")));
        let (forward, text) = wired("aten::max_pool2d_with_indices_backward").expect("wired");
        assert_eq!(forward, "aten::max_pool2d_with_indices");
        assert!(text.contains("grad_output: like(result.0); indices: result.1; }"), "{text}");
        let (forward, text) = wired("aten::native_batch_norm_backward").expect("wired");
        assert_eq!(forward, "aten::native_batch_norm");
        assert!(text.contains("training = train, momentum = 0.1, eps = eps, ) { grad_out: like(result.0); save_mean: result.1; save_invstd: result.2; }"), "{text}");
        // The loss's total weight is an output of `nll_loss_forward`, not of `nll_loss`.
        let (forward, text) = wired("aten::nll_loss_backward").expect("wired");
        assert_eq!(forward, "aten::nll_loss_forward");
        assert!(text.contains("total_weight: result.1;"), "{text}");
        // A forward input known by its size, and an embedding table by its row count.
        let (_, text) = wired("aten::upsample_nearest2d_backward").expect("wired");
        assert!(text.contains("input = like(grad_output, input_size)"), "{text}");
        let (forward, text) = wired("aten::embedding_dense_backward").expect("wired");
        assert_eq!(forward, "aten::embedding");
        assert!(text.contains("weight = like(grad_output, [num_weights, 8])"), "{text}");
        // A forward input the backward knows only by what the forward made of it: built as
        // that parameter is, so `tanh_backward`'s output is one tanh can produce.
        let (forward, text) = wired("aten::tanh_backward").expect("wired");
        assert_eq!(forward, "aten::tanh");
        assert!(text.contains("from torch.tanh(input = like(output)) { grad_output: like(result); output: result; }"), "{text}");
        assert!(wired("aten::exp").is_none(), "not a backward");
        let backwards: Vec<&str> = c.names().into_iter().filter(|n| n.ends_with("_backward")).collect();
        assert_eq!(backwards.len(), 143);
        let count = backwards.iter().filter(|n| skeleton(n, &c).ok().and_then(|s| wire(&s, &c)).is_some()).count();
        assert!(count >= 100, "{count} of 143 wired");
    }

    #[test]
    fn most_public_operators_get_a_skeleton() {
        let c = catalog();
        let ops = public_ops(&c);
        let ok = ops.iter().filter(|op| skeleton(op, &c).is_ok()).count();
        assert!(ok * 10 >= ops.len() * 8, "{ok} of {}", ops.len());
    }
}
