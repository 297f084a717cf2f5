//! The fork server's messages (see `sfz::worker::forkserver` for the supervisor's client,
//! `sfz-worker`'s `forkserver` for the server): one `sfz-worker --fork-server` process loads
//! libtorch once and forks a fresh worker on request.
//!
//! The server and the supervisor talk over a `SOCK_SEQPACKET` socket pair, one fixed 16-byte
//! message per packet. A fork request carries the new worker's stdin, stdout, stderr and
//! progress page as file descriptors (SCM_RIGHTS); the server answers with the pid. The server
//! is the workers' parent, so it reaps them and reports each exit status; it also does the
//! killing, for only it knows whether a pid is still its unreaped child (a pid killed from here
//! could already have been reaped and reused).
use std::fs::File;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

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
    use std::io::Read;
    use std::os::fd::AsRawFd;

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
