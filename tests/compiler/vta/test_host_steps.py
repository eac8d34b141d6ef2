"""The ``host_steps`` pass: a max pool's -128 padding and the first layer's channel fold become
graph nodes (``pad``, ``im2col``) the host runs, with the same integers, only where the
accelerator takes the node; and the ``im2col`` operator's CPU kernel equals its reference."""

import numpy as np
import pytest

import isa
from compiler.graph import Constant, Graph, Node, TensorType, Var
from compiler.graph.reference import evaluate, im2col
from compiler.registry import lookup
from compiler.targets.vta.host_steps import host_steps


def _int8(shape, seed):
    return np.random.default_rng(seed).integers(-128, 128, shape).astype(np.int8)


def _conv(x, k, stride, pad, out_c=16, seed=0, **extra):
    w = Constant(_int8((out_c, x.type.shape[1] // extra.get("groups", 1), k, k), seed), "w")
    attrs = {"strides": (stride, stride), "padding": (pad,) * 4, **extra}
    return Node("conv2d", (x, w), attrs, name="conv")


def _same(before, after, feeds):
    for a, b in zip(evaluate(before, feeds), evaluate(after, feeds), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    ("config", "in_c", "k", "stride", "pad", "kind"),
    [
        ("vta-1x16x16", 3, 7, 2, 3, "im2col"),
        ("default", 1, 4, 2, 1, "space_to_depth"),
        ("4x4x4", 2, 3, 1, 1, "im2col"),
    ],
)
def test_a_first_layer_becomes_im2col_and_a_folded_convolution(config, in_c, k, stride, pad, kind):
    cfg = isa.load_config(config)
    x = Var("x", TensorType((2, in_c, 13, 13), "int8", "NCHW"))
    conv = _conv(x, k, stride, pad)
    graph = Graph.from_outputs([x], [conv])
    after = host_steps(graph, cfg)
    fold, folded = after.nodes
    assert (fold.op, fold.name, folded.name) == ("im2col", f"conv.{kind}", "conv")
    assert folded.inputs[0] is fold and folded.type == conv.type
    assert folded.attrs["strides"] == (1, 1) and folded.attrs["padding"] == (0,) * 4
    # fewer channel blocks than the direct convolution's taps: what the fold is for
    assert lookup("vta", "conv2d").fits(folded, cfg) is None
    _same(graph, after, {"x": _int8(x.type.shape, 1)})


def test_what_the_accelerator_would_not_take_or_need_not_fold_is_left_alone():
    cfg = isa.load_config("vta-1x16x16")
    x = Var("x", TensorType((1, 32, 9, 9), "int8", "NCHW"))
    wide = Graph.from_outputs([x], [_conv(x, 3, 1, 1)])  # 32 channels fill the blocks
    assert host_steps(wide, cfg) is wide
    dw = Graph.from_outputs([x], [_conv(x, 3, 2, 1, out_c=32, groups=32)])
    assert host_steps(dw, cfg) is dw
    f = Var("f", TensorType((1, 3, 9, 9), "float32", "NCHW"))
    w = Constant(np.ones((8, 3, 3, 3), np.float32), name="w")
    fp32 = Graph.from_outputs([f], [Node("conv2d", (f, w), {"padding": (1,) * 4}, name="c")])
    assert host_steps(fp32, cfg) is fp32  # a float convolution stays on the host as it is


def _pool(src, pad, ceil=False, k=3):
    attrs = {"pool_size": (k, k), "strides": (2, 2), "padding": (pad,) * 4, "ceil_mode": ceil}
    return Node("max_pool2d", (src,), attrs, name="pool")


@pytest.mark.parametrize(("size", "ceil"), [(9, False), (8, True), (10, True)])
def test_a_padded_max_pool_over_signed_values_gets_a_pad_node(size, ceil):
    cfg = isa.load_config("default")
    x = Var("x", TensorType((1, 8, size, size), "int8", "NCHW"))
    pool = _pool(x, 1, ceil)
    graph = Graph.from_outputs([x], [pool])
    reason = lookup("vta", "max_pool2d").fits(pool, cfg)
    assert reason is not None and "may be negative" in reason[1]  # the pool alone is refused
    after = host_steps(graph, cfg)
    pad, unpadded = after.nodes
    assert (pad.op, pad.name, pad.attrs["pad_value"]) == ("pad", "pool.pad", -128.0)
    assert unpadded.attrs["padding"] == (0,) * 4 and not unpadded.attrs["ceil_mode"]
    assert unpadded.type == pool.type and lookup("vta", "max_pool2d").fits(unpadded, cfg) is None
    feed = _int8(x.type.shape, size)
    feed[feed > -100] = -100  # every value negative: zero padding would change the maxima
    _same(graph, after, {"x": feed})


def test_a_max_pool_over_a_relu_keeps_its_padding_and_an_unpadded_one_is_untouched():
    cfg = isa.load_config("default")
    x = Var("x", TensorType((1, 8, 9, 9), "int8", "NCHW"))
    relu = Node("relu", (x,), name="relu")
    over_relu = Graph.from_outputs([x], [_pool(relu, 1)])
    assert host_steps(over_relu, cfg) is over_relu
    assert lookup("vta", "max_pool2d").fits(over_relu.outputs[0], cfg) is None  # LOAD pads
    unpadded = Graph.from_outputs([x], [_pool(x, 0)])
    assert host_steps(unpadded, cfg) is unpadded


@pytest.mark.parametrize(
    ("shape", "window", "stride", "before", "out_hw"),
    [
        ((2, 3, 11, 11), 7, 2, (3, 3), (6, 6)),  # a first layer's im2col
        ((1, 2, 9, 9), 2, 2, (1, 1), (6, 6)),  # space to depth, windows past the input
        ((1, 1, 5, 7), 3, 1, (0, 2), (3, 7)),
    ],
)
def test_the_cpu_im2col_kernel_equals_the_reference(shape, window, stride, before, out_hw):
    from compiler.model.host_groups import compile_host_groups, run_host_group

    x = Var("x", TensorType(shape, "int8", "NCHW"))
    attrs = {"window": window, "stride": stride, "pad_before": before, "out_hw": out_hw}
    node = Node("im2col", (x,), attrs, name="cols")
    graph = Graph.from_outputs([x], [node])
    (group,) = compile_host_groups(graph.nodes, graph.outputs)
    assert group.compiled, group.reason
    xv = _int8(shape, 3)
    got = run_host_group(group, {id(x): xv})[id(node)]
    np.testing.assert_array_equal(got, im2col(xv, window, stride, before, out_hw))
    assert got.shape == (shape[0], shape[1] * window * window, *out_hw)


def test_im2col_refuses_bad_attributes_naming_the_node():
    from compiler.errors import CompilerError

    x = Var("x", TensorType((1, 3, 8, 8), "int8", "NCHW"))
    good = {"window": 3, "stride": 1, "pad_before": (1, 1), "out_hw": (8, 8)}
    for key, bad in (("window", 0), ("stride", 1.5), ("pad_before", (-1, 0)), ("out_hw", (8,))):
        with pytest.raises(CompilerError, match=f"cols.*{key}"):
            Node("im2col", (x,), {**good, key: bad}, name="cols")
    flat = Var("v", TensorType((3, 8), "int8"))
    with pytest.raises(CompilerError, match="cols.*NCHW"):
        Node("im2col", (flat,), good, name="cols")


@pytest.mark.gpu
def test_the_gpu_im2col_kernel_equals_the_reference():
    from compiler import te
    from compiler.build import build
    from compiler.topi import transform
    from compiler.topi.gpu import schedule_gpu

    x = te.placeholder((1, 2, 9, 9), "int8", name="x")
    out = transform.im2col(x, 3, 2, (1, 1), (5, 5))
    # the group of an opaque operator whose compute is injective: anchored by it, or not
    for anchor in (None, out):
        f = build(schedule_gpu([out], anchor=anchor), [x, out], target="gpu")
        xv = _int8((1, 2, 9, 9), 5)
        np.testing.assert_array_equal(f(xv), im2col(xv, 3, 2, (1, 1), (5, 5)))
