//! The end of a search: each rule taken is probed alone (inputs that break it and keep the
//! others are run; a rule libtorch does not enforce is rejected or replaced, `weaken`), the
//! rules the others imply are dropped (`reduce`), and the final figure decides what is kept.
use std::time::Instant;

use super::candidates::{bump, evidence_count, source_name, source_of, Checked};
use super::runner::{execute, holds, sample, Batch};
use super::search::Search;
use super::{weaken, ApiResult};
use crate::gen::mix;
use crate::rules::{reduce, Judged};
use crate::solve;
use crate::spec::{Constraint, RuleSource, RuleStatus};
use crate::wire::case::Arg;

/// A rule the probes kept, with (violating inputs rejected, violating inputs run).
type Kept = (Checked, [i64; 2]);

impl Search<'_> {
    /// Probes the rules taken, assuming `nonempty` (the parts of the non-empty assumption the
    /// rules allow), and makes the search's result; `before` is the batch of the API as it was.
    pub(super) fn verify(mut self, before: &Batch, nonempty: &[Constraint]) -> ApiResult {
        let verify_rate = self.verify_rate(nonempty);
        let probed_from = self.rejected.len();
        let kept = self.probe_accepted(nonempty, verify_rate);
        // Drop validated rules implied by the others.
        let sets: Vec<Vec<Constraint>> = kept.iter().map(|(c, _)| c.constraints.clone()).collect();
        let keep = reduce::minimal(self.base, &sets, &self.config.limits);
        let kept: Vec<Kept> = kept.into_iter().enumerate().filter(|(i, _)| keep.contains(i)).map(|(_, x)| x).collect();
        let (kept, batch) = self.final_figure(kept, probed_from, verify_rate);
        self.judge(before, &batch, kept)
    }

    /// The share of valid inputs of the rules taken, which a rule's probe is measured against.
    fn verify_rate(&mut self, nonempty: &[Constraint]) -> f64 {
        let api = reduce::with(&self.current(), &[nonempty], None);
        let args = sample(&api, self.config.verify_cases, mix(self.config.seed ^ 0xfeed ^ mix(self.index as u64)), &self.config.limits, None);
        let batch = execute(self.runner, self.index, args, self.probes_end);
        self.result.cases += batch.ok.len();
        if self.config.trace {
            self.result.trace.push(format!("verify: {} cases, valid {:?}, complaint {:?}", batch.ok.len(), batch.valid_rate(), batch.dominant_error()));
        }
        batch.valid_rate().unwrap_or(0.0)
    }

    /// Probes each accepted rule alone: inputs that break it and keep the others. A rule whose
    /// breaking inputs libtorch runs about as often as conforming ones is rejected; one whose
    /// breaking inputs it mostly rejects is kept, or, when some of them ran, replaced by
    /// candidates that explain its rejections and keep those inputs.
    fn probe_accepted(&mut self, nonempty: &[Constraint], verify_rate: f64) -> Vec<Kept> {
        let config = self.config;
        let limits = &config.limits;
        let mut kept: Vec<Kept> = Vec::new();
        let mut k = 0;
        while k < self.accepted.len() {
            // A learned value set was probed by its own runs (the probe string).
            if let Some(evidence) = &self.accepted[k].0.evidence {
                kept.push((self.accepted[k].0.clone(), [evidence_count(evidence, "probe_rejected"), evidence_count(evidence, "probe_ok")]));
                k += 1;
                continue;
            }
            let others: Vec<&[Constraint]> = self.accepted.iter().enumerate().filter(|(j, _)| *j != k).map(|(_, (c, _))| c.constraints.as_slice()).collect();
            let mut with_nonempty = others.clone();
            with_nonempty.push(nonempty);
            let probe_api = reduce::with(self.base, &with_nonempty, Some(&self.accepted[k].0.constraints));
            let args = sample(&probe_api, config.probe_cases, mix(config.seed ^ mix(k as u64 + 77) ^ mix(self.index as u64)), limits, None);
            // Keep only inputs that really break the rule.
            let args: Vec<Vec<Arg>> = args.into_iter().filter(|a| holds(&self.accepted[k].1, a) == Some(false)).collect();
            // A probe the deadline left without cases keeps the rule on the search's evidence, as
            // one for which no violating input could be made.
            let batch = execute(self.runner, self.index, args, self.probes_end);
            self.result.cases += batch.ok.len();
            let passed = batch.ok.iter().filter(|&&o| o).count() as i64;
            let failed = batch.ok.len() as i64 - passed;
            let viol_rate = if batch.ok.is_empty() { 0.0 } else { passed as f64 / batch.ok.len() as f64 };
            if config.trace {
                self.result.trace.push(format!("probe: {} broken: {passed} ran, {failed} rejected (conforming: {verify_rate:.2} ran)", self.accepted[k].0.candidate.name));
            }
            if batch.ok.is_empty() || viol_rate <= (0.25 * verify_rate).max(0.02) {
                // Inputs breaking it ran: it is stronger than libtorch's check. Candidates that
                // explain its rejections and keep those inputs take its place, and are probed in
                // turn (each replacement is taken from `remaining`, so this ends).
                if let Some(mut chosen) = weaken::replacements(&self.remaining, &self.counterexamples, &batch.args, &batch.ok) {
                    if config.trace {
                        let names: Vec<&str> = chosen.iter().map(|&i| self.remaining[i].0.candidate.name.as_str()).collect();
                        self.result.trace.push(format!("probe: {} refused {passed} valid inputs, replaced by {names:?}", self.accepted[k].0.candidate.name));
                    }
                    chosen.sort_unstable();
                    let c = weaken::swap(&mut self.accepted, &mut self.remaining, &mut kept, &mut k, &chosen);
                    self.rejected.push((c, vec![("violating_ok".into(), passed), ("violating_rejected".into(), failed)]));
                    continue;
                }
                kept.push((self.accepted[k].0.clone(), [failed, passed]));
            } else {
                self.rejected.push((self.accepted[k].0.clone(), vec![("violating_ok".into(), passed), ("violating_rejected".into(), failed)]));
            }
            k += 1;
        }
        kept
    }

    /// Conforming inputs of the rules `kept`, run: the final figure.
    fn final_batch(&self, kept: &[Kept]) -> Batch {
        let config = self.config;
        let extra: Vec<&[Constraint]> = kept.iter().map(|(c, _)| c.constraints.as_slice()).collect();
        let args = sample(&reduce::with(self.base, &extra, None), config.verify_cases, mix(config.seed ^ 0xf1a1 ^ mix(self.index as u64)), &config.limits, None);
        execute(self.runner, self.index, args, (self.start + config.budget).max(Instant::now() + config.budget / 8))
    }

    /// The final figure of the rules kept, with the rules the probes dropped back when the inputs
    /// need them (`probed_from`: where the probes' rejections begin in `rejected`).
    fn final_figure(&mut self, kept: Vec<Kept>, probed_from: usize, verify_rate: f64) -> (Vec<Kept>, Batch) {
        let mut kept = kept;
        let mut batch = self.final_batch(&kept);
        self.result.cases += batch.ok.len();
        if self.config.trace && batch.ok.is_empty() {
            let extra: Vec<&[Constraint]> = kept.iter().map(|(c, _)| c.constraints.as_slice()).collect();
            let why = solve::check_sat(&reduce::with(self.base, &extra, None), &self.config.limits).err();
            let names: Vec<&str> = kept.iter().map(|(c, _)| c.candidate.name.as_str()).collect();
            self.result.trace.push(format!("final: no case from {names:?}: {why:?}"));
        }
        // The probes dropped rules that are stronger than libtorch's checks. When the inputs are
        // much less often valid without them, they also carried a check no kept rule makes (a
        // window that fits the input, written as one of its sizes): narrower inputs beat invalid
        // ones, so they return, with their probes' evidence.
        if self.rejected.len() > probed_from && batch.valid_rate().is_some_and(|v| v < verify_rate - 0.1) {
            let mut with_back = kept.clone();
            with_back.extend(self.rejected[probed_from..].iter().map(|(c, ev)| (c.clone(), [evidence_count(ev, "violating_rejected"), evidence_count(ev, "violating_ok")])));
            let again = self.final_batch(&with_back);
            self.result.cases += again.ok.len();
            if self.config.trace {
                let names: Vec<&str> = self.rejected[probed_from..].iter().map(|(c, _)| c.candidate.name.as_str()).collect();
                self.result.trace.push(format!("final: {:?} valid without {names:?}, {:?} with them", batch.valid_rate(), again.valid_rate()));
            }
            if again.valid_rate() > batch.valid_rate() {
                self.rejected.truncate(probed_from);
                kept = with_back;
                batch = again;
            }
        }
        if self.config.trace {
            self.result.trace.push(format!("final: {} cases, valid {:?}, complaint {:?}", batch.ok.len(), batch.valid_rate(), batch.dominant_error()));
        }
        (kept, batch)
    }

    /// The search's result: the rules kept, judged on the final `batch`, and those rejected.
    fn judge(mut self, before: &Batch, batch: &Batch, kept: Vec<Kept>) -> ApiResult {
        let config = self.config;
        self.result.valid_after = batch.valid_rate();
        let pass = batch.ok.iter().filter(|&&o| o).count() as i64;
        let fail = batch.ok.len() as i64 - pass;

        // A search that did not reach a useful valid-input rate found no explanation; its rules
        // would only be guesses that happen to narrow the inputs.
        let conclusive = self.result.valid_after.is_some_and(|v| v >= config.min_valid && Some(v) > self.result.valid_before);
        self.result.conclusive = conclusive || kept.is_empty();
        // What still stops the inputs: those of the kept rules, or of the API as it was when its
        // rules go.
        let left = if conclusive || kept.is_empty() { batch } else { before };
        if left.valid_rate().is_some_and(|v| v < config.target_valid) {
            self.result.complaint = left.complaint();
        }
        // A learned value set widens the inputs rather than narrowing them: it stays when they
        // remain valid enough, even if no more valid than before.
        let widening_ok = self.result.valid_after.is_some_and(|v| v >= config.min_valid);
        let kept: Vec<Kept> = kept.into_iter().filter(|(c, _)| conclusive || (widening_ok && c.evidence.is_some())).collect();
        for (c, [viol_rejected, viol_ok]) in kept {
            bump(&mut self.result.validated, source_of(&c));
            let total = viol_rejected + viol_ok;
            let confidence = (viol_rejected as f64 + 1.0) / (total as f64 + 2.0);
            let mut evidence = vec![("pass".into(), pass), ("fail".into(), fail)];
            match c.evidence {
                Some(own) => evidence.extend(own),
                None => evidence.extend([("violating_rejected".into(), viol_rejected), ("violating_ok".into(), viol_ok)]),
            }
            self.result.rules.push(Judged { candidate: c.candidate, status: RuleStatus::Validated, confidence: Some((confidence * 100.0).round() / 100.0), evidence });
        }
        let mut out_rejected: Vec<Judged> = Vec::new();
        for (c, evidence) in std::mem::take(&mut self.rejected) {
            out_rejected.push(Judged { candidate: c.candidate, status: RuleStatus::Rejected, confidence: None, evidence });
        }
        for (c, _) in std::mem::take(&mut self.remaining) {
            if let Some((_, n)) = self.counterexamples.iter().find(|(name, _)| *name == c.candidate.name) {
                out_rejected.push(Judged { candidate: c.candidate, status: RuleStatus::Rejected, confidence: None, evidence: vec![("violating_ok".into(), *n as i64)] });
            }
        }
        for j in out_rejected {
            bump(&mut self.result.rejected, source_name(&j.candidate));
            if config.keep_rejected || j.candidate.source != RuleSource::Inferred {
                self.result.rules.push(j);
            }
        }
        self.result.seconds = self.start.elapsed().as_secs_f64();
        self.result
    }
}
