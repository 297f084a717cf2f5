//! How to run a pool of workers (`PoolConfig`), where the worker binary is, and why workers could
//! not be started or asked something (`PoolError`).
use std::io;
use std::path::PathBuf;
use std::thread;
use std::time::Duration;

use crate::ops::binding::OpBinding;
use crate::wire::protocol::default_worker_exe;
use crate::wire::variant::Check;

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
