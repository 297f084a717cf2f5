//! Operators that write to their arguments (`abs_`, `add.out`) and take tensor lists (`cat`),
//! from `sfz init`'s skeletons through the resolver to real libtorch calls.
mod common;

use std::path::Path;

use sfz::ops::binding::OpBinding;
use sfz::ops::catalog::Catalog;
use sfz::ops::registry;
use sfz::rules::skeleton;
use sfz::wire::case::{Arg, Case, DType, Fill, Layout, TensorRecipe};
use sfz::wire::outcome::{ErrorClass, Outcome, Output};
use sfz::wire::variant::{Check, CheckOutcome, Tolerance, Tolerances, Variant};
use sfz_worker::runtime::{self, materialize, Executor};

fn catalog() -> &'static Catalog {
    static C: std::sync::OnceLock<Catalog> = std::sync::OnceLock::new();
    C.get_or_init(|| {
        runtime::init(1);
        Catalog::from_schemas(runtime::catalog_schemas())
    })
}

/// The binding of `sfz init NAME`'s skeleton, as `sfz fuzz` would make it.
fn binding(name: &str) -> OpBinding {
    let s = skeleton::skeleton(name, catalog()).unwrap_or_else(|e| panic!("{name}: {e}"));
    let checked = sfz::check::check_text(Path::new("skeleton.sfz"), &s.text);
    assert!(!checked.has_errors(), "{}", s.text);
    registry::resolve(&checked.spec.apis[0], catalog()).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn executor(name: &str) -> Executor {
    let mut ex = Executor::new();
    assert_eq!(ex.load(&[binding(name)]), vec![None], "{name}");
    ex
}

fn f32s(shape: &[i64], seed: u64) -> TensorRecipe {
    TensorRecipe { dtype: DType::Float32, shape: shape.to_vec(), fill: Fill::Uniform { lo: -2.0, hi: 2.0 }, seed, layout: Layout::Contiguous, specials: vec![] }
}

fn first_output(ex: &mut Executor, case: &Case) -> tch::Tensor {
    let outcome = ex.run(case);
    assert!(matches!(outcome, Outcome::Returned { .. }), "{outcome:?}");
    ex.output_tensors().remove(0)
}

#[test]
fn in_place_operators_write_into_their_input() {
    let _rng = common::rng_lock();
    assert_eq!(binding("aten::abs_").qualified(), "aten::abs_");
    let mut ex = executor("torch.ops.aten.abs_");
    let x = f32s(&[3, 4], 7);
    let got = first_output(&mut ex, &Case { op: 0, args: vec![Arg::Tensor(x.clone())], forward: None });
    assert!(got.equal(&materialize(&x).unwrap().abs()));
}

#[test]
fn out_overloads_take_the_out_tensor_as_a_parameter() {
    let _rng = common::rng_lock();
    let b = binding("torch.ops.aten.add.out");
    assert_eq!(b.qualified(), "aten::add.out");
    let mut ex = executor("torch.ops.aten.add.out");
    let (x, y) = (f32s(&[2, 3], 1), f32s(&[2, 3], 2));
    // The out tensor comes in with the wrong shape: libtorch resizes it.
    let case = Case { op: 0, args: vec![Arg::Tensor(x.clone()), Arg::Tensor(y.clone()), Arg::Omitted, Arg::Tensor(f32s(&[5], 3))], forward: None };
    let got = first_output(&mut ex, &case);
    assert!(got.equal(&(materialize(&x).unwrap() + materialize(&y).unwrap())));
}

#[test]
fn tensor_lists_reach_the_operator() {
    let _rng = common::rng_lock();
    let mut ex = executor("torch.ops.aten.cat");
    let parts = vec![f32s(&[2, 3], 1), f32s(&[4, 3], 2), f32s(&[1, 3], 3)];
    let case = Case { op: 0, args: vec![Arg::TensorList(parts.clone()), Arg::Int(0)], forward: None };
    let Outcome::Returned { outputs, .. } = ex.run(&case) else { panic!() };
    let Output::Tensor(info) = &outputs[0] else { panic!("{outputs:?}") };
    assert_eq!(info.shape, [7, 3]);
    let want = tch::Tensor::cat(&parts.iter().map(|r| materialize(r).unwrap()).collect::<Vec<_>>(), 0);
    assert!(ex.output_tensors()[0].equal(&want));
}

#[test]
fn checks_of_a_mutating_operator_start_from_fresh_inputs() {
    let _rng = common::rng_lock();
    // neg_ twice gives back the input: a check that reused the mutated input would disagree.
    let mut ex = executor("aten::neg_");
    let tol = Tolerances::uniform(Tolerance { rtol: 1e-5, atol: 1e-6 });
    ex.set_checks(vec![vec![Check { oracle: sfz::wire::oracle::Oracle::Precision, variant: Variant::Promote, tolerances: tol, accuracy: Default::default() }]]);
    let case = Case { op: 0, args: vec![Arg::Tensor(f32s(&[4, 5], 11))], forward: None };
    let (outcome, reports) = ex.run_checked(&case, &mut |_| {});
    assert!(matches!(outcome, Outcome::Returned { .. }), "{outcome:?}");
    assert!(matches!(reports[0].outcome, CheckOutcome::Agree { .. }), "{:?}", reports[0].outcome);
}

#[test]
fn a_device_without_default_is_the_cpu() {
    let _rng = common::rng_lock();
    // aten::_resize_output(Tensor self, SymInt[] size, Device device): the skeleton leaves
    // `device` out and the worker passes the CPU.
    let s = skeleton::skeleton("aten::_resize_output", catalog()).unwrap();
    assert!(!s.text.contains("device:"), "{}", s.text);
    let mut ex = executor("aten::_resize_output");
    let case = Case { op: 0, args: vec![Arg::Tensor(f32s(&[2, 3], 5)), Arg::IntList(vec![4])], forward: None };
    // Its kernel took the arguments and called `_resize_output_`, which libtorch 2.13 has for
    // the Meta backend alone; a Device it could not read would be a schema error instead.
    match ex.run(&case) {
        Outcome::Returned { outputs, .. } => assert!(matches!(&outputs[0], Output::Tensor(t) if t.shape == [4]), "{outputs:?}"),
        Outcome::Raised { class, message, .. } => {
            assert_eq!(class, ErrorClass::NotImplemented, "{message}");
            assert!(message.contains("Could not run 'aten::_resize_output_'"), "{message}");
        }
    }
}
