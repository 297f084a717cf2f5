//! Differential checks in the worker: after a case's call, the same case again as each variant
//! of its op's checks (`variant::Variant`), compared here so that only verdicts leave the worker.
//!
//! Every variant rebuilds what it changes from the recipes, so the libtorch generator is in the
//! same state before each call (recipes reseed it) and the original inputs are never mutated.
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;
use std::time::Instant;

use tch::{Device, Kind, Tensor};

use super::compare::{compare_with, Allowance, Extra};
use super::conditioning;
use super::executor::{Called, Executor, Inputs, Rejected};
use super::materialize::{kind, materialize};
use super::representable;
use super::undetermined::Written;
use sfz_wire::binding::ArgSource;
use sfz_wire::case::{Arg, Case, DType, Layout};
use sfz_wire::errors::{classify, ErrorKind};
use sfz_wire::outcome::{Outcome, Output};
use sfz_wire::tags;
use sfz_wire::variant::{promote_dtype_args, Accuracy, Check, CheckOutcome, CheckReport, Tolerance, Tolerances, ValueMismatch, Variant};

impl Executor {
    /// Installs the differential checks of each loaded op (parallel to the last `load`). Per op:
    /// None when every check can run, else why not (a variant's op that did not load).
    pub fn set_checks(&mut self, checks: Vec<Vec<Check>>) -> Vec<Option<String>> {
        let errors = (0..self.ops.len())
            .map(|i| {
                let problems: Vec<String> = checks.get(i).into_iter().flatten().filter_map(|c| self.check_problem(c)).collect();
                (!problems.is_empty()).then(|| problems.join("; "))
            })
            .collect();
        self.checks = checks;
        errors
    }

    fn check_problem(&self, check: &Check) -> Option<String> {
        let op = match check.variant {
            Variant::Out { op } | Variant::InPlace { op, .. } => op,
            _ => return None,
        };
        self.op(op).err().map(|r| format!("{}: {}", check.oracle, r.message))
    }

    /// True when cases of op `op` run with checks.
    pub fn has_checks(&self, op: u32) -> bool {
        self.checks.get(op as usize).is_some_and(|c| !c.is_empty())
    }

    /// Runs a case, then each check of its op; `phase(k)` is called before check k starts (the
    /// worker records it, so that a crash inside a check is attributed to the check).
    pub fn run_checked(&mut self, case: &Case, phase: &mut dyn FnMut(u32)) -> (Outcome, Vec<CheckReport>) {
        let checks = self.checks.get(case.op as usize).cloned().unwrap_or_default();
        let (main, inputs) = match self.run_inner(case, true) {
            Ok(r) => r,
            Err(r) => {
                let skipped = checks.iter().map(|_| report(CheckOutcome::Skipped("the call did not reach the operator".into()), 0)).collect();
                return (r.into_outcome(), skipped);
            }
        };
        // A mutating operator (`abs_`, `add.out`, `Tensor(a!)` arguments) wrote into the inputs
        // it was given: each check starts again from freshly built ones, as the original call
        // did (a check's own calls write into what they are given too: a float64 reference of
        // float64 inputs is called on the inputs themselves).
        let mutates = self.mutates(case.op);
        let mut inputs = Some(inputs);
        let mut reports = Vec::with_capacity(checks.len());
        for (k, check) in checks.iter().enumerate() {
            phase(k as u32);
            let start = Instant::now();
            let given = match inputs.take().filter(|_| !mutates) {
                Some(given) => given,
                None => match self.materialize(case.op, case, &mut |r| materialize(r)) {
                    Ok(fresh) => fresh,
                    Err(r) => {
                        let why = format!("the inputs could not be rebuilt after the call mutated them: {}", r.message);
                        reports.push(report(CheckOutcome::Skipped(why), 0));
                        continue;
                    }
                },
            };
            // A check must never take the worker down through a Rust panic (a tch wrapper that
            // unwraps); that would be reported as a crash of libtorch.
            let outcome =
                catch_unwind(AssertUnwindSafe(|| self.check(check, case, &main, &given))).unwrap_or_else(|_| CheckOutcome::Skipped("the check panicked (a bug in sfz)".into()));
            reports.push(report(outcome, start.elapsed().as_micros()));
            if !mutates {
                inputs = Some(given);
            }
        }
        (main.outcome, reports)
    }

    fn check(&mut self, check: &Check, case: &Case, main: &Called, inputs: &Inputs) -> CheckOutcome {
        // A NaN bound, epsilon or weight (`hardtanh(max_val = nan)`) asks for no particular
        // number: what each kernel makes of it is not a value to judge. Layout, out= and in-place
        // twins run the same kernel and still must agree.
        let judges_values = matches!(check.variant, Variant::Promote | Variant::Defined | Variant::Gradient { .. } | Variant::Relation(_));
        if judges_values && case.args.iter().any(nan_scalar) {
            return CheckOutcome::Skipped("a floating argument is NaN: the result's value is unspecified".into());
        }
        // A mutating call into an expanded input writes one memory location for many elements
        // (`fill_diagonal_` fills a whole column of a stride-0 tensor, `embedding_renorm_`
        // renormalizes a row twice): torch documents in-place writes to expanded tensors as
        // unsupported, and no variant's copy shares that memory. The call is still judged for
        // crashes.
        if self.writes_into_expanded(case) {
            return CheckOutcome::Skipped("a mutating call into an expanded input writes memory its elements share, which no variant's copy does".into());
        }
        let result = match &check.variant {
            Variant::Promote => self.promote(case, main, inputs, &check.tolerances, check.accuracy, false),
            Variant::Defined => self.defined(case, main, inputs),
            Variant::Layout => self.layout(case, main, inputs, &check.tolerances, check.accuracy),
            Variant::Out { op } => self.out(*op, case, main, inputs, &check.tolerances),
            Variant::InPlace { op, arg } => self.in_place(*op, *arg, case, main, &check.tolerances),
            Variant::Gradient { eps, samples } => self.gradient(case, main, inputs, *eps, *samples, check.tolerances.float64),
            Variant::Cuda => self.cuda(case, main, inputs, &check.tolerances),
            Variant::Relation(r) => self.relation(r, check.accuracy, case, main, inputs),
        };
        let mut outcome = result.unwrap_or_else(|e| match e {
            Failure::Skip(why) => CheckOutcome::Skipped(why),
            Failure::Torch(e) => CheckOutcome::Skipped(format!("preparing the variant failed: {e}")),
        });
        // An output the original leaves unwritten disagrees with anything by chance: it is a
        // finding of its own, whichever check compared it, or none where ordinary inputs of the
        // call do not compute it (see `undetermined`).
        if let CheckOutcome::Values(m) = &mut outcome {
            match self.written(case, main, m.output) {
                Ok(Written::Garbage) => m.undetermined = true,
                Ok(Written::NotComputed) => {
                    return CheckOutcome::Skipped(format!("output {} is left unwritten, and the call does not compute it for non-empty inputs", m.output));
                }
                Ok(Written::Determined) | Err(_) => {}
            }
        }
        // A disagreement that contiguous copies of the strided inputs do not have is the
        // layout's (see `strided`).
        if matches!(check.variant, Variant::Promote)
            && matches!(outcome, CheckOutcome::Values(_))
            && self.contiguous_agrees(case, &check.tolerances, check.accuracy).unwrap_or(false)
        {
            if let CheckOutcome::Values(m) = &mut outcome {
                m.strided = true;
            }
        }
        // A premature inf, NaN or 0 of a reduction whose inputs' sum of squares leaves the
        // range it accumulates in: the cause, for grouping findings (as `relation` does).
        // A wrong value that is no inf, NaN or 0 has it too: a normalization whose variance
        // overflowed returns its bias.
        if let CheckOutcome::Values(m) = &mut outcome {
            let reference = matches!(check.variant, Variant::Promote) && !m.strided;
            let expected = m.premature.as_ref().map(|p| p.expected).or(reference.then_some(m.expected));
            if let Some(expected) = expected.filter(|_| tags::class(self.op_name(case.op)) != tags::OpClass::Pointwise) {
                m.squares_overflow = conditioning::squares_overflow(&inputs.tensors, 1.0, expected).ok().flatten();
                if let Some(p) = self.norm_order(case).filter(|_| m.squares_overflow.is_none()) {
                    m.powers_overflow = conditioning::power_sum_overflow(&inputs.tensors, p, 1.0, expected).ok().flatten();
                }
            }
        }
        outcome
    }

    /// `Variant::Defined`: where an output is NaN or inf, whether the float64 reference is too.
    /// Integer inputs are promoted as well: `div` of int64 zeros is NaN whatever the precision
    /// (an integer argument that only makes sense as an integer, an index, makes the reference
    /// raise, which speaks for the finding).
    fn defined(&mut self, case: &Case, main: &Called, inputs: &Inputs) -> Result<CheckOutcome, Failure> {
        if finite(&main.outcome) {
            return Err(Failure::Skip("every output is finite".into()));
        }
        // BLAS and LAPACK make no promise beyond the safe range of products (`inner` of 4e37
        // and 10 in bfloat16: inf + -inf; `geqrf` of a float64 matrix holding DBL_MAX), as the
        // precision check holds them to. Like a value the call's dtype cannot hold, that
        // explains the NaN: agreeing says so to the domain's `nan_inf` verdict too, float64
        // calls included.
        if self.blas_beyond_safe_range(case, inputs)?.is_some() {
            return Ok(CheckOutcome::Agree { max_abs: 0.0, max_rel: 0.0 });
        }
        if !inputs.tensors.iter().any(|t| t.f_kind().is_ok_and(|k| promoted_kind(k, true).is_some())) {
            // Float64 already: no wider reference, but a NaN may stand for an overflow.
            if self.nans_overflow(case, main, inputs)? || self.nans_lack_headroom(case, main, inputs)? {
                return Ok(CheckOutcome::Agree { max_abs: 0.0, max_rel: 0.0 });
            }
            return Err(Failure::Skip("no input to compute in float64".into()));
        }
        // A value the call's dtype cannot hold (an `eps` of 1e-308 is 0 in bfloat16, and 0 / 0
        // follows) explains the NaN: the call computes another function than the one asked for.
        if representable::unrepresentable(case, inputs, main)?.is_some() {
            return Ok(CheckOutcome::Agree { max_abs: 0.0, max_rel: 0.0 });
        }
        // Every finite pair agrees: only where each side is finite matters. Forward accuracy:
        // the conditioning of an input (`sinc(2e38)`, where float32's rounding moves `pi * x`
        // by many periods) excuses any value, but never a NaN where the reference has a number.
        let any_finite = Tolerances::uniform(Tolerance { rtol: 0.0, atol: f64::INFINITY });
        self.promote(case, main, inputs, &any_finite, Accuracy::Forward, true)
    }

    /// Whether every NaN of a float64 call that is not pointwise lies where the terms its
    /// elements sum leave the range (the rounding allowance's `no_headroom`: the same call on
    /// the inputs' magnitudes, a convolution's or an integral's `sum |w| |x|`, beyond half of
    /// it): there `inf - inf` is how the natural algorithm ends, whatever the exact sum is.
    fn nans_lack_headroom(&mut self, case: &Case, main: &Called, inputs: &Inputs) -> Result<bool, Failure> {
        if tags::class(self.op_name(case.op)) == tags::OpClass::Pointwise {
            return Ok(false);
        }
        let Outcome::Returned { outputs, .. } = &main.outcome else { return Ok(false) };
        let allowance = self.rounding_allowance(case.op, case, inputs, main)?;
        // Where the magnitudes call is NaN itself, an input whose magnitudes alone sum past half
        // the range still leaves no headroom (`trapezoid`'s spacings are no magnitudes: |x|
        // reorders them, and its integral of -DBL_MAX then holds inf - inf too).
        let mut huge = false;
        for t in inputs.tensors.iter().filter(|t| t.is_floating_point() || t.is_complex()) {
            huge |= conditioning::finite_magnitude_sum(t)? > f64::MAX / 2.0;
        }
        let mut any = false;
        for (k, output) in outputs.iter().enumerate() {
            let Output::Tensor(info) = output else { continue };
            if info.nan == 0 {
                continue;
            }
            let (Some(Some(out)), Some(Some(a))) = (main.tensors.get(k), allowance.get(k)) else { return Ok(false) };
            if info.dtype != Some(DType::Float64) {
                return Ok(false);
            }
            // Otherwise not where the magnitudes call is NaN itself (`var` of one element): that
            // bounds no terms, and a kernel's NaN on any input would read as explained.
            let explained = if huge { a.no_headroom.shallow_clone() } else { a.no_headroom.f_logical_and(&a.rounding.f_isnan()?.f_logical_not()?)? };
            let unexplained = out.f_isnan()?.f_logical_and(&explained.f_logical_not()?)?;
            if bool::try_from(unexplained.f_any()?)? {
                return Ok(false);
            }
            any = true;
        }
        Ok(any)
    }

    /// The order p of a p-norm the operator takes, where it is finite and above 2 (`ord`, `p`,
    /// `pow`, `norm_type` given as a number): its sum of |x|^p may leave the range first.
    fn norm_order(&self, case: &Case) -> Option<f64> {
        case.args.iter().enumerate().find_map(|(i, a)| {
            let p = match a {
                Arg::Float(v) => *v,
                Arg::Int(v) => *v as f64,
                _ => return None,
            };
            let named = matches!(self.schema_arg_name(case.op, i), Some("ord" | "p" | "pow" | "norm_type"));
            (named && p.is_finite() && p > 2.0).then_some(p)
        })
    }

    /// Whether an argument the operator writes to (`Tensor(a!)`) is built expanded (stride 0).
    fn writes_into_expanded(&self, case: &Case) -> bool {
        let Ok(op) = self.op(case.op) else { return false };
        op.schema.args.iter().zip(&op.binding.args).any(|(a, source)| {
            a.mutable && matches!(source, ArgSource::Param { index, .. } if case.args.get(*index).is_some_and(|arg| arg.tensors().any(|r| r.layout == Layout::Expanded)))
        })
    }

    /// `case` with an `eps` left None given the original's epsilon, where the operator documents
    /// that default (`rms_norm`: float32's 1.2e-7 against float64's 2.2e-16 changes a result of
    /// small inputs entirely).
    fn with_dtype_epsilon(&self, op: u32, mut case: Case, inputs: &Inputs) -> Result<Case, Failure> {
        let loaded = self.op(op).map_err(Failure::from)?;
        if !tags::eps_defaults_to_dtype_epsilon(&loaded.schema.name) {
            return Ok(case);
        }
        let Some(position) = loaded.schema.args.iter().position(|a| a.name == "eps") else { return Ok(case) };
        let Some(ArgSource::Param { index, .. }) = loaded.binding.args.get(position) else { return Ok(case) };
        // The epsilon of the computation (opmath) type: float32's for float16, bfloat16 and
        // float32 inputs (torch.nn.RMSNorm's documentation), and complex64's parts.
        let eps = match inputs.tensors.first().map(Tensor::f_kind).transpose()? {
            Some(Kind::Half | Kind::BFloat16 | Kind::Float | Kind::ComplexHalf | Kind::ComplexFloat) => f64::from(f32::EPSILON),
            _ => return Ok(case),
        };
        if let Some(arg @ (Arg::Omitted | Arg::None)) = case.args.get_mut(*index) {
            *arg = Arg::Float(eps);
        }
        Ok(case)
    }

    /// For a BLAS or LAPACK operator, why its inputs are where it promises nothing (see
    /// `conditioning::beyond_safe_range`); None for other operators.
    pub(super) fn blas_beyond_safe_range(&self, case: &Case, inputs: &Inputs) -> Result<Option<String>, Failure> {
        if tags::class(self.op_name(case.op)) != tags::OpClass::BlasLapack {
            return Ok(None);
        }
        Ok(conditioning::beyond_safe_range(case, inputs)?)
    }

    /// Float16, bfloat16, float32 (and complex64) inputs and `dtype` arguments in double
    /// precision; with `integers`, integer inputs too.
    pub(super) fn promote(&mut self, case: &Case, main: &Called, inputs: &Inputs, tol: &Tolerances, accuracy: Accuracy, integers: bool) -> Result<CheckOutcome, Failure> {
        if let Some(why) = representable::unrepresentable(case, inputs, main)? {
            return Err(Failure::Skip(why));
        }
        // A `dtype` argument casts the inputs before the operation: the reference starts from
        // the same cast values. Another dtype argument does not (`_softmax_backward_data`'s
        // `input_dtype` names the forward's input's dtype; its float64 inputs stay float64).
        let cast = case.args.iter().enumerate().find_map(|(i, a)| match a {
            Arg::Dtype(d @ (DType::Float16 | DType::BFloat16 | DType::Float32)) if self.schema_arg_name(case.op, i) == Some("dtype") => Some(kind(*d)),
            _ => None,
        });
        let mut changed = false;
        let promoted = inputs.map(|_, t| {
            let cast_first;
            let t = match cast {
                Some(k) if t.is_floating_point() && t.f_kind()? != k => {
                    cast_first = t.f_to_kind(k)?;
                    &cast_first
                }
                _ => t,
            };
            let to = promoted_kind(t.f_kind()?, integers);
            changed |= to.is_some();
            match to {
                Some(k) => t.f_to_kind(k),
                None => Ok(t.shallow_clone()),
            }
        })?;
        let case2 = self.with_dtype_epsilon(case.op, promote_dtype_args(case), inputs)?;
        if !changed && case2 == *case {
            // Float64 only: no wider reference, but pointwise math can still overflow early.
            if accuracy == Accuracy::Forward {
                return self.ray(case, main, inputs);
            }
            return Err(Failure::Skip("no float16, bfloat16, float32 or complex64 input".into()));
        }
        if accuracy == Accuracy::BackwardInSafeRange {
            if let Some(why) = conditioning::beyond_safe_range(case, inputs)? {
                return Err(Failure::Skip(why));
            }
        }
        let verdict = self.against(case, &case2, main, inputs, &promoted, tol, accuracy)?;
        // A float argument the call holds in its own dtype (`softshrink_backward`'s threshold
        // compared in float16): the reference given the same rounded argument computes the
        // function the call does, and agreeing with it is agreement.
        if matches!(verdict, CheckOutcome::Values(_)) {
            if let Some(rounded) = representable::scalars_rounded(&case2, main) {
                if let Ok(agreed @ CheckOutcome::Agree { .. }) = self.against(case, &rounded, main, inputs, &promoted, tol, accuracy) {
                    return Ok(agreed);
                }
            }
        }
        Ok(verdict)
    }

    /// `main` (the call of `case` on `inputs`) against the float64 reference: `case2` called on
    /// `promoted`, compared plainly, then allowing for honest rounding, then for the input's
    /// conditioning.
    #[allow(clippy::too_many_arguments)]
    fn against(&mut self, case: &Case, case2: &Case, main: &Called, inputs: &Inputs, promoted: &Inputs, tol: &Tolerances, accuracy: Accuracy) -> Result<CheckOutcome, Failure> {
        let mut reference = self.invoke_variant(case.op, case2, promoted, &[])?;
        if let Some(c) = consistency(main, &reference) {
            return Ok(c);
        }
        // Outputs the math leaves open (singular vectors up to sign) are not compared: a NaN
        // reference element is not judged.
        let name = self.op_name(case.op);
        // Integer outputs (LU pivots) hold no NaN: they take the call's own values.
        for &k in tags::not_unique(name) {
            if let Some(Some(t)) = reference.tensors.get_mut(k) {
                *t = match main.tensors.get(k) {
                    Some(Some(own)) if !t.is_floating_point() && !t.is_complex() => own.f_to_kind(t.f_kind()?)?,
                    _ => t.f_full_like(f64::NAN)?,
                };
            }
        }
        if let Some(input) = tags::gamma_poles(name) {
            unjudged_at_poles(&mut reference, inputs.tensors.get(input))?;
        }
        if accuracy == Accuracy::BackwardInSafeRange {
            if let Some(why) = conditioning::result_beyond_range(main, &reference)? {
                return Err(Failure::Skip(why));
            }
        }
        let plain = compare_outputs(main, &reference, tol, Mode::Promote);
        if !matches!(plain, CheckOutcome::Values(_)) {
            return Ok(plain);
        }
        // Honest rounding grows with the terms a result sums: judge again allowing for it.
        let mut allowance = self.rounding_allowance(case.op, case2, promoted, main)?;
        self.allow_folded_form(case2, promoted, main, &mut allowance)?;
        let judged = compare_allowing(main, &reference, tol, Mode::Promote, &allowance);
        if !matches!(judged, CheckOutcome::Values(_)) {
            return Ok(judged);
        }
        // What moving the input by its rounding explains is agreement (for pointwise operators,
        // a few times it: see `conditioning`).
        let conditioning = self.conditioning(case.op, case2, inputs, promoted, &reference, accuracy)?;
        let (reference, allowance) = conditioning.apply(&reference, &allowance)?;
        Ok(compare_allowing(main, &reference, tol, Mode::Promote, &allowance))
    }

    /// A normalization layer's output 0 may carry its folded form's rounding too
    /// (`normalization`), in the dtype the kernel computes in: float32 for float16 and bfloat16
    /// outputs, whose kernels compute in float32 and round once at the end (a float16 batch
    /// norm off by 9 ulps is its statistics' low precision, pytorch/pytorch#140112, not this).
    fn allow_folded_form(&self, case: &Case, promoted: &Inputs, main: &Called, allowance: &mut [Option<Allowance>]) -> Result<(), Failure> {
        let Some(Some(out)) = main.tensors.first() else { return Ok(()) };
        let computed = match super::relate::rounding_dtype(out) {
            Some(DType::Float16 | DType::BFloat16) => Some(DType::Float32),
            d => d,
        };
        let Some(u) = computed.and_then(DType::unit_roundoff) else { return Ok(()) };
        let Some(folded) = self.folded_rounding(case, promoted, u)? else { return Ok(()) };
        if folded.size() != out.size() {
            return Ok(());
        }
        if let Some(slot) = allowance.first_mut() {
            *slot = Some(match slot.take() {
                Some(a) => a.map(|t| t.f_add(&folded))?,
                None => Allowance { rounding: folded.shallow_clone(), no_headroom: folded.f_zeros_like()?.f_to_kind(Kind::Bool)? },
            });
        }
        Ok(())
    }

    /// Per output of `main`, the rounding error its dtype may honestly make: `n · u · m` per
    /// element, where `u` is the dtype's unit roundoff, `m` the same call on the inputs'
    /// absolute values in float64 (for sums, products of matrices, convolutions: the sum of
    /// the terms' magnitudes) and `n` the number of terms a result may sum (the ratio of input
    /// to output elements, or the longest input dimension, whichever is larger; a fixed few for
    /// a pointwise operator, `POINTWISE_ROUNDINGS`); and where the
    /// terms themselves leave the dtype's range (a finite result is held to the same rounding
    /// there). None for an output the magnitude call cannot give (it raised, or changed shape).
    pub(super) fn rounding_allowance(&mut self, op: u32, case: &Case, promoted: &Inputs, main: &Called) -> Result<Vec<Option<Allowance>>, Failure> {
        let class = tags::class(self.op_name(op));
        let pointwise = class == tags::OpClass::Pointwise;
        let mixes_phases = tags::mixes_phases(self.op_name(op));
        let interpolates = tags::interpolates(self.op_name(op));
        // The inputs whose values the result sums: floating ones, and integer ones where they
        // can only be data (`fft(int64)`, `1 - alpha * float16`, the one tensor of a reduction:
        // `nansum(int32, dtype=bfloat16)`), not indices or sizes (`bincount(x, weights)`).
        let alone = promoted.tensors.len() == 1;
        let data = |k: Kind| matches!(k, Kind::Double | Kind::ComplexDouble) || ((pointwise || mixes_phases || alone) && integer(k));
        // Complex inputs by their moduli: |a·b + c·d| <= |a||b| + |c||d| bounds a complex sum of products too.
        // Integer data in float64 too: the magnitudes of `fft(int64)` are then float64 as well.
        let magnitudes = promoted.map(|_, t| match t.f_kind()? {
            Kind::Double | Kind::ComplexDouble => t.f_abs(),
            k if data(k) => t.f_abs()?.f_to_kind(Kind::Double),
            // Other integers by their absolute values too, in their own dtype: an index or a
            // size is nonnegative already, and data (`gelu_backward(grad, int32)`) then counts
            // by its magnitude.
            k if integer(k) => t.f_abs(),
            _ => Ok(t.shallow_clone()),
        })?;
        let called = self.invoke_variant(op, case, &magnitudes, &[])?;
        let Outcome::Returned { outputs, .. } = &main.outcome else { return Ok(Vec::new()) };
        // The data inputs' magnitudes, in float64 (a complex modulus is real).
        let floating: Vec<&Tensor> = promoted.tensors.iter().zip(&magnitudes.tensors).filter(|(t, _)| t.f_kind().is_ok_and(data)).map(|(_, m)| m).collect();
        // An interpolation's elements are held to the largest finite input magnitude.
        let largest = if interpolates { conditioning::finite_max(floating.iter().copied())? } else { 0.0 };
        let elements: i64 = floating.iter().map(|t| t.numel() as i64).sum();
        let longest = floating.iter().flat_map(|t| t.size()).max().unwrap_or(1);
        // A pointwise operator's intermediates are as large as its operands (`a - alpha * b`
        // cancels in the magnitudes call too): they bound its terms beside that call.
        let scale = case.args.iter().map(|a| if let Arg::Float(v) = a { v.abs() } else { 0.0 }).filter(|v| v.is_finite()).fold(1f64, f64::max);
        // A normalization's or a reduction's sums run over whole inputs, and its magnitudes
        // call is normalized again: a sum of one input's magnitudes beyond the accumulator
        // (float32 for every low dtype) is an honest overflow for all its elements.
        // An FFT's unnormalized sums too: a normalized transform scales after summing.
        let sums_beyond = class == tags::OpClass::Other && {
            let mut beyond = false;
            for m in &floating {
                // Finite ones: an inf's own arithmetic is no sum overflowing.
                beyond |= conditioning::finite_magnitude_sum(m)? > f32::MAX as f64;
            }
            beyond
        };
        // A polynomial's degree (its second argument, a tensor or a number) sets its roundings.
        let recurrence_steps = if tags::degree_recurrence(self.op_name(op)) {
            let degree = match promoted.tensors.get(1) {
                Some(n) => conditioning::finite_max(std::iter::once(&n.f_to_kind(Kind::Double)?))?,
                None => case
                    .args
                    .iter()
                    .filter_map(|a| match a {
                        Arg::Int(v) => Some(*v as f64),
                        Arg::Float(v) => Some(*v),
                        _ => None,
                    })
                    .fold(0.0, |m: f64, v| m.max(v.abs())),
            };
            (2.0 * degree * degree).min(RECURRENCE_ROUNDINGS_CAP)
        } else {
            0.0
        };
        let mut out = Vec::new();
        for (k, o) in outputs.iter().enumerate() {
            let (Output::Tensor(info), Some(Some(m))) = (o, called.tensors.get(k)) else {
                out.push(None);
                continue;
            };
            let shape_ok = m.size() == info.shape;
            // A complex result's magnitude (an FFT of magnitudes is complex).
            let mut m = m.f_abs()?;
            if pointwise && shape_ok {
                for t in &floating {
                    if let Ok(operand) = t.f_broadcast_to(info.shape.as_slice()) {
                        m = m.f_maximum(&operand.f_mul_scalar(scale)?)?;
                    }
                }
            }
            if mixes_phases && m.numel() > 0 {
                m = m.f_max()?.f_expand_as(&m)?;
            }
            // A recurrence's terms grow with the solution it follows, to the size of the result
            // (a shifted Chebyshev polynomial of degree 255 just outside [0, 1] is 8e11, while
            // the call at |x| is inside and small): its roundings are relative to the result.
            if recurrence_steps > 0.0 && shape_ok {
                if let Some(Some(own)) = main.tensors.get(k) {
                    let own = own.f_abs()?.f_to_kind(Kind::Double)?.f_nan_to_num(0.0, 0.0, 0.0)?;
                    if own.size() == m.size() {
                        m = m.f_maximum(&own)?;
                    }
                }
            }
            if interpolates {
                m = m.f_clamp_min(largest)?;
            }
            let Some(u) = info.dtype.and_then(DType::unit_roundoff).filter(|_| shape_ok && m.f_kind().is_ok_and(|k| k == Kind::Double)) else {
                out.push(None);
                continue;
            };
            let ratio = (elements / info.shape.iter().product::<i64>().max(1)).max(1);
            // A pointwise element is a few roundings of its own operands whatever the tensor's
            // size (a minimized case of one element is held to what its original was).
            let n = if pointwise { POINTWISE_ROUNDINGS.max(recurrence_steps) } else { ratio.max(longest) as f64 };
            let n = if interpolates { n.max(INTERPOLATION_ROUNDINGS) } else { n };
            let allowance = m.f_mul_scalar(n * u)?;
            // Where the terms an element sums (the input-to-output ratio of them, each at most
            // `m`: a mean's sum; an FFT's or a convolution's is `m` itself) leave the dtype's
            // range, so do the natural algorithm's intermediates: no headroom (a norm's
            // squares are no such terms: its `m` is the norm of `|x|`, in range).
            let room = info.dtype.and_then(DType::limits).map_or(f64::INFINITY, |(max, ..)| max);
            // A pointwise element's terms are its own operands, one element of each input.
            let terms = if pointwise { m.shallow_clone() } else { m.f_mul_scalar(ratio as f64)? };
            // Past pointwise operators, any element's intermediates may hold any input's terms
            // (an FFT's butterflies, a convolution's partial sums): the largest decides for all.
            // A NaN term (an inf input times a zero weight) is an infinite one, not none: NaN
            // would hide every other term from the maximum.
            let terms = if pointwise || terms.numel() == 0 { terms } else { terms.f_nan_to_num(f64::INFINITY, f64::INFINITY, f64::INFINITY)?.f_max()?.f_expand_as(&terms)? };
            // And past pointwise operators, with a factor 2 of headroom: a linear combination's
            // weights may sum beyond 1 (bicubic interpolation's reach 1.07 times the input).
            let room = if pointwise { room } else { room / 2.0 };
            let beyond = if sums_beyond { terms.f_ones_like()?.f_to_kind(Kind::Bool)? } else { terms.f_gt(room)? };
            // A NaN magnitude (of a NaN input) bounds nothing either.
            let no_headroom = beyond.f_logical_or(&allowance.f_isfinite()?.f_logical_not()?)?;
            out.push(Some(Allowance { rounding: allowance, no_headroom }));
        }
        Ok(out)
    }

    /// Calls a variant; a call that cannot be made at all is the check's problem, not a finding.
    pub(super) fn invoke_variant(&mut self, op: u32, case: &Case, inputs: &Inputs, outs: &[Tensor]) -> Result<Called, Failure> {
        self.invoke(op, case, inputs, outs, true).map_err(Failure::from)
    }
}

/// Why a check ended without a verdict.
pub(super) enum Failure {
    Skip(String),
    Torch(tch::TchError),
}

impl From<tch::TchError> for Failure {
    fn from(e: tch::TchError) -> Self {
        Failure::Torch(e)
    }
}

impl From<Rejected> for Failure {
    fn from(r: Rejected) -> Self {
        Failure::Skip(format!("the variant cannot be called: {}", first_line(&r.message)))
    }
}

/// Whether every tensor output of a call that returned holds only finite values (a call that
/// raised has none).
fn finite(outcome: &Outcome) -> bool {
    match outcome {
        Outcome::Returned { outputs, .. } => outputs.iter().all(|o| !matches!(o, Output::Tensor(t) if t.nan > 0 || t.inf > 0)),
        _ => true,
    }
}

fn report(outcome: CheckOutcome, micros: u128) -> CheckReport {
    CheckReport { outcome, micros: u32::try_from(micros).unwrap_or(u32::MAX) }
}

pub(super) fn first_line(s: &str) -> &str {
    s.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim()
}

/// How many roundings of its operands' size a pointwise result may honestly hold: its formula's
/// own steps (gelu's derivative at -5.5 is `0.5 (1 + tanh u) + ...`, where the sum with 1
/// leaves an error of a few roundings of 1), as many as the longest dimension sfz generates.
const POINTWISE_ROUNDINGS: f64 = 8.0;

/// The most roundings a polynomial's recurrence is allowed (`tags::degree_recurrence`): at
/// degree 700 and beyond, float32's are all its digits anyway.
const RECURRENCE_ROUNDINGS_CAP: f64 = 1e6;

/// Whether `k` is an integer dtype (bool is not).
fn integer(k: Kind) -> bool {
    matches!(k, Kind::Int8 | Kind::Uint8 | Kind::Int16 | Kind::Int | Kind::Int64)
}

/// An interpolated element's roundings: up to 4 taps a dimension, each weight a few roundings of
/// its coordinate (bicubic's are cubic polynomials), summed over 2 dimensions.
const INTERPOLATION_ROUNDINGS: f64 = 16.0;

/// How many honest roundings of `rounding_allowance` a difference between two summation orders
/// (CPU and CUDA, two memory layouts) may hold: each side may be off the exact result by one, in
/// opposite directions.
pub const REORDERINGS: f64 = 2.0;

/// A float or float-list argument holding NaN.
fn nan_scalar(arg: &Arg) -> bool {
    match arg {
        Arg::Float(v) => v.is_nan(),
        Arg::FloatList(vs) => vs.iter().any(|v| v.is_nan()),
        _ => false,
    }
}

/// The dtype a promoted input gets, or None when it stays.
pub(super) fn promoted_kind(k: Kind, integers: bool) -> Option<Kind> {
    match k {
        Kind::Half | Kind::BFloat16 | Kind::Float => Some(Kind::Double),
        Kind::Bool | Kind::Int8 | Kind::Int16 | Kind::Int | Kind::Int64 | Kind::Uint8 if integers => Some(Kind::Double),
        Kind::ComplexHalf | Kind::ComplexFloat => Some(Kind::ComplexDouble),
        _ => None,
    }
}

/// When exactly one side raised (or the variant raised an error that is itself a bug), the
/// verdict is about errors; None when both returned (compare values) or both raised alike.
pub(super) fn consistency(original: &Called, variant: &Called) -> Option<CheckOutcome> {
    match (&original.outcome, &variant.outcome) {
        (Outcome::Returned { .. }, Outcome::Returned { .. }) => None,
        (Outcome::Raised { .. }, Outcome::Returned { .. }) => Some(CheckOutcome::Returned),
        (Outcome::Returned { .. }, Outcome::Raised { class, message, .. }) => Some(CheckOutcome::Raised { class: *class, message: message.clone() }),
        (Outcome::Raised { .. }, Outcome::Raised { class, message, .. }) => Some(match classify(*class, message) {
            ErrorKind::Internal { .. } | ErrorKind::Unchecked { .. } => CheckOutcome::Raised { class: *class, message: message.clone() },
            _ => CheckOutcome::BothRaised,
        }),
    }
}

/// How a variant's outputs relate to the original's.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Mode {
    /// Same dtypes, same values within tolerance.
    Same,
    /// `actual` is the original, `expected` the float64 reference: the reference is rounded to
    /// the original's dtype first; integer and bool outputs are not compared (near-ties may
    /// legitimately break differently in another precision).
    Promote,
}

/// Compares the outputs of two calls that both returned.
pub(super) fn compare_outputs(actual: &Called, expected: &Called, tol: &Tolerances, mode: Mode) -> CheckOutcome {
    compare_allowing(actual, expected, tol, mode, &[])
}

/// The reference NaN (not judged) wherever `input`, broadcast to an output, is a non-positive
/// integer: a pole of the gamma family (`tags::gamma_poles`).
fn unjudged_at_poles(reference: &mut Called, input: Option<&Tensor>) -> Result<(), tch::TchError> {
    let Some(x) = input.filter(|x| x.is_floating_point()) else { return Ok(()) };
    let x = x.f_to_kind(Kind::Double)?;
    let poles = x.f_le(0.0)?.f_logical_and(&x.f_eq_tensor(&x.f_floor()?)?)?;
    for t in reference.tensors.iter_mut().flatten() {
        if let Ok(at) = poles.f_broadcast_to(t.size()) {
            *t = t.f_masked_fill(&at, f64::NAN)?;
        }
    }
    Ok(())
}

/// `compare_outputs` with an allowance per element of output k (`allowance[k]`, added to atol).
pub(super) fn compare_allowing(actual: &Called, expected: &Called, tol: &Tolerances, mode: Mode, allowance: &[Option<Allowance>]) -> CheckOutcome {
    let (Outcome::Returned { outputs: a, .. }, Outcome::Returned { outputs: e, .. }) = (&actual.outcome, &expected.outcome) else {
        return CheckOutcome::BothRaised;
    };
    if a.len() != e.len() {
        return CheckOutcome::Structure { output: a.len().min(e.len()), what: format!("{} outputs against {}", a.len(), e.len()) };
    }
    let (mut max_abs, mut max_rel) = (0f64, 0f64);
    for (k, (x, y)) in a.iter().zip(e).enumerate() {
        match (x, y) {
            (Output::Tensor(tx), Output::Tensor(ty)) => {
                if mode == Mode::Same && tx.dtype != ty.dtype {
                    return CheckOutcome::Structure { output: k, what: format!("dtype {} against {}", dtype_name(tx.dtype), dtype_name(ty.dtype)) };
                }
                if tx.shape != ty.shape {
                    return CheckOutcome::Structure { output: k, what: format!("shape {:?} against {:?}", tx.shape, ty.shape) };
                }
                let floating = tx.dtype.is_some_and(|d| d.is_floating() || d.is_complex());
                if mode == Mode::Promote && !floating {
                    continue;
                }
                let (Some(Some(ta)), Some(Some(te))) = (actual.tensors.get(k), expected.tensors.get(k)) else { continue };
                let rounded;
                let te = match (mode, tx.dtype) {
                    (Mode::Promote, Some(d)) => match te.f_to_kind(kind(d)) {
                        Ok(t) => {
                            rounded = t;
                            &rounded
                        }
                        Err(e) => return CheckOutcome::Skipped(format!("rounding the reference failed: {e}")),
                    },
                    _ => te,
                };
                let t = tol.for_dtype(tx.dtype);
                let extra = Extra {
                    allowance: allowance.get(k).and_then(Option::as_ref).map(|a| &a.rounding),
                    no_headroom: allowance.get(k).and_then(Option::as_ref).map(|a| &a.no_headroom),
                    // A float64 original has no wider reference to call a value representable.
                    premature_in: tx.dtype.filter(|d| mode == Mode::Promote && (d.is_floating() || d.is_complex()) && !matches!(d, DType::Float64 | DType::Complex128)),
                    rounded_reference: mode == Mode::Promote,
                };
                match compare_with(ta, te, t, extra) {
                    Ok(c) => {
                        max_abs = max_abs.max(c.max_abs);
                        max_rel = max_rel.max(c.max_rel);
                        if let Some(m) = c.mismatch(k, tx.dtype, t) {
                            return CheckOutcome::Values(m);
                        }
                    }
                    Err(e) => return CheckOutcome::Skipped(format!("comparing output {k} failed: {e}")),
                }
            }
            (Output::Int(i), Output::Int(j)) if i != j => return scalar_mismatch(k, *i as f64, *j as f64, Tolerance::EXACT),
            (Output::Bool(i), Output::Bool(j)) if i != j => return scalar_mismatch(k, *i as u8 as f64, *j as u8 as f64, Tolerance::EXACT),
            (Output::Float(i), Output::Float(j)) if !tol.float64.close(*i, *j) => return scalar_mismatch(k, *i, *j, tol.float64),
            (Output::Int(_), Output::Int(_)) | (Output::Bool(_), Output::Bool(_)) | (Output::Float(_), Output::Float(_)) => {}
            (Output::None, Output::None) | (Output::Other, Output::Other) => {}
            (x, y) => return CheckOutcome::Structure { output: k, what: format!("{} against {}", kind_name(x), kind_name(y)) },
        }
    }
    CheckOutcome::Agree { max_abs, max_rel }
}

fn scalar_mismatch(output: usize, actual: f64, expected: f64, tolerance: Tolerance) -> CheckOutcome {
    let diff = (actual - expected).abs();
    CheckOutcome::Values(ValueMismatch {
        output,
        dtype: None,
        index: 0,
        actual,
        expected,
        mismatched: 1,
        total: 1,
        max_abs: diff,
        max_rel: if expected != 0.0 { diff / expected.abs() } else { 0.0 },
        tolerance,
        premature: None,
        squares_overflow: None,
        powers_overflow: None,
        strided: false,
        undetermined: false,
    })
}

fn dtype_name(d: Option<DType>) -> &'static str {
    d.map_or("(other)", DType::name)
}

fn kind_name(o: &Output) -> &'static str {
    match o {
        Output::Tensor(_) => "a tensor",
        Output::Int(_) => "an int",
        Output::Float(_) => "a float",
        Output::Bool(_) => "a bool",
        Output::None => "None",
        Output::Other => "another value",
    }
}

/// The original's first output alone (the in-place form returns only its mutated input).
pub(super) fn first_output(outcome: &Outcome) -> Outcome {
    match outcome {
        Outcome::Returned { outputs, micros } => Outcome::Returned { outputs: outputs.iter().take(1).cloned().collect(), micros: *micros },
        other => other.clone(),
    }
}

/// Creates this worker's CUDA context now, where CUDA can be used (see `cuda_available`); a
/// failure here shows again, with its reason, in the first `cuda` check.
pub fn warm_cuda() {
    if cuda_available().is_ok() {
        let _ = Tensor::f_zeros([1i64], (Kind::Float, Device::Cuda(0)));
    }
}

/// Whether CUDA can be used here, or why not. Asked once per worker: libtorch's CUDA library
/// (loaded at start by `runtime::init`, see `cuda`), then `torch::cuda::is_available()`.
pub fn cuda_available() -> &'static Result<(), String> {
    static STATUS: OnceLock<Result<(), String>> = OnceLock::new();
    STATUS.get_or_init(|| {
        super::cuda::load().clone()?;
        if !tch::Cuda::is_available() {
            return Err("CUDA is not available: torch::cuda::is_available() is false".into());
        }
        // SAFETY: plain configuration call.
        unsafe { super::ffi::sfz_cuda_strict() };
        Ok(())
    })
}
