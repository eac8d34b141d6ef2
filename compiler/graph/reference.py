"""The numpy reference executor: evaluates a graph at any stage of the pipeline, op by op.

It is the oracle of the graph passes (each must preserve results) and of the frontend (which
must match onnxruntime), and the constant folder's evaluator. Integer convolutions and dense
layers accumulate in int32, as the contract says. It is written for clarity, not speed.

Example:
    >>> import numpy as np
    >>> from compiler.graph.ir import Graph, Node, TensorType, Var
    >>> x = Var("x", TensorType((1, 4), "float32"))
    >>> g = Graph.from_outputs([x], [Node("relu", (x,))])
    >>> evaluate(g, {"x": np.array([[-1, 2, -3, 4]], np.float32)})[0]
    array([[0., 2., 0., 4.]], dtype=float32)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from compiler.errors import GraphError
from compiler.graph.ir import Attrs, Constant, Graph, Node, TensorType
from compiler.graph.ops import conv_out_size, parse_packed, parse_packed_kernel
from compiler.registry import Unsupported, register, support

Impl = Callable[[list[np.ndarray], Attrs, TensorType], np.ndarray]
_IMPLS: dict[str, Impl] = {}


def _impl(*names: str) -> Callable[[Impl], Impl]:
    def wrap(fn: Impl) -> Impl:
        for n in names:
            _IMPLS[n] = fn
        return fn

    return wrap


def register_impl(op: str, fn: Impl) -> Impl:
    """Add the evaluation of an operator registered outside this module (names are unique).

    ``fn(args, attrs, out_type)`` returns the result array.

    Example:
        >>> "relu" in _IMPLS or register_impl("relu", lambda a, at, t: a[0])
        Traceback (most recent call last):
        ...
        compiler.errors.GraphError: the reference executor already implements 'relu'
    """
    if op in _IMPLS or op in _BINARY or op in _UNARY:
        raise GraphError(f"the reference executor already implements {op!r}")
    _IMPLS[op] = fn
    register("reference", op, fn)
    return fn


# ---------------------------------------------------------------- layouts


def to_nchw(x: np.ndarray, layout: str) -> np.ndarray:
    """Unpack an ``NCHW{n}n{c}c`` array to NCHW (identity for ``"NCHW"``).

    Example:
        >>> x = np.arange(32).reshape(1, 32, 1, 1)
        >>> bool((to_nchw(pack_nchw(x, "NCHW1n16c"), "NCHW1n16c") == x).all())
        True
    """
    p = parse_packed(layout)
    if p is None:
        return x
    a, b, h, w, bn, bc = x.shape
    return x.transpose(0, 4, 1, 5, 2, 3).reshape(a * bn, b * bc, h, w)


def pack_nchw(x: np.ndarray, layout: str) -> np.ndarray:
    """Pack an NCHW array into ``layout`` (identity for ``"NCHW"``); channels must divide."""
    p = parse_packed(layout)
    if p is None:
        return x
    bn, bc = p
    n, c, h, w = x.shape
    return x.reshape(n // bn, bn, c // bc, bc, h, w).transpose(0, 2, 4, 5, 1, 3)


def _kernel_to_oihw(w: np.ndarray, layout: str) -> np.ndarray:
    if parse_packed_kernel(layout) is None:
        return w
    a, b, kh, kw, bi, bo = w.shape
    return w.transpose(0, 5, 1, 4, 2, 3).reshape(a * bo, b * bi, kh, kw)


def _kernel_pack(w: np.ndarray, layout: str) -> np.ndarray:
    p = parse_packed_kernel(layout)
    if p is None:
        return w
    bi, bo = p
    o, i, kh, kw = w.shape
    return w.reshape(o // bo, bo, i // bi, bi, kh, kw).transpose(0, 2, 4, 5, 3, 1)


@_impl("layout_transform")
def _layout_transform(args: list[np.ndarray], attrs: Attrs, t: TensorType) -> np.ndarray:
    src, dst = attrs["src_layout"], attrs["dst_layout"]
    if src.startswith("OIHW"):
        return _kernel_pack(_kernel_to_oihw(args[0], src), dst)
    return pack_nchw(to_nchw(args[0], src), dst)


# ---------------------------------------------------------------- convolution, dense


def conv2d_nchw(
    x: np.ndarray,
    w: np.ndarray,
    strides: Sequence[int] = (1, 1),
    padding: Sequence[int] = (0, 0, 0, 0),
    dilation: Sequence[int] = (1, 1),
    groups: int = 1,
    out_dtype: str | None = None,
) -> np.ndarray:
    """Grouped, dilated 2-d convolution in NCHW / OIHW with (top, left, bottom, right) padding.

    Example:
        >>> x = np.ones((1, 2, 4, 4), np.float32)
        >>> conv2d_nchw(x, np.ones((3, 2, 3, 3), np.float32), padding=(1, 1, 1, 1))[0, 0, :2, :2]
        array([[ 8., 12.],
               [12., 18.]], dtype=float32)
    """
    out_dtype = out_dtype or ("int32" if x.dtype.kind in "iu" else str(x.dtype))
    acc = np.dtype(out_dtype)
    n, c, h, wd = x.shape
    o, ig, kh, kw = w.shape
    sh, sw = strides
    dh, dw = dilation
    top, left, bottom, right = padding
    oh = conv_out_size(h, kh, sh, (top, bottom), dh)
    ow = conv_out_size(wd, kw, sw, (left, right), dw)
    if _exact_in_float64(x, w, acc, ig * kh * kw):
        return _conv2d_float64(x, w, (sh, sw), padding, (dh, dw), groups, (oh, ow)).astype(acc)
    xp = np.pad(x.astype(acc), ((0, 0), (0, 0), (top, bottom), (left, right)))
    xg = xp.reshape(n, groups, c // groups, xp.shape[2], xp.shape[3])
    wg = w.astype(acc).reshape(groups, o // groups, ig, kh, kw)
    out = np.zeros((n, groups, o // groups, oh, ow), acc)
    # a float convolution with more than one channel per group: one matrix product per tap
    # (BLAS; einsum's own loop took 8 to 19 times as long on 16 to 256 channels), memory of one
    # tap's window; a depthwise one, or an integer one past float64's exact range, by einsum
    products = acc.kind == "f" and (ig > 1 or o // groups > 1)
    for i in range(kh):
        for j in range(kw):
            y0, x0 = i * dh, j * dw
            win = xg[:, :, :, y0 : y0 + (oh - 1) * sh + 1 : sh, x0 : x0 + (ow - 1) * sw + 1 : sw]
            if products:
                cols = np.ascontiguousarray(win).reshape(n, groups, ig, oh * ow)
                out += np.matmul(wg[:, :, :, i, j], cols).reshape(out.shape)
            else:
                out += np.einsum("ngchw,goc->ngohw", win, wg[:, :, :, i, j])
    return out.reshape(n, o, oh, ow)


def _exact_in_float64(x: np.ndarray, w: np.ndarray, acc: np.dtype, terms: int) -> bool:
    """True when an integer convolution into ``acc`` can run as float64 matrix products with
    the same result: every partial sum of ``terms`` products is an integer below 2**53 (so
    float64 holds it exactly, whatever the order of the sum) and the result fits ``acc`` (so
    no accumulation in ``acc`` would have wrapped)."""
    if acc.kind not in "iu" or x.dtype.kind not in "iu" or w.dtype.kind not in "iu":
        return False
    if x.size == 0 or w.size == 0:
        return False
    big = int(np.abs(x).max(initial=0)) * int(np.abs(w).max(initial=0)) * terms
    return big < min(2**53, int(np.iinfo(acc).max))


def _conv2d_float64(
    x: np.ndarray,
    w: np.ndarray,
    strides: tuple[int, int],
    padding: Sequence[int],
    dilation: tuple[int, int],
    groups: int,
    out_hw: tuple[int, int],
) -> np.ndarray:
    """The convolution of :func:`conv2d_nchw` as one float64 matrix product per group
    (im2col): BLAS instead of ``einsum``, exact for the integer inputs
    :func:`_exact_in_float64` admits."""
    n, c, _, _ = x.shape
    o, ig, kh, kw = w.shape
    (sh, sw), (dh, dw), (oh, ow) = strides, dilation, out_hw
    top, left, bottom, right = padding
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (top, bottom), (left, right)))
    xg = xp.reshape(n, groups, ig, xp.shape[2], xp.shape[3])
    windows = [
        xg[
            :,
            :,
            :,
            i * dh : i * dh + (oh - 1) * sh + 1 : sh,
            j * dw : j * dw + (ow - 1) * sw + 1 : sw,
        ]
        for i in range(kh)
        for j in range(kw)
    ]
    cols = np.stack(windows, axis=3).reshape(n, groups, ig * kh * kw, oh * ow)
    wg = w.astype(np.float64).reshape(groups, o // groups, ig * kh * kw)
    return np.matmul(wg, cols).reshape(n, o, oh, ow)


@_impl("conv2d")
def _conv2d(args: list[np.ndarray], attrs: Attrs, t: TensorType) -> np.ndarray:
    x = to_nchw(args[0], attrs["data_layout"])
    w = _kernel_to_oihw(args[1], attrs["kernel_layout"])
    out = conv2d_nchw(
        x, w, attrs["strides"], attrs["padding"], attrs["dilation"], attrs["groups"], t.dtype
    )
    if len(args) == 3:
        out = out + args[2].reshape(1, -1, 1, 1)
    return pack_nchw(out, t.layout)


@_impl("dense")
def _dense(args: list[np.ndarray], attrs: Attrs, t: TensorType) -> np.ndarray:
    acc = np.dtype(t.dtype)
    out = args[0].astype(acc) @ args[1].astype(acc).T
    if len(args) == 3:
        out = out + args[2]
    return out


@_impl("matmul")
def _matmul(args: list[np.ndarray], attrs: Attrs, t: TensorType) -> np.ndarray:
    acc = np.dtype(t.dtype)
    return np.matmul(args[0].astype(acc), args[1].astype(acc))


# ---------------------------------------------------------------- elementwise


def _int_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "power": np.power,
    "equal": np.equal,
    "less": np.less,
    "greater": np.greater,
    "less_equal": np.less_equal,
    "greater_equal": np.greater_equal,
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
}

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _gelu(x: np.ndarray, approximate: str) -> np.ndarray:
    if approximate == "tanh":
        inner = np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))
    else:
        inner = _erf(x / math.sqrt(2))
    return 0.5 * x * (1 + inner)


def _unary(op: str, x: np.ndarray, attrs: Attrs) -> np.ndarray:
    if op == "relu":
        return np.maximum(x, 0)
    if op == "negative":
        return -x
    if op == "sigmoid":
        return 1 / (1 + np.exp(-x))
    if op == "exp":
        return np.exp(x)
    if op == "log":
        return np.log(x)
    if op == "tanh":
        return np.tanh(x)
    if op == "erf":
        return _erf(x)
    if op == "gelu":
        return _gelu(x, attrs["approximate"])
    if op == "logical_not":
        return np.logical_not(x)
    if op == "sqrt":
        return np.sqrt(x)
    if op == "hard_swish":
        return x * np.clip(x / 6 + 0.5, 0, 1)
    if op == "clip":
        lo, hi = attrs["a_min"], attrs["a_max"]
        if x.dtype.kind in "iu":
            info = np.iinfo(x.dtype)
            lo, hi = max(lo, info.min), min(hi, info.max)
        return np.clip(x, lo, hi)
    if op == "leaky_relu":
        return np.where(x >= 0, x, x * attrs["alpha"])
    if op == "hard_sigmoid":
        return np.clip(x * attrs["alpha"] + attrs["beta"], 0, 1)
    raise AssertionError(op)


_UNARY = (
    "relu", "negative", "sigmoid", "exp", "sqrt", "hard_swish", "clip", "leaky_relu",
    "hard_sigmoid", "log", "tanh", "erf", "gelu", "logical_not",
)  # fmt: skip


@_impl("where")
def _where(args: list[np.ndarray], attrs: Attrs, t: TensorType) -> np.ndarray:
    return np.where(args[0], args[1], args[2])


@_impl("batch_norm")
def _batch_norm(args: list[np.ndarray], attrs: Attrs, t: TensorType) -> np.ndarray:
    x, scale, bias, mean, var = args
    shape = (1, -1) + (1,) * (x.ndim - 2)
    inv = scale / np.sqrt(var + attrs["epsilon"])
    return (x - mean.reshape(shape)) * inv.reshape(shape) + bias.reshape(shape)


# ---------------------------------------------------------------- pooling


def _pool_nchw(x: np.ndarray, attrs: Attrs, kind: str, out_hw: tuple[int, int]) -> np.ndarray:
    kh, kw = attrs["pool_size"]
    sh, sw = attrs["strides"]
    dh, dw = attrs["dilation"]
    top, left, bottom, right = attrs["padding"]
    oh, ow = out_hw
    n, c, h, w = x.shape
    # windows of the last rows may run past the bottom padding in ceil mode: extend with
    # cells that hold no value and count for nothing
    need_h = (oh - 1) * sh + (kh - 1) * dh + 1
    need_w = (ow - 1) * sw + (kw - 1) * dw + 1
    extra_h = max(0, need_h - (h + top + bottom))
    extra_w = max(0, need_w - (w + left + right))
    pads = ((0, 0), (0, 0), (top, bottom + extra_h), (left, right + extra_w))
    real = np.pad(np.ones((h, w)), pads[2:])
    declared = np.pad(np.ones((h + top + bottom, w + left + right)), ((0, extra_h), (0, extra_w)))
    if kind == "max":
        fill = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
        xp = np.pad(x, pads, constant_values=fill)
        out = np.full((n, c, oh, ow), fill, x.dtype)
    else:
        xp = np.pad(x.astype(np.float64), pads)
        out = np.zeros((n, c, oh, ow), np.float64)
    count = np.zeros((oh, ow))
    mask = declared if kind == "avg" and attrs["count_include_pad"] else real
    for i in range(kh):
        for j in range(kw):
            ys = slice(i * dh, i * dh + (oh - 1) * sh + 1, sh)
            xs = slice(j * dw, j * dw + (ow - 1) * sw + 1, sw)
            if kind == "max":
                out = np.maximum(out, xp[:, :, ys, xs])
            else:
                out += xp[:, :, ys, xs]
                count += mask[ys, xs]
    if kind == "max":
        return out
    avg = out / np.maximum(count, 1)
    if x.dtype.kind in "iu":
        return np.floor(avg).astype(x.dtype)
    return avg.astype(x.dtype)


@_impl("global_avg_pool2d")
def _global_avg_pool(args: list[np.ndarray], attrs: Attrs, t: TensorType) -> np.ndarray:
    x = args[0]
    m = x.astype(np.float64).mean(axis=(2, 3), keepdims=True)
    return np.floor(m).astype(x.dtype) if x.dtype.kind in "iu" else m.astype(x.dtype)


# ---------------------------------------------------------------- the rest


@_impl("softmax")
def _softmax(args: list[np.ndarray], attrs: Attrs, t: TensorType) -> np.ndarray:
    x = args[0].astype(np.float64)
    e = np.exp(x - x.max(axis=attrs["axis"], keepdims=True))
    return e / e.sum(axis=attrs["axis"], keepdims=True)


@_impl("reshape")
def _reshape(args: list[np.ndarray], attrs: Attrs, t: TensorType) -> np.ndarray:
    return args[0].reshape(attrs["newshape"])


@_impl("transpose")
def _transpose(args: list[np.ndarray], attrs: Attrs, t: TensorType) -> np.ndarray:
    return args[0].transpose(attrs["axes"])


@_impl("concat")
def _concat(args: list[np.ndarray], attrs: Attrs, t: TensorType) -> np.ndarray:
    return np.concatenate(args, axis=attrs["axis"])


@_impl("pad")
def _pad(args: list[np.ndarray], attrs: Attrs, t: TensorType) -> np.ndarray:
    return np.pad(args[0], attrs["pad_width"], constant_values=attrs["pad_value"])


def _reduction(fn: Callable[..., np.ndarray]) -> Impl:
    def run(args: list[np.ndarray], attrs: Attrs, t: TensorType) -> np.ndarray:
        return fn(args[0], axis=attrs["axes"], keepdims=attrs["keepdims"])

    return run


for _op, _fn in (("sum", np.sum), ("mean", np.mean), ("max", np.max), ("min", np.min)):
    _IMPLS[_op] = _reduction(_fn)


@_impl("argmax")
def _argmax(args: list[np.ndarray], attrs: Attrs, t: TensorType) -> np.ndarray:
    x = np.moveaxis(args[0], attrs["axis"], -1)
    if attrs["select_last_index"]:
        idx = x.shape[-1] - 1 - np.argmax(x[..., ::-1], axis=-1)
    else:
        idx = np.argmax(x, axis=-1)
    return idx.reshape(t.shape).astype(np.int64)


def _resize_coordinates(n_in: int, n_out: int, scale: float, mode: str) -> np.ndarray:
    i = np.arange(n_out, dtype=np.float32)
    s = np.float32(scale)
    if mode == "asymmetric":
        return i / s
    if mode == "align_corners":
        if n_out == 1:
            return np.zeros(1, np.float32)
        return i * np.float32(n_in - 1) / np.float32(n_out - 1)
    if mode == "pytorch_half_pixel" and n_out == 1:
        return np.zeros(1, np.float32)
    return (i + np.float32(0.5)) / s - np.float32(0.5)


def _nearest_index(c: np.ndarray, mode: str) -> np.ndarray:
    if mode == "floor":
        k = np.floor(c)
    elif mode == "ceil":
        k = np.ceil(c)
    elif mode == "round_prefer_ceil":
        k = np.floor(c + np.float32(0.5))
    else:  # round_prefer_floor
        k = np.where(c - np.floor(c) == np.float32(0.5), np.floor(c), np.floor(c + np.float32(0.5)))
    return k.astype(np.int64)


def nearest_source(attrs: Attrs, axis: int, n_in: int) -> np.ndarray | None:
    """The input index each output index of a nearest ``resize`` (``attrs``) reads along
    ``axis`` of ``n_in`` elements, or None where the axis is left as it is.

    Example:
        >>> a = {"sizes": (1, 1, 4, 6), "scales": (1.0, 1.0, 2.0, 2.0),
        ...      "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}
        >>> nearest_source(a, 3, 3).tolist(), nearest_source(a, 1, 1)
        ([0, 0, 1, 1, 2, 2], None)
    """
    n_out, scale = attrs["sizes"][axis], attrs["scales"][axis]
    if n_out == n_in and scale == 1.0:
        return None
    c = _resize_coordinates(n_in, n_out, scale, attrs["coordinate_transformation_mode"])
    return np.clip(_nearest_index(c, attrs["nearest_mode"]), 0, n_in - 1)


@_impl("resize")
def _resize(args: list[np.ndarray], attrs: Attrs, t: TensorType) -> np.ndarray:
    # separable: one axis at a time
    y = args[0]
    mode = attrs["coordinate_transformation_mode"]
    for k, (n_out, scale) in enumerate(zip(attrs["sizes"], attrs["scales"], strict=True)):
        n_in = y.shape[k]
        if n_out == n_in and scale == 1.0:
            continue
        if attrs["method"] == "nearest":
            src = nearest_source(attrs, k, n_in)
            assert src is not None
            y = np.take(y, src, axis=k)
            continue
        c = _resize_coordinates(n_in, n_out, scale, mode)
        c = np.clip(c, 0, n_in - 1)
        lo = c.astype(np.int64)
        hi = np.minimum(lo + 1, n_in - 1)
        w = (c - lo).astype(y.dtype).reshape((-1,) + (1,) * (y.ndim - k - 1))
        y = np.take(y, lo, axis=k) * (1 - w) + np.take(y, hi, axis=k) * w
    return y


@_impl("strided_slice")
def _strided_slice(args: list[np.ndarray], attrs: Attrs, t: TensorType) -> np.ndarray:
    ranges = [
        np.arange(b, e, s)
        for b, e, s in zip(attrs["begin"], attrs["end"], attrs["strides"], strict=True)
    ]
    return args[0][np.ix_(*ranges)]


@_impl("take")
def _take(args: list[np.ndarray], attrs: Attrs, t: TensorType) -> np.ndarray:
    indices = np.array(attrs["indices"], np.int64).reshape(attrs["indices_shape"])
    return np.take(args[0], indices, axis=attrs["axis"])


@_impl("dilate")
def _dilate(args: list[np.ndarray], attrs: Attrs, t: TensorType) -> np.ndarray:
    out = np.zeros(t.shape, args[0].dtype)
    out[tuple(slice(None, None, s) for s in attrs["strides"])] = args[0]
    return out


def im2col(
    x: np.ndarray, window: int, stride: int, pad_before: tuple[int, int], out_hw: tuple[int, int]
) -> np.ndarray:
    """The ``im2col`` operator: every output pixel's ``window x window`` patch as channels,
    ``out[n, c*window*window + dy*window + dx, y, x] = x[n, c, y*stride + dy - top, x*stride +
    dx - left]`` (``pad_before`` = ``(top, left)``), zero where that lies outside ``x``. With
    ``window`` a convolution's kernel it is the input of the 1x1 convolution over the kernel's
    taps; with ``window == stride`` a space-to-depth fold (the input of a stride-1
    convolution over ``c*s*s`` channels).

    Example:
        >>> x = np.arange(16, dtype=np.int8).reshape(1, 1, 4, 4)
        >>> im2col(x, 3, 1, (1, 1), (4, 4))[0, :, 1, 1]
        array([ 0,  1,  2,  4,  5,  6,  8,  9, 10], dtype=int8)
        >>> im2col(x, 2, 2, (0, 0), (2, 2))[0, :, 0, 0]
        array([0, 1, 4, 5], dtype=int8)
    """
    top, left = pad_before
    oh, ow = out_hw
    n, c, h, w = x.shape
    rows, cols = (oh - 1) * stride + window, (ow - 1) * stride + window
    xp = np.zeros((n, c, max(rows, top + h), max(cols, left + w)), x.dtype)
    xp[:, :, top : top + h, left : left + w] = x
    win = np.lib.stride_tricks.sliding_window_view(xp, (window, window), axis=(2, 3))
    win = win[:, :, ::stride, ::stride][:, :, :oh, :ow]  # n c oh ow dy dx
    out = win.transpose(0, 1, 4, 5, 2, 3).reshape(n, c * window * window, oh, ow)
    return np.ascontiguousarray(out)


@_impl("im2col")
def _im2col(args: list[np.ndarray], attrs: Attrs, t: TensorType) -> np.ndarray:
    return im2col(args[0], attrs["window"], attrs["stride"], attrs["pad_before"], attrs["out_hw"])


@_impl("pack")
def _pack(args: list[np.ndarray], attrs: Attrs, t: TensorType) -> np.ndarray:
    from compiler.topi.vta.packing import pack_blocks  # the accelerator's packer, one of them

    return pack_blocks(args[0], attrs["layout"], attrs["blocks"])


@_impl("unpack")
def _unpack(args: list[np.ndarray], attrs: Attrs, t: TensorType) -> np.ndarray:
    from compiler.topi.vta.packing import unpack_blocks

    return unpack_blocks(args[0], attrs["layout"], attrs["shape"])


@_impl("broadcast_to")
def _broadcast_to(args: list[np.ndarray], attrs: Attrs, t: TensorType) -> np.ndarray:
    return np.broadcast_to(args[0], attrs["shape"]).copy()


@_impl("tile")
def _tile(args: list[np.ndarray], attrs: Attrs, t: TensorType) -> np.ndarray:
    return np.tile(args[0], attrs["reps"])


@_impl("cast")
def _cast(args: list[np.ndarray], attrs: Attrs, t: TensorType) -> np.ndarray:
    return args[0].astype(attrs["dtype"])


def evaluate_op(
    op: str, args: list[np.ndarray], attrs: Attrs, out: TensorType, *, float64: bool = False
) -> np.ndarray:
    """Evaluate one operator on numpy arrays; the result has exactly the type ``out`` (with
    ``float64``, a float32 result is float64: see :func:`evaluate`).

    Example:
        >>> from compiler.graph.ir import Attrs, TensorType
        >>> evaluate_op("add", [np.ones(2, np.float32)] * 2, Attrs(), TensorType((2,), "float32"))
        array([2., 2.], dtype=float32)
    """
    fn = support("reference", op)
    if fn is None or isinstance(fn, Unsupported):
        raise GraphError(f"the reference executor has no implementation of {op!r}")
    # with ``float64``, an operator of float32 result is asked for float64 (those that compute
    # in their result's type, a matmul or a convolution, then do)
    want = replace(out, dtype="float64") if float64 and out.dtype == "float32" else out
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        res = fn(args, attrs, want)
    res = np.asarray(res)
    if res.shape != out.shape:
        raise GraphError(
            f"reference {op}: result shape {res.shape} differs from the inferred {out.shape}"
        )
    return res.astype(want.dtype, copy=False)


def _binary_impl(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Impl:
    return lambda args, attrs, t: fn(args[0], args[1])


def _unary_impl(op: str) -> Impl:
    return lambda args, attrs, t: _unary(op, args[0], attrs)


def _divide(args: list[np.ndarray], attrs: Attrs, t: TensorType) -> np.ndarray:
    a, b = args
    return _int_divide(a, b) if a.dtype.kind in "iu" else a / b


def _pool_impl(kind: str) -> Impl:
    def run(args: list[np.ndarray], attrs: Attrs, t: TensorType) -> np.ndarray:
        layout = attrs["layout"]
        x = to_nchw(args[0], layout)
        return pack_nchw(_pool_nchw(x, attrs, kind, (t.shape[2], t.shape[3])), layout)

    return run


# every evaluation above, in the operator registry (compiler.registry's key "reference")
for _op, _bin in _BINARY.items():
    register("reference", _op, _binary_impl(_bin))
for _op in _UNARY:
    register("reference", _op, _unary_impl(_op))
register("reference", "divide", _divide)
register("reference", "max_pool2d", _pool_impl("max"))
register("reference", "avg_pool2d", _pool_impl("avg"))
for _op, _impl_fn in _IMPLS.items():
    register("reference", _op, _impl_fn)


def evaluate_node(node: Node, args: list[np.ndarray]) -> np.ndarray:
    """Evaluate one node on the arrays of its inputs."""
    return evaluate_op(node.op, args, node.attrs, node.type)


def match_feeds(
    inputs: Sequence[tuple[str, tuple[int, ...], str]],
    feeds: Mapping[str, Any] | Sequence[Any],
    *,
    error: type[Exception] = GraphError,
    by_position: bool = False,
    convert: bool = False,
) -> dict[str, np.ndarray]:
    """The one feed checker: ``feeds`` matched to ``inputs`` (``(name, shape, dtype)`` each),
    every input fed exactly once with its shape and dtype; ``error`` (its type) names the input
    and what was expected. ``by_position``: a sequence is taken in input order too;
    ``convert``: anything ``np.asarray`` takes is an array (else only numpy arrays are).

    Example:
        >>> spec = [("data", (1, 4), "float32")]
        >>> match_feeds(spec, {"data": np.zeros((1, 4), np.float32)})["data"].shape
        (1, 4)
        >>> match_feeds(spec, {"data": np.zeros((1, 5), np.float32)})
        Traceback (most recent call last):
        ...
        compiler.errors.GraphError: input 'data' has shape (1, 5), expected (1, 4) (float32)
    """
    if not isinstance(feeds, Mapping):
        if not by_position:
            raise error(f"feeds must be a dict of input name to array, got {type(feeds).__name__}")
        feeds = list(feeds)
        if len(feeds) != len(inputs):
            raise error(f"{len(inputs)} inputs, got {len(feeds)} feeds")
        feeds = {name: a for (name, _, _), a in zip(inputs, feeds, strict=True)}
    names = ", ".join(name for name, _, _ in inputs) or "(none)"
    known = {name for name, _, _ in inputs}
    for name in feeds:
        if name not in known:
            raise error(f"unknown input {name!r} (the model's inputs: {names})")
    checked: dict[str, np.ndarray] = {}
    for name, shape, dtype in inputs:
        if name not in feeds:
            raise error(f"input {name!r} is not fed (expected {dtype} of shape {shape})")
        arr = feeds[name]
        if convert:
            arr = np.asarray(arr)
        elif not isinstance(arr, np.ndarray):
            raise error(
                f"input {name!r} is a {type(arr).__name__}, expected a numpy array "
                f"({dtype} of shape {shape})"
            )
        if arr.dtype != np.dtype(dtype):
            raise error(f"input {name!r} has dtype {arr.dtype}, expected {dtype} (shape {shape})")
        if tuple(arr.shape) != tuple(shape):
            raise error(
                f"input {name!r} has shape {tuple(arr.shape)}, expected {tuple(shape)} ({dtype})"
            )
        checked[name] = arr
    return checked


def check_feeds(graph: Graph, feeds: Mapping[str, Any] | Sequence[Any]) -> dict[int, np.ndarray]:
    """Match ``feeds`` (by input name, or a sequence in input order) to the graph's inputs
    (:func:`match_feeds`), keyed by the input's ``id``; :class:`GraphError` names the input
    at fault."""
    specs = [(v.name, v.type.shape, v.type.dtype) for v in graph.inputs]
    try:
        arrays = match_feeds(specs, feeds, by_position=True, convert=True)
    except GraphError as e:
        raise GraphError(f"graph {graph.name}: {e}") from None
    return {id(v): arrays[v.name] for v in graph.inputs}


def evaluate(
    graph: Graph, feeds: Mapping[str, Any] | Sequence[Any], *, float64: bool = False
) -> list[np.ndarray]:
    """Run the graph on ``feeds`` (by input name, or in input order); one array per output.

    ``float64``: every float32 value (the inputs, the constants and each node's result) is
    computed in float64 instead, and so are the float outputs: what the float32 graph computes
    without rounding to float32 between its operators, the yardstick for comparing float32
    implementations of one model (the compiled model, onnxruntime) with each other. For float
    graphs; a quantized graph's scales would widen too.

    Example:
        >>> from compiler.graph.ir import Graph, Node, TensorType, Var
        >>> x = Var("x", TensorType((2,), "float32"))
        >>> y = Node("exp", [x])
        >>> g = Graph((x,), (y,), (y,))
        >>> [a.dtype for a in evaluate(g, [np.zeros(2, np.float32)], float64=True)]
        [dtype('float64')]
    """
    env = check_feeds(graph, feeds)
    if float64:
        env = {k: _widened(a) for k, a in env.items()}

    def get(v: Any) -> np.ndarray:
        if isinstance(v, Constant):
            return _widened(v.value) if float64 else v.value
        return env[id(v)]

    for node in graph.nodes:
        args = [get(v) for v in node.inputs]
        to_float32 = node.op == "cast" and node.type.dtype == "float32"
        if float64 and to_float32 and args[0].dtype.kind == "f":
            env[id(node)] = args[0]  # in float64, a float cast to float32 rounds nothing
            continue
        env[id(node)] = evaluate_op(node.op, args, node.attrs, node.type, float64=float64)
    return [np.array(get(v)) for v in graph.outputs]


def _widened(a: Any) -> Any:
    a = np.asarray(a)
    return a.astype(np.float64) if a.dtype == np.float32 else a


__all__ = [
    "check_feeds",
    "conv2d_nchw",
    "evaluate",
    "evaluate_node",
    "evaluate_op",
    "im2col",
    "match_feeds",
    "nearest_source",
    "pack_nchw",
    "register_impl",
    "to_nchw",
]
