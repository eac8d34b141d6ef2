"""The operators of the graph IR, declared: names, attributes, pattern kinds, type inference
and quantization rules (what each target implements for them: :mod:`compiler.registry`).

Operators and attributes are named exactly as in the graph operator contract shared with
``compiler.strategy``. Each :class:`OpDef` knows its input count, its attributes (with defaults;
``REQUIRED`` when there is none), its fusion :class:`~compiler.graph.ir.PatternKind` and how to
infer the output type; inference raises :class:`~compiler.errors.ShapeError` or
:class:`~compiler.errors.DTypeError` naming the node and the input at fault.

Example:
    >>> get_op("conv2d").pattern
    <PatternKind.COMPLEX_OUT_FUSABLE: 'complex-out-fusable'>
    >>> parse_packed("NCHW1n16c")
    (1, 16)
    >>> conv_out_size(32, 3, stride=2, pad=(1, 1), dilation=1)
    16
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from compiler.errors import DTypeError, GraphError, ShapeError
from compiler.graph.ir import Attrs, Constant, Node, PatternKind, TensorType, Var

REQUIRED = object()

INJ = PatternKind.INJECTIVE
RED = PatternKind.REDUCTION
COF = PatternKind.COMPLEX_OUT_FUSABLE
OPQ = PatternKind.OPAQUE

_PACKED_RE = re.compile(r"^NCHW(\d+)n(\d+)c$")
_PACKED_KERNEL_RE = re.compile(r"^OIHW(\d+)i(\d+)o$")


def parse_packed(layout: str) -> tuple[int, int] | None:
    """``(n, c)`` of a packed ``NCHW{n}n{c}c`` layout, ``None`` for anything else.

    Example:
        >>> parse_packed("NCHW"), parse_packed("NCHW2n8c")
        (None, (2, 8))
    """
    m = _PACKED_RE.match(layout)
    return (int(m.group(1)), int(m.group(2))) if m else None


def parse_packed_kernel(layout: str) -> tuple[int, int] | None:
    """``(i, o)`` of a packed ``OIHW{i}i{o}o`` kernel layout, ``None`` for anything else.

    Example:
        >>> parse_packed_kernel("OIHW16i16o")
        (16, 16)
    """
    m = _PACKED_KERNEL_RE.match(layout)
    return (int(m.group(1)), int(m.group(2))) if m else None


def conv_out_size(
    size: int,
    kernel: int,
    stride: int,
    pad: tuple[int, int],
    dilation: int,
    ceil_mode: bool = False,
) -> int:
    """Output extent of a convolution or pooling window along one axis.

    With ``ceil_mode`` the last window is kept when it starts inside the input or the leading
    padding (the rule of PyTorch and onnxruntime).

    Example:
        >>> conv_out_size(5, 2, 2, (0, 0), 1, ceil_mode=True)
        3
    """
    span = (kernel - 1) * dilation + 1
    total = size + pad[0] + pad[1] - span
    if total < 0:
        return 0
    if not ceil_mode:
        return total // stride + 1
    out = -(-total // stride) + 1
    if (out - 1) * stride >= size + pad[0]:
        out -= 1
    return out


def broadcast_shapes(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    """numpy broadcasting of two shapes, ``None`` when they do not broadcast.

    Example:
        >>> broadcast_shapes((1, 4, 1, 1), (2, 4, 8, 8)), broadcast_shapes((3,), (4,))
        ((2, 4, 8, 8), None)
    """
    n = max(len(a), len(b))
    pa = (1,) * (n - len(a)) + a
    pb = (1,) * (n - len(b)) + b
    out = []
    for x, y in zip(pa, pb, strict=True):
        if x != y and x != 1 and y != 1:
            return None
        out.append(y if x == 1 else x)
    return tuple(out)


def _where(node: Node, k: int | None = None) -> str:
    head = f"node {node.label!r} ({node.op})"
    if k is None:
        return head
    v = node.inputs[k]
    vname = v.name if isinstance(v, (Var, Constant)) else v.label
    return f"{head} input {k}" + (f" ({vname})" if vname else "")


def _shape_err(node: Node, k: int | None, msg: str) -> ShapeError:
    return ShapeError(f"{_where(node, k)}: {msg}")


def _dtype_err(node: Node, k: int | None, msg: str) -> DTypeError:
    return DTypeError(f"{_where(node, k)}: {msg}")


@dataclass(frozen=True)
class OpDef:
    """An operator of the contract: inputs, attributes, pattern kind and type inference."""

    name: str
    pattern: PatternKind
    min_inputs: int
    max_inputs: int | None
    attrs: Mapping[str, Any]
    infer_fn: Callable[[Node], TensorType]
    #: the quantization rule (:data:`compiler.registry.QUANT_RULES`): what quantizing a float
    #: graph does with the operator
    quant: str = "float"

    def __post_init__(self) -> None:
        from compiler.registry import QUANT_RULES

        if self.quant not in QUANT_RULES:
            raise GraphError(
                f"operator {self.name!r}: quantization rule {self.quant!r} is not one of "
                f"{sorted(QUANT_RULES)}"
            )

    def normalize_attrs(self, attrs: Mapping[str, Any] | None, node_name: str = "") -> Attrs:
        """Fill defaults, refuse unknown or missing attributes."""
        given = dict(attrs or {})
        label = f"node {node_name or self.name!r} ({self.name})"
        unknown = sorted(set(given) - set(self.attrs))
        if unknown:
            raise GraphError(
                f"{label}: unknown attribute(s) {unknown}; {self.name} takes {sorted(self.attrs)}"
            )
        out = {}
        for key, default in self.attrs.items():
            if key in given:
                out[key] = given[key]
            elif default is REQUIRED:
                raise GraphError(f"{label}: missing attribute {key!r}")
            else:
                out[key] = default
        return Attrs(out)

    def infer(self, node: Node) -> TensorType:
        n = len(node.inputs)
        if n < self.min_inputs or (self.max_inputs is not None and n > self.max_inputs):
            want = (
                f"{self.min_inputs}"
                if self.max_inputs == self.min_inputs
                else f"{self.min_inputs}..{self.max_inputs if self.max_inputs else 'n'}"
            )
            raise GraphError(f"{_where(node)}: takes {want} inputs, got {n}")
        return self.infer_fn(node)


OPS: dict[str, OpDef] = {}


def register_op(opdef: OpDef) -> OpDef:
    """Add an operator to the registry (names are unique)."""
    if opdef.name in OPS:
        raise GraphError(f"operator {opdef.name!r} is already registered")
    OPS[opdef.name] = opdef
    return opdef


def get_op(name: str, node_name: str = "") -> OpDef:
    """The definition of operator ``name``; :class:`GraphError` if there is none.

    Example:
        >>> get_op("relu").pattern
        <PatternKind.INJECTIVE: 'injective'>
    """
    try:
        return OPS[name]
    except KeyError:
        where = f"node {node_name!r}: " if node_name else ""
        raise GraphError(f"{where}unknown operator {name!r}") from None


def op_names() -> list[str]:
    """Every registered operator name, sorted.

    Example:
        >>> "layout_transform" in op_names()
        True
    """
    return sorted(OPS)


# ---------------------------------------------------------------- helpers of inference


def _int_tuple(node: Node, key: str, length: int) -> tuple[int, ...]:
    v = node.attrs[key]
    if (
        not isinstance(v, tuple)
        or len(v) != length
        or not all(isinstance(x, int) and not isinstance(x, bool) for x in v)
    ):
        raise GraphError(f"{_where(node)}: attribute {key} must be {length} ints, got {v!r}")
    return v


def _float_attr(node: Node, key: str) -> float:
    v = node.attrs[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise GraphError(f"{_where(node)}: attribute {key} must be a float, got {v!r}")
    return float(v)


def _same_dtype(node: Node, ks: range | list[int]) -> str:
    dtypes = [node.inputs[k].type.dtype for k in ks]
    for k, d in zip(ks, dtypes, strict=True):
        if d != dtypes[0]:
            raise _dtype_err(node, k, f"dtype {d} differs from input {ks[0]}'s {dtypes[0]}")
    return dtypes[0]


def _need_float(node: Node, k: int) -> None:
    if not node.inputs[k].type.dtype.startswith("float"):
        raise _dtype_err(node, k, f"needs a float dtype, got {node.inputs[k].type.dtype}")


def _accum_dtype(dtype: str) -> str:
    return "int32" if dtype in ("int8", "uint8", "int16") else dtype


def _activation(node: Node, k: int, layout: str) -> tuple[int, int, int, int]:
    """``(N, C, H, W)`` of an activation input in ``layout``, checking its rank and blocks."""
    t = node.inputs[k].type
    packed = parse_packed(layout)
    if layout == "NCHW":
        if t.ndim != 4:
            raise _shape_err(node, k, f"layout NCHW needs a 4-d tensor, got shape {t.shape}")
        if t.layout not in ("", "NCHW"):
            raise _shape_err(node, k, f"has layout {t.layout}, the op expects NCHW")
        return t.shape  # type: ignore[return-value]
    if packed is None:
        raise GraphError(f"{_where(node)}: unsupported layout {layout!r} (NCHW or NCHW<n>n<c>c)")
    bn, bc = packed
    if t.ndim != 6 or t.shape[4] != bn or t.shape[5] != bc:
        raise _shape_err(
            node,
            k,
            f"layout {layout} needs shape (N/{bn}, C/{bc}, H, W, {bn}, {bc}), got {t.shape}",
        )
    if t.layout not in ("", layout):
        raise _shape_err(node, k, f"has layout {t.layout}, the op expects {layout}")
    return (t.shape[0] * bn, t.shape[1] * bc, t.shape[2], t.shape[3])


def _packed_shape(n: int, c: int, h: int, w: int, layout: str) -> tuple[int, ...]:
    packed = parse_packed(layout)
    if packed is None:
        return (n, c, h, w)
    bn, bc = packed
    return (n // bn, c // bc, h, w, bn, bc)


# ---------------------------------------------------------------- inference per operator


def _infer_conv2d(node: Node) -> TensorType:
    a = node.attrs
    strides = _int_tuple(node, "strides", 2)
    padding = _int_tuple(node, "padding", 4)
    dilation = _int_tuple(node, "dilation", 2)
    groups = a["groups"]
    if not isinstance(groups, int) or groups < 1:
        raise GraphError(f"{_where(node)}: groups must be a positive int, got {groups!r}")
    if min(strides) < 1 or min(dilation) < 1 or min(padding) < 0:
        raise GraphError(f"{_where(node)}: strides and dilation must be >= 1 and padding >= 0")
    n, c, h, w = _activation(node, 0, a["data_layout"])
    wt = node.inputs[1].type
    if wt.ndim not in (4, 6):
        raise _shape_err(node, 1, f"weight must be 4-d (OIHW) or 6-d (packed), got {wt.shape}")
    kpacked = parse_packed_kernel(a["kernel_layout"])
    if a["kernel_layout"] == "OIHW":
        if wt.ndim != 4:
            raise _shape_err(node, 1, f"kernel layout OIHW needs a 4-d weight, got {wt.shape}")
        o, i, kh, kw = wt.shape
    elif kpacked is not None:
        bi, bo = kpacked
        if wt.ndim != 6 or wt.shape[4] != bi or wt.shape[5] != bo:
            raise _shape_err(
                node,
                1,
                f"kernel layout {a['kernel_layout']} needs shape "
                f"(O/{bo}, I/{bi}, KH, KW, {bi}, {bo}), got {wt.shape}",
            )
        o, i, kh, kw = wt.shape[0] * bo, wt.shape[1] * bi, wt.shape[2], wt.shape[3]
    else:
        raise GraphError(f"{_where(node)}: unsupported kernel layout {a['kernel_layout']!r}")
    packed = parse_packed(a["data_layout"])
    if (packed is None) != (kpacked is None):
        raise GraphError(
            f"{_where(node)}: data layout {a['data_layout']} and kernel layout "
            f"{a['kernel_layout']} must both be plain or both packed"
        )
    if packed is not None and kpacked is not None:  # both or neither, checked just above
        # depthwise: one input channel per group, the kernel's blocks (1 in, c out) match the
        # data's channel block
        depthwise = groups > 1 and groups == c == o and kpacked == (1, packed[1])
        if groups != 1 and not depthwise:
            raise GraphError(
                f"{_where(node)}: packed conv2d supports groups=1 or depthwise (groups = "
                f"channels, kernel layout OIHW1i{packed[1]}o) only, got groups={groups}"
            )
        if not depthwise and packed[1] != kpacked[0]:
            raise _shape_err(
                node,
                1,
                f"kernel input block {kpacked[0]} differs from the data channel block {packed[1]}",
            )
        if len(node.inputs) == 3:
            raise GraphError(f"{_where(node)}: packed conv2d takes no bias (add it separately)")
    if c % groups or o % groups:
        raise _shape_err(
            node, 1, f"channels {c} in and {o} out must be multiples of groups={groups}"
        )
    if i * groups != c:
        raise _shape_err(
            node,
            1,
            f"weight has {i} input channels per group, data has {c} "
            f"channels in {groups} group(s) (expects {c // groups})",
        )
    dtype = _same_dtype(node, [0, 1])
    out_dtype = _accum_dtype(dtype)
    if len(node.inputs) == 3:
        bt = node.inputs[2].type
        if bt.shape != (o,):
            raise _shape_err(node, 2, f"bias must have shape ({o},), got {bt.shape}")
        if bt.dtype != out_dtype:
            raise _dtype_err(node, 2, f"bias dtype {bt.dtype} differs from output {out_dtype}")
    oh = conv_out_size(h, kh, strides[0], (padding[0], padding[2]), dilation[0])
    ow = conv_out_size(w, kw, strides[1], (padding[1], padding[3]), dilation[1])
    if oh < 1 or ow < 1:
        raise _shape_err(
            node,
            0,
            f"input {h}x{w} is smaller than the {kh}x{kw} kernel with "
            f"padding {padding} and dilation {dilation}",
        )
    # A packed output takes the kernel's output block, which may differ from the data's channel
    # block (a first layer's 3 input channels are one block of 3; its output blocks are 16).
    out_layout = (
        a["data_layout"] if packed is None or kpacked is None else f"NCHW{packed[0]}n{kpacked[1]}c"
    )
    return TensorType(_packed_shape(n, o, oh, ow, out_layout), out_dtype, out_layout)


def _infer_dense(node: Node) -> TensorType:
    x, w = node.inputs[0].type, node.inputs[1].type
    if x.ndim != 2:
        raise _shape_err(node, 0, f"data must be 2-d (N, K), got {x.shape}")
    if w.ndim != 2 or w.shape[1] != x.shape[1]:
        raise _shape_err(node, 1, f"weight must be (M, {x.shape[1]}), got {w.shape}")
    dtype = _accum_dtype(_same_dtype(node, [0, 1]))
    if len(node.inputs) == 3:
        b = node.inputs[2].type
        if b.shape != (w.shape[0],):
            raise _shape_err(node, 2, f"bias must have shape ({w.shape[0]},), got {b.shape}")
        if b.dtype != dtype:
            raise _dtype_err(node, 2, f"bias dtype {b.dtype} differs from output {dtype}")
    return TensorType((x.shape[0], w.shape[0]), dtype)


def _infer_matmul(node: Node) -> TensorType:
    a, b = node.inputs[0].type, node.inputs[1].type
    if a.ndim == 0 or b.ndim == 0:
        raise _shape_err(node, 0 if a.ndim == 0 else 1, "matmul needs tensors of rank >= 1")
    ash = (1,) + a.shape if a.ndim == 1 else a.shape
    bsh = b.shape + (1,) if b.ndim == 1 else b.shape
    if ash[-1] != bsh[-2]:
        raise _shape_err(node, 1, f"contraction sizes differ: {a.shape} @ {b.shape}")
    batch = broadcast_shapes(ash[:-2], bsh[:-2])
    if batch is None:
        raise _shape_err(node, 1, f"batch dims of {a.shape} and {b.shape} do not broadcast")
    out = batch + (ash[-2], bsh[-1])
    if a.ndim == 1:
        out = out[:-2] + out[-1:]
    if b.ndim == 1:
        out = out[:-1]
    return TensorType(out, _accum_dtype(_same_dtype(node, [0, 1])))


def _infer_binary(node: Node) -> TensorType:
    a, b = node.inputs[0].type, node.inputs[1].type
    shape = broadcast_shapes(a.shape, b.shape)
    if shape is None:
        raise _shape_err(node, 1, f"shape {b.shape} does not broadcast with input 0's {a.shape}")
    dtype = _same_dtype(node, [0, 1])
    # the layout of the operand the output has the shape of (a broadcast operand's layout,
    # e.g. a per-channel constant's NCHW1n16c, only when no operand has the output's shape)
    candidates = [t for t in (a, b) if t.layout and t.shape == shape]
    candidates += [t for t in (a, b) if t.layout and t.ndim == len(shape)]
    layout = candidates[0].layout if candidates else ""
    return TensorType(shape, dtype, layout)


def _infer_unary(node: Node) -> TensorType:
    return node.inputs[0].type


def _infer_unary_float(node: Node) -> TensorType:
    _need_float(node, 0)
    return node.inputs[0].type


def _infer_power(node: Node) -> TensorType:
    _need_float(node, 0)
    return _infer_binary(node)


def _infer_gelu(node: Node) -> TensorType:
    if node.attrs["approximate"] not in ("none", "tanh"):
        raise GraphError(
            f"{_where(node)}: approximate must be 'none' or 'tanh', got "
            f"{node.attrs['approximate']!r}"
        )
    _need_float(node, 0)
    return node.inputs[0].type


def _infer_compare(node: Node) -> TensorType:
    t = _infer_binary(node)
    return TensorType(t.shape, "bool", t.layout)


def _need_bool(node: Node, ks: range) -> None:
    for k in ks:
        if node.inputs[k].type.dtype != "bool":
            raise _dtype_err(node, k, f"needs a bool tensor, got {node.inputs[k].type.dtype}")


def _infer_logical(node: Node) -> TensorType:
    _need_bool(node, range(len(node.inputs)))
    return node.inputs[0].type if len(node.inputs) == 1 else _infer_binary(node)


def _infer_where(node: Node) -> TensorType:
    _need_bool(node, range(1))
    c, a, b = (v.type for v in node.inputs)
    dtype = _same_dtype(node, [1, 2])
    ab = broadcast_shapes(a.shape, b.shape)
    shape = None if ab is None else broadcast_shapes(c.shape, ab)
    if shape is None:
        raise _shape_err(node, 0, f"shapes {c.shape}, {a.shape} and {b.shape} do not broadcast")
    return TensorType(shape, dtype)


def _infer_clip(node: Node) -> TensorType:
    lo, hi = _float_attr(node, "a_min"), _float_attr(node, "a_max")
    if lo > hi:
        raise GraphError(f"{_where(node)}: a_min {lo} is greater than a_max {hi}")
    return node.inputs[0].type


def _infer_leaky_relu(node: Node) -> TensorType:
    _float_attr(node, "alpha")
    _need_float(node, 0)
    return node.inputs[0].type


def _infer_hard_sigmoid(node: Node) -> TensorType:
    _float_attr(node, "alpha")
    _float_attr(node, "beta")
    _need_float(node, 0)
    return node.inputs[0].type


def _infer_batch_norm(node: Node) -> TensorType:
    _float_attr(node, "epsilon")
    x = node.inputs[0].type
    if x.ndim < 2:
        raise _shape_err(node, 0, f"batch_norm needs rank >= 2 (N, C, ...), got {x.shape}")
    _need_float(node, 0)
    for k in range(1, 5):
        t = node.inputs[k].type
        if t.shape != (x.shape[1],):
            raise _shape_err(node, k, f"must have shape ({x.shape[1]},), got {t.shape}")
    _same_dtype(node, range(5))
    return x


def _infer_pool(node: Node) -> TensorType:
    a = node.attrs
    kh, kw = _int_tuple(node, "pool_size", 2)
    strides = _int_tuple(node, "strides", 2)
    padding = _int_tuple(node, "padding", 4)
    dilation = _int_tuple(node, "dilation", 2)
    if min(kh, kw, *strides, *dilation) < 1 or min(padding) < 0:
        raise GraphError(f"{_where(node)}: pool_size, strides, dilation must be >= 1, padding >= 0")
    if (
        padding[0] >= (kh - 1) * dilation[0] + 1
        or padding[1] >= (kw - 1) * dilation[1] + 1
        or (padding[2] >= (kh - 1) * dilation[0] + 1 or padding[3] >= (kw - 1) * dilation[1] + 1)
    ):
        raise GraphError(f"{_where(node)}: padding {padding} must be smaller than the window")
    if not isinstance(a["ceil_mode"], bool):
        raise GraphError(f"{_where(node)}: ceil_mode must be a bool")
    n, c, h, w = _activation(node, 0, a["layout"])
    oh = conv_out_size(h, kh, strides[0], (padding[0], padding[2]), dilation[0], a["ceil_mode"])
    ow = conv_out_size(w, kw, strides[1], (padding[1], padding[3]), dilation[1], a["ceil_mode"])
    if oh < 1 or ow < 1:
        raise _shape_err(node, 0, f"input {h}x{w} is smaller than the {kh}x{kw} window")
    t = node.inputs[0].type
    return TensorType(_packed_shape(n, c, oh, ow, a["layout"]), t.dtype, a["layout"])


def _infer_global_pool(node: Node) -> TensorType:
    layout = node.attrs["layout"]
    n, c, _, _ = _activation(node, 0, layout)
    return TensorType(_packed_shape(n, c, 1, 1, layout), node.inputs[0].type.dtype, layout)


def _axis(node: Node, rank: int) -> int:
    axis = node.attrs["axis"]
    if not isinstance(axis, int) or not 0 <= axis < rank:
        raise GraphError(f"{_where(node)}: axis must be an int in [0, {rank}), got {axis!r}")
    return axis


def _infer_softmax(node: Node) -> TensorType:
    _axis(node, node.inputs[0].type.ndim)
    _need_float(node, 0)
    return node.inputs[0].type


def _infer_reshape(node: Node) -> TensorType:
    x = node.inputs[0].type
    new = node.attrs["newshape"]
    if not isinstance(new, tuple) or not all(isinstance(d, int) and d >= 0 for d in new):
        raise GraphError(
            f"{_where(node)}: newshape must be resolved non-negative ints, got {new!r}"
        )
    if math.prod(new) != x.size:
        raise _shape_err(node, 0, f"cannot reshape {x.shape} ({x.size} elements) to {new}")
    return TensorType(new, x.dtype)


def _infer_transpose(node: Node) -> TensorType:
    x = node.inputs[0].type
    axes = node.attrs["axes"]
    if not isinstance(axes, tuple) or sorted(axes) != list(range(x.ndim)):
        raise GraphError(f"{_where(node)}: axes {axes!r} is not a permutation of {x.ndim} axes")
    same = axes == tuple(range(x.ndim))
    return TensorType(tuple(x.shape[k] for k in axes), x.dtype, x.layout if same else "")


def _infer_concat(node: Node) -> TensorType:
    first = node.inputs[0].type
    axis = _axis(node, first.ndim)
    dtype = _same_dtype(node, range(len(node.inputs)))
    total = 0
    for k, v in enumerate(node.inputs):
        t = v.type
        if t.ndim != first.ndim or any(
            t.shape[d] != first.shape[d] for d in range(first.ndim) if d != axis
        ):
            raise _shape_err(
                node, k, f"shape {t.shape} differs from input 0's {first.shape} off axis {axis}"
            )
        total += t.shape[axis]
    layouts = {v.type.layout for v in node.inputs}
    shape = first.shape[:axis] + (total,) + first.shape[axis + 1 :]
    return TensorType(shape, dtype, first.layout if len(layouts) == 1 else "")


def _infer_pad(node: Node) -> TensorType:
    x = node.inputs[0].type
    pw = node.attrs["pad_width"]
    ok = (
        isinstance(pw, tuple)
        and len(pw) == x.ndim
        and all(
            isinstance(p, tuple) and len(p) == 2 and all(isinstance(q, int) and q >= 0 for q in p)
            for p in pw
        )
    )
    if not ok:
        raise GraphError(
            f"{_where(node)}: pad_width must be {x.ndim} pairs of non-negative ints, got {pw!r}"
        )
    _float_attr(node, "pad_value")
    shape = tuple(d + b + a for d, (b, a) in zip(x.shape, pw, strict=True))
    layout = x.layout
    packed = parse_packed(layout)
    if packed is not None and (pw[4] != (0, 0) or pw[5] != (0, 0)):
        layout = ""
    return TensorType(shape, x.dtype, layout)


def _infer_cast(node: Node) -> TensorType:
    x = node.inputs[0].type
    from compiler.graph.ir import check_dtype

    return TensorType(x.shape, check_dtype(node.attrs["dtype"], _where(node)), x.layout)


def layout_transform_shape(shape: tuple[int, ...], src: str, dst: str) -> tuple[int, ...]:
    """Shape after a layout transform, or :class:`ShapeError` when it would need padding.

    Example:
        >>> layout_transform_shape((1, 32, 8, 8), "NCHW", "NCHW1n16c")
        (1, 2, 8, 8, 1, 16)
        >>> layout_transform_shape((64, 32, 3, 3), "OIHW", "OIHW16i16o")
        (4, 2, 3, 3, 16, 16)
    """

    def unpack(shape: tuple[int, ...], layout: str) -> tuple[int, ...]:
        if layout in ("NCHW", "OIHW"):
            if len(shape) != 4:
                raise ShapeError(f"layout {layout} needs a 4-d shape, got {shape}")
            return shape
        p = parse_packed(layout) or parse_packed_kernel(layout)
        if p is None:
            raise GraphError(f"unsupported layout {layout!r}")
        if len(shape) != 6 or shape[4:] != p:
            raise ShapeError(f"layout {layout} needs a 6-d shape ending in {p}, got {shape}")
        if parse_packed(layout):
            return (shape[0] * p[0], shape[1] * p[1], shape[2], shape[3])
        return (shape[0] * p[1], shape[1] * p[0], shape[2], shape[3])

    def pack(shape: tuple[int, ...], layout: str) -> tuple[int, ...]:
        if layout in ("NCHW", "OIHW"):
            return shape
        p = parse_packed(layout)
        a, b, h, w = shape
        if p is not None:
            bn, bc = p
            if a % bn or b % bc:
                raise ShapeError(
                    f"shape {shape} does not divide into {layout} blocks "
                    f"({bn}n, {bc}c); pad channels first"
                )
            return (a // bn, b // bc, h, w, bn, bc)
        k = parse_packed_kernel(layout)
        if k is None:
            raise GraphError(f"unsupported layout {layout!r}")
        bi, bo = k
        if a % bo or b % bi:
            raise ShapeError(
                f"kernel shape {shape} does not divide into {layout} blocks "
                f"({bi}i, {bo}o); pad channels first"
            )
        return (a // bo, b // bi, h, w, bi, bo)

    kernel = (src.startswith("OIHW"), dst.startswith("OIHW"))
    if kernel[0] != kernel[1]:
        raise GraphError(f"cannot transform layout {src} into {dst}")
    return pack(unpack(shape, src), dst)


def _infer_layout_transform(node: Node) -> TensorType:
    x = node.inputs[0].type
    src, dst = node.attrs["src_layout"], node.attrs["dst_layout"]
    if x.layout and x.layout != src:
        raise _shape_err(node, 0, f"has layout {x.layout}, not src_layout {src}")
    try:
        shape = layout_transform_shape(x.shape, src, dst)
    except (ShapeError, GraphError) as e:
        raise _shape_err(node, 0, str(e)) from None
    return TensorType(shape, x.dtype, "" if dst.startswith("OIHW") else dst)


def _axis_ints(node: Node, key: str, rank: int) -> tuple[int, ...]:
    v = node.attrs[key]
    if (
        not isinstance(v, tuple)
        or len(v) != rank
        or not all(isinstance(x, int) and not isinstance(x, bool) for x in v)
    ):
        raise GraphError(f"{_where(node)}: attribute {key} must be {rank} ints, got {v!r}")
    return v


def slice_extent(begin: int, end: int, stride: int) -> int:
    """Elements of ``range(begin, end, stride)``: the resolved bounds of ``strided_slice``.

    Example:
        >>> slice_extent(0, 5, 2), slice_extent(4, -1, -1), slice_extent(3, 3, 1)
        (3, 5, 0)
    """
    return len(range(begin, end, stride))


def _infer_strided_slice(node: Node) -> TensorType:
    # begin/end/strides are resolved per axis (python range() bounds, no negative wrap), so
    # every backend reads x[begin + i * stride] with no clamping of its own
    x = node.inputs[0].type
    begin = _axis_ints(node, "begin", x.ndim)
    end = _axis_ints(node, "end", x.ndim)
    strides = _axis_ints(node, "strides", x.ndim)
    shape = []
    for d, (b, e, s) in enumerate(zip(begin, end, strides, strict=True)):
        if s == 0:
            raise GraphError(f"{_where(node)}: axis {d} has stride 0")
        n = slice_extent(b, e, s)
        if n < 1 or not 0 <= b < x.shape[d] or not 0 <= b + (n - 1) * s < x.shape[d]:
            raise _shape_err(
                node, 0, f"axis {d}: range({b}, {e}, {s}) is empty or leaves [0, {x.shape[d]})"
            )
        shape.append(n)
    return TensorType(tuple(shape), x.dtype, _kept_packed(x, tuple(shape)))


def _kept_packed(x: TensorType, shape: tuple[int, ...]) -> str:
    """``x``'s packed layout when a result of ``shape`` keeps its block axes whole (a channel
    slice in whole blocks, a spatial resize of a packed tensor), else no layout."""
    if parse_packed(x.layout) is not None and len(shape) == 6 and shape[4:] == x.shape[4:]:
        return x.layout
    return ""


def _infer_take(node: Node) -> TensorType:
    x = node.inputs[0].type
    axis = _axis(node, x.ndim)
    ishape = node.attrs["indices_shape"]
    indices = node.attrs["indices"]
    if not isinstance(ishape, tuple) or not all(isinstance(d, int) and d >= 1 for d in ishape):
        raise GraphError(f"{_where(node)}: indices_shape must be positive ints, got {ishape!r}")
    if not isinstance(indices, tuple) or len(indices) != math.prod(ishape):
        raise GraphError(
            f"{_where(node)}: indices must be {math.prod(ishape)} ints (indices_shape {ishape})"
        )
    for k in indices:
        if not isinstance(k, int) or not 0 <= k < x.shape[axis]:
            raise _shape_err(node, 0, f"index {k!r} is out of range for axis {axis} ({x.shape})")
    return TensorType(x.shape[:axis] + ishape + x.shape[axis + 1 :], x.dtype)


def _infer_dilate(node: Node) -> TensorType:
    x = node.inputs[0].type
    strides = _axis_ints(node, "strides", x.ndim)
    if min(strides, default=1) < 1:
        raise GraphError(f"{_where(node)}: strides {strides} must be >= 1")
    return TensorType(
        tuple((d - 1) * s + 1 for d, s in zip(x.shape, strides, strict=True)), x.dtype
    )


def _infer_im2col(node: Node) -> TensorType:
    x = node.inputs[0].type
    if x.ndim != 4 or x.layout not in ("", "NCHW"):
        raise _shape_err(node, 0, f"im2col reads an NCHW value, got {x.shape} {x.layout!r}")
    window, stride = node.attrs["window"], node.attrs["stride"]
    for key, v in (("window", window), ("stride", stride)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise GraphError(f"{_where(node)}: attribute {key} must be an int >= 1, got {v!r}")
    before = _axis_ints(node, "pad_before", 2)
    out_hw = _axis_ints(node, "out_hw", 2)
    if min(before) < 0 or min(out_hw) < 1:
        raise GraphError(
            f"{_where(node)}: pad_before {before} must be >= 0 and out_hw {out_hw} >= 1"
        )
    n, c = x.shape[:2]
    return TensorType((n, c * window * window, *out_hw), x.dtype, x.layout)


#: The block layouts of ``pack`` and ``unpack`` (:func:`block_pack_shape`).
BLOCK_LAYOUTS = ("nchw", "rows", "batch_rows", "batch_weight")


def block_pack_shape(
    shape: tuple[int, ...], layout: str, blocks: tuple[int, ...]
) -> tuple[int, ...]:
    """The shape of a value of ``shape`` packed in block layout ``layout`` with ``blocks``
    ``(b, c)`` (the ``pack`` operator; the blocked axes padded up to whole blocks):
    ``nchw``: ``(N, C, H, W)`` to ``(N/b, C/c, H, W, b, c)``; ``rows``: ``(N, K)`` to
    ``(N/b, K/c, b, c)``; ``batch_rows``: ``(..., T, K)`` to ``(B, T/b, K/c, b, c)`` (the
    leading axes flattened into ``B``); ``batch_weight``: ``(..., K, N)`` to
    ``(B, N/b, K/c, b, c)`` (each matrix transposed).

    Example:
        >>> block_pack_shape((1, 3, 8, 8), "nchw", (1, 16))
        (1, 1, 8, 8, 1, 16)
        >>> block_pack_shape((2, 4, 6, 5), "batch_weight", (4, 4))
        (8, 2, 2, 4, 4)
    """
    b, c = blocks
    if layout == "nchw" and len(shape) == 4:
        n, ch, h, w = shape
        return (-(-n // b), -(-ch // c), h, w, b, c)
    if layout == "rows" and len(shape) == 2:
        return (-(-shape[0] // b), -(-shape[1] // c), b, c)
    if layout in ("batch_rows", "batch_weight") and len(shape) >= 2:
        t, k = shape[-2:] if layout == "batch_rows" else shape[-2:][::-1]
        return (math.prod(shape[:-2]), -(-t // b), -(-k // c), b, c)
    want = {"nchw": "4", "rows": "2"}.get(layout, "2 or more")
    if layout not in BLOCK_LAYOUTS:
        raise GraphError(f"block layout {layout!r} is not one of {BLOCK_LAYOUTS}")
    raise ShapeError(f"block layout {layout} packs a value of {want} axes, got {shape}")


def _block_layout(node: Node) -> str:
    layout = node.attrs["layout"]
    if layout not in BLOCK_LAYOUTS:
        raise GraphError(
            f"{_where(node)}: attribute layout {layout!r} is not one of {BLOCK_LAYOUTS}"
        )
    return str(layout)


def _infer_pack(node: Node) -> TensorType:
    x = node.inputs[0].type
    layout = _block_layout(node)
    blocks = _axis_ints(node, "blocks", 2)
    if min(blocks) < 1:
        raise GraphError(f"{_where(node)}: blocks {blocks} must be >= 1")
    try:
        return TensorType(block_pack_shape(x.shape, layout, blocks), x.dtype)
    except ShapeError as e:
        raise _shape_err(node, 0, str(e)) from None


def _infer_unpack(node: Node) -> TensorType:
    p = node.inputs[0].type
    layout = _block_layout(node)
    given = node.attrs["shape"]
    shape = _axis_ints(node, "shape", len(given) if isinstance(given, tuple) else -1)
    if min(shape, default=0) < 1:
        raise GraphError(f"{_where(node)}: attribute shape {shape} must have axes >= 1")
    try:
        packed = block_pack_shape(shape, layout, p.shape[-2:] if p.ndim >= 2 else (1, 1))
    except ShapeError as e:
        raise _shape_err(node, None, f"attribute shape: {e}") from None
    if packed != p.shape:
        raise _shape_err(node, 0, f"{p.shape} is not shape {shape} packed in block layout "
                                  f"{layout} (that is {packed})")  # fmt: skip
    layout_name = "NCHW" if layout == "nchw" else ""
    return TensorType(shape, p.dtype, layout_name)


def _infer_broadcast_to(node: Node) -> TensorType:
    x = node.inputs[0].type
    shape = node.attrs["shape"]
    if not isinstance(shape, tuple) or not all(isinstance(d, int) and d >= 1 for d in shape):
        raise GraphError(f"{_where(node)}: shape must be positive ints, got {shape!r}")
    if len(shape) < x.ndim or broadcast_shapes(x.shape, shape) != shape:
        raise _shape_err(node, 0, f"shape {x.shape} does not broadcast to {shape}")
    return TensorType(shape, x.dtype)


def _infer_tile(node: Node) -> TensorType:
    x = node.inputs[0].type
    reps = _axis_ints(node, "reps", x.ndim)
    if min(reps, default=1) < 1:
        raise GraphError(f"{_where(node)}: reps {reps} must be >= 1")
    return TensorType(tuple(d * r for d, r in zip(x.shape, reps, strict=True)), x.dtype)


def _reduced_shape(node: Node, axes: tuple[int, ...], keepdims: Any) -> tuple[int, ...]:
    x = node.inputs[0].type
    if not isinstance(keepdims, bool):
        raise GraphError(f"{_where(node)}: keepdims must be a bool, got {keepdims!r}")
    if (
        not isinstance(axes, tuple)
        or not axes
        or list(axes) != sorted(set(axes))
        or not all(isinstance(a, int) and 0 <= a < x.ndim for a in axes)
    ):
        raise GraphError(
            f"{_where(node)}: axes must be sorted distinct ints in [0, {x.ndim}), got {axes!r}"
        )
    if keepdims:
        return tuple(1 if k in axes else d for k, d in enumerate(x.shape))
    return tuple(d for k, d in enumerate(x.shape) if k not in axes)


def _infer_reduce(node: Node) -> TensorType:
    x = node.inputs[0].type
    if node.op == "mean":
        _need_float(node, 0)
    return TensorType(_reduced_shape(node, node.attrs["axes"], node.attrs["keepdims"]), x.dtype)


def _infer_argmax(node: Node) -> TensorType:
    x = node.inputs[0].type
    axis = _axis(node, x.ndim)
    if not isinstance(node.attrs["select_last_index"], bool):
        raise GraphError(f"{_where(node)}: select_last_index must be a bool")
    return TensorType(_reduced_shape(node, (axis,), node.attrs["keepdims"]), "int64")


#: The resize modes the contract supports (``compiler.topi.resize`` describes them).
RESIZE_METHODS = ("nearest", "linear")
RESIZE_COORDINATE_MODES = ("half_pixel", "pytorch_half_pixel", "asymmetric", "align_corners")
RESIZE_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _infer_resize(node: Node) -> TensorType:
    x = node.inputs[0].type
    a = node.attrs
    sizes = _axis_ints(node, "sizes", x.ndim)
    scales = a["scales"]
    if (
        not isinstance(scales, tuple)
        or len(scales) != x.ndim
        or not all(isinstance(v, float) and v > 0 for v in scales)
    ):
        raise GraphError(f"{_where(node)}: scales must be {x.ndim} positive floats, got {scales!r}")
    if min(sizes) < 1:
        raise GraphError(f"{_where(node)}: sizes {sizes} must be >= 1")
    for key, allowed in (
        ("method", RESIZE_METHODS),
        ("coordinate_transformation_mode", RESIZE_COORDINATE_MODES),
        ("nearest_mode", RESIZE_NEAREST_MODES),
    ):
        if a[key] not in allowed:
            raise GraphError(f"{_where(node)}: {key} {a[key]!r} is not one of {allowed}")
    if a["method"] != "nearest":  # nearest copies elements: int8 too
        _need_float(node, 0)
    return TensorType(sizes, x.dtype, _kept_packed(x, sizes) if scales[4:] == (1.0, 1.0) else "")


_POOL_ATTRS = {
    "pool_size": REQUIRED,
    "strides": (1, 1),
    "padding": (0, 0, 0, 0),
    "dilation": (1, 1),
    "ceil_mode": False,
    "layout": "NCHW",
}

for _name in ("add", "subtract", "multiply", "divide", "maximum", "minimum"):
    _quant = "int8" if _name in ("add", "multiply", "minimum", "maximum") else "float"
    register_op(OpDef(_name, INJ, 2, 2, {}, _infer_binary, _quant))
register_op(OpDef("relu", INJ, 1, 1, {}, _infer_unary, "pass-through"))
register_op(OpDef("negative", INJ, 1, 1, {}, _infer_unary))
for _name in ("sigmoid", "exp", "sqrt", "log", "tanh", "erf"):
    register_op(OpDef(_name, INJ, 1, 1, {}, _infer_unary_float))
register_op(OpDef("hard_swish", INJ, 1, 1, {}, _infer_unary_float, "int8"))
register_op(OpDef("gelu", INJ, 1, 1, {"approximate": "none"}, _infer_gelu))
register_op(OpDef("power", INJ, 2, 2, {}, _infer_power))
for _name in ("equal", "less", "greater", "less_equal", "greater_equal"):
    register_op(OpDef(_name, INJ, 2, 2, {}, _infer_compare))
for _name in ("logical_and", "logical_or"):
    register_op(OpDef(_name, INJ, 2, 2, {}, _infer_logical))
register_op(OpDef("logical_not", INJ, 1, 1, {}, _infer_logical))
register_op(OpDef("where", INJ, 3, 3, {}, _infer_where))

register_op(
    OpDef(
        "conv2d",
        COF,
        2,
        3,
        {
            "strides": (1, 1),
            "padding": (0, 0, 0, 0),
            "dilation": (1, 1),
            "groups": 1,
            "data_layout": "NCHW",
            "kernel_layout": "OIHW",
        },
        _infer_conv2d,
        "int8",
    )
)
register_op(OpDef("dense", COF, 2, 3, {}, _infer_dense, "int8"))
register_op(OpDef("matmul", COF, 2, 2, {}, _infer_matmul, "int8"))
register_op(OpDef("clip", INJ, 1, 1, {"a_min": REQUIRED, "a_max": REQUIRED}, _infer_clip, "int8"))
register_op(OpDef("leaky_relu", INJ, 1, 1, {"alpha": 0.01}, _infer_leaky_relu, "int8"))
register_op(
    OpDef("hard_sigmoid", INJ, 1, 1, {"alpha": 0.2, "beta": 0.5}, _infer_hard_sigmoid, "int8")
)
register_op(OpDef("batch_norm", OPQ, 5, 5, {"epsilon": 1e-5}, _infer_batch_norm))
register_op(OpDef("max_pool2d", RED, 1, 1, dict(_POOL_ATTRS), _infer_pool, "pass-through"))
register_op(
    OpDef("avg_pool2d", RED, 1, 1, {**_POOL_ATTRS, "count_include_pad": False}, _infer_pool)
)
register_op(OpDef("global_avg_pool2d", RED, 1, 1, {"layout": "NCHW"}, _infer_global_pool, "int8"))
register_op(OpDef("softmax", OPQ, 1, 1, {"axis": REQUIRED}, _infer_softmax))
register_op(OpDef("reshape", INJ, 1, 1, {"newshape": REQUIRED}, _infer_reshape, "pass-through"))
register_op(OpDef("transpose", INJ, 1, 1, {"axes": REQUIRED}, _infer_transpose, "pass-through"))
register_op(OpDef("concat", INJ, 1, None, {"axis": REQUIRED}, _infer_concat, "int8"))
register_op(OpDef("pad", INJ, 1, 1, {"pad_width": REQUIRED, "pad_value": 0.0}, _infer_pad))
register_op(
    OpDef(
        "strided_slice",
        INJ,
        1,
        1,
        {"begin": REQUIRED, "end": REQUIRED, "strides": REQUIRED},
        _infer_strided_slice,
        "pass-through",
    )
)
register_op(
    OpDef(
        "take",
        INJ,
        1,
        1,
        {"axis": REQUIRED, "indices": REQUIRED, "indices_shape": REQUIRED},
        _infer_take,
    )
)
for _name in ("sum", "mean", "max", "min"):
    register_op(OpDef(_name, RED, 1, 1, {"axes": REQUIRED, "keepdims": False}, _infer_reduce))
register_op(
    OpDef(
        "argmax",
        RED,
        1,
        1,
        {"axis": REQUIRED, "keepdims": False, "select_last_index": False},
        _infer_argmax,
    )
)
register_op(
    OpDef(
        "resize",
        INJ,
        1,
        1,
        {
            "sizes": REQUIRED,
            "scales": REQUIRED,
            "method": "nearest",
            "coordinate_transformation_mode": "half_pixel",
            "nearest_mode": "round_prefer_floor",
        },
        _infer_resize,
        "int8",
    )
)
register_op(OpDef("dilate", INJ, 1, 1, {"strides": REQUIRED}, _infer_dilate))
register_op(
    OpDef(
        "im2col",
        OPQ,  # each input value is read window^2 / stride^2 times: fusing its producer into
        # it would compute the producer as many times per value
        1,
        1,
        {"window": REQUIRED, "stride": REQUIRED, "pad_before": REQUIRED, "out_hw": REQUIRED},
        _infer_im2col,
        "pass-through",
    )
)
register_op(
    OpDef("pack", INJ, 1, 1, {"layout": REQUIRED, "blocks": REQUIRED}, _infer_pack, "integer")
)
register_op(
    OpDef("unpack", INJ, 1, 1, {"layout": REQUIRED, "shape": REQUIRED}, _infer_unpack, "integer")
)
register_op(OpDef("broadcast_to", INJ, 1, 1, {"shape": REQUIRED}, _infer_broadcast_to))
register_op(OpDef("tile", INJ, 1, 1, {"reps": REQUIRED}, _infer_tile))
register_op(OpDef("cast", INJ, 1, 1, {"dtype": REQUIRED}, _infer_cast))
register_op(
    OpDef(
        "layout_transform",
        INJ,
        1,
        1,
        {"src_layout": REQUIRED, "dst_layout": REQUIRED},
        _infer_layout_transform,
    )
)


def is_elementwise(op: str) -> bool:
    """True for the layout-agnostic elementwise operators (unary and broadcasting binary).

    Example:
        >>> is_elementwise("add"), is_elementwise("reshape")
        (True, False)
    """
    return op in _ELEMENTWISE


_ELEMENTWISE = frozenset(
    {
        "add", "subtract", "multiply", "divide", "maximum", "minimum", "relu", "negative",
        "sigmoid", "exp", "sqrt", "hard_swish", "clip", "leaky_relu", "hard_sigmoid", "cast",
        "log", "tanh", "erf", "gelu",
    }
)  # fmt: skip

__all__ = [
    "OPS",
    "OpDef",
    "REQUIRED",
    "broadcast_shapes",
    "conv_out_size",
    "get_op",
    "is_elementwise",
    "layout_transform_shape",
    "BLOCK_LAYOUTS",
    "block_pack_shape",
    "op_names",
    "parse_packed",
    "parse_packed_kernel",
    "register_op",
    "slice_extent",
]
