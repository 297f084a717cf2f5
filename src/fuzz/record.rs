//! Turning a detection into files: the finding's reproducer and pinned spec, and after
//! minimization the smaller case's (the original reproducer kept beside it). Shared by the
//! campaign and its minimizer.
use std::time::Duration;

use crate::case::Case;
use crate::findings::minimize::{self, Budget};
use crate::findings::pinned::pinned_spec;
use crate::findings::repro::Reproducer;
use crate::findings::{Finding, Minimization, Original, Store};
use crate::oracle::{self, Evidence};
use crate::outcome::Execution;
use crate::plan::ApiPlan;
use crate::variant::Check;
use crate::worker::supervisor::{Pool, PoolConfig};

/// The reproducer of a finding's current case.
pub fn reproducer(plan: &ApiPlan, finding: &Finding) -> String {
    let (check, twin) = check_of(plan, finding);
    let mut header = format!("sfz finding {}: {} on {}\n{}", finding.id, finding.oracle, finding.api, first_line(&finding.message));
    if let Some(v) = &finding.violated {
        header.push_str(&format!("\nthe input breaks `{}` on purpose (violate mode)", v.text));
    }
    let expect = match (finding.oracle.as_str(), &finding.signal) {
        ("crash", Some(sig)) => format!("dies with {sig}"),
        ("crash", None) => "exits the process".to_string(),
        ("hang", _) => "does not return".to_string(),
        ("internal_error", _) => format!("raises: {}", first_line(&finding.message)),
        ("oom", _) => "runs out of memory".to_string(),
        _ => String::new(),
    };
    Reproducer { api: &plan.api, binding: &plan.binding, case: &finding.case, evidence: &finding.evidence, check: check.as_ref(), twin, header: &header, expect: &expect }
        .render()
}

/// The pinned spec of a finding's current case.
pub fn pinned(plan: &ApiPlan, finding: &Finding) -> String {
    let ensures: Vec<&str> = match finding.evidence {
        Evidence::Postcondition { clause } => plan.api.ensures.get(clause).map(|c| c.text.as_str()).into_iter().collect(),
        _ => Vec::new(),
    };
    let header = format!("sfz finding {}: {} on {}\n{}", finding.id, finding.oracle, finding.api, first_line(&finding.message));
    pinned_spec(&plan.api, &finding.case, &header, &finding.oracle, finding.check.as_ref(), &ensures)
}

/// The check (as recorded) and the twin operator it calls, for a differential finding.
fn check_of<'a>(plan: &'a ApiPlan, finding: &Finding) -> (Option<Check>, Option<&'a crate::ops::binding::OpBinding>) {
    match finding.evidence {
        Evidence::Differential { check, .. } => {
            let planned = plan.checks.get(check);
            (finding.check.clone().or_else(|| planned.map(|p| p.check.clone())), planned.and_then(|p| p.twin.as_ref()))
        }
        _ => (None, None),
    }
}

fn first_line(s: &str) -> &str {
    s.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim()
}

/// Shrinks a recorded finding with `pool` (which runs the campaign's op table and checks) and,
/// when a smaller case still fires alike, rewrites its files. Returns the updated finding.
pub fn minimize_finding(pool: &Pool, plan: &ApiPlan, checks: &[Check], store: &Store, finding: &Finding, budget: Budget) -> std::io::Result<Finding> {
    let op = finding.case.op;
    // The message of each candidate that fired: the minimized case's replaces the original's
    // (its element counts and values are the smaller case's).
    let mut messages: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    let key = |c: &Case| serde_json::to_string(c).unwrap_or_default();
    // A worker's death is judged on a case run alone in a fresh worker: in a worker that ran the
    // earlier candidates, a heap one of them corrupted can be noticed during a later one, which
    // then passes for a smaller crashing case that kills nothing by itself (`linalg.eig`).
    let alone = died(finding) && finding.oracle != "hang";
    let fires = &mut |batch: &[Case]| -> Vec<bool> {
        let execs: Vec<Option<Execution>> = if alone {
            batch
                .iter()
                .map(|case| {
                    pool.retire();
                    pool.run_batch(std::slice::from_ref(case)).pop().flatten()
                })
                .collect()
        } else {
            pool.run_batch(batch)
        };
        execs
            .into_iter()
            .zip(batch)
            .map(|(exec, case)| {
                let Some(exec) = exec else { return false };
                let verdict = oracle::judge(&plan.api, checks, case, &exec);
                match verdict.detections.into_iter().find(|d| same_cause(finding, d)) {
                    Some(d) => {
                        messages.insert(key(case), d.message);
                        true
                    }
                    None => false,
                }
            })
            .collect()
    };
    let shrunk = minimize::minimize(&plan.api, &finding.case, budget, fires);
    let mut updated = finding.clone();
    let stats = Minimization {
        executions: shrunk.executions,
        steps: shrunk.steps,
        seconds: shrunk.seconds,
        elements_before: finding.case.input_elements(),
        elements_after: shrunk.case.input_elements(),
    };
    if shrunk.steps > 0 {
        let original_repro = finding.repro.replace(".py", ".original.py");
        store.write_file(&original_repro, &reproducer(plan, finding))?;
        updated.original = Some(Original { case: finding.case.clone(), inputs: finding.inputs.clone(), repro: original_repro, message: Some(finding.message.clone()) });
        if let Some(m) = messages.remove(&key(&shrunk.case)) {
            updated.message = m;
        }
        updated.case = Case { op, ..shrunk.case };
        updated.inputs = super::describe_inputs(plan, &updated.case);
    }
    updated.minimization = Some(stats);
    if let Some(p) = &updated.pinned {
        store.write_file(p, &pinned(plan, &updated))?;
    }
    store.update(updated.clone(), &reproducer(plan, &updated))?;
    Ok(updated)
}

/// How many times the campaign's timeout a hang must last alone to be confirmed.
pub const HANG_CONFIRM_FACTOR: u32 = 10;

/// Whether a finding is a worker's death (a signal or an exit, in the call or in a check) or a
/// hang: what a worker's state, rather than the case, can cause.
pub fn died(finding: &Finding) -> bool {
    finding.signal.is_some() || finding.oracle == "crash" || finding.oracle == "hang" || finding.signature.contains(": exit ")
}

/// Runs a finding's case alone in a fresh worker (its own fork server, one case in flight),
/// 16 times (a hang once, with `HANG_CONFIRM_FACTOR` times the timeout), and says whether the
/// same cause shows again (`same_cause`). Heap corruption is noticed by the allocator later, at
/// a free: one run of the culprit may end normally. A case that merely ran slow under a loaded
/// campaign (a polynomial of degree 2^62, an O(n) recurrence) finishes in the longer time and is
/// not a hang. A worker that cannot start counts as confirmed: nothing speaks against the finding.
pub fn confirm(config: &PoolConfig, plan: &ApiPlan, checks: &[Check], finding: &Finding) -> bool {
    let hang = finding.oracle == "hang";
    let runs = if hang { 1 } else { 16 };
    let timeout = if hang { config.timeout * HANG_CONFIRM_FACTOR } else { config.timeout };
    let Ok(pool) = Pool::start(PoolConfig { workers: 1, in_flight: 1, timeout, ..config.clone() }) else { return true };
    let cases = vec![finding.case.clone(); runs];
    pool.run_batch(&cases)
        .into_iter()
        .zip(&cases)
        .any(|(exec, case)| exec.is_some_and(|exec| oracle::judge(&plan.api, checks, case, &exec).detections.iter().any(|d| same_cause(finding, d))))
}

/// Whether a detection shows a finding's cause again: the same oracle with the same signature,
/// or for an abort, the same oracle, SIGABRT, and the same place (the call, or the same check):
/// the allocator's words for one heap corruption vary from run to run.
fn same_cause(finding: &Finding, d: &oracle::Detection) -> bool {
    d.oracle == finding.oracle
        && match (&finding.signal, d.signal) {
            (Some(name), Some(sig)) if name == "SIGABRT" => crate::outcome::signal_name(sig) == *name && d.signature.split(": ").next() == finding.signature.split(": ").next(),
            _ => d.signature == finding.signature,
        }
}

/// The minimization budget of a campaign: executions per finding, and time.
pub fn budget(executions: u64) -> Budget {
    Budget { executions, time: Duration::from_secs(30), batch: 8 }
}
