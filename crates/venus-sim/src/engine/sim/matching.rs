//! Pairing before the run: P2P rendezvous partners and collective instances.
//!
//! Input: the flat node arrays of [`Sim`]. Output: every send and receive's [`Pairing`] (its
//! matching other side, or a mirror for a non-simulated peer of the same class) and every
//! collective's instance, with the instances' member rows and phase signatures.
//! Invariant: matching is in program order per (src, dst, tag) and per group, so it does not
//! depend on hash order.

use super::{Inst, Pairing, Sim};
use crate::engine::error::EngineError;
use crate::engine::id::{GNodeId, IdVec, InstId, SigId};
use crate::trace::{CollectiveKind, GroupId, NodeKind, RankId};
use rustc_hash::FxHashMap;
use venus_base::base::Csr;

/// Sends and receives per (src, dst, tag), each in program order. Fx hashing: the keys are
/// small integers and never come from an adversary; the map is only ever read in sorted key
/// order, so its iteration order cannot affect results.
type P2pQueues = FxHashMap<(RankId, RankId, u32), (Vec<GNodeId>, Vec<GNodeId>)>;

impl Sim<'_> {
    /// Pairs the k-th send from `a` to `b` with tag `t` with the k-th receive on `b` from `a`
    /// with tag `t`, in program order (FIFO per (src, dst, tag)).
    pub(super) fn match_p2p(&mut self) -> Result<(), EngineError> {
        let class_sim = self.class_sim();
        let mut queues: P2pQueues = FxHashMap::default();
        for g in self.kinds.ids() {
            let me = self.rank_of(g);
            let (peer, key, is_send) = match self.kind(g) {
                NodeKind::Send { peer, tag, .. } => (peer, (me, peer, tag), true),
                NodeKind::Recv { peer, tag, .. } => (peer, (peer, me, tag), false),
                _ => continue,
            };
            if !self.simulated(peer) {
                if !self.represented(peer, &class_sim) {
                    return Err(EngineError::Unsimulated {
                        op: self.op_ref(g),
                        rank: peer,
                    });
                }
                if self.trace.class_of(peer) != self.trace.class_of(me) {
                    return Err(EngineError::Asymmetric {
                        op: self.op_ref(g),
                        peer,
                    });
                }
                self.pairing[g] = Pairing::Mirror;
                continue;
            }
            let q = queues.entry(key).or_default();
            if is_send {
                q.0.push(g);
            } else {
                q.1.push(g);
            }
        }
        let mut keys: Vec<_> = queues.keys().copied().collect();
        keys.sort_unstable();
        for k in keys {
            let (sends, recvs) = &queues[&k];
            for (&s, &r) in sends.iter().zip(recvs) {
                let (NodeKind::Send { bytes: sb, .. }, NodeKind::Recv { bytes: rb, .. }) =
                    (self.kind(s), self.kind(r))
                else {
                    continue;
                };
                if sb != rb {
                    return Err(EngineError::P2pSizeMismatch {
                        send: self.op_ref(s),
                        recv: self.op_ref(r),
                        send_bytes: sb.0,
                        recv_bytes: rb.0,
                    });
                }
                self.pairing[s] = Pairing::Peer(r);
                self.pairing[r] = Pairing::Peer(s);
            }
        }
        Ok(())
    }

    /// Groups the k-th collective of every simulated member of a group into instance k.
    ///
    /// Per-group state is dense (indexed by group id): nodes are visited rank by rank, so a
    /// rank's running count on a group restarts when the group is first seen on a new rank.
    /// Instance members are laid out in `inst_nodes` by a counting pass (CSR), in node order.
    pub(super) fn match_collectives(&mut self) -> Result<(), EngineError> {
        let class_sim = self.class_sim();
        let ngroups = self.shapes.len();
        // Per group: (rank index last seen + 1, collectives of that rank on it so far).
        let mut count: IdVec<GroupId, (u32, u32)> = IdVec::filled(ngroups, (0, 0));
        // Per group: its instances in order; simulated members (`None` until first seen).
        let mut group_insts: IdVec<GroupId, Vec<InstId>> = IdVec::filled(ngroups, Vec::new());
        let mut needed_of: IdVec<GroupId, Option<u32>> = IdVec::filled(ngroups, None);
        // First node of every instance (for mismatch reports).
        let mut first: IdVec<InstId, GNodeId> = IdVec::new();
        // Fx hashing (small integer keys); never iterated.
        let mut sigs: FxHashMap<(GroupId, CollectiveKind, u64), SigId> = FxHashMap::default();
        for g in self.kinds.ids() {
            let NodeKind::Collective { kind, group, bytes } = self.kind(g) else {
                continue;
            };
            let ri = self.node_rank[g].0;
            let c = &mut count[group];
            if c.0 != ri + 1 {
                *c = (ri + 1, 0);
            }
            let k = c.1 as usize;
            c.1 += 1;
            let inst = match group_insts[group].get(k) {
                Some(&i) => {
                    let f = &self.insts[i];
                    // An all-to-all-v's members send different totals (`bytes` is each
                    // one's row of the table); the table itself must agree.
                    let v = matches!(kind, CollectiveKind::AllToAllV(_));
                    if f.kind != kind || (!v && f.bytes != bytes.0) {
                        return Err(EngineError::CollectiveMismatch {
                            first: self.op_ref(first[i]),
                            other: self.op_ref(g),
                            group,
                        });
                    }
                    i
                }
                None => {
                    let needed = match needed_of[group] {
                        Some(n) => n,
                        None => {
                            let gm = self.trace.group(group);
                            if let Some(&m) = gm
                                .iter()
                                .find(|&&m| !self.simulated(m) && !self.represented(m, &class_sim))
                            {
                                return Err(EngineError::Unsimulated {
                                    op: self.op_ref(g),
                                    rank: m,
                                });
                            }
                            let n = gm.iter().filter(|&&m| self.simulated(m)).count() as u32;
                            needed_of[group] = Some(n);
                            self.shapes[group] = Some(self.net.group_shape(gm));
                            n
                        }
                    };
                    let next = SigId(sigs.len() as u32);
                    // An all-to-all-v's phases depend on its table alone.
                    let key_bytes = match kind {
                        CollectiveKind::AllToAllV(_) => 0,
                        _ => bytes.0,
                    };
                    let sig = *sigs.entry((group, kind, key_bytes)).or_insert(next);
                    let i = self.insts.push(Inst {
                        group,
                        kind,
                        bytes: bytes.0,
                        needed,
                        arrived: 0,
                        sig,
                    });
                    first.push(g);
                    // A rank's k-th collective on a group exists only if its (k-1)-th did.
                    group_insts[group].push(i);
                    i
                }
            };
            self.pairing[g] = Pairing::Member(inst);
        }
        self.sig_phases = IdVec::filled(sigs.len(), None);
        let pairing = &self.pairing;
        self.inst_nodes = Csr::from_pairs(
            self.insts.len(),
            pairing.ids().filter_map(|g| match pairing[g] {
                Pairing::Member(i) => Some((i.0, g)),
                _ => None,
            }),
        );
        Ok(())
    }
}
