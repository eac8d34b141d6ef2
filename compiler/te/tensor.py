"""Tensors, operations and iteration variables of the tensor expression language.

A :class:`Tensor` is the output of an :class:`Operation`: a :class:`PlaceholderOp` (an input) or a
:class:`ComputeOp` (``out[axis] = body``). Reading a tensor inside a body builds a
:class:`TensorRead`; reductions are :class:`Reduce` expressions over reduction axes.

Example:
    >>> from compiler import te
    >>> A = te.placeholder((4, 8), "float32", name="A")
    >>> B = te.compute((4, 8), lambda i, j: A[i, j] * 2.0, name="B")
    >>> B.shape, B.op.input_tensors() == [A]
    ((4, 8), True)
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from compiler.errors import DTypeError, ShapeError
from compiler.ir import op
from compiler.ir.dtype import DType, as_dtype
from compiler.ir.expr import Expr, IntImm, Var, const
from compiler.ir.functor import visit
from compiler.ir.node import Node, node


class IterKind(enum.Enum):
    DATA_PAR = "data_par"
    REDUCE = "reduce"


@dataclass(frozen=True, eq=False)
class IterVar:
    """An iteration axis: a variable with a domain ``[min, min + extent)`` and a kind.

    Compares by identity: each axis of each operation is a distinct object.

    Example:
        >>> from compiler import te
        >>> k = te.reduce_axis(16, name="k")
        >>> k.kind.value, k.extent
        ('reduce', 16)
    """

    var: Var
    min: int
    extent: int
    kind: IterKind = IterKind.DATA_PAR

    @property
    def name(self) -> str:
        return self.var.name

    @property
    def is_reduce(self) -> bool:
        return self.kind is IterKind.REDUCE

    def __repr__(self) -> str:
        return f"IterVar({self.name}: [{self.min}, {self.min + self.extent}) {self.kind.value})"

    # Arithmetic on an axis is arithmetic on its variable (as in TVM).
    def __add__(self, other: Any) -> Expr:
        return self.var + other

    def __radd__(self, other: Any) -> Expr:
        return other + self.var

    def __sub__(self, other: Any) -> Expr:
        return self.var - other

    def __rsub__(self, other: Any) -> Expr:
        return other - self.var

    def __mul__(self, other: Any) -> Expr:
        return self.var * other

    def __rmul__(self, other: Any) -> Expr:
        return other * self.var

    def __floordiv__(self, other: Any) -> Expr:
        return self.var // other

    def __mod__(self, other: Any) -> Expr:
        return self.var % other

    def __neg__(self) -> Expr:
        return -self.var

    def __lt__(self, other: Any) -> Expr:
        return self.var < other

    def __le__(self, other: Any) -> Expr:
        return self.var <= other

    def __gt__(self, other: Any) -> Expr:
        return self.var > other

    def __ge__(self, other: Any) -> Expr:
        return self.var >= other


def _as_index(value: Any, what: str) -> Expr:
    if isinstance(value, IterVar):
        return value.var
    if isinstance(value, bool):
        raise DTypeError(f"{what}: index must be an integer expression, got a bool")
    if isinstance(value, int):
        return const(value)
    if isinstance(value, Expr):
        if not value.dtype.is_int or value.dtype.lanes != 1:
            raise DTypeError(f"{what}: index {value!r} has dtype {value.dtype}, need an integer")
        return value
    raise DTypeError(f"{what}: cannot use {value!r} as an index")


class Operation:
    """Base of operations. ``name`` is the name of the output tensor."""

    name: str
    tag: str
    attrs: dict[str, Any]

    def output(self, index: int = 0) -> Tensor:
        if index != 0:
            raise ShapeError(f"operation {self.name} has a single output")
        return Tensor(self)

    @property
    def shape(self) -> tuple[int, ...]:
        raise NotImplementedError

    @property
    def dtype(self) -> DType:
        raise NotImplementedError

    def input_tensors(self) -> list[Tensor]:
        return []


@dataclass(frozen=True, eq=False)
class Tensor:
    """The output of an operation; index it to read it inside another computation."""

    op: Operation

    @property
    def shape(self) -> tuple[int, ...]:
        return self.op.shape

    @property
    def dtype(self) -> DType:
        return self.op.dtype

    @property
    def name(self) -> str:
        return self.op.name

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __hash__(self) -> int:
        return hash(("Tensor", id(self.op)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Tensor) and other.op is self.op

    def __getitem__(self, indices: Any) -> Expr:
        if not isinstance(indices, tuple):
            indices = (indices,)
        return self(*indices)

    def __call__(self, *indices: Any) -> Expr:
        if len(indices) != self.ndim:
            raise ShapeError(
                f"tensor {self.name} has {self.ndim} dimensions {self.shape} but is indexed "
                f"with {len(indices)} indices"
            )
        idx = tuple(_as_index(i, f"index {k} of {self.name}") for k, i in enumerate(indices))
        return TensorRead(self, idx)

    def __repr__(self) -> str:
        return f"Tensor({self.name}: {self.dtype}{list(self.shape)})"


@dataclass(frozen=True, eq=False)
class PlaceholderOp(Operation):
    """An input tensor of fixed shape and dtype."""

    name: str
    shape_: tuple[int, ...]
    dtype_: DType
    tag: str = "placeholder"
    attrs: dict[str, Any] = field(default_factory=dict)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.shape_

    @property
    def dtype(self) -> DType:
        return self.dtype_


@dataclass(frozen=True, eq=False)
class ComputeOp(Operation):
    """``name[axis] = body``; ``body`` may be a :class:`Reduce` over ``reduce_axis``."""

    name: str
    axis: tuple[IterVar, ...]
    reduce_axis: tuple[IterVar, ...]
    body: Expr
    tag: str = ""
    attrs: dict[str, Any] = field(default_factory=dict)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(iv.extent for iv in self.axis)

    @property
    def dtype(self) -> DType:
        return self.body.dtype

    @property
    def is_reduction(self) -> bool:
        return isinstance(self.body, Reduce)

    def input_tensors(self) -> list[Tensor]:
        found: dict[Tensor, None] = {}

        def fn(n: Node) -> None:
            if isinstance(n, TensorRead):
                found.setdefault(n.tensor, None)

        visit(self.body, fn)
        return list(found)

    def __repr__(self) -> str:
        return f"ComputeOp({self.name})"


@node
class TensorRead(Expr):
    """``tensor[indices]`` inside a tensor expression (a producer access)."""

    tensor: Tensor
    indices: tuple[Expr, ...]

    @property
    def dtype(self) -> DType:  # type: ignore[override]
        return self.tensor.dtype

    def print_with(self, printer: Any) -> str:
        return f"{self.tensor.name}[{', '.join(printer.expr(i) for i in self.indices)}]"


@dataclass(frozen=True)
class Combiner:
    """A commutative reduction: ``combine(acc, x)`` with neutral element ``identity(dtype)``."""

    name: str
    combine: Callable[[Expr, Expr], Expr] = field(compare=False)
    identity: Callable[[DType], Expr] = field(compare=False)


SUM = Combiner("sum", op.add, lambda dt: const(0, dt))
MAX = Combiner("max", op.maximum, op.min_value)
MIN = Combiner("min", op.minimum, op.max_value)


@node
class Reduce(Expr):
    """``combiner`` over ``axis`` of ``source`` where ``condition`` holds."""

    combiner: Combiner
    source: Expr
    axis: tuple[IterVar, ...]
    condition: Expr | None = None

    @property
    def dtype(self) -> DType:  # type: ignore[override]
        return self.source.dtype

    def print_with(self, printer: Any) -> str:
        axes = ", ".join(printer.name_of(a.var) for a in self.axis)
        text = f"{self.combiner.name}({printer.expr(self.source)}, axis=[{axes}]"
        if self.condition is not None:
            text += f", where={printer.expr(self.condition)}"
        return text + ")"


def as_shape(shape: Any, what: str) -> tuple[int, ...]:
    """Validate a static shape (positive ints)."""
    if isinstance(shape, int | IntImm):
        shape = (shape,)
    dims = []
    for k, s in enumerate(shape):
        if isinstance(s, IntImm):
            s = s.value
        if isinstance(s, bool) or not isinstance(s, int):
            raise ShapeError(f"{what}: dimension {k} must be a positive int, got {s!r}")
        if s <= 0:
            raise ShapeError(f"{what}: dimension {k} must be positive, got {s} in {tuple(shape)}")
        dims.append(int(s))
    return tuple(dims)


def check_dtype(dtype: DType | str, what: str) -> DType:
    dt = as_dtype(dtype)
    if dt.lanes != 1:
        raise DTypeError(f"{what}: tensor dtype must be scalar, got {dt}")
    return dt
