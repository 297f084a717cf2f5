//! Shrinking a failing case while the same oracle still fires with the same signature: smaller
//! shapes and ranks, fewer optional arguments, simpler values. Greedy: candidates one step
//! smaller than the current case, most reducing first, run in batches by the caller; the first
//! that still fires becomes the current case, until none does or the budget is spent.
//!
//! Every accepted candidate is strictly smaller by `size` (a tuple of counts compared in order),
//! so shrinking ends. The caller decides what "still fires" means (it runs the candidates in a
//! worker and judges them); nothing here touches a worker.
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::gen::values::conforms;
use crate::spec::ApiSpec;
use crate::wire::case::{Arg, Case, Fill, Layout, TensorRecipe};

/// How much a minimization may spend.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// Candidate cases run, at most.
    pub executions: u64,
    pub time: Duration,
    /// Candidates run together (the worker keeps them in flight).
    pub batch: usize,
}

impl Default for Budget {
    fn default() -> Self {
        Budget { executions: 400, time: Duration::from_secs(20), batch: 8 }
    }
}

/// What a minimization did.
#[derive(Clone, Debug, PartialEq)]
pub struct Shrunk {
    pub case: Case,
    pub executions: u64,
    pub steps: u32,
    pub seconds: f64,
}

/// Shrinks `case`. `fires` runs a batch of candidates and says, for each, whether the finding's
/// oracle still fires on it with the same signature.
pub fn minimize(api: &ApiSpec, case: &Case, budget: Budget, fires: &mut dyn FnMut(&[Case]) -> Vec<bool>) -> Shrunk {
    let start = Instant::now();
    let mut current = case.clone();
    let mut executions = 0u64;
    let mut steps = 0u32;
    // Candidates already tried from some case and found not to fire (or no smaller).
    let mut tried: BTreeSet<String> = BTreeSet::new();
    // A candidate keeps every constraint the case keeps: a smaller case the operator promises
    // nothing for (a gradient of another shape than its parameter, an index at the size) would
    // trade the finding for an invalid input. A violating case keeps breaking what it broke.
    let kept: Vec<usize> = conforms(api, &case.args).iter().enumerate().filter(|(_, v)| **v == Some(true)).map(|(k, _)| k).collect();
    let keeps = |c: &Case| {
        let verdicts = conforms(api, &c.args);
        kept.iter().all(|&k| verdicts.get(k) != Some(&Some(false)))
    };
    'outer: loop {
        let key = size(&current);
        let candidates: Vec<Case> =
            candidates(api, &current).into_iter().filter(|c| size(c) < key).filter(|c| tried.insert(serde_json::to_string(c).unwrap_or_default())).filter(|c| keeps(c)).collect();
        if candidates.is_empty() {
            break;
        }
        for batch in candidates.chunks(budget.batch.max(1)) {
            if executions >= budget.executions || start.elapsed() >= budget.time {
                break 'outer;
            }
            let room = (budget.executions - executions) as usize;
            let batch = &batch[..batch.len().min(room)];
            let verdicts = fires(batch);
            executions += batch.len() as u64;
            if let Some(i) = verdicts.iter().position(|f| *f) {
                current = batch[i].clone();
                steps += 1;
                continue 'outer;
            }
        }
        break;
    }
    Shrunk { case: current, executions, steps, seconds: start.elapsed().as_secs_f64() }
}

/// What shrinking decreases, compared in order: input elements, total rank, arguments given,
/// list lengths, magnitudes of scalars, special values, non-contiguous inputs, fill complexity.
pub fn size(case: &Case) -> [u64; 8] {
    let tensors: Vec<&TensorRecipe> = case.args.iter().flat_map(Arg::tensors).collect();
    let given = case.args.iter().filter(|a| !matches!(a, Arg::Omitted)).count() as u64;
    let lists: u64 = case
        .args
        .iter()
        .map(|a| match a {
            Arg::TensorList(v) => v.len() as u64,
            Arg::IntList(v) => v.len() as u64,
            Arg::FloatList(v) => v.len() as u64,
            Arg::BoolList(v) => v.len() as u64,
            _ => 0,
        })
        .sum();
    let magnitude: u64 = case
        .args
        .iter()
        .map(|a| match a {
            Arg::Int(i) => i.unsigned_abs(),
            Arg::Float(f) => u64::from(*f != 0.0) + u64::from(f.fract() != 0.0),
            Arg::Bool(b) => u64::from(*b),
            Arg::IntList(v) => v.iter().map(|i| i.unsigned_abs()).fold(0u64, u64::saturating_add),
            Arg::FloatList(v) => v.iter().filter(|f| **f != 0.0).count() as u64,
            Arg::BoolList(v) => v.iter().filter(|b| **b).count() as u64,
            _ => 0,
        })
        .fold(0u64, u64::saturating_add);
    let fill = |t: &TensorRecipe| match t.fill {
        Fill::Uniform { .. } => 3,
        Fill::Int { lo, hi } if hi - lo > 1 => 2,
        Fill::Int { .. } => 1,
        Fill::Constant(c) if c != 0.0 => 1,
        Fill::Constant(_) => 0,
    };
    [
        case.input_elements(),
        tensors.iter().map(|t| t.shape.len() as u64).sum(),
        given,
        lists,
        magnitude,
        tensors.iter().map(|t| t.specials.len() as u64).sum(),
        tensors.iter().filter(|t| t.layout != Layout::Contiguous).count() as u64,
        tensors.iter().map(|t| fill(t)).sum(),
    ]
}

/// Cases one step smaller than `case`, most reducing first.
pub fn candidates(api: &ApiSpec, case: &Case) -> Vec<Case> {
    let mut out = Vec::new();
    let with = |i: usize, a: Arg| {
        let mut c = case.clone();
        c.args[i] = a;
        c
    };
    // Fewer optional arguments: the default, or None.
    for (i, arg) in case.args.iter().enumerate() {
        let Some(p) = api.params.get(i) else { continue };
        if p.default.is_some() && !matches!(arg, Arg::Omitted) {
            out.push(with(i, Arg::Omitted));
        } else if p.optional && !matches!(arg, Arg::None | Arg::Omitted) {
            out.push(with(i, Arg::None));
        }
    }
    // Fewer tensors in a list.
    for (i, arg) in case.args.iter().enumerate() {
        if let Arg::TensorList(ts) = arg {
            for k in (0..ts.len()).rev().filter(|_| ts.len() > 1) {
                let mut v = ts.clone();
                v.remove(k);
                out.push(with(i, Arg::TensorList(v)));
            }
        }
    }
    // Every dimension of one size made smaller in every tensor at once (shapes that must agree
    // keep agreeing), then one dimension of one tensor.
    let sizes: BTreeSet<i64> = case.args.iter().flat_map(Arg::tensors).flat_map(|t| t.shape.iter().copied()).filter(|&d| d > 1).collect();
    for &d in sizes.iter().rev() {
        for to in [1, d / 2, d - 1] {
            if to >= 1 && to < d {
                out.push(map_tensors(case, |t| {
                    for s in &mut t.shape {
                        if *s == d {
                            *s = to;
                        }
                    }
                }));
            }
        }
    }
    // Lower rank: one dimension of one tensor dropped; then one dimension of one tensor smaller.
    for (i, arg) in case.args.iter().enumerate() {
        for (k, t) in arg.tensors().enumerate() {
            for dim in 0..t.shape.len() {
                out.push(map_tensor(case, i, k, |t| {
                    t.shape.remove(dim);
                }));
            }
        }
    }
    for (i, arg) in case.args.iter().enumerate() {
        for (k, t) in arg.tensors().enumerate() {
            for dim in 0..t.shape.len() {
                let d = t.shape[dim];
                for to in [1, d / 2, d - 1] {
                    if to >= 1 && to < d {
                        out.push(map_tensor(case, i, k, |t| t.shape[dim] = to));
                    }
                }
            }
        }
    }
    // Simpler scalars.
    for (i, arg) in case.args.iter().enumerate() {
        match arg {
            Arg::Int(v) => {
                for to in [0, 1, v / 2, v - v.signum()] {
                    if to.unsigned_abs() < v.unsigned_abs() {
                        out.push(with(i, Arg::Int(to)));
                    }
                }
            }
            Arg::Float(v) if *v != 0.0 => {
                out.push(with(i, Arg::Float(0.0)));
                if v.fract() != 0.0 {
                    out.push(with(i, Arg::Float(v.trunc())));
                }
            }
            Arg::Bool(true) => out.push(with(i, Arg::Bool(false))),
            Arg::IntList(xs) => {
                let fixed = api.params.get(i).is_some_and(|p| matches!(p.ty, crate::spec::ParamType::IntList(Some(_))));
                if !fixed && !xs.is_empty() {
                    out.push(with(i, Arg::IntList(xs[..xs.len() - 1].to_vec())));
                }
                for k in 0..xs.len() {
                    for to in [0, 1, xs[k] / 2] {
                        if to.unsigned_abs() < xs[k].unsigned_abs() {
                            let mut v = xs.clone();
                            v[k] = to;
                            out.push(with(i, Arg::IntList(v)));
                        }
                    }
                }
            }
            Arg::FloatList(xs) => {
                for k in 0..xs.len() {
                    if xs[k] != 0.0 {
                        let mut v = xs.clone();
                        v[k] = 0.0;
                        out.push(with(i, Arg::FloatList(v)));
                    }
                }
            }
            _ => {}
        }
    }
    // Simpler values: no specials, contiguous, a constant fill.
    for (i, arg) in case.args.iter().enumerate() {
        for (k, t) in arg.tensors().enumerate() {
            for s in 0..t.specials.len() {
                out.push(map_tensor(case, i, k, |t| {
                    t.specials.remove(s);
                }));
            }
            if t.layout != Layout::Contiguous {
                out.push(map_tensor(case, i, k, |t| t.layout = Layout::Contiguous));
            }
            let simpler: Vec<Fill> = match t.fill {
                Fill::Uniform { lo, hi } => vec![Fill::Constant(0.0), Fill::Constant(1.0), Fill::Constant(lo), Fill::Constant(hi)],
                Fill::Int { lo, hi } if hi - lo > 1 => vec![Fill::Constant(0.0), Fill::Constant(1.0), Fill::Int { lo, hi: lo + 1 }],
                Fill::Int { .. } | Fill::Constant(_) if lo_of(&t.fill) != 0.0 => vec![Fill::Constant(0.0), Fill::Constant(1.0)],
                _ => vec![],
            };
            for f in simpler {
                out.push(map_tensor(case, i, k, |t| t.fill = f.clone()));
            }
        }
    }
    out
}

fn lo_of(f: &Fill) -> f64 {
    match f {
        Fill::Uniform { lo, .. } => *lo,
        Fill::Int { lo, .. } => *lo as f64,
        Fill::Constant(c) => *c,
    }
}

/// The case with tensor `k` of argument `i` changed by `f`.
fn map_tensor(case: &Case, i: usize, k: usize, f: impl FnOnce(&mut TensorRecipe)) -> Case {
    let mut c = case.clone();
    match &mut c.args[i] {
        Arg::Tensor(t) if k == 0 => f(t),
        Arg::TensorList(ts) => {
            if let Some(t) = ts.get_mut(k) {
                f(t)
            }
        }
        _ => {}
    }
    c
}

/// The case with every tensor changed by `f`.
fn map_tensors(case: &Case, mut f: impl FnMut(&mut TensorRecipe)) -> Case {
    let mut c = case.clone();
    for a in &mut c.args {
        match a {
            Arg::Tensor(t) => f(t),
            Arg::TensorList(ts) => ts.iter_mut().for_each(&mut f),
            _ => {}
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::first_api as api;
    use crate::wire::case::DType;

    fn t(shape: &[i64]) -> Arg {
        Arg::Tensor(TensorRecipe { dtype: DType::Float32, shape: shape.to_vec(), fill: Fill::Uniform { lo: -1.0, hi: 1.0 }, seed: 3, layout: Layout::Strided, specials: vec![] })
    }

    #[test]
    fn shrinks_to_the_smallest_case_that_still_fires() {
        let a = api("api torch.matmul(input: Tensor, other: Tensor) -> Tensor {}");
        let case = Case { op: 0, args: vec![t(&[4, 6, 5]), t(&[5, 3])], forward: None };
        // "Fires" while the inner dimensions agree and the first input is at least 2-D.
        let mut calls = 0;
        let shrunk = minimize(&a, &case, Budget::default(), &mut |batch| {
            calls += 1;
            batch
                .iter()
                .map(|c| match (&c.args[0], &c.args[1]) {
                    (Arg::Tensor(x), Arg::Tensor(y)) => x.shape.len() >= 2 && y.shape.len() == 2 && x.shape.last() == y.shape.first(),
                    _ => false,
                })
                .collect()
        });
        let shapes: Vec<Vec<i64>> = shrunk.case.args.iter().flat_map(Arg::tensors).map(|t| t.shape.clone()).collect();
        assert_eq!(shapes, vec![vec![1, 1], vec![1, 1]], "{shrunk:?}");
        assert!(shrunk.case.args.iter().flat_map(Arg::tensors).all(|t| t.layout == Layout::Contiguous && t.fill == Fill::Constant(0.0)));
        assert!(shrunk.steps > 3 && shrunk.executions > 0 && calls > 0);
    }

    /// Shrinking never breaks a constraint the case kept, though the oracle would fire on the
    /// smaller case too: the input stays a matrix, the weight as long as its rows.
    #[test]
    fn a_shrunk_case_keeps_the_constraints_the_case_kept() {
        let a = api("api torch.prelu(input: Tensor, weight: Tensor) -> Tensor {\n\
                         input.ndim == 2;\n\
                         weight.ndim == 1;\n\
                         weight.shape[0] == input.shape[1];\n\
                     }");
        let case = Case { op: 0, args: vec![t(&[3, 4]), t(&[4])], forward: None };
        let shrunk = minimize(&a, &case, Budget::default(), &mut |batch| batch.iter().map(|_| true).collect());
        assert!(shrunk.steps > 0, "{shrunk:?}");
        let shapes: Vec<Vec<i64>> = shrunk.case.args.iter().flat_map(Arg::tensors).map(|t| t.shape.clone()).collect();
        assert_eq!(shapes, vec![vec![1, 1], vec![1]], "{shrunk:?}");
    }

    #[test]
    fn optional_arguments_go_first_and_scalars_shrink() {
        let a = api("api torch.sum(input: Tensor, dim: int[]? = None, keepdim: bool = false) -> Tensor {}");
        let case = Case { op: 0, args: vec![t(&[3]), Arg::IntList(vec![0]), Arg::Bool(true)], forward: None };
        let first = &candidates(&a, &case)[0];
        assert_eq!(first.args[1], Arg::Omitted);
        let shrunk = minimize(&a, &case, Budget::default(), &mut |batch| batch.iter().map(|_| true).collect());
        assert_eq!(shrunk.case.args[1..], [Arg::Omitted, Arg::Omitted]);
        assert_eq!(shrunk.case.input_elements(), 1);
    }

    #[test]
    fn the_budget_is_kept() {
        let a = api("api torch.exp(input: Tensor) -> Tensor {}");
        let case = Case { op: 0, args: vec![t(&[7, 7, 7])], forward: None };
        let budget = Budget { executions: 5, batch: 2, ..Budget::default() };
        let shrunk = minimize(&a, &case, budget, &mut |batch| batch.iter().map(|_| false).collect());
        assert_eq!(shrunk.executions, 5);
        assert_eq!(shrunk.case, case, "nothing fired: the original stays");
    }
}
