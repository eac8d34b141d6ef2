"""A quantized matmul of two activations on the accelerator: a batch of int8 matrix products
``A[h] @ B[h]`` (attention's ``Q K^T`` and ``softmax(..) V``), int32 accumulation, then the
per-tensor requantization on the ALU.

Neither operand is a compile-time constant. The host writes both into the program's tensors
at run time (``pack`` nodes, :mod:`compiler.targets.vta.pack`): ``A`` as rows into ``data``
``(B, T/b, K/bi, b, bi)`` (the dense layer's data layout, one matrix after another) and ``B``
transposed into the weight layout ``weight (B, N/bo, K/bi, bo, bi)``, so that each matrix of
the batch is a dense layer whose weights are ``B[h]^T``. The result ``out (B, T/b, N/bo, b, bo)``
holds the rows of every product in the dense layer's output layout.

The program is the dense template's (:func:`compiler.topi.vta.dense.schedule_dense_packed`:
output tiles of ``tile_b`` row blocks x ``tile_co`` column blocks, reduced over steps of
``tile_ci`` blocks, optional virtual threads on the column tiles) inside one more loop over the
batch: one program per group, one LOAD of each operand's tile per step, the GEMM and the
requantization's ALU steps as for a dense layer.

Why the host writes ``B`` in the weight layout rather than a STORE of the producing group:
``B`` comes from the host in every graph we run (the keys pass through a host transpose, the
values through a host reshape, and the softmax before ``@ V`` runs on the host), so the host's
pack is one numpy transpose of bytes it writes anyway, where a store-based variant would need
the producer to write its output a second time in another layout (``docs/network.md``).

Example:
    >>> import isa
    >>> import numpy as np
    >>> from compiler.quantize import choose_requant
    >>> ep = QEpilogue(None, choose_requant(np.full(6, 0.01)), -128, 127)
    >>> layer = compile_qmatmul("qk", isa.load_config("default"), ep, batch=2, rows=5, k=7,
    ...                         cols=6)
    >>> layer.out_shape, layer.program.symbols["weight"].role
    ((2, 5, 2, 1, 4), 'input')
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from compiler import te
from compiler.errors import ScheduleError, ShapeError
from compiler.ir.pragma import DMA_COPY
from compiler.schedule import Schedule, create_schedule
from compiler.te.tensor import Tensor
from isa import HwConfig

from .epilogue import check_gemm_tiles, find_epilogue, place_gemm
from .qnn import QEpilogue, QLayer, apply_epilogue, epilogue_tensors, imm_steps

if TYPE_CHECKING:
    from .dense import DenseKnobs

MATMUL_TAG = "matmul_packed"


def qmatmul_packed(
    data: Tensor,
    weight: Tensor,
    ep: QEpilogue,
    tiles: dict[str, Tensor],
    *,
    residual: Tensor | None = None,
    name: str = "matmul",
) -> Tensor:
    """Packed int8 ``data (B, T/b, K/bi, b, bi)`` times ``weight (B, N/bo, K/bi, bo, bi)``
    (matrix ``h`` of the batch by weight matrix ``h``), then the quantized epilogue ``ep``.

    Example:
        >>> import numpy as np
        >>> from compiler.quantize import choose_requant
        >>> x = te.placeholder((3, 2, 2, 1, 4), "int8", name="x")
        >>> w = te.placeholder((3, 5, 2, 4, 4), "int8", name="w")
        >>> ep = QEpilogue(None, choose_requant(np.full(20, 0.01)), -128, 127)
        >>> tiles, _ = epilogue_tensors(ep, 5, 1, 4, "mm")
        >>> qmatmul_packed(x, w, ep, tiles).shape
        (3, 2, 5, 1, 4)
    """
    if data.ndim != 5 or weight.ndim != 5:
        raise ShapeError(
            f"{name}: packed data (B, T/b, K/bi, b, bi) and weight (B, N/bo, K/bi, bo, bi) are "
            f"5-d, got {data.shape} and {weight.shape}"
        )
    bt, tb, kb, b, bi = data.shape
    bt2, nb, kb2, bo, bi2 = weight.shape
    if bt != bt2:
        raise ShapeError(f"{name}: batches differ: data {bt} matrices, weight {bt2}")
    if kb != kb2 or bi != bi2:
        raise ShapeError(f"{name}: reductions differ: data {data.shape} vs weight {weight.shape}")
    if data.dtype.name != "int8" or weight.dtype.name != "int8":
        raise ShapeError(f"{name}: the accelerator multiplies int8 values")
    ko = te.reduce_axis(kb, name="ko")
    ki = te.reduce_axis(bi, name="ki")
    acc = te.compute(
        (bt, tb, nb, b, bo),
        lambda h, t, m, i, j: te.sum(
            data[h, t, ko, i, ki].astype("int32") * weight[h, m, ko, j, ki].astype("int32"),
            axis=[ko, ki],
        ),
        name=name,
        tag=MATMUL_TAG,
        axis_names=("h", "t", "m", "bi", "oi"),
    )
    return apply_epilogue(acc, ep, tiles, lambda i: (i[2], i[3], i[4]), residual)


def schedule_qmatmul_packed(out: Tensor, knobs: DenseKnobs, cfg: HwConfig) -> Schedule:
    """The dense schedule (:func:`compiler.topi.vta.dense.schedule_dense_packed`) of each
    matrix of the batch, the batch loop outside the output tiles (inside the virtual threads).
    ``tile_b`` counts row blocks of one matrix."""
    mm, ewise, loads = find_epilogue(out, MATMUL_TAG, "matmul")
    tb, nb = mm.shape[1:3]
    kb = mm.op.input_tensors()[0].shape[2]
    check_gemm_tiles(
        f"matmul {mm.name}",
        [("tile_b", knobs.tile_b, tb), ("tile_ci", knobs.tile_ci, kb),
         ("tile_co", knobs.tile_co, nb)],
        knobs.oc_nthread,
    )  # fmt: skip
    s = create_schedule(out)
    x_h, x_b, x_c, x_bi, x_ci = s[out].leaf_iter_vars
    b0, b1 = s[out].split(x_b, factor=knobs.tile_b)
    co0, co1 = s[out].split(x_c, factor=knobs.tile_co)
    s[out].reorder(x_h, b0, co0, b1, co1, x_bi, x_ci)
    store_pt = co0
    if knobs.oc_nthread > 1:
        store_pt, vt = s[out].split(co0, factor=knobs.oc_nthread)
        s[out].reorder(vt, x_h, b0, store_pt)
        s[out].bind(vt, "cthread")
    place_gemm(s, out, mm, ewise, loads, cfg, store_pt, knobs.tile_ci)
    s[out].pragma(b1, DMA_COPY)
    return s


def compile_qmatmul(
    name: str,
    cfg: HwConfig,
    ep: QEpilogue,
    *,
    batch: int,
    rows: int,
    k: int,
    cols: int,
    residual: bool = False,
    nthreads: int = 2,
    knobs: DenseKnobs | None = None,
) -> QLayer:
    """Compile a quantized matmul group for ``cfg``: ``batch`` products of an int8
    ``(rows, k)`` matrix by an int8 ``(k, cols)`` one, both written by the host at run time
    (``data`` and ``weight`` are inputs of the program, not parameters), requantized by ``ep``
    (one entry per output column).

    ``knobs``: the dense template's (:class:`~compiler.topi.vta.dense.DenseKnobs`, per matrix
    of the batch); None: the heuristic's for a dense layer of ``rows`` x ``k`` x ``cols``.
    """
    from compiler.build import lower
    from compiler.targets.vta import get_vta_target

    from .heuristic import dense_misfit, epilogue_channel_tiles, quantized_dense_knobs

    if min(batch, rows, k, cols) < 1:
        raise ShapeError(
            f"matmul {name}: batch {batch}, rows {rows}, k {k}, cols {cols} must be positive"
        )
    if ep.channels != cols:
        raise ShapeError(f"matmul {name}: the epilogue has {ep.channels} channels for {cols} "
                         "output columns")  # fmt: skip
    tgt = get_vta_target(cfg)
    b, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
    tb, kb, nb = -(-rows // b), -(-k // bi), -(-cols // bo)
    data = te.placeholder((batch, tb, kb, b, bi), "int8", name="data")
    wt = te.placeholder((batch, nb, kb, bo, bi), "int8", name="weight")
    tiles, values = epilogue_tensors(ep, nb, b, bo, name)
    res = te.placeholder((batch, tb, nb, b, bo), "int8", name="residual") if residual else None
    out = qmatmul_packed(data, wt, ep, tiles, residual=res, name=name)
    steps = ep.steps()
    acc = 1 + epilogue_channel_tiles(steps) + int(residual)
    if knobs is None:
        knobs = quantized_dense_knobs(cfg, nb=tb, mb=nb, kb=kb, steps=steps, residual=residual,
                                      nthreads=nthreads)  # fmt: skip
    else:
        misfit = dense_misfit(cfg, knobs, nb=tb, mb=nb, kb=kb, acc_buffers=acc)
        if misfit is not None:
            raise ScheduleError(f"matmul group {name}: {misfit} on {cfg.name}")
    s = schedule_qmatmul_packed(out, knobs, cfg)
    args = [data, wt, *tiles.values(), *([res] if res is not None else []), out]
    prog = tgt.codegen(
        lower(s, args, target=tgt),
        layouts={"data": f"BTK{b}t{bi}k", "weight": f"BNK{bo}n{bi}k", "out": f"BTN{b}t{bo}n"},
        roles={t.name: "param" for t in tiles.values()},
    )
    macs = batch * rows * k * cols
    return QLayer(name, prog, values, knobs, macs, residual, len(steps), imm_steps(steps))


__all__ = ["MATMUL_TAG", "compile_qmatmul", "qmatmul_packed", "schedule_qmatmul_packed"]
