//! The command line: clap definitions, file I/O and exit codes. The only module that reads
//! files or writes to stdout/stderr; everything below it is pure.
//!
//! Exit status (DIAGNOSTICS.md): 0 no errors, 1 errors in the input, 2 usage error or an
//! unreadable file.

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use venusc::diag::Code;

#[derive(Parser)]
#[command(name = "venusc", version, about = "Compile and simulate Megatron-LM-style training runs", long_about = None)]
struct Cli {
    /// When to colour output.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    color: ColorChoice,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Subcommand)]
enum Command {
    /// Print the long explanation of a diagnostic code, with a wrong and a right example.
    Explain {
        /// A code such as `E0301`; without one, lists every code.
        code: Option<String>,
    },
}

pub fn run() -> ExitCode {
    let cli = Cli::parse();
    let _color = use_color(cli.color);
    match cli.command {
        Command::Explain { code } => explain(code.as_deref()),
    }
}

fn use_color(choice: ColorChoice) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::io::stderr().is_terminal()
        }
    }
}

fn usage_error(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(2)
}

fn explain(code: Option<&str>) -> ExitCode {
    let Some(text) = code else {
        let mut out = String::new();
        for c in Code::ALL {
            out.push_str(&format!("{}  {}\n", c.as_str(), c.title()));
        }
        print!("{out}");
        return ExitCode::SUCCESS;
    };
    match Code::parse(text) {
        Some(c) => {
            print!("{}", c.explanation());
            ExitCode::SUCCESS
        }
        None => {
            let hint = venusc::diag::suggest(
                &text.to_ascii_uppercase(),
                Code::ALL.iter().map(|c| c.as_str()),
            )
            .map(|s| format!("; did you mean `{s}`?"))
            .unwrap_or_else(|| "; `venusc explain` lists every code".to_string());
            usage_error(format!("unknown diagnostic code `{text}`{hint}"))
        }
    }
}
