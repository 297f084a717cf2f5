//! A round that nothing relieved with no input accepted: the ranks of several tensors may have
//! to change together (`ranks`), a rule taken blind may be what libtorch now complains about
//! (`culprit`), or the pass is stuck and gives back what it guessed.
use super::assume::{is_rank_assumption, Pass};
use super::blame::culprit;
use super::candidates::{current, Checked};
use super::ranks::silencing_ranks;
use super::search::{PassState, Ranked, Round, Search, Step};
use crate::gen::mix;
use crate::rules::reduce;
use crate::spec::{ApiSpec, Constraint};

impl Search<'_> {
    /// Nothing accepted and no one rule relieved the complaint: a rank tuple, a culprit taken
    /// back, or a blind guess (once per pass; a second ends it).
    pub(super) fn stalled(&mut self, this: Pass, r: &Round, ranked: &Ranked, state: &mut PassState) -> Step {
        if self.take_rank_tuple(r) || self.drop_culprit(this, r) {
            return Step::NextRound;
        }
        // Among several, the candidate excluding the most is a blind guess when nothing is
        // accepted: taken once (it may be the one whose own inputs the solver could not
        // make), but a second blind round ends the pass; the next one, without the
        // non-empty assumption, may reach what this one cannot (`value.ndim == 0`).
        if ranked.eligible.len() > 1 {
            state.stuck += 1;
            if state.stuck > 1 {
                self.give_back_guesses(r, state);
                return Step::EndPass;
            }
            if let Some((i, _)) = ranked.best {
                self.blind.push(self.remaining[i].0.candidate.name.clone());
            }
        }
        Step::On
    }

    /// The ranks of several tensors that silence the complaint together (`ranks`), taken as
    /// their candidates `{param}_ndim_{rank}`; whether any was.
    fn take_rank_tuple(&mut self, r: &Round) -> bool {
        // Ranks are what the tuples try, 0 among them: the assumption's `ndim >= 1`
        // does not bind them.
        let unranked: Vec<Constraint> = r.assumed.iter().filter(|c| !is_rank_assumption(c)).cloned().collect();
        let free = reduce::with(&self.current(), &[&unranked], None);
        let (tuple, probed) = silencing_ranks(&free, &r.batch, self.runner, self.index, self.config, mix(r.seed ^ 0x7a2c), self.search_end);
        self.result.cases += probed;
        let Some(tuple) = tuple else { return false };
        let mut moved = Vec::new();
        for (p, rank) in tuple {
            let name = format!("{}_ndim_{rank}", r.api.params[p].name);
            if let Some(k) = self.remaining.iter().position(|(c, _)| c.candidate.name == name) {
                self.accepted.push(self.remaining.remove(k));
                self.blind.push(name.clone());
                moved.push(name);
            }
        }
        if moved.is_empty() {
            return false;
        }
        if self.config.trace {
            self.result.trace.push(format!("round {}: {} cases, valid {:.2}, ranks {moved:?}", self.round, r.batch.ok.len(), r.rate));
        }
        true
    }

    /// A rule taken blind that libtorch now complains about, taken back; whether there was one.
    fn drop_culprit(&mut self, this: Pass, r: &Round) -> bool {
        let base = self.base;
        let with_rules = |accepted: &[(Checked, ApiSpec)]| current(base, accepted);
        let (culprit, probed) = culprit(&with_rules, &self.accepted, &self.blind, &self.dominated, this, &r.batch, self.runner, self.index, self.config, r.seed, self.search_end);
        self.result.cases += probed;
        let Some((k, hits)) = culprit else { return false };
        let (c, _) = self.accepted.remove(k);
        if self.config.trace {
            self.result.trace.push(format!("round {}: {} cases, valid {:.2}, dropped {} ({hits} inputs complain with it)", self.round, r.batch.ok.len(), r.rate, c.candidate.name));
        }
        self.rejected.push((c, vec![("conforming_rejected".into(), hits as i64)]));
        true
    }

    /// What this pass guessed led nowhere: the next pass starts without it (`linspace`'s
    /// guessed `end.ndim == 1` would keep the 0-d pair away).
    fn give_back_guesses(&mut self, r: &Round, state: &PassState) {
        if self.config.trace {
            self.result.trace.push(format!("round {}: {} cases, valid 0, complaint {:?}: stuck, pass ends", self.round, r.batch.ok.len(), r.batch.dominant_error()));
        }
        for name in self.blind.drain(state.blind_before..) {
            if let Some(k) = self.accepted.iter().position(|(c, _)| c.candidate.name == name) {
                self.remaining.push(self.accepted.remove(k));
            }
        }
    }
}
