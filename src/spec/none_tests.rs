//! Where a constraint tests a parameter against None. The optional-parameter rule (a constraint
//! that mentions an optional parameter other than in a `== None` test holds when it is None)
//! needs both the evaluator (`eval`) and the z3 encoding (`solve::encode`) to tell such a test
//! from any other mention, the same way.
use super::{BinOp, TExpr, Value};

impl TExpr {
    /// Parameters compared with None somewhere in the expression (not looking into range bounds,
    /// lists, calls or a quantifier's range), in the order met.
    pub fn none_tested(&self) -> Vec<usize> {
        let mut out = Vec::new();
        self.collect_none_tests(&mut out);
        out
    }

    fn collect_none_tests(&self, out: &mut Vec<usize>) {
        match self {
            TExpr::Binary(BinOp::Eq | BinOp::Ne, a, b) => {
                for (x, y) in [(a, b), (b, a)] {
                    if let (TExpr::Param(i), TExpr::Lit(Value::None)) = (&**x, &**y) {
                        out.push(*i);
                    }
                }
                a.collect_none_tests(out);
                b.collect_none_tests(out);
            }
            TExpr::Binary(_, a, b) | TExpr::Index(a, b) => {
                a.collect_none_tests(out);
                b.collect_none_tests(out);
            }
            TExpr::Unary(_, a) | TExpr::Prop(a, _) | TExpr::Each(a) => a.collect_none_tests(out),
            TExpr::If(c, t, f) => {
                c.collect_none_tests(out);
                t.collect_none_tests(out);
                f.collect_none_tests(out);
            }
            TExpr::Forall { body, .. } | TExpr::Exists { body, .. } => body.collect_none_tests(out),
            _ => {}
        }
    }

    /// Whether parameter `i` appears somewhere other than directly in a `== None` / `!= None`
    /// test.
    pub fn mentions_beyond_none_test(&self, i: usize) -> bool {
        match self {
            TExpr::Param(j) => *j == i,
            TExpr::Binary(BinOp::Eq | BinOp::Ne, a, b) if matches!((&**a, &**b), (TExpr::Param(j), TExpr::Lit(Value::None)) | (TExpr::Lit(Value::None), TExpr::Param(j)) if *j == i) => {
                false
            }
            TExpr::Binary(_, a, b) | TExpr::Index(a, b) => a.mentions_beyond_none_test(i) || b.mentions_beyond_none_test(i),
            TExpr::Unary(_, a) | TExpr::Prop(a, _) | TExpr::Each(a) => a.mentions_beyond_none_test(i),
            TExpr::Range { lo, hi, .. } => lo.mentions_beyond_none_test(i) || hi.mentions_beyond_none_test(i),
            TExpr::If(c, t, f) => c.mentions_beyond_none_test(i) || t.mentions_beyond_none_test(i) || f.mentions_beyond_none_test(i),
            TExpr::Forall { range, body, .. } | TExpr::Exists { range, body, .. } => range.mentions_beyond_none_test(i) || body.mentions_beyond_none_test(i),
            TExpr::List(items) | TExpr::Call(_, items) => items.iter().any(|x| x.mentions_beyond_none_test(i)),
            TExpr::Lit(_) | TExpr::Result(_) | TExpr::Bound(_) => false,
        }
    }
}
