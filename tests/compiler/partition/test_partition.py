"""Partition rules: every node placed, with the rule and the limit that decided."""

import numpy as np
import pytest

import isa
from compiler.frontend.onnx_import import from_onnx
from compiler.frontend.zoo import load_zoo
from compiler.graph import Constant, Graph, Node, TensorType, Var
from compiler.partition import partition_graph
from compiler.quantize import quantize_graph

RNG = np.random.default_rng(0)


def _quantized(graph):
    feed = {v.name: RNG.standard_normal(v.type.shape).astype(np.float32) for v in graph.inputs}
    return quantize_graph(graph, feed)


def _w(*shape):
    return Constant(RNG.standard_normal(shape).astype(np.float32), name=f"w{len(shape)}{shape[0]}")


@pytest.fixture(scope="module")
def digits():
    return _quantized(from_onnx(load_zoo("digits", batch=1)))


def test_every_node_of_digits_is_placed_and_gemms_go_to_the_accelerator(digits):
    part = partition_graph(digits, isa.load_config("default"))
    assert [p.node for p in part.placements] == [n.name for n in digits.nodes]
    for node in digits.nodes:
        p = part.placement(node.name)
        if node.op in ("conv2d", "dense"):
            assert (p.device, p.rule) == ("vta", f"{node.op}-group"), p
        if node.op in ("max_pool2d", "global_sum_pool2d"):
            assert (p.device, p.rule) == ("vta", "pool-group"), p
        assert p.reason
    # 6 convolutions (the first included), the classifier, 2 max pools, the global pool
    assert len(part.groups) == 10
    assert part.placement("avgpool.requantize").group == "avgpool.sum"
    assert {p.rule for p in part.host_nodes()} == {"float-edge", "layout"}
    # both residual adds are fused into the group of the convolution whose result they read
    fused = [g for g in part.groups if g.qadd is not None]
    assert [g.qadd.name for g in fused] == ["block1.add", "block2.add"]
    assert all(part.placement(g.qadd.name).rule == "qadd-fused" for g in fused)


def test_first_layer_channels_are_padded_to_the_block_on_every_preset(digits):
    for name in ("default", "vta-1x16x16", "4x4x4"):
        cfg = isa.load_config(name)
        p = partition_graph(digits, cfg).placement("conv1")
        assert p.device == "vta" and f"blocks of {cfg.block_in} in" in p.reason


def _depthwise_graph(groups=8):
    x = Var("x", TensorType((1, 8, 6, 6), "float32", "NCHW"))
    conv = Node("conv2d", (x, _w(8, 8, 3, 3)), {"padding": (1, 1, 1, 1)}, name="conv")
    dw = Node("conv2d", (conv, _w(8, 8 // groups, 3, 3)),
              {"padding": (1, 1, 1, 1), "groups": groups}, name="dw")  # fmt: skip
    prob = Node("softmax", (dw,), {"axis": 1}, name="prob")
    return _quantized(Graph.from_outputs([x], [prob]))


def test_depthwise_conv_runs_on_diagonal_tiles_and_softmax_stays_on_the_host():
    part = partition_graph(_depthwise_graph(), isa.load_config("default"))
    assert part.placement("conv").device == "vta"
    dwp = part.placement("dw")
    assert (dwp.device, dwp.group, dwp.rule) == ("vta", "dw", "depthwise-group"), dwp
    assert "diagonal weight tiles" in dwp.reason
    assert (part.placement("prob").device, part.placement("prob").rule) == ("cpu", "float-op")


def test_grouped_conv_and_depthwise_without_square_blocks_stay_on_the_host_and_say_why():
    part = partition_graph(_depthwise_graph(groups=2), isa.load_config("default"))
    dwp = part.placement("dw")
    assert (dwp.device, dwp.rule) == ("cpu", "conv2d-groups") and "groups=2" in dwp.reason
    # diagonal weight tiles need as many input lanes as output lanes
    cfg = isa.load_config("default").replace(block_in=8, name="wide-in")
    dwp = partition_graph(_depthwise_graph(), cfg).placement("dw")
    assert (dwp.device, dwp.rule) == ("cpu", "conv2d-groups"), dwp
    assert "block_in == block_out" in dwp.reason and "8x4" in dwp.reason


def test_a_relu_alone_is_a_group_and_float_pooling_stays_on_the_host():
    x = Var("x", TensorType((1, 4, 8, 8), "int8", "NCHW"))
    relu = Node("relu", (x,), name="relu")
    pool = Node("max_pool2d", (relu,), {"pool_size": (2, 2), "strides": (2, 2)}, name="pool")
    part = partition_graph(Graph.from_outputs([x], [pool]), isa.load_config("default"))
    p = part.placement("relu")
    assert (p.device, p.group, p.rule) == ("vta", "relu", "relu-group") and "MAX 0" in p.reason
    assert part.placement("pool").rule == "pool-group"
    assert [(g.name, g.kind, g.residual) for g in part.groups] == [
        ("relu", "relu", None),
        ("pool", "max_pool2d", None),
    ]
    y = Var("y", TensorType((1, 4, 8, 8), "float32", "NCHW"))
    fpool = Node("max_pool2d", (y,), {"pool_size": (2, 2), "strides": (2, 2)}, name="fpool")
    p = partition_graph(Graph.from_outputs([y], [fpool]), isa.load_config("default"))
    assert p.placement("fpool").device == "cpu"


def test_unfused_qadd_and_int8_clip_are_groups_of_their_own():
    x = Var("x", TensorType((1, 8, 4, 4), "int8", "NCHW"))
    y = Var("y", TensorType((1, 8, 4, 4), "int8", "NCHW"))
    attrs = {"lhs_multiplier": 16384, "rhs_multiplier": 9000, "shift": 15}
    add = Node("qadd", (x, y), attrs, name="add")
    clip = Node("clip", (add,), {"a_min": -20.0, "a_max": 90.0}, name="clip")
    relu6 = Node("clip", (x,), {"a_min": 0.0, "a_max": float("inf")}, name="lower")
    part = partition_graph(Graph.from_outputs([x, y], [clip, relu6]), isa.load_config("4x4x4"))
    groups = {g.name: g for g in part.groups}
    assert groups["add"].kind == "qadd" and groups["add"].residual is y
    assert groups["add"].anchor.inputs[0] is x and groups["add"].output is add
    assert part.placement("add").rule == "qadd-group"
    assert (part.placement("clip").rule, part.placement("lower").rule) == ("clip-group",) * 2


def test_elementwise_nodes_the_accelerator_cannot_take_name_their_limit():
    cfg = isa.load_config("default")
    x5 = Var("x", TensorType((1, 2, 2, 4, 4), "int8"))
    p = partition_graph(Graph.from_outputs([x5], [Node("relu", (x5,), name="r")]), cfg)
    assert p.placement("r").rule == "relu-shape" and "5-d" in p.placement("r").reason
    x = Var("x", TensorType((1, 8, 4, 4), "int8", "NCHW"))
    half = Node("clip", (x,), {"a_min": 0.5, "a_max": 100.0}, name="half")
    p = partition_graph(Graph.from_outputs([x], [half]), cfg).placement("half")
    assert (p.device, p.rule) == ("cpu", "clip-bounds") and "a_min=0.5" in p.reason
    f = Var("f", TensorType((1, 8, 4, 4), "float32", "NCHW"))
    p = partition_graph(Graph.from_outputs([f], [Node("relu", (f,), name="fr")]), cfg)
    assert (p.placement("fr").device, p.placement("fr").rule) == ("cpu", "float-op")
    assert p.groups == ()


def test_add_of_two_branches_each_read_twice_is_a_qadd_group():
    # each convolution's result has a second reader, so the add joins neither group
    x = Var("x", TensorType((1, 8, 6, 6), "float32", "NCHW"))
    a = Node("conv2d", (x, _w(8, 8, 3, 3)), {"padding": (1, 1, 1, 1)}, name="a")
    b = Node("conv2d", (x, _w(8, 8, 1, 1)), name="b")
    add = Node("add", (a, b), name="add")
    out = Node("add", (Node("relu", (add,), name="relu"), Node("add", (a, b), name="add2")),
               name="sum")  # fmt: skip
    part = partition_graph(_quantized(Graph.from_outputs([x], [out])), isa.load_config("default"))
    assert all(g.qadd is None for g in part.groups if g.kind == "conv2d")
    rules = {p.node: p.rule for p in part.placements}
    assert rules["add"] == rules["add2"] == "qadd-group"
    assert all(p.device == "vta" for p in part.placements if p.op in ("qadd", "relu", "conv2d"))


def test_dilated_conv_and_float_graph_name_their_limit():
    x = Var("x", TensorType((1, 4, 8, 8), "float32", "NCHW"))
    conv = Node("conv2d", (x, _w(4, 4, 3, 3)), {"padding": (2, 2, 2, 2), "dilation": (2, 2)},
                name="dil")  # fmt: skip
    g = Graph.from_outputs([x], [conv])
    cfg = isa.load_config("default")
    p = partition_graph(_quantized(g), cfg).placement("dil")
    assert (p.device, p.rule) == ("cpu", "conv2d-dilation")
    # a float graph: the GEMM rule says to quantize first
    p = partition_graph(g, cfg).placement("dil")
    assert p.rule == "gemm-dtype" and "quantize first" in p.reason


def test_qadd_joins_the_group_that_runs_after_its_other_operand():
    x = Var("x", TensorType((1, 8, 6, 6), "float32", "NCHW"))
    a = Node("conv2d", (x, _w(8, 8, 3, 3)), {"padding": (1, 1, 1, 1)}, name="a")
    b = Node("conv2d", (x, _w(8, 8, 1, 1)), name="b")
    add = Node("add", (a, b), name="add")
    part = partition_graph(_quantized(Graph.from_outputs([x], [add])), isa.load_config("default"))
    groups = {g.name: g for g in part.groups}
    assert groups["a"].qadd is None and groups["b"].qadd is not None
    assert groups["b"].residual is groups["a"].requantize
    assert part.placement("add").group == "b"
