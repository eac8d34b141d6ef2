"""Cycle-approximate simulator of the accelerator: bit-exact functional model and timing model.

The functional semantics are the ISA's own kernels (:mod:`isa.semantics`) compiled with numba; the
timing model follows docs/timing.md at instruction granularity (see ``vta_sim/README.md``).

Example:
    >>> import isa, vta_sim
    >>> cfg = isa.load_config("default")
    >>> result = vta_sim.simulate(isa.Program.build(cfg, [isa.Finish()]))
    >>> result.cycles, result.modules["fetch"]["busy"]
    (36, 35)
"""

from .errors import CycleLimitError, DeadlockError, InstructionError, NoFinishError
from .result import SimResult
from .simulator import simulate
from .trace import InsnRecord, PortInterval, Trace

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
