"""``partition_graph(..., exclude=...)``: a group whose accelerator compile failed goes to the
host with what it would have fused, under the rule ``compile-failed`` and the caller's reason;
every other placement stays as the rules decide."""

import numpy as np
import pytest

import isa
from compiler.frontend.onnx_import import from_onnx
from compiler.frontend.zoo import load_zoo
from compiler.graph import Constant, Graph, Node, TensorType, Var
from compiler.partition import partition_graph
from compiler.quantize import quantize_graph

CFG = isa.load_config("default")
RNG = np.random.default_rng(0)


def _quantized(graph: Graph) -> Graph:
    feed = {v.name: RNG.standard_normal(v.type.shape).astype(np.float32) for v in graph.inputs}
    return quantize_graph(graph, feed)


@pytest.fixture(scope="module")
def digits() -> Graph:
    return _quantized(from_onnx(load_zoo("digits", batch=1)))


def _residual() -> Graph:
    """conv -> relu -> conv + relu (a qadd fused into the second conv's group)."""
    x = Var("x", TensorType((1, 8, 6, 6), "float32", "NCHW"))
    pad = {"padding": (1, 1, 1, 1)}
    w1 = Constant(RNG.standard_normal((8, 8, 3, 3)).astype(np.float32), name="w1")
    w2 = Constant(RNG.standard_normal((8, 8, 3, 3)).astype(np.float32), name="w2")
    c1 = Node("conv2d", (x, w1), pad, name="c1")
    r1 = Node("relu", (c1,), {}, name="r1")
    c2 = Node("conv2d", (r1, w2), pad, name="c2")
    add = Node("add", (c2, r1), {}, name="add")
    return _quantized(Graph.from_outputs([x], [add]))


def test_an_excluded_conv_goes_to_the_host_with_its_requantize_and_fused_qadd():
    graph = _residual()
    before = partition_graph(graph, CFG)
    c2 = next(g for g in before.groups if g.name == "c2")
    assert c2.qadd is not None  # the add is fused: it must leave with the group
    reason = "the accelerator compile failed: conv2d: no tiling fits"
    after = partition_graph(graph, CFG, {"c2": reason})
    assert [g.name for g in after.groups] == [g.name for g in before.groups if g.name != "c2"]
    moved = {n.name for n in c2.nodes}
    for p_before, p in zip(before.placements, after.placements, strict=True):
        if p.node in moved:
            assert (p.device, p.group, p.rule, p.reason) == ("cpu", None, "compile-failed", reason)
        else:
            assert p == p_before, p
    line = next(x for x in after.table().splitlines() if x.startswith("c2 "))
    assert "compile-failed" in line and line.endswith(reason)


def test_excluded_pool_and_elementwise_groups_go_to_the_host(digits):
    part = partition_graph(digits, CFG)
    pool = next(g for g in part.groups if g.kind == "global_sum_pool2d")
    conv = next(g for g in part.groups if g.kind == "conv2d")
    exclude = {pool.name: "pool failed", conv.name: "conv failed"}
    after = partition_graph(digits, CFG, exclude)
    assert {g.name for g in after.groups} == {g.name for g in part.groups} - set(exclude)
    for group in (pool, conv):
        for n in group.nodes:
            p = after.placement(n.name)
            assert (p.device, p.rule, p.reason) == ("cpu", "compile-failed", exclude[group.name])
    x = Var("x", TensorType((1, 8, 4, 4), "int8", "NCHW"))
    relu = Graph.from_outputs([x], [Node("relu", (x,), {}, name="r")])
    assert [g.kind for g in partition_graph(relu, CFG).groups] == ["relu"]
    after = partition_graph(relu, CFG, {"r": "relu failed"})
    assert after.groups == ()
    p = after.placement("r")
    assert (p.device, p.rule, p.reason) == ("cpu", "compile-failed", "relu failed")


def test_a_name_that_is_no_group_anchor_is_refused(digits):
    part = partition_graph(digits, CFG)
    rq = part.groups[0].requantize
    assert rq is not None
    with pytest.raises(ValueError, match=f"exclude names '{rq.name}', not the anchor"):
        partition_graph(digits, CFG, {rq.name: "x"})
    with pytest.raises(ValueError, match="'nowhere'"):
        partition_graph(digits, CFG, {"nowhere": "x"})


def test_no_exclusion_is_the_plain_partition(digits):
    assert partition_graph(digits, CFG, {}) == partition_graph(digits, CFG)
