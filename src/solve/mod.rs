//! The symbolic part of input generation, solved with z3: per API, which dtypes, ranks, shapes,
//! ints, enum values, optional presences and list lengths satisfy its constraints. Solving runs
//! ahead of execution into a pool of models; it is never on the per-case path.
//!
//! z3 contexts are thread-local: a `Problem` lives on the thread that built it, and only plain
//! `SymModel`s leave it.
mod domain;
mod encode;
pub mod literals;
mod vars;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use z3::ast::{Bool, Int};
use z3::{Params, SatResult, Solver};

pub use domain::{Boundary, Domains};
pub use vars::{SymModel, SymValue};

use crate::spec::{ApiSpec, BinOp, Constraint, Prop, TExpr};
use encode::Encoder;
use vars::{ParamVars, Var, VarKind};

/// Bounds that keep generated inputs small and the solver fast.
#[derive(Clone, Debug)]
pub struct Limits {
    pub max_ndim: u32,
    /// Largest size of one dimension.
    pub max_dim: i64,
    /// Largest element count of one tensor.
    pub max_numel: i64,
    /// Domain of int parameters and int-list elements the spec leaves unbounded.
    pub int_range: (i64, i64),
    pub max_list_len: u32,
    pub max_tensor_list: u32,
    /// Per solver call, in milliseconds; 0: none. z3 arms a timer thread for every call that has
    /// one, and on two cores waking it cost a tenth of `sfz infer`'s time, so inference bounds
    /// its many small calls by `rlimit` alone.
    pub timeout_ms: u32,
    /// Per solver call, in z3's resource units (`rlimit`): unlike the wall-clock timeout, the same
    /// on a loaded machine and an idle one. None: no such limit.
    pub rlimit: Option<u32>,
}

/// Exploration is best effort: its checks get this share of a call's bounds, and 300 ms at most.
const EXPLORE_TIMEOUT_MS: u32 = 300;
const EXPLORE_RLIMIT_SHARE: u32 = 4;

impl Limits {
    /// These limits, with `max_ndim` raised to the largest rank the API's constraints name.
    pub fn for_api(&self, api: &ApiSpec) -> Limits {
        let named = literals::named_rank(api).unwrap_or(0);
        Limits { max_ndim: self.max_ndim.max(named), ..self.clone() }
    }
}

impl Limits {
    /// The solver's per-call bounds, those of exploration (`domain`) when `exploring`.
    fn params(&self, exploring: bool) -> Params {
        let mut params = Params::new();
        let timeout = match (exploring, self.timeout_ms) {
            (true, t) if t > 0 => EXPLORE_TIMEOUT_MS.min(t),
            (_, t) => t,
        };
        params.set_u32("timeout", timeout);
        let rlimit = self.rlimit.map(|r| if exploring { (r / EXPLORE_RLIMIT_SHARE).max(1) } else { r });
        // 0 is z3's "no limit", which resets one an earlier call set.
        params.set_u32("rlimit", rlimit.unwrap_or(0));
        params
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_ndim: 4, max_dim: 8, max_numel: 1000, int_range: (-8, 32), max_list_len: 5, max_tensor_list: 4, timeout_ms: 2000, rlimit: None }
    }
}

/// Why an API has no models.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SolveError {
    /// The constraints contradict each other; the indices are into `ApiSpec::requires` (a
    /// subset that already conflicts, when z3 found one).
    #[error("the constraints are unsatisfiable")]
    Unsat { core: Vec<usize> },
    #[error("the solver gave up after {0} ms")]
    Timeout(u32),
    #[error("the solver gave up at its resource limit ({0})")]
    ResourceLimit(u32),
    #[error("the solver failed: {0}")]
    Unknown(String),
    /// Encoding or solving panicked: a bug in sfz, not in the spec.
    #[error("the solver's encoding failed (a bug in sfz): {0}")]
    Internal(String),
}

/// One API's constraints in a solver.
pub struct Problem {
    solver: Solver,
    vars: Vec<ParamVars>,
    /// For each `requires` constraint: its tracking literal, or None when it is concrete.
    tracked: Vec<Option<Bool>>,
    limits: Limits,
    /// What each decision variable can be, once `explore` ran.
    domains: Domains,
    explored: bool,
}

impl Problem {
    /// Declares the parameters and asserts the encodable constraints, each tracked by a literal
    /// so an unsat core names them. `skip` leaves constraints out (violation modes).
    pub fn new(api: &ApiSpec, limits: &Limits, skip: &[usize]) -> Problem {
        let limits = &limits.for_api(api);
        let solver = Solver::new();
        solver.set_params(&limits.params(false));
        let vars = vars::declare(&solver, api, limits);
        let mut tracked = Vec::new();
        for (i, c) in api.requires.iter().enumerate() {
            if skip.contains(&i) {
                tracked.push(None);
                continue;
            }
            let mut enc = Encoder::new(&vars, limits);
            match enc.constraint(&c.expr, &c.params) {
                Ok(b) => {
                    let lit = Bool::new_const(format!("c{i}"));
                    solver.assert_and_track(b, &lit);
                    tracked.push(Some(lit));
                }
                Err(_) => {
                    implied_by_values(&solver, &vars, limits, c);
                    tracked.push(None);
                }
            }
        }
        Problem { solver, vars, tracked, limits: limits.clone(), domains: Domains::default(), explored: false }
    }

    /// Replaces constraint `k` (which `new` must have skipped) by its negation, so models break
    /// it. A concrete constraint cannot be negated symbolically; instead the tensor whose values
    /// it constrains is made non-empty (and present), so a drawn value can break it. Returns
    /// whether the negation reached the solver.
    pub fn negate(&mut self, api: &ApiSpec, k: usize) -> bool {
        let Some(c) = api.requires.get(k) else { return false };
        let mut enc = Encoder::new(&self.vars, &self.limits);
        match enc.constraint(&c.expr, &c.params) {
            Ok(b) => {
                self.solver.assert(b.not());
                true
            }
            Err(_) => {
                if let Some(p) = value_target(&c.expr) {
                    if let Some(pv) = self.vars.get(p) {
                        if let Some(present) = &pv.present {
                            self.solver.assert(present);
                        }
                        match &pv.var {
                            Var::Tensor(t) => self.solver.assert(Int::mul(&t.dims).ge(1)),
                            Var::TensorList { items, .. } => self.solver.assert(Int::mul(&items[0].dims).ge(1)),
                            _ => {}
                        }
                    }
                }
                false
            }
        }
    }

    /// Whether the constraint at this index reached the solver (it is not concrete).
    pub fn is_symbolic(&self, index: usize) -> bool {
        self.tracked.get(index).is_some_and(Option::is_some)
    }

    /// Whether any model exists.
    pub fn check(&self) -> Result<(), SolveError> {
        match self.solver.check() {
            SatResult::Sat => Ok(()),
            SatResult::Unsat => {
                let core = self.solver.get_unsat_core();
                let idx = self.tracked.iter().enumerate().filter(|(_, lit)| lit.as_ref().is_some_and(|l| core.contains(l))).map(|(i, _)| i).collect();
                Err(SolveError::Unsat { core: idx })
            }
            SatResult::Unknown => Err(self.unknown()),
        }
    }

    fn unknown(&self) -> SolveError {
        let reason = self.solver.get_reason_unknown().unwrap_or_default();
        // z3 says "canceled" at its resource limit, and "timeout" (sometimes "canceled") at the
        // wall-clock one: with a resource limit set, a cancel is put down to it. Other reasons
        // (an incomplete theory) are neither.
        let canceled = reason.contains("canceled") || reason.contains("resource");
        if let (Some(r), true) = (self.limits.rlimit, canceled && !reason.contains("timeout")) {
            SolveError::ResourceLimit(r)
        } else if reason.contains("timeout") || reason.contains("canceled") {
            SolveError::Timeout(self.limits.timeout_ms)
        } else {
            SolveError::Unknown(reason)
        }
    }

    /// Up to `count` distinct models, spread over the domains: each is found with a random target
    /// for a random subset of the variables, drawn from what that variable can be under the
    /// constraints (`domains`), dropped when it conflicts; each model is blocked afterwards so it
    /// is not found again. Fewer come back when the space is smaller.
    pub fn sample(&mut self, count: usize, seed: u64) -> Result<Vec<SymModel>, SolveError> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        self.seed_solver(seed);
        self.explore();
        let mut out = Vec::new();
        self.solver.push();
        let mut misses = 0;
        while out.len() < count && misses < 8 {
            let targets = self.targets(&mut rng);
            let found = self.solve_towards(&targets)?;
            let Some(model) = found else { break };
            let sym = vars::read(&model, &self.vars);
            if !self.block(&model) {
                out.push(sym);
                break;
            }
            if out.contains(&sym) {
                misses += 1;
            } else {
                out.push(sym);
            }
        }
        self.solver.pop(1);
        if out.is_empty() {
            self.check()?;
        }
        Ok(out)
    }

    /// `sample` with `extra` asserted on top of the constraints, and taken back after.
    fn sample_with(&mut self, extra: &[Constraint], count: usize, seed: u64) -> Result<Vec<SymModel>, SolveError> {
        self.solver.push();
        for c in extra {
            match Encoder::new(&self.vars, &self.limits).constraint(&c.expr, &c.params) {
                Ok(b) => self.solver.assert(b),
                Err(_) => implied_by_values(&self.solver, &self.vars, &self.limits, c),
            }
        }
        let out = self.sample(count, seed);
        self.solver.pop(1);
        out
    }

    /// Randomises z3's own choices too, so that two seeds do not start from the same corner.
    fn seed_solver(&self, seed: u64) {
        let mut params = self.limits.params(false);
        params.set_u32("random_seed", (seed & 0x7fff_ffff) as u32);
        self.solver.set_params(&params);
    }

    /// Asserts that the decision variables differ from this model; false when there are none.
    fn block(&self, model: &z3::Model) -> bool {
        let (ints, bools) = vars::decision_vars(&self.vars);
        let mut differ: Vec<Bool> = ints.iter().filter_map(|(v, _)| model.eval(v, true).map(|x| v.eq(&x).not())).collect();
        differ.extend(bools.iter().filter_map(|b| model.eval(b, true).map(|x| b.iff(&x).not())));
        if differ.is_empty() {
            return false;
        }
        self.solver.assert(Bool::or(&differ));
        true
    }

    /// Random targets: each variable gets one with probability 1/2, drawn from its feasible
    /// domain when exploration found it (dtypes, ranks, enum values, lengths: uniformly; ints:
    /// often at either end of their range), dimensions biased towards small sizes.
    fn targets(&self, rng: &mut ChaCha8Rng) -> Vec<Bool> {
        let (ints, bools) = vars::decision_vars(&self.vars);
        let mut targets = Vec::new();
        for (v, kind) in &ints {
            if !rng.random_bool(0.5) {
                continue;
            }
            // Sizes have no domain entry, and are most of the variables: no name to print.
            let name = if *kind == VarKind::Dim { String::new() } else { v.to_string() };
            let feasible = self.domains.finite.get(&name);
            let value = match (kind, feasible) {
                (VarKind::Dtype | VarKind::Ndim | VarKind::Enum | VarKind::Len, Some(values)) if !values.is_empty() => values[rng.random_range(0..values.len())],
                (VarKind::Dtype, _) => rng.random_range(0..crate::wire::case::DType::ALL.len() as i64),
                (VarKind::Ndim, _) => rng.random_range(0..=self.limits.max_ndim as i64),
                (VarKind::Len, _) => rng.random_range(0..=self.limits.max_list_len as i64),
                (VarKind::Enum, _) => 0,
                // Small sizes are where most behaviour lives; 0 and 1 are edge cases.
                (VarKind::Dim, _) => *[0, 1, 1, 2, 2, 3, 3, 4, 5, 8].get(rng.random_range(0..10)).unwrap_or(&2),
                (VarKind::Int, _) => {
                    let (lo, hi) = self.domains.ranges.get(&name).copied().unwrap_or(self.limits.int_range);
                    match rng.random_range(0..10) {
                        0 | 1 => lo,
                        2 | 3 => hi,
                        _ => rng.random_range(lo..=hi.max(lo)),
                    }
                }
            };
            targets.push(v.eq(value));
        }
        for b in bools {
            if rng.random_bool(0.5) {
                targets.push(b.iff(Bool::from_bool(rng.random_bool(0.5))));
            }
        }
        targets
    }

    /// Solves with as many of the targets as are consistent with the constraints.
    fn solve_towards(&self, targets: &[Bool]) -> Result<Option<z3::Model>, SolveError> {
        let mut targets: Vec<Bool> = targets.to_vec();
        for _ in 0..4 {
            self.solver.push();
            let lits: Vec<Bool> = (0..targets.len()).map(|i| Bool::new_const(format!("target{i}"))).collect();
            for (l, t) in lits.iter().zip(&targets) {
                self.solver.assert(l.implies(t));
            }
            let result = self.solver.check_assumptions(&lits);
            match result {
                SatResult::Sat => {
                    let model = self.solver.get_model();
                    self.solver.pop(1);
                    return Ok(model);
                }
                SatResult::Unsat => {
                    // Literals compared as terms: z3 shares equal terms, and printing them
                    // cost more than the check.
                    let core = self.solver.get_unsat_core();
                    self.solver.pop(1);
                    if core.is_empty() {
                        return Ok(None);
                    }
                    let before = targets.len();
                    targets = lits.iter().zip(targets).filter(|(l, _)| !core.contains(l)).map(|(_, t)| t).collect();
                    if targets.len() == before {
                        targets.clear();
                    }
                }
                SatResult::Unknown => {
                    self.solver.pop(1);
                    return Err(self.unknown());
                }
            }
        }
        match self.solver.check() {
            SatResult::Sat => Ok(self.solver.get_model()),
            SatResult::Unsat => Ok(None),
            SatResult::Unknown => Err(self.unknown()),
        }
    }
}

/// The parameter whose values a concrete constraint bounds: `p.values in ..`, `p.values op e`,
/// `p op e` (floats), `finite(p)`, with `p` possibly `p[i]` of a list.
pub fn value_target(e: &TExpr) -> Option<usize> {
    fn param(e: &TExpr) -> Option<usize> {
        match e {
            TExpr::Param(p) => Some(*p),
            TExpr::Index(b, _) | TExpr::Each(b) => param(b),
            _ => None,
        }
    }
    match e {
        TExpr::Binary(op, l, r) if op.is_comparison() => match (&**l, &**r) {
            (TExpr::Prop(b, Prop::Values), _) => param(b),
            (_, TExpr::Prop(b, Prop::Values)) => param(b),
            (TExpr::Param(p), _) | (_, TExpr::Param(p)) => Some(*p),
            _ => None,
        },
        TExpr::Call(crate::spec::Builtin::Finite | crate::spec::Builtin::NoNan, args) => args.first().and_then(param),
        _ => None,
    }
}

/// A value-range constraint `t.values in lo..hi` is concrete, but it implies something symbolic:
/// a non-empty tensor needs a non-empty range (gather's `index.values in 0..input.shape[dim]`
/// needs `input.shape[dim] > 0` unless `index` is empty).
fn implied_by_values(solver: &Solver, vars: &[ParamVars], limits: &Limits, c: &Constraint) {
    let TExpr::Binary(BinOp::In, lhs, rhs) = &c.expr else { return };
    let (TExpr::Prop(base, Prop::Values), TExpr::Range { lo, hi, inclusive }) = (&**lhs, &**rhs) else { return };
    let TExpr::Param(p) = **base else { return };
    let Some(Var::Tensor(t)) = vars.get(p).map(|v| &v.var) else { return };
    let nonempty_range = TExpr::Binary(if *inclusive { BinOp::Le } else { BinOp::Lt }, lo.clone(), hi.clone());
    let mut enc = Encoder::new(vars, limits);
    if let Ok(b) = enc.constraint(&nonempty_range, &c.params) {
        solver.assert(Bool::or(&[Int::mul(&t.dims).eq(0), b]));
    }
}

/// Runs `f` in a fresh z3 context. z3's thread-local context keeps state between problems
/// (caches, counters), which would make a pool depend on what was solved before it.
pub fn fresh<R: Send + Sync>(f: impl FnOnce() -> R + Send + Sync) -> R {
    z3::with_z3_config(&z3::Config::new(), f)
}

/// Checks that an API's constraints can be met together.
pub fn check_sat(api: &ApiSpec, limits: &Limits) -> Result<(), SolveError> {
    fresh(|| Problem::new(api, limits, &[]).check())
}

/// Up to `count` diverse models of an API's constraints, a function of the seed alone.
pub fn sample(api: &ApiSpec, limits: &Limits, count: usize, seed: u64) -> Result<Vec<SymModel>, SolveError> {
    fresh(|| Problem::new(api, limits, &[]).sample(count, seed))
}

/// `sample` without exploring the variables' domains first. For a handful of models the
/// exploration (a dozen checks per dtype and rank) costs more than the solving, and a target
/// outside the feasible domain costs only an unsat core; the draws are less uniform.
pub fn sample_quick(api: &ApiSpec, limits: &Limits, count: usize, seed: u64) -> Result<Vec<SymModel>, SolveError> {
    fresh(|| {
        let mut p = Problem::new(api, limits, &[]);
        p.explored = true;
        p.sample(count, seed)
    })
}

/// `sample_quick` of `api` with each set of `extras` added in turn (each with its seed), in one
/// z3 context: the parameters are declared and `api`'s constraints encoded once, and each set
/// is pushed and popped. `sfz infer` probes two dozen candidates a round this way, and a fresh
/// context per candidate cost more than its few models. A set that names a rank beyond `api`'s
/// (`x.ndim == 5`) needs more dimensions than the shared declarations have, and gets a context
/// of its own. Sets not started by `deadline` get no result.
pub fn sample_each(api: &ApiSpec, extras: &[(&[Constraint], u64)], limits: &Limits, count: usize, deadline: std::time::Instant) -> Vec<Result<Vec<SymModel>, SolveError>> {
    let own_limits = limits.for_api(api);
    let with = |extra: &[Constraint]| {
        let mut with = api.clone();
        with.requires.extend(extra.iter().cloned());
        with
    };
    let shared = fresh(|| {
        let mut p = Problem::new(api, limits, &[]);
        p.explored = true;
        let mut out = Vec::new();
        for (extra, seed) in extras {
            if std::time::Instant::now() >= deadline {
                break;
            }
            let alone = with(extra);
            let fits = limits.for_api(&alone).max_ndim <= own_limits.max_ndim;
            out.push(if fits { Ok(p.sample_with(extra, count, *seed)) } else { Err(alone) });
        }
        out
    });
    shared.into_iter().zip(extras).map(|(r, (_, seed))| r.unwrap_or_else(|alone| sample_quick(&alone, limits, count, *seed))).collect()
}

/// What the solver makes of one API's constraints for conforming inputs.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Solved {
    /// Diverse models.
    pub models: Vec<SymModel>,
    /// Models at the edges of the domains (empty and 0-d tensors, ints at their extremes, None
    /// for optionals, empty lists, mixed dtypes, ...), each with the edge it was solved for.
    pub boundary: Vec<(Boundary, SymModel)>,
    /// Per parameter: the dtypes a conforming input can give it (tensors, tensor lists, dtype
    /// parameters; empty for the others). Coverage reports against it.
    pub dtypes: Vec<Vec<crate::wire::case::DType>>,
}

/// Models, boundary models and feasible dtypes of an API, in one fresh z3 context.
pub fn solve(api: &ApiSpec, limits: &Limits, count: usize, seed: u64) -> Result<Solved, SolveError> {
    fresh(|| {
        let mut p = Problem::new(api, limits, &[]);
        let models = p.sample(count, seed)?;
        let boundary = p.boundary(mix_seed(seed))?;
        let dtypes = p.feasible_dtypes();
        Ok(Solved { models, boundary, dtypes })
    })
}

/// Up to `count` models that violate constraint `k` of the API and satisfy every other one.
/// For a concrete constraint (tensor values, floats) the models satisfy all the others and give
/// the tensor it constrains at least one element, so that a value can break it. `Unsat` means
/// the constraint cannot be broken while the others hold.
pub fn sample_violating(api: &ApiSpec, limits: &Limits, k: usize, count: usize, seed: u64) -> Result<Vec<SymModel>, SolveError> {
    fresh(|| {
        let mut p = Problem::new(api, limits, &[k]);
        let symbolic = p.negate(api, k);
        // A concrete constraint that bounds no single parameter's values has no way to be
        // broken on purpose.
        if !symbolic && api.requires.get(k).and_then(|c| value_target(&c.expr)).is_none() {
            return Ok(Vec::new());
        }
        p.sample(count, seed)
    })
}

/// A few conforming models with one tensor far larger than the usual limits allow (up to
/// `limits.max_numel` elements), for the `huge` boundary class.
pub fn sample_huge(api: &ApiSpec, limits: &Limits, count: usize, seed: u64) -> Result<Vec<SymModel>, SolveError> {
    fresh(|| {
        let p = Problem::new(api, limits, &[]);
        p.huge(count, seed)
    })
}

fn mix_seed(seed: u64) -> u64 {
    seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17) ^ 0x5851_F42D_4C95_7F2D
}
