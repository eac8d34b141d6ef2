"""Constructors of the tensor expression language: placeholder, compute, reductions.

Example:
    >>> from compiler import te
    >>> A = te.placeholder((8, 16), "int8", name="A")
    >>> B = te.placeholder((4, 16), "int8", name="B")
    >>> k = te.reduce_axis(16, name="k")
    >>> C = te.compute((8, 4), lambda i, j: te.sum(
    ...     A[i, k].astype("int32") * B[j, k].astype("int32"), axis=k), name="C")
    >>> C.dtype, C.shape
    (DType('int32'), (8, 4))
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from compiler.arith.bounds import const_bounds
from compiler.errors import DTypeError, ShapeError, TEError
from compiler.ir import expr as E
from compiler.ir import op
from compiler.ir.dtype import DType
from compiler.ir.expr import Expr, Var
from compiler.ir.node import Node
from compiler.te.tensor import (
    MAX,
    MIN,
    SUM,
    Combiner,
    ComputeOp,
    IterKind,
    IterVar,
    PlaceholderOp,
    Reduce,
    Tensor,
    TensorRead,
    as_shape,
    check_dtype,
)


def placeholder(
    shape: Sequence[int] | int, dtype: DType | str = "float32", name: str = "placeholder"
) -> Tensor:
    """An input tensor.

    Example:
        >>> placeholder((2, 3), "int8", name="X").shape
        (2, 3)
    """
    return PlaceholderOp(
        name, as_shape(shape, f"placeholder {name}"), check_dtype(dtype, name)
    ).output()


def reduce_axis(dom: int | tuple[int, int], name: str = "k") -> IterVar:
    """A reduction axis over ``range(dom)`` or ``range(lo, hi)`` for ``dom=(lo, hi)``.

    Example:
        >>> reduce_axis((1, 4), name="r").extent
        3
    """
    if isinstance(dom, tuple):
        lo, hi = dom
    else:
        lo, hi = 0, dom
    if not isinstance(lo, int) or not isinstance(hi, int) or hi <= lo:
        raise ShapeError(f"reduce_axis {name}: need an integer range lo < hi, got {dom!r}")
    return IterVar(Var(name), lo, hi - lo, IterKind.REDUCE)


def _axes(axis: IterVar | Sequence[IterVar], what: str) -> tuple[IterVar, ...]:
    axes = (axis,) if isinstance(axis, IterVar) else tuple(axis)
    if not axes:
        raise TEError(f"{what}: needs at least one reduction axis")
    for a in axes:
        if not isinstance(a, IterVar) or not a.is_reduce:
            raise TEError(f"{what}: {a!r} is not a reduction axis; create it with te.reduce_axis")
    if len({id(a) for a in axes}) != len(axes):
        raise TEError(f"{what}: the same reduction axis is listed twice")
    return axes


def _reduce(combiner: Combiner, source: Any, axis: Any, where: Any) -> Expr:
    source = op.convert(source)
    axes = _axes(axis, combiner.name)
    cond = None
    if where is not None:
        cond = op.convert(where)
        if not cond.dtype.is_bool:
            raise DTypeError(
                f"{combiner.name}: 'where' must be a bool expression, got {cond.dtype}"
            )
    if source.dtype.is_bool:
        raise DTypeError(f"{combiner.name}: cannot reduce a bool expression; cast it first")
    return Reduce(combiner, source, axes, cond)


def sum(expr: Any, axis: IterVar | Sequence[IterVar], where: Any = None) -> Expr:  # noqa: A001
    """Sum of ``expr`` over the reduction ``axis`` (optionally only ``where`` holds).

    Example:
        >>> k = reduce_axis(4)
        >>> A = placeholder((4,), name="A")
        >>> compute((1,), lambda i: sum(A[k], axis=k)).op.is_reduction
        True
    """
    return _reduce(SUM, expr, axis, where)


def _is_axes(axis: Any) -> bool:
    if isinstance(axis, IterVar):
        return True
    return (
        isinstance(axis, list | tuple) and bool(axis) and all(isinstance(a, IterVar) for a in axis)
    )


def max(expr: Any, axis: Any, where: Any = None) -> Expr:  # noqa: A001
    """Maximum of ``expr`` over the reduction ``axis`` (identity: the dtype's lowest value),
    or, as in TVM, the elementwise maximum of two expressions when ``axis`` is not an axis.

    Example:
        >>> A = placeholder((4,), "int32", name="A")
        >>> compute((4,), lambda i: max(A[i], 0), name="relu").op.body
        max(A[i], 0)
    """
    if not _is_axes(axis):
        if where is not None:
            raise TEError("max: 'where' applies to a reduction; give reduction axes")
        return op.maximum(expr, axis)
    return _reduce(MAX, expr, axis, where)


def min(expr: Any, axis: Any, where: Any = None) -> Expr:  # noqa: A001
    """Minimum of ``expr`` over the reduction ``axis`` (identity: the dtype's highest value),
    or the elementwise minimum of two expressions when ``axis`` is not an axis.

    Example:
        >>> A = placeholder((4,), "int32", name="A")
        >>> compute((4,), lambda i: min(A[i], 127), name="clip").op.body
        min(A[i], 127)
    """
    if not _is_axes(axis):
        if where is not None:
            raise TEError("min: 'where' applies to a reduction; give reduction axes")
        return op.minimum(expr, axis)
    return _reduce(MIN, expr, axis, where)


def _arg_names(fcompute: Callable[..., Any], ndim: int) -> list[str]:
    try:
        params = list(inspect.signature(fcompute).parameters.values())
    except (TypeError, ValueError):
        params = []
    if params and params[0].kind is inspect.Parameter.VAR_POSITIONAL:
        return [f"i{k}" for k in range(ndim)]
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(names) != ndim:
        raise ShapeError(
            f"compute: the function takes {len(names)} index arguments but the shape has "
            f"{ndim} dimensions"
        )
    return names


def compute(
    shape: Sequence[int] | int,
    fcompute: Callable[..., Any],
    name: str = "compute",
    tag: str = "",
    attrs: dict[str, Any] | None = None,
    axis_names: Sequence[str] | None = None,
) -> Tensor:
    """A tensor whose element at ``indices`` is ``fcompute(*indices)``.

    Axes are named after ``fcompute``'s parameters (``i0, i1, ...`` for ``*args``) unless
    ``axis_names`` is given.

    A reduction (``te.sum``/``max``/``min``) must be the whole body. Reads are checked against
    the shapes of the tensors read, except inside ``if_then_else`` branches (padding).

    Example:
        >>> A = placeholder((8,), name="A")
        >>> compute((8,), lambda i: A[i + 1], name="B")
        Traceback (most recent call last):
        compiler.errors.ShapeError: compute B reads A out of bounds: dimension 0 ...
    """
    dims = as_shape(shape, f"compute {name}")
    if axis_names is not None:
        names = list(axis_names)
        if len(names) != len(dims):
            raise ShapeError(f"compute {name}: {len(names)} axis names for {len(dims)} dimensions")
    else:
        names = _arg_names(fcompute, len(dims))
    axis = tuple(IterVar(Var(n), 0, d) for n, d in zip(names, dims, strict=True))
    body = fcompute(*(iv.var for iv in axis))
    if isinstance(body, IterVar):
        body = body.var
    if isinstance(body, tuple | list):
        raise TEError(f"compute {name}: multiple outputs are not supported; use one compute each")
    body = op.convert(body)
    reduce_axes: tuple[IterVar, ...] = ()
    if isinstance(body, Reduce):
        reduce_axes = body.axis
    _check_body(name, body, axis, reduce_axes)
    return ComputeOp(name, axis, reduce_axes, body, tag, dict(attrs or {})).output()


def _check_body(
    name: str, body: Expr, axis: tuple[IterVar, ...], reduce_axes: tuple[IterVar, ...]
) -> None:
    allowed = {iv.var for iv in axis} | {iv.var for iv in reduce_axes}
    ranges = {iv.var: (iv.min, iv.min + iv.extent - 1) for iv in axis + reduce_axes}

    def walk(n: Node, guarded: bool, top: bool) -> None:
        if isinstance(n, Reduce) and not top:
            raise TEError(
                f"compute {name}: a reduction must be the whole body of a compute; "
                "compute the reduction in its own stage and use its result"
            )
        if isinstance(n, Var) and n not in allowed:
            raise TEError(
                f"compute {name}: variable {n.name} is not an axis of this compute or of its "
                "reductions"
            )
        if isinstance(n, TensorRead) and not guarded:
            _check_read(name, n, ranges)
        if isinstance(n, E.IfThenElse):
            walk(n.cond, guarded, False)
            walk(n.then_value, True, False)
            walk(n.else_value, True, False)
            return
        if isinstance(n, Reduce):
            walk(n.source, guarded or n.condition is not None, False)
            if n.condition is not None:
                walk(n.condition, guarded, False)
            return
        for c in n.children():
            walk(c, guarded, False)

    walk(body, False, True)


def _check_read(name: str, read: TensorRead, ranges: dict[Var, tuple[int, int]]) -> None:
    for d, (index, extent) in enumerate(zip(read.indices, read.tensor.shape, strict=True)):
        lo, hi = const_bounds(index, ranges)
        if (lo is not None and lo < 0) or (hi is not None and hi >= extent):
            raise ShapeError(
                f"compute {name} reads {read.tensor.name} out of bounds: dimension {d} index "
                f"{index!r} ranges over [{lo}, {hi}] but {read.tensor.name}.shape[{d}] = "
                f"{extent} (shape {read.tensor.shape}); guard the read with if_then_else"
            )
