//! The IDE layer on plain data: the cursor's role, hover text, completion lists and definition
//! targets, with exact expected values.

use super::*;
use crate::diag::Span;
use crate::syntax::ast::DefKind;
use crate::syntax::schema::{self, ArgType, BlockKind};

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
