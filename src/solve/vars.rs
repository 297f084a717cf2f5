//! The solver variables of an API's parameters, their domains, and reading a model back as
//! plain data (`SymModel`) that can leave the solver's thread.
use serde::{Deserialize, Serialize};
use z3::ast::{Bool, Int};
use z3::{Model, Solver};

use super::{literals, Limits};
use crate::spec::{ApiSpec, ParamType};
use crate::wire::case::DType;

/// The kinds a Scalar whose kind a constraint reads can take, as ATen's `Scalar` holds them.
pub const SCALAR_KINDS: [DType; 3] = [DType::Float64, DType::Int64, DType::Bool];

/// The value a `str` parameter takes to be none of those its constraints name.
pub const OTHER_STRING: &str = "sfz_other_value";

/// The symbolic shape of one tensor.
#[derive(Clone, Debug)]
pub struct TensorVars {
    /// Index into `DType::ALL`.
    pub dtype: Int,
    pub ndim: Int,
    /// One per possible dimension; dims at or past `ndim` are pinned to 1 so a model is canonical.
    pub dims: Vec<Int>,
}

#[derive(Clone, Debug)]
pub enum Var {
    Tensor(TensorVars),
    TensorList {
        len: Int,
        items: Vec<TensorVars>,
    },
    Int(Int),
    Bool(Bool),
    /// Index into the enum's values.
    Enum(Int, Vec<String>),
    /// Index into `DType::ALL`.
    Dtype(Int),
    IntList {
        len: Int,
        items: Vec<Int>,
    },
    BoolList {
        len: Int,
        items: Vec<Bool>,
    },
    /// A Scalar whose kind a constraint reads (`alpha.dtype`): the kind, an index into
    /// `DType::ALL` (float64, int64 or bool); its value is drawn concretely.
    Scalar(Int),
    /// Floats, strings and float lists are drawn concretely, outside the solver; so is a
    /// Scalar whose kind no constraint reads (a float).
    Concrete,
}

#[derive(Clone, Debug)]
pub struct ParamVars {
    /// For optional parameters: whether a value (not None) is passed.
    pub present: Option<Bool>,
    pub var: Var,
}

/// The solved symbolic part of one parameter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum SymValue {
    /// An optional parameter passed as None.
    Absent,
    Tensor {
        dtype: DType,
        shape: Vec<i64>,
    },
    TensorList(Vec<(DType, Vec<i64>)>),
    Int(i64),
    Bool(bool),
    Enum(String),
    Dtype(DType),
    IntList(Vec<i64>),
    BoolList(Vec<bool>),
    /// A Scalar of this kind (float64, int64 or bool), its value drawn later.
    Scalar(DType),
    /// Drawn later, concretely (floats, strings).
    Concrete,
}

/// One solution: a symbolic value per parameter, in declaration order.
pub type SymModel = Vec<SymValue>;

fn dtype_index(d: DType) -> i64 {
    DType::ALL.iter().position(|&x| x == d).expect("DType::ALL lists every dtype") as i64
}

pub fn dtype_const(d: DType) -> Int {
    Int::from_i64(dtype_index(d))
}

fn tensor_vars(solver: &Solver, name: &str, limits: &Limits) -> TensorVars {
    let dtype = Int::new_const(format!("{name}.dtype"));
    let ndim = Int::new_const(format!("{name}.ndim"));
    solver.assert(dtype.ge(0));
    solver.assert(dtype.lt(DType::ALL.len() as i64));
    solver.assert(ndim.ge(0));
    solver.assert(ndim.le(limits.max_ndim as i64));
    let dims: Vec<Int> = (0..limits.max_ndim)
        .map(|k| {
            let d = Int::new_const(format!("{name}.shape[{k}]"));
            solver.assert(d.ge(0));
            solver.assert(d.le(limits.max_dim));
            solver.assert(Int::from_i64(k as i64).ge(&ndim).implies(d.eq(1)));
            d
        })
        .collect();
    // Keep tensors small: the product of the dims bounds the element count.
    let numel = Int::mul(&dims);
    solver.assert(numel.le(limits.max_numel));
    TensorVars { dtype, ndim, dims }
}

/// `limits.int_range`, plus each constant outside it and its neighbours (so `ms >= 3000` and
/// `ms != 3000` can hold too) without drawing every int from a range that wide.
fn int_domain(solver: &Solver, v: &Int, limits: &Limits, constants: &[i64]) {
    let (lo, hi) = limits.int_range;
    let mut alternatives = vec![Bool::and(&[v.ge(lo), v.le(hi)])];
    for &c in constants.iter().filter(|&&c| c < lo || c > hi) {
        for x in [c.saturating_sub(1), c, c.saturating_add(1)] {
            alternatives.push(v.eq(x));
        }
    }
    solver.assert(Bool::or(&alternatives));
}

fn list_len(solver: &Solver, name: &str, fixed: Option<u32>, max: u32) -> Int {
    let len = Int::new_const(format!("{name}.len"));
    match fixed {
        Some(n) => solver.assert(len.eq(n as i64)),
        None => {
            solver.assert(len.ge(0));
            solver.assert(len.le(max as i64));
        }
    }
    len
}

/// Declares the variables of every parameter of `api` and asserts their domains: the default
/// ones of `limits`, widened by the constants its constraints compare a parameter with.
pub fn declare(solver: &Solver, api: &ApiSpec, limits: &Limits) -> Vec<ParamVars> {
    let constants = literals::of_api(api);
    let kinds = literals::kinds_read(api);
    api.params
        .iter()
        .zip(&constants)
        .map(|(p, lits)| {
            let name = &p.name;
            let int_domain = |v: &Int| int_domain(solver, v, limits, &lits.ints);
            let present = p.optional.then(|| Bool::new_const(format!("{name}.present")));
            let var = match &p.ty {
                ParamType::Tensor => Var::Tensor(tensor_vars(solver, name, limits)),
                ParamType::TensorList => {
                    let len = Int::new_const(format!("{name}.len"));
                    solver.assert(len.ge(1));
                    solver.assert(len.le(limits.max_tensor_list as i64));
                    let items: Vec<TensorVars> = (0..limits.max_tensor_list).map(|k| tensor_vars(solver, &format!("{name}[{k}]"), limits)).collect();
                    for (k, t) in items.iter().enumerate() {
                        solver.assert(Int::from_i64(k as i64).ge(&len).implies(pinned_tensor(t)));
                    }
                    Var::TensorList { len, items }
                }
                ParamType::Int => {
                    let v = Int::new_const(name.as_str());
                    int_domain(&v);
                    Var::Int(v)
                }
                ParamType::Bool => Var::Bool(Bool::new_const(name.as_str())),
                ParamType::Enum(values) => {
                    let v = Int::new_const(name.as_str());
                    solver.assert(v.ge(0));
                    solver.assert(v.lt(values.len() as i64));
                    Var::Enum(v, values.clone())
                }
                ParamType::Dtype => {
                    let v = Int::new_const(name.as_str());
                    solver.assert(v.ge(0));
                    solver.assert(v.lt(DType::ALL.len() as i64));
                    Var::Dtype(v)
                }
                ParamType::IntList(fixed) => {
                    let len = list_len(solver, name, *fixed, limits.max_list_len);
                    let n = fixed.unwrap_or(limits.max_list_len);
                    let items = (0..n)
                        .map(|k| {
                            let v = Int::new_const(format!("{name}[{k}]"));
                            int_domain(&v);
                            solver.assert(Int::from_i64(k as i64).ge(&len).implies(v.eq(0)));
                            v
                        })
                        .collect();
                    Var::IntList { len, items }
                }
                ParamType::BoolList(fixed) => {
                    let len = list_len(solver, name, *fixed, limits.max_list_len);
                    let n = fixed.unwrap_or(limits.max_list_len);
                    let items = (0..n)
                        .map(|k| {
                            let b = Bool::new_const(format!("{name}[{k}]"));
                            solver.assert(Int::from_i64(k as i64).ge(&len).implies(b.not()));
                            b
                        })
                        .collect();
                    Var::BoolList { len, items }
                }
                // A string the constraints name values of is one of them, its default, or a
                // string neither names (so `mode in [...]` can be broken, and implied only when
                // the constraints say so).
                ParamType::Str if !lits.strs.is_empty() => {
                    let mut values = literals::string_values(p, lits);
                    values.push(OTHER_STRING.to_string());
                    let v = Int::new_const(name.as_str());
                    solver.assert(v.ge(0));
                    solver.assert(v.lt(values.len() as i64));
                    Var::Enum(v, values)
                }
                ParamType::Scalar if kinds.contains(&p.name) => {
                    let v = Int::new_const(format!("{name}.kind"));
                    solver.assert(Bool::or(&SCALAR_KINDS.map(|d| v.eq(dtype_index(d)))));
                    Var::Scalar(v)
                }
                ParamType::Float | ParamType::Scalar | ParamType::Str | ParamType::FloatList(_) => Var::Concrete,
            };
            // An absent optional parameter pins its variables, so each model reads back once.
            if let Some(p) = &present {
                if let Some(pinned) = pinned(&var) {
                    solver.assert(p.not().implies(pinned));
                }
            }
            ParamVars { present, var }
        })
        .collect()
}

fn pinned_tensor(t: &TensorVars) -> Bool {
    Bool::and(&[t.dtype.eq(0), t.ndim.eq(0)])
}

/// The canonical values of a parameter's variables when they do not matter.
fn pinned(var: &Var) -> Option<Bool> {
    Some(match var {
        Var::Tensor(t) => pinned_tensor(t),
        Var::TensorList { len, .. } => len.eq(1),
        Var::Int(v) | Var::Enum(v, _) | Var::Dtype(v) => v.eq(0),
        Var::Scalar(v) => v.eq(dtype_index(DType::Float64)),
        Var::Bool(b) => b.not(),
        Var::IntList { len, .. } | Var::BoolList { len, .. } => len.eq(0),
        Var::Concrete => return None,
    })
}

fn int_of(model: &Model, v: &Int) -> i64 {
    model.eval(v, true).and_then(|x| x.as_i64()).unwrap_or(0)
}

fn bool_of(model: &Model, v: &Bool) -> bool {
    model.eval(v, true).and_then(|x| x.as_bool()).unwrap_or(false)
}

fn tensor_of(model: &Model, t: &TensorVars) -> (DType, Vec<i64>) {
    let dtype = DType::ALL[int_of(model, &t.dtype).clamp(0, DType::ALL.len() as i64 - 1) as usize];
    let ndim = int_of(model, &t.ndim).max(0) as usize;
    (dtype, t.dims.iter().take(ndim).map(|d| int_of(model, d)).collect())
}

/// Reads a model back as plain data.
pub fn read(model: &Model, vars: &[ParamVars]) -> SymModel {
    vars.iter()
        .map(|pv| {
            if let Some(p) = &pv.present {
                if !bool_of(model, p) {
                    return SymValue::Absent;
                }
            }
            match &pv.var {
                Var::Tensor(t) => {
                    let (dtype, shape) = tensor_of(model, t);
                    SymValue::Tensor { dtype, shape }
                }
                Var::TensorList { len, items } => {
                    let n = int_of(model, len).max(0) as usize;
                    SymValue::TensorList(items.iter().take(n).map(|t| tensor_of(model, t)).collect())
                }
                Var::Int(v) => SymValue::Int(int_of(model, v)),
                Var::Bool(v) => SymValue::Bool(bool_of(model, v)),
                Var::Enum(v, values) => SymValue::Enum(values[int_of(model, v).clamp(0, values.len() as i64 - 1) as usize].clone()),
                Var::Dtype(v) => SymValue::Dtype(DType::ALL[int_of(model, v).clamp(0, DType::ALL.len() as i64 - 1) as usize]),
                Var::IntList { len, items } => {
                    let n = int_of(model, len).max(0) as usize;
                    SymValue::IntList(items.iter().take(n).map(|v| int_of(model, v)).collect())
                }
                Var::BoolList { len, items } => {
                    let n = int_of(model, len).max(0) as usize;
                    SymValue::BoolList(items.iter().take(n).map(|v| bool_of(model, v)).collect())
                }
                Var::Scalar(v) => SymValue::Scalar(DType::ALL[int_of(model, v).clamp(0, DType::ALL.len() as i64 - 1) as usize]),
                Var::Concrete => SymValue::Concrete,
            }
        })
        .collect()
}

/// What a decision variable stands for; it decides how targets for it are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VarKind {
    /// Index into `DType::ALL` (a tensor's dtype or a dtype parameter).
    Dtype,
    Ndim,
    /// One dimension of a tensor.
    Dim,
    /// Index into an enum's values.
    Enum,
    /// The length of a list.
    Len,
    /// An int parameter or an int-list element.
    Int,
}

/// Every solver variable that decides a model, for blocking clauses and random targets.
pub fn decision_vars(vars: &[ParamVars]) -> (Vec<(Int, VarKind)>, Vec<Bool>) {
    let mut ints = Vec::new();
    let mut bools = Vec::new();
    let tensor = |t: &TensorVars, ints: &mut Vec<(Int, VarKind)>| {
        ints.push((t.dtype.clone(), VarKind::Dtype));
        ints.push((t.ndim.clone(), VarKind::Ndim));
        ints.extend(t.dims.iter().map(|d| (d.clone(), VarKind::Dim)));
    };
    for pv in vars {
        if let Some(p) = &pv.present {
            bools.push(p.clone());
        }
        match &pv.var {
            Var::Tensor(t) => tensor(t, &mut ints),
            Var::TensorList { len, items } => {
                ints.push((len.clone(), VarKind::Len));
                items.iter().for_each(|t| tensor(t, &mut ints));
            }
            Var::Int(v) => ints.push((v.clone(), VarKind::Int)),
            Var::Enum(v, _) => ints.push((v.clone(), VarKind::Enum)),
            Var::Dtype(v) | Var::Scalar(v) => ints.push((v.clone(), VarKind::Dtype)),
            Var::Bool(b) => bools.push(b.clone()),
            Var::IntList { len, items } => {
                ints.push((len.clone(), VarKind::Len));
                ints.extend(items.iter().map(|v| (v.clone(), VarKind::Int)));
            }
            Var::BoolList { len, items } => {
                ints.push((len.clone(), VarKind::Len));
                bools.extend(items.iter().cloned());
            }
            Var::Concrete => {}
        }
    }
    (ints, bools)
}
