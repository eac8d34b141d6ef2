"""Cycle-approximate simulator of the accelerator: bit-exact functional model and timing model.

The functional semantics are the ISA's own kernels (:mod:`isa.semantics`) compiled with numba; the
timing model follows docs/timing.md at instruction granularity (see ``vta_sim/README.md``).
numba is imported on first use of :func:`simulate` or a result class, so importing the package
(e.g. for ``vtac --help``) stays light.

Example:
    >>> import isa, vta_sim
    >>> cfg = isa.load_config("default")
    >>> result = vta_sim.simulate(isa.Program.build(cfg, [isa.Finish()]))
    >>> result.cycles, result.modules["fetch"]["busy"]
    (36, 35)
"""

from __future__ import annotations

import importlib
from typing import Any

from .errors import CycleLimitError, DeadlockError, InstructionError, NoFinishError

_LAZY = {
    "simulate": "simulator",
    "SimResult": "result",
    "Trace": "trace",
    "InsnRecord": "trace",
    "PortInterval": "trace",
}

__all__ = [
    "simulate",
    "SimResult",
    "Trace",
    "InsnRecord",
    "PortInterval",
    "InstructionError",
    "DeadlockError",
    "NoFinishError",
    "CycleLimitError",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
