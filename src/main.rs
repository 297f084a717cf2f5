//! The `sfz` command. It never loads libtorch: cases run in `sfz-worker` processes.
fn main() -> std::process::ExitCode {
    sfz::cli::main()
}
