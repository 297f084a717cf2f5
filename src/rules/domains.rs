//! Where an operator is defined, learned by running it. `log` is NaN below 0, `acos` outside
//! [-1, 1]; inside its domain a NaN is a bug (an intermediate overflowed, a branch is wrong).
//! `sfz infer --oracles` tries domains from the widest down (the whole line, `x >= -1`, `x >= 0`,
//! `x > 0`, `x >= 1`, `[-1, 1]`, `[0, 1]`) on the first tensor parameters, each on conforming
//! inputs of ordinary magnitude drawn inside it, some of them at the cliffs where a function
//! itself may be undefined (poles, zero, denormals: `cliff::OF_THE_FUNCTION`), and keeps the
//! first on which no output held a NaN as `ensures GUARD => no_nan(result)`, which the `nan_inf`
//! oracle judges in every campaign. Huge magnitudes are left out on purpose: a NaN where only
//! the arithmetic overflowed (`sinc(1e308)`, whose value is tiny) is what the oracle is for.
use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::infer::sample;
use super::{Candidate, Judged};
use crate::gen::{cliff, mix, values};
use crate::solve::Limits;
use crate::spec::{ApiSpec, BinOp, Category, Constraint, Origin, ParamType, Prop, RuleSource, RuleStatus, TExpr, Value};
use crate::wire::case::{Arg, Fill};

/// What became of one case: whether it returned, a floating output, a NaN in one.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Seen {
    pub returned: bool,
    pub floating: bool,
    pub nan: bool,
}

/// Runs argument lists of one API and says what their outputs held.
pub trait Observe {
    /// As `Runner::run`: no case starts after `deadline`; the first cases' results.
    fn observe(&self, api: usize, cases: &[Vec<Arg>], deadline: Instant) -> Vec<Seen>;
}

/// The rule's name.
pub const RULE: &str = "domain";

/// A bound on a parameter's values.
#[derive(Clone, Copy, Debug)]
enum Bound {
    AtLeast(f64),
    Above(f64),
    Within(f64, f64),
}

/// Bounds tried on one parameter, widest first; `None` is the whole line.
const BOUNDS: &[Option<Bound>] = &[
    None,
    Some(Bound::AtLeast(-1.0)),
    Some(Bound::AtLeast(0.0)),
    Some(Bound::Above(0.0)),
    Some(Bound::AtLeast(1.0)),
    Some(Bound::Within(-1.0, 1.0)),
    Some(Bound::Within(0.0, 1.0)),
];

impl Bound {
    fn text(self, param: &str) -> String {
        match self {
            Bound::AtLeast(v) => format!("{param}.values >= {v:?}"),
            Bound::Above(v) => format!("{param}.values > {v:?}"),
            Bound::Within(lo, hi) => format!("{param}.values in {lo:?}..={hi:?}"),
        }
    }

    /// The bound's closed low end everywhere, or the integers at its low end that lie inside.
    fn edge(self, rng: &mut ChaCha8Rng) -> Fill {
        let (lo, hi) = match self {
            Bound::AtLeast(v) => (v, v + 2.0),
            Bound::Above(v) => (v.floor() + 1.0, v.floor() + 3.0),
            Bound::Within(lo, hi) => (lo.ceil(), hi.min(lo + 2.0)),
        };
        match self {
            Bound::AtLeast(v) | Bound::Within(v, _) if rng.random_bool(0.5) => Fill::Constant(v),
            _ => Fill::Int { lo: lo.ceil() as i64, hi: hi.floor() as i64 + 1 },
        }
    }

    fn constraint(self, api: &ApiSpec, p: usize) -> Constraint {
        let values = Box::new(TExpr::Prop(Box::new(TExpr::Param(p)), Prop::Values));
        let lit = |v: f64| Box::new(TExpr::Lit(Value::Float(v)));
        let expr = match self {
            Bound::AtLeast(v) => TExpr::Binary(BinOp::Ge, values, lit(v)),
            Bound::Above(v) => TExpr::Binary(BinOp::Gt, values, lit(v)),
            Bound::Within(lo, hi) => TExpr::Binary(BinOp::In, values, Box::new(TExpr::Range { lo: lit(lo), hi: lit(hi), inclusive: true })),
        };
        Constraint { expr, span: api.span, text: self.text(&api.params[p].name), origin: Origin::Inline, category: Category::Range, params: vec![p] }
    }
}

/// Cases per domain tried, the share of them moved to a cliff, and the share whose bounded
/// tensor holds the integers at the domain's closed end (-1 and 0 for `x >= -1`): a pole
/// there (digamma's at -1) must refute the domain, and a random draw seldom lands on it.
const CASES: usize = 64;
const CLIFF: f64 = 0.35;
const EDGE: f64 = 0.2;
/// A domain is kept only when this many of its cases returned a floating output.
const MIN_EVIDENCE: usize = 24;
/// Domains tried at most (two parameters have 49 combinations; the widest come first, and 21
/// reach `x > 0 and y >= 0`, gammainc's).
const MAX_TRIES: usize = 21;

/// The learned domain of `api` as a validated rule, or None (no floating output, too few
/// returned cases, or NaN in every domain tried).
pub fn learn(api: &ApiSpec, index: usize, runner: &dyn Observe, seed: u64, limits: &Limits, deadline: Instant) -> Option<Judged> {
    let results = result_names(api)?;
    let tensors: Vec<usize> = api.params.iter().enumerate().filter(|(_, p)| p.ty == ParamType::Tensor).map(|(i, _)| i).take(2).collect();
    if tensors.is_empty() {
        return None;
    }
    let mut tried = 0;
    let mut refuted = 0i64;
    for combo in combinations(tensors.len()) {
        if tried == MAX_TRIES || Instant::now() >= deadline {
            break;
        }
        tried += 1;
        let bounds: Vec<(Bound, usize)> = combo.iter().zip(&tensors).filter_map(|(&b, &p)| BOUNDS[b].map(|b| (b, p))).collect();
        let atoms: Vec<String> = bounds.iter().map(|(b, p)| b.text(&api.params[*p].name)).collect();
        let consequent = results.iter().map(|r| format!("no_nan({r})")).collect::<Vec<_>>().join(" and ");
        let text = if atoms.is_empty() { format!("ensures {consequent};") } else { format!("ensures {} => {consequent};", atoms.join(" and ")) };
        let mut probe = api.clone();
        probe.requires.extend(bounds.iter().map(|(b, p)| b.constraint(api, *p)));
        let cases = draw(&probe, &bounds, mix(seed ^ mix(index as u64) ^ mix(tried as u64)), limits);
        let seen = runner.observe(index, &cases, deadline);
        let judged = seen.iter().filter(|s| s.returned && s.floating).count();
        if judged == 0 && atoms.is_empty() {
            // Nothing floating comes out on ordinary inputs: no domain to speak of.
            return None;
        }
        if seen.iter().any(|s| s.nan) {
            refuted += 1;
            continue;
        }
        if judged < MIN_EVIDENCE {
            continue;
        }
        return Some(Judged {
            candidate: Candidate { name: RULE.into(), text, source: RuleSource::Inferred },
            status: RuleStatus::Validated,
            confidence: None,
            evidence: vec![("cases".into(), judged as i64), ("nan_seen".into(), 0), ("wider_refuted".into(), refuted)],
        });
    }
    None
}

/// The names of the API's results when all are tensors (`result` for one).
fn result_names(api: &ApiSpec) -> Option<Vec<String>> {
    // `result.0` is no name an `ensures` can use, nor, among several outputs, one called
    // `result` (`_linalg_solve_ex`'s): there `result` is all of them.
    let ambiguous = |r: &crate::spec::ReturnSpec| r.name.contains('.') || (api.returns.len() > 1 && r.name == "result");
    if api.returns.is_empty() || api.returns.iter().any(|r| r.ty != ParamType::Tensor || ambiguous(r)) {
        return None;
    }
    Some(api.returns.iter().map(|r| r.name.clone()).collect())
}

/// Index combinations into `BOUNDS` for `n` parameters, by how far they narrow (the sum of
/// indices), widest first.
fn combinations(n: usize) -> Vec<Vec<usize>> {
    let k = BOUNDS.len();
    let mut all: Vec<Vec<usize>> = match n {
        1 => (0..k).map(|i| vec![i]).collect(),
        _ => (0..k).flat_map(|i| (0..k).map(move |j| vec![i, j])).collect(),
    };
    all.sort_by_key(|c| (c.iter().sum::<usize>(), c.iter().copied().max()));
    all
}

/// Conforming cases of `probe`, a share of them at a cliff or at the edge of `bounds` that
/// stays inside them.
fn draw(probe: &ApiSpec, bounds: &[(Bound, usize)], seed: u64, limits: &Limits) -> Vec<Vec<Arg>> {
    let mut rng = ChaCha8Rng::seed_from_u64(mix(seed ^ 0xd0));
    let mut cases = sample(probe, CASES, seed, limits, None);
    for args in &mut cases {
        let before = args.clone();
        let moved = if rng.random_bool(EDGE) {
            // On the whole line, the edges are the poles.
            match bounds.get(rng.random_range(0..bounds.len().max(1))) {
                None => cliff::cliff_among(args, &[cliff::Cliff::Poles], &mut rng).is_some(),
                Some(&(bound, p)) => match args.get_mut(p) {
                    Some(Arg::Tensor(t)) if t.numel() > 0 && t.dtype.limits().is_some() => {
                        t.fill = bound.edge(&mut rng);
                        true
                    }
                    _ => false,
                },
            }
        } else {
            rng.random_bool(CLIFF) && cliff::cliff_among(args, &cliff::OF_THE_FUNCTION, &mut rng).is_some()
        };
        if moved && values::conforms(probe, args).contains(&Some(false)) {
            *args = before;
        }
    }
    cases
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_widest_combinations_come_first() {
        let c = combinations(2);
        assert_eq!(c[0], vec![0, 0]);
        assert_eq!(c[1..3].to_vec(), vec![vec![0, 1], vec![1, 0]]);
        assert_eq!(c.len(), BOUNDS.len() * BOUNDS.len());
        assert_eq!(combinations(1).len(), BOUNDS.len());
    }

    #[test]
    fn outputs_are_named_as_an_ensures_can_name_them() {
        let api = |src: &str| crate::check::check_text(std::path::Path::new("t.sfz"), src).spec.apis.remove(0);
        assert_eq!(result_names(&api("api torch.exp(input: Tensor) -> Tensor {}\n")), Some(vec!["result".to_string()]));
        let lu = api("api torch.linalg.lu_factor(A: Tensor) -> (LU: Tensor, pivots: Tensor) {}\n");
        assert_eq!(result_names(&lu), Some(vec!["LU".to_string(), "pivots".to_string()]));
        // Among several outputs, `result` is the tuple: no output of that name can be judged.
        let solve = api("api torch._linalg_solve_ex(A: Tensor, B: Tensor) -> (result: Tensor, LU: Tensor, pivots: Tensor) {}\n");
        assert_eq!(result_names(&solve), None);
    }

    /// log on real libtorch is tested in tests/numerics.rs; here a runner that returns NaN
    /// below 0 as log does, to pin the search's choice.
    struct LogLike;
    impl Observe for LogLike {
        fn observe(&self, _: usize, cases: &[Vec<Arg>], _: Instant) -> Vec<Seen> {
            cases
                .iter()
                .map(|args| {
                    let Arg::Tensor(t) = &args[0] else { return Seen::default() };
                    let v = crate::eval::TensorVal::of_recipe(t);
                    Seen { returned: true, floating: true, nan: v.min < 0.0 || v.nan }
                })
                .collect()
        }
    }

    /// A runner with digamma's poles: NaN at the negative integers, which a uniform draw never
    /// holds (an integer fill is taken to hold its lowest value).
    struct PolesLike;
    impl Observe for PolesLike {
        fn observe(&self, _: usize, cases: &[Vec<Arg>], _: Instant) -> Vec<Seen> {
            cases
                .iter()
                .map(|args| {
                    let Arg::Tensor(t) = &args[0] else { return Seen::default() };
                    let nan = match t.fill {
                        Fill::Int { lo, .. } => lo < 0,
                        Fill::Constant(v) => v < 0.0 && v.fract() == 0.0,
                        Fill::Uniform { .. } => false,
                    };
                    Seen { returned: true, floating: true, nan }
                })
                .collect()
        }
    }

    #[test]
    fn a_pole_at_the_end_of_a_domain_refutes_it() {
        let checked = crate::check::check_text(std::path::Path::new("t.sfz"), "api torch.digamma(input: Tensor) -> Tensor {\n    input.dtype in [float32, float64];\n}\n");
        let api = &checked.spec.apis[0];
        for seed in 0..8 {
            let rule = learn(api, 0, &PolesLike, seed, &Limits::default(), Instant::now() + std::time::Duration::from_secs(30)).expect("a domain");
            assert_eq!(rule.candidate.text, "ensures input.values >= 0.0 => no_nan(result);", "seed {seed}: -1 is a pole");
        }
    }

    #[test]
    fn a_function_defined_from_zero_gets_that_domain() {
        let checked = crate::check::check_text(std::path::Path::new("t.sfz"), "api torch.log(input: Tensor) -> Tensor {\n    input.dtype in [float32, float64];\n}\n");
        assert!(!checked.has_errors(), "{:?}", checked.diags);
        let api = &checked.spec.apis[0];
        let rule = learn(api, 0, &LogLike, 7, &Limits::default(), Instant::now() + std::time::Duration::from_secs(30)).expect("a domain");
        assert_eq!(rule.candidate.text, "ensures input.values >= 0.0 => no_nan(result);");
        assert_eq!(rule.evidence[2], ("wider_refuted".to_string(), 2));
    }
}
