//! Rendering tests for typed plan problems: each builds a problem from its facts and checks
//! the exact text, labels and help it becomes.

use super::*;
use venus_diag::diag::{FileId, Span};

fn at(start: usize) -> Loc {
    Loc::new(FileId(0), Span::new(start, start + 1))
}

#[test]
fn repair_renders_each_change_alone_and_in_a_combination() {
    let gib = |n: u64| Bytes(n * Bytes::GIB);
    let one = Repair::One {
        change: Change::Tp { tp: 4, dp: Some(2) },
        peak: gib(70),
    };
    assert_eq!(
        render_repair(&one, gib(80)),
        "use `tp 4` and `dp 2`: the largest stage then needs 70 GiB of 80 GiB"
    );
    let combined = Repair::Combined {
        changes: vec![
            Change::AddSp,
            Change::Recompute(Recompute::Full),
            Change::Pp { pp: 8, dp: Some(1) },
        ],
        dp: Some(1),
        peak: gib(20),
    };
    assert_eq!(
        render_repair(&combined, gib(24)),
        "combine `sp`, `recompute full` and `pp 8` with `dp 1`: the largest stage then \
         needs 20 GiB of 24 GiB"
    );
    let short = Repair::NotEnough {
        changes: vec![Change::AddDistributedOptimizer],
        dp: None,
        peak: gib(30),
    };
    assert_eq!(
        render_repair(&short, gib(24)),
        "even with `distributed_optimizer` the largest stage needs 30 GiB; use more GPUs or \
         GPUs with more memory"
    );
    assert_eq!(
        render_repair(&Repair::None { peak: gib(90) }, gib(80)),
        "use GPUs with more than 90 GiB of memory, or more GPUs"
    );
}

#[test]
fn memory_breakdown_renders_one_note_per_term() {
    let b = MemoryBreakdown {
        stage: 3,
        peak: Bytes(10 * Bytes::GIB),
        weights: Bytes(2 * Bytes::GIB),
        params: 1_073_741_824,
        gradients: Bytes(4 * Bytes::GIB),
        optimizer: Bytes(Bytes::GIB),
        sharded_over: Some(8),
        activations: Bytes(3 * Bytes::GIB),
        layers: 4,
        in_flight: 1,
        recompute: Recompute::Selective,
        state: StateKeeping {
            grads: "fp32",
            optimizer: ["fp32", "fp32", "fp32"],
            trainable: None,
            fsdp: None,
        },
    };
    assert_eq!(
        b.notes(),
        [
            "stage 3: weights 2 GiB (1,073,741,824 parameters per GPU, 2 bytes each)",
            "gradients 4 GiB (fp32)",
            "optimizer state 1 GiB (fp32 master weights and Adam moments, sharded over dp × \
             cp = 8)",
            "activations 3 GiB (4 layers, 1 microbatch in flight, recompute selective)",
        ]
    );
}

#[test]
fn flag_needs_names_the_flag_its_prerequisite_and_where_that_was_written_off() {
    let d = PlanProblem::FlagNeeds(FlagNeeds {
        flag: Flag::OverlapParamGather,
        needs: Flag::DistributedOptimizer,
        flag_loc: at(10),
        label: "gathers parameters sharded by the distributed optimizer",
        fix: FlagFix::Add,
        needs_off: Some(at(20)),
    })
    .into_diagnostic();
    assert_eq!(d.code, Code::E0310);
    assert_eq!(
        d.message,
        "`overlap_param_gather` needs `distributed_optimizer`"
    );
    assert_eq!(d.primary.loc, at(10));
    assert_eq!(d.secondary.len(), 1);
    assert_eq!(
        (d.secondary[0].loc, d.secondary[0].message.as_str()),
        (at(20), "distributed_optimizer off")
    );
    assert_eq!(
        d.help.as_deref(),
        Some("add `distributed_optimizer` to the plan")
    );
    let d = PlanProblem::FlagNeeds(FlagNeeds {
        flag: Flag::DelayGradReduce,
        needs: Flag::OverlapGradReduce,
        flag_loc: at(10),
        label: "delays an overlapped reduction",
        fix: FlagFix::AddOrRemove,
        needs_off: None,
    })
    .into_diagnostic();
    assert_eq!(
        d.help.as_deref(),
        Some("add `overlap_grad_reduce` to the plan, or remove `delay_grad_reduce`")
    );
    assert!(d.secondary.is_empty());
}

#[test]
fn world_mismatch_renders_options_with_the_factors_as_written_and_the_dp_fix() {
    let d = PlanProblem::WorldMismatch(WorldMismatch {
        tp: 2,
        pp: 4,
        cp: 1,
        dp: Some(4),
        world: 16,
        cp_written: true,
        model: 8,
        primary: at(1),
        factors: vec![Written {
            key: "tp",
            value: 2,
            loc: at(2),
        }],
        dims: vec![DimSize {
            name: "nvlink".to_string(),
            size: 16,
            loc: at(3),
        }],
        help: WorldHelp::Use(vec![WorldOption {
            set: Setting {
                key: "dp",
                value: 2,
            },
            tp: 2,
            pp: 4,
            cp: 1,
            dp: 2,
        }]),
        fix: Some((at(1), 2)),
    })
    .into_diagnostic();
    assert_eq!(
        d.message,
        "plan needs 32 GPUs (tp 2 × pp 4 × cp 1 × dp 4) but cluster has 16"
    );
    assert_eq!(d.primary.message, "tp × pp × cp × dp = 32");
    let labels: Vec<&str> = d.secondary.iter().map(|l| l.message.as_str()).collect();
    assert_eq!(labels, ["tp 2", "16 GPUs in dim `nvlink`"]);
    assert_eq!(
        d.help.as_deref(),
        Some("use `dp 2` (tp 2 × pp 4 × cp 1 × dp 2 = 16)")
    );
    assert_eq!(d.fix.map(|f| f.replacement), Some("2".to_string()));
}

#[test]
fn bubble_renders_its_formula_and_each_option_with_the_bubble_it_leaves() {
    // pp 4, 4 microbatches: (4 − 1) / (4 + 4 − 1) = 42.9%; 9 microbatches give 3 / 12.
    let d = PlanProblem::Bubble(Bubble {
        bubble: Ratio(3.0 / 7.0),
        pp: 4,
        m: 4,
        vpp: 1,
        micro_batch: 2,
        primary: at(1),
        global_batch_loc: at(2),
        micro_batch_loc: at(3),
        vpp_written: None,
        options: vec![
            BubbleOption::GlobalBatch {
                global_batch: 72,
                microbatches: 9,
                bubble: Ratio(0.25),
            },
            BubbleOption::MicroBatch {
                micro_batch: 1,
                microbatches: 8,
                bubble: Ratio(3.0 / 11.0),
            },
        ],
    })
    .into_diagnostic();
    assert_eq!(d.code, Code::W0003);
    assert_eq!(
        d.message,
        "pipeline bubble is 42.9% of the iteration (pp 4, 4 microbatches)"
    );
    assert_eq!(
        d.notes,
        ["bubble = (pp − 1) / (m·vpp + pp − 1) = 3 / (4·1 + 3)"]
    );
    assert_eq!(
        d.help.as_deref(),
        Some(
            "raise `global_batch` to 72 (9 microbatches, bubble 25.0%) or lower \
             `micro_batch` to 1 (8 microbatches, bubble 27.3%)"
        )
    );
}

#[test]
fn expert_failures_after_the_first_become_notes() {
    let d = PlanProblem::ExpertParallel(ExpertParallel {
        ep: 3,
        ep_loc: at(5),
        first: EpFailure::Experts {
            experts: 8,
            experts_loc: at(6),
            options: Setting::list("ep", [2, 4]),
        },
        also: vec![EpFailure::Grid {
            world: 16,
            tp: 1,
            pp: 1,
            group: 3,
            written: Vec::new(),
            dims: Vec::new(),
            options: Vec::new(),
        }],
    })
    .into_diagnostic();
    assert_eq!(d.message, "8 experts cannot be split over ep 3");
    assert_eq!(d.primary.message, "8 % 3 ≠ 0");
    assert_eq!(d.help.as_deref(), Some("use `ep 2` or `ep 4`"));
    assert_eq!(
        d.notes,
        ["`ep` 3 also breaks: cluster has 16 GPUs, not a multiple of etp 1 × ep 3 × pp 1 = 3"]
    );
}

#[test]
fn memory_breakdown_names_lora_fsdp_and_low_precision_state() {
    let b = MemoryBreakdown {
        stage: 0,
        peak: Bytes(10 * Bytes::GIB),
        weights: Bytes(2 * Bytes::GIB),
        params: 1_073_741_824,
        gradients: Bytes(Bytes::GIB),
        optimizer: Bytes(Bytes::GIB),
        sharded_over: Some(8),
        activations: Bytes(3 * Bytes::GIB),
        layers: 4,
        in_flight: 1,
        recompute: Recompute::None,
        state: StateKeeping {
            grads: "bf16",
            optimizer: ["fp32", "bf16", "bf16"],
            trainable: Some(44_040_192),
            fsdp: Some("optim_grads_params"),
        },
    };
    let notes = b.notes();
    assert_eq!(
        notes[0],
        "stage 0: weights 2 GiB (1,073,741,824 parameters per GPU, 2 bytes each, fsdp \
         optim_grads_params)"
    );
    assert_eq!(
        notes[1],
        "gradients 1 GiB (bf16, 44,040,192 trainable adapter parameters)"
    );
    assert_eq!(
        notes[2],
        "optimizer state 1 GiB (fp32 master weights, bf16 and bf16 Adam moments, sharded over \
         dp × cp = 8)"
    );
}
