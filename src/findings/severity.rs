//! How bad a finding is, from its class and how plausible its input is: what `sfz report` and
//! the campaign's summary rank by, worst first.
use std::fmt;

use serde::Serialize;

use super::Finding;
use crate::oracle::{Cause, Death};
use crate::wire::case::{Arg, Fill};

/// Worst first: the order is the ranking.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// A memory error: heap damage, an out-of-bounds read or write.
    MemoryCorruption,
    /// A silently wrong result on ordinary inputs.
    SilentWrong,
    /// A crash (other than a memory error) or a hang on inputs the API accepts.
    Crash,
    /// A wrong result at large but plausible magnitudes (a premature overflow).
    WrongAtLargeMagnitudes,
    /// An internal assert, a leaked exception, an unhelpful or inconsistent error message.
    Error,
    /// A wrong result on degenerate inputs: empty tensors, or inputs outside the spec's own
    /// precondition (violate mode, or a case generation could not make conform).
    Degenerate,
}

impl Severity {
    pub fn name(self) -> &'static str {
        match self {
            Severity::MemoryCorruption => "memory",
            Severity::SilentWrong => "wrong",
            Severity::Crash => "crash",
            Severity::WrongAtLargeMagnitudes => "large",
            Severity::Error => "error",
            Severity::Degenerate => "degenerate",
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Severity::MemoryCorruption => "memory corruption",
            Severity::SilentWrong => "silently wrong result on ordinary inputs",
            Severity::Crash => "crash or hang on accepted inputs",
            Severity::WrongAtLargeMagnitudes => "wrong result at large but plausible magnitudes",
            Severity::Error => "internal assert or unhelpful error",
            Severity::Degenerate => "degenerate inputs",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Inputs at most this large in magnitude are ordinary: what a model's activations, weights and
/// losses hold.
pub const ORDINARY: f64 = 1e4;

/// A finding's severity.
pub fn of(f: &Finding) -> Severity {
    let outside_spec = matches!(f.mode.as_deref(), Some("violate" | "nonconforming"));
    // What a backward's forward fills stands for its output, not for an empty tensor.
    let fed = |k: usize| f.case.forward.as_ref().is_some_and(|fw| fw.binds.iter().any(|b| b.param == k));
    // A list with other, non-empty tensors (a fused optimizer's parameters) is judged on those.
    let empty = f.case.args.iter().enumerate().filter(|(k, _)| !fed(*k)).any(|(_, a)| {
        let mut ts = a.tensors().peekable();
        ts.peek().is_some() && ts.all(|t| t.numel() == 0)
    });
    let wrong = |ordinary: bool| match (outside_spec || empty, ordinary) {
        (true, _) => Severity::Degenerate,
        (false, true) => Severity::SilentWrong,
        (false, false) => Severity::WrongAtLargeMagnitudes,
    };
    match &f.cause {
        Cause::Died { death: Death::Memory, .. } => Severity::MemoryCorruption,
        Cause::Died { .. } | Cause::Hang | Cause::Killed => Severity::Crash,
        Cause::Internal { .. } | Cause::OutOfMemory { .. } | Cause::OnlyVariantRaises { .. } | Cause::OnlyOriginalRaises { .. } | Cause::Rejected { .. } => Severity::Error,
        // An overflowing sum of squares (or of p-th powers) is a matter of large magnitudes,
        // whichever oracle saw it.
        Cause::Premature { .. } => wrong(false),
        c if c.squares().is_some() || c.powers().is_some() => wrong(false),
        Cause::NonFinite { .. }
        | Cause::Ensures { .. }
        | Cause::Relation { .. }
        | Cause::Values { .. }
        | Cause::Structure { .. }
        | Cause::Uninitialised { .. }
        | Cause::Gradient { .. } => wrong(ordinary(f)),
        Cause::Other { .. } => Severity::Error,
    }
}

/// Whether every input of the finding's case is within `ORDINARY` in magnitude.
fn ordinary(f: &Finding) -> bool {
    f.case.args.iter().all(|a| match a {
        Arg::Tensor(_) | Arg::TensorList(_) => a.tensors().all(|t| {
            let v = crate::eval::TensorVal::of_recipe(t);
            let fill = match t.fill {
                Fill::Uniform { lo, hi } => lo.abs().max(hi.abs()),
                _ => 0.0,
            };
            v.min.abs().max(v.max.abs()).max(fill) <= ORDINARY
        }),
        Arg::Float(x) => x.abs() <= ORDINARY,
        _ => true,
    })
}

#[cfg(test)]
mod tests {
    use super::{of, Severity};
    use crate::findings::store::older_finding;
    use crate::oracle::Cause;
    use crate::wire::case::{Arg, DType, Fill, TensorRecipe};

    /// A wrong value is degenerate where an input is an empty tensor, not where a list holds
    /// an empty tensor beside non-empty ones (a fused optimizer's parameters).
    #[test]
    fn an_empty_tensor_makes_a_wrong_value_degenerate_unless_others_of_its_list_are_not() {
        let t = |shape: Vec<i64>| TensorRecipe { dtype: DType::Float64, shape, fill: Fill::Uniform { lo: -2.0, hi: 2.0 }, seed: 1, layout: Default::default(), specials: vec![] };
        let wrong = |args: Vec<Arg>| {
            let mut f = older_finding("layout-x-1", "torch.x", "layout", "");
            f.cause = Cause::Values { output: 0, squares: None, powers: None };
            f.case.args = args;
            of(&f)
        };
        assert_eq!(wrong(vec![Arg::Tensor(t(vec![3, 0]))]), Severity::Degenerate);
        assert_eq!(wrong(vec![Arg::TensorList(vec![t(vec![0]), t(vec![1, 0])])]), Severity::Degenerate);
        assert_eq!(wrong(vec![Arg::TensorList(vec![t(vec![3, 6]), t(vec![1, 0])])]), Severity::SilentWrong);
    }
}
