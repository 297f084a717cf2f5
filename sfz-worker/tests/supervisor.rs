//! The supervisor with real worker processes: real signals, real hangs, real memory limits.
use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use sfz::ops::binding::{ArgSource, OpBinding, Transform};
use sfz::wire::case::{Arg, Case, DType, Fill, Layout, TensorRecipe};
use sfz::wire::outcome::Outcome;
use sfz::worker::Execution;
use sfz::worker::{fetch_catalog, Pool, PoolConfig, PoolError, RunStats};

const RAISE: u32 = 0;
const SPIN: u32 = 1;
const ALLOC: u32 = 2;
const EXIT: u32 = 3;
const EXP: u32 = 4;
const SEGFAULT: u32 = 5;
const LATE_ABORT: u32 = 6;
const OVERRUN: u32 = 7;
const DIV: u32 = 8;

fn op(name: &str, params: usize) -> OpBinding {
    OpBinding {
        name: name.into(),
        overload: String::new(),
        args: (0..params).map(|index| ArgSource::Param { index, transform: Transform::Identity }).collect(),
        schema: String::new(),
        forward: None,
    }
}

fn config(workers: usize, in_flight: usize) -> PoolConfig {
    PoolConfig {
        worker_exe: PathBuf::from(env!("CARGO_BIN_EXE_sfz-worker")),
        workers,
        in_flight,
        timeout: Duration::from_secs(20),
        memory_mb: Some(512),
        ops: vec![
            op("sfz_test::raise_signal", 1),
            op("sfz_test::spin", 1),
            op("sfz_test::alloc", 1),
            op("sfz_test::exit", 1),
            op("aten::exp", 1),
            op("sfz_test::segfault", 0),
            op("sfz_test::late_abort", 1),
            op("sfz_test::overrun", 1),
            OpBinding { overload: "Tensor_mode".into(), ..op("aten::div", 3) },
        ],
        ..PoolConfig::default()
    }
}

fn exp_case(seed: u64) -> Case {
    let t = TensorRecipe { dtype: DType::Float32, shape: vec![8], fill: Fill::Uniform { lo: -1.0, hi: 1.0 }, seed, layout: Layout::Contiguous, specials: vec![] };
    Case { op: EXP, args: vec![Arg::Tensor(t)], forward: None }
}

fn special(op: u32, v: i64) -> Case {
    Case { op, args: vec![Arg::Int(v)], forward: None }
}

/// Runs `cases` (ids are their positions) and returns every execution by id, checking each
/// case got exactly one.
fn run(pool: &Pool, cases: Vec<Case>) -> (HashMap<u64, Execution>, RunStats) {
    let n = cases.len();
    let queue = Mutex::new(cases.into_iter().enumerate().map(|(i, c)| (i as u64, c)).collect::<VecDeque<_>>());
    let results = Mutex::new(HashMap::new());
    let stats = pool.run(&|| queue.lock().unwrap().pop_front(), &|id, _case, exec| {
        let previous = results.lock().unwrap().insert(id, exec);
        assert!(previous.is_none(), "case {id} reported twice");
    });
    let results = results.into_inner().unwrap();
    assert_eq!(results.len(), n, "every case reported: {stats:?}");
    (results, stats)
}

fn returned(e: &Execution) -> bool {
    matches!(e, Execution::Completed(Outcome::Returned { .. }))
}

/// A case that returns and kills its worker later (as heap damage noticed at a later free) has
/// its answer lost with the worker when answers travel in batches. Re-sent among the others, it
/// would kill each replacement during another case, blaming innocents one after the other; the
/// re-sent cases go one at a time, so it is answered once and kills at most one more.
#[test]
fn a_case_whose_damage_shows_late_is_not_rerun_into_a_chain_of_deaths() {
    let pool = Pool::start(config(1, 8)).expect("pool");
    let mut cases = vec![special(LATE_ABORT, 30)];
    cases.extend((0..6).map(|_| special(SPIN, 150)));
    let (results, stats) = run(&pool, cases);
    assert!(returned(&results[&0]), "the late case itself returned: {:?}", results[&0]);
    let crashed: Vec<u64> = (1..7).filter(|i| matches!(results[i], Execution::Crashed { .. })).collect();
    assert!(!crashed.is_empty() && crashed.len() <= 2, "deaths blamed on {crashed:?}: {stats:?}");
}

#[test]
fn crashes_are_attributed_to_the_case_that_crashed_and_the_run_goes_on() {
    let stats = crash_run(true);
    // Forked replacements cost a fork, not a libtorch load.
    assert!(stats.mean_respawn().is_some_and(|d| d < Duration::from_millis(100)), "{:?}", stats.mean_respawn());
}

#[test]
fn without_the_fork_server_workers_are_spawned_and_crashes_handled_alike() {
    crash_run(false);
}

fn crash_run(fork_server: bool) -> RunStats {
    let pool = Pool::start(PoolConfig { fork_server, ..config(1, 16) }).unwrap();
    assert_eq!(pool.uses_fork_server(), fork_server, "{:?}", pool.fork_server_error());
    assert!(pool.load_errors().iter().all(Option::is_none), "{:?}", pool.load_errors());
    assert_eq!(pool.torch_version(), "2.13.0");
    let crashes = [(30, libc::SIGSEGV), (61, libc::SIGABRT), (62, libc::SIGFPE), (99, libc::SIGBUS), (100, libc::SIGSEGV)];
    let cases: Vec<Case> = (0..120)
        .map(|i| match crashes.iter().find(|(at, _)| *at == i) {
            Some(_) if i == 100 => Case { op: SEGFAULT, args: vec![], forward: None },
            Some((_, sig)) => special(RAISE, *sig as i64),
            None => exp_case(i),
        })
        .collect();
    let (results, stats) = run(&pool, cases);
    for (i, e) in &results {
        match crashes.iter().find(|(at, _)| *at == *i) {
            Some((_, sig)) => {
                let Execution::Crashed { signal, stderr, .. } = e else { panic!("case {i}: {e:?}") };
                assert_eq!(signal, sig, "case {i}");
                if *i != 100 {
                    assert!(stderr.contains(&format!("sfz_test: raising signal {sig}")), "case {i}: {stderr}");
                }
            }
            None => assert!(returned(e), "case {i}: {e:?}"),
        }
    }
    assert_eq!((stats.crashed, stats.completed, stats.restarts), (5, 115, 5), "{stats:?}");
    assert!(stats.errors.is_empty(), "{:?}", stats.errors);
    // The pool stays usable after a run.
    let (again, _) = run(&pool, (0..10).map(exp_case).collect());
    assert!(again.values().all(returned));
    stats
}

#[test]
fn losing_the_fork_server_falls_back_to_spawning_without_misreporting() {
    let pool = Pool::start(config(1, 8)).unwrap();
    let server = pool.fork_server_pid().expect("a fork server");
    // SAFETY: killing a process this test started.
    assert_eq!(unsafe { libc::kill(server as i32, libc::SIGKILL) }, 0);
    std::thread::sleep(Duration::from_millis(100));
    assert!(!pool.uses_fork_server());
    // The first crash happens in a worker the dead server forked: its status is unknowable, so
    // the case runs again on a spawned worker, where the real signal is seen.
    let cases: Vec<Case> = (0..30).map(|i| if i == 5 || i == 20 { special(RAISE, libc::SIGSEGV as i64) } else { exp_case(i) }).collect();
    let (results, stats) = run(&pool, cases);
    for i in [5, 20] {
        assert!(matches!(&results[&i], Execution::Crashed { signal, .. } if *signal == libc::SIGSEGV), "case {i}: {:?}", results[&i]);
    }
    assert_eq!(results.values().filter(|e| returned(e)).count(), 28);
    assert!(stats.errors.iter().any(|e| e.contains("after its fork server")), "{:?}", stats.errors);
}

/// The signature of a death, as a campaign keys its finding.
fn death_signature(e: &Execution) -> String {
    let Execution::Crashed { signal, stderr, frames, between_calls, .. } = e else { panic!("a death: {e:?}") };
    sfz::oracle::death_cause(sfz::oracle::Place::Call, *signal, stderr, frames, *between_calls).to_string()
}

#[test]
fn a_death_is_keyed_by_the_native_frame_it_died_in_not_by_its_signal() {
    let pool = Pool::start(config(1, 4)).unwrap();
    let int64 = |v: f64| Arg::Tensor(TensorRecipe { dtype: DType::Int64, shape: vec![4], fill: Fill::Constant(v), seed: 0, layout: Layout::Contiguous, specials: vec![] });
    let trunc = Case { op: DIV, args: vec![int64(i64::MIN as f64), int64(-1.0), Arg::Str("trunc".into())], forward: None };
    let (results, _) = run(&pool, vec![special(OVERRUN, 0), special(OVERRUN, 1), trunc, exp_case(1)]);
    // One overrun: glibc's abort at the free in one case, a segfault in the other, one function.
    let abort = &results[&0];
    assert!(matches!(abort, Execution::Crashed { signal, .. } if *signal == libc::SIGABRT), "{abort:?}");
    assert!(matches!(&results[&1], Execution::Crashed { signal, .. } if *signal == libc::SIGSEGV), "{:?}", results[&1]);
    assert_eq!(death_signature(abort), "memory error in {anon}::test_overrun");
    assert_eq!(death_signature(&results[&1]), death_signature(abort));
    // The frames are taken out of the stderr the finding shows; glibc's words stay.
    let Execution::Crashed { stderr, frames, between_calls, .. } = abort else { unreachable!() };
    assert!(!stderr.contains("sfz-frame") && stderr.contains("munmap_chunk(): invalid pointer"), "{stderr}");
    // It died inside the call, and the handler said so by saying nothing.
    assert!(!between_calls);
    assert!(frames.iter().any(|f| f.module.starts_with("libc")), "{frames:?}");
    // A real kernel, named from libtorch's symbol table: INT64_MIN / -1 traps in the division.
    let fpe = &results[&2];
    assert!(matches!(fpe, Execution::Crashed { signal, .. } if *signal == libc::SIGFPE), "{fpe:?}");
    let signature = death_signature(fpe);
    assert!(signature.starts_with("SIGFPE in at::native::") && signature.contains("div_trunc"), "{signature}\n{fpe:?}");
    assert!(returned(&results[&3]));
}

#[test]
fn hangs_time_out_and_only_the_hanging_case_is_blamed() {
    let pool = Pool::start(PoolConfig { timeout: Duration::from_millis(400), ..config(1, 16) }).unwrap();
    let cases: Vec<Case> = (0..40)
        .map(|i| {
            if i == 10 {
                special(SPIN, 60_000)
            } else if i == 20 {
                special(SPIN, 50)
            } else {
                exp_case(i)
            }
        })
        .collect();
    let (results, stats) = run(&pool, cases);
    let Execution::TimedOut { millis } = &results[&10] else { panic!("{:?}", results[&10]) };
    assert!((400..5000).contains(millis), "{millis}");
    assert!(matches!(&results[&20], Execution::Completed(Outcome::Returned { outputs, .. }) if outputs.is_empty()), "a 50 ms spin is not a hang");
    assert_eq!(results.values().filter(|e| returned(e)).count(), 39);
    assert_eq!((stats.timed_out, stats.restarts), (1, 1));
}

#[test]
fn running_out_of_memory_is_an_error_not_a_dead_parent() {
    let pool = Pool::start(config(1, 4)).unwrap();
    let (results, _) = run(&pool, vec![special(ALLOC, 8), special(ALLOC, 4096), exp_case(1)]);
    assert!(matches!(&results[&0], Execution::Completed(Outcome::Returned { .. })), "8 MB fits: {:?}", results[&0]);
    // RLIMIT_DATA makes the allocation fail inside libtorch, which raises (rather than the
    // kernel's OOM killer taking the machine down); the oracle reads it as out-of-memory.
    let Execution::Completed(Outcome::Raised { class, message, .. }) = &results[&1] else { panic!("{:?}", results[&1]) };
    assert!(message.contains("can't allocate memory"), "{class:?}: {message}");
    assert_eq!(sfz::oracle::errors::classify(*class, message), sfz::oracle::errors::ErrorKind::OutOfMemory);
    assert!(returned(&results[&2]));
}

#[test]
fn an_exit_from_inside_an_op_is_reported_with_its_code() {
    let pool = Pool::start(config(1, 8)).unwrap();
    let (results, stats) = run(&pool, vec![exp_case(0), special(EXIT, 7), exp_case(2)]);
    assert!(matches!(&results[&1], Execution::Exited { code: 7, .. }), "{:?}", results[&1]);
    assert!(returned(&results[&0]) && returned(&results[&2]));
    assert_eq!(stats.exited, 1);
}

#[test]
fn two_workers_share_a_run_with_crashes_in_both() {
    let pool = Pool::start(config(2, 8)).unwrap();
    let cases: Vec<Case> = (0..400).map(|i| if i % 50 == 7 { special(RAISE, libc::SIGSEGV as i64) } else { exp_case(i) }).collect();
    let (results, stats) = run(&pool, cases);
    assert_eq!(results.values().filter(|e| matches!(e, Execution::Crashed { signal, .. } if *signal == libc::SIGSEGV)).count(), 8);
    assert_eq!(results.values().filter(|e| returned(e)).count(), 392);
    assert_eq!(stats.restarts, 8);
    assert!(stats.mean_respawn().is_some_and(|d| d < Duration::from_secs(10)));
}

#[test]
fn a_worker_that_cannot_be_restarted_ends_its_share_of_the_run_cleanly() {
    // A link to the worker that disappears once the pool is up: the first crash needs a new
    // process, which cannot start.
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("sfz-worker");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_sfz-worker"), &exe).unwrap();
    let pool = Pool::start(PoolConfig { worker_exe: exe.clone(), fork_server: false, ..config(1, 4) }).unwrap();
    std::fs::remove_file(&exe).unwrap();
    let queue = Mutex::new((0..10u64).map(|i| (i, if i == 2 { special(RAISE, libc::SIGSEGV as i64) } else { exp_case(i) })).collect::<VecDeque<_>>());
    let seen = Mutex::new(Vec::new());
    let stats = pool.run(&|| queue.lock().unwrap().pop_front(), &|id, _, e| seen.lock().unwrap().push((id, e)));
    let seen = seen.into_inner().unwrap();
    assert!(seen.iter().any(|(id, e)| *id == 2 && matches!(e, Execution::Crashed { .. })), "{seen:?}");
    assert!(stats.errors.iter().any(|e| e.contains("cannot restart a worker") && e.contains("does not exist")), "{:?}", stats.errors);
    // Cases taken but never run are counted, not lost silently.
    assert_eq!(stats.cases + stats.unrun, 10 - queue.lock().unwrap().len() as u64, "{stats:?}");
    assert!(stats.unrun > 0);
}

#[test]
fn a_missing_worker_binary_is_a_clear_error() {
    let e = Pool::start(PoolConfig { worker_exe: PathBuf::from("/nonexistent/sfz-worker"), ..config(1, 1) }).err().expect("no pool");
    assert!(matches!(e, PoolError::WorkerMissing { .. }));
    assert!(e.to_string().contains("/nonexistent/sfz-worker") && e.to_string().contains("cargo build"), "{e}");
}

#[test]
fn a_worker_that_cannot_load_libtorch_says_how_to_fix_it() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("sfz-worker");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho 'sfz-worker: error while loading shared libraries: libtorch_cpu.so: cannot open shared object file: No such file or directory' >&2\nexit 127\n",
    )
    .unwrap();
    std::os::unix::fs::PermissionsExt::set_mode(&mut std::fs::metadata(&fake).unwrap().permissions(), 0o755);
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    // The fork server fails the same way; the pool falls back to spawning, which reports it.
    let e = Pool::start(PoolConfig { worker_exe: fake.clone(), ..config(1, 1) }).err().expect("no pool");
    assert!(matches!(e, PoolError::LibtorchMissing { .. }), "{e}");
    assert!(e.to_string().contains("scripts/setup.sh") && e.to_string().contains("libtorch_cpu.so"), "{e}");

    // Any other early death reports its status and stderr.
    std::fs::write(&fake, "#!/bin/sh\necho 'something else broke' >&2\nexit 3\n").unwrap();
    let e = Pool::start(PoolConfig { worker_exe: fake, ..config(1, 1) }).err().expect("no pool");
    assert!(matches!(&e, PoolError::StartupFailed { stderr, .. } if stderr.contains("something else broke")), "{e}");
}

#[test]
fn the_catalog_comes_from_a_worker() {
    let schemas = fetch_catalog(&PathBuf::from(env!("CARGO_BIN_EXE_sfz-worker"))).unwrap();
    assert!(schemas.len() >= 3466, "{}", schemas.len());
    assert!(schemas.iter().any(|s| s.starts_with("aten::conv2d(Tensor input")));
    assert!(schemas.iter().any(|s| s == "sfz_test::raise_signal(int sig) -> ()"));
    let fixture = include_str!("../../tests/fixtures/schemas-2.13.0.txt");
    // Overloads without a CPU kernel come marked; the fixture holds the bare schemas.
    let no_cpu = sfz::ops::catalog::NO_CPU;
    assert!(schemas.iter().any(|s| s.starts_with(&format!("{no_cpu}aten::addmm.dtype("))), "addmm.dtype is CUDA-only");
    assert!(schemas.iter().any(|s| s.starts_with("aten::addmm(")), "addmm runs on the CPU");
    let mut ours: Vec<&str> = schemas.iter().map(|s| s.strip_prefix(no_cpu).unwrap_or(s)).filter(|s| !s.starts_with("sfz_test::")).collect();
    ours.sort_unstable();
    assert_eq!(ours, fixture.lines().collect::<Vec<_>>(), "the fixture is this libtorch's catalog");
}

/// The nice value of each process whose parent is `parent` (from /proc/PID/stat).
fn children_nice(parent: u32) -> Vec<i64> {
    let mut nices = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // After the command's closing parenthesis: state, ppid, ... nice is the 17th field on.
        let Some((_, rest)) = stat.rsplit_once(')') else { continue };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.get(1).and_then(|p| p.parse::<u32>().ok()) == Some(parent) {
            nices.push(fields[16].parse().unwrap());
        }
    }
    nices
}

/// A pool's workers run at its nice value (the minimizer's yield the cores to the campaign's),
/// and so do the replacements of workers that died.
#[test]
fn a_pools_workers_run_at_its_nice_value() {
    let pool = Pool::start(PoolConfig { nice: 7, ..config(1, 1) }).unwrap();
    let server = pool.fork_server_pid().expect("a fork server");
    let (results, _) = run(&pool, vec![exp_case(1), special(RAISE, libc::SIGSEGV as i64), exp_case(2)]);
    assert!(matches!(&results[&1], Execution::Crashed { .. }), "{:?}", results[&1]);
    // A dead worker the server has not reaped yet keeps its nice value too.
    let nices = children_nice(server);
    assert!(!nices.is_empty() && nices.iter().all(|n| *n == 7), "the fork server's workers: {nices:?}");
}
