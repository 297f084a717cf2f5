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
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::{counts, enums, kernels, ranks, reduce, stated, weaken, Candidate, Judged};
use crate::gen::{mix, values};
use crate::oracle::Status;
use crate::solve::{self, Limits};
use crate::spec::{ApiSpec, Category, Constraint, Origin, RuleSource, RuleStatus, TExpr};
use crate::wire::case::Arg;

/// Runs argument lists of one API and says how each ended.
pub trait Runner {
    /// Starts no case after `deadline`: the statuses are those of the first cases, the ones that
    /// were started (all of them when the deadline is not reached), each with libtorch's error
    /// text when the call raised.
    fn run_with_errors(&self, api: usize, cases: &[Vec<Arg>], deadline: Instant) -> Vec<(Status, Option<String>)>;

    fn run(&self, api: usize, cases: &[Vec<Arg>], deadline: Instant) -> Vec<Status> {
        self.run_with_errors(api, cases, deadline).into_iter().map(|(s, _)| s).collect()
    }
}

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
    /// Learn the value sets of string parameters from libtorch's errors (`enums`).
    pub learn_values: bool,
    /// Record how each search round chose (`ApiResult::trace`), for whoever tunes the search.
    pub trace: bool,
}

impl InferConfig {
    /// Whether a candidate that `obeying` of a batch's cases hold on is tried on those cases:
    /// they are what a fresh sample with it would be, and cost no run. Else it gets inputs of
    /// its own.
    fn on_own_cases(&self, obeying: usize) -> bool {
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
        }
    }
}

/// A candidate with its checked constraints.
#[derive(Clone, Debug)]
pub struct Checked {
    pub candidate: Candidate,
    pub constraints: Vec<Constraint>,
    /// Set for a rule its own runs validated (a value set learned by `enums`): written with
    /// this evidence.
    pub evidence: Option<Vec<(String, i64)>>,
}

impl Checked {
    /// An inferred candidate of one statement about parameter `param` of `api`, built during
    /// a search rather than checked from text: `text` (without its `;`) must say what `expr`
    /// does.
    pub fn inferred(api: &ApiSpec, name: String, param: usize, text: String, expr: TExpr, category: Category) -> Checked {
        let constraint = Constraint { expr, span: api.span, text: text.clone(), origin: Origin::Inline, category, params: vec![param] };
        Checked { candidate: Candidate { name, text: format!("{text};"), source: RuleSource::Inferred }, constraints: vec![constraint], evidence: None }
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

/// Counts of one candidate over a batch: (ok and holds, invalid and holds, ok and broken, invalid and broken).
#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    ok_holds: usize,
    bad_holds: usize,
    ok_broken: usize,
    bad_broken: usize,
}

/// A batch of cases of `api` that conform to it, with how each ended.
struct Batch {
    args: Vec<Vec<Arg>>,
    ok: Vec<bool>,
    /// Per case: libtorch's argument error, normalized (`oracle::errors::complaint`), when it
    /// rejected the case.
    errors: Vec<Option<String>>,
    /// Per rejected case: the first line of libtorch's message as it was, numbers included.
    messages: Vec<Option<String>>,
}

impl Batch {
    /// libtorch's most frequent complaint, with how many cases raised it.
    fn dominant_error(&self) -> Option<(String, usize)> {
        let mut counts: Vec<(&str, usize)> = Vec::new();
        for e in self.errors.iter().flatten() {
            match counts.iter_mut().find(|(k, _)| *k == e.as_str()) {
                Some((_, n)) => *n += 1,
                None => counts.push((e, 1)),
            }
        }
        // The first seen wins a tie, so the choice does not depend on hashing.
        counts.iter().fold(None::<(&str, usize)>, |best, &(k, n)| if best.is_none_or(|(_, b)| n > b) { Some((k, n)) } else { best }).map(|(k, n)| (k.to_string(), n))
    }

    /// The most frequent complaint as one raw message's first line, with the share of the
    /// batch that raised it.
    fn complaint(&self) -> Option<(String, f64)> {
        let (key, n) = self.dominant_error()?;
        let line = self.message(&key)?.lines().next().unwrap_or_default();
        Some((line.to_string(), n as f64 / self.ok.len().max(1) as f64))
    }

    /// One raw message of the most frequent complaint.
    fn dominant_message(&self) -> Option<&str> {
        self.message(&self.dominant_error()?.0)
    }

    /// One raw message behind complaint `key`.
    fn message(&self, key: &str) -> Option<&str> {
        let k = self.errors.iter().position(|e| e.as_deref() == Some(key))?;
        self.messages[k].as_deref()
    }

    /// The counts (ranks, lengths) one message behind complaint `key` names as wanted
    /// (`counts::named`).
    fn named_counts(&self, key: &str) -> Vec<i64> {
        self.message(key).map_or_else(Vec::new, counts::named)
    }

    /// How many cases raised one of `complaints` (the dominant ones of the rounds so far).
    fn raising(&self, complaints: &[String]) -> usize {
        self.errors.iter().filter(|e| e.as_deref().is_some_and(|e| complaints.iter().any(|c| c == e))).count()
    }

    /// The indices of the cases a candidate holds on.
    fn obeying(&self, probe: &ApiSpec) -> Vec<usize> {
        (0..self.args.len()).filter(|&k| holds(probe, &self.args[k]) == Some(true)).collect()
    }

    /// The cases at `keep`, as a batch of their own.
    fn subset(&self, keep: &[usize]) -> Batch {
        Batch {
            args: keep.iter().map(|&k| self.args[k].clone()).collect(),
            ok: keep.iter().map(|&k| self.ok[k]).collect(),
            errors: keep.iter().map(|&k| self.errors[k].clone()).collect(),
            messages: keep.iter().map(|&k| self.messages[k].clone()).collect(),
        }
    }

    fn valid_rate(&self) -> Option<f64> {
        (!self.ok.is_empty()).then(|| self.ok.iter().filter(|&&o| o).count() as f64 / self.ok.len() as f64)
    }
}

/// The assumptions that `api` allows, taken greedily in order: all of them when they fit
/// together (one z3 check), else each that fits with the ones kept before it.
fn compatible(api: &ApiSpec, assumptions: &[Constraint], limits: &Limits) -> Vec<Constraint> {
    let fits = |kept: &[Constraint]| solve::check_sat(&reduce::with(api, &[kept], None), limits).is_ok();
    if fits(assumptions) {
        return assumptions.to_vec();
    }
    let mut kept = Vec::new();
    for a in assumptions {
        kept.push(a.clone());
        if !fits(&kept) {
            kept.pop();
        }
    }
    kept
}

/// `t.numel > 0` and `t.ndim >= 1` for every tensor parameter and every element of a tensor
/// list (vacuous for an absent optional one): empty and 0-d tensors slip past many of
/// libtorch's checks.
fn nonempty_constraints(api: &ApiSpec) -> Vec<Constraint> {
    use crate::spec::{BinOp, Category, Origin, ParamType, Prop, TExpr, Value};
    api.params
        .iter()
        .enumerate()
        .filter(|(_, p)| matches!(p.ty, ParamType::Tensor | ParamType::TensorList))
        .flat_map(|(i, p)| {
            let list = p.ty == ParamType::TensorList;
            // A list's elements are bound to one quantified variable (the constraint's only one).
            let of = if list { TExpr::Bound(0) } else { TExpr::Param(i) };
            let prop = |prop| Box::new(TExpr::Prop(Box::new(of.clone()), prop));
            let each = |body: TExpr| if list { TExpr::Forall { var: 0, range: Box::new(TExpr::Param(i)), body: Box::new(body) } } else { body };
            let name = if list { "t" } else { p.name.as_str() };
            let text = |prop: &str| if list { format!("forall t in {}: t.{prop}", p.name) } else { format!("{name}.{prop}") };
            let c = |expr, text: String| Constraint { expr, span: api.span, text, origin: Origin::Inline, category: Category::Shape, params: vec![i] };
            [
                c(each(TExpr::Binary(BinOp::Gt, prop(Prop::Numel), Box::new(TExpr::Lit(Value::Int(0))))), text("numel > 0")),
                c(each(TExpr::Binary(BinOp::Ge, prop(Prop::Ndim), Box::new(TExpr::Lit(Value::Int(1))))), text("ndim >= 1")),
            ]
        })
        .collect()
}

/// The tensor parameter a constraint makes 0-d (`x.ndim == 0`).
fn rank_zero(c: &Constraint) -> Option<usize> {
    use crate::spec::{BinOp, Prop, TExpr, Value};
    match &c.expr {
        TExpr::Binary(BinOp::Eq, l, r) => match (&**l, &**r) {
            (TExpr::Prop(t, Prop::Ndim), TExpr::Lit(Value::Int(0))) => match &**t {
                TExpr::Param(p) => Some(*p),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
}

/// Whether a constraint is the `ndim >= 1` half of the non-empty assumption (of a tensor, or
/// of each element of a list).
fn is_rank_assumption(c: &Constraint) -> bool {
    use crate::spec::{BinOp, Prop, TExpr, Value};
    fn at_least_1(e: &TExpr) -> bool {
        match e {
            TExpr::Forall { body, .. } => at_least_1(body),
            TExpr::Binary(BinOp::Ge, l, r) => matches!((&**l, &**r), (TExpr::Prop(_, Prop::Ndim), TExpr::Lit(Value::Int(1)))),
            _ => false,
        }
    }
    at_least_1(&c.expr)
}

/// A stage of the search: what it assumes of the inputs, and the parameters its inputs leave
/// out (their defaults apply).
#[derive(Clone, Copy)]
struct Pass<'a> {
    assume: &'a [Constraint],
    pinned: &'a [usize],
}

/// `args` with the parameters of `pinned` left out (None where there is no default), the ones
/// that no longer conform to `api` dropped (a rule relating a left-out parameter to another was solved for a drawn value).
fn pin(api: &ApiSpec, mut args: Vec<Vec<Arg>>, pinned: &[usize]) -> Vec<Vec<Arg>> {
    if pinned.is_empty() {
        return args;
    }
    for a in &mut args {
        for &p in pinned {
            if let Some(slot) = a.get_mut(p) {
                *slot = if api.params.get(p).is_some_and(|p| p.default.is_none()) { Arg::None } else { Arg::Omitted };
            }
        }
    }
    args.retain(|a| values::conforms(api, a).iter().all(|c| *c != Some(false)));
    args
}

/// Up to this many cases, a sample skips the solver's domain exploration (`solve::sample_quick`):
/// the search's probes of one candidate are many and small, and exploring was most of their time.
const QUICK_SAMPLE: usize = 32;

/// Conforming argument lists for `api`, as many as the solver gives up to `count`.
pub(super) fn sample(api: &ApiSpec, count: usize, seed: u64, limits: &Limits, extra_check: Option<&ApiSpec>) -> Vec<Vec<Arg>> {
    let solved = if count <= QUICK_SAMPLE { solve::sample_quick(api, limits, count, seed) } else { solve::sample(api, limits, count, seed) };
    let Ok(models) = solved else { return Vec::new() };
    arguments(api, &models, seed, extra_check)
}

/// Argument lists made from solved models of `api` (values drawn with a stream of `seed`),
/// those that conform.
fn arguments(api: &ApiSpec, models: &[solve::SymModel], seed: u64, extra_check: Option<&ApiSpec>) -> Vec<Vec<Arg>> {
    let mut rng = ChaCha8Rng::seed_from_u64(mix(seed ^ 0x5eed));
    let mut out = Vec::new();
    let plan = crate::gen::plan::GenPlan::new(api);
    for m in models {
        for _ in 0..3 {
            let args = values::concretize(api, &plan, m, None, &mut rng);
            let conforms = values::conforms(api, &args).iter().all(|c| *c != Some(false));
            let extra = extra_check.is_none_or(|e| values::conforms(e, &args).iter().all(|c| *c != Some(false)));
            if conforms && extra {
                out.push(args);
                break;
            }
        }
    }
    out
}

/// Runs a batch, as much of it as starts before `deadline`; a case is `ok` when no argument or
/// schema check rejected it.
fn execute(runner: &dyn Runner, index: usize, mut args: Vec<Vec<Arg>>, deadline: Instant) -> Batch {
    let ran = runner.run_with_errors(index, &args, deadline);
    args.truncate(ran.len());
    let ok = ran.iter().map(|(s, _)| matches!(s, Status::Ok | Status::Failed)).collect();
    let messages: Vec<Option<String>> = ran
        .iter()
        .map(|(s, e)| match (s, e) {
            (Status::Invalid, Some(e)) => Some(e.lines().find(|l| !l.trim().is_empty()).unwrap_or("").to_string()),
            _ => None,
        })
        .collect();
    let errors = messages.iter().map(|m| m.as_deref().map(crate::oracle::errors::complaint)).collect();
    Batch { args, ok, errors, messages }
}

/// How many of the parameters a candidate constrains a complaint names (`self` is `input`;
/// digits are `N` in both, as `errors::complaint` writes them; `pad` names `padding`):
/// libtorch's message says which arguments it checked, and a rule relating two of them
/// (`2 * padding <= kernel_size` against "pad should be at most half of effective kernel size")
/// is likelier than one about either alone.
fn relevance(api: &ApiSpec, complaint: &str, candidate: &Checked) -> usize {
    // `N` and `T` are where the complaint's key took out a number and a dtype: no parameter's
    // name (`native_group_norm`'s `N` is not named by "greater than N").
    let words: Vec<String> = super::words(complaint).filter(|w| !matches!(*w, "N" | "T")).map(|w| w.to_ascii_lowercase()).collect();
    let text = candidate.constraints.iter().map(|c| c.text.as_str()).collect::<Vec<_>>().join(" ");
    let uses = |name: &str| super::words(&text).any(|w| w == name);
    let named = |name: &str| {
        // Numbers made uniform as in the complaint's key (`mat2` is `matn`).
        let name: String = name.to_ascii_lowercase().chars().map(|c| if c.is_ascii_digit() { 'n' } else { c }).collect();
        words.iter().any(|w| {
            *w == name
                || (name == "input" && w == "self")
                || (w.len() >= 3 && name.starts_with(w.as_str()))
                || (name.len() >= 3 && w.starts_with(name.as_str()))
                || abbreviates(&name, w)
        })
    };
    let params: Vec<&str> = api.params.iter().map(|p| p.name.as_str()).filter(|n| uses(n)).collect();
    if params.is_empty() {
        return 0;
    }
    // Any one named is enough to be relevant: `dim in -input.ndim..input.ndim` answers
    // `Dimension out of range` although the complaint does not say `input`.
    params.iter().filter(|p| named(p)).count()
}

/// Whether a parameter's name shortens each part of a word of the complaint: the schema's `w_ih`
/// is the message's `weight_ih`.
fn abbreviates(name: &str, word: &str) -> bool {
    let (parts, long): (Vec<&str>, Vec<&str>) = (name.split('_').collect(), word.split('_').collect());
    parts.len() > 1 && parts.len() == long.len() && parts.iter().zip(&long).all(|(p, l)| !p.is_empty() && l.starts_with(p))
}

/// Whether libtorch complains about dtypes (`mixed dtype`, `not implemented for 'Half'`,
/// `expected scalar type`) rather than about ranks, sizes or values.
fn about_dtypes(complaint: &str) -> bool {
    let lower = complaint.to_ascii_lowercase();
    // `T` is where `errors::complaint` took a dtype's name out ("Expected a T tensor for index").
    let names_a_dtype = super::words(complaint).any(|w| w == "T");
    names_a_dtype || ["dtype", "scalar type", "not implemented for", "type t", "can't be cast", "cannot be cast"].iter().any(|k| lower.contains(k))
}

/// Whether (1) or not (0) a candidate is of the complaint's kind: rules about dtypes for a
/// complaint about dtypes, others for the rest. A rule of the other kind silences a complaint
/// only by tripping an earlier check (`weight.ndim == 0` against `mixed dtype`).
fn same_kind(complaint: &str, candidate: &Checked) -> usize {
    let dtype_rule = candidate.constraints.iter().all(|c| c.category == crate::spec::Category::Dtype);
    usize::from(about_dtypes(complaint) == dtype_rule)
}

/// Rules accepted so far, each with the API it was checked against.
type Accepted = [(Checked, ApiSpec)];

/// The accepted rules but those at `out`.
fn without(accepted: &Accepted, out: &[usize]) -> Vec<(Checked, ApiSpec)> {
    accepted.iter().enumerate().filter(|(j, _)| !out.contains(j)).map(|(_, a)| a.clone()).collect()
}

/// At most this many accepted rules are taken back per pass for being in a candidate's way.
const MAX_DISPLACEMENTS: usize = 3;

/// Rules stronger than libtorch's check a search may take (`stronger_than_check`).
const MAX_STRONGER: usize = 2;

/// The accepted rules (indices) to take back so that `candidate` can hold with the others:
/// those in z3's unsat `core` (indices into the constraints of `current(accepted)` followed by
/// `assumed`) that this search chose, the latest one alone when that is enough, else all of
/// them. None when the core holds none of them (the API's own constraints contradict the
/// candidate) or dropping them is not enough.
fn in_the_way(
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
fn culprit(
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
fn stronger_than_check(
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

/// The rank tuple that silences the batch's most frequent complaint, looked for in the batch
/// and in one case of each tuple `ranks::tuples` lists (`ranks::silencing`).
fn silencing_ranks(api: &ApiSpec, batch: &Batch, runner: &dyn Runner, index: usize, config: &InferConfig, seed: u64, deadline: Instant) -> (Option<Vec<(usize, usize)>>, usize) {
    let Some((complaint, _)) = batch.dominant_error() else { return (None, 0) };
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let args = ranks::reshaped(api, &batch.args, &ranks::tuples(api), config.limits.max_dim, &mut rng);
    let extra = execute(runner, index, args, deadline);
    (ranks::silencing(api, ran(batch).chain(ran(&extra)), &complaint, &batch.named_counts(&complaint)), extra.ok.len())
}

fn ran(b: &Batch) -> impl Iterator<Item = ranks::Ran<'_>> {
    b.args.iter().zip(&b.ok).zip(&b.errors).map(|((args, ok), e)| ranks::Ran { args, ok: *ok, error: e.as_deref() })
}

/// Whether the candidate holds on arguments: Some(false) when some constraint is broken.
pub(super) fn holds(probe: &ApiSpec, args: &[Arg]) -> Option<bool> {
    verdict(&values::conforms(probe, args))
}

/// How many accepted cases of `batch` surely break the candidate: a value rule whose range
/// a tensor's fill range only reaches outside of may hold on the few elements drawn
/// (`index.values in 0..input.shape[dim]` on a one-element index).
fn surely_broken_by_accepted(probe: &ApiSpec, batch: &Batch) -> usize {
    let drawn = |args: &[Arg]| verdict(&values::conforms_reading(probe, args, crate::eval::Bounds::Drawn));
    batch.args.iter().zip(&batch.ok).filter(|(args, ok)| **ok && drawn(args) == Some(false)).count()
}

fn verdict(r: &[Option<bool>]) -> Option<bool> {
    if r.contains(&Some(false)) {
        Some(false)
    } else if r.iter().all(Option::is_some) {
        Some(true)
    } else {
        None
    }
}

fn tally(probe: &ApiSpec, batch: &Batch) -> Tally {
    let mut t = Tally::default();
    for (args, ok) in batch.args.iter().zip(&batch.ok) {
        match (holds(probe, args), ok) {
            (Some(true), true) => t.ok_holds += 1,
            (Some(true), false) => t.bad_holds += 1,
            (Some(false), true) => t.ok_broken += 1,
            (Some(false), false) => t.bad_broken += 1,
            (None, _) => {}
        }
    }
    t
}

/// The count an evidence list names `key` (0 when it names none).
fn evidence_count(evidence: &[(String, i64)], key: &str) -> i64 {
    evidence.iter().find(|(k, _)| k == key).map_or(0, |(_, v)| *v)
}

/// A learned value set counts under `errors`, the source of its values.
fn source_of(c: &Checked) -> String {
    if c.evidence.is_some() {
        "errors".into()
    } else {
        source_name(&c.candidate)
    }
}

fn source_name(c: &Candidate) -> String {
    match c.source {
        crate::spec::RuleSource::Manual => "manual",
        crate::spec::RuleSource::Llm => "llm",
        crate::spec::RuleSource::Inferred => "enumerative",
    }
    .to_string()
}

fn bump(counts: &mut Vec<(String, usize)>, key: String) {
    match counts.iter_mut().find(|(k, _)| *k == key) {
        Some((_, n)) => *n += 1,
        None => counts.push((key, 1)),
    }
}

/// Infers the rules of one API from candidates. `base` is the API with its current constraints
/// (validated rules included); `index` is its index for the runner. `keep_rejected`: also
/// return rejected enumerated candidates (rejected file candidates are always returned).
pub fn infer_api(base: &ApiSpec, index: usize, candidates: Vec<Checked>, runner: &dyn Runner, config: &InferConfig, keep_rejected: bool) -> ApiResult {
    // Rules an earlier inference validated while a string parameter only ever took its default
    // (`rounding_mode == None`) are refuted once its values are learned; they go before the search.
    // The sets learned here serve the search too, which learns only those still missing once
    // its rules have made the inputs valid.
    let start = Instant::now();
    let learned = if config.learn_values { enums::learn(base, index, runner, config, start + config.budget / 16) } else { Vec::new() };
    let (base, refuted) = without_refuted(base, &learned);
    let mut result = search(&base, index, candidates.clone(), learned.clone(), runner, config, keep_rejected);
    let mut restarts = 0;
    loop {
        let left = config.budget.saturating_sub(start.elapsed());
        if config.restart_below <= 0.0 || kept_rate(&result).is_some_and(|v| v >= config.restart_below) || left < config.budget / 4 {
            break;
        }
        restarts += 1;
        let again_config = InferConfig { seed: crate::seed::mix(config.seed ^ 0x7e57a7 ^ restarts as u64), budget: left, ..config.clone() };
        let mut again = search(&base, index, candidates.clone(), learned.clone(), runner, &again_config, keep_rejected);
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

/// How many of the accepted runs with learned string values break the constraints of `probe`.
fn broken_by(learned: &[enums::Learned], probe: &ApiSpec) -> usize {
    learned.iter().flat_map(|l| &l.accepted).filter(|a| holds(probe, a) == Some(false)).count()
}

/// `base` without the non-manual rules that the accepted runs of `learned` break, and those
/// rules, judged rejected.
fn without_refuted(base: &ApiSpec, learned: &[enums::Learned]) -> (ApiSpec, Vec<Judged>) {
    use crate::spec::{Origin, RuleSource};
    let mut refuted: Vec<(crate::spec::RuleMeta, usize)> = Vec::new();
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

/// The search of `infer_api` on a base whose rules stand; `learned_before`: value sets learned
/// on the base's inputs.
fn search(
    base: &ApiSpec,
    index: usize,
    candidates: Vec<Checked>,
    learned_before: Vec<enums::Learned>,
    runner: &dyn Runner,
    config: &InferConfig,
    keep_rejected: bool,
) -> ApiResult {
    let start = Instant::now();
    let search_end = start + config.budget * 3 / 4;
    let probes_end = start + config.budget * 7 / 8;
    let limits = &config.limits;
    let mut result = ApiResult { api: base.name.clone(), ..Default::default() };
    for c in &candidates {
        bump(&mut result.proposed, source_of(c));
    }
    let probe_of = |c: &Checked| {
        let mut p = base.clone();
        p.requires = c.constraints.clone();
        p
    };
    let mut remaining: Vec<(Checked, ApiSpec)> = Vec::new();
    for c in candidates {
        if c.constraints.is_empty() {
            continue;
        }
        // Enumerated candidates are many and an implied one is never chosen anyway; z3 is only
        // asked about those from the file, whose fate is reported.
        if c.candidate.source != crate::spec::RuleSource::Inferred && reduce::implied(base, &[], &c.constraints, limits) {
            result.implied += 1;
            continue;
        }
        let p = probe_of(&c);
        remaining.push((c, p));
    }
    let mut accepted: Vec<(Checked, ApiSpec)> = Vec::new();
    let current = |accepted: &[(Checked, ApiSpec)]| {
        let extra: Vec<&[Constraint]> = accepted.iter().map(|(c, _)| c.constraints.as_slice()).collect();
        reduce::with(base, &extra, None)
    };
    let mut counterexamples: Vec<(String, usize)> = Vec::new();
    let mut refused = kernels::Refused::default();
    // The figure to beat: the API as it stands.
    let before = {
        let args = sample(base, config.round_cases, mix(config.seed ^ 0xbefe ^ mix(index as u64)), limits, None);
        let batch = execute(runner, index, args, search_end);
        result.cases += batch.ok.len();
        result.valid_before = batch.valid_rate();
        batch
    };
    // Empty and 0-d tensors skip many of libtorch's checks (an empty matmul of two dtypes
    // passes), so they would refute true rules: the search first assumes non-empty tensors of
    // rank 1 or more, then looks at all inputs (which finds rules about those themselves).
    let nonempty = nonempty_constraints(base);
    // Unless every input libtorch accepted breaks that assumption (`_foreach_mul` wants a 0-d
    // `other`): rules chosen under it would be blind, and carried into the next pass. Then the
    // ranks are not assumed, but the sizes still are: that every accepted input is empty says
    // that libtorch returned before its checks (`take_along_dim` of empty float indices), not
    // that emptiness is wanted, and dropping it left dtype rules refuted by those inputs.
    let nonempty_refuted = {
        let mut probe = base.clone();
        probe.requires = nonempty.clone();
        let accepted: Vec<&Vec<Arg>> = before.args.iter().zip(&before.ok).filter(|(_, ok)| **ok).map(|(a, _)| a).collect();
        !accepted.is_empty() && accepted.iter().all(|a| holds(&probe, a) == Some(false))
    };
    let nonempty: Vec<Constraint> = if nonempty_refuted { nonempty.into_iter().filter(|c| !is_rank_assumption(c)).collect() } else { nonempty };
    let mut round = 0u64;
    let mut rejected: Vec<(Checked, Vec<(String, i64)>)> = Vec::new();
    // The complaints that were the most frequent in some round: ground the search has covered.
    let mut dominated: Vec<String> = Vec::new();
    // Rules taken without a link to the complaint they silenced (a rank tuple, or a candidate
    // naming none of the parameters the complaint names): the ones `culprit` may take back.
    let mut blind: Vec<String> = Vec::new();
    // Once the inputs are mostly valid, string parameters learn their value sets (`enums`), and
    // the search runs again: the new values may need rules of their own
    // (`rounding_mode="floor"` is not for complex inputs).
    // Few inputs valid as they stand and something to leave out: a first pass finds the rules
    // of the simplest call, with every parameter that has a default left out, and each next
    // one those of one more of them (`layer_norm`: without `weight` and `bias`, then with
    // `weight`, then with both; `conv2d`: stride, padding, dilation and groups one at a time).
    // Rules for several parameters at once are more than one greedy step finds.
    // An optional parameter without a default (`native_layer_norm`'s `weight`) is left out as
    // None.
    let defaulted: Vec<usize> = base.params.iter().enumerate().filter(|(_, p)| p.default.is_some() || p.optional).map(|(i, _)| i).collect();
    let staged = before.ok.iter().filter(|&&o| o).count() < config.few_valid && !defaulted.is_empty();
    let mut passes: Vec<Pass> = Vec::new();
    if staged {
        passes.extend((0..defaulted.len()).map(|k| Pass { assume: &nonempty, pinned: &defaulted[k..] }));
    }
    // Then, with nothing left out, non-empty inputs first and any inputs last (again once
    // values are learned).
    let full = [Pass { assume: &nonempty, pinned: &[] }, Pass { assume: &[], pinned: &[] }];
    passes.extend(full);
    let mut pass = 0;
    let mut learned_yet = !config.learn_values;
    let mut learned_before = learned_before;
    let mut strong_picks = 0;
    loop {
        if pass == passes.len() {
            if learned_yet {
                break;
            }
            learned_yet = true;
            let known: Vec<Constraint> = learned_before.iter().map(|l| l.constraint.clone()).collect();
            let mut learned = std::mem::take(&mut learned_before);
            learned.extend(enums::learn(&reduce::with(&current(&accepted), &[&known], None), index, runner, config, search_end));
            // A rule that kept the parameter from these values (`p == None`, found while the
            // only value drawn was the default) is refuted by their accepted runs.
            accepted.retain(|(c, probe)| {
                let broken = broken_by(&learned, probe);
                if broken > 0 {
                    rejected.push((c.clone(), vec![("violating_ok".into(), broken as i64)]));
                }
                broken == 0
            });
            if !learned.is_empty() {
                passes.extend(full);
            }
            for l in learned {
                bump(&mut result.proposed, "errors".into());
                let c = Checked { candidate: l.candidate, constraints: vec![l.constraint], evidence: Some(l.evidence) };
                let p = probe_of(&c);
                accepted.push((c, p));
            }
            continue;
        }
        let this = passes[pass];
        let assume = this.assume;
        pass += 1;
        let mut stuck = 0;
        let blind_before = blind.len();
        let mut displacements = 0;
        for _ in 0..config.max_rounds {
            if Instant::now() >= search_end {
                break;
            }
            round += 1;
            // A tensor a rule makes 0-d is exempt from the assumption's `ndim >= 1`.
            let zero_d: Vec<usize> = accepted.iter().flat_map(|(c, _)| c.constraints.iter().filter_map(rank_zero)).collect();
            let assumed: Vec<Constraint> = assume.iter().filter(|c| !(is_rank_assumption(c) && c.params.iter().all(|p| zero_d.contains(p)))).cloned().collect();
            let api = reduce::with(&current(&accepted), &[&assumed], None);
            let seed = mix(config.seed ^ mix(round) ^ mix(index as u64));
            let args = pin(&api, sample(&api, config.round_cases, seed, limits, None), this.pinned);
            if args.is_empty() {
                break;
            }
            let batch = execute(runner, index, args, search_end);
            result.cases += batch.ok.len();
            if batch.ok.is_empty() {
                break;
            }
            let rate = batch.valid_rate().unwrap_or(0.0);
            if rate >= config.target_valid {
                break;
            }
            // libtorch's most frequent complaint this round, counted once for the round.
            let dominant = batch.dominant_error();
            if let Some((key, _)) = &dominant {
                if !dominated.contains(key) {
                    dominated.push(key.clone());
                }
            }
            // The dtypes the kernels refused so far, as one candidate per parameter; a
            // larger set replaces its earlier version.
            refused.observe(base, &batch.args, &batch.messages);
            // And what the most frequent complaint states: a number parameter's values, a last
            // dimension's size (`stated`).
            let stated = batch.dominant_message().map_or_else(Vec::new, |m| stated::candidates(base, m));
            for c in refused.candidates(base).into_iter().chain(stated) {
                let name = c.candidate.name.as_str();
                if accepted.iter().any(|(a, _)| a.candidate.name == name) || rejected.iter().any(|(r, _)| r.candidate.name == name) {
                    continue;
                }
                if let Some(k) = remaining.iter().position(|(r, _)| r.candidate.name == name) {
                    if remaining[k].0.candidate.text == c.candidate.text {
                        continue;
                    }
                    remaining.remove(k);
                } else {
                    bump(&mut result.proposed, source_of(&c));
                }
                let p = probe_of(&c);
                remaining.push((c, p));
            }
            // Candidates no accepted input breaks, ranked by the rejected inputs they exclude.
            let mut eligible: Vec<(usize, usize)> = Vec::new();
            let mut unseen: Vec<(usize, usize)> = Vec::new();
            let mut best: Option<(usize, usize)> = None;
            for (i, (c, probe)) in remaining.iter().enumerate() {
                let t = tally(probe, &batch);
                // Accepted cases that may only have drawn values outside it say nothing yet:
                // its own probe decides, as for one the batch never obeyed.
                if t.ok_broken > 0 && surely_broken_by_accepted(probe, &batch) == 0 {
                    unseen.push((i, t.bad_broken));
                    continue;
                }
                if t.ok_broken > 0 {
                    let name = c.candidate.name.clone();
                    match counterexamples.iter_mut().find(|(n, _)| *n == name) {
                        Some((_, n)) => *n += t.ok_broken,
                        None => counterexamples.push((name, t.ok_broken)),
                    }
                    continue;
                }
                if t.bad_broken == 0 {
                    continue;
                }
                // One the batch never obeyed says nothing here (it excludes all), but a probe of
                // its own may: `stack`'s equal shapes are rare in random lists.
                if t.ok_holds + t.bad_holds == 0 {
                    unseen.push((i, t.bad_broken));
                    continue;
                }
                eligible.push((i, t.bad_broken));
                if best.is_none_or(|(_, b)| t.bad_broken > b) {
                    best = Some((i, t.bad_broken));
                }
            }
            // With few accepted inputs every candidate looks right and the one excluding most
            // is merely the most restrictive: try the likeliest ones and take the one whose own
            // inputs libtorch accepts most often.
            let accepted_inputs = batch.ok.iter().filter(|&&o| o).count();
            if accepted_inputs < config.few_valid && eligible.len() > 1 {
                // When one rule alone cannot make an input valid (stack needs `dim` in range
                // and equal shapes), the candidate that silences libtorch's most frequent
                // complaint is progress: the next round sees the next complaint. Those about
                // the parameters the complaint names are tried first.
                let dominant_about_dtypes = dominant.as_ref().is_some_and(|(key, _)| about_dtypes(key));
                let relevance = |i: usize| dominant.as_ref().map_or(0, |(key, _)| relevance(&api, key, &remaining[i].0));
                let kind = |i: usize| dominant.as_ref().map_or(0, |(key, _)| same_kind(key, &remaining[i].0));
                // "Expected 2D or 3D tensor": the ranks and lengths the complaint wanted.
                let named = dominant.as_ref().map_or_else(Vec::new, |(key, _)| batch.named_counts(key));
                let hinted = |i: usize| counts::hinted(&named, &remaining[i].0.constraints);
                let mut probing: Vec<(usize, usize)> = eligible.iter().chain(&unseen).copied().collect();
                probing.sort_by_key(|&(i, n)| (std::cmp::Reverse(relevance(i)), std::cmp::Reverse(hinted(i)), std::cmp::Reverse(kind(i)), std::cmp::Reverse(n)));
                let dominant_share = dominant.as_ref().map_or(0, |(_, c)| c * 1000 / batch.ok.len().max(1));
                // (candidate, accepted per mille, whether it relieves the complaint, relevance,
                // a count the complaint wanted, kind, per mille past the kind of check that
                // complained, per mille free of the dominant complaint, per mille raising a
                // complaint the batch did not, generality)
                type Score = (usize, bool, usize, usize, usize, usize, usize, usize, usize);
                let mut scored: Option<(usize, Score)> = None;
                let complaints: std::collections::HashSet<&str> = batch.errors.iter().flatten().map(String::as_str).collect();
                let n = batch.ok.len().max(1);
                // Candidates tried on fresh samples; those tried on the batch's own cases are
                // free, so up to four times as many candidates are looked at. The batch's own
                // cases a candidate holds on are what a fresh sample of the API with it would
                // be; solving and running anew is for the candidates too few of them obey (a
                // rank the solver rarely draws), all solved together.
                let probe_seed = |i: usize| mix(seed ^ mix(i as u64 + 1));
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
                let mut solved = solve::sample_each(&api, &to_solve, limits, config.try_cases, search_end).into_iter();
                // Candidates the accepted rules contradict, with the unsat core z3 gave.
                let mut blocked: Vec<(usize, Vec<usize>)> = Vec::new();
                // Two fifths fewer is relief: one rule of a conjunction relieves part of it
                // (`2 * padding <= kernel_size` leaves the negative dilations).
                let relieving = |ok: usize, hits_per_mille: usize| ok > 0 || hits_per_mille * 5 < dominant_share * 3;
                for (i, obeying) in looked {
                    if Instant::now() >= search_end {
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
                        let probe = reduce::with(&api, &[&remaining[i].0.constraints], None);
                        let args = arguments(&probe, &models.unwrap_or_default(), probe_seed(i), None);
                        let tried = execute(runner, index, pin(&probe, args, this.pinned), search_end);
                        result.cases += tried.ok.len();
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
                    let hits = dominant.as_ref().map_or(0, |_| tried.raising(&dominated));
                    let relieved = 1000 - hits * 1000 / len;
                    // Among equal reliefs, a complaint the batch never raised is ground not yet
                    // covered; one it did is often an earlier check the candidate trips.
                    let fresh = tried.errors.iter().flatten().filter(|e| !complaints.contains(e.as_str())).count() * 1000 / len;
                    // A candidate that relieves the complaint without naming what it names
                    // often trips an earlier check instead (`input.ndim <= 2` against a
                    // padding complaint): relevance ranks the relieving ones.
                    let relieves = relieving(ok, 1000 - relieved);
                    // Inputs that got past the kind of check that complained: a dtype rule that
                    // works moves libtorch on to its shape checks, one that trips an earlier
                    // dtype check (`weight.dtype == bool`) does not.
                    let past =
                        dominant.as_ref().map_or(0, |_| tried.errors.iter().filter(|e| e.as_deref().is_none_or(|e| about_dtypes(e) != dominant_about_dtypes)).count() * 1000 / len);
                    let score = (ok, relieves, relevance(i), hinted(i), kind(i), past, relieved, fresh, general);
                    if config.trace {
                        result.trace.push(format!("  tried {:40} {score:?}", remaining[i].0.candidate.name));
                    }
                    if scored.is_none_or(|(_, s)| score > s) {
                        scored = Some((i, score));
                    }
                }
                if let Some((i, (_, _, relevant, ..))) = scored.filter(|(_, (_, relieves, ..))| *relieves) {
                    best = Some((i, 0));
                    if relevant == 0 {
                        blind.push(remaining[i].0.candidate.name.clone());
                    }
                } else if displacements < MAX_DISPLACEMENTS {
                    // Nothing relieves the complaint, and the likeliest candidate that names what
                    // it names cannot hold with the rules taken: an early greedy pick may be the
                    // wrong one (`conv1d`: a 2-d input and a weight of the input's rank, then
                    // "weight should have at least three dimensions"). The pick in the way goes
                    // when the candidate, without it, relieves the complaint.
                    let first = blocked.into_iter().find(|(i, _)| relevance(*i) > 0);
                    let out = first.as_ref().and_then(|(i, core)| in_the_way(base, &current, &accepted, &assumed, &remaining[*i].0.constraints, core, limits));
                    if let (Some((i, _)), Some(out)) = (first, out) {
                        let probe = reduce::with(&current(&without(&accepted, &out)), &[&assumed, &remaining[i].0.constraints], None);
                        let args = pin(&probe, sample(&probe, config.try_cases, mix(probe_seed(i) ^ 0xd15), limits, None), this.pinned);
                        let tried = execute(runner, index, args, search_end);
                        result.cases += tried.ok.len();
                        let len = tried.ok.len().max(1);
                        let ok = tried.ok.iter().filter(|&&o| o).count() * 1000 / len;
                        // Relief that raises again a complaint an earlier round got past is no
                        // relief: without `addmv_`'s rank tuple, `input.ndim == mat.ndim` ends
                        // "size mismatch" by tripping "vector + matrix @ vector expected".
                        let hits = tried.raising(&dominated);
                        if !tried.ok.is_empty() && relieving(ok, hits * 1000 / len) {
                            displacements += 1;
                            let count = dominant.as_ref().map_or(0, |(_, n)| *n as i64);
                            for &j in out.iter().rev() {
                                let (c, _) = accepted.remove(j);
                                if config.trace {
                                    result.trace.push(format!("round {round}: {} is in the way of {}: dropped", c.candidate.name, remaining[i].0.candidate.name));
                                }
                                blind.retain(|n| *n != c.candidate.name);
                                rejected.push((c, vec![("contradicts_a_fix".into(), count)]));
                            }
                            best = Some((i, 0));
                        }
                    }
                }
            }
            // Nothing accepted and no one rule relieved the complaint: the ranks of several
            // tensors may have to change together (`ranks`).
            if accepted_inputs == 0 && !matches!(best, Some((_, 0))) {
                // Ranks are what the tuples try, 0 among them: the assumption's `ndim >= 1`
                // does not bind them.
                let unranked: Vec<Constraint> = assumed.iter().filter(|c| !is_rank_assumption(c)).cloned().collect();
                let free = reduce::with(&current(&accepted), &[&unranked], None);
                let (tuple, probed) = silencing_ranks(&free, &batch, runner, index, config, mix(seed ^ 0x7a2c), search_end);
                result.cases += probed;
                if let Some(tuple) = tuple {
                    let mut moved = Vec::new();
                    for (p, r) in tuple {
                        let name = format!("{}_ndim_{r}", api.params[p].name);
                        if let Some(k) = remaining.iter().position(|(c, _)| c.candidate.name == name) {
                            accepted.push(remaining.remove(k));
                            blind.push(name.clone());
                            moved.push(name);
                        }
                    }
                    if !moved.is_empty() {
                        if config.trace {
                            result.trace.push(format!("round {round}: {} cases, valid {rate:.2}, ranks {moved:?}", batch.ok.len()));
                        }
                        continue;
                    }
                }
                // Still nothing: a rule taken blind may be what libtorch now complains about.
                let (culprit, probed) = culprit(&current, &accepted, &blind, &dominated, this, &batch, runner, index, config, seed, search_end);
                result.cases += probed;
                if let Some((k, hits)) = culprit {
                    let (c, _) = accepted.remove(k);
                    if config.trace {
                        result.trace.push(format!("round {round}: {} cases, valid {rate:.2}, dropped {} ({hits} inputs complain with it)", batch.ok.len(), c.candidate.name));
                    }
                    rejected.push((c, vec![("conforming_rejected".into(), hits as i64)]));
                    continue;
                }
                // Among several, the candidate excluding the most is a blind guess when nothing is
                // accepted: taken once (it may be the one whose own inputs the solver could not
                // make), but a second blind round ends the pass; the next one, without the
                // non-empty assumption, may reach what this one cannot (`value.ndim == 0`).
                if eligible.len() > 1 {
                    stuck += 1;
                    if stuck > 1 {
                        if config.trace {
                            result.trace.push(format!("round {round}: {} cases, valid 0, complaint {:?}: stuck, pass ends", batch.ok.len(), batch.dominant_error()));
                        }
                        // What this pass guessed led nowhere: the next pass starts without it
                        // (`linspace`'s guessed `end.ndim == 1` would keep the 0-d pair away).
                        for name in blind.drain(blind_before..) {
                            if let Some(k) = accepted.iter().position(|(c, _)| c.candidate.name == name) {
                                remaining.push(accepted.remove(k));
                            }
                        }
                        break;
                    }
                    if let Some((i, _)) = best {
                        blind.push(remaining[i].0.candidate.name.clone());
                    }
                }
            } else {
                stuck = 0;
            }
            if best.is_none() && strong_picks < MAX_STRONGER {
                let (pick, probed) = stronger_than_check(&api, &remaining, &batch, this.pinned, runner, index, config, seed, search_end);
                result.cases += probed;
                if let Some(i) = pick {
                    strong_picks += 1;
                    best = Some((i, 0));
                    if config.trace {
                        result.trace.push(format!("round {round}: {} is stronger than the check, taken", remaining[i].0.candidate.name));
                    }
                }
            }
            if config.trace {
                result.trace.push(format!(
                    "round {round}: {} cases, valid {rate:.2}, complaint {:?}, best {:?}",
                    batch.ok.len(),
                    batch.dominant_error(),
                    best.map(|(i, n)| (remaining[i].0.candidate.name.clone(), n))
                ));
                for (c, probe) in &remaining {
                    let t = tally(probe, &batch);
                    result.trace.push(format!("    {:40} {t:?}", c.candidate.name));
                }
            }
            let Some((i, _)) = best else { break };
            let chosen = remaining.remove(i);
            // Candidates the new set implies break no conforming input from now on, so they are
            // never chosen; no need to ask z3 about them here.
            accepted.push(chosen);
        }
    }

    // Probe each accepted rule alone: break it, keep the others. The non-empty assumption
    // keeps only the parts the accepted rules allow: a rule taken in the pass over all inputs
    // (`value.ndim == 0`) contradicts `value.ndim >= 1`, and would leave the verify batch and
    // every probe without a case, each rule kept unprobed.
    let nonempty = compatible(&current(&accepted), &nonempty, limits);
    let mut judged_ok: Vec<(Checked, [i64; 2])> = Vec::new();
    let verify_rate = {
        let api = reduce::with(&current(&accepted), &[&nonempty], None);
        let args = sample(&api, config.verify_cases, mix(config.seed ^ 0xfeed ^ mix(index as u64)), limits, None);
        let batch = execute(runner, index, args, probes_end);
        result.cases += batch.ok.len();
        if config.trace {
            result.trace.push(format!("verify: {} cases, valid {:?}, complaint {:?}", batch.ok.len(), batch.valid_rate(), batch.dominant_error()));
        }
        batch.valid_rate().unwrap_or(0.0)
    };
    let probed_from = rejected.len();
    let mut k = 0;
    while k < accepted.len() {
        // A learned value set was probed by its own runs (the probe string).
        if let Some(evidence) = &accepted[k].0.evidence {
            judged_ok.push((accepted[k].0.clone(), [evidence_count(evidence, "probe_rejected"), evidence_count(evidence, "probe_ok")]));
            k += 1;
            continue;
        }
        let others: Vec<&[Constraint]> = accepted.iter().enumerate().filter(|(j, _)| *j != k).map(|(_, (c, _))| c.constraints.as_slice()).collect();
        let mut with_nonempty = others.clone();
        with_nonempty.push(&nonempty);
        let probe_api = reduce::with(base, &with_nonempty, Some(&accepted[k].0.constraints));
        let args = sample(&probe_api, config.probe_cases, mix(config.seed ^ mix(k as u64 + 77) ^ mix(index as u64)), limits, None);
        // Keep only inputs that really break the rule.
        let args: Vec<Vec<Arg>> = args.into_iter().filter(|a| holds(&accepted[k].1, a) == Some(false)).collect();
        // A probe the deadline left without cases keeps the rule on the search's evidence, as
        // one for which no violating input could be made.
        let batch = execute(runner, index, args, probes_end);
        result.cases += batch.ok.len();
        let passed = batch.ok.iter().filter(|&&o| o).count() as i64;
        let failed = batch.ok.len() as i64 - passed;
        let viol_rate = if batch.ok.is_empty() { 0.0 } else { passed as f64 / batch.ok.len() as f64 };
        if config.trace {
            result.trace.push(format!("probe: {} broken: {passed} ran, {failed} rejected (conforming: {verify_rate:.2} ran)", accepted[k].0.candidate.name));
        }
        if batch.ok.is_empty() || viol_rate <= (0.25 * verify_rate).max(0.02) {
            // Inputs breaking it ran: it is stronger than libtorch's check. Candidates that
            // explain its rejections and keep those inputs take its place, and are probed in
            // turn (each replacement is taken from `remaining`, so this ends).
            if let Some(mut chosen) = weaken::replacements(&remaining, &counterexamples, &batch.args, &batch.ok) {
                if config.trace {
                    let names: Vec<&str> = chosen.iter().map(|&i| remaining[i].0.candidate.name.as_str()).collect();
                    result.trace.push(format!("probe: {} refused {passed} valid inputs, replaced by {names:?}", accepted[k].0.candidate.name));
                }
                chosen.sort_unstable();
                let c = weaken::swap(&mut accepted, &mut remaining, &mut judged_ok, &mut k, &chosen);
                rejected.push((c, vec![("violating_ok".into(), passed), ("violating_rejected".into(), failed)]));
                continue;
            }
            judged_ok.push((accepted[k].0.clone(), [failed, passed]));
        } else {
            rejected.push((accepted[k].0.clone(), vec![("violating_ok".into(), passed), ("violating_rejected".into(), failed)]));
        }
        k += 1;
    }
    // Drop validated rules implied by the others.
    let sets: Vec<Vec<Constraint>> = judged_ok.iter().map(|(c, _)| c.constraints.clone()).collect();
    let keep = reduce::minimal(base, &sets, limits);
    let mut judged_ok: Vec<(Checked, [i64; 2])> = judged_ok.into_iter().enumerate().filter(|(i, _)| keep.contains(i)).map(|(_, x)| x).collect();

    // Final figure: conforming inputs of the validated set.
    let final_batch = |judged: &[(Checked, [i64; 2])]| {
        let extra: Vec<&[Constraint]> = judged.iter().map(|(c, _)| c.constraints.as_slice()).collect();
        let args = sample(&reduce::with(base, &extra, None), config.verify_cases, mix(config.seed ^ 0xf1a1 ^ mix(index as u64)), limits, None);
        execute(runner, index, args, (start + config.budget).max(Instant::now() + config.budget / 8))
    };
    let mut batch = final_batch(&judged_ok);
    result.cases += batch.ok.len();
    if config.trace && batch.ok.is_empty() {
        let extra: Vec<&[Constraint]> = judged_ok.iter().map(|(c, _)| c.constraints.as_slice()).collect();
        let why = solve::check_sat(&reduce::with(base, &extra, None), limits).err();
        let names: Vec<&str> = judged_ok.iter().map(|(c, _)| c.candidate.name.as_str()).collect();
        result.trace.push(format!("final: no case from {names:?}: {why:?}"));
    }
    // The probes dropped rules that are stronger than libtorch's checks. When the inputs are
    // much less often valid without them, they also carried a check no kept rule makes (a
    // window that fits the input, written as one of its sizes): narrower inputs beat invalid
    // ones, so they return, with their probes' evidence.
    if rejected.len() > probed_from && batch.valid_rate().is_some_and(|v| v < verify_rate - 0.1) {
        let mut with_back = judged_ok.clone();
        with_back.extend(rejected[probed_from..].iter().map(|(c, ev)| (c.clone(), [evidence_count(ev, "violating_rejected"), evidence_count(ev, "violating_ok")])));
        let again = final_batch(&with_back);
        result.cases += again.ok.len();
        if config.trace {
            let names: Vec<&str> = rejected[probed_from..].iter().map(|(c, _)| c.candidate.name.as_str()).collect();
            result.trace.push(format!("final: {:?} valid without {names:?}, {:?} with them", batch.valid_rate(), again.valid_rate()));
        }
        if again.valid_rate() > batch.valid_rate() {
            rejected.truncate(probed_from);
            judged_ok = with_back;
            batch = again;
        }
    }
    if config.trace {
        result.trace.push(format!("final: {} cases, valid {:?}, complaint {:?}", batch.ok.len(), batch.valid_rate(), batch.dominant_error()));
    }
    result.valid_after = batch.valid_rate();
    let pass = batch.ok.iter().filter(|&&o| o).count() as i64;
    let fail = batch.ok.len() as i64 - pass;

    // A search that did not reach a useful valid-input rate found no explanation; its rules
    // would only be guesses that happen to narrow the inputs.
    let conclusive = result.valid_after.is_some_and(|v| v >= config.min_valid && Some(v) > result.valid_before);
    result.conclusive = conclusive || judged_ok.is_empty();
    // What still stops the inputs: those of the kept rules, or of the API as it was when its
    // rules go.
    let left = if conclusive || judged_ok.is_empty() { &batch } else { &before };
    if left.valid_rate().is_some_and(|v| v < config.target_valid) {
        result.complaint = left.complaint();
    }
    // A learned value set widens the inputs rather than narrowing them: it stays when they
    // remain valid enough, even if no more valid than before.
    let widening_ok = result.valid_after.is_some_and(|v| v >= config.min_valid);
    let judged_ok: Vec<(Checked, [i64; 2])> = judged_ok.into_iter().filter(|(c, _)| conclusive || (widening_ok && c.evidence.is_some())).collect();
    for (c, [viol_rejected, viol_ok]) in judged_ok {
        bump(&mut result.validated, source_of(&c));
        let total = viol_rejected + viol_ok;
        let confidence = (viol_rejected as f64 + 1.0) / (total as f64 + 2.0);
        let mut evidence = vec![("pass".into(), pass), ("fail".into(), fail)];
        match c.evidence {
            Some(own) => evidence.extend(own),
            None => evidence.extend([("violating_rejected".into(), viol_rejected), ("violating_ok".into(), viol_ok)]),
        }
        result.rules.push(Judged { candidate: c.candidate, status: RuleStatus::Validated, confidence: Some((confidence * 100.0).round() / 100.0), evidence });
    }
    let mut out_rejected: Vec<Judged> = Vec::new();
    for (c, evidence) in rejected {
        out_rejected.push(Judged { candidate: c.candidate, status: RuleStatus::Rejected, confidence: None, evidence });
    }
    for (c, _) in remaining {
        if let Some((_, n)) = counterexamples.iter().find(|(name, _)| *name == c.candidate.name) {
            out_rejected.push(Judged { candidate: c.candidate, status: RuleStatus::Rejected, confidence: None, evidence: vec![("violating_ok".into(), *n as i64)] });
        }
    }
    for j in out_rejected {
        bump(&mut result.rejected, source_name(&j.candidate));
        if keep_rejected || j.candidate.source != crate::spec::RuleSource::Inferred {
            result.rules.push(j);
        }
    }
    result.seconds = start.elapsed().as_secs_f64();
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solve::SymValue;
    use crate::wire::case::DType;
    use std::path::Path;

    /// The rules of a checked file as candidates, before any evidence.
    /// Candidates solved together in one context (`solve::sample_each`) each get models that
    /// obey them, a rank beyond the shared declarations included, and none leaks into the next.
    #[test]
    fn candidates_solved_together_each_hold() {
        let src = "api torch.add(input: Tensor, other: Tensor) -> Tensor {}\n";
        let checked = crate::check::check_text(Path::new("t.sfz"), src);
        let names = ["input_ndim_2", "input_other_same_shape", "input_ndim_5", "input_ndim_1"];
        let cands: Vec<Candidate> = super::super::enumerate::candidates(&checked.spec.apis[0]).into_iter().filter(|c| names.contains(&c.name.as_str())).collect();
        let text = super::super::rules_text("torch.add", &cands, None);
        let checked = crate::check::check_text(Path::new("t.sfz"), &format!("{src}\n{text}"));
        let rules = candidates_of(&checked.spec);
        assert_eq!(rules.len(), 4);
        let extras: Vec<(&[Constraint], u64)> = rules.iter().map(|c| (c.constraints.as_slice(), 7)).collect();
        let solved = solve::sample_each(&checked.spec.apis[0], &extras, &Limits::default(), 8, Instant::now() + Duration::from_secs(120));
        assert_eq!(solved.len(), 4);
        for (rule, models) in rules.iter().zip(solved) {
            let models = models.unwrap();
            assert!(models.len() > 2, "{}: {models:?}", rule.candidate.name);
            for m in &models {
                let (SymValue::Tensor { shape: a, .. }, SymValue::Tensor { shape: b, .. }) = (&m[0], &m[1]) else { panic!("{m:?}") };
                let holds = match rule.candidate.name.as_str() {
                    "input_ndim_1" => a.len() == 1,
                    "input_ndim_2" => a.len() == 2,
                    "input_ndim_5" => a.len() == 5,
                    _ => a == b,
                };
                assert!(holds, "{}: {m:?}", rule.candidate.name);
            }
        }
    }

    fn candidates_of(spec: &crate::spec::Spec) -> Vec<Checked> {
        spec.rules
            .iter()
            .map(|r| Checked {
                candidate: Candidate { name: r.meta.name.clone(), text: r.constraints[0].text.clone(), source: crate::spec::RuleSource::Inferred },
                constraints: r.constraints.clone(),
                evidence: None,
            })
            .collect()
    }

    /// Accepts a call when `other` (the second argument) is 0-d, as `_foreach_mul.Tensor` does.
    struct WantsScalarOther;
    impl Runner for WantsScalarOther {
        fn run_with_errors(&self, _: usize, cases: &[Vec<Arg>], _: Instant) -> Vec<(Status, Option<String>)> {
            cases
                .iter()
                .map(|args| match &args[1] {
                    Arg::Tensor(t) if t.shape.is_empty() => (Status::Ok, None),
                    _ => (Status::Invalid, Some("scalar tensor expected to be 0 dim".into())),
                })
                .collect()
        }
    }

    /// Checks an index's dtype as `take_along_dim` does, after returning early on an empty one,
    /// then the input's.
    struct EarlyOnEmptyIndex;
    impl Runner for EarlyOnEmptyIndex {
        fn run_with_errors(&self, _: usize, cases: &[Vec<Arg>], _: Instant) -> Vec<(Status, Option<String>)> {
            cases
                .iter()
                .map(|args| match (&args[0], &args[1]) {
                    (_, Arg::Tensor(i)) if i.shape.contains(&0) => (Status::Ok, None),
                    (_, Arg::Tensor(i)) if i.dtype != DType::Int64 => (Status::Invalid, Some("gather(): Expected dtype int64 for index".into())),
                    (Arg::Tensor(x), _) if x.dtype != DType::Float64 => (Status::Invalid, Some("expected scalar type Double".into())),
                    _ => (Status::Ok, None),
                })
                .collect()
        }
    }

    /// Takes any positive window `k`, but during the search (its first deadline) only one of
    /// the input's first size: the search's batches then never show the rule
    /// `k == input.shape[0]` too strong, and the end probes do, as when the search's samples
    /// happen to miss the inputs that would refute it.
    #[derive(Default)]
    struct WindowFitsLater {
        search_end: std::sync::Mutex<Option<Instant>>,
    }
    impl Runner for WindowFitsLater {
        fn run_with_errors(&self, _: usize, cases: &[Vec<Arg>], deadline: Instant) -> Vec<(Status, Option<String>)> {
            let searching = *self.search_end.lock().unwrap().get_or_insert(deadline) == deadline;
            cases
                .iter()
                .map(|args| match (&args[0], &args[1]) {
                    (Arg::Tensor(t), Arg::Int(k)) if t.shape.first().is_some_and(|n| if searching { k == n && *n >= 1 } else { *k >= 1 }) => (Status::Ok, None),
                    _ => (Status::Invalid, Some("kernel size should be at most the input size".into())),
                })
                .collect()
        }
    }

    /// Pads the last dimension by `pad`, which may crop, as `replication_pad1d` does: valid while
    /// the output keeps an element.
    struct CropsToEmpty;
    impl Runner for CropsToEmpty {
        fn run_with_errors(&self, _: usize, cases: &[Vec<Arg>], _: Instant) -> Vec<(Status, Option<String>)> {
            cases
                .iter()
                .map(|args| match (&args[0], &args[1]) {
                    (Arg::Tensor(t), Arg::Int(pad)) if t.shape.last().is_some_and(|w| w + pad >= 1) => (Status::Ok, None),
                    _ => (Status::Invalid, Some("input is too small. Calculated output W: 0".into())),
                })
                .collect()
        }
    }

    /// No candidate says what the check does (`input.shape[-1] + pad >= 1`), and the nearest,
    /// `pad >= 0`, excludes some accepted inputs: it is taken as stronger than the check, and
    /// stays because the inputs need it.
    #[test]
    fn a_rule_stronger_than_the_check_is_taken_when_nothing_else_relieves() {
        let src = "api torch.pad(input: Tensor, pad: int) -> Tensor {}\n\
            #[status(candidate)] rule input_ndim_at_least_1 for torch.pad { input.ndim >= 1; }\n\
            #[status(candidate)] rule pad_nonnegative for torch.pad { pad >= 0; }\n";
        let checked = crate::check::check_text(Path::new("t.sfz"), src);
        assert!(!checked.has_errors(), "{:?}", checked.diags.iter().map(|d| &d.message).collect::<Vec<_>>());
        let config = InferConfig { budget: Duration::from_secs(20), learn_values: false, trace: true, ..InferConfig::default() };
        let result = infer_api(&checked.spec.apis[0], 0, candidates_of(&checked.spec), &CropsToEmpty, &config, true);
        assert!(result.trace.iter().any(|t| t.contains("pad_nonnegative is stronger than the check")), "{:?}", result.trace);
        let rule = result.rules.iter().find(|r| r.candidate.name == "pad_nonnegative").expect("kept");
        assert_eq!(rule.status, RuleStatus::Validated, "{result:?}");
        assert!(result.valid_after.is_some_and(|v| v >= 0.9), "{result:?}");
    }

    /// Rejects as `stack` does: first a `dim` out of range for the new dimension, then tensors
    /// of different shapes.
    struct StackLike;
    impl Runner for StackLike {
        fn run_with_errors(&self, _: usize, cases: &[Vec<Arg>], _: Instant) -> Vec<(Status, Option<String>)> {
            cases
                .iter()
                .map(|args| {
                    let (Arg::TensorList(ts), dim) = (&args[0], &args[1]) else { return (Status::Invalid, None) };
                    let dim = match dim {
                        Arg::Int(d) => *d,
                        _ => 0,
                    };
                    let n = ts[0].shape.len() as i64 + 1;
                    if dim < -n || dim >= n {
                        return (Status::Invalid, Some(format!("Dimension out of range (expected to be in range of [{}, {}], but got {dim})", -n, n - 1)));
                    }
                    if ts.iter().any(|t| t.shape != ts[0].shape) {
                        return (Status::Invalid, Some(format!("stack expects each tensor to be equal size, but got {:?} at entry 0", ts[0].shape)));
                    }
                    (Status::Ok, None)
                })
                .collect()
        }
    }

    /// Two rules are needed before any input is valid; the search takes first the one that
    /// silences libtorch's most frequent complaint rather than the one excluding the most (a
    /// blind choice, such as `len(tensors) == dim`, that leaves no valid input).
    #[test]
    fn without_valid_inputs_the_dominant_error_guides_the_search() {
        let checked = crate::check::check_text(Path::new("t.sfz"), "api torch.stack(tensors: Tensor[], dim: int = 0) -> Tensor {}\n");
        let base = checked.spec.apis[0].clone();
        let src =
            format!("api torch.stack(tensors: Tensor[], dim: int = 0) -> Tensor {{}}\n{}", super::super::rules_text(&base.name, &super::super::enumerate::candidates(&base), None));
        let checked = crate::check::check_text(Path::new("t.sfz"), &src);
        assert!(!checked.has_errors());
        let candidates: Vec<Checked> = candidates_of(&checked.spec);
        let config = InferConfig { budget: Duration::from_secs(40), learn_values: false, trace: true, ..InferConfig::default() };
        // Several API indices: each seeds the search differently.
        for index in 0..3 {
            let result = infer_api(&base, index, candidates.clone(), &StackLike, &config, false);
            assert!(
                result.valid_after.is_some_and(|v| v >= 0.9),
                "index {index}: {result:?}\n{}",
                result.trace.iter().filter(|l| !l.starts_with("    ")).cloned().collect::<Vec<_>>().join("\n")
            );
        }
    }

    /// Rejects as `select` does: a 0-d input, a `dim` out of range, then an index outside
    /// `-size..size` of that dimension.
    struct SelectLike;
    impl Runner for SelectLike {
        fn run_with_errors(&self, _: usize, cases: &[Vec<Arg>], _: Instant) -> Vec<(Status, Option<String>)> {
            cases
                .iter()
                .map(|args| {
                    let (Arg::Tensor(t), Arg::Int(dim), Arg::Int(index)) = (&args[0], &args[1], &args[2]) else { return (Status::Invalid, None) };
                    let n = t.shape.len() as i64;
                    if n == 0 {
                        return (Status::Invalid, Some("select() cannot be applied to a 0-dim tensor.".into()));
                    }
                    if *dim < -n || *dim >= n {
                        return (Status::Invalid, Some(format!("Dimension out of range (expected to be in range of [{}, {}], but got {dim})", -n, n - 1)));
                    }
                    let size = t.shape[dim.rem_euclid(n) as usize];
                    if *index < -size || *index >= size {
                        return (Status::Invalid, Some(format!("select(): index {index} out of range for tensor of size {:?} at dimension {dim}", t.shape)));
                    }
                    (Status::Ok, None)
                })
                .collect()
        }
    }

    /// An int that is a position along another int's dimension, negative ones counting from the
    /// end: the search finds the rule that says so, not `index <= size`, which lets the size
    /// itself through.
    #[test]
    fn a_position_along_a_dimension_is_found() {
        let checked = crate::check::check_text(Path::new("t.sfz"), "api torch.select(input: Tensor, dim: int, index: int) -> Tensor {}\n");
        let base = checked.spec.apis[0].clone();
        let src = format!(
            "api torch.select(input: Tensor, dim: int, index: int) -> Tensor {{}}\n{}",
            super::super::rules_text(&base.name, &super::super::enumerate::candidates(&base), None)
        );
        let checked = crate::check::check_text(Path::new("t.sfz"), &src);
        assert!(!checked.has_errors());
        let config = InferConfig { budget: Duration::from_secs(40), learn_values: false, trace: true, ..InferConfig::default() };
        let result = infer_api(&base, 0, candidates_of(&checked.spec), &SelectLike, &config, false);
        let trace = || result.trace.iter().filter(|l| !l.starts_with("    ")).cloned().collect::<Vec<_>>().join("\n");
        assert!(result.valid_after.is_some_and(|v| v >= 0.9), "{:?}\n{}", result.valid_after, trace());
        assert!(result.rules.iter().any(|r| r.candidate.name == "index_position_in_input_dim" && r.status == RuleStatus::Validated), "{}", trace());
    }

    /// When libtorch accepts none of the non-empty, rank >= 1 inputs the first pass assumes but
    /// some unrestricted ones, the search starts from all inputs: choosing under the assumption
    /// would be blind and would carry its choices (`other.ndim == 1`) into the next pass.
    #[test]
    fn inputs_accepted_only_when_empty_leave_the_sizes_assumed() {
        // Random dtypes rarely give int64 indices and a float64 input together, so the inputs
        // accepted before the search are the empty ones; they must not refute the dtype rules.
        let src = "api torch.take_along_dim(input: Tensor, indices: Tensor) -> Tensor {}\n\
            #[status(candidate)] rule indices_floating for torch.take_along_dim { indices.dtype in [float16, bfloat16, float32, float64]; }\n\
            #[status(candidate)] rule indices_int64 for torch.take_along_dim { indices.dtype in [int64]; }\n\
            #[status(candidate)] rule input_float64 for torch.take_along_dim { input.dtype in [float64]; }\n";
        let checked = crate::check::check_text(Path::new("t.sfz"), src);
        assert!(!checked.has_errors(), "{:?}", checked.diags.iter().map(|d| &d.message).collect::<Vec<_>>());
        let base = checked.spec.apis[0].clone();
        let candidates: Vec<Checked> = candidates_of(&checked.spec);
        let config = InferConfig { budget: Duration::from_secs(20), learn_values: false, ..InferConfig::default() };
        let result = infer_api(&base, 0, candidates, &EarlyOnEmptyIndex, &config, false);
        assert!(result.valid_after.is_some_and(|v| v >= 0.9), "{result:?}");
        let names: Vec<&str> = result.rules.iter().map(|r| r.candidate.name.as_str()).collect();
        assert_eq!(names, ["indices_int64", "input_float64"], "{result:?}");
    }

    #[test]
    fn a_rule_stronger_than_the_check_stays_when_the_inputs_need_it() {
        // `k == input.shape[0]` is stronger than the check (`k >= 1`), so its probe finds inputs
        // breaking it that run; but without it many inputs are rejected.
        let src = "api torch.pool(input: Tensor, k: int) -> Tensor {}\n\
            #[status(candidate)] rule k_is_the_size for torch.pool { k == input.shape[0]; }\n\
            #[status(candidate)] rule input_ndim_at_least_1 for torch.pool { input.ndim >= 1; }\n";
        let checked = crate::check::check_text(Path::new("t.sfz"), src);
        assert!(!checked.has_errors(), "{:?}", checked.diags.iter().map(|d| &d.message).collect::<Vec<_>>());
        let candidates: Vec<Checked> = candidates_of(&checked.spec);
        let config = InferConfig { budget: Duration::from_secs(20), learn_values: false, trace: true, ..InferConfig::default() };
        let result = infer_api(&checked.spec.apis[0], 0, candidates, &WindowFitsLater::default(), &config, true);
        let rule = result.rules.iter().find(|r| r.candidate.name == "k_is_the_size").expect("kept");
        assert_eq!(rule.status, RuleStatus::Validated, "{result:?}");
        let violating_ok = rule.evidence.iter().find(|(k, _)| k == "violating_ok").map(|(_, v)| *v);
        assert!(violating_ok.is_some_and(|v| v > 0), "{:?}", rule.evidence);
        assert!(result.trace.iter().any(|t| t.contains("valid without [\"k_is_the_size\"]")), "{:?}", result.trace);
    }

    #[test]
    fn the_end_probes_assume_only_what_the_rules_allow() {
        let src = "api torch.masked_fill(input: Tensor, mask: Tensor, value: Tensor) -> Tensor { value.ndim == 0; }\n";
        let checked = crate::check::check_text(Path::new("t.sfz"), src);
        let api = &checked.spec.apis[0];
        let kept: Vec<String> = compatible(api, &nonempty_constraints(api), &InferConfig::default().limits).into_iter().map(|c| c.text).collect();
        assert_eq!(kept, ["input.numel > 0", "input.ndim >= 1", "mask.numel > 0", "mask.ndim >= 1", "value.numel > 0"]);
    }

    #[test]
    fn a_wrong_nonempty_assumption_is_dropped() {
        let src = "api torch._foreach_mul(input: Tensor[], other: Tensor) -> Tensor[] {}\n\
            #[status(candidate)] rule other_ndim_1 for torch._foreach_mul { other.ndim == 1; }\n\
            #[status(candidate)] rule other_nonempty for torch._foreach_mul { other.numel > 0; }\n\
            #[status(candidate)] rule other_ndim_0 for torch._foreach_mul { other.ndim == 0; }\n\
            #[status(candidate)] rule other_ndim_at_least_2 for torch._foreach_mul { other.ndim >= 2; }\n";
        let checked = crate::check::check_text(Path::new("t.sfz"), src);
        assert!(!checked.has_errors(), "{:?}", checked.diags.iter().map(|d| &d.message).collect::<Vec<_>>());
        let base = checked.spec.apis[0].clone();
        let candidates: Vec<Checked> = candidates_of(&checked.spec);
        let mut base = base;
        base.requires.clear();
        let config = InferConfig { budget: Duration::from_secs(20), learn_values: false, ..InferConfig::default() };
        let result = infer_api(&base, 0, candidates, &WantsScalarOther, &config, false);
        assert!(result.valid_before.is_some_and(|v| v > 0.0 && v < 0.9), "{result:?}");
        assert!(result.valid_after.is_some_and(|v| v >= 0.9), "{result:?}");
        let names: Vec<&str> = result.rules.iter().map(|r| r.candidate.name.as_str()).collect();
        assert_eq!(names, ["other_ndim_0"], "{result:?}");
    }

    /// Refuses the first `after` cases with a complaint nothing explains, then checks as `inner`
    /// does: a search whose draws were all refused, as an unlucky draw can leave one.
    struct RefusesAtFirst<R> {
        after: usize,
        seen: std::sync::atomic::AtomicUsize,
        inner: R,
    }
    impl<R: Runner> Runner for RefusesAtFirst<R> {
        fn run_with_errors(&self, api: usize, cases: &[Vec<Arg>], deadline: Instant) -> Vec<(Status, Option<String>)> {
            let seen = self.seen.fetch_add(cases.len(), std::sync::atomic::Ordering::SeqCst);
            let refused = cases.len().min(self.after.saturating_sub(seen));
            let mut out: Vec<(Status, Option<String>)> = (0..refused).map(|_| (Status::Invalid, Some("something went wrong".into()))).collect();
            out.extend(self.inner.run_with_errors(api, &cases[refused..], deadline));
            out
        }
    }

    /// A search that ends below `restart_below` starts again with another seed, and the better
    /// end is kept: here the first one saw only refusals, the second finds the rule.
    #[test]
    fn a_search_that_ends_low_starts_again() {
        let src = "api torch._foreach_mul(input: Tensor[], other: Tensor) -> Tensor[] {}\n\
            #[status(candidate)] rule other_ndim_1 for torch._foreach_mul { other.ndim == 1; }\n\
            #[status(candidate)] rule other_ndim_0 for torch._foreach_mul { other.ndim == 0; }\n";
        let checked = crate::check::check_text(Path::new("t.sfz"), src);
        assert!(!checked.has_errors(), "{:?}", checked.diags.iter().map(|d| &d.message).collect::<Vec<_>>());
        let base = checked.spec.apis[0].clone();
        // The first search alone, to count the cases it runs: all of them refused.
        let once = InferConfig { budget: Duration::from_secs(20), learn_values: false, restart_below: 0.0, ..InferConfig::default() };
        let first = RefusesAtFirst { after: usize::MAX, seen: 0.into(), inner: WantsScalarOther };
        let alone = infer_api(&base, 0, candidates_of(&checked.spec), &first, &once, false);
        assert!(alone.restarts == 0 && alone.valid_after.is_none_or(|v| v < 0.5), "{alone:?}");
        let runner = RefusesAtFirst { after: first.seen.into_inner(), seen: 0.into(), inner: WantsScalarOther };
        let config = InferConfig { restart_below: 0.9, trace: true, ..once };
        let result = infer_api(&base, 0, candidates_of(&checked.spec), &runner, &config, false);
        assert!(result.restarts >= 1, "{:?}", result.trace);
        assert!(result.valid_after.is_some_and(|v| v >= 0.9), "{result:?}");
        let names: Vec<&str> = result.rules.iter().map(|r| r.candidate.name.as_str()).collect();
        assert_eq!(names, ["other_ndim_0"], "{:?}", result.trace);
    }

    /// Refuses as `binary_cross_entropy` does: a non-floating `input`, then one with an
    /// element outside [0, 1].
    struct WantsProbabilities;
    impl Runner for WantsProbabilities {
        fn run_with_errors(&self, _: usize, cases: &[Vec<Arg>], _: Instant) -> Vec<(Status, Option<String>)> {
            use crate::wire::case::Fill;
            let in_unit = |t: &crate::wire::case::TensorRecipe| {
                t.numel() == 0
                    || match t.fill {
                        Fill::Uniform { lo, hi } => lo >= 0.0 && hi <= 1.0,
                        Fill::Int { lo, hi } => lo >= 0 && hi <= 2,
                        Fill::Constant(c) => (0.0..=1.0).contains(&c),
                    }
            };
            cases
                .iter()
                .map(|args| match &args[0] {
                    Arg::Tensor(t) if !t.dtype.is_floating() => (Status::Invalid, Some(format!("\"binary_cross_entropy\" not implemented for '{:?}'", t.dtype))),
                    Arg::Tensor(t) if in_unit(t) => (Status::Ok, None),
                    _ => (Status::Invalid, Some("all elements of input should be between 0 and 1".into())),
                })
                .collect()
        }
    }

    /// A check on a tensor's elements is found among the enumerated candidates.
    #[test]
    fn probabilities_are_found() {
        let decl = "api torch.binary_cross_entropy(input: Tensor, target: Tensor) -> Tensor {}\n";
        let base = crate::check::check_text(Path::new("t.sfz"), decl).spec.apis[0].clone();
        let src = format!("{decl}{}", super::super::rules_text(&base.name, &super::super::enumerate::candidates(&base), None));
        let checked = crate::check::check_text(Path::new("t.sfz"), &src);
        assert!(!checked.has_errors());
        let config = InferConfig { budget: Duration::from_secs(30), learn_values: false, trace: true, ..InferConfig::default() };
        let result = infer_api(&base, 0, candidates_of(&checked.spec), &WantsProbabilities, &config, false);
        let trace = || result.trace.iter().filter(|l| !l.starts_with("    ")).cloned().collect::<Vec<_>>().join("\n");
        assert!(result.valid_after.is_some_and(|v| v >= 0.9), "{:?}\n{}", result.valid_after, trace());
        assert!(result.rules.iter().any(|r| r.candidate.name == "input_values_in_unit" && r.status == RuleStatus::Validated), "{}", trace());
    }

    /// Rejects as `linspace` does: unless `start` and `end` are both 0-d, one complaint about
    /// both.
    struct ZeroDPair;
    impl Runner for ZeroDPair {
        fn run_with_errors(&self, _: usize, cases: &[Vec<Arg>], _: Instant) -> Vec<(Status, Option<String>)> {
            let rank = |a: &Arg| if let Arg::Tensor(t) = a { t.shape.len() } else { 9 };
            cases
                .iter()
                .map(|args| match (rank(&args[0]), rank(&args[1])) {
                    (0, 0) => (Status::Ok, None),
                    (a, b) => (
                        Status::Invalid,
                        Some(format!("linspace only supports 0-dimensional start and end tensors, but got start with {a} dimension(s) and end with {b} dimension(s).")),
                    ),
                })
                .collect()
        }
    }

    /// Two tensors that must be 0-d together: no single rank rule relieves the complaint, the
    /// non-empty assumption rules rank 0 out, and a guess the stuck first pass took (`end.ndim ==
    /// 1`) would keep the pair away in the next. The rank tuples try 0, and a pass that ends
    /// stuck gives its guesses back.
    #[test]
    fn two_tensors_that_must_be_0_d_together_are_found() {
        let api = "api torch.linspace(start: Tensor, end: Tensor, steps: int) -> Tensor {}\n";
        let checked = crate::check::check_text(Path::new("t.sfz"), api);
        let base = checked.spec.apis[0].clone();
        let src = format!("{api}{}", super::super::rules_text(&base.name, &super::super::enumerate::candidates(&base), None));
        let checked = crate::check::check_text(Path::new("t.sfz"), &src);
        assert!(!checked.has_errors());
        let config = InferConfig { budget: Duration::from_secs(20), learn_values: false, trace: true, ..InferConfig::default() };
        let result = infer_api(&base, 0, candidates_of(&checked.spec), &ZeroDPair, &config, false);
        assert!(result.valid_after.is_some_and(|v| v >= 0.9), "{result:?}");
        let mut names: Vec<&str> = result.rules.iter().map(|r| r.candidate.name.as_str()).collect();
        names.sort();
        assert_eq!(names, ["end_ndim_0", "start_ndim_0"], "{result:?}");
    }

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

    /// A complaint names parameters in libtorch's words: `self` for `input`, `mat2` as `matN`
    /// once numbers are made uniform, `pad` for `padding`, `Dimension` for `dim`.
    #[test]
    fn complaints_name_the_parameters_they_check() {
        let src = "api torch.addmm(input: Tensor, mat1: Tensor, mat2: Tensor, padding: int = 0, dim: int = 0) -> Tensor {}\n\
            #[status(candidate)] rule same for torch.addmm { input.dtype == mat2.dtype; }\n\
            #[status(candidate)] rule pad for torch.addmm { padding >= 0; }\n\
            #[status(candidate)] rule dim for torch.addmm { dim in -input.ndim..input.ndim; }\n\
            #[status(candidate)] rule rank for torch.addmm { mat1.ndim == 2; }\n";
        let checked = crate::check::check_text(Path::new("t.sfz"), src);
        assert!(!checked.has_errors(), "{:?}", checked.diags.iter().map(|d| &d.message).collect::<Vec<_>>());
        let api = &checked.spec.apis[0];
        let rules = candidates_of(&checked.spec);
        let named = |complaint: &str| -> Vec<&str> {
            let key = crate::oracle::errors::complaint(complaint);
            rules.iter().filter(|r| relevance(api, &key, r) > 0).map(|r| r.candidate.name.as_str()).collect()
        };
        // `dim`'s rule bounds it by `input`'s rank: `self` names it.
        assert_eq!(named("self and mat2 must have the same dtype, but got Half and Bool"), ["same", "dim", "rank"]);
        assert_eq!(named("pad should be at most half of effective kernel size"), ["pad"]);
        assert_eq!(named("Dimension out of range (expected to be in range of [-2, 1], but got 3)"), ["dim"]);
        assert!(named("negative strides are not supported").is_empty());
        // The key's `N` for a number names no parameter called `N`; "groups" names `group`.
        let src = "api torch.native_group_norm(input: Tensor, N: int, C: int, group: int) -> Tensor {}\n\
            #[status(candidate)] rule n for torch.native_group_norm { N >= 1; }\n\
            #[status(candidate)] rule group for torch.native_group_norm { group >= 1; }\n";
        let checked = crate::check::check_text(Path::new("t.sfz"), src);
        let (api, rules) = (&checked.spec.apis[0], candidates_of(&checked.spec));
        let key = crate::oracle::errors::complaint("Expected num groups to be greater than 0, got 0");
        assert_eq!(rules.iter().filter(|r| relevance(api, &key, r) > 0).map(|r| r.candidate.name.as_str()).collect::<Vec<_>>(), ["group"]);
        // The schema's `w_ih` is the message's `weight_ih`; `b_ih` is not.
        let src = "api torch.rnn_tanh_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor) -> Tensor {}\n\
            #[status(candidate)] rule gates for torch.rnn_tanh_cell { w_ih.shape[0] == w_hh.shape[1]; }\n\
            #[status(candidate)] rule bias for torch.rnn_tanh_cell { b_ih.ndim == 1; }\n";
        let checked = crate::check::check_text(Path::new("t.sfz"), src);
        let (api, rules) = (&checked.spec.apis[0], candidates_of(&checked.spec));
        let key = crate::oracle::errors::complaint("weight_ih first dim must be 1 * hidden_size = 2, but got 3");
        assert_eq!(rules.iter().filter(|r| relevance(api, &key, r) > 0).map(|r| r.candidate.name.as_str()).collect::<Vec<_>>(), ["gates"]);
    }

    /// The search's first pass keeps the elements of a tensor list non-empty and of rank 1 or
    /// more, as it does tensors (cat refuses 0-d elements and would refute true rules).
    #[test]
    fn nonempty_reaches_the_elements_of_tensor_lists() {
        let checked = crate::check::check_text(Path::new("t.sfz"), "api torch.cat(tensors: Tensor[], dim: int = 0) -> Tensor {}\n");
        let base = &checked.spec.apis[0];
        let nonempty = nonempty_constraints(base);
        assert_eq!(nonempty.len(), 2, "{:?}", nonempty.iter().map(|c| &c.text).collect::<Vec<_>>());
        let api = reduce::with(base, &[&nonempty], None);
        let models = crate::solve::sample(&api, &Limits::default(), 32, 1).unwrap();
        assert!(models.len() > 4);
        for m in &models {
            let SymValue::TensorList(items) = &m[0] else { panic!("{m:?}") };
            assert!(items.iter().all(|(_, shape)| !shape.is_empty() && shape.iter().all(|&d| d > 0)), "{items:?}");
        }
    }
}
