//! Running the `sfz` binary the tests were built with.
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `sfz` binary of this build.
pub fn sfz() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sfz"))
}

/// Runs a command to the end: its exit code (-1 when killed), stdout and stderr.
pub fn run(cmd: &mut Command) -> (i32, String, String) {
    let Output { status, stdout, stderr } = cmd.output().expect("sfz runs");
    (status.code().unwrap_or(-1), String::from_utf8_lossy(&stdout).into_owned(), String::from_utf8_lossy(&stderr).into_owned())
}

/// Writes a fixture file into `dir`.
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write fixture");
    p
}
