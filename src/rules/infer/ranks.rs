//! Rank tuples. When libtorch names the ranks of several tensors in one complaint ("vector +
//! matrix @ vector expected, got 2, 2, 1"), no single `x.ndim == k` rule silences it, so the
//! greedy search of `infer` sees no progress and stalls. Grouping a batch's cases by the ranks
//! of their tensors finds the combination whose cases libtorch no longer says that of.
use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::runner::{execute, Batch, Runner};
use super::InferConfig;
use crate::gen::values;
use crate::spec::{ApiSpec, ParamType};
use crate::wire::case::Arg;

/// The highest rank a probe tries: volumetric operators take 5-D batches (beyond
/// `solve::Limits::max_ndim`, which a rule naming the rank lifts: `named_rank`).
pub const PROBED: usize = 5;

/// How many tuples a probe tries at most (one reshaped case each): every one of three tensors.
pub const TUPLES: usize = (PROBED + 1).pow(3);

/// The rank tuples to try on the API's first tensor parameters (at most three; the others stay
/// free), lowest ranks first: every tuple of ranks 0 to 2, then those with a 3, and so on to
/// `PROBED`, each group in lexicographic order; at most `TUPLES`. Rank 0 is in: `linspace`
/// wants 0-d `start` and `end` together, which no single rank rule reaches.
pub fn tuples(api: &ApiSpec) -> Vec<Vec<(usize, usize)>> {
    let params: Vec<usize> = tensors(api).take(3).collect();
    let base = PROBED + 1;
    let count = base.pow(params.len() as u32);
    // The n-th tuple in lexicographic order: n's digits in base PROBED + 1.
    let mut out: Vec<Vec<(usize, usize)>> =
        (0..count).map(|n| params.iter().enumerate().map(|(k, &p)| (p, n / base.pow((params.len() - 1 - k) as u32) % base)).collect()).collect();
    out.sort_by_key(|t: &Vec<(usize, usize)>| t.iter().map(|&(_, r)| r).max().unwrap_or(0).max(2));
    out.truncate(TUPLES);
    out
}

/// Argument lists with the ranks of `tuple`, made from conforming ones (`bases`, cycled) by
/// giving each of the tuple's tensors a fresh shape of its rank (sizes 1 to `max_dim`); those
/// that no longer conform to the API are dropped. Cheaper than one solver call per tuple, and
/// the skeleton's constraints rarely bind shapes.
pub fn reshaped(api: &ApiSpec, bases: &[Vec<Arg>], tuples: &[Vec<(usize, usize)>], max_dim: i64, rng: &mut impl Rng) -> Vec<Vec<Arg>> {
    if bases.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (k, tuple) in tuples.iter().enumerate() {
        let mut args = bases[k % bases.len()].clone();
        for &(p, r) in tuple {
            if let Some(Arg::Tensor(t)) = args.get_mut(p) {
                t.shape = (0..r).map(|_| rng.random_range(1..=max_dim.max(1))).collect();
                t.specials.clear();
            }
        }
        if values::conforms(api, &args).iter().all(|c| *c != Some(false)) {
            out.push(args);
        }
    }
    out
}

/// One executed case: its arguments, whether libtorch accepted it, its normalized complaint.
pub struct Ran<'a> {
    pub args: &'a [Arg],
    pub ok: bool,
    pub error: Option<&'a str>,
}

/// The ranks of the present tensor parameters whose cases never raised `complaint`: the tuple
/// with the most accepted cases, then the most tensors at a rank the complaint names (`named`,
/// `counts::named`: "vector + matrix @ vector" names 1 and 2, so a 0-d `input`, which that check
/// also lets through, loses to a 1-d one), then the most cases, then the lowest ranks; as
/// (parameter, rank) pairs. None when every tuple raised it at least once, or the API has fewer
/// than two tensors (one tensor's rank is a single rule, which the search tries on its own).
pub fn silencing<'a>(api: &ApiSpec, cases: impl IntoIterator<Item = Ran<'a>>, complaint: &str, named: &[i64]) -> Option<Vec<(usize, usize)>> {
    let params: Vec<usize> = tensors(api).collect();
    if params.len() < 2 {
        return None;
    }
    let mut groups: Vec<Group> = Vec::new();
    for case in cases {
        let tuple: Vec<(usize, usize)> = params
            .iter()
            .filter_map(|&p| match case.args.get(p) {
                Some(Arg::Tensor(t)) => Some((p, t.shape.len())),
                _ => None,
            })
            .collect();
        if tuple.len() < 2 {
            continue;
        }
        let at = match groups.iter().position(|g| g.tuple == tuple) {
            Some(at) => at,
            None => {
                groups.push(Group { tuple, cases: 0, accepted: 0, complained: false });
                groups.len() - 1
            }
        };
        let g = &mut groups[at];
        g.cases += 1;
        g.accepted += usize::from(case.ok);
        g.complained |= case.error == Some(complaint);
    }
    let at_named = |g: &Group| g.tuple.iter().filter(|&&(_, r)| named.contains(&(r as i64))).count();
    groups
        .into_iter()
        .filter(|g| !g.complained)
        .max_by_key(|g| (g.accepted, at_named(g), g.cases, std::cmp::Reverse(g.tuple.iter().map(|(_, r)| r).sum::<usize>())))
        .map(|g| g.tuple)
}

/// The cases of one rank tuple.
struct Group {
    tuple: Vec<(usize, usize)>,
    cases: usize,
    accepted: usize,
    /// Some case raised the complaint.
    complained: bool,
}

/// The tensor parameters of an API, by index.
fn tensors(api: &ApiSpec) -> impl Iterator<Item = usize> + '_ {
    api.params.iter().enumerate().filter(|(_, p)| p.ty == ParamType::Tensor).map(|(i, _)| i)
}

/// The rank tuple that silences the batch's most frequent complaint, looked for in the batch
/// and in one case of each tuple `tuples` lists (`silencing`).
pub(super) fn silencing_ranks(
    api: &ApiSpec,
    batch: &Batch,
    runner: &dyn Runner,
    index: usize,
    config: &InferConfig,
    seed: u64,
    deadline: Instant,
) -> (Option<Vec<(usize, usize)>>, usize) {
    let Some((complaint, _)) = batch.dominant_error() else { return (None, 0) };
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let args = reshaped(api, &batch.args, &tuples(api), config.limits.max_dim, &mut rng);
    let extra = execute(runner, index, args, deadline);
    (silencing(api, ran(batch).chain(ran(&extra)), &complaint, &batch.named_counts(&complaint)), extra.ok.len())
}

fn ran(b: &Batch) -> impl Iterator<Item = Ran<'_>> {
    b.args.iter().zip(&b.ok).zip(&b.errors).map(|((args, ok), e)| Ran { args, ok: *ok, error: e.as_deref() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::case::{DType, Fill, Layout, TensorRecipe};
    use rand::SeedableRng;

    fn api(text: &str) -> ApiSpec {
        let checked = crate::check::check_text(std::path::Path::new("t.sfz"), text);
        assert!(!checked.has_errors(), "{:?}", checked.diags);
        checked.spec.apis[0].clone()
    }

    fn tensor(rank: usize) -> Arg {
        Arg::Tensor(TensorRecipe {
            dtype: DType::Float32,
            shape: vec![2; rank],
            fill: Fill::Uniform { lo: -1.0, hi: 1.0 },
            seed: 1,
            layout: Layout::Contiguous,
            specials: Vec::new(),
        })
    }

    #[test]
    fn tuples_go_from_low_ranks_to_five_on_three_tensors_at_most() {
        let addmv = api("api torch.addmv(input: Tensor, mat: Tensor, vec: Tensor) -> Tensor {}");
        let t = tuples(&addmv);
        assert_eq!(t.len(), 216);
        assert_eq!(t[0], vec![(0, 0), (1, 0), (2, 0)]);
        // Every tuple of ranks up to 2 comes before any with a 3.
        let first_three = t.iter().position(|x| x.iter().any(|(_, r)| *r == 3)).unwrap();
        assert_eq!(first_three, 27);
        let linspace = api("api torch.linspace(start: Tensor, end: Tensor, steps: int) -> Tensor {}");
        assert!(tuples(&linspace).contains(&vec![(0, 0), (1, 0)]));
        assert!(t.contains(&vec![(0, 1), (1, 2), (2, 1)]) && t.contains(&vec![(0, 5), (1, 5), (2, 1)]));
        let mut dedup = t.clone();
        dedup.dedup();
        assert_eq!(dedup.len(), t.len());
        let four = api("api torch.f(a: Tensor, b: Tensor, c: Tensor, d: Tensor) -> Tensor {}");
        assert!(tuples(&four).iter().all(|x| x.len() == 3));
    }

    #[test]
    fn the_tuple_whose_cases_never_raise_the_complaint_is_found() {
        let addmv = api("api torch.addmv(input: Tensor, mat: Tensor, vec: Tensor) -> Tensor {}");
        let complaint = "vector + matrix @ vector expected, got N, N, N";
        let cases: Vec<(Vec<Arg>, bool, Option<&str>)> = vec![
            (vec![tensor(2), tensor(2), tensor(1)], false, Some(complaint)),
            (vec![tensor(1), tensor(2), tensor(1)], false, Some("size mismatch")),
            (vec![tensor(1), tensor(2), tensor(1)], true, None),
            (vec![tensor(1), tensor(1), tensor(1)], false, Some(complaint)),
            // One case that raised something else, but its tuple also raised the complaint.
            (vec![tensor(3), tensor(3), tensor(3)], false, Some("other")),
            (vec![tensor(3), tensor(3), tensor(3)], false, Some(complaint)),
        ];
        let ran = || cases.iter().map(|(args, ok, error)| Ran { args, ok: *ok, error: *error });
        assert_eq!(silencing(&addmv, ran(), complaint, &[]), Some(vec![(0, 1), (1, 2), (2, 1)]));
        // One tensor: its rank is a single rule, which the search tries itself.
        let abs = api("api torch.abs(input: Tensor) -> Tensor {}");
        assert_eq!(silencing(&abs, ran(), complaint, &[]), None);
    }

    #[test]
    fn among_tuples_none_accepts_the_one_at_the_ranks_the_complaint_names_wins() {
        // `addmv_` lets a 0-d `input` through the rank check and refuses it later; with nothing
        // accepted, the lowest ranks alone would choose it.
        let addmv = api("api torch.addmv_(input: Tensor, mat: Tensor, vec: Tensor) -> Tensor {}");
        let complaint = "vector + matrix @ vector expected, got N, N, N";
        let cases: Vec<(Vec<Arg>, bool, Option<&str>)> = vec![
            (vec![tensor(2), tensor(2), tensor(2)], false, Some(complaint)),
            (vec![tensor(0), tensor(2), tensor(1)], false, Some("Dimension specified as N but tensor has no dimensions")),
            (vec![tensor(1), tensor(2), tensor(1)], false, Some("size mismatch, got input (N), mat (NxN), vec (N)")),
        ];
        let ran = || cases.iter().map(|(args, ok, error)| Ran { args, ok: *ok, error: *error });
        assert_eq!(silencing(&addmv, ran(), complaint, &[]), Some(vec![(0, 0), (1, 2), (2, 1)]));
        let named = crate::rules::infer::counts::named("vector + matrix @ vector expected, got 2, 2, 2");
        assert_eq!(silencing(&addmv, ran(), complaint, &named), Some(vec![(0, 1), (1, 2), (2, 1)]));
    }

    #[test]
    fn reshaping_gives_each_tensor_of_the_tuple_its_rank_and_drops_what_breaks_the_api() {
        let mv = api("api torch.mv(input: Tensor, vec: Tensor) -> Tensor { input.ndim <= 3; }");
        let base = vec![vec![tensor(2), tensor(1)]];
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let made = reshaped(&mv, &base, &[vec![(0, 3), (1, 5)], vec![(0, 4), (1, 1)]], 4, &mut rng);
        assert_eq!(made.len(), 1, "input.ndim == 4 breaks the API's constraint");
        let ranks: Vec<usize> = made[0].iter().map(|a| if let Arg::Tensor(t) = a { t.shape.len() } else { 0 }).collect();
        assert_eq!(ranks, vec![3, 5]);
        assert!(made[0].iter().all(|a| matches!(a, Arg::Tensor(t) if t.shape.iter().all(|&d| (1..=4).contains(&d)))));
    }
}
