//! The gradient oracle against real libtorch: reverse mode against forward mode and against
//! finite differences, in float64. Wrong derivatives are found; kinks, oscillations too fast
//! for any step, infinite inputs, outputs autograd does not differentiate and surrogate
//! gradients are not.
mod common;

use std::path::Path;

use sfz::ops::catalog::Catalog;
use sfz::ops::registry;
use sfz::wire::case::{Arg, Case, DType, Fill, Layout, Special, TensorRecipe};
use sfz::wire::oracle::Oracle;
use sfz::wire::variant::{Accuracy, Check, CheckOutcome, GradientKind, Tolerance, Tolerances, Variant};
use sfz_worker::runtime::{self, Executor};

fn catalog() -> &'static Catalog {
    static C: std::sync::OnceLock<Catalog> = std::sync::OnceLock::new();
    C.get_or_init(|| {
        runtime::init(1);
        Catalog::from_schemas(runtime::catalog_schemas())
    })
}

/// An executor for the API `decl` declares whose one check is `gradient` at its defaults.
fn executor(decl: &str) -> Executor {
    let checked = sfz::check::check_text(Path::new("t.sfz"), decl);
    assert!(!checked.has_errors(), "{decl}: {:?}", checked.diags);
    let binding = registry::resolve(&checked.spec.apis[0], catalog()).unwrap();
    let mut ex = Executor::new();
    assert_eq!(ex.load(&[binding]), vec![None]);
    let check = Check {
        oracle: Oracle::Gradient,
        variant: Variant::Gradient { eps: 1e-6, samples: 4 },
        tolerances: Tolerances::uniform(Tolerance { rtol: 1e-3, atol: 1e-5 }),
        accuracy: Accuracy::Backward,
    };
    ex.set_checks(vec![vec![check]]);
    ex
}

fn tensor(dtype: DType, shape: &[i64], fill: Fill, seed: u64) -> TensorRecipe {
    TensorRecipe { dtype, shape: shape.to_vec(), fill, seed, layout: Layout::Contiguous, specials: vec![] }
}

fn uniform(dtype: DType, shape: &[i64], lo: f64, hi: f64, seed: u64) -> Arg {
    Arg::Tensor(tensor(dtype, shape, Fill::Uniform { lo, hi }, seed))
}

fn verdict(ex: &mut Executor, args: Vec<Arg>) -> CheckOutcome {
    let case = Case { op: 0, args, forward: None };
    let (_, reports) = ex.run_checked(&case, &mut |_| {});
    reports[0].outcome.clone()
}

fn is_finding(o: &CheckOutcome) -> bool {
    matches!(o, CheckOutcome::Gradient(_) | CheckOutcome::Raised { .. })
}

#[test]
fn correct_derivatives_agree() {
    let _rng = common::rng_lock();
    let mut sin = executor("api torch.sin(input: Tensor) -> Tensor {}");
    assert!(matches!(verdict(&mut sin, vec![uniform(DType::Float32, &[5], -3.0, 3.0, 1)]), CheckOutcome::Agree { .. }));
    // An in-place operator differentiates through copies of its inputs.
    let mut sin_ = executor("api torch.sin_(input: Tensor) -> Tensor {}");
    let got = verdict(&mut sin_, vec![uniform(DType::Float64, &[5], -3.0, 3.0, 11)]);
    assert!(matches!(got, CheckOutcome::Agree { .. }), "{got:?}");
    let mut mm = executor("api torch.matmul(input: Tensor, other: Tensor) -> Tensor {}");
    let got = verdict(&mut mm, vec![uniform(DType::Float64, &[3, 4], -2.0, 2.0, 2), uniform(DType::Float64, &[4, 2], -2.0, 2.0, 3)]);
    assert!(matches!(got, CheckOutcome::Agree { .. }), "{got:?}");
    // Its mean and rstd outputs do not require grad: only the normalized output is weighed,
    // or finite differences would see a change backward is not asked about.
    let mut ln = executor("api torch.native_layer_norm(input: Tensor, normalized_shape: int[], weight: Tensor?, bias: Tensor?, eps: float) -> (Tensor, Tensor, Tensor) {}");
    let got = verdict(&mut ln, vec![uniform(DType::Float64, &[2, 5], -2.0, 2.0, 4), Arg::IntList(vec![5]), Arg::None, Arg::None, Arg::Float(1e-5)]);
    assert!(matches!(got, CheckOutcome::Agree { .. }), "{got:?}");
}

#[test]
fn a_wrong_backward_is_found_against_finite_differences() {
    let _rng = common::rng_lock();
    let mut ex = executor("#[aten(\"sfz_test::buggy\")]\napi sfz_test.buggy(input: Tensor, bug: int) -> Tensor {}");
    let x = || uniform(DType::Float32, &[4], 0.5, 2.0, 5);
    assert!(matches!(verdict(&mut ex, vec![x(), Arg::Int(0)]), CheckOutcome::Agree { .. }));
    // Backward says 3x where the derivative of x * x is 2x.
    match verdict(&mut ex, vec![x(), Arg::Int(6)]) {
        CheckOutcome::Gradient(g) => {
            assert_eq!(g.kind, GradientKind::Numeric, "{g:?}");
            assert!((g.analytic / g.numeric - 1.5).abs() < 1e-3, "{g:?}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_nan_gradient_where_the_function_is_smooth_is_found() {
    let _rng = common::rng_lock();
    let mut ex = executor("#[aten(\"sfz_test::buggy\")]\napi sfz_test.buggy(input: Tensor, bug: int) -> Tensor {}");
    let ones = Arg::Tensor(tensor(DType::Float32, &[3], Fill::Constant(1.0), 6));
    match verdict(&mut ex, vec![ones, Arg::Int(10)]) {
        CheckOutcome::Gradient(g) => {
            assert_eq!(g.kind, GradientKind::NonFinite, "{g:?}");
            assert!(g.analytic.is_nan(), "{g:?}");
            // d/dx of w * x * x at 1 is 2w, w in [0.5, 1.5).
            assert!((1.0..3.0).contains(&g.numeric), "{g:?}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn reverse_and_forward_mode_disagreeing_is_found() {
    let _rng = common::rng_lock();
    // torch 2.13: the backward of an antialiased bilinear resize from 5x3 to 3x1 differs from
    // its forward mode, and finite differences side with forward mode.
    let mut ex = executor(
        "#[aten(\"aten::_upsample_bilinear2d_aa\")]\napi torch._upsample_bilinear2d_aa(input: Tensor, output_size: int[], align_corners: bool, scales_h: float?, scales_w: float?) -> Tensor {}",
    );
    let got = verdict(&mut ex, vec![uniform(DType::Float64, &[1, 1, 5, 3], -10.0, 10.0, 7), Arg::IntList(vec![3, 1]), Arg::Bool(false), Arg::None, Arg::None]);
    match got {
        CheckOutcome::Gradient(g) => {
            assert_eq!(g.kind, GradientKind::Forward, "{g:?}");
            let fd = g.differences.expect("finite differences");
            assert!((fd - g.numeric).abs() <= 1e-6 * fd.abs().max(1.0) && (fd - g.analytic).abs() > 1e-3 * fd.abs(), "{g:?}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn kinks_fast_oscillations_infinite_inputs_and_surrogates_are_not_findings() {
    let _rng = common::rng_lock();
    let zeros = || Arg::Tensor(tensor(DType::Float32, &[4], Fill::Constant(0.0), 8));
    // relu and abs at 0: libtorch's subgradient there is documented.
    for decl in ["api torch.relu(input: Tensor) -> Tensor {}", "api torch.abs(input: Tensor) -> Tensor {}", "api torch.sqrt(input: Tensor) -> Tensor {}"] {
        let got = verdict(&mut executor(decl), vec![zeros()]);
        assert!(!is_finding(&got), "{decl}: {got:?}");
    }
    // sin at 1e17 (float32) and 1e44 (float64): any step float64 can take spans many periods;
    // at 1e5 to 1e6 a relative step spans a large part of one.
    let mut sin = executor("api torch.sin(input: Tensor) -> Tensor {}");
    for (dtype, lo, hi) in [(DType::Float32, 1e16, 1e17), (DType::Float64, 1e43, 1e44), (DType::Float64, 1e5, 1e6)] {
        for seed in 0..40 {
            let got = verdict(&mut sin, vec![uniform(dtype, &[2], lo, hi, seed)]);
            assert!(!is_finding(&got), "{dtype} {seed}: {got:?}");
        }
    }
    // atan2(-inf, 0) is finite, its gradient a limit no formula is held to.
    let mut atan2 = executor("api torch.atan2(input: Tensor, other: Tensor) -> Tensor {}");
    let mut y = tensor(DType::Float32, &[1], Fill::Constant(0.0), 9);
    y.specials = vec![(0, Special::NegInf)];
    let got = verdict(&mut atan2, vec![Arg::Tensor(y), zeros()]);
    assert!(matches!(&got, CheckOutcome::Skipped(why) if why.contains("infinite")), "{got:?}");
    // fake_quantize's straight-through gradient is 1 where the function is flat.
    let mut fq = executor("api torch.fake_quantize_per_tensor_affine(input: Tensor, scale: float, zero_point: int, quant_min: int, quant_max: int) -> Tensor {}");
    let got = verdict(&mut fq, vec![uniform(DType::Float32, &[6], -3.0, 3.0, 10), Arg::Float(0.5), Arg::Int(0), Arg::Int(-128), Arg::Int(127)]);
    assert!(!is_finding(&got), "{got:?}");
}

/// QR's gradient is documented only where the leading min(m, n) columns have full rank: a
/// 1×2 matrix whose first column is 0 (c41s: `randint(-8, 1)` entries) is not judged; a
/// full-rank one is, and agrees.
#[test]
fn qrs_gradient_is_not_judged_where_it_is_documented_wrong() {
    let _rng = common::rng_lock();
    let mut qr = executor("api torch.linalg.qr(A: Tensor, mode: str = \"reduced\") -> (Q: Tensor, R: Tensor) {}");
    let mut a = tensor(DType::Float64, &[3, 1, 2], Fill::Uniform { lo: -8.0, hi: -1.0 }, 4);
    a.specials = vec![(2, Special::Value(0.0))];
    let got = verdict(&mut qr, vec![Arg::Tensor(a), Arg::Str("complete".into())]);
    assert!(matches!(&got, CheckOutcome::Skipped(why) if why.contains("full rank")), "{got:?}");
    let got = verdict(&mut qr, vec![uniform(DType::Float64, &[3, 2, 2], -8.0, -1.0, 5), Arg::Str("complete".into())]);
    assert!(!is_finding(&got) && !matches!(&got, CheckOutcome::Skipped(why) if why.contains("full rank")), "{got:?}");
}

#[test]
fn a_derivative_computed_in_an_integer_dtype_is_found() {
    let _rng = common::rng_lock();
    // torch 2.13: atan2's backward for `other` negates an integer `input` in its own dtype, so
    // uint8 y = 3 turns into 253 (the derivative -y / (x² + y²) gets the wrong sign and size).
    let mut ex = executor("api torch.atan2(input: Tensor, other: Tensor) -> Tensor {}");
    let y = Arg::Tensor(tensor(DType::UInt8, &[1, 2], Fill::Int { lo: 1, hi: 8 }, 12));
    match verdict(&mut ex, vec![y, uniform(DType::Float64, &[3, 1], 1.0, 5.0, 13)]) {
        CheckOutcome::Gradient(g) => assert!(matches!(g.kind, GradientKind::Numeric | GradientKind::Forward), "{g:?}"),
        other => panic!("{other:?}"),
    }
}

/// Where two inputs tie, a derivative is a convention: nextafter's gradient is 0 at
/// `self == other` (libtorch masks it there), though the function is the identity around it.
/// The tied elements are not judged; the one that does not tie still is, and agrees.
#[test]
fn a_tie_between_inputs_is_not_judged() {
    let _rng = common::rng_lock();
    let mut ex = executor("api torch.nextafter(input: Tensor, other: Tensor) -> Tensor {}");
    let mut x = tensor(DType::Float32, &[4], Fill::Constant(2.0), 1);
    x.specials = vec![(0, Special::Value(-3.0))];
    let other = Arg::Tensor(tensor(DType::Int8, &[4], Fill::Constant(2.0), 2));
    let got = verdict(&mut ex, vec![Arg::Tensor(x.clone()), other]);
    assert!(matches!(got, CheckOutcome::Agree { .. }), "{got:?}");
    // The leaf broadcast against a larger `other`: its element ties where any output it
    // reaches does.
    let other = Arg::Tensor(tensor(DType::Int8, &[3, 4], Fill::Constant(2.0), 2));
    let got = verdict(&mut ex, vec![Arg::Tensor(x), other]);
    assert!(matches!(got, CheckOutcome::Agree { .. }), "{got:?}");
    // Reverse and forward mode may choose apart at a tie, and a tangent moves every element:
    // a strided bfloat16 `clip_` input of which one element equals its int32 `max` (c36s).
    let mut clip = executor("api torch.clip_(input: Tensor, min: Tensor? = None, max: Tensor? = None) -> Tensor {}");
    let x = TensorRecipe { layout: Layout::Strided, ..tensor(DType::BFloat16, &[3, 3, 5, 7], Fill::Uniform { lo: -10.0, hi: 10.0 }, 85559129129903) };
    let max = tensor(DType::Int32, &[3, 3, 1, 1], Fill::Int { lo: -10, hi: 11 }, 8289687905342278);
    let got = verdict(&mut clip, vec![Arg::Tensor(x), Arg::None, Arg::Tensor(max)]);
    assert!(!is_finding(&got), "{got:?}");
}

/// Double backward where it is right: smooth activations, a normalization, a special function.
/// The second derivative `t·H·u` runs on one case in four whose first order agrees, and a wrong
/// sign or a missing term in sfz's own arithmetic would show here as a finding.
#[test]
fn right_second_derivatives_agree() {
    let _rng = common::rng_lock();
    for decl in [
        "api torch.tanh(input: Tensor) -> Tensor {}",
        "api torch.nn.functional.silu(input: Tensor) -> Tensor {}",
        "api torch.log_softmax(input: Tensor, dim: int) -> Tensor {}",
        "api torch.special.i1(input: Tensor) -> Tensor {}",
    ] {
        let mut ex = executor(decl);
        for seed in 0..12 {
            let mut args = vec![uniform(DType::Float64, &[3, 4], -3.0, 3.0, seed)];
            if decl.contains("dim") {
                args.push(Arg::Int(1));
            }
            let got = verdict(&mut ex, args);
            assert!(matches!(got, CheckOutcome::Agree { .. }), "{decl} {seed}: {got:?}");
        }
    }
}

/// Where an element ties with another input (atan2 at the origin, c43s: double backward NaN,
/// differences of the gradient finite) the first derivative is a convention and the second none:
/// second order is not judged there.
#[test]
fn no_second_derivative_is_judged_where_the_gradient_is_not_finite() {
    let _rng = common::rng_lock();
    let mut ex = executor("api torch.atan2(input: Tensor, other: Tensor) -> Tensor {}");
    for seed in 0..16 {
        let mut y = tensor(DType::Float64, &[4], Fill::Constant(0.0), seed);
        y.specials = vec![(1, Special::Value(1.0)), (2, Special::Value(2.0)), (3, Special::Value(-3.0))];
        let mut x = tensor(DType::Int8, &[4], Fill::Constant(2.0), seed + 100);
        x.specials = vec![(0, Special::Value(0.0))];
        let got = verdict(&mut ex, vec![Arg::Tensor(y), Arg::Tensor(x)]);
        assert!(!matches!(&got, CheckOutcome::Gradient(g) if g.kind == GradientKind::Second), "{seed}: {got:?}");
    }
}

/// The gradient through a transposed, strided or offset input is compared with the gradient
/// through contiguous copies of the same values: correct backward kernels agree in every
/// layout, for the relaid input and for the others (a normalization's weight and bias).
#[test]
fn gradients_through_non_contiguous_inputs_agree_with_contiguous_ones() {
    let _rng = common::rng_lock();
    let mut mm = executor("api torch.matmul(input: Tensor, other: Tensor) -> Tensor {}");
    let mut gn = executor("api torch.nn.functional.group_norm(input: Tensor, num_groups: int, weight: Tensor?, bias: Tensor?, eps: float) -> Tensor {}");
    let mut cs = executor("api torch.cumsum(input: Tensor, dim: int) -> Tensor {}");
    for (k, layout) in [Layout::Transposed, Layout::Strided, Layout::Sliced].into_iter().enumerate() {
        let relaid = |shape: &[i64], seed| Arg::Tensor(TensorRecipe { layout, ..tensor(DType::Float32, shape, Fill::Uniform { lo: -2.0, hi: 2.0 }, seed) });
        let seed = 10 * k as u64;
        let got = verdict(&mut mm, vec![relaid(&[3, 4], seed + 1), uniform(DType::Float32, &[4, 2], -2.0, 2.0, seed + 2)]);
        assert!(matches!(got, CheckOutcome::Agree { .. }), "matmul, {layout:?}: {got:?}");
        let got = verdict(&mut gn, vec![relaid(&[2, 4, 5], seed + 3), Arg::Int(2), relaid(&[4], seed + 4), uniform(DType::Float32, &[4], -1.0, 1.0, seed + 5), Arg::Float(1e-5)]);
        assert!(!is_finding(&got), "group_norm, {layout:?}: {got:?}");
        let got = verdict(&mut cs, vec![relaid(&[3, 5], seed + 6), Arg::Int(1)]);
        assert!(matches!(got, CheckOutcome::Agree { .. }), "cumsum, {layout:?}: {got:?}");
    }
}

/// An executor for `decl`'s API with the gradient check, whose in-place twin (for the `inplace`
/// check, and the gradient through it) is `twin`'s API writing into argument `arg`.
fn with_twin(decl: &str, twin: &str, arg: usize) -> Executor {
    let resolve = |d: &str| {
        let checked = sfz::check::check_text(Path::new("t.sfz"), d);
        assert!(!checked.has_errors(), "{d}: {:?}", checked.diags);
        registry::resolve(&checked.spec.apis[0], catalog()).unwrap()
    };
    let mut ex = Executor::new();
    assert_eq!(ex.load(&[resolve(decl), resolve(twin)]), vec![None, None]);
    let tolerances = Tolerances::uniform(Tolerance { rtol: 1e-3, atol: 1e-5 });
    let gradient = Check { oracle: Oracle::Gradient, variant: Variant::Gradient { eps: 1e-6, samples: 4 }, tolerances, accuracy: Accuracy::Backward };
    let in_place = Check { oracle: Oracle::Inplace, variant: Variant::InPlace { op: 1, arg }, tolerances, accuracy: Accuracy::Backward };
    ex.set_checks(vec![vec![gradient, in_place], vec![]]);
    ex
}

/// The gradient through an in-place twin agrees with the out-of-place one for correct pairs;
/// a twin with the same values and another derivative is found: `clamp_min_` gives a tie's
/// gradient wholly to its input where `maximum` splits it (forward mode and finite differences
/// skip ties, so only the twin's gradient tells them apart).
#[test]
fn the_in_place_twins_gradient_agrees_with_the_out_of_place_one() {
    let _rng = common::rng_lock();
    let mut sigmoid = with_twin("api torch.sigmoid(input: Tensor) -> Tensor {}", "api torch.sigmoid_(input: Tensor) -> Tensor {}", 0);
    let got = verdict(&mut sigmoid, vec![uniform(DType::Float32, &[3, 4], -3.0, 3.0, 1)]);
    assert!(matches!(got, CheckOutcome::Agree { .. }), "{got:?}");
    let lerp = "api torch.lerp(input: Tensor, end: Tensor, weight: Tensor) -> Tensor {}";
    let mut ex = with_twin(lerp, "api torch.lerp_(input: Tensor, end: Tensor, weight: Tensor) -> Tensor {}", 0);
    let got = verdict(&mut ex, vec![uniform(DType::Float64, &[5], -2.0, 2.0, 2), uniform(DType::Float64, &[5], -2.0, 2.0, 3), uniform(DType::Float64, &[5], 0.0, 1.0, 4)]);
    assert!(matches!(got, CheckOutcome::Agree { .. }), "{got:?}");

    let mut ex = with_twin("api torch.maximum(input: Tensor, other: Tensor) -> Tensor {}", "api torch.clamp_min_(input: Tensor, min: Tensor) -> Tensor {}", 0);
    let x = tensor(DType::Float64, &[4], Fill::Constant(1.0), 5);
    let got = verdict(&mut ex, vec![Arg::Tensor(x.clone()), Arg::Tensor(x)]);
    assert!(matches!(&got, CheckOutcome::Gradient(g) if g.kind == GradientKind::InPlace && (g.analytic - 2.0 * g.numeric).abs() < 1e-9), "{got:?}");
}
