//! Shrinking a recorded finding: smaller inputs that still show its cause, each judged as the
//! finding was (a death alone in a fresh worker), the smaller case's files written over the
//! first (the original reproducer kept beside it).
use std::time::Duration;

use crate::findings::minimize::{self, Budget};
use crate::findings::record::{pinned, reproducer};
use crate::findings::{Finding, Minimization, Original, Store};
use crate::oracle;
use crate::plan::ApiPlan;
use crate::wire::case::Case;
use crate::wire::oracle::Oracle;
use crate::wire::variant::Check;
use crate::worker::Pool;

use super::alone::{call_until_shown, died, same_cause, CONFIRM_CALLS};

/// Shrinks a recorded finding with `pool` (which runs the campaign's op table and checks) and,
/// when a smaller case still fires alike, rewrites its files. Returns the updated finding.
pub fn minimize_finding(pool: &Pool, plan: &ApiPlan, checks: &[Check], store: &Store, finding: &Finding, budget: Budget) -> std::io::Result<Finding> {
    let op = finding.case.op;
    // The message and evidence of each candidate that fired: the minimized case's replace the
    // original's (its element counts and values are the smaller case's; a gradient's element
    // or a list's tensor may sit elsewhere in it).
    let mut messages: std::collections::HashMap<String, (String, oracle::Evidence)> = std::collections::HashMap::new();
    let key = |c: &Case| serde_json::to_string(c).unwrap_or_default();
    // A worker's death is judged on a case run alone in a fresh worker: in a worker that ran the
    // earlier candidates, a heap one of them corrupted can be noticed during a later one, which
    // then passes for a smaller crashing case that kills nothing by itself (`linalg.eig`). Alone,
    // a candidate is called up to twice as many times in a row as the finding needed to kill a
    // fresh worker (a smaller input can damage less per call).
    let alone = died(finding) && finding.oracle != Oracle::Hang;
    let calls = (2 * finding.calls.unwrap_or(1) as usize).clamp(1, CONFIRM_CALLS);
    let fires = &mut |batch: &[Case]| -> Vec<bool> {
        // Out of time: no candidate is tried, and the finding keeps the smallest case so far.
        if super::stopped() {
            return vec![false; batch.len()];
        }
        let shown: Vec<Option<oracle::Detection>> = if alone {
            batch
                .iter()
                .map(|case| {
                    pool.retire();
                    call_until_shown(pool, plan, checks, finding, case, calls).map(|(_, d)| d)
                })
                .collect()
        } else {
            pool.run_batch(batch)
                .into_iter()
                .zip(batch)
                .map(|(exec, case)| exec.and_then(|exec| oracle::judge(&plan.api, checks, case, &exec).detections.into_iter().find(|d| same_cause(finding, d))))
                .collect()
        };
        shown
            .into_iter()
            .zip(batch)
            .map(|(d, case)| match d {
                Some(d) => {
                    messages.insert(key(case), (d.message, d.evidence));
                    true
                }
                None => false,
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
        if let Some((message, evidence)) = messages.remove(&key(&shrunk.case)) {
            updated.message = message;
            updated.evidence = evidence;
        }
        updated.case = Case { op, ..shrunk.case };
        updated.inputs = crate::findings::describe::inputs(plan, &updated.case);
    }
    updated.minimization = Some(stats);
    if let Some(p) = &updated.pinned {
        store.write_file(p, &pinned(plan, &updated))?;
    }
    store.update(updated.clone(), &reproducer(plan, &updated))?;
    Ok(updated)
}

/// The minimization budget of a campaign: executions per finding, and time.
pub fn budget(executions: u64) -> Budget {
    Budget { executions, time: Duration::from_secs(30), batch: 8 }
}
