//! Per-program reports, the fields users of the Soft Assertion Fuzzer read (status, oracle,
//! input, soft-assertion signal, severity, elapsed time), and Python reproducers that replay
//! the program's chain in pip torch on the inputs found.
use std::fmt::Write as _;

use serde::Serialize;

use super::driver::{Outcome, Status};
use crate::findings::repro::{py_float, py_str};
use crate::spec::ProgramSpec;
use crate::wire::case::Arg;
use crate::wire::program::hunt::{Fired, InputValues, PathPoint, Strategy};
use crate::wire::program::ir::{Operand, ProgramIr};
use crate::wire::program::ops::{Kind, NumOp};

/// How a program's hunt ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HuntStatus {
    Bug,
    Clean,
    Rejected,
    Crashed,
    Hang,
}

impl HuntStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            HuntStatus::Bug => "bug",
            HuntStatus::Clean => "clean",
            HuntStatus::Rejected => "rejected",
            HuntStatus::Crashed => "crashed",
            HuntStatus::Hang => "hang",
        }
    }

    /// Whether the hunt found something wrong with the program.
    pub fn is_bad(self) -> bool {
        matches!(self, HuntStatus::Bug | HuntStatus::Crashed | HuntStatus::Hang)
    }
}

/// How bad a hunt's finding is: a NaN or a crash is high, an INF alone medium.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HuntSeverity {
    High,
    Medium,
    None,
}

impl HuntSeverity {
    pub fn as_str(self) -> &'static str {
        match self {
            HuntSeverity::High => "high",
            HuntSeverity::Medium => "medium",
            HuntSeverity::None => "none",
        }
    }
}

/// One program's report, as `sfz hunt` writes it (JSON) and prints it.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub program: String,
    pub status: HuntStatus,
    /// The oracle that fired: `nan_inf`, `rewrite`, `range`, `wider`, `crash` or `hang`.
    pub oracle: Option<&'static str>,
    /// The step whose output went non-finite, its op and source text.
    pub step: Option<String>,
    pub op: Option<String>,
    pub expr: Option<String>,
    pub nan: u64,
    pub inf: u64,
    pub severity: HuntSeverity,
    /// The inputs that made it, per tensor parameter.
    pub input: Vec<(String, InputValues)>,
    pub soft_assertion: Option<SoftReport>,
    /// The precision model's strongest warning: a step likely to lose precision against
    /// float64 (a warning only, never a finding).
    pub precision_warning: Option<SoftReport>,
    pub strategy: &'static str,
    pub elapsed_ms: f64,
    /// Microseconds inside the worker from the episode's start to the finding.
    pub time_to_find_us: Option<u64>,
    pub evals: u64,
    pub episodes: u32,
    pub path: Vec<PathPoint>,
    /// Why the program was rejected or how the worker died.
    pub message: Option<String>,
    /// The reproducer's file name, when one was written.
    pub reproducer: Option<String>,
    /// For a program traced from a script: the script's call that went bad and what to guard.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub script: Option<super::script::site::ScriptFinding>,
}

#[derive(Clone, Debug, Serialize)]
pub struct SoftReport {
    pub step: String,
    pub op: String,
    pub probability: f64,
    /// The evaluation at which it first fired.
    pub eval: u32,
}

fn soft_report(ir: &ProgramIr, s: &crate::wire::program::hunt::SoftSignal) -> Option<SoftReport> {
    let st = ir.steps.get(s.step as usize)?;
    Some(SoftReport { step: st.name.clone(), op: st.short().to_string(), probability: s.probability, eval: s.eval })
}

pub fn report(program: &ProgramSpec, outcome: &Outcome, strategy: Strategy) -> Report {
    let ir = &program.ir;
    let step_of = |k: u32| ir.steps.get(k as usize);
    let mut r = Report {
        program: program.name.clone(),
        status: HuntStatus::Clean,
        oracle: None,
        step: None,
        op: None,
        expr: None,
        nan: 0,
        inf: 0,
        severity: HuntSeverity::None,
        input: Vec::new(),
        soft_assertion: outcome.soft.as_ref().and_then(|s| soft_report(ir, s)),
        precision_warning: outcome.imprecise.as_ref().and_then(|s| soft_report(ir, s)),
        strategy: strategy.name(),
        elapsed_ms: outcome.elapsed.as_secs_f64() * 1e3,
        time_to_find_us: None,
        evals: outcome.evals,
        episodes: outcome.episodes,
        path: outcome.last.as_ref().map(|l| l.path.clone()).unwrap_or_default(),
        message: None,
        reproducer: None,
        script: None,
    };
    match &outcome.status {
        Status::Found(f) => {
            r.status = HuntStatus::Bug;
            r.oracle = Some(f.fired.name());
            if let Some(st) = step_of(f.step) {
                r.step = Some(st.name.clone());
                r.op = Some(st.python());
                r.expr = program.step_text.get(f.step as usize).cloned();
            }
            r.nan = f.nan;
            r.inf = f.inf;
            r.severity = if f.nan > 0 { HuntSeverity::High } else { HuntSeverity::Medium };
            r.message = match &f.fired {
                Fired::NonFinite => None,
                Fired::Rewrite(rw) => Some(format!("finite but {} where the stable form {} gives {}", py_float(rw.naive), rw.stable.stable.name, py_float(rw.stable_value))),
                Fired::Range(rf) => Some(format!(
                    "{} is outside [{}, {}], {}",
                    py_float(rf.value),
                    bound(rf.range.lo),
                    bound(rf.range.hi),
                    match (&rf.range.declared, step_of(f.step)) {
                        (Some(text), _) => format!("which `{text}` declares"),
                        (None, Some(st)) => format!("the range of {}", st.python()),
                        (None, None) => "its op's range".to_string(),
                    }
                )),
                Fired::Wider(w) => Some(format!(
                    "{} in {}, where the same program in float64 gives {}",
                    py_float(w.got),
                    f.steps.get(f.step as usize).and_then(|s| s.dtype).map_or("its dtype", |d| d.name()),
                    py_float(w.want)
                )),
            };
            r.time_to_find_us = Some(f.micros);
            r.input = f.inputs.iter().enumerate().filter_map(|(i, v)| Some((ir.params[i].clone(), v.clone()?))).collect();
        }
        Status::Clean => {}
        Status::Rejected(m) => {
            r.status = HuntStatus::Rejected;
            r.message = Some(m.clone());
        }
        Status::Crashed(m) => {
            r.status = HuntStatus::Crashed;
            r.oracle = Some("crash");
            r.severity = HuntSeverity::High;
            r.message = Some(m.clone());
        }
        Status::Hung(m) => {
            r.status = HuntStatus::Hang;
            r.oracle = Some("hang");
            r.severity = HuntSeverity::High;
            r.message = Some(m.clone());
        }
    }
    r
}

/// A range's bound as people read it (`inf`, not Python's `float("inf")`).
fn bound(v: f64) -> String {
    if v.is_infinite() {
        v.to_string()
    } else {
        py_float(v)
    }
}

/// A Python name for value `v`: a `let` keeps its name, an intermediate is `_sK`.
fn py_name(ir: &ProgramIr, v: u32) -> String {
    let name = ir.value_name(v);
    let ident = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !name.starts_with(|c: char| c.is_ascii_digit());
    if !ident {
        format!("_s{}", v as usize - ir.params.len())
    } else if ["torch", "sys", "steps", "math"].contains(&name) || ["in", "is", "if", "or", "and", "not", "def", "del", "for", "as", "lambda", "None"].contains(&name) {
        format!("{name}_")
    } else {
        name.to_string()
    }
}

fn py_operand(ir: &ProgramIr, o: &Operand) -> String {
    match o {
        Operand::Value(v) => py_name(ir, *v),
        Operand::Float(f) => py_float(*f),
        Operand::Int(i) => i.to_string(),
        Operand::Bool(b) => {
            if *b {
                "True".into()
            } else {
                "False".into()
            }
        }
        Operand::Dtype(d) => format!("torch.{}", d.name()),
        Operand::None => "None".into(),
        Operand::Ints(xs) => format!("[{}]", xs.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")),
        Operand::Tensors(vs) => format!("[{}]", vs.iter().map(|v| v.map_or_else(|| "None".to_string(), |v| py_name(ir, v))).collect::<Vec<_>>().join(", ")),
        Operand::Str(s) => py_str(s),
    }
}

/// One step as a Python expression.
pub fn py_step(ir: &ProgramIr, k: usize) -> String {
    let step = &ir.steps[k];
    let a: Vec<String> = step.args.iter().map(|o| py_operand(ir, o)).collect();
    let infix = |op: &str| format!("{} {op} {}", a[0], a[1]);
    if let Some(call) = &step.aten {
        // Indexed whenever the operator returns a tuple, which Python's call gives as it is.
        return format!("_out({}({}), {})", call.python(), call.arguments(&a, "=").join(", "), call.output);
    }
    match step.op {
        NumOp::Add => infix("+"),
        NumOp::Sub => infix("-"),
        NumOp::Mul => infix("*"),
        NumOp::Div => infix("/"),
        NumOp::To => format!("{}.to({})", a[0], a[1]),
        op => {
            let sig = op.sig();
            let mut args = Vec::new();
            for (i, ((name, kind, default), text)) in sig.params.iter().zip(&a).enumerate() {
                let is_default = match default {
                    Some(crate::wire::program::ops::Default::None) => step.args[i] == Operand::None,
                    Some(crate::wire::program::ops::Default::Int(v)) => step.args[i] == Operand::Int(*v),
                    Some(crate::wire::program::ops::Default::Float(v)) => step.args[i] == Operand::Float(*v),
                    Some(crate::wire::program::ops::Default::Bool(v)) => step.args[i] == Operand::Bool(*v),
                    None => false,
                };
                if is_default {
                    continue;
                }
                if i == 0 || (*kind == Kind::Tensor || *kind == Kind::Number) && default.is_none() {
                    args.push(text.clone());
                } else {
                    args.push(format!("{name}={text}"));
                }
            }
            format!("{}({})", op.python(), args.join(", "))
        }
    }
}

/// A Python script that rebuilds the inputs found and replays the chain; it prints the first
/// step whose output is non-finite from finite inputs and exits 1 when the bug reproduces.
pub fn python_reproducer(program: &ProgramSpec, outcome: &Outcome, header: &str) -> Option<String> {
    let Status::Found(found) = &outcome.status else { return None };
    let ir = &program.ir;
    let mut out = String::new();
    for line in header.lines() {
        let _ = writeln!(out, "{}", format!("# {line}").trim_end());
    }
    out.push_str("import sys\nimport torch\n\ntorch.set_num_threads(1)\n\n");
    if ir.steps.iter().any(|s| s.aten.is_some()) {
        // An ATen operator's flattened output `k`, as the worker took it.
        out.push_str("def _out(r, k):\n    if isinstance(r, torch.Tensor):\n        return r\n    flat = [x for o in r for x in (o if isinstance(o, (list, tuple)) else [o])]\n    return flat[k]\n\n");
    }
    for (i, p) in ir.params.iter().enumerate() {
        let name = py_name(ir, i as u32);
        let text = match (found.inputs.get(i).cloned().flatten(), outcome.inputs.get(i)) {
            (Some(v), _) => format!(
                "torch.tensor([{}], dtype=torch.float64).to(torch.{}).reshape([{}])",
                v.values.iter().map(|x| py_float(*x)).collect::<Vec<_>>().join(", "),
                v.dtype.name(),
                v.shape.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")
            ),
            (None, Some(Arg::Float(f))) => py_float(*f),
            (None, Some(Arg::Int(x))) => x.to_string(),
            (None, Some(Arg::Bool(b))) => {
                if *b {
                    "True".into()
                } else {
                    "False".into()
                }
            }
            (None, Some(Arg::Dtype(d))) => format!("torch.{}", d.name()),
            _ => "None".into(),
        };
        let _ = writeln!(out, "{name} = {text}  # {p}");
    }
    out.push_str("\nsteps = []\n");
    for (k, step) in ir.steps.iter().enumerate() {
        let v = (ir.params.len() + k) as u32;
        let name = py_name(ir, v);
        let reads: Vec<String> = ProgramIr::reads(step).map(|r| py_name(ir, r)).collect();
        let text = program.step_text.get(k).map(String::as_str).unwrap_or("");
        let _ = writeln!(out, "{name} = {}  # {}", py_step(ir, k), text.replace('\n', " "));
        let _ = writeln!(out, "steps.append(({:?}, {name}, [{}]))", step.name, reads.join(", "));
    }
    out.push_str(
        r#"
def finite(t):
    return not isinstance(t, torch.Tensor) or bool(torch.isfinite(t).all())

for name, value, inputs in steps:
    nonempty = all(not isinstance(i, torch.Tensor) or i.numel() > 0 for i in inputs)
    if nonempty and all(finite(i) for i in inputs) and not finite(value):
        print("sfz-nonfinite:", name)
        print(value)
        sys.exit(1)
"#,
    );
    let dtype = found.steps.get(found.step as usize).and_then(|s| s.dtype);
    let fired_name = ir.steps.get(found.step as usize).map_or("", |s| s.name.as_str());
    let fired_value = py_name(ir, ir.params.len() as u32 + found.step);
    if let Fired::Range(rf) = &found.fired {
        // The range oracle: the step's finite values against the range, as the worker compared.
        let (lo, hi) = crate::wire::program::range::limits(rf.range.lo, rf.range.hi, dtype);
        let _ = writeln!(out, "v = {fired_value}.double()");
        let _ = writeln!(out, "bad = torch.isfinite(v) & ((v < {}) | (v > {}))", py_float(lo), py_float(hi));
        let _ = writeln!(out, "if bool(bad.any()):");
        let _ = writeln!(out, "    print(\"sfz-range:\", {fired_name:?}, \"outside [{}, {}]\")", bound(rf.range.lo), bound(rf.range.hi));
        let _ = writeln!(out, "    print(v[bad])");
        let _ = writeln!(out, "    sys.exit(1)");
    }
    if let Fired::Wider(_) = &found.fired {
        // The wider-float oracle: the same chain with its floating inputs in float64.
        let params: Vec<String> = (0..ir.params.len()).map(|i| py_name(ir, i as u32)).collect();
        out.push_str("\ndef _to(t, dtype, wide):\n    return t.to(dtype).double() if wide and dtype.is_floating_point else t.to(dtype)\n\n");
        let _ = writeln!(out, "def program(wide, {}):", params.join(", "));
        for (k, step) in ir.steps.iter().enumerate().take(found.step as usize + 1) {
            let name = py_name(ir, (ir.params.len() + k) as u32);
            let text = match step.op {
                NumOp::To => format!("_to({}, {}, wide)", py_operand(ir, &step.args[0]), py_operand(ir, &step.args[1])),
                _ => py_step(ir, k),
            };
            let _ = writeln!(out, "    {name} = {text}");
        }
        let _ = writeln!(out, "    return {fired_value}\n");
        let _ = writeln!(out, "wide = [p.double() if isinstance(p, torch.Tensor) and p.is_floating_point() else p for p in ({},)]", params.join(", "));
        let _ = writeln!(out, "a, b = {fired_value}.double(), program(True, *wide)");
        let _ = writeln!(out, "scale = float(b[torch.isfinite(b)].abs().max()) if bool(torch.isfinite(b).any()) else 0.0");
        let _ = writeln!(
            out,
            "bad = torch.isfinite(a) & torch.isfinite(b) & ((a - b).abs() > {} * b.abs() + max(1e-6 * scale, {}))",
            py_float(crate::wire::program::hunt::wider_tolerance(dtype)),
            py_float(crate::wire::program::hunt::wider_atol(dtype))
        );
        let _ = writeln!(out, "if bool(bad.any()):");
        let _ = writeln!(out, "    print(\"sfz-wider:\", {fired_name:?}, \"differs from the same program in float64\")");
        let _ = writeln!(out, "    print(a[bad], b[bad])");
        let _ = writeln!(out, "    sys.exit(1)");
    }
    if let Fired::Rewrite(rw) = &found.fired {
        // The formula-rewrite oracle: the chain against its stable form, as the worker compared.
        let mut with_stable = ir.clone();
        with_stable.steps.push(rw.stable.stable.clone());
        let naive = py_name(ir, (ir.params.len() as u32) + rw.stable.step);
        let _ = writeln!(out, "stable = {}", py_step(&with_stable, ir.steps.len()));
        let _ = writeln!(out, "a, b = {naive}.double(), stable.double()");
        let _ = writeln!(out, "ok = torch.isfinite(a) & torch.isfinite(b)");
        let _ = writeln!(out, "bad = ok & ((a - b).abs() > {} + {} * b.abs())", py_float(crate::wire::program::rewrite::ATOL), py_float(crate::wire::program::rewrite::RTOL));
        let _ = writeln!(out, "if bool(bad.any()):");
        let _ = writeln!(out, "    print(\"sfz-rewrite:\", {:?}, \"differs from {}\")", ir.steps[rw.stable.step as usize].name, rw.stable.stable.name);
        let _ = writeln!(out, "    print(a[bad], b[bad])");
        let _ = writeln!(out, "    sys.exit(1)");
    }
    out.push_str("print(\"sfz-finite\")\n");
    Some(out)
}
