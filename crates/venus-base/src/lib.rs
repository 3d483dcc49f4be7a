//! venus-base: the bottom of the venusc crate graph.
//!
//! Input: nothing (this crate depends on no other crate of the workspace). Output: [`base`],
//! the unit newtypes (bytes, seconds, bandwidths, rates, ratios, picoseconds), the plain enums
//! every stage shares, integer helpers (`gcd`, `lcm`, `divisors`), the compressed-sparse-row
//! builder and the one seeded generator.
//! Invariant: nothing here knows a span, a source name or a diagnostic.

pub mod base;
