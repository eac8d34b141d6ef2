"""The requantize epilogue of accelerator layers: shift, optional residual add, clip, cast.

Every stage runs on the accelerator's ALU in the accumulator (the residual is loaded there by
an ACC8 DMA: int8 sign-extended to int32).

Example:
    >>> from compiler import te
    >>> acc = te.placeholder((1, 2, 1, 4), "int32", name="acc")
    >>> out = requantize_epilogue(acc, shift=8, relu=True)
    >>> [t.name for t in (out, out.op.input_tensors()[0])]
    ['out', 'clip']
"""

from __future__ import annotations

from typing import Any

from compiler import te, topi
from compiler.errors import ScheduleError, ShapeError
from compiler.ir.pragma import ALU, DMA_COPY
from compiler.te.tensor import ComputeOp, PlaceholderOp, Tensor
from isa import HwConfig


def find_epilogue(out: Tensor, tag: str, what: str) -> tuple[Tensor, list[Tensor], list[Tensor]]:
    """Walk from a layer's output to its GEMM stage (the one tagged ``tag``): that stage, the
    accumulator (ALU) stages between it and ``out``, and the operands computed from input
    tensors only, which are loaded into the accumulator by a DMA (the residual, per-channel
    tiles). ``what`` names the layer kind in the error when no such stage is found."""
    ewise: list[Tensor] = []
    loads: list[Tensor] = []
    anchor = None
    stack = [out.op.input_tensors()[0]] if isinstance(out.op, ComputeOp) else []
    while stack:
        t = stack.pop()
        if not isinstance(t.op, ComputeOp) or t in ewise:
            continue
        if t.op.tag == tag:
            anchor = t
            continue
        inputs = t.op.input_tensors()
        if inputs and all(isinstance(i.op, PlaceholderOp) for i in inputs):
            if t not in loads:
                loads.append(t)
            continue
        ewise.append(t)
        stack.extend(inputs)
    if anchor is None:
        raise ScheduleError(f"{out.name} is not computed from a packed {what} ({tag})")
    return anchor, ewise, loads


def check_gemm_tiles(what: str, tiles: list[tuple[str, int, int]], oc_nthread: int) -> None:
    """Refuse GEMM knobs whose tiles (``(knob, tile, extent)``, the output column tiles'
    last) do not divide their axes, or whose virtual threads do not split the column tiles."""
    for knob, tile, ext in tiles:
        if tile < 1 or ext % tile:
            raise ScheduleError(f"{what}: {knob}={tile} must divide {ext}")
    _, tile_co, cols = tiles[-1]
    if oc_nthread not in (1, 2) or (cols // tile_co) % oc_nthread:
        raise ScheduleError(
            f"{what}: oc_nthread={oc_nthread} needs 1 or 2 and an even number of output "
            f"column tiles ({cols // tile_co})"
        )


def place_gemm(
    s: Any, out: Tensor, gemm: Tensor, ewise: list[Tensor], loads: list[Tensor], cfg: HwConfig,
    store_pt: Any, tile_ci: int,
) -> None:  # fmt: skip
    """The part a dense-like GEMM schedule shares once its output's loops are ordered and
    ``store_pt`` (the loop a stored tile belongs to) is chosen: the GEMM and its ALU stages in
    the accumulator at ``store_pt``, the operands loaded into the accumulator there by DMA, the
    reduction split by ``tile_ci`` with the inp and wgt tiles loaded per step, and the GEMM
    tensorized. The GEMM's loops are ``(*spatial, bi, oi, ko, ki)``."""
    from compiler.targets.vta.intrin import gemm_intrinsic, make_scopes

    scopes = make_scopes(cfg)
    data, weight = gemm.op.input_tensors()
    cdata = s.cache_read(data, scopes.inp, [gemm])
    cweight = s.cache_read(weight, scopes.wgt, [gemm])
    s[gemm].set_scope(scopes.acc)
    for t in ewise:
        s[t].set_scope(scopes.acc)
        s[t].pragma(s[t].leaf_iter_vars[0], ALU)
    for t in (gemm, *ewise):
        s[t].compute_at(s[out], store_pt)
    for t in sorted(loads, key=lambda t: t.name):
        s[t].set_scope(scopes.acc)
        s[t].compute_at(s[out], store_pt)
        s[t].pragma(s[t].leaf_iter_vars[0], DMA_COPY)
    *spatial, bi, oi, ko, ki = s[gemm].leaf_iter_vars
    ko0, ko1 = s[gemm].split(ko, factor=tile_ci)
    s[gemm].reorder(ko0, *spatial, ko1, bi, oi, ki)
    for c in (cdata, cweight):
        s[c].compute_at(s[gemm], ko0)
        s[c].pragma(s[c].leaf_iter_vars[0], DMA_COPY)
    s[gemm].tensorize(bi, gemm_intrinsic(cfg))


def requantize_epilogue(
    acc: Tensor, *, shift: int = 0, relu: bool = False, residual: Tensor | None = None
) -> Tensor:
    """``int8(clip((acc >> shift) [+ residual], 0 if relu else -128, 127))``."""
    if acc.dtype.name != "int32":
        raise ShapeError(
            f"the epilogue requantizes an int32 accumulator, {acc.name} is {acc.dtype}"
        )
    if not 0 <= shift <= 31:
        raise ShapeError(f"{acc.name}: shift must be in [0, 31], got {shift}")
    out = topi.right_shift(acc, shift, name="shr") if shift else acc
    if residual is not None:
        if residual.shape != acc.shape or residual.dtype.name != "int8":
            raise ShapeError(
                f"{acc.name}: the residual must be int8 of the output's shape {acc.shape}, got "
                f"{residual.name}: {residual.dtype}{list(residual.shape)}"
            )
        res_acc = te.compute(
            acc.shape, lambda *i: residual(*i).astype("int32"), name="res_acc", tag="elemwise"
        )
        out = topi.add(out, res_acc, name="add")
    clip = topi.clip(out, 0 if relu else -128, 127, name="clip")
    return topi.cast(clip, "int8", name="out")
