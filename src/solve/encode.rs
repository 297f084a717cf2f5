//! Constraints → z3. Only the symbolic part is encoded: ints, bools, dtypes, enums, ndims,
//! shapes, list lengths and elements, optional presence. A constraint that touches floats, tensor
//! values, outputs or built-ins with no symbolic meaning is *concrete*: it is left to the
//! evaluator once values are drawn (`Encoded::Concrete`).
//!
//! Two semantic rules:
//! - reading a dimension or element that does not exist makes the comparison false (the index
//!   must be in range: `x.shape[2] == 3` implies `x.ndim > 2`);
//! - a constraint that mentions an optional parameter other than in a None test holds vacuously
//!   when that parameter is None.
use std::collections::HashMap;

use z3::ast::{Bool, Int};

use super::vars::{dtype_const, ParamVars, TensorVars, Var};
use super::Limits;
use crate::spec::{BinOp, Builtin, Prop, TExpr, UnOp, Value};
use crate::wire::case::DType;

/// Why a constraint could not be encoded.
#[derive(Debug)]
pub struct Concrete;

type R<T> = Result<T, Concrete>;

/// A symbolic value.
#[derive(Clone, Debug)]
enum Term {
    Int(Int),
    Bool(Bool),
    Dtype(Int),
    DtypeSet(Vec<DType>),
    Str(String),
    Enum(Int, Vec<String>),
    IntList {
        len: Int,
        items: Vec<Int>,
    },
    Tensor(TensorVars),
    TensorList {
        len: Int,
        items: Vec<TensorVars>,
    },
    Range {
        lo: Int,
        hi: Int,
        inclusive: bool,
    },
    List(Vec<Term>),
    None,
    /// An optional parameter (the None test reads `present`).
    Opt(Bool, Box<Term>),
}

/// The encoder for one API.
pub struct Encoder<'a> {
    pub vars: &'a [ParamVars],
    pub limits: &'a Limits,
    bound: HashMap<u32, Term>,
}

impl<'a> Encoder<'a> {
    pub fn new(vars: &'a [ParamVars], limits: &'a Limits) -> Self {
        Encoder { vars, limits, bound: HashMap::new() }
    }

    /// Encodes one constraint, applying the optional-parameter rule.
    pub fn constraint(&mut self, e: &TExpr, mentioned: &[usize]) -> R<Bool> {
        let body = self.boolean(e)?;
        let none_tested = e.none_tested();
        let guards: Vec<Bool> =
            mentioned.iter().filter(|i| !none_tested.contains(i) || e.mentions_beyond_none_test(**i)).filter_map(|&i| self.vars.get(i).and_then(|v| v.present.clone())).collect();
        Ok(if guards.is_empty() { body } else { Bool::and(&guards).implies(&body) })
    }

    fn boolean(&mut self, e: &TExpr) -> R<Bool> {
        let mut guards = Vec::new();
        let t = self.term(e, &mut guards)?;
        let b = as_bool(t)?;
        Ok(with_guards(guards, b))
    }

    fn term(&mut self, e: &TExpr, guards: &mut Vec<Bool>) -> R<Term> {
        // `p == None` on a parameter whose value is concrete (a float, a string) still reads
        // its presence, which the solver does decide.
        if let TExpr::Binary(op @ (BinOp::Eq | BinOp::Ne), a, b) = e {
            if let (TExpr::Param(i), TExpr::Lit(Value::None)) | (TExpr::Lit(Value::None), TExpr::Param(i)) = (&**a, &**b) {
                if let Some(ParamVars { present: Some(p), var: Var::Concrete | Var::Scalar(_) }) = self.vars.get(*i) {
                    return Ok(Term::Bool(if *op == BinOp::Eq { p.not() } else { p.clone() }));
                }
            }
        }
        // A Scalar's kind is decided here, its value later.
        if let TExpr::Prop(base, Prop::Dtype) = e {
            if let TExpr::Param(i) = &**base {
                if let Some(ParamVars { var: Var::Scalar(kind), .. }) = self.vars.get(*i) {
                    return Ok(Term::Dtype(kind.clone()));
                }
            }
        }
        Ok(match e {
            TExpr::Lit(v) => literal(v)?,
            TExpr::Param(i) => {
                let pv = self.vars.get(*i).ok_or(Concrete)?;
                let inner = match &pv.var {
                    Var::Tensor(t) => Term::Tensor(t.clone()),
                    Var::TensorList { len, items } => Term::TensorList { len: len.clone(), items: items.clone() },
                    Var::Int(v) => Term::Int(v.clone()),
                    Var::Bool(b) => Term::Bool(b.clone()),
                    Var::Enum(v, values) => Term::Enum(v.clone(), values.clone()),
                    Var::Dtype(v) => Term::Dtype(v.clone()),
                    Var::IntList { len, items } => Term::IntList { len: len.clone(), items: items.clone() },
                    Var::BoolList { .. } | Var::Concrete | Var::Scalar(_) => return Err(Concrete),
                };
                match &pv.present {
                    Some(p) => Term::Opt(p.clone(), Box::new(inner)),
                    None => inner,
                }
            }
            TExpr::Result(_) => return Err(Concrete),
            TExpr::Bound(id) => self.bound.get(id).cloned().ok_or(Concrete)?,
            TExpr::Prop(base, prop) => {
                let b = strip(self.term(base, guards)?);
                match (b, prop) {
                    (Term::Tensor(t), Prop::Dtype) => Term::Dtype(t.dtype),
                    (Term::Tensor(t), Prop::Ndim) => Term::Int(t.ndim),
                    (Term::Tensor(t), Prop::Shape) => Term::IntList { len: t.ndim, items: t.dims },
                    (Term::Tensor(t), Prop::Numel) => Term::Int(Int::mul(&t.dims)),
                    (Term::IntList { len, .. } | Term::TensorList { len, .. }, Prop::Len) => Term::Int(len),
                    (Term::List(items), Prop::Len) => Term::Int(Int::from_i64(items.len() as i64)),
                    _ => return Err(Concrete),
                }
            }
            TExpr::Index(base, index) => {
                let b = strip(self.term(base, guards)?);
                let i = as_int(self.term(index, guards)?)?;
                self.index(b, i, guards)?
            }
            // `xs[*]` outside a comparison the encoder can expand.
            TExpr::Each(_) => return Err(Concrete),
            TExpr::Unary(UnOp::Not, inner) => Term::Bool(self.boolean(inner)?.not()),
            TExpr::Unary(UnOp::Neg, inner) => Term::Int(as_int(self.term(inner, guards)?)?.unary_minus()),
            TExpr::Binary(op, l, r) => self.binary(*op, l, r, guards)?,
            TExpr::Range { lo, hi, inclusive } => Term::Range { lo: as_int(self.term(lo, guards)?)?, hi: as_int(self.term(hi, guards)?)?, inclusive: *inclusive },
            TExpr::List(items) => Term::List(items.iter().map(|i| self.term(i, guards)).collect::<R<_>>()?),
            TExpr::If(c, t, f) => {
                let c = self.boolean(c)?;
                let mut tg = Vec::new();
                let mut fg = Vec::new();
                let tt = self.term(t, &mut tg)?;
                let ft = self.term(f, &mut fg)?;
                match (tt, ft) {
                    (Term::Bool(a), Term::Bool(b)) => Term::Bool(c.ite(&with_guards(tg, a), &with_guards(fg, b))),
                    (a, b) => {
                        // Only the branch taken must be defined: `other.shape[-2]` in the `else`
                        // of `if other.ndim == 1` does not constrain a 1-D `other`.
                        if !tg.is_empty() {
                            guards.push(c.implies(Bool::and(&tg)));
                        }
                        if !fg.is_empty() {
                            guards.push(c.not().implies(Bool::and(&fg)));
                        }
                        Term::Int(c.ite(&as_int(a)?, &as_int(b)?))
                    }
                }
            }
            TExpr::Forall { var, range, body } | TExpr::Exists { var, range, body } => {
                let forall = matches!(e, TExpr::Forall { .. });
                let r = self.term(range, guards)?;
                let mut parts = Vec::new();
                match r {
                    Term::Range { lo, hi, inclusive } => {
                        let (from, to) = self.expansion_bounds(range);
                        for k in from..=to {
                            let kk = Int::from_i64(k);
                            let inside = Bool::and(&[lo.le(&kk), if inclusive { kk.le(&hi) } else { kk.lt(&hi) }]);
                            self.bound.insert(*var, Term::Int(kk));
                            let b = self.boolean(body)?;
                            parts.push(if forall { inside.implies(&b) } else { Bool::and(&[inside, b]) });
                        }
                    }
                    Term::IntList { len, items } => {
                        for (k, item) in items.iter().enumerate() {
                            let inside = Int::from_i64(k as i64).lt(&len);
                            self.bound.insert(*var, Term::Int(item.clone()));
                            let b = self.boolean(body)?;
                            parts.push(if forall { inside.implies(&b) } else { Bool::and(&[inside, b]) });
                        }
                    }
                    Term::TensorList { len, items } => {
                        for (k, item) in items.iter().enumerate() {
                            let inside = Int::from_i64(k as i64).lt(&len);
                            self.bound.insert(*var, Term::Tensor(item.clone()));
                            let b = self.boolean(body)?;
                            parts.push(if forall { inside.implies(&b) } else { Bool::and(&[inside, b]) });
                        }
                    }
                    Term::List(items) => {
                        for item in items {
                            self.bound.insert(*var, item);
                            parts.push(self.boolean(body)?);
                        }
                    }
                    _ => return Err(Concrete),
                }
                self.bound.remove(var);
                Term::Bool(if forall { Bool::and(&parts) } else { Bool::or(&parts) })
            }
            TExpr::Call(b, args) => self.call(*b, args, guards)?,
        })
    }

    /// The values a quantified variable over `range` can take: the literal bounds when constant,
    /// else every index a dimension or list element could have.
    fn expansion_bounds(&self, range: &TExpr) -> (i64, i64) {
        let reach = self.limits.max_ndim.max(self.limits.max_list_len).max(self.limits.max_tensor_list) as i64;
        if let TExpr::Range { lo, hi, inclusive } = range {
            let lo = match **lo {
                TExpr::Lit(Value::Int(v)) => v.max(-reach),
                _ => -reach,
            };
            let hi = match **hi {
                TExpr::Lit(Value::Int(v)) => (if *inclusive { v } else { v - 1 }).min(lo + 256),
                _ => reach,
            };
            return (lo, hi);
        }
        (-reach, reach)
    }

    fn index(&mut self, base: Term, i: Int, guards: &mut Vec<Bool>) -> R<Term> {
        // Negative indices count from the end, as in Python.
        let norm = |len: &Int| i.lt(0).ite(&Int::add(&[len.clone(), i.clone()]), &i);
        match base {
            Term::IntList { len, items } => {
                let k = norm(&len);
                guards.push(k.ge(0));
                guards.push(k.lt(&len));
                Ok(Term::Int(select(&items, &k, Int::from_i64(1))))
            }
            Term::TensorList { len, items } => {
                let k = norm(&len);
                guards.push(k.ge(0));
                guards.push(k.lt(&len));
                let pick = |f: fn(&TensorVars) -> Int| {
                    let xs: Vec<Int> = items.iter().map(f).collect();
                    select(&xs, &k, Int::from_i64(0))
                };
                let dims = (0..self.limits.max_ndim as usize)
                    .map(|d| {
                        let xs: Vec<Int> = items.iter().map(|t| t.dims[d].clone()).collect();
                        select(&xs, &k, Int::from_i64(1))
                    })
                    .collect();
                Ok(Term::Tensor(TensorVars { dtype: pick(|t| t.dtype.clone()), ndim: pick(|t| t.ndim.clone()), dims }))
            }
            Term::List(items) => {
                let ints: Vec<Int> = items.into_iter().map(as_int).collect::<R<_>>()?;
                let len = Int::from_i64(ints.len() as i64);
                let k = norm(&len);
                guards.push(k.ge(0));
                guards.push(k.lt(&len));
                Ok(Term::Int(select(&ints, &k, Int::from_i64(0))))
            }
            _ => Err(Concrete),
        }
    }

    fn binary(&mut self, op: BinOp, l: &TExpr, r: &TExpr, guards: &mut Vec<Bool>) -> R<Term> {
        if matches!(op, BinOp::And | BinOp::Or | BinOp::Implies) {
            let a = self.boolean(l)?;
            let b = self.boolean(r)?;
            return Ok(Term::Bool(match op {
                BinOp::And => Bool::and(&[a, b]),
                BinOp::Or => Bool::or(&[a, b]),
                _ => a.implies(&b),
            }));
        }
        if op.is_comparison() {
            return Ok(Term::Bool(self.comparison(op, l, r)?));
        }
        let a = as_int(self.term(l, guards)?)?;
        let b = as_int(self.term(r, guards)?)?;
        Ok(Term::Int(match op {
            BinOp::Add => Int::add(&[a, b]),
            BinOp::Sub => Int::sub(&[a, b]),
            BinOp::Mul => Int::mul(&[a, b]),
            BinOp::Div => {
                guards.push(b.eq(0).not());
                a.div(&b)
            }
            BinOp::Rem => {
                guards.push(b.eq(0).not());
                a.modulo(&b)
            }
            _ => return Err(Concrete),
        }))
    }

    /// A comparison, expanding `xs[*]` into one comparison per element.
    fn comparison(&mut self, op: BinOp, l: &TExpr, r: &TExpr) -> R<Bool> {
        if let Some(list) = l.each_list().or_else(|| r.each_list()) {
            let mut g = Vec::new();
            let (len, n) = match strip(self.term(list, &mut g)?) {
                Term::IntList { len, items } => (len, items.len()),
                Term::TensorList { len, items } => (len, items.len()),
                Term::List(items) => (Int::from_i64(items.len() as i64), items.len()),
                _ => return Err(Concrete),
            };
            let mut parts = Vec::new();
            for k in 0..n {
                let l2 = l.each_at(list, k);
                let r2 = r.each_at(list, k);
                let c = self.comparison(op, &l2, &r2)?;
                parts.push(Int::from_i64(k as i64).lt(&len).implies(&c));
            }
            return Ok(with_guards(g, Bool::and(&parts)));
        }
        let mut guards = Vec::new();
        let a = self.term(l, &mut guards)?;
        let b = self.term(r, &mut guards)?;
        let c = match op {
            BinOp::Eq => equal(a, b)?,
            BinOp::Ne => equal(a, b)?.not(),
            BinOp::In => member(a, b)?,
            BinOp::NotIn => member(a, b)?.not(),
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
                let (x, y) = (as_int(a)?, as_int(b)?);
                match op {
                    BinOp::Lt => x.lt(&y),
                    BinOp::Le => x.le(&y),
                    BinOp::Gt => x.gt(&y),
                    _ => x.ge(&y),
                }
            }
            _ => return Err(Concrete),
        };
        Ok(with_guards(guards, c))
    }

    fn call(&mut self, b: Builtin, args: &[TExpr], guards: &mut Vec<Bool>) -> R<Term> {
        match b {
            Builtin::Len => match strip(self.term(&args[0], guards)?) {
                Term::IntList { len, .. } | Term::TensorList { len, .. } => Ok(Term::Int(len)),
                Term::List(items) => Ok(Term::Int(Int::from_i64(items.len() as i64))),
                _ => Err(Concrete),
            },
            Builtin::Min | Builtin::Max => {
                let xs: Vec<Int> = args.iter().map(|a| self.term(a, guards).and_then(as_int)).collect::<R<_>>()?;
                let max = b == Builtin::Max;
                Ok(Term::Int(xs.into_iter().reduce(|a, b| if max { a.gt(&b).ite(&a, &b) } else { a.lt(&b).ite(&a, &b) }).ok_or(Concrete)?))
            }
            Builtin::Prod => match strip(self.term(&args[0], guards)?) {
                Term::IntList { len, items } => {
                    let factors: Vec<Int> = items.iter().enumerate().map(|(k, x)| Int::from_i64(k as i64).lt(&len).ite(x, &Int::from_i64(1))).collect();
                    Ok(Term::Int(if factors.is_empty() { Int::from_i64(1) } else { Int::mul(&factors) }))
                }
                Term::List(items) => {
                    let xs: Vec<Int> = items.into_iter().map(as_int).collect::<R<_>>()?;
                    Ok(Term::Int(if xs.is_empty() { Int::from_i64(1) } else { Int::mul(&xs) }))
                }
                _ => Err(Concrete),
            },
            Builtin::Abs => {
                let x = as_int(self.term(&args[0], guards)?)?;
                Ok(Term::Int(x.lt(0).ite(&x.unary_minus(), &x)))
            }
            Builtin::Broadcastable => {
                let shapes: Vec<(Int, Vec<Int>)> = args
                    .iter()
                    .map(|a| match strip(self.term(a, guards)?) {
                        Term::Tensor(t) => Ok((t.ndim, t.dims)),
                        Term::IntList { len, items } => Ok((len, items)),
                        _ => Err(Concrete),
                    })
                    .collect::<R<_>>()?;
                let mut parts = Vec::new();
                for (x, (na, da)) in shapes.iter().enumerate() {
                    for (nb, db) in shapes.iter().skip(x + 1) {
                        for i in 0..da.len().max(db.len()) {
                            // The i-th dimension from the right, where both shapes have one.
                            let ii = Int::from_i64(i as i64);
                            let a = from_right(da, na, &ii);
                            let b = from_right(db, nb, &ii);
                            let both = Bool::and(&[ii.lt(na), ii.lt(nb)]);
                            parts.push(both.implies(Bool::or(&[a.eq(&b), a.eq(1), b.eq(1)])));
                        }
                    }
                }
                Ok(Term::Bool(Bool::and(&parts)))
            }
            Builtin::Finite | Builtin::NoNan | Builtin::Contiguous => Err(Concrete),
        }
    }
}

fn from_right(dims: &[Int], ndim: &Int, i: &Int) -> Int {
    let k = Int::sub(&[ndim.clone(), Int::from_i64(1), i.clone()]);
    select(dims, &k, Int::from_i64(1))
}

/// `items[k]` for a symbolic k, as a chain of if-then-else.
fn select(items: &[Int], k: &Int, default: Int) -> Int {
    let mut out = default;
    for (i, item) in items.iter().enumerate().rev() {
        out = k.eq(i as i64).ite(item, &out);
    }
    out
}

fn with_guards(mut guards: Vec<Bool>, b: Bool) -> Bool {
    if guards.is_empty() {
        b
    } else {
        guards.push(b);
        Bool::and(&guards)
    }
}

fn strip(t: Term) -> Term {
    match t {
        Term::Opt(_, inner) => *inner,
        t => t,
    }
}

fn as_int(t: Term) -> R<Int> {
    match strip(t) {
        Term::Int(i) => Ok(i),
        _ => Err(Concrete),
    }
}

fn as_bool(t: Term) -> R<Bool> {
    match strip(t) {
        Term::Bool(b) => Ok(b),
        _ => Err(Concrete),
    }
}

fn literal(v: &Value) -> R<Term> {
    Ok(match v {
        Value::None => Term::None,
        Value::Bool(b) => Term::Bool(Bool::from_bool(*b)),
        Value::Int(i) => Term::Int(Int::from_i64(*i)),
        Value::Float(_) => return Err(Concrete),
        Value::Str(s) => Term::Str(s.clone()),
        Value::Dtype(d) => Term::Dtype(dtype_const(*d)),
        Value::DtypeSet(ds) => Term::DtypeSet(ds.clone()),
        Value::List(items) => Term::List(items.iter().map(literal).collect::<R<_>>()?),
    })
}

fn equal(a: Term, b: Term) -> R<Bool> {
    Ok(match (a, b) {
        (Term::Opt(p, _), Term::None) | (Term::None, Term::Opt(p, _)) => p.not(),
        (Term::None, Term::None) => Bool::from_bool(true),
        (_, Term::None) | (Term::None, _) => Bool::from_bool(false),
        (Term::Opt(_, a), b) => equal(*a, b)?,
        (a, Term::Opt(_, b)) => equal(a, *b)?,
        (Term::Int(x), Term::Int(y)) => x.eq(&y),
        (Term::Bool(x), Term::Bool(y)) => x.iff(&y),
        (Term::Dtype(x), Term::Dtype(y)) => x.eq(&y),
        (Term::Str(x), Term::Str(y)) => Bool::from_bool(x == y),
        (Term::Enum(v, values), Term::Str(s)) | (Term::Str(s), Term::Enum(v, values)) => match values.iter().position(|x| *x == s) {
            Some(k) => v.eq(k as i64),
            None => Bool::from_bool(false),
        },
        (Term::Enum(x, _), Term::Enum(y, _)) => x.eq(&y),
        (a @ (Term::IntList { .. } | Term::List(_)), b @ (Term::IntList { .. } | Term::List(_))) => {
            let (la, ia) = int_list(a)?;
            let (lb, ib) = int_list(b)?;
            let mut parts = vec![la.eq(&lb)];
            for k in 0..ia.len().min(ib.len()) {
                parts.push(Int::from_i64(k as i64).lt(&la).implies(ia[k].eq(&ib[k])));
            }
            // Lengths beyond the shorter list's capacity cannot match.
            let cap = ia.len().min(ib.len()) as i64;
            parts.push(la.le(cap));
            Bool::and(&parts)
        }
        _ => return Err(Concrete),
    })
}

fn int_list(t: Term) -> R<(Int, Vec<Int>)> {
    match t {
        Term::IntList { len, items } => Ok((len, items)),
        Term::List(items) => {
            let n = items.len();
            Ok((Int::from_i64(n as i64), items.into_iter().map(as_int).collect::<R<_>>()?))
        }
        _ => Err(Concrete),
    }
}

fn member(a: Term, b: Term) -> R<Bool> {
    let a = strip(a);
    Ok(match b {
        Term::Range { lo, hi, inclusive } => {
            let x = as_int(a)?;
            Bool::and(&[lo.le(&x), if inclusive { x.le(&hi) } else { x.lt(&hi) }])
        }
        Term::DtypeSet(ds) => {
            let Term::Dtype(x) = a else { return Err(Concrete) };
            Bool::or(&ds.iter().map(|d| x.eq(dtype_const(*d))).collect::<Vec<_>>())
        }
        Term::List(items) => {
            let parts = items.into_iter().map(|i| equal(a.clone(), i)).collect::<R<Vec<_>>>()?;
            Bool::or(&parts)
        }
        _ => return Err(Concrete),
    })
}
