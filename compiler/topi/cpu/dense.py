"""CPU schedule of the split-K dense (``topi.matmul.dense_split_k``): vectorized along the
reduction.

Per block of ``units_block`` output units, a local ``units_block x lanes`` tile of partial sums
accumulates one vector of the input row times one vector of each weight row per step of K
(both contiguous), then the ``lanes`` partial sums of each unit are added up.

Example:
    >>> from compiler import te
    >>> from compiler.schedule import create_schedule
    >>> from compiler.topi.matmul import dense_split_k
    >>> y = dense_split_k(te.placeholder((1, 64), name="x"), te.placeholder((40, 64), name="w"))
    >>> apply_dense_split_k(create_schedule(y), y)
    {'units_block': 8, 'parallel': True}
"""

from __future__ import annotations

from compiler.errors import ScheduleError
from compiler.schedule import Schedule
from compiler.te.tensor import Tensor
from compiler.topi.cpu.conv2d import default_ow_block


def apply_dense_split_k(
    s: Schedule,
    dense: Tensor,
    final: Tensor | None = None,
    units_block: int | None = None,
    parallel: bool = True,
) -> dict[str, object]:
    """Schedule the split-K ``dense`` (tag ``dense`` with a ``split_k`` attribute) inside
    ``s``; ``final`` is the 2-d output its epilogue (bias, activation) is inlined into."""
    if dense.op.tag != "dense" or "split_k" not in dense.op.attrs:
        raise ScheduleError(f"apply_dense_split_k: {dense.name} is not a split-K dense")
    partial = dense.op.input_tensors()[0]
    block = units_block or default_ow_block(dense.shape[1], 8)
    out = dense if final is None else final
    if tuple(out.shape) != tuple(dense.shape):
        raise ScheduleError(
            f"apply_dense_split_k: epilogue output {out.name}{out.shape} does not have the shape "
            f"of {dense.name}{dense.shape}"
        )
    i, j = s[out].leaf_iter_vars[:2]
    jo, ji = s[out].split(j, factor=block)
    if parallel:
        s[out].parallel(jo)
    if out.op is not dense.op:
        s[dense].set_scope("local")
        s[dense].compute_at(s[out], jo)
    s[partial].set_scope("local")
    s[partial].compute_at(s[out], jo)
    pi, pj, lane, ko = s[partial].leaf_iter_vars
    s[partial].reorder(pi, ko, pj, lane)
    s[partial].unroll(pj)
    s[partial].vectorize(lane)
    return {"units_block": block, "parallel": parallel}
