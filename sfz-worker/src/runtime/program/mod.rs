//! The program interpreter and the hunt: programs run step by step on tch tensors, keeping every
//! intermediate; one `HuntRequest` is one search episode (random mutation or gradient steps
//! through autograd) answered with one `HuntResult`, so that a search costs no round trips.
use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tch::{Kind, Tensor};

mod apply;
mod aten;

use self::apply::{apply, apply_step, err, operand, R, V};
use super::materialize::{dtype_of, materialize};
use sfz_wire::case::{Arg, DType};
use sfz_wire::program::hunt::{
    self, Fired, Found, HuntRequest, HuntResult, InputValues, PathPoint, RangeFound, Record, RewriteFound, SoftSignal, Stats, StepObs, Strategy, WiderFound, MAX_PATH,
};
use sfz_wire::program::ir::{Operand, ProgramIr, Step};
use sfz_wire::program::ops::NumOp;
use sfz_wire::program::{range, rewrite};

/// Runs every step; `vals` holds the parameters and gets one value per step appended.
fn forward(ir: &ProgramIr, vals: &mut Vec<V>) -> R<()> {
    forward_in(ir, vals, false)
}

/// `forward`, where `widen` makes every cast to a floating dtype round to it and come back to
/// float64 (the wider-float oracle's run of the same program: the values a program rounds on
/// purpose stay rounded, the arithmetic after them is float64).
fn forward_in(ir: &ProgramIr, vals: &mut Vec<V>, widen: bool) -> R<()> {
    for step in &ir.steps {
        let args: Vec<V> = step.args.iter().map(|o| operand(vals, o)).collect();
        let out = apply_step(step, &args)?;
        let back = widen && step.op == NumOp::To && matches!(args.get(1), Some(V::D(d)) if d.is_floating());
        vals.push(V::T(if back { out.f_to_kind(Kind::Double)? } else { out }));
    }
    Ok(())
}

fn values(t: &Tensor) -> Vec<f64> {
    let flat = t.detach().to_kind(Kind::Double).reshape([-1]);
    Vec::<f64>::try_from(&flat).unwrap_or_default()
}

fn stats(t: &Tensor) -> Stats {
    let mut s = Stats { numel: t.numel() as u64, ..Stats::default() };
    let (mut lo, mut hi, mut alo, mut ahi, mut any) = (f64::INFINITY, f64::NEG_INFINITY, f64::INFINITY, 0.0f64, false);
    for v in values(t) {
        if v.is_nan() {
            s.nan += 1;
        } else if v.is_infinite() {
            s.inf += 1;
        } else {
            any = true;
            lo = lo.min(v);
            hi = hi.max(v);
            alo = alo.min(v.abs());
            ahi = ahi.max(v.abs());
        }
    }
    if any {
        (s.min, s.max, s.abs_min, s.abs_max) = (lo, hi, alo, ahi);
    }
    s
}

/// Statistics of every value (parameters and steps); None for non-tensors.
fn observe(vals: &[V]) -> Vec<Option<Stats>> {
    vals.iter().map(|v| v.tensor().map(stats)).collect()
}

/// The first step with finite, non-empty tensor operands and a non-finite output. (A reduction
/// of zero elements is NaN by definition, not a numerical bug.)
fn oracle(ir: &ProgramIr, obs: &[Option<Stats>]) -> Option<(u32, Stats)> {
    let n = ir.params.len();
    for (k, step) in ir.steps.iter().enumerate() {
        let out = obs[n + k]?;
        let inputs_finite = ProgramIr::reads(step).all(|v| obs[v as usize].is_none_or(|s| s.finite() && s.numel > 0));
        if inputs_finite && !out.finite() && !guarded(ir, obs, k) {
            return Some((k as u32, out));
        }
    }
    None
}

/// Whether the program guards step `k`'s non-finite value itself: it is read, and only by
/// guards (a clamp, a maximum, a `where`, `nan_to_num`) whose outputs are finite, or by the
/// tests that pick the guard (`isfinite`). A mask of -inf that a maximum then clamps is meant.
fn guarded(ir: &ProgramIr, obs: &[Option<Stats>], k: usize) -> bool {
    const GUARDS: &[&str] = &["where", "nan_to_num", "clamp", "clamp_min", "clamp_max", "maximum", "minimum", "masked_fill", "fmax", "fmin"];
    const TESTS: &[&str] = &["isfinite", "isnan", "isinf", "isneginf", "isposinf", "eq", "ne", "gt", "lt", "ge", "le"];
    let n = ir.params.len();
    let v = (n + k) as u32;
    let mut readers = ir.steps.iter().enumerate().filter(|(_, s)| ProgramIr::reads(s).any(|r| r == v)).peekable();
    readers.peek().is_some()
        && readers.all(|(r, s)| {
            let guard = matches!(s.op, NumOp::Clamp | NumOp::ClampMin | NumOp::Maximum | NumOp::Minimum) || (s.aten.is_some() && GUARDS.contains(&s.short()));
            (guard && obs[n + r].is_some_and(|o| o.finite())) || (s.aten.is_some() && TESTS.contains(&s.short()))
        })
}

/// The formula-rewrite oracle: the first chain whose output is finite and differs from its
/// stable form (itself finite) beyond the tolerance, with the element that differs most.
fn rewrite_oracle(ir: &ProgramIr, vals: &[V]) -> Option<(u32, RewriteFound)> {
    let n = ir.params.len();
    for r in rewrite::find(ir) {
        let args: Vec<V> = r.stable.args.iter().map(|o| operand(vals, o)).collect();
        let Ok(stable) = apply(r.stable.op, &args) else { continue };
        let Some(naive) = vals[n + r.step as usize].tensor() else { continue };
        let (Ok(a), Ok(b)) = (naive.f_to_kind(Kind::Double), stable.f_to_kind(Kind::Double)) else { continue };
        if a.size() != b.size() {
            continue;
        }
        let (a, b) = (values(&a), values(&b));
        let worst = a
            .iter()
            .zip(&b)
            .filter(|(x, y)| x.is_finite() && y.is_finite() && sfz_wire::program::rewrite::differs(**x, **y))
            .max_by(|(x1, y1), (x2, y2)| (*x1 - *y1).abs().total_cmp(&(*x2 - *y2).abs()));
        if let Some((x, y)) = worst {
            return Some((r.step, RewriteFound { stable: r, naive: *x, stable_value: *y }));
        }
    }
    None
}

/// The range oracle: the first step whose tensor operands are finite and whose finite output
/// leaves its range (an op's own range on floating outputs only: integer arithmetic wraps by
/// design), with the value furthest out.
fn range_oracle(ir: &ProgramIr, vals: &[V], obs: &[Option<Stats>]) -> Option<(u32, RangeFound)> {
    let n = ir.params.len();
    let mut ranges = range::of_program(ir);
    ranges.sort_by_key(|r| r.step);
    for r in ranges {
        let k = r.step as usize;
        let (Some(step), Some(Some(out))) = (ir.steps.get(k), obs.get(n + k)) else { continue };
        let dtype = step_dtype(vals, ir, k);
        let floating = dtype.is_some_and(DType::is_floating);
        let inputs_finite = ProgramIr::reads(step).all(|v| obs[v as usize].is_none_or(|s| s.finite() && s.numel > 0));
        if !inputs_finite || out.numel == out.nan + out.inf || (r.declared.is_none() && !floating) {
            continue;
        }
        let worst = [out.min, out.max].into_iter().filter(|v| range::outside(r.lo, r.hi, *v, dtype)).max_by(|a, b| {
            let dist = |v: f64| (r.lo - v).max(v - r.hi);
            dist(*a).total_cmp(&dist(*b))
        });
        if let Some(value) = worst {
            return Some((r.step, RangeFound { range: r, value }));
        }
    }
    None
}

/// The wider-float oracle: the program again with its floating inputs in float64; the first
/// output (a step no later step reads) in a narrower dtype that differs from its float64 run
/// beyond `hunt::wider_differs`, with the element that differs most.
fn wider_oracle(ir: &ProgramIr, vals: &[V]) -> Option<(u32, WiderFound)> {
    let n = ir.params.len();
    let mut widened = false;
    let mut wide: Vec<V> = vals[..n]
        .iter()
        .map(|v| match v {
            V::T(t) if t.is_floating_point() && t.kind() != Kind::Double => {
                widened = true;
                V::T(t.detach().to_kind(Kind::Double))
            }
            V::T(t) => V::T(t.detach()),
            v => v.shallow(),
        })
        .collect();
    if !widened || tch::no_grad(|| forward_in(ir, &mut wide, true)).is_err() {
        return None;
    }
    let read: Vec<u32> = ir.steps.iter().flat_map(ProgramIr::reads).collect();
    for k in (0..ir.steps.len()).filter(|k| !read.contains(&((n + k) as u32))) {
        let (Some(got), Some(want)) = (vals[n + k].tensor(), wide[n + k].tensor()) else { continue };
        let dtype = dtype_of(got);
        if !got.is_floating_point() || got.kind() == Kind::Double || got.size() != want.size() {
            continue;
        }
        let (a, b) = (values(got), values(want));
        let scale = b.iter().filter(|v| v.is_finite()).fold(0.0f64, |m, v| m.max(v.abs()));
        if !a.iter().zip(&b).any(|(x, y)| hunt::wider_differs(*x, *y, scale, dtype)) {
            continue;
        }
        // An error the problem's conditioning explains is no finding: the same program in
        // float64 on inputs moved by the narrow dtype's rounding moves its output as far.
        let spread = perturbed_spread(ir, &wide, n + k, dtype)?;
        let worst = a
            .iter()
            .zip(&b)
            .zip(&spread)
            .filter(|((x, y), s)| hunt::wider_differs(**x, **y, scale, dtype) && (*x - *y).abs() > hunt::WIDER_CONDITIONING * **s)
            .max_by(|((x1, y1), _), ((x2, y2), _)| (*x1 - *y1).abs().total_cmp(&(*x2 - *y2).abs()));
        if let Some(((got, want), _)) = worst {
            return Some((k as u32, WiderFound { got: *got, want: *want }));
        }
    }
    None
}

/// Per element of value `v`, how far the float64 program's output moves when every floating
/// input moves by up to the unit roundoff of `dtype` (a few seeded random draws): the error
/// that rounding the inputs alone would cause, which no algorithm in that dtype avoids.
fn perturbed_spread(ir: &ProgramIr, wide: &[V], v: usize, dtype: Option<DType>) -> Option<Vec<f64>> {
    let n = ir.params.len();
    let u = dtype.and_then(DType::unit_roundoff).unwrap_or(f32::EPSILON as f64 / 2.0);
    let base = values(wide[v].tensor()?);
    let mut spread = vec![0.0f64; base.len()];
    let _guard = tch::no_grad_guard();
    for draw in 0..hunt::WIDER_DRAWS {
        let mut moved: Vec<V> = wide[..n]
            .iter()
            .enumerate()
            .map(|(i, x)| match x {
                V::T(t) if t.kind() == Kind::Double => {
                    // Seeded here, not from libtorch's global generator, which the hunt leaves alone.
                    let mut rng = ChaCha8Rng::seed_from_u64(draw * 1_000_003 + i as u64);
                    let factors: Vec<f64> = (0..t.numel()).map(|_| 1.0 + u * rng.random_range(-1.0..=1.0)).collect();
                    V::T(t * Tensor::from_slice(&factors).reshape(t.size()))
                }
                x => x.shallow(),
            })
            .collect();
        forward_in(ir, &mut moved, true).ok()?;
        for (s, (m, b)) in spread.iter_mut().zip(values(moved[v].tensor()?).iter().zip(&base)) {
            if m.is_finite() {
                *s = s.max((m - b).abs());
            } else {
                *s = f64::INFINITY;
            }
        }
    }
    Some(spread)
}

/// A step's first two number arguments (literals or number parameters), 0 where absent.
fn scalars(step: &Step, vals: &[V]) -> [f64; 2] {
    let mut out = [0.0; 2];
    let numbers = step.args.iter().filter_map(|o| match operand(vals, o) {
        V::F(v) => Some(v),
        V::I(v) => Some(v as f64),
        _ => None,
    });
    for (slot, v) in out.iter_mut().zip(numbers) {
        *slot = v;
    }
    out
}

fn operand_stats(step: &Step, obs: &[Option<Stats>]) -> Vec<Stats> {
    ProgramIr::reads(step).filter_map(|v| obs[v as usize]).collect()
}

fn step_dtype(vals: &[V], ir: &ProgramIr, k: usize) -> Option<DType> {
    vals[ir.params.len() + k].tensor().and_then(dtype_of)
}

/// What moves the inputs of a gradient step: an objective to minimise, computed from the target
/// step's operands (or output), and whether it aims at 0 (a Polyak step then fits).
fn objective(step: &Step, vals: &[V], out: &Tensor) -> Option<(Tensor, bool)> {
    let arg = |i: usize| -> Option<Tensor> {
        match step.args.get(i)? {
            Operand::Value(v) => vals[*v as usize].tensor()?.f_to_kind(Kind::Double).ok(),
            _ => None,
        }
    };
    let out = || out.f_to_kind(Kind::Double).ok();
    // Fallible reductions: an empty operand has no objective (and must not panic the worker).
    let amax = |t: Tensor| t.f_amax([].as_slice(), false).ok();
    let amin = |t: Tensor| t.f_amin([].as_slice(), false).ok();
    let neg = |t: Option<Tensor>| t.map(|t| -t);
    let (j, to_zero) = match step.op {
        // Overflow: drive the argument up.
        NumOp::Exp | NumOp::Expm1 => (neg(amax(arg(0)?)), false),
        NumOp::Sinh | NumOp::Cosh | NumOp::Erfinv | NumOp::Acos | NumOp::Asin => (neg(amax(arg(0)?.abs())), false),
        // A pole or a domain edge at 0.
        NumOp::Log | NumOp::Log2 | NumOp::Log10 | NumOp::Rsqrt | NumOp::Reciprocal => (amin(arg(0)?.abs()), true),
        NumOp::Log1p => (amin((arg(0)? + 1.0).abs()), true),
        NumOp::Sqrt => (amin(arg(0)?), true),
        NumOp::Div => (amin(arg(1)?.abs()), true),
        NumOp::Tan => (amin(arg(0)?.cos().abs()), true),
        NumOp::Pow => match step.args.get(1) {
            Some(Operand::Float(e)) if *e < 0.0 => (amin(arg(0)?.abs()), true),
            Some(Operand::Int(e)) if *e < 0 => (amin(arg(0)?.abs()), true),
            Some(Operand::Float(e)) if e.fract() != 0.0 => (amin(arg(0)?), true),
            _ => (neg(amax(out()?.abs())), false),
        },
        // Overflow of a product or a sum in its own dtype: drive the output's magnitude up.
        NumOp::Mul | NumOp::Square | NumOp::Sum | NumOp::Matmul | NumOp::Linear | NumOp::Add | NumOp::Sub | NumOp::Var | NumOp::Norm | NumOp::Mean => {
            (neg(amax(out()?.abs())), false)
        }
        _ => return None,
    };
    Some((j?, to_zero))
}

/// The steps a gradient search may target.
fn risky(ir: &ProgramIr) -> Vec<usize> {
    ir.steps
        .iter()
        .enumerate()
        .filter(|(_, s)| {
            !matches!(
                s.op,
                NumOp::Softmax
                    | NumOp::LogSoftmax
                    | NumOp::Logsumexp
                    | NumOp::Clamp
                    | NumOp::ClampMin
                    | NumOp::To
                    | NumOp::Abs
                    | NumOp::Neg
                    | NumOp::Sigmoid
                    | NumOp::Tanh
                    | NumOp::Sin
                    | NumOp::Cos
                    | NumOp::Atan
                    | NumOp::Amax
                    | NumOp::Amin
                    | NumOp::Maximum
                    | NumOp::Minimum
                    | NumOp::Std
                    | NumOp::Normalize
                    | NumOp::Atan2
                    | NumOp::Relu
                    | NumOp::Softplus
                    | NumOp::LogSigmoid
                    | NumOp::Reshape
                    | NumOp::Transpose
                    // No objective of its own: the search aims at the table's steps after it.
                    | NumOp::Aten
            )
        })
        .map(|(k, _)| k)
        .collect()
}

/// The search state: tensor inputs and their bounds.
struct Inputs {
    /// Per parameter: the value (tensors are leaves in their own dtype).
    vals: Vec<V>,
    bounds: Vec<Option<(f64, f64)>>,
}

impl Inputs {
    fn clone_vals(&self) -> Vec<V> {
        self.vals.iter().map(V::shallow).collect()
    }

    /// The floating tensors the search moves: all but those held as data.
    fn tensor_params(&self, fixed: &[u32]) -> Vec<usize> {
        (0..self.vals.len()).filter(|&i| matches!(&self.vals[i], V::T(t) if t.is_floating_point()) && !fixed.contains(&(i as u32))).collect()
    }

    fn bound(&self, i: usize) -> (f64, f64) {
        self.bounds.get(i).copied().flatten().unwrap_or((-10.0, 10.0))
    }

    fn set(&mut self, i: usize, t: Tensor) {
        let (lo, hi) = self.bound(i);
        let V::T(old) = &self.vals[i] else { return };
        let k = old.kind();
        self.vals[i] = V::T(t.detach().clamp(lo, hi).to_kind(k));
    }
}

/// One evaluation's result.
struct Eval {
    vals: Vec<V>,
    obs: Vec<Option<Stats>>,
}

struct Episode<'a> {
    req: &'a HuntRequest,
    start: Instant,
    evals: u32,
    result: HuntResult,
    rng: ChaCha8Rng,
}

impl Episode<'_> {
    /// Evaluates the program on `inputs`; records a finding, soft signals and training records.
    fn eval(&mut self, inputs: &[V]) -> R<Eval> {
        let ir = &self.req.program;
        let mut vals: Vec<V> = inputs.iter().map(V::shallow).collect();
        forward(ir, &mut vals)?;
        self.evals += 1;
        let obs = observe(&vals);
        if let Some(models) = &self.req.models {
            for (k, step) in ir.steps.iter().enumerate() {
                let f = hunt::features(&operand_stats(step, &obs), scalars(step, &vals), step_dtype(&vals, ir, k));
                let evals = self.evals;
                let warn = |slot: &mut Option<SoftSignal>, p: Option<f64>| {
                    let Some(p) = p else { return };
                    if p >= hunt::FIRE && slot.as_ref().is_none_or(|s| p > s.probability) {
                        let eval = slot.as_ref().map_or(evals, |s| s.eval);
                        *slot = Some(SoftSignal { step: k as u32, probability: p, eval });
                    }
                };
                warn(&mut self.result.soft, models.nonfinite(step.op, &f));
                warn(&mut self.result.imprecise, models.imprecise(step.op, &f));
            }
        }
        if self.req.collect {
            self.collect(&vals, &obs);
        }
        if self.result.found.is_none() {
            // The oracles in order: NaN/INF, then the finite-but-wrong ones.
            let fired = oracle(ir, &obs)
                .map(|(step, out)| (step, out.nan, out.inf, Fired::NonFinite))
                .or_else(|| rewrite_oracle(ir, &vals).map(|(step, rw)| (step, 0, 0, Fired::Rewrite(rw))))
                .or_else(|| range_oracle(ir, &vals, &obs).map(|(step, r)| (step, 0, 0, Fired::Range(r))))
                .or_else(|| if self.req.wider { wider_oracle(ir, &vals) } else { None }.map(|(step, w)| (step, 0, 0, Fired::Wider(w))));
            if let Some((step, nan, inf, fired)) = fired {
                self.result.found = Some(self.found(&vals, &obs, step, nan, inf, fired));
            }
        }
        Ok(Eval { vals, obs })
    }

    /// A finding at this evaluation: the inputs and every step's statistics.
    fn found(&self, vals: &[V], obs: &[Option<Stats>], step: u32, nan: u64, inf: u64, fired: Fired) -> Found {
        let ir = &self.req.program;
        let inputs = (0..ir.params.len()).map(|i| vals[i].tensor().and_then(|t| Some(InputValues { dtype: dtype_of(t)?, shape: t.size(), values: values(t) }))).collect();
        let steps = (0..ir.steps.len()).map(|k| StepObs { dtype: step_dtype(vals, ir, k), out: obs[ir.params.len() + k].unwrap_or_default() }).collect();
        Found { step, eval: self.evals, nan, inf, inputs, steps, micros: self.start.elapsed().as_micros() as u64, fired }
    }

    fn collect(&mut self, vals: &[V], obs: &[Option<Stats>]) {
        let ir = &self.req.program;
        for (k, step) in ir.steps.iter().enumerate() {
            let ops = operand_stats(step, obs);
            if ops.iter().any(|s| !s.finite()) {
                continue;
            }
            let Some(out) = obs[ir.params.len() + k] else { continue };
            let dtype = step_dtype(vals, ir, k);
            // The same step in float64, for the precision label.
            let args: Vec<V> = step
                .args
                .iter()
                .map(|o| match operand(vals, o) {
                    V::T(t) => V::T(t.detach().to_kind(Kind::Double)),
                    v => v,
                })
                .collect();
            let imprecise = match (out.finite(), apply_step(step, &args)) {
                (true, Ok(reference)) if dtype != Some(DType::Float64) => {
                    let tol = match dtype {
                        Some(DType::Float16) | Some(DType::BFloat16) => 1e-2,
                        _ => 1e-4,
                    };
                    let got = vals[ir.params.len() + k].tensor().map(values).unwrap_or_default();
                    let want = values(&reference);
                    got.iter().zip(&want).any(|(g, w)| w.is_finite() && (g - w).abs() > tol * w.abs().max(1e-3))
                }
                _ => false,
            };
            self.result.records.push(Record { op: step.op, features: hunt::features(&ops, scalars(step, vals), dtype), nonfinite: !out.finite(), imprecise });
        }
    }

    fn point(&mut self, target: Option<u32>, objective: f64, action: &str) {
        if self.result.path.len() >= MAX_PATH {
            self.result.path.remove(1);
        }
        self.result.path.push(PathPoint { eval: self.evals, target, objective, action: action.to_string() });
    }

    fn done(&self) -> bool {
        (self.result.found.is_some() && !self.req.collect) || self.evals >= self.req.budget
    }

    /// Uniform values within a parameter's bounds, shaped like it.
    fn resample(&mut self, inputs: &Inputs, i: usize) -> Tensor {
        let (lo, hi) = inputs.bound(i);
        let V::T(old) = &inputs.vals[i] else { unreachable!("tensor parameters only") };
        let n = old.numel();
        let v: Vec<f64> = (0..n).map(|_| self.rng.random_range(lo..=hi)).collect();
        Tensor::from_slice(&v).reshape(old.size())
    }

    fn random(&mut self, mut inputs: Inputs) -> R<()> {
        let params = inputs.tensor_params(&self.req.fixed);
        while !self.done() && !params.is_empty() {
            let i = params[self.rng.random_range(0..params.len())];
            let (lo, hi) = inputs.bound(i);
            let V::T(old) = &inputs.vals[i] else { break };
            let cur = old.to_kind(Kind::Double);
            let r: f64 = self.rng.random();
            let (next, action) = if r < 0.4 {
                (self.resample(&inputs, i), "resample")
            } else if r < 0.8 {
                let mut v = values(&cur);
                let sigma = 0.1 * (hi - lo);
                for x in v.iter_mut() {
                    if self.rng.random_bool(0.5) {
                        // Box–Muller.
                        let (u1, u2): (f64, f64) = (self.rng.random::<f64>().max(1e-300), self.rng.random());
                        *x += sigma * (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                    }
                }
                (Tensor::from_slice(&v).reshape(cur.size()), "perturb")
            } else {
                // A boundary value (a bound, or 0 when inside) at one element.
                let mut v = values(&cur);
                if !v.is_empty() {
                    let k = self.rng.random_range(0..v.len());
                    let choices = [lo, hi, 0.0f64.clamp(lo, hi)];
                    v[k] = choices[self.rng.random_range(0..3)];
                }
                (Tensor::from_slice(&v).reshape(cur.size()), "extreme")
            };
            inputs.set(i, next);
            self.eval(&inputs.vals)?;
            self.point(None, f64::NAN, action);
        }
        Ok(())
    }

    /// Picks the step to aim at: the soft assertion's most probable one, else a round robin.
    fn target(&mut self, ev: &Eval, candidates: &[usize], round: usize) -> usize {
        let ir = &self.req.program;
        if self.req.random_targets {
            return candidates[self.rng.random_range(0..candidates.len())];
        }
        if let Some(models) = &self.req.models {
            let mut best: Option<(f64, usize)> = None;
            for &k in candidates {
                let step = &ir.steps[k];
                let f = hunt::features(&operand_stats(step, &ev.obs), scalars(step, &ev.vals), step_dtype(&ev.vals, ir, k));
                if let Some(p) = models.nonfinite(step.op, &f) {
                    if best.is_none_or(|(q, _)| p > q) {
                        best = Some((p, k));
                    }
                }
            }
            // Explore now and then, so that one confident model cannot pin the search.
            if let Some((p, k)) = best {
                if p > 0.05 && round % 4 != 3 {
                    return k;
                }
            }
        }
        candidates[round % candidates.len()]
    }

    fn gradient(&mut self, mut inputs: Inputs) -> R<()> {
        let ir = &self.req.program;
        let candidates = risky(ir);
        let params = inputs.tensor_params(&self.req.fixed);
        if candidates.is_empty() || params.is_empty() {
            return self.random(inputs);
        }
        let mut eta = vec![0.05f64; ir.steps.len()];
        let mut round = 0usize;
        let mut stuck = 0u32;
        let mut focus: Option<usize> = None;
        let mut fruitless = 0u32;
        while !self.done() {
            // Leaves that require grad, in float64 so that small steps are not lost; the program
            // itself sees them cast back to their dtype.
            let leaves: Vec<Option<Tensor>> = inputs
                .vals
                .iter()
                .enumerate()
                .map(|(i, v)| match v {
                    V::T(t) if params.contains(&i) => Some(t.detach().to_kind(Kind::Double).set_requires_grad(true)),
                    _ => None,
                })
                .collect();
            // The casts back must be recorded too: grad mode is on only inside with_grad.
            let ev = tch::with_grad(|| {
                let graph_inputs: Vec<V> = inputs
                    .vals
                    .iter()
                    .zip(&leaves)
                    .map(|(v, l)| match (v, l) {
                        (V::T(t), Some(leaf)) => V::T(leaf.to_kind(t.kind())),
                        (v, _) => v.shallow(),
                    })
                    .collect();
                self.eval(&graph_inputs)
            })?;
            if self.done() {
                break;
            }
            // Stay on a target while it makes progress; move on after two steps without.
            let k = match focus {
                Some(k) if stuck < 2 => k,
                _ => {
                    let k = self.target(&ev, &candidates, round);
                    round += 1;
                    stuck = 0;
                    focus = Some(k);
                    k
                }
            };
            let step = &ir.steps[k];
            let out = ev.vals[ir.params.len() + k].tensor().map(Tensor::shallow_clone);
            let Some(out) = out else { continue };
            let Some((j, to_zero)) = tch::with_grad(|| objective(step, &ev.vals, &out)) else { continue };
            let j0 = j.double_value(&[]);
            if !j0.is_finite() || !j.requires_grad() {
                self.random_nudge(&mut inputs, &params)?;
                continue;
            }
            let grads = Tensor::run_backward(&[&j], &leaves.iter().flatten().collect::<Vec<_>>(), false, false);
            let mut grad_of: Vec<Option<Tensor>> = (0..inputs.vals.len()).map(|_| None).collect();
            for (i, g) in leaves.iter().enumerate().filter(|(_, l)| l.is_some()).map(|(i, _)| i).zip(grads) {
                // An input the objective does not depend on gets an undefined gradient.
                if g.defined() {
                    grad_of[i] = Some(g);
                }
            }
            let norm2: f64 = grad_of.iter().flatten().map(|g| g.square().sum(Kind::Double).double_value(&[])).sum();
            if norm2 == 0.0 || !norm2.is_finite() {
                self.random_nudge(&mut inputs, &params)?;
                continue;
            }
            // Candidate moves: a signed step scaled to the bounds, and a Polyak step that aims
            // the linearised objective at 0.
            let mut moves: Vec<(&str, Vec<(usize, Tensor)>)> = Vec::new();
            let sign: Vec<(usize, Tensor)> = params
                .iter()
                .filter_map(|&i| {
                    let g = grad_of[i].as_ref()?;
                    let (lo, hi) = inputs.bound(i);
                    Some((i, leaves[i].as_ref()?.detach() - g.sign() * (eta[k] * (hi - lo))))
                })
                .collect();
            moves.push(("sign", sign));
            if to_zero && j0 > 0.0 {
                let polyak: Vec<(usize, Tensor)> = params.iter().filter_map(|&i| Some((i, leaves[i].as_ref()?.detach() - grad_of[i].as_ref()? * (j0 / norm2)))).collect();
                moves.push(("polyak", polyak));
            }
            let mut best: Option<(f64, Inputs, &str)> = None;
            for (action, m) in moves {
                let mut next = Inputs { vals: inputs.clone_vals(), bounds: inputs.bounds.clone() };
                for (i, v) in m {
                    next.set(i, v);
                }
                let ev2 = self.eval(&next.vals)?;
                let out2 = ev2.vals[ir.params.len() + k].tensor().map(Tensor::shallow_clone);
                let j2 = out2.and_then(|o| objective(step, &ev2.vals, &o)).map_or(f64::INFINITY, |(j, _)| j.double_value(&[]));
                let j2 = if j2.is_nan() { f64::NEG_INFINITY } else { j2 };
                if best.as_ref().is_none_or(|(b, ..)| j2 < *b) {
                    best = Some((j2, next, action));
                }
                if self.done() {
                    break;
                }
            }
            let Some((j2, next, action)) = best else { break };
            if j2 < j0 {
                inputs = next;
                eta[k] = (eta[k] * 1.5).min(0.5);
                stuck = 0;
                fruitless = 0;
                self.point(Some(k as u32), j2, action);
            } else {
                eta[k] = (eta[k] * 0.5).max(1e-6);
                stuck += 1;
                self.point(Some(k as u32), j0, "no-progress");
                if stuck >= 2 {
                    fruitless += 1;
                }
                // Every target tried without progress: start from elsewhere.
                if fruitless >= 2 * candidates.len() as u32 {
                    self.random_nudge(&mut inputs, &params)?;
                    fruitless = 0;
                    eta.iter_mut().for_each(|e| *e = 0.05);
                }
            }
        }
        Ok(())
    }

    /// A fresh start when the gradient gives no direction: resample one input.
    fn random_nudge(&mut self, inputs: &mut Inputs, params: &[usize]) -> R<()> {
        let i = params[self.rng.random_range(0..params.len())];
        let t = self.resample(inputs, i);
        inputs.set(i, t);
        self.point(None, f64::NAN, "restart");
        Ok(())
    }
}

/// The first step whose call fails on `inputs`.
fn failing_step(ir: &ProgramIr, inputs: &[V]) -> Option<u32> {
    let mut vals: Vec<V> = inputs.iter().map(V::shallow).collect();
    for (k, step) in ir.steps.iter().enumerate() {
        let args: Vec<V> = step.args.iter().map(|o| operand(&vals, o)).collect();
        match apply_step(step, &args) {
            Ok(t) => vals.push(V::T(t)),
            Err(_) => return Some(k as u32),
        }
    }
    None
}

/// Runs one hunt episode. Never panics on anything in the request: tch calls that can fail
/// are the fallible ones, and a panic that slips through is an internal error of the episode
/// (reported as `rejected`), not a dead worker.
pub fn hunt(req: &HuntRequest) -> HuntResult {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| hunt_inner(req))) {
        Ok(r) => r,
        Err(p) => {
            let msg = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default();
            HuntResult { rejected: Some(format!("internal error in the hunt (a bug in sfz): {msg}")), ..HuntResult::default() }
        }
    }
}

fn hunt_inner(req: &HuntRequest) -> HuntResult {
    let start = Instant::now();
    let mut ep = Episode { req, start, evals: 0, result: HuntResult::default(), rng: ChaCha8Rng::seed_from_u64(req.seed) };
    let outcome = (|| -> R<()> {
        let mut vals = Vec::with_capacity(req.inputs.len());
        for arg in &req.inputs {
            vals.push(match arg {
                Arg::Tensor(r) => V::T(materialize(r)?),
                Arg::Float(v) => V::F(*v),
                Arg::Int(v) => V::I(*v),
                Arg::Bool(v) => V::B(*v),
                Arg::Dtype(d) => V::D(*d),
                Arg::IntList(v) => V::L(v.clone()),
                Arg::None | Arg::Omitted => V::N,
                _ => return Err(err("unsupported program argument")),
            });
        }
        let inputs = Inputs { vals, bounds: req.bounds.clone() };
        // The starting point: a libtorch error here is an invalid program input, not a bug.
        if let Err(e) = ep.eval(&inputs.vals) {
            ep.result.rejected = Some(e.to_string());
            ep.result.rejected_step = failing_step(&req.program, &inputs.vals);
            return Ok(());
        }
        ep.point(None, f64::NAN, "start");
        match req.strategy {
            Strategy::Once => Ok(()),
            Strategy::Random => ep.random(inputs),
            Strategy::Gradient => ep.gradient(inputs),
        }
    })();
    if let Err(e) = outcome {
        if ep.result.found.is_none() && ep.result.rejected.is_none() {
            ep.result.rejected = Some(e.to_string());
        }
    }
    ep.result.evals = ep.evals;
    ep.result.micros = start.elapsed().as_micros() as u64;
    ep.result
}
