//! The precision oracle against real libtorch: an operator that promises only backward
//! stability is not blamed for what its input's conditioning explains, and premature
//! overflows of its intermediates stay findings.
mod common;
use common::reference::{catalog, executor, executor_checking, f32s, verdict};

use std::path::Path;

use sfz::ops::registry;
use sfz::wire::case::{Arg, Case, DType, Fill, Layout, Special, TensorRecipe};
use sfz::wire::variant::{Accuracy, Check, CheckOutcome, Tolerance, Tolerances, Variant};
use sfz_worker::runtime::{self, Executor};

/// An executor whose one check is the first relation of the API `decl` declares.
fn checking_relation(decl: &str, accuracy: Accuracy) -> Executor {
    let checked = sfz::check::check_text(Path::new("t.sfz"), decl);
    let relation = checked.spec.apis[0].relations[0].relation.clone();
    let tolerances = relation.tolerances;
    executor_checking(decl, Check { oracle: sfz::wire::oracle::Oracle::Relation, variant: Variant::Relation(Box::new(relation)), tolerances, accuracy })
}

/// An executor whose one check asks the float64 reference about non-finite results.
fn asking_where_defined(decl: &str) -> Executor {
    executor_checking(
        decl,
        Check { oracle: sfz::wire::oracle::Oracle::NanInf, variant: Variant::Defined, tolerances: Tolerances::uniform(Tolerance::EXACT), accuracy: Accuracy::Backward },
    )
}

#[test]
fn a_nan_the_float64_reference_holds_too_is_the_functions_own() {
    let _rng = common::rng_lock();
    let mut ex = asking_where_defined("api torch.div(input: Tensor, other: Tensor) -> Tensor {}");
    for dtype in [DType::Float32, DType::Int64, DType::Bool] {
        // 0 / 0 is NaN in every precision (int64 and bool divide in float32, their reference in
        // float64).
        let zeros = TensorRecipe { dtype, shape: vec![3], fill: Fill::Constant(0.0), seed: 1, layout: Layout::Contiguous, specials: vec![] };
        let case = Case { op: 0, args: vec![Arg::Tensor(zeros.clone()), Arg::Tensor(zeros)], forward: None };
        assert!(matches!(verdict(&mut ex, &case), CheckOutcome::Agree { .. }), "{dtype}");
    }

    let mut ex = asking_where_defined("api torch.sinc(input: Tensor) -> Tensor {}");
    // float32 sinc(2e38) is NaN (pi * x overflows) where the true value is about 1.5e-39.
    let case = Case { op: 0, args: vec![Arg::Tensor(f32s(&[4], 2e38, 3e38, 1))], forward: None };
    assert!(matches!(verdict(&mut ex, &case), CheckOutcome::Values(_)), "{:?}", verdict(&mut ex, &case));
    // An `eps` bfloat16 cannot hold is 0 there: 0 / 0 of zero vectors, explained by the argument.
    let mut cos = asking_where_defined("api torch.cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor {}");
    let zeros = Arg::Tensor(TensorRecipe { dtype: DType::BFloat16, shape: vec![1, 2], fill: Fill::Constant(0.0), seed: 1, layout: Layout::Contiguous, specials: vec![] });
    let tiny_eps = Case { op: 0, args: vec![zeros.clone(), zeros, Arg::Int(1), Arg::Float(1e-300)], forward: None };
    assert!(matches!(verdict(&mut cos, &tiny_eps), CheckOutcome::Agree { .. }), "{:?}", verdict(&mut cos, &tiny_eps));
    // Finite outputs: nothing to ask.
    let ordinary = Case { op: 0, args: vec![Arg::Tensor(f32s(&[4], -3.0, 3.0, 1))], forward: None };
    assert!(matches!(verdict(&mut ex, &ordinary), CheckOutcome::Skipped(_)));
}

#[test]
fn an_ill_conditioned_determinant_is_not_a_finding() {
    let _rng = common::rng_lock();
    let mut backward = executor("api torch.logdet(input: Tensor) -> Tensor {}", Accuracy::Backward);
    // 3x3 matrices of nearly equal entries are nearly singular: float32 LU loses digits that
    // moving the entries by one rounding loses too.
    let mut differed = 0;
    for seed in 0..40 {
        let recipe = f32s(&[8, 3, 3], -90.5, -86.0, seed);
        let input = runtime::materialize(&recipe).unwrap();
        let (low, wide) = (input.logdet(), input.to_kind(tch::Kind::Double).logdet());
        let apart = (low.to_kind(tch::Kind::Double) - &wide).abs().gt_tensor(&(wide.abs() * 1e-5 + 1e-5));
        if apart.any().int64_value(&[]) != 0 {
            differed += 1;
            let case = Case { op: 0, args: vec![Arg::Tensor(recipe)], forward: None };
            let b = verdict(&mut backward, &case);
            assert!(matches!(b, CheckOutcome::Agree { .. }), "seed {seed}: {b:?}");
        }
    }
    assert!(differed > 0, "no case differed from the float64 reference beyond 1e-5");
}

/// A matrix whose rows are all equal is exactly singular: its determinant's sign is 0 to one
/// LU and -1 or 1 to another, as rounding falls. Four probes may all keep the reference's sign
/// (one time in sixteen); where the log of the magnitude already shows the input ill-posed,
/// more probes do not.
#[test]
fn the_sign_of_a_singular_matrixs_determinant_is_not_judged() {
    let _rng = common::rng_lock();
    let mut backward = executor("api torch.linalg.slogdet(A: Tensor) -> (sign: Tensor, logabsdet: Tensor) {}", Accuracy::Backward);
    let mut differed = 0;
    // Which size rounds to another sign depends on the CPU's LU kernels (5 on one machine, 2 on
    // another): both are tried.
    for (n, seed) in [2, 5].into_iter().flat_map(|n| (0..48).map(move |seed| (n, seed))) {
        let recipe = TensorRecipe { layout: Layout::Expanded, ..f32s(&[n, n], 0.0, 20.0, seed) };
        let input = runtime::materialize(&recipe).unwrap();
        let (low, wide) = (input.slogdet().0, input.to_kind(tch::Kind::Double).slogdet().0);
        if low.to_kind(tch::Kind::Double).not_equal_tensor(&wide).any().int64_value(&[]) != 0 {
            differed += 1;
            let case = Case { op: 0, args: vec![Arg::Tensor(recipe)], forward: None };
            let b = verdict(&mut backward, &case);
            assert!(!matches!(b, CheckOutcome::Values(_)), "seed {seed}: {b:?}");
        }
    }
    assert!(differed > 0, "no sign differed from the float64 reference's");
}

/// A polynomial's recurrence follows its solution to the size of the result: a shifted
/// Chebyshev polynomial of degree 255 just outside its interval is 8e11 in float32, and its
/// roundings there are relative to that (the call at |x| is inside and small).
#[test]
fn a_long_recurrences_rounding_is_relative_to_its_result() {
    let _rng = common::rng_lock();
    let mut ex = executor("api torch.special.shifted_chebyshev_polynomial_w(input: Tensor, n: Tensor) -> Tensor {}", Accuracy::Forward);
    let x = TensorRecipe { fill: Fill::Constant(-0.0030), ..f32s(&[1], 0.0, 1.0, 1) };
    let n = TensorRecipe { dtype: DType::UInt8, fill: Fill::Constant(255.0), ..f32s(&[], 0.0, 1.0, 1) };
    let got = verdict(&mut ex, &Case { op: 0, args: vec![Arg::Tensor(x), Arg::Tensor(n)], forward: None });
    assert!(matches!(got, CheckOutcome::Agree { .. }), "{got:?}");
}

#[test]
fn a_sum_of_squares_that_overflows_stays_a_premature_overflow() {
    let _rng = common::rng_lock();
    let mut ex = executor("api torch.linalg.vector_norm(x: Tensor) -> Tensor {}", Accuracy::Backward);
    // |x| around 1e20: the squares overflow float32, the norm (about 2e21) does not.
    let case = Case { op: 0, args: vec![Arg::Tensor(f32s(&[16], 1e20, 2e20, 3))], forward: None };
    match verdict(&mut ex, &case) {
        // And the worker names that cause, which `layer_norm`'s zeros and `std`'s inf share.
        CheckOutcome::Values(m) => assert!(m.premature.is_some() && m.squares_overflow == Some(DType::Float32), "{m:?}"),
        other => panic!("{other:?}"),
    }
    // A normalization whose variance overflowed returns its bias alone: no inf, NaN or 0, but
    // the same cause (bfloat16 batch_norm at -2.5e19..-6e18, bias 1).
    let mut ex = executor("api torch.batch_norm(input: Tensor, weight: Tensor?, bias: Tensor?, running_mean: Tensor?, running_var: Tensor?, training: bool, momentum: float, eps: float, cudnn_enabled: bool) -> Tensor {}", Accuracy::Backward);
    let x = TensorRecipe { dtype: DType::BFloat16, ..f32s(&[4, 1, 2, 2], -2.501580145914915e19, -6.253950364787287e18, 3443216177073776) };
    let bias = TensorRecipe { dtype: DType::BFloat16, fill: Fill::Constant(1.0), ..f32s(&[1], 0.0, 1.0, 1) };
    let case = Case {
        op: 0,
        args: vec![Arg::Tensor(x), Arg::None, Arg::Tensor(bias), Arg::None, Arg::None, Arg::Bool(true), Arg::Float(0.0), Arg::Float(2.4e-4), Arg::Bool(false)],
        forward: None,
    };
    match verdict(&mut ex, &case) {
        CheckOutcome::Values(m) => assert!(m.premature.is_none() && m.squares_overflow == Some(DType::Float32), "{m:?}"),
        other => panic!("{other:?}"),
    }
    // A p-norm of p above 2 sums |x|^p: p = 3 at 1e18 leaves float32 (renorm of complex64 -1e18
    // to a maximal norm of 3 is 0), while the sum of squares stays in it; and p = 16 at 1e-3
    // in float16 underflows every term (the norm is 0).
    let mut ex = executor("api torch.renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor {}", Accuracy::Backward);
    let x = TensorRecipe { dtype: DType::Complex64, fill: Fill::Constant(-1e18), ..f32s(&[2, 1], 0.0, 1.0, 1) };
    let case = Case { op: 0, args: vec![Arg::Tensor(x), Arg::Float(3.0), Arg::Int(1), Arg::Float(3.0)], forward: None };
    match verdict(&mut ex, &case) {
        CheckOutcome::Values(m) => assert!(m.squares_overflow.is_none() && m.powers_overflow == Some(DType::Float32), "{m:?}"),
        other => panic!("{other:?}"),
    }
    let mut ex = executor("api torch.norm_except_dim(v: Tensor, pow: int = 2, dim: int = 0) -> Tensor {}", Accuracy::Backward);
    let x = TensorRecipe { dtype: DType::Float16, ..f32s(&[3, 4], 1e-3, 1.1e-3, 5) };
    let case = Case { op: 0, args: vec![Arg::Tensor(x), Arg::Int(16), Arg::Int(0)], forward: None };
    match verdict(&mut ex, &case) {
        CheckOutcome::Values(m) => assert!(m.powers_overflow == Some(DType::Float32), "{m:?}"),
        other => panic!("{other:?}"),
    }
    // A pointwise premature overflow is another cause: float32 i0 forms exp(x) first, inf above
    // 88.7, where i0 itself is about 5e37.
    let mut ex = executor("api torch.special.i0(input: Tensor) -> Tensor {}", Accuracy::Forward);
    let case = Case { op: 0, args: vec![Arg::Tensor(f32s(&[4], 88.8, 89.0, 3))], forward: None };
    match verdict(&mut ex, &case) {
        CheckOutcome::Values(m) => assert!(m.premature.is_some() && m.squares_overflow.is_none(), "{m:?}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn blas_and_lapack_are_not_judged_beyond_the_square_root_of_the_range() {
    let _rng = common::rng_lock();
    let decl = "api torch.triangular_solve(b: Tensor, A: Tensor) -> (Tensor, Tensor) {}";
    let mut safe = executor(decl, Accuracy::BackwardInSafeRange);
    let mut everywhere = executor(decl, Accuracy::Backward);
    // One entry of A at float32's largest value: the substitution's products overflow where
    // the float64 solution does not. In the safe range only, that is not judged; everywhere,
    // the terms of the substitution (the solve on magnitudes) leave the range themselves, so
    // an overflow there is honest too, and no premature one.
    for seed in 0..20 {
        let mut a = f32s(&[4, 4], -10.0, 10.0, seed);
        a.specials = vec![(2, Special::Value(-(f32::MAX as f64)))];
        let mut b = f32s(&[4, 1], 1.0, 1.0, 0);
        b.fill = Fill::Constant(1.0);
        let case = Case { op: 0, args: vec![Arg::Tensor(b), Arg::Tensor(a)], forward: None };
        match verdict(&mut safe, &case) {
            CheckOutcome::Skipped(why) => assert!(why.contains("square root of the dtype's largest value"), "{why}"),
            other => panic!("seed {seed}: {other:?}"),
        }
        let v = verdict(&mut everywhere, &case);
        assert!(!matches!(&v, CheckOutcome::Values(m) if m.premature.is_some()), "seed {seed}: {v:?}");
    }
    // Within the range the same operator is judged, and agrees.
    let well = Case { op: 0, args: vec![Arg::Tensor(f32s(&[4, 1], 1.0, 2.0, 5)), Arg::Tensor(f32s(&[4, 4], 1.0, 2.0, 6))], forward: None };
    let v = verdict(&mut safe, &well);
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
}

#[test]
fn an_overflow_within_rounding_of_the_largest_value_is_not_premature() {
    let _rng = common::rng_lock();
    let mut ex = executor("api torch.linalg.vector_norm(x: Tensor) -> Tensor {}", Accuracy::Backward);
    // The norm of [max, 1] is max (to float64's precision): float32 may honestly round it up to inf.
    let mut x = f32s(&[2], 1.0, 1.0, 1);
    x.fill = Fill::Constant(1.0);
    x.specials = vec![(0, Special::Value(f32::MAX as f64))];
    let v = verdict(&mut ex, &Case { op: 0, args: vec![Arg::Tensor(x)], forward: None });
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
}

#[test]
fn a_dtype_argument_casts_the_reference_inputs_too_and_unrepresentable_arguments_are_not_judged() {
    let _rng = common::rng_lock();
    // cumprod(x, 0, dtype=float16) casts x first: -6.4e19 becomes -inf, and -inf * 0 is NaN in
    // the reference as well.
    let mut ex = executor("api torch.cumprod(input: Tensor, dim: int, dtype: ScalarType?) -> Tensor {}", Accuracy::Backward);
    let mut x = f32s(&[2], 0.0, 0.0, 1);
    x.fill = Fill::Constant(0.0);
    x.specials = vec![(0, Special::Value(-6.4e19))];
    let v = verdict(&mut ex, &Case { op: 0, args: vec![Arg::Tensor(x), Arg::Int(0), Arg::Dtype(DType::Float16)], forward: None });
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
    // logit's eps of 5e-324 is 0 in float16.
    let mut ex = executor("api torch.logit(input: Tensor, eps: float?) -> Tensor {}", Accuracy::Forward);
    let mut x = f32s(&[1], 0.0, 0.0, 1);
    x.dtype = DType::Float16;
    x.fill = Fill::Constant(0.0);
    match verdict(&mut ex, &Case { op: 0, args: vec![Arg::Tensor(x), Arg::Float(5e-324)], forward: None }) {
        CheckOutcome::Skipped(why) => assert!(why.contains("not representable in Float16"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_value_the_computation_dtype_cannot_hold_is_not_compared() {
    let _rng = common::rng_lock();
    let mut ex = executor("api torch.pow(input: Tensor, exponent: Tensor) -> Tensor {}", Accuracy::Forward);
    let recipe = |dtype, shape: Vec<i64>, v| TensorRecipe { dtype, shape, fill: Fill::Constant(v), seed: 1, layout: Layout::Contiguous, specials: vec![] };
    // A float64 0-dim base beside a bfloat16 exponent: the call computes in bfloat16, where 19.3
    // is 19.25, and 19.25^19 is 5% below 19.3^19.
    let exponent = Arg::Tensor(recipe(DType::BFloat16, vec![1], 19.0));
    let case = |base| Case { op: 0, args: vec![Arg::Tensor(recipe(DType::Float64, vec![], base)), exponent.clone()], forward: None };
    assert!(matches!(verdict(&mut ex, &case(19.3)), CheckOutcome::Skipped(_)), "{:?}", verdict(&mut ex, &case(19.3)));
    // 19.25 is the same number in both: compared, and agreeing.
    assert!(matches!(verdict(&mut ex, &case(19.25)), CheckOutcome::Agree { .. }), "{:?}", verdict(&mut ex, &case(19.25)));
}

#[test]
fn a_pointwise_error_the_inputs_rounding_explains_is_not_a_finding_but_an_overflow_is() {
    let _rng = common::rng_lock();
    // float32 j1 at 1e9 evaluates its asymptotic form in float32: one rounding of x moves the
    // phase by about 60 radians, so any value of the right size is as good as the exact one.
    let mut j1 = executor("api torch.special.bessel_j1(input: Tensor) -> Tensor {}", Accuracy::Forward);
    let huge = Case { op: 0, args: vec![Arg::Tensor(f32s(&[64], 1e9, 2e9, 5))], forward: None };
    let v = verdict(&mut j1, &huge);
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
    // Vectorized float32 cosh overflows just below 89.4, where the result (about 3e38) is
    // representable: the conditioning there is mild, so the inf stays a premature overflow.
    let mut cosh = executor("api torch.cosh(input: Tensor) -> Tensor {}", Accuracy::Forward);
    let edge = Case { op: 0, args: vec![Arg::Tensor(f32s(&[64], 89.0, 89.3, 5))], forward: None };
    match verdict(&mut cosh, &edge) {
        CheckOutcome::Values(m) => assert!(m.premature.is_some(), "{m:?}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn singular_vectors_are_not_held_to_the_references_signs_but_singular_values_are_compared() {
    let _rng = common::rng_lock();
    let mut ex = executor("api torch.svd(input: Tensor, some: bool = true, compute_uv: bool = true) -> (U: Tensor, S: Tensor, V: Tensor) {}", Accuracy::BackwardInSafeRange);
    // Each singular vector is unique only up to its phase; float32 and float64 LAPACK pick
    // different phases for some well-conditioned complex matrices (about 1 in 100).
    for seed in 0..300 {
        let recipe = TensorRecipe { dtype: DType::Complex64, shape: vec![5, 3], fill: Fill::Uniform { lo: -10.0, hi: 10.0 }, seed, layout: Layout::Contiguous, specials: vec![] };
        let case = Case { op: 0, args: vec![Arg::Tensor(recipe), Arg::Bool(true), Arg::Bool(true)], forward: None };
        let v = verdict(&mut ex, &case);
        assert!(matches!(v, CheckOutcome::Agree { .. }), "seed {seed}: {v:?}");
    }
}

#[test]
fn a_relation_is_not_judged_where_rounding_the_input_moves_its_right_side_beyond_the_tolerance() {
    let _rng = common::rng_lock();
    let decl = "api torch.pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor {\n    relation odd: self(input = -input) == -result;\n}\n";
    let mut ex = checking_relation(decl, Accuracy::BackwardInSafeRange);
    // Small integer matrices are often singular; with rcond 0 the pseudo-inverse inverts their
    // rounding noise, and -A and A give different noise (a campaign's case, seen as a finding).
    let singular =
        TensorRecipe { dtype: DType::Complex128, shape: vec![4, 6, 3, 3], fill: Fill::Int { lo: -8, hi: 1 }, seed: 4939525667268305, layout: Layout::Contiguous, specials: vec![] };
    let case = Case { op: 0, args: vec![Arg::Tensor(singular), Arg::Float(0.0)], forward: None };
    let v = verdict(&mut ex, &case);
    assert!(matches!(&v, CheckOutcome::Skipped(why) if why.contains("ill-conditioned")), "{v:?}");
    // Well-conditioned matrices are judged, and the relation holds.
    let case = Case { op: 0, args: vec![Arg::Tensor(TensorRecipe { dtype: DType::Complex128, ..f32s(&[4, 3, 3], -10.0, 10.0, 3) }), Arg::Float(0.0)], forward: None };
    let v = verdict(&mut ex, &case);
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
}

#[test]
fn lu_factors_and_pivots_are_not_held_to_the_references_pivoting_but_the_determinant_is() {
    let _rng = common::rng_lock();
    let mut ex = executor("api torch._linalg_det(A: Tensor) -> (result: Tensor, LU: Tensor, pivots: Tensor) {}", Accuracy::BackwardInSafeRange);
    // Small integers tie pivots; once a step of elimination has rounded (a third), float32 and
    // float64 break the ties apart and pick other rows: both factorizations are right.
    for seed in 0..100 {
        let recipe = TensorRecipe { dtype: DType::Float32, shape: vec![8, 3, 3], fill: Fill::Int { lo: -3, hi: 4 }, seed, layout: Layout::Contiguous, specials: vec![] };
        let v = verdict(&mut ex, &Case { op: 0, args: vec![Arg::Tensor(recipe)], forward: None });
        assert!(matches!(v, CheckOutcome::Agree { .. }), "seed {seed}: {v:?}");
    }
}

#[test]
fn a_nan_argument_asks_for_no_value_to_judge() {
    let _rng = common::rng_lock();
    let mut ex = executor("api torch.nn.functional.hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor {}", Accuracy::Forward);
    let case = |max: f64| Case { op: 0, args: vec![Arg::Tensor(f32s(&[16], -3.0, 3.0, 1)), Arg::Float(-1.0), Arg::Float(max)], forward: None };
    let v = verdict(&mut ex, &case(f64::NAN));
    assert!(matches!(&v, CheckOutcome::Skipped(why) if why.contains("NaN")), "{v:?}");
    let v = verdict(&mut ex, &case(2.0));
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
}

#[test]
fn a_relation_on_complex_results_compares_their_imaginary_parts_too() {
    let _rng = common::rng_lock();
    let decl = "api torch.polar(abs: Tensor, angle: Tensor) -> Tensor {\n    relation even: self(angle = -angle) == result;\n}\n";
    let mut ex = checking_relation(decl, Accuracy::Forward);
    // polar(r, -t) and polar(r, t) have the same real part and opposite imaginary parts.
    let f64s = |seed| Arg::Tensor(TensorRecipe { dtype: DType::Float64, ..f32s(&[4], 0.5, 1.0, seed) });
    let v = verdict(&mut ex, &Case { op: 0, args: vec![f64s(1), f64s(2)], forward: None });
    assert!(matches!(v, CheckOutcome::Values(_)), "{v:?}");
}

/// An odd function on its branch cut: atanh(-z) is -atanh(z) when negation flips the sign of
/// z's zero imaginary part, as IEEE negation does and torch's complex `neg` does not.
#[test]
fn a_complex_input_negated_for_a_relation_keeps_ieee_signed_zeros() {
    let _rng = common::rng_lock();
    let decl = "api torch.atanh(input: Tensor) -> Tensor {\n    relation odd: self(input = -input) == -result;\n}\n";
    let mut ex = checking_relation(decl, Accuracy::Forward);
    // Real values beyond 1, on the cut, as complex numbers with +0 imaginary parts.
    let cut = Arg::Tensor(TensorRecipe { dtype: DType::Complex128, fill: Fill::Int { lo: -8, hi: -1 }, ..f32s(&[8], 0.0, 1.0, 7) });
    let v = verdict(&mut ex, &Case { op: 0, args: vec![cut], forward: None });
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
}

/// Cases whose reference computes another function than the call: no verdict either way.
#[test]
fn inputs_the_call_cannot_hold_or_writes_apart_from_its_reference_are_not_judged() {
    let _rng = common::rng_lock();
    // A `dtype` argument casting a complex128 input of 1e300 to bfloat16: inf in the call only.
    let mut ex = executor("api torch.cumprod(input: Tensor, dim: int, *, dtype: dtype? = None) -> Tensor {}", Accuracy::Backward);
    let huge = TensorRecipe { dtype: DType::Complex128, shape: vec![2], fill: Fill::Constant(1e300), seed: 1, layout: Layout::Contiguous, specials: vec![] };
    let v = verdict(&mut ex, &Case { op: 0, args: vec![Arg::Tensor(huge), Arg::Int(0), Arg::Dtype(DType::BFloat16)], forward: None });
    assert!(matches!(&v, CheckOutcome::Skipped(why) if why.contains("beyond BFloat16")), "{v:?}");
    // An in-place fill of an expanded input writes every element sharing the diagonal's memory.
    let mut ex = executor("api torch.fill_diagonal_(input: Tensor, fill_value: Scalar, wrap: bool = false) -> Tensor {}", Accuracy::Forward);
    let expanded = TensorRecipe { dtype: DType::Float16, shape: vec![2, 1], fill: Fill::Constant(0.0), seed: 1, layout: Layout::Expanded, specials: vec![] };
    let v = verdict(&mut ex, &Case { op: 0, args: vec![Arg::Tensor(expanded), Arg::Float(3.0), Arg::Omitted], forward: None });
    assert!(matches!(&v, CheckOutcome::Skipped(why) if why.contains("expanded")), "{v:?}");
    // BLAS beyond the safe range of products: a NaN there (inf + -inf) is no nan_inf verdict.
    let mut ex = asking_where_defined("api torch.inner(input: Tensor, other: Tensor) -> Tensor {}");
    let x = TensorRecipe {
        dtype: DType::BFloat16,
        shape: vec![1, 3, 3],
        fill: Fill::Uniform { lo: -10.0, hi: 10.0 },
        seed: 1774146642293791,
        layout: Layout::Contiguous,
        specials: vec![],
    };
    let y = TensorRecipe { dtype: DType::BFloat16, shape: vec![3], fill: Fill::Constant(4.0967e37), seed: 1, layout: Layout::Contiguous, specials: vec![] };
    let v = verdict(&mut ex, &Case { op: 0, args: vec![Arg::Tensor(x), Arg::Tensor(y)], forward: None });
    assert!(matches!(v, CheckOutcome::Agree { .. }), "the inputs explain the NaN: {v:?}");
}

#[test]
fn a_denormal_inputs_rounding_explains_what_it_moves() {
    let _rng = common::rng_lock();
    // k0e near a float32 denormal is about -log(x): a denormal of 1e-42 holds 3 significant bits,
    // so one rounding of it moves the value by about 1e-3 (a campaign's finding, 97.4034 against
    // 97.4009).
    let mut ex = executor("api torch.special.scaled_modified_bessel_k0(x: Tensor) -> Tensor {}", Accuracy::Forward);
    let denormal = TensorRecipe {
        dtype: DType::Float32,
        shape: vec![2, 1, 1, 1],
        fill: Fill::Uniform { lo: 5.071636218531673e-43, hi: 2.0286544874126693e-42 },
        seed: 1420476902537764,
        layout: Layout::Contiguous,
        specials: vec![],
    };
    let v = verdict(&mut ex, &Case { op: 0, args: vec![Arg::Tensor(denormal)], forward: None });
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
    // At the smallest denormal k0e is inf in float32 where its value is 103.4: still a finding
    // (a move of a whole spacing would have reached 0, where k0e is undefined).
    let smallest = TensorRecipe { dtype: DType::Float32, shape: vec![], fill: Fill::Constant(f32::from_bits(1) as f64), seed: 1, layout: Layout::Contiguous, specials: vec![] };
    let v = verdict(&mut ex, &Case { op: 0, args: vec![Arg::Tensor(smallest)], forward: None });
    assert!(matches!(&v, CheckOutcome::Values(m) if m.premature.is_some()), "{v:?}");
}

/// An executor whose one check is the other memory layout, with the stdlib's tolerances.
fn relaid(decl: &str, accuracy: Accuracy) -> Executor {
    let t = |rtol, atol| Tolerance { rtol, atol };
    let tolerances = Tolerances { float16: t(1e-3, 1e-5), bfloat16: t(1.6e-2, 1e-5), float32: t(1.3e-6, 1e-5), float64: t(1e-7, 1e-7) };
    executor_checking(decl, Check { oracle: sfz::wire::oracle::Oracle::Layout, variant: Variant::Layout, tolerances, accuracy })
}

fn tensor(dtype: DType, shape: &[i64], fill: Fill, seed: u64, specials: Vec<(u64, Special)>) -> TensorRecipe {
    TensorRecipe { dtype, shape: shape.to_vec(), fill, seed, layout: Layout::Contiguous, specials }
}

/// Differences between memory layouts that honest rounding or an unspecified path explains
/// (each a false finding of a judged campaign), and one that stays a finding.
#[test]
fn another_layouts_rounding_and_unspecified_paths_are_not_findings() {
    let _rng = common::rng_lock();
    // `1 - alpha * b` in float16: one path rounds the product to float16, the other keeps it
    // in float32; after the cancellation they differ by an ulp of the operands, not the result.
    let mut ex = relaid("api torch.subtract(input: Tensor, other: Tensor, *, alpha: Scalar = 1) -> Tensor {}", Accuracy::Forward);
    let one = tensor(DType::Int8, &[], Fill::Constant(1.0), 1, vec![]);
    let b = tensor(DType::Float16, &[5, 7], Fill::Uniform { lo: -10.0, hi: 10.0 }, 2154630313734362, vec![(37, Special::NegInf)]);
    let v = verdict(&mut ex, &Case { op: 0, args: vec![Arg::Tensor(one), Arg::Tensor(b), Arg::Float(-0.19924090961930574)], forward: None });
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
    // An FFT rounds terms as large as the sum of |x| at every frequency.
    let mut ex = relaid("api torch.fft.fftn(input: Tensor, s: int[]? = None, dim: int[]? = None, norm: str? = None) -> Tensor {}", Accuracy::Backward);
    let x = tensor(DType::Int64, &[63, 3, 3], Fill::Int { lo: -10, hi: 11 }, 6826912091885573, vec![]);
    let v = verdict(&mut ex, &Case { op: 0, args: vec![Arg::Tensor(x), Arg::Omitted, Arg::Omitted, Arg::Omitted], forward: None });
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
    // An exponent float32 cannot hold: one path computes 0^0, the other 0^5e-324.
    let mut ex = relaid("api torch._foreach_pow(self: Tensor[], exponent: Scalar) -> Tensor[] {}", Accuracy::Forward);
    let zeros = tensor(DType::Int64, &[4, 5, 2], Fill::Constant(0.0), 1, vec![]);
    let v = verdict(&mut ex, &Case { op: 0, args: vec![Arg::TensorList(vec![zeros]), Arg::Float(5e-324)], forward: None });
    assert!(matches!(&v, CheckOutcome::Skipped(why) if why.contains("not representable")), "{v:?}");
    // A determinant of a matrix holding inf: which pivot meets it first is LAPACK's choice.
    let mut ex = relaid("api torch.logdet(input: Tensor) -> Tensor {}", Accuracy::BackwardInSafeRange);
    let m = tensor(DType::Float32, &[2, 8, 8], Fill::Uniform { lo: -10.0, hi: 10.0 }, 7796817266813822, vec![(5, Special::PosInf)]);
    let v = verdict(&mut ex, &Case { op: 0, args: vec![Arg::Tensor(m)], forward: None });
    assert!(matches!(&v, CheckOutcome::Skipped(why) if why.contains("NaN or inf")) || matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
    // A float32 log-determinant whose blocked factorization pivots otherwise in another layout:
    // each side within what the float64 reference and the matrix's conditioning allow it.
    let mut ex = relaid("api torch.linalg.slogdet(A: Tensor) -> (Tensor, Tensor) {}", Accuracy::BackwardInSafeRange);
    let m = tensor(DType::Float32, &[2, 2, 3, 3], Fill::Uniform { lo: -10.0, hi: 10.0 }, 3172393319053903, vec![]);
    let v = verdict(&mut ex, &Case { op: 0, args: vec![Arg::Tensor(m)], forward: None });
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
    // A kernel that reads an expanded input wrongly stays a finding: nanmedian along a
    // dimension of a stride-0 tensor (a judged true finding).
    let mut ex = relaid("api torch.nanmedian(input: Tensor, dim: int, keepdim: bool = false) -> (Tensor, Tensor) {}", Accuracy::Backward);
    let x = TensorRecipe { layout: Layout::Expanded, ..tensor(DType::Float64, &[2, 1, 1, 2], Fill::Uniform { lo: -10.0, hi: 10.0 }, 946670964459292, vec![]) };
    let v = verdict(&mut ex, &Case { op: 0, args: vec![Arg::Tensor(x), Arg::Int(0), Arg::Omitted], forward: None });
    assert!(matches!(v, CheckOutcome::Values(_)), "{v:?}");
}

/// Where a NaN comes from an input the operator promises nothing about, or from a sum whose
/// terms leave the range, the float64 reference does not call it premature; a variance whose
/// squares overflow stays a finding.
#[test]
fn nans_the_inputs_explain_are_agreed_and_a_variance_overflow_is_not() {
    let _rng = common::rng_lock();
    // geqrf of a float64 matrix holding DBL_MAX: the Householder update has no headroom.
    let mut ex = asking_where_defined("api torch.geqrf(input: Tensor) -> (Tensor, Tensor) {}");
    let m = tensor(DType::Float64, &[3, 4], Fill::Constant(1.0), 1, vec![(0, Special::Value(f64::MAX))]);
    let v = verdict(&mut ex, &Case { op: 0, args: vec![Arg::Tensor(m)], forward: None });
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
    let decl = "api torch.batch_norm(input: Tensor, weight: Tensor?, bias: Tensor?, running_mean: Tensor?, running_var: Tensor?, training: bool, momentum: float, eps: float, cudnn_enabled: bool) -> Tensor {}";
    let norm = |x: TensorRecipe| Case {
        op: 0,
        args: vec![Arg::Tensor(x), Arg::None, Arg::None, Arg::None, Arg::None, Arg::Bool(true), Arg::Float(0.0), Arg::Float(1e-3), Arg::Bool(false)],
        forward: None,
    };
    let mut ex = asking_where_defined(decl);
    // Two -FLT_MAX: their sum is beyond float32, so is the mean; inf - inf follows.
    let two = tensor(DType::Float32, &[2, 1], Fill::Constant(-(f32::MAX as f64)), 1, vec![]);
    let v = verdict(&mut ex, &norm(two));
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
    // One -FLT_MAX beside 0: the sum fits, the squares of the variance do not.
    let mut ex = executor(decl, Accuracy::Backward);
    let one = tensor(DType::Float32, &[2, 1], Fill::Constant(0.0), 1, vec![(0, Special::Value(-(f32::MAX as f64)))]);
    let v = verdict(&mut ex, &norm(one));
    assert!(matches!(&v, CheckOutcome::Values(m) if m.premature.is_some()), "{v:?}");
}

/// rms_norm's `eps` left None is the epsilon of its computation type (float32's for float16
/// inputs, as documented): the float64 reference takes that one, not float64's.
#[test]
fn a_documented_dtype_epsilon_default_reaches_the_reference() {
    let _rng = common::rng_lock();
    let mut ex = executor("api torch.rms_norm(input: Tensor, normalized_shape: int[], weight: Tensor? = None, eps: float? = None) -> Tensor {}", Accuracy::Backward);
    let small = tensor(DType::Float16, &[4, 3], Fill::Constant(-0.0005739458062940753), 1, vec![]);
    let v = verdict(&mut ex, &Case { op: 0, args: vec![Arg::Tensor(small), Arg::IntList(vec![4, 3]), Arg::Omitted, Arg::Omitted], forward: None });
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
    // complex64 computes in float32's parts: its epsilon too (c37f, inputs of 1e-8).
    let tiny = tensor(DType::Complex64, &[1, 8], Fill::Uniform { lo: -1e-8, hi: 1e-8 }, 2, vec![]);
    let v = verdict(&mut ex, &Case { op: 0, args: vec![Arg::Tensor(tiny), Arg::IntList(vec![8]), Arg::Omitted, Arg::Omitted], forward: None });
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
}

/// A special polynomial of float64 whose true value is beyond the range (He_10(1.8e308) is about
/// 1e3082) gives NaN from its recurrence's inf - inf: an honest overflow, while sinc's NaN in
/// float32 (checked above) and a NaN where the value is in range stay findings.
#[test]
fn a_float64_nan_whose_true_value_overflows_is_honest() {
    let _rng = common::rng_lock();
    let mut ex = asking_where_defined("api torch.special.hermite_polynomial_he(x: Tensor, n: Tensor) -> Tensor {}");
    let ten = tensor(DType::Float64, &[2], Fill::Constant(10.0), 1, vec![]);
    let huge = tensor(DType::Float64, &[2], Fill::Constant(1.79e308), 1, vec![(1, Special::Value(-1.86e154))]);
    let v = verdict(&mut ex, &Case { op: 0, args: vec![Arg::Tensor(huge), Arg::Tensor(ten.clone())], forward: None });
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
    // A NaN input's NaN is no overflow: the verdict is left to the domain.
    let nan = tensor(DType::Float64, &[2], Fill::Constant(f64::NAN), 1, vec![]);
    let v = verdict(&mut ex, &Case { op: 0, args: vec![Arg::Tensor(nan), Arg::Tensor(ten)], forward: None });
    assert!(matches!(v, CheckOutcome::Skipped(_)), "{v:?}");
}

/// Every float32 beyond 2^23 is an integer: a pole of trigamma when negative, where the float64
/// reference's reflection formula gives any number (14.7 at -FLT_MAX). Such elements are not
/// judged; the others are.
#[test]
fn the_gamma_familys_poles_are_not_judged() {
    let _rng = common::rng_lock();
    let decl = "api torch.polygamma(n: int, input: Tensor) -> Tensor {}";
    let mut ex = asking_where_defined(decl);
    let at_poles = tensor(DType::Float32, &[2], Fill::Constant(-(f32::MAX as f64)), 1, vec![(1, Special::Value(-3.0))]);
    let v = verdict(&mut ex, &Case { op: 0, args: vec![Arg::Int(1), Arg::Tensor(at_poles.clone())], forward: None });
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
    let mut ex = executor(decl, Accuracy::Forward);
    let v = verdict(&mut ex, &Case { op: 0, args: vec![Arg::Int(1), Arg::Tensor(at_poles)], forward: None });
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
    // Between the poles the reference judges.
    let v = verdict(&mut ex, &Case { op: 0, args: vec![Arg::Int(1), Arg::Tensor(f32s(&[8], 0.5, 4.0, 3))], forward: None });
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
}

/// A pointwise element's terms are its own operands: gelu's derivative at -10 times FLT_MAX is
/// -2.6e17, which the vectorized float32 kernel returns as 0 (its tail below float32's epsilon):
/// an absolute error the operands' rounding explains, not an overflow. An inverse FFT of
/// ±FLT_MAX sums beyond the range before it scales by 1/n: honest too.
#[test]
fn pointwise_terms_are_operands_and_an_ffts_unnormalized_sum_may_overflow() {
    let _rng = common::rng_lock();
    let mut ex = executor("api torch.ops.aten.gelu_backward(grad_output: Tensor, input: Tensor) -> Tensor {}", Accuracy::Forward);
    let grad = tensor(DType::Float32, &[2], Fill::Constant(0.0), 1, vec![(0, Special::Value(f32::MAX as f64))]);
    let at = tensor(DType::Float32, &[2], Fill::Constant(-10.0), 1, vec![]);
    let v = verdict(&mut ex, &Case { op: 0, args: vec![Arg::Tensor(grad), Arg::Tensor(at)], forward: None });
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
    let mut ex = asking_where_defined("api torch.fft.ifftn(input: Tensor) -> Tensor {}");
    let alternating = tensor(DType::Float32, &[34], Fill::Constant(f32::MAX as f64), 1, (0..17).map(|k| (2 * k + 1, Special::Value(-(f32::MAX as f64)))).collect());
    let v = verdict(&mut ex, &Case { op: 0, args: vec![Arg::Tensor(alternating)], forward: None });
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
}

/// eigvals promises no order: a relation reading them element by element is not judged (LAPACK
/// returned {0, -2e-28} in one order and their scaled copies in the other), while eigvalsh's
/// ascending values are.
#[test]
fn a_relation_on_an_output_in_no_order_is_not_judged() {
    let _rng = common::rng_lock();
    let relation = "relation homogeneous: forall s in [4.0]: self(input = input * s) == s * result;";
    let mut ex = checking_relation(&format!("api torch.linalg.eigvals(input: Tensor) -> Tensor {{\n    {relation}\n}}\n"), Accuracy::BackwardInSafeRange);
    let square = |dtype| Arg::Tensor(TensorRecipe { dtype, ..f32s(&[3, 3], -1.0, 1.0, 5) });
    let v = verdict(&mut ex, &Case { op: 0, args: vec![square(DType::Float64)], forward: None });
    assert!(matches!(&v, CheckOutcome::Skipped(why) if why.contains("order")), "{v:?}");
    let mut ex = checking_relation(&format!("api torch.linalg.eigvalsh(input: Tensor, UPLO: str = \"L\") -> Tensor {{\n    {relation}\n}}\n"), Accuracy::BackwardInSafeRange);
    let v = verdict(&mut ex, &Case { op: 0, args: vec![square(DType::Float64), Arg::Omitted], forward: None });
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
}

/// A subnormal argument holds too few digits for a relation's tolerance: sgn of complex128
/// values near 3e-321 against the same values scaled by 2^60 differs by 9e-4 (gradual
/// underflow's rounding of |z|), which is no finding; normal values are judged.
#[test]
fn a_finite_difference_on_subnormal_arguments_is_not_judged() {
    let _rng = common::rng_lock();
    let decl = "api torch.sgn(input: Tensor) -> Tensor {\n    relation scale_invariant: forall s in [1152921504606846976.0]: self(input = input * s) == result;\n}\n";
    let mut ex = checking_relation(decl, Accuracy::Forward);
    // Eight elements, all on the vectorized path (the scalar one returns inf there).
    let complex = |fill| Arg::Tensor(TensorRecipe { dtype: DType::Complex128, shape: vec![8], fill, seed: 3, layout: Layout::Contiguous, specials: vec![] });
    let v = verdict(&mut ex, &Case { op: 0, args: vec![complex(Fill::Uniform { lo: -3.21e-321, hi: -8e-322 })], forward: None });
    assert!(matches!(&v, CheckOutcome::Skipped(why) if why.contains("subnormal")), "{v:?}");
    let v = verdict(&mut ex, &Case { op: 0, args: vec![complex(Fill::Uniform { lo: 0.5, hi: 2.0 })], forward: None });
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
}

/// Bicubic weights sum beyond 1 (0.72 of -FLT_MAX in one output, from one input element): no
/// headroom, so a NaN there is honest, while the finite elements beside it are still compared,
/// each within a few roundings of its neighbours' magnitudes (float32's bicubic weights are off
/// by about u absolute: 5e-5 relative where a weight is small).
#[test]
fn a_linear_combination_without_headroom_is_honest_where_it_overflows() {
    let _rng = common::rng_lock();
    let mut ex = executor("api torch.ops.aten.upsample_bicubic2d(input: Tensor, output_size: int[], align_corners: bool) -> Tensor {}", Accuracy::Backward);
    let x = tensor(DType::Float32, &[1, 1, 8, 1], Fill::Constant(0.0), 1, vec![(0, Special::Value(-(f32::MAX as f64)))]);
    let v = verdict(&mut ex, &Case { op: 0, args: vec![Arg::Tensor(x), Arg::IntList(vec![5, 3]), Arg::Bool(false)], forward: None });
    assert!(matches!(&v, CheckOutcome::Agree { max_rel, .. } if *max_rel > 1e-5), "{v:?}");
}

/// Noise of campaign 37, by class: each case was a false finding there.
#[test]
fn honest_results_of_campaign_37_are_agreed() {
    let _rng = common::rng_lock();
    // K1(5e-324) is about 2e323, beyond float64: its NaN is an honest overflow, found by doubling.
    let mut ex = asking_where_defined("api torch.special.modified_bessel_k1(input: Tensor) -> Tensor {}");
    let tiny = tensor(DType::Float64, &[1], Fill::Constant(5e-324), 1, vec![]);
    let v = verdict(&mut ex, &Case { op: 0, args: vec![Arg::Tensor(tiny)], forward: None });
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
    // tanh-gelu's derivative near -5.5 is 0 in float32 where it is -3e-7: a few roundings of 1,
    // times a gradient of 7.3e18.
    let mut ex = executor("api torch.ops.aten.gelu_backward(grad_output: Tensor, input: Tensor, *, approximate: str = \"none\") -> Tensor {}", Accuracy::Forward);
    let grad = tensor(DType::Float32, &[5, 4], Fill::Constant(7.309553971376184e18), 1, vec![]);
    let at = f32s(&[5, 4], -10.0, 10.0, 7269232046848958);
    let v = verdict(&mut ex, &Case { op: 0, args: vec![Arg::Tensor(grad), Arg::Tensor(at), Arg::Str("tanh".into())], forward: None });
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
    // softshrink_backward compares float16 inputs with the threshold rounded to float16: an
    // input equal to the rounded threshold is inside it, as the reference given the same
    // rounded threshold says.
    let mut ex = executor("api torch.ops.aten.softshrink_backward(grad_output: Tensor, input: Tensor, lambd: float) -> Tensor {}", Accuracy::Forward);
    let ones = tensor(DType::Float16, &[2], Fill::Constant(1.0), 1, vec![]);
    let on_threshold = tensor(DType::Float16, &[2], Fill::Constant(-2.59765625), 1, vec![]);
    let v = verdict(&mut ex, &Case { op: 0, args: vec![Arg::Tensor(ones), Arg::Tensor(on_threshold), Arg::Float(2.597580533971369)], forward: None });
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
}

/// fill_diagonal_ into an expanded input writes one location for a whole column: no variant's
/// copy shares that memory, so no check judges it; a contiguous input is judged.
#[test]
fn a_mutating_call_into_an_expanded_argument_is_not_checked() {
    let _rng = common::rng_lock();
    let mut ex = relaid("api torch.ops.aten.fill_diagonal_(input: Tensor, fill_value: float, wrap: bool = false) -> Tensor {}", Accuracy::Forward);
    let matrix = |layout| Arg::Tensor(TensorRecipe { layout, ..f32s(&[3, 3], -1.0, 1.0, 2) });
    let v = verdict(&mut ex, &Case { op: 0, args: vec![matrix(Layout::Expanded), Arg::Float(5.0), Arg::Omitted], forward: None });
    assert!(matches!(&v, CheckOutcome::Skipped(why) if why.contains("expanded")), "{v:?}");
    let v = verdict(&mut ex, &Case { op: 0, args: vec![matrix(Layout::Contiguous), Arg::Float(5.0), Arg::Omitted], forward: None });
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
}

/// A relation scaling an FFT's input until its magnitudes sum past float32's range: the scaled
/// side overflows honestly (numpy's does too), so the relation is not judged there.
#[test]
fn a_relation_whose_scaled_input_sums_past_the_range_is_not_judged() {
    let _rng = common::rng_lock();
    let decl = "api torch.fft.rfftn(input: Tensor) -> Tensor {\n    relation homogeneous: forall s in [4.0]: self(input = input * s) == s * result;\n}\n";
    let mut ex = checking_relation(decl, Accuracy::Backward);
    let big = tensor(DType::Float32, &[4], Fill::Constant(4e37), 1, vec![(1, Special::Value(-4e37))]);
    let v = verdict(&mut ex, &Case { op: 0, args: vec![Arg::Tensor(big)], forward: None });
    assert!(matches!(&v, CheckOutcome::Skipped(why) if why.contains("sum beyond")), "{v:?}");
    let v = verdict(&mut ex, &Case { op: 0, args: vec![Arg::Tensor(f32s(&[4], -1.0, 1.0, 1))], forward: None });
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
}

/// A relation that scales bfloat16 or float32 inputs by 2^60 takes their squares past float32,
/// where torch accumulates them without rescaling: `layer_norm` divides by an infinite variance
/// and returns zeros. That breaks the relation (a finding: pytorch/pytorch#193006 reports the
/// norm's), and the worker names the overflow as its cause, which float64 inputs and a scale
/// whose squares fit do not show.
#[test]
fn a_relation_broken_by_an_overflowing_sum_of_squares_names_that_cause() {
    let _rng = common::rng_lock();
    let layer_norm = |s: f64| {
        format!("api torch.layer_norm(input: Tensor, normalized_shape: int[], weight: Tensor? = None, bias: Tensor? = None, eps: float = 1e-5) -> Tensor {{\n    relation scale_invariant_eps_squared: forall s in [{s:?}]: self(input = input * s, eps = eps * s * s) == result;\n}}\n")
    };
    let case = |dtype| Case {
        op: 0,
        args: vec![
            Arg::Tensor(tensor(dtype, &[8, 2, 1, 5], Fill::Uniform { lo: -10.0, hi: 10.0 }, 7, vec![])),
            Arg::IntList(vec![8, 2, 1, 5]),
            Arg::Omitted,
            Arg::Omitted,
            Arg::Float(4.7e-4),
        ],
        forward: None,
    };
    let mut ex = checking_relation(&layer_norm(2f64.powi(60)), Accuracy::Backward);
    for dtype in [DType::BFloat16, DType::Float32] {
        let v = verdict(&mut ex, &case(dtype));
        assert!(matches!(&v, CheckOutcome::Values(m) if m.squares_overflow == Some(DType::Float32)), "{dtype}: {v:?}");
    }
    let v = verdict(&mut ex, &case(DType::Float64));
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
    let mut ex = checking_relation(&layer_norm(4.0), Accuracy::Backward);
    let v = verdict(&mut ex, &case(DType::BFloat16));
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
}

/// An inf in one channel makes the magnitudes call NaN where its zero weights meet it: that must
/// not hide the FLT_MAX of another channel, whose bicubic taps sum past the range.
#[test]
fn an_infinite_input_elsewhere_does_not_hide_a_linear_combinations_missing_headroom() {
    let _rng = common::rng_lock();
    let mut ex = executor("api torch.ops.aten.upsample_bicubic2d(input: Tensor, output_size: int[], align_corners: bool) -> Tensor {}", Accuracy::Backward);
    let x = tensor(DType::Float32, &[1, 3, 2, 1], Fill::Constant(0.0), 1, vec![(1, Special::Value(f32::MAX as f64)), (3, Special::NegInf)]);
    let v = verdict(&mut ex, &Case { op: 0, args: vec![Arg::Tensor(x), Arg::IntList(vec![3, 2]), Arg::Bool(false)], forward: None });
    assert!(!matches!(&v, CheckOutcome::Values(m) if m.premature.is_some()), "{v:?}");
}

/// Noise of campaign 38, by class: each case was a false finding there.
#[test]
fn honest_results_of_campaign_38_are_agreed() {
    let _rng = common::rng_lock();
    // A bicubic weight of -0.01 is rounded like any other, to about u absolute: the element's
    // error is u times its neighbours' magnitudes (6 u here), not times the weighted sum.
    let mut ex = executor(
        "api torch.ops.aten.upsample_bicubic2d(input: Tensor, output_size: int[], align_corners: bool, scales_h: float? = None, scales_w: float? = None) -> Tensor {}",
        Accuracy::Backward,
    );
    let x = tensor(DType::Float32, &[1, 1, 2, 1], Fill::Constant(-1.7366293296169243e37), 1, vec![(22, Special::NegZero)]);
    let v = verdict(&mut ex, &Case { op: 0, args: vec![Arg::Tensor(x), Arg::IntList(vec![3, 1]), Arg::Bool(false), Arg::Float(3.089077920075429), Arg::Omitted], forward: None });
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
    // The sum of int32 [2^31 - 1, -2^31, 1, 1] in bfloat16 is 0, 1 or 2 by the order of its
    // terms: no reference judges a sum of values its dtype cannot hold, nor its other layout.
    let mut ex = executor("api torch.nansum(input: Tensor, dim: int[]? = None, keepdim: bool = false, *, dtype: dtype? = None) -> Tensor {}", Accuracy::Backward);
    let ints = tensor(DType::Int32, &[2, 2], Fill::Constant(1.0), 1, vec![(21, Special::Value(2147483647.0)), (100, Special::Value(-2147483648.0))]);
    let case = Case { op: 0, args: vec![Arg::Tensor(ints), Arg::Omitted, Arg::Omitted, Arg::Dtype(DType::BFloat16)], forward: None };
    let v = verdict(&mut ex, &case);
    assert!(matches!(&v, CheckOutcome::Skipped(why) if why.contains("cannot represent")), "{v:?}");
    let mut ex = relaid("api torch.nansum(input: Tensor, dim: int[]? = None, keepdim: bool = false, *, dtype: dtype? = None) -> Tensor {}", Accuracy::Backward);
    let v = verdict(&mut ex, &case);
    assert!(!matches!(v, CheckOutcome::Values(_)), "{v:?}");
}

/// Noise of campaign 39: bicubic interpolation of one -DBL_MAX pixel to width 3 sums weights of
/// 1.28 in magnitude, beyond float64's range (inf - inf is NaN); at half the range it is judged.
#[test]
fn an_interpolation_past_half_the_range_has_no_headroom_in_float64() {
    let _rng = common::rng_lock();
    let mut ex = asking_where_defined(
        "api torch.ops.aten.upsample_bicubic2d(input: Tensor, output_size: int[], align_corners: bool, scales_h: float? = None, scales_w: float? = None) -> Tensor {}",
    );
    let pixel = |v: f64| tensor(DType::Float64, &[1, 1, 1, 1], Fill::Constant(0.0), 1, vec![(8, Special::Value(v))]);
    let case = |v: f64| Case { op: 0, args: vec![Arg::Tensor(pixel(v)), Arg::IntList(vec![1, 3]), Arg::Bool(false), Arg::Omitted, Arg::Omitted], forward: None };
    let v = verdict(&mut ex, &case(-f64::MAX));
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
    let v = verdict(&mut ex, &case(-1e300));
    assert!(!matches!(v, CheckOutcome::Values(_)), "{v:?}");
}

/// Noise of campaign 39: gelu's derivative at int32 -9 is Phi(-9) + ..., about 1e-18, which
/// float32's 1 + erf(x / sqrt 2) rounds to an absolute error of u: the integer input counts by
/// its magnitude in the magnitudes call (where gelu' is 1), not as -9.
#[test]
fn an_integer_operand_counts_by_its_magnitude() {
    let _rng = common::rng_lock();
    let mut ex = executor("api torch.ops.aten.infinitely_differentiable_gelu_backward(grad: Tensor, input: Tensor) -> Tensor {}", Accuracy::Forward);
    let grad = tensor(DType::Float32, &[], Fill::Constant(-1.004505259813969e38), 1, vec![]);
    let at = TensorRecipe { dtype: DType::Int32, shape: vec![2, 2], fill: Fill::Int { lo: -10, hi: 11 }, seed: 36975992479228, layout: Layout::Contiguous, specials: vec![] };
    let v = verdict(&mut ex, &Case { op: 0, args: vec![Arg::Tensor(grad), Arg::Tensor(at)], forward: None });
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
}

/// Noise of campaign 39: mul of complex128 values of [-10, 10) by one near DBL_MAX. Where a part
/// of the true product overflows, the textbook product's other part (`ac - bd`) may overflow on
/// the way too: the element says nothing, both parts (as both share a guard).
#[test]
fn a_complex_element_with_one_part_beyond_the_range_is_not_judged() {
    let _rng = common::rng_lock();
    let decl = "api torch.mul(input: Tensor, other: Tensor) -> Tensor {\n    relation positively_homogeneous: forall s in [4.0]: self(input = input * s) == s * result;\n}\n";
    let mut ex = checking_relation(decl, Accuracy::Forward);
    let complex = |shape: Vec<i64>, lo: f64, hi: f64, seed: u64| {
        Arg::Tensor(TensorRecipe { dtype: DType::Complex128, shape, fill: Fill::Uniform { lo, hi }, seed, layout: Layout::Contiguous, specials: vec![] })
    };
    let case = Case { op: 0, args: vec![complex(vec![57], -10.0, 10.0, 2752894095934914), complex(vec![], 5.565505460495095e307, f64::MAX, 7796553782152658)], forward: None };
    let v = verdict(&mut ex, &case);
    assert!(!matches!(v, CheckOutcome::Values(_)), "{v:?}");
    // In range, the same relation is judged.
    let case = Case { op: 0, args: vec![complex(vec![57], -10.0, 10.0, 2752894095934914), complex(vec![], 1.0, 2.0, 7796553782152658)], forward: None };
    let v = verdict(&mut ex, &case);
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
}

/// The in-place form may round otherwise than the out-of-place one: `index_add_` scales
/// `source` by `alpha` in bfloat16 before adding, `index_add` does not; after `-10 + 10.9` they
/// differ by an ulp of the operands, which the rounding allowance explains (a false finding of
/// an index_add campaign; compared plainly, the two differ).
#[test]
fn an_in_place_forms_own_rounding_is_not_a_finding() {
    let _rng = common::rng_lock();
    let src = "api torch.index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Scalar = 1) -> Tensor {}\n\
               api torch.index_add_(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Scalar = 1) -> Tensor {}\n";
    let checked = sfz::check::check_text(Path::new("t.sfz"), src);
    assert!(!checked.has_errors(), "{src}");
    let bindings: Vec<_> = checked.spec.apis.iter().map(|a| registry::resolve(a, catalog()).unwrap()).collect();
    let mut ex = Executor::new();
    assert_eq!(ex.load(&bindings), vec![None, None]);
    let t = |rtol, atol| Tolerance { rtol, atol };
    let tolerances = Tolerances { float16: t(1e-3, 1e-5), bfloat16: t(1.6e-2, 1e-5), float32: t(1.3e-6, 1e-5), float64: t(1e-7, 1e-7) };
    let check = Check { oracle: sfz::wire::oracle::Oracle::Inplace, variant: Variant::InPlace { op: 1, arg: 0 }, tolerances, accuracy: Accuracy::Forward };
    ex.set_checks(vec![vec![check], vec![]]);
    let input = tensor(DType::BFloat16, &[1, 4, 8], Fill::Constant(-10.0), 0, vec![]);
    let index = tensor(DType::Int32, &[], Fill::Constant(0.0), 0, vec![]);
    let source = tensor(DType::BFloat16, &[1, 4, 8], Fill::Uniform { lo: -10.0, hi: 10.0 }, 2155486991197131, vec![]);
    let case = Case { op: 0, args: vec![Arg::Tensor(input), Arg::Int(0), Arg::Tensor(index), Arg::Tensor(source), Arg::Float(2.2899244584481515)], forward: None };
    let v = verdict(&mut ex, &case);
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
}

#[test]
fn a_float64_nan_is_honest_only_where_terms_or_scaled_products_leave_the_range() {
    let _rng = common::rng_lock();
    let f64s = |shape: &[i64], fill: Fill, seed: u64, specials: Vec<(u64, Special)>| TensorRecipe {
        dtype: DType::Float64,
        shape: shape.to_vec(),
        fill,
        seed,
        layout: Layout::Contiguous,
        specials,
    };
    // An integral over a spike of -DBL_MAX: its two trapezoids overflow with opposite signs
    // (inf - inf), and the exact integral is beyond the range too. No wider dtype exists; the
    // integral of the magnitudes leaves the range, so the NaN is how any float64 sum ends.
    let mut trapezoid = asking_where_defined("api torch.trapezoid(y: Tensor, x: Tensor, *, dim: int = -1) -> Tensor {}");
    let y = f64s(&[4, 4, 1, 1], Fill::Constant(0.0), 0, vec![(6, Special::Value(-f64::MAX))]);
    let x = f64s(&[4, 4, 1, 1], Fill::Uniform { lo: -10.0, hi: 10.0 }, 5832821121709651, vec![]);
    let case = Case { op: 0, args: vec![Arg::Tensor(y), Arg::Tensor(x), Arg::Int(0)], forward: None };
    let v = verdict(&mut trapezoid, &case);
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
    // BLAS may scale an operand by `alpha` first (-10 * DBL_MAX), then 0 * -inf is NaN where
    // the exact product is 0: an alpha that large leaves no room for BLAS's products.
    let mut addmm = asking_where_defined("api torch.addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Scalar = 1, alpha: Scalar = 1) -> Tensor {}");
    let case = |alpha: f64| Case {
        op: 0,
        args: vec![
            Arg::Tensor(f64s(&[], Fill::Constant(0.0), 0, vec![])),
            Arg::Tensor(f64s(&[1, 2], Fill::Constant(-10.0), 0, vec![])),
            Arg::Tensor(f64s(&[2, 1], Fill::Constant(0.0), 0, vec![])),
            Arg::Omitted,
            Arg::Float(alpha),
        ],
        forward: None,
    };
    let v = verdict(&mut addmm, &case(f64::MAX));
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
    // The variance of one element is NaN whatever the precision (0 / 0): its magnitudes call
    // is NaN too, which bounds no terms and explains nothing.
    let mut var = asking_where_defined("api torch.var(input: Tensor) -> Tensor {}");
    let one = Case { op: 0, args: vec![Arg::Tensor(f64s(&[1], Fill::Constant(5.0), 0, vec![]))], forward: None };
    let v = verdict(&mut var, &one);
    assert!(matches!(v, CheckOutcome::Skipped(_)), "{v:?}");
}

#[test]
fn blas_in_place_forms_keep_the_promises_of_their_functional_forms() {
    let _rng = common::rng_lock();
    // addmm_ is addmm: its products of 1e308 overflow with opposite signs (inf - inf), beyond
    // the square root of the range where BLAS promises nothing.
    let mut ex = asking_where_defined("api torch.addmm_(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Scalar = 1, alpha: Scalar = 1) -> Tensor {}");
    let t = |shape: &[i64], fill: Fill, specials: Vec<(u64, Special)>| {
        Arg::Tensor(TensorRecipe { dtype: DType::Float64, shape: shape.to_vec(), fill, seed: 0, layout: Layout::Contiguous, specials })
    };
    let case = Case {
        op: 0,
        args: vec![
            t(&[1, 1], Fill::Constant(0.0), vec![]),
            t(&[1, 2], Fill::Constant(10.0), vec![(1, Special::Value(-10.0))]),
            t(&[2, 1], Fill::Constant(1e308), vec![]),
            Arg::Omitted,
            Arg::Omitted,
        ],
        forward: None,
    };
    let v = verdict(&mut ex, &case);
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
    assert_eq!(sfz::ops::tags::class("addmm_"), sfz::ops::tags::OpClass::BlasLapack);
    assert_eq!(sfz::ops::tags::class("slow_conv3d_forward"), sfz::ops::tags::OpClass::BlasLapack);
}

#[test]
fn a_negative_view_is_read_with_its_sign() {
    let _rng = common::rng_lock();
    // `_neg_view` returns the input's memory with the negative bit set: read as it lies, the
    // contiguous call would hold `x` and the other layout's copy `-x`.
    let mut ex = relaid("api torch._neg_view(input: Tensor) -> Tensor {}", Accuracy::Forward);
    // In the dtype it is compared in (float64, complex128), no conversion copies it first.
    for dtype in [DType::Float64, DType::Complex128] {
        let x = tensor(dtype, &[3, 4], Fill::Uniform { lo: 1.0, hi: 2.0 }, 7, vec![]);
        let v = verdict(&mut ex, &Case { op: 0, args: vec![Arg::Tensor(x)], forward: None });
        assert!(matches!(v, CheckOutcome::Agree { .. }), "{dtype}: {v:?}");
    }
}

/// A polynomial's degree is an integer the kernel truncates: the walk towards the input moves
/// `x` and keeps `n`. He_108(720) is about 4e308, beyond float64; scaled by `1 - 2^-12`, the
/// degree would have dropped to 107 and the walk extrapolated to He_107(720), about 5e305: a
/// premature overflow that is not there.
#[test]
fn the_walk_to_an_infinite_polynomial_keeps_its_degree() {
    let _rng = common::rng_lock();
    let mut ex = executor("api torch.special.hermite_polynomial_he(x: Tensor, n: Tensor) -> Tensor {}", Accuracy::Forward);
    let x = tensor(DType::Float64, &[2], Fill::Constant(720.0), 1, vec![]);
    let n = tensor(DType::Float64, &[2], Fill::Constant(108.0), 1, vec![]);
    let v = verdict(&mut ex, &Case { op: 0, args: vec![Arg::Tensor(x), Arg::Tensor(n)], forward: None });
    assert!(!matches!(&v, CheckOutcome::Values(m) if m.premature.is_some()), "{v:?}");
}

/// `native_group_norm` reads a strided bias as if it were contiguous (torch 2.13.0): the result
/// is wrong, and wrong because of the layout: contiguous copies of the same inputs agree with
/// the float64 reference, and the disagreement says so (a `layout` finding). The `layout` check
/// flips every input and meets another behaviour (a transposed input raises).
#[test]
fn a_disagreement_only_strided_inputs_have_is_the_layouts() {
    let _rng = common::rng_lock();
    let decl = "api torch.native_group_norm(input: Tensor, weight: Tensor?, bias: Tensor?, N: int, C: int, HxW: int, group: int, eps: float) -> (Tensor, Tensor, Tensor) {}";
    let mut ex = executor(decl, Accuracy::Forward);
    let case = |bias_layout| {
        let mut bias = f32s(&[8], -10.0, 10.0, 3);
        bias.layout = bias_layout;
        let input = f32s(&[2, 8, 6, 2], -10.0, 10.0, 1);
        Case {
            op: 0,
            args: vec![Arg::Tensor(input), Arg::Tensor(f32s(&[8], -10.0, 10.0, 2)), Arg::Tensor(bias), Arg::Int(2), Arg::Int(8), Arg::Int(12), Arg::Int(4), Arg::Float(1e-3)],
            forward: None,
        }
    };
    let v = verdict(&mut ex, &case(Layout::Strided));
    assert!(matches!(&v, CheckOutcome::Values(m) if m.strided), "{v:?}");
    let v = verdict(&mut ex, &case(Layout::Contiguous));
    assert!(matches!(v, CheckOutcome::Agree { .. }), "{v:?}");
}
