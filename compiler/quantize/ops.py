"""The int8 operators of quantized graphs, registered in the graph's operator registry and
evaluated by the numpy reference executor in pure integer arithmetic.

Integer convolutions and dense layers need no new operator: ``conv2d`` and ``dense`` of int8
data and weights with an int32 bias already accumulate in int32 (the contract's rule). The new
operators are:

* ``quantize`` (float -> int8, ``scale``): ``clip(floor(x / scale + 1/2), -128, 127)``, on the
  host at the graph's float edges (computed in float64);
* ``dequantize`` (int8 or int32 -> float32, ``scale``): ``x * scale``;
* ``requantize`` (int32 ``x``; int32 ``multiplier[C]``, ``shift[C]``, ``post_shift[C]``, one
  entry per index of ``axis`` -> int8; ``out_min``, ``out_max``, ``axis``):
  :func:`~compiler.quantize.requant.requantize_int`; ``out_min = 0`` is a fused relu;
* ``qadd`` (int8, int8 -> int8; ``lhs_multiplier``, ``rhs_multiplier``, ``shift``,
  ``out_min``, ``out_max``): ``clip(rshift(a * lhs_multiplier + b * rhs_multiplier, shift))``,
  the residual add of two tensors of different scales;
* ``global_sum_pool2d`` (int8 NCHW -> int32 ``(N, C, 1, 1)``): the sum over H and W, which a
  ``requantize`` by ``1 / (H * W)`` turns into the average;
* ``qhard_sigmoid`` (int8 -> int8; ``multiplier``, ``shift``, ``offset``, ``out_max``) and
  ``qhard_swish`` (int8 -> int8; the gate's ``gate_multiplier``, ``gate_shift``,
  ``gate_offset``, then ``multiplier``, ``shift``, ``out_min``, ``out_max`` and ``offset``,
  default 0: a constant add fused into it): the integer hard sigmoid and hard swish of
  :mod:`compiler.quantize.hard`;
* ``qmul`` (int8 ``a``, int8 ``b`` of ``a``'s shape or ``(N, C, 1, 1)`` for an NCHW ``a``;
  ``multiplier``, ``shift``, ``out_min``, ``out_max``):
  ``clip(rshift(a * b * multiplier, shift))``, the channel-wise multiply of a
  squeeze-excitation (``|a b multiplier| <= 128 * 128 * 32767 < 2**31``);
* ``qleaky_relu`` (int8 -> int8; ``pos_multiplier``, ``neg_multiplier``, ``shift``,
  ``out_min``, ``out_max``): ``clip(rshift(max(x, 0) * pos_multiplier + min(x, 0) *
  neg_multiplier, shift))``, a LeakyReLU whose slope is in ``neg_multiplier``, rounded once;
* ``qprelu`` (int8 ``x``, int8 ``slope`` of the shape a ``qmul`` gate of ``x`` has): an int8
  PReLU as the four nodes it quantizes to, in one (:func:`compiler.quantize.fuse.fuse_qprelu`):
  ``qadd(relu(x), qmul(clip(x, neg_min, neg_max), slope))`` with the ``qmul``'s
  ``slope_multiplier``, ``slope_shift``, ``slope_min``, ``slope_max`` and the ``qadd``'s
  ``pos_multiplier`` (of ``relu(x)``), ``neg_multiplier``, ``shift``, ``out_min``, ``out_max``;
  the same integers, bit for bit.

Example:
    >>> from compiler.graph.ir import Constant, Graph, Node, TensorType, Var
    >>> from compiler.graph.reference import evaluate
    >>> x = Var("x", TensorType((1, 2), "int32"))
    >>> m = Constant(np.array([16384, 16384], np.int32))
    >>> s1 = Constant(np.array([0, 1], np.int32))
    >>> s2 = Constant(np.array([15, 15], np.int32))
    >>> y = Node("requantize", (x, m, s1, s2), {"out_min": -128, "out_max": 127})
    >>> evaluate(Graph.from_outputs([x], [y]), {"x": np.array([[101, 101]], np.int32)})[0]
    array([[51, 26]], dtype=int8)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from compiler.errors import DTypeError, GraphError, ShapeError
from compiler.graph.ir import Attrs, Constant, Node, PatternKind, TensorType
from compiler.graph.ops import OPS, REQUIRED, OpDef, register_op
from compiler.graph.reference import register_impl
from compiler.quantize.hard import (
    GATE_UNITS,
    MAX_SWISH_OFFSET,
    HardSigmoid,
    HardSwish,
    hard_sigmoid_int,
    hard_swish_int,
)
from compiler.quantize.requant import (
    MAX_MULTIPLIER,
    MAX_POST_SHIFT,
    MAX_PRE_SHIFT,
    add_int,
    gate_shape,
    mul_int,
    requantize_int,
)

INT8_MIN, INT8_MAX = -128, 127


def _where(node: Node) -> str:
    return f"node {node.label!r} ({node.op})"


def _int_attr(node: Node, key: str, lo: int, hi: int) -> int:
    v = node.attrs[key]
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise GraphError(
            f"{_where(node)}: attribute {key} must be an int in [{lo}, {hi}], got {v!r}"
        )
    return v


def _scale_attr(node: Node) -> float:
    v = node.attrs["scale"]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0 < v < float("inf")):
        raise GraphError(f"{_where(node)}: attribute scale must be a positive float, got {v!r}")
    return float(v)


def _need(node: Node, k: int, dtypes: tuple[str, ...]) -> TensorType:
    t = node.inputs[k].type
    if t.dtype not in dtypes:
        raise DTypeError(f"{_where(node)} input {k}: needs {' or '.join(dtypes)}, got {t.dtype}")
    return t


def _out_range(node: Node) -> None:
    lo = _int_attr(node, "out_min", INT8_MIN, INT8_MAX)
    hi = _int_attr(node, "out_max", INT8_MIN, INT8_MAX)
    if lo > hi:
        raise GraphError(f"{_where(node)}: out_min {lo} is greater than out_max {hi}")


def _infer_quantize(node: Node) -> TensorType:
    _scale_attr(node)
    t = _need(node, 0, ("float32", "float64"))
    return TensorType(t.shape, "int8", t.layout)


def _infer_dequantize(node: Node) -> TensorType:
    _scale_attr(node)
    t = _need(node, 0, ("int8", "int32"))
    return TensorType(t.shape, "float32", t.layout)


def _infer_requantize(node: Node) -> TensorType:
    x = _need(node, 0, ("int32",))
    axis = _int_attr(node, "axis", 0, max(x.ndim - 1, 0))
    _out_range(node)
    channels = x.shape[axis] if x.ndim else 1
    params = (
        (1, "multiplier", 0, MAX_MULTIPLIER),
        (2, "shift", 0, MAX_PRE_SHIFT),
        (3, "post_shift", 0, MAX_POST_SHIFT),
    )
    for k, what, lo, hi in params:
        t = _need(node, k, ("int32",))
        if t.shape != (channels,):
            raise ShapeError(
                f"{_where(node)} input {k} ({what}): must have shape ({channels},), one entry "
                f"per index of axis {axis}, got {t.shape}"
            )
        v = node.inputs[k]
        if isinstance(v, Constant) and v.value.size and (v.value.min() < lo or v.value.max() > hi):
            raise GraphError(
                f"{_where(node)} input {k} ({what}): entries must lie in [{lo}, {hi}], got "
                f"[{int(v.value.min())}, {int(v.value.max())}]"
            )
    return TensorType(x.shape, "int8", x.layout)


def _infer_qadd(node: Node) -> TensorType:
    a = _need(node, 0, ("int8",))
    b = _need(node, 1, ("int8",))
    if a.shape != b.shape:
        raise ShapeError(
            f"{_where(node)} input 1: shape {b.shape} differs from input 0's {a.shape}"
        )
    _int_attr(node, "lhs_multiplier", 0, MAX_MULTIPLIER)
    _int_attr(node, "rhs_multiplier", 0, MAX_MULTIPLIER)
    _int_attr(node, "shift", 0, 30)
    _out_range(node)
    return TensorType(a.shape, "int8", a.layout or b.layout)


def _infer_qmul(node: Node) -> TensorType:
    a = _need(node, 0, ("int8",))
    b = _need(node, 1, ("int8",))
    gate = a.ndim == 4 and b.shape == (a.shape[0], a.shape[1], 1, 1)
    if b.shape != a.shape and not gate:
        raise ShapeError(
            f"{_where(node)} input 1: shape {b.shape} is neither input 0's {a.shape} nor "
            f"one value per channel {(a.shape[0], a.shape[1], 1, 1) if a.ndim == 4 else ''}"
        )
    _int_attr(node, "multiplier", 0, MAX_MULTIPLIER)
    _int_attr(node, "shift", 0, 30)
    _out_range(node)
    return TensorType(a.shape, "int8", a.layout)


def _check_parts(node: Node) -> None:
    """The sum of a ``qleaky_relu`` or ``qprelu``: its two parts' multipliers, the shift and
    the output range."""
    _int_attr(node, "pos_multiplier", 0, MAX_MULTIPLIER)
    _int_attr(node, "neg_multiplier", 0, MAX_MULTIPLIER)
    _int_attr(node, "shift", 0, 30)
    _out_range(node)


def _infer_qleaky_relu(node: Node) -> TensorType:
    x = _need(node, 0, ("int8",))
    _check_parts(node)
    return TensorType(x.shape, "int8", x.layout)


def _infer_qprelu(node: Node) -> TensorType:
    x = _need(node, 0, ("int8",))
    slope = _need(node, 1, ("int8",))
    per_channel = gate_shape(x.shape)
    if x.ndim not in (2, 4) or slope.shape != per_channel:
        raise ShapeError(
            f"{_where(node)} input 1: the slope must have shape {per_channel} for an input of "
            f"shape {x.shape} (NCHW or (N, C)), got {slope.shape}"
        )
    lo = _int_attr(node, "neg_min", INT8_MIN, INT8_MAX)
    if lo > _int_attr(node, "neg_max", INT8_MIN, INT8_MAX):
        raise GraphError(f"{_where(node)}: neg_min {lo} is greater than neg_max")
    _int_attr(node, "slope_multiplier", 0, MAX_MULTIPLIER)
    _int_attr(node, "slope_shift", 0, 30)
    if _int_attr(node, "slope_min", INT8_MIN, INT8_MAX) > _int_attr(
        node, "slope_max", INT8_MIN, INT8_MAX
    ):
        raise GraphError(f"{_where(node)}: slope_min is greater than slope_max")
    _check_parts(node)
    return TensorType(x.shape, "int8", x.layout)


def _infer_hard(node: Node) -> TensorType:
    t = _need(node, 0, ("int8",))
    gate = "gate_" if node.op == "qhard_swish" else ""
    _int_attr(node, f"{gate}multiplier", -MAX_MULTIPLIER, MAX_MULTIPLIER)
    _int_attr(node, f"{gate}shift", 0, 15)
    _int_attr(node, f"{gate}offset", -(1 << 30), 1 << 30)
    if gate:
        _int_attr(node, "multiplier", 0, MAX_MULTIPLIER)
        _int_attr(node, "shift", 0, 30)
        _int_attr(node, "offset", -MAX_SWISH_OFFSET, MAX_SWISH_OFFSET)
        _out_range(node)
    else:
        _int_attr(node, "out_max", 0, INT8_MAX)
    return TensorType(t.shape, "int8", t.layout)


def _infer_sum_pool(node: Node) -> TensorType:
    t = _need(node, 0, ("int8",))
    if t.ndim != 4 or t.layout not in ("", "NCHW"):
        raise ShapeError(f"{_where(node)} input 0: needs a 4-d NCHW tensor, got {t}")
    n, c = t.shape[:2]
    return TensorType((n, c, 1, 1), "int32", "NCHW")


_OUT = {"out_min": INT8_MIN, "out_max": INT8_MAX}
#: a ``qprelu``'s attributes besides the output range
_PRELU_KEYS = ("neg_min", "neg_max", "slope_multiplier", "slope_shift", "slope_min", "slope_max",
               "pos_multiplier", "neg_multiplier", "shift")  # fmt: skip
_DEFS = (
    OpDef("quantize", PatternKind.INJECTIVE, 1, 1, {"scale": REQUIRED}, _infer_quantize, "integer"),
    OpDef(
        "dequantize", PatternKind.INJECTIVE, 1, 1, {"scale": REQUIRED}, _infer_dequantize, "integer"
    ),
    OpDef(
        "requantize",
        PatternKind.INJECTIVE,
        4,
        4,
        {"axis": 1, **_OUT},
        _infer_requantize,
        "integer",
    ),
    OpDef(
        "qadd",
        PatternKind.INJECTIVE,
        2,
        2,
        {"lhs_multiplier": REQUIRED, "rhs_multiplier": REQUIRED, "shift": REQUIRED, **_OUT},
        _infer_qadd,
        "integer",
    ),
    OpDef("global_sum_pool2d", PatternKind.REDUCTION, 1, 1, {}, _infer_sum_pool, "integer"),
    OpDef(
        "qmul",
        PatternKind.INJECTIVE,
        2,
        2,
        {"multiplier": REQUIRED, "shift": REQUIRED, **_OUT},
        _infer_qmul,
        "integer",
    ),
    OpDef(
        "qleaky_relu",
        PatternKind.INJECTIVE,
        1,
        1,
        {"pos_multiplier": REQUIRED, "neg_multiplier": REQUIRED, "shift": REQUIRED, **_OUT},
        _infer_qleaky_relu,
        "integer",
    ),
    OpDef(
        "qprelu",
        PatternKind.INJECTIVE,
        2,
        2,
        {**{key: REQUIRED for key in _PRELU_KEYS}, **_OUT},
        _infer_qprelu,
        "integer",
    ),
    OpDef(
        "qhard_sigmoid",
        PatternKind.INJECTIVE,
        1,
        1,
        {"multiplier": REQUIRED, "shift": REQUIRED, "offset": REQUIRED, "out_max": REQUIRED},
        _infer_hard,
        "integer",
    ),
    OpDef(
        "qhard_swish",
        PatternKind.INJECTIVE,
        1,
        1,
        {
            "gate_multiplier": REQUIRED,
            "gate_shift": REQUIRED,
            "gate_offset": REQUIRED,
            "multiplier": REQUIRED,
            "shift": REQUIRED,
            **_OUT,
            "offset": 0,
        },
        _infer_hard,
        "integer",
    ),
)

#: The operators this module adds to the registry.
QUANT_OPS = tuple(d.name for d in _DEFS)


def _quantize(args: list[np.ndarray], attrs: Attrs, t: TensorType) -> np.ndarray:
    q = np.floor(args[0].astype(np.float64) / attrs["scale"] + 0.5)
    return np.clip(q, INT8_MIN, INT8_MAX).astype(np.int8)


def _dequantize(args: list[np.ndarray], attrs: Attrs, t: TensorType) -> np.ndarray:
    return (args[0].astype(np.float64) * attrs["scale"]).astype(np.float32)


def _requantize(args: list[np.ndarray], attrs: Attrs, t: TensorType) -> np.ndarray:
    x, m, s1, s2 = args
    return requantize_int(x, m, s1, s2, attrs["out_min"], attrs["out_max"], attrs["axis"])


def _qadd(args: list[np.ndarray], attrs: Attrs, t: TensorType) -> np.ndarray:
    return add_int(
        args[0],
        args[1],
        attrs["lhs_multiplier"],
        attrs["rhs_multiplier"],
        attrs["shift"],
        attrs["out_min"],
        attrs["out_max"],
    )


def _sum_pool(args: list[np.ndarray], attrs: Attrs, t: TensorType) -> np.ndarray:
    return args[0].astype(np.int64).sum(axis=(2, 3), keepdims=True).astype(np.int32)


def hard_sigmoid_params(attrs: Mapping[str, Any]) -> HardSigmoid:
    """The :class:`HardSigmoid` of a ``qhard_sigmoid`` node's attributes."""
    return HardSigmoid(attrs["multiplier"], attrs["shift"], attrs["offset"], attrs["out_max"])


def hard_swish_params(attrs: Mapping[str, Any]) -> HardSwish:
    """The :class:`HardSwish` of a ``qhard_swish`` node's attributes."""
    gate = HardSigmoid(
        attrs["gate_multiplier"], attrs["gate_shift"], attrs["gate_offset"], GATE_UNITS
    )
    return HardSwish(gate, attrs["multiplier"], attrs["shift"], attrs["out_min"], attrs["out_max"],
                     attrs["offset"])  # fmt: skip


def _qmul(args: list[np.ndarray], attrs: Attrs, t: TensorType) -> np.ndarray:
    return mul_int(
        args[0], args[1], attrs["multiplier"], attrs["shift"], attrs["out_min"], attrs["out_max"]
    )


def _qleaky_relu(args: list[np.ndarray], attrs: Attrs, t: TensorType) -> np.ndarray:
    (x,) = args
    return add_int(np.maximum(x, 0), np.minimum(x, 0), attrs["pos_multiplier"],
                   attrs["neg_multiplier"], attrs["shift"], attrs["out_min"],
                   attrs["out_max"])  # fmt: skip


def _qprelu(args: list[np.ndarray], attrs: Attrs, t: TensorType) -> np.ndarray:
    x, slope = args
    neg = np.clip(x, attrs["neg_min"], attrs["neg_max"]).astype(np.int8)
    scaled = mul_int(neg, slope, attrs["slope_multiplier"], attrs["slope_shift"],
                     attrs["slope_min"], attrs["slope_max"])  # fmt: skip
    pos = np.maximum(x, 0).astype(np.int8)
    return add_int(pos, scaled, attrs["pos_multiplier"], attrs["neg_multiplier"],
                   attrs["shift"], attrs["out_min"], attrs["out_max"])  # fmt: skip


def _qhard_sigmoid(args: list[np.ndarray], attrs: Attrs, t: TensorType) -> np.ndarray:
    return hard_sigmoid_int(args[0], hard_sigmoid_params(attrs))


def _qhard_swish(args: list[np.ndarray], attrs: Attrs, t: TensorType) -> np.ndarray:
    return hard_swish_int(args[0], hard_swish_params(attrs))


_IMPLS = {
    "quantize": _quantize,
    "dequantize": _dequantize,
    "requantize": _requantize,
    "qadd": _qadd,
    "global_sum_pool2d": _sum_pool,
    "qmul": _qmul,
    "qleaky_relu": _qleaky_relu,
    "qprelu": _qprelu,
    "qhard_sigmoid": _qhard_sigmoid,
    "qhard_swish": _qhard_swish,
}

for _d in _DEFS:
    if _d.name not in OPS:
        register_op(_d)
        register_impl(_d.name, _IMPLS[_d.name])

__all__ = ["QUANT_OPS", "hard_sigmoid_params", "hard_swish_params"]
