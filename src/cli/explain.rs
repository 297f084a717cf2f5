//! `sfz explain CODE`: the page of a diagnostic code.
use std::process::ExitCode;

use crate::diag;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A code such as E0002 or W0001.
    pub code: String,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match diag::lookup(&args.code) {
        Some(info) => {
            print!("{}", info.explanation);
            Ok(ExitCode::SUCCESS)
        }
        None => {
            let codes: Vec<&str> = diag::CODES.iter().map(|c| c.code.as_str()).collect();
            anyhow::bail!("no diagnostic code `{}`; the codes are {}", args.code, codes.join(", "))
        }
    }
}
