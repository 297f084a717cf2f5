//! A page of memory shared by the supervisor and one worker that says which case the worker is
//! running right now, and since when.
//!
//! The worker batches its answers (it flushes only when no request is waiting), so when it dies
//! the oldest unanswered case is not necessarily the one that killed it: answers to cases it
//! finished may still have been in its buffer. The progress word names the culprit exactly;
//! the cases before it are simply run again. It also lets a timeout measure the running case
//! itself rather than a whole batch.
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};

const WORDS: usize = 4;
const STATE: usize = 0;
const ID: usize = 1;
const START: usize = 2;
/// 0 while the case's own call runs, k + 1 while its differential check k runs.
const PHASE: usize = 3;
const SIZE: usize = 4096;

/// The shared progress page of one worker.
pub struct Progress {
    fd: OwnedFd,
    base: *mut AtomicU64,
}

// SAFETY: the page is only accessed through atomics.
unsafe impl Send for Progress {}
unsafe impl Sync for Progress {}

/// The case a worker is running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Running {
    pub id: u64,
    /// `monotonic_ns()` when it started.
    pub since_ns: u64,
    /// 0 during the call itself, k + 1 during its differential check k.
    pub phase: u64,
}

impl Progress {
    /// A new zeroed page (supervisor side), backed by a memfd the worker inherits.
    pub fn create() -> io::Result<Progress> {
        // SAFETY: memfd_create with a valid name; the fd is owned from here on.
        let raw = unsafe { libc::memfd_create(c"sfz-progress".as_ptr(), libc::MFD_CLOEXEC) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh fd we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: a valid fd and length.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), SIZE as libc::off_t) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Progress::map(fd)
    }

    /// Maps a page the supervisor passed down as `fd` (worker side).
    pub fn open(fd: RawFd) -> io::Result<Progress> {
        // SAFETY: the caller hands over an fd it owns (the worker's `--progress-fd`).
        Progress::map(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    fn map(fd: OwnedFd) -> io::Result<Progress> {
        // SAFETY: a shared mapping of a file at least SIZE long; unmapped in Drop.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), SIZE, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd.as_raw_fd(), 0) };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Progress { fd, base: p.cast() })
    }

    /// The memfd, to hand to a child process.
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    fn word(&self, i: usize) -> &AtomicU64 {
        debug_assert!(i < WORDS);
        // SAFETY: the mapping is page-aligned and SIZE bytes long; i < WORDS.
        unsafe { &*self.base.add(i) }
    }

    /// The worker starts case `id`.
    pub fn begin(&self, id: u64) {
        self.word(ID).store(id, Ordering::Relaxed);
        self.word(PHASE).store(0, Ordering::Relaxed);
        self.word(START).store(monotonic_ns(), Ordering::Relaxed);
        self.word(STATE).store(1, Ordering::Release);
    }

    /// The worker moves on to differential check `check` of the running case.
    pub fn check(&self, check: u32) {
        self.word(PHASE).store(u64::from(check) + 1, Ordering::Release);
    }

    /// The worker finished its case (its answer is not yet sent: answers go out in batches).
    pub fn end(&self) {
        self.word(STATE).store(2, Ordering::Release);
    }

    /// The case the worker finished last, while it runs none: when the worker dies before that
    /// case's answer arrives, it died after the call returned, most likely of damage that call
    /// did to the heap (glibc notices at the next free).
    pub fn finished(&self) -> Option<u64> {
        let read = || (self.word(STATE).load(Ordering::Acquire), self.word(ID).load(Ordering::Relaxed));
        loop {
            let first = read();
            if read() == first {
                return (first.0 == 2).then_some(first.1);
            }
        }
    }

    /// What the worker is running, if anything. Reads twice so that a read racing with
    /// `begin` is not believed.
    pub fn running(&self) -> Option<Running> {
        let read = || {
            let state = self.word(STATE).load(Ordering::Acquire);
            let r = Running { id: self.word(ID).load(Ordering::Relaxed), since_ns: self.word(START).load(Ordering::Relaxed), phase: self.word(PHASE).load(Ordering::Acquire) };
            (state, r)
        };
        loop {
            let first = read();
            if read() == first {
                return (first.0 == 1).then_some(first.1);
            }
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`.
        unsafe { libc::munmap(self.base.cast(), SIZE) };
    }
}

/// CLOCK_MONOTONIC in nanoseconds: the same clock in every process of the machine.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(ts.tv_nsec as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_mappings_see_the_same_page() {
        let parent = Progress::create().unwrap();
        // SAFETY: dup gives the "worker" its own fd to the same memfd.
        let child = Progress::open(unsafe { libc::dup(parent.fd()) }).unwrap();
        assert_eq!((parent.running(), parent.finished()), (None, None), "a fresh page: nothing ran");
        child.begin(42);
        let r = parent.running().unwrap();
        assert_eq!(r.id, 42);
        assert!(r.since_ns <= monotonic_ns());
        assert_eq!(r.phase, 0);
        child.check(2);
        assert_eq!(parent.running().map(|r| (r.id, r.phase)), Some((42, 3)));
        assert_eq!(parent.finished(), None, "still running");
        child.end();
        assert_eq!(parent.running(), None);
        assert_eq!(parent.finished(), Some(42));
        child.begin(43);
        assert_eq!(parent.finished(), None);
    }
}
