# A typed use of the package: `mypy --strict python/tests/usage.py` checks it against the
# package's annotations and `venusc/_venusc.pyi` (.ci/python.sh runs it; nothing here needs to
# run).
from __future__ import annotations

import pathlib
from typing import Any, Dict, List, Optional

import venusc


def iteration_ms(path: pathlib.Path) -> float:
    report: venusc.Report = venusc.simulate(path, iterations=2, deterministic=True)
    stages: List[Dict[str, int]] = report.memory
    assert len(stages) >= 1
    document: Dict[str, Any] = report.to_dict()
    assert document["scenario"] == report.scenario
    html: str = report._repr_html_()
    assert html
    return report.iteration_time_ms


def errors_of(text: str) -> List[str]:
    try:
        venusc.simulate(text, scenario="main")
    except venusc.VenuscError as e:
        out: List[str] = []
        for d in e.diagnostics:
            line: Optional[int] = d.line
            out.append(f"{d.code}:{line}:{d.column}: {d.message} ({d.help})")
        return out
    return []


def best_plan(path: str) -> Optional[venusc.Result]:
    results: venusc.Sweep = venusc.sweep(path, objective="throughput", headroom="10%")
    frame: Any = results.to_pandas()
    assert frame is not None
    pruned: Dict[str, int] = results.pruned
    assert sum(pruned.values()) <= results.candidates
    return results[0] if results else None


def imported() -> str:
    scenario: venusc.Imported = venusc.import_megatron(["--num-layers", "4"], gpus=8)
    model: venusc.Imported = venusc.import_hf({"model_type": "llama", "hidden_size": 64})
    warnings: List[venusc.Diagnostic] = scenario.warnings + model.warnings
    return scenario.venus + model.venus + str(len(warnings))


def clean(path: str) -> bool:
    return not [d for d in venusc.check(path) if d.is_error]
