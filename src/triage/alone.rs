//! Running a finding's case alone: one worker, one case in flight, a fresh process, and of the
//! API's differential checks only the one that died. What confirmation, culprit search, the
//! also-dies probe, shrinking and `sfz replay` share: a heap damaged by another case is noticed
//! by the allocator later, at a free, so a death is only believed of a case that kills a fresh
//! worker by itself.
use crate::findings::Finding;
use crate::oracle::{self, Evidence};
use crate::plan::ApiPlan;
use crate::wire::case::Case;
use crate::wire::oracle::Oracle;
use crate::wire::variant::Check;
use crate::worker::Execution;
use crate::worker::{Pool, PoolConfig};

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
    while ran.execs.len() < calls && ran.shown.is_none() && !super::stopped() {
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

/// Whether a detection shows a finding's cause again: the same oracle, and a cause that shows
/// the finding's (`Cause::shown_by`: a death of the same kind in the same place).
pub fn same_cause(finding: &Finding, d: &oracle::Detection) -> bool {
    d.oracle == finding.oracle && finding.cause.shown_by(&d.cause)
}

#[cfg(test)]
mod tests {
    use super::same_cause;
    use crate::findings::Finding;
    use crate::oracle::{cause::SQUARES_OVERFLOW, Cause, Detection, Evidence};
    use crate::wire::oracle::Oracle;

    /// A relation's finding recorded before its cause was named is shown again by the detection
    /// naming it; another relation, or a cause that is not the named one, is not it.
    #[test]
    fn a_named_cause_shows_again_the_finding_recorded_without_it() {
        let line = serde_json::json!({
            "id": "relation-layer_norm-0fd6ccba", "api": "torch.layer_norm", "aten": "aten::layer_norm", "oracle": "relation",
            "signature": "relation scale_invariant_eps_squared does not hold", "message": "", "signal": null, "seed": 0, "case_index": 0,
            "case": {"op": 0, "args": []}, "inputs": [], "repro": "", "elapsed_s": 0.0, "sfz_version": "", "torch_version": ""
        });
        let finding: Finding = crate::findings::store::parse_lines(&line.to_string()).0.remove(0);
        let detected = |signature: &str| Detection {
            oracle: Oracle::Relation,
            cause: Cause::from_legacy(Oracle::Relation, None, signature),
            message: String::new(),
            signal: None,
            exit: None,
            evidence: Evidence::Call,
        };
        assert!(same_cause(&finding, &detected("relation scale_invariant_eps_squared does not hold")));
        assert!(same_cause(&finding, &detected(&format!("relation scale_invariant_eps_squared does not hold: {SQUARES_OVERFLOW} float32"))));
        assert!(!same_cause(&finding, &detected(&format!("relation scale_invariant_eps_squared_2 does not hold: {SQUARES_OVERFLOW} float32"))));
        assert!(!same_cause(&finding, &detected("relation scale_invariant_eps_squared does not hold: something else")));
    }
}
