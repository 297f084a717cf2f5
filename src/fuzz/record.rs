//! Turning a detection into files: the finding's reproducer and pinned spec, and after
//! minimization the smaller case's (the original reproducer kept beside it). Shared by the
//! campaign and its minimizer.
use std::time::Duration;

use crate::findings::minimize::{self, Budget};
use crate::findings::pinned::pinned_spec;
use crate::findings::repro::Reproducer;
use crate::findings::{Finding, Minimization, Original, Store};
use crate::oracle::{self, Evidence};
use crate::plan::ApiPlan;
use crate::wire::case::Case;
use crate::wire::oracle::Oracle;
use crate::wire::variant::Check;
use crate::worker::Execution;
use crate::worker::{Pool, PoolConfig};

/// The reproducer of a finding's current case.
pub fn reproducer(plan: &ApiPlan, finding: &Finding) -> String {
    let (check, twin) = check_of(plan, finding);
    let mut header = format!("sfz finding {}: {} on {}\n{}", finding.id, finding.oracle, finding.api, first_line(&finding.message));
    if let Some(v) = &finding.violated {
        header.push_str(&format!("\nthe input breaks `{}` on purpose (violate mode)", v.text));
    }
    if let Some(id) = &finding.same_as {
        header.push_str(&format!("\nthe same input also kills the process, in other runs (sfz finding {id}): one defect whose outcome varies"));
    }
    let expect = match (finding.oracle, &finding.signal) {
        (Oracle::Crash, Some(sig)) => format!("dies with {sig}"),
        (Oracle::Crash, None) => "exits the process".to_string(),
        (Oracle::Hang, _) => "does not return".to_string(),
        (Oracle::InternalError, _) => format!("raises: {}", first_line(&finding.message)),
        (Oracle::Oom, _) => "runs out of memory".to_string(),
        _ => String::new(),
    };
    Reproducer {
        api: &plan.api,
        binding: &plan.binding,
        case: &finding.case,
        evidence: &finding.evidence,
        check: check.as_ref(),
        twin,
        header: &header,
        expect: &expect,
        calls: finding.calls.unwrap_or(1),
        damaged_heap: finding.oracle == Oracle::Crash && finding.message.lines().any(crate::oracle::errors::heap_damage),
    }
    .render()
}

/// The pinned spec of a finding's current case.
pub fn pinned(plan: &ApiPlan, finding: &Finding) -> String {
    let ensures: Vec<&str> = match finding.evidence {
        Evidence::Postcondition { clause } => plan.api.ensures.get(clause).map(|c| c.text.as_str()).into_iter().collect(),
        _ => Vec::new(),
    };
    let header = format!("sfz finding {}: {} on {}\n{}", finding.id, finding.oracle, finding.api, first_line(&finding.message));
    pinned_spec(&plan.api, &finding.case, &header, finding.oracle, finding.check.as_ref(), &ensures)
}

/// The check (as recorded) and the twin operator it calls, for a differential finding.
fn check_of<'a>(plan: &'a ApiPlan, finding: &Finding) -> (Option<Check>, Option<&'a crate::ops::binding::OpBinding>) {
    match finding.evidence {
        Evidence::Differential { check, .. } => {
            let planned = plan.checks.get(check);
            (finding.check.clone().or_else(|| planned.map(|p| p.check.clone())), planned.and_then(crate::oracle::differential::PlannedCheck::twin))
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
    // then passes for a smaller crashing case that kills nothing by itself (`linalg.eig`). Alone,
    // a candidate is called up to twice as many times in a row as the finding needed to kill a
    // fresh worker (a smaller input can damage less per call).
    let alone = died(finding) && finding.oracle != Oracle::Hang;
    let calls = (2 * finding.calls.unwrap_or(1) as usize).clamp(1, CONFIRM_CALLS);
    let fires = &mut |batch: &[Case]| -> Vec<bool> {
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
                    messages.insert(key(case), d.message);
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
    finding.worker_died() || matches!(finding.oracle, Oracle::Crash | Oracle::Hang)
}

/// How many calls in a row a worker's death gets to show again: confirmation and `sfz replay`.
/// `linalg.eig` on a matrix holding -DBL_MAX damages the heap on each call, raising "failed to
/// converge", and glibc aborts on the 25th call in a fresh worker (the 5th to 8th under Python).
pub const CONFIRM_CALLS: usize = 64;

/// The pool a worker's death is confirmed in: `alone_config`'s (its own fork server, one case in
/// flight), a hang with `HANG_CONFIRM_FACTOR` times the timeout at the campaign's priority (it is
/// timed), not the minimizer's lower one. A case that merely ran slow under a loaded campaign (a
/// polynomial of degree 2^62) finishes in the longer time and is not a hang.
pub fn confirm_config(config: &PoolConfig, finding: &Finding) -> PoolConfig {
    let hang = finding.oracle == Oracle::Hang;
    let timeout = if hang { config.timeout * HANG_CONFIRM_FACTOR } else { config.timeout };
    PoolConfig { timeout, nice: if hang { 0 } else { config.nice }, ..alone_config(config, finding, finding.case.op as usize) }
}

/// Runs a finding's case in `pool` (of `confirm_config`), up to `CONFIRM_CALLS` times in a row
/// (a hang once), and returns the call, counted from 1, on which the same cause showed again
/// (`same_cause`), or None. Heap damage is noticed by the allocator later, at a free: the
/// culprit's first calls may return, or raise. (A worker that cannot start counts as confirmed
/// on the first call: nothing speaks against the finding.)
pub fn confirm(pool: &Pool, plan: &ApiPlan, checks: &[Check], finding: &Finding) -> Option<u32> {
    call_until_shown(pool, plan, &judged_alone(finding, checks), finding, &finding.case, calls_for(finding)).map(|(call, _)| call)
}

/// The pool a worker's death is confirmed, minimized and replayed in: one worker, one case in
/// flight, and of the differential checks of `op` (the finding's API in `config`'s op table) only
/// the one that died (none for a death in the call). Another check's damage would show in a
/// later call (max_pool2d's backward under the gradient check met by the next call's forward, or
/// its layout check), which the reproducer of the call, or of the one check, does not make; that
/// bug is the other check's finding, found when it dies itself. Other findings keep every check.
pub fn alone_config(config: &PoolConfig, finding: &Finding, op: usize) -> PoolConfig {
    let api_checks = config.checks.get(op).map_or(&[][..], Vec::as_slice);
    only_checks(config, op, judged_alone(finding, api_checks))
}

/// `config` with one worker, one case in flight, and `checks` as the only checks of `op`.
pub fn only_checks(config: &PoolConfig, op: usize, checks: Vec<Check>) -> PoolConfig {
    let mut table = config.checks.clone();
    if let Some(api_checks) = table.get_mut(op) {
        *api_checks = checks;
    }
    PoolConfig { workers: 1, in_flight: 1, checks: table, check_share: None, ..config.clone() }
}

/// The API's checks as the worker of `alone_config` reports them: judged against these, its
/// reports keep their places (the dead check's reports come first, as check 0).
pub fn judged_alone(finding: &Finding, checks: &[Check]) -> Vec<Check> {
    match (died(finding), &finding.evidence) {
        (false, _) => checks.to_vec(),
        (true, Evidence::Differential { check, .. }) => checks.get(*check).cloned().into_iter().collect(),
        (true, _) => Vec::new(),
    }
}

/// How many calls in a row a finding gets to show again: `CONFIRM_CALLS` for a worker's death
/// (heap damage shows at a later free, and one call that returns proves nothing), one otherwise.
pub fn calls_for(finding: &Finding) -> usize {
    if died(finding) && finding.oracle != Oracle::Hang {
        CONFIRM_CALLS
    } else {
        1
    }
}

/// Calls `case` up to `calls` times in a row in `pool`, a few at a time, until a verdict shows
/// `finding`'s cause, and returns that call, counted from 1, with its detection.
pub fn call_until_shown(pool: &Pool, plan: &ApiPlan, checks: &[Check], finding: &Finding, case: &Case, calls: usize) -> Option<(u32, oracle::Detection)> {
    let shows = |exec: &Execution| oracle::judge(&plan.api, checks, case, exec).detections.into_iter().find(|d| same_cause(finding, d));
    run_until(pool, case, calls, shows).shown.map(|(i, d)| (i as u32 + 1, d))
}

/// What `run_until` ran: every call's execution (None: the worker gave none), and the first call,
/// counted from 0, on which the judge found something, with what it found.
pub struct Calls<T> {
    pub execs: Vec<Option<Execution>>,
    pub shown: Option<(usize, T)>,
}

/// Calls `case` up to `calls` times in a row in `pool`, eight at a time, judging each execution
/// once, and stops after the batch in which `judge` first finds something.
pub fn run_until<T>(pool: &Pool, case: &Case, calls: usize, mut judge: impl FnMut(&Execution) -> Option<T>) -> Calls<T> {
    let mut ran = Calls { execs: Vec::with_capacity(calls), shown: None };
    while ran.execs.len() < calls && ran.shown.is_none() {
        let n = (calls - ran.execs.len()).min(8);
        for exec in pool.run_batch(&vec![case.clone(); n]) {
            if ran.shown.is_none() {
                ran.shown = exec.as_ref().and_then(&mut judge).map(|found| (ran.execs.len(), found));
            }
            ran.execs.push(exec);
        }
    }
    ran
}

/// Whether a detection shows a finding's cause again: the same oracle with the same signature,
/// or for a death by a signal, the same oracle in the same place (the call, or the same check)
/// and the same kind of death: a memory error, whatever signal and frame it ended in, or else
/// the same signal. What a dying process last printed and where it died vary with what ran
/// before it: the allocator notices one overrun at one free or another.
pub fn same_cause(finding: &Finding, d: &oracle::Detection) -> bool {
    // The check a death happened in, by what it is (`out= variant`): a confirmation runs that
    // check alone, at another index. Empty for the call itself.
    let place = |signature: &str| match signature.split_once(": ") {
        Some((p, _)) if !(p.starts_with("SIG") || p.starts_with(oracle::MEMORY_ERROR) || p.starts_with("exit")) => p.to_string(),
        _ => String::new(),
    };
    d.oracle == finding.oracle
        && match (&finding.signal, d.signal) {
            (Some(name), Some(sig)) => {
                let signal = crate::wire::outcome::signal_name(sig);
                let (was, is) = (oracle::is_memory_error(name, &finding.signature), oracle::is_memory_error(&signal, &d.signature));
                place(&d.signature) == place(&finding.signature) && if was || is { was && is } else { signal == *name }
            }
            // A finding recorded before its cause was named shows it again with it.
            _ => {
                d.signature == finding.signature
                    || d.signature
                        .strip_prefix(finding.signature.as_str())
                        .and_then(|rest| rest.strip_prefix(": "))
                        .is_some_and(|cause| cause.starts_with(oracle::differential::SQUARES_OVERFLOW))
            }
        }
}

/// The minimization budget of a campaign: executions per finding, and time.
pub fn budget(executions: u64) -> Budget {
    Budget { executions, time: Duration::from_secs(30), batch: 8 }
}

#[cfg(test)]
mod tests {
    use super::same_cause;
    use crate::findings::Finding;
    use crate::oracle::{differential::SQUARES_OVERFLOW, Detection, Evidence};
    use crate::wire::oracle::Oracle;

    /// A relation's finding recorded before its cause was named is shown again by the detection
    /// naming it; another relation, or a cause that is not the named one, is not it.
    #[test]
    fn a_named_cause_shows_again_the_finding_recorded_without_it() {
        let finding: Finding = serde_json::from_value(serde_json::json!({
            "id": "relation-layer_norm-0fd6ccba", "api": "torch.layer_norm", "aten": "aten::layer_norm", "oracle": "relation",
            "signature": "relation scale_invariant_eps_squared does not hold", "message": "", "signal": null, "seed": 0, "case_index": 0,
            "case": {"op": 0, "args": []}, "inputs": [], "repro": "", "elapsed_s": 0.0, "sfz_version": "", "torch_version": ""
        }))
        .expect("a finding");
        let detected =
            |signature: &str| Detection { oracle: Oracle::Relation, signature: signature.into(), message: String::new(), signal: None, exit: None, evidence: Evidence::Call };
        assert!(same_cause(&finding, &detected("relation scale_invariant_eps_squared does not hold")));
        assert!(same_cause(&finding, &detected(&format!("relation scale_invariant_eps_squared does not hold: {SQUARES_OVERFLOW} float32"))));
        assert!(!same_cause(&finding, &detected(&format!("relation scale_invariant_eps_squared_2 does not hold: {SQUARES_OVERFLOW} float32"))));
        assert!(!same_cause(&finding, &detected("relation scale_invariant_eps_squared does not hold: something else")));
    }
}
