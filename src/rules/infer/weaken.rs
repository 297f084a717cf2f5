//! A validated rule that libtorch contradicts: some inputs breaking it still ran. The greedy
//! search can take a rule stronger than the check it stands for (`mm`: `input.shape ==
//! mat2.shape` excludes every `mat2` of rank 3, where the check is `mat2.ndim == 2`), and probed
//! alone that rule still explains most rejections. Among the candidates not taken, the few that
//! hold on every violating input libtorch accepted and break (nearly) every one it rejected say
//! the same thing without refusing valid inputs: they replace it.
use crate::spec::ApiSpec;
use crate::wire::case::Arg;

use super::candidates::Checked;
use super::runner::holds;

/// Replaces the accepted rule at `*k` by the candidates at `chosen` (ascending indices into
/// `remaining`, moved to the end of `accepted`, where the probe loop reaches them), and returns
/// the replaced rule. A rule probed before without a breaking input may have had none because
/// the replaced rule implied it (`broadcastable(input, mat2)` beside `input.shape ==
/// mat2.shape`): it leaves `judged_ok` and is probed again after the replacements; `*k` stays
/// on the rule that followed the replaced one.
pub(super) fn swap(
    accepted: &mut Vec<(Checked, ApiSpec)>,
    remaining: &mut Vec<(Checked, ApiSpec)>,
    judged_ok: &mut Vec<(Checked, [i64; 2])>,
    k: &mut usize,
    chosen: &[usize],
) -> Checked {
    let (replaced, _) = accepted.remove(*k);
    for (taken, &i) in chosen.iter().enumerate() {
        // Earlier removals shifted the later indices down by one each.
        accepted.push(remaining.remove(i - taken));
    }
    let unprobed: Vec<String> = judged_ok.iter().filter(|(c, [f, p])| c.evidence.is_none() && f + p == 0).map(|(c, _)| c.candidate.name.clone()).collect();
    judged_ok.retain(|(c, _)| !unprobed.contains(&c.candidate.name));
    for name in unprobed {
        if let Some(i) = accepted.iter().position(|(c, _)| c.candidate.name == name) {
            let again = accepted.remove(i);
            if i < *k {
                *k -= 1;
            }
            accepted.push(again);
        }
    }
    replaced
}

/// At most this many candidates replace one rule: more would be a guess fitted to one batch.
const MAX_REPLACEMENTS: usize = 3;

/// The candidates (indices into `remaining`) that together replace a rule whose violating
/// inputs `args` ran as `ok` says, or None when there is no such set or nothing to replace (no
/// violating input ran). Candidates named in `refuted` broke an accepted input of the search
/// and are never taken. Rejections left unexplained may be one in ten: libtorch's other checks.
pub(super) fn replacements(remaining: &[(Checked, ApiSpec)], refuted: &[(String, usize)], args: &[Vec<Arg>], ok: &[bool]) -> Option<Vec<usize>> {
    let passed: Vec<&[Arg]> = args.iter().zip(ok).filter(|(_, &o)| o).map(|(a, _)| a.as_slice()).collect();
    let failed: Vec<&[Arg]> = args.iter().zip(ok).filter(|(_, &o)| !o).map(|(a, _)| a.as_slice()).collect();
    if passed.is_empty() || failed.is_empty() {
        return None;
    }
    // Each usable candidate with the rejected inputs it breaks.
    let usable: Vec<(usize, Vec<usize>)> = remaining
        .iter()
        .enumerate()
        .filter(|(_, (c, _))| !refuted.iter().any(|(name, _)| *name == c.candidate.name))
        .filter(|(_, (_, probe))| passed.iter().all(|a| holds(probe, a) == Some(true)))
        .map(|(i, (_, probe))| (i, failed.iter().enumerate().filter(|(_, a)| holds(probe, a) == Some(false)).map(|(j, _)| j).collect::<Vec<_>>()))
        .filter(|(_, broken)| !broken.is_empty())
        .collect();
    let mut uncovered: Vec<bool> = vec![true; failed.len()];
    let mut chosen = Vec::new();
    while uncovered.iter().filter(|&&u| u).count() * 10 > failed.len() {
        if chosen.len() == MAX_REPLACEMENTS {
            return None;
        }
        // The candidate explaining the most rejections not yet explained; the first of equals,
        // so the choice follows the candidates' order.
        let gain = |broken: &[usize]| broken.iter().filter(|&&j| uncovered[j]).count();
        let best = usable.iter().filter(|(i, _)| !chosen.contains(i)).fold(None::<(usize, &[usize], usize)>, |best, (i, broken)| {
            let g = gain(broken);
            if g > 0 && best.is_none_or(|(_, _, b)| g > b) {
                Some((*i, broken, g))
            } else {
                best
            }
        });
        let (i, broken, _) = best?;
        chosen.push(i);
        for &j in broken {
            uncovered[j] = false;
        }
    }
    Some(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::Candidate;
    use crate::wire::case::{DType, Fill, TensorRecipe};
    use std::path::Path;

    fn tensor(shape: &[i64]) -> Arg {
        let fill = Fill::Uniform { lo: 0.0, hi: 1.0 };
        Arg::Tensor(TensorRecipe { dtype: DType::Float32, shape: shape.to_vec(), fill, seed: 0, layout: Default::default(), specials: vec![] })
    }

    /// Each rule of `src` (one API) as the search holds a candidate: with its probe, the API
    /// constrained by the rule alone.
    fn pairs(src: &str) -> Vec<(Checked, ApiSpec)> {
        let checked = crate::check::check_text(Path::new("t.sfz"), src);
        assert!(!checked.has_errors(), "{:?}", checked.diags.iter().map(|d| &d.message).collect::<Vec<_>>());
        let base = &checked.spec.apis[0];
        checked
            .spec
            .rules
            .iter()
            .map(|r| {
                let c = Checked {
                    candidate: Candidate { name: r.meta.name.clone(), text: r.constraints[0].text.clone(), source: crate::spec::RuleSource::Inferred },
                    constraints: r.constraints.clone(),
                    evidence: None,
                };
                let mut probe = base.clone();
                probe.requires = r.constraints.clone();
                (c, probe)
            })
            .collect()
    }

    /// The replaced rule leaves `accepted`, the replacements join its end in their order, and
    /// a rule judged without any breaking input is probed again, at the end too, with the
    /// probe loop's index kept on the rule after the replaced one.
    #[test]
    fn a_swap_requeues_the_replacements_and_the_rules_the_replaced_one_may_have_implied() {
        let src = "api torch.mm(input: Tensor, mat2: Tensor) -> Tensor {}\n\
            #[status(candidate)] rule a for torch.mm { input.ndim == 2; }\n\
            #[status(candidate)] rule b for torch.mm { mat2.ndim == 2; }\n\
            #[status(candidate)] rule c for torch.mm { input.shape[-1] == mat2.shape[0]; }\n\
            #[status(candidate)] rule d for torch.mm { mat2.shape[0] == mat2.shape[-1]; }\n\
            #[status(candidate)] rule e for torch.mm { input.ndim >= 1; }\n\
            #[status(candidate)] rule f for torch.mm { mat2.ndim >= 1; }\n";
        let mut all = pairs(src);
        let names = |v: &[(Checked, ApiSpec)]| v.iter().map(|(c, _)| c.candidate.name.clone()).collect::<Vec<_>>();
        // accepted: a (judged with no breaking input), b (judged, broken inputs seen), c (being
        // probed); remaining: d, e, f.
        let mut remaining = all.split_off(3);
        let mut accepted = all;
        let mut judged_ok = vec![(accepted[0].0.clone(), [0, 0]), (accepted[1].0.clone(), [3, 1])];
        let mut k = 2;
        let replaced = swap(&mut accepted, &mut remaining, &mut judged_ok, &mut k, &[0, 2]);
        assert_eq!(replaced.candidate.name, "c");
        assert_eq!(names(&accepted), ["b", "d", "f", "a"]);
        assert_eq!(names(&remaining), ["e"]);
        assert_eq!(judged_ok.iter().map(|(c, _)| c.candidate.name.as_str()).collect::<Vec<_>>(), ["b"]);
        // `a` was before the probed rule: the index moves down with it, onto `d`.
        assert_eq!(k, 1);
    }

    /// `mm`'s `input.shape == mat2.shape` broken: a `[2, 3] @ [3, 4]` ran, the inputs with a
    /// `mat2` of rank 3 or a mismatched inner size were rejected. `mat2.ndim == 2` and the inner
    /// sizes' equality replace it; `input.ndim == 2`, which every input obeys, explains nothing.
    #[test]
    fn a_rule_that_refused_valid_inputs_gives_way_to_the_checks_it_stood_for() {
        let src = "api torch.mm(input: Tensor, mat2: Tensor) -> Tensor {}\n\
            #[status(candidate)] rule input_ndim_2 for torch.mm { input.ndim == 2; }\n\
            #[status(candidate)] rule mat2_ndim_2 for torch.mm { mat2.ndim == 2; }\n\
            #[status(candidate)] rule inner for torch.mm { input.shape[-1] == mat2.shape[0]; }\n\
            #[status(candidate)] rule square for torch.mm { mat2.shape[0] == mat2.shape[-1]; }\n";
        let remaining = pairs(src);
        let args = vec![
            vec![tensor(&[2, 3]), tensor(&[3, 4])],
            vec![tensor(&[2, 3]), tensor(&[3, 4, 1])],
            vec![tensor(&[2, 3]), tensor(&[2, 3, 3])],
            vec![tensor(&[2, 3]), tensor(&[5, 4])],
            vec![tensor(&[2, 2]), tensor(&[3, 3])],
        ];
        let ok = [true, false, false, false, false];
        let names = |chosen: Vec<usize>| chosen.into_iter().map(|i| remaining[i].0.candidate.name.clone()).collect::<Vec<_>>();
        assert_eq!(replacements(&remaining, &[], &args, &ok).map(names), Some(vec!["inner".to_string(), "mat2_ndim_2".to_string()]));
        // A candidate the search saw refuted is not taken: nothing else explains the inner
        // sizes' rejections.
        assert_eq!(replacements(&remaining, &[("inner".into(), 1)], &args, &ok), None);
        // No violating input ran: the rule stands.
        assert_eq!(replacements(&remaining, &[], &args[1..], &ok[1..]), None);
    }
}
