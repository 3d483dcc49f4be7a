//! The `venusc` binary: parse the command line and hand over to [`cli::run`].

mod cli;

fn main() -> std::process::ExitCode {
    cli::run()
}
