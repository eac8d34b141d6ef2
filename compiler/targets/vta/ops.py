"""The operators the accelerator runs, registered in :mod:`compiler.registry` under ``vta``:
for each, whether a node fits the accelerator (``fits``), its template's tuning task (whose
knob space the tuner searches and the heuristic picks from) and how its group compiles.

Three kinds of groups (the partition, :mod:`compiler.partition`, forms them):

* ``gemm``: an int8 ``conv2d`` (one group, or depthwise on diagonal weight tiles) or ``dense``
  with constant int8 weights and an int32 bias, with the per-channel ``requantize`` that reads
  it and an optional fused ``qadd`` (:func:`compiler.topi.vta.qnn.compile_qconv2d`,
  :func:`~compiler.topi.vta.qnn.compile_qdense`);
* ``gemm`` too: an int8 ``matmul`` of two activations (attention's ``Q K^T`` and
  ``softmax(..) V``) with its per-tensor ``requantize``, the second operand written by the host
  in the weight layout at run time (:func:`compiler.topi.vta.qmatmul.compile_qmatmul`);
* ``pool``: an int8 ``max_pool2d`` or ``global_sum_pool2d`` with its ``requantize``
  (:func:`~compiler.topi.vta.qnn.compile_qpool`);
* ``elementwise``: ``relu``, ``clip``, ``qadd``, ``qmul``, ``qleaky_relu``, ``qprelu``,
  ``qhard_sigmoid``, ``qhard_swish`` (:mod:`compiler.topi.vta.qelementwise`), and a nearest
  int8 ``resize`` that repeats each row and column a whole number of times
  (:func:`compiler.topi.vta.qelementwise.compile_qresize`);
* ``rescale``: the ``cast`` of an int8 tensor to int32 with the ``requantize`` that reads it
  (an operand of a concat at another scale), its steps as ALU immediates.

Every other operator is registered with the reason it runs on the host.

Example:
    >>> import isa
    >>> from compiler import registry
    >>> registry.lookup("vta", "relu").kind
    'elementwise'
    >>> registry.reason("vta", "reshape")
    'a layout change, done on the host'
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from compiler.errors import GraphError
from compiler.graph import Constant, Node, Value
from compiler.quantize import RequantParams
from compiler.registry import (
    VtaImpl,
    declaration,
    operators,
    register,
    register_unsupported,
    support,
)
from isa import HwConfig, limits

if TYPE_CHECKING:
    from compiler.partition import AccelGroup
    from compiler.topi.vta.qnn import QEpilogue, QLayer
    from compiler.tune.task import Task

Limit = tuple[str, str] | None


def _is_const(v: Value, dtype: str) -> bool:
    return isinstance(v, Constant) and v.type.dtype == dtype


def is_depthwise(node: Node) -> bool:
    """Whether ``node`` is a depthwise conv2d (one filter per channel, ``groups == C == O``).

    Example:
        >>> from compiler.graph import TensorType, Var
        >>> x = Var("x", TensorType((1, 8, 6, 6), "float32", "NCHW"))
        >>> w = Constant(np.ones((8, 1, 3, 3), np.float32))
        >>> is_depthwise(Node("conv2d", (x, w), {"groups": 8}))
        True
    """
    if node.op != "conv2d" or node.attrs["groups"] == 1:
        return False
    groups = node.attrs["groups"]
    return groups == node.inputs[0].type.shape[1] == node.type.shape[1] and (
        node.inputs[1].type.shape[1] == 1
    )


# ---------------------------------------------------------------- fits


def gemm_fits(node: Node, cfg: HwConfig) -> Limit:
    """The rule and reason that keep a conv2d / dense off the accelerator, or None."""
    data, weight = node.inputs[0], node.inputs[1]
    if data.type.dtype != "int8":
        return (
            "gemm-dtype",
            f"data is {data.type.dtype}: the GEMM core multiplies int8 (quantize first)",
        )
    if not _is_const(weight, "int8"):
        return "gemm-weights", "weights must be a constant int8 tensor"
    if len(node.inputs) > 2 and not _is_const(node.inputs[2], "int32"):
        return "gemm-dtype", "the bias must be a constant int32 tensor (the accumulator's type)"
    if node.op == "dense":
        return None
    a = node.attrs
    groups, (out_c, in_c) = a["groups"], (node.type.shape[1], data.type.shape[1])
    if groups != 1 and not (groups == in_c == out_c and weight.type.shape[1] == 1):
        return (
            "conv2d-groups",
            f"groups={groups} over {in_c} channels: the GEMM core runs one group (dense) or "
            "one per channel (depthwise)",
        )
    if groups != 1 and cfg.block_in != cfg.block_out:
        return (
            "conv2d-groups",
            f"depthwise needs block_in == block_out for diagonal weight tiles, got "
            f"{cfg.block_in}x{cfg.block_out}",
        )
    if tuple(a["dilation"]) != (1, 1):
        return "conv2d-dilation", f"dilation {tuple(a['dilation'])}: only 1 is lowered"
    if a.get("data_layout", "NCHW") != "NCHW" or a.get("kernel_layout", "OIHW") != "OIHW":
        return "conv2d-shape", "only NCHW data with OIHW kernels is lowered"
    _, _, kh, kw = weight.type.shape
    # any kernel window and strides (rows and columns apart): the template tiles each axis
    # with its own kernel size, stride and padding
    pad_max = limits(cfg).max("mem", "y_pad_0")
    if max(a["padding"]) > pad_max:
        return (
            "conv2d-padding",
            f"padding {tuple(a['padding'])} exceeds the LOAD pad field ({pad_max})",
        )
    window = kh * kw
    if window > cfg.wgt_depth // 2:
        return (
            "conv2d-window",
            f"a {kh}x{kw} window needs {window} weight entries, over half the weight buffer "
            f"({cfg.wgt_depth})",
        )
    return None


def matmul_fits(node: Node, cfg: HwConfig) -> Limit:
    """The rule and reason that keep a matmul of two activations off the accelerator, or
    None: int8 operands of rank 2 or more whose batch axes agree (the host writes each matrix
    of the batch; it does not repeat a broadcast one), rows short enough for a DMA stride."""
    a, b = node.inputs[0].type, node.inputs[1].type
    for k, t in enumerate((a, b)):
        if t.dtype != "int8":
            return (
                "matmul-dtype",
                f"input {k} is {t.dtype}: the GEMM core multiplies int8 (quantize first)",
            )
    if isinstance(node.inputs[1], Constant):
        return "matmul-weights", "a constant right operand is a dense layer (matmul_to_dense)"
    if a.ndim < 2 or b.ndim < 2:
        return (
            "matmul-rank",
            f"ranks {a.ndim} and {b.ndim}: the GEMM core multiplies matrices (rank 2 or more)",
        )
    if a.shape[:-2] != b.shape[:-2]:
        return (
            "matmul-broadcast",
            f"batch axes {a.shape[:-2]} and {b.shape[:-2]} differ: the host writes every "
            "matrix of the batch and does not broadcast one",
        )
    stride_max = limits(cfg).max("mem", "x_stride")
    k, n = a.shape[-1], b.shape[-1]
    blocks = max(-(-k // cfg.block_in), -(-n // cfg.block_out))
    if blocks > stride_max:
        return (
            "matmul-shape",
            f"rows of {blocks} blocks (K={k}, N={n}) exceed the DMA stride field ({stride_max})",
        )
    return None


def pool_fits(node: Node, cfg: HwConfig) -> Limit:
    """The rule and reason that keep a pooling off the accelerator, or None."""
    data = node.inputs[0]
    if data.type.dtype != "int8" or node.type.dtype.startswith("float"):
        return "float-op", f"{data.type.dtype} pooling: the ALU pools int8 values"
    _, _, h, w = data.type.shape
    if node.op == "global_sum_pool2d":
        if h * w + 3 > cfg.acc_depth:
            return "pool-window", f"a {h}x{w} window does not fit the accumulator buffer"
        return None
    a = node.attrs
    (kh, kw), (sh, sw) = tuple(a["pool_size"]), tuple(a["strides"])
    if tuple(a["dilation"]) != (1, 1) or a.get("layout", "NCHW") != "NCHW":
        return "pool-shape", "only NCHW windows without dilation are lowered"
    if kh != kw or sh != sw:
        return "pool-shape", f"window {kh}x{kw}, strides {sh}x{sw}: square and equal only"
    pads = pool_padding(node)
    if any(pads) and not pool_load_pads(node):
        return "pool-shape", (
            f"padding {pads} over an input that may be negative: LOAD pads zeros, the "
            "reference the dtype's minimum (the accelerator build's host_steps pass makes it a "
            "pad node on the host)"
        )
    pad_max = limits(cfg).max("mem", "y_pad_0")
    if max(pads) > pad_max:
        return "pool-shape", f"padding {pads} exceeds the LOAD pad field ({pad_max})"
    _, pl, _, pr = pads
    in_w = w + pl + pr
    out_w = (in_w - kw) // sw + 1
    if kh * in_w + 2 * out_w > cfg.acc_depth:
        return "pool-window", f"one output row of the {kh}x{kw} window does not fit the accumulator"
    return None


def _tile_shape_limit(node: Node, cfg: HwConfig) -> str | None:
    """Why the elementwise groups' tiles do not take ``node``'s tensor, or None."""
    t = node.type
    if t.ndim not in (2, 4) or (t.ndim == 4 and t.layout not in ("", "NCHW")):
        return (
            f"a {t.ndim}-d {t.layout or 'tensor'} {t.shape}: the elementwise groups take NCHW "
            "or (N, C) tensors"
        )
    stride_max = limits(cfg).max("mem", "x_stride")
    if t.ndim == 4 and t.shape[3] > stride_max:
        return f"rows of {t.shape[3]} columns exceed the DMA stride field ({stride_max})"
    return None


def elementwise_fits(node: Node, cfg: HwConfig) -> Limit:
    """The rule and reason that keep an elementwise node off the accelerator, or None."""
    op = node.op
    for k, v in enumerate(node.inputs):
        if v.type.dtype != "int8":
            return "float-op", f"input {k} is {v.type.dtype}: the accelerator's ALU takes int8"
    if node.type.dtype != "int8":
        return "float-op", f"the result is {node.type.dtype}: the accelerator stores int8"
    limit = _tile_shape_limit(node, cfg)
    if limit is not None:
        return f"{op}-shape", limit
    if op == "clip":
        for key in ("a_min", "a_max"):
            bound = float(node.attrs[key])
            if not math.isinf(bound) and not bound.is_integer():
                return "clip-bounds", f"{key}={bound}: an int8 clip needs a whole-number bound"
    return None


def rescale_fits(node: Node, cfg: HwConfig) -> Limit:
    """The rule and reason that keep a ``cast`` off the accelerator, or None: the accelerator
    takes the ``cast`` of an int8 tensor to int32 that a ``requantize`` reads (an int8 value
    rescaled in the integer domain, a concat's operand), over an NCHW or ``(N, C)`` tensor."""
    src, dst = node.inputs[0].type.dtype, node.type.dtype
    if dst != "int32" or src != "int8":
        if dst.startswith("float") or src.startswith("float"):
            return "float-op", f"a cast from {src} to {dst}: the accelerator computes integers"
        return "requantize-host", f"a cast from {src} to {dst}: the accelerator widens int8 only"
    limit = _tile_shape_limit(node, cfg)
    return None if limit is None else ("requantize-host", limit)


def resize_factors(node: Node) -> tuple[int, int] | tuple[str, str]:
    """The whole factors (rows, columns) by which a nearest ``resize`` repeats each row and
    column of its NCHW input, or the rule and reason why its index map is not that (it is
    computed by the reference's own coordinate transformation and rounding, so every
    ``coordinate_transformation_mode`` and ``nearest_mode`` that gives a repeat qualifies).

    Example:
        >>> from compiler.graph import TensorType, Var
        >>> x = Var("x", TensorType((1, 8, 5, 5), "int8", "NCHW"))
        >>> attrs = {"method": "nearest", "sizes": (1, 8, 10, 15), "scales": (1.0, 1.0, 2.0, 3.0),
        ...          "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}
        >>> resize_factors(Node("resize", (x,), attrs))
        (2, 3)
    """
    from compiler.graph.reference import nearest_source

    a = node.attrs
    if a["method"] != "nearest":
        return "float-op", f"a {a['method']} resize interpolates: no int8 form"
    shape_in, shape_out = node.inputs[0].type.shape, node.type.shape
    if len(shape_in) != 4 or node.inputs[0].type.layout not in ("", "NCHW"):
        return "resize-shape", f"a {len(shape_in)}-d tensor: the resize group takes NCHW"
    factors = []
    for axis, (n_in, n_out) in enumerate(zip(shape_in, shape_out, strict=True)):
        src = nearest_source(a, axis, n_in)
        f = n_out // n_in
        if src is None or (n_out == f * n_in and np.array_equal(src, np.arange(n_out) // f)):
            if axis < 2 and f != 1:
                return "resize-shape", f"axis {axis} ({'NC'[axis]}) is resized: only H and W are"
            factors.append(f)
            continue
        return (
            "resize-shape",
            f"axis {axis} ({'NCHW'[axis]}, {n_in} -> {n_out}, mode "
            f"{a['coordinate_transformation_mode']}/{a['nearest_mode']}) does not repeat each "
            "input element a whole number of times: the ALU copies whole repeats",
        )
    return factors[2], factors[3]


def resize_fits(node: Node, cfg: HwConfig) -> Limit:
    """The rule and reason that keep a nearest resize off the accelerator, or None: int8
    NCHW, each row and column repeated a whole number of times (:func:`resize_factors`),
    output rows within the DMA stride field and one input entry with its copies within the
    accumulator."""
    if node.inputs[0].type.dtype != "int8" or node.type.dtype != "int8":
        return "float-op", f"a {node.inputs[0].type.dtype} resize: the ALU copies int8 values"
    factors = resize_factors(node)
    if isinstance(factors[0], str):
        return factors
    fh, fw = factors
    stride_max = limits(cfg).max("mem", "x_stride")
    if node.type.shape[3] > stride_max:
        return (
            "resize-shape",
            f"rows of {node.type.shape[3]} columns exceed the DMA stride field ({stride_max})",
        )
    if 1 + int(fh) * int(fw) > cfg.acc_depth:
        return "resize-shape", f"{fh}x{fw} copies of an entry do not fit the accumulator"
    return None


# ---------------------------------------------------------------- what the host prepares


def _non_negative(v: Value) -> bool:
    """Whether every value of ``v`` is known to be >= 0 (a clip at 0 or a relu produced it)."""
    if not isinstance(v, Node):
        return False
    if v.op in ("requantize", "qadd"):
        return int(v.attrs["out_min"]) >= 0
    if v.op == "relu":
        return True
    if v.op == "clip":
        return float(v.attrs["a_min"]) >= 0
    if v.op == "max_pool2d":
        return _non_negative(v.inputs[0])
    return False


def pool_padding(node: Node) -> tuple[int, int, int, int]:
    """A max pool's padding (top, left, bottom, right), with, in ceil mode, the rows and
    columns its last windows reach past the declared padding: the reference fills those with
    the dtype's minimum as it fills the padding, so a pool in ceil mode runs as one in floor
    mode over this padding (every window holds at least one real value: ceil mode keeps a
    last window only when it starts inside the input or the leading padding, which is
    narrower than the window)."""
    a = node.attrs
    pt, pl, pb, pr = (int(p) for p in a["padding"])
    if not a.get("ceil_mode", False):
        return pt, pl, pb, pr
    _, _, h, w = node.inputs[0].type.shape
    _, _, oh, ow = node.type.shape
    (kh, kw), (sh, sw) = tuple(a["pool_size"]), tuple(a["strides"])
    extra_h = max(0, (oh - 1) * sh + kh - (h + pt + pb))
    extra_w = max(0, (ow - 1) * sw + kw - (w + pl + pr))
    return pt, pl, pb + extra_h, pr + extra_w


def pool_load_pads(node: Node) -> bool:
    """A padded max pool whose input is non-negative: LOAD's zero padding is then exact (the
    reference pads with -128, and the window's maximum is at least 0 either way)."""
    return any(pool_padding(node)) and _non_negative(node.inputs[0])


def group_epilogue(group: AccelGroup) -> QEpilogue:
    """The :class:`~compiler.topi.vta.qnn.QEpilogue` of an accelerator group, from its graph
    constants."""
    from compiler.topi.vta.qnn import QAdd, QEpilogue

    rq = group.requantize
    if rq is None:
        raise GraphError(f"group {group.name}: no requantize to take an epilogue from")
    consts = []
    for k, v in enumerate(rq.inputs[1:4]):
        if not isinstance(v, Constant):
            raise GraphError(f"requantize {rq.name}: input {k + 1} must be a constant")
        consts.append(np.asarray(v.value, np.int32).reshape(-1))
    mult, shift, post = consts
    params = RequantParams(mult, shift, post, mult.astype(np.float64) / np.exp2(shift + post))
    bias = None
    if len(group.anchor.inputs) > 2:
        b = group.anchor.inputs[2]
        assert isinstance(b, Constant)
        bias = np.asarray(b.value, np.int32).reshape(-1)
    add = None
    if group.qadd is not None:
        a = group.qadd.attrs
        mine_lhs = group.qadd.inputs[0] is rq
        add = QAdd(
            a["lhs_multiplier"] if mine_lhs else a["rhs_multiplier"],
            a["rhs_multiplier"] if mine_lhs else a["lhs_multiplier"],
            a["shift"], a["out_min"], a["out_max"],
        )  # fmt: skip
    swish = None
    if group.post is not None:  # a fused qhard_swish
        from compiler.quantize.ops import hard_swish_params

        swish = hard_swish_params(group.post.attrs)
    return QEpilogue(bias, params, rq.attrs["out_min"], rq.attrs["out_max"], add, swish)


# ---------------------------------------------------------------- template spaces


def no_task(group: AccelGroup, cfg: HwConfig) -> tuple[Task | None, str]:
    """A template without knobs: one program per group."""
    return None, f"a {group.kind} group has no schedule knobs"


def gemm_task(group: AccelGroup, cfg: HwConfig) -> tuple[Task | None, str]:
    """The tuning task a conv2d / dense group compiles as (its ``space`` is the template's
    knob space), or why there is none: the shapes the template compiles (a first layer run
    over folded channels with its folded shapes), stride, padding, depthwise, residual and the
    structure of its epilogue's ALU steps (:mod:`compiler.tune.quantized`)."""
    from compiler.tune.quantized import epilogue_structure
    from compiler.tune.task import conv2d_task, dense_task, hw_spec

    structure = epilogue_structure(group_epilogue(group).steps())
    residual = group.residual is not None
    hw = hw_spec(cfg)
    node = group.anchor
    n = node.inputs[0].type.shape[0]
    if group.kind == "dense":
        w = node.inputs[1].type.shape
        return dense_task(n, w[1], w[0], hw=hw, residual=residual, name=group.name,
                          epilogue=structure), ""  # fmt: skip
    _, c, h, wd = node.inputs[0].type.shape
    o, _, kh, kw = node.inputs[1].type.shape
    a = node.attrs
    sh, sw = a["strides"]
    pt, pl, pb, pr = a["padding"]
    return conv2d_task(h, wd, c, o, (kh, kw), (sh, sw), (pt, pl, pb, pr), batch=n, hw=hw,
                       residual=residual, name=group.name, epilogue=structure,
                       depthwise=is_depthwise(node)), ""  # fmt: skip


# ---------------------------------------------------------------- compiles


def compile_gemm(group: AccelGroup, cfg: HwConfig, knobs: Any) -> QLayer:
    """The program of a conv2d / dense group with ``knobs`` (None: the heuristic's)."""
    from compiler.topi.vta.qnn import compile_qconv2d, compile_qdense

    node = group.anchor
    ep = group_epilogue(group)
    weight = node.inputs[1]
    assert isinstance(weight, Constant)
    w = np.asarray(weight.value, np.int8)
    residual = group.residual is not None
    n, c, *_ = node.inputs[0].type.shape
    if group.kind == "dense":
        return compile_qdense(group.name, cfg, w, ep, batch=n, residual=residual, knobs=knobs)
    a = node.attrs
    _, _, h, wd = node.inputs[0].type.shape
    sh, sw = a["strides"]
    pt, pl, pb, pr = a["padding"]
    return compile_qconv2d(
        group.name, cfg, w, ep, in_shape=(n, c, h, wd),
        stride=(sh, sw), padding=(pt, pl, pb, pr), residual=residual,
        depthwise=is_depthwise(node), knobs=knobs,
    )  # fmt: skip


def matmul_epilogue(group: AccelGroup) -> QEpilogue:
    """The epilogue of a matmul group: its ``requantize``'s one scale (repeated along axis 1
    in the graph), one entry per output column, and a fused ``qadd``."""
    ep = group_epilogue(group)
    p = ep.requant
    params = (p.multiplier, p.shift, p.post_shift)
    if any(np.unique(np.asarray(v)).size > 1 for v in params):
        raise GraphError(
            f"group {group.name}: the matmul's requantize varies along its axis; the "
            "accelerator's matmul requantizes the whole tensor by one scale"
        )
    cols = int(group.anchor.type.shape[-1])
    m, s1, s2 = (np.full(cols, int(np.asarray(v).reshape(-1)[0]), np.int32) for v in params)
    full = RequantParams(m, s1, s2, m.astype(np.float64) / np.exp2(s1 + s2))
    return replace(ep, requant=full)


def compile_matmul(group: AccelGroup, cfg: HwConfig, knobs: Any) -> QLayer:
    """The program of a matmul of two activations (with its requantize and an optional fused
    qadd): one dense product per matrix of the batch, in one program."""
    from compiler.topi.vta.qmatmul import compile_qmatmul

    node = group.anchor
    a, b = node.inputs[0].type.shape, node.inputs[1].type.shape
    return compile_qmatmul(
        group.name, cfg, matmul_epilogue(group), batch=math.prod(node.type.shape[:-2]),
        rows=a[-2], k=a[-1], cols=b[-1], residual=group.residual is not None, knobs=knobs,
    )  # fmt: skip


def compile_pool(group: AccelGroup, cfg: HwConfig, knobs: Any) -> QLayer:
    """The program of a max pool or a global sum pool (with its requantize)."""
    from compiler.topi.vta.qnn import compile_qpool

    node = group.anchor
    n, c, h, wd = node.inputs[0].type.shape
    if group.kind == "global_sum_pool2d":
        return compile_qpool(group.name, cfg, "sum", in_shape=(n, c, h, wd),
                             pool=(h, wd), stride=(1, 1), ep=group_epilogue(group))  # fmt: skip
    a = node.attrs
    pt, pl, pb, pr = pool_padding(node)
    kh, kw = a["pool_size"]
    sh, sw = a["strides"]
    # padded only over a non-negative input (``pool_fits``): LOAD's zero padding is exact
    return compile_qpool(
        group.name, cfg, "max", in_shape=(n, c, h, wd), pool=(kh, kw), stride=(sh, sw),
        zero_padding=(pt, pl, pb, pr),
    )  # fmt: skip


def compile_elementwise(group: AccelGroup, cfg: HwConfig, knobs: Any) -> QLayer:
    """The program of an elementwise group (its second operand: ``group.residual``)."""
    from compiler.topi.vta.qelementwise import (
        compile_qelementwise,
        elementwise_steps,
        prelu_slope,
    )

    node = group.anchor
    tiles = None
    if node.op == "qprelu":  # the slopes: a per-channel tile of the program, not an input
        slope = node.inputs[1]
        if not isinstance(slope, Constant):
            raise GraphError(f"group {group.name}: the qprelu's slope must be a constant")
        tiles = {"slope": prelu_slope(slope.value)}
    return compile_qelementwise(
        group.name, cfg, elementwise_steps(node.op, node.attrs), shape=node.type.shape,
        binary=group.residual is not None,
        rhs_shape=group.residual.type.shape if group.residual is not None else None,
        channel_tiles=tiles,
    )  # fmt: skip


def compile_rescale(group: AccelGroup, cfg: HwConfig, knobs: Any) -> QLayer:
    """The program of an int8 value rescaled in the integer domain: the ``requantize`` that
    reads the group's ``cast`` to int32, as ALU immediates over the loaded int8 tensor."""
    from compiler.topi.vta.qelementwise import compile_qelementwise

    steps = group_epilogue(group).steps()
    tiles = sorted({s.tensor for s in steps if s.tensor is not None})
    if tiles:
        raise GraphError(
            f"group {group.name}: the requantize reads per-channel tiles ({', '.join(tiles)}); "
            "a rescale group applies one scale, as ALU immediates"
        )
    return compile_qelementwise(group.name, cfg, steps, shape=group.anchor.type.shape)


def compile_resize(group: AccelGroup, cfg: HwConfig, knobs: Any) -> QLayer:
    """The program of a nearest resize by whole factors (:func:`resize_factors`)."""
    from compiler.topi.vta.qelementwise import compile_qresize

    node = group.anchor
    factors = resize_factors(node)
    if isinstance(factors[0], str):
        raise GraphError(f"group {group.name}: {factors[1]}")
    n, c, h, w = node.inputs[0].type.shape
    return compile_qresize(group.name, cfg, shape=(n, c, h, w), factors=factors)


def compile_group(group: AccelGroup, cfg: HwConfig, knobs: Any = None) -> QLayer:
    """One accelerator program for ``group``, compiled by its anchor operator's registered
    template (a conv2d / dense group with ``knobs``; None: the heuristic's)."""
    from compiler.registry import lookup

    impl: VtaImpl = lookup("vta", group.anchor.op)
    return impl.compile(group, cfg, knobs)


# ---------------------------------------------------------------- the registrations


def gemm_placement(node: Node, cfg: HwConfig) -> tuple[str, str]:
    """The rule and reason of a conv2d / dense group's anchor."""
    if is_depthwise(node):
        return "depthwise-group", (
            "int8 depthwise conv2d: GEMM on diagonal weight tiles, one channel per lane "
            f"(channels padded to blocks of {cfg.block_in})"
        )
    return f"{node.op}-group", (
        f"int8 {node.op} with int32 bias: GEMM on the accelerator (channels padded to blocks of "
        f"{cfg.block_in} in, {cfg.block_out} out)"
    )


def _placed(rule: str, how: str) -> Any:
    return lambda node, cfg: (rule, how)


for _op in ("conv2d", "dense"):
    register("vta", _op, VtaImpl("gemm", gemm_fits, gemm_task, compile_gemm, gemm_placement))
register(
    "vta", "matmul",
    VtaImpl("gemm", matmul_fits, no_task, compile_matmul, _placed(
        "matmul-group",
        "int8 matmul of two activations: GEMM on the accelerator, one dense product per "
        "matrix of the batch; the host writes the left operand as rows and the right one "
        "transposed into the weight layout")),
)  # fmt: skip
register(
    "vta", "max_pool2d",
    VtaImpl("pool", pool_fits, no_task, compile_pool, _placed(
        "pool-group", "ACC8 load of the window, one MAX tensor-tensor per tap on the ALU")),
)  # fmt: skip
register(
    "vta", "global_sum_pool2d",
    VtaImpl("pool", pool_fits, no_task, compile_pool, _placed(
        "pool-group",
        "ACC8 load of the window, ADD tensor-tensor looping over the window on the ALU")),
)  # fmt: skip

#: The elementwise groups: how each runs (the placement's reason) and which input is loaded as
#: the second operand (None: one operand).
ELEMENTWISE: dict[str, tuple[str, int | None]] = {
    "relu": ("ACC8 load, MAX 0 on the ALU", None),
    "clip": ("ACC8 load, MAX lo and MIN hi on the ALU", None),
    "qadd": (
        "both operands loaded into the accumulator (ACC8), then MUL, ADD, rounding shift and "
        "clip on the ALU",
        1,
    ),
    "qmul": (
        "both operands loaded into the accumulator (ACC8; a per-channel gate as one entry per "
        "channel block, read by every pixel), MUL of the two, MUL, rounding shift and clip on "
        "the ALU",
        1,
    ),
    # a LeakyReLU: its input is both operands, the negative and the positive part
    "qleaky_relu": (
        "the input loaded twice (ACC8); MIN 0 on one copy, MAX 0 on the other, then MUL, ADD, "
        "rounding shift and clip of the two on the ALU",
        0,
    ),
    # a PReLU's four int8 nodes in one (compiler.quantize.fuse): its input is both operands
    "qprelu": (
        "the input loaded twice (ACC8); on one copy MIN (the negative part), MUL by the "
        "per-channel slope tile, MUL, rounding shift and clip; MAX 0 on the other; then MUL, "
        "ADD, rounding shift and clip of the two on the ALU",
        0,
    ),
    "qhard_sigmoid": (
        "ACC8 load, MUL, ADD, SHR, ADD, MAX 0, MIN hi on the ALU (exact integer hard sigmoid)",
        None,
    ),
    # a hard swish multiplies its input by its own gate: the input is the second operand too
    "qhard_swish": (
        "the input loaded twice (ACC8), the hard sigmoid on one copy, MUL of the two tiles, "
        "then MUL, rounding shift and clip on the ALU",
        0,
    ),
}
for _op, (_how, _second) in ELEMENTWISE.items():
    register(
        "vta", _op,
        VtaImpl("elementwise", elementwise_fits, no_task, compile_elementwise,
                _placed(f"{_op}-group", _how), _second),
    )  # fmt: skip

register(
    "vta", "cast",
    VtaImpl("rescale", rescale_fits, no_task, compile_rescale, _placed(
        "rescale-group",
        "an int8 value rescaled in the integer domain (the cast to int32 and its requantize): "
        "ACC8 load, the requantize's steps as ALU immediates")),
)  # fmt: skip
register(
    "vta", "resize",
    VtaImpl("elementwise", resize_fits, no_task, compile_resize, _placed(
        "resize-group",
        "nearest resize by whole factors: ACC8 load of the input rows, each entry copied to "
        "its outputs on the ALU (MUL 0, ADD)")),
)  # fmt: skip
register_unsupported(
    "vta", "requantize",
    "fused into the group whose int32 result it reads; a requantize of a host value runs on "
    "the host",
)  # fmt: skip
for _op in ("quantize", "dequantize"):
    register_unsupported(
        "vta", _op, "converts between float32 and int8 at the integer region's edge (host)"
    )
for _op in ("reshape", "transpose", "layout_transform", "im2col", "pack"):
    register_unsupported("vta", _op, "a layout change, done on the host")
register_unsupported(
    "vta", "unpack",
    "not a group of its own: the first node of the group whose input the host packed, it "
    "stands for that group's loads reading the block layout",
)  # fmt: skip
for _op in ("sigmoid", "tanh"):
    register_unsupported(
        "vta", _op, "no exact int8 form on the ALU short of one compare per output step "
        "(estimated, not built: about 5 micro-ops for each of up to 127 steps per element): it "
        "runs on the host",
    )  # fmt: skip
for _op in operators():
    # every float operator: quantization either gives it an int8 form registered above or
    # leaves it float32, which the accelerator does not compute
    if support("vta", _op) is None and declaration(_op).quant == "int8":
        register_unsupported(
            "vta", _op, "float32 operator: quantized, its int8 form runs on the accelerator "
            "(`vtac graph MODEL --target vta` shows where each node runs)",
        )  # fmt: skip
    elif support("vta", _op) is None and declaration(_op).quant != "integer":
        register_unsupported(
            "vta", _op, "float32 operator: the accelerator computes int8 and int32 only"
        )

__all__ = [
    "ELEMENTWISE",
    "compile_elementwise",
    "compile_gemm",
    "compile_group",
    "compile_matmul",
    "compile_pool",
    "compile_rescale",
    "compile_resize",
    "elementwise_fits",
    "gemm_fits",
    "gemm_placement",
    "gemm_task",
    "group_epilogue",
    "is_depthwise",
    "matmul_epilogue",
    "matmul_fits",
    "no_task",
    "pool_fits",
    "pool_load_pads",
    "pool_padding",
    "rescale_fits",
    "resize_factors",
    "resize_fits",
]
