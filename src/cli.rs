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
use venusc::files::{self, Failure, Input, Root};
use venusc::syntax::schema;

#[derive(Parser)]
#[command(name = "venusc", version, about = "Compile and simulate Megatron-LM-style training runs", long_about = None)]
struct Cli {
    /// When to colour output.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    color: ColorChoice,
    #[command(flatten)]
    roots: RootArgs,
    #[command(subcommand)]
    command: Command,
}

/// Where `use` may reach (E0109 outside).
#[derive(clap::Args, Clone, Default)]
struct RootArgs {
    /// The project root every `use` must resolve into (default: the directory of the named
    /// file, or the directory named; with several, the deepest one holding them all).
    #[arg(long, global = true, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Let `use` reach files outside the project root.
    #[arg(long, global = true)]
    allow_outside_root: bool,
}

impl RootArgs {
    fn for_inputs(&self, inputs: &[PathBuf]) -> Result<Root, ExitCode> {
        Root::for_inputs(inputs, self.root.as_deref(), self.allow_outside_root)
            .map_err(|f| fail(&f))
    }
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

impl Format {
    /// The diagnostics of `file_count` checked files in this format (`check --format json`'s
    /// document for `Json`).
    fn render(
        self,
        diagnostics: &[Diagnostic],
        files: &render::SourceFiles,
        color: bool,
        file_count: usize,
    ) -> String {
        match self {
            Format::Human => render::human(diagnostics, files, color),
            Format::Json => render::json(diagnostics, files, file_count),
            Format::Github => render::github(diagnostics, files),
        }
    }
}

#[derive(Subcommand)]
enum Command {
    /// Parse, type-check and validate `.venus` files (fast, for CI).
    Check(CheckArgs),
    /// Simulate a scenario and report where the time goes.
    Sim(SimArgs),
    /// Simulate a scenario and write a self-contained HTML report: summary, per-stage
    /// timeline, memory per stage, phases, warnings.
    Report(ReportArgs),
    /// Simulate two scenarios and show the plan keys that differ and every report figure side
    /// by side with its change.
    Diff(DiffArgs),
    /// Draw the pipeline schedule: each pipeline rank's ops on a time axis.
    Schedule(ScheduleArgs),
    /// Lower a scenario and write what it compiles to (`--emit KIND`).
    Compile(CompileArgs),
    /// Convert a VenusSim `llm-sim-config.json`, a HuggingFace `config.json` or (`import
    /// megatron`) a Megatron-LM launch script into a `.venus` file.
    Import(ImportArgs),
    /// Explore a design space: check, simulate and rank every candidate plan.
    Sweep(SweepArgs),
    /// Compare predictions with measured training runs (a published-runs table).
    Validate(ValidateArgs),
    /// Fit a scenario's cluster and GPU to your own measurements (nccl-tests logs, a GEMM
    /// table) and write the calibrated definitions as a `.venus` library.
    Calibrate(CalibrateArgs),
    /// Simulate every scenario that states `expect` bounds and fail on any bound it misses
    /// (E0501): the `expect` blocks of a repository as a test suite.
    Test(TestArgs),
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
struct CalibrateArgs {
    #[command(flatten)]
    input: ScenarioArgs,
    /// An nccl-tests log (`all_reduce_perf`, `all_gather_perf`, `reduce_scatter_perf`,
    /// `alltoall_perf`) and the cluster dim it measured: `DIM=FILE`; repeatable, fitted
    /// innermost dim first.
    #[arg(long, value_name = "DIM=FILE")]
    nccl: Vec<String>,
    /// A table of measured GEMMs (TSV or CSV with `m n k dtype tflops` columns); its rows of
    /// the plan's precision are fitted.
    #[arg(long, value_name = "FILE")]
    gemm: Option<PathBuf>,
    /// A table of your own measured training runs, in the published-runs format (RUNS.md): its
    /// speed rows on GPUs of the scenario's arch are simulated and the GEMM curve and a factor
    /// on the network's efficiency are fitted to them; each row's residual is in the header.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["gemm", "nccl"])]
    runs: Option<PathBuf>,
    /// With `--runs`: fit the GPU only, the cluster's dims stay as written.
    #[arg(long, requires = "runs")]
    keep_network: bool,
    /// With `--runs`: fit the GEMM asymptote (`gemm_efficiency`) only, the GEMM curve's
    /// `gemm_half_dim` stays the arch's (for a table of one or two configurations).
    #[arg(long, requires = "runs")]
    keep_gemm_shape: bool,
    /// With `--runs`: fit on the even rows only and report the odd ones as held out.
    #[arg(long, requires = "runs")]
    hold_out_odd: bool,
    /// Write the library here instead of stdout.
    #[arg(short, long, value_name = "FILE.venus")]
    output: Option<PathBuf>,
}

#[derive(clap::Args)]
struct ValidateArgs {
    /// The published-runs table (TSV).
    table: PathBuf,
    /// Also write each row's generated scenario as `DIR/<id>.venus`.
    #[arg(long, value_name = "DIR")]
    emit_scenarios: Option<PathBuf>,
    /// `markdown` (the report `docs/validation.md` is) or `json` (RUNS.md's object: every row,
    /// then the time and memory summaries).
    #[arg(long, value_enum, default_value_t = ValidateFormat::Markdown)]
    format: ValidateFormat,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ValidateFormat {
    Markdown,
    Json,
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
struct TestArgs {
    /// Files or directories (searched recursively for `*.venus`).
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// How diagnostics are written (to stderr; the per-scenario results go to stdout).
    #[arg(long, value_enum, default_value_t = Format::Human)]
    format: Format,
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
    /// Silence a warning code (repeatable: `--allow W0001 --allow W0002`).
    #[arg(long, value_name = "CODE")]
    allow: Vec<String>,
    /// Report a warning code as an error (repeatable), so it fails the check.
    #[arg(long, value_name = "CODE")]
    deny: Vec<String>,
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
    /// Training iterations to simulate (overrides the plan's `iterations`); the report is the
    /// last. With `--trace`: the iterations the traces hold (default: counted from their
    /// `~iter~` names); the report is their mean, as VenusSim's.
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
struct ReportArgs {
    /// The `.venus` file.
    file: PathBuf,
    /// The scenario to use when the file has several.
    scenario: Option<String>,
    /// Where to write the HTML file (replaced atomically).
    #[arg(short = 'o', long = "out", value_name = "FILE.html")]
    out: PathBuf,
}

#[derive(clap::Args)]
struct DiffArgs {
    /// The first `.venus` file.
    a: PathBuf,
    /// The second `.venus` file; without it, two scenarios of the first
    /// (`venusc diff FILE --scenario a --scenario b`).
    b: Option<PathBuf>,
    /// The scenario of each side, in order (once for two files applies to both).
    #[arg(long, value_name = "NAME")]
    scenario: Vec<String>,
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    format: ReportFormat,
    /// Also write the diff as one self-contained HTML page (replaced atomically).
    #[arg(short = 'o', long = "out", value_name = "FILE.html")]
    out: Option<PathBuf>,
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
    /// Megatron-LM flags of the model and plan, one per line (stdout, or the file `-o FILE`).
    Megatron,
}

impl Emit {
    /// Kinds that write a directory of files rather than to stdout.
    fn writes_files(self) -> bool {
        !matches!(self, Emit::Schedule | Emit::Groups | Emit::Megatron)
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
    /// With `--emit venussim`: VenusSim's checkout. The config then names the simulator that
    /// `build.sh -t congestion_unaware` builds there and absolute paths, so `llm_sim.py` runs
    /// it from any directory.
    #[arg(long, value_name = "DIR")]
    venussim_root: Option<PathBuf>,
}

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
struct ImportArgs {
    /// VenusSim's `llm-sim-config.json` (its `system.json` and `network.yml` are found from
    /// it) or a HuggingFace `config.json`.
    #[arg(required = true)]
    config: Option<PathBuf>,
    /// Where to write the `.venus` file (stdout when absent).
    #[arg(short = 'o', long = "out")]
    out: Option<PathBuf>,
    #[command(subcommand)]
    format: Option<ImportFormat>,
}

#[derive(Subcommand)]
enum ImportFormat {
    /// A Megatron-LM launch script or flag list (`pretrain_gpt.py` flags) → a scenario.
    Megatron(MegatronImportArgs),
}

#[derive(clap::Args)]
struct MegatronImportArgs {
    /// The launch script or flag list; `-` reads stdin.
    file: PathBuf,
    /// The stdlib cluster the run used (default: `dgx_h100`, with W0013).
    #[arg(long, value_name = "NAME")]
    cluster: Option<String>,
    /// The GPU count, when the script has no torchrun `--nnodes`/`--nproc-per-node`.
    #[arg(long, value_name = "N")]
    gpus: Option<u64>,
    /// Where to write the `.venus` file (stdout when absent).
    #[arg(short = 'o', long = "out")]
    out: Option<PathBuf>,
    /// Silence a warning code (repeatable).
    #[arg(long, value_name = "CODE")]
    allow: Vec<String>,
    /// Report a warning code as an error (repeatable).
    #[arg(long, value_name = "CODE")]
    deny: Vec<String>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SweepFormat {
    Text,
    Csv,
    Json,
}

/// `sweep --objective`: what the ranking orders by.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SweepObjective {
    /// Iteration time, shortest first.
    Time,
    /// Tokens per second per GPU, most first (the time to train a token budget).
    Throughput,
    /// GPU-seconds per token, fewest first (the GPU-hours of a token budget).
    GpuHours,
    /// Model FLOPs utilization, highest first.
    Mfu,
    /// Tokens per second per GPU times goodput (the cluster's failure rates), most first:
    /// the time to train a token budget, interruptions included.
    Goodput,
    /// Time to train the scenario's `train < tokens ... >` budget, shortest first.
    TimeToTrain,
    /// Cost of that budget at the `train` block's `price`, cheapest first.
    Cost,
}

impl SweepObjective {
    fn objective(self) -> venusc::sweep::Objective {
        use venusc::sweep::Objective;
        match self {
            SweepObjective::Time => Objective::Time,
            SweepObjective::Throughput => Objective::Throughput,
            SweepObjective::GpuHours => Objective::GpuHours,
            SweepObjective::Mfu => Objective::Mfu,
            SweepObjective::Goodput => Objective::Goodput,
            SweepObjective::TimeToTrain => Objective::TimeToTrain,
            SweepObjective::Cost => Objective::Cost,
        }
    }
}

/// `--headroom 10%` (or `10`): a percentage from 0 up to (not including) 100, as a share.
fn parse_headroom(text: &str) -> Result<f64, String> {
    let number = text.trim().strip_suffix('%').unwrap_or(text.trim());
    match number.trim().parse::<f64>() {
        Ok(p) if (0.0..100.0).contains(&p) => Ok(p / 100.0),
        _ => Err(format!(
            "`{text}` is not a headroom: write a percentage from 0 to below 100, as `10%`"
        )),
    }
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
    /// Rows of the ranking in the text output; with `--prune`, the plans kept.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    top: u64,
    /// Simulate only the plans that can rank among the `--top` best: a candidate whose lower
    /// bound (its busiest stage's compute) is worse than the K-th best simulated plan is
    /// skipped, best bound first. Lists those K plans, the same as an exhaustive sweep's.
    #[arg(long, conflicts_with = "pareto")]
    prune: bool,
    /// What to rank by: iteration time, tokens/s per GPU, GPU-hours per token, MFU, or the
    /// time or cost of the scenario's `train` budget (ties: peak memory, then candidate
    /// number).
    #[arg(long, value_enum, default_value_t = SweepObjective::Time)]
    objective: SweepObjective,
    /// GPU memory every plan must leave free, e.g. `10%`: a plan whose peak (plus its
    /// `reserve`) exceeds (100% - PCT) of the GPU's memory is pruned under E0401.
    #[arg(long, value_name = "PCT", default_value = "0", value_parser = parse_headroom)]
    headroom: f64,
    /// Print only the Pareto front of the objective vs peak memory.
    #[arg(long, conflicts_with = "shard")]
    pareto: bool,
    /// Write the fastest plan as a complete scenario that `venusc sim` runs.
    #[arg(long, value_name = "FILE.venus")]
    emit_best: Option<PathBuf>,
    /// Also write one self-contained HTML page: the Pareto front of the objective vs peak
    /// memory and the ranking, each point linking to its plan.
    #[arg(long, value_name = "FILE.html")]
    html: Option<PathBuf>,
    /// Write the best plan as Megatron-LM flags (as `compile --emit megatron` writes them).
    #[arg(long, value_name = "FILE.sh")]
    emit_megatron: Option<PathBuf>,
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
    let roots = &cli.roots;
    match cli.command {
        Command::Check(args) => check(
            &args,
            roots,
            use_color(cli.color, std::io::stdout().is_terminal()),
        ),
        Command::Explain { code } => explain(code.as_deref()),
        Command::Sim(args) => sim(&args, roots, color),
        Command::Report(args) => report(&args, roots, color),
        Command::Test(args) => test(&args, roots, color),
        Command::Schedule(args) => schedule(&args, roots, color),
        Command::Diff(args) => diff(&args, roots, color),
        Command::Compile(args) => compile(&args, roots, color),
        Command::Import(args) => match &args.format {
            Some(ImportFormat::Megatron(m)) => import_megatron(m, color),
            None => import(&args),
        },
        Command::Sweep(args) => sweep(&args, roots, color),
        Command::Validate(args) => validate(&args),
        Command::Calibrate(args) => calibrate(&args, roots, color),
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

/// A file that could not be read or written: its coded message on stderr, exit 2.
fn fail(f: &Failure) -> ExitCode {
    fail_with(f, 2)
}

/// A coded failure on stderr with the given exit status.
fn fail_with(f: &Failure, status: u8) -> ExitCode {
    eprintln!("{f}");
    ExitCode::from(status)
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

fn check(args: &CheckArgs, root_args: &RootArgs, color: bool) -> ExitCode {
    let levels = match venusc::diag::Levels::parse(&args.allow, &args.deny) {
        Ok(l) => l,
        Err(e) => return usage_error(e),
    };
    let roots = match files::venus_files(&args.paths) {
        Ok(r) => r,
        Err(f) => return fail(&f),
    };
    let project = match root_args.for_inputs(&args.paths) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let mut session = venusc::Session::new();
    let mut diagnostics: Vec<Diagnostic> = Vec::new();
    let mut memory_tables = String::new();
    // A file that cannot be read is reported and skipped; the others are still checked.
    let mut unreadable = false;
    let mut checked = Vec::new();
    for root in &roots {
        let bytes = match files::read(root, Input::Venus) {
            Ok(b) => b,
            Err(f) => {
                eprintln!("{f}");
                unreadable = true;
                continue;
            }
        };
        let id = session.load(root, &bytes, &mut project.reader());
        checked.push((root, session.check(id)));
    }
    let file_count = checked.len();
    let (paths, mut results): (Vec<&PathBuf>, Vec<venusc::session::Checked>) =
        checked.into_iter().unzip();
    venusc::session::drop_incomplete_leaves_used_elsewhere(&mut results);
    for (root, result) in paths.iter().zip(&results) {
        // A sweep file (lists in plan items) is checked as `venusc sweep` prepares it.
        let id = result.program.root;
        diagnostics.extend(venusc::sweep::check_diagnostics(
            &mut session,
            root,
            id,
            result,
        ));
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
    levels.apply(&mut diagnostics);
    let files = session.source_files();
    let mut out = args.format.render(&diagnostics, &files, color, file_count);
    let (e, w) = render::counts(&diagnostics);
    if args.format == Format::Human && e + w > 0 {
        out.push_str(&summary_line(e, w));
    }
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(memory_tables.as_bytes());
    let _ = stdout.write_all(out.as_bytes());
    if unreadable {
        return ExitCode::from(2);
    }
    exit_for(&diagnostics, args.deny_warnings)
}

/// `venusc test`: every scenario with `expect` bounds is simulated and its bounds checked.
/// stdout: one line per scenario (`--format json`: one JSON document); stderr: the
/// diagnostics (check errors, E0501 failures, warnings of the tested files) in the chosen
/// format. Exit 1 when a file does not check, a simulation fails or a bound is missed.
fn test(args: &TestArgs, root_args: &RootArgs, color: bool) -> ExitCode {
    let roots = match files::venus_files(&args.paths) {
        Ok(r) => r,
        Err(f) => return fail(&f),
    };
    let project = match root_args.for_inputs(&args.paths) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let mut session = venusc::Session::new();
    let mut diagnostics: Vec<Diagnostic> = Vec::new();
    let mut results: Vec<TestResult> = Vec::new();
    let mut failed = false;
    let mut untested = 0usize;
    for root in &roots {
        let bytes = match files::read(root, Input::Venus) {
            Ok(b) => b,
            Err(f) => return fail(&f),
        };
        let id = session.load(root, &bytes, &mut project.reader());
        let checked = session.check(id);
        diagnostics.extend(checked.diagnostics.iter().cloned());
        if checked.has_errors() {
            failed = true;
            results.push(TestResult::not_checked(root));
            continue;
        }
        for sc in &checked.scenarios {
            if sc.expect.is_empty() {
                untested += 1;
                continue;
            }
            let result = match venusc::simulate::simulate(sc, &Default::default()) {
                Ok(sim) => {
                    let misses = venusc::report::check_expect(
                        &sc.expect,
                        &checked.provenance_of(sc).expect,
                        &sim.report,
                    );
                    let r = TestResult::ran(root, sc, &sim.report, misses.len());
                    diagnostics.extend(misses);
                    r
                }
                Err(e) => TestResult::sim_failed(root, sc, e.to_string()),
            };
            failed |= !result.passed();
            results.push(result);
        }
    }
    let mut seen = std::collections::HashSet::new();
    diagnostics.retain(|d| seen.insert(d.clone()));
    let files = session.source_files();
    let diagnostics_text = args.format.render(&diagnostics, &files, color, roots.len());
    let results_text = match args.format {
        Format::Json => TestResult::json(&results, untested),
        Format::Human | Format::Github => TestResult::lines(&results, untested),
    };
    print!("{results_text}");
    eprint!("{diagnostics_text}");
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// One scenario of `venusc test`.
#[derive(serde::Serialize)]
struct TestResult {
    file: String,
    scenario: Option<String>,
    /// `ok`, `failed` (a bound missed), `error` (the simulation failed) or `not checked`.
    status: &'static str,
    iteration_time_ms: Option<f64>,
    missed_bounds: usize,
    error: Option<String>,
}

impl TestResult {
    fn not_checked(file: &Path) -> TestResult {
        TestResult {
            file: file.display().to_string(),
            scenario: None,
            status: "not checked",
            iteration_time_ms: None,
            missed_bounds: 0,
            error: None,
        }
    }

    fn ran(
        file: &Path,
        sc: &venusc::plan::Scenario,
        report: &venusc::report::Report,
        missed: usize,
    ) -> TestResult {
        TestResult {
            file: file.display().to_string(),
            scenario: Some(sc.name.clone()),
            status: if missed == 0 { "ok" } else { "failed" },
            iteration_time_ms: Some(report.iteration_time.0 * 1e3),
            missed_bounds: missed,
            error: None,
        }
    }

    fn sim_failed(file: &Path, sc: &venusc::plan::Scenario, error: String) -> TestResult {
        TestResult {
            file: file.display().to_string(),
            scenario: Some(sc.name.clone()),
            status: "error",
            iteration_time_ms: None,
            missed_bounds: 0,
            error: Some(error),
        }
    }

    fn passed(&self) -> bool {
        self.status == "ok"
    }

    /// `test runs/a.venus `a` ... ok (1234.567 ms)`, then the totals.
    fn lines(results: &[TestResult], untested: usize) -> String {
        let mut out = String::new();
        for r in results {
            let what = match &r.scenario {
                Some(s) => format!("{} `{s}`", r.file),
                None => r.file.clone(),
            };
            let detail = match (r.status, r.iteration_time_ms, &r.error) {
                ("ok", Some(ms), _) => format!("ok ({ms:.3} ms)"),
                ("failed", Some(ms), _) => format!(
                    "FAILED: {} missed ({ms:.3} ms)",
                    venus_base::base::math::count_of(r.missed_bounds as u64, "bound")
                ),
                (_, _, Some(e)) => format!("ERROR: {e}"),
                _ => "ERROR: the file does not check".to_string(),
            };
            out.push_str(&format!("test {what} ... {detail}\n"));
        }
        let passed = results.iter().filter(|r| r.passed()).count() as u64;
        out.push_str(&format!(
            "{} with `expect`: {passed} passed, {} failed; {} without `expect` not run\n",
            venus_base::base::math::count_of(results.len() as u64, "scenario"),
            results.len() as u64 - passed,
            untested
        ));
        out
    }

    fn json(results: &[TestResult], untested: usize) -> String {
        let passed = results.iter().filter(|r| r.passed()).count();
        let doc = serde_json::json!({
            "tested": results.len(),
            "passed": passed,
            "failed": results.len() - passed,
            "untested": untested,
            "results": results,
        });
        let mut out = serde_json::to_string_pretty(&doc).unwrap_or_default();
        out.push('\n');
        out
    }
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

/// A selected scenario and the sources its diagnostics point into.
struct Loaded {
    scenario: venusc::plan::Scenario,
    provenance: venusc::plan::Provenance,
    files: render::SourceFiles,
    /// The warnings of a JSON-styled load, for the command to write in its one diagnostics
    /// document (a human-styled load has printed them already).
    warnings: Vec<Diagnostic>,
}

/// How a command writes its diagnostics to stderr: rendered for people (with colour or not),
/// or as the JSON document of `check --format json` when the command's data is JSON too.
#[derive(Clone, Copy)]
enum DiagStyle {
    Human { color: bool },
    Json,
}

impl DiagStyle {
    fn render(self, diagnostics: &[Diagnostic], files: &render::SourceFiles) -> String {
        match self {
            DiagStyle::Human { color } => Format::Human.render(diagnostics, files, color, 1),
            DiagStyle::Json => Format::Json.render(diagnostics, files, false, 1),
        }
    }
}

/// Loads and checks a file and selects its scenario; on failure prints the diagnostics and
/// returns the exit code to use.
fn load_scenario(args: &ScenarioArgs, roots: &RootArgs, color: bool) -> Result<Loaded, ExitCode> {
    load_scenario_styled(args, roots, DiagStyle::Human { color })
}

/// [`load_scenario`], writing its diagnostics in `style`; a JSON-styled load that succeeds
/// leaves its warnings in [`Loaded::warnings`].
fn load_scenario_styled(
    args: &ScenarioArgs,
    roots: &RootArgs,
    style: DiagStyle,
) -> Result<Loaded, ExitCode> {
    let bytes = files::read(&args.file, Input::Venus).map_err(|f| fail(&f))?;
    let project = roots.for_inputs(std::slice::from_ref(&args.file))?;
    let mut session = venusc::Session::new();
    let root = session.load(&args.file, &bytes, &mut project.reader());
    let selected = venusc::api::select(&session, root, args.scenario.as_deref());
    let files = session.source_files();
    let defer = selected.is_ok() && matches!(style, DiagStyle::Json);
    let diagnostics = match &selected {
        Ok(s) => &s.warnings,
        Err(d) => d,
    };
    if !diagnostics.is_empty() && !defer {
        eprint!("{}", style.render(diagnostics, &files));
    }
    match selected {
        Ok(s) => Ok(Loaded {
            scenario: s.scenario,
            provenance: s.provenance,
            files,
            warnings: if defer { s.warnings } else { Vec::new() },
        }),
        Err(_) => Err(ExitCode::from(1)),
    }
}

fn schedule_ir(sc: &venusc::plan::Scenario) -> Result<venusc::schedule::ScheduleIr, ExitCode> {
    venusc::schedule::ScheduleIr::build(venusc::plan::derive::pipeline_shape(sc))
        .map_err(|e| usage_error(format!("cannot build the schedule of `{}`: {e}", sc.name)))
}

/// The widest `schedule` picture: wider than any terminal, and small enough that the
/// picture's rows (pp × width cells) stay a few megabytes.
const MAX_SCHEDULE_WIDTH: usize = 10_000;

fn schedule(args: &ScheduleArgs, roots: &RootArgs, color: bool) -> ExitCode {
    if !(1..=MAX_SCHEDULE_WIDTH).contains(&args.width) {
        return usage_error(format!(
            "`--width {}` is out of range: the picture is 1 to {MAX_SCHEDULE_WIDTH} columns wide",
            args.width
        ));
    }
    let sc = match load_scenario(&args.input, roots, color) {
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

fn compile(args: &CompileArgs, roots: &RootArgs, color: bool) -> ExitCode {
    let loaded = match load_scenario(&args.input, roots, color) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    let sc = &loaded.scenario;
    if args.emit == Emit::Megatron {
        let text = venusc::emit::emit_megatron(sc);
        return match &args.out {
            Some(path) => {
                let written = files::refuse_input(path, &[&args.input.file])
                    .and_then(|()| files::write_atomic(path, text.as_bytes()));
                match written {
                    Ok(()) => {
                        eprintln!("wrote `{}`", path.display());
                        ExitCode::SUCCESS
                    }
                    Err(f) => fail(&f),
                }
            }
            None => {
                print!("{text}");
                ExitCode::SUCCESS
            }
        };
    }
    if args.emit.writes_files() {
        let Some(dir) = &args.out else {
            return usage_error(
                "this `--emit` kind writes several files: give a directory with `-o DIR`",
            );
        };
        let paths = match venussim_paths(args, dir) {
            Ok(paths) => paths,
            Err(code) => return code,
        };
        return emit_files(&loaded, args.emit, dir, &args.input.file, &paths, color);
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

/// A directory on disk as an emit sink. Each file is written atomically: it is renamed into
/// place when the next one starts (or at [`DirSink::commit`]), so one file is open at a time
/// and a failure leaves no half-written file.
struct DirSink {
    root: PathBuf,
    written: usize,
    /// The scenario file: never overwritten (E0705).
    input: PathBuf,
    open: Option<files::AtomicFile>,
}

impl DirSink {
    /// Renames the file written last into place.
    fn commit(&mut self) -> Result<(), Failure> {
        match self.open.take() {
            Some(f) => f.commit(),
            None => Ok(()),
        }
    }
}

impl venusc::emit::Sink for DirSink {
    fn file(&mut self, rel_path: &str) -> std::io::Result<Box<dyn Write + '_>> {
        let io = |f: Failure| std::io::Error::other(f.to_string());
        self.commit().map_err(io)?;
        let path = self.root.join(rel_path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        files::refuse_input(&path, &[&self.input]).map_err(io)?;
        let file = files::AtomicFile::create(&path).map_err(io)?;
        self.written += 1;
        Ok(Box::new(self.open.insert(file)))
    }
}

/// The paths `--emit venussim` writes: relative, or absolute under `--venussim-root`. The
/// root must hold VenusSim's `trace-generator/llm_sim.py`; the output directory is created
/// here so that its absolute form is known.
fn venussim_paths(
    args: &CompileArgs,
    dir: &Path,
) -> Result<venusc::emit::venussim::VenusSimPaths, ExitCode> {
    let Some(root) = &args.venussim_root else {
        return Ok(Default::default());
    };
    if args.emit != Emit::Venussim {
        return Err(usage_error(
            "`--venussim-root` only applies to `--emit venussim`: drop it or emit `venussim`",
        ));
    }
    let absolute = |p: &Path| std::fs::canonicalize(p).map(|p| p.display().to_string());
    let root = match absolute(root) {
        Ok(r) if Path::new(&r).join("trace-generator/llm_sim.py").is_file() => r,
        _ => {
            return Err(usage_error(format!(
                "`--venussim-root {}` holds no `trace-generator/llm_sim.py`: give the directory of VenusSim's checkout",
                root.display()
            )))
        }
    };
    let run_dir = std::fs::create_dir_all(dir)
        .and_then(|()| absolute(dir))
        .map_err(|e| usage_error(format!("cannot create `{}`: {e}", dir.display())))?;
    Ok(venusc::emit::venussim::VenusSimPaths {
        venussim_root: Some(root),
        run_dir: Some(run_dir),
    })
}

fn emit_files(
    loaded: &Loaded,
    kind: Emit,
    dir: &Path,
    input: &Path,
    paths: &venusc::emit::venussim::VenusSimPaths,
    color: bool,
) -> ExitCode {
    use venusc::emit;
    let sc = &loaded.scenario;
    // The Perfetto export simulates first: a plan over the trace budget fails here, coded.
    let sim = match kind {
        Emit::Perfetto => {
            let opts = venusc::simulate::SimOptions::default();
            match venusc::simulate::simulate(sc, &opts) {
                Ok(sim) => Some(sim),
                Err(e) => {
                    let d = e.diagnostic(sc, &loaded.provenance, &opts);
                    eprint!("{}", render::human(&[d], &loaded.files, color));
                    return ExitCode::from(1);
                }
            }
        }
        _ => None,
    };
    let mut sink = DirSink {
        root: dir.to_path_buf(),
        written: 0,
        input: input.to_path_buf(),
        open: None,
    };
    let result = match kind {
        Emit::SimplifiedTrace => emit::write_simplified_trace(sc, &mut sink),
        Emit::TemplateTrace => emit::write_template_trace(sc, &mut sink),
        Emit::Venussim => emit::venussim::write_venussim_at(sc, paths, &mut sink),
        Emit::AstraSim => emit::write_astra_sim(sc, &mut sink),
        Emit::Perfetto => match &sim {
            Some(sim) => write_perfetto_file(sc, sim, &mut sink),
            None => unreachable!("simulated above"),
        },
        Emit::Schedule | Emit::Groups | Emit::Megatron => unreachable!("printed to stdout"),
    };
    let result = result.and_then(|w| {
        sink.commit()
            .map(|()| w)
            .map_err(|f| venusc::emit::EmitError::Io(std::io::Error::other(f.to_string())))
    });
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
    let Some(config_path) = &args.config else {
        return usage_error("name the config to import: `venusc import FILE`");
    };
    let config = config_path.display().to_string();
    // The config names `system.json` and `network.yml`: read through the same policy.
    let mut read = |p: &str| {
        let path = Path::new(p);
        // A missing file keeps its own error (the importer tries other places for it).
        std::fs::metadata(path)?;
        files::read(path, Input::Config)
            .map_err(|f| std::io::Error::other(format!("{} ({})", f.message, f.code)))
    };
    // A HuggingFace `config.json` becomes a `model` block; anything else is read as
    // VenusSim's `llm-sim-config.json`.
    let hf = files::read(config_path, Input::Config)
        .ok()
        .filter(|b| venusc::emit::is_hf_config(b));
    let imported = match hf {
        Some(bytes) => {
            venusc::emit::import_hf_config(&config, &files::model_name(config_path), &bytes)
        }
        None => venusc::emit::import_venussim(&config, &mut read),
    };
    let imported = match imported {
        Ok(i) => i,
        Err(e) if e.kind == venusc::emit::ImportErrorKind::Unreadable => {
            return fail(&Failure {
                code: Code::E0703,
                message: e.to_string(),
                help: format!(
                    "check the path `{config}`, and that its `system` and `network` name \
                     regular files (tried as written, then from the config's directory)"
                ),
            });
        }
        Err(e) => {
            if e.kind == venusc::emit::ImportErrorKind::Unrepresentable {
                eprintln!("error[{}]: {e}", Code::E0605);
            } else {
                eprintln!(
                    "error[{}]: {e}\n  = help: fix that field of `{}`, or export the config again",
                    Code::E0607,
                    e.file
                );
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
            let written = files::refuse_input(path, &[config_path])
                .and_then(|()| files::write_atomic(path, imported.venus.as_bytes()));
            if let Err(f) = written {
                return fail(&f);
            }
            eprintln!("wrote `{}`", path.display());
        }
        None => print!("{}", imported.venus),
    }
    ExitCode::SUCCESS
}

/// `venusc import megatron FILE|-`: the script's diagnostics are labelled in the script; the
/// `.venus` file it gives is checked like any other before it is written, so an unknown
/// `--cluster` or a plan the checker rejects is reported against the written text.
fn import_megatron(args: &MegatronImportArgs, color: bool) -> ExitCode {
    let levels = match venusc::diag::Levels::parse(&args.allow, &args.deny) {
        Ok(l) => l,
        Err(e) => return usage_error(e),
    };
    let stdin = args.file.as_os_str() == "-";
    let bytes = if stdin {
        match read_stdin(Input::Config.cap()) {
            Ok(b) => b,
            Err(f) => return fail(&f),
        }
    } else {
        match files::read(&args.file, Input::Config) {
            Ok(b) => b,
            Err(f) => return fail(&f),
        }
    };
    let source = if stdin {
        "<stdin>".to_string()
    } else {
        args.file.display().to_string()
    };
    let file = venusc::diag::FileId(0);
    let (text, decode_error) = venusc::api::script_text(&bytes, file);
    let mut sources = render::SourceFiles::new();
    sources.add(file, source.clone(), text.clone());
    if let Some(d) = decode_error {
        eprint!("{}", render::human(&[d], &sources, color));
        return ExitCode::from(1);
    }
    let name = if stdin {
        "megatron".to_string()
    } else {
        files::model_name(&args.file)
    };
    let opts = venusc::emit::MegatronOptions {
        file,
        name,
        source,
        cluster: args.cluster.clone(),
        gpus: args.gpus,
    };
    let imported = match venusc::emit::import_megatron(&text, &opts) {
        Ok(i) => i,
        Err(errors) => {
            eprint!("{}", render::human(&errors, &sources, color));
            return ExitCode::from(1);
        }
    };
    let mut warnings = imported.warnings.clone();
    levels.apply(&mut warnings);
    if !warnings.is_empty() {
        eprint!("{}", render::human(&warnings, &sources, color));
    }
    let denied = warnings.iter().any(Diagnostic::is_error);
    // The written file, checked as `venusc check` would.
    let out_path = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}.venus", opts.name)));
    let mut session = venusc::Session::new();
    let dir = out_path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let root = match Root::at(dir, false) {
        Ok(r) => r,
        Err(f) => return fail(&f),
    };
    let id = session.load(&out_path, imported.venus.as_bytes(), &mut root.reader());
    let checked = session.check(id);
    let mut check_diags = checked.diagnostics.clone();
    levels.apply(&mut check_diags);
    if !check_diags.is_empty() {
        eprint!(
            "{}",
            render::human(&check_diags, &session.source_files(), color)
        );
    }
    let bad = denied || check_diags.iter().any(Diagnostic::is_error);
    match &args.out {
        Some(path) => {
            let mut inputs: Vec<&Path> = Vec::new();
            if !stdin {
                inputs.push(&args.file);
            }
            let written = files::refuse_input(path, &inputs)
                .and_then(|()| files::write_atomic(path, imported.venus.as_bytes()));
            if let Err(f) = written {
                return fail(&f);
            }
            eprintln!("wrote `{}`", path.display());
        }
        None => print!("{}", imported.venus),
    }
    ExitCode::from(u8::from(bad))
}

/// Stdin, at most `cap` bytes (E0702 above it).
fn read_stdin(cap: u64) -> Result<Vec<u8>, Failure> {
    use std::io::Read;
    let mut bytes = Vec::new();
    let read = std::io::stdin()
        .lock()
        .take(cap.saturating_add(1))
        .read_to_end(&mut bytes);
    if let Err(e) = read {
        return Err(Failure {
            code: Code::E0703,
            message: format!("cannot read stdin: {e}"),
            help: "pipe the launch script into `venusc import megatron -`, or name the file".into(),
        });
    }
    if bytes.len() as u64 > cap {
        return Err(Failure {
            code: Code::E0702,
            message: format!("stdin is larger than {cap} bytes, the cap of a launch script"),
            help: "give the launch script itself, not a log or a binary".into(),
        });
    }
    Ok(bytes)
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

fn sim(args: &SimArgs, roots: &RootArgs, color: bool) -> ExitCode {
    let ranks = match args.timeline_ranks.as_deref().map(parse_ranks).transpose() {
        Ok(r) => r.flatten(),
        Err(e) => return usage_error(e),
    };
    if args.iterations == Some(0) {
        return usage_error("`--iterations` must be at least 1");
    }
    if let Some(path) = &args.timeline {
        if let Err(f) = files::refuse_input(path, &[&args.input.file]) {
            return fail(&f);
        }
    }
    // Diagnostics go to stderr in the report's format: JSON beside a JSON report.
    let style = match args.format {
        ReportFormat::Json => DiagStyle::Json,
        ReportFormat::Text => DiagStyle::Human { color },
    };
    let (sc, at, files, mut diagnostics) = match load_scenario_styled(&args.input, roots, style) {
        Ok(l) => (l.scenario, l.provenance, l.files, l.warnings),
        Err(code) => return code,
    };
    let opts = venusc::simulate::SimOptions {
        all_ranks: args.all_ranks,
        iterations: args.iterations,
    };
    // A failure is a coded diagnostic at the plan; a trace directory's own is a coded failure.
    let failure = |e: venusc::simulate::SimError| e.diagnostic(&sc, &at, &opts);
    let result = match &args.trace {
        Some(dir) => {
            simulate_trace_dir(&sc, dir, args.iterations.map(u64::from)).map_err(|f| match f {
                RunError::Sim(e) => Ok(failure(e)),
                RunError::Coded(f) => Err(format!("{f}\n")),
            })
        }
        None => venusc::simulate::simulate(&sc, &opts)
            .map(SimRun::from)
            .map_err(|e| Ok(failure(e))),
    };
    let sim = match result {
        Ok(s) => s,
        Err(Ok(d)) => {
            diagnostics.push(d);
            eprint!("{}", style.render(&diagnostics, &files));
            return ExitCode::from(1);
        }
        Err(Err(plain)) => {
            if !diagnostics.is_empty() {
                eprint!("{}", style.render(&diagnostics, &files));
            }
            eprint!("{plain}");
            return ExitCode::from(1);
        }
    };
    if args.timeline.is_some() {
        if let Err(code) = timeline_fits(&sim, ranks.as_deref(), args.all_ranks) {
            return code;
        }
    }
    let report = venusc::api::finish_report(&sim.report, args.deterministic, &diagnostics, &files);
    match args.format {
        ReportFormat::Text => print!("{}", venusc::report::text(&report)),
        ReportFormat::Json => print!("{}", venusc::report::json(&report)),
    }
    if let Some(path) = &args.timeline {
        let activations = venusc::report::perfetto::activation_bytes_per_microbatch(&sc.memory);
        let opts = venusc::report::perfetto::PerfettoOptions {
            ranks: ranks.as_deref(),
            layout: Some(&sim.layout),
            activation_bytes: Some(&activations),
        };
        match write_timeline(path, &sim, &opts) {
            Ok(n) => eprintln!(
                "wrote {n} slices to `{}` (open it in ui.perfetto.dev)",
                path.display()
            ),
            Err(f) => return fail(&f),
        }
    }
    let failed = venusc::report::check_expect(&sc.expect, &at.expect, &report);
    let code = if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    };
    diagnostics.extend(failed);
    if !diagnostics.is_empty() {
        eprint!("{}", style.render(&diagnostics, &files));
    }
    code
}

/// `report FILE [SCENARIO] -o FILE.html`: simulates the scenario and writes the HTML report
/// atomically. Warnings go to stderr as `sim` prints them, and into the page.
fn report(args: &ReportArgs, roots: &RootArgs, color: bool) -> ExitCode {
    let input = ScenarioArgs {
        file: args.file.clone(),
        scenario: args.scenario.clone(),
    };
    if let Err(f) = files::refuse_input(&args.out, &[&args.file]) {
        return fail(&f);
    }
    // A JSON-styled load keeps the warnings for the page; they are printed for people here.
    let loaded = match load_scenario_styled(&input, roots, DiagStyle::Json) {
        Ok(l) => l,
        Err(code) => return code,
    };
    let human = DiagStyle::Human { color };
    if !loaded.warnings.is_empty() {
        eprint!("{}", human.render(&loaded.warnings, &loaded.files));
    }
    let (sc, at) = (&loaded.scenario, &loaded.provenance);
    let opts = venusc::simulate::SimOptions::default();
    let sim = match venusc::simulate::simulate(sc, &opts) {
        Ok(s) => s,
        Err(e) => {
            let d = e.diagnostic(sc, at, &opts);
            eprint!("{}", human.render(&[d], &loaded.files));
            return ExitCode::from(1);
        }
    };
    let report = sim
        .report
        .clone()
        .deterministic()
        .with_warnings(render::locate(&loaded.warnings, &loaded.files));
    let page = venusc::report::html(&venusc::report::html::HtmlInput {
        scenario: sc,
        report: &report,
        trace: &sim.lowered.trace,
        timeline: &sim.timeline,
        layout: &sim.lowered.layout,
    });
    match files::write_atomic(&args.out, page.as_bytes()) {
        Ok(()) => {
            eprintln!(
                "wrote the report of `{}` to `{}` ({} KB)",
                sc.name,
                args.out.display(),
                page.len().div_ceil(1000)
            );
            ExitCode::SUCCESS
        }
        Err(f) => fail(&f),
    }
}

/// The two sides of `venusc diff`: (file, scenario) each, or why the arguments name no pair.
fn diff_sides(args: &DiffArgs) -> Result<[ScenarioArgs; 2], String> {
    let side = |file: &PathBuf, scenario: Option<&String>| ScenarioArgs {
        file: file.clone(),
        scenario: scenario.cloned(),
    };
    let s = &args.scenario;
    match (&args.b, s.len()) {
        (Some(b), 0 | 1) => Ok([side(&args.a, s.first()), side(b, s.first())]),
        (Some(b), 2) => Ok([side(&args.a, s.first()), side(b, s.get(1))]),
        (None, 2) => Ok([side(&args.a, s.first()), side(&args.a, s.get(1))]),
        (Some(_), n) => Err(format!(
            "`diff` of two files takes one `--scenario` for both or one per file, not {n}"
        )),
        (None, n) => Err(format!(
            "`diff` of one file needs two scenarios, got {n} `--scenario`: write `venusc diff {} --scenario A --scenario B`, or give a second file",
            args.a.display()
        )),
    }
}

/// One side of `venusc diff`: the loaded scenario's deterministic report; a failure is
/// printed as `sim` prints it.
fn simulated_report(loaded: &Loaded, color: bool) -> Result<venusc::report::Report, ExitCode> {
    let (sc, at) = (&loaded.scenario, &loaded.provenance);
    let opts = venusc::simulate::SimOptions::default();
    match venusc::simulate::simulate(sc, &opts) {
        Ok(sim) => Ok(sim.report.deterministic()),
        Err(e) => {
            let d = e.diagnostic(sc, at, &opts);
            eprint!("{}", DiagStyle::Human { color }.render(&[d], &loaded.files));
            Err(ExitCode::from(1))
        }
    }
}

fn diff(args: &DiffArgs, roots: &RootArgs, color: bool) -> ExitCode {
    let [a, b] = match diff_sides(args) {
        Ok(sides) => sides,
        Err(e) => return usage_error(e),
    };
    if let Some(out) = &args.out {
        let inputs: Vec<&Path> = [&args.a]
            .into_iter()
            .chain(&args.b)
            .map(PathBuf::as_path)
            .collect();
        if let Err(f) = files::refuse_input(out, &inputs) {
            return fail(&f);
        }
    }
    // Both sides are checked before either is simulated: bad input fails fast.
    let (la, lb) = match (
        load_scenario(&a, roots, color),
        load_scenario(&b, roots, color),
    ) {
        (Ok(la), Ok(lb)) => (la, lb),
        (Err(code), _) | (_, Err(code)) => return code,
    };
    let (ra, rb) = match (simulated_report(&la, color), simulated_report(&lb, color)) {
        (Ok(ra), Ok(rb)) => (ra, rb),
        (Err(code), _) | (_, Err(code)) => return code,
    };
    let d = venusc::report::diff::ReportDiff::new((&la.scenario, &ra), (&lb.scenario, &rb));
    match args.format {
        ReportFormat::Text => print!("{}", venusc::report::diff::text(&d)),
        ReportFormat::Json => print!("{}", venusc::report::diff::json(&d)),
    }
    if let Some(out) = &args.out {
        let page = venusc::report::diff::html(&d);
        if let Err(f) = files::write_atomic(out, page.as_bytes()) {
            return fail(&f);
        }
        eprintln!(
            "wrote the diff of `{}` and `{}` to `{}`",
            d.a,
            d.b,
            out.display()
        );
    }
    ExitCode::SUCCESS
}

/// `sim --timeline`: the Perfetto trace written atomically; the slice count.
fn write_timeline(
    path: &Path,
    sim: &SimRun,
    opts: &venusc::report::perfetto::PerfettoOptions<'_>,
) -> Result<u64, Failure> {
    let mut file = files::AtomicFile::create(path)?;
    let n = venusc::report::perfetto::write_perfetto(&mut file, &sim.trace, &sim.timeline, opts)
        .map_err(|e| Failure {
            code: Code::E0704,
            message: format!("cannot write `{}`: {e}", path.display()),
            help: format!(
                "free space where `{}` goes, or write it elsewhere; nothing was replaced",
                path.display()
            ),
        })?;
    file.commit()?;
    Ok(n)
}

/// The largest `--timeline` written without `--timeline-ranks`: ui.perfetto.dev does not load
/// JSON traces much over 1 GB.
const MAX_TIMELINE_BYTES: u64 = 1 << 30;

/// Checks `--timeline-ranks` against the simulated ranks (E0603 for a rank the run has no
/// trace of) and the file's estimated size against [`MAX_TIMELINE_BYTES`] (E0603 without
/// `--timeline-ranks`, a warning with it), before anything is written.
fn timeline_fits(sim: &SimRun, ranks: Option<&[u32]>, all_ranks: bool) -> Result<(), ExitCode> {
    use venusc::report::perfetto;
    let simulated: Vec<u32> = sim.trace.ranks().iter().map(|r| r.rank().0).collect();
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

/// Why `sim` could not run: a coded file failure, or the simulator's error and its message
/// (rendered as a coded diagnostic where the input caused it).
enum RunError {
    Coded(Failure),
    Sim(venusc::simulate::SimError),
}

/// `sim --trace DIR`: reads the directory's file names (the files themselves are read by
/// name as the replay needs them) and replays them on `sc`'s cluster; the report is the mean
/// of the traces' iterations, or of `iterations` (`--iterations`) when given.
fn simulate_trace_dir(
    sc: &venusc::plan::Scenario,
    dir: &Path,
    iterations: Option<u64>,
) -> Result<SimRun, RunError> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| {
            RunError::Coded(Failure {
                code: Code::E0709,
                message: format!("cannot read directory `{}`: {e}", dir.display()),
                help: "give `--trace` the directory that holds the `*.et` files".to_string(),
            })
        })?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    // `name` may be `../sim-config/comm-group.json` (VenusSim's place for it): read through
    // the same policy as every file.
    let mut read = |name: &str| {
        let path = dir.join(name);
        // A missing file keeps its own error: the replay treats some as optional.
        std::fs::metadata(&path)?;
        files::read(&path, Input::Trace)
            .map_err(|f| std::io::Error::other(format!("{} ({})", f.message, f.code)))
    };
    let r = venusc::simulate::replay(sc, &names, &mut read, iterations).map_err(|e| match e {
        venusc::simulate::SimError::Read(e) => RunError::Coded(Failure {
            code: Code::E0706,
            message: format!("{}: {e}", dir.display()),
            help: format!(
                "fix `{}` there, or write the traces again with `venusc compile --emit \
                 simplified-trace -o {}`",
                e.file,
                dir.display()
            ),
        }),
        // The budget and time-range failures are the scenario's (coded at its plan); any other
        // failure of a replay comes from what the trace files say, not from a venusc bug.
        e @ (venusc::simulate::SimError::EmptyTrace { .. }
        | venusc::simulate::SimError::Lower(
            venusc::lower::LowerError::OverBudget { .. }
            | venusc::lower::LowerError::TooManyRanks { .. },
        )
        | venusc::simulate::SimError::Engine(venusc::engine::EngineError::TimeOverflow {
            ..
        })) => RunError::Sim(e),
        e => RunError::Coded(Failure {
            code: Code::E0606,
            message: format!("the traces in `{}` cannot be replayed: {e}", dir.display()),
            help: format!(
                "write the traces again with `venusc compile --emit simplified-trace -o {}`, \
                 or fix the file the message names",
                dir.display()
            ),
        }),
    })?;
    Ok(SimRun {
        report: r.report,
        trace: r.trace,
        timeline: r.timeline,
        layout: r.layout,
    })
}

fn validate(args: &ValidateArgs) -> ExitCode {
    let text = match files::read_text(&args.table, Input::Table) {
        Ok(t) => t,
        Err(f) => return fail(&f),
    };
    let v = match venusc::published::run(&text) {
        Ok(v) => v,
        Err(e) => {
            return coded_usage_error(
                Code::E0607,
                format!(
                    "`{}`: {e}\n  = help: {}",
                    args.table.display(),
                    venusc::published::tsv::columns_help()
                ),
            )
        }
    };
    let mut refused = false;
    if let Some(dir) = &args.emit_scenarios {
        match emit_scenarios(&v, dir, &args.table) {
            Ok(r) => refused = r,
            Err(code) => return code,
        }
    }
    match args.format {
        ValidateFormat::Markdown => print!("{}", v.markdown()),
        ValidateFormat::Json => print!("{}", v.json()),
    }
    let _ = std::io::stdout().flush();
    if refused {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// `validate --emit-scenarios DIR`: each row's scenario as `DIR/<id>.venus`. An id that is
/// not a plain file name (a `/`, `..`, an absolute path) or that repeats an earlier one is
/// E0708 and nothing is written for it, so no row writes outside DIR or over another row.
/// `Ok(true)` when a row was refused.
fn emit_scenarios(
    v: &venusc::published::Validation,
    dir: &Path,
    table: &Path,
) -> Result<bool, ExitCode> {
    if let Err(e) = std::fs::create_dir_all(dir) {
        return Err(fail(&Failure {
            code: Code::E0704,
            message: format!("cannot create `{}`: {e}", dir.display()),
            help: format!("create `{}` or choose a writable directory", dir.display()),
        }));
    }
    let mut written = std::collections::HashSet::new();
    let mut refused = false;
    for r in &v.rows {
        let Ok(built) = venusc::published::scenario::build(&r.row) else {
            continue;
        };
        let id = &r.row.id;
        let problem = match venusc::published::file_stem_problem(id) {
            Some(p) => Some(p),
            None if !written.insert(id.clone()) => {
                Some(format!("id `{id}` is used by an earlier row"))
            }
            None => None,
        };
        if let Some(problem) = problem {
            eprintln!(
                "{}",
                Failure {
                    code: Code::E0708,
                    message: format!(
                        "not writing the scenario of row `{}`: {problem}",
                        venusc::diag::escape_excerpt(id, 80)
                    ),
                    help: format!(
                        "give the row a unique `id` of letters, digits, `-`, `_` and `.` in `{}`",
                        table.display()
                    ),
                }
            );
            refused = true;
            continue;
        }
        let path = dir.join(format!("{id}.venus"));
        if let Err(f) = files::refuse_input(&path, &[table])
            .and_then(|()| files::write_atomic(&path, built.venus.as_bytes()))
        {
            return Err(fail(&f));
        }
    }
    Ok(refused)
}

/// `venusc fmt`: 0 when every file is (or now is) formatted, 1 when `--check` finds files to
/// change or a file has syntax errors (those are rendered and the file is left alone), 2 on
/// I/O errors. A file that cannot be read or written does not stop the others; each file is
/// replaced atomically, so a failed write leaves it as it was.
fn fmt(args: &FmtArgs, color: bool) -> ExitCode {
    let files = match files::venus_files(&args.paths) {
        Ok(f) => f,
        Err(f) => return fail(&f),
    };
    let mut failed = false;
    let mut io_failed = false;
    for path in &files {
        let bytes = match files::read(path, Input::Venus) {
            Ok(b) => b,
            Err(f) => {
                eprintln!("{f}");
                io_failed = true;
                continue;
            }
        };
        let (text, decode) = venusc::syntax::decode(&bytes, venusc::diag::FileId(0));
        // The skip directive holds even in a file that is not valid UTF-8 (a test fixture).
        let result = if decode.is_empty()
            || text
                .lines()
                .any(|l| l.trim_end() == venusc::fmt::SKIP_DIRECTIVE)
        {
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
                } else if let Err(f) = files::write_atomic(path, formatted.as_bytes()) {
                    eprintln!("{f}");
                    io_failed = true;
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
    if io_failed {
        ExitCode::from(2)
    } else if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// `venusc calibrate`: fits the scenario's dims to nccl-tests logs and its GPU's GEMM curve
/// to a GEMM table, and writes the calibrated definitions.
fn calibrate(args: &CalibrateArgs, roots: &RootArgs, color: bool) -> ExitCode {
    use venusc::calibrate;
    if args.nccl.is_empty() && args.gemm.is_none() && args.runs.is_none() {
        return usage_error(
            "give at least one `--nccl DIM=FILE`, a `--gemm FILE` or a `--runs FILE` to fit",
        );
    }
    if let Some(out) = &args.output {
        let mut inputs: Vec<&Path> = vec![&args.input.file];
        inputs.extend(args.gemm.as_deref());
        inputs.extend(args.runs.as_deref());
        if let Err(f) = files::refuse_input(out, &inputs) {
            return fail(&f);
        }
    }
    let loaded = match load_scenario(&args.input, roots, color) {
        Ok(l) => l,
        Err(code) => return code,
    };
    let sc = &loaded.scenario;
    let mismatch = |what: &Path, m: calibrate::Mismatch| Failure {
        code: Code::E0622,
        message: format!("`{}`: {}", what.display(), m.message),
        help: m.help,
    };
    let malformed = |what: &Path, line: usize, message: String, help: String| Failure {
        code: Code::E0607,
        message: if line == 0 {
            format!("`{}`: {message}", what.display())
        } else {
            format!("`{}` line {line}: {message}", what.display())
        },
        help,
    };
    if let Some(path) = &args.runs {
        let text = match files::read(path, Input::Table) {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(f) => return fail(&f),
        };
        let fit = match calibrate_runs(sc, &text, args) {
            Ok(fit) => fit,
            Err(m) => {
                let failure = Failure {
                    code: Code::E0626,
                    message: format!("`{}`: {}", path.display(), m.message),
                    help: m.help,
                };
                return fail_with(&failure, 1);
            }
        };
        return write_library(&calibrate::runs_library(sc, &fit), args.output.as_deref());
    }
    let mut fits = Vec::new();
    for spec in &args.nccl {
        let Some((dim, file)) = spec.split_once('=') else {
            return usage_error(format!(
                "`--nccl {spec}`: write the dim and the log as `DIM=FILE` (dims: {})",
                sc.cluster
                    .dims
                    .iter()
                    .map(|d| d.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        };
        let path = PathBuf::from(file);
        let text = match files::read(&path, Input::Table) {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(f) => return fail(&f),
        };
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let log = match calibrate::nccl::parse(&text, &name) {
            Ok(l) => l,
            Err(e) => return fail_with(&malformed(&path, e.line, e.message, e.help), 1),
        };
        let fit = calibrate::dim_index(&sc.cluster, dim)
            .and_then(|i| calibrate::fit_dim(&sc.cluster, i, &log));
        match fit {
            Ok(f) => fits.push(f),
            Err(m) => return fail_with(&mismatch(&path, m), 1),
        }
    }
    let gemm = match &args.gemm {
        None => None,
        Some(path) => {
            let text = match files::read(path, Input::Table) {
                Ok(b) => String::from_utf8_lossy(&b).into_owned(),
                Err(f) => return fail(&f),
            };
            let rows = match calibrate::gemm::parse(&text) {
                Ok(r) => r,
                Err(e) => return fail_with(&malformed(path, e.line, e.message, e.help), 1),
            };
            match calibrate::fit_gemm(sc, &rows) {
                Ok(g) => Some(g),
                Err(m) => return fail_with(&mismatch(path, m), 1),
            }
        }
    };
    write_library(&calibrate::library(sc, &fits, gemm), args.output.as_deref())
}

/// `calibrate --runs`: the table's rows of the scenario's arch, fitted.
fn calibrate_runs(
    sc: &venusc::plan::Scenario,
    table: &str,
    args: &CalibrateArgs,
) -> Result<venusc::calibrate::runs::RunsFit, venusc::calibrate::Mismatch> {
    use venusc::calibrate::runs;
    let prepared = runs::prepare(table, sc.cluster.gpu.arch)?;
    let holdout = if args.hold_out_odd {
        runs::Holdout::Odd
    } else {
        runs::Holdout::None
    };
    Ok(runs::fit(
        prepared,
        runs::start_of(sc),
        runs::Free {
            half_dim: !args.keep_gemm_shape,
            network: !args.keep_network,
        },
        holdout,
        runs::STEPS,
    ))
}

/// Prints a calibrated library or writes it to `output`.
fn write_library(text: &str, output: Option<&Path>) -> ExitCode {
    match output {
        None => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Some(out) => match files::write_atomic(out, text.as_bytes()) {
            Ok(()) => {
                eprintln!("wrote `{}`", out.display());
                ExitCode::SUCCESS
            }
            Err(f) => fail(&f),
        },
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
    // `{per_sec}` prints `2,081.3475/s`; a whole number of plans per second reads better.
    let style = indicatif::ProgressStyle::with_template(
        "{msg:>10} [{bar:40}] {pos}/{len} {rate} eta {eta}",
    )
    .map(|s| {
        s.progress_chars("=> ").with_key(
            "rate",
            |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{:.0}/s", state.per_sec());
            },
        )
    })
    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
    let bar =
        indicatif::ProgressBar::with_draw_target(Some(0), indicatif::ProgressDrawTarget::stderr());
    bar.set_style(style);
    Some(SweepBar(bar))
}

fn sweep(args: &SweepArgs, roots: &RootArgs, color: bool) -> ExitCode {
    use venusc::sweep::{self, output};
    let options = sweep::SweepOptions {
        scenario: args.scenario.clone(),
        auto: args.auto.then_some(sweep::AutoOptions {
            allow_cross_node_tp: args.allow_cross_node_tp,
        }),
        headroom: venusc::ty::Ratio(args.headroom),
        objective: args.objective.objective(),
        prune: args.prune.then_some(args.top),
    };
    let shard = match args.shard.as_deref().map(sweep::Shard::parse).transpose() {
        Ok(s) => s,
        Err(e) => return usage_error(e),
    };
    // The sweep file: needed to run, and to render `--emit-best` after a merge.
    let mut prepared = match &args.file {
        Some(file) => match prepare_sweep(file, &options, roots, color) {
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
            "checked {} in {:.2} s; simulated {} in {:.2} s ({:.0} plans/s on {} threads); {:.2} s in all",
            venus_base::base::math::count_of(outcome.candidates, "candidate"),
            timing.check.0,
            venus_base::base::math::count_of(timing.simulated, "plan"),
            timing.simulate.0,
            timing.plans_per_second(),
            rayon::current_num_threads(),
            started.elapsed().as_secs_f64()
        );
        outcome
    } else {
        let mut parts = Vec::new();
        for path in &args.merge {
            let text = match files::read_text(path, Input::Shard) {
                Ok(t) => t,
                Err(f) => return fail(&f),
            };
            match output::read_json(&text) {
                Ok(o) => parts.push(o),
                Err(e) => {
                    return coded_usage_error(
                        Code::E0607,
                        format!(
                            "`{}`: {e}\n  = help: merge the files `venusc sweep --shard i/n --format json` wrote",
                            path.display()
                        ),
                    )
                }
            }
        }
        if let Some((_, sw)) = &prepared {
            let other = parts.iter().any(|p| {
                p.shard
                    .as_ref()
                    .is_some_and(|s| s.fingerprint != sw.fingerprint)
            });
            if other {
                return coded_usage_error(
                    Code::E0604,
                    format!(
                        "the shard outputs come from another sweep than `{}` with these options",
                        sw.path.display()
                    ),
                );
            }
        }
        let mut merged = match sweep::merge(parts) {
            Ok(o) => o,
            Err(e) => return coded_usage_error(Code::E0604, e),
        };
        // The objective only orders the results: the merge ranks by the one asked for now,
        // unless the shards kept only their best K by theirs.
        if merged.kept.is_some() && merged.objective != args.objective.objective() {
            return usage_error(format!(
                "the shards kept their best {} plans by {}: merge them with `--objective {}`",
                merged.kept.unwrap_or(0),
                merged.objective.word(),
                merged.objective.word()
            ));
        }
        merged.rank_by(args.objective.objective());
        if let Some((session, sw)) = prepared.as_mut() {
            if let Err(e) = sweep::verify_plans(session, sw, &merged) {
                return coded_usage_error(Code::E0604, e);
            }
        }
        merged
    };
    let out = match args.format {
        SweepFormat::Text => output::text(
            &outcome,
            usize::try_from(args.top).unwrap_or(usize::MAX),
            args.pareto,
        ),
        SweepFormat::Csv => output::csv(&outcome, args.pareto),
        SweepFormat::Json if args.pareto => output::json(&output::pareto_only(&outcome)),
        SweepFormat::Json => output::json(&outcome),
    };
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    if let Some(path) = &args.html {
        let mut inputs: Vec<&Path> = args.merge.iter().map(PathBuf::as_path).collect();
        inputs.extend(args.file.as_deref());
        let written = files::refuse_input(path, &inputs)
            .and_then(|()| files::write_atomic(path, output::html(&outcome).as_bytes()));
        match written {
            Ok(()) => eprintln!("wrote the sweep's page to `{}`", path.display()),
            Err(f) => return fail(&f),
        }
    }
    if let Some(path) = &args.emit_best {
        let Some((_, sw)) = &prepared else {
            return usage_error("`--emit-best` after `--merge` needs the sweep file too: `venusc sweep FILE --merge ...`");
        };
        let mut inputs: Vec<&Path> = args.merge.iter().map(PathBuf::as_path).collect();
        inputs.push(&sw.path);
        if let Err(f) = files::refuse_input(path, &inputs) {
            return fail(&f);
        }
        if let Err(e) = emit_best(&outcome, sw, path) {
            return e;
        }
    }
    if let Some(path) = &args.emit_megatron {
        let Some((session, sw)) = prepared.as_mut() else {
            return usage_error("`--emit-megatron` after `--merge` needs the sweep file too: `venusc sweep FILE --merge ...`");
        };
        let mut inputs: Vec<&Path> = args.merge.iter().map(PathBuf::as_path).collect();
        inputs.push(&sw.path);
        if let Err(f) = files::refuse_input(path, &inputs) {
            return fail(&f);
        }
        if let Err(e) = emit_best_megatron(&outcome, session, sw, path) {
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
    roots: &RootArgs,
    color: bool,
) -> Result<(venusc::Session, venusc::sweep::Sweep), ExitCode> {
    let bytes = files::read(file, Input::Venus).map_err(|f| fail(&f))?;
    let project = roots.for_inputs(&[file.to_path_buf()])?;
    let mut session = venusc::Session::new();
    let root = session.load(file, &bytes, &mut project.reader());
    match venusc::sweep::prepare(&mut session, file, root, options) {
        Ok(sw) => Ok((session, sw)),
        Err(venusc::sweep::PrepareError::Diagnostics(d)) => {
            eprint!("{}", render::human(&d, &session.source_files(), color));
            Err(ExitCode::from(1))
        }
        Err(venusc::sweep::PrepareError::Usage(e)) => Err(usage_error(e)),
    }
}

/// Whether a sweep's prune key is E0401 (a candidate over the GPU's memory).
fn is_memory(key: &venusc::sweep::PruneKey) -> bool {
    *key == venusc::sweep::PruneKey::Code(Code::E0401)
}

/// E0621: every candidate was pruned, so `--emit-best` has nothing to write. The help names
/// the code that pruned the most candidates, the one to loosen first.
fn no_best_plan(outcome: &venusc::sweep::Outcome) -> Failure {
    let most = outcome
        .pruned
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0)));
    let help = match most {
        Some((code, n)) if is_memory(code) && outcome.headroom > 0.0 => format!(
            "{n} candidates did not fit in memory with {:.0}% headroom: lower `--headroom`, or \
             add larger `pp` or `tp` values, or `recompute full`, to the sweep",
            outcome.headroom * 100.0
        ),
        Some((code, n)) if is_memory(code) => format!(
            "{n} candidates did not fit in memory: add larger `pp` or `tp` values, or \
             `recompute full`, to the sweep"
        ),
        Some((code, n)) => format!(
            "{n} candidates failed {code} (`venusc explain {code}`): `venusc check` on the \
             sweep file shows one of them"
        ),
        None => "the sweep has no candidate: give its plan lists at least one value".to_string(),
    };
    Failure {
        code: Code::E0621,
        message: format!(
            "no plan of `{}`'s {} candidates was simulated, so there is no best plan to write",
            outcome.scenario, outcome.candidates
        ),
        help,
    }
}

fn emit_best(
    outcome: &venusc::sweep::Outcome,
    sw: &venusc::sweep::Sweep,
    path: &Path,
) -> Result<(), ExitCode> {
    let Some(best) = outcome.results.first() else {
        return Err(fail_with(&no_best_plan(outcome), 1));
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
    let outside = std::cell::Cell::new(false);
    // A `use` is relative to its file: from elsewhere, point at the used file itself.
    let use_path = |p: &str| {
        if keep {
            return p.to_string();
        }
        outside.set(true);
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
    files::write_atomic(path, text.as_bytes()).map_err(|f| fail(&f))?;
    eprintln!("wrote the best plan to `{}`", path.display());
    if outside.get() {
        // Its `use`s point back at the sweep's directory, outside the new file's own root.
        let both = std::fs::canonicalize(&source_dir)
            .ok()
            .zip(std::fs::canonicalize(&target_dir).ok())
            .map(|(a, b)| {
                a.ancestors()
                    .find(|d| b.starts_with(d))
                    .map_or(a.clone(), Path::to_path_buf)
            });
        if let Some(root) = both {
            eprintln!(
                "note: it uses files beside `{}`: run it with `venusc --root {} sim {}`",
                sw.path.display(),
                root.display(),
                path.display()
            );
        }
    }
    Ok(())
}

/// `sweep --emit-megatron`: the best plan's Megatron-LM flags, under comment lines that say
/// where it comes from.
fn emit_best_megatron(
    outcome: &venusc::sweep::Outcome,
    session: &mut venusc::Session,
    sw: &venusc::sweep::Sweep,
    path: &Path,
) -> Result<(), ExitCode> {
    let Some(best) = outcome.results.first() else {
        eprintln!("error: no plan was simulated, so there is no best plan to write");
        return Err(ExitCode::from(1));
    };
    let foreign = outcome
        .shard
        .as_ref()
        .is_some_and(|s| s.fingerprint != sw.fingerprint);
    let sc = match venusc::sweep::candidate_scenario(session, sw, best.candidate) {
        Ok(sc) if !foreign => sc,
        _ => {
            return Err(usage_error(
                "the shard outputs come from another sweep than this file",
            ))
        }
    };
    let header = venusc::sweep::output::best_header(
        outcome,
        best,
        &sw.path.display().to_string(),
        &sw.space.describe(best.candidate),
    );
    let mut text: String = header.iter().map(|l| format!("# {l}\n")).collect();
    text.push_str(&venusc::emit::emit_megatron(&sc));
    files::write_atomic(path, text.as_bytes()).map_err(|f| fail(&f))?;
    eprintln!(
        "wrote the best plan's Megatron-LM flags to `{}`",
        path.display()
    );
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
    let activations = venusc::report::perfetto::activation_bytes_per_microbatch(&sc.memory);
    let opts = venusc::report::perfetto::PerfettoOptions {
        ranks: None,
        layout: Some(&sim.lowered.layout),
        activation_bytes: Some(&activations),
    };
    venusc::report::perfetto::write_perfetto(
        sink.file(&name)?,
        &sim.lowered.trace,
        &sim.timeline,
        &opts,
    )?;
    Ok(Vec::new())
}
