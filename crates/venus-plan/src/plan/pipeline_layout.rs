//! Megatron-LM's `--pipeline-model-parallel-layout`: the string that lists, virtual stage by
//! virtual stage, what each holds (`E` embedding, `t` transformer layer, `m` MTP depth, `L`
//! loss, `|` next stage, `(…)*N` and `x*N` repetition, commas cosmetic).
//!
//! Input: the layout text and the model/plan sizes. Output: the per-chunk layer table
//! ([`LayoutTable`]) or a typed problem with a byte range into the text. Also the layouts
//! venusc proposes ([`balanced`], [`render`]).
//! Invariants: parsing is linear in the text and expansion is bounded ([`MAX_STAGES`] stages,
//! [`MAX_DEPTH`] nested groups), so no text can exhaust memory or time; counts saturate.
// Grammar and rules: megatron/core/transformer/pipeline_parallel_layer_layout.py@d98e8a64
// (`parse_str_to_list`: commas removed, `(…)*n` then `x*n` unrolled, split on `|`;
// `__init__`: stage i is virtual stage i // pp of pipeline rank i % pp;
// `validate_layer_layout`: E first and once, L last and once, t count = num_layers, m count =
// mtp_num_layers, no t after an m, m only in a rank's last virtual stage and all in one).
// Nesting a group in a group is venusc's extension: Megatron's regex unrolls one level only.

use super::derive::LayoutTable;

/// The most virtual stages a layout may expand to (pp is at most 2^20 GPUs).
pub const MAX_STAGES: u64 = 1 << 20;
/// The deepest nesting of `(…)` groups.
pub const MAX_DEPTH: usize = 8;

/// A byte range of the layout text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct At {
    pub start: usize,
    pub len: usize,
}

impl At {
    fn one(start: usize) -> At {
        At { start, len: 1 }
    }
}

/// Why a layout text does not parse (E0322).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyntaxError {
    /// A character that is not `E`, `t`, `m`, `L`, `|`, `(`, `)`, `*`, a digit or `,`.
    BadChar { ch: char, at: At },
    /// `(` without its `)`.
    Unclosed { at: At },
    /// `)` without a `(`.
    Unopened { at: At },
    /// `(…)` not followed by `*N`, or `*` with nothing to repeat.
    NoCount { at: At },
    /// `*` not followed by digits.
    NoDigits { at: At },
    /// `()`.
    EmptyGroup { at: At },
    /// Groups nested deeper than [`MAX_DEPTH`].
    TooDeep { at: At },
    /// The expansion passes [`MAX_STAGES`] virtual stages.
    TooLarge { at: At },
    /// An empty text.
    Empty,
}

/// One symbol's kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sym {
    Embedding,
    Layer,
    Mtp,
    Loss,
}

impl Sym {
    pub fn letter(self) -> char {
        match self {
            Sym::Embedding => 'E',
            Sym::Layer => 't',
            Sym::Mtp => 'm',
            Sym::Loss => 'L',
        }
    }
}

/// A symbol and where it was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placed {
    pub sym: Sym,
    pub at: At,
}

/// What one virtual stage holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Stage {
    pub embedding: u64,
    pub layers: u64,
    pub mtp: u64,
    pub loss: u64,
    pub first: Option<Placed>,
    pub last: Option<Placed>,
    /// A `t` follows an `m` inside the stage; the `t`'s place.
    pub layer_after_mtp: Option<At>,
    /// Where the stage's first `E`, `m` and `L` were written.
    pub embedding_at: Option<At>,
    pub mtp_at: Option<At>,
    pub loss_at: Option<At>,
}

impl Stage {
    fn of(p: Placed) -> Stage {
        let mut s = Stage {
            first: Some(p),
            last: Some(p),
            ..Stage::default()
        };
        match p.sym {
            Sym::Embedding => {
                s.embedding = 1;
                s.embedding_at = Some(p.at);
            }
            Sym::Layer => s.layers = 1,
            Sym::Mtp => {
                s.mtp = 1;
                s.mtp_at = Some(p.at);
            }
            Sym::Loss => {
                s.loss = 1;
                s.loss_at = Some(p.at);
            }
        }
        s
    }

    /// This stage followed by `o` with no boundary between them.
    fn join(self, o: Stage) -> Stage {
        let layer_after_mtp =
            self.layer_after_mtp
                .or(o.layer_after_mtp)
                .or(if self.mtp > 0 && o.layers > 0 {
                    o.first.map(|p| p.at)
                } else {
                    None
                });
        Stage {
            embedding: self.embedding.saturating_add(o.embedding),
            layers: self.layers.saturating_add(o.layers),
            mtp: self.mtp.saturating_add(o.mtp),
            loss: self.loss.saturating_add(o.loss),
            first: self.first.or(o.first),
            last: o.last.or(self.last),
            layer_after_mtp,
            embedding_at: self.embedding_at.or(o.embedding_at),
            mtp_at: self.mtp_at.or(o.mtp_at),
            loss_at: self.loss_at.or(o.loss_at),
        }
    }

    /// The stage repeated `n` times (n ≥ 1) with no boundary.
    fn times(self, n: u64) -> Stage {
        let mut s = self;
        s.embedding = s.embedding.saturating_mul(n);
        s.layers = s.layers.saturating_mul(n);
        s.mtp = s.mtp.saturating_mul(n);
        s.loss = s.loss.saturating_mul(n);
        if n > 1 && self.mtp > 0 && self.layers > 0 && s.layer_after_mtp.is_none() {
            s.layer_after_mtp = self.first.map(|p| p.at);
        }
        s
    }
}

/// A parsed layout: its virtual stages in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parsed {
    pub stages: Vec<Stage>,
}

/// Parses a layout text.
pub fn parse(text: &str) -> Result<Parsed, SyntaxError> {
    if text.trim().is_empty() {
        return Err(SyntaxError::Empty);
    }
    let mut p = Parser {
        bytes: text.as_bytes(),
        text,
        pos: 0,
    };
    let stages = p.seq(0)?;
    if p.pos < p.bytes.len() {
        return Err(SyntaxError::Unopened { at: At::one(p.pos) });
    }
    Ok(Parsed { stages })
}

struct Parser<'t> {
    bytes: &'t [u8],
    text: &'t str,
    pos: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    /// A sequence up to a `)` or the end: at least one (possibly empty) stage.
    fn seq(&mut self, depth: usize) -> Result<Vec<Stage>, SyntaxError> {
        let mut out = vec![Stage::default()];
        while let Some(b) = self.peek() {
            if b == b')' {
                break;
            }
            if b == b',' {
                self.pos += 1;
                continue;
            }
            let start = self.pos;
            let item = self.atom(depth)?;
            let item = self.repeat(item, start)?;
            append(&mut out, item, At::one(start))?;
        }
        Ok(out)
    }

    fn atom(&mut self, depth: usize) -> Result<Vec<Stage>, SyntaxError> {
        let start = self.pos;
        let at = At::one(start);
        let sym = |sym| Ok(vec![Stage::of(Placed { sym, at })]);
        let b = self.bytes[start];
        self.pos += 1;
        match b {
            b'E' => sym(Sym::Embedding),
            b't' => sym(Sym::Layer),
            b'm' => sym(Sym::Mtp),
            b'L' => sym(Sym::Loss),
            b'|' => Ok(vec![Stage::default(), Stage::default()]),
            b'(' => {
                if depth + 1 > MAX_DEPTH {
                    return Err(SyntaxError::TooDeep { at });
                }
                if self.peek() == Some(b')') {
                    return Err(SyntaxError::EmptyGroup {
                        at: At { start, len: 2 },
                    });
                }
                let inner = self.seq(depth + 1)?;
                if self.peek() != Some(b')') {
                    return Err(SyntaxError::Unclosed { at });
                }
                self.pos += 1;
                if self.peek() != Some(b'*') {
                    return Err(SyntaxError::NoCount {
                        at: At {
                            start,
                            len: self.pos - start,
                        },
                    });
                }
                Ok(inner)
            }
            b'*' => Err(SyntaxError::NoCount { at }),
            b')' => Err(SyntaxError::Unopened { at }),
            _ => {
                let ch = self.text[start..].chars().next().unwrap_or('?');
                Err(SyntaxError::BadChar {
                    ch,
                    at: At {
                        start,
                        len: ch.len_utf8(),
                    },
                })
            }
        }
    }

    /// `*N` after an atom, if written.
    fn repeat(&mut self, item: Vec<Stage>, start: usize) -> Result<Vec<Stage>, SyntaxError> {
        if self.peek() != Some(b'*') {
            return Ok(item);
        }
        let star = self.pos;
        self.pos += 1;
        let digits = self.pos;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.pos += 1;
        }
        let at = At {
            start,
            len: self.pos - start,
        };
        if self.pos == digits {
            return Err(SyntaxError::NoDigits { at: At::one(star) });
        }
        let n: u64 = self.text[digits..self.pos]
            .parse()
            .map_err(|_| SyntaxError::TooLarge { at })?;
        repeated(item, n, at)
    }
}

/// `item` written `n` times in a row.
fn repeated(item: Vec<Stage>, n: u64, at: At) -> Result<Vec<Stage>, SyntaxError> {
    if n == 0 {
        return Ok(vec![Stage::default()]);
    }
    if item.len() == 1 {
        return Ok(vec![item[0].times(n)]);
    }
    let boundaries = (item.len() as u64 - 1).saturating_mul(n);
    if boundaries.saturating_add(1) > MAX_STAGES {
        return Err(SyntaxError::TooLarge { at });
    }
    let mut out = item.clone();
    for _ in 1..n {
        append(&mut out, item.clone(), at)?;
    }
    Ok(out)
}

/// Appends `item` to `out`: its first stage continues `out`'s last.
fn append(out: &mut Vec<Stage>, item: Vec<Stage>, at: At) -> Result<(), SyntaxError> {
    if (out.len() + item.len()) as u64 > MAX_STAGES.saturating_add(1) {
        return Err(SyntaxError::TooLarge { at });
    }
    let mut rest = item.into_iter();
    if let (Some(last), Some(first)) = (out.last_mut(), rest.next()) {
        *last = last.join(first);
    }
    out.extend(rest);
    Ok(())
}

/// Why a parsed layout does not fit the model and plan (E0323).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CountError {
    /// L02: the virtual stages are not a multiple of pp.
    Stages { stages: u64, pp: u64 },
    /// L12: the written vpp is not the layout's.
    Vpp { written: u64, layout: u64 },
    /// The `t` count is not the model's layers.
    Layers { layout: u64, model: u64 },
    /// The `m` count is not the model's MTP depths.
    Mtp { layout: u64, model: u64 },
}

/// Why a layout's symbols are in the wrong place (E0324).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlaceError {
    /// The first symbol is not `E` (or there is none); `at` is the first symbol or `E`.
    EmbeddingNotFirst { at: Option<At> },
    /// The last symbol is not `L`.
    LossNotLast { at: Option<At> },
    /// `E` (or `L`) more than once: the second place.
    Twice {
        sym: Sym,
        count: u64,
        at: Option<At>,
    },
    /// A `t` after an `m`.
    LayerAfterMtp { at: Option<At> },
    /// An `m` outside its rank's last virtual stage (or MTP split over several stages).
    MtpPlace { stage: u64, at: Option<At> },
}

/// A layout's problem: its counts or its placement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayoutError {
    Count(CountError),
    Place(PlaceError),
}

/// Checks a parsed layout against the model (`layers`, `mtp` depths) and plan (`pp`, the
/// written vpp) and lays out its layers per `(stage, chunk)`; the detected vpp with it.
pub fn table(
    parsed: &Parsed,
    layers: u64,
    mtp: u64,
    pp: u64,
    vpp_written: Option<u64>,
) -> Result<(u64, LayoutTable), LayoutError> {
    let pp = pp.max(1);
    let n = parsed.stages.len() as u64;
    // pipeline_parallel_layer_layout.py:41-45 (L02)
    if !n.is_multiple_of(pp) {
        return Err(LayoutError::Count(CountError::Stages { stages: n, pp }));
    }
    let vpp = n / pp;
    // transformer_config.py:2276-2283 (L12)
    if let Some(w) = vpp_written.filter(|&w| w != vpp) {
        return Err(LayoutError::Count(CountError::Vpp {
            written: w,
            layout: vpp,
        }));
    }
    check_places(parsed, pp, vpp)?;
    let sum = |f: fn(&Stage) -> u64| {
        parsed
            .stages
            .iter()
            .fold(0u64, |a, s| a.saturating_add(f(s)))
    };
    let t = sum(|s| s.layers);
    if t != layers {
        return Err(LayoutError::Count(CountError::Layers {
            layout: t,
            model: layers,
        }));
    }
    let m = sum(|s| s.mtp);
    if m != mtp {
        return Err(LayoutError::Count(CountError::Mtp {
            layout: m,
            model: mtp,
        }));
    }
    let mtp_stage = parsed
        .stages
        .iter()
        .position(|s| s.mtp > 0)
        .map_or(pp - 1, |i| i as u64 % pp);
    Ok((
        vpp,
        LayoutTable {
            layers: parsed.stages.iter().map(|s| s.layers).collect(),
            mtp_stage,
        },
    ))
}

/// The placement rules of `validate_layer_layout`.
fn check_places(parsed: &Parsed, pp: u64, vpp: u64) -> Result<(), LayoutError> {
    let place = |e| Err(LayoutError::Place(e));
    let st = &parsed.stages;
    let first = st.iter().find_map(|s| s.first);
    let last = st.iter().rev().find_map(|s| s.last);
    let at_of = |sym: Sym| -> Option<At> {
        st.iter().find_map(|s| match sym {
            Sym::Embedding => s.embedding_at,
            Sym::Loss => s.loss_at,
            Sym::Mtp => s.mtp_at,
            Sym::Layer => None,
        })
    };
    if first.map(|p| p.sym) != Some(Sym::Embedding) {
        return place(PlaceError::EmbeddingNotFirst {
            at: at_of(Sym::Embedding).or(first.map(|p| p.at)),
        });
    }
    if last.map(|p| p.sym) != Some(Sym::Loss) {
        return place(PlaceError::LossNotLast {
            at: at_of(Sym::Loss).or(last.map(|p| p.at)),
        });
    }
    for sym in [Sym::Embedding, Sym::Loss] {
        let count = st.iter().fold(0u64, |a, s| {
            a.saturating_add(if sym == Sym::Embedding {
                s.embedding
            } else {
                s.loss
            })
        });
        if count > 1 {
            // The second place, else the one written place (a repetition made the copies).
            let second = st
                .iter()
                .filter_map(|s| {
                    if sym == Sym::Embedding {
                        s.embedding_at
                    } else {
                        s.loss_at
                    }
                })
                .nth(1)
                .or(at_of(sym));
            return place(PlaceError::Twice {
                sym,
                count,
                at: second,
            });
        }
    }
    let first_mtp = st.iter().position(|s| s.mtp > 0);
    if let Some(i) = first_mtp {
        let later_layer = st[i].layer_after_mtp.or_else(|| {
            st[i + 1..]
                .iter()
                .find(|s| s.layers > 0)
                .and_then(|s| s.first.map(|p| p.at))
        });
        if st[i].layer_after_mtp.is_some() || st[i + 1..].iter().any(|s| s.layers > 0) {
            return place(PlaceError::LayerAfterMtp { at: later_layer });
        }
        // Stage i is virtual stage i / pp of rank i % pp; it must be the rank's last, and
        // hold every m (pipeline_parallel_layer_layout.py:120-140).
        let chunk = i as u64 / pp;
        let split = st[i + 1..].iter().find(|s| s.mtp > 0);
        if chunk + 1 != vpp || split.is_some() {
            return place(PlaceError::MtpPlace {
                stage: i as u64,
                at: split.and_then(|s| s.mtp_at).or(st[i].mtp_at),
            });
        }
    }
    Ok(())
}

/// Decoder layers per virtual stage that spread `layers` over `stages` as Megatron-Bridge's
/// DeepSeek-V3 and Kimi-K2 layouts do: every stage but the last holds ⌈layers / stages⌉ (the
/// first with the embedding), the last the rest with the MTP depths and the loss. When the rest
/// would be negative the embedding counts as a layer (61 layers over 32 stages:
/// `Et|(tt|)*30L`). `None` when neither split exists.
// Megatron-Bridge@067f987 src/megatron/bridge/recipes/deepseek/h100/deepseek_v3.py:50-68
// (`_get_deepseek_v3_pipeline_layout`: (4, 4) is E + 4t, 14 × 4t, t + mtp + L) and
// src/megatron/bridge/recipes/kimi/h100/kimi_k2.py (`_get_kimi_k2_pipeline_layout`).
pub fn balanced(layers: u64, stages: u64) -> Option<Vec<u64>> {
    if stages == 0 || stages > MAX_STAGES {
        return None;
    }
    if stages == 1 {
        return Some(vec![layers]);
    }
    (0..=1u64).find_map(|extra| {
        let q = layers.saturating_add(extra).div_ceil(stages);
        let first = q - extra.min(q);
        let middle = q.checked_mul(stages - 2)?;
        let rest = layers.checked_sub(first)?.checked_sub(middle)?;
        let mut v = vec![q; usize::try_from(stages).ok()?];
        v[0] = first;
        v[stages as usize - 1] = rest;
        Some(v)
    })
}

/// The layout text of per-stage layer counts, runs of equal middle stages written once:
/// `[1, 2, …, 2, 0]` with no MTP is `Et|(tt|)*30L`.
pub fn render(counts: &[u64], mtp: u64) -> String {
    let t = |n: u64| match n {
        0 => String::new(),
        1 => "t".to_string(),
        2 => "tt".to_string(),
        n => format!("t*{n}"),
    };
    let tail = format!("{}L", "m".repeat(mtp.min(64) as usize));
    match counts {
        [] => format!("E{tail}"),
        [only] => format!("E{}{tail}", t(*only)),
        [first, middle @ .., last] => {
            let mut out = format!("E{}|", t(*first));
            let mut i = 0;
            while i < middle.len() {
                let run = middle[i..].iter().take_while(|&&c| c == middle[i]).count();
                if run == 1 {
                    out.push_str(&format!("{}|", t(middle[i])));
                } else {
                    out.push_str(&format!("({}|)*{run}", t(middle[i])));
                }
                i += run;
            }
            out.push_str(&t(*last));
            out.push_str(&tail);
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layers_of(text: &str) -> Vec<u64> {
        parse(text)
            .unwrap()
            .stages
            .iter()
            .map(|s| s.layers)
            .collect()
    }

    #[test]
    fn repetition_unrolls_groups_and_single_symbols() {
        // 1 + 30 + 1 = 32 virtual stages; 1 + 60 + 0 = 61 layers.
        let l = layers_of("Et|(tt|)*30L");
        assert_eq!(l.len(), 32);
        assert_eq!((l[0], l[1], l[30], l[31]), (1, 2, 2, 0));
        assert_eq!(l.iter().sum::<u64>(), 61);
        // `t*4` is tttt; commas are cosmetic (Megatron's docstring example).
        let l = layers_of("Ettt|(tt|)*29,m|L");
        assert_eq!((l.len(), l[0], l[29], l[30], l[31]), (32, 3, 2, 0, 0));
        assert_eq!(layers_of("Et*4|(t*4|)*14tmL"), {
            let mut v = vec![4; 16];
            v[15] = 1;
            v
        });
        // A group whose content starts with `|`: (|ab)*2 → |ab|ab.
        assert_eq!(layers_of("Et(|tt)*2|L"), vec![1, 2, 2, 0]);
    }

    #[test]
    fn nested_groups_multiply() {
        // ((tt|)*2 t|)*3 → 3 × (2 stages of 2 and one of 1).
        let l = layers_of("E|((tt|)*2t|)*3L");
        assert_eq!(l, vec![0, 2, 2, 1, 2, 2, 1, 2, 2, 1, 0]);
        assert_eq!(layers_of("E(t*3)*4|L"), vec![12, 0]);
    }

    #[test]
    fn syntax_errors_point_into_the_text() {
        assert_eq!(
            parse("Etx|L"),
            Err(SyntaxError::BadChar {
                ch: 'x',
                at: At { start: 2, len: 1 }
            })
        );
        assert_eq!(
            parse("E(tt|*3L"),
            Err(SyntaxError::Unclosed { at: At::one(1) })
        );
        assert_eq!(parse("Et)L"), Err(SyntaxError::Unopened { at: At::one(2) }));
        assert_eq!(
            parse("E(tt|)L"),
            Err(SyntaxError::NoCount {
                at: At { start: 1, len: 5 }
            })
        );
        assert_eq!(
            parse("Et*|L"),
            Err(SyntaxError::NoDigits { at: At::one(2) })
        );
        assert_eq!(
            parse("E()*2L"),
            Err(SyntaxError::EmptyGroup {
                at: At { start: 1, len: 2 }
            })
        );
        assert!(matches!(
            parse("E(|)*99999999999L"),
            Err(SyntaxError::TooLarge { .. })
        ));
        assert!(matches!(
            parse("((((((((((t))*2)*2)*2)*2)*2)*2)*2)*2)*2"),
            Err(SyntaxError::TooDeep { .. })
        ));
        assert_eq!(parse(""), Err(SyntaxError::Empty));
        // A huge single-stage repetition is only counts: no expansion, saturating.
        let p = parse("Et*99999999999999999999L");
        assert!(matches!(p, Err(SyntaxError::TooLarge { .. })));
        assert_eq!(layers_of("Et*1000000000000L"), vec![1_000_000_000_000]);
    }

    #[test]
    fn dsv3_61_layers_over_pp8_vpp4_lays_out_chunks_in_megatron_order() {
        let p = parse("Et|(tt|)*30L").unwrap();
        let (vpp, t) = table(&p, 61, 0, 8, None).unwrap();
        assert_eq!(vpp, 4);
        // Virtual stage i is chunk i / 8 of rank i % 8: rank 0 chunk 0 holds 1 layer (and E),
        // rank 7 chunk 3 (virtual stage 31) none (and L).
        assert_eq!((t.layers[0], t.layers[8], t.layers[31]), (1, 2, 0));
        assert_eq!(t.mtp_stage, 7);
        // vpp written differently: L12.
        assert_eq!(
            table(&p, 61, 0, 8, Some(2)),
            Err(LayoutError::Count(CountError::Vpp {
                written: 2,
                layout: 4
            }))
        );
        assert_eq!(
            table(&p, 61, 0, 6, None),
            Err(LayoutError::Count(CountError::Stages { stages: 32, pp: 6 }))
        );
        assert_eq!(
            table(&p, 62, 0, 8, None),
            Err(LayoutError::Count(CountError::Layers {
                layout: 61,
                model: 62
            }))
        );
        assert_eq!(
            table(&p, 61, 1, 8, None),
            Err(LayoutError::Count(CountError::Mtp {
                layout: 0,
                model: 1
            }))
        );
    }

    #[test]
    fn placement_rules_name_the_symbol() {
        let check = |text: &str| table(&parse(text).unwrap(), 2, 1, 2, None);
        assert_eq!(
            check("tE|tmL"),
            Err(LayoutError::Place(PlaceError::EmbeddingNotFirst {
                at: Some(At::one(1))
            }))
        );
        assert_eq!(
            check("Et|tLm"),
            Err(LayoutError::Place(PlaceError::LossNotLast {
                at: Some(At::one(4))
            }))
        );
        assert_eq!(
            check("Et|EtmL"),
            Err(LayoutError::Place(PlaceError::Twice {
                sym: Sym::Embedding,
                count: 2,
                at: Some(At::one(3))
            }))
        );
        assert_eq!(
            check("Et|mtL"),
            Err(LayoutError::Place(PlaceError::LayerAfterMtp {
                at: Some(At::one(4))
            }))
        );
        // pp 1, vpp 2: the m in virtual stage 0 is not the rank's last chunk.
        assert_eq!(
            table(&parse("Etm|tL").unwrap(), 2, 1, 1, None),
            Err(LayoutError::Place(PlaceError::LayerAfterMtp {
                at: Some(At::one(4))
            }))
        );
        assert_eq!(
            table(&parse("Ett|m|L").unwrap(), 2, 1, 1, None),
            Err(LayoutError::Place(PlaceError::MtpPlace {
                stage: 1,
                at: Some(At::one(4))
            }))
        );
        // Standalone MTP on rank 2 of 4 (its only, so last, chunk) is Megatron's own.
        let (_, t) = table(&parse("Et|t|m|L").unwrap(), 2, 1, 4, None).unwrap();
        assert_eq!(t.mtp_stage, 2);
    }

    #[test]
    fn balanced_layouts_reproduce_bridge_and_the_fallbacks() {
        // Megatron-Bridge's DeepSeek-V3 (4, 4): E + 4t, 14 × 4t, t + m + L.
        let v = balanced(61, 16).unwrap();
        assert_eq!(render(&v, 1), "Et*4|(t*4|)*14tmL");
        // (8, 1): E + 8t, 6 × 8t, 5t + L.
        assert_eq!(render(&balanced(61, 8).unwrap(), 0), "Et*8|(t*8|)*6t*5L");
        // 32 stages: ⌈61/32⌉ = 2 leaves −1, so the embedding counts as a layer.
        assert_eq!(render(&balanced(61, 32).unwrap(), 0), "Et|(tt|)*30L");
        // 126 layers over 64 stages: 2 each, the loss alone on the last.
        let v = balanced(126, 64).unwrap();
        assert_eq!((v[0], v[1], v[63]), (2, 2, 0));
        assert_eq!(v.iter().sum::<u64>(), 126);
        assert_eq!(balanced(1, 4), None);
        // Every rendered layout parses back to the same counts.
        for (l, n) in [(61, 16), (61, 32), (126, 64), (94, 24), (7, 3), (5, 1)] {
            let v = balanced(l, n).unwrap();
            let text = render(&v, 0);
            assert_eq!(layers_of(&text), v, "{text}");
        }
    }
}
