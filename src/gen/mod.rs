//! Inputs from a plan. Per API, the solver's models of the symbolic part are solved ahead into
//! pools (ordinary, boundary, huge, and one per breakable constraint for violate mode); per case,
//! the generator picks a pool and a model, draws concrete values in the plan's order, breaks the
//! chosen constraint in violate mode, applies the boundary mutators, and checks the result with
//! the evaluator. Case `i` of a run is a pure function of the run's seed, `i` and the APIs that
//! had joined by `i` (all of them, when every pool is solved first), so `--seed` reproduces a
//! run whatever the worker scheduling.
pub mod cache;
pub mod cliff;
pub mod coverage;
pub mod domain;
mod generator;
pub mod mutate;
pub mod naive;
pub mod plan;
mod solving;
pub mod values;
pub mod violate;

use serde::Serialize;

use crate::solve::Limits;
pub use generator::{Generated, Generator, Prepared, Violation};
pub use mutate::Mutation;
pub use solving::*;

/// Which inputs a run generates.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum Mode {
    /// Every constraint obeyed.
    Conform,
    /// Exactly one constraint of one parameter broken (DocTer's VI mode).
    Violate,
    /// Violating with this probability, conforming otherwise.
    Mixed(f64),
}

impl Mode {
    /// `conform`, `violate`, `mixed` (a fifth violating) or `mixed:0.3`.
    pub fn parse(text: &str) -> Result<Mode, String> {
        match text.trim() {
            "conform" => Ok(Mode::Conform),
            "violate" => Ok(Mode::Violate),
            "mixed" => Ok(Mode::Mixed(0.2)),
            other => match other.strip_prefix("mixed:").or_else(|| other.strip_prefix("mixed=")) {
                Some(r) => match r.parse::<f64>() {
                    Ok(r) if (0.0..=1.0).contains(&r) => Ok(Mode::Mixed(r)),
                    _ => Err(format!("the ratio in `{other}` must be a number within 0 and 1 (the fraction of violating cases)")),
                },
                None => Err(format!("unknown mode `{other}`: use conform, violate, mixed or mixed:RATIO")),
            },
        }
    }

    /// Fraction of violating cases.
    pub fn violate_ratio(self) -> f64 {
        match self {
            Mode::Conform => 0.0,
            Mode::Violate => 1.0,
            Mode::Mixed(r) => r,
        }
    }

    pub fn name(self) -> String {
        match self {
            Mode::Conform => "conform".into(),
            Mode::Violate => "violate".into(),
            Mode::Mixed(r) => format!("mixed:{r}"),
        }
    }
}

/// How the symbolic part of a case is found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Strategy {
    /// z3-solved pools (the default).
    Solver,
    /// Independent random draws per parameter, rejected by the evaluator (the baseline).
    Naive,
}

impl Strategy {
    pub fn parse(text: &str) -> Result<Strategy, String> {
        match text.trim() {
            "solver" | "z3" => Ok(Strategy::Solver),
            "naive" => Ok(Strategy::Naive),
            other => Err(format!("unknown generator `{other}`: use solver or naive")),
        }
    }
}

/// Generation settings.
#[derive(Clone, Debug)]
pub struct GenConfig {
    pub seed: u64,
    /// Models solved per API before fuzzing starts.
    pub pool_size: usize,
    /// Models solved per breakable constraint (violate and mixed modes).
    pub violation_pool_size: usize,
    pub limits: Limits,
    pub mode: Mode,
    pub strategy: Strategy,
    pub mutation: Mutation,
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig { seed: 0, pool_size: 64, violation_pool_size: 8, limits: Limits::default(), mode: Mode::Conform, strategy: Strategy::Solver, mutation: Mutation::default() }
    }
}

/// The limits of huge models: one tensor may hold up to 2^20 elements, a dimension 2^14.
pub fn huge_limits(limits: &Limits) -> Limits {
    Limits { max_dim: 1 << 14, max_numel: 1 << 20, ..limits.clone() }
}
