"""Tensor expressions of the graph operators, by contract name (see ``compiler.strategy``).

Each entry takes the node's input tensors, its attributes and a name, checks the attributes
(raising a ``compiler.errors`` error that names the node and the operator) and returns the
output tensor built from ``compiler.topi``.

Example:
    >>> from compiler import te
    >>> x = te.placeholder((1, 2, 8, 8, 1, 16), name="x")
    >>> w = te.placeholder((4, 2, 3, 3, 16, 16), name="w")
    >>> attrs = dict(strides=(1, 1), padding=(1, 1, 1, 1), dilation=(1, 1), groups=1,
    ...              data_layout="NCHW1n16c", kernel_layout="OIHW16i16o")
    >>> compute_op("conv2d", [x, w], attrs, "conv0").shape
    (1, 4, 8, 8, 1, 16)
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from compiler import topi
from compiler.errors import CompilerError, ShapeError, TEError
from compiler.ir import expr as E
from compiler.ir import op
from compiler.ir.dtype import as_dtype
from compiler.ir.expr import const
from compiler.registry import CpuImpl, register
from compiler.te import compute, reduce_axis
from compiler.te import sum as te_sum
from compiler.te.tensor import Tensor
from compiler.topi import activation, logical, reduction, resize, transform
from compiler.topi.matmul import batch_matmul, dense_split_k

ComputeFn = Callable[[Sequence[Tensor], Mapping[str, Any], str], Tensor]

#: Lanes of the split-K dense (one AVX-512 register of float32).
DENSE_LANES = 16

_KERNEL = re.compile(r"^OIHW(\d+)i(\d+)o$")


class StrategyError(TEError):
    """A graph node the CPU strategy cannot implement (unknown operator, bad attribute)."""


def _fail(op: str, name: str, msg: str) -> StrategyError:
    return StrategyError(f"{op} node {name!r}: {msg}")


def _arity(op: str, name: str, inputs: Sequence[Tensor], *counts: int) -> None:
    if len(inputs) not in counts:
        want = " or ".join(str(c) for c in counts)
        raise _fail(op, name, f"takes {want} inputs, got {len(inputs)}")


def _attr(op: str, name: str, attrs: Mapping[str, Any], key: str, default: Any = None) -> Any:
    if key in attrs:
        return attrs[key]
    if default is None:
        raise _fail(op, name, f"missing attribute {key!r} (has {sorted(attrs)})")
    return default


def _known(op: str, name: str, attrs: Mapping[str, Any], allowed: Sequence[str]) -> None:
    extra = sorted(set(attrs) - set(allowed))
    if extra:
        raise _fail(op, name, f"unsupported attributes {extra} (supported: {sorted(allowed)})")


def _ints(op: str, name: str, value: Any, n: int, key: str) -> tuple[int, ...]:
    vals = tuple(value) if isinstance(value, list | tuple) else (value,) * n
    if len(vals) != n or not all(isinstance(v, int) for v in vals):
        raise _fail(op, name, f"attribute {key}={value!r} must be {n} ints")
    return vals


# Convolution -----------------------------------------------------------------------------------

_CONV_ATTRS = ("strides", "padding", "dilation", "groups", "data_layout", "kernel_layout")


def _conv2d(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    _known("conv2d", name, attrs, _CONV_ATTRS)
    strides = _ints("conv2d", name, attrs.get("strides", (1, 1)), 2, "strides")
    padding = _ints("conv2d", name, attrs.get("padding", (0, 0, 0, 0)), 4, "padding")
    dilation = _ints("conv2d", name, attrs.get("dilation", (1, 1)), 2, "dilation")
    groups = attrs.get("groups", 1)
    data_layout = attrs.get("data_layout", "NCHW")
    kernel_layout = attrs.get("kernel_layout", "OIHW")
    if not isinstance(groups, int) or groups < 1:
        raise _fail("conv2d", name, f"groups={groups!r} must be a positive int")
    try:
        blocks = transform.parse_layout(data_layout, f"conv2d node {name!r} data_layout")
    except ShapeError as e:
        raise _fail("conv2d", name, str(e)) from None
    if blocks is None:
        if kernel_layout != "OIHW":
            raise _fail(
                "conv2d", name, f"NCHW data needs kernel_layout 'OIHW', got {kernel_layout!r}"
            )
        _arity("conv2d", name, inputs, 2, 3)
        out = topi.conv2d_nchw(inputs[0], inputs[1], strides, padding, dilation, groups, name=name)
        if len(inputs) == 2:
            return out
        bias = inputs[2]
        if bias.shape != (out.shape[1],) or bias.dtype != out.dtype:
            raise _fail(
                "conv2d",
                name,
                f"bias must be {out.dtype}[{out.shape[1]}], got {bias.dtype}{list(bias.shape)}",
            )
        return compute(
            out.shape,
            lambda n, o, y, x: out[n, o, y, x] + bias[o],
            name=f"{name}_bias",
            tag="bias_add",
        )
    m = _KERNEL.match(kernel_layout) if isinstance(kernel_layout, str) else None
    if m is None:
        raise _fail(
            "conv2d",
            name,
            f"packed data ({data_layout}) needs kernel_layout 'OIHW{{i}}i{{o}}o', "
            f"got {kernel_layout!r}",
        )
    _arity("conv2d", name, inputs, 2)
    data, kernel = inputs
    bi, bo = int(m.group(1)), int(m.group(2))
    if data.ndim != 6 or data.shape[4:] != blocks:
        raise _fail("conv2d", name, f"data {data.shape} is not in layout {data_layout}")
    depthwise = groups > 1 and groups == data.shape[1] * blocks[1]
    want_i = 1 if depthwise else blocks[1]
    if kernel.ndim != 6 or kernel.shape[4] != bi or kernel.shape[5] != bo or bi != want_i:
        raise _fail(
            "conv2d",
            name,
            f"kernel {kernel.shape} is not in layout {kernel_layout} with an input "
            f"block of {want_i} (the data's channel block is {blocks[1]})",
        )
    return topi.conv2d_nchwc(
        data, kernel, strides, padding, dilation, groups, kernel_layout="OIHWio", name=name
    )


# Dense and matmul ------------------------------------------------------------------------------


def _dense(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    _known("dense", name, attrs, ())
    _arity("dense", name, inputs, 2, 3)
    data, weight = inputs[0], inputs[1]
    bias = inputs[2] if len(inputs) == 3 else None
    if data.ndim == 2 and data.dtype.is_float and data.shape[1] % DENSE_LANES == 0:
        return dense_split_k(data, weight, bias, DENSE_LANES, name=name)
    return topi.dense(data, weight, bias, name=name)


def _matmul(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    _known("matmul", name, attrs, ())
    _arity("matmul", name, inputs, 2)
    return batch_matmul(inputs[0], inputs[1], name=name)


# Elementwise ------------------------------------------------------------------------------------


def _binary(fn: Callable[..., Tensor]) -> ComputeFn:
    def run(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
        _known(fn.__name__, name, attrs, ())
        _arity(fn.__name__, name, inputs, 2)
        return fn(inputs[0], inputs[1], name=name)

    return run


def _unary(fn: Callable[..., Tensor], op: str, keys: Sequence[str] = ()) -> ComputeFn:
    def run(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
        _known(op, name, attrs, keys)
        _arity(op, name, inputs, 1)
        values = [_attr(op, name, attrs, k) for k in keys]
        for k, v in zip(keys, values, strict=True):
            if not isinstance(v, int | float):
                raise _fail(op, name, f"attribute {k}={v!r} must be a number")
        return fn(inputs[0], *[float(v) for v in values], name=name)

    return run


def _gelu(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    _known("gelu", name, attrs, ("approximate",))
    _arity("gelu", name, inputs, 1)
    return activation.gelu(inputs[0], str(attrs.get("approximate", "none")), name=name)


def _compare(kind: str) -> ComputeFn:
    def run(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
        _known(kind, name, attrs, ())
        _arity(kind, name, inputs, 2)
        if kind in logical.LOGICAL:
            return logical.logical(inputs[0], inputs[1], kind, name)
        return logical.compare(inputs[0], inputs[1], kind, name)

    return run


def _logical_not(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    _known("logical_not", name, attrs, ())
    _arity("logical_not", name, inputs, 1)
    return logical.logical_not(inputs[0], name=name)


def _where(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    _known("where", name, attrs, ())
    _arity("where", name, inputs, 3)
    return logical.where(inputs[0], inputs[1], inputs[2], name=name)


def _clip(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    _known("clip", name, attrs, ("a_min", "a_max"))
    _arity("clip", name, inputs, 1)
    lo = float(attrs.get("a_min", -math.inf))
    hi = float(attrs.get("a_max", math.inf))
    x = inputs[0]
    if x.dtype.is_int:
        lo = max(lo, float(x.dtype.min_value))
        hi = min(hi, float(x.dtype.max_value))
        return topi.clip(x, int(math.ceil(lo)), int(math.floor(hi)), name=name)
    if lo == -math.inf and hi == math.inf:
        return topi.add(x, 0.0, name=name)
    if lo == -math.inf:
        return topi.minimum(x, hi, name=name)
    if hi == math.inf:
        return topi.maximum(x, lo, name=name)
    return topi.clip(x, lo, hi, name=name)


def _batch_norm(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    _known("batch_norm", name, attrs, ("epsilon",))
    _arity("batch_norm", name, inputs, 5)
    eps = attrs.get("epsilon", 1e-5)
    x, scale, bias, mean, var = inputs
    return activation.batch_norm(x, scale, bias, mean, var, epsilon=float(eps), name=name)


# Pooling ----------------------------------------------------------------------------------------

_POOL_ATTRS = ("pool_size", "strides", "padding", "dilation", "ceil_mode", "layout")


def _pool_common(
    op: str, inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str, extra: Sequence[str]
) -> dict[str, Any]:
    _known(op, name, attrs, (*_POOL_ATTRS, *extra))
    _arity(op, name, inputs, 1)
    layout = attrs.get("layout", "NCHW")
    try:
        transform.logical_shape(inputs[0].shape, layout, f"{op} node {name!r} layout")
    except ShapeError as e:
        raise _fail(op, name, str(e)) from None
    size = _ints(op, name, _attr(op, name, attrs, "pool_size"), 2, "pool_size")
    return dict(
        pool_size=size,
        stride=_ints(op, name, attrs.get("strides", size), 2, "strides"),
        padding=_ints(op, name, attrs.get("padding", (0, 0, 0, 0)), 4, "padding"),
        dilation=_ints(op, name, attrs.get("dilation", (1, 1)), 2, "dilation"),
        ceil_mode=bool(attrs.get("ceil_mode", False)),
    )


def _max_pool(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    kw = _pool_common("max_pool2d", inputs, attrs, name, ())
    return topi.max_pool2d(inputs[0], name=name, **kw)


def _avg_pool(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    kw = _pool_common("avg_pool2d", inputs, attrs, name, ("count_include_pad",))
    include = bool(attrs.get("count_include_pad", False))
    return topi.avg_pool2d(inputs[0], count_include_pad=include, name=name, **kw)


def _global_avg_pool(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    _known("global_avg_pool2d", name, attrs, ("layout",))
    _arity("global_avg_pool2d", name, inputs, 1)
    layout = attrs.get("layout", "NCHW")
    try:
        transform.logical_shape(inputs[0].shape, layout, f"global_avg_pool2d node {name!r}")
    except ShapeError as e:
        raise _fail("global_avg_pool2d", name, str(e)) from None
    return topi.global_avg_pool2d(inputs[0], name=name)


def _reduction(kind: str) -> ComputeFn:
    def run(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
        _known(kind, name, attrs, ("axes", "keepdims"))
        _arity(kind, name, inputs, 1)
        axes = _attr(kind, name, attrs, "axes")
        return reduction.reduce(inputs[0], kind, axes, bool(attrs.get("keepdims")), name)

    return run


def _argmax(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    _known("argmax", name, attrs, ("axis", "keepdims", "select_last_index"))
    _arity("argmax", name, inputs, 1)
    return reduction.argmax(
        inputs[0],
        _attr("argmax", name, attrs, "axis"),
        bool(attrs.get("keepdims")),
        bool(attrs.get("select_last_index")),
        name,
    )


def _softmax(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    _known("softmax", name, attrs, ("axis",))
    _arity("softmax", name, inputs, 1)
    axis = _attr("softmax", name, attrs, "axis")
    if not isinstance(axis, int) or not 0 <= axis < inputs[0].ndim:
        raise _fail("softmax", name, f"axis={axis!r} must be in [0, {inputs[0].ndim})")
    return topi.softmax(inputs[0], axis, name=name)


# Data movement ----------------------------------------------------------------------------------


def _reshape(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    _known("reshape", name, attrs, ("newshape",))
    _arity("reshape", name, inputs, 1)
    shape = _attr("reshape", name, attrs, "newshape")
    if not isinstance(shape, tuple | list) or not all(isinstance(d, int) and d > 0 for d in shape):
        raise _fail("reshape", name, f"newshape={shape!r} must be positive ints (no -1 or 0)")
    return transform.reshape(inputs[0], shape, name=name)


def _transpose(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    _known("transpose", name, attrs, ("axes",))
    _arity("transpose", name, inputs, 1)
    return transform.transpose(inputs[0], _attr("transpose", name, attrs, "axes"), name=name)


def _concat(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    _known("concat", name, attrs, ("axis",))
    axis = _attr("concat", name, attrs, "axis")
    if not isinstance(axis, int):
        raise _fail("concat", name, f"axis={axis!r} must be an int")
    return transform.concat(inputs, axis, name=name)


def _strided_slice(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    _known("strided_slice", name, attrs, ("begin", "end", "strides"))
    _arity("strided_slice", name, inputs, 1)
    n = inputs[0].ndim
    begin, end, strides = (
        _ints("strided_slice", name, _attr("strided_slice", name, attrs, k), n, k)
        for k in ("begin", "end", "strides")
    )
    return transform.strided_slice(inputs[0], begin, end, strides, name=name)


def _take(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    _known("take", name, attrs, ("axis", "indices", "indices_shape"))
    _arity("take", name, inputs, 1)
    axis = _attr("take", name, attrs, "axis")
    indices = _attr("take", name, attrs, "indices")
    ishape = _attr("take", name, attrs, "indices_shape")
    return transform.take(inputs[0], indices, ishape, axis, name=name)


_RESIZE_ATTRS = ("sizes", "scales", "method", "coordinate_transformation_mode", "nearest_mode")


def _resize(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    _known("resize", name, attrs, _RESIZE_ATTRS)
    _arity("resize", name, inputs, 1)
    n = inputs[0].ndim
    return resize.resize(
        inputs[0],
        _ints("resize", name, _attr("resize", name, attrs, "sizes"), n, "sizes"),
        [float(v) for v in _attr("resize", name, attrs, "scales")],
        str(attrs.get("method", "nearest")),
        str(attrs.get("coordinate_transformation_mode", "half_pixel")),
        str(attrs.get("nearest_mode", "round_prefer_floor")),
        name=name,
    )


def _dilate(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    _known("dilate", name, attrs, ("strides",))
    _arity("dilate", name, inputs, 1)
    n = inputs[0].ndim
    strides = _ints("dilate", name, _attr("dilate", name, attrs, "strides"), n, "strides")
    return transform.dilate(inputs[0], strides, name=name)


def _im2col(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    keys = ("window", "stride", "pad_before", "out_hw")
    _known("im2col", name, attrs, keys)
    _arity("im2col", name, inputs, 1)
    window, stride, before, out_hw = (_attr("im2col", name, attrs, k) for k in keys)
    return transform.im2col(inputs[0], window, stride, before, out_hw, name=name)


def _pack(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    _known("pack", name, attrs, ("layout", "blocks"))
    _arity("pack", name, inputs, 1)
    layout, blocks = (_attr("pack", name, attrs, k) for k in ("layout", "blocks"))
    return transform.block_pack(inputs[0], layout, _ints("pack", name, blocks, 2, "blocks"), name)


def _unpack(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    _known("unpack", name, attrs, ("layout", "shape"))
    _arity("unpack", name, inputs, 1)
    layout, shape = (_attr("unpack", name, attrs, k) for k in ("layout", "shape"))
    return transform.block_unpack(inputs[0], layout, shape, name)


def _broadcast_to(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    _known("broadcast_to", name, attrs, ("shape",))
    _arity("broadcast_to", name, inputs, 1)
    return transform.broadcast_to(inputs[0], _attr("broadcast_to", name, attrs, "shape"), name)


def _tile(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    _known("tile", name, attrs, ("reps",))
    _arity("tile", name, inputs, 1)
    reps = _ints("tile", name, _attr("tile", name, attrs, "reps"), inputs[0].ndim, "reps")
    return transform.tile(inputs[0], reps, name=name)


def _pad(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    _known("pad", name, attrs, ("pad_width", "pad_value"))
    _arity("pad", name, inputs, 1)
    width = _attr("pad", name, attrs, "pad_width")
    x = inputs[0]
    if len(width) != x.ndim or any(len(p) != 2 for p in width):
        raise _fail(
            "pad", name, f"pad_width={width!r} needs one (before, after) per axis of {x.shape}"
        )
    value = attrs.get("pad_value", 0.0)
    fill = int(value) if x.dtype.is_int else float(value)
    return topi.pad(x, [p[0] for p in width], [p[1] for p in width], fill, name=name)


def _cast(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    _known("cast", name, attrs, ("dtype",))
    _arity("cast", name, inputs, 1)
    dtype = _attr("cast", name, attrs, "dtype")
    try:
        target = as_dtype(dtype)
    except CompilerError as e:
        raise _fail("cast", name, f"unknown dtype {dtype!r}: {e}") from None
    return topi.cast(inputs[0], target, name=name)


def _layout_transform(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    _known("layout_transform", name, attrs, ("src_layout", "dst_layout"))
    _arity("layout_transform", name, inputs, 1)
    src = _attr("layout_transform", name, attrs, "src_layout")
    dst = _attr("layout_transform", name, attrs, "dst_layout")
    try:
        return transform.layout_transform(inputs[0], src, dst, name=name)
    except ShapeError as e:
        raise _fail("layout_transform", name, str(e)) from None


# Quantized graphs' host operators (``compiler.quantize.ops``) -----------------------------------


def _scale(op: str, name: str, attrs: Mapping[str, Any]) -> float:
    v = _attr(op, name, attrs, "scale")
    if isinstance(v, bool) or not isinstance(v, int | float) or not 0 < v < math.inf:
        raise _fail(op, name, f"attribute scale={v!r} must be a positive float")
    return float(v)


def _quantize(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    """``clip(floor(x / scale + 1/2), -128, 127)`` in float64, as the reference: the value is
    clamped to [-128, 127] before the floor (the same result, floor being monotone and the
    bounds integers), so the float-to-int conversion never overflows."""
    _known("quantize", name, attrs, ("scale",))
    _arity("quantize", name, inputs, 1)
    scale = _scale("quantize", name, attrs)
    x = inputs[0]
    if not x.dtype.is_float:
        raise _fail("quantize", name, f"needs a float input, {x.name} is {x.dtype}")
    f64 = as_dtype("float64")

    def fq(*i: Any) -> Any:
        q = op.div(op.cast(f64, x(*i)), const(scale, f64)) + const(0.5, f64)
        q = op.minimum(op.maximum(q, const(-128.0, f64)), const(127.0, f64))
        t = op.cast("int32", q)  # truncates toward zero; one less where that rounded up
        down = op.if_then_else(op.greater(op.cast(f64, t), q), const(1), const(0))
        return op.cast("int8", t - down)

    return compute(x.shape, fq, name=name, tag="quantize")


def _dequantize(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    """``x * scale`` in float64, rounded once to float32 (the reference's arithmetic)."""
    _known("dequantize", name, attrs, ("scale",))
    _arity("dequantize", name, inputs, 1)
    scale = _scale("dequantize", name, attrs)
    x = inputs[0]
    if not x.dtype.is_int:
        raise _fail("dequantize", name, f"needs an int8 or int32 input, {x.name} is {x.dtype}")
    f64 = as_dtype("float64")
    return compute(
        x.shape,
        lambda *i: op.cast("float32", op.cast(f64, x(*i)) * const(scale, f64)),
        name=name,
        tag="dequantize",
    )


def _global_sum_pool(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    """The int32 sum of an int8 NCHW tensor over H and W."""
    _known("global_sum_pool2d", name, attrs, ())
    _arity("global_sum_pool2d", name, inputs, 1)
    x = inputs[0]
    if x.ndim != 4 or not x.dtype.is_int:
        raise _fail("global_sum_pool2d", name, f"needs a 4-d integer NCHW tensor, got {x.shape}")
    n, c, h, w = x.shape
    ky, kx = reduce_axis(h, "ky"), reduce_axis(w, "kx")
    return compute(
        (n, c, 1, 1),
        lambda b, ch, i, j: te_sum(op.cast("int32", x[b, ch, ky.var, kx.var]), axis=[ky, kx]),
        name=name,
        tag="pool_sum",
    )


def _int_attr(op: str, name: str, attrs: Mapping[str, Any], key: str, lo: int, hi: int) -> int:
    v = _attr(op, name, attrs, key)
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise _fail(op, name, f"attribute {key}={v!r} must be an int in [{lo}, {hi}]")
    return v


def _out_range(op: str, name: str, attrs: Mapping[str, Any]) -> tuple[int, int]:
    lo = _int_attr(op, name, attrs, "out_min", -128, 127)
    hi = _int_attr(op, name, attrs, "out_max", -128, 127)
    if lo > hi:
        raise _fail(op, name, f"out_min {lo} is greater than out_max {hi}")
    return lo, hi


def _half(s: Any) -> Any:
    """``2**(s-1)``, 0 for ``s = 0``, as int64 for ``s`` in [0, 62]: ``(1 << s) >> 1``, so that
    no shift is by -1."""
    one = const(1, "int64")
    return op.shift_right(op.shift_left(one, s), one)


def _round_shift(v: Any, s: Any) -> Any:
    """``floor((v + 2**(s-1)) / 2**s)`` (``v`` where ``s = 0``) on int64 ``v`` and ``s``."""
    return op.shift_right(v + _half(s), s)


def _requantize(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    """``compiler.quantize.requant.requantize_int``: per channel (along ``axis``)
    ``clip(rshift(clamp16(rshift(x, s1)) * m, s2), out_min, out_max)``, where the first
    rounding addition wraps in int32 as the accumulator does (the sum is computed in int64 and
    truncated to int32) and the rest is exact in int64."""
    _known("requantize", name, attrs, ("axis", "out_min", "out_max"))
    _arity("requantize", name, inputs, 4)
    x, mult, pre, post = inputs
    if x.dtype != as_dtype("int32"):
        raise _fail("requantize", name, f"needs an int32 input, {x.name} is {x.dtype}")
    axis = _int_attr("requantize", name, attrs, "axis", 0, max(x.ndim - 1, 0))
    lo, hi = _out_range("requantize", name, attrs)
    channels = x.shape[axis] if x.ndim else 1
    for t, what in ((mult, "multiplier"), (pre, "shift"), (post, "post_shift")):
        if t.dtype != as_dtype("int32") or tuple(t.shape) != (channels,):
            raise _fail(
                "requantize", name, f"{what} {t.name} must be int32 of shape ({channels},), "
                f"one entry per index of axis {axis}, got {t.dtype} {tuple(t.shape)}"
            )  # fmt: skip
    i64 = as_dtype("int64")

    def fr(*i: Any) -> Any:
        c = (i[axis],) if x.ndim else (0,)
        s1, s2 = op.cast(i64, pre(*c)), op.cast(i64, post(*c))
        # the ALU's ADD wraps: an accumulator within 2**(s1-1) of 2**31 turns negative
        wrapped = op.cast("int32", op.cast(i64, x(*i)) + _half(s1))
        t = op.shift_right(op.cast(i64, wrapped), s1)
        t = op.minimum(op.maximum(t, const(-32768, i64)), const(32767, i64))
        y = _round_shift(t * op.cast(i64, mult(*c)), s2)
        y = op.minimum(op.maximum(y, const(lo, i64)), const(hi, i64))
        return op.cast("int8", y)

    return compute(x.shape, fr, name=name, tag="requantize")


def _qadd(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    """``compiler.quantize.requant.add_int``: ``clip(rshift(a * lhs + b * rhs, shift))`` in
    int64 (the products stay below 2**22, the sum below 2**23)."""
    keys = ("lhs_multiplier", "rhs_multiplier", "shift", "out_min", "out_max")
    _known("qadd", name, attrs, keys)
    _arity("qadd", name, inputs, 2)
    a, b = inputs
    for t in (a, b):
        if t.dtype != as_dtype("int8"):
            raise _fail("qadd", name, f"needs int8 inputs, {t.name} is {t.dtype}")
    if tuple(a.shape) != tuple(b.shape):
        raise _fail("qadd", name, f"input shapes differ: {tuple(a.shape)} and {tuple(b.shape)}")
    lhs = _int_attr("qadd", name, attrs, "lhs_multiplier", 0, (1 << 15) - 1)
    rhs = _int_attr("qadd", name, attrs, "rhs_multiplier", 0, (1 << 15) - 1)
    shift = _int_attr("qadd", name, attrs, "shift", 0, 30)
    lo, hi = _out_range("qadd", name, attrs)
    i64 = as_dtype("int64")

    def scaled(t: Tensor, m: int, i: tuple[Any, ...]) -> Any:
        # not op.mul, which folds a multiplier of 0 away and with it the kernel's argument
        return E.Mul(op.cast(i64, t(*i)), const(m, i64))

    def fa(*i: Any) -> Any:
        acc = scaled(a, lhs, i) + scaled(b, rhs, i)
        y = _round_shift(acc, const(shift, i64))
        return op.cast("int8", op.minimum(op.maximum(y, const(lo, i64)), const(hi, i64)))

    return compute(a.shape, fa, name=name, tag="qadd")


def _int8_inputs(opname: str, name: str, inputs: Sequence[Tensor]) -> None:
    for t in inputs:
        if t.dtype != as_dtype("int8"):
            raise _fail(opname, name, f"needs int8 inputs, {t.name} is {t.dtype}")


def _qmul(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    """``compiler.quantize.requant.mul_int``: ``clip(round_shift(a * b * multiplier, shift))``
    in int64 (the product stays below 2**29); ``b`` is ``a``'s shape or one value per channel
    of an NCHW ``a`` (a squeeze-excitation's gate)."""
    _known("qmul", name, attrs, ("multiplier", "shift", "out_min", "out_max"))
    _arity("qmul", name, inputs, 2)
    a, b = inputs
    _int8_inputs("qmul", name, inputs)
    gate = a.ndim == 4 and tuple(b.shape) == (a.shape[0], a.shape[1], 1, 1)
    if tuple(b.shape) != tuple(a.shape) and not gate:
        raise _fail("qmul", name, f"input 1 of shape {tuple(b.shape)} does not match {a.name}")
    m = _int_attr("qmul", name, attrs, "multiplier", 0, (1 << 15) - 1)
    shift = _int_attr("qmul", name, attrs, "shift", 0, 30)
    lo, hi = _out_range("qmul", name, attrs)
    i64 = as_dtype("int64")

    def fm(*i: Any) -> Any:
        bi = (i[0], i[1], 0, 0) if gate else i
        acc = E.Mul(E.Mul(op.cast(i64, a(*i)), op.cast(i64, b(*bi))), const(m, i64))
        y = _round_shift(acc, const(shift, i64))
        return op.cast("int8", op.minimum(op.maximum(y, const(lo, i64)), const(hi, i64)))

    return compute(a.shape, fm, name=name, tag="qmul")


#: the attributes of the sum ``qleaky_relu`` and ``qprelu`` end in
_PARTS = ("pos_multiplier", "neg_multiplier", "shift", "out_min", "out_max")


def _clipped(v: Any, lo: int, hi: int) -> Any:
    i64 = as_dtype("int64")
    return op.minimum(op.maximum(v, const(lo, i64)), const(hi, i64))


def _parts_sum(opname: str, name: str, attrs: Mapping[str, Any]) -> Callable[[Any, Any], Any]:
    """The int8 sum a ``qleaky_relu`` or ``qprelu`` ends in, as a function of the int64 input
    ``v`` and its negative part ``neg``: ``clip(round_shift(max(v, 0) * pos + neg * neg_m,
    shift))``, as ``qadd`` computes its two operands."""
    big = (1 << 15) - 1
    mp = _int_attr(opname, name, attrs, "pos_multiplier", 0, big)
    mn = _int_attr(opname, name, attrs, "neg_multiplier", 0, big)
    shift = _int_attr(opname, name, attrs, "shift", 0, 30)
    lo, hi = _out_range(opname, name, attrs)
    i64 = as_dtype("int64")

    def total(v: Any, neg: Any) -> Any:
        # E.Mul, not op.mul, as in qadd: a multiplier of 0 must not fold an operand away
        acc = E.Mul(op.maximum(v, const(0, i64)), const(mp, i64)) + E.Mul(neg, const(mn, i64))
        return op.cast("int8", _clipped(_round_shift(acc, const(shift, i64)), lo, hi))

    return total


def _qleaky_relu(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    """``compiler.quantize.ops``' ``qleaky_relu``: ``clip(round_shift(max(x, 0) * pos +
    min(x, 0) * neg, shift))`` in int64, as ``qadd`` computes its two operands."""
    _known("qleaky_relu", name, attrs, _PARTS)
    _arity("qleaky_relu", name, inputs, 1)
    _int8_inputs("qleaky_relu", name, inputs)
    (x,) = inputs
    total = _parts_sum("qleaky_relu", name, attrs)
    i64 = as_dtype("int64")

    def fl(*i: Any) -> Any:
        v = op.cast(i64, x(*i))
        return total(v, op.minimum(v, const(0, i64)))

    return compute(x.shape, fl, name=name, tag="qleaky_relu")


def _qprelu(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    """``compiler.quantize.ops``' ``qprelu``: the ``qadd`` of ``relu(x)`` and the ``qmul`` of
    ``clip(x, neg_min, neg_max)`` by the per-channel ``slope``, in int64 as those two are."""
    from compiler.quantize.requant import gate_shape

    keys = ("neg_min", "neg_max", "slope_multiplier", "slope_shift", "slope_min", "slope_max")
    _known("qprelu", name, attrs, (*keys, *_PARTS))
    _arity("qprelu", name, inputs, 2)
    _int8_inputs("qprelu", name, inputs)
    x, slope = inputs
    if x.ndim not in (2, 4) or tuple(slope.shape) != gate_shape(x.shape):
        raise _fail("qprelu", name, f"slope of shape {tuple(slope.shape)} does not match {x.name}")
    lo_n = _int_attr("qprelu", name, attrs, "neg_min", -128, 127)
    hi_n = _int_attr("qprelu", name, attrs, "neg_max", -128, 127)
    m1 = _int_attr("qprelu", name, attrs, "slope_multiplier", 0, (1 << 15) - 1)
    s1 = _int_attr("qprelu", name, attrs, "slope_shift", 0, 30)
    lo_s = _int_attr("qprelu", name, attrs, "slope_min", -128, 127)
    hi_s = _int_attr("qprelu", name, attrs, "slope_max", -128, 127)
    total = _parts_sum("qprelu", name, attrs)
    i64 = as_dtype("int64")

    def fp(*i: Any) -> Any:
        v = op.cast(i64, x(*i))
        si = (i[0], i[1], 0, 0) if x.ndim == 4 else i
        prod = E.Mul(E.Mul(_clipped(v, lo_n, hi_n), op.cast(i64, slope(*si))), const(m1, i64))
        return total(v, _clipped(_round_shift(prod, const(s1, i64)), lo_s, hi_s))

    return compute(x.shape, fp, name=name, tag="qprelu")


def _hard_gate(x: Any, m: int, shift: int, offset: int, top: int) -> Any:
    """``compiler.quantize.hard.hard_sigmoid_int`` on an int64 expression:
    ``clip(floor((x m + offset) / 2**shift), 0, top)``."""
    i64 = as_dtype("int64")
    v = op.shift_right(E.Mul(x, const(m, i64)) + const(offset, i64), const(shift, i64))
    return op.minimum(op.maximum(v, const(0, i64)), const(top, i64))


def _gate_attrs(opname: str, name: str, attrs: Mapping[str, Any], prefix: str) -> tuple[int, ...]:
    """A hard sigmoid's ``multiplier``, ``shift`` and ``offset`` (``prefix`` ``gate_`` for a
    hard swish's gate), each within the range its inference allows."""
    big = (1 << 15) - 1
    return (
        _int_attr(opname, name, attrs, f"{prefix}multiplier", -big, big),
        _int_attr(opname, name, attrs, f"{prefix}shift", 0, 15),
        _int_attr(opname, name, attrs, f"{prefix}offset", -(1 << 30), 1 << 30),
    )


def _qhard_sigmoid(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    """The exact integer hard sigmoid (``compiler.quantize.hard.hard_sigmoid_int``)."""
    _known("qhard_sigmoid", name, attrs, ("multiplier", "shift", "offset", "out_max"))
    _arity("qhard_sigmoid", name, inputs, 1)
    _int8_inputs("qhard_sigmoid", name, inputs)
    (x,) = inputs
    m, shift, offset = _gate_attrs("qhard_sigmoid", name, attrs, "")
    top = _int_attr("qhard_sigmoid", name, attrs, "out_max", 0, 127)
    i64 = as_dtype("int64")

    def fh(*i: Any) -> Any:
        return op.cast("int8", _hard_gate(op.cast(i64, x(*i)), m, shift, offset, top))

    return compute(x.shape, fh, name=name, tag="qhard_sigmoid")


def _qhard_swish(inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    """The exact integer hard swish (``compiler.quantize.hard.hard_swish_int``):
    ``clip(round_shift(x * gate(x) * multiplier + offset, shift))`` with the gate in
    ``[0, GATE_UNITS]``."""
    from compiler.quantize.hard import GATE_UNITS, MAX_SWISH_OFFSET

    keys = ("gate_multiplier", "gate_shift", "gate_offset", "multiplier", "shift")
    _known("qhard_swish", name, attrs, (*keys, "out_min", "out_max", "offset"))
    _arity("qhard_swish", name, inputs, 1)
    _int8_inputs("qhard_swish", name, inputs)
    (x,) = inputs
    gm, gs, go = _gate_attrs("qhard_swish", name, attrs, "gate_")
    m = _int_attr("qhard_swish", name, attrs, "multiplier", 0, (1 << 15) - 1)
    shift = _int_attr("qhard_swish", name, attrs, "shift", 0, 30)
    lo, hi = _out_range("qhard_swish", name, attrs)
    offset = _int_attr("qhard_swish", name, attrs, "offset", -MAX_SWISH_OFFSET, MAX_SWISH_OFFSET)
    i64 = as_dtype("int64")

    def fs(*i: Any) -> Any:
        v = op.cast(i64, x(*i))
        acc: Any = E.Mul(E.Mul(v, _hard_gate(v, gm, gs, go, GATE_UNITS)), const(m, i64))
        if offset:
            acc = E.Add(acc, const(offset, i64))
        y = _round_shift(acc, const(shift, i64))
        return op.cast("int8", op.minimum(op.maximum(y, const(lo, i64)), const(hi, i64)))

    return compute(x.shape, fs, name=name, tag="qhard_swish")


OPS: dict[str, ComputeFn] = {
    "conv2d": _conv2d,
    "dense": _dense,
    "matmul": _matmul,
    "add": _binary(topi.add),
    "subtract": _binary(topi.subtract),
    "multiply": _binary(topi.multiply),
    "divide": _binary(activation.divide),
    "maximum": _binary(topi.maximum),
    "minimum": _binary(topi.minimum),
    "relu": _unary(topi.relu, "relu"),
    "sigmoid": _unary(activation.sigmoid, "sigmoid"),
    "exp": _unary(activation.exp, "exp"),
    "sqrt": _unary(activation.sqrt, "sqrt"),
    "negative": _unary(activation.negative, "negative"),
    "clip": _clip,
    "log": _unary(activation.log, "log"),
    "tanh": _unary(activation.tanh, "tanh"),
    "erf": _unary(activation.erf, "erf"),
    "gelu": _gelu,
    "power": _binary(activation.power),
    **{kind: _compare(kind) for kind in (*logical.COMPARISONS, *logical.LOGICAL)},
    "logical_not": _logical_not,
    "where": _where,
    "leaky_relu": _unary(activation.leaky_relu, "leaky_relu", ("alpha",)),
    "hard_sigmoid": _unary(activation.hard_sigmoid, "hard_sigmoid", ("alpha", "beta")),
    "hard_swish": _unary(activation.hard_swish, "hard_swish"),
    "batch_norm": _batch_norm,
    "max_pool2d": _max_pool,
    "avg_pool2d": _avg_pool,
    "global_avg_pool2d": _global_avg_pool,
    "softmax": _softmax,
    "sum": _reduction("sum"),
    "mean": _reduction("mean"),
    "max": _reduction("max"),
    "min": _reduction("min"),
    "argmax": _argmax,
    "reshape": _reshape,
    "transpose": _transpose,
    "concat": _concat,
    "pad": _pad,
    "strided_slice": _strided_slice,
    "take": _take,
    "broadcast_to": _broadcast_to,
    "dilate": _dilate,
    "im2col": _im2col,
    "pack": _pack,
    "unpack": _unpack,
    "resize": _resize,
    "tile": _tile,
    "cast": _cast,
    "layout_transform": _layout_transform,
    "quantize": _quantize,
    "dequantize": _dequantize,
    "global_sum_pool2d": _global_sum_pool,
    "requantize": _requantize,
    "qadd": _qadd,
    "qmul": _qmul,
    "qleaky_relu": _qleaky_relu,
    "qprelu": _qprelu,
    "qhard_sigmoid": _qhard_sigmoid,
    "qhard_swish": _qhard_swish,
}

#: The schedule family (compiler.strategy.schedule.KINDS) of a group each operator anchors;
#: the others are injective: inlined into whichever group holds them.
SCHEDULES = {
    "conv2d": "conv2d_nchw",  # conv2d_packed / depthwise_conv2d_packed in packed layouts
    "dense": "dense",
    "matmul": "matmul",
    "max_pool2d": "pool",
    "avg_pool2d": "pool",
    "global_avg_pool2d": "pool",
    "global_sum_pool2d": "pool",
    "softmax": "softmax",
    "sum": "reduction",
    "mean": "reduction",
    "max": "reduction",
    "min": "reduction",
    "argmax": "reduction",
}

# every compute above, in the operator registry (compiler.registry's key "cpu")
for _op, _fn in OPS.items():
    register("cpu", _op, CpuImpl(_fn, SCHEDULES.get(_op, "injective")))


def compute_op(op: str, inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    """The output tensor of graph node ``name`` running ``op`` (see the module example)."""
    fn = OPS.get(op)
    if fn is None:
        raise StrategyError(
            f"node {name!r}: operator {op!r} has no CPU strategy (known: {sorted(OPS)})"
        )
    try:
        return fn(inputs, attrs, name)
    except StrategyError:
        raise
    except CompilerError as e:
        raise StrategyError(f"{op} node {name!r}: {e}") from None
