//! Hover: Markdown for the word under the cursor.
//!
//! Input: a [`Session`], a file and a byte offset. Output: a [`Hover`]. On a key: its signature
//! and doc, the value written here in base units, and what it overrides from the definition's
//! bases. On a definition's name or a reference to it: the resolved items with where each
//! comes from, and for plans and scenarios the derived values of the validated scenarios.
//!
//! Invariants: reads only the database and [`Session::check`]; the reads of
//! [`venus_plan::plan::Scenario`] are all in [`scenario_uses`] and [`scenario_summary`], so a
//! change of the scenario's shape touches those two functions only.

use std::fmt::Write as _;

use super::cursor::{self, Role};
use super::{contains, source_of, Hover};
use venus_diag::diag::{FileId, Loc, Span};
use venus_front::db::{Definition, Program};
use venus_front::ty::value::{typed, Arg, ValueCtx};
use venus_front::Session;
use venus_syntax::syntax::ast::{self, DefKind, TopItem, ValueKind};
use venus_syntax::syntax::schema::{self, ArgType, BlockKind, KeySig};

/// The hover at byte `offset` of `file`.
pub fn hover(session: &Session, file: FileId, offset: u32) -> Option<Hover> {
    let h = Hovering { session };
    let program = session.db().program(file);
    let (markdown, span) = if let Some(r) = program.reference_at(file, offset) {
        let def = program.definition_named_at(r.target)?;
        (h.describe_definition(&program, def), r.at.span)
    } else if let Some(def) = program
        .definitions
        .iter()
        .find(|d| d.name_loc.file == file && contains(d.name_loc.span, offset))
    {
        (h.describe_definition(&program, def), def.name_loc.span)
    } else {
        let text = session.db().file_text(file);
        let cursor = cursor::cursor(&text, offset as usize);
        let word = cursor.word?;
        let Role::Key(block) = cursor.role else {
            return None;
        };
        let key = text.get(word.range())?;
        (h.describe_key(&program, file, block, key, word)?, word)
    };
    Some(Hover { markdown, span })
}

struct Hovering<'s> {
    session: &'s Session,
}

impl Hovering<'_> {
    /// Hover on a key: its signature and doc, the value written here in base units, and what
    /// it overrides from the definition's bases.
    fn describe_key(
        &self,
        program: &Program,
        file: FileId,
        block: BlockKind,
        key: &str,
        key_span: Span,
    ) -> Option<String> {
        let sig = schema::lookup(block, key)?;
        let mut out = format!(
            "`{}` — {} key\n\n{}\n\nsignature: {}",
            sig.key,
            block.name(),
            sig.doc,
            venus_front::ty::check::signature(sig)
        );
        let parsed = self.session.db().parsed(file)?;
        let text = self.session.db().file_text(file);
        if let Some(item) = find_item(&parsed.ast, key_span) {
            let values = describe_values(sig, item, file, &text);
            if !values.is_empty() {
                let _ = write!(out, "\n\nvalue: {values}");
            }
        }
        // What the enclosing definition inherits for this key.
        let def = program.definitions.iter().find(|d| {
            d.loc.file == file && contains(d.loc.span, key_span.start) && kind_block(d) == block
        });
        if let Some(def) = def {
            let chain = self.chain(program, def);
            for (base, ast_def) in chain.iter().skip(1) {
                if let Some(item) = ast_def.body.items.iter().find(|i| i.key.text == key) {
                    let btext = self.session.db().file_text(base.loc.file);
                    let values = describe_values(sig, item, base.loc.file, &btext);
                    let _ = write!(
                        out,
                        "\n\noverrides `{} {}` from {} ({})",
                        key,
                        values,
                        def_title(base),
                        self.place(base.name_loc)
                    );
                    break;
                }
            }
        }
        Some(out)
    }

    /// `file:line` of a location, as diagnostics show it.
    fn place(&self, loc: Loc) -> String {
        let text = self.session.db().file_text(loc.file);
        let line = line_of(&text, loc.span.start as usize);
        format!("{}:{line}", self.session.db().file_name(loc.file))
    }

    /// A definition and its bases, nearest first, with their trees (cycles cut).
    fn chain(&self, program: &Program, def: &Definition) -> Vec<(Definition, ast::Def)> {
        let mut out: Vec<(Definition, ast::Def)> = Vec::new();
        let mut next = Some(def.clone());
        while let Some(d) = next.take() {
            if out.iter().any(|(seen, _)| seen.loc == d.loc) || out.len() > 64 {
                break;
            }
            let Some(ast_def) = self.ast_def(&d) else {
                break;
            };
            next = ast_def.base.as_ref().and_then(|b| {
                let r = program.reference_at(d.loc.file, b.span.start)?;
                program.definition_named_at(r.target).cloned()
            });
            out.push((d, ast_def));
        }
        out
    }

    fn ast_def(&self, def: &Definition) -> Option<ast::Def> {
        let parsed = self.session.db().parsed(def.loc.file)?;
        parsed.ast.items.iter().find_map(|item| match item {
            TopItem::Def(d) if d.span.start == def.loc.span.start => Some(d.clone()),
            _ => None,
        })
    }

    /// Hover on a definition's name or a reference to it: the resolved items with where each
    /// comes from, and for plans and scenarios the derived values.
    fn describe_definition(&self, program: &Program, def: &Definition) -> String {
        let mut out = format!("**{}**", def_title(def));
        let chain = self.chain(program, def);
        if let Some((_, d)) = chain.first() {
            if let Some(base) = &d.base {
                let _ = write!(out, " : `{}`", base.text);
            }
        }
        let _ = write!(out, " — {}", self.place(def.name_loc));
        // Resolved items: the definition's own, then each base's not yet written.
        let block = kind_block(def);
        let mut seen: Vec<String> = Vec::new();
        let mut lines: Vec<String> = Vec::new();
        for (i, (owner, d)) in chain.iter().enumerate() {
            let text = self.session.db().file_text(owner.loc.file);
            for item in &d.body.items {
                let id = item_identity(item);
                if seen.contains(&id) {
                    continue;
                }
                seen.push(id);
                let written = match schema::lookup(block, &item.key.text) {
                    Some(sig) => {
                        let v = describe_values(sig, item, owner.loc.file, &text);
                        if v.is_empty() {
                            item.key.text.clone()
                        } else {
                            format!("{} {v}", item.key.text)
                        }
                    }
                    None => source_of(&text, item.span).to_string(),
                };
                let from = if i == 0 {
                    String::new()
                } else {
                    format!(" — from {}", def_title(owner))
                };
                lines.push(format!("- `{written}`{from}"));
            }
        }
        if !lines.is_empty() {
            let _ = write!(out, "\n\n{}", lines.join("\n"));
        }
        if matches!(def.kind, DefKind::Plan | DefKind::Scenario) && !def.stdlib {
            out.push_str(&self.derived(def));
        }
        if def.kind == DefKind::Model {
            out.push_str(&model_parameters(program, def));
        }
        out
    }

    /// The derived values of every validated scenario that uses this plan (or is this
    /// scenario).
    fn derived(&self, def: &Definition) -> String {
        let checked = self.session.check(def.loc.file);
        let mut out = String::new();
        let mut found = false;
        for (s, at) in checked.scenarios.iter().zip(&checked.provenance) {
            if !scenario_uses(at, def) {
                continue;
            }
            found = true;
            out.push_str(&scenario_summary(s));
        }
        if !found {
            out.push_str("\n\nno derived values: no scenario using it passed validation");
        }
        out
    }
}

/// A model's parameter counts, from a scenario of the program that uses it (a model typed on
/// its own has no scenario to read it from: then nothing).
fn model_parameters(program: &Program, def: &Definition) -> String {
    let used = program.scenarios.iter().find(|s| {
        s.model.loc == def.name_loc || (def.stdlib && def.name.as_deref() == Some(&s.model.name))
    });
    let Some(s) = used else {
        return String::new();
    };
    let m = venus_front::validate::model_spec(&s.model);
    let vocab = venus_plan::plan::derive::padded_vocab(m.vocab, 1);
    let p = venus_plan::plan::derive::param_counts(&m, vocab, 1);
    let short = venus_base::base::math::short_count;
    let mut out = format!(
        "\n\nparameters: {} total, {} active per token",
        short(p.total),
        short(p.active)
    );
    if p.mtp > 0 {
        let _ = write!(out, ", {} in MTP modules", short(p.mtp));
    }
    out
}

fn kind_block(def: &Definition) -> BlockKind {
    BlockKind::Def(def.kind)
}

/// The 1-based line of a byte offset (lines end at `\n`).
fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()
        .get(..end)
        .unwrap_or_default()
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

fn def_title(def: &Definition) -> String {
    match &def.name {
        Some(n) => format!("{} `{n}`", def.kind.keyword()),
        None => format!("unnamed {}", def.kind.keyword()),
    }
}

/// What makes two items the same for inheritance: the key, and for `dim` its NAME.
fn item_identity(item: &ast::Item) -> String {
    match (item.key.text.as_str(), item.args.first()) {
        (
            "dim",
            Some(ast::Value {
                kind: ValueKind::Name(n),
                ..
            }),
        ) => format!("dim {n}"),
        (key, _) => key.to_string(),
    }
}

/// The item under a key span, anywhere in the file (explicit stack: no recursion).
fn find_item(file: &ast::File, key_span: Span) -> Option<&ast::Item> {
    let mut blocks: Vec<&ast::Block> = file
        .items
        .iter()
        .filter_map(|i| match i {
            TopItem::Def(d) => Some(&d.body),
            TopItem::Use(_) => None,
        })
        .collect();
    while let Some(b) = blocks.pop() {
        for item in &b.items {
            if item.key.span == key_span {
                return Some(item);
            }
            let mut values: Vec<&ast::Value> = item.args.iter().collect();
            while let Some(v) = values.pop() {
                match &v.kind {
                    ValueKind::Block(inner) => blocks.push(inner),
                    ValueKind::List(vs) => values.extend(vs),
                    _ => {}
                }
            }
        }
    }
    None
}

/// An item's arguments as written, each with its value in plain units when it has a unit:
/// `80GiB (85899345920 bytes = 80.00 GiB)`.
fn describe_values(sig: &KeySig, item: &ast::Item, file: FileId, text: &str) -> String {
    let mut parts = Vec::new();
    for (i, v) in item.args.iter().enumerate() {
        let written = source_of(text, v.span);
        let meaning = match (sig.args.get(i), &v.kind) {
            (Some(&ty), ValueKind::Number(_) | ValueKind::Quantity { .. })
                if !matches!(ty, ArgType::Ref(_) | ArgType::Nested(_)) =>
            {
                let cx = ValueCtx {
                    loc: Loc::new(file, v.span),
                    text: written,
                    key: &item.key.text,
                    allow_zero: sig.allow_zero,
                };
                match typed(ty, v, &cx) {
                    Ok((arg, _)) => describe_arg(&arg),
                    Err(_) => None,
                }
            }
            _ => None,
        };
        parts.push(match meaning {
            Some(m) if m != written => format!("{written} ({m})"),
            _ => written.to_string(),
        });
    }
    parts.join(" ")
}

fn describe_arg(arg: &Arg) -> Option<String> {
    Some(match arg {
        Arg::Bytes(b) => format!("{} bytes = {b}", b.0),
        Arg::Bandwidth(b) => format!("{b}, {:.3e} bytes/s", b.0),
        Arg::Time(t) => format!("{t}"),
        Arg::Rate(r) => format!("{r}, {:.4e} FLOP/s", r.0),
        Arg::Ratio(r) => format!("{r}"),
        Arg::Str { text, .. } => match venus_plan::plan::pipeline_layout::parse(text) {
            Ok(p) => {
                let layers: u64 = p.stages.iter().map(|s| s.layers).sum();
                format!("{} virtual stages, {layers} layers", p.stages.len())
            }
            Err(_) => return None,
        },
        Arg::Price(p) => format!("${} per GPU-hour", p.0),
        Arg::Count(_) | Arg::Name(_) | Arg::Word(_) => return None,
    })
}

/// True when the validated scenario written at `at` uses the plan `def` (or is the scenario
/// `def`).
fn scenario_uses(at: &venus_plan::plan::Provenance, def: &Definition) -> bool {
    let root = def.loc.file;
    match def.kind {
        DefKind::Plan => {
            at.plan.file == root
                && (at.plan == def.name_loc || contains(def.loc.span, at.plan.span.start))
        }
        _ => at.scenario.file == root && contains(def.loc.span, at.scenario.span.start),
    }
}

/// The derived values of a validated scenario, as Markdown.
fn scenario_summary(s: &venus_plan::plan::Scenario) -> String {
    let mut out = String::new();
    let gpu = &s.cluster.gpu;
    let _ = write!(
        out,
        "\n\n**scenario `{}`**: world {} = tp {} × pp {} × cp {} × dp {}",
        s.name, s.world, s.tp, s.pp, s.cp, s.dp
    );
    let _ = write!(
        out,
        "\n- microbatches: {} (global_batch {} / (micro_batch {} × dp {}))",
        s.microbatches, s.global_batch, s.micro_batch, s.dp
    );
    if let Some(schedule) = s.schedule {
        let _ = write!(
            out,
            // The schedule's closed form, the figure `venusc schedule` shows and `venusc sim`
            // reports beside its measured bubble (docs/report.md).
            "\n- schedule: {}{}, pipeline bubble {:.1}% (the schedule's closed form)",
            schedule.word(),
            if s.vpp > 1 {
                format!(" (vpp {})", s.vpp)
            } else {
                String::new()
            },
            s.bubble_fraction().percent()
        );
    }
    let _ = write!(out, "\n- layers per stage: {}", s.split.describe());
    let _ = write!(
        out,
        "\n- peak memory per stage (GPU `{}` has {}):",
        gpu.name, gpu.memory
    );
    let cap = gpu.memory.0.max(1) as f64;
    for m in &s.memory {
        let _ = write!(
            out,
            "\n  - stage {}: {} ({:.0}% of GPU memory)",
            m.stage,
            m.peak,
            m.peak.0 as f64 / cap * 100.0
        );
    }
    out
}
