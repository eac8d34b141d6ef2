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
    >>> knobs = apply_dense_split_k(create_schedule(y), y)
    >>> knobs["units_block"], knobs["k_block"], knobs["lanes"]
    (8, 4, 16)
"""

from __future__ import annotations

from compiler.errors import ScheduleError
from compiler.schedule import Schedule
from compiler.te.tensor import Tensor
from compiler.topi.cpu.conv2d import default_ow_block

#: The final sum over the lanes: all lanes of a unit in turn, or one lane across the units.
SUM_ORDERS = ("units_lanes", "lanes_units")


def apply_dense_split_k(
    s: Schedule,
    dense: Tensor,
    final: Tensor | None = None,
    units_block: int | None = None,
    parallel: bool = True,
    *,
    unit_groups: int = 1,
    k_block: int | None = None,
    unroll_k: bool = False,
    lanes: int | None = None,
    unroll_sum: bool = False,
    sum_order: str = "units_lanes",
) -> dict[str, object]:
    """Schedule the split-K ``dense`` (tag ``dense`` with a ``split_k`` attribute) inside
    ``s``; ``final`` is the 2-d output its epilogue (bias, activation) is inlined into.

    A block's ``units_block`` units run in ``unit_groups`` register groups; the vector steps
    of K are split by ``k_block`` (``None``: unsplit), the outer part outside the groups, so
    each group takes a k tile's steps with its accumulators in registers; ``unroll_k``
    unrolls the k tile. ``lanes`` is the vector width of the partial sums (the split's
    ``split_k`` lanes as one vector, or as several); the final sum over the lanes runs per
    unit (``sum_order="units_lanes"``) or lane by lane across the block's units
    (``"lanes_units"``), and ``unroll_sum`` unrolls its lane loop. The defaults give::

        for units block:
          for k: for unit (unrolled):
            partial[unit, 0:16] += x[k*16:(k+1)*16] * w[unit, k*16:(k+1)*16]
          for unit: out[unit] = sum(partial[unit, :])
    """
    if dense.op.tag != "dense" or "split_k" not in dense.op.attrs:
        raise ScheduleError(f"apply_dense_split_k: {dense.name} is not a split-K dense")
    partial = dense.op.input_tensors()[0]
    block = units_block or default_ow_block(dense.shape[1], 8)
    n_lanes = partial.shape[2]
    n_steps = partial.op.input_tensors()[0].shape[1] // n_lanes
    k_block = n_steps if k_block is None else k_block
    lanes = n_lanes if lanes is None else lanes
    for knob, value, extent, axis in (
        ("units_block", block, dense.shape[1], "output units"),
        ("unit_groups", unit_groups, block, f"units of a block (units_block={block})"),
        ("k_block", k_block, n_steps, "vector steps of K"),
        ("lanes", lanes, n_lanes, "lanes of the split-K partial sums"),
    ):
        if not isinstance(value, int) or value < 1 or extent % value:
            raise ScheduleError(
                f"apply_dense_split_k: {knob}={value!r} does not divide the {extent} {axis}"
            )
    if sum_order not in SUM_ORDERS:
        raise ScheduleError(
            f"apply_dense_split_k: sum_order={sum_order!r} is not one of {SUM_ORDERS}"
        )
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
    groups, units = [], pj
    if unit_groups > 1:
        pjo, units = s[partial].split(pj, factor=block // unit_groups)
        groups = [pjo]
    k_loops = [ko]
    if k_block != n_steps:
        k_loops = list(s[partial].split(ko, factor=k_block))
    vector = [lane]
    if lanes != n_lanes:
        vector = list(s[partial].split(lane, factor=lanes))
    s[partial].reorder(pi, *k_loops[:-1], *groups, k_loops[-1], units, *vector)
    s[partial].unroll(units)
    for part in vector[:-1]:
        s[partial].unroll(part)
    s[partial].vectorize(vector[-1])
    if unroll_k:
        s[partial].unroll(k_loops[-1])
    *_, sum_units, sum_lanes = s[dense].leaf_iter_vars
    if sum_order == "lanes_units":
        s[dense].reorder(sum_lanes, sum_units)
    if unroll_sum:
        s[dense].unroll(sum_lanes)
    return {
        "units_block": block, "parallel": parallel, "unit_groups": unit_groups,
        "k_block": k_block, "unroll_k": bool(unroll_k), "lanes": lanes,
        "unroll_sum": bool(unroll_sum), "sum_order": sum_order,
    }  # fmt: skip
