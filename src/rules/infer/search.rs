//! The search of `infer_api` as a value: `Search` holds what its rounds carry from one to the
//! next (the candidates left, the rules taken and dropped, the complaints covered), and each
//! phase of a round is one method: sample and run a batch, take the candidates the round's
//! messages propose, rank the candidates on the batch, then, when few inputs are valid, try the
//! likeliest (`trial`) or find what blocks the search (`stall`), and take the best. The probes
//! of the rules taken and the final figure are `verify`.
use std::ops::ControlFlow;
use std::time::Instant;

use super::assume::{compatible, is_rank_assumption, nonempty_constraints, pin, rank_zero, Pass};
use super::blame::{stronger_than_check, MAX_STRONGER};
use super::candidates::{broken_by, bump, current, probe_of, source_of, surely_broken_by_accepted, tally, Checked, Learned};
use super::proposers::{Observed, Proposers, RoundProposer};
use super::runner::{execute, holds, sample, Batch, Runner};
use super::{ApiResult, InferConfig};
use crate::gen::mix;
use crate::rules::reduce;
use crate::spec::{ApiSpec, Constraint, RuleSource};
use crate::wire::case::Arg;

/// One search of one API on a base whose rules stand.
pub(super) struct Search<'a> {
    pub(super) base: &'a ApiSpec,
    /// The API's index for the runner.
    pub(super) index: usize,
    pub(super) runner: &'a dyn Runner,
    proposers: &'a dyn Proposers,
    pub(super) config: &'a InferConfig,
    pub(super) start: Instant,
    /// No round's case starts after this, no end probe's after `probes_end`.
    pub(super) search_end: Instant,
    pub(super) probes_end: Instant,
    pub(super) result: ApiResult,
    /// Candidates not taken, each with its probe (`probe_of`).
    pub(super) remaining: Vec<(Checked, ApiSpec)>,
    /// Rules taken, in the order taken, each with its probe.
    pub(super) accepted: Vec<(Checked, ApiSpec)>,
    /// Per candidate name, the accepted inputs of the rounds that broke it.
    pub(super) counterexamples: Vec<(String, usize)>,
    /// Rules taken and dropped again, with the evidence against them.
    pub(super) rejected: Vec<(Checked, Vec<(String, i64)>)>,
    /// The complaints that were the most frequent in some round: ground the search has covered.
    pub(super) dominated: Vec<String>,
    /// Rules taken without a link to the complaint they silenced (a rank tuple, or a candidate
    /// naming none of the parameters the complaint names): the ones `culprit` may take back.
    pub(super) blind: Vec<String>,
    pub(super) round: u64,
    /// Rules stronger than libtorch's check taken so far (`stronger_than_check`).
    strong_picks: usize,
    /// Candidates read off each round's batch, fresh for this search.
    from_rounds: Box<dyn RoundProposer>,
    /// Value sets learned on the base's inputs, before the search.
    learned_before: Vec<Learned>,
}

/// What one pass carries from round to round.
#[derive(Default)]
pub(super) struct PassState {
    /// Rounds in a row that took a blind guess with nothing accepted.
    pub(super) stuck: usize,
    /// `blind`'s length when the pass began: what this pass guessed follows.
    pub(super) blind_before: usize,
    /// Accepted rules taken back so far for being in a candidate's way.
    pub(super) displacements: usize,
}

/// One round's batch and what the round read off it.
pub(super) struct Round {
    /// The pass's assumptions as this round keeps them.
    pub(super) assumed: Vec<Constraint>,
    /// The API with the accepted rules and `assumed`.
    pub(super) api: ApiSpec,
    pub(super) seed: u64,
    pub(super) batch: Batch,
    /// The batch's share of valid inputs.
    pub(super) rate: f64,
    /// libtorch's most frequent complaint this round, with how many cases raised it.
    pub(super) dominant: Option<(String, usize)>,
}

/// The candidates a round ranks, as (index into `remaining`, rejected inputs it excludes).
#[derive(Default)]
pub(super) struct Ranked {
    /// Those no accepted input breaks and some inputs obey.
    pub(super) eligible: Vec<(usize, usize)>,
    /// Those the batch cannot judge: no input obeys them, or accepted inputs may break them
    /// only through values not drawn. Their own probes decide.
    pub(super) unseen: Vec<(usize, usize)>,
    /// The pick so far; an exclusion count of 0 marks one taken for another reason.
    pub(super) best: Option<(usize, usize)>,
}

/// How a phase of a round ends: on to the round's next phase, on to the next round, or the
/// end of the pass.
pub(super) enum Step {
    On,
    NextRound,
    EndPass,
}

impl<'a> Search<'a> {
    /// A search of `base` over `candidates`; `learned_before`: value sets learned on the base's
    /// inputs. Candidates from the file that the base implies are counted and left out.
    pub(super) fn new(
        base: &'a ApiSpec,
        index: usize,
        candidates: Vec<Checked>,
        learned_before: Vec<Learned>,
        runner: &'a dyn Runner,
        proposers: &'a dyn Proposers,
        config: &'a InferConfig,
    ) -> Search<'a> {
        let start = Instant::now();
        let mut result = ApiResult { api: base.name.clone(), ..Default::default() };
        for c in &candidates {
            bump(&mut result.proposed, source_of(c));
        }
        let mut remaining: Vec<(Checked, ApiSpec)> = Vec::new();
        for c in candidates {
            if c.constraints.is_empty() {
                continue;
            }
            // Enumerated candidates are many and an implied one is never chosen anyway; z3 is only
            // asked about those from the file, whose fate is reported.
            if c.candidate.source != RuleSource::Inferred && reduce::implied(base, &[], &c.constraints, &config.limits) {
                result.implied += 1;
                continue;
            }
            let p = probe_of(base, &c);
            remaining.push((c, p));
        }
        Search {
            base,
            index,
            runner,
            proposers,
            config,
            start,
            search_end: start + config.budget * 3 / 4,
            probes_end: start + config.budget * 7 / 8,
            result,
            remaining,
            accepted: Vec::new(),
            counterexamples: Vec::new(),
            rejected: Vec::new(),
            dominated: Vec::new(),
            blind: Vec::new(),
            round: 0,
            strong_picks: 0,
            from_rounds: proposers.for_rounds(),
            learned_before,
        }
    }

    /// The base with the accepted rules.
    pub(super) fn current(&self) -> ApiSpec {
        current(self.base, &self.accepted)
    }

    /// Runs the search: the passes of rounds, then the probes and the final figure.
    pub(super) fn run(mut self) -> ApiResult {
        // The figure to beat: the API as it stands.
        let before = self.before();
        let nonempty = self.nonempty(&before);
        // Few inputs valid as they stand and something to leave out: a first pass finds the rules
        // of the simplest call, with every parameter that has a default left out, and each next
        // one those of one more of them (`layer_norm`: without `weight` and `bias`, then with
        // `weight`, then with both; `conv2d`: stride, padding, dilation and groups one at a time).
        // Rules for several parameters at once are more than one greedy step finds.
        // An optional parameter without a default (`native_layer_norm`'s `weight`) is left out as
        // None.
        let defaulted: Vec<usize> = self.base.params.iter().enumerate().filter(|(_, p)| p.default.is_some() || p.optional).map(|(i, _)| i).collect();
        let staged = before.ok.iter().filter(|&&o| o).count() < self.config.few_valid && !defaulted.is_empty();
        let mut passes: Vec<Pass> = Vec::new();
        if staged {
            passes.extend((0..defaulted.len()).map(|k| Pass { assume: &nonempty, pinned: &defaulted[k..] }));
        }
        // Then, with nothing left out, non-empty inputs first and any inputs last (again once
        // values are learned).
        let full = [Pass { assume: &nonempty, pinned: &[] }, Pass { assume: &[], pinned: &[] }];
        passes.extend(full);
        let mut pass = 0;
        let mut learned_yet = !self.config.learn_values;
        loop {
            if pass == passes.len() {
                if learned_yet {
                    break;
                }
                learned_yet = true;
                if self.learn_values() {
                    passes.extend(full);
                }
                continue;
            }
            let this = passes[pass];
            pass += 1;
            self.pass(this);
        }
        // Probe each accepted rule alone: break it, keep the others. The non-empty assumption
        // keeps only the parts the accepted rules allow: a rule taken in the pass over all inputs
        // (`value.ndim == 0`) contradicts `value.ndim >= 1`, and would leave the verify batch and
        // every probe without a case, each rule kept unprobed.
        let nonempty = compatible(&self.current(), &nonempty, &self.config.limits);
        self.verify(&before, &nonempty)
    }

    /// The batch of the API as it stands, whose validity is the figure to beat.
    fn before(&mut self) -> Batch {
        let args = sample(self.base, self.config.round_cases, mix(self.config.seed ^ 0xbefe ^ mix(self.index as u64)), &self.config.limits, None);
        let batch = execute(self.runner, self.index, args, self.search_end);
        self.result.cases += batch.ok.len();
        self.result.valid_before = batch.valid_rate();
        batch
    }

    /// The assumption of the first passes: non-empty tensors of rank 1 or more. Empty and 0-d
    /// tensors skip many of libtorch's checks (an empty matmul of two dtypes passes), so they
    /// would refute true rules: the search first assumes them away, then looks at all inputs
    /// (which finds rules about those themselves).
    fn nonempty(&self, before: &Batch) -> Vec<Constraint> {
        let nonempty = nonempty_constraints(self.base);
        // Unless every input libtorch accepted breaks that assumption (`_foreach_mul` wants a 0-d
        // `other`): rules chosen under it would be blind, and carried into the next pass. Then the
        // ranks are not assumed, but the sizes still are: that every accepted input is empty says
        // that libtorch returned before its checks (`take_along_dim` of empty float indices), not
        // that emptiness is wanted, and dropping it left dtype rules refuted by those inputs.
        let refuted = {
            let mut probe = self.base.clone();
            probe.requires = nonempty.clone();
            let accepted: Vec<&Vec<Arg>> = before.args.iter().zip(&before.ok).filter(|(_, ok)| **ok).map(|(a, _)| a).collect();
            !accepted.is_empty() && accepted.iter().all(|a| holds(&probe, a) == Some(false))
        };
        if refuted {
            nonempty.into_iter().filter(|c| !is_rank_assumption(c)).collect()
        } else {
            nonempty
        }
    }

    /// Once the passes are done and the inputs mostly valid, string parameters learn their value
    /// sets (`Proposers::learn_values`), and the search runs again: the new values may need
    /// rules of their own (`rounding_mode="floor"` is not for complex inputs). Whether any set
    /// was learned.
    fn learn_values(&mut self) -> bool {
        let known: Vec<Constraint> = self.learned_before.iter().map(|l| l.constraint.clone()).collect();
        let mut learned = std::mem::take(&mut self.learned_before);
        learned.extend(self.proposers.learn_values(&reduce::with(&self.current(), &[&known], None), self.index, self.runner, self.config, self.search_end));
        // A rule that kept the parameter from these values (`p == None`, found while the
        // only value drawn was the default) is refuted by their accepted runs.
        let rejected = &mut self.rejected;
        self.accepted.retain(|(c, probe)| {
            let broken = broken_by(&learned, probe);
            if broken > 0 {
                rejected.push((c.clone(), vec![("violating_ok".into(), broken as i64)]));
            }
            broken == 0
        });
        let any = !learned.is_empty();
        for l in learned {
            bump(&mut self.result.proposed, "errors".into());
            let c = Checked { candidate: l.candidate, constraints: vec![l.constraint], evidence: Some(l.evidence) };
            let p = probe_of(self.base, &c);
            self.accepted.push((c, p));
        }
        any
    }

    /// One pass: rounds until one ends it, the search's deadline or `max_rounds`.
    fn pass(&mut self, this: Pass) {
        let mut state = PassState { blind_before: self.blind.len(), ..PassState::default() };
        for _ in 0..self.config.max_rounds {
            if Instant::now() >= self.search_end {
                break;
            }
            if self.round(this, &mut state).is_break() {
                break;
            }
        }
    }

    /// One round: a batch, the candidates it ranks, and the pick it takes. Breaks when the
    /// pass is over.
    fn round(&mut self, this: Pass, state: &mut PassState) -> ControlFlow<()> {
        self.round += 1;
        let Some(r) = self.sample_round(this) else { return ControlFlow::Break(()) };
        self.propose(&r);
        let mut ranked = self.rank(&r.batch);
        // With few accepted inputs every candidate looks right and the one excluding most
        // is merely the most restrictive: try the likeliest ones and take the one whose own
        // inputs libtorch accepts most often.
        let accepted_inputs = r.batch.ok.iter().filter(|&&o| o).count();
        if accepted_inputs < self.config.few_valid && ranked.eligible.len() > 1 {
            self.try_likeliest(this, &r, &mut ranked, state);
        }
        // Nothing accepted and no one rule relieved the complaint.
        if accepted_inputs == 0 && !matches!(ranked.best, Some((_, 0))) {
            match self.stalled(this, &r, &ranked, state) {
                Step::On => {}
                Step::NextRound => return ControlFlow::Continue(()),
                Step::EndPass => return ControlFlow::Break(()),
            }
        } else {
            state.stuck = 0;
        }
        if ranked.best.is_none() && self.strong_picks < MAX_STRONGER {
            let (pick, probed) = stronger_than_check(&r.api, &self.remaining, &r.batch, this.pinned, self.runner, self.index, self.config, r.seed, self.search_end);
            self.result.cases += probed;
            if let Some(i) = pick {
                self.strong_picks += 1;
                ranked.best = Some((i, 0));
                if self.config.trace {
                    self.result.trace.push(format!("round {}: {} is stronger than the check, taken", self.round, self.remaining[i].0.candidate.name));
                }
            }
        }
        if self.config.trace {
            self.trace_round(&r, ranked.best);
        }
        let Some((i, _)) = ranked.best else { return ControlFlow::Break(()) };
        let chosen = self.remaining.remove(i);
        // Candidates the new set implies break no conforming input from now on, so they are
        // never chosen; no need to ask z3 about them here.
        self.accepted.push(chosen);
        ControlFlow::Continue(())
    }

    /// The round's batch: conforming inputs of the accepted rules under the pass's assumptions,
    /// run. None when the pass is over: no input could be made or run, or enough are valid.
    fn sample_round(&mut self, this: Pass) -> Option<Round> {
        // A tensor a rule makes 0-d is exempt from the assumption's `ndim >= 1`.
        let zero_d: Vec<usize> = self.accepted.iter().flat_map(|(c, _)| c.constraints.iter().filter_map(rank_zero)).collect();
        let assumed: Vec<Constraint> = this.assume.iter().filter(|c| !(is_rank_assumption(c) && c.params.iter().all(|p| zero_d.contains(p)))).cloned().collect();
        let api = reduce::with(&self.current(), &[&assumed], None);
        let seed = mix(self.config.seed ^ mix(self.round) ^ mix(self.index as u64));
        let args = pin(&api, sample(&api, self.config.round_cases, seed, &self.config.limits, None), this.pinned);
        if args.is_empty() {
            return None;
        }
        let batch = execute(self.runner, self.index, args, self.search_end);
        self.result.cases += batch.ok.len();
        if batch.ok.is_empty() {
            return None;
        }
        let rate = batch.valid_rate().unwrap_or(0.0);
        if rate >= self.config.target_valid {
            return None;
        }
        // libtorch's most frequent complaint this round, counted once for the round.
        let dominant = batch.dominant_error();
        if let Some((key, _)) = &dominant {
            if !self.dominated.contains(key) {
                self.dominated.push(key.clone());
            }
        }
        Some(Round { assumed, api, seed, batch, rate, dominant })
    }

    /// Takes the candidates the round's messages propose (`RoundProposer`): a new one joins
    /// `remaining`, a changed one replaces its earlier version there, and one already taken or
    /// dropped is left alone.
    fn propose(&mut self, r: &Round) {
        let observed = Observed { args: &r.batch.args, messages: &r.batch.messages, dominant_message: r.batch.dominant_message() };
        for c in self.from_rounds.after_round(self.base, &observed) {
            let name = c.candidate.name.as_str();
            if self.accepted.iter().any(|(a, _)| a.candidate.name == name) || self.rejected.iter().any(|(r, _)| r.candidate.name == name) {
                continue;
            }
            if let Some(k) = self.remaining.iter().position(|(r, _)| r.candidate.name == name) {
                if self.remaining[k].0.candidate.text == c.candidate.text {
                    continue;
                }
                self.remaining.remove(k);
            } else {
                bump(&mut self.result.proposed, source_of(&c));
            }
            let p = probe_of(self.base, &c);
            self.remaining.push((c, p));
        }
    }

    /// Candidates no accepted input breaks, ranked by the rejected inputs they exclude; those
    /// an accepted input surely breaks are counted in `counterexamples`.
    fn rank(&mut self, batch: &Batch) -> Ranked {
        let mut ranked = Ranked::default();
        for (i, (c, probe)) in self.remaining.iter().enumerate() {
            let t = tally(probe, batch);
            // Accepted cases that may only have drawn values outside it say nothing yet:
            // its own probe decides, as for one the batch never obeyed.
            if t.ok_broken > 0 && surely_broken_by_accepted(probe, batch) == 0 {
                ranked.unseen.push((i, t.bad_broken));
                continue;
            }
            if t.ok_broken > 0 {
                let name = c.candidate.name.clone();
                match self.counterexamples.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, n)) => *n += t.ok_broken,
                    None => self.counterexamples.push((name, t.ok_broken)),
                }
                continue;
            }
            if t.bad_broken == 0 {
                continue;
            }
            // One the batch never obeyed says nothing here (it excludes all), but a probe of
            // its own may: `stack`'s equal shapes are rare in random lists.
            if t.ok_holds + t.bad_holds == 0 {
                ranked.unseen.push((i, t.bad_broken));
                continue;
            }
            ranked.eligible.push((i, t.bad_broken));
            if ranked.best.is_none_or(|(_, b)| t.bad_broken > b) {
                ranked.best = Some((i, t.bad_broken));
            }
        }
        ranked
    }

    /// With `InferConfig::trace`: the round's figures, its pick, and each candidate's tally.
    fn trace_round(&mut self, r: &Round, best: Option<(usize, usize)>) {
        self.result.trace.push(format!(
            "round {}: {} cases, valid {:.2}, complaint {:?}, best {:?}",
            self.round,
            r.batch.ok.len(),
            r.rate,
            r.batch.dominant_error(),
            best.map(|(i, n)| (self.remaining[i].0.candidate.name.clone(), n))
        ));
        for (c, probe) in &self.remaining {
            let t = tally(probe, &r.batch);
            self.result.trace.push(format!("    {:40} {t:?}", c.candidate.name));
        }
    }
}
