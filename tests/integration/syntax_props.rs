//! Property tests of the syntax stage: hostile bytes and mutated valid files never panic and
//! every span lies inside the text; generated valid files parse without diagnostics into the
//! items that were generated.

use proptest::prelude::*;
use venusc::diag::{FileId, Span};
use venusc::syntax::ast::{Block, File, TopItem, Value, ValueKind};
use venusc::syntax::{decode, parse, tokens, TokenKind};

const VALID: &str = r#"# demo
use "common.venus"
model llama2 : base <
  hidden 4_096  ffn 16384  layers 32
  heads 16  kv_groups 4 ; vocab 50000  seq 2048
  swiglu
>
gpu demo_gpu < peak 1000TFLOP/s  memory 80GiB  mem_bw 3350GB/s >
cluster <
  gpu demo_gpu
  dim nvlink fc 8 450GB/s 1000ns
  dim ib ring 2 50Gb/s 6.5us
>
plan p < pp [4 8] vpp 2 sp on measured < first 1ms middle 1ms last 2ms > mfu 55% >
scenario s < model llama2 cluster dgx_h100 plan < tp 2 > expect < tflops_min 400 > >
"#;

fn spans_of_block(block: &Block, out: &mut Vec<Span>) {
    out.push(block.span);
    for item in &block.items {
        out.push(item.span);
        out.push(item.key.span);
        for v in &item.args {
            spans_of_value(v, out);
        }
    }
}

fn spans_of_value(v: &Value, out: &mut Vec<Span>) {
    out.push(v.span);
    match &v.kind {
        ValueKind::List(items) => items.iter().for_each(|i| spans_of_value(i, out)),
        ValueKind::Block(b) => spans_of_block(b, out),
        ValueKind::Quantity { unit_span, .. } => out.push(*unit_span),
        _ => {}
    }
}

fn all_spans(file: &File) -> Vec<Span> {
    let mut out: Vec<Span> = file.comments.iter().map(|c| c.span).collect();
    for item in &file.items {
        match item {
            TopItem::Use(u) => out.extend([u.span, u.path_span]),
            TopItem::Def(d) => {
                out.extend([d.span, d.kind_span]);
                out.extend(d.name.iter().chain(&d.base).map(|i| i.span));
                spans_of_block(&d.body, &mut out);
            }
        }
    }
    out
}

/// Parses `text` and checks every invariant that must hold for any input.
fn check(text: &str) {
    let parsed = parse(text, FileId(1));
    let mut spans = all_spans(&parsed.file);
    for d in &parsed.diagnostics {
        assert!(
            matches!(d.code.as_str(), "E0001" | "E0002" | "E0003"),
            "{d:?}"
        );
        assert_eq!(d.primary.loc.file, FileId(1));
        assert!(d.help.as_deref().is_none_or(|h| !h.is_empty()));
        spans.push(d.primary.loc.span);
    }
    for s in spans {
        assert!(s.start <= s.end, "{s:?}");
        assert!(s.end as usize <= text.len(), "{s:?} beyond {}", text.len());
        assert!(
            text.is_char_boundary(s.start as usize) && text.is_char_boundary(s.end as usize),
            "{s:?}"
        );
    }
    let toks = tokens(text);
    for pair in toks.windows(2) {
        assert!(pair[0].span.end <= pair[1].span.start, "{pair:?}");
    }
    assert!(toks
        .last()
        .is_none_or(|t| t.span.end as usize <= text.len()));
}

/// A byte-level mutation of a valid file: replace, insert or delete at a position.
#[derive(Clone, Debug)]
enum Edit {
    Replace(usize, u8),
    Insert(usize, u8),
    Delete(usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    // Bytes that matter to the lexer, plus anything at all.
    let byte = prop_oneof![
        3 => prop::sample::select(b"<>[];:\"#_0123456789 \n.eGBs/%\\".to_vec()),
        1 => any::<u8>(),
    ];
    prop_oneof![
        (any::<usize>(), byte.clone()).prop_map(|(i, b)| Edit::Replace(i, b)),
        (any::<usize>(), byte).prop_map(|(i, b)| Edit::Insert(i, b)),
        any::<usize>().prop_map(Edit::Delete),
    ]
}

fn apply(mut bytes: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
    for e in edits {
        let n = bytes.len().max(1);
        match *e {
            Edit::Replace(i, b) if !bytes.is_empty() => bytes[i % n] = b,
            Edit::Insert(i, b) => bytes.insert(i % (bytes.len() + 1), b),
            Edit::Delete(i) if !bytes.is_empty() => {
                bytes.remove(i % n);
            }
            _ => {}
        }
    }
    bytes
}

/// A valid model item: a count key with an integer, or a flag.
fn model_item() -> impl Strategy<Value = (String, usize)> {
    prop_oneof![
        (
            prop::sample::select(vec![
                "hidden",
                "layers",
                "heads",
                "vocab",
                "seq",
                "ffn",
                "kv_groups"
            ]),
            1..u64::MAX
        )
            .prop_map(|(k, v)| (format!("{k} {v}"), 1)),
        prop::sample::select(vec!["swiglu", "untied_embeddings"]).prop_map(|k| (k.to_string(), 0)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic_and_spans_stay_inside(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        let (text, diags) = decode(&bytes, FileId(1));
        prop_assert_eq!(text.len(), bytes.len());
        for d in &diags {
            prop_assert!(d.primary.loc.span.end as usize <= bytes.len());
            prop_assert!(!d.primary.loc.span.is_empty());
        }
        check(&text);
    }

    #[test]
    fn mutated_valid_files_never_panic(edits in prop::collection::vec(edit(), 1..12)) {
        let bytes = apply(VALID.as_bytes().to_vec(), &edits);
        let (text, _) = decode(&bytes, FileId(1));
        check(&text);
    }

    #[test]
    fn generated_model_blocks_parse_into_their_items(
        items in prop::collection::vec(model_item(), 0..30),
        one_line in any::<bool>(),
    ) {
        let sep = if one_line { " " } else { "\n  " };
        let body: Vec<&str> = items.iter().map(|(s, _)| s.as_str()).collect();
        let text = format!("model m <{sep}{}{sep}>", body.join(sep));
        let parsed = parse(&text, FileId(0));
        prop_assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
        let TopItem::Def(def) = &parsed.file.items[0] else { panic!("not a def") };
        prop_assert_eq!(def.body.items.len(), items.len());
        for (item, (src, nargs)) in def.body.items.iter().zip(&items) {
            prop_assert_eq!(item.args.len(), *nargs);
            prop_assert_eq!(&text[item.span.range()], src.as_str());
        }
    }
}

#[test]
fn valid_fixture_parses_without_diagnostics() {
    let parsed = parse(VALID, FileId(0));
    assert_eq!(parsed.diagnostics, vec![]);
    assert_eq!(parsed.file.items.len(), 6);
    let kinds: Vec<TokenKind> = tokens("1f1b 4096").iter().map(|t| t.kind).collect();
    assert_eq!(kinds, [TokenKind::Name, TokenKind::Number]);
}
