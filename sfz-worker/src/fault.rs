//! The native frames where a worker died: a handler for the fatal signals writes each return
//! address of the dying thread to stderr, as a module and an offset into it
//! (`sfz_wire::frames`), then lets the process die by the same signal. The supervisor
//! symbolizes them against the modules' symbol tables and keys a crash by the frame it died in,
//! not by the signal or the allocator's words (`sfz::worker::frames`).
//!
//! The handler allocates nothing: a heap that glibc just found corrupted may be locked or
//! broken. `backtrace` is called once at installation, so that its first call, which loads
//! libgcc's unwinder (and allocates), is not made inside the handler.
use std::ffi::{c_int, c_void, CString};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use sfz_wire::frames::{BETWEEN_CALLS, LINE_PREFIX, MAX_FRAMES};

extern "C" {
    /// glibc's `execinfo.h`: the return addresses of the calling thread, innermost first.
    fn backtrace(buffer: *mut *mut c_void, size: c_int) -> c_int;
}

/// The signals a kernel bug kills with. SIGKILL (out of memory, timeouts) cannot be caught.
const FATAL: [c_int; 5] = [libc::SIGSEGV, libc::SIGBUS, libc::SIGABRT, libc::SIGFPE, libc::SIGILL];

/// A stack for the handler: a stack overflow leaves none on the thread's own.
const ALT_STACK_BYTES: usize = 256 << 10;

/// The executable's path, written for frames in it: `dladdr` names the main program by argv[0],
/// which may be relative to a directory the worker has left.
static EXE: OnceLock<CString> = OnceLock::new();

/// Whether the worker is inside a call of an operator (`in_call`); read by the handler, where
/// an atomic load is safe.
static IN_CALL: AtomicBool = AtomicBool::new(false);

/// Runs `call` (one call of an operator) marked as such: a death outside one is written as
/// `BETWEEN_CALLS`, its frames no site of the damage.
pub fn in_call<R>(call: impl FnOnce() -> R) -> R {
    IN_CALL.store(true, Ordering::SeqCst);
    let result = call();
    IN_CALL.store(false, Ordering::SeqCst);
    result
}

/// Installs the handler for every fatal signal, on an alternate stack for this thread. The
/// process still dies by the signal it got (the supervisor reads the real one): the handler
/// restores the default action and raises it again.
pub fn install() {
    if let Ok(exe) = std::env::current_exe() {
        let _ = EXE.set(CString::new(exe.as_os_str().as_encoded_bytes()).unwrap_or_default());
    }
    let mut warm = [std::ptr::null_mut(); 4];
    // SAFETY: a buffer of 4 pointers, and its length.
    unsafe { backtrace(warm.as_mut_ptr(), warm.len() as c_int) };
    // Leaked on purpose: the handler may run until the process ends.
    let stack: &'static mut [u8] = Box::leak(vec![0u8; ALT_STACK_BYTES].into_boxed_slice());
    let alt = libc::stack_t { ss_sp: stack.as_mut_ptr().cast(), ss_flags: 0, ss_size: stack.len() };
    // SAFETY: a valid stack_t over memory that lives forever; sigaction with a zeroed struct
    // whose handler, flags and mask are then set.
    unsafe {
        libc::sigaltstack(&alt, std::ptr::null_mut());
        for sig in FATAL {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_fatal as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_RESETHAND;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(sig, &action, std::ptr::null_mut());
        }
    }
}

extern "C" fn on_fatal(sig: c_int, _info: *mut libc::siginfo_t, _context: *mut c_void) {
    let mut frames = [std::ptr::null_mut(); MAX_FRAMES];
    // SAFETY: a buffer of MAX_FRAMES pointers; backtrace was warmed up by `install`.
    let n = unsafe { backtrace(frames.as_mut_ptr(), MAX_FRAMES as c_int) }.max(0) as usize;
    write_all(b"\n");
    if !IN_CALL.load(Ordering::SeqCst) {
        write_all(BETWEEN_CALLS.as_bytes());
        write_all(b"\n");
    }
    for &pc in &frames[..n] {
        write_frame(pc);
    }
    // SAFETY: SA_RESETHAND restored the default action already; raising again delivers the
    // signal once the handler returns (it is blocked while the handler runs). A fault re-executes
    // its instruction; a raised signal would not come back by itself.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

/// Writes `sfz-frame 0x<offset> <module>` for one return address, without allocating.
fn write_frame(pc: *mut c_void) {
    // SAFETY: dladdr fills `info` for an address; all-zero is a valid Dl_info.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is a valid out-pointer.
    if unsafe { libc::dladdr(pc, &mut info) } == 0 || info.dli_fbase.is_null() {
        return;
    }
    let mut line = [0u8; 48];
    let mut len = 0;
    for &b in LINE_PREFIX.as_bytes().iter().chain(b" 0x") {
        line[len] = b;
        len += 1;
    }
    len += hex(pc as usize - info.dli_fbase as usize, &mut line[len..]);
    line[len] = b' ';
    len += 1;
    write_all(&line[..len]);
    // SAFETY: dli_fname, when set, is a NUL-terminated string owned by the dynamic loader.
    let name = if info.dli_fname.is_null() { &[][..] } else { unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }.to_bytes() };
    match EXE.get() {
        Some(exe) if !name.starts_with(b"/") => write_all(exe.as_bytes()),
        _ => write_all(name),
    }
    write_all(b"\n");
}

/// `value` in lower-case hex at the start of `out`; the number of digits.
fn hex(value: usize, out: &mut [u8]) -> usize {
    let digits = (usize::BITS - value.leading_zeros()).div_ceil(4).max(1) as usize;
    for (i, digit) in out[..digits].iter_mut().enumerate() {
        *digit = b"0123456789abcdef"[(value >> (4 * (digits - 1 - i))) & 0xf];
    }
    digits
}

fn write_all(mut bytes: &[u8]) {
    while !bytes.is_empty() {
        // SAFETY: writing a valid buffer to stderr.
        let n = unsafe { libc::write(2, bytes.as_ptr().cast(), bytes.len()) };
        if n <= 0 {
            return;
        }
        bytes = &bytes[n as usize..];
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn offsets_are_written_in_hex() {
        let mut out = [0u8; 20];
        let n = super::hex(0x1a2b, &mut out);
        assert_eq!(&out[..n], b"1a2b");
        let n = super::hex(0, &mut out);
        assert_eq!(&out[..n], b"0");
        let n = super::hex(usize::MAX, &mut out);
        assert_eq!(n, 16);
    }
}
