"""Unary and binary elementwise operators of the graph contract that ``elementwise`` lacks:
division, negation, exp, sqrt, sigmoid and the piecewise-linear activations.

Float only (integer tensors raise a ``DTypeError`` naming the operator), layout-agnostic.

Example:
    >>> from compiler import te
    >>> x = te.placeholder((2, 8), name="x")
    >>> hard_swish(x).shape, sigmoid(x).op.tag
    ((2, 8), 'elemwise')
"""

from __future__ import annotations

from collections.abc import Callable

from compiler.errors import DTypeError, ShapeError
from compiler.ir import op
from compiler.ir.expr import Expr
from compiler.te import compute
from compiler.te.tensor import Tensor
from compiler.topi.elementwise import Operand, _binary


def _float(x: Tensor, name: str) -> None:
    if not x.dtype.is_float:
        raise DTypeError(f"{name}: needs a float tensor, {x.name} is {x.dtype}")


def _unary(x: Tensor, fn: Callable[[Expr], Expr], name: str) -> Tensor:
    _float(x, name)
    return compute(x.shape, lambda *i: fn(x(*i)), name=name, tag="elemwise")


def divide(a: Operand, b: Operand, name: str = "divide") -> Tensor:
    """``a / b`` with broadcasting (floats).

    Example:
        >>> from compiler import te
        >>> divide(te.placeholder((4, 1), name="a"), te.placeholder((3,), name="b")).shape
        (4, 3)
    """
    for t in (a, b):
        if isinstance(t, Tensor):
            _float(t, name)
    return _binary(a, b, op.div, name, "elemwise")


def negative(x: Tensor, name: str = "negative") -> Tensor:
    """``-x``."""
    return _unary(x, op.neg, name)


def exp(x: Tensor, name: str = "exp") -> Tensor:
    """``e ** x``."""
    return _unary(x, op.exp, name)


def sqrt(x: Tensor, name: str = "sqrt") -> Tensor:
    """Square root."""
    return _unary(x, op.sqrt, name)


def sigmoid(x: Tensor, name: str = "sigmoid") -> Tensor:
    """``1 / (1 + exp(-x))``."""
    return _unary(x, lambda v: 1.0 / (1.0 + op.exp(op.neg(v))), name)


def leaky_relu(x: Tensor, alpha: float, name: str = "leaky_relu") -> Tensor:
    """``x`` where positive, ``alpha * x`` elsewhere."""
    return _unary(x, lambda v: op.if_then_else(v > 0.0, v, v * float(alpha)), name)


def hard_sigmoid(x: Tensor, alpha: float, beta: float, name: str = "hard_sigmoid") -> Tensor:
    """``max(0, min(1, alpha * x + beta))``."""
    return _unary(
        x, lambda v: op.maximum(op.minimum(v * float(alpha) + float(beta), 1.0), 0.0), name
    )


def hard_swish(x: Tensor, name: str = "hard_swish") -> Tensor:
    """``x * max(0, min(1, x / 6 + 0.5))``."""
    return _unary(x, lambda v: v * op.maximum(op.minimum(v * (1.0 / 6.0) + 0.5, 1.0), 0.0), name)


def batch_norm(
    x: Tensor,
    scale: Tensor,
    bias: Tensor,
    mean: Tensor,
    var: Tensor,
    epsilon: float = 1e-5,
    name: str = "batch_norm",
) -> Tensor:
    """Inference batch normalization over axis 1:
    ``(x - mean) / sqrt(var + epsilon) * scale + bias``; the four vectors are ``(C,)``.

    Example:
        >>> from compiler import te
        >>> x = te.placeholder((1, 4, 3, 3), name="x")
        >>> v = [te.placeholder((4,), name=n) for n in "sbmv"]
        >>> batch_norm(x, *v).shape
        (1, 4, 3, 3)
    """
    _float(x, name)
    if x.ndim < 2:
        raise ShapeError(f"{name}: needs at least 2 dimensions (channels at axis 1), got {x.shape}")
    c = x.shape[1]
    for t in (scale, bias, mean, var):
        if t.shape != (c,) or t.dtype != x.dtype:
            raise ShapeError(
                f"{name}: {t.name} must be {x.dtype}[{c}] for {x.name}{x.shape}, got "
                f"{t.dtype}{list(t.shape)}"
            )

    def fcompute(*i: Expr) -> Expr:
        ch = i[1]
        inv = scale[ch] / op.sqrt(var[ch] + float(epsilon))
        return (x(*i) - mean[ch]) * inv + bias[ch]

    return compute(x.shape, fcompute, name=name, tag="elemwise")
