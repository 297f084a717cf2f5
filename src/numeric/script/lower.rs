//! A trace lowered to the text of a `program`: each recorded call the op table can express
//! becomes a `let`; any other call becomes the ATen operators it ran (`torch.ops.aten.X.Y(..)`,
//! replayed by schema like `sfz fuzz`'s cases); a tensor made outside the traced region, by a
//! factory or a sampler, or by a call neither can express, becomes a parameter with the dtype
//! and shape seen and a value range around the one seen (a weight: the range training can give
//! it), so that the rest of the chain is hunted without that call. The text is written
//! beside the findings and checked like any spec, so the user can edit it and re-run it.
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value as Json;

use super::trace::{AtenOp, Trace, TracedOp, TracedValue};
use crate::wire::case::DType;
use crate::wire::program::ops::{self, Kind, NumOp, OpSig};

/// How far a float input's range reaches beyond what the script showed: the hunt searches
/// `[-m*WIDEN, m*WIDEN]` (or `[0, m*WIDEN]` when every value seen was non-negative), with `m`
/// the largest magnitude seen (at least 1); values seen within [0, 1] stay in [0, 1], and a
/// tensor holding one value throughout stays that constant, unless it is a trainable weight
/// (always `[-m*WIDEN, m*WIDEN]`).
pub const WIDEN: f64 = 10.0;

/// Where a call was made in the user's script.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Site {
    pub file: String,
    pub line: u32,
    /// The line's source text.
    pub code: String,
    /// The torch function called (`torch.log`).
    pub func: String,
}

/// A recorded call the program does not replay; its outputs became parameters.
#[derive(Clone, Debug, Serialize)]
pub struct Skipped {
    pub site: Site,
    pub reason: String,
    /// A factory or a sampler: its values are the hunt's to choose, not a gap in the replay.
    pub input: bool,
}

/// Why a call is not replayed.
enum Cut {
    /// It makes values from nothing (a factory, a sampler).
    Input(String),
    Unreplayable(String),
}

impl From<String> for Cut {
    fn from(s: String) -> Cut {
        Cut::Unreplayable(s)
    }
}

impl From<&str> for Cut {
    fn from(s: &str) -> Cut {
        Cut::Unreplayable(s.to_string())
    }
}

/// The lowered program and what maps it back to the script.
#[derive(Clone, Debug)]
pub struct Lowered {
    pub name: String,
    /// The `.sfz` text.
    pub text: String,
    /// Per `let` name: the call it replays.
    pub lets: BTreeMap<String, Site>,
    /// Per parameter name: the call that made the tensor (None: made before the traced region).
    pub params: BTreeMap<String, Option<Site>>,
    pub skipped: Vec<Skipped>,
    /// The largest parameter's element count (the solver's bound for this program).
    pub max_numel: i64,
    /// The largest dimension of a parameter.
    pub max_dim: i64,
    /// How many calls the trace recorded.
    pub traced: usize,
    /// Per parameter name: what the script made it as.
    pub origins: BTreeMap<String, Origin>,
}

/// What a parameter of the lowered program was in the script.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Origin {
    /// A weight (a leaf that requires grad), which training moves.
    pub weight: bool,
    /// The script's name for it (`model.fc.weight`), when the tracer found one.
    pub name: Option<String>,
    /// The largest magnitude the script showed.
    pub seen: f64,
    /// Held as data (`--fix`): the range the script showed, not searched.
    pub fixed: bool,
}

fn site(op: &TracedOp) -> Site {
    Site { file: op.file.clone().unwrap_or_else(|| "<torch>".into()), line: op.line, code: op.code.clone(), func: op.func.clone() }
}

/// The table entry a recorded function names, and whether its two operands are swapped
/// (`Tensor.__rsub__(x, 1)` is `1 - x`).
pub fn resolve(func: &str) -> Option<(&'static OpSig, bool)> {
    let Some(method) = func.strip_prefix("Tensor.") else {
        let f = match func {
            "torch.true_divide" => "torch.div",
            "torch.subtract" => "torch.sub",
            "torch.multiply" => "torch.mul",
            "torch.negative" => "torch.neg",
            "torch.special.expm1" => "torch.expm1",
            "torch.special.log1p" => "torch.log1p",
            "torch.special.logsumexp" => "torch.logsumexp",
            "torch.special.softmax" => "torch.softmax",
            "torch.special.log_softmax" => "torch.log_softmax",
            f => f,
        };
        return ops::by_function(f).map(|s| (s, false));
    };
    let (name, swap) = match method {
        "__add__" | "__iadd__" => ("add", false),
        "__radd__" => ("add", true),
        "__sub__" | "__isub__" => ("sub", false),
        "__rsub__" => ("sub", true),
        "__mul__" | "__imul__" => ("mul", false),
        "__rmul__" => ("mul", true),
        "__truediv__" | "__itruediv__" | "__div__" | "true_divide" | "true_divide_" => ("div", false),
        "__rtruediv__" | "__rdiv__" => ("div", true),
        "__pow__" | "__ipow__" => ("pow", false),
        "__neg__" | "negative" => ("neg", false),
        "__abs__" => ("abs", false),
        "__matmul__" => ("matmul", false),
        "clip" | "clip_" => ("clamp", false),
        "subtract" => ("sub", false),
        "multiply" => ("mul", false),
        // An in-place method computes what its out-of-place twin does.
        m => (m.strip_suffix('_').unwrap_or(m), false),
    };
    ops::by_method(name).map(|s| (s, swap))
}

/// ATen operators that return their input's values as they are (autograd's saved copies, the
/// lifting of constants): a replay reads the input.
const IDENTITY: &[&str] = &["aten::detach", "aten::alias", "aten::lift_fresh", "aten::lift", "aten::lift_fresh_copy", "aten::clone"];

/// Whether a recorded argument holds a tensor.
fn has_tensor(a: &Json) -> bool {
    a.get("t").is_some() || a.get("list").and_then(Json::as_array).is_some_and(|xs| xs.iter().any(has_tensor))
}

/// Keyword arguments sfz's table does not name but that change nothing when left at these values.
fn harmless(name: &str, v: &Json) -> bool {
    matches!(name, "_stacklevel") || (v.is_null() && matches!(name, "dtype" | "out" | "layout" | "device" | "memory_format"))
}

/// Lowers a trace. Never fails: a trace with no expressible call gives a program without
/// `let`s, which the caller reports.
/// Inputs named in `fixed` (the script's names, `sfz hunt --fix`) are held as data: to the
/// values' range the script gave them, never widened, never moved by the search.
pub fn lower(trace: &Trace, name: &str, fixed: &BTreeSet<String>) -> Lowered {
    lower_cutting(trace, name, &BTreeMap::new(), fixed)
}

/// `lower`, where the ATen operators that made the values in `cut` are not replayed (libtorch
/// rejected them as replayed; the reason is the value's): their outputs are parameters.
pub fn lower_cutting(trace: &Trace, name: &str, cut: &BTreeMap<u32, String>, fixed: &BTreeSet<String>) -> Lowered {
    let mut l = Lowering {
        trace,
        cut,
        fixed,
        lets: BTreeMap::new(),
        params: BTreeMap::new(),
        param_text: String::new(),
        body: String::new(),
        bound: BTreeMap::new(),
        max_numel: 1,
        max_dim: 8,
        skipped: Vec::new(),
        order: Vec::new(),
        origins: BTreeMap::new(),
    };
    for op in &trace.ops {
        match l.call(op) {
            Ok(()) => {}
            Err(Cut::Input(reason)) => l.skipped.push(Skipped { site: site(op), reason, input: true }),
            Err(Cut::Unreplayable(reason)) => l.skipped.push(Skipped { site: site(op), reason, input: false }),
        }
    }
    let params: Vec<String> = l.order.iter().map(|p| format!("{p}: Tensor")).collect();
    let mut text = String::new();
    let _ = writeln!(text, "// Traced by `sfz hunt` from {}; edit it and run `sfz hunt` on this file.", trace.script.display());
    if !l.skipped.is_empty() {
        let _ = writeln!(text, "// Calls the program cannot replay (their outputs are parameters):");
        for s in &l.skipped {
            let _ = writeln!(text, "//   {}:{} {} ({})", s.site.file, s.site.line, s.site.func, s.reason);
        }
    }
    let held: Vec<String> = l.order.iter().filter(|p| l.origins[*p].fixed).map(|p| format!("{p} ({})", l.origins[p].name.as_deref().unwrap_or("?"))).collect();
    if !held.is_empty() {
        let _ = writeln!(text, "// Held as data (--fix): {}; the hunt never moves them.", held.join(", "));
    }
    let _ = writeln!(text, "program {name}({}) {{", params.join(", "));
    text.push_str(&l.param_text);
    text.push_str(&l.body);
    text.push_str("}\n");
    Lowered {
        name: name.to_string(),
        text,
        lets: l.lets,
        params: l.params,
        skipped: l.skipped,
        max_numel: l.max_numel,
        max_dim: l.max_dim,
        traced: trace.ops.len(),
        origins: l.origins,
    }
}

struct Lowering<'a> {
    trace: &'a Trace,
    cut: &'a BTreeMap<u32, String>,
    fixed: &'a BTreeSet<String>,
    lets: BTreeMap<String, Site>,
    params: BTreeMap<String, Option<Site>>,
    param_text: String,
    body: String,
    /// Value index → its name in the program (a `let` or a parameter).
    bound: BTreeMap<u32, String>,
    max_numel: i64,
    max_dim: i64,
    skipped: Vec<Skipped>,
    order: Vec<String>,
    origins: BTreeMap<String, Origin>,
}

impl Lowering<'_> {
    /// The name of tensor `v` in the program, making it a parameter on first use.
    fn tensor(&mut self, v: u32) -> Result<String, String> {
        if let Some(n) = self.bound.get(&v) {
            return Ok(n.clone());
        }
        let value = self.trace.values.get(v as usize).ok_or("a tensor the trace does not describe")?;
        let dtype = DType::from_name(&value.dtype).ok_or_else(|| format!("a {} tensor", value.dtype))?;
        let name = format!("x{v}");
        let made_by = value.op.and_then(|k| self.trace.ops.get(k as usize)).map(site);
        let fixed = value.name.as_ref().is_some_and(|n| self.fixed.contains(n));
        self.param_text.push_str(&constraints(&name, dtype, value, fixed));
        self.max_numel = self.max_numel.max(value.shape.iter().product::<i64>().max(1));
        self.max_dim = self.max_dim.max(value.shape.iter().copied().max().unwrap_or(1));
        self.params.insert(name.clone(), made_by);
        let seen = value.min.unwrap_or(0.0).abs().max(value.max.unwrap_or(0.0).abs());
        self.origins.insert(name.clone(), Origin { weight: value.trainable, name: value.name.clone(), seen, fixed });
        self.order.push(name.clone());
        self.bound.insert(v, name.clone());
        Ok(name)
    }

    fn call(&mut self, op: &TracedOp) -> Result<(), Cut> {
        let Some(Some(out)) = op.outputs.first() else { return Err("no tensor output".into()) };
        if let Some(expr) = self.reshaping(op, *out)? {
            self.emit(op, *out, expr);
            return Ok(());
        }
        match self.table_call(op, *out) {
            Ok(()) => Ok(()),
            // The ATen operators' reason is the last word, but when none was recorded.
            Err(table) => self.aten_calls(op).map_err(|aten| if op.aten.is_empty() { Cut::Unreplayable(table) } else { aten }),
        }
    }

    /// The call as the ATen operators it ran. A factory or a sampler is not replayed: its
    /// values are the hunt's to choose. None of them replayable → why not.
    fn aten_calls(&mut self, op: &TracedOp) -> Result<(), Cut> {
        if op.aten.is_empty() {
            return Err("no ATen operator recorded".into());
        }
        if !op.args.iter().chain(op.kwargs.values()).any(has_tensor) {
            return Err(Cut::Input("a factory: its values are inputs of the hunt".into()));
        }
        if op.aten.iter().any(|a| a.error) {
            return Err("the tracer could not record its ATen operators".into());
        }
        let mut emitted = 0;
        let mut why = Vec::new();
        for a in &op.aten {
            // A sampler's, a factory's (`scalar_tensor` of a constant, `zeros`) or uninitialised
            // memory's values are parameters, held to what the trace saw.
            let factory = !a.args.iter().any(has_tensor);
            if a.random || factory || a.name.starts_with("aten::empty") || a.name.starts_with("aten::new_empty") {
                continue;
            }
            if IDENTITY.contains(&a.name.as_str()) {
                if let (Some(Some(o)), Some(src)) = (a.outputs.first(), a.args.first().and_then(|x| x.get("t")).and_then(Json::as_u64)) {
                    let name = self.tensor(src as u32)?;
                    self.bound.insert(*o, name);
                }
                continue;
            }
            if let Some(reason) = a.outputs.iter().flatten().find_map(|o| self.cut.get(o)) {
                why.push(format!("{}: {reason}", a.name));
                continue;
            }
            match self.aten_call(op, a) {
                Ok(n) => emitted += n,
                Err(e) => why.push(format!("{}: {e}", a.name)),
            }
        }
        match emitted {
            0 if why.is_empty() => Err(Cut::Input("a sampler or a factory: its values are inputs of the hunt".into())),
            0 => Err(Cut::Unreplayable(why.join("; "))),
            _ => {
                for w in why {
                    self.skipped.push(Skipped { site: site(op), reason: w, input: false });
                }
                Ok(())
            }
        }
    }

    /// One ATen operator: a `let` per tensor output it has. How many.
    fn aten_call(&mut self, op: &TracedOp, a: &AtenOp) -> Result<usize, String> {
        if let Some(why) = &a.unreplayable {
            return Err(why.clone());
        }
        if !a.name.starts_with("aten::") {
            // A custom operator the script registers is not in a worker's registry.
            return Err(format!("an operator outside the aten namespace (`{}`)", a.name));
        }
        let mut texts = Vec::with_capacity(a.args.len());
        for arg in &a.args {
            texts.push(self.aten_operand(arg)?);
        }
        // A unary operator of the table (`aten::log` under a call the table does not know) is
        // written as the table's, whose objective the search can aim at.
        let bare = a.name.strip_prefix("aten::").unwrap_or(&a.name);
        if let (Some(sig), [x], [Some(o)]) = (ops::by_method(bare), texts.as_slice(), a.outputs.as_slice()) {
            if sig.params.len() == 1 && a.overload.is_empty() && !sig.functions.is_empty() {
                let expr = format!("{}({x})", sig.functions[0]);
                self.emit(op, *o, expr);
                return Ok(1);
            }
        }
        let call = crate::wire::program::ir::AtenCall { name: a.name.clone(), overload: a.overload.clone(), output: 0, keywords: a.keywords.clone() };
        // Keyword-only arguments by name, as Python passes them.
        let head = format!("{}({})", call.python(), call.arguments(&texts, " = ").join(", "));
        let mut n = 0;
        for (k, o) in a.outputs.iter().enumerate() {
            let Some(o) = o else { continue };
            let expr = if a.outputs.len() > 1 { format!("{head}[{k}]") } else { head.clone() };
            self.emit(op, *o, expr);
            n += 1;
        }
        Ok(n)
    }

    /// An ATen argument as program text (what the tracer wrote; trusted to fit the schema,
    /// which the worker checks when it calls the operator).
    fn aten_operand(&mut self, a: &Json) -> Result<String, String> {
        if let Some(v) = a.get("t").and_then(Json::as_u64) {
            return self.tensor(v as u32);
        }
        if let Some(xs) = a.get("ints").and_then(Json::as_array) {
            return Ok(format!("[{}]", xs.iter().filter_map(Json::as_i64).map(int).collect::<Vec<_>>().join(", ")));
        }
        if let Some(xs) = a.get("list").and_then(Json::as_array) {
            let mut names = Vec::new();
            for x in xs {
                // None in a `Tensor?[]` (`index` of `x[:, i]`).
                if x.is_null() {
                    names.push("None".to_string());
                    continue;
                }
                let v = x.get("t").and_then(Json::as_u64).ok_or("a list that holds other than tensors and None")?;
                names.push(self.tensor(v as u32)?);
            }
            return Ok(format!("[{}]", names.join(", ")));
        }
        if let Some(d) = a.get("dtype").and_then(Json::as_str) {
            return DType::from_name(d).map(|d| d.name().to_string()).ok_or_else(|| format!("a {d} dtype"));
        }
        match a {
            Json::Null => Ok("None".into()),
            Json::Bool(b) => Ok(b.to_string()),
            Json::Number(n) => number(n).ok_or_else(|| "a non-finite number".into()),
            Json::String(s) => Ok(crate::syntax::quote(s)),
            // A device, layout or memory format where None means the same (CPU, strided).
            _ if a.get("other").is_some() => Ok("None".into()),
            _ => Err("an argument a program cannot hold".into()),
        }
    }

    /// The call through the op table.
    fn table_call(&mut self, op: &TracedOp, out: u32) -> Result<(), String> {
        let (sig, swap) = resolve(&op.func).ok_or("not in the op table")?;
        let mut args: Vec<Json> = op.args.clone();
        if swap && args.len() == 2 {
            args.swap(0, 1);
        }
        let (zero, one, two) = (Json::from(0), Json::from(1), Json::from(2.0));
        // Arguments in the table's order: positional first, then by keyword.
        let mut bound: Vec<Option<&Json>> = vec![None; sig.params.len()];
        for (k, a) in args.iter().enumerate() {
            *bound.get_mut(k).ok_or("more arguments than the table knows")? = Some(a);
        }
        for (k, v) in &op.kwargs {
            let key = match k.as_str() {
                "ord" => "p",
                "self" => "input",
                "unbiased" => {
                    // `var(unbiased=False)` is `correction=0`.
                    let unbiased = if v.as_bool() == Some(false) { &zero } else { &one };
                    if let Some(i) = sig.params.iter().position(|p| p.0 == "correction") {
                        bound[i] = Some(unbiased);
                        continue;
                    }
                    return Err("an argument `unbiased` the table does not know".into());
                }
                k => k,
            };
            match sig.params.iter().position(|p| p.0 == key) {
                // `norm(p="fro")` of a vector is its 2-norm.
                Some(i) if key == "p" && v.as_str() == Some("fro") => bound[i] = Some(&two),
                Some(i) => bound[i] = Some(v),
                None if harmless(key, v) => {}
                None => return Err(format!("an argument `{k}` the table does not know")),
            }
        }
        if !bound.iter().flatten().any(|a| a.get("t").is_some()) {
            return Err("no tensor operand".into());
        }
        let mut texts = Vec::new();
        for (param, arg) in sig.params.iter().zip(&bound) {
            match arg {
                Some(a) => texts.push((param.0, self.operand(param.1, a)?)),
                None if param.2.is_none() => return Err(format!("no `{}` argument", param.0)),
                None => {}
            }
        }
        let expr = match sig.op {
            NumOp::Add | NumOp::Sub | NumOp::Mul | NumOp::Div if texts.len() == 2 => {
                let sym = match sig.op {
                    NumOp::Add => "+",
                    NumOp::Sub => "-",
                    NumOp::Mul => "*",
                    _ => "/",
                };
                format!("{} {sym} {}", texts[0].1, texts[1].1)
            }
            NumOp::To => format!("{}.to({})", texts[0].1, texts.get(1).map(|t| t.1.as_str()).unwrap_or("")),
            _ => {
                let mut parts = vec![texts[0].1.clone()];
                parts.extend(texts[1..].iter().map(|(n, t)| format!("{n} = {t}")));
                format!("{}({})", sig.functions[0], parts.join(", "))
            }
        };
        self.emit(op, out, expr);
        Ok(())
    }

    fn emit(&mut self, op: &TracedOp, out: u32, expr: String) {
        let name = let_name(out);
        let s = site(op);
        let _ = writeln!(self.body, "    // {}:{}  {}", short(&s.file), s.line, s.code);
        let _ = writeln!(self.body, "    let {name} = {expr};");
        self.lets.insert(name.clone(), s);
        // An in-place call's tensor is the same object: later reads see this value.
        self.bound.insert(out, name);
    }

    /// Calls that only move or relabel values (views, copies, dtype casts): a reshape to the
    /// output's shape, a transpose, or a cast. None for any other call.
    fn reshaping(&mut self, op: &TracedOp, out: u32) -> Result<Option<String>, String> {
        const VIEWS: &[&str] = &["squeeze", "unsqueeze", "view", "reshape", "flatten", "view_as", "reshape_as", "contiguous", "clone", "detach", "squeeze_", "unsqueeze_"];
        let method = op.func.strip_prefix("Tensor.").or_else(|| op.func.strip_prefix("torch."));
        let Some(m) = method else { return Ok(None) };
        let source = || op.args.first().and_then(|a| a.get("t")).and_then(Json::as_u64).map(|v| v as u32);
        let cast = match m {
            "float" => Some(DType::Float32),
            "double" => Some(DType::Float64),
            "half" => Some(DType::Float16),
            "bfloat16" => Some(DType::BFloat16),
            _ => None,
        };
        if let Some(d) = cast {
            let Some(src) = source() else { return Ok(None) };
            return Ok(Some(format!("{}.to({})", self.tensor(src)?, d.name())));
        }
        if matches!(m, "t" | "T" | "mT") || (m == "transpose" && op.args.len() == 3) {
            let Some(src) = source() else { return Ok(None) };
            let (a, b) = if m == "transpose" { (op.args[1].as_i64().ok_or("a dimension")?, op.args[2].as_i64().ok_or("a dimension")?) } else { (-2, -1) };
            let (a, b) = if m == "t" || m == "T" { (0, 1.min(self.trace.values[src as usize].shape.len() as i64 - 1).max(0)) } else { (a, b) };
            return Ok(Some(format!("torch.transpose({}, dim0 = {}, dim1 = {})", self.tensor(src)?, int(a), int(b))));
        }
        if !VIEWS.contains(&m) {
            return Ok(None);
        }
        let Some(src) = source() else { return Ok(None) };
        let shape = &self.trace.values.get(out as usize).ok_or("an output the trace does not describe")?.shape;
        let dims: Vec<String> = shape.iter().map(|d| int(*d)).collect();
        let input = self.tensor(src)?;
        Ok(Some(format!("torch.reshape({input}, shape = [{}])", dims.join(", "))))
    }

    fn operand(&mut self, kind: Kind, a: &Json) -> Result<String, String> {
        let wrong = || format!("an argument the table takes as {}", kind.describe());
        if let Some(v) = a.get("t").and_then(Json::as_u64) {
            return match kind {
                Kind::Tensor | Kind::Number | Kind::OptTensor => self.tensor(v as u32),
                _ => Err(wrong()),
            };
        }
        match (kind, a) {
            (Kind::Number | Kind::Float | Kind::OptFloat, Json::Number(n)) => number(n).ok_or_else(wrong),
            (Kind::Int | Kind::Dims, Json::Number(n)) if n.is_i64() => Ok(int(n.as_i64().unwrap_or(0))),
            (Kind::Dims | Kind::OptFloat | Kind::OptTensor, Json::Null) => Ok("None".into()),
            (Kind::Dims, _) if a.get("ints").is_some() => {
                let xs: Vec<String> = a["ints"].as_array().into_iter().flatten().filter_map(Json::as_i64).map(int).collect();
                Ok(format!("[{}]", xs.join(", ")))
            }
            (Kind::Bool, Json::Bool(b)) => Ok(b.to_string()),
            (Kind::Dtype, _) => a.get("dtype").and_then(Json::as_str).and_then(DType::from_name).map(|d| d.name().to_string()).ok_or_else(wrong),
            _ => Err(wrong()),
        }
    }
}

/// The `let` that holds trace value `v`: `v7`. The checker names its intermediates `v7.1`, ...
fn let_name(v: u32) -> String {
    format!("v{v}")
}

/// The `let` a program step belongs to (`v7.2` is an intermediate of `v7`).
pub fn let_of(step: &str) -> &str {
    step.split('.').next().unwrap_or(step)
}

/// The trace value a program step computes (part of): 7 for `v7` and `v7.2`.
pub fn traced_value(step: &str) -> Option<u32> {
    let_of(step).strip_prefix('v')?.parse().ok()
}

fn int(i: i64) -> String {
    if i < 0 {
        format!("({i})")
    } else {
        i.to_string()
    }
}

fn number(n: &serde_json::Number) -> Option<String> {
    if let Some(i) = n.as_i64() {
        return Some(int(i));
    }
    let f = n.as_f64()?;
    if !f.is_finite() {
        return None;
    }
    let s = format!("{f:?}");
    Some(if f < 0.0 { format!("({s})") } else { s })
}

fn float(f: f64) -> String {
    let s = format!("{f:?}");
    if f < 0.0 {
        format!("({s})")
    } else {
        s
    }
}

/// The largest finite value of a float dtype: a widened range stays representable.
fn finite_max(dtype: DType) -> f64 {
    match dtype {
        DType::Float16 => 65504.0,
        DType::Float32 | DType::BFloat16 => f32::MAX as f64,
        _ => f64::MAX,
    }
}

/// The file name alone, for comments.
fn short(file: &str) -> &str {
    file.rsplit('/').next().unwrap_or(file)
}

/// A parameter's constraints: dtype and shape as seen, values around those seen.
fn constraints(name: &str, dtype: DType, v: &TracedValue, fixed: bool) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "    {name}.dtype == {};", dtype.name());
    let _ = writeln!(s, "    {name}.ndim == {};", v.shape.len());
    for (d, n) in v.shape.iter().enumerate() {
        let _ = writeln!(s, "    {name}.shape[{d}] == {n};");
    }
    if let (Some(lo), Some(hi)) = (v.min, v.max) {
        if dtype.is_floating() {
            // A weight is what training moves: any sign, up to WIDEN times its initial scale
            // (at least ±WIDEN: a zero-initialised bias grows too). A tensor of one value is
            // otherwise a constant of the script (a mask value, an eps), not data; values seen
            // within [0, 1] (probabilities, masks, uniform samples) keep that domain. Data the
            // user holds keeps the range seen.
            let (lo, hi) = if fixed {
                (lo, hi)
            } else if v.trainable {
                let m = (lo.abs().max(hi.abs()).max(1.0) * WIDEN).ceil().min(finite_max(dtype));
                (-m, m)
            } else if lo == hi && v.nan == 0 && v.inf == 0 {
                (lo, hi)
            } else if lo >= 0.0 && hi <= 1.0 {
                (0.0, 1.0)
            } else {
                let m = (lo.abs().max(hi.abs()).max(1.0) * WIDEN).ceil().min(finite_max(dtype));
                (if lo >= 0.0 { 0.0 } else { -m }, m)
            };
            let _ = writeln!(s, "    {name}.values in {}..{};", float(lo), float(hi));
        } else if dtype != DType::Bool {
            // Integers (indices, labels) keep the range seen: other values may not be valid.
            let _ = writeln!(s, "    {name}.values in {}..={};", int(lo as i64), int(hi as i64));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A trace as the tracer writes it: `x = rand(2, 3)` (outside), `p = 1 - x` (reflected),
    /// an in-place add, a squeeze, an indexing the table cannot express, a log of it, a
    /// `norm(p="fro")`, and a constant.
    const TRACE: &str = r#"{
      "script": "/w/s.py", "status": "ok", "error": null, "marked": true, "ended": true,
      "values": [
        {"dtype": "float32", "shape": [2, 3], "min": 0.1, "max": 0.9, "op": null},
        {"dtype": "float32", "shape": [2, 3], "min": 0.1, "max": 0.9, "op": 0},
        {"dtype": "float32", "shape": [2, 3], "min": 1.1, "max": 1.9, "op": 1},
        {"dtype": "float32", "shape": [1, 6], "min": 1.1, "max": 1.9, "op": 2},
        {"dtype": "float32", "shape": [6], "min": -3.0, "max": 2.5, "op": 3},
        {"dtype": "float32", "shape": [6], "min": 0.0, "max": 1.0, "op": 4},
        {"dtype": "float32", "shape": [], "min": 2.0, "max": 2.0, "op": 5},
        {"dtype": "float16", "shape": [2], "min": -65504.0, "max": -65504.0, "op": null},
        {"dtype": "float16", "shape": [2], "min": -30000.0, "max": 100.0, "op": null, "name": "s"},
        {"dtype": "float16", "shape": [2], "min": -65504.0, "max": -29900.0, "op": 6}
      ],
      "ops": [
        {"func": "Tensor.__rsub__", "args": [{"t": 0}, 1], "kwargs": {}, "file": "/w/s.py", "line": 4, "code": "p = 1 - x", "outputs": [1]},
        {"func": "Tensor.add_", "args": [{"t": 1}, 1.0], "kwargs": {}, "file": "/w/s.py", "line": 5, "code": "p += 1.0", "outputs": [2]},
        {"func": "Tensor.view", "args": [{"t": 2}, 1, 6], "kwargs": {}, "file": "/w/s.py", "line": 6, "code": "q = p.view(1, 6)", "outputs": [3]},
        {"func": "Tensor.__getitem__", "args": [{"t": 3}, 0], "kwargs": {}, "file": "/w/s.py", "line": 7, "code": "r = q[0]", "outputs": [4]},
        {"func": "torch.log", "args": [{"t": 4}], "kwargs": {}, "file": "/w/s.py", "line": 8, "code": "l = torch.log(r)", "outputs": [5]},
        {"func": "Tensor.norm", "args": [{"t": 5}], "kwargs": {"p": "fro", "dim": null, "keepdim": false, "dtype": null}, "file": "/w/s.py", "line": 9, "code": "n = l.norm()", "outputs": [6]},
        {"func": "torch.add", "args": [{"t": 8}, {"t": 7}], "kwargs": {}, "file": "/w/s.py", "line": 10, "code": "w = s + mask", "outputs": [9]}
      ]
    }"#;

    /// `--fix s`: the input the script calls `s` keeps the range it had, and says so.
    #[test]
    fn an_input_held_as_data_keeps_the_range_the_script_gave_it() {
        let trace: Trace = serde_json::from_str(TRACE).unwrap();
        let free = lower(&trace, "traced_s", &BTreeSet::new());
        let held = lower(&trace, "traced_s", &BTreeSet::from(["s".to_string()]));
        let range = |l: &Lowered| l.text.lines().find(|t| t.contains("x8.values")).unwrap().trim().to_string();
        assert_eq!(range(&held), "x8.values in (-30000.0)..100.0;");
        assert_ne!(range(&free), range(&held), "searched inputs are widened");
        assert!(held.origins["x8"].fixed && !free.origins["x8"].fixed);
        assert!(held.text.contains("// Held as data (--fix): x8 (s)"), "{}", held.text);
    }

    #[test]
    fn a_trace_lowers_to_a_program_that_checks() {
        let trace: Trace = serde_json::from_str(TRACE).unwrap();
        let lowered = lower(&trace, "traced_s", &BTreeSet::new());
        insta::assert_snapshot!(lowered.text);
        assert_eq!(lowered.skipped.len(), 1, "only the indexing is cut");
        assert_eq!(lowered.lets["v5"].line, 8);
        assert_eq!(lowered.params["x4"].as_ref().map(|s| s.line), Some(7), "the cut value names the line that made it");
        // The text is a program the checker accepts, with one step per `let`.
        let checked = crate::check::check_text(std::path::Path::new("traced.sfz"), &lowered.text);
        assert!(!checked.has_errors(), "{:?}", checked.diags);
        let program = checked.spec.programs.iter().find(|p| p.name == "traced_s").expect("the program");
        assert!(program.runnable);
        let names: Vec<&str> = program.ir.steps.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["v1", "v2", "v3", "v5", "v6", "v9"]);
    }

    /// `z = x @ w.T + b` with `b = zeros(3, requires_grad=True)`, then `F.cross_entropy(z, y)`,
    /// which the table cannot express: it replays as the ATen operators it ran (autograd's
    /// `detach` read through, `nll_loss_forward`'s two outputs indexed); a sampler inside a
    /// call is not replayed.
    const TRAINING: &str = r#"{
      "script": "/w/t.py", "status": "ok", "error": null, "backward": true,
      "values": [
        {"dtype": "float32", "shape": [4, 2], "min": -2.0, "max": 2.0, "op": null},
        {"dtype": "float32", "shape": [3, 2], "min": -0.5, "max": 0.5, "op": null, "trainable": true},
        {"dtype": "float32", "shape": [3], "min": 0.0, "max": 0.0, "op": null, "trainable": true},
        {"dtype": "float32", "shape": [4, 3], "min": -1.0, "max": 1.0, "op": 0},
        {"dtype": "int64", "shape": [4], "min": 0.0, "max": 2.0, "op": null},
        {"dtype": "float32", "shape": [4, 3], "min": -3.0, "max": -0.1, "op": 1},
        {"dtype": "float32", "shape": [4, 3], "min": -3.0, "max": -0.1, "op": 1},
        {"dtype": "float32", "shape": [], "min": 1.2, "max": 1.2, "op": 1},
        {"dtype": "float32", "shape": [], "min": 4.0, "max": 4.0, "op": 1},
        {"dtype": "float32", "shape": [4, 3], "min": -1.0, "max": 1.0, "op": 2},
        {"dtype": "float32", "shape": [4, 3], "min": 0.0, "max": 1.5, "op": 2}
      ],
      "ops": [
        {"func": "torch.nn.functional.linear", "args": [{"t": 0}, {"t": 1}, {"t": 2}], "kwargs": {}, "file": "/w/t.py", "line": 9, "code": "z = model(x)", "outputs": [3]},
        {"func": "torch.nn.functional.cross_entropy", "args": [{"t": 3}, {"t": 4}], "kwargs": {"reduction": "mean"}, "file": "/w/t.py", "line": 10, "code": "loss = F.cross_entropy(z, y)", "outputs": [7],
         "aten": [
           {"name": "aten::_log_softmax", "overload": "", "args": [{"t": 3}, 1, false], "outputs": [5]},
           {"name": "aten::detach", "overload": "", "args": [{"t": 5}], "outputs": [6]},
           {"name": "aten::nll_loss_forward", "overload": "", "args": [{"t": 6}, {"t": 4}, null, 1, -100], "outputs": [7, 8]}
         ]},
        {"func": "torch.nn.functional.dropout", "args": [{"t": 3}], "kwargs": {"p": 0.5, "training": true}, "file": "/w/t.py", "line": 11, "code": "h = F.dropout(z)", "outputs": [10],
         "aten": [
           {"name": "aten::native_dropout", "overload": "", "args": [{"t": 3}, 0.5, true], "outputs": [10, 9], "random": true}
         ]}
      ]
    }"#;

    #[test]
    fn calls_outside_the_table_replay_as_their_aten_operators_and_weights_are_variables() {
        let trace: Trace = serde_json::from_str(TRAINING).unwrap();
        let lowered = lower(&trace, "traced_t", &BTreeSet::new());
        insta::assert_snapshot!(lowered.text);
        assert!(lowered.text.contains("x2.values in (-10.0)..10.0;"), "a zero-initialised bias is a variable of the hunt");
        assert!(lowered.text.contains("torch.ops.aten.nll_loss_forward.default(v5, x4, None, 1, (-100))[0]"), "autograd's detach is read through");
        assert_eq!(lowered.skipped.len(), 1, "only the sampler is cut: {:?}", lowered.skipped);
        assert!(lowered.skipped[0].input, "a sampler's values are the hunt's to choose, not a gap");
        assert_eq!(lowered.origins["x2"], Origin { weight: true, name: None, seen: 0.0, fixed: false });
        assert!(!lowered.origins["x0"].weight);
        let checked = crate::check::check_text(std::path::Path::new("traced.sfz"), &lowered.text);
        assert!(!checked.has_errors(), "{:?}", checked.diags);
        let program = checked.spec.programs.iter().find(|p| p.name == "traced_t").expect("the program");
        let calls: Vec<(String, u32)> = program.ir.steps.iter().filter_map(|s| s.aten.as_ref().map(|a| (a.name.clone(), a.output))).collect();
        assert_eq!(calls, [("aten::_log_softmax".to_string(), 0), ("aten::nll_loss_forward".to_string(), 0), ("aten::nll_loss_forward".to_string(), 1)]);
    }

    #[test]
    fn an_aten_call_libtorch_rejects_is_cut_and_its_output_becomes_a_parameter() {
        let trace: Trace = serde_json::from_str(TRAINING).unwrap();
        let cut = BTreeMap::from([(5u32, "libtorch rejects it as replayed: no".to_string())]);
        let lowered = lower_cutting(&trace, "traced_t", &cut, &BTreeSet::new());
        assert!(!lowered.text.contains("torch.ops.aten._log_softmax"), "{}", lowered.text);
        assert!(lowered.text.contains("x5: Tensor") && lowered.text.contains("nll_loss_forward.default(x5,"), "{}", lowered.text);
        let why: Vec<&str> = lowered.skipped.iter().filter(|s| !s.input).map(|s| s.reason.as_str()).collect();
        assert_eq!(why, ["aten::_log_softmax: libtorch rejects it as replayed: no"]);
        let checked = crate::check::check_text(std::path::Path::new("traced.sfz"), &lowered.text);
        assert!(!checked.has_errors(), "{:?}", checked.diags);
    }

    #[test]
    fn reflected_and_in_place_methods_resolve_to_their_ops() {
        assert_eq!(resolve("Tensor.__rsub__").map(|(s, swap)| (s.op, swap)), Some((NumOp::Sub, true)));
        assert_eq!(resolve("Tensor.mul_").map(|(s, swap)| (s.op, swap)), Some((NumOp::Mul, false)));
        assert_eq!(resolve("torch.nn.functional.linear").map(|(s, _)| s.op), Some(NumOp::Linear));
        assert!(resolve("Tensor.__getitem__").is_none());
    }
}
