//! The MoE token dispatchers and the context-parallel exchanges, lowered: which collective
//! each runs, on which group, with how many bytes.
//!
//! Input: the scenario (its `moe_dispatcher`, `cp_comm`, etp, ep, heads and cluster dims).
//! Output: [`MoeComm`] and [`CpComm`] sizes for a [`StagePlan`](super::StagePlan), the peers
//! and groups of a rank's context-parallel exchange ([`CpPeers`]), and the [`Emitter`] steps
//! that place them around the expert and attention pieces.
//!
//! Semantics follow NVIDIA/Megatron-LM at d98e8a64ddf3 (megatron/core/transformer/moe/
//! token_dispatcher.py) and NVIDIA/TransformerEngine at d0067d0da6cb (transformer_engine/
//! pytorch/attention/dot_product_attention/context_parallel.py):
//! - **alltoall** (l.375-871): all-to-all of `tokens·topk` copies over ep; with etp > 1 an
//!   all-gather-v of the received tokens over the expert tensor-parallel group before the
//!   experts (l.740-752) and a reduce-scatter-v after (l.825-834); the expert linears then run
//!   without a TP collective of their own. Backward mirrors each.
//! - **allgather** (l.233-368): every rank's tokens (hidden, probs and routing map) all-gathered
//!   over tp_ep (etp × ep, l.281-303), each rank keeps the tokens of its experts, and the output
//!   is reduce-scattered back over tp_ep (l.355-368).
//! - **flex** (l.1809-1864): DeepEP / HybridEP fused dispatch and combine over tp_ep, with
//!   topk·etp destinations per token (`router_topk = tp_size · moe_router_topk`, l.1836); its
//!   kernels reach a bandwidth of their own ([`DEEPEP_NVLINK`], [`DEEPEP_RDMA`]) in place of
//!   the dim's NCCL efficiency.
//!   Across NVLink domains it is DeepEP's two hops ([`node_limited_copies`]): RDMA once per
//!   node a token reaches (fewer with node-limited routing, `routed_groups`/`topk_groups`),
//!   then NVLink to each copy's GPU. The alltoall dispatcher sends every (token, expert) copy
//!   on its own, so group-limited routing moves which nodes receive them, not how many: with
//!   evenly drawn experts a token's remote copies stay `topk·(nodes − 1)/nodes` in expectation
//!   (at most `topk`, with or without groups), and its volume is unchanged.
//! - The dense tensor-parallel collectives of a MoE block are the shared experts' (a TP MLP on
//!   the same input, moe_layer.py); without shared experts the block has none.
//! - **p2p**: the ring of `super::Emitter::cp_ring`.
//! - **allgather** (`AttnFuncWithCPAndKVAllGather`, l.3014): K and V all-gathered over cp before
//!   the attention, exposed (l.3215-3216); backward gathers them again (l.3788-3789) and
//!   reduce-scatters dK, dV (l.4107-4123).
//! - **a2a** (`AttnFuncWithCPAndQKVOA2A`, l.4170): all-to-all of Q, K, V over cp before the
//!   attention and of the output after; backward the output gradient before and dQ, dK, dV
//!   after. Blocking.
//! - **a2a_p2p**: the a2a over groups of A consecutive cp ranks (parallel_state.py:378-430
//!   `create_hierarchical_groups`, level 0), then the p2p ring over the cp / A ranks of the same
//!   position in each group (level 1), whose K/V blocks hold s·A/cp tokens of kv/(tp·A) heads:
//!   the p2p block's bytes.
//!
//! Persistent memory is the same for every variant: TE saves the same Q, K, V and output
//! elements (a2a saves the full sequence of heads / cp, allgather re-gathers K/V in backward
//! rather than keeping them), so the memory model needs no per-variant term.

use super::{collective, Bytes, Emitter, GroupId, Layout, S_EP};
use venus_base::base::{CpComm as Variant, MoeDispatcher};
use venus_plan::plan::layout::GroupKind;
use venus_plan::plan::Scenario;
use venus_sim::trace::{Category, CollectiveKind, Label, TraceBuilder};

/// DeepEP's normal kernels over NVLink: 153 GB/s dispatch and 158 GB/s combine of the H800's
/// ~160 GB/s (deepseek-ai/DeepEP@dd758caf, the legacy V1 docs page, "Normal kernels with NVLink
/// and RDMA forwarding", intranode EP 8), their mean over the link: 0.972. HybridEP publishes
/// no table of its own; it is priced with DeepEP's figures.
pub(super) const DEEPEP_NVLINK: f64 = (153.0 + 158.0) / 2.0 / 160.0;
/// DeepEP's normal kernels over RDMA: 43, 58 and 51 GB/s dispatch, 43, 57 and 50 GB/s combine
/// at EP 16, 32 and 64 on CX7 400 Gb/s (~50 GB/s) NICs (same table); their mean is 50.3 GB/s,
/// the NIC's bandwidth (NVLink forwarding lets the "bottleneck bandwidth" pass it), so 1.0.
pub(super) const DEEPEP_RDMA: f64 = 1.0;

/// The expert dispatch and combine of one MoE layer on one rank.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct MoeComm {
    pub dispatcher: MoeDispatcher,
    /// alltoall: one all-to-all over ep (tokens · topk copies of the expert width).
    pub a2a: Bytes,
    /// alltoall with etp > 1: the all-gather-v (output) / reduce-scatter-v (input) over etp.
    pub etp: Bytes,
    /// allgather: the all-gather (output) / reduce-scatter (input) over tp_ep; flex: one
    /// dispatch or combine over tp_ep, scaled by the dim's efficiency over DeepEP's.
    pub tp_ep: Bytes,
    /// The block keeps the dense TP collectives: shared experts with tp > 1.
    pub dense_tp: bool,
    /// flex over more than one NVLink domain: the NVLink hop (every copy to its GPU inside the
    /// domain) and the RDMA hop (each token once to every other domain it reaches), in place
    /// of `tp_ep` ([`node_limited_copies`]).
    pub flex_nvlink: Bytes,
    pub flex_rdma: Bytes,
}

/// DeepEP's internode dispatch sends a token once to each node it reaches over RDMA and
/// forwards it to the node's GPUs over NVLink (deepseek-ai/DeepEP README, "Normal kernels with
/// NVLink and RDMA forwarding", after DeepSeek-V3 §3.4.2: "each token ... is transmitted via IB
/// to the GPUs with the same in-node index on its target nodes ... then instantly forwarded via
/// NVLink"). With `topk` experts drawn evenly over `reach` of `nodes` nodes, the nodes a token
/// reaches are, in expectation, `reach·(1 − (1 − 1/reach)^topk)` (each reachable node missed
/// by all `topk` draws with probability `(1 − 1/reach)^topk`). Group-limited routing whose
/// groups sit on nodes bounds `reach` ([`groups_reach`]): DeepSeek-V3 (top-8 in 4 of 8 groups,
/// one group per node) reaches at most 4 nodes, 3.60 expected, against 5.25 of 8 without.
pub(super) fn node_limited_copies(topk: f64, nodes: f64, reach: f64) -> f64 {
    let r = reach.clamp(1.0, nodes.max(1.0));
    r * (1.0 - (1.0 - 1.0 / r).powf(topk.max(1.0)))
}

/// The nodes a token can reach when the experts of `groups` equal groups sit on `nodes`
/// nodes in expert order (Megatron places expert e on EP rank e / (E / ep), moe_layer.py) and
/// each token picks `topk_groups` groups (moe_utils.py `group_limited_topk`, "Node-limited
/// routing: Set 'moe_router_num_groups' equal to number of nodes in EP group"): a whole
/// number of groups per node leaves `topk_groups` nodes, a group over several nodes
/// `topk_groups · nodes / groups`; groups that straddle nodes unevenly limit nothing.
pub(super) fn groups_reach(groups: u64, topk_groups: u64, nodes: u64) -> u64 {
    let (g, t, n) = (groups.max(1), topk_groups.max(1), nodes.max(1));
    if g == 1 {
        return n;
    }
    if g.is_multiple_of(n) {
        t.min(n)
    } else if n.is_multiple_of(g) {
        t.saturating_mul(n / g).min(n)
    } else {
        n
    }
}

impl MoeComm {
    /// `tokens`: the layer's tokens on this rank (`s/cp·b`, `/tp` with sp); `a2a`: one
    /// all-to-all of them ([`super::a2a_bytes`]); `act`: the element width.
    pub(super) fn new(sc: &Scenario, tokens: u64, a2a: Bytes, act: u64) -> MoeComm {
        let m = &sc.model;
        let (etp, ep) = (sc.etp.max(1), sc.ep.max(1));
        let tp_ep = etp.saturating_mul(ep);
        let dispatcher = sc.plan.moe_dispatcher();
        let tp_ep_bytes = match dispatcher {
            // l.281-303: hidden [T, w], probs [T, E] and the routing map [T, E] (bool) from
            // each of the etp·ep ranks.
            MoeDispatcher::AllGather => {
                let per_token = m
                    .expert_width()
                    .saturating_mul(act)
                    .saturating_add(m.experts().saturating_mul(act.saturating_add(1)));
                Bytes(tp_ep.saturating_mul(tokens).saturating_mul(per_token))
            }
            MoeDispatcher::Flex(_) => {
                let sent = a2a.0.saturating_mul(etp);
                let ratio = flex_ratio(sc, tp_ep);
                Bytes((sent as f64 * ratio).min(u64::MAX as f64) as u64)
            }
            MoeDispatcher::AllToAll => Bytes(0),
        };
        // flex across NVLink domains: the two hops of DeepEP's internode kernels.
        let domain = sc.cluster.dims.first().map_or(1, |d| d.size.max(1));
        let (mut flex_nvlink, mut flex_rdma) = (Bytes(0), Bytes(0));
        if matches!(dispatcher, MoeDispatcher::Flex(_)) && tp_ep > domain {
            let nodes = tp_ep.div_ceil(domain);
            let reach = groups_reach(m.routed_groups(), m.topk_groups(), nodes);
            let topk = m.topk().max(1) as f64;
            let reached = node_limited_copies(topk, nodes as f64, reach as f64);
            let sent = a2a.0.saturating_mul(etp) as f64;
            let cap = |b: f64| Bytes(b.min(u64::MAX as f64) as u64);
            flex_nvlink = cap(sent * flex_ratio(sc, domain));
            flex_rdma = cap(sent * reached / topk * flex_ratio(sc, tp_ep));
        }
        MoeComm {
            dispatcher,
            a2a,
            etp: Bytes(a2a.0.saturating_mul(etp)),
            tp_ep: tp_ep_bytes,
            dense_tp: sc.tp > 1 && m.shared_expert_ffn() > 0,
            flex_nvlink,
            flex_rdma,
        }
    }
}

/// The flex kernels' time over NCCL's on the group's slowest dim: that dim's efficiency over
/// DeepEP's own ([`DEEPEP_NVLINK`] inside the innermost dim, [`DEEPEP_RDMA`] across it). The
/// tp_ep group is `span` consecutive ranks of the expert grid.
fn flex_ratio(sc: &Scenario, span: u64) -> f64 {
    let dims = &sc.cluster.dims;
    let mut inner = 1u64;
    let mut k = 0;
    for (i, d) in dims.iter().enumerate() {
        k = i;
        inner = inner.saturating_mul(d.size.max(1));
        if inner >= span {
            break;
        }
    }
    let eff = dims
        .get(k)
        .and_then(|d| d.efficiency)
        .map_or(1.0, |r| r.0)
        .clamp(1e-6, 1.0);
    let deepep = if k == 0 { DEEPEP_NVLINK } else { DEEPEP_RDMA };
    eff / deepep
}

/// The context-parallel exchange of one attention block on one rank.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct CpComm {
    pub variant: Variant,
    /// a2a: Q, K and V of the rank's sequence slice (before the forward, after the backward).
    pub qkv: Bytes,
    /// a2a: the output (after the forward) and its gradient (before the backward).
    pub out: Bytes,
    /// allgather: the gathered K and V of the whole sequence (and the dK, dV reduce-scatter).
    pub gathered: Bytes,
}

impl CpComm {
    /// `block`: the p2p ring's K/V block (`2·(s/cp)·b·kv/tp·head_dim` elements).
    pub(super) fn new(sc: &Scenario, block: Bytes, act: u64) -> CpComm {
        let m = &sc.model;
        let tp = sc.tp.max(1);
        let tokens = (m.seq / sc.cp.max(1)).saturating_mul(sc.micro_batch);
        let q = (m.heads / tp).max(1);
        let kv = (m.kv_groups() / tp).max(1);
        let d = m.head_dim();
        let elems = |heads: u64| tokens.saturating_mul(heads).saturating_mul(d);
        CpComm {
            variant: sc.plan.cp_comm(),
            qkv: Bytes(elems(q.saturating_add(kv.saturating_mul(2))).saturating_mul(act)),
            out: Bytes(elems(q).saturating_mul(act)),
            gathered: Bytes(block.0.saturating_mul(sc.cp.max(1))),
        }
    }
}

/// A rank's context-parallel peers and groups for its plan's variant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct CpPeers {
    /// The p2p ring: its size and this rank's neighbours (the whole cp group, or for a2a_p2p
    /// the ranks at this rank's position in every a2a group).
    pub ring: u32,
    pub next: u32,
    pub prev: u32,
    /// The group the a2a or the all-gather runs over (`None` for p2p or a group of one).
    pub group: Option<GroupId>,
}

impl CpPeers {
    pub(super) fn new(sc: &Scenario, layout: &Layout, tb: &mut TraceBuilder, rank: u32) -> CpPeers {
        let members = layout.group_of(GroupKind::Cp, rank).unwrap_or_default();
        let me = members.iter().position(|&r| r == rank).unwrap_or(0);
        let variant = sc.plan.cp_comm();
        let a = match variant {
            Variant::A2aP2p => sc.plan.cp_a2a.unwrap_or(1).max(1) as usize,
            _ => 1,
        };
        let (ring, group): (Vec<u32>, Vec<u32>) = match variant {
            Variant::P2p => (members.clone(), Vec::new()),
            Variant::A2a | Variant::AllGather => (vec![rank], members.clone()),
            Variant::A2aP2p => {
                let ring = members
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| i % a == me % a)
                    .map(|(_, &r)| r)
                    .collect();
                let group = members
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| i / a == me / a)
                    .map(|(_, &r)| r)
                    .collect();
                (ring, group)
            }
        };
        let at = ring.iter().position(|&r| r == rank).unwrap_or(0);
        let n = ring.len().max(1);
        let peer = |i: usize| ring.get(i % n).copied().unwrap_or(rank);
        CpPeers {
            ring: n as u32,
            next: peer(at + 1),
            prev: peer(at + n - 1),
            group: (group.len() > 1).then(|| tb.group(&super::ranks(&group))),
        }
    }
}

impl Emitter<'_> {
    /// A collective of the MoE block on the compute stream (blocking), or inside an
    /// overlapped pair on [`S_EP`], which the op after the pair waits for.
    fn moe_collective(&mut self, kind: CollectiveKind, group: Option<GroupId>, bytes: Bytes) {
        let Some(g) = group else {
            return;
        };
        let node = collective(kind, g, bytes);
        let label = Label::Text(self.n.ep);
        if self.in_pair {
            let id = self.issue(node, S_EP, Category::EpComm, label, &[]);
            self.pair_a2a.push(id);
        } else {
            self.on_compute(node, Category::EpComm, label);
        }
    }

    /// The dispatch before a MoE layer's experts (and, mirrored, before their backward).
    pub(super) fn moe_dispatch(&mut self) {
        if !self.st.ep {
            return;
        }
        let c = self.st.moe;
        match c.dispatcher {
            MoeDispatcher::AllToAll => {
                self.moe_collective(CollectiveKind::AllToAll, self.g.ep, c.a2a);
                self.moe_collective(CollectiveKind::AllGather, self.g.expert_tp, c.etp);
            }
            MoeDispatcher::AllGather => {
                self.moe_collective(CollectiveKind::AllGather, self.g.expert_tp_ep, c.tp_ep);
            }
            MoeDispatcher::Flex(_) => self.flex_exchange(),
        }
    }

    /// flex's dispatch or combine: one exchange over tp_ep inside an NVLink domain; across
    /// domains the RDMA hop over the ranks of this rank's in-domain index and the NVLink hop
    /// inside the domain, each with its own bytes ([`MoeComm::flex_rdma`]).
    fn flex_exchange(&mut self) {
        let c = self.st.moe;
        match self.g.flex_hops {
            Some((nvlink, rail)) => {
                self.moe_collective(CollectiveKind::AllToAll, rail, c.flex_rdma);
                self.moe_collective(CollectiveKind::AllToAll, nvlink, c.flex_nvlink);
            }
            None => {
                self.moe_collective(CollectiveKind::AllToAll, self.g.expert_tp_ep, c.tp_ep);
            }
        }
    }

    /// The combine after a MoE layer's experts.
    pub(super) fn moe_combine(&mut self) {
        if !self.st.ep {
            return;
        }
        let c = self.st.moe;
        match c.dispatcher {
            MoeDispatcher::AllToAll => {
                self.moe_collective(CollectiveKind::ReduceScatter, self.g.expert_tp, c.etp);
                self.moe_collective(CollectiveKind::AllToAll, self.g.ep, c.a2a);
            }
            MoeDispatcher::AllGather => {
                self.moe_collective(CollectiveKind::ReduceScatter, self.g.expert_tp_ep, c.tp_ep);
            }
            MoeDispatcher::Flex(_) => self.flex_exchange(),
        }
    }

    /// A MoE layer's block: dispatch, the experts' piece, combine, inside the shared experts'
    /// TP collectives when there are any. Without them the block has no dense TP collective:
    /// the router and dispatcher take the sequence-parallel input as it is (with etp 1 and
    /// ep 1 each tp rank runs its own tokens through whole experts).
    pub(super) fn moe_block(&mut self, pass: super::Pass, body: impl FnOnce(&mut Self)) {
        let wrapped = |s: &mut Self| {
            s.moe_dispatch();
            body(s);
            s.moe_combine();
        };
        if self.st.moe.dense_tp {
            self.tp_block(pass, wrapped);
        } else {
            wrapped(self);
        }
    }

    /// A blocking collective of the context-parallel exchange on the compute stream.
    fn cp_collective(&mut self, kind: CollectiveKind, bytes: Bytes) {
        if let Some(g) = self.g.cp_peers.group {
            self.on_compute(
                collective(kind, g, bytes),
                Category::CpComm,
                Label::Text(self.n.cp),
            );
        }
    }

    /// One attention piece with the plan's context-parallel exchange around it: `factor` 1
    /// in forward, 2 in backward (the ring carries K/V and dK/dV).
    pub(super) fn cp_attention(&mut self, backward: bool, body: impl FnOnce(&mut Self)) {
        if !self.st.cp {
            body(self);
            return;
        }
        let c = self.st.cp_comm;
        let factor = if backward { 2 } else { 1 };
        match c.variant {
            Variant::P2p => {
                let ring = self.cp_ring(factor);
                body(self);
                self.pending.extend(ring);
            }
            Variant::AllGather => {
                self.cp_collective(CollectiveKind::AllGather, c.gathered);
                body(self);
                if backward {
                    self.cp_collective(CollectiveKind::ReduceScatter, c.gathered);
                }
            }
            Variant::A2a | Variant::A2aP2p => {
                let (before, after) = if backward {
                    (c.out, c.qkv)
                } else {
                    (c.qkv, c.out)
                };
                self.cp_collective(CollectiveKind::AllToAll, before);
                let ring = self.cp_ring(factor);
                body(self);
                self.pending.extend(ring);
                self.cp_collective(CollectiveKind::AllToAll, after);
            }
        }
    }

    /// The recomputed forward's exchange of a MoE layer under full recompute: Megatron
    /// re-runs the layer's forward, its dispatch and combine included
    /// (megatron/core/transformer/transformer_block.py `_checkpointed_forward`).
    pub(super) fn recompute_moe(&mut self) {
        if self.st.moe.dense_tp {
            self.tp_enter();
            self.tp_exit();
        }
        self.moe_dispatch();
        self.moe_combine();
    }
}
