//! Sweep tests: candidates as the product of the plan's lists, their rendering back to text,
//! pruning by the checker's codes, and the ranking of simulated results.

use std::collections::BTreeMap;
use std::path::Path;

use super::auto::AUTO_MICRO_BATCHES;
use super::space::{divisors, TextLayout};
use super::*;
use crate::diag::Code;
use crate::simulate::{simulate, SimOptions};

const TINY: &str =
    "model tiny < hidden 1024 layers 8 heads 12 head_dim 85 vocab 32000 seq 1024 >\n\
cluster pod : dgx_a100 < nodes 2 >\n";

fn session_with(text: &str) -> (Session, FileId) {
    let mut session = Session::new();
    let root = session.load(Path::new("sweep.venus"), text.as_bytes(), &mut |_| {
        Err("not in this test".to_string().into())
    });
    (session, root)
}

fn prepared(text: &str, opts: &SweepOptions) -> Result<(Session, Sweep), PrepareError> {
    let (mut session, root) = session_with(text);
    let sweep = prepare(&mut session, Path::new("sweep.venus"), root, opts)?;
    Ok((session, sweep))
}

fn list_sweep(plan: &str) -> (Session, Sweep) {
    prepared(
        &format!("{TINY}plan p < {plan} >\n"),
        &SweepOptions::default(),
    )
    .unwrap()
}

fn auto() -> SweepOptions {
    SweepOptions {
        auto: Some(AutoOptions::default()),
        ..SweepOptions::default()
    }
}

#[test]
fn candidates_are_the_product_of_the_lists_last_axis_fastest() {
    let (_, sw) = list_sweep("tp [1 2 4] pp [1 2] micro_batch 1 global_batch 32");
    assert_eq!(sw.space.len(), 6);
    assert_eq!(sw.space.choices(0), vec![0, 0]);
    assert_eq!(sw.space.choices(1), vec![0, 1]);
    assert_eq!(sw.space.choices(5), vec![2, 1]);
    assert_eq!(sw.space.describe(3), "tp 2, pp 2");
    assert_eq!(sw.world, 16);
    assert_eq!(sw.scenario_name, "sweep");
}

#[test]
fn tidy_render_writes_the_chosen_element_in_place_of_the_list() {
    let (_, sw) = list_sweep("tp [1 2 4] pp [1 2] micro_batch 1 global_batch 32");
    let text = sw.space.render(5, TextLayout::Tidy);
    assert!(
        text.ends_with("plan p < tp 4 pp 2 micro_batch 1 global_batch 32 >\n"),
        "{text}"
    );
}

#[test]
fn padded_render_keeps_every_offset_of_the_file() {
    let plan = "tp [1 2 4] pp [1 2] micro_batch 1 global_batch 32";
    let (_, sw) = list_sweep(plan);
    let original = format!("{TINY}plan p < {plan} >\n");
    let text = sw.space.render(5, TextLayout::Padded);
    assert_eq!(text.len(), original.len());
    assert!(
        text.ends_with("plan p < tp      4  pp    2  micro_batch 1 global_batch 32 >\n"),
        "{text}"
    );
}

#[test]
fn pruned_plans_count_once_under_their_rule_and_add_up_to_the_candidates() {
    // heads 12: tp 8 breaks E0303; tp 8 × pp 4 = 32 > 16 GPUs also breaks E0301, the lower code.
    let (mut session, sw) = list_sweep("tp [1 2 4 8] pp [1 4] micro_batch 1 global_batch 32");
    let (o, timing) = run(&mut session, &sw, None, &Silent);
    assert_eq!(o.candidates, 8);
    assert_eq!(
        o.pruned,
        BTreeMap::from([(prune_key("E0301"), 1), (prune_key("E0303"), 1)])
    );
    assert_eq!(o.results.len(), 6);
    assert_eq!(timing.simulated, 6);
    assert_eq!(o.pruned_total() + o.results.len() as u64, o.candidates);
}

#[test]
fn results_are_ranked_by_time_then_memory_then_candidate() {
    let (mut session, sw) =
        list_sweep("tp [1 2 4] pp [1 2] micro_batch 1 global_batch 32 recompute [none full]");
    let (o, _) = run(&mut session, &sw, None, &Silent);
    assert_eq!(o.results.len(), 12);
    for pair in o.results.windows(2) {
        let key = |r: &Ranked| (r.iteration_time_ms(), r.peak_memory().0, r.candidate);
        assert!(
            key(&pair[0]) <= key(&pair[1]),
            "{:?} before {:?}",
            key(&pair[0]),
            key(&pair[1])
        );
    }
    // Full recomputation costs time and saves memory: the fastest plan does not recompute.
    assert_eq!(o.results[0].plan.recompute, "none");
}

#[test]
fn a_simulated_candidate_has_the_figures_of_its_own_simulation() {
    let (mut session, sw) = list_sweep("tp [1 2] pp 2 micro_batch 1 global_batch 32");
    let (o, _) = run(&mut session, &sw, None, &Silent);
    let best = &o.results[0];
    let sc = check_candidate(&mut session, &sw, best.candidate).unwrap();
    let report = simulate(&sc, &SimOptions::default()).unwrap().report;
    assert_eq!(best.iteration_time_ms(), report.iteration_time.0 * 1e3);
    assert_eq!(best.peak_memory(), report.peak_stage().unwrap().peak);
    assert_eq!(best.plan.pp, 2);
    assert_eq!(best.plan.dp, 16 / 2 / best.plan.tp);
}

#[test]
fn a_list_outside_a_plan_is_an_error_at_the_list() {
    let text = "model tiny < hidden 1024 layers [8 16] heads 16 vocab 32000 seq 1024 >\n\
cluster pod : dgx_a100 < nodes 2 >\nplan p < micro_batch 1 global_batch 32 >\n";
    let Err(PrepareError::Diagnostics(d)) = prepared(text, &SweepOptions::default()) else {
        panic!("expected an error")
    };
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].code, Code::E0201);
    assert_eq!(&text[d[0].primary.loc.span.range()], "[8 16]");
}

#[test]
fn a_bad_element_is_reported_at_its_place_in_the_file_not_pruned() {
    let text = format!("{TINY}plan p < tp [1 2 x] micro_batch 1 global_batch 32 >\n");
    let Err(PrepareError::Diagnostics(d)) = prepared(&text, &SweepOptions::default()) else {
        panic!("expected an error")
    };
    assert_eq!(d[0].code, Code::E0201);
    assert_eq!(&text[d[0].primary.loc.span.range()], "x");
}

#[test]
fn an_empty_list_is_an_error() {
    let text = format!("{TINY}plan p < tp [] micro_batch 1 global_batch 32 >\n");
    let Err(PrepareError::Diagnostics(d)) = prepared(&text, &SweepOptions::default()) else {
        panic!("expected an error")
    };
    assert_eq!(d[0].message, "the list of `tp` is empty");
}

#[test]
fn lists_of_a_plan_the_scenario_does_not_use_are_no_axes() {
    let text = format!(
        "{TINY}plan a < tp [1 2] micro_batch 1 global_batch 32 >\nplan b < pp [1 2 4] micro_batch 1 global_batch 32 >\n\
scenario run < model tiny cluster pod plan a >\n"
    );
    let (_, sw) = prepared(&text, &SweepOptions::default()).unwrap();
    assert_eq!(sw.space.axes().len(), 1);
    assert_eq!(sw.space.axes()[0].name, "tp");
    assert!(sw
        .space
        .render(1, TextLayout::Tidy)
        .contains("plan b < pp 1 micro_batch"));
}

/// The combined axis's parallel shapes: its values at Megatron's defaults of the later rows
/// (micro_batch 1, no recompute, the p2p CP exchange, etp = tp, the all-to-all dispatcher),
/// with those items cut off.
fn shapes(axis: &Axis) -> Vec<String> {
    const TAIL: &str = " micro_batch 1 recompute none";
    axis.labels()
        .iter()
        .filter(|l| l.ends_with(TAIL) && !l.contains("cp_comm") && !l.contains("moe_dispatcher"))
        .filter(|l| !l.contains("etp"))
        .map(|l| l[..l.len() - TAIL.len()].to_string())
        .collect()
}

/// The combined axis's parallel shapes ([`shapes`]) that contain `needle`.
fn values_with(axis: &Axis, needle: &str) -> usize {
    shapes(axis).iter().filter(|l| l.contains(needle)).count()
}

#[test]
fn auto_axes_cover_the_world_the_layers_and_the_sequence() {
    let (_, sw) = prepared(&format!("{TINY}plan p < global_batch 32 >\n"), &auto()).unwrap();
    let names: Vec<&str> = sw.space.axes().iter().map(|a| a.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "tp+sp+overlap_tp_comm+pp+schedule+cp+cp_comm+micro_batch+recompute+recompute_modules",
            "dp_sharding"
        ]
    );
    let axes = sw.space.axes();
    let grid = &axes[0];

    // 16 GPUs, 8 layers: (tp, pp, vpp, cp) with tp × pp × cp | 16, vpp | 8 / pp, counted by
    // hand per tp: 25 shapes with tp 1; 18, 11 and 5 with tp 2, 4 and 8, each with sp off, sp
    // on, and sp on with overlap_tp_comm: 127 with the default schedule. Of them, 9, 6, 3 and
    // 1 per tp have pp > 1 and one chunk per rank (pp 2, 4, 8 are all even): each also runs
    // zb_h1, zb_h2 and dualpipe; 7, 5, 3 and 1 have two chunks per rank: each also runs
    // dualpipev.
    let one_chunk = 9 + 3 * (6 + 3 + 1);
    let two_chunks = 7 + 3 * (5 + 3 + 1);
    let default = 25 + 3 * (18 + 11 + 5);
    assert_eq!(shapes(grid).len(), default + 3 * one_chunk + two_chunks);
    assert_eq!(shapes(grid).len(), 278);
    assert_eq!(shapes(grid)[0], "tp 1 sp off pp 1 vpp 1 cp 1");
    for zero_bubble_or_dualpipe in ["vpp 1 schedule zb_h1", "vpp 1 schedule zb_h2"] {
        assert_eq!(values_with(grid, zero_bubble_or_dualpipe), one_chunk);
    }
    assert_eq!(values_with(grid, "vpp 1 schedule dualpipe cp"), one_chunk);
    assert_eq!(values_with(grid, "vpp 2 schedule dualpipev cp"), two_chunks);
    assert_eq!(values_with(grid, "schedule"), 3 * one_chunk + two_chunks);
    assert_eq!(values_with(grid, "pp 1 vpp 1 schedule"), 0);
    let overlapped = (18 + 11 + 5) + 3 * (6 + 3 + 1) + (5 + 3 + 1);
    assert_eq!(values_with(grid, "overlap_tp_comm on"), overlapped);
    assert_eq!(values_with(grid, "tp 1 sp on"), 0);
    // pp 16 over 8 layers has no split; pp 4 splits 2 layers per stage into 1 or 2 chunks.
    assert_eq!(values_with(grid, "pp 16"), 0);
    assert_eq!(values_with(grid, "tp 1 sp off pp 4 vpp 2 cp"), 3);
    assert_eq!(values_with(grid, "vpp 4"), values_with(grid, "pp 2 vpp 4"));
    // Each shape with every microbatch size, then no, selective (Megatron's core_attn and
    // two module sets of a dense model) and full recompute.
    let labels = axes[0].labels();
    let of = |prefix: &str| -> Vec<&str> {
        labels
            .iter()
            .copied()
            .filter(|l| l.starts_with(prefix))
            .collect()
    };
    let mut want = Vec::new();
    for mb in AUTO_MICRO_BATCHES {
        for tail in [
            "recompute none",
            "recompute selective",
            "recompute selective recompute_modules core_attn mlp",
            "recompute selective recompute_modules mlp layernorm",
            "recompute full",
        ] {
            want.push(format!(
                "tp 1 sp off pp 1 vpp 1 cp 1 micro_batch {mb} {tail}"
            ));
        }
    }
    assert_eq!(of("tp 1 sp off pp 1 vpp 1 cp 1 "), want);
    // cp > 1: the p2p ring (nothing written), then Ulysses a2a where the 12 heads per tp rank
    // divide by cp, allgather, and a2a_p2p over each a2a group size that splits cp and the
    // heads: 4 exchanges at tp 1, cp 4; 2 at tp 8, cp 2 (1.5 heads per rank: no a2a).
    let exchanges = |shape: &str| -> Vec<String> {
        of(&format!("{shape} "))
            .into_iter()
            .filter(|l| l.ends_with(" micro_batch 1 recompute none"))
            .map(|l| l[shape.len()..].replace(" micro_batch 1 recompute none", ""))
            .collect()
    };
    assert_eq!(
        exchanges("tp 1 sp off pp 1 vpp 1 cp 4"),
        [
            "",
            " cp_comm a2a",
            " cp_comm allgather",
            " cp_comm a2a_p2p 2"
        ]
    );
    assert_eq!(
        exchanges("tp 8 sp on pp 1 vpp 1 cp 2"),
        ["", " cp_comm allgather"]
    );
    assert!(exchanges("tp 1 sp off pp 1 vpp 1 cp 1")
        .iter()
        .all(String::is_empty));
    // Every shape with each of its exchanges, 4 microbatch sizes and 5 recompute choices.
    let per_shape: usize = shapes(&axes[0])
        .iter()
        .map(|shape| exchanges(shape).len() * 4 * 5)
        .sum();
    assert_eq!(axes[0].len(), per_shape);
    assert_eq!(
        axes[1].labels(),
        [
            "distributed_optimizer on",
            "distributed_optimizer off",
            "distributed_optimizer on fsdp optim_grads megatron",
            "distributed_optimizer on fsdp optim_grads_params megatron"
        ]
    );
    assert_eq!(sw.space.len(), (axes[0].len() * 4) as u64);
}

#[test]
fn a_written_exchange_dispatcher_or_module_set_stays_in_every_candidate() {
    let moe = "model moe < hidden 1024 layers 8 heads 16 vocab 32000 seq 1024 experts 8 topk 2 >\n\
cluster pod : dgx_a100 < nodes 2 >\nplan p < global_batch 32\n cp_comm allgather\n\
 moe_dispatcher allgather\n etp 1\n>\n";
    let (_, sw) = prepared(moe, &auto()).unwrap();
    let grid = &sw.space.axes()[0];
    assert_eq!(
        grid.name,
        "tp+sp+overlap_tp_comm+pp+schedule+cp+ep+micro_batch+recompute+recompute_modules"
    );
    for c in [0, sw.space.len() / 2, sw.space.len() - 1] {
        let text = sw.space.render(c, TextLayout::Tidy);
        for written in ["cp_comm allgather", "moe_dispatcher allgather", "etp 1"] {
            assert_eq!(text.matches(written).count(), 1, "{written}: {text}");
        }
    }
}

#[test]
fn auto_cp_splits_the_sequence_into_two_chunks_per_rank() {
    // seq 24: cp 4 leaves 3 tokens per chunk; cp 8 and 16 do not divide 24 into 2 × cp (C01).
    let text = format!(
        "{}plan p < global_batch 32 >\n",
        TINY.replace("seq 1024", "seq 24")
    );
    let (_, sw) = prepared(&text, &auto()).unwrap();
    let grid = &sw.space.axes()[0];
    assert_eq!(values_with(grid, "tp 1 sp off pp 1 vpp 1 cp 4"), 1);
    assert_eq!(values_with(grid, "cp 8"), 0);
    assert_eq!(values_with(grid, "cp 16"), 0);
}

#[test]
fn auto_gives_a_moe_model_the_expert_parallel_sizes_its_grid_allows() {
    let moe = "model moe < hidden 1024 layers 8 heads 16 vocab 32000 seq 1024 experts 8 topk 2 >\n\
cluster pod : dgx_a100 < nodes 2 >\nplan p < global_batch 32 >\n";
    let (_, sw) = prepared(moe, &auto()).unwrap();
    let grid = &sw.space.axes()[0];
    assert_eq!(
        grid.name,
        "tp+sp+overlap_tp_comm+pp+schedule+cp+cp_comm+etp+ep+moe_dispatcher+micro_batch+recompute+recompute_modules"
    );
    // tp 1, pp 1: every divisor of the 8 experts fits 16 GPUs; tp 8 × pp 2 leaves ep 1 only.
    let eps: Vec<String> = shapes(grid)
        .into_iter()
        .filter(|l| l.starts_with("tp 1 sp off pp 1 vpp 1 cp 1 "))
        .collect();
    assert_eq!(
        eps,
        [
            "tp 1 sp off pp 1 vpp 1 cp 1 ep 1",
            "tp 1 sp off pp 1 vpp 1 cp 1 ep 2",
            "tp 1 sp off pp 1 vpp 1 cp 1 ep 4",
            "tp 1 sp off pp 1 vpp 1 cp 1 ep 8"
        ]
    );
    assert_eq!(values_with(grid, "tp 8 sp off pp 2 vpp 1 cp 1 ep 2"), 0);
    assert_eq!(values_with(grid, "tp 8 sp off pp 2 vpp 1 cp 1 ep 1"), 1);
    // Parallel folding: with tp 8 the experts may run on etp 1, 2 or 4 (written) or 8 (= tp,
    // not written), each with the ep its grid etp × ep × pp leaves room for on 16 GPUs:
    // 1 × 8 and 8 × 2 fit, 8 × 4 does not. tp 8 × pp 2 leaves ep 2 to etp 1.
    let folded = |prefix: &str| -> Vec<String> {
        let tail = " micro_batch 1 recompute none";
        grid.labels()
            .into_iter()
            .filter(|l| l.starts_with(prefix) && l.ends_with(tail))
            .filter(|l| !l.contains("moe_dispatcher"))
            .map(|l| l[prefix.len()..l.len() - tail.len()].to_string())
            .collect()
    };
    assert_eq!(
        folded("tp 8 sp on pp 1 vpp 1 cp 1 "),
        [
            "etp 1 ep 1",
            "etp 1 ep 2",
            "etp 1 ep 4",
            "etp 1 ep 8",
            "etp 2 ep 1",
            "etp 2 ep 2",
            "etp 2 ep 4",
            "etp 2 ep 8",
            "etp 4 ep 1",
            "etp 4 ep 2",
            "etp 4 ep 4",
            "ep 1",
            "ep 2"
        ]
    );
    assert!(folded("tp 8 sp off pp 2 vpp 1 cp 1 ").contains(&"etp 1 ep 2".to_string()));
    // The dispatcher: alltoall (nothing written), allgather, and flex (DeepEP on the A100s)
    // only over more than one rank of etp × ep (token_dispatcher.py:1832).
    let dispatchers = |shape: &str| -> Vec<String> {
        let tail = " micro_batch 1 recompute none";
        grid.labels()
            .into_iter()
            .filter(|l| l.starts_with(shape) && l.ends_with(tail))
            .map(|l| l[shape.len()..l.len() - tail.len()].to_string())
            .collect()
    };
    assert_eq!(
        dispatchers("tp 1 sp off pp 1 vpp 1 cp 1 ep 1"),
        ["", " moe_dispatcher allgather"]
    );
    assert_eq!(
        dispatchers("tp 1 sp off pp 1 vpp 1 cp 1 ep 2"),
        [
            "",
            " moe_dispatcher allgather",
            " moe_dispatcher flex deepep"
        ]
    );
    // Items whose optional arguments are left out end their line, so a candidate writing
    // them all types: it checks, or fails a plan rule, never the type checker (E01xx, E02xx).
    let (mut session, sw) = prepared(moe, &auto()).unwrap();
    let wanted = [
        "cp_comm a2a",
        "moe_dispatcher allgather",
        "recompute_modules core_attn moe_act",
    ];
    let some = (0..sw.space.len())
        .find(|&c| {
            let d = sw.space.describe(c);
            wanted.iter().all(|w| d.contains(w)) && d.contains("sp on")
        })
        .expect("a candidate with every new choice");
    let text = sw.space.render(some, TextLayout::Tidy);
    assert!(text.contains("cp_comm a2a\n"), "{text}");
    match check_candidate(&mut session, &sw, some) {
        Ok(sc) => {
            let p = PlanSummary::of(&sc);
            assert_eq!(p.settings.get("cp_comm").map(String::as_str), Some("a2a"));
            assert_eq!(
                p.settings.get("moe_dispatcher").map(String::as_str),
                Some("allgather")
            );
        }
        Err(code) => assert!(code.as_str() >= "E0300", "{code:?}: {text}"),
    }
    // A MoE model's selective recompute also tries its experts' activation.
    assert_eq!(
        values_with_all(
            grid,
            "tp 1 sp off pp 1 vpp 1 cp 1 ep 1 micro_batch 1 recompute selective"
        ),
        [
            "",
            " recompute_modules core_attn layernorm",
            " recompute_modules moe_act",
            " recompute_modules core_attn moe_act"
        ]
    );
    // A dense model gets no ep, etp or dispatcher at all.
    let (_, dense) = prepared(&format!("{TINY}plan p < global_batch 32 >\n"), &auto()).unwrap();
    let dense_grid = &dense.space.axes()[0];
    assert_eq!(values_with(dense_grid, " ep "), 0);
    for key in ["etp", "moe_dispatcher", "moe_act"] {
        assert!(
            dense_grid.labels().iter().all(|l| !l.contains(key)),
            "{key}"
        );
    }
}

/// The combined axis's values that start with `prefix`, cut to what follows it.
fn values_with_all(axis: &Axis, prefix: &str) -> Vec<String> {
    axis.labels()
        .into_iter()
        .filter(|l| l.starts_with(prefix))
        .map(|l| l[prefix.len()..].to_string())
        .collect()
}

#[test]
fn uneven_pipelines_give_the_ends_fewer_layers_as_megatron_allows() {
    use super::auto::{layouts, uneven_ends};
    // Llama 3.1 405B: 126 layers on 8 stages, 16 on each middle stage.
    assert_eq!(uneven_ends(126, 8, 1), Some((15, 15)));
    assert_eq!(uneven_ends(126, 16, 1), Some((7, 7)));
    // With 2 chunks per rank every stage's layers are even (L14, L17): 14 + 6 × 16 + 16.
    assert_eq!(uneven_ends(126, 8, 2), Some((14, 16)));
    // 4 chunks: the ends would need 30 layers in multiples of 4, at most 16 each: none.
    assert_eq!(uneven_ends(126, 8, 4), None);
    let vpps: Vec<u64> = layouts(126, 8).iter().map(|l| l.vpp).collect();
    assert_eq!(vpps, [1, 2, 3, 6, 9]);
    for l in layouts(126, 8) {
        let (first, last) = l.ends.unwrap();
        let split = crate::plan::derive::split_layers(126, 8, l.vpp, Some(first), Some(last));
        assert!(split.is_ok(), "{l:?}");
    }
    // Even splits: every vpp dividing the layers per stage, no ends written.
    let even: Vec<(u64, bool)> = layouts(80, 4)
        .iter()
        .map(|l| (l.vpp, l.ends.is_some()))
        .collect();
    assert_eq!(
        even,
        [
            (1, false),
            (2, false),
            (4, false),
            (5, false),
            (10, false),
            (20, false)
        ]
    );
    // 126 layers on 128 stages cannot give each stage a layer.
    assert!(layouts(126, 128).is_empty());
    assert_eq!(layouts(8, 1).len(), 1);
}

#[test]
fn auto_writes_an_uneven_split_where_the_layers_do_not_divide() {
    let text = "model m : llama31_405b < >\ncluster c : dgx_h100 < nodes 256 >\nplan p < global_batch 1024 >\n";
    let (_, sw) = prepared(text, &auto()).unwrap();
    let labels = shapes(&sw.space.axes()[0]);
    for shape in [
        "tp 8 sp on pp 8 vpp 1 first_stage_layers 15 last_stage_layers 15 cp 1",
        "tp 8 sp on pp 16 vpp 2 first_stage_layers 6 last_stage_layers 8 cp 1",
        // 126 = 2 × 63 divides evenly over 2 stages: no ends written there.
        "tp 8 sp on pp 2 vpp 1 cp 1",
    ] {
        assert!(labels.iter().any(|l| l == shape), "{shape}");
    }
    assert_eq!(
        values_with(&sw.space.axes()[0], "pp 2 vpp 1 first_stage_layers"),
        0
    );
}

#[test]
fn cross_node_tp_takes_every_divisor_of_the_world() {
    let opts = SweepOptions {
        auto: Some(AutoOptions {
            allow_cross_node_tp: true,
        }),
        ..SweepOptions::default()
    };
    let (_, sw) = prepared(&format!("{TINY}plan p < global_batch 32 >\n"), &opts).unwrap();
    // tp 16 on 16 GPUs adds one shape (pp 1, cp 1, so the default schedule alone), with sp
    // off, on, and on with the overlap, to the 278 of the NVLink domain.
    assert_eq!(shapes(&sw.space.axes()[0]).len(), 278 + 3);
    assert_eq!(values_with(&sw.space.axes()[0], "tp 16 "), 3);
}

#[test]
fn auto_replaces_the_plans_parallelism_and_keeps_the_rest() {
    let plan = "plan p <\n  tp 8 pp [1 2]\n  micro_batch 4  global_batch 32\n  cp [1 2] overlap_grad_reduce\n  bucket_size [40MB 80MB]\n>\n";
    let (_, sw) = prepared(&format!("{TINY}{plan}"), &auto()).unwrap();
    let names: Vec<&str> = sw.space.axes().iter().map(|a| a.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "tp+sp+overlap_tp_comm+pp+schedule+cp+cp_comm+micro_batch+recompute+recompute_modules",
            "dp_sharding",
            "bucket_size"
        ]
    );
    let text = sw.space.render(0, TextLayout::Tidy);
    let expected = "plan p <\n  global_batch 32\n  overlap_grad_reduce\n  bucket_size 40MB\n  tp 1 sp off pp 1 vpp 1 cp 1 micro_batch 1 recompute none distributed_optimizer on\n>\n";
    assert!(text.ends_with(expected), "{text}");
}

#[test]
fn a_written_distributed_optimizer_is_kept_and_a_gather_overlap_keeps_it_on() {
    let sharding = |plan: &str| -> Vec<String> {
        let (_, sw) = prepared(
            &format!("{TINY}plan p < global_batch 32 {plan} >\n"),
            &auto(),
        )
        .unwrap();
        let axes = sw.space.axes();
        let row = axes.iter().find(|a| a.name == "dp_sharding");
        row.map_or_else(Vec::new, |a| {
            a.labels().iter().map(|l| l.to_string()).collect()
        })
    };
    // A written optimizer stays (in every candidate): DDP as written, or Megatron-FSDP.
    assert_eq!(
        sharding("distributed_optimizer off"),
        [
            "",
            "fsdp optim_grads megatron",
            "fsdp optim_grads_params megatron"
        ]
    );
    let (_, written) = prepared(
        &format!("{TINY}plan p < global_batch 32 distributed_optimizer off >\n"),
        &auto(),
    )
    .unwrap();
    assert!(written
        .space
        .render(0, TextLayout::Tidy)
        .contains("distributed_optimizer off"));
    // overlap_param_gather needs the distributed optimizer (D01): it is never off.
    assert_eq!(
        sharding("overlap_grad_reduce overlap_param_gather"),
        [
            "distributed_optimizer on",
            "distributed_optimizer on fsdp optim_grads megatron",
            "distributed_optimizer on fsdp optim_grads_params megatron"
        ]
    );
    // A written `fsdp` leaves the optimizer's choices; both written, no row.
    assert_eq!(
        sharding("fsdp optim_grads_params"),
        ["distributed_optimizer on", "distributed_optimizer off"]
    );
    assert!(sharding("distributed_optimizer on fsdp optim").is_empty());
}

#[test]
fn auto_needs_the_plan_in_the_file() {
    let text =
        "plan p < global_batch 32 >\nscenario s < model llama3_8b cluster dgx_h100 plan p >\n"
            .to_string();
    assert!(prepared(&text, &auto()).is_ok());
    let inline = "scenario s < model llama3_8b cluster dgx_h100 plan < global_batch 32 > >\n";
    let (_, sw) = prepared(inline, &auto()).unwrap();
    assert_eq!(
        sw.space.render(0, TextLayout::Tidy),
        "scenario s < model llama3_8b cluster dgx_h100 plan < global_batch 32 \n  \
tp 1 sp off pp 1 vpp 1 cp 1 micro_batch 1 recompute none distributed_optimizer on\n> >\n"
    );
    let elsewhere =
        "use \"defs.venus\"\nscenario s < model llama3_8b cluster dgx_h100 plan shared >\n";
    let (mut session, root) = session_with(elsewhere);
    session.db_mut().set_file(
        Path::new("defs.venus"),
        b"plan shared < micro_batch 1 global_batch 32 >\n",
    );
    let err = prepare(&mut session, Path::new("sweep.venus"), root, &auto()).unwrap_err();
    assert_eq!(
        err,
        PrepareError::Usage(
            "`--auto` rewrites the plan of scenario `s`, which must be written in `sweep.venus`"
                .into()
        )
    );
}

#[test]
fn shards_partition_the_candidates() {
    let shards: Vec<Shard> = (1..=3).map(|i| Shard { index: i, count: 3 }).collect();
    for c in 0..20u64 {
        assert_eq!(shards.iter().filter(|s| s.contains(c)).count(), 1);
    }
    assert_eq!(Shard::parse("2/8"), Ok(Shard { index: 2, count: 8 }));
    for bad in ["0/4", "5/4", "1/0", "x/2", "3"] {
        assert!(Shard::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn merged_shards_equal_the_whole_sweep() {
    let (mut session, sw) =
        list_sweep("tp [1 2 4 8] pp [1 2 4] micro_batch 1 global_batch 32 recompute [none full]");
    let (whole, _) = run(&mut session, &sw, None, &Silent);
    let parts: Vec<Outcome> = (1..=3)
        .map(|i| {
            let (o, _) = run(
                &mut session,
                &sw,
                Some(Shard { index: i, count: 3 }),
                &Silent,
            );
            output::read_json(&output::json(&o)).unwrap()
        })
        .collect();
    assert_eq!(parts.iter().map(|p| p.candidates).sum::<u64>(), 24);
    let merged = merge(parts.clone()).unwrap();
    assert_eq!(output::json(&merged), output::json(&whole));
    assert_eq!(
        output::text(&merged, 5, false),
        output::text(&whole, 5, false)
    );

    let err = merge(parts[..2].to_vec()).unwrap_err();
    assert_eq!(err, "missing shards: 3/3");
    let err = merge(vec![parts[0].clone(), parts[0].clone(), parts[1].clone()]).unwrap_err();
    assert_eq!(err, "shard 1/3 is given twice");
    let mut other = parts[2].clone();
    other.shard.as_mut().unwrap().fingerprint = "0".into();
    assert!(merge(vec![parts[0].clone(), parts[1].clone(), other])
        .unwrap_err()
        .contains("another sweep"));
    assert!(merge(vec![whole]).unwrap_err().contains("whole sweep"));
    assert!(merge(Vec::new())
        .unwrap_err()
        .starts_with("nothing to merge"));
}

fn ranked(candidate: u64, ms: f64, gib: u64) -> Ranked {
    let plan = PlanSummary {
        tp: 1,
        pp: 1,
        cp: 1,
        ep: 1,
        dp: 1,
        vpp: 1,
        micro_batch: 1,
        global_batch: 1,
        microbatches: 1,
        schedule: "none".into(),
        recompute: "none".into(),
        sp: false,
        distributed_optimizer: false,
        overlap_tp_comm: false,
        first_stage_layers: 8,
        middle_stage_layers: 8,
        last_stage_layers: 8,
        settings: BTreeMap::new(),
    };
    Ranked::new(
        candidate,
        plan,
        Figures {
            iteration_time: Seconds(ms / 1e3),
            per_gpu: FlopsPerSec(1e14),
            tokens_per_gpu: 1000.0 / ms,
            mfu: Ratio(0.3),
            peak: Bytes(gib << 30),
            reserve: Bytes(0),
            train_time: None,
            cost: None,
        },
    )
}

#[test]
fn the_pareto_front_keeps_plans_no_other_plan_beats_on_both_figures() {
    let mut o = Outcome {
        scenario: "s".into(),
        world_size: 8,
        candidates: 5,
        pruned: BTreeMap::new(),
        results: vec![
            ranked(0, 10.0, 50),
            ranked(1, 10.0, 40),
            ranked(2, 12.0, 45),
            ranked(3, 13.0, 20),
            ranked(4, 14.0, 20),
        ],
        objective: Objective::Time,
        headroom: 0.0,
        kept: None,
        shard: None,
    };
    o.rank_by(Objective::Time);
    let order: Vec<u64> = o.results.iter().map(|r| r.candidate).collect();
    assert_eq!(order, [1, 0, 2, 3, 4]);
    let front: Vec<u64> = o
        .pareto()
        .into_iter()
        .map(|i| o.results[i].candidate)
        .collect();
    assert_eq!(front, [1, 3]);
}

#[test]
fn the_summary_lists_codes_by_count() {
    let o = Outcome {
        scenario: "s".into(),
        world_size: 8,
        candidates: 1240,
        pruned: BTreeMap::from([
            (prune_key("E0303"), 301),
            (prune_key("E0401"), 612),
            (prune_key("E0302"), 117),
        ]),
        results: (0..210).map(|c| ranked(c, 10.0, 1)).collect(),
        objective: Objective::Time,
        headroom: 0.0,
        kept: None,
        shard: None,
    };
    assert_eq!(
        output::summary(&o),
        "1,240 plans: 612 E0401 (a pipeline stage does not fit in GPU memory), 301 E0303 (attention heads not divisible by tp), \
117 E0302 (layers not divisible across pipeline stages), 210 simulated\n"
    );
}

#[test]
fn emit_writes_a_header_and_points_uses_at_the_used_files() {
    let text = format!(
        "use \"defs/lib.venus\"\n{TINY}plan p < tp [1 2] micro_batch 1 global_batch 32 >\n"
    );
    let (mut session, root) = session_with(&text);
    session
        .db_mut()
        .set_file(Path::new("defs/lib.venus"), b"gpu g : h100_sxm < >\n");
    let sw = prepare(
        &mut session,
        Path::new("sweep.venus"),
        root,
        &SweepOptions::default(),
    )
    .unwrap();
    let out = sw
        .space
        .emit(1, &["best".to_string()], &|p| format!("../src/{p}"));
    assert_eq!(out, format!("# best\n\nuse \"../src/defs/lib.venus\"\n{TINY}plan p < tp 2 micro_batch 1 global_batch 32 >\n"));
}

#[test]
fn the_emit_best_header_gives_the_peak_with_the_reserve_as_check_does() {
    let (mut session, sw) =
        list_sweep("tp [1 2] micro_batch 1 global_batch 32 reserve [1GiB 3GiB]");
    let (o, _) = run(&mut session, &sw, None, &Silent);
    let best = &o.results[0];
    let sc = candidate_scenario(&mut session, &sw, best.candidate).unwrap();
    // E0401's figure (validate/memory.rs): the largest stage's peak plus the reserve.
    let worst = crate::plan::memory::worst(&sc.memory).unwrap().peak.0;
    let reserve = sc.reserve().0 .0;
    assert_eq!(best.reserve().0, reserve);
    assert_eq!(best.peak_memory().0, worst);
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    let header = output::best_header(&o, best, "sweep.venus", "tp 1");
    let want = format!(
        "{:.2} GiB per GPU with reserve ({:.2} GiB peak + {:.2} GiB reserve)",
        gib(worst + reserve),
        gib(worst),
        gib(reserve)
    );
    assert!(header[1].contains(&want), "{header:?} lacks {want}");
    assert!(reserve == 1 << 30 || reserve == 3 << 30, "{reserve}");
}

#[test]
fn the_fingerprint_depends_on_the_file_and_the_options() {
    let base = list_sweep("tp [1 2] micro_batch 1 global_batch 32")
        .1
        .fingerprint;
    assert_eq!(
        base,
        list_sweep("tp [1 2] micro_batch 1 global_batch 32")
            .1
            .fingerprint
    );
    assert_ne!(
        base,
        list_sweep("tp [1 2] micro_batch 2 global_batch 32")
            .1
            .fingerprint
    );
    assert_eq!(base.len(), 16);
}

#[test]
fn divisors_are_complete_and_sorted() {
    assert_eq!(divisors(12), [1, 2, 3, 4, 6, 12]);
    assert_eq!(divisors(1), [1]);
    assert_eq!(divisors(1024).len(), 11);
    assert!(divisors(0).is_empty());
}

#[test]
fn preparing_a_long_list_types_the_file_without_the_list_once_per_element() {
    // `prepare` used to type the whole file (list included) once per element: O(N²) bytes,
    // hours for 100,000 elements (reliability report M2). Now each pass types a probe as long
    // as the file without its lists, so the bytes grow linearly.
    let elements: Vec<String> = (1..=20_000).map(|i| i.to_string()).collect();
    let plan = format!("tp 8 micro_batch 1 global_batch [{}]", elements.join(" "));
    let (_, sw) = list_sweep(&plan);
    assert_eq!(sw.space.len(), 20_000);
    // Two passes with every list at its first element; each further number typed alone.
    assert_eq!((sw.work.passes, sw.work.alone), (2, 19_999));
    let longest_probe =
        (TINY.len() + "plan p < tp 8 micro_batch 1 global_batch 20000 >\n".len()) as u64;
    assert!(
        sw.work.bytes <= sw.work.passes * longest_probe,
        "{} bytes in {} passes",
        sw.work.bytes,
        sw.work.passes
    );
    // Each candidate is still the file with the element in place of the list.
    assert!(sw
        .space
        .render(19_999, TextLayout::Tidy)
        .ends_with("plan p < tp 8 micro_batch 1 global_batch 20000 >\n"));
}

#[test]
fn names_and_flags_in_lists_get_a_whole_typing_pass_each() {
    let (_, sw) = list_sweep(
        "tp [1 2] micro_batch 1 global_batch 32 recompute [none full selective] sp [on off]",
    );
    assert_eq!(sw.space.len(), 12);
    // `2` alone; `full`, `selective` and `off` each through the file.
    assert_eq!((sw.work.passes, sw.work.alone), (2 + 3, 1));
}

#[test]
fn a_bad_element_of_a_long_list_is_reported_at_its_place_in_the_file() {
    // The compact probes map spans back to the file as written.
    let text = format!("{TINY}plan p < tp [1 2 zero 4] micro_batch 1 global_batch 32 >\n");
    let Err(PrepareError::Diagnostics(d)) = prepared(&text, &SweepOptions::default()) else {
        panic!("`zero` is not a count");
    };
    let at = text.find("zero").unwrap();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].primary.loc.span, crate::diag::Span::new(at, at + 4));
    // A number out of range fails alone, then gets its pass for the file's diagnostic.
    let text = format!("{TINY}plan p < tp [1 2 0 4] micro_batch 1 global_batch 32 >\n");
    let Err(PrepareError::Diagnostics(d)) = prepared(&text, &SweepOptions::default()) else {
        panic!("`0` is out of range");
    };
    let at = text.find(" 0 ").unwrap() + 1;
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].code, Code::E0202);
    assert_eq!(d[0].primary.loc.span, crate::diag::Span::new(at, at + 1));
}

fn shards_of(plan: &str, n: u64) -> (Session, Sweep, Vec<Outcome>) {
    let (mut session, sw) = list_sweep(plan);
    let parts = (1..=n)
        .map(|i| {
            let (o, _) = run(
                &mut session,
                &sw,
                Some(Shard { index: i, count: n }),
                &Silent,
            );
            output::read_json(&output::json(&o)).unwrap()
        })
        .collect();
    (session, sw, parts)
}

#[test]
fn merge_refuses_what_a_shard_claims_but_does_not_own() {
    // Each of these merged with exit 0 before (reliability report L1).
    let (mut session, sw, parts) =
        shards_of("tp [1 2 4 8] pp [1 2] micro_batch 1 global_batch 32", 2);
    assert!(merge(parts.clone()).is_ok());
    let tampered = |edit: &dyn Fn(&mut Vec<Outcome>)| {
        let mut p = parts.clone();
        edit(&mut p);
        merge(p).unwrap_err()
    };
    let first = parts[0].results[0].candidate;
    let foreign = tampered(&|p| {
        let r = p[1].results[0].clone();
        p[0].results.push(r);
        p[0].candidates += 1;
    });
    assert!(
        foreign.contains("claims 5 candidates, but owns 4"),
        "{foreign}"
    );
    let foreign = tampered(&|p| {
        let r = p[1].results[0].clone();
        let pruned = p[0].pruned.values_mut().next();
        match pruned {
            Some(n) if *n > 0 => *n -= 1,
            _ => {
                p[0].results.pop();
            }
        }
        p[0].results.push(r);
    });
    assert!(foreign.contains("which belongs to shard 2/2"), "{foreign}");
    let out_of_range = tampered(&|p| p[0].results[0].candidate = 1_000);
    assert!(
        out_of_range.contains("candidate 1000, but the sweep has 8"),
        "{out_of_range}"
    );
    let twice = tampered(&|p| {
        let r = p[0].results[0].clone();
        p[0].results.push(r);
        if let Some(n) = p[0].pruned.values_mut().find(|n| **n > 0) {
            *n -= 1;
        }
    });
    assert!(
        twice.contains(&format!("has candidate {first} twice")),
        "{twice}"
    );
    let negative = tampered(&|p| p[0].results[0].iteration_time_ms = -1.0);
    assert!(negative.contains("not finite non-negative"), "{negative}");
    let counts = tampered(&|p| {
        p[0].pruned.insert(prune_key("E0401"), 999_999);
    });
    assert!(
        counts.contains("do not add up to its 4 candidates"),
        "{counts}"
    );
    let other = tampered(&|p| p[1].scenario = "another".into());
    assert!(other.contains("sweeps scenario `another`"), "{other}");
    let world = tampered(&|p| p[1].world_size = 17);
    assert!(world.contains("on 17 GPUs"), "{world}");

    // A plan edited in a shard is caught by deriving it again from the file.
    let mut merged = merge(parts.clone()).unwrap();
    merged.results[0].plan.tp = 3;
    let edited = verify_plans(&mut session, &sw, &merged).unwrap_err();
    assert!(edited.contains("`tp 3 "), "{edited}");
    assert!(verify_plans(&mut session, &sw, &merge(parts).unwrap()).is_ok());
}

#[test]
fn missing_shards_of_a_huge_count_are_summarised_in_one_short_line() {
    let (_, _, parts) = shards_of("tp [1 2] micro_batch 1 global_batch 32", 1);
    let mut p = parts[0].clone();
    let info = p.shard.as_mut().unwrap();
    info.count = 1 << 20;
    p.candidates = owned_by(info.total_candidates, 1, 1 << 20);
    p.results.truncate(p.candidates as usize);
    p.pruned.clear();
    let err = merge(vec![p]).unwrap_err();
    assert!(err.len() < 200, "{} bytes", err.len());
    assert!(
        err.ends_with("8/1048576, 9/1048576 and 1048567 more"),
        "{err}"
    );
}

#[test]
fn a_list_written_over_several_lines_sweeps_each_element() {
    // A long sweep list no longer has to stay on one line (reliability report L7).
    let (_, sw) = list_sweep("tp [1\n  2\n  4] micro_batch 1 global_batch 32");
    assert_eq!(sw.space.len(), 3);
    assert_eq!(sw.space.axes()[0].labels(), ["1", "2", "4"]);
    assert!(sw
        .space
        .render(2, TextLayout::Tidy)
        .ends_with("plan p < tp 4 micro_batch 1 global_batch 32 >\n"));
}

#[test]
fn pruned_counts_a_shard_claims_past_u64_saturate_instead_of_overflowing() {
    // A mutated shard (found by the merge property test) claimed two codes of u64::MAX each.
    let o = Outcome {
        scenario: "s".into(),
        world_size: 8,
        candidates: 4,
        pruned: [
            (prune_key("E0301"), u64::MAX),
            (prune_key("E0302"), u64::MAX),
        ]
        .into_iter()
        .collect(),
        results: Vec::new(),
        objective: Objective::Time,
        headroom: 0.0,
        kept: None,
        shard: None,
    };
    assert_eq!(o.pruned_total(), u64::MAX);
}

fn with_options(plan: &str, opts: &SweepOptions) -> (Session, Sweep) {
    prepared(&format!("{TINY}plan p < {plan} >\n"), opts).unwrap()
}

fn headroom(share: f64) -> SweepOptions {
    SweepOptions {
        headroom: Ratio(share),
        ..SweepOptions::default()
    }
}

/// What the tests compare of a ranked result.
fn key(r: &Ranked) -> (u64, f64, u64) {
    (r.candidate, r.iteration_time_ms(), r.peak_memory().0)
}

const A100_MEMORY: u64 = 80 << 30;

/// What every plan keeps back beside its peak (the tests write no `reserve`).
const RESERVE: u64 = crate::plan::memory::DEFAULT_RESERVE.0;

#[test]
fn a_plan_over_the_headroom_is_pruned_under_e0401_and_every_listed_plan_fits() {
    let plan = "tp [1 2 4] pp [1 2] micro_batch [1 4] global_batch 32 recompute [none full]";
    let (mut session, whole) = with_options(plan, &SweepOptions::default());
    let (all, _) = run(&mut session, &whole, None, &Silent);
    // tp 1 × pp 1 leaves dp 16, too many for micro_batch 4 in a batch of 32 (E0305).
    assert_eq!(all.pruned, BTreeMap::from([(prune_key("E0305"), 2)]));
    let n = all.results.len() as u64;
    assert_eq!(n, 22);
    // A budget at the median peak: the plans above it go, the others stay.
    let mut peaks: Vec<u64> = all.results.iter().map(|r| r.peak_memory().0).collect();
    peaks.sort_unstable();
    let budget = peaks[peaks.len() / 2];
    let share = 1.0 - (budget + RESERVE) as f64 / A100_MEMORY as f64;
    let (mut session, tight) = with_options(plan, &headroom(share));
    let (o, _) = run(&mut session, &tight, None, &Silent);
    let over = peaks.iter().filter(|&&p| p > budget).count() as u64;
    assert!(over > 0 && over < n, "{over} of {n} over the median");
    assert_eq!(o.pruned.get(&prune_key("E0401")), Some(&over));
    assert_eq!(o.results.len() as u64, n - over);
    assert!(o.results.iter().all(|r| r.peak_memory().0 <= budget));
    assert_eq!(o.headroom, share);
    let summary = output::summary(&o);
    assert!(
        summary.contains("E0401 (a pipeline stage does not fit in GPU memory, keeping "),
        "{summary}"
    );
    // The headroom is part of what identifies the sweep: its shards do not merge with others.
    assert_ne!(whole.fingerprint, tight.fingerprint);
}

#[test]
fn pruning_by_memory_before_simulating_keeps_the_exhaustive_top_10() {
    // The exhaustive search simulates every plan the validity rules (E0401 at the GPU's full
    // memory included) let through and drops the ones whose simulated peak exceeds the budget;
    // the sweep prunes them before simulating, by the memory model. Small spaces, budgets at
    // several quantiles of the simulated peaks, every objective.
    let spaces = [
        "tp [1 2 4 8] pp [1 2 4] micro_batch [1 2 4] global_batch 32 recompute [none selective full]",
        "tp [1 2] cp [1 2] pp [1 2] micro_batch [1 2] global_batch [16 32] recompute [none full] sp [on off]",
    ];
    let objectives = [
        Objective::Time,
        Objective::Throughput,
        Objective::GpuHours,
        Objective::Mfu,
    ];
    let mut runs = 0;
    let mut pruned_some = 0;
    for plan in spaces {
        let (mut session, unpruned) = with_options(plan, &SweepOptions::default());
        let (all, full) = run(&mut session, &unpruned, None, &Silent);
        let mut peaks: Vec<u64> = all.results.iter().map(|r| r.peak_memory().0).collect();
        peaks.sort_unstable();
        for quantile in [4, 2, 1] {
            let budget = peaks[peaks.len() * quantile / 5];
            let share = 1.0 - (budget + RESERVE) as f64 / A100_MEMORY as f64;
            let objective = objectives[runs % objectives.len()];
            runs += 1;
            // The headroom's own test on the simulated peak plus the default reserve.
            let usable = A100_MEMORY as f64 * (1.0 - share) - RESERVE as f64;
            let mut exhaustive = all.clone();
            exhaustive
                .results
                .retain(|r| r.peak_memory().0 as f64 <= usable);
            exhaustive.rank_by(objective);
            let opts = SweepOptions {
                headroom: Ratio(share),
                objective,
                ..SweepOptions::default()
            };
            let (mut session, sw) = with_options(plan, &opts);
            let (pruned, timing) = run(&mut session, &sw, None, &Silent);
            let top = |o: &Outcome| o.results.iter().take(10).map(key).collect::<Vec<_>>();
            assert_eq!(
                top(&pruned),
                top(&exhaustive),
                "{plan} within {budget} bytes, {objective:?}"
            );
            assert_eq!(pruned.results.len(), exhaustive.results.len());
            if exhaustive.results.len() < all.results.len() {
                // Pruned before simulating: fewer simulations than the exhaustive run.
                assert!(timing.simulated < full.simulated, "{plan}: {budget}");
                pruned_some += 1;
            }
        }
    }
    assert!(
        pruned_some >= 4,
        "only {pruned_some} of {runs} budgets pruned a plan"
    );
}

#[test]
fn each_objective_orders_by_its_own_figure_then_memory_then_candidate() {
    let plan = "tp [1 2] pp [1 2] micro_batch 1 global_batch [16 32 64]";
    for objective in [
        Objective::Time,
        Objective::Throughput,
        Objective::GpuHours,
        Objective::Mfu,
        Objective::Goodput,
    ] {
        let opts = SweepOptions {
            objective,
            ..SweepOptions::default()
        };
        let (mut session, sw) = with_options(plan, &opts);
        let (o, _) = run(&mut session, &sw, None, &Silent);
        assert_eq!(o.results.len(), 12);
        assert_eq!(o.objective, objective);
        let figure = |r: &Ranked| match objective {
            Objective::Time => r.iteration_time_ms(),
            Objective::Throughput => -r.tokens_per_second_per_gpu(),
            Objective::GpuHours => r.gpu_seconds_per_token(),
            Objective::Mfu => -r.mfu().0,
            Objective::Goodput => -r.effective_tokens_per_second_per_gpu(),
            Objective::TimeToTrain => r.train_time().map_or(f64::INFINITY, |t| t.0),
            Objective::Cost => r.train_cost().unwrap_or(f64::INFINITY),
        };
        for pair in o.results.windows(2) {
            let k = |r: &Ranked| (figure(r), r.peak_memory().0, r.candidate);
            assert!(
                k(&pair[0]) <= k(&pair[1]),
                "{objective:?}: {:?} before {:?}",
                k(&pair[0]),
                k(&pair[1])
            );
        }
        // Tokens per second per GPU are the global batch's tokens over the time and the GPUs.
        for r in &o.results {
            let tokens = (r.plan.global_batch * 1024) as f64;
            let expected = tokens / (r.iteration_time().0 * 16.0);
            assert!((r.tokens_per_second_per_gpu() - expected).abs() <= 1e-9 * expected);
            assert!(
                (r.gpu_seconds_per_token() * r.tokens_per_second_per_gpu() - 1.0).abs() < 1e-12
            );
            // No failure rates in the cluster: every plan trains all of its wall time.
            assert_eq!(r.goodput(), Ratio(1.0));
        }
    }
    // The fastest iteration is the smallest batch; the most tokens per second a larger one.
    let (mut session, sw) = with_options(plan, &SweepOptions::default());
    let (by_time, _) = run(&mut session, &sw, None, &Silent);
    assert_eq!(by_time.results[0].plan.global_batch, 16);
    let opts = SweepOptions {
        objective: Objective::Throughput,
        ..SweepOptions::default()
    };
    let (mut session, sw) = with_options(plan, &opts);
    let (by_tokens, _) = run(&mut session, &sw, None, &Silent);
    assert_eq!(by_tokens.results[0].plan.global_batch, 64);
}

#[test]
fn identical_plans_are_listed_once_under_the_lowest_candidate_number() {
    // sp is off with tp 1 whatever the list says (Megatron's P01), so `tp 1 sp on` is the plan
    // of `tp 1 sp off`; `pp [2 2]` lists one value twice.
    let plan = "tp [1 2] sp [off on] pp [2 2] micro_batch 1 global_batch 32";
    let (mut session, sw) = with_options(plan, &SweepOptions::default());
    let (o, _) = run(&mut session, &sw, None, &Silent);
    assert_eq!(o.candidates, 8);
    assert_eq!(o.results.len(), 3);
    assert_eq!(o.pruned, BTreeMap::from([(PruneKey::Duplicate, 5)]));
    let mut candidates: Vec<u64> = o.results.iter().map(|r| r.candidate).collect();
    candidates.sort_unstable();
    // Candidates are tp, sp, pp with pp fastest: 0 = tp 1 sp off, 4 = tp 2 sp off, 6 = tp 2 sp on.
    assert_eq!(candidates, [0, 4, 6]);
    assert!(output::summary(&o).contains("5 duplicate (the plan of a lower-numbered candidate)"));
    // Shards drop their own duplicates and the merge the ones across shards: the same result.
    let parts: Vec<Outcome> = (1..=3)
        .map(|i| {
            run(
                &mut session,
                &sw,
                Some(Shard { index: i, count: 3 }),
                &Silent,
            )
            .0
        })
        .collect();
    let merged = merge(parts).unwrap();
    assert_eq!(output::json(&merged), output::json(&o));
}

#[test]
fn the_text_table_has_a_column_for_each_axis_that_varies() {
    let plan = "tp [1 2] micro_batch 1 global_batch 32 bucket_size [40MB 80MB]";
    let (mut session, sw) = with_options(plan, &SweepOptions::default());
    let (o, _) = run(&mut session, &sw, None, &Silent);
    assert_eq!(o.results.len(), 4);
    assert!(o.results.iter().all(|r| r.plan.settings.len() == 1));
    let text = output::text(&o, 10, false);
    let header = text
        .lines()
        .find(|l| l.trim_start().starts_with("rank"))
        .unwrap();
    let titles: Vec<&str> = header
        .split("  ")
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect();
    assert_eq!(
        titles,
        [
            "rank",
            "tp",
            "pp",
            "vpp",
            "cp",
            "dp",
            "mb",
            "recompute",
            "sp",
            "schedule",
            "bucket_size",
            "iteration (ms)",
            "TFLOP/s/GPU",
            "peak (GiB)"
        ]
    );
    let csv = output::csv(&o, false);
    let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    assert!(
        head.contains(&"bucket_size") && head.contains(&"overlap_tp_comm"),
        "{head:?}"
    );
    let values: std::collections::BTreeSet<&str> = csv
        .lines()
        .skip(1)
        .map(|l| {
            l.split(',')
                .nth(head.iter().position(|h| *h == "bucket_size").unwrap())
                .unwrap()
        })
        .collect();
    assert_eq!(values.into_iter().collect::<Vec<_>>(), ["40MB", "80MB"]);
    let json: serde_json::Value = serde_json::from_str(&output::json(&o)).unwrap();
    assert!(json["results"][0]["plan"]["settings"]["bucket_size"].is_string());
}

#[test]
fn an_auto_sweep_shows_the_layout_ep_and_overlap_columns_it_varies() {
    let moe = "model moe < hidden 1024 layers 6 heads 16 vocab 32000 seq 1024 experts 4 topk 2 >\n\
cluster pod : dgx_a100 < nodes 1 >\nplan p < global_batch 16 micro_batch 1 recompute full \
distributed_optimizer on fsdp no_shard megatron overlap_ep_comm off etp 1\n\
cp_comm p2p\nmoe_dispatcher alltoall\n>\n";
    // The written sharding, EP overlap, etp, CP exchange and dispatcher keep their rows out: the space stays small enough to
    // simulate whole in a debug build.
    let (mut session, sw) = prepared(moe, &auto()).unwrap();
    let (o, _) = run(&mut session, &sw, None, &Silent);
    assert!(!o.results.is_empty());
    let text = output::text(&o, 5, false);
    let header = text
        .lines()
        .find(|l| l.trim_start().starts_with("rank"))
        .unwrap();
    for title in ["layout", "ep", "tp overlap"] {
        assert!(header.contains(title), "{title}: {header}");
    }
    assert!(!header.contains("dist opt"), "{header}");
    // 6 layers on 4 stages: 1 + 2 × 2 + 1; its layout column says so.
    let uneven = o
        .results
        .iter()
        .find(|r| r.plan.pp == 4)
        .expect("a pp 4 plan");
    assert_eq!(uneven.plan.layout(), "1+2x2+1");
    assert_eq!(
        (
            uneven.plan.first_stage_layers,
            uneven.plan.middle_stage_layers,
            uneven.plan.last_stage_layers
        ),
        (1, 2, 1)
    );
}

#[test]
fn the_folding_cp_and_recompute_choices_show_in_the_table_csv_and_json() {
    // etp 1 under tp 2, Ulysses CP and two recomputed modules are plan choices with no field
    // of their own: each is a setting, shown as a column of the table, the CSV and the JSON.
    let text =
        "model moe < hidden 1024 layers 4 heads 16 vocab 32000 seq 1024 experts 4 topk 2 >\n\
cluster pod : dgx_a100 < nodes 1 >\n\
plan p <\n  tp 2 sp on cp 2 ep 2 etp 1 micro_batch 1 global_batch 16\n  cp_comm a2a\n\
  moe_dispatcher allgather\n  recompute selective\n  recompute_modules core_attn moe_act\n>\n";
    let (mut session, sw) = prepared(text, &SweepOptions::default()).unwrap();
    let (o, _) = run(&mut session, &sw, None, &Silent);
    assert_eq!(o.results.len(), 1, "{}", output::summary(&o));
    for r in &o.results {
        let s = &r.plan.settings;
        assert_eq!(s.get("etp").map(String::as_str), Some("1"));
        assert_eq!(
            s.get("recompute_modules").map(String::as_str),
            Some("core_attn+moe_act")
        );
        assert_eq!(s.get("cp_comm").map(String::as_str), Some("a2a"), "{s:?}");
    }
    let table = output::text(&o, 4, false);
    let header = table
        .lines()
        .find(|l| l.trim_start().starts_with("rank"))
        .unwrap();
    for title in ["cp_comm", "etp", "moe_dispatcher", "recompute_modules"] {
        assert!(header.contains(title), "{title}: {header}");
    }
    let csv = output::csv(&o, false);
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let at = |name: &str| head.iter().position(|h| *h == name).unwrap();
    for line in lines {
        let row: Vec<&str> = line.split(',').collect();
        assert_eq!(row[at("cp_comm")], "a2a", "{line}");
        assert_eq!(row[at("etp")], "1");
        assert_eq!(row[at("recompute_modules")], "core_attn+moe_act");
        assert_eq!(row[at("moe_dispatcher")], "allgather");
    }
    let json: serde_json::Value = serde_json::from_str(&output::json(&o)).unwrap();
    let first = &json["results"][0]["plan"]["settings"];
    assert_eq!(first["etp"], "1");
    assert_eq!(first["recompute_modules"], "core_attn+moe_act");
    assert_eq!(first["moe_dispatcher"], "allgather");
}

#[test]
fn pareto_only_output_lists_just_the_front() {
    let (mut session, sw) =
        list_sweep("tp [1 2 4] pp [1 2] micro_batch 1 global_batch 32 recompute [none full]");
    let (o, _) = run(&mut session, &sw, None, &Silent);
    let front = o.pareto();
    assert!(front.len() < o.results.len());
    let text = output::text(&o, 10, true);
    assert!(!text.contains("fastest"), "{text}");
    let rows = text
        .lines()
        .skip_while(|l| !l.starts_with("pareto front"))
        .skip(2)
        .count();
    assert_eq!(rows, front.len());
    let csv = output::csv(&o, true);
    assert_eq!(csv.lines().count(), 1 + front.len());
    assert!(csv.lines().skip(1).all(|l| l.ends_with(",true")));
    assert_eq!(output::pareto_only(&o).results.len(), front.len());
}

/// A sweep file with a `train` budget, so every objective (time to train and cost too) ranks.
fn budgeted(plan: &str) -> String {
    format!(
        "{TINY}plan p < {plan} >\n\
         scenario s < model tiny cluster pod plan p train < tokens 10B price 2.5 > >\n"
    )
}

const EVERY_OBJECTIVE: [Objective; 7] = [
    Objective::Time,
    Objective::Throughput,
    Objective::GpuHours,
    Objective::Mfu,
    Objective::TimeToTrain,
    Objective::Cost,
    Objective::Goodput,
];

/// A listed result as the tests compare it: candidate, time, peak, train time, cost, plan.
type Listed = (u64, f64, u64, Option<f64>, Option<f64>, PlanSummary);

/// What the tests compare of a listed result: its number, every figure and its plan.
fn listed(o: &Outcome) -> Vec<Listed> {
    o.results
        .iter()
        .map(|r| {
            (
                r.candidate,
                r.iteration_time_ms(),
                r.peak_memory().0,
                r.train_seconds,
                r.cost_dollars,
                r.plan.clone(),
            )
        })
        .collect()
}

fn pruned_to(objective: Objective, keep: u64) -> SweepOptions {
    SweepOptions {
        objective,
        prune: Some(keep),
        ..SweepOptions::default()
    }
}

/// A smaller world for `--auto` spaces the tests simulate whole: 4 layers on 8 GPUs.
const SMALL: &str =
    "model small < hidden 1024 layers 4 heads 16 head_dim 64 vocab 32000 seq 1024 >\n\
cluster pod : dgx_a100 < nodes 1 >\n";

#[test]
fn a_pruned_sweep_lists_the_exhaustive_top_k_for_every_objective() {
    // Small spaces, lists and `--auto`, every objective, K of 1, 3 and 10: the best K by the
    // objective (ties by memory, then candidate number) are the exhaustive ranking's first K,
    // figure for figure, and the pruned sweep simulates fewer plans.
    // The written `cp_comm` keeps its row out (a written choice stays), so the space stays
    // small enough to simulate whole in a debug build; recompute_modules is swept.
    let auto_space = format!(
        "{SMALL}plan p < global_batch 64\n cp_comm p2p\n>\n\
         scenario s < model small cluster pod plan p train < tokens 10B price 2.5 > >\n"
    );
    let spaces = [
        (
            budgeted("tp [1 2 4 8] pp [1 2 4] micro_batch [1 2 4] global_batch 64 recompute [none selective full]"),
            None,
        ),
        (
            budgeted("tp [1 2] cp [1 2] pp [1 2] micro_batch [1 2] global_batch [16 32] recompute [none full] sp [on off]"),
            None,
        ),
        (auto_space, Some(AutoOptions::default())),
    ];
    let mut runs = 0;
    let mut skipped_some = 0;
    for (text, auto) in &spaces {
        let exhaustive_opts = SweepOptions {
            auto: *auto,
            ..SweepOptions::default()
        };
        let (mut session, sw) = prepared(text, &exhaustive_opts).unwrap();
        let (all, full) = run(&mut session, &sw, None, &Silent);
        assert!(all.results.len() > 10, "{text}: {}", all.results.len());
        for objective in EVERY_OBJECTIVE {
            let mut exhaustive = all.clone();
            exhaustive.rank_by(objective);
            // One K per objective keeps the test short; over the objectives every K is tried.
            let keep = [1, 3, 10][runs % 3];
            runs += 1;
            let opts = SweepOptions {
                auto: *auto,
                ..pruned_to(objective, keep)
            };
            let (mut session, sw) = prepared(text, &opts).unwrap();
            let (best, timing) = run(&mut session, &sw, None, &Silent);
            let mut want = listed(&exhaustive);
            want.truncate(keep as usize);
            assert_eq!(listed(&best), want, "{objective:?}, best {keep} of {text}");
            assert_eq!(best.kept, Some(keep));
            // Every valid plan not listed counts under `bound`, so the counts add up.
            let valid =
                all.results.len() as u64 + all.pruned.get(&PruneKey::Duplicate).unwrap_or(&0);
            assert_eq!(best.pruned.get(&PruneKey::Bound), Some(&(valid - keep)));
            assert_eq!(
                best.results.len() as u64 + best.pruned_total(),
                best.candidates
            );
            if timing.simulated < full.simulated {
                skipped_some += 1;
            }
        }
    }
    // 3 spaces × 6 objectives: the bound skips plans in most of them.
    assert!(
        skipped_some >= 12,
        "the bound skipped plans in {skipped_some} of {runs} runs"
    );
}

#[test]
fn the_time_bound_counts_the_pipeline_ramp_of_1f1b() {
    // pp 4 with 4 microbatches: 3 chunk-0 forwards run before the last stage's first op and 3
    // backwards after its last. The bound counts that ramp above the busiest stage's compute
    // (1.376 times it here: the ends, which carry the embedding and the loss, are the busiest)
    // and stays under the simulated time.
    let text = format!("{TINY}plan p < tp 2 pp 4 micro_batch 1 global_batch 8 >\n");
    let (mut session, sw) = prepared(&text, &SweepOptions::default()).unwrap();
    let sc = check_candidate(&mut session, &sw, 0).unwrap();
    assert_eq!((sc.pp, sc.microbatches), (4, 4));
    let model = crate::cost::model_for(&sc);
    let pass = |stage: u64, pass| model.chunk(stage, 0, pass).total.0;
    let busiest = (0..sc.pp)
        .map(|s| {
            4.0 * (pass(s, crate::cost::Pass::Forward) + pass(s, crate::cost::Pass::Backward))
                + model.optimizer_step(s).0
        })
        .fold(0.0, f64::max);
    let lower = bound::iteration_time_lower_bound(&sc).0;
    let simulated = simulate(&sc, &SimOptions::default())
        .unwrap()
        .report
        .iteration_time
        .0;
    assert!(
        lower > 1.3 * busiest,
        "bound {lower} s, busiest stage {busiest} s"
    );
    assert!(
        lower <= simulated,
        "bound {lower} s, simulated {simulated} s"
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
    /// Random plans of a random small model: the bound is at most the simulated time.
    #[test]
    fn the_time_bound_holds_for_random_plans(
        layers in 1u64..5,
        hidden in 4u64..17,
        seq_log in 8u32..12,
        tp_log in 0u32..3,
        pp_log in 0u32..3,
        micro_batch in 1u64..3,
        batches in 1u64..9,
        recompute in 0usize..3,
        schedule in 0usize..6,
        mfu in proptest::option::of(10u64..70),
    ) {
        let layers = layers * 4;
        let (tp, pp) = (1u64 << tp_log, 1u64 << pp_log);
        let seq = 1u64 << seq_log;
        let dp = 8 / tp;
        let global_batch = micro_batch * dp * pp * batches;
        let recompute = ["none", "selective", "full"][recompute];
        // 1F1B, both zero-bubble schedules, interleaved (whose ramps the bound counts) and
        // both DualPipe schedules; a shape a schedule refuses is pruned and skipped.
        let schedule = if pp > 1 {
            [
                "",
                "schedule zb_h1",
                "schedule zb_h2",
                "vpp 2",
                "schedule dualpipe",
                "schedule dualpipev vpp 2",
            ][schedule]
        } else {
            ""
        };
        let mfu = mfu.map_or(String::new(), |m| format!("mfu {m}%"));
        let text = format!(
            "model m < hidden {} layers {layers} heads 8 head_dim {} vocab 32000 seq {seq} >\n\
             cluster c : dgx_a100 < nodes {pp} >\n\
             plan p < tp {tp} pp {pp} micro_batch {micro_batch} global_batch {global_batch} \
             recompute {recompute} {schedule} {mfu} >\n",
            hidden * 64 * 8, hidden * 64,
        );
        let (mut session, sw) = prepared(&text, &SweepOptions::default()).unwrap();
        if let Ok(sc) = check_candidate(&mut session, &sw, 0) {
            let sim = simulate(&sc, &SimOptions::default()).unwrap();
            let lower = bound::iteration_time_lower_bound(&sc).0;
            proptest::prop_assert!(lower <= sim.report.iteration_time.0, "{text}: {lower}");
            // The sweep's figures without the report are the report's.
            let headline = crate::simulate::headline(&sc).unwrap();
            proptest::prop_assert_eq!(headline.iteration_time, sim.report.iteration_time);
            proptest::prop_assert_eq!(headline.mfu, sim.report.mfu);
            proptest::prop_assert_eq!(headline.train, sim.report.train);
            let peak = sim.report.peak_stage().map(|m| m.peak);
            let r = Ranked::new(0, PlanSummary::of(&sc), figures(&sc, &headline));
            proptest::prop_assert_eq!(Some(r.peak_memory()), peak);
            for objective in EVERY_OBJECTIVE {
                let figure = objective.cost(&r);
                let best = bound::objective_bound(objective, &sc, Seconds(lower));
                proptest::prop_assert!(best <= figure, "{objective:?}: {best} > {figure}");
            }
        }
    }
}

#[test]
fn pruned_shards_merge_into_the_pruned_whole_sweep() {
    let text = format!("{SMALL}plan p < global_batch 64\n cp_comm p2p\n>\n");
    let opts = SweepOptions {
        auto: Some(AutoOptions::default()),
        ..pruned_to(Objective::Time, 5)
    };
    let (mut session, sw) = prepared(&text, &opts).unwrap();
    let (whole, _) = run(&mut session, &sw, None, &Silent);
    let parts: Vec<Outcome> = (1..=4)
        .map(|i| {
            run(
                &mut session,
                &sw,
                Some(Shard { index: i, count: 4 }),
                &Silent,
            )
            .0
        })
        .collect();
    assert!(parts.iter().all(|p| p.results.len() <= 5));
    let merged = merge(parts.clone()).unwrap();
    assert_eq!(listed(&merged), listed(&whole));
    assert_eq!(merged.pruned, whole.pruned);
    // A shard kept to another K does not merge with them.
    let mut other = parts;
    other[1].kept = Some(6);
    let e = merge(other).unwrap_err();
    assert!(e.contains("keeps the best 6 plans"), "{e}");
    // Nor does a pruned sweep share its fingerprint with the unpruned one.
    let (_, unpruned) = prepared(&text, &auto()).unwrap();
    assert_ne!(unpruned.fingerprint, sw.fingerprint);
}

#[test]
fn time_to_train_and_cost_rank_by_the_budget_at_each_plans_speed() {
    let text = budgeted("tp [1 2 4] pp [1 2] micro_batch 1 global_batch [32 64]");
    for objective in [Objective::TimeToTrain, Objective::Cost] {
        let opts = SweepOptions {
            objective,
            ..SweepOptions::default()
        };
        let (mut session, sw) = prepared(&text, &opts).unwrap();
        let (o, _) = run(&mut session, &sw, None, &Silent);
        assert_eq!(o.results.len(), 12);
        for r in &o.results {
            // 10B tokens in whole iterations of global_batch × 1,024 tokens, 16 GPUs at $2.5.
            let iterations = (10_000_000_000 / (r.plan.global_batch * 1024)) as f64;
            let time = iterations * r.iteration_time().0;
            let t = r.train_time().unwrap().0;
            assert!((t - time).abs() <= 1e-9 * time, "{t} vs {time}");
            let cost = time * 16.0 / 3600.0 * 2.5;
            assert!((r.train_cost().unwrap() - cost).abs() <= 1e-9 * cost);
        }
        let figure = |r: &Ranked| match objective {
            Objective::TimeToTrain => r.train_time().unwrap().0,
            _ => r.train_cost().unwrap(),
        };
        assert!(o.results.windows(2).all(|w| figure(&w[0]) <= figure(&w[1])));
        let table = output::text(&o, 3, false);
        let column = if objective == Objective::Cost {
            "cost ($M)"
        } else {
            "train (days)"
        };
        assert!(table.contains(column), "{table}");
    }
}

/// A prune key from its text, for the tests' expected maps.
fn prune_key(text: &str) -> PruneKey {
    PruneKey::parse(text).expect("a prune key")
}

#[test]
fn prune_keys_are_written_as_their_text_in_the_strings_order_and_an_unknown_one_does_not_parse() {
    let pruned = BTreeMap::from([
        (PruneKey::SimulationFailed, 1u64),
        (PruneKey::Bound, 2),
        (PruneKey::Code(Code::E0401), 3),
        (PruneKey::Duplicate, 4),
        (PruneKey::Code(Code::E0301), 5),
    ]);
    assert_eq!(
        serde_json::to_string(&pruned).unwrap(),
        r#"{"E0301":5,"E0401":3,"bound":2,"duplicate":4,"simulation":1}"#
    );
    let back: BTreeMap<PruneKey, u64> =
        serde_json::from_str(r#"{"E0301":5,"E0401":3,"bound":2,"duplicate":4,"simulation":1}"#)
            .unwrap();
    assert_eq!(back, pruned);
    let err = serde_json::from_str::<BTreeMap<PruneKey, u64>>(r#"{"E9999":1}"#).unwrap_err();
    assert!(
        err.to_string().contains("`E9999` is not a prune key"),
        "{err}"
    );
}
