//! venus-out: what a simulation produces, as data, and the files it reads and writes.
//!
//! Input: a validated scenario, its lowering and the engine's timeline. Output: [`report`]
//! (metrics, text, JSON, HTML, two reports side by side, Perfetto), [`emit`] (VenusSim and
//! Astra-Sim files, Megatron-LM launch scripts in and out, import, trace reader) and
//! [`simulate`] (the one facade: a scenario or a trace directory run end to end).
//! Invariants: everything here takes bytes or data and returns data: no file I/O, no printing.

pub mod emit;
pub mod report;
pub mod simulate;
