"""GPU schedule of matmul and dense: block tiles in shared memory, register tiles per thread.

A block of ``threads_m x threads_n`` threads computes a ``block_m x block_n`` tile of the
output; each thread keeps its ``block_m/threads_m x block_n/threads_n`` outputs in local
memory (registers). The reduction runs in steps of ``k_tile``: each step the block fetches
the ``block_m x k_tile`` and ``k_tile x block_n`` input tiles into shared memory
cooperatively, then every thread accumulates from them (TVM's ``topi.cuda.dense`` shape).
An injective epilogue (bias, activation) is computed by the output stage from the registers.

Example:
    >>> from compiler import te, topi
    >>> A = te.placeholder((64, 32), name="A")
    >>> W = te.placeholder((48, 32), name="W")
    >>> s = schedule_dense(topi.dense(A, W), DenseGpuKnobs(32, 16, 8, 8, 8))
    >>> s["dense.local"].axis_names()
    ['k.outer', 'k.inner', 'i', 'j']
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.errors import ScheduleError
from compiler.schedule import Schedule, create_schedule
from compiler.te.tensor import Tensor
from compiler.topi.gpu.common import find_anchor, inline_injective, pow2_floor

DENSE_TAGS = ("dense", "matmul")


@dataclass(frozen=True)
class DenseGpuKnobs:
    """Tile sizes of the GPU dense schedule (see the module docstring)."""

    block_m: int
    block_n: int
    threads_m: int
    threads_n: int
    k_tile: int

    def __post_init__(self) -> None:
        for name in ("block_m", "block_n", "threads_m", "threads_n", "k_tile"):
            if getattr(self, name) < 1:
                raise ScheduleError(f"dense GPU knobs: {name} must be positive")
        if self.threads_m > self.block_m or self.threads_n > self.block_n:
            raise ScheduleError(
                f"dense GPU knobs: {self.threads_m}x{self.threads_n} threads do not fit a "
                f"{self.block_m}x{self.block_n} block tile"
            )


def default_dense_knobs(m: int, n: int, k: int) -> DenseGpuKnobs:
    """Tiles for an ``m x k`` by ``k x n`` product: 32x32 blocks of 8x8 threads when the
    output is large enough, one row of up to 128 threads for a batch of one.

    Example:
        >>> default_dense_knobs(1, 1000, 512)
        DenseGpuKnobs(block_m=1, block_n=128, threads_m=1, threads_n=128, k_tile=16)
    """
    if m < 8:
        bn = min(128, pow2_floor(n))
        return DenseGpuKnobs(m, bn, m, bn, min(16, k))
    bm = min(32, pow2_floor(m))
    bn = min(32, pow2_floor(n))
    return DenseGpuKnobs(bm, bn, min(8, bm), min(8, bn), min(8, k))


def schedule_dense(out: Tensor, knobs: DenseGpuKnobs | None = None) -> Schedule:
    """Schedule ``out``: a matmul/dense, possibly followed by injective operators."""
    anchor = find_anchor(out, DENSE_TAGS)
    if anchor is None or len(out.shape) != 2:
        raise ScheduleError(f"schedule_dense (gpu): {out.name} is not a 2-d matmul or dense")
    m, n = anchor.shape
    k = anchor.op.reduce_axis[0].extent  # type: ignore[attr-defined]
    kn = knobs or default_dense_knobs(m, n, k)
    s = create_schedule(out)
    if anchor.op is out.op:
        local = s.cache_write(out, "local")
        local_stage = s[local]
    else:
        local_stage = s[anchor]
        inline_injective(s, keep={local_stage.name})
        local_stage.set_scope("local")
    a, b = [t for t in local_stage.op.input_tensors()]
    shared_a = s.cache_read(a, "shared", [local_stage])
    shared_b = s.cache_read(b, "shared", [local_stage])
    final = s[out]
    i, j = final.leaf_iter_vars
    by, yi = final.split(i, factor=kn.block_m)
    bx, xi = final.split(j, factor=kn.block_n)
    ty, yr = final.split(yi, nparts=kn.threads_m)
    tx, xr = final.split(xi, nparts=kn.threads_n)
    final.reorder(by, bx, ty, tx, yr, xr)
    final.bind(by, "blockIdx.y")
    final.bind(bx, "blockIdx.x")
    final.bind(ty, "threadIdx.y")
    final.bind(tx, "threadIdx.x")
    local_stage.compute_at(final, tx)
    ci, cj, ck = local_stage.leaf_iter_vars
    ko, ki = local_stage.split(ck, factor=kn.k_tile)
    local_stage.reorder(ko, ki, ci, cj)
    s[shared_a].compute_at(local_stage, ko)
    s[shared_b].compute_at(local_stage, ko)
    return s
