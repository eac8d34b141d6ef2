"""The ISA's reference kernels (:mod:`isa.semantics`) and timing formulas (:mod:`isa.timing`),
compiled with numba for the event loop.

The functional semantics are written once, in :mod:`isa.semantics`, as plain loops. Those kernels
call small helpers (``wrap32``, ``low8``, ``alu_apply``, ``_max_index``) that are ordinary Python
functions in their module, and nopython code cannot call ordinary functions. So each kernel is
rebuilt from its very code object with a globals mapping in which the helpers are compiled too,
and the rebuilt function is compiled. The arithmetic stays the ISA's; only the name binding
differs.

The kernels are not cached on their own: they are linked into the event loop
(:mod:`vta_sim.engine`), whose cache key includes :data:`SOURCE_STAMP`, a hash of the sources
they come from, so an edited kernel never runs from a stale cache.

Example:
    >>> import numpy as np
    >>> acc = np.zeros(4, np.int32); dram = np.array([255, 1, 128, 127], np.uint8)
    >>> load_acc8(acc, 4, dram, 0, 0, 1, 1, 1, 0, 0, 0, 0), acc.tolist()
    (0, [-1, 1, -128, 127])
"""

from __future__ import annotations

import hashlib
import inspect
import sys
import types
from collections.abc import Callable
from typing import Any

import numba

import isa.semantics as _sem
import isa.timing as _timing

#: Helpers the kernels call by global name; compiled first so the kernels can call them.
_HELPERS = _sem.HELPERS


def _compile_helpers() -> dict[str, Any]:
    scope = dict(vars(_sem))
    for name in _HELPERS:
        scope[name] = numba.njit(_rebind(getattr(_sem, name), scope))
    return scope


def _rebind(func: Callable[..., Any], scope: dict[str, Any]) -> types.FunctionType:
    """The same code object as ``func``, resolving its global names in ``scope``."""
    new = types.FunctionType(
        func.__code__, scope, func.__name__, func.__defaults__, func.__closure__
    )
    new.__qualname__ = func.__qualname__
    new.__doc__ = func.__doc__
    return new


_SCOPE = _compile_helpers()


def _kernel(name: str) -> Any:
    return numba.njit(_rebind(getattr(_sem, name), _SCOPE))


load = _kernel("load_kernel")
load_acc8 = _kernel("load_acc8_kernel")
decode_uops = _kernel("decode_uop_kernel")
store = _kernel("store_kernel")
gemm = _kernel("gemm_kernel")
alu = _kernel("alu_kernel")
#: The checks of the kernels without their work: GEMM's and ALU's are asked before refusing a
#: run's last instruction at the cycle limit (so a fault is still reported as the fault), and
#: all four by :mod:`vta_sim.dense`'s kernels before they write.
gemm_check = _SCOPE["gemm_check"]
alu_check = _SCOPE["alu_check"]
load_check = _SCOPE["load_check"]
store_check = _SCOPE["store_check"]


# The timing formulas of docs/timing.md, compiled from isa.timing in the same way: the event
# loop calls these, so the simulator's cycle counts come from the very functions the contract
# names.
_TIMING_SCOPE = dict(vars(_timing))
_TIMING_SCOPE["ceil_div"] = numba.njit(_timing.ceil_div)
dma_beats = numba.njit(_rebind(_timing.dma_beats, _TIMING_SCOPE))
pad_entries = numba.njit(_rebind(_timing.pad_entries, _TIMING_SCOPE))
uop_exec_cycles = numba.njit(_rebind(_timing.uop_exec_cycles, _TIMING_SCOPE))
alu_ii_of = numba.njit(_rebind(_timing.alu_ii_of, _TIMING_SCOPE))
fetch_beats = numba.njit(_rebind(_timing.fetch_beats, _TIMING_SCOPE))


def _source_stamp() -> int:
    """A 60-bit hash of the sources compiled into the event loop besides its own file."""
    h = hashlib.sha256()
    for mod in (_sem, _timing):
        h.update(inspect.getsource(mod).encode())
    h.update(inspect.getsource(sys.modules[__name__]).encode())
    return int(h.hexdigest()[:15], 16)


SOURCE_STAMP = _source_stamp()
