//! The generator: case `i` of a run from the solved pools, the run's seed and `i`.
use std::sync::{OnceLock, RwLock};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::solve::{self, SymModel};
use crate::spec::{ApiSpec, Category};
use crate::wire::case::{Arg, Break, Forward};

use super::plan::{GenPlan, Target};
use super::{cliff, domain, mix, mutate, naive, values, violate, ApiPools, GenConfig, Mutation, Strategy};

/// One violation the generator can produce, for reports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Violation {
    pub target: Target,
    pub category: Category,
    /// The constraint in the spec's words.
    pub text: String,
    /// Names of the parameters it constrains.
    pub params: Vec<String>,
}

impl Violation {
    fn of(api: &ApiSpec, target: &Target) -> Violation {
        match target {
            Target::Requires(k) => {
                let c = &api.requires[*k];
                Violation {
                    target: target.clone(),
                    category: c.category,
                    text: c.text.clone(),
                    params: c.params.iter().filter_map(|&p| api.params.get(p).map(|x| x.name.clone())).collect(),
                }
            }
            Target::Declared(d) => {
                Violation { target: target.clone(), category: d.category(), text: d.text(api), params: api.params.get(d.param()).map(|x| vec![x.name.clone()]).unwrap_or_default() }
            }
            Target::Bound { param, kind } => {
                let name = api.params.get(*param).map_or("?", |p| p.name.as_str());
                let forward = api.from.as_ref().map_or("?", |f| f.callee.name.as_str());
                Violation {
                    target: target.clone(),
                    category: if kind.is_value() { Category::Range } else { Category::Shape },
                    text: format!("{name} from {forward}, with {}", kind.describe()),
                    params: vec![name.to_string()],
                }
            }
        }
    }
}

/// One generated call.
#[derive(Clone, Debug)]
pub struct Generated {
    /// Index of the API among those the generator serves.
    pub api: usize,
    pub args: Vec<Arg>,
    /// Whether the evaluator found every constraint satisfied (or undecidable).
    pub conforms: bool,
    /// In violate mode, the index into `Generator::violations(api)` of the one broken constraint.
    pub violated: Option<usize>,
    /// For an API with a `from` statement: the parameters its forward fills, and the breakage
    /// of one (`Target::Bound`).
    pub forward: Option<Forward>,
}

/// Per API, what the generator prepared from its pools.
pub struct Prepared {
    plan: GenPlan,
    pools: ApiPools,
    /// Breakable constraints by category.
    by_category: Vec<(Category, Vec<usize>)>,
    violations: Vec<Violation>,
    /// The API inside each of its value domains (`domain::steered`), with its plan.
    inside: Vec<(ApiSpec, GenPlan)>,
}

/// An API's preparations: from the pools it joined with, and from its whole pools where those
/// came later (from a case index on).
#[derive(Default)]
struct Stages {
    first: OnceLock<Prepared>,
    whole: OnceLock<(u64, Prepared)>,
}

/// Produces cases from solved pools. Shared by the supervisor's worker threads.
///
/// APIs join as their pools are solved (a campaign fuzzes the first while the rest solve), each
/// from a case index on, with its ordinary pool or all of its pools; one that joined with its
/// ordinary pool gets the rest from a later index. Case `i` is a function of the seed, `i` and
/// what had joined by `i`, so a case is the same whenever it is made again.
pub struct Generator {
    apis: Vec<ApiSpec>,
    prepared: Vec<Stages>,
    /// The APIs cases choose among, in the order they joined, each with the first case index
    /// that may choose it (never decreasing).
    joined: RwLock<Vec<(u64, usize)>>,
    config: GenConfig,
}

impl Generator {
    /// `apis` and `pools` are parallel, every API joined from case 0. APIs with an empty
    /// ordinary pool are never chosen (under the naive strategy, every API is).
    pub fn new(apis: Vec<ApiSpec>, pools: Vec<ApiPools>, config: GenConfig) -> Self {
        let generator = Generator::waiting(apis, config);
        for (api, pools) in pools.into_iter().enumerate() {
            let prepared = generator.prepare(api, pools);
            generator.join(api, prepared, 0);
        }
        generator
    }

    /// A generator no API has joined yet (`join` adds them).
    pub fn waiting(apis: Vec<ApiSpec>, config: GenConfig) -> Self {
        let prepared = apis.iter().map(|_| Stages::default()).collect();
        Generator { apis, prepared, joined: RwLock::new(Vec::new()), config }
    }

    /// What API `api` needs to join, from its pools. Costs milliseconds for a large API, so a
    /// caller serialising joins prepares first.
    pub fn prepare(&self, api: usize, pools: ApiPools) -> Prepared {
        let api = &self.apis[api];
        let plan = GenPlan::new(api);
        let violable: Vec<bool> = (0..api.requires.len()).map(|k| pools.violating.get(k).is_some_and(|m| !m.is_empty())).collect();
        let mut violations = Vec::new();
        let mut by_category = Vec::new();
        for (cat, targets) in plan.targets(api, &violable) {
            let start = violations.len();
            violations.extend(targets.iter().map(|t| Violation::of(api, t)));
            by_category.push((cat, (start..violations.len()).collect()));
        }
        // The forward's bindings broken: a group of their own, drawn as often as a category
        // (they are what a `from` statement is for).
        let bound = GenPlan::bound_targets(api);
        if !bound.is_empty() {
            let start = violations.len();
            violations.extend(bound.iter().map(|t| Violation::of(api, t)));
            by_category.push((Category::Shape, (start..violations.len()).collect()));
        }
        let inside = domain::steered(api).into_iter().map(|a| {
            let plan = GenPlan::new(&a);
            (a, plan)
        });
        Prepared { plan, pools, by_category, violations, inside: inside.collect() }
    }

    /// API `api` joins: cases from index `from` on may choose it, if it has models (or the
    /// strategy is naive). Joined before, `prepared` is its whole pools, which cases from `from`
    /// on use (a third join is ignored). Case indices from `from` on must not have been made
    /// yet, or made again they would differ. True when it is newly chosen.
    pub fn join(&self, api: usize, prepared: Prepared, from: u64) -> bool {
        let live = self.config.strategy == Strategy::Naive || !prepared.pools.models.is_empty();
        let stages = &self.prepared[api];
        if let Err(prepared) = stages.first.set(prepared) {
            let _ = stages.whole.set((from, prepared));
            return false;
        }
        if !live {
            return false;
        }
        let mut joined = self.joined.write().expect("joined lock");
        let from = joined.last().map_or(from, |&(last, _)| from.max(last));
        joined.push((from, api));
        true
    }

    /// How many APIs cases choose among (those joined).
    pub fn joined(&self) -> usize {
        self.joined.read().expect("joined lock").len()
    }

    /// Pools of ordinary models only, conform mode, no mutation (tests, benchmarks).
    pub fn simple(apis: Vec<ApiSpec>, pools: Vec<Vec<SymModel>>, seed: u64) -> Self {
        let config = GenConfig { seed, mutation: Mutation::none(), ..GenConfig::default() };
        Generator::new(apis, pools.into_iter().map(ApiPools::of_models).collect(), config)
    }

    pub fn apis(&self) -> &[ApiSpec] {
        &self.apis
    }

    pub fn config(&self) -> &GenConfig {
        &self.config
    }

    /// The violations case `index` of API `api` can be given, in the order
    /// `Generated::violated` indexes (none before it joins).
    pub fn violations(&self, api: usize, index: u64) -> &[Violation] {
        self.at(api, index).map_or(&[], |p| &p.violations)
    }

    /// The pools of API `api`, the whole of them where they came, once it has joined.
    pub fn pools(&self, api: usize) -> Option<&ApiPools> {
        self.at(api, u64::MAX).map(|p| &p.pools)
    }

    /// What case `index` of API `api` is made from.
    fn at(&self, api: usize, index: u64) -> Option<&Prepared> {
        let stages = self.prepared.get(api)?;
        match stages.whole.get() {
            Some((from, whole)) if *from <= index => Some(whole),
            _ => stages.first.get(),
        }
    }

    /// The case with this index: which API (uniformly among those with models), conforming or
    /// violating (per the mode), which model, which values, which mutations.
    pub fn case(&self, index: u64) -> Option<Generated> {
        let mut rng = ChaCha8Rng::seed_from_u64(mix(self.config.seed ^ mix(index)));
        let api = {
            let joined = self.joined.read().expect("joined lock");
            let by_then = joined.partition_point(|&(from, _)| from <= index);
            if by_then == 0 {
                return None;
            }
            joined[rng.random_range(0..by_then)].1
        };
        let prep = self.at(api, index).expect("cases choose only APIs that joined");
        let ratio = self.config.mode.violate_ratio();
        if ratio > 0.0 && rng.random_bool(ratio) {
            if let Some(g) = self.violating(api, prep, &mut rng) {
                return Some(g);
            }
        }
        self.conforming(api, prep, &mut rng)
    }

    fn conforming(&self, api: usize, prep: &Prepared, rng: &mut ChaCha8Rng) -> Option<Generated> {
        let spec = &self.apis[api];
        if self.config.strategy == Strategy::Naive {
            let mut last = None;
            for _ in 0..naive::NAIVE_TRIES {
                let model = naive::draw(spec, &self.config.limits, rng);
                let mut args = values::concretize(spec, &prep.plan, &model, None, rng);
                if Check::Conform.holds(spec, &prep.plan, &args) {
                    let conforms = self.mutate(api, &mut args, Check::Conform, rng);
                    return Some(Generated { api, args, conforms, violated: None, forward: self.forward(api, None) });
                }
                last = Some(args);
            }
            return last.map(|args| Generated { api, args, conforms: false, violated: None, forward: self.forward(api, None) });
        }
        let pools = &prep.pools;
        let m = &self.config.mutation;
        let mut last = None;
        for _ in 0..4 {
            let model = if !pools.huge.is_empty() && rng.random_bool(m.huge) {
                &pools.huge[rng.random_range(0..pools.huge.len())]
            } else if !pools.boundary.is_empty() && rng.random_bool(m.boundary) {
                &pools.boundary[rng.random_range(0..pools.boundary.len())].1
            } else {
                pools.models.get(rng.random_range(0..pools.models.len().max(1)))?
            };
            let redrawn = if m.dtype > 0.0 && rng.random_bool(m.dtype) { mutate::redraw_dtype(model, &pools.dtypes, rng) } else { None };
            let model = redrawn.as_ref().unwrap_or(model);
            let mut args = match prep.inside.len() {
                0 => values::concretize(spec, &prep.plan, model, None, rng),
                n if rng.random_bool(0.5) => {
                    let (inside, plan) = &prep.inside[rng.random_range(0..n)];
                    values::concretize(inside, plan, model, None, rng)
                }
                _ => values::concretize(spec, &prep.plan, model, None, rng),
            };
            if Check::Conform.holds(spec, &prep.plan, &args) {
                let conforms = self.mutate(api, &mut args, Check::Conform, rng);
                return Some(Generated { api, args, conforms, violated: None, forward: self.forward(api, None) });
            }
            last = Some(args);
        }
        last.map(|args| Generated { api, args, conforms: false, violated: None, forward: self.forward(api, None) })
    }

    /// A case breaking one constraint: a category uniformly among those the API has, a
    /// constraint uniformly within it. None when no attempt broke exactly that constraint.
    fn violating(&self, api: usize, prep: &Prepared, rng: &mut ChaCha8Rng) -> Option<Generated> {
        let spec = &self.apis[api];
        if prep.by_category.is_empty() || prep.pools.models.is_empty() {
            return None;
        }
        let (_, members) = &prep.by_category[rng.random_range(0..prep.by_category.len())];
        let v = members[rng.random_range(0..members.len())];
        let target = &prep.violations[v].target;
        for _ in 0..4 {
            let (model, skip) = match target {
                Target::Requires(k) => {
                    let pool = &prep.pools.violating[*k];
                    (&pool[rng.random_range(0..pool.len())], Some(*k))
                }
                Target::Declared(_) | Target::Bound { .. } => (&prep.pools.models[rng.random_range(0..prep.pools.models.len())], None),
            };
            let mut args = values::concretize(spec, &prep.plan, model, skip, rng);
            let check = Check::Violate(target);
            match target {
                Target::Requires(k) => {
                    // A concrete constraint is broken through a value; a symbolic one already is.
                    if !check.holds(spec, &prep.plan, &args) && !violate::break_concrete(spec, *k, &mut args, rng) {
                        continue;
                    }
                    if rng.random_bool(0.3) {
                        let before = args.clone();
                        if violate::extreme_int(spec, *k, &mut args, rng) && !check.holds(spec, &prep.plan, &args) {
                            args = before;
                        }
                    }
                }
                Target::Declared(d) => {
                    if !violate::break_declared(spec, d, &mut args, rng) {
                        continue;
                    }
                }
                // The inputs conform; the worker breaks the binding after the forward.
                Target::Bound { param, kind } => {
                    if !matches!(args.get(*param), Some(Arg::Tensor(_))) || !Check::Conform.holds(spec, &prep.plan, &args) {
                        continue;
                    }
                    // A cliff past a value bound would break more than the binding.
                    let before = args.clone();
                    if !self.mutate(api, &mut args, Check::Conform, rng) {
                        args = before;
                    }
                    let broken = Break { param: *param, kind: *kind, seed: rng.random() };
                    return Some(Generated { api, args, conforms: false, violated: Some(v), forward: self.forward(api, Some(broken)) });
                }
            }
            if check.holds(spec, &prep.plan, &args) {
                self.mutate(api, &mut args, check, rng);
                return Some(Generated { api, args, conforms: false, violated: Some(v), forward: self.forward(api, None) });
            }
        }
        None
    }

    /// What a case of API `api` says about its `from` statement: the parameters the forward
    /// fills, and `broken`.
    fn forward(&self, api: usize, broken: Option<Break>) -> Option<Forward> {
        self.apis[api].from.as_ref().map(|f| Forward { binds: f.binds.clone(), broken })
    }

    /// Applies each value mutator with its probability, undoing one that breaks `check`. The
    /// cliff mutator may break value bounds of the tensor it rewrites (and only those): false
    /// when it did, so the case no longer conforms.
    fn mutate(&self, api: usize, args: &mut [Arg], check: Check, rng: &mut ChaCha8Rng) -> bool {
        let spec = &self.apis[api];
        // One plan per API, whichever pools it joined with.
        let plan = &self.prepared[api].first.get().expect("cases choose only APIs that joined").plan;
        let m = &self.config.mutation;
        type Mutator = fn(&ApiSpec, &mut [Arg], &mut ChaCha8Rng) -> bool;
        let mutators: [(f64, Mutator); 3] = [(m.special, mutate::special), (m.layout, |_, args, rng| mutate::layout(args, rng)), (m.scalar, mutate::scalar)];
        for (p, f) in mutators {
            if p > 0.0 && rng.random_bool(p) {
                let before = args.to_vec();
                if f(spec, args, rng) && !check.holds(spec, plan, args) {
                    args.clone_from_slice(&before);
                }
            }
        }
        // Last: a cliff changes a whole fill, which the mutators above would have to respect.
        if m.cliff > 0.0 && rng.random_bool(m.cliff) {
            let before = args.to_vec();
            if let Some(p) = cliff::cliff(args, rng) {
                if check.holds(spec, plan, args) {
                    return true;
                }
                if matches!(check, Check::Conform) && only_value_bounds_break(spec, plan, args, p) {
                    return false;
                }
                args.clone_from_slice(&before);
            }
        }
        true
    }
}

/// True when every constraint the case breaks bounds the values of parameter `p` (and the
/// declared types still hold): what a cliff may break.
fn only_value_bounds_break(api: &ApiSpec, plan: &GenPlan, args: &[Arg], p: usize) -> bool {
    let verdicts = values::conforms(api, args);
    let declared = violate::declared_hold(api, &plan.declared, args);
    declared.iter().all(|&d| d) && verdicts.iter().zip(&api.requires).all(|(v, c)| *v != Some(false) || (solve::value_target(&c.expr) == Some(p) && bounds_values(&c.expr)))
}

/// A comparison of a tensor's values (`t.values in lo..hi`, `t.values >= 0`) or `finite(t)`.
fn bounds_values(e: &crate::spec::TExpr) -> bool {
    use crate::spec::{Builtin, Prop, TExpr};
    match e {
        TExpr::Binary(op, l, r) if op.is_comparison() => matches!(&**l, TExpr::Prop(_, Prop::Values)) || matches!(&**r, TExpr::Prop(_, Prop::Values)),
        TExpr::Call(Builtin::Finite | Builtin::NoNan, _) => true,
        _ => false,
    }
}

/// What a case must satisfy, judged by the evaluator (and the declaration checks).
#[derive(Clone, Copy)]
enum Check<'a> {
    /// No constraint broken.
    Conform,
    /// This one broken, no other.
    Violate(&'a Target),
}

impl Check<'_> {
    fn holds(self, api: &ApiSpec, plan: &GenPlan, args: &[Arg]) -> bool {
        let verdicts = values::conforms(api, args);
        let declared = violate::declared_hold(api, &plan.declared, args);
        match self {
            Check::Conform => verdicts.iter().all(|v| *v != Some(false)) && declared.iter().all(|&d| d),
            Check::Violate(target) => {
                let requires_ok = verdicts.iter().enumerate().all(|(k, v)| match target {
                    Target::Requires(t) if *t == k => *v == Some(false),
                    _ => *v != Some(false),
                });
                let declared_ok = plan.declared.iter().zip(&declared).all(|(d, &held)| match target {
                    Target::Declared(t) if t == d => !held,
                    _ => held,
                });
                requires_ok && declared_ok
            }
        }
    }
}
