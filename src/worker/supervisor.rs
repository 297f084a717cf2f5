//! The parent's side of isolation: a pool of long-lived `sfz-worker` processes, each kept busy
//! with several cases in flight, watched for death and hangs, and restarted.
//!
//! One case in flight per worker caps it near 8k cases/s on pipe latency, so each worker thread
//! keeps up to `in_flight` cases queued in its worker. When the worker dies, the shared progress
//! page (`worker::progress`) names the case it was running: that case gets `Crashed` or
//! `Exited`, and every other queued case is sent again to the replacement. A case running past
//! `timeout` gets the worker SIGKILLed and `TimedOut`.
//!
//! **Invariant:** nothing a worker does can panic or kill the parent. Writes to a dead worker
//! fail with EPIPE (SIGPIPE is ignored), reads see EOF, and every failure ends in a restart.
//! This module never links libtorch.
use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::os::fd::AsRawFd;
use std::os::fd::OwnedFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::forkserver::{self, ForkServer};
use super::progress::{monotonic_ns, Progress};
use super::protocol::{read_frame, write_frame, Request, Response};
use super::{Execution, EARLIER_CASES};
use crate::ops::binding::OpBinding;
use crate::wire::case::Case;
use crate::wire::variant::Check;

/// Bytes of a worker's stderr kept for crash reports.
const STDERR_TAIL: usize = 16 << 10;
/// Pipes this large hold a whole window of requests or responses, so neither side blocks on a
/// write while the other does too.
const PIPE_BYTES: i32 = 1 << 20;
/// Culprit-less deaths in a row after which a worker slot gives up.
const MAX_BLIND_DEATHS: u32 = 3;

/// How to run the pool.
#[derive(Clone, Debug)]
pub struct PoolConfig {
    /// The `sfz-worker` binary.
    pub worker_exe: PathBuf,
    /// Worker processes.
    pub workers: usize,
    /// Cases queued in each worker at once.
    pub in_flight: usize,
    /// How long one case may run before its worker is killed.
    pub timeout: Duration,
    /// Memory each worker may allocate beyond its loaded size (RLIMIT_DATA); None: no limit.
    pub memory_mb: Option<u64>,
    /// How long a worker may take to load libtorch and say it is ready.
    pub startup_timeout: Duration,
    /// Fork workers from a fork server that loaded libtorch once (a restart costs a fork, not a
    /// libtorch load). Without it, or if it cannot start, each worker is a fresh process.
    pub fork_server: bool,
    /// The operators cases refer to by index.
    pub ops: Vec<OpBinding>,
    /// Differential checks per op (parallel to `ops`, or empty for none); cases of an op with
    /// checks come back as `Execution::Checked`.
    pub checks: Vec<Vec<Check>>,
    /// Check only as many cases as keep the time in checks within this share of the rest
    /// (`worker::budget`); None: every case. Only a campaign's main pool sets it: confirming,
    /// minimizing and replaying a finding must run its check.
    pub check_share: Option<f64>,
    /// The workers' nice value (0: the caller's priority). The campaign's minimizer, confirmation
    /// and culprit search run at a lower priority, so the campaign keeps the cores they share.
    pub nice: i32,
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            worker_exe: default_worker_exe(),
            workers: thread::available_parallelism().map_or(1, |n| n.get()),
            in_flight: 16,
            timeout: Duration::from_secs(10),
            memory_mb: Some(4096),
            startup_timeout: Duration::from_secs(60),
            // SFZ_FORK_SERVER=0: every worker a fresh process (to tell a fork artifact from a bug).
            fork_server: std::env::var_os("SFZ_FORK_SERVER").is_none_or(|v| v != "0"),
            ops: Vec::new(),
            checks: Vec::new(),
            check_share: None,
            nice: 0,
        }
    }
}

/// `sfz-worker` next to the running executable.
pub fn default_worker_exe() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    exe.parent().unwrap_or(Path::new(".")).join("sfz-worker")
}

/// Why workers could not be started or asked something.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    /// No file at the worker path.
    #[error("the worker binary `{}` does not exist; build it with `cargo build` (the `sfz-worker` package) or pass its path", path.display())]
    WorkerMissing { path: PathBuf },
    /// The dynamic loader could not find libtorch; `stderr` is what it said.
    #[error("the worker cannot load libtorch:\n{stderr}\nrun scripts/setup.sh to install libtorch 2.13.0, then rebuild")]
    LibtorchMissing { stderr: String },
    /// The process could not be started at all.
    #[error("cannot start the worker `{}`: {source}", path.display())]
    Spawn { path: PathBuf, source: io::Error },
    /// The worker died before saying it was ready.
    #[error("the worker exited during start-up ({status}):\n{stderr}")]
    StartupFailed { status: String, stderr: String },
    /// The worker said nothing within the start-up timeout.
    #[error("the worker did not become ready within {timeout:?}:\n{stderr}")]
    StartupTimeout { timeout: Duration, stderr: String },
    /// The worker answered something unexpected.
    #[error("the worker broke the protocol: {0}")]
    Protocol(String),
    /// Reading or writing a pipe failed.
    #[error("i/o with the worker failed: {0}")]
    Io(#[from] io::Error),
}

/// What a run did.
#[derive(Clone, Debug, Default)]
pub struct RunStats {
    /// Cases handed to the sink.
    pub cases: u64,
    pub completed: u64,
    pub crashed: u64,
    pub exited: u64,
    pub timed_out: u64,
    /// Workers started to replace dead or killed ones.
    pub restarts: u64,
    /// Total time spent starting replacements.
    pub respawn: Duration,
    /// Cases taken from `next` that never ran (a worker could not be restarted).
    pub unrun: u64,
    /// Infrastructure problems (not findings): failed restarts, deaths between cases.
    pub errors: Vec<String>,
    pub elapsed: Duration,
}

impl RunStats {
    fn merge(&mut self, o: RunStats) {
        self.cases += o.cases;
        self.completed += o.completed;
        self.crashed += o.crashed;
        self.exited += o.exited;
        self.timed_out += o.timed_out;
        self.restarts += o.restarts;
        self.respawn += o.respawn;
        self.unrun += o.unrun;
        self.errors.extend(o.errors);
    }

    /// Mean time to start a replacement worker.
    pub fn mean_respawn(&self) -> Option<Duration> {
        (self.restarts > 0).then(|| self.respawn / self.restarts as u32)
    }
}

/// A pool of started workers.
pub struct Pool {
    config: PoolConfig,
    /// Declared before `forkserver` so that workers are gone before their server.
    slots: Vec<Mutex<Option<Worker>>>,
    forkserver: Option<Arc<ForkServer>>,
    /// Why the fork server is not in use, when it was asked for.
    forkserver_error: Option<String>,
    load_errors: Vec<Option<String>>,
    check_errors: Vec<Option<String>>,
    torch_version: String,
}

impl Pool {
    /// Starts `config.workers` workers (concurrently) and loads the ops into each.
    pub fn start(config: PoolConfig) -> Result<Pool, PoolError> {
        ignore_sigpipe();
        if !config.worker_exe.is_file() {
            return Err(PoolError::WorkerMissing { path: config.worker_exe.clone() });
        }
        let (forkserver, forkserver_error) = if config.fork_server {
            match ForkServer::start(&config.worker_exe, config.startup_timeout) {
                Ok(f) => (Some(Arc::new(f)), None),
                Err(e) => (None, Some(e.to_string())),
            }
        } else {
            (None, None)
        };
        let server = forkserver.as_ref();
        let started: Vec<Result<(Worker, Loaded), PoolError>> = thread::scope(|s| {
            let handles: Vec<_> = (0..config.workers.max(1)).map(|_| s.spawn(|| Worker::start(&config, server))).collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err(PoolError::Protocol("worker start-up panicked (a bug in sfz)".into())))).collect()
        });
        let mut slots = Vec::new();
        let mut loaded = Loaded::default();
        for r in started {
            let (worker, l) = r?;
            loaded = l;
            slots.push(Mutex::new(Some(worker)));
        }
        Ok(Pool { config, slots, forkserver, forkserver_error, load_errors: loaded.ops, check_errors: loaded.checks, torch_version: loaded.torch_version })
    }

    /// True when workers are forked from a fork server.
    pub fn uses_fork_server(&self) -> bool {
        self.forkserver.as_ref().is_some_and(|f| f.alive())
    }

    /// The fork server's process id, when there is one.
    pub fn fork_server_pid(&self) -> Option<u32> {
        self.forkserver.as_ref().map(|f| f.pid())
    }

    /// Why the fork server asked for in the config is not in use.
    pub fn fork_server_error(&self) -> Option<&str> {
        self.forkserver_error.as_deref()
    }

    /// Per op of the config: None when every worker resolved it, else why not.
    pub fn load_errors(&self) -> &[Option<String>] {
        &self.load_errors
    }

    /// Per op of the config: None when every differential check can run, else why not.
    pub fn check_errors(&self) -> &[Option<String>] {
        &self.check_errors
    }

    /// The libtorch version the workers report.
    pub fn torch_version(&self) -> &str {
        &self.torch_version
    }

    pub fn config(&self) -> &PoolConfig {
        &self.config
    }

    /// Runs cases until `next` returns None and every case has an execution. One thread per
    /// worker pulls from `next` and reports through `sink`, both called concurrently.
    pub fn run(&self, next: &(dyn Fn() -> Option<(u64, Case)> + Sync), sink: &(dyn Fn(u64, &Case, Execution) + Sync)) -> RunStats {
        let start = Instant::now();
        let mut total = RunStats::default();
        let per_worker: Vec<RunStats> = thread::scope(|s| {
            let handles: Vec<_> = self
                .slots
                .iter()
                .map(|slot| {
                    s.spawn(move || {
                        let mut guard = slot.lock().unwrap_or_else(|e| e.into_inner());
                        self.drive(&mut guard, next, sink)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(|_| RunStats { errors: vec!["a worker thread panicked (a bug in sfz)".into()], ..Default::default() })).collect()
        });
        for s in per_worker {
            total.merge(s);
        }
        total.elapsed = start.elapsed();
        total
    }

    /// Ends every worker; the next run starts fresh ones (forked from the server: milliseconds).
    /// For running a case alone, in a process no earlier case touched.
    pub fn retire(&self) {
        for slot in &self.slots {
            slot.lock().unwrap_or_else(|e| e.into_inner()).take();
        }
    }

    /// Runs `cases` and returns their executions in order (None for a case that never ran
    /// because a worker could not be restarted).
    pub fn run_batch(&self, cases: &[Case]) -> Vec<Option<Execution>> {
        let queue = Mutex::new(cases.iter().cloned().enumerate().map(|(i, c)| (i as u64, c)).collect::<VecDeque<_>>());
        let results = Mutex::new(vec![None; cases.len()]);
        self.run(&|| queue.lock().unwrap_or_else(|e| e.into_inner()).pop_front(), &|id, _, exec| {
            if let Some(slot) = results.lock().unwrap_or_else(|e| e.into_inner()).get_mut(id as usize) {
                *slot = Some(exec);
            }
        });
        results.into_inner().unwrap_or_else(|e| e.into_inner())
    }

    /// One worker's loop: keep `in_flight` cases queued, collect answers, handle deaths.
    fn drive(&self, slot: &mut Option<Worker>, next: &(dyn Fn() -> Option<(u64, Case)> + Sync), sink: &(dyn Fn(u64, &Case, Execution) + Sync)) -> RunStats {
        let mut stats = RunStats::default();
        let mut queue: VecDeque<(u64, Case)> = VecDeque::new();
        // queue[..sent] went to the current worker; the rest waits for (re)sending.
        let mut sent = 0usize;
        let mut exhausted = false;
        let mut blind_deaths = 0u32;
        // After a death, the cases re-sent to the replacement go one at a time, each answered
        // before the next is sent. Answers travel in batches: a case that damaged the heap and
        // returned may have lost its answer with the worker, and re-sent among others it would
        // kill the next worker during a later, innocent case, again and again, unblamed.
        let mut careful = 0usize;
        // The cases the current worker answered last, handed over with its death.
        let mut earlier: VecDeque<(u64, Case)> = VecDeque::new();
        let in_flight = self.config.in_flight.max(1);
        loop {
            if slot.is_none() {
                let t = Instant::now();
                // A restart can fail for passing reasons (fork's EAGAIN, memory pressure right
                // after an out-of-memory case); try a few times before giving the slot up.
                let mut attempt = Worker::start(&self.config, self.forkserver.as_ref());
                for pause in [50, 500] {
                    if attempt.is_ok() {
                        break;
                    }
                    thread::sleep(Duration::from_millis(pause));
                    attempt = Worker::start(&self.config, self.forkserver.as_ref());
                }
                match attempt {
                    Ok((w, _)) => {
                        *slot = Some(w);
                        stats.restarts += 1;
                        stats.respawn += t.elapsed();
                        sent = 0;
                        careful = queue.len();
                        earlier.clear();
                    }
                    Err(e) => {
                        stats.errors.push(format!("cannot restart a worker: {e}"));
                        stats.unrun += queue.len() as u64;
                        return stats;
                    }
                }
            }
            let Some(worker) = slot.as_mut() else { continue };
            // Send what the current worker has not seen, then top the queue up.
            let mut failed = false;
            let window = if careful > 0 { 1 } else { queue.len() };
            while sent < window && !failed {
                let (id, case) = &queue[sent];
                failed = worker.send(&Request::Run { id: *id, case: case.clone() }).is_err();
                sent += 1;
            }
            // Refill in batches, once the queue is half empty: requests go out many per write and
            // the worker, which flushes when its input runs dry, answers many per write, instead
            // of one wake-up per case on each side. Half the window stays queued meanwhile.
            let refill = careful == 0 && queue.len() <= in_flight / 2;
            while refill && !failed && !exhausted && queue.len() < in_flight {
                match next() {
                    Some((id, case)) => {
                        failed = worker.send(&Request::Run { id, case: case.clone() }).is_err();
                        queue.push_back((id, case));
                        sent += 1;
                    }
                    None => exhausted = true,
                }
            }
            if queue.is_empty() {
                return stats;
            }
            let event = if failed || worker.flush().is_err() { Event::Died } else { worker.wait_answer(self.config.timeout) };
            match event {
                Event::Answer(id, exec) => {
                    match queue.front() {
                        Some((head, _)) if *head == id => {}
                        _ => {
                            stats.errors.push(format!("worker answered case {id} out of order; restarting it"));
                            blind_deaths += 1;
                            retire(slot);
                            continue;
                        }
                    }
                    if let Some((id, case)) = queue.pop_front() {
                        sent -= 1;
                        careful = careful.saturating_sub(1);
                        blind_deaths = 0;
                        stats.cases += 1;
                        stats.completed += 1;
                        sink(id, &case, exec);
                        if earlier.len() == EARLIER_CASES {
                            earlier.pop_front();
                        }
                        earlier.push_back((id, case));
                    }
                }
                Event::Protocol(message) => {
                    stats.errors.push(format!("worker broke the protocol: {message}; restarting it"));
                    blind_deaths += 1;
                    retire(slot);
                }
                Event::TimedOut(culprit) => {
                    let Some(mut w) = slot.take() else { continue };
                    w.kill();
                    let _ = w.reap();
                    let millis = culprit.map_or(0, |r| monotonic_ns().saturating_sub(r.since_ns) / 1_000_000);
                    match culprit.and_then(|r| queue.iter().position(|(id, _)| *id == r.id)) {
                        Some(pos) => {
                            if let Some((id, case)) = queue.remove(pos) {
                                stats.cases += 1;
                                stats.timed_out += 1;
                                sink(id, &case, in_phase(culprit, Execution::TimedOut { millis }));
                            }
                        }
                        None => {
                            blind_deaths += 1;
                            stats.errors.push("a worker stalled outside any case; restarting it".into());
                        }
                    }
                }
                Event::Died => {
                    let Some(mut w) = slot.take() else { continue };
                    let culprit = w.progress.running();
                    // Dead between cases, before the last one's answer went out: that call
                    // returned and the damage it did to the heap was noticed at a later free.
                    // Re-sent, it would kill each replacement the same way, unblamed.
                    let suspect = culprit.map(|r| r.id).or_else(|| w.progress.finished());
                    let (status, stderr) = w.reap_dying();
                    let position = suspect.and_then(|s| queue.iter().position(|(id, _)| *id == s));
                    match (position, status) {
                        (Some(pos), Some(status)) => {
                            if let Some((id, case)) = queue.remove(pos) {
                                stats.cases += 1;
                                let earlier = earlier.iter().cloned().collect();
                                let exec = match (status.signal(), status.code()) {
                                    (Some(signal), _) => {
                                        stats.crashed += 1;
                                        Execution::Crashed { signal, stderr, earlier }
                                    }
                                    (None, code) => {
                                        stats.exited += 1;
                                        Execution::Exited { code: code.unwrap_or(-1), stderr, earlier }
                                    }
                                };
                                sink(id, &case, in_phase(culprit, exec));
                            }
                        }
                        // The fork server died before it could tell how the worker ended: run
                        // the case again on a spawned worker rather than guess.
                        (Some(_), None) => {
                            blind_deaths += 1;
                            stats.errors.push("a forked worker died after its fork server; running its case again".into());
                        }
                        (None, status) => {
                            blind_deaths += 1;
                            stats.errors.push(format!("a worker died outside any case ({}): {}", describe(status.as_ref()), last_line(&stderr)));
                        }
                    }
                }
            }
            if blind_deaths >= MAX_BLIND_DEATHS {
                stats.errors.push(format!("giving up on a worker after {blind_deaths} deaths outside any case"));
                stats.unrun += queue.len() as u64;
                retire(slot);
                return stats;
            }
        }
    }
}

/// A death or hang during a differential check is the check's, not the call's.
fn in_phase(running: Option<super::progress::Running>, failure: Execution) -> Execution {
    match running {
        Some(r) if r.phase > 0 => Execution::InCheck { check: (r.phase - 1) as u32, failure: Box::new(failure) },
        _ => failure,
    }
}

/// Kills the slot's worker so that the next turn of the driving loop starts a fresh one.
fn retire(slot: &mut Option<Worker>) {
    if let Some(mut w) = slot.take() {
        w.kill();
        let _ = w.reap();
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        for slot in &self.slots {
            let mut guard = slot.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(mut w) = guard.take() {
                w.kill();
                let _ = w.reap();
            }
        }
    }
}

/// Asks a fresh worker for every operator schema its libtorch knows.
pub fn fetch_catalog(worker_exe: &Path) -> Result<Vec<String>, PoolError> {
    ignore_sigpipe();
    let config = PoolConfig { worker_exe: worker_exe.to_path_buf(), memory_mb: None, ..PoolConfig::default() };
    let (mut worker, _) = Worker::start(&config, None)?;
    let result = (|| {
        worker.send(&Request::Catalog)?;
        worker.flush()?;
        match worker.recv(Some(Instant::now() + config.startup_timeout)) {
            Recv::Frame(Response::Catalog { schemas }) => Ok(schemas),
            Recv::Frame(other) => Err(PoolError::Protocol(format!("expected the catalog, got {other:?}"))),
            Recv::Timeout => Err(PoolError::Protocol("no catalog within the start-up timeout".into())),
            Recv::Closed(why) => Err(PoolError::Protocol(format!("the worker closed its output: {why}"))),
        }
    })();
    worker.kill();
    let _ = worker.reap();
    result
}

/// How a hunt episode ended other than with a result.
#[derive(Debug, thiserror::Error)]
pub enum HuntError {
    /// The worker died during the episode (a crash inside libtorch): `status` and its stderr.
    #[error("the worker died ({status}): {stderr}")]
    Died { status: String, stderr: String },
    #[error("the episode ran past {0:?}")]
    Timeout(Duration),
    #[error(transparent)]
    Pool(#[from] PoolError),
}

/// One worker serving hunt episodes (`numeric::driver`), one request at a time: an episode is a
/// whole search, so there is nothing to pipeline. A worker that dies or hangs is replaced on
/// the next episode.
pub struct HuntWorker {
    config: PoolConfig,
    worker: Option<Worker>,
    next_id: u64,
}

impl HuntWorker {
    /// Starts a worker now (so that start-up errors surface here, not in the first episode).
    pub fn start(worker_exe: &Path, timeout: Duration) -> Result<HuntWorker, PoolError> {
        ignore_sigpipe();
        let config = PoolConfig { worker_exe: worker_exe.to_path_buf(), timeout, fork_server: false, ..PoolConfig::default() };
        let (worker, _) = Worker::start(&config, None)?;
        Ok(HuntWorker { config, worker: Some(worker), next_id: 0 })
    }

    /// Runs one episode.
    pub fn hunt(&mut self, request: crate::wire::program::hunt::HuntRequest) -> Result<crate::wire::program::hunt::HuntResult, HuntError> {
        let mut worker = match self.worker.take() {
            Some(w) => w,
            None => Worker::start(&self.config, None)?.0,
        };
        self.next_id += 1;
        let id = self.next_id;
        let sent = worker.send(&Request::Hunt { id, request: Box::new(request) }).and_then(|()| worker.flush());
        let answer = if sent.is_err() { Recv::Closed("cannot send".into()) } else { worker.recv(Some(Instant::now() + self.config.timeout)) };
        match answer {
            Recv::Frame(Response::Hunted { id: got, result }) if got == id => {
                self.worker = Some(worker);
                Ok(*result)
            }
            Recv::Frame(other) => Err(worker.fail(PoolError::Protocol(format!("expected Hunted, got {other:?}"))).into()),
            Recv::Timeout => {
                worker.kill();
                let _ = worker.reap();
                Err(HuntError::Timeout(self.config.timeout))
            }
            Recv::Closed(_) => {
                let (status, stderr) = worker.reap_dying();
                Err(HuntError::Died { status: describe(status.as_ref()), stderr: stderr.trim().to_string() })
            }
        }
    }
}

impl Drop for HuntWorker {
    fn drop(&mut self) {
        if let Some(mut w) = self.worker.take() {
            w.kill();
            let _ = w.reap();
        }
    }
}

fn ignore_sigpipe() {
    // SAFETY: setting a signal disposition; Rust binaries already ignore SIGPIPE, but a library
    // cannot count on its host doing so.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
}

fn describe(status: Option<&ExitStatus>) -> String {
    let Some(status) = status else { return "status unknown".into() };
    match (status.signal(), status.code()) {
        (Some(s), _) => crate::wire::outcome::signal_name(s),
        (None, Some(c)) => format!("exit status {c}"),
        (None, None) => "unknown status".into(),
    }
}

fn last_line(s: &str) -> &str {
    s.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("")
}

/// What ended a wait for an answer.
enum Event {
    /// A case's answer: `Completed` or `Checked`.
    Answer(u64, Execution),
    /// The worker closed its output or a write to it failed.
    Died,
    /// A case ran past the timeout; the running case, if the worker was in one.
    TimedOut(Option<super::progress::Running>),
    Protocol(String),
}

enum Recv {
    Frame(Response),
    Timeout,
    Closed(String),
}

/// The last bytes a worker wrote to stderr.
#[derive(Default)]
struct Tail {
    bytes: VecDeque<u8>,
}

impl Tail {
    fn push(&mut self, chunk: &[u8]) {
        self.bytes.extend(chunk);
        let excess = self.bytes.len().saturating_sub(STDERR_TAIL);
        self.bytes.drain(..excess);
    }

    fn text(&self) -> String {
        let (a, b) = self.bytes.as_slices();
        let mut v = Vec::with_capacity(a.len() + b.len());
        v.extend_from_slice(a);
        v.extend_from_slice(b);
        String::from_utf8_lossy(&v).into_owned()
    }
}

/// What a worker said while starting.
#[derive(Default)]
struct Loaded {
    /// Per op: None when resolved, else why not.
    ops: Vec<Option<String>>,
    /// Per op: None when its checks can run, else why not.
    checks: Vec<Option<String>>,
    torch_version: String,
}

/// One worker process seen from the parent.
struct Worker {
    process: Process,
    stdin: BufWriter<File>,
    stdout: BufReader<File>,
    stderr: Arc<Mutex<Tail>>,
    stderr_thread: Option<JoinHandle<()>>,
    progress: Progress,
    buf: Vec<u8>,
    reaped: bool,
}

impl Worker {
    /// Starts a worker (forked from `server` when there is one alive, else spawned), waits for
    /// `Ready`, and loads the config's ops and checks (unless there are
    /// none). Returns the worker and what it said while starting.
    fn start(config: &PoolConfig, server: Option<&Arc<ForkServer>>) -> Result<(Worker, Loaded), PoolError> {
        let path = &config.worker_exe;
        if !path.is_file() {
            return Err(PoolError::WorkerMissing { path: path.clone() });
        }
        let progress = Progress::create().map_err(|source| PoolError::Spawn { path: path.clone(), source })?;
        let forked = server.filter(|f| f.alive()).and_then(|f| Worker::fork(config, f, &progress).ok());
        let (process, stdin, stdout, stderr) = match forked {
            Some(parts) => parts,
            None => Worker::spawn(config, &progress)?,
        };
        if config.nice != 0 {
            let pid = match &process {
                Process::Spawned(c) => c.id() as i32,
                Process::Forked { pid, .. } => *pid,
            };
            // SAFETY: setpriority on our own child; failure only leaves its priority as it was.
            unsafe { libc::setpriority(libc::PRIO_PROCESS, pid as libc::id_t, config.nice) };
        }
        for fd in [stdin.as_raw_fd(), stdout.as_raw_fd()] {
            // SAFETY: fcntl on our end of a pipe; failure only leaves the default size.
            unsafe { libc::fcntl(fd, libc::F_SETPIPE_SZ, PIPE_BYTES) };
        }
        let tail = Arc::new(Mutex::new(Tail::default()));
        let stderr_thread = {
            let tail = Arc::clone(&tail);
            let mut stderr = stderr;
            thread::Builder::new()
                .name("sfz-worker-stderr".into())
                .spawn(move || {
                    let mut chunk = [0u8; 4096];
                    while let Ok(n) = stderr.read(&mut chunk) {
                        if n == 0 {
                            break;
                        }
                        tail.lock().unwrap_or_else(|e| e.into_inner()).push(&chunk[..n]);
                    }
                })
                .ok()
        };
        let mut worker = Worker {
            process,
            stdin: BufWriter::with_capacity(1 << 16, stdin),
            stdout: BufReader::with_capacity(1 << 16, stdout),
            stderr: tail,
            stderr_thread,
            progress,
            buf: Vec::new(),
            reaped: false,
        };
        let deadline = Some(Instant::now() + config.startup_timeout);
        let version = match worker.recv(deadline) {
            Recv::Frame(Response::Ready { torch_version, .. }) => torch_version,
            Recv::Frame(other) => return Err(worker.fail(PoolError::Protocol(format!("expected Ready, got {other:?}")))),
            Recv::Timeout => {
                worker.kill();
                let (_, stderr) = worker.reap();
                return Err(PoolError::StartupTimeout { timeout: config.startup_timeout, stderr });
            }
            Recv::Closed(_) => {
                let (status, stderr) = worker.reap_dying();
                if stderr.contains("cannot open shared object file") || stderr.contains("error while loading shared libraries") {
                    return Err(PoolError::LibtorchMissing { stderr });
                }
                return Err(PoolError::StartupFailed { status: describe(status.as_ref()), stderr });
            }
        };
        let mut loaded = Loaded { torch_version: version, ..Loaded::default() };
        if !config.ops.is_empty() {
            if let Err(e) = worker.send(&Request::Load { ops: config.ops.clone() }).and_then(|()| worker.flush()) {
                return Err(worker.fail(PoolError::Io(e)));
            }
            match worker.recv(deadline) {
                Recv::Frame(Response::Loaded { errors: e }) => loaded.ops = e,
                Recv::Frame(other) => return Err(worker.fail(PoolError::Protocol(format!("expected Loaded, got {other:?}")))),
                Recv::Timeout => return Err(worker.fail(PoolError::Protocol("no answer to Load within the start-up timeout".into()))),
                Recv::Closed(why) => {
                    let (status, stderr) = worker.reap();
                    return Err(PoolError::StartupFailed { status: format!("{} while loading ops: {why}", describe(status.as_ref())), stderr });
                }
            }
        }
        if config.checks.iter().any(|c| !c.is_empty()) {
            if let Err(e) = worker.send(&Request::Checks { checks: config.checks.clone(), share: config.check_share }).and_then(|()| worker.flush()) {
                return Err(worker.fail(PoolError::Io(e)));
            }
            match worker.recv(deadline) {
                Recv::Frame(Response::ChecksLoaded { errors }) => loaded.checks = errors,
                Recv::Frame(other) => return Err(worker.fail(PoolError::Protocol(format!("expected ChecksLoaded, got {other:?}")))),
                Recv::Timeout => return Err(worker.fail(PoolError::Protocol("no answer to Checks within the start-up timeout".into()))),
                Recv::Closed(why) => {
                    let (status, stderr) = worker.reap();
                    return Err(PoolError::StartupFailed { status: format!("{} while loading checks: {why}", describe(status.as_ref())), stderr });
                }
            }
        }
        Ok((worker, loaded))
    }

    /// A worker forked by the fork server: our ends of its pipes.
    fn fork(config: &PoolConfig, server: &Arc<ForkServer>, progress: &Progress) -> io::Result<(Process, File, File, File)> {
        let (stdin_r, stdin_w) = forkserver::pipe()?;
        let (stdout_r, stdout_w) = forkserver::pipe()?;
        let (stderr_r, stderr_w) = forkserver::pipe()?;
        let fds = [stdin_r.as_raw_fd(), stdout_w.as_raw_fd(), stderr_w.as_raw_fd(), progress.fd()];
        let pid = server.fork(config.memory_mb, fds, config.startup_timeout)?;
        // The child has its copies; ours of its ends must close, or we never see its EOF.
        drop((stdin_r, stdout_w, stderr_w));
        Ok((Process::Forked { pid, server: Arc::clone(server), status: None }, stdin_w, stdout_r, stderr_r))
    }

    /// A worker spawned as a fresh process: our ends of its pipes.
    fn spawn(config: &PoolConfig, progress: &Progress) -> Result<(Process, File, File, File), PoolError> {
        let path = &config.worker_exe;
        // The child gets the progress page as fd 3. Take a descriptor above 3 so dup2 always
        // copies (dup2 onto itself would keep close-on-exec set).
        // SAFETY: fcntl on an fd we own.
        let high = unsafe { libc::fcntl(progress.fd(), libc::F_DUPFD_CLOEXEC, 10) };
        if high < 0 {
            return Err(PoolError::Spawn { path: path.clone(), source: io::Error::last_os_error() });
        }
        let mut cmd = Command::new(path);
        cmd.arg("--progress-fd").arg("3").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        if let Some(mb) = config.memory_mb {
            cmd.arg("--memory-mb").arg(mb.to_string());
        }
        // SAFETY: dup2 is async-signal-safe, the only call between fork and exec.
        unsafe {
            cmd.pre_exec(move || if libc::dup2(high, 3) < 0 { Err(io::Error::last_os_error()) } else { Ok(()) });
        }
        let spawned = cmd.spawn();
        // SAFETY: `high` is ours; the child has its own copy now.
        unsafe { libc::close(high) };
        let mut child = spawned.map_err(|source| match source.kind() {
            io::ErrorKind::NotFound => PoolError::WorkerMissing { path: path.clone() },
            _ => PoolError::Spawn { path: path.clone(), source },
        })?;
        let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(PoolError::Protocol("the worker's pipes were not set up".into()));
        };
        let file = |fd: OwnedFd| File::from(fd);
        Ok((Process::Spawned(child), file(stdin.into()), file(stdout.into()), file(stderr.into())))
    }

    /// Kills the worker and returns `e`.
    fn fail(mut self, e: PoolError) -> PoolError {
        self.kill();
        let _ = self.reap();
        e
    }

    fn send(&mut self, request: &Request) -> io::Result<()> {
        write_frame(&mut self.stdin, request)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.stdin.flush()
    }

    /// Waits for the next answer, the worker's death, or the running case passing `timeout`.
    fn wait_answer(&mut self, timeout: Duration) -> Event {
        let timeout_ns = timeout.as_nanos().min(u64::MAX as u128) as u64;
        loop {
            // Wait until the running case would time out; while none is running (answers are
            // in transit), a full timeout from now.
            let running = self.progress.running();
            let now = monotonic_ns();
            let deadline_ns = running.map_or(now.saturating_add(timeout_ns), |r| r.since_ns.saturating_add(timeout_ns));
            let deadline = Instant::now() + Duration::from_nanos(deadline_ns.saturating_sub(now));
            match self.recv(Some(deadline)) {
                Recv::Frame(Response::Done { id, outcome }) => return Event::Answer(id, Execution::Completed(outcome)),
                Recv::Frame(Response::Checked { id, outcome, checks }) => return Event::Answer(id, Execution::Checked { outcome, checks }),
                Recv::Frame(other) => return Event::Protocol(format!("expected Done, got {other:?}")),
                Recv::Closed(_) => return Event::Died,
                Recv::Timeout => {
                    let now = self.progress.running();
                    match now {
                        // The case that was running when we started waiting is still running.
                        Some(r) if running == Some(r) || monotonic_ns().saturating_sub(r.since_ns) >= timeout_ns => return Event::TimedOut(Some(r)),
                        // Another case started meanwhile: the worker is progressing.
                        Some(_) => continue,
                        // Idle for a whole timeout with cases queued: stalled.
                        None if running.is_none() => return Event::TimedOut(None),
                        None => continue,
                    }
                }
            }
        }
    }

    /// One response, waiting at most until `deadline`.
    fn recv(&mut self, deadline: Option<Instant>) -> Recv {
        if self.stdout.buffer().is_empty() {
            let fd = self.stdout.get_ref().as_raw_fd();
            loop {
                let ms = match deadline {
                    None => -1,
                    Some(d) => {
                        let left = d.saturating_duration_since(Instant::now());
                        // Round up so that we never spin on a sub-millisecond remainder.
                        left.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32
                    }
                };
                let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
                // SAFETY: one valid pollfd.
                let r = unsafe { libc::poll(&mut p, 1, ms) };
                if r > 0 {
                    break;
                }
                if r == 0 {
                    return Recv::Timeout;
                }
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Recv::Closed(format!("poll: {e}"));
                }
            }
        }
        match read_frame::<_, Response>(&mut self.stdout, &mut self.buf) {
            Ok(Some(r)) => Recv::Frame(r),
            Ok(None) => Recv::Closed("end of output".into()),
            Err(e) => Recv::Closed(e.to_string()),
        }
    }

    fn kill(&mut self) {
        self.process.kill();
    }

    /// Reaps a worker that closed its output or its input: normally it is dying already, so its
    /// real status is waited for; one still alive after a grace period is killed.
    fn reap_dying(&mut self) -> (Option<ExitStatus>, String) {
        let grace = Instant::now() + Duration::from_secs(2);
        while Instant::now() < grace {
            if self.process.ended() {
                break;
            }
            thread::sleep(Duration::from_millis(1));
        }
        self.kill();
        self.reap()
    }

    /// Waits for the process to end and for its stderr to drain; its status (None when a dead
    /// fork server took it with it) and stderr tail.
    fn reap(&mut self) -> (Option<ExitStatus>, String) {
        let status = self.process.wait();
        self.reaped = true;
        if let Some(t) = self.stderr_thread.take() {
            let _ = t.join();
        }
        let text = self.stderr.lock().unwrap_or_else(|e| e.into_inner()).text();
        (status, text)
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if !self.reaped {
            self.kill();
            let _ = self.process.wait();
        }
    }
}

/// A worker process: our child, or the fork server's.
enum Process {
    Spawned(Child),
    Forked { pid: i32, server: Arc<ForkServer>, status: Option<ExitStatus> },
}

impl Process {
    fn kill(&mut self) {
        match self {
            Process::Spawned(c) => {
                let _ = c.kill();
            }
            // The server kills it only if it is still its unreaped child. Without a server the
            // orphan is alive or unreaped by init, so its pid is still its own.
            Process::Forked { pid, server, status: None } if server.alive() => server.kill(*pid),
            Process::Forked { pid, status: None, .. } => {
                // SAFETY: signalling a process we started.
                unsafe { libc::kill(*pid, libc::SIGKILL) };
            }
            Process::Forked { .. } => {}
        }
    }

    /// True once the process has ended (its status is then known).
    fn ended(&mut self) -> bool {
        match self {
            Process::Spawned(c) => !matches!(c.try_wait(), Ok(None)),
            Process::Forked { pid, server, status } => {
                if status.is_none() {
                    *status = server.wait(*pid, Some(Instant::now())).map(ExitStatus::from_raw);
                }
                status.is_some() || !server.alive()
            }
        }
    }

    /// Waits for the process to end; None when its status cannot be known (the fork server
    /// died first and init reaps its orphans).
    fn wait(&mut self) -> Option<ExitStatus> {
        match self {
            Process::Spawned(c) => c.wait().ok(),
            Process::Forked { pid, server, status } => {
                if status.is_none() {
                    *status = server.wait(*pid, None).map(ExitStatus::from_raw);
                }
                *status
            }
        }
    }
}
