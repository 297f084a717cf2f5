//! Metamorphic relations in the worker: both sides of a `variant::Relation` evaluated
//! elementwise on the case's tensors (and the calls they make), compared where the guard holds.
//!
//! Arithmetic follows torch's type promotion, as the same expression written in Python would
//! (a float32 input scaled by `s` stays float32, so the scaled call sees what a user's call
//! would); the two sides are compared in float64 with the tolerance of the left side's dtype. A
//! case says nothing when a scaled argument leaves its dtype's range, overflowing or underflowing
//! to zero or a subnormal (it is no longer the input the relation speaks of), when a call of
//! either side raises, or when the guard holds nowhere; and an element says nothing where the
//! right side is not finite or beyond the left side's dtype (the exact value is not representable
//! there, so an inf on the left is honest). A low-precision case that breaks the relation is a
//! finding only where the same values in double precision keep it, and no failure is judged
//! where moving the inputs by their rounding moves the right side beyond the tolerance.
use tch::{Kind, Tensor};

use sfz_wire::binding::ArgSource;
use sfz_wire::case::{Arg, Case, DType, TensorRecipe};
use sfz_wire::outcome::{Outcome, Output};
use sfz_wire::tags;
use sfz_wire::variant::relation::{case_seed, Callee, RelExpr, RelFn, RelOp, FAILS_IN_FLOAT64};
use sfz_wire::variant::{promote_dtype_args, Accuracy, CheckOutcome, Relation, Tolerance};

use super::checks::{promoted_kind, Failure};
use super::compare::{compare_with, Comparison, Extra};
use super::conditioning;
use super::executor::{Called, Executor, Inputs};
use super::materialize::kind;

/// A value of a relation: a tensor, or a number (a scalar argument, a constant, `s`).
enum Val {
    T(Tensor),
    N(f64),
}

impl Val {
    fn tensor(&self) -> Result<Tensor, tch::TchError> {
        match self {
            Val::T(t) => Ok(t.shallow_clone()),
            Val::N(x) => Tensor::f_from_slice(&[*x]).and_then(|t| t.f_reshape([0i64; 0])),
        }
    }
}

/// What the sides of one relation are evaluated against.
struct Scope<'a> {
    case: &'a Case,
    main: &'a Called,
    inputs: &'a Inputs,
    scalar: f64,
    /// BLAS and LAPACK: a changed argument beyond the safe range of products says nothing.
    safe_range_only: bool,
}

impl Executor {
    pub(super) fn relation(&mut self, relation: &Relation, accuracy: Accuracy, case: &Case, main: &Called, inputs: &Inputs) -> Result<CheckOutcome, Failure> {
        if !matches!(main.outcome, Outcome::Returned { .. }) {
            return Err(Failure::Skip("the call raised".into()));
        }
        let safe_range_only = accuracy == Accuracy::BackwardInSafeRange;
        if safe_range_only {
            if let Some(why) = conditioning::beyond_safe_range(case, inputs)? {
                return Err(Failure::Skip(why));
            }
        }
        let scope = Scope { case, main, inputs, scalar: relation.scalar_for(case_seed(case)).unwrap_or(0.0), safe_range_only };
        let (c, dtype, tol) = self.sides(&scope, relation, accuracy, None)?;
        // No premature verdict: `sides` asks for none.
        let Some(mut m) = c.mismatch(0, dtype, tol) else {
            return Ok(CheckOutcome::Agree { max_abs: c.max_abs, max_rel: c.max_rel });
        };
        // A subnormal holds too few digits for the tolerance (sgn of complex128 values near
        // 3e-321 divides by a modulus rounded to 10 bits): a finite difference there is rounding,
        // while an inf or NaN against a number stays a finding.
        if m.actual.is_finite() && m.expected.is_finite() && any_subnormal(&inputs.tensors)? {
            return Err(Failure::Skip("a finite difference on subnormal inputs, which hold too few digits for the tolerance".into()));
        }
        // The case in double precision, called once for both questions below.
        let case = promote_dtype_args(&widened(scope.case));
        let inputs = scope.inputs.map(|_, t| wide(t))?;
        let main = self.invoke(case.op, &case, &inputs, &[], true)?;
        let double = Scope { case: &case, main: &main, inputs: &inputs, ..scope };
        if dtype.and_then(DType::unit_roundoff).is_some_and(|u| u > f64::EPSILON) && self.fails_in_float64(&double, relation, accuracy, dtype)? {
            return Err(Failure::Skip(FAILS_IN_FLOAT64.into()));
        }
        if self.ill_conditioned(&scope, &double, relation, accuracy, dtype)? {
            return Err(Failure::Skip("moving the inputs by their rounding moves the right side beyond the tolerance: the input is too ill-conditioned to judge".into()));
        }
        // Scaled up past where a reduction's squares fit: the cause, for grouping findings. Naming
        // it is best effort; a failure there must not cost the finding.
        if scope.scalar.abs() > 1.0 && tags::class(self.op_name(scope.case.op)) != tags::OpClass::Pointwise {
            let scaled = relation.scaled_params().into_iter().flat_map(|p| scope.inputs.of(p));
            m.squares_overflow = conditioning::squares_overflow(scaled, scope.scalar.abs(), m.expected).ok().flatten();
        }
        Ok(CheckOutcome::Values(m))
    }

    /// Whether the right side at this input is ill-conditioned: computed in double precision
    /// (the function, not its low-precision kernel, whose own defect may flip at a nearby input),
    /// moving the case's floating inputs by a rounding of their original dtype moves the right
    /// side beyond the relation's tolerance (the pseudo-inverse of a singular matrix with rcond
    /// 0, whose inverted noise no relation can speak of), or makes the call raise.
    fn ill_conditioned(&mut self, original: &Scope, double: &Scope, relation: &Relation, accuracy: Accuracy, dtype: Option<DType>) -> Result<bool, Failure> {
        let mut index = 0u64;
        let moved = original.inputs.map(|_, t| {
            index += 1;
            conditioning::nudged(&wide(t)?, t.f_kind()?, case_seed(original.case) ^ index)
        })?;
        let there_called = self.invoke(double.case.op, double.case, &moved, &[], true)?;
        match (&double.main.outcome, &there_called.outcome) {
            (Outcome::Returned { .. }, Outcome::Returned { .. }) => {}
            (Outcome::Returned { .. }, _) => return Ok(true),
            _ => return Ok(false),
        }
        let (here, there) = (double, &Scope { main: &there_called, inputs: &moved, ..*double });
        let (Ok(a), Ok(b)) = (self.eval(here, &relation.rhs).and_then(|v| Ok(v.tensor()?)), self.eval(there, &relation.rhs).and_then(|v| Ok(v.tensor()?))) else {
            return Ok(false);
        };
        let (a, b) = in_double(&a, &b)?;
        if a.size() != b.size() {
            return Ok(true);
        }
        let tol = relation.tolerances.for_dtype(dtype);
        Ok(compare_sides(&b, &a, tol, accuracy)?.mismatch(0, dtype, tol).is_some())
    }

    /// Whether the relation also fails, by the tolerance and the range of `dtype`, when the
    /// case's float16, bfloat16, float32 and complex64 inputs are computed in double precision.
    /// Where it does, the relation itself does not hold at this input (`pdist` with p = 0 is not
    /// homogeneous, whatever the default p it was validated with) or the input is too
    /// ill-conditioned to tell; a low-precision failure is a finding only where float64 keeps
    /// the relation. False when the float64 evaluation cannot tell (a call raised, a guard
    /// holds nowhere).
    fn fails_in_float64(&mut self, double: &Scope, relation: &Relation, accuracy: Accuracy, dtype: Option<DType>) -> Result<bool, Failure> {
        if !matches!(double.main.outcome, Outcome::Returned { .. }) {
            return Ok(false);
        }
        Ok(match self.sides(double, relation, accuracy, Some(dtype)) {
            Ok((c, dtype, tol)) => c.mismatch(0, dtype, tol).is_some(),
            Err(_) => false,
        })
    }

    /// Both sides evaluated and compared in float64, with the tolerance and range of the left
    /// side's dtype, or of `judged_as` when given.
    fn sides(&mut self, scope: &Scope, relation: &Relation, accuracy: Accuracy, judged_as: Option<Option<DType>>) -> Result<(Comparison, Option<DType>, Tolerance), Failure> {
        let lhs = self.eval(scope, &relation.lhs)?.tensor()?;
        let rhs = self.eval(scope, &relation.rhs)?.tensor()?;
        let dtype = judged_as.unwrap_or_else(|| rounding_dtype(&lhs));
        let tol = relation.tolerances.for_dtype(dtype);
        let complex = lhs.is_complex() || rhs.is_complex();
        let (mut lhs, mut rhs) = in_double(&lhs, &rhs)?;
        let shape = Tensor::f_broadcast_tensors(&[&lhs, &rhs]).map_err(|e| Failure::Skip(format!("the two sides do not broadcast: {e}")))?;
        (lhs, rhs) = (shape[0].shallow_clone(), shape[1].shallow_clone());
        if let Some(g) = &relation.guard {
            let holds = self.eval(scope, g)?.tensor()?.f_to_kind(Kind::Bool)?;
            // A complex side's parts share their element's guard.
            let holds = if complex { holds.f_unsqueeze(-1)? } else { holds }.f_broadcast_to(lhs.size())?;
            if !bool::try_from(holds.f_any()?)? {
                return Err(Failure::Skip("the guard holds for no element".into()));
            }
            // Where the guard fails both sides are 0, so they agree.
            let zero = Tensor::f_zeros_like(&lhs)?;
            lhs = lhs.f_where_self(&holds, &zero)?;
            rhs = rhs.f_where_self(&holds, &zero)?;
        }
        // The relation speaks of values the left side's dtype can hold: where the right side is
        // not finite (the original call overflowed) or beyond that dtype's range, an inf on the
        // left is honest, so both sides count as 0 there.
        if let Some((max, _, _)) = dtype.and_then(DType::limits) {
            let speaks = rhs.f_isfinite()?.f_logical_and(&rhs.f_abs()?.f_le(max)?)?;
            // A complex element speaks with both parts: beside a part that overflowed, the other
            // one's textbook product (`ac - bd`) may have overflowed on the way, honestly.
            let speaks = if complex { speaks.f_all_dim(-1, true)?.f_broadcast_to(lhs.size())? } else { speaks };
            if !bool::try_from(speaks.f_any()?)? {
                return Err(Failure::Skip("the right side is beyond the left side's dtype everywhere".into()));
            }
            let zero = Tensor::f_zeros_like(&lhs)?;
            lhs = lhs.f_where_self(&speaks, &zero)?;
            rhs = rhs.f_where_self(&speaks, &zero)?;
        }
        // A right side of zeros says nothing (logical_not of nonzeros), nor does a boolean one
        // that is the same everywhere (eq or ne of random floats): a relation kept on such cases
        // would hold vacuously.
        if rhs.numel() == 0 || !bool::try_from(rhs.f_ne(0.0)?.f_any()?)? {
            return Err(Failure::Skip("the right side is 0 everywhere".into()));
        }
        if dtype == Some(DType::Bool) && bool::try_from(rhs.f_eq_tensor(&rhs.f_flatten(0, -1)?.f_get(0)?)?.f_all()?)? {
            return Err(Failure::Skip("the right side is one boolean everywhere".into()));
        }
        // In norm for reductions: the smallest eigenvalues of a scaled rank-one matrix are
        // rounding noise of the largest one, on both sides.
        Ok((compare_sides(&lhs, &rhs, tol, accuracy)?, dtype, tol))
    }

    fn eval(&mut self, scope: &Scope, e: &RelExpr) -> Result<Val, Failure> {
        Ok(match e {
            RelExpr::Result(k) => {
                self.determined(scope.case.op, *k)?;
                output(scope.main, *k)?
            }
            RelExpr::Param(p) => argument(scope, *p)?,
            RelExpr::Scalar => Val::N(scope.scalar),
            RelExpr::Const(c) => Val::N(*c),
            RelExpr::Unary(f, a) => unary(*f, self.eval(scope, a)?)?,
            RelExpr::Binary(op, a, b) => {
                let (a, b) = (self.eval(scope, a)?, self.eval(scope, b)?);
                binary(*op, a, b)?
            }
            RelExpr::Call { callee, args, output: k } => {
                let mut values = Vec::with_capacity(args.len());
                for (p, a) in args {
                    values.push((*p, self.eval(scope, a)?));
                }
                let called = match callee {
                    Callee::Itself => {
                        self.determined(scope.case.op, *k)?;
                        self.call_itself(scope, values)?
                    }
                    Callee::Op { index, .. } => self.call_other(*index, values)?,
                    Callee::Api(name) => return Err(Failure::Skip(format!("`{name}` is not loaded in the worker"))),
                };
                if let Outcome::Raised { message, .. } = &called.outcome {
                    return Err(Failure::Skip(format!("a call of the relation raised: {}", message.lines().next().unwrap_or(""))));
                }
                output(&called, *k)?
            }
        })
    }

    /// Skips a relation reading output `k` of operator `op` where the math leaves that output
    /// open (`tags::not_unique`: eigenvalues in no order, singular vectors up to sign): two
    /// correct calls need not agree element by element.
    fn determined(&self, op: u32, k: usize) -> Result<(), Failure> {
        if tags::not_unique(self.op_name(op)).contains(&k) {
            return Err(Failure::Skip(format!("output {k} is determined only up to order, sign or phase")));
        }
        Ok(())
    }

    /// The API itself, with the arguments in `values` replaced and the others as in the case.
    fn call_itself(&mut self, scope: &Scope, values: Vec<(usize, Val)>) -> Result<Called, Failure> {
        let mut case = scope.case.clone();
        let mut replaced: Vec<(usize, Tensor)> = Vec::new();
        for (p, v) in values {
            let Some(arg) = case.args.get_mut(p) else { return Err(Failure::Skip(format!("the case has no argument {p}"))) };
            // The dtype the argument has in the call: its recipe's, unless a forward filled it
            // (`grad_output: like(result)` takes the forward's output dtype).
            let given = match &*arg {
                Arg::Tensor(r) => Some(scope.inputs.of(p).first().map_or(Ok(kind(r.dtype)), Tensor::f_kind)?),
                _ => None,
            };
            let exact = |k: Kind| matches!(k, Kind::Half | Kind::BFloat16 | Kind::Float | Kind::Double | Kind::ComplexHalf | Kind::ComplexFloat | Kind::ComplexDouble);
            match (v, &*arg) {
                // Negated or scaled, an integer wraps or truncates: no longer the input changed.
                (Val::T(_), Arg::Tensor(_)) if !given.is_some_and(exact) => {
                    return Err(Failure::Skip("an integer argument cannot be negated or scaled exactly".into()));
                }
                (Val::T(t), Arg::Tensor(_)) => {
                    // The argument keeps its dtype: a scaled float16 input is a float16 input.
                    let t = t.f_to_kind(given.unwrap_or(Kind::Double))?;
                    let was_finite = scope.inputs.of(p).iter().all(|x| all_finite(x).unwrap_or(false));
                    if was_finite && !all_finite(&t)? {
                        return Err(Failure::Skip("a changed argument left its dtype's range".into()));
                    }
                    // A sum over the changed argument (an FFT's, a norm's) past its dtype's range
                    // overflows honestly on that side only.
                    let summed = tags::class(self.op_name(case.op)) != tags::OpClass::Pointwise;
                    if let Some((max, ..)) = rounding_dtype(&t).and_then(DType::limits).filter(|_| summed) {
                        if conditioning::finite_magnitude_sum(&t)? > max {
                            return Err(Failure::Skip("a changed argument's magnitudes sum beyond its dtype's range".into()));
                        }
                    }
                    if let Some(before) = scope.inputs.of(p).first() {
                        if underflowed(before, &t)? {
                            return Err(Failure::Skip("a changed argument underflowed (an element became zero or subnormal)".into()));
                        }
                    }
                    if scope.safe_range_only {
                        if let Some(why) = conditioning::beyond_safe_range_of(std::slice::from_ref(&t), conditioning::scalar_factor(scope.case))? {
                            return Err(Failure::Skip(format!("a changed argument: {why}")));
                        }
                    }
                    replaced.push((p, t));
                }
                (Val::N(x), Arg::Int(_)) if x.fract() == 0.0 && x.abs() < 9.0e15 => *arg = Arg::Int(x as i64),
                (Val::N(x), Arg::Float(_) | Arg::Int(_)) => *arg = Arg::Float(x),
                (Val::N(x), Arg::Tensor(_)) => replaced.push((p, Tensor::f_full_like(&scope.inputs.of(p)[0], x)?.f_to_kind(given.unwrap_or(Kind::Double))?)),
                _ => return Err(Failure::Skip(format!("argument {p} cannot take the relation's value"))),
            }
        }
        let inputs = scope.inputs.map(|arg, t| match replaced.iter().find(|(p, _)| *p == arg) {
            Some((_, new)) => Ok(new.shallow_clone()),
            None => Ok(t.shallow_clone()),
        })?;
        Ok(self.invoke(case.op, &case, &inputs, &[], true)?)
    }

    /// Another API's operator, with the given arguments (keyword by parameter index) and its
    /// defaults for the rest.
    fn call_other(&mut self, op: u32, values: Vec<(usize, Val)>) -> Result<Called, Failure> {
        let params =
            self.op(op).map_err(Failure::from)?.binding.args.iter().filter_map(|a| if let ArgSource::Param { index, .. } = a { Some(index + 1) } else { None }).max().unwrap_or(0);
        let mut args = vec![Arg::Omitted; params];
        let mut tensors = Vec::new();
        let mut ranges = Vec::with_capacity(params);
        for (p, slot) in args.iter_mut().enumerate() {
            let start = tensors.len();
            match values.iter().find(|(q, _)| *q == p).map(|(_, v)| v) {
                Some(Val::T(t)) => {
                    let dtype = rounding_dtype(t).unwrap_or(DType::Float64);
                    *slot = Arg::Tensor(placeholder(dtype, t.size()));
                    tensors.push(t.shallow_clone());
                }
                Some(Val::N(x)) => *slot = Arg::Float(*x),
                None => {}
            }
            ranges.push((start, tensors.len()));
        }
        let case = Case { op, args, forward: None };
        Ok(self.invoke(op, &case, &Inputs { tensors, ranges }, &[], true)?)
    }
}

/// `lhs` against `rhs` (float64, same shape) with `tol`. Only pointwise math promises each
/// element to its own precision; a reduction or a factorization promises a result close in
/// norm, so there an element may differ by `rtol` times the right side's largest magnitude.
fn compare_sides(lhs: &Tensor, rhs: &Tensor, tol: Tolerance, accuracy: Accuracy) -> Result<Comparison, tch::TchError> {
    let normwise = match accuracy {
        Accuracy::Forward => None,
        _ => Some(rhs.f_abs()?.f_max()?.f_mul_scalar(tol.rtol)?),
    };
    compare_with(lhs, rhs, tol, Extra { allowance: normwise.as_ref(), ..Extra::default() })
}

/// A copy of a tensor as the float64 reference takes it (`checks::promoted_kind`, integers as
/// they are). Always a copy: a mutating operator called on it must leave the case's inputs alone.
fn wide(t: &Tensor) -> Result<Tensor, tch::TchError> {
    let k = t.f_kind()?;
    t.f_to_dtype(promoted_kind(k, false).unwrap_or(k), false, true)
}

/// `case` with its float16, bfloat16 and float32 tensors float64 and its complex64 ones
/// complex128 (recipes only: the values are the caller's).
fn widened(case: &Case) -> Case {
    let widen = |r: &mut TensorRecipe| {
        r.dtype = match r.dtype {
            DType::Float16 | DType::BFloat16 | DType::Float32 => DType::Float64,
            DType::Complex64 => DType::Complex128,
            d => d,
        }
    };
    let mut case = case.clone();
    for arg in &mut case.args {
        match arg {
            Arg::Tensor(r) => widen(r),
            Arg::TensorList(rs) => rs.iter_mut().for_each(widen),
            _ => {}
        }
    }
    case
}

/// Output `k` of a call: a tensor, or a number.
fn output(called: &Called, k: usize) -> Result<Val, Failure> {
    let Outcome::Returned { outputs, .. } = &called.outcome else { return Err(Failure::Skip("the call raised".into())) };
    match (outputs.get(k), called.tensors.get(k)) {
        (Some(Output::Tensor(_)), Some(Some(t))) => Ok(Val::T(t.shallow_clone())),
        (Some(Output::Float(x)), _) => Ok(Val::N(*x)),
        (Some(Output::Int(i)), _) => Ok(Val::N(*i as f64)),
        (Some(Output::Bool(b)), _) => Ok(Val::N(f64::from(u8::from(*b)))),
        _ => Err(Failure::Skip(format!("the call has no numeric output {k}"))),
    }
}

/// Argument `p` of the case: its tensor as the call saw it, or its number.
fn argument(scope: &Scope, p: usize) -> Result<Val, Failure> {
    match scope.case.args.get(p) {
        Some(Arg::Tensor(_)) => scope.inputs.of(p).first().map(|t| Val::T(t.shallow_clone())).ok_or_else(|| Failure::Skip(format!("argument {p} has no tensor"))),
        Some(Arg::Int(i)) => Ok(Val::N(*i as f64)),
        Some(Arg::Float(x)) => Ok(Val::N(*x)),
        Some(Arg::Bool(b)) => Ok(Val::N(f64::from(u8::from(*b)))),
        _ => Err(Failure::Skip(format!("argument {p} is not a number or a tensor"))),
    }
}

fn unary(f: RelFn, v: Val) -> Result<Val, Failure> {
    if let Val::N(x) = v {
        let y = match f {
            RelFn::Neg => -x,
            RelFn::Abs => x.abs(),
            RelFn::Log => x.ln(),
            RelFn::Exp => x.exp(),
            RelFn::Sqrt => x.sqrt(),
            RelFn::Log1p => x.ln_1p(),
            RelFn::Expm1 => x.exp_m1(),
            RelFn::Not => f64::from(u8::from(x == 0.0)),
            RelFn::Finite => f64::from(u8::from(x.is_finite())),
        };
        return Ok(Val::N(y));
    }
    let Val::T(t) = v else { unreachable!("numbers returned above") };
    Ok(Val::T(match f {
        // torch's complex `neg` keeps a zero part's sign (-(-5+0j) is 5+0j), so an odd function
        // would meet its branch cut from the wrong side; a product with -1 flips it, as IEEE
        // negation does (5-0j). Real tensors are the same either way.
        RelFn::Neg if t.is_complex() => t.f_mul_scalar(-1.0)?,
        RelFn::Neg => t.f_neg()?,
        RelFn::Abs => t.f_abs()?,
        RelFn::Log => t.f_log()?,
        RelFn::Exp => t.f_exp()?,
        RelFn::Sqrt => t.f_sqrt()?,
        RelFn::Log1p => t.f_log1p()?,
        RelFn::Expm1 => t.f_expm1()?,
        RelFn::Not => t.f_logical_not()?,
        RelFn::Finite => t.f_isfinite()?,
    }))
}

fn binary(op: RelOp, a: Val, b: Val) -> Result<Val, Failure> {
    if let (Val::N(x), Val::N(y)) = (&a, &b) {
        let (x, y) = (*x, *y);
        let truth = |c: bool| f64::from(u8::from(c));
        return Ok(Val::N(match op {
            RelOp::Add => x + y,
            RelOp::Sub => x - y,
            RelOp::Mul => x * y,
            RelOp::Div => x / y,
            RelOp::Pow => x.powf(y),
            RelOp::Lt => truth(x < y),
            RelOp::Le => truth(x <= y),
            RelOp::Gt => truth(x > y),
            RelOp::Ge => truth(x >= y),
            RelOp::And => truth(x != 0.0 && y != 0.0),
            RelOp::Or => truth(x != 0.0 || y != 0.0),
        }));
    }
    // A number beside a tensor is a Python scalar: it does not promote the tensor's dtype.
    let t = match (&a, &b) {
        (Val::T(x), Val::N(y)) => match op {
            RelOp::Add => x.f_add_scalar(*y)?,
            RelOp::Sub => x.f_sub_scalar(*y)?,
            RelOp::Mul => x.f_mul_scalar(*y)?,
            RelOp::Div => x.f_div_scalar(*y)?,
            RelOp::Pow => x.f_pow_tensor_scalar(*y)?,
            RelOp::Lt => x.f_lt(*y)?,
            RelOp::Le => x.f_le(*y)?,
            RelOp::Gt => x.f_gt(*y)?,
            RelOp::Ge => x.f_ge(*y)?,
            RelOp::And => x.f_logical_and(&b.tensor()?)?,
            RelOp::Or => x.f_logical_or(&b.tensor()?)?,
        },
        (Val::N(x), Val::T(y)) => match op {
            RelOp::Add => y.f_add_scalar(*x)?,
            RelOp::Sub => y.f_neg()?.f_add_scalar(*x)?,
            RelOp::Mul => y.f_mul_scalar(*x)?,
            RelOp::Div => y.f_reciprocal()?.f_mul_scalar(*x)?,
            RelOp::Pow => Tensor::f_pow_scalar(*x, y)?,
            RelOp::Lt => y.f_gt(*x)?,
            RelOp::Le => y.f_ge(*x)?,
            RelOp::Gt => y.f_lt(*x)?,
            RelOp::Ge => y.f_le(*x)?,
            RelOp::And => y.f_logical_and(&a.tensor()?)?,
            RelOp::Or => y.f_logical_or(&a.tensor()?)?,
        },
        (Val::T(x), Val::T(y)) => match op {
            RelOp::Add => x.f_add(y)?,
            RelOp::Sub => x.f_sub(y)?,
            RelOp::Mul => x.f_mul(y)?,
            RelOp::Div => x.f_div(y)?,
            RelOp::Pow => x.f_pow(y)?,
            RelOp::Lt => x.f_lt_tensor(y)?,
            RelOp::Le => x.f_le_tensor(y)?,
            RelOp::Gt => x.f_gt_tensor(y)?,
            RelOp::Ge => x.f_ge_tensor(y)?,
            RelOp::And => x.f_logical_and(y)?,
            RelOp::Or => x.f_logical_or(y)?,
        },
        (Val::N(_), Val::N(_)) => unreachable!("numbers returned above"),
    };
    Ok(Val::T(t))
}

/// Whether a nonzero element of `before` is zero or subnormal in `after`: scaled down that far
/// an argument has lost its digits, and is no longer the input scaled.
fn underflowed(before: &Tensor, after: &Tensor) -> Result<bool, tch::TchError> {
    let Some((_, normal, _)) = rounding_dtype(after).and_then(|d| d.limits()) else { return Ok(false) };
    if before.size() != after.size() || (!after.f_is_floating_point()? && !after.f_is_complex()?) {
        return Ok(false);
    }
    let lost = before.f_ne(0.0)?.f_logical_and(&after.f_abs()?.f_lt(normal)?)?;
    bool::try_from(lost.f_any()?)
}

/// Whether a floating or complex tensor holds a nonzero magnitude below its dtype's smallest
/// normal.
fn any_subnormal(tensors: &[Tensor]) -> Result<bool, tch::TchError> {
    for t in tensors {
        let Some((_, normal, _)) = rounding_dtype(t).and_then(|d| d.limits()) else { continue };
        if !t.f_is_floating_point()? && !t.f_is_complex()? {
            continue;
        }
        // A complex tensor by its parts: either may be the subnormal one.
        let parts = if t.f_is_complex()? { t.f_view_as_real()? } else { t.shallow_clone() };
        let m = parts.f_abs()?;
        if bool::try_from(m.f_ne(0.0)?.f_logical_and(&m.f_lt(normal)?)?.f_any()?)? {
            return Ok(true);
        }
    }
    Ok(false)
}

fn all_finite(t: &Tensor) -> Result<bool, tch::TchError> {
    if !t.f_is_floating_point()? && !t.f_is_complex()? {
        return Ok(true);
    }
    bool::try_from(t.f_isfinite()?.f_all()?)
}

/// Both sides in double precision; complex ones (either side complex makes both so) as their
/// real and imaginary parts in a trailing dimension of 2, so that neither part is dropped.
fn in_double(lhs: &Tensor, rhs: &Tensor) -> Result<(Tensor, Tensor), tch::TchError> {
    if lhs.is_complex() || rhs.is_complex() {
        let parts = |t: &Tensor| t.f_to_kind(Kind::ComplexDouble).and_then(|c| c.f_view_as_real());
        Ok((parts(lhs)?, parts(rhs)?))
    } else {
        Ok((lhs.f_to_kind(Kind::Double)?, rhs.f_to_kind(Kind::Double)?))
    }
}

/// The dtype whose range and rounding a tensor has: its own, or float16 for complex32 (`chalf`),
/// no dtype of a case, whose components are float16's.
pub(super) fn rounding_dtype(t: &Tensor) -> Option<DType> {
    super::materialize::dtype_of(t).or_else(|| (t.f_kind().ok()? == Kind::ComplexHalf).then_some(DType::Float16))
}

/// A recipe standing for a computed tensor: the call reads the tensor, not the recipe.
fn placeholder(dtype: DType, shape: Vec<i64>) -> TensorRecipe {
    TensorRecipe { dtype, shape, fill: sfz_wire::case::Fill::Constant(0.0), seed: 0, layout: Default::default(), specials: Vec::new() }
}
