//! The command line: clap definitions, file I/O and exit codes. The only module that reads
//! files or writes to stdout/stderr; everything below it is pure.
//!
//! Exit status (DIAGNOSTICS.md): 0 no errors, 1 errors in the input, 2 usage error or an
//! unreadable file.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use venusc::diag::render;
use venusc::diag::{Code, Diagnostic};

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

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Human,
    Json,
    Github,
}

#[derive(Subcommand)]
enum Command {
    /// Parse, type-check and validate `.venus` files (fast, for CI).
    Check(CheckArgs),
    /// Print the long explanation of a diagnostic code, with a wrong and a right example.
    Explain {
        /// A code such as `E0301`; without one, lists every code.
        code: Option<String>,
    },
}

#[derive(clap::Args)]
struct CheckArgs {
    /// Files or directories (searched recursively for `*.venus`).
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    #[arg(long, value_enum, default_value_t = Format::Human)]
    format: Format,
    /// Exit 1 when there are warnings.
    #[arg(long)]
    deny_warnings: bool,
    /// Print the per-stage memory table of every valid scenario.
    #[arg(long)]
    memory: bool,
}

pub fn run() -> ExitCode {
    let cli = Cli::parse();
    let color = use_color(cli.color);
    match cli.command {
        Command::Check(args) => check(&args, color),
        Command::Explain { code } => explain(code.as_deref()),
    }
}

fn use_color(choice: ColorChoice) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stderr().is_terminal(),
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
            let hint = venusc::diag::suggest(&text.to_ascii_uppercase(), Code::ALL.iter().map(|c| c.as_str()))
                .map(|s| format!("; did you mean `{s}`?"))
                .unwrap_or_else(|| "; `venusc explain` lists every code".to_string());
            usage_error(format!("unknown diagnostic code `{text}`{hint}"))
        }
    }
}

/// Expands directories into their `.venus` files (sorted, for deterministic output).
fn expand_paths(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut found = Vec::new();
            collect_venus_files(p, &mut found).map_err(|e| format!("cannot read directory `{}`: {e}", p.display()))?;
            found.sort();
            out.extend(found);
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

fn collect_venus_files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect_venus_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "venus") {
            out.push(path);
        }
    }
    Ok(())
}

fn check(args: &CheckArgs, color: bool) -> ExitCode {
    let roots = match expand_paths(&args.paths) {
        Ok(r) => r,
        Err(e) => return usage_error(e),
    };
    let mut session = venusc::Session::new();
    let mut diagnostics: Vec<Diagnostic> = Vec::new();
    let mut memory_tables = String::new();
    for root in &roots {
        let bytes = match std::fs::read(root) {
            Ok(b) => b,
            Err(e) => return usage_error(format!("cannot read `{}`: {e}", root.display())),
        };
        let id = session.load(root, &bytes, &mut read_file);
        let result = session.check(id);
        diagnostics.extend(result.diagnostics.iter().cloned());
        if args.memory {
            for s in &result.scenarios {
                memory_tables.push_str(&format!("scenario `{}` ({})\n", s.name, root.display()));
                memory_tables.push_str(&venusc::plan::memory_table(s));
                memory_tables.push('\n');
            }
        }
    }
    // A file used by several roots reports its problems once.
    let mut seen = std::collections::HashSet::new();
    diagnostics.retain(|d| seen.insert(d.clone()));
    let files = session.source_files();
    let out = match args.format {
        Format::Human => {
            let mut s = render::human(&diagnostics, &files, color);
            let (e, w) = render::counts(&diagnostics);
            if e + w > 0 {
                s.push_str(&summary_line(e, w));
            }
            s
        }
        Format::Json => render::json(&diagnostics, &files, roots.len()),
        Format::Github => render::github(&diagnostics, &files),
    };
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(memory_tables.as_bytes());
    let _ = stdout.write_all(out.as_bytes());
    exit_for(&diagnostics, args.deny_warnings)
}

fn summary_line(errors: usize, warnings: usize) -> String {
    let plural = |n: usize, w: &str| if n == 1 { format!("{n} {w}") } else { format!("{n} {w}s") };
    format!("{}, {} emitted\n", plural(errors, "error"), plural(warnings, "warning"))
}

fn exit_for(diagnostics: &[Diagnostic], deny_warnings: bool) -> ExitCode {
    let (errors, warnings) = render::counts(diagnostics);
    if errors > 0 || (deny_warnings && warnings > 0) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// How the session reads a `use`d file.
fn read_file(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| e.to_string())
}

