//! Numerical-bug hunting on the programs of `examples/numerical`: per strategy (random
//! mutation, gradient guidance with targets by round robin, at random, and by the soft
//! assertions, which are trained on one-op sweeps, not on these programs), how many bug programs
//! are found, the mean and maximum time to find one, and false alarms on the fixed variants
//! (`*_fixed`, target 0).
//!
//!     cargo bench -p sfz-worker --bench numeric
//!
//! Under `cargo test --all-targets` (no `--bench` argument) it runs as a smoke test on a few
//! programs with a small budget.
use std::path::PathBuf;
use std::time::Duration;

use sfz::numeric::driver::{hunt_program, HuntConfig, Status};
use sfz::wire::program::hunt::Strategy;
use sfz::wire::program::soft;
use sfz::worker::HuntWorker;

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/numerical");
    let checked = sfz::check::check_paths(&[dir]);
    assert!(!checked.has_errors(), "examples/numerical has errors");
    let mut programs: Vec<_> = checked.spec.programs.into_iter().filter(|p| p.runnable).collect();
    if !full {
        programs.retain(|p| p.name.starts_with("naive_softmax") || p.name.starts_with("standardize"));
    }
    let bugs = programs.iter().filter(|p| !p.name.ends_with("_fixed")).count();
    let fixed = programs.len() - bugs;
    let seeds: Vec<u64> = if full { vec![0, 1, 2] } else { vec![0] };
    let (budget, episodes) = if full { (400, 5) } else { (100, 2) };
    let models = soft::load(None).ok().filter(|m| !m.models.is_empty());
    let mut worker = HuntWorker::start(&PathBuf::from(env!("CARGO_BIN_EXE_sfz-worker")), Duration::from_secs(60)).expect("a worker starts");
    println!("numerical-bug hunting: {bugs} bug programs, {fixed} fixed variants, seeds {seeds:?}, budget {budget} evaluations x {episodes} episodes");
    println!("{:<18} {:>9} {:>10} {:>10} {:>12} {:>11} {:>13}", "strategy", "found", "mean ms", "max ms", "worker ms", "evals", "false alarms");
    // Targets: round robin (no models), at random, by the soft assertions.
    let runs = [
        ("random", Strategy::Random, false, false),
        ("gradient", Strategy::Gradient, false, false),
        ("gradient+random", Strategy::Gradient, false, true),
        ("gradient+soft", Strategy::Gradient, true, false),
    ];
    for (name, strategy, with_soft, random_targets) in runs {
        if with_soft && models.is_none() {
            println!("{name:<18} (no soft-assertion models)");
            continue;
        }
        let (mut found, mut total, mut alarms) = (0usize, 0usize, 0usize);
        let (mut times, mut worker_times, mut evals) = (Vec::new(), Vec::new(), Vec::new());
        for &seed in &seeds {
            let config = HuntConfig { strategy, budget, episodes, seed, models: if with_soft { models.clone() } else { None }, random_targets, ..HuntConfig::default() };
            for p in &programs {
                let o = hunt_program(&mut worker, p, &config);
                let is_fixed = p.name.ends_with("_fixed");
                match (&o.status, is_fixed) {
                    (Status::Found(f), false) => {
                        found += 1;
                        times.push(o.elapsed.as_secs_f64() * 1e3);
                        worker_times.push(f.micros as f64 / 1e3);
                        evals.push(o.evals as f64);
                    }
                    (Status::Found(_), true) => alarms += 1,
                    (Status::Rejected(m) | Status::Crashed(m), _) => panic!("{}: {m}", p.name),
                    _ => {}
                }
                total += !is_fixed as usize;
            }
        }
        let mean = |v: &[f64]| if v.is_empty() { 0.0 } else { v.iter().sum::<f64>() / v.len() as f64 };
        let max = times.iter().copied().fold(0.0, f64::max);
        println!(
            "{name:<18} {:>9} {:>10.1} {:>10.1} {:>12.2} {:>11.0} {:>13}",
            format!("{found}/{total}"),
            mean(&times),
            max,
            mean(&worker_times),
            mean(&evals),
            format!("{alarms}/{}", fixed * seeds.len())
        );
        if !full {
            assert_eq!(alarms, 0, "{name}: a fixed variant was flagged");
        }
    }
    println!("(mean/max ms: wall time per found program in the parent, input solving included; worker ms: in-worker time of the finding episode until the oracle fired; evals: program evaluations spent)");
}
