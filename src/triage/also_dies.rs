//! Whether a finding's input also kills a fresh worker. `linalg.eigvals` on a NaN fails
//! libtorch's internal assert ("Argument 4 has illegal value", MKL's ?GEBAL rejecting it) in
//! some processes and dies by SIGSEGV in others (MKL reads memory it never set): the worker saw
//! the assert, the reproducer segfaulted under Python every time. Such a finding is the same
//! defect as the death, which is what a user running its script meets; the campaign records the
//! death (or finds it recorded) and the finding names it (`Finding::same_as`).
use crate::findings::Finding;
use crate::oracle::{self, Detection, Evidence};
use crate::plan::ApiPlan;
use crate::wire::oracle::Oracle;
use crate::worker::Execution;
use crate::worker::{Pool, PoolConfig};

use super::alone;

/// Calls in a row in one fresh worker: the eigvals case died on the first call in 4 of 10
/// fresh workers, and a call that raised leaves damage a later one dies of.
pub const PROBE_CALLS: usize = 8;

/// Whether a finding is probed: one shown by the call that is not a death itself (a differential
/// check's disagreement is about the check's second run, which its script makes too), or a death
/// in a check (layout, out=, in-place, a reference's call): when the call alone dies too, the
/// check did nothing wrong, and the death is the call's finding.
pub fn applies(finding: &Finding) -> bool {
    let in_check = matches!(finding.evidence, Evidence::Differential { .. });
    finding.same_as.is_none() && alone::died(finding) == in_check && finding.oracle != Oracle::Hang
}

/// Whether a detection is a death of the kind probed for: a crash by a signal or an exit. Not an
/// out-of-memory kill (a big input meeting the memory limit says nothing about the defect): the
/// verdict calls a SIGKILL `oom`, never `crash`. Nor a hang: the campaign judges hangs itself.
pub fn is_death(d: &Detection) -> bool {
    d.oracle == Oracle::Crash
}

/// Calls the finding's case, alone and without the API's checks, up to `PROBE_CALLS` times in a
/// fresh worker of `config`, and returns the call, counted from 1, on which the worker died
/// (`is_death`), with the death's detection.
pub fn probe(config: &PoolConfig, plan: &ApiPlan, finding: &Finding) -> Option<(u32, Detection)> {
    let op = finding.case.op as usize;
    let pool = Pool::start(alone::only_checks(config, op, Vec::new())).ok()?;
    let death = |exec: &Execution| oracle::judge(&plan.api, &[], &finding.case, exec).detections.into_iter().find(is_death);
    alone::run_until(&pool, &finding.case, PROBE_CALLS, death).shown.map(|(i, d)| (i as u32 + 1, d))
}
