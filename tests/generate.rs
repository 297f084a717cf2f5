//! Generated inputs obey their spec, or break exactly the constraint they claim to: for the APIs
//! in specs/ (every one for conforming cases, every other one for violating cases), cases from
//! the solver's pools (boundary mutators on) are judged by the evaluator and the declaration
//! checks, which share no code with the z3 encoding.
use std::collections::{BTreeMap, HashSet};

use sfz::gen::plan::{GenPlan, Target};
use sfz::gen::{self, values, violate, ApiPools, GenConfig, Generator, Mode, Mutation, Strategy};
use sfz::solve::{Boundary, SolveError, SymValue};
use sfz::spec::{ApiSpec, Category};
use sfz::wire::case::Arg;

fn spec_apis() -> Vec<ApiSpec> {
    let checked = sfz::check::check_paths(&[concat!(env!("CARGO_MANIFEST_DIR"), "/specs").into()]);
    assert!(!checked.has_errors(), "specs/ must check clean");
    checked.spec.apis
}

fn api_text(src: &str) -> ApiSpec {
    let checked = sfz::check::check_text(std::path::Path::new("t.sfz"), src);
    assert!(!checked.has_errors(), "{:?}", checked.diags);
    checked.spec.apis.into_iter().next().expect("one api")
}

/// Every API's pools, solved on every core as `sfz fuzz` solves them.
fn pools(apis: &[ApiSpec], config: &GenConfig) -> Vec<ApiPools> {
    let refs: Vec<&ApiSpec> = apis.iter().collect();
    let solved = gen::solve_all(&refs, config);
    apis.iter().zip(solved).map(|(api, p)| p.unwrap_or_else(|e| panic!("{}: {e}", api.name))).collect()
}

/// The evaluator's verdict per `requires` constraint and the declaration checks' per declared
/// constraint.
fn judge(api: &ApiSpec, args: &[Arg]) -> (Vec<Option<bool>>, Vec<bool>) {
    let plan = GenPlan::new(api);
    (values::conforms(api, args), violate::declared_hold(api, &plan.declared, args))
}

#[test]
fn conforming_cases_satisfy_every_constraint() {
    // Every API is solved once, half of them under each seed: solving is this test's cost.
    let all = spec_apis();
    for seed in [1u64, 2] {
        let apis: Vec<ApiSpec> = all.iter().skip(seed as usize - 1).step_by(2).cloned().collect();
        let config = GenConfig { seed, pool_size: 24, ..Default::default() };
        let pools = pools(&apis, &config);
        for (api, pool) in apis.iter().zip(&pools) {
            assert!(!pool.models.is_empty(), "{} has no models", api.name);
        }
        let generator = Generator::new(apis.clone(), pools, config);
        for index in 0..3000 {
            let case = generator.case(index).expect("every API has models");
            let api = &apis[case.api];
            assert!(case.violated.is_none(), "{}: case {index} names a broken constraint in conform mode", api.name);
            let (requires, declared) = judge(api, &case.args);
            for (c, verdict) in api.requires.iter().zip(requires) {
                // The cliff mutator may put values beyond a value bound; such a case is marked
                // non-conforming, and it breaks nothing else.
                let value_bound = c.text.contains(".values") || c.text.contains("finite(");
                if case.conforms || !value_bound {
                    assert_ne!(verdict, Some(false), "{}: case {index} violates `{}`: {:?}", api.name, c.text, case.args);
                }
            }
            assert!(declared.iter().all(|&d| d), "{}: case {index} breaks a declaration: {:?}", api.name, case.args);
        }
    }
}

#[test]
fn violating_cases_break_exactly_the_constraint_they_name() {
    // Every other API: a violation pool per constraint makes this the suite's costliest solve
    // (15 minutes on one core for all of specs/), and the constraint forms recur across APIs.
    let apis: Vec<ApiSpec> = spec_apis().into_iter().step_by(2).collect();
    let config = GenConfig { seed: 5, pool_size: 16, mode: Mode::Violate, ..Default::default() };
    let pools = pools(&apis, &config);
    let generator = Generator::new(apis.clone(), pools, config);
    let mut violating = 0;
    let mut by_category: BTreeMap<Category, usize> = BTreeMap::new();
    let mut constraints: HashSet<(usize, String)> = HashSet::new();
    let n = 4000;
    for index in 0..n {
        let case = generator.case(index).expect("every API has models");
        let api = &apis[case.api];
        let Some(v) = case.violated else { continue };
        violating += 1;
        let v = &generator.violations(case.api, index)[v];
        *by_category.entry(v.category).or_insert(0) += 1;
        constraints.insert((case.api, v.text.clone()));
        let plan = GenPlan::new(api);
        let (requires, declared) = judge(api, &case.args);
        for (k, verdict) in requires.iter().enumerate() {
            if v.target == Target::Requires(k) {
                assert_eq!(*verdict, Some(false), "{}: case {index} should break `{}`: {:?}", api.name, v.text, case.args);
            } else {
                assert_ne!(*verdict, Some(false), "{}: case {index} breaks `{}` besides `{}`: {:?}", api.name, api.requires[k].text, v.text, case.args);
            }
        }
        for (d, held) in plan.declared.iter().zip(declared) {
            let target = v.target == Target::Declared(d.clone());
            assert_eq!(held, !target, "{}: case {index}: `{}` {} ({}): {:?}", api.name, d.text(api), if held { "holds" } else { "is broken" }, v.text, case.args);
        }
    }
    // Violations are found for nearly every case, and spread over every category the specs have.
    assert!(violating * 100 >= n as usize * 95, "only {violating} of {n} cases violate");
    for cat in [Category::Dtype, Category::Ndim, Category::Shape, Category::Range, Category::Structure, Category::Invariant] {
        assert!(by_category.get(&cat).copied().unwrap_or(0) >= 20, "few violations of {cat:?}: {by_category:?}");
    }
    assert!(constraints.len() >= 150, "only {} distinct constraints broken", constraints.len());
}

#[test]
fn enum_violations_use_values_outside_the_set() {
    let api = api_text(
        "api torch.nn.functional.l1_loss(input: Tensor, target: Tensor, reduction: \"none\" | \"mean\" | \"sum\" = \"mean\") -> Tensor {\n input.shape == target.shape;\n}",
    );
    let config = GenConfig { seed: 1, pool_size: 8, mode: Mode::Violate, ..Default::default() };
    let generator = Generator::new(vec![api.clone()], vec![gen::solve_api(&api, &config, 0).expect("solvable")], config);
    let mut enum_cases = 0;
    for index in 0..400 {
        let case = generator.case(index).expect("models");
        if let Some(v) = case.violated {
            if generator.violations(0, index)[v].category == Category::Enum {
                enum_cases += 1;
                let Arg::Str(s) = &case.args[2] else { panic!("reduction is a string: {:?}", case.args) };
                assert!(!["none", "mean", "sum"].contains(&s.as_str()), "{s}");
            }
        }
    }
    assert!(enum_cases > 20, "{enum_cases}");
}

#[test]
fn naive_cases_that_claim_to_conform_do() {
    let apis = spec_apis();
    let config = GenConfig { seed: 3, strategy: Strategy::Naive, mutation: Mutation::none(), ..Default::default() };
    let generator = Generator::new(apis.clone(), pools(&apis, &config), config);
    let mut conforming = 0;
    for index in 0..2000 {
        let case = generator.case(index).expect("naive draws always exist");
        if case.conforms {
            conforming += 1;
            let (requires, _) = judge(&apis[case.api], &case.args);
            assert!(requires.iter().all(|v| *v != Some(false)));
        }
    }
    // The baseline conforms less often than the solver (which always does), but not never.
    assert!(conforming > 200 && conforming < 2000, "{conforming}");
}

#[test]
fn a_case_is_a_function_of_seed_and_index() {
    // Determinism needs no API in particular: every ninth keeps the suite's time bounded as
    // specs/ grows (solving violating pools twice for all 1,357 was its costliest test).
    let apis: Vec<ApiSpec> = spec_apis().into_iter().step_by(9).collect();
    let config = GenConfig { seed: 9, pool_size: 16, mode: Mode::Mixed(0.5), ..Default::default() };
    let build = || Generator::new(apis.clone(), pools(&apis, &config), config.clone());
    let (a, b) = (build(), build());
    for index in [0, 1, 77, 4096, 90_001] {
        let (x, y) = (a.case(index).expect("case"), b.case(index).expect("case"));
        assert_eq!((x.api, &x.args, x.violated), (y.api, &y.args, y.violated));
    }
}

#[test]
fn pools_are_diverse_and_reach_their_edges() {
    let apis = spec_apis();
    let find = |name: &str| apis.iter().position(|a| a.name == name).expect("specified");
    let conv = find("torch.nn.functional.conv2d");
    let config = GenConfig { seed: 3, pool_size: 48, ..Default::default() };
    let pool = gen::solve_api(&apis[conv], &config, conv).expect("solvable");
    let distinct: HashSet<String> = pool.models.iter().map(|m| format!("{m:?}")).collect();
    assert_eq!(distinct.len(), pool.models.len(), "models are distinct");
    let input = |m: &Vec<SymValue>| match &m[0] {
        SymValue::Tensor { dtype, shape } => (*dtype, shape.len()),
        other => panic!("{other:?}"),
    };
    let ranks: HashSet<usize> = pool.models.iter().map(|m| input(m).1).collect();
    assert_eq!(ranks.len(), 2, "input ranks 3 and 4 both appear: {ranks:?}");
    let dtypes: HashSet<_> = pool.models.iter().map(|m| input(m).0).collect();
    assert_eq!(dtypes.len(), 2, "float32 and float64 both appear: {dtypes:?}");
    // Boundary models: bias None, an empty input (a zero batch), groups at both ends.
    let edges: Vec<&Boundary> = pool.boundary.iter().map(|(b, _)| b).collect();
    for want in [Boundary::Absent(2), Boundary::Empty(0), Boundary::IntMin("groups".into()), Boundary::IntMax("groups".into())] {
        assert!(edges.contains(&&want), "{want:?} missing from {edges:?}");
    }
    let groups: HashSet<i64> = pool.boundary.iter().filter_map(|(_, m)| if let SymValue::Int(g) = m[6] { Some(g) } else { None }).collect();
    assert!(groups.contains(&1) && groups.contains(&3), "{groups:?}");
    // The solver knows which dtypes each tensor can have.
    assert_eq!(pool.dtypes[0].len(), 2);

    let softmax = find("torch.nn.functional.softmax");
    let pool = gen::solve_api(&apis[softmax], &GenConfig { seed: 4, pool_size: 32, ..Default::default() }, softmax).expect("solvable");
    let dtypes: HashSet<_> = pool.models.iter().map(|m| input(m).0).collect();
    assert_eq!(dtypes.len(), 4, "all four floating dtypes appear: {dtypes:?}");
}

#[test]
fn constraints_that_cannot_be_broken_alone_are_noted() {
    let api = api_text("api torch.exp(input: Tensor) -> Tensor {\n input.ndim >= 2;\n input.ndim >= 1;\n}");
    let config = GenConfig { seed: 1, pool_size: 8, mode: Mode::Violate, ..Default::default() };
    let pools = gen::solve_api(&api, &config, 0).expect("solvable");
    assert!(!pools.violating[0].is_empty(), "ndim >= 2 breaks with ndim 1");
    assert!(pools.violating[1].is_empty());
    assert_eq!(pools.unbreakable.get(&1).map(String::as_str), Some("it cannot be broken while the other constraints hold"));
}

#[test]
fn unsatisfiable_constraints_name_a_conflicting_subset() {
    // `sfz check` reports E0009 already; a library caller that fuzzes anyway gets the core.
    let checked = sfz::check::check_text(std::path::Path::new("t.sfz"), "api torch.exp(input: Tensor) -> Tensor {\n input.ndim > 3;\n input.numel <= 1000;\n input.ndim < 2;\n}");
    assert_eq!(checked.diags.iter().map(|d| d.code.as_str()).collect::<Vec<_>>(), ["E0009"]);
    let api = &checked.spec.apis[0];
    match gen::solve_api(api, &GenConfig::default(), 0) {
        Err(SolveError::Unsat { core }) => assert_eq!(core, vec![0, 2]),
        other => panic!("{other:?}"),
    }
}

/// A `str` parameter is drawn among the values its constraints name, and a violation of the set
/// uses a string outside it (before, strings stayed at their default and `in` could not be broken).
#[test]
fn string_parameters_take_the_values_their_constraints_name() {
    let api = api_text("api torch.linalg.qr(A: Tensor, mode: str = \"reduced\") -> Tensor {\n A.ndim >= 2;\n mode in [\"reduced\", \"r\", \"complete\"];\n}");
    let config = GenConfig { seed: 1, pool_size: 16, ..Default::default() };
    let generator = Generator::new(vec![api.clone()], vec![gen::solve_api(&api, &config, 0).expect("solvable")], config);
    let mut seen = HashSet::new();
    for index in 0..300 {
        let case = generator.case(index).expect("models");
        match &case.args[1] {
            Arg::Str(s) => {
                assert!(["reduced", "r", "complete"].contains(&s.as_str()), "{s}");
                seen.insert(s.clone());
            }
            Arg::Omitted => {}
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(seen.len(), 3, "{seen:?}");
    let config = GenConfig { seed: 1, pool_size: 8, mode: Mode::Violate, ..Default::default() };
    let generator = Generator::new(vec![api.clone()], vec![gen::solve_api(&api, &config, 0).expect("solvable")], config);
    let broken = (0..400)
        .filter_map(|i| generator.case(i))
        .filter(|c| c.violated.is_some_and(|v| generator.violations(0, 0)[v].category == Category::Enum))
        .inspect(|c| assert!(matches!(&c.args[1], Arg::Str(s) if !["reduced", "r", "complete"].contains(&s.as_str())), "{:?}", c.args))
        .count();
    assert!(broken > 20, "{broken}");
}

/// A float or Scalar parameter limited to listed values takes one of them (`multi_margin_loss`'s
/// `p in [1, 2]`): drawn from a range, every case was non-conforming.
#[test]
fn float_and_scalar_parameters_take_the_values_listed_for_them() {
    let api = api_text("api torch.f(input: Tensor, p: Scalar = 1, margin: float = 1.0) -> Tensor {\n p in [1, 2];\n margin == 0.5;\n}");
    let config = GenConfig { seed: 3, pool_size: 8, ..Default::default() };
    let generator = Generator::new(vec![api.clone()], vec![gen::solve_api(&api, &config, 0).expect("solvable")], config);
    let mut seen = HashSet::new();
    for index in 0..200 {
        let case = generator.case(index).expect("models");
        assert!(case.conforms, "{:?}", case.args);
        if let Arg::Float(p) = case.args[1] {
            seen.insert(p.to_bits());
        }
        assert!(matches!(case.args[2], Arg::Float(m) if m == 0.5) || matches!(case.args[2], Arg::Omitted), "{:?}", case.args);
    }
    assert_eq!(seen, HashSet::from([1.0f64.to_bits(), 2.0f64.to_bits()]));
}

/// Constants outside the default int domain (-8..32) are reachable: `ms in [3000]` was unsat.
#[test]
fn int_constants_outside_the_default_domain_are_reachable() {
    let api = api_text("api torch.f(input: Tensor, ms: int, n: int) -> Tensor {\n ms in [3000];\n n >= 100;\n}");
    let pools = gen::solve_api(&api, &GenConfig::default(), 0).expect("satisfiable");
    assert!(!pools.models.is_empty());
    for m in &pools.models {
        assert_eq!(m[1], SymValue::Int(3000), "{m:?}");
        assert!(matches!(m[2], SymValue::Int(n) if n >= 100), "{m:?}");
    }
}

/// A value bound on every element of a tensor list, as `forall t in xs: t.values in ..` or
/// `xs[*].values in ..`, bounds the elements the generator fills: an RNN's weights.
/// Constraint sets applied inside constraint sets, and bounds behind guards, give conforming
/// cases: the fused optimizers' lists (a `forall` over indices tying shapes, beside an `if` on
/// a list's length bounding a float) ran at 0 conforming cases when the inner set came as one
/// `and` the solver did not take apart, and the guarded float was drawn unbounded.
#[test]
fn nested_constraint_sets_and_guarded_bounds_conform() {
    let src = "constraints inner(xs: Tensor[], ys: Tensor[], m: float) {\n\
                   forall i in 0..len(xs): ys[i].shape == xs[i].shape and ys[i].dtype == xs[i].dtype;\n\
                   if len(ys) == 0 then m == 0.0 else m in 0.1..0.99;\n\
               }\n\
               constraints outer(xs: Tensor[], ys: Tensor[], m: float) {\n\
                   len(xs) in 1..=3;\n\
                   len(ys) == len(xs);\n\
                   inner(xs, ys, m);\n\
               }\n\
               api torch.ops.aten._foreach_lerp.Scalar(self: Tensor[], tensors1: Tensor[], weight: Scalar) -> Tensor[] {\n\
                   outer(self, tensors1, weight);\n\
               }\n";
    let api = api_text(src);
    let config = GenConfig { seed: 3, pool_size: 8, ..Default::default() };
    let generator = Generator::new(vec![api.clone()], vec![gen::solve_api(&api, &config, 0).expect("solvable")], config);
    let conforming = (0..200).filter(|&i| generator.case(i).expect("models").conforms).count();
    assert!(conforming > 150, "{conforming} of 200 cases conform");
}

#[test]
fn value_bounds_reach_the_elements_of_tensor_lists() {
    for bound in ["forall t in params: t.values in -2.0..2.0;", "params[*].values in -2.0..2.0;"] {
        let api = api_text(&format!("api torch.f(input: Tensor, params: Tensor[]) -> Tensor {{\n len(params) >= 1;\n {bound}\n}}"));
        let config = GenConfig { seed: 5, pool_size: 8, ..Default::default() };
        let generator = Generator::new(vec![api.clone()], vec![gen::solve_api(&api, &config, 0).expect("solvable")], config);
        let mut conforming = 0;
        for index in 0..200 {
            let case = generator.case(index).expect("models");
            let Arg::TensorList(ts) = &case.args[1] else { panic!("{:?}", case.args) };
            // The cliff mutator may put values past a bound; such a case says it does not conform.
            if case.conforms {
                conforming += 1;
                let (requires, _) = judge(&api, &case.args);
                assert!(requires.iter().all(|v| *v != Some(false)), "`{bound}`: {ts:?}");
            }
        }
        assert!(conforming > 150, "`{bound}`: {conforming} of 200 cases conform");
    }
}

/// Streamed solving hands each API's ordinary pool over first and its whole pools once complete,
/// the same pools `solve_all` solves (each job has its own seed). An API joins the generator from
/// a case index on, and its whole pools from a later one: a case below it never sees them, and a
/// case made again after later joins is the same case.
#[test]
fn apis_join_as_they_are_solved_and_earlier_cases_stay_the_same() {
    let apis: Vec<ApiSpec> = spec_apis().into_iter().take(6).collect();
    let config = GenConfig { seed: 9, pool_size: 8, ..Default::default() };
    assert!(config.mutation.huge > 0.0, "the default mutation has huge models: two stages");
    let refs: Vec<&ApiSpec> = apis.iter().collect();
    let handed: std::sync::Mutex<Vec<(usize, ApiPools, bool)>> = Default::default();
    let heard = gen::solve_streaming(&refs, &config, &gen::SolveBudget::default(), &|i, p, complete| {
        handed.lock().unwrap().push((i, p.unwrap_or_else(|e| panic!("{e}")), complete));
    });
    assert!(heard.iter().all(|&h| h), "{heard:?}");
    let handed = handed.into_inner().unwrap();
    let batch = pools(&apis, &config);
    let (mut first, mut whole) = (Vec::new(), Vec::new());
    for (i, api) in apis.iter().enumerate() {
        let mine: Vec<&(usize, ApiPools, bool)> = handed.iter().filter(|h| h.0 == i).collect();
        let shown: Vec<bool> = mine.iter().map(|h| h.2).collect();
        // Its ordinary pool, then the whole; or the whole at once, where its huge models were
        // solved before its ordinary pool (on another thread).
        assert!(shown == [false, true] || shown == [true], "{}: {shown:?}", api.name);
        let last = mine[mine.len() - 1];
        assert!(!mine[0].1.models.is_empty(), "{}", api.name);
        if shown.len() == 2 {
            assert!(mine[0].1.huge.is_empty(), "{}: the ordinary pool alone first", api.name);
        }
        assert_eq!(format!("{:?}", last.1.models), format!("{:?}", batch[i].models), "{}", api.name);
        assert_eq!(format!("{:?}", last.1.huge), format!("{:?}", batch[i].huge), "{}", api.name);
        first.push(mine[0].1.clone());
        whole.push(last.1.clone());
    }

    let generator = Generator::waiting(apis.clone(), config.clone());
    assert!(generator.case(0).is_none(), "no API has joined");
    let mut first = first.into_iter().enumerate();
    let (a, pools_a) = first.next().unwrap();
    generator.join(a, generator.prepare(a, pools_a), 0);
    let before: Vec<String> = (0..100).map(|i| format!("{:?}", generator.case(i).unwrap().args)).collect();
    for (api, pools) in first {
        generator.join(api, generator.prepare(api, pools), 100);
    }
    for (api, pools) in whole.into_iter().enumerate() {
        assert!(!generator.join(api, generator.prepare(api, pools), 200), "a second join is an upgrade");
    }
    assert_eq!(generator.joined(), apis.len());
    for (i, shown) in before.iter().enumerate() {
        let case = generator.case(i as u64).unwrap();
        assert_eq!(case.api, a, "case {i} chose an API that joined after it");
        assert_eq!(&format!("{:?}", case.args), shown, "case {i} changed");
    }
    let later: HashSet<usize> = (100..400).map(|i| generator.case(i).unwrap().api).collect();
    assert!(later.len() > 1, "later cases choose the APIs that joined: {later:?}");
    assert!(generator.pools(a).is_some_and(|p| !p.huge.is_empty()), "the whole pools replace the ordinary ones");
}
