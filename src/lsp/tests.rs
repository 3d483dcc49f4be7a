//! The server's handlers, driven directly (the stdio protocol is tested end to end in
//! `tests/integration/lsp.rs`).

#![allow(clippy::mutable_key_type)] // lsp-types keys `WorkspaceEdit::changes` by `Uri`

use super::*;
use crate::db::Database;
use crate::Session;

const URI: &str = "file:///project/main.venus";

/// The E0301 example: dp 4 on 16 GPUs with tp 1 × pp 8.
const E0301: &str = "model llama2 <
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
  pp 8 vpp 2 tp 1 dp 4
  micro_batch 2 global_batch 64
>
";

fn pos(text: &str, needle: &str, delta: usize) -> lsp::Position {
    let offset = text.find(needle).unwrap() + delta;
    let (line, character) = LineIndex::new(text).position(offset);
    lsp::Position { line, character }
}

fn server_with(text: &str) -> Server {
    let mut s = Server::with_session(Session::with_db(Database::with_query_log()));
    s.open_document(URI, 1, text);
    s
}

#[test]
fn e0301_is_published_on_the_dp_value_with_code_help_and_related_labels() {
    let mut s = server_with(E0301);
    let published = s.diagnostics_to_publish();
    assert_eq!(published.len(), 1);
    let d = &published[0].diagnostics;
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(d[0].code, Some(lsp::NumberOrString::String("E0301".into())));
    let start = pos(E0301, "dp 4", 3);
    assert_eq!(d[0].range.start, start);
    assert_eq!(d[0].range.end.character, start.character + 1);
    assert!(
        d[0].message.contains("help: use `dp 2`"),
        "{}",
        d[0].message
    );
    let related = d[0].related_information.as_ref().unwrap();
    assert!(related.iter().any(|r| r.message == "pp 8"), "{related:#?}");
    // Nothing changed: nothing is published again.
    assert!(s.diagnostics_to_publish().is_empty());
}

#[test]
fn the_dp_quick_fix_replaces_4_with_2() {
    let s = server_with(E0301);
    let p = pos(E0301, "dp 4", 3);
    let actions = s
        .code_actions(URI, lsp::Range { start: p, end: p })
        .unwrap();
    assert_eq!(actions.len(), 1, "{actions:#?}");
    assert_eq!(actions[0].title, "replace `4` with `2`");
    let changes = actions[0].edit.as_ref().unwrap().changes.as_ref().unwrap();
    let edits = changes.values().next().unwrap();
    assert_eq!(edits[0].new_text, "2");
    assert_eq!(edits[0].range.start, p);
}

#[test]
fn a_spaced_unit_gets_a_quick_fix_that_joins_it() {
    let text = "gpu g < peak 1TFLOP/s memory 80GiB mem_bw 450 GB/s >\n";
    let s = server_with(text);
    let p = pos(text, "450", 0);
    let actions = s
        .code_actions(URI, lsp::Range { start: p, end: p })
        .unwrap();
    let edit = &actions[0].edit.as_ref().unwrap().changes.as_ref().unwrap()
        [&lsp::Uri::from_str(URI).unwrap()][0];
    assert_eq!(edit.new_text, "450GB/s");
    assert_eq!(edit.range.end, pos(text, " >", 0));
}

#[test]
fn a_misspelt_key_and_name_get_rename_fixes() {
    let text = "plan p < micro_bach 1 global_batch 8 >\nscenario s < model llama2_7c cluster dgx_h100 plan p >\n";
    let s = server_with(text);
    let all = lsp::Range {
        start: lsp::Position {
            line: 0,
            character: 0,
        },
        end: lsp::Position {
            line: 2,
            character: 0,
        },
    };
    let titles: Vec<String> = s
        .code_actions(URI, all)
        .unwrap()
        .into_iter()
        .map(|a| a.title)
        .collect();
    assert!(
        titles.contains(&"replace `micro_bach` with `micro_batch`".to_string()),
        "{titles:?}"
    );
    assert!(
        titles.contains(&"replace `llama2_7c` with `llama2_7b`".to_string()),
        "{titles:?}"
    );
}

#[test]
fn definition_of_a_stdlib_gpu_is_in_the_stdlib_document() {
    let text = "cluster c < gpu h100_sxm dim nvlink fc 8 450GB/s >\n";
    let s = server_with(text);
    let loc = s.definition(URI, pos(text, "h100_sxm", 2)).unwrap();
    assert_eq!(loc.uri.as_str(), "venus-stdlib:///gpus.venus");
    let stdlib = Server::stdlib_text(loc.uri.as_str()).unwrap();
    let idx = LineIndex::new(stdlib);
    let start = idx.offset(loc.range.start.line, loc.range.start.character);
    assert_eq!(&stdlib[start..start + 8], "h100_sxm");
}

#[test]
fn hover_on_a_key_shows_doc_and_value_with_units() {
    let text = "gpu g < peak 1000TFLOP/s memory 80GiB mem_bw 3350GB/s >\n";
    let s = server_with(text);
    let h = s.hover(URI, pos(text, "memory", 1)).unwrap();
    let lsp::HoverContents::Markup(m) = h.contents else {
        panic!()
    };
    assert!(m.value.contains("HBM capacity"), "{}", m.value);
    assert!(
        m.value.contains("80GiB (85899345920 bytes = 80.00 GiB)"),
        "{}",
        m.value
    );
}

#[test]
fn hover_on_an_overriding_key_names_the_base_it_overrides() {
    let text = "gpu g : h100_sxm < memory 96GiB >\n";
    let s = server_with(text);
    let h = s.hover(URI, pos(text, "memory", 0)).unwrap();
    let lsp::HoverContents::Markup(m) = h.contents else {
        panic!()
    };
    assert!(m.value.contains("overrides `memory 80GiB"), "{}", m.value);
    assert!(
        m.value.contains("gpu `h100_sxm` (<stdlib>/gpus.venus:"),
        "{}",
        m.value
    );
}

#[test]
fn hover_on_a_definition_lists_inherited_items_with_their_origin() {
    let text = "gpu g : h100_sxm < memory 96GiB >\n";
    let s = server_with(text);
    let h = s.hover(URI, pos(text, "g :", 0)).unwrap();
    let lsp::HoverContents::Markup(m) = h.contents else {
        panic!()
    };
    assert!(
        m.value.starts_with("**gpu `g`** : `h100_sxm`"),
        "{}",
        m.value
    );
    assert!(m.value.contains("- `memory 96GiB"), "{}", m.value);
    assert!(m.value.contains("- `peak 989.4TFLOP/s"), "{}", m.value);
    assert!(m.value.contains("— from gpu `h100_sxm`"), "{}", m.value);
}

#[test]
fn hover_on_a_valid_plan_shows_derived_values() {
    let text = E0301.replace("dp 4", "dp 2");
    let s = server_with(&text);
    let h = s.hover(URI, pos(&text, "plan <", 0)).unwrap();
    let lsp::HoverContents::Markup(m) = h.contents else {
        panic!()
    };
    assert!(
        m.value.contains("world 16 = tp 1 × pp 8 × cp 1 × dp 2"),
        "{}",
        m.value
    );
    assert!(
        m.value
            .contains("microbatches: 16 (global_batch 64 / (micro_batch 2 × dp 2))"),
        "{}",
        m.value
    );
    assert!(
        m.value.contains("layers per stage: 4 per stage"),
        "{}",
        m.value
    );
    assert!(m.value.contains("- stage 7: "), "{}", m.value);
    assert!(
        m.value.contains("GPU `demo_gpu` has 80.00 GiB"),
        "{}",
        m.value
    );
}

#[test]
fn completion_in_a_plan_offers_plan_keys_with_docs() {
    let text = "plan p <\n  pp 4\n  \n>\n";
    let s = server_with(text);
    let items = s
        .completion(
            URI,
            lsp::Position {
                line: 2,
                character: 2,
            },
        )
        .unwrap();
    let labels: Vec<&str> = items.iter().map(|i| i.label.as_str()).collect();
    for key in ["micro_batch", "global_batch", "schedule", "recompute"] {
        assert!(labels.contains(&key), "{labels:?}");
    }
    assert!(!labels.contains(&"hidden"));
    let mb = items.iter().find(|i| i.label == "micro_batch").unwrap();
    assert_eq!(
        mb.documentation,
        Some(lsp::Documentation::String(
            "sequences per microbatch".into()
        ))
    );
}

#[test]
fn completion_after_gpu_offers_gpu_names_user_and_stdlib() {
    let text = "gpu mine < peak 1TFLOP/s memory 1GiB mem_bw 1GB/s >\ncluster c < gpu  >\n";
    let s = server_with(text);
    let items = s.completion(URI, pos(text, "gpu  >", 4)).unwrap();
    let labels: Vec<&str> = items.iter().map(|i| i.label.as_str()).collect();
    assert!(labels.contains(&"mine"), "{labels:?}");
    assert!(labels.contains(&"h100_sxm"), "{labels:?}");
    assert!(!labels.contains(&"llama2_7b"), "{labels:?}");
}

#[test]
fn completion_after_schedule_offers_the_schedules() {
    let text = "plan p < schedule  >\n";
    let s = server_with(text);
    let items = s.completion(URI, pos(text, "schedule ", 9)).unwrap();
    let labels: Vec<&str> = items.iter().map(|i| i.label.as_str()).collect();
    assert_eq!(
        labels,
        vec![
            "gpipe",
            "1f1b",
            "interleaved",
            "zb_h1",
            "zb_h2",
            "dualpipe",
            "dualpipev",
            "zbv"
        ]
    );
}

#[test]
fn document_symbols_list_the_definitions_with_their_kinds() {
    let s = server_with(E0301);
    let symbols = s.document_symbols(URI).unwrap();
    let names: Vec<(&str, lsp::SymbolKind)> =
        symbols.iter().map(|d| (d.name.as_str(), d.kind)).collect();
    assert_eq!(
        names,
        vec![
            ("llama2", lsp::SymbolKind::CLASS),
            ("demo_gpu", lsp::SymbolKind::STRUCT),
            ("cluster", lsp::SymbolKind::NAMESPACE),
            ("plan", lsp::SymbolKind::OBJECT),
        ]
    );
}

#[test]
fn formatting_returns_one_whole_document_edit() {
    let text = "plan   p <pp 4>\n";
    let s = server_with(text);
    let edits = s.formatting(URI).unwrap();
    assert_eq!(edits.len(), 1);
    assert_eq!(edits[0].new_text, "plan p < pp 4 >\n");
    assert_eq!(
        edits[0].range.end,
        lsp::Position {
            line: 1,
            character: 0
        }
    );
}

#[test]
fn incremental_change_updates_the_text_and_the_diagnostics() {
    let mut s = server_with(E0301);
    assert_eq!(s.diagnostics_to_publish()[0].diagnostics.len(), 1);
    let p = pos(E0301, "dp 4", 3);
    let change = lsp::TextDocumentContentChangeEvent {
        range: Some(lsp::Range {
            start: p,
            end: lsp::Position {
                line: p.line,
                character: p.character + 1,
            },
        }),
        range_length: None,
        text: "2".into(),
    };
    s.change_document(URI, 2, &[change]);
    let published = s.diagnostics_to_publish();
    assert_eq!(published.len(), 1);
    assert_eq!(published[0].version, Some(2));
    let codes: Vec<_> = published[0]
        .diagnostics
        .iter()
        .map(|d| d.code.clone())
        .collect();
    // E0301 is gone and the now valid plan checks clean.
    assert_eq!(codes, Vec::<Option<lsp::NumberOrString>>::new());
}

#[test]
fn an_edit_to_a_user_file_reruns_no_stdlib_query() {
    let mut s = server_with(E0301);
    let _ = s.document_diagnostics(URI);
    let first = s.session().db().take_executed();
    assert!(first.iter().any(|(q, _)| q == "prelude"), "{first:?}");
    let full = lsp::TextDocumentContentChangeEvent {
        range: None,
        range_length: None,
        text: E0301.replace("dp 4", "dp 2"),
    };
    s.change_document(URI, 2, &[full]);
    let _ = s.document_diagnostics(URI);
    let after = s.session().db().take_executed();
    let count = |name: &str| after.iter().filter(|(q, _)| q == name).count();
    assert_eq!(count("prelude"), 0, "{after:?}");
    // Only the edited file is parsed and indexed again.
    assert_eq!(count("parse_file"), 1, "{after:?}");
    assert_eq!(count("file_index"), 1, "{after:?}");
    assert_eq!(count("program_query"), 1, "{after:?}");
}

#[test]
fn bad_requests_get_errors_not_panics() {
    let mut s = Server::new();
    let req = lsp_server::Request::new(
        1.into(),
        "textDocument/hover".into(),
        serde_json::json!({"nonsense": true}),
    );
    let r = handle_request(&mut s, &req);
    assert_eq!(
        r.response_result.unwrap_err().code,
        ErrorCode::InvalidParams as i32
    );
    let req = lsp_server::Request::new(2.into(), "venus/nothing".into(), serde_json::json!({}));
    assert_eq!(
        handle_request(&mut s, &req)
            .response_result
            .unwrap_err()
            .code,
        ErrorCode::MethodNotFound as i32
    );
    // A position far outside an unknown document: an empty answer.
    let req = lsp_server::Request::new(
        3.into(),
        "textDocument/hover".into(),
        serde_json::json!({"textDocument": {"uri": "file:///nope.venus"}, "position": {"line": 99999, "character": 99999}}),
    );
    let r = handle_request(&mut s, &req);
    assert_eq!(r.response_result.unwrap(), serde_json::Value::Null);
}

#[test]
fn the_stdlib_request_returns_the_embedded_text() {
    let mut s = Server::new();
    let req = lsp_server::Request::new(
        1.into(),
        STDLIB_REQUEST.into(),
        serde_json::json!({"uri": "venus-stdlib:///models.venus"}),
    );
    let r = handle_request(&mut s, &req);
    let text = r.response_result.unwrap()["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(text.contains("llama2_7b"));
}

#[test]
fn file_uris_round_trip_through_paths_with_spaces() {
    let path = std::path::Path::new("/tmp/my dir/a.venus");
    let uri = path_to_uri(path);
    assert_eq!(uri, "file:///tmp/my%20dir/a.venus");
    assert_eq!(uri_to_path(&uri), path);
}

use std::str::FromStr;

#[test]
fn a_sweep_document_shows_what_check_reports_not_the_list_errors() {
    let sweep = "model m : llama2_7b < >\ncluster c : dgx_h100 < nodes 2 >\nplan < tp [1 2 4 8] micro_batch 1 global_batch [64 128] >\n";
    let mut s = server_with(sweep);
    assert_eq!(s.document_diagnostics(URI), Some(Vec::new()));
    // A bad element is reported at the element, and the document's text is left as typed.
    let bad = sweep.replace("[1 2 4 8]", "[1 2 four]");
    let mut s = server_with(&bad);
    let d = s.document_diagnostics(URI).unwrap();
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(d[0].code, Some(lsp::NumberOrString::String("E0201".into())));
    assert_eq!((d[0].range.start.line, d[0].range.start.character), (2, 15));
    // Checking it again gives the same answer: the sweep's probing left the text as typed.
    assert_eq!(s.document_diagnostics(URI).unwrap(), d);
}
