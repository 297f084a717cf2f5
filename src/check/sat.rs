//! Satisfiability of each API's constraints (E0009), the one part of checking that needs z3.
//!
//! Solving is by far the slowest part of a check (milliseconds per API, against microseconds for
//! the rest), so results are memoised by what they depend on: the parameters' types and the
//! lowered constraints, not spans or names of files. The memo lives for the process (the
//! language server re-checks a file on every keystroke and re-solves only the API that changed)
//! and can be saved to disk between runs of `sfz check` (`load` / `save`). Misses are solved on
//! all cores, each thread in its own z3 context.
use std::collections::HashMap;
use std::path::Path;
use std::sync::{LazyLock, Mutex};

use crate::solve::{self, Limits, SolveError};
use crate::spec::{ApiSpec, BinOp, Constraint, Origin, RuleSpec, TExpr, UnOp, Value};

/// What solving found: satisfiable, or unsatisfiable with the indices (into `requires`) of a
/// conflicting subset. Timeouts and solver failures are not recorded: they say nothing.
type Verdict = Option<Vec<usize>>;

static MEMO: LazyLock<Mutex<Memo>> = LazyLock::new(Default::default);

#[derive(Default)]
struct Memo {
    verdicts: HashMap<String, Verdict>,
    /// New since the last `load`: whether `save` has anything to write.
    dirty: bool,
}

/// Entries kept at most; past it the memo starts over (a long editor session).
const MAX_ENTRIES: usize = 50_000;

/// The part of an API that satisfiability depends on, as a string key.
fn key(api: &ApiSpec) -> String {
    let params: Vec<_> = api.params.iter().map(|p| (&p.ty, p.optional, &p.default)).collect();
    let requires: Vec<_> = api.requires.iter().map(|c| (&c.expr, &c.params)).collect();
    format!("{}|{params:?}|{requires:?}", env!("CARGO_PKG_VERSION"))
}

/// Terms past which an API's constraints are not sent to z3 (W0003).
pub const MAX_TERMS: f64 = 200_000.0;

/// About how many terms the solver's encoding of an API's constraints has. The encoder unrolls
/// each quantifier over every value its variable can take, so nested quantifiers multiply:
/// three `forall`s over lists are a few hundred copies of their body, fifty are more than the
/// machine holds.
pub fn encoded_terms(api: &ApiSpec) -> f64 {
    api.requires.iter().map(|c| terms(&c.expr)).sum()
}

fn terms(e: &TExpr) -> f64 {
    match e {
        TExpr::Forall { range, body, .. } | TExpr::Exists { range, body, .. } => terms(range) + unrolled(range) * terms(body),
        TExpr::Prop(a, _) | TExpr::Each(a) | TExpr::Unary(_, a) => 1.0 + terms(a),
        TExpr::Index(a, b) | TExpr::Binary(_, a, b) | TExpr::Range { lo: a, hi: b, .. } => 1.0 + terms(a) + terms(b),
        TExpr::If(c, t, f) => 1.0 + terms(c) + terms(t) + terms(f),
        TExpr::List(items) | TExpr::Call(_, items) => 1.0 + items.iter().map(terms).sum::<f64>(),
        TExpr::Lit(_) | TExpr::Param(_) | TExpr::Result(_) | TExpr::Bound(_) => 1.0,
    }
}

/// How many copies of its body the encoder makes for a quantifier over `range`: the literal
/// bounds when constant (at most 257), else every index a dimension or list could have.
fn unrolled(range: &TExpr) -> f64 {
    match range {
        TExpr::Range { lo, hi, inclusive } => match (&**lo, &**hi) {
            (TExpr::Lit(Value::Int(lo)), TExpr::Lit(Value::Int(hi))) => {
                let n = hi.saturating_sub(*lo).saturating_add(i64::from(*inclusive));
                n.clamp(0, 257) as f64
            }
            _ => 11.0,
        },
        _ => 11.0,
    }
}

/// For each API, the conflicting constraints' indices if its constraints cannot all hold.
pub fn unsat_cores(apis: &[&ApiSpec]) -> Vec<Option<Vec<usize>>> {
    let keys: Vec<String> = apis.iter().map(|a| key(a)).collect();
    let mut out: Vec<Option<Verdict>> = {
        let memo = MEMO.lock().unwrap_or_else(|e| e.into_inner());
        keys.iter().map(|k| memo.verdicts.get(k).cloned()).collect()
    };
    // One solve per distinct key: a spec set often repeats an API's constraints.
    let mut seen = std::collections::HashSet::new();
    let misses: Vec<usize> = (0..apis.len()).filter(|&i| out[i].is_none() && seen.insert(&keys[i])).collect();
    if !misses.is_empty() {
        // A few misses (the language server's edit) are solved on the calling thread: its z3
        // context lives on between calls, where a new thread would pay for a new one.
        let threads = if misses.len() <= 2 { 1 } else { std::thread::available_parallelism().map_or(1, |n| n.get()).min(misses.len()) };
        let solved: Vec<(usize, Option<Verdict>)> = if threads == 1 {
            misses.iter().map(|&i| (i, solve_one(apis[i]))).collect()
        } else {
            std::thread::scope(|s| {
                let handles: Vec<_> = (0..threads)
                    .map(|t| {
                        let mine: Vec<usize> = misses.iter().copied().skip(t).step_by(threads).collect();
                        s.spawn(move || mine.into_iter().map(|i| (i, solve_one(apis[i]))).collect::<Vec<_>>())
                    })
                    .collect();
                handles.into_iter().flat_map(|h| h.join().unwrap_or_default()).collect()
            })
        };
        let mut memo = MEMO.lock().unwrap_or_else(|e| e.into_inner());
        if memo.verdicts.len() > MAX_ENTRIES {
            memo.verdicts.clear();
        }
        for (i, verdict) in solved {
            if let Some(v) = &verdict {
                memo.verdicts.insert(keys[i].clone(), v.clone());
                memo.dirty = true;
            }
            out[i] = verdict;
        }
        for i in 0..apis.len() {
            if out[i].is_none() {
                out[i] = memo.verdicts.get(&keys[i]).cloned();
            }
        }
    }
    out.into_iter().map(Option::flatten).collect()
}

/// Solves one API. The thread's own z3 context is reused across APIs (creating one costs more
/// than most problems); an unsatisfiable one is solved again in a fresh context, so the
/// reported conflict does not depend on what the thread solved before.
fn solve_one(api: &ApiSpec) -> Option<Verdict> {
    let limits = Limits::default();
    match solve::Problem::new(api, &limits, &[]).check() {
        Ok(()) => Some(None),
        Err(SolveError::Unsat { .. }) => match solve::check_sat(api, &limits) {
            Err(SolveError::Unsat { core }) => Some(Some(core)),
            Ok(()) => Some(None),
            Err(_) => None,
        },
        Err(_) => None,
    }
}

/// Adds verdicts saved by an earlier run. A missing or unreadable file is an empty cache.
pub fn load(path: &Path) {
    let Ok(text) = std::fs::read_to_string(path) else { return };
    let Ok(saved) = serde_json::from_str::<HashMap<String, Verdict>>(&text) else { return };
    let mut memo = MEMO.lock().unwrap_or_else(|e| e.into_inner());
    for (k, v) in saved {
        memo.verdicts.entry(k).or_insert(v);
    }
}

/// Writes the verdicts if any are new (atomically, so concurrent runs never read half a file).
pub fn save(path: &Path) -> std::io::Result<()> {
    let mut memo = MEMO.lock().unwrap_or_else(|e| e.into_inner());
    if !memo.dirty {
        return Ok(());
    }
    super::write_cache(path, &serde_json::to_vec(&memo.verdicts)?)?;
    memo.dirty = false;
    Ok(())
}

/// Where `sfz check` keeps the verdicts between runs: `$SFZ_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/sfz`, else `~/.cache/sfz`; one file per `sfz` build (its size and
/// modification time), because a verdict is only as good as the encoder that reached it.
pub fn default_path() -> Option<std::path::PathBuf> {
    crate::check::cache_dir().map(|d| d.join(format!("sat-{:016x}.json", crate::check::build_key())))
}

/// The API's constraints without the rule's, plus the negation of the rule (last): if these
/// cannot hold together, the rest imply the rule. None when the API has no other constraints.
pub fn without_rule(api: &ApiSpec, rule: &RuleSpec) -> Option<ApiSpec> {
    let own = |c: &Constraint| matches!(&c.origin, Origin::Rule(m) if *m == rule.meta);
    let mut probe = api.clone();
    probe.requires.retain(|c| !own(c));
    if probe.requires.is_empty() {
        return None;
    }
    let conj = rule.constraints.iter().map(|c| c.expr.clone()).reduce(|a, b| TExpr::Binary(BinOp::And, Box::new(a), Box::new(b)))?;
    let mut params: Vec<usize> = rule.constraints.iter().flat_map(|c| c.params.iter().copied()).collect();
    params.sort_unstable();
    params.dedup();
    let first = &rule.constraints[0];
    probe.requires.push(Constraint {
        expr: TExpr::Unary(UnOp::Not, Box::new(conj)),
        span: rule.span,
        text: format!("not rule {}", rule.meta.name),
        origin: Origin::Inline,
        category: first.category,
        params,
    });
    Some(probe)
}

/// Forgets every verdict of this process (benchmarks measure a first check with it).
pub fn forget() {
    let mut memo = MEMO.lock().unwrap_or_else(|e| e.into_inner());
    memo.verdicts.clear();
    memo.dirty = false;
}
