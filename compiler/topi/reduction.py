"""Reductions over any set of axes (sum, mean, max, min) and argmax along one axis.

Every reduction is one compute stage tagged ``reduce`` over the reduced axes; ``mean`` divides
that sum in an injective stage after it, and ``argmax`` is two reductions: the maximum, then
the first (or last) index that holds it, so no tuple-valued reducer is needed.

Example:
    >>> from compiler import te
    >>> x = te.placeholder((2, 3, 4), name="x")
    >>> reduce(x, "sum", (0, 2), keepdims=True).shape, reduce(x, "mean", (1,)).shape
    ((1, 3, 1), (2, 4))
    >>> str(argmax(x, 1, keepdims=False).dtype)
    'int64'
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from compiler.errors import DTypeError, ShapeError
from compiler.ir import op
from compiler.ir.expr import Expr, const
from compiler.te import compute, reduce_axis
from compiler.te import max as te_max
from compiler.te import min as te_min
from compiler.te import sum as te_sum
from compiler.te.tensor import Tensor

_REDUCERS: dict[str, Callable[..., Expr]] = {
    "sum": te_sum,
    "mean": te_sum,
    "max": te_max,
    "min": te_min,
}


def _check_axes(x: Tensor, axes: Sequence[int], name: str) -> tuple[int, ...]:
    got = tuple(sorted({int(a) for a in axes}))
    if not got or len(got) != len(axes) or got[0] < 0 or got[-1] >= x.ndim:
        raise ShapeError(f"{name}: axes {tuple(axes)} must be distinct axes of {x.name}{x.shape}")
    return got


def _out_shape(x: Tensor, axes: Sequence[int], keepdims: bool) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if k in axes else d for k, d in enumerate(x.shape))
    return tuple(d for k, d in enumerate(x.shape) if k not in axes)


def _source_index(
    x: Tensor, axes: Sequence[int], keepdims: bool, out: Sequence[Any], red: Sequence[Any]
) -> list[Any]:
    """Where output index ``out`` and reduction variables ``red`` read ``x``."""
    idx: list[Any] = []
    kept = iter(out if not keepdims else [v for k, v in enumerate(out) if k not in axes])
    rv = iter(red)
    for k in range(x.ndim):
        idx.append(next(rv) if k in axes else next(kept))
    return idx


def reduce(
    x: Tensor, kind: str, axes: Sequence[int], keepdims: bool = False, name: str = ""
) -> Tensor:
    """``kind`` (sum, mean, max or min) of ``x`` over ``axes``; a result of rank 0 is kept as
    shape ``()``."""
    if kind not in _REDUCERS:
        raise ShapeError(f"{name or kind}: unknown reduction {kind!r} (sum, mean, max, min)")
    name = name or kind
    if kind == "mean" and not x.dtype.is_float:
        raise DTypeError(f"{name}: mean needs a float tensor, {x.name} is {x.dtype}")
    axes = _check_axes(x, axes, name)
    shape = _out_shape(x, axes, keepdims)
    rvars = [reduce_axis(x.shape[a], f"k{a}") for a in axes]
    reducer = _REDUCERS[kind]

    def body(*i: Expr) -> Expr:
        return reducer(x(*_source_index(x, axes, keepdims, i, [r.var for r in rvars])), rvars)

    total = compute(shape, body, name=f"{name}_sum" if kind == "mean" else name, tag="reduce")
    if kind != "mean":
        return total
    count = math.prod(x.shape[a] for a in axes)
    return compute(
        shape, lambda *i: total(*i) / const(float(count), x.dtype), name=name, tag="injective"
    )


def argmax(
    x: Tensor, axis: int, keepdims: bool = True, select_last_index: bool = False, name: str = ""
) -> Tensor:
    """The int64 index of the maximum of ``x`` along ``axis``: the first one (ONNX's default)
    or, with ``select_last_index``, the last."""
    name = name or "argmax"
    (axis,) = _check_axes(x, (axis,), name)
    shape = _out_shape(x, (axis,), keepdims)
    n = x.shape[axis]
    k1 = reduce_axis(n, "k")
    top = compute(
        shape,
        lambda *i: te_max(x(*_source_index(x, (axis,), keepdims, i, [k1.var])), k1),
        name=f"{name}_max",
        tag="reduce",
    )
    k2 = reduce_axis(n, "k")

    def pick(*i: Expr) -> Expr:
        hit = op.equal(x(*_source_index(x, (axis,), keepdims, i, [k2.var])), top(*i))
        k = op.cast("int64", k2.var)
        if select_last_index:
            return te_max(op.if_then_else(hit, k, const(-1, "int64")), k2)
        return te_min(op.if_then_else(hit, k, const(n, "int64")), k2)

    return compute(shape, pick, name=name, tag="reduce")
