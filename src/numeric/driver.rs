//! The parent's side of hunting: starting inputs for a program (the solver and generator serve
//! its parameters as they serve an API's), episodes sent to a worker until the NaN/INF oracle
//! fires or the episodes run out, and the outcome per program.
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::gen::{mix, values::concretize};
use crate::solve::Limits;
use crate::spec::ProgramSpec;
use crate::spec::Value;
use crate::wire::case::{Arg, Fill};
use crate::wire::program::hunt::{Found, HuntRequest, HuntResult, SoftSignal, Strategy};
use crate::wire::program::soft::SoftModels;
use crate::worker::{HuntError, HuntWorker};

/// Settings of a hunt.
#[derive(Clone, Debug)]
pub struct HuntConfig {
    pub strategy: Strategy,
    /// Evaluations per episode.
    pub budget: u32,
    /// Episodes per program, each from fresh starting inputs.
    pub episodes: u32,
    pub seed: u64,
    pub models: Option<SoftModels>,
    /// Return training records (for `sfz train`).
    pub collect: bool,
    /// Gradient search with targets picked at random (a baseline for soft assertions).
    pub random_targets: bool,
    /// The solver's bound on a tensor's element count (a traced program's shapes are fixed and
    /// may be larger than the default's).
    pub max_numel: i64,
    /// The solver's bound on one dimension.
    pub max_dim: i64,
    /// When set, episodes go on (with fresh starting inputs) until this instant instead of
    /// stopping after `episodes`; none starts after it.
    pub deadline: Option<Instant>,
    /// Whether the wider-float oracle runs.
    pub wider: bool,
    /// Parameters held as data (`sfz hunt --fix`): the search never moves them.
    pub fixed: Vec<u32>,
}

impl Default for HuntConfig {
    fn default() -> Self {
        HuntConfig {
            strategy: Strategy::Gradient,
            budget: 400,
            episodes: 5,
            seed: 0,
            models: None,
            collect: false,
            random_targets: false,
            max_numel: 256,
            max_dim: 8,
            deadline: None,
            wider: true,
            fixed: Vec::new(),
        }
    }
}

/// What hunting one program ended with.
#[derive(Clone, Debug, PartialEq)]
pub enum Status {
    /// The NaN/INF oracle fired on an intermediate.
    Found(Box<Found>),
    /// Every episode ran its budget with every intermediate finite.
    Clean,
    /// The inputs cannot be made (unsatisfiable constraints) or libtorch rejected them: the
    /// program is not runnable as written. Never a bug.
    Rejected(String),
    /// The worker crashed inside libtorch.
    Crashed(String),
    /// An episode ran past the timeout.
    Hung(String),
}

/// One program's hunt.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub status: Status,
    /// The episode that found it (or the last run), its starting inputs and result.
    pub inputs: Vec<Arg>,
    pub last: Option<HuntResult>,
    pub episodes: u32,
    pub evals: u64,
    /// Wall time from the first episode's request to the answer that ended the hunt.
    pub elapsed: Duration,
    /// The strongest soft-assertion warnings over all episodes: non-finite, imprecise.
    pub soft: Option<SoftSignal>,
    pub imprecise: Option<SoftSignal>,
    /// Training records of every episode (when collecting).
    pub records: Vec<crate::wire::program::hunt::Record>,
}

/// The box a tensor input is searched in (lo, hi), None for other parameters.
pub type Bounds = Option<(f64, f64)>;

/// Starting inputs for episode `episode`: solved and drawn like an API case, omitted
/// parameters given their defaults; with each tensor's bounds (its fill's range).
pub fn starting_inputs(program: &ProgramSpec, seed: u64, episode: u32, (max_numel, max_dim): (i64, i64)) -> Result<(Vec<Arg>, Vec<Bounds>), String> {
    let api = &program.inputs;
    let limits = Limits { max_numel, max_dim, ..Limits::default() };
    let s = mix(seed ^ mix(episode as u64 + 1));
    let first = crate::solve::fresh(|| crate::solve::sample(api, &limits, 8, s));
    let mut models = first.clone().unwrap_or_default();
    if models.is_empty() {
        // Fixed shapes beyond the default bounds (a program traced from a script): bounds as
        // large as a program's shapes may reasonably be.
        let wide = Limits { max_numel: max_numel.max(1 << 22), max_dim: max_dim.max(1 << 16), ..limits };
        models = match crate::solve::fresh(|| crate::solve::sample(api, &wide, 8, s)) {
            Ok(m) => m,
            // The first answer's error, which the default bounds' users know.
            Err(e) => return Err(first.err().map_or(e.to_string(), |f| f.to_string())),
        };
    }
    // Prefer a model without empty tensors: a program on zero elements computes nothing.
    let nonempty = |m: &&crate::solve::SymModel| m.iter().all(|v| !matches!(v, crate::solve::SymValue::Tensor { shape, .. } if shape.contains(&0)));
    // Episodes walk through the pool, so that shapes vary from one episode to the next.
    let usable: Vec<&crate::solve::SymModel> = models.iter().filter(nonempty).collect();
    let model = match usable.len() {
        0 => models.first().ok_or("the inputs' constraints have no solution")?,
        n => usable[episode as usize % n],
    };
    let mut rng = ChaCha8Rng::seed_from_u64(s);
    let args = concretize(api, &crate::gen::plan::GenPlan::new(api), model, None, &mut rng);
    let args: Vec<Arg> = args
        .into_iter()
        .zip(&api.params)
        .map(|(a, p)| match (a, &p.default) {
            (Arg::Omitted, Some(d)) => value_arg(d),
            (a, _) => a,
        })
        .collect();
    let bounds = args
        .iter()
        .map(|a| match a {
            Arg::Tensor(r) => match r.fill {
                Fill::Uniform { lo, hi } => Some((lo, hi)),
                Fill::Constant(c) => Some((c, c)),
                Fill::Int { .. } => None,
            },
            _ => None,
        })
        .collect();
    Ok((args, bounds))
}

fn value_arg(v: &Value) -> Arg {
    match v {
        Value::Bool(b) => Arg::Bool(*b),
        Value::Int(i) => Arg::Int(*i),
        Value::Float(f) => Arg::Float(*f),
        Value::Str(s) => Arg::Str(s.clone()),
        Value::Dtype(d) => Arg::Dtype(*d),
        Value::List(xs) => Arg::IntList(xs.iter().filter_map(|x| if let Value::Int(i) = x { Some(*i) } else { None }).collect()),
        _ => Arg::None,
    }
}

/// Hunts one program: episodes until the oracle fires, the program is rejected or crashes, or
/// the episodes (or the time, with a deadline) run out.
pub fn hunt_program(worker: &mut HuntWorker, program: &ProgramSpec, config: &HuntConfig) -> Outcome {
    let start = Instant::now();
    let mut out =
        Outcome { status: Status::Clean, inputs: Vec::new(), last: None, episodes: 0, evals: 0, elapsed: Duration::ZERO, soft: None, imprecise: None, records: Vec::new() };
    let models = config.models.as_ref().map(|m| m.subset(program.ir.steps.iter().map(|s| s.op)));
    let more = |episode: u32| match config.deadline {
        Some(d) => Instant::now() < d,
        None => episode < config.episodes,
    };
    let mut episode = 0u32;
    while more(episode) {
        episode += 1;
        let episode = episode - 1;
        let (inputs, bounds) = match starting_inputs(program, config.seed, episode, (config.max_numel, config.max_dim)) {
            Ok(x) => x,
            Err(e) => {
                out.status = Status::Rejected(e);
                break;
            }
        };
        let request = HuntRequest {
            program: program.ir.clone(),
            inputs: inputs.clone(),
            bounds,
            strategy: config.strategy,
            budget: config.budget,
            seed: mix(config.seed ^ mix(0xB00 + episode as u64)),
            models: models.clone(),
            collect: config.collect,
            random_targets: config.random_targets,
            wider: config.wider,
            fixed: config.fixed.clone(),
        };
        out.episodes += 1;
        out.inputs = inputs;
        match worker.hunt(request) {
            Ok(mut r) => {
                out.evals += r.evals as u64;
                out.records.append(&mut r.records);
                if let Some(s) = &r.soft {
                    if out.soft.as_ref().is_none_or(|o| s.probability > o.probability) {
                        out.soft = Some(s.clone());
                    }
                }
                if let Some(s) = &r.imprecise {
                    if out.imprecise.as_ref().is_none_or(|o| s.probability > o.probability) {
                        out.imprecise = Some(s.clone());
                    }
                }
                let (found, rejected) = (r.found.clone(), r.rejected.clone());
                out.last = Some(r);
                if let Some(f) = found {
                    out.status = Status::Found(Box::new(f));
                    break;
                }
                if let Some(e) = rejected {
                    out.status = Status::Rejected(e);
                    break;
                }
            }
            Err(HuntError::Pool(e)) => {
                out.status = Status::Rejected(format!("no worker: {e}"));
                break;
            }
            Err(e @ HuntError::Timeout(_)) => {
                out.status = Status::Hung(e.to_string());
                break;
            }
            Err(e) => {
                out.status = Status::Crashed(e.to_string());
                break;
            }
        }
    }
    out.elapsed = start.elapsed();
    out
}
