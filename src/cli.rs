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
use venusc::syntax::schema;

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
    /// Simulate a scenario and report where the time goes.
    Sim(SimArgs),
    /// Draw the pipeline schedule: each pipeline rank's ops on a time axis.
    Schedule(ScheduleArgs),
    /// Lower a scenario and write what it compiles to (`--emit KIND`).
    Compile(CompileArgs),
    /// Convert a VenusSim `llm-sim-config.json` into a `.venus` file.
    Import(ImportArgs),
    /// Explore a design space: check, simulate and rank every candidate plan.
    Sweep(SweepArgs),
    /// Compare predictions with measured training runs (a published-runs table).
    Validate(ValidateArgs),
    /// Format `.venus` files in place in the canonical layout.
    Fmt(FmtArgs),
    /// Run the language server on stdin/stdout (for editors).
    Lsp,
    /// Print the long explanation of a diagnostic code, with a wrong and a right example, or
    /// the key table's entry of a key.
    Explain {
        /// A code such as `E0301` or a key such as `micro_batch`; without one, lists every code.
        code: Option<String>,
    },
}

#[derive(clap::Args)]
struct ValidateArgs {
    /// The published-runs table (TSV).
    table: PathBuf,
    /// Also write each row's generated scenario as `DIR/<id>.venus`.
    #[arg(long, value_name = "DIR")]
    emit_scenarios: Option<PathBuf>,
}

#[derive(clap::Args)]
struct FmtArgs {
    /// Files or directories (searched recursively for `*.venus`).
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Change nothing; exit 1 and name the files that are not formatted.
    #[arg(long)]
    check: bool,
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

/// Selects one scenario of one file.
#[derive(clap::Args)]
struct ScenarioArgs {
    /// The `.venus` file.
    file: PathBuf,
    /// The scenario to use when the file has several.
    #[arg(long)]
    scenario: Option<String>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ReportFormat {
    Text,
    Json,
}

#[derive(clap::Args)]
struct SimArgs {
    #[command(flatten)]
    input: ScenarioArgs,
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    format: ReportFormat,
    /// Write a Chrome/Perfetto trace of the run (open it in ui.perfetto.dev).
    #[arg(long, value_name = "FILE.json")]
    timeline: Option<PathBuf>,
    /// Ranks in the timeline: `all` simulated ranks (default) or a comma-separated list.
    #[arg(long, value_name = "all|R,R,...")]
    timeline_ranks: Option<String>,
    /// Simulate every rank instead of one representative per symmetry class.
    #[arg(long)]
    all_ranks: bool,
    /// Training iterations to simulate (overrides the plan's `iterations`); the report is the last.
    #[arg(long)]
    iterations: Option<u32>,
    /// Report `engine.wall_ms` as 0, so two runs are byte-identical.
    #[arg(long)]
    deterministic: bool,
    /// Run a directory of VenusSim simplified or template traces (ours or VenusSim's) on the
    /// engine instead of lowering the scenario; FILE still gives the cluster, GPU and `mfu`.
    #[arg(long, value_name = "DIR")]
    trace: Option<PathBuf>,
}

#[derive(clap::Args)]
struct ScheduleArgs {
    #[command(flatten)]
    input: ScenarioArgs,
    /// Width of the picture in columns.
    #[arg(long, default_value_t = 160)]
    width: usize,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Emit {
    /// Megatron's per-pipeline-rank op order, one line per rank.
    Schedule,
    /// Rank layout and process groups as JSON.
    Groups,
    /// VenusSim's simplified text traces, `<name>.<rank>.et` for every rank.
    SimplifiedTrace,
    /// VenusSim's template traces (first pipeline group), mapping and output rule.
    TemplateTrace,
    /// VenusSim's `llm-sim-config.json` and `sim-config/*`.
    Venussim,
    /// Upstream Astra-Sim 2.x analytical inputs.
    AstraSim,
    /// A Chrome/Perfetto trace of the simulated run, as `sim --timeline` writes it.
    Perfetto,
}

impl Emit {
    /// Kinds that write a directory of files rather than to stdout.
    fn writes_files(self) -> bool {
        !matches!(self, Emit::Schedule | Emit::Groups)
    }
}

#[derive(clap::Args)]
struct CompileArgs {
    #[command(flatten)]
    input: ScenarioArgs,
    /// What to write.
    #[arg(long, value_enum)]
    emit: Emit,
    /// Output directory for kinds that write files (created if missing).
    #[arg(short = 'o', long = "out")]
    out: Option<PathBuf>,
}

#[derive(clap::Args)]
struct ImportArgs {
    /// VenusSim's `llm-sim-config.json` (its `system.json` and `network.yml` are found from it).
    config: PathBuf,
    /// Where to write the `.venus` file (stdout when absent).
    #[arg(short = 'o', long = "out")]
    out: Option<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SweepFormat {
    Text,
    Csv,
    Json,
}

#[derive(clap::Args)]
struct SweepArgs {
    /// The `.venus` file: plan items may hold lists (`tp [1 2 4 8]`).
    #[arg(required_unless_present = "merge")]
    file: Option<PathBuf>,
    /// The scenario to sweep when the file has several.
    #[arg(long)]
    scenario: Option<String>,
    /// Enumerate tp, pp, vpp, micro_batch, recompute and sp for the cluster's world size
    /// (replacing what the plan writes for them).
    #[arg(long)]
    auto: bool,
    /// With `--auto`: let tensor parallelism span nodes.
    #[arg(long, requires = "auto")]
    allow_cross_node_tp: bool,
    #[arg(long, value_enum, default_value_t = SweepFormat::Text)]
    format: SweepFormat,
    /// Rows of the ranking in the text output.
    #[arg(long, default_value_t = 10)]
    top: usize,
    /// Write the fastest plan as a complete scenario that `venusc sim` runs.
    #[arg(long, value_name = "FILE.venus")]
    emit_best: Option<PathBuf>,
    /// Run one of n deterministic slices of the sweep (1-based), e.g. `--shard 3/16`.
    #[arg(long, value_name = "i/n")]
    shard: Option<String>,
    /// Combine the `--format json` outputs of every shard into the whole sweep's result.
    #[arg(long, value_name = "SHARD.json", num_args = 1.., conflicts_with = "shard")]
    merge: Vec<PathBuf>,
}

pub fn run() -> ExitCode {
    let cli = Cli::parse();
    // Colour is decided per stream: diagnostics go to stderr, except `check`'s, which are its
    // output and go to stdout.
    let color = use_color(cli.color, std::io::stderr().is_terminal());
    match cli.command {
        Command::Check(args) => check(&args, use_color(cli.color, std::io::stdout().is_terminal())),
        Command::Explain { code } => explain(code.as_deref()),
        Command::Sim(args) => sim(&args, color),
        Command::Schedule(args) => schedule(&args, color),
        Command::Compile(args) => compile(&args, color),
        Command::Import(args) => import(&args),
        Command::Sweep(args) => sweep(&args, color),
        Command::Validate(args) => validate(&args),
        Command::Fmt(args) => fmt(&args, color),
        Command::Lsp => lsp(),
    }
}

/// Whether to colour a stream: `auto` colours a terminal unless `NO_COLOR` is set.
fn use_color(choice: ColorChoice, is_terminal: bool) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && is_terminal
        }
    }
}

fn usage_error(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(2)
}

/// A usage error with a code of its own (`venusc explain CODE` tells more).
fn coded_usage_error(code: Code, message: impl std::fmt::Display) -> ExitCode {
    eprintln!("error[{code}]: {message}");
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
    if let Some(c) = Code::parse(text) {
        print!("{}", c.explanation());
        return ExitCode::SUCCESS;
    }
    let entries: Vec<String> = schema::lookup_any(text).map(|k| k.explain()).collect();
    if !entries.is_empty() {
        print!("{}", entries.join("\n"));
        return ExitCode::SUCCESS;
    }
    let code_hint = venusc::diag::suggest(
        &text.to_ascii_uppercase(),
        Code::ALL.iter().map(|c| c.as_str()),
    );
    let key_hint = venusc::diag::suggest(text, schema::TABLE.iter().map(|k| k.key));
    let looks_like_code = text.starts_with(['E', 'W', 'e', 'w'])
        && text.chars().nth(1).is_some_and(|c| c.is_ascii_digit());
    match (looks_like_code, code_hint, key_hint) {
        (true, hint, _) => usage_error(format!(
            "unknown diagnostic code `{text}`{}",
            hint.map(|s| format!("; did you mean `{s}`?"))
                .unwrap_or_else(|| "; `venusc explain` lists every code".to_string())
        )),
        (false, _, Some(k)) => usage_error(format!(
            "unknown key or diagnostic code `{text}`; did you mean the key `{k}`?"
        )),
        (false, _, None) => usage_error(format!(
            "unknown key or diagnostic code `{text}`; `venusc explain` lists every code, \
             docs/language.md every key"
        )),
    }
}

/// Expands directories into their `.venus` files (sorted, for deterministic output).
fn expand_paths(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut found = Vec::new();
            collect_venus_files(p, &mut found)
                .map_err(|e| format!("cannot read directory `{}`: {e}", p.display()))?;
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
                memory_tables.push_str(&venusc::report::memory_table(s));
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
    let plural = |n: usize, w: &str| {
        if n == 1 {
            format!("{n} {w}")
        } else {
            format!("{n} {w}s")
        }
    };
    format!(
        "{}, {} emitted\n",
        plural(errors, "error"),
        plural(warnings, "warning")
    )
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

/// A selected scenario and the sources its diagnostics point into.
struct Loaded {
    scenario: venusc::plan::Scenario,
    provenance: venusc::plan::Provenance,
    files: render::SourceFiles,
}

/// Loads and checks a file and selects its scenario; on failure prints the diagnostics and
/// returns the exit code to use.
fn load_scenario(args: &ScenarioArgs, color: bool) -> Result<Loaded, ExitCode> {
    let bytes = std::fs::read(&args.file)
        .map_err(|e| usage_error(format!("cannot read `{}`: {e}", args.file.display())))?;
    let mut session = venusc::Session::new();
    let root = session.load(&args.file, &bytes, &mut read_file);
    let checked = session.check(root);
    let mut diagnostics = checked.diagnostics.clone();
    let selected = checked.select(args.scenario.as_deref());
    if let Err(Some(d)) = &selected {
        diagnostics.push(Diagnostic::clone(d));
    }
    let files = session.source_files();
    if !diagnostics.is_empty() {
        eprint!("{}", render::human(&diagnostics, &files, color));
    }
    match selected {
        Ok(sc) if !checked.has_errors() => Ok(Loaded {
            scenario: sc.clone(),
            provenance: checked.provenance_of(sc),
            files,
        }),
        _ => Err(ExitCode::from(1)),
    }
}

fn schedule_ir(sc: &venusc::plan::Scenario) -> Result<venusc::schedule::ScheduleIr, ExitCode> {
    venusc::schedule::ScheduleIr::build(venusc::plan::derive::pipeline_shape(sc))
        .map_err(|e| usage_error(format!("cannot build the schedule of `{}`: {e}", sc.name)))
}

/// The widest `schedule` picture: wider than any terminal, and small enough that the
/// picture's rows (pp × width cells) stay a few megabytes.
const MAX_SCHEDULE_WIDTH: usize = 10_000;

fn schedule(args: &ScheduleArgs, color: bool) -> ExitCode {
    if !(1..=MAX_SCHEDULE_WIDTH).contains(&args.width) {
        return usage_error(format!(
            "`--width {}` is out of range: the picture is 1 to {MAX_SCHEDULE_WIDTH} columns wide",
            args.width
        ));
    }
    let sc = match load_scenario(&args.input, color) {
        Ok(loaded) => loaded.scenario,
        Err(code) => return code,
    };
    let ir = match schedule_ir(&sc) {
        Ok(ir) => ir,
        Err(code) => return code,
    };
    // Relative times as in the Megatron papers: a backward takes twice a forward.
    let cost = venusc::schedule::OpCost {
        forward: 1,
        backward: 2,
    };
    let paint = color && std::io::stdout().is_terminal();
    print!(
        "{}",
        venusc::schedule::picture(&ir, cost, args.width, paint)
    );
    ExitCode::SUCCESS
}

fn compile(args: &CompileArgs, color: bool) -> ExitCode {
    let loaded = match load_scenario(&args.input, color) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    let sc = &loaded.scenario;
    if args.emit.writes_files() {
        let Some(dir) = &args.out else {
            return usage_error(
                "this `--emit` kind writes several files: give a directory with `-o DIR`",
            );
        };
        return emit_files(&loaded, args.emit, dir, color);
    }
    match args.emit {
        Emit::Schedule => match schedule_ir(sc) {
            Ok(ir) => print!("{}", venusc::schedule::emit_text(&ir)),
            Err(code) => return code,
        },
        Emit::Groups => match venusc::plan::layout::Layout::for_scenario(sc) {
            Ok(layout) => println!(
                "{}",
                serde_json::to_string_pretty(&venusc::report::groups_json(&layout))
                    .unwrap_or_default()
            ),
            Err(e) => return usage_error(format!("cannot lay out `{}`: {e}", sc.name)),
        },
        _ => unreachable!("file-writing kinds returned above"),
    }
    ExitCode::SUCCESS
}

/// A directory on disk as an emit sink.
struct DirSink {
    root: PathBuf,
    written: usize,
}

impl venusc::emit::Sink for DirSink {
    fn file(&mut self, rel_path: &str) -> std::io::Result<Box<dyn Write + '_>> {
        let path = self.root.join(rel_path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        self.written += 1;
        Ok(Box::new(std::io::BufWriter::new(std::fs::File::create(
            path,
        )?)))
    }
}

fn emit_files(loaded: &Loaded, kind: Emit, dir: &Path, color: bool) -> ExitCode {
    use venusc::emit;
    let sc = &loaded.scenario;
    // The Perfetto export simulates first: a plan over the trace budget fails here, coded.
    let sim = match kind {
        Emit::Perfetto => {
            let opts = venusc::simulate::SimOptions::default();
            match venusc::simulate::simulate(sc, &opts) {
                Ok(sim) => Some(sim),
                Err(e) => {
                    match e.diagnostic(sc, &loaded.provenance, &opts) {
                        Some(d) => eprint!("{}", render::human(&[d], &loaded.files, color)),
                        None => eprintln!("error: cannot emit `{}`: {e}", sc.name),
                    }
                    return ExitCode::from(1);
                }
            }
        }
        _ => None,
    };
    let mut sink = DirSink {
        root: dir.to_path_buf(),
        written: 0,
    };
    let result = match kind {
        Emit::SimplifiedTrace => emit::write_simplified_trace(sc, &mut sink),
        Emit::TemplateTrace => emit::write_template_trace(sc, &mut sink),
        Emit::Venussim => emit::write_venussim(sc, &mut sink),
        Emit::AstraSim => emit::write_astra_sim(sc, &mut sink),
        Emit::Perfetto => match &sim {
            Some(sim) => write_perfetto_file(sc, sim, &mut sink),
            None => unreachable!("simulated above"),
        },
        Emit::Schedule | Emit::Groups => unreachable!("printed to stdout"),
    };
    match result {
        Ok(warnings) => {
            for w in warnings {
                eprintln!("warning: {w}");
            }
            let files = if sink.written == 1 { "file" } else { "files" };
            eprintln!("wrote {} {files} to `{}`", sink.written, dir.display());
            ExitCode::SUCCESS
        }
        Err(e) => match e.diagnostic(sc, &loaded.provenance) {
            Some(d) => {
                eprint!("{}", render::human(&[d], &loaded.files, color));
                ExitCode::from(1)
            }
            None => usage_error(format!("cannot emit `{}`: {e}", sc.name)),
        },
    }
}

fn import(args: &ImportArgs) -> ExitCode {
    let config = args.config.display().to_string();
    let mut read = |p: &str| std::fs::read(p);
    let imported = match venusc::emit::import_venussim(&config, &mut read) {
        Ok(i) => i,
        Err(e) => {
            if e.kind == venusc::emit::ImportErrorKind::Unrepresentable {
                eprintln!("error[{}]: {e}", Code::E0605);
            } else {
                eprintln!("error: {e}");
            }
            // An unreadable file is a usage error (2); a malformed one is bad input (1).
            return ExitCode::from(if e.kind == venusc::emit::ImportErrorKind::Unreadable {
                2
            } else {
                1
            });
        }
    };
    for w in &imported.warnings {
        eprintln!("warning: {w}");
    }
    match &args.out {
        Some(path) => {
            if let Err(e) = std::fs::write(path, imported.venus.as_bytes()) {
                return usage_error(format!("cannot write `{}`: {e}", path.display()));
            }
            eprintln!("wrote `{}`", path.display());
        }
        None => print!("{}", imported.venus),
    }
    ExitCode::SUCCESS
}

fn parse_ranks(text: &str) -> Result<Option<Vec<u32>>, String> {
    if text == "all" {
        return Ok(None);
    }
    text.split(',')
        .map(|r| {
            r.trim().parse::<u32>().map_err(|_| {
                format!("`{r}` is not a rank number (use `all` or a list like `0,8,16`)")
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

fn sim(args: &SimArgs, color: bool) -> ExitCode {
    let ranks = match args.timeline_ranks.as_deref().map(parse_ranks).transpose() {
        Ok(r) => r.flatten(),
        Err(e) => return usage_error(e),
    };
    if args.iterations == Some(0) {
        return usage_error("`--iterations` must be at least 1");
    }
    let (sc, at, files) = match load_scenario(&args.input, color) {
        Ok(loaded) => (loaded.scenario, loaded.provenance, loaded.files),
        Err(code) => return code,
    };
    let opts = venusc::simulate::SimOptions {
        all_ranks: args.all_ranks,
        iterations: args.iterations,
    };
    // A failure the input caused is a coded diagnostic at the plan; the rest a plain message.
    let rendered =
        |e: venusc::simulate::SimError, message: String| match e.diagnostic(&sc, &at, &opts) {
            Some(d) => render::human(&[d], &files, color),
            None => format!("error: {message}\n"),
        };
    let result = match &args.trace {
        Some(dir) => simulate_trace_dir(&sc, dir).map_err(|f| match f {
            TraceDirFailure::Sim(e, message) => rendered(e, message),
            TraceDirFailure::Unreadable(message) => format!("error: {message}\n"),
        }),
        None => venusc::simulate::simulate(&sc, &opts)
            .map(SimRun::from)
            .map_err(|e| {
                let message = e.to_string();
                rendered(e, message)
            }),
    };
    let sim = match result {
        Ok(s) => s,
        Err(e) => {
            eprint!("{e}");
            return ExitCode::from(1);
        }
    };
    if args.timeline.is_some() {
        if let Err(code) = timeline_fits(&sim, ranks.as_deref(), args.all_ranks) {
            return code;
        }
    }
    let report = if args.deterministic {
        sim.report.clone().deterministic()
    } else {
        sim.report.clone()
    };
    match args.format {
        ReportFormat::Text => print!("{}", venusc::report::text(&report)),
        ReportFormat::Json => print!("{}", venusc::report::json(&report)),
    }
    if let Some(path) = &args.timeline {
        let file = match std::fs::File::create(path) {
            Ok(f) => f,
            Err(e) => return usage_error(format!("cannot write `{}`: {e}", path.display())),
        };
        let opts = venusc::report::perfetto::PerfettoOptions {
            ranks: ranks.as_deref(),
            layout: Some(&sim.layout),
        };
        match venusc::report::perfetto::write_perfetto(file, &sim.trace, &sim.timeline, &opts) {
            Ok(n) => eprintln!(
                "wrote {n} slices to `{}` (open it in ui.perfetto.dev)",
                path.display()
            ),
            Err(e) => return usage_error(format!("cannot write `{}`: {e}", path.display())),
        }
    }
    let failed = venusc::report::check_expect(&sc.expect, &at.expect, &report);
    if !failed.is_empty() {
        eprint!("{}", render::human(&failed, &files, color));
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

/// The largest `--timeline` written without `--timeline-ranks`: ui.perfetto.dev does not load
/// JSON traces much over 1 GB.
const MAX_TIMELINE_BYTES: u64 = 1 << 30;

/// Checks `--timeline-ranks` against the simulated ranks (E0603 for a rank the run has no
/// trace of) and the file's estimated size against [`MAX_TIMELINE_BYTES`] (E0603 without
/// `--timeline-ranks`, a warning with it), before anything is written.
fn timeline_fits(sim: &SimRun, ranks: Option<&[u32]>, all_ranks: bool) -> Result<(), ExitCode> {
    use venusc::report::perfetto;
    let simulated: Vec<u32> = sim.trace.ranks().iter().map(|r| r.rank()).collect();
    if let Some(ranks) = ranks {
        if let Some(&missing) = ranks.iter().find(|r| !simulated.contains(r)) {
            let world = sim.layout.world();
            let why = if missing >= world {
                format!("the cluster has ranks 0 to {}", world.saturating_sub(1))
            } else {
                "the run simulates one rank per symmetry class".to_string()
            };
            let shown: Vec<String> = simulated.iter().take(8).map(u32::to_string).collect();
            let more = if simulated.len() > 8 { ", ..." } else { "" };
            let help = if missing < world && !all_ranks {
                format!(
                    "pick simulated ranks ({}{more}), or add `--all-ranks`",
                    shown.join(", ")
                )
            } else {
                format!("pick simulated ranks: {}{more}", shown.join(", "))
            };
            eprintln!(
                "error[E0603]: `--timeline-ranks` names rank {missing}, which the run has no \
                 trace of: {why}\n  = help: {help}"
            );
            return Err(ExitCode::from(2));
        }
    }
    let (slices, bytes) = perfetto::estimate(&sim.trace, ranks);
    if bytes <= MAX_TIMELINE_BYTES {
        return Ok(());
    }
    let size = format!("about {} MB ({slices} slices)", bytes / 1_000_000);
    if ranks.is_none() {
        let per_rank = bytes / (simulated.len().max(1) as u64);
        let fit = (MAX_TIMELINE_BYTES / per_rank.max(1)).max(1);
        let pick: Vec<String> = simulated
            .iter()
            .take(fit.min(4) as usize)
            .map(u32::to_string)
            .collect();
        eprintln!(
            "error[E0603]: the timeline would be {size}, over the budget of {} MB: \
             ui.perfetto.dev does not load JSON traces that large\n  = help: choose at most \
             {fit} ranks with `--timeline-ranks`, such as `--timeline-ranks {}`",
            MAX_TIMELINE_BYTES / 1_000_000,
            pick.join(",")
        );
        return Err(ExitCode::from(2));
    }
    eprintln!(
        "warning: the timeline will be {size}: ui.perfetto.dev does not load JSON traces over \
         about 1 GB (trace_processor or Perfetto's command-line tools do)"
    );
    Ok(())
}

/// What `sim` reports on and exports, from either source of a trace.
struct SimRun {
    report: venusc::report::Report,
    trace: venusc::trace::Trace,
    timeline: venusc::engine::Timeline,
    layout: venusc::plan::layout::Layout,
}

impl From<venusc::simulate::Simulation> for SimRun {
    fn from(s: venusc::simulate::Simulation) -> SimRun {
        SimRun {
            report: s.report,
            trace: s.lowered.trace,
            timeline: s.timeline,
            layout: s.lowered.layout,
        }
    }
}

/// Why `sim --trace DIR` did not run: the directory could not be listed, or the replay
/// failed (the error, and its message with the directory's name).
enum TraceDirFailure {
    Unreadable(String),
    Sim(venusc::simulate::SimError, String),
}

/// `sim --trace DIR`: reads the directory's file names (the files themselves are read by
/// name as the replay needs them) and replays them on `sc`'s cluster.
fn simulate_trace_dir(sc: &venusc::plan::Scenario, dir: &Path) -> Result<SimRun, TraceDirFailure> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| {
            TraceDirFailure::Unreadable(format!("cannot read directory `{}`: {e}", dir.display()))
        })?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut read = |name: &str| std::fs::read(dir.join(name));
    let r = venusc::simulate::replay(sc, &names, &mut read).map_err(|e| {
        let message = match &e {
            venusc::simulate::SimError::Read(e) => format!("{}: {e}", dir.display()),
            venusc::simulate::SimError::Lower(venusc::lower::LowerError::Network(e)) => {
                e.to_string()
            }
            venusc::simulate::SimError::Lower(venusc::lower::LowerError::Layout(e)) => {
                e.to_string()
            }
            e => e.to_string(),
        };
        TraceDirFailure::Sim(e, message)
    })?;
    Ok(SimRun {
        report: r.report,
        trace: r.trace,
        timeline: r.timeline,
        layout: r.layout,
    })
}

fn validate(args: &ValidateArgs) -> ExitCode {
    let text = match std::fs::read_to_string(&args.table) {
        Ok(t) => t,
        Err(e) => return usage_error(format!("cannot read `{}`: {e}", args.table.display())),
    };
    let v = match venusc::published::run(&text) {
        Ok(v) => v,
        Err(e) => return usage_error(format!("`{}`: {e}", args.table.display())),
    };
    if let Some(dir) = &args.emit_scenarios {
        if let Err(e) = std::fs::create_dir_all(dir) {
            return usage_error(format!("cannot create `{}`: {e}", dir.display()));
        }
        for r in &v.rows {
            if let Ok(built) = venusc::published::scenario::build(&r.row) {
                let path = dir.join(format!("{}.venus", r.row.id));
                if let Err(e) = std::fs::write(&path, built.venus) {
                    return usage_error(format!("cannot write `{}`: {e}", path.display()));
                }
            }
        }
    }
    print!("{}", v.markdown());
    let _ = std::io::stdout().flush();
    ExitCode::SUCCESS
}

/// `venusc fmt`: 0 when every file is (or now is) formatted, 1 when `--check` finds files to
/// change or a file has syntax errors (those are rendered and the file is left alone), 2 on
/// I/O errors.
fn fmt(args: &FmtArgs, color: bool) -> ExitCode {
    let files = match expand_paths(&args.paths) {
        Ok(f) => f,
        Err(e) => return usage_error(e),
    };
    let mut failed = false;
    for path in &files {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) => return usage_error(format!("cannot read `{}`: {e}", path.display())),
        };
        let (text, decode) = venusc::syntax::decode(&bytes, venusc::diag::FileId(0));
        let result = if decode.is_empty() {
            venusc::fmt::format(&text)
        } else {
            Err(venusc::fmt::FormatError::Syntax(decode))
        };
        match result {
            Ok(formatted) if formatted == text => {}
            Ok(formatted) => {
                if args.check {
                    println!("{}", path.display());
                    failed = true;
                } else if let Err(e) = std::fs::write(path, formatted) {
                    return usage_error(format!("cannot write `{}`: {e}", path.display()));
                }
            }
            Err(venusc::fmt::FormatError::Syntax(diagnostics)) => {
                let mut files = render::SourceFiles::new();
                files.add(
                    venusc::diag::FileId(0),
                    path.display().to_string(),
                    text.clone(),
                );
                eprint!("{}", render::human(&diagnostics, &files, color));
                eprintln!(
                    "error: `{}` not formatted: it has syntax errors",
                    path.display()
                );
                failed = true;
            }
            Err(e) => {
                eprintln!("error: `{}` not formatted: {e}", path.display());
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// `venusc lsp`: the language server on stdio until the client says `exit`.
fn lsp() -> ExitCode {
    match venusc::lsp::run_stdio() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: language server: {e}");
            ExitCode::from(1)
        }
    }
}

/// indicatif on stderr: a bar per phase (checking, simulating).
struct SweepBar(indicatif::ProgressBar);

impl venusc::sweep::Progress for SweepBar {
    fn start(&self, phase: &str, total: u64) {
        self.0.set_length(total);
        self.0.set_position(0);
        self.0.set_message(phase.to_string());
    }
    fn advance(&self, n: u64) {
        self.0.inc(n);
    }
    fn finish(&self) {
        self.0.finish_and_clear();
    }
}

fn sweep_bar() -> Option<SweepBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let style = indicatif::ProgressStyle::with_template(
        "{msg:>10} [{bar:40}] {pos}/{len} {per_sec} eta {eta}",
    )
    .map(|s| s.progress_chars("=> "))
    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
    let bar =
        indicatif::ProgressBar::with_draw_target(Some(0), indicatif::ProgressDrawTarget::stderr());
    bar.set_style(style);
    Some(SweepBar(bar))
}

fn sweep(args: &SweepArgs, color: bool) -> ExitCode {
    use venusc::sweep::{self, output};
    let options = sweep::SweepOptions {
        scenario: args.scenario.clone(),
        auto: args.auto.then_some(sweep::AutoOptions {
            allow_cross_node_tp: args.allow_cross_node_tp,
        }),
    };
    let shard = match args.shard.as_deref().map(sweep::Shard::parse).transpose() {
        Ok(s) => s,
        Err(e) => return usage_error(e),
    };
    // The sweep file: needed to run, and to render `--emit-best` after a merge.
    let mut prepared = match &args.file {
        Some(file) => match prepare_sweep(file, &options, color) {
            Ok(p) => Some(p),
            Err(code) => return code,
        },
        None => None,
    };
    let outcome = if args.merge.is_empty() {
        let Some((session, sw)) = prepared.as_mut() else {
            return usage_error("give the sweep file, or `--merge` shard outputs");
        };
        let mine = shard.map_or(sw.space.len(), |s| {
            sw.space.len() / s.count + u64::from(sw.space.len() % s.count >= s.index)
        });
        if mine >= LARGE_SWEEP {
            // Measured: ~10,000 candidates checked a second on 2 cores (release build).
            let seconds = mine / CHECKED_PER_SECOND;
            eprintln!(
                "note: {} candidates to check, about {} s before simulating; `--shard i/n` \
                 splits them over machines",
                output::thousands(mine),
                output::thousands(seconds.max(1))
            );
        }
        let bar = sweep_bar();
        let silent = sweep::Silent;
        let progress: &dyn sweep::Progress = match &bar {
            Some(b) => b,
            None => &silent,
        };
        let started = std::time::Instant::now();
        let (outcome, timing) = sweep::run(session, sw, shard, progress);
        eprintln!(
            "checked {} candidates in {:.2} s; simulated {} plans in {:.2} s ({:.0} plans/s on {} threads); {:.2} s in all",
            output::thousands(outcome.candidates),
            timing.check.0,
            output::thousands(timing.simulated),
            timing.simulate.0,
            timing.plans_per_second(),
            rayon::current_num_threads(),
            started.elapsed().as_secs_f64()
        );
        outcome
    } else {
        let mut parts = Vec::new();
        for path in &args.merge {
            let text = match std::fs::read_to_string(path) {
                Ok(t) => t,
                Err(e) => return usage_error(format!("cannot read `{}`: {e}", path.display())),
            };
            match output::read_json(&text) {
                Ok(o) => parts.push(o),
                Err(e) => return usage_error(format!("`{}`: {e}", path.display())),
            }
        }
        if let Some((_, sw)) = &prepared {
            let other = parts.iter().any(|p| {
                p.shard
                    .as_ref()
                    .is_some_and(|s| s.fingerprint != sw.fingerprint)
            });
            if other {
                return usage_error(format!(
                    "the shard outputs come from another sweep than `{}` with these options",
                    sw.path.display()
                ));
            }
        }
        let merged = match sweep::merge(parts) {
            Ok(o) => o,
            Err(e) => return coded_usage_error(Code::E0604, e),
        };
        if let Some((session, sw)) = prepared.as_mut() {
            if let Err(e) = sweep::verify_plans(session, sw, &merged) {
                return coded_usage_error(Code::E0604, e);
            }
        }
        merged
    };
    let out = match args.format {
        SweepFormat::Text => output::text(&outcome, args.top),
        SweepFormat::Csv => output::csv(&outcome),
        SweepFormat::Json => output::json(&outcome),
    };
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    if let Some(path) = &args.emit_best {
        let Some((_, sw)) = &prepared else {
            return usage_error("`--emit-best` after `--merge` needs the sweep file too: `venusc sweep FILE --merge ...`");
        };
        if let Err(e) = emit_best(&outcome, sw, path) {
            return e;
        }
    }
    // No valid plan in the whole sweep is bad input; a shard may well have none.
    if outcome.results.is_empty() && outcome.shard.is_none() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Loads the sweep file and builds its space; renders the file's errors on failure.
/// A sweep this large gets a note with its size and the time checking it takes.
const LARGE_SWEEP: u64 = 100_000;

/// Candidates `sweep` checks a second: 600,000 in 56 s on 2 shared cores (reliability report,
/// release build), rounded to 10,000.
const CHECKED_PER_SECOND: u64 = 10_000;

fn prepare_sweep(
    file: &Path,
    options: &venusc::sweep::SweepOptions,
    color: bool,
) -> Result<(venusc::Session, venusc::sweep::Sweep), ExitCode> {
    let bytes = std::fs::read(file)
        .map_err(|e| usage_error(format!("cannot read `{}`: {e}", file.display())))?;
    let mut session = venusc::Session::new();
    let root = session.load(file, &bytes, &mut read_file);
    match venusc::sweep::prepare(&mut session, file, root, options) {
        Ok(sw) => Ok((session, sw)),
        Err(venusc::sweep::PrepareError::Diagnostics(d)) => {
            eprint!("{}", render::human(&d, &session.source_files(), color));
            Err(ExitCode::from(1))
        }
        Err(venusc::sweep::PrepareError::Usage(e)) => Err(usage_error(e)),
    }
}

fn emit_best(
    outcome: &venusc::sweep::Outcome,
    sw: &venusc::sweep::Sweep,
    path: &Path,
) -> Result<(), ExitCode> {
    let Some(best) = outcome.results.first() else {
        eprintln!("error: no plan was simulated, so there is no best plan to write");
        return Err(ExitCode::from(1));
    };
    if let Some(info) = &outcome.shard {
        if info.fingerprint != sw.fingerprint {
            return Err(usage_error(
                "the shard outputs come from another sweep than this file",
            ));
        }
    }
    if best.candidate >= sw.space.len() {
        return Err(usage_error(
            "the shard outputs come from another sweep than this file",
        ));
    }
    let source_dir = sw.path.parent().unwrap_or(Path::new("")).to_path_buf();
    let target_dir = path.parent().unwrap_or(Path::new("")).to_path_buf();
    let same_dir = |a: &Path, b: &Path| {
        let canon = |p: &Path| {
            std::fs::canonicalize(if p.as_os_str().is_empty() {
                Path::new(".")
            } else {
                p
            })
            .ok()
        };
        canon(a).is_some() && canon(a) == canon(b)
    };
    let keep = same_dir(&source_dir, &target_dir);
    // A `use` is relative to its file: from elsewhere, point at the used file itself.
    let use_path = |p: &str| {
        if keep {
            return p.to_string();
        }
        let used = source_dir.join(p);
        std::fs::canonicalize(&used)
            .unwrap_or(used)
            .display()
            .to_string()
    };
    let header = venusc::sweep::output::best_header(
        outcome,
        best,
        &sw.path.display().to_string(),
        &sw.space.describe(best.candidate),
    );
    let text = sw.space.emit(best.candidate, &header, &use_path);
    if let Err(e) = std::fs::write(path, text) {
        return Err(usage_error(format!(
            "cannot write `{}`: {e}",
            path.display()
        )));
    }
    eprintln!("wrote the best plan to `{}`", path.display());
    Ok(())
}

/// `compile --emit perfetto`: simulates the scenario and writes `<name>.perfetto.json`.
fn write_perfetto_file(
    sc: &venusc::plan::Scenario,
    sim: &venusc::simulate::Simulation,
    sink: &mut DirSink,
) -> Result<Vec<String>, venusc::emit::EmitError> {
    use venusc::emit::Sink;
    let name = format!(
        "{}.perfetto.json",
        venusc::emit::venussim::file_stem(&sc.name)
    );
    let opts = venusc::report::perfetto::PerfettoOptions {
        ranks: None,
        layout: Some(&sim.lowered.layout),
    };
    venusc::report::perfetto::write_perfetto(
        sink.file(&name)?,
        &sim.lowered.trace,
        &sim.timeline,
        &opts,
    )?;
    Ok(Vec::new())
}
