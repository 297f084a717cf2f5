//! `xs[*]` (every element of a list) unrolled: the comparison around it holds for each element,
//! so both the evaluator (`eval`) and the z3 encoding (`solve::encode`) find the list under the
//! first `[*]` of a comparison and write the comparison once per element with `xs[k]` in its
//! place. One implementation, so that the two agree on where a `[*]` may stand (a range's bounds
//! included: `k in 0..xs[*]`).
use super::{TExpr, Value};

impl TExpr {
    /// The list under the first `xs[*]` in the expression, not inside a nested quantifier or
    /// `if`.
    pub fn each_list(&self) -> Option<&TExpr> {
        match self {
            TExpr::Each(inner) => Some(inner),
            TExpr::Prop(b, _) | TExpr::Unary(_, b) => b.each_list(),
            TExpr::Index(a, b) | TExpr::Binary(_, a, b) => a.each_list().or_else(|| b.each_list()),
            TExpr::Range { lo, hi, .. } => lo.each_list().or_else(|| hi.each_list()),
            TExpr::Call(_, args) | TExpr::List(args) => args.iter().find_map(TExpr::each_list),
            _ => None,
        }
    }

    /// The expression with `list[*]` replaced by `list[k]`.
    pub fn each_at(&self, list: &TExpr, k: usize) -> TExpr {
        let go = |x: &TExpr| Box::new(x.each_at(list, k));
        match self {
            TExpr::Each(inner) if **inner == *list => TExpr::Index(inner.clone(), Box::new(TExpr::Lit(Value::Int(k as i64)))),
            TExpr::Prop(b, p) => TExpr::Prop(go(b), *p),
            TExpr::Unary(op, b) => TExpr::Unary(*op, go(b)),
            TExpr::Index(a, b) => TExpr::Index(go(a), go(b)),
            TExpr::Binary(op, a, b) => TExpr::Binary(*op, go(a), go(b)),
            TExpr::Range { lo, hi, inclusive } => TExpr::Range { lo: go(lo), hi: go(hi), inclusive: *inclusive },
            TExpr::Call(b, args) => TExpr::Call(*b, args.iter().map(|a| a.each_at(list, k)).collect()),
            TExpr::List(items) => TExpr::List(items.iter().map(|a| a.each_at(list, k)).collect()),
            other => other.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::BinOp;
    use super::*;

    #[test]
    fn a_range_bound_is_unrolled_too() {
        let xs = TExpr::Param(1);
        let range = TExpr::Range { lo: Box::new(TExpr::Lit(Value::Int(0))), hi: Box::new(TExpr::Each(Box::new(xs.clone()))), inclusive: false };
        let e = TExpr::Binary(BinOp::In, Box::new(TExpr::Param(0)), Box::new(range));
        assert_eq!(e.each_list(), Some(&xs));
        let second = TExpr::Index(Box::new(xs), Box::new(TExpr::Lit(Value::Int(1))));
        let unrolled = TExpr::Range { lo: Box::new(TExpr::Lit(Value::Int(0))), hi: Box::new(second), inclusive: false };
        assert_eq!(e.each_at(&TExpr::Param(1), 1), TExpr::Binary(BinOp::In, Box::new(TExpr::Param(0)), Box::new(unrolled)));
    }
}
