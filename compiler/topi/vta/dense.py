"""int8 dense (fully connected) on the accelerator: packed layout, epilogue, schedule.

``data (N/b, K/bi, b, bi)`` int8 times ``weight (M/bo, K/bi, bo, bi)`` int8 gives
``(N/b, M/bo, b, bo)`` int32, followed by the requantize epilogue. The schedule is VTA's dense
schedule with knobs (:class:`DenseKnobs`): output tiles of ``tile_b`` batch blocks x
``tile_co`` output blocks, reduced over steps of ``tile_ci`` input blocks, virtual threads on
output channels.

Example:
    >>> import isa
    >>> from compiler import te
    >>> x = te.placeholder((1, 8, 1, 4), "int8", name="x")
    >>> w = te.placeholder((4, 8, 4, 4), "int8", name="w")
    >>> out = dense_packed(x, w, shift=4)
    >>> out.shape
    (1, 4, 1, 4)
    >>> s = schedule_dense_packed(out, DenseKnobs(tile_co=2, tile_ci=4, oc_nthread=2),
    ...                           isa.load_config("default"))
    >>> "tensorize" in s.trace_text()
    True
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler import te
from compiler.errors import ShapeError
from compiler.ir.pragma import DMA_COPY
from compiler.schedule import Schedule, create_schedule
from compiler.te.tensor import Tensor
from isa import HwConfig

from .epilogue import check_gemm_tiles, find_epilogue, place_gemm, requantize_epilogue

DENSE_TAG = "dense_packed"


def dense_packed(
    data: Tensor,
    weight: Tensor,
    *,
    shift: int = 0,
    relu: bool = False,
    residual: Tensor | None = None,
    name: str = "dense",
) -> Tensor:
    """The int8 layer ``clip((data . weight^T) >> shift [+ residual])`` as int8."""
    if data.ndim != 4 or weight.ndim != 4:
        raise ShapeError(
            f"{name}: packed data (N/b, K/bi, b, bi) and weight (M/bo, K/bi, bo, bi) are 4-d, "
            f"got {data.shape} and {weight.shape}"
        )
    nb, kb, b, bi = data.shape
    mb, kb2, bo, bi2 = weight.shape
    if kb != kb2 or bi != bi2:
        raise ShapeError(f"{name}: input features differ: {data.shape} vs {weight.shape}")
    if data.dtype.name != "int8" or weight.dtype.name != "int8":
        raise ShapeError(f"{name}: the accelerator multiplies int8 values")
    ko = te.reduce_axis(kb, name="ko")
    ki = te.reduce_axis(bi, name="ki")
    acc = te.compute(
        (nb, mb, b, bo),
        lambda n, m, i, j: te.sum(
            data[n, ko, i, ki].astype("int32") * weight[m, ko, j, ki].astype("int32"),
            axis=[ko, ki],
        ),
        name=name,
        tag=DENSE_TAG,
        axis_names=("n", "m", "bi", "oi"),
    )
    return requantize_epilogue(acc, shift=shift, relu=relu, residual=residual)


@dataclass(frozen=True)
class DenseKnobs:
    """Schedule knobs of :func:`schedule_dense_packed` (tile sizes in blocks)."""

    tile_co: int
    tile_ci: int
    tile_b: int = 1
    oc_nthread: int = 1

    @property
    def nthreads(self) -> int:
        return self.oc_nthread

    def describe(self) -> str:
        return (
            f"tile_b={self.tile_b} tile_co={self.tile_co} tile_ci={self.tile_ci} "
            f"oc_nthread={self.oc_nthread}"
        )


def schedule_dense_packed(out: Tensor, knobs: DenseKnobs, cfg: HwConfig) -> Schedule:
    """VTA's dense schedule for the layer ending in ``out``."""
    dense, ewise, loads = find_epilogue(out, DENSE_TAG, "dense")
    nb, mb = dense.shape[:2]
    kb = dense.op.input_tensors()[0].shape[1]
    check_gemm_tiles(
        f"dense {dense.name}",
        [("tile_b", knobs.tile_b, nb), ("tile_ci", knobs.tile_ci, kb),
         ("tile_co", knobs.tile_co, mb)],
        knobs.oc_nthread,
    )  # fmt: skip
    s = create_schedule(out)
    x_b, x_c, x_bi, x_ci = s[out].leaf_iter_vars
    b0, b1 = s[out].split(x_b, factor=knobs.tile_b)
    co0, co1 = s[out].split(x_c, factor=knobs.tile_co)
    s[out].reorder(b0, co0, b1, co1, x_bi, x_ci)
    store_pt = co0
    if knobs.oc_nthread > 1:
        store_pt, vt = s[out].split(co0, factor=knobs.oc_nthread)
        # the threads outermost, the rest in order: each (row tile, channel tile) keeps its
        # own accumulator tile (swapping vt with b0 put the row tiles inside the store point)
        rest = [iv for iv in s[out].leaf_iter_vars if iv is not vt]
        s[out].reorder(vt, *rest)
        s[out].bind(vt, "cthread")
    place_gemm(s, out, dense, ewise, loads, cfg, store_pt, knobs.tile_ci)
    s[out].pragma(b1, DMA_COPY)
    return s
