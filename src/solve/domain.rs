//! Where the constraints leave room: the feasible values of each small-domain variable (dtypes,
//! ranks, enum values, list lengths) and the least and greatest feasible value of each int, found
//! by enumeration and bisection before sampling. Sampling draws its targets from these domains
//! (so a `dtype in full_floating` parameter is aimed at float32 and float64 alike rather than at
//! ten dtypes the solver must refuse), and boundary models aim at their edges.
use std::collections::HashMap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use z3::ast::{Bool, Int};
use z3::SatResult;

use super::vars::{self, TensorVars, Var, VarKind};
use super::{Problem, SolveError, SymModel};
use crate::wire::case::DType;

/// Int variables explored per problem; the rest keep their declared domain.
const MAX_EXPLORED_INTS: usize = 24;

/// Feasible values by solver variable name (`input.dtype`, `stride[0]`).
#[derive(Clone, Debug, Default)]
pub struct Domains {
    /// Every feasible value of a dtype, ndim, enum or length variable.
    pub finite: HashMap<String, Vec<i64>>,
    /// The least and greatest feasible value of an int parameter or int-list element.
    pub ranges: HashMap<String, (i64, i64)>,
}

/// The edge a boundary model was solved for. `param` is the parameter's index.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Boundary {
    /// A tensor with a zero-sized dimension.
    Empty(usize),
    /// A 0-dimensional tensor.
    Scalar(usize),
    /// A tensor of the largest rank allowed.
    MaxRank(usize),
    /// A tensor whose dimensions are all 1.
    UnitDims(usize),
    /// A tensor with a dimension of the largest size allowed.
    WideDim(usize),
    /// An int at the least value the constraints allow (the variable's name).
    IntMin(String),
    /// An int at the greatest value the constraints allow.
    IntMax(String),
    /// An int equal to 0, -1 or 1 (the value).
    IntSmall(String, i64),
    /// An optional parameter passed as None.
    Absent(usize),
    /// A list at its shortest allowed length.
    ShortList(usize),
    /// A list at its longest allowed length.
    LongList(usize),
    /// The tensors of the call have pairwise different dtypes.
    MixedDtypes,
    /// Two tensors of the call have different ranks (broadcasting across ranks).
    MixedRanks,
}

impl Problem {
    /// Fills `domains`, once. Checks that time out leave a variable at its declared domain.
    pub(super) fn explore(&mut self) {
        if self.explored {
            return;
        }
        self.explored = true;
        self.solver.set_params(&self.limits.params(true));
        let (ints, _) = vars::decision_vars(&self.vars);
        let mut domains = Domains::default();
        let mut explored_ints = 0;
        for (v, kind) in &ints {
            match kind {
                VarKind::Dtype | VarKind::Ndim | VarKind::Enum | VarKind::Len => {
                    if let Some(values) = self.enumerate(v, 16) {
                        domains.finite.insert(v.to_string(), values);
                    }
                }
                VarKind::Int if explored_ints < MAX_EXPLORED_INTS => {
                    explored_ints += 1;
                    let (lo, hi) = self.limits.int_range;
                    if let (Some(min), Some(max)) = (self.extreme(v, lo, hi, true), self.extreme(v, lo, hi, false)) {
                        domains.ranges.insert(v.to_string(), (min, max));
                    }
                }
                _ => {}
            }
        }
        self.domains = domains;
        self.solver.set_params(&self.limits.params(false));
    }

    /// Every value `v` takes in some model, sorted, when there are at most `cap`; None when a
    /// check gave up or there are more.
    fn enumerate(&self, v: &Int, cap: usize) -> Option<Vec<i64>> {
        self.solver.push();
        let mut values = Vec::new();
        let result = loop {
            match self.solver.check() {
                SatResult::Sat => {
                    let Some(x) = self.solver.get_model().and_then(|m| m.eval(v, true)).and_then(|x| x.as_i64()) else { break None };
                    values.push(x);
                    if values.len() > cap {
                        break None;
                    }
                    self.solver.assert(v.eq(x).not());
                }
                SatResult::Unsat => break Some(()),
                SatResult::Unknown => break None,
            }
        };
        self.solver.pop(1);
        result?;
        values.sort_unstable();
        Some(values)
    }

    /// The least (or greatest) value of `v` within [lo, hi] in any model, by bisection.
    fn extreme(&self, v: &Int, lo: i64, hi: i64, least: bool) -> Option<i64> {
        let value_if = |bound: Option<Bool>| -> Option<Option<i64>> {
            self.solver.push();
            if let Some(b) = bound {
                self.solver.assert(b);
            }
            let r = match self.solver.check() {
                SatResult::Sat => Some(self.solver.get_model().and_then(|m| m.eval(v, true)).and_then(|x| x.as_i64())),
                SatResult::Unsat => Some(None),
                SatResult::Unknown => None,
            };
            self.solver.pop(1);
            r
        };
        let mut best = value_if(None)??;
        let (mut a, mut b) = if least { (lo, best) } else { (best, hi) };
        // Invariant: `best` is feasible; no feasible value lies beyond the searched interval.
        while a < b {
            let mid = if least { a + (b - a) / 2 } else { b - (b - a) / 2 };
            let bound = if least { v.le(mid) } else { v.ge(mid) };
            match value_if(Some(bound))? {
                Some(x) => {
                    best = x;
                    if least {
                        b = x;
                    } else {
                        a = x;
                    }
                }
                None => {
                    if least {
                        a = mid + 1;
                    } else {
                        b = mid - 1;
                    }
                }
            }
        }
        Some(best)
    }

    /// The dtypes each parameter can have in a conforming input (with the parameter present).
    pub fn feasible_dtypes(&mut self) -> Vec<Vec<DType>> {
        self.solver.set_params(&self.limits.params(true));
        let out = self
            .vars
            .iter()
            .map(|pv| {
                let v = match &pv.var {
                    Var::Tensor(t) => &t.dtype,
                    Var::TensorList { items, .. } => &items[0].dtype,
                    Var::Dtype(v) => v,
                    _ => return Vec::new(),
                };
                self.solver.push();
                if let Some(p) = &pv.present {
                    self.solver.assert(p);
                }
                let values = self.enumerate(v, DType::ALL.len()).unwrap_or_default();
                self.solver.pop(1);
                values.into_iter().filter_map(|i| DType::ALL.get(i as usize).copied()).collect()
            })
            .collect();
        self.solver.set_params(&self.limits.params(false));
        out
    }

    /// The boundary conditions worth a model of their own, each with what it aims at.
    fn boundary_targets(&self) -> Vec<(Boundary, Bool)> {
        let mut out = Vec::new();
        let max_ndim = self.limits.max_ndim as i64;
        let mut tensors: Vec<(Option<Bool>, &TensorVars)> = Vec::new();
        for (p, pv) in self.vars.iter().enumerate() {
            let present = |b: Bool| match &pv.present {
                Some(pr) => Bool::and(&[pr.clone(), b]),
                None => b,
            };
            if let Some(pr) = &pv.present {
                out.push((Boundary::Absent(p), pr.not()));
            }
            match &pv.var {
                Var::Tensor(t) => {
                    tensors.push((pv.present.clone(), t));
                    let ndim_pos = t.ndim.ge(1);
                    out.push((Boundary::Empty(p), present(Bool::and(&[ndim_pos.clone(), Int::mul(&t.dims).eq(0)]))));
                    out.push((Boundary::Scalar(p), present(t.ndim.eq(0))));
                    out.push((Boundary::MaxRank(p), present(t.ndim.eq(max_ndim))));
                    let unit: Vec<Bool> = t.dims.iter().map(|d| d.eq(1)).collect();
                    out.push((Boundary::UnitDims(p), present(Bool::and(&[ndim_pos.clone(), Bool::and(&unit)]))));
                    let wide: Vec<Bool> = t.dims.iter().map(|d| d.eq(self.limits.max_dim)).collect();
                    out.push((Boundary::WideDim(p), present(Bool::or(&wide))));
                }
                Var::TensorList { len, items } => {
                    let t = &items[0];
                    out.push((Boundary::Empty(p), present(Bool::and(&[t.ndim.ge(1), Int::mul(&t.dims).eq(0)]))));
                    out.push((Boundary::Scalar(p), present(t.ndim.eq(0))));
                    self.list_edges(p, len, &present, &mut out);
                }
                Var::Int(v) => self.int_edges(v, &present, &mut out),
                Var::IntList { len, items } => {
                    self.list_edges(p, len, &present, &mut out);
                    for v in items.iter().take(2) {
                        self.int_edges(v, &present, &mut out);
                    }
                }
                Var::BoolList { len, .. } => self.list_edges(p, len, &present, &mut out),
                _ => {}
            }
        }
        if tensors.len() >= 2 {
            let mut distinct = Vec::new();
            let mut ranks = Vec::new();
            for (i, (pa, a)) in tensors.iter().enumerate() {
                for (pb, b) in tensors.iter().skip(i + 1) {
                    distinct.push(a.dtype.eq(&b.dtype).not());
                    let both: Vec<Bool> = pa.iter().chain(pb.iter()).cloned().collect();
                    let differ = a.ndim.eq(&b.ndim).not();
                    ranks.push(if both.is_empty() { differ } else { Bool::and(&[Bool::and(&both), differ]) });
                }
            }
            // Optional tensors count only when passed; pin them present so the dtypes are real.
            let present: Vec<Bool> = tensors.iter().filter_map(|(p, _)| p.clone()).collect();
            let mut mixed = distinct;
            mixed.extend(present);
            out.push((Boundary::MixedDtypes, Bool::and(&mixed)));
            out.push((Boundary::MixedRanks, Bool::or(&ranks)));
        }
        out
    }

    fn int_edges(&self, v: &Int, present: &dyn Fn(Bool) -> Bool, out: &mut Vec<(Boundary, Bool)>) {
        let name = v.to_string();
        if let Some(&(lo, hi)) = self.domains.ranges.get(&name) {
            out.push((Boundary::IntMin(name.clone()), present(v.eq(lo))));
            out.push((Boundary::IntMax(name.clone()), present(v.eq(hi))));
            for x in [0, -1, 1] {
                if lo < x && x < hi {
                    out.push((Boundary::IntSmall(name.clone(), x), present(v.eq(x))));
                }
            }
        }
    }

    fn list_edges(&self, p: usize, len: &Int, present: &dyn Fn(Bool) -> Bool, out: &mut Vec<(Boundary, Bool)>) {
        if let Some(values) = self.domains.finite.get(&len.to_string()) {
            if let (Some(&lo), Some(&hi)) = (values.first(), values.last()) {
                out.push((Boundary::ShortList(p), present(len.eq(lo))));
                if hi > lo {
                    out.push((Boundary::LongList(p), present(len.eq(hi))));
                }
            }
        }
    }

    /// One model per feasible boundary condition, the other variables aimed at random targets.
    /// Duplicates of a model already found are dropped.
    pub fn boundary(&mut self, seed: u64) -> Result<Vec<(Boundary, SymModel)>, SolveError> {
        self.explore();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut out: Vec<(Boundary, SymModel)> = Vec::new();
        for (what, cond) in self.boundary_targets() {
            self.solver.push();
            self.solver.assert(&cond);
            let targets = self.targets(&mut rng);
            let found = self.solve_towards(&targets);
            self.solver.pop(1);
            match found {
                Ok(Some(model)) => {
                    let sym = vars::read(&model, &self.vars);
                    if !out.iter().any(|(_, m)| *m == sym) {
                        out.push((what, sym));
                    }
                }
                Ok(None) => {}
                // A boundary that times out is left out; the API still has its ordinary models.
                Err(SolveError::Timeout(_)) | Err(SolveError::ResourceLimit(_)) | Err(SolveError::Unknown(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// Up to `count` models in which one tensor holds at least 2^14 elements (within
    /// `limits.max_numel` and a per-dimension size of 2^14), for the `huge` class.
    pub fn huge(&self, count: usize, seed: u64) -> Result<Vec<SymModel>, SolveError> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let tensors: Vec<&TensorVars> = self
            .vars
            .iter()
            .filter_map(|pv| match &pv.var {
                Var::Tensor(t) if pv.present.is_none() => Some(t),
                _ => None,
            })
            .collect();
        let mut out = Vec::new();
        if tensors.is_empty() {
            return Ok(out);
        }
        for _ in 0..count * 2 {
            if out.len() >= count {
                break;
            }
            let t = tensors[rng.random_range(0..tensors.len())];
            self.solver.push();
            self.solver.assert(Int::mul(&t.dims).ge(1 << 14));
            let found = self.solver.check();
            let model = if found == SatResult::Sat { self.solver.get_model() } else { None };
            self.solver.pop(1);
            if let Some(m) = model {
                let sym = vars::read(&m, &self.vars);
                if !out.contains(&sym) {
                    out.push(sym);
                }
                self.block(&m);
            }
        }
        Ok(out)
    }
}
