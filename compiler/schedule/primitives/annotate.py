"""Loop annotations: unroll, vectorize, parallel, bind, pragma, tensorize.

They do not change the iteration space, only how a loop runs. Nests below are for
``C[i, j] = A[i, j] * 2``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from compiler.errors import ScheduleError
from compiler.ir.pragma import PragmaKey, pragma_key
from compiler.ir.stmt import ForKind, ThreadAxis
from compiler.schedule.intrin import TensorIntrin, get_intrin

if TYPE_CHECKING:
    from compiler.schedule.stage import AxisRef, Stage


def _set_kind(
    stage: Stage, axis: AxisRef, kind: ForKind, primitive: str, allow_reduce: bool
) -> None:
    iv = stage.leaf(axis, primitive)
    name = stage.axis_name(iv)
    if iv.is_reduce and not allow_reduce:
        raise ScheduleError(
            f"{primitive} on stage {stage.name}: axis {name} is a reduction axis; its iterations "
            "update the same output element and cannot run concurrently"
        )
    attr = stage.iter_attr(iv)
    if attr.kind is not ForKind.SERIAL and attr.kind is not kind:
        raise ScheduleError(
            f"{primitive} on stage {stage.name}: axis {name} is already {attr.kind.value}"
        )
    if attr.tensorize is not None:
        raise ScheduleError(f"{primitive} on stage {stage.name}: axis {name} is tensorized")
    attr.kind = kind


def unroll(stage: Stage, axis: AxisRef) -> None:
    """Replicate the loop body once per iteration.

    Before / after ``unroll(j)`` with ``j`` in ``range(2)``::

        for j in range(2):         C[i, 0] = A[i, 0]*2
          C[i, j] = A[i, j]*2      C[i, 1] = A[i, 1]*2
    """
    _set_kind(stage, axis, ForKind.UNROLLED, "unroll", allow_reduce=True)


def vectorize(stage: Stage, axis: AxisRef) -> None:
    """Execute the iterations of the loop as one vector operation.

    Before / after ``vectorize(j)`` with ``j`` in ``range(8)``::

        for j in range(8):         C[i, ramp(0, 1, 8)] = A[i, ramp(0, 1, 8)]*broadcast(2.0f, 8)
          C[i, j] = A[i, j]*2
    """
    _set_kind(stage, axis, ForKind.VECTORIZED, "vectorize", allow_reduce=False)


def parallel(stage: Stage, axis: AxisRef) -> None:
    """Distribute the iterations of the loop over threads.

    Before / after ``parallel(i)``::

        for i in range(16):        parallel for i in range(16):
          ...                        ...
    """
    _set_kind(stage, axis, ForKind.PARALLEL, "parallel", allow_reduce=False)


def bind(stage: Stage, axis: AxisRef, thread: ThreadAxis | str) -> None:
    """Bind the loop to a thread axis.

    Before / after ``bind(i.outer, "cthread")``::

        for i.outer in range(2):     for i.outer in range(2) bind cthread:
          ...                          ...

    Virtual threads (``cthread``, ``vthread``) stay visible in the IR as such loops; a target
    either interleaves them (the accelerator) or runs them one after another (the CPU). Several
    loops of a stage may be virtual threads (their product is the thread count); a GPU axis
    binds at most one loop.
    """
    tag = thread if isinstance(thread, ThreadAxis) else ThreadAxis(thread)
    iv = stage.leaf(axis, "bind")
    # A GPU axis names one hardware index, so it binds one loop; virtual threads may nest
    # (e.g. threads over output channels and over rows give 2 x 2 interleaved threads).
    for other in [] if tag.is_virtual else stage.leaf_iter_vars:
        other_attr = stage.iter_attrs.get(other)
        if other is not iv and other_attr is not None and other_attr.thread == tag:
            raise ScheduleError(
                f"bind on stage {stage.name}: {tag.tag} is already bound to axis "
                f"{stage.axis_name(other)}"
            )
    # A reduction axis may go to GPU threads: the GPU target combines the threads' partial
    # results with a cross-thread reduction (blocks and virtual threads cannot).
    allow_reduce = tag.tag.startswith("threadIdx.")
    _set_kind(stage, iv, ForKind.THREAD_BINDING, "bind", allow_reduce=allow_reduce)
    stage.iter_attr(iv).thread = tag


def pragma(stage: Stage, axis: AxisRef, key: PragmaKey | str, value: Any = 1) -> None:
    """Wrap the loop of ``axis`` in ``pragma key = value``.

    ``key`` is a typed key (``compiler.ir.pragma.DMA_COPY``, a target's ``env.dma_copy``) or,
    as in TVM, its name; the name is converted here, once.

    Before / after ``pragma(i, "dma_copy")``::

        for i in range(16):        pragma dma_copy = 1:
          ...                        for i in range(16):
                                       ...
    """
    if not isinstance(key, PragmaKey) and (not isinstance(key, str) or not key.isidentifier()):
        raise ScheduleError(f"pragma on stage {stage.name}: key must be an identifier, got {key!r}")
    typed = pragma_key(key)
    if not (value is None or isinstance(value, bool | int | float | str)):
        raise ScheduleError(f"pragma {typed} on stage {stage.name}: value must be a literal")
    iv = stage.leaf(axis, "pragma")
    stage.iter_attr(iv).pragmas.append((typed, value))


def tensorize(stage: Stage, axis: AxisRef, intrin: TensorIntrin | str) -> None:
    """Replace the loop nest from ``axis`` inward by a tensor intrinsic.

    Before / after ``tensorize(i.inner, gemm)``::

        for i.inner in range(1):               tensorize gemm at C over (i.inner, j.inner, k.inner):
          for j.inner in range(16):              for i.inner in range(1):
            for k.inner in range(16):              ... (the nest, replaced by a target pass)
              C[...] += A[...]*B[...]
    """
    resolved = get_intrin(intrin)
    iv = stage.leaf(axis, "tensorize")
    attr = stage.iter_attr(iv)
    if attr.kind is not ForKind.SERIAL:
        raise ScheduleError(
            f"tensorize on stage {stage.name}: axis {stage.axis_name(iv)} is {attr.kind.value}"
        )
    pos = stage.leaf_iter_vars.index(iv)
    for inner in stage.leaf_iter_vars[pos:]:
        if (
            stage.iter_attrs.get(inner) is not None
            and stage.iter_attrs[inner].tensorize is not None
        ):
            raise ScheduleError(
                f"tensorize on stage {stage.name}: axis {stage.axis_name(inner)} is already "
                "tensorized"
            )
    attr.tensorize = resolved
