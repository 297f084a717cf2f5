//! The fork server's side (see `sfz_wire::forkserver` for the protocol): load libtorch once,
//! then fork workers on request, reap them, and report how each ended.
//!
//! The server stays single-threaded (fork copies only the calling thread, so a thread holding a
//! lock at fork time would leave the child deadlocked) and never runs an operator itself.
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use sfz_wire::forkserver::{recv_msg, send_msg, Msg, REP_EXITED, REP_FORKED, REP_FORK_FAILED, REP_READY, REQ_FORK, REQ_KILL};

use crate::runtime;
use crate::serve::{serve, ServeConfig};

/// Serves fork requests on `control` until the supervisor closes it.
pub fn run(control: RawFd) -> io::Result<()> {
    // The point of the server: libtorch loaded and initialised before any fork.
    runtime::init(1);
    let _ = runtime::catalog_schemas();

    // SIGCHLD arrives through a signalfd, polled alongside the control socket.
    // SAFETY: plain signal-mask and signalfd calls on valid arguments.
    let (sigfd, old_mask) = unsafe {
        let mut mask: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut mask);
        libc::sigaddset(&mut mask, libc::SIGCHLD);
        if libc::sigprocmask(libc::SIG_BLOCK, &mask, &mut old) != 0 {
            return Err(io::Error::last_os_error());
        }
        let fd = libc::signalfd(-1, &mask, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        (fd, old)
    };
    send_msg(control, Msg { kind: REP_READY, pid: 0, value: 0 }, &[])?;
    let mut live: Vec<i32> = Vec::new();
    loop {
        let mut fds = [libc::pollfd { fd: control, events: libc::POLLIN, revents: 0 }, libc::pollfd { fd: sigfd, events: libc::POLLIN, revents: 0 }];
        // SAFETY: two valid pollfds.
        if unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) } < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if fds[1].revents != 0 {
            drain_signalfd(sigfd);
            reap(control, &mut live)?;
        }
        if fds[0].revents == 0 {
            continue;
        }
        let Some((msg, received)) = recv_msg(control)? else { return Ok(()) };
        match msg.kind {
            REQ_FORK if received.len() == 4 => {
                let memory_mb = u64::try_from(msg.value).ok().filter(|&m| m > 0);
                // SAFETY: this process is single-threaded, so the child may run Rust code.
                let pid = unsafe { libc::fork() };
                if pid == 0 {
                    worker(control, sigfd, &old_mask, &received, memory_mb);
                }
                drop(received);
                if pid < 0 {
                    let errno = io::Error::last_os_error().raw_os_error().unwrap_or(0);
                    send_msg(control, Msg { kind: REP_FORK_FAILED, pid: 0, value: errno as i64 }, &[])?;
                } else {
                    live.push(pid);
                    send_msg(control, Msg { kind: REP_FORKED, pid, value: 0 }, &[])?;
                }
            }
            REQ_FORK => send_msg(control, Msg { kind: REP_FORK_FAILED, pid: 0, value: libc::EINVAL as i64 }, &[])?,
            // Only an unreaped child: a reaped pid may already belong to someone else.
            REQ_KILL if live.contains(&msg.pid) => {
                // SAFETY: signalling our own unreaped child.
                unsafe { libc::kill(msg.pid, libc::SIGKILL) };
            }
            _ => {}
        }
    }
}

fn drain_signalfd(fd: RawFd) {
    let mut info = [0u8; 128];
    // SAFETY: reads into a buffer of a signalfd_siginfo's size; non-blocking.
    while unsafe { libc::read(fd, info.as_mut_ptr().cast(), info.len()) } > 0 {}
}

/// Reaps every ended child and reports it.
fn reap(control: RawFd, live: &mut Vec<i32>) -> io::Result<()> {
    loop {
        let mut status = 0;
        // SAFETY: a valid status pointer.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            return Ok(());
        }
        live.retain(|&p| p != pid);
        send_msg(control, Msg { kind: REP_EXITED, pid, value: status as i64 }, &[])?;
    }
}

/// The forked child: becomes a worker on the descriptors it was given. Never returns.
fn worker(control: RawFd, sigfd: RawFd, old_mask: &libc::sigset_t, fds: &[OwnedFd], memory_mb: Option<u64>) -> ! {
    // SAFETY: descriptor and signal-mask set-up in a fresh single-threaded child. The received
    // descriptors are above 3 (0–3 were open in the server), so the dup2s cannot clobber them.
    unsafe {
        libc::sigprocmask(libc::SIG_SETMASK, old_mask, std::ptr::null_mut());
        libc::close(sigfd);
        for (target, fd) in fds.iter().enumerate() {
            if libc::dup2(fd.as_raw_fd(), target as RawFd) < 0 {
                libc::_exit(120);
            }
        }
        // fd 3 (the control socket) is now the progress page.
        let _ = control;
        for fd in fds {
            libc::close(fd.as_raw_fd());
        }
    }
    let config = ServeConfig { memory_mb, threads: 1, progress_fd: Some(3) };
    let code = match serve(&config) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("sfz-worker: {e}");
            3
        }
    };
    // _exit: the server's atexit handlers and buffered stdio are not this process's to run.
    // SAFETY: ends the process.
    unsafe { libc::_exit(code) }
}
