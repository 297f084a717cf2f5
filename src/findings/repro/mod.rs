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
//!
//! `inputs` rebuilds the tensors (and `forward` a `from` statement's forward call), `call` writes
//! the call, `python` spells values; the body after the call is `ensures`, `differential` (with
//! `variant`, the variant's side), `gradient` or `relation`.
mod call;
mod differential;
mod ensures;
mod forward;
mod gradient;
mod inputs;
mod python;
mod relation;
mod variant;

use std::fmt::Write as _;

pub use call::call;
pub use inputs::{inputs, tensor_lines, vars};
pub use python::{promoted, py_float, py_str};

use crate::ops::binding::{ArgSource, OpBinding};
use crate::ops::schema::{self, SchemaType};
use crate::oracle::{Disagreement, Evidence};
use crate::spec::ApiSpec;
use crate::wire::case::{Arg, Case, TensorRecipe};
use crate::wire::variant::{Check, Variant};

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
    /// glibc said the worker's heap was damaged: the script repeats the call even where the
    /// worker died on the first, as under Python another free may be the one that notices.
    pub damaged_heap: bool,
}

/// How many times a reproducer calls an API whose damage shows late, at least: Python's
/// allocations differ from the worker's, so the call that dies differs too (`linalg.eig` died on
/// the 2nd call in sfz's worker and on the 5th to 8th under Python).
const REPEAT_CALLS: u32 = 64;

impl Reproducer<'_> {
    /// The script.
    pub fn render(&self) -> String {
        let mut w = Writer { r: self, vars: vars(self.api, self.case), uses_math: false, uses_components: false };
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
        if w.uses_components {
            out.push_str("\n\ndef components(t):\n    \"\"\"The values a spec bounds: a complex tensor's real and imaginary parts.\"\"\"\n    return torch.view_as_real(t) if t.is_complex() else t\n\n");
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
    Reproducer { api, binding, case, evidence: &Evidence::Call, check: None, twin: None, header, expect: "", calls: 1, damaged_heap: false }.render()
}

/// One script being written: what it is made from, a variable per argument, and whether it
/// needs `import math`.
struct Writer<'a> {
    r: &'a Reproducer<'a>,
    vars: Vec<String>,
    uses_math: bool,
    /// Whether a `values` bound was written, which reads complex tensors by their parts.
    uses_components: bool,
}

impl Writer<'_> {
    /// What follows the inputs: the call and what says the bug is there.
    fn body(&mut self) -> String {
        let r = self.r;
        let call = call(r.api, r.binding, r.case, &self.vars);
        match r.evidence {
            Evidence::Call if r.calls > 1 || r.damaged_heap => {
                let n = REPEAT_CALLS.max(4 * r.calls);
                let expect = if r.expect.is_empty() { String::new() } else { format!("  # {} within a few calls", r.expect) };
                let when = if r.calls > 1 {
                    format!("sfz's worker died on call {} of this input", r.calls)
                } else {
                    "sfz's worker died on the first call; under Python another free may be the one that notices".into()
                };
                format!(
                    "# One call damages the heap and may still return or raise; glibc notices at a later free\n\
                     # ({when}), so the call is repeated.\n\
                     for _ in range({n}):\n    try:\n        {call}{expect}\n    except RuntimeError:\n        pass  # raising does not undo the damage\n"
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
                    // The clause speaks of the inputs as given (`igamma_`'s domain guard).
                    Some(e) => format!("result = {call}\n{}assert {e}, {}\n", self.rebuilt(), py_str(&format!("postcondition `{}` does not hold", c.text))),
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

    /// After a mutating call (`abs_`, `out=`, `igamma_`): lines building its inputs again, so
    /// that what follows starts from the values it was given, as sfz's worker does. Empty for
    /// other calls.
    pub(super) fn rebuilt(&self) -> String {
        if schema::parse(&self.r.binding.schema).is_ok_and(|s| s.has_mutable_args()) {
            format!("# the call wrote into its inputs: build them again\n{}", inputs(self.r.case, self.r.binding, &self.vars))
        } else {
            String::new()
        }
    }

    /// The tensor arguments rewritten by `f(var, recipe)` (list elements one by one).
    /// The name of the schema argument that the case's argument `arg` fills, when one does.
    fn schema_arg_name(&self, arg: usize) -> Option<String> {
        let position = self.r.binding.args.iter().position(|s| matches!(s, ArgSource::Param { index, .. } if *index == arg))?;
        schema::parse(&self.r.binding.schema).ok()?.args.get(position).map(|a| a.name.clone())
    }

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
    /// tensor return, else `name[k]`; where lists sit among several returns (`_fused_sgd`'s
    /// five lists), the `k`th tensor of them all in order, as sfz's worker numbers them.
    fn output(&self, name: &str, k: usize) -> String {
        let returns = schema::parse(&self.r.binding.schema).map(|s| s.returns);
        let single = returns.as_ref().map_or(true, |r| r.len() == 1 && r[0].ty == SchemaType::Tensor);
        let returns = returns.unwrap_or_default();
        let nested = returns.len() > 1 && returns.iter().any(|r| matches!(r.ty, SchemaType::List(..)));
        if single && k == 0 {
            name.to_string()
        } else if nested {
            format!("[t for r in {name} for t in (r if isinstance(r, (list, tuple)) else [r])][{k}]")
        } else {
            format!("{name}[{k}]")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::first_api as api;
    use crate::ops::catalog::Catalog;
    use crate::ops::registry;
    use crate::wire::case::{DType, Fill, Layout, Special};
    use crate::wire::oracle::Oracle;
    use crate::wire::variant::Tolerances;
    use crate::wire::variant::{GradientKind, Tolerance};

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
        Reproducer { api: a, binding: &b, case, evidence: &evidence, check, twin, header: "sfz finding t", expect: "", calls: 1, damaged_heap: false }.render()
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
        let render_heap = |calls, damaged_heap| {
            Reproducer {
                api: &eig,
                binding: &b,
                case: &case,
                evidence: &Evidence::Call,
                check: None,
                twin: None,
                header: "sfz finding t",
                expect: "dies with SIGABRT",
                calls,
                damaged_heap,
            }
            .render()
        };
        let render = |calls| render_heap(calls, false);
        insta::assert_snapshot!("late_death", render(25));
        assert!(render(1).ends_with("torch.linalg.eig(input)  # dies with SIGABRT\n"), "{}", render(1));
        assert!(render(40).contains("for _ in range(160):"), "four times the worker's calls when that is more");
        // glibc saw a damaged heap at the worker's first call: Python may notice later.
        let first = render_heap(1, true);
        assert!(first.contains("for _ in range(64):") && first.contains("died on the first call"), "{first}");
    }

    /// A death in a check that showed in a later round (call and check): the round is repeated.
    #[test]
    fn a_late_death_in_a_check_repeats_the_round() {
        let exp = api("api torch.exp(input: Tensor) -> Tensor {}");
        let case = Case { op: 0, args: vec![Arg::Tensor(recipe())], forward: None };
        let layout = check(Oracle::Layout, Variant::Layout);
        let evidence = Evidence::Differential { check: 0, what: Disagreement::VariantFails };
        let b = bind(&exp);
        let render = |calls| {
            Reproducer {
                api: &exp,
                binding: &b,
                case: &case,
                evidence: &evidence,
                check: Some(&layout),
                twin: None,
                header: "sfz finding t",
                expect: "",
                calls,
                damaged_heap: false,
            }
            .render()
        };
        insta::assert_snapshot!("late_death_in_check", render(3));
        assert!(!render(1).contains("for _ in range"), "{}", render(1));
    }

    /// Lists among several returns are numbered as the worker flattens them, and a list's
    /// other layout is not named like its elements.
    #[test]
    fn outputs_of_list_returns_and_relaid_lists() {
        let sgd = api("api torch.ops.aten._fused_sgd.default(input: Tensor[], grads: Tensor[], momentum_buffer_list: Tensor[], *, weight_decay: float, momentum: float, lr: float, dampening: float, nesterov: bool, maximize: bool, is_first_step: bool, grad_scale: Tensor? = None, found_inf: Tensor? = None) -> Tensor[] {}");
        let list = Arg::TensorList(vec![recipe(), recipe(), recipe()]);
        let mut args = vec![list.clone(), list, Arg::TensorList(vec![])];
        args.extend([Arg::Float(0.0), Arg::Float(0.0), Arg::Float(0.1), Arg::Float(0.0), Arg::Bool(false), Arg::Bool(false), Arg::Bool(false), Arg::Omitted, Arg::Omitted]);
        let case = Case { op: 0, args, forward: None };
        let layout = check(Oracle::Layout, Variant::Layout);
        let s = script(&sgd, &case, values(4), Some(&layout), None);
        assert!(s.contains("input_relaid = [input_0.mT.contiguous().mT, "), "{s}");
        assert!(s.contains("[t for r in variant for t in (r if isinstance(r, (list, tuple)) else [r])][4]"), "{s}");
        assert!(!s.contains("input_2 = ["), "{s}");
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
        for (name, kind, index) in
            [("gradient_numeric", GradientKind::Numeric, 4), ("gradient_forward", GradientKind::Forward, 0), ("gradient_non_finite", GradientKind::NonFinite, 1)]
        {
            let at = crate::oracle::GradientAt { kind, arg: 1, tensor: 0, index };
            insta::assert_snapshot!(name, script(&mm, &case2, Evidence::Differential { check: 0, what: Disagreement::Derivative(at) }, Some(&gradient), None));
        }
        insta::assert_snapshot!("gradient_fails", script(&mm, &case2, Evidence::Differential { check: 0, what: Disagreement::VariantFails }, Some(&gradient), None));
        // Through a transposed `input`: the views are made after `f`'s copies.
        let mut relaid = case2.clone();
        if let Arg::Tensor(r) = &mut relaid.args[0] {
            r.layout = Layout::Transposed;
        }
        let at = crate::oracle::GradientAt { kind: GradientKind::Layout, arg: 1, tensor: 0, index: 2 };
        insta::assert_snapshot!("gradient_layout", script(&mm, &relaid, Evidence::Differential { check: 0, what: Disagreement::Derivative(at) }, Some(&gradient), None));
        let cuda = check(Oracle::Cuda, Variant::Cuda);
        insta::assert_snapshot!("cuda", script(&mm, &case2, values(0), Some(&cuda), None));
        // Through the in-place twin, on the same copies.
        let lerp = api("api torch.lerp(input: Tensor, end: Tensor, weight: Tensor) -> Tensor {}");
        let (twin, _) = crate::ops::twins::inplace_binding(&bind(&lerp), &catalog()).unwrap();
        let case3 =
            Case { op: 0, args: vec![Arg::Tensor(recipe()), Arg::Tensor(TensorRecipe { seed: 7, ..recipe() }), Arg::Tensor(TensorRecipe { seed: 8, ..recipe() })], forward: None };
        let at = crate::oracle::GradientAt { kind: GradientKind::InPlace, arg: 2, tensor: 0, index: 1 };
        insta::assert_snapshot!("gradient_in_place", script(&lerp, &case3, Evidence::Differential { check: 0, what: Disagreement::Derivative(at) }, Some(&gradient), Some(&twin)));
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
    fn a_mutating_calls_postcondition_reads_its_inputs_as_given() {
        let a = api("api torch.ops.aten.igamma_(input: Tensor, other: Tensor) -> Tensor { ensures input.values >= 0.0 => no_nan(result); }");
        let case = Case { op: 0, args: vec![Arg::Tensor(recipe()), Arg::Tensor(recipe())], forward: None };
        let s = script(&a, &case, Evidence::Postcondition { clause: 0 }, None, None);
        let call = s.find("result = torch.ops.aten.igamma_.default(input, other)").expect(&s);
        let rebuilt = s.find("# the call wrote into its inputs: build them again").expect(&s);
        let asserted = s.find("components(input) >= 0.0").expect(&s);
        assert!(call < rebuilt && rebuilt < asserted, "{s}");
    }

    #[test]
    fn a_mutating_calls_extrapolation_starts_from_its_inputs_as_given() {
        let a = api("api torch.ops.aten.i0_(input: Tensor) -> Tensor {}");
        let case = Case { op: 0, args: vec![Arg::Tensor(TensorRecipe { dtype: DType::Float64, ..recipe() })], forward: None };
        let what = Evidence::Differential { check: 0, what: Disagreement::Extrapolated { output: 0 } };
        let s = script(&a, &case, what, Some(&check(Oracle::Overflow, Variant::Promote)), None);
        let call = s.find("result = torch.ops.aten.i0_.default(input)").expect(&s);
        let rebuilt = s.find("# the call wrote into its inputs: build them again").expect(&s);
        let scaled = s.find("out = torch.ops.aten.i0_.default(input * t)").expect(&s);
        assert!(call < rebuilt && rebuilt < scaled, "{s}");
    }

    #[test]
    fn an_output_left_unwritten_is_shown_by_calling_twice() {
        let a = api("api torch.ops.aten.multi_margin_loss(self: Tensor, target: Tensor, p: int = 1, margin: float = 1.0, weight: Tensor? = None, reduction: int = 1) -> Tensor {}");
        let target = TensorRecipe { dtype: DType::Int64, shape: vec![0], fill: Fill::Int { lo: 0, hi: 2 }, ..recipe() };
        let args = vec![Arg::Tensor(TensorRecipe { shape: vec![0, 2], ..recipe() }), Arg::Tensor(target), Arg::Int(1), Arg::Float(1.5), Arg::None, Arg::Int(2)];
        let case = Case { op: 0, args, forward: None };
        let what = Evidence::Differential { check: 0, what: Disagreement::Uninitialised { output: 0 } };
        insta::assert_snapshot!("uninitialised", script(&a, &case, what, Some(&check(Oracle::Layout, Variant::Layout)), None));
    }

    #[test]
    fn postconditions_become_assertions() {
        let a = api("api torch.nn.functional.softmax(input: Tensor, dim: int) -> Tensor { ensures result.shape == input.shape; ensures result.values in 0.0..=1.0; ensures input.numel > 0 => finite(result); }");
        let case = Case { op: 0, args: vec![Arg::Tensor(recipe()), Arg::Int(1)], forward: None };
        let s = script(&a, &case, Evidence::Postcondition { clause: 0 }, None, None);
        assert!(s.contains("assert (list(result.shape) == list(input.shape)), \"postcondition `result.shape == input.shape` does not hold\""), "{s}");
        let s = script(&a, &case, Evidence::Postcondition { clause: 1 }, None, None);
        assert!(s.contains("assert bool(((components(result) >= 0.0) & (components(result) <= 1.0)).all())") && s.contains("def components(t):"), "{s}");
        let s = script(&a, &case, Evidence::Postcondition { clause: 2 }, None, None);
        assert!(s.contains("assert ((not (input.numel() > 0)) or bool(torch.isfinite(result).all()))"), "{s}");
        let s = script(&a, &case, Evidence::NonFinite { output: 0 }, None, None);
        assert!(s.contains("assert torch.isfinite(result).all()"), "{s}");
    }
}
