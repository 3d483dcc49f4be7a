//! Perfetto export (`venusc sim --timeline FILE.json`): trace + timeline → a Chrome/Perfetto
//! JSON trace that opens in ui.perfetto.dev.
//!
//! Input: the simulated [`Trace`], its [`Timeline`], [`PerfettoOptions`]. Output: written
//! incrementally to any [`Write`]: `{"displayTimeUnit":"ns","traceEvents":[...]}` with, per
//! simulated rank, a process (`pid` = rank, named `rank 12 (pp3 tp0 dp0)` when a layout is
//! given), one thread per stream (`tid` = stream id, named `compute`, `comm`, `comm2 recv`,
//! ...), and one complete event (`"ph":"X"`) per node, named by its label (`F3.1`,
//! `send→pp2`) with the node's category as `cat`; a compute node of a pass has its
//! `microbatch`, `chunk` (interleaved) and `pass` in `args` (`forward`, `backward`, or for a
//! schedule that splits the backward `input gradient` and `weight gradient`). After the
//! slices of a rank, a counter track `activations in flight` (microbatches whose activations
//! the rank holds: from the start of a (microbatch, chunk)'s first forward node to the end of
//! its last backward node, or weight-gradient node when the schedule splits them; the memory
//! model's in-flight count, `schedule::measure_in_flight`), with their activation `bytes` too
//! when the options carry each stage's bytes per microbatch; after every rank, one flow
//! (`"ph":"s"`/`"f"`, `cat` `p2p`) per send whose receive is exported too, from the moment
//! both sides were posted to the end of the receive.
//! Invariants: nothing is buffered beyond one event; times are exact decimal microseconds
//! (`ts`/`dur` from integer picoseconds, no float rounding); output order is rank order, then
//! metadata, then nodes in program order, so it is deterministic.

use std::fmt::Write as _;
use std::io::{self, BufWriter, Write};

use venus_plan::plan::layout::Layout;
use venus_sim::engine::Timeline;
use venus_sim::trace::{Category, Label, Node, NodeId, NodeKind, Ps, RankTrace, StreamId, Trace};

/// What to export.
#[derive(Clone, Copy, Debug, Default)]
pub struct PerfettoOptions<'a> {
    /// Only these ranks (simulated ones; others are skipped). `None`: every simulated rank.
    pub ranks: Option<&'a [u32]>,
    /// The rank grid, for process names with coordinates (`Layout::for_scenario`).
    pub layout: Option<&'a Layout>,
    /// Activation bytes of one (microbatch, chunk) per pipeline stage (the memory model's
    /// activations at the peak over its in-flight count, [`activation_bytes_per_microbatch`]);
    /// with `layout`, the in-flight counter also gives `bytes`.
    pub activation_bytes: Option<&'a [u64]>,
}

/// Activation bytes one (microbatch, chunk) holds on each pipeline stage: the memory model's
/// activations at the stage's peak over the microbatches in flight then.
pub fn activation_bytes_per_microbatch(memory: &[venus_plan::plan::StageMemory]) -> Vec<u64> {
    memory
        .iter()
        .map(|m| m.activations.0 / m.in_flight.max(1))
        .collect()
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
        .filter(|rt| ranks.is_none_or(|keep| keep.contains(&rt.rank().0)))
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
        let rank = rt.rank().0;
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
        let splits = rt.nodes().any(|n| matches!(n.label, Label::Weight { .. }));
        for (k, node) in rt.nodes().enumerate() {
            let (Some(&Ps(start)), Some(&Ps(end))) = (starts.get(k), ends.get(k)) else {
                continue;
            };
            scratch.clear();
            node_name(&mut scratch, trace, &node);
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
            node_args(&mut w, &node, splits)?;
            w.write_all(b"}")?;
            events += 1;
        }
        let per_microbatch = match (opts.activation_bytes, opts.layout) {
            (Some(bytes), Some(l)) if rank < l.world() => {
                bytes.get(l.coords(rank).pp as usize).copied()
            }
            _ => None,
        };
        for (t, n) in in_flight(rt, starts, ends, splits) {
            sep(&mut w, &mut first)?;
            write!(
                w,
                "\n{{\"ph\":\"C\",\"name\":\"activations in flight\",\"pid\":{rank},\"ts\":{},\"args\":{{\"microbatches\":{n}",
                Micros(t)
            )?;
            if let Some(b) = per_microbatch {
                write!(w, ",\"bytes\":{}", b.saturating_mul(n))?;
            }
            w.write_all(b"}}")?;
        }
    }
    flows(&mut w, &mut first, trace, timeline, opts)?;
    w.write_all(b"\n]}\n")?;
    w.flush()?;
    Ok(events)
}

/// The (time, count) steps of a rank's microbatches in flight: +1 at the start of the first
/// forward node of a (microbatch, chunk), −1 at the end of its last backward node (its last
/// weight-gradient node when `splits`). Releases before holds at one instant; one step per
/// instant; empty for a rank that runs no labelled pass.
fn in_flight(rt: &RankTrace, starts: &[Ps], ends: &[Ps], splits: bool) -> Vec<(u64, u64)> {
    use std::collections::BTreeMap;
    let mut hold: BTreeMap<(u32, Option<u16>), u64> = BTreeMap::new();
    let mut free: BTreeMap<(u32, Option<u16>), u64> = BTreeMap::new();
    for (k, node) in rt.nodes().enumerate() {
        let (Some(&Ps(a)), Some(&Ps(b))) = (starts.get(k), ends.get(k)) else {
            continue;
        };
        match node.label {
            Label::Forward { microbatch, chunk } => {
                let t = hold.entry((microbatch, chunk)).or_insert(a);
                *t = (*t).min(a);
            }
            Label::Backward { microbatch, chunk } if !splits => {
                let t = free.entry((microbatch, chunk)).or_insert(b);
                *t = (*t).max(b);
            }
            Label::Weight { microbatch, chunk } => {
                let t = free.entry((microbatch, chunk)).or_insert(b);
                *t = (*t).max(b);
            }
            _ => {}
        }
    }
    let mut steps: Vec<(u64, i64)> = hold.values().map(|&t| (t, 1)).collect();
    steps.extend(free.values().map(|&t| (t, -1)));
    steps.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::new();
    let mut live = 0i64;
    for (t, d) in steps {
        live = (live + d).max(0);
        match out.last_mut() {
            Some(last) if last.0 == t => last.1 = live as u64,
            _ => out.push((t, live as u64)),
        }
    }
    out
}

/// One flow per send whose matching receive is exported: `s` on the sender's stream when the
/// transfer starts (both sides posted), `f` on the receiver's stream at the end of the
/// receive (bound to the enclosing slice). Ids count from 1 in rank, then program order.
fn flows<W: Write>(
    w: &mut W,
    first: &mut bool,
    trace: &Trace,
    timeline: &Timeline,
    opts: &PerfettoOptions<'_>,
) -> io::Result<()> {
    let exported = |rank: u32| opts.ranks.is_none_or(|keep| keep.contains(&rank));
    let partner = super::attribution::partners(trace, timeline);
    let span = |r: usize, k: usize| -> Option<(u64, u64)> {
        Some((timeline.starts(r).get(k)?.0, timeline.ends(r).get(k)?.0))
    };
    let mut id = 0u64;
    for (r, rt) in trace.ranks().iter().enumerate() {
        for (k, node) in rt.nodes().enumerate() {
            let NodeKind::Send { .. } = node.kind else {
                continue;
            };
            let Some((pr, pk)) = partner[r][k] else {
                continue;
            };
            let Some(peer) = trace.ranks().get(pr) else {
                continue;
            };
            let (Some((ss, se)), Some((rs, re))) = (span(r, k), span(pr, pk)) else {
                continue;
            };
            if !exported(rt.rank().0) || !exported(peer.rank().0) {
                continue;
            }
            id += 1;
            let begin = ss.max(rs).min(se);
            // Inside the receive's slice where it has a length, never before the flow's start.
            let end = re.saturating_sub(1).max(rs).max(begin);
            sep(w, first)?;
            write!(
                w,
                "\n{{\"ph\":\"s\",\"name\":\"p2p\",\"cat\":\"p2p\",\"id\":{id},\"pid\":{},\"tid\":{},\"ts\":{}}}",
                rt.rank(),
                node.stream.0,
                Micros(begin)
            )?;
            sep(w, first)?;
            write!(
                w,
                "\n{{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"p2p\",\"cat\":\"p2p\",\"id\":{id},\"pid\":{},\"tid\":{},\"ts\":{}}}",
                peer.rank(),
                peer.node(NodeId(pk as u32)).map_or(0, |n| n.stream.0),
                Micros(end)
            )?;
        }
    }
    Ok(())
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

/// `args` of communication nodes: bytes and peer or group size; of a pass's compute node,
/// its microbatch, chunk (when interleaved) and pass (`input gradient` for a `B` on a rank
/// whose schedule splits the backward, `splits`).
fn node_args<W: Write>(w: &mut W, node: &Node, splits: bool) -> io::Result<()> {
    let pass = match node.label {
        Label::Forward { microbatch, chunk } => Some(("forward", microbatch, chunk)),
        Label::Backward { microbatch, chunk } if splits => {
            Some(("input gradient", microbatch, chunk))
        }
        Label::Backward { microbatch, chunk } => Some(("backward", microbatch, chunk)),
        Label::Weight { microbatch, chunk } => Some(("weight gradient", microbatch, chunk)),
        _ => None,
    };
    if let (NodeKind::Compute { .. }, Some((pass, microbatch, chunk))) = (node.kind, pass) {
        write!(w, ",\"args\":{{\"microbatch\":{microbatch}")?;
        if let Some(c) = chunk {
            write!(w, ",\"chunk\":{c}")?;
        }
        return write!(w, ",\"pass\":\"{pass}\"}}");
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
