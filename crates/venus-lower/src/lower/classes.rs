//! Symmetry classes: which ranks one simulated representative stands for.
//!
//! Input: the layout, the extra radix cuts of the cluster (fat-tree leaves) and the slow ranks
//! (stragglers). Output: the class of every rank (the representative's rank), or `None` when
//! the rank grids and the cluster do not share one mixed radix (then every rank is simulated).
//!
//! Why it is exact: the dense grid, the expert grid and the cluster dims refine one mixed
//! radix, each rank a vector of digits. Relabelling the values of any one digit by a
//! permutation maps every group to a group of the same kind and keeps which dims two ranks
//! differ in (the engine's symmetry conditions). Without stragglers every digit below the pipeline
//! stage may be relabelled freely: one class per stage (the rank with tp = cp = dp = 0).
//! With stragglers only the relabellings that fix every slow rank are symmetries: those that
//! permute, in each digit, the values no slow rank has ("unmarked"). A rank's class keeps its
//! marked digit values and replaces each unmarked one by the digit's smallest unmarked value,
//! so slow ranks are classes of their own, and the ranks that share a group with one split off
//! from those that do not. Two kinds of digit are never relabelled while stragglers exist: the
//! pipeline stage's (stages differ) and the context-parallel ring's (a ring's P2P neighbours
//! are only invariant under rotations, which do not fix a marked value).

use venus_plan::plan::layout::Layout;

/// The radix cuts of the layout and the cluster, increasing, from 1 up to the world size:
/// `None` when they do not form a divisibility chain (no common mixed radix).
pub(crate) fn radix(layout: &Layout, extra: &[u64]) -> Option<Vec<u64>> {
    let s = layout.sizes();
    let w = u64::from(layout.world());
    let mut cuts: Vec<u64> = vec![1];
    let mut push_chain = |sizes: &[u64]| {
        let mut acc = 1u64;
        for &x in sizes {
            acc = acc.saturating_mul(x);
            cuts.push(acc);
        }
    };
    push_chain(&[s.tp, s.cp, s.dp, s.pp].map(u64::from));
    push_chain(&[s.etp, s.ep, layout.expert_dp(), s.pp].map(u64::from));
    push_chain(layout.cluster_dims());
    cuts.extend_from_slice(extra);
    cuts.push(w);
    cuts.sort_unstable();
    cuts.dedup();
    cuts.windows(2)
        .all(|p| p[0] != 0 && p[1] % p[0] == 0)
        .then_some(cuts)
}

/// One digit of the mixed radix: ranks `r` have value `(r / low) % radix` in it.
struct Digit {
    low: u64,
    radix: u64,
    /// Whether each value is kept as is (a slow rank has it, or the digit is never relabelled).
    kept: Vec<bool>,
    /// The value every unkept value becomes (the smallest unkept one).
    stand_in: u64,
}

/// The class (representative rank) of every rank, for a layout whose cuts are `cuts`
/// ([`radix`]) and the slow ranks `slow` (any order).
pub(crate) fn classes(layout: &Layout, cuts: &[u64], slow: &[u32]) -> Vec<u32> {
    let s = layout.sizes();
    let world = layout.world();
    let block = world / s.pp.max(1);
    if slow.is_empty() {
        return (0..world).map(|r| (r / block) * block).collect();
    }
    let (cp_low, cp_high) = (u64::from(s.tp), u64::from(s.tp) * u64::from(s.cp));
    let digits: Vec<Digit> = cuts
        .windows(2)
        .map(|p| {
            let (low, radix) = (p[0], p[1] / p[0]);
            let frozen = low >= u64::from(block) || (s.cp > 1 && low >= cp_low && p[1] <= cp_high);
            let mut kept = vec![frozen; radix as usize];
            for &r in slow {
                kept[((u64::from(r) / low) % radix) as usize] = true;
            }
            let stand_in = kept.iter().position(|&k| !k).unwrap_or(0) as u64;
            Digit {
                low,
                radix,
                kept,
                stand_in,
            }
        })
        .collect();
    (0..world)
        .map(|r| {
            let r = u64::from(r);
            let class: u64 = digits
                .iter()
                .map(|d| {
                    let v = (r / d.low) % d.radix;
                    let v = if d.kept[v as usize] { v } else { d.stand_in };
                    v * d.low
                })
                .sum();
            class as u32
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use venus_plan::plan::layout::LayoutSizes;

    fn layout(tp: u32, dp: u32, pp: u32, dims: &[u64]) -> Layout {
        let sizes = LayoutSizes {
            tp,
            cp: 1,
            ep: 1,
            dp,
            pp,
            etp: tp,
        };
        Layout::new(sizes, dims).expect("layout")
    }

    #[test]
    fn without_stragglers_each_stage_is_one_class() {
        let l = layout(2, 4, 2, &[8, 2]);
        let cuts = radix(&l, &[]).expect("radix");
        let c = classes(&l, &cuts, &[]);
        assert_eq!(&c[..8], &[0; 8]);
        assert_eq!(&c[8..], &[8; 8]);
    }

    #[test]
    fn one_slow_rank_splits_its_tp_and_dp_peers_off() {
        // tp 2 × dp 4 on one stage, 8 GPUs in one dim; rank 5 = tp 1, dp 2 is slow.
        let l = layout(2, 4, 1, &[8]);
        let cuts = radix(&l, &[]).expect("radix");
        let c = classes(&l, &cuts, &[5]);
        // Digits: tp (values 0, 1), dp (0..4). Marked: tp 1, dp 2. Unmarked stand-ins: tp 0,
        // dp 0. Classes: (tp 0|1) × (dp 2 | other).
        assert_eq!(c, vec![0, 1, 0, 1, 4, 5, 0, 1]);
        let mut reps = c.clone();
        reps.sort_unstable();
        reps.dedup();
        assert_eq!(reps, vec![0, 1, 4, 5]);
        // Every representative is its own class.
        assert!(reps.iter().all(|&r| c[r as usize] == r));
    }

    #[test]
    fn every_stage_keeps_the_slow_ranks_pattern() {
        let l = layout(1, 4, 2, &[8]);
        let cuts = radix(&l, &[]).expect("radix");
        let c = classes(&l, &cuts, &[2]);
        // Stage 0: dp 2 slow, the others one class; stage 1 (ranks 4..8) splits the same way,
        // its dp-2 rank being rank 2's pipeline neighbour.
        assert_eq!(c, vec![0, 0, 2, 0, 4, 4, 6, 4]);
    }
}
