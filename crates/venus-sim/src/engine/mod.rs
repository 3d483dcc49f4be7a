//! Discrete-event engine: runs a [`Trace`] on a [`Network`] and returns a [`Timeline`].
//!
//! Input: a validated trace, a network, [`Options`]. Output: per-node start/end times,
//! per-rank finish time and busy time per category, the number of events processed; or an
//! [`EngineError`] that names the stuck ranks and operations. It never hangs and never returns
//! a partial result.
//!
//! Model:
//! - Time is integer picoseconds ([`Ps`]); events are ordered by `(time, sequence)` in one
//!   event queue (`queue::EventQueue`), so ties run in the order they were scheduled. Same
//!   input, same output.
//! - Each rank has streams (stream 0 compute, the others communication). A stream runs its
//!   nodes one at a time in program order; a node starts when it is the head of its idle
//!   stream and its dependencies have finished. A send, receive or collective holds its stream
//!   from the moment it is posted until its transfer completes.
//! - P2P: the k-th send from `a` to `b` with tag `t` pairs with the k-th receive on `b` from
//!   `a` with tag `t` (program order). The transfer starts when both are posted (rendezvous) and
//!   takes latency + bytes / bandwidth of the outermost dim where the ranks' coordinates differ.
//! - Collectives: the k-th collective of every member on a group forms one instance; it starts
//!   when all simulated members reached it, then runs its phases ([`network::Network::phases`]):
//!   per dim the dim's algorithm, hierarchical across dims as Astra-Sim does. An all-to-all-v
//!   (uneven MoE dispatch) carries a per-member size table; its phases are loaded by the
//!   busiest member ([`network::Network::phases_v`]).
//! - The network is built from plain [`NetDim`]s ([`Network::from_dims`]); the engine knows
//!   no `ty` type, span or source name.
//! - Bandwidth: every phase moves its bytes through links, one per (rank, dim, direction).
//!   A P2P loads the sender's egress and the receiver's ingress; a collective phase loads both
//!   directions of every member on its dim. Concurrent flows share links max-min fairly
//!   (progressive filling, recomputed over the connected flows at every flow start and end,
//!   in O((L + I) log(L + I)) for a component of L links and I flow-link incidences), so
//!   no link carries more than its bandwidth. [`Sharing::Off`] gives every flow its full link
//!   rate, as Astra-Sim's congestion-unaware backend does.
//!
//! Symmetry ([`Trace::class_of`]): a trace may hold nodes for only some ranks (the simulated
//! ones) and declare a class for every rank. A non-simulated rank is taken to behave exactly as
//! the simulated rank of its class. Concretely: a collective waits only for its simulated
//! members (the others arrive at the same time as them); a P2P with a non-simulated peer of the
//! same class starts as soon as the local side is posted (the peer posts its matching side at
//! the same instant); a flow loads only the links of its simulated endpoints (a non-simulated
//! rank's links carry a copy of its representative's load, already counted there).
//! This is exact, i.e. equal to simulating every rank, when the class map is induced by
//! symmetries: for every rank `r` there is a permutation σ of the world mapping `r`'s
//! simulated representative to `r` such that (1) σ maps each simulated rank's trace node for
//! node onto the replica's trace (same kinds, durations, sizes, tags, streams and
//! dependencies, with peers and group members mapped by σ), (2) σ preserves the network along
//! every communication (a P2P and its image cross the same dim; a group and its image have the
//! same per-dim extents), and (3) the simulated ranks' ops never share a link with a replica's
//! ops in a way the representative's do not (true when classes are unions of whole
//! communication groups' members, like data-parallel replicas and tensor-parallel peers). Under
//! those conditions every replica's event times equal its representative's, so collective
//! arrivals coincide and link loads are copies. A P2P to a non-simulated rank of another class
//! is rejected ([`EngineError::Asymmetric`]) rather than guessed.

mod error;
mod id;
pub mod network;
mod queue;
mod sim;

pub use error::{EngineError, OpRef, Stuck, StuckReason, OVERFLOW_DAYS};
pub use network::{
    protocol_cost, Algorithm, ByteVolume, GroupShape, LinkClass, NetDim, Network, NetworkError,
    Phase, Protocol, ProtocolCost,
};

use crate::trace::{Category, NodeId, Ps, RankId, Trace};

/// How concurrent flows on one link share it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Sharing {
    /// Max-min fair sharing (progressive filling).
    #[default]
    MaxMinFair,
    /// Every flow gets the full link rate (congestion-unaware, like Astra-Sim's analytical
    /// backend): concurrent flows are double counted.
    Off,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Options {
    pub sharing: Sharing,
}

/// The simulation result. Nodes are indexed per simulated rank (`rank_index`, the position in
/// [`Timeline::simulated_ranks`]) and [`NodeId`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timeline {
    ranks: Vec<RankId>,
    offset: Vec<u32>,
    start: Vec<Ps>,
    end: Vec<Ps>,
    finish: Vec<Ps>,
    busy: Vec<u64>,
    events: u64,
    makespan: u64,
}

impl Timeline {
    /// Simulated ranks, in increasing order (the same order as `Trace::ranks`).
    pub fn simulated_ranks(&self) -> &[RankId] {
        &self.ranks
    }

    /// Position of a rank among the simulated ranks.
    pub fn rank_index(&self, rank: RankId) -> Option<usize> {
        self.ranks.binary_search(&rank).ok()
    }

    /// Start (posting time for communication) and end of a node.
    pub fn span(&self, rank_index: usize, node: NodeId) -> Option<(Ps, Ps)> {
        let a = *self.offset.get(rank_index)?;
        let b = *self.offset.get(rank_index + 1)?;
        let g = a.checked_add(node.0).filter(|&g| g < b)? as usize;
        Some((self.start[g], self.end[g]))
    }

    /// Per-node start times of one rank, indexed by `NodeId`.
    pub fn starts(&self, rank_index: usize) -> &[Ps] {
        self.slice(&self.start, rank_index)
    }

    /// Per-node end times of one rank, indexed by `NodeId`.
    pub fn ends(&self, rank_index: usize) -> &[Ps] {
        self.slice(&self.end, rank_index)
    }

    fn slice<'a>(&self, v: &'a [Ps], rank_index: usize) -> &'a [Ps] {
        match (self.offset.get(rank_index), self.offset.get(rank_index + 1)) {
            (Some(&a), Some(&b)) => &v[a as usize..b as usize],
            _ => &[],
        }
    }

    /// When the rank's last node ends.
    pub fn finish(&self, rank_index: usize) -> Ps {
        self.finish.get(rank_index).copied().unwrap_or(Ps::ZERO)
    }

    /// Sum of the durations (end − start) of the rank's nodes of a category. Communication
    /// nodes count from posting, so waiting for a peer is included (as in VenusSim's phases).
    pub fn busy(&self, rank_index: usize, category: Category) -> Ps {
        Ps(self
            .busy
            .get(rank_index * Category::COUNT + category.index())
            .copied()
            .unwrap_or(0))
    }

    /// Events processed (superseded flow completions excluded).
    pub fn events(&self) -> u64 {
        self.events
    }

    /// When the last simulated node ends.
    pub fn makespan(&self) -> Ps {
        Ps(self.makespan)
    }
}

/// Runs the trace on the network: the engine's entry point (trace + network → timeline).
/// Named apart from the facade's `simulate` (scenario → report) in `venus-out`.
pub fn run_trace(trace: &Trace, net: &Network, opts: &Options) -> Result<Timeline, EngineError> {
    sim::Sim::new(trace, net, opts)?.run()
}

#[cfg(test)]
mod tests;
