//! The operator schemas a worker's libtorch knows, asked of a fresh worker.
use std::path::Path;
use std::time::Instant;

use super::config::{PoolConfig, PoolError};
use super::handle::{ignore_sigpipe, Recv, Worker};
use super::protocol::{Request, Response};

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
