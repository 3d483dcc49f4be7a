//! Reader for VenusSim's simplified and template traces → our [`Trace`], so `venusc sim
//! --trace DIR` runs VenusSim's (or our emitted) traces on our engine.
//!
//! Input: the file names of a trace directory and a closure reading a file by name (the
//! library does no I/O), the GPU peak and mfu for compute nodes. Output: a validated
//! [`Trace`], or a [`ReadError`] naming the file, the line and what is wrong.
//!
//! Rules, as VenusSim's reader (simplified_et_feeder.cc:90-181): whitespace-separated
//! tokens; a node count, then per node its id, name, `k dep…` (`-1` for none) and attributes
//! chosen by the name: "send"/"sendrecv" → send, "recv" → recv, "ncclKernel",
//! "ncclDevKernel", "c10d::" or "nccl:" → collective (type: the first of allgather,
//! allreduce, alltoall, broadcast, reducescatter found in the name), "comp_replay" → replay,
//! anything else → compute. Compute takes `max(1 ns, ops / (peak × mfu))` truncated to whole
//! ns, as VenusSim's roofline. A collective's group name is looked up in `comm-group.json`
//! (each rank joins the sub-list holding it); an all-gather's size is VenusSim's per-rank
//! shard, so our full-output `bytes` is n times it. With `trace-template-mapping.txt` the
//! directory holds templates: peers are relative (0 self, 1 next, −1 previous pp rank, from
//! the mapping), only the template ranks are simulated and every other rank joins its
//! template's symmetry class.
//! Invariants: never panics, never hangs: counts are bounded by the tokens present, sizes
//! are checked products, dependency cycles and unmatched sends/receives are reported.
//! Differences from VenusSim's engine (documented, not errors): our P2P is rendezvous where
//! VenusSim's sends are eager, and each rank's P2P and collectives run on streams (one per
//! direction and peer, one per group name) instead of with unlimited concurrency.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::io;

use venus_base::base::{Bytes, FlopsPerSec, Ratio};
use venus_lower::cost::venussim::node_time_ns;
use venus_sim::trace::{
    Category, CollectiveKind, Label, NodeId, NodeKind, Ps, RankId, StreamId, Trace, TraceBuilder,
};

/// Largest node count accepted in one file (VenusSim's demo has about 1,300 per rank).
pub const MAX_NODES: u64 = 1 << 26;

/// What is wrong, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadError {
    pub file: String,
    /// 1-based line, when the problem is at one place.
    pub line: Option<usize>,
    pub message: String,
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{l}: {}", self.file, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

impl std::error::Error for ReadError {}

/// The most of one token of a trace file a message shows: a 100 MB file without whitespace
/// is one token, and it must not become a 100 MB error line.
const SHOWN_TOKEN: usize = 64;

/// A token or name from a trace file as a message shows it: cut to [`SHOWN_TOKEN`]
/// characters and with control characters escaped (an ESC would reach the terminal).
fn shown(token: &str) -> String {
    venus_diag::diag::escape_excerpt(token, SHOWN_TOKEN)
}

/// The longest message kept (a message quoting several names stays well under it).
const MAX_MESSAGE: usize = 1000;

fn rerr(file: &str, line: Option<usize>, message: impl Into<String>) -> ReadError {
    ReadError {
        file: shown(file),
        line,
        message: venus_diag::diag::escape_excerpt(&message.into(), MAX_MESSAGE),
    }
}

/// A node's type, chosen by its name.
#[derive(Clone, Debug, PartialEq)]
enum PKind {
    Comp {
        ops: u64,
    },
    Replay {
        ns: u64,
    },
    Coll {
        kind: CollectiveKind,
        bytes: u64,
        group: String,
    },
    Send {
        bytes: u64,
        src: i64,
        dst: i64,
        tag: u64,
    },
    Recv {
        bytes: u64,
        src: i64,
        dst: i64,
        tag: u64,
    },
}

#[derive(Clone, Debug, PartialEq)]
struct PNode {
    name: String,
    deps: Vec<u32>,
    kind: PKind,
    line: usize,
}

/// One parsed trace file.
#[derive(Clone, Debug, PartialEq)]
struct PFile {
    name: String,
    nodes: Vec<PNode>,
}

struct Tokens<'a> {
    file: &'a str,
    text: &'a str,
    pos: usize,
    line: usize,
}

impl<'a> Tokens<'a> {
    fn next(&mut self) -> Option<(&'a str, usize)> {
        let b = self.text.as_bytes();
        while self.pos < b.len() && b[self.pos].is_ascii_whitespace() {
            if b[self.pos] == b'\n' {
                self.line += 1;
            }
            self.pos += 1;
        }
        if self.pos >= b.len() {
            return None;
        }
        let start = self.pos;
        while self.pos < b.len() && !b[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
        Some((&self.text[start..self.pos], self.line))
    }

    fn need(&mut self, what: &str) -> Result<(&'a str, usize), ReadError> {
        let line = self.line;
        self.next().ok_or_else(|| {
            rerr(
                self.file,
                Some(line),
                format!("file ends early: expected {what}"),
            )
        })
    }

    fn int<T: std::str::FromStr>(&mut self, what: &str) -> Result<(T, usize), ReadError> {
        let (t, line) = self.need(what)?;
        t.parse::<T>().map(|v| (v, line)).map_err(|_| {
            rerr(
                self.file,
                Some(line),
                format!("expected {what}, found `{}`", shown(t)),
            )
        })
    }
}

fn checked_bytes(file: &str, line: usize, elems: u64, elem_bytes: u64) -> Result<u64, ReadError> {
    elems
        .checked_mul(elem_bytes)
        .filter(|&b| b <= 1 << 50)
        .ok_or_else(|| {
            rerr(
                file,
                Some(line),
                format!("absurd message size {elems} x {elem_bytes} bytes"),
            )
        })
}

/// Parses one trace file.
fn parse_file(name: &str, bytes: &[u8]) -> Result<PFile, ReadError> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let line = bytes[..e.valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1;
        rerr(name, Some(line), "not valid UTF-8 text")
    })?;
    let mut t = Tokens {
        file: name,
        text,
        pos: 0,
        line: 1,
    };
    let (n, line) = t.int::<u64>("the node count")?;
    // Each node takes at least five tokens, so the count cannot exceed what the file holds.
    if n > MAX_NODES || n > text.len() as u64 / 5 + 1 {
        return Err(rerr(
            name,
            Some(line),
            format!("node count {n} is larger than the file can hold"),
        ));
    }
    let mut nodes = Vec::with_capacity(n as usize);
    for i in 0..n {
        let (id, line) = t.int::<u64>("a node id")?;
        if id != i {
            return Err(rerr(
                name,
                Some(line),
                format!("node id {id} out of order (expected {i})"),
            ));
        }
        let (node_name, _) = t.need("a node name")?;
        let (k, kline) = t.int::<i64>("the dependency count (or -1)")?;
        let mut deps = Vec::new();
        if k != -1 {
            if k < 0 || k as u64 > n {
                return Err(rerr(
                    name,
                    Some(kline),
                    format!("dependency count {k} of node {i} is out of range"),
                ));
            }
            for _ in 0..k {
                let (d, dline) = t.int::<u64>("a dependency id")?;
                if d >= n {
                    return Err(rerr(
                        name,
                        Some(dline),
                        format!("node {i} depends on node {d}, but the file has {n} nodes"),
                    ));
                }
                deps.push(d as u32);
            }
        }
        let kind = parse_attrs(&mut t, node_name)?;
        nodes.push(PNode {
            name: node_name.to_string(),
            deps,
            kind,
            line,
        });
    }
    if let Some((tok, line)) = t.next() {
        return Err(rerr(
            name,
            Some(line),
            format!("unexpected `{}` after the last of {n} nodes", shown(tok)),
        ));
    }
    check_acyclic(name, &nodes)?;
    Ok(PFile {
        name: name.to_string(),
        nodes,
    })
}

/// The node type VenusSim's reader derives from a name (simplified_et_feeder.cc:153-181).
fn parse_attrs(t: &mut Tokens, name: &str) -> Result<PKind, ReadError> {
    let file = t.file;
    if name.contains("send") || name.contains("recv") {
        let send = name.contains("send");
        let (elems, line) = t.int::<u64>("num_elem")?;
        let (eb, _) = t.int::<u64>("elem_bytes")?;
        let (src, _) = t.int::<i64>("src")?;
        let (dst, _) = t.int::<i64>("dst")?;
        let (tag, _) = t.int::<u64>("tag")?;
        let bytes = checked_bytes(file, line, elems, eb)?;
        return Ok(if send {
            PKind::Send {
                bytes,
                src,
                dst,
                tag,
            }
        } else {
            PKind::Recv {
                bytes,
                src,
                dst,
                tag,
            }
        });
    }
    if ["ncclKernel", "ncclDevKernel", "c10d::", "nccl:"]
        .iter()
        .any(|p| name.contains(p))
    {
        let (elems, line) = t.int::<u64>("num_elem")?;
        let (eb, _) = t.int::<u64>("elem_bytes")?;
        let (group, _) = t.need("a comm group name")?;
        let bytes = checked_bytes(file, line, elems, eb)?;
        // std::map order in VenusSim: allgather, allreduce, alltoall, broadcast, reducescatter.
        let kind = if name.contains("allgather") {
            CollectiveKind::AllGather
        } else if name.contains("allreduce") {
            CollectiveKind::AllReduce
        } else if name.contains("alltoall") {
            CollectiveKind::AllToAll
        } else if name.contains("broadcast") {
            return Err(rerr(
                file,
                Some(line),
                format!(
                    "collective `{}` is a broadcast, which venusc does not simulate",
                    shown(name)
                ),
            ));
        } else if name.contains("reducescatter") {
            CollectiveKind::ReduceScatter
        } else {
            return Err(rerr(
                file,
                Some(line),
                format!(
                    "collective `{}` names no type (allgather, allreduce, alltoall, reducescatter)",
                    shown(name)
                ),
            ));
        };
        return Ok(PKind::Coll {
            kind,
            bytes,
            group: group.to_string(),
        });
    }
    if name.contains("comp_replay") {
        let (ns, _) = t.int::<u64>("a duration in ns")?;
        return Ok(PKind::Replay { ns });
    }
    let (ops, _) = t.int::<u64>("num_ops")?;
    let (_size, _) = t.int::<u64>("tensor_size")?;
    Ok(PKind::Comp { ops })
}

/// Kahn's algorithm; a leftover node lies on (or after) a cycle.
fn check_acyclic(file: &str, nodes: &[PNode]) -> Result<(), ReadError> {
    let n = nodes.len();
    let mut indeg = vec![0u32; n];
    let mut users: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (i, nd) in nodes.iter().enumerate() {
        for &d in &nd.deps {
            indeg[i] += 1;
            users[d as usize].push(i as u32);
        }
    }
    let mut stack: Vec<u32> = (0..n as u32).filter(|&i| indeg[i as usize] == 0).collect();
    let mut seen = 0;
    while let Some(i) = stack.pop() {
        seen += 1;
        for &u in &users[i as usize] {
            indeg[u as usize] -= 1;
            if indeg[u as usize] == 0 {
                stack.push(u);
            }
        }
    }
    if seen == n {
        return Ok(());
    }
    let stuck = (0..n).find(|&i| indeg[i] > 0).unwrap_or(0);
    Err(rerr(
        file,
        Some(nodes[stuck].line),
        format!(
            "dependency cycle through node {stuck} `{}`",
            nodes[stuck].name
        ),
    ))
}

/// Reads `comm-group.json`: group name → list of member lists.
fn parse_groups(file: &str, bytes: &[u8]) -> Result<HashMap<String, Vec<Vec<u32>>>, ReadError> {
    let v: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|e| rerr(file, Some(e.line()), format!("invalid JSON: {e}")))?;
    let obj = v
        .as_object()
        .ok_or_else(|| rerr(file, None, "the top level is not an object"))?;
    let mut out = HashMap::new();
    for (name, lists) in obj {
        let bad = || {
            rerr(
                file,
                None,
                format!("group `{}` is not a list of rank lists", shown(name)),
            )
        };
        let lists = lists.as_array().ok_or_else(bad)?;
        let mut groups = Vec::with_capacity(lists.len());
        for l in lists {
            let members = l
                .as_array()
                .ok_or_else(bad)?
                .iter()
                .map(|r| {
                    r.as_u64()
                        .filter(|&r| r <= u64::from(u32::MAX))
                        .map(|r| r as u32)
                })
                .collect::<Option<Vec<u32>>>()
                .ok_or_else(bad)?;
            groups.push(members);
        }
        out.insert(name.clone(), groups);
    }
    Ok(out)
}

/// Loads a trace directory. `files` are the names in it; `read` returns a file's bytes by
/// name (it may also be asked for `../sim-config/comm-group.json`, VenusSim's location).
pub fn read_trace(
    files: &[String],
    read: &mut dyn FnMut(&str) -> io::Result<Vec<u8>>,
    peak: FlopsPerSec,
    mfu: Ratio,
) -> Result<Trace, ReadError> {
    let groups = if files.iter().any(|f| f == "comm-group.json") {
        let name = "comm-group.json";
        let bytes = read(name).map_err(|e| rerr(name, None, format!("cannot read: {e}")))?;
        Some(parse_groups(name, &bytes)?)
    } else {
        // VenusSim's place for it; absent is fine (no collectives), anything else that
        // cannot be read (a FIFO, a device) is an error, not a silent "no groups".
        let alt = "../sim-config/comm-group.json";
        match read(alt) {
            Ok(b) => Some(parse_groups(alt, &b)?),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(rerr(alt, None, format!("cannot read: {e}"))),
        }
    };
    let mut load = |name: &str| -> Result<Vec<u8>, ReadError> {
        read(name).map_err(|e| rerr(name, None, format!("cannot read: {e}")))
    };
    let rate = Rate { peak, mfu };
    if files.iter().any(|f| f == "trace-template-mapping.txt") {
        read_templates(files, &mut load, groups.as_ref(), rate)
    } else {
        read_simplified(files, &mut load, groups.as_ref(), rate)
    }
}

#[derive(Clone, Copy)]
struct Rate {
    peak: FlopsPerSec,
    mfu: Ratio,
}

/// `<prefix>.<n>.et` → (prefix, n); templates have `~template~` in the prefix.
fn rank_file(name: &str) -> Option<(&str, u32)> {
    let stem = name.strip_suffix(".et")?;
    let (prefix, n) = stem.rsplit_once('.')?;
    Some((prefix, n.parse().ok()?))
}

fn read_simplified(
    files: &[String],
    load: &mut dyn FnMut(&str) -> Result<Vec<u8>, ReadError>,
    groups: Option<&HashMap<String, Vec<Vec<u32>>>>,
    rate: Rate,
) -> Result<Trace, ReadError> {
    let mut by_rank: BTreeMap<u32, &str> = BTreeMap::new();
    let mut prefix: Option<&str> = None;
    for f in files {
        let Some((p, r)) = rank_file(f) else { continue };
        if p.contains("~template~") {
            continue;
        }
        match prefix {
            None => prefix = Some(p),
            Some(q) if q != p => {
                return Err(rerr(
                    f,
                    None,
                    format!(
                        "two trace prefixes in one directory: `{}` and `{}`",
                        shown(q),
                        shown(p)
                    ),
                ))
            }
            _ => {}
        }
        by_rank.insert(r, f);
    }
    if by_rank.is_empty() {
        return Err(rerr(".", None, "no `<name>.<rank>.et` trace files"));
    }
    let world = by_rank.len() as u32;
    if let Some((&r, f)) = by_rank.iter().next_back().filter(|(&r, _)| r + 1 != world) {
        return Err(rerr(
            f,
            None,
            format!(
                "rank {r} but only {world} trace files: ranks must be 0..{}",
                world - 1
            ),
        ));
    }
    let mut parsed = Vec::with_capacity(by_rank.len());
    for (&r, f) in &by_rank {
        parsed.push((r, parse_file(f, &load(f)?)?));
    }
    let mut b = TraceBuilder::new(world);
    let mut p2p = P2pCheck::default();
    for (r, pf) in &parsed {
        add_rank(&mut b, *r, pf, groups, rate, &|x| Some(x), &mut p2p)?;
    }
    p2p.check()?;
    b.finish().map_err(|e| rerr(".", None, e.to_string()))
}

fn read_templates(
    files: &[String],
    load: &mut dyn FnMut(&str) -> Result<Vec<u8>, ReadError>,
    groups: Option<&HashMap<String, Vec<Vec<u32>>>>,
    rate: Rate,
) -> Result<Trace, ReadError> {
    let mname = "trace-template-mapping.txt";
    let mbytes = load(mname)?;
    let mtext = std::str::from_utf8(&mbytes).map_err(|e| {
        let line = mbytes[..e.valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1;
        rerr(mname, Some(line), "not valid UTF-8 text")
    })?;
    let mut t = Tokens {
        file: mname,
        text: mtext,
        pos: 0,
        line: 1,
    };
    let (world, line) = t.int::<u32>("the rank count")?;
    if world == 0 || u64::from(world) > mtext.len() as u64 / 8 + 1 {
        return Err(rerr(
            mname,
            Some(line),
            format!("rank count {world} does not fit the file"),
        ));
    }
    // rank → (template, prev, next)
    let mut map: Vec<Option<(u32, u32, u32)>> = vec![None; world as usize];
    let mut lines: Vec<usize> = vec![0; world as usize];
    for _ in 0..world {
        let (r, line) = t.int::<u32>("a rank")?;
        let (tr, _) = t.int::<u32>("a template rank")?;
        let (prev, _) = t.int::<u32>("the previous pp rank")?;
        let (next, _) = t.int::<u32>("the next pp rank")?;
        if [r, tr, prev, next].iter().any(|&x| x >= world) {
            return Err(rerr(
                mname,
                Some(line),
                format!("rank out of range 0..{world}"),
            ));
        }
        if map[r as usize].replace((tr, prev, next)).is_some() {
            return Err(rerr(mname, Some(line), format!("rank {r} is mapped twice")));
        }
        lines[r as usize] = line;
    }
    if let Some((tok, line)) = t.next() {
        return Err(rerr(
            mname,
            Some(line),
            format!("unexpected `{}` after {world} ranks", shown(tok)),
        ));
    }
    let map: Vec<(u32, u32, u32)> = map
        .into_iter()
        .enumerate()
        .map(|(r, m)| m.ok_or_else(|| rerr(mname, None, format!("rank {r} is not mapped"))))
        .collect::<Result<_, _>>()?;
    let mut templates: BTreeMap<u32, &str> = BTreeMap::new();
    for f in files {
        if let Some((p, r)) = rank_file(f) {
            if p.ends_with("~template~") {
                templates.insert(r, f);
            }
        }
    }
    let mut b = TraceBuilder::new(world);
    b.set_classes(map.iter().map(|m| RankId(m.0)).collect());
    let mut p2p = P2pCheck::default();
    let mut used: Vec<u32> = map.iter().map(|m| m.0).collect();
    used.sort_unstable();
    used.dedup();
    // A template rank runs its own template: were rank 0 to run rank 2's and rank 2 rank 0's,
    // each template would stand for a rank whose trace it is not.
    for (r, m) in map.iter().enumerate() {
        let own = map[m.0 as usize].0;
        if own != m.0 {
            return Err(rerr(
                mname,
                Some(lines[m.0 as usize]),
                format!(
                    "rank {r} runs the template of rank {}, which itself runs rank {own}'s: a \
                     template rank must run its own",
                    m.0
                ),
            ));
        }
    }
    for tr in used {
        let f = templates.get(&tr).ok_or_else(|| {
            rerr(
                mname,
                None,
                format!("template rank {tr} has no `~template~.{tr}.et` file"),
            )
        })?;
        let pf = parse_file(f, &load(f)?)?;
        let (_, prev, next) = map[tr as usize];
        let resolve = move |x: i64| match x {
            0 => Some(tr as i64),
            1 => Some(next as i64),
            -1 => Some(prev as i64),
            _ => None,
        };
        add_rank(&mut b, tr, &pf, groups, rate, &resolve, &mut p2p)?;
    }
    p2p.check()?;
    b.finish().map_err(|e| rerr(mname, None, e.to_string()))
}

/// Every send and receive seen, to report unmatched ones.
#[derive(Default)]
struct P2pCheck {
    /// (src, dst, tag) → (bytes, file, line) of sends and receives.
    sends: HashMap<(u32, u32, u64), (u64, String, usize)>,
    recvs: HashMap<(u32, u32, u64), (u64, String, usize)>,
}

impl P2pCheck {
    fn check(&self) -> Result<(), ReadError> {
        let mut keys: Vec<_> = self.sends.keys().collect();
        keys.sort_unstable();
        for k in keys {
            let (bytes, file, line) = &self.sends[k];
            match self.recvs.get(k) {
                None => {
                    return Err(rerr(
                        file,
                        Some(*line),
                        format!(
                            "send from {} to {} with tag {} has no matching receive",
                            k.0, k.1, k.2
                        ),
                    ))
                }
                Some((rb, rf, rl)) if rb != bytes => {
                    return Err(rerr(
                        rf,
                        Some(*rl),
                        format!(
                            "receive of {rb} bytes matches a send of {bytes} bytes ({file}:{line})"
                        ),
                    ))
                }
                _ => {}
            }
        }
        let mut keys: Vec<_> = self
            .recvs
            .keys()
            .filter(|k| !self.sends.contains_key(k))
            .collect();
        keys.sort_unstable();
        if let Some(k) = keys.first() {
            let (_, file, line) = &self.recvs[k];
            return Err(rerr(
                file,
                Some(*line),
                format!(
                    "receive from {} to {} with tag {} has no matching send",
                    k.0, k.1, k.2
                ),
            ));
        }
        Ok(())
    }
}

/// Appends one rank's nodes.
fn add_rank(
    b: &mut TraceBuilder,
    rank: u32,
    pf: &PFile,
    groups: Option<&HashMap<String, Vec<Vec<u32>>>>,
    rate: Rate,
    resolve: &dyn Fn(i64) -> Option<i64>,
    p2p: &mut P2pCheck,
) -> Result<(), ReadError> {
    let world = b.world();
    let file = pf.name.as_str();
    let mut streams: Vec<StreamKey> = Vec::new();
    let mut nodes = Vec::with_capacity(pf.nodes.len());
    for nd in &pf.nodes {
        let line = Some(nd.line);
        let peer_of = |x: i64| -> Result<u32, ReadError> {
            resolve(x)
                .filter(|&r| r >= 0 && r < i64::from(world))
                .map(|r| r as u32)
                .ok_or_else(|| {
                    rerr(
                        file,
                        line,
                        format!("peer {x} is not a rank of the world of {world}"),
                    )
                })
        };
        let (kind, stream, category) = match &nd.kind {
            PKind::Comp { ops } => {
                let ns = node_time_ns(*ops, rate.peak, rate.mfu);
                (
                    NodeKind::Compute {
                        duration: Ps::from_ns(ns),
                    },
                    StreamId::COMPUTE,
                    compute_category(&nd.name),
                )
            }
            PKind::Replay { ns } => (
                NodeKind::Compute {
                    duration: Ps::from_ns(*ns),
                },
                StreamId::COMPUTE,
                compute_category(&nd.name),
            ),
            PKind::Send {
                bytes,
                src,
                dst,
                tag,
            }
            | PKind::Recv {
                bytes,
                src,
                dst,
                tag,
            } => {
                let send = matches!(nd.kind, PKind::Send { .. });
                let (s, d) = (peer_of(*src)?, peer_of(*dst)?);
                let (me, peer) = if send { (s, d) } else { (d, s) };
                if me != rank {
                    return Err(rerr(
                        file,
                        line,
                        format!(
                            "`{}` on rank {rank} names rank {me} as its own side",
                            nd.name
                        ),
                    ));
                }
                let key = (s, d, *tag);
                let table = if send { &mut p2p.sends } else { &mut p2p.recvs };
                if table
                    .insert(key, (*bytes, file.to_string(), nd.line))
                    .is_some()
                {
                    return Err(rerr(
                        file,
                        line,
                        format!(
                            "second {} from {s} to {d} with tag {tag}",
                            if send { "send" } else { "receive" }
                        ),
                    ));
                }
                let stream = stream_for(&mut streams, StreamKey::P2p { send, peer })
                    .ok_or_else(|| too_many_streams(file, line))?;
                let tag32 = u32::try_from(*tag)
                    .map_err(|_| rerr(file, line, format!("tag {tag} is too large")))?;
                let bytes = Bytes(*bytes);
                if send {
                    (
                        NodeKind::Send {
                            peer: RankId(peer),
                            bytes,
                            tag: tag32,
                        },
                        stream,
                        Category::Send,
                    )
                } else {
                    (
                        NodeKind::Recv {
                            peer: RankId(peer),
                            bytes,
                            tag: tag32,
                        },
                        stream,
                        Category::Recv,
                    )
                }
            }
            PKind::Coll { kind, bytes, group } => {
                let lists = groups.and_then(|g| g.get(group)).ok_or_else(|| {
                    rerr(file, line, format!("collective group `{}` is not in comm-group.json (missing file or name)", shown(group)))
                })?;
                let members = lists.iter().find(|l| l.contains(&rank)).ok_or_else(|| {
                    rerr(
                        file,
                        line,
                        format!("rank {rank} is in no `{}` of comm-group.json", shown(group)),
                    )
                })?;
                let full = if *kind == CollectiveKind::AllGather {
                    bytes
                        .checked_mul(members.len() as u64)
                        .ok_or_else(|| rerr(file, line, "absurd all-gather size"))?
                } else {
                    *bytes
                };
                let gid = b.group(&members.iter().copied().map(RankId).collect::<Vec<_>>());
                let stream = stream_for(&mut streams, StreamKey::Group(group.clone()))
                    .ok_or_else(|| too_many_streams(file, line))?;
                (
                    NodeKind::Collective {
                        kind: *kind,
                        group: gid,
                        bytes: Bytes(full),
                    },
                    stream,
                    coll_category(&nd.name),
                )
            }
        };
        nodes.push((kind, stream, category, nd));
    }
    for (kind, stream, category, nd) in nodes {
        let label = Label::Text(b.name(&nd.name));
        let deps: Vec<NodeId> = nd.deps.iter().map(|&d| NodeId(d)).collect();
        b.rank(RankId(rank))
            .push(kind, stream, category, label, &deps);
    }
    Ok(())
}

/// A communication stream of a rank: one per (direction, peer) and one per group name.
#[derive(Clone, Debug, PartialEq, Eq)]
enum StreamKey {
    P2p { send: bool, peer: u32 },
    Group(String),
}

/// Streams 1..=65,535 in order of first use, each its own, so a send to one neighbour never
/// holds a receive from the other, nor a collective. (Streams used to wrap at 255, and the
/// 256th group of a rank then shared stream 1 with the first: an acyclic file read as a
/// dependency cycle.) `None` past the last stream id.
fn stream_for(streams: &mut Vec<StreamKey>, key: StreamKey) -> Option<StreamId> {
    let i = match streams.iter().position(|k| *k == key) {
        Some(i) => i,
        None => {
            streams.push(key);
            streams.len() - 1
        }
    };
    u16::try_from(i + 1).ok().map(StreamId)
}

fn too_many_streams(file: &str, line: Option<usize>) -> ReadError {
    rerr(
        file,
        line,
        format!(
            "more than {} communication streams (peers and groups) on one rank",
            u16::MAX
        ),
    )
}

fn compute_category(name: &str) -> Category {
    if name.contains("forward") {
        Category::ForwardCompute
    } else if name.contains("backward") {
        Category::BackwardCompute
    } else {
        Category::Other
    }
}

fn coll_category(name: &str) -> Category {
    if name.contains("grad_reducescatter") || name.contains("grad_allreduce") {
        Category::AllGradsSync
    } else if name.contains("param_allgather") {
        Category::ParamsAllGather
    } else if name.contains("embedding") {
        Category::EmbeddingSync
    } else {
        Category::Other
    }
}
