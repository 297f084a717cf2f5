//! Standalone Python reproducers, short enough to paste into a PyTorch issue: the inputs built
//! inline (a seed and one line per tensor, rebuilding exactly what the worker built: see
//! `runtime::materialize`), the one call, and a check that fails while the bug is there.
//!
//! The call goes through the public API (`torch.nn.functional.conv2d(x, w, ...)`, `x.add(y)`)
//! when the binding reaches the operator that API reaches, else through
//! `torch.ops.<ns>.<name>.<overload>(...)` with the binding's arguments in schema order.
//!
//! How a script says the bug is there, per kind of evidence (`verify` relies on it):
//! - the call itself fails: the script makes the call; a crash kills Python with the signal, an
//!   internal error propagates as the exception (non-zero exit, the message on stderr);
//! - a wrong result (NaN or inf, a violated `ensures`, a differential disagreement): an
//!   `AssertionError` (from `assert` or `torch.testing.assert_close(..., equal_nan=True)`, which
//!   decides closeness exactly as the worker did, on float64 copies);
//! - a wrong gradient: `torch.autograd.gradcheck` raises its `GradcheckError`.
//!
//! A script that runs to the end found the bug gone.
mod forward;
mod relation;

use std::fmt::Write as _;

use crate::ops::binding::{ArgSource, OpBinding, Transform};
use crate::ops::registry::{self, PyCall};
use crate::ops::schema::{self, SchemaType};
use crate::oracle::{Disagreement, Evidence};
use crate::spec::{ApiSpec, BinOp, Builtin, Prop, TExpr, UnOp, Value};
use crate::wire::case::{Arg, Case, DType, Fill, Layout, Special, TensorRecipe};
use crate::wire::variant::{flip_layout, promote_dtype, promote_dtype_args, Check, Tolerance, Variant};

/// Everything a reproducer is made from.
pub struct Reproducer<'a> {
    pub api: &'a ApiSpec,
    pub binding: &'a OpBinding,
    pub case: &'a Case,
    pub evidence: &'a Evidence,
    /// The differential check, for `Evidence::Differential`.
    pub check: Option<&'a Check>,
    /// The operator the check's variant calls, when not the API's own (out=, in-place).
    pub twin: Option<&'a OpBinding>,
    /// Opening comment lines (what was found, by which oracle).
    pub header: &'a str,
    /// For `Evidence::Call`, what the call does, as a comment on it ("dies with SIGSEGV").
    pub expect: &'a str,
    /// For `Evidence::Call`, the call on which sfz's worker died (`Finding::calls`): above 1,
    /// the script repeats the call, as the damage shows at a later free.
    pub calls: u32,
}

/// How many times a reproducer calls an API whose damage shows late, at least: Python's
/// allocations differ from the worker's, so the call that dies differs too (`linalg.eig` died on
/// the 2nd call in sfz's worker and on the 5th to 8th under Python).
const REPEAT_CALLS: u32 = 64;

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
];

impl Reproducer<'_> {
    /// The script.
    pub fn render(&self) -> String {
        let mut w = Writer { r: self, vars: vars(self.api, self.case), uses_math: false };
        let body = w.body();
        let mut out = String::new();
        for line in self.header.lines() {
            let _ = writeln!(out, "{}", format!("# {line}").trim_end());
        }
        out.push_str("# Needs torch 2.13.0 (pip install torch==2.13.0); exits with an error while the bug is there.\n");
        if w.uses_math {
            out.push_str("import math\n\n");
        }
        out.push_str("import torch\n\n");
        out.push_str("torch.set_num_threads(1)  # as in sfz's workers: reductions may round differently on more threads\n");
        if matches!(self.check.map(|c| &c.variant), Some(Variant::Cuda)) {
            out.push_str("torch.backends.cuda.matmul.allow_tf32 = False\ntorch.backends.cudnn.allow_tf32 = False\n");
        }
        out.push('\n');
        out.push_str(&inputs(self.case, self.binding, &w.vars));
        out.push('\n');
        out.push_str(&body);
        out
    }
}

/// The reproducer of a plain call (no oracle verdict to assert): the inputs and the call, with
/// `header` as opening comments. Spec findings use it: the script shows libtorch's error.
pub fn call_script(api: &ApiSpec, binding: &OpBinding, case: &Case, header: &str) -> String {
    Reproducer { api, binding, case, evidence: &Evidence::Call, check: None, twin: None, header, expect: "", calls: 1 }.render()
}

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
fn relayout(var: &str, r: &TensorRecipe, to: Layout) -> Option<String> {
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

/// The call of `api` on `case` with these argument expressions.
pub fn call(api: &ApiSpec, binding: &OpBinding, case: &Case, vars: &[String]) -> String {
    match registry::python_call(&api.name) {
        Some(form) if registry::is_public_mapping(api, binding) => public_call(api, &form, case, vars),
        _ => ops_call(binding, case, vars, &[]),
    }
}

struct Writer<'a> {
    r: &'a Reproducer<'a>,
    vars: Vec<String>,
    uses_math: bool,
}

/// How the variant's call is made, for the shared parts of differential bodies.
struct VariantCall {
    /// Lines that prepare its inputs (layout copies, out= tensors, the in-place copy).
    setup: Vec<String>,
    /// The call expression.
    call: String,
    /// The value to compare with the original's output `k`, given the name the call's value
    /// was bound to.
    value: fn(&Writer, &str, usize) -> String,
}

impl Writer<'_> {
    fn body(&mut self) -> String {
        let r = self.r;
        let call = call(r.api, r.binding, r.case, &self.vars);
        match r.evidence {
            Evidence::Call if r.calls > 1 => {
                let n = REPEAT_CALLS.max(4 * r.calls);
                let expect = if r.expect.is_empty() { String::new() } else { format!("  # {} within a few calls", r.expect) };
                format!(
                    "# One call damages the heap and may still return or raise; glibc notices at a later free\n\
                     # (sfz's worker died on call {} of this input), so the call is repeated.\n\
                     for _ in range({n}):\n    try:\n        {call}{expect}\n    except RuntimeError:\n        pass  # raising does not undo the damage\n",
                    r.calls
                )
            }
            Evidence::Call => {
                if r.expect.is_empty() {
                    format!("{call}\n")
                } else {
                    format!("{call}  # {}\n", r.expect)
                }
            }
            Evidence::NonFinite { output } => {
                let o = self.output("result", *output);
                format!("result = {call}\nassert torch.isfinite({o}).all(), \"output {output} holds NaN or inf although every input is finite\"\n")
            }
            Evidence::Postcondition { clause } => {
                let Some(c) = r.api.ensures.get(*clause) else { return format!("result = {call}\n") };
                match self.expr(&c.expr) {
                    Some(e) => format!("result = {call}\nassert {e}, {}\n", py_str(&format!("postcondition `{}` does not hold", c.text))),
                    None => format!("result = {call}\n# sfz cannot write `ensures {}` in Python; check it by hand:\nprint(result)\n", c.text),
                }
            }
            Evidence::Differential { what: what @ Disagreement::VariantFails, .. } if r.calls > 1 => {
                let round = match r.check {
                    Some(check) => self.differential(check, what, &call),
                    None => format!("{call}\n"),
                };
                let indented: String = round.lines().map(|l| if l.is_empty() { "\n".to_string() } else { format!("        {l}\n") }).collect();
                format!(
                    "# One round damages the heap and may still return or raise; glibc notices at a later free\n\
                     # (sfz's worker died in round {} with this input), so the round is repeated.\n\
                     for _ in range({}):\n    try:\n{indented}    except RuntimeError:\n        pass  # raising does not undo the damage\n",
                    r.calls,
                    REPEAT_CALLS.max(4 * r.calls)
                )
            }
            Evidence::Differential { what, .. } => match r.check {
                Some(check) => self.differential(check, what, &call),
                None => format!("result = {call}\n"),
            },
        }
    }

    fn differential(&mut self, check: &Check, what: &Disagreement, original: &str) -> String {
        if let Variant::Gradient { eps, .. } = check.variant {
            return self.gradient(eps, check.tolerances.float64);
        }
        if let (Variant::Relation(r), Disagreement::Values { tolerance, .. }) = (&check.variant, what) {
            return self.relation(r, *tolerance);
        }
        let v = self.variant_call(check, what);
        let mut out = String::new();
        let mut setup = v.setup.iter().map(|l| format!("{l}\n")).collect::<String>();
        if schema::parse(&self.r.binding.schema).is_ok_and(|s| s.has_mutable_args()) {
            // The original call wrote into its inputs (`abs_`, `out=`); the variant starts from
            // the same values, as in sfz's worker.
            setup = format!("# the call wrote into its inputs: build them again\n{}{setup}", inputs(self.r.case, self.r.binding, &self.vars));
        }
        let name = match check.variant {
            Variant::Promote => "expected",
            _ => "variant",
        };
        let describe = check.variant.describe();
        let api = &self.r.api.name;
        match what {
            Disagreement::Values { output, dtype, tolerance } => {
                let _ = writeln!(out, "result = {original}");
                out.push_str(&setup);
                let _ = writeln!(out, "{name} = {}", v.call);
                let ours = self.output("result", *output);
                let theirs = (v.value)(self, name, *output);
                let (actual, expected) = match check.variant {
                    // The float64 reference, rounded to the original's dtype.
                    Variant::Promote => (comparable(&ours, *dtype), comparable(&format!("{theirs}.to({ours}.dtype)"), *dtype)),
                    _ => (comparable(&theirs, *dtype), comparable(&ours, *dtype)),
                };
                let _ = writeln!(out, "torch.testing.assert_close({actual}, {expected}, {}, equal_nan=True)", tol_args(*tolerance));
            }
            Disagreement::Structure { output } => {
                let _ = writeln!(out, "result = {original}");
                out.push_str(&setup);
                let _ = writeln!(out, "{name} = {}", v.call);
                let ours = self.output("result", *output);
                let theirs = (v.value)(self, name, *output);
                let same = if check.variant == Variant::Promote { "shape" } else { "dtype and shape" };
                let cond = if check.variant == Variant::Promote {
                    format!("{theirs}.shape == {ours}.shape")
                } else {
                    format!("({theirs}.dtype, {theirs}.shape) == ({ours}.dtype, {ours}.shape)")
                };
                let _ = writeln!(out, "assert {cond}, {}", py_str(&format!("output {output}: the {describe} has another {same}")));
            }
            Disagreement::VariantRaises => {
                let _ = writeln!(out, "result = {original}  # returns");
                out.push_str(&setup);
                let _ = writeln!(out, "try:\n    {}\nexcept Exception as e:", v.call);
                let _ = writeln!(out, "    raise AssertionError({}) from e", py_str(&format!("{api} returns but its {describe} raises")));
            }
            Disagreement::OriginalRaises => {
                out.push_str(&setup);
                let _ = writeln!(out, "{name} = {}  # returns", v.call);
                let _ = writeln!(out, "try:\n    {original}\nexcept Exception as e:");
                let _ = writeln!(out, "    raise AssertionError({}) from e", py_str(&format!("{api} raises but its {describe} returns")));
            }
            Disagreement::Extrapolated { output } => out.push_str(&self.extrapolated(original, *output)),
            Disagreement::VariantFails | Disagreement::Gradient => {
                let _ = writeln!(
                    out,
                    "try:\n    result = {original}\nexcept Exception as e:  # what matters is the {describe}\n    result = None\n    print(\"the original raises:\", e)"
                );
                out.push_str(&setup);
                let _ = writeln!(out, "{}  # fails", v.call);
            }
        }
        out
    }

    /// A float64 result that is infinite although the same call just below the input, along
    /// `t · inputs`, extrapolates to a representable value: the worker's arithmetic
    /// (`sfz-worker/src/runtime/ray.rs`) repeated in Python.
    fn extrapolated(&self, original: &str, output: usize) -> String {
        let r = self.r;
        let vars = self.tensor_exprs(|v, rec| if rec.dtype.is_floating() { format!("{v} * t") } else { v.to_string() });
        let scaled = call(r.api, r.binding, r.case, &vars);
        let mut out = String::new();
        let _ = writeln!(out, "result = {original}");
        let _ = writeln!(out, "r = {}.double()", self.output("result", output));
        let _ = writeln!(out, "\n\ndef at(t):\n    out = {scaled}\n    return {}.double()\n\n", self.output("out", output));
        out.push_str(concat!(
            "# float64 has no wider dtype: the same call at (1 - k*h) * inputs, k = 1, 2, 3, where log|f|\n",
            "# grows smoothly, extrapolated to the input itself; per element the first h whose three\n",
            "# values are finite and nonzero\n",
            "limit = torch.tensor(torch.finfo(torch.float64).max, dtype=torch.float64).log()\n",
            "decided = torch.zeros_like(r, dtype=torch.bool)\n",
            "early = torch.zeros_like(decided)\n",
            "value = torch.zeros_like(r)\n",
            "for h in (2.0**-12, 2.0**-10, 2.0**-8, 2.0**-6):\n",
            "    near = [at(1.0 - k * h) for k in (1, 2, 3)]\n",
            "    use = ~decided & near[0].isfinite() & near[1].isfinite() & near[2].isfinite() & (near[0] != 0) & (near[1] != 0) & (near[2] != 0)\n",
            "    l1, l2, l3 = (v.abs().log() for v in near)\n",
            "    d1, d2 = l1 - l2, l2 - l3\n",
            "    signs = (near[0].sign() == near[1].sign()) & (near[1].sign() == near[2].sign()) & (near[0].sign() == r.sign())\n",
            "    smooth = (d1 > 0) & (d2 > 0) & ((d1 - d2).abs() <= 0.1 * d1)\n",
            "    extrapolated = l1 + d1 + (d1 - d2)\n",
            "    early |= use & r.isinf() & signs & smooth & (extrapolated < limit - 0.01 - 2 * (d1 - d2).abs())\n",
            "    value = torch.where(use, extrapolated, value)\n",
            "    decided |= use\n",
            "assert not early.any(), f\"{int(early.sum())} element(s) are inf although the value there is about {value[early].exp().tolist()[:3]}, below float64's largest value\"\n",
        ));
        out
    }

    /// The variant's call and what it needs first.
    fn variant_call(&mut self, check: &Check, what: &Disagreement) -> VariantCall {
        let r = self.r;
        let case = r.case;
        let plain = |w: &Writer, name: &str, k: usize| w.output(name, k);
        match &check.variant {
            Variant::Promote | Variant::Defined => {
                // The check on demand promotes integer inputs as well.
                let integers = check.variant == Variant::Defined;
                let promoted = promote_dtype_args(case);
                // A `dtype` argument casts the inputs first, in the worker's reference too.
                let cast = case.args.iter().find_map(|a| match a {
                    Arg::Dtype(d @ (DType::Float16 | DType::BFloat16 | DType::Float32)) => Some(*d),
                    _ => None,
                });
                let mut vars = self.tensor_exprs(|v, rec| match (cast, rec.dtype) {
                    (Some(d), DType::Float16 | DType::BFloat16 | DType::Float32 | DType::Float64) if d != rec.dtype => format!("{v}.to({}).double()", py_dtype(d)),
                    (_, DType::Float16 | DType::BFloat16 | DType::Float32) => format!("{v}.double()"),
                    (_, DType::Complex64) => format!("{v}.to(torch.complex128)"),
                    (_, DType::Bool | DType::UInt8 | DType::Int8 | DType::Int16 | DType::Int32 | DType::Int64) if integers => format!("{v}.double()"),
                    _ => v.to_string(),
                });
                // What a forward filled has the dtype of its output, known when the script runs.
                for i in forward::bound(case, r.binding) {
                    let v = &self.vars[i];
                    vars[i] = match cast {
                        Some(d) => format!("({v}.to({d}).double() if {v}.is_floating_point() else {v})", d = py_dtype(d)),
                        None => format!(
                            "({v}.double() if {v}.dtype in (torch.float16, torch.bfloat16, torch.float32) else {v}.to(torch.complex128) if {v}.dtype == torch.complex64 else {v})"
                        ),
                    };
                }
                VariantCall { setup: vec![], call: call(r.api, r.binding, &promoted, &vars), value: plain }
            }
            // Rendered by `relation_check` before this is reached.
            Variant::Relation(_) => VariantCall { setup: vec![], call: call(r.api, r.binding, case, &self.vars), value: plain },
            Variant::Cuda => {
                let vars = self.tensor_exprs(|v, _| format!("{v}.cuda()"));
                VariantCall { setup: vec![], call: call(r.api, r.binding, case, &vars), value: |w, name, k| format!("{}.cpu()", w.output(name, k)) }
            }
            Variant::Layout => {
                let mut setup = Vec::new();
                let mut vars = self.vars.clone();
                let bound = forward::bound(case, r.binding);
                let like = |i: usize| case.forward.as_ref().is_some_and(|f| f.binds.iter().any(|b| b.param == i && b.like));
                for (i, arg) in case.args.iter().enumerate() {
                    if bound.contains(&i) {
                        // A copied output stays as it is; a fresh one is built in the other layout
                        // from its recipe, with the shape it has now (`flip_layout` on it).
                        if let (true, Arg::Tensor(rec)) = (like(i), arg) {
                            let v = &self.vars[i];
                            let name = format!("{v}_2");
                            let e = if rec.layout == Layout::Contiguous {
                                format!("({v}.mT.contiguous().mT if {v}.dim() >= 2 and {v}.shape[-1] > 1 and {v}.shape[-2] > 1 else torch.zeros(list({v}.shape[:-1]) + [2 * {v}.shape[-1]], dtype={v}.dtype)[..., ::2].copy_({v}) if {v}.dim() >= 1 and {v}.shape[-1] > 1 else {v})")
                            } else {
                                format!("{v}.contiguous()")
                            };
                            setup.push(format!("{name} = {e}  # the same values, the other layout"));
                            vars[i] = name;
                        }
                        continue;
                    }
                    let flipped = |v: &str, rec: &TensorRecipe| {
                        let mut to = rec.clone();
                        flip_layout(&mut to);
                        match to.layout {
                            Layout::Contiguous => format!("{v}.contiguous()"),
                            l => relayout(v, rec, l).unwrap_or_else(|| v.to_string()),
                        }
                    };
                    match arg {
                        Arg::Tensor(rec) => {
                            let name = format!("{}_2", self.vars[i]);
                            setup.push(format!("{name} = {}  # the same values, the other layout", flipped(&self.vars[i], rec)));
                            vars[i] = name;
                        }
                        Arg::TensorList(rs) => {
                            let items: Vec<String> = rs.iter().enumerate().map(|(k, rec)| flipped(&format!("{}_{k}", self.vars[i]), rec)).collect();
                            let name = format!("{}_2", self.vars[i]);
                            setup.push(format!("{name} = [{}]  # the same values, the other layout", items.join(", ")));
                            vars[i] = name;
                        }
                        _ => {}
                    }
                }
                VariantCall { setup, call: call(r.api, r.binding, case, &vars), value: plain }
            }
            Variant::Out { .. } => {
                let twin = r.twin.unwrap_or(r.binding);
                let n = twin.args.iter().filter(|a| matches!(a, ArgSource::Output(_))).count().max(1);
                let outs: Vec<String> = if n == 1 { vec!["out".into()] } else { (0..n).map(|k| format!("out{k}")).collect() };
                let fallback = case.args.iter().flat_map(Arg::tensors).next().map_or(DType::Float32, |t| t.dtype);
                let setup = outs
                    .iter()
                    .enumerate()
                    .map(|(k, o)| {
                        // Empty, with the dtype of the original's output (which it may lack).
                        let dtype = match what {
                            Disagreement::OriginalRaises => py_dtype(fallback),
                            Disagreement::VariantFails | Disagreement::Gradient => {
                                format!("{}.dtype if result is not None else {}", self.output("result", k), py_dtype(fallback))
                            }
                            _ => format!("{}.dtype", self.output("result", k)),
                        };
                        format!("{o} = torch.empty(0, dtype={dtype})")
                    })
                    .collect::<Vec<_>>();
                let call = self.out_call(twin, &outs);
                // The caller sees the tensors it passed, written.
                let value: fn(&Writer, &str, usize) -> String = if n == 1 { |_, _, _| "out".to_string() } else { |_, _, k| format!("out{k}") };
                VariantCall { setup, call, value }
            }
            Variant::InPlace { arg, .. } => {
                let twin = r.twin.unwrap_or(r.binding);
                let v = self.vars.get(*arg).cloned().unwrap_or_else(|| "arg0".into());
                let copy = format!("{v}_copy");
                let layout_copy = match case.args.get(*arg) {
                    Some(Arg::Tensor(rec)) if rec.layout == Layout::Strided => relayout(&v, rec, Layout::Strided).unwrap_or_else(|| format!("{v}.clone()")),
                    _ => format!("{v}.clone()"),
                };
                let mut vars = self.vars.clone();
                vars[*arg] = copy.clone();
                let method = twin.name.rsplit("::").next().unwrap_or(&twin.name).to_string();
                let call = match registry::python_call(&r.api.name) {
                    Some(_) if registry::is_public_mapping(r.api, r.binding) => {
                        // `x.exp_(...)`: the public call's arguments without the receiver.
                        let as_method = PyCall::Method(method);
                        let mut case2 = case.clone();
                        // Put the mutated argument first, as the receiver.
                        let receiver = case2.args.remove(*arg);
                        case2.args.insert(0, receiver);
                        let mut api2 = r.api.clone();
                        let p = api2.params.remove(*arg);
                        api2.params.insert(0, p);
                        let mut vars2 = vars.clone();
                        let x = vars2.remove(*arg);
                        vars2.insert(0, x);
                        public_call(&api2, &as_method, &case2, &vars2)
                    }
                    _ => ops_call(twin, case, &vars, &[]),
                };
                VariantCall { setup: vec![format!("{copy} = {layout_copy}")], call, value: |w, _, _| w.inplace_copy() }
            }
            Variant::Gradient { .. } => VariantCall { setup: vec![], call: String::new(), value: plain },
        }
    }

    fn inplace_copy(&self) -> String {
        match self.r.check.map(|c| &c.variant) {
            Some(Variant::InPlace { arg, .. }) => format!("{}_copy", self.vars.get(*arg).map_or("arg0", String::as_str)),
            _ => "variant".into(),
        }
    }

    /// The out= call: the public function with `out=` where Python has one, else `torch.ops`.
    fn out_call(&self, twin: &OpBinding, outs: &[String]) -> String {
        let r = self.r;
        let public = registry::is_public_mapping(r.api, r.binding)
            && matches!(registry::python_call(&r.api.name), Some(PyCall::Function(ref f)) if f.starts_with("torch.") && !f.starts_with("torch.nn."))
            && outs.len() == 1
            && schema::parse(&twin.schema).is_ok_and(|s| s.args.last().is_some_and(|a| a.name == "out"));
        if public {
            let c = call(r.api, r.binding, r.case, &self.vars);
            match c.strip_suffix(')') {
                Some(head) if head.ends_with('(') => format!("{head}out=out)"),
                Some(head) => format!("{head}, out=out)"),
                None => c,
            }
        } else {
            ops_call(twin, r.case, &self.vars, outs)
        }
    }

    /// `torch.autograd.gradcheck` over the floating tensor inputs, in float64.
    fn gradient(&mut self, eps: f64, tol: Tolerance) -> String {
        let r = self.r;
        let case = promote_dtype_args(r.case);
        let floating = |rec: &TensorRecipe| rec.dtype.is_floating();
        let has_list = case.args.iter().any(|a| matches!(a, Arg::TensorList(rs) if rs.iter().any(floating)));
        let mut params = Vec::new();
        let mut inputs = Vec::new();
        let mut vars = self.vars.clone();
        for (i, arg) in case.args.iter().enumerate() {
            match arg {
                Arg::Tensor(rec) if floating(rec) => {
                    let p = if has_list { format!("xs[{}]", inputs.len()) } else { self.vars[i].clone() };
                    inputs.push(format!("{}.double().requires_grad_()", self.vars[i]));
                    params.push(self.vars[i].clone());
                    vars[i] = p;
                }
                Arg::TensorList(rs) => {
                    let items: Vec<String> = rs
                        .iter()
                        .enumerate()
                        .map(|(k, rec)| {
                            let element = format!("{}_{k}", self.vars[i]);
                            if floating(rec) {
                                inputs.push(format!("{element}.double().requires_grad_()"));
                                format!("xs[{}]", inputs.len() - 1)
                            } else {
                                element
                            }
                        })
                        .collect();
                    vars[i] = format!("[{}]", items.join(", "));
                }
                _ => {}
            }
        }
        let signature = if has_list { "*xs".to_string() } else { params.join(", ") };
        let body = call(r.api, r.binding, &case, &vars);
        let tuple = if inputs.len() == 1 { format!("({},)", inputs[0]) } else { format!("({})", inputs.join(", ")) };
        format!(
            "def f({signature}):\n    return {body}\n\n\n# Fails with GradcheckError (\"Jacobian mismatch\") while backward disagrees with finite differences.\ntorch.autograd.gradcheck(f, {tuple}, eps={}, {}, check_undefined_grad=False)\n",
            py_float(eps),
            tol_args(tol)
        )
    }

    /// The tensor arguments rewritten by `f(var, recipe)` (list elements one by one).
    fn tensor_exprs(&self, f: impl Fn(&str, &TensorRecipe) -> String) -> Vec<String> {
        let mut vars = self.vars.clone();
        for (i, arg) in self.r.case.args.iter().enumerate() {
            match arg {
                Arg::Tensor(rec) => vars[i] = f(&self.vars[i], rec),
                Arg::TensorList(rs) => {
                    let items: Vec<String> = rs.iter().enumerate().map(|(k, rec)| f(&format!("{}_{k}", self.vars[i]), rec)).collect();
                    vars[i] = format!("[{}]", items.join(", "));
                }
                _ => {}
            }
        }
        vars
    }

    /// Output `k` of the value bound to `name`: the value itself for an operator with one
    /// tensor return, else `name[k]`.
    fn output(&self, name: &str, k: usize) -> String {
        let single = schema::parse(&self.r.binding.schema).map_or(true, |s| s.returns.len() == 1 && s.returns[0].ty == SchemaType::Tensor);
        if single && k == 0 {
            name.to_string()
        } else {
            format!("{name}[{k}]")
        }
    }

    /// An `ensures` expression in Python, or None where sfz cannot write it.
    fn expr(&mut self, e: &TExpr) -> Option<String> {
        Some(match e {
            TExpr::Lit(v) => py_lit(v)?,
            TExpr::Param(i) => {
                let arg = self.r.case.args.get(*i)?;
                match arg {
                    Arg::Omitted => py_lit(self.r.api.params.get(*i)?.default.as_ref()?)?,
                    a => py_value(a, &self.vars[*i]),
                }
            }
            TExpr::Result(k) => self.output("result", *k),
            TExpr::Prop(inner, p) => {
                let x = self.expr(inner)?;
                match p {
                    Prop::Dtype => format!("{x}.dtype"),
                    Prop::Ndim => format!("{x}.dim()"),
                    Prop::Shape => format!("list({x}.shape)"),
                    Prop::Numel => format!("{x}.numel()"),
                    Prop::Len => format!("len({x})"),
                    Prop::Values => return None,
                }
            }
            TExpr::Index(x, i) => format!("{}[{}]", self.expr(x)?, self.expr(i)?),
            TExpr::Unary(UnOp::Not, x) => format!("(not {})", self.expr(x)?),
            TExpr::Unary(UnOp::Neg, x) => format!("(-{})", self.expr(x)?),
            TExpr::Binary(op, a, b) => return self.binary(*op, a, b),
            TExpr::If(c, a, b) => format!("({} if {} else {})", self.expr(a)?, self.expr(c)?, self.expr(b)?),
            TExpr::List(items) => format!("[{}]", items.iter().map(|i| self.expr(i)).collect::<Option<Vec<_>>>()?.join(", ")),
            TExpr::Call(f, args) => {
                let args: Vec<String> = args.iter().map(|a| self.expr(a)).collect::<Option<_>>()?;
                match f {
                    Builtin::Finite => format!("bool(torch.isfinite({}).all())", args.first()?),
                    Builtin::NoNan => format!("not bool(torch.isnan({}).any())", args.first()?),
                    Builtin::Contiguous => format!("{}.is_contiguous()", args.first()?),
                    Builtin::Len => format!("len({})", args.first()?),
                    Builtin::Min => format!("min({})", args.join(", ")),
                    Builtin::Max => format!("max({})", args.join(", ")),
                    Builtin::Abs => format!("abs({})", args.first()?),
                    Builtin::Prod => {
                        self.uses_math = true;
                        format!("math.prod({})", args.first()?)
                    }
                    Builtin::Broadcastable => return None,
                }
            }
            TExpr::Range { .. } | TExpr::Bound(_) | TExpr::Each(_) | TExpr::Forall { .. } | TExpr::Exists { .. } => return None,
        })
    }

    fn binary(&mut self, op: BinOp, a: &TExpr, b: &TExpr) -> Option<String> {
        // `t.values OP x` and `t.values in lo..hi` hold for every element.
        let values = |e: &TExpr| matches!(e, TExpr::Prop(_, Prop::Values));
        let tensor_of = |w: &mut Writer, e: &TExpr| match e {
            TExpr::Prop(inner, Prop::Values) => w.expr(inner),
            other => w.expr(other),
        };
        if values(a) || values(b) {
            let x = tensor_of(self, a)?;
            return Some(match (op, b) {
                (BinOp::In | BinOp::NotIn, TExpr::Range { lo, hi, inclusive }) => {
                    let upper = if *inclusive { "<=" } else { "<" };
                    let inside = format!("(({x} >= {}) & ({x} {upper} {}))", self.expr(lo)?, self.expr(hi)?);
                    if op == BinOp::In {
                        format!("bool({inside}.all())")
                    } else {
                        format!("bool((~{inside}).all())")
                    }
                }
                _ if op.is_comparison() => format!("bool(({x} {} {}).all())", op.symbol(), tensor_of(self, b)?),
                _ => return None,
            });
        }
        let x = self.expr(a)?;
        Some(match (op, b) {
            (BinOp::In | BinOp::NotIn, TExpr::Range { lo, hi, inclusive }) => {
                let upper = if *inclusive { "<=" } else { "<" };
                let inside = format!("({} <= {x} {upper} {})", self.expr(lo)?, self.expr(hi)?);
                if op == BinOp::In {
                    inside
                } else {
                    format!("(not {inside})")
                }
            }
            (BinOp::Implies, _) => format!("((not {x}) or {})", self.expr(b)?),
            (BinOp::And, _) => format!("({x} and {})", self.expr(b)?),
            (BinOp::Or, _) => format!("({x} or {})", self.expr(b)?),
            (BinOp::In, _) => format!("({x} in {})", self.expr(b)?),
            (BinOp::NotIn, _) => format!("({x} not in {})", self.expr(b)?),
            // Floor division on ints and true division on floats cannot be told apart here.
            (BinOp::Div, _) => return None,
            (op, _) => format!("({x} {} {})", op.symbol(), self.expr(b)?),
        })
    }
}

/// A constant in Python.
fn py_lit(v: &Value) -> Option<String> {
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
fn comparable(e: &str, dtype: Option<DType>) -> String {
    match dtype {
        Some(d) if d.is_complex() => format!("{e}.to(torch.complex128)"),
        Some(d) if d.is_floating() => format!("{e}.double()"),
        _ => e.to_string(),
    }
}

fn tol_args(t: Tolerance) -> String {
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

/// Python's keywords: a parameter with one of these names is renamed in a script.
const PY_KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global",
    "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with", "yield",
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

/// `torch.ops.aten.sum.dim_IntList(input, [1], True)`: the binding's arguments in schema order;
/// `outs` name the tensors of `ArgSource::Output` arguments.
fn ops_call(binding: &OpBinding, case: &Case, vars: &[String], outs: &[String]) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::first_api as api;
    use crate::ops::catalog::Catalog;
    use crate::wire::oracle::Oracle;
    use crate::wire::variant::Tolerances;

    fn catalog() -> Catalog {
        Catalog::from_schemas(include_str!("../../../tests/fixtures/schemas-2.13.0.txt").lines())
    }

    fn bind(a: &ApiSpec) -> OpBinding {
        registry::resolve(a, &catalog()).unwrap()
    }

    fn recipe() -> TensorRecipe {
        TensorRecipe { dtype: DType::Float32, shape: vec![2, 3], fill: Fill::Uniform { lo: -1.5, hi: 2.0 }, seed: 42, layout: Layout::Contiguous, specials: vec![] }
    }

    fn script(a: &ApiSpec, case: &Case, evidence: Evidence, check: Option<&Check>, twin: Option<&OpBinding>) -> String {
        let b = bind(a);
        Reproducer { api: a, binding: &b, case, evidence: &evidence, check, twin, header: "sfz finding t", expect: "", calls: 1 }.render()
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
    fn tensors_are_built_inline() {
        assert_eq!(tensor_lines("x", &recipe()), ["torch.manual_seed(42)", "x = torch.empty([2, 3], dtype=torch.float64).uniform_(-1.5, 2.0).to(torch.float32)"]);
        let r = TensorRecipe { layout: Layout::Strided, specials: vec![(7, Special::NegInf)], fill: Fill::Int { lo: 0, hi: 5 }, dtype: DType::Int64, ..recipe() };
        assert_eq!(
            tensor_lines("i", &r),
            [
                "torch.manual_seed(42)",
                "i = torch.randint(0, 5, [2, 3])",
                "i.view(-1)[1] = torch.tensor(float(\"-inf\"), dtype=torch.float64)",
                "i = torch.zeros([2, 6], dtype=torch.int64)[..., ::2].copy_(i)"
            ]
        );
        let r = TensorRecipe { layout: Layout::Transposed, fill: Fill::Constant(0.5), dtype: DType::Float64, ..recipe() };
        assert_eq!(tensor_lines("c", &r), ["c = torch.full([2, 3], 0.5, dtype=torch.float64)", "c = c.mT.contiguous().mT"]);
    }

    #[test]
    fn public_calls_are_positional_until_a_gap_then_keywords() {
        let a = api("api torch.nn.functional.conv2d(input: Tensor, weight: Tensor, bias: Tensor? = None, stride: int[2] = [1, 1], padding: int[2] = [0, 0], dilation: int[2] = [1, 1], groups: int = 1) -> Tensor {}");
        let case = Case {
            op: 0,
            args: vec![Arg::Tensor(recipe()), Arg::Tensor(recipe()), Arg::None, Arg::IntList(vec![2, 2]), Arg::Omitted, Arg::IntList(vec![1, 1]), Arg::Int(1)],
            forward: None,
        };
        let s = script(&a, &case, Evidence::Call, None, None);
        assert!(s.contains("\ntorch.nn.functional.conv2d(input, weight, None, [2, 2], dilation=[1, 1], groups=1)\n"), "{s}");
    }

    #[test]
    fn keyword_only_parameters_and_methods() {
        let a = api("api torch.nn.functional.softmax(input: Tensor, dim: int, *, dtype: dtype? = None) -> Tensor {}");
        let case = Case { op: 0, args: vec![Arg::Tensor(recipe()), Arg::Int(-1), Arg::Dtype(DType::Float64)], forward: None };
        assert!(script(&a, &case, Evidence::Call, None, None).contains("torch.nn.functional.softmax(input, -1, dtype=torch.float64)"));
        let a = api("api torch.Tensor.add(self: Tensor, other: Tensor, *, alpha: Scalar = 1) -> Tensor {}");
        let case = Case { op: 0, args: vec![Arg::Tensor(recipe()), Arg::Tensor(recipe()), Arg::Float(f64::INFINITY)], forward: None };
        let s = script(&a, &case, Evidence::Call, None, None);
        assert!(s.contains("self.add(other, alpha=float(\"inf\"))"), "{s}");
    }

    #[test]
    fn pinned_operators_go_through_torch_ops() {
        let a = api("#[aten(\"aten::_softmax\")]\napi torch.nn.functional.softmax(input: Tensor, dim: int, half_to_float: bool = false) -> Tensor {}");
        let case = Case { op: 0, args: vec![Arg::Tensor(recipe()), Arg::Int(1), Arg::Omitted], forward: None };
        let s = script(&a, &case, Evidence::Call, None, None);
        assert!(s.contains("torch.ops.aten._softmax.default(input, 1, False)"), "{s}");
        let a = api("#[aten(\"aten::sum.dim_IntList\")]\napi torch.special.total(input: Tensor, dim: int[]?, *, dtype: dtype? = None) -> Tensor {}");
        let case = Case { op: 0, args: vec![Arg::Tensor(recipe()), Arg::None, Arg::Dtype(DType::Float64)], forward: None };
        let s = script(&a, &case, Evidence::Call, None, None);
        assert!(s.contains("torch.ops.aten.sum.dim_IntList(input, None, dtype=torch.float64)"), "{s}");
    }

    fn check(oracle: Oracle, variant: Variant) -> Check {
        Check { oracle, variant, tolerances: Tolerances::uniform(Tolerance { rtol: 1e-5, atol: 1e-6 }), accuracy: Default::default() }
    }

    fn values(output: usize) -> Evidence {
        Evidence::Differential { check: 0, what: Disagreement::Values { output, dtype: Some(DType::Float32), tolerance: Tolerance { rtol: 1e-5, atol: 1e-6 } } }
    }

    /// A death that showed on a later call: the script repeats the call, through the errors the
    /// damaging calls may raise (`linalg.eig` raises "failed to converge" until glibc aborts).
    #[test]
    fn a_late_death_repeats_the_call() {
        let eig = api("api torch.linalg.eig(input: Tensor) -> (eigenvalues: Tensor, eigenvectors: Tensor) {}");
        let case = Case {
            op: 0,
            args: vec![Arg::Tensor(TensorRecipe { dtype: DType::Float64, shape: vec![4, 8, 8], specials: vec![(236, Special::Value(-f64::MAX))], ..recipe() })],
            forward: None,
        };
        let b = bind(&eig);
        let render = |calls| {
            Reproducer { api: &eig, binding: &b, case: &case, evidence: &Evidence::Call, check: None, twin: None, header: "sfz finding t", expect: "dies with SIGABRT", calls }
                .render()
        };
        insta::assert_snapshot!("late_death", render(25));
        assert!(render(1).ends_with("torch.linalg.eig(input)  # dies with SIGABRT\n"), "{}", render(1));
        assert!(render(40).contains("for _ in range(160):"), "four times the worker's calls when that is more");
    }

    /// A death in a check that showed in a later round (call and check): the round is repeated.
    #[test]
    fn a_late_death_in_a_check_repeats_the_round() {
        let exp = api("api torch.exp(input: Tensor) -> Tensor {}");
        let case = Case { op: 0, args: vec![Arg::Tensor(recipe())], forward: None };
        let layout = check(Oracle::Layout, Variant::Layout);
        let evidence = Evidence::Differential { check: 0, what: Disagreement::VariantFails };
        let b = bind(&exp);
        let render =
            |calls| Reproducer { api: &exp, binding: &b, case: &case, evidence: &evidence, check: Some(&layout), twin: None, header: "sfz finding t", expect: "", calls }.render();
        insta::assert_snapshot!("late_death_in_check", render(3));
        assert!(!render(1).contains("for _ in range"), "{}", render(1));
    }

    #[test]
    fn differential_scripts() {
        let exp = api("api torch.exp(input: Tensor) -> Tensor {}");
        let case = Case { op: 0, args: vec![Arg::Tensor(recipe())], forward: None };
        let precision = check(Oracle::Precision, Variant::Promote);
        insta::assert_snapshot!("precision", script(&exp, &case, values(0), Some(&precision), None));
        let layout = check(Oracle::Layout, Variant::Layout);
        insta::assert_snapshot!("layout", script(&exp, &case, values(0), Some(&layout), None));
        let b = bind(&exp);
        let out_twin = crate::ops::twins::out_binding(&b, &catalog()).unwrap();
        let out = check(Oracle::Out, Variant::Out { op: 1 });
        insta::assert_snapshot!("out_raises", script(&exp, &case, Evidence::Differential { check: 0, what: Disagreement::VariantRaises }, Some(&out), Some(&out_twin)));
        let (ip_twin, arg) = crate::ops::twins::inplace_binding(&b, &catalog()).unwrap();
        let inplace = check(Oracle::Inplace, Variant::InPlace { op: 1, arg });
        insta::assert_snapshot!("inplace", script(&exp, &case, values(0), Some(&inplace), Some(&ip_twin)));
        let gradient = Check {
            oracle: Oracle::Gradient,
            variant: Variant::Gradient { eps: 1e-6, samples: 8 },
            tolerances: Tolerances::uniform(Tolerance { rtol: 1e-3, atol: 1e-5 }),
            accuracy: Default::default(),
        };
        let mm = api("api torch.matmul(input: Tensor, other: Tensor) -> Tensor {}");
        let case2 = Case { op: 0, args: vec![Arg::Tensor(recipe()), Arg::Tensor(TensorRecipe { shape: vec![3, 2], seed: 7, ..recipe() })], forward: None };
        insta::assert_snapshot!("gradient", script(&mm, &case2, Evidence::Differential { check: 0, what: Disagreement::Gradient }, Some(&gradient), None));
        let cuda = check(Oracle::Cuda, Variant::Cuda);
        insta::assert_snapshot!("cuda", script(&mm, &case2, values(0), Some(&cuda), None));
    }

    #[test]
    fn out_overloads_with_several_outputs_go_through_torch_ops() {
        let a = api("api torch.nn.functional.max_pool2d(input: Tensor, kernel_size: int[2], stride: int[2]? = None, padding: int[2] = [0, 0], dilation: int[2] = [1, 1], ceil_mode: bool = false) -> (values: Tensor, indices: Tensor) {}");
        let b = bind(&a);
        let twin = crate::ops::twins::out_binding(&b, &catalog()).expect("with_indices.out");
        let case = Case {
            op: 0,
            args: vec![Arg::Tensor(TensorRecipe { shape: vec![1, 4, 4], ..recipe() }), Arg::IntList(vec![2, 2]), Arg::Omitted, Arg::Omitted, Arg::Omitted, Arg::Omitted],
            forward: None,
        };
        let s = script(&a, &case, values(1), Some(&check(Oracle::Out, Variant::Out { op: 1 })), Some(&twin));
        assert!(s.contains("torch.ops.aten.max_pool2d_with_indices.out(input, [2, 2], out=out0, indices=out1)"), "{s}");
        assert!(s.contains("torch.testing.assert_close(out1, result[1], rtol=1e-5, atol=1e-6, equal_nan=True)") || s.contains("out1.double()"), "{s}");
    }

    #[test]
    fn torch_ops_aten_apis_are_called_as_users_paste_them() {
        // The packet name binds an overload; the script names it, as Python needs it.
        let a = api("api torch.ops.aten.max_pool2d_with_indices_backward(grad_output: Tensor, input: Tensor, kernel_size: int[2], stride: int[2], padding: int[2], dilation: int[2], ceil_mode: bool, indices: Tensor) -> Tensor {}");
        let ints = TensorRecipe { dtype: DType::Int64, fill: Fill::Int { lo: 0, hi: 4 }, ..recipe() };
        let case = Case {
            op: 0,
            args: vec![
                Arg::Tensor(recipe()),
                Arg::Tensor(recipe()),
                Arg::IntList(vec![2, 2]),
                Arg::IntList(vec![1, 1]),
                Arg::IntList(vec![0, 0]),
                Arg::IntList(vec![1, 1]),
                Arg::Bool(false),
                Arg::Tensor(ints),
            ],
            forward: None,
        };
        let s = script(&a, &case, Evidence::Call, None, None);
        assert!(s.contains("\ntorch.ops.aten.max_pool2d_with_indices_backward.default(grad_output, input, [2, 2], [1, 1], [0, 0], [1, 1], False, indices)\n"), "{s}");
        // A pinned overload, with its out= tensor, keeps its name.
        let a = api("api torch.ops.aten.add.out(input: Tensor, other: Tensor, *, alpha: Scalar = 1, out: Tensor) -> Tensor {}");
        let case = Case { op: 0, args: vec![Arg::Tensor(recipe()), Arg::Tensor(recipe()), Arg::Omitted, Arg::Tensor(recipe())], forward: None };
        let s = script(&a, &case, Evidence::Call, None, None);
        // `out` is a name the script defines itself, so the parameter's variable is renamed.
        assert!(s.contains("torch.ops.aten.add.out(input, other, out="), "{s}");
    }

    #[test]
    fn a_mutating_call_rebuilds_its_inputs_before_the_variant() {
        let a = api("api torch.ops.aten.neg_(input: Tensor) -> Tensor {}");
        let case = Case { op: 0, args: vec![Arg::Tensor(recipe())], forward: None };
        let what = Evidence::Differential { check: 0, what: Disagreement::Values { output: 0, dtype: Some(DType::Float32), tolerance: Tolerance { rtol: 1e-5, atol: 1e-6 } } };
        let s = script(&a, &case, what, Some(&check(Oracle::Precision, Variant::Promote)), None);
        let call = s.find("result = torch.ops.aten.neg_.default(input)").expect(&s);
        let rebuilt = s.find("# the call wrote into its inputs").expect(&s);
        let variant = s.find("expected = torch.ops.aten.neg_.default(").expect(&s);
        assert!(call < rebuilt && rebuilt < variant, "{s}");
        assert_eq!(s.matches("torch.manual_seed(42)").count(), 2, "{s}");
    }

    #[test]
    fn postconditions_become_assertions() {
        let a = api("api torch.nn.functional.softmax(input: Tensor, dim: int) -> Tensor { ensures result.shape == input.shape; ensures result.values in 0.0..=1.0; ensures input.numel > 0 => finite(result); }");
        let case = Case { op: 0, args: vec![Arg::Tensor(recipe()), Arg::Int(1)], forward: None };
        let s = script(&a, &case, Evidence::Postcondition { clause: 0 }, None, None);
        assert!(s.contains("assert (list(result.shape) == list(input.shape)), \"postcondition `result.shape == input.shape` does not hold\""), "{s}");
        let s = script(&a, &case, Evidence::Postcondition { clause: 1 }, None, None);
        assert!(s.contains("assert bool(((result >= 0.0) & (result <= 1.0)).all())"), "{s}");
        let s = script(&a, &case, Evidence::Postcondition { clause: 2 }, None, None);
        assert!(s.contains("assert ((not (input.numel() > 0)) or bool(torch.isfinite(result).all()))"), "{s}");
        let s = script(&a, &case, Evidence::NonFinite { output: 0 }, None, None);
        assert!(s.contains("assert torch.isfinite(result).all()"), "{s}");
    }
}
