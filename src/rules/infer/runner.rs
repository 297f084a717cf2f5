//! How the search runs cases: the `Runner` it is handed, conforming samples from the solver,
//! and the `Batch` of cases run with how each ended.
use std::time::Instant;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::counts;
use crate::gen::{mix, values};
use crate::oracle::Status;
use crate::solve::{self, Limits};
use crate::spec::ApiSpec;
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

/// A batch of cases of `api` that conform to it, with how each ended.
pub(super) struct Batch {
    pub(super) args: Vec<Vec<Arg>>,
    pub(super) ok: Vec<bool>,
    /// Per case: libtorch's argument error, normalized (`oracle::errors::complaint`), when it
    /// rejected the case.
    pub(super) errors: Vec<Option<String>>,
    /// Per rejected case: the first line of libtorch's message as it was, numbers included.
    pub(super) messages: Vec<Option<String>>,
}

impl Batch {
    /// libtorch's most frequent complaint, with how many cases raised it.
    pub(super) fn dominant_error(&self) -> Option<(String, usize)> {
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
    pub(super) fn complaint(&self) -> Option<(String, f64)> {
        let (key, n) = self.dominant_error()?;
        let line = self.message(&key)?.lines().next().unwrap_or_default();
        Some((line.to_string(), n as f64 / self.ok.len().max(1) as f64))
    }

    /// One raw message of the most frequent complaint.
    pub(super) fn dominant_message(&self) -> Option<&str> {
        self.message(&self.dominant_error()?.0)
    }

    /// One raw message behind complaint `key`.
    fn message(&self, key: &str) -> Option<&str> {
        let k = self.errors.iter().position(|e| e.as_deref() == Some(key))?;
        self.messages[k].as_deref()
    }

    /// The counts (ranks, lengths) one message behind complaint `key` names as wanted
    /// (`counts::named`).
    pub(super) fn named_counts(&self, key: &str) -> Vec<i64> {
        self.message(key).map_or_else(Vec::new, counts::named)
    }

    /// How many cases raised one of `complaints` (the dominant ones of the rounds so far).
    pub(super) fn raising(&self, complaints: &[String]) -> usize {
        self.errors.iter().filter(|e| e.as_deref().is_some_and(|e| complaints.iter().any(|c| c == e))).count()
    }

    /// The indices of the cases a candidate holds on.
    pub(super) fn obeying(&self, probe: &ApiSpec) -> Vec<usize> {
        (0..self.args.len()).filter(|&k| holds(probe, &self.args[k]) == Some(true)).collect()
    }

    /// The cases at `keep`, as a batch of their own.
    pub(super) fn subset(&self, keep: &[usize]) -> Batch {
        Batch {
            args: keep.iter().map(|&k| self.args[k].clone()).collect(),
            ok: keep.iter().map(|&k| self.ok[k]).collect(),
            errors: keep.iter().map(|&k| self.errors[k].clone()).collect(),
            messages: keep.iter().map(|&k| self.messages[k].clone()).collect(),
        }
    }

    pub(super) fn valid_rate(&self) -> Option<f64> {
        (!self.ok.is_empty()).then(|| self.ok.iter().filter(|&&o| o).count() as f64 / self.ok.len() as f64)
    }
}

/// Up to this many cases, a sample skips the solver's domain exploration (`solve::sample_quick`):
/// the search's probes of one candidate are many and small, and exploring was most of their time.
const QUICK_SAMPLE: usize = 32;

/// Conforming argument lists for `api`, as many as the solver gives up to `count`.
pub(in crate::rules) fn sample(api: &ApiSpec, count: usize, seed: u64, limits: &Limits, extra_check: Option<&ApiSpec>) -> Vec<Vec<Arg>> {
    let solved = if count <= QUICK_SAMPLE { solve::sample_quick(api, limits, count, seed) } else { solve::sample(api, limits, count, seed) };
    let Ok(models) = solved else { return Vec::new() };
    arguments(api, &models, seed, extra_check)
}

/// Argument lists made from solved models of `api` (values drawn with a stream of `seed`),
/// those that conform.
pub(super) fn arguments(api: &ApiSpec, models: &[solve::SymModel], seed: u64, extra_check: Option<&ApiSpec>) -> Vec<Vec<Arg>> {
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
pub(super) fn execute(runner: &dyn Runner, index: usize, mut args: Vec<Vec<Arg>>, deadline: Instant) -> Batch {
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

/// Whether the candidate holds on arguments: Some(false) when some constraint is broken.
pub(super) fn holds(probe: &ApiSpec, args: &[Arg]) -> Option<bool> {
    verdict(&values::conforms(probe, args))
}

pub(super) fn verdict(r: &[Option<bool>]) -> Option<bool> {
    if r.contains(&Some(false)) {
        Some(false)
    } else if r.iter().all(Option::is_some) {
        Some(true)
    } else {
        None
    }
}
