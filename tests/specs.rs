//! The repository's specs, stdlib and examples pass the real commands CI users run: `sfz check`
//! reports nothing (signatures compared when a worker is built), `sfz fmt --check` changes nothing.
use std::process::Command;

fn sfz(cache: &std::path::Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sfz"));
    c.current_dir(env!("CARGO_MANIFEST_DIR")).env("SFZ_CACHE_DIR", cache).arg("--color=never");
    c
}

#[test]
fn specs_stdlib_and_examples_check_clean() {
    let cache = tempfile::tempdir().expect("tempdir");
    let out = sfz(cache.path()).args(["check", "specs/", "stdlib/", "examples/"]).output().expect("sfz runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains(": 0 errors, 0 warnings"), "{stderr}");
}

#[test]
fn specs_stdlib_and_examples_are_formatted() {
    let cache = tempfile::tempdir().expect("tempdir");
    let out = sfz(cache.path()).args(["fmt", "--check", "specs/", "stdlib/", "examples/"]).output().expect("sfz runs");
    assert!(out.status.success(), "{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
}
