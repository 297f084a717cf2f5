//! Checked spec → execution plan: each API resolved once to the ATen operator it calls and where
//! each schema argument comes from, and its symbolic pool solved. An API that cannot be planned
//! is reported and left out; the others go on.
use crate::diag::{codes, Diagnostic};
use crate::fuzz::Skipped;
use crate::gen::{self, GenConfig};
use crate::ops::binding::OpBinding;
use crate::ops::catalog::Catalog;
use crate::ops::registry::{self, ResolveError};
use crate::solve::{SolveError, SymModel};
use crate::spec::{ApiSpec, Spec};

/// One API, ready to run.
#[derive(Clone, Debug)]
pub struct ApiPlan {
    pub api: ApiSpec,
    pub binding: OpBinding,
}

/// Resolves every API to an operator. Unresolvable ones become E0004/E0017 diagnostics.
pub fn plan(spec: &Spec, catalog: &Catalog) -> (Vec<ApiPlan>, Vec<Diagnostic>) {
    let mut plans = Vec::new();
    let mut diags = Vec::new();
    for api in &spec.apis {
        match registry::resolve(api, catalog) {
            Ok(binding) => plans.push(ApiPlan { api: api.clone(), binding }),
            Err(e) => diags.push(resolve_diagnostic(api, &e)),
        }
    }
    (plans, diags)
}

fn resolve_diagnostic(api: &ApiSpec, e: &ResolveError) -> Diagnostic {
    let code = if e.is_unknown_op() { codes::E0004 } else { codes::E0017 };
    let mut d = Diagnostic::new(code, e.title(&api.name)).with_label(api.span, e.label());
    for note in e.notes() {
        d = d.with_note(note);
    }
    if let Some(help) = e.help() {
        d = d.with_help(help);
    }
    d
}

/// Solves every plan's pool, spreading APIs over the cores. Returns the pools (empty for a
/// skipped API), diagnostics for unsatisfiable APIs, and why each skipped API was skipped.
pub fn solve_pools(plans: &[ApiPlan], config: &GenConfig) -> (Vec<Vec<SymModel>>, Vec<Diagnostic>, Vec<Skipped>) {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(plans.len().max(1));
    let results: Vec<(usize, Result<Vec<SymModel>, SolveError>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    (t..plans.len()).step_by(threads).map(|i| (i, gen::solve_pool(&plans[i].api, config, i))).collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap_or_default()).collect()
    });
    let mut pools = vec![Vec::new(); plans.len()];
    let mut diags = Vec::new();
    let mut skipped = Vec::new();
    for (i, r) in results {
        let api = &plans[i].api;
        match r {
            Ok(models) => pools[i] = models,
            Err(SolveError::Unsat { core }) => {
                let mut d = Diagnostic::new(codes::E0009, format!("the constraints of `{}` cannot all hold", api.name))
                    .with_label(api.span, "no input satisfies this API's constraints; it is skipped");
                for c in core.iter().filter_map(|&k| api.requires.get(k)) {
                    d = d.with_secondary(c.span, "conflicts");
                }
                diags.push(d.with_help("relax or remove one of the conflicting constraints"));
                skipped.push(Skipped { api: api.name.clone(), reason: "unsatisfiable constraints".into() });
            }
            Err(e) => skipped.push(Skipped { api: api.name.clone(), reason: e.to_string() }),
        }
    }
    (pools, diags, skipped)
}
