//! Checked spec → execution plan: each API resolved once to the ATen operator it calls and where
//! each schema argument comes from, and its symbolic pool solved. An API that cannot be planned
//! is reported and left out; the others go on.
use crate::diag::{codes, Diagnostic};

use crate::gen::{self, ApiPools, GenConfig};
use crate::ops::binding::{ForwardCall, OpBinding};
use crate::ops::catalog::Catalog;
use crate::ops::diagnostic;
use crate::ops::registry;
use crate::oracle::differential::{self, PlannedCheck};
use crate::solve::SolveError;
use crate::spec::{ApiSpec, Spec};
use crate::wire::oracle::Oracle;

/// One API, ready to run.
#[derive(Clone, Debug)]
pub struct ApiPlan {
    pub api: ApiSpec,
    pub binding: OpBinding,
    /// The differential checks its `oracles` clause asks for, with the twin operators they call.
    pub checks: Vec<PlannedCheck>,
}

/// An API a campaign leaves out, and why (its pools could not be solved, no operator fits it).
#[derive(Clone, Debug, serde::Serialize)]
pub struct Skipped {
    pub api: String,
    pub reason: String,
}

/// Resolves every API to an operator. Unresolvable ones become E0004/E0017 diagnostics (the API
/// is left out); differential oracles that cannot apply become W0101 warnings (the API runs).
pub fn plan(spec: &Spec, catalog: &Catalog) -> (Vec<ApiPlan>, Vec<Diagnostic>) {
    let mut plans = Vec::new();
    let mut diags = Vec::new();
    for api in &spec.apis {
        match registry::resolve(api, catalog) {
            Ok(mut binding) => {
                if let Some(from) = &api.from {
                    match registry::resolve(&from.callee, catalog) {
                        Ok(forward) => binding.forward = Some(Box::new(ForwardCall { api: from.callee.name.clone(), binding: forward, args: from.args.clone() })),
                        Err(e) => {
                            // The API cannot run without its forward.
                            diags.push(diagnostic::resolve_diagnostic(&from.callee, &e).with_secondary(from.span, format!("the forward of `{}`, which is left out too", api.name)));
                            continue;
                        }
                    }
                }
                let (mut checks, warnings) = differential::plan_checks(api, &binding, catalog);
                diags.extend(warnings);
                for r in &api.relations {
                    match relation_check(r, spec, catalog, differential::accuracy_of(&binding)) {
                        Ok(c) => checks.push(c),
                        Err(why) => diags.push(
                            Diagnostic::new(codes::W0101, format!("relation `{}` does not apply here", r.relation.name))
                                .with_label(r.span, why)
                                .with_help("the API's other checks run; fix the relation's calls to run it too"),
                        ),
                    }
                }
                plans.push(ApiPlan { api: api.clone(), binding, checks });
            }
            Err(e) => diags.push(diagnostic::resolve_diagnostic(api, &e)),
        }
    }
    (plans, diags)
}

/// A relation's check, with the operators of the APIs it calls.
fn relation_check(r: &crate::spec::RelationSpec, spec: &Spec, catalog: &Catalog, accuracy: crate::wire::variant::Accuracy) -> Result<PlannedCheck, String> {
    let mut twins = Vec::new();
    for name in r.relation.apis() {
        let callee = spec.apis.iter().find(|a| a.name == name).ok_or_else(|| format!("`{name}` is not among the APIs loaded"))?;
        twins.push(registry::resolve(callee, catalog).map_err(|e| format!("`{name}` has no operator: {e}"))?);
    }
    let check = crate::wire::variant::Check {
        oracle: Oracle::Relation,
        tolerances: r.relation.tolerances,
        variant: crate::wire::variant::Variant::Relation(Box::new(r.relation.clone())),
        accuracy,
    };
    Ok(PlannedCheck { check, twins })
}

/// The op table and per-op checks a worker pool loads for `plans`: the APIs' operators first
/// (case `op` i is plan i), then the twins their checks call. Also returns each plan's checks
/// as the workers run them (twin indices resolved), for judging.
pub fn op_table(plans: &[ApiPlan]) -> (Vec<OpBinding>, Vec<Vec<crate::wire::variant::Check>>) {
    let mut ops: Vec<OpBinding> = plans.iter().map(|p| p.binding.clone()).collect();
    let mut checks = vec![Vec::new(); ops.len()];
    for (i, p) in plans.iter().enumerate() {
        for c in &p.checks {
            let indices: Vec<u32> = c
                .twins
                .iter()
                .map(|twin| {
                    ops.push(twin.clone());
                    checks.push(Vec::new());
                    (ops.len() - 1) as u32
                })
                .collect();
            checks[i].push(c.with_ops(&indices));
        }
    }
    (ops, checks)
}

/// Solves every plan's pools, spreading the jobs (per API: ordinary and boundary models, huge
/// models, one job per constraint to break) over the cores. Returns the pools (empty for a
/// skipped API), diagnostics for unsatisfiable APIs and solver timeouts, and why each skipped
/// API was skipped. A constraint that cannot be broken alone, or whose violating models time
/// out, is noted in its API's pools; the API still runs.
pub fn solve_pools(plans: &[ApiPlan], config: &GenConfig) -> (Vec<ApiPools>, Vec<Diagnostic>, Vec<Skipped>) {
    solve_pools_until(plans, config, &gen::SolveBudget::default())
}

/// Why an API is skipped whose ordinary pool was not solved by the solving deadline.
pub const NOT_SOLVED_IN_TIME: &str = "not solved within the solving share of --time (a longer --time, or a warm cache, solves more)";

/// `solve_pools` within `budget` (`gen::solve_all_until`): an API whose ordinary pool was not
/// solved in time is skipped with `NOT_SOLVED_IN_TIME`.
pub fn solve_pools_until(plans: &[ApiPlan], config: &GenConfig, budget: &gen::SolveBudget) -> (Vec<ApiPools>, Vec<Diagnostic>, Vec<Skipped>) {
    let apis: Vec<&ApiSpec> = plans.iter().map(|p| &p.api).collect();
    let mut pools = Vec::with_capacity(plans.len());
    let mut failed: Vec<Option<SolveError>> = Vec::with_capacity(plans.len());
    let mut unsolved = Vec::new();
    for (i, solved) in gen::solve_all_until(&apis, config, budget).into_iter().enumerate() {
        match solved {
            None => {
                pools.push(ApiPools::default());
                failed.push(None);
                unsolved.push(Skipped { api: plans[i].api.name.clone(), reason: NOT_SOLVED_IN_TIME.into() });
            }
            Some(Ok(p)) => {
                pools.push(p);
                failed.push(None);
            }
            Some(Err(e)) => {
                pools.push(ApiPools::default());
                failed.push(Some(e));
            }
        }
    }
    let mut diags = Vec::new();
    let mut skipped = unsolved;
    for (i, e) in failed.into_iter().enumerate() {
        let Some(e) = e else { continue };
        let (d, s) = failure(&plans[i].api, e);
        diags.extend(d);
        skipped.push(s);
    }
    (pools, diags, skipped)
}

/// `solve_pools_until` streamed (`gen::solve_streaming`): each API's pools go to `ready` as soon
/// as they are solved (its ordinary pool, then all of them, in a second call), each failure (a diagnostic where one is due, and the skip) to `failed`.
/// Returns the APIs whose ordinary pool was not solved in time.
pub fn solve_pools_streaming(
    plans: &[ApiPlan],
    config: &GenConfig,
    budget: &gen::SolveBudget,
    ready: &(dyn Fn(usize, ApiPools) + Sync),
    failed: &(dyn Fn(Option<Diagnostic>, Skipped) + Sync),
) -> Vec<Skipped> {
    let apis: Vec<&ApiSpec> = plans.iter().map(|p| &p.api).collect();
    let heard = gen::solve_streaming(&apis, config, budget, &|i, solved, _complete| match solved {
        Ok(pools) => ready(i, pools),
        Err(e) => {
            let (d, s) = failure(&plans[i].api, e);
            failed(d, s);
        }
    });
    heard.iter().zip(plans).filter(|(h, _)| !**h).map(|(_, p)| Skipped { api: p.api.name.clone(), reason: NOT_SOLVED_IN_TIME.into() }).collect()
}

/// Why `api` is skipped when solving it failed with `e`, and the diagnostic that says so.
fn failure(api: &ApiSpec, e: SolveError) -> (Option<Diagnostic>, Skipped) {
    match e {
        SolveError::Unsat { core } => {
            let mut d = Diagnostic::new(codes::E0009, format!("the constraints of `{}` cannot all hold", api.name))
                .with_label(api.span, "no input satisfies this API's constraints; it is skipped");
            for c in core.iter().filter_map(|&k| api.requires.get(k)) {
                d = d.with_secondary(c.span, "conflicts");
            }
            (Some(d.with_help("relax or remove one of the conflicting constraints")), Skipped { api: api.name.clone(), reason: "unsatisfiable constraints".into() })
        }
        SolveError::Timeout(ms) => {
            let (d, s) = gave_up(api, &format!("after {ms} ms"), format!("solver timeout ({ms} ms)"), "--solver-timeout");
            (Some(d), s)
        }
        SolveError::ResourceLimit(r) => {
            let (d, s) = gave_up(api, &format!("at its resource limit ({r})"), format!("solver resource limit ({r})"), "--solver-rlimit");
            (Some(d), s)
        }
        SolveError::Internal(message) => {
            let (d, s) = solver_failure(api, &message);
            (Some(d), s)
        }
        e => (None, Skipped { api: api.name.clone(), reason: e.to_string() }),
    }
}

/// W0008 and the skip of an API whose solving panicked with `message` (`SolveError::Internal`).
pub fn solver_failure(api: &ApiSpec, message: &str) -> (Diagnostic, Skipped) {
    let d = Diagnostic::new(codes::W0008, format!("the solver failed on `{}`", api.name))
        .with_label(api.span, "no input was generated for this API; it is skipped")
        .with_note(format!("the solver's encoding panicked: {message}"))
        .with_help("this is a bug in sfz: please report it with this spec; the other APIs ran as usual");
    (d, Skipped { api: api.name.clone(), reason: format!("solver failure: {message}") })
}

/// W0006 and the skip of an API the solver gave up on `limit` (`after 5 ms`); `flag` raises it.
fn gave_up(api: &ApiSpec, limit: &str, reason: String, flag: &str) -> (Diagnostic, Skipped) {
    let d = Diagnostic::new(codes::W0006, format!("the solver gave up on `{}` {limit}", api.name))
        .with_label(api.span, "no input was generated for this API; it is skipped")
        .with_help(format!("simplify its constraints (nonlinear products of several variables are slow), or raise `{flag}`"));
    (d, Skipped { api: api.name.clone(), reason })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An API without an `oracles` clause gets no precision or layout check where its operator
    /// returns sizes, strides or flags: a float64 or relaid copy has other ones, honestly.
    #[test]
    fn facts_about_the_inputs_get_no_precision_or_layout_check() {
        let catalog = Catalog::from_schemas(include_str!("../../tests/fixtures/schemas-2.13.0.txt").lines());
        let src = "api torch._debug_has_internal_overlap(input: Tensor) -> int {}\napi torch.Tensor.stride(input: Tensor, dim: int) -> int {}\napi torch.sin(input: Tensor) -> Tensor {}\n";
        let checked = crate::check::check_text(std::path::Path::new("t.sfz"), src);
        assert!(!checked.has_errors(), "{:?}", checked.diags);
        let (plans, diags) = plan(&checked.spec, &catalog);
        assert_eq!(plans.len(), 3, "{diags:?}");
        let oracles = |p: &ApiPlan| p.checks.iter().map(|c| c.check.oracle).collect::<Vec<_>>();
        for facts in &plans[..2] {
            assert!(!oracles(facts).iter().any(|o| matches!(o, Oracle::Precision | Oracle::Layout)), "{}: {:?}", facts.api.name, oracles(facts));
        }
        assert!(oracles(&plans[2]).contains(&Oracle::Precision) && oracles(&plans[2]).contains(&Oracle::Layout), "{:?}", oracles(&plans[2]));
    }
}
