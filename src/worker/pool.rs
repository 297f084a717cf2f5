//! A pool of long-lived `sfz-worker` processes, one thread each driving its worker
//! (`drive`), and what a run did (`RunStats`).
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use super::config::{PoolConfig, PoolError};
use super::drive::Drive;
use super::forkserver::ForkServer;
use super::handle::{ignore_sigpipe, Loaded, Worker};
use super::Execution;
use crate::wire::case::Case;

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
                        Drive::new(&self.config, self.forkserver.as_ref(), next, sink).run(&mut guard)
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
