//! The tree builder: tokens → [`ast::File`] + structural problems (E0001, E0002), typed
//! [`ParseProblem`]s rendered in `problem.rs`.
//!
//! Input: the tokens of [`super::lex`]. Comments go to [`ast::File::comments`]; error runs were
//! already reported by the lexer and are skipped, so `hidden @ 4096` still reads as one item.
//! Items are grouped with the key table ([`schema::lookup`]): a key takes up to its signature's
//! number of arguments, then any further non-name values (arity is `ty`'s concern, E0203).
//!
//! While building, it records the role of every token ([`Roles`]: block kind, item, slot) and
//! decides where an item ends with [`role::continues_item`], the rule the formatter and the IDE
//! read instead of re-deriving it.
//!
//! Invariants: never panics; recursion is bounded by [`MAX_DEPTH`] (deeper subtrees are
//! reported once and skipped with a counter, not recursion); every token is consumed exactly
//! once, so building is linear; one diagnostic per problem: after an error the builder
//! resynchronises (next top-level keyword, next item, or after a balanced block).

use super::ast::{self, Block, Def, DefKind, Ident, Item, TopItem, UseDecl, Value, ValueKind};
use super::lex::{scan_number, string_contents, Token, TokenKind};
use super::problem::{Found, Nest, Opened, ParseProblem, TopHint};
use super::role::{self, BlockId, BlockRole, ItemId, ItemRole, Roles, Slot, TokenRole};
use super::schema::{self, ArgType, BlockKind};
use venus_diag::diag::{edit_distance, Span};

/// How many blocks and lists may enclose each other (a definition's own block is level 1).
pub const MAX_DEPTH: usize = 32;

/// The words that may start a top-level declaration.
const TOP_WORDS: [&str; 6] = ["model", "gpu", "cluster", "plan", "scenario", "use"];

pub(crate) fn build(text: &str, tokens: &[Token]) -> (ast::File, Roles, Vec<ParseProblem>) {
    let mut comments = Vec::new();
    let mut toks = Vec::with_capacity(tokens.len());
    for &tok in tokens {
        match tok.kind {
            TokenKind::Comment => comments.push(ast::Comment {
                text: text.get(tok.span.range()).unwrap_or("").to_string(),
                span: tok.span,
            }),
            // `{` and `}` were reported with "write `<` instead"; reading them as `<` and `>`
            // keeps the rest of the block from cascading into more errors.
            TokenKind::Error => match text.get(tok.span.range()) {
                Some("{") => toks.push(Token {
                    kind: TokenKind::Lt,
                    ..tok
                }),
                Some("}") => toks.push(Token {
                    kind: TokenKind::Gt,
                    ..tok
                }),
                _ => {}
            },
            _ => toks.push(tok),
        }
    }
    let mut b = Builder {
        text,
        toks,
        pos: 0,
        problems: Vec::new(),
        eof_reported: false,
        closed_at: None,
        ctx: Ctx::Unknown,
        roles: Vec::with_capacity(tokens.len()),
        blocks: Vec::new(),
        role_items: Vec::new(),
        place: Place::TOP,
    };
    let items = b.file();
    // The builder consumed its tokens in source order: merge their roles with the comments
    // and error runs it never saw (matched by span, so a token it did not consume is skipped).
    let mut read = b.roles.into_iter().peekable();
    let all = tokens
        .iter()
        .map(|tok| match read.next_if(|r| r.span == tok.span) {
            Some(role) => role,
            None => TokenRole {
                kind: tok.kind,
                span: tok.span,
                block: None,
                item: None,
                slot: if tok.kind == TokenKind::Comment {
                    Slot::Comment
                } else {
                    Slot::Skipped
                },
            },
        })
        .collect();
    let roles = Roles {
        tokens: all,
        blocks: b.blocks,
        items: b.role_items,
    };
    (ast::File { items, comments }, roles, b.problems)
}

/// Where the builder is reading: what the next consumed token is recorded as.
#[derive(Clone, Copy, Debug)]
struct Place {
    block: Option<BlockId>,
    item: Option<ItemId>,
    slot: Slot,
}

impl Place {
    const TOP: Place = Place {
        block: None,
        item: None,
        slot: Slot::Skipped,
    };
}

/// The key table a block is read with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ctx {
    Known(BlockKind),
    /// The block of an unknown key (or a block where none belongs): every name starts an item
    /// that takes the non-name values after it.
    Unknown,
}

impl Ctx {
    fn kind(self) -> Option<BlockKind> {
        match self {
            Ctx::Known(kind) => Some(kind),
            Ctx::Unknown => None,
        }
    }

    fn lookup(self, key: &str) -> Option<&'static schema::KeySig> {
        match self {
            Ctx::Known(kind) => schema::lookup(kind, key),
            Ctx::Unknown => None,
        }
    }
    /// The context of a block written as the argument of a slot of type `slot`.
    fn for_slot(slot: Option<ArgType>) -> Ctx {
        match slot {
            Some(ArgType::Ref(kind)) => Ctx::Known(BlockKind::Def(kind)),
            Some(ArgType::Nested(kind)) => Ctx::Known(kind),
            _ => Ctx::Unknown,
        }
    }
}

struct Builder<'t> {
    text: &'t str,
    /// Significant tokens only (no comments, no error runs).
    toks: Vec<Token>,
    pos: usize,
    problems: Vec<ParseProblem>,
    /// Set once a block or list left open at the end of input is reported: the blocks that
    /// enclose it are necessarily open too, and reporting each would be a cascade.
    eof_reported: bool,
    /// The token index of a top-level keyword that closed the open blocks (reported once,
    /// by the innermost block; the enclosing ones close silently).
    closed_at: Option<usize>,
    /// The key table of the innermost block being read (a list reads it to know the keys
    /// that end it when its `]` is missing).
    ctx: Ctx,
    /// The role of each token of `toks` consumed so far.
    roles: Vec<TokenRole>,
    blocks: Vec<BlockRole>,
    role_items: Vec<ItemRole>,
    /// What the next consumed token is.
    place: Place,
}

impl<'t> Builder<'t> {
    // ---- token access ----

    fn peek(&self) -> Option<Token> {
        self.toks.get(self.pos).copied()
    }

    fn peek_kind(&self) -> Option<TokenKind> {
        self.peek().map(|t| t.kind)
    }

    fn bump(&mut self) -> Option<Token> {
        let tok = self.peek();
        if let Some(t) = tok {
            self.pos += 1;
            self.roles.push(TokenRole {
                kind: t.kind,
                span: t.span,
                block: self.place.block,
                item: self.place.item,
                slot: self.place.slot,
            });
        }
        tok
    }

    /// Consumes the next token as `slot`, then reads on in the current slot.
    fn bump_as(&mut self, slot: Slot) -> Option<Token> {
        let saved = self.place.slot;
        self.place.slot = slot;
        let tok = self.bump();
        self.place.slot = saved;
        tok
    }

    fn slice(&self, span: Span) -> &'t str {
        self.text.get(span.range()).unwrap_or("")
    }

    fn ident(&self, tok: Token) -> Ident {
        Ident {
            text: self.slice(tok.span).to_string(),
            span: tok.span,
        }
    }

    fn end_of_input(&self) -> usize {
        self.text.len()
    }

    /// 1-based line of a byte offset, for help texts.
    fn line_of(&self, offset: u32) -> usize {
        let prefix = self.text.get(..offset as usize).unwrap_or(self.text);
        prefix.bytes().filter(|&b| b == b'\n').count() + 1
    }

    /// A token as a message names it: its kind and its text.
    fn found(&self, tok: Token) -> Found {
        Found {
            kind: tok.kind,
            text: self.slice(tok.span).to_string(),
        }
    }

    fn report(&mut self, problem: ParseProblem) {
        self.problems.push(problem);
    }

    // ---- top level ----

    fn file(&mut self) -> Vec<TopItem> {
        let mut items = Vec::new();
        while let Some(tok) = self.peek() {
            match tok.kind {
                TokenKind::Name => {
                    let word = self.slice(tok.span);
                    if word == "use" {
                        if let Some(u) = self.use_decl() {
                            items.push(TopItem::Use(u));
                        }
                    } else if let Some(kind) = DefKind::from_keyword(word) {
                        if let Some(def) = self.def(kind) {
                            items.push(TopItem::Def(def));
                        }
                    } else {
                        self.unknown_top_word(tok);
                        self.bump();
                        self.recover_top();
                    }
                }
                TokenKind::Lt => {
                    self.report(ParseProblem::BlockWithoutKeyword { span: tok.span });
                    self.skip_balanced();
                }
                TokenKind::Gt | TokenKind::RBracket => self.stray_closers(),
                _ => {
                    self.report(ParseProblem::ExpectedDefinition {
                        span: tok.span,
                        found: self.found(tok),
                    });
                    self.bump();
                    self.recover_top();
                }
            }
        }
        items
    }

    /// A run of closers that close nothing (`>` at the top level, `]` anywhere no list is
    /// open), with the first one next: one diagnostic for the whole run, so a file of a
    /// million `>` is one error, not a million. Inside a block only `]` is stray (a `>` closes
    /// the block).
    fn stray_closers(&mut self) {
        let Some(first) = self.bump() else { return };
        let top_level = first.kind == TokenKind::Gt;
        let mut last = first;
        let mut count = 1usize;
        while let Some(tok) = self.peek() {
            let stray = match tok.kind {
                TokenKind::RBracket => true,
                TokenKind::Gt => top_level,
                _ => false,
            };
            if !stray {
                break;
            }
            self.bump();
            last = tok;
            count += 1;
        }
        let span = first.span.to(last.span);
        if count == 1 {
            // `>`, `]`, or a `}` read as `>`.
            let closer = self.slice(first.span).chars().next().unwrap_or('>');
            let closes = if first.kind == TokenKind::Gt {
                Nest::Block
            } else {
                Nest::List
            };
            self.report(ParseProblem::StrayCloser {
                span,
                closer,
                closes,
            });
        } else {
            self.report(ParseProblem::StrayClosers { span, count });
        }
    }

    fn unknown_top_word(&mut self, tok: Token) {
        let word = self.slice(tok.span);
        // Keywords are few and far apart, so two edits (`modle`) are still a plausible typo.
        let close = TOP_WORDS
            .into_iter()
            .map(|k| (edit_distance(word, k), k))
            .filter(|&(d, _)| d <= 2 && d < word.len())
            .min();
        let hint = if let Some((_, kw)) = close {
            TopHint::DidYouMean(kw)
        } else {
            DefKind::ALL
                .into_iter()
                .find(|&k| schema::lookup(BlockKind::Def(k), word).is_some())
                .map_or(TopHint::Nothing, TopHint::KeyOf)
        };
        self.report(ParseProblem::UnknownTopWord {
            span: tok.span,
            word: word.to_string(),
            hint,
        });
    }

    /// After a top-level error: skip to the next top-level keyword, or past the next balanced
    /// block (the body of the broken definition).
    fn recover_top(&mut self) {
        while let Some(tok) = self.peek() {
            match tok.kind {
                TokenKind::Name if TOP_WORDS.contains(&self.slice(tok.span)) => return,
                TokenKind::Lt | TokenKind::LBracket => {
                    self.skip_balanced();
                    return;
                }
                _ => {
                    self.bump();
                }
            }
        }
    }

    /// Skips an opening bracket and everything up to its matching closer (any bracket kind
    /// counts), with a counter instead of recursion. Returns the end of the last token skipped.
    fn skip_balanced(&mut self) -> usize {
        let saved = self.place.slot;
        self.place.slot = Slot::Skipped;
        let end = self.skip_balanced_tokens();
        self.place.slot = saved;
        end
    }

    fn skip_balanced_tokens(&mut self) -> usize {
        let mut depth = 0usize;
        let mut end = self
            .peek()
            .map_or(self.end_of_input(), |t| t.span.end as usize);
        while let Some(tok) = self.bump() {
            end = tok.span.end as usize;
            match tok.kind {
                TokenKind::Lt | TokenKind::LBracket => depth += 1,
                TokenKind::Gt | TokenKind::RBracket => depth = depth.saturating_sub(1),
                _ => {}
            }
            if depth == 0 {
                break;
            }
        }
        end
    }

    fn use_decl(&mut self) -> Option<UseDecl> {
        let kw = self.bump_as(Slot::Keyword)?;
        match self.peek() {
            Some(tok) if tok.kind == TokenKind::Str => {
                self.bump_as(Slot::UsePath);
                let (path, _) = string_contents(self.slice(tok.span));
                Some(UseDecl {
                    path,
                    path_span: tok.span,
                    span: kw.span.to(tok.span),
                })
            }
            found => {
                let (span, name) = match found {
                    Some(tok)
                        if tok.kind == TokenKind::Name
                            && !TOP_WORDS.contains(&self.slice(tok.span)) =>
                    {
                        self.bump();
                        (tok.span, Some(self.slice(tok.span).to_string()))
                    }
                    Some(tok) => (tok.span, None),
                    None => (kw.span, None),
                };
                self.report(ParseProblem::UseWithoutPath { span, name });
                None
            }
        }
    }

    fn def(&mut self, kind: DefKind) -> Option<Def> {
        let kw = self.bump_as(Slot::Keyword)?;
        let keyword = kind.keyword();
        let mut name = None;
        if let Some(tok) = self.peek().filter(|t| t.kind == TokenKind::Name) {
            // A keyword on the next line starts the next definition (`plan` left without its
            // block), so it is not taken as this definition's name.
            if !(TOP_WORDS.contains(&self.slice(tok.span)) && self.newline_before(tok)) {
                self.bump_as(Slot::DefName);
                name = Some(self.ident(tok));
            }
        }
        let needs_name = matches!(kind, DefKind::Model | DefKind::Gpu | DefKind::Scenario);
        let header_ok = matches!(self.peek_kind(), Some(TokenKind::Lt | TokenKind::Colon));
        if name.is_none() && needs_name && header_ok {
            self.report(ParseProblem::MissingDefName {
                span: kw.span,
                kind,
            });
        }
        let mut base = None;
        if let Some(colon) = self.peek().filter(|t| t.kind == TokenKind::Colon) {
            self.bump();
            match self.peek() {
                Some(t) if t.kind == TokenKind::Name => {
                    self.bump_as(Slot::DefBase);
                    base = Some(self.ident(t));
                }
                found => {
                    let span = found.map_or(colon.span, |t| t.span);
                    self.report(ParseProblem::MissingBase { span, kind });
                }
            }
        }
        if self.peek_kind() != Some(TokenKind::Lt) {
            let header_end = self
                .toks
                .get(self.pos.wrapping_sub(1))
                .map_or(kw.span, |t| t.span);
            let found = self.peek();
            let span = found.map_or(header_end, |t| t.span);
            let header = self.slice(kw.span.to(header_end)).to_string();
            self.report(ParseProblem::MissingBlockOpen {
                span,
                kind,
                found: found.map(|t| self.found(t)),
                header,
            });
            self.recover_top();
            return None;
        }
        let body = self.block(Ctx::Known(BlockKind::Def(kind)), keyword, 1);
        let span = kw.span.to(body.span);
        Some(Def {
            kind,
            kind_span: kw.span,
            name,
            base,
            body,
            span,
        })
    }

    // ---- blocks, items, values ----

    /// `< items >`, with the `<` next. `what` names the block in messages (`model`, `plan`).
    fn block(&mut self, ctx: Ctx, what: &str, depth: usize) -> Block {
        let Some(open) = self.peek() else {
            return Block::default();
        };
        let outer = self.place;
        let parent = match outer.slot {
            Slot::Arg(_) | Slot::InArg(_) => outer.item.map(|item| (item, outer.slot)),
            _ => None,
        };
        let id = BlockId(self.blocks.len() as u32);
        self.blocks.push(BlockRole {
            kind: ctx.kind(),
            open: open.span,
            parent,
            outer: outer.block,
        });
        self.place = Place {
            block: Some(id),
            item: None,
            slot: Slot::Skipped,
        };
        self.bump_as(Slot::Open);
        let block = self.block_body(open, ctx, what, depth);
        self.place = outer;
        block
    }

    /// The items of a block up to its `>`, with its `<` consumed.
    fn block_body(&mut self, open: Token, ctx: Ctx, what: &str, depth: usize) -> Block {
        let mut items = Vec::new();
        loop {
            let Some(tok) = self.peek() else {
                self.unclosed(open, Opened::Block(what.to_string()));
                return Block {
                    items,
                    base: None,
                    span: Span::new(open.span.start as usize, self.end_of_input()),
                };
            };
            if self.starts_definition(tok) {
                if self.closed_at != Some(self.pos) {
                    self.closed_at = Some(self.pos);
                    self.report_unclosed(open, Opened::Block(what.to_string()));
                }
                let end = items.last().map_or(open.span, |i: &Item| i.span);
                return Block {
                    items,
                    base: None,
                    span: open.span.to(end),
                };
            }
            self.ctx = ctx;
            match tok.kind {
                TokenKind::Gt => {
                    self.bump_as(Slot::Close);
                    return Block {
                        items,
                        base: None,
                        span: open.span.to(tok.span),
                    };
                }
                TokenKind::Semi => {
                    self.bump_as(Slot::Semi);
                }
                TokenKind::Comment | TokenKind::Error => {
                    self.bump();
                }
                TokenKind::Name => items.push(self.item(ctx, depth)),
                TokenKind::Colon => {
                    self.report(ParseProblem::ColonInBlock { span: tok.span });
                    self.bump();
                }
                TokenKind::RBracket => self.stray_closers(),
                TokenKind::Lt | TokenKind::LBracket => {
                    self.report(ParseProblem::ExpectedKey {
                        span: tok.span,
                        found: self.found(tok),
                    });
                    self.skip_balanced();
                }
                TokenKind::Number | TokenKind::Quantity | TokenKind::Str => {
                    self.report(ParseProblem::ExpectedKey {
                        span: tok.span,
                        found: self.found(tok),
                    });
                    // The values that follow belong to the same keyless item: one report.
                    while self.peek().is_some_and(|t| is_value_start(t.kind)) {
                        self.value(None, what, depth);
                    }
                }
            }
        }
    }

    /// True when `tok` starts a top-level definition: a keyword at the start of a line
    /// (column 1) followed by a name or `<` (a string for `use`). An unclosed block stops
    /// there, so the next definition is read as one instead of as items of the open block.
    fn starts_definition(&self, tok: Token) -> bool {
        if tok.kind != TokenKind::Name {
            return false;
        }
        let start = tok.span.start as usize;
        let column_one = start == 0 || self.text.as_bytes().get(start - 1) == Some(&b'\n');
        let word = self.slice(tok.span);
        if !column_one || !TOP_WORDS.contains(&word) {
            return false;
        }
        let next = self.toks.get(self.pos + 1).map(|t| t.kind);
        match word {
            "use" => next == Some(TokenKind::Str),
            _ => matches!(next, Some(TokenKind::Name | TokenKind::Lt)),
        }
    }

    /// Reports a block or list left open at the end of input (once per file).
    fn unclosed(&mut self, open: Token, opened: Opened) {
        if self.eof_reported {
            return;
        }
        self.eof_reported = true;
        self.report_unclosed(open, opened);
    }

    /// Reports `open` (a `[` for a list, a `<` for a block) as never closed.
    fn report_unclosed(&mut self, open: Token, opened: Opened) {
        let line = self.line_of(open.span.start);
        self.report(ParseProblem::Unclosed {
            span: open.span,
            opened,
            line,
        });
    }

    /// A key and its arguments, with the key next. Where the item ends is
    /// [`role::continues_item`]: names fill the signature's name slots (a flag's `on`/`off`),
    /// non-name values always stay with the item (`hidden 4096 4096`: `ty` reports E0203).
    fn item(&mut self, ctx: Ctx, depth: usize) -> Item {
        let key_tok = self.peek().unwrap_or(Token {
            kind: TokenKind::Name,
            span: Span::default(),
            unit: None,
        });
        let id = ItemId(self.role_items.len() as u32);
        if let Some(block) = self.place.block {
            self.role_items.push(ItemRole {
                block,
                key: key_tok.span,
                args: Vec::new(),
            });
        }
        let outer = self.place;
        self.place.item = self.place.block.map(|_| id);
        self.bump_as(Slot::Key);
        let key = self.ident(key_tok);
        let mut args = Vec::new();
        self.colon_after_key(&key);
        let sig = ctx.lookup(&key.text);
        while let Some(tok) = self.peek() {
            let takes = match tok.kind {
                TokenKind::Name => role::continues_item_sig(
                    ctx.kind(),
                    sig,
                    args.len(),
                    self.slice(tok.span),
                    self.newline_before(tok),
                ),
                kind => is_value_start(kind),
            };
            if !takes {
                break;
            }
            // A flag's argument and values past the signature have no slot type.
            let slot = sig
                .filter(|s| !s.is_flag())
                .and_then(|s| s.args.get(args.len()).copied());
            self.place.slot = Slot::Arg(args.len() as u32);
            let value = self.value(slot, &key.text, depth);
            let value = match (value, slot) {
                (Some(v), Some(slot)) => Some(self.derived_block(v, slot, &key.text, depth)),
                (v, _) => v,
            };
            let Some(value) = value else { break };
            args.push(value);
        }
        self.place = outer;
        if let Some(item) = self.role_items.get_mut(id.0 as usize) {
            item.args = args.iter().map(|v| v.span).collect();
        }
        let span = args
            .last()
            .map_or(key.span, |v: &Value| key.span.to(v.span));
        Item { key, args, span }
    }

    /// `cluster dgx_h100 < nodes 4 >`: a name in a reference slot followed by a block is one
    /// argument, an inline definition inheriting the name. Any other value is returned as is.
    fn derived_block(&mut self, v: Value, slot: ArgType, what: &str, depth: usize) -> Value {
        let ValueKind::Name(name) = &v.kind else {
            return v;
        };
        let opens_block = self.peek().is_some_and(|t| t.kind == TokenKind::Lt);
        if !matches!(slot, ArgType::Ref(_)) || !opens_block {
            return v;
        }
        let Some(open) = self.peek() else { return v };
        let inner = self.nested(open, Some(slot), what, depth + 1);
        let base = Ident {
            text: name.clone(),
            span: v.span,
        };
        match inner.kind {
            ValueKind::Block(mut block) => {
                block.base = Some(base);
                Value {
                    span: v.span.to(inner.span),
                    kind: ValueKind::Block(block),
                }
            }
            _ => v,
        }
    }

    /// `hidden: 4096`: the colon is reported and skipped, and the item reads on.
    fn colon_after_key(&mut self, key: &Ident) {
        let Some(colon) = self.peek().filter(|t| t.kind == TokenKind::Colon) else {
            return;
        };
        self.bump();
        let next = match self.peek() {
            Some(next) if next.kind != TokenKind::Gt && next.kind != TokenKind::Colon => {
                Some(self.slice(next.span).to_string())
            }
            _ => None,
        };
        self.report(ParseProblem::ColonAfterKey {
            span: colon.span,
            key: key.text.clone(),
            next,
        });
    }

    /// True when a line break separates `tok` (the next token) from the previous token.
    fn newline_before(&self, tok: Token) -> bool {
        let Some(prev) = self.pos.checked_sub(1).and_then(|p| self.toks.get(p)) else {
            return false;
        };
        let gap = self
            .text
            .get(prev.span.end as usize..tok.span.start as usize)
            .unwrap_or("");
        gap.contains('\n')
    }

    /// One value, with its first token next (any value kind, names included). `slot` is the
    /// argument type it fills, if known: it decides the key table of an inline block.
    fn value(&mut self, slot: Option<ArgType>, what: &str, depth: usize) -> Option<Value> {
        let tok = self.peek()?;
        let kind = match tok.kind {
            TokenKind::Number => ValueKind::Number(scan_number(self.slice(tok.span)).0),
            TokenKind::Quantity => {
                let unit_span = tok
                    .unit
                    .unwrap_or(Span::new(tok.span.end as usize, tok.span.end as usize));
                let number_text = self
                    .text
                    .get(tok.span.start as usize..unit_span.start as usize)
                    .unwrap_or("")
                    .trim_end();
                let number = scan_number(number_text).0;
                ValueKind::Quantity {
                    number,
                    unit: self.slice(unit_span).to_string(),
                    unit_span,
                }
            }
            TokenKind::Str => ValueKind::Str(string_contents(self.slice(tok.span)).0),
            TokenKind::Name => ValueKind::Name(self.slice(tok.span).to_string()),
            TokenKind::Lt | TokenKind::LBracket => {
                return Some(self.nested(tok, slot, what, depth + 1))
            }
            _ => return None,
        };
        self.bump();
        Some(Value {
            kind,
            span: tok.span,
        })
    }

    /// A block or list value at nesting level `depth`, with its opening bracket next.
    fn nested(&mut self, open: Token, slot: Option<ArgType>, what: &str, depth: usize) -> Value {
        let is_list = open.kind == TokenKind::LBracket;
        if depth > MAX_DEPTH {
            let nest = if is_list { Nest::List } else { Nest::Block };
            self.report(ParseProblem::TooDeep {
                span: open.span,
                nest,
                depth,
            });
            let end = self.skip_balanced();
            let span = Span::new(open.span.start as usize, end);
            let kind = if is_list {
                ValueKind::List(Vec::new())
            } else {
                ValueKind::Block(Block {
                    items: Vec::new(),
                    base: None,
                    span,
                })
            };
            return Value { kind, span };
        }
        if is_list {
            let (items, span) = self.list(slot, what, depth);
            Value {
                kind: ValueKind::List(items),
                span,
            }
        } else {
            let block = self.block(Ctx::for_slot(slot), what, depth);
            Value {
                span: block.span,
                kind: ValueKind::Block(block),
            }
        }
    }

    /// `[v v ...]`, with the `[` next. A `>` before the `]` means the list was left open in
    /// its block: reported, and the `>` is left to close the block.
    fn list(&mut self, slot: Option<ArgType>, what: &str, depth: usize) -> (Vec<Value>, Span) {
        let outer = self.place.slot;
        if let Slot::Arg(n) = outer {
            self.place.slot = Slot::InArg(n);
        }
        let list = self.list_body(slot, what, depth);
        self.place.slot = outer;
        list
    }

    /// The elements of a list up to its `]`, with the `[` next.
    fn list_body(&mut self, slot: Option<ArgType>, what: &str, depth: usize) -> (Vec<Value>, Span) {
        let Some(open) = self.bump() else {
            return (Vec::new(), Span::default());
        };
        let mut items = Vec::new();
        loop {
            let Some(tok) = self.peek() else {
                self.unclosed(open, Opened::List);
                return (
                    items,
                    Span::new(open.span.start as usize, self.end_of_input()),
                );
            };
            match tok.kind {
                TokenKind::RBracket => {
                    self.bump();
                    return (items, open.span.to(tok.span));
                }
                TokenKind::Gt => {
                    self.report_unclosed(open, Opened::List);
                    let end = items.last().map_or(open.span, |v: &Value| v.span);
                    return (items, open.span.to(end));
                }
                // Newlines separate elements as they separate tokens (LANGUAGE.md), so a list
                // may span lines; a name that cannot be an element (or is a key of the
                // block), or a definition on a new line, starts the next item: the `]` was
                // forgotten.
                _ if self.ends_list(tok, slot)
                    || (self.newline_before(tok) && self.starts_definition(tok)) =>
                {
                    // Before the next definition, the enclosing block reports (once).
                    if !self.starts_definition(tok) {
                        self.report_unclosed(open, Opened::List);
                    }
                    let end = items.last().map_or(open.span, |v: &Value| v.span);
                    return (items, open.span.to(end));
                }
                TokenKind::Semi | TokenKind::Colon => {
                    let separator = if tok.kind == TokenKind::Semi {
                        ';'
                    } else {
                        ':'
                    };
                    self.report(ParseProblem::SeparatorInList {
                        span: tok.span,
                        separator,
                    });
                    self.bump();
                }
                _ => match self.value(slot, what, depth) {
                    Some(v) => items.push(v),
                    None => {
                        self.bump();
                    }
                },
            }
        }
    }
}

impl Builder<'_> {
    /// True when a name in a list of `slot` values cannot be an element: the slot takes no
    /// names, or the name is a key of the enclosing block.
    fn ends_list(&self, tok: Token, slot: Option<ArgType>) -> bool {
        tok.kind == TokenKind::Name
            && (slot.is_some_and(|s| !s.takes_name())
                || self.ctx.lookup(self.slice(tok.span)).is_some())
            && !self.list_closes_later_on_this_line()
    }

    /// True when a `]` closes the open list further on the same line (looking a bounded
    /// number of tokens ahead, so hostile lines stay linear): a name there is a mistyped
    /// element (`tp [1 2 fuor]`), not the next key after a forgotten `]`.
    fn list_closes_later_on_this_line(&self) -> bool {
        const LOOK_AHEAD: usize = 64;
        let mut prev_end = self.toks.get(self.pos).map_or(0, |t| t.span.start as usize);
        for t in self.toks.iter().skip(self.pos).take(LOOK_AHEAD) {
            let gap = self.text.get(prev_end..t.span.start as usize).unwrap_or("");
            if gap.contains('\n') {
                return false;
            }
            match t.kind {
                TokenKind::RBracket => return true,
                TokenKind::Gt | TokenKind::Lt | TokenKind::LBracket => return false,
                _ => prev_end = t.span.end as usize,
            }
        }
        false
    }
}

/// Tokens that start a non-name value: these never end an item.
fn is_value_start(kind: TokenKind) -> bool {
    matches!(
        kind,
        TokenKind::Number
            | TokenKind::Quantity
            | TokenKind::Str
            | TokenKind::Lt
            | TokenKind::LBracket
    )
}
