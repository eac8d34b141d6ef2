"""Elementwise operators with numpy broadcasting: arithmetic, relu, clip, shifts, casts and
requantization of int32 accumulators to int8.

Example:
    >>> from compiler import te
    >>> acc = te.placeholder((1, 16, 8, 8), "int32", name="acc")
    >>> bias = te.placeholder((16, 1, 1), "int32", name="bias")
    >>> add(acc, bias).shape
    (1, 16, 8, 8)
    >>> requantize(acc, shift=8).dtype
    DType('int8')
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from compiler.errors import DTypeError, ShapeError
from compiler.ir import op
from compiler.ir.dtype import DType, as_dtype
from compiler.ir.expr import Expr
from compiler.te import compute
from compiler.te.tensor import Tensor

Operand = Tensor | int | float


def broadcast_shape(a: Sequence[int], b: Sequence[int], what: str = "broadcast") -> tuple[int, ...]:
    """numpy's broadcasting rule, with an error naming both shapes.

    Example:
        >>> broadcast_shape((4, 1, 3), (5, 1))
        (4, 5, 3)
    """
    out = []
    for k in range(max(len(a), len(b))):
        da = a[len(a) - 1 - k] if k < len(a) else 1
        db = b[len(b) - 1 - k] if k < len(b) else 1
        if da != db and 1 not in (da, db):
            raise ShapeError(f"{what}: shapes {tuple(a)} and {tuple(b)} cannot be broadcast")
        out.append(max(da, db))
    return tuple(reversed(out))


def _read(t: Operand, idx: Sequence[Expr], like: DType | None) -> Expr:
    if not isinstance(t, Tensor):
        return op.convert(t, like)
    offset = len(idx) - t.ndim
    return t(*(0 if d == 1 else idx[offset + k] for k, d in enumerate(t.shape)))


def _binary(
    a: Operand, b: Operand, fn: Callable[[Expr, Expr], Expr], name: str, tag: str
) -> Tensor:
    shapes = [t.shape for t in (a, b) if isinstance(t, Tensor)]
    if not shapes:
        raise ShapeError(f"{name}: needs at least one tensor operand")
    shape = shapes[0] if len(shapes) == 1 else broadcast_shape(shapes[0], shapes[1], name)
    dtypes = [t.dtype for t in (a, b) if isinstance(t, Tensor)]
    if len(dtypes) == 2 and dtypes[0] != dtypes[1]:
        raise DTypeError(
            f"{name}: operand dtypes differ: {dtypes[0]} vs {dtypes[1]}; cast one first"
        )
    like = dtypes[0]
    return compute(shape, lambda *i: fn(_read(a, i, like), _read(b, i, like)), name=name, tag=tag)


def add(a: Operand, b: Operand, name: str = "add") -> Tensor:
    """``a + b`` with broadcasting."""
    return _binary(a, b, op.add, name, "elemwise")


def subtract(a: Operand, b: Operand, name: str = "subtract") -> Tensor:
    return _binary(a, b, op.sub, name, "elemwise")


def multiply(a: Operand, b: Operand, name: str = "multiply") -> Tensor:
    return _binary(a, b, op.mul, name, "elemwise")


def maximum(a: Operand, b: Operand, name: str = "maximum") -> Tensor:
    return _binary(a, b, op.maximum, name, "elemwise")


def minimum(a: Operand, b: Operand, name: str = "minimum") -> Tensor:
    return _binary(a, b, op.minimum, name, "elemwise")


def _unary(x: Tensor, fn: Callable[[Expr], Expr], name: str, tag: str = "elemwise") -> Tensor:
    return compute(x.shape, lambda *i: fn(x(*i)), name=name, tag=tag)


def relu(x: Tensor, name: str = "relu") -> Tensor:
    """``max(x, 0)``."""
    return _unary(x, lambda v: op.maximum(v, 0), name)


def clip(x: Tensor, lo: int | float, hi: int | float, name: str = "clip") -> Tensor:
    """``min(max(x, lo), hi)``."""
    if lo > hi:
        raise ShapeError(f"{name}: lower bound {lo} exceeds upper bound {hi}")
    return _unary(x, lambda v: op.minimum(op.maximum(v, lo), hi), name)


def right_shift(x: Tensor, shift: int, name: str = "right_shift") -> Tensor:
    """Arithmetic shift right of an integer tensor (the accelerator's SHR)."""
    if not x.dtype.is_int:
        raise DTypeError(f"{name}: needs an integer tensor, {x.name} is {x.dtype}")
    return _unary(x, lambda v: v >> shift, name)


def left_shift(x: Tensor, shift: int, name: str = "left_shift") -> Tensor:
    if not x.dtype.is_int:
        raise DTypeError(f"{name}: needs an integer tensor, {x.name} is {x.dtype}")
    return _unary(x, lambda v: v << shift, name)


def cast(x: Tensor, dtype: DType | str, name: str = "cast") -> Tensor:
    """Convert every element (integer narrowing wraps, float to int truncates)."""
    return _unary(x, lambda v: v.astype(dtype), name)


def requantize(
    x: Tensor,
    shift: int,
    multiplier: int = 1,
    out_dtype: DType | str = "int8",
    round_half_up: bool = False,
    name: str = "requantize",
) -> Tensor:
    """``clip((x * multiplier [+ 2**(shift-1)]) >> shift)`` cast to ``out_dtype``.

    With ``multiplier == 1`` this is the accelerator's shift-and-clip (products stay int32);
    otherwise the product is formed in int64 so it cannot overflow.
    """
    if x.dtype.name != "int32":
        raise DTypeError(f"{name}: expects an int32 accumulator, {x.name} is {x.dtype}")
    if shift < 0 or shift > 31:
        raise ShapeError(f"{name}: shift must be in [0, 31], got {shift}")
    out = as_dtype(out_dtype)
    lo, hi = int(out.min_value), int(out.max_value)

    def fn(v: Expr) -> Expr:
        if multiplier != 1:
            v = v.astype("int64") * multiplier
        if round_half_up and shift > 0:
            v = v + (1 << (shift - 1))
        v = v >> shift
        v = op.minimum(op.maximum(v, lo), hi)
        return v.astype(out)

    return _unary(x, fn, name, tag="requantize")
