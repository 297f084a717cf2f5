//! Running reproducers under pip torch and deciding whether each still shows its bug: the
//! script must fail the way its finding says (see `repro` for how scripts fail), not merely fail.
use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::Finding;
use crate::oracle::errors::{normalize, normalize_all};
use crate::oracle::{Cause, Death, Disagreement, Evidence};
use crate::wire::oracle::Oracle;
use crate::wire::outcome::signal_name;
use crate::wire::variant::GradientKind;

/// Whether a reproducer showed its bug.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verification {
    pub reproduced: bool,
    /// Not reproduced as recorded, but the script died by a fatal signal: a bug shows all the
    /// same, in another form (MKL's `?geev` on NaN raises an internal assert in one process and
    /// segfaults in another, as it reads uninitialised values).
    pub differently: bool,
    /// What happened, in words ("died with SIGSEGV", "AssertionError", "exited 0").
    pub detail: String,
    pub seconds: f64,
}

/// What a script does while its bug is there.
#[derive(Clone, Debug, PartialEq)]
pub enum Expected {
    /// Killed by this signal.
    Signal(String),
    /// Killed by a memory error, whichever signal it ends with: one overrun segfaults in one
    /// process and trips glibc's heap checks in the next.
    MemoryError,
    /// Exits with this status.
    Exit(i32),
    /// Runs past the timeout.
    Hang,
    /// Runs out of memory.
    OutOfMemory,
    /// Fails with every one of these texts on stderr (compared normalised).
    Error(Vec<String>),
}

/// The Python to run reproducers with: `$SFZ_PYTHON`, else the one set-up pinned at build time,
/// else `python3`.
pub fn default_python() -> PathBuf {
    std::env::var_os("SFZ_PYTHON").map(PathBuf::from).or_else(|| option_env!("SFZ_PYTHON").map(PathBuf::from)).unwrap_or_else(|| "python3".into())
}

/// What a finding's script must do to count as reproducing it.
pub fn expected(f: &Finding) -> Expected {
    let failure = || -> Expected {
        match &f.cause {
            Cause::Died { death: Death::Memory, .. } => Expected::MemoryError,
            Cause::Died { death: Death::Signal(s), .. } => Expected::Signal(s.name()),
            Cause::Died { death: Death::Exit(code), .. } => Expected::Exit(*code),
            Cause::Hang => Expected::Hang,
            Cause::Internal { .. } => error_expected(&f.cause.class_text()),
            // A line an older sfz wrote whose cause it did not name: its signal, else its text.
            other => match f.signal {
                Some(s) => Expected::Signal(s.name()),
                None => error_expected(&other.to_string()),
            },
        }
    };
    match (&f.evidence, f.oracle) {
        (Evidence::Call, Oracle::Hang) => Expected::Hang,
        (Evidence::Call, Oracle::Oom) => Expected::OutOfMemory,
        (Evidence::Call, _) => failure(),
        (Evidence::Differential { what: Disagreement::VariantFails, .. }, _) => failure(),
        (Evidence::Differential { what: Disagreement::Gradient, .. }, _) => Expected::Error(vec!["Jacobian mismatch".into()]),
        (Evidence::Differential { what: Disagreement::Derivative(at), .. }, _) => Expected::Error(vec!["AssertionError".into(), gradient_assertion(at.kind).into()]),
        _ => Expected::Error(vec!["AssertionError".into()]),
    }
}

/// The assertion a gradient script fails with (`repro::gradient`).
fn gradient_assertion(kind: GradientKind) -> &'static str {
    match kind {
        GradientKind::Numeric => "backward disagrees with finite differences",
        GradientKind::Forward => "reverse and forward mode disagree",
        GradientKind::NonFinite => "the gradient is not finite",
        GradientKind::Second => "double backward disagrees with differences of the gradient",
        GradientKind::Layout => "backward differs through a non-contiguous input",
        GradientKind::InPlace => "backward differs through the in-place form",
    }
}

/// What a script shows of an internal error: an assert's location (`INTERNAL ASSERT
/// aten/src/ATen/native/Foo.cpp:123`; Python prints the full path), else the message after an
/// escaped exception's class.
fn error_expected(what: &str) -> Expected {
    if let Some(loc) = what.strip_prefix("INTERNAL ASSERT ") {
        let (path, line) = loc.rsplit_once(':').unwrap_or((loc, ""));
        let file = path.rsplit('/').next().unwrap_or(path);
        return Expected::Error(vec!["INTERNAL ASSERT FAILED".into(), format!("{file}\":{line}")]);
    }
    // `OutOfRange: vector::_M_range_check: ...`: the message after the class.
    let text = what.split_once(": ").map_or(what, |(_, t)| t);
    // An escaped std exception's class is its mangled type (`StNlength_error: `), which Python
    // does not print: `RuntimeError: cannot create std::vector ...`.
    let text = match text.split_once(": ") {
        Some((ty, rest)) if ty.starts_with("StN") && !ty.contains(' ') => rest,
        _ => text,
    };
    Expected::Error(vec![text.to_string()])
}

/// Python's stderr without the frames of its tracebacks (`  File ...` and the source lines under
/// them): the exception lines and anything printed outside a traceback stay.
fn without_traceback_frames(stderr: &str) -> String {
    let mut out = String::new();
    let mut in_traceback = false;
    for line in stderr.lines() {
        if line.starts_with("Traceback (most recent call last):") {
            in_traceback = true;
            continue;
        }
        if in_traceback && line.starts_with(' ') {
            continue;
        }
        in_traceback = false;
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Runs of a crash's reproducer at most: a corrupted heap is noticed at some later free, or not
/// at all, so one run of a real memory bug may well exit cleanly.
pub const CRASH_TRIES: u32 = 5;

/// Runs the finding's reproducer (a crash up to `CRASH_TRIES` times, until it dies as expected).
pub fn verify(f: &Finding, dir: &Path, python: &Path, timeout: Duration) -> Verification {
    let tries = if matches!(expected(f), Expected::Signal(_)) { CRASH_TRIES } else { 1 };
    let start = Instant::now();
    let mut last = verify_once(f, dir, python, timeout);
    for k in 2..=tries {
        if last.reproduced {
            break;
        }
        last = verify_once(f, dir, python, timeout);
        if last.reproduced {
            last.detail = format!("{} (run {k} of up to {tries})", last.detail);
        }
    }
    last.seconds = start.elapsed().as_secs_f64();
    last
}

/// Runs `dir`'s reproducer of `f` with `python` once, at most `timeout`.
fn verify_once(f: &Finding, dir: &Path, python: &Path, timeout: Duration) -> Verification {
    let script = dir.join(&f.repro);
    let start = Instant::now();
    let done = |reproduced: bool, detail: String| Verification { reproduced, differently: false, detail, seconds: start.elapsed().as_secs_f64() };
    let mut child = match Command::new(python).arg(&script).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn() {
        Ok(c) => c,
        Err(e) => return done(false, format!("cannot run {}: {e}", python.display())),
    };
    let mut stderr = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        if let Some(e) = stderr.as_mut() {
            let _ = e.read_to_end(&mut s);
        }
        String::from_utf8_lossy(&s).into_owned()
    });
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if start.elapsed() >= timeout => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => break None,
        }
    };
    let stderr = reader.join().unwrap_or_default();
    let expected = expected(f);
    let Some(status) = status else {
        return done(expected == Expected::Hang, format!("still running after {} s", timeout.as_secs_f64()));
    };
    let what = match (status.signal(), status.code()) {
        (Some(s), _) => format!("died with {}", signal_name(s)),
        (None, Some(c)) => format!("exited {c}"),
        (None, None) => "ended".to_string(),
    };
    let last = stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    let detail = if last.is_empty() { what.clone() } else { format!("{what}: {}", last.chars().take(200).collect::<String>()) };
    let reproduced = match &expected {
        Expected::Signal(name) => status.signal().map(signal_name).as_deref() == Some(name.as_str()),
        Expected::MemoryError => match status.signal() {
            Some(libc::SIGSEGV | libc::SIGBUS) => true,
            Some(libc::SIGABRT) => stderr.lines().any(crate::oracle::errors::memory_damage),
            _ => false,
        },
        Expected::Exit(code) => status.code() == Some(*code),
        Expected::Hang => false,
        Expected::OutOfMemory => {
            status.signal() == Some(libc::SIGKILL) || ["out of memory", "can't allocate memory", "MemoryError", "DefaultCPUAllocator"].iter().any(|t| stderr.contains(t))
        }
        Expected::Error(texts) => {
            // Only what was raised counts: a traceback echoes the script's lines, whose comments
            // quote the expected error.
            let raised = without_traceback_frames(&stderr);
            let seen = normalize_all(&raised);
            !status.success() && texts.iter().all(|t| raised.contains(t.as_str()) || seen.contains(&normalize(t)))
        }
    };
    let fatal = status.signal().is_some_and(|s| [libc::SIGSEGV, libc::SIGABRT, libc::SIGBUS, libc::SIGILL, libc::SIGFPE].contains(&s));
    Verification { differently: !reproduced && fatal, ..done(reproduced, detail) }
}

#[cfg(test)]
mod tests {
    use super::without_traceback_frames;

    #[test]
    fn an_escaped_exception_is_expected_without_its_mangled_type() {
        let f: super::Finding = crate::findings::store::parse_lines(
            &serde_json::json!({
                "id": "internal_error-tensorsolve-1", "api": "torch.linalg.tensorsolve", "aten": "aten::linalg_tensorsolve", "oracle": "internal_error",
                "signature": "StdException: StNlength_error: cannot create std::vector larger than max_size()", "message": "", "signal": null,
                "seed": 0, "case_index": 0, "case": {"op": 0, "args": []}, "inputs": [], "repro": "repro/x.py", "elapsed_s": 0.0,
                "sfz_version": "0.1.0", "torch_version": "2.13.0", "evidence": "Call"
            })
            .to_string(),
        )
        .0
        .remove(0);
        assert_eq!(super::expected(&f), super::Expected::Error(vec!["cannot create std::vector larger than max_size()".into()]));
    }

    /// A memory error is expected as any of its signals, an abort other than glibc's is not.
    #[test]
    fn a_memory_error_is_expected_whatever_signal_it_ends_with() {
        let finding = |signal: &str, signature: &str| -> super::Finding {
            crate::findings::store::parse_lines(
                &serde_json::json!({
                    "id": "crash-x-1", "api": "torch.x", "aten": "aten::x", "oracle": "crash", "signature": signature, "message": "", "signal": signal,
                    "seed": 0, "case_index": 0, "case": {"op": 0, "args": []}, "inputs": [], "repro": "repro/x.py", "elapsed_s": 0.0,
                    "sfz_version": "0.1.0", "torch_version": "2.13.0", "evidence": "Call"
                })
                .to_string(),
            )
            .0
            .remove(0)
        };
        assert_eq!(super::expected(&finding("SIGSEGV", "memory error")), super::Expected::MemoryError);
        assert_eq!(super::expected(&finding("SIGABRT", "memory error in at::native::{anon}::k")), super::Expected::MemoryError);
        assert_eq!(super::expected(&finding("SIGABRT", "SIGABRT: terminate called")), super::Expected::Signal("SIGABRT".into()));
    }

    #[test]
    fn traceback_frames_do_not_count_as_the_error() {
        let stderr = "Traceback (most recent call last):\n  File \"r.py\", line 9, in <module>\n    torch.mse_loss(a, b, -1)  # raises: INTERNAL ASSERT FAILED at \"Loss.cpp\":97\n    ^^^^^^^^^^^^^^\nAttributeError: module 'torch' has no attribute 'mse_loss'\n";
        let raised = without_traceback_frames(stderr);
        assert!(!raised.contains("INTERNAL ASSERT"), "{raised}");
        assert!(raised.contains("AttributeError"));
    }
}
