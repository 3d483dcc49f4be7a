//! Why a simulation has no result: an inconsistent trace (found before running) or a deadlock
//! (found when the event queue drains with unfinished nodes).

use crate::trace::{CollectiveKind, GroupId, NodeId, RankId};
use std::fmt;

/// A node named for a human: its rank, id and rendered label.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpRef {
    pub rank: RankId,
    pub node: NodeId,
    pub label: String,
}

impl fmt::Display for OpRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rank {} `{}` (node {})",
            self.rank, self.label, self.node.0
        )
    }
}

/// Why a posted operation never finished.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StuckReason {
    /// A send with no receive of the same (src, dst, tag) left to pair with.
    NoMatchingRecv { peer: RankId, tag: u32 },
    /// A receive with no send of the same (src, dst, tag) left to pair with.
    NoMatchingSend { peer: RankId, tag: u32 },
    /// Paired, but the peer never reached its side.
    PeerNeverPosts { peer: OpRef },
    /// Some members of the group never reached this collective.
    CollectiveIncomplete {
        kind: CollectiveKind,
        group: GroupId,
        missing: Vec<RankId>,
    },
}

/// One operation the deadlock left waiting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stuck {
    pub op: OpRef,
    pub reason: StuckReason,
}

#[derive(Clone, Debug, PartialEq)]
pub enum EngineError {
    /// The trace's world and the network's differ.
    WorldMismatch { trace: u32, network: u32 },
    /// More than `u32::MAX - 2` nodes or streams in total.
    TooLarge,
    /// An operation names a rank that is not simulated and has no simulated rank in its class.
    Unsimulated { op: OpRef, rank: RankId },
    /// A P2P names a non-simulated peer of another class: symmetry cannot resolve it.
    Asymmetric { op: OpRef, peer: RankId },
    /// A paired send and receive disagree on the size.
    P2pSizeMismatch {
        send: OpRef,
        recv: OpRef,
        send_bytes: u64,
        recv_bytes: u64,
    },
    /// Members' k-th collectives on one group disagree on kind or size.
    CollectiveMismatch {
        first: OpRef,
        other: OpRef,
        group: GroupId,
    },
    /// Simulated time passed `u64::MAX` ps (2^64 ps, about 213.5 days): `op` is the node whose
    /// end (or transfer) would come after it, when known.
    TimeOverflow { op: Option<OpRef> },
    /// The event queue drained with `unfinished` nodes left.
    Deadlock {
        stuck: Vec<Stuck>,
        cycle: Vec<OpRef>,
        unfinished: u64,
        total: u64,
    },
}

impl fmt::Display for StuckReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StuckReason::NoMatchingRecv { peer, tag } => {
                write!(f, "no matching recv on rank {peer} with tag {tag}")
            }
            StuckReason::NoMatchingSend { peer, tag } => {
                write!(f, "no matching send from rank {peer} with tag {tag}")
            }
            StuckReason::PeerNeverPosts { peer } => {
                write!(f, "waits for {peer}, which never starts")
            }
            StuckReason::CollectiveIncomplete {
                kind,
                group,
                missing,
            } => {
                let list: Vec<String> = missing.iter().map(RankId::to_string).collect();
                write!(
                    f,
                    "{} on group {} waits for ranks {} that never reach it",
                    kind.word(),
                    group.0,
                    list.join(", ")
                )
            }
        }
    }
}

/// 2^64 ps in whole days (2^64 / 10^12 / 86,400 = 213.5): the engine's time range.
pub const OVERFLOW_DAYS: u64 = u64::MAX / 1_000_000_000_000 / 86_400;

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EngineError::WorldMismatch { trace, network } => {
                write!(f, "trace has {trace} ranks but the network has {network}")
            }
            EngineError::TooLarge => write!(f, "trace too large for 32-bit ids"),
            EngineError::Unsimulated { op, rank } => {
                write!(f, "{op} needs rank {rank}, which is neither simulated nor in a simulated class")
            }
            EngineError::Asymmetric { op, peer } => write!(
                f,
                "{op} talks to rank {peer}, which is not simulated and not in its class: symmetry cannot resolve it"
            ),
            EngineError::P2pSizeMismatch { send, recv, send_bytes, recv_bytes } => write!(
                f,
                "{send} sends {send_bytes} bytes but its matching {recv} expects {recv_bytes}"
            ),
            EngineError::CollectiveMismatch { first, other, group } => {
                write!(f, "collective mismatch on group {}: {first} and {other} differ in kind or size", group.0)
            }
            EngineError::TimeOverflow { op } => {
                write!(f, "simulated time exceeds {OVERFLOW_DAYS} days (2^64 ps, the engine's range)")?;
                if let Some(op) = op {
                    write!(f, ": {op} would end after it")?;
                }
                Ok(())
            }
            EngineError::Deadlock { stuck, cycle, unfinished, total } => {
                write!(f, "deadlock: {unfinished} of {total} nodes never finish")?;
                for s in stuck {
                    write!(f, "\n  {}: {}", s.op, s.reason)?;
                }
                if let Some(first) = cycle.first() {
                    write!(f, "\n  dependency cycle on rank {}: ", first.rank)?;
                    for op in cycle {
                        write!(f, "`{}` → ", op.label)?;
                    }
                    write!(f, "`{}`", first.label)?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for EngineError {}
