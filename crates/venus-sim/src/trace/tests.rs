//! Trace IR and builder tests: node labels, CSR dependencies, group interning, the checks of
//! `TraceBuilder::finish` (validation errors, size tables), picosecond conversions and the
//! synthetic pipeline's node counts.

use super::*;
use venus_base::base::Seconds;

/// Plain rank numbers as the trace's rank ids.
fn ids(ranks: &[u32]) -> Vec<RankId> {
    ranks.iter().copied().map(RankId).collect()
}

fn compute(ps: u64) -> NodeKind {
    NodeKind::Compute { duration: Ps(ps) }
}

#[test]
fn labels_render_as_in_the_schedule() {
    let mut b = TraceBuilder::new(1);
    let bucket = b.name("bucket");
    let opt = b.name("optimizer");
    let t = b.finish().unwrap();
    assert_eq!(
        t.label(Label::Forward {
            microbatch: 3,
            chunk: Some(1)
        }),
        "F3.1"
    );
    assert_eq!(
        t.label(Label::Backward {
            microbatch: 12,
            chunk: None
        }),
        "B12"
    );
    assert_eq!(t.label(Label::SendTo { pp: 2 }), "send→pp2");
    assert_eq!(t.label(Label::RecvFrom { pp: 1 }), "recv←pp1");
    assert_eq!(t.label(Label::Numbered(bucket, 4)), "bucket4");
    assert_eq!(t.label(Label::Text(opt)), "optimizer");
}

#[test]
fn deps_are_stored_per_node_including_forward_edges() {
    let mut b = TraceBuilder::new(2);
    let r = b.rank(RankId(1));
    let a = r.push(
        compute(1),
        StreamId::COMPUTE,
        Category::Other,
        Label::None,
        &[],
    );
    let c = r.push(
        compute(1),
        StreamId::COMPUTE,
        Category::Other,
        Label::None,
        &[a],
    );
    let d = r.push(
        compute(1),
        StreamId::COMM,
        Category::Other,
        Label::None,
        &[a, c],
    );
    r.add_dep(a, d);
    let t = b.finish().unwrap();
    assert_eq!(t.ranks().len(), 1);
    let rt = &t.ranks()[0];
    assert_eq!(rt.rank(), RankId(1));
    assert_eq!(rt.deps(a), [d]);
    assert_eq!(rt.deps(c), [a]);
    assert_eq!(rt.deps(d), [a, c]);
    assert_eq!(rt.deps(NodeId(9)), []);
}

#[test]
fn groups_are_interned_by_member_set() {
    let mut b = TraceBuilder::new(8);
    let g1 = b.group(&ids(&[3, 1, 2]));
    let g2 = b.group(&ids(&[1, 2, 3, 3]));
    let g3 = b.group(&ids(&[0, 4]));
    assert_eq!(g1, g2);
    assert_ne!(g1, g3);
    let t = b.finish().unwrap();
    assert_eq!(t.group(g1), ids(&[1, 2, 3]));
    assert_eq!(t.group(g3), ids(&[0, 4]));
    assert!(t.group(GroupId(7)).is_empty());
}

#[test]
fn invalid_references_are_rejected_by_finish() {
    let mut b = TraceBuilder::new(2);
    b.rank(RankId(0)).push(
        NodeKind::Send {
            peer: RankId(5),
            bytes: Bytes(1),
            tag: 0,
        },
        StreamId::COMM,
        Category::Send,
        Label::None,
        &[],
    );
    assert_eq!(
        b.finish(),
        Err(TraceError::PeerOutOfRange {
            rank: RankId(0),
            node: NodeId(0),
            peer: RankId(5)
        })
    );

    let mut b = TraceBuilder::new(4);
    let g = b.group(&ids(&[1, 2]));
    let kind = NodeKind::Collective {
        kind: CollectiveKind::AllGather,
        group: g,
        bytes: Bytes(1),
    };
    b.rank(RankId(0))
        .push(kind, StreamId::COMM, Category::Other, Label::None, &[]);
    assert_eq!(
        b.finish(),
        Err(TraceError::NotAMember {
            rank: RankId(0),
            node: NodeId(0),
            group: g
        })
    );

    let mut b = TraceBuilder::new(1);
    b.rank(RankId(0)).push(
        compute(1),
        StreamId::COMPUTE,
        Category::Other,
        Label::None,
        &[NodeId(3)],
    );
    assert_eq!(
        b.finish(),
        Err(TraceError::DepOutOfRange {
            rank: RankId(0),
            node: NodeId(0),
            dep: NodeId(3)
        })
    );

    let mut b = TraceBuilder::new(2);
    b.rank(RankId(2)).push(
        compute(1),
        StreamId::COMPUTE,
        Category::Other,
        Label::None,
        &[],
    );
    assert_eq!(
        b.finish(),
        Err(TraceError::RankOutOfRange {
            rank: RankId(2),
            world: 2
        })
    );

    let mut b = TraceBuilder::new(3);
    b.set_classes(ids(&[0, 0]));
    assert_eq!(
        b.finish(),
        Err(TraceError::ClassMapLength { len: 2, world: 3 })
    );
}

#[test]
fn ps_converts_from_seconds_rounding_and_saturating() {
    assert_eq!(Ps::from_seconds(Seconds(1.5e-6)), Ps(1_500_000));
    assert_eq!(Ps::from_seconds(Seconds(-1.0)), Ps(0));
    assert_eq!(Ps::from_seconds(Seconds(f64::NAN)), Ps(0));
    assert_eq!(Ps::from_seconds(Seconds(1e30)), Ps(u64::MAX));
    assert_eq!(Ps(2_500_000_000).seconds(), Seconds(2.5e-3));
}

#[test]
fn synthetic_pipeline_has_the_expected_node_counts() {
    let p = synthetic::Pipeline {
        stages: 4,
        tp: 2,
        microbatches: 3,
        layers: 2,
        forward: Ps(400),
        backward: Ps(800),
        p2p_bytes: Bytes(16),
        tp_bytes: Bytes(32),
        symmetric: true,
    };
    let t = p.build().unwrap();
    let ranks: Vec<RankId> = t.ranks().iter().map(RankTrace::rank).collect();
    assert_eq!(ranks, ids(&[0, 2, 4, 6]));
    assert_eq!(t.class_of(RankId(5)), RankId(2));
    // Per pass: 4 compute segments + 4 all-reduces; inner stages add a recv and a send.
    assert_eq!(t.ranks()[0].len(), 3 * 2 * 8 + 3 * 2);
    assert_eq!(t.ranks()[1].len(), 3 * 2 * 8 + 3 * 4);
    let fwd: u64 = t.ranks()[1]
        .nodes()
        .filter(|n| n.category == Category::ForwardCompute)
        .map(|n| match n.kind {
            NodeKind::Compute { duration } => duration.0,
            _ => 0,
        })
        .sum();
    assert_eq!(fwd, 3 * 400);
}

#[test]
fn all_to_all_v_tables_are_interned_and_must_be_members_squared() {
    use crate::trace::{SizesId, TraceError};
    let mut b = TraceBuilder::new(2);
    let g = b.group(&ids(&[0, 1]));
    let t = b.sizes(&[Bytes(0), Bytes(3), Bytes(4), Bytes(0)]);
    assert_eq!(b.sizes(&[Bytes(0), Bytes(3), Bytes(4), Bytes(0)]), t);
    let bad = b.sizes(&[Bytes(1), Bytes(2)]);
    let a2av = |sizes| NodeKind::Collective {
        kind: CollectiveKind::AllToAllV(sizes),
        group: g,
        bytes: Bytes(3),
    };
    let mut ok = b.clone();
    ok.rank(RankId(0))
        .push(a2av(t), StreamId::COMM, Category::EpComm, Label::None, &[]);
    let trace = ok.finish().unwrap();
    assert_eq!(trace.sizes(t), [Bytes(0), Bytes(3), Bytes(4), Bytes(0)]);
    assert_eq!(trace.sizes(SizesId(9)), []);
    assert_eq!(CollectiveKind::AllToAllV(t).word(), "all-to-all-v");

    let mut wrong = b.clone();
    wrong.rank(RankId(1)).push(
        a2av(bad),
        StreamId::COMM,
        Category::EpComm,
        Label::None,
        &[],
    );
    assert_eq!(
        wrong.finish(),
        Err(TraceError::SizesShape {
            rank: RankId(1),
            node: NodeId(0),
            len: 2,
            members: 2,
        })
    );
    b.rank(RankId(0)).push(
        a2av(SizesId(7)),
        StreamId::COMM,
        Category::EpComm,
        Label::None,
        &[],
    );
    assert_eq!(
        b.finish(),
        Err(TraceError::UnknownSizes {
            rank: RankId(0),
            node: NodeId(0),
            sizes: SizesId(7),
        })
    );
}

/// A rank that sends to `peer`, then all-reduces over `group`, computing `ps` first.
fn send_then_reduce(peer: u32, group: GroupId, ps: u64) -> RankBuilder {
    let mut rb = RankBuilder::default();
    let c = rb.push(
        compute(ps),
        StreamId::COMPUTE,
        Category::ForwardCompute,
        Label::None,
        &[],
    );
    let kind = NodeKind::Send {
        peer: RankId(peer),
        bytes: Bytes(64),
        tag: 0,
    };
    rb.push(kind, StreamId::COMM, Category::Send, Label::None, &[c]);
    let kind = NodeKind::Collective {
        kind: CollectiveKind::AllReduce,
        group,
        bytes: Bytes(128),
    };
    rb.push(kind, StreamId::COMM, Category::TpComm, Label::None, &[c]);
    rb
}

#[test]
fn ranks_equal_up_to_peers_and_groups_share_a_body_and_keep_their_own_ids() {
    let mut b = TraceBuilder::new(4);
    let g01 = b.group(&ids(&[0, 1]));
    let g23 = b.group(&ids(&[2, 3]));
    let r0 = send_then_reduce(2, g01, 100);
    let r1 = send_then_reduce(3, g01, 100);
    let r2 = send_then_reduce(0, g23, 100);
    // Same shape, other duration: a body of its own.
    let r3 = send_then_reduce(1, g23, 200);
    for (r, rb) in [r0, r1, r2, r3].into_iter().enumerate() {
        b.set_rank(RankId(r as u32), rb);
    }
    let t = b.finish().unwrap();
    let ranks = t.ranks();
    assert!(ranks[0].shares_body_with(&ranks[1]));
    assert!(ranks[0].shares_body_with(&ranks[2]));
    assert!(!ranks[0].shares_body_with(&ranks[3]));
    assert_eq!(
        (t.body_count(), t.stored_node_count(), t.node_count()),
        (2, 6, 12)
    );
    let peer_and_group = |r: usize| {
        let rt = &ranks[r];
        let peer = match rt.node(NodeId(1)).map(|n| n.kind) {
            Some(NodeKind::Send { peer, .. }) => peer,
            other => panic!("node 1 of rank {r} is {other:?}"),
        };
        let group = match rt.node(NodeId(2)).map(|n| n.kind) {
            Some(NodeKind::Collective { group, .. }) => group,
            other => panic!("node 2 of rank {r} is {other:?}"),
        };
        (peer, group)
    };
    assert_eq!(peer_and_group(0), (RankId(2), g01));
    assert_eq!(peer_and_group(1), (RankId(3), g01));
    assert_eq!(peer_and_group(2), (RankId(0), g23));
    assert_eq!(peer_and_group(3), (RankId(1), g23));
    assert_eq!(ranks[3].deps(NodeId(2)), &[NodeId(0)]);
}

#[test]
fn a_sealed_rank_reopened_keeps_its_nodes_and_takes_more() {
    let mut b = TraceBuilder::new(2);
    let g = b.group(&ids(&[0, 1]));
    let rb = send_then_reduce(1, g, 100);
    b.set_rank(RankId(0), rb);
    let extra = b.rank(RankId(0)).push(
        compute(7),
        StreamId::COMPUTE,
        Category::Optimizer,
        Label::None,
        &[NodeId(2)],
    );
    assert_eq!(extra, NodeId(3));
    let t = b.finish().unwrap();
    let rt = &t.ranks()[0];
    assert_eq!(rt.len(), 4);
    assert!(matches!(
        rt.node(NodeId(1)).map(|n| n.kind),
        Some(NodeKind::Send {
            peer: RankId(1),
            ..
        })
    ));
    assert_eq!(rt.deps(NodeId(3)), &[NodeId(2)]);
}

#[test]
fn a_sealed_rank_with_a_missing_dependency_fails_at_finish() {
    let mut b = TraceBuilder::new(1);
    let mut rb = RankBuilder::default();
    rb.push(
        compute(1),
        StreamId::COMPUTE,
        Category::Other,
        Label::None,
        &[NodeId(5)],
    );
    b.set_rank(RankId(0), rb);
    assert_eq!(
        b.finish().unwrap_err(),
        TraceError::DepOutOfRange {
            rank: RankId(0),
            node: NodeId(0),
            dep: NodeId(5)
        }
    );
}
