//! Stragglers: GPUs of a cluster that run slower than the rest.
//!
//! Input: the cluster's `slow_gpus FRACTION SPEED [SEED]`, `slow_rank RANK SPEED`,
//! `slow_node NODE SPEED` and `slow_link NODE SPEED` items as plain [`SlowSpec`]s. Output:
//! [`slow_ranks`], every slow rank once with its speed (the share of its peak compute rate it
//! reaches), in rank order; [`slow_links`], every rank whose scale-out NIC is slow, with the
//! share of bandwidth it reaches.
//! Invariants: the result depends on the specs and the world size alone (a fraction is spread
//! by [`SplitMix64`] from its seed, never by a clock or a hash order); a rank named by several
//! items keeps the slowest speed; ranks outside the world are dropped (validation reported
//! them, E0337).

use std::collections::BTreeMap;
use venus_base::base::rng::SplitMix64;
use venus_base::base::Ratio;

/// Which GPUs one item makes slow.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SlowWhich {
    /// `slow_gpus FRACTION SPEED [SEED]`: `round(FRACTION × world)` ranks picked by the seed.
    Fraction { share: Ratio, seed: u64 },
    /// `slow_rank RANK SPEED`: one global rank.
    Rank(u64),
    /// `slow_node NODE SPEED`: every GPU of one coordinate of the outermost dim (a node).
    Node(u64),
    /// `slow_link NODE SPEED`: the scale-out NIC (the outermost dim's links) of every GPU of
    /// one node; SPEED is the share of the dim's bandwidth it reaches, compute keeps its rate.
    Link(u64),
}

/// One `slow_*` item of a cluster.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlowSpec {
    pub which: SlowWhich,
    /// The share of the GPU's compute rate the slow GPUs reach (in (0, 1]); for
    /// [`SlowWhich::Link`], the share of the link's bandwidth.
    pub speed: Ratio,
}

/// A slow rank and its speed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlowRank {
    pub rank: u32,
    pub speed: Ratio,
}

/// How many ranks `share` of a world of `world` GPUs is: rounded to the nearest rank.
pub fn fraction_count(share: Ratio, world: u64) -> u64 {
    let k = (share.0 * world as f64).round();
    if k.is_finite() && k > 0.0 {
        (k as u64).min(world)
    } else {
        0
    }
}

/// Every slow rank once, in rank order, with the slowest compute speed any item gives it.
/// `per_node` is the GPUs of one coordinate of the outermost dim (the product of the dims
/// inside it). `slow_link` items slow no compute: see [`slow_links`].
pub fn slow_ranks(specs: &[SlowSpec], world: u64, per_node: u64) -> Vec<SlowRank> {
    slowest_per_rank(specs, world, per_node, false)
}

/// Every rank whose scale-out NIC a `slow_link` item slows, once, in rank order, with the
/// lowest share of bandwidth any item gives it.
pub fn slow_links(specs: &[SlowSpec], world: u64, per_node: u64) -> Vec<SlowRank> {
    slowest_per_rank(specs, world, per_node, true)
}

/// The ranks the compute items (`links` false) or the `slow_link` items (`links` true) name,
/// each with the lowest speed given to it.
fn slowest_per_rank(specs: &[SlowSpec], world: u64, per_node: u64, links: bool) -> Vec<SlowRank> {
    let mut speed: BTreeMap<u64, f64> = BTreeMap::new();
    let mut mark = |rank: u64, s: f64| {
        if rank < world {
            let e = speed.entry(rank).or_insert(s);
            *e = e.min(s);
        }
    };
    for spec in specs
        .iter()
        .filter(|s| matches!(s.which, SlowWhich::Link(_)) == links)
    {
        let s = spec.speed.0;
        match spec.which {
            SlowWhich::Rank(r) => mark(r, s),
            SlowWhich::Node(n) | SlowWhich::Link(n) => {
                let first = n.saturating_mul(per_node);
                for r in first..first.saturating_add(per_node).min(world) {
                    mark(r, s);
                }
            }
            SlowWhich::Fraction { share, seed } => {
                let k = fraction_count(share, world);
                for r in SplitMix64::new(seed).choose(world, k) {
                    mark(r, s);
                }
            }
        }
    }
    speed
        .into_iter()
        .filter_map(|(rank, s)| {
            Some(SlowRank {
                rank: u32::try_from(rank).ok()?,
                speed: Ratio(s),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(which: SlowWhich, speed: f64) -> SlowSpec {
        SlowSpec {
            which,
            speed: Ratio(speed),
        }
    }

    #[test]
    fn a_rank_named_twice_keeps_the_slowest_speed() {
        let r = slow_ranks(
            &[
                spec(SlowWhich::Rank(17), 0.8),
                spec(SlowWhich::Rank(17), 0.5),
                spec(SlowWhich::Rank(3), 0.9),
            ],
            64,
            8,
        );
        assert_eq!(
            r,
            vec![
                SlowRank {
                    rank: 3,
                    speed: Ratio(0.9)
                },
                SlowRank {
                    rank: 17,
                    speed: Ratio(0.5)
                }
            ]
        );
    }

    #[test]
    fn a_node_slows_its_eight_gpus() {
        let r = slow_ranks(&[spec(SlowWhich::Node(3), 0.5)], 64, 8);
        let ranks: Vec<u32> = r.iter().map(|s| s.rank).collect();
        assert_eq!(ranks, (24..32).collect::<Vec<u32>>());
    }

    #[test]
    fn one_percent_of_4096_is_41_ranks_fixed_by_the_seed() {
        let one = [spec(
            SlowWhich::Fraction {
                share: Ratio(0.01),
                seed: 7,
            },
            0.8,
        )];
        let a = slow_ranks(&one, 4096, 8);
        assert_eq!(a.len(), 41);
        assert_eq!(a, slow_ranks(&one, 4096, 8));
        assert!(a.iter().all(|s| s.rank < 4096 && s.speed == Ratio(0.8)));
    }

    #[test]
    fn ranks_outside_the_world_are_dropped() {
        assert!(slow_ranks(&[spec(SlowWhich::Rank(64), 0.8)], 64, 8).is_empty());
        assert_eq!(fraction_count(Ratio(0.001), 64), 0);
        assert_eq!(fraction_count(Ratio(1.0), 64), 64);
    }
}
