//! Schedule tests: Megatron's worked examples verbatim (megatron-semantics.md §3.2, §3.4),
//! closed-form makespans, the in-flight and bubble figures against the built ops, a
//! hand-written schedule that splits the backward, and property tests over random shapes.

use super::*;
use proptest::prelude::*;
use std::collections::HashMap;
use venus_base::base::Ratio;

fn shape(kind: Kind, pp: u32, vpp: u32, m: u32) -> PipelineShape {
    PipelineShape::new(kind, pp, vpp, m)
}

fn build(s: PipelineShape) -> ScheduleIr {
    ScheduleIr::build(s).unwrap()
}

fn call_abbrev(k: CallKind) -> &'static str {
    match k {
        CallKind::RecvForward => "recv_f",
        CallKind::SendForward => "send_f",
        CallKind::RecvBackward => "recv_b",
        CallKind::SendBackward => "send_b",
        CallKind::SendForwardRecvBackward => "sfrb",
        CallKind::SendBackwardRecvForward => "sbrf",
        CallKind::SendForwardRecvForward => "SFR",
        CallKind::SendBackwardRecvBackward => "SBRB",
        CallKind::SendForwardBackwardRecvForwardBackward => "SFBRFB",
        CallKind::BatchIsendIrecv => "batch",
    }
}

/// Transfers of the call at `ops[i]` in the canonical order sn, rp, sp, rn used by the
/// reference listings (issue order differs between batched and individual calls).
fn call_xfers(ops: &[Op], i: usize) -> String {
    let Op::Call(c) = ops[i] else {
        panic!("not a call")
    };
    let mut xs: Vec<Xfer> = ops[i + 1..i + 1 + usize::from(c.xfers)]
        .iter()
        .map(|op| match op {
            Op::Xfer(x) => *x,
            other => panic!("expected transfer, got {other:?}"),
        })
        .collect();
    xs.sort_by_key(|x| x.port);
    xs.iter().map(xfer_label).collect::<Vec<_>>().join(" ")
}

/// Tokens of rank `r` with hooks dropped: `F(c0,1)`, `SFR[sn(0,1) rp→c1]`, `SBRB~[..]` for
/// async calls, `wait(rn#0)`.
fn tokens(ir: &ScheduleIr, r: u32) -> String {
    let ops = ir.rank(r);
    let mut out = Vec::new();
    let mut i = 0;
    while i < ops.len() {
        match ops[i] {
            Op::Forward(m) => out.push(format!("F(c{},{})", m.chunk, m.mb)),
            Op::Backward(m) => out.push(format!("B(c{},{})", m.chunk, m.mb)),
            Op::Call(c) => {
                out.push(format!(
                    "{}{}[{}]",
                    call_abbrev(c.kind),
                    if c.blocking { "" } else { "~" },
                    call_xfers(ops, i)
                ));
                i += usize::from(c.xfers);
            }
            Op::Wait { port, seq } => out.push(format!("wait({}#{seq})", port.short())),
            _ => {}
        }
        i += 1;
    }
    out.join(" ")
}

/// The §3.2 notation: calls by abbreviation, compute as `F0`/`B0`.
fn one_f_one_b_sequence(ir: &ScheduleIr, r: u32) -> String {
    ir.rank(r)
        .iter()
        .filter_map(|op| match op {
            Op::Forward(m) => Some(format!("F{}", m.mb)),
            Op::Backward(m) => Some(format!("B{}", m.mb)),
            Op::Call(c) => Some(call_abbrev(c.kind).to_string()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[test]
fn one_f_one_b_pp4_m6_rank1_matches_megatron() {
    let ir = build(shape(Kind::OneFOneB, 4, 1, 6));
    assert_eq!(
        one_f_one_b_sequence(&ir, 1),
        "recv_f, F0, send_f, recv_f, F1, send_f, recv_f, F2, sfrb, B0, sbrf, F3, sfrb, B1, \
         sbrf, F4, sfrb, B2, sbrf, F5, sfrb, B3, send_b, recv_b, B4, send_b, recv_b, B5, send_b"
    );
    // The transfers carry the microbatch they move.
    assert_eq!(
        tokens(&ir, 1)
            .split(' ')
            .take(6)
            .collect::<Vec<_>>()
            .join(" "),
        "recv_f[rp→c0] F(c0,0) send_f[sn(0,0)] recv_f[rp→c0] F(c0,1) send_f[sn(0,1)]"
    );
}

#[test]
fn one_f_one_b_first_and_last_stage_skip_their_calls() {
    let ir = build(shape(Kind::OneFOneB, 4, 1, 6));
    assert_eq!(
        one_f_one_b_sequence(&ir, 0),
        "F0, send_f, F1, send_f, F2, send_f, F3, sfrb, B0, F4, sfrb, B1, F5, sfrb, B2, \
         recv_b, B3, recv_b, B4, recv_b, B5"
    );
    assert_eq!(
        one_f_one_b_sequence(&ir, 3),
        "recv_f, F0, B0, sbrf, F1, B1, sbrf, F2, B2, sbrf, F3, B3, sbrf, F4, B4, sbrf, F5, \
         B5, send_b"
    );
}

#[test]
fn emit_text_one_f_one_b_pp4_m6() {
    let ir = build(shape(Kind::OneFOneB, 4, 1, 6));
    assert_eq!(
        emit_text(&ir),
        "pp0: F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5\n\
         pp1: F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 B4 B5\n\
         pp2: F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 B5\n\
         pp3: F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5\n"
    );
}

#[test]
fn emit_text_interleaved_pp2_vpp2_m4() {
    let ir = build(shape(Kind::Interleaved, 2, 2, 4));
    assert_eq!(
        emit_text(&ir),
        "pp0: F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 B2.1 B3.1 B2.0 B3.0\n\
         pp1: F0.0 F1.0 F0.1 B0.1 F1.1 B1.1 F2.0 B0.0 F3.0 B1.0 F2.1 B2.1 F3.1 B3.1 B2.0 B3.0\n"
    );
}

#[test]
fn interleaved_pp2_vpp2_m4_batched_calls_match_megatron() {
    let ir = build(shape(Kind::Interleaved, 2, 2, 4));
    assert_eq!(
        tokens(&ir, 0),
        [
            "F(c0,0) SFR[sn(0,0)]",
            "F(c0,1) SFR[sn(0,1) rp→c1]",
            "F(c1,0) SFR[sn(1,0) rp→c1]",
            "F(c1,1) SFBRFB[sn(1,1) rn→c1]",
            "F(c0,2) B(c1,0) SFBRFB[sn(0,2) sp(1,0) rn→c1]",
            "F(c0,3) B(c1,1) SFBRFB[sn(0,3) rp→c1 sp(1,1) rn→c0]",
            "F(c1,2) B(c0,0) SFBRFB[sn(1,2) rp→c1 rn→c0]",
            "F(c1,3) B(c0,1) SFBRFB[sn(1,3) rn→c1]",
            "B(c1,2) SBRB[sp(1,2) rn→c1]",
            "B(c1,3) SBRB[sp(1,3) rn→c0]",
            "B(c0,2) SBRB[rn→c0]",
            "B(c0,3) SBRB[]",
        ]
        .join(" ")
    );
    assert_eq!(
        tokens(&ir, 1),
        [
            "recv_f[rp→c0]",
            "F(c0,0) SFR[sn(0,0) rp→c0]",
            "F(c0,1) SFBRFB[sn(0,1) rp→c1]",
            "F(c1,0) B(c1,0) SFBRFB[rp→c1 sp(1,0)]",
            "F(c1,1) B(c1,1) SFBRFB[rp→c0 sp(1,1) rn→c0]",
            "F(c0,2) B(c0,0) SFBRFB[sn(0,2) rp→c0 sp(0,0) rn→c0]",
            "F(c0,3) B(c0,1) SFBRFB[sn(0,3) rp→c1 sp(0,1)]",
            "F(c1,2) B(c1,2) SFBRFB[rp→c1 sp(1,2)]",
            "F(c1,3) B(c1,3) SFBRFB[sp(1,3) rn→c0]",
            "B(c0,2) SBRB[sp(0,2) rn→c0]",
            "B(c0,3) SBRB[sp(0,3)]",
        ]
        .join(" ")
    );
    // Batched calls issue in batch_isend_irecv order: send_prev, recv_prev, send_next, recv_next.
    let ops = ir.rank(1);
    let i = ops
        .iter()
        .position(|op| matches!(op, Op::Forward(m) if m.mb == 2 && m.chunk == 0))
        .unwrap();
    let ports: Vec<Port> = ops[i + 3..i + 7]
        .iter()
        .map(|op| match op {
            Op::Xfer(x) => x.port,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        ports,
        vec![
            Port::SendPrev,
            Port::RecvPrev,
            Port::SendNext,
            Port::RecvNext
        ]
    );
}

#[test]
fn interleaved_pp2_vpp2_m4_overlap_path_matches_megatron() {
    let mut s = shape(Kind::Interleaved, 2, 2, 4);
    s.overlap_p2p = true;
    let ir = build(s);
    assert_eq!(
        tokens(&ir, 0),
        [
            "F(c0,0) SFR[sn(0,0)]",
            "F(c0,1) SFR[sn(0,1) rp→c1]",
            "F(c1,0) SFR[sn(1,0) rp→c1]",
            "F(c1,1) SFR[sn(1,1)] SBRB~[rn→c1]",
            "F(c0,2) SFR~[sn(0,2)] wait(sn#4) wait(rn#0) B(c1,0) SBRB~[sp(1,0) rn→c1]",
            "F(c0,3) SFR~[sn(0,3) rp→c1] wait(sn#5) wait(rn#1) B(c1,1) SBRB~[sp(1,1) rn→c0] wait(sp#0)",
            "wait(rp#2) F(c1,2) SFR~[sn(1,2) rp→c1] wait(sn#6) wait(rn#2) B(c0,0) SBRB~[rn→c0] wait(sp#1)",
            "wait(rp#3) F(c1,3) SFR~[sn(1,3)] wait(sn#7) wait(rn#3) B(c0,1) SBRB~[rn→c1]",
            "wait(rn#4) B(c1,2) SBRB[sp(1,2) rn→c1]",
            "B(c1,3) SBRB[sp(1,3) rn→c0]",
            "B(c0,2) SBRB[rn→c0]",
            "B(c0,3) SBRB[]",
        ]
        .join(" ")
    );
    // Async receive-prev handles are numbered after the two blocking warmup receives.
    // Individual isend/irecv on an even rank: send_next before recv_prev.
    let ops = ir.rank(0);
    let i = ops
        .iter()
        .position(|op| matches!(op, Op::Forward(m) if m.mb == 1 && m.chunk == 0))
        .unwrap();
    assert!(matches!(ops[i + 1], Op::Call(c) if c.issue == Issue::Individual && c.blocking));
    assert!(matches!(ops[i + 2], Op::Xfer(x) if x.port == Port::SendNext));
    assert!(matches!(ops[i + 3], Op::Xfer(x) if x.port == Port::RecvPrev));
    // Same compute order as the batched path.
    assert_eq!(
        emit_text(&ir),
        emit_text(&build(shape(Kind::Interleaved, 2, 2, 4)))
    );
}

#[test]
fn interleaved_pp2_vpp2_m4_overlap_rank1_steady_state() {
    let mut s = shape(Kind::Interleaved, 2, 2, 4);
    s.overlap_p2p = true;
    let ir = build(s);
    // Rank 1 (last stage): no gradient to pre-receive for its last chunk; receive-prev
    // sequence numbers continue from the three blocking warmup receives.
    assert_eq!(
        tokens(&ir, 1),
        [
            "recv_f[rp→c0]",
            "F(c0,0) SFR[sn(0,0) rp→c0]",
            "F(c0,1) SFR[sn(0,1) rp→c1] SBRB~[]",
            "F(c1,0) SFR~[rp→c1]",
            "B(c1,0) SBRB~[sp(1,0)]",
            "wait(rp#3) F(c1,1) SFR~[rp→c0]",
            "B(c1,1) SBRB~[sp(1,1) rn→c0] wait(sp#0)",
            "wait(rp#4) F(c0,2) SFR~[sn(0,2) rp→c0] wait(sn#2) wait(rn#0) B(c0,0) SBRB~[sp(0,0) rn→c0] wait(sp#1)",
            "wait(rp#5) F(c0,3) SFR~[sn(0,3) rp→c1] wait(sn#3) wait(rn#1) B(c0,1) SBRB~[sp(0,1)] wait(sp#2)",
            "wait(rp#6) F(c1,2) SFR~[rp→c1] B(c1,2) SBRB~[sp(1,2)] wait(sp#3)",
            "wait(rp#7) F(c1,3) SFR~[] B(c1,3) SBRB~[sp(1,3) rn→c0] wait(sp#4)",
            "wait(rn#2) B(c0,2) SBRB[sp(0,2) rn→c0]",
            "B(c0,3) SBRB[sp(0,3)] wait(sp#5)",
        ]
        .join(" ")
    );
}

#[test]
fn hooks_of_interleaved_with_aligned_grad_and_param_sync() {
    let mut s = shape(Kind::Interleaved, 2, 3, 4);
    s.overlap_grad_reduce = true;
    s.delay_grad_reduce = true;
    s.overlap_param_gather = true;
    s.delay_param_gather = true;
    let ir = build(s);
    // Each hook with the number of forwards (f) or backwards (b) run before it.
    let hooks = |r: u32| -> String {
        let (mut f, mut b) = (0, 0);
        let mut out = Vec::new();
        for op in ir.rank(r) {
            match op {
                Op::Forward(_) => f += 1,
                Op::Backward(_) => b += 1,
                Op::ParamSync { chunk } => out.push(format!("P{chunk}@f{f}")),
                Op::GradSync { chunk } => out.push(format!("G{chunk}@b{b}")),
                Op::EmbeddingGradAllReduce => out.push("emb".into()),
                _ => {}
            }
        }
        out.join(" ")
    };
    // Table (mb,chunk): (0,0)(1,0)(0,1)(1,1)(0,2)(1,2)(2,0)(3,0)(2,1)(3,1)(2,2)(3,2).
    // param_sync_func for chunk c+1 before forward k when k + r is chunk c's first
    // microbatch; grad_sync_func after backward k when k − r is a chunk's last microbatch:
    // rank 1 dispatches one step earlier and syncs one step later, so launches align.
    assert_eq!(hooks(0), "P0@f0 P1@f0 P2@f2 G2@b8 G1@b10 G0@b12 emb");
    assert_eq!(hooks(1), "P0@f0 P1@f0 P2@f1 G2@b9 G1@b11 G0@b12 emb");
}

#[test]
fn grad_sync_is_enabled_before_the_last_backward_of_each_chunk() {
    let ir = build(shape(Kind::Interleaved, 2, 2, 4));
    let ops = ir.rank(0);
    let enables: Vec<usize> = ops
        .iter()
        .enumerate()
        .filter(|(_, op)| matches!(op, Op::EnableGradSync))
        .map(|(i, _)| i)
        .collect();
    // One per chunk, then the final (re-)enable before finalize.
    assert_eq!(enables.len(), 3);
    assert_eq!(ops[enables[0] + 1], Op::Backward(Micro { mb: 3, chunk: 1 }));
    assert_eq!(ops[enables[1] + 1], Op::Backward(Micro { mb: 3, chunk: 0 }));
    assert_eq!(ops[enables[0] + 2], Op::DisableGradSync);
}

#[test]
fn one_f_one_b_with_grad_sync_func_syncs_non_first_stages_at_the_end() {
    let mut s = shape(Kind::OneFOneB, 4, 1, 6);
    s.overlap_grad_reduce = true;
    s.delay_grad_reduce = true;
    let ir = build(s);
    let tail = |r: u32| {
        let ops = ir.rank(r);
        ops[ops.len() - 5..].to_vec()
    };
    assert_eq!(
        tail(0),
        vec![
            Op::Xfer(Xfer {
                port: Port::RecvNext,
                mb: 5,
                chunk: 0,
                seq: 5
            }),
            Op::Backward(Micro { mb: 5, chunk: 0 }),
            Op::FinalizeGrads,
            Op::EmbeddingGradAllReduce,
            Op::OptimizerStep,
        ]
    );
    assert_eq!(
        tail(2)[1..].to_vec(),
        vec![
            Op::EnableGradSync,
            Op::GradSync { chunk: 0 },
            Op::FinalizeGrads,
            Op::OptimizerStep
        ]
    );
}

#[test]
fn no_pipelining_runs_last_pair_outside_no_sync() {
    let mut s = shape(Kind::NoPipelining, 1, 1, 3);
    s.overlap_param_gather = true;
    let ir = build(s);
    assert_eq!(
        ir.rank(0),
        &[
            Op::DisableGradSync,
            Op::ParamSync { chunk: 0 },
            Op::Forward(Micro { mb: 0, chunk: 0 }),
            Op::Backward(Micro { mb: 0, chunk: 0 }),
            Op::Forward(Micro { mb: 1, chunk: 0 }),
            Op::Backward(Micro { mb: 1, chunk: 0 }),
            Op::EnableGradSync,
            Op::Forward(Micro { mb: 2, chunk: 0 }),
            Op::Backward(Micro { mb: 2, chunk: 0 }),
            Op::FinalizeGrads,
            Op::OptimizerStep,
        ]
    );
}

/// Megatron's combined 1F1B without a pipeline (combined_1f1b.py
/// `combined_1f1b_schedule_for_no_pipelining`): the first forward alone, each next forward with
/// the previous backward on the second compute stream, the last backward alone with grad sync
/// on. The pair runs layer by layer (forward layer i beside backward layer L − 1 − i), so one
/// microbatch's activations are held at a time, as without the overlap.
#[test]
fn no_pipelining_with_ep_overlap_pairs_each_forward_with_the_previous_backward() {
    let mut s = shape(Kind::NoPipelining, 1, 1, 3);
    s.overlap_ep_comm = true;
    let ir = build(s);
    let mb = |mb| Micro { mb, chunk: 0 };
    assert_eq!(
        ir.rank(0),
        &[
            Op::DisableGradSync,
            Op::Forward(mb(0)),
            Op::Forward(mb(1)),
            Op::Stream(ComputeStream(1)),
            Op::Backward(mb(0)),
            Op::Stream(ComputeStream::MAIN),
            Op::Forward(mb(2)),
            Op::Stream(ComputeStream(1)),
            Op::Backward(mb(1)),
            Op::Stream(ComputeStream::MAIN),
            Op::EnableGradSync,
            Op::Backward(mb(2)),
            Op::FinalizeGrads,
            Op::OptimizerStep,
        ]
    );
    check_ir(&ir).unwrap();
    assert_eq!(peak_in_flight(&s, 0).total, 1);
    // One microbatch: a forward and a backward, nothing to pair.
    let mut one = shape(Kind::NoPipelining, 1, 1, 1);
    one.overlap_ep_comm = true;
    assert_eq!(
        build(one).rank(0)[..3],
        [Op::DisableGradSync, Op::Forward(mb(0)), Op::EnableGradSync]
    );
}

#[test]
fn gpipe_runs_all_forwards_then_all_backwards() {
    let ir = build(shape(Kind::Gpipe, 3, 1, 4));
    assert_eq!(
        emit_text(&ir),
        "pp0: F0 F1 F2 F3 B0 B1 B2 B3\n\
         pp1: F0 F1 F2 F3 B0 B1 B2 B3\n\
         pp2: F0 F1 F2 F3 B0 B1 B2 B3\n"
    );
    assert_eq!(
        one_f_one_b_sequence(&ir, 1),
        "recv_f, F0, send_f, recv_f, F1, send_f, recv_f, F2, send_f, recv_f, F3, send_f, \
         recv_b, B0, send_b, recv_b, B1, send_b, recv_b, B2, send_b, recv_b, B3, send_b"
    );
}

#[test]
fn invalid_shapes_are_rejected() {
    assert_eq!(
        ScheduleIr::build(shape(Kind::Interleaved, 4, 2, 6)).unwrap_err(),
        ShapeError::Remainder {
            rem: 2,
            n: 4,
            pp: 4
        }
    );
    assert_eq!(
        ScheduleIr::build(shape(Kind::Interleaved, 4, 2, 3)).unwrap_err(),
        ShapeError::GroupSize { n: 4, pp: 4, m: 3 }
    );
    assert_eq!(
        ScheduleIr::build(shape(Kind::OneFOneB, 4, 2, 8)).unwrap_err(),
        ShapeError::ChunksWithoutInterleaving { vpp: 2 }
    );
    assert_eq!(
        ScheduleIr::build(shape(Kind::OneFOneB, 4, 1, 0)).unwrap_err(),
        ShapeError::Zero("microbatches")
    );
    assert_eq!(
        ScheduleIr::build(shape(Kind::Interleaved, 8, 4, 1 << 17)).unwrap_err(),
        ShapeError::TooLarge
    );
    // N = 3 with m = 5 and pp = 2: remainder 2 ≥ pp is allowed.
    let mut s = shape(Kind::Interleaved, 2, 2, 5);
    s.microbatch_group_size = 3;
    assert!(ScheduleIr::build(s).is_ok());
}

#[test]
fn schedule_table_follows_microbatch_groups() {
    // The PP2 N3 M5 VP2 example of schedules.py.
    let mut s = shape(Kind::Interleaved, 2, 2, 5);
    s.microbatch_group_size = 3;
    let ir = build(s);
    let fwd: Vec<String> = ir
        .rank(1)
        .iter()
        .filter_map(|op| match op {
            Op::Forward(m) => Some(format!("{}.{}", m.mb, m.chunk)),
            _ => None,
        })
        .collect();
    assert_eq!(fwd.join(" "), "0.0 1.0 2.0 0.1 1.1 2.1 3.0 4.0 3.1 4.1");
}

#[test]
fn kind_selection_follows_megatron() {
    assert_eq!(Kind::select(1, 1, None), Kind::NoPipelining);
    assert_eq!(Kind::select(4, 1, None), Kind::OneFOneB);
    assert_eq!(Kind::select(4, 2, None), Kind::Interleaved);
    assert_eq!(
        Kind::select(4, 1, Some(venus_base::base::ScheduleKind::Gpipe)),
        Kind::Gpipe
    );
}

// ---------------------------------------------------------------------------------------
// Closed-form makespans (zero communication, equal stage times).

fn makespan(ir: &ScheduleIr, f: u64, b: u64) -> u64 {
    super::makespan(
        ir,
        OpCost {
            forward: f,
            backward: b,
        },
    )
    .unwrap()
}

#[test]
fn makespan_one_f_one_b_pp4_m8() {
    let ir = build(shape(Kind::OneFOneB, 4, 1, 8));
    assert_eq!(makespan(&ir, 1, 2), (8 + 4 - 1) * 3);
    let t = evaluate(&ir, OpCost::default(), Semantics::Eager).unwrap();
    // Bubble (p−1)/(m+p−1) = 3/11 of every rank's time.
    assert_eq!(t.bubble(), (4 * 9, 4 * 33));
}

#[test]
fn makespan_interleaved_pp4_vpp2_m8() {
    // Chunk times 1 and 2, i.e. full-stage t_f = 2, t_b = 4.
    let ir = build(shape(Kind::Interleaved, 4, 2, 8));
    assert_eq!(makespan(&ir, 1, 2), (8 * 2 + 4 - 1) * (2 + 4) / 2);
}

// ---------------------------------------------------------------------------------------
// Property checks.

/// The local chunk on the receiving rank of a tensor produced by `chunk` on `rank`.
fn receiver_chunk(port: Port, rank: u32, chunk: u32, pp: u32) -> Option<u32> {
    match port {
        Port::SendNext if rank + 1 == pp => Some(chunk + 1),
        Port::SendPrev if rank == 0 => chunk.checked_sub(1),
        _ => Some(chunk),
    }
}

/// The (microbatch, chunk) pairs every rank computes: all m on each chunk, or for DualPipe
/// microbatches 0..m/2 on chunk 0 (forward direction) and m/2..m on chunk 1 (reverse).
fn runs_of(s: &PipelineShape) -> std::collections::HashSet<(u32, u32)> {
    let m = s.microbatches;
    (0..s.vpp)
        .flat_map(|c| {
            let mbs = match s.kind {
                Kind::DualPipe if c == 0 => 0..m / 2,
                Kind::DualPipe => m / 2..m,
                _ => 0..m,
            };
            mbs.map(move |mb| (mb, c))
        })
        .collect()
}

/// The last microbatch a chunk computes.
fn last_mb(s: &PipelineShape, chunk: u32) -> u32 {
    match s.kind {
        Kind::DualPipe if chunk == 0 => s.microbatches / 2 - 1,
        _ => s.microbatches - 1,
    }
}

fn check_ir(ir: &ScheduleIr) -> Result<(), TestCaseError> {
    let s = ir.shape;
    let (pp, v, m) = (s.pp, s.vpp, s.microbatches);
    let mut xfers: Vec<HashMap<Port, Vec<Xfer>>> = Vec::new();
    for r in 0..pp {
        let ops = ir.rank(r);
        // Compute: every (mb, chunk) forward and backward exactly once, forward first; a
        // schedule that splits the backward runs each W once, after its B.
        let mut fwd = HashMap::new();
        let mut bwd = HashMap::new();
        let mut wgt = HashMap::new();
        for (i, op) in ops.iter().enumerate() {
            match op {
                Op::Forward(x) => prop_assert!(fwd.insert((x.mb, x.chunk), i).is_none()),
                Op::Backward(x) => prop_assert!(bwd.insert((x.mb, x.chunk), i).is_none()),
                Op::Weight(x) => prop_assert!(wgt.insert((x.mb, x.chunk), i).is_none()),
                _ => {}
            }
        }
        let runs = runs_of(&s);
        prop_assert_eq!(fwd.len(), runs.len());
        prop_assert_eq!(bwd.len(), runs.len());
        let split = s.kind.splits_backward();
        if s.kind.is_dualpipe() {
            // DualPipe defers the weight gradient of some backwards only (`enable_zb`).
            for (k, w) in &wgt {
                prop_assert!(bwd.get(k).is_some_and(|b| b < w), "W before B {:?}", k);
            }
        } else {
            prop_assert_eq!(wgt.len() as u32, if split { m * v } else { 0 });
        }
        for (k, i) in &fwd {
            prop_assert!(runs.contains(k), "unexpected compute {:?}", k);
            prop_assert!(
                bwd.get(k).is_some_and(|j| j > i),
                "backward before forward {:?}",
                k
            );
            if split {
                prop_assert!(
                    wgt.get(k).is_some_and(|w| w > &bwd[k]),
                    "weight gradient before backward {:?}",
                    k
                );
            }
        }
        // Calls are followed by exactly their transfers; sequence numbers count up per port.
        let mut per_port: HashMap<Port, Vec<Xfer>> = HashMap::new();
        let mut async_recvs = HashMap::new();
        let mut i = 0;
        while i < ops.len() {
            match ops[i] {
                Op::Call(c) => {
                    for j in 0..usize::from(c.xfers) {
                        let Some(Op::Xfer(x)) = ops.get(i + 1 + j) else {
                            return Err(TestCaseError::fail("call without its transfers"));
                        };
                        let list = per_port.entry(x.port).or_default();
                        prop_assert_eq!(x.seq as usize, list.len());
                        list.push(*x);
                        if !c.blocking && !x.port.is_send() {
                            async_recvs.insert((x.port, x.seq), 0u32);
                        }
                    }
                    i += usize::from(c.xfers);
                }
                Op::Xfer(_) => return Err(TestCaseError::fail("transfer outside a call")),
                Op::Wait { port, seq } => {
                    prop_assert!(per_port
                        .get(&port)
                        .is_some_and(|l| (seq as usize) < l.len()));
                    if let Some(n) = async_recvs.get_mut(&(port, seq)) {
                        *n += 1;
                    }
                }
                _ => {}
            }
            i += 1;
        }
        // Megatron asserts the recv handles are cleared at the end of a step.
        prop_assert!(async_recvs.values().all(|&n| n == 1), "unwaited async recv");
        check_hooks(ir, r)?;
        xfers.push(per_port);
    }
    // Every send matches one receive on the peer, in channel order, with the same tensor.
    for r in 0..pp {
        for port in [Port::SendNext, Port::SendPrev] {
            let peer = port.peer(r, pp);
            let sends = xfers[r as usize].get(&port).cloned().unwrap_or_default();
            let recvs = xfers[peer as usize]
                .get(&port.peer_port())
                .cloned()
                .unwrap_or_default();
            prop_assert_eq!(sends.len(), recvs.len(), "pp{} {:?}", r, port);
            for (x, y) in sends.iter().zip(&recvs) {
                prop_assert_eq!(port.channel(r, pp), y.port.channel(peer, pp));
                prop_assert_eq!(x.seq, y.seq);
                prop_assert_eq!(x.mb, y.mb, "pp{} {:?} seq {}", r, port, x.seq);
                prop_assert_eq!(receiver_chunk(port, r, x.chunk, pp), Some(y.chunk));
            }
        }
    }
    // Blocking calls complete under rendezvous semantics: no deadlock.
    let rendezvous = evaluate(ir, OpCost::default(), Semantics::Rendezvous);
    prop_assert!(rendezvous.is_ok(), "{}", rendezvous.unwrap_err());
    Ok(())
}

/// Each chunk's grad reduction launches exactly once, at or after its last backward; each
/// chunk's param gather (when overlapped) is dispatched once, before its first forward; the
/// step ends with finalize (and the embedding all-reduce on the embedding group) and the
/// optimizer step.
fn check_hooks(ir: &ScheduleIr, r: u32) -> Result<(), TestCaseError> {
    let s = ir.shape;
    let v = s.vpp;
    let mut on = true;
    let mut launches = vec![0u32; v as usize];
    let mut last_backward_done = vec![false; v as usize];
    let mut param_syncs = vec![0u32; v as usize];
    let mut forwarded = vec![false; v as usize];
    // The op that completes a microbatch's weight gradients launches the reductions.
    let split = s.kind.splits_backward();
    for op in ir.rank(r) {
        match *op {
            Op::EnableGradSync => on = true,
            Op::DisableGradSync => on = false,
            Op::Backward(x) | Op::Weight(x) if split == matches!(op, Op::Weight(_)) => {
                let last = last_mb(&s, x.chunk);
                if x.mb == last {
                    last_backward_done[x.chunk as usize] = true;
                }
                if on {
                    prop_assert_eq!(x.mb, last, "backward with grad sync on");
                    launches[x.chunk as usize] += 1;
                }
            }
            Op::GradSync { chunk } => {
                prop_assert!(last_backward_done[chunk as usize]);
                launches[chunk as usize] += 1;
            }
            Op::ParamSync { chunk } => {
                prop_assert!(!forwarded[chunk as usize], "param sync after first forward");
                param_syncs[chunk as usize] += 1;
            }
            Op::Forward(x) => forwarded[x.chunk as usize] = true,
            _ => {}
        }
    }
    prop_assert!(
        launches.iter().all(|&n| n == 1),
        "grad launches {:?}",
        launches
    );
    let expect_param = u32::from(s.overlap_param_gather);
    prop_assert!(param_syncs.iter().all(|&n| n == expect_param));
    let ops = ir.rank(r);
    let embedding =
        s.tied_embeddings && s.pp > 1 && s.kind != Kind::Zbv && (r == 0 || r + 1 == s.pp);
    let tail: Vec<Op> = if embedding {
        vec![
            Op::FinalizeGrads,
            Op::EmbeddingGradAllReduce,
            Op::OptimizerStep,
        ]
    } else {
        vec![Op::FinalizeGrads, Op::OptimizerStep]
    };
    prop_assert_eq!(&ops[ops.len() - tail.len()..], tail.as_slice());
    Ok(())
}

fn flags() -> impl Strategy<Value = [bool; 6]> {
    prop::array::uniform6(any::<bool>())
}

fn with_flags(mut s: PipelineShape, f: [bool; 6]) -> PipelineShape {
    s.overlap_p2p = f[0];
    s.overlap_grad_reduce = f[1];
    s.delay_grad_reduce = f[2];
    s.overlap_param_gather = f[3];
    s.delay_param_gather = f[4];
    s.tied_embeddings = f[5];
    s
}

/// Valid interleaved shapes: pp 2..8, vpp 2..4, N in [pp, m], m % N == 0 or ≥ pp.
fn interleaved_shape() -> impl Strategy<Value = PipelineShape> {
    (2u32..=8, 2u32..=4, 1u32..=32, 0u32..=32, flags()).prop_filter_map(
        "S01/S02",
        |(pp, v, m, extra, f)| {
            let mut s = with_flags(shape(Kind::Interleaved, pp, v, m), f);
            s.microbatch_group_size = pp + extra % (m.saturating_sub(pp) + 1);
            s.check().ok().map(|_| s)
        },
    )
}

fn pipelined_shape() -> impl Strategy<Value = PipelineShape> {
    (
        prop_oneof![Just(Kind::OneFOneB), Just(Kind::Gpipe)],
        1u32..=8,
        1u32..=32,
        flags(),
    )
        .prop_map(|(kind, pp, m, f)| with_flags(shape(kind, pp, 1, m), f))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn interleaved_schedules_are_complete_matched_and_deadlock_free(s in interleaved_shape()) {
        check_ir(&build(s))?;
    }

    #[test]
    fn dualpipe_schedules_are_complete_matched_and_deadlock_free(s in dualpipe_shape()) {
        check_ir(&build(s))?;
    }

    #[test]
    fn combined_1f1b_is_complete_matched_deadlock_free_and_holds_one_more_forward(
        s in interleaved_shape(),
    ) {
        // `overlap_ep_comm`: one more warmup forward (schedules.py:966-970), every steady
        // step's backward on the second compute stream right after its forward.
        let mut c = s;
        c.overlap_ep_comm = true;
        let ir = build(c);
        check_ir(&ir)?;
        for r in 0..c.pp {
            prop_assert_eq!(peak_in_flight(&c, r), measure_in_flight(ir.rank(r), c.vpp));
            let ops = ir.rank(r);
            for (i, op) in ops.iter().enumerate() {
                if *op == Op::Stream(ComputeStream(1)) {
                    prop_assert!(matches!(ops[i - 1], Op::Forward(_)));
                    // Up to the return to the main stream: one compute op, a backward (grad
                    // sync hooks may precede it).
                    let end = ops[i..]
                        .iter()
                        .position(|o| *o == Op::Stream(ComputeStream::MAIN))
                        .map(|j| i + j);
                    prop_assert!(end.is_some());
                    let inner: Vec<&Op> = ops[i + 1..end.unwrap_or(i)]
                        .iter()
                        .filter(|o| o.is_compute())
                        .collect();
                    prop_assert_eq!(inner.len(), 1);
                    prop_assert!(matches!(inner[0], Op::Backward(_)));
                }
            }
        }
    }

    #[test]
    fn one_f_one_b_and_gpipe_are_complete_matched_and_deadlock_free(s in pipelined_shape()) {
        check_ir(&build(s))?;
    }

    #[test]
    fn no_pipelining_is_complete(m in 1u32..=32, f in flags()) {
        check_ir(&build(with_flags(shape(Kind::NoPipelining, 1, 1, m), f)))?;
    }

    #[test]
    fn one_f_one_b_makespan_is_m_plus_p_minus_1_stage_times(
        pp in 1u32..=8, m in 1u32..=32, tf in 1u64..=5, tb in 1u64..=10,
    ) {
        let expect = u64::from(m + pp - 1) * (tf + tb);
        prop_assert_eq!(makespan(&build(shape(Kind::OneFOneB, pp, 1, m)), tf, tb), expect);
        prop_assert_eq!(makespan(&build(shape(Kind::Gpipe, pp, 1, m)), tf, tb), expect);
    }

    #[test]
    fn no_pipelining_makespan_is_m_stage_times(m in 1u32..=32, tf in 1u64..=5, tb in 1u64..=10) {
        let ir = build(shape(Kind::NoPipelining, 1, 1, m));
        prop_assert_eq!(makespan(&ir, tf, tb), u64::from(m) * (tf + tb));
    }

    #[test]
    fn interleaved_makespan_is_mv_plus_p_minus_1_chunk_times(
        s in interleaved_shape(), tf in 1u64..=3,
    ) {
        // Chunk forward t_f/v = tf, backward t_b/v = 2·tf (t_b = 2·t_f); holds for every
        // valid N and remainder, batched or overlapped.
        let ir = build(s);
        let expect = u64::from(s.microbatches * s.vpp + s.pp - 1) * (tf + 2 * tf);
        prop_assert_eq!(makespan(&ir, tf, 2 * tf), expect);
    }
}

#[test]
fn picture_shows_ranks_ops_and_bubble() {
    let ir = build(shape(Kind::OneFOneB, 2, 1, 2));
    // makespan (2+2−1)·3 = 9 ticks over 18 columns: forward 2 columns, backward 4; rank 0
    // waits 2 ticks for the first gradient and 1 for the last.
    let p = picture(&ir, OpCost::default(), 18, false);
    assert_eq!(
        p,
        "pp0 |F0F1....B0==..B1==|\n\
         pp1 |..F0B0==F1B1==....|\n\
         makespan 9 (t_f 1, t_b 2 per chunk), bubble 33.3% (6 of 18 rank-ticks idle)\n"
    );
    let colored = picture(&ir, OpCost::default(), 18, true);
    assert!(colored.contains("\x1b[30;44m0 \x1b[0m"));
    assert!(colored.contains("\x1b[30;42m0   \x1b[0m"));
}

#[test]
fn picture_labels_chunks_when_interleaved() {
    let ir = build(shape(Kind::Interleaved, 2, 2, 4));
    let p = picture(&ir, OpCost::default(), 4 * 27, false);
    let first = p.lines().next().unwrap();
    // 4 columns per tick; rank 0 waits 2 ticks for the first gradient (pre-received by the
    // last warmup exchange) and 1 tick before B3.1.
    assert_eq!(
        first,
        "pp0 |F0.0F1.0F0.1F1.1........F2.0B0.1====F3.0B1.1====F2.1B0.0====F3.1B1.0====\
         B2.1====....B3.1====B2.0====B3.0====|"
    );
    // At 2 columns per tick a forward has no room for its chunk: odd chunks go lowercase.
    let narrow = picture(&ir, OpCost::default(), 2 * 27 + 1, false);
    assert_eq!(
        narrow.lines().next().unwrap(),
        "pp0 |F0F1f0f1....F2B0.1F3B1.1f2B0.0f3B1.0B2.1..B3.1B2.0B3.0|"
    );
}

#[test]
#[ignore = "timing printout; run with --ignored --nocapture"]
fn build_time_llama3_405b_shape() {
    for vpp in [1u32, 4] {
        let kind = if vpp == 1 {
            Kind::OneFOneB
        } else {
            Kind::Interleaved
        };
        let s = shape(kind, 16, vpp, 128);
        let start = std::time::Instant::now();
        let ir = build(s);
        let elapsed = start.elapsed();
        let ops: usize = ir.ranks().iter().map(Vec::len).sum();
        let start = std::time::Instant::now();
        let t = evaluate(&ir, OpCost::default(), Semantics::Rendezvous).unwrap();
        let sim = start.elapsed();
        println!(
            "pp 16 vpp {vpp} m 128: {ops} ops built in {elapsed:?}, simulated in {sim:?}, \
             bubble {:.2}%",
            t.bubble_fraction().percent()
        );
        assert!(elapsed.as_millis() < 50, "{elapsed:?}");
    }
}

#[test]
fn describe_rank_lists_calls_and_hooks() {
    let ir = build(shape(Kind::OneFOneB, 2, 1, 1));
    assert_eq!(
        describe_rank(&ir, 1),
        "disable_grad_sync\n\
         recv_forward rp→c0\n\
         F0\n\
         enable_grad_sync\n\
         B0\n\
         send_backward sp(0,0)\n\
         finalize_model_grads\n\
         embedding_grad_all_reduce\n\
         optimizer_step\n"
    );
}

#[test]
fn rendezvous_simulation_reports_a_deadlock() {
    // Both ranks first send forward with a blocking call, then receive: with rendezvous
    // sends neither send can complete; with eager sends both proceed.
    let send = |port| {
        [
            Op::Call(Call {
                kind: CallKind::SendForward,
                issue: Issue::Batched,
                blocking: true,
                xfers: 1,
            }),
            Op::Xfer(Xfer {
                port,
                mb: 0,
                chunk: 0,
                seq: 0,
            }),
        ]
    };
    let rank: Vec<Op> = send(Port::SendNext)
        .into_iter()
        .chain(send(Port::RecvPrev))
        .collect();
    let ir = ScheduleIr {
        shape: shape(Kind::OneFOneB, 2, 1, 1),
        ranks: vec![rank.clone(), rank],
    };
    let err = evaluate(&ir, OpCost::default(), Semantics::Rendezvous).unwrap_err();
    assert_eq!(err.blocked.len(), 2);
    assert_eq!((err.blocked[0].0, err.blocked[0].1), (0, 0));
    assert_eq!(
        evaluate(&ir, OpCost::default(), Semantics::Eager)
            .unwrap()
            .makespan,
        0
    );
}

#[test]
fn ops_are_small_and_copy() {
    fn copy<T: Copy>() {}
    copy::<Op>();
    assert_eq!(std::mem::size_of::<Op>(), 16);
}

// ---------------------------------------------------------------------------------------
// Figures (peak in flight, bubble) against the built IR.

fn no_pipelining_shape() -> impl Strategy<Value = PipelineShape> {
    (1u32..=32, flags()).prop_map(|(m, f)| with_flags(shape(Kind::NoPipelining, 1, 1, m), f))
}

fn any_shape() -> impl Strategy<Value = PipelineShape> {
    prop_oneof![
        interleaved_shape(),
        pipelined_shape(),
        no_pipelining_shape(),
        zero_bubble_shape(),
        dualpipe_shape(),
        zbv_shape()
    ]
}

/// Valid DualPipe shapes: DualPipe on even pp 2..8 with an even m ≥ 2·pp, DualPipeV on pp
/// 2..8 with m ≥ 2·pp, up to 24 more microbatches.
fn dualpipe_shape() -> impl Strategy<Value = PipelineShape> {
    (
        prop_oneof![Just(Kind::DualPipe), Just(Kind::DualPipeV)],
        2u32..=8,
        0u32..=24,
        flags(),
    )
        .prop_map(|(kind, pp, extra, f)| {
            let dual = kind == Kind::DualPipe;
            let pp = if dual { pp + pp % 2 } else { pp };
            let m = 2 * pp + if dual { extra & !1 } else { extra };
            with_flags(shape(kind, pp, 2, m), f)
        })
}

/// Valid zero-bubble shapes: pp 2..8, m from max(pp, (pp − 1)·c) up to 26 more.
fn zero_bubble_shape() -> impl Strategy<Value = PipelineShape> {
    (
        prop_oneof![Just(Kind::ZbH1), Just(Kind::ZbH2)],
        2u32..=8,
        0u32..=26,
        flags(),
    )
        .prop_map(|(kind, pp, extra, f)| {
            let c = kind.zero_bubble_warmup().unwrap();
            with_flags(shape(kind, pp, 1, pp.max((pp - 1) * c) + extra), f)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn peak_in_flight_equals_the_peak_held_by_the_built_ops(s in any_shape()) {
        let ir = build(s);
        for r in 0..s.pp {
            prop_assert_eq!(
                peak_in_flight(&s, r),
                measure_in_flight(ir.rank(r), s.vpp),
                "rank {}", r
            );
        }
    }

    #[test]
    fn bubble_equals_the_idle_time_of_the_evaluated_ops(
        s in any_shape(), tf in 1u64..=4, tb in 1u64..=9,
    ) {
        // Any uniform chunk costs: the bubble unit is one chunk's forward + backward, on each
        // of the pp ranks.
        // A split backward's bubble unit is one F = B = W: t_b = 2·t_f.
        // DualPipe's bubble is measured in the same unit.
        let in_thirds = s.kind.splits_backward() || s.kind.has_two_chunks();
        let tb = if in_thirds { 2 * tf } else { tb };
        let cost = OpCost { forward: tf, backward: tb };
        let t = evaluate(&build(s), cost, Semantics::Eager).unwrap();
        let b = bubble(&s);
        let unit = if in_thirds { tf } else { tf + tb };
        let pp = u64::from(s.pp);
        prop_assert_eq!(t.bubble(), (pp * b.idle * unit, pp * (b.idle + b.busy) * unit));
        prop_assert!((t.bubble_fraction().0 - b.fraction().0).abs() < 1e-12);
    }
}

#[test]
fn peak_in_flight_of_interleaved_pp2_vpp2_m4_per_chunk() {
    // Rank 0 warms up 2·1 + 1·2 = 4 steps and holds the 5th forward: table (0,0) (1,0) (0,1)
    // (1,1) (2,0) has 3 entries of chunk 0 and 2 of chunk 1; rank 1 warms up 2.
    let s = shape(Kind::Interleaved, 2, 2, 4);
    let f = |total, first_chunk, last_chunk| InFlight {
        total,
        first_chunk,
        last_chunk,
    };
    assert_eq!(peak_in_flight(&s, 0), f(5, 3, 2));
    assert_eq!(peak_in_flight(&s, 1), f(3, 2, 1));
    // A larger group (N = m = 4) changes the table: (0..4, chunk 0) first.
    let mut s = s;
    s.microbatch_group_size = 4;
    assert_eq!(peak_in_flight(&s, 0), f(7, 4, 3));
    assert_eq!(peak_in_flight(&s, 1), f(5, 4, 1));
}

#[test]
fn bubble_of_one_f_one_b_pp4_m8_is_3_of_11() {
    let b = bubble(&shape(Kind::OneFOneB, 4, 1, 8));
    assert_eq!((b.idle, b.busy), (3, 8));
    assert_eq!(b.fraction(), Ratio(3.0 / 11.0));
    let b = bubble(&shape(Kind::Interleaved, 4, 2, 8));
    assert_eq!((b.idle, b.busy), (3, 16));
    assert_eq!(
        bubble(&shape(Kind::NoPipelining, 1, 1, 8)).fraction(),
        Ratio::ZERO
    );
}

fn mb(mb: u32) -> Micro {
    Micro { mb, chunk: 0 }
}

#[test]
fn a_split_backward_runs_w_after_b_and_holds_activations_until_w() {
    // One rank, two microbatches: F0 B0 F1 W0 B1 W1 keeps microbatch 0 until its W, after F1.
    let s = shape(Kind::NoPipelining, 1, 1, 2);
    let ops = vec![
        Op::Forward(mb(0)),
        Op::Backward(mb(0)),
        Op::Forward(mb(1)),
        Op::Stream(ComputeStream(1)),
        Op::Weight(mb(0)),
        Op::Stream(ComputeStream::MAIN),
        Op::Backward(mb(1)),
        Op::Weight(mb(1)),
        Op::FinalizeGrads,
        Op::OptimizerStep,
    ];
    let ir = ScheduleIr::from_ranks(s, vec![ops]);
    assert!(ir.splits_backward());
    assert!(!build(s).splits_backward());
    assert_eq!(measure_in_flight(ir.rank(0), 1).total, 2);
    assert_eq!(emit_text(&ir), "pp0: F0 B0 F1 W0 B1 W1\n");
    let streams: Vec<u8> = compute_streams(ir.rank(0)).map(|(_, s)| s.0).collect();
    assert_eq!(streams, [0, 0, 0, 1, 0, 0]);
    // Forward 2 ticks, backward 5: B takes 3 and W 2 (W ≈ B, the odd tick to B).
    let cost = OpCost {
        forward: 2,
        backward: 5,
    };
    let t = evaluate(&ir, cost, Semantics::Eager).unwrap();
    let spans: Vec<(u64, u64)> = t.ranks[0]
        .compute
        .iter()
        .map(|s| (s.start, s.end))
        .collect();
    assert_eq!(spans, [(0, 2), (2, 5), (5, 7), (7, 9), (9, 12), (12, 14)]);
    assert_eq!(t.makespan, 14);
    // The same order without W ops: 2 × (2 + 5).
    assert_eq!(super::makespan(&build(s), cost).unwrap(), 14);
    assert!(describe_rank(&ir, 0).contains("stream 1\nW0\nstream 0\n"));
    // One column per tick: F 2, B 3, W 2 columns.
    let pic = picture(&ir, cost, 14, false);
    assert!(pic.starts_with("pp0 |F0B0=F1W0B1=W1|\n"), "{pic}");
}

// ---------------------------------------------------------------------------------------
// Zero-bubble hand schedules (sail-sg/zero-bubble-pipeline-parallelism, arxiv branch,
// efficiency.py `get_hand_schedule`).

#[test]
fn emit_text_zb_h1_pp4_m8_defers_w_by_the_stage_index() {
    let ir = build(shape(Kind::ZbH1, 4, 1, 8));
    assert_eq!(
        emit_text(&ir),
        "pp0: F0 F1 F2 F3 B0 W0 F4 B1 W1 F5 B2 W2 F6 B3 W3 F7 B4 W4 B5 W5 B6 W6 B7 W7\n\
         pp1: F0 F1 F2 B0 F3 B1 W0 F4 B2 W1 F5 B3 W2 F6 B4 W3 F7 B5 W4 B6 W5 B7 W6 W7\n\
         pp2: F0 F1 B0 F2 B1 F3 B2 W0 F4 B3 W1 F5 B4 W2 F6 B5 W3 F7 B6 W4 B7 W5 W6 W7\n\
         pp3: F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1 F5 B5 W2 F6 B6 W3 F7 B7 W4 W5 W6 W7\n"
    );
    // Without the W ops the order is 1F1B's.
    let without_w = |t: String| {
        t.lines()
            .map(|l| {
                l.split(' ')
                    .filter(|x| !x.starts_with('W'))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(
        without_w(emit_text(&ir)),
        without_w(emit_text(&build(shape(Kind::OneFOneB, 4, 1, 8))))
    );
}

#[test]
fn emit_text_zb_h2_pp4_m8_runs_twice_the_warmup() {
    let ir = build(shape(Kind::ZbH2, 4, 1, 8));
    assert_eq!(
        emit_text(&ir),
        "pp0: F0 F1 F2 F3 F4 F5 F6 B0 W0 F7 B1 W1 B2 W2 B3 W3 B4 W4 B5 W5 B6 W6 B7 W7\n\
         pp1: F0 F1 F2 F3 F4 B0 F5 B1 F6 B2 W0 F7 B3 W1 B4 W2 B5 W3 B6 W4 B7 W5 W6 W7\n\
         pp2: F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 W0 F7 B5 W1 B6 W2 B7 W3 W4 W5 W6 W7\n\
         pp3: F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 W0 F7 B7 W1 W2 W3 W4 W5 W6 W7\n"
    );
}

#[test]
fn zb_h1_rank1_posts_async_transfers_and_waits_before_each_consumer() {
    let ir = build(shape(Kind::ZbH1, 3, 1, 3));
    // Rank 1 of 3: receive F's input and B's output gradient before the op, send after, W
    // without communication; the sends are waited on at the end.
    assert_eq!(
        tokens(&ir, 1),
        [
            "recv_f~[rp→c0] recv_b~[rn→c0]",
            "wait(rp#0) recv_f~[rp→c0] F(c0,0) send_f~[sn(0,0)]",
            "wait(rp#1) recv_f~[rp→c0] F(c0,1) send_f~[sn(0,1)]",
            "wait(rn#0) recv_b~[rn→c0] B(c0,0) send_b~[sp(0,0)]",
            "wait(rp#2) F(c0,2) send_f~[sn(0,2)]",
            "wait(rn#1) recv_b~[rn→c0] B(c0,1) send_b~[sp(0,1)]",
            "wait(rn#2) B(c0,2) send_b~[sp(0,2)]",
            "wait(sn#0) wait(sn#1) wait(sp#0) wait(sn#2) wait(sp#1) wait(sp#2)",
        ]
        .join(" ")
    );
    assert_eq!(
        emit_text(&ir).lines().nth(1),
        Some("pp1: F0 F1 B0 F2 B1 W0 B2 W1 W2")
    );
}

#[test]
fn zero_bubble_shapes_are_checked_against_the_reference() {
    assert_eq!(
        ScheduleIr::build(shape(Kind::ZbH1, 1, 1, 8)).unwrap_err(),
        ShapeError::ZeroBubbleNeedsStages
    );
    assert_eq!(
        ScheduleIr::build(shape(Kind::ZbH2, 8, 1, 8)).unwrap_err(),
        ShapeError::ZeroBubbleMicrobatches { m: 8, least: 14 }
    );
    assert_eq!(
        ScheduleIr::build(shape(Kind::ZbH1, 8, 1, 7)).unwrap_err(),
        ShapeError::ZeroBubbleMicrobatches { m: 7, least: 8 }
    );
    assert_eq!(
        ScheduleIr::build(shape(Kind::ZbH1, 4, 2, 8)).unwrap_err(),
        ShapeError::ChunksWithoutInterleaving { vpp: 2 }
    );
    assert!(ScheduleIr::build(shape(Kind::ZbH1, 8, 1, 8)).is_ok());
    assert!(ScheduleIr::build(shape(Kind::ZbH2, 2, 1, 2)).is_ok());
    assert!(ScheduleIr::build(shape(Kind::ZbH2, 8, 1, 14)).is_ok());
}

#[test]
fn zero_bubble_peak_in_flight_is_1f1b_first_stage_for_h1_and_twice_for_h2() {
    // pp 8, m 16: 1F1B holds 8 − r; ZB-H1 holds 8 on every stage (the first stage's 1F1B
    // peak); ZB-H2 holds 15, about twice.
    let f = |kind, r| peak_in_flight(&shape(kind, 8, 1, 16), r).total;
    assert_eq!((0..8).map(|r| f(Kind::OneFOneB, r)).max(), Some(8));
    assert_eq!((0..8).map(|r| f(Kind::ZbH1, r)).collect::<Vec<_>>(), [8; 8]);
    assert_eq!(
        (0..8).map(|r| f(Kind::ZbH2, r)).collect::<Vec<_>>(),
        [15; 8]
    );
    assert_eq!(peak_in_flight(&shape(Kind::ZbH2, 4, 1, 6), 0).total, 6);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn zero_bubble_schedules_are_complete_matched_and_deadlock_free(s in zero_bubble_shape()) {
        check_ir(&build(s))?;
    }

    #[test]
    fn zb_h1_makespan_is_the_papers_closed_form(
        pp in 2u32..=8, extra in 0u32..=24, tf in 1u64..=5, tb in 2u64..=10,
    ) {
        // Qi et al. §3.1: the ideal m·(F + B + W) plus (pp − 1)·(F + B − W), with the
        // evaluator's split B = t_b − ⌊t_b/2⌋ ≥ W = ⌊t_b/2⌋, in the paper's regime B ≤ F.
        let (b, w) = (tb - tb / 2, tb / 2);
        prop_assume!(b <= tf);
        let m = pp + extra;
        let expect = u64::from(m) * (tf + tb) + u64::from(pp - 1) * (tf + b - w);
        prop_assert_eq!(makespan(&build(shape(Kind::ZbH1, pp, 1, m)), tf, tb), expect);
    }

    #[test]
    fn zb_h2_makespan_is_the_papers_closed_form_per_rank(
        pp in 2u32..=8, extra in 0u32..=24, tf in 1u64..=5, tb in 2u64..=10,
    ) {
        // efficiency.py:234-235 asserts (pp − 1)·(F + B − 2W) over each rank's own span, from
        // its first forward (m ≥ 2·pp, B ≤ F; none when that is negative); from rank 0's
        // first forward the last stage also waits (pp − 1)·F for its first input.
        let (b, w) = (tb - tb / 2, tb / 2);
        prop_assume!(b <= tf);
        let m = 2 * pp + extra;
        let ir = build(shape(Kind::ZbH2, pp, 1, m));
        let t = evaluate(&ir, OpCost { forward: tf, backward: tb }, Semantics::Eager).unwrap();
        let ideal = u64::from(m) * (tf + tb);
        let per_rank = t.ranks.iter().map(|rt| rt.finish - rt.compute[0].start).max().unwrap();
        let fill = (tf + b).saturating_sub(2 * w);
        prop_assert_eq!(per_rank, ideal + u64::from(pp - 1) * fill);
        prop_assert_eq!(t.makespan, ideal + u64::from(pp - 1) * tf.max(fill));
    }
}

#[test]
fn picture_of_zb_h1_letters_w_and_ends_with_a_legend() {
    let ir = build(shape(Kind::ZbH1, 2, 1, 2));
    // F, B and W one tick each: rank 0 waits 1 tick for the first gradient, rank 1 defers W0.
    let p = picture(&ir, OpCost::default(), 14, false);
    assert_eq!(
        p,
        "pp0 |F0F1..B0W0B1W1|\n\
         pp1 |..F0B0F1B1W0W1|\n\
         makespan 7 (t_f 1, t_b 2 per chunk), bubble 14.3% (2 of 14 rank-ticks idle)\n\
         legend: F forward (1 ticks), B input gradient (1), W weight gradient (1), . idle\n"
    );
    let colored = picture(&ir, OpCost::default(), 14, true);
    assert!(colored.contains("\x1b[30;45m W \x1b[0m weight gradient"));
}

#[test]
fn emit_text_dualpipe_pp4_m8_is_the_reference_step_loop() {
    // tests/golden/schedule/dualpipe_pp4_m8.txt (dualpipe.py's step loop): rank 0 runs two
    // forwards of its forward-direction stage, then its reverse-direction last stage (chunk 1,
    // microbatches 4..8) computes each backward right after its forward.
    let ir = build(shape(Kind::DualPipe, 4, 1, 8));
    assert_eq!(ir.shape.vpp, 2);
    assert_eq!(
        emit_text(&ir).lines().next().unwrap(),
        "pp0: F0.0 F1.0 F2.0 F4.1 B4.1 W4.1 F5.1 F3.0 B5.1 F6.1 B0.0 B6.1 F7.1 B1.0 B7.1 B2.0 W2.0 B3.0 W3.0"
    );
    // The ranks of the second half run the mirror image: pp3 starts on the reverse direction.
    assert!(emit_text(&ir)
        .lines()
        .nth(3)
        .unwrap()
        .starts_with("pp3: F4.1 F5.1 F6.1 F0.0 B0.0 W0.0"));
}

#[test]
fn dualpipe_overlaps_the_main_steps_backward_on_a_second_stream() {
    let ir = build(shape(Kind::DualPipeV, 4, 2, 8));
    let streams: Vec<(Op, ComputeStream)> = compute_streams(ir.rank(0)).collect();
    let on_second = streams
        .iter()
        .filter(|(_, s)| *s == ComputeStream(1))
        .count();
    // Rank 0: step 4 runs m − 2·pp + 1 = 1 pair of overlapped chunks twice, step 5 three
    // more pairs; every overlapped backward is a whole backward on stream 1.
    assert_eq!(on_second, 5);
    assert!(streams
        .iter()
        .all(|(op, s)| *s == ComputeStream::MAIN || matches!(op, Op::Backward(_))));
}

#[test]
fn dualpipe_shapes_are_checked_against_the_reference() {
    assert_eq!(
        ScheduleIr::build(shape(Kind::DualPipe, 3, 1, 12)).unwrap_err(),
        ShapeError::DualPipeOddStages { pp: 3 }
    );
    assert_eq!(
        ScheduleIr::build(shape(Kind::DualPipe, 4, 1, 9)).unwrap_err(),
        ShapeError::DualPipeMicrobatches {
            m: 9,
            least: 8,
            even: true
        }
    );
    assert_eq!(
        ScheduleIr::build(shape(Kind::DualPipeV, 8, 2, 8)).unwrap_err(),
        ShapeError::DualPipeMicrobatches {
            m: 8,
            least: 16,
            even: false
        }
    );
    assert_eq!(
        ScheduleIr::build(shape(Kind::DualPipeV, 1, 2, 8)).unwrap_err(),
        ShapeError::DualPipeNeedsStages
    );
    // DualPipeV takes odd pp and odd microbatch counts.
    assert!(ScheduleIr::build(shape(Kind::DualPipeV, 3, 2, 5)).is_err());
    assert!(ScheduleIr::build(shape(Kind::DualPipeV, 3, 2, 7)).is_ok());
}

// ---------------------------------------------------------------------------------------
// ZBV (sail-sg/zero-bubble-pipeline-parallelism scheduler/zbv.py, the greedy V schedule).

/// Valid ZBV shapes: pp 2..8, any m from 1 to 3·pp + 1 (the greedy scheduler has no lower
/// bound), with the memory figures of a model from a small one to Llama-2-7B's.
fn zbv_shape() -> impl Strategy<Value = PipelineShape> {
    (2u32..=8, 1u32..=25, flags(), 0usize..3).prop_map(|(pp, m, f, model)| {
        let mut s = with_flags(shape(Kind::Zbv, pp, 2, m.min(3 * pp + 1)), f);
        s.v_memory = [
            VMemory::NO_MODEL,
            VMemory::of_model(4096, 32, 4096),
            VMemory::of_model(8192, 8, 128),
        ][model];
        s
    })
}

/// The shape of tests/golden/schedule/zbv.py: Llama-2-7B's memory figures.
fn zbv_golden_shape(pp: u32, m: u32) -> PipelineShape {
    let mut s = shape(Kind::Zbv, pp, 2, m);
    s.v_memory = VMemory::of_model(4096, 32, 4096);
    s
}

#[test]
fn emit_text_zbv_equals_the_reference_greedy_order() {
    // The golden files are the output of the reference's own `PipelineGraph` (zbv.py).
    let golden = [
        (
            4,
            8,
            include_str!("../../../../tests/golden/schedule/zbv_pp4_m8.txt"),
        ),
        (
            4,
            16,
            include_str!("../../../../tests/golden/schedule/zbv_pp4_m16.txt"),
        ),
        (
            8,
            8,
            include_str!("../../../../tests/golden/schedule/zbv_pp8_m8.txt"),
        ),
        (
            8,
            16,
            include_str!("../../../../tests/golden/schedule/zbv_pp8_m16.txt"),
        ),
    ];
    for (pp, m, want) in golden {
        assert_eq!(
            emit_text(&build(zbv_golden_shape(pp, m))),
            want,
            "pp {pp} m {m}"
        );
    }
}

#[test]
fn zbv_pp4_m8_rank0_starts_with_seven_forwards_and_ends_with_chunk0_weights() {
    // zbv_pp4_m8.txt, rank 0: F0.0..F6.0 down the V, then F0.1 once the bottom returns it;
    // the last op is the W of the last microbatch's chunk 0 (its backward leaves last).
    let ir = build(zbv_golden_shape(4, 8));
    let text = emit_text(&ir);
    let rank0 = text.lines().next().unwrap();
    assert!(rank0.starts_with("pp0: F0.0 F1.0 F2.0 F3.0 F4.0 F5.0 F6.0 F0.1 B0.1 W0.1"));
    assert!(rank0.ends_with("B7.0 W7.0"));
    assert_eq!(rank0.split(' ').count(), 1 + 6 * 8);
}

#[test]
fn zbv_order_depends_on_the_models_memory_figures_below_two_pp_microbatches() {
    // The greedy weighs 2·pp forwards of memory; a W holds 32·h of the 34·h + 5·a·s of a
    // forward. At pp 8 with 9 microbatches Llama-2-7B's figures and those of a model of
    // hidden size 100,000 with one head and s = 1 order the ranks differently, at 16 they
    // agree; a W that holds nothing ([`VMemory::NO_MODEL`]) orders pp 8 × 16 differently
    // again (each checked against zbv.py run with the same figures).
    let order = |pp, m, mem| {
        let mut s = shape(Kind::Zbv, pp, 2, m);
        s.v_memory = mem;
        emit_text(&build(s))
    };
    let llama = VMemory::of_model(4096, 32, 4096);
    let wide = VMemory::of_model(100_000, 1, 1);
    assert_ne!(order(8, 9, llama), order(8, 9, wide));
    assert_eq!(order(8, 16, llama), order(8, 16, wide));
    assert_ne!(order(8, 16, VMemory::NO_MODEL), order(8, 16, llama));
}

#[test]
fn zbv_shapes_are_checked() {
    assert_eq!(
        shape(Kind::Zbv, 1, 2, 4).check(),
        Err(ShapeError::ZeroBubbleNeedsStages)
    );
    let mut s = shape(Kind::Zbv, 4, 2, 8);
    s.vpp = 3;
    assert_eq!(s.check(), Err(ShapeError::ZbvChunks { vpp: 3 }));
    // vpp is two whatever the caller asks.
    assert_eq!(shape(Kind::Zbv, 4, 1, 8).vpp, 2);
    assert!(shape(Kind::Zbv, 4, 2, 1).check().is_ok());
}

#[test]
fn zbv_rank1_waits_on_each_input_in_its_senders_order() {
    // On pp 2, rank 0 sends rank 1 chunk 0's activations and chunk 1's gradients on one
    // channel, rank 1 sends back chunk 1's activations and chunk 0's gradients: every
    // receive is posted (in the sender's order) before it is waited on.
    let ir = build(zbv_golden_shape(2, 4));
    for r in 0..2 {
        let ops = ir.rank(r);
        let mut posted: HashMap<Port, u32> = HashMap::new();
        for op in ops {
            match *op {
                Op::Xfer(x) if !x.port.is_send() => {
                    *posted.entry(x.port).or_default() += 1;
                }
                Op::Wait { port, seq } if !port.is_send() => {
                    assert!(
                        posted.get(&port).is_some_and(|&n| n > seq),
                        "rank {r} {port:?} {seq}"
                    );
                }
                _ => {}
            }
        }
    }
    // Rank 0 never receives from a previous rank, rank 1 (the bottom of the V) never from a
    // next one.
    let recv = |r: u32, p: Port| {
        ir.rank(r)
            .iter()
            .filter(|op| matches!(op, Op::Xfer(x) if x.port == p))
            .count()
    };
    assert_eq!(recv(0, Port::RecvPrev), 0);
    assert_eq!(recv(1, Port::RecvNext), 0);
    // Rank 0 gets chunk 1's 4 activations and chunk 0's 4 gradients from rank 1.
    assert_eq!(recv(0, Port::RecvNext), 8);
    assert_eq!(recv(1, Port::RecvPrev), 8);
}

#[test]
fn zbv_peak_in_flight_is_measured_on_the_built_ops() {
    // ZBV holds each (microbatch, chunk) from its F to its W. pp 4 with 16 microbatches:
    // rank 0 peaks at 8 chunk-microbatches (its 7 warmup forwards and F0.1), 2·pp, the
    // memory limit the reference's scheduler keeps (zbv.py:22); the last rank at 8 too.
    let s = zbv_golden_shape(4, 16);
    let ir = build(s);
    for r in 0..4 {
        assert_eq!(
            peak_in_flight(&s, r),
            measure_in_flight(ir.rank(r), 2),
            "rank {r}"
        );
    }
    assert_eq!(peak_in_flight(&s, 0).total, 8);
}

#[test]
fn zbv_bubble_is_below_zb_h1_at_pp8_m16() {
    // In units of one F = B = W: zb_h1 idles pp − 1 = 7 of 3·16 + 7; ZBV less.
    let zbv = bubble(&zbv_golden_shape(8, 16));
    let h1 = bubble(&shape(Kind::ZbH1, 8, 1, 16));
    assert_eq!((h1.idle, h1.busy), (7, 48));
    assert!(zbv.fraction() < h1.fraction(), "{zbv:?} against {h1:?}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, .. ProptestConfig::default() })]

    #[test]
    fn zbv_schedules_are_complete_matched_and_deadlock_free(s in zbv_shape()) {
        check_ir(&build(s))?;
    }
}
