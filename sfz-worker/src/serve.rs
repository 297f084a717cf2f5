//! The worker process's side of the protocol: set up libtorch and the process limits, say
//! `Ready`, then answer requests from stdin on stdout until stdin closes.
//!
//! Answers are buffered and flushed when no further request is waiting or `FLUSH_EVERY` are
//! pending, so a supervisor that keeps many cases in flight gets them back in batches (one write
//! per batch, not per case) while the worker keeps working.
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::os::fd::{FromRawFd, RawFd};
use std::time::Instant;

use crate::budget::CheckBudget;
use crate::runtime::{self, Executor};
use sfz_wire::progress::Progress;
use sfz_wire::protocol::{read_frame, write_frame, Request, Response};

/// Answers held back at most before a flush. Flushing only when the input runs dry would make
/// the supervisor wait for a whole window before it can refill it; flushing part-way lets it
/// refill while the worker still has cases queued, so the worker never waits for work.
const FLUSH_EVERY: usize = 8;

/// Settings of one worker process.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// Memory the worker may allocate beyond what libtorch occupies once loaded; None: no limit.
    pub memory_mb: Option<u64>,
    /// Intra-op threads (1: parallelism comes from running several workers).
    pub threads: i32,
    /// An inherited memfd holding the shared progress page (see `worker::progress`).
    pub progress_fd: Option<RawFd>,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig { memory_mb: None, threads: 1, progress_fd: None }
    }
}

/// Why a worker stopped other than by its input closing.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The supervisor sent something that is not a request frame.
    #[error("bad request frame: {0}")]
    BadFrame(io::Error),
    /// Writing a response failed (the supervisor is gone).
    #[error("cannot write a response: {0}")]
    Write(io::Error),
    /// Setting up the process failed.
    #[error("cannot set up the worker: {0}")]
    Setup(io::Error),
}

/// Runs the worker until stdin closes (Ok) or the protocol breaks (Err).
pub fn serve(config: &ServeConfig) -> Result<(), ServeError> {
    // Keep the protocol's stdout for ourselves and point fd 1 at stderr, so that anything
    // libtorch or a kernel prints with std::cout cannot corrupt the response stream.
    // SAFETY: plain descriptor juggling on fds this process owns.
    let out_fd: RawFd = unsafe {
        let fd = libc::dup(1);
        if fd < 0 || libc::dup2(2, 1) < 0 {
            return Err(ServeError::Setup(io::Error::last_os_error()));
        }
        fd
    };
    // SAFETY: fd 0 is ours for the life of the process; `out_fd` was just duplicated.
    let (input, output) = unsafe { (File::from_raw_fd(0), File::from_raw_fd(out_fd)) };
    let mut reader = BufReader::with_capacity(1 << 16, input);
    let mut writer = BufWriter::with_capacity(1 << 16, output);

    let progress = config.progress_fd.map(Progress::open).transpose().map_err(ServeError::Setup)?;
    runtime::init(config.threads);
    crate::fault::install();
    limit_core_dumps();
    if let Some(mb) = config.memory_mb {
        limit_memory(mb).map_err(ServeError::Setup)?;
    }
    let ready = Response::Ready { torch_version: runtime::torch_version(), pid: std::process::id() };
    write_frame(&mut writer, &ready).and_then(|()| writer.flush()).map_err(ServeError::Write)?;

    let mut executor = Executor::new();
    let mut budget = CheckBudget::new(None);
    let mut buf = Vec::new();
    let mut unflushed = 0usize;
    loop {
        let request = match read_frame::<_, Request>(&mut reader, &mut buf) {
            Ok(Some(r)) => r,
            Ok(None) => return writer.flush().map_err(ServeError::Write),
            Err(e) => return Err(ServeError::BadFrame(e)),
        };
        let response = match request {
            Request::Load { ops } => Response::Loaded { errors: executor.load(&ops) },
            Request::Run { id, case } => {
                if let Some(p) = &progress {
                    p.begin(id);
                }
                let response = if executor.has_checks(case.op) && budget.admits(&case) {
                    let start = Instant::now();
                    let (outcome, checks) = executor.run_checked(&case, &mut |k| {
                        if let Some(p) = &progress {
                            p.check(k);
                        }
                    });
                    budget.spent(start.elapsed());
                    Response::Checked { id, outcome, checks }
                } else {
                    Response::Done { id, outcome: executor.run(&case) }
                };
                if let Some(p) = &progress {
                    p.end();
                }
                response
            }
            Request::Catalog => Response::Catalog { schemas: runtime::catalog_schemas() },
            Request::Hunt { id, request } => {
                if let Some(p) = &progress {
                    p.begin(id);
                }
                let result = runtime::program::hunt(&request);
                if let Some(p) = &progress {
                    p.end();
                }
                Response::Hunted { id, result: Box::new(result) }
            }
            Request::Checks { checks, share } => {
                budget = CheckBudget::new(share);
                // A CUDA context takes seconds to create, more with many workers creating theirs
                // at once: made here, under the start-up timeout, not inside the first case's.
                if checks.iter().flatten().any(|c| matches!(c.variant, sfz_wire::variant::Variant::Cuda)) {
                    runtime::checks::warm_cuda();
                }
                Response::ChecksLoaded { errors: executor.set_checks(checks) }
            }
        };
        write_frame(&mut writer, &response).map_err(ServeError::Write)?;
        unflushed += 1;
        if unflushed >= FLUSH_EVERY || (reader.buffer().is_empty() && !readable(0)) {
            writer.flush().map_err(ServeError::Write)?;
            unflushed = 0;
        }
    }
}

/// True when `fd` has input ready right now.
fn readable(fd: RawFd) -> bool {
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd, zero timeout.
    unsafe { libc::poll(&mut p, 1, 0) > 0 }
}

/// A crashing worker must not spend seconds writing a core file per crash.
fn limit_core_dumps() {
    let zero = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: a valid rlimit struct. Failure only means cores stay enabled.
    unsafe { libc::setrlimit(libc::RLIMIT_CORE, &zero) };
}

/// Caps the data segment (heap and anonymous private mappings, where tensors live) at what the
/// process holds now plus `mb`. RLIMIT_DATA rather than RLIMIT_AS: libtorch and the CUDA
/// libraries it drags in map gigabytes of address space that are never touched, and that
/// figure varies with the install; the data segment of a loaded worker is small and stable.
fn limit_memory(mb: u64) -> io::Result<()> {
    let current = vm_data_bytes().unwrap_or(0);
    let limit = current.saturating_add(mb.saturating_mul(1 << 20));
    let r = libc::rlimit { rlim_cur: limit, rlim_max: limit };
    // SAFETY: a valid rlimit struct.
    if unsafe { libc::setrlimit(libc::RLIMIT_DATA, &r) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `VmData` of this process, in bytes.
pub fn vm_data_bytes() -> Option<u64> {
    let mut status = String::new();
    File::open("/proc/self/status").ok()?.read_to_string(&mut status).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmData:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
