#!/usr/bin/env python3
"""Golden op orders of ZBV, the zero-bubble V schedule.

The order comes from the reference implementation's own scheduling code, the greedy
`PipelineGraph.try_v_schedule` and `PipelineGraph.create_schedule` in
sail-sg/zero-bubble-pipeline-parallelism, main at commit
39f2c186a27580b7051eb51e0f651e1efd0a8170,
megatron/core/pipeline_parallel/zerobubble/scheduler/zbv.py:32-304 (Qi et al., "Pipeline
Parallelism with Controllable Memory", NeurIPS 2024; the repository is under Megatron-LM's
BSD-3-Clause license). `try_v_schedule` and the order part of `create_schedule` below are
those functions line for line; only the debugging strings (`stage_str`, `print`) are left
out, since they change no decision.

Inputs (what venusc passes, the reference runtime's own first schedule): the runtime builds
its schedule before its timers have measured anything with f = b = w = 1000 and c = 1
(runtime.py:1343-1351, `update_schedule(scheduler, f=[1000], b=[1000], w=[1000], c=1, ...)`),
and the V scheduler takes its memory figures from the model shape whatever it is handed
(runtime.py:1336-1338, 1550-1557): f_mem = 34·h + 5·a·s, w_mem = −32·h,
b_mem = −f_mem − w_mem, and `max_mem=None`, which `PipelineGraph` turns into 2·pp·f_mem.
The golden plans are Llama-2-7B (h 4096, a 32, s 4096), the model of zero_bubble.venus.

Output: the text form of `venusc compile --emit schedule`, one line per pipeline rank,
`pp0: F0.0 F1.0 ... B0.1 W0.1 ...` (`F`/`B`/`W` microbatch.chunk). Chunk 0 is the first arm
of the V (virtual stage r on rank r), chunk 1 the second (virtual stage 2·pp − 1 − r); the
reference's B and W count their chunk in backward order, so its chunk c is the model chunk
1 − c (zbv.py:284-285 `config.max_chunks - 1 - _chunk_`).

Usage (no dependencies, runs offline):
    python3 tests/golden/schedule/zbv.py            # rewrite the golden files
    python3 tests/golden/schedule/zbv.py 4 8        # print pp 4, 8 microbatches
"""

import os
import sys
from collections import deque

# runtime.py:1343-1346: the costs of the schedule the runtime starts with.
F_COST, B_COST, W_COST, C_COST = 1000, 1000, 1000, 1
# Llama-2-7B: hidden size, attention heads, sequence length.
HIDDEN, HEADS, SEQ = 4096, 32, 4096


class PipelineGraph(object):
    """zbv.py:6-30, 32-239 and 276-304 (the order part of `create_schedule`)."""

    def __init__(self, n_stage, n_micro, f_cost, b_cost, w_cost, c_cost,
                 f_mem, b_mem, w_mem, max_mem=None):
        self.n_node = 6 * n_stage * n_micro
        self.n_stage = n_stage
        self.n_micro = n_micro
        self.f_cost = f_cost
        self.b_cost = b_cost
        self.w_cost = w_cost
        self.c_cost = c_cost
        self.f_mem = f_mem
        self.b_mem = b_mem
        self.w_mem = w_mem
        self.fbw_cost = [f_cost, b_cost, w_cost]
        self.fbw_mem = [f_mem, b_mem, w_mem]
        self.max_mem = max_mem or f_mem * self.n_stage * 2

    def get_id(self, cat, chunk, stage, micro):
        return cat * 2 * self.n_stage * self.n_micro + \
            chunk * self.n_stage * self.n_micro + \
            stage * self.n_micro + \
            micro

    def try_v_schedule(self, fill_f=True, fill_b=True, approved_bubble=None):
        count = []
        for i in range(self.n_stage):
            count.append([0] * 6)

        end_time = [-1] * self.n_node
        cur_time = [0] * self.n_stage
        mem = [0] * self.n_stage
        stage_bubble = [0] * self.n_stage
        pending_w = [deque() for _ in range(self.n_stage)]
        schedule = [[] for _ in range(self.n_stage)]

        if approved_bubble is None:
            approved_bubble = [-1] * self.n_stage
        max_approved_bubble = max(approved_bubble)

        def get_max_stage_bubble(stage=-1):
            max_stage_bubble = 0
            for bb in stage_bubble:
                max_stage_bubble = max(max_stage_bubble, bb)
            if stage >= 0:
                max_stage_bubble = max(max_stage_bubble, max_approved_bubble - approved_bubble[stage])
            return max_stage_bubble

        def put_w(stage):
            assert len(pending_w[stage]) > 0
            _, chunk_, _ = pending_w[stage].popleft()
            put(2, chunk_, stage)

        def put(cat, chunk, stage, assert_cnt=True):
            _tmp = _no_bubble = cur_time[stage] + self.fbw_cost[cat]
            _cnt = count[stage][cat * 2 + chunk]
            if _cnt >= self.n_micro:
                if not assert_cnt:
                    cur_time[stage] = _tmp
                    return
                assert False
            assert mem[stage] + self.fbw_mem[cat] <= self.max_mem
            if cat > 0 or chunk > 0:
                last_id = cat * 2 + chunk - 1
                if cat < 2:
                    assert end_time[self.get_id(last_id // 2, last_id % 2, stage, _cnt)] >= 0
                else:
                    assert end_time[self.get_id(1, chunk, stage, _cnt)] >= 0
            if chunk == 1 and cat < 2:
                if stage < self.n_stage - 1:
                    _fa_id = self.get_id(cat, chunk, stage + 1, _cnt)
                    assert end_time[_fa_id] >= 0
                    _tmp = max(_tmp, end_time[_fa_id] + self.c_cost + self.fbw_cost[cat])
            if chunk == 0 and cat < 2:
                if stage > 0:
                    _fa_id = self.get_id(cat, chunk, stage - 1, _cnt)
                    assert end_time[_fa_id] >= 0, f"{cat}, {chunk}, {stage}, {_cnt}"
                    _tmp = max(_tmp, end_time[_fa_id] + self.c_cost + self.fbw_cost[cat])
            _id = self.get_id(cat, chunk, stage, _cnt)
            if count[stage][0] > 0:
                stage_bubble[stage] += _tmp - _no_bubble
            end_time[_id] = _tmp
            cur_time[stage] = _tmp
            mem[stage] += self.fbw_mem[cat]
            schedule[stage].append((cat, chunk, _cnt))
            if cat == 1:
                pending_w[stage].append((2, chunk, _cnt))
            count[stage][cat * 2 + chunk] += 1

        for i in range(self.n_stage):
            put(0, 0, i)
        for i in range(self.n_stage - 1, -1, -1):
            if i == self.n_stage - 1:
                put(0, 1, i)
                continue
            tmp = end_time[self.get_id(0, 1, i + 1, 0)] + self.c_cost
            while mem[i] + self.fbw_mem[0] * (2 + i * 2) <= self.max_mem and cur_time[i] + self.fbw_cost[0] <= tmp and count[i][0] < self.n_micro:
                for j in range(i + 1):
                    put(0, 0, j)
            put(0, 1, i)
        iter_chunk_ = 0
        end_tmp = 0
        for i in range(self.n_stage):
            if i == 0:
                end_tmp = cur_time[0] + self.fbw_cost[1]
                continue
            tmp = end_tmp + self.c_cost
            while count[i][0] + count[i][1] < count[i - 1][0] + count[i - 1][1] or count[i][1] <= count[i - 1][1] < self.n_micro:
                for j in range(self.n_stage - 1, i - 1, -1):
                    if count[j][iter_chunk_] < self.n_micro:
                        put(0, iter_chunk_, j)
                iter_chunk_ = 1 - iter_chunk_

        for _ in range(2 * self.n_micro):
            # check mem before putting b
            for i in range(self.n_stage):
                while mem[i] + self.fbw_mem[1] > self.max_mem:
                    assert len(pending_w[i]) > 0
                    put_w(i)
            b0_ranks, b1_ranks = [], []
            for i in range(self.n_stage):
                if count[i][3] >= count[i][2]:
                    b0_ranks.append(i)
                elif i == self.n_stage - 1:
                    b1_ranks.append(i)
                else:
                    fa_id = self.get_id(1, 1, i + 1, count[i][3])
                    if end_time[fa_id] >= 0 or count[i][2] >= self.n_micro:
                        b1_ranks.append(i)
                    else:
                        b0_ranks.append(i)
            b_ranks = []
            # put b1
            for i in reversed(b1_ranks):
                b_ranks.append((i, 1))
            # put b0
            for i in b0_ranks:
                b_ranks.append((i, 0))
            for i, _chunk_ in b_ranks:
                fa_id = -1
                if _chunk_ == 1 and i < self.n_stage - 1:
                    fa_id = self.get_id(1, 1, i + 1, count[i][3])
                if _chunk_ == 0 and i > 0:
                    fa_id = self.get_id(1, 0, i - 1, count[i][2])
                while len(pending_w[i]) > 0 and fa_id >= 0 and end_time[fa_id] + self.c_cost >= cur_time[i] + self.fbw_cost[2]:
                    # fill the bubble
                    put_w(i)
                if len(pending_w[i]) > 0 and end_time[fa_id] + self.c_cost - cur_time[i] > get_max_stage_bubble(i) - stage_bubble[i]:
                    if _chunk_ == 1:
                        put_w(i)
                    elif fill_b:
                        put_w(i)
                put(1, _chunk_, i)

            # put f
            for i in range(self.n_stage):
                if count[i][1] >= self.n_micro:
                    continue
                put_item = None
                if count[i][1] >= count[i][0]:
                    put_item = 0
                elif i == self.n_stage - 1:
                    put_item = 1
                else:
                    if end_time[self.get_id(0, 1, i + 1, count[i][1])] >= 0:
                        put_item = 1
                    elif count[i][0] < self.n_micro:
                        if i == 0:
                            put_item = 0
                        elif end_time[self.get_id(0, 0, i - 1, count[i][0])] >= 0:
                            put_item = 0
                if put_item is None:
                    continue
                # check mem before putting f
                while mem[i] + self.fbw_mem[0] > self.max_mem:
                    assert len(pending_w[i]) > 0
                    put_w(i)
                fa_id = -1
                if put_item == 0 and i > 0:
                    fa_id = self.get_id(0, 0, i - 1, count[i][0])
                if put_item == 1 and i < self.n_stage - 1:
                    fa_id = self.get_id(0, 1, i + 1, count[i][1])
                while len(pending_w[i]) > 0 and fa_id >= 0 and end_time[fa_id] + self.c_cost >= cur_time[i] + self.fbw_cost[2]:
                    # fill the bubble
                    put_w(i)
                if len(pending_w[i]) > 0 and end_time[fa_id] + self.c_cost - cur_time[i] > get_max_stage_bubble(i) - stage_bubble[i]:
                    if fill_f:
                        put_w(i)
                put(0, put_item, i)

        for i in range(self.n_stage):
            while len(pending_w[i]) > 0:
                put_w(i)

        max_bubble = get_max_stage_bubble()
        if max_approved_bubble < 0 or max_bubble < max_approved_bubble:
            _schedule, _end_time, _max_bubble = self.try_v_schedule(
                fill_f=fill_f, fill_b=fill_b,
                approved_bubble=stage_bubble,
            )
            if _max_bubble < max_bubble:
                return _schedule, _end_time, _max_bubble
        return schedule, end_time, max_bubble

    def create_schedule(self):
        """zbv.py:276-304 without the `ScheduledNode` wrapping: (cat, model chunk, micro)."""
        schedule, end_time, max_bubble = None, None, None
        for fill_b in [True, False]:
            for fill_f in [True, False]:
                _schedule, _end_time, _max_bubble = self.try_v_schedule(
                    fill_b=fill_b, fill_f=fill_f
                )
                if max_bubble is None or _max_bubble < max_bubble:
                    max_bubble = _max_bubble
                    schedule = _schedule
                    end_time = _end_time
        local_order = [[] for _ in range(self.n_stage)]
        for stage in range(self.n_stage):
            for _cat_, _chunk_, _micro_ in schedule[stage]:
                chunk = _chunk_ if _cat_ == 0 else 2 - 1 - _chunk_
                local_order[stage].append((_cat_, chunk, _micro_))
        return local_order


def emit_schedule(p, n):
    """The `--emit schedule` text of ZBV on p ranks with n microbatches."""
    f_mem = 34 * HIDDEN + 5 * HEADS * SEQ  # runtime.py:1336
    w_mem = -32 * HIDDEN  # runtime.py:1337
    b_mem = -f_mem - w_mem  # runtime.py:1338
    graph = PipelineGraph(p, n, F_COST, B_COST, W_COST, C_COST,
                          f_mem=f_mem, b_mem=b_mem, w_mem=w_mem, max_mem=None)
    lines = []
    for rank, order in enumerate(graph.create_schedule()):
        ops = ["%s%d.%d" % ("FBW"[cat], micro, chunk) for cat, chunk, micro in order]
        assert len(ops) == 6 * n, "rank %d runs %d ops, not %d" % (rank, len(ops), 6 * n)
        lines.append("pp%d: %s\n" % (rank, " ".join(ops)))
    return "".join(lines)


# (name, pp, m): one golden file `NAME_ppPP_mM.txt` each.
GOLDEN = [
    ("zbv", 4, 8),
    ("zbv", 4, 16),
    ("zbv", 8, 8),
    ("zbv", 8, 16),
]


def main(argv):
    if len(argv) == 3:
        sys.stdout.write(emit_schedule(int(argv[1]), int(argv[2])))
        return
    here = os.path.dirname(os.path.abspath(__file__))
    for name, p, n in GOLDEN:
        path = os.path.join(here, "%s_pp%d_m%d.txt" % (name, p, n))
        with open(path, "w") as f:
            f.write(emit_schedule(p, n))


if __name__ == "__main__":
    main(sys.argv)
