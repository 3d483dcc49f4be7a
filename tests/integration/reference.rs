//! `docs/language.md` is generated from the key table; this test keeps the committed file
//! equal to the generated text (and rewrites it when `UPDATE_DOCS=1`).

use venusc::syntax::schema::{self, BlockKind, Key};

const PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/language.md");

#[test]
fn language_reference_is_generated_from_the_key_table() {
    let generated = schema::language_reference();
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(PATH, &generated).expect("write docs/language.md");
        return;
    }
    let committed = std::fs::read_to_string(PATH).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/language.md is not the text generated from the key table; regenerate it with\n    {}",
        schema::REGENERATE_REFERENCE
    );
}

#[test]
fn language_reference_has_one_section_per_block_kind_and_one_row_per_key() {
    let text = schema::language_reference();
    for block in schema::block_kinds() {
        assert!(
            text.contains(&format!("\n## `{}`\n", block.name())),
            "{}",
            block.name()
        );
    }
    let rows = text.lines().filter(|l| l.starts_with("| `")).count();
    assert_eq!(rows, schema::TABLE.len());
    assert!(text.contains(
        "| `micro_batch` | `micro_batch COUNT` | required | sequences | sequences per microbatch \
         | `--micro-batch-size` | `micro-batch-size` |"
    ));
    // Pipes of enum signatures are escaped so the table keeps its columns.
    assert!(text.contains(
        "`schedule gpipe\\|1f1b\\|interleaved\\|zb_h1\\|zb_h2\\|dualpipe\\|dualpipev\\|zbv`"
    ));
}

#[test]
fn typed_keys_name_their_table_entry() {
    assert_eq!(Key::MicroBatch.name(), "micro_batch");
    assert_eq!(Key::Tp.sig().megatron, Some("--tensor-model-parallel-size"));
    assert_eq!(
        Key::Tp.block(),
        BlockKind::Def(venusc::syntax::ast::DefKind::Plan)
    );
    assert_eq!(Key::all().count(), schema::TABLE.len());
    assert!(Key::all().all(|k| k.sig().id == k));
}
