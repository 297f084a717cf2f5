//! `sfz-worker`: one isolated executor process. The supervisor starts it with pipes on stdin,
//! stdout and stderr and speaks `worker::protocol` to it; it is not meant to be run by hand.
//!
//!     sfz-worker [--memory-mb N] [--threads N] [--progress-fd FD]
use std::process::ExitCode;

use sfz::worker::serve::{serve, ServeConfig};

fn main() -> ExitCode {
    let config = match parse_args(std::env::args().skip(1)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("sfz-worker: {e}\nusage: sfz-worker [--memory-mb N] [--threads N] [--progress-fd FD]");
            return ExitCode::from(2);
        }
    };
    match serve(&config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sfz-worker: {e}");
            ExitCode::from(3)
        }
    }
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<ServeConfig, String> {
    let mut config = ServeConfig::default();
    while let Some(flag) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match flag.as_str() {
            "--memory-mb" => {
                let v = value("--memory-mb")?;
                config.memory_mb = Some(v.parse().map_err(|_| format!("--memory-mb takes a number of MiB, not `{v}`"))?);
            }
            "--threads" => {
                let v = value("--threads")?;
                config.threads = v.parse().map_err(|_| format!("--threads takes a number, not `{v}`"))?;
            }
            "--progress-fd" => {
                let v = value("--progress-fd")?;
                config.progress_fd = Some(v.parse().map_err(|_| format!("--progress-fd takes a file descriptor, not `{v}`"))?);
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(config)
}
