#!/usr/bin/env python3
"""Golden op orders of the zero-bubble hand schedules ZB-H1 and ZB-H2.

The order comes from the reference implementation's own scheduling function,
`get_hand_schedule` in sail-sg/zero-bubble-pipeline-parallelism, branch `arxiv`,
commit f68d38794764d7d937f4942dca3a1e9a07544898,
megatron/core/pipeline_parallel/efficiency.py:110-124 (Qi et al., "Zero Bubble Pipeline
Parallelism", ICLR 2024; the repository is under Megatron-LM's BSD-3-Clause license).
`stage_orders` below is that function's first loop, line for line; the function goes on to
time the order (not needed for the order itself).

Output: the text form of `venusc compile --emit schedule`, one line per pipeline rank,
`pp0: F0 F1 B0 W0 ...` (F forward, B input gradient, W weight gradient, each numbered by
microbatch: F, B and W each run their microbatches in increasing order, as the reference's
counters fc, bc and `i - fc - bc` number them).

Usage (no dependencies, runs offline):
    python3 tests/golden/schedule/zero_bubble.py            # rewrite the golden files
    python3 tests/golden/schedule/zero_bubble.py 1 4 8      # print ZB-H1, pp 4, 8 microbatches
"""

import os
import sys


def stage_orders(_p, _n, warmup_c):
    """efficiency.py:110-124. 0 = F, 1 = B, 2 = W.

    The reference asserts `_n >= 2 * _p` here (line 111), a bound of the timing model that
    follows; the order below is well formed for _n >= max(_p, (_p - 1) * warmup_c), and the
    golden files of pp 8 with 8 microbatches (ZB-H1) are generated without the assert.
    """
    stage = [[] for _ in range(_p)]
    for rank in range(_p):
        warmup = (_p - rank - 1) * warmup_c
        for _ in range(warmup):
            stage[rank].append(0)
        for i in range(_n):
            if warmup + i < _n:
                stage[rank].append(0)
            stage[rank].append(1)
            if warmup + i >= (_p - 1) * warmup_c:
                stage[rank].append(2)
        for _ in range((_p - 1) * warmup_c - warmup):
            stage[rank].append(2)
    return stage


def emit_schedule(p, n, warmup_c):
    """The `--emit schedule` text of one schedule."""
    labels = ["F", "B", "W"]
    lines = []
    for rank, order in enumerate(stage_orders(p, n, warmup_c)):
        count = [0, 0, 0]
        ops = []
        for kind in order:
            ops.append("%s%d" % (labels[kind], count[kind]))
            count[kind] += 1
        assert count == [n, n, n], "rank %d runs %s, not %d of each" % (rank, count, n)
        lines.append("pp%d: %s\n" % (rank, " ".join(ops)))
    return "".join(lines)


# The golden set: ZB-H1 (warmup_c 1) and ZB-H2 (warmup_c 2) for pp 4 and 8 with 8 and 16
# microbatches. ZB-H2 on pp 8 needs 14 microbatches of warmup, so it has no 8-microbatch file
# (venusc rejects that plan with E0327).
GOLDEN = [
    ("zb_h1", 1, 4, 8),
    ("zb_h1", 1, 4, 16),
    ("zb_h1", 1, 8, 8),
    ("zb_h1", 1, 8, 16),
    ("zb_h2", 2, 4, 8),
    ("zb_h2", 2, 4, 16),
    ("zb_h2", 2, 8, 16),
]


def main(argv):
    if len(argv) == 4:
        c, p, n = (int(x) for x in argv[1:])
        sys.stdout.write(emit_schedule(p, n, c))
        return
    here = os.path.dirname(os.path.abspath(__file__))
    for name, c, p, n in GOLDEN:
        path = os.path.join(here, "%s_pp%d_m%d.txt" % (name, p, n))
        with open(path, "w") as f:
            f.write(emit_schedule(p, n, c))


if __name__ == "__main__":
    main(sys.argv)
