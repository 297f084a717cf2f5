//! The fork server (zygote): one `sfz-worker --fork-server` process that loads libtorch once and
//! forks a fresh worker on request, so replacing a dead worker costs a fork (milliseconds)
//! instead of loading libtorch again (~200 ms).
//!
//! The server and the supervisor talk over a `SOCK_SEQPACKET` socket pair, one fixed 16-byte
//! message per packet. A fork request carries the new worker's stdin, stdout, stderr and
//! progress page as file descriptors (SCM_RIGHTS); the server answers with the pid. The server
//! is the workers' parent, so it reaps them and reports each exit status; it also does the
//! killing, for only it knows whether a pid is still its unreaped child (a pid killed from here
//! could already have been reaped and reused).
//!
//! This file holds the wire format (used by both sides) and the supervisor's client.
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// Supervisor → server: fork a worker; `arg` is its memory limit in MiB (0: none); four fds.
pub const REQ_FORK: u32 = 1;
/// Supervisor → server: SIGKILL worker `arg` if it is still an unreaped child.
pub const REQ_KILL: u32 = 2;
/// Server → supervisor: libtorch is loaded, requests are welcome.
pub const REP_READY: u32 = 10;
/// Server → supervisor: forked `pid`.
pub const REP_FORKED: u32 = 11;
/// Server → supervisor: fork failed with errno `value`.
pub const REP_FORK_FAILED: u32 = 12;
/// Server → supervisor: worker `pid` ended with wait status `value`.
pub const REP_EXITED: u32 = 13;

/// One message: a kind, a pid, a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Msg {
    pub kind: u32,
    pub pid: i32,
    pub value: i64,
}

impl Msg {
    fn encode(self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..4].copy_from_slice(&self.kind.to_le_bytes());
        b[4..8].copy_from_slice(&self.pid.to_le_bytes());
        b[8..].copy_from_slice(&self.value.to_le_bytes());
        b
    }

    fn decode(b: &[u8; 16]) -> Msg {
        let word = |r: std::ops::Range<usize>| b[r].try_into().unwrap_or([0; 4]);
        Msg { kind: u32::from_le_bytes(word(0..4)), pid: i32::from_le_bytes(word(4..8)), value: i64::from_le_bytes(b[8..].try_into().unwrap_or([0; 8])) }
    }
}

const MAX_FDS: usize = 4;

/// Sends one message with `fds` attached.
pub fn send_msg(sock: RawFd, msg: Msg, fds: &[RawFd]) -> io::Result<()> {
    if fds.len() > MAX_FDS {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "too many descriptors"));
    }
    let mut bytes = msg.encode();
    let mut iov = libc::iovec { iov_base: bytes.as_mut_ptr().cast(), iov_len: bytes.len() };
    // u64 storage keeps the control buffer aligned for cmsghdr.
    let mut control = [0u64; 8];
    // SAFETY: msghdr and the control buffer are set up as CMSG_* expect; the buffer holds
    // CMSG_SPACE(4 * MAX_FDS) = 40 bytes < 64.
    unsafe {
        let mut hdr: libc::msghdr = std::mem::zeroed();
        hdr.msg_iov = &mut iov;
        hdr.msg_iovlen = 1;
        if !fds.is_empty() {
            let len = std::mem::size_of_val(fds) as u32;
            hdr.msg_control = control.as_mut_ptr().cast();
            hdr.msg_controllen = libc::CMSG_SPACE(len) as usize;
            let cmsg = libc::CMSG_FIRSTHDR(&hdr);
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(len) as usize;
            std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(cmsg).cast::<RawFd>(), fds.len());
        }
        loop {
            if libc::sendmsg(sock, &hdr, libc::MSG_NOSIGNAL) >= 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

/// Receives one message and the descriptors attached to it; None at end of stream.
pub fn recv_msg(sock: RawFd) -> io::Result<Option<(Msg, Vec<OwnedFd>)>> {
    let mut bytes = [0u8; 16];
    let mut iov = libc::iovec { iov_base: bytes.as_mut_ptr().cast(), iov_len: bytes.len() };
    let mut control = [0u64; 8];
    // SAFETY: as in send_msg; descriptors are taken over only from a well-formed SCM_RIGHTS
    // header the kernel wrote.
    unsafe {
        let mut hdr: libc::msghdr = std::mem::zeroed();
        hdr.msg_iov = &mut iov;
        hdr.msg_iovlen = 1;
        hdr.msg_control = control.as_mut_ptr().cast();
        hdr.msg_controllen = std::mem::size_of_val(&control);
        let n = loop {
            let n = libc::recvmsg(sock, &mut hdr, libc::MSG_CMSG_CLOEXEC);
            if n >= 0 {
                break n as usize;
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        };
        let mut fds = Vec::new();
        let mut cmsg = libc::CMSG_FIRSTHDR(&hdr);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let payload = (*cmsg).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                let data = libc::CMSG_DATA(cmsg).cast::<RawFd>();
                for k in 0..payload / std::mem::size_of::<RawFd>() {
                    fds.push(OwnedFd::from_raw_fd(std::ptr::read_unaligned(data.add(k))));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&hdr, cmsg);
        }
        if n == 0 {
            return Ok(None);
        }
        if n != bytes.len() {
            return Err(io::Error::new(io::ErrorKind::InvalidData, format!("fork-server message of {n} bytes")));
        }
        Ok(Some((Msg::decode(&bytes), fds)))
    }
}

/// A connected SOCK_SEQPACKET pair (close-on-exec).
pub fn socket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: a valid two-element array.
    if unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh descriptors we own.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

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

/// A pipe (close-on-exec on both ends): (read end, write end).
pub fn pipe() -> io::Result<(File, File)> {
    let mut fds = [0; 2];
    // SAFETY: a valid two-element array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh descriptors we own.
    Ok(unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_carry_descriptors() {
        let (a, b) = socket_pair().unwrap();
        let (r, mut w) = pipe().unwrap();
        send_msg(a.as_raw_fd(), Msg { kind: REQ_FORK, pid: 7, value: -3 }, &[r.as_raw_fd()]).unwrap();
        let (m, fds) = recv_msg(b.as_raw_fd()).unwrap().unwrap();
        assert_eq!(m, Msg { kind: REQ_FORK, pid: 7, value: -3 });
        assert_eq!(fds.len(), 1);
        // The received descriptor is the same pipe.
        std::io::Write::write_all(&mut w, b"hi").unwrap();
        let mut got = [0u8; 2];
        File::from(fds.into_iter().next().unwrap()).read_exact(&mut got).unwrap();
        assert_eq!(&got, b"hi");
        drop(a);
        assert!(recv_msg(b.as_raw_fd()).unwrap().is_none());
    }
}
