//! One argument value against its [`ArgType`]: units, ranges and enum words.
//!
//! Input: an AST value and the type the key's signature gives it. Output: a typed [`Arg`], or
//! the typed [`ValueProblem`] (E0003, E0201, E0202, E0204) that says why not; W0002 rides along
//! a bandwidth in bits. The problems become diagnostics in `ty::problem`, the one place.
//! All arithmetic on user numbers is checked: nothing here can overflow or panic.

// The typed problem is the error value on purpose: it is the cold path, reported as is.
#![allow(clippy::result_large_err)]

use crate::ty::problem::{Divisor, Positive, UnitHelp, UnitHint, ValueProblem, WordHint};
use crate::ty::units::{trim, Bytes, BytesPerSec, DollarsPerGpuHour, FlopsPerSec, Ratio, Seconds};
use venus_diag::diag::{suggest, Loc};
use venus_syntax::syntax::ast::{Number, Value, ValueKind};
use venus_syntax::syntax::schema::{self, ArgType};

/// A typed argument.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    Count(u64),
    Bytes(Bytes),
    Bandwidth(BytesPerSec),
    Time(Seconds),
    Rate(FlopsPerSec),
    Ratio(Ratio),
    /// A new name (`dim NAME`).
    Name(String),
    /// An enum word, canonical spelling from the schema.
    Word(&'static str),
    /// A quoted string, escapes resolved; `raw` is whether it was written without escapes, so
    /// that an offset into it is an offset into the source (from one past the opening quote).
    Str {
        text: String,
        raw: bool,
    },
    /// US dollars per GPU-hour (`price 2.5`).
    Price(DollarsPerGpuHour),
}

/// What a unit measures and its factor to the base unit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Unit {
    /// Bytes per unit (exact integer).
    Bytes(u64),
    /// Bytes per second per unit; `bits` when written as a bit rate.
    Bandwidth { factor: f64, bits: bool },
    /// Seconds per unit.
    Time(f64),
    /// FLOP/s per unit.
    Rate(f64),
    /// `%`.
    Percent,
}

impl Unit {
    pub fn dimension(self) -> &'static str {
        match self {
            Unit::Bytes(_) => "bytes",
            Unit::Bandwidth { .. } => "bandwidth",
            Unit::Time(_) => "time",
            Unit::Rate(_) => "compute rate",
            Unit::Percent => "ratio",
        }
    }
}

/// Every unit of the language, case-sensitive (`Gb/s` is bits, `GB/s` bytes).
pub const UNITS: &[(&str, Unit)] = &[
    ("B", Unit::Bytes(1)),
    ("KB", Unit::Bytes(1_000)),
    ("MB", Unit::Bytes(1_000_000)),
    ("GB", Unit::Bytes(1_000_000_000)),
    ("TB", Unit::Bytes(1_000_000_000_000)),
    ("KiB", Unit::Bytes(1 << 10)),
    ("MiB", Unit::Bytes(1 << 20)),
    ("GiB", Unit::Bytes(1 << 30)),
    ("TiB", Unit::Bytes(1 << 40)),
    (
        "B/s",
        Unit::Bandwidth {
            factor: 1.0,
            bits: false,
        },
    ),
    (
        "KB/s",
        Unit::Bandwidth {
            factor: 1e3,
            bits: false,
        },
    ),
    (
        "MB/s",
        Unit::Bandwidth {
            factor: 1e6,
            bits: false,
        },
    ),
    (
        "GB/s",
        Unit::Bandwidth {
            factor: 1e9,
            bits: false,
        },
    ),
    (
        "TB/s",
        Unit::Bandwidth {
            factor: 1e12,
            bits: false,
        },
    ),
    (
        "b/s",
        Unit::Bandwidth {
            factor: 1.0 / 8.0,
            bits: true,
        },
    ),
    (
        "Kb/s",
        Unit::Bandwidth {
            factor: 1e3 / 8.0,
            bits: true,
        },
    ),
    (
        "Mb/s",
        Unit::Bandwidth {
            factor: 1e6 / 8.0,
            bits: true,
        },
    ),
    (
        "Gb/s",
        Unit::Bandwidth {
            factor: 1e9 / 8.0,
            bits: true,
        },
    ),
    (
        "Tb/s",
        Unit::Bandwidth {
            factor: 1e12 / 8.0,
            bits: true,
        },
    ),
    ("ns", Unit::Time(1e-9)),
    ("us", Unit::Time(1e-6)),
    ("ms", Unit::Time(1e-3)),
    ("s", Unit::Time(1.0)),
    ("min", Unit::Time(60.0)),
    ("h", Unit::Time(3600.0)),
    ("FLOP/s", Unit::Rate(1.0)),
    ("GFLOP/s", Unit::Rate(1e9)),
    ("TFLOP/s", Unit::Rate(1e12)),
    ("PFLOP/s", Unit::Rate(1e15)),
    ("%", Unit::Percent),
];

pub fn unit(text: &str) -> Option<Unit> {
    UNITS.iter().find(|(u, _)| *u == text).map(|&(_, u)| u)
}

/// Context for typing one value: where it is and how it is written.
pub struct ValueCtx<'t> {
    pub loc: Loc,
    /// The source text of the value (for messages).
    pub text: &'t str,
    /// The key it belongs to.
    pub key: &'t str,
    /// The key takes a count of 0 (`mtp_layers 0` turns off what a base model has).
    pub allow_zero: bool,
}

/// The result of typing a value: the typed argument, plus a warning (W0002) to report.
pub type Typed = Result<(Arg, Option<ValueProblem>), Rejected>;

/// Why a value has no type.
#[derive(Clone, Debug, PartialEq)]
pub enum Rejected {
    /// A problem to report.
    Problem(ValueProblem),
    /// Its unit is one the lexer does not know, which the lexer reported (E0003, with its own
    /// suggestion): the value is rejected with nothing more to say.
    UnitReportedByLexer,
}

impl Rejected {
    /// The problem to report, if there is one.
    pub fn problem(self) -> Option<ValueProblem> {
        match self {
            Rejected::Problem(p) => Some(p),
            Rejected::UnitReportedByLexer => None,
        }
    }
}

impl From<ValueProblem> for Rejected {
    fn from(p: ValueProblem) -> Rejected {
        Rejected::Problem(p)
    }
}

/// How a value that does not fit is described: `bytes 450GB`, `name \`fast\``.
pub fn describe_found(value: &Value, text: &str) -> String {
    match &value.kind {
        ValueKind::Number(_) => format!("number {text}"),
        ValueKind::Quantity { unit: u, .. } => match unit(u) {
            Some(u) => format!("{} {text}", u.dimension()),
            None => format!("quantity {text}"),
        },
        ValueKind::Name(n) => format!("name `{n}`"),
        ValueKind::Str(_) => format!("string {text}"),
        ValueKind::List(_) => "a list".into(),
        ValueKind::Block(_) => "a `< ... >` block".into(),
    }
}

fn wrong_kind(ty: ArgType, value: &Value, cx: &ValueCtx) -> ValueProblem {
    if let ValueKind::List(_) = value.kind {
        return ValueProblem::List {
            key: cx.key.to_string(),
            loc: cx.loc,
        };
    }
    ValueProblem::WrongKind {
        key: cx.key.to_string(),
        expected: ty.describe(),
        takes: short(ty),
        found: describe_found(value, cx.text),
        loc: cx.loc,
        hint: missing_unit(ty, value),
    }
}

/// The unit a value of the wrong kind lacks (or has too much of), when one would fix it.
fn missing_unit(ty: ArgType, value: &Value) -> Option<UnitHint> {
    match (&value.kind, ty) {
        (ValueKind::Number(n), ArgType::Bytes) => Some(UnitHint::Bytes { number: num(*n) }),
        (ValueKind::Number(n), ArgType::Bandwidth) => Some(UnitHint::Bandwidth { number: num(*n) }),
        (ValueKind::Number(n), ArgType::Time) => Some(UnitHint::Time { number: num(*n) }),
        (ValueKind::Number(n), ArgType::Rate) => Some(UnitHint::Rate { number: num(*n) }),
        (
            ValueKind::Quantity {
                number, unit: u, ..
            },
            ArgType::Bandwidth,
        ) if unit(u).is_some_and(|u| matches!(u, Unit::Bytes(_))) => Some(UnitHint::PerSecond {
            number: num(*number),
            unit: u.clone(),
        }),
        (ValueKind::Quantity { number, .. }, ArgType::Count) => Some(UnitHint::NoUnit {
            number: num(*number),
        }),
        _ => None,
    }
}

/// A short noun for labels: "a count", "a bandwidth".
fn short(ty: ArgType) -> String {
    match ty {
        ArgType::Count => "a count".into(),
        ArgType::Bytes => "bytes".into(),
        ArgType::Bandwidth => "a bandwidth".into(),
        ArgType::Time => "a time".into(),
        ArgType::Rate | ArgType::RateOrTflops => "a compute rate".into(),
        ArgType::Ratio => "a ratio".into(),
        ArgType::Ref(k) => format!("a {}", k.keyword()),
        ArgType::NewName => "a name".into(),
        ArgType::Enum(w) => format!("a {}", enum_noun(w)),
        ArgType::Nested(b) => format!("a `{}` block", b.name()),
        ArgType::Str => "a quoted string".into(),
        ArgType::LargeCount => "a count".into(),
        ArgType::Price => "a price".into(),
    }
}

/// What the words of an enum are called in messages.
pub fn enum_noun(words: &[&str]) -> &'static str {
    if words == schema::TOPOLOGIES {
        "topology"
    } else if words == schema::SCHEDULES {
        "schedule"
    } else if words == schema::RECOMPUTE {
        "recompute mode"
    } else if words == schema::PRECISIONS {
        "precision"
    } else if words == schema::ATTENTIONS {
        "attention kernel"
    } else if words == schema::FLAG_WORDS {
        "flag word"
    } else {
        "word"
    }
}

/// A number as the user would write it.
pub fn num(n: Number) -> String {
    match n {
        Number::Int(i) => i.to_string(),
        Number::IntTooLarge => "?".into(),
        Number::Float(f) => trim_float(f),
    }
}

fn trim_float(f: f64) -> String {
    let s = format!("{f}");
    if s.len() > 12 {
        format!("{f:e}")
    } else {
        s
    }
}

/// Keys whose ratio divides a time: `mfu` (a node takes FLOPs / (peak × mfu)) and a `dim`'s
/// efficiency (a transfer takes bytes / (bandwidth × efficiency)). At 0 every such node lasts
/// forever, which the engine could only report as a time overflow.
fn divisor(key: &str) -> Option<Divisor> {
    match key {
        "mfu" => Some(Divisor::Mfu),
        "dim" => Some(Divisor::DimEfficiency),
        _ => None,
    }
}

fn nonzero_divisor(v: f64, cx: &ValueCtx) -> Result<(), ValueProblem> {
    match divisor(cx.key) {
        Some(divisor) if v <= 0.0 => Err(ValueProblem::LastsForever {
            text: cx.text.to_string(),
            divisor,
            loc: cx.loc,
        }),
        _ => Ok(()),
    }
}

/// A bandwidth in its natural byte unit: `50GB/s`, `12.5MB/s`.
pub fn bandwidth_text(bandwidth: BytesPerSec) -> String {
    let bps = bandwidth.0;
    let (v, u) = if bps >= 1e12 {
        (bps / 1e12, "TB/s")
    } else if bps >= 1e9 {
        (bps / 1e9, "GB/s")
    } else if bps >= 1e6 {
        (bps / 1e6, "MB/s")
    } else if bps >= 1e3 {
        (bps / 1e3, "KB/s")
    } else {
        (bps, "B/s")
    };
    format!("{}{u}", trim(v))
}

/// Types `value` as `ty` (not `Ref`, `Nested` or flags: the block checker handles those).
pub fn typed(ty: ArgType, value: &Value, cx: &ValueCtx) -> Typed {
    match (&value.kind, ty) {
        (ValueKind::Number(n), ArgType::Count | ArgType::LargeCount) => {
            Ok((Arg::Count(count(*n, cx)?), None))
        }
        (ValueKind::Quantity { number, unit, .. }, ArgType::LargeCount) => {
            Ok((Arg::Count(large_count(*number, unit, cx)?), None))
        }
        (ValueKind::Number(n), ArgType::Price) => Ok((Arg::Price(price(n.as_f64(), cx)?), None)),
        (
            ValueKind::Quantity {
                number,
                unit: u,
                unit_span,
            },
            _,
        ) if !matches!(
            ty,
            ArgType::Count | ArgType::NewName | ArgType::Enum(_) | ArgType::Price
        ) =>
        {
            let Some(found) = unit(u) else {
                if !lexer_knows_unit(u) {
                    return Err(Rejected::UnitReportedByLexer);
                }
                let all: Vec<&'static str> = UNITS
                    .iter()
                    .filter(|(_, unit)| takes(ty, *unit))
                    .map(|(u, _)| *u)
                    .collect();
                // A count suffix written for a unit (`80T`) is most likely the unit it begins.
                let help = match all
                    .iter()
                    .copied()
                    .find(|a| a.starts_with(u.as_str()))
                    .or_else(|| suggest(u, all.iter().copied()))
                    .or_else(|| all.iter().copied().find(|a| a.eq_ignore_ascii_case(u)))
                {
                    Some(s) => UnitHelp::DidYouMean {
                        number: num(*number),
                        unit: s,
                    },
                    None => UnitHelp::Expected(ty.describe()),
                };
                return Err(ValueProblem::UnknownUnit {
                    unit: u.clone(),
                    loc: Loc::new(cx.loc.file, *unit_span),
                    help,
                }
                .into());
            };
            quantity(ty, *number, found, value, cx)
        }
        (ValueKind::Number(n), ArgType::RateOrTflops) => {
            let v = positive(n.as_f64(), cx, Positive::Quantity)?;
            Ok((Arg::Rate(FlopsPerSec(checked_mul(v, 1e12, cx)?)), None))
        }
        (ValueKind::Number(n), ArgType::Ratio) => {
            let v = n.as_f64();
            if !(0.0..=1.0).contains(&v) {
                return Err(ValueProblem::RatioOutOfRange {
                    text: cx.text.to_string(),
                    percent: v > 1.0 && v <= 100.0,
                    loc: cx.loc,
                }
                .into());
            }
            nonzero_divisor(v, cx)?;
            Ok((Arg::Ratio(Ratio(v)), None))
        }
        (ValueKind::Name(n), ArgType::NewName) => Ok((Arg::Name(n.clone()), None)),
        (ValueKind::Str(text), ArgType::Str) => {
            // `cx.text` is the literal as written, quotes included.
            let raw = cx.text.len() == text.len() + 2;
            Ok((
                Arg::Str {
                    text: text.clone(),
                    raw,
                },
                None,
            ))
        }
        (ValueKind::Name(n), ArgType::Enum(words)) => enum_word(n, words, cx)
            .map(|w| (Arg::Word(w), None))
            .map_err(Rejected::from),
        _ => Err(wrong_kind(ty, value, cx).into()),
    }
}

/// Whether a value of type `ty` may be written in `unit` (what a suggestion may propose).
fn takes(ty: ArgType, unit: Unit) -> bool {
    matches!(
        (ty, unit),
        (ArgType::Bytes, Unit::Bytes(_))
            | (ArgType::Bandwidth, Unit::Bandwidth { .. })
            | (ArgType::Time, Unit::Time(_))
            | (ArgType::Rate | ArgType::RateOrTflops, Unit::Rate(_))
            | (ArgType::Ratio, Unit::Percent)
    )
}

/// Whether the lexer takes `unit` as a unit: one it does not is E0003 from the lexer already.
fn lexer_knows_unit(unit: &str) -> bool {
    venus_syntax::syntax::UNITS.contains(&unit)
        || venus_syntax::syntax::COUNT_SUFFIXES.contains(&unit)
}

/// An enum word, or E0204 with the closest word.
pub fn enum_word(
    word: &str,
    words: &'static [&'static str],
    cx: &ValueCtx,
) -> Result<&'static str, ValueProblem> {
    if let Some(w) = words.iter().find(|w| **w == word) {
        return Ok(w);
    }
    let hint = match suggest(word, words.iter().copied())
        .or_else(|| words.iter().copied().find(|w| w.eq_ignore_ascii_case(word)))
    {
        Some(s) => WordHint::DidYouMean(s),
        None => WordHint::OneOf,
    };
    Err(unknown_word(word, words, hint, cx))
}

/// E0204 for `word`, which is not one of `words`.
pub fn unknown_word(
    word: &str,
    words: &'static [&'static str],
    hint: WordHint,
    cx: &ValueCtx,
) -> ValueProblem {
    ValueProblem::UnknownWord {
        word: word.to_string(),
        noun: enum_noun(words),
        words,
        hint,
        loc: cx.loc,
    }
}

fn count(n: Number, cx: &ValueCtx) -> Result<u64, ValueProblem> {
    let text = || cx.text.to_string();
    match n {
        Number::Int(0) if cx.allow_zero => Ok(0),
        Number::Float(f) if cx.allow_zero && f == 0.0 => Ok(0),
        Number::Int(0) => Err(ValueProblem::CountZero {
            key: cx.key.to_string(),
            loc: cx.loc,
        }),
        Number::Int(i) => Ok(i),
        Number::IntTooLarge => Err(ValueProblem::CountTooLarge {
            text: text(),
            loc: cx.loc,
        }),
        Number::Float(f) if f.fract() == 0.0 && (1.0..9.007_199_254_740_992e15).contains(&f) => {
            Ok(f as u64)
        }
        Number::Float(f) => Err(ValueProblem::NotWhole {
            text: text(),
            key: cx.key.to_string(),
            near: (f.is_finite() && f > 1.0 && f < 9e15)
                .then(|| (f.floor() as u64, f.ceil() as u64)),
            loc: cx.loc,
        }),
    }
}

/// The suffixes of a [`ArgType::LargeCount`] (`syntax::COUNT_SUFFIXES`) and their factors
/// (short scale, as model cards write token budgets: `15T` is 15 × 10^12).
pub const COUNT_SUFFIXES: &[(&str, u64)] = &[
    ("K", 1_000),
    ("M", 1_000_000),
    ("B", 1_000_000_000),
    ("T", 1_000_000_000_000),
];

/// `15T`, `2.5B`: a whole count after the suffix's factor, or E0202 / E0003 with the fix.
fn large_count(number: Number, suffix: &str, cx: &ValueCtx) -> Result<u64, ValueProblem> {
    let Some(&(_, factor)) = COUNT_SUFFIXES.iter().find(|(s, _)| *s == suffix) else {
        return Err(ValueProblem::NotCountSuffix {
            suffix: suffix.to_string(),
            number: num(number),
            loc: cx.loc,
        });
    };
    let v = number.as_f64() * factor as f64;
    if !(1.0..9.007_199_254_740_992e15).contains(&v) || v.fract() != 0.0 {
        return Err(ValueProblem::LargeCountOutOfRange {
            text: cx.text.to_string(),
            key: cx.key.to_string(),
            rounded: (1.0..9e15).contains(&v).then(|| v.round() as u64),
            loc: cx.loc,
        });
    }
    Ok(v as u64)
}

/// A price of GPU time: finite and above zero.
fn price(v: f64, cx: &ValueCtx) -> Result<DollarsPerGpuHour, ValueProblem> {
    positive(v, cx, Positive::Price).map(DollarsPerGpuHour)
}

fn positive(v: f64, cx: &ValueCtx, of: Positive) -> Result<f64, ValueProblem> {
    if !v.is_finite() {
        return Err(ValueProblem::TooLarge {
            text: cx.text.to_string(),
            of,
            loc: cx.loc,
        });
    }
    if v <= 0.0 {
        return Err(ValueProblem::NotPositive {
            text: cx.text.to_string(),
            of,
            loc: cx.loc,
        });
    }
    Ok(v)
}

fn checked_mul(v: f64, factor: f64, cx: &ValueCtx) -> Result<f64, ValueProblem> {
    let r = v * factor;
    if r.is_finite() {
        Ok(r)
    } else {
        Err(too_large(cx))
    }
}

fn too_large(cx: &ValueCtx) -> ValueProblem {
    ValueProblem::TooLarge {
        text: cx.text.to_string(),
        of: Positive::Quantity,
        loc: cx.loc,
    }
}

fn not_positive(cx: &ValueCtx) -> ValueProblem {
    ValueProblem::NotPositive {
        text: cx.text.to_string(),
        of: Positive::Quantity,
        loc: cx.loc,
    }
}

fn quantity(ty: ArgType, number: Number, found: Unit, value: &Value, cx: &ValueCtx) -> Typed {
    match (ty, found) {
        (ArgType::Bytes, Unit::Bytes(factor)) => Ok((Arg::Bytes(bytes(number, factor, cx)?), None)),
        (ArgType::Bandwidth, Unit::Bandwidth { factor, bits }) => {
            let v = positive(number.as_f64(), cx, Positive::Quantity)?;
            let bps = checked_mul(v, factor, cx)?;
            let warning = bits.then(|| bit_rate(bps, number, value, cx));
            Ok((Arg::Bandwidth(BytesPerSec(bps)), warning))
        }
        (ArgType::Time, Unit::Time(factor)) => {
            let v = number.as_f64();
            if !v.is_finite() {
                return Err(too_large(cx).into());
            }
            if v < 0.0 {
                return Err(ValueProblem::NegativeTime {
                    text: cx.text.to_string(),
                    loc: cx.loc,
                }
                .into());
            }
            Ok((Arg::Time(Seconds(checked_mul(v, factor, cx)?)), None))
        }
        (ArgType::Rate | ArgType::RateOrTflops, Unit::Rate(factor)) => {
            let v = positive(number.as_f64(), cx, Positive::Quantity)?;
            Ok((Arg::Rate(FlopsPerSec(checked_mul(v, factor, cx)?)), None))
        }
        (ArgType::Ratio, Unit::Percent) => {
            let v = number.as_f64();
            if !(0.0..=100.0).contains(&v) {
                return Err(ValueProblem::PercentOutOfRange {
                    text: cx.text.to_string(),
                    loc: cx.loc,
                }
                .into());
            }
            nonzero_divisor(v, cx)?;
            Ok((Arg::Ratio(Ratio(v / 100.0)), None))
        }
        _ => Err(wrong_kind(ty, value, cx).into()),
    }
}

/// A byte count: whole, above zero and below 16 EiB after the unit's factor.
fn bytes(number: Number, factor: u64, cx: &ValueCtx) -> Result<Bytes, ValueProblem> {
    let too_large = || ValueProblem::BytesTooLarge {
        text: cx.text.to_string(),
        loc: cx.loc,
    };
    let bytes = match number {
        Number::Int(i) => i.checked_mul(factor).ok_or_else(too_large)?,
        Number::IntTooLarge => return Err(too_large()),
        Number::Float(f) => {
            let v = f * factor as f64;
            if !v.is_finite() || v >= u64::MAX as f64 {
                return Err(too_large());
            }
            if v < 0.0 {
                return Err(not_positive(cx));
            }
            v.round() as u64
        }
    };
    if bytes == 0 {
        return Err(not_positive(cx));
    }
    Ok(Bytes(bytes))
}

/// W0002 for a bandwidth written in bits: the same rate in bytes, and the byte unit spelt with
/// the same letters in case bytes were meant.
fn bit_rate(bps: f64, number: Number, value: &Value, cx: &ValueCtx) -> ValueProblem {
    let typo = match value.kind {
        ValueKind::Quantity { ref unit, .. } => {
            format!("{}{}", num(number), unit.replacen('b', "B", 1))
        }
        _ => String::new(),
    };
    ValueProblem::BitRate {
        text: cx.text.to_string(),
        bytes: bandwidth_text(BytesPerSec(bps)),
        typo,
        loc: cx.loc,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_count_suffixes_with_a_factor_are_the_ones_the_lexer_accepts() {
        let names: Vec<&str> = super::COUNT_SUFFIXES.iter().map(|(s, _)| *s).collect();
        assert_eq!(names, venus_syntax::syntax::COUNT_SUFFIXES);
        let factors: Vec<u64> = super::COUNT_SUFFIXES.iter().map(|(_, f)| *f).collect();
        assert_eq!(
            factors,
            [1_000, 1_000_000, 1_000_000_000, 1_000_000_000_000]
        );
    }
}
