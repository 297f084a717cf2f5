//! Execution throughput on the 20 starting ops (float32, 100–300 elements, one thread):
//! the bare tch ceiling, the in-process executor from recipes, the worker pool at several
//! widths and depths, failing calls, and worker respawn.
//!
//!     cargo bench -p sfz-worker --bench exec
//!
//! Under `cargo test --all-targets` (no `--bench` argument) it runs as a quick smoke test with
//! small counts, so the suite stays fast and the benchmark cannot rot.
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use sfz::ops::binding::{ArgSource, OpBinding, Transform};
use sfz::ops::catalog::Catalog;
use sfz::ops::registry;
use sfz::wire::case::{Arg, Case, DType, Fill, Layout, TensorRecipe};
use sfz::wire::outcome::Outcome;
use sfz::worker::Execution;
use sfz::worker::{Pool, PoolConfig};
use sfz_worker::runtime::{self, materialize, Executor};
use tch::{Kind, Tensor};

fn f32s(shape: &[i64], seed: u64) -> TensorRecipe {
    TensorRecipe { dtype: DType::Float32, shape: shape.to_vec(), fill: Fill::Uniform { lo: 0.5, hi: 2.0 }, seed, layout: Layout::Contiguous, specials: vec![] }
}

fn ints(shape: &[i64], hi: i64, seed: u64) -> TensorRecipe {
    TensorRecipe { dtype: DType::Int64, shape: shape.to_vec(), fill: Fill::Int { lo: 0, hi }, seed, layout: Layout::Contiguous, specials: vec![] }
}

/// (api, arguments) for each of the 20 ops, inputs of 100–300 elements.
fn workload(seed: u64) -> Vec<(&'static str, Vec<Arg>)> {
    let x = || Arg::Tensor(f32s(&[12, 16], seed));
    vec![
        ("torch.exp", vec![x()]),
        ("torch.log", vec![x()]),
        ("torch.sqrt", vec![x()]),
        ("torch.sum", vec![x(), Arg::IntList(vec![1]), Arg::Bool(false)]),
        ("torch.logsumexp", vec![x(), Arg::IntList(vec![1]), Arg::Bool(false)]),
        ("torch.matmul", vec![x(), Arg::Tensor(f32s(&[16, 8], seed + 1))]),
        ("torch.linalg.inv", vec![Arg::Tensor(f32s(&[2, 8, 8], seed))]),
        (
            "torch.nn.functional.conv2d",
            vec![Arg::Tensor(f32s(&[1, 2, 10, 10], seed)), Arg::Tensor(f32s(&[2, 2, 3, 3], seed + 1)), Arg::None, Arg::Omitted, Arg::Omitted, Arg::Omitted, Arg::Omitted],
        ),
        ("torch.nn.functional.softmax", vec![x(), Arg::Int(1), Arg::Omitted]),
        ("torch.nn.functional.max_pool2d", vec![Arg::Tensor(f32s(&[1, 2, 10, 10], seed)), Arg::IntList(vec![2, 2]), Arg::None, Arg::Omitted, Arg::Omitted, Arg::Omitted]),
        ("torch.nn.functional.embedding", vec![Arg::Tensor(ints(&[16], 10, seed)), Arg::Tensor(f32s(&[10, 16], seed + 1)), Arg::None]),
        ("torch.reshape", vec![x(), Arg::IntList(vec![16, 12])]),
        ("torch.gather", vec![x(), Arg::Int(1), Arg::Tensor(ints(&[12, 4], 16, seed))]),
        ("torch.index_select", vec![x(), Arg::Int(0), Arg::Tensor(ints(&[6], 12, seed))]),
        ("torch.relu", vec![x()]),
        ("torch.tanh", vec![x()]),
        ("torch.mean", vec![x(), Arg::IntList(vec![0]), Arg::Bool(false)]),
        ("torch.cumsum", vec![x(), Arg::Int(1)]),
        ("torch.transpose", vec![x(), Arg::Int(0), Arg::Int(1)]),
        ("torch.cat", vec![Arg::TensorList(vec![f32s(&[6, 16], seed), f32s(&[6, 16], seed + 1)]), Arg::Int(0)]),
    ]
}

/// The bare tch equivalent of `workload`, on tensors made once.
fn bare_tch(inputs: &[Vec<Tensor>]) {
    for (k, ts) in inputs.iter().enumerate() {
        let _ = match k {
            0 => ts[0].exp(),
            1 => ts[0].log(),
            2 => ts[0].sqrt(),
            3 => ts[0].sum_dim_intlist(&[1i64][..], false, None::<Kind>),
            4 => ts[0].logsumexp(&[1i64][..], false),
            5 => ts[0].matmul(&ts[1]),
            6 => Tensor::linalg_inv(&ts[0]),
            7 => ts[0].conv2d(&ts[1], None::<Tensor>, [1, 1], [0, 0], [1, 1], 1),
            8 => ts[0].softmax(1, None::<Kind>),
            9 => ts[0].max_pool2d([2, 2], [2, 2], [0, 0], [1, 1], false),
            10 => Tensor::embedding(&ts[1], &ts[0], -1, false, false),
            11 => ts[0].reshape([16, 12]),
            12 => ts[0].gather(1, &ts[1], false),
            13 => ts[0].index_select(0, &ts[1]),
            14 => ts[0].relu(),
            15 => ts[0].tanh(),
            16 => ts[0].mean_dim(&[0i64][..], false, None::<Kind>),
            17 => ts[0].cumsum(1, None::<Kind>),
            18 => ts[0].transpose(0, 1),
            _ => Tensor::cat(ts, 0),
        };
    }
}

fn bindings() -> (Vec<OpBinding>, HashMap<&'static str, u32>) {
    let catalog = Catalog::from_schemas(runtime::catalog_schemas());
    let checked = sfz::check::check_paths(&[Path::new(env!("CARGO_MANIFEST_DIR")).join("../specs")]);
    let by_name: HashMap<String, _> = checked.spec.apis.iter().map(|a| (a.name.clone(), a)).collect();
    let mut ops = Vec::new();
    let mut index = HashMap::new();
    for (name, _) in workload(0) {
        let binding = registry::resolve(by_name[name], &catalog).expect("resolves");
        index.insert(name, ops.len() as u32);
        ops.push(binding);
    }
    (ops, index)
}

/// The same case with every tensor seeded anew, as a generator would make it.
fn reseeded(c: &Case, seed: u64) -> Case {
    let mut c = c.clone();
    for a in &mut c.args {
        match a {
            Arg::Tensor(r) => r.seed = seed,
            Arg::TensorList(rs) => rs.iter_mut().for_each(|r| r.seed = seed),
            _ => {}
        }
    }
    c
}

/// `fuzz::run` over the workload's APIs (their specs, solved pools, no mutation, no checks, no
/// triage) for `seconds`, then the pool alone on as many made cases, 2 workers x 16 in flight
/// each; the parent's CPU per case of each.
fn campaign_beside_pool(worker_exe: &Path, ops: &[OpBinding], cases: u64, seconds: u64) {
    use sfz::fuzz::{self, FuzzConfig, Observer};
    use sfz::gen::{GenConfig, Mutation};
    struct Quiet;
    impl Observer for Quiet {
        fn progress(&self, _: u64, _: u64, _: Duration) {}
        fn finding(&self, _: &sfz::findings::Finding) {}
        fn trouble(&self, message: &str) {
            eprintln!("sfz: {message}");
        }
    }
    let checked = sfz::check::check_paths(&[Path::new(env!("CARGO_MANIFEST_DIR")).join("../specs")]);
    let catalog = Catalog::from_schemas(runtime::catalog_schemas());
    let (mut plans, _) = sfz::plan::plan(&checked.spec, &catalog);
    let names: Vec<&str> = workload(0).iter().map(|(n, _)| *n).collect();
    plans.retain(|p| names.contains(&p.api.name.as_str()));
    plans.dedup_by(|a, b| a.api.name == b.api.name);
    plans.iter_mut().for_each(|p| p.checks.clear());
    let gen = GenConfig { seed: 5, pool_size: 16, mutation: Mutation::none(), ..GenConfig::default() };
    let (pools, _, skipped) = sfz::plan::solve_pools(&plans, &gen);
    let out = tempfile::tempdir().expect("tempdir");
    let store = sfz::findings::Store::open(out.path()).expect("store");
    let config = FuzzConfig {
        seed: 5,
        iterations: None,
        time: Some(Duration::from_secs(seconds)),
        pool: PoolConfig { worker_exe: worker_exe.to_path_buf(), workers: 2, in_flight: 16, check_share: None, ..PoolConfig::default() },
        gen,
        minimize: None,
        locations: Vec::new(),
        quarantine: None,
        first_case: 0,
        elapsed_before: 0.0,
        baseline: None,
        deadline: None,
        started: None,
    };
    let cpu = || {
        let mut u = unsafe { std::mem::zeroed::<libc::rusage>() };
        unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
        let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 * 1e-6;
        t(u.ru_utime) + t(u.ru_stime)
    };
    let before = cpu();
    let summary = fuzz::run(&plans, fuzz::Pools::Solved(pools), skipped, &store, &config, &Quiet).expect("campaign runs");
    let campaign_cpu = (cpu() - before) / summary.executions.max(1) as f64;
    println!("campaign (fuzz::run), 2 x 16, crash-only {:>9.0}/s  ({} APIs, {:.1} µs parent CPU per case)", summary.execs_per_second, plans.len(), campaign_cpu * 1e6);
    let pool = Pool::start(PoolConfig { worker_exe: worker_exe.to_path_buf(), workers: 2, in_flight: 16, ops: ops.to_vec(), ..PoolConfig::default() }).expect("pool starts");
    let templates: Vec<Case> = workload(1).into_iter().enumerate().map(|(k, (_, args))| Case { op: k as u32, args, forward: None }).collect();
    let next_id = AtomicU64::new(0);
    let next = || {
        let id = next_id.fetch_add(1, Ordering::Relaxed);
        (id < cases).then(|| (id, reseeded(&templates[(id % 20) as usize], id)))
    };
    let before = cpu();
    let stats = pool.run(&next, &|_, _, _| {});
    println!("pool beside it, 2 x 16, made cases        {}  ({:.1} µs parent CPU per case)", rate(stats.cases, stats.elapsed), (cpu() - before) / stats.cases.max(1) as f64 * 1e6);
}

fn rate(n: u64, d: Duration) -> String {
    format!("{:>9.0}/s", n as f64 / d.as_secs_f64())
}

/// The time of a case with the `gradient` check (reverse and forward mode, finite differences
/// at 4 elements) against the call alone, for an elementwise op, a reduction, a linear-algebra
/// op and a convolution.
fn gradient_cost(ops: &[OpBinding], index: &HashMap<&'static str, u32>, rounds: u64) {
    use sfz::wire::oracle::Oracle;
    use sfz::wire::variant::{Accuracy, Check, Tolerance, Tolerances, Variant};
    let check = Check {
        oracle: Oracle::Gradient,
        variant: Variant::Gradient { eps: 1e-6, samples: 4 },
        tolerances: Tolerances::uniform(Tolerance { rtol: 1e-3, atol: 1e-5 }),
        accuracy: Accuracy::Backward,
    };
    let mut ex = Executor::new();
    assert!(ex.load(ops).iter().all(Option::is_none));
    ex.set_checks(ops.iter().map(|_| vec![check.clone()]).collect());
    let mut plain = Executor::new();
    assert!(plain.load(ops).iter().all(Option::is_none));
    for (class, name) in [("elementwise", "torch.exp"), ("reduction", "torch.logsumexp"), ("linalg", "torch.linalg.inv"), ("convolution", "torch.nn.functional.conv2d")] {
        let args = workload(1).into_iter().find(|(n, _)| *n == name).expect("in the workload").1;
        let case = Case { op: index[name], args, forward: None };
        let t = Instant::now();
        for _ in 0..rounds {
            plain.run(&case);
        }
        let alone = t.elapsed().as_secs_f64() / rounds as f64;
        let t = Instant::now();
        let mut outcome = None;
        for _ in 0..rounds {
            outcome = Some(ex.run_checked(&case, &mut |_| {}).1.remove(0).outcome);
        }
        let checked = t.elapsed().as_secs_f64() / rounds as f64;
        let verdict = format!("{:?}", outcome.expect("ran"));
        println!(
            "gradient check, {class:<12} ({name}) {:>8.1} µs vs {:>7.1} µs alone ({:.0}x): {}",
            checked * 1e6,
            alone * 1e6,
            checked / alone,
            verdict.chars().take(60).collect::<String>()
        );
    }
}

fn main() {
    // `cargo bench` passes --bench; `cargo test` runs this as a smoke test.
    let full = std::env::args().any(|a| a == "--bench");
    let scale = |n: u64| if full { n } else { (n / 100).max(20) };
    runtime::init(1);
    let (ops, index) = bindings();
    let cases = |seed: u64| -> Vec<Case> { workload(seed).into_iter().map(|(name, args)| Case { op: index[name], args, forward: None }).collect() };

    // 1. Ceiling: tch calls on tensors made once.
    let inputs: Vec<Vec<Tensor>> = workload(1).iter().map(|(_, args)| args.iter().flat_map(Arg::tensors).map(|r| materialize(r).expect("builds")).collect()).collect();
    let rounds = scale(2000);
    let t = Instant::now();
    for _ in 0..rounds {
        bare_tch(&inputs);
    }
    println!("bare tch loop, inputs made once          {}", rate(rounds * 20, t.elapsed()));

    // 2. In-process executor, inputs rebuilt from recipes every call.
    let mut ex = Executor::new();
    assert!(ex.load(&ops).iter().all(Option::is_none));
    let all: Vec<Case> = (0..rounds).flat_map(cases).collect();
    let t = Instant::now();
    let mut failed = 0;
    for c in &all {
        if matches!(ex.run(c), Outcome::Raised { .. }) {
            failed += 1;
        }
    }
    println!("executor from recipes (in process)       {}  ({failed} raised)", rate(all.len() as u64, t.elapsed()));
    assert_eq!(failed, 0, "every benchmark case returns");

    // 2b. One gradient check per class of operator, against the call alone (same inputs).
    gradient_cost(&ops, &index, scale(200));

    // 3. Failing calls: matmul with mismatched shapes.
    let bad = Case { op: index["torch.matmul"], args: vec![Arg::Tensor(f32s(&[12, 16], 1)), Arg::Tensor(f32s(&[8, 8], 2))], forward: None };
    let n = scale(20_000);
    let t = Instant::now();
    for _ in 0..n {
        let o = ex.run(&bad);
        debug_assert!(matches!(o, Outcome::Raised { .. }));
    }
    println!("failing call (executor, C10 error)       {}", rate(n, t.elapsed()));
    let mistyped = Case { op: index["torch.cumsum"], args: vec![Arg::Tensor(f32s(&[12, 16], 1)), Arg::Float(1.0)], forward: None };
    let t = Instant::now();
    for _ in 0..n {
        ex.run(&mistyped);
    }
    println!("failing call (executor, schema error)    {}", rate(n, t.elapsed()));

    // 4. The pool: the median of three runs per configuration (the machine is shared).
    let worker_exe = PathBuf::from(env!("CARGO_BIN_EXE_sfz-worker"));
    let templates = cases(1);
    for workers in [1, 2] {
        for in_flight in [1, 16, 64] {
            let pool = Pool::start(PoolConfig { worker_exe: worker_exe.clone(), workers, in_flight, ops: ops.clone(), ..PoolConfig::default() }).expect("pool starts");
            let total: u64 = scale(if in_flight == 1 { 20_000 } else { 100_000 });
            let mut rates = Vec::new();
            let mut not_returned = 0;
            for _ in 0..if full { 3 } else { 1 } {
                let next_id = AtomicU64::new(0);
                let errors = AtomicU64::new(0);
                let next = || {
                    let id = next_id.fetch_add(1, Ordering::Relaxed);
                    (id < total).then(|| (id, reseeded(&templates[(id % 20) as usize], id)))
                };
                let sink = |_id: u64, _c: &Case, e: Execution| {
                    if !matches!(e, Execution::Completed(Outcome::Returned { .. })) {
                        errors.fetch_add(1, Ordering::Relaxed);
                    }
                };
                let stats = pool.run(&next, &sink);
                rates.push(stats.cases as f64 / stats.elapsed.as_secs_f64());
                not_returned += errors.load(Ordering::Relaxed);
            }
            rates.sort_by(f64::total_cmp);
            let runs: Vec<String> = rates.iter().map(|r| format!("{r:.0}")).collect();
            println!("pool: {workers} worker(s) x {in_flight:>2} in flight       {:>9.0}/s  (runs: {}; {not_returned} not returned)", rates[rates.len() / 2], runs.join(" "));
            assert_eq!(not_returned, 0, "every benchmark case returns");
        }
    }

    // 4b. The whole campaign (`fuzz::run`, crash-only: no checks, no triage) on the same 20
    // ops' specs, beside the pool that replays made cases: what the parent costs per case.
    campaign_beside_pool(&worker_exe, &ops, scale(100_000), if full { 10 } else { 1 });

    // 5. Respawn: every case kills its worker, with and without the fork server.
    let crash = OpBinding {
        name: "sfz_test::raise_signal".into(),
        overload: String::new(),
        args: vec![ArgSource::Param { index: 0, transform: Transform::Identity }],
        schema: String::new(),
        forward: None,
    };
    for fork_server in [true, false] {
        let pool = Pool::start(PoolConfig { worker_exe: worker_exe.clone(), workers: 1, in_flight: 1, fork_server, ops: vec![crash.clone()], ..PoolConfig::default() })
            .expect("pool starts");
        assert_eq!(pool.uses_fork_server(), fork_server);
        let next_id = AtomicU64::new(0);
        let crashes = if full {
            if fork_server {
                200
            } else {
                20
            }
        } else {
            3
        };
        let next = || {
            let id = next_id.fetch_add(1, Ordering::Relaxed);
            (id < crashes).then(|| (id, Case { op: 0, args: vec![Arg::Int(libc::SIGSEGV as i64)], forward: None }))
        };
        let stats = pool.run(&next, &|_, _, _| {});
        assert_eq!(stats.crashed, crashes);
        println!(
            "respawn after a crash ({})  {:>8.1} ms mean over {} restarts ({} crashes/s)",
            if fork_server { "fork server" } else { "fresh spawn" },
            stats.mean_respawn().unwrap_or_default().as_secs_f64() * 1e3,
            stats.restarts,
            rate(stats.crashed, stats.elapsed).trim()
        );
    }
    let t = Instant::now();
    let n = if full { 5 } else { 1 };
    for _ in 0..n {
        drop(Pool::start(PoolConfig { worker_exe: worker_exe.clone(), workers: 1, fork_server: false, ops: ops.clone(), ..PoolConfig::default() }).expect("pool starts"));
    }
    println!("cold start of one worker (20 ops loaded)  {:>8.1} ms", t.elapsed().as_secs_f64() * 1e3 / n as f64);
}
