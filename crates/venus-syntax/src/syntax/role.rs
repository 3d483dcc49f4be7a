//! The token-role map: where the parser put every token of a file (block kind, item, slot),
//! and the one rule for where an item ends ([`continues_item`]).
//!
//! Input: recorded by [`super::parse`] while it builds the tree. Output: [`Roles`], read by the
//! formatter (the key table of each block, where a `;` is needed) and the IDE (what the word
//! at the cursor is), so neither re-derives the parser's grouping from tokens.
//!
//! Invariants: [`Roles::tokens`] holds every token of the file exactly once, in source order
//! (comments and error runs included); blocks and items are numbered in the order their first
//! token appears, so both tables are sorted by source position.

use super::lex::TokenKind;
use super::schema::{self, ArgType, BlockKind, KeySig, FLAG_WORDS};
use venus_diag::diag::Span;

/// A block of the file: the body of a definition or an inline block (an argument).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlockId(pub u32);

/// An item (a key and its arguments) of some block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ItemId(pub u32);

/// What a token is, in the place the parser gave it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// A top-level keyword: `model`, `gpu`, `cluster`, `plan`, `scenario`, `use`.
    Keyword,
    /// The name of a definition.
    DefName,
    /// The base after `:` in a definition's header.
    DefBase,
    /// The path string of a `use`.
    UsePath,
    /// The `<` of [`TokenRole::block`].
    Open,
    /// The `>` of [`TokenRole::block`].
    Close,
    /// The key of [`TokenRole::item`].
    Key,
    /// Argument `n` of [`TokenRole::item`] when it is one token (or the base name of an inline
    /// block `NAME < ... >`).
    Arg(u32),
    /// A token inside the list that is argument `n` of [`TokenRole::item`] (its brackets and
    /// elements; the tokens of blocks inside the list belong to those blocks).
    InArg(u32),
    /// A `;` that ends an item (or stands alone) in [`TokenRole::block`].
    Semi,
    /// A `#` comment.
    Comment,
    /// A token no item owns: error runs and what the parser skipped while recovering.
    Skipped,
}

/// One token and its role.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenRole {
    pub kind: TokenKind,
    pub span: Span,
    /// The innermost block the token is read in (for `<` and `>`, the block they delimit);
    /// `None` at the top level.
    pub block: Option<BlockId>,
    /// The item the token belongs to, for [`Slot::Key`], [`Slot::Arg`] and [`Slot::InArg`].
    pub item: Option<ItemId>,
    pub slot: Slot,
}

/// One block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockRole {
    /// The key table it is read with; `None` for the block of an unknown key (or of an
    /// argument slot that takes no block).
    pub kind: Option<BlockKind>,
    /// Its `<`.
    pub open: Span,
    /// The item whose argument it is, with the slot ([`Slot::Arg`], or [`Slot::InArg`] inside a
    /// list); `None` for a definition's body.
    pub parent: Option<(ItemId, Slot)>,
    /// The block it is written in; `None` for a definition's body.
    pub outer: Option<BlockId>,
}

/// One item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ItemRole {
    pub block: BlockId,
    pub key: Span,
    /// The span of each argument value, in order (a block or list as a whole).
    pub args: Vec<Span>,
}

/// The role of every token of a file.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Roles {
    pub tokens: Vec<TokenRole>,
    pub blocks: Vec<BlockRole>,
    pub items: Vec<ItemRole>,
}

impl Roles {
    pub fn block(&self, id: BlockId) -> Option<&BlockRole> {
        self.blocks.get(id.0 as usize)
    }

    pub fn item(&self, id: ItemId) -> Option<&ItemRole> {
        self.items.get(id.0 as usize)
    }

    /// The block whose `<` starts at `offset`.
    pub fn block_opened_at(&self, offset: u32) -> Option<&BlockRole> {
        let i = self.blocks.partition_point(|b| b.open.start < offset);
        self.blocks.get(i).filter(|b| b.open.start == offset)
    }

    /// The key table of the block whose `<` starts at `offset` (`None` when unknown).
    pub fn kind_of_block_at(&self, offset: u32) -> Option<BlockKind> {
        self.block_opened_at(offset).and_then(|b| b.kind)
    }

    /// The index in [`Roles::tokens`] of the first token that ends at or after `offset`.
    pub fn token_index_at(&self, offset: u32) -> usize {
        self.tokens.partition_point(|t| t.span.end < offset)
    }
}

/// What a name written after an item would be, before looking at the name itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameAfter {
    /// It fills the next argument slot, of this type (unless it is a key of the block written
    /// on a new line: see [`continues_item`]).
    Slot(ArgType),
    /// After a flag with no argument yet: `on` or `off` is the flag's argument.
    FlagWord,
    /// It starts the next item.
    NextItem,
}

/// What a name after an item keyed `key` with `nargs` arguments so far would be, in a block
/// read with `block`'s key table.
pub fn name_after(block: Option<BlockKind>, key: &str, nargs: usize) -> NameAfter {
    name_after_sig(block.and_then(|b| schema::lookup(b, key)), nargs)
}

/// [`name_after`] for a key whose signature was already looked up (`None`: unknown key).
pub fn name_after_sig(sig: Option<&KeySig>, nargs: usize) -> NameAfter {
    let Some(sig) = sig else {
        return NameAfter::NextItem;
    };
    if sig.is_flag() {
        return if nargs == 0 {
            NameAfter::FlagWord
        } else {
            NameAfter::NextItem
        };
    }
    match sig.args.get(nargs) {
        Some(&slot) if slot.takes_name() => NameAfter::Slot(slot),
        _ => NameAfter::NextItem,
    }
}

/// The one rule for where an item ends: true when the name `name`, written after an item
/// keyed `key` with `nargs` arguments (on a new line when `newline`), continues that item.
///
/// A key takes names only into the slots of its signature that take names (a flag only its
/// `on`/`off`); a known key of the block written on a new line starts the next item instead,
/// so a key left without its argument (`gpu` on a line of its own) does not swallow the next
/// key. Non-name values (numbers, quantities, strings, blocks, lists) never end an item; `;`,
/// `>` and `:` always do. The parser applies this rule, and the formatter asks it where a `;`
/// is needed.
pub fn continues_item(
    block: Option<BlockKind>,
    key: &str,
    nargs: usize,
    name: &str,
    newline: bool,
) -> bool {
    let sig = block.and_then(|b| schema::lookup(b, key));
    continues_item_sig(block, sig, nargs, name, newline)
}

/// [`continues_item`] for a key whose signature was already looked up (the parser's hot path).
pub fn continues_item_sig(
    block: Option<BlockKind>,
    sig: Option<&KeySig>,
    nargs: usize,
    name: &str,
    newline: bool,
) -> bool {
    match name_after_sig(sig, nargs) {
        NameAfter::Slot(slot) => {
            let is_key = block.is_some_and(|b| schema::lookup(b, name).is_some());
            !(is_key && (newline || skips_optional_word(sig, nargs, slot, name)))
        }
        NameAfter::FlagWord => FLAG_WORDS.contains(&name),
        NameAfter::NextItem => false,
    }
}

/// True when `name` is no word of the optional word slot `slot` (`fsdp optim_grads_params`'s
/// implementation): a key of the block there starts the next item on the same line too
/// (`fsdp optim_grads_params fsdp_keep_unsharded`), where a required slot keeps it and reports
/// the unknown word.
fn skips_optional_word(sig: Option<&KeySig>, nargs: usize, slot: ArgType, name: &str) -> bool {
    let optional = sig.is_some_and(|s| nargs >= s.min_args());
    matches!(slot, ArgType::Enum(words) if optional && !words.contains(&name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::ast::DefKind;
    use venus_diag::diag::FileId;

    fn roles(text: &str) -> Roles {
        crate::syntax::parse(text, FileId::default()).roles
    }

    /// Each token's text with its slot, item and block number.
    fn table(text: &str) -> Vec<(&str, Slot, Option<u32>, Option<u32>)> {
        roles(text)
            .tokens
            .iter()
            .map(|t| {
                (
                    &text[t.span.range()],
                    t.slot,
                    t.item.map(|i| i.0),
                    t.block.map(|b| b.0),
                )
            })
            .collect()
    }

    #[test]
    fn every_token_gets_its_slot_item_and_block_in_source_order() {
        let text = "plan p < pp 4 # why\n  schedule 1f1b; sp >";
        assert_eq!(
            table(text),
            vec![
                ("plan", Slot::Keyword, None, None),
                ("p", Slot::DefName, None, None),
                ("<", Slot::Open, None, Some(0)),
                ("pp", Slot::Key, Some(0), Some(0)),
                ("4", Slot::Arg(0), Some(0), Some(0)),
                ("# why", Slot::Comment, None, None),
                ("schedule", Slot::Key, Some(1), Some(0)),
                ("1f1b", Slot::Arg(0), Some(1), Some(0)),
                (";", Slot::Semi, None, Some(0)),
                ("sp", Slot::Key, Some(2), Some(0)),
                (">", Slot::Close, None, Some(0)),
            ]
        );
    }

    #[test]
    fn an_inline_block_records_its_kind_parent_item_and_slot() {
        let text = "scenario s < cluster dgx_h100 < nodes 4 > plan < tp [1 2] > >";
        let r = roles(text);
        let cluster = BlockKind::Def(DefKind::Cluster);
        let plan = BlockKind::Def(DefKind::Plan);
        let kinds: Vec<_> = r
            .blocks
            .iter()
            .map(|b| (b.kind, b.parent, b.outer))
            .collect();
        assert_eq!(
            kinds,
            vec![
                (Some(BlockKind::Def(DefKind::Scenario)), None, None),
                (
                    Some(cluster),
                    Some((ItemId(0), Slot::Arg(0))),
                    Some(BlockId(0))
                ),
                (
                    Some(plan),
                    Some((ItemId(2), Slot::Arg(0))),
                    Some(BlockId(0))
                ),
            ]
        );
        // The base name is the argument; the list's tokens are inside argument 0 of `tp`.
        let t = table(text);
        assert_eq!(t[4], ("dgx_h100", Slot::Arg(0), Some(0), Some(0)));
        assert_eq!(t[12], ("[", Slot::InArg(0), Some(3), Some(2)));
        assert_eq!(t[14], ("2", Slot::InArg(0), Some(3), Some(2)));
        assert_eq!(r.items[3].args, vec![Span::new(52, 57)]);
        assert_eq!(r.kind_of_block_at(30), Some(cluster));
        assert_eq!(r.kind_of_block_at(31), None);
    }

    #[test]
    fn a_name_continues_an_item_only_into_a_name_slot_and_not_as_a_key_on_a_new_line() {
        let cluster = Some(BlockKind::Def(DefKind::Cluster));
        let plan = Some(BlockKind::Def(DefKind::Plan));
        assert!(continues_item(cluster, "gpu", 0, "h100_sxm", false));
        assert!(continues_item(cluster, "gpu", 0, "h100_sxm", true));
        assert!(!continues_item(cluster, "gpu", 0, "dim", true));
        assert!(continues_item(cluster, "gpu", 0, "dim", false));
        assert!(!continues_item(cluster, "gpu", 1, "h100_sxm", false));
        assert!(!continues_item(plan, "pp", 0, "tp", false));
        assert!(continues_item(plan, "sp", 0, "off", true));
        assert!(!continues_item(plan, "sp", 1, "off", false));
        assert!(!continues_item(plan, "sp", 0, "tp", false));
        assert!(!continues_item(None, "gpu", 0, "h100_sxm", false));
        assert_eq!(name_after(plan, "sp", 0), NameAfter::FlagWord);
        assert_eq!(name_after(plan, "pp", 1), NameAfter::NextItem);
    }

    #[test]
    fn the_parser_groups_items_by_the_rule() {
        // `gpu` on its own line does not swallow the next key; on one line it takes the name.
        let r = roles("cluster <\n  gpu\n  dim nvlink fc 8 450GB/s 1000ns\n>");
        assert_eq!(r.items.len(), 2);
        assert_eq!(r.items[0].args, vec![]);
        let r = roles("cluster < gpu dim >");
        assert_eq!(r.items.len(), 1);
        assert_eq!(r.items[0].args, vec![Span::new(14, 17)]);
    }
}
