//! The IDE layer on plain data: the cursor's role, hover text, completion lists and definition
//! targets, with exact expected values.

use super::*;
use venus_diag::diag::Span;
use venus_syntax::syntax::ast::DefKind;
use venus_syntax::syntax::schema::{self, ArgType, BlockKind};

// ---- the cursor (the grouping comes from the parser's role map) ----

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

#[test]
fn an_inline_block_after_a_base_name_takes_the_kind_of_its_slot() {
    // `cluster dgx_h100 < ... >` is one argument: the parser reads the block as a cluster.
    assert_eq!(
        at("scenario s < cluster dgx_h100 < nodes 4 | > >").role,
        Role::Key(BlockKind::Def(DefKind::Cluster))
    );
}

#[test]
fn a_known_key_on_a_new_line_starts_an_item_instead_of_filling_the_slot() {
    let c = at("cluster c <\n  gpu\n  di|m nvlink fc 8 450GB/s 1000ns\n>");
    assert_eq!(c.role, Role::Key(BlockKind::Def(DefKind::Cluster)));
    assert_eq!(c.word, Some(Span::new(20, 23)));
    // On the same line the name fills the `gpu` slot.
    match at("cluster c < gpu di| >").role {
        Role::Arg { slot, index, .. } => assert_eq!((slot, index), (ArgType::Ref(DefKind::Gpu), 0)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn after_a_semicolon_and_after_a_closed_list_the_next_word_is_a_key() {
    assert_eq!(
        at("cluster c < gpu ; |").role,
        Role::Key(BlockKind::Def(DefKind::Cluster))
    );
    assert_eq!(at("plan < tp [1 2] |").role, Role::Key(PLAN));
}

// ---- hover, completion, definition, symbols, formatting, quick fixes ----

/// A session with one user file; returns it and the file.
fn session(text: &str) -> (Session, FileId) {
    let mut s = Session::new();
    let f = s
        .db_mut()
        .set_file(std::path::Path::new("/project/main.venus"), text.as_bytes());
    (s, f)
}

const GPU_AND_CLUSTER: &str = "gpu g < peak 1000TFLOP/s memory 80GiB mem_bw 3350GB/s >
cluster c < gpu g  dim nvlink fc 8 450GB/s 1000ns >
plan   p <pp 4>
";

fn offset_of(text: &str, needle: &str) -> u32 {
    text.find(needle).unwrap() as u32
}

#[test]
fn hover_on_a_key_is_its_doc_signature_and_value_in_base_units() {
    let (s, f) = session(GPU_AND_CLUSTER);
    let h = hover(&s, f, offset_of(GPU_AND_CLUSTER, "memory") + 1).unwrap();
    assert_eq!(
        h.markdown,
        "`memory` — gpu key\n\nHBM capacity\n\nsignature: `memory BYTES`\n\n\
         value: 80GiB (85899345920 bytes = 80.00 GiB)"
    );
    assert_eq!(h.span, Span::new(25, 31));
}

#[test]
fn hover_on_a_definition_lists_its_items_with_their_values() {
    let (s, f) = session(GPU_AND_CLUSTER);
    let h = hover(&s, f, 4).unwrap();
    assert_eq!(
        h.markdown,
        "**gpu `g`** — /project/main.venus:1\n\n\
         - `peak 1000TFLOP/s (1000TFLOP/s, 1.0000e15 FLOP/s)`\n\
         - `memory 80GiB (85899345920 bytes = 80.00 GiB)`\n\
         - `mem_bw 3350GB/s (3350GB/s, 3.350e12 bytes/s)`"
    );
    assert_eq!(h.span, Span::new(4, 5));
}

/// Hover on a model name shows its total and active parameters (and the MTP modules apart).
#[test]
fn hover_on_a_model_name_shows_its_parameter_counts() {
    let text = "model mine < hidden 4096 layers 32 heads 32 vocab 32000 seq 4096 >\n\
                scenario a < model deepseek_v3 cluster dgx_h100 plan < micro_batch 1 global_batch 8 > >\n\
                scenario b < model mine cluster dgx_h100 plan < micro_batch 1 global_batch 8 > >\n";
    let (s, f) = session(text);
    let h = hover(&s, f, offset_of(text, "deepseek_v3") + 2).unwrap();
    assert!(
        h.markdown.ends_with(
            "\n\nparameters: 671.03B total, 37.55B active per token, 11.61B in MTP modules"
        ),
        "{}",
        h.markdown
    );
    // 32 × (4·4096² attention + 2·4096·16384 MLP + norms) + the tied 32,000 × 4096 embedding.
    let h = hover(&s, f, offset_of(text, "mine") + 1).unwrap();
    assert!(
        h.markdown
            .ends_with("\n\nparameters: 6.57B total, 6.57B active per token"),
        "{}",
        h.markdown
    );
}

/// Hover on a scenario gives the schedule's closed-form bubble, the one `venusc schedule`
/// draws: pp 8 and 7 microbatches idle 7 of 14 slots.
#[test]
fn hover_on_a_scenario_shows_the_schedules_closed_form_bubble() {
    let text = "scenario a < model gpt_1_7b cluster dgx_a100 plan < pp 8 micro_batch 1 global_batch 7 > >\n";
    let (s, f) = session(text);
    let h = hover(&s, f, offset_of(text, "a <")).unwrap();
    assert!(
        h.markdown
            .contains("\n- schedule: 1f1b, pipeline bubble 50.0% (the schedule's closed form)"),
        "{}",
        h.markdown
    );
}

#[test]
fn hover_on_a_value_gives_nothing() {
    let (s, f) = session(GPU_AND_CLUSTER);
    assert_eq!(hover(&s, f, offset_of(GPU_AND_CLUSTER, "80GiB") + 1), None);
}

#[test]
fn definition_of_a_reference_is_the_name_it_refers_to() {
    let (s, f) = session(GPU_AND_CLUSTER);
    let target = definition(&s, f, offset_of(GPU_AND_CLUSTER, "g  dim")).unwrap();
    assert_eq!(target, Loc::new(f, Span::new(4, 5)));
    assert_eq!(
        definition(&s, f, offset_of(GPU_AND_CLUSTER, "450GB/s")),
        None
    );
}

#[test]
fn completion_of_a_topology_lists_the_three_topologies_as_words() {
    let (s, f) = session(GPU_AND_CLUSTER);
    let items = completion(&s, f, offset_of(GPU_AND_CLUSTER, "fc") as usize);
    let got: Vec<(&str, CompletionKind)> =
        items.iter().map(|c| (c.label.as_str(), c.kind)).collect();
    assert_eq!(
        got,
        vec![
            ("fc", CompletionKind::Word),
            ("ring", CompletionKind::Word),
            ("switch", CompletionKind::Word)
        ]
    );
}

#[test]
fn completion_after_a_flag_offers_on_off_then_every_key_of_the_block() {
    let text = "plan < sp  >\n";
    let (s, f) = session(text);
    let items = completion(&s, f, 10);
    let plan_keys = schema::keys(PLAN);
    // `on`, `off`, then every plan key but `sp`, which is already set.
    assert_eq!(items.len(), 2 + plan_keys.len() - 1);
    assert_eq!(
        (items[0].label.as_str(), items[1].label.as_str()),
        ("on", "off")
    );
    let mb = items.iter().find(|c| c.label == "micro_batch").unwrap();
    assert_eq!(
        mb,
        &Completion {
            label: "micro_batch".into(),
            kind: CompletionKind::Key,
            detail: Some("`micro_batch COUNT`".into()),
            doc: Some("sequences per microbatch".into()),
        }
    );
}

#[test]
fn completion_at_the_top_level_is_the_six_keywords() {
    let (s, f) = session("plan < pp 4 >\n");
    let labels: Vec<String> = completion(&s, f, 14).into_iter().map(|c| c.label).collect();
    assert_eq!(
        labels,
        ["model", "gpu", "cluster", "plan", "scenario", "use"]
    );
}

#[test]
fn document_symbols_are_the_definitions_with_name_and_whole_spans() {
    let (s, f) = session(GPU_AND_CLUSTER);
    let symbols = document_symbols(&s, f);
    let got: Vec<(&str, &str, DefKind, Span, Span)> = symbols
        .iter()
        .map(|d| {
            (
                d.name.as_str(),
                d.detail.as_str(),
                d.kind,
                d.span,
                d.selection,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("g", "gpu", DefKind::Gpu, Span::new(0, 55), Span::new(4, 5)),
            (
                "c",
                "cluster",
                DefKind::Cluster,
                Span::new(56, 107),
                Span::new(64, 65)
            ),
            (
                "p",
                "plan",
                DefKind::Plan,
                Span::new(108, 123),
                Span::new(115, 116)
            ),
        ]
    );
}

#[test]
fn formatting_is_one_edit_over_the_whole_file() {
    let (s, f) = session("plan   p <pp 4>\n");
    assert_eq!(
        formatting(&s, f),
        Some(TextEdit {
            loc: Loc::new(f, Span::new(0, 16)),
            new_text: "plan p < pp 4 >\n".into(),
        })
    );
    let (s, f) = session("plan p < pp 4 >\n");
    assert_eq!(formatting(&s, f), None);
}

#[test]
fn a_misspelt_key_gets_a_rename_quick_fix() {
    let text = "plan p < pp 4 micro_bach 2 >\n";
    let (s, f) = session(text);
    let actions = code_actions(&s, f, 0, text.len() as u32);
    let got: Vec<(&str, TextEdit)> = actions
        .iter()
        .map(|a| (a.title.as_str(), a.edit.clone()))
        .collect();
    assert_eq!(
        got,
        vec![(
            "replace `micro_bach` with `micro_batch`",
            TextEdit {
                loc: Loc::new(f, Span::new(14, 24)),
                new_text: "micro_batch".into(),
            }
        )]
    );
}

#[test]
fn completion_at_a_value_position_offers_the_example_value_not_keys() {
    let text = "model m < hidden 8 seq  >\n";
    let (s, f) = session(text);
    let items = completion(&s, f, offset_of(text, "seq ") as usize + 4);
    let got: Vec<(&str, CompletionKind)> =
        items.iter().map(|c| (c.label.as_str(), c.kind)).collect();
    assert_eq!(got, [("4096", CompletionKind::Word)]);
    assert_eq!(
        at("cluster c < dim nvlink fc 8 | >").role,
        Role::Arg {
            block: BlockKind::Def(DefKind::Cluster),
            sig: schema::lookup(BlockKind::Def(DefKind::Cluster), "dim").unwrap(),
            index: 3,
            slot: ArgType::Bandwidth,
            optional: false,
        }
    );
}

#[test]
fn completion_of_keys_leaves_out_the_keys_already_set_but_not_repeatable_ones() {
    let text = "plan p < tp 8 micro_batch 1  >\ncluster c < dim a fc 8 1GB/s  >\n";
    let (s, f) = session(text);
    let labels = |offset: usize| -> Vec<String> {
        completion(&s, f, offset)
            .into_iter()
            .map(|c| c.label)
            .collect()
    };
    let in_plan = labels(offset_of(text, "1  >") as usize + 2);
    assert!(!in_plan.contains(&"tp".to_string()), "{in_plan:?}");
    assert!(!in_plan.contains(&"micro_batch".to_string()));
    assert!(in_plan.contains(&"pp".to_string()));
    assert_eq!(
        in_plan.len(),
        schema::keys(PLAN).len() - 2,
        "every other plan key: {in_plan:?}"
    );
    let in_cluster = labels(offset_of(text, "1GB/s  >") as usize + 6);
    assert!(in_cluster.contains(&"dim".to_string()), "{in_cluster:?}");
}

#[test]
fn hover_on_a_flag_renders_its_signature_as_two_code_spans() {
    let text = "plan p < distributed_optimizer >\n";
    let (s, f) = session(text);
    let h = hover(&s, f, offset_of(text, "distributed") + 2).unwrap();
    assert!(
        h.markdown
            .contains("signature: `distributed_optimizer` or `distributed_optimizer on|off`"),
        "{}",
        h.markdown
    );
    assert!(!h.markdown.contains("``"), "{}", h.markdown);
}
