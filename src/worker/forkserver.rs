//! The fork server (zygote): one `sfz-worker --fork-server` process that loads libtorch once and
//! forks a fresh worker on request, so replacing a dead worker costs a fork (milliseconds)
//! instead of loading libtorch again (~200 ms).
//!
//! The server and the supervisor talk over a `SOCK_SEQPACKET` socket pair; the server is the
//! workers' parent, so it reaps them, reports each exit status and does the killing. The
//! messages, used by both sides, are `sfz_wire::forkserver` (re-exported here); this file holds
//! the supervisor's client.
use std::collections::HashMap;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

pub use crate::wire::forkserver::*;

/// What the client has heard from the server.
#[derive(Default)]
struct Heard {
    /// Answers to fork requests, in order (requests are serialised).
    forks: Vec<Result<i32, i32>>,
    /// Wait statuses of reaped workers, by pid.
    exits: HashMap<i32, i32>,
    /// The server is gone.
    dead: bool,
}

/// The supervisor's handle on a running fork server.
pub struct ForkServer {
    sock: OwnedFd,
    process: Mutex<Child>,
    /// Held across a fork request and its answer.
    forking: Mutex<()>,
    heard: Arc<(Mutex<Heard>, Condvar)>,
    reader: Option<JoinHandle<()>>,
    stderr: Arc<Mutex<String>>,
}

impl ForkServer {
    /// Starts `worker_exe --fork-server` and waits until it has loaded libtorch.
    pub fn start(worker_exe: &Path, timeout: Duration) -> io::Result<ForkServer> {
        let (ours, theirs) = socket_pair()?;
        // SAFETY: fcntl on an fd we own; a copy above 3 so that dup2 onto 3 always copies.
        let high = unsafe { libc::fcntl(theirs.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 10) };
        if high < 0 {
            return Err(io::Error::last_os_error());
        }
        drop(theirs);
        let mut cmd = Command::new(worker_exe);
        cmd.args(["--fork-server", "--control-fd", "3"]).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
        // SAFETY: dup2 is async-signal-safe, the only call between fork and exec.
        unsafe {
            cmd.pre_exec(move || if libc::dup2(high, 3) < 0 { Err(io::Error::last_os_error()) } else { Ok(()) });
        }
        let spawned = cmd.spawn();
        // SAFETY: our copy; the child has its own.
        unsafe { libc::close(high) };
        let mut process = spawned?;
        let stderr = Arc::new(Mutex::new(String::new()));
        if let Some(mut pipe) = process.stderr.take() {
            let keep = Arc::clone(&stderr);
            thread::Builder::new().name("sfz-forkserver-stderr".into()).spawn(move || {
                let mut chunk = [0u8; 4096];
                while let Ok(n) = pipe.read(&mut chunk) {
                    if n == 0 {
                        break;
                    }
                    let mut s = keep.lock().unwrap_or_else(|e| e.into_inner());
                    s.push_str(&String::from_utf8_lossy(&chunk[..n]));
                    let excess = s.len().saturating_sub(8192);
                    if excess > 0 {
                        let cut = (excess..s.len()).find(|&i| s.is_char_boundary(i)).unwrap_or(s.len());
                        s.drain(..cut);
                    }
                }
            })?;
        }
        // The first message must be Ready.
        let mut p = libc::pollfd { fd: ours.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: one valid pollfd.
        let ready = unsafe { libc::poll(&mut p, 1, ms) } > 0 && matches!(recv_msg(ours.as_raw_fd()), Ok(Some((Msg { kind: REP_READY, .. }, _))));
        if !ready {
            let _ = process.kill();
            let _ = process.wait();
            let why = stderr.lock().unwrap_or_else(|e| e.into_inner()).clone();
            return Err(io::Error::other(format!("the fork server did not start: {}", why.trim())));
        }
        let heard = Arc::new((Mutex::new(Heard::default()), Condvar::new()));
        let reader = {
            let heard = Arc::clone(&heard);
            // SAFETY: dup of a live fd; the reader owns its copy.
            let fd = unsafe { OwnedFd::from_raw_fd(libc::dup(ours.as_raw_fd())) };
            thread::Builder::new().name("sfz-forkserver".into()).spawn(move || listen(fd, &heard))?
        };
        Ok(ForkServer { sock: ours, process: Mutex::new(process), forking: Mutex::new(()), heard, reader: Some(reader), stderr })
    }

    /// Forks a worker whose stdin, stdout, stderr and progress page are `fds`; its pid.
    pub fn fork(&self, memory_mb: Option<u64>, fds: [RawFd; 4], timeout: Duration) -> io::Result<i32> {
        let _one_at_a_time = self.forking.lock().unwrap_or_else(|e| e.into_inner());
        send_msg(self.sock.as_raw_fd(), Msg { kind: REQ_FORK, pid: 0, value: memory_mb.unwrap_or(0) as i64 }, &fds)?;
        let (lock, cond) = &*self.heard;
        let deadline = Instant::now() + timeout;
        let mut heard = lock.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if !heard.forks.is_empty() {
                return match heard.forks.remove(0) {
                    Ok(pid) => Ok(pid),
                    Err(errno) => Err(io::Error::from_raw_os_error(errno)),
                };
            }
            if heard.dead {
                return Err(io::Error::other(format!("the fork server died: {}", self.stderr_tail().trim())));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::Error::new(io::ErrorKind::TimedOut, "the fork server did not answer"));
            }
            heard = cond.wait_timeout(heard, left).map(|(g, _)| g).unwrap_or_else(|e| e.into_inner().0);
        }
    }

    /// Asks the server to SIGKILL `pid` (a no-op once it has been reaped).
    pub fn kill(&self, pid: i32) {
        let _ = send_msg(self.sock.as_raw_fd(), Msg { kind: REQ_KILL, pid, value: 0 }, &[]);
    }

    /// The wait status of `pid` once reaped; None if `deadline` passes or the server dies first.
    pub fn wait(&self, pid: i32, deadline: Option<Instant>) -> Option<i32> {
        let (lock, cond) = &*self.heard;
        let mut heard = lock.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(status) = heard.exits.remove(&pid) {
                return Some(status);
            }
            if heard.dead {
                return None;
            }
            heard = match deadline {
                None => cond.wait(heard).unwrap_or_else(|e| e.into_inner()),
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return None;
                    }
                    cond.wait_timeout(heard, left).map(|(g, _)| g).unwrap_or_else(|e| e.into_inner().0)
                }
            };
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.process.lock().unwrap_or_else(|e| e.into_inner()).id()
    }

    /// True while the server is running.
    pub fn alive(&self) -> bool {
        !self.heard.0.lock().unwrap_or_else(|e| e.into_inner()).dead
    }

    fn stderr_tail(&self) -> String {
        self.stderr.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Drop for ForkServer {
    fn drop(&mut self) {
        // Shutting our end makes the server's next read see the end and exit; the reader
        // thread sees the same and stops.
        // SAFETY: shutdown on a live socket.
        unsafe { libc::shutdown(self.sock.as_raw_fd(), libc::SHUT_RDWR) };
        let mut process = self.process.lock().unwrap_or_else(|e| e.into_inner());
        let _ = process.kill();
        let _ = process.wait();
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
    }
}

/// The reader thread: records answers and exit statuses until the server goes away.
fn listen(sock: OwnedFd, heard: &(Mutex<Heard>, Condvar)) {
    let (lock, cond) = heard;
    loop {
        let msg = recv_msg(sock.as_raw_fd());
        let mut h = lock.lock().unwrap_or_else(|e| e.into_inner());
        match msg {
            Ok(Some((m, _))) => match m.kind {
                REP_FORKED => h.forks.push(Ok(m.pid)),
                REP_FORK_FAILED => h.forks.push(Err(m.value as i32)),
                REP_EXITED => {
                    h.exits.insert(m.pid, m.value as i32);
                }
                _ => {}
            },
            Ok(None) | Err(_) => {
                h.dead = true;
                cond.notify_all();
                return;
            }
        }
        cond.notify_all();
    }
}
