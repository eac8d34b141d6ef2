"""ONNX frontend: an ONNX model (opsets 9-20) becomes a graph of the operator contract.

Import runs in three steps, each refusing with a :class:`~compiler.errors.FrontendError` that
names the fault (never a traceback):

1. *read*: the file parses as an ONNX protobuf (a truncated or corrupted file is named), the
   IR version and the default-domain opset are in range, input shapes are static;
2. *scan*, before any work: every node whose operator (or attribute, or non-constant input to
   an operator that is only folded) is unsupported is listed at once with its name, op type,
   domain and opset; then the structure is checked (every input produced by a node, an
   initializer or a graph input; no cycle; no value produced twice) and ``onnx.checker`` runs;
3. *convert*, node by node in topological order. A node whose inputs are all constants is
   evaluated at once (constant folding), so the shape subgraphs exporters emit (Shape,
   Gather, Cast, Slice, ConstantOfShape, Unsqueeze, Concat, ...) leave only constants behind
   (shapes are static, so ``Shape`` of anything is a constant).

Supported operators (``docs/graph.md`` gives the details): Conv (1-d and 2-d), ConvTranspose,
BatchNormalization, InstanceNormalization, LayerNormalization, Relu, Clip, LeakyRelu, PRelu,
Sigmoid, HardSigmoid, HardSwish, Softplus and Mish (decomposed into contract ops), Exp, Log,
Sqrt, Tanh, Erf, Gelu, Neg, Pow, Abs, Reciprocal, Sign, Elu, Selu, Celu, Softsign and
ThresholdedRelu (decomposed), Add/Sub/Mul/Div/Max/Min/Sum with broadcasting, the
comparisons, Not/And/Or, Where, MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool,
ReduceMean/Sum/Max/Min,
ArgMax, Flatten, Reshape, Transpose, Squeeze/Unsqueeze, Concat, Split, Slice, Gather (constant
indices), ScatterND (constant indices writing one block), Expand, Tile, Pad (constant, reflect,
edge and wrap),
Resize, Upsample, Gemm, MatMul, Softmax, LRN (``beta`` a multiple of 1/4, decomposed into
contract ops), LSTM, GRU and RNN (unrolled over the sequence), Constant, Identity, Dropout,
Cast, and on constants only: Shape, Size, ConstantOfShape, Range.

Example:
    >>> import onnx
    >>> from onnx import TensorProto, helper
    >>> x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    >>> y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    >>> node = helper.make_node("Relu", ["x"], ["y"], name="act")
    >>> model = helper.make_model(helper.make_graph([node], "tiny", [x], [y]),
    ...                           opset_imports=[helper.make_opsetid("", 13)], ir_version=10)
    >>> g = from_onnx(model)
    >>> [(n.name, n.op) for n in g.nodes]
    [('act', 'relu')]
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from compiler.errors import CompilerError, FrontendError, FrontendWarning
from compiler.frontend.shapes import resolve_input_shapes
from compiler.graph.ir import Constant, Graph, Node, TensorType, Value, Var
from compiler.graph.passes.interleave import INTERLEAVE_AXES
from compiler.graph.reference import evaluate_op

#: Default-domain opsets the frontend accepts (the wheel's model-zoo files are opset 9).
#: 19 and 20 change no converted operator's semantics except by adding modes and element
#: types that the scan or the converters refuse (Pad's wrap, Resize's half_pixel_symmetric).
MIN_OPSET, MAX_OPSET = 9, 20
#: IR versions the frontend accepts.
MIN_IR_VERSION, MAX_IR_VERSION = 3, 11

_ONNX_DTYPES = {
    1: "float32",
    2: "uint8",
    3: "int8",
    5: "int16",
    6: "int32",
    7: "int64",
    9: "bool",
    11: "float64",
}


#: The largest model file read: protobuf cannot parse a message of 2 GiB or more.
MAX_MODEL_BYTES = 2**31 - 1


def _onnx() -> Any:
    try:
        import onnx
    except ImportError:
        raise FrontendError(
            "the ONNX frontend needs the onnx package, a dependency of vtac (pip install vtac)"
        ) from None
    return onnx


# ---------------------------------------------------------------- reading


def read_model(source: Any) -> Any:
    """An ``onnx.ModelProto`` from a path, bytes or a model; the file's faults are named.

    Example:
        >>> read_model(b"not a model")
        Traceback (most recent call last):
        ...
        compiler.errors.FrontendError: model: not a valid ONNX protobuf (truncated or corrupted?)
    """
    onnx = _onnx()
    if isinstance(source, onnx.ModelProto):
        return source
    if isinstance(source, (str, Path)):
        path = Path(source)
        where = str(path)
        if not path.exists():
            raise FrontendError(f"{where}: no such file")
        if not path.is_file():
            raise FrontendError(f"{where}: not a regular file")
        size = path.stat().st_size
        if size > MAX_MODEL_BYTES:
            raise FrontendError(
                f"{where}: {size:,} bytes, over the {MAX_MODEL_BYTES:,} bytes a model file may "
                "have (protobuf's limit; larger models keep their weights as external data)"
            )
        try:
            data = path.read_bytes()
        except OSError as e:
            raise FrontendError(f"{where}: cannot be read ({e.strerror})") from None
    elif isinstance(source, (bytes, bytearray)):
        where, data = "model", bytes(source)
    else:
        raise FrontendError(f"cannot read an ONNX model from a {type(source).__name__}")
    if not data:
        raise FrontendError(f"{where}: empty file")
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception:  # the protobuf runtime raises its own DecodeError
        raise FrontendError(
            f"{where}: not a valid ONNX protobuf (truncated or corrupted?)"
        ) from None
    if not model.HasField("graph"):
        raise FrontendError(f"{where}: no graph in the file (truncated, or not an ONNX model)")
    return model


def _opset(model: Any, domain: str = "") -> int | None:
    for o in model.opset_import:
        if o.domain in (domain, "ai.onnx" if domain == "" else domain):
            return int(o.version)
    return None


# ---------------------------------------------------------------- attribute helpers


def _attrs(node: Any) -> dict[str, Any]:
    from onnx import helper

    out = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        if isinstance(v, bytes):
            v = v.decode()
        out[a.name] = v
    return out


def _label(node: Any) -> str:
    return node.name or (node.output[0] if node.output else node.op_type)


# ---------------------------------------------------------------- conversion context


@dataclass
class _Ctx:
    opset: int
    env: dict[str, Value] = field(default_factory=dict)
    nodes: list[Node] = field(default_factory=list)

    def call(
        self,
        op: str,
        inputs: Sequence[Value],
        attrs: Mapping[str, Any] | None = None,
        name: str = "",
    ) -> Value:
        """Make a node, or its value when every input is a constant (constant folding)."""
        node = Node(op, tuple(inputs), attrs or {}, name)
        if all(isinstance(v, Constant) for v in node.inputs):
            arrays = [v.value for v in node.inputs if isinstance(v, Constant)]
            return Constant(evaluate_op(op, arrays, node.attrs, node.type), name=name)
        self.nodes.append(node)
        return node


def _const(v: Value, node: Any, what: str) -> np.ndarray:
    if not isinstance(v, Constant):
        raise FrontendError(f"node {_label(node)!r} ({node.op_type}): {what} must be a constant")
    return v.value


def _ints_of(v: Value, node: Any, what: str) -> list[int]:
    return [int(k) for k in _const(v, node, what).reshape(-1)]


def _inputs(ctx: _Ctx, node: Any) -> list[Value | None]:
    return [ctx.env[n] if n else None for n in node.input]


def _axis(axis: int, rank: int, node: Any) -> int:
    if not -rank <= axis < rank:
        raise FrontendError(
            f"node {_label(node)!r} ({node.op_type}): axis {axis} is out of range for rank {rank}"
        )
    return axis % rank


def _spatial(node: Any, a: dict[str, Any], x: Value, kernel: Sequence[int]) -> dict[str, Any]:
    """strides, dilation and (top, left, bottom, right) padding of a 2-d window op, with
    ``auto_pad`` resolved."""
    if x.type.ndim != 4:
        raise FrontendError(
            f"node {_label(node)!r} ({node.op_type}): only 2-d windows on 4-d "
            f"NCHW inputs are supported, input has shape {x.type.shape}"
        )
    strides = tuple(a.get("strides", (1, 1)))
    dilation = tuple(a.get("dilations", (1, 1)))
    pads = tuple(a.get("pads", (0, 0, 0, 0)))
    auto = a.get("auto_pad", "NOTSET")
    if auto != "NOTSET" and "pads" in a:
        raise FrontendError(
            f"node {_label(node)!r} ({node.op_type}): auto_pad {auto} and explicit pads "
            "cannot be used together (ONNX allows one or the other)"
        )
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        pads_b, pads_e = [], []
        for d in range(2):
            size = x.type.shape[2 + d]
            out = -(-size // strides[d])
            total = max(0, (out - 1) * strides[d] + (kernel[d] - 1) * dilation[d] + 1 - size)
            small, big = total // 2, total - total // 2
            pads_b.append(small if auto == "SAME_UPPER" else big)
            pads_e.append(big if auto == "SAME_UPPER" else small)
        pads = (pads_b[0], pads_b[1], pads_e[0], pads_e[1])
    elif auto == "VALID":
        pads = (0, 0, 0, 0)
    elif auto != "NOTSET":
        raise FrontendError(f"node {_label(node)!r} ({node.op_type}): unknown auto_pad {auto!r}")
    if len(strides) != 2 or len(dilation) != 2 or len(pads) != 4:
        raise FrontendError(
            f"node {_label(node)!r} ({node.op_type}): strides, dilations and "
            "pads must describe 2 spatial axes"
        )
    return {"strides": strides, "dilation": dilation, "padding": pads}


# ---------------------------------------------------------------- converters


Converter = Callable[[_Ctx, Any, list[Any], dict[str, Any], str], list[Value]]
CONVERTERS: dict[str, Converter] = {}
#: Operators converted only when every input is a constant (shape subgraphs).
CONST_ONLY = {"ConstantOfShape", "Range"}
#: Operators on activations whose inputs after the first (indices, bounds, repeats, split
#: sizes) must be constants; on constants alone they fold in numpy as shape computations do.
CONST_ARGS = {
    "Clip",
    "Reshape",
    "Pad",
    "Squeeze",
    "Unsqueeze",
    "ReduceMean",
    "ReduceSum",
    "ReduceMax",
    "ReduceMin",
    "Resize",
    "Upsample",
    "ConvTranspose",
}


def _conv(op_types: str) -> Callable[[Converter], Converter]:
    def wrap(fn: Converter) -> Converter:
        for t in op_types.split():
            CONVERTERS[t] = fn
        return fn

    return wrap


@_conv("Conv")
def _c_conv(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    x, w = ins[0], ins[1]
    if w.type.ndim == 3 and x.type.ndim == 3:
        return _conv1d(ctx, node, ins, a, name)
    if w.type.ndim != 4:
        raise FrontendError(
            f"node {name!r} (Conv): only 1-d and 2-d convolutions are supported, the "
            f"weight has shape {w.type.shape}"
        )
    kernel = tuple(a.get("kernel_shape", w.type.shape[2:]))
    if kernel != w.type.shape[2:]:
        raise FrontendError(
            f"node {name!r} (Conv): kernel_shape {list(kernel)} differs from the weight's "
            f"spatial shape {list(w.type.shape[2:])}"
        )
    attrs = _spatial(node, a, x, kernel)
    attrs["groups"] = int(a.get("group", 1))
    args = [x, w] + ([ins[2]] if len(ins) > 2 and ins[2] is not None else [])
    return [ctx.call("conv2d", args, attrs, name)]


def _conv1d(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    """A 1-d convolution (N, C, L) as a 2-d one over (N, C, 1, L), as TVM's importer runs it:
    the window's attributes gain a height of one, the weight a kernel height of one."""
    x, w = ins[0], ins[1]
    if not isinstance(w, Constant):
        raise FrontendError(
            f"node {name!r} (Conv): the weight of a 1-d convolution must be a constant"
        )
    n, c, length = x.type.shape
    a2 = dict(a)
    a2["kernel_shape"] = (1, *[int(k) for k in a.get("kernel_shape", w.type.shape[2:])])
    a2["strides"] = (1, *[int(k) for k in a.get("strides", (1,))])
    a2["dilations"] = (1, *[int(k) for k in a.get("dilations", (1,))])
    if "pads" in a:
        begin, end = (int(k) for k in a["pads"])
        a2["pads"] = (0, begin, 0, end)
    x4 = _reshape(ctx, x, (n, c, 1, length), f"{name}.as2d")
    w4 = Constant(
        w.value.reshape(w.type.shape[0], w.type.shape[1], 1, w.type.shape[2]),
        name=f"{w.name or name}.2d",
    )
    y = _c_conv(ctx, node, [x4, w4, *ins[2:]], a2, f"{name}.conv2d")[0]
    n, o, _, out = y.type.shape
    return [_reshape(ctx, y, (n, o, out), name)]


@_conv("ConvTranspose")
def _c_conv_transpose(
    ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str
) -> list[Value]:
    """The gradient of a convolution, run as one: zeros inserted between the input's pixels
    (``dilate`` by the strides), then a convolution with the kernel flipped and its in and
    out channels swapped per group, padded by ``dilation * (k - 1) - pads`` (a negative
    amount crops) plus ``output_padding`` at the end."""
    x, w = ins[0], _const(ins[1], node, "the weight")
    if x.type.ndim != 4 or w.ndim != 4:
        raise FrontendError(
            f"node {name!r} (ConvTranspose): only 2-d transposed convolutions of 4-d NCHW "
            f"inputs are supported (input {x.type.shape}, weight {w.shape})"
        )
    groups = int(a.get("group", 1))
    c_in, co_g, kh, kw = w.shape
    if c_in != x.type.shape[1] or c_in % groups:
        raise FrontendError(
            f"node {name!r} (ConvTranspose): weight {w.shape} does not match {x.type.shape[1]} "
            f"input channels in {groups} group(s)"
        )
    kernel = tuple(int(k) for k in a.get("kernel_shape", (kh, kw)))
    if kernel != (kh, kw):
        raise FrontendError(
            f"node {name!r} (ConvTranspose): kernel_shape {list(kernel)} differs from the "
            f"weight's {[kh, kw]}"
        )
    strides = [int(v) for v in a.get("strides", (1, 1))]
    dil = [int(v) for v in a.get("dilations", (1, 1))]
    out_pad = [int(v) for v in a.get("output_padding", (0, 0))]
    span = [(k - 1) * d + 1 for k, d in zip(kernel, dil, strict=True)]
    size = x.type.shape[2:]
    auto = a.get("auto_pad", "NOTSET")
    if "output_shape" in a or auto in ("SAME_UPPER", "SAME_LOWER"):
        want = (
            [int(v) for v in a["output_shape"]][-2:]
            if "output_shape" in a
            else [n * s for n, s in zip(size, strides, strict=True)]
        )
        total = [
            s * (n - 1) + extra + sp - o
            for s, n, extra, sp, o in zip(strides, size, out_pad, span, want, strict=True)
        ]
        if auto == "SAME_UPPER":
            begin = [t // 2 for t in total]
        else:
            begin = [t - t // 2 for t in total]
        pads = [*begin, *(t - b for t, b in zip(total, begin, strict=True))]
    elif auto == "VALID":
        pads = [0, 0, 0, 0]
    else:
        pads = [int(v) for v in a.get("pads", (0, 0, 0, 0))]
    bias = ins[2] if len(ins) > 2 else None
    if (
        groups == 1
        and list(kernel) == strides
        and dil == [1, 1]
        and pads == [0, 0, 0, 0]
        and out_pad == [0, 0]
        and (bias is None or isinstance(bias, Constant))
    ):
        return [_conv_transpose_taps(ctx, x, w, bias, name)]
    # the convolution's padding on the dilated input: negative amounts are cropped first
    before = [sp - 1 - p for sp, p in zip(span, pads[:2], strict=True)]
    after = [sp - 1 - p + extra for sp, p, extra in zip(span, pads[2:], out_pad, strict=True)]
    y = x
    if any(s > 1 for s in strides):
        y = ctx.call("dilate", [y], {"strides": (1, 1, *strides)}, f"{name}.dilate")
    dims = y.type.shape[2:]
    crop = {
        2 + d: (max(0, -before[d]), dims[d] + min(0, after[d]), 1)
        for d in range(2)
        if before[d] < 0 or after[d] < 0
    }
    if any(len(range(*r)) < 1 for r in crop.values()):
        raise FrontendError(f"node {name!r} (ConvTranspose): pads {pads} leave an empty output")
    y = _slice_call(ctx, y, crop, f"{name}.crop")
    # weight (C_in, C_out/g, kh, kw) -> (C_out, C_in/g, kh, kw), flipped in space
    ci_g = c_in // groups
    wg = w.reshape(groups, ci_g, co_g, kh, kw)[:, :, :, ::-1, ::-1]
    wc = np.ascontiguousarray(wg.transpose(0, 2, 1, 3, 4).reshape(groups * co_g, ci_g, kh, kw))
    attrs = {
        "strides": (1, 1),
        "dilation": tuple(dil),
        "padding": (max(0, before[0]), max(0, before[1]), max(0, after[0]), max(0, after[1])),
        "groups": groups,
    }
    args = [y, Constant(wc, name=f"{name}.weight")]
    if len(ins) > 2 and ins[2] is not None:
        args.append(ins[2])
    return [ctx.call("conv2d", args, attrs, name)]


def _conv_transpose_taps(
    ctx: _Ctx, x: Value, w: np.ndarray, bias: Constant | None, name: str
) -> Value:
    """A transposed convolution whose kernel equals its strides (no padding, no dilation, one
    group), as in U-Net and DBNet upsampling heads: the windows do not overlap, so output pixel
    ``(s i + p, s' j + q)`` takes tap ``(p, q)`` of input pixel ``(i, j)`` alone. It runs as
    one 1x1 convolution to ``C_out * kh * kw`` channels (channel ``(o, p, q)`` weighs tap
    ``(p, q)`` of output channel ``o``) whose result is interleaved into the output
    (``reshape``, ``transpose``, ``reshape``: a depth-to-space), instead of a convolution over
    an input with ``kh * kw - 1`` zeros inserted per pixel, which multiplies each of them."""
    c_in, c_out, kh, kw = w.shape
    taps = np.ascontiguousarray(w.transpose(1, 2, 3, 0).reshape(c_out * kh * kw, c_in, 1, 1))
    args: list[Value] = [x, Constant(taps, name=f"{name}.taps_weight")]
    if bias is not None:
        per_tap = np.repeat(np.asarray(bias.value).reshape(-1), kh * kw)
        args.append(Constant(per_tap, name=f"{name}.taps_bias"))
    attrs = {"strides": (1, 1), "dilation": (1, 1), "padding": (0, 0, 0, 0), "groups": 1}
    y = ctx.call("conv2d", args, attrs, f"{name}.taps")
    n, _, h, wd = y.type.shape
    y = _reshape(ctx, y, (n, c_out, kh, kw, h, wd), f"{name}.taps_split")
    y = ctx.call("transpose", [y], {"axes": INTERLEAVE_AXES}, f"{name}.interleave")
    return _reshape(ctx, y, (n, c_out, h * kh, wd * kw), name)


@_conv("BatchNormalization")
def _c_bn(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    return [ctx.call("batch_norm", ins[:5], {"epsilon": float(a.get("epsilon", 1e-5))}, name)]


_UNARY = {
    "Relu": "relu",
    "Sigmoid": "sigmoid",
    "Exp": "exp",
    "Sqrt": "sqrt",
    "Neg": "negative",
    "HardSwish": "hard_swish",
    "Log": "log",
    "Tanh": "tanh",
    "Erf": "erf",
    "Not": "logical_not",
}


@_conv("Relu Sigmoid Exp Sqrt Neg HardSwish Log Tanh Erf Not")
def _c_unary(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    return [ctx.call(_UNARY[node.op_type], [ins[0]], {}, name)]


@_conv("LeakyRelu")
def _c_leaky(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    return [ctx.call("leaky_relu", [ins[0]], {"alpha": float(a.get("alpha", 0.01))}, name)]


@_conv("PRelu")
def _c_prelu(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    # y = max(x, 0) + slope * min(x, 0), from contract ops: the slope (one per channel as
    # exporters write it, broadcast against x) is a constant the multiply folds into a scale
    x, slope = ins[0], ins[1]
    zero = Constant(np.array(0, x.type.dtype))
    neg = ctx.call("minimum", [x, zero], {}, f"{name}.neg")
    scaled = ctx.call("multiply", [neg, slope], {}, f"{name}.slope")
    return [ctx.call("add", [ctx.call("relu", [x], {}, f"{name}.pos"), scaled], {}, name)]


def _softplus(ctx: _Ctx, x: Value, name: str) -> Value:
    """``log(1 + exp(x))`` from contract ops, as ``max(x, 0) + log(1 + exp(-|x|))``: the
    exponent is never positive, so nothing overflows where ``x`` is large (the direct form
    gives ``inf`` from x = 89 on in float32), and the result is ``x`` there, as onnxruntime's."""
    one = Constant(np.array(1, x.type.dtype))
    neg = ctx.call("negative", [x], {}, f"{name}.neg")
    nabs = ctx.call("minimum", [x, neg], {}, f"{name}.nabs")
    tail = ctx.call("exp", [nabs], {}, f"{name}.exp")
    log = ctx.call("log", [ctx.call("add", [tail, one], {}, f"{name}.1p")], {}, f"{name}.log")
    return ctx.call("add", [ctx.call("relu", [x], {}, f"{name}.pos"), log], {}, name)


@_conv("Softplus")
def _c_softplus(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    return [_softplus(ctx, ins[0], name)]


@_conv("Mish")
def _c_mish(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    # x * tanh(softplus(x)): YOLOv4's activation (opset 18 names it; older exporters write
    # the Softplus, Tanh and Mul themselves, which import through the converters one by one)
    x = ins[0]
    t = ctx.call("tanh", [_softplus(ctx, x, f"{name}.softplus")], {}, f"{name}.tanh")
    return [ctx.call("multiply", [x, t], {}, name)]


def _scalar(x: Value, v: float) -> Constant:
    return Constant(np.array(v, x.type.dtype))


@_conv("Abs")
def _c_abs(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    x = ins[0]  # max(x, -x): exact
    return [ctx.call("maximum", [x, ctx.call("negative", [x], {}, f"{name}.neg")], {}, name)]


@_conv("Reciprocal")
def _c_reciprocal(
    ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str
) -> list[Value]:
    return [ctx.call("divide", [_scalar(ins[0], 1.0), ins[0]], {}, name)]


@_conv("Sign")
def _c_sign(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    x = ins[0]
    pos = ctx.call("greater", [x, _scalar(x, 0)], {}, f"{name}.positive")
    neg = ctx.call("less", [x, _scalar(x, 0)], {}, f"{name}.negative")
    low = ctx.call("where", [neg, _scalar(x, -1), _scalar(x, 0)], {}, f"{name}.low")
    return [ctx.call("where", [pos, _scalar(x, 1), low], {}, name)]


def _elu(ctx: _Ctx, x: Value, alpha: float, name: str, scale: float = 1.0) -> Value:
    """``scale * (x if x > 0 else alpha * (exp(x) - 1))``, the exponential taken of
    ``min(x, 0)``: the branch the select drops then neither overflows nor widens the value's
    range (int8 calibration would give ``exp(x) - 1``'s few negative levels to large ``x``)."""
    neg = ctx.call("minimum", [x, _scalar(x, 0.0)], {}, f"{name}.nonpositive")
    em1 = ctx.call(
        "subtract", [ctx.call("exp", [neg], {}, f"{name}.exp"), _scalar(x, 1.0)], {}, f"{name}.em1"
    )
    low = ctx.call("multiply", [em1, _scalar(x, alpha * scale)], {}, f"{name}.low")
    high = x if scale == 1.0 else ctx.call("multiply", [x, _scalar(x, scale)], {}, f"{name}.hi")
    pos = ctx.call("greater", [x, _scalar(x, 0.0)], {}, f"{name}.positive")
    return ctx.call("where", [pos, high, low], {}, name)


@_conv("Elu")
def _c_elu(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    return [_elu(ctx, ins[0], float(a.get("alpha", 1.0)), name)]


@_conv("Selu")
def _c_selu(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    alpha = float(a.get("alpha", 1.67326319217681884765625))
    gamma = float(a.get("gamma", 1.05070102214813232421875))
    return [_elu(ctx, ins[0], alpha, name, scale=gamma)]


@_conv("Celu")
def _c_celu(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``: ``alpha * elu(x / alpha)``."""
    x, alpha = ins[0], float(a.get("alpha", 1.0))
    scaled = ctx.call("multiply", [x, _scalar(x, 1.0 / alpha)], {}, f"{name}.scaled")
    return [_elu(ctx, scaled, 1.0, name, scale=alpha)]


@_conv("Softsign")
def _c_softsign(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    x = ins[0]
    (ax,) = _c_abs(ctx, node, [x], {}, f"{name}.abs")
    den = ctx.call("add", [ax, _scalar(x, 1.0)], {}, f"{name}.den")
    return [ctx.call("divide", [x, den], {}, name)]


@_conv("ThresholdedRelu")
def _c_thresholded_relu(
    ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str
) -> list[Value]:
    x = ins[0]
    above = ctx.call("greater", [x, _scalar(x, float(a.get("alpha", 1.0)))], {}, f"{name}.above")
    return [ctx.call("where", [above, x, _scalar(x, 0.0)], {}, name)]


@_conv("HardSigmoid")
def _c_hsig(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    attrs = {"alpha": float(a.get("alpha", 0.2)), "beta": float(a.get("beta", 0.5))}
    return [ctx.call("hard_sigmoid", [ins[0]], attrs, name)]


@_conv("Clip")
def _c_clip(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    lo, hi = a.get("min", -math.inf), a.get("max", math.inf)
    if len(ins) > 1 and ins[1] is not None:
        lo = _const(ins[1], node, "min").item()
    if len(ins) > 2 and ins[2] is not None:
        hi = _const(ins[2], node, "max").item()
    for what, bound in (("min", lo), ("max", hi)):
        if math.isnan(float(bound)):
            raise FrontendError(f"node {name!r} (Clip): its {what} is NaN")
    return [ctx.call("clip", [ins[0]], {"a_min": float(lo), "a_max": float(hi)}, name)]


_BINARY = {
    "Add": "add",
    "Sub": "subtract",
    "Mul": "multiply",
    "Div": "divide",
    "Max": "maximum",
    "Min": "minimum",
    "Sum": "add",
}


@_conv("Add Sub Mul Div Max Min Sum")
def _c_binary(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    op = _BINARY[node.op_type]
    if len(ins) == 1:
        return [ins[0]]
    acc = ins[0]
    for k, v in enumerate(ins[1:], start=1):
        acc = ctx.call(op, [acc, v], {}, name if k == len(ins) - 1 else f"{name}.{k}")
    return [acc]


@_conv("Gelu")
def _c_gelu(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    return [ctx.call("gelu", [ins[0]], {"approximate": a.get("approximate", "none")}, name)]


_COMPARE = {
    "Equal": "equal",
    "Less": "less",
    "Greater": "greater",
    "LessOrEqual": "less_equal",
    "GreaterOrEqual": "greater_equal",
    "And": "logical_and",
    "Or": "logical_or",
}


@_conv("Equal Less Greater LessOrEqual GreaterOrEqual And Or")
def _c_compare(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    return [ctx.call(_COMPARE[node.op_type], ins[:2], {}, name)]


@_conv("Where")
def _c_where(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    return [ctx.call("where", ins[:3], {}, name)]


@_conv("Pow")
def _c_pow(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    """A constant scalar exponent of 1, 2, 3 or 1/2 becomes products or a square root (exact,
    as onnxruntime's); any other exponent a ``power`` node, the exponent cast to the base's
    type first (ONNX lets the two types differ)."""
    x, e = ins[0], ins[1]
    dt = x.type.dtype
    # a one-element exponent of no higher rank leaves the base's shape as it is
    if isinstance(e, Constant) and e.value.size == 1 and e.type.ndim <= x.type.ndim:
        k = float(e.value.reshape(-1)[0])
        if k == 1.0:
            return [x]
        if k == 2.0:
            return [ctx.call("multiply", [x, x], {}, name)]
        if k == 3.0:
            sq = ctx.call("multiply", [x, x], {}, f"{name}.square")
            return [ctx.call("multiply", [sq, x], {}, name)]
        if k == 0.5:
            return [ctx.call("sqrt", [x], {}, name)]
    if e.type.dtype != dt:
        if isinstance(e, Constant):
            e = Constant(e.value.astype(dt), name=e.name)
        else:
            e = ctx.call("cast", [e], {"dtype": dt}, f"{name}.exponent")
    return [ctx.call("power", [x, e], {}, name)]


def _pool_attrs(node: Any, a: dict[str, Any], x: Value) -> dict[str, Any]:
    kernel = tuple(a["kernel_shape"])
    if len(kernel) != 2:
        raise FrontendError(
            f"node {_label(node)!r} ({node.op_type}): only 2-d pooling is "
            f"supported, kernel_shape is {kernel}"
        )
    attrs = _spatial(node, a, x, kernel)
    attrs.update(pool_size=kernel, ceil_mode=bool(a.get("ceil_mode", 0)))
    return attrs


@_conv("MaxPool")
def _c_maxpool(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    return [ctx.call("max_pool2d", [ins[0]], _pool_attrs(node, a, ins[0]), name)]


@_conv("AveragePool")
def _c_avgpool(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    attrs = _pool_attrs(node, a, ins[0])
    attrs["count_include_pad"] = bool(a.get("count_include_pad", 0))
    return [ctx.call("avg_pool2d", [ins[0]], attrs, name)]


@_conv("GlobalMaxPool")
def _c_gmp(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    """The maximum over every spatial axis (2 onwards), kept as size-1 axes."""
    rank = ins[0].type.ndim
    if rank < 3:
        raise FrontendError(
            f"node {name!r} (GlobalMaxPool): needs an input of rank 3 or more (N, C, spatial "
            f"...), got shape {ins[0].type.shape}"
        )
    attrs = {"axes": tuple(range(2, rank)), "keepdims": True}
    return [ctx.call("max", [ins[0]], attrs, name)]


@_conv("GlobalAveragePool")
def _c_gap(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    if ins[0].type.ndim != 4:
        raise FrontendError(
            f"node {name!r} (GlobalAveragePool): needs a 4-d NCHW input, got "
            f"shape {ins[0].type.shape}"
        )
    return [ctx.call("global_avg_pool2d", [ins[0]], {}, name)]


_REDUCE = {"ReduceMean": "mean", "ReduceSum": "sum", "ReduceMax": "max", "ReduceMin": "min"}


@_conv("ReduceMean ReduceSum ReduceMax ReduceMin")
def _c_reduce(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    """Axes come as an attribute or (ReduceSum from opset 13, the rest from 18) a constant
    input; no axes reduce everything, unless ``noop_with_empty_axes`` makes it the identity.
    A mean over H and W of a 4-d tensor is a global average pool (the form the accelerator
    runs once quantized)."""
    x = ins[0]
    rank = x.type.ndim
    axes = a.get("axes")
    if axes is None and len(ins) > 1 and ins[1] is not None:
        axes = _ints_of(ins[1], node, "axes")
    if not axes:
        if a.get("noop_with_empty_axes", 0):
            return [x]
        axes = list(range(rank))
    norm = sorted({_axis(int(k), rank, node) for k in axes})
    if len(norm) != len(axes):
        raise FrontendError(f"node {name!r} ({node.op_type}): axes {list(axes)} repeat an axis")
    keep = bool(a.get("keepdims", 1))
    if node.op_type == "ReduceMean" and rank == 4 and norm == [2, 3]:
        out = ctx.call("global_avg_pool2d", [x], {}, name if keep else f"{name}.mean")
        if not keep:
            out = ctx.call("reshape", [out], {"newshape": x.type.shape[:2]}, name)
        return [out]
    attrs = {"axes": tuple(norm), "keepdims": keep}
    return [ctx.call(_REDUCE[node.op_type], [x], attrs, name)]


@_conv("ArgMax")
def _c_argmax(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    attrs = {
        "axis": _axis(int(a.get("axis", 0)), ins[0].type.ndim, node),
        "keepdims": bool(a.get("keepdims", 1)),
        "select_last_index": bool(a.get("select_last_index", 0)),
    }
    return [ctx.call("argmax", [ins[0]], attrs, name)]


def _reshape(ctx: _Ctx, x: Value, shape: Sequence[int], name: str) -> Value:
    shape = tuple(int(d) for d in shape)
    if shape == x.type.shape:
        return x
    return ctx.call("reshape", [x], {"newshape": shape}, name)


@_conv("Flatten")
def _c_flatten(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    x = ins[0]
    rank = x.type.ndim
    axis = a.get("axis", 1)
    axis = axis if axis == rank else _axis(axis, rank, node)
    shape = (math.prod(x.type.shape[:axis]), math.prod(x.type.shape[axis:]))
    return [_reshape(ctx, x, shape, name)]


@_conv("Reshape")
def _c_reshape(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    x = ins[0]
    spec = [int(d) for d in _const(ins[1], node, "the shape input").reshape(-1)]
    allowzero = a.get("allowzero", 0)
    shape = [x.type.shape[k] if d == 0 and not allowzero else d for k, d in enumerate(spec)]
    if shape.count(-1) > 1:
        raise FrontendError(f"node {name!r} (Reshape): more than one -1 in shape {spec}")
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        if known == 0 or x.type.size % known:
            raise FrontendError(f"node {name!r} (Reshape): cannot reshape {x.type.shape} to {spec}")
        shape[shape.index(-1)] = x.type.size // known
    if math.prod(shape) != x.type.size:
        raise FrontendError(
            f"node {name!r} (Reshape): cannot reshape {x.type.shape} "
            f"({x.type.size} elements) to {spec}"
        )
    return [_reshape(ctx, x, shape, name)]


@_conv("Transpose")
def _c_transpose(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    x = ins[0]
    perm = tuple(a.get("perm", range(x.type.ndim - 1, -1, -1)))
    return [ctx.call("transpose", [x], {"axes": perm}, name)]


def _axes_arg(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any]) -> list[int] | None:
    if "axes" in a:
        return list(a["axes"])
    if len(ins) > 1 and ins[1] is not None:
        return [int(v) for v in _const(ins[1], node, "axes").reshape(-1)]
    return None


@_conv("Squeeze")
def _c_squeeze(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    x = ins[0]
    axes = _axes_arg(ctx, node, ins, a)
    rank = x.type.ndim
    drop = (
        {k for k, d in enumerate(x.type.shape) if d == 1}
        if axes is None
        else {_axis(k, rank, node) for k in axes}
    )
    for k in drop:
        if x.type.shape[k] != 1:
            raise FrontendError(f"node {name!r} (Squeeze): axis {k} has size {x.type.shape[k]}")
    shape = [d for k, d in enumerate(x.type.shape) if k not in drop]
    return [_reshape(ctx, x, shape, name)]


@_conv("Unsqueeze")
def _c_unsqueeze(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    x = ins[0]
    axes = _axes_arg(ctx, node, ins, a)
    if axes is None:
        raise FrontendError(f"node {name!r} (Unsqueeze): no axes")
    rank = x.type.ndim + len(axes)
    where = sorted(_axis(k, rank, node) for k in axes)
    shape = list(x.type.shape)
    for k in where:
        shape.insert(k, 1)
    return [_reshape(ctx, x, shape, name)]


@_conv("Concat")
def _c_concat(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    vals = [v for v in ins if v is not None]
    axis = _axis(a["axis"], vals[0].type.ndim, node)
    if len(vals) == 1:
        return [vals[0]]
    return [ctx.call("concat", vals, {"axis": axis}, name)]


@_conv("Pad")
def _c_pad(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    x = ins[0]
    rank = x.type.ndim
    if "pads" in a:
        pads = list(a["pads"])
        value = float(a.get("value", 0.0))
    else:
        pads = [int(v) for v in _const(ins[1], node, "pads").reshape(-1)]
        value = 0.0
        if len(ins) > 2 and ins[2] is not None:
            value = float(_const(ins[2], node, "constant_value").reshape(-1)[0])
    axes = list(range(rank))
    if len(ins) > 3 and ins[3] is not None:
        axes = [_axis(int(k), rank, node) for k in _const(ins[3], node, "axes").reshape(-1)]
    if len(pads) != 2 * len(axes):
        raise FrontendError(f"node {name!r} (Pad): {len(pads)} pads for {len(axes)} axes")
    if min(pads, default=0) < 0:
        raise FrontendError(
            f"node {name!r} (Pad): negative pads {pads} (cropping) are not supported"
        )
    width = [(0, 0)] * rank
    for k, ax in enumerate(axes):
        width[ax] = (pads[k], pads[k + len(axes)])
    if all(w == (0, 0) for w in width):
        return [x]
    mode = a.get("mode", "constant")
    if mode == "constant":
        return [ctx.call("pad", [x], {"pad_width": tuple(width), "pad_value": value}, name)]
    # reflect, edge and wrap read the input itself: a gather along each padded axis
    padded = [ax for ax in range(rank) if width[ax] != (0, 0)]
    for ax in padded:
        before, after = width[ax]
        index = _pad_indices(mode, x.type.shape[ax], before, after, name, ax)
        attrs = {"axis": ax, "indices": index, "indices_shape": (len(index),)}
        x = ctx.call("take", [x], attrs, name if ax == padded[-1] else f"{name}.axis{ax}")
    return [x]


def _pad_indices(mode: str, size: int, before: int, after: int, name: str, axis: int) -> tuple:
    """The input positions a ``reflect``, ``edge`` or ``wrap`` pad of ``before`` and ``after``
    reads along an axis of ``size``, in output order.

    Example:
        >>> _pad_indices("reflect", 4, 2, 3, "p", 0)
        (2, 1, 0, 1, 2, 3, 2, 1, 0)
        >>> _pad_indices("edge", 3, 2, 1, "p", 0), _pad_indices("wrap", 3, 2, 1, "p", 0)
        ((0, 0, 0, 1, 2, 2), (1, 2, 0, 1, 2, 0))
    """
    positions = np.arange(-before, size + after)
    if mode == "reflect":
        if before >= size or after >= size:
            raise FrontendError(
                f"node {name!r} (Pad): a reflect pad of ({before}, {after}) on axis {axis} of "
                f"size {size} must be smaller than the axis"
            )
        positions = np.abs(positions)
        positions = np.where(positions >= size, 2 * (size - 1) - positions, positions)
    elif mode == "edge":
        positions = np.clip(positions, 0, size - 1)
    elif mode == "wrap":
        positions = positions % size
    else:
        raise FrontendError(f"node {name!r} (Pad): unknown mode {mode!r}")
    return tuple(int(k) for k in positions)


@_conv("Gemm")
def _c_gemm(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    x, w = ins[0], ins[1]
    c = ins[2] if len(ins) > 2 else None
    alpha, beta = float(a.get("alpha", 1.0)), float(a.get("beta", 1.0))
    if a.get("transA", 0):
        x = ctx.call("transpose", [x], {"axes": (1, 0)}, f"{name}.transA")
    if not a.get("transB", 0):
        w = ctx.call("transpose", [w], {"axes": (1, 0)}, f"{name}.transB")
    if alpha != 1.0:
        w = ctx.call("multiply", [w, Constant(np.array(alpha, w.type.dtype))], {}, f"{name}.alpha")
    m = w.type.shape[0]
    if c is None:
        return [ctx.call("dense", [x, w], {}, name)]
    if beta != 1.0:
        c = ctx.call("multiply", [c, Constant(np.array(beta, c.type.dtype))], {}, f"{name}.beta")
    if c.type.size == m and c.type.shape in ((m,), (1, m)):
        bias = _reshape(ctx, c, (m,), f"{name}.bias")
        return [ctx.call("dense", [x, w, bias], {}, name)]
    y = ctx.call("dense", [x, w], {}, f"{name}.dense")
    return [ctx.call("add", [y, c], {}, name)]


@_conv("MatMul")
def _c_matmul(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    return [ctx.call("matmul", ins[:2], {}, name)]


#: Gates per recurrent operator, in ONNX's order within ``W``, ``R`` and ``B``: LSTM's input,
#: output, forget and cell; GRU's update, reset and hidden; RNN's one.
RNN_GATES = {"LSTM": "iofc", "GRU": "zrh", "RNN": "h"}


@_conv("LSTM GRU RNN")
def _c_recurrent(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    """Unrolled over the sequence, as TVM's ONNX frontend does (static shapes): per direction
    one ``dense`` of every step's input by ``W`` (with the biases that add to it), then per
    step a ``dense`` of the hidden state by ``R`` and the cell's gates (:func:`_lstm_cell`,
    :func:`_gru_cell`, :func:`_rnn_cell`). Outputs ``Y (S, D, B, H)`` and ``Y_h (D, B, H)``,
    and LSTM's ``Y_c`` (with ``layout`` 1: batch first). Sequence lengths shorter than the
    sequence, LSTM's peepholes, ``clip``, ``input_forget`` and other activations are refused
    before any work (:func:`_recurrent_reason`)."""
    kind = node.op_type
    gates = len(RNN_GATES[kind])
    x, w, r = ins[0], ins[1], ins[2]
    bias, seq_lens, h0 = (ins[k] if len(ins) > k else None for k in (3, 4, 5))
    c0 = ins[6] if kind == "LSTM" and len(ins) > 6 else None
    layout = int(a.get("layout", 0))
    if x.type.ndim != 3:
        raise FrontendError(f"node {name!r} ({kind}): X must be 3-d, it has shape {x.type.shape}")
    if layout:  # (B, S, I) -> (S, B, I); states (B, D, H) -> (D, B, H)
        x = ctx.call("transpose", [x], {"axes": (1, 0, 2)}, f"{name}.x_seq_first")
        if h0 is not None:
            h0 = ctx.call("transpose", [h0], {"axes": (1, 0, 2)}, f"{name}.h0_seq_first")
        if c0 is not None:
            c0 = ctx.call("transpose", [c0], {"axes": (1, 0, 2)}, f"{name}.c0_seq_first")
    steps, batch, feat = x.type.shape
    wv, rv = _const(w, node, "W"), _const(r, node, "R")
    direction = a.get("direction", "forward")
    dirs = 2 if direction == "bidirectional" else 1
    hidden = int(a["hidden_size"]) if "hidden_size" in a else int(rv.shape[-1])
    gh = gates * hidden
    if wv.shape != (dirs, gh, feat) or rv.shape != (dirs, gh, hidden):
        raise FrontendError(
            f"node {name!r} ({kind}): W {wv.shape} and R {rv.shape} do not fit {dirs} "
            f"direction(s), hidden_size {hidden} and input size {feat}"
        )
    if seq_lens is not None:
        lens = _const(seq_lens, node, "sequence_lens").reshape(-1)
        if lens.size != batch or (lens != steps).any():
            raise FrontendError(
                f"node {name!r} ({kind}): sequence_lens {lens.tolist()} differ from the "
                f"sequence length {steps}; only full-length sequences are supported"
            )
    dt = x.type.dtype
    bv = (
        _const(bias, node, "B").reshape(dirs, 2 * gh).astype(dt)
        if bias is not None
        else np.zeros((dirs, 2 * gh), dt)
    )
    before_reset = bool(a.get("linear_before_reset", 0))
    flat = _reshape(ctx, x, (steps * batch, feat), f"{name}.x_rows")
    ys: list[list[Value]] = [[] for _ in range(steps)]
    last_h: list[Value] = []
    last_c: list[Value] = []
    for d in range(dirs):
        reverse = direction == "reverse" or d == 1
        tag = f"{name}.{'reverse' if reverse else 'forward'}"
        wb, rb = bv[d, :gh], bv[d, gh:]
        # the recurrent bias adds to the input's, but for GRU's hidden gate after its reset
        in_bias = wb + rb
        if kind == "GRU":
            in_bias[2 * hidden :] = wb[2 * hidden :] + (0 if before_reset else rb[2 * hidden :])
        w_d = Constant(np.ascontiguousarray(wv[d]), name=f"{tag}.W")
        xw = ctx.call("dense", [flat, w_d, Constant(in_bias, name=f"{tag}.b")], {}, f"{tag}.xW")
        # one constant per recurrent weight, read by every step (a constant per step would be
        # a copy of the weight per step in the compiled model)
        if kind == "GRU":
            r_d: Any = _gru_weights(rv[d], rb[2 * hidden :], hidden, tag)
        else:
            r_d = Constant(np.ascontiguousarray(rv[d]), name=f"{tag}.R")

        def state(v: Value | None, what: str, d: int = d, tag: str = tag) -> Value | None:
            if v is None:
                return None
            s = _slice_call(ctx, v, {0: (d, d + 1, 1)}, f"{tag}.{what}0")
            return _reshape(ctx, s, (batch, hidden), f"{tag}.{what}0_rows")

        h, c = state(h0, "h"), state(c0, "c")
        for k in range(steps):
            t = steps - 1 - k if reverse else k
            st = f"{tag}.t{t}"
            g = _slice_call(ctx, xw, {0: (t * batch, (t + 1) * batch, 1)}, f"{st}.xW")
            if kind == "LSTM":
                h, c = _lstm_cell(ctx, g, h, c, r_d, hidden, st)
            elif kind == "GRU":
                h = _gru_cell(ctx, g, h, r_d, before_reset, hidden, st)
            else:
                h = _rnn_cell(ctx, g, h, r_d, st)
            ys[t].append(_reshape(ctx, h, (1, 1, batch, hidden), f"{st}.y"))
        assert h is not None
        last_h.append(_reshape(ctx, h, (1, batch, hidden), f"{tag}.h_last"))
        if c is not None:
            last_c.append(_reshape(ctx, c, (1, batch, hidden), f"{tag}.c_last"))

    def joined(parts: list[Value], axis: int, what: str) -> Value:
        return parts[0] if len(parts) == 1 else ctx.call("concat", parts, {"axis": axis}, what)

    y = joined([joined(p, 1, f"{name}.y{t}") for t, p in enumerate(ys)], 0, f"{name}.Y")
    states = [joined(last_h, 0, f"{name}.Y_h")]
    if kind == "LSTM":
        states.append(joined(last_c, 0, f"{name}.Y_c"))
    if layout:
        y = ctx.call("transpose", [y], {"axes": (2, 0, 1, 3)}, f"{name}.Y_batch_first")
        states = [
            ctx.call("transpose", [v], {"axes": (1, 0, 2)}, f"{v.name}_batch_first") for v in states
        ]
    return [y, *states]


def _gate_slices(ctx: _Ctx, g: Value, names: str, hidden: int, st: str) -> list[Value]:
    return [
        _slice_call(ctx, g, {1: (j * hidden, (j + 1) * hidden, 1)}, f"{st}.{gate}")
        for j, gate in enumerate(names)
    ]


def _lstm_cell(
    ctx: _Ctx, g: Value, h: Value | None, c: Value | None, r: Constant, hidden: int, st: str
) -> tuple[Value, Value]:
    """``c = f * c + i * g``, ``h = o * tanh(c)`` (without a state yet: ``c = i * g``)."""
    if h is not None:
        g = ctx.call("add", [g, ctx.call("dense", [h, r], {}, f"{st}.hR")], {}, st)
    i, o, f, cand = _gate_slices(ctx, g, RNN_GATES["LSTM"], hidden, st)
    i = ctx.call("sigmoid", [i], {}, f"{st}.input_gate")
    o = ctx.call("sigmoid", [o], {}, f"{st}.output_gate")
    cand = ctx.call("tanh", [cand], {}, f"{st}.cell_input")
    c_new = ctx.call("multiply", [i, cand], {}, f"{st}.ig")
    if c is not None:
        f = ctx.call("sigmoid", [f], {}, f"{st}.forget_gate")
        fc = ctx.call("multiply", [f, c], {}, f"{st}.fc")
        c_new = ctx.call("add", [fc, c_new], {}, f"{st}.c")
    h_new = ctx.call("multiply", [o, ctx.call("tanh", [c_new], {}, f"{st}.tanh_c")], {}, f"{st}.h")
    return h_new, c_new


def _gru_weights(
    r: np.ndarray, rb_h: np.ndarray, hidden: int, tag: str
) -> tuple[Constant, Constant, Constant]:
    """GRU's recurrent weights as :func:`_gru_cell` reads them: ``R`` of the update and reset
    gates, ``R`` of the hidden gate and its bias."""
    return (
        Constant(np.ascontiguousarray(r[: 2 * hidden]), name=f"{tag}.R_zr"),
        Constant(np.ascontiguousarray(r[2 * hidden :]), name=f"{tag}.R_h"),
        Constant(np.ascontiguousarray(rb_h), name=f"{tag}.Rb_h"),
    )


def _gru_cell(
    ctx: _Ctx, g: Value, h: Value | None, weights: tuple[Constant, Constant, Constant],
    before_reset: bool, hidden: int, st: str,
) -> Value:  # fmt: skip
    """``z``, ``r`` gates, ``n = tanh(x W_h + r * (h R_h + Rb_h))`` (``linear_before_reset``)
    or ``tanh(x W_h + (r * h) R_h + Rb_h)``, then ``h = n + z * (h - n)`` (without a state
    yet, ``h`` is zero). ``weights``: :func:`_gru_weights`."""
    r_zr, r_h, rb_h = weights
    xz, xr, xh = _gate_slices(ctx, g, RNN_GATES["GRU"], hidden, st)
    dt = g.type.dtype
    if h is not None:
        hzr = ctx.call("dense", [h, r_zr], {}, f"{st}.hR_zr")
        hz, hr = _gate_slices(ctx, hzr, "zr", hidden, f"{st}.h")
        xz = ctx.call("add", [xz, hz], {}, f"{st}.z_in")
        xr = ctx.call("add", [xr, hr], {}, f"{st}.r_in")
    z = ctx.call("sigmoid", [xz], {}, f"{st}.update_gate")
    reset = ctx.call("sigmoid", [xr], {}, f"{st}.reset_gate")
    if before_reset:
        hh: Value = rb_h  # h R_h + Rb_h with h zero
        if h is not None:
            hh = ctx.call("dense", [h, r_h, rb_h], {}, f"{st}.hR_h")
        inner = ctx.call("multiply", [reset, hh], {}, f"{st}.reset_hR")
        xh = ctx.call("add", [xh, inner], {}, f"{st}.n_in")
    elif h is not None:
        rh = ctx.call("multiply", [reset, h], {}, f"{st}.reset_h")
        xh = ctx.call("add", [xh, ctx.call("dense", [rh, r_h], {}, f"{st}.hR_h")], {}, f"{st}.n_in")
    n = ctx.call("tanh", [xh], {}, f"{st}.hidden_input")
    if h is None:  # (1 - z) * n
        one_minus = ctx.call("subtract", [Constant(np.array(1.0, dt)), z], {}, f"{st}.keep")
        return ctx.call("multiply", [one_minus, n], {}, f"{st}.h")
    diff = ctx.call("subtract", [h, n], {}, f"{st}.h_minus_n")
    return ctx.call("add", [n, ctx.call("multiply", [z, diff], {}, f"{st}.zd")], {}, f"{st}.h")


def _rnn_cell(ctx: _Ctx, g: Value, h: Value | None, r: Constant, st: str) -> Value:
    """``h = tanh(x W + h R + biases)``."""
    if h is not None:
        g = ctx.call("add", [g, ctx.call("dense", [h, r], {}, f"{st}.hR")], {}, f"{st}.in")
    return ctx.call("tanh", [g], {}, f"{st}.h")


@_conv("Softmax")
def _c_softmax(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    x = ins[0]
    rank = x.type.ndim
    if ctx.opset >= 13:
        return [ctx.call("softmax", [x], {"axis": _axis(a.get("axis", -1), rank, node)}, name)]
    axis = _axis(a.get("axis", 1), rank, node)
    if axis == rank - 1:
        return [ctx.call("softmax", [x], {"axis": axis}, name)]
    # before opset 13 softmax flattens the input to 2-d at ``axis``
    flat = (math.prod(x.type.shape[:axis]), math.prod(x.type.shape[axis:]))
    y = ctx.call(
        "softmax", [_reshape(ctx, x, flat, f"{name}.flatten")], {"axis": 1}, f"{name}.softmax"
    )
    return [_reshape(ctx, y, x.type.shape, name)]


def _normalize(ctx: _Ctx, x: Value, axes: Sequence[int], eps: float, name: str) -> Value:
    """``(x - mean) / sqrt(var + eps)`` over ``axes`` from contract operators (two means, so
    both targets run it as two reductions with their elementwise epilogues)."""
    dt = x.type.dtype
    reduce = {"axes": tuple(axes), "keepdims": True}
    mean = ctx.call("mean", [x], reduce, f"{name}.mean")
    d = ctx.call("subtract", [x, mean], {}, f"{name}.centre")
    square = ctx.call("multiply", [d, d], {}, f"{name}.square")
    var = ctx.call("mean", [square], reduce, f"{name}.var")
    std = ctx.call(
        "sqrt",
        [ctx.call("add", [var, Constant(np.array(eps, dt))], {}, f"{name}.eps")],
        {},
        f"{name}.std",
    )
    return ctx.call("divide", [d, std], {}, f"{name}.norm")


@_conv("LayerNormalization")
def _c_layer_norm(
    ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str
) -> list[Value]:
    """Normalised over the axes from ``axis`` to the last, then scaled and shifted by
    ``scale`` and ``bias`` (broadcast over the leading axes)."""
    x = ins[0]
    rank = x.type.ndim
    axis = _axis(int(a.get("axis", -1)), rank, node)
    y = _normalize(ctx, x, range(axis, rank), float(a.get("epsilon", 1e-5)), name)
    has_bias = len(ins) > 2 and ins[2] is not None
    y = ctx.call("multiply", [y, ins[1]], {}, f"{name}.scale" if has_bias else name)
    return [ctx.call("add", [y, ins[2]], {}, name) if has_bias else y]


@_conv("InstanceNormalization")
def _c_instance_norm(
    ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str
) -> list[Value]:
    """Normalised per sample and channel over the spatial axes, then a per-channel scale and
    bias."""
    x, scale, bias = ins[0], ins[1], ins[2]
    rank = x.type.ndim
    if rank < 3:
        raise FrontendError(
            f"node {name!r} (InstanceNormalization): needs (N, C, D1, ...), got {x.type.shape}"
        )
    y = _normalize(ctx, x, range(2, rank), float(a.get("epsilon", 1e-5)), name)
    per_channel = (x.type.shape[1],) + (1,) * (rank - 2)
    scale = _reshape(ctx, scale, per_channel, f"{name}.scale_shape")
    bias = _reshape(ctx, bias, per_channel, f"{name}.bias_shape")
    y = ctx.call("multiply", [y, scale], {}, f"{name}.scale")
    return [ctx.call("add", [y, bias], {}, name)]


def _resize_call(
    ctx: _Ctx,
    node: Any,
    x: Value,
    scales: Sequence[float] | None,
    sizes: Sequence[int] | None,
    attrs: dict[str, Any],
    name: str,
) -> list[Value]:
    """A ``resize`` node: output sizes from ``scales`` (``floor(in * scale)`` in float32, as
    onnxruntime) or scales from ``sizes`` (``out / in``)."""
    shape = x.type.shape
    if sizes is not None:
        out = tuple(int(d) for d in sizes)
        sc = tuple(float(np.float32(o) / np.float32(i)) for o, i in zip(out, shape, strict=True))
    else:
        assert scales is not None
        sc = tuple(float(np.float32(v)) for v in scales)
        out = tuple(
            int(np.floor(np.float32(i) * np.float32(v))) for i, v in zip(shape, sc, strict=True)
        )
    if min(sc) <= 0 or min(out) < 1:
        raise FrontendError(
            f"node {name!r} ({node.op_type}): scales {list(sc)} give an empty or negative "
            f"output {list(out)} for input {list(shape)}"
        )
    if out == shape and all(v == 1.0 for v in sc):
        return [x]
    return [ctx.call("resize", [x], {"sizes": out, "scales": sc, **attrs}, name)]


def _simple_nearest(node: Any, scales: Sequence[float], name: str) -> str:
    """Upsample's (and opset 10 Resize's) nearest rounding: floor when enlarging, ceil when
    shrinking (onnxruntime's ``simple`` mode), so the axes must agree."""
    moved = {v >= 1.0 for v in scales if v != 1.0}
    if len(moved) > 1:
        raise FrontendError(
            f"node {name!r} ({node.op_type}): nearest resizing that enlarges some axes and "
            f"shrinks others ({list(scales)}) is not supported"
        )
    return "ceil" if moved == {False} else "floor"


@_conv("Resize")
def _c_resize(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    """Opset 11 and later: roi (unused by the supported modes), scales or sizes as constant
    inputs, optionally for ``axes`` only (opset 18). Opset 10 has Upsample's semantics."""
    x = ins[0]
    rank = x.type.ndim
    method = a.get("mode", "nearest")
    if ctx.opset < 11:
        scales = [float(v) for v in _const(ins[1], node, "scales").reshape(-1)]
        nearest = _simple_nearest(node, scales, name)
        attrs = {"method": method, "coordinate_transformation_mode": "asymmetric"}
        return _resize_call(ctx, node, x, scales, None, {**attrs, "nearest_mode": nearest}, name)
    axes = [_axis(int(k), rank, node) for k in a.get("axes", range(rank))]
    given = [len(ins) > k and ins[k] is not None and ins[k].type.size > 0 for k in (2, 3)]
    if given[0] == given[1]:
        raise FrontendError(
            f"node {name!r} (Resize): needs exactly one of scales and sizes, got "
            f"{'both' if given[0] else 'neither'}"
        )
    k = 2 if given[0] else 3
    values = _const(ins[k], node, "scales" if given[0] else "sizes").reshape(-1).tolist()
    if len(values) != len(axes):
        raise FrontendError(
            f"node {name!r} (Resize): {len(values)} {'scales' if given[0] else 'sizes'} for "
            f"{len(axes)} axes"
        )
    full: list[Any] = [1.0] * rank if given[0] else list(x.type.shape)
    for ax, v in zip(axes, values, strict=True):
        full[ax] = v
    attrs = {
        "method": method,
        "coordinate_transformation_mode": a.get("coordinate_transformation_mode", "half_pixel"),
        "nearest_mode": a.get("nearest_mode", "round_prefer_floor"),
    }
    if given[0]:
        return _resize_call(ctx, node, x, full, None, attrs, name)
    return _resize_call(ctx, node, x, None, full, attrs, name)


@_conv("Upsample")
def _c_upsample(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    scales = a.get("scales")
    if scales is None:
        scales = _const(ins[1], node, "scales").reshape(-1).tolist()
    scales = [float(v) for v in scales]
    attrs = {
        "method": a.get("mode", "nearest"),
        "coordinate_transformation_mode": "asymmetric",
        "nearest_mode": _simple_nearest(node, scales, name),
    }
    return _resize_call(ctx, node, ins[0], scales, None, attrs, name)


@_conv("LRN")
def _c_lrn(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    # y = x / (bias + alpha/size * sum of x^2 over a window of channels)^beta, built from
    # contract ops: the window sum is a 1x1 conv2d with a banded 0/1 kernel, and the power a
    # product of fourth roots (beta is a multiple of 1/4, checked by the scan)
    x = ins[0]
    size = int(a["size"])
    if size < 1:
        raise FrontendError(f"node {name!r} (LRN): size must be at least 1, got {size}")
    alpha, beta, bias = (
        float(a.get("alpha", 1e-4)),
        float(a.get("beta", 0.75)),
        float(a.get("bias", 1.0)),
    )
    if x.type.ndim != 4:
        raise FrontendError(f"node {name!r} (LRN): needs a 4-d NCHW input")
    c = x.type.shape[1]
    lo, hi = (size - 1) // 2, -(-(size - 1) // 2)
    band = np.zeros((c, c, 1, 1), x.type.dtype)
    for o in range(c):
        band[o, max(0, o - lo) : min(c - 1, o + hi) + 1, 0, 0] = 1
    dt = x.type.dtype
    sq = ctx.call("multiply", [x, x], {}, f"{name}.square")
    total = ctx.call("conv2d", [sq, Constant(band, name=f"{name}.window")], {}, f"{name}.sum")
    scaled = ctx.call(
        "multiply", [total, Constant(np.array(alpha / size, dt))], {}, f"{name}.scale"
    )
    d = ctx.call("add", [scaled, Constant(np.array(bias, dt))], {}, f"{name}.base")
    quarter = ctx.call("sqrt", [ctx.call("sqrt", [d], {}, f"{name}.sqrt")], {}, f"{name}.root4")
    k = round(beta * 4)
    power = quarter
    for j in range(1, k):
        power = ctx.call("multiply", [power, quarter], {}, f"{name}.pow{j + 1}")
    return [ctx.call("divide", [x, power], {}, name)]


@_conv("Identity Dropout")
def _c_identity(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    return [ins[0]]


@_conv("Cast")
def _c_cast(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    to = _ONNX_DTYPES.get(int(a["to"]))
    if to is None:
        raise FrontendError(f"node {name!r} (Cast): unsupported target type {a['to']}")
    if to == ins[0].type.dtype:
        return [ins[0]]
    return [ctx.call("cast", [ins[0]], {"dtype": to}, name)]


@_conv("Constant")
def _c_constant(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    from onnx import numpy_helper

    if "value" in a:
        arr = numpy_helper.to_array(a["value"])
    elif "value_float" in a:
        arr = np.array(a["value_float"], np.float32)
    elif "value_floats" in a:
        arr = np.array(a["value_floats"], np.float32)
    elif "value_int" in a:
        arr = np.array(a["value_int"], np.int64)
    elif "value_ints" in a:
        arr = np.array(a["value_ints"], np.int64)
    else:
        raise FrontendError(f"node {name!r} (Constant): unsupported value attribute {sorted(a)}")
    return [Constant(arr, name=node.output[0])]


@_conv("Shape")
def _c_shape(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    shape = np.array(ins[0].type.shape, np.int64)
    start, end = a.get("start", 0), a.get("end", None)
    return [Constant(shape[start:end], name=node.output[0])]


@_conv("Size")
def _c_size(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    return [Constant(np.array(ins[0].type.size, np.int64), name=node.output[0])]


def _np_const(fn: Callable[..., np.ndarray]) -> Converter:
    def convert(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
        arrays = [None if v is None else _const(v, node, "every input") for v in ins]
        return [Constant(np.asarray(fn(a, *arrays)), name=node.output[0])]

    return convert


def _slice(
    a: dict[str, Any],
    data: np.ndarray,
    starts: Any = None,
    ends: Any = None,
    axes: Any = None,
    steps: Any = None,
) -> np.ndarray:
    starts = a["starts"] if starts is None else starts.tolist()
    ends = a["ends"] if ends is None else ends.tolist()
    if axes is None:
        axes = a.get("axes", list(range(len(starts))))
    else:
        axes = axes.tolist()
    steps = [1] * len(starts) if steps is None else steps.tolist()
    index = [slice(None)] * data.ndim
    for s, e, ax, st in zip(starts, ends, axes, steps, strict=True):
        index[ax % data.ndim] = slice(int(s), int(e), int(st))
    return data[tuple(index)]


def _constant_of_shape(a: dict[str, Any], shape: np.ndarray) -> np.ndarray:
    from onnx import numpy_helper

    value = numpy_helper.to_array(a["value"]) if "value" in a else np.zeros(1, np.float32)
    return np.full(tuple(int(d) for d in shape), value.reshape(-1)[0], value.dtype)


CONVERTERS["ConstantOfShape"] = _np_const(_constant_of_shape)
CONVERTERS["Range"] = _np_const(lambda a, s, lim, d: np.arange(s, lim, d, dtype=s.dtype))


# ---------------------------------------------------------------- data movement on activations
# Each folds in numpy when every input is a constant (shape subgraphs), and otherwise becomes
# a contract operator whose extra inputs (bounds, indices, sizes) must be constants.


def _all_const(ins: list[Any]) -> bool:
    return all(v is None or isinstance(v, Constant) for v in ins)


def _np_gather(a: dict[str, Any], d: np.ndarray, i: np.ndarray) -> np.ndarray:
    return np.take(d, i, axis=a.get("axis", 0))


def _np_expand(a: dict[str, Any], d: np.ndarray, s: np.ndarray) -> np.ndarray:
    return np.broadcast_to(d, np.broadcast_shapes(d.shape, tuple(int(x) for x in s)))


def _np_tile(a: dict[str, Any], d: np.ndarray, r: np.ndarray) -> np.ndarray:
    return np.tile(d, [int(k) for k in r])


def _folding(fn: Callable[..., np.ndarray]) -> Callable[[Converter], Converter]:
    """Fold the node in numpy (``fn``) when every input is a constant, else convert it."""
    folded = _np_const(fn)

    def wrap(convert: Converter) -> Converter:
        def both(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
            if _all_const(ins):
                return folded(ctx, node, ins, a, name)
            return convert(ctx, node, ins, a, name)

        both.__doc__ = convert.__doc__
        return both

    return wrap


def _slice_call(
    ctx: _Ctx, x: Value, bounds: Mapping[int, tuple[int, int, int]], name: str
) -> Value:
    """A ``strided_slice`` taking ``range(*bounds[axis])`` on the axes given, all of the rest."""
    begin, end, strides = [], [], []
    for d, size in enumerate(x.type.shape):
        b, e, s = bounds.get(d, (0, size, 1))
        begin.append(b)
        end.append(e)
        strides.append(s)
    if all(bounds.get(d, (0, n, 1)) == (0, n, 1) for d, n in enumerate(x.type.shape)):
        return x
    attrs = {"begin": tuple(begin), "end": tuple(end), "strides": tuple(strides)}
    return ctx.call("strided_slice", [x], attrs, name)


@_conv("Slice")
@_folding(_slice)
def _c_slice(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    """ONNX clamps starts and ends into the axis as Python's ``slice.indices`` does."""
    x = ins[0]
    rank = x.type.ndim
    if "starts" in a:  # opset < 10: attributes
        starts, ends = list(a["starts"]), list(a["ends"])
        axes = list(a.get("axes", range(len(starts))))
        steps = [1] * len(starts)
    else:
        starts, ends = _ints_of(ins[1], node, "starts"), _ints_of(ins[2], node, "ends")
        has = [len(ins) > k and ins[k] is not None for k in (3, 4)]
        axes = _ints_of(ins[3], node, "axes") if has[0] else list(range(len(starts)))
        steps = _ints_of(ins[4], node, "steps") if has[1] else [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise FrontendError(f"node {name!r} (Slice): starts, ends, axes, steps differ in length")
    bounds: dict[int, tuple[int, int, int]] = {}
    for st, en, ax, sp in zip(starts, ends, axes, steps, strict=True):
        d = _axis(int(ax), rank, node)
        if sp == 0:
            raise FrontendError(f"node {name!r} (Slice): step 0 on axis {d}")
        r = slice(int(st), int(en), int(sp)).indices(x.type.shape[d])
        if len(range(*r)) == 0:
            raise FrontendError(
                f"node {name!r} (Slice): axis {d} of {x.type.shape} would be empty "
                f"(start {st}, end {en}, step {sp}); empty tensors are not supported"
            )
        bounds[d] = r
    return [_slice_call(ctx, x, bounds, name)]


@_conv("Gather")
@_folding(_np_gather)
def _c_gather(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    x = ins[0]
    axis = _axis(int(a.get("axis", 0)), x.type.ndim, node)
    idx = _const(ins[1], node, "the indices input").astype(np.int64)
    size = x.type.shape[axis]
    if idx.size == 0 or idx.min() < -size or idx.max() >= size:
        raise FrontendError(
            f"node {name!r} (Gather): indices {idx.reshape(-1).tolist()} are out of range for "
            f"axis {axis} of size {size}"
        )
    flat = tuple(int(k) % size for k in idx.reshape(-1))
    attrs = {"axis": axis, "indices": flat, "indices_shape": tuple(idx.shape)}
    return [ctx.call("take", [x], attrs, name)]


@_conv("Split")
def _c_split(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    """Each output is a ``strided_slice`` along the axis (the graph's nodes have one output)."""
    x = ins[0]
    axis = _axis(int(a.get("axis", 0)), x.type.ndim, node)
    size, n_out = x.type.shape[axis], len(node.output)
    if "split" in a:
        sizes = [int(k) for k in a["split"]]
    elif len(ins) > 1 and ins[1] is not None:
        sizes = _ints_of(ins[1], node, "split")
    elif "num_outputs" in a:  # opset 18: ceil-sized pieces, the last one smaller
        chunk = -(-size // int(a["num_outputs"]))
        sizes = [min(chunk, size - k * chunk) for k in range(int(a["num_outputs"]))]
    else:
        if size % n_out:
            raise FrontendError(
                f"node {name!r} (Split): axis {axis} of size {size} does not split evenly "
                f"into {n_out} outputs"
            )
        sizes = [size // n_out] * n_out
    if len(sizes) != n_out or sum(sizes) != size or min(sizes) < 1:
        raise FrontendError(
            f"node {name!r} (Split): sizes {sizes} do not cut axis {axis} of size {size} into "
            f"{n_out} non-empty outputs"
        )
    outs: list[Value] = []
    start = 0
    for k, piece in enumerate(sizes):
        oname = node.output[k] or f"{name}.{k}"
        outs.append(_slice_call(ctx, x, {axis: (start, start + piece, 1)}, oname))
        start += piece
    return outs


@_conv("Expand")
@_folding(_np_expand)
def _c_expand(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    x = ins[0]
    spec = tuple(_ints_of(ins[1], node, "the shape input"))
    try:
        shape = tuple(int(d) for d in np.broadcast_shapes(x.type.shape, spec))
    except ValueError:
        raise FrontendError(
            f"node {name!r} (Expand): shape {list(spec)} does not broadcast with input "
            f"shape {list(x.type.shape)}"
        ) from None
    if shape == x.type.shape:
        return [x]
    return [ctx.call("broadcast_to", [x], {"shape": shape}, name)]


@_conv("Tile")
@_folding(_np_tile)
def _c_tile(ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str) -> list[Value]:
    x = ins[0]
    reps = tuple(_ints_of(ins[1], node, "repeats"))
    if len(reps) != x.type.ndim or min(reps, default=1) < 1:
        raise FrontendError(
            f"node {name!r} (Tile): repeats {list(reps)} must be {x.type.ndim} counts >= 1"
        )
    if all(r == 1 for r in reps):
        return [x]
    return [ctx.call("tile", [x], {"reps": reps}, name)]


def _np_scatter_nd(a: dict[str, Any], d: np.ndarray, i: np.ndarray, u: np.ndarray) -> np.ndarray:
    out = d.copy()
    idx = i.astype(np.int64)
    for k in np.ndindex(*idx.shape[:-1]):
        out[tuple(idx[k])] = u[k]
    return out


def _scatter_block(
    node: Any, name: str, shape: tuple[int, ...], idx: np.ndarray
) -> list[tuple[int, int]]:
    """The ``(begin, end)`` per indexed axis of the block a ScatterND's constant indices write,
    when they enumerate one block in row-major order (as exporters write ``y[..., 0:2] = v``):
    the updates are then that block, reshaped. Any other pattern is refused by name."""
    k = idx.shape[-1]
    flat = idx.reshape(-1, k).astype(np.int64)
    dims = np.array(shape[:k], np.int64)
    if not 0 < k <= len(shape) or not flat.size or ((flat < -dims) | (flat >= dims)).any():
        raise FrontendError(
            f"node {name!r} (ScatterND): indices out of range for the data's shape {list(shape)}"
        )
    flat = flat % dims
    lo, hi = flat.min(0), flat.max(0) + 1
    block = [int(n) for n in hi - lo]
    grid = np.stack(
        np.meshgrid(*[np.arange(b, e) for b, e in zip(lo, hi, strict=True)], indexing="ij"), -1
    )
    if math.prod(block) != len(flat) or not np.array_equal(grid.reshape(-1, k), flat):
        raise FrontendError(
            f"node {name!r} (ScatterND): the indices are not one block in row-major order "
            "(only y[a:b, c:d, ...] = v is supported)"
        )
    return [(int(b), int(e)) for b, e in zip(lo, hi, strict=True)]


@_conv("ScatterND")
@_folding(_np_scatter_nd)
def _c_scatter_nd(
    ctx: _Ctx, node: Any, ins: list[Any], a: dict[str, Any], name: str
) -> list[Value]:
    """Constant indices that write one block (``y[..., 0:2] = v``, the way YOLOv5 before 6.1
    and YOLOv7 exports decode their boxes): the block replaced by the updates through slices
    of the data around it and concatenations, axis by axis."""
    x, updates = ins[0], ins[2]
    idx = _const(ins[1], node, "the indices input")
    bounds = _scatter_block(node, name, x.type.shape, idx)
    block = tuple(e - b for b, e in bounds) + x.type.shape[len(bounds) :]
    if math.prod(updates.type.shape) != math.prod(block):
        raise FrontendError(
            f"node {name!r} (ScatterND): updates of shape {list(updates.type.shape)} do not fill "
            f"the block {list(block)} the indices write"
        )
    if updates.type.dtype != x.type.dtype:
        raise FrontendError(
            f"node {name!r} (ScatterND): updates are {updates.type.dtype}, data {x.type.dtype}"
        )
    if updates.type.shape != block:
        updates = ctx.call("reshape", [updates], {"newshape": block}, f"{name}.block")

    def place(data: Value, axis: int, tag: str) -> Value:
        """``data`` (the data's rows at ``bounds[:axis]``) with the block written into it."""
        if axis == len(bounds):
            return updates
        b, e = bounds[axis]
        size = data.type.shape[axis]
        inner = _slice_call(ctx, data, {axis: (b, e, 1)}, f"{name}.{tag}{axis}")
        parts = [place(inner, axis + 1, tag + "i")]
        if b > 0:
            parts.insert(0, _slice_call(ctx, data, {axis: (0, b, 1)}, f"{name}.{tag}{axis}lo"))
        if e < size:
            parts.append(_slice_call(ctx, data, {axis: (e, size, 1)}, f"{name}.{tag}{axis}hi"))
        if len(parts) == 1:
            return parts[0]
        full = axis == 0
        return ctx.call("concat", parts, {"axis": axis}, name if full else f"{name}.{tag}{axis}c")

    return [place(x, 0, "")]


CONST_ARGS |= {"Slice", "Gather", "Split", "Expand", "Tile"}


# ---------------------------------------------------------------- the scan


def _unsupported_reason(node: Any, a: dict[str, Any], const: set[str], used: set[str]) -> str:
    """Why ``node`` cannot be imported, or ``""``."""
    t = node.op_type
    if node.domain not in ("", "ai.onnx"):
        return f"domain {node.domain!r}"
    if t not in CONVERTERS:
        return "operator not supported"
    if t in CONST_ONLY and not all(not n or n in const for n in node.input):
        return "supported only on constant inputs (shape computations)"
    if t == "Pad" and a.get("mode", "constant") not in ("constant", "reflect", "edge", "wrap"):
        return f"mode {a['mode']!r} (constant, reflect, edge and wrap are)"
    if (
        t == "LRN"
        and abs(float(a.get("beta", 0.75)) * 4 - round(float(a.get("beta", 0.75)) * 4)) > 1e-6
    ):
        return f"beta {a['beta']} is not a multiple of 1/4"
    if t == "MaxPool" and (
        a.get("storage_order", 0) or (len(node.output) > 1 and node.output[1] in used)
    ):
        return "indices output or storage_order"
    if t == "BatchNormalization" and (
        a.get("training_mode", 0) or any(o in used for o in node.output[1:])
    ):
        return "training mode"
    if t == "Dropout" and len(node.output) > 1 and node.output[1] in used:
        return "mask output"
    if t == "LayerNormalization" and any(o in used for o in node.output[1:]):
        return "mean or inverse standard deviation output"
    if t in ("Resize", "Upsample"):
        return _resize_reason(a)
    if t == "ConvTranspose" and len(a.get("kernel_shape", (1, 1))) != 2:
        return f"a {len(a['kernel_shape'])}-d kernel (2-d only)"
    if t == "Gelu" and a.get("approximate", "none") not in ("none", "tanh"):
        return f"approximate {a['approximate']!r} (none or tanh)"
    if t in RNN_GATES:
        return _recurrent_reason(node, a, const)
    if t == "ScatterND" and a.get("reduction", "none") != "none":
        return f"reduction {a['reduction']!r} (only none)"
    if t == "ScatterND" and node.input[1] not in const:
        return "non-constant indices"
    if t in CONST_ARGS and not all(not n or n in const for n in node.input[1:]):
        return "non-constant shape, axes or bound input"
    return ""


def _recurrent_reason(node: Any, a: dict[str, Any], const: set[str]) -> str:
    """Why an LSTM, GRU or RNN node is unsupported, or ``""``."""
    kind = node.op_type
    given = [k < len(node.input) and bool(node.input[k]) for k in range(8)]
    if not all(node.input[k] in const for k in (1, 2, 3, 4) if given[k]):
        return "non-constant W, R, B or sequence_lens"
    if kind == "LSTM" and given[7]:
        return "peepholes (input P)"
    if a.get("clip") is not None:
        return "clip"
    if a.get("input_forget", 0):
        return "input_forget"
    direction = a.get("direction", "forward")
    if direction not in ("forward", "reverse", "bidirectional"):
        return f"direction {direction!r}"
    dirs = 2 if direction == "bidirectional" else 1
    default = {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"], "RNN": ["Tanh"]}
    acts = [
        x.decode() if isinstance(x, bytes) else str(x)
        for x in a.get("activations", default[kind] * dirs)
    ]
    if acts != default[kind] * dirs:
        return f"activations {acts} (only {', '.join(default[kind])})"
    return ""


def _resize_reason(a: dict[str, Any]) -> str:
    """Why a Resize or Upsample node's attributes are unsupported, or ``""``."""
    from compiler.graph.ops import RESIZE_COORDINATE_MODES, RESIZE_METHODS, RESIZE_NEAREST_MODES

    checks = (
        ("mode", "nearest", RESIZE_METHODS),
        ("coordinate_transformation_mode", "half_pixel", RESIZE_COORDINATE_MODES),
        ("nearest_mode", "round_prefer_floor", RESIZE_NEAREST_MODES),
        ("keep_aspect_ratio_policy", "stretch", ("stretch",)),
    )
    for key, default, allowed in checks:
        if a.get(key, default) not in allowed:
            return f"{key} {a[key]!r} (supported: {', '.join(allowed)})"
    if a.get("antialias", 0):
        return "antialias"
    return ""


def _topological(graph: Any, known: set[str]) -> list[Any]:
    producers: dict[str, int] = {}
    for k, n in enumerate(graph.node):
        for o in n.output:
            if not o:
                continue
            if o in producers or o in known:
                other = (
                    "an initializer or input"
                    if o in known
                    else f"node {_label(graph.node[producers[o]])!r}"
                )
                raise FrontendError(
                    f"value {o!r} is produced twice: by node {_label(n)!r} and {other}"
                )
            producers[o] = k
    for n in graph.node:
        for i in n.input:
            if i and i not in producers and i not in known:
                raise FrontendError(
                    f"node {_label(n)!r} ({n.op_type}): input {i!r} is not "
                    "produced by any node, initializer or graph input "
                    "(missing initializer?)"
                )
    state = [0] * len(graph.node)  # 0 new, 1 on the stack, 2 done
    order: list[Any] = []
    for root in range(len(graph.node)):
        if state[root]:
            continue
        stack = [(root, 0)]
        state[root] = 1
        while stack:
            k, j = stack.pop()
            ins = [i for i in graph.node[k].input if i in producers]
            if j < len(ins):
                stack.append((k, j + 1))
                p = producers[ins[j]]
                if state[p] == 1:
                    cycle = [_label(graph.node[q]) for q, _ in stack if state[q] == 1]
                    start = (
                        cycle.index(_label(graph.node[p])) if _label(graph.node[p]) in cycle else 0
                    )
                    raise FrontendError(
                        f"the graph has a cycle through nodes {cycle[start:]} (each reads the "
                        "next, the last reads the first)"
                    )
                if state[p] == 0:
                    state[p] = 1
                    stack.append((p, 0))
            else:
                state[k] = 2
                order.append(graph.node[k])
    return order


# ---------------------------------------------------------------- entry points


def from_onnx(
    source: Any,
    *,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    name: str | None = None,
    check: bool = True,
) -> Graph:
    """Import an ONNX model (a ``ModelProto``, a path or bytes) as a graph.

    ``input_shapes`` gives static shapes for inputs with symbolic dimensions (checked against the
    declared ones by :func:`~compiler.frontend.shapes.resolve_input_shapes`); ``check`` runs
    ``onnx.checker`` after the frontend's own checks.
    """
    onnx = _onnx()
    model = read_model(source)
    gp = model.graph
    gname = name or gp.name or "main"
    if not MIN_IR_VERSION <= model.ir_version <= MAX_IR_VERSION:
        raise FrontendError(
            f"model {gname}: ir_version {model.ir_version} is not supported "
            f"({MIN_IR_VERSION}..{MAX_IR_VERSION})"
        )
    opset = _opset(model)
    if opset is None:
        raise FrontendError(f"model {gname}: no opset_import for the default ONNX domain")
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise FrontendError(
            f"model {gname}: opset {opset} is not supported ({MIN_OPSET}..{MAX_OPSET})"
        )

    if not gp.output:
        raise FrontendError(f"model {gname}: the graph declares no outputs")
    init_names = {t.name for t in gp.initializer}
    _check_shadowed_inputs(gname, gp)
    input_names = [i.name for i in gp.input if i.name not in init_names]
    known = init_names | set(input_names)

    # constness, cheaply and before any work: initializers, Constant and Shape outputs, and
    # nodes whose inputs are all constant
    order = _topological(gp, known)
    const = set(init_names)
    used = {i for n in gp.node for i in n.input} | {o.name for o in gp.output}
    bad = []
    bad_ops: Counter[str] = Counter()
    for n in order:
        a = _attrs(n)
        reason = _unsupported_reason(n, a, const, used)
        if reason:
            bad_ops[n.op_type] += 1
            dom = n.domain or "ai.onnx"
            bad.append(
                f"  {_label(n)} ({n.op_type}, {dom} opset "
                f"{_opset(model, n.domain) or '?'}): {reason}"
            )
        if n.op_type in ("Constant", "Shape", "Size") or all(not i or i in const for i in n.input):
            const.update(o for o in n.output if o)
    if bad:
        head = f"model {gname}: {len(bad)} unsupported node(s):"
        if len(bad) > 3:  # and how many of each operator, most first
            counts = ", ".join(f"{op} {k}" for op, k in bad_ops.most_common())
            bad.append(f"  by operator: {counts}")
        raise FrontendError("\n".join([head, *bad]))
    if check:
        try:
            onnx.checker.check_model(model)
        except onnx.checker.ValidationError as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else "invalid model"
            raise FrontendError(f"model {gname}: onnx.checker refuses it: {first}") from None
        except UnicodeDecodeError:
            # the checker's message quotes a name whose bytes are not UTF-8
            raise FrontendError(
                f"model {gname}: onnx.checker refuses it (a name in the model is not UTF-8)"
            ) from None

    from onnx import numpy_helper

    ctx = _Ctx(opset)
    for t in gp.initializer:
        if t.data_location == onnx.TensorProto.EXTERNAL:
            raise FrontendError(f"initializer {t.name!r}: external data is not supported")
        try:
            arr = numpy_helper.to_array(t)
        except Exception as e:  # malformed raw data
            raise FrontendError(f"initializer {t.name!r}: cannot be read ({e})") from None
        try:
            ctx.env[t.name] = Constant(arr, name=t.name)
        except CompilerError as e:
            raise FrontendError(f"initializer {t.name!r}: {e}") from None
    graph_inputs = []
    shapes = resolve_input_shapes(model, input_shapes)
    for vi in gp.input:
        if vi.name in init_names:
            continue
        tt = vi.type.tensor_type
        dtype = _ONNX_DTYPES.get(tt.elem_type)
        if dtype is None:
            raise FrontendError(f"input {vi.name!r}: element type {tt.elem_type} is not supported")
        shape = shapes[vi.name]
        layout = "NCHW" if len(shape) == 4 else ""
        var = Var(vi.name, TensorType(shape, dtype, layout))
        graph_inputs.append(var)
        ctx.env[vi.name] = var

    for n in order:
        label = _label(n)
        ins = _inputs(ctx, n)
        try:
            outs = CONVERTERS[n.op_type](ctx, n, ins, _attrs(n), label)
        except FrontendError:
            raise
        except CompilerError as e:
            raise FrontendError(f"node {label!r} ({n.op_type}): {e}") from None
        except (KeyError, IndexError, ValueError, TypeError, AttributeError) as e:
            # an attribute or input the operator requires is missing or of the wrong kind
            # (onnx.checker refuses most of these first; check=False skips it)
            raise FrontendError(
                f"node {label!r} ({n.op_type}): malformed node ({type(e).__name__}: {e})"
            ) from None
        for o, v in zip(n.output, outs, strict=False):
            if o:
                ctx.env[o] = v
    outputs = []
    for vo in gp.output:
        if vo.name not in ctx.env:
            raise FrontendError(f"model {gname}: output {vo.name!r} is not produced")
        value = ctx.env[vo.name]
        _check_declared(gname, vo, value)
        outputs.append(value)
    return Graph(tuple(graph_inputs), tuple(ctx.nodes), tuple(outputs), gname)


def _check_shadowed_inputs(gname: str, gp: Any) -> None:
    """An initializer named like a graph input is that input's default value (ONNX IR 4); the
    frontend takes it as the constant. Its element type and shape must be the ones the input
    declares, or the model says two different things about one tensor."""
    declared = {vi.name: vi.type.tensor_type for vi in gp.input}
    for t in gp.initializer:
        tt = declared.get(t.name)
        if tt is None:
            continue
        if tt.elem_type and tt.elem_type != t.data_type:
            raise FrontendError(
                f"model {gname}: initializer {t.name!r} has element type {t.data_type} but the "
                f"graph input of that name declares {tt.elem_type}"
            )
        if tt.HasField("shape"):
            dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
            same = len(dims) == len(t.dims) and all(
                d is None or d == k for d, k in zip(dims, t.dims, strict=True)
            )
            if not same:
                shown = ["?" if d is None else d for d in dims]
                raise FrontendError(
                    f"model {gname}: initializer {t.name!r} has shape {list(t.dims)} but the "
                    f"graph input of that name declares {shown}"
                )


def _check_declared(gname: str, vo: Any, value: Value) -> None:
    """A graph output's declared element type must be what import computed. Declared dims are
    not compared: producers disagree on corner cases (onnx's shape inference and onnxruntime
    differ on ceil-mode pooling), and the frontend follows onnxruntime; a declared rank that
    differs is a :class:`compiler.errors.FrontendWarning`, not an error, as onnxruntime warns
    and runs such a model (ddddocr's recognizer declares ``(1, seqlen)`` for the
    ``(seq, 1, classes)`` it computes)."""
    tt = vo.type.tensor_type
    declared = _ONNX_DTYPES.get(tt.elem_type)
    if tt.elem_type and declared != value.type.dtype:
        raise FrontendError(
            f"model {gname}: output {vo.name!r} is declared with element type {tt.elem_type} "
            f"({declared or 'unsupported'}), the graph computes {value.type.dtype}"
        )
    if tt.HasField("shape") and len(tt.shape.dim) != value.type.ndim:
        warnings.warn(
            f"model {gname}: output {vo.name!r} is declared with rank {len(tt.shape.dim)}, the "
            f"graph computes shape {list(value.type.shape)}: the computed shape is used",
            FrontendWarning,
            stacklevel=2,
        )


def load_model(model: str | Path, **kwargs: Any) -> Graph:
    """A graph from a model file path or a built-in zoo name (``compiler.frontend.zoo``).

    Example:
        >>> load_model("no-such-model")
        Traceback (most recent call last):
        ...
        compiler.errors.FrontendError: no-such-model: neither a file nor a zoo model (...)
    """
    path = Path(model)
    if path.is_file():
        return from_onnx(path, **kwargs)
    try:
        from compiler.frontend.zoo import load_zoo, zoo_names
    except ImportError:
        zoo_names, load_zoo = (lambda: ()), None  # type: ignore[assignment]
    if str(model) in zoo_names():
        return from_onnx(load_zoo(str(model)), name=str(model), **kwargs)
    raise FrontendError(
        f"{model}: neither a file nor a zoo model (zoo: "
        f"{', '.join(zoo_names()) or 'not available'})"
    )


__all__ = ["CONVERTERS", "from_onnx", "load_model", "read_model"]
