//! A finding on a traced program told in the script's terms: the file and line of the call that
//! first produced the bad value, the value to guard (the operand that drove it there, and where
//! the script made that operand) and the usual guard for that call.
use serde::Serialize;

use super::lower::{let_of, Lowered, Site};
use crate::spec::ProgramSpec;
use crate::wire::program::hunt::Found;
use crate::wire::program::ir::{Operand, ProgramIr};
use crate::wire::program::ops::NumOp;

/// The script side of a finding.
#[derive(Clone, Debug, Serialize)]
pub struct ScriptFinding {
    /// The call whose output went bad.
    pub site: Site,
    /// The operand to guard: its name in the traced program and where the script made it
    /// (None: an input of the traced region).
    pub guard: String,
    /// The script's name for it, when the line that made it assigns one name (`p = ...`).
    pub guard_variable: Option<String>,
    pub guard_site: Option<Site>,
    /// How such a call is usually made safe.
    pub advice: &'static str,
    /// The inputs the failing value depends on that the hunt moved furthest beyond what the
    /// script showed, furthest first: which weight or input, at what magnitude, drove it.
    pub drivers: Vec<Driver>,
}

/// An input of the hunt that drove a finding.
#[derive(Clone, Debug, Serialize)]
pub struct Driver {
    /// Its name in the traced program.
    pub param: String,
    /// A weight (which training moves), else data.
    pub weight: bool,
    /// The script's name for it, when known (`model.fc.weight`, or the variable its line assigns).
    pub name: Option<String>,
    /// The largest magnitude the script showed, and the one that made the value bad.
    pub seen: f64,
    pub found: f64,
}

/// At most this many drivers are named.
const DRIVERS: usize = 2;

/// The parameters step `k` reads, directly or through earlier steps.
fn ancestors(program: &ProgramSpec, k: usize) -> Vec<u32> {
    let ir = &program.ir;
    let n = ir.params.len() as u32;
    let mut seen = vec![false; ir.params.len() + ir.steps.len()];
    let mut todo = vec![n + k as u32];
    let mut params = Vec::new();
    while let Some(v) = todo.pop() {
        if std::mem::replace(&mut seen[v as usize], true) {
            continue;
        }
        match v.checked_sub(n) {
            Some(s) => todo.extend(ProgramIr::reads(&ir.steps[s as usize])),
            None => params.push(v),
        }
    }
    params
}

/// The inputs of step `found.step` the hunt moved furthest from the script's magnitudes.
fn drivers(program: &ProgramSpec, lowered: &Lowered, found: &Found) -> Vec<Driver> {
    let mut out: Vec<Driver> = ancestors(program, found.step as usize)
        .into_iter()
        .filter_map(|v| {
            let param = program.ir.params.get(v as usize)?.clone();
            let origin = lowered.origins.get(&param)?;
            let values = found.inputs.get(v as usize)?.as_ref()?;
            let found = values.values.iter().filter(|x| x.is_finite()).fold(0.0f64, |m, x| m.max(x.abs()));
            let name = origin.name.clone().or_else(|| lowered.params.get(&param).cloned().flatten().and_then(|s| assigned(&s.code)));
            // Moved beyond what the script showed (a weight at 0 that grew counts too).
            (found > 1.5 * origin.seen && found > 0.0).then_some(Driver { param, weight: origin.weight, name, seen: origin.seen, found })
        })
        .collect();
    out.sort_by(|a, b| (b.found / b.seen.max(1e-30)).total_cmp(&(a.found / a.seen.max(1e-30))));
    out.truncate(DRIVERS);
    out
}

pub fn explain(program: &ProgramSpec, lowered: &Lowered, found: &Found) -> Option<ScriptFinding> {
    let step = program.ir.steps.get(found.step as usize)?;
    let site = lowered.lets.get(let_of(&step.name))?.clone();
    // The operand that drives the failure: the divisor of a division, else the first tensor.
    let tensors: Vec<u32> = step.args.iter().filter_map(|a| if let Operand::Value(v) = a { Some(*v) } else { None }).collect();
    let pick = match step.op {
        NumOp::Div if tensors.len() == 2 => tensors[1],
        _ => *tensors.first()?,
    };
    let name = program.ir.value_name(pick).to_string();
    let root = let_of(&name).to_string();
    let guard_site = lowered.lets.get(&root).cloned().or_else(|| lowered.params.get(&root).cloned().flatten());
    // The line's assigned name holds this value only when it is the line's last call.
    let index = |n: &str| n.trim_start_matches('v').parse::<u64>().ok();
    let last_on_line =
        guard_site.as_ref().is_some_and(|g| lowered.lets.iter().filter(|(_, s)| s.file == g.file && s.line == g.line).filter_map(|(n, _)| index(n)).max() == index(&root));
    let guard_variable = guard_site.as_ref().filter(|_| last_on_line || lowered.params.contains_key(&root)).and_then(|g| assigned(&g.code));
    Some(ScriptFinding { site, guard: root, guard_variable, guard_site, advice: advice(step.op), drivers: drivers(program, lowered, found) })
}

/// The name a line of Python assigns, when it assigns exactly one (`p = torch.softmax(x)`).
fn assigned(code: &str) -> Option<String> {
    let (lhs, rhs) = code.split_once('=')?;
    let lhs = lhs.trim();
    let simple = !lhs.is_empty() && lhs.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.') && !lhs.starts_with(|c: char| c.is_ascii_digit());
    (simple && !rhs.starts_with('=')).then(|| lhs.to_string())
}

/// The usual guard for a call that produced NaN or INF.
pub fn advice(op: NumOp) -> &'static str {
    match op {
        NumOp::Log | NumOp::Log2 | NumOp::Log10 => "its input reaches 0 or below: clamp it (x.clamp_min(eps)), or use the stable form (log_softmax, logsumexp, BCE with logits)",
        NumOp::Log1p => "its input reaches -1 or below: clamp it",
        NumOp::Sqrt | NumOp::Rsqrt => "its input reaches 0 or below (or its gradient at 0 is infinite): clamp it (x.clamp_min(eps))",
        NumOp::Div | NumOp::Reciprocal => "the divisor reaches 0: add an eps or clamp its magnitude",
        NumOp::Exp | NumOp::Expm1 | NumOp::Sinh | NumOp::Cosh => "its input is large enough to overflow: subtract the maximum first, or use the stable form (softmax, logsumexp)",
        NumOp::Pow => "a negative base with a fractional exponent, or an overflow: clamp the base",
        NumOp::Acos | NumOp::Asin | NumOp::Erfinv => "its input leaves the domain [-1, 1]: clamp it slightly inside",
        NumOp::Mul | NumOp::Matmul | NumOp::Linear | NumOp::Square | NumOp::Sum | NumOp::Mean | NumOp::Var | NumOp::Std | NumOp::Norm | NumOp::Add | NumOp::Sub => {
            "the values overflow or meet 0 * inf: rescale the inputs, or compute in float64"
        }
        _ => "the input makes the call non-finite: guard it before the call",
    }
}
