//! Which parameters a constraint mentions and what it is about (DocTer's categories), for
//! violation modes, coverage and reports.
use crate::diag::Span;
use crate::spec::{BinOp, Category, Constraint, Origin, ParamSpec, ParamType, Prop, TExpr, Value};

/// Builds a `Constraint` from a checked expression.
pub fn constraint(expr: TExpr, span: Span, text: String, origin: Origin, params: &[ParamSpec]) -> Constraint {
    let mut mentions = Vec::new();
    let mut props = Vec::new();
    let mut none_test = false;
    walk(&expr, &mut mentions, &mut props, &mut none_test);
    mentions.sort_unstable();
    mentions.dedup();
    let category = category(&mentions, &props, none_test, params);
    Constraint { expr, span, text, origin, category, params: mentions }
}

fn category(mentions: &[usize], props: &[Prop], none_test: bool, params: &[ParamSpec]) -> Category {
    if mentions.len() >= 2 {
        return Category::Invariant;
    }
    if none_test {
        return Category::Structure;
    }
    for (prop, cat) in [
        (Prop::Dtype, Category::Dtype),
        (Prop::Ndim, Category::Ndim),
        (Prop::Shape, Category::Shape),
        (Prop::Numel, Category::Shape),
        (Prop::Values, Category::Range),
        (Prop::Len, Category::Structure),
    ] {
        if props.contains(&prop) {
            return cat;
        }
    }
    match mentions.first().and_then(|&i| params.get(i)).map(|p| &p.ty) {
        Some(ParamType::Enum(_) | ParamType::Str) => Category::Enum,
        Some(ParamType::Int | ParamType::Float | ParamType::Scalar) => Category::Range,
        Some(ParamType::IntList(_) | ParamType::FloatList(_) | ParamType::BoolList(_)) => Category::Range,
        _ => Category::Structure,
    }
}

fn walk(e: &TExpr, mentions: &mut Vec<usize>, props: &mut Vec<Prop>, none_test: &mut bool) {
    match e {
        TExpr::Param(i) => mentions.push(*i),
        TExpr::Prop(b, p) => {
            props.push(*p);
            walk(b, mentions, props, none_test);
        }
        TExpr::Binary(op, a, b) => {
            if matches!(op, BinOp::Eq | BinOp::Ne) && (is_none(a) || is_none(b)) {
                *none_test = true;
            }
            walk(a, mentions, props, none_test);
            walk(b, mentions, props, none_test);
        }
        TExpr::Index(a, b) => {
            walk(a, mentions, props, none_test);
            walk(b, mentions, props, none_test);
        }
        TExpr::Each(a) | TExpr::Unary(_, a) => walk(a, mentions, props, none_test),
        TExpr::Range { lo, hi, .. } => {
            walk(lo, mentions, props, none_test);
            walk(hi, mentions, props, none_test);
        }
        TExpr::List(items) | TExpr::Call(_, items) => items.iter().for_each(|i| walk(i, mentions, props, none_test)),
        TExpr::If(c, t, f) => {
            walk(c, mentions, props, none_test);
            walk(t, mentions, props, none_test);
            walk(f, mentions, props, none_test);
        }
        TExpr::Forall { range, body, .. } | TExpr::Exists { range, body, .. } => {
            walk(range, mentions, props, none_test);
            walk(body, mentions, props, none_test);
        }
        TExpr::Lit(_) | TExpr::Result(_) | TExpr::Bound(_) => {}
    }
}

fn is_none(e: &TExpr) -> bool {
    matches!(e, TExpr::Lit(Value::None))
}
