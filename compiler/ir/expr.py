"""Expression nodes shared by tensor expressions and the loop IR.

Python operators build nodes (``a + b`` is ``Add(a, b)``; ``a < b`` is ``LT(a, b)``; ``a // b`` and
``a % b`` are floor division and floor modulo). ``==`` stays structural equality so nodes can be
dictionary keys: use :func:`compiler.ir.op.equal` / ``not_equal`` for symbolic comparisons.
Using an expression as a Python ``bool`` raises, which catches ``if i < n:`` written by mistake.

Example:
    >>> i = Var("i")
    >>> (i * 4 + 1) < 16
    i*4 + 1 < 16
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeGuard

import numpy as np

from compiler.errors import DTypeError
from compiler.ir.dtype import INDEX, DType, as_dtype, bool_, float32, int32
from compiler.ir.node import Node, node

if TYPE_CHECKING:
    from compiler.ir.buffer import Buffer

_uids = itertools.count(1)


def next_uid() -> int:
    """A process-wide unique id for variables and buffers."""
    return next(_uids)


class Expr(Node):
    """Base of all expressions; every expression has a ``dtype``."""

    dtype: DType

    def __bool__(self) -> bool:
        raise TypeError(
            f"the symbolic expression {self!r} has no truth value; "
            "use compiler.te.if_then_else / all_of instead of Python 'if'/'and'"
        )

    # Arithmetic -----------------------------------------------------------------------------
    def __add__(self, other: Any) -> Expr:
        return _op.add(self, other)

    def __radd__(self, other: Any) -> Expr:
        return _op.add(other, self)

    def __sub__(self, other: Any) -> Expr:
        return _op.sub(self, other)

    def __rsub__(self, other: Any) -> Expr:
        return _op.sub(other, self)

    def __mul__(self, other: Any) -> Expr:
        return _op.mul(self, other)

    def __rmul__(self, other: Any) -> Expr:
        return _op.mul(other, self)

    def __truediv__(self, other: Any) -> Expr:
        return _op.div(self, other)

    def __rtruediv__(self, other: Any) -> Expr:
        return _op.div(other, self)

    def __floordiv__(self, other: Any) -> Expr:
        return _op.floordiv(self, other)

    def __rfloordiv__(self, other: Any) -> Expr:
        return _op.floordiv(other, self)

    def __mod__(self, other: Any) -> Expr:
        return _op.floormod(self, other)

    def __rmod__(self, other: Any) -> Expr:
        return _op.floormod(other, self)

    def __neg__(self) -> Expr:
        return _op.neg(self)

    def __lshift__(self, other: Any) -> Expr:
        return _op.shift_left(self, other)

    def __rshift__(self, other: Any) -> Expr:
        return _op.shift_right(self, other)

    # Comparisons and logic ------------------------------------------------------------------
    def __lt__(self, other: Any) -> Expr:
        return _op.less(self, other)

    def __le__(self, other: Any) -> Expr:
        return _op.less_equal(self, other)

    def __gt__(self, other: Any) -> Expr:
        return _op.greater(self, other)

    def __ge__(self, other: Any) -> Expr:
        return _op.greater_equal(self, other)

    def __and__(self, other: Any) -> Expr:
        return _op.logical_and(self, other)

    def __rand__(self, other: Any) -> Expr:
        return _op.logical_and(other, self)

    def __or__(self, other: Any) -> Expr:
        return _op.logical_or(self, other)

    def __ror__(self, other: Any) -> Expr:
        return _op.logical_or(other, self)

    def __invert__(self) -> Expr:
        return _op.logical_not(self)

    def astype(self, dtype: DType | str) -> Expr:
        """Cast to ``dtype`` (int narrowing wraps, float to int truncates toward zero).

        Example:
            >>> Var("x", "int32").astype("int8").dtype
            DType('int8')
        """
        return _op.cast(dtype, self)


# Leaves --------------------------------------------------------------------------------------


@node
class Var(Expr):
    """A scalar variable: a loop index, a let-bound value or a reduction axis.

    Example:
        >>> Var("i").dtype
        DType('int32')
    """

    name: str
    dtype: DType = INDEX
    uid: int = field(default_factory=next_uid)

    def __post_init__(self) -> None:
        if not isinstance(self.dtype, DType):
            object.__setattr__(self, "dtype", as_dtype(self.dtype))


def _wrap_int(value: int, dtype: DType) -> int:
    if dtype.is_bool:
        return 1 if value else 0
    bits = dtype.bits
    value &= (1 << bits) - 1
    if dtype.is_signed and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


@node
class IntImm(Expr):
    """An integer (or bool) constant; the value is wrapped into the dtype's range.

    Example:
        >>> IntImm(300, as_dtype("int8")).value
        44
    """

    value: int
    dtype: DType = int32

    def __post_init__(self) -> None:
        value = self.value
        if self.dtype is int32 and type(value) is int and -0x80000000 <= value <= 0x7FFFFFFF:
            return  # the common case, already in range (lowering builds thousands)
        dtype = self.dtype if isinstance(self.dtype, DType) else as_dtype(self.dtype)
        if not (dtype.is_int or dtype.is_bool) or dtype.lanes != 1:
            raise DTypeError(f"IntImm needs a scalar integer dtype, got {dtype}")
        object.__setattr__(self, "dtype", dtype)
        object.__setattr__(self, "value", _wrap_int(int(self.value), dtype))


@node
class FloatImm(Expr):
    """A floating-point constant, rounded to its dtype's precision."""

    value: float
    dtype: DType = float32

    def __post_init__(self) -> None:
        dtype = self.dtype if isinstance(self.dtype, DType) else as_dtype(self.dtype)
        if not dtype.is_float or dtype.lanes != 1:
            raise DTypeError(f"FloatImm needs a scalar float dtype, got {dtype}")
        object.__setattr__(self, "dtype", dtype)
        value = float(self.value)
        if dtype.bits == 32 and math.isfinite(value):
            value = float(np.float32(value))
        object.__setattr__(self, "value", value)

    def __eq__(self, other: object) -> bool:
        # the same constant bit for bit: 0.0 and -0.0 are two expressions (1 / x tells them
        # apart), and NaN is itself, so caches keyed by expressions never mix them up
        if type(other) is not FloatImm:
            return NotImplemented
        return self.dtype == other.dtype and _float_key(self.value) == _float_key(other.value)


def _float_key(value: float) -> tuple[bool, bool, float]:
    return (math.isnan(value), math.copysign(1.0, value) < 0, 0.0 if math.isnan(value) else value)


# Arithmetic ----------------------------------------------------------------------------------


class BinaryOp(Expr):
    """Base of two-operand arithmetic; the result has the operands' dtype."""

    a: Expr
    b: Expr

    @property
    def dtype(self) -> DType:  # type: ignore[override]
        # kept on the node: asked of every operand of every sum the simplifier rebuilds, and
        # an operand's own is its left operand's, down the whole chain
        fields = self.__dict__
        dtype = fields.get("_dtype")
        if dtype is None:
            dtype = fields["_dtype"] = self.a.dtype
        return dtype


@node
class Add(BinaryOp):
    a: Expr
    b: Expr


@node
class Sub(BinaryOp):
    a: Expr
    b: Expr


@node
class Mul(BinaryOp):
    a: Expr
    b: Expr


@node
class Div(BinaryOp):
    """True division; floats only."""

    a: Expr
    b: Expr


@node
class FloorDiv(BinaryOp):
    """Integer division rounding toward minus infinity (Python ``//``)."""

    a: Expr
    b: Expr


@node
class FloorMod(BinaryOp):
    """Integer remainder with the sign of the divisor (Python ``%``)."""

    a: Expr
    b: Expr


@node
class Min(BinaryOp):
    a: Expr
    b: Expr


@node
class Max(BinaryOp):
    a: Expr
    b: Expr


@node
class ShiftLeft(BinaryOp):
    a: Expr
    b: Expr


@node
class ShiftRight(BinaryOp):
    """Arithmetic shift for signed integers, logical for unsigned."""

    a: Expr
    b: Expr


# Comparisons and logic -----------------------------------------------------------------------


class CmpOp(Expr):
    """Base of comparisons; the result is bool with the operands' lane count."""

    a: Expr
    b: Expr

    @property
    def dtype(self) -> DType:  # type: ignore[override]
        return bool_.with_lanes(self.a.dtype.lanes)


@node
class EQ(CmpOp):
    a: Expr
    b: Expr


@node
class NE(CmpOp):
    a: Expr
    b: Expr


@node
class LT(CmpOp):
    a: Expr
    b: Expr


@node
class LE(CmpOp):
    a: Expr
    b: Expr


@node
class GT(CmpOp):
    a: Expr
    b: Expr


@node
class GE(CmpOp):
    a: Expr
    b: Expr


@node
class And(Expr):
    a: Expr
    b: Expr

    @property
    def dtype(self) -> DType:  # type: ignore[override]
        return self.a.dtype


@node
class Or(Expr):
    a: Expr
    b: Expr

    @property
    def dtype(self) -> DType:  # type: ignore[override]
        return self.a.dtype


@node
class Not(Expr):
    a: Expr

    @property
    def dtype(self) -> DType:  # type: ignore[override]
        return self.a.dtype


#: The expression classes with two operands ``a`` and ``b``, for ``isinstance``.
TWO_OPERANDS = (BinaryOp, CmpOp, And, Or)


# Other expressions ---------------------------------------------------------------------------


@node
class Cast(Expr):
    """Convert ``value`` to ``dtype`` (same lane count)."""

    dtype: DType
    value: Expr


@node
class IfThenElse(Expr):
    """``then_value`` if ``cond`` else ``else_value``; only the taken branch is evaluated.

    The laziness matters: padding reads ``A[i - 1]`` in the branch guarded by ``i >= 1``.
    """

    cond: Expr
    then_value: Expr
    else_value: Expr

    @property
    def dtype(self) -> DType:  # type: ignore[override]
        return self.then_value.dtype


@dataclass(frozen=True)
class CallOp:
    """A named intrinsic function that a :class:`Call` invokes (e.g. ``exp``).

    ``pure`` calls have no side effect and may be evaluated speculatively.
    """

    name: str
    pure: bool = True

    def __repr__(self) -> str:
        return f"CallOp({self.name!r})"


EXP = CallOp("exp")
LOG = CallOp("log")
SQRT = CallOp("sqrt")
TANH = CallOp("tanh")
FABS = CallOp("fabs")
#: True if any lane of a bool vector is true (a scalar bool).
REDUCE_OR = CallOp("reduce_or")
#: The element index a ``BufferLoad`` argument refers to, without reading it: how intrinsics
#: name an operand's position in a buffer (TVM's ``address_of``). Passes that rewrite buffer
#: accesses (flattening, virtual-thread expansion) rewrite the load inside it too.
ADDRESS_OF = CallOp("address_of")

#: Math intrinsics every CPU target implements, by name.
MATH_OPS = {op.name: op for op in (EXP, LOG, SQRT, TANH, FABS)}


@node
class Call(Expr):
    """A call of an intrinsic ``op`` with ``args``, returning ``dtype``."""

    op: CallOp
    args: tuple[Expr, ...]
    dtype: DType


@node
class Ramp(Expr):
    """The vector ``[base, base + stride, ..., base + (lanes - 1) * stride]``."""

    base: Expr
    stride: Expr
    lanes: int

    @property
    def dtype(self) -> DType:  # type: ignore[override]
        return self.base.dtype.with_lanes(self.lanes)


@node
class Broadcast(Expr):
    """A scalar ``value`` replicated into ``lanes`` lanes."""

    value: Expr
    lanes: int

    @property
    def dtype(self) -> DType:  # type: ignore[override]
        return self.value.dtype.with_lanes(self.lanes)


@node
class BufferLoad(Expr):
    """Read ``buffer[indices]``; with a vector ``predicate``, masked-off lanes are not read."""

    buffer: Buffer
    indices: tuple[Expr, ...]
    predicate: Expr | None = None

    @property
    def dtype(self) -> DType:  # type: ignore[override]
        lanes = max((i.dtype.lanes for i in self.indices), default=1)
        return self.buffer.dtype.with_lanes(lanes)


def is_const_int(expr: object, value: int | None = None) -> TypeGuard[IntImm]:
    """True if ``expr`` is an integer constant (equal to ``value`` when given).

    Example:
        >>> is_const_int(IntImm(4), 4)
        True
    """
    return (
        isinstance(expr, IntImm)
        and not expr.dtype.is_bool
        and (value is None or expr.value == value)
    )


def const(value: int | float | bool, dtype: DType | str | None = None) -> Expr:
    """A constant of ``dtype`` (inferred from the Python type when omitted).

    Example:
        >>> const(2.5).dtype
        DType('float32')
        >>> const(7, "int8")
        int8(7)
    """
    if dtype is None:
        if isinstance(value, bool | np.bool_):
            dtype = bool_
        elif isinstance(value, int | np.integer):
            dtype = int32
        else:
            dtype = float32
    dtype = as_dtype(dtype)
    if dtype.is_float:
        return FloatImm(float(value), dtype)
    if isinstance(value, float) and not float(value).is_integer():
        raise DTypeError(f"constant {value} is not an integer but the dtype is {dtype}")
    return IntImm(int(value), dtype)


# The operators above build through compiler.ir.op, which imports this module: bound here, at
# the end, once (an import statement inside each operator cost a lookup per call).
from compiler.ir import op as _op  # noqa: E402
