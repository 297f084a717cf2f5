//! `sfz-worker`: one isolated executor process. The supervisor starts it with pipes on stdin,
//! stdout and stderr and speaks `worker::protocol` to it; it is not meant to be run by hand.
//!
//!     sfz-worker [--memory-mb N] [--threads N] [--progress-fd FD]
//!     sfz-worker --fork-server --control-fd FD
use std::process::ExitCode;

use sfz_worker::serve::{serve, ServeConfig};

const USAGE: &str = "usage: sfz-worker [--memory-mb N] [--threads N] [--progress-fd FD]\n       sfz-worker --fork-server --control-fd FD";

/// What the process is asked to be.
enum Mode {
    Worker(ServeConfig),
    ForkServer { control_fd: i32 },
}

fn main() -> ExitCode {
    // Operators that write files (`_sobol_engine`'s probes, `save`-like ops given a name) write
    // them into a scratch folder, not into the user's working directory.
    let scratch = std::env::temp_dir().join("sfz-worker-scratch");
    if std::fs::create_dir_all(&scratch).and_then(|()| std::env::set_current_dir(&scratch)).is_err() {
        eprintln!("sfz-worker: cannot enter the scratch folder {}; files operators write land in the working directory", scratch.display());
    }
    let config = match parse_args(std::env::args().skip(1)) {
        Ok(Mode::Worker(c)) => c,
        Ok(Mode::ForkServer { control_fd }) => {
            return match sfz_worker::forkserver::run(control_fd) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("sfz-worker: fork server: {e}");
                    ExitCode::from(3)
                }
            };
        }
        Err(e) => {
            eprintln!("sfz-worker: {e}\n{USAGE}");
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

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Mode, String> {
    let mut config = ServeConfig::default();
    let mut fork_server = false;
    let mut control_fd = None;
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
            "--fork-server" => fork_server = true,
            "--control-fd" => {
                let v = value("--control-fd")?;
                control_fd = Some(v.parse().map_err(|_| format!("--control-fd takes a file descriptor, not `{v}`"))?);
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    match (fork_server, control_fd) {
        (true, Some(control_fd)) => Ok(Mode::ForkServer { control_fd }),
        (true, None) => Err("--fork-server needs --control-fd".into()),
        (false, Some(_)) => Err("--control-fd is for --fork-server".into()),
        (false, None) => Ok(Mode::Worker(config)),
    }
}
