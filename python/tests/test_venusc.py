# Tests of the Python package: check, simulate and sweep the repository's examples, the figures
# against the CLI's JSON (`venusc sim --format json`, `venusc sweep --format json`), the
# exceptions on bad input, the importers, and that the GIL is released while Rust works.
#
# The CLI binary is `$VENUSC_BIN`, else the repository's `target/release/venusc`, else
# `target/debug/venusc`; without one the comparisons are skipped, except under CI (`CI` set),
# where they fail.
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import threading
import time
from typing import Any, Iterator, List, Tuple

import pytest

import venusc

REPO = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
# The simulated examples: every pipeline schedule kind, a MoE model, a rack-scale cluster.
SIM_EXAMPLES = [
    "venussim_demo.venus",
    "sc21_gpt_1_7b.venus",
    "sc21_gpt_18_4b.venus",
    "mixtral_8x7b_moe.venus",
    "gb200_nvl72_512.venus",
]
# Fields that measure the simulator's own wall-clock time, not the simulated run.
WALL_CLOCK = {("engine", "wall_ms")}


def cli() -> pathlib.Path:
    candidates = [os.environ.get("VENUSC_BIN", "")]
    candidates += [str(REPO / "target" / p / "venusc") for p in ("release", "debug")]
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return pathlib.Path(c)
    if os.environ.get("CI"):
        pytest.fail("no venusc binary: build it with `cargo build --release` or set VENUSC_BIN")
    pytest.skip("no venusc binary to compare with (cargo build --release)")


def run_cli(*args: str) -> Tuple[int, str, str]:
    p = subprocess.run([str(cli()), *args], capture_output=True, text=True, cwd=REPO)
    return p.returncode, p.stdout, p.stderr


def numbers(value: Any, path: Tuple[str, ...] = ()) -> Iterator[Tuple[Tuple[str, ...], Any]]:
    """Every number of a JSON value (not bools) with its path."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from numbers(v, path + (str(k),))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from numbers(v, path + (str(i),))
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield path, value


@pytest.mark.parametrize("example", SIM_EXAMPLES)
def test_every_number_of_a_report_equals_the_cli_json(example: str) -> None:
    path = str(EXAMPLES / example)
    code, out, err = run_cli("sim", path, "--format", "json")
    assert code == 0, err
    want = dict(numbers(json.loads(out)))
    got = dict(numbers(venusc.simulate(path).to_dict()))
    for key in WALL_CLOCK:
        assert key in got, key
        want.pop(key, None)
        got.pop(key, None)
    assert len(got) > 40
    assert got.keys() == want.keys()
    for key, value in want.items():
        assert got[key] == value and type(got[key]) is type(value), (key, got[key], value)


def test_the_demo_iteration_time_is_the_cli_figure() -> None:
    code, out, _ = run_cli("sim", "examples/venussim_demo.venus", "--format", "json")
    assert code == 0
    report = venusc.simulate(str(EXAMPLES / "venussim_demo.venus"))
    assert report.iteration_time_ms == json.loads(out)["iteration_time_ms"]
    assert 1000.0 < report.iteration_time_ms < 1200.0
    assert report.world_size == 16 and report.scenario == "venussim_demo"


def test_a_deterministic_report_is_the_cli_json_document_itself() -> None:
    path = str(EXAMPLES / "sc21_gpt_1_7b.venus")
    _, out, _ = run_cli("sim", path, "--format", "json", "--deterministic", "--iterations", "2")
    report = venusc.simulate(path, iterations=2, deterministic=True)
    assert report.to_dict() == json.loads(out)
    assert report.engine["wall_ms"] == 0


def test_the_report_fields_are_the_json_fields() -> None:
    report = venusc.simulate(str(EXAMPLES / "venussim_demo.venus"))
    d = report.to_dict()
    for name in ("iteration_time_ms", "mfu", "tokens_per_second", "bubble_fraction", "plan"):
        assert getattr(report, name) == d[name]
    assert report.peak_memory_bytes == max(m["peak_bytes"] for m in d["memory"])
    assert len(report.memory) == d["plan"]["pp"] == 8
    # to_dict is a copy: changing it leaves the report as it was.
    d["mfu"] = -1.0
    assert report.mfu != -1.0


def test_text_and_path_give_the_same_report() -> None:
    path = EXAMPLES / "venussim_demo.venus"
    from_path = venusc.simulate(path, deterministic=True)
    from_text = venusc.simulate(path.read_text(), deterministic=True)
    # A file's implicit scenario is named after the file; text's after its label.
    assert (from_path.scenario, from_text.scenario) == ("venussim_demo", "<string>")
    assert {**from_text.to_dict(), "scenario": "venussim_demo"} == from_path.to_dict()


def test_a_use_resolves_next_to_the_file(tmp_path: pathlib.Path) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "model.venus").write_text(
        "model small < hidden 1024 ffn 4096 layers 4 heads 8 vocab 32000 seq 1024 >\n"
    )
    main = tmp_path / "main.venus"
    main.write_text(
        'use "lib/model.venus"\nmodel m : small < >\ncluster c : dgx_h100 < nodes 1 >\n'
        "plan < tp 2 dp 4 micro_batch 1 global_batch 8 >\n"
    )
    report = venusc.simulate(main)
    assert report.world_size == 8
    assert report.plan["tp"] == 2 and report.plan["dp"] == 4
    # The same text from elsewhere cannot find `lib/model.venus`.
    with pytest.raises(venusc.VenuscError) as e:
        venusc.simulate(main.read_text())
    assert any(d.code == "E0104" or d.code == "E0107" for d in e.value.diagnostics), e.value


def test_check_of_an_invalid_example_gives_the_clis_diagnostic() -> None:
    path = EXAMPLES / "invalid" / "e0301_world_size.venus"
    diagnostics = venusc.check(path)
    code, out, _ = run_cli("check", str(path), "--format", "json")
    assert code == 1
    want = json.loads(out)["diagnostics"]
    assert [d.code for d in diagnostics] == [w["code"] for w in want]
    first = diagnostics[0]
    assert first.code == "E0301" and first.is_error
    assert (first.line, first.column) == (want[0]["line"], want[0]["column"])
    assert first.help and first.help == want[0]["help"]
    assert first.file is not None and first.file.endswith("e0301_world_size.venus")


def test_check_of_the_examples_finds_no_error() -> None:
    for path in sorted(EXAMPLES.glob("*.venus")):
        assert not [d for d in venusc.check(path) if d.is_error], path


def test_check_of_a_sweep_file_checks_it_as_sweep_does() -> None:
    assert venusc.check(EXAMPLES / "sweeps" / "llama3_70b.venus") == []


def test_bad_text_raises_with_located_diagnostics() -> None:
    text = "model m < hidden 4096 layers 2 heads 32 vocab 1000 seq 128 >\nplan < tp 3 >\n"
    with pytest.raises(venusc.VenuscError) as e:
        venusc.simulate(text)
    errors = e.value.errors
    assert errors, e.value.diagnostics
    assert all(d.code and d.code.startswith("E") for d in errors)
    assert all(d.file == "<string>" and d.line is not None and d.line >= 1 for d in errors)
    assert errors[0].code in str(e.value)


def test_a_syntax_error_has_its_line_and_column() -> None:
    with pytest.raises(venusc.VenuscError) as e:
        venusc.simulate("model m <\n  hidden = 4\n>\n")
    syntax = [d for d in e.value.errors if d.code == "E0001"]
    assert [(d.line, d.column) for d in syntax] == [(2, 10)]
    assert syntax[0].help


def test_an_unknown_scenario_is_e0108() -> None:
    with pytest.raises(venusc.VenuscError) as e:
        venusc.simulate(EXAMPLES / "venussim_demo.venus", scenario="nope")
    assert [d.code for d in e.value.errors] == ["E0108"]


def test_a_missing_file_is_a_file_error_not_text() -> None:
    with pytest.raises(FileNotFoundError):
        venusc.simulate("examples/no_such_file.venus")
    with pytest.raises(venusc.VenuscError) as e:
        venusc.simulate(pathlib.Path("no_such_dir/x.venus"))
    d = e.value.diagnostics[0]
    assert d.code is not None and d.code.startswith("E07") and d.line is None and d.help


def test_iterations_below_one_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        venusc.simulate(EXAMPLES / "venussim_demo.venus", iterations=0)


def test_all_ranks_simulates_every_rank() -> None:
    path = EXAMPLES / "venussim_demo.venus"
    one = venusc.simulate(path)
    every = venusc.simulate(path, all_ranks=True)
    assert every.engine["simulated_ranks"] == 16
    assert one.engine["simulated_ranks"] < 16
    assert every.iteration_time_ms == one.iteration_time_ms


def test_the_html_summary_is_the_report_pages() -> None:
    report = venusc.simulate(EXAMPLES / "venussim_demo.venus")
    html = report._repr_html_()
    assert html.startswith('<div class="venusc-report">')
    assert "<code>venussim_demo</code>" in html
    assert html.count("<table id=") == 2
    assert "<script" not in html


def sweep_cli(path: str, *args: str) -> Tuple[dict[str, Any], float]:
    started = time.perf_counter()
    code, out, err = run_cli("sweep", path, "--format", "json", *args)
    elapsed = time.perf_counter() - started
    assert code == 0, err
    return json.loads(out), elapsed


def test_a_sweep_equals_the_cli_sweep_and_takes_about_its_time() -> None:
    path = str(EXAMPLES / "sweeps" / "llama3_70b.venus")
    want, cli_s = sweep_cli(path)
    started = time.perf_counter()
    got = venusc.sweep(path)
    py_s = time.perf_counter() - started
    assert got.to_dict() == want
    assert [r.to_dict() for r in got] == want["results"]
    assert got.candidates == want["candidates"] > len(got) > 10
    assert sum(got.pruned.values()) == got.candidates - len(got)
    times = [r.iteration_time_ms for r in got]
    assert times == sorted(times)
    # Reported, not asserted: the shared machine's load varies.
    print(f"\nsweep of {got.candidates} candidates: CLI {cli_s:.2f} s, Python {py_s:.2f} s "
          f"({venusc._venusc.threads()} threads)", file=sys.stderr)


def test_a_sweep_with_an_objective_and_headroom_equals_the_cli() -> None:
    path = str(EXAMPLES / "sweeps" / "llama3_70b.venus")
    want, _ = sweep_cli(path, "--objective", "mfu", "--headroom", "10%")
    got = venusc.sweep(path, objective="mfu", headroom="10%")
    assert got.to_dict() == want
    assert venusc.sweep(path, objective="mfu", headroom=0.1).to_dict() == want
    mfus = [r.mfu for r in got]
    assert mfus == sorted(mfus, reverse=True)


def test_a_pruned_sweep_equals_the_cli_prune_and_the_exhaustive_top_k() -> None:
    path = str(EXAMPLES / "sweeps" / "llama3_70b.venus")
    want, _ = sweep_cli(path, "--prune", "--top", "5")
    got = venusc.sweep(path, prune=5)
    assert got.to_dict() == want
    assert got.kept == 5 and len(got) == 5
    assert sum(got.pruned.values()) == got.candidates - len(got)
    whole = venusc.sweep(path)
    assert [r.to_dict() for r in got] == [r.to_dict() for r in whole][:5]
    with pytest.raises(ValueError, match="prune"):
        venusc.sweep(path, prune=0)


def test_bad_sweep_options_raise() -> None:
    path = EXAMPLES / "sweeps" / "llama3_70b.venus"
    with pytest.raises(venusc.VenuscError, match="not an objective"):
        venusc.sweep(path, objective="speed")
    with pytest.raises(ValueError, match="headroom"):
        venusc.sweep(path, headroom="120%")
    with pytest.raises(ValueError, match="auto"):
        venusc.sweep(path, allow_cross_node_tp=True)


def test_to_pandas_has_a_row_per_result_and_a_column_per_plan_field() -> None:
    pandas = pytest.importorskip("pandas") if not os.environ.get("CI") else __import__("pandas")
    results = venusc.sweep(EXAMPLES / "sweeps" / "llama3_70b.venus")
    frame = results.to_pandas()
    assert isinstance(frame, pandas.DataFrame)
    assert len(frame) == len(results)
    for column in ("candidate", "tp", "pp", "iteration_time_ms", "peak_memory_bytes"):
        assert column in frame.columns
    assert frame["iteration_time_ms"].tolist() == [r.iteration_time_ms for r in results]


def test_to_pandas_without_pandas_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    results = venusc.sweep(EXAMPLES / "sweeps" / "llama3_70b.venus")
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="pip install pandas"):
        results.to_pandas()


MEGATRON = (
    "--num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32 "
    "--group-query-attention --num-query-groups 8 --seq-length 4096 --max-position-embeddings "
    "4096 --swiglu --micro-batch-size 1 --global-batch-size 128 --tensor-model-parallel-size 2 "
    "--pipeline-model-parallel-size 2 --bf16 --vocab-size 128256"
)


def test_import_megatron_of_a_string_and_of_a_list_agree_and_simulate() -> None:
    from_text = venusc.import_megatron(MEGATRON, name="llama", gpus=16)
    from_list = venusc.import_megatron(MEGATRON.split(), name="llama", gpus=16)
    assert from_text == from_list
    assert "scenario llama" in from_text.venus or "llama" in from_text.venus
    # No cluster given: W0013 says which one was assumed.
    assert any(d.code == "W0013" for d in from_text.warnings)
    report = venusc.simulate(from_text.venus)
    assert report.world_size == 16
    assert (report.plan["tp"], report.plan["pp"], report.plan["dp"]) == (2, 2, 4)


def test_import_megatron_of_a_bad_flag_value_raises_with_its_column() -> None:
    with pytest.raises(venusc.VenuscError) as e:
        venusc.import_megatron("--num-layers many --hidden-size 4096", gpus=8)
    d = e.value.errors[0]
    assert d.code is not None and d.line == 1 and d.column is not None and d.help


HF = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 2048,
    "intermediate_size": 8192,
    "num_hidden_layers": 16,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "max_position_embeddings": 8192,
    "hidden_act": "silu",
}


def test_import_hf_of_a_dict_and_of_its_file_agree(tmp_path: pathlib.Path) -> None:
    folder = tmp_path / "Llama-3.2-1B"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(HF))
    from_file = venusc.import_hf(folder / "config.json")
    from_dict = venusc.import_hf(HF, name="llama_3_2_1b")
    assert "model llama_3_2_1b" in from_file.venus
    assert "hidden 2048" in from_file.venus and "layers 16" in from_file.venus
    assert from_dict.venus.splitlines()[1:] == from_file.venus.splitlines()[1:]


def test_import_hf_of_a_config_that_is_not_one_raises() -> None:
    with pytest.raises(venusc.VenuscError) as e:
        venusc.import_hf({"model_type": "llama", "hidden_size": "wide"})
    assert e.value.errors[0].code in ("E0605", "E0607")


def test_another_python_thread_runs_while_a_simulation_runs() -> None:
    ticks: List[float] = []
    stop = threading.Event()

    def tick() -> None:
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    thread = threading.Thread(target=tick)
    thread.start()
    try:
        started = time.perf_counter()
        venusc.simulate(EXAMPLES / "gb200_nvl72_512.venus", iterations=3)
        ended = time.perf_counter()
    finally:
        stop.set()
        thread.join()
    inside = [t for t in ticks if started < t < ended]
    # Holding the GIL would leave the other thread no tick inside the call.
    print(f"\nsimulation {1e3 * (ended - started):.0f} ms, {len(inside)} ticks of the other "
          "thread during it", file=sys.stderr)
    assert ended - started > 0.02
    assert len(inside) >= 5
