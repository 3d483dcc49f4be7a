#!/usr/bin/env python3
"""Golden op orders of DualPipe and DualPipeV.

The order comes from the reference implementation's own step loop, `DualPipe.step` and
`DualPipeV.step` in deepseek-ai/DualPipe, commit 3da1bbea53606543d7f5f232338fc58096db30e3,
dualpipe/dualpipe.py:294-398 and dualpipe/dualpipev.py:288-396 (DeepSeek-V3 technical report
§3.2.1; MIT license). How it was derived: the classes below keep the reference's step loop
and its chunk-level methods (`_forward_chunk`, `_backward_chunk`, `_forward_backward_chunk`,
`_weight_chunk`) line for line, with the torch calls removed: a compute method records the op
and advances the same counters the reference keeps (`current_f_chunk_id`,
`current_b_chunk_id`), `WeightGradStore` is the reference's FIFO of deferred weight
gradients (dualpipe/utils.py:8-33), and the P2P methods (which only post transfers) are
dropped because they do not change the order.

Output: the text form of `venusc compile --emit schedule`, one line per pipeline rank,
`pp0: F0.0 F1.0 ... B0.1 W0.1 ...` (`F`/`B`/`W` microbatch.chunk). Chunk 0 is the phase-0
module of ranks in the first half (DualPipe: the forward direction, microbatches
0..m/2; DualPipeV: the first arm of the V), chunk 1 the other one (DualPipe: the reverse
direction, numbered m/2..m; DualPipeV: the second arm, every microbatch). `B` is the input
gradient when a `W` of the same microbatch follows (`enable_zb=True`), else the whole
backward.

Valid counts (the reference's asserts): DualPipe needs an even pp and an even microbatch
count of at least 2·pp (dualpipe.py:332-333), DualPipeV at least 2·pp microbatches
(dualpipev.py:318). So the golden set has pp 4 with 8 and 16 and pp 8 with 16 microbatches;
pp 8 with 8 microbatches is below the asserted count (venusc rejects it with E0329).

Usage (no dependencies, runs offline):
    python3 tests/golden/schedule/dualpipe.py                  # rewrite the golden files
    python3 tests/golden/schedule/dualpipe.py dualpipe 4 8     # print one schedule
"""

import os
import sys
from collections import deque


class Rank:
    """One rank's step loop; `v_shape` selects dualpipev.py over dualpipe.py."""

    def __init__(self, v_shape, rank, num_ranks, num_chunks):
        self.v_shape = v_shape
        self.rank = rank
        self.num_ranks = num_ranks
        self.num_chunks = num_chunks
        self.is_first_rank = rank == 0
        self.is_last_rank = rank == num_ranks - 1
        # dualpipe.py:44-45; DualPipeV has no second half and its middle rank is the last.
        self.is_in_second_half = (not v_shape) and rank >= num_ranks // 2
        if v_shape:
            self.is_middle_rank = self.is_last_rank
        else:
            self.is_middle_rank = (rank == num_ranks // 2 - 1) or (rank == num_ranks // 2)
        self.current_f_chunk_id = [0, 0]
        self.current_b_chunk_id = [0, 0]
        self.funcs_queue = deque()  # WeightGradStore.funcs_queue
        self.ops = []

    def phase_of(self, phase):
        return phase ^ self.is_in_second_half

    def label(self, phase, chunk_id):
        mb = chunk_id
        if not self.v_shape and phase == 1:
            mb += self.num_chunks // 2
        return "%d.%d" % (mb, phase)

    def _forward_compute_chunk(self, phase):
        phase = self.phase_of(phase)
        chunk_id = self.current_f_chunk_id[phase]
        self.current_f_chunk_id[phase] += 1
        self.ops.append("F" + self.label(phase, chunk_id))

    def _backward_compute_chunk(self, phase, enable_zb=False):
        phase = self.phase_of(phase)
        chunk_id = self.current_b_chunk_id[phase]
        self.current_b_chunk_id[phase] += 1
        self.ops.append("B" + self.label(phase, chunk_id))
        if enable_zb:
            self.funcs_queue.append("W" + self.label(phase, chunk_id))

    def _forward_backward_compute_chunk(self, phase0, phase1):
        # overlapped_forward_backward: pre-forward, pre-backward, then both together.
        self._forward_compute_chunk(phase0)
        self._backward_compute_chunk(phase1)

    def _forward_chunk(self, phase, recv=True, send=True):
        self._forward_compute_chunk(phase)

    def _backward_chunk(self, phase, enable_zb=False, recv=True, send=True):
        self._backward_compute_chunk(phase, enable_zb)

    def _forward_backward_chunk(self, phase0, phase1, recv0=True):
        self._forward_backward_compute_chunk(phase0, phase1)

    def _weight_chunk(self):
        # "Assume FIFO"
        self.ops.append(self.funcs_queue.popleft())

    def _recv_forward(self, phase):
        pass

    def _send_forward(self, phase):
        pass

    def _send_backward(self, phase):
        pass

    def step(self):
        """dualpipe.py:330-396 / dualpipev.py:316-394, the loop itself unchanged."""
        rank = self.rank
        num_ranks = self.num_ranks
        num_chunks = self.num_chunks
        if self.v_shape:
            assert num_chunks > 0 and num_chunks >= num_ranks * 2
            # DualPipeV's loop is DualPipe's with num_half_ranks = num_ranks, half_rank =
            # rank and half_num_chunks = num_chunks (dualpipev.py:331-353).
            num_half_ranks, half_rank, half_num_chunks = num_ranks, rank, num_chunks
            main_steps = num_chunks - num_ranks * 2 + rank + 1
        else:
            assert num_ranks % 2 == 0
            assert num_chunks > 0 and num_chunks % 2 == 0 and num_chunks >= num_ranks * 2
            num_half_ranks = num_ranks // 2
            half_rank = min(rank, num_ranks - 1 - rank)
            half_num_chunks = num_chunks // 2
            main_steps = half_num_chunks - num_ranks + half_rank + 1

        # Step 1: nF0
        step_1 = (num_half_ranks - half_rank - 1) * 2
        for i in range(step_1):
            self._forward_chunk(0)

        # Step 2: nF0F1
        step_2 = half_rank + 1
        self._recv_forward(0)
        for i in range(step_2):
            if self.v_shape:
                self._forward_chunk(0, recv=False, send=False)
            else:
                self._forward_chunk(0, recv=False, send=self.is_middle_rank)
            self._recv_forward(0)
            self._forward_chunk(1, send=(not self.is_middle_rank) or (i < step_2 - 1))
            if self.v_shape or not self.is_middle_rank:
                self._send_forward(0)

        # Step 3: nB1W1F1 (Use zero bubble)
        step_3 = num_half_ranks - half_rank - 1
        for i in range(step_3):
            self._backward_chunk(1, enable_zb=True)
            self._recv_forward(1)
            self._weight_chunk()
            self._forward_chunk(1, recv=False)

        # Step 4 (Main step): nF0B1F1B0
        step_4 = main_steps
        for i in range(step_4):
            if i == 0:
                if self.is_middle_rank:
                    # NOTE: We don't overlap these two chunks to further reduce bubble size.
                    self._forward_chunk(0, recv=False, send=False)
                    self._send_forward(1)
                    self._backward_chunk(1, send=False)
                    self._send_forward(0)
                    self._send_backward(1)
                else:
                    self._forward_backward_chunk(0, 1, recv0=False)
            else:
                self._forward_backward_chunk(0, 1)
            self._forward_backward_chunk(1, 0)

        # Step 5: nB1F1B0
        step_5 = num_half_ranks - half_rank - 1
        for i in range(step_5):
            self._backward_chunk(1)
            self._forward_backward_chunk(1, 0)

        # Step 6: nB1B0 (The second half of the chunks use zero bubble)
        step_6 = half_rank + 1
        enable_zb = False
        for i in range(step_6):
            if i == step_6 // 2 and half_rank % 2 == 1:
                enable_zb = True
            self._backward_chunk(1, enable_zb=enable_zb)
            if i == step_6 // 2 and half_rank % 2 == 0:
                enable_zb = True
            self._backward_chunk(0, enable_zb=enable_zb)

        # Step 7: nWB0 (Use zero bubble)
        step_7 = num_half_ranks - half_rank - 1
        for i in range(step_7):
            self._weight_chunk()
            self._backward_chunk(0, enable_zb=True)

        # Step 8: nW
        step_8 = half_rank + 1
        for i in range(step_8):
            self._weight_chunk()
        assert not self.funcs_queue
        return self.ops


def emit_schedule(name, p, n):
    """The `--emit schedule` text of one schedule."""
    v_shape = name == "dualpipev"
    lines = []
    for rank in range(p):
        ops = Rank(v_shape, rank, p, n).step()
        forwards = sum(1 for op in ops if op[0] == "F")
        assert forwards == (2 * n if v_shape else n), "rank %d runs %d forwards" % (rank, forwards)
        lines.append("pp%d: %s\n" % (rank, " ".join(ops)))
    return "".join(lines)


# The golden set: pp 4 and 8 with 8 and 16 microbatches where the reference accepts them.
GOLDEN = [
    ("dualpipe", 4, 8),
    ("dualpipe", 4, 16),
    ("dualpipe", 8, 16),
    ("dualpipev", 4, 8),
    ("dualpipev", 4, 16),
    ("dualpipev", 8, 16),
]


def main(argv):
    if len(argv) == 4:
        sys.stdout.write(emit_schedule(argv[1], int(argv[2]), int(argv[3])))
        return
    here = os.path.dirname(os.path.abspath(__file__))
    for name, p, n in GOLDEN:
        path = os.path.join(here, "%s_pp%d_m%d.txt" % (name, p, n))
        with open(path, "w") as f:
            f.write(emit_schedule(name, p, n))


if __name__ == "__main__":
    main(sys.argv)
