//! Incremental construction of a [`Trace`]: append nodes per rank, intern groups and names,
//! then validate once in [`TraceBuilder::finish`].

use super::{
    Body, Category, CollectiveKind, GroupId, Label, NameId, Node, NodeId, NodeKind, RankId,
    RankTrace, SizesId, StreamId, Trace,
};
use rustc_hash::{FxHashMap as HashMap, FxHasher};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use venus_base::base::Bytes;
use venus_base::base::Csr;

/// Why a built trace is invalid. These are bugs of the producer (the lowering), not user errors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceError {
    /// More than `u32::MAX` nodes on one rank, or an id that does not fit.
    TooLarge,
    RankOutOfRange {
        rank: RankId,
        world: u32,
    },
    PeerOutOfRange {
        rank: RankId,
        node: NodeId,
        peer: RankId,
    },
    DepOutOfRange {
        rank: RankId,
        node: NodeId,
        dep: NodeId,
    },
    UnknownGroup {
        rank: RankId,
        node: NodeId,
        group: GroupId,
    },
    NotAMember {
        rank: RankId,
        node: NodeId,
        group: GroupId,
    },
    EmptyGroup,
    GroupRankOutOfRange {
        rank: RankId,
        world: u32,
    },
    ClassMapLength {
        len: usize,
        world: u32,
    },
    /// An all-to-all-v names a size table the builder never interned.
    UnknownSizes {
        rank: RankId,
        node: NodeId,
        sizes: SizesId,
    },
    /// An all-to-all-v's size table is not members × members.
    SizesShape {
        rank: RankId,
        node: NodeId,
        len: usize,
        members: usize,
    },
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceError::TooLarge => write!(f, "trace too large for 32-bit ids"),
            TraceError::RankOutOfRange { rank, world } => {
                write!(f, "rank {rank} is outside the world of {world} ranks")
            }
            TraceError::PeerOutOfRange { rank, node, peer } => {
                write!(
                    f,
                    "node {} of rank {rank} names peer rank {peer}, outside the world",
                    node.0
                )
            }
            TraceError::DepOutOfRange { rank, node, dep } => {
                write!(
                    f,
                    "node {} of rank {rank} depends on missing node {}",
                    node.0, dep.0
                )
            }
            TraceError::UnknownGroup { rank, node, group } => {
                write!(
                    f,
                    "node {} of rank {rank} names unknown group {}",
                    node.0, group.0
                )
            }
            TraceError::NotAMember { rank, node, group } => {
                write!(
                    f,
                    "node {} of rank {rank} uses group {} without being a member",
                    node.0, group.0
                )
            }
            TraceError::EmptyGroup => write!(f, "a group has no members"),
            TraceError::GroupRankOutOfRange { rank, world } => {
                write!(
                    f,
                    "group member {rank} is outside the world of {world} ranks"
                )
            }
            TraceError::ClassMapLength { len, world } => {
                write!(
                    f,
                    "class map has {len} entries for a world of {world} ranks"
                )
            }
            TraceError::UnknownSizes { rank, node, sizes } => {
                write!(
                    f,
                    "node {} of rank {rank} names unknown size table {}",
                    node.0, sizes.0
                )
            }
            TraceError::SizesShape {
                rank,
                node,
                len,
                members,
            } => {
                write!(
                    f,
                    "node {} of rank {rank} has a size table of {len} entries for {members} members",
                    node.0
                )
            }
        }
    }
}

impl std::error::Error for TraceError {}

/// The nodes of one rank under construction.
#[derive(Clone, Debug, Default)]
pub struct RankBuilder {
    nodes: Vec<Node>,
    /// `(node, dep)` pairs in insertion order; sorted into CSR by `finish`.
    edges: Vec<(u32, u32)>,
}

impl RankBuilder {
    /// Appends a node that runs after `deps` (nodes of this rank, earlier or later) and returns
    /// its id.
    pub fn push(
        &mut self,
        kind: NodeKind,
        stream: StreamId,
        category: Category,
        label: Label,
        deps: &[NodeId],
    ) -> NodeId {
        let id = self.nodes.len() as u32;
        self.nodes.push(Node {
            kind,
            stream,
            category,
            label,
        });
        self.edges.extend(deps.iter().map(|d| (id, d.0)));
        NodeId(id)
    }

    /// Adds a dependency after the fact (`node` runs after `dep`).
    pub fn add_dep(&mut self, node: NodeId, dep: NodeId) {
        self.edges.push((node.0, dep.0));
    }

    /// The id the next `push` returns.
    pub fn next_id(&self) -> NodeId {
        NodeId(self.nodes.len() as u32)
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Validates the dependencies and splits the rank into its rank-independent body (peers
    /// and groups replaced by slots, first use first) and its slot tables.
    fn into_parts(mut self, rank: RankId) -> Result<(Body, SlotTable, SlotTable), TraceError> {
        let n = self.nodes.len();
        if n >= u32::MAX as usize || self.edges.len() >= u32::MAX as usize {
            return Err(TraceError::TooLarge);
        }
        if let Some(&(node, dep)) = self
            .edges
            .iter()
            .find(|&&(node, dep)| node as usize >= n || dep as usize >= n)
        {
            return Err(TraceError::DepOutOfRange {
                rank,
                node: NodeId(node),
                dep: NodeId(dep),
            });
        }
        let (mut peers, mut groups) = (SlotTable::default(), SlotTable::default());
        for node in &mut self.nodes {
            match &mut node.kind {
                NodeKind::Send { peer, .. } | NodeKind::Recv { peer, .. } => {
                    *peer = RankId(peers.slot(peer.0));
                }
                NodeKind::Collective { group, .. } => *group = GroupId(groups.slot(group.0)),
                NodeKind::Compute { .. } | NodeKind::Delay { .. } => {}
            }
        }
        // Rows by node, dep order kept per node.
        let deps = Csr::from_pairs(n, self.edges.iter().map(|&(node, dep)| (node, NodeId(dep))));
        let body = Body {
            nodes: self.nodes,
            deps,
        };
        Ok((body, peers, groups))
    }

    /// The builder that would rebuild `rt` (a sealed rank reopened for more nodes).
    fn reopen(rt: &RankTrace) -> RankBuilder {
        let edges = (0..rt.len() as u32)
            .flat_map(|i| rt.deps(NodeId(i)).iter().map(move |d| (i, d.0)))
            .collect();
        RankBuilder {
            nodes: rt.nodes().collect(),
            edges,
        }
    }
}

/// The distinct values of one kind (peers or groups) a rank names, in order of first use: a
/// body's slot `s` stands for `values[s]`. A rank names few (its pipeline neighbours, its
/// tensor-, data- and context-parallel groups), so lookup is a scan until the table grows.
#[derive(Default)]
struct SlotTable {
    values: Vec<u32>,
    /// Value → slot, built once the table outgrows a scan.
    index: HashMap<u32, u32>,
}

impl SlotTable {
    const SCAN: usize = 16;

    fn slot(&mut self, value: u32) -> u32 {
        if self.values.len() <= Self::SCAN {
            if let Some(s) = self.values.iter().position(|&v| v == value) {
                return s as u32;
            }
        } else if let Some(&s) = self.index.get(&value) {
            return s;
        }
        let s = self.values.len() as u32;
        self.values.push(value);
        if self.values.len() > Self::SCAN {
            if self.index.is_empty() {
                self.index = self
                    .values
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| (v, i as u32))
                    .collect();
            } else {
                self.index.insert(value, s);
            }
        }
        s
    }
}

/// Bodies already stored, by a fingerprint of their content (collisions are told apart by
/// comparing the bodies themselves).
#[derive(Clone, Debug, Default)]
struct BodyTable {
    by_print: HashMap<u64, Vec<Arc<Body>>>,
}

impl BodyTable {
    /// The stored body equal to `body`, or `body` stored.
    fn intern(&mut self, body: Body) -> Arc<Body> {
        let same = self.by_print.entry(fingerprint(&body)).or_default();
        if let Some(b) = same.iter().find(|b| ***b == body) {
            return Arc::clone(b);
        }
        let b = Arc::new(body);
        same.push(Arc::clone(&b));
        b
    }
}

/// A content hash of a body (FxHash: the same every run, though only sharing, never output,
/// depends on it; bodies of equal hash are compared in full). Not SipHash: nothing here is
/// adversarial, and hashing every body of every candidate was a tenth of a sweep's CPU.
fn fingerprint(body: &Body) -> u64 {
    let mut h = FxHasher::default();
    body.nodes.hash(&mut h);
    for r in 0..body.deps.rows() {
        body.deps.row(r).hash(&mut h);
    }
    h.finish()
}

/// Builds a [`Trace`] for a world of `world` ranks. Ranks that receive no node are not
/// simulated (see the symmetry classes).
#[derive(Clone, Debug)]
pub struct TraceBuilder {
    world: u32,
    /// Ranks still taking nodes.
    ranks: Vec<Option<RankBuilder>>,
    /// Ranks sealed into a shared body ([`TraceBuilder::set_rank`]); a rank is in at most one
    /// of `ranks` and `sealed`.
    sealed: Vec<Option<RankTrace>>,
    bodies: BodyTable,
    /// The first error met while sealing a rank early ([`TraceBuilder::set_rank`]), returned
    /// by `finish`.
    sealing_error: Option<TraceError>,
    groups: Vec<Vec<RankId>>,
    group_ids: HashMap<Vec<RankId>, GroupId>,
    names: Vec<String>,
    name_ids: HashMap<String, NameId>,
    class_of: Vec<RankId>,
    sizes: Vec<Vec<Bytes>>,
    sizes_ids: HashMap<Vec<Bytes>, SizesId>,
}

impl TraceBuilder {
    pub fn new(world: u32) -> TraceBuilder {
        TraceBuilder {
            world,
            ranks: Vec::new(),
            sealed: Vec::new(),
            bodies: BodyTable::default(),
            sealing_error: None,
            groups: Vec::new(),
            group_ids: HashMap::default(),
            names: Vec::new(),
            name_ids: HashMap::default(),
            class_of: Vec::new(),
            sizes: Vec::new(),
            sizes_ids: HashMap::default(),
        }
    }

    pub fn world(&self) -> u32 {
        self.world
    }

    /// The builder of `rank`, created on first use: a rank is simulated once it is touched
    /// here. An out-of-range rank is reported by `finish`.
    pub fn rank(&mut self, rank: RankId) -> &mut RankBuilder {
        let i = rank.index();
        if self.ranks.len() <= i {
            self.ranks.resize_with(i + 1, || None);
        }
        if let Some(rt) = self.sealed.get_mut(i).and_then(Option::take) {
            self.ranks[i] = Some(RankBuilder::reopen(&rt));
        }
        self.ranks[i].get_or_insert_with(RankBuilder::default)
    }

    /// Sets `rank`'s nodes to `nodes` and seals them at once: the nodes go into a body shared
    /// with every rank sealed with the same nodes up to peers and groups, so a lowering that
    /// builds its ranks one by one holds one builder at a time, not one per rank. An invalid
    /// rank (a dependency out of range) is reported by `finish`.
    pub fn set_rank(&mut self, rank: RankId, nodes: RankBuilder) {
        let i = rank.index();
        if let Some(open) = self.ranks.get_mut(i) {
            *open = None;
        }
        if self.sealed.len() <= i {
            self.sealed.resize_with(i + 1, || None);
        }
        match self.seal(rank, nodes) {
            Ok(rt) => self.sealed[i] = Some(rt),
            Err(e) => {
                self.sealing_error.get_or_insert(e);
            }
        }
    }

    fn seal(&mut self, rank: RankId, nodes: RankBuilder) -> Result<RankTrace, TraceError> {
        let (body, peers, groups) = nodes.into_parts(rank)?;
        Ok(RankTrace {
            rank,
            body: self.bodies.intern(body),
            peers: peers.values.into_iter().map(RankId).collect(),
            groups: groups.values.into_iter().map(GroupId).collect(),
        })
    }

    /// Interns a group by its member set (order and duplicates do not matter).
    pub fn group(&mut self, members: &[RankId]) -> GroupId {
        let mut key = members.to_vec();
        key.sort_unstable();
        key.dedup();
        if let Some(&id) = self.group_ids.get(&key) {
            return id;
        }
        let id = GroupId(self.groups.len() as u32);
        self.groups.push(key.clone());
        self.group_ids.insert(key, id);
        id
    }

    /// Interns a display name.
    pub fn name(&mut self, name: &str) -> NameId {
        if let Some(&id) = self.name_ids.get(name) {
            return id;
        }
        let id = NameId(self.names.len() as u32);
        self.names.push(name.to_string());
        self.name_ids.insert(name.to_string(), id);
        id
    }

    /// Interns an all-to-all-v size table: for a group of n members in increasing rank order,
    /// `table[i * n + j]` bytes go from member i to member j (the diagonal stays local). Equal
    /// tables share an id, so their collectives share their phases.
    pub fn sizes(&mut self, table: &[Bytes]) -> SizesId {
        if let Some(&id) = self.sizes_ids.get(table) {
            return id;
        }
        let id = SizesId(self.sizes.len() as u32);
        self.sizes.push(table.to_vec());
        self.sizes_ids.insert(table.to_vec(), id);
        id
    }

    /// Declares symmetry classes: `class_of[r]` for every rank of the world. The engine
    /// simulates the ranks that have nodes and resolves the others through their class.
    pub fn set_classes(&mut self, class_of: Vec<RankId>) {
        self.class_of = class_of;
    }

    pub fn finish(mut self) -> Result<Trace, TraceError> {
        if let Some(e) = self.sealing_error.take() {
            return Err(e);
        }
        let world = self.world;
        if !self.class_of.is_empty() && self.class_of.len() != world as usize {
            return Err(TraceError::ClassMapLength {
                len: self.class_of.len(),
                world,
            });
        }
        let mut group_start = Vec::with_capacity(self.groups.len() + 1);
        let mut group_ranks = Vec::new();
        group_start.push(0u32);
        for g in &self.groups {
            if g.is_empty() {
                return Err(TraceError::EmptyGroup);
            }
            if let Some(&r) = g.iter().find(|r| r.0 >= world) {
                return Err(TraceError::GroupRankOutOfRange { rank: r, world });
            }
            group_ranks.extend_from_slice(g);
            let end = u32::try_from(group_ranks.len()).map_err(|_| TraceError::TooLarge)?;
            group_start.push(end);
        }
        if self.sizes.iter().map(Vec::len).sum::<usize>() >= u32::MAX as usize {
            return Err(TraceError::TooLarge);
        }
        let mut ranks = Vec::new();
        let mut open = std::mem::take(&mut self.ranks).into_iter();
        let mut sealed = std::mem::take(&mut self.sealed).into_iter();
        for r in 0..open.len().max(sealed.len()) {
            let (b, done) = (open.next().flatten(), sealed.next().flatten());
            let rank = RankId(r as u32);
            if (b.is_some() || done.is_some()) && rank.0 >= world {
                return Err(TraceError::RankOutOfRange { rank, world });
            }
            let rt = match (b, done) {
                (Some(b), _) => self.seal(rank, b)?,
                (None, Some(rt)) => rt,
                (None, None) => continue,
            };
            for (i, node) in rt.nodes().enumerate() {
                check_node(
                    rank,
                    NodeId(i as u32),
                    &node,
                    world,
                    &self.groups,
                    &self.sizes,
                )?;
            }
            ranks.push(rt);
        }
        Ok(Trace {
            world,
            ranks,
            group_start,
            group_ranks,
            names: self.names,
            class_of: self.class_of,
            sizes: Csr::from_pairs(
                self.sizes.len(),
                self.sizes
                    .iter()
                    .enumerate()
                    .flat_map(|(t, row)| row.iter().map(move |&b| (t as u32, b))),
            ),
        })
    }
}

fn check_node(
    rank: RankId,
    node: NodeId,
    n: &Node,
    world: u32,
    groups: &[Vec<RankId>],
    sizes: &[Vec<Bytes>],
) -> Result<(), TraceError> {
    match n.kind {
        NodeKind::Send { peer, .. } | NodeKind::Recv { peer, .. } if peer.0 >= world => {
            Err(TraceError::PeerOutOfRange { rank, node, peer })
        }
        NodeKind::Collective { group, kind, .. } => match groups.get(group.0 as usize) {
            None => Err(TraceError::UnknownGroup { rank, node, group }),
            Some(m) if m.binary_search(&rank).is_err() => {
                Err(TraceError::NotAMember { rank, node, group })
            }
            Some(m) => match kind {
                CollectiveKind::AllToAllV(t) => match sizes.get(t.0 as usize) {
                    None => Err(TraceError::UnknownSizes {
                        rank,
                        node,
                        sizes: t,
                    }),
                    Some(table) if Some(table.len()) != m.len().checked_mul(m.len()) => {
                        Err(TraceError::SizesShape {
                            rank,
                            node,
                            len: table.len(),
                            members: m.len(),
                        })
                    }
                    Some(_) => Ok(()),
                },
                _ => Ok(()),
            },
        },
        _ => Ok(()),
    }
}
