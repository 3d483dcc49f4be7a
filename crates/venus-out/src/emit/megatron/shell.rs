//! The part of shell a Megatron-LM launch script uses: words, quotes, comments, line
//! continuations, variables, arrays and command separators.
//!
//! Input: the script's text. Output: its [`Command`]s, each a list of [`Word`]s with the byte
//! span that wrote them; assignments (`TP=8`, `export TP=8`, `ARGS=( --a 1 )`) are applied,
//! not returned. Expansion: `$X`, `${X}`, `${X:-8}` (and `-`, `:=`, `=`), `${X[@]}`; an unquoted
//! expansion splits into the words of the value, a quoted one is one word. A variable the
//! script does not set (`$MASTER_ADDR`, `$(hostname)`, `$1`) leaves its word *unresolved*:
//! that is an error only where the importer needs the word's value.
//! Not shell: `|`, `;` and `&` separate commands only at the start of a word, so the
//! published tables' unquoted `--pipeline-model-parallel-layout Et|(tt|)*30L` stays one word;
//! redirections (`> log`, `2>&1`) are dropped with their target.
//! Invariants: never panics; time linear in the input plus the expanded words, which are capped
//! at [`MAX_WORDS`] (a self-doubling `A="$A $A"` is an error, not an exhausted memory).

use std::collections::BTreeMap;

use venus_diag::diag::Span;

/// The most words all expansions together may produce.
pub const MAX_WORDS: usize = 200_000;
/// The longest word an expansion may build (bytes): far above any flag value.
pub const MAX_WORD_BYTES: usize = 1 << 20;

/// One word of a command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Word {
    pub text: String,
    /// Where the word was written (for an expanded value: where the value's word was written
    /// in its assignment).
    pub span: Span,
    /// The first variable the word names that the script does not set, and where.
    pub unresolved: Option<(String, Span)>,
}

/// One simple command: its words after assignments and redirections.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Command {
    pub words: Vec<Word>,
}

/// Why the text is not a script this reader understands: what the reader found and where,
/// never its wording (`problem.rs` writes that, so no caller reads text to learn the kind).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShellProblem {
    /// The text ends inside a quote, `${`, `$(` or backquote; `span` is its opening character.
    Unterminated { open: Opening, span: Span },
    /// The text ends inside an array `NAME=( ...`; `span` runs from the name to the end.
    UnclosedArray { span: Span },
    /// A word's expansion takes the script past [`MAX_WORDS`] words.
    TooManyWords { span: Span },
    /// The assignment of `name` takes the script past [`MAX_WORDS`] words.
    AssignmentTooManyWords { name: String, span: Span },
    /// An expansion grows one word past [`MAX_WORD_BYTES`] bytes.
    WordTooLong { span: Span },
}

impl ShellProblem {
    /// Where the problem was found in the script.
    pub fn span(&self) -> Span {
        match self {
            ShellProblem::Unterminated { span, .. }
            | ShellProblem::UnclosedArray { span }
            | ShellProblem::TooManyWords { span }
            | ShellProblem::AssignmentTooManyWords { span, .. }
            | ShellProblem::WordTooLong { span } => *span,
        }
    }
}

/// A construct that must be closed: a quote, `${...}`, `$(...)` or a backquote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opening {
    SingleQuote,
    DoubleQuote,
    Backquote,
    /// `${`
    Brace,
    /// `$(`
    Paren,
}

impl Opening {
    /// The character that opens it (after the `$` for `${` and `$(`).
    pub fn open(self) -> char {
        match self {
            Opening::SingleQuote => '\'',
            Opening::DoubleQuote => '"',
            Opening::Backquote => '`',
            Opening::Brace => '{',
            Opening::Paren => '(',
        }
    }

    /// The character that closes it.
    pub fn close(self) -> char {
        match self {
            Opening::Brace => '}',
            Opening::Paren => ')',
            q => q.open(),
        }
    }
}

/// The commands of `text`.
pub fn commands(text: &str) -> Result<Vec<Command>, ShellProblem> {
    let mut r = Reader {
        text,
        pos: 0,
        vars: BTreeMap::new(),
        produced: 0,
        arrays: 0,
    };
    r.script()
}

struct Reader<'a> {
    text: &'a str,
    pos: usize,
    vars: BTreeMap<String, Vec<Word>>,
    produced: usize,
    /// Open `( ... )` arrays: a `)` at depth 0 of a word closes one.
    arrays: usize,
}

/// A word being read: its text, where it started, and whether it holds anything (an empty
/// quoted string `""` is a word; nothing at all is not).
struct Building {
    text: String,
    start: usize,
    present: bool,
    unresolved: Option<(String, Span)>,
    /// Words an unquoted expansion split off, when the expansion was the whole word.
    split: Option<Vec<Word>>,
}

impl Reader<'_> {
    fn peek(&self) -> Option<char> {
        self.text[self.pos..].chars().next()
    }
    fn peek2(&self) -> Option<char> {
        let mut it = self.text[self.pos..].chars();
        it.next();
        it.next()
    }
    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn script(&mut self) -> Result<Vec<Command>, ShellProblem> {
        let mut out = Vec::new();
        let mut words: Vec<Word> = Vec::new();
        let mut skip_next = false;
        loop {
            self.blanks();
            let Some(c) = self.peek() else { break };
            match c {
                '\n' | ';' | '|' | '&' => {
                    self.bump();
                    self.finish(&mut words, &mut out);
                }
                '#' => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.bump();
                    }
                }
                '>' | '<' => {
                    while matches!(self.peek(), Some('>' | '<' | '&')) {
                        self.bump();
                    }
                    skip_next = true;
                }
                ')' => {
                    // The end of a subshell or of an array read elsewhere: not a word.
                    self.bump();
                }
                _ => {
                    // A redirection's file descriptor (`2>`): digits right before `>`.
                    if c.is_ascii_digit() && self.fd_redirect() {
                        continue;
                    }
                    let assign_at = self.pos;
                    if words.is_empty() || words.iter().all(|w| is_declare(&w.text)) {
                        if let Some(name) = self.assignment_name() {
                            words.clear();
                            self.assignment(name, assign_at)?;
                            continue;
                        }
                    }
                    let built = self.word()?;
                    if skip_next {
                        skip_next = false;
                        continue;
                    }
                    self.push_built(built, &mut words)?;
                }
            }
        }
        self.finish(&mut words, &mut out);
        Ok(out)
    }

    fn finish(&mut self, words: &mut Vec<Word>, out: &mut Vec<Command>) {
        if !words.is_empty() {
            out.push(Command {
                words: std::mem::take(words),
            });
        }
    }

    fn push_built(&mut self, b: Building, words: &mut Vec<Word>) -> Result<(), ShellProblem> {
        let span = Span::new(b.start, self.pos);
        let new: Vec<Word> = match b.split {
            Some(split) => split,
            None if b.present => vec![Word {
                text: b.text,
                span,
                unresolved: b.unresolved,
            }],
            None => Vec::new(),
        };
        self.produced = self.produced.saturating_add(new.len());
        if self.produced > MAX_WORDS {
            return Err(ShellProblem::TooManyWords { span });
        }
        words.extend(new);
        Ok(())
    }

    /// Spaces, tabs and line continuations.
    fn blanks(&mut self) {
        loop {
            match self.peek() {
                Some(' ' | '\t' | '\r') => {
                    self.bump();
                }
                Some('\\') if matches!(self.peek2(), Some('\n')) => {
                    self.pos += 2;
                }
                Some('\\') if self.text[self.pos..].starts_with("\\\r\n") => {
                    self.pos += 3;
                }
                _ => return,
            }
        }
    }

    fn fd_redirect(&mut self) -> bool {
        let rest = &self.text[self.pos..];
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        if rest[digits..].starts_with(['>', '<']) {
            self.pos += digits;
            return true;
        }
        false
    }

    /// `NAME=` at the reader's position (not consumed unless it is one).
    fn assignment_name(&mut self) -> Option<String> {
        let rest = &self.text[self.pos..];
        let n = rest
            .char_indices()
            .take_while(|&(i, c)| {
                c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit())
            })
            .count();
        let name = &rest[..n];
        let after = &rest[n..];
        let plus = after.starts_with("+=");
        if n == 0 || !(after.starts_with('=') || plus) {
            return None;
        }
        self.pos += n + if plus { 2 } else { 1 };
        Some(name.to_string())
    }

    fn assignment(&mut self, name: String, at: usize) -> Result<(), ShellProblem> {
        let value = if self.peek() == Some('(') {
            self.bump();
            self.arrays += 1;
            let words = self.array(at);
            self.arrays -= 1;
            words?
        } else if matches!(self.peek(), None | Some(' ' | '\t' | '\n' | ';')) {
            Vec::new()
        } else {
            let b = self.word()?;
            let span = Span::new(b.start, self.pos);
            match b.split {
                Some(words) => words,
                None => {
                    // A string value splits into words when it is expanded unquoted; each
                    // keeps the span of its text inside the assignment (inside its quotes).
                    let src = &self.text[span.range()];
                    // Only a value that is one quoted string, quotes at both ends: `"a"𝒢`
                    // has as many bytes as `a𝒢` plus two, but ends inside a character.
                    let quoted = src.len() == b.text.len() + 2
                        && ((src.starts_with('"') && src.ends_with('"'))
                            || (src.starts_with('\'') && src.ends_with('\'')))
                        && src.get(1..src.len() - 1) == Some(b.text.as_str());
                    let span = if quoted {
                        Span::new(span.start as usize + 1, span.end as usize - 1)
                    } else {
                        span
                    };
                    split_value(&b.text, span, b.unresolved)
                }
            }
        };
        self.produced = self.produced.saturating_add(value.len());
        if self.produced > MAX_WORDS {
            return Err(ShellProblem::AssignmentTooManyWords {
                name,
                span: Span::new(at, self.pos),
            });
        }
        self.vars.insert(name, value);
        Ok(())
    }

    /// The words of `( ... )` up to the closing parenthesis.
    fn array(&mut self, at: usize) -> Result<Vec<Word>, ShellProblem> {
        let mut words = Vec::new();
        loop {
            self.blanks();
            match self.peek() {
                None => {
                    return Err(ShellProblem::UnclosedArray {
                        span: Span::new(at, self.pos),
                    })
                }
                Some(')') => {
                    self.bump();
                    return Ok(words);
                }
                Some('\n') => {
                    self.bump();
                }
                Some('#') => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.bump();
                    }
                }
                Some(_) => {
                    let b = self.word()?;
                    self.push_built(b, &mut words)?;
                }
            }
        }
    }

    /// One word: unquoted, quoted and expanded pieces up to a blank or an operator.
    fn word(&mut self) -> Result<Building, ShellProblem> {
        let mut b = Building {
            text: String::new(),
            start: self.pos,
            present: false,
            unresolved: None,
            split: None,
        };
        let mut pieces = 0usize;
        let mut parens = 0usize;
        while let Some(c) = self.peek() {
            if b.text.len() > MAX_WORD_BYTES {
                return Err(ShellProblem::WordTooLong {
                    span: Span::new(b.start, self.pos),
                });
            }
            match c {
                ' ' | '\t' | '\n' | '\r' => break,
                ';' | '>' | '<' if pieces > 0 || b.present => break,
                ')' if parens == 0 && self.arrays > 0 => break,
                '(' | ')' => {
                    self.bump();
                    b.text.push(c);
                    b.present = true;
                    if c == '(' {
                        parens += 1;
                    } else {
                        parens = parens.saturating_sub(1);
                    }
                }
                '\\' => {
                    self.bump();
                    match self.bump() {
                        Some('\n') => {
                            if b.present {
                                break;
                            }
                        }
                        Some(e) => b.text.push(e),
                        None => b.text.push('\\'),
                    }
                    b.present = true;
                }
                '\'' => {
                    let open = self.pos;
                    self.bump();
                    let Some(len) = self.text[self.pos..].find('\'') else {
                        return Err(unterminated(open, self.text.len(), Opening::SingleQuote));
                    };
                    b.text.push_str(&self.text[self.pos..self.pos + len]);
                    self.pos += len + 1;
                    b.present = true;
                }
                '"' => {
                    let open = self.pos;
                    self.bump();
                    self.double_quoted(&mut b, open)?;
                    b.present = true;
                }
                '$' => {
                    let whole = !b.present && pieces == 0;
                    let (value, unresolved) = self.expansion()?;
                    let ends_word =
                        matches!(self.peek(), None | Some(' ' | '\t' | '\n' | '\r' | ';'))
                            || (self.peek() == Some(')') && self.arrays > 0);
                    if b.unresolved.is_none() {
                        b.unresolved = unresolved;
                    }
                    if whole && ends_word {
                        // An unquoted expansion alone is field-split into its value's words;
                        // an unset one stays as an empty word that names the variable.
                        b.split = Some(match (&b.unresolved, value.is_empty()) {
                            (Some(_), true) => vec![Word {
                                text: String::new(),
                                span: Span::new(b.start, self.pos),
                                unresolved: b.unresolved.clone(),
                            }],
                            _ => value,
                        });
                        return Ok(b);
                    }
                    let joined: Vec<&str> = value.iter().map(|w| w.text.as_str()).collect();
                    b.text.push_str(&joined.join(" "));
                    b.present = true;
                }
                '`' => {
                    let open = self.pos;
                    self.bump();
                    let Some(len) = self.text[self.pos..].find('`') else {
                        return Err(unterminated(open, self.text.len(), Opening::Backquote));
                    };
                    self.pos += len + 1;
                    b.unresolved.get_or_insert((
                        "a command substitution".into(),
                        Span::new(open, self.pos),
                    ));
                    b.present = true;
                }
                _ => {
                    self.bump();
                    b.text.push(c);
                    b.present = true;
                }
            }
            pieces += 1;
        }
        Ok(b)
    }

    fn double_quoted(&mut self, b: &mut Building, open: usize) -> Result<(), ShellProblem> {
        loop {
            match self.bump() {
                None => return Err(unterminated(open, self.text.len(), Opening::DoubleQuote)),
                Some('"') => return Ok(()),
                Some('\\') => match self.bump() {
                    Some('\n') => {}
                    Some(e @ ('"' | '\\' | '$' | '`')) => b.text.push(e),
                    Some(e) => {
                        b.text.push('\\');
                        b.text.push(e);
                    }
                    None => return Err(unterminated(open, self.text.len(), Opening::DoubleQuote)),
                },
                Some('$') => {
                    self.pos -= 1;
                    let (value, unresolved) = self.expansion()?;
                    if b.unresolved.is_none() {
                        b.unresolved = unresolved;
                    }
                    let joined: Vec<&str> = value.iter().map(|w| w.text.as_str()).collect();
                    b.text.push_str(&joined.join(" "));
                }
                Some(c) => b.text.push(c),
            }
        }
    }

    /// `$...` at the reader's position: the value's words, or none and the unresolved name.
    #[allow(clippy::type_complexity)]
    fn expansion(&mut self) -> Result<(Vec<Word>, Option<(String, Span)>), ShellProblem> {
        let at = self.pos;
        self.bump(); // `$`
        match self.peek() {
            Some('{') => {
                self.bump();
                let Some(len) = self.text[self.pos..].find('}') else {
                    return Err(unterminated(at, self.text.len(), Opening::Brace));
                };
                let inner = self.text[self.pos..self.pos + len].to_string();
                let inner_at = self.pos;
                self.pos += len + 1;
                let span = Span::new(at, self.pos);
                Ok(self.braced(&inner, inner_at, span))
            }
            Some('(') => {
                // `$(...)`: a command substitution, whose output the importer cannot know.
                let mut depth = 0usize;
                while let Some(c) = self.bump() {
                    match c {
                        '(' => depth += 1,
                        ')' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                if depth != 0 {
                    return Err(unterminated(at, self.text.len(), Opening::Paren));
                }
                Ok((
                    Vec::new(),
                    Some(("a command substitution".into(), Span::new(at, self.pos))),
                ))
            }
            Some(c) if c == '_' || c.is_ascii_alphabetic() => {
                let rest = &self.text[self.pos..];
                let n = rest
                    .find(|c: char| !(c == '_' || c.is_ascii_alphanumeric()))
                    .unwrap_or(rest.len());
                let name = rest[..n].to_string();
                self.pos += n;
                let span = Span::new(at, self.pos);
                Ok(self.lookup(&name, span))
            }
            Some(c) if c.is_ascii_digit() || "@*#?$!-".contains(c) => {
                self.bump();
                let span = Span::new(at, self.pos);
                Ok((Vec::new(), Some((format!("${c}"), span))))
            }
            // A lone `$` is a literal dollar sign.
            _ => Ok((vec![literal("$", Span::new(at, self.pos))], None)),
        }
    }

    #[allow(clippy::type_complexity)]
    fn braced(
        &self,
        inner: &str,
        inner_at: usize,
        span: Span,
    ) -> (Vec<Word>, Option<(String, Span)>) {
        let n = inner
            .find(|c: char| !(c == '_' || c.is_ascii_alphanumeric()))
            .unwrap_or(inner.len());
        let name = &inner[..n];
        let rest = &inner[n..];
        let rest = rest
            .strip_prefix("[@]")
            .or_else(|| rest.strip_prefix("[*]"))
            .unwrap_or(rest);
        for op in [":-", ":=", "-", "="] {
            if let Some(default) = rest.strip_prefix(op) {
                let set = self
                    .vars
                    .get(name)
                    .filter(|v| !(op.starts_with(':') && v.is_empty()));
                return match set {
                    Some(v) => (v.clone(), None),
                    None => {
                        let at = inner_at + n + op.len();
                        let words = split_value(default, Span::new(at, at + default.len()), None);
                        (words, None)
                    }
                };
            }
        }
        if name.is_empty() || !rest.is_empty() {
            return (Vec::new(), Some((format!("${{{inner}}}"), span)));
        }
        self.lookup(name, span)
    }

    fn lookup(&self, name: &str, span: Span) -> (Vec<Word>, Option<(String, Span)>) {
        match self.vars.get(name) {
            Some(v) => (v.clone(), None),
            None => (Vec::new(), Some((format!("${name}"), span))),
        }
    }
}

/// `export`, `declare -x` and the like, before an assignment.
fn is_declare(word: &str) -> bool {
    matches!(
        word,
        "export" | "declare" | "local" | "readonly" | "typeset" | "-x" | "-a" | "-r" | "-g"
    )
}

fn literal(text: &str, span: Span) -> Word {
    Word {
        text: text.to_string(),
        span,
        unresolved: None,
    }
}

/// A string value's words (split at blanks), each with its own span when the value was
/// written as is (`span` covers the value's text), else the whole value's span.
fn split_value(text: &str, span: Span, unresolved: Option<(String, Span)>) -> Vec<Word> {
    let exact = span.end as usize - span.start as usize == text.len();
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices().chain([(text.len(), ' ')]) {
        match (c.is_whitespace(), start) {
            (false, None) => start = Some(i),
            (true, Some(s)) => {
                let at = if exact {
                    Span::new(span.start as usize + s, span.start as usize + i)
                } else {
                    span
                };
                out.push(Word {
                    text: text[s..i].to_string(),
                    span: at,
                    unresolved: unresolved.clone(),
                });
                start = None;
            }
            _ => {}
        }
    }
    out
}

/// `open` at byte `at` is not closed before the text's `end`: the problem points at the
/// opening character (`$` for `${` and `$(`, as before).
fn unterminated(at: usize, end: usize, open: Opening) -> ShellProblem {
    ShellProblem::Unterminated {
        open,
        span: Span::new(at, (at + 1).min(end)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(c: &Command) -> Vec<&str> {
        c.words.iter().map(|w| w.text.as_str()).collect()
    }

    #[test]
    fn continuations_comments_and_quotes_give_one_command() {
        let cmds = commands(
            "# launch\nTP=8\ntorchrun --nproc-per-node 8 \\\n  pretrain_gpt.py --tensor-model-parallel-size $TP \\\n  --data-path 'a b' \"--x=${PP:-4}\" # tail\n",
        )
        .unwrap();
        assert_eq!(cmds.len(), 1);
        assert_eq!(
            texts(&cmds[0]),
            [
                "torchrun",
                "--nproc-per-node",
                "8",
                "pretrain_gpt.py",
                "--tensor-model-parallel-size",
                "8",
                "--data-path",
                "a b",
                "--x=4"
            ]
        );
    }

    #[test]
    fn a_quoted_value_followed_by_a_wide_character_is_read_not_sliced_inside_it() {
        // `"a"𝒢` has the bytes of `a𝒢` plus two, as a value in quotes would: the reader took
        // it for one and cut the source one byte before its end, inside the 4-byte `𝒢`.
        let text = "X=\"a\"\u{1d4a2}\npython pretrain_gpt.py $X\n";
        let cmds = commands(text).unwrap();
        assert_eq!(texts(&cmds[0]), ["python", "pretrain_gpt.py", "a\u{1d4a2}"]);
        assert_eq!(&text[cmds[0].words[2].span.range()], "\"a\"\u{1d4a2}");
    }

    #[test]
    fn arrays_and_string_variables_split_and_keep_the_spans_of_their_words() {
        let text = "ARGS=(\n  --num-layers 32\n)\nMORE=\"--bf16 --swiglu\"\npython pretrain_gpt.py ${ARGS[@]} $MORE\n";
        let cmds = commands(text).unwrap();
        assert_eq!(
            texts(&cmds[0]),
            [
                "python",
                "pretrain_gpt.py",
                "--num-layers",
                "32",
                "--bf16",
                "--swiglu"
            ]
        );
        let w = &cmds[0].words[2];
        assert_eq!(&text[w.span.range()], "--num-layers");
        let w = &cmds[0].words[5];
        assert_eq!(&text[w.span.range()], "--swiglu");
    }

    #[test]
    fn an_unset_variable_leaves_its_word_unresolved_with_its_span() {
        let text = "python pretrain_gpt.py --tensor-model-parallel-size $TP";
        let cmds = commands(text).unwrap();
        let w = &cmds[0].words[3];
        assert_eq!(w.text, "", "an unset variable is an empty word");
        assert_eq!(w.unresolved.as_ref().map(|u| u.0.as_str()), Some("$TP"));
        let text = "python pretrain_gpt.py --tensor-model-parallel-size x$TP";
        let w = &commands(text).unwrap()[0].words[3];
        let (name, span) = w.unresolved.clone().unwrap();
        assert_eq!((name.as_str(), &text[span.range()]), ("$TP", "$TP"));
    }

    #[test]
    fn an_unterminated_quote_is_an_error_at_the_quote() {
        let e = commands("python a.py --x \"oops\n--y 1").unwrap_err();
        assert_eq!(
            e,
            ShellProblem::Unterminated {
                open: Opening::DoubleQuote,
                span: Span::new(16, 17)
            }
        );
        let e = commands("X=${A").unwrap_err();
        assert_eq!(
            e,
            ShellProblem::Unterminated {
                open: Opening::Brace,
                span: Span::new(2, 3)
            }
        );
        let e = commands("ARGS=( --a 1").unwrap_err();
        assert_eq!(
            e,
            ShellProblem::UnclosedArray {
                span: Span::new(0, 12)
            }
        );
    }

    #[test]
    fn separators_and_redirections_end_commands_but_not_inside_a_word() {
        let cmds =
            commands("a --l Et|(tt|)*30L --f ([0]*3+[1]*58) 2>&1 | tee log.txt ; b > out").unwrap();
        let all: Vec<Vec<&str>> = cmds.iter().map(texts).collect();
        assert_eq!(
            all,
            [
                vec!["a", "--l", "Et|(tt|)*30L", "--f", "([0]*3+[1]*58)"],
                vec!["tee", "log.txt"],
                vec!["b"]
            ]
        );
    }

    #[test]
    fn a_self_doubling_variable_is_an_error_not_an_exhausted_memory() {
        let mut text = String::from("A=x\n");
        for _ in 0..40 {
            text.push_str("A=\"$A $A\"\n");
        }
        // Quoted values are one word each: the doubling is in the text, capped by the input.
        let mut t2 = String::from("A=(x)\n");
        for _ in 0..40 {
            t2.push_str("A=( ${A[@]} ${A[@]} )\n");
        }
        let e = commands(&t2).unwrap_err();
        assert!(
            matches!(&e, ShellProblem::AssignmentTooManyWords { name, .. } if name == "A"),
            "{e:?}"
        );
        let e = commands(&text).unwrap_err();
        assert!(
            matches!(&e, ShellProblem::AssignmentTooManyWords { name, .. } if name == "A"),
            "{e:?}"
        );
        // Unquoted pieces joined into one word grow its bytes, not the word count.
        let mut t3 = String::from("A=x\n");
        for _ in 0..14 {
            t3.push_str("A=$A$A$A\n");
        }
        let e = commands(&t3).unwrap_err();
        assert!(matches!(e, ShellProblem::WordTooLong { .. }), "{e:?}");
    }
}
