//! `venusc import`: VenusSim's `llm-sim-config.json` (plus the `system.json` and `network.yml`
//! it points to) → an equivalent `.venus` file.
//!
//! Input: the config's path and a closure that reads a file by path (the library does no I/O).
//! Output: [`Imported`]: the `.venus` text and warnings for every key that does not map onto
//! the language or whose value the round trip will not keep. Callers check the text like any
//! other file: there is one product, so the text and what it means cannot drift apart.
//! Invariants: no key is dropped silently; an absolute path that does not exist is retried
//! relative to the config's directory (its trailing components, longest first), which is how
//! VenusSim's demo, written for `/home/VenusSim/...`, is found next to its config; a malformed
//! or inconsistent file gives an [`ImportError`] naming the file and what is wrong.

use std::fmt;
use std::fmt::Write as _;
use std::io;

use serde_json::{Map, Value};

use super::venussim::{IMPLEMENTATION_KEYS, SYSTEM_DEFAULTS};
use venus_base::base::{Bytes, BytesPerSec, Topology};

/// The HBM values written for the gpu, which VenusSim's config does not carry (H100 SXM).
pub const ASSUMED_MEMORY: Bytes = Bytes(80 * Bytes::GIB);
pub const ASSUMED_MEM_BW: BytesPerSec = BytesPerSec(3350e9);

/// The result of an import.
#[derive(Clone, Debug, PartialEq)]
pub struct Imported {
    /// The `.venus` file.
    pub venus: String,
    /// Keys not understood, values not kept, assumptions made.
    pub warnings: Vec<String>,
}

/// Why an import failed: the file, what is wrong in it, and which kind of failure it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportError {
    pub file: String,
    pub message: String,
    pub kind: ImportErrorKind,
}

/// What kind of failure an [`ImportError`] is: the CLI picks its exit code from this, never
/// from the message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImportErrorKind {
    /// The config file itself could not be read (a usage error).
    Unreadable,
    /// A file was read but is malformed or inconsistent, or a file it names is missing.
    Malformed,
    /// A value no `.venus` literal of its key holds, or a key written twice (E0605).
    Unrepresentable,
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file, self.message)
    }
}

impl std::error::Error for ImportError {}

fn unrepresentable(file: &str, message: impl Into<String>) -> ImportError {
    ImportError {
        file: file.to_string(),
        message: message.into(),
        kind: ImportErrorKind::Unrepresentable,
    }
}

/// `v` as a `.venus` number that reads back as exactly `v`: Rust's shortest round-trip digits,
/// in exponent form when the plain form would be long (`1e-7`, not `0.0000001`; `1e300`, not
/// 301 digits). The old three-decimal rounding turned `1e-7` ns into `0ns` and `mfu 1e-300`
/// into `mfu 0%`.
fn exact(v: f64) -> String {
    let plain = format!("{v}");
    if plain.len() <= 16 {
        plain
    } else {
        format!("{v:e}")
    }
}

/// `value` × `scale` (its unit in SI) must be a positive finite number for the `.venus` file to
/// hold it: a rate of 1e-300 TFLOP/s is fine, one of 1e300 TFLOP/s overflows.
fn representable(file: &str, key: &str, value: f64, scale: f64) -> Result<f64, ImportError> {
    let si = value * scale;
    if value > 0.0 && si.is_finite() && si > 0.0 {
        return Ok(value);
    }
    Err(unrepresentable(
        file,
        format!(
            "`{key}` {} is out of the range a `.venus` file holds (positive, below {:e} in SI units)",
            exact(value),
            f64::MAX
        ),
    ))
}

fn err(file: &str, message: impl Into<String>) -> ImportError {
    ImportError {
        file: file.to_string(),
        message: message.into(),
        kind: ImportErrorKind::Malformed,
    }
}

/// Keys of `trace_generator_config` that map onto the scenario.
const MODEL_PLAN_KEYS: &[&str] = &[
    "mlp-worker-num",
    "world-size",
    "pipeline-model-parallel-size",
    "context-parallel-size",
    "tensor-model-parallel-size",
    "sequence-parallel",
    "vpp-enable",
    "num-layers-per-virtual-pipeline-stage",
    "global-batch-size-mlp-multiplier",
    "global-batch-size",
    "micro-batch-size",
    "no-overlap-p2p-communication",
    "use-distributed-optimizer",
    "overlap-grad-reduce",
    "no-delay-grad-reduce",
    "overlap-param-gather",
    "delay-param-gather",
    "train-iters",
    "seq-length",
    "decoder-seq-length",
    "hidden-size",
    "ffn-hidden-size",
    "num-attention-heads",
    "num-query-groups",
    "num-layers",
    "vocab-size",
    "swiglu",
    "untie-embeddings-and-output-weights",
    "use_step_snapshot",
    "step_snapshot_data",
];

/// Keys that only steer VenusSim's own files and processes; the values below are the ones
/// `--emit venussim` writes, which pass without a warning. Any other value is kept.
const TOOLING_KEYS: &[(&str, Option<i64>)] = &[
    ("forward_only", Some(0)),
    ("model-type", None),
    ("output_filepath", None),
    ("output_filename", None),
    ("log_filename", None),
    ("trace_generate", Some(1)),
    ("use_chakra", Some(0)),
    ("use_simplified_trace", Some(1)),
    ("use_simplified_template_trace", Some(1)),
    ("total_file_size_gb_limit", Some(10)),
    ("keep_json_files", Some(0)),
];

/// Fields venusc does not model, kept as the plan's `venussim` items (path, value) so
/// `--emit venussim` writes them back (`plan::venussim`).
type Kept = Vec<(String, Value)>;

/// The warning for a kept field: what it is and that it comes back.
fn kept_note(file: &str, path: &str, why: &str) -> String {
    format!(
        "{file}: `{path}` {why}; kept as a `venussim` item, which `--emit venussim` writes back"
    )
}

/// Imports the config at `config_path`. `read` returns a file's bytes by path.
pub fn import_venussim(
    config_path: &str,
    read: &mut dyn FnMut(&str) -> io::Result<Vec<u8>>,
) -> Result<Imported, ImportError> {
    let bytes = read(config_path).map_err(|e| ImportError {
        kind: ImportErrorKind::Unreadable,
        ..err(config_path, format!("cannot read: {e}"))
    })?;
    let root = parse_json(config_path, &bytes)?;
    let root = root
        .as_object()
        .ok_or_else(|| err(config_path, "the top level is not a JSON object"))?;
    let mut warnings = Vec::new();
    let mut kept = Kept::new();
    for (k, v) in root {
        if !matches!(
            k.as_str(),
            "trace_generator_config" | "simulator_config" | "time_line_visualizer_config"
        ) {
            warnings.push(kept_note(
                config_path,
                k,
                "is a section VenusSim's tools do not read",
            ));
            kept.push((k.clone(), v.clone()));
        }
    }
    let tg = section(config_path, root, "trace_generator_config")?;
    let sim = section(config_path, root, "simulator_config")?;
    check_sim_sections(config_path, sim, root, &mut warnings, &mut kept);

    let system_path = path_value(config_path, sim, "system")?;
    let network_path = path_value(config_path, sim, "network")?;
    let (system_file, system_bytes) = read_resolved(config_path, &system_path, read)?;
    let (network_file, network_bytes) = read_resolved(config_path, &network_path, read)?;
    let system = parse_json(&system_file, &system_bytes)?;
    let system = system
        .as_object()
        .ok_or_else(|| err(&system_file, "the top level is not a JSON object"))?;
    let network = parse_network(&network_file, &network_bytes)?;

    let t = Tg {
        file: config_path,
        map: tg,
    };
    t.check_keys(&mut warnings, &mut kept);
    let v = Values::from(
        &t,
        system,
        &system_file,
        &network,
        &network_file,
        &mut warnings,
    )?;
    let name = ident(t.str("output_filename").unwrap_or("imported"));
    // Fields first, whole sections after: the order `--emit venussim` writes them in.
    kept.extend(v.kept_system.iter().cloned());
    kept.sort_by_key(|(path, _)| !path.contains('.'));
    let venus = render(&v, &kept, &name, config_path);
    Ok(Imported { venus, warnings })
}

fn parse_json(file: &str, bytes: &[u8]) -> Result<Value, ImportError> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let line = bytes[..e.valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1;
        err(file, format!("line {line}: not valid UTF-8"))
    })?;
    serde_json::from_str(text).map_err(|e| err(file, format!("invalid JSON: {e}")))
}

fn section<'a>(
    file: &str,
    root: &'a Map<String, Value>,
    name: &str,
) -> Result<&'a Map<String, Value>, ImportError> {
    root.get(name)
        .and_then(Value::as_object)
        .ok_or_else(|| err(file, format!("missing object `{name}`")))
}

fn check_sim_sections(
    file: &str,
    sim: &Map<String, Value>,
    root: &Map<String, Value>,
    warnings: &mut Vec<String>,
    kept: &mut Kept,
) {
    for (k, v) in sim {
        if !matches!(
            k.as_str(),
            "binary" | "system" | "network" | "remote_memory" | "comm_group" | "trace_output"
        ) {
            let path = format!("simulator_config.{k}");
            warnings.push(kept_note(file, &path, "is not modelled by venusc"));
            kept.push((path, v.clone()));
        }
    }
    if let Some(tl) = root
        .get("time_line_visualizer_config")
        .and_then(Value::as_object)
    {
        for (k, v) in tl {
            match k.as_str() {
                "output_filename" => {}
                "single_pp_group" => {
                    if v.as_i64() != Some(0) {
                        let path = "time_line_visualizer_config.single_pp_group";
                        warnings.push(kept_note(file, path, &format!("{v} only limits VenusSim's timeline to rank 0's pipeline (venusc reports every rank)")));
                        kept.push((path.to_string(), v.clone()));
                    }
                }
                _ => {
                    let path = format!("time_line_visualizer_config.{k}");
                    warnings.push(kept_note(file, &path, "is not modelled by venusc"));
                    kept.push((path, v.clone()));
                }
            }
        }
    }
}

fn path_value(file: &str, sim: &Map<String, Value>, key: &str) -> Result<String, ImportError> {
    sim.get(key)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| {
            err(
                file,
                format!("`simulator_config.{key}` is not a path string"),
            )
        })
}

/// Reads `path` as written, else relative to the config's directory: first the whole path
/// (when relative), then its trailing components, longest first.
fn read_resolved(
    config_path: &str,
    path: &str,
    read: &mut dyn FnMut(&str) -> io::Result<Vec<u8>>,
) -> Result<(String, Vec<u8>), ImportError> {
    let mut tried = Vec::new();
    let dir = match config_path.rfind('/') {
        Some(i) => &config_path[..=i],
        None => "",
    };
    let mut candidates = Vec::new();
    if path.starts_with('/') {
        candidates.push(path.to_string());
    } else {
        candidates.push(format!("{dir}{path}"));
    }
    let parts: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    for i in 0..parts.len() {
        let c = format!("{dir}{}", parts[i..].join("/"));
        if !candidates.contains(&c) {
            candidates.push(c);
        }
    }
    for c in candidates {
        match read(&c) {
            Ok(b) => return Ok((c, b)),
            Err(e) => tried.push(format!("{c} ({e})")),
        }
    }
    Err(err(
        config_path,
        format!("cannot find `{path}`; tried {}", tried.join(", ")),
    ))
}

/// One `key: [a, b]` (or `key: a`) line of network.yml.
#[derive(Clone, Debug, PartialEq)]
struct YamlEntry {
    key: String,
    items: Vec<String>,
    line: usize,
}

/// The flow-list subset of YAML that the analytical backend's network files use.
fn parse_network(file: &str, bytes: &[u8]) -> Result<Vec<YamlEntry>, ImportError> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let line = bytes[..e.valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1;
        err(file, format!("line {line}: not valid UTF-8"))
    })?;
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let body = raw.split('#').next().unwrap_or("").trim();
        if body.is_empty() {
            continue;
        }
        let Some((key, value)) = body.split_once(':') else {
            return Err(err(file, format!("line {line}: expected `key: [values]`")));
        };
        let value = value.trim();
        let items = if let Some(inner) = value.strip_prefix('[') {
            let inner = inner
                .strip_suffix(']')
                .ok_or_else(|| err(file, format!("line {line}: list without closing `]`")))?;
            inner
                .split(',')
                .map(|s| s.trim().trim_matches('"').trim_matches('\'').to_string())
                .filter(|s| !s.is_empty())
                .collect()
        } else {
            vec![value.to_string()]
        };
        out.push(YamlEntry {
            key: key.trim().to_string(),
            items,
            line,
        });
    }
    Ok(out)
}

/// The trace generator config with typed accessors.
struct Tg<'a> {
    file: &'a str,
    map: &'a Map<String, Value>,
}

impl Tg<'_> {
    fn check_keys(&self, warnings: &mut Vec<String>, kept: &mut Kept) {
        for (k, v) in self.map {
            if MODEL_PLAN_KEYS.contains(&k.as_str()) {
                continue;
            }
            let path = format!("trace_generator_config.{k}");
            if let Some((_, quiet)) = TOOLING_KEYS.iter().find(|(n, _)| n == k) {
                if let Some(q) = quiet {
                    if int_of(v) != Some(*q) {
                        let why = format!(
                            "{v} has no equivalent in venusc (`--emit venussim` writes {q})"
                        );
                        warnings.push(kept_note(self.file, &path, &why));
                        kept.push((path, v.clone()));
                    }
                }
                continue;
            }
            let why = match k.as_str() {
                "make-vocab-size-divisible-by" => {
                    "is read by VenusSim as a bool that pads to 128 x tp, as venusc pads"
                }
                "stable-embedding" => "(Bloom's extra embedding FLOPs) is not modelled by venusc",
                _ => "is not modelled by venusc",
            };
            warnings.push(kept_note(self.file, &path, why));
            kept.push((path, v.clone()));
        }
        if let Some(t) = self.str("model-type").filter(|t| *t != "decoder_only") {
            let path = "trace_generator_config.model-type";
            warnings.push(kept_note(
                self.file,
                path,
                &format!("{t:?} is not supported (VenusSim asserts decoder_only): simulated as a decoder"),
            ));
            kept.push((path.to_string(), json_str(t)));
        }
    }

    fn str(&self, k: &str) -> Option<&str> {
        self.map.get(k).and_then(Value::as_str)
    }

    fn opt(&self, k: &str) -> Result<Option<u64>, ImportError> {
        match self.map.get(k) {
            None => Ok(None),
            Some(v) => match int_of(v) {
                Some(n) if n >= 0 => Ok(Some(n as u64)),
                _ => Err(err(
                    self.file,
                    format!("`{k}` is {v}, expected a non-negative integer"),
                )),
            },
        }
    }

    fn req(&self, k: &str) -> Result<u64, ImportError> {
        self.opt(k)?
            .ok_or_else(|| err(self.file, format!("missing required key `{k}`")))
    }

    fn flag(&self, k: &str) -> Result<bool, ImportError> {
        Ok(self.opt(k)?.unwrap_or(0) != 0)
    }
}

/// An integer from JSON: integers, integral floats and booleans (as 0/1).
fn int_of(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64().or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
                .map(|f| f as i64)
        }),
        Value::Bool(b) => Some(i64::from(*b)),
        _ => None,
    }
}

fn float_of(v: &Value) -> Option<f64> {
    v.as_f64().filter(|f| f.is_finite())
}

/// One network dimension as imported.
#[derive(Clone, Debug, PartialEq)]
struct NetDim {
    topology: Topology,
    size: u64,
    /// GB/s as written.
    bandwidth: f64,
    /// ns as written.
    latency: f64,
}

/// Every value the `.venus` file carries.
#[derive(Clone, Debug, PartialEq)]
struct Values {
    hidden: u64,
    ffn: Option<u64>,
    layers: u64,
    heads: u64,
    kv_groups: Option<u64>,
    vocab: u64,
    seq: u64,
    swiglu: bool,
    untied: bool,
    peak_tflops: f64,
    dims: Vec<NetDim>,
    tp: u64,
    pp: u64,
    cp: u64,
    dp: u64,
    vpp: u64,
    micro_batch: u64,
    global_batch: u64,
    sp: bool,
    distributed_optimizer: bool,
    overlap_grad_reduce: bool,
    overlap_param_gather: bool,
    delay_grad_reduce: bool,
    delay_param_gather: bool,
    overlap_p2p: bool,
    /// VenusSim's `train-iters`: the length of the training run, kept as a comment. It is
    /// not `iterations` (how many venusc simulates back to back, each the same): a real
    /// config's 500,000 would build a trace of 500,000 iterations.
    train_iters: Option<u64>,
    mfu: Option<f64>,
    /// The snapshot times (ms) and whether they are kept `unused`.
    measured: Option<([f64; 3], bool)>,
    /// system.json fields kept as `venussim "system.FIELD"` items.
    kept_system: Kept,
}

impl Values {
    fn from(
        t: &Tg,
        system: &Map<String, Value>,
        system_file: &str,
        network: &[YamlEntry],
        network_file: &str,
        warnings: &mut Vec<String>,
    ) -> Result<Values, ImportError> {
        let f = t.file;
        let world = t.req("world-size")?;
        let pp = t.req("pipeline-model-parallel-size")?;
        let tp = t.req("tensor-model-parallel-size")?;
        let cp = t.opt("context-parallel-size")?.unwrap_or(1);
        let layers = t.req("num-layers")?;
        for (k, v) in [
            ("world-size", world),
            ("pipeline-model-parallel-size", pp),
            ("tensor-model-parallel-size", tp),
            ("context-parallel-size", cp),
            ("num-layers", layers),
        ] {
            if v == 0 {
                return Err(err(f, format!("`{k}` must be at least 1")));
            }
        }
        let model_parallel = tp.saturating_mul(pp).saturating_mul(cp);
        if world % model_parallel != 0 {
            return Err(err(
                f,
                format!("world-size {world} is not divisible by tp x pp x cp = {model_parallel}"),
            ));
        }
        let dp = world / model_parallel;
        let vpp = if t.flag("vpp-enable")? {
            let per_stage = t.req("num-layers-per-virtual-pipeline-stage")?;
            // arguments.py:351-363
            if per_stage == 0 || layers % pp != 0 || (layers / pp) % per_stage != 0 {
                return Err(err(
                    f,
                    format!("num-layers {layers} / pp {pp} is not a multiple of num-layers-per-virtual-pipeline-stage {per_stage}"),
                ));
            }
            (layers / pp) / per_stage
        } else {
            1
        };
        // arguments.py:239-243
        let global_batch = match t.opt("global-batch-size-mlp-multiplier")? {
            Some(mult) => mult.saturating_mul(t.req("mlp-worker-num")?),
            None => t.opt("global-batch-size")?.ok_or_else(|| {
                err(
                    f,
                    "missing `global-batch-size-mlp-multiplier` (with `mlp-worker-num`) or `global-batch-size`",
                )
            })?,
        };
        let seq = t.req("seq-length")?;
        if let Some(d) = t.opt("decoder-seq-length")? {
            if d != seq {
                warnings.push(format!(
                    "{f}: `decoder-seq-length` {d} differs from `seq-length` {seq}; venusc uses seq {seq}"
                ));
            }
        }
        // Snapshot data VenusSim does not use (`use_step_snapshot 0`) is kept as `unused`, so
        // `--emit venussim` gives it back; the zeros VenusSim writes for none are not data.
        let replayed = t.flag("use_step_snapshot")?;
        let measured = if replayed {
            Some((snapshot(t)?, false))
        } else {
            match (t.map.contains_key("step_snapshot_data"), snapshot(t)) {
                (true, Ok(data)) => Some((data, true)),
                (true, Err(_)) if !snapshot_is_zeros(t) => {
                    warnings.push(format!(
                        "{f}: `step_snapshot_data` is unused (use_step_snapshot 0) and not three \
                         positive times: not imported"
                    ));
                    None
                }
                _ => None,
            }
        };
        let sp_written = t.flag("sequence-parallel")?;
        let v = Values {
            hidden: t.req("hidden-size")?,
            ffn: t.opt("ffn-hidden-size")?,
            layers,
            heads: t.req("num-attention-heads")?,
            kv_groups: t.opt("num-query-groups")?,
            vocab: t.req("vocab-size")?,
            seq,
            swiglu: t.flag("swiglu")?,
            untied: t.flag("untie-embeddings-and-output-weights")?,
            peak_tflops: 0.0,
            dims: network_dims(network_file, network, warnings)?,
            tp,
            pp,
            cp,
            dp,
            vpp,
            micro_batch: t.req("micro-batch-size")?,
            global_batch,
            // Forced off at tp 1 (arguments.py), as in Megatron.
            sp: sp_written && tp > 1,
            distributed_optimizer: t.flag("use-distributed-optimizer")?,
            overlap_grad_reduce: t.flag("overlap-grad-reduce")?,
            overlap_param_gather: t.flag("overlap-param-gather")?,
            delay_grad_reduce: !t.flag("no-delay-grad-reduce")?,
            delay_param_gather: t.flag("delay-param-gather")?,
            overlap_p2p: !t.flag("no-overlap-p2p-communication")?,
            train_iters: t.opt("train-iters")?,
            mfu: None,
            measured,
            kept_system: Kept::new(),
        };
        let v = v.with_system(system_file, system, warnings)?;
        let net_world = v.dims.iter().fold(1u64, |a, d| a.saturating_mul(d.size));
        if net_world != world {
            return Err(err(
                network_file,
                format!("npus_count multiplies to {net_world}, but world-size is {world}"),
            ));
        }
        Ok(v)
    }

    fn with_system(
        mut self,
        file: &str,
        system: &Map<String, Value>,
        warnings: &mut Vec<String>,
    ) -> Result<Values, ImportError> {
        let mut kept = Kept::new();
        let peak = system
            .get("peak-perf")
            .and_then(float_of)
            .filter(|&p| p > 0.0)
            .ok_or_else(|| err(file, "missing or non-positive `peak-perf` (TFLOP/s)"))?;
        self.peak_tflops = representable(file, "peak-perf", peak, 1e12)?;
        if let Some(m) = system.get("mfu") {
            let m = float_of(m)
                .filter(|&m| m > 0.0 && m <= 1.0)
                .ok_or_else(|| err(file, format!("`mfu` is {m}, expected a ratio in (0, 1]")))?;
            self.mfu = Some(m);
        }
        for (k, v) in system {
            let k = k.as_str();
            if matches!(k, "peak-perf" | "mfu" | "boost-mode") {
                continue;
            }
            if IMPLEMENTATION_KEYS.contains(&k) {
                let all_ring = v
                    .as_array()
                    .is_some_and(|a| a.iter().all(|x| x.as_str() == Some("ring")));
                if !all_ring {
                    warnings.push(format!(
                        "{file}: `{k}` {v} is not modelled by venusc, and emit writes ring per dimension"
                    ));
                }
                continue;
            }
            match SYSTEM_DEFAULTS.iter().find(|(n, _)| *n == k) {
                Some((_, ours)) => {
                    let same = serde_json::from_str::<Value>(ours).is_ok_and(|o| {
                        o == *v || (float_of(&o).is_some() && float_of(&o) == float_of(v))
                    });
                    let informational = matches!(
                        k,
                        "log-level" | "trace-enabled" | "simplified-trace" | "template-trace"
                    );
                    if !same && !informational {
                        let why = match k {
                            "scheduling-policy" => Some(" (LIFO can deadlock in VenusSim)"),
                            // venussim.rs SYSTEM_DEFAULTS says why 0.
                            "align-with-nccl" => Some(" (with 1 VenusSim reads uninitialized group sizes, so a plan's template and simplified traces disagree)"),
                            _ => None,
                        };
                        match why {
                            Some(why) => warnings.push(format!(
                                "{file}: `{k}` {v} is a VenusSim setting with no venusc equivalent; `--emit venussim` writes {ours}{why}"
                            )),
                            None => {
                                let path = format!("system.{k}");
                                let why = format!("{v} is a VenusSim setting with no venusc equivalent (`--emit venussim` would write {ours})");
                                warnings.push(kept_note(file, &path, &why));
                                kept.push((path, v.clone()));
                            }
                        }
                    }
                }
                None => {
                    let path = format!("system.{k}");
                    warnings.push(kept_note(file, &path, "is not modelled by venusc"));
                    kept.push((path, v.clone()));
                }
            }
        }
        self.kept_system = kept;
        Ok(self)
    }
}

/// `step_snapshot_data: [0, 0, 0]`: what VenusSim (and `--emit venussim`) writes for none.
fn snapshot_is_zeros(t: &Tg) -> bool {
    t.map
        .get("step_snapshot_data")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().all(|v| float_of(v) == Some(0.0)))
}

fn snapshot(t: &Tg) -> Result<[f64; 3], ImportError> {
    let bad = || {
        err(
            t.file,
            "`step_snapshot_data` must be three positive numbers (ms): first, middle, last stage",
        )
    };
    let a = t
        .map
        .get("step_snapshot_data")
        .and_then(Value::as_array)
        .ok_or_else(bad)?;
    if a.len() != 3 {
        return Err(bad());
    }
    let mut out = [0.0; 3];
    for (o, v) in out.iter_mut().zip(a) {
        *o = float_of(v).filter(|&x| x > 0.0).ok_or_else(bad)?;
    }
    Ok(out)
}

fn network_dims(
    file: &str,
    entries: &[YamlEntry],
    warnings: &mut Vec<String>,
) -> Result<Vec<NetDim>, ImportError> {
    let get = |k: &str| {
        entries
            .iter()
            .find(|e| e.key == k)
            .ok_or_else(|| err(file, format!("missing `{k}`")))
    };
    for e in entries {
        if !matches!(
            e.key.as_str(),
            "topology" | "npus_count" | "bandwidth" | "latency"
        ) {
            warnings.push(format!(
                "{file}: line {}: unknown key `{}` ignored",
                e.line, e.key
            ));
        }
    }
    // A key written twice: YAML keeps the last, VenusSim's loader the first. Neither is safe
    // to pick silently.
    for (i, e) in entries.iter().enumerate() {
        if let Some(first) = entries[..i].iter().find(|f| f.key == e.key) {
            return Err(unrepresentable(
                file,
                format!(
                    "line {}: `{}` is written again (first on line {}): keep one",
                    e.line, e.key, first.line
                ),
            ));
        }
    }
    let topo = get("topology")?;
    let npus = get("npus_count")?;
    let bw = get("bandwidth")?;
    let lat = get("latency")?;
    let n = topo.items.len();
    if n == 0 {
        return Err(err(file, format!("line {}: no topology", topo.line)));
    }
    for e in [npus, bw, lat] {
        if e.items.len() != n {
            return Err(err(
                file,
                format!(
                    "line {}: `{}` has {} entries for {n} dimensions",
                    e.line,
                    e.key,
                    e.items.len()
                ),
            ));
        }
    }
    let number = |e: &YamlEntry, i: usize| -> Result<f64, ImportError> {
        e.items[i]
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| {
                err(
                    file,
                    format!(
                        "line {}: `{}` is not a non-negative number",
                        e.line, e.items[i]
                    ),
                )
            })
    };
    let mut dims = Vec::with_capacity(n);
    for i in 0..n {
        let topology = match topo.items[i].as_str() {
            "FullyConnected" => Topology::FullyConnected,
            "Ring" => Topology::Ring,
            "Switch" => Topology::Switch,
            other => {
                return Err(err(
                    file,
                    format!(
                    "line {}: unknown topology `{other}` (expected FullyConnected, Ring or Switch)",
                    topo.line
                ),
                ))
            }
        };
        let size = npus.items[i]
            .parse::<u64>()
            .ok()
            .filter(|&s| s > 0)
            .ok_or_else(|| {
                err(
                    file,
                    format!(
                        "line {}: npus_count `{}` is not a positive integer",
                        npus.line, npus.items[i]
                    ),
                )
            })?;
        let bandwidth = number(bw, i)?;
        if bandwidth <= 0.0 {
            return Err(err(
                file,
                format!("line {}: bandwidth must be positive", bw.line),
            ));
        }
        let bandwidth = representable(file, "bandwidth", bandwidth, 1e9)?;
        let latency = number(lat, i)?;
        if latency > 0.0 {
            representable(file, "latency", latency, 1e-9)?;
        }
        dims.push(NetDim {
            topology,
            size,
            bandwidth,
            latency,
        });
    }
    Ok(dims)
}

/// A `.venus` name from a file prefix.
fn ident(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if !out.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        out.insert(0, '_');
    }
    out
}

fn json_str(t: &str) -> Value {
    Value::String(t.to_string())
}

/// `text` as a `.venus` string literal: the language's two escapes, `\"` and `\\`.
fn venus_string(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

fn render(v: &Values, kept: &[(String, Value)], name: &str, config_path: &str) -> String {
    let file = config_path.rsplit('/').next().unwrap_or(config_path);
    let mut o = String::new();
    let _ = writeln!(o, "# Imported from VenusSim's `{file}` by `venusc import`.");
    let _ = writeln!(o, "model {name}_model <");
    let mut line = format!("  hidden {}", v.hidden);
    if let Some(f) = v.ffn {
        let _ = write!(line, "  ffn {f}");
    }
    let _ = writeln!(o, "{line}  layers {}", v.layers);
    let mut line = format!("  heads {}", v.heads);
    if let Some(g) = v.kv_groups {
        let _ = write!(line, "  kv_groups {g}");
    }
    let _ = writeln!(o, "{line}");
    let _ = writeln!(o, "  vocab {}  seq {}", v.vocab, v.seq);
    if v.swiglu {
        let _ = writeln!(o, "  swiglu");
    }
    if v.untied {
        let _ = writeln!(o, "  untied_embeddings");
    }
    let _ = writeln!(o, ">");
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "# memory and mem_bw are not in VenusSim's config: H100 SXM values assumed."
    );
    let _ = writeln!(
        o,
        "gpu {name}_gpu < peak {}TFLOP/s  memory 80GiB  mem_bw 3350GB/s >",
        exact(v.peak_tflops)
    );
    let _ = writeln!(o);
    let _ = writeln!(o, "cluster <");
    let _ = writeln!(o, "  gpu {name}_gpu");
    for (i, d) in v.dims.iter().enumerate() {
        let _ = writeln!(
            o,
            "  dim dim{i} {} {} {}GB/s {}ns",
            d.topology.word(),
            d.size,
            exact(d.bandwidth),
            exact(d.latency)
        );
    }
    let _ = writeln!(o, ">");
    let _ = writeln!(o);
    let _ = writeln!(o, "plan <");
    let mut line = format!("  pp {}", v.pp);
    if v.vpp > 1 {
        let _ = write!(line, " vpp {}", v.vpp);
    }
    let _ = write!(line, " tp {}", v.tp);
    if v.cp > 1 {
        let _ = write!(line, " cp {}", v.cp);
    }
    let _ = writeln!(o, "{line} dp {}", v.dp);
    let _ = writeln!(
        o,
        "  micro_batch {} global_batch {}",
        v.micro_batch, v.global_batch
    );
    let flags: Vec<&str> = [
        (v.sp, "sp"),
        (v.distributed_optimizer, "distributed_optimizer"),
        (v.overlap_grad_reduce, "overlap_grad_reduce"),
        (v.overlap_param_gather, "overlap_param_gather"),
    ]
    .iter()
    .filter(|(on, _)| *on)
    .map(|(_, n)| *n)
    .collect();
    if !flags.is_empty() {
        let _ = writeln!(o, "  {}", flags.join(" "));
    }
    let flags: Vec<&str> = [
        (v.delay_grad_reduce, "delay_grad_reduce"),
        (v.delay_param_gather, "delay_param_gather"),
        (v.overlap_p2p, "overlap_p2p"),
    ]
    .iter()
    .filter(|(on, _)| *on)
    .map(|(_, n)| *n)
    .collect();
    if !flags.is_empty() {
        let _ = writeln!(o, "  {}", flags.join(" "));
    }
    if let Some(n) = v.train_iters {
        let _ = writeln!(
            o,
            "  # VenusSim's train-iters {n} is the run's length: each iteration repeats the same"
        );
        let _ = writeln!(
            o,
            "  # schedule, so one is simulated (`iterations N` simulates N back to back)"
        );
    }
    if let Some(m) = v.mfu {
        // As a percentage when that reads back exactly (`mfu 45%`), else as the fraction.
        let pct = m * 100.0;
        if pct / 100.0 == m {
            let _ = writeln!(o, "  mfu {}%", exact(pct));
        } else {
            let _ = writeln!(o, "  mfu {}", exact(m));
        }
    }
    if let Some(([a, b, c], unused)) = v.measured {
        let _ = writeln!(
            o,
            "  measured < first {}ms middle {}ms last {}ms{} >",
            exact(a),
            exact(b),
            exact(c),
            if unused { " unused" } else { "" }
        );
    }
    for (path, value) in kept {
        let _ = writeln!(
            o,
            "  venussim {} {}",
            venus_string(path),
            venus_string(&venus_plan::plan::venussim::json_text(value))
        );
    }
    let _ = writeln!(o, ">");
    o
}
