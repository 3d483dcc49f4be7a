# Plan a training run from Python, notebook style: each `# %%` cell runs on its own in Jupyter
# or VS Code, and the whole file runs as a script (`python examples/python/plan.py`).
# Needs `pip install ./python pandas`.

# %% Simulate one plan: the figures are `venusc sim --format json`'s.
import pathlib

import venusc

EXAMPLES = pathlib.Path(__file__).resolve().parents[1]
report = venusc.simulate(EXAMPLES / "venussim_demo.venus")
print(f"{report.scenario}: {report.iteration_time_ms:.1f} ms an iteration, "
      f"MFU {100 * report.mfu:.1f}%, peak {report.peak_memory_bytes / 2**30:.1f} GiB")

# %% A small sweep: the lists of the file's plan, ranked by tokens per second per GPU, each
# plan leaving 10% of the GPU's memory free.
results = venusc.sweep(EXAMPLES / "sweeps" / "llama3_70b.venus", objective="throughput",
                       headroom="10%")
print(f"{len(results)} of {results.candidates} candidate plans fit; pruned: {results.pruned}")

# %% The ranking as a DataFrame.
import pandas

pandas.set_option("display.width", 200)
frame = results.to_pandas()
columns = ["tp", "pp", "vpp", "dp", "micro_batch", "recompute", "sp", "iteration_time_ms",
           "tokens_per_second_per_gpu", "mfu", "peak_memory_bytes"]
top = frame[columns].head(10).copy()
top["peak_gib"] = (top.pop("peak_memory_bytes") / 2**30).round(1)
print(top.to_string(index=False))

# %% The best plan.
best = results[0]
print(f"best: candidate {best.candidate}, tp {best.plan['tp']} pp {best.plan['pp']}, "
      f"{best.iteration_time_ms:.1f} ms")
