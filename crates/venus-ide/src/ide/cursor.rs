//! What the cursor is on: the enclosing block kind and whether a word there is a key or an
//! argument (and of which slot), for completion and hover.
//!
//! Input: a file's text (possibly broken mid-edit) and a byte offset. Output: a [`Cursor`].
//! The grouping comes from the parser's token-role map ([`venus_syntax::syntax::role`]): the state
//! after the token before the cursor (block, item, arguments so far) is read from it, and
//! whether a name there continues the item is [`role::continues_item`], the parser's own rule.
//! The parser never fails, so an unclosed block or a half-written item still gives an answer.
//! Invariants: linear in the tokens; no recursion; never panics.

use venus_diag::diag::{FileId, Span};
use venus_syntax::syntax::role::{self, ItemId, NameAfter, Roles, Slot, TokenRole};
use venus_syntax::syntax::schema::{self, ArgType, BlockKind, KeySig, FLAG_WORDS};
use venus_syntax::syntax::TokenKind;

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
    /// The block the cursor is in, when it is in one (its items are the keys already set).
    pub block: Option<role::BlockId>,
}

/// The keys written in `block` of `text`, other than the item at `except` (the one the
/// cursor is on, if it is a key being typed).
pub fn keys_in_block<'t>(
    text: &'t str,
    roles: &Roles,
    block: role::BlockId,
    except: Option<Span>,
) -> Vec<&'t str> {
    roles
        .items
        .iter()
        .filter(|i| i.block == block && Some(i.key) != except)
        .filter_map(|i| text.get(i.key.range()))
        .collect()
}

/// Where reading stands after a token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    TopLevel,
    /// Inside a list, a comment or a block of unknown keys.
    Nothing,
    /// In a block of this kind, after `item` with `nargs` arguments (no item: after `<`/`;`).
    Block {
        kind: BlockKind,
        block: role::BlockId,
        item: Option<(ItemId, usize)>,
    },
}

/// The token roles of `text` and the text itself.
struct Reader<'t> {
    text: &'t str,
    roles: &'t Roles,
}

impl Reader<'_> {
    /// True when a token is invisible to the grouping: comments and error runs.
    fn ignored(t: &TokenRole) -> bool {
        t.slot == Slot::Comment || (t.slot == Slot::Skipped && t.kind == TokenKind::Error)
    }

    /// The state after the tokens before index `end` of [`Roles::tokens`], and where the last
    /// of them that counts ends (the newline rule measures from there).
    fn state_before(&self, end: usize) -> (State, usize) {
        let tokens = self.roles.tokens.get(..end).unwrap_or_default();
        let mut seen = tokens.iter().rev().filter(|t| !Self::ignored(t)).peekable();
        let prev_end = seen.peek().map_or(0, |t| t.span.end as usize);
        // Skipped tokens (a stray `:`) do not change the state: the one before them decides.
        let state = seen
            .find(|t| t.slot != Slot::Skipped)
            .map_or(State::TopLevel, |t| self.state_after(t));
        (state, prev_end)
    }

    fn block_state(&self, block: Option<role::BlockId>, item: Option<(ItemId, usize)>) -> State {
        match block.and_then(|b| Some((b, self.roles.block(b)?.kind?))) {
            Some((block, kind)) => State::Block { kind, block, item },
            None => State::Nothing,
        }
    }

    fn item_state(&self, item: Option<ItemId>, nargs: usize) -> State {
        let Some(id) = item else {
            return State::Nothing;
        };
        let block = self.roles.item(id).map(|i| i.block);
        self.block_state(block, Some((id, nargs)))
    }

    /// The state right after token `t`.
    fn state_after(&self, t: &TokenRole) -> State {
        match t.slot {
            Slot::Keyword | Slot::DefName | Slot::DefBase | Slot::UsePath => State::TopLevel,
            Slot::Open | Slot::Semi => self.block_state(t.block, None),
            Slot::Key => self.item_state(t.item, 0),
            Slot::Arg(n) => self.item_state(t.item, n as usize + 1),
            Slot::InArg(n) => {
                // Only the `]` that closes the whole argument leaves the list.
                let closes = t.kind == TokenKind::RBracket
                    && t.item
                        .and_then(|i| self.roles.item(i))
                        .and_then(|i| i.args.get(n as usize))
                        .is_some_and(|arg| arg.end == t.span.end);
                if closes {
                    self.item_state(t.item, n as usize + 1)
                } else {
                    State::Nothing
                }
            }
            Slot::Close => {
                let Some(block) = t.block.and_then(|b| self.roles.block(b)) else {
                    return State::TopLevel;
                };
                match block.parent {
                    Some((item, Slot::Arg(n))) => self.item_state(Some(item), n as usize + 1),
                    Some(_) => State::Nothing,
                    None => match block.outer {
                        Some(outer) => self.block_state(Some(outer), None),
                        None => State::TopLevel,
                    },
                }
            }
            Slot::Comment | Slot::Skipped => State::Nothing,
        }
    }

    /// The role a name at `start` would have in `state` (`name`: the word, when one is there).
    fn role_of_name(
        &self,
        state: State,
        prev_end: usize,
        name: Option<&str>,
        start: usize,
    ) -> Role {
        let (kind, item) = match state {
            State::TopLevel => return Role::TopLevel,
            State::Nothing => return Role::Nothing,
            State::Block { kind, item, .. } => (kind, item),
        };
        let newline = self
            .text
            .get(prev_end..start)
            .is_some_and(|gap| gap.contains('\n'));
        let Some((id, nargs)) = item else {
            return Role::Key(kind);
        };
        let key = self
            .roles
            .item(id)
            .and_then(|i| self.text.get(i.key.range()))
            .unwrap_or("");
        let Some(sig) = schema::lookup(kind, key) else {
            return Role::Key(kind);
        };
        // `seq |`: the item still lacks a required value. A name cannot fill a count or a
        // quantity, but the cursor is where the value goes, not where a key starts.
        if name.is_none() && !newline && nargs < sig.min_args() {
            if let Some(&slot) = sig.args.get(nargs) {
                return Role::Arg {
                    block: kind,
                    sig,
                    index: nargs,
                    slot,
                    optional: false,
                };
            }
        }
        match role::name_after(Some(kind), key, nargs) {
            // While a word is being typed, any prefix of `on`/`off` may become one; on a new
            // line a key is the likelier intent.
            NameAfter::FlagWord => {
                let is_word = name.is_none_or(|n| FLAG_WORDS.iter().any(|w| w.starts_with(n)));
                if !newline && is_word {
                    return Role::FlagWord { block: kind, sig };
                }
            }
            NameAfter::Slot(slot) => {
                let fills =
                    name.is_none_or(|n| role::continues_item(Some(kind), key, nargs, n, newline));
                if fills {
                    return Role::Arg {
                        block: kind,
                        sig,
                        index: nargs,
                        slot,
                        optional: nargs >= sig.min_args() || newline,
                    };
                }
            }
            NameAfter::NextItem => {}
        }
        Role::Key(kind)
    }
}

/// The context at byte `offset` of `text`.
pub fn cursor(text: &str, offset: usize) -> Cursor {
    let parsed = venus_syntax::syntax::parse(text, FileId::default());
    cursor_in(text, &parsed.roles, offset)
}

/// The context at byte `offset` of `text`, whose token roles are `roles`.
pub fn cursor_in(text: &str, roles: &Roles, offset: usize) -> Cursor {
    let r = Reader { text, roles };
    let nothing = Cursor {
        role: Role::Nothing,
        word: None,
        block: None,
    };
    for (i, tok) in roles.tokens.iter().enumerate() {
        let (start, end) = (tok.span.start as usize, tok.span.end as usize);
        if start >= offset && !(start == offset && tok.kind == TokenKind::Name) {
            let (state, prev_end) = r.state_before(i);
            return Cursor {
                role: r.role_of_name(state, prev_end, None, offset),
                word: None,
                block: block_of(state),
            };
        }
        if offset > end {
            continue;
        }
        // The cursor touches this token.
        return match tok.kind {
            TokenKind::Name => {
                let (state, prev_end) = r.state_before(i);
                let name = text.get(start..end).unwrap_or("");
                Cursor {
                    role: r.role_of_name(state, prev_end, Some(name), start),
                    word: Some(tok.span),
                    block: block_of(state),
                }
            }
            // At the end of a token that ends a value (`>`, `]`, a number), nothing can be
            // typed that joins it except through a space: only `<`, `[` and `;` allow a word
            // right after them.
            TokenKind::Gt
            | TokenKind::RBracket
            | TokenKind::Number
            | TokenKind::Quantity
            | TokenKind::Semi
            | TokenKind::Lt
            | TokenKind::LBracket
                if offset == end =>
            {
                let prev = text.get(..offset).and_then(|t| t.chars().last());
                if !matches!(prev, Some('<' | '[' | ';')) {
                    return nothing;
                }
                let (state, prev_end) = r.state_before(i + 1);
                Cursor {
                    role: r.role_of_name(state, prev_end, None, offset),
                    word: None,
                    block: block_of(state),
                }
            }
            _ => nothing,
        };
    }
    let (state, prev_end) = r.state_before(roles.tokens.len());
    Cursor {
        role: r.role_of_name(state, prev_end, None, offset),
        word: None,
        block: block_of(state),
    }
}

fn block_of(state: State) -> Option<role::BlockId> {
    match state {
        State::Block { block, .. } => Some(block),
        State::TopLevel | State::Nothing => None,
    }
}
