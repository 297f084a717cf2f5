//! `infer_api` end to end with the proposers of `propose` and runners that answer as libtorch
//! would: the search's phases each shown on an operator that needs them.
use std::path::Path;
use std::time::{Duration, Instant};

use super::infer::{candidates_of, infer_api, Checked, InferConfig, Runner};
use super::propose::{enumerate, FromErrors};
use super::Candidate;
use crate::oracle::Status;
use crate::solve::{self, Limits, SymValue};
use crate::spec::{Constraint, RuleStatus};
use crate::wire::case::{Arg, DType};

/// Candidates solved together in one context (`solve::sample_each`) each get models that
/// obey them, a rank beyond the shared declarations included, and none leaks into the next.
#[test]
fn candidates_solved_together_each_hold() {
    let src = "api torch.add(input: Tensor, other: Tensor) -> Tensor {}\n";
    let checked = crate::check::check_text(Path::new("t.sfz"), src);
    let names = ["input_ndim_2", "input_other_same_shape", "input_ndim_5", "input_ndim_1"];
    let cands: Vec<Candidate> = enumerate::candidates(&checked.spec.apis[0]).into_iter().filter(|c| names.contains(&c.name.as_str())).collect();
    let text = crate::rules::rules_text("torch.add", &cands, None);
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
    let result = infer_api(&checked.spec.apis[0], 0, candidates_of(&checked.spec), &CropsToEmpty, &FromErrors, &InferConfig { keep_rejected: true, ..config });
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
    let src = format!("api torch.stack(tensors: Tensor[], dim: int = 0) -> Tensor {{}}\n{}", crate::rules::rules_text(&base.name, &enumerate::candidates(&base), None));
    let checked = crate::check::check_text(Path::new("t.sfz"), &src);
    assert!(!checked.has_errors());
    let candidates: Vec<Checked> = candidates_of(&checked.spec);
    let config = InferConfig { budget: Duration::from_secs(40), learn_values: false, trace: true, ..InferConfig::default() };
    // Several API indices: each seeds the search differently.
    for index in 0..3 {
        let result = infer_api(&base, index, candidates.clone(), &StackLike, &FromErrors, &config);
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
    let src = format!("api torch.select(input: Tensor, dim: int, index: int) -> Tensor {{}}\n{}", crate::rules::rules_text(&base.name, &enumerate::candidates(&base), None));
    let checked = crate::check::check_text(Path::new("t.sfz"), &src);
    assert!(!checked.has_errors());
    let config = InferConfig { budget: Duration::from_secs(40), learn_values: false, trace: true, ..InferConfig::default() };
    let result = infer_api(&base, 0, candidates_of(&checked.spec), &SelectLike, &FromErrors, &config);
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
    let result = infer_api(&base, 0, candidates, &EarlyOnEmptyIndex, &FromErrors, &config);
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
    // No restarts: how many fit in the budget depends on the machine's speed, and a later one
    // may end marginally more valid without the rule (what this test is about is the probe).
    let config = InferConfig { budget: Duration::from_secs(20), learn_values: false, trace: true, restart_below: 0.0, ..InferConfig::default() };
    let result = infer_api(&checked.spec.apis[0], 0, candidates, &WindowFitsLater::default(), &FromErrors, &InferConfig { keep_rejected: true, ..config });
    let rule = result.rules.iter().find(|r| r.candidate.name == "k_is_the_size").expect("kept");
    assert_eq!(rule.status, RuleStatus::Validated, "{result:?}");
    let violating_ok = rule.evidence.iter().find(|(k, _)| k == "violating_ok").map(|(_, v)| *v);
    assert!(violating_ok.is_some_and(|v| v > 0), "{:?}", rule.evidence);
    assert!(result.trace.iter().any(|t| t.contains("valid without [\"k_is_the_size\"]")), "{:?}", result.trace);
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
    let result = infer_api(&base, 0, candidates, &WantsScalarOther, &FromErrors, &config);
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
    let alone = infer_api(&base, 0, candidates_of(&checked.spec), &first, &FromErrors, &once);
    assert!(alone.restarts == 0 && alone.valid_after.is_none_or(|v| v < 0.5), "{alone:?}");
    let runner = RefusesAtFirst { after: first.seen.into_inner(), seen: 0.into(), inner: WantsScalarOther };
    let config = InferConfig { restart_below: 0.9, trace: true, ..once };
    let result = infer_api(&base, 0, candidates_of(&checked.spec), &runner, &FromErrors, &config);
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
    let src = format!("{decl}{}", crate::rules::rules_text(&base.name, &enumerate::candidates(&base), None));
    let checked = crate::check::check_text(Path::new("t.sfz"), &src);
    assert!(!checked.has_errors());
    let config = InferConfig { budget: Duration::from_secs(30), learn_values: false, trace: true, ..InferConfig::default() };
    let result = infer_api(&base, 0, candidates_of(&checked.spec), &WantsProbabilities, &FromErrors, &config);
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
    let src = format!("{api}{}", crate::rules::rules_text(&base.name, &enumerate::candidates(&base), None));
    let checked = crate::check::check_text(Path::new("t.sfz"), &src);
    assert!(!checked.has_errors());
    let config = InferConfig { budget: Duration::from_secs(20), learn_values: false, trace: true, ..InferConfig::default() };
    let result = infer_api(&base, 0, candidates_of(&checked.spec), &ZeroDPair, &FromErrors, &config);
    assert!(result.valid_after.is_some_and(|v| v >= 0.9), "{result:?}");
    let mut names: Vec<&str> = result.rules.iter().map(|r| r.candidate.name.as_str()).collect();
    names.sort();
    assert_eq!(names, ["end_ndim_0", "start_ndim_0"], "{result:?}");
}
