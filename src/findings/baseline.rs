//! A baseline of known causes: a TOML file listing causes already known upstream (an issue link,
//! a note). `sfz fuzz` and `sfz report` read it: findings of a known cause are still recorded,
//! marked with the entry's name, and counted apart, not listed as new.
//!
//! ```toml
//! [[known]]
//! name = "squares-overflow"            # what findings are marked with
//! oracles = ["overflow", "relation"]   # any of these oracles (optional)
//! cause = "premature"                  # the cause's kind (optional; see KINDS)
//! text = "sum of squares overflows"    # a part of the cause's text (optional)
//! ops = ["torch.linalg.vector_norm"]   # these operators' families (optional)
//! dtypes = ["float16", "bfloat16"]     # the first floating input's dtype (optional)
//! issue = "https://github.com/pytorch/pytorch/issues/NNN"
//! note = "float32 norms square their inputs without rescaling"
//! ```
//!
//! An entry matches a finding when every matcher it gives does; it must give at least one.
use std::ops::Range;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use super::causes::family;
use super::Finding;
use crate::oracle::{Cause, Death};
use crate::wire::case::DType;
use crate::wire::oracle::Oracle;

/// The cause kinds an entry's `cause` may name.
pub const KINDS: [&str; 18] = [
    "memory_error",
    "died",
    "hang",
    "killed",
    "out_of_memory",
    "internal",
    "non_finite",
    "ensures",
    "premature",
    "relation",
    "values",
    "structure",
    "uninitialised",
    "gradient",
    "only_variant_raises",
    "only_original_raises",
    "rejected",
    "other",
];

/// The kind of a cause, as `KINDS` names it.
pub fn kind(cause: &Cause) -> &'static str {
    match cause {
        Cause::Died { death: Death::Memory, .. } => "memory_error",
        Cause::Died { .. } => "died",
        Cause::Hang => "hang",
        Cause::Killed => "killed",
        Cause::OutOfMemory { .. } => "out_of_memory",
        Cause::Internal { .. } => "internal",
        Cause::NonFinite { .. } => "non_finite",
        Cause::Ensures { .. } => "ensures",
        Cause::Premature { .. } => "premature",
        Cause::Relation { .. } => "relation",
        Cause::Values { .. } => "values",
        Cause::Structure { .. } => "structure",
        Cause::Uninitialised { .. } => "uninitialised",
        Cause::Gradient { .. } => "gradient",
        Cause::OnlyVariantRaises { .. } => "only_variant_raises",
        Cause::OnlyOriginalRaises { .. } => "only_original_raises",
        Cause::Rejected { .. } => "rejected",
        Cause::Other { .. } => "other",
    }
}

/// One known cause.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub name: String,
    pub oracles: Vec<Oracle>,
    /// A `KINDS` name.
    pub cause: Option<String>,
    pub text: Option<String>,
    /// Operator families.
    pub ops: Vec<String>,
    /// The dtypes of the case's first floating input (the data, where a normalization's
    /// statistics may be float32) the cause shows in.
    pub dtypes: Vec<DType>,
    pub issue: Option<String>,
    pub note: Option<String>,
}

impl Entry {
    pub fn matches(&self, f: &Finding) -> bool {
        (self.oracles.is_empty() || self.oracles.contains(&f.oracle))
            && self.cause.as_deref().is_none_or(|k| k == kind(&f.cause))
            && self.text.as_deref().is_none_or(|t| f.cause.to_string().contains(t))
            && (self.ops.is_empty() || self.ops.contains(&family(&f.api)))
            && (self.dtypes.is_empty() || data_dtype(f).is_some_and(|d| self.dtypes.contains(&d)))
    }
}

/// The dtype of a finding's first floating input tensor.
fn data_dtype(f: &Finding) -> Option<DType> {
    f.case.args.iter().flat_map(|a| a.tensors()).map(|t| t.dtype).find(|d| d.is_floating())
}

/// The entries of a baseline file, in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Baseline {
    pub entries: Vec<Entry>,
}

impl Baseline {
    /// The first entry that knows a finding's cause.
    pub fn matching(&self, f: &Finding) -> Option<&Entry> {
        self.entries.iter().find(|e| e.matches(f))
    }

    /// Reads a baseline's text; every problem with its byte range in `text`.
    pub fn parse(text: &str) -> Result<Baseline, Vec<Problem>> {
        let file: File = toml::from_str(text).map_err(|e| vec![Problem { span: e.span().unwrap_or(0..0), message: e.message().to_string(), help: None }])?;
        let mut problems = Vec::new();
        let mut entries = Vec::new();
        let mut names = std::collections::HashSet::new();
        for raw in file.known {
            let mut oracles = Vec::new();
            for o in raw.oracles.iter().flatten() {
                match Oracle::parse(o.get_ref()) {
                    Some(oracle) => oracles.push(oracle),
                    None => problems.push(Problem::at(
                        o,
                        format!("unknown oracle `{}`", o.get_ref()),
                        format!("oracles are: {}", Oracle::ALL.iter().map(|o| o.as_str()).collect::<Vec<_>>().join(", ")),
                    )),
                }
            }
            if let Some(c) = &raw.cause {
                if !KINDS.contains(&c.get_ref().as_str()) {
                    let close = crate::diag::suggest::closest(c.get_ref(), KINDS.iter().copied());
                    let help = close.map_or_else(|| format!("cause kinds are: {}", KINDS.join(", ")), |k| format!("did you mean `{k}`?"));
                    problems.push(Problem::at(c, format!("unknown cause kind `{}`", c.get_ref()), help));
                }
            }
            let mut dtypes = Vec::new();
            for d in raw.dtypes.iter().flatten() {
                match DType::from_name(d.get_ref()) {
                    Some(dtype) => dtypes.push(dtype),
                    None => problems.push(Problem::at(d, format!("unknown dtype `{}`", d.get_ref()), "dtypes are named as in torch: float16, bfloat16, float32, ...".into())),
                }
            }
            if raw.oracles.as_ref().is_none_or(Vec::is_empty) && raw.cause.is_none() && raw.text.is_none() && raw.ops.as_ref().is_none_or(Vec::is_empty) && dtypes.is_empty() {
                problems.push(Problem::at(
                    &raw.name,
                    format!("entry `{}` would match every finding", raw.name.get_ref()),
                    "give at least one of oracles, cause, text, ops, dtypes".into(),
                ));
            }
            if !names.insert(raw.name.get_ref().clone()) {
                problems.push(Problem::at(&raw.name, format!("two entries are named `{}`", raw.name.get_ref()), "give each known cause its own name".into()));
            }
            entries.push(Entry {
                name: raw.name.into_inner(),
                oracles,
                cause: raw.cause.map(Spanned::into_inner),
                text: raw.text,
                ops: raw.ops.unwrap_or_default().iter().map(|o| family(o)).collect(),
                dtypes,
                issue: raw.issue,
                note: raw.note,
            });
        }
        if problems.is_empty() {
            Ok(Baseline { entries })
        } else {
            Err(problems)
        }
    }

    /// Reads a baseline file.
    pub fn load(path: &Path) -> Result<Baseline, LoadError> {
        let text = std::fs::read_to_string(path).map_err(|e| LoadError::Read(e.to_string()))?;
        Baseline::parse(&text).map_err(|problems| LoadError::Invalid { text, problems })
    }
}

/// Why a baseline could not be used.
#[derive(Clone, Debug)]
pub enum LoadError {
    Read(String),
    Invalid { text: String, problems: Vec<Problem> },
}

/// Something wrong in a baseline, where.
#[derive(Clone, Debug, PartialEq)]
pub struct Problem {
    pub span: Range<usize>,
    pub message: String,
    pub help: Option<String>,
}

impl Problem {
    fn at<T>(at: &Spanned<T>, message: String, help: String) -> Problem {
        Problem { span: at.span(), message, help: Some(help) }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    known: Vec<RawEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    name: Spanned<String>,
    oracles: Option<Vec<Spanned<String>>>,
    cause: Option<Spanned<String>>,
    text: Option<String>,
    ops: Option<Vec<String>>,
    dtypes: Option<Vec<Spanned<String>>>,
    issue: Option<String>,
    note: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::Baseline;

    #[test]
    fn an_entry_matches_a_finding_when_every_matcher_it_gives_does() {
        let b = Baseline::parse("[[known]]\nname = \"sq\"\noracles = [\"overflow\", \"relation\"]\ntext = \"sum of squares\"\nissue = \"https://example.org/1\"\n").unwrap();
        let finding = |oracle: &str, signature: &str| {
            let line = serde_json::json!({
                "id": "x", "api": "torch.linalg.vector_norm", "aten": "aten::x", "oracle": oracle, "signature": signature, "message": "",
                "signal": null, "seed": 0, "case_index": 0, "case": {"op": 0, "args": []}, "inputs": [], "repro": "",
                "elapsed_s": 0.0, "sfz_version": "", "torch_version": ""
            });
            crate::findings::store::parse_lines(&line.to_string()).0.remove(0)
        };
        assert_eq!(b.matching(&finding("overflow", "premature inf in output 0: an unscaled sum of squares overflows float32")).map(|e| e.name.as_str()), Some("sq"));
        assert!(b.matching(&finding("overflow", "premature inf in output 0")).is_none());
        assert!(b.matching(&finding("precision", "values differ in output 0")).is_none());
        // By the data's dtype: a bfloat16 input with float32 statistics is bfloat16.
        let low = Baseline::parse("[[known]]\nname = \"low\"\noracles = [\"precision\"]\ndtypes = [\"bfloat16\", \"float16\"]\n").unwrap();
        let with_inputs = |dtypes: &[&str]| {
            let mut f = finding("precision", "values differ in output 0");
            f.case.args = dtypes
                .iter()
                .map(|d| {
                    let dtype = crate::wire::case::DType::from_name(d).unwrap();
                    crate::wire::case::Arg::Tensor(crate::wire::case::TensorRecipe {
                        dtype,
                        shape: vec![2],
                        fill: crate::wire::case::Fill::Constant(1.0),
                        seed: 0,
                        layout: Default::default(),
                        specials: vec![],
                    })
                })
                .collect();
            f
        };
        assert!(low.matching(&with_inputs(&["int64", "bfloat16", "float32"])).is_some());
        assert!(low.matching(&with_inputs(&["float32", "bfloat16"])).is_none());
    }

    #[test]
    fn problems_point_at_what_is_wrong() {
        let text = "[[known]]\nname = \"a\"\ncause = \"premture\"\n\n[[known]]\nname = \"b\"\noracles = [\"crahs\"]\n\n[[known]]\nname = \"c\"\n\n[[known]]\nname = \"d\"\ndtypes = [\"half16\"]\n";
        let problems = Baseline::parse(text).unwrap_err();
        let shown: Vec<(&str, &str)> = problems.iter().map(|p| (&text[p.span.clone()], p.message.as_str())).collect();
        assert_eq!(
            shown,
            [
                ("\"premture\"", "unknown cause kind `premture`"),
                ("\"crahs\"", "unknown oracle `crahs`"),
                ("\"c\"", "entry `c` would match every finding"),
                ("\"half16\"", "unknown dtype `half16`"),
                ("\"d\"", "entry `d` would match every finding")
            ]
        );
        assert_eq!(problems[0].help.as_deref(), Some("did you mean `premature`?"));
        let malformed = Baseline::parse("[[known]]\nname = 3\n").unwrap_err();
        assert_eq!(malformed.len(), 1);
        assert!(Baseline::parse("[[known]]\nname = \"a\"\ntext = \"x\"\ncolour = 1\n").is_err(), "an unknown field is an error");
    }
}
