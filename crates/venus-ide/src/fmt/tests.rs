//! Formatter tests: the canonical layout of blocks, dims, comments, numbers and semicolons;
//! formatting is idempotent, and a file with syntax errors is not formatted.

use super::*;

fn fmt(text: &str) -> String {
    match format(text) {
        Ok(s) => s,
        Err(e) => panic!("{e}: {e:?}"),
    }
}

#[test]
fn a_block_written_on_one_line_stays_one_line_with_one_space_inside() {
    assert_eq!(fmt("plan   <pp 4 dp 4>"), "plan < pp 4 dp 4 >\n");
    assert_eq!(fmt("model m : base <\n>"), "model m : base < >\n");
    // Many items, multi-argument items and nested blocks alike, while it is short.
    assert_eq!(
        fmt("gpu g < peak 989TFLOP/s memory 80GiB mem_bw 3350GB/s fp8_peak 1979TFLOP/s >"),
        "gpu g < peak 989TFLOP/s memory 80GiB mem_bw 3350GB/s fp8_peak 1979TFLOP/s >\n"
    );
    assert_eq!(
        fmt("scenario s < model m cluster c plan < pp 4 dp 4 > >"),
        "scenario s < model m cluster c plan < pp 4 dp 4 > >\n"
    );
}

#[test]
fn items_the_author_wrote_on_one_line_stay_on_one_line() {
    let src = "model m <\n  hidden 4096  ffn 16384  layers 32\n  heads 16 kv_groups 4\n>\n";
    assert_eq!(fmt(src), src);
    // A hanging continuation stays under the first item; a shallow one gets the indentation.
    let hang = "plan < tp 8 sp pp 4\n       distributed_optimizer >\n";
    assert_eq!(fmt(hang), hang);
    assert_eq!(fmt("plan   <pp 4\n dp 4>"), "plan < pp 4\n  dp 4 >\n");
}

#[test]
fn only_what_already_is_a_column_is_aligned() {
    // Dims whose arguments start at the same columns stay a column, as narrow as it can be.
    let aligned = "cluster <\n  gpu h100_sxm\n  dim nvlink fc     8 450GB/s 1000ns\n  dim ib     ring   2 50GB/s  6000ns\n>";
    assert_eq!(
        fmt(aligned),
        "cluster <\n  gpu h100_sxm\n  dim nvlink fc   8 450GB/s 1000ns\n  dim ib     ring 2 50GB/s  6000ns\n>\n"
    );
    // Unaligned ones are not aligned; a single-argument run likewise.
    let plain = "cluster <\n  gpu h100_sxm\n  dim nvlink fc 8 450GB/s 1000ns\n  dim ib ring 2 50GB/s 6000ns\n>\n";
    assert_eq!(fmt(plain), plain);
    assert_eq!(
        fmt("gpu g <\n  peak     989TFLOP/s\n  memory   80GiB\n>"),
        "gpu g <\n  peak   989TFLOP/s\n  memory 80GiB\n>\n"
    );
    let unaligned = "gpu g <\n  peak 989TFLOP/s\n  memory 80GiB\n>\n";
    assert_eq!(fmt(unaligned), unaligned);
}

#[test]
fn blank_lines_between_definitions_are_kept_and_collapsed() {
    let out =
        fmt("gpu a < peak 1TFLOP/s >\n\n\n\ngpu b < peak 2TFLOP/s >\ngpu c < peak 3TFLOP/s >");
    assert_eq!(
        out,
        "gpu a < peak 1TFLOP/s >\n\ngpu b < peak 2TFLOP/s >\ngpu c < peak 3TFLOP/s >\n"
    );
}

#[test]
fn comments_are_kept_own_line_and_trailing_with_the_authors_spacing() {
    let src = "# header\n\n# about p\nplan p < # opener\n  pp 4 # four stages\n\n\n  # batch\n  micro_batch 1\n  # last\n>  # after\n";
    assert_eq!(
        fmt(src),
        "# header\n\n# about p\nplan p < # opener\n  pp 4 # four stages\n\n  # batch\n  micro_batch 1\n  # last\n>  # after\n"
    );
    // A column of trailing comments stays a column.
    let column = "plan <\n  tp 8            # in a node\n  global_batch 64 # sequences\n>\n";
    assert_eq!(fmt(column), column);
    // A comment forces a one-line block open.
    assert_eq!(fmt("plan < pp 4 # x\n >"), "plan < pp 4 # x\n>\n");
}

#[test]
fn blank_lines_between_item_groups_are_kept_and_collapsed() {
    let src = "model m <\n  hidden 1\n  layers 2\n\n\n\n  heads 3\n  vocab 4\n  seq 5\n>";
    assert_eq!(
        fmt(src),
        "model m <\n  hidden 1\n  layers 2\n\n  heads 3\n  vocab 4\n  seq 5\n>\n"
    );
}

#[test]
fn numbers_units_and_strings_are_kept_as_written() {
    let out =
        fmt("use  \"a/b.venus\"\nmodel m < hidden 4_096 >\nplan < mfu 0.55 bucket_size 1e3MB >");
    assert_eq!(
        out,
        "use \"a/b.venus\"\nmodel m < hidden 4_096 >\nplan < mfu 0.55 bucket_size 1e3MB >\n"
    );
}

#[test]
fn consecutive_uses_stay_grouped() {
    assert_eq!(
        fmt("use \"a.venus\"\nuse \"b.venus\"\n\n\nuse \"c.venus\""),
        "use \"a.venus\"\nuse \"b.venus\"\n\nuse \"c.venus\"\n"
    );
}

#[test]
fn semicolons_are_dropped_unless_the_parser_needs_them() {
    assert_eq!(fmt("plan < pp 4; dp 4; >"), "plan < pp 4 dp 4 >\n");
    // `gpu` with its name missing: without `;` the next key would become its argument.
    assert_eq!(
        fmt("cluster < gpu; nodes 2 >"),
        "cluster < gpu; nodes 2 >\n"
    );
    // A flag followed by an (unknown) key spelled like a flag word.
    assert_eq!(fmt("plan < sp; on >"), "plan < sp; on >\n");
}

#[test]
fn nested_blocks_keep_their_lines_and_indentation() {
    let src = "scenario s <\n  model m cluster c\n  plan < pp 4 dp 4\n         measured < first 1ms middle 1ms last 1ms > >\n>\n";
    assert_eq!(fmt(src), src);
    assert_eq!(
        fmt("scenario s <\n model m\n    plan <\n pp 4\n  >\n>"),
        "scenario s <\n  model m\n  plan <\n    pp 4\n  >\n>\n"
    );
}

#[test]
fn a_one_line_block_too_long_to_stay_one_is_an_item_a_line() {
    let src = "plan < distributed_optimizer overlap_grad_reduce overlap_param_gather_with_a_very_long_flag_name_x sp tp 8 pp 2 >";
    assert_eq!(
        fmt(src),
        "plan <\n  distributed_optimizer\n  overlap_grad_reduce\n  overlap_param_gather_with_a_very_long_flag_name_x\n  sp\n  tp 8\n  pp 2\n>\n"
    );
}

#[test]
fn a_file_with_the_skip_directive_is_left_as_written() {
    let src = "plan   <  pp 4   dp 4 >\n# venusc: fmt skip\n";
    assert_eq!(fmt(src), src);
}

#[test]
fn syntax_errors_are_returned_and_nothing_is_formatted() {
    match format("model m < hidden 4096 ") {
        Err(FormatError::Syntax(d)) => assert_eq!(d[0].code, venus_diag::diag::Code::E0002),
        other => panic!("{other:?}"),
    }
    match format("gpu g < mem_bw 450 GB/s >") {
        Err(FormatError::Syntax(d)) => assert_eq!(d[0].code, venus_diag::diag::Code::E0003),
        other => panic!("{other:?}"),
    }
}

#[test]
fn formatting_is_idempotent_on_the_test_inputs() {
    for src in [
        "# header\n\n# about p\nplan p < # opener\n  pp 4 # four stages\n\n\n  # batch\n  micro_batch 1\n  # last\n>  # after\n",
        "scenario s < model m cluster c plan < pp 4 dp 4 measured < first 1ms middle 1ms last 1ms > > >",
        "cluster < gpu h100_sxm dim nvlink fc 8 450GB/s 1000ns # nv\n dim ib ring 2 50GB/s 6000ns >",
        "model # odd\n m < hidden 1 >",
        "",
        "# only a comment",
    ] {
        let once = fmt(src);
        assert_eq!(fmt(&once), once, "{src:?}");
    }
}

#[test]
fn empty_file_stays_empty_and_comment_only_file_keeps_its_comment() {
    assert_eq!(fmt("\n\n"), "");
    assert_eq!(fmt("# c\n\n"), "# c\n");
}

/// Comments inside multi-argument items (the reliability report's L3 and its neighbours):
/// formatting twice gives the same text as formatting once, and every comment is kept.
#[test]
fn comments_inside_multi_argument_items_format_to_a_fixed_point() {
    let cases = [
        // L3 as reported: two comments inside the first `dim`.
        "cluster c <\n  gpu h100_sxm\n  dim nv # a\n fc # b\n 8 450GB/s\n  dim ib ring 2 50GB/s\n>\n",
        // One comment inside: it trails the line, the dims stay aligned.
        "cluster c <\n  gpu h100_sxm\n  dim nv # a\n fc 8 450GB/s\n  dim ib ring 2 50GB/s\n>\n",
        // One inside and one trailing the same item.
        "cluster c <\n  gpu h100_sxm\n  dim nv # a\n fc 8 450GB/s # t\n  dim ib ring 2 50GB/s\n>\n",
        // Inside the second of the run.
        "cluster c <\n  gpu h100_sxm\n  dim nv fc 8 450GB/s\n  dim ib # x\n ring # y\n 2 50GB/s\n  dim z fc 2 1GB/s\n>\n",
        // Single-argument runs with comments between key and value.
        "gpu g <\n  peak # p\n 989TFLOP/s # q\n  memory 80GiB\n  mem_bw 3350GB/s\n  fp8_peak 1979TFLOP/s\n>\n",
        // Three comments in one item of a plan.
        "plan <\n  tp # a\n # b\n 8 # c\n  pp 1\n  dp 1\n  micro_batch 1\n  global_batch 8\n>\n",
    ];
    for text in cases {
        let once = fmt(text);
        let twice = fmt(&once);
        assert_eq!(twice, once, "not a fixed point:\n{text}\n---\n{once}");
        let comments = |t: &str| t.matches('#').count();
        assert_eq!(comments(&once), comments(text), "{once}");
    }
    let l3 = fmt(cases[0]);
    assert_eq!(
        l3,
        "cluster c <\n  gpu h100_sxm\n  dim nv fc 8 450GB/s # a\n  # b\n  dim ib ring 2 50GB/s\n>\n"
    );
    assert_eq!(
        fmt(cases[1]),
        "cluster c <\n  gpu h100_sxm\n  dim nv fc 8 450GB/s # a\n  dim ib ring 2 50GB/s\n>\n"
    );
}
