"""Resize (ONNX ``Resize`` / ``Upsample``): nearest or (multi)linear interpolation along every
axis whose size or scale changes.

Each output index ``i`` of a resized axis maps to a source coordinate, in float32 as
onnxruntime computes it (``coordinate_transformation_mode``):

* ``half_pixel``: ``(i + 0.5) / scale - 0.5``; ``pytorch_half_pixel`` the same, 0 for an output
  of length 1;
* ``asymmetric``: ``i / scale``;
* ``align_corners``: ``i * (in - 1) / (out - 1)``, 0 for an output of length 1.

``nearest`` rounds the coordinate (``nearest_mode``: ``round_prefer_floor``,
``round_prefer_ceil``, ``floor``, ``ceil``) and clamps it into the axis; ``linear`` clamps it
into ``[0, in - 1]`` and blends the two neighbours. Indices are clamped with ``min``/``max`` so
every read is provably in bounds.

Example:
    >>> from compiler import te
    >>> x = te.placeholder((1, 2, 3, 4), name="x")
    >>> resize(x, (1, 2, 6, 8), (1.0, 1.0, 2.0, 2.0), "nearest", "asymmetric", "floor").shape
    (1, 2, 6, 8)
"""

from __future__ import annotations

from collections.abc import Sequence

from compiler.errors import ShapeError
from compiler.ir import op
from compiler.ir.expr import Expr, const
from compiler.te import compute
from compiler.te.tensor import Tensor

METHODS = ("nearest", "linear")
COORDINATE_MODES = ("half_pixel", "pytorch_half_pixel", "asymmetric", "align_corners")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")

_F32 = "float32"


def _f(v: float) -> Expr:
    return const(float(v), _F32)


def _floor_int(v: Expr) -> Expr:
    """``floor(v)`` as int32 (a cast truncates toward zero: one less where that rounded up)."""
    t = op.cast("int32", v)
    return t - op.if_then_else(op.greater(op.cast(_F32, t), v), const(1), const(0))


def _clamp(v: Expr, hi: int) -> Expr:
    return op.minimum(op.maximum(v, const(0)), const(hi))


def source_coordinate(i: Expr, size_in: int, size_out: int, scale: float, mode: str) -> Expr:
    """The float32 source coordinate of output index ``i`` along one axis."""
    fi = op.cast(_F32, i)
    if mode in ("half_pixel", "pytorch_half_pixel"):
        if mode == "pytorch_half_pixel" and size_out == 1:
            return _f(0.0)
        return (fi + _f(0.5)) / _f(scale) - _f(0.5)
    if mode == "asymmetric":
        return fi / _f(scale)
    if mode == "align_corners":
        if size_out == 1:
            return _f(0.0)
        return fi * _f(size_in - 1) / _f(size_out - 1)
    raise ShapeError(f"resize: unknown coordinate_transformation_mode {mode!r}")


def _nearest(x: Expr, size_in: int, mode: str) -> Expr:
    if mode == "floor":
        k = _floor_int(x)
    elif mode == "ceil":
        k = -_floor_int(-x)
    elif mode == "round_prefer_ceil":
        k = _floor_int(x + _f(0.5))
    elif mode == "round_prefer_floor":
        fl = _floor_int(x)
        tie = op.equal(x - op.cast(_F32, fl), _f(0.5))
        k = op.if_then_else(tie, fl, _floor_int(x + _f(0.5)))
    else:
        raise ShapeError(f"resize: unknown nearest_mode {mode!r}")
    return _clamp(k, size_in - 1)


def resize(
    x: Tensor,
    sizes: Sequence[int],
    scales: Sequence[float],
    method: str,
    coordinate_mode: str,
    nearest_mode: str = "round_prefer_floor",
    name: str = "resize",
) -> Tensor:
    """``x`` resized to ``sizes``; ``scales`` are the per-axis factors the coordinates use."""
    if method not in METHODS:
        raise ShapeError(f"{name}: method {method!r} is not one of {METHODS}")
    if coordinate_mode not in COORDINATE_MODES:
        raise ShapeError(f"{name}: coordinate mode {coordinate_mode!r} not in {COORDINATE_MODES}")
    if len(sizes) != x.ndim or len(scales) != x.ndim or min(sizes, default=1) < 1:
        raise ShapeError(f"{name}: sizes {tuple(sizes)} and scales need {x.ndim} entries")
    if not x.dtype.is_float and method != "nearest":  # nearest copies elements of any dtype
        raise ShapeError(f"{name}: {method} needs a float tensor, {x.name} is {x.dtype}")
    out = tuple(int(d) for d in sizes)
    moved = [
        k for k in range(x.ndim) if out[k] != x.shape[k] or float(scales[k]) != 1.0
    ]  # axes that are not copied as they are

    def fcompute(*i: Expr) -> Expr:
        if method == "nearest":
            idx = list(i)
            for k in moved:
                c = source_coordinate(i[k], x.shape[k], out[k], scales[k], coordinate_mode)
                idx[k] = _nearest(c, x.shape[k], nearest_mode)
            return x(*idx)
        # linear: the weighted sum over the 2 ** len(moved) corners
        corners: list[tuple[list[Expr], Expr | None]] = [(list(i), None)]
        for k in moved:
            size = x.shape[k]
            c = source_coordinate(i[k], size, out[k], scales[k], coordinate_mode)
            c = op.minimum(op.maximum(c, _f(0.0)), _f(size - 1))
            lo = _clamp(op.cast("int32", c), size - 1)
            hi = op.minimum(lo + const(1), const(size - 1))
            w = c - op.cast(_F32, lo)
            nxt: list[tuple[list[Expr], Expr | None]] = []
            for idx, weight in corners:
                for pos, wk in ((lo, _f(1.0) - w), (hi, w)):
                    j = list(idx)
                    j[k] = pos
                    nxt.append((j, wk if weight is None else weight * wk))
            corners = nxt
        total: Expr | None = None
        for idx, weight in corners:
            term = x(*idx) if weight is None else op.cast(x.dtype, weight) * x(*idx)
            total = term if total is None else total + term
        assert total is not None
        return total

    return compute(out, fcompute, name=name, tag="injective")
