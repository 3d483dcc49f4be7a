//! The formatter: the text of a `.venus` file → the same file in the one canonical layout.
//!
//! Input: a file's text. Output: the formatted text, or the file's syntax errors (a file with
//! syntax errors is never formatted: the tree would be missing the regions the parser skipped).
//!
//! The layout keeps the author's grouping: top-level definitions separated by one blank line
//! (consecutive `use`s keep their grouping); a block written on one line stays on one line,
//! with one space inside (`plan < pp 4 dp 4 >`), while it is at most [`MAX_INLINE_WIDTH`]
//! long and holds no comment; otherwise it is multi-line, indented two spaces per level, and
//! the items the author wrote on one line stay on one line (two spaces apart where the author
//! put two or more, else one). Only what already is a column is aligned: consecutive lines of
//! one item each whose arguments start at the same source columns are padded to the widest
//! entry of each column; elsewhere one space separates a key from its arguments. Comments stay
//! (own-line and trailing), blank lines between groups of items stay (at most one), numbers,
//! units and strings are copied as written, and `;` is written only where the parser needs it
//! to end an item (a key with an open name slot followed by a name on the same line). Which
//! key table each block is read with, and where an item would end, come from the parser's
//! token-role map ([`venus_syntax::syntax::role`]), never from a copy of its rules.
//!
//! Invariants: formatting is idempotent and never changes meaning: [`format`] re-parses its
//! own output and refuses (with [`FormatError::Unstable`]) unless the tree, spans aside, and
//! the comments are the same as the input's.

use venus_diag::diag::{Diagnostic, FileId, Span};
use venus_syntax::syntax::ast::{self, Block, Comment, Def, Item, TopItem, Value, ValueKind};
use venus_syntax::syntax::role::{self, Roles};
use venus_syntax::syntax::schema::BlockKind;

/// A block whose one-line form is longer than this (from `<` to `>`) is written multi-line.
pub const MAX_INLINE_WIDTH: usize = 100;
const INDENT: &str = "  ";
/// The most spaces kept before a trailing comment.
const MAX_COMMENT_GAP: usize = 60;

/// Why a file was not formatted.
#[derive(Clone, Debug, PartialEq)]
pub enum FormatError {
    /// The file has syntax errors (E0001–E0003): they are returned, the file is left alone.
    Syntax(Vec<Diagnostic>),
    /// The formatted text would not parse to the same tree (a formatter bug, never expected):
    /// the file is left alone rather than changed in meaning.
    Unstable(String),
}

impl std::fmt::Display for FormatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FormatError::Syntax(d) => write!(f, "{} syntax error(s)", d.len()),
            FormatError::Unstable(why) => write!(f, "formatting would change the file: {why}"),
        }
    }
}

/// The comment line that leaves a file as written (a test fixture of unusual layouts).
pub const SKIP_DIRECTIVE: &str = "# venusc: fmt skip";

/// Formats one file. Returns the syntax errors instead when the file has any. A file with a
/// line reading [`SKIP_DIRECTIVE`] is returned as it is.
pub fn format(text: &str) -> Result<String, FormatError> {
    if text.lines().any(|l| l.trim_end() == SKIP_DIRECTIVE) {
        return Ok(text.to_string());
    }
    let parsed = venus_syntax::syntax::parse(text, FileId::default());
    let errors: Vec<Diagnostic> = parsed
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .cloned()
        .collect();
    if !errors.is_empty() {
        return Err(FormatError::Syntax(errors));
    }
    let out = Printer::new(text, &parsed.file.comments, &parsed.roles).file(&parsed.file);
    let again = venus_syntax::syntax::parse(&out, FileId::default());
    if let Some(d) = again.diagnostics.iter().find(|d| d.is_error()) {
        return Err(FormatError::Unstable(format!(
            "the output has a syntax error: {}",
            d.message
        )));
    }
    if !equivalent(&parsed.file, &again.file) {
        return Err(FormatError::Unstable(
            "the output parses to a different tree".into(),
        ));
    }
    Ok(out)
}

/// True when two trees are the same apart from spans (items, keys, values and comment texts).
pub fn equivalent(a: &ast::File, b: &ast::File) -> bool {
    let (mut a, mut b) = (a.clone(), b.clone());
    strip_file(&mut a);
    strip_file(&mut b);
    a == b
}

fn strip_file(f: &mut ast::File) {
    for c in &mut f.comments {
        c.span = Span::default();
        c.text = c.text.trim_end().to_string();
    }
    for item in &mut f.items {
        match item {
            TopItem::Use(u) => {
                u.span = Span::default();
                u.path_span = Span::default();
            }
            TopItem::Def(d) => {
                d.kind_span = Span::default();
                d.span = Span::default();
                for id in d.name.iter_mut().chain(d.base.iter_mut()) {
                    id.span = Span::default();
                }
                strip_block(&mut d.body);
            }
        }
    }
}

/// Clears the spans of a block with an explicit stack (no recursion on user nesting).
fn strip_block(block: &mut Block) {
    let mut stack: Vec<&mut Block> = vec![block];
    while let Some(b) = stack.pop() {
        b.span = Span::default();
        if let Some(base) = &mut b.base {
            base.span = Span::default();
        }
        for item in &mut b.items {
            item.span = Span::default();
            item.key.span = Span::default();
            let mut values: Vec<&mut Value> = item.args.iter_mut().collect();
            while let Some(v) = values.pop() {
                v.span = Span::default();
                match &mut v.kind {
                    ValueKind::Quantity { unit_span, .. } => *unit_span = Span::default(),
                    ValueKind::List(vs) => values.extend(vs.iter_mut()),
                    ValueKind::Block(inner) => stack.push(inner),
                    _ => {}
                }
            }
        }
    }
}

/// The author's layout of a multi-line block ([`Printer::block_layout`]).
#[derive(Clone, Copy, Debug, Default)]
struct BlockLayout {
    opener_holds_items: bool,
    closer_follows_items: bool,
    /// The source column of the lines after the first, when the first items share the `<`
    /// line.
    continuation: Option<usize>,
}

/// A finished output line.
struct Line {
    text: String,
    /// A trailing comment may still be appended.
    takes_comment: bool,
    /// The line opens a multi-line block: no blank line may follow it.
    opener: bool,
}

struct Printer<'t> {
    text: &'t str,
    comments: &'t [Comment],
    /// The parser's roles for `text`: the key table of every block.
    roles: &'t Roles,
    /// The next comment not yet written.
    next: usize,
    lines: Vec<Line>,
    /// The line being built (indentation included); empty when at a line start.
    cur: String,
    /// Comments met while `cur` was open: written when it ends (the first as a trailing one).
    pending: Vec<&'t Comment>,
}

impl<'t> Printer<'t> {
    fn new(text: &'t str, comments: &'t [Comment], roles: &'t Roles) -> Printer<'t> {
        Printer {
            text,
            comments,
            roles,
            next: 0,
            lines: Vec::new(),
            cur: String::new(),
            pending: Vec::new(),
        }
    }

    fn slice(&self, span: Span) -> &'t str {
        self.text.get(span.range()).unwrap_or("")
    }

    /// The key table the parser read `block` with (`None`: a block of unknown keys).
    fn kind(&self, block: &Block) -> Option<BlockKind> {
        self.roles.kind_of_block_at(block.span.start)
    }

    /// True when `next_key`, written after `item` of `block` (on the same line unless
    /// `newline`), would be read as one of `item`'s arguments: the item must then end with `;`.
    fn needs_semicolon(&self, block: &Block, item: &Item, next_key: &str, newline: bool) -> bool {
        let kind = self.kind(block);
        role::continues_item(kind, &item.key.text, item.args.len(), next_key, newline)
    }

    // ---- source facts ----

    /// True when a blank line separates `pos` from the previous token or comment.
    fn blank_before(&self, pos: u32) -> bool {
        let before = self.text.get(..pos as usize).unwrap_or("");
        let gap = &before[before.trim_end().len()..];
        gap.bytes().filter(|&b| b == b'\n').count() >= 2
    }

    /// True when code precedes the comment on its line.
    fn is_trailing(&self, c: &Comment) -> bool {
        let before = self.text.get(..c.span.start as usize).unwrap_or("");
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        !before[line_start..].trim().is_empty()
    }

    /// True when a comment lies strictly inside `span`.
    fn has_comment_in(&self, span: Span) -> bool {
        let i = self
            .comments
            .partition_point(|c| c.span.start <= span.start);
        self.comments
            .get(i)
            .is_some_and(|c| c.span.start < span.end)
    }

    /// True when an own-line comment lies between two positions.
    fn own_line_comment_between(&self, from: u32, to: u32) -> bool {
        let i = self.comments.partition_point(|c| c.span.start < from);
        self.comments[i..]
            .iter()
            .take_while(|c| c.span.start < to)
            .any(|c| !self.is_trailing(c))
    }

    /// How many comments start in `from..to`.
    fn comments_between(&self, from: u32, to: u32) -> usize {
        let i = self.comments.partition_point(|c| c.span.start < from);
        self.comments[i..]
            .iter()
            .take_while(|c| c.span.start < to)
            .count()
    }

    // ---- output ----

    fn push_line(&mut self, text: String, takes_comment: bool) {
        self.lines.push(Line {
            text,
            takes_comment,
            opener: false,
        });
    }

    /// One blank line, unless at the start of the output, after another blank line or
    /// directly after a block's opening line.
    fn push_blank(&mut self) {
        if self
            .lines
            .last()
            .is_some_and(|l| !l.text.is_empty() && !l.opener)
        {
            self.push_line(String::new(), false);
        }
    }

    /// Ends the open line, then writes the comments met while it was open.
    fn finish_line(&mut self, indent: usize) {
        let text = std::mem::take(&mut self.cur);
        let opener = text.ends_with('<');
        self.push_line(text.trim_end().to_string(), true);
        if let Some(last) = self.lines.last_mut() {
            last.opener = opener;
        }
        let pending = std::mem::take(&mut self.pending);
        for (i, c) in pending.into_iter().enumerate() {
            self.comment(c, indent, i == 0, false);
        }
    }

    /// Writes one comment: appended to the last line when it trails code there (and `trailing`
    /// allows it), otherwise on its own line at `indent`.
    fn comment(&mut self, c: &Comment, indent: usize, trailing: bool, keep_blank: bool) {
        let text = c.text.trim_end();
        if trailing {
            let gap = self.comment_gap(c);
            if let Some(last) = self.lines.last_mut().filter(|l| l.takes_comment) {
                last.text.push_str(&gap);
                last.text.push_str(text);
                last.takes_comment = false;
                return;
            }
        }
        if keep_blank && self.blank_before(c.span.start) {
            self.push_blank();
        }
        self.push_line(format!("{}{text}", INDENT.repeat(indent)), false);
    }

    /// The spaces before a trailing comment: the author's (a column of comments stays a
    /// column), at most [`MAX_COMMENT_GAP`]; two when none.
    fn comment_gap(&self, c: &Comment) -> String {
        let before = self.text.get(..c.span.start as usize).unwrap_or("");
        let n = before.len() - before.trim_end_matches(' ').len();
        match n {
            1..=MAX_COMMENT_GAP => " ".repeat(n),
            _ => "  ".to_string(),
        }
    }

    /// Writes (or defers, while a line is open) every comment that starts before `upto`.
    fn flush_comments(&mut self, upto: u32, indent: usize, allow_trailing: bool) {
        while let Some(c) = self.comments.get(self.next).filter(|c| c.span.start < upto) {
            self.next += 1;
            if !self.cur.is_empty() {
                self.pending.push(c);
            } else {
                let trailing = allow_trailing && self.is_trailing(c);
                self.comment(c, indent, trailing, true);
            }
        }
    }

    // ---- the file ----

    fn file(mut self, file: &ast::File) -> String {
        for (i, item) in file.items.iter().enumerate() {
            let start = match item {
                TopItem::Use(u) => u.span.start,
                TopItem::Def(d) => d.span.start,
            };
            // Comments trailing the previous item stay on its last line.
            while let Some(c) = self
                .comments
                .get(self.next)
                .filter(|c| c.span.start < start && self.is_trailing(c))
            {
                self.next += 1;
                self.comment(c, 0, true, false);
            }
            // The author's blank lines between top-level items stay (at most one); a
            // definition right after another stays right after it.
            if i > 0 && self.blank_before(self.first_before(start)) {
                self.push_blank();
            }
            // Own-line comments before the item belong to it.
            while let Some(c) = self
                .comments
                .get(self.next)
                .filter(|c| c.span.start < start)
            {
                self.next += 1;
                self.comment(c, 0, false, true);
            }
            // A blank line between those comments and the item stays too.
            if self.lines.last().is_some_and(|l| !l.text.is_empty()) && self.blank_before(start) {
                self.push_blank();
            }
            match item {
                TopItem::Use(u) => {
                    self.cur = format!("use {}", self.slice(u.path_span));
                    self.flush_comments(u.span.end, 0, true);
                    self.finish_line(0);
                }
                TopItem::Def(d) => self.def(d),
            }
        }
        self.flush_comments(u32::MAX, 0, true);
        let mut out = String::new();
        for line in &self.lines {
            out.push_str(&line.text);
            out.push('\n');
        }
        if out.trim().is_empty() {
            return String::new();
        }
        out
    }

    /// The start of the first comment in the gap before `start`, or `start`.
    fn first_before(&self, start: u32) -> u32 {
        self.comments
            .get(self.next)
            .filter(|c| c.span.start < start)
            .map_or(start, |c| c.span.start)
    }

    fn def(&mut self, d: &Def) {
        // Comments inside the header (`model # x` NEWLINE `m < ... >`) go before it.
        self.flush_comments(d.body.span.start, 0, false);
        let mut head = d.kind.keyword().to_string();
        if let Some(name) = &d.name {
            head.push(' ');
            head.push_str(&name.text);
        }
        if let Some(base) = &d.base {
            head.push_str(" : ");
            head.push_str(&base.text);
        }
        head.push(' ');
        self.cur = head;
        self.block(&d.body, 0);
        self.flush_comments(d.span.end, 0, true);
        self.finish_line(0);
    }

    // ---- blocks, items, values ----

    /// True when the block is written over several lines: the author wrote it so (its `<` and
    /// `>` on different lines, and it has items), or it holds a comment, or its one-line form
    /// would be longer than [`MAX_INLINE_WIDTH`]. A block written on one line stays one line
    /// while it is short.
    fn is_multiline(&self, block: &Block) -> bool {
        if self.has_comment_in(block.span) {
            return true;
        }
        if block.items.is_empty() {
            return false;
        }
        if self.slice(block.span).contains('\n') {
            return true;
        }
        self.inline_block(block).len() > MAX_INLINE_WIDTH
    }

    /// The one-line form of a block without comments or nested blocks: `< a 1 b 2 >`.
    fn inline_block(&self, block: &Block) -> String {
        if block.items.is_empty() {
            return "< >".into();
        }
        let mut s = String::from("<");
        for (i, item) in block.items.iter().enumerate() {
            s.push_str(if i == 0 {
                " "
            } else {
                self.gap_before(item.span.start)
            });
            s.push_str(&self.inline_item(item));
            if let Some(next) = block.items.get(i + 1) {
                if self.needs_semicolon(block, item, &next.key.text, false) {
                    s.push(';');
                }
            }
        }
        s.push_str(" >");
        s
    }

    fn inline_item(&self, item: &Item) -> String {
        let mut s = item.key.text.clone();
        for v in &item.args {
            s.push(' ');
            s.push_str(&self.inline_value(v));
        }
        s
    }

    /// A value on one line. Blocks inside values here have no comments and no nesting
    /// (otherwise the enclosing block would be multi-line and use [`Printer::value`]); the
    /// depth is bounded by the parser's nesting limit.
    fn inline_value(&self, v: &Value) -> String {
        match &v.kind {
            ValueKind::List(vs) => {
                let parts: Vec<String> = vs.iter().map(|e| self.inline_value(e)).collect();
                format!("[{}]", parts.join(" "))
            }
            ValueKind::Block(b) => format!("{}{}", base_prefix(b), self.inline_block(b)),
            _ => self.slice(v.span).to_string(),
        }
    }

    /// Writes a block at the end of the open line; `indent` is the level of the line that
    /// holds its `<`. Leaves the line with its `>` open. A multi-line block keeps the author's
    /// lines: the items written on one line stay on one line (two spaces apart where the
    /// author put two or more, else one), each line indented one level.
    fn block(&mut self, block: &Block, indent: usize) {
        if !self.is_multiline(block) {
            let s = self.inline_block(block);
            self.cur.push_str(&s);
            return;
        }
        let inner = indent + 1;
        // A block the author wrote on one line that is too long to stay one: an item a line.
        let one_line = !self.slice(block.span).contains('\n');
        let groups = match one_line {
            true => (0..block.items.len()).map(|i| vec![i]).collect(),
            false => self.line_groups(block),
        };
        let pads = self.alignment(block, &groups);
        let layout = match one_line {
            true => BlockLayout::default(),
            false => self.block_layout(block, &groups, inner),
        };
        if layout.opener_holds_items {
            self.cur.push_str("< ");
        } else {
            self.cur.push('<');
            self.finish_line(indent);
        }
        // Where the lines after the first start: where the author put them when the first
        // items share the `<` line (hung under the first item, or a deeper indent), else one
        // indentation level in.
        let continuation = match layout.continuation {
            Some(column) => " ".repeat(column),
            None => INDENT.repeat(inner),
        };
        let mut after_open = true;
        for (g, group) in groups.iter().enumerate() {
            let Some(&first) = group.first() else {
                continue;
            };
            let first_item = &block.items[first];
            if !(g == 0 && layout.opener_holds_items) {
                self.flush_comments(first_item.span.start, inner, true);
                if !after_open && self.blank_before(first_item.span.start) {
                    self.push_blank();
                }
                self.cur = continuation.clone();
            }
            after_open = false;
            for (k, &i) in group.iter().enumerate() {
                let item = &block.items[i];
                if k > 0 {
                    let gap = self.gap_before(item.span.start);
                    self.cur.push_str(gap);
                }
                let pad: &[usize] = if group.len() == 1 { &pads[g] } else { &[] };
                self.item(item, inner, pad);
                if let Some(next) = block.items.get(i + 1) {
                    let same_line = group.get(k + 1).is_some();
                    if self.needs_semicolon(block, item, &next.key.text, !same_line) {
                        self.cur.push(';');
                    }
                }
            }
            let last = &block.items[*group.last().unwrap_or(&first)];
            if g + 1 == groups.len() && layout.closer_follows_items {
                // `... last_item >`: the line stays open for what follows the block.
                self.cur.push_str(" >");
                return;
            }
            self.flush_comments(last.span.end, inner, true);
            self.finish_line(inner);
        }
        self.flush_comments(block.span.end.saturating_sub(1), inner, true);
        self.cur = format!("{}>", INDENT.repeat(indent));
    }

    /// How the author laid out a multi-line block: items on the `<` line, the `>` right after
    /// the last item, and where the lines after the first start.
    fn block_layout(&self, block: &Block, groups: &[Vec<usize>], inner: usize) -> BlockLayout {
        let (Some(first), Some(last)) = (block.items.first(), block.items.last()) else {
            return BlockLayout::default();
        };
        let no_newline = |from: u32, to: u32| {
            self.text
                .get(from as usize..to as usize)
                .is_some_and(|gap| !gap.contains('\n'))
        };
        let close = block.span.end.saturating_sub(1);
        let opener_holds_items = no_newline(block.span.start, first.span.start);
        let closer_follows_items = no_newline(last.span.end, close)
            && self.comments_between(last.span.end, close) == 0
            && self.text.get(close as usize..block.span.end as usize) == Some(">")
            && !last.args.iter().any(|v| self.holds_multiline_block(v));
        let second = groups
            .get(1)
            .and_then(|g| g.first())
            .map(|&i| &block.items[i]);
        // At most the first item's column (a deeper continuation would read as an argument),
        // and at least one indentation level in (else the standard indentation).
        let continuation = second
            .filter(|_| opener_holds_items)
            .map(|s| self.column(s.span.start).min(self.column(first.span.start)))
            .filter(|&c| c >= INDENT.len() * inner);
        BlockLayout {
            opener_holds_items,
            closer_follows_items,
            continuation,
        }
    }

    /// The items of a multi-line block grouped by the source line they start on: consecutive
    /// items on one line, with no comment between them, form one output line. An item that
    /// holds a multi-line block ends its line.
    fn line_groups(&self, block: &Block) -> Vec<Vec<usize>> {
        let mut groups: Vec<Vec<usize>> = Vec::new();
        for (i, item) in block.items.iter().enumerate() {
            let joins = i > 0 && {
                let prev = &block.items[i - 1];
                let between = self
                    .text
                    .get(prev.span.end as usize..item.span.start as usize);
                between.is_some_and(|g| !g.contains('\n'))
                    && self.comments_between(prev.span.end, item.span.start) == 0
                    && !prev.args.iter().any(|v| self.holds_multiline_block(v))
            };
            match groups.last_mut() {
                Some(g) if joins => g.push(i),
                _ => groups.push(vec![i]),
            }
        }
        groups
    }

    /// True when a value is or holds a block written over several lines.
    fn holds_multiline_block(&self, v: &Value) -> bool {
        let mut stack = vec![v];
        while let Some(v) = stack.pop() {
            match &v.kind {
                ValueKind::Block(b) if self.is_multiline(b) => return true,
                ValueKind::List(vs) => stack.extend(vs),
                _ => {}
            }
        }
        false
    }

    /// The separator before an item that shares its line with the previous one: two spaces
    /// where the author wrote two or more (`hidden 4096  ffn 16384`), else one.
    fn gap_before(&self, start: u32) -> &'static str {
        let before = self.text.get(..start as usize).unwrap_or("");
        let spaces = before.len() - before.trim_end_matches([' ', '\t']).len();
        if spaces >= 2 {
            "  "
        } else {
            " "
        }
    }

    /// The column of `pos` on its source line.
    fn column(&self, pos: u32) -> usize {
        let before = self.text.get(..pos as usize).unwrap_or("");
        before.len() - before.rfind('\n').map_or(0, |i| i + 1)
    }

    /// Writes one item of a multi-line block into the open line, padding key and arguments
    /// to the widths in `pad` (one per written part: key first).
    fn item(&mut self, item: &Item, indent: usize, pad: &[usize]) {
        let pad_to = |s: &mut String, text: &str, width: Option<&usize>| {
            s.push_str(text);
            if let Some(&w) = width {
                s.extend(std::iter::repeat_n(' ', w.saturating_sub(text.len())));
            }
        };
        let mut cur = std::mem::take(&mut self.cur);
        let key_width = if item.args.is_empty() {
            None
        } else {
            pad.first()
        };
        pad_to(&mut cur, &item.key.text, key_width);
        self.cur = cur;
        for (i, v) in item.args.iter().enumerate() {
            self.cur.push(' ');
            if contains_block(v) {
                self.value(v, indent);
            } else {
                let text = self.inline_value(v);
                let width = if i + 1 < item.args.len() {
                    pad.get(i + 1)
                } else {
                    None
                };
                let mut cur = std::mem::take(&mut self.cur);
                pad_to(&mut cur, &text, width);
                self.cur = cur;
            }
        }
    }

    /// A value that contains a block, into the open line.
    fn value(&mut self, v: &Value, indent: usize) {
        match &v.kind {
            ValueKind::Block(b) => {
                self.flush_comments(b.span.start, indent, true);
                self.cur.push_str(&base_prefix(b));
                self.block(b, indent);
            }
            ValueKind::List(vs) => {
                self.cur.push('[');
                for (i, e) in vs.iter().enumerate() {
                    if i > 0 {
                        self.cur.push(' ');
                    }
                    if contains_block(e) {
                        self.value(e, indent);
                    } else {
                        let s = self.inline_value(e);
                        self.cur.push_str(&s);
                    }
                }
                self.cur.push(']');
            }
            _ => {
                let s = self.slice(v.span);
                self.cur.push_str(s);
            }
        }
    }

    /// The column widths of each line (group) of a multi-line block. Only what already is a
    /// column is aligned: a run of consecutive lines that hold one item each, of one class
    /// (single-argument items; or items with the same key and several arguments each), whose
    /// arguments start at the same source columns. Such a run gets the widths of its widest
    /// entries (so the columns stay columns, as narrow as they can be); every other line is
    /// written with one space between key and arguments. A run ends at a blank line, an
    /// own-line comment, or an item holding two comments (the second is written on a line of
    /// its own).
    fn alignment(&self, block: &Block, groups: &[Vec<usize>]) -> Vec<Vec<usize>> {
        let items = &block.items;
        let mut pads = vec![Vec::new(); groups.len()];
        fn class(i: &Item) -> Option<(usize, &str)> {
            let scalar = !i.args.iter().any(contains_block);
            if !scalar || i.args.is_empty() {
                None
            } else if i.args.len() == 1 {
                Some((1, ""))
            } else {
                Some((2, i.key.text.as_str()))
            }
        }
        let single = |g: usize| match groups[g].as_slice() {
            [i] => Some(&items[*i]),
            _ => None,
        };
        let columns =
            |i: &Item| -> Vec<usize> { i.args.iter().map(|v| self.column(v.span.start)).collect() };
        let mut start = 0;
        while start < groups.len() {
            let Some(c) = single(start).and_then(class) else {
                start += 1;
                continue;
            };
            let mut end = start + 1;
            while end < groups.len() {
                let (Some(next), Some(prev)) = (single(end), single(end - 1)) else {
                    break;
                };
                let joined = class(next) == Some(c)
                    && columns(next) == columns(prev)
                    && !self.blank_before(next.span.start)
                    && !self.own_line_comment_between(prev.span.end, next.span.start)
                    && self.comments_between(prev.span.start, next.span.start) <= 1;
                if !joined {
                    break;
                }
                end += 1;
            }
            if end - start >= 2 {
                let cells: Vec<Vec<String>> = (start..end)
                    .filter_map(single)
                    .map(|i| {
                        std::iter::once(i.key.text.clone())
                            .chain(i.args.iter().map(|v| self.inline_value(v)))
                            .collect()
                    })
                    .collect();
                let width = cells.iter().map(Vec::len).max().unwrap_or(0);
                let widths: Vec<usize> = (0..width)
                    .map(|col| {
                        cells
                            .iter()
                            .filter_map(|r| r.get(col).map(String::len))
                            .max()
                            .unwrap_or(0)
                    })
                    .collect();
                for pad in &mut pads[start..end] {
                    *pad = widths.clone();
                }
            }
            start = end;
        }
        pads
    }
}

/// `NAME ` before the `<` of an inline block that inherits `NAME`, else nothing.
fn base_prefix(b: &Block) -> String {
    b.base
        .as_ref()
        .map_or_else(String::new, |base| format!("{} ", base.text))
}

/// True when a value is or holds a block.
fn contains_block(v: &Value) -> bool {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match &v.kind {
            ValueKind::Block(_) => return true,
            ValueKind::List(vs) => stack.extend(vs),
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests;
