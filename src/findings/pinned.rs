//! A finding's case as a spec: the API's declaration with every argument pinned (dtype and shape
//! of each tensor, the range its values were drawn from, the value of each scalar) and the
//! oracle that fired. `sfz fuzz` on it runs only cases like the finding's; the exact case (seeds
//! included) is the finding's JSON line, which `sfz replay` runs.
use std::fmt::Write as _;

use crate::spec::{ApiSpec, FromSpec, ParamType};
use crate::wire::case::{Arg, Case, Fill, FwdArg, Layout, ShapePart, Special, TensorRecipe};
use crate::wire::oracle::Oracle;
use crate::wire::variant::relation::{Callee, RelExpr, RelFn, RelOp, Relation};
use crate::wire::variant::{Check, Variant};

/// The pinned spec text. `oracle` is the oracle that fired (with the check's tolerances for a
/// differential one); `ensures` are the postcondition clauses to keep.
pub fn pinned_spec(api: &ApiSpec, case: &Case, header: &str, oracle: Oracle, check: Option<&Check>, ensures: &[&str]) -> String {
    let mut out = String::new();
    for line in header.lines() {
        let _ = writeln!(out, "{}", format!("// {line}").trim_end());
    }
    out.push_str("// The case pinned: `sfz fuzz` on this file runs only cases like it (values drawn from the same\n");
    out.push_str("// ranges); `sfz replay` runs the exact one.\n");
    if let Some(from) = &api.from {
        let _ = writeln!(out, "\n// The forward its `from` statement calls (its constraints are among the pinned API's; fuzz\n// the pinned API alone with `--api {}`).", api.name);
        out.push_str(&declaration(&from.callee));
        out.push_str(" {}\n\n");
    }
    out.push_str(&declaration(api));
    out.push_str(" {\n");
    if let Some(from) = &api.from {
        out.push_str(&from_text(api, from));
        if let Some(b) = case.forward.as_ref().and_then(|f| f.broken.as_ref()) {
            let name = api.params.get(b.param).map_or("?", |p| p.name.as_str());
            let _ = writeln!(out, "    // After the forward, `{name}` was broken on purpose: {} (seed {}).", b.kind.describe(), b.seed);
        }
    }
    pins(&mut out, api, case);
    for e in ensures {
        let _ = writeln!(out, "    ensures {e};");
    }
    // A relation is a statement of its own, not an oracle; `crash` alone beside it.
    match check.map(|c| &c.variant) {
        Some(Variant::Relation(r)) if oracle == Oracle::Relation => {
            match relation_source(api, r) {
                Some(source) => {
                    let _ = writeln!(out, "    {source};");
                }
                None => {
                    let _ = writeln!(out, "    // {} (it calls another API, declared in the original spec)", r.text.lines().next().unwrap_or(""));
                }
            }
            out.push_str("    oracles crash;\n");
        }
        _ => {
            let _ = writeln!(out, "    oracles {};", oracle_text(oracle, check));
        }
    }
    out.push_str("}\n");
    out
}

/// `#[aten]` and the `api` line of an API, without its body.
fn declaration(api: &ApiSpec) -> String {
    let mut out = String::new();
    if let Some(aten) = &api.aten {
        let _ = writeln!(out, "#[aten({aten:?})]");
    }
    let mut params = Vec::new();
    let mut kw = false;
    for p in &api.params {
        if p.kw_only && !kw {
            params.push("*".to_string());
            kw = true;
        }
        let mut s = format!("{}: {}{}", p.name, type_text(&p.ty), if p.optional { "?" } else { "" });
        if let Some(d) = &p.default {
            let _ = write!(s, " = {}", crate::spec::value_text(d));
        }
        params.push(s);
    }
    let returns = match api.returns.as_slice() {
        [] => String::new(),
        [r] if r.name == "result" => format!(" -> {}", type_text(&r.ty)),
        rs => format!(
            " -> ({})",
            rs.iter()
                .enumerate()
                .map(|(i, r)| format!("{}: {}", if r.name.contains('.') { format!("r{i}") } else { r.name.clone() }, type_text(&r.ty)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    out.push_str(&format!("api {}({}){returns}", api.name, params.join(", ")));
    out
}

/// The `from` statement of `api`, one line per binding, indented for its body.
fn from_text(api: &ApiSpec, from: &FromSpec) -> String {
    let name = |p: usize| api.params.get(p).map_or("?".to_string(), |x| x.name.clone());
    let mut args = Vec::new();
    for (fp, a) in from.callee.params.iter().zip(&from.args) {
        let value = match a {
            FwdArg::Param(p) => name(*p),
            FwdArg::Value(v) => arg_text(v),
            FwdArg::Default => continue,
            FwdArg::Like { param, shape } => {
                let parts: Vec<String> = shape
                    .iter()
                    .map(|s| match s {
                        ShapePart::Int(k) | ShapePart::List(k) | ShapePart::Shape(k) => name(*k),
                        ShapePart::Const(v) => v.to_string(),
                    })
                    .collect();
                match shape.as_slice() {
                    [ShapePart::Shape(_)] => format!("like({})", name(*param)),
                    [ShapePart::List(_)] => format!("like({}, {})", name(*param), parts.join("")),
                    _ => format!("like({}, [{}])", name(*param), parts.join(", ")),
                }
            }
        };
        args.push(format!("{} = {value}", fp.name));
    }
    let mut out = format!("    from {}({}) {{\n", from.callee.name, args.join(", "));
    let single = from.callee.returns.len() == 1;
    for b in &from.binds {
        let output = if single { "result".to_string() } else { format!("result.{}", b.output) };
        let value = if b.like { format!("like({output})") } else { output };
        let _ = writeln!(out, "        {}: {value};", name(b.param));
    }
    out.push_str("    }\n");
    out
}

/// A constant argument in the spec language.
fn arg_text(a: &Arg) -> String {
    match a {
        Arg::None | Arg::Omitted => "None".into(),
        Arg::Bool(b) => b.to_string(),
        Arg::Int(i) => i.to_string(),
        Arg::Float(f) => format!("{f:?}"),
        Arg::Str(s) => format!("{s:?}"),
        Arg::Dtype(d) => d.name().into(),
        Arg::IntList(xs) => format!("{xs:?}"),
        Arg::FloatList(xs) => format!("[{}]", xs.iter().map(|x| format!("{x:?}")).collect::<Vec<_>>().join(", ")),
        Arg::BoolList(xs) => format!("{xs:?}"),
        Arg::Tensor(_) | Arg::TensorList(_) => "None".into(),
    }
}

/// Pins of every argument of a case, as constraints of the body.
fn pins(out: &mut String, api: &ApiSpec, case: &Case) {
    for (p, arg) in api.params.iter().zip(&case.args) {
        let name = &p.name;
        match arg {
            Arg::Omitted => {}
            Arg::None => {
                let _ = writeln!(out, "    {name} == None;");
            }
            Arg::Tensor(t) => tensor(out, name, t),
            Arg::TensorList(ts) => {
                let _ = writeln!(out, "    len({name}) == {};", ts.len());
                for (k, t) in ts.iter().enumerate() {
                    tensor(out, &format!("{name}[{k}]"), t);
                }
            }
            Arg::Bool(b) => {
                let _ = writeln!(out, "    {name} == {b};");
            }
            Arg::Int(i) => {
                let _ = writeln!(out, "    {name} == {i};");
            }
            Arg::Float(f) if f.is_finite() => {
                let _ = writeln!(out, "    {name} == {f:?};");
            }
            Arg::Float(f) => {
                let _ = writeln!(out, "    // {name} is {f}");
            }
            Arg::Str(s) => {
                let _ = writeln!(out, "    {name} == {s:?};");
            }
            Arg::Dtype(d) => {
                let _ = writeln!(out, "    {name} == {};", d.name());
            }
            Arg::IntList(xs) => {
                let _ = writeln!(out, "    {name} == {xs:?};");
            }
            Arg::FloatList(xs) => {
                let _ = writeln!(out, "    {name} == [{}];", xs.iter().map(|x| format!("{x:?}")).collect::<Vec<_>>().join(", "));
            }
            Arg::BoolList(xs) => {
                let _ = writeln!(out, "    {name} == {xs:?};");
            }
        }
    }
}

fn tensor(out: &mut String, name: &str, t: &TensorRecipe) {
    let _ = writeln!(out, "    {name}.dtype == {};", t.dtype.name());
    let _ = writeln!(out, "    {name}.shape == {:?};", t.shape);
    match t.fill {
        Fill::Uniform { lo, hi } if lo.is_finite() && hi.is_finite() && lo < hi => {
            let _ = writeln!(out, "    {name}.values in {lo:?}..{hi:?};");
        }
        Fill::Int { lo, hi } if lo < hi => {
            let _ = writeln!(out, "    {name}.values in {lo}..{hi};");
        }
        Fill::Constant(c) if c.is_finite() => {
            let _ = writeln!(out, "    {name}.values in {c:?}..={c:?};");
        }
        _ => {}
    }
    let n = t.numel();
    if !t.specials.is_empty() && n > 0 {
        // The language has no constraint for one element's value: the places are a comment
        // (`sfz replay` and the reproducer write them; `sfz fuzz` places special values at random).
        let placed: Vec<String> = t.specials.iter().take(8).map(|(i, v)| format!("[{}] = {}", i % n, special_text(*v))).collect();
        let more = if t.specials.len() > 8 { format!(" and {} more", t.specials.len() - 8) } else { String::new() };
        let _ = writeln!(out, "    // {name} also holds, by flat index: {}{more}", placed.join(", "));
    }
    if t.layout != Layout::Contiguous {
        let _ = writeln!(out, "    // {name} is {:?} (not contiguous)", t.layout);
    }
}

/// A special value as the language writes floats.
fn special_text(v: Special) -> String {
    match v {
        Special::Nan => "nan".into(),
        Special::PosInf => "inf".into(),
        Special::NegInf => "-inf".into(),
        Special::NegZero => "-0.0".into(),
        Special::Value(x) => format!("{x:?}"),
    }
}

/// The oracle as an `oracles` clause item, with a differential check's tolerances.
fn oracle_text(oracle: Oracle, check: Option<&Check>) -> String {
    let Some(c) = check else { return oracle.to_string() };
    match c.variant {
        crate::wire::variant::Variant::Gradient { eps, samples } => {
            let t = c.tolerances.float64;
            format!("{oracle}(eps = {eps:?}, rtol = {:?}, atol = {:?}, samples = {samples})", t.rtol, t.atol)
        }
        _ => {
            let t = &c.tolerances;
            let pair = |x: crate::wire::variant::Tolerance| format!("[{:?}, {:?}]", x.rtol, x.atol);
            format!("{oracle}(float16 = {}, bfloat16 = {}, float32 = {}, float64 = {})", pair(t.float16), pair(t.bfloat16), pair(t.float32), pair(t.float64))
        }
    }
}

/// A relation as a statement of the API's (its tolerances, `forall` values and guard
/// included); None where it calls another API, which the pinned spec does not declare.
fn relation_source(api: &ApiSpec, r: &Relation) -> Option<String> {
    let t = &r.tolerances;
    let pair = |x: crate::wire::variant::Tolerance| format!("[{:?}, {:?}]", x.rtol, x.atol);
    let mut out = format!("relation {}(float16 = {}, bfloat16 = {}, float32 = {}, float64 = {}): ", r.name, pair(t.float16), pair(t.bfloat16), pair(t.float32), pair(t.float64));
    if !r.scalars.is_empty() {
        let values: Vec<String> = r.scalars.iter().map(|v| format!("{v:?}")).collect();
        let _ = write!(out, "forall s in [{}]: ", values.join(", "));
    }
    if let Some(g) = &r.guard {
        let _ = write!(out, "{} => ", rel_source(api, g)?);
    }
    let _ = write!(out, "{} == {}", rel_source(api, &r.lhs)?, rel_source(api, &r.rhs)?);
    Some(out)
}

/// A relation expression in the language, parenthesized wherever it nests.
fn rel_source(api: &ApiSpec, e: &RelExpr) -> Option<String> {
    let output = |k: usize| if api.returns.len() > 1 { format!(".{k}") } else { String::new() };
    Some(match e {
        RelExpr::Result(k) => format!("result{}", output(*k)),
        RelExpr::Param(p) => api.params.get(*p)?.name.clone(),
        RelExpr::Scalar => "s".into(),
        RelExpr::Const(c) => format!("{c:?}"),
        RelExpr::Unary(RelFn::Neg, a) => format!("(-{})", rel_source(api, a)?),
        RelExpr::Unary(RelFn::Not, a) => format!("(not {})", rel_source(api, a)?),
        RelExpr::Unary(f, a) => format!("{}({})", f.name(), rel_source(api, a)?),
        RelExpr::Binary(RelOp::Pow, a, b) => format!("pow({}, {})", rel_source(api, a)?, rel_source(api, b)?),
        RelExpr::Binary(op, a, b) => format!("({} {} {})", rel_source(api, a)?, op.symbol(), rel_source(api, b)?),
        RelExpr::Call { callee: Callee::Itself, args, output: k } => {
            let args: Option<Vec<String>> = args.iter().map(|(p, v)| Some(format!("{} = {}", api.params.get(*p)?.name, rel_source(api, v)?))).collect();
            format!("self({}){}", args?.join(", "), output(*k))
        }
        RelExpr::Call { .. } => return None,
    })
}

fn type_text(t: &ParamType) -> String {
    t.describe()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::first_api as api;
    use crate::wire::case::DType;

    /// The pinned case says where its special values are, as the reproducer places them (the
    /// index modulo the element count).
    #[test]
    fn special_values_are_listed_by_flat_index() {
        let a = api("api torch.linalg.eigvals(input: Tensor) -> Tensor {}");
        let t = TensorRecipe {
            dtype: DType::Complex128,
            shape: vec![2, 2],
            fill: Fill::Constant(1.0),
            seed: 1,
            layout: Layout::Contiguous,
            specials: vec![(0, Special::Nan), (6, Special::NegZero), (3, Special::Value(f64::MAX))],
        };
        let text = pinned_spec(&a, &Case { op: 0, args: vec![Arg::Tensor(t)], forward: None }, "sfz finding t", Oracle::Crash, None, &[]);
        insta::assert_snapshot!(text);
    }

    /// A relation finding's pinned spec states the relation again (tolerances, `forall` values
    /// and guard written out), and checks.
    #[test]
    fn a_relation_is_pinned_as_a_statement_that_checks() {
        use crate::wire::variant::{Tolerance, Tolerances};
        let a = api("api torch.nn.functional.normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor {}");
        let scaled = RelExpr::Binary(RelOp::Mul, Box::new(RelExpr::Param(0)), Box::new(RelExpr::Scalar));
        let relation = Relation {
            name: "scaled".into(),
            text: "relation scaled: forall s in [4.0]: finite(input) => self(input = input * s) == result".into(),
            scalars: vec![4.0, 1e10],
            guard: Some(RelExpr::Unary(RelFn::Finite, Box::new(RelExpr::Param(0)))),
            lhs: RelExpr::Call { callee: Callee::Itself, args: vec![(0, scaled)], output: 0 },
            rhs: RelExpr::Unary(RelFn::Neg, Box::new(RelExpr::Unary(RelFn::Neg, Box::new(RelExpr::Result(0))))),
            tolerances: Tolerances::uniform(Tolerance { rtol: 1e-4, atol: 1e-5 }),
        };
        let check = Check {
            oracle: Oracle::Relation,
            variant: Variant::Relation(Box::new(relation)),
            tolerances: Tolerances::uniform(Tolerance { rtol: 0.0, atol: 0.0 }),
            accuracy: Default::default(),
        };
        let t = TensorRecipe { dtype: DType::Float32, shape: vec![2, 2], fill: Fill::Constant(1.0), seed: 1, layout: Layout::Contiguous, specials: vec![] };
        let case = Case { op: 0, args: vec![Arg::Tensor(t), Arg::Omitted, Arg::Omitted, Arg::Omitted], forward: None };
        let text = pinned_spec(&a, &case, "sfz finding t", Oracle::Relation, Some(&check), &[]);
        assert!(text.contains("relation scaled(float16 = [0.0001, 1e-5], bfloat16 = [0.0001, 1e-5], float32 = [0.0001, 1e-5], float64 = [0.0001, 1e-5]): forall s in [4.0, 10000000000.0]: finite(input) => self(input = (input * s)) == (-(-result));"), "{text}");
        assert!(text.contains("oracles crash;"), "{text}");
        let checked = crate::check::check_text(std::path::Path::new("pinned.sfz"), &text);
        assert!(!checked.has_errors(), "{text}\n{:?}", checked.diags.iter().map(|d| &d.message).collect::<Vec<_>>());
    }
}
