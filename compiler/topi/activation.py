"""Unary and binary elementwise operators of the graph contract that ``elementwise`` lacks:
division, negation, exp, log, sqrt, tanh, erf, gelu, power, sigmoid and the piecewise-linear
activations.

Float only (integer tensors raise a ``DTypeError`` naming the operator), layout-agnostic.

Example:
    >>> from compiler import te
    >>> x = te.placeholder((2, 8), name="x")
    >>> hard_swish(x).shape, sigmoid(x).op.tag
    ((2, 8), 'elemwise')
"""

from __future__ import annotations

import math
from collections.abc import Callable

from compiler.errors import DTypeError, ShapeError
from compiler.ir import op
from compiler.ir.expr import Expr, const
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


def log(x: Tensor, name: str = "log") -> Tensor:
    """Natural logarithm."""
    return _unary(x, op.log, name)


def tanh(x: Tensor, name: str = "tanh") -> Tensor:
    """Hyperbolic tangent."""
    return _unary(x, op.tanh, name)


#: The float32 rational approximation of erf that XLA and Eigen use (odd numerator of degree
#: 13, even denominator of degree 8, on x clamped to [-4, 4]); its error is below 5e-7, under
#: float32 rounding of the result's neighbours, and it needs no libm ``erf`` on any target.
_ERF_NUM = (
    -2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
    -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02,
)  # fmt: skip
_ERF_DEN = (
    -1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03,
    -1.42647390514189e-02,
)  # fmt: skip


def erf_expr(v: Expr) -> Expr:
    """erf of a float expression by :data:`_ERF_NUM` / :data:`_ERF_DEN` (Horner's rule)."""
    c = op.minimum(op.maximum(v, op.convert(-4.0, v.dtype)), op.convert(4.0, v.dtype))
    c2 = c * c
    p = op.convert(_ERF_NUM[0], v.dtype)
    for k in _ERF_NUM[1:]:
        p = p * c2 + op.convert(k, v.dtype)
    q = op.convert(_ERF_DEN[0], v.dtype)
    for k in _ERF_DEN[1:]:
        q = q * c2 + op.convert(k, v.dtype)
    return c * p / q


def erf(x: Tensor, name: str = "erf") -> Tensor:
    """The error function (see :func:`erf_expr`).

    Example:
        >>> from compiler import te
        >>> erf(te.placeholder((3,), name="x")).op.tag
        'elemwise'
    """
    return _unary(x, erf_expr, name)


def gelu(x: Tensor, approximate: str = "none", name: str = "gelu") -> Tensor:
    """``x * Phi(x)``: exactly ``x/2 * (1 + erf(x / sqrt(2)))``, or with ``approximate="tanh"``
    ``x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))`` (ONNX's Gelu, opset 20)."""
    if approximate not in ("none", "tanh"):
        raise ShapeError(f"{name}: approximate must be 'none' or 'tanh', got {approximate!r}")

    def fn(v: Expr) -> Expr:
        if approximate == "tanh":
            inner = op.tanh((v + v * v * v * 0.044715) * math.sqrt(2.0 / math.pi))
        else:
            inner = erf_expr(v * (1.0 / math.sqrt(2.0)))
        return v * 0.5 * (inner + 1.0)

    return _unary(x, fn, name)


def _power_expr(a: Expr, b: Expr) -> Expr:
    """``a ** b`` as C's ``pow``: ``exp(b * log|a|)``, negated for a negative base with an odd
    integer exponent, NaN for a negative base with a fractional one, and the limits at 0."""
    dt = a.dtype
    zero, one = op.convert(0.0, dt), op.convert(1.0, dt)
    mag = op.exp(b * op.log(op.if_then_else(a < zero, op.neg(a), a)))
    whole = op.cast("int64", b)
    integral = op.equal(op.cast(dt, whole), b)
    odd = op.not_equal(op.floormod(whole, const(2, "int64")), const(0, "int64"))
    nan = op.convert(math.nan, dt)
    negative = op.if_then_else(integral, op.if_then_else(odd, op.neg(mag), mag), nan)
    at_zero = op.if_then_else(
        b > zero, zero, op.if_then_else(op.equal(b, zero), one, op.convert(math.inf, dt))
    )
    return op.if_then_else(
        op.equal(b, zero),
        one,
        op.if_then_else(a > zero, mag, op.if_then_else(a < zero, negative, at_zero)),
    )


def power(a: Operand, b: Operand, name: str = "power") -> Tensor:
    """``a ** b`` with broadcasting (floats; see :func:`_power_expr`)."""
    for t in (a, b):
        if isinstance(t, Tensor):
            _float(t, name)
    return _binary(a, b, _power_expr, name, "elemwise")
