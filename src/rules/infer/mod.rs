//! Candidates validated by execution. A candidate is *supported* when inputs obeying it (and the
//! API's other constraints) run without argument errors and inputs violating it are rejected by
//! libtorch with one.
//!
//! The search is greedy, in rounds within a time budget: sample conforming inputs of the current
//! constraint set, run them, and add the candidate that no accepted input violates and that
//! excludes the most rejected ones (observations decide, so one batch scores every candidate).
//! Then each added rule is probed alone: inputs that satisfy the others but break it are run; if
//! libtorch accepts them as often as conforming ones, the rule excluded nothing libtorch cares
//! about and is rejected. Finally rules the others imply are dropped (`reduce`). The budget is a
//! deadline per phase that no batch starts a case after (see `InferConfig::budget`), so one slow
//! round cannot overrun it.
//!
//! The parts: `runner` (how cases run), `candidates` (what is weighed), `assume` (what a pass
//! assumes), `search` (the rounds), `trial` and `stall` (a round with few or no valid inputs),
//! `complaint`, `counts` and `ranks` (what libtorch's complaint says), `blame` (what to take
//! back), `verify` (the end probes), `weaken` (a rule stronger than its check replaced).
//! Candidates that libtorch's answers suggest come from the caller (`Proposers`).
mod assume;
mod blame;
mod candidates;
mod complaint;
pub mod counts;
mod proposers;
mod ranks;
mod runner;
mod search;
mod stall;
mod trial;
mod verify;
mod weaken;

use std::time::{Duration, Instant};

#[cfg(test)]
pub(crate) use candidates::candidates_of;
pub use candidates::{Checked, Learned};
pub use proposers::{Observed, Proposers, RoundProposer};
pub(in crate::rules) use runner::sample;
pub use runner::Runner;

use crate::rules::{Candidate, Judged};
use crate::solve::Limits;
use crate::spec::{ApiSpec, Origin, RuleMeta, RuleSource, RuleStatus};
use candidates::{broken_by, bump, source_name};
use search::Search;

/// How hard to look.
#[derive(Clone, Debug)]
pub struct InferConfig {
    pub seed: u64,
    /// Wall time per API: the search for rules gets the first three quarters, the probes of the
    /// rules found the next eighth and the final validity figure the last (at least an eighth of
    /// the budget of its own, so a search that ran late still ends with a figure). No case
    /// starts after a deadline, but those already queued in a worker (its `in_flight`) finish:
    /// with cases that hang to the timeout, that is the overshoot.
    pub budget: Duration,
    /// Cases per search round.
    pub round_cases: usize,
    /// Cases for the final validity figure and for each rule's violation probe.
    pub verify_cases: usize,
    pub probe_cases: usize,
    pub max_rounds: usize,
    /// Below this many accepted inputs in a round, the likeliest `try_candidates` candidates are
    /// each tried on `try_cases` inputs of their own.
    pub few_valid: usize,
    pub try_candidates: usize,
    pub try_cases: usize,
    /// Stop adding rules once this share of conforming inputs is valid.
    pub target_valid: f64,
    /// Validated rules are kept only when conforming inputs end up at least this valid (and
    /// more valid than before).
    pub min_valid: f64,
    pub limits: Limits,
    /// A search that ends below this share of valid inputs starts again with another seed while
    /// a quarter of the budget is left, and the better end is kept: where a search ends depends
    /// on which cases its rounds drew (greedy choices on one batch), so a second draw often
    /// finds what the first missed. 0: never.
    pub restart_below: f64,
    /// Learn the value sets of string parameters from libtorch's errors (`Proposers::learn_values`).
    pub learn_values: bool,
    /// Record how each search round chose (`ApiResult::trace`), for whoever tunes the search.
    pub trace: bool,
    /// Also return the rejected enumerated candidates (rejected candidates from the file are
    /// always returned).
    pub keep_rejected: bool,
}

impl InferConfig {
    /// Whether a candidate that `obeying` of a batch's cases hold on is tried on those cases:
    /// they are what a fresh sample with it would be, and cost no run. Else it gets inputs of
    /// its own.
    pub(super) fn on_own_cases(&self, obeying: usize) -> bool {
        obeying >= self.try_cases.max(1)
    }
}

impl Default for InferConfig {
    fn default() -> Self {
        InferConfig {
            seed: 0,
            budget: Duration::from_secs(30),
            round_cases: 96,
            verify_cases: 128,
            probe_cases: 32,
            max_rounds: 10,
            few_valid: 12,
            try_candidates: 24,
            try_cases: 12,
            target_valid: 0.97,
            min_valid: 0.5,
            // Bounded by work, not by a timer (`Limits::timeout_ms`): about a second of z3's
            // hardest checks on this machine.
            limits: Limits { timeout_ms: 0, rlimit: Some(2_000_000), ..Limits::default() },
            restart_below: 0.9,
            learn_values: true,
            trace: false,
            keep_rejected: false,
        }
    }
}

/// What inference made of one API.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ApiResult {
    pub api: String,
    /// Candidates considered, by source (`llm`, `inferred` for the enumerator, `manual`).
    pub proposed: Vec<(String, usize)>,
    pub validated: Vec<(String, usize)>,
    pub rejected: Vec<(String, usize)>,
    /// Candidates that the API's constraints already imply.
    pub implied: usize,
    /// Share of conforming inputs libtorch accepted, before and after (None: no input could be made).
    pub valid_before: Option<f64>,
    pub valid_after: Option<f64>,
    pub cases: usize,
    pub seconds: f64,
    /// False when the search ended below `min_valid`: its rules were not kept.
    pub conclusive: bool,
    /// Searches started again with another seed (`InferConfig::restart_below`).
    pub restarts: usize,
    /// Where the API is left below `target_valid`: libtorch's most frequent complaint about its
    /// inputs (one message, first line) and the share of inputs that raised it. The check no
    /// rule makes yet, for a person or `sfz suggest` to write.
    pub complaint: Option<(String, f64)>,
    /// Not run: the operator has no kernel for CPU tensors (`ops::schema::OpSchema::cpu`).
    pub no_cpu_kernel: bool,
    /// The rules to write, judged (validated, and rejected ones when asked).
    #[serde(skip)]
    pub rules: Vec<Judged>,
    /// With `InferConfig::trace`: per search round, the batch's validity, the choice, and each
    /// remaining candidate's tally.
    #[serde(skip)]
    pub trace: Vec<String>,
}

/// Infers the rules of one API from candidates. `base` is the API with its current constraints
/// (validated rules included); `index` is its index for the runner; `proposers` add candidates
/// from libtorch's answers.
pub fn infer_api(base: &ApiSpec, index: usize, candidates: Vec<Checked>, runner: &dyn Runner, proposers: &dyn Proposers, config: &InferConfig) -> ApiResult {
    // Rules an earlier inference validated while a string parameter only ever took its default
    // (`rounding_mode == None`) are refuted once its values are learned; they go before the search.
    // The sets learned here serve the search too, which learns only those still missing once
    // its rules have made the inputs valid.
    let start = Instant::now();
    let learned = if config.learn_values { proposers.learn_values(base, index, runner, config, start + config.budget / 16) } else { Vec::new() };
    let (base, refuted) = without_refuted(base, &learned);
    let mut result = Search::new(&base, index, candidates.clone(), learned.clone(), runner, proposers, config).run();
    let mut restarts = 0;
    loop {
        let left = config.budget.saturating_sub(start.elapsed());
        if config.restart_below <= 0.0 || kept_rate(&result).is_some_and(|v| v >= config.restart_below) || left < config.budget / 4 {
            break;
        }
        restarts += 1;
        let again_config = InferConfig { seed: crate::seed::mix(config.seed ^ 0x7e57a7 ^ restarts as u64), budget: left, ..config.clone() };
        let mut again = Search::new(&base, index, candidates.clone(), learned.clone(), runner, proposers, &again_config).run();
        let cases = result.cases + again.cases;
        let mut trace = std::mem::take(&mut result.trace);
        if config.trace {
            trace.push(format!("restart {restarts} with {left:?} left: the search ended at {:?} valid", kept_rate(&result)));
        }
        trace.append(&mut again.trace);
        if kept_rate(&again).unwrap_or(-1.0) > kept_rate(&result).unwrap_or(-1.0) {
            result = again;
        }
        (result.cases, result.trace) = (cases, trace);
    }
    if config.trace && restarts > 0 {
        result.trace.push(format!("kept the search that ended at {:?} valid", kept_rate(&result)));
    }
    result.restarts = restarts;
    result.seconds = start.elapsed().as_secs_f64();
    for j in refuted {
        bump(&mut result.rejected, source_name(&j.candidate));
        result.rules.push(j);
    }
    result
}

/// The share of valid inputs an API is left with: its rules' when they are kept, the figure
/// before the search when they are not.
fn kept_rate(r: &ApiResult) -> Option<f64> {
    if r.conclusive {
        r.valid_after
    } else {
        r.valid_before
    }
}

/// `base` without the non-manual rules that the accepted runs of `learned` break, and those
/// rules, judged rejected.
fn without_refuted(base: &ApiSpec, learned: &[Learned]) -> (ApiSpec, Vec<Judged>) {
    let mut refuted: Vec<(RuleMeta, usize)> = Vec::new();
    for c in &base.requires {
        let Origin::Rule(meta) = &c.origin else { continue };
        if meta.source == RuleSource::Manual {
            continue;
        }
        let mut probe = base.clone();
        probe.requires = vec![c.clone()];
        let broken = broken_by(learned, &probe);
        if broken > 0 && !refuted.iter().any(|(m, _)| m.name == meta.name) {
            refuted.push((meta.clone(), broken));
        }
    }
    let mut kept = base.clone();
    kept.requires.retain(|c| !matches!(&c.origin, Origin::Rule(m) if refuted.iter().any(|(r, _)| r.name == m.name)));
    let judged = refuted
        .into_iter()
        .map(|(meta, broken)| {
            let text: Vec<String> =
                base.requires.iter().filter(|c| matches!(&c.origin, Origin::Rule(m) if m.name == meta.name)).map(|c| format!("{};", c.text.trim_end_matches(';'))).collect();
            Judged {
                candidate: Candidate { name: meta.name, text: text.join("\n    "), source: meta.source },
                status: RuleStatus::Rejected,
                confidence: None,
                evidence: vec![("violating_ok".into(), broken as i64)],
            }
        })
        .collect();
    (kept, judged)
}
