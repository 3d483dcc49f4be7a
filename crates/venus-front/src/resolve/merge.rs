//! Inheritance: `model m : base < items >` → the merged item list of `m`.
//!
//! Rule: every item of the base, then the block's items on top. A key written in the child
//! replaces all of the base's items with that key (in place of the first); a `dim` whose NAME
//! is inherited replaces that dim in place, a new NAME is appended. Items repeated within one
//! block are all kept, so that `ty` reports E0102 on them. Chains are followed with a loop;
//! a cycle is E0105 with a label on every link.

use std::collections::HashMap;
use std::sync::Arc;

use super::{DefId, Resolver};
use venus_diag::diag::{FileId, Loc};
use venus_syntax::syntax::ast::{self, DefKind, ValueKind};

/// An item and the file that wrote it (a base's items live in the base's file).
#[derive(Clone, Debug, PartialEq)]
pub struct MergedItem {
    pub file: FileId,
    pub item: ast::Item,
    /// The definition (or inline block) whose block wrote the item.
    pub origin: Origin,
}

/// Where an item was written: a top-level definition, or an inline block at a location.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Origin {
    Def(DefId),
    Inline(Loc),
}

impl MergedItem {
    pub fn loc(&self) -> Loc {
        Loc::new(self.file, self.item.span)
    }
}

/// A definition's items after inheritance.
#[derive(Clone, Debug, PartialEq)]
pub struct MergedDef {
    pub kind: DefKind,
    /// `None` for unnamed and inline blocks.
    pub name: Option<String>,
    /// The name, the keyword of an unnamed definition, or the inline block.
    pub loc: Loc,
    pub items: Vec<MergedItem>,
    /// Written inline as a scenario or cluster argument.
    pub inline: bool,
}

impl MergedDef {
    /// An inline block (`plan < pp 4 ... >` as a scenario argument): no name, no base.
    pub fn inline(kind: DefKind, file: FileId, block: &ast::Block) -> MergedDef {
        let origin = Origin::Inline(Loc::new(file, block.span));
        MergedDef {
            kind,
            name: None,
            loc: Loc::new(file, block.span),
            items: block
                .items
                .iter()
                .map(|item| MergedItem {
                    file,
                    item: item.clone(),
                    origin,
                })
                .collect(),
            inline: true,
        }
    }

    /// How messages name the definition: "model `llama`", "inline plan", "cluster".
    pub fn describe(&self) -> String {
        match &self.name {
            Some(n) => format!("{} `{n}`", self.kind.keyword()),
            None if self.inline => format!("inline {}", self.kind.keyword()),
            None => format!("unnamed {}", self.kind.keyword()),
        }
    }
}

/// The NAME of a `dim` item, when written as a name.
fn dim_name(item: &ast::Item) -> Option<&str> {
    match item.args.first().map(|v| &v.kind) {
        Some(ValueKind::Name(n)) if item.key.text == "dim" => Some(n),
        _ => None,
    }
}

/// What replaces an item: the same key (and the same NAME, for `dim`).
type ReplaceKey<'b> = (&'b str, Option<&'b str>);

fn replace_key(item: &ast::Item) -> ReplaceKey<'_> {
    (item.key.text.as_str(), dim_name(item))
}

/// One block's items to merge: the file and origin of each item, and the item.
type Group<'b> = Vec<(FileId, Origin, &'b ast::Item)>;

/// Merges the blocks of a chain, root base first, in one pass: linear in the total number of
/// items however long the chain and the blocks.
fn merge_blocks(blocks: &[(FileId, Origin, &ast::Block)]) -> Vec<MergedItem> {
    let groups: Vec<Group<'_>> = blocks
        .iter()
        .map(|&(file, origin, block)| block.items.iter().map(|i| (file, origin, i)).collect())
        .collect();
    merge_groups(&groups)
}

/// Merges groups of items, each group on top of the previous ones (see the module rule).
fn merge_groups<'b>(groups: &[Group<'b>]) -> Vec<MergedItem> {
    let mut out: Vec<Option<MergedItem>> = Vec::new();
    // Positions in `out` of the items a later block would replace, by key.
    let mut replaceable: HashMap<ReplaceKey<'b>, Vec<usize>> = HashMap::new();
    for group in groups {
        // Items of this block become replaceable only by later blocks: a key repeated within
        // this block is kept twice, for E0102.
        let mut written: Vec<(ReplaceKey<'b>, usize)> = Vec::new();
        for &(file, origin, item) in group {
            let key = replace_key(item);
            let new = Some(MergedItem {
                file,
                item: item.clone(),
                origin,
            });
            // A `dim` without a NAME replaces nothing.
            let unnamed_dim = item.key.text == "dim" && key.1.is_none();
            match replaceable.remove(&key).filter(|_| !unnamed_dim) {
                Some(positions) => {
                    // A key written twice in the base is replaced as a whole, in place of
                    // the first.
                    let mut new = new;
                    for &p in &positions {
                        if let Some(slot) = out.get_mut(p) {
                            *slot = new.take();
                        }
                    }
                    if let Some(&first) = positions.first() {
                        written.push((key, first));
                    }
                }
                None => {
                    written.push((key, out.len()));
                    out.push(new);
                }
            }
        }
        for (key, p) in written {
            replaceable.entry(key).or_default().push(p);
        }
    }
    out.into_iter().flatten().collect()
}

impl Resolver<'_> {
    /// An inline block of `kind` written in `file` (a scenario's `plan < ... >`, a cluster's
    /// `gpu < ... >`). `cluster dgx_h100 < nodes 4 >` inherits `dgx_h100`, merged like
    /// `: dgx_h100`; `None` when that base is unknown or broken (reported).
    pub fn inline(&self, kind: DefKind, file: FileId, block: &ast::Block) -> Option<MergedDef> {
        let mut def = MergedDef::inline(kind, file, block);
        let Some(base) = &block.base else {
            return Some(def);
        };
        let id = self.lookup(Loc::new(file, base.span), kind, &base.text)?;
        let parent = self.merged(id)?;
        let inherited: Group<'_> = parent
            .items
            .iter()
            .map(|m| (m.file, m.origin, &m.item))
            .collect();
        let own: Group<'_> = def
            .items
            .iter()
            .map(|m| (m.file, m.origin, &m.item))
            .collect();
        let items = merge_groups(&[inherited, own]);
        def.items = items;
        Some(def)
    }

    /// The items of `id` after inheritance, or `None` when its base chain is broken (unknown
    /// base, cycle: reported once here). Cached per definition.
    pub fn merged(&self, id: DefId) -> Option<Arc<MergedDef>> {
        if let Some(m) = self.merged.borrow().get(&id) {
            return m.clone();
        }
        let result = self.merge_chain(id).map(Arc::new);
        self.merged.borrow_mut().insert(id, result.clone());
        result
    }

    fn merge_chain(&self, id: DefId) -> Option<MergedDef> {
        let def = self.def(id)?;
        let mut chain = vec![id];
        let mut in_chain = std::collections::HashSet::from([id]);
        let mut cur = id;
        loop {
            let d = self.def(cur)?;
            let Some(base) = &d.base else { break };
            let next = self.lookup_base(cur, d, base)?;
            if !in_chain.insert(next) {
                let pos = chain.iter().position(|&c| c == next).unwrap_or(0);
                self.report_cycle(&chain[pos..]);
                return None;
            }
            chain.push(next);
            cur = next;
        }
        let mut blocks = Vec::with_capacity(chain.len());
        for &d in chain.iter().rev() {
            blocks.push((d.file, Origin::Def(d), &self.def(d)?.body));
        }
        let items = merge_blocks(&blocks);
        let entry = self.entry(id)?;
        Some(MergedDef {
            kind: def.kind,
            name: entry.name.clone(),
            loc: entry.name_loc,
            items,
            inline: false,
        })
    }

    /// E0105 for the cycle `links[0] : links[1] : ... : links[0]`, started at the smallest
    /// definition so every member of the cycle reports the same diagnostic.
    pub(super) fn report_cycle(&self, links: &[DefId]) {
        let start = links
            .iter()
            .enumerate()
            .min_by_key(|(_, d)| **d)
            .map_or(0, |(i, _)| i);
        let ordered: Vec<DefId> = links[start..]
            .iter()
            .chain(&links[..start])
            .copied()
            .collect();
        let name = |d: DefId| {
            self.entry(d)
                .and_then(|e| e.name.clone())
                .unwrap_or_else(|| "?".into())
        };
        let base_loc = |d: DefId| {
            self.def(d)
                .and_then(|def| def.base.as_ref())
                .map(|b| Loc::new(d.file, b.span))
        };
        let Some(first) = ordered.first().copied() else {
            return;
        };
        let Some(primary) = base_loc(first) else {
            return;
        };
        let kind = self.def(first).map_or("definition", |d| d.kind.keyword());
        let next = |i: usize| ordered[(i + 1) % ordered.len()];
        let rest = ordered
            .iter()
            .enumerate()
            .skip(1)
            .map(|(i, &link)| (base_loc(link), name(link), name(next(i))))
            .collect();
        self.report(
            super::problem::ResolveProblem::InheritanceCycle {
                kind,
                first: name(first),
                base: name(next(0)),
                primary,
                rest,
            }
            .diagnostic(),
        );
    }
}
