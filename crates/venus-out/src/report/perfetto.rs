//! Perfetto export (`venusc sim --timeline FILE.json`): trace + timeline → a Chrome/Perfetto
//! JSON trace that opens in ui.perfetto.dev.
//!
//! Input: the simulated [`Trace`], its [`Timeline`], [`PerfettoOptions`]. Output: written
//! incrementally to any [`Write`]: `{"displayTimeUnit":"ns","traceEvents":[...]}` with, per
//! simulated rank, a process (`pid` = rank, named `rank 12 (pp3 tp0 dp0)` when a layout is
//! given), one thread per stream (`tid` = stream id, named `compute`, `comm`, `comm2 recv`,
//! ...), and one complete event (`"ph":"X"`) per node, named by its label (`F3.1`,
//! `send→pp2`) with the node's category as `cat`; a schedule that splits the backward names
//! the pass of its `B` and `W` nodes in `args` (`input gradient`, `weight gradient`).
//! Invariants: nothing is buffered beyond one event; times are exact decimal microseconds
//! (`ts`/`dur` from integer picoseconds, no float rounding); output order is rank order, then
//! metadata, then nodes in program order, so it is deterministic.

use std::fmt::Write as _;
use std::io::{self, BufWriter, Write};

use venus_plan::plan::layout::Layout;
use venus_sim::engine::Timeline;
use venus_sim::trace::{Category, Label, Node, NodeKind, RankTrace, StreamId, Trace};

/// What to export.
#[derive(Clone, Copy, Debug, Default)]
pub struct PerfettoOptions<'a> {
    /// Only these ranks (simulated ones; others are skipped). `None`: every simulated rank.
    pub ranks: Option<&'a [u32]>,
    /// The rank grid, for process names with coordinates (`Layout::for_scenario`).
    pub layout: Option<&'a Layout>,
}

/// Bytes one complete event takes in the file, on average: 2.27 GB for 17.2 M slices of a
/// 65,536-GPU `--all-ranks` run (reliability test), the same ~130 B on the demo.
pub const BYTES_PER_SLICE: u64 = 132;

/// The slices [`write_perfetto`] would write for `ranks` (every simulated rank when `None`),
/// and the file's size estimated from them, without writing anything.
pub fn estimate(trace: &Trace, ranks: Option<&[u32]>) -> (u64, u64) {
    let slices: u64 = trace
        .ranks()
        .iter()
        .filter(|rt| ranks.is_none_or(|keep| keep.contains(&rt.rank())))
        .map(|rt| rt.nodes().len() as u64)
        .sum();
    (slices, slices.saturating_mul(BYTES_PER_SLICE))
}

/// Writes the trace. Returns the number of complete (`X`) events written.
pub fn write_perfetto<W: Write>(
    out: W,
    trace: &Trace,
    timeline: &Timeline,
    opts: &PerfettoOptions<'_>,
) -> io::Result<u64> {
    let mut w = BufWriter::new(out);
    w.write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[")?;
    let mut first = true;
    let mut events = 0u64;
    let mut scratch = String::new();
    for (index, rt) in trace.ranks().iter().enumerate() {
        let rank = rt.rank();
        if opts.ranks.is_some_and(|keep| !keep.contains(&rank)) {
            continue;
        }
        scratch.clear();
        process_name(&mut scratch, rank, opts.layout);
        sep(&mut w, &mut first)?;
        write!(
            w,
            "\n{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{rank},\"tid\":0,\"args\":{{\"name\":"
        )?;
        string(&mut w, &scratch)?;
        w.write_all(b"}}")?;
        sep(&mut w, &mut first)?;
        write!(
            w,
            "\n{{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":{rank},\"tid\":0,\"args\":{{\"sort_index\":{rank}}}}}"
        )?;
        for (stream, name) in streams(rt) {
            sep(&mut w, &mut first)?;
            write!(
                w,
                "\n{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{rank},\"tid\":{},\"args\":{{\"name\":",
                stream.0
            )?;
            string(&mut w, &name)?;
            w.write_all(b"}}")?;
        }
        let (starts, ends) = (timeline.starts(index), timeline.ends(index));
        let splits = rt
            .nodes()
            .iter()
            .any(|n| matches!(n.label, Label::Weight { .. }));
        for (k, node) in rt.nodes().iter().enumerate() {
            let (Some(&start), Some(&end)) = (starts.get(k), ends.get(k)) else {
                continue;
            };
            scratch.clear();
            node_name(&mut scratch, trace, node);
            sep(&mut w, &mut first)?;
            w.write_all(b"\n{\"ph\":\"X\",\"name\":")?;
            string(&mut w, &scratch)?;
            write!(
                w,
                ",\"cat\":\"{}\",\"pid\":{rank},\"tid\":{},\"ts\":{},\"dur\":{}",
                node.category.name(),
                node.stream.0,
                Micros(start),
                Micros(end.saturating_sub(start))
            )?;
            node_args(&mut w, node, splits)?;
            w.write_all(b"}")?;
            events += 1;
        }
    }
    w.write_all(b"\n]}\n")?;
    w.flush()?;
    Ok(events)
}

fn sep<W: Write>(w: &mut W, first: &mut bool) -> io::Result<()> {
    if !std::mem::take(first) {
        w.write_all(b",")?;
    }
    Ok(())
}

/// A JSON string literal, escaped.
fn string<W: Write>(w: &mut W, s: &str) -> io::Result<()> {
    serde_json::to_writer(w, s).map_err(io::Error::other)
}

/// Picoseconds written as exact decimal microseconds: `1500000` → `1.5`.
struct Micros(u64);

#[cfg(test)]
pub(crate) fn micros(ps: u64) -> String {
    Micros(ps).to_string()
}

impl std::fmt::Display for Micros {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (whole, frac) = (self.0 / 1_000_000, self.0 % 1_000_000);
        if frac == 0 {
            write!(f, "{whole}")
        } else {
            let digits = format!("{frac:06}");
            write!(f, "{whole}.{}", digits.trim_end_matches('0'))
        }
    }
}

/// `rank 12 (pp3 tp0 dp0)`, with `cp` when the plan has context parallelism.
fn process_name(out: &mut String, rank: u32, layout: Option<&Layout>) {
    let _ = write!(out, "rank {rank}");
    if let Some(l) = layout.filter(|l| rank < l.world()) {
        let c = l.coords(rank);
        let _ = write!(out, " (pp{} tp{}", c.pp, c.tp);
        if l.sizes().cp > 1 {
            let _ = write!(out, " cp{}", c.cp);
        }
        let _ = write!(out, " dp{})", c.dp);
    }
}

/// The streams a rank uses, in id order, with thread names: `compute` for stream 0, `comm` /
/// `comm<id>` for the others, followed by the category when every node on it shares one.
fn streams(rt: &RankTrace) -> Vec<(StreamId, String)> {
    // (stream, the one category on it so far, whether a second one was seen)
    let mut seen: Vec<(StreamId, Category, bool)> = Vec::new();
    for n in rt.nodes() {
        match seen.iter_mut().find(|(s, _, _)| *s == n.stream) {
            Some(entry) => entry.2 |= entry.1 != n.category,
            None => seen.push((n.stream, n.category, false)),
        }
    }
    seen.sort_by_key(|&(s, _, _)| s);
    seen.into_iter()
        .map(|(s, category, mixed)| {
            let base = match s.0 {
                0 => "compute".to_string(),
                1 => "comm".to_string(),
                k => format!("comm{k}"),
            };
            let name = if s.is_compute() || mixed {
                base
            } else {
                format!("{base} {}", category.name())
            };
            (s, name)
        })
        .collect()
}

/// The node's label, or for an unlabelled node a name from what it does.
fn node_name(out: &mut String, trace: &Trace, node: &Node) {
    if node.label != Label::None {
        let _ = write!(out, "{}", trace.display(node.label));
        return;
    }
    let _ = match node.kind {
        NodeKind::Compute { .. } => write!(out, "{}", node.category.name()),
        NodeKind::Delay { .. } => write!(out, "delay"),
        NodeKind::Send { peer, .. } => write!(out, "send→{peer}"),
        NodeKind::Recv { peer, .. } => write!(out, "recv←{peer}"),
        NodeKind::Collective { kind, .. } => {
            write!(
                out,
                "{} {}",
                kind.word(),
                super::CommKind::of(node.category)
            )
        }
    };
}

/// `args` of communication nodes: bytes and peer or group size; on a rank whose schedule
/// splits the backward (`splits`), the pass of its `B` and `W` compute nodes.
fn node_args<W: Write>(w: &mut W, node: &Node, splits: bool) -> io::Result<()> {
    match (node.kind, node.label) {
        (NodeKind::Compute { .. }, Label::Backward { .. }) if splits => {
            return w.write_all(b",\"args\":{\"pass\":\"input gradient\"}");
        }
        (NodeKind::Compute { .. }, Label::Weight { .. }) => {
            return w.write_all(b",\"args\":{\"pass\":\"weight gradient\"}");
        }
        _ => {}
    }
    match node.kind {
        NodeKind::Send { peer, bytes, tag } | NodeKind::Recv { peer, bytes, tag } => write!(
            w,
            ",\"args\":{{\"peer\":{peer},\"bytes\":{},\"tag\":{tag}}}",
            bytes.0
        ),
        NodeKind::Collective { kind, group, bytes } => write!(
            w,
            ",\"args\":{{\"collective\":\"{}\",\"group\":{},\"bytes\":{}}}",
            kind.word(),
            group.0,
            bytes.0
        ),
        NodeKind::Compute { .. } | NodeKind::Delay { .. } => Ok(()),
    }
}
