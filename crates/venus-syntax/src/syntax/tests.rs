//! Unit tests of the syntax stage: the spec's complete example, each diagnostic with its exact
//! code, span and help, recovery, and hostile inputs (sizes chosen to keep the suite fast while
//! still catching quadratic behaviour or deep recursion).

use super::ast::{Def, DefKind, Number, TopItem, Value, ValueKind};
use super::*;
use venus_diag::diag::Code;

const EXAMPLE: &str = r#"# The VenusSim demo: a Llama-2-class model on 2 nodes x 8 GPUs.
model llama2 <
  hidden 4096  ffn 16384  layers 32
  heads 16  kv_groups 4
  vocab 50000  seq 2048
  swiglu
>

gpu demo_gpu < peak 1000TFLOP/s  memory 80GiB  mem_bw 3350GB/s >

cluster <
  gpu demo_gpu
  dim nvlink fc 8 450GB/s 1000ns
  dim ib ring 2 50GB/s 6000ns
>

plan <
  pp 8 vpp 2 tp 1 dp 2
  micro_batch 2 global_batch 64
  distributed_optimizer overlap_grad_reduce overlap_param_gather
  mfu 100%
>
"#;

fn p(text: &str) -> Parsed {
    parse(text, FileId(7))
}

fn defs(parsed: &Parsed) -> Vec<&Def> {
    parsed
        .file
        .items
        .iter()
        .filter_map(|i| match i {
            TopItem::Def(d) => Some(d),
            TopItem::Use(_) => None,
        })
        .collect()
}

fn keys(def: &Def) -> Vec<&str> {
    def.body.items.iter().map(|i| i.key.text.as_str()).collect()
}

fn codes(parsed: &Parsed) -> Vec<&'static str> {
    parsed.diagnostics.iter().map(|d| d.code.as_str()).collect()
}

/// The one diagnostic of `text`, checked to be alone.
fn only(text: &str) -> Diagnostic {
    let parsed = p(text);
    assert_eq!(
        parsed.diagnostics.len(),
        1,
        "{text:?} gave {:#?}",
        parsed.diagnostics
    );
    parsed.diagnostics.into_iter().next().unwrap()
}

/// The source text a diagnostic's primary label points at.
fn at<'a>(text: &'a str, d: &Diagnostic) -> &'a str {
    &text[d.primary.loc.span.range()]
}

fn span_of(text: &str, needle: &str) -> Span {
    let start = text.find(needle).unwrap();
    Span::new(start, start + needle.len())
}

// ---- the complete example ----

#[test]
fn complete_example_parses_without_diagnostics() {
    let parsed = p(EXAMPLE);
    assert_eq!(parsed.diagnostics, vec![]);
    let d = defs(&parsed);
    assert_eq!(
        d.iter().map(|d| d.kind).collect::<Vec<_>>(),
        [
            DefKind::Model,
            DefKind::Gpu,
            DefKind::Cluster,
            DefKind::Plan
        ]
    );
    assert_eq!(d[0].name.as_ref().unwrap().text, "llama2");
    assert_eq!(d[1].name.as_ref().unwrap().text, "demo_gpu");
    assert_eq!(d[2].name, None);
    assert_eq!(d[3].name, None);
    assert_eq!(parsed.file.comments.len(), 1);
    assert_eq!(
        parsed.file.comments[0].text,
        "# The VenusSim demo: a Llama-2-class model on 2 nodes x 8 GPUs."
    );
    assert_eq!(
        parsed.file.comments[0].span,
        Span::new(0, EXAMPLE.find('\n').unwrap())
    );
}

#[test]
fn example_model_block_has_eight_items_two_per_shared_line() {
    let parsed = p(EXAMPLE);
    let model = defs(&parsed)[0];
    assert_eq!(
        keys(model),
        [
            "hidden",
            "ffn",
            "layers",
            "heads",
            "kv_groups",
            "vocab",
            "seq",
            "swiglu"
        ]
    );
    let heads = &model.body.items[3];
    assert_eq!(heads.args.len(), 1);
    assert_eq!(heads.args[0].kind, ValueKind::Number(Number::Int(16)));
    assert_eq!(heads.span, span_of(EXAMPLE, "heads 16"));
    assert_eq!(model.body.items[4].span, span_of(EXAMPLE, "kv_groups 4"));
    assert!(model.body.items[7].args.is_empty());
    assert_eq!(
        model.span,
        Span::new(
            EXAMPLE.find("model llama2").unwrap(),
            EXAMPLE.find(">\n\ngpu").unwrap() + 1
        )
    );
    assert_eq!(
        model.kind_span.start as usize,
        EXAMPLE.find("model llama2").unwrap()
    );
    assert_eq!(model.kind_span.end - model.kind_span.start, 5);
}

#[test]
fn example_dim_item_has_five_arguments_of_the_right_kinds() {
    let parsed = p(EXAMPLE);
    let cluster = defs(&parsed)[2];
    assert_eq!(keys(cluster), ["gpu", "dim", "dim"]);
    let dim = &cluster.body.items[1];
    assert_eq!(dim.span, span_of(EXAMPLE, "dim nvlink fc 8 450GB/s 1000ns"));
    let kinds: Vec<_> = dim.args.iter().map(|a| a.kind.clone()).collect();
    assert_eq!(
        kinds,
        [
            ValueKind::Name("nvlink".into()),
            ValueKind::Name("fc".into()),
            ValueKind::Number(Number::Int(8)),
            ValueKind::Quantity {
                number: Number::Int(450),
                unit: "GB/s".into(),
                unit_span: Span::new(
                    EXAMPLE.find("450GB/s").unwrap() + 3,
                    EXAMPLE.find("450GB/s").unwrap() + 7
                )
            },
            ValueKind::Quantity {
                number: Number::Int(1000),
                unit: "ns".into(),
                unit_span: Span::new(
                    EXAMPLE.find("1000ns").unwrap() + 4,
                    EXAMPLE.find("1000ns").unwrap() + 6
                )
            },
        ]
    );
    assert_eq!(dim.args[3].span, span_of(EXAMPLE, "450GB/s"));
    assert_eq!(
        cluster.body.items[0].args[0].kind,
        ValueKind::Name("demo_gpu".into())
    );
}

#[test]
fn example_plan_has_ten_items_and_a_percent_quantity() {
    let parsed = p(EXAMPLE);
    let plan = defs(&parsed)[3];
    assert_eq!(
        keys(plan),
        [
            "pp",
            "vpp",
            "tp",
            "dp",
            "micro_batch",
            "global_batch",
            "distributed_optimizer",
            "overlap_grad_reduce",
            "overlap_param_gather",
            "mfu"
        ]
    );
    let mfu = &plan.body.items[9];
    assert_eq!(
        mfu.args[0].kind,
        ValueKind::Quantity {
            number: Number::Int(100),
            unit: "%".into(),
            unit_span: span_of(EXAMPLE, "%")
        }
    );
}

#[test]
fn one_line_form_gives_the_same_items() {
    let one_line: String = EXAMPLE
        .lines()
        .filter(|l| !l.starts_with('#'))
        .collect::<Vec<_>>()
        .join(" ");
    let a = p(EXAMPLE);
    let b = p(&one_line);
    assert_eq!(b.diagnostics, vec![]);
    let shape = |parsed: &Parsed| -> Vec<(String, Vec<ValueKindShape>)> {
        defs(parsed)
            .iter()
            .flat_map(|d| d.body.items.iter())
            .map(|i| {
                (
                    i.key.text.clone(),
                    i.args.iter().map(|v| shape_of(&v.kind)).collect(),
                )
            })
            .collect()
    };
    assert_eq!(shape(&a), shape(&b));
    assert_eq!(shape(&a).len(), 8 + 3 + 3 + 10);
}

#[derive(Debug, PartialEq)]
enum ValueKindShape {
    Number(String),
    Quantity(String, String),
    Name(String),
    Other,
}

fn shape_of(v: &ValueKind) -> ValueKindShape {
    match v {
        ValueKind::Number(n) => ValueKindShape::Number(format!("{n:?}")),
        ValueKind::Quantity { number, unit, .. } => {
            ValueKindShape::Quantity(format!("{number:?}"), unit.clone())
        }
        ValueKind::Name(n) => ValueKindShape::Name(n.clone()),
        _ => ValueKindShape::Other,
    }
}

// ---- items and arity ----

#[test]
fn extra_values_after_a_complete_item_are_appended() {
    let parsed = p("model m < hidden 4096 4096 layers 2 >");
    assert_eq!(parsed.diagnostics, vec![]);
    let m = defs(&parsed)[0];
    assert_eq!(keys(m), ["hidden", "layers"]);
    assert_eq!(m.body.items[0].args.len(), 2);
    assert_eq!(m.body.items[0].span, Span::new(10, 26));
}

#[test]
fn unknown_key_takes_following_non_name_values() {
    let parsed = p("model m < hiden 4096 8GiB \"x\" heads 4 >");
    assert_eq!(parsed.diagnostics, vec![]);
    let m = defs(&parsed)[0];
    assert_eq!(keys(m), ["hiden", "heads"]);
    assert_eq!(m.body.items[0].args.len(), 3);
    assert_eq!(m.body.items[0].args[2].kind, ValueKind::Str("x".into()));
}

#[test]
fn a_name_ends_an_item_whose_slot_takes_no_name() {
    let parsed = p("model m < hidden layers 32 >");
    let m = defs(&parsed)[0];
    assert_eq!(keys(m), ["hidden", "layers"]);
    assert!(m.body.items[0].args.is_empty());
}

#[test]
fn dim_without_latency_stops_before_the_next_dim() {
    let parsed = p("cluster < dim a fc 8 450GB/s dim b ring 2 50GB/s 5us >");
    let c = defs(&parsed)[0];
    assert_eq!(keys(c), ["dim", "dim"]);
    assert_eq!(c.body.items[0].args.len(), 4);
    assert_eq!(c.body.items[1].args.len(), 5);
}

#[test]
fn flags_take_on_off_or_a_list() {
    let parsed = p(
        "plan < sp on distributed_optimizer off overlap_p2p [on off] overlap_grad_reduce tp 2 >",
    );
    assert_eq!(parsed.diagnostics, vec![]);
    let plan = defs(&parsed)[0];
    assert_eq!(
        keys(plan),
        [
            "sp",
            "distributed_optimizer",
            "overlap_p2p",
            "overlap_grad_reduce",
            "tp"
        ]
    );
    assert_eq!(
        plan.body.items[0].args[0].kind,
        ValueKind::Name("on".into())
    );
    assert_eq!(
        plan.body.items[1].args[0].kind,
        ValueKind::Name("off".into())
    );
    assert_eq!(
        plan.body.items[2].args[0].kind,
        ValueKind::List(vec![
            Value {
                kind: ValueKind::Name("on".into()),
                span: Span::new(52, 54)
            },
            Value {
                kind: ValueKind::Name("off".into()),
                span: Span::new(55, 58)
            },
        ])
    );
    assert!(plan.body.items[3].args.is_empty());
}

#[test]
fn semicolon_ends_an_item_early() {
    let parsed = p("model m < hidden 4096; 8 >");
    // `8` after `;` is a value where a key is expected.
    assert_eq!(codes(&parsed), ["E0001"]);
    let m = defs(&parsed)[0];
    assert_eq!(keys(m), ["hidden"]);
    assert_eq!(m.body.items[0].args.len(), 1);
}

#[test]
fn any_slot_takes_a_list_for_sweeps() {
    let parsed = p("plan < tp [1 2 4 8] schedule [1f1b interleaved] recompute 1f1b >");
    assert_eq!(codes(&parsed), Vec::<&str>::new());
    let plan = defs(&parsed)[0];
    assert_eq!(keys(plan), ["tp", "schedule", "recompute"]);
    assert_eq!(
        plan.body.items[2].args[0].kind,
        ValueKind::Name("1f1b".into())
    );
    match &plan.body.items[0].args[0].kind {
        ValueKind::List(v) => assert_eq!(v.len(), 4),
        other => panic!("{other:?}"),
    }
    assert_eq!(plan.body.items[0].args[0].span, Span::new(10, 19));
}

#[test]
fn inline_plan_in_a_scenario_is_a_plan_block() {
    let text = "scenario s < model llama2_7b cluster dgx_h100 plan < pp 4 dp 4 sp on > expect < tflops_min 400 > >";
    let parsed = p(text);
    assert_eq!(parsed.diagnostics, vec![]);
    let s = defs(&parsed)[0];
    assert_eq!(keys(s), ["model", "cluster", "plan", "expect"]);
    let ValueKind::Block(plan) = &s.body.items[2].args[0].kind else {
        panic!()
    };
    // `sp on` only groups as a flag with its word inside a plan block.
    assert_eq!(
        plan.items
            .iter()
            .map(|i| (i.key.text.as_str(), i.args.len()))
            .collect::<Vec<_>>(),
        [("pp", 1), ("dp", 1), ("sp", 1)]
    );
    assert_eq!(plan.span, span_of(text, "< pp 4 dp 4 sp on >"));
    let ValueKind::Block(expect) = &s.body.items[3].args[0].kind else {
        panic!()
    };
    assert_eq!(expect.items[0].key.text, "tflops_min");
}

#[test]
fn inline_gpu_block_in_a_cluster_uses_gpu_keys() {
    let parsed = p("cluster < gpu < peak 1TFLOP/s memory 80GiB > nodes 2 >");
    assert_eq!(parsed.diagnostics, vec![]);
    let c = defs(&parsed)[0];
    assert_eq!(keys(c), ["gpu", "nodes"]);
    let ValueKind::Block(gpu) = &c.body.items[0].args[0].kind else {
        panic!()
    };
    assert_eq!(gpu.items.len(), 2);
}

#[test]
fn unknown_key_block_treats_every_name_as_a_key() {
    let parsed = p("plan < extra < a 1 b c 2 > tp 2 >");
    assert_eq!(parsed.diagnostics, vec![]);
    let plan = defs(&parsed)[0];
    assert_eq!(keys(plan), ["extra", "tp"]);
    let ValueKind::Block(b) = &plan.body.items[0].args[0].kind else {
        panic!()
    };
    assert_eq!(
        b.items
            .iter()
            .map(|i| (i.key.text.as_str(), i.args.len()))
            .collect::<Vec<_>>(),
        [("a", 1), ("b", 0), ("c", 1)]
    );
}

#[test]
fn key_on_its_own_line_does_not_swallow_the_next_key() {
    let parsed = p("cluster <\n  gpu\n  dim nvlink fc 8 450GB/s\n>");
    let c = defs(&parsed)[0];
    assert_eq!(keys(c), ["gpu", "dim"]);
    assert!(c.body.items[0].args.is_empty());
    assert_eq!(c.body.items[1].args.len(), 4);
}

#[test]
fn a_key_after_an_optional_word_slot_starts_the_next_item_on_the_same_line() {
    let parsed = p("plan < fsdp optim_grads_params fsdp_keep_unsharded sp >");
    let plan = defs(&parsed)[0];
    assert_eq!(keys(plan), ["fsdp", "fsdp_keep_unsharded", "sp"]);
    assert_eq!(plan.body.items[0].args.len(), 1);
    // The optional word itself is still taken, and a required word slot keeps a key name
    // (reported as an unknown word by the type checker, not silently split).
    let parsed = p("plan < fsdp optim_grads_params megatron fsdp_keep_unsharded >");
    assert_eq!(defs(&parsed)[0].body.items[0].args.len(), 2);
    let parsed = p("plan < fsdp fsdp_keep_unsharded >");
    assert_eq!(keys(defs(&parsed)[0]), ["fsdp"]);
}

#[test]
fn inheritance_and_use_parse() {
    let text =
        "use \"common/a\\\"b.venus\"\nmodel big : llama2_7b < layers 64 >\nplan : base < tp 2 >";
    let parsed = p(text);
    assert_eq!(parsed.diagnostics, vec![]);
    let TopItem::Use(u) = &parsed.file.items[0] else {
        panic!()
    };
    assert_eq!(u.path, "common/a\"b.venus");
    assert_eq!(u.path_span, Span::new(4, 23));
    assert_eq!(u.span, Span::new(0, 23));
    let d = defs(&parsed);
    assert_eq!(d[0].base.as_ref().unwrap().text, "llama2_7b");
    assert_eq!(d[1].name, None);
    assert_eq!(d[1].base.as_ref().unwrap().text, "base");
}

#[test]
fn numbers_with_underscores_floats_and_exponents() {
    let parsed = p(
        "model m < a 4_096 b 0.55 c 1e-3 d 2.5E9 e 18446744073709551615 f 18446744073709551616 >",
    );
    assert_eq!(parsed.diagnostics, vec![]);
    let m = defs(&parsed)[0];
    let values: Vec<_> = m
        .body
        .items
        .iter()
        .map(|i| i.args[0].kind.clone())
        .collect();
    assert_eq!(
        values,
        [
            ValueKind::Number(Number::Int(4096)),
            ValueKind::Number(Number::Float(0.55)),
            ValueKind::Number(Number::Float(1e-3)),
            ValueKind::Number(Number::Float(2.5e9)),
            ValueKind::Number(Number::Int(u64::MAX)),
            ValueKind::Number(Number::IntTooLarge),
        ]
    );
}

#[test]
fn every_unit_spelling_lexes_joined_as_a_quantity() {
    for unit in UNITS {
        let text = format!("x 12{unit}");
        let toks = tokens(&text);
        assert_eq!(toks.len(), 2, "{unit}");
        assert_eq!(toks[1].kind, TokenKind::Quantity, "{unit}");
        assert_eq!(toks[1].unit, Some(Span::new(4, 4 + unit.len())), "{unit}");
        assert!(
            p(&format!("model m < hidden 12{unit} >"))
                .diagnostics
                .is_empty(),
            "{unit}"
        );
    }
}

#[test]
fn every_unit_spelling_after_a_space_is_reported_joined() {
    for unit in UNITS {
        let text = format!("model m < hidden 12 {unit} >");
        let d = only(&text);
        assert_eq!(d.code, Code::E0003, "{unit}");
        assert_eq!(
            d.help.as_deref(),
            Some(format!("write `12{unit}`").as_str())
        );
        let parsed = p(&text);
        let item = &defs(&parsed)[0].body.items[0];
        assert_eq!(item.args.len(), 1, "{unit}");
        assert!(
            matches!(&item.args[0].kind, ValueKind::Quantity { unit: u, .. } if u == unit),
            "{unit}"
        );
    }
}

#[test]
fn token_api_lists_comments_and_kinds_with_spans() {
    let toks = tokens("gpu g < peak 1TFLOP/s ; > # c\n[x]: @");
    let kinds: Vec<_> = toks.iter().map(|t| t.kind).collect();
    use TokenKind::*;
    assert_eq!(
        kinds,
        [
            Name, Name, Lt, Name, Quantity, Semi, Gt, Comment, LBracket, Name, RBracket, Colon,
            Error
        ]
    );
    assert_eq!(toks[7].span, Span::new(26, 29));
    assert_eq!(toks[12].span, Span::new(35, 36));
}

// ---- diagnostics: E0001 ----

#[test]
fn unknown_top_level_word_suggests_the_closest_kind() {
    let text = "modle llama < hidden 1 >\ngpu g < peak 1TFLOP/s >";
    let d = only(text);
    assert_eq!(d.code, Code::E0001);
    assert_eq!(d.message, "unexpected `modle` at the top level");
    assert_eq!(at(text, &d), "modle");
    assert_eq!(d.help.as_deref(), Some("did you mean `model`?"));
    // Recovery: the gpu after the skipped block is parsed.
    assert_eq!(defs(&p(text)).len(), 1);
    assert_eq!(defs(&p(text))[0].kind, DefKind::Gpu);
}

#[test]
fn top_level_key_says_which_block_it_belongs_to() {
    let d = only("hidden 4096");
    assert_eq!(
        d.help.as_deref(),
        Some("`hidden` is a key of `model` blocks: write it inside `model NAME < ... >`")
    );
}

#[test]
fn missing_name_is_reported_for_model_gpu_and_scenario_only() {
    let text = "model < hidden 1 >";
    let d = only(text);
    assert_eq!(
        (d.code, d.message.as_str()),
        (Code::E0001, "missing name for `model`")
    );
    assert_eq!(at(text, &d), "model");
    assert_eq!(d.help.as_deref(), Some("write `model NAME < ... >`"));
    assert_eq!(only("gpu : base < >").message, "missing name for `gpu`");
    assert_eq!(only("scenario < >").message, "missing name for `scenario`");
    assert!(p("cluster < > plan < >").diagnostics.is_empty());
    // The block is still parsed.
    assert_eq!(keys(defs(&p(text))[0]), ["hidden"]);
}

#[test]
fn definition_without_block_reports_expected_open_bracket() {
    let text = "model m hidden 4096 >\nplan < tp 2 >";
    let d = only(text);
    assert_eq!(
        d.message,
        "expected `<` to open the `model` block, found `hidden`"
    );
    assert_eq!(at(text, &d), "hidden");
    assert_eq!(d.help.as_deref(), Some("write `model m < ... >`"));
    let parsed = p(text);
    assert_eq!(defs(&parsed).len(), 1);
    assert_eq!(defs(&parsed)[0].kind, DefKind::Plan);
}

#[test]
fn keyword_on_the_next_line_is_not_taken_as_a_name() {
    let text = "plan\nmodel m < hidden 1 >";
    let d = only(text);
    assert_eq!(
        d.message,
        "expected `<` to open the `plan` block, found `model`"
    );
    assert_eq!(d.help.as_deref(), Some("write `plan < ... >`"));
    let parsed = p(text);
    assert_eq!(defs(&parsed).len(), 1);
    assert_eq!(defs(&parsed)[0].name.as_ref().unwrap().text, "m");
    // On the same line a keyword is a (strange but valid) name.
    assert_eq!(
        defs(&p("model plan < >"))[0].name.as_ref().unwrap().text,
        "plan"
    );
}

#[test]
fn base_name_missing_after_colon() {
    let text = "model m : < hidden 1 >";
    let d = only(text);
    assert_eq!(d.message, "expected a base `model` name after `:`");
    assert_eq!(at(text, &d), "<");
    assert_eq!(keys(defs(&p(text))[0]), ["hidden"]);
}

#[test]
fn stray_closing_brackets_are_unexpected() {
    let text = "model m < hidden 1 > >";
    let d = only(text);
    assert_eq!(
        (d.code, d.message.as_str()),
        (Code::E0001, "unexpected `>`")
    );
    assert_eq!(d.primary.loc.span, Span::new(21, 22));
    assert_eq!(d.help.as_deref(), Some("remove this `>`"));
    let text = "model m < hidden 1 ] layers 2 >";
    let d = only(text);
    assert_eq!((d.message.as_str(), at(text, &d)), ("unexpected `]`", "]"));
    assert_eq!(keys(defs(&p(text))[0]), ["hidden", "layers"]);
}

#[test]
fn stray_characters_are_one_error_per_run_and_transparent() {
    let text = "model m < hidden @@ 4096 layers 32 >";
    let d = only(text);
    assert_eq!(
        (d.code, d.message.as_str(), at(text, &d)),
        (Code::E0001, "unexpected characters `@@`", "@@")
    );
    let parsed = p(text);
    assert_eq!(defs(&parsed)[0].body.items[0].args.len(), 1);
    let d = only("model m < hidden = 4096 >");
    assert_eq!(
        d.help.as_deref(),
        Some("write the key and its value separated by a space, without `=`")
    );
    // `{` and `}` are read as `<` and `>` after their report: no further error.
    let parsed = p("model m { hidden 1 }");
    assert_eq!(codes(&parsed), ["E0001", "E0001"]);
    assert_eq!(
        parsed.diagnostics[0].help.as_deref(),
        Some("blocks are written `< ... >`: write `<` instead of `{`")
    );
    assert_eq!(
        parsed.diagnostics[1].help.as_deref(),
        Some("blocks are written `< ... >`: write `>` instead of `}`")
    );
    assert_eq!(keys(defs(&parsed)[0]), ["hidden"]);
}

#[test]
fn colon_after_key_is_reported_and_the_item_reads_on() {
    let text = "model m < hidden: 4096 >";
    let d = only(text);
    assert_eq!(
        (d.message.as_str(), at(text, &d)),
        ("unexpected `:` after `hidden`", ":")
    );
    assert_eq!(d.help.as_deref(), Some("write `hidden 4096`"));
    assert_eq!(defs(&p(text))[0].body.items[0].args.len(), 1);
}

#[test]
fn value_where_a_key_is_expected_is_one_error() {
    let text = "model m < 4096 8GiB [1 2] hidden 1 >";
    let d = only(text);
    assert_eq!(
        (d.message.as_str(), at(text, &d)),
        ("expected a key, found number `4096`", "4096")
    );
    assert_eq!(keys(defs(&p(text))[0]), ["hidden"]);
}

#[test]
fn unterminated_string_is_reported_with_the_closed_form() {
    let text = "use \"lib.venus\nmodel m < hidden 1 >";
    let d = only(text);
    assert_eq!(
        (d.code, d.message.as_str(), at(text, &d)),
        (Code::E0001, "unterminated string", "\"lib.venus")
    );
    assert_eq!(
        d.help.as_deref(),
        Some("add `\"` at the end: `\"lib.venus\"`")
    );
    let parsed = p(text);
    let TopItem::Use(u) = &parsed.file.items[0] else {
        panic!()
    };
    assert_eq!(u.path, "lib.venus");
    assert_eq!(defs(&parsed).len(), 1);
}

#[test]
fn unknown_escape_in_string_is_reported() {
    let text = r#"use "a\nb""#;
    let d = only(text);
    assert_eq!(
        (d.message.as_str(), at(text, &d)),
        ("unknown escape `\\\\n` in string", "\\n")
    );
}

#[test]
fn use_without_string_suggests_quoting() {
    let text = "use common\nmodel m < >";
    let d = only(text);
    assert_eq!(
        (d.message.as_str(), at(text, &d)),
        ("expected a path string after `use`", "common")
    );
    assert_eq!(d.help.as_deref(), Some("write `use \"common.venus\"`"));
    assert_eq!(defs(&p(text)).len(), 1);
}

#[test]
fn keyless_block_at_top_level_is_skipped() {
    let text = "< hidden 1 < 2 > > model m < >";
    let d = only(text);
    assert_eq!(
        (d.message.as_str(), d.primary.loc.span),
        ("block without a definition keyword", Span::new(0, 1))
    );
    assert_eq!(defs(&p(text)).len(), 1);
}

// ---- E0002 ----

#[test]
fn unclosed_block_names_the_block_and_its_line() {
    let text = "gpu g < peak 1TFLOP/s >\n\nmodel m <\n  hidden 4096\n";
    let d = only(text);
    assert_eq!(d.code, Code::E0002);
    assert_eq!(d.message, "unclosed `model` block");
    assert_eq!(d.primary.loc.span, Span::new(33, 34));
    assert_eq!(d.primary.message, "this `<` is never closed");
    assert_eq!(
        d.help.as_deref(),
        Some("add `>` to close the `model` block opened at line 3")
    );
    let parsed = p(text);
    let m = defs(&parsed)[1];
    assert_eq!(keys(m), ["hidden"]);
    assert_eq!(m.body.span, Span::new(33, text.len()));
    assert_eq!(m.span, Span::new(25, text.len()));
}

#[test]
fn unclosed_nested_blocks_report_the_innermost_once() {
    let text = "plan p <\n measured < first 1ms";
    let d = only(text);
    assert_eq!(d.message, "unclosed `measured` block");
    assert_eq!(
        d.help.as_deref(),
        Some("add `>` to close the `measured` block opened at line 2")
    );
}

#[test]
fn unclosed_list_at_end_of_input_and_before_block_end() {
    let text = "plan < tp [1 2";
    let d = only(text);
    assert_eq!(
        (d.code, d.message.as_str(), at(text, &d)),
        (Code::E0002, "unclosed list", "[")
    );
    assert_eq!(
        d.help.as_deref(),
        Some("add `]` to close the list opened at line 1")
    );
    let text = "plan < tp [1 2 > model m < hidden 1 >";
    let d = only(text);
    assert_eq!(
        (d.code, d.message.as_str(), at(text, &d)),
        (Code::E0002, "unclosed list", "[")
    );
    let parsed = p(text);
    assert_eq!(defs(&parsed).len(), 2);
    let ValueKind::List(l) = &defs(&parsed)[0].body.items[0].args[0].kind else {
        panic!()
    };
    assert_eq!(l.len(), 2);
}

#[test]
fn a_list_may_span_lines_and_a_forgotten_bracket_still_ends_at_the_next_key() {
    // Newlines separate tokens (LANGUAGE.md), inside a list too: `tp [1\n 2 4]` was
    // E0002 + E0001 (reliability report L7).
    let text = "plan p < tp [1\n  2\n  4] recompute [none\n full] micro_batch 1 >";
    let parsed = p(text);
    assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
    let items = &defs(&parsed)[0].body.items;
    assert_eq!(keys(defs(&parsed)[0]), ["tp", "recompute", "micro_batch"]);
    for (item, n) in items.iter().zip([3, 2]) {
        let ValueKind::List(l) = &item.args[0].kind else {
            panic!("{:?}", item.args)
        };
        assert_eq!(l.len(), n);
    }
    // A key on the next line still ends a list whose `]` was forgotten, reported once.
    let text = "plan p < tp [1 2\n  micro_batch 1 >";
    let d = only(text);
    assert_eq!((d.code, at(text, &d)), (Code::E0002, "["));
    assert_eq!(keys(defs(&p(text))[0]), ["tp", "micro_batch"]);
    // So does a definition at the start of a line.
    let text = "plan p < tp [1 2\nmodel m < hidden 1 >";
    assert_eq!(defs(&p(text)).len(), 2);
}

// ---- E0003 ----

#[test]
fn misplaced_underscores_are_malformed_numbers() {
    for (text, literal, help) in [
        ("model m < hidden 4__096 >", "4__096", "write `4_096`"),
        ("model m < hidden 4_ >", "4_", "write `4`"),
        ("model m < hidden _4 >", "_4", "write `4`"),
        ("model m < hidden 1_.5 >", "1_.5", "write `1.5`"),
    ] {
        let d = only(text);
        assert_eq!(d.code, Code::E0003, "{text}");
        assert_eq!(d.message, format!("malformed number `{literal}`"));
        assert_eq!(at(text, &d), literal);
        assert_eq!(d.help.as_deref(), Some(help));
        // The value is kept, so no arity error follows.
        assert_eq!(defs(&p(text))[0].body.items[0].args.len(), 1, "{text}");
    }
    let parsed = p("model m < hidden _4 >");
    assert_eq!(
        defs(&parsed)[0].body.items[0].args[0].kind,
        ValueKind::Number(Number::Int(4))
    );
}

#[test]
fn unknown_unit_suggests_the_closest_spelling() {
    for (text, unit, help) in [
        ("gpu g < mem_bw 450GBs >", "GBs", "did you mean `450GB/s`?"),
        ("gpu g < memory 80gib >", "gib", "did you mean `80GiB`?"),
        (
            "gpu g < peak 989TFLOPS >",
            "TFLOPS",
            "did you mean `989TFLOP/s`?",
        ),
        ("gpu g < peak 1Gbps >", "Gbps", "did you mean `1Gb/s`?"),
    ] {
        let d = only(text);
        assert_eq!(d.code, Code::E0003, "{text}");
        assert_eq!(d.message, format!("unknown unit `{unit}`"));
        assert_eq!(at(text, &d), unit);
        assert_eq!(d.help.as_deref(), Some(help), "{text}");
    }
    let d = only("gpu g < memory 80zzzzz >");
    assert!(d.help.as_deref().unwrap().starts_with("units are `B` `KB`"));
}

#[test]
fn space_between_number_and_unit_recovers_as_joined() {
    let text = "cluster < dim nvlink fc 8 450 GB/s 1000 ns >";
    let parsed = p(text);
    assert_eq!(codes(&parsed), ["E0003", "E0003"]);
    let d = &parsed.diagnostics[0];
    assert_eq!(d.message, "space between number and unit");
    assert_eq!(at(text, d), "450 GB/s");
    assert_eq!(d.help.as_deref(), Some("write `450GB/s`"));
    assert_eq!(
        parsed.diagnostics[1].help.as_deref(),
        Some("write `1000ns`")
    );
    let dim = &defs(&parsed)[0].body.items[0];
    assert_eq!(dim.args.len(), 5);
    assert_eq!(
        dim.args[3].kind,
        ValueKind::Quantity {
            number: Number::Int(450),
            unit: "GB/s".into(),
            unit_span: span_of(text, "GB/s")
        }
    );
    // A name after a number is not a unit: two items.
    assert_eq!(
        keys(defs(&p("model m < hidden 4096 layers 32 >"))[0]),
        ["hidden", "layers"]
    );
}

#[test]
fn case_matters_for_units() {
    let parsed = p("cluster < dim a fc 8 400Gb/s dim b fc 2 50GB/s >");
    assert_eq!(parsed.diagnostics, vec![]);
    let c = defs(&parsed)[0];
    assert!(
        matches!(&c.body.items[0].args[3].kind, ValueKind::Quantity { unit, .. } if unit == "Gb/s")
    );
    assert!(
        matches!(&c.body.items[1].args[3].kind, ValueKind::Quantity { unit, .. } if unit == "GB/s")
    );
}

// ---- several errors, each once ----

#[test]
fn several_errors_are_all_reported_once() {
    let text =
        "modle a < >\nmodel m < hidden 4__0 mem 80 GiB >\ngpu g < memory 80gib >\nplan < tp [1 2";
    let parsed = p(text);
    assert_eq!(
        codes(&parsed),
        ["E0001", "E0003", "E0003", "E0003", "E0002"]
    );
    let lines: Vec<usize> = parsed
        .diagnostics
        .iter()
        .map(|d| {
            text[..d.primary.loc.span.start as usize]
                .matches('\n')
                .count()
        })
        .collect();
    assert_eq!(lines, [0, 1, 1, 2, 3]);
}

// ---- decode ----

#[test]
fn decode_replaces_each_invalid_byte_with_a_space() {
    let bytes = b"model m < \xff\xfe hidden 1 > \xc3";
    let (text, diags) = decode(bytes, FileId(3));
    assert_eq!(text.len(), bytes.len());
    assert_eq!(text, "model m <    hidden 1 >  ");
    assert_eq!(diags.len(), 2);
    assert_eq!(
        (diags[0].code, diags[0].primary.loc.span),
        (Code::E0001, Span::new(10, 12))
    );
    assert_eq!(diags[0].primary.message, "bytes `ff fe` are not UTF-8");
    assert_eq!(diags[1].primary.loc.span, Span::new(24, 25));
    assert_eq!(diags[1].primary.loc.file, FileId(3));
    assert!(p(&text).diagnostics.is_empty());
    let (text, diags) = decode("héllo".as_bytes(), FileId(0));
    assert_eq!((text.as_str(), diags.len()), ("héllo", 0));
}

// ---- hostile input ----

/// Hostile inputs of ~1-2 MB finish in well under a second in release builds; this bound is
/// for unoptimized test builds and still fails on quadratic behaviour (which would take
/// minutes at these sizes). It is CPU time of the parsing thread, not wall time, so a loaded
/// machine cannot fail it: speed itself is measured by `cargo bench --bench check`.
const LINEAR_BOUND_SECS: f64 = 10.0;

/// CPU time of the calling thread: `/proc/thread-self/stat`'s utime + stime, in the kernel's
/// fixed 100 ticks a second (USER_HZ); wall time where procfs is missing.
struct CpuClock {
    start_ticks: Option<u64>,
    start_wall: std::time::Instant,
}

impl CpuClock {
    fn start() -> CpuClock {
        CpuClock {
            start_ticks: thread_cpu_ticks(),
            start_wall: std::time::Instant::now(),
        }
    }

    fn elapsed_secs(&self) -> f64 {
        match (self.start_ticks, thread_cpu_ticks()) {
            (Some(a), Some(b)) => b.saturating_sub(a) as f64 / 100.0,
            _ => self.start_wall.elapsed().as_secs_f64(),
        }
    }
}

fn thread_cpu_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // Fields after the command name, which is parenthesised and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

fn check_spans(text: &str, parsed: &Parsed) {
    for d in &parsed.diagnostics {
        let s = d.primary.loc.span;
        assert!(s.start <= s.end && s.end as usize <= text.len(), "{d:?}");
        assert!(text.is_char_boundary(s.start as usize) && text.is_char_boundary(s.end as usize));
    }
}

#[test]
fn two_hundred_thousand_nested_blocks_finish_without_recursion() {
    for text in [
        "<".repeat(200_000),
        format!("model m < a {}", "<".repeat(200_000)),
        format!("plan < x {}", "[".repeat(200_000)),
    ] {
        let start = CpuClock::start();
        let parsed = p(&text);
        assert!(
            start.elapsed_secs() < LINEAR_BOUND_SECS,
            "took {} CPU-s",
            start.elapsed_secs()
        );
        check_spans(&text, &parsed);
        assert!(parsed.diagnostics.len() <= 2, "{:#?}", parsed.diagnostics);
    }
    let deep = format!("model m < {} >", "a < ".repeat(100));
    let d = p(&deep).diagnostics;
    // Sorted by position: the innermost block kept (level 32) opens before the one skipped.
    assert_eq!(
        d.iter().map(|d| d.message.as_str()).collect::<Vec<_>>(),
        ["unclosed `a` block", "blocks nested deeper than 32 levels"]
    );
    // The first block past the limit is the 33rd level: `model`'s block is the first.
    assert_eq!(d[1].primary.message, "this block is at level 33");
    assert_eq!(
        d[1].primary.loc.span.start as usize,
        "model m < ".len() + 32 * "a < ".len() - 2
    );
}

#[test]
fn nesting_at_the_limit_is_accepted() {
    let text = format!("model m < {}{} >", "a < ".repeat(31), "> ".repeat(31));
    assert_eq!(p(&text).diagnostics, vec![]);
    let text = format!("model m < {}{} >", "a < ".repeat(32), "> ".repeat(32));
    assert_eq!(codes(&p(&text)), ["E0001"]);
}

#[test]
fn two_megabyte_number_is_linear() {
    let text = format!("model m < hidden {} >", "9".repeat(2_000_000));
    let start = CpuClock::start();
    let parsed = p(&text);
    assert!(start.elapsed_secs() < LINEAR_BOUND_SECS);
    assert_eq!(parsed.diagnostics, vec![]);
    assert_eq!(
        defs(&parsed)[0].body.items[0].args[0].kind,
        ValueKind::Number(Number::IntTooLarge)
    );
    let text = format!("model m < hidden 1.{}e5 >", "1".repeat(2_000_000));
    assert!(
        matches!(defs(&p(&text))[0].body.items[0].args[0].kind, ValueKind::Number(Number::Float(f)) if (f - 111111.1).abs() < 1.0)
    );
    let text = format!("model m < hidden {}_ >", "9".repeat(2_000_000));
    let d = only(&text);
    assert!(d.help.unwrap().ends_with("…`"));
}

#[test]
fn two_hundred_thousand_items_parse_in_linear_time() {
    let text = format!("plan < {}>", "tp 2 ".repeat(200_000));
    let start = CpuClock::start();
    let parsed = p(&text);
    assert!(start.elapsed_secs() < LINEAR_BOUND_SECS);
    assert_eq!(defs(&parsed)[0].body.items.len(), 200_000);
}

#[test]
fn chunked_lexing_matches_whole_text_lexing() {
    // Long enough for several chunks; strings and comments cross the chunk size.
    let line = "model m < hidden 4096 > # a comment with < and \" inside\nuse \"a < b ; \\\" c\"\n";
    let text = line.repeat(2_000);
    let toks = tokens(&text);
    assert_eq!(toks.len(), 2_000 * 9);
    assert_eq!(
        toks.iter().filter(|t| t.kind == TokenKind::Str).count(),
        2_000
    );
    assert_eq!(p(&text).diagnostics, vec![]);
    let one = "x".repeat(70_000);
    let text = format!("\"{one}\" < {one}");
    let toks = tokens(&text);
    assert_eq!(
        toks.iter().map(|t| t.kind).collect::<Vec<_>>(),
        [TokenKind::Str, TokenKind::Lt, TokenKind::Name]
    );
}

#[test]
fn binary_garbage_never_panics() {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..200 {
        let bytes: Vec<u8> = (0..512)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                (seed >> 24) as u8
            })
            .collect();
        let (text, _) = decode(&bytes, FileId(0));
        let parsed = p(&text);
        check_spans(&text, &parsed);
    }
}

/// A 1,000-line file in the style of the spec's example.
fn thousand_lines() -> String {
    let mut text = String::new();
    let mut n = 0;
    while text.lines().count() < 1_000 {
        text.push_str(&EXAMPLE.replace("llama2", &format!("llama2_{n}")));
        n += 1;
    }
    text.lines().take(1_000).collect::<Vec<_>>().join("\n")
}

#[test]
fn thousand_line_file_parses_quickly_even_unoptimized() {
    let text = thousand_lines();
    let start = CpuClock::start();
    let parsed = p(&text);
    // A loose bound that still catches quadratic behaviour in a debug build.
    assert!(
        start.elapsed_secs() < LINEAR_BOUND_SECS,
        "took {} CPU-s",
        start.elapsed_secs()
    );
    assert!(defs(&parsed).len() >= 180);
}

/// The release-mode figure: `cargo test --release --lib syntax::tests::timing -- --ignored --nocapture`.
#[test]
#[ignore]
fn timing_of_a_thousand_line_file() {
    let text = thousand_lines();
    let mut best = f64::MAX;
    for _ in 0..300 {
        let start = std::time::Instant::now();
        let parsed = p(&text);
        best = best.min(start.elapsed().as_secs_f64());
        assert!(parsed.diagnostics.is_empty());
    }
    eprintln!(
        "1,000 lines ({} bytes): best of 300 runs {:.0} us",
        text.len(),
        best * 1e6
    );
}

#[test]
fn a_run_of_stray_closers_is_one_error_spanning_the_run() {
    let text = "> ] >>\nmodel m < hidden 1 ]] >\n";
    let parsed = p(text);
    assert_eq!(codes(&parsed), ["E0001", "E0001"]);
    assert_eq!(
        parsed.diagnostics[0].message,
        "4 unexpected closing brackets"
    );
    assert_eq!(at(text, &parsed.diagnostics[0]), "> ] >>");
    // Inside a block only `]` is stray: the `>` still closes the block.
    assert_eq!(
        parsed.diagnostics[1].message,
        "2 unexpected closing brackets"
    );
    assert_eq!(at(text, &parsed.diagnostics[1]), "]]");
    assert_eq!(keys(defs(&parsed)[0]), ["hidden"]);
}

#[test]
fn a_file_with_a_nul_byte_is_one_not_a_text_file_error() {
    let mut bytes = b"model m < hidden 1 >\n".to_vec();
    bytes.extend([0u8, 1, 2, 0xff, b'>', b'>']);
    let (text, diags) = crate::syntax::decode(&bytes, venus_diag::diag::FileId(0));
    assert_eq!(text, "model m < hidden 1 >\n      ");
    assert_eq!(diags.len(), 1);
    assert_eq!(diags[0].message, "this is not a text file");
    assert_eq!(diags[0].primary.loc.span, Span::new(21, 22));
}

#[test]
fn a_few_latin1_bytes_are_not_binary_but_many_are() {
    let latin1 = b"# caf\xe9 cr\xe8me\nmodel m < >\n";
    let (_, diags) = crate::syntax::decode(latin1, venus_diag::diag::FileId(0));
    assert_eq!(diags.len(), 2);
    assert!(diags.iter().all(|d| d.message == "invalid UTF-8 in source"));
    let noisy: Vec<u8> = (0..64u8).flat_map(|i| [b'a', 0x80 | i]).collect();
    let (text, diags) = crate::syntax::decode(&noisy, venus_diag::diag::FileId(0));
    assert_eq!(text, format!("a{}", " ".repeat(127)));
    assert_eq!(diags.len(), 1);
    assert_eq!(diags[0].message, "this is not a text file");
}
