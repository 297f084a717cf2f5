//! Inputs from a plan: the solver's models for the symbolic part (solved ahead, into a pool per
//! API), then concrete values per case. Case `i` of a run is a pure function of the run's seed
//! and `i`, so `--seed` reproduces a run whatever the worker scheduling.
pub mod values;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::case::Arg;
use crate::solve::{Limits, SolveError, SymModel};
use crate::spec::ApiSpec;

/// Generation settings.
#[derive(Clone, Debug)]
pub struct GenConfig {
    pub seed: u64,
    /// Models solved per API before fuzzing starts.
    pub pool_size: usize,
    pub limits: Limits,
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig { seed: 0, pool_size: 64, limits: Limits::default() }
    }
}

/// SplitMix64: a well-mixed 64-bit hash, to derive independent seeds from (seed, index).
pub fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Solves the pool of one API on the calling thread.
pub fn solve_pool(api: &ApiSpec, config: &GenConfig, api_index: usize) -> Result<Vec<SymModel>, SolveError> {
    crate::solve::sample(api, &config.limits, config.pool_size, mix(config.seed ^ mix(api_index as u64)))
}

/// One generated call.
#[derive(Clone, Debug)]
pub struct Generated {
    /// Index of the API among those the generator serves.
    pub api: usize,
    pub args: Vec<Arg>,
    /// Whether the evaluator found every constraint satisfied (or undecidable).
    pub conforms: bool,
}

/// Produces cases from solved pools. Shared by the supervisor's worker threads.
pub struct Generator {
    apis: Vec<ApiSpec>,
    pools: Vec<Vec<SymModel>>,
    seed: u64,
}

impl Generator {
    /// `apis` and `pools` are parallel; APIs with an empty pool are never chosen.
    pub fn new(apis: Vec<ApiSpec>, pools: Vec<Vec<SymModel>>, seed: u64) -> Self {
        Generator { apis, pools, seed }
    }

    pub fn apis(&self) -> &[ApiSpec] {
        &self.apis
    }

    /// The case with this index: which API (uniformly among those with models), which model,
    /// which values. Retries a few draws when a concrete constraint fails.
    pub fn case(&self, index: u64) -> Option<Generated> {
        let live: Vec<usize> = (0..self.apis.len()).filter(|&i| !self.pools[i].is_empty()).collect();
        if live.is_empty() {
            return None;
        }
        let mut rng = ChaCha8Rng::seed_from_u64(mix(self.seed ^ mix(index)));
        let api = live[rng.random_range(0..live.len())];
        let spec = &self.apis[api];
        let pool = &self.pools[api];
        let mut last = None;
        for _ in 0..4 {
            let model = &pool[rng.random_range(0..pool.len())];
            let args = values::concretize(spec, model, &mut rng);
            let ok = values::conforms(spec, &args).iter().all(|c| *c != Some(false));
            if ok {
                return Some(Generated { api, args, conforms: true });
            }
            last = Some(args);
        }
        last.map(|args| Generated { api, args, conforms: false })
    }
}
