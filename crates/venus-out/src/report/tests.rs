//! Report tests on hand-built and synthetic traces with exact expected figures. Networks use
//! 100 GB/s and zero latency, so one byte takes 10 ps and 100,000 bytes take 1 us.

use super::*;
use venus_front::testutil::*;
use venus_front::ty::{BytesPerSec, ScenarioDef};
use venus_front::validate;
use venus_sim::engine::{run_trace, Options};
use venus_sim::trace::synthetic::Pipeline;
use venus_sim::trace::{CollectiveKind, Label, NodeId, RankId, StreamId, TraceBuilder};

const US: u64 = 1_000_000;

fn ps_us(us: f64) -> Seconds {
    Seconds(us * 1e-6)
}

/// A small model (h 1024, 16 heads, 8 layers, vocab 32768, seq 1024) on one dim of `gpus`
/// GPUs at 100 GB/s, micro_batch 1.
fn small(gpus: u64, tp: u64, pp: u64, global_batch: u64) -> ScenarioDef {
    let mut c = cluster(&[("nvlink", gpus)], 80);
    c.dims[0].bandwidth = sp(BytesPerSec(100e9));
    let mut p = plan(1, global_batch);
    set(&mut p.tp, tp);
    set(&mut p.pp, pp);
    def(model(1024, 16, 8, 32768, 1024), c, p)
}

fn scenario(def: &ScenarioDef) -> Scenario {
    let (sc, diags) = validate(def);
    sc.unwrap_or_else(|| panic!("invalid test scenario: {diags:#?}"))
}

fn run(sc: &Scenario, trace: &Trace) -> Timeline {
    let net = venus_lower::lower::network(&sc.cluster).unwrap();
    run_trace(trace, &net, &Options::default()).unwrap()
}

fn phase(r: &Report, c: Category) -> MinMax {
    r.phases
        .iter()
        .find(|p| p.category == c)
        .unwrap_or_else(|| panic!("no phase {}", c.name()))
        .time
}

fn exposed_of(r: &Report, k: CommKind) -> MinMax {
    r.exposed
        .iter()
        .find(|e| e.kind == k)
        .unwrap_or_else(|| panic!("no exposed {k}"))
        .time
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1e-30)
}

fn mm(min_us: f64, max_us: f64) -> MinMax {
    MinMax {
        min: ps_us(min_us),
        max: ps_us(max_us),
    }
}

fn assert_mm(got: MinMax, want: MinMax) {
    assert!(
        close(got.min.0, want.min.0) && close(got.max.0, want.max.0),
        "got {got:?}, want {want:?}"
    );
}

/// pp 2: rank 0 computes 10 us then sends 100,000 B (1 us) to rank 1; rank 1 posts its
/// receive at 0, so it waits until 11 us, then computes 5 us.
fn p2p_case() -> (Scenario, Trace, Timeline) {
    let sc = scenario(&small(2, 1, 2, 4));
    let mut b = TraceBuilder::new(2);
    let r0 = b.rank(RankId(0));
    let c = r0.push(
        NodeKind::Compute {
            duration: Ps(10 * US),
        },
        StreamId::COMPUTE,
        Category::ForwardCompute,
        Label::Forward {
            microbatch: 0,
            chunk: None,
        },
        &[],
    );
    r0.push(
        NodeKind::Send {
            peer: RankId(1),
            bytes: Bytes(100_000),
            tag: 0,
        },
        StreamId::COMM,
        Category::Send,
        Label::SendTo { pp: 1 },
        &[c],
    );
    let r1 = b.rank(RankId(1));
    let rv = r1.push(
        NodeKind::Recv {
            peer: RankId(0),
            bytes: Bytes(100_000),
            tag: 0,
        },
        StreamId::COMM,
        Category::Recv,
        Label::RecvFrom { pp: 0 },
        &[],
    );
    r1.push(
        NodeKind::Compute {
            duration: Ps(5 * US),
        },
        StreamId::COMPUTE,
        Category::BackwardCompute,
        Label::Backward {
            microbatch: 0,
            chunk: None,
        },
        &[rv],
    );
    let trace = b.finish().unwrap();
    let tl = run(&sc, &trace);
    (sc, trace, tl)
}

/// tp 2: each rank computes 10 us, then all-reduces 100,000 B (1 us, hidden behind a second
/// compute of 4 us on rank 0 and 4.5 us on rank 1), then all-reduces again after that compute.
/// The second all-reduce starts when rank 1 arrives (14.5 us) and ends at 15.5 us.
fn tp_case() -> (Scenario, Trace, Timeline) {
    let sc = scenario(&small(2, 2, 1, 4));
    let mut b = TraceBuilder::new(2);
    let g = b.group(&[RankId(0), RankId(1)]);
    let ar = b.name("all-reduce tp");
    for (rank, second) in [(0u32, 4 * US), (1, 4 * US + US / 2)] {
        let r = b.rank(RankId(rank));
        let f = r.push(
            NodeKind::Compute {
                duration: Ps(10 * US),
            },
            StreamId::COMPUTE,
            Category::ForwardCompute,
            Label::Forward {
                microbatch: 0,
                chunk: None,
            },
            &[],
        );
        let all_reduce = NodeKind::Collective {
            kind: CollectiveKind::AllReduce,
            group: g,
            bytes: Bytes(100_000),
        };
        r.push(
            all_reduce,
            StreamId::COMM,
            Category::TpComm,
            Label::Text(ar),
            &[f],
        );
        let bw = r.push(
            NodeKind::Compute {
                duration: Ps(second),
            },
            StreamId::COMPUTE,
            Category::BackwardCompute,
            Label::Backward {
                microbatch: 0,
                chunk: None,
            },
            &[],
        );
        r.push(
            all_reduce,
            StreamId::COMM,
            Category::TpComm,
            Label::None,
            &[bw],
        );
    }
    let trace = b.finish().unwrap();
    let tl = run(&sc, &trace);
    (sc, trace, tl)
}

fn report_of(case: (Scenario, Trace, Timeline)) -> Report {
    let (sc, trace, tl) = case;
    Report::new(&sc, &trace, &tl, Window::whole(&tl), Seconds(0.0125))
}

// ------------------------------------------------------------------ metrics

#[test]
fn p2p_wait_is_exposed_pipeline_communication_and_idle_compute() {
    let r = report_of(p2p_case());
    assert_eq!(r.iteration_time, ps_us(16.0));
    assert_mm(phase(&r, Category::ForwardCompute), mm(0.0, 10.0));
    assert_mm(phase(&r, Category::BackwardCompute), mm(0.0, 5.0));
    assert_mm(phase(&r, Category::Send), mm(0.0, 1.0));
    assert_mm(phase(&r, Category::Recv), mm(0.0, 11.0));
    // Only the transfer [10, 11) is exposed PP on both ranks: rank 1's receive waits 10 us
    // for rank 0's forward (bubble), rank 0 waits 5 us for rank 1's backward (the drain).
    assert_eq!(r.exposed.len(), 1);
    assert_mm(exposed_of(&r, CommKind::Pp), mm(1.0, 1.0));
    assert!(close(r.bubble_fraction.0, (5.0 / 16.0 + 10.0 / 16.0) / 2.0));
    let b = &r.breakdown;
    assert!(close(b.compute.0, ps_us(7.5).0));
    assert!(close(b.bubble.0, ps_us(7.5).0));
    assert_eq!(b.exposed.len(), 1);
    assert!(close(b.exposed[0].1 .0, ps_us(1.0).0));
    assert!(b.other_idle.0.abs() < 1e-18);
    assert!(close(b.total().0, r.iteration_time.0));
}

#[test]
fn tp_all_reduce_hidden_behind_compute_is_not_exposed() {
    let r = report_of(tp_case());
    assert_eq!(r.iteration_time, ps_us(15.5));
    // Rank 0: 1 us + 1.5 us (waits 0.5 us for rank 1); rank 1: 1 us + 1 us.
    assert_mm(phase(&r, Category::TpComm), mm(2.0, 2.5));
    assert_mm(phase(&r, Category::BackwardCompute), mm(4.0, 4.5));
    // The first all-reduce [10, 11) is under the second compute; the second is exposed,
    // with rank 0's wait for rank 1 (rank 0: [14, 15.5), rank 1: [14.5, 15.5)).
    assert_mm(exposed_of(&r, CommKind::Tp), mm(1.0, 1.5));
    // No other stage: nothing is pipeline bubble.
    assert_eq!(r.bubble_fraction, Ratio(0.0));
    assert!(close(r.breakdown.compute.0, ps_us(14.25).0));
    assert!(close(r.breakdown.total().0, r.iteration_time.0));
}

#[test]
fn window_clips_every_interval_to_the_reported_iteration() {
    let (sc, trace, tl) = p2p_case();
    let w = Window {
        start: Ps(5 * US),
        end: Ps(13 * US),
    };
    let r = Report::new(&sc, &trace, &tl, w, Seconds(0.0));
    assert_eq!(r.iteration_time, ps_us(8.0));
    assert_mm(phase(&r, Category::ForwardCompute), mm(0.0, 5.0));
    assert_mm(phase(&r, Category::BackwardCompute), mm(0.0, 2.0));
    assert_mm(phase(&r, Category::Recv), mm(0.0, 6.0));
    assert_mm(exposed_of(&r, CommKind::Pp), mm(1.0, 1.0));
    // Stage 0 computes 5 of 8 us and waits 2 us for stage 1's backward; stage 1 computes 2
    // and waits 5 us (of the window) for stage 0's forward; each waits 1 us for the transfer.
    assert!(close(r.bubble_fraction.0, (2.0 / 8.0 + 5.0 / 8.0) / 2.0));
    assert!(close(r.breakdown.total().0, r.iteration_time.0));
}

#[test]
fn required_phases_are_listed_even_when_absent_and_others_only_when_present() {
    let r = report_of(p2p_case());
    let names: Vec<&str> = r.phases.iter().map(|p| p.category.name()).collect();
    assert_eq!(
        names,
        [
            "forward-compute",
            "backward-compute",
            "send",
            "recv",
            "tp-comm",
            "all-grads-sync",
            "params-all-gather",
            "optimizer"
        ]
    );
    assert_mm(phase(&r, Category::AllGradsSync), mm(0.0, 0.0));
}

/// 1F1B, 4 stages, 8 microbatches, forward 1 ms, backward 2 ms, free P2P.
fn one_f_one_b() -> (Scenario, Trace, Timeline) {
    let sc = scenario(&small(4, 1, 4, 8));
    let trace = Pipeline {
        stages: 4,
        tp: 1,
        microbatches: 8,
        layers: 2,
        forward: Ps(1000 * US),
        backward: Ps(2000 * US),
        p2p_bytes: Bytes(0),
        tp_bytes: Bytes(0),
        symmetric: false,
    }
    .build()
    .unwrap();
    let tl = run(&sc, &trace);
    (sc, trace, tl)
}

#[test]
fn one_f_one_b_bubble_equals_the_analytic_fraction() {
    let (sc, trace, tl) = one_f_one_b();
    let r = Report::new(&sc, &trace, &tl, Window::whole(&tl), Seconds(0.0));
    // (m + p − 1)(t_f + t_b) = 11 × 3 ms.
    assert_eq!(r.iteration_time, ps_us(33_000.0));
    assert_mm(phase(&r, Category::ForwardCompute), mm(8000.0, 8000.0));
    assert_mm(phase(&r, Category::BackwardCompute), mm(16000.0, 16000.0));
    // Every stage idles 9 of 33 ms: (p − 1) / (m + p − 1) = 3 / 11.
    assert!(close(r.bubble_fraction.0, 3.0 / 11.0));
    assert!(close(r.bubble_fraction.0, sc.bubble_fraction().0));
}

#[test]
fn throughput_mfu_and_tokens_follow_megatron_flops_over_iteration_time() {
    let (sc, trace, tl) = one_f_one_b();
    let r = Report::new(&sc, &trace, &tl, Window::whole(&tl), Seconds(0.0));
    // 8 · 1024 · (8 · (72·1024² + 6·1024·1024) + 6·1024·32768)
    assert_eq!(r.flops, Flops(7_009_386_627_072.0));
    assert_eq!(r.world_size, 4);
    // 7.009e12 / (33 ms × 4 GPUs) = 53.1014 TFLOP/s per GPU, 5.369% of 989 TFLOP/s.
    assert!(close(r.tflops_per_gpu.0, 53.101_413_841_454_5e12));
    assert!(close(r.mfu.0, 0.053_692_026_128_872));
    assert_eq!(r.peak, FlopsPerSec(989e12));
    // 8 sequences × 1024 tokens / 33 ms.
    assert!(close(r.tokens_per_second.0, 248_242.424_242_424));
}

#[test]
fn empty_window_gives_zero_throughput_not_infinity() {
    let (sc, trace, tl) = p2p_case();
    let w = Window {
        start: Ps(3),
        end: Ps(3),
    };
    let r = Report::new(&sc, &trace, &tl, w, Seconds(0.0));
    assert_eq!(r.tflops_per_gpu, FlopsPerSec(0.0));
    assert_eq!(r.tokens_per_second, TokensPerSec(0.0));
    assert_eq!(r.bubble_fraction, Ratio(0.0));
    assert!(json(&r).contains("\"tflops_per_gpu\": 0.0,"));
}

#[test]
fn memory_rows_copy_the_scenario_memory_model_per_stage() {
    let (sc, trace, tl) = p2p_case();
    let r = report_of((sc.clone(), trace, tl));
    assert_eq!(r.memory.len(), 2);
    for (row, m) in r.memory.iter().zip(&sc.memory) {
        assert_eq!(
            (
                row.stage,
                row.weights,
                row.gradients,
                row.optimizer,
                row.activations,
                row.peak
            ),
            (
                m.stage,
                m.weights,
                m.gradients,
                m.optimizer,
                m.activations,
                m.peak
            )
        );
    }
    let largest = sc.memory.iter().map(|m| m.peak).max().unwrap();
    assert_eq!(r.peak_stage().unwrap().peak, largest);
}

// ------------------------------------------------------------------ json and text

#[test]
fn json_has_the_spec_fields_in_a_fixed_order() {
    let r = report_of(p2p_case());
    let out = json(&r);
    assert!(out.ends_with("}\n"));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    let mut want = [
        "scenario",
        "world_size",
        "iteration_time_ms",
        "flops_per_iteration",
        "tflops_per_gpu",
        "peak_tflops",
        "mfu",
        "tokens_per_second",
        "bubble_fraction",
        "parameters",
        "phases",
        "exposed_communication",
        "memory",
        "memory_reserve_bytes",
        "engine",
        "plan",
        "tokens_per_iteration",
        "train",
        "goodput",
        "warnings",
        "schedule_bubble_fraction",
        "breakdown",
    ];
    // serde_json's map sorts keys; the order in the text is checked below.
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    want.sort_unstable();
    assert_eq!(sorted, want);
    let positions: Vec<usize> = [
        "\"scenario\"",
        "\"world_size\"",
        "\"iteration_time_ms\"",
        "\"tflops_per_gpu\"",
        "\"mfu\"",
        "\"phases\"",
        "\"memory\"",
        "\"engine\"",
    ]
    .iter()
    .map(|k| out.find(k).unwrap())
    .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{out}");
    assert_eq!(v["world_size"], 2);
    assert_eq!(v["iteration_time_ms"], 0.016);
    assert_eq!(v["phases"]["recv"]["max_ms"], 0.011);
    assert_eq!(v["exposed_communication"]["pp"]["min_ms"], 0.001);
    assert_eq!(v["schedule_bubble_fraction"], 0.2);
    assert_eq!(v["breakdown"]["exposed_ms"]["pp"], 0.001);
    // (5 + 10) us / 2 stages.
    assert!(close(v["breakdown"]["bubble_ms"].as_f64().unwrap(), 0.0075));
    assert_eq!(v["engine"]["simulated_ranks"], 2);
    assert_eq!(v["engine"]["wall_ms"], 12.5);
    let stage = v["memory"][1].as_object().unwrap();
    let fields: Vec<&str> = stage.keys().map(String::as_str).collect();
    assert_eq!(fields.len(), 6);
    for f in [
        "stage",
        "weights_bytes",
        "gradients_bytes",
        "optimizer_bytes",
        "activations_bytes",
        "peak_bytes",
    ] {
        assert!(stage.contains_key(f), "{f}");
    }
    assert_eq!(v["memory"][1]["stage"], 1);
    // Unwritten, the reserve is the default 2.5 GiB (`plan::memory::DEFAULT_RESERVE`).
    assert_eq!(v["memory_reserve_bytes"], 2_684_354_560u64);
}

#[test]
fn two_runs_give_byte_identical_json_once_wall_time_is_zeroed() {
    let a = report_of(p2p_case());
    let mut b = report_of(p2p_case());
    b.engine.wall = Seconds(99.0);
    assert_ne!(json(&a), json(&b));
    let (a, b) = (a.deterministic(), b.deterministic());
    assert_eq!(json(&a), json(&b));
    assert_eq!(text(&a), text(&b));
    assert!(json(&a).contains("\"wall_ms\": 0.0"));
}

#[test]
fn text_report_shows_headline_figures_phases_exposure_and_memory() {
    let r = report_of(p2p_case()).deterministic();
    let t = text(&r);
    let head = "\
scenario `s` on 2 GPUs
  iteration time     0.016 ms
  throughput         109521.67 TFLOP/s/GPU
  mfu                11073.98% of 989.0 TFLOP/s
  tokens per second  256000000.0
  pipeline bubble    46.88% (schedule's closed form 20.00%)
  model FLOPs        3.5047e12 per iteration
  parameters         134.25M total, 134.25M active per token

  phase (ms per rank)    min    max
  forward-compute      0.000  0.010
  backward-compute     0.000  0.005
  send                 0.000  0.001
  recv                 0.000  0.011

  exposed communication (ms per rank)    min    max
  pp                                   0.001  0.001

  iteration (mean over stages)     ms    share
  compute                       0.008   46.88%
  pipeline bubble               0.008   46.88%
  exposed pp                    0.001    6.25%
  other idle                    0.000    0.00%
  iteration                     0.016  100.00%

  memory per GPU at the stage's peak (GiB)
  stage  weights  gradients  optimizer  activations  peak
";
    assert!(t.starts_with(head), "{t}");
    // Phases no rank spent time in (this trace's zero-byte TP, DP and optimizer nodes) are
    // left out of the text; the JSON report keeps them.
    assert!(!t.contains("tp-comm"), "{t}");
    assert!(json(&r).contains("\"tp-comm\""));
    let memory_rows: Vec<&str> = t[head.len()..].lines().take(2).collect();
    for (line, m) in memory_rows.iter().zip(&r.memory) {
        let cells: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cells[0], m.stage.to_string());
        assert_eq!(cells[5], format!("{:.2}", m.peak.gib()));
    }
    assert_eq!(
        t[head.len()..].lines().nth(2),
        Some("  reserve 2.50 GiB per GPU beside each peak (CUDA context, NCCL buffers, fragmentation)")
    );
    assert!(
        t.ends_with(&format!(
            "\n\nengine: {} events, 2 simulated ranks, 0.000 ms wall\n",
            r.engine.events
        )),
        "{t}"
    );
}

// ------------------------------------------------------------------ expect

fn headline(iteration_ms: f64, tflops: f64, mfu: f64, peak_gib: u64) -> Report {
    Report {
        scenario: "s".into(),
        world_size: 8,
        iteration_time: Seconds(iteration_ms * 1e-3),
        flops: Flops(0.0),
        tflops_per_gpu: FlopsPerSec(tflops * 1e12),
        peak: FlopsPerSec(989e12),
        mfu: Ratio(mfu),
        tokens_per_second: TokensPerSec(0.0),
        bubble_fraction: Ratio(0.0),
        schedule_bubble_fraction: Ratio(0.0),
        breakdown: TimeBreakdown::default(),
        parameters: Default::default(),
        phases: Vec::new(),
        exposed: Vec::new(),
        memory: [10, peak_gib, 20]
            .iter()
            .enumerate()
            .map(|(i, &g)| StageMemoryRow {
                stage: i as u64,
                weights: Bytes(0),
                gradients: Bytes(0),
                optimizer: Bytes(0),
                activations: Bytes(0),
                peak: Bytes(g * Bytes::GIB + Bytes::GIB / 4),
                graph_pool: Bytes(0),
                offloaded: Bytes(0),
            })
            .collect(),
        memory_reserve: Bytes(0),
        engine: EngineStats {
            events: 0,
            simulated_ranks: 0,
            wall: Seconds(0.0),
        },
        goodput: None,
        plan: super::ResolvedPlan {
            tp: 8,
            pp: 3,
            cp: 1,
            ep: 1,
            etp: 8,
            dp: 1,
            expert_dp: 1,
            vpp: 1,
            micro_batch: 1,
            global_batch: 8,
            microbatches: 8,
            layers_per_stage: vec![1, 1, 1],
            schedule: Some(venus_base::base::ScheduleKind::OneFOneB),
            precision: venus_base::base::Precision::Bf16,
            recompute: venus_base::base::Recompute::None,
            sp: false,
            distributed_optimizer: false,
            recompute_modules: Vec::new(),
            recompute_layers: None,
            fp8_param_gather: false,
        },
        tokens_per_iteration: 0,
        train: None,
        warnings: Vec::new(),
        window: super::Window {
            start: Ps::ZERO,
            end: Ps::from_seconds(Seconds(iteration_ms * 1e-3)),
        },
        stragglers: None,
    }
}

/// Distinct places for the four bounds, so a test can tell which one a label points at.
fn bound_locs() -> venus_plan::plan::ExpectLocs {
    use venus_diag::diag::{FileId, Loc, Span};
    let at = |start| Some(Loc::new(FileId(3), Span::new(start, start + 4)));
    venus_plan::plan::ExpectLocs {
        iteration_time_max: at(10),
        tflops_min: at(20),
        memory_max: at(30),
        mfu_min: at(40),
    }
}

#[test]
fn e0501_iteration_time_shows_prediction_bound_and_margin() {
    let e = venus_plan::plan::ExpectSpec {
        iteration_time_max: Some(Seconds(1.0)),
        ..Default::default()
    };
    let r = headline(1125.11, 100.0, 0.4, 30);
    let d = check_expect(&e, &bound_locs(), &r);
    assert_eq!(d.len(), 1);
    let d = &d[0];
    assert_eq!(d.code, venus_diag::diag::Code::E0501);
    assert_eq!(
        d.message,
        "predicted iteration time 1125.11 ms exceeds `iteration_time_max` 1000 ms"
    );
    assert_eq!(d.primary.loc, bound_locs().iteration_time_max.unwrap());
    assert_eq!(d.primary.message, "the prediction is 1125.11 ms");
    assert_eq!(
        d.help.as_deref(),
        Some("the prediction is 12.5% over the bound; raise it to 1126ms or change the plan")
    );
}

#[test]
fn e0501_tflops_and_mfu_below_their_minimums() {
    let e = venus_plan::plan::ExpectSpec {
        tflops_min: Some(FlopsPerSec(150e12)),
        mfu_min: Some(Ratio(0.4)),
        ..Default::default()
    };
    let r = headline(900.0, 142.35, 0.3821, 30);
    let d = check_expect(&e, &bound_locs(), &r);
    assert_eq!(d.len(), 2);
    assert_eq!(
        d[0].message,
        "predicted throughput per GPU 142.35 TFLOP/s is below `tflops_min` 150 TFLOP/s"
    );
    assert_eq!(d[0].primary.loc, bound_locs().tflops_min.unwrap());
    assert_eq!(
        d[0].help.as_deref(),
        Some("the prediction is 5.1% under the bound; lower it to 142TFLOP/s or change the plan")
    );
    assert_eq!(d[1].message, "predicted mfu 38.21% is below `mfu_min` 40%");
    assert_eq!(d[1].primary.loc, bound_locs().mfu_min.unwrap());
    assert_eq!(
        d[1].help.as_deref(),
        Some("the prediction is 4.5% under the bound; lower it to 38% or change the plan")
    );
}

#[test]
fn e0501_memory_max_is_checked_against_the_largest_stage_peak() {
    let e = venus_plan::plan::ExpectSpec {
        memory_max: Some(Bytes(64 * Bytes::GIB)),
        ..Default::default()
    };
    let r = headline(900.0, 100.0, 0.4, 71);
    let d = check_expect(&e, &bound_locs(), &r);
    assert_eq!(d.len(), 1);
    assert_eq!(
        d[0].message,
        "predicted peak memory of stage 1 71.25 GiB exceeds `memory_max` 64 GiB"
    );
    assert_eq!(d[0].primary.loc, bound_locs().memory_max.unwrap());
    assert_eq!(
        d[0].help.as_deref(),
        Some("the prediction is 11.3% over the bound; raise it to 72GiB or change the plan")
    );
}

#[test]
fn bounds_that_hold_give_no_diagnostic() {
    let e = venus_plan::plan::ExpectSpec {
        iteration_time_max: Some(Seconds(1.0)),
        tflops_min: Some(FlopsPerSec(100e12)),
        memory_max: Some(Bytes(30 * Bytes::GIB + Bytes::GIB / 4)),
        mfu_min: Some(Ratio(0.4)),
    };
    // Exactly on every bound: a bound equal to the prediction holds.
    let r = headline(1000.0, 100.0, 0.4, 30);
    assert_eq!(check_expect(&e, &bound_locs(), &r), Vec::new());
    assert_eq!(
        check_expect(
            &venus_plan::plan::ExpectSpec::default(),
            &Default::default(),
            &headline(1e9, 0.0, 0.0, 999)
        ),
        Vec::new()
    );
}

#[test]
fn tiny_throughput_suggests_a_nonzero_bound() {
    let e = venus_plan::plan::ExpectSpec {
        tflops_min: Some(FlopsPerSec(1e12)),
        ..Default::default()
    };
    let r = headline(900.0, 0.0456, 0.0, 1);
    let d = check_expect(&e, &bound_locs(), &r);
    assert_eq!(
        d[0].help.as_deref(),
        Some("the prediction is 95.4% under the bound; lower it to 0.04TFLOP/s or change the plan")
    );
}

// ------------------------------------------------------------------ perfetto

fn perfetto_json(
    trace: &Trace,
    tl: &Timeline,
    opts: &PerfettoOptions<'_>,
) -> (serde_json::Value, u64) {
    let mut buf = Vec::new();
    let n = write_perfetto(&mut buf, trace, tl, opts).unwrap();
    (serde_json::from_slice(&buf).unwrap(), n)
}

fn events<'a>(v: &'a serde_json::Value, ph: &str) -> Vec<&'a serde_json::Value> {
    v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == ph)
        .collect()
}

#[test]
fn perfetto_has_one_complete_event_per_node_with_exact_microseconds() {
    let (sc, trace, tl) = tp_case();
    let layout = Layout::for_scenario(&sc).unwrap();
    let opts = PerfettoOptions {
        ranks: None,
        layout: Some(&layout),
        activation_bytes: None,
    };
    let (v, n) = perfetto_json(&trace, &tl, &opts);
    assert_eq!(v["displayTimeUnit"], "ns");
    let x = events(&v, "X");
    assert_eq!(x.len(), trace.node_count());
    assert_eq!(n, 8);
    // Rank 1's second all-reduce (unlabelled) runs [14.5, 15.5) us.
    let last = x
        .iter()
        .find(|e| e["pid"] == 1 && e["ts"] == 14.5)
        .expect("second all-reduce of rank 1");
    assert_eq!(last["name"], "all-reduce tp");
    assert_eq!(last["cat"], "tp-comm");
    assert_eq!(last["dur"], 1);
    assert_eq!(last["tid"], 1);
    assert_eq!(last["args"]["bytes"], 100_000);
    let f = x
        .iter()
        .find(|e| e["pid"] == 0 && e["name"] == "F0")
        .unwrap();
    assert_eq!((f["ts"].as_u64(), f["dur"].as_u64()), (Some(0), Some(10)));
    let processes: Vec<&str> = events(&v, "M")
        .iter()
        .filter(|e| e["name"] == "process_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(processes, ["rank 0 (pp0 tp0 dp0)", "rank 1 (pp0 tp1 dp0)"]);
    let threads: Vec<(u64, &str)> = events(&v, "M")
        .iter()
        .filter(|e| e["name"] == "thread_name" && e["pid"] == 0)
        .map(|e| {
            (
                e["tid"].as_u64().unwrap(),
                e["args"]["name"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(threads, [(0, "compute"), (1, "comm tp-comm")]);
}

#[test]
fn perfetto_can_be_restricted_to_some_ranks() {
    let (_, trace, tl) = one_f_one_b();
    let keep = [0u32, 3];
    let opts = PerfettoOptions {
        ranks: Some(&keep),
        layout: None,
        activation_bytes: None,
    };
    let (v, n) = perfetto_json(&trace, &tl, &opts);
    let x = events(&v, "X");
    let want: usize = trace
        .ranks()
        .iter()
        .filter(|r| keep.contains(&r.rank().0))
        .map(|r| r.len())
        .sum();
    assert_eq!(x.len(), want);
    assert_eq!(n as usize, want);
    assert!(x.iter().all(|e| e["pid"] == 0 || e["pid"] == 3));
    let processes: Vec<&str> = events(&v, "M")
        .iter()
        .filter(|e| e["name"] == "process_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(processes, ["rank 0", "rank 3"]);
    // Stage 0 sends forward on stream 1 and receives gradients on stream 4.
    let names: Vec<&str> = x.iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"send→pp1") && names.contains(&"recv←pp2"));
    assert!(names.contains(&"F7") && names.contains(&"B7"));
}

#[test]
fn perfetto_has_p2p_flows_microbatch_args_and_an_in_flight_counter_per_stage() {
    let (_, trace, tl) = one_f_one_b();
    let (v, _) = perfetto_json(&trace, &tl, &PerfettoOptions::default());
    // 8 microbatches, each sent forward and its gradient back across 3 stage boundaries.
    let (s, f) = (events(&v, "s"), events(&v, "f"));
    assert_eq!((s.len(), f.len()), (48, 48));
    for (a, b) in s.iter().zip(&f) {
        assert_eq!(a["id"], b["id"]);
        assert_eq!(b["bp"], "e");
        let (from, to) = (a["pid"].as_i64().unwrap(), b["pid"].as_i64().unwrap());
        assert_eq!((from - to).abs(), 1, "{a} {b}");
        assert!(a["ts"].as_f64() <= b["ts"].as_f64());
    }
    let x = events(&v, "X");
    let f3 = x
        .iter()
        .find(|e| e["pid"] == 1 && e["name"] == "F3")
        .unwrap();
    assert_eq!(
        f3["args"],
        serde_json::json!({"microbatch": 3, "pass": "forward"})
    );
    let b3 = x
        .iter()
        .find(|e| e["pid"] == 1 && e["name"] == "B3")
        .unwrap();
    assert_eq!(b3["args"]["pass"], "backward");
    // 1F1B holds pp − stage microbatches at its peak (the memory model's count), and none
    // at the end.
    let counters = events(&v, "C");
    for rank in 0..4u64 {
        let track: Vec<u64> = counters
            .iter()
            .filter(|e| e["pid"] == rank)
            .map(|e| e["args"]["microbatches"].as_u64().unwrap())
            .collect();
        assert_eq!(
            track.iter().max(),
            Some(&(4 - rank)),
            "rank {rank}: {track:?}"
        );
        assert_eq!(track.last(), Some(&0));
        assert!(counters
            .iter()
            .all(|e| e["name"] == "activations in flight"));
    }
}

#[test]
fn perfetto_counts_activation_bytes_reaching_the_memory_models_peak_on_every_stage() {
    let (sc, trace, tl) = one_f_one_b();
    let layout = Layout::for_scenario(&sc).unwrap();
    let per = perfetto::activation_bytes_per_microbatch(&sc.memory);
    let opts = PerfettoOptions {
        ranks: None,
        layout: Some(&layout),
        activation_bytes: Some(&per),
    };
    let (v, _) = perfetto_json(&trace, &tl, &opts);
    let counters = events(&v, "C");
    for stage in 0..4u64 {
        let rank = (0..layout.world())
            .find(|&r| u64::from(layout.coords(r).pp) == stage)
            .unwrap();
        let bytes: Vec<u64> = counters
            .iter()
            .filter(|e| e["pid"] == u64::from(rank))
            .map(|e| {
                let n = e["args"]["microbatches"].as_u64().unwrap();
                let b = e["args"]["bytes"].as_u64().unwrap();
                assert_eq!(b, n * per[stage as usize]);
                b
            })
            .collect();
        // At the peak the stage holds the memory model's in-flight microbatches, so the
        // counter tops out at its activations (to the byte, but for the integer division).
        let m = &sc.memory[stage as usize];
        let top = *bytes.iter().max().unwrap();
        assert_eq!(top, per[stage as usize] * m.in_flight);
        assert!(
            m.activations.0 - top < m.in_flight,
            "{top} of {}",
            m.activations.0
        );
    }
}

#[test]
fn micros_are_exact_decimals_of_picoseconds() {
    assert_eq!(perfetto_micros(0), "0");
    assert_eq!(perfetto_micros(1_500_000), "1.5");
    assert_eq!(perfetto_micros(1), "0.000001");
    assert_eq!(perfetto_micros(33_000_000_000), "33000");
}

fn perfetto_micros(ps: u64) -> String {
    perfetto::micros(ps)
}

#[test]
fn symmetric_simulation_reports_the_same_figures_as_all_ranks() {
    let sc = scenario(&small(8, 2, 4, 8));
    let shape = |symmetric| Pipeline {
        stages: 4,
        tp: 2,
        microbatches: 8,
        layers: 2,
        forward: Ps(1000 * US),
        backward: Ps(2000 * US),
        p2p_bytes: Bytes(1_000_000),
        tp_bytes: Bytes(2_000_000),
        symmetric,
    };
    let report = |symmetric| {
        let trace = shape(symmetric).build().unwrap();
        let tl = run(&sc, &trace);
        Report::new(&sc, &trace, &tl, Window::whole(&tl), Seconds(0.0))
    };
    let (all, sym) = (report(false), report(true));
    assert_eq!(all.engine.simulated_ranks, 8);
    assert_eq!(sym.engine.simulated_ranks, 4);
    assert_eq!(all.iteration_time, sym.iteration_time);
    assert_eq!(all.phases, sym.phases);
    assert_eq!(all.exposed, sym.exposed);
    assert_eq!(all.bubble_fraction, sym.bubble_fraction);
    // Each stage waits for its tensor-parallel all-reduces: 2 layers × 2 segments × 2 passes
    // × 8 microbatches = 64 all-reduces of 2 MB, each 2·(1/2)·2 MB / 100 GB/s = 20 us.
    assert_mm(phase(&all, Category::TpComm), mm(64.0 * 20.0, 64.0 * 20.0));
    // A stage's critical path runs its own exposed all-reduces and those that delayed the
    // stages it waits for (their forwards and backwards wait for them too), so the later
    // stages are charged more TP time than they run.
    let exposed = exposed_of(&all, CommKind::Tp);
    assert!(
        exposed.min.0 > 0.0 && exposed.max.0 > exposed.min.0,
        "{exposed:?}"
    );
    assert_eq!(all.breakdown, sym.breakdown);
    assert!(close(all.breakdown.total().0, all.iteration_time.0));
}

// ------------------------------------------------------------------ scenario views

#[test]
fn memory_table_lists_every_stage() {
    let mut d = demo();
    d.plan.attention = Some(sp(venus_front::ty::Attention::Unfused));
    let (s, _) = validate(&d);
    let t = memory_table(&s.unwrap());
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines.len(), 1 + 1 + 1 + 8 + 1 + 1);
    assert!(lines[0].contains("`h100_sxm` has 80.00 GiB"), "{t}");
    // The demo model: 32 layers of 41.9M attention (GQA, 4 of 16 heads) + 201.3M SwiGLU MLP
    // (16384) + norms, and the tied 50,048 × 4096 embedding: 7.99B.
    assert_eq!(
        lines[1], "parameters: 7.99B total, 7.99B active per token",
        "{t}"
    );
    assert!(
        lines[2].starts_with("stage  layers  weights  gradients  optimizer  activations"),
        "{t}"
    );
    assert!(lines[3].starts_with("0 "), "{t}");
    // 70.18 GiB + the default 2.5 GiB reserve of 80 GiB: 91%.
    assert!(lines[3].ends_with("70.18     91%"), "{t}");
    assert_eq!(
        lines[11],
        "reserve: 2.50 GiB per GPU beside the peak (CUDA context, NCCL buffers, fragmentation; the default)"
    );
}

#[test]
fn groups_json_lists_sizes_and_groups() {
    use serde_json::json;
    use venus_plan::plan::layout::{Layout, LayoutSizes};
    // The worked example of megatron-semantics.md §2.1: world 16, tp 2, cp 2, dp 2, pp 2,
    // ep 4, etp 1.
    let sizes = LayoutSizes {
        tp: 2,
        cp: 2,
        ep: 4,
        dp: 2,
        pp: 2,
        etp: 1,
    };
    let v = groups_json(&Layout::new(sizes, &[8, 2]).unwrap());
    assert_eq!(v["world"], 16);
    assert_eq!(v["sizes"]["expert_dp"], 2);
    assert_eq!(v["groups"]["dp-cp"][1], json!([1, 3, 5, 7]));
    assert_eq!(v["groups"]["embedding"][0], json!([0, 8]));
}

#[test]
fn perfetto_estimate_counts_the_slices_it_would_write_per_selected_rank() {
    // `sim --timeline` refuses a file estimated over 1 GiB before writing (report M3).
    let (sc, trace, tl) = tp_case();
    let layout = Layout::for_scenario(&sc).unwrap();
    let opts = PerfettoOptions {
        ranks: None,
        layout: Some(&layout),
        activation_bytes: None,
    };
    let mut buf = Vec::new();
    let written = write_perfetto(&mut buf, &trace, &tl, &opts).unwrap();
    let (slices, bytes) = perfetto::estimate(&trace, None);
    assert_eq!(slices, written);
    assert_eq!(bytes, written * perfetto::BYTES_PER_SLICE);
    // Within a factor of two of the real file, even on this tiny trace (headers included).
    assert!(
        bytes * 2 > buf.len() as u64 && bytes < 2 * buf.len() as u64,
        "{bytes} vs {}",
        buf.len()
    );
    let one = trace.ranks()[0].rank().0;
    let (only, _) = perfetto::estimate(&trace, Some(&[one]));
    assert_eq!(only, trace.ranks()[0].nodes().len() as u64);
    assert_eq!(perfetto::estimate(&trace, Some(&[u32::MAX])), (0, 0));
}

// ------------------------------------------------------------------ additions: plan, train, html

#[test]
fn report_carries_the_resolved_plan_and_tokens_per_iteration() {
    let (sc, trace, tl) = p2p_case();
    let r = Report::new(&sc, &trace, &tl, Window::whole(&tl), Seconds(0.0));
    assert_eq!((r.plan.tp, r.plan.pp, r.plan.dp), (1, 2, 1));
    assert_eq!(r.plan.microbatches, sc.microbatches);
    assert_eq!(r.plan.layers_per_stage.len(), 2);
    assert_eq!(r.plan.layers_per_stage.iter().sum::<u64>(), sc.model.layers);
    assert_eq!(r.tokens_per_iteration, 4 * sc.model.seq);
    assert_eq!(r.train, None);
    assert_eq!(r.window, Window::whole(&tl));
    let v: serde_json::Value = serde_json::from_str(&json(&r)).unwrap();
    assert_eq!(v["plan"]["pp"], 2);
    assert_eq!(v["plan"]["schedule"], "1f1b");
    assert_eq!(v["train"], serde_json::Value::Null);
    assert_eq!(v["warnings"], serde_json::json!([]));
}

#[test]
fn train_cost_trains_whole_iterations_at_the_iteration_time() {
    let (mut sc, ..) = p2p_case();
    sc.world = 8;
    sc.train = venus_plan::plan::TrainSpec {
        tokens: Some(10_001),
        price: Some(venus_base::base::DollarsPerGpuHour(3.0)),
    };
    // 1000 tokens per iteration: 10,001 tokens are 10 whole iterations of 360 s, as
    // Megatron-LM's `train_samples // global_batch_size`.
    let t = TrainCost::of(&sc, Seconds(360.0), 1000).unwrap();
    assert_eq!(t.iterations, 10);
    assert_eq!(t.time, Seconds(3600.0));
    assert_eq!(t.gpu_hours, 8.0);
    assert!((t.cost.unwrap().0 - 24.0).abs() < 1e-9);
    sc.train.price = None;
    assert_eq!(TrainCost::of(&sc, Seconds(360.0), 1000).unwrap().cost, None);
    assert_eq!(TrainCost::of(&sc, Seconds(360.0), 0), None);
    sc.train.tokens = None;
    assert_eq!(TrainCost::of(&sc, Seconds(360.0), 1000), None);
}

#[test]
fn goodput_report_counts_the_interval_in_iterations_and_divides_the_time_to_train() {
    let (mut sc, ..) = p2p_case();
    sc.cluster.reliability = venus_plan::plan::ReliabilitySpec {
        gpu_mtbf: Some(Seconds(100.0 * 3600.0)),
        storage_write_bw: Some(BytesPerSec(1e9)),
        restart: Some(Seconds(300.0)),
        ..Default::default()
    };
    let train = TrainCost {
        time: Seconds(86_400.0),
        ..Default::default()
    };
    let g = GoodputReport::of(&sc, Seconds(10.0), Some(&train)).unwrap();
    assert_eq!(g.save_interval, (g.model.interval.0 / 10.0).round() as u64);
    let wall = g.wall_time_to_train.unwrap().0;
    assert!((wall - 86_400.0 / g.model.goodput.0).abs() < 1e-6, "{wall}");
    assert!(wall > 86_400.0);
    // An iteration longer than the interval still saves every iteration, not never.
    let slow = GoodputReport::of(&sc, Seconds(1e9), None).unwrap();
    assert_eq!((slow.save_interval, slow.wall_time_to_train), (1, None));
    // Without a storage bandwidth there is no goodput report.
    sc.cluster.reliability.storage_write_bw = None;
    assert_eq!(GoodputReport::of(&sc, Seconds(10.0), None), None);
}

#[test]
fn unnamed_memory_is_what_the_peak_holds_beyond_the_named_terms() {
    let m = StageMemoryRow {
        stage: 0,
        weights: Bytes(10),
        gradients: Bytes(20),
        optimizer: Bytes(30),
        activations: Bytes(40),
        peak: Bytes(105),
        graph_pool: Bytes(0),
        offloaded: Bytes(0),
    };
    let names: Vec<&str> = m.terms().iter().map(|(n, _)| *n).collect();
    assert_eq!(names, ["weights", "gradients", "optimizer", "activations"]);
    assert_eq!(m.unnamed(), Bytes(5));
    // A CUDA graph pool is a named term of its own; offloaded bytes are not in the peak.
    let g = StageMemoryRow {
        graph_pool: Bytes(5),
        offloaded: Bytes(1000),
        ..m
    };
    assert_eq!(g.terms().last(), Some(&("cuda graph pool", Bytes(5))));
    assert_eq!(g.unnamed(), Bytes(0));
    assert_eq!(
        StageMemoryRow {
            peak: Bytes(90),
            ..m
        }
        .unnamed(),
        Bytes(0)
    );
}

#[test]
fn html_has_a_row_per_stage_with_a_slice_per_node_and_renders_deterministically() {
    let (sc, trace, tl) = p2p_case();
    let r = Report::new(&sc, &trace, &tl, Window::whole(&tl), Seconds(0.5));
    let layout = Layout::for_scenario(&sc).unwrap();
    let input = html::HtmlInput {
        scenario: &sc,
        report: &r,
        trace: &trace,
        timeline: &tl,
        layout: &layout,
    };
    let page = html::html(&input);
    assert_eq!(page, html::html(&input));
    assert_eq!(page.matches("<g class=\"row\"").count(), 2);
    assert!(page.contains("<g class=\"row\" data-stage=\"0\" data-rank=\"0\">"));
    assert!(page.contains("<g class=\"row\" data-stage=\"1\" data-rank=\"1\">"));
    // F0 and send→pp1 on rank 0, recv←pp0 and B0 on rank 1: every node lasts.
    assert_eq!(page.matches("<rect class=\"s\"").count(), 4);
    assert!(page.contains("<title>F0 · 0.010 ms at 0.000 ms</title>"));
    for kind in ["F", "B", "send", "recv"] {
        assert!(page.contains(&format!("data-kind=\"{kind}\"")), "{kind}");
    }
    assert!(!page.contains("data-kind=\"W\""));
    // One bar per stage, the engine's wall time nowhere.
    assert_eq!(page.matches("<g class=\"bar\"").count(), 2);
    assert!(!page.contains("wall"));
}

#[test]
fn html_over_its_slice_budget_draws_each_lane_as_runs_of_the_dominant_kind() {
    let (sc, trace, tl) = tp_case();
    let r = Report::new(&sc, &trace, &tl, Window::whole(&tl), Seconds(0.0));
    let layout = Layout::for_scenario(&sc).unwrap();
    let input = html::HtmlInput {
        scenario: &sc,
        report: &r,
        trace: &trace,
        timeline: &tl,
        layout: &layout,
    };
    // 8 nodes on the stage's rank 0 (2 computes and 2 all-reduces), over a budget of 1.
    let page = html::page(&input, 1);
    assert_eq!(page.matches("<g class=\"row\"").count(), 1);
    assert!(page.contains("4 slices, drawn as the kind that covers most of each 1/4000"));
    // Compute lane: F then B; comm lane: the two all-reduces, apart.
    let runs: Vec<&str> = page
        .split("<title>")
        .filter(|t| t.starts_with("mostly "))
        .filter_map(|t| t.split(" · ").next())
        .collect();
    assert_eq!(
        runs,
        ["mostly F", "mostly B", "mostly tp-comm", "mostly tp-comm"]
    );
}

#[test]
fn the_summary_fragment_is_the_pages_summary_inside_a_scoped_div() {
    let (sc, trace, tl) = p2p_case();
    let r = Report::new(&sc, &trace, &tl, Window::whole(&tl), Seconds(0.5));
    let layout = Layout::for_scenario(&sc).unwrap();
    let page = html::html(&html::HtmlInput {
        scenario: &sc,
        report: &r,
        trace: &trace,
        timeline: &tl,
        layout: &layout,
    });
    let fragment = html::summary_html(&sc, &r);
    assert!(fragment.starts_with("<div class=\"venusc-report\">\n<style>\n"));
    assert!(fragment.ends_with("</div>\n</div>\n"));
    // The heading and both tables, byte for byte as the page has them.
    let start = fragment.find("<h1>").unwrap();
    let body = &fragment[start..fragment.len() - "</div>\n".len()];
    assert!(page.contains(body), "{body}");
    assert_eq!(body.matches("<table id=").count(), 2);
    // No timeline, script or page-level element.
    for absent in ["<svg", "<script", "<body", "<html"] {
        assert!(!fragment.contains(absent), "{absent}");
    }
}

// ------------------------------------------------------------------ attribution

/// pp 2 × dp 2: stage 0 (ranks 0, 1) all-gathers its parameters (100,000 B), computes a 10 us
/// forward and sends 100,000 B to its stage 1 peer (ranks 2, 3), which receives it and runs a
/// 5 us backward.
fn gather_case() -> (Scenario, Trace, Timeline) {
    let sc = scenario(&small(4, 1, 2, 4));
    let mut b = TraceBuilder::new(4);
    let g = b.group(&[RankId(0), RankId(1)]);
    for rank in [0u32, 1] {
        let r = b.rank(RankId(rank));
        let ag = r.push(
            NodeKind::Collective {
                kind: CollectiveKind::AllGather,
                group: g,
                bytes: Bytes(100_000),
            },
            StreamId::COMM,
            Category::ParamsAllGather,
            Label::None,
            &[],
        );
        let f = r.push(
            NodeKind::Compute {
                duration: Ps(10 * US),
            },
            StreamId::COMPUTE,
            Category::ForwardCompute,
            Label::Forward {
                microbatch: 0,
                chunk: None,
            },
            &[ag],
        );
        r.push(
            NodeKind::Send {
                peer: RankId(rank + 2),
                bytes: Bytes(100_000),
                tag: 0,
            },
            StreamId(2),
            Category::Send,
            Label::SendTo { pp: 1 },
            &[f],
        );
    }
    for rank in [2u32, 3] {
        let r = b.rank(RankId(rank));
        let rv = r.push(
            NodeKind::Recv {
                peer: RankId(rank - 2),
                bytes: Bytes(100_000),
                tag: 0,
            },
            StreamId::COMM,
            Category::Recv,
            Label::RecvFrom { pp: 0 },
            &[],
        );
        r.push(
            NodeKind::Compute {
                duration: Ps(5 * US),
            },
            StreamId::COMPUTE,
            Category::BackwardCompute,
            Label::Backward {
                microbatch: 0,
                chunk: None,
            },
            &[rv],
        );
    }
    let trace = b.finish().unwrap();
    let tl = run(&sc, &trace);
    (sc, trace, tl)
}

#[test]
fn a_forward_delayed_by_its_parameter_gather_charges_the_next_stage_wait_to_dp() {
    let (sc, trace, tl) = gather_case();
    let (_, gather_end) = tl.span(0, NodeId(0)).unwrap();
    let gather = gather_end.0;
    assert!(gather > 0, "the all-gather takes time");
    let times = attribution::breakdowns(&trace, &tl, Window::whole(&tl));
    let dp = CommKind::Dp as usize;
    let pp = CommKind::Pp as usize;
    // Stage 1 waits for the gather (DP), the forward (bubble), the transfer (1 us, PP).
    for t in &times[2..] {
        assert_eq!(t.exposed[dp], gather);
        assert_eq!(t.bubble, 10 * US);
        assert_eq!(t.exposed[pp], US);
        assert_eq!(t.compute, 5 * US);
        assert_eq!(t.other, 0);
    }
    // Stage 0 waits for its own gather, then for the send and stage 1's backward.
    for t in &times[..2] {
        assert_eq!(t.exposed[dp], gather);
        assert_eq!(t.exposed[pp], US);
        assert_eq!(t.bubble, 5 * US);
    }
    let len = Window::whole(&tl).len().0;
    assert!(times.iter().all(|t| t.total() == len));
    let r = Report::new(&sc, &trace, &tl, Window::whole(&tl), Seconds(0.0));
    assert!(close(r.breakdown.total().0, r.iteration_time.0));
}

#[test]
fn breakdowns_tile_the_window_of_a_pipeline_with_p2p_and_tp_traffic() {
    let sc = scenario(&small(8, 2, 4, 8));
    let trace = Pipeline {
        stages: 4,
        tp: 2,
        microbatches: 8,
        layers: 2,
        forward: Ps(1000 * US),
        backward: Ps(2000 * US),
        p2p_bytes: Bytes(10_000_000),
        tp_bytes: Bytes(10_000_000),
        symmetric: false,
    }
    .build()
    .unwrap();
    let tl = run(&sc, &trace);
    let w = Window::whole(&tl);
    let times = attribution::breakdowns(&trace, &tl, w);
    assert_eq!(times.len(), 8);
    for t in &times {
        assert_eq!(t.total(), w.len().0, "{t:?}");
        assert!(t.exposed[CommKind::Pp as usize] > 0, "{t:?}");
    }
}

/// pp 2, tied embeddings: both stages run a TP collective on a group of their own first (as a
/// TP group would), then stage 0 computes 10 us before the embedding all-reduce that joins it
/// to stage 1, which posts the all-reduce at once and computes 1 us after it. Stage 1's wait
/// follows the member posted last: the all-reduce itself from stage 0's posting is exposed
/// embedding, stage 0's compute before it is pipeline bubble, and stage 0's TP collective
/// before that is exposed TP. Only the embedding group's instances are indexed; the other
/// groups' collectives must not shift their numbering.
#[test]
fn an_embedding_all_reduce_charges_the_wait_for_the_member_posted_last_along_its_chain() {
    let sc = scenario(&small(2, 1, 2, 2));
    let mut b = TraceBuilder::new(2);
    let tp0 = b.group(&[RankId(0)]);
    let tp1 = b.group(&[RankId(1)]);
    let emb = b.group(&[RankId(0), RankId(1)]);
    let tied = |bytes| NodeKind::Collective {
        kind: CollectiveKind::AllReduce,
        group: emb,
        bytes: Bytes(bytes),
    };
    for (rank, tp, work) in [(0u32, tp0, 10 * US), (1, tp1, 0)] {
        let r = b.rank(RankId(rank));
        let mut prev = r.push(
            NodeKind::Collective {
                kind: CollectiveKind::AllReduce,
                group: tp,
                bytes: Bytes(1_000_000),
            },
            StreamId::COMPUTE,
            Category::TpComm,
            Label::None,
            &[],
        );
        if work > 0 {
            prev = r.push(
                NodeKind::Compute { duration: Ps(work) },
                StreamId::COMPUTE,
                Category::BackwardCompute,
                Label::Backward {
                    microbatch: 0,
                    chunk: None,
                },
                &[prev],
            );
        }
        let ar = r.push(
            tied(4_000_000),
            StreamId::COMPUTE,
            Category::EmbeddingSync,
            Label::None,
            &[prev],
        );
        if rank == 1 {
            r.push(
                NodeKind::Compute { duration: Ps(US) },
                StreamId::COMPUTE,
                Category::Optimizer,
                Label::None,
                &[ar],
            );
        }
    }
    let trace = b.finish().unwrap();
    let tl = run(&sc, &trace);
    let (_, tp_end) = tl.span(0, NodeId(0)).unwrap();
    let (posted, ar_end) = tl.span(0, NodeId(2)).unwrap();
    assert_eq!(posted.0, tp_end.0 + 10 * US);
    let times = attribution::breakdowns(&trace, &tl, Window::whole(&tl));
    let last = times[1];
    assert_eq!(last.compute, US);
    assert_eq!(
        last.exposed[CommKind::Embedding as usize],
        ar_end.0 - posted.0
    );
    assert_eq!(last.bubble, 10 * US);
    assert_eq!(last.exposed[CommKind::Tp as usize], tp_end.0);
    assert_eq!(last.other, 0);
    assert_eq!(last.total(), Window::whole(&tl).len().0);
}
