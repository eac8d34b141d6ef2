"""The reference the RTL is checked against: the simulator when it is available.

This is the one place that chooses the reference. ``vta_sim.simulate`` gives the final DRAM
image and the cycle count; without it, :class:`isa.semantics.Machine` (the in-order reference
semantics) gives the final DRAM image and no cycle count.

Example:
    >>> import isa
    >>> ref = reference_run(isa.Program.build(isa.load_config("default"), [isa.Finish()]))
    >>> ref.dram.dtype, ref.dram.size
    (dtype('uint8'), 16)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from isa.program import Program
from isa.semantics import Machine


@dataclasses.dataclass(frozen=True)
class Reference:
    """Expected outcome of a program: final DRAM image, cycles (None if unknown), its source."""

    dram: np.ndarray
    cycles: int | None
    source: str
    #: cycles per module and statistics category (docs/timing.md section 6), when known
    modules: dict[str, dict[str, int]] | None = None


def _simulator() -> Callable[..., Any] | None:
    try:
        import vta_sim
    except ImportError:
        return None
    return getattr(vta_sim, "simulate", None)


def reference_run(program: Program) -> Reference:
    """Run ``program`` on the reference and return its final DRAM image (and cycles)."""
    simulate = _simulator()
    if simulate is not None:
        result = simulate(program, trace=False)
        modules = {m: {c: int(n) for c, n in cats.items()} for m, cats in result.modules.items()}
        return Reference(
            np.asarray(result.dram, np.uint8).copy(), int(result.cycles), "vta_sim", modules
        )
    machine = Machine(program.config, program.dram.copy())
    machine.run(program.instructions())
    return Reference(machine.dram, None, "isa.Machine")
