"""Builders for expressions: dtype checking, constant conversion and constant folding.

Operands must have the same dtype; Python numbers take the dtype of the other operand. A dtype
mismatch raises :class:`DTypeError` naming both dtypes (insert an explicit ``astype``).

Example:
    >>> from compiler.ir.expr import Var
    >>> x = Var("x", "int8")
    >>> add(x, 1).dtype
    DType('int8')
    >>> add(x, Var("y", "int32"))
    Traceback (most recent call last):
    compiler.errors.DTypeError: add: operand dtypes differ: int8 vs int32; use .astype() ...
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from compiler.errors import DTypeError
from compiler.ir import expr as E
from compiler.ir.dtype import DType, as_dtype, bool_
from compiler.ir.expr import Expr, FloatImm, IntImm

ExprLike = Expr | int | float | bool


def convert(value: ExprLike, like: DType | None = None) -> Expr:
    """Turn a Python number into a constant (of ``like``'s element type when given).

    Example:
        >>> convert(3, as_dtype("float32"))
        3.0f
    """
    if isinstance(value, Expr):
        return value
    axis_var = getattr(value, "var", None)
    if isinstance(axis_var, E.Var):
        return axis_var  # an iteration axis stands for its variable
    if isinstance(value, bool | np.bool_):
        return IntImm(int(value), bool_)
    if isinstance(value, int | float | np.integer | np.floating):
        if like is None:
            return E.const(value)
        elem = like.element
        if elem.is_bool:
            return E.const(value)
        if elem.is_int and isinstance(value, float | np.floating) and not float(value).is_integer():
            raise DTypeError(f"constant {value} cannot be used with {elem} operands")
        if elem.is_int and not (elem.min_value <= int(value) <= elem.max_value):
            raise DTypeError(f"constant {value} does not fit in {elem}")
        return E.const(value, elem)
    raise DTypeError(f"cannot convert {value!r} ({type(value).__name__}) to an expression")


def _match(a: ExprLike, b: ExprLike, name: str) -> tuple[Expr, Expr]:
    if isinstance(a, Expr) and not isinstance(b, Expr):
        b = convert(b, a.dtype)
    elif isinstance(b, Expr) and not isinstance(a, Expr):
        a = convert(a, b.dtype)
    else:
        a, b = convert(a), convert(b)
    assert isinstance(a, Expr) and isinstance(b, Expr)
    if a.dtype.lanes != b.dtype.lanes:
        if a.dtype.lanes == 1:
            a = E.Broadcast(a, b.dtype.lanes)
        elif b.dtype.lanes == 1:
            b = E.Broadcast(b, a.dtype.lanes)
    if a.dtype != b.dtype:
        raise DTypeError(
            f"{name}: operand dtypes differ: {a.dtype} vs {b.dtype}; "
            f"use .astype() to convert one of {a!r} and {b!r}"
        )
    return a, b


def _fold_int(fn: Callable[[int, int], int], a: Expr, b: Expr) -> Expr | None:
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return IntImm(fn(a.value, b.value), a.dtype)
    return None


def _fold_float(fn: Callable[[Any, Any], Any], a: Expr, b: Expr) -> Expr | None:
    # ``fn`` runs on Python floats, or on numpy float32 scalars to round as float32 does.
    if isinstance(a, FloatImm) and isinstance(b, FloatImm):
        if a.dtype.bits == 32:
            with np.errstate(all="ignore"):
                value = float(fn(np.float32(a.value), np.float32(b.value)))
        else:
            value = fn(a.value, b.value)
        return FloatImm(value, a.dtype)
    return None


def _fold(
    fn_int: Callable[[int, int], int], fn_float: Callable[[float, float], float], a: Expr, b: Expr
) -> Expr | None:
    folded = _fold_int(fn_int, a, b)
    return folded if folded is not None else _fold_float(fn_float, a, b)


def _numeric(a: Expr, name: str, allow_bool: bool = False) -> None:
    if a.dtype.is_bool and not allow_bool:
        raise DTypeError(f"{name}: operands must be numeric, got bool expression {a!r}")


def add(a: ExprLike, b: ExprLike) -> Expr:
    """``a + b``; folds constants and ``x + 0``."""
    a, b = _match(a, b, "add")
    _numeric(a, "add")
    folded = _fold(operator.add, operator.add, a, b)
    if folded is not None:
        return folded
    if E.is_const_int(b, 0):
        return a
    if E.is_const_int(a, 0):
        return b
    return E.Add(a, b)


def sub(a: ExprLike, b: ExprLike) -> Expr:
    """``a - b``; folds constants and ``x - 0``."""
    a, b = _match(a, b, "sub")
    _numeric(a, "sub")
    folded = _fold(operator.sub, operator.sub, a, b)
    if folded is not None:
        return folded
    if E.is_const_int(b, 0):
        return a
    return E.Sub(a, b)


def mul(a: ExprLike, b: ExprLike) -> Expr:
    """``a * b``; folds constants, ``x * 1`` and integer ``x * 0``."""
    a, b = _match(a, b, "mul")
    _numeric(a, "mul")
    folded = _fold(operator.mul, operator.mul, a, b)
    if folded is not None:
        return folded
    if E.is_const_int(b, 1):
        return a
    if E.is_const_int(a, 1):
        return b
    if E.is_const_int(a, 0) or E.is_const_int(b, 0):
        return (
            IntImm(0, a.dtype)
            if a.dtype.lanes == 1
            else E.Broadcast(IntImm(0, a.dtype.element), a.dtype.lanes)
        )
    return E.Mul(a, b)


def neg(a: ExprLike) -> Expr:
    a = convert(a)
    return (
        sub(convert(0, a.dtype), a)
        if a.dtype.lanes == 1
        else sub(E.Broadcast(convert(0, a.dtype), a.dtype.lanes), a)
    )


def div(a: ExprLike, b: ExprLike) -> Expr:
    """True division of floats. Integers must use ``//`` (floor) explicitly."""
    a, b = _match(a, b, "div")
    if not a.dtype.is_float:
        raise DTypeError(f"'/' needs float operands, got {a.dtype}; use '//' for floor division")
    folded = (
        _fold_float(operator.truediv, a, b)
        if not (isinstance(b, FloatImm) and b.value == 0)
        else None
    )
    return folded if folded is not None else E.Div(a, b)


def _floordiv_int(x: int, y: int) -> int:
    return x // y


def floordiv(a: ExprLike, b: ExprLike) -> Expr:
    """Integer division rounding toward minus infinity."""
    a, b = _match(a, b, "floordiv")
    if not a.dtype.is_int:
        raise DTypeError(f"'//' needs integer operands, got {a.dtype}")
    if E.is_const_int(b, 0):
        raise ZeroDivisionError(f"floor division of {a!r} by zero")
    folded = _fold_int(_floordiv_int, a, b)
    if folded is not None:
        return folded
    if E.is_const_int(b, 1):
        return a
    return E.FloorDiv(a, b)


def floormod(a: ExprLike, b: ExprLike) -> Expr:
    """Integer remainder with the sign of the divisor."""
    a, b = _match(a, b, "floormod")
    if not a.dtype.is_int:
        raise DTypeError(f"'%' needs integer operands, got {a.dtype}")
    if E.is_const_int(b, 0):
        raise ZeroDivisionError(f"floor modulo of {a!r} by zero")
    folded = _fold_int(operator.mod, a, b)
    if folded is not None:
        return folded
    if E.is_const_int(b, 1):
        return IntImm(0, a.dtype)
    return E.FloorMod(a, b)


def minimum(a: ExprLike, b: ExprLike) -> Expr:
    """Elementwise minimum."""
    a, b = _match(a, b, "min")
    _numeric(a, "min")
    folded = _fold(min, min, a, b)
    if folded is not None:
        return folded
    if a == b:
        return a
    return E.Min(a, b)


def maximum(a: ExprLike, b: ExprLike) -> Expr:
    """Elementwise maximum."""
    a, b = _match(a, b, "max")
    _numeric(a, "max")
    folded = _fold(max, max, a, b)
    if folded is not None:
        return folded
    if a == b:
        return a
    return E.Max(a, b)


def shift_left(a: ExprLike, b: ExprLike) -> Expr:
    """``a << b`` on integers."""
    a, b = _match(a, b, "shift_left")
    if not a.dtype.is_int:
        raise DTypeError(f"'<<' needs integer operands, got {a.dtype}")
    folded = _fold_int(operator.lshift, a, b) if E.is_const_int(b) and b.value >= 0 else None
    if folded is not None:
        return folded
    return a if E.is_const_int(b, 0) else E.ShiftLeft(a, b)


def shift_right(a: ExprLike, b: ExprLike) -> Expr:
    """``a >> b`` on integers: arithmetic for signed, logical for unsigned."""
    a, b = _match(a, b, "shift_right")
    if not a.dtype.is_int:
        raise DTypeError(f"'>>' needs integer operands, got {a.dtype}")
    folded = _fold_int(operator.rshift, a, b) if E.is_const_int(b) and b.value >= 0 else None
    if folded is not None:
        return folded
    return a if E.is_const_int(b, 0) else E.ShiftRight(a, b)


def _compare(
    cls: type, fn: Callable[[Any, Any], bool], name: str, a: ExprLike, b: ExprLike
) -> Expr:
    a, b = _match(a, b, name)
    if isinstance(a, IntImm | FloatImm) and isinstance(b, IntImm | FloatImm):
        return IntImm(int(fn(a.value, b.value)), bool_)
    return cls(a, b)


def equal(a: ExprLike, b: ExprLike) -> Expr:
    """Symbolic ``a == b`` (Python ``==`` on nodes is structural equality)."""
    return _compare(E.EQ, operator.eq, "equal", a, b)


def not_equal(a: ExprLike, b: ExprLike) -> Expr:
    """Symbolic ``a != b``."""
    return _compare(E.NE, operator.ne, "not_equal", a, b)


def less(a: ExprLike, b: ExprLike) -> Expr:
    return _compare(E.LT, operator.lt, "less", a, b)


def less_equal(a: ExprLike, b: ExprLike) -> Expr:
    return _compare(E.LE, operator.le, "less_equal", a, b)


def greater(a: ExprLike, b: ExprLike) -> Expr:
    return _compare(E.GT, operator.gt, "greater", a, b)


def greater_equal(a: ExprLike, b: ExprLike) -> Expr:
    return _compare(E.GE, operator.ge, "greater_equal", a, b)


def _as_bool(a: ExprLike, name: str) -> Expr:
    a = convert(a)
    if not a.dtype.is_bool:
        raise DTypeError(f"{name}: operands must be bool, got {a.dtype} in {a!r}")
    return a


def logical_and(a: ExprLike, b: ExprLike) -> Expr:
    """``a & b`` on bool expressions; folds constants."""
    a, b = _as_bool(a, "and"), _as_bool(b, "and")
    for x, y in ((a, b), (b, a)):
        if isinstance(x, IntImm):
            return y if x.value else x
    return E.And(a, b)


def logical_or(a: ExprLike, b: ExprLike) -> Expr:
    """``a | b`` on bool expressions; folds constants."""
    a, b = _as_bool(a, "or"), _as_bool(b, "or")
    for x, y in ((a, b), (b, a)):
        if isinstance(x, IntImm):
            return x if x.value else y
    return E.Or(a, b)


def logical_not(a: ExprLike) -> Expr:
    a = _as_bool(a, "not")
    if isinstance(a, IntImm):
        return IntImm(1 - a.value, bool_)
    if isinstance(a, E.Not):
        return a.a
    return E.Not(a)


def all_of(*conds: ExprLike) -> Expr:
    """Conjunction of conditions (true when empty).

    Example:
        >>> from compiler.ir.expr import Var
        >>> i = Var("i")
        >>> all_of(i >= 1, i < 9)
        i >= 1 and i < 9
    """
    out: Expr = IntImm(1, bool_)
    for c in conds:
        out = logical_and(out, c)
    return out


def any_of(*conds: ExprLike) -> Expr:
    """Disjunction of conditions (false when empty)."""
    out: Expr = IntImm(0, bool_)
    for c in conds:
        out = logical_or(out, c)
    return out


def _cast_const(dtype: DType, value: Expr) -> Expr | None:
    if not isinstance(value, IntImm | FloatImm) or dtype.lanes != 1:
        return None
    if dtype.is_float:
        return FloatImm(float(value.value), dtype)
    v = value.value
    if isinstance(v, float):
        if not math.isfinite(v):
            return None
        v = math.trunc(v)
    return IntImm(int(v), dtype)


def cast(dtype: DType | str, value: ExprLike) -> Expr:
    """Convert ``value`` to ``dtype``. Integer narrowing wraps; float to int truncates.

    Example:
        >>> from compiler.ir.expr import const
        >>> cast("int8", const(200, "int32"))
        int8(-56)
    """
    dtype = as_dtype(dtype)
    value = convert(value)
    if dtype.lanes == 1 and value.dtype.lanes != 1:
        dtype = dtype.with_lanes(value.dtype.lanes)
    if dtype.lanes != value.dtype.lanes:
        raise DTypeError(f"cast of {value.dtype} to {dtype}: lane counts differ")
    if dtype == value.dtype:
        return value
    folded = _cast_const(dtype, value)
    return folded if folded is not None else E.Cast(dtype, value)


def if_then_else(cond: ExprLike, then_value: ExprLike, else_value: ExprLike) -> Expr:
    """``then_value`` where ``cond`` holds, else ``else_value``; lazy in the untaken branch.

    Example:
        >>> from compiler.ir.expr import Var
        >>> i = Var("i")
        >>> if_then_else(i >= 1, 1.0, 0.0).dtype
        DType('float32')
    """
    if isinstance(cond, bool):
        raise DTypeError(
            "if_then_else got a Python bool as condition; build it with compiler.te.equal / "
            "comparison operators on expressions"
        )
    cond = _as_bool(cond, "if_then_else")
    then_value, else_value = _match(then_value, else_value, "if_then_else")
    if isinstance(cond, IntImm):
        return then_value if cond.value else else_value
    return E.IfThenElse(cond, then_value, else_value)


def call(op: E.CallOp, args: Sequence[ExprLike], dtype: DType | str | None = None) -> Expr:
    """Call an intrinsic; by default the result has the first argument's dtype."""
    conv = tuple(convert(a) for a in args)
    out_dtype = as_dtype(dtype) if dtype is not None else conv[0].dtype
    if op.name in E.MATH_OPS and not out_dtype.is_float:
        raise DTypeError(f"{op.name} needs a float argument, got {out_dtype}")
    return E.Call(op, conv, out_dtype)


def address_of(load: E.BufferLoad) -> Expr:
    """The position of ``load``'s element in its buffer, as an operand of an intrinsic.

    Example:
        >>> from compiler.ir.buffer import Buffer
        >>> A = Buffer("A", (4, 8), "int8")
        >>> address_of(A[1, 0])
        address_of(A[1, 0])
    """
    if not isinstance(load, E.BufferLoad):
        raise DTypeError(f"address_of needs a buffer access, got {load!r}")
    return E.Call(E.ADDRESS_OF, (load,), as_dtype("int32"))


def exp(x: ExprLike) -> Expr:
    """Natural exponential (float)."""
    return call(E.EXP, [x])


def log(x: ExprLike) -> Expr:
    return call(E.LOG, [x])


def sqrt(x: ExprLike) -> Expr:
    return call(E.SQRT, [x])


def tanh(x: ExprLike) -> Expr:
    return call(E.TANH, [x])


def min_value(dtype: DType | str) -> Expr:
    """The smallest value of ``dtype`` (-inf for floats)."""
    dtype = as_dtype(dtype)
    return E.const(dtype.min_value, dtype)


def max_value(dtype: DType | str) -> Expr:
    """The largest value of ``dtype`` (+inf for floats)."""
    dtype = as_dtype(dtype)
    return E.const(dtype.max_value, dtype)
