"""factor_residual_gate: a gated residual ``x + x * g`` (PP-OCRv4's RSE-FPN) becomes
``x * (g + 1)``, one operator over the tensor; the values do not change, and what would not
save an operator is left alone."""

from __future__ import annotations

import numpy as np
import pytest

from compiler.graph import Constant, Graph, Node, TensorType, Var, evaluate
from compiler.graph.passes import eliminate_dead_nodes, factor_residual_gate
from compiler.graph.pipeline import graph_pipeline
from compiler.quantize.realize import PREPARE_PASSES

RNG = np.random.default_rng(21)


def _x():
    return Var("x", TensorType((1, 8, 5, 6), "float32", "NCHW"))


def _gate(x):
    """A squeeze-excitation gate of ``x``: pooled, a 1x1 convolution, a hard sigmoid."""
    pooled = Node("global_avg_pool2d", (x,), name="gap")
    w = Constant(RNG.standard_normal((8, 8, 1, 1)).astype(np.float32), name="w")
    conv = Node("conv2d", (pooled, w), name="se")
    return Node("hard_sigmoid", (conv,), {"alpha": 0.2, "beta": 0.5}, name="g")


def _ops(g):
    return [n.op for n in g.nodes]


def _same(before, after):
    feeds = {v.name: RNG.standard_normal(v.type.shape).astype(np.float32) for v in before.inputs}
    for a, b in zip(evaluate(before, feeds), evaluate(after, feeds), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("add_first", [True, False])
@pytest.mark.parametrize("mul_first", [True, False])
def test_a_gated_residual_becomes_one_multiply(add_first, mul_first):
    x = Node("relu", (_x(),), name="r")
    g = _gate(x)
    mul = Node("multiply", (x, g) if mul_first else (g, x), name="m")
    y = Node("add", (x, mul) if add_first else (mul, x), name="rse")
    before = Graph.from_outputs([x.inputs[0]], [y])
    after = eliminate_dead_nodes(factor_residual_gate(before))
    assert _ops(after)[-2:] == ["add", "multiply"]
    plus = after.nodes[-2]
    assert plus.type.shape == (1, 8, 1, 1) and plus.name == "rse.gate"
    _same(before, after)


def test_what_is_left_alone():
    x = _x()
    g = _gate(x)
    other = Var("o", TensorType((1, 8, 5, 6), "float32", "NCHW"))
    per_element = Node("sigmoid", (x,), name="s")
    cases = {
        # a gate per element: two operators over the tensor either way
        "per element": [Node("add", (x, Node("multiply", (x, per_element))))],
        # the multiply scales another tensor
        "other tensor": [Node("add", (x, Node("multiply", (other, g))))],
        # the multiply has a second reader
        "two readers": [Node("add", (x, m := Node("multiply", (x, g), name="m"))), m],
    }
    for what, outputs in cases.items():
        ins = [x, other] if what == "other tensor" else [x]
        before = Graph.from_outputs(ins, outputs)
        assert _ops(factor_residual_gate(before)) == _ops(before), what


def test_the_pass_runs_before_quantization():
    names = graph_pipeline().names()
    assert names.index("fold_hard_activations") < names.index("factor_residual_gate")
    assert "factor_residual_gate" in PREPARE_PASSES


@pytest.mark.parametrize("preset", ["default", "vta-1x16x16"])
def test_a_gated_residual_on_the_accelerator_is_one_elementwise_group(preset):
    from runtime.vta_target import compile_network

    x = _x()
    w = Constant((RNG.standard_normal((8, 8, 3, 3)) * 0.3).astype(np.float32), name="w0")
    conv = Node("conv2d", (x, w), {"padding": (1, 1, 1, 1)}, name="conv")
    y = Node("add", (conv, Node("multiply", (conv, _gate(conv)), name="m")), name="rse")
    graph = Graph.from_outputs([x], [y])
    feeds = [{"x": RNG.standard_normal((1, 8, 5, 6)).astype(np.float32)} for _ in range(4)]
    net = compile_network(graph, preset, calibration=feeds[:3], sensitivity="off")
    shapes = {n.name: n.type.shape for n in net.graph.nodes}
    # the elementwise groups over the whole map (not over the gate's one value per channel)
    on_vta = [p for p in net.partition.placements if p.device == "vta"]
    big = [p for p in on_vta if p.op in ("qadd", "qmul") and shapes[p.node][2:] != (1, 1)]
    assert [p.op for p in big] == ["qmul"], big
    got = net.run(feeds[3]).outputs[0]
    np.testing.assert_array_equal(got, net.reference(feeds[3])[0])
    want = evaluate(graph, feeds[3])[0]
    cos = float((got * want).sum() / np.linalg.norm(got) / np.linalg.norm(want))
    assert cos > 0.99, cos
