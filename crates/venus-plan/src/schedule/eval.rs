//! Zero-communication-cost evaluation of a [`ScheduleIr`]: each rank runs its ops in order;
//! compute takes its cost, communication takes no time but a receive cannot complete before
//! its matching send was posted. Used for the pipeline picture, for bubble figures and, with
//! [`Semantics::Rendezvous`], to prove the IR deadlock-free.
//!
//! Times are integer ticks (relative weights), so closed forms can be checked exactly.

use super::{Micro, Op, Port, ScheduleIr};
use std::fmt;
use venus_base::base::Ratio;

/// Cost of one forward and one backward of one model chunk, in ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpCost {
    pub forward: u64,
    pub backward: u64,
}

impl Default for OpCost {
    /// t_b = 2·t_f, the usual ratio.
    fn default() -> OpCost {
        OpCost {
            forward: 1,
            backward: 2,
        }
    }
}

/// When a send completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Semantics {
    /// Sends complete when posted (buffered); only receives wait. The dataflow view: an op
    /// starts when its rank is free and its inputs exist.
    Eager,
    /// A send completes only when the peer posted the matching receive, like a large NCCL
    /// send; finds every deadlock of blocking calls.
    Rendezvous,
}

/// One compute op placed in time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    pub start: u64,
    pub end: u64,
    pub op: Op,
}

#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct RankTimes {
    /// Compute ops in execution order.
    pub compute: Vec<Slot>,
    /// Sum of compute time.
    pub busy: u64,
    /// Time the rank's last op completed.
    pub finish: u64,
}

/// The evaluated schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpTimes {
    pub makespan: u64,
    pub ranks: Vec<RankTimes>,
}

impl OpTimes {
    /// Idle compute time of rank `r` within the makespan.
    pub fn idle(&self, r: usize) -> u64 {
        self.ranks
            .get(r)
            .map_or(0, |rt| self.makespan.saturating_sub(rt.busy))
    }

    /// Total idle time over all ranks and the total rank-time (`pp · makespan`): the bubble
    /// fraction is their ratio, kept as two integers so tests can compare exactly.
    pub fn bubble(&self) -> (u64, u64) {
        let idle = (0..self.ranks.len()).map(|r| self.idle(r)).sum();
        (idle, self.makespan.saturating_mul(self.ranks.len() as u64))
    }

    pub fn bubble_fraction(&self) -> Ratio {
        let (idle, total) = self.bubble();
        Ratio::of(idle, total)
    }
}

/// The ranks could not all finish: each blocked rank with the index and op it waits at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deadlock {
    pub blocked: Vec<(u32, usize, Op)>,
}

impl fmt::Display for Deadlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "schedule deadlocks:")?;
        for (r, i, op) in &self.blocked {
            write!(f, " pp{r} at op {i} ({op:?});")?;
        }
        Ok(())
    }
}

struct RankState {
    pc: usize,
    time: u64,
    /// A blocking call whose transfers were posted but have not all completed.
    call_posted: bool,
    /// Post time of every transfer, per port, indexed by sequence number.
    posted: [Vec<u64>; 4],
    times: RankTimes,
    /// The microbatches whose weight gradient the rank runs as an op of its own (their
    /// backward is B only).
    splits: std::collections::HashSet<Micro>,
}

/// Runs the IR. `Err` when some rank can never proceed.
pub fn evaluate(ir: &ScheduleIr, cost: OpCost, semantics: Semantics) -> Result<OpTimes, Deadlock> {
    let pp = ir.shape.pp;
    let mut states: Vec<RankState> = ir
        .ranks()
        .iter()
        .map(|ops| RankState {
            pc: 0,
            time: 0,
            call_posted: false,
            posted: Default::default(),
            times: RankTimes::default(),
            splits: ops
                .iter()
                .filter_map(|op| match op {
                    Op::Weight(m) => Some(*m),
                    _ => None,
                })
                .collect(),
        })
        .collect();
    loop {
        let mut progress = false;
        let mut done = true;
        for r in 0..states.len() {
            while advance(ir, &mut states, r, pp, cost, semantics) {
                progress = true;
            }
            done &= states[r].pc >= ir.ranks()[r].len();
        }
        if done {
            break;
        }
        if !progress {
            let blocked = states
                .iter()
                .enumerate()
                .filter_map(|(r, s)| {
                    let op = ir.ranks()[r].get(s.pc)?;
                    Some((r as u32, s.pc, *op))
                })
                .collect();
            return Err(Deadlock { blocked });
        }
    }
    let ranks: Vec<RankTimes> = states
        .into_iter()
        .map(|mut s| {
            s.times.finish = s.time;
            s.times
        })
        .collect();
    let makespan = ranks.iter().map(|rt| rt.finish).max().unwrap_or(0);
    Ok(OpTimes { makespan, ranks })
}

/// The makespan with zero communication cost (dataflow semantics), in ticks of `cost`.
pub fn makespan(ir: &ScheduleIr, cost: OpCost) -> Result<u64, Deadlock> {
    evaluate(ir, cost, Semantics::Eager).map(|t| t.makespan)
}

/// Completion time of transfer `seq` on `port` of rank `r`, if it is determined yet.
fn completion(
    states: &[RankState],
    r: usize,
    port: Port,
    seq: u32,
    pp: u32,
    semantics: Semantics,
) -> Option<u64> {
    let own = *states[r].posted[port.index()].get(seq as usize)?;
    if port.is_send() && semantics == Semantics::Eager {
        return Some(own);
    }
    let peer = port.peer(r as u32, pp) as usize;
    let theirs = *states.get(peer)?.posted[port.peer_port().index()].get(seq as usize)?;
    Some(own.max(theirs))
}

/// Executes the op at rank `r`'s program counter if it can; returns whether it did.
fn advance(
    ir: &ScheduleIr,
    states: &mut [RankState],
    r: usize,
    pp: u32,
    cost: OpCost,
    semantics: Semantics,
) -> bool {
    let ops = &ir.ranks()[r];
    let Some(&op) = ops.get(states[r].pc) else {
        return false;
    };
    match op {
        Op::Forward(_) | Op::Backward(_) | Op::Weight(_) => {
            let d = match op {
                Op::Forward(_) => cost.forward,
                // A split backward: W ≈ B (Qi et al., ICLR 2024, §2), so the weight gradient
                // takes half of the backward and the input gradient the rest.
                Op::Weight(_) => cost.backward / 2,
                Op::Backward(m) if states[r].splits.contains(&m) => {
                    cost.backward - cost.backward / 2
                }
                _ => cost.backward,
            };
            let s = &mut states[r];
            let start = s.time;
            s.time = start.saturating_add(d);
            s.times.busy = s.times.busy.saturating_add(d);
            s.times.compute.push(Slot {
                start,
                end: s.time,
                op,
            });
            s.pc += 1;
        }
        Op::Call(call) => {
            let n = usize::from(call.xfers);
            let pc = states[r].pc;
            let xfers = ops.get(pc + 1..pc + 1 + n).unwrap_or(&[]);
            if !states[r].call_posted {
                let s = &mut states[r];
                for x in xfers {
                    if let Op::Xfer(x) = x {
                        s.posted[x.port.index()].push(s.time);
                    }
                }
                s.call_posted = true;
            }
            if call.blocking {
                let mut end = states[r].time;
                for x in xfers {
                    if let Op::Xfer(x) = x {
                        match completion(states, r, x.port, x.seq, pp, semantics) {
                            Some(t) => end = end.max(t),
                            None => return false,
                        }
                    }
                }
                states[r].time = end;
            }
            let s = &mut states[r];
            s.call_posted = false;
            s.pc += 1 + n;
        }
        Op::Wait { port, seq } => {
            let Some(t) = completion(states, r, port, seq, pp, semantics) else {
                return false;
            };
            let s = &mut states[r];
            s.time = s.time.max(t);
            s.pc += 1;
        }
        // A stray transfer outside a call cannot occur in a built IR; post it like a call of one.
        Op::Xfer(x) => {
            let s = &mut states[r];
            s.posted[x.port.index()].push(s.time);
            s.pc += 1;
        }
        // The streams of a rank are serialised here: overlapping them is the engine's work.
        Op::Stream(_)
        | Op::DisableGradSync
        | Op::EnableGradSync
        | Op::GradSync { .. }
        | Op::ParamSync { .. }
        | Op::FinalizeGrads
        | Op::EmbeddingGradAllReduce
        | Op::CopyGradAllReduce
        | Op::OptimizerStep => states[r].pc += 1,
    }
    true
}
