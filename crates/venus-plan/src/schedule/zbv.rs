//! ZBV, the zero-bubble V schedule: the greedy, cost-driven scheduler of
//! sail-sg/zero-bubble-pipeline-parallelism (main at 39f2c186a275),
//! megatron/core/pipeline_parallel/zerobubble/scheduler/zbv.py:32-304 `PipelineGraph`,
//! transcribed decision for decision (Qi et al., "Pipeline Parallelism with Controllable
//! Memory", NeurIPS 2024).
//!
//! Input: pp, the microbatch count and the memory figures of the model ([`VMemory`]). Output:
//! each rank's compute order, `(pass, model chunk, microbatch)`, as `create_schedule` hands it
//! to the runtime (zbv.py:276-304).
//!
//! The costs are the reference runtime's own first schedule: before its timers have measured
//! anything it plans with f = b = w = 1000 and c = 1 (runtime.py:1343-1351
//! `update_schedule(scheduler, f=[1000], b=[1000], w=[1000], c=1, ...)`; the V scheduler takes
//! `max(c, 1)` and the median over stages, runtime.py:1313, 1401-1403). The runtime re-plans
//! with measured costs after `--zero-bubble-pipeline-timers-end-iter` (110) iterations; venusc
//! keeps the starting plan, so that the order is a function of the shape alone and the golden
//! files are the reference's own output (tests/golden/schedule/zbv.py).
//!
//! Invariants: every comparison and sum is integer arithmetic, as in the reference with its
//! integer costs; memory sums are `i128`, so no model figure can overflow them. Where the
//! reference would fail an `assert` the scheduler returns `None` instead of panicking (no
//! shape venusc accepts reaches one: the property tests build pp 2..12 with every m up to
//! 3·pp + 1).

use std::collections::VecDeque;

/// zbv.py's `fbw_cost` of the runtime's starting schedule (runtime.py:1343-1346).
const COST: [i64; 3] = [1000, 1000, 1000];
/// zbv.py's `c_cost`: `max(c, 1)` of the starting `c=1` (runtime.py:1313, 1346).
const COMM: i64 = 1;
/// `try_v_schedule` calls itself while its bubble shrinks (zbv.py:240-246); the reference
/// stops after at most three levels on every shape tried (pp 2..64), Python's own recursion
/// limit (1000) bounds it there, and the same bound applies here.
const MAX_LEVELS: usize = 1000;

/// The memory figures the V scheduler weighs, per microbatch and chunk in the reference's
/// units (bytes per token and layer, runtime.py:1336-1338): a forward holds `forward`
/// (34·h + 5·a·s), its B frees all but `weight` (32·h, the inputs of the linear layers that W
/// reads), its W frees `weight`. The memory limit is 2·pp forwards (`max_mem=None`,
/// zbv.py:22).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct VMemory {
    pub forward: u64,
    pub weight: u64,
}

impl VMemory {
    /// runtime.py:1336-1338: `f_mem_approx = 34 * hidden_size + 5 * num_attention_heads *
    /// seq_length`, `w_mem_approx = - 32 * hidden_size`.
    pub fn of_model(hidden: u64, heads: u64, seq: u64) -> VMemory {
        let hidden = hidden.max(1);
        VMemory {
            forward: hidden
                .saturating_mul(34)
                .saturating_add(heads.saturating_mul(seq).saturating_mul(5)),
            weight: hidden.saturating_mul(32),
        }
    }

    /// The figures of a shape built without a model (closed-form helpers, tests): a W
    /// holds nothing past its B, the limit of a model whose attention activations (5·a·s)
    /// dwarf its hidden size. Every scenario passes its own model's figures.
    pub const NO_MODEL: VMemory = VMemory {
        forward: 1,
        weight: 0,
    };

    /// `fbw_mem`: what F, B and W add.
    fn deltas(self) -> [i128; 3] {
        let f = i128::from(self.forward.max(1));
        let w = i128::from(self.weight.min(self.forward.max(1)));
        [f, -f + w, -w]
    }
}

/// One compute op of the V: pass 0 = F, 1 = B, 2 = W; `chunk` is the model chunk (0: the
/// first arm, virtual stage r; 1: the second, virtual stage 2·pp − 1 − r).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct VOp {
    pub pass: u8,
    pub chunk: u8,
    pub mb: u32,
}

/// `create_schedule` (zbv.py:257-304): the best of the four fill settings (the first one with
/// the least bubble), with the reference's backward chunk numbering turned into model chunks
/// (`config.max_chunks - 1 - _chunk_` for B and W).
pub fn order(pp: u32, m: u32, memory: VMemory) -> Option<Vec<Vec<VOp>>> {
    let graph = Graph::new(pp, m, memory);
    let mut best: Option<Attempt> = None;
    for fill_b in [true, false] {
        for fill_f in [true, false] {
            let a = graph.v_schedule(fill_f, fill_b)?;
            if best.as_ref().is_none_or(|b| a.max_bubble < b.max_bubble) {
                best = Some(a);
            }
        }
    }
    let best = best?;
    Some(
        best.schedule
            .into_iter()
            .map(|ops| {
                ops.into_iter()
                    .map(|(cat, chunk, mb)| VOp {
                        pass: cat,
                        chunk: if cat == 0 { chunk } else { 1 - chunk },
                        mb,
                    })
                    .collect()
            })
            .collect(),
    )
}

/// One try's result: per stage `(cat, graph chunk, micro)`, and its largest stage bubble.
struct Attempt {
    schedule: Vec<Vec<(u8, u8, u32)>>,
    stage_bubble: Vec<i64>,
    max_bubble: i64,
}

/// `PipelineGraph`'s fixed inputs (zbv.py:6-30).
struct Graph {
    n_stage: usize,
    n_micro: usize,
    mem: [i128; 3],
    max_mem: i128,
}

impl Graph {
    fn new(pp: u32, m: u32, memory: VMemory) -> Graph {
        let mem = memory.deltas();
        Graph {
            n_stage: pp.max(1) as usize,
            n_micro: m.max(1) as usize,
            mem,
            // zbv.py:22 `max_mem or f_mem * self.n_stage * 2`
            max_mem: mem[0] * 2 * i128::from(pp.max(1)),
        }
    }

    /// zbv.py:24-28 `get_id`.
    fn id(&self, cat: usize, chunk: usize, stage: usize, micro: usize) -> usize {
        ((cat * 2 + chunk) * self.n_stage + stage) * self.n_micro + micro
    }

    /// `try_v_schedule` with its self-call unrolled: the first try, then again with the
    /// previous try's stage bubbles approved while that lowers the largest bubble (the
    /// recursion returns the last try that improved, zbv.py:240-246).
    fn v_schedule(&self, fill_f: bool, fill_b: bool) -> Option<Attempt> {
        let mut best = self.try_once(fill_f, fill_b, None)?;
        for _ in 0..MAX_LEVELS {
            let next = self.try_once(fill_f, fill_b, Some(&best.stage_bubble))?;
            if next.max_bubble < best.max_bubble {
                best = next;
            } else {
                break;
            }
        }
        Some(best)
    }

    /// zbv.py:32-239, one pass of `try_v_schedule`.
    fn try_once(&self, fill_f: bool, fill_b: bool, approved: Option<&[i64]>) -> Option<Attempt> {
        let mut s = State::new(self, fill_f, fill_b, approved);
        s.warmup()?;
        s.steady()?;
        for i in 0..self.n_stage {
            while !s.pending_w[i].is_empty() {
                s.put_w(i)?;
            }
        }
        let max_bubble = s.max_stage_bubble(None);
        Some(Attempt {
            schedule: s.schedule,
            stage_bubble: s.stage_bubble,
            max_bubble,
        })
    }
}

/// The local variables of one `try_v_schedule` pass.
struct State<'g> {
    g: &'g Graph,
    fill_f: bool,
    fill_b: bool,
    count: Vec<[usize; 6]>,
    end_time: Vec<i64>,
    cur_time: Vec<i64>,
    mem: Vec<i128>,
    stage_bubble: Vec<i64>,
    pending_w: Vec<VecDeque<u8>>,
    schedule: Vec<Vec<(u8, u8, u32)>>,
    approved: Vec<i64>,
    max_approved: i64,
}

impl<'g> State<'g> {
    fn new(g: &'g Graph, fill_f: bool, fill_b: bool, approved: Option<&[i64]>) -> State<'g> {
        let n = g.n_stage;
        let approved = approved.map_or_else(|| vec![-1; n], <[i64]>::to_vec);
        let max_approved = approved.iter().copied().max().unwrap_or(-1);
        State {
            g,
            fill_f,
            fill_b,
            count: vec![[0; 6]; n],
            end_time: vec![-1; 6 * n * g.n_micro],
            cur_time: vec![0; n],
            mem: vec![0; n],
            stage_bubble: vec![0; n],
            pending_w: vec![VecDeque::new(); n],
            schedule: vec![Vec::new(); n],
            approved,
            max_approved,
        }
    }

    /// zbv.py:49-55 `get_max_stage_bubble`.
    fn max_stage_bubble(&self, stage: Option<usize>) -> i64 {
        let mut b = self.stage_bubble.iter().copied().fold(0, i64::max);
        if let Some(st) = stage {
            b = b.max(self.max_approved - self.approved[st]);
        }
        b
    }

    fn end(&self, cat: usize, chunk: usize, stage: usize, micro: usize) -> i64 {
        if micro >= self.g.n_micro {
            return -1;
        }
        self.end_time[self.g.id(cat, chunk, stage, micro)]
    }

    /// zbv.py:57-60 `put_w`.
    fn put_w(&mut self, stage: usize) -> Option<()> {
        let chunk = self.pending_w[stage].pop_front()?;
        self.put(2, usize::from(chunk), stage)
    }

    /// zbv.py:62-103 `put` (with `assert_cnt=True`, the only way the live code calls it).
    fn put(&mut self, cat: usize, chunk: usize, stage: usize) -> Option<()> {
        let g = self.g;
        let cost = COST[cat];
        let no_bubble = self.cur_time[stage] + cost;
        let mut tmp = no_bubble;
        let cnt = self.count[stage][cat * 2 + chunk];
        if cnt >= g.n_micro || self.mem[stage] + g.mem[cat] > g.max_mem {
            return None;
        }
        if cat > 0 || chunk > 0 {
            let last = cat * 2 + chunk - 1;
            let before = if cat < 2 {
                self.end(last / 2, last % 2, stage, cnt)
            } else {
                self.end(1, chunk, stage, cnt)
            };
            if before < 0 {
                return None;
            }
        }
        if cat < 2 {
            // Chunk 1 of F and B takes its input from the next stage, chunk 0 from the
            // previous one (the V's arms).
            let peer = match chunk {
                1 if stage + 1 < g.n_stage => Some(stage + 1),
                0 if stage > 0 => Some(stage - 1),
                _ => None,
            };
            if let Some(p) = peer {
                let e = self.end(cat, chunk, p, cnt);
                if e < 0 {
                    return None;
                }
                tmp = tmp.max(e + COMM + cost);
            }
        }
        if self.count[stage][0] > 0 {
            self.stage_bubble[stage] += tmp - no_bubble;
        }
        let id = g.id(cat, chunk, stage, cnt);
        self.end_time[id] = tmp;
        self.cur_time[stage] = tmp;
        self.mem[stage] += g.mem[cat];
        let micro = u32::try_from(cnt).unwrap_or(u32::MAX);
        self.schedule[stage].push((cat as u8, chunk as u8, micro));
        if cat == 1 {
            self.pending_w[stage].push_back(chunk as u8);
        }
        self.count[stage][cat * 2 + chunk] += 1;
        Some(())
    }

    /// zbv.py:122-158: the first forwards of chunk 0 down the V, then chunk 1 back up while
    /// memory and the first chunk-1 forward allow, then the alternating fill of each stage.
    fn warmup(&mut self) -> Option<()> {
        let (n, g) = (self.g.n_stage, self.g);
        for i in 0..n {
            self.put(0, 0, i)?;
        }
        for i in (0..n).rev() {
            if i == n - 1 {
                self.put(0, 1, i)?;
                continue;
            }
            let tmp = self.end(0, 1, i + 1, 0) + COMM;
            let reserve = g.mem[0] * (2 + 2 * i as i128);
            while self.mem[i] + reserve <= g.max_mem
                && self.cur_time[i] + COST[0] <= tmp
                && self.count[i][0] < g.n_micro
            {
                for j in 0..=i {
                    self.put(0, 0, j)?;
                }
            }
            self.put(0, 1, i)?;
        }
        let mut iter_chunk = 0usize;
        for i in 1..n {
            loop {
                let (here, before) = (self.count[i], self.count[i - 1]);
                let behind = here[0] + here[1] < before[0] + before[1];
                let chunk_1_behind = here[1] <= before[1] && before[1] < g.n_micro;
                if !(behind || chunk_1_behind) {
                    break;
                }
                for j in (i..n).rev() {
                    if self.count[j][iter_chunk] < g.n_micro {
                        self.put(0, iter_chunk, j)?;
                    }
                }
                iter_chunk = 1 - iter_chunk;
            }
        }
        Some(())
    }

    /// zbv.py:163-234: 2·m rounds of one B per stage (chunk 1 where its input is ready)
    /// and one F per stage, each preceded by the W that fill the wait or that memory forces.
    fn steady(&mut self) -> Option<()> {
        let (n, g) = (self.g.n_stage, self.g);
        for _ in 0..2 * g.n_micro {
            for i in 0..n {
                while self.mem[i] + g.mem[1] > g.max_mem {
                    self.put_w(i)?;
                }
            }
            for (i, chunk) in self.b_order() {
                let fa = match chunk {
                    1 if i < n - 1 => Some(self.end(1, 1, i + 1, self.count[i][3])),
                    0 if i > 0 => Some(self.end(1, 0, i - 1, self.count[i][2])),
                    _ => None,
                };
                self.fill_bubble(i, fa)?;
                if self.wait_exceeds_bubble(i, fa) && (chunk == 1 || self.fill_b) {
                    self.put_w(i)?;
                }
                self.put(1, chunk, i)?;
            }
            for i in 0..n {
                let Some(item) = self.next_forward(i) else {
                    continue;
                };
                while self.mem[i] + g.mem[0] > g.max_mem {
                    self.put_w(i)?;
                }
                let fa = match item {
                    0 if i > 0 => Some(self.end(0, 0, i - 1, self.count[i][0])),
                    1 if i < n - 1 => Some(self.end(0, 1, i + 1, self.count[i][1])),
                    _ => None,
                };
                self.fill_bubble(i, fa)?;
                if self.wait_exceeds_bubble(i, fa) && self.fill_f {
                    self.put_w(i)?;
                }
                self.put(0, item, i)?;
            }
        }
        Some(())
    }

    /// zbv.py:168-186: stages whose chunk-1 backward can run, last stage first, then the
    /// others' chunk-0 backward in stage order.
    fn b_order(&self) -> Vec<(usize, usize)> {
        let (n, g) = (self.g.n_stage, self.g);
        let (mut b0, mut b1) = (Vec::new(), Vec::new());
        for i in 0..n {
            let c = self.count[i];
            if c[3] >= c[2] {
                b0.push(i);
            } else if i == n - 1 || self.end(1, 1, i + 1, c[3]) >= 0 || c[2] >= g.n_micro {
                b1.push(i);
            } else {
                b0.push(i);
            }
        }
        b1.iter()
            .rev()
            .map(|&i| (i, 1))
            .chain(b0.iter().map(|&i| (i, 0)))
            .collect()
    }

    /// zbv.py:204-221: the forward a stage runs this round, if any.
    fn next_forward(&self, i: usize) -> Option<usize> {
        let (n, g) = (self.g.n_stage, self.g);
        let c = self.count[i];
        if c[1] >= g.n_micro {
            return None;
        }
        if c[1] >= c[0] {
            return Some(0);
        }
        if i == n - 1 || self.end(0, 1, i + 1, c[1]) >= 0 {
            return Some(1);
        }
        if c[0] < g.n_micro && (i == 0 || self.end(0, 0, i - 1, c[0]) >= 0) {
            return Some(0);
        }
        None
    }

    /// zbv.py:192-194, 226-228 "fill the bubble": W while the input arrives no sooner.
    /// `fa` is the end time of the op the next one waits on (`None`: `fa_id = -1`).
    fn fill_bubble(&mut self, i: usize, fa: Option<i64>) -> Option<()> {
        let Some(e) = fa else {
            return Some(());
        };
        while !self.pending_w[i].is_empty() && e + COMM >= self.cur_time[i] + COST[2] {
            self.put_w(i)?;
        }
        Some(())
    }

    /// zbv.py:195, 229: the wait for the input exceeds what this stage may still idle.
    /// `fa_id = -1` reads `end_time[-1]` in the reference: the last node's end time (the
    /// chunk-1 W of the last microbatch on the last stage).
    fn wait_exceeds_bubble(&self, i: usize, fa: Option<i64>) -> bool {
        if self.pending_w[i].is_empty() {
            return false;
        }
        let e = fa.unwrap_or_else(|| self.end_time.last().copied().unwrap_or(-1));
        e + COMM - self.cur_time[i] > self.max_stage_bubble(Some(i)) - self.stage_bubble[i]
    }
}
