//! What the cursor is on: the enclosing block kind and whether a word there is a key or an
//! argument (and of which slot), for completion and hover.
//!
//! Input: a file's text (possibly broken mid-edit) and a byte offset. Output: a [`Cursor`].
//! Works on the token stream, not the tree, so an unclosed block or a half-written item still
//! gives an answer. Items are grouped the way the parser groups them (the key table's arity,
//! a known key on a new line starts a new item, `;` ends one).
//! Invariants: linear in the tokens before the offset; no recursion; never panics.

use crate::diag::Span;
use crate::syntax::ast::DefKind;
use crate::syntax::schema::{self, ArgType, BlockKind, KeySig, FLAG_WORDS};
use crate::syntax::{tokens, Token, TokenKind};

/// The role of the word at (or about to be typed at) the cursor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// At the top level: a definition keyword or `use`.
    TopLevel,
    /// A key of a block of this kind.
    Key(BlockKind),
    /// Argument `index` of `sig` (`slot` is its type) in a block of kind `block`. `optional`:
    /// the slot may stay empty, so a new key may start here as well.
    Arg {
        block: BlockKind,
        sig: &'static KeySig,
        index: usize,
        slot: ArgType,
        optional: bool,
    },
    /// The optional `on`/`off` after a flag.
    FlagWord {
        block: BlockKind,
        sig: &'static KeySig,
    },
    /// Inside a block of unknown kind, a list, a comment or a string: nothing to offer.
    Nothing,
}

/// The cursor's context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cursor {
    pub role: Role,
    /// The name token under the cursor (what a completion replaces), if any.
    pub word: Option<Span>,
}

#[derive(Clone, Copy)]
struct ItemState {
    sig: Option<&'static KeySig>,
    nargs: usize,
}

#[derive(Clone, Copy)]
struct Frame {
    kind: Option<BlockKind>,
    item: Option<ItemState>,
    /// Open `[` (and blocks inside lists) in this frame: their contents are skipped.
    skip_depth: usize,
}

struct Walker<'t> {
    text: &'t str,
    frames: Vec<Frame>,
    /// The kind of the definition whose header is being read at the top level.
    pending: Option<DefKind>,
    prev_end: usize,
}

impl<'t> Walker<'t> {
    fn newline_before(&self, start: usize) -> bool {
        self.text
            .get(self.prev_end..start)
            .is_some_and(|gap| gap.contains('\n'))
    }

    /// The role a name at `start` would have, from the state before it.
    fn role_of_name(&self, name: Option<&str>, start: usize) -> Role {
        let Some(frame) = self.frames.last() else {
            return Role::TopLevel;
        };
        if frame.skip_depth > 0 {
            return Role::Nothing;
        }
        let Some(block) = frame.kind else {
            return Role::Nothing;
        };
        let newline = self.newline_before(start);
        if let Some(ItemState {
            sig: Some(sig),
            nargs,
        }) = frame.item
        {
            let starts_item =
                |n: Option<&str>| newline && n.is_some_and(|n| schema::lookup(block, n).is_some());
            if sig.is_flag() {
                let is_word = name.is_none_or(|n| FLAG_WORDS.iter().any(|w| w.starts_with(n)));
                if nargs == 0 && !newline && is_word {
                    return Role::FlagWord { block, sig };
                }
            } else if let Some(&slot) = sig.args.get(nargs) {
                if slot.takes_name() && !starts_item(name) {
                    return Role::Arg {
                        block,
                        sig,
                        index: nargs,
                        slot,
                        optional: nargs >= sig.min_args() || newline,
                    };
                }
            }
        }
        Role::Key(block)
    }

    fn token(&mut self, tok: Token) {
        let slice = self.text.get(tok.span.range()).unwrap_or("");
        match tok.kind {
            TokenKind::Comment | TokenKind::Error => return,
            _ => {}
        }
        let start = tok.span.start as usize;
        match self.frames.last_mut() {
            None => match tok.kind {
                TokenKind::Name => {
                    if let Some(kind) = DefKind::from_keyword(slice) {
                        self.pending = Some(kind);
                    } else if slice == "use" {
                        self.pending = None;
                    }
                }
                TokenKind::Lt => {
                    let kind = self.pending.take().map(BlockKind::Def);
                    self.frames.push(Frame {
                        kind,
                        item: None,
                        skip_depth: 0,
                    });
                }
                _ => {}
            },
            Some(frame) if frame.skip_depth > 0 => match tok.kind {
                TokenKind::LBracket | TokenKind::Lt => frame.skip_depth += 1,
                TokenKind::RBracket | TokenKind::Gt => {
                    frame.skip_depth -= 1;
                    if frame.skip_depth == 0 {
                        if let Some(item) = &mut frame.item {
                            item.nargs += 1;
                        }
                    }
                }
                _ => {}
            },
            Some(_) => match tok.kind {
                TokenKind::Name => {
                    let role = self.role_of_name(Some(slice), start);
                    let Some(frame) = self.frames.last_mut() else {
                        return;
                    };
                    match role {
                        Role::Arg { .. } | Role::FlagWord { .. } => {
                            if let Some(item) = &mut frame.item {
                                item.nargs += 1;
                            }
                        }
                        _ => {
                            frame.item = Some(ItemState {
                                sig: frame.kind.and_then(|k| schema::lookup(k, slice)),
                                nargs: 0,
                            })
                        }
                    }
                }
                TokenKind::Number | TokenKind::Quantity | TokenKind::Str => {
                    if let Some(Some(item)) = self.frames.last_mut().map(|f| &mut f.item) {
                        item.nargs += 1;
                    }
                }
                TokenKind::Semi => {
                    if let Some(frame) = self.frames.last_mut() {
                        frame.item = None;
                    }
                }
                TokenKind::LBracket => {
                    if let Some(frame) = self.frames.last_mut() {
                        frame.skip_depth = 1;
                    }
                }
                TokenKind::Lt => {
                    let kind = self.frames.last().and_then(|f| {
                        let item = f.item?;
                        match item.sig?.args.get(item.nargs)? {
                            ArgType::Ref(k) => Some(BlockKind::Def(*k)),
                            ArgType::Nested(k) => Some(*k),
                            _ => None,
                        }
                    });
                    self.frames.push(Frame {
                        kind,
                        item: None,
                        skip_depth: 0,
                    });
                }
                TokenKind::Gt => {
                    self.frames.pop();
                    if let Some(Some(item)) = self.frames.last_mut().map(|f| &mut f.item) {
                        item.nargs += 1;
                    }
                }
                _ => {}
            },
        }
        self.prev_end = tok.span.end as usize;
    }
}

/// The context at byte `offset` of `text`.
pub fn cursor(text: &str, offset: usize) -> Cursor {
    let mut w = Walker {
        text,
        frames: Vec::new(),
        pending: None,
        prev_end: 0,
    };
    for tok in tokens(text) {
        let (start, end) = (tok.span.start as usize, tok.span.end as usize);
        if start >= offset && !(start == offset && tok.kind == TokenKind::Name) {
            break;
        }
        if offset <= end {
            // The cursor touches this token.
            return match tok.kind {
                TokenKind::Name => {
                    let word = text.get(start..offset).unwrap_or("");
                    let full = text.get(start..end).unwrap_or("");
                    let name = if offset == end { word } else { full };
                    Cursor {
                        role: w.role_of_name(Some(name), start),
                        word: Some(tok.span),
                    }
                }
                // At the end of a token that ends a value (`>`, `]`, a number): the next word
                // is what the cursor starts.
                TokenKind::Gt
                | TokenKind::RBracket
                | TokenKind::Number
                | TokenKind::Quantity
                | TokenKind::Semi
                | TokenKind::Lt
                | TokenKind::LBracket
                    if offset == end =>
                {
                    w.token(tok);
                    Cursor {
                        role: Role::Nothing,
                        word: None,
                    }
                    .or_next(&w, offset)
                }
                _ => Cursor {
                    role: Role::Nothing,
                    word: None,
                },
            };
        }
        w.token(tok);
    }
    Cursor {
        role: w.role_of_name(None, offset),
        word: None,
    }
}

impl Cursor {
    /// Right after a closing or value token with no space, nothing can be typed that joins it
    /// except through a space: only `<` and `[` and `;` allow a word right after them.
    fn or_next(self, w: &Walker, offset: usize) -> Cursor {
        let prev = w.text.get(..offset).and_then(|t| t.chars().last());
        match prev {
            Some('<' | '[' | ';') => Cursor {
                role: w.role_of_name(None, offset),
                word: None,
            },
            _ => self,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text_with_bar: &str) -> Cursor {
        let offset = text_with_bar.find('|').unwrap();
        let text = text_with_bar.replace('|', "");
        cursor(&text, offset)
    }

    const PLAN: BlockKind = BlockKind::Def(DefKind::Plan);

    #[test]
    fn inside_a_plan_the_cursor_is_at_a_plan_key() {
        assert_eq!(at("plan p < pp 4 |").role, Role::Key(PLAN));
        assert_eq!(at("plan p <\n  pp 4\n  mi|\n>").role, Role::Key(PLAN));
        let c = at("plan p < pp 4 mi| >");
        assert_eq!(c.role, Role::Key(PLAN));
        assert_eq!(c.word, Some(Span::new(14, 16)));
    }

    #[test]
    fn after_a_ref_key_the_cursor_is_at_its_argument() {
        match at("cluster c < gpu | >").role {
            Role::Arg { slot, index, .. } => {
                assert_eq!((slot, index), (ArgType::Ref(DefKind::Gpu), 0))
            }
            other => panic!("{other:?}"),
        }
        match at("scenario s < model llama2_7b cluster dgx_h100 plan |").role {
            Role::Arg { slot, .. } => assert_eq!(slot, ArgType::Ref(DefKind::Plan)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn enum_slots_are_found_after_schedule_and_dim_name() {
        match at("plan < schedule | >").role {
            Role::Arg { slot, .. } => assert_eq!(slot, ArgType::Enum(schema::SCHEDULES)),
            other => panic!("{other:?}"),
        }
        match at("cluster < dim nvlink | >").role {
            Role::Arg { slot, index, .. } => {
                assert_eq!((slot, index), (ArgType::Enum(schema::TOPOLOGIES), 1))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_inline_block_takes_the_kind_of_its_slot() {
        assert_eq!(at("scenario s < plan < pp 2 | > >").role, Role::Key(PLAN));
        assert_eq!(
            at("plan < measured < first 1ms | > >").role,
            Role::Key(BlockKind::Measured)
        );
    }

    #[test]
    fn top_level_comments_and_unknown_blocks_give_their_role() {
        assert_eq!(at("mo|").role, Role::TopLevel);
        assert_eq!(at("plan < pp 4 > |").role, Role::TopLevel);
        assert_eq!(at("plan < # comm|ent\n >").role, Role::Nothing);
        assert_eq!(at("plan < pp [1 |").role, Role::Nothing);
    }

    #[test]
    fn a_flag_can_take_on_or_off() {
        match at("plan < sp | >").role {
            Role::FlagWord { sig, .. } => assert_eq!(sig.key, "sp"),
            other => panic!("{other:?}"),
        }
    }
}
