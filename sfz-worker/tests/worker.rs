//! The worker process on its own: garbage in, a clear message out, no panic.
use std::io::{Read, Write};
use std::process::{Command, Stdio};

fn worker() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sfz-worker"))
}

#[test]
fn a_bad_frame_ends_the_worker_with_a_message() {
    let mut child = worker().stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // A length, then a body that is not a request (variant 200 does not exist).
    stdin.write_all(&[3, 0, 0, 0, 200, 1, 2]).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("sfz-worker: bad request frame"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    // It said Ready first, on its own protocol stream.
    assert!(out.stdout.len() > 4);
}

#[test]
fn an_absurd_frame_length_is_refused_without_allocating_it() {
    let mut child = worker().stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(&u32::MAX.to_le_bytes()).unwrap();
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(3));
    assert!(stderr.contains("frame of 4294967295 bytes"), "{stderr}");
}

#[test]
fn bad_arguments_are_usage_errors() {
    for args in [&["--memory-mb", "lots"][..], &["--frobnicate"], &["--fork-server"], &["--control-fd", "3"]] {
        let out = worker().args(args).stdin(Stdio::null()).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("usage: sfz-worker"), "{args:?}");
    }
}
