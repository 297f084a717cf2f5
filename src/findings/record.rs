//! A finding's files: its reproducer and pinned spec, written when it is found and again when
//! triage shrinks it (`triage::shrink`).
use crate::findings::pinned::pinned_spec;
use crate::findings::repro::Reproducer;
use crate::findings::Finding;
use crate::oracle::{Disagreement, Evidence};
use crate::plan::ApiPlan;
use crate::wire::oracle::Oracle;
use crate::wire::variant::{Check, GradientKind, Variant};

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
    match &finding.evidence {
        Evidence::Differential { check, what } => {
            let planned = plan.checks.get(*check);
            // A gradient through the in-place form calls the `inplace` check's twin.
            let twin = match what {
                Disagreement::Derivative(at) if at.kind == GradientKind::InPlace => plan.checks.iter().find(|p| matches!(p.check.variant, Variant::InPlace { .. })),
                _ => planned,
            };
            (finding.check.clone().or_else(|| planned.map(|p| p.check.clone())), twin.and_then(crate::oracle::differential::PlannedCheck::twin))
        }
        _ => (None, None),
    }
}

pub(crate) fn first_line(s: &str) -> &str {
    s.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim()
}
