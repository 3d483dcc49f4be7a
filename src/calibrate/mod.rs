//! `venusc calibrate`: the user's own measurements → a `.venus` library of calibrated
//! definitions that a scenario `use`s.
//!
//! Input: a validated scenario (its cluster and GPU are what gets calibrated), nccl-tests logs
//! each named for the dim it measured ([`nccl`]), and a table of measured GEMMs ([`gemm`]), as
//! texts (the CLI reads the files). Output: the library's text: a GPU with its fitted
//! `gemm_efficiency`/`gemm_half_dim`, and a cluster that inherits the scenario's and replaces
//! each measured dim with its fitted latency and efficiency.
//!
//! A dim is fitted against the simulator itself, not a formula beside it: each size of the log
//! is one collective of the log's ranks run by the event engine on the cluster's network, so
//! the algorithm choice, the hierarchical phases and the fabric are the ones `sim` uses, and a
//! prediction moves exactly as the measurements say. The fit minimises the squared error of the
//! logarithm of the time over the dim's latency and efficiency (Nelder–Mead on their
//! logarithms, from a start that a two-point estimate gives).

pub mod gemm;
pub mod nccl;
pub mod runs;

use std::fmt::Write as _;

use crate::base::{Bytes, BytesPerSec, CollectiveAlgorithm, Precision, Ratio, Seconds};
use crate::engine::{self, NetDim, Network};
use crate::plan::{ClusterSpec, GpuSpec, Scenario};
use crate::trace::{Category, CollectiveKind, Label, NodeKind, RankId, StreamId, TraceBuilder};

/// A cell or token echoed in a message: escaped and cut to 40 characters.
pub fn snippet(s: &str) -> String {
    let escaped: String = s.chars().flat_map(char::escape_debug).collect();
    if escaped.chars().count() > 40 {
        format!("{}…", escaped.chars().take(40).collect::<String>())
    } else {
        escaped
    }
}

/// A measurement that does not fit the scenario it should calibrate.
#[derive(Clone, Debug, PartialEq)]
pub struct Mismatch {
    pub message: String,
    pub help: String,
}

/// A fitted dim.
#[derive(Clone, Debug, PartialEq)]
pub struct DimFit {
    pub dim: usize,
    pub kind: CollectiveKind,
    pub ranks: u32,
    pub hosts: u32,
    pub latency: Seconds,
    /// Achieved share of the link's bandwidth; above 1 when the link is faster than written.
    pub efficiency: f64,
    pub rms_error: f64,
    pub points: usize,
}

/// The index of the dim named `name`.
pub fn dim_index(cluster: &ClusterSpec, name: &str) -> Result<usize, Mismatch> {
    cluster
        .dims
        .iter()
        .position(|d| d.name == name)
        .ok_or_else(|| Mismatch {
            message: format!("the cluster has no dim `{}`", snippet(name)),
            help: format!(
                "name one of its dims: {}",
                cluster
                    .dims
                    .iter()
                    .map(|d| format!("`{}`", d.name))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })
}

/// The dims a group of `ranks` consecutive GPUs spans, up to and including `dim`, with `dim`
/// cut to what the group needs: the network a log's collective ran on.
fn group_dims(cluster: &ClusterSpec, dim: usize, ranks: u32) -> Result<Vec<NetDim>, Mismatch> {
    let all = crate::lower::net::dims(cluster).map_err(|e| Mismatch {
        message: format!("the cluster's network cannot be built: {e}"),
        help: "`venusc check` the scenario first".into(),
    })?;
    let inner: u64 = all[..dim].iter().map(|d| d.size as u64).product();
    let outer = all[dim].size as u64;
    let n = ranks as u64;
    let innermost_touched = all
        .iter()
        .scan(1u64, |p, d| {
            *p = p.saturating_mul(d.size as u64);
            Some(*p)
        })
        .position(|p| p >= n);
    if n <= inner || n > inner.saturating_mul(outer) {
        let fits = innermost_touched
            .map(|i| format!("name dim `{}` for it", cluster.dims[i].name))
            .unwrap_or_else(|| "it is larger than the cluster".into());
        return Err(Mismatch {
            message: format!(
                "a log of {ranks} ranks does not measure dim `{}` ({inner} GPUs inside it, \
                 {} with it)",
                cluster.dims[dim].name,
                inner.saturating_mul(outer)
            ),
            help: format!("a group of {ranks} consecutive GPUs ends in another dim: {fits}"),
        });
    }
    let mut dims = all[..=dim].to_vec();
    dims[dim].size = n.div_ceil(inner.max(1)) as u32;
    Ok(dims)
}

/// The simulated time of one collective of `bytes` on the first `ranks` GPUs of `dims`.
fn simulated(net: &Network, kind: CollectiveKind, ranks: u32, bytes: f64) -> f64 {
    let mut b = TraceBuilder::new(net.world());
    let members: Vec<RankId> = (0..ranks).map(RankId).collect();
    let group = b.group(&members);
    for &r in &members {
        b.rank(r).push(
            NodeKind::Collective {
                kind,
                group,
                bytes: Bytes(bytes.round() as u64),
            },
            StreamId(1),
            Category::Other,
            Label::None,
            &[],
        );
    }
    let Ok(trace) = b.finish() else {
        return f64::INFINITY;
    };
    match engine::run_trace(&trace, net, &engine::Options::default()) {
        Ok(t) => t.makespan().0 as f64 * 1e-12,
        Err(_) => f64::INFINITY,
    }
}

/// The error of a `(latency, efficiency)` against the log: the sum of squared log ratios.
fn misfit(dims: &[NetDim], dim: usize, log: &nccl::NcclLog, latency: f64, eff: f64) -> f64 {
    let mut dims = dims.to_vec();
    dims[dim].latency = Seconds(latency);
    dims[dim].efficiency = Ratio(eff);
    let Ok(net) = Network::from_dims(&dims) else {
        return f64::INFINITY;
    };
    log.points
        .iter()
        .map(|&(bytes, t)| {
            (simulated(&net, log.kind, log.ranks, bytes) / t)
                .ln()
                .powi(2)
        })
        .sum()
}

/// Nelder–Mead on `f(x)` from `start` (one axis step `scale` per coordinate gives the first
/// simplex), `steps` iterations; the best point. Reflection 1, expansion 2, inside contraction
/// ½, shrink towards the best point: the textbook coefficients.
fn nelder_mead(f: impl Fn(&[f64]) -> f64, start: &[f64], scale: f64, steps: usize) -> Vec<f64> {
    let n = start.len();
    let mut s: Vec<(Vec<f64>, f64)> = Vec::with_capacity(n + 1);
    s.push((start.to_vec(), f(start)));
    for i in 0..n {
        let mut p = start.to_vec();
        p[i] += scale;
        let fp = f(&p);
        s.push((p, fp));
    }
    for _ in 0..steps {
        s.sort_by(|a, b| a.1.total_cmp(&b.1));
        let centroid: Vec<f64> = (0..n)
            .map(|j| s[..n].iter().map(|p| p.0[j]).sum::<f64>() / n as f64)
            .collect();
        let worst = s[n].0.clone();
        let at = |t: f64| -> Vec<f64> {
            (0..n)
                .map(|j| centroid[j] + t * (centroid[j] - worst[j]))
                .collect()
        };
        let r = at(1.0);
        let fr = f(&r);
        if fr < s[0].1 {
            let e = at(2.0);
            let fe = f(&e);
            s[n] = if fe < fr { (e, fe) } else { (r, fr) };
        } else if fr < s[n - 1].1 {
            s[n] = (r, fr);
        } else {
            let k = at(-0.5);
            let fk = f(&k);
            if fk < s[n].1 {
                s[n] = (k, fk);
            } else {
                let best = s[0].0.clone();
                for p in s.iter_mut().skip(1) {
                    let q: Vec<f64> = p.0.iter().zip(&best).map(|(a, b)| (a + b) / 2.0).collect();
                    let fq = f(&q);
                    *p = (q, fq);
                }
            }
        }
    }
    s.sort_by(|a, b| a.1.total_cmp(&b.1));
    s.swap_remove(0).0
}

/// Fits dim `dim`'s latency and efficiency to a log.
pub fn fit_dim(cluster: &ClusterSpec, dim: usize, log: &nccl::NcclLog) -> Result<DimFit, Mismatch> {
    let dims = group_dims(cluster, dim, log.ranks)?;
    // Start: the written latency (1 µs when none) and the ratio of the largest size's
    // simulated time at full efficiency to its measured time.
    let written = dims[dim].latency.0.max(1e-6);
    let (big_bytes, big_t) =
        log.points
            .iter()
            .copied()
            .fold((0.0, 0.0), |a, p| if p.0 > a.0 { p } else { a });
    let mut full = dims.clone();
    full[dim].efficiency = Ratio(1.0);
    let start_eff = Network::from_dims(&full)
        .map(|net| simulated(&net, log.kind, log.ranks, big_bytes) / big_t)
        .unwrap_or(1.0)
        .clamp(1e-3, 10.0);
    let f = |x: &[f64]| misfit(&dims, dim, log, x[0].exp(), x[1].exp());
    let best = nelder_mead(f, &[written.ln(), start_eff.ln()], 0.5, 120);
    let (latency, efficiency) = (best[0].exp(), best[1].exp());
    let sse = misfit(&dims, dim, log, latency, efficiency);
    Ok(DimFit {
        dim,
        kind: log.kind,
        ranks: log.ranks,
        hosts: log.hosts,
        latency: Seconds(latency),
        efficiency,
        // exp of the RMS log ratio − 1: the typical relative error.
        rms_error: (sse / log.points.len() as f64).sqrt().exp() - 1.0,
        points: log.points.len(),
    })
}

/// The fitted GEMM curve of the scenario's precision.
pub fn fit_gemm(
    sc: &Scenario,
    rows: &[gemm::GemmRow],
) -> Result<(Precision, gemm::GemmCurve), Mismatch> {
    let precision = sc.plan.precision();
    let mine: Vec<gemm::GemmRow> = rows
        .iter()
        .copied()
        .filter(|r| r.precision == precision)
        .collect();
    let peak = sc.cluster.gpu.peak_for(precision).map(|p| p.0);
    match (mine.len(), peak) {
        (0, _) => Err(Mismatch {
            message: format!(
                "the GEMM table has no {} row, the scenario's precision",
                precision.word()
            ),
            help: format!(
                "measure GEMMs in {} or simulate a plan of the table's precision",
                precision.word()
            ),
        }),
        (_, None) => Err(Mismatch {
            message: format!(
                "`{}` has no {} tensor cores",
                sc.cluster.gpu.name,
                precision.word()
            ),
            help: "calibrate the scenario whose GPU ran the GEMMs".into(),
        }),
        (_, Some(peak)) => Ok((precision, gemm::fit(&mine, peak))),
    }
}

/// A bandwidth as a `.venus` literal in GB/s, exact to 6 significant digits.
fn gb_per_s(bytes_per_s: f64) -> String {
    format!("{}GB/s", round_sig(bytes_per_s / 1e9, 6))
}

fn round_sig(v: f64, digits: i32) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    let scale = 10f64.powi(digits - 1 - v.abs().log10().floor() as i32);
    (v * scale).round() / scale
}

fn kind_word(kind: CollectiveKind) -> &'static str {
    match kind {
        CollectiveKind::AllReduce => "all_reduce",
        CollectiveKind::AllGather => "all_gather",
        CollectiveKind::ReduceScatter => "reduce_scatter",
        CollectiveKind::AllToAll | CollectiveKind::AllToAllV(_) => "alltoall",
    }
}

/// A byte count as a `.venus` literal: whole GiB when it is one, else bytes.
fn bytes_literal(b: u64) -> String {
    if b.is_multiple_of(1 << 30) {
        format!("{}GiB", b >> 30)
    } else {
        format!("{b}B")
    }
}

fn algorithm_word(a: CollectiveAlgorithm) -> &'static str {
    match a {
        CollectiveAlgorithm::Ring => "ring",
        CollectiveAlgorithm::Direct => "direct",
        CollectiveAlgorithm::HalvingDoubling => "halving_doubling",
        CollectiveAlgorithm::Tree => "tree",
    }
}

/// The library: the scenario's GPU and cluster written out whole (a used file cannot see the
/// definitions of the file that uses it, so nothing here inherits from them), with the fitted
/// GEMM constants and the fitted dims in place of the written ones.
pub fn library(
    sc: &Scenario,
    dims: &[DimFit],
    gemm: Option<(Precision, gemm::GemmCurve)>,
) -> String {
    let mut out = String::new();
    write_header(&mut out, sc, dims, gemm);
    write_gpu(&mut out, &sc.cluster.gpu, gemm.map(|(_, c)| c));
    write_cluster(&mut out, &sc.cluster, dims);
    out
}

/// The library of a fit to measured runs: the scenario's GPU with the fitted GEMM curve, its
/// cluster with every dim's bus efficiency scaled by the fitted network factor (a dim pushed
/// past 100% gets the bandwidth instead), and a header with every row's residual.
pub fn runs_library(sc: &Scenario, fit: &runs::RunsFit) -> String {
    let mut out = String::new();
    write_runs_header(&mut out, sc, fit);
    let curve = gemm::GemmCurve {
        efficiency: fit.fitted.gemm_efficiency,
        half_dim: fit.fitted.gemm_half_dim,
        rms_error: fit.mape(false).unwrap_or(0.0),
        rows: fit.rows.len(),
    };
    write_gpu(&mut out, &sc.cluster.gpu, Some(curve));
    let mut cluster = sc.cluster.clone();
    for d in &mut cluster.dims {
        let eff = d.efficiency.map_or(1.0, |r| r.0) * fit.fitted.network;
        if eff > 1.0 {
            d.bandwidth = BytesPerSec(d.bandwidth.0 * eff);
            d.efficiency = Some(Ratio(1.0));
        } else {
            d.efficiency = Some(Ratio(eff));
        }
    }
    write_cluster(&mut out, &cluster, &[]);
    out
}

/// The runs fit's constants, its rows and their residuals, as comments.
fn write_runs_header(out: &mut String, sc: &Scenario, fit: &runs::RunsFit) {
    let cluster = sc.cluster.name.as_deref().unwrap_or("cluster");
    let pct = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{:.1}%", v * 100.0));
    let fitted = fit.rows.iter().filter(|r| !r.held_out).count();
    let held = fit.rows.len() - fitted;
    let _ = writeln!(
        out,
        "# Calibrated by `venusc calibrate --runs` for scenario `{}`: {fitted} measured runs \
         on `{}` GPUs fitted through the simulator, {held} held out.",
        sc.name,
        fit.arch.word()
    );
    let c = fit.fitted;
    let _ = writeln!(
        out,
        "# gemm_efficiency {:.1}% (was {:.1}%), gemm_half_dim {:.0} (was {:.0}), network \
         efficiency ×{:.3}",
        c.gemm_efficiency * 100.0,
        fit.start.gemm_efficiency * 100.0,
        c.gemm_half_dim.round(),
        fit.start.gemm_half_dim,
        c.network
    );
    let _ = writeln!(
        out,
        "# MAPE: fitted rows {}, held-out rows {}",
        pct(fit.mape(false)),
        pct(fit.mape(true))
    );
    for r in &fit.rows {
        let _ = writeln!(
            out,
            "# {} `{}` {}: published {}, predicted {:.4}, {:+.1}%",
            if r.held_out { "held out" } else { "row" },
            snippet(&r.id),
            r.metric.name(),
            r.published,
            r.predicted,
            r.error * 100.0
        );
    }
    if !fit.skipped.is_empty() {
        let _ = writeln!(out, "# {} rows not simulated:", fit.skipped.len());
        for (id, why) in &fit.skipped {
            let _ = writeln!(out, "#   `{}`: {}", snippet(id), snippet_long(why));
        }
    }
    if fit.other_arch > 0 {
        let _ = writeln!(
            out,
            "# {} rows on GPUs of other archs, not fitted",
            fit.other_arch
        );
    }
    let _ = writeln!(
        out,
        "# Use it: `use \"THIS FILE\"`, then `cluster {cluster}_calibrated` in the scenario."
    );
}

/// A reason echoed in a comment: one line, escaped, cut to 120 characters.
fn snippet_long(s: &str) -> String {
    let one: String = s.chars().flat_map(char::escape_debug).collect();
    if one.chars().count() > 120 {
        format!("{}…", one.chars().take(120).collect::<String>())
    } else {
        one
    }
}

/// What was fitted, from what, and how well, as comments.
fn write_header(
    out: &mut String,
    sc: &Scenario,
    dims: &[DimFit],
    gemm: Option<(Precision, gemm::GemmCurve)>,
) {
    let cluster = sc.cluster.name.as_deref().unwrap_or("cluster");
    let _ = writeln!(
        out,
        "# Calibrated by `venusc calibrate` from measurements of scenario `{}`.",
        sc.name
    );
    for f in dims {
        let d = &sc.cluster.dims[f.dim];
        let _ = writeln!(
            out,
            "# dim `{}`: {} on {} ranks ({} hosts), {} sizes: latency {:.2}us, {:.1}% of {}, \
             typical error {:.1}%",
            d.name,
            kind_word(f.kind),
            f.ranks,
            f.hosts,
            f.points,
            f.latency.0 * 1e6,
            f.efficiency * 100.0,
            gb_per_s(d.bandwidth.0),
            f.rms_error * 100.0
        );
    }
    if let Some((p, c)) = gemm {
        let _ = writeln!(
            out,
            "# GEMMs: {} {} rows: {:.1}% of peak, half dim {:.0}, typical error {:.1}%",
            c.rows,
            p.word(),
            c.efficiency * 100.0,
            c.half_dim,
            c.rms_error * 100.0
        );
        if c.efficiency > 1.0 {
            let _ = writeln!(
                out,
                "# (they ran above `{}`'s peak, so its `peak` is too low; the efficiency is \
                 capped at 100%)",
                sc.cluster.gpu.name
            );
        }
    }
    let _ = writeln!(
        out,
        "# Use it: `use \"THIS FILE\"`, then `cluster {cluster}_calibrated` in the scenario."
    );
}

/// The GPU whole, with the fitted GEMM constants (or the ones it already writes).
fn write_gpu(out: &mut String, g: &GpuSpec, gemm: Option<gemm::GemmCurve>) {
    let _ = writeln!(out, "\ngpu {}_calibrated <", g.name);
    let _ = writeln!(
        out,
        "  peak {}TFLOP/s  memory {}  mem_bw {}",
        round_sig(g.peak.0 / 1e12, 8),
        bytes_literal(g.memory.0),
        gb_per_s(g.mem_bw.0)
    );
    if let Some(p) = g.fp8_peak {
        let _ = writeln!(out, "  fp8_peak {}TFLOP/s", round_sig(p.0 / 1e12, 8));
    }
    if let Some(p) = g.fp4_peak {
        let _ = writeln!(out, "  fp4_peak {}TFLOP/s", round_sig(p.0 / 1e12, 8));
    }
    let _ = writeln!(out, "  arch {}", g.arch.word());
    let (eff, half) = match gemm {
        Some(c) => (Some(c.efficiency.min(1.0)), Some(c.half_dim.round() as u64)),
        None => (g.gemm.efficiency.map(|r| r.0), g.gemm.half_dim),
    };
    if let Some(e) = eff {
        let _ = writeln!(out, "  gemm_efficiency {:.1}%", (e * 100.0).max(0.1));
    }
    if let Some(h) = half {
        let _ = writeln!(out, "  gemm_half_dim {h}");
    }
    // Only where it is not the arch's: the written GPU's own count carries over.
    if g.sms != g.arch.default_sms() {
        let _ = writeln!(out, "  sms {}", g.sms);
    }
    out.push_str(">\n");
}

/// The cluster whole, each fitted dim (the last fit of a dim wins) in place of its written one.
fn write_cluster(out: &mut String, cluster: &ClusterSpec, fits: &[DimFit]) {
    let name = cluster.name.as_deref().unwrap_or("cluster");
    let _ = writeln!(
        out,
        "\ncluster {name}_calibrated <\n  gpu {}_calibrated",
        cluster.gpu.name
    );
    for (i, d) in cluster.dims.iter().enumerate() {
        let fitted = fits.iter().rev().find(|f| f.dim == i);
        let (bw, latency, eff) = match fitted {
            // A link faster than written: the bandwidth moves, not an efficiency past 100%.
            Some(f) if f.efficiency > 1.0 => (d.bandwidth.0 * f.efficiency, f.latency.0, 1.0),
            Some(f) => (d.bandwidth.0, f.latency.0, f.efficiency),
            None => (
                d.bandwidth.0,
                d.latency.0,
                d.efficiency.map_or(1.0, |r| r.0),
            ),
        };
        let _ = writeln!(
            out,
            "  dim {} {} {} {} {}ns {:.1}%",
            d.name,
            d.topology.word(),
            d.size,
            gb_per_s(bw),
            round_sig(latency * 1e9, 4),
            // 0% is no link at all (E0202): the slowest written share is 0.1%.
            (eff * 100.0).max(0.1)
        );
    }
    for d in &cluster.dims {
        if let Some(a) = d.algorithm {
            let _ = writeln!(out, "  algo {} {}", d.name, algorithm_word(a));
        }
        if d.fabric.rail {
            let _ = writeln!(out, "  rail {}", d.name);
        }
        if let Some((leaf, share)) = d.fabric.fat_tree {
            let _ = writeln!(
                out,
                "  fat_tree {} {leaf} {}%",
                d.name,
                round_sig(share * 100.0, 6)
            );
        }
        if d.fabric.sharp {
            let _ = writeln!(out, "  sharp {}", d.name);
        }
    }
    if let Some(r) = cluster.reserve {
        let _ = writeln!(out, "  reserve {}", bytes_literal(r.0));
    }
    write_stragglers_and_reliability(out, cluster);
    out.push_str(">\n");
}

/// The cluster's `slow_*` items and failure inputs, as it wrote them.
fn write_stragglers_and_reliability(out: &mut String, cluster: &ClusterSpec) {
    use crate::plan::straggler::SlowWhich;
    let pct = |r: Ratio| round_sig(r.0 * 100.0, 6);
    for s in &cluster.slow {
        let _ = match s.which {
            SlowWhich::Rank(r) => writeln!(out, "  slow_rank {r} {}%", pct(s.speed)),
            SlowWhich::Node(n) => writeln!(out, "  slow_node {n} {}%", pct(s.speed)),
            SlowWhich::Link(n) => writeln!(out, "  slow_link {n} {}%", pct(s.speed)),
            SlowWhich::Fraction { share, seed } => {
                writeln!(out, "  slow_gpus {}% {}% {seed}", pct(share), pct(s.speed))
            }
        };
    }
    let r = &cluster.reliability;
    let times = [
        ("gpu_mtbf", r.gpu_mtbf),
        ("node_mtbf", r.node_mtbf),
        ("link_mtbf", r.link_mtbf),
        ("restart", r.restart),
    ];
    for (key, t) in times {
        if let Some(t) = t {
            let _ = writeln!(out, "  {key} {}s", round_sig(t.0, 9));
        }
    }
    let rates = [
        ("storage_write_bw", r.storage_write_bw),
        ("storage_read_bw", r.storage_read_bw),
    ];
    for (key, b) in rates {
        if let Some(b) = b {
            let _ = writeln!(out, "  {key} {}", gb_per_s(b.0));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::{BytesPerSec, FlopsPerSec, GpuArch, Topology};
    use crate::plan::{DimSpec, GpuSpec};

    fn dgx_pair() -> ClusterSpec {
        let dim = |name: &str, topology, size, gbps: f64, lat: f64, eff: f64| DimSpec {
            name: name.into(),
            topology,
            size,
            bandwidth: BytesPerSec(gbps * 1e9),
            latency: Seconds(lat),
            efficiency: Some(Ratio(eff)),
            algorithm: None,
            fabric: Default::default(),
        };
        ClusterSpec {
            name: Some("pair".into()),
            gpu: GpuSpec {
                name: "h100".into(),
                arch: GpuArch::Hopper,
                peak: FlopsPerSec(989e12),
                memory: Bytes(80 << 30),
                mem_bw: BytesPerSec(3.35e12),
                fp8_peak: None,
                fp4_peak: None,
                gemm: Default::default(),
                sms: 132,
            },
            dims: vec![
                dim("nvlink", Topology::FullyConnected, 8, 450.0, 1e-6, 0.8),
                dim("ib", Topology::Switch, 4, 50.0, 5e-6, 0.9),
            ],
            reserve: None,
            slow: Vec::new(),
            reliability: Default::default(),
        }
    }

    /// A log of 32 ranks (8 per host) drawn from the engine itself with the ib dim at `eff`
    /// and `alpha`: the hierarchical all-reduce (reduce-scatter on NVLink, all-reduce on ib,
    /// all-gather back) that `sim` runs.
    fn engine_log(cluster: &ClusterSpec, eff: f64, alpha: f64) -> nccl::NcclLog {
        let mut dims = group_dims(cluster, 1, 32).unwrap();
        dims[1].efficiency = Ratio(eff);
        dims[1].latency = Seconds(alpha);
        let net = Network::from_dims(&dims).unwrap();
        let points = (10..31)
            .step_by(2)
            .map(|p| {
                let s = (1u64 << p) as f64;
                (s, simulated(&net, CollectiveKind::AllReduce, 32, s))
            })
            .collect();
        nccl::NcclLog {
            kind: CollectiveKind::AllReduce,
            ranks: 32,
            hosts: 4,
            points,
        }
    }

    /// The calibrated GPU keeps a count of SMs the user wrote (it prices the SMs that
    /// overlapped communication takes) and leaves the arch's default unwritten.
    #[test]
    fn the_calibrated_gpu_carries_its_own_sms_and_omits_the_archs_default() {
        let mut gpu = dgx_pair().gpu;
        let mut out = String::new();
        write_gpu(&mut out, &gpu, None);
        assert!(!out.contains("sms"), "{out}");
        gpu.sms = 114;
        let mut out = String::new();
        write_gpu(&mut out, &gpu, None);
        assert!(out.contains("\n  sms 114\n"), "{out}");
    }

    #[test]
    fn an_outer_dim_is_fitted_through_the_hierarchical_collective_the_engine_runs() {
        let cluster = dgx_pair();
        let log = engine_log(&cluster, 0.45, 12e-6);
        let fit = fit_dim(&cluster, 1, &log).unwrap();
        assert!((fit.efficiency - 0.45).abs() < 0.005, "{fit:?}");
        assert!((fit.latency.0 - 12e-6).abs() < 0.5e-6, "{fit:?}");
        assert!(fit.rms_error < 0.005, "{fit:?}");
    }

    #[test]
    fn a_link_faster_than_written_moves_the_bandwidth_not_the_efficiency_past_100() {
        let cluster = dgx_pair();
        let fit = DimFit {
            dim: 1,
            kind: CollectiveKind::AllReduce,
            ranks: 32,
            hosts: 4,
            latency: Seconds(4e-6),
            efficiency: 1.5,
            rms_error: 0.01,
            points: 10,
        };
        let sc_text = library_of(&cluster, &[fit]);
        assert!(
            sc_text.contains("  dim ib switch 4 75GB/s 4000ns 100.0%\n"),
            "{sc_text}"
        );
        assert!(
            sc_text.contains("  dim nvlink fc 8 450GB/s 1000ns 80.0%\n"),
            "{sc_text}"
        );
    }

    /// The library text of a cluster alone (no scenario around it).
    fn library_of(cluster: &ClusterSpec, fits: &[DimFit]) -> String {
        let mut out = String::new();
        write_cluster(&mut out, cluster, fits);
        out
    }
}
