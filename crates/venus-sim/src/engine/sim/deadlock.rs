//! Explaining a drained queue with unfinished nodes: what every posted operation still
//! waits for, and a dependency cycle if there is one.
//!
//! Input: the state of [`Sim`] after the run. Output: [`EngineError::Deadlock`].
//! Invariant: reads only; the report names ranks and labels, never global indices.

use super::{Pairing, Sim, UNSET};
use crate::engine::error::{EngineError, Stuck, StuckReason};
use crate::engine::id::{GNodeId, Id, IdVec};
use crate::trace::{NodeKind, RankId};

impl Sim<'_> {
    /// Explains a drained queue with unfinished nodes: every posted operation still waiting,
    /// with why, and a dependency cycle if there is one.
    pub(super) fn deadlock(&self, total: u64) -> EngineError {
        let mut stuck = Vec::new();
        for s in self.busy.ids() {
            if self.head[s] >= self.streams.bounds(s.ix()).1 {
                continue;
            }
            let g = self.streams.items()[self.head[s] as usize];
            if self.start[g] == UNSET {
                continue;
            }
            let reason = match (self.kind(g), self.pairing[g]) {
                (NodeKind::Send { peer, tag, .. }, Pairing::Unpaired) => {
                    StuckReason::NoMatchingRecv { peer, tag }
                }
                (NodeKind::Recv { peer, tag, .. }, Pairing::Unpaired) => {
                    StuckReason::NoMatchingSend { peer, tag }
                }
                (NodeKind::Send { .. } | NodeKind::Recv { .. }, Pairing::Peer(p)) => {
                    StuckReason::PeerNeverPosts {
                        peer: self.op_ref(p),
                    }
                }
                (NodeKind::Collective { kind, group, .. }, Pairing::Member(i)) => {
                    let arrived: Vec<RankId> = self
                        .inst_nodes
                        .row(i.ix())
                        .iter()
                        .filter(|&&n| self.start[n] != UNSET)
                        .map(|&n| self.rank_of(n))
                        .collect();
                    let missing = self
                        .trace
                        .group(group)
                        .iter()
                        .copied()
                        .filter(|&m| self.simulated(m) && !arrived.contains(&m))
                        .collect();
                    StuckReason::CollectiveIncomplete {
                        kind,
                        group,
                        missing,
                    }
                }
                _ => continue,
            };
            stuck.push(Stuck {
                op: self.op_ref(g),
                reason,
            });
        }
        let cycle = self
            .find_cycle()
            .into_iter()
            .map(|g| self.op_ref(g))
            .collect();
        EngineError::Deadlock {
            stuck,
            cycle,
            unfinished: total - self.done,
            total,
        }
    }

    /// A cycle among unfinished nodes over dependency and stream-order edges (iterative DFS).
    pub(super) fn find_cycle(&self) -> Vec<GNodeId> {
        let n = self.kinds.len();
        let mut next_in_stream: IdVec<GNodeId, Option<GNodeId>> = IdVec::filled(n, None);
        for s in self.busy.ids() {
            for w in self.streams.row(s.ix()).windows(2) {
                next_in_stream[w[0]] = Some(w[1]);
            }
        }
        let succ = |g: GNodeId, k: usize| -> Option<GNodeId> {
            let deps = self.dependents.row(g.ix());
            match deps.get(k) {
                Some(&d) => Some(d),
                None if k == deps.len() => next_in_stream[g],
                None => None,
            }
        };
        // 0 unvisited, 1 on the stack, 2 done.
        let mut color: IdVec<GNodeId, u8> = IdVec::filled(n, 0);
        let mut stack: Vec<(GNodeId, usize)> = Vec::new();
        for root in self.kinds.ids() {
            if color[root] != 0 || self.end[root] != UNSET {
                continue;
            }
            color[root] = 1;
            stack.push((root, 0));
            while let Some(&mut (g, ref mut k)) = stack.last_mut() {
                let i = *k;
                *k += 1;
                match succ(g, i) {
                    None => {
                        color[g] = 2;
                        stack.pop();
                    }
                    Some(s) if self.end[s] != UNSET || color[s] == 2 => {}
                    Some(s) if color[s] == 1 => {
                        let from = stack.iter().position(|&(x, _)| x == s).unwrap_or(0);
                        return stack[from..].iter().map(|&(x, _)| x).collect();
                    }
                    Some(s) => {
                        color[s] = 1;
                        stack.push((s, 0));
                    }
                }
            }
        }
        Vec::new()
    }
}
