//! Generated inputs obey their spec: for every API in specs/, the solver's models concretised
//! into cases satisfy every `requires` constraint, as judged by the evaluator, which shares no
//! code with the z3 encoding.
use sfz::gen::{self, values, GenConfig, Generator};

fn spec_apis() -> Vec<sfz::spec::ApiSpec> {
    let checked = sfz::check::check_paths(&[concat!(env!("CARGO_MANIFEST_DIR"), "/specs").into()]);
    assert!(!checked.has_errors(), "specs/ must check clean");
    checked.spec.apis
}

#[test]
fn conforming_cases_satisfy_every_constraint() {
    let apis = spec_apis();
    for seed in [1u64, 2] {
        let config = GenConfig { seed, pool_size: 24, ..Default::default() };
        let pools: Vec<_> = apis
            .iter()
            .enumerate()
            .map(|(i, api)| gen::solve_pool(api, &config, i).unwrap_or_else(|e| panic!("{}: {e}", api.name)))
            .collect();
        for (api, pool) in apis.iter().zip(&pools) {
            assert!(!pool.is_empty(), "{} has no models", api.name);
        }
        let generator = Generator::new(apis.clone(), pools, seed);
        for index in 0..3000 {
            let case = generator.case(index).expect("every API has models");
            let api = &apis[case.api];
            for (c, verdict) in api.requires.iter().zip(values::conforms(api, &case.args)) {
                assert_ne!(verdict, Some(false), "{}: case {index} violates `{}`: {:?}", api.name, c.text, case.args);
            }
        }
    }
}

#[test]
fn a_case_is_a_function_of_seed_and_index() {
    let apis = spec_apis();
    let config = GenConfig { seed: 9, pool_size: 16, ..Default::default() };
    let build = || {
        let pools = apis.iter().enumerate().map(|(i, a)| gen::solve_pool(a, &config, i).expect("solvable")).collect();
        Generator::new(apis.clone(), pools, 9)
    };
    let (a, b) = (build(), build());
    for index in [0, 1, 77, 4096] {
        let (x, y) = (a.case(index).expect("case"), b.case(index).expect("case"));
        assert_eq!((x.api, &x.args), (y.api, &y.args));
    }
}

#[test]
fn pools_are_diverse() {
    let apis = spec_apis();
    let conv = apis.iter().position(|a| a.name == "torch.nn.functional.conv2d").expect("conv2d is specified");
    let pool = gen::solve_pool(&apis[conv], &GenConfig { seed: 3, pool_size: 48, ..Default::default() }, conv).expect("solvable");
    let distinct: std::collections::HashSet<String> = pool.iter().map(|m| format!("{m:?}")).collect();
    assert_eq!(distinct.len(), pool.len(), "models are distinct");
    // Both ranks of the input and several group counts appear.
    let ranks: std::collections::HashSet<usize> = pool
        .iter()
        .filter_map(|m| match &m[0] {
            sfz::solve::SymValue::Tensor { shape, .. } => Some(shape.len()),
            _ => None,
        })
        .collect();
    assert_eq!(ranks.len(), 2, "input ranks 3 and 4 both appear: {ranks:?}");
}
