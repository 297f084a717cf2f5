//! An operator's twins, for differential oracles: its `out=` overload (`aten::exp.out` for
//! `aten::exp`) and its in-place form (`aten::exp_`). A twin takes the functional schema's
//! arguments under the same names and types, plus (for `out=`) trailing `Tensor(a!)`
//! arguments, one per output; its binding feeds the shared arguments exactly as the
//! functional binding does.
use super::binding::{ArgSource, OpBinding};
use super::catalog::Catalog;
use super::schema::{OpSchema, SchemaArg};

/// The binding of the `out=` overload that stands for `binding`'s operator, if it has one.
pub fn out_binding(binding: &OpBinding, catalog: &Catalog) -> Option<OpBinding> {
    let functional = catalog.get(&binding.name, &binding.overload)?;
    let returns = functional.returns.len();
    catalog.overloads(&binding.name).filter(|s| s.overload != binding.overload).find_map(|candidate| {
        let (shared, outs): (Vec<&SchemaArg>, Vec<&SchemaArg>) = candidate.args.iter().partition(|a| !(a.mutable && a.kw_only));
        if outs.len() != returns || outs.iter().any(|a| a.ty != super::schema::SchemaType::Tensor) || !same_args(&shared, functional) {
            return None;
        }
        let mut args = binding.args.clone();
        args.extend((0..outs.len()).map(ArgSource::Output));
        // The out arguments come last in every out= schema; check rather than assume.
        let last = candidate.args.len() - outs.len();
        if candidate.args[last..].iter().any(|a| !(a.mutable && a.kw_only)) {
            return None;
        }
        Some(OpBinding { name: candidate.name.clone(), overload: candidate.overload.clone(), args, schema: candidate.text.clone(), forward: None })
    })
}

/// The binding of the in-place form (`name_`) and the case argument it writes to, if the
/// operator has one whose mutated `self` comes from a case argument.
pub fn inplace_binding(binding: &OpBinding, catalog: &Catalog) -> Option<(OpBinding, usize)> {
    let functional = catalog.get(&binding.name, &binding.overload)?;
    if functional.returns.len() != 1 {
        return None;
    }
    let name = format!("{}_", binding.name);
    catalog.overloads(&name).find_map(|candidate| {
        let args: Vec<&SchemaArg> = candidate.args.iter().collect();
        if !same_args(&args, functional) {
            return None;
        }
        let self_pos = candidate.args.iter().position(|a| a.mutable)?;
        if candidate.args.iter().filter(|a| a.mutable).count() != 1 {
            return None;
        }
        let ArgSource::Param { index, .. } = binding.args.get(self_pos)? else { return None };
        Some((OpBinding { name: candidate.name.clone(), overload: candidate.overload.clone(), args: binding.args.clone(), schema: candidate.text.clone(), forward: None }, *index))
    })
}

/// The same arguments, in order, by name and type (alias annotations aside).
fn same_args(args: &[&SchemaArg], functional: &OpSchema) -> bool {
    args.len() == functional.args.len() && args.iter().zip(&functional.args).all(|(a, f)| a.name == f.name && a.ty == f.ty && a.default == f.default)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::binding::Transform;

    fn catalog() -> Catalog {
        Catalog::from_schemas(include_str!("../../tests/fixtures/schemas-2.13.0.txt").lines())
    }

    fn functional(name: &str, overload: &str, params: usize) -> OpBinding {
        let c = catalog();
        let s = c.get(name, overload).expect("schema");
        OpBinding {
            name: name.into(),
            overload: overload.into(),
            args: (0..params)
                .map(|index| ArgSource::Param { index, transform: Transform::Identity })
                .chain(std::iter::repeat_n(ArgSource::Default, s.args.len() - params))
                .collect(),
            schema: s.text.clone(),
            forward: None,
        }
    }

    #[test]
    fn out_overloads_take_the_same_arguments_and_one_tensor_per_output() {
        let c = catalog();
        let b = out_binding(&functional("aten::exp", "", 1), &c).expect("exp.out");
        assert_eq!(b.qualified(), "aten::exp.out");
        assert_eq!(b.args.last(), Some(&ArgSource::Output(0)));
        let b = out_binding(&functional("aten::sum", "dim_IntList", 3), &c).expect("sum out");
        assert_eq!(b.qualified(), "aten::sum.IntList_out", "not sum.out, whose arguments differ");
        let b = out_binding(&functional("aten::max_pool2d_with_indices", "", 6), &c).expect("two outputs");
        assert_eq!(&b.args[6..], &[ArgSource::Output(0), ArgSource::Output(1)]);
        assert_eq!(out_binding(&functional("aten::conv2d", "", 7), &c), None, "conv2d has no out= overload");
        assert_eq!(out_binding(&functional("aten::reshape", "", 2), &c), None);
    }

    #[test]
    fn inplace_twins_write_to_their_self_argument() {
        let c = catalog();
        let (b, arg) = inplace_binding(&functional("aten::cumsum", "", 2), &c).expect("cumsum_");
        assert_eq!((b.qualified().as_str(), arg), ("aten::cumsum_", 0));
        let (b, _) = inplace_binding(&functional("aten::transpose", "int", 3), &c).expect("transpose_");
        assert_eq!(b.qualified(), "aten::transpose_");
        assert_eq!(inplace_binding(&functional("aten::matmul", "", 2), &c), None);
        assert_eq!(inplace_binding(&functional("aten::softmax", "int", 2), &c), None);
    }
}
