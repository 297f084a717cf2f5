//! Counters of a run, shared by the worker threads, and the summary they add up to.
use crate::plan::Skipped;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use serde::Serialize;

use crate::gen::coverage::CoverageReport;
use crate::gen::Mutation;
use crate::oracle::device::DeviceError;
use crate::oracle::Status;
use crate::wire::oracle::Oracle;
use crate::wire::variant::{CheckOutcome, CheckReport};

/// Per-API counters.
#[derive(Default)]
pub struct ApiCounters {
    pub executions: AtomicU64,
    /// Worker time in the calls and checks of its cases (a hang counts its timeout).
    pub micros: AtomicU64,
    pub invalid: AtomicU64,
    pub schema: AtomicU64,
    pub failed: AtomicU64,
    /// Cases the evaluator found violating a constraint (generation could not satisfy it).
    pub nonconforming: AtomicU64,
    /// Conforming cases executed, and how many libtorch rejected (invalid or schema).
    pub conform: AtomicU64,
    pub conform_rejected: AtomicU64,
    /// Violating cases executed; rejected by libtorch; rejected with an error that names the
    /// broken constraint (`blame`); accepted (libtorch returned).
    pub violate: AtomicU64,
    pub violate_rejected: AtomicU64,
    pub violate_matched: AtomicU64,
    pub violate_accepted: AtomicU64,
    /// Cases whose forward (`from` statement) raised: invalid inputs, among `invalid`.
    pub forward_rejected: AtomicU64,
    /// Executions that killed or hung the worker, and of those, timeouts; past the quarantine
    /// threshold the API is quarantined and its later cases are counted in `quarantined_cases`,
    /// not run.
    pub worker_deaths: AtomicU64,
    pub hangs: AtomicU64,
    pub quarantined: AtomicBool,
    pub quarantined_cases: AtomicU64,
    /// Per check of the API's plan, the cases where both sides returned and agreed.
    pub agreed: Mutex<Vec<u64>>,
    /// Per check, the cases a relation was skipped on because it fails in float64 too.
    pub refuted: Mutex<Vec<u64>>,
}

/// Counters of one run.
pub struct Counters {
    pub apis: Vec<ApiCounters>,
    pub findings: AtomicU64,
    pub duplicates: AtomicU64,
    /// Findings (and spec findings) that could not be written to the folder, and the first
    /// error: the campaign stops at the first.
    pub unwritten: AtomicU64,
    pub write_error: Mutex<Option<String>>,
    /// Findings per oracle (new ones only).
    pub by_oracle: Mutex<BTreeMap<Oracle, u64>>,
    /// Worker restarts after a crash or a hang.
    pub restarts: AtomicU64,
    /// The first few distinct libtorch errors for conforming cases, per API (validity feedback).
    pub rejections: Mutex<BTreeMap<String, BTreeMap<String, u64>>>,
    /// Per API, broken constraints whose violating inputs libtorch accepted, with counts.
    pub accepted_violations: Mutex<BTreeMap<String, BTreeMap<String, u64>>>,
    /// What the differential checks did, per oracle.
    pub checks: Mutex<BTreeMap<Oracle, CheckSummary>>,
    /// Numerical detections set aside for an implausible input (`oracle::plausible`), by why.
    pub implausible: Mutex<BTreeMap<String, u64>>,
    /// New findings of a cause the baseline knows (counted in `findings` too).
    pub known: AtomicU64,
    /// New findings by severity.
    pub by_severity: Mutex<BTreeMap<crate::findings::severity::Severity, u64>>,
}

/// What one differential oracle did over a run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CheckSummary {
    /// Cases it ran on.
    pub cases: u64,
    /// Both sides returned and agreed.
    pub agreed: u64,
    /// Both sides raised alike.
    pub both_raised: u64,
    /// It did not apply or could not run; why, with counts (the first few reasons).
    pub skipped: u64,
    pub skip_reasons: BTreeMap<String, u64>,
    /// Occurrences of a disagreement in values, structure or gradient (duplicates of a finding
    /// included).
    pub disagreed: u64,
    /// One side raised and the other returned, or the variant raised otherwise than the
    /// original: a finding only when the oracle's rules say so (a float64 or CUDA variant
    /// returning where the original raised is not one; docs/ORACLES.md).
    pub one_raised: u64,
    /// Of the `cuda` oracle, errors only the CUDA side raised that are no bug, counted apart
    /// from `one_raised` (`oracle::device`): no CUDA kernel for the operator or dtype, the
    /// device's own way with invalid values, an argument check only CUDA makes (each also a
    /// spec finding).
    #[serde(skip_serializing_if = "is_zero")]
    pub missing_kernel: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub invalid_values: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub cuda_argument: u64,
    /// Time the worker spent in this check.
    pub seconds: f64,
    /// The largest relative difference among agreeing cases (how close to the tolerance they ran).
    pub max_rel_agreeing: f64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Counters {
    /// A finding that could not be written: counted, the first error kept.
    pub fn unwritten(&self, what: String) {
        self.unwritten.fetch_add(1, Ordering::Relaxed);
        self.write_error.lock().expect("counters lock").get_or_insert(what);
    }

    pub fn new(apis: usize) -> Self {
        Counters {
            apis: (0..apis).map(|_| ApiCounters::default()).collect(),
            findings: AtomicU64::new(0),
            duplicates: AtomicU64::new(0),
            unwritten: AtomicU64::new(0),
            write_error: Mutex::new(None),
            by_oracle: Mutex::new(BTreeMap::new()),
            restarts: AtomicU64::new(0),
            rejections: Mutex::new(BTreeMap::new()),
            accepted_violations: Mutex::new(BTreeMap::new()),
            checks: Mutex::new(BTreeMap::new()),
            implausible: Mutex::new(BTreeMap::new()),
            known: AtomicU64::new(0),
            by_severity: Mutex::new(BTreeMap::new()),
        }
    }

    /// Counts the numerical detections a verdict set aside.
    pub fn implausible(&self, set_aside: &[(Oracle, crate::oracle::plausible::Implausible)]) {
        if set_aside.is_empty() {
            return;
        }
        let mut m = self.implausible.lock().expect("counters lock");
        for (_, why) in set_aside {
            *m.entry(why.describe().to_string()).or_insert(0) += 1;
        }
    }

    /// Counts what the checks of one case did (`oracles` parallel to `reports`).
    pub fn checks(&self, oracles: &[Oracle], reports: &[CheckReport]) {
        let mut all = self.checks.lock().expect("counters lock");
        for (oracle, r) in oracles.iter().zip(reports) {
            let c = all.entry(*oracle).or_default();
            c.cases += 1;
            c.seconds += f64::from(r.micros) * 1e-6;
            match &r.outcome {
                CheckOutcome::Agree { max_rel, .. } => {
                    c.agreed += 1;
                    c.max_rel_agreeing = c.max_rel_agreeing.max(*max_rel);
                }
                CheckOutcome::BothRaised => c.both_raised += 1,
                CheckOutcome::Skipped(why) => {
                    c.skipped += 1;
                    // A fixed reason as written; the message after it normalised, so that
                    // reasons differing only in numbers count together.
                    let key = match why.split_once(": ") {
                        Some((head, rest)) => format!("{head}: {}", crate::oracle::errors::normalize(rest)),
                        None => why.clone(),
                    };
                    if c.skip_reasons.len() < 8 || c.skip_reasons.contains_key(&key) {
                        *c.skip_reasons.entry(key).or_insert(0) += 1;
                    }
                }
                CheckOutcome::Raised { class, message } if *oracle == Oracle::Cuda => match crate::oracle::device::classify_cuda_only(*class, message) {
                    Some(DeviceError::MissingKernel) => c.missing_kernel += 1,
                    Some(DeviceError::InvalidValues) => c.invalid_values += 1,
                    Some(DeviceError::Argument) => c.cuda_argument += 1,
                    None => c.one_raised += 1,
                },
                CheckOutcome::Raised { .. } | CheckOutcome::Returned => c.one_raised += 1,
                _ => c.disagreed += 1,
            }
        }
    }

    /// Counts, per check of API `api`, the reports that agreed and the relations that fail in
    /// float64 too.
    pub fn per_check(&self, api: usize, reports: &[CheckReport]) {
        let Some(c) = self.apis.get(api) else { return };
        let count = |counts: &Mutex<Vec<u64>>, hit: &dyn Fn(&CheckOutcome) -> bool| {
            let mut counts = counts.lock().expect("counters lock");
            if counts.len() < reports.len() {
                counts.resize(reports.len(), 0);
            }
            for (n, r) in counts.iter_mut().zip(reports) {
                *n += u64::from(hit(&r.outcome));
            }
        };
        count(&c.agreed, &|o| matches!(o, CheckOutcome::Agree { .. }));
        count(&c.refuted, &|o| matches!(o, CheckOutcome::Skipped(why) if why == crate::wire::variant::relation::FAILS_IN_FLOAT64));
    }

    /// Records that libtorch accepted an input breaking `constraint`.
    pub fn accepted_violation(&self, api: &str, constraint: &str) {
        let mut r = self.accepted_violations.lock().expect("counters lock");
        *r.entry(api.to_string()).or_default().entry(constraint.to_string()).or_insert(0) += 1;
    }

    pub fn count(&self, api: usize, status: Status, conforms: bool) {
        let c = &self.apis[api];
        c.executions.fetch_add(1, Ordering::Relaxed);
        match status {
            Status::Ok => {}
            Status::Invalid => {
                c.invalid.fetch_add(1, Ordering::Relaxed);
            }
            Status::Schema => {
                c.schema.fetch_add(1, Ordering::Relaxed);
            }
            Status::Failed => {
                c.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
        if !conforms {
            c.nonconforming.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Records why libtorch rejected a case the spec says is valid (a missing constraint?).
    pub fn rejection(&self, api: &str, message: &str) {
        let key = crate::oracle::errors::normalize(message.lines().next().unwrap_or(""));
        let mut r = self.rejections.lock().expect("counters lock");
        let per_api = r.entry(api.to_string()).or_default();
        if per_api.len() < 8 || per_api.contains_key(&key) {
            *per_api.entry(key).or_insert(0) += 1;
        }
    }

    pub fn executions(&self) -> u64 {
        self.apis.iter().map(|a| a.executions.load(Ordering::Relaxed)).sum()
    }

    pub fn invalid(&self) -> u64 {
        self.apis.iter().map(|a| a.invalid.load(Ordering::Relaxed) + a.schema.load(Ordering::Relaxed)).sum()
    }
}

/// Per-API figures in the summary.
#[derive(Clone, Debug, Serialize)]
pub struct ApiSummary {
    pub api: String,
    pub executions: u64,
    /// Worker time its cases took, calls and checks, in microseconds: with `executions`, the
    /// measured cost `--shard` balances by (`--costs`).
    pub micros: u64,
    pub invalid_arguments: u64,
    /// Calls that did not match the operator's schema (the spec's parameter types are wrong).
    pub schema_mismatches: u64,
    pub failures: u64,
    /// Fraction of executions libtorch accepted.
    pub valid_rate: f64,
    /// Errors libtorch raised for cases the spec says are valid, with counts.
    pub rejected_valid: BTreeMap<String, u64>,
    /// Cases meant to conform whose concrete values generation could not fit to the constraints
    /// (sent anyway, counted in neither mode).
    pub nonconforming: u64,
    /// Conforming cases: executed, and the fraction libtorch accepted.
    pub conform_executions: u64,
    pub conform_valid_rate: f64,
    /// Violating cases: executed, rejected by libtorch, rejected with an error that names the
    /// broken constraint, accepted.
    pub violate_executions: u64,
    pub violate_rejected: u64,
    pub violate_matched: u64,
    pub violate_accepted: u64,
    /// Constraints whose violating inputs libtorch accepted (stricter than libtorch, or a check
    /// libtorch lacks), with counts.
    pub accepted_violations: BTreeMap<String, u64>,
    /// Cases whose forward (`from` statement) raised before the call: counted as invalid
    /// arguments.
    pub forward_rejected: u64,
    /// Constraints violate mode cannot break alone, with why.
    pub unbreakable: BTreeMap<String, String>,
    pub coverage: Option<CoverageReport>,
    /// Executions that killed or hung the worker.
    pub worker_deaths: u64,
    /// Whether it was quarantined (too many worker deaths), and the cases not run since.
    pub quarantined: bool,
    pub quarantined_cases: u64,
    /// Per check of the API's plan (in its order), the cases where both sides agreed: what a
    /// check held on, which `sfz infer --oracles` counts as a relation's evidence.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub checks_agreed: Vec<u64>,
    /// Per check, the cases a relation failed on in float64 too (skipped as no finding): what
    /// `sfz infer --oracles` counts against it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub checks_refuted: Vec<u64>,
}

/// What a run did, as `--json` prints it.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// conform, violate or mixed:RATIO.
    pub mode: String,
    /// solver or naive.
    pub generator: String,
    pub mutation: Mutation,
    /// Seconds spent solving pools (set by the caller): before the first case, or beside the
    /// cases (`solved_beside`).
    pub solve_seconds: f64,
    /// Whether APIs were solved while cases ran (`--time`), each fuzzed from when it was.
    pub solved_beside: bool,
    pub executions: u64,
    pub seconds: f64,
    pub execs_per_second: f64,
    pub invalid_arguments: u64,
    pub findings: u64,
    pub duplicates: u64,
    pub findings_by_oracle: BTreeMap<Oracle, u64>,
    pub worker_restarts: u64,
    /// Over conforming cases: the fraction libtorch accepted.
    pub conform_valid_rate: f64,
    /// Over violating cases: the fraction libtorch rejected, and the fraction it rejected with
    /// an error naming the broken constraint.
    pub violate_rejected_rate: f64,
    pub violate_matched_rate: f64,
    /// Inputs the spec allows that libtorch rejected, one per API and error
    /// (`spec-findings.jsonl`).
    pub spec_findings: u64,
    pub workers: usize,
    pub seed: u64,
    pub apis: Vec<ApiSummary>,
    /// APIs left out, with why (unknown operator, unsatisfiable constraints, solver timeout).
    pub skipped: Vec<Skipped>,
    /// What each differential oracle did (those the specs select).
    pub checks: BTreeMap<Oracle, CheckSummary>,
    pub out: String,
    /// Findings that could not be written (a full or unwritable folder), and why; the campaign
    /// stopped at the first.
    pub unwritten: u64,
    pub write_error: Option<String>,
    /// This process's shard of the campaign (`K/N`), if it is one; `seed` is then the shard's.
    pub shard: Option<String>,
    /// Cases below this index were all judged (`--resume` goes on from here).
    pub next_case: u64,
    /// Numerical disagreements at inputs no maintainer acts on, counted, not reported
    /// (`oracle::plausible`), by why.
    pub implausible: BTreeMap<String, u64>,
    /// Of `findings`, those of a cause the baseline knows.
    pub known_findings: u64,
    /// `findings` by severity, worst first.
    pub findings_by_severity: BTreeMap<crate::findings::severity::Severity, u64>,
    /// Seconds from the command's start to its first case (None: no case ran).
    pub first_case_seconds: Option<f64>,
    /// Seconds the whole command took, solving and triage included (set by the caller).
    pub wall_seconds: f64,
    /// Findings of the folder whose confirmation or shrinking is still to do
    /// (`Finding::triage`: the clock or a signal cut it short); `--resume` does it first.
    pub triage_pending: u64,
    /// APIs not run because their pools were not solved within the solving share of `--time`.
    pub unsolved: u64,
    /// The signal that stopped the campaign (`SIGINT`, `SIGTERM`), if one did.
    pub stopped_by: Option<String>,
}

impl Counters {
    pub fn summary(&self, names: &[String], seconds: f64, workers: usize, seed: u64, skipped: Vec<Skipped>, out: String) -> Summary {
        let rejections = self.rejections.lock().expect("counters lock").clone();
        let accepted = self.accepted_violations.lock().expect("counters lock").clone();
        let apis = names
            .iter()
            .zip(&self.apis)
            .map(|(name, c)| {
                let executions = c.executions.load(Ordering::Relaxed);
                let invalid = c.invalid.load(Ordering::Relaxed);
                let schema = c.schema.load(Ordering::Relaxed);
                let conform = c.conform.load(Ordering::Relaxed);
                ApiSummary {
                    api: name.clone(),
                    executions,
                    micros: c.micros.load(Ordering::Relaxed),
                    invalid_arguments: invalid,
                    schema_mismatches: schema,
                    failures: c.failed.load(Ordering::Relaxed),
                    valid_rate: if executions == 0 { 0.0 } else { 1.0 - (invalid + schema) as f64 / executions as f64 },
                    rejected_valid: rejections.get(name).cloned().unwrap_or_default(),
                    nonconforming: c.nonconforming.load(Ordering::Relaxed),
                    conform_executions: conform,
                    conform_valid_rate: rate(conform - c.conform_rejected.load(Ordering::Relaxed).min(conform), conform),
                    violate_executions: c.violate.load(Ordering::Relaxed),
                    violate_rejected: c.violate_rejected.load(Ordering::Relaxed),
                    violate_matched: c.violate_matched.load(Ordering::Relaxed),
                    violate_accepted: c.violate_accepted.load(Ordering::Relaxed),
                    accepted_violations: accepted.get(name).cloned().unwrap_or_default(),
                    forward_rejected: c.forward_rejected.load(Ordering::Relaxed),
                    unbreakable: BTreeMap::new(),
                    coverage: None,
                    worker_deaths: c.worker_deaths.load(Ordering::Relaxed),
                    quarantined: c.quarantined.load(Ordering::Relaxed),
                    quarantined_cases: c.quarantined_cases.load(Ordering::Relaxed),
                    checks_agreed: c.agreed.lock().expect("counters lock").clone(),
                    checks_refuted: c.refuted.lock().expect("counters lock").clone(),
                }
            })
            .collect();
        let executions = self.executions();
        let sum = |f: fn(&ApiCounters) -> &AtomicU64| self.apis.iter().map(|a| f(a).load(Ordering::Relaxed)).sum::<u64>();
        let (conform, conform_rejected) = (sum(|a| &a.conform), sum(|a| &a.conform_rejected));
        let (violate, violate_rejected, violate_matched) = (sum(|a| &a.violate), sum(|a| &a.violate_rejected), sum(|a| &a.violate_matched));
        Summary {
            mode: String::new(),
            generator: String::new(),
            mutation: Mutation::none(),
            solve_seconds: 0.0,
            solved_beside: false,
            conform_valid_rate: rate(conform - conform_rejected.min(conform), conform),
            violate_rejected_rate: rate(violate_rejected, violate),
            violate_matched_rate: rate(violate_matched, violate),
            spec_findings: 0,
            executions,
            seconds,
            execs_per_second: if seconds > 0.0 { executions as f64 / seconds } else { 0.0 },
            invalid_arguments: self.invalid(),
            findings: self.findings.load(Ordering::Relaxed),
            duplicates: self.duplicates.load(Ordering::Relaxed),
            findings_by_oracle: self.by_oracle.lock().expect("counters lock").clone(),
            worker_restarts: self.restarts.load(Ordering::Relaxed),
            workers,
            seed,
            apis,
            skipped,
            checks: self.checks.lock().expect("counters lock").clone(),
            out,
            unwritten: self.unwritten.load(Ordering::Relaxed),
            write_error: self.write_error.lock().expect("counters lock").clone(),
            shard: None,
            next_case: 0,
            implausible: self.implausible.lock().expect("counters lock").clone(),
            known_findings: self.known.load(Ordering::Relaxed),
            findings_by_severity: self.by_severity.lock().expect("counters lock").clone(),
            first_case_seconds: None,
            wall_seconds: 0.0,
            triage_pending: 0,
            unsolved: 0,
            stopped_by: None,
        }
    }
}

fn rate(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::outcome::ErrorClass;

    #[test]
    fn cuda_only_errors_that_are_no_bug_are_counted_apart() {
        let raised = |class, message: &str| CheckReport { outcome: CheckOutcome::Raised { class, message: message.into() }, micros: 1 };
        let counters = Counters::new(1);
        let reports = [
            raised(ErrorClass::NotImplemented, "Could not run 'aten::_foo' with arguments from the 'CUDA' backend."),
            raised(ErrorClass::LinAlg, "linalg.inv: The diagonal element 2 is zero, the inversion could not be completed because the input matrix is singular."),
            raised(ErrorClass::Value, "Expected all tensors to be on the same device"),
            raised(ErrorClass::OutOfRange, "St12out_of_range: vector::_M_range_check"),
        ];
        for r in &reports {
            counters.checks(&[Oracle::Cuda], std::slice::from_ref(r));
            // The same message from another oracle is one side raising, as before.
            counters.checks(&[Oracle::Out], std::slice::from_ref(r));
        }
        let all = counters.checks.lock().expect("counters lock");
        let cuda = &all[&Oracle::Cuda];
        assert_eq!((cuda.missing_kernel, cuda.invalid_values, cuda.cuda_argument, cuda.one_raised), (1, 1, 1, 1));
        assert_eq!((all[&Oracle::Out].missing_kernel, all[&Oracle::Out].one_raised), (0, 4));
    }
}
