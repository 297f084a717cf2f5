//! What generation needs to know about an API once, before any case: the order in which its
//! parameters get concrete values (a parameter whose bounds read another comes after it), and
//! the constraints a violating input can break, grouped by category (DocTer's VI mode): the
//! spec's `requires` plus what the parameter declarations imply (types, None, list lengths, enum
//! values).
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::solve::value_target;
use crate::spec::{ApiSpec, Category, ParamType};
use crate::wire::case::BreakKind;

/// A constraint the declarations imply.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Declared {
    /// A parameter that is not `T?` is never None.
    NotNone(usize),
    /// A parameter holds a value of its declared type.
    Type(usize),
    /// An `int[N]` (`float[N]`, `bool[N]`) holds N elements.
    Length(usize, u32),
    /// An enum parameter holds one of its values.
    EnumValue(usize),
}

impl Declared {
    pub fn param(&self) -> usize {
        match self {
            Declared::NotNone(p) | Declared::Type(p) | Declared::Length(p, _) | Declared::EnumValue(p) => *p,
        }
    }

    pub fn category(&self) -> Category {
        match self {
            Declared::EnumValue(_) => Category::Enum,
            _ => Category::Structure,
        }
    }

    /// The constraint in the spec's words.
    pub fn text(&self, api: &ApiSpec) -> String {
        let name = |p: usize| api.params.get(p).map_or("?", |x| x.name.as_str()).to_string();
        match self {
            Declared::NotNone(p) => format!("{} != None", name(*p)),
            Declared::Type(p) => format!("{}: {}", name(*p), api.params.get(*p).map_or(String::new(), |x| x.ty.describe())),
            Declared::Length(p, n) => format!("len({}) == {n}", name(*p)),
            Declared::EnumValue(p) => format!("{} in [{}]", name(*p), api.params.get(*p).map_or(String::new(), |x| x.ty.describe().replace(" | ", ", "))),
        }
    }
}

/// One constraint a violating case can break.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Target {
    /// `ApiSpec::requires[k]`.
    Requires(usize),
    Declared(Declared),
    /// A parameter filled by the `from` statement's forward, broken after the forward this way
    /// (the worker does it: `case::Break`).
    Bound {
        param: usize,
        kind: BreakKind,
    },
}

/// An API's generation plan.
#[derive(Clone, Debug)]
pub struct GenPlan {
    /// Parameter indices in the order their concrete values are drawn.
    pub order: Vec<usize>,
    /// Per parameter, the parameters its value bounds read.
    pub deps: Vec<Vec<usize>>,
    /// The declaration constraints violate mode may break.
    pub declared: Vec<Declared>,
}

impl GenPlan {
    pub fn new(api: &ApiSpec) -> GenPlan {
        let n = api.params.len();
        let mut deps: Vec<Vec<usize>> = vec![Vec::new(); n];
        for c in &api.requires {
            if let Some(t) = value_target(&c.expr) {
                for &q in &c.params {
                    if q != t && t < n && !deps[t].contains(&q) {
                        deps[t].push(q);
                    }
                }
            }
        }
        deps.iter_mut().for_each(|d| d.sort_unstable());
        let order = topological(&deps);
        let mut declared = Vec::new();
        for (p, param) in api.params.iter().enumerate() {
            if !param.optional {
                declared.push(Declared::NotNone(p));
            }
            declared.push(Declared::Type(p));
            match &param.ty {
                ParamType::IntList(Some(k)) | ParamType::FloatList(Some(k)) | ParamType::BoolList(Some(k)) => declared.push(Declared::Length(p, *k)),
                ParamType::Enum(_) => declared.push(Declared::EnumValue(p)),
                _ => {}
            }
        }
        GenPlan { order, deps, declared }
    }

    /// The breakages of the parameters a `from` statement binds: values of a direct binding
    /// (indices out of their plane), shapes of any (a dimension off by one, a batch that
    /// disagrees, an empty batch).
    pub fn bound_targets(api: &ApiSpec) -> Vec<Target> {
        let Some(from) = &api.from else { return Vec::new() };
        let mut out = Vec::new();
        for b in &from.binds {
            let values: &[BreakKind] = if b.like { &[] } else { &BreakKind::VALUES };
            out.extend(values.iter().chain(&BreakKind::SHAPES).map(|&kind| Target::Bound { param: b.param, kind }));
        }
        out
    }

    /// Targets by category: `violable[k]` says whether `requires[k]` can be broken (the solver
    /// found models for it).
    pub fn targets(&self, api: &ApiSpec, violable: &[bool]) -> BTreeMap<Category, Vec<Target>> {
        let mut by: BTreeMap<Category, Vec<Target>> = BTreeMap::new();
        let bound: Vec<usize> = api.from.iter().flat_map(|f| f.binds.iter().map(|b| b.param)).collect();
        for (k, c) in api.requires.iter().enumerate() {
            // What only a bound parameter's placeholder obeys is gone once the forward fills it
            // (its presence excepted: a None is passed as it is).
            let placeholder_only = !c.params.is_empty() && c.params.iter().all(|p| bound.contains(p)) && c.category != Category::Structure;
            if violable.get(k).copied().unwrap_or(false) && !placeholder_only {
                by.entry(c.category).or_default().push(Target::Requires(k));
            }
        }
        for d in &self.declared {
            by.entry(d.category()).or_default().push(Target::Declared(d.clone()));
        }
        by
    }
}

/// Kahn's algorithm, smallest index first; a cycle is broken at its smallest index, which then
/// sees the others' symbolic values only.
fn topological(deps: &[Vec<usize>]) -> Vec<usize> {
    let n = deps.len();
    let mut done = vec![false; n];
    let mut order = Vec::with_capacity(n);
    while order.len() < n {
        let ready = (0..n).find(|&p| !done[p] && deps[p].iter().all(|&q| done[q] || q == p));
        let p = ready.unwrap_or_else(|| (0..n).find(|&p| !done[p]).expect("some parameter is left"));
        done[p] = true;
        order.push(p);
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::first_api as api;

    #[test]
    fn values_come_after_what_bounds_them() {
        // `x` is bounded by `hi`, declared after it; `hi` by `lo`.
        let a = api("api torch.clamp(x: Tensor, hi: float, lo: float) -> Tensor {\n x.values in lo..hi;\n hi > lo;\n}");
        let plan = GenPlan::new(&a);
        assert_eq!(plan.order, vec![2, 1, 0]);
        assert_eq!(plan.deps[0], vec![1, 2]);
    }

    #[test]
    fn cycles_break_at_the_first_parameter() {
        assert_eq!(topological(&[vec![1], vec![0], vec![]]), vec![2, 0, 1]);
    }

    #[test]
    fn declarations_imply_constraints() {
        let a = api("api torch.nn.functional.max_pool2d(input: Tensor, kernel_size: int[2], stride: int[2]? = None) -> Tensor {}");
        let texts: Vec<String> = GenPlan::new(&a).declared.iter().map(|d| d.text(&a)).collect();
        assert_eq!(texts, ["input != None", "input: Tensor", "kernel_size != None", "kernel_size: int[2]", "len(kernel_size) == 2", "stride: int[2]", "len(stride) == 2"]);
    }
}
