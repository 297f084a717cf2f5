//! The command line: clap definitions and dispatch. The only place that prints.
mod check;
mod explain;
mod fmt;
mod fuzz;
pub mod hunt;
mod infer;
mod infer_oracles;
mod init;
mod replay;
mod report;
mod suggest;
pub mod train;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser, Debug)]
#[command(name = "sfz", version, about = "A spec-driven fuzzer for PyTorch APIs", long_about = None)]
pub struct Cli {
    /// When to colour output.
    #[arg(long, value_enum, default_value_t = Color::Auto, global = true)]
    pub color: Color,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Parse and type-check spec files; exit 1 if any has an error.
    Check(check::Args),
    /// Explain a diagnostic code, e.g. `sfz explain E0002`.
    Explain(explain::Args),
    /// Rewrite spec files in the canonical layout (comments kept); `--check` only reports.
    Fmt(fmt::Args),
    /// Run the language server on stdin/stdout (for editors; see README).
    Lsp(LspArgs),
    /// Fuzz the APIs of spec files against libtorch; findings go to --out.
    Fuzz(Box<fuzz::Args>),
    /// Run the `program` items of spec files and search for inputs that make an intermediate
    /// NaN or INF; reports and reproducers go to --out.
    Hunt(hunt::Args),
    /// Learn soft-assertion models from executions of the programs of spec files.
    Train(train::Args),
    /// Run one recorded finding again and say whether it still reproduces.
    Replay(replay::Args),
    /// Tabulate a findings folder; write report.md and report.sarif; --verify the reproducers.
    Report(report::Args),
    /// Write spec skeletons for ATen operators from libtorch's schemas.
    Init(init::Args),
    /// Propose candidate rules: from a language model endpoint, or enumerated offline.
    Suggest(suggest::Args),
    /// Validate candidate rules by running libtorch; write validated/rejected rules back.
    Infer(infer::Args),
}

#[derive(clap::Args, Debug)]
pub struct LspArgs {
    /// The `sfz-worker` whose libtorch schemas (cached by `sfz check`) signatures are compared
    /// with (default: next to `sfz`). The server itself never starts a worker.
    #[arg(long)]
    pub worker: Option<PathBuf>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Color {
    Auto,
    Always,
    Never,
}

impl Color {
    /// Whether to colour what goes to stderr.
    pub fn stderr(self) -> bool {
        use std::io::IsTerminal;
        match self {
            Color::Always => true,
            Color::Never => false,
            Color::Auto => std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
        }
    }
}

/// Output format of commands that report to tools.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Human,
    Json,
}

/// Runs the command line; the exit code is 0 on success, 1 when the command found problems
/// (spec errors, findings are not problems), 2 for usage or environment errors.
pub fn main() -> ExitCode {
    exit_quietly_on_closed_stdout();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check(args) => check::run(args, cli.color),
        Command::Explain(args) => explain::run(args),
        Command::Fmt(args) => fmt::run(args, cli.color),
        Command::Lsp(args) => crate::lsp::run_stdio(crate::lsp::Config { worker_exe: args.worker }).map(|()| ExitCode::SUCCESS),
        Command::Fuzz(args) => fuzz::run(*args, cli.color),
        Command::Hunt(args) => hunt::run(args, cli.color),
        Command::Train(args) => train::run(args, cli.color),
        Command::Replay(args) => replay::run(args, cli.color),
        Command::Report(args) => report::run(args, cli.color),
        Command::Init(args) => init::run(args, cli.color),
        Command::Suggest(args) => suggest::run(args, cli.color),
        Command::Infer(args) => infer::run(args, cli.color),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// Paths given on the command line that do not exist, as one error.
pub fn missing_paths(paths: &[PathBuf]) -> anyhow::Result<()> {
    let missing: Vec<String> = paths.iter().filter(|p| !p.exists()).map(|p| p.display().to_string()).collect();
    if missing.is_empty() {
        Ok(())
    } else {
        anyhow::bail!("no such file or directory: {}", missing.join(", "))
    }
}

/// The end of `sfz infer` and `sfz suggest` for one spec file: print the new text (`--dry-run`),
/// or check it and write it back. Returns false when the new text does not check (the file is
/// then left as it was: that is a bug in sfz, reported as such).
pub(super) fn write_back(command: &str, what: &str, path: &std::path::Path, text: &str, dry_run: bool, render: crate::diag::RenderConfig) -> anyhow::Result<bool> {
    if dry_run {
        print!("{text}");
        return Ok(true);
    }
    let after = crate::check::check_text(path, text);
    if after.has_errors() {
        eprint!("{}", crate::diag::render_all(&after.map, &after.diags, render));
        eprintln!("sfz {command}: {what} for `{}` do not check; the file is left as it was (this is a bug in sfz)", path.display());
        return Ok(false);
    }
    std::fs::write(path, text).map_err(|e| anyhow::anyhow!("cannot write `{}`: {e}", path.display()))?;
    Ok(true)
}

/// `sfz report | head` closes stdout early and std's print macros then panic. SIGPIPE stays
/// ignored (a write to a dead worker's pipe must fail, not kill sfz), so sfz ends as a program
/// killed by SIGPIPE is seen to end, status 141, without a panic message.
fn exit_quietly_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info.payload().downcast_ref::<String>().map(String::as_str).unwrap_or("");
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info)
    }));
}
