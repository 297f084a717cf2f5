//! Constraint coverage: per API, which dtypes and enum values the executed cases gave each
//! parameter, how each constraint came out (held, held vacuously because an optional was None,
//! broken, undecided) and which of its branches were taken (each disjunct of an `or`, the
//! antecedent of `=>`, the condition of `if`, whether a quantifier's range was empty), and which
//! boundary classes the inputs fell in. Also the (dtype, rank, boundary class) combinations per
//! tensor argument, the figure the generator benchmark compares.
//!
//! Everything is computed from the case itself, so it measures what reached libtorch whatever
//! generated it.
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::eval::{self, Bindings, Val};
use crate::spec::{ApiSpec, BinOp, Category, ParamType, TExpr, UnOp};
use crate::wire::case::{Arg, DType, Layout, Special, TensorRecipe};

use super::values::{arg_vals, eval_number};

/// Boundary classes of inputs. The first group describes one tensor, the second a whole case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Class {
    /// A tensor in none of the classes below.
    Plain,
    /// A zero-sized dimension.
    Empty,
    /// 0-dimensional.
    Scalar,
    /// A dimension of size 1.
    UnitDim,
    /// The largest rank generated (4).
    MaxRank,
    /// 2^14 elements or more.
    Huge,
    Transposed,
    Strided,
    Expanded,
    Sliced,
    Nan,
    Inf,
    NegZero,
    Denormal,
    /// An element at the dtype's extreme (its largest or least value).
    DtypeExtreme,
    /// An element written as exactly 0, 1 or -1.
    SmallValue,
    /// An optional argument passed as None.
    NoneArg,
    /// An argument left out (the operator's default).
    Omitted,
    /// An empty list.
    EmptyList,
    /// An int argument or list element of magnitude 2^31 or more.
    IntExtreme,
    /// An int argument or list element equal to 0.
    IntZero,
    /// A negative int argument or list element.
    IntNegative,
    /// A float argument that is NaN, infinite, -0.0, denormal or of magnitude 1e20 or more.
    FloatSpecial,
    /// Tensors of different dtypes in one call.
    MixedDtypes,
    /// Tensors whose shapes broadcast (different ranks, or a 1 against a larger size).
    Broadcast,
}

impl Class {
    pub const ALL: [Class; 25] = [
        Class::Plain,
        Class::Empty,
        Class::Scalar,
        Class::UnitDim,
        Class::MaxRank,
        Class::Huge,
        Class::Transposed,
        Class::Strided,
        Class::Expanded,
        Class::Sliced,
        Class::Nan,
        Class::Inf,
        Class::NegZero,
        Class::Denormal,
        Class::DtypeExtreme,
        Class::SmallValue,
        Class::NoneArg,
        Class::Omitted,
        Class::EmptyList,
        Class::IntExtreme,
        Class::IntZero,
        Class::IntNegative,
        Class::FloatSpecial,
        Class::MixedDtypes,
        Class::Broadcast,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Class::Plain => "plain",
            Class::Empty => "empty",
            Class::Scalar => "0-d",
            Class::UnitDim => "unit-dim",
            Class::MaxRank => "max-rank",
            Class::Huge => "huge",
            Class::Transposed => "transposed",
            Class::Strided => "strided",
            Class::Expanded => "expanded",
            Class::Sliced => "sliced",
            Class::Nan => "nan",
            Class::Inf => "inf",
            Class::NegZero => "-0.0",
            Class::Denormal => "denormal",
            Class::DtypeExtreme => "dtype-extreme",
            Class::SmallValue => "0/1/-1",
            Class::NoneArg => "none",
            Class::Omitted => "omitted",
            Class::EmptyList => "empty-list",
            Class::IntExtreme => "int-extreme",
            Class::IntZero => "int-zero",
            Class::IntNegative => "int-negative",
            Class::FloatSpecial => "float-special",
            Class::MixedDtypes => "mixed-dtypes",
            Class::Broadcast => "broadcast",
        }
    }

    fn bit(self) -> u32 {
        1 << (self as u8)
    }
}

/// Elements of magnitude 2^14 or more make a tensor huge.
pub const HUGE_ELEMENTS: u64 = 1 << 14;

/// The smallest positive normal value and the largest finite value of a floating dtype.
fn float_range(dtype: DType) -> (f64, f64) {
    match dtype {
        DType::Float16 => (2f64.powi(-14), 65504.0),
        DType::BFloat16 => (f32::MIN_POSITIVE as f64, f32::from_bits(0x7F7F_0000) as f64),
        DType::Float32 | DType::Complex64 => (f32::MIN_POSITIVE as f64, f32::MAX as f64),
        _ => (f64::MIN_POSITIVE, f64::MAX),
    }
}

fn special_class(dtype: DType, s: Special) -> Class {
    let v = s.value();
    if v.is_nan() {
        return Class::Nan;
    }
    if v.is_infinite() {
        return Class::Inf;
    }
    if v == 0.0 && v.is_sign_negative() {
        return if dtype.int_bounds().is_some() { Class::SmallValue } else { Class::NegZero };
    }
    if v == 0.0 || v == 1.0 || v == -1.0 {
        return Class::SmallValue;
    }
    match dtype.int_bounds() {
        Some((lo, hi)) if dtype != DType::Bool => {
            if v >= hi as f64 * 0.5 || v <= lo as f64 * 0.5 {
                Class::DtypeExtreme
            } else {
                Class::Plain
            }
        }
        Some(_) => Class::Plain,
        None => {
            let (tiny, max) = float_range(dtype);
            if v.abs() < tiny {
                Class::Denormal
            } else if v.abs() >= max * 0.5 {
                Class::DtypeExtreme
            } else {
                Class::Plain
            }
        }
    }
}

/// The classes one tensor falls in, as a bit set.
pub fn tensor_classes(t: &TensorRecipe) -> u32 {
    let mut bits = 0;
    let ndim = t.shape.len();
    let numel = t.numel();
    if ndim == 0 {
        bits |= Class::Scalar.bit();
    }
    if ndim >= 1 && numel == 0 {
        bits |= Class::Empty.bit();
    }
    if t.shape.contains(&1) {
        bits |= Class::UnitDim.bit();
    }
    if ndim >= 4 {
        bits |= Class::MaxRank.bit();
    }
    if numel >= HUGE_ELEMENTS {
        bits |= Class::Huge.bit();
    }
    // Layouts count where they change the strides (see `runtime::materialize`).
    let layout = match t.layout {
        Layout::Transposed if ndim >= 2 => Some(Class::Transposed),
        Layout::Strided if ndim >= 1 => Some(Class::Strided),
        Layout::Expanded if ndim >= 1 && t.shape[0] >= 2 => Some(Class::Expanded),
        Layout::Sliced if ndim >= 1 => Some(Class::Sliced),
        _ => None,
    };
    if let Some(c) = layout {
        bits |= c.bit();
    }
    if numel > 0 {
        // Expanding keeps the first slice along dimension 0 only.
        let kept = if layout == Some(Class::Expanded) { numel / t.shape[0] as u64 } else { numel };
        for (i, s) in &t.specials {
            if i % numel < kept {
                let c = special_class(t.dtype, *s);
                if c != Class::Plain {
                    bits |= c.bit();
                }
            }
        }
    }
    bits
}

fn tensors(args: &[Arg]) -> impl Iterator<Item = &TensorRecipe> {
    args.iter().flat_map(Arg::tensors)
}

fn int_classes(x: i64) -> u32 {
    let mut bits = 0;
    if x.unsigned_abs() >= 1 << 31 {
        bits |= Class::IntExtreme.bit();
    }
    if x == 0 {
        bits |= Class::IntZero.bit();
    }
    if x < 0 {
        bits |= Class::IntNegative.bit();
    }
    bits
}

fn float_special(x: f64) -> bool {
    !x.is_finite() || (x == 0.0 && x.is_sign_negative()) || (x != 0.0 && x.abs() < f64::MIN_POSITIVE) || x.abs() >= 1e20
}

/// The classes of a case as a whole, as a bit set.
pub fn case_classes(args: &[Arg]) -> u32 {
    let mut bits = 0;
    for a in args {
        bits |= match a {
            Arg::None => Class::NoneArg.bit(),
            Arg::Omitted => Class::Omitted.bit(),
            Arg::Int(x) => int_classes(*x),
            Arg::IntList(xs) => xs.iter().fold(if xs.is_empty() { Class::EmptyList.bit() } else { 0 }, |b, &x| b | int_classes(x)),
            Arg::FloatList(xs) => xs.iter().fold(if xs.is_empty() { Class::EmptyList.bit() } else { 0 }, |b, &x| b | if float_special(x) { Class::FloatSpecial.bit() } else { 0 }),
            Arg::BoolList(xs) if xs.is_empty() => Class::EmptyList.bit(),
            Arg::TensorList(ts) if ts.is_empty() => Class::EmptyList.bit(),
            Arg::Float(x) if float_special(*x) => Class::FloatSpecial.bit(),
            _ => 0,
        };
    }
    let ts: Vec<&TensorRecipe> = tensors(args).collect();
    if ts.windows(2).any(|w| w[0].dtype != w[1].dtype) {
        bits |= Class::MixedDtypes.bit();
    }
    let broadcasts = |a: &[i64], b: &[i64]| a.len() != b.len() || a.iter().zip(b).any(|(&x, &y)| x != y && (x == 1 || y == 1));
    if ts.iter().enumerate().any(|(i, a)| ts.iter().skip(i + 1).any(|b| broadcasts(&a.shape, &b.shape))) {
        bits |= Class::Broadcast.bit();
    }
    bits
}

/// The (dtype, rank, class) combinations of a case, encoded: one per class of each tensor
/// argument (its own classes and the case's), `Plain` for a tensor in none.
pub fn combos(args: &[Arg], out: &mut Vec<u32>) {
    let case_bits = case_classes(args);
    for t in tensors(args) {
        let bits = tensor_classes(t) | case_bits;
        let dtype = DType::ALL.iter().position(|&d| d == t.dtype).unwrap_or(0) as u32;
        let key = (dtype << 10) | ((t.shape.len().min(15) as u32) << 6);
        if bits == 0 {
            out.push(key | Class::Plain as u32);
        }
        for c in Class::ALL {
            if bits & c.bit() != 0 {
                out.push(key | c as u32);
            }
        }
    }
}

/// A place where a constraint branches.
#[derive(Clone, Debug)]
enum Point {
    /// A boolean sub-expression: a disjunct, an antecedent, a condition.
    Cond(TExpr),
    /// Whether a quantifier's range holds any element.
    Range { lo: TExpr, hi: TExpr, inclusive: bool },
}

/// The branch points of each constraint of an API, found once.
#[derive(Clone, Debug)]
pub struct Branches {
    /// Per constraint: its points, with their text.
    points: Vec<Vec<(Point, String)>>,
    /// Per constraint: whether it mentions an optional parameter (can hold vacuously).
    optional: Vec<bool>,
}

impl Branches {
    pub fn new(api: &ApiSpec) -> Branches {
        let points = api
            .requires
            .iter()
            .map(|c| {
                let mut out = Vec::new();
                collect(&c.expr, api, &mut out);
                out
            })
            .collect();
        let optional = api.requires.iter().map(|c| c.params.iter().any(|&p| api.params.get(p).is_some_and(|x| x.optional))).collect();
        Branches { points, optional }
    }
}

fn collect(e: &TExpr, api: &ApiSpec, out: &mut Vec<(Point, String)>) {
    match e {
        TExpr::Binary(BinOp::Or, _, _) => {
            for d in e.operands(BinOp::Or) {
                out.push((Point::Cond(d.clone()), show(d, api)));
                collect(d, api, out);
            }
        }
        TExpr::Binary(BinOp::Implies, a, b) => {
            out.push((Point::Cond((**a).clone()), show(a, api)));
            collect(a, api, out);
            collect(b, api, out);
        }
        TExpr::Binary(BinOp::And, a, b) => {
            collect(a, api, out);
            collect(b, api, out);
        }
        TExpr::Unary(UnOp::Not, a) => collect(a, api, out),
        TExpr::If(c, t, f) => {
            out.push((Point::Cond((**c).clone()), show(c, api)));
            collect(t, api, out);
            collect(f, api, out);
        }
        TExpr::Binary(_, a, b) => {
            collect(a, api, out);
            collect(b, api, out);
        }
        // Inside a quantifier the bound variable has no value here: only the range is judged.
        TExpr::Forall { range, .. } | TExpr::Exists { range, .. } => {
            if let TExpr::Range { lo, hi, inclusive } = &**range {
                out.push((Point::Range { lo: (**lo).clone(), hi: (**hi).clone(), inclusive: *inclusive }, format!("{} is not empty", show(range, api))));
            }
        }
        _ => {}
    }
}

/// An expression in the spec's syntax, for reports.
pub fn show(e: &TExpr, api: &ApiSpec) -> String {
    let go = |x: &TExpr| show(x, api);
    match e {
        TExpr::Lit(v) => crate::spec::value_text(v),
        TExpr::Param(i) => api.params.get(*i).map_or_else(|| format!("param{i}"), |p| p.name.clone()),
        TExpr::Result(i) => {
            if *i == 0 {
                "result".into()
            } else {
                format!("result.{i}")
            }
        }
        TExpr::Bound(id) => format!("v{id}"),
        TExpr::Prop(b, p) => format!("{}.{}", go(b), p.name()),
        TExpr::Index(b, i) => format!("{}[{}]", go(b), go(i)),
        TExpr::Each(b) => format!("{}[*]", go(b)),
        TExpr::Unary(UnOp::Not, b) => format!("not {}", go(b)),
        TExpr::Unary(UnOp::Neg, b) => format!("-{}", go(b)),
        TExpr::Binary(op, a, b) => {
            let wrap = |x: &TExpr| match x {
                TExpr::Binary(o, _, _) if o != op => format!("({})", go(x)),
                _ => go(x),
            };
            format!("{} {} {}", wrap(a), op.symbol(), wrap(b))
        }
        TExpr::Range { lo, hi, inclusive } => format!("{}..{}{}", go(lo), if *inclusive { "=" } else { "" }, go(hi)),
        TExpr::List(items) => format!("[{}]", items.iter().map(go).collect::<Vec<_>>().join(", ")),
        TExpr::If(c, t, f) => format!("(if {} then {} else {})", go(c), go(t), go(f)),
        TExpr::Forall { var, range, body } => format!("forall v{var} in {}: {}", go(range), go(body)),
        TExpr::Exists { var, range, body } => format!("exists v{var} in {}: {}", go(range), go(body)),
        TExpr::Call(b, args) => format!("{}({})", b.name(), args.iter().map(go).collect::<Vec<_>>().join(", ")),
    }
}

/// How one constraint came out for a case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Held,
    Vacuous,
    Broken,
    Unknown,
}

#[derive(Default)]
struct Inner {
    cases: u64,
    dtypes: BTreeSet<(usize, DType)>,
    enums: BTreeSet<(usize, String)>,
    /// Per constraint: counts of held, vacuous, broken, unknown.
    outcomes: Vec<[u64; 4]>,
    /// Per constraint and point: counts of true and false.
    points: Vec<Vec<[u64; 2]>>,
    classes: BTreeMap<Class, u64>,
    combos: HashSet<u32>,
    accepted_combos: HashSet<u32>,
    scratch: Vec<u32>,
}

/// The coverage of one API, filled by the campaign's threads.
pub struct Coverage {
    branches: Branches,
    inner: Mutex<Inner>,
}

impl Coverage {
    pub fn new(api: &ApiSpec) -> Coverage {
        let branches = Branches::new(api);
        let inner = Inner { outcomes: vec![[0; 4]; api.requires.len()], points: branches.points.iter().map(|ps| vec![[0; 2]; ps.len()]).collect(), ..Inner::default() };
        Coverage { branches, inner: Mutex::new(inner) }
    }

    /// Records one executed case; `accepted` when libtorch returned.
    pub fn record(&self, api: &ApiSpec, args: &[Arg], accepted: bool) {
        let vals = arg_vals(api, args);
        let optional: Vec<bool> = api.params.iter().map(|p| p.optional).collect();
        let b = Bindings { params: &vals, results: &[] };
        let outcomes: Vec<Outcome> = api
            .requires
            .iter()
            .map(|c| match eval::holds(&c.expr, &b, &c.params, &optional) {
                Some(true) if eval::vacuous(&c.expr, &b, &c.params, &optional) => Outcome::Vacuous,
                Some(true) => Outcome::Held,
                Some(false) => Outcome::Broken,
                None => Outcome::Unknown,
            })
            .collect();
        let points: Vec<Vec<Option<bool>>> = self
            .branches
            .points
            .iter()
            .zip(&outcomes)
            .map(|(ps, o)| {
                // A vacuous constraint's branches were not taken.
                if *o == Outcome::Vacuous {
                    return vec![None; ps.len()];
                }
                ps.iter()
                    .map(|(p, _)| match p {
                        Point::Cond(e) => eval::holds(e, &b, &[], &optional),
                        Point::Range { lo, hi, inclusive } => {
                            let (lo, hi) = (eval_number(lo, &b)?, eval_number(hi, &b)?);
                            Some(if *inclusive { lo <= hi } else { lo < hi })
                        }
                    })
                    .collect()
            })
            .collect();
        let mut inner = self.inner.lock().expect("coverage lock");
        let inner = &mut *inner;
        inner.cases += 1;
        for (k, o) in outcomes.iter().enumerate() {
            inner.outcomes[k][*o as usize] += 1;
        }
        for (k, ps) in points.iter().enumerate() {
            for (j, v) in ps.iter().enumerate() {
                if let Some(v) = v {
                    inner.points[k][j][usize::from(!*v)] += 1;
                }
            }
        }
        let placeholders = placeholders(api);
        for (p, (a, v)) in args.iter().zip(&vals).enumerate() {
            match (a, v) {
                // A forward fills it: its recipe's dtype is not what the call sees.
                (Arg::Tensor(_), _) if placeholders.contains(&p) => {}
                (Arg::Tensor(t), _) => {
                    inner.dtypes.insert((p, t.dtype));
                }
                (Arg::TensorList(ts), _) => inner.dtypes.extend(ts.iter().map(|t| (p, t.dtype))),
                (Arg::Dtype(d), _) => {
                    inner.dtypes.insert((p, *d));
                }
                (_, Val::Str(s)) if matches!(api.params.get(p).map(|x| &x.ty), Some(ParamType::Enum(_) | ParamType::Str)) => {
                    inner.enums.insert((p, s.clone()));
                }
                _ => {}
            }
        }
        let mut bits = case_classes(args);
        for t in tensors(args) {
            bits |= tensor_classes(t);
        }
        if bits == 0 {
            *inner.classes.entry(Class::Plain).or_insert(0) += 1;
        }
        for c in Class::ALL {
            if bits & c.bit() != 0 {
                *inner.classes.entry(c).or_insert(0) += 1;
            }
        }
        let mut scratch = std::mem::take(&mut inner.scratch);
        scratch.clear();
        combos(args, &mut scratch);
        inner.combos.extend(scratch.iter().copied());
        if accepted {
            inner.accepted_combos.extend(scratch.iter().copied());
        }
        inner.scratch = scratch;
    }

    /// The report; `possible_dtypes` per parameter comes from the solver.
    pub fn report(&self, api: &ApiSpec, possible_dtypes: &[Vec<DType>]) -> CoverageReport {
        let inner = self.inner.lock().expect("coverage lock");
        let name = |p: usize| api.params.get(p).map_or_else(|| format!("param{p}"), |x| x.name.clone());
        let mut dtypes: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (p, d) in &inner.dtypes {
            dtypes.entry(name(*p)).or_default().push(d.name().to_string());
        }
        let mut dtypes_possible: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let placeholders = placeholders(api);
        for (p, ds) in possible_dtypes.iter().enumerate() {
            if !ds.is_empty() && !placeholders.contains(&p) {
                dtypes_possible.insert(name(p), ds.iter().map(|d| d.name().to_string()).collect());
            }
        }
        let mut enums: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut enums_possible: BTreeMap<String, Vec<String>> = BTreeMap::new();
        // String parameters count as enums over the values their constraints name.
        let literals = crate::solve::literals::of_api(api);
        for (p, param) in api.params.iter().enumerate() {
            let values = match &param.ty {
                ParamType::Enum(values) => values.clone(),
                ParamType::Str if !literals[p].strs.is_empty() => crate::solve::literals::string_values(param, &literals[p]),
                _ => continue,
            };
            enums_possible.insert(param.name.clone(), values);
            enums.insert(param.name.clone(), inner.enums.iter().filter(|(q, _)| *q == p).map(|(_, v)| v.clone()).collect());
        }
        let mut reached = 0;
        let mut total = 0;
        let constraints: Vec<ConstraintCoverage> = api
            .requires
            .iter()
            .enumerate()
            .map(|(k, c)| {
                let [held, vacuous, broken, unknown] = inner.outcomes[k];
                let mut slots = vec![held, broken];
                if self.branches.optional[k] {
                    slots.push(vacuous);
                }
                let branches: Vec<BranchCoverage> = self.branches.points[k]
                    .iter()
                    .zip(&inner.points[k])
                    .map(|((_, text), [t, f])| {
                        slots.push(*t);
                        slots.push(*f);
                        BranchCoverage { text: text.clone(), taken: *t, not_taken: *f }
                    })
                    .collect();
                total += slots.len();
                reached += slots.iter().filter(|&&n| n > 0).count();
                ConstraintCoverage { text: c.text.clone(), category: c.category, held, vacuous, broken, unknown, branches }
            })
            .collect();
        let boundary: BTreeMap<String, u64> = inner.classes.iter().map(|(c, n)| (c.name().to_string(), *n)).collect();
        CoverageReport {
            cases: inner.cases,
            dtypes,
            dtypes_possible,
            enums,
            enums_possible,
            outcomes_reached: reached,
            outcomes_total: total,
            constraints,
            boundary_classes: boundary.len(),
            boundary,
            combos: inner.combos.len(),
            accepted_combos: inner.accepted_combos.len(),
        }
    }
}

/// One API's coverage, as the JSON summary holds it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CoverageReport {
    pub cases: u64,
    /// Per parameter, the dtypes the cases gave it.
    pub dtypes: BTreeMap<String, Vec<String>>,
    /// Per parameter, the dtypes its constraints allow.
    pub dtypes_possible: BTreeMap<String, Vec<String>>,
    pub enums: BTreeMap<String, Vec<String>>,
    pub enums_possible: BTreeMap<String, Vec<String>>,
    /// Constraint outcomes and branch directions seen, of those listed in `constraints` (held
    /// and broken per constraint, vacuous where it mentions an optional, and both directions of
    /// each branch point).
    pub outcomes_reached: usize,
    pub outcomes_total: usize,
    pub constraints: Vec<ConstraintCoverage>,
    /// Cases per boundary class.
    pub boundary: BTreeMap<String, u64>,
    pub boundary_classes: usize,
    /// Distinct (dtype, rank, boundary class) combinations over tensor arguments.
    pub combos: usize,
    /// The same, among cases libtorch accepted.
    pub accepted_combos: usize,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ConstraintCoverage {
    pub text: String,
    pub category: Category,
    pub held: u64,
    /// Held because an optional parameter it mentions was None.
    pub vacuous: u64,
    pub broken: u64,
    /// The evaluator could not decide (unknown values).
    pub unknown: u64,
    pub branches: Vec<BranchCoverage>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BranchCoverage {
    pub text: String,
    /// Cases where it was true.
    pub taken: u64,
    /// Cases where it was false.
    pub not_taken: u64,
}

/// The parameters a `from` statement's forward fills whose recipe gives no dtype to the call
/// (one that is also the source of a `like(p, shape)` argument does).
fn placeholders(api: &ApiSpec) -> Vec<usize> {
    let Some(from) = &api.from else { return Vec::new() };
    let sources: Vec<usize> = from.args.iter().filter_map(|a| if let crate::wire::case::FwdArg::Like { param, .. } = a { Some(*param) } else { None }).collect();
    from.binds.iter().map(|b| b.param).filter(|p| !sources.contains(p)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::case::Fill;

    fn t(dtype: DType, shape: &[i64]) -> TensorRecipe {
        TensorRecipe { dtype, shape: shape.to_vec(), fill: Fill::Uniform { lo: 0.0, hi: 1.0 }, seed: 0, layout: Layout::Contiguous, specials: vec![] }
    }

    fn names(bits: u32) -> Vec<&'static str> {
        Class::ALL.iter().filter(|c| bits & c.bit() != 0).map(|c| c.name()).collect()
    }

    #[test]
    fn tensors_are_classified_by_shape_layout_and_specials() {
        assert_eq!(names(tensor_classes(&t(DType::Float32, &[]))), ["0-d"]);
        assert_eq!(names(tensor_classes(&t(DType::Float32, &[2, 0, 1, 3]))), ["empty", "unit-dim", "max-rank"]);
        let mut x = t(DType::Float16, &[3, 4]);
        x.layout = Layout::Transposed;
        x.specials = vec![(0, Special::Nan), (1, Special::NegZero), (2, Special::Value(1e-6)), (3, Special::Value(60000.0)), (4, Special::Value(1.0))];
        assert_eq!(names(tensor_classes(&x)), ["transposed", "nan", "-0.0", "denormal", "dtype-extreme", "0/1/-1"]);
        // Expanded keeps the first slice only: the special at 5 is gone.
        let mut e = t(DType::Float32, &[2, 4]);
        e.layout = Layout::Expanded;
        e.specials = vec![(5, Special::PosInf)];
        assert_eq!(names(tensor_classes(&e)), ["expanded"]);
        let mut i = t(DType::Int64, &[4]);
        i.specials = vec![(0, Special::Value(-9.223_372_036_854_776e18))];
        assert_eq!(names(tensor_classes(&i)), ["dtype-extreme"]);
    }

    #[test]
    fn cases_are_classified_by_their_arguments() {
        let args = vec![Arg::Tensor(t(DType::Float32, &[3, 1])), Arg::Tensor(t(DType::Int64, &[3])), Arg::None, Arg::IntList(vec![]), Arg::Int(-1 << 40), Arg::Float(-0.0)];
        assert_eq!(names(case_classes(&args)), ["none", "empty-list", "int-extreme", "int-negative", "float-special", "mixed-dtypes", "broadcast"]);
        let mut out = Vec::new();
        combos(&args[..1], &mut out);
        assert_eq!(out, vec![(8 << 10) | (2 << 6) | Class::UnitDim as u32]);
    }
}
