//! Evaluating constraints on concrete values, independently of the z3 encoding.
//!
//! The generator uses it for constraints the solver does not see (floats, tensor values), the
//! oracles for `ensures` on outputs, and the tests to check the solver's models. It implements
//! the language's rules directly: an index out of range makes its comparison false, and a
//! constraint that mentions an optional parameter (other than in a None test) holds when that
//! parameter is None. Tensors are known by dtype, shape and bounds on their values, never by
//! their elements; what those cannot decide is `None` (unknown).
use crate::spec::{ApiSpec, BinOp, Builtin, Prop, TExpr, UnOp, Value};
use crate::wire::case::{Arg, DType, Fill, TensorRecipe};
use crate::wire::outcome::{Output, TensorInfo};

/// What is known of a tensor.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorVal {
    pub dtype: Option<DType>,
    pub shape: Vec<i64>,
    /// Every element e satisfies `min <= e` and `e < max` (or `e <= max` when `max_closed`).
    /// Unknown bounds are infinite.
    pub min: f64,
    pub max: f64,
    pub max_closed: bool,
    /// Whether some element may be NaN or infinite.
    pub nonfinite: bool,
    /// Whether some element may be NaN.
    pub nan: bool,
    pub contiguous: Option<bool>,
}

impl TensorVal {
    pub fn numel(&self) -> i64 {
        self.shape.iter().product()
    }

    /// What a recipe will produce.
    pub fn of_recipe(r: &TensorRecipe) -> TensorVal {
        let (mut min, mut max, mut closed) = match r.fill {
            Fill::Uniform { lo, hi } => (lo, hi, false),
            Fill::Int { lo, hi } => (lo as f64, (hi - 1).max(lo) as f64, true),
            Fill::Constant(v) => (v, v, true),
        };
        // Casting to an integral dtype truncates, which stays within the closed bounds.
        if r.dtype.is_integral() || r.dtype == DType::Bool {
            min = min.trunc();
            max = if closed { max.trunc() } else { (max - f64::EPSILON * max.abs().max(1.0)).trunc() };
            closed = true;
        }
        if r.dtype == DType::Bool {
            min = min.clamp(0.0, 1.0).min(1.0);
            max = max.clamp(0.0, 1.0);
        }
        let mut nonfinite = false;
        let mut nan = false;
        for (_, s) in &r.specials {
            let v = s.value();
            nan |= v.is_nan();
            if v.is_finite() {
                min = min.min(v);
                if v >= max {
                    max = v;
                    closed = true;
                }
            } else {
                nonfinite = true;
            }
        }
        TensorVal {
            dtype: Some(r.dtype),
            shape: r.shape.clone(),
            min,
            max,
            max_closed: closed,
            nonfinite,
            nan,
            contiguous: Some(r.layout == crate::wire::case::Layout::Contiguous),
        }
    }

    /// What the worker observed of an output.
    pub fn of_output(t: &TensorInfo) -> TensorVal {
        TensorVal {
            dtype: t.dtype,
            shape: t.shape.clone(),
            min: t.min.unwrap_or(f64::NEG_INFINITY),
            max: t.max.unwrap_or(f64::INFINITY),
            max_closed: true,
            nonfinite: t.nan > 0 || t.inf > 0,
            nan: t.nan > 0,
            contiguous: None,
        }
    }
}

/// A concrete value.
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Dtype(DType),
    DtypeSet(Vec<DType>),
    List(Vec<Val>),
    Tensor(TensorVal),
    /// The elements of a tensor.
    Values(TensorVal),
    Range {
        lo: f64,
        hi: f64,
        inclusive: bool,
    },
    /// Nothing is known (an output that is not a tensor, a failed lookup).
    Unknown,
}

impl Val {
    pub fn of_arg(a: &Arg) -> Val {
        match a {
            Arg::None | Arg::Omitted => Val::None,
            Arg::Bool(b) => Val::Bool(*b),
            Arg::Int(i) => Val::Int(*i),
            Arg::Float(f) => Val::Float(*f),
            Arg::Str(s) => Val::Str(s.clone()),
            Arg::Dtype(d) => Val::Dtype(*d),
            Arg::IntList(v) => Val::List(v.iter().map(|&i| Val::Int(i)).collect()),
            Arg::FloatList(v) => Val::List(v.iter().map(|&f| Val::Float(f)).collect()),
            Arg::BoolList(v) => Val::List(v.iter().map(|&b| Val::Bool(b)).collect()),
            Arg::Tensor(t) => Val::Tensor(TensorVal::of_recipe(t)),
            Arg::TensorList(ts) => Val::List(ts.iter().map(|t| Val::Tensor(TensorVal::of_recipe(t))).collect()),
        }
    }

    pub fn of_output(o: &Output) -> Val {
        match o {
            Output::Tensor(t) => Val::Tensor(TensorVal::of_output(t)),
            Output::Int(i) => Val::Int(*i),
            Output::Float(f) => Val::Float(*f),
            Output::Bool(b) => Val::Bool(*b),
            Output::None => Val::None,
            Output::Other => Val::Unknown,
        }
    }

    fn num(&self) -> Option<f64> {
        match self {
            Val::Int(i) => Some(*i as f64),
            Val::Float(f) => Some(*f),
            Val::Bool(b) => Some(*b as i64 as f64),
            _ => None,
        }
    }
}

/// Values of the parameters (and outputs, for `ensures`).
pub struct Bindings<'a> {
    pub params: &'a [Val],
    pub results: &'a [Val],
}

/// Evaluates a constraint: Some(true/false), or None when the known facts cannot decide it.
/// `mentioned` are the constraint's parameters and `optional` says which parameters are optional.
pub fn holds(e: &TExpr, b: &Bindings, mentioned: &[usize], optional: &[bool]) -> Option<bool> {
    holds_reading(e, b, mentioned, optional, Bounds::Fill)
}

/// How a tensor's value bounds read.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Bounds {
    /// The range a recipe fills from: its elements may lie anywhere in it, so a range reaching
    /// outside a value constraint breaks it.
    Fill,
    /// The range a case's elements were drawn from: a few elements may all have landed inside
    /// a constraint's part of it, so only a range wholly outside surely breaks it. For a case
    /// that ran, whose values nobody recorded.
    Drawn,
}

/// `holds`, with the tensors' value bounds read as `bounds` says.
pub fn holds_reading(e: &TExpr, b: &Bindings, mentioned: &[usize], optional: &[bool], bounds: Bounds) -> Option<bool> {
    // The optional-parameter rule: a None parameter mentioned beyond a None test makes it vacuous.
    for &i in mentioned {
        if optional.get(i).copied().unwrap_or(false) && b.params.get(i) == Some(&Val::None) && e.mentions_beyond_none_test(i) {
            return Some(true);
        }
    }
    let mut ev = Evaluator { b, bound: Vec::new(), bounds };
    ev.truth(e)
}

/// Whether a constraint holds only vacuously: an optional parameter it mentions (other than in a
/// None test) is None.
pub fn vacuous(e: &TExpr, b: &Bindings, mentioned: &[usize], optional: &[bool]) -> bool {
    mentioned.iter().any(|&i| optional.get(i).copied().unwrap_or(false) && b.params.get(i) == Some(&Val::None) && e.mentions_beyond_none_test(i))
}

/// Whether the arguments satisfy every `requires` constraint (None where undecidable).
pub fn conforms(api: &ApiSpec, args: &[Arg]) -> Vec<Option<bool>> {
    conforms_reading(api, args, Bounds::Fill)
}

/// `conforms`, with the tensors' value bounds read as `bounds` says (`Drawn` for a case that
/// ran, whose few elements may all lie inside a constraint's range).
pub fn conforms_reading(api: &ApiSpec, args: &[Arg], bounds: Bounds) -> Vec<Option<bool>> {
    let vals = arg_vals(api, args);
    let optional: Vec<bool> = api.params.iter().map(|p| p.optional).collect();
    let b = Bindings { params: &vals, results: &[] };
    api.requires.iter().map(|c| holds_reading(&c.expr, &b, &c.params, &optional, bounds)).collect()
}

/// The evaluator's view of a case's arguments (an omitted one is its default).
pub fn arg_vals(api: &ApiSpec, args: &[Arg]) -> Vec<Val> {
    args.iter()
        .zip(&api.params)
        .map(|(a, p)| match a {
            Arg::Omitted => p.default.as_ref().map(value_val).unwrap_or(Val::None),
            a => Val::of_arg(a),
        })
        .collect()
}

/// A default value as a concrete value.
pub fn value_val(v: &Value) -> Val {
    match v {
        Value::None => Val::None,
        Value::Bool(b) => Val::Bool(*b),
        Value::Int(i) => Val::Int(*i),
        Value::Float(f) => Val::Float(*f),
        Value::Str(s) => Val::Str(s.clone()),
        Value::Dtype(d) => Val::Dtype(*d),
        Value::DtypeSet(ds) => Val::DtypeSet(ds.clone()),
        Value::List(items) => Val::List(items.iter().map(value_val).collect()),
    }
}

struct Evaluator<'a, 'b> {
    b: &'a Bindings<'b>,
    bound: Vec<(u32, Val)>,
    bounds: Bounds,
}

/// Evaluation result: a value, an index out of range (which makes the comparison false), or
/// unknown.
enum Ev {
    Val(Val),
    OutOfRange,
}

type E = Option<Ev>;

impl Evaluator<'_, '_> {
    fn truth(&mut self, e: &TExpr) -> Option<bool> {
        match self.eval(e)? {
            Ev::Val(Val::Bool(b)) => Some(b),
            Ev::OutOfRange => Some(false),
            _ => None,
        }
    }

    fn val(&mut self, e: &TExpr) -> E {
        self.eval(e)
    }

    fn eval(&mut self, e: &TExpr) -> E {
        let v = match e {
            TExpr::Lit(v) => lit(v),
            TExpr::Param(i) => self.b.params.get(*i)?.clone(),
            TExpr::Result(i) => self.b.results.get(*i)?.clone(),
            TExpr::Bound(id) => self.bound.iter().rev().find(|(b, _)| b == id)?.1.clone(),
            TExpr::Prop(base, p) => {
                let b = match self.val(base)? {
                    Ev::Val(v) => v,
                    r => return Some(r),
                };
                match (b, p) {
                    (Val::Tensor(t), Prop::Dtype) => Val::Dtype(t.dtype?),
                    // A Scalar's kind; only Scalars type-check with `.dtype` among numbers.
                    (Val::Int(_), Prop::Dtype) => Val::Dtype(DType::Int64),
                    (Val::Float(_), Prop::Dtype) => Val::Dtype(DType::Float64),
                    (Val::Bool(_), Prop::Dtype) => Val::Dtype(DType::Bool),
                    (Val::Tensor(t), Prop::Ndim) => Val::Int(t.shape.len() as i64),
                    (Val::Tensor(t), Prop::Shape) => Val::List(t.shape.iter().map(|&d| Val::Int(d)).collect()),
                    (Val::Tensor(t), Prop::Numel) => Val::Int(t.numel()),
                    (Val::Tensor(t), Prop::Values) => Val::Values(t),
                    (Val::List(xs), Prop::Len) => Val::Int(xs.len() as i64),
                    _ => return None,
                }
            }
            TExpr::Index(base, index) => {
                let b = match self.val(base)? {
                    Ev::Val(v) => v,
                    r => return Some(r),
                };
                let i = match self.val(index)? {
                    Ev::Val(Val::Int(i)) => i,
                    Ev::OutOfRange => return Some(Ev::OutOfRange),
                    _ => return None,
                };
                let Val::List(xs) = b else { return None };
                let k = if i < 0 { i + xs.len() as i64 } else { i };
                if k < 0 || k >= xs.len() as i64 {
                    return Some(Ev::OutOfRange);
                }
                xs[k as usize].clone()
            }
            TExpr::Each(_) => return None,
            TExpr::Unary(UnOp::Not, inner) => match self.eval(inner)? {
                Ev::Val(Val::Bool(b)) => Val::Bool(!b),
                Ev::OutOfRange => Val::Bool(true),
                _ => return None,
            },
            TExpr::Unary(UnOp::Neg, inner) => match self.eval(inner)? {
                Ev::Val(Val::Int(i)) => Val::Int(i.wrapping_neg()),
                Ev::Val(Val::Float(f)) => Val::Float(-f),
                r => return Some(r),
            },
            TExpr::Binary(op, l, r) => return self.binary(*op, l, r),
            TExpr::Range { lo, hi, inclusive } => {
                let (Ev::Val(l), Ev::Val(h)) = (self.val(lo)?, self.val(hi)?) else { return Some(Ev::OutOfRange) };
                Val::Range { lo: l.num()?, hi: h.num()?, inclusive: *inclusive }
            }
            TExpr::List(items) => {
                let mut out = Vec::new();
                for i in items {
                    match self.val(i)? {
                        Ev::Val(v) => out.push(v),
                        r => return Some(r),
                    }
                }
                Val::List(out)
            }
            TExpr::If(c, t, f) => {
                return if self.truth(c)? { self.eval(t) } else { self.eval(f) };
            }
            TExpr::Forall { var, range, body } | TExpr::Exists { var, range, body } => {
                let forall = matches!(e, TExpr::Forall { .. });
                let items: Vec<Val> = match self.val(range)? {
                    Ev::Val(Val::Range { lo, hi, inclusive }) => {
                        let (lo, hi) = (lo.ceil() as i64, if inclusive { hi.floor() as i64 } else { hi.ceil() as i64 - 1 });
                        if hi - lo > 4096 {
                            return None;
                        }
                        (lo..=hi).map(Val::Int).collect()
                    }
                    Ev::Val(Val::List(xs)) => xs,
                    Ev::OutOfRange => return Some(Ev::OutOfRange),
                    _ => return None,
                };
                let mut all = true;
                let mut any = false;
                let mut unknown = false;
                for item in items {
                    self.bound.push((*var, item));
                    match self.truth(body) {
                        Some(true) => any = true,
                        Some(false) => all = false,
                        None => unknown = true,
                    }
                    self.bound.pop();
                }
                let result = if forall {
                    if !all {
                        false
                    } else if unknown {
                        return None;
                    } else {
                        true
                    }
                } else if any {
                    true
                } else if unknown {
                    return None;
                } else {
                    false
                };
                Val::Bool(result)
            }
            TExpr::Call(b, args) => return self.call(*b, args),
        };
        Some(Ev::Val(v))
    }

    fn binary(&mut self, op: BinOp, l: &TExpr, r: &TExpr) -> E {
        match op {
            BinOp::And => {
                let a = self.truth(l);
                if a == Some(false) {
                    return Some(Ev::Val(Val::Bool(false)));
                }
                let b = self.truth(r);
                return match (a, b) {
                    (_, Some(false)) => Some(Ev::Val(Val::Bool(false))),
                    (Some(true), Some(true)) => Some(Ev::Val(Val::Bool(true))),
                    _ => None,
                };
            }
            BinOp::Or => {
                let a = self.truth(l);
                if a == Some(true) {
                    return Some(Ev::Val(Val::Bool(true)));
                }
                let b = self.truth(r);
                return match (a, b) {
                    (_, Some(true)) => Some(Ev::Val(Val::Bool(true))),
                    (Some(false), Some(false)) => Some(Ev::Val(Val::Bool(false))),
                    _ => None,
                };
            }
            BinOp::Implies => {
                return match self.truth(l) {
                    Some(false) => Some(Ev::Val(Val::Bool(true))),
                    Some(true) => self.truth(r).map(|b| Ev::Val(Val::Bool(b))),
                    None => (self.truth(r) == Some(true)).then_some(Ev::Val(Val::Bool(true))),
                };
            }
            _ => {}
        }
        if op.is_comparison() {
            if let Some(list) = l.each_list().or_else(|| r.each_list()) {
                return self.each_comparison(op, l, r, list);
            }
        }
        let a = match self.val(l)? {
            Ev::Val(v) => v,
            Ev::OutOfRange => return Some(comparison_false(op)),
        };
        let b = match self.val(r)? {
            Ev::Val(v) => v,
            Ev::OutOfRange => return Some(comparison_false(op)),
        };
        let v = match op {
            BinOp::Eq => Val::Bool(equal(&a, &b)?),
            BinOp::Ne => Val::Bool(!equal(&a, &b)?),
            BinOp::In => Val::Bool(member(&a, &b, self.bounds)?),
            BinOp::NotIn => Val::Bool(!member(&a, &b, self.bounds)?),
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => Val::Bool(order(op, &a, &b, self.bounds)?),
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem => arith(op, &a, &b)?,
            BinOp::And | BinOp::Or | BinOp::Implies => unreachable!("handled above"),
        };
        Some(Ev::Val(v))
    }

    fn each_comparison(&mut self, op: BinOp, l: &TExpr, r: &TExpr, list: &TExpr) -> E {
        let n = match self.val(list)? {
            Ev::Val(Val::List(xs)) => xs.len(),
            Ev::OutOfRange => return Some(Ev::OutOfRange),
            _ => return None,
        };
        let mut unknown = false;
        for k in 0..n {
            let (l2, r2) = (l.each_at(list, k), r.each_at(list, k));
            match self.binary(op, &l2, &r2)? {
                Ev::Val(Val::Bool(true)) => {}
                Ev::Val(Val::Bool(false)) | Ev::OutOfRange => return Some(Ev::Val(Val::Bool(false))),
                _ => unknown = true,
            }
        }
        if unknown {
            None
        } else {
            Some(Ev::Val(Val::Bool(true)))
        }
    }

    fn call(&mut self, b: Builtin, args: &[TExpr]) -> E {
        let mut vals = Vec::new();
        for a in args {
            match self.val(a)? {
                Ev::Val(v) => vals.push(v),
                r => return Some(r),
            }
        }
        let v = match b {
            Builtin::Len => match &vals[0] {
                Val::List(xs) => Val::Int(xs.len() as i64),
                _ => return None,
            },
            Builtin::Min | Builtin::Max => {
                let all_int = vals.iter().all(|v| matches!(v, Val::Int(_)));
                let nums: Vec<f64> = vals.iter().map(Val::num).collect::<Option<_>>()?;
                let x = if b == Builtin::Min { nums.iter().cloned().fold(f64::INFINITY, f64::min) } else { nums.iter().cloned().fold(f64::NEG_INFINITY, f64::max) };
                if all_int {
                    Val::Int(x as i64)
                } else {
                    Val::Float(x)
                }
            }
            Builtin::Prod => match &vals[0] {
                Val::List(xs) => {
                    let mut p: i64 = 1;
                    for x in xs {
                        let Val::Int(i) = x else { return None };
                        p = p.wrapping_mul(*i);
                    }
                    Val::Int(p)
                }
                _ => return None,
            },
            Builtin::Abs => match &vals[0] {
                Val::Int(i) => Val::Int(i.wrapping_abs()),
                Val::Float(f) => Val::Float(f.abs()),
                _ => return None,
            },
            Builtin::Finite => match &vals[0] {
                Val::Tensor(t) => Val::Bool(!t.nonfinite),
                _ => return None,
            },
            Builtin::NoNan => match &vals[0] {
                Val::Tensor(t) => Val::Bool(!t.nan),
                _ => return None,
            },
            Builtin::Contiguous => match &vals[0] {
                Val::Tensor(t) => Val::Bool(t.contiguous?),
                _ => return None,
            },
            Builtin::Broadcastable => {
                let shapes: Vec<Vec<i64>> = vals
                    .iter()
                    .map(|v| match v {
                        Val::Tensor(t) => Some(t.shape.clone()),
                        Val::List(xs) => xs.iter().map(|x| if let Val::Int(i) = x { Some(*i) } else { None }).collect(),
                        _ => None,
                    })
                    .collect::<Option<_>>()?;
                Val::Bool(broadcastable(&shapes))
            }
        };
        Some(Ev::Val(v))
    }
}

/// Whether shapes broadcast together (numpy rules, from the right).
pub fn broadcastable(shapes: &[Vec<i64>]) -> bool {
    let n = shapes.iter().map(Vec::len).max().unwrap_or(0);
    (0..n).all(|i| {
        let dims: Vec<i64> = shapes.iter().filter(|s| i < s.len()).map(|s| s[s.len() - 1 - i]).filter(|&d| d != 1).collect();
        dims.windows(2).all(|w| w[0] == w[1])
    })
}

fn comparison_false(op: BinOp) -> Ev {
    // An index out of range makes its comparison false; arithmetic passes it up.
    if op.is_comparison() {
        Ev::Val(Val::Bool(false))
    } else {
        Ev::OutOfRange
    }
}

fn lit(v: &Value) -> Val {
    match v {
        Value::None => Val::None,
        Value::Bool(b) => Val::Bool(*b),
        Value::Int(i) => Val::Int(*i),
        Value::Float(f) => Val::Float(*f),
        Value::Str(s) => Val::Str(s.clone()),
        Value::Dtype(d) => Val::Dtype(*d),
        Value::DtypeSet(ds) => Val::DtypeSet(ds.clone()),
        Value::List(items) => Val::List(items.iter().map(lit).collect()),
    }
}

fn equal(a: &Val, b: &Val) -> Option<bool> {
    Some(match (a, b) {
        (Val::Unknown, _) | (_, Val::Unknown) => return None,
        (Val::None, Val::None) => true,
        (Val::None, _) | (_, Val::None) => false,
        (Val::Values(t), x) | (x, Val::Values(t)) => {
            let v = x.num()?;
            if t.numel() == 0 || (t.min == v && t.max == v && t.max_closed && !t.nonfinite) {
                true
            } else if t.min > v || t.max < v {
                false
            } else {
                return None;
            }
        }
        (Val::List(x), Val::List(y)) => {
            if x.len() != y.len() {
                return Some(false);
            }
            for (p, q) in x.iter().zip(y) {
                if !equal(p, q)? {
                    return Some(false);
                }
            }
            true
        }
        (Val::Dtype(x), Val::Dtype(y)) => x == y,
        (Val::Str(x), Val::Str(y)) => x == y,
        (Val::Bool(x), Val::Bool(y)) => x == y,
        (x, y) => x.num()? == y.num()?,
    })
}

fn member(a: &Val, b: &Val, bounds: Bounds) -> Option<bool> {
    Some(match (a, b) {
        (Val::Values(t), Val::Range { lo, hi, inclusive }) => {
            if t.numel() == 0 {
                return Some(true);
            }
            let above = t.min >= *lo;
            let below = if *inclusive { t.max <= *hi } else { t.max < *hi || (!t.max_closed && t.max <= *hi) };
            if above && below && !t.nonfinite {
                true
            } else if t.max < *lo || t.min > *hi {
                false
            } else if bounds == Bounds::Drawn {
                return None;
            } else if !above || !below {
                // Bounds say some element may lie outside; for a recipe the bounds are the fill
                // range itself, so this is a real violation.
                false
            } else {
                return None;
            }
        }
        (x, Val::Range { lo, hi, inclusive }) => {
            let v = x.num()?;
            v >= *lo && if *inclusive { v <= *hi } else { v < *hi }
        }
        (Val::Dtype(d), Val::DtypeSet(ds)) => ds.contains(d),
        (x, Val::List(items)) => {
            let mut unknown = false;
            for i in items {
                match equal(x, i) {
                    Some(true) => return Some(true),
                    None => unknown = true,
                    Some(false) => {}
                }
            }
            if unknown {
                return None;
            }
            false
        }
        _ => return None,
    })
}

fn order(op: BinOp, a: &Val, b: &Val, bounds: Bounds) -> Option<bool> {
    let cmp = |x: f64, y: f64| match op {
        BinOp::Lt => x < y,
        BinOp::Le => x <= y,
        BinOp::Gt => x > y,
        _ => x >= y,
    };
    match (a, b) {
        (Val::Values(t), x) => values_order(op, t, x.num()?, bounds),
        (x, Val::Values(t)) => values_order(flip(op), t, x.num()?, bounds),
        (x, y) => Some(cmp(x.num()?, y.num()?)),
    }
}

fn flip(op: BinOp) -> BinOp {
    match op {
        BinOp::Lt => BinOp::Gt,
        BinOp::Le => BinOp::Ge,
        BinOp::Gt => BinOp::Lt,
        BinOp::Ge => BinOp::Le,
        o => o,
    }
}

/// `values op v` for every element.
fn values_order(op: BinOp, t: &TensorVal, v: f64, bounds: Bounds) -> Option<bool> {
    if t.numel() == 0 {
        return Some(true);
    }
    if t.nonfinite {
        return Some(false);
    }
    let every = match op {
        BinOp::Gt => t.min > v,
        BinOp::Ge => t.min >= v,
        BinOp::Lt => t.max < v || (!t.max_closed && t.max <= v),
        _ => t.max <= v,
    };
    // Drawn: broken for sure only when no element of the range obeys.
    let none = match op {
        BinOp::Gt => t.max <= v,
        BinOp::Ge => t.max < v || (!t.max_closed && t.max <= v),
        BinOp::Lt => t.min >= v,
        _ => t.min > v,
    };
    match bounds {
        Bounds::Drawn if !every && !none => None,
        _ => Some(every),
    }
}

fn arith(op: BinOp, a: &Val, b: &Val) -> Option<Val> {
    if let (Val::Int(x), Val::Int(y)) = (a, b) {
        let (x, y) = (*x, *y);
        return Some(Val::Int(match op {
            BinOp::Add => x.wrapping_add(y),
            BinOp::Sub => x.wrapping_sub(y),
            BinOp::Mul => x.wrapping_mul(y),
            // Floor division and a remainder with the divisor's sign, as in Python.
            BinOp::Div => {
                if y == 0 {
                    return None;
                }
                x.div_euclid(y) - if y < 0 && x.rem_euclid(y) != 0 { 1 } else { 0 }
            }
            _ => {
                if y == 0 {
                    return None;
                }
                let r = x % y;
                if r != 0 && ((r < 0) != (y < 0)) {
                    r + y
                } else {
                    r
                }
            }
        }));
    }
    if let (Val::DtypeSet(x), Val::DtypeSet(y)) = (a, b) {
        let mut u = x.clone();
        u.extend(y.iter().filter(|d| !x.contains(d)));
        return Some(Val::DtypeSet(u));
    }
    let (x, y) = (a.num()?, b.num()?);
    Some(Val::Float(match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Div => x / y,
        _ => x % y,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_floor_division_and_modulo() {
        let d = |x, y| arith(BinOp::Div, &Val::Int(x), &Val::Int(y));
        let m = |x, y| arith(BinOp::Rem, &Val::Int(x), &Val::Int(y));
        assert_eq!(d(7, 2), Some(Val::Int(3)));
        assert_eq!(d(-7, 2), Some(Val::Int(-4)));
        assert_eq!(d(7, -2), Some(Val::Int(-4)));
        assert_eq!(m(-7, 2), Some(Val::Int(1)));
        assert_eq!(m(7, -2), Some(Val::Int(-1)));
    }

    #[test]
    fn broadcasting_follows_numpy() {
        assert!(broadcastable(&[vec![3, 1, 4], vec![5, 4]]));
        assert!(!broadcastable(&[vec![3, 2], vec![3]]));
        assert!(broadcastable(&[vec![], vec![2, 2]]));
    }

    #[test]
    fn every_element_unrolls_inside_a_range_as_in_the_solver() {
        // `k in 0..xs[*]`: one comparison per element of xs, as `solve::encode` expands it.
        let api = crate::check::first_api("api torch.f(k: int, xs: int[]) -> Tensor {\n    k in 0..xs[*];\n}\n");
        let c = &api.requires[0];
        let at = |k: i64, xs: Vec<i64>| holds(&c.expr, &Bindings { params: &[Val::Int(k), Val::of_arg(&Arg::IntList(xs))], results: &[] }, &c.params, &[false, false]);
        assert_eq!(at(2, vec![3, 5]), Some(true));
        assert_eq!(at(2, vec![3, 1]), Some(false));
        assert_eq!(at(-1, vec![3, 5]), Some(false));
    }
}
