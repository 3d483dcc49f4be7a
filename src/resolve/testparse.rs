//! A minimal parser for this module's tests, so they do not depend on the real parser's
//! recovery choices: well-formed input only, items grouped by the key table like `syntax` does.

use crate::diag::Span;
use crate::syntax::ast::*;
use crate::syntax::schema::{self, ArgType, BlockKind};

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Punct(char),
    Name(String),
    Str(String),
    Num(Number, Option<(String, Span)>),
}

fn lex(text: &str) -> Vec<(Tok, Span)> {
    let b = text.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i] as char;
        if c.is_whitespace() || c == ';' {
            i += 1;
        } else if c == '#' {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if "<>[]:".contains(c) {
            out.push((Tok::Punct(c), Span::new(i, i + 1)));
            i += 1;
        } else if c == '"' {
            let s = i;
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += 1;
            }
            i += 1;
            out.push((Tok::Str(text[s + 1..i - 1].to_string()), Span::new(s, i)));
        } else if c.is_ascii_digit() {
            let s = i;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_' || b[i] == b'.') {
                i += 1;
            }
            if i + 1 < b.len() && (b[i] == b'e') && (b[i + 1] == b'-' || b[i + 1].is_ascii_digit())
            {
                i += 2;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            let lit: String = text[s..i].chars().filter(|&c| c != '_').collect();
            let n = if lit.contains(['.', 'e']) {
                Number::Float(lit.parse().unwrap())
            } else {
                lit.parse().map_or(Number::IntTooLarge, Number::Int)
            };
            let us = i;
            while i < b.len() && (b[i].is_ascii_alphabetic() || b[i] == b'/' || b[i] == b'%') {
                i += 1;
            }
            let unit = (i > us).then(|| (text[us..i].to_string(), Span::new(us, i)));
            out.push((Tok::Num(n, unit), Span::new(s, i)));
        } else {
            let s = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            if i == s {
                i += 1;
            }
            out.push((Tok::Name(text[s..i].to_string()), Span::new(s, i)));
        }
    }
    out
}

struct P {
    toks: Vec<(Tok, Span)>,
    pos: usize,
}

impl P {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.0)
    }
    fn next(&mut self) -> (Tok, Span) {
        self.pos += 1;
        self.toks[self.pos - 1].clone()
    }
    fn block(&mut self, kind: BlockKind) -> Block {
        let (_, open) = self.next();
        let mut items = Vec::new();
        loop {
            match self.peek() {
                Some(Tok::Punct('>')) => {
                    let (_, close) = self.next();
                    return Block {
                        items,
                        span: open.to(close),
                    };
                }
                Some(Tok::Name(_)) => items.push(self.item(kind)),
                other => panic!("test parser: unexpected {other:?}"),
            }
        }
    }
    fn value(&mut self, ty: Option<ArgType>) -> Value {
        let (t, span) = self.next();
        let kind = match t {
            Tok::Num(n, None) => ValueKind::Number(n),
            Tok::Num(n, Some((unit, unit_span))) => ValueKind::Quantity {
                number: n,
                unit,
                unit_span,
            },
            Tok::Name(n) => ValueKind::Name(n),
            Tok::Str(s) => ValueKind::Str(s),
            Tok::Punct('[') => {
                let mut vs = Vec::new();
                while self.peek() != Some(&Tok::Punct(']')) {
                    vs.push(self.value(ty));
                }
                let (_, close) = self.next();
                return Value {
                    kind: ValueKind::List(vs),
                    span: span.to(close),
                };
            }
            Tok::Punct('<') => {
                self.pos -= 1;
                let bk = match ty {
                    Some(ArgType::Ref(k)) => BlockKind::Def(k),
                    Some(ArgType::Nested(b)) => b,
                    _ => BlockKind::Expect,
                };
                let b = self.block(bk);
                let span = b.span;
                return Value {
                    kind: ValueKind::Block(b),
                    span,
                };
            }
            other => panic!("test parser: unexpected {other:?}"),
        };
        Value { kind, span }
    }
    fn item(&mut self, kind: BlockKind) -> Item {
        let (Tok::Name(key), kspan) = self.next() else {
            unreachable!()
        };
        let sig = schema::lookup(kind, &key);
        let mut args = Vec::new();
        loop {
            let i = args.len();
            let ty = sig.and_then(|s| s.args.get(i).copied());
            let takes = match self.peek() {
                Some(Tok::Name(n)) => match sig {
                    Some(s) if s.is_flag() => i == 0 && (n == "on" || n == "off"),
                    _ => ty.is_some_and(|t| t.takes_name()),
                },
                Some(Tok::Num(..) | Tok::Str(_) | Tok::Punct('[')) => true,
                Some(Tok::Punct('<')) => true,
                _ => false,
            };
            if !takes {
                break;
            }
            args.push(self.value(ty));
        }
        let span = args.last().map_or(kspan, |a: &Value| kspan.to(a.span));
        Item {
            key: Ident {
                text: key,
                span: kspan,
            },
            args,
            span,
        }
    }
}

pub fn parse(text: &str) -> File {
    let mut p = P {
        toks: lex(text),
        pos: 0,
    };
    let mut items = Vec::new();
    while let Some(t) = p.peek().cloned() {
        let (_, kspan) = p.next();
        let Tok::Name(word) = t else {
            panic!("test parser: unexpected {t:?}")
        };
        if word == "use" {
            let (Tok::Str(path), path_span) = p.next() else {
                panic!("use needs a string")
            };
            items.push(TopItem::Use(UseDecl {
                path,
                path_span,
                span: kspan.to(path_span),
            }));
            continue;
        }
        let kind = DefKind::from_keyword(&word).expect("definition keyword");
        let mut name = None;
        let mut base = None;
        if let Some(Tok::Name(n)) = p.peek().cloned() {
            let (_, s) = p.next();
            name = Some(Ident { text: n, span: s });
        }
        if p.peek() == Some(&Tok::Punct(':')) {
            p.next();
            let (Tok::Name(n), s) = p.next() else {
                panic!("base name")
            };
            base = Some(Ident { text: n, span: s });
        }
        let body = p.block(BlockKind::Def(kind));
        let span = kspan.to(body.span);
        items.push(TopItem::Def(Def {
            kind,
            kind_span: kspan,
            name,
            base,
            body,
            span,
        }));
    }
    File {
        items,
        comments: Vec::new(),
    }
}
