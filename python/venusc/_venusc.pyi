# Types of the extension module `venusc._venusc` (python/src/lib.rs). Every function answers
# (payload, diagnostics, error): the CLI's JSON or text, the diagnostics as tuples (severity,
# code, message, file, line, column, help), an uncoded error message.
from typing import List, Optional, Tuple

_Diagnostic = Tuple[
    str, Optional[str], str, Optional[str], Optional[int], Optional[int], Optional[str]
]
_Answer = Tuple[Optional[str], List[_Diagnostic], Optional[str]]

VERSION: str

def check(
    text_or_path: str, is_path: bool, root: Optional[str] = ..., allow_outside_root: bool = ...
) -> _Answer: ...
def simulate(
    text_or_path: str,
    is_path: bool,
    scenario: Optional[str] = ...,
    iterations: Optional[int] = ...,
    all_ranks: bool = ...,
    deterministic: bool = ...,
    root: Optional[str] = ...,
    allow_outside_root: bool = ...,
) -> _Answer: ...
def sweep(
    text_or_path: str,
    is_path: bool,
    scenario: Optional[str] = ...,
    auto: bool = ...,
    allow_cross_node_tp: bool = ...,
    headroom: float = ...,
    objective: str = ...,
    root: Optional[str] = ...,
    allow_outside_root: bool = ...,
    prune: Optional[int] = ...,
) -> _Answer: ...
def import_megatron(
    script: str, name: str = ..., cluster: Optional[str] = ..., gpus: Optional[int] = ...
) -> _Answer: ...
def import_hf(json_or_path: str, is_path: bool, name: Optional[str] = ...) -> _Answer: ...
def threads() -> int: ...
