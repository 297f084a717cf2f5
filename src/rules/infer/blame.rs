//! Blame for a stalled search: the rule taken blind that now causes the complaint (`culprit`),
//! the accepted rules in a candidate's way (`in_the_way`), and a rule stronger than libtorch's
//! check taken when nothing else relieves it (`stronger_than_check`).
use std::time::Instant;

use super::assume::{pin, Pass};
use super::candidates::{without, Accepted, Checked};
use super::complaint::relevance;
use super::runner::{execute, holds, sample, Batch, Runner};
use super::InferConfig;
use crate::gen::mix;
use crate::rules::reduce;
use crate::solve::{self, Limits};
use crate::spec::{ApiSpec, Constraint};

/// At most this many accepted rules are taken back per pass for being in a candidate's way.
pub(super) const MAX_DISPLACEMENTS: usize = 3;

/// Rules stronger than libtorch's check a search may take (`stronger_than_check`).
pub(super) const MAX_STRONGER: usize = 2;

/// The accepted rules (indices) to take back so that `candidate` can hold with the others:
/// those in z3's unsat `core` (indices into the constraints of `current(accepted)` followed by
/// `assumed`) that this search chose, the latest one alone when that is enough, else all of
/// them. None when the core holds none of them (the API's own constraints contradict the
/// candidate) or dropping them is not enough.
pub(super) fn in_the_way(
    base: &ApiSpec,
    current: &dyn Fn(&Accepted) -> ApiSpec,
    accepted: &Accepted,
    assumed: &[Constraint],
    candidate: &[Constraint],
    core: &[usize],
    limits: &Limits,
) -> Option<Vec<usize>> {
    // Which accepted rule each constraint of `current(accepted)` comes from.
    let mut owner: Vec<Option<usize>> = vec![None; base.requires.len()];
    for (j, (c, _)) in accepted.iter().enumerate() {
        owner.extend(std::iter::repeat_n(Some(j), c.constraints.len()));
    }
    // A value set learned from libtorch's own runs is evidence, not a guess.
    let mut rules: Vec<usize> = core.iter().filter_map(|&i| owner.get(i).copied().flatten()).filter(|&j| accepted[j].0.evidence.is_none()).collect();
    rules.sort_unstable();
    rules.dedup();
    if rules.is_empty() {
        return None;
    }
    let fits = |out: &[usize]| solve::check_sat(&reduce::with(&current(&without(accepted, out)), &[assumed, candidate], None), limits).is_ok();
    rules.iter().rev().find(|&&j| fits(&[j])).map(|&j| vec![j]).or_else(|| fits(&rules).then_some(rules))
}

/// The rule taken blind whose removal silences the batch's most frequent complaint, which names
/// a parameter of the rule: without it, `try_cases` inputs raise the complaint (or one an
/// earlier round got past, `dominated`) less than half as often as the batch did. With how many
/// of the batch's inputs raised the complaint, and how many cases the probes ran.
#[allow(clippy::too_many_arguments)]
pub(super) fn culprit(
    current: &dyn Fn(&Accepted) -> ApiSpec,
    accepted: &Accepted,
    blind: &[String],
    dominated: &[String],
    pass: Pass,
    batch: &Batch,
    runner: &dyn Runner,
    index: usize,
    config: &InferConfig,
    seed: u64,
    deadline: Instant,
) -> (Option<(usize, usize)>, usize) {
    let Some((complaint, count)) = batch.dominant_error() else { return (None, 0) };
    let share = count as f64 / batch.ok.len().max(1) as f64;
    let mut probed = 0;
    let mut best: Option<(usize, f64)> = None;
    for k in 0..accepted.len() {
        let rule = &accepted[k].0;
        if !blind.contains(&rule.candidate.name) || relevance(&accepted[k].1, &complaint, rule) == 0 || Instant::now() >= deadline {
            continue;
        }
        let api = reduce::with(&current(&without(accepted, &[k])), &[pass.assume], None);
        let args = pin(&api, sample(&api, config.try_cases, mix(seed ^ mix(k as u64 + 0xdead)), &config.limits, None), pass.pinned);
        let tried = execute(runner, index, args, deadline);
        probed += tried.ok.len();
        if tried.ok.is_empty() {
            continue;
        }
        // Taking back a rule relieves nothing when its inputs raise again a complaint an
        // earlier round got past (the rank tuple `addmv`'s "vector + matrix @ vector" wanted).
        // `dominated` holds the batch's own complaint: the caller counted this round's first.
        debug_assert!(dominated.contains(&complaint));
        let hits = tried.raising(dominated) as f64 / tried.ok.len() as f64;
        if hits < share / 2.0 && best.is_none_or(|(_, h)| hits < h) {
            best = Some((k, hits));
        }
    }
    (best.map(|(k, _)| (k, count)), probed)
}

/// A rule stronger than libtorch's check, for when every candidate that relieves the dominant
/// complaint also excludes some accepted inputs (`replication_pad1d`: negative padding is fine
/// while the output stays non-empty, which no candidate says, so `padding[*] >= 0` is the
/// nearest). Those that exclude most inputs raising the complaint and at most a third of the
/// accepted ones are tried on inputs of their own; the one whose inputs are most often valid is
/// taken when it beats the batch by a margin. The end probes find it too strong, and it stays
/// only when the inputs need it. Returns the candidate's index in `remaining` and the cases run.
#[allow(clippy::too_many_arguments)]
pub(super) fn stronger_than_check(
    api: &ApiSpec,
    remaining: &[(Checked, ApiSpec)],
    batch: &Batch,
    pinned: &[usize],
    runner: &dyn Runner,
    index: usize,
    config: &InferConfig,
    seed: u64,
    deadline: Instant,
) -> (Option<usize>, usize) {
    let Some((complaint, count)) = batch.dominant_error() else { return (None, 0) };
    let accepted = batch.ok.iter().filter(|&&o| o).count();
    // A rare complaint is not worth the accepted inputs a stronger rule gives up.
    if accepted == 0 || count * 10 < batch.ok.len() {
        return (None, 0);
    }
    let mut ranked: Vec<(usize, usize, usize)> = Vec::new();
    for (i, (_, probe)) in remaining.iter().enumerate() {
        let (mut excluded, mut ok_broken, mut obeyed) = (0, 0, 0);
        for k in 0..batch.args.len() {
            match holds(probe, &batch.args[k]) {
                Some(false) if batch.ok[k] => ok_broken += 1,
                Some(false) if batch.errors[k].as_deref() == Some(complaint.as_str()) => excluded += 1,
                Some(true) => obeyed += 1,
                _ => {}
            }
        }
        if ok_broken > 0 && 3 * ok_broken <= accepted && 10 * excluded >= 7 * count && obeyed > 0 {
            ranked.push((i, excluded, ok_broken));
        }
    }
    ranked.sort_by_key(|&(i, excluded, ok_broken)| (std::cmp::Reverse(excluded), ok_broken, i));
    let rate = batch.valid_rate().unwrap_or(0.0);
    let mut probed = 0;
    let mut best: Option<(usize, f64)> = None;
    for &(i, ..) in ranked.iter().take(4) {
        if Instant::now() >= deadline {
            break;
        }
        let obeying = batch.obeying(&remaining[i].1);
        let tried = if config.on_own_cases(obeying.len()) {
            batch.subset(&obeying)
        } else {
            let probe = reduce::with(api, &[&remaining[i].0.constraints], None);
            let args = pin(&probe, sample(&probe, config.try_cases, mix(seed ^ mix(i as u64 + 0x57)), &config.limits, None), pinned);
            let tried = execute(runner, index, args, deadline);
            probed += tried.ok.len();
            tried
        };
        let Some(valid) = tried.valid_rate() else { continue };
        if valid > rate + 0.05 && best.is_none_or(|(_, v)| valid > v) {
            best = Some((i, valid));
        }
    }
    (best.map(|(i, _)| i), probed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::infer::candidates::candidates_of;
    use std::path::Path;

    /// An early pick that contradicts the rule a later complaint asks for is found in z3's
    /// unsat core and taken back alone when that is enough: `conv1d` took a 2-d input and a
    /// weight of the input's rank, and "weight should have at least three dimensions" wants a
    /// weight the second pick forbids. A contradiction with the API's own constraints takes
    /// nothing back.
    #[test]
    fn the_pick_in_a_candidates_way_is_the_one_taken_back() {
        let src = "api torch.conv1d(input: Tensor, weight: Tensor, groups: int = 1) {\n    requires groups >= 1;\n}\n\
            #[status(candidate)] rule input_ndim_2 for torch.conv1d { input.ndim == 2; }\n\
            #[status(candidate)] rule same_ndim for torch.conv1d { weight.ndim == input.ndim; }\n\
            #[status(candidate)] rule groups_small for torch.conv1d { groups <= 4; }\n\
            #[status(candidate)] rule weight_3d for torch.conv1d { weight.ndim >= 3; }\n\
            #[status(candidate)] rule groups_0 for torch.conv1d { groups == 0; }\n";
        let checked = crate::check::check_text(Path::new("t.sfz"), src);
        assert!(!checked.has_errors(), "{:?}", checked.diags.iter().map(|d| &d.message).collect::<Vec<_>>());
        let base = checked.spec.apis[0].clone();
        let rules = candidates_of(&checked.spec);
        let probe = |c: &Checked| reduce::with(&base, &[&c.constraints], None);
        let accepted: Vec<(Checked, ApiSpec)> = rules[..3].iter().map(|c| (c.clone(), probe(c))).collect();
        let current = |accepted: &Accepted| {
            let extra: Vec<&[Constraint]> = accepted.iter().map(|(c, _)| c.constraints.as_slice()).collect();
            reduce::with(&base, &extra, None)
        };
        let limits = Limits::default();
        let way = |candidate: &Checked| {
            let with = reduce::with(&current(&accepted), &[&candidate.constraints], None);
            let Err(solve::SolveError::Unsat { core }) = solve::check_sat(&with, &limits) else { panic!("{} is satisfiable", candidate.candidate.name) };
            in_the_way(&base, &current, &accepted, &[], &candidate.constraints, &core, &limits)
        };
        // Dropping `same_ndim` alone is enough, so `input_ndim_2` stays.
        assert_eq!(way(&rules[3]), Some(vec![1]));
        // `groups == 0` contradicts the API's own `groups >= 1`: no pick is to blame.
        assert_eq!(way(&rules[4]), None);
    }
}
