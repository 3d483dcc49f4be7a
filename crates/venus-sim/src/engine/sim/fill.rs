//! Max-min fair sharing by progressive filling over the component of flows connected
//! through shared links.
//!
//! Input: the ops in flight, the flows on every link and the links' capacities. Output: a new
//! rate per flow of the component. Invariant: the result is bit-identical to a linear scan for
//! the smallest fair share in every round (see [`Fill::rates`]); scratch arrays are reused and
//! reset by epochs, so a call allocates nothing after warm-up.

use super::Op;
use crate::engine::id::{IdVec, LinkId, OpId};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Orders non-negative shares by value (their bit patterns order as the values do; both
/// zeros map to 0).
#[inline]
fn share_key(share: f64) -> u64 {
    if share > 0.0 {
        share.to_bits()
    } else {
        0
    }
}

/// Scratch state of max-min fair sharing, reused across calls (sized per link and per op
/// slot). Marks are epochs, so nothing is cleared between calls.
pub(super) struct Fill {
    epoch: u32,
    /// Per link: the epoch it joined the component, its capacity and unfixed flows left in
    /// the current filling, its position in `comp_res`.
    res_mark: IdVec<LinkId, u32>,
    cap: IdVec<LinkId, f64>,
    cnt: IdVec<LinkId, u32>,
    res_pos: IdVec<LinkId, u32>,
    /// Per op slot: the epoch it joined the component, the epoch its rate was fixed, the
    /// epoch it got an exclusive link and that link's capacity, its new rate.
    op_mark: IdVec<OpId, u32>,
    op_frozen: IdVec<OpId, u32>,
    op_excl: IdVec<OpId, u32>,
    op_excl_cap: IdVec<OpId, f64>,
    pub(super) new_rate: IdVec<OpId, f64>,
    /// The component: links in discovery order, flows.
    comp_res: Vec<LinkId>,
    pub(super) comp_ops: Vec<OpId>,
    stack: Vec<LinkId>,
    /// Filling candidates `(share key, position in comp_res)`: initial shares, sorted; shares
    /// changed during filling, in a min-heap.
    init: Vec<(u64, u32)>,
    heap: BinaryHeap<Reverse<(u64, u32)>>,
}

impl Fill {
    pub(super) fn new(links: usize) -> Fill {
        Fill {
            epoch: 0,
            res_mark: IdVec::filled(links, 0),
            cap: IdVec::filled(links, 0.0),
            cnt: IdVec::filled(links, 0),
            res_pos: IdVec::filled(links, 0),
            op_mark: IdVec::new(),
            op_frozen: IdVec::new(),
            op_excl: IdVec::new(),
            op_excl_cap: IdVec::new(),
            new_rate: IdVec::new(),
            comp_res: Vec::new(),
            comp_ops: Vec::new(),
            stack: Vec::new(),
            init: Vec::new(),
            heap: BinaryHeap::new(),
        }
    }

    /// Makes room for one more op slot.
    pub(super) fn add_op(&mut self) {
        self.op_mark.push(0);
        self.op_frozen.push(0);
        self.op_excl.push(0);
        self.op_excl_cap.push(0.0);
        self.new_rate.push(0.0);
    }

    /// Collects into `comp_res` / `comp_ops` the links and flows connected to `seed`'s links
    /// (depth-first; the discovery order breaks ties in [`Fill::rates`]).
    pub(super) fn component(
        &mut self,
        ops: &IdVec<OpId, Op>,
        res_flows: &IdVec<LinkId, Vec<OpId>>,
        seed: OpId,
    ) {
        self.epoch = self.epoch.wrapping_add(1);
        let epoch = self.epoch;
        let Fill {
            res_mark,
            op_mark,
            comp_res,
            comp_ops,
            stack,
            ..
        } = self;
        comp_res.clear();
        comp_ops.clear();
        stack.clear();
        for &r in &ops[seed].resources {
            if res_mark[r] != epoch {
                res_mark[r] = epoch;
                stack.push(r);
            }
        }
        while let Some(r) = stack.pop() {
            comp_res.push(r);
            for &o in &res_flows[r] {
                if op_mark[o] == epoch {
                    continue;
                }
                op_mark[o] = epoch;
                comp_ops.push(o);
                for &r2 in &ops[o].resources {
                    if res_mark[r2] != epoch {
                        res_mark[r2] = epoch;
                        stack.push(r2);
                    }
                }
            }
        }
    }

    /// Progressive filling over the component: the link with the smallest fair share fixes
    /// the rate of every flow on it; those flows' use is removed from their other links;
    /// repeat. Ties go to the link found first (smallest position in `comp_res`). Candidates
    /// are ordered by (share, position): the initial shares sorted once, and the shares that
    /// change during filling in a min-heap; an entry is stale once its link's share differs
    /// from its key (a newer entry exists) or its flows are all fixed. This picks exactly the
    /// links, in the order, that a linear scan for the minimum would, so the rates are the
    /// same to the last bit, in O((L + I) log(L + I)) for L links and I flow-link incidences
    /// instead of O(L · rounds).
    pub(super) fn rates(
        &mut self,
        ops: &IdVec<OpId, Op>,
        res_flows: &IdVec<LinkId, Vec<OpId>>,
        res_cap: &IdVec<LinkId, f64>,
    ) {
        let epoch = self.epoch;
        let Fill {
            cap,
            cnt,
            res_pos,
            op_frozen,
            op_excl,
            op_excl_cap,
            new_rate,
            comp_res,
            init,
            heap,
            ..
        } = self;
        init.clear();
        heap.clear();
        for (pos, &ri) in comp_res.iter().enumerate() {
            cap[ri] = res_cap[ri];
            cnt[ri] = res_flows[ri].len() as u32;
            res_pos[ri] = pos as u32;
            if cnt[ri] == 1 {
                // A link only one flow uses keeps its full capacity until that flow is
                // fixed, so of such links with equal capacity only the first can be picked.
                let o = res_flows[ri][0];
                if op_excl[o] == epoch {
                    if op_excl_cap[o] == res_cap[ri] {
                        continue;
                    }
                } else {
                    op_excl[o] = epoch;
                    op_excl_cap[o] = res_cap[ri];
                }
            }
            init.push((share_key(share(cap[ri], cnt[ri])), pos as u32));
        }
        init.sort_unstable();
        let current =
            |cap: &IdVec<LinkId, f64>, cnt: &IdVec<LinkId, u32>, (key, pos): (u64, u32)| {
                let r = comp_res[pos as usize];
                cnt[r] > 0 && share_key(share(cap[r], cnt[r])) == key
            };
        let mut next = 0;
        loop {
            while init.get(next).is_some_and(|&e| !current(cap, cnt, e)) {
                next += 1;
            }
            while heap.peek().is_some_and(|&Reverse(e)| !current(cap, cnt, e)) {
                heap.pop();
            }
            let pick = match (init.get(next), heap.peek()) {
                (Some(&a), Some(&Reverse(b))) if b < a => {
                    heap.pop();
                    b
                }
                (Some(&a), _) => {
                    next += 1;
                    a
                }
                (None, Some(&Reverse(b))) => {
                    heap.pop();
                    b
                }
                (None, None) => break,
            };
            let r = comp_res[pick.1 as usize];
            let s = share(cap[r], cnt[r]);
            for &o in &res_flows[r] {
                if op_frozen[o] == epoch {
                    continue;
                }
                op_frozen[o] = epoch;
                new_rate[o] = s;
                for &r2 in &ops[o].resources {
                    cap[r2] -= s;
                    cnt[r2] -= 1;
                    if cnt[r2] > 0 {
                        heap.push(Reverse((share_key(share(cap[r2], cnt[r2])), res_pos[r2])));
                    }
                }
            }
        }
    }
}

/// A link's fair share: its capacity left over its unfixed flows.
#[inline]
fn share(cap: f64, cnt: u32) -> f64 {
    cap.max(0.0) / cnt as f64
}
