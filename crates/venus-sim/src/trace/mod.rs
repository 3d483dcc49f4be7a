//! Trace IR: the per-rank node DAG the engine runs.
//!
//! Input: appended node by node through [`TraceBuilder`] (by the schedule lowering, tests and
//! benchmarks). Output: a validated, immutable [`Trace`].
//! Invariants (checked once by [`TraceBuilder::finish`], relied on by the engine): every
//! dependency names a node of the same rank; every peer is a rank below `world`; every
//! collective names an existing group that contains its own rank; the class map, when given,
//! covers the whole world. Dependencies may point forward, so a trace can contain a cycle: the
//! engine reports it, the builder does not forbid it.
//!
//! Layout: one [`RankTrace`] per simulated rank, nodes in flat `Vec`s indexed by [`NodeId`],
//! dependencies in CSR form, groups in one CSR table indexed by [`GroupId`]. A rank's nodes
//! and dependencies live in a body shared by every rank whose trace is the same up to its
//! peers and groups; the rank keeps only its slot tables of peers and groups (interned by the
//! builder as each rank is sealed). Display names
//! are a small [`Label`] enum rendered on demand; free-form names are interned once.

mod build;
pub mod synthetic;

pub use build::{RankBuilder, TraceBuilder, TraceError};

use std::fmt;
use std::sync::Arc;
pub use venus_base::base::Ps;
use venus_base::base::{Bytes, Csr};

/// A rank of the whole job, simulated or not (`0..world`). Every public trace and engine API
/// names a rank with it, never with a bare `u32`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct RankId(pub u32);

impl RankId {
    /// The rank as an index into per-rank arrays of the whole world.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for RankId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A node of one rank's trace (index into that rank's nodes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub u32);

/// A communication group (index into the trace's group table).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupId(pub u32);

/// A per-member size table of an all-to-all-v (index into the trace's size tables).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SizesId(pub u32);

/// An interned free-form name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NameId(pub u32);

/// A per-rank execution stream. Stream 0 is compute; every other stream is a communication
/// stream. Nodes of one stream run one at a time in program order (CUDA stream semantics);
/// different streams of a rank run concurrently.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId(pub u16);

impl StreamId {
    pub const COMPUTE: StreamId = StreamId(0);
    /// The default communication stream.
    pub const COMM: StreamId = StreamId(1);

    pub fn is_compute(self) -> bool {
        self == StreamId::COMPUTE
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CollectiveKind {
    AllReduce,
    ReduceScatter,
    AllGather,
    AllToAll,
    /// An all-to-all whose members send different amounts to each other (uneven MoE
    /// dispatch): the table holds, for a group of n members in increasing rank order, the
    /// n × n bytes member i sends to member j at `i · n + j` ([`Trace::sizes`]).
    AllToAllV(SizesId),
}

impl CollectiveKind {
    pub fn word(self) -> &'static str {
        match self {
            CollectiveKind::AllReduce => "all-reduce",
            CollectiveKind::ReduceScatter => "reduce-scatter",
            CollectiveKind::AllGather => "all-gather",
            CollectiveKind::AllToAll => "all-to-all",
            CollectiveKind::AllToAllV(_) => "all-to-all-v",
        }
    }
}

/// What a node does. `bytes` of a collective is always the full, unsharded buffer: the
/// all-reduce buffer, the reduce-scatter input, the all-gather output, the all-to-all send
/// buffer of one rank (for an all-to-all-v, that rank's row total of the size table; its
/// timing comes from the table alone).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NodeKind {
    /// Busy for `duration` on its stream.
    Compute { duration: Ps },
    /// Rendezvous send to `peer`; matched with the peer's `Recv` of the same tag.
    Send {
        peer: RankId,
        bytes: Bytes,
        tag: u32,
    },
    /// Rendezvous receive from `peer`.
    Recv {
        peer: RankId,
        bytes: Bytes,
        tag: u32,
    },
    /// Starts when every member of `group` reached its matching node.
    Collective {
        kind: CollectiveKind,
        group: GroupId,
        bytes: Bytes,
    },
    /// Holds its stream for `duration` without doing work (a replayed or fixed delay).
    Delay { duration: Ps },
}

/// Reporting category of a node (the report's phases, VenusSim's names where they exist).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Category {
    ForwardCompute,
    BackwardCompute,
    Send,
    Recv,
    TpComm,
    CpComm,
    EpComm,
    AllGradsSync,
    ParamsAllGather,
    EmbeddingSync,
    Optimizer,
    Other,
}

impl Category {
    pub const COUNT: usize = 12;
    pub const ALL: [Category; Category::COUNT] = [
        Category::ForwardCompute,
        Category::BackwardCompute,
        Category::Send,
        Category::Recv,
        Category::TpComm,
        Category::CpComm,
        Category::EpComm,
        Category::AllGradsSync,
        Category::ParamsAllGather,
        Category::EmbeddingSync,
        Category::Optimizer,
        Category::Other,
    ];

    pub fn index(self) -> usize {
        self as usize
    }

    pub fn name(self) -> &'static str {
        match self {
            Category::ForwardCompute => "forward-compute",
            Category::BackwardCompute => "backward-compute",
            Category::Send => "send",
            Category::Recv => "recv",
            Category::TpComm => "tp-comm",
            Category::CpComm => "cp-comm",
            Category::EpComm => "ep-comm",
            Category::AllGradsSync => "all-grads-sync",
            Category::ParamsAllGather => "params-all-gather",
            Category::EmbeddingSync => "embedding-sync",
            Category::Optimizer => "optimizer",
            Category::Other => "other",
        }
    }
}

/// A display name, stored structurally (8–12 bytes) and rendered on demand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Label {
    None,
    /// `F3` (chunk `None`) or `F3.1`.
    Forward {
        microbatch: u32,
        chunk: Option<u16>,
    },
    /// `B3` or `B3.1`.
    Backward {
        microbatch: u32,
        chunk: Option<u16>,
    },
    /// `W3` or `W3.1`: a weight gradient run apart from its backward.
    Weight {
        microbatch: u32,
        chunk: Option<u16>,
    },
    /// `send→pp2`.
    SendTo {
        pp: u32,
    },
    /// `recv←pp1`.
    RecvFrom {
        pp: u32,
    },
    /// An interned name.
    Text(NameId),
    /// An interned name followed by a number: `bucket3`.
    Numbered(NameId, u32),
}

/// One node: what it does, where it runs, how it is reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Node {
    pub kind: NodeKind,
    pub stream: StreamId,
    pub category: Category,
    pub label: Label,
}

/// The rank-independent part of a rank's trace: its nodes in program order, each peer and
/// group written as a slot of the owning rank's tables ([`RankTrace`]), and their
/// dependencies. Ranks whose traces are equal up to their peers and groups (the replicas of a
/// pipeline stage under `--all-ranks`) share one body, so the trace of a 16,384-rank run
/// holds one body per distinct stage rather than one copy of every node per rank.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Body {
    nodes: Vec<Node>,
    /// Row `i`: the deps of node `i`, in the order they were added.
    deps: Csr<NodeId>,
}

/// The nodes of one rank, in program order: a shared [`Body`] and the rank's own peers and
/// groups, which the body names by slot (first use first).
#[derive(Clone, Debug, PartialEq)]
pub struct RankTrace {
    rank: RankId,
    body: Arc<Body>,
    /// Slot `s` of a body's `Send`/`Recv` peer: this rank's peer.
    peers: Box<[RankId]>,
    /// Slot `s` of a body's collective group: this rank's group.
    groups: Box<[GroupId]>,
}

impl RankTrace {
    /// The global rank this trace belongs to.
    pub fn rank(&self) -> RankId {
        self.rank
    }

    pub fn len(&self) -> usize {
        self.body.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.body.nodes.is_empty()
    }

    /// The nodes in program order (`NodeId` order), with this rank's peers and groups.
    pub fn nodes(&self) -> impl ExactSizeIterator<Item = Node> + DoubleEndedIterator + Clone + '_ {
        self.body.nodes.iter().map(move |&n| self.resolve(n))
    }

    pub fn node(&self, id: NodeId) -> Option<Node> {
        self.body.nodes.get(id.0 as usize).map(|&n| self.resolve(n))
    }

    /// Control dependencies of `id` (nodes of this rank that must finish first).
    pub fn deps(&self, id: NodeId) -> &[NodeId] {
        self.body.deps.row(id.0 as usize)
    }

    /// Whether the two ranks share one stored body (equal traces up to peers and groups).
    pub fn shares_body_with(&self, other: &RankTrace) -> bool {
        Arc::ptr_eq(&self.body, &other.body)
    }

    /// A body node with its slots replaced by this rank's peer and group. The builder makes
    /// every slot of a body below its rank's table lengths; an out-of-range slot would be a
    /// builder bug and is left as written rather than panicking.
    fn resolve(&self, mut n: Node) -> Node {
        match &mut n.kind {
            NodeKind::Send { peer, .. } | NodeKind::Recv { peer, .. } => {
                *peer = self.peers.get(peer.index()).copied().unwrap_or(*peer);
            }
            NodeKind::Collective { group, .. } => {
                *group = self.groups.get(group.0 as usize).copied().unwrap_or(*group);
            }
            NodeKind::Compute { .. } | NodeKind::Delay { .. } => {}
        }
        n
    }
}

/// A validated trace: the simulated ranks, the group table, the names and the symmetry
/// classes. Build it with [`TraceBuilder`].
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    world: u32,
    /// Simulated ranks in increasing rank order.
    ranks: Vec<RankTrace>,
    /// CSR: members of group `g` are `group_ranks[group_start[g]..group_start[g + 1]]`, sorted.
    group_start: Vec<u32>,
    group_ranks: Vec<RankId>,
    names: Vec<String>,
    /// Symmetry class of every rank of the world; empty when every rank is its own class.
    class_of: Vec<RankId>,
    /// Row `t`: the all-to-all-v size table `t`, row-major (see [`CollectiveKind::AllToAllV`]).
    sizes: Csr<Bytes>,
}

impl Trace {
    /// Ranks in the whole job (simulated or not).
    pub fn world(&self) -> u32 {
        self.world
    }

    /// The simulated ranks, in increasing rank order.
    pub fn ranks(&self) -> &[RankTrace] {
        &self.ranks
    }

    /// Total nodes over all simulated ranks.
    pub fn node_count(&self) -> usize {
        self.ranks.iter().map(RankTrace::len).sum()
    }

    /// Distinct stored bodies over all simulated ranks ([`RankTrace::shares_body_with`]):
    /// the nodes the trace keeps in memory are those of these bodies only.
    pub fn body_count(&self) -> usize {
        let mut seen: Vec<*const Body> = self.ranks.iter().map(|r| Arc::as_ptr(&r.body)).collect();
        seen.sort_unstable();
        seen.dedup();
        seen.len()
    }

    /// Nodes stored once per distinct body (what [`Trace::node_count`] costs in memory).
    pub fn stored_node_count(&self) -> usize {
        let mut seen: Vec<(*const Body, usize)> = self
            .ranks
            .iter()
            .map(|r| (Arc::as_ptr(&r.body), r.len()))
            .collect();
        seen.sort_unstable();
        seen.dedup();
        seen.iter().map(|&(_, n)| n).sum()
    }

    pub fn group_count(&self) -> usize {
        self.group_start.len().saturating_sub(1)
    }

    /// Members of a group in increasing rank order (empty for an unknown id).
    pub fn group(&self, id: GroupId) -> &[RankId] {
        let g = id.0 as usize;
        match (self.group_start.get(g), self.group_start.get(g + 1)) {
            (Some(&a), Some(&b)) => &self.group_ranks[a as usize..b as usize],
            _ => &[],
        }
    }

    /// An all-to-all-v size table, row-major over its group's members (empty for an unknown
    /// id).
    pub fn sizes(&self, id: SizesId) -> &[Bytes] {
        self.sizes.row(id.0 as usize)
    }

    pub fn name(&self, id: NameId) -> &str {
        self.names.get(id.0 as usize).map_or("?", String::as_str)
    }

    /// Symmetry class of a rank. Ranks of one class are declared to run identical traces up to
    /// a relabelling of ranks that preserves the network (see the engine's module docs).
    pub fn class_of(&self, rank: RankId) -> RankId {
        self.class_of.get(rank.index()).copied().unwrap_or(rank)
    }

    pub fn has_classes(&self) -> bool {
        !self.class_of.is_empty()
    }

    /// Renders a label: `F3.1`, `send→pp2`, an interned name.
    pub fn label(&self, label: Label) -> String {
        LabelDisplay { trace: self, label }.to_string()
    }

    /// A `Display` for a label, for writing without an intermediate `String`.
    pub fn display(&self, label: Label) -> LabelDisplay<'_> {
        LabelDisplay { trace: self, label }
    }
}

pub struct LabelDisplay<'a> {
    trace: &'a Trace,
    label: Label,
}

impl fmt::Display for LabelDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pass = |f: &mut fmt::Formatter<'_>, c: char, mb: u32, chunk: Option<u16>| match chunk {
            Some(ch) => write!(f, "{c}{mb}.{ch}"),
            None => write!(f, "{c}{mb}"),
        };
        match self.label {
            Label::None => f.write_str("-"),
            Label::Forward { microbatch, chunk } => pass(f, 'F', microbatch, chunk),
            Label::Backward { microbatch, chunk } => pass(f, 'B', microbatch, chunk),
            Label::Weight { microbatch, chunk } => pass(f, 'W', microbatch, chunk),
            Label::SendTo { pp } => write!(f, "send→pp{pp}"),
            Label::RecvFrom { pp } => write!(f, "recv←pp{pp}"),
            Label::Text(n) => f.write_str(self.trace.name(n)),
            Label::Numbered(n, i) => write!(f, "{}{i}", self.trace.name(n)),
        }
    }
}

#[cfg(test)]
mod tests;
