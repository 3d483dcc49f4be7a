//! Parallel state: rank ↔ (tp, cp, ep, dp, pp) coordinates and process groups, as Megatron-LM's
//! `parallel_state.py` builds them.
//!
//! Input: [`LayoutSizes`] (the parallel sizes of a validated plan) and the cluster dim sizes,
//! innermost first. Output: a [`Layout`] that answers, arithmetically, which coordinates a rank
//! has, which group of each [`GroupKind`] it belongs to, who its pipeline neighbours are and
//! which cluster dims a group spans.
//!
//! Invariants:
//! - Nothing is materialised per rank: a `Layout` is a handful of integers plus the cluster dims,
//!   so memory does not grow with dp. Groups are produced on request ([`Layout::group_of`],
//!   [`Layout::groups`]), one at a time.
//! - Group membership and order are exactly those of Megatron-LM's
//!   `generate_masked_orthogonal_rank_groups` with order `tp-cp-ep-dp-pp`
//!   (megatron/core/parallel_state.py:269–375): groups are enumerated by the unmasked
//!   coordinates in mixed radix, first unmasked dim fastest, and members by the masked
//!   coordinates, first masked dim fastest. "Rank in group" is the position in that list.
//! - Two rank grids exist, as in parallel_state.py:859–896: the dense grid (tp, cp, ep = 1, dp,
//!   pp) and the expert grid (etp, cp = 1, ep, expert_dp, pp).

use std::fmt;

/// Parallel sizes of a plan. `dp` is the dense data-parallel size (world / (tp·cp·pp)); `ep`
/// and `etp` only shape the expert grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LayoutSizes {
    pub tp: u32,
    pub cp: u32,
    pub ep: u32,
    pub dp: u32,
    pub pp: u32,
    /// Expert tensor parallelism; Megatron defaults it to `tp` (arguments.py:587–588).
    pub etp: u32,
}

impl LayoutSizes {
    /// Sizes with `etp = tp`, Megatron's default.
    pub fn new(tp: u32, cp: u32, ep: u32, dp: u32, pp: u32) -> LayoutSizes {
        LayoutSizes {
            tp,
            cp,
            ep,
            dp,
            pp,
            etp: tp,
        }
    }
}

/// Why a [`Layout`] cannot be built. The plan stage reports these as diagnostics; here they
/// are plain data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LayoutError {
    /// A parallel size is 0.
    ZeroSize(&'static str),
    /// tp·cp·dp·pp does not fit in a `u32` rank id.
    WorldTooLarge,
    /// world % (etp·ep·pp) != 0 (parallel_state.py:876–884).
    ExpertGrid { world: u32, etp_ep_pp: u64 },
    /// The cluster dims do not multiply to the world size.
    Cluster { world: u32, cluster: u64 },
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LayoutError::ZeroSize(name) => write!(f, "`{name}` must be at least 1"),
            LayoutError::WorldTooLarge => write!(f, "world size does not fit in 32 bits"),
            LayoutError::ExpertGrid { world, etp_ep_pp } => write!(
                f,
                "world size ({world}) is not divisible by expert_tensor_model_pipeline_parallel size ({etp_ep_pp})"
            ),
            LayoutError::Cluster { world, cluster } => write!(
                f,
                "cluster has {cluster} GPUs but the plan needs a world of {world}"
            ),
        }
    }
}

/// Every group kind Megatron builds that a simulator can use. The token in brackets is the
/// `RankGenerator.get_ranks` token; the line is where parallel_state.py builds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GroupKind {
    /// `tp` (parallel_state.py:1164).
    Tp,
    /// `cp` (parallel_state.py:1117).
    Cp,
    /// `dp` (parallel_state.py:1053).
    Dp,
    /// `dp-cp`: dense gradient reduction (parallel_state.py:963).
    DpCp,
    /// `pp` (parallel_state.py:1240).
    Pp,
    /// `tp-cp` (parallel_state.py:1323).
    TpCp,
    /// `tp-pp`: MODEL_PARALLEL_GROUP (parallel_state.py:1147).
    TpPp,
    /// `tp-dp` (parallel_state.py:1300).
    TpDp,
    /// `tp-dp-cp` (parallel_state.py:1309).
    TpDpCp,
    /// First and last rank of each pp group, `[first]` when pp = 1
    /// (parallel_state.py:560–566, 1269).
    Embedding,
    /// First rank of each pp group (parallel_state.py:569–572, 1279).
    PositionEmbedding,
    /// Expert grid `ep` (parallel_state.py:1357).
    ExpertEp,
    /// Expert grid `tp`, i.e. etp (parallel_state.py:1373).
    ExpertTp,
    /// Expert grid `tp-ep` (parallel_state.py:1388).
    ExpertTpEp,
    /// Expert grid `dp`, i.e. expert_dp (parallel_state.py:1457).
    ExpertDp,
}

impl GroupKind {
    pub const ALL: [GroupKind; 15] = [
        GroupKind::Tp,
        GroupKind::Cp,
        GroupKind::Dp,
        GroupKind::DpCp,
        GroupKind::Pp,
        GroupKind::TpCp,
        GroupKind::TpPp,
        GroupKind::TpDp,
        GroupKind::TpDpCp,
        GroupKind::Embedding,
        GroupKind::PositionEmbedding,
        GroupKind::ExpertEp,
        GroupKind::ExpertTp,
        GroupKind::ExpertTpEp,
        GroupKind::ExpertDp,
    ];

    /// Name used in `--emit groups` and in messages.
    pub fn name(self) -> &'static str {
        match self {
            GroupKind::Tp => "tp",
            GroupKind::Cp => "cp",
            GroupKind::Dp => "dp",
            GroupKind::DpCp => "dp-cp",
            GroupKind::Pp => "pp",
            GroupKind::TpCp => "tp-cp",
            GroupKind::TpPp => "tp-pp",
            GroupKind::TpDp => "tp-dp",
            GroupKind::TpDpCp => "tp-dp-cp",
            GroupKind::Embedding => "embedding",
            GroupKind::PositionEmbedding => "position-embedding",
            GroupKind::ExpertEp => "expert-ep",
            GroupKind::ExpertTp => "expert-tp",
            GroupKind::ExpertTpEp => "expert-tp-ep",
            GroupKind::ExpertDp => "expert-dp",
        }
    }

    /// The grid and mask (over tokens tp, cp, ep, dp, pp) of an orthogonal group kind; `None`
    /// for the embedding kinds, which are derived from pp groups.
    fn mask(self) -> Option<(GridKind, [bool; 5])> {
        const F: bool = false;
        const T: bool = true;
        let dense = |m| Some((GridKind::Dense, m));
        let expert = |m| Some((GridKind::Expert, m));
        match self {
            GroupKind::Tp => dense([T, F, F, F, F]),
            GroupKind::Cp => dense([F, T, F, F, F]),
            GroupKind::Dp => dense([F, F, F, T, F]),
            GroupKind::DpCp => dense([F, T, F, T, F]),
            GroupKind::Pp => dense([F, F, F, F, T]),
            GroupKind::TpCp => dense([T, T, F, F, F]),
            GroupKind::TpPp => dense([T, F, F, F, T]),
            GroupKind::TpDp => dense([T, F, F, T, F]),
            GroupKind::TpDpCp => dense([T, T, F, T, F]),
            GroupKind::Embedding | GroupKind::PositionEmbedding => None,
            GroupKind::ExpertEp => expert([F, F, T, F, F]),
            GroupKind::ExpertTp => expert([T, F, F, F, F]),
            GroupKind::ExpertTpEp => expert([T, F, T, F, F]),
            GroupKind::ExpertDp => expert([F, F, F, T, F]),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum GridKind {
    Dense,
    Expert,
}

/// A rank's coordinates on the dense grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Coords {
    pub tp: u32,
    pub cp: u32,
    pub dp: u32,
    pub pp: u32,
}

/// A rank's coordinates on the expert grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ExpertCoords {
    pub etp: u32,
    pub ep: u32,
    pub edp: u32,
    pub pp: u32,
}

/// The rank layout of one scenario. Cheap to clone; see the module invariants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    sizes: LayoutSizes,
    world: u32,
    expert_dp: u32,
    /// Cluster dim sizes, innermost first; their product is `world`.
    cluster: Vec<u64>,
}

impl Layout {
    /// The layout of a validated scenario on its cluster.
    pub fn for_scenario(sc: &super::Scenario) -> Result<Layout, LayoutError> {
        let narrow = |v: u64| u32::try_from(v).map_err(|_| LayoutError::WorldTooLarge);
        let mut sizes = LayoutSizes::new(
            narrow(sc.tp)?,
            narrow(sc.cp)?,
            narrow(sc.ep)?,
            narrow(sc.dp)?,
            narrow(sc.pp)?,
        );
        sizes.etp = narrow(sc.etp)?;
        let dims: Vec<u64> = sc.cluster.dims.iter().map(|d| d.size).collect();
        Layout::new(sizes, &dims)
    }

    /// Builds the layout. `cluster_dims` are the cluster's dim sizes innermost first; an empty
    /// slice means "one flat dim of `world` ranks".
    pub fn new(sizes: LayoutSizes, cluster_dims: &[u64]) -> Result<Layout, LayoutError> {
        for (name, v) in [
            ("tp", sizes.tp),
            ("cp", sizes.cp),
            ("ep", sizes.ep),
            ("dp", sizes.dp),
            ("pp", sizes.pp),
            ("etp", sizes.etp),
        ] {
            if v == 0 {
                return Err(LayoutError::ZeroSize(name));
            }
        }
        // megatron/training/arguments.py:432,448: world = tp·pp·cp·dp.
        let world = [sizes.tp, sizes.cp, sizes.dp, sizes.pp]
            .iter()
            .try_fold(1u64, |acc, &v| acc.checked_mul(u64::from(v)))
            .filter(|&w| w <= u64::from(u32::MAX))
            .ok_or(LayoutError::WorldTooLarge)?;
        let world32 = world as u32;
        // megatron/core/parallel_state.py:876–884: expert_dp = world / (etp·ep·pp).
        let etp_ep_pp = u64::from(sizes.etp) * u64::from(sizes.ep) * u64::from(sizes.pp);
        if world % etp_ep_pp != 0 {
            return Err(LayoutError::ExpertGrid {
                world: world32,
                etp_ep_pp,
            });
        }
        let expert_dp = (world / etp_ep_pp) as u32;
        let cluster = if cluster_dims.is_empty() {
            vec![world]
        } else {
            cluster_dims.to_vec()
        };
        let product = cluster
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d))
            .unwrap_or(u64::MAX);
        if product != world {
            return Err(LayoutError::Cluster {
                world: world32,
                cluster: product,
            });
        }
        Ok(Layout {
            sizes,
            world: world32,
            expert_dp,
            cluster,
        })
    }

    pub fn sizes(&self) -> LayoutSizes {
        self.sizes
    }

    pub fn world(&self) -> u32 {
        self.world
    }

    pub fn expert_dp(&self) -> u32 {
        self.expert_dp
    }

    pub fn cluster_dims(&self) -> &[u64] {
        &self.cluster
    }

    /// Token sizes of a grid in order tp, cp, ep, dp, pp (parallel_state.py:859–896).
    fn grid(&self, kind: GridKind) -> [u64; 5] {
        let s = self.sizes;
        match kind {
            GridKind::Dense => [s.tp, s.cp, 1, s.dp, s.pp].map(u64::from),
            GridKind::Expert => [s.etp, 1, s.ep, self.expert_dp, s.pp].map(u64::from),
        }
    }

    /// Dense-grid coordinates:
    /// `rank = tp_r + tp·(cp_r + cp·(dp_r + dp·pp_r))` (parallel_state.py:465–557).
    pub fn coords(&self, rank: u32) -> Coords {
        let c = decompose(u64::from(rank), &self.grid(GridKind::Dense));
        Coords {
            tp: c[0] as u32,
            cp: c[1] as u32,
            dp: c[3] as u32,
            pp: c[4] as u32,
        }
    }

    /// Inverse of [`Layout::coords`]; `None` when a coordinate is out of range.
    pub fn rank_of(&self, c: Coords) -> Option<u32> {
        compose(&[c.tp, c.cp, 0, c.dp, c.pp], &self.grid(GridKind::Dense))
    }

    /// Expert-grid coordinates:
    /// `rank = etp_r + etp·(ep_r + ep·(edp_r + edp·pp_r))`.
    pub fn expert_coords(&self, rank: u32) -> ExpertCoords {
        let c = decompose(u64::from(rank), &self.grid(GridKind::Expert));
        ExpertCoords {
            etp: c[0] as u32,
            ep: c[2] as u32,
            edp: c[3] as u32,
            pp: c[4] as u32,
        }
    }

    /// Inverse of [`Layout::expert_coords`].
    pub fn expert_rank_of(&self, c: ExpertCoords) -> Option<u32> {
        compose(&[c.etp, 0, c.ep, c.edp, c.pp], &self.grid(GridKind::Expert))
    }

    /// Number of ranks in each group of `kind`.
    pub fn group_size(&self, kind: GroupKind) -> u32 {
        match kind.mask() {
            Some((grid, mask)) => masked_product(&self.grid(grid), &mask, true) as u32,
            None if kind == GroupKind::Embedding && self.sizes.pp > 1 => 2,
            None => 1,
        }
    }

    /// Number of groups of `kind` (one per pp group for the embedding kinds).
    pub fn group_count(&self, kind: GroupKind) -> u32 {
        match kind.mask() {
            Some((grid, mask)) => masked_product(&self.grid(grid), &mask, false) as u32,
            None => self.world / self.sizes.pp,
        }
    }

    /// Members of group `index` of `kind`, in Megatron's order; `None` if out of range.
    pub fn group(&self, kind: GroupKind, index: u32) -> Option<Vec<u32>> {
        if index >= self.group_count(kind) {
            return None;
        }
        match kind.mask() {
            Some((grid, mask)) => Some(orthogonal_members(
                &self.grid(grid),
                &mask,
                u64::from(index),
            )),
            None => {
                let pp_group = self.group(GroupKind::Pp, index)?;
                Some(embedding_ranks(kind, &pp_group))
            }
        }
    }

    /// Index (in Megatron's enumeration) of the group of `kind` holding `rank`; `None` when
    /// `rank` is out of range or in no such group (a middle pp stage has no embedding group).
    pub fn group_index(&self, kind: GroupKind, rank: u32) -> Option<u32> {
        if rank >= self.world {
            return None;
        }
        match kind.mask() {
            Some((grid, mask)) => {
                let sizes = self.grid(grid);
                let c = decompose(u64::from(rank), &sizes);
                Some(mixed_radix(&c, &sizes, &mask, false) as u32)
            }
            None => {
                let index = self.group_index(GroupKind::Pp, rank)?;
                let pp_r = self.coords(rank).pp;
                let last = self.sizes.pp - 1;
                let member = match kind {
                    GroupKind::Embedding => pp_r == 0 || pp_r == last,
                    _ => pp_r == 0,
                };
                member.then_some(index)
            }
        }
    }

    /// The group of `kind` holding `rank`, members in Megatron's order.
    pub fn group_of(&self, kind: GroupKind, rank: u32) -> Option<Vec<u32>> {
        self.group(kind, self.group_index(kind, rank)?)
    }

    /// Position of `rank` in its group of `kind` (Megatron's "rank in group").
    pub fn rank_in_group(&self, kind: GroupKind, rank: u32) -> Option<u32> {
        self.group_index(kind, rank)?;
        match kind.mask() {
            Some((grid, mask)) => {
                let sizes = self.grid(grid);
                let c = decompose(u64::from(rank), &sizes);
                Some(mixed_radix(&c, &sizes, &mask, true) as u32)
            }
            None => Some(u32::from(self.coords(rank).pp != 0)),
        }
    }

    /// All groups of `kind`, lazily, in Megatron's order.
    pub fn groups(&self, kind: GroupKind) -> impl Iterator<Item = Vec<u32>> + '_ {
        (0..self.group_count(kind)).filter_map(move |i| self.group(kind, i))
    }

    /// The next rank in `rank`'s pipeline, wrapping from the last stage to the first
    /// (parallel_state.py:2104–2117; p2p_communication.py:155–169).
    pub fn pp_next(&self, rank: u32) -> u32 {
        self.pp_step(rank, 1)
    }

    /// The previous rank in `rank`'s pipeline, wrapping from the first stage to the last.
    pub fn pp_prev(&self, rank: u32) -> u32 {
        self.pp_step(rank, self.sizes.pp - 1)
    }

    /// An out-of-range `rank` is returned unchanged.
    fn pp_step(&self, rank: u32, step: u32) -> u32 {
        if rank >= self.world {
            return rank;
        }
        let mut c = self.coords(rank);
        c.pp = ((u64::from(c.pp) + u64::from(step)) % u64::from(self.sizes.pp)) as u32;
        self.rank_of(c).unwrap_or(rank)
    }

    /// Coordinate of `rank` on cluster dim `dim` (ranks fill dims innermost first).
    pub fn cluster_coord(&self, rank: u32, dim: usize) -> u64 {
        let stride: u64 = self.cluster.iter().take(dim).product();
        let size = self.cluster.get(dim).copied().unwrap_or(1);
        (u64::from(rank) / stride.max(1)) % size.max(1)
    }

    /// The outermost cluster dim in which `a` and `b` differ, `None` when `a == b`: the dim
    /// whose link a transfer between them crosses (SIMULATION.md, Communication).
    pub fn outermost_dim_between(&self, a: u32, b: u32) -> Option<usize> {
        (0..self.cluster.len())
            .rev()
            .find(|&d| self.cluster_coord(a, d) != self.cluster_coord(b, d))
    }

    /// The cluster dims, innermost first, in which some members of `group` differ.
    pub fn dims_crossed(&self, group: &[u32]) -> Vec<usize> {
        let Some(&first) = group.first() else {
            return Vec::new();
        };
        (0..self.cluster.len())
            .filter(|&d| {
                let c0 = self.cluster_coord(first, d);
                group.iter().any(|&r| self.cluster_coord(r, d) != c0)
            })
            .collect()
    }
}

/// Coordinates of `index` in mixed radix over `sizes`, first size fastest
/// (`decompose`, parallel_state.py:269–375).
fn decompose(index: u64, sizes: &[u64; 5]) -> [u64; 5] {
    let mut out = [0u64; 5];
    let mut rest = index;
    for (o, &s) in out.iter_mut().zip(sizes) {
        *o = rest % s.max(1);
        rest /= s.max(1);
    }
    out
}

fn compose(coords: &[u32; 5], sizes: &[u64; 5]) -> Option<u32> {
    let mut rank = 0u64;
    let mut stride = 1u64;
    for (&c, &s) in coords.iter().zip(sizes) {
        if u64::from(c) >= s {
            return None;
        }
        rank += u64::from(c) * stride;
        stride *= s;
    }
    u32::try_from(rank).ok()
}

/// Product of the sizes whose mask bit equals `masked`.
fn masked_product(sizes: &[u64; 5], mask: &[bool; 5], masked: bool) -> u64 {
    sizes
        .iter()
        .zip(mask)
        .filter(|(_, &m)| m == masked)
        .map(|(&s, _)| s)
        .product()
}

/// Mixed-radix index of the coordinates selected by `mask == masked`, first selected dim
/// fastest: the group index (unmasked) or the position in the group (masked).
fn mixed_radix(coords: &[u64; 5], sizes: &[u64; 5], mask: &[bool; 5], masked: bool) -> u64 {
    let mut index = 0u64;
    let mut stride = 1u64;
    for i in 0..5 {
        if mask[i] == masked {
            index += coords[i] * stride;
            stride *= sizes[i];
        }
    }
    index
}

/// Members of group `index`, exactly as `generate_masked_orthogonal_rank_groups`
/// (parallel_state.py:269–375) lists them.
fn orthogonal_members(sizes: &[u64; 5], mask: &[bool; 5], index: u64) -> Vec<u32> {
    let mut global_stride = [1u64; 5];
    for i in 1..5 {
        global_stride[i] = global_stride[i - 1] * sizes[i - 1];
    }
    // Offset of the group from its unmasked coordinates.
    let mut base = 0u64;
    let mut rest = index;
    for i in 0..5 {
        if !mask[i] {
            base += (rest % sizes[i]) * global_stride[i];
            rest /= sizes[i];
        }
    }
    let size = masked_product(sizes, mask, true);
    (0..size)
        .map(|pos| {
            let mut rank = base;
            let mut rest = pos;
            for i in 0..5 {
                if mask[i] {
                    rank += (rest % sizes[i]) * global_stride[i];
                    rest /= sizes[i];
                }
            }
            rank as u32
        })
        .collect()
}

/// Megatron's default `get_embedding_ranks` / `get_position_embedding_ranks`
/// (parallel_state.py:560–572): `[first, last]` (or `[first]` when pp = 1) and `[first]`.
fn embedding_ranks(kind: GroupKind, pp_group: &[u32]) -> Vec<u32> {
    match (kind, pp_group) {
        (GroupKind::Embedding, [first, .., last]) => vec![*first, *last],
        (_, [first, ..]) => vec![*first],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The worked example of megatron-semantics.md §2.1: world 16, tp 2, cp 2, dp 2, pp 2,
    /// ep 4, etp 1.
    fn example() -> Layout {
        let sizes = LayoutSizes {
            tp: 2,
            cp: 2,
            ep: 4,
            dp: 2,
            pp: 2,
            etp: 1,
        };
        Layout::new(sizes, &[8, 2]).unwrap()
    }

    fn all(l: &Layout, kind: GroupKind) -> Vec<Vec<u32>> {
        l.groups(kind).collect()
    }

    #[test]
    fn worked_example_dense_groups_match_megatron() {
        let l = example();
        assert_eq!(l.world(), 16);
        assert_eq!(l.expert_dp(), 2);
        assert_eq!(
            all(&l, GroupKind::Tp),
            (0..8).map(|i| vec![2 * i, 2 * i + 1]).collect::<Vec<_>>()
        );
        assert_eq!(
            all(&l, GroupKind::Cp),
            vec![
                vec![0, 2],
                vec![1, 3],
                vec![4, 6],
                vec![5, 7],
                vec![8, 10],
                vec![9, 11],
                vec![12, 14],
                vec![13, 15]
            ]
        );
        assert_eq!(
            all(&l, GroupKind::Dp),
            vec![
                vec![0, 4],
                vec![1, 5],
                vec![2, 6],
                vec![3, 7],
                vec![8, 12],
                vec![9, 13],
                vec![10, 14],
                vec![11, 15]
            ]
        );
        assert_eq!(
            all(&l, GroupKind::DpCp),
            vec![
                vec![0, 2, 4, 6],
                vec![1, 3, 5, 7],
                vec![8, 10, 12, 14],
                vec![9, 11, 13, 15]
            ]
        );
        assert_eq!(
            all(&l, GroupKind::Pp),
            (0..8).map(|i| vec![i, i + 8]).collect::<Vec<_>>()
        );
        assert_eq!(
            all(&l, GroupKind::TpCp),
            vec![
                vec![0, 1, 2, 3],
                vec![4, 5, 6, 7],
                vec![8, 9, 10, 11],
                vec![12, 13, 14, 15]
            ]
        );
    }

    #[test]
    fn worked_example_expert_groups_match_megatron() {
        let l = example();
        assert_eq!(
            all(&l, GroupKind::ExpertEp),
            vec![
                vec![0, 1, 2, 3],
                vec![4, 5, 6, 7],
                vec![8, 9, 10, 11],
                vec![12, 13, 14, 15]
            ]
        );
        assert_eq!(
            all(&l, GroupKind::ExpertDp),
            vec![
                vec![0, 4],
                vec![1, 5],
                vec![2, 6],
                vec![3, 7],
                vec![8, 12],
                vec![9, 13],
                vec![10, 14],
                vec![11, 15]
            ]
        );
        assert_eq!(all(&l, GroupKind::ExpertTp).len(), 16);
        assert_eq!(l.group_of(GroupKind::ExpertTp, 5), Some(vec![5]));
        assert_eq!(
            l.expert_coords(13),
            ExpertCoords {
                etp: 0,
                ep: 1,
                edp: 1,
                pp: 1
            }
        );
    }

    #[test]
    fn embedding_groups_are_first_and_last_pp_stage() {
        let l = example();
        assert_eq!(all(&l, GroupKind::Embedding)[3], vec![3, 11]);
        assert_eq!(all(&l, GroupKind::PositionEmbedding)[3], vec![3]);
        assert_eq!(l.group_of(GroupKind::Embedding, 11), Some(vec![3, 11]));
        assert_eq!(l.rank_in_group(GroupKind::Embedding, 11), Some(1));
        let four = Layout::new(LayoutSizes::new(1, 1, 1, 1, 4), &[]).unwrap();
        assert_eq!(four.group_of(GroupKind::Embedding, 0), Some(vec![0, 3]));
        assert_eq!(four.group_of(GroupKind::Embedding, 2), None);
        let flat = Layout::new(LayoutSizes::new(2, 1, 1, 2, 1), &[]).unwrap();
        assert_eq!(
            all(&flat, GroupKind::Embedding),
            vec![vec![0], vec![1], vec![2], vec![3]]
        );
    }

    #[test]
    fn coordinates_follow_tp_cp_dp_pp_order() {
        let l = example();
        // 13 = 1 + 2·(0 + 2·(1 + 2·1))
        assert_eq!(
            l.coords(13),
            Coords {
                tp: 1,
                cp: 0,
                dp: 1,
                pp: 1
            }
        );
        for r in 0..16 {
            assert_eq!(l.rank_of(l.coords(r)), Some(r));
            assert_eq!(l.expert_rank_of(l.expert_coords(r)), Some(r));
        }
    }

    #[test]
    fn group_of_and_rank_in_group_agree_with_enumeration() {
        let l = example();
        for kind in GroupKind::ALL {
            for (index, g) in l.groups(kind).enumerate() {
                for (pos, &r) in g.iter().enumerate() {
                    assert_eq!(l.group_index(kind, r), Some(index as u32), "{kind:?} {r}");
                    assert_eq!(l.rank_in_group(kind, r), Some(pos as u32), "{kind:?} {r}");
                    assert_eq!(l.group_of(kind, r).as_ref(), Some(&g));
                }
            }
        }
    }

    #[test]
    fn pipeline_neighbours_wrap_around() {
        let l = Layout::new(LayoutSizes::new(2, 1, 1, 2, 4), &[8, 2]).unwrap();
        // pp stride = tp·cp·dp = 4
        assert_eq!(l.pp_next(1), 5);
        assert_eq!(l.pp_next(13), 1);
        assert_eq!(l.pp_prev(1), 13);
        assert_eq!(l.pp_prev(6), 2);
    }

    #[test]
    fn placement_finds_outermost_dim_and_crossed_dims() {
        let l = Layout::new(LayoutSizes::new(2, 1, 1, 4, 2), &[8, 2]).unwrap();
        assert_eq!(l.outermost_dim_between(0, 7), Some(0));
        assert_eq!(l.outermost_dim_between(0, 8), Some(1));
        assert_eq!(l.outermost_dim_between(3, 3), None);
        assert_eq!(
            l.dims_crossed(&l.group_of(GroupKind::Tp, 0).unwrap()),
            vec![0]
        );
        assert_eq!(
            l.dims_crossed(&l.group_of(GroupKind::Pp, 0).unwrap()),
            vec![1]
        );
        assert_eq!(
            l.dims_crossed(&l.group_of(GroupKind::TpPp, 0).unwrap()),
            vec![0, 1]
        );
    }

    #[test]
    fn invalid_sizes_are_errors_not_panics() {
        assert_eq!(
            Layout::new(LayoutSizes::new(0, 1, 1, 1, 1), &[]),
            Err(LayoutError::ZeroSize("tp"))
        );
        assert_eq!(
            Layout::new(LayoutSizes::new(1, 1, 3, 4, 1), &[]),
            Err(LayoutError::ExpertGrid {
                world: 4,
                etp_ep_pp: 3
            })
        );
        assert_eq!(
            Layout::new(LayoutSizes::new(65536, 1, 1, 65536, 2), &[]),
            Err(LayoutError::WorldTooLarge)
        );
        assert_eq!(
            Layout::new(LayoutSizes::new(8, 1, 1, 2, 1), &[8, 4]),
            Err(LayoutError::Cluster {
                world: 16,
                cluster: 32
            })
        );
    }

    #[test]
    fn huge_world_answers_without_materialising_groups() {
        // 16,384 ranks: tp 8, dp 128, pp 16.
        let l = Layout::new(LayoutSizes::new(8, 1, 1, 128, 16), &[8, 2048]).unwrap();
        assert_eq!(l.group_count(GroupKind::Dp), 128);
        assert_eq!(l.group_size(GroupKind::Dp), 128);
        let g = l.group_of(GroupKind::Pp, 16_383).unwrap();
        assert_eq!(g.len(), 16);
        assert_eq!(g[0], 16_383 - 15 * 1024);
        assert_eq!(l.pp_next(16_383), 1023);
        assert_eq!(
            l.dims_crossed(&l.group_of(GroupKind::Tp, 9).unwrap()),
            vec![0]
        );
    }
}
