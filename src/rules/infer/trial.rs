//! The trial of the likeliest candidates, for a round with few accepted inputs: each is tried
//! on inputs it holds on (the batch's own where enough obey it, else freshly solved ones), and
//! the one whose inputs libtorch accepts most often, or that most relieves its most frequent
//! complaint, is taken. When none relieves it and the likeliest cannot hold with the rules
//! taken, the rule in its way may go (`displace`).
use std::cmp::Reverse;
use std::collections::HashSet;
use std::time::Instant;

use super::assume::{pin, Pass};
use super::blame::{in_the_way, MAX_DISPLACEMENTS};
use super::candidates::{current, without, Checked};
use super::complaint::{about_dtypes, relevance, same_kind};
use super::counts;
use super::runner::{arguments, execute, sample};
use super::search::{PassState, Ranked, Round, Search};
use crate::gen::mix;
use crate::rules::reduce;
use crate::solve;
use crate::spec::{ApiSpec, Constraint};

/// A candidate's trial, compared in this order: accepted per mille, whether it relieves the
/// complaint, relevance, a count the complaint wanted, kind, per mille past the kind of check
/// that complained, per mille free of the dominant complaint, per mille raising a complaint the
/// batch did not, generality.
type Score = (usize, bool, usize, usize, usize, usize, usize, usize, usize);

/// Candidates the accepted rules contradict, with the unsat core z3 gave.
type Blocked = Vec<(usize, Vec<usize>)>;

/// The round's most frequent complaint, as the trial reads it.
struct Dominant<'r> {
    /// The round's API (its parameters' names).
    api: &'r ApiSpec,
    /// The complaint's key, with how many cases raised it.
    complaint: Option<&'r (String, usize)>,
    about_dtypes: bool,
    /// "Expected 2D or 3D tensor": the ranks and lengths the complaint wanted.
    named: Vec<i64>,
    /// The share of the batch that raised it, per mille.
    share: usize,
}

impl<'r> Dominant<'r> {
    fn of(r: &'r Round) -> Dominant<'r> {
        let complaint = r.dominant.as_ref();
        Dominant {
            api: &r.api,
            complaint,
            about_dtypes: complaint.is_some_and(|(key, _)| about_dtypes(key)),
            named: complaint.map_or_else(Vec::new, |(key, _)| r.batch.named_counts(key)),
            share: complaint.map_or(0, |(_, c)| c * 1000 / r.batch.ok.len().max(1)),
        }
    }

    fn relevance(&self, c: &Checked) -> usize {
        self.complaint.map_or(0, |(key, _)| relevance(self.api, key, c))
    }

    fn kind(&self, c: &Checked) -> usize {
        self.complaint.map_or(0, |(key, _)| same_kind(key, c))
    }

    fn hinted(&self, c: &Checked) -> usize {
        counts::hinted(&self.named, &c.constraints)
    }

    /// Two fifths fewer is relief: one rule of a conjunction relieves part of it
    /// (`2 * padding <= kernel_size` leaves the negative dilations).
    fn relieving(&self, ok: usize, hits_per_mille: usize) -> bool {
        ok > 0 || hits_per_mille * 5 < self.share * 3
    }
}

impl Search<'_> {
    /// When one rule alone cannot make an input valid (stack needs `dim` in range and equal
    /// shapes), the candidate that silences libtorch's most frequent complaint is progress:
    /// the next round sees the next complaint. Those about the parameters the complaint names
    /// are tried first. Sets `ranked.best` to the pick, if any.
    pub(super) fn try_likeliest(&mut self, this: Pass, r: &Round, ranked: &mut Ranked, state: &mut PassState) {
        let d = Dominant::of(r);
        let (scored, blocked) = self.score_likeliest(this, r, ranked, &d);
        if let Some((i, (_, _, relevant, ..))) = scored.filter(|(_, (_, relieves, ..))| *relieves) {
            ranked.best = Some((i, 0));
            if relevant == 0 {
                self.blind.push(self.remaining[i].0.candidate.name.clone());
            }
        } else if state.displacements < MAX_DISPLACEMENTS {
            if let Some(i) = self.displace(this, r, &d, blocked, state) {
                ranked.best = Some((i, 0));
            }
        }
    }

    /// The best trial among the likeliest candidates, and the candidates the rules taken
    /// contradict. Candidates tried on fresh samples; those tried on the batch's own cases are
    /// free, so up to four times as many candidates are looked at. The batch's own cases a
    /// candidate holds on are what a fresh sample of the API with it would be; solving and
    /// running anew is for the candidates too few of them obey (a rank the solver rarely draws),
    /// all solved together.
    fn score_likeliest(&mut self, this: Pass, r: &Round, ranked: &Ranked, d: &Dominant) -> (Option<(usize, Score)>, Blocked) {
        let (config, batch) = (self.config, &r.batch);
        let remaining = &self.remaining;
        let mut probing: Vec<(usize, usize)> = ranked.eligible.iter().chain(&ranked.unseen).copied().collect();
        probing.sort_by_key(|&(i, n)| (Reverse(d.relevance(&remaining[i].0)), Reverse(d.hinted(&remaining[i].0)), Reverse(d.kind(&remaining[i].0)), Reverse(n)));
        let mut scored: Option<(usize, Score)> = None;
        let complaints: HashSet<&str> = batch.errors.iter().flatten().map(String::as_str).collect();
        let n = batch.ok.len().max(1);
        let probe_seed = |i: usize| mix(r.seed ^ mix(i as u64 + 1));
        let mut looked: Vec<(usize, Vec<usize>)> = Vec::new();
        let mut to_solve: Vec<(&[Constraint], u64)> = Vec::new();
        for &(i, _) in probing.iter().take(4 * config.try_candidates) {
            if to_solve.len() >= config.try_candidates {
                break;
            }
            let obeying = batch.obeying(&remaining[i].1);
            if !config.on_own_cases(obeying.len()) {
                to_solve.push((&remaining[i].0.constraints, probe_seed(i)));
            }
            looked.push((i, obeying));
        }
        let mut solved = solve::sample_each(&r.api, &to_solve, &config.limits, config.try_cases, self.search_end).into_iter();
        let mut blocked: Blocked = Vec::new();
        for (i, obeying) in looked {
            if Instant::now() >= self.search_end {
                break;
            }
            // Ties go to the more general candidate: the one more current inputs obey.
            let general = obeying.len() * 1000 / n;
            let tried = if config.on_own_cases(obeying.len()) {
                batch.subset(&obeying)
            } else {
                let Some(models) = solved.next() else { break };
                // Contradicted by the rules taken so far: maybe one of them is wrong.
                if let Err(solve::SolveError::Unsat { core }) = &models {
                    blocked.push((i, core.clone()));
                    continue;
                }
                let probe = reduce::with(&r.api, &[&self.remaining[i].0.constraints], None);
                let args = arguments(&probe, &models.unwrap_or_default(), probe_seed(i), None);
                let tried = execute(self.runner, self.index, pin(&probe, args, this.pinned), self.search_end);
                self.result.cases += tried.ok.len();
                tried
            };
            if tried.ok.is_empty() {
                continue;
            }
            let len = tried.ok.len();
            let ok = tried.ok.iter().filter(|&&o| o).count() * 1000 / len;
            // A complaint an earlier round got past, raised again, is no relief either
            // (`output_size == None` silences the length check by bringing back "Must
            // specify exactly one of output_size and scale_factors"). `dominated` holds
            // this round's complaint too.
            let hits = d.complaint.map_or(0, |_| tried.raising(&self.dominated));
            let relieved = 1000 - hits * 1000 / len;
            // Among equal reliefs, a complaint the batch never raised is ground not yet
            // covered; one it did is often an earlier check the candidate trips.
            let fresh = tried.errors.iter().flatten().filter(|e| !complaints.contains(e.as_str())).count() * 1000 / len;
            // A candidate that relieves the complaint without naming what it names
            // often trips an earlier check instead (`input.ndim <= 2` against a
            // padding complaint): relevance ranks the relieving ones.
            let relieves = d.relieving(ok, 1000 - relieved);
            // Inputs that got past the kind of check that complained: a dtype rule that
            // works moves libtorch on to its shape checks, one that trips an earlier
            // dtype check (`weight.dtype == bool`) does not.
            let past = d.complaint.map_or(0, |_| tried.errors.iter().filter(|e| e.as_deref().is_none_or(|e| about_dtypes(e) != d.about_dtypes)).count() * 1000 / len);
            let c = &self.remaining[i].0;
            let score = (ok, relieves, d.relevance(c), d.hinted(c), d.kind(c), past, relieved, fresh, general);
            if config.trace {
                self.result.trace.push(format!("  tried {:40} {score:?}", c.candidate.name));
            }
            if scored.is_none_or(|(_, s)| score > s) {
                scored = Some((i, score));
            }
        }
        (scored, blocked)
    }

    /// Nothing relieves the complaint, and the likeliest candidate that names what it names
    /// cannot hold with the rules taken: an early greedy pick may be the wrong one (`conv1d`: a
    /// 2-d input and a weight of the input's rank, then "weight should have at least three
    /// dimensions"). The pick in the way goes when the candidate, without it, relieves the
    /// complaint; the candidate (its index in `remaining`) is then the round's pick.
    fn displace(&mut self, this: Pass, r: &Round, d: &Dominant, blocked: Blocked, state: &mut PassState) -> Option<usize> {
        let limits = &self.config.limits;
        let base = self.base;
        let with_rules = |accepted: &[(Checked, ApiSpec)]| current(base, accepted);
        let first = blocked.into_iter().find(|(i, _)| d.relevance(&self.remaining[*i].0) > 0);
        let out = first.as_ref().and_then(|(i, core)| in_the_way(base, &with_rules, &self.accepted, &r.assumed, &self.remaining[*i].0.constraints, core, limits));
        let (Some((i, _)), Some(out)) = (first, out) else { return None };
        let probe = reduce::with(&with_rules(&without(&self.accepted, &out)), &[&r.assumed, &self.remaining[i].0.constraints], None);
        let seed = mix(mix(r.seed ^ mix(i as u64 + 1)) ^ 0xd15);
        let args = pin(&probe, sample(&probe, self.config.try_cases, seed, limits, None), this.pinned);
        let tried = execute(self.runner, self.index, args, self.search_end);
        self.result.cases += tried.ok.len();
        let len = tried.ok.len().max(1);
        let ok = tried.ok.iter().filter(|&&o| o).count() * 1000 / len;
        // Relief that raises again a complaint an earlier round got past is no
        // relief: without `addmv_`'s rank tuple, `input.ndim == mat.ndim` ends
        // "size mismatch" by tripping "vector + matrix @ vector expected".
        let hits = tried.raising(&self.dominated);
        if tried.ok.is_empty() || !d.relieving(ok, hits * 1000 / len) {
            return None;
        }
        state.displacements += 1;
        let count = d.complaint.map_or(0, |(_, n)| *n as i64);
        for &j in out.iter().rev() {
            let (c, _) = self.accepted.remove(j);
            if self.config.trace {
                self.result.trace.push(format!("round {}: {} is in the way of {}: dropped", self.round, c.candidate.name, self.remaining[i].0.candidate.name));
            }
            self.blind.retain(|n| *n != c.candidate.name);
            self.rejected.push((c, vec![("contradicts_a_fix".into(), count)]));
        }
        Some(i)
    }
}
