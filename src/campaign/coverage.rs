//! Per-API coverage over several runs (the shards of a campaign, a campaign and its
//! resumptions): what any run reached, read from the `coverage` object of each run's summary.
use std::collections::{BTreeMap, BTreeSet};

use crate::gen::coverage::CoverageReport;

/// Each API's coverage over the summary lines (`summaries.jsonl`), in API order. Lines or
/// objects that do not parse are skipped: coverage is a statistic, not a finding.
pub fn over_summaries<'a>(lines: impl IntoIterator<Item = &'a str>) -> BTreeMap<String, CoverageReport> {
    let mut by_api: BTreeMap<String, CoverageReport> = BTreeMap::new();
    for line in lines {
        let Ok(summary) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        for a in summary["apis"].as_array().into_iter().flatten() {
            let (Some(api), Some(c)) = (a["api"].as_str(), a.get("coverage")) else { continue };
            let Ok(c) = serde_json::from_value::<CoverageReport>(c.clone()) else { continue };
            match by_api.get_mut(api) {
                Some(into) => absorb(into, &c),
                None => {
                    by_api.insert(api.to_string(), c);
                }
            }
        }
    }
    by_api
}

/// Adds `other`, the same API's coverage in another run, to `into`: cases, boundary classes and
/// constraint outcomes summed (constraints and branches matched by their text), dtypes and enum
/// values united, and the outcomes reached counted again. Distinct combinations are sets a
/// summary only counts, so the merged count is the larger run's: a lower bound.
pub fn absorb(into: &mut CoverageReport, other: &CoverageReport) {
    into.cases += other.cases;
    for (mine, theirs) in
        [(&mut into.dtypes, &other.dtypes), (&mut into.dtypes_possible, &other.dtypes_possible), (&mut into.enums, &other.enums), (&mut into.enums_possible, &other.enums_possible)]
    {
        for (param, values) in theirs {
            let union: BTreeSet<String> = mine.remove(param).unwrap_or_default().into_iter().chain(values.iter().cloned()).collect();
            mine.insert(param.clone(), union.into_iter().collect());
        }
    }
    for c in &other.constraints {
        match into.constraints.iter_mut().find(|m| m.text == c.text) {
            Some(m) => {
                m.held += c.held;
                m.vacuous += c.vacuous;
                m.broken += c.broken;
                m.unknown += c.unknown;
                for b in &c.branches {
                    match m.branches.iter_mut().find(|mb| mb.text == b.text) {
                        Some(mb) => {
                            mb.taken += b.taken;
                            mb.not_taken += b.not_taken;
                        }
                        None => m.branches.push(b.clone()),
                    }
                }
            }
            None => into.constraints.push(c.clone()),
        }
    }
    // A slot counts once reached; vacuous is a slot only where a run saw it (an optional), so
    // reached is exact while the total stays what the runs said (the same spec: the same total).
    into.outcomes_reached = into
        .constraints
        .iter()
        .map(|c| {
            [c.held, c.broken, c.vacuous].iter().filter(|&&n| n > 0).count() + c.branches.iter().map(|b| usize::from(b.taken > 0) + usize::from(b.not_taken > 0)).sum::<usize>()
        })
        .sum();
    into.outcomes_total = into.outcomes_total.max(other.outcomes_total).max(into.outcomes_reached);
    for (class, n) in &other.boundary {
        *into.boundary.entry(class.clone()).or_insert(0) += n;
    }
    into.boundary_classes = into.boundary.len();
    into.combos = into.combos.max(other.combos);
    into.accepted_combos = into.accepted_combos.max(other.accepted_combos);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(line: &str) -> String {
        format!(r#"{{"apis":[{{"api":"torch.exp","coverage":{line}}}]}}"#)
    }

    #[test]
    fn two_runs_of_one_api_unite_what_each_reached() {
        let a = run(r#"{"cases":10,"dtypes":{"input":["float32"]},"dtypes_possible":{"input":["float32","float64"]},"enums":{},"enums_possible":{},
            "outcomes_reached":1,"outcomes_total":4,"constraints":[{"text":"input.ndim <= 4","category":"Ndim","held":10,"vacuous":0,"broken":0,"unknown":0,
            "branches":[{"text":"input.ndim == 0","taken":0,"not_taken":10}]}],"boundary":{"empty":2},"boundary_classes":1,"combos":3,"accepted_combos":2}"#);
        let b = run(r#"{"cases":5,"dtypes":{"input":["float64"]},"dtypes_possible":{"input":["float32","float64"]},"enums":{},"enums_possible":{},
            "outcomes_reached":2,"outcomes_total":4,"constraints":[{"text":"input.ndim <= 4","category":"Ndim","held":3,"vacuous":0,"broken":2,"unknown":0,
            "branches":[{"text":"input.ndim == 0","taken":1,"not_taken":4}]}],"boundary":{"empty":1,"nan":4},"boundary_classes":2,"combos":5,"accepted_combos":1}"#);
        let merged = over_summaries([a.as_str(), "not json", b.as_str()]);
        let c = &merged["torch.exp"];
        assert_eq!(c.cases, 15);
        assert_eq!(c.dtypes["input"], ["float32", "float64"]);
        assert_eq!((c.constraints[0].held, c.constraints[0].broken), (13, 2));
        assert_eq!((c.constraints[0].branches[0].taken, c.constraints[0].branches[0].not_taken), (1, 14));
        // held, broken, and both directions of the branch: neither run alone reached all four.
        assert_eq!((c.outcomes_reached, c.outcomes_total), (4, 4));
        assert_eq!((c.boundary["empty"], c.boundary_classes), (3, 2));
        assert_eq!((c.combos, c.accepted_combos), (5, 2));
    }
}
