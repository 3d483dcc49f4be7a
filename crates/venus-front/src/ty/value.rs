//! One argument value against its [`ArgType`]: units, ranges and enum words.
//!
//! Input: an AST value and the type the key's signature gives it. Output: a typed [`Arg`], or
//! the diagnostic (E0201, E0202, E0204) that says why not; W0002 rides along a bandwidth in
//! bits. All arithmetic on user numbers is checked: nothing here can overflow or panic.

// A diagnostic is the error value on purpose: it is the cold path and is reported as is.
#![allow(clippy::result_large_err)]

use crate::ty::units::{trim, Bytes, BytesPerSec, DollarsPerGpuHour, FlopsPerSec, Ratio, Seconds};
use venus_diag::diag::{suggest, Code, Diagnostic, Loc};
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
pub type Typed = Result<(Arg, Option<Diagnostic>), Diagnostic>;

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

fn wrong_kind(ty: ArgType, value: &Value, cx: &ValueCtx) -> Diagnostic {
    if let ValueKind::List(_) = value.kind {
        return Diagnostic::new(
            Code::E0201,
            "lists are only allowed in `venusc sweep`",
            cx.loc,
            "a list of values",
        )
        .with_help(format!(
            "write one value for `{}` here, or run `venusc sweep` to try each",
            cx.key
        ));
    }
    let d = Diagnostic::new(
        Code::E0201,
        format!(
            "expected {}, found {}",
            ty.describe(),
            describe_found(value, cx.text)
        ),
        cx.loc,
        format!("`{}` takes {}", cx.key, short(ty)),
    );
    match (&value.kind, ty) {
        (ValueKind::Number(n), ArgType::Bytes) => {
            d.with_help(format!("add a unit: `{}GiB` or `{}GB`", num(*n), num(*n)))
        }
        (ValueKind::Number(n), ArgType::Bandwidth) => {
            d.with_help(format!("add a unit: `{}GB/s`", num(*n)))
        }
        (ValueKind::Number(n), ArgType::Time) => d.with_help(format!(
            "add a unit: `{}ns`, `{}us` or `{}ms`",
            num(*n),
            num(*n),
            num(*n)
        )),
        (ValueKind::Number(n), ArgType::Rate) => {
            d.with_help(format!("add a unit: `{}TFLOP/s`", num(*n)))
        }
        (
            ValueKind::Quantity {
                number, unit: u, ..
            },
            ArgType::Bandwidth,
        ) if unit(u).is_some_and(|u| matches!(u, Unit::Bytes(_))) => d.with_help(format!(
            "a bandwidth is per second: `{}{u}/s`",
            num(*number)
        )),
        (ValueKind::Quantity { number, .. }, ArgType::Count) => {
            d.with_help(format!("a count has no unit: `{}`", num(*number)))
        }
        _ => d,
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
const DIVISOR_RATIOS: &[&str] = &["mfu", "dim"];

fn nonzero_divisor(v: f64, cx: &ValueCtx) -> Result<(), Diagnostic> {
    if v > 0.0 || !DIVISOR_RATIOS.contains(&cx.key) {
        return Ok(());
    }
    let what = if cx.key == "mfu" {
        "every compute node would last forever"
    } else {
        "every transfer on this dim would last forever"
    };
    let d = out_of_range(
        cx,
        format!("`{}` is out of range: {what}", cx.text),
        "must be above 0",
    );
    let help = if cx.key == "mfu" {
        "write the measured MFU (such as `mfu 40%`), or remove `mfu` for the simulator's own compute model".to_string()
    } else {
        "write the dim's measured efficiency (such as `80%`), or leave it out for 100%".to_string()
    };
    Err(d.with_help(help))
}

fn out_of_range(cx: &ValueCtx, message: String, label: &str) -> Diagnostic {
    Diagnostic::new(Code::E0202, message, cx.loc, label.to_string())
}

/// A bandwidth in its natural byte unit: `50GB/s`, `12.5MB/s`.
pub fn bandwidth_text(bps: f64) -> String {
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
            count(*n, cx).map(|c| (Arg::Count(c), None))
        }
        (ValueKind::Quantity { number, unit, .. }, ArgType::LargeCount) => {
            large_count(*number, unit, cx).map(|c| (Arg::Count(c), None))
        }
        (ValueKind::Number(n), ArgType::Price) => {
            price(n.as_f64(), cx).map(|p| (Arg::Price(p), None))
        }
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
                let all: Vec<&str> = UNITS.iter().map(|(u, _)| *u).collect();
                let d = Diagnostic::new(
                    Code::E0003,
                    format!("unknown unit `{u}`"),
                    Loc::new(cx.loc.file, *unit_span),
                    "not a unit",
                );
                return Err(
                    match suggest(u, all.iter().copied())
                        .or_else(|| all.iter().copied().find(|a| a.eq_ignore_ascii_case(u)))
                    {
                        Some(s) => d.with_help(format!(
                            "did you mean `{}{s}`? units are case-sensitive",
                            num(*number)
                        )),
                        None => d.with_help(format!("expected {}", ty.describe())),
                    },
                );
            };
            quantity(ty, *number, found, value, cx)
        }
        (ValueKind::Number(n), ArgType::RateOrTflops) => {
            let v = positive(n.as_f64(), cx)?;
            Ok((Arg::Rate(FlopsPerSec(checked_mul(v, 1e12, cx)?)), None))
        }
        (ValueKind::Number(n), ArgType::Ratio) => {
            let v = n.as_f64();
            if !(0.0..=1.0).contains(&v) {
                let d = out_of_range(
                    cx,
                    format!("`{}` is out of range: a ratio is between 0 and 1", cx.text),
                    "outside [0, 1]",
                );
                let help = if v > 1.0 && v <= 100.0 {
                    format!("write `{}%` for a percentage", cx.text)
                } else {
                    "write a fraction such as `0.55` or a percentage such as `55%`".into()
                };
                return Err(d.with_help(help));
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
        (ValueKind::Name(n), ArgType::Enum(words)) => {
            enum_word(n, words, cx).map(|w| (Arg::Word(w), None))
        }
        _ => Err(wrong_kind(ty, value, cx)),
    }
}

/// An enum word, or E0204 with the closest word.
pub fn enum_word(
    word: &str,
    words: &'static [&'static str],
    cx: &ValueCtx,
) -> Result<&'static str, Diagnostic> {
    if let Some(w) = words.iter().find(|w| **w == word) {
        return Ok(w);
    }
    let noun = enum_noun(words);
    let d = Diagnostic::new(
        Code::E0204,
        format!("unknown {noun} `{word}`"),
        cx.loc,
        format!("not a {noun}"),
    );
    let list = words
        .iter()
        .map(|w| format!("`{w}`"))
        .collect::<Vec<_>>()
        .join(", ");
    Err(
        match suggest(word, words.iter().copied())
            .or_else(|| words.iter().copied().find(|w| w.eq_ignore_ascii_case(word)))
        {
            Some(s) => d.with_help(format!("did you mean `{s}`? (one of {list})")),
            None => d.with_help(format!("expected one of {list}")),
        },
    )
}

fn count(n: Number, cx: &ValueCtx) -> Result<u64, Diagnostic> {
    match n {
        Number::Int(0) if cx.allow_zero => Ok(0),
        Number::Float(f) if cx.allow_zero && f == 0.0 => Ok(0),
        Number::Int(0) => Err(out_of_range(
            cx,
            format!("`{}` must be at least 1, found `0`", cx.key),
            "zero",
        )
        .with_help(format!(
            "a count is 1 or more; leave `{}` out to use its default",
            cx.key
        ))),
        Number::Int(i) => Ok(i),
        Number::IntTooLarge => Err(out_of_range(
            cx,
            format!(
                "`{}` is too large for a count (at most {})",
                cx.text,
                u64::MAX
            ),
            "too large",
        )),
        Number::Float(f) if f.fract() == 0.0 && (1.0..9.007_199_254_740_992e15).contains(&f) => {
            Ok(f as u64)
        }
        Number::Float(f) => {
            let d = out_of_range(
                cx,
                format!(
                    "`{}` is not a whole number: `{}` takes a count of 1 or more",
                    cx.text, cx.key
                ),
                "not a whole number",
            );
            if f.is_finite() && f > 1.0 && f < 9e15 {
                Err(d.with_help(format!(
                    "write `{}` or `{}`",
                    f.floor() as u64,
                    f.ceil() as u64
                )))
            } else {
                Err(d)
            }
        }
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
fn large_count(number: Number, suffix: &str, cx: &ValueCtx) -> Result<u64, Diagnostic> {
    let Some(&(_, factor)) = COUNT_SUFFIXES.iter().find(|(s, _)| *s == suffix) else {
        let list = COUNT_SUFFIXES
            .iter()
            .map(|(s, _)| format!("`{}{s}`", num(number)))
            .collect::<Vec<_>>()
            .join(", ");
        return Err(Diagnostic::new(
            Code::E0003,
            format!("`{suffix}` is not a count suffix"),
            cx.loc,
            "not K, M, B or T",
        )
        .with_help(format!("write one of {list}, or the bare count")));
    };
    let v = number.as_f64() * factor as f64;
    if !(1.0..9.007_199_254_740_992e15).contains(&v) || v.fract() != 0.0 {
        let d = out_of_range(
            cx,
            format!(
                "`{}` is not a whole count of 1 to 9e15: `{}` takes a count",
                cx.text, cx.key
            ),
            "out of range",
        );
        return Err(if (1.0..9e15).contains(&v) {
            d.with_help(format!("write `{}`", v.round() as u64))
        } else {
            d.with_help("write a count such as `15T` or `300B`".to_string())
        });
    }
    Ok(v as u64)
}

/// A price of GPU time: finite and above zero.
fn price(v: f64, cx: &ValueCtx) -> Result<DollarsPerGpuHour, Diagnostic> {
    positive(v, cx)
        .map(DollarsPerGpuHour)
        .map_err(|d| d.with_help("write the price of one GPU-hour in dollars, such as `2.5`"))
}

fn positive(v: f64, cx: &ValueCtx) -> Result<f64, Diagnostic> {
    if !v.is_finite() {
        return Err(out_of_range(
            cx,
            format!("`{}` is too large to be meaningful", cx.text),
            "too large",
        ));
    }
    if v <= 0.0 {
        return Err(out_of_range(
            cx,
            format!("`{}` must be greater than zero", cx.text),
            "zero",
        ));
    }
    Ok(v)
}

fn checked_mul(v: f64, factor: f64, cx: &ValueCtx) -> Result<f64, Diagnostic> {
    let r = v * factor;
    if r.is_finite() {
        Ok(r)
    } else {
        Err(out_of_range(
            cx,
            format!("`{}` is too large to be meaningful", cx.text),
            "too large",
        ))
    }
}

fn quantity(ty: ArgType, number: Number, found: Unit, value: &Value, cx: &ValueCtx) -> Typed {
    match (ty, found) {
        (ArgType::Bytes, Unit::Bytes(factor)) => {
            let too_large = || {
                out_of_range(
                    cx,
                    format!("`{}` is too large: bytes must be below 16EiB", cx.text),
                    "too large",
                )
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
                        return Err(out_of_range(
                            cx,
                            format!("`{}` must be greater than zero", cx.text),
                            "zero",
                        ));
                    }
                    v.round() as u64
                }
            };
            if bytes == 0 {
                return Err(out_of_range(
                    cx,
                    format!("`{}` must be greater than zero", cx.text),
                    "zero",
                ));
            }
            Ok((Arg::Bytes(Bytes(bytes)), None))
        }
        (ArgType::Bandwidth, Unit::Bandwidth { factor, bits }) => {
            let v = positive(number.as_f64(), cx)?;
            let bps = checked_mul(v, factor, cx)?;
            let warning = bits.then(|| {
                let bytes = bandwidth_text(bps);
                let typo = match value.kind {
                    ValueKind::Quantity { ref unit, .. } => format!("{}{}", num(number), unit.replacen('b', "B", 1)),
                    _ => String::new(),
                };
                Diagnostic::new(Code::W0002, format!("`{}` is {bytes} (bits, not bytes)", cx.text), cx.loc, "a bit rate")
                    .with_help(format!("write `{bytes}` to state the bandwidth in bytes per second (or `{typo}` if bytes were meant)"))
            });
            Ok((Arg::Bandwidth(BytesPerSec(bps)), warning))
        }
        (ArgType::Time, Unit::Time(factor)) => {
            let v = number.as_f64();
            if !v.is_finite() {
                return Err(out_of_range(
                    cx,
                    format!("`{}` is too large to be meaningful", cx.text),
                    "too large",
                ));
            }
            if v < 0.0 {
                return Err(out_of_range(
                    cx,
                    format!("`{}` must not be negative", cx.text),
                    "negative",
                ));
            }
            Ok((Arg::Time(Seconds(checked_mul(v, factor, cx)?)), None))
        }
        (ArgType::Rate | ArgType::RateOrTflops, Unit::Rate(factor)) => {
            let v = positive(number.as_f64(), cx)?;
            Ok((Arg::Rate(FlopsPerSec(checked_mul(v, factor, cx)?)), None))
        }
        (ArgType::Ratio, Unit::Percent) => {
            let v = number.as_f64();
            if !(0.0..=100.0).contains(&v) {
                return Err(out_of_range(
                    cx,
                    format!(
                        "`{}` is out of range: a ratio is between 0% and 100%",
                        cx.text
                    ),
                    "outside [0%, 100%]",
                ));
            }
            nonzero_divisor(v, cx)?;
            Ok((Arg::Ratio(Ratio(v / 100.0)), None))
        }
        _ => Err(wrong_kind(ty, value, cx)),
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
