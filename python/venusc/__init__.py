"""venusc from Python: check, simulate and sweep `.venus` scenarios, import Megatron-LM flags
and HuggingFace configs, without a subprocess.

Every function takes a path or the text of a `.venus` file: a `str` naming an existing file
(or any `os.PathLike`) is read as a file, its `use`s resolved next to it with the CLI's project
root rules; any other `str` is the text itself (its `use`s resolved in the working directory).
The figures are the CLI's: a `Report` is `venusc sim --format json` parsed, and a sweep's
`Result`s are `venusc sweep --format json`'s. Bad input raises `VenuscError`, which carries the
diagnostics (code, message, line, column, help). The work runs without the GIL, so other
Python threads go on while a simulation or a sweep runs.
"""

from __future__ import annotations

import copy
import importlib
import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _venusc

__all__ = [
    "Diagnostic",
    "Imported",
    "Report",
    "Result",
    "Sweep",
    "VenuscError",
    "check",
    "import_hf",
    "import_megatron",
    "simulate",
    "sweep",
    "__version__",
]

__version__: str = _venusc.VERSION

PathOrText = Union[str, "os.PathLike[str]"]

_RawDiagnostic = Tuple[
    str, Optional[str], str, Optional[str], Optional[int], Optional[int], Optional[str]
]


@dataclass(frozen=True)
class Diagnostic:
    """One diagnostic, as `venusc check --format json` reports it (DIAGNOSTICS.md).

    `code` is `None` only for a note without a code (an importer's assumption); `file`,
    `line` and `column` (1-based) are `None` for a problem with no place in a source (a file
    that cannot be read)."""

    severity: str
    code: Optional[str]
    message: str
    file: Optional[str] = None
    line: Optional[int] = None
    column: Optional[int] = None
    help: Optional[str] = None

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    def __str__(self) -> str:
        place = ""
        if self.file is not None:
            place = self.file
            if self.line is not None:
                place += f":{self.line}:{self.column}"
            place += ": "
        code = f"[{self.code}]" if self.code else ""
        text = f"{place}{self.severity}{code}: {self.message}"
        if self.help:
            text += f"\n  = help: {self.help}"
        return text

    @staticmethod
    def _from_raw(raw: _RawDiagnostic) -> Diagnostic:
        return Diagnostic(*raw)

    @staticmethod
    def _from_json(d: Mapping[str, Any]) -> Diagnostic:
        return Diagnostic(
            severity=str(d["severity"]),
            code=d.get("code"),
            message=str(d["message"]),
            file=d.get("file"),
            line=d.get("line"),
            column=d.get("column"),
            help=d.get("help"),
        )


class VenuscError(Exception):
    """The input could not be checked, simulated, swept or imported. `diagnostics` holds every
    diagnostic of the attempt (warnings too); `message` the first error's text."""

    def __init__(self, message: str, diagnostics: Sequence[Diagnostic] = ()) -> None:
        self.message = message
        self.diagnostics: List[Diagnostic] = list(diagnostics)
        super().__init__(self._text())

    def _text(self) -> str:
        shown = [d for d in self.diagnostics if d.is_error] or self.diagnostics
        if not shown:
            return self.message
        return "\n".join(str(d) for d in shown)

    @property
    def errors(self) -> List[Diagnostic]:
        return [d for d in self.diagnostics if d.is_error]


def _raise_for(
    payload: Optional[str], raw: Sequence[_RawDiagnostic], error: Optional[str]
) -> Tuple[str, List[Diagnostic]]:
    """The payload and the diagnostics of an answer of `_venusc`, or `VenuscError`."""
    diagnostics = [Diagnostic._from_raw(r) for r in raw]
    if payload is None or error is not None:
        first = next((d.message for d in diagnostics if d.is_error), None)
        raise VenuscError(error or first or "failed", diagnostics)
    return payload, diagnostics


def _source(path_or_text: PathOrText) -> Tuple[str, bool]:
    """The text or path to give `_venusc`, and whether it is a path."""
    if not isinstance(path_or_text, str):
        return os.fspath(path_or_text), True
    if os.path.isfile(path_or_text):
        return path_or_text, True
    one_line = "\n" not in path_or_text
    if one_line and path_or_text.strip().endswith(".venus"):
        # A path with a typo would otherwise be parsed as text and fail in a puzzling way.
        raise FileNotFoundError(f"no file `{path_or_text}` (a path ending in `.venus`)")
    return path_or_text, False


def _root(root: Optional[PathOrText]) -> Optional[str]:
    return None if root is None else os.fspath(root)


@dataclass(frozen=True, repr=False)
class Report:
    """`venusc sim --format json` as an object: the fields are the JSON report's
    (docs/report.schema.json); `to_dict()` gives the JSON document itself."""

    scenario: str
    world_size: int
    iteration_time_ms: float
    flops_per_iteration: float
    tflops_per_gpu: float
    peak_tflops: float
    mfu: float
    tokens_per_second: float
    bubble_fraction: float
    parameters: Dict[str, int]
    phases: Dict[str, Dict[str, float]]
    exposed_communication: Dict[str, Dict[str, float]]
    memory: List[Dict[str, int]]
    memory_reserve_bytes: int
    engine: Dict[str, Any]
    plan: Dict[str, Any]
    tokens_per_iteration: int
    train: Optional[Dict[str, Any]]
    warnings: List[Diagnostic]
    expect_failures: List[Diagnostic] = field(default_factory=list)
    _json: Dict[str, Any] = field(default_factory=dict, compare=False)
    _html: str = field(default="", compare=False)

    @property
    def peak_memory_bytes(self) -> int:
        """The largest stage peak, without the memory reserve."""
        return max((m.get("peak_bytes", 0) for m in self.memory), default=0)

    def to_dict(self) -> Dict[str, Any]:
        """The JSON report `venusc sim --format json` prints, as Python values."""
        return copy.deepcopy(self._json)

    def _repr_html_(self) -> str:
        """The HTML report's summary (heading, summary and plan tables) for Jupyter."""
        return self._html

    def __repr__(self) -> str:
        return (
            f"Report(scenario={self.scenario!r}, world_size={self.world_size}, "
            f"iteration_time_ms={self.iteration_time_ms!r}, mfu={self.mfu!r}, "
            f"peak_memory_bytes={self.peak_memory_bytes})"
        )

    @staticmethod
    def _from_payload(payload: str, expect_failures: List[Diagnostic]) -> Report:
        document, _, html = payload.partition("\0")
        d: Dict[str, Any] = json.loads(document)
        return Report(
            scenario=d["scenario"],
            world_size=d["world_size"],
            iteration_time_ms=d["iteration_time_ms"],
            flops_per_iteration=d["flops_per_iteration"],
            tflops_per_gpu=d["tflops_per_gpu"],
            peak_tflops=d["peak_tflops"],
            mfu=d["mfu"],
            tokens_per_second=d["tokens_per_second"],
            bubble_fraction=d["bubble_fraction"],
            parameters=d["parameters"],
            phases=d["phases"],
            exposed_communication=d["exposed_communication"],
            memory=d["memory"],
            memory_reserve_bytes=d.get("memory_reserve_bytes", 0),
            engine=d["engine"],
            plan=d.get("plan", {}),
            tokens_per_iteration=d.get("tokens_per_iteration", 0),
            train=d.get("train"),
            warnings=[Diagnostic._from_json(w) for w in d.get("warnings", [])],
            expect_failures=expect_failures,
            _json=d,
            _html=html,
        )


@dataclass(frozen=True)
class Result:
    """One simulated plan of a sweep, as `venusc sweep --format json` lists it."""

    candidate: int
    plan: Dict[str, Any]
    iteration_time_ms: float
    tflops_per_gpu: float
    tokens_per_second_per_gpu: float
    mfu: float
    peak_memory_bytes: int
    # The memory kept back beside the peak: peak + reserve is what `venusc check` holds
    # against the GPU's memory.
    reserve_bytes: int = 0

    def to_dict(self) -> Dict[str, Any]:
        """The result's JSON object."""
        return {
            "candidate": self.candidate,
            "plan": dict(self.plan),
            "iteration_time_ms": self.iteration_time_ms,
            "tflops_per_gpu": self.tflops_per_gpu,
            "tokens_per_second_per_gpu": self.tokens_per_second_per_gpu,
            "mfu": self.mfu,
            "peak_memory_bytes": self.peak_memory_bytes,
            "reserve_bytes": self.reserve_bytes,
        }

    def row(self) -> Dict[str, Any]:
        """The result as one flat row: the candidate, every plan field, the figures."""
        row: Dict[str, Any] = {"candidate": self.candidate}
        row.update(self.plan)
        row.update(
            iteration_time_ms=self.iteration_time_ms,
            tflops_per_gpu=self.tflops_per_gpu,
            tokens_per_second_per_gpu=self.tokens_per_second_per_gpu,
            mfu=self.mfu,
            peak_memory_bytes=self.peak_memory_bytes,
        )
        return row

    @staticmethod
    def _from_json(d: Mapping[str, Any]) -> Result:
        return Result(
            candidate=d["candidate"],
            plan=dict(d["plan"]),
            iteration_time_ms=d["iteration_time_ms"],
            tflops_per_gpu=d["tflops_per_gpu"],
            tokens_per_second_per_gpu=d.get("tokens_per_second_per_gpu", 0.0),
            mfu=d.get("mfu", 0.0),
            peak_memory_bytes=d["peak_memory_bytes"],
            reserve_bytes=d.get("reserve_bytes", 0),
        )


class Sweep(List[Result]):
    """The simulated plans of a sweep, best first by `objective`, with what was pruned."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        super().__init__(Result._from_json(r) for r in document["results"])
        self.scenario: str = document["scenario"]
        self.world_size: int = document["world_size"]
        self.candidates: int = document["candidates"]
        self.pruned: Dict[str, int] = dict(document["pruned"])
        self.objective: str = document.get("objective", "time")
        self.headroom: float = document.get("headroom", 0.0)
        # `prune=K`: the K plans kept (the sweep's best K); `None`: every plan simulated.
        self.kept: Optional[int] = document.get("kept")
        self._json: Dict[str, Any] = dict(document)

    def to_dict(self) -> Dict[str, Any]:
        """The JSON document `venusc sweep --format json` prints."""
        return copy.deepcopy(self._json)

    def to_pandas(self) -> Any:
        """A `pandas.DataFrame`, one row per result (`Result.row()`), best first. Needs pandas
        (`pip install pandas`), imported only here."""
        try:
            # By name, so that type checking needs no pandas stubs.
            pandas = importlib.import_module("pandas")
        except ImportError as e:
            raise ImportError(
                "`Sweep.to_pandas()` needs pandas, which is not installed: "
                "`pip install pandas` (or `pip install 'venusc[pandas]'`)"
            ) from e
        return pandas.DataFrame([r.row() for r in self])


@dataclass(frozen=True)
class Imported:
    """An imported scenario: the `.venus` text and the importer's (and the check's) warnings."""

    venus: str
    warnings: List[Diagnostic]

    def __str__(self) -> str:
        return self.venus


def check(
    path_or_text: PathOrText,
    *,
    root: Optional[PathOrText] = None,
    allow_outside_root: bool = False,
) -> List[Diagnostic]:
    """`venusc check` of one file: its diagnostics, errors and warnings (an empty list when it
    is clean). Raises `VenuscError` only when the file cannot be read."""
    source, is_path = _source(path_or_text)
    answer = _venusc.check(source, is_path, _root(root), allow_outside_root)
    _, diagnostics = _raise_for(*answer)
    return diagnostics


def simulate(
    path_or_text: PathOrText,
    scenario: Optional[str] = None,
    *,
    iterations: Optional[int] = None,
    all_ranks: bool = False,
    deterministic: bool = False,
    root: Optional[PathOrText] = None,
    allow_outside_root: bool = False,
) -> Report:
    """`venusc sim --format json`: the report of the scenario (the file's only one, or
    `scenario`). The options are `sim`'s flags: `iterations` (the report is the last),
    `all_ranks`, `deterministic` (`engine.wall_ms` reported as 0), and the project `root`
    rules. A missed `expect` bound is in `Report.expect_failures`; errors raise
    `VenuscError`."""
    if iterations is not None and iterations < 1:
        raise ValueError("`iterations` must be at least 1")
    source, is_path = _source(path_or_text)
    answer = _venusc.simulate(
        source,
        is_path,
        scenario,
        iterations,
        all_ranks,
        deterministic,
        _root(root),
        allow_outside_root,
    )
    payload, diagnostics = _raise_for(*answer)
    failed = [d for d in diagnostics if d.is_error]
    return Report._from_payload(payload, failed)


def _headroom(headroom: Union[float, str]) -> float:
    """`0.1` or `"10%"` (as `sweep --headroom`) as a share."""
    if isinstance(headroom, str):
        text = headroom.strip()
        number = text[:-1] if text.endswith("%") else text
        try:
            share = float(number) / 100.0
        except ValueError:
            raise ValueError(
                f"`{headroom}` is not a headroom: write a percentage such as `10%`, or a share "
                "such as 0.1"
            ) from None
    else:
        share = float(headroom)
    if not 0.0 <= share < 1.0:
        raise ValueError(f"a headroom of {headroom!r} is not from 0 up to below 100%")
    return share


def sweep(
    path_or_text: PathOrText,
    scenario: Optional[str] = None,
    *,
    auto: bool = False,
    allow_cross_node_tp: bool = False,
    headroom: Union[float, str] = 0.0,
    objective: str = "time",
    root: Optional[PathOrText] = None,
    allow_outside_root: bool = False,
    prune: Optional[int] = None,
) -> Sweep:
    """`venusc sweep --format json`: every valid plan of the file's lists (or of `auto`'s
    parallelism axes) simulated on all cores and ranked by `objective` (`time`,
    `throughput`, `gpu-hours`, `mfu`, `goodput`, `time-to-train`, `cost`). `headroom`: the memory share every plan leaves free
    (0.1 or `"10%"`). `prune`: K, as `--prune --top K`: only the plans that can rank among the
    best K are simulated, and those K are listed (the same K an exhaustive sweep ranks first)."""
    if allow_cross_node_tp and not auto:
        raise ValueError("`allow_cross_node_tp` needs `auto=True`")
    if prune is not None and (isinstance(prune, bool) or not isinstance(prune, int) or prune < 1):
        raise ValueError(f"`prune={prune!r}` is not a number of plans to keep: give one of 1 or more")
    share = _headroom(headroom)
    source, is_path = _source(path_or_text)
    answer = _venusc.sweep(
        source,
        is_path,
        scenario,
        auto,
        allow_cross_node_tp,
        share,
        objective,
        _root(root),
        allow_outside_root,
        prune,
    )
    payload, _ = _raise_for(*answer)
    return Sweep(json.loads(payload))


def _imported(answer: Tuple[Optional[str], List[_RawDiagnostic], Optional[str]]) -> Imported:
    venus, diagnostics = _raise_for(*answer)
    if any(d.is_error for d in diagnostics):
        raise VenuscError("the imported scenario does not check", diagnostics)
    return Imported(venus=venus, warnings=diagnostics)


def import_megatron(
    flags: Union[str, Sequence[str]],
    *,
    name: str = "megatron",
    cluster: Optional[str] = None,
    gpus: Optional[int] = None,
) -> Imported:
    """`venusc import megatron`: a Megatron-LM launch script or flag list (`pretrain_gpt.py`
    flags, as one string or a list of arguments) as a `.venus` scenario named `name`.
    `cluster`: a stdlib cluster (default `dgx_h100`, with W0013); `gpus`: the world size when
    the flags have no torchrun line. Raises `VenuscError` on flags it cannot import or when the
    scenario does not check."""
    if isinstance(flags, str):
        script = flags
    else:
        import shlex

        script = " ".join(shlex.quote(f) for f in flags)
    return _imported(_venusc.import_megatron(script, name, cluster, gpus))


def import_hf(config: Union[Mapping[str, Any], PathOrText], *, name: Optional[str] = None) -> Imported:
    """`venusc import config.json`: a HuggingFace model config, as a mapping or the path of its
    `config.json`, as a `.venus` `model` block (named after its directory, or `name`)."""
    if isinstance(config, Mapping):
        return _imported(_venusc.import_hf(json.dumps(dict(config)), False, name))
    return _imported(_venusc.import_hf(os.fspath(config), True, name))
