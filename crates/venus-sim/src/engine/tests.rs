//! Closed-form checks of the engine, in exact picoseconds. Bandwidths are chosen so that one
//! byte takes a whole number of picoseconds (100 GB/s = 10 ps per byte).

use super::*;
use crate::trace::synthetic::Pipeline;
use crate::trace::{Category, CollectiveKind, Label, NodeKind, RankId, StreamId, TraceBuilder};
use venus_base::base::{Bytes, BytesPerSec, CollectiveAlgorithm, Ratio, Seconds, Topology};

const US: u64 = 1_000_000;

fn dim(size: u32, topology: Topology, gbps: f64, latency_us: f64) -> NetDim {
    NetDim::new(
        topology,
        size,
        BytesPerSec(gbps * 1e9),
        Seconds(latency_us * 1e-6),
    )
}

fn net(dims: Vec<NetDim>) -> Network {
    Network::from_dims(&dims).unwrap()
}

/// Plain rank numbers as the trace's rank ids.
fn ids(ranks: &[u32]) -> Vec<RankId> {
    ranks.iter().copied().map(RankId).collect()
}

fn send(peer: u32, bytes: u64, tag: u32) -> NodeKind {
    NodeKind::Send {
        peer: RankId(peer),
        bytes: Bytes(bytes),
        tag,
    }
}

fn recv(peer: u32, bytes: u64, tag: u32) -> NodeKind {
    NodeKind::Recv {
        peer: RankId(peer),
        bytes: Bytes(bytes),
        tag,
    }
}

fn compute(ps: u64) -> NodeKind {
    NodeKind::Compute { duration: Ps(ps) }
}

fn run(b: TraceBuilder, n: &Network) -> Timeline {
    run_trace(&b.finish().unwrap(), n, &Options::default()).unwrap()
}

fn end(t: &Timeline, rank: u32, node: u32) -> u64 {
    t.span(t.rank_index(RankId(rank)).unwrap(), NodeId(node))
        .unwrap()
        .1
         .0
}

/// A trace where `rank` posts one op of `kind` (on the comm stream) and nothing else.
fn push(b: &mut TraceBuilder, rank: u32, kind: NodeKind, stream: u16) -> NodeId {
    b.rank(RankId(rank))
        .push(kind, StreamId(stream), Category::Other, Label::None, &[])
}

fn collective_run(n: &Network, members: &[u32], kind: CollectiveKind, bytes: u64) -> Timeline {
    let mut b = TraceBuilder::new(n.world());
    let g = b.group(&ids(members));
    for &r in members {
        push(
            &mut b,
            r,
            NodeKind::Collective {
                kind,
                group: g,
                bytes: Bytes(bytes),
            },
            1,
        );
    }
    run(b, n)
}

#[test]
fn p2p_on_one_dim_takes_latency_plus_bytes_over_bandwidth() {
    let n = net(vec![dim(2, Topology::FullyConnected, 100.0, 1.0)]);
    let mut b = TraceBuilder::new(2);
    push(&mut b, 0, send(1, 1_000_000, 0), 1);
    push(&mut b, 1, recv(0, 1_000_000, 0), 1);
    let t = run(b, &n);
    // 1 us + 1 MB at 100 GB/s (10 us).
    assert_eq!(end(&t, 0, 0), 11 * US);
    assert_eq!(end(&t, 1, 0), 11 * US);
    assert_eq!(t.makespan(), Ps(11 * US));
}

#[test]
fn p2p_between_nodes_uses_the_outer_dim_and_within_a_node_the_inner() {
    let n = net(vec![
        dim(4, Topology::FullyConnected, 400.0, 1.0),
        dim(2, Topology::Switch, 50.0, 5.0),
    ]);
    let mut b = TraceBuilder::new(8);
    // Rank 0 → rank 5 differs on both dims: the outer one (50 GB/s, 5 us) carries it.
    push(&mut b, 0, send(5, 1_000_000, 0), 1);
    push(&mut b, 5, recv(0, 1_000_000, 0), 1);
    // Rank 1 → rank 2 differ on the inner dim only (400 GB/s, 1 us).
    push(&mut b, 1, send(2, 1_000_000, 0), 1);
    push(&mut b, 2, recv(1, 1_000_000, 0), 1);
    let t = run(b, &n);
    assert_eq!(end(&t, 5, 0), 5 * US + 20 * US);
    assert_eq!(end(&t, 2, 0), US + 2_500_000);
}

#[test]
fn a_slow_link_slows_every_transfer_through_it_to_its_share_of_bandwidth() {
    // Two nodes of 4 GPUs; rank 5's scale-out NIC reaches 25% of the outer dim's 50 GB/s.
    let n = net(vec![
        dim(4, Topology::FullyConnected, 400.0, 1.0),
        dim(2, Topology::Switch, 50.0, 5.0),
    ])
    .with_slow_links(&[(RankId(5), 1, Ratio(0.25))]);
    assert_eq!(n.slow_link_ranks(), ids(&[5]));
    for sharing in [Sharing::MaxMinFair, Sharing::Off] {
        let mut b = TraceBuilder::new(8);
        // Into the slow NIC: 1 MB at 12.5 GB/s is 80 us after the 5 us latency.
        push(&mut b, 0, send(5, 1_000_000, 0), 1);
        push(&mut b, 5, recv(0, 1_000_000, 0), 1);
        // A pair of fast NICs keeps 50 GB/s (20 us), and rank 5's NVLink keeps 400 GB/s.
        push(&mut b, 1, send(6, 1_000_000, 0), 1);
        push(&mut b, 6, recv(1, 1_000_000, 0), 1);
        push(&mut b, 7, send(4, 1_000_000, 1), 1);
        push(&mut b, 4, recv(7, 1_000_000, 1), 1);
        let t = run_trace(&b.finish().unwrap(), &n, &Options { sharing }).unwrap();
        assert_eq!(end(&t, 5, 0), 5 * US + 80 * US, "{sharing:?}");
        assert_eq!(end(&t, 6, 0), 5 * US + 20 * US, "{sharing:?}");
        assert_eq!(end(&t, 4, 0), US + 2_500_000, "{sharing:?}");
    }
}

#[test]
fn a_collective_runs_its_cross_node_phase_at_its_slowest_members_link() {
    // One rank per node on 2 nodes, a 2-member all-reduce of 1 MB on a 100 GB/s switch: the
    // ring moves 2 (n − 1) / n · S = 1 MB per member, 10 us at full speed. Rank 1's NIC at 50%
    // makes both members wait for it: 20 us.
    let dims = vec![dim(2, Topology::Switch, 100.0, 0.0)];
    let fast = collective_run(
        &net(dims.clone()),
        &[0, 1],
        CollectiveKind::AllReduce,
        1_000_000,
    );
    let slow_net = net(dims).with_slow_links(&[(RankId(1), 0, Ratio(0.5))]);
    let slow = collective_run(&slow_net, &[0, 1], CollectiveKind::AllReduce, 1_000_000);
    assert_eq!(end(&fast, 0, 0), 10 * US);
    assert_eq!(end(&slow, 0, 0), 20 * US);
    assert_eq!(end(&slow, 1, 0), 20 * US);
}

#[test]
fn slow_links_outside_the_network_or_at_full_speed_change_nothing() {
    let dims = vec![dim(2, Topology::Switch, 100.0, 0.0)];
    let plain = net(dims.clone());
    let same = net(dims).with_slow_links(&[
        (RankId(9), 0, Ratio(0.5)),
        (RankId(0), 3, Ratio(0.5)),
        (RankId(1), 0, Ratio(1.0)),
    ]);
    assert_eq!(plain, same);
    assert_eq!(same.link_bandwidth(RankId(1), 0), BytesPerSec(100e9));
}

#[test]
fn p2p_waits_for_the_later_side_rendezvous() {
    let n = net(vec![dim(2, Topology::FullyConnected, 100.0, 0.0)]);
    let mut b = TraceBuilder::new(2);
    push(&mut b, 0, send(1, 1000, 0), 1);
    let c = push(&mut b, 1, compute(7 * US), 0);
    b.rank(RankId(1)).push(
        recv(0, 1000, 0),
        StreamId(1),
        Category::Recv,
        Label::None,
        &[c],
    );
    let t = run(b, &n);
    // The receive posts at 7 us; 1000 B take 10 ns; the send waits (posted at 0).
    assert_eq!(t.span(0, NodeId(0)).unwrap(), (Ps(0), Ps(7 * US + 10_000)));
    assert_eq!(end(&t, 1, 1), 7 * US + 10_000);
}

#[test]
fn ring_allreduce_reduce_scatter_all_gather_match_closed_forms() {
    let n = net(vec![dim(4, Topology::Ring, 100.0, 1.0)]);
    let all = [0, 1, 2, 3];
    // All-reduce: 2(n−1)α + 2(n−1)/n·S/B = 6 us + 1.5 · 4 MB / 100 GB/s = 6 + 60 us.
    let t = collective_run(&n, &all, CollectiveKind::AllReduce, 4_000_000);
    for r in 0..4 {
        assert_eq!(end(&t, r, 0), 66 * US);
    }
    // Reduce-scatter and all-gather: (n−1)α + (n−1)/n·S/B = 3 + 30 us.
    let t = collective_run(&n, &all, CollectiveKind::ReduceScatter, 4_000_000);
    assert_eq!(t.makespan(), Ps(33 * US));
    let t = collective_run(&n, &all, CollectiveKind::AllGather, 4_000_000);
    assert_eq!(t.makespan(), Ps(33 * US));
    // All-to-all on a ring: (n−1)α + (n−1)/2·S/B = 3 + 60 us.
    let t = collective_run(&n, &all, CollectiveKind::AllToAll, 4_000_000);
    assert_eq!(t.makespan(), Ps(63 * US));
}

#[test]
fn direct_allreduce_on_fc_is_reduce_scatter_plus_all_gather() {
    let n = net(vec![dim(8, Topology::FullyConnected, 100.0, 1.0)]);
    // 2 · (α + 7/8 · S/B) = 2 · (1 + 70) us for S = 8 MB.
    let t = collective_run(
        &n,
        &[0, 1, 2, 3, 4, 5, 6, 7],
        CollectiveKind::AllReduce,
        8_000_000,
    );
    assert_eq!(t.makespan(), Ps(142 * US));
}

#[test]
fn hierarchical_allreduce_on_two_dims_is_rs_inner_ar_outer_ag_inner() {
    let n = net(vec![
        dim(4, Topology::Ring, 100.0, 1.0),
        dim(2, Topology::Ring, 25.0, 4.0),
    ]);
    let t = collective_run(
        &n,
        &[0, 1, 2, 3, 4, 5, 6, 7],
        CollectiveKind::AllReduce,
        8_000_000,
    );
    // RS on dim 0 (n=4, 8 MB): 3 us + 60 us. AR on dim 1 (n=2, 2 MB shard): 8 us + 80 us.
    // AG on dim 0 (n=4, 8 MB): 3 us + 60 us.
    assert_eq!(t.makespan(), Ps((63 + 88 + 63) * US));
}

#[test]
fn group_on_the_inner_dim_of_two_uses_only_that_dim() {
    let n = net(vec![
        dim(4, Topology::Ring, 100.0, 1.0),
        dim(2, Topology::Ring, 25.0, 4.0),
    ]);
    // Ranks 4..8 share their outer coordinate: a plain ring on dim 0.
    let t = collective_run(&n, &[4, 5, 6, 7], CollectiveKind::AllReduce, 4_000_000);
    assert_eq!(t.makespan(), Ps(66 * US));
    // Ranks {1, 5} differ only on dim 1: n = 2 there, 2α + S/B = 8 + 40 us for 1 MB.
    let t = collective_run(&n, &[1, 5], CollectiveKind::AllReduce, 1_000_000);
    assert_eq!(t.makespan(), Ps(48 * US));
}

#[test]
fn switch_picks_tree_below_the_nccl_threshold_and_ring_above() {
    let n = net(vec![dim(8, Topology::Switch, 100.0, 1.0)]);
    // NCCL's NET row, α = 1 us the ring Simple step. 16 KiB: tree LL takes base 6.8/14 α +
    // 2·3 steps of 5/14 α + 2·S/(B/3.8) = 0.485714 + 2.142857 + 1.245184 us; ring LL 0.471429
    // + 14 · 2.7/14 + 1.75·S/(B/4) = 4.318 us; tree Simple 6 + 0.328 us. 8 MB: ring Simple
    // 0.6 + 14 + 140 us against tree Simple 6 + 160 us and ring LL128 1 + 4 + 140/0.92 us.
    assert_eq!(
        n.algorithm_for(0, CollectiveKind::AllReduce, 8, ByteVolume(16384.0)),
        Algorithm::DoubleBinaryTree
    );
    assert_eq!(
        n.protocol_for(0, CollectiveKind::AllReduce, 8, ByteVolume(16384.0)),
        Protocol::Ll
    );
    assert_eq!(
        n.algorithm_for(0, CollectiveKind::AllReduce, 8, ByteVolume(8e6)),
        Algorithm::Ring
    );
    assert_eq!(
        n.protocol_for(0, CollectiveKind::AllReduce, 8, ByteVolume(8e6)),
        Protocol::Simple
    );
    assert_eq!(
        n.algorithm_for(0, CollectiveKind::AllToAll, 8, ByteVolume(1e7)),
        Algorithm::Direct
    );
    let all: Vec<u32> = (0..8).collect();
    let t = collective_run(&n, &all, CollectiveKind::AllReduce, 16384);
    assert_eq!(t.makespan(), Ps(485_714 + 2_142_857 + 1_245_184));
    let t = collective_run(&n, &all, CollectiveKind::AllReduce, 8_000_000);
    assert_eq!(t.makespan(), Ps(154 * US + 600_000));
}

#[test]
fn halving_doubling_override_uses_log_latency() {
    let mut d = dim(8, Topology::Switch, 100.0, 1.0);
    d.algorithm = Some(CollectiveAlgorithm::HalvingDoubling);
    let n = net(vec![d]);
    // 2·log2(8)·α + 2·7/8·S/B = 6 + 140 us for 8 MB.
    let t = collective_run(
        &n,
        &(0..8).collect::<Vec<_>>(),
        CollectiveKind::AllReduce,
        8_000_000,
    );
    assert_eq!(t.makespan(), Ps(146 * US));
}

#[test]
fn zero_cost_chain_finishes_at_time_zero() {
    let n = net(vec![dim(2, Topology::FullyConnected, 100.0, 0.0)]);
    let mut b = TraceBuilder::new(2);
    let mut last = None;
    for i in 0..1000 {
        let r = b.rank(RankId(0));
        let c = r.push(
            compute(0),
            StreamId::COMPUTE,
            Category::ForwardCompute,
            Label::None,
            last.as_slice(),
        );
        last = Some(r.push(
            send(1, 0, i),
            StreamId::COMM,
            Category::Send,
            Label::None,
            &[c],
        ));
        b.rank(RankId(1)).push(
            recv(0, 0, i),
            StreamId::COMM,
            Category::Recv,
            Label::None,
            &[],
        );
    }
    let t = run(b, &n);
    assert_eq!(t.makespan(), Ps(0));
    // One completion event per node: 2000 on rank 0, 1000 on rank 1.
    assert_eq!(t.events(), 3000);
}

#[test]
fn two_concurrent_transfers_sharing_a_link_take_twice_as_long() {
    let n = net(vec![dim(4, Topology::FullyConnected, 100.0, 0.0)]);
    let build = || {
        let mut b = TraceBuilder::new(4);
        // Rank 0 sends to ranks 1 and 2 at once on two streams: its egress link is shared.
        push(&mut b, 0, send(1, 1_000_000, 0), 1);
        push(&mut b, 0, send(2, 1_000_000, 0), 2);
        push(&mut b, 1, recv(0, 1_000_000, 0), 1);
        push(&mut b, 2, recv(0, 1_000_000, 0), 1);
        b.finish().unwrap()
    };
    let t = run_trace(&build(), &n, &Options::default()).unwrap();
    assert_eq!(end(&t, 1, 0), 20 * US);
    assert_eq!(end(&t, 2, 0), 20 * US);
    // Without sharing each gets the full link: 10 us (double counting).
    let t = run_trace(
        &build(),
        &n,
        &Options {
            sharing: Sharing::Off,
        },
    )
    .unwrap();
    assert_eq!(end(&t, 1, 0), 10 * US);
}

#[test]
fn shared_link_rates_are_recomputed_when_a_flow_ends() {
    let n = net(vec![dim(4, Topology::FullyConnected, 100.0, 0.0)]);
    let mut b = TraceBuilder::new(4);
    push(&mut b, 0, send(1, 1_000_000, 0), 1);
    push(&mut b, 0, send(2, 3_000_000, 0), 2);
    push(&mut b, 1, recv(0, 1_000_000, 0), 1);
    push(&mut b, 2, recv(0, 3_000_000, 0), 1);
    let t = run(b, &n);
    // Half rate until the small one ends at 20 us (1 MB moved each), then the remaining 2 MB
    // at full rate: 20 us more. The link is never idle: 4 MB · 10 ps = 40 us.
    assert_eq!(end(&t, 1, 0), 20 * US);
    assert_eq!(end(&t, 2, 0), 40 * US);
}

#[test]
fn collective_and_p2p_on_the_same_link_share_it() {
    let n = net(vec![dim(2, Topology::FullyConnected, 100.0, 0.0)]);
    let mut b = TraceBuilder::new(2);
    let g = b.group(&ids(&[0, 1]));
    let ar = NodeKind::Collective {
        kind: CollectiveKind::AllReduce,
        group: g,
        bytes: Bytes(1_000_000),
    };
    push(&mut b, 0, ar, 1);
    push(&mut b, 1, ar, 1);
    push(&mut b, 0, send(1, 1_000_000, 0), 2);
    push(&mut b, 1, recv(0, 1_000_000, 0), 2);
    let t = run(b, &n);
    // Alone each moves 1 MB per rank in 10 us; together they split rank 0's egress.
    assert_eq!(end(&t, 0, 0), 20 * US);
    assert_eq!(end(&t, 1, 1), 20 * US);
}

#[test]
fn unmatched_send_is_a_deadlock_naming_rank_and_op() {
    let n = net(vec![dim(2, Topology::FullyConnected, 100.0, 0.0)]);
    let mut b = TraceBuilder::new(2);
    b.rank(RankId(0)).push(
        send(1, 64, 7),
        StreamId::COMM,
        Category::Send,
        Label::SendTo { pp: 1 },
        &[],
    );
    b.rank(RankId(1)).push(
        compute(5),
        StreamId::COMPUTE,
        Category::Other,
        Label::None,
        &[],
    );
    let err = run_trace(&b.finish().unwrap(), &n, &Options::default()).unwrap_err();
    let EngineError::Deadlock {
        stuck,
        unfinished,
        total,
        ..
    } = &err
    else {
        panic!("{err}")
    };
    assert_eq!((*unfinished, *total), (1, 2));
    assert_eq!(stuck.len(), 1);
    assert_eq!(stuck[0].op.rank, RankId(0));
    assert_eq!(stuck[0].op.label, "send→pp1");
    assert_eq!(
        stuck[0].reason,
        StuckReason::NoMatchingRecv {
            peer: RankId(1),
            tag: 7
        }
    );
    assert_eq!(
        err.to_string(),
        "deadlock: 1 of 2 nodes never finish\n  rank 0 `send→pp1` (node 0): no matching recv on rank 1 with tag 7"
    );
}

#[test]
fn cyclic_dependency_is_a_deadlock_naming_the_cycle() {
    let n = net(vec![dim(1, Topology::FullyConnected, 100.0, 0.0)]);
    let mut b = TraceBuilder::new(1);
    let (fa, fb) = (b.name("a"), b.name("b"));
    let r = b.rank(RankId(0));
    let a = r.push(
        compute(1),
        StreamId::COMPUTE,
        Category::Other,
        Label::Text(fa),
        &[],
    );
    let c = r.push(
        compute(1),
        StreamId::COMM,
        Category::Other,
        Label::Text(fb),
        &[a],
    );
    r.add_dep(a, c);
    let err = run_trace(&b.finish().unwrap(), &n, &Options::default()).unwrap_err();
    let EngineError::Deadlock {
        cycle,
        stuck,
        unfinished,
        ..
    } = &err
    else {
        panic!("{err}")
    };
    assert_eq!(*unfinished, 2);
    assert!(stuck.is_empty());
    let names: Vec<&str> = cycle.iter().map(|o| o.label.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert!(
        err.to_string()
            .ends_with("dependency cycle on rank 0: `a` → `b` → `a`"),
        "{err}"
    );
}

#[test]
fn collective_a_member_never_reaches_names_the_missing_rank() {
    let n = net(vec![dim(3, Topology::Ring, 100.0, 0.0)]);
    let mut b = TraceBuilder::new(3);
    let g = b.group(&ids(&[0, 1, 2]));
    let ar = NodeKind::Collective {
        kind: CollectiveKind::AllReduce,
        group: g,
        bytes: Bytes(8),
    };
    push(&mut b, 0, ar, 1);
    push(&mut b, 1, ar, 1);
    push(&mut b, 2, compute(1), 0);
    let err = run_trace(&b.finish().unwrap(), &n, &Options::default()).unwrap_err();
    let EngineError::Deadlock { stuck, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(stuck.len(), 2);
    for s in stuck {
        assert_eq!(
            s.reason,
            StuckReason::CollectiveIncomplete {
                kind: CollectiveKind::AllReduce,
                group: g,
                missing: vec![RankId(2)]
            }
        );
    }
}

#[test]
fn p2p_size_mismatch_is_reported_before_running() {
    let n = net(vec![dim(2, Topology::FullyConnected, 100.0, 0.0)]);
    let mut b = TraceBuilder::new(2);
    push(&mut b, 0, send(1, 64, 0), 1);
    push(&mut b, 1, recv(0, 32, 0), 1);
    let err = run_trace(&b.finish().unwrap(), &n, &Options::default()).unwrap_err();
    assert!(
        matches!(
            err,
            EngineError::P2pSizeMismatch {
                send_bytes: 64,
                recv_bytes: 32,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn world_mismatch_is_an_error() {
    let n = net(vec![dim(4, Topology::FullyConnected, 100.0, 0.0)]);
    let b = TraceBuilder::new(2);
    let err = run_trace(&b.finish().unwrap(), &n, &Options::default()).unwrap_err();
    assert_eq!(
        err,
        EngineError::WorldMismatch {
            trace: 2,
            network: 4
        }
    );
}

#[test]
fn p2p_to_an_unsimulated_rank_of_another_class_is_rejected() {
    let n = net(vec![
        dim(2, Topology::FullyConnected, 100.0, 0.0),
        dim(2, Topology::Switch, 10.0, 0.0),
    ]);
    let mut b = TraceBuilder::new(4);
    b.set_classes(ids(&[0, 0, 1, 1]));
    push(&mut b, 0, send(3, 64, 0), 1);
    push(&mut b, 2, recv(0, 64, 0), 1);
    let err = run_trace(&b.finish().unwrap(), &n, &Options::default()).unwrap_err();
    assert!(
        matches!(
            err,
            EngineError::Asymmetric {
                peer: RankId(3),
                ..
            }
        ),
        "{err}"
    );
}

fn pipeline(stages: u32, tp: u32, m: u32, forward: u64, backward: u64) -> Pipeline {
    Pipeline {
        stages,
        tp,
        microbatches: m,
        layers: 2,
        forward: Ps(forward),
        backward: Ps(backward),
        p2p_bytes: Bytes(0),
        tp_bytes: Bytes(0),
        symmetric: false,
    }
}

#[test]
fn one_f_one_b_with_free_links_takes_m_plus_p_minus_1_steps() {
    let n = net(vec![dim(4, Topology::Switch, 100.0, 0.0)]);
    let (tf, tb) = (3 * US, 7 * US);
    let t = run_trace(
        &pipeline(4, 1, 8, tf, tb).build().unwrap(),
        &n,
        &Options::default(),
    )
    .unwrap();
    assert_eq!(t.makespan(), Ps((8 + 4 - 1) * (tf + tb)));
    // Every stage computes m · (t_f + t_b); the first stage ends last.
    assert_eq!(t.busy(0, Category::ForwardCompute), Ps(8 * tf));
    assert_eq!(t.busy(3, Category::BackwardCompute), Ps(8 * tb));
    assert_eq!(t.finish(0), t.makespan());
}

#[test]
fn one_f_one_b_with_fewer_microbatches_than_stages() {
    let n = net(vec![dim(8, Topology::Switch, 100.0, 0.0)]);
    let t = run_trace(
        &pipeline(8, 1, 3, 2 * US, 4 * US).build().unwrap(),
        &n,
        &Options::default(),
    )
    .unwrap();
    assert_eq!(t.makespan(), Ps((3 + 8 - 1) * 6 * US));
}

fn costly_pipeline(symmetric: bool) -> Pipeline {
    Pipeline {
        p2p_bytes: Bytes(2_000_000),
        tp_bytes: Bytes(4_000_000),
        symmetric,
        ..pipeline(4, 4, 6, 30 * US, 60 * US)
    }
}

fn tp_pp_net() -> Network {
    net(vec![
        dim(4, Topology::FullyConnected, 400.0, 1.0),
        dim(4, Topology::Switch, 50.0, 5.0),
    ])
}

#[test]
fn same_input_gives_identical_timelines() {
    let tr = costly_pipeline(false).build().unwrap();
    let n = tp_pp_net();
    let a = run_trace(&tr, &n, &Options::default()).unwrap();
    let b = run_trace(&tr, &n, &Options::default()).unwrap();
    assert_eq!(a, b);
    assert!(a.events() > 0);
}

#[test]
fn symmetric_run_equals_full_run_on_representatives() {
    let n = tp_pp_net();
    let full = run_trace(
        &costly_pipeline(false).build().unwrap(),
        &n,
        &Options::default(),
    )
    .unwrap();
    let sym_trace = costly_pipeline(true).build().unwrap();
    let sym = run_trace(&sym_trace, &n, &Options::default()).unwrap();
    assert_eq!(sym.simulated_ranks(), ids(&[0, 4, 8, 12]));
    assert_eq!(full.simulated_ranks().len(), 16);
    for (i, &r) in sym.simulated_ranks().iter().enumerate() {
        let f = full.rank_index(r).unwrap();
        assert_eq!(sym.starts(i), full.starts(f));
        assert_eq!(sym.ends(i), full.ends(f));
        assert_eq!(sym.finish(i), full.finish(f));
    }
    assert_eq!(sym.makespan(), full.makespan());
    // 6 microbatches, 4 stages, tp all-reduces: the costs are real, so more than compute.
    assert!(sym.makespan() > Ps(9 * 90 * US));
}

#[test]
fn group_that_is_not_a_grid_runs_flat_on_its_outer_dim() {
    let n = net(vec![
        dim(4, Topology::Ring, 100.0, 1.0),
        dim(2, Topology::Ring, 25.0, 4.0),
    ]);
    // {0, 5} differ on both dims but are not a 2 × 2 grid: one flat ring of 2 on dim 1,
    // 2α + S/B = 8 + 40 us for 1 MB (like an embedding group of first and last stage).
    let shape = n.group_shape(&ids(&[0, 5]));
    assert!(!shape.grid);
    let t = collective_run(&n, &[0, 5], CollectiveKind::AllReduce, 1_000_000);
    assert_eq!(t.makespan(), Ps(48 * US));
}

#[test]
fn ring_exchange_with_mirrored_peers_equals_the_full_ring() {
    let n = net(vec![dim(4, Topology::FullyConnected, 100.0, 2.0)]);
    let build = |simulated: &[u32]| {
        let mut b = TraceBuilder::new(4);
        b.set_classes(vec![RankId(0); 4]);
        for &r in simulated {
            // Every rank sends to the next and receives from the previous (a CP-style ring).
            push(&mut b, r, send((r + 1) % 4, 1_000_000, 0), 1);
            push(&mut b, r, recv((r + 3) % 4, 1_000_000, 0), 2);
        }
        b.finish().unwrap()
    };
    let full = run_trace(&build(&[0, 1, 2, 3]), &n, &Options::default()).unwrap();
    let sym = run_trace(&build(&[0]), &n, &Options::default()).unwrap();
    // α + S/B: each rank's egress and ingress carry one flow.
    assert_eq!(full.makespan(), Ps(12 * US));
    assert_eq!(sym.ends(0), full.ends(0));
    assert_eq!(sym.starts(0), full.starts(0));
}

#[test]
fn invalid_network_dims_are_rejected() {
    assert_eq!(Network::from_dims(&[]), Err(NetworkError::NoDims));
    assert_eq!(
        Network::from_dims(&[dim(0, Topology::Ring, 1.0, 0.0)]),
        Err(NetworkError::ZeroSize { dim: 0 })
    );
    assert_eq!(
        Network::from_dims(&[
            dim(2, Topology::Ring, 1.0, 0.0),
            dim(2, Topology::Ring, 0.0, 0.0)
        ]),
        Err(NetworkError::BadBandwidth { dim: 1 })
    );
    assert_eq!(
        Network::from_dims(&[
            dim(65536, Topology::Ring, 1.0, 0.0),
            dim(65536, Topology::Ring, 1.0, 0.0)
        ]),
        Err(NetworkError::TooLarge)
    );
}

/// One all-to-all-v per member of `members` (increasing ranks) with the row-major table
/// `table` (bytes from member i to member j at `i · n + j`), each member's `bytes` its row
/// total; then, when `then` is given, a second one with that table on the same stream.
fn a2av_run(n: &Network, members: &[u32], table: &[u64], then: Option<&[u64]>) -> Timeline {
    let mut b = TraceBuilder::new(n.world());
    let g = b.group(&ids(members));
    let k = members.len();
    for t in std::iter::once(table).chain(then) {
        let sizes: Vec<Bytes> = t.iter().map(|&x| Bytes(x)).collect();
        let id = b.sizes(&sizes);
        for (i, &r) in members.iter().enumerate() {
            let row = t[i * k..(i + 1) * k].iter().sum();
            let kind = NodeKind::Collective {
                kind: CollectiveKind::AllToAllV(id),
                group: g,
                bytes: Bytes(row),
            };
            push(&mut b, r, kind, 1);
        }
    }
    run(b, n)
}

/// An uneven dispatch on 4 ranks: rank 3 receives 1.3 MB (300 kB from rank 0, 1 MB from rank
/// 2), more than any rank sends or receives; rank 1's 999 kB to itself stays local.
const UNEVEN: [u64; 16] = [
    0, 100_000, 200_000, 300_000, //
    50_000, 999_000, 0, 0, //
    0, 0, 0, 1_000_000, //
    10_000, 20_000, 30_000, 0,
];

#[test]
fn uneven_all_to_all_v_on_fc_takes_alpha_plus_the_busiest_members_bytes() {
    // 1000 GB/s: 1 ps per byte. Direct: α + 1.3 MB · 1 ps = 1 us + 1.3 us.
    let n = net(vec![dim(4, Topology::FullyConnected, 1000.0, 1.0)]);
    let t = a2av_run(&n, &[0, 1, 2, 3], &UNEVEN, None);
    assert_eq!(t.makespan(), Ps(2_300_000));
    for r in 0..4 {
        assert_eq!(end(&t, r, 0), 2_300_000);
    }
}

#[test]
fn uneven_all_to_all_v_on_a_ring_forwards_n_over_2_times_the_load() {
    // Ring: (n−1)·α + n/2 · 1.3 MB = 3 us + 2.6 us.
    let n = net(vec![dim(4, Topology::Ring, 1000.0, 1.0)]);
    let t = a2av_run(&n, &[0, 1, 2, 3], &UNEVEN, None);
    assert_eq!(t.makespan(), Ps(5_600_000));
}

#[test]
fn even_all_to_all_v_equals_the_uniform_all_to_all() {
    // 1 MB to every member: a 4 MB send buffer per rank, (n−1)/n · 4 MB = 3 MB moved.
    let n = net(vec![dim(4, Topology::FullyConnected, 1000.0, 1.0)]);
    let v = a2av_run(&n, &[0, 1, 2, 3], &[1_000_000; 16], None);
    let uniform = collective_run(&n, &[0, 1, 2, 3], CollectiveKind::AllToAll, 4_000_000);
    assert_eq!(v.makespan(), Ps(4_000_000));
    assert_eq!(v.makespan(), uniform.makespan());
}

#[test]
fn all_to_all_v_on_two_dims_loads_each_dim_with_what_crosses_it() {
    // Ranks 0..4 on a 2 × 2 grid: dim 0 (1 ps/byte, α 1 us) pairs {0,1} and {2,3}, dim 1
    // (2 ps/byte, α 2 us) pairs {0,2} and {1,3}. Only rank 0 sends: 10 kB to 1, 20 kB to 2,
    // 30 kB to 3. Across dim 0 it sends 10 + 30 kB (to 1 and 3), across dim 1 20 + 30 kB (to
    // 2 and 3): 1 us + 40 ns, then 2 us + 2 · 50 ns.
    let n = net(vec![
        dim(2, Topology::FullyConnected, 1000.0, 1.0),
        dim(2, Topology::FullyConnected, 500.0, 2.0),
    ]);
    let mut table = [0u64; 16];
    table[1] = 10_000;
    table[2] = 20_000;
    table[3] = 30_000;
    let t = a2av_run(&n, &[0, 1, 2, 3], &table, None);
    assert_eq!(t.makespan(), Ps(1_040_000 + 2_100_000));
}

#[test]
fn all_to_all_v_instances_with_different_tables_get_their_own_phases() {
    // The uneven dispatch (2.3 us), then an even one of 1 MB each (1 us + 3 us), back to back
    // on one stream; then the same again, sharing the memoised phases of both tables.
    let n = net(vec![dim(4, Topology::FullyConnected, 1000.0, 1.0)]);
    let even = [1_000_000u64; 16];
    let t = a2av_run(&n, &[0, 1, 2, 3], &UNEVEN, Some(&even));
    assert_eq!(t.makespan(), Ps(2_300_000 + 4_000_000));
    let t = a2av_run(&n, &[0, 1, 2, 3], &even, Some(&UNEVEN));
    assert_eq!(t.makespan(), Ps(4_000_000 + 2_300_000));
    let t = a2av_run(&n, &[0, 1, 2, 3], &UNEVEN, Some(&UNEVEN));
    assert_eq!(t.makespan(), Ps(2 * 2_300_000));
}

#[test]
fn all_to_all_v_members_naming_different_tables_are_a_mismatch() {
    let n = net(vec![dim(2, Topology::FullyConnected, 1000.0, 1.0)]);
    let mut b = TraceBuilder::new(2);
    let g = b.group(&ids(&[0, 1]));
    let t1 = b.sizes(&[Bytes(0), Bytes(1), Bytes(2), Bytes(0)]);
    let t2 = b.sizes(&[Bytes(0), Bytes(5), Bytes(2), Bytes(0)]);
    for (r, t) in [(0, t1), (1, t2)] {
        let kind = NodeKind::Collective {
            kind: CollectiveKind::AllToAllV(t),
            group: g,
            bytes: Bytes(1),
        };
        push(&mut b, r, kind, 1);
    }
    let err = run_trace(&b.finish().unwrap(), &n, &Options::default()).unwrap_err();
    assert!(
        matches!(err, EngineError::CollectiveMismatch { .. }),
        "{err}"
    );
}

// ------------------------------------------------------------ fabrics (rails, fat trees, SHARP)

fn with_fabric(mut d: NetDim, f: impl FnOnce(&mut venus_base::base::Fabric)) -> NetDim {
    f(&mut d.fabric);
    d
}

#[test]
fn sharp_allreduce_sends_and_receives_each_byte_once() {
    // 8 GPUs on one NVSwitch at 100 GB/s, 1 us: ring/direct all-reduce of 8 MB moves
    // 2·7/8·8 MB = 14 MB (140 us) after 2 latencies (direct); in-network reduction moves 8 MB
    // (80 us) after 2 latencies.
    let plain = net(vec![dim(8, Topology::FullyConnected, 100.0, 1.0)]);
    let members: Vec<u32> = (0..8).collect();
    let t = collective_run(&plain, &members, CollectiveKind::AllReduce, 8_000_000);
    assert_eq!(t.makespan(), Ps(2 * US + 140 * US));
    let sharp = net(vec![with_fabric(
        dim(8, Topology::FullyConnected, 100.0, 1.0),
        |f| f.sharp = true,
    )]);
    let t = collective_run(&sharp, &members, CollectiveKind::AllReduce, 8_000_000);
    assert_eq!(t.makespan(), Ps(2 * US + 80 * US));
    // Reduce-scatter gains nothing: direct on `fc`, α + (n−1)/n·S = 1 us + 70 us, as without
    // SHARP.
    let t = collective_run(&sharp, &members, CollectiveKind::ReduceScatter, 8_000_000);
    assert_eq!(t.makespan(), Ps(US + 70 * US));
}

#[test]
fn sharp_on_the_outer_dim_changes_only_the_outer_all_reduce_phase() {
    // A 2 × 4 grid at 100 GB/s, zero latency, S = 4 MB: reduce-scatter on the inner dim moves
    // 1/2·4 MB = 2 MB (20 us), the outer all-reduce on the 2 MB shard moves 2·3/4·2 MB = 3 MB
    // on a ring (30 us) but 2 MB in the network (20 us), the inner all-gather 2 MB (20 us).
    let n = |sharp: bool| {
        net(vec![
            dim(2, Topology::FullyConnected, 100.0, 0.0),
            with_fabric(dim(4, Topology::Ring, 100.0, 0.0), |f| f.sharp = sharp),
        ])
    };
    let members: Vec<u32> = (0..8).collect();
    let ring = collective_run(&n(false), &members, CollectiveKind::AllReduce, 4_000_000);
    let sharp = collective_run(&n(true), &members, CollectiveKind::AllReduce, 4_000_000);
    assert_eq!(ring.makespan(), Ps((20 + 30 + 20) * US));
    assert_eq!(sharp.makespan(), Ps((20 + 20 + 20) * US));
}

#[test]
fn fat_tree_oversubscription_slows_only_traffic_between_leaves() {
    // 8 nodes on a switch at 100 GB/s, leaves of 4 nodes with 50% of the bandwidth between
    // leaves (2:1). 1 MB from node 0 to 3 (same leaf): 10 us; from node 0 to 4 (other leaf):
    // 20 us.
    let n = net(vec![with_fabric(
        dim(8, Topology::Switch, 100.0, 0.0),
        |f| f.fat_tree = Some((4, 0.5)),
    )]);
    let mut b = TraceBuilder::new(8);
    push(&mut b, 0, send(3, 1_000_000, 0), 1);
    push(&mut b, 3, recv(0, 1_000_000, 0), 1);
    push(&mut b, 1, send(4, 1_000_000, 0), 1);
    push(&mut b, 4, recv(1, 1_000_000, 0), 1);
    let t = run(b, &n);
    assert_eq!(end(&t, 3, 0), 10 * US);
    assert_eq!(end(&t, 4, 0), 20 * US);
    // A ring all-gather of 8 MB within one leaf (4 ranks): 3/4·8 MB = 6 MB, 60 us; over all 8
    // (two leaves): 7/8·8 MB = 7 MB at half rate, 140 us.
    let t = collective_run(&n, &[0, 1, 2, 3], CollectiveKind::AllGather, 8_000_000);
    assert_eq!(t.makespan(), Ps(60 * US));
    let all: Vec<u32> = (0..8).collect();
    let t = collective_run(&n, &all, CollectiveKind::AllGather, 8_000_000);
    assert_eq!(t.makespan(), Ps(140 * US));
}

#[test]
fn rail_optimized_pairs_of_another_local_index_cross_nvlink_first() {
    // 2 nodes of 4 GPUs: NVLink 400 GB/s 1 us, rails at 50 GB/s 5 us. 1 MB from GPU 0 to GPU 4
    // (same local index 0): one rail switch, 5 us + 20 us. From GPU 1 to GPU 6 (local 1 → 2):
    // over NVLink to local 2 first (1 us + 2.5 us), then rail 2 (5 us + 20 us).
    let n = |rail: bool| {
        net(vec![
            dim(4, Topology::FullyConnected, 400.0, 1.0),
            with_fabric(dim(2, Topology::Switch, 50.0, 5.0), |f| f.rail = rail),
        ])
    };
    let trace = || {
        let mut b = TraceBuilder::new(8);
        push(&mut b, 0, send(4, 1_000_000, 0), 1);
        push(&mut b, 4, recv(0, 1_000_000, 0), 1);
        push(&mut b, 1, send(6, 1_000_000, 0), 1);
        push(&mut b, 6, recv(1, 1_000_000, 0), 1);
        b
    };
    let t = run(trace(), &n(true));
    assert_eq!(end(&t, 4, 0), 25 * US);
    assert_eq!(end(&t, 6, 0), 3_500_000 + 25 * US);
    // Without rails (one ideal switch) both pairs take one hop.
    let t = run(trace(), &n(false));
    assert_eq!(end(&t, 6, 0), 25 * US);
}

#[test]
fn a_time_past_two_to_the_64_ps_is_an_overflow_not_a_deadlock() {
    // Two compute nodes of 2^63 ps back to back: the second ends past u64::MAX, where the
    // saturating sum equals the "never finished" sentinel (reliability report M1).
    let n = net(vec![dim(1, Topology::FullyConnected, 100.0, 0.0)]);
    let mut b = TraceBuilder::new(1);
    let first = b.rank(RankId(0)).push(
        compute(1 << 63),
        StreamId::COMPUTE,
        Category::Other,
        Label::None,
        &[],
    );
    b.rank(RankId(0)).push(
        compute(1 << 63),
        StreamId::COMPUTE,
        Category::Other,
        Label::None,
        &[first],
    );
    let err = run_trace(&b.finish().unwrap(), &n, &Options::default()).unwrap_err();
    let EngineError::TimeOverflow { op: Some(op) } = &err else {
        panic!("{err}")
    };
    assert_eq!((op.rank, op.node.0), (RankId(0), 1));
    assert_eq!(OVERFLOW_DAYS, 213);
    assert!(
        err.to_string()
            .starts_with("simulated time exceeds 213 days (2^64 ps, the engine's range)"),
        "{err}"
    );
    // One node of exactly the largest representable time still finishes.
    let mut b = TraceBuilder::new(1);
    b.rank(RankId(0)).push(
        compute(u64::MAX - 1),
        StreamId::COMPUTE,
        Category::Other,
        Label::None,
        &[],
    );
    assert_eq!(end(&run(b, &n), 0, 0), u64::MAX - 1);
}

/// The time one all-reduce of `bytes` takes alone on `n`, in picoseconds.
fn allreduce_ps(n: &Network, members: &[u32], bytes: u64) -> u64 {
    collective_run(n, members, CollectiveKind::AllReduce, bytes)
        .makespan()
        .0
}

#[test]
fn fc_and_ring_dims_keep_the_closed_forms_at_every_size() {
    // SIMULATION.md: closed forms hold in tests. Only `switch` dims price NCCL's protocols;
    // DGX H100's NVLink dim (`fc`, 450 GB/s at 80 %, α = 1 us) runs direct at any size:
    // 2α + 2·7/8·S/B.
    let mut d = dim(8, Topology::FullyConnected, 450.0, 1.0);
    d.efficiency = Ratio(0.8);
    let n = net(vec![d]);
    let all: Vec<u32> = (0..8).collect();
    for bytes in [1024u64, 1 << 30] {
        assert_eq!(
            n.protocol_for(0, CollectiveKind::AllReduce, 8, ByteVolume(bytes as f64)),
            Protocol::Simple
        );
        let volume = 2.0 * 7.0 / 8.0 * bytes as f64 / 360e9;
        let expected = 2 * US + (volume * 1e12).round() as u64;
        assert!(allreduce_ps(&n, &all, bytes).abs_diff(expected) <= 2);
    }
    // A ring dim: 2(n−1)α + 2(n−1)/n·S/B for 1 KiB too (LL would be faster in NCCL).
    let n = net(vec![dim(4, Topology::Ring, 100.0, 1.0)]);
    let expected = 6 * US + (1.5 * 1024.0 / 100e9 * 1e12_f64).round() as u64;
    assert!(allreduce_ps(&n, &[0, 1, 2, 3], 1024).abs_diff(expected) <= 2);
}

#[test]
fn nccl_protocols_price_a_kib_and_a_gib_all_reduce_over_64_nodes() {
    // One GPU on each of 64 nodes (a data-parallel group across NICs): 50 GB/s at 90%
    // (45 GB/s), α = 5 us, NCCL's NET row (Simple ring step 14 us). 1 KiB: the tree on LL,
    // base 6.8/14 α = 2.428571 us, 2·6 steps of 5/14 α = 21.428571 us, 2 · S at 45/3.8 GB/s
    // (0.172942 us); the ring on LL would pay 126 steps of 2.7/14 α (121.5 us).
    let n = net(vec![dim(64, Topology::Switch, 50.0, 5.0)]);
    let mut d = n.dims()[0];
    d.efficiency = Ratio(0.9);
    let n = net(vec![d]);
    let all: Vec<u32> = (0..64).collect();
    let kib = ByteVolume(1024.0);
    assert_eq!(
        n.algorithm_for(0, CollectiveKind::AllReduce, 64, kib),
        Algorithm::DoubleBinaryTree
    );
    assert_eq!(
        n.protocol_for(0, CollectiveKind::AllReduce, 64, kib),
        Protocol::Ll
    );
    let expected = 2_428_571 + 21_428_571 + 172_942;
    assert!(allreduce_ps(&n, &all, 1024).abs_diff(expected) <= 2);
    // 1 GiB: the ring on Simple, base 8.4/14 α = 3 us, 126 α = 630 us, 2·63/64 · 2^30 B at
    // 45 GB/s (46.976 ms); the tree's 2 · S would take 47.722 ms.
    let gib = ByteVolume(1073741824.0);
    assert_eq!(
        n.algorithm_for(0, CollectiveKind::AllReduce, 64, gib),
        Algorithm::Ring
    );
    assert_eq!(
        n.protocol_for(0, CollectiveKind::AllReduce, 64, gib),
        Protocol::Simple
    );
    let expected = 3_000_000 + 630_000_000 + 46_976_204_800;
    assert!(allreduce_ps(&n, &all, 1 << 30).abs_diff(expected) <= 2);
}

#[test]
fn link_class_comes_from_the_dims_place_and_zero_latency_keeps_the_closed_forms() {
    let n = net(vec![
        dim(8, Topology::FullyConnected, 450.0, 1.0),
        dim(4, Topology::Switch, 50.0, 5.0),
    ]);
    assert_eq!(n.link_class(0), LinkClass::NvLink);
    assert_eq!(n.link_class(1), LinkClass::Net);
    let n = net(vec![
        dim(4, Topology::Switch, 31.5, 2.0),
        dim(4, Topology::Switch, 25.0, 5.0),
    ]);
    assert_eq!(n.link_class(0), LinkClass::Pci);
    // Without latency every protocol is as fast to start and Simple keeps full bandwidth:
    // 2(n−1)/n · S / B exactly, 1.5 · 4 MB / 100 GB/s = 60 us, at any size.
    let n = net(vec![dim(4, Topology::Ring, 100.0, 0.0)]);
    assert_eq!(allreduce_ps(&n, &[0, 1, 2, 3], 4_000_000), 60 * US);
    assert_eq!(
        n.protocol_for(0, CollectiveKind::AllReduce, 4, ByteVolume(64.0)),
        Protocol::Simple
    );
}
