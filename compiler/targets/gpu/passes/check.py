"""GPU checks: what the GPU target cannot run, how thread-bound loops may nest, and the
device's limits (threads per block, block and grid dimensions, shared memory per block).

Example:
    >>> from compiler import te
    >>> from compiler.build import lower
    >>> from compiler.schedule import create_schedule
    >>> A = te.placeholder((4096,), name="A")
    >>> B = te.compute((4096,), lambda i: A[i] * 2.0, name="B")
    >>> s = create_schedule(B)
    >>> s[B].bind("i", "threadIdx.x")
    >>> try:
    ...     lower(s, [A, B], target="gpu")
    ... except LoweringError as exc:
    ...     print(str(exc)[:60])
    kernel main_kernel0 (stage B) launches 4096 threads per bloc
"""

from __future__ import annotations

from collections.abc import Callable

from compiler.errors import LoweringError
from compiler.ir import stmt as S
from compiler.ir.functor import rewrite, used_vars, visit
from compiler.ir.node import Node
from compiler.targets.gpu.device import GpuDevice
from compiler.targets.gpu.kernels import (
    BLOCK_TAGS,
    THREAD_TAGS,
    Kernel,
    split_kernels,
)


def prepare_gpu_loops(func: S.PrimFunc) -> S.PrimFunc:
    """Reject loop kinds the GPU target does not run, before lowering starts.

    ``parallel`` is a CPU annotation (bind the loop to ``blockIdx``/``threadIdx`` instead),
    pragmas and tensorize regions name accelerator operations. A ``vectorize``d loop becomes a
    sequential loop of its thread, keeping a ``vectorize`` annotation (the kernels are
    generated without vector types).
    """

    def fn(n: Node) -> None:
        if isinstance(n, S.For) and n.kind is S.ForKind.PARALLEL:
            raise LoweringError(
                f"{func.name}: loop {n.var.name} is parallel; the GPU target runs loops on "
                "threads through bind(axis, 'blockIdx.x' / 'threadIdx.x'), not parallel()"
            )
        if isinstance(n, S.Pragma):
            where = f" of stage {n.stage}" if getattr(n, "stage", "") else ""
            raise LoweringError(
                f"{func.name}: the GPU target does not implement pragma {str(n.key)!r}{where}"
            )
        if isinstance(n, S.Tensorize):
            raise LoweringError(
                f"{func.name}: stage {n.stage} is tensorized with {n.intrin.name}; the GPU "
                "target has no tensor intrinsics"
            )

    visit(func.body, fn)

    def post(n: Node) -> Node | None:
        if isinstance(n, S.For) and n.kind is S.ForKind.VECTORIZED:
            return S.For(
                n.var,
                n.min,
                n.extent,
                S.ForKind.SERIAL,
                n.body,
                None,
                n.annotations + (("vectorize", 1),),
            )
        return None

    return func.with_body(rewrite(func.body, post))


def verify_thread_nesting(func: S.PrimFunc) -> S.PrimFunc:
    """Check how thread-bound loops nest inside each kernel.

    A loop bound to an axis inside a loop bound to the same axis runs on the same hardware
    index: it must not use the outer loop's variable (the shared-memory fill of a block is
    the usual case) and must not be longer than the outer loop (the threads beyond the outer
    extent never reach it). A ``local`` buffer belongs to one thread: writing it from a loop
    bound to threads inside its allocation would split it across threads.
    """
    plan = split_kernels(func)
    for kernel in plan.kernels:
        _check_nesting(kernel)
    return func


def _check_nesting(kernel: Kernel) -> None:
    what = f"kernel {kernel.name} (stage {kernel.stage})"

    # ``before`` holds the local buffers allocated outside the innermost enclosing thread
    # loop, ``inside`` those allocated within it.
    def go(s: S.Stmt, outer: dict[str, S.For], before: frozenset, inside: frozenset) -> None:
        if isinstance(s, S.For):
            if s.thread is not None and s.thread.is_gpu:
                tag = s.thread.tag
                prev = outer.get(tag)
                if prev is not None:
                    if prev.var in used_vars(s.body):
                        raise LoweringError(
                            f"{what}: loop {s.var.name} bound to {tag} is nested in loop "
                            f"{prev.var.name} bound to {tag} and uses {prev.var.name}; both run "
                            "on the same thread index"
                        )
                    if _int(s.extent) > _int(prev.extent):
                        raise LoweringError(
                            f"{what}: loop {s.var.name} bound to {tag} has extent "
                            f"{_int(s.extent)} but is nested in loop {prev.var.name} bound to "
                            f"{tag} with extent {_int(prev.extent)}; threads beyond "
                            f"{_int(prev.extent)} never reach it"
                        )
                go(s.body, {**outer, tag: s, "": s}, before | inside, frozenset())
                return
            go(s.body, outer, before, inside)
        elif isinstance(s, S.Allocate):
            if s.buffer.scope.name == "local":
                inside = inside | {s.buffer}
            go(s.body, outer, before, inside)
        elif isinstance(s, S.SeqStmt):
            for x in s.stmts:
                go(x, outer, before, inside)
        elif isinstance(s, S.If):
            go(s.then_body, outer, before, inside)
            if s.else_body is not None:
                go(s.else_body, outer, before, inside)
        elif isinstance(s, S.LetStmt):
            go(s.body, outer, before, inside)
        elif isinstance(s, S.BufferStore) and s.buffer in before and not _is_update(s):
            # accumulations are left to the cross-thread reduction pass, which reports them
            loop = outer[""]
            raise LoweringError(
                f"{what}: local buffer {s.buffer.name} is written inside loop {loop.var.name} "
                f"bound to {loop.thread} but allocated outside it; local memory is private to "
                "one thread (compute the stage inside that loop, or put it in 'shared')"
            )

    go(kernel.body, {}, frozenset(), frozenset())


def _is_update(s: S.BufferStore) -> bool:
    """True if ``s`` reads the element it writes (an accumulation)."""
    hit = False

    def fn(n: Node) -> None:
        nonlocal hit
        from compiler.ir.expr import BufferLoad

        if isinstance(n, BufferLoad) and n.buffer == s.buffer and n.indices == s.indices:
            hit = True

    visit(s.value, fn)
    return hit


def _int(e: object) -> int:
    return e.value  # type: ignore[attr-defined]


def make_check_gpu_limits(device: GpuDevice) -> Callable[[S.PrimFunc], S.PrimFunc]:
    """A pass that checks every kernel against ``device``'s limits."""

    def check_gpu_limits(func: S.PrimFunc) -> S.PrimFunc:
        for kernel in split_kernels(func).kernels:
            check_kernel_limits(kernel, device)
        return func

    return check_gpu_limits


def check_kernel_limits(kernel: Kernel, device: GpuDevice) -> None:
    """Raise if ``kernel`` exceeds a limit of ``device``."""
    what = f"kernel {kernel.name} (stage {kernel.stage})"
    launch = kernel.launch
    if launch.threads_per_block > device.max_threads_per_block:
        raise LoweringError(
            f"{what} launches {launch.threads_per_block} threads per block (block "
            f"{launch.block}); the device {device.name} allows at most "
            f"{device.max_threads_per_block} (split the axis and bind the outer part to "
            "blockIdx.*)"
        )
    for tag, dim, limit in zip(THREAD_TAGS, launch.block, device.max_block_dims, strict=True):
        if dim > limit:
            raise LoweringError(
                f"{what}: {tag} has extent {dim}; the device {device.name} allows at most "
                f"{limit} threads along it"
            )
    for tag, dim, limit in zip(BLOCK_TAGS, launch.grid, device.max_grid_dims, strict=True):
        if dim > limit:
            raise LoweringError(
                f"{what}: {tag} has extent {dim}; the device {device.name} allows at most "
                f"{limit} blocks along it"
            )
    used = kernel.shared_bytes
    if used > device.shared_bytes_per_block:
        parts = ", ".join(f"{b.name} {b.size * b.dtype.bytes} B" for b in kernel.shared)
        raise LoweringError(
            f"{what} uses {used} bytes of shared memory per block ({parts}); the device "
            f"{device.name} allows {device.shared_bytes_per_block} bytes of static shared "
            f"memory per block ({device.shared_bytes_per_block_optin} only with the dynamic "
            "opt-in, which these kernels do not use): use smaller tiles"
        )
