//! Isolated execution seen from the parent: the protocol spoken with `sfz-worker` processes
//! (the `sfz-worker` package), the shared progress page, and the pool that feeds workers,
//! watches them die, and restarts them.
//!
//! **Invariant:** nothing a worker does can panic or kill the parent. Writes to a dead worker
//! fail with EPIPE (SIGPIPE is ignored), reads see EOF, and every failure ends in a restart.
//! This module never links libtorch.
mod catalog;
mod config;
mod drive;
pub mod execution;
pub mod forkserver;
pub mod frames;
mod handle;
mod hunt;
mod pool;
mod process;

// The frames and the progress page are shared with the worker (the `sfz-wire` crate).
pub use crate::wire::protocol::default_worker_exe;
pub use crate::wire::{progress, protocol};
pub use catalog::fetch_catalog;
pub use config::{PoolConfig, PoolError};
pub use execution::{Execution, EARLIER_CASES};
pub use hunt::{HuntError, HuntWorker};
pub use pool::{Pool, RunStats};
