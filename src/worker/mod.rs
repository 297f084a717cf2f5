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

/// Kills (SIGKILL) every process descended from this one: the workers, the fork server and the
/// workers it forked. For a process about to end at once (a second stop signal), so that none
/// of them outlives it, busy in a case nobody will read. Reads `/proc`; elsewhere it does nothing.
pub fn kill_descendants() {
    let Ok(entries) = std::fs::read_dir("/proc") else { return };
    // (pid, parent) of every process, from `/proc/PID/stat` (the parent is the field after the
    // parenthesised name, which may itself hold spaces and parentheses).
    let parents: Vec<(i32, i32)> = entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let rest = &stat[stat.rfind(')')? + 1..];
            let ppid = rest.split_whitespace().nth(1)?.parse().ok()?;
            Some((pid, ppid))
        })
        .collect();
    let mut family = vec![std::process::id() as i32];
    let mut i = 0;
    while i < family.len() {
        let parent = family[i];
        family.extend(parents.iter().filter(|(_, p)| *p == parent).map(|(pid, _)| *pid));
        i += 1;
    }
    for pid in family.into_iter().skip(1) {
        // SAFETY: a plain kill(2) of a descendant's pid.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}
