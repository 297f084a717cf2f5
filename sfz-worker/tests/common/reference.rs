//! The precision check's executor, as the reference test files build it.
use std::path::Path;

use sfz::ops::catalog::Catalog;
use sfz::ops::registry;
use sfz::wire::case::{Case, DType, Fill, Layout, TensorRecipe};
use sfz::wire::variant::{Accuracy, Check, CheckOutcome, Tolerance, Tolerances, Variant};
use sfz_worker::runtime::{self, Executor};

pub fn catalog() -> &'static Catalog {
    static C: std::sync::OnceLock<Catalog> = std::sync::OnceLock::new();
    C.get_or_init(|| {
        runtime::init(1);
        Catalog::from_schemas(runtime::catalog_schemas())
    })
}

/// An executor for `api` (declared as `decl`) whose one check is the float64 reference.
pub fn executor(decl: &str, accuracy: Accuracy) -> Executor {
    let tolerances = Tolerances::uniform(Tolerance { rtol: 1e-5, atol: 1e-5 });
    executor_checking(decl, Check { oracle: sfz::wire::oracle::Oracle::Precision, variant: Variant::Promote, tolerances, accuracy })
}

pub fn executor_checking(decl: &str, check: Check) -> Executor {
    let checked = sfz::check::check_text(Path::new("t.sfz"), decl);
    assert!(!checked.has_errors(), "{decl}");
    let binding = registry::resolve(&checked.spec.apis[0], catalog()).unwrap();
    let mut ex = Executor::new();
    assert_eq!(ex.load(&[binding]), vec![None]);
    ex.set_checks(vec![vec![check]]);
    ex
}

pub fn f32s(shape: &[i64], lo: f64, hi: f64, seed: u64) -> TensorRecipe {
    TensorRecipe { dtype: DType::Float32, shape: shape.to_vec(), fill: Fill::Uniform { lo, hi }, seed, layout: Layout::Contiguous, specials: vec![] }
}

pub fn verdict(ex: &mut Executor, case: &Case) -> CheckOutcome {
    let (_, reports) = ex.run_checked(case, &mut |_| {});
    reports[0].outcome.clone()
}
