//! Multi-dimensional network: rank coordinates, the dim a P2P crosses, and collective
//! algorithms as closed forms split into per-dim phases.
//!
//! Input: plain [`NetDim`]s (the lowering converts a cluster into them). Output: for a transfer, the
//! dim it uses; for a collective on a group, a list of [`Phase`]s, each a fixed latency then a
//! volume of bytes that moves through every member's link on one dim at that link's rate.
//! Invariant: one phase alone on its links takes exactly `latency + volume / bandwidth`, which is
//! the closed form of its algorithm (Astra-Sim analytical backend, venussim.md §9).

use crate::trace::{CollectiveKind, Ps, RankId};
use std::fmt;
use std::ops::{Div, DivAssign, Mul, MulAssign};
use venus_base::base::{Bytes, BytesPerSec, CollectiveAlgorithm, Fabric, Ratio, Seconds, Topology};

/// A volume of bytes that may be fractional: a share of a buffer such as `(n−1)/n · S`.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Default)]
pub struct ByteVolume(pub f64);

impl Mul<f64> for ByteVolume {
    type Output = ByteVolume;
    fn mul(self, k: f64) -> ByteVolume {
        ByteVolume(self.0 * k)
    }
}

impl MulAssign<f64> for ByteVolume {
    fn mul_assign(&mut self, k: f64) {
        self.0 *= k;
    }
}

impl DivAssign<f64> for ByteVolume {
    fn div_assign(&mut self, k: f64) {
        self.0 /= k;
    }
}

impl Div<f64> for ByteVolume {
    type Output = ByteVolume;
    fn div(self, k: f64) -> ByteVolume {
        ByteVolume(self.0 / k)
    }
}

/// Collective algorithm on one dim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// Unidirectional ring (`astra-sim/system/collective/Ring.cc`).
    Ring,
    /// Every rank talks to every other at once (`collective/AllToAll.cc`, "direct").
    Direct,
    /// Recursive halving / doubling (`collective/HalvingDoubling.cc`).
    HalvingDoubling,
    /// NCCL's double binary tree: all-reduce only; the other collectives fall back to ring.
    DoubleBinaryTree,
    /// In-network reduction (NVLink SHARP, InfiniBand SHARP; NCCL's NVLS and CollNet
    /// algorithms): all-reduce only, on a dim whose cluster states `sharp`; the other
    /// collectives fall back to ring.
    InNetwork,
}

impl From<CollectiveAlgorithm> for Algorithm {
    fn from(a: CollectiveAlgorithm) -> Algorithm {
        match a {
            CollectiveAlgorithm::Ring => Algorithm::Ring,
            CollectiveAlgorithm::Direct => Algorithm::Direct,
            CollectiveAlgorithm::HalvingDoubling => Algorithm::HalvingDoubling,
            CollectiveAlgorithm::Tree => Algorithm::DoubleBinaryTree,
        }
    }
}

/// One network dimension as plain data (no source location, no name).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NetDim {
    pub topology: Topology,
    /// GPUs along this dim.
    pub size: u32,
    /// The link's peak, per GPU per direction.
    pub bandwidth: BytesPerSec,
    pub latency: Seconds,
    /// Achieved bus bandwidth over the link's peak (NCCL reaches less than the peak); the
    /// engine runs flows at `bandwidth × efficiency`.
    pub efficiency: Ratio,
    /// `None`: the topology's default (see [`Network::algorithm_for`]).
    pub algorithm: Option<CollectiveAlgorithm>,
    /// Rails, a fat tree's oversubscription, in-network reduction (default: one ideal switch).
    pub fabric: Fabric,
}

impl NetDim {
    /// A dim at full efficiency with its topology's default algorithm.
    pub fn new(topology: Topology, size: u32, bandwidth: BytesPerSec, latency: Seconds) -> NetDim {
        NetDim {
            topology,
            size,
            bandwidth,
            latency,
            efficiency: Ratio(1.0),
            algorithm: None,
            fabric: Fabric::default(),
        }
    }
}

/// The cluster's dims, innermost first. Rank `r` has coordinate `(r / prod(size[..d])) % size[d]`
/// on dim `d`.
#[derive(Clone, Debug, PartialEq)]
pub struct Network {
    dims: Vec<NetDim>,
    /// `stride[d] = prod(size[..d])`.
    stride: Vec<u32>,
    latency_ps: Vec<u64>,
    /// Per dim: the achieved bandwidth (`bandwidth × efficiency`), bytes per second.
    bw: Vec<f64>,
    /// Per dim: the override of the topology's default algorithm.
    algo: Vec<Option<Algorithm>>,
    /// Per dim: the row of NCCL's hardware-latency table its links take ([`LinkClass::of`]).
    class: Vec<LinkClass>,
    world: u32,
    /// Slow links (`slow_link`): `(rank, dim)` whose links reach only a share (in (0, 1)) of
    /// the dim's bandwidth, sorted, each pair once. Empty on a uniform network.
    slow_links: Vec<((RankId, usize), f64)>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum NetworkError {
    NoDims,
    ZeroSize { dim: usize },
    BadBandwidth { dim: usize },
    BadLatency { dim: usize },
    TooLarge,
}

impl fmt::Display for NetworkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NetworkError::NoDims => write!(f, "network has no dims"),
            NetworkError::ZeroSize { dim } => write!(f, "network dim {dim} has size 0"),
            NetworkError::BadBandwidth { dim } => {
                write!(f, "network dim {dim} needs a positive, finite bandwidth")
            }
            NetworkError::BadLatency { dim } => {
                write!(f, "network dim {dim} needs a non-negative, finite latency")
            }
            NetworkError::TooLarge => write!(f, "network has more than 2^32 - 1 ranks"),
        }
    }
}

impl std::error::Error for NetworkError {}

impl Network {
    /// The network of these dims, innermost first.
    pub fn from_dims(dims: &[NetDim]) -> Result<Network, NetworkError> {
        if dims.is_empty() {
            return Err(NetworkError::NoDims);
        }
        let mut stride = Vec::with_capacity(dims.len());
        let mut latency_ps = Vec::with_capacity(dims.len());
        let mut bw = Vec::with_capacity(dims.len());
        let mut world: u32 = 1;
        for (i, d) in dims.iter().enumerate() {
            if d.size == 0 {
                return Err(NetworkError::ZeroSize { dim: i });
            }
            let achieved = (d.bandwidth * d.efficiency).0;
            if !(achieved.is_finite() && achieved > 0.0) {
                return Err(NetworkError::BadBandwidth { dim: i });
            }
            bw.push(achieved);
            if !(d.latency.0.is_finite() && d.latency.0 >= 0.0) {
                return Err(NetworkError::BadLatency { dim: i });
            }
            if let Some((leaf, share)) = d.fabric.fat_tree {
                if leaf == 0 || !(share.is_finite() && share > 0.0) {
                    return Err(NetworkError::BadBandwidth { dim: i });
                }
            }
            stride.push(world);
            latency_ps.push(Ps::from_seconds(d.latency).0);
            world = world.checked_mul(d.size).ok_or(NetworkError::TooLarge)?;
        }
        if world == u32::MAX {
            return Err(NetworkError::TooLarge);
        }
        Ok(Network {
            dims: dims.to_vec(),
            stride,
            latency_ps,
            bw,
            algo: dims
                .iter()
                .map(|d| d.algorithm.map(Algorithm::from))
                .collect(),
            class: (0..dims.len()).map(|i| LinkClass::of(dims, i)).collect(),
            world,
            slow_links: Vec::new(),
        })
    }

    /// The same network where the links of `rank` on `dim` (both directions) reach only
    /// `share` of the dim's bandwidth, for every `(rank, dim, share)` given: a slow NIC. A
    /// pair given twice keeps the lower share; a share that is not in (0, 1), a rank outside
    /// the world or a dim the network lacks changes nothing.
    pub fn with_slow_links(mut self, links: &[(RankId, usize, Ratio)]) -> Network {
        for &(rank, dim, share) in links {
            let ok = rank.0 < self.world && dim < self.dims.len();
            if !(ok && share.0 > 0.0 && share.0 < 1.0) {
                continue;
            }
            match self
                .slow_links
                .binary_search_by_key(&(rank, dim), |&(k, _)| k)
            {
                Ok(i) => self.slow_links[i].1 = self.slow_links[i].1.min(share.0),
                Err(i) => self.slow_links.insert(i, ((rank, dim), share.0)),
            }
        }
        self
    }

    /// The ranks with a slow link, in increasing order, each once.
    pub fn slow_link_ranks(&self) -> Vec<RankId> {
        let mut ranks: Vec<RankId> = self.slow_links.iter().map(|&((r, _), _)| r).collect();
        ranks.dedup();
        ranks
    }

    /// The achieved bandwidth of one rank's links on a dim: the dim's
    /// ([`Network::bandwidth`]) times the share a slow link reaches.
    pub fn link_bandwidth(&self, rank: RankId, dim: usize) -> BytesPerSec {
        let bw = self.bw[dim];
        BytesPerSec(
            match self
                .slow_links
                .binary_search_by_key(&(rank, dim), |&(k, _)| k)
            {
                Ok(i) => bw * self.slow_links[i].1,
                Err(_) => bw,
            },
        )
    }

    pub fn dims(&self) -> &[NetDim] {
        &self.dims
    }

    pub fn world(&self) -> u32 {
        self.world
    }

    pub fn coord(&self, rank: RankId, dim: usize) -> u32 {
        (rank.0 / self.stride[dim]) % self.dims[dim].size
    }

    /// The outermost dim in which two ranks' coordinates differ; `None` for the same rank.
    pub fn dim_between(&self, a: RankId, b: RankId) -> Option<usize> {
        (0..self.dims.len())
            .rev()
            .find(|&d| self.coord(a, d) != self.coord(b, d))
    }

    /// The achieved bandwidth of a dim's links (`bandwidth × efficiency`), bytes per second.
    pub(super) fn bandwidth(&self, dim: usize) -> f64 {
        self.bw[dim]
    }

    /// The shape of a group on the network: its extent (distinct coordinates) on each dim.
    pub fn group_shape(&self, members: &[RankId]) -> GroupShape {
        let mut extents = Vec::new();
        let mut seen = Vec::new();
        let mut product: u64 = 1;
        for d in 0..self.dims.len() {
            seen.clear();
            seen.extend(members.iter().map(|&r| self.coord(r, d)));
            seen.sort_unstable();
            seen.dedup();
            let e = seen.len() as u32;
            if e > 1 {
                extents.push((d, e));
                product = product.saturating_mul(e as u64);
            }
        }
        // A grid when the members are exactly the product of their per-dim coordinate sets.
        let grid = product == members.len() as u64;
        let cross_leaf = extents
            .iter()
            .map(|&(d, _)| d)
            .filter(|&d| self.spans_leaves(d, members))
            .collect();
        GroupShape {
            extents,
            grid,
            members: members.len() as u32,
            cross_leaf,
        }
    }

    /// Whether `members` sit under more than one leaf switch of dim `d`'s fat tree (never, on
    /// a dim without one).
    fn spans_leaves(&self, d: usize, members: &[RankId]) -> bool {
        let Some((leaf, _)) = self.dims[d].fabric.fat_tree else {
            return false;
        };
        let mut leaves = members.iter().map(|&r| self.coord(r, d) / leaf.max(1));
        let first = leaves.next();
        leaves.any(|l| Some(l) != first)
    }

    /// The factor a fat tree's oversubscription puts on bytes that cross its leaves: the
    /// inverse of the share of bandwidth between leaves (1 on a dim without a fat tree).
    fn leaf_factor(&self, d: usize, crosses: bool) -> f64 {
        match self.dims[d].fabric.fat_tree {
            Some((_, share)) if crosses => 1.0 / share,
            _ => 1.0,
        }
    }

    /// The phases of a point-to-point transfer of `bytes` from `a` to `b`: latency then the
    /// bytes on the outermost dim where they differ. Across a fat tree's leaves the bytes move
    /// at the share of bandwidth between leaves. On a rail-optimized dim a pair of different
    /// local index (coordinates inside the dim) first moves the bytes over the outermost inner
    /// dim where they differ to the GPU on the destination's rail (NCCL's PXN), then across one
    /// rail switch. Empty for a rank to itself.
    pub fn p2p_phases(&self, a: RankId, b: RankId, bytes: ByteVolume, out: &mut Vec<Phase>) {
        out.clear();
        let Some(d) = self.dim_between(a, b) else {
            return;
        };
        let fabric = self.dims[d].fabric;
        if fabric.rail {
            if let Some(inner) = (0..d).rev().find(|&i| self.coord(a, i) != self.coord(b, i)) {
                out.push(Phase {
                    dim: inner,
                    latency: Ps(self.latency_ps[inner]),
                    volume: bytes,
                });
            }
        }
        let crosses = fabric.fat_tree.is_some_and(|(leaf, _)| {
            self.coord(a, d) / leaf.max(1) != self.coord(b, d) / leaf.max(1)
        });
        out.push(Phase {
            dim: d,
            latency: Ps(self.latency_ps[d]),
            volume: bytes * self.leaf_factor(d, crosses),
        });
    }

    /// The phases of a collective over a group of this shape (Astra-Sim's hierarchical
    /// decomposition, `astra-sim/system/Sys.cc:generate_collective` with `localBWAware`):
    /// all-reduce = reduce-scatter on the inner dims, all-reduce on the outermost dim on the
    /// remaining shard, all-gather back down; reduce-scatter and all-gather one phase per dim
    /// (all-gather outermost first); all-to-all one full-size phase per dim. A group that is
    /// not a grid runs one flat phase over all members on its outermost dim (Astra-Sim's flat
    /// ring, `CommunicatorGroup.cc:63-90`).
    pub fn phases(
        &self,
        shape: &GroupShape,
        kind: CollectiveKind,
        bytes: ByteVolume,
        out: &mut Vec<Phase>,
    ) {
        out.clear();
        let ext = &shape.extents;
        let Some(&(outer, _)) = ext.last() else {
            return;
        };
        if !shape.grid {
            let flat = self.phase(outer, shape.members, kind, bytes);
            self.push_fabric(shape, flat, out);
            return;
        }
        let start = out.len();
        let k = ext.len() - 1;
        // One NCCL kernel runs the whole hierarchical collective: its base latency is charged
        // once, on the first phase (`baseLat` is per collective in src/graph/tuning.cc).
        let mut first = true;
        let mut phase = |d: usize, n: u32, kind: CollectiveKind, s: ByteVolume| {
            let ph = self.phase_charged(d, n, kind, s, first);
            first = false;
            ph
        };
        match kind {
            CollectiveKind::AllReduce => {
                let mut s = bytes;
                for &(d, n) in &ext[..k] {
                    out.push(phase(d, n, CollectiveKind::ReduceScatter, s));
                    s /= n as f64;
                }
                out.push(phase(outer, ext[k].1, CollectiveKind::AllReduce, s));
                for &(d, n) in ext[..k].iter().rev() {
                    s *= n as f64;
                    out.push(phase(d, n, CollectiveKind::AllGather, s));
                }
            }
            CollectiveKind::ReduceScatter => {
                let mut s = bytes;
                for &(d, n) in ext {
                    out.push(phase(d, n, kind, s));
                    s /= n as f64;
                }
            }
            CollectiveKind::AllGather => {
                // The phase on dim i gathers a buffer of `bytes / prod(n[..i])`.
                let mut s = bytes / ext[..k].iter().map(|&(_, n)| n as f64).product::<f64>();
                out.push(phase(outer, ext[k].1, kind, s));
                for &(d, n) in ext[..k].iter().rev() {
                    s *= n as f64;
                    out.push(phase(d, n, kind, s));
                }
            }
            CollectiveKind::AllToAll | CollectiveKind::AllToAllV(_) => {
                for &(d, n) in ext {
                    out.push(phase(d, n, kind, bytes));
                }
            }
        }
        for ph in &mut out[start..] {
            ph.volume *= self.leaf_factor(ph.dim, shape.cross_leaf.contains(&ph.dim));
        }
    }

    /// Pushes a flat phase (a group that is not a grid, on its outermost dim) with what the
    /// dim's fabric adds: a fat tree's oversubscription on bytes that cross its leaves, and on a
    /// rail-optimized dim whose members differ in local index the same bytes once more on the
    /// outermost inner dim of the group (NCCL's PXN: each byte reaches the GPU on the right
    /// rail over NVLink first).
    fn push_fabric(&self, shape: &GroupShape, mut flat: Phase, out: &mut Vec<Phase>) {
        let d = flat.dim;
        if self.dims[d].fabric.rail {
            if let Some(&(inner, _)) = shape.extents.iter().rev().find(|&&(i, _)| i < d) {
                out.push(Phase {
                    dim: inner,
                    latency: Ps(self.latency_ps[inner]),
                    volume: flat.volume,
                });
            }
        }
        flat.volume *= self.leaf_factor(d, shape.cross_leaf.contains(&d));
        out.push(flat);
    }

    /// The phases of an all-to-all-v over `members` (increasing rank order, of this shape),
    /// `sizes[i · n + j]` the bytes member i sends to member j. Like the uniform all-to-all,
    /// one phase per dim of the group (one flat phase on the outermost dim when the group is
    /// not a grid), each over the dim's extent. A phase's load is its busiest member's: the
    /// larger of what a member sends to, and receives from, the members whose coordinate on
    /// that dim differs from its own (every member, for the flat phase). That load is what
    /// `(n−1)/n · S` is for a uniform buffer S, so the dim's algorithm scales it as in
    /// [`closed_form`]: direct moves exactly the load, ring `n/2 ×` it (each block forwarded
    /// hop by hop), halving-doubling (Bruck) `⌈log2 n⌉·n / (2(n−1)) ×` it. A table with equal
    /// entries gives the uniform all-to-all's phases (up to rounding).
    pub fn phases_v(
        &self,
        shape: &GroupShape,
        members: &[RankId],
        sizes: &[Bytes],
        out: &mut Vec<Phase>,
    ) {
        out.clear();
        let n = members.len();
        let Some(&(outer, _)) = shape.extents.last() else {
            return;
        };
        if sizes.len() != n * n {
            return;
        }
        let load = |differ: &dyn Fn(RankId, RankId) -> bool| -> ByteVolume {
            let mut max = 0u64;
            for i in 0..n {
                let (mut send, mut recv) = (0u64, 0u64);
                for j in 0..n {
                    if differ(members[i], members[j]) {
                        send = send.saturating_add(sizes[i * n + j].0);
                        recv = recv.saturating_add(sizes[j * n + i].0);
                    }
                }
                max = max.max(send).max(recv);
            }
            ByteVolume(max as f64)
        };
        let mut phase = |d: usize, ext: u32, l: ByteVolume| {
            let algo = self.algorithm_for(d, CollectiveKind::AllToAll, ext, l);
            let (latency, volume) = closed_form_v(algo, ext, Ps(self.latency_ps[d]), l);
            out.push(Phase {
                dim: d,
                latency,
                volume,
            });
        };
        if !shape.grid {
            phase(outer, shape.members, load(&|a, b| a != b));
        } else {
            for &(d, ext) in &shape.extents {
                phase(d, ext, load(&|a, b| self.coord(a, d) != self.coord(b, d)));
            }
        }
        for ph in out.iter_mut() {
            ph.volume *= self.leaf_factor(ph.dim, shape.cross_leaf.contains(&ph.dim));
        }
    }

    /// One phase on `dim` over `n` ranks with the dim's algorithm for this size and NCCL's
    /// fastest protocol for it ([`Network::priced`]), the collective's base latency included.
    pub fn phase(&self, dim: usize, n: u32, kind: CollectiveKind, bytes: ByteVolume) -> Phase {
        self.phase_charged(dim, n, kind, bytes, true)
    }

    /// [`Network::phase`], with the per-collective base latency only when `base` (the first
    /// phase of a hierarchical collective pays it).
    fn phase_charged(
        &self,
        dim: usize,
        n: u32,
        kind: CollectiveKind,
        bytes: ByteVolume,
        base: bool,
    ) -> Phase {
        let algo = self.algorithm_for(dim, kind, n, bytes);
        self.priced(dim, algo, kind, n, bytes, base).phase
    }

    /// The protocol NCCL's tuner picks for a collective phase on `dim` over `n` ranks of this
    /// size (with the dim's algorithm for it): LL for small messages, Simple for large ones.
    pub fn protocol_for(
        &self,
        dim: usize,
        kind: CollectiveKind,
        n: u32,
        bytes: ByteVolume,
    ) -> Protocol {
        let algo = self.algorithm_for(dim, kind, n, bytes);
        self.priced(dim, algo, kind, n, bytes, true).protocol
    }

    /// The link class of a dim's links (the row of NCCL's `hwLat` table it takes).
    pub fn link_class(&self, dim: usize) -> LinkClass {
        self.class[dim]
    }

    /// One phase of `algo` priced with each protocol NCCL offers for it, the fastest kept
    /// (NCCL's tuner, `src/graph/tuning.cc` `ncclTopoGetAlgoTime`: time = latency + size /
    /// bandwidth per (algorithm, protocol), the smallest wins; ties go to Simple). The dim's
    /// `latency` is the Simple protocol's per-step latency of a ring on its links; a protocol's
    /// per-step latency and the collective's base latency are that latency scaled by NCCL's
    /// tables ([`protocol_cost`]); its volume is the closed form's over the protocol's share of
    /// bus bandwidth. With zero latency every protocol has zero latency and Simple (full
    /// bandwidth) always wins: a dim without latency runs the closed forms exactly, and so do
    /// `ring` and `fc` dims and a dim with a written algorithm (SIMULATION.md's closed forms).
    fn priced(
        &self,
        dim: usize,
        algo: Algorithm,
        kind: CollectiveKind,
        n: u32,
        bytes: ByteVolume,
        charge_base: bool,
    ) -> Priced {
        let alpha = self.latency_ps[dim];
        let (steps, volume) = closed_form(algo, kind, n, Ps(alpha), bytes);
        let plain = Priced {
            protocol: Protocol::Simple,
            phase: Phase {
                dim,
                latency: steps,
                volume,
            },
        };
        // SIMULATION.md: `ring` and `fc` dims (and a dim whose algorithm is written) run the
        // closed forms exactly, which tests hold; only on `switch` does venusc price "the
        // algorithm NCCL would pick", and NCCL picks a protocol with it.
        if n <= 1 || alpha == 0 || !self.picks_like_nccl(dim) {
            return plain;
        }
        let scale = |ps: u64, k: f64| (ps as f64 * k).round() as u64;
        let mut best: Option<(f64, Priced)> = None;
        for p in Protocol::PREFERENCE {
            let Some(c) = protocol_cost(self.class[dim], algo, kind, p) else {
                continue;
            };
            let base = if charge_base { scale(alpha, c.base) } else { 0 };
            let latency = base.saturating_add(scale(steps.0, c.step));
            let volume = volume / c.bandwidth;
            let time = latency as f64 + volume.0 * Ps::PER_SECOND as f64 / self.bw[dim];
            if best.as_ref().is_none_or(|(t, _)| time < *t) {
                let phase = Phase {
                    dim,
                    latency: Ps(latency),
                    volume,
                };
                best = Some((time, Priced { protocol: p, phase }));
            }
        }
        best.map_or(plain, |(_, p)| p)
    }

    /// Whether NCCL's tuner prices collectives on `dim`: a `switch` dim without a written
    /// algorithm.
    fn picks_like_nccl(&self, dim: usize) -> bool {
        self.algo[dim].is_none() && self.dims[dim].topology == Topology::Switch
    }

    /// The algorithm a dim uses for a collective: the dim's override, else ring on `ring`,
    /// direct on `fc`, and on `switch` what NCCL's tuner would pick.
    ///
    /// NCCL's tuner (`src/graph/tuning.cc`, `ncclTopoGetAlgoTime`) estimates every algorithm's
    /// time as latency + size / bandwidth and takes the fastest. We do the same with our closed
    /// forms, each candidate at its fastest protocol with its base latency
    /// ([`Network::protocol_for`]): all-reduce picks the double binary tree over the ring when
    /// it is faster (for small messages: `2·⌈log2 n⌉` steps against `2(n−1)`; the ring for
    /// large ones, `2(n−1)/n·S` against `2·S`); reduce-scatter and all-gather pick
    /// halving-doubling over ring when n is a power of two and it is faster (standing in for
    /// NCCL's logarithmic-latency PAT algorithm, NCCL 2.23, Simple only); all-to-all is direct
    /// (a switch gives full bisection). Ties go to ring.
    pub fn algorithm_for(
        &self,
        dim: usize,
        kind: CollectiveKind,
        n: u32,
        bytes: ByteVolume,
    ) -> Algorithm {
        let d = &self.dims[dim];
        if let Some(a) = self.algo[dim] {
            return a;
        }
        // With in-network reduction NCCL runs all-reduce on NVLS (NVSwitch) or CollNet (IB
        // SHARP) whenever it is available (`src/graph/tuning.cc` gives them the highest bus
        // bandwidth); it is never slower than the closed forms below (volume S against at
        // least 2(n−1)/n·S, two latencies).
        if d.fabric.sharp && kind == CollectiveKind::AllReduce {
            return Algorithm::InNetwork;
        }
        match d.topology {
            Topology::Ring => Algorithm::Ring,
            Topology::FullyConnected => Algorithm::Direct,
            Topology::Switch => {
                let candidate = match kind {
                    CollectiveKind::AllToAll | CollectiveKind::AllToAllV(_) => {
                        return Algorithm::Direct
                    }
                    CollectiveKind::AllReduce => Algorithm::DoubleBinaryTree,
                    CollectiveKind::ReduceScatter | CollectiveKind::AllGather
                        if n.is_power_of_two() =>
                    {
                        Algorithm::HalvingDoubling
                    }
                    _ => return Algorithm::Ring,
                };
                // Each candidate at its fastest protocol, base latency included.
                let time = |a| {
                    let ph = self.priced(dim, a, kind, n, bytes, true).phase;
                    ph.latency.0 as f64 + ph.volume.0 * Ps::PER_SECOND as f64 / self.bw[dim]
                };
                if time(candidate) < time(Algorithm::Ring) {
                    candidate
                } else {
                    Algorithm::Ring
                }
            }
        }
    }
}

/// A group's extent per dim (dims with extent 1 omitted), innermost first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupShape {
    pub extents: Vec<(usize, u32)>,
    pub grid: bool,
    pub members: u32,
    /// The dims (of `extents`) on which the members sit under more than one leaf switch of a
    /// fat tree; empty without one.
    pub cross_leaf: Vec<usize>,
}

/// One step of a collective: `latency` of fixed cost, then `volume` bytes through each
/// member's link on `dim` (both directions) at the link's rate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Phase {
    pub dim: usize,
    pub latency: Ps,
    pub volume: ByteVolume,
}

/// NCCL's three protocols (`src/device/prims_ll.h`, `prims_ll128.h`, `prims_simple.h`): LL
/// sends 8-byte lines of 4 data bytes and a flag (lowest latency, a quarter to a third of the
/// bus bandwidth), LL128 128-byte lines of 120 data bytes, Simple whole chunks behind a
/// fence (full bandwidth, the highest latency per step).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Protocol {
    Ll,
    Ll128,
    Simple,
}

impl Protocol {
    /// The order protocols are tried in: Simple first, so that a tie keeps full bandwidth.
    pub const PREFERENCE: [Protocol; 3] = [Protocol::Simple, Protocol::Ll128, Protocol::Ll];

    fn index(self) -> usize {
        match self {
            Protocol::Ll => 0,
            Protocol::Ll128 => 1,
            Protocol::Simple => 2,
        }
    }
}

/// The row of NCCL's hardware-latency table (`hwLat`: `NCCL_HW_NVLINK`, `NCCL_HW_PCI`,
/// `NCCL_HW_NET`) a dim's links take. The engine sees no link names, so the class comes from
/// the dim's place: a fully connected dim is a scale-up fabric (NVLink through NVSwitch, AMD
/// Infinity Fabric), the innermost dim of several that is not fully connected is inside the
/// node (PCIe), and every other dim crosses NICs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LinkClass {
    NvLink,
    Pci,
    Net,
}

impl LinkClass {
    /// The class of dim `i` of `dims` (innermost first).
    pub fn of(dims: &[NetDim], i: usize) -> LinkClass {
        match dims[i].topology {
            Topology::FullyConnected => LinkClass::NvLink,
            _ if i == 0 && dims.len() > 1 => LinkClass::Pci,
            _ => LinkClass::Net,
        }
    }

    fn index(self) -> usize {
        match self {
            LinkClass::NvLink => 0,
            LinkClass::Pci => 1,
            LinkClass::Net => 2,
        }
    }
}

/// NCCL's per-step hardware latency in microseconds, `hwLat[class][algorithm][protocol]` for
/// the tree and ring rows, protocols LL, LL128, Simple (NVIDIA/nccl `src/graph/tuning.cc`,
/// NCCL 2.18-2.19: NVLink tree {0.6, 1.25, 4}, ring {0.6, 1.9, 3.4}; PCI tree {1.0, 1.9, 6},
/// ring {1.0, 2.5, 5.7}; NET tree {5.0, 8.5, 14}, ring {2.7, 4.0, 14}).
const HW_LAT: [[[f64; 3]; 2]; 3] = [
    [[0.6, 1.25, 4.0], [0.6, 1.9, 3.4]],
    [[1.0, 1.9, 6.0], [1.0, 2.5, 5.7]],
    [[5.0, 8.5, 14.0], [2.7, 4.0, 14.0]],
];

/// NCCL's base latency of one collective in microseconds, `baseLat[algorithm][protocol]` for
/// the tree and ring rows (the same file: tree {6.8, 14.0, 0}, ring {6.6, 14.0, 8.4}).
const BASE_LAT: [[f64; 3]; 2] = [[6.8, 14.0, 0.0], [6.6, 14.0, 8.4]];

/// A protocol's cost on one phase, relative to the dim: `base` and `step` scale the dim's
/// latency (the per-collective base latency and a step's latency), `bandwidth` is the share of
/// the dim's bus bandwidth the protocol reaches.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProtocolCost {
    pub base: f64,
    pub step: f64,
    pub bandwidth: f64,
}

/// The cost of `protocol` for `algo` running `kind` on links of `class`, or `None` where NCCL
/// does not offer it. The dim's latency is NCCL's ring Simple `hwLat` of its class, so every
/// figure is NCCL's table entry over that one: the tables' shape, the cluster's own scale.
///
/// Bus bandwidth per protocol (`src/graph/tuning.cc`, "Various model refinements"): ring LL
/// ¼ of Simple's for all-reduce or across nodes, ⅓ otherwise; ring LL128 0.92 (120 of 128
/// bytes); tree LL 1/3.8, tree LL128 7/9 inside a node and 0.915 across nodes. The halving-
/// doubling stand-in for PAT runs Simple only, as PAT does in NCCL; the in-network all-reduce
/// (NVLS, CollNet: Simple only) and all-to-all (grouped send/receive, not a collective
/// kernel) keep their closed forms without a base latency. The other kinds on a dim with
/// in-network reduction run the ring, priced as the ring.
pub fn protocol_cost(
    class: LinkClass,
    algo: Algorithm,
    kind: CollectiveKind,
    protocol: Protocol,
) -> Option<ProtocolCost> {
    let exact = ProtocolCost {
        base: 0.0,
        step: 1.0,
        bandwidth: 1.0,
    };
    let simple_only = algo == Algorithm::HalvingDoubling;
    match kind {
        CollectiveKind::AllToAll | CollectiveKind::AllToAllV(_) => {
            return (protocol == Protocol::Simple).then_some(exact);
        }
        _ if algo == Algorithm::InNetwork && kind == CollectiveKind::AllReduce => {
            return (protocol == Protocol::Simple).then_some(exact);
        }
        _ if simple_only && protocol != Protocol::Simple => return None,
        _ => {}
    }
    let tree = algo == Algorithm::DoubleBinaryTree && kind == CollectiveKind::AllReduce;
    let row = if tree { 0 } else { 1 };
    let c = class.index();
    let p = protocol.index();
    let unit = HW_LAT[c][1][2];
    let bandwidth = match (tree, protocol) {
        (_, Protocol::Simple) => 1.0,
        (false, Protocol::Ll) if kind == CollectiveKind::AllReduce || class == LinkClass::Net => {
            0.25
        }
        (false, Protocol::Ll) => 1.0 / 3.0,
        (false, Protocol::Ll128) => 0.92,
        (true, Protocol::Ll) => 1.0 / 3.8,
        (true, Protocol::Ll128) if class == LinkClass::Net => 0.915,
        (true, Protocol::Ll128) => 7.0 / 9.0,
    };
    Some(ProtocolCost {
        base: BASE_LAT[row][p] / unit,
        step: HW_LAT[c][row][p] / unit,
        bandwidth,
    })
}

/// A phase priced with the protocol chosen for it.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Priced {
    protocol: Protocol,
    phase: Phase,
}

fn ceil_log2(n: u32) -> u64 {
    if n <= 1 {
        0
    } else {
        (32 - (n - 1).leading_zeros()) as u64
    }
}

/// `(latency, volume)` of one collective on `n` ranks of one dim, `alpha` the
/// per-message latency. `S` is the full buffer (see `NodeKind::Collective`).
///
/// | algorithm | all-reduce | reduce-scatter / all-gather | all-to-all |
/// |---|---|---|---|
/// | ring | 2(n−1)α + 2(n−1)/n·S | (n−1)α + (n−1)/n·S | (n−1)α + (n−1)/2·S |
/// | direct | 2α + 2(n−1)/n·S (RS then AG) | α + (n−1)/n·S | α + (n−1)/n·S |
/// | halving-doubling | 2⌈log2 n⌉α + 2(n−1)/n·S | ⌈log2 n⌉α + (n−1)/n·S | ⌈log2 n⌉α + ⌈log2 n⌉/2·S (Bruck) |
/// | double binary tree | 2⌈log2 n⌉α + 2·S | as ring | as ring |
/// | in-network | 2α + S | as ring | as ring |
///
/// Ring all-to-all forwards each block hop by hop: step j carries (n−j)/n·S, which sums to
/// (n−1)/2·S. The double binary tree (NCCL 2.4, "Massively Scale Your Deep Learning Training
/// with NCCL 2.4") splits S over two trees; each rank is interior in one and a leaf in the
/// other, so it sends and receives 2·S in total while reduce and broadcast pipeline through
/// ⌈log2 n⌉ levels each.
///
/// In-network reduction: each GPU sends its S bytes once to the switch, which reduces them and
/// multicasts the result, so each GPU also receives S once: up to the switch and back, two
/// latencies. Its algorithm bandwidth is the link's: nccl-tests defines all-reduce bus
/// bandwidth as algorithm bandwidth × 2(n−1)/n
/// (<https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md>), so NVLS reaches a
/// bus bandwidth of 2(n−1)/n × the link's, above the ring's 1 ×.
pub fn closed_form(
    algo: Algorithm,
    kind: CollectiveKind,
    n: u32,
    alpha: Ps,
    s: ByteVolume,
) -> (Ps, ByteVolume) {
    let (lat, vol) = closed_form_raw(algo, kind, n, alpha.0, s.0);
    (Ps(lat), ByteVolume(vol))
}

/// [`closed_form`] on bare picoseconds and bytes.
fn closed_form_raw(
    algo: Algorithm,
    kind: CollectiveKind,
    n: u32,
    alpha: u64,
    s: f64,
) -> (u64, f64) {
    if n <= 1 {
        return (0, 0.0);
    }
    let nf = n as f64;
    let m1 = (n - 1) as u64;
    let frac = (nf - 1.0) / nf;
    let lg = ceil_log2(n);
    let a = |k: u64| alpha.saturating_mul(k);
    use Algorithm::*;
    use CollectiveKind::*;
    match (algo, kind) {
        (Ring, AllReduce) => (a(2 * m1), 2.0 * frac * s),
        (Ring, ReduceScatter | AllGather) => (a(m1), frac * s),
        (Ring, AllToAll | AllToAllV(_)) => (a(m1), (nf - 1.0) / 2.0 * s),
        (Direct, AllReduce) => (a(2), 2.0 * frac * s),
        (Direct, ReduceScatter | AllGather | AllToAll | AllToAllV(_)) => (a(1), frac * s),
        (HalvingDoubling, AllReduce) => (a(2 * lg), 2.0 * frac * s),
        (HalvingDoubling, ReduceScatter | AllGather) => (a(lg), frac * s),
        (HalvingDoubling, AllToAll | AllToAllV(_)) => (a(lg), lg as f64 / 2.0 * s),
        (DoubleBinaryTree, AllReduce) => (a(2 * lg), 2.0 * s),
        (DoubleBinaryTree, k) => closed_form_raw(Ring, k, n, alpha, s),
        (InNetwork, AllReduce) => (a(2), s),
        (InNetwork, k) => closed_form_raw(Ring, k, n, alpha, s),
    }
}

/// `(latency, volume)` of one all-to-all-v phase on `n` ranks of one dim whose busiest member
/// moves `load` bytes across it (see [`Network::phases_v`]): the uniform closed forms with
/// `(n−1)/n · S` replaced by that load.
pub fn closed_form_v(algo: Algorithm, n: u32, alpha: Ps, load: ByteVolume) -> (Ps, ByteVolume) {
    if n <= 1 {
        return (Ps(0), ByteVolume(0.0));
    }
    let nf = n as f64;
    let lg = ceil_log2(n);
    let a = |k: u64| Ps(alpha.0.saturating_mul(k));
    match algo {
        Algorithm::Direct => (a(1), load),
        Algorithm::Ring | Algorithm::DoubleBinaryTree | Algorithm::InNetwork => {
            (a((n - 1) as u64), load * (nf / 2.0))
        }
        Algorithm::HalvingDoubling => (a(lg), load * (lg as f64 * nf / (2.0 * (nf - 1.0)))),
    }
}
