//! Physical units as newtypes. Values cross module borders only in these types, never as a
//! bare `f64`, so a bandwidth cannot be passed where a time is expected.

use std::fmt;
use std::ops::{Add, Div, Mul};

/// A byte count. Integral: memory and message sizes are whole bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Bytes(pub u64);

/// A duration in seconds.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Default)]
pub struct Seconds(pub f64);

/// Bytes per second.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Default)]
pub struct BytesPerSec(pub f64);

/// Floating-point operations per second.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Default)]
pub struct FlopsPerSec(pub f64);

/// A count of floating-point operations.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Default)]
pub struct Flops(pub f64);

/// A dimensionless ratio: a fraction in [0, 1] (a share, a bubble) or a factor over a mean
/// (a load factor of at least 1).
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Default)]
pub struct Ratio(pub f64);

impl Ratio {
    pub const ZERO: Ratio = Ratio(0.0);
    pub const ONE: Ratio = Ratio(1.0);

    /// `part / whole`, zero when `whole` is zero (an empty whole has no share to speak of).
    pub fn of(part: u64, whole: u64) -> Ratio {
        if whole == 0 {
            Ratio::ZERO
        } else {
            Ratio(part as f64 / whole as f64)
        }
    }

    /// The same ratio in percent, for reports.
    pub fn percent(self) -> f64 {
        self.0 * 100.0
    }
}

/// HBM bytes per element of a tensor: a dtype's width (2 for bf16), or what one operation
/// reads or writes per element it touches, scales included (1 + 1/32 for an MXFP8 copy), so
/// fractional.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Default)]
pub struct BytesPerElement(pub f64);

impl BytesPerElement {
    pub const ZERO: BytesPerElement = BytesPerElement(0.0);

    /// The bytes of `elements` elements (fractional: the analytic cost model counts bytes in
    /// `f64`).
    pub fn of(self, elements: f64) -> f64 {
        elements * self.0
    }
}

impl Add for BytesPerElement {
    type Output = BytesPerElement;
    fn add(self, o: BytesPerElement) -> BytesPerElement {
        BytesPerElement(self.0 + o.0)
    }
}

/// A rate of events per day (interruptions of a job, failures of a component kind).
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Default)]
pub struct PerDay(pub f64);

impl PerDay {
    const SECONDS_PER_DAY: f64 = 86_400.0;

    /// The rate of `count` components that each fail once per `mtbf` on average.
    pub fn of_mtbf(count: u64, mtbf: Seconds) -> PerDay {
        PerDay(count as f64 * PerDay::SECONDS_PER_DAY / mtbf.0)
    }

    /// The same rate per second.
    pub fn per_second(self) -> f64 {
        self.0 / PerDay::SECONDS_PER_DAY
    }
}

impl Add for PerDay {
    type Output = PerDay;
    fn add(self, o: PerDay) -> PerDay {
        PerDay(self.0 + o.0)
    }
}

impl Bytes {
    pub const KIB: u64 = 1 << 10;
    pub const MIB: u64 = 1 << 20;
    pub const GIB: u64 = 1 << 30;
    pub fn as_f64(self) -> f64 {
        self.0 as f64
    }
    pub fn gib(self) -> f64 {
        self.0 as f64 / Bytes::GIB as f64
    }
}

impl Add for Bytes {
    type Output = Bytes;
    fn add(self, o: Bytes) -> Bytes {
        Bytes(self.0.saturating_add(o.0))
    }
}

impl Seconds {
    pub fn ms(self) -> f64 {
        self.0 * 1e3
    }
    pub fn from_ns(ns: f64) -> Seconds {
        Seconds(ns * 1e-9)
    }
}

impl Add for Seconds {
    type Output = Seconds;
    fn add(self, o: Seconds) -> Seconds {
        Seconds(self.0 + o.0)
    }
}

/// Time to move `bytes` at `bw`.
impl Div<BytesPerSec> for Bytes {
    type Output = Seconds;
    fn div(self, bw: BytesPerSec) -> Seconds {
        Seconds(self.0 as f64 / bw.0)
    }
}

/// Time to compute `flops` at `rate`.
impl Div<FlopsPerSec> for Flops {
    type Output = Seconds;
    fn div(self, rate: FlopsPerSec) -> Seconds {
        Seconds(self.0 / rate.0)
    }
}

impl Mul<Ratio> for FlopsPerSec {
    type Output = FlopsPerSec;
    fn mul(self, r: Ratio) -> FlopsPerSec {
        FlopsPerSec(self.0 * r.0)
    }
}

impl Mul<Ratio> for BytesPerSec {
    type Output = BytesPerSec;
    fn mul(self, r: Ratio) -> BytesPerSec {
        BytesPerSec(self.0 * r.0)
    }
}

impl fmt::Display for Bytes {
    /// Binary units, as GPU memory is quoted: `80 GiB`, `1.50 MiB`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0 as f64;
        let (v, u) = if b >= (1u64 << 40) as f64 {
            (b / (1u64 << 40) as f64, "TiB")
        } else if b >= Bytes::GIB as f64 {
            (b / Bytes::GIB as f64, "GiB")
        } else if b >= Bytes::MIB as f64 {
            (b / Bytes::MIB as f64, "MiB")
        } else if b >= Bytes::KIB as f64 {
            (b / Bytes::KIB as f64, "KiB")
        } else {
            return write!(f, "{} B", self.0);
        };
        write!(f, "{v:.2} {u}")
    }
}

impl fmt::Display for Seconds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.0;
        if s >= 1.0 {
            write!(f, "{s:.3} s")
        } else if s >= 1e-3 {
            write!(f, "{:.3} ms", s * 1e3)
        } else if s >= 1e-6 {
            write!(f, "{:.3} us", s * 1e6)
        } else {
            write!(f, "{:.0} ns", s * 1e9)
        }
    }
}

impl fmt::Display for BytesPerSec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}GB/s", trim(self.0 / 1e9))
    }
}

impl fmt::Display for FlopsPerSec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}TFLOP/s", trim(self.0 / 1e12))
    }
}

impl fmt::Display for Ratio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}%", trim(self.0 * 100.0))
    }
}

/// Up to three decimals, trailing zeros removed: `450`, `0.125`, `55.5`.
pub fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// Simulated time or duration in picoseconds. Integral so that the engine is exact and
/// deterministic; `u64` picoseconds cover 213 days.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Ps(pub u64);

impl Ps {
    pub const ZERO: Ps = Ps(0);
    pub const PER_SECOND: u64 = 1_000_000_000_000;

    /// Nearest picosecond; negative or NaN become zero, huge values saturate.
    pub fn from_seconds(s: Seconds) -> Ps {
        let ps = (s.0 * Ps::PER_SECOND as f64).round();
        if ps.is_nan() || ps <= 0.0 {
            Ps(0)
        } else if ps >= u64::MAX as f64 {
            Ps(u64::MAX)
        } else {
            Ps(ps as u64)
        }
    }

    pub fn from_ns(ns: u64) -> Ps {
        Ps(ns.saturating_mul(1000))
    }

    pub fn from_us(us: u64) -> Ps {
        Ps(us.saturating_mul(1_000_000))
    }

    pub fn seconds(self) -> Seconds {
        Seconds(self.0 as f64 / Ps::PER_SECOND as f64)
    }

    pub fn saturating_add(self, o: Ps) -> Ps {
        Ps(self.0.saturating_add(o.0))
    }

    /// The time from `o` to `self`, zero when `o` is later.
    pub fn saturating_sub(self, o: Ps) -> Ps {
        Ps(self.0.saturating_sub(o.0))
    }
}

impl fmt::Display for Ps {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.seconds().fmt(f)
    }
}

/// A price of GPU time: US dollars per GPU-hour (a cloud's on-demand or reserved rate).
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Default)]
pub struct DollarsPerGpuHour(pub f64);

/// An amount of US dollars.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Default)]
pub struct Dollars(pub f64);

impl DollarsPerGpuHour {
    /// What `gpu_hours` of GPU time cost at this price.
    pub fn cost(self, gpu_hours: f64) -> Dollars {
        Dollars(self.0 * gpu_hours)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_of_counts_is_zero_for_an_empty_whole() {
        assert_eq!(Ratio::of(3, 12), Ratio(0.25));
        assert_eq!(Ratio::of(5, 0), Ratio::ZERO);
        assert_eq!(Ratio(0.125).percent(), 12.5);
        assert_eq!(Ratio(0.125).to_string(), "12.5%");
    }

    #[test]
    fn bytes_per_element_add_and_scale_by_an_element_count() {
        let cast = BytesPerElement(2.0) + BytesPerElement(1.0 + 1.0 / 32.0);
        assert_eq!(cast, BytesPerElement(3.03125));
        assert_eq!(cast.of(32.0), 97.0);
        assert_eq!(BytesPerElement::ZERO.of(1e9), 0.0);
    }

    #[test]
    fn per_day_adds_and_converts_from_a_mean_time_between_failures() {
        let gpus = PerDay::of_mtbf(8, Seconds(86_400.0 * 4.0));
        assert_eq!(gpus, PerDay(2.0));
        assert_eq!((gpus + PerDay(1.0)).0, 3.0);
        assert_eq!(PerDay(86_400.0).per_second(), 1.0);
    }
}
