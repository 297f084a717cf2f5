//! The candidates a search weighs: a candidate with its checked constraints (`Checked`), a
//! value set learned from libtorch's errors (`Learned`), how a batch's cases stand to one
//! (`Tally`), and the counts by source that `ApiResult` reports.
use super::runner::{holds, verdict, Batch};
use crate::gen::values;
use crate::rules::reduce;
use crate::rules::Candidate;
use crate::spec::{ApiSpec, Category, Constraint, Origin, RuleSource, TExpr};
use crate::wire::case::Arg;

/// A candidate with its checked constraints.
#[derive(Clone, Debug)]
pub struct Checked {
    pub candidate: Candidate,
    pub constraints: Vec<Constraint>,
    /// Set for a rule its own runs validated (a value set learned from libtorch's errors, `Learned`): written with
    /// this evidence.
    pub evidence: Option<Vec<(String, i64)>>,
}

/// A learned value set (`Proposers::learn_values`), with what the runs showed.
#[derive(Clone, Debug)]
pub struct Learned {
    pub candidate: Candidate,
    pub constraint: Constraint,
    /// Named counts for the rule's `evidence`.
    pub evidence: Vec<(String, i64)>,
    /// Inputs with one of the values that libtorch accepted: they refute any rule they break.
    pub accepted: Vec<Vec<Arg>>,
}

/// How many of the accepted runs with learned string values break the constraints of `probe`.
pub(super) fn broken_by(learned: &[Learned], probe: &ApiSpec) -> usize {
    learned.iter().flat_map(|l| &l.accepted).filter(|a| holds(probe, a) == Some(false)).count()
}

/// A candidate's probe: `base` with the candidate's constraints instead of its own.
pub(super) fn probe_of(base: &ApiSpec, c: &Checked) -> ApiSpec {
    let mut p = base.clone();
    p.requires = c.constraints.clone();
    p
}

/// `base` with the accepted rules' constraints.
pub(super) fn current(base: &ApiSpec, accepted: &Accepted) -> ApiSpec {
    let extra: Vec<&[Constraint]> = accepted.iter().map(|(c, _)| c.constraints.as_slice()).collect();
    reduce::with(base, &extra, None)
}

impl Checked {
    /// An inferred candidate of one statement about parameter `param` of `api`, built during
    /// a search rather than checked from text: `text` (without its `;`) must say what `expr`
    /// does.
    pub fn inferred(api: &ApiSpec, name: String, param: usize, text: String, expr: TExpr, category: Category) -> Checked {
        let constraint = Constraint { expr, span: api.span, text: text.clone(), origin: Origin::Inline, category, params: vec![param] };
        Checked { candidate: Candidate { name, text: format!("{text};"), source: RuleSource::Inferred }, constraints: vec![constraint], evidence: None }
    }
}

/// Counts of one candidate over a batch: (ok and holds, invalid and holds, ok and broken, invalid and broken).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Tally {
    pub(super) ok_holds: usize,
    pub(super) bad_holds: usize,
    pub(super) ok_broken: usize,
    pub(super) bad_broken: usize,
}

pub(super) fn tally(probe: &ApiSpec, batch: &Batch) -> Tally {
    let mut t = Tally::default();
    for (args, ok) in batch.args.iter().zip(&batch.ok) {
        match (holds(probe, args), ok) {
            (Some(true), true) => t.ok_holds += 1,
            (Some(true), false) => t.bad_holds += 1,
            (Some(false), true) => t.ok_broken += 1,
            (Some(false), false) => t.bad_broken += 1,
            (None, _) => {}
        }
    }
    t
}

/// How many accepted cases of `batch` surely break the candidate: a value rule whose range
/// a tensor's fill range only reaches outside of may hold on the few elements drawn
/// (`index.values in 0..input.shape[dim]` on a one-element index).
pub(super) fn surely_broken_by_accepted(probe: &ApiSpec, batch: &Batch) -> usize {
    let drawn = |args: &[Arg]| verdict(&values::conforms_reading(probe, args, crate::eval::Bounds::Drawn));
    batch.args.iter().zip(&batch.ok).filter(|(args, ok)| **ok && drawn(args) == Some(false)).count()
}

/// Rules accepted so far, each with the API it was checked against.
pub(super) type Accepted = [(Checked, ApiSpec)];

/// The accepted rules but those at `out`.
pub(super) fn without(accepted: &Accepted, out: &[usize]) -> Vec<(Checked, ApiSpec)> {
    accepted.iter().enumerate().filter(|(j, _)| !out.contains(j)).map(|(_, a)| a.clone()).collect()
}

/// The count an evidence list names `key` (0 when it names none).
pub(super) fn evidence_count(evidence: &[(String, i64)], key: &str) -> i64 {
    evidence.iter().find(|(k, _)| k == key).map_or(0, |(_, v)| *v)
}

/// A learned value set counts under `errors`, the source of its values.
pub(super) fn source_of(c: &Checked) -> String {
    if c.evidence.is_some() {
        "errors".into()
    } else {
        source_name(&c.candidate)
    }
}

pub(super) fn source_name(c: &Candidate) -> String {
    match c.source {
        RuleSource::Manual => "manual",
        RuleSource::Llm => "llm",
        RuleSource::Inferred => "enumerative",
    }
    .to_string()
}

pub(super) fn bump(counts: &mut Vec<(String, usize)>, key: String) {
    match counts.iter_mut().find(|(k, _)| *k == key) {
        Some((_, n)) => *n += 1,
        None => counts.push((key, 1)),
    }
}

/// The rules of a checked file as candidates, before any evidence.
#[cfg(test)]
pub(crate) fn candidates_of(spec: &crate::spec::Spec) -> Vec<Checked> {
    spec.rules
        .iter()
        .map(|r| Checked {
            candidate: Candidate { name: r.meta.name.clone(), text: r.constraints[0].text.clone(), source: RuleSource::Inferred },
            constraints: r.constraints.clone(),
            evidence: None,
        })
        .collect()
}
