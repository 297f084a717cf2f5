//! One worker process seen from the parent: starting it (forked from the fork server, else
//! spawned) up to `Ready` with its ops and checks loaded, its pipes, the tail of its stderr, and
//! waiting for an answer, a death or a case past its timeout.
use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::os::fd::AsRawFd;
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::config::{PoolConfig, PoolError};
use super::forkserver::{self, ForkServer};
use super::process::{describe, Process};
use super::progress::{monotonic_ns, Progress, Running};
use super::protocol::{read_frame, write_frame, Request, Response};
use super::Execution;

/// Bytes of a worker's stderr kept for crash reports.
const STDERR_TAIL: usize = 16 << 10;
/// Pipes this large hold a whole window of requests or responses, so neither side blocks on a
/// write while the other does too.
const PIPE_BYTES: i32 = 1 << 20;

/// What ended a wait for an answer.
pub(super) enum Event {
    /// A case's answer: `Completed` or `Checked`.
    Answer(u64, Execution),
    /// The worker closed its output or a write to it failed.
    Died,
    /// A case ran past the timeout; the running case, if the worker was in one.
    TimedOut(Option<Running>),
    Protocol(String),
}

/// One response read, or why none came.
pub(super) enum Recv {
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
pub(super) struct Loaded {
    /// Per op: None when resolved, else why not.
    pub(super) ops: Vec<Option<String>>,
    /// Per op: None when its checks can run, else why not.
    pub(super) checks: Vec<Option<String>>,
    pub(super) torch_version: String,
}

/// One worker process seen from the parent.
pub(super) struct Worker {
    process: Process,
    stdin: BufWriter<File>,
    stdout: BufReader<File>,
    stderr: Arc<Mutex<Tail>>,
    stderr_thread: Option<JoinHandle<()>>,
    /// The page that says which case the worker is running or finished last.
    pub(super) progress: Progress,
    buf: Vec<u8>,
    reaped: bool,
}

impl Worker {
    /// Starts a worker (forked from `server` when there is one alive, else spawned), waits for
    /// `Ready`, and loads the config's ops and checks (unless there are
    /// none). Returns the worker and what it said while starting.
    pub(super) fn start(config: &PoolConfig, server: Option<&Arc<ForkServer>>) -> Result<(Worker, Loaded), PoolError> {
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
    pub(super) fn fail(mut self, e: PoolError) -> PoolError {
        self.kill();
        let _ = self.reap();
        e
    }

    pub(super) fn send(&mut self, request: &Request) -> io::Result<()> {
        write_frame(&mut self.stdin, request)
    }

    pub(super) fn flush(&mut self) -> io::Result<()> {
        self.stdin.flush()
    }

    /// Waits for the next answer, the worker's death, or the running case passing `timeout`.
    pub(super) fn wait_answer(&mut self, timeout: Duration) -> Event {
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
    pub(super) fn recv(&mut self, deadline: Option<Instant>) -> Recv {
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

    pub(super) fn kill(&mut self) {
        self.process.kill();
    }

    /// Reaps a worker that closed its output or its input: normally it is dying already, so its
    /// real status is waited for; one still alive after a grace period is killed.
    pub(super) fn reap_dying(&mut self) -> (Option<ExitStatus>, String) {
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
    pub(super) fn reap(&mut self) -> (Option<ExitStatus>, String) {
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

/// Writes to a dead worker must fail with EPIPE, not kill the parent.
pub(super) fn ignore_sigpipe() {
    // SAFETY: setting a signal disposition; Rust binaries already ignore SIGPIPE, but a library
    // cannot count on its host doing so.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
}
