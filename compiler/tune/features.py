"""Features of a candidate for the cost model, read from its lowered loop program.

The schedule of a point is lowered to the loop IR (``Task.loop_program``: the nest as scheduled,
before the target's passes) and summarised into a fixed-length vector, so one model can rank
points of different tasks (the transfer mode relies on it):

* per kind of statement (GEMM intrinsic calls, DMA copies, ALU stages, other stores): how many
  times it runs, how many such statements, their mean loop depth;
* per memory scope of the buffers touched (main memory, inp, wgt, acc, other on-chip):
  bytes accessed over the run, bytes touched (distinct elements: the extents of the loops the
  indices depend on), their ratio (reuse), and the bytes allocated;
* the loop structure: number of loops, deepest nest, the product of the virtual-thread extents,
  and the extents of the outermost loops on the way to the first GEMM call.

Every count enters as ``log2(1 + x)``.

Example:
    >>> from compiler.tune import conv2d_task
    >>> t = conv2d_task(8, 8, 16, 16, 3, 1, 1)
    >>> f = features(t, t.default_config())
    >>> f.shape == (len(FEATURE_NAMES),), bool((f >= 0).all())
    (True, True)
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

import numpy as np

from compiler.ir.expr import BufferLoad, IntImm, Var
from compiler.ir.functor import used_vars, visit
from compiler.ir.stmt import (
    Allocate,
    BufferStore,
    For,
    ForKind,
    Pragma,
    SeqStmt,
    Stmt,
    Tensorize,
)

KINDS = ("gemm", "dma", "alu", "other")
SCOPES = ("global", "inp", "wgt", "acc", "local")
OUTER_LOOPS = 8


def _names() -> tuple[str, ...]:
    out = []
    for k in KINDS:
        out += [f"{k}.runs", f"{k}.count", f"{k}.depth"]
    for s in SCOPES:
        out += [f"{s}.accessed", f"{s}.touched", f"{s}.reuse", f"{s}.allocated"]
    out += ["loops", "max_depth", "vthreads"]
    out += [f"outer{j}.extent" for j in range(OUTER_LOOPS)]
    return tuple(out)


FEATURE_NAMES = _names()


def _extent(loop: For) -> int:
    return loop.extent.value if isinstance(loop.extent, IntImm) else 1


def _scope(buffer: Any) -> str:
    name = buffer.scope.name
    if name == "global":
        return "global"
    for s in ("inp", "wgt", "acc"):
        if s in name:
            return s
    return "local"


class _Walk:
    def __init__(self) -> None:
        self.runs = dict.fromkeys(KINDS, 0.0)
        self.count = dict.fromkeys(KINDS, 0)
        self.depth = dict.fromkeys(KINDS, 0)
        self.accessed = dict.fromkeys(SCOPES, 0.0)
        self.touched = dict.fromkeys(SCOPES, 0.0)
        self.allocated = dict.fromkeys(SCOPES, 0.0)
        self.loops = 0
        self.max_depth = 0
        self.vthreads = 1
        self.outer: list[int] | None = None

    def stmt(self, s: Stmt, loops: list[For], kind: str) -> None:
        if isinstance(s, For):
            self.loops += 1
            if s.kind is ForKind.THREAD_BINDING:
                self.vthreads *= _extent(s)
            self.stmt(s.body, [*loops, s], kind)
        elif isinstance(s, SeqStmt):
            for c in s.stmts:
                self.stmt(c, loops, kind)
        elif isinstance(s, Allocate):
            self.allocated[_scope(s.buffer)] += s.buffer.size * s.buffer.dtype.bytes
            self.stmt(s.body, loops, kind)
        elif isinstance(s, Pragma):
            self.stmt(s.body, loops, _pragma_kind(s.key.name, kind))
        elif isinstance(s, Tensorize):
            self._count("gemm", loops)
            if self.outer is None:
                self.outer = [_extent(lp) for lp in loops[:OUTER_LOOPS]]
            self.stmt(s.body, loops, "gemm_body")
        elif isinstance(s, BufferStore):
            if kind != "gemm_body":
                self._count(kind, loops)
            self._access(s.buffer, s.indices, loops)
            for load in _loads(s.value):
                self._access(load.buffer, load.indices, loops)
        else:
            for child in s.children():
                if isinstance(child, Stmt):
                    self.stmt(child, loops, kind)
        self.max_depth = max(self.max_depth, len(loops))

    def _count(self, kind: str, loops: list[For]) -> None:
        self.runs[kind] += math.prod(_extent(lp) for lp in loops)
        self.count[kind] += 1
        self.depth[kind] += len(loops)

    def _access(self, buffer: Any, indices: Iterable[Any], loops: list[For]) -> None:
        scope = _scope(buffer)
        nbytes = buffer.dtype.bytes
        used: set[Var] = set()
        for i in indices:
            used |= used_vars(i)
        self.accessed[scope] += nbytes * math.prod(_extent(lp) for lp in loops)
        self.touched[scope] += nbytes * math.prod(_extent(lp) for lp in loops if lp.var in used)

    def vector(self) -> np.ndarray:
        v: list[float] = []
        for k in KINDS:
            n = self.count[k]
            v += [self.runs[k], n, self.depth[k] / n if n else 0.0]
        for s in SCOPES:
            acc, tch = self.accessed[s], self.touched[s]
            v += [acc, tch, acc / tch if tch else 0.0, self.allocated[s]]
        v += [self.loops, self.max_depth, self.vthreads]
        outer = (self.outer or []) + [0] * OUTER_LOOPS
        v += outer[:OUTER_LOOPS]
        return np.log2(1.0 + np.asarray(v, dtype=np.float64))


def _pragma_kind(name: str, kind: str) -> str:
    if name == "dma_copy":
        return "dma"
    if name == "alu":
        return "alu"
    return kind


def _loads(expr: Any) -> list[BufferLoad]:
    out: list[BufferLoad] = []

    def fn(n: Any) -> None:
        if isinstance(n, BufferLoad):
            out.append(n)

    visit(expr, fn)
    return out


def program_features(func: Any) -> np.ndarray:
    """The feature vector of a lowered loop program (a ``PrimFunc``)."""
    w = _Walk()
    w.stmt(func.body, [], "other")
    return w.vector()


@lru_cache(maxsize=1 << 16)
def _cached(task: Any, index: int) -> np.ndarray:
    return program_features(task.loop_program(index))


def features(task: Any, config: Any) -> np.ndarray:
    """The feature vector of point ``config`` (a ``Config`` or an index) of ``task``'s space
    (cached per process)."""
    index = config if isinstance(config, int) else config.index
    return _cached(task, int(index))


def batch_features(task: Any, indices: Iterable[int]) -> np.ndarray:
    """Features of several points, one row each."""
    rows = [features(task, int(i)) for i in indices]
    return np.stack(rows) if rows else np.zeros((0, len(FEATURE_NAMES)))


__all__ = ["FEATURE_NAMES", "batch_features", "features", "program_features"]
