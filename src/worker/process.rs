//! A worker process, our child or the fork server's: killing it, and learning how it ended
//! (`describe` puts a status in words for errors and reports).
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, ExitStatus};
use std::sync::Arc;
use std::time::Instant;

use super::forkserver::ForkServer;

/// A worker process: our child, or the fork server's.
pub(super) enum Process {
    Spawned(Child),
    Forked { pid: i32, server: Arc<ForkServer>, status: Option<ExitStatus> },
}

impl Process {
    pub(super) fn kill(&mut self) {
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
    pub(super) fn ended(&mut self) -> bool {
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
    pub(super) fn wait(&mut self) -> Option<ExitStatus> {
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

/// A status in words: the signal's name or the exit status.
pub(super) fn describe(status: Option<&ExitStatus>) -> String {
    let Some(status) = status else { return "status unknown".into() };
    match (status.signal(), status.code()) {
        (Some(s), _) => crate::wire::outcome::signal_name(s),
        (None, Some(c)) => format!("exit status {c}"),
        (None, None) => "unknown status".into(),
    }
}
