//! The base layer: unit newtypes and the plain enums every stage shares.
//!
//! Input: nothing (no dependency on any other module of the crate). Output: [`units`] (bytes,
//! seconds, bandwidths, rates, ratios, picoseconds) and [`kinds`] (schedule, recompute,
//! precision, attention, topology, collective algorithm), [`math`] (gcd, lcm, divisors),
//! [`csr`] (the one compressed-sparse-row table builder), [`rng`] (SplitMix64, the one
//! seeded generator).
//! Invariant: nothing here knows a span, a source name or a diagnostic.

pub mod csr;
pub mod graphs;
pub mod kinds;
pub mod math;
pub mod plan_keys;
pub mod rng;
pub mod units;

pub use csr::Csr;
pub use graphs::{CudaGraphImpl, CudaGraphModules, OffloadModules};
pub use kinds::{
    Attention, CollectiveAlgorithm, Dtype, Fabric, GpuArch, LinkKind, Precision, Recompute,
    ScheduleKind, Topology,
};
pub use kinds::{CpComm, CrossEntropy, FlexBackend, MoeDispatcher, PipelineRuntime};
pub use kinds::{Fp8Format, Fp8Recipe};
pub use kinds::{FromWord, FromWords, RecomputeMethod, RecomputeModules};
pub use kinds::{FsdpImpl, FsdpStrategy, LoraTargets, Task};
pub use units::{
    Bytes, BytesPerElement, BytesPerSec, Dollars, DollarsPerGpuHour, Flops, FlopsPerSec, PerDay,
    Ps, Ratio, Seconds,
};
