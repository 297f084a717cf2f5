//! The in-process executor against real libtorch: the 20 starting APIs, resolved from the real
//! catalog through the real specs, give what tch computes directly; errors get the right class.
mod common;

use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;

use sfz::ops::binding::{ArgSource, OpBinding, Transform};
use sfz::ops::catalog::Catalog;
use sfz::ops::registry;
use sfz::wire::case::{Arg, Case, DType, Fill, Layout, Special, TensorRecipe};
use sfz::wire::outcome::{ErrorClass, Outcome, Output};
use sfz_worker::runtime::{self, materialize, Executor};
use tch::{Kind, Tensor};

/// Bindings of every API in specs/, by API name, resolved against this process's libtorch.
fn bindings() -> &'static HashMap<String, OpBinding> {
    static B: OnceLock<HashMap<String, OpBinding>> = OnceLock::new();
    B.get_or_init(|| {
        runtime::init(1);
        let catalog = Catalog::from_schemas(runtime::catalog_schemas());
        let checked = sfz::check::check_paths(&[Path::new(env!("CARGO_MANIFEST_DIR")).join("../specs")]);
        assert!(!checked.has_errors());
        checked.spec.apis.iter().map(|a| (a.name.clone(), registry::resolve(a, &catalog).unwrap_or_else(|e| panic!("{e}")))).collect()
    })
}

fn executor_for(api: &str) -> Executor {
    let mut ex = Executor::new();
    let errors = ex.load(&[bindings()[api].clone()]);
    assert_eq!(errors, vec![None]);
    ex
}

fn uniform(dtype: DType, shape: &[i64], lo: f64, hi: f64, seed: u64) -> TensorRecipe {
    TensorRecipe { dtype, shape: shape.to_vec(), fill: Fill::Uniform { lo, hi }, seed, layout: Layout::Contiguous, specials: vec![] }
}

fn ints(shape: &[i64], lo: i64, hi: i64, seed: u64) -> TensorRecipe {
    TensorRecipe { dtype: DType::Int64, shape: shape.to_vec(), fill: Fill::Int { lo, hi }, seed, layout: Layout::Contiguous, specials: vec![] }
}

fn f32s(shape: &[i64], seed: u64) -> TensorRecipe {
    uniform(DType::Float32, shape, -2.0, 2.0, seed)
}

fn mk(r: &TensorRecipe) -> Tensor {
    materialize(r).unwrap()
}

/// Runs `args` through the executor for `api` and checks the first output equals `expected`.
fn check(api: &str, args: Vec<Arg>, expected: impl FnOnce(&[Arg]) -> Tensor) {
    let mut ex = executor_for(api);
    let case = Case { op: 0, args, forward: None };
    let outcome = ex.run(&case);
    let Outcome::Returned { outputs, .. } = &outcome else { panic!("{api}: {outcome:?}") };
    let got = ex.output_tensors();
    let want = expected(&case.args);
    assert!(got[0].equal(&want), "{api}: got {} want {}", got[0], want);
    let Output::Tensor(info) = &outputs[0] else { panic!("{api}: {outputs:?}") };
    assert_eq!(info.shape, want.size(), "{api}");
    assert_eq!(info.dtype.map(runtime::kind), Some(want.kind()), "{api}");
}

fn tensor(a: &Arg) -> Tensor {
    match a {
        Arg::Tensor(r) => mk(r),
        other => panic!("not a tensor: {other:?}"),
    }
}

#[test]
fn twenty_ops_match_tch() {
    let _rng = common::rng_lock();
    let x = || Arg::Tensor(f32s(&[3, 4], 1));
    let pos = || Arg::Tensor(uniform(DType::Float32, &[3, 4], 0.5, 4.0, 2));
    check("torch.exp", vec![x()], |a| tensor(&a[0]).exp());
    check("torch.log", vec![pos()], |a| tensor(&a[0]).log());
    check("torch.sqrt", vec![pos()], |a| tensor(&a[0]).sqrt());
    check("torch.relu", vec![x()], |a| tensor(&a[0]).relu());
    check("torch.tanh", vec![x()], |a| tensor(&a[0]).tanh());
    check("torch.sum", vec![x(), Arg::IntList(vec![1]), Arg::Bool(true)], |a| tensor(&a[0]).sum_dim_intlist(&[1i64][..], true, None::<Kind>));
    check("torch.sum", vec![x(), Arg::None, Arg::Omitted], |a| tensor(&a[0]).sum_dim_intlist(None::<&[i64]>, false, None::<Kind>));
    check("torch.mean", vec![x(), Arg::IntList(vec![0, 1]), Arg::Bool(false)], |a| tensor(&a[0]).mean_dim(&[0i64, 1][..], false, None::<Kind>));
    check("torch.logsumexp", vec![x(), Arg::IntList(vec![-1]), Arg::Omitted], |a| tensor(&a[0]).logsumexp(&[-1i64][..], false));
    check("torch.cumsum", vec![x(), Arg::Int(1)], |a| tensor(&a[0]).cumsum(1, None::<Kind>));
    check("torch.matmul", vec![x(), Arg::Tensor(f32s(&[4, 2], 3))], |a| tensor(&a[0]).matmul(&tensor(&a[1])));
    check("torch.linalg.inv", vec![Arg::Tensor(uniform(DType::Float64, &[2, 3, 3], -1.0, 1.0, 4))], |a| Tensor::linalg_inv(&tensor(&a[0])));
    let conv = vec![
        Arg::Tensor(f32s(&[1, 2, 5, 5], 5)),
        Arg::Tensor(f32s(&[4, 2, 3, 3], 6)),
        Arg::Tensor(f32s(&[4], 7)),
        Arg::IntList(vec![2, 1]),
        Arg::Int(1),
        Arg::Omitted,
        Arg::Int(1),
    ];
    check("torch.nn.functional.conv2d", conv, |a| tensor(&a[0]).conv2d(&tensor(&a[1]), Some(tensor(&a[2])), [2, 1], [1, 1], [1, 1], 1));
    check("torch.nn.functional.softmax", vec![x(), Arg::Int(1), Arg::Dtype(DType::Float64)], |a| tensor(&a[0]).softmax(1, Kind::Double));
    let pool = vec![Arg::Tensor(f32s(&[1, 2, 6, 6], 8)), Arg::IntList(vec![2, 2]), Arg::None, Arg::Omitted, Arg::Omitted, Arg::Bool(true)];
    check("torch.nn.functional.max_pool2d", pool, |a| tensor(&a[0]).max_pool2d([2, 2], [2, 2], [0, 0], [1, 1], true));
    let emb = vec![Arg::Tensor(ints(&[2, 3], 0, 5, 9)), Arg::Tensor(f32s(&[5, 4], 10)), Arg::Int(-2)];
    check("torch.nn.functional.embedding", emb, |a| Tensor::embedding(&tensor(&a[1]), &tensor(&a[0]), 3, false, false));
    check("torch.reshape", vec![x(), Arg::IntList(vec![2, 6])], |a| tensor(&a[0]).reshape([2, 6]));
    check("torch.gather", vec![x(), Arg::Int(1), Arg::Tensor(ints(&[3, 2], 0, 4, 11))], |a| tensor(&a[0]).gather(1, &tensor(&a[2]), false));
    check("torch.index_select", vec![x(), Arg::Int(0), Arg::Tensor(ints(&[5], 0, 3, 12))], |a| tensor(&a[0]).index_select(0, &tensor(&a[2])));
    check("torch.transpose", vec![x(), Arg::Int(0), Arg::Int(-1)], |a| tensor(&a[0]).transpose(0, -1));
    let cat = vec![Arg::TensorList(vec![f32s(&[2, 3], 13), f32s(&[4, 3], 14)]), Arg::Omitted];
    check("torch.cat", cat, |a| match &a[0] {
        Arg::TensorList(rs) => Tensor::cat(&rs.iter().map(mk).collect::<Vec<_>>(), 0),
        _ => unreachable!(),
    });
}

#[test]
fn an_int_where_a_list_goes_is_broadcast_as_python_does() {
    let _rng = common::rng_lock();
    // conv2d's `padding: int[2]` given as the int 1 above; here `dim: int[1]` of logsumexp.
    let mut ex = executor_for("torch.logsumexp");
    let outcome = ex.run(&Case { op: 0, args: vec![Arg::Tensor(f32s(&[3, 4], 1)), Arg::Int(0), Arg::Bool(true)], forward: None });
    assert!(matches!(outcome, Outcome::Returned { .. }), "{outcome:?}");
    assert_eq!(ex.output_tensors()[0].size(), [1, 4]);
}

#[test]
fn invalid_arguments_are_c10_errors_and_mistyped_calls_are_schema_errors() {
    let _rng = common::rng_lock();
    let mut ex = executor_for("torch.matmul");
    let bad_shapes = ex.run(&Case { op: 0, args: vec![Arg::Tensor(f32s(&[2, 3], 1)), Arg::Tensor(f32s(&[4, 5], 2))], forward: None });
    let Outcome::Raised { class, message, .. } = &bad_shapes else { panic!("{bad_shapes:?}") };
    assert_eq!(*class, ErrorClass::C10, "{message}");
    assert!(message.contains("cannot be multiplied"), "{message}");
    assert!(!message.contains("Exception raised from"), "no backtrace: {message}");

    let mut ex = executor_for("torch.cumsum");
    let out_of_range = ex.run(&Case { op: 0, args: vec![Arg::Tensor(f32s(&[2, 3], 1)), Arg::Int(5)], forward: None });
    assert!(matches!(&out_of_range, Outcome::Raised { class: ErrorClass::Index, message, .. } if message.contains("Dimension out of range")), "{out_of_range:?}");

    for wrong in [Arg::Float(1.5), Arg::IntList(vec![1, 2]), Arg::Str("x".into()), Arg::Tensor(f32s(&[1], 3))] {
        let o = ex.run(&Case { op: 0, args: vec![Arg::Tensor(f32s(&[2, 3], 1)), wrong.clone()], forward: None });
        let Outcome::Raised { class, message, .. } = &o else { panic!("{wrong:?}: {o:?}") };
        assert_eq!(*class, ErrorClass::Schema, "{wrong:?}: {message}");
        assert!(!message.contains("INTERNAL ASSERT"), "{message}");
    }
    // A case that does not fit the binding never reaches libtorch.
    let o = ex.run(&Case { op: 0, args: vec![], forward: None });
    assert!(matches!(o, Outcome::Raised { class: ErrorClass::Schema, .. }), "{o:?}");
    let o = ex.run(&Case { op: 7, args: vec![], forward: None });
    assert!(matches!(o, Outcome::Raised { class: ErrorClass::Schema, .. }), "{o:?}");
}

fn test_op(name: &str, params: usize) -> OpBinding {
    OpBinding {
        name: format!("sfz_test::{name}"),
        overload: String::new(),
        args: (0..params).map(|index| ArgSource::Param { index, transform: Transform::Identity }).collect(),
        schema: String::new(),
        forward: None,
    }
}

#[test]
fn internal_asserts_come_back_as_c10_errors() {
    let _rng = common::rng_lock();
    runtime::init(1);
    let mut ex = Executor::new();
    assert_eq!(ex.load(&[test_op("internal_assert", 0)]), vec![None]);
    let o = ex.run(&Case { op: 0, args: vec![], forward: None });
    let Outcome::Raised { class, message, .. } = &o else { panic!("{o:?}") };
    assert_eq!(*class, ErrorClass::C10);
    assert!(message.contains("INTERNAL ASSERT FAILED") && message.contains("sfz_test::internal_assert was called"), "{message}");
}

#[test]
fn load_reports_unknown_operators_and_bad_bindings() {
    let _rng = common::rng_lock();
    runtime::init(1);
    let mut ex = Executor::new();
    let mut wrong_arity = bindings()["torch.exp"].clone();
    wrong_arity.args.push(ArgSource::Default);
    let mut stale = bindings()["torch.exp"].clone();
    stale.schema = "aten::exp(Tensor self, int extra) -> Tensor".into();
    let no_default = OpBinding { args: vec![ArgSource::Default], ..bindings()["torch.exp"].clone() };
    let errors = ex.load(&[test_op("nope", 0), wrong_arity, stale, no_default, bindings()["torch.exp"].clone()]);
    assert!(errors[0].as_deref().is_some_and(|e| e.contains("sfz_test::nope")), "{errors:?}");
    assert!(errors[1].as_deref().is_some_and(|e| e.contains("2 arguments")), "{errors:?}");
    assert!(errors[2].as_deref().is_some_and(|e| e.contains("resolved against")), "{errors:?}");
    assert!(errors[3].as_deref().is_some_and(|e| e.contains("no default")), "{errors:?}");
    assert_eq!(errors[4], None);
    let o = ex.run(&Case { op: 0, args: vec![], forward: None });
    assert!(matches!(&o, Outcome::Raised { class: ErrorClass::Schema, message, .. } if message.contains("did not load")), "{o:?}");
}

#[test]
fn output_statistics_count_nan_and_inf_and_the_finite_range() {
    let _rng = common::rng_lock();
    let mut ex = executor_for("torch.relu");
    let mut r = uniform(DType::Float32, &[10], 1.0, 2.0, 5);
    r.specials = vec![(0, Special::Nan), (3, Special::PosInf), (4, Special::NegInf), (5, Special::Value(7.5)), (6, Special::Value(-3.0))];
    let o = ex.run(&Case { op: 0, args: vec![Arg::Tensor(r.clone())], forward: None });
    let Outcome::Returned { outputs, .. } = &o else { panic!("{o:?}") };
    let Output::Tensor(info) = &outputs[0] else { panic!("{outputs:?}") };
    // relu: NaN stays NaN, +inf stays, -inf and -3 become 0.
    assert_eq!((info.nan, info.inf), (1, 1));
    assert_eq!(info.min, Some(0.0));
    assert_eq!(info.max, Some(7.5));
    assert_eq!(info.dtype, Some(DType::Float32));

    // Complex: an element is NaN or inf when either part is; min/max range over both parts.
    let mut ex = executor_for("torch.tanh");
    let c = TensorRecipe { dtype: DType::Complex64, shape: vec![2, 2], fill: Fill::Constant(0.5), seed: 0, layout: Layout::Contiguous, specials: vec![(1, Special::Nan)] };
    let o = ex.run(&Case { op: 0, args: vec![Arg::Tensor(c)], forward: None });
    let Outcome::Returned { outputs, .. } = &o else { panic!("{o:?}") };
    let Output::Tensor(info) = &outputs[0] else { panic!("{outputs:?}") };
    assert_eq!(info.nan, 1);
    assert_eq!(info.dtype, Some(DType::Complex64));
    assert!(info.min == Some(0.0) && info.max.is_some_and(|m| (m - 0.5f64.tanh()).abs() < 1e-6), "{info:?}");

    // Integers: no NaN, exact range.
    let mut ex = executor_for("torch.cumsum");
    let o = ex.run(&Case { op: 0, args: vec![Arg::Tensor(TensorRecipe { fill: Fill::Constant(2.0), ..ints(&[4], 0, 1, 0) }), Arg::Int(0)], forward: None });
    let Outcome::Returned { outputs, .. } = &o else { panic!("{o:?}") };
    assert!(matches!(&outputs[0], Output::Tensor(t) if t.min == Some(2.0) && t.max == Some(8.0) && t.dtype == Some(DType::Int64)), "{outputs:?}");
}

#[test]
fn embedding_padding_idx_is_checked_as_python_checks_it() {
    let _rng = common::rng_lock();
    let mut ex = executor_for("torch.nn.functional.embedding");
    let args = |p: Arg| vec![Arg::Tensor(ints(&[3], 0, 4, 1)), Arg::Tensor(f32s(&[4, 2], 2)), p];
    for ok in [Arg::None, Arg::Omitted, Arg::Int(3), Arg::Int(-4), Arg::Int(0)] {
        let o = ex.run(&Case { op: 0, args: args(ok.clone()), forward: None });
        assert!(matches!(o, Outcome::Returned { .. }), "{ok:?}: {o:?}");
    }
    for bad in [Arg::Int(4), Arg::Int(-5)] {
        let o = ex.run(&Case { op: 0, args: args(bad.clone()), forward: None });
        assert!(matches!(&o, Outcome::Raised { class: ErrorClass::Value, message, .. } if message.contains("Padding_idx")), "{bad:?}: {o:?}");
    }
}

#[test]
fn recipes_build_the_documented_tensors() {
    let _rng = common::rng_lock();
    runtime::init(1);
    // Uniform: manual_seed, float64 uniform_, cast.
    let r = uniform(DType::Float16, &[2, 3], -1.0, 1.0, 77);
    tch::manual_seed(77);
    let mut want = Tensor::empty([2, 3], (Kind::Double, tch::Device::Cpu));
    let _ = want.uniform_(-1.0, 1.0);
    assert!(mk(&r).equal(&want.to_kind(Kind::Half)));
    // Layouts keep the values and change the strides.
    for layout in [Layout::Transposed, Layout::Strided] {
        let t = mk(&TensorRecipe { layout, ..r.clone() });
        assert!(!t.is_contiguous(), "{layout:?}");
        assert!(t.equal(&mk(&r)), "{layout:?}");
    }
    // Below the dimensions a layout needs, it is a no-op.
    let scalar = TensorRecipe { shape: vec![], layout: Layout::Strided, ..r.clone() };
    assert!(mk(&scalar).is_contiguous());
    // Specials index modulo numel, after the cast.
    let s = TensorRecipe { specials: vec![(7, Special::NegZero), (0, Special::PosInf)], ..r.clone() };
    let v = Vec::<f32>::try_from(mk(&s).to_kind(Kind::Float).reshape([-1])).unwrap();
    assert!(v[1] == 0.0 && v[1].is_sign_negative(), "{v:?}");
    assert_eq!(v[0], f32::INFINITY);
    // Complex draws both parts.
    let c = mk(&uniform(DType::Complex64, &[4], 0.0, 1.0, 3));
    assert!(Vec::<f32>::try_from(c.imag().reshape([-1])).unwrap().iter().all(|&x| x > 0.0));
    // Bad recipes are errors, not panics.
    assert!(materialize(&uniform(DType::Float32, &[-1], 0.0, 1.0, 0)).is_err());
    assert!(materialize(&uniform(DType::Float32, &[2], 1.0, 0.0, 0)).is_err());
    assert!(materialize(&TensorRecipe { fill: Fill::Constant(1.0), ..ints(&[-2], 0, 3, 0) }).is_err());
    // A NaN written into an integer tensor is converted without a check, as Python does too.
    assert!(materialize(&TensorRecipe { specials: vec![(0, Special::Nan)], ..ints(&[2], 0, 3, 0) }).is_ok());
}
