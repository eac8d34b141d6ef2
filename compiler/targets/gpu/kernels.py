"""Kernels of a lowered function and their launch configurations.

Every top-level loop nest of a GPU function (one stage with the stages computed inside it)
is one kernel, launched in order; buffers allocated at the top level live in global memory
between kernels. A kernel's grid and block dimensions are inferred from the loops bound to
``blockIdx.*`` and ``threadIdx.*``: all loops bound to one ``blockIdx`` axis must have the
same extent, and the block is as large as the largest loop bound to each ``threadIdx`` axis
(a smaller loop runs on the first threads only).

Example:
    >>> from compiler import te
    >>> from compiler.build import lower
    >>> from compiler.schedule import create_schedule
    >>> A = te.placeholder((64,), name="A")
    >>> B = te.compute((64,), lambda i: A[i] + 1.0, name="B")
    >>> s = create_schedule(B)
    >>> bo, bi = s[B].split("i", factor=32)
    >>> s[B].bind(bo, "blockIdx.x")
    >>> s[B].bind(bi, "threadIdx.x")
    >>> plan = split_kernels(lower(s, [A, B], target="gpu"))
    >>> [(k.name, k.launch.grid, k.launch.block) for k in plan.kernels]
    [('main_kernel0', (2, 1, 1), (32, 1, 1))]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from compiler.errors import LoweringError
from compiler.ir import stmt as S
from compiler.ir.buffer import Buffer
from compiler.ir.expr import IntImm
from compiler.ir.functor import buffers_used, visit
from compiler.ir.node import Node

BLOCK_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z")
THREAD_TAGS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")


@dataclass(frozen=True)
class LaunchConfig:
    """Grid and block dimensions (x, y, z) of one kernel launch.

    Example:
        >>> LaunchConfig((4, 1, 1), (16, 8, 1)).threads_per_block
        128
    """

    grid: tuple[int, int, int]
    block: tuple[int, int, int]

    @property
    def threads_per_block(self) -> int:
        return math.prod(self.block)

    @property
    def blocks(self) -> int:
        return math.prod(self.grid)

    def extent(self, tag: str) -> int:
        """The launch dimension of a ``blockIdx.*``/``threadIdx.*`` axis."""
        dims = self.grid if tag.startswith("blockIdx") else self.block
        return dims["xyz".index(tag[-1])]

    def __str__(self) -> str:
        return f"grid={self.grid} block={self.block}"


@dataclass(frozen=True)
class Kernel:
    """One kernel: its body (a loop nest of the lowered function) and launch configuration.

    ``stages`` names the global buffers the kernel writes (the stages it computes);
    ``params`` lists the global buffers it touches, in the function's parameter order
    followed by intermediate buffers.
    """

    index: int
    name: str
    body: S.Stmt
    launch: LaunchConfig
    stages: tuple[str, ...]
    params: tuple[Buffer, ...]
    shared: tuple[Buffer, ...]
    local: tuple[Buffer, ...]

    @property
    def shared_bytes(self) -> int:
        """Static shared memory of one block, in bytes: the buffers in order, each aligned to
        its element's size (as ptxas places them: a float64 array after an odd number of
        float32 values starts 4 bytes later)."""
        end = 0
        for b in self.shared:
            align = b.dtype.bytes
            end = -(-end // align) * align + b.size * b.dtype.bytes
        return end

    @property
    def stage(self) -> str:
        return ", ".join(self.stages) or self.name


@dataclass(frozen=True)
class KernelPlan:
    """The kernels of a function in launch order, and its global intermediate buffers."""

    intermediates: tuple[Buffer, ...]
    kernels: tuple[Kernel, ...]


def top_level(func: S.PrimFunc) -> tuple[list[Buffer], list[S.Stmt]]:
    """Peel the top-level allocations (global intermediates) and return them with the
    top-level statements, each of which is one kernel."""
    allocs: list[Buffer] = []
    stmts: list[S.Stmt] = []

    def go(s: S.Stmt) -> None:
        if isinstance(s, S.SeqStmt):
            for x in s.stmts:
                go(x)
        elif isinstance(s, S.Allocate):
            if s.buffer.scope.name != "global":
                raise LoweringError(
                    f"{func.name}: stage {s.buffer.name} is computed at the root in scope "
                    f"{s.buffer.scope.name}; only global memory outlives a kernel (compute it "
                    "at a loop of the stage that reads it)"
                )
            allocs.append(s.buffer)
            go(s.body)
        else:
            stmts.append(s)

    go(func.body)
    return allocs, stmts


def rebuild_top_level(func: S.PrimFunc, kernels: list[S.Stmt]) -> S.PrimFunc:
    """``func`` with its top-level statements replaced (same count and order)."""
    it = iter(kernels)

    def go(s: S.Stmt) -> S.Stmt:
        if isinstance(s, S.SeqStmt):
            return S.seq(*(go(x) for x in s.stmts))
        if isinstance(s, S.Allocate):
            return S.Allocate(s.buffer, go(s.body))
        return next(it)

    return func.with_body(go(func.body))


def map_kernels(func: S.PrimFunc, fn: Callable[[S.Stmt, LaunchConfig, str], S.Stmt]) -> S.PrimFunc:
    """Apply ``fn(kernel_stmt, launch, name) -> stmt`` to every kernel of ``func``."""
    _, stmts = top_level(func)
    out = []
    for k, stmt in enumerate(stmts):
        name = kernel_name(func, k)
        out.append(fn(stmt, infer_launch(stmt, name, written_stages(stmt)), name))
    return rebuild_top_level(func, out)


def kernel_name(func: S.PrimFunc, index: int) -> str:
    return f"{func.name}_kernel{index}"


def thread_loops(stmt: Node) -> Iterator[S.For]:
    """Every loop bound to a GPU axis inside ``stmt``."""
    found: list[S.For] = []

    def fn(n: Node) -> None:
        if isinstance(n, S.For) and n.thread is not None and n.thread.is_gpu:
            found.append(n)

    visit(stmt, fn)
    return iter(found)


def written_stages(stmt: S.Stmt) -> tuple[str, ...]:
    """Names of the global buffers ``stmt`` stores to, in order of first store."""
    names: list[str] = []

    def fn(n: Node) -> None:
        if (
            isinstance(n, S.BufferStore)
            and n.buffer.scope.name == "global"
            and n.buffer.name not in names
        ):
            names.append(n.buffer.name)

    visit(stmt, fn)
    return tuple(names)


def infer_launch(stmt: S.Stmt, name: str, stages: tuple[str, ...]) -> LaunchConfig:
    """The launch configuration of one kernel from its thread-bound loops."""
    what = f"kernel {name} (stage {', '.join(stages) or '?'})"
    extents: dict[str, set[int]] = {}
    for loop in thread_loops(stmt):
        if not isinstance(loop.extent, IntImm):
            raise LoweringError(
                f"{what}: loop {loop.var.name} bound to {loop.thread} has a non-constant "
                f"extent {loop.extent!r}; launch dimensions must be constants"
            )
        extents.setdefault(loop.thread.tag, set()).add(loop.extent.value)  # type: ignore[union-attr]
    if not extents:
        raise LoweringError(
            f"{what} has no loop bound to blockIdx.* or threadIdx.*; on the GPU every stage "
            "computed at the root is a kernel: bind its outer loops (s[stage].bind(axis, "
            "'blockIdx.x'), s[stage].bind(axis, 'threadIdx.x'))"
        )
    for tag in BLOCK_TAGS:
        found = extents.get(tag, set())
        if len(found) > 1:
            raise LoweringError(
                f"{what}: loops bound to {tag} have different extents {sorted(found)}; every "
                f"loop bound to a block axis must cover the same grid"
            )
    grid = tuple(max(extents.get(t, {1})) for t in BLOCK_TAGS)
    block = tuple(max(extents.get(t, {1})) for t in THREAD_TAGS)
    return LaunchConfig(grid, block)  # type: ignore[arg-type]


def split_kernels(func: S.PrimFunc) -> KernelPlan:
    """The kernels of a lowered GPU function, in launch order."""
    allocs, stmts = top_level(func)
    order = list(func.params) + allocs
    kernels = []
    for k, stmt in enumerate(stmts):
        name = kernel_name(func, k)
        stages = written_stages(stmt)
        launch = infer_launch(stmt, name, stages)
        used = buffers_used(stmt)
        params = tuple(b for b in order if b in used)
        shared: list[Buffer] = []
        local: list[Buffer] = []

        def fn(
            n: Node, shared: list[Buffer] = shared, local: list[Buffer] = local, name: str = name
        ) -> None:
            if isinstance(n, S.Allocate):
                scope = n.buffer.scope.name
                if scope == "shared":
                    shared.append(n.buffer)
                elif scope == "local":
                    local.append(n.buffer)
                else:
                    raise LoweringError(
                        f"kernel {name}: stage {n.buffer.name} is computed inside the kernel "
                        f"in scope {scope}; inside a kernel use 'shared' (one copy per block) "
                        f"or 'local' (one per thread): s[{n.buffer.name!r}].set_scope(...)"
                    )

        visit(stmt, fn)
        kernels.append(Kernel(k, name, stmt, launch, stages, params, tuple(shared), tuple(local)))
    return KernelPlan(tuple(allocs), tuple(kernels))
