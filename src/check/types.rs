//! The checker's types, how parameter types are read from the syntax tree, and constant
//! evaluation of defaults.
use crate::ast::{self, ExprKind, TypeKind};
use crate::diag::{codes, Diagnostic};
use crate::spec::{ParamType, Value};
use crate::wire::case::DType;

/// The type of an expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Ty {
    Bool,
    Int,
    Float,
    Str,
    Dtype,
    DtypeSet,
    Tensor,
    List(Box<Ty>),
    /// The elements of a tensor (`t.values`), compared with numbers or ranges.
    Values,
    Range(Box<Ty>),
    None,
    Enum(Vec<String>),
    /// An optional parameter's value: T or None.
    Opt(Box<Ty>),
    /// The outputs of a call returning several values (`result.0`).
    Tuple(Vec<Ty>),
    /// A type error was already reported for this expression; accept anything.
    Error,
}

impl Ty {
    pub fn describe(&self) -> String {
        match self {
            Ty::Bool => "bool".into(),
            Ty::Int => "int".into(),
            Ty::Float => "float".into(),
            Ty::Str => "str".into(),
            Ty::Dtype => "dtype".into(),
            Ty::DtypeSet => "dtype set".into(),
            Ty::Tensor => "Tensor".into(),
            Ty::List(t) => format!("{}[]", t.describe()),
            Ty::Values => "tensor values".into(),
            Ty::Range(t) => format!("range of {}", t.describe()),
            Ty::None => "None".into(),
            Ty::Enum(vs) => vs.iter().map(|v| format!("{v:?}")).collect::<Vec<_>>().join(" | "),
            Ty::Opt(t) => format!("{}?", t.describe()),
            Ty::Tuple(ts) => format!("({})", ts.iter().map(Ty::describe).collect::<Vec<_>>().join(", ")),
            Ty::Error => "{unknown}".into(),
        }
    }

    /// "an int", "a Tensor": the description with its article.
    pub fn a(&self) -> String {
        let d = self.describe();
        let vowel = d.starts_with(|c: char| "aeiouAEIOU".contains(c)) && !d.starts_with("uint");
        format!("{} {d}", if vowel { "an" } else { "a" })
    }

    /// The type without its optionality.
    pub fn strip_opt(&self) -> &Ty {
        match self {
            Ty::Opt(t) => t,
            t => t,
        }
    }

    pub fn is_numeric(&self) -> bool {
        matches!(self.strip_opt(), Ty::Int | Ty::Float | Ty::Error)
    }

    pub fn is_error(&self) -> bool {
        matches!(self, Ty::Error)
    }

    pub fn of_param(ty: &ParamType, optional: bool) -> Ty {
        let base = match ty {
            ParamType::Tensor => Ty::Tensor,
            ParamType::TensorList => Ty::List(Box::new(Ty::Tensor)),
            ParamType::Int => Ty::Int,
            ParamType::Float | ParamType::Scalar => Ty::Float,
            ParamType::Bool => Ty::Bool,
            ParamType::Str => Ty::Str,
            ParamType::Enum(vs) => Ty::Enum(vs.clone()),
            ParamType::Dtype => Ty::Dtype,
            ParamType::IntList(_) => Ty::List(Box::new(Ty::Int)),
            ParamType::FloatList(_) => Ty::List(Box::new(Ty::Float)),
            ParamType::BoolList(_) => Ty::List(Box::new(Ty::Bool)),
        };
        if optional {
            Ty::Opt(Box::new(base))
        } else {
            base
        }
    }
}

/// Whether values of types `a` and `b` may be compared with `==`.
pub fn comparable(a: &Ty, b: &Ty) -> bool {
    use Ty::*;
    match (a, b) {
        (Error, _) | (_, Error) => true,
        (Opt(_), None) | (None, Opt(_)) | (None, None) => true,
        (Opt(x), y) | (y, Opt(x)) => comparable(x, y),
        (x, y) if x.is_numeric() && y.is_numeric() => true,
        (Values, y) | (y, Values) => y.is_numeric(),
        (Str | Enum(_), Str | Enum(_)) => true,
        (List(x), List(y)) => comparable(x, y),
        (Dtype, Dtype) | (Bool, Bool) | (DtypeSet, DtypeSet) => true,
        _ => false,
    }
}

/// Reads a parameter type: the kind and whether it is optional. Type aliases are expanded by
/// `alias` (name → the aliased syntax type).
pub fn param_type(ty: &ast::Type, alias: &mut dyn FnMut(&str) -> Option<ast::Type>, diags: &mut Vec<Diagnostic>) -> Option<(ParamType, bool)> {
    match &ty.kind {
        TypeKind::Optional(inner) => {
            let (t, _) = param_type(inner, alias, diags)?;
            Some((t, true))
        }
        TypeKind::Named(id) => {
            let t =
                match id.name.as_str() {
                    "Tensor" => ParamType::Tensor,
                    "int" | "SymInt" => ParamType::Int,
                    "float" => ParamType::Float,
                    "bool" => ParamType::Bool,
                    "str" => ParamType::Str,
                    "dtype" | "ScalarType" => ParamType::Dtype,
                    "Scalar" | "number" => ParamType::Scalar,
                    name => {
                        if let Some(aliased) = alias(name) {
                            return param_type(&aliased, alias, diags);
                        }
                        diags.push(Diagnostic::new(codes::E0002, format!("cannot find type `{name}`")).with_label(id.span, "not a type").with_help(
                            "the types are Tensor, int, float, bool, str, dtype, Scalar, lists like int[] or int[2], string enums like \"a\" | \"b\", and T? for optional",
                        ));
                        return None;
                    }
                };
            Some((t, false))
        }
        TypeKind::List(elem, len) => {
            let (e, opt) = param_type(elem, alias, diags)?;
            let t = match (e, opt) {
                (ParamType::Int, false) => ParamType::IntList(*len),
                (ParamType::Float | ParamType::Scalar, false) => ParamType::FloatList(*len),
                (ParamType::Bool, false) => ParamType::BoolList(*len),
                (ParamType::Tensor, false) => ParamType::TensorList,
                (other, _) => {
                    diags.push(
                        Diagnostic::new(codes::E0006, "unsupported list element type")
                            .with_label(elem.span, format!("lists of `{}` are not supported", other.describe()))
                            .with_help("lists hold int, float, bool or Tensor"),
                    );
                    return None;
                }
            };
            Some((t, false))
        }
        TypeKind::Tuple(elems) => {
            let mut kinds = Vec::new();
            for e in elems {
                kinds.push(param_type(e, alias, diags)?.0);
            }
            let n = Some(kinds.len() as u32);
            let first = kinds[0].clone();
            if kinds.iter().any(|k| *k != first) {
                diags.push(
                    Diagnostic::new(codes::E0006, "tuple elements must share one type")
                        .with_label(ty.span, "mixed element types")
                        .with_help("write a fixed-length list instead, e.g. `int[2]`"),
                );
                return None;
            }
            let t = match first {
                ParamType::Int => ParamType::IntList(n),
                ParamType::Float | ParamType::Scalar => ParamType::FloatList(n),
                ParamType::Bool => ParamType::BoolList(n),
                ParamType::Tensor => ParamType::TensorList,
                other => {
                    diags.push(Diagnostic::new(codes::E0006, "unsupported tuple element type").with_label(ty.span, format!("tuples of `{}` are not supported", other.describe())));
                    return None;
                }
            };
            Some((t, false))
        }
        TypeKind::StrLit(s) => Some((ParamType::Enum(vec![s.clone()]), false)),
        TypeKind::Union(parts) => {
            let mut values = Vec::new();
            for p in parts {
                match &p.kind {
                    TypeKind::StrLit(s) => values.push(s.clone()),
                    _ => {
                        diags.push(
                            Diagnostic::new(codes::E0006, "only string literals may form a union")
                                .with_label(p.span, "not a string literal")
                                .with_help("a union type is a string enum, e.g. `\"mean\" | \"sum\" | \"none\"`"),
                        );
                        return None;
                    }
                }
            }
            Some((ParamType::Enum(values), false))
        }
    }
}

/// Evaluates a default value: a literal, a list of literals, a negated number, a dtype, None.
pub fn const_value(e: &ast::Expr) -> Option<Value> {
    Some(match &e.kind {
        ExprKind::Int(v) => Value::Int(*v),
        ExprKind::Float { value, .. } => Value::Float(*value),
        ExprKind::Str(s) => Value::Str(s.clone()),
        ExprKind::Bool(b) => Value::Bool(*b),
        ExprKind::None => Value::None,
        ExprKind::Paren(inner) => const_value(inner)?,
        ExprKind::Unary(crate::spec::UnOp::Neg, inner) => match const_value(inner)? {
            Value::Int(v) => Value::Int(v.checked_neg()?),
            Value::Float(v) => Value::Float(-v),
            _ => return None,
        },
        ExprKind::Name(n) => Value::Dtype(DType::from_name(n)?),
        ExprKind::List(items) => Value::List(items.iter().map(const_value).collect::<Option<_>>()?),
        _ => return None,
    })
}

/// Whether a constant fits a parameter type (None needs an optional parameter: checked apart).
pub fn value_fits(v: &Value, ty: &ParamType) -> bool {
    match (v, ty) {
        (Value::None, _) => true,
        (Value::Int(_), ParamType::Int | ParamType::Float | ParamType::Scalar) => true,
        (Value::Float(_), ParamType::Float | ParamType::Scalar) => true,
        (Value::Bool(_), ParamType::Bool) => true,
        (Value::Str(_), ParamType::Str) => true,
        (Value::Str(s), ParamType::Enum(vs)) => vs.contains(s),
        (Value::Dtype(_), ParamType::Dtype) => true,
        // ATen accepts a single int for an int[N] (it is repeated), as Python does.
        (Value::Int(_), ParamType::IntList(_)) => true,
        (Value::List(items), ParamType::IntList(n)) => n.is_none_or(|n| items.len() == n as usize) && items.iter().all(|i| matches!(i, Value::Int(_))),
        (Value::List(items), ParamType::FloatList(n)) => n.is_none_or(|n| items.len() == n as usize) && items.iter().all(|i| matches!(i, Value::Int(_) | Value::Float(_))),
        (Value::List(items), ParamType::BoolList(n)) => n.is_none_or(|n| items.len() == n as usize) && items.iter().all(|i| matches!(i, Value::Bool(_))),
        _ => false,
    }
}
