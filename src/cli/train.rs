//! `sfz train`: learn soft assertions from sfz's own executions. Runs programs under random
//! mutation — by default the one-op sweep of `numeric::sweep` (each op alone, over ordinary
//! values and the dtype's cliffs), else the programs of the spec files given — records every
//! op's input statistics and what its output did (NaN/INF, or imprecise against float64), fits
//! a random forest per op and writes the versioned model file (by default the standard
//! library's, which `sfz hunt` embeds).
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use super::Color;
use crate::numeric::driver::{hunt_program, HuntConfig};
use crate::wire::program::forest::{Forest, ForestConfig};
use crate::wire::program::hunt::{Record, Strategy};
use crate::wire::program::soft::{self, OpModel, SoftModels};
use crate::worker::{default_worker_exe, HuntWorker};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Spec files, or directories to search for `*.sfz`, whose programs are executed instead
    /// of the one-op sweep.
    pub paths: Vec<PathBuf>,
    /// Write the sweep's programs to this file too (to read or edit them).
    #[arg(long)]
    pub sweep_out: Option<PathBuf>,
    /// Where the models go.
    #[arg(long, default_value = "stdlib/soft_assertions.json")]
    pub out: PathBuf,
    /// Random-mutation evaluations per episode.
    #[arg(long, default_value_t = 150)]
    pub budget: u32,
    /// Episodes per program.
    #[arg(long, default_value_t = 3)]
    pub episodes: u32,
    /// Trees per forest.
    #[arg(long, default_value_t = 10)]
    pub trees: usize,
    #[arg(long, default_value_t = 6)]
    pub max_depth: usize,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The worker executable (default: `sfz-worker` next to `sfz`).
    #[arg(long)]
    pub worker: Option<PathBuf>,
}

/// Fits one model per op from records; ops seen fewer than 20 times get none.
pub fn fit(records: &[Record], config: &ForestConfig) -> SoftModels {
    let mut by_op: BTreeMap<_, Vec<&Record>> = BTreeMap::new();
    for r in records {
        by_op.entry(r.op).or_default().push(r);
    }
    let mut models = BTreeMap::new();
    for (op, rs) in by_op {
        if rs.len() < 20 {
            continue;
        }
        let xs: Vec<Vec<f64>> = rs.iter().map(|r| r.features.clone()).collect();
        let nonfinite: Vec<bool> = rs.iter().map(|r| r.nonfinite).collect();
        let imprecise: Vec<bool> = rs.iter().map(|r| r.imprecise).collect();
        let positives = nonfinite.iter().filter(|&&b| b).count() as u64;
        let any_imprecise = imprecise.iter().any(|&b| b);
        models.insert(
            op,
            OpModel {
                nonfinite: Forest::fit(&xs, &nonfinite, config),
                imprecise: any_imprecise.then(|| Forest::fit(&xs, &imprecise, config)),
                samples: rs.len() as u64,
                positives,
            },
        );
    }
    SoftModels { version: soft::VERSION, features: soft::feature_names(), models }
}

pub fn run(args: Args, color: Color) -> anyhow::Result<ExitCode> {
    let scratch = std::env::temp_dir().join(format!("sfz-sweep-{}.sfz", std::process::id()));
    let paths = if args.paths.is_empty() {
        let (text, n) = crate::numeric::sweep::programs();
        let file = args.sweep_out.clone().unwrap_or_else(|| scratch.clone());
        std::fs::write(&file, text)?;
        eprintln!("sfz train: {n} one-op sweep programs ({})", file.display());
        vec![file]
    } else {
        args.paths.clone()
    };
    let programs = super::hunt::programs(&paths, &[], color);
    let _ = std::fs::remove_file(&scratch);
    let Some(programs) = programs? else { return Ok(ExitCode::from(1)) };
    let worker_exe = args.worker.clone().unwrap_or_else(default_worker_exe);
    let mut worker = HuntWorker::start(&worker_exe, Duration::from_secs(60))?;
    let config = HuntConfig {
        strategy: Strategy::Random,
        budget: args.budget,
        episodes: args.episodes,
        seed: args.seed,
        models: None,
        collect: true,
        random_targets: false,
        max_numel: 256,
        max_dim: 8,
        deadline: None,
        wider: true,
        fixed: Vec::new(),
    };
    let mut records = Vec::new();
    for p in &programs {
        let mut o = hunt_program(&mut worker, p, &config);
        records.append(&mut o.records);
    }
    let models = fit(&records, &ForestConfig { trees: args.trees, max_depth: args.max_depth, min_leaf: 3, seed: args.seed });
    let text = serde_json::to_string(&models)?;
    std::fs::write(&args.out, text + "\n")?;
    let positives: u64 = models.models.values().map(|m| m.positives).sum();
    println!("trained {} op models from {} records ({} non-finite) of {} programs; wrote {}", models.models.len(), records.len(), positives, programs.len(), args.out.display());
    Ok(ExitCode::SUCCESS)
}
