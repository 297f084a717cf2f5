//! The dtypes an operator's kernels were compiled for, learned from libtorch's refusals. A kernel
//! dispatched over some dtypes only names the one it was handed (`"avg_pool2d" not implemented
//! for 'Long'`), and the set it takes is often none of the enumerated groups (`avg_pool2d`: the
//! floating types and int64; `lshift`: the integers without bool). `sfz infer` collects the
//! dtypes each tensor parameter was refused with over its rounds and proposes the rest as a
//! candidate, judged like any other.
use std::collections::BTreeSet;

use crate::rules::infer::Checked;
use crate::spec::{ApiSpec, BinOp, Category, ParamType, Prop, TExpr, Value};
use crate::wire::case::{Arg, DType};

/// A parameter must hold the refused dtype in this share of the refusals to be the one refused
/// (per mille): with type promotion, a binary kernel sees the promoted dtype, which may be
/// neither operand's.
const OWNED_PER_MILLE: usize = 900;

/// Per tensor or tensor-list parameter, the dtypes refused so far.
#[derive(Default)]
pub struct Refused {
    sets: Vec<(usize, BTreeSet<DType>)>,
}

impl Refused {
    /// Reads a batch's refusals: each case's first line of libtorch's error, if rejected.
    pub fn observe(&mut self, api: &ApiSpec, args: &[Vec<Arg>], messages: &[Option<String>]) {
        let refusals: Vec<(&Vec<Arg>, DType)> = args.iter().zip(messages).filter_map(|(a, m)| Some((a, refused_dtype(m.as_deref()?)?))).collect();
        if refusals.is_empty() {
            return;
        }
        for (i, p) in api.params.iter().enumerate() {
            // A parameter a `from` statement fills holds the forward's output, whatever was drawn.
            if api.fed(i) || !matches!(p.ty, ParamType::Tensor | ParamType::TensorList) {
                continue;
            }
            let owned: Vec<DType> = refusals.iter().filter(|(a, d)| a.get(i).is_some_and(|a| holds_dtype(a, *d))).map(|(_, d)| *d).collect();
            if owned.len() * 1000 < refusals.len() * OWNED_PER_MILLE {
                continue;
            }
            match self.sets.iter_mut().find(|(j, _)| *j == i) {
                Some((_, set)) => set.extend(owned),
                None => self.sets.push((i, owned.into_iter().collect())),
            }
        }
    }

    /// One candidate per parameter refused some dtypes: every other dtype.
    pub fn candidates(&self, api: &ApiSpec) -> Vec<Checked> {
        self.sets.iter().filter_map(|(i, refused)| candidate(api, *i, refused)).collect()
    }
}

fn candidate(api: &ApiSpec, i: usize, refused: &BTreeSet<DType>) -> Option<Checked> {
    let p = api.params.get(i)?;
    let rest: Vec<DType> = DType::ALL.into_iter().filter(|d| !refused.contains(d)).collect();
    if rest.is_empty() || refused.is_empty() {
        return None;
    }
    let list = rest.iter().map(|d| d.name()).collect::<Vec<_>>().join(", ");
    let list_param = p.ty == ParamType::TensorList;
    let (of, text) =
        if list_param { (TExpr::Each(Box::new(TExpr::Param(i))), format!("{}[*].dtype in [{list}]", p.name)) } else { (TExpr::Param(i), format!("{}.dtype in [{list}]", p.name)) };
    let expr = TExpr::Binary(BinOp::In, Box::new(TExpr::Prop(Box::new(of), Prop::Dtype)), Box::new(TExpr::Lit(Value::DtypeSet(rest))));
    Some(Checked::inferred(api, format!("{}_implemented_dtypes", p.name), i, text, expr, Category::Dtype))
}

/// The dtype a kernel dispatch refused: `"addmm_impl_cpu_" not implemented for 'Half'`.
pub fn refused_dtype(message: &str) -> Option<DType> {
    let rest = &message[message.find("not implemented for '")? + "not implemented for '".len()..];
    c10_dtype(&rest[..rest.find('\'')?])
}

/// A dtype by its c10 name (`Long`, `ComplexFloat`); None for those sfz does not generate.
fn c10_dtype(name: &str) -> Option<DType> {
    Some(match name {
        "Bool" => DType::Bool,
        "Byte" => DType::UInt8,
        "Char" => DType::Int8,
        "Short" => DType::Int16,
        "Int" => DType::Int32,
        "Long" => DType::Int64,
        "Half" => DType::Float16,
        "BFloat16" => DType::BFloat16,
        "Float" => DType::Float32,
        "Double" => DType::Float64,
        "ComplexFloat" => DType::Complex64,
        "ComplexDouble" => DType::Complex128,
        _ => return None,
    })
}

/// Whether an argument is a tensor of dtype `d`, or a list with one.
fn holds_dtype(a: &Arg, d: DType) -> bool {
    match a {
        Arg::Tensor(t) => t.dtype == d,
        Arg::TensorList(ts) => ts.iter().any(|t| t.dtype == d),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::case::{Fill, TensorRecipe};
    use std::path::Path;

    fn tensor(dtype: DType) -> Arg {
        Arg::Tensor(TensorRecipe { dtype, shape: vec![2], fill: Fill::Constant(0.0), seed: 0, layout: Default::default(), specials: Vec::new() })
    }

    #[test]
    fn the_refused_dtype_is_read_from_the_dispatch_error() {
        assert_eq!(refused_dtype("\"avg_pool2d\" not implemented for 'Long'"), Some(DType::Int64));
        assert_eq!(refused_dtype("\"lshift_cpu\" not implemented for 'ComplexFloat'"), Some(DType::Complex64));
        assert_eq!(refused_dtype("\"x\" not implemented for 'Float8_e5m2'"), None);
        assert_eq!(refused_dtype("expected scalar type Float but found Double"), None);
    }

    #[test]
    fn the_operand_holding_the_refused_dtype_gets_the_rest() {
        let checked = crate::check::check_text(Path::new("t.sfz"), "api torch.lshift(input: Tensor, other: Tensor, n: int) -> Tensor {}\n");
        let api = &checked.spec.apis[0];
        let mut refused = Refused::default();
        let args = vec![
            vec![tensor(DType::Float32), tensor(DType::Float32), Arg::Int(1)],
            vec![tensor(DType::Bool), tensor(DType::Int64), Arg::Int(1)],
            vec![tensor(DType::Int64), tensor(DType::Int64), Arg::Int(1)],
        ];
        let messages = vec![Some("\"lshift_cpu\" not implemented for 'Float'".to_string()), Some("\"lshift_cpu\" not implemented for 'Bool'".to_string()), None];
        refused.observe(api, &args, &messages);
        let texts: Vec<String> = refused.candidates(api).into_iter().map(|c| c.candidate.text).collect();
        // `other` held the refused dtype in one refusal of two: not its refusal.
        assert_eq!(texts, ["input.dtype in [uint8, int8, int16, int32, int64, float16, bfloat16, float64, complex64, complex128];"]);
        // A constraint built by hand evaluates as the checked text would.
        let c = &refused.candidates(api)[0].constraints[0];
        let mut probe = api.clone();
        probe.requires = vec![c.clone()];
        assert_eq!(crate::gen::values::conforms(&probe, &args[0]), vec![Some(false)]);
        assert_eq!(crate::gen::values::conforms(&probe, &args[2]), vec![Some(true)]);
    }
}
