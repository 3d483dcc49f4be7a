//! The formatter: the text of a `.venus` file → the same file in the one canonical layout.
//!
//! Input: a file's text. Output: the formatted text, or the file's syntax errors (a file with
//! syntax errors is never formatted: the tree would be missing the regions the parser skipped).
//!
//! The layout: top-level definitions separated by one blank line (consecutive `use`s keep
//! their grouping); a block is written on one line with one space inside (`plan < pp 4 dp 4 >`)
//! unless it has more than [`MAX_INLINE_ITEMS`] items, a nested block, a comment, two items of
//! which one takes several arguments, or would be longer than [`MAX_INLINE_WIDTH`]; then it is
//! multi-line, one item per line, indented two spaces per level. In a multi-line block, the
//! values of consecutive single-argument items line up after the longest key, and consecutive
//! items with the same multi-argument key (`dim`) line up column by column. Comments stay
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

/// A block with more items than this is written one item per line.
pub const MAX_INLINE_ITEMS: usize = 3;
/// A block whose one-line form is longer than this (from `<` to `>`) is written multi-line.
pub const MAX_INLINE_WIDTH: usize = 80;
const INDENT: &str = "  ";

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

/// Formats one file. Returns the syntax errors instead when the file has any.
pub fn format(text: &str) -> Result<String, FormatError> {
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
            if let Some(last) = self.lines.last_mut().filter(|l| l.takes_comment) {
                last.text.push_str("  ");
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
        let mut prev_use = false;
        for (i, item) in file.items.iter().enumerate() {
            let start = match item {
                TopItem::Use(u) => u.span.start,
                TopItem::Def(d) => d.span.start,
            };
            let is_use = matches!(item, TopItem::Use(_));
            // Comments trailing the previous item stay on its last line.
            while let Some(c) = self
                .comments
                .get(self.next)
                .filter(|c| c.span.start < start && self.is_trailing(c))
            {
                self.next += 1;
                self.comment(c, 0, true, false);
            }
            if i > 0 && (!(is_use && prev_use) || self.blank_before(self.first_before(start))) {
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
            match item {
                TopItem::Use(u) => {
                    self.cur = format!("use {}", self.slice(u.path_span));
                    self.flush_comments(u.span.end, 0, true);
                    self.finish_line(0);
                }
                TopItem::Def(d) => self.def(d),
            }
            prev_use = is_use;
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

    /// True when the block is written one item per line.
    fn is_multiline(&self, block: &Block) -> bool {
        let items = &block.items;
        if items.len() > MAX_INLINE_ITEMS || self.has_comment_in(block.span) {
            return true;
        }
        if items.iter().any(|i| i.args.iter().any(contains_block)) {
            return true;
        }
        if items.len() >= 2 && items.iter().any(|i| i.args.len() >= 2) {
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
            s.push(' ');
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
    /// holds its `<`. Leaves the line with its `>` open.
    fn block(&mut self, block: &Block, indent: usize) {
        if !self.is_multiline(block) {
            let s = self.inline_block(block);
            self.cur.push_str(&s);
            return;
        }
        self.cur.push('<');
        self.finish_line(indent);
        let inner = indent + 1;
        let pads = self.alignment(block);
        let mut after_open = true;
        for (i, item) in block.items.iter().enumerate() {
            self.flush_comments(item.span.start, inner, true);
            if !after_open && self.blank_before(item.span.start) {
                self.push_blank();
            }
            after_open = false;
            self.cur = INDENT.repeat(inner);
            self.item(item, inner, &pads[i]);
            if let Some(next) = block.items.get(i + 1) {
                if self.needs_semicolon(block, item, &next.key.text, true) {
                    self.cur.push(';');
                }
            }
            self.flush_comments(item.span.end, inner, true);
            self.finish_line(inner);
        }
        self.flush_comments(block.span.end.saturating_sub(1), inner, true);
        self.cur = format!("{}>", INDENT.repeat(indent));
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

    /// The column widths of every item of a multi-line block: for a run of consecutive
    /// single-argument items, the longest key; for a run of consecutive items with the same
    /// key and several arguments each, the widest entry of every column. A run ends at a
    /// blank line, an own-line comment, or an item holding two comments (the second is written
    /// on a line of its own).
    fn alignment(&self, block: &Block) -> Vec<Vec<usize>> {
        let items = &block.items;
        let mut pads = vec![Vec::new(); items.len()];
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
        let mut start = 0;
        while start < items.len() {
            let Some(c) = class(&items[start]) else {
                start += 1;
                continue;
            };
            let mut end = start + 1;
            while let Some(next) = items.get(end) {
                let prev = &items[end - 1];
                // At most one comment from `prev`'s start to `next`: only the first of the
                // comments inside an item can trail its line, the others are written on lines
                // of their own after it, which break the run when formatted again.
                let joined = class(next) == Some(c)
                    && !self.blank_before(next.span.start)
                    && !self.own_line_comment_between(prev.span.end, next.span.start)
                    && self.comments_between(prev.span.start, next.span.start) <= 1;
                if !joined {
                    break;
                }
                end += 1;
            }
            if end - start >= 2 {
                let run = &items[start..end];
                let cells: Vec<Vec<String>> = run
                    .iter()
                    .map(|i| {
                        std::iter::once(i.key.text.clone())
                            .chain(i.args.iter().map(|v| self.inline_value(v)))
                            .collect()
                    })
                    .collect();
                let columns = cells.iter().map(Vec::len).max().unwrap_or(0);
                let widths: Vec<usize> = (0..columns)
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
