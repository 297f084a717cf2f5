//! A worker serving hunt episodes (`numeric::driver`), one whole search per request.
use std::path::Path;
use std::time::{Duration, Instant};

use super::config::{PoolConfig, PoolError};
use super::handle::{ignore_sigpipe, Recv, Worker};
use super::process::describe;
use super::protocol::{Request, Response};
use crate::wire::program::hunt::{HuntRequest, HuntResult};

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
    pub fn hunt(&mut self, request: HuntRequest) -> Result<HuntResult, HuntError> {
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
