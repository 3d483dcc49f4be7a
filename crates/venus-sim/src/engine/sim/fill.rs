//! Max-min fair sharing by progressive filling over the component of flows connected
//! through shared links.
//!
//! Input: the ops in flight, the flows on every link and the links' capacities. Output: a new
//! rate per flow of the component. Invariant: the result is bit-identical to a linear scan for
//! the smallest fair share in every round (see [`Fill::rates`]); scratch arrays are reused and
//! reset by epochs, so a call allocates nothing after warm-up but the memo's entry for a
//! component shape it has not seen (below).
//!
//! Two ways to find each round's link, with the same picks: a component of at most
//! [`SCAN_MAX`] links is filled by that linear scan itself, over one share key per link kept
//! up to date as flows are fixed (no sort, no heap); a larger one (a pipeline's chain of P2P
//! flows, a data-parallel collective joining its members' flows under `--all-ranks`) by the
//! sorted initial shares and a heap of changed ones, which is O((L + I) log(L + I)) instead of
//! O(L · rounds).
//!
//! Memo: the rates of a filling are a pure function of the component's shape (its links'
//! capacities in discovery order, and which flows, numbered in discovery order, sit on each
//! link in `res_flows` order), and a training step repeats the same few shapes thousands of
//! times (every microbatch's P2P chain, on every stage). [`Fill::component`] writes that shape
//! as a key while it walks the component; [`Fill::rates`] looks the key up and fills only a
//! shape it has not seen, so the rates are the full filling's to the last bit by construction.

use super::Op;
use crate::engine::id::{IdVec, LinkId, OpId};
use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The most words (key `u32`s plus two per stored rate) the memo holds before it starts
/// over: 16 MiB. A run of the same schedule sees a few thousand shapes of tens of words each;
/// the bound keeps memory flat on a run that never repeats one (a forgotten shape is filled
/// again, with the same result).
const MEMO_MAX_WORDS: usize = 1 << 22;

/// The largest component filled by a linear scan per round ([`Fill::rates`]); past it, the
/// heap. A scan costs about L² key reads for a component of L links (a round per one or two
/// links fixed), the heap a sort and (L + I) log(L + I) entries plus its constant. Measured
/// on chains of two-flow links (the shape of a pipeline's P2P components), release build:
/// the scan is faster up to 16 links and slower from 24 (at 64 links it took twice the
/// heap's time); on GPT-1T's symmetric run (181,038 fillings of 21.5 links on average) 16
/// saves 3% of the filling's instructions, where 64 cost 32% more (`valgrind
/// --tool=callgrind`, docs/scale.md).
pub(super) const SCAN_MAX: usize = 16;

/// A link's share key once its flows are all fixed: above every real key (a share's bit
/// pattern is at most that of +inf), so a scan never picks it.
const DONE: u64 = u64::MAX;

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
    /// Scan filling: per position in `comp_res`, its link's current share key ([`DONE`] once
    /// it carries no unfixed flow).
    keys: Vec<u64>,
    /// Per op slot: its index in `comp_ops` (its discovery number), valid while `op_mark` is
    /// the current epoch.
    op_local: IdVec<OpId, u32>,
    /// The current component's shape, written by [`Fill::component`]: per link in discovery
    /// order its capacity's bits (two words), its flow count, then its flows' discovery
    /// numbers in `res_flows` order.
    key: Vec<u32>,
    /// Filled shapes: per key, the rate of each flow in discovery order.
    memo: FxHashMap<Box<[u32]>, Box<[f64]>>,
    memo_words: usize,
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
            keys: Vec::new(),
            op_local: IdVec::new(),
            key: Vec::new(),
            memo: FxHashMap::default(),
            memo_words: 0,
        }
    }

    /// Makes room for one more op slot.
    pub(super) fn add_op(&mut self) {
        self.op_mark.push(0);
        self.op_frozen.push(0);
        self.op_excl.push(0);
        self.op_excl_cap.push(0.0);
        self.new_rate.push(0.0);
        self.op_local.push(0);
    }

    /// Collects into `comp_res` / `comp_ops` the links and flows connected to `seed`'s links
    /// (depth-first; the discovery order breaks ties in [`Fill::rates`]), and into `key` the
    /// component's shape.
    pub(super) fn component(
        &mut self,
        ops: &IdVec<OpId, Op>,
        res_flows: &IdVec<LinkId, Vec<OpId>>,
        res_cap: &IdVec<LinkId, f64>,
        seed: OpId,
    ) {
        self.epoch = self.epoch.wrapping_add(1);
        let epoch = self.epoch;
        let Fill {
            res_mark,
            op_mark,
            op_local,
            comp_res,
            comp_ops,
            stack,
            key,
            ..
        } = self;
        comp_res.clear();
        comp_ops.clear();
        stack.clear();
        key.clear();
        for &r in &ops[seed].resources {
            if res_mark[r] != epoch {
                res_mark[r] = epoch;
                stack.push(r);
            }
        }
        while let Some(r) = stack.pop() {
            comp_res.push(r);
            let flows = &res_flows[r];
            let bits = res_cap[r].to_bits();
            key.extend_from_slice(&[bits as u32, (bits >> 32) as u32, flows.len() as u32]);
            for &o in flows {
                if op_mark[o] != epoch {
                    op_mark[o] = epoch;
                    op_local[o] = comp_ops.len() as u32;
                    comp_ops.push(o);
                    for &r2 in &ops[o].resources {
                        if res_mark[r2] != epoch {
                            res_mark[r2] = epoch;
                            stack.push(r2);
                        }
                    }
                }
                key.push(op_local[o]);
            }
        }
    }

    /// The max-min fair rate of every flow of the component [`Fill::component`] collected,
    /// into `new_rate`: the memo's for a shape filled before, else [`Fill::rates_full`]'s
    /// (then remembered). Both are the same to the last bit: the filling reads nothing but
    /// the shape (capacities, flow counts, which flow is on which link and in which order).
    pub(super) fn rates(
        &mut self,
        ops: &IdVec<OpId, Op>,
        res_flows: &IdVec<LinkId, Vec<OpId>>,
        res_cap: &IdVec<LinkId, f64>,
    ) {
        if let Some(rates) = self.memo.get(self.key.as_slice()) {
            for (&o, &rate) in self.comp_ops.iter().zip(rates.iter()) {
                self.new_rate[o] = rate;
            }
            return;
        }
        self.rates_full(ops, res_flows, res_cap);
        self.remember();
    }

    /// Stores the current component's rates under its key, starting the memo over when it
    /// would pass [`MEMO_MAX_WORDS`].
    fn remember(&mut self) {
        let words = self.key.len() + 2 * self.comp_ops.len();
        if self.memo_words + words > MEMO_MAX_WORDS {
            self.memo.clear();
            self.memo_words = 0;
        }
        let rates: Box<[f64]> = self.comp_ops.iter().map(|&o| self.new_rate[o]).collect();
        self.memo.insert(self.key.as_slice().into(), rates);
        self.memo_words += words;
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
    pub(super) fn rates_full(
        &mut self,
        ops: &IdVec<OpId, Op>,
        res_flows: &IdVec<LinkId, Vec<OpId>>,
        res_cap: &IdVec<LinkId, f64>,
    ) {
        if self.comp_res.len() <= SCAN_MAX {
            self.rates_scan(ops, res_flows, res_cap);
        } else {
            self.rates_heap(ops, res_flows, res_cap);
        }
    }

    /// Progressive filling by the linear scan itself: every round reads each link's current
    /// share key and picks the smallest, the first found on ties (the smallest position);
    /// fixing a flow updates the keys of its links. A picked link's flows are all fixed, so
    /// its key becomes [`DONE`] (a link whose flows were all fixed elsewhere is a pick that
    /// changes nothing, in either way of filling).
    fn rates_scan(
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
            new_rate,
            comp_res,
            keys,
            ..
        } = self;
        keys.clear();
        for (pos, &ri) in comp_res.iter().enumerate() {
            cap[ri] = res_cap[ri];
            cnt[ri] = res_flows[ri].len() as u32;
            res_pos[ri] = pos as u32;
            keys.push(key_of(cap[ri], cnt[ri]));
        }
        loop {
            let (mut best, mut at) = (DONE, usize::MAX);
            for (pos, &k) in keys.iter().enumerate() {
                if k < best {
                    best = k;
                    at = pos;
                }
            }
            if at == usize::MAX {
                break;
            }
            keys[at] = DONE;
            let r = comp_res[at];
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
                    keys[res_pos[r2] as usize] = key_of(cap[r2], cnt[r2]);
                }
            }
        }
    }

    /// Progressive filling with the sorted initial shares and a heap of the changed ones (the
    /// picks of [`Fill::rates_scan`], for components too large to scan every round).
    fn rates_heap(
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

/// A link's current share key: [`DONE`] once no unfixed flow is left on it.
#[inline]
fn key_of(cap: f64, cnt: u32) -> u64 {
    if cnt > 0 {
        share_key(share(cap, cnt))
    } else {
        DONE
    }
}

/// A link's fair share: its capacity left over its unfixed flows.
#[inline]
fn share(cap: f64, cnt: u32) -> f64 {
    cap.max(0.0) / cnt as f64
}

#[cfg(test)]
mod tests {
    use super::{Fill, SCAN_MAX};
    use crate::engine::id::{Id, IdVec, LinkId, OpId};
    use crate::engine::sim::{Op, OpWhat};
    use crate::trace::RankId;
    use proptest::prelude::*;

    fn op(resources: Vec<LinkId>) -> Op {
        Op {
            what: OpWhat::P2p {
                send: None,
                recv: None,
                src: RankId(0),
                dst: RankId(0),
            },
            phases: Vec::new(),
            phase: 0,
            resources,
            remaining: 0.0,
            rate: 0.0,
            last: 0,
            gen: 0,
            flowing: true,
        }
    }

    /// The ops (each on its distinct links), the flows per link and the capacities.
    type World = (
        IdVec<OpId, Op>,
        IdVec<LinkId, Vec<OpId>>,
        IdVec<LinkId, f64>,
    );

    fn world(links: &[f64], flows: &[Vec<usize>]) -> World {
        let mut ops = IdVec::new();
        let mut res_flows = IdVec::filled(links.len(), Vec::new());
        for f in flows {
            let mut rs: Vec<usize> = f.iter().map(|&l| l % links.len()).collect();
            rs.sort_unstable();
            rs.dedup();
            let id = ops.push(op(rs.iter().map(|&l| LinkId::new(l)).collect()));
            for &l in &rs {
                res_flows[LinkId::new(l)].push(id);
            }
        }
        (ops, res_flows, IdVec::from_vec(links.to_vec()))
    }

    /// The component of op 0 and its flows' rates, filled one way or the other.
    fn fill(w: &World, scan: bool) -> Vec<(OpId, u64)> {
        let (ops, res_flows, cap) = w;
        let mut f = Fill::new(cap.len());
        for _ in 0..ops.len() {
            f.add_op();
        }
        f.component(ops, res_flows, cap, OpId(0));
        if scan {
            f.rates_scan(ops, res_flows, cap);
        } else {
            f.rates_heap(ops, res_flows, cap);
        }
        f.comp_ops
            .iter()
            .map(|&o| (o, f.new_rate[o].to_bits()))
            .collect()
    }

    #[test]
    fn a_chain_of_flows_two_per_link_gets_half_of_each_link_by_either_filling() {
        // Links 0..=3 of 10 GB/s and link 4 of 2 GB/s, flows on (0, 1), (1, 2), (2, 3), (3, 4):
        // link 4 fixes the last flow at 2 GB/s first; then links 1 and 2 (two flows each, 5 GB/s
        // shares) fix the other three at 5 GB/s, though link 3 would leave the third 8.
        let w = world(
            &[10e9, 10e9, 10e9, 10e9, 2e9],
            &[vec![0, 1], vec![1, 2], vec![2, 3], vec![3, 4]],
        );
        let want: Vec<(OpId, u64)> = [(0, 5e9), (1, 5e9), (2, 5e9), (3, 2e9)]
            .iter()
            .map(|&(o, r): &(u32, f64)| (OpId(o), r.to_bits()))
            .collect();
        let mut scan = fill(&w, true);
        let mut heap = fill(&w, false);
        assert_eq!(scan, heap);
        scan.sort_unstable();
        heap.sort_unstable();
        assert_eq!(scan, want);
        assert_eq!(heap, want);
    }

    fn case() -> impl Strategy<Value = (Vec<f64>, Vec<Vec<usize>>)> {
        // Few distinct capacities, so that equal shares (ties) are common; sizes on both sides
        // of SCAN_MAX.
        let cap = prop_oneof![
            Just(12.5e9),
            Just(25e9),
            Just(50e9),
            Just(450e9),
            (1u32..1000).prop_map(|g| f64::from(g) * 1e8),
        ];
        (1usize..2 * SCAN_MAX).prop_flat_map(move |links| {
            (
                proptest::collection::vec(cap.clone(), links),
                proptest::collection::vec(proptest::collection::vec(0..links, 1..5), 1..3 * links),
            )
        })
    }

    /// Every flow's component filled through the memo of `memo` (kept across calls) and by
    /// a fresh full filling: `(seed, flow, memo rate bits, full rate bits)` where they differ.
    fn memo_mismatches(memo: &mut Fill, w: &World) -> Vec<(OpId, OpId, u64, u64)> {
        let (ops, res_flows, cap) = w;
        let mut bad = Vec::new();
        for seed in ops.ids() {
            memo.component(ops, res_flows, cap, seed);
            memo.rates(ops, res_flows, cap);
            let mut full = Fill::new(cap.len());
            for _ in 0..ops.len() {
                full.add_op();
            }
            full.component(ops, res_flows, cap, seed);
            full.rates_full(ops, res_flows, cap);
            assert_eq!(memo.comp_ops, full.comp_ops);
            for &o in &full.comp_ops {
                let (m, f) = (memo.new_rate[o].to_bits(), full.new_rate[o].to_bits());
                if m != f {
                    bad.push((seed, o, m, f));
                }
            }
        }
        bad
    }

    /// The flow set `w` without its flows `drop` (indices modulo the flow count): a
    /// departure, so that the memo sees components that are and are not the ones it holds.
    fn without(links: &[f64], flows: &[Vec<usize>], drop: &[usize]) -> World {
        let kept: Vec<Vec<usize>> = flows
            .iter()
            .enumerate()
            .filter(|(i, _)| !drop.iter().any(|&d| d % flows.len() == *i))
            .map(|(_, f)| f.clone())
            .collect();
        world(links, if kept.is_empty() { flows } else { &kept })
    }

    #[test]
    fn the_memo_answers_a_shape_seen_on_other_links_with_its_filled_rates() {
        // Two chains of the same shape on disjoint links (0-2 and 3-5, the second's links
        // found in the same order): the second is a memo hit and gets the first's rates.
        let w = world(
            &[10e9, 2e9, 10e9, 10e9, 2e9, 10e9],
            &[vec![0, 1], vec![1, 2], vec![3, 4], vec![4, 5]],
        );
        let (ops, res_flows, cap) = &w;
        let mut f = Fill::new(cap.len());
        for _ in 0..ops.len() {
            f.add_op();
        }
        f.component(ops, res_flows, cap, OpId(0));
        f.rates(ops, res_flows, cap);
        assert_eq!(f.memo.len(), 1);
        let first: Vec<f64> = f.comp_ops.iter().map(|&o| f.new_rate[o]).collect();
        f.component(ops, res_flows, cap, OpId(2));
        f.rates(ops, res_flows, cap);
        assert_eq!(f.memo.len(), 1, "the second chain is the same shape");
        assert_eq!(f.comp_ops, [OpId(2), OpId(3)]);
        let second: Vec<f64> = f.comp_ops.iter().map(|&o| f.new_rate[o]).collect();
        assert_eq!(first, [1e9, 1e9]);
        assert_eq!(second, first);
    }

    proptest! {
        /// The memoized filling gives every flow of every component the full filling's rate
        /// to the last bit: on first sight of a flow set, on seeing it again (all memo hits),
        /// and after some flows left (new shapes mixed with known ones), one memo throughout.
        #[test]
        fn memoized_and_full_filling_give_bit_identical_rates(
            (links, flows) in case(),
            drop in proptest::collection::vec(0usize..64, 0..4),
        ) {
            let mut memo = Fill::new(links.len());
            let w = world(&links, &flows);
            for _ in 0..w.0.len() {
                memo.add_op();
            }
            prop_assert_eq!(memo_mismatches(&mut memo, &w), vec![]);
            prop_assert_eq!(memo_mismatches(&mut memo, &w), vec![]);
            let fewer = without(&links, &flows, &drop);
            prop_assert_eq!(memo_mismatches(&mut memo, &fewer), vec![]);
            prop_assert_eq!(memo_mismatches(&mut memo, &w), vec![]);
        }

        /// The scan and the heap pick the same links in the same order: the same component,
        /// the same rate to the last bit for every flow, whatever the capacities and ties.
        #[test]
        fn scan_and_heap_filling_give_bit_identical_rates((links, flows) in case()) {
            let w = world(&links, &flows);
            prop_assert_eq!(fill(&w, true), fill(&w, false));
        }
    }
}
