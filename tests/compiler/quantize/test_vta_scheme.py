"""``requant="vta"``: VTA's own quantization (power-of-two activation scales, one power-of-two
weight scale per tensor, one shift per layer), its integer graph and its accelerator epilogue,
bit for bit on the simulator against the integer reference."""

import math

import numpy as np
import pytest

from compiler.graph import Constant, Graph, Node, TensorType, Var, evaluate
from compiler.model.vta import quantization_scheme
from compiler.quantize import add_alu_program, integer_violations, quantize_graph
from compiler.quantize.realize import tensor_weight_scale
from compiler.quantize.requant import add_int
from compiler.targets.vta.ops import group_epilogue
from runtime.vta_target import compile_network

from .test_requant import _run_alu


def _residual_net(seed: int = 0) -> tuple[Graph, dict[str, np.ndarray]]:
    """conv-relu, conv, add with the block's input, relu, global pool, dense: one of each."""
    rng = np.random.default_rng(seed)
    x = Var("x", TensorType((1, 8, 6, 6), "float32", "NCHW"))

    def conv(v: Node | Var, name: str, scale: float) -> Node:
        w = Constant((rng.normal(size=(8, 8, 3, 3)) * scale).astype(np.float32), name=f"{name}.w")
        b = Constant(rng.normal(size=8).astype(np.float32) * 0.1, name=f"{name}.b")
        return Node("conv2d", (v, w, b), {"padding": (1, 1, 1, 1)}, name=name)

    stem = Node("relu", (conv(x, "stem", 0.3),), name="stem.relu")
    c1 = Node("relu", (conv(stem, "c1", 0.2),), name="c1.relu")
    c2 = conv(c1, "c2", 0.1)
    out = Node("relu", (Node("add", (c2, stem), name="add"),), name="add.relu")
    pool = Node("global_avg_pool2d", (out,), name="gap")
    flat = Node("reshape", (pool,), {"newshape": (1, 8)}, name="flat")
    fc_w = Constant(rng.normal(size=(5, 8)).astype(np.float32), name="fc.w")
    graph = Graph.from_outputs([x], [Node("dense", (flat, fc_w), name="fc")])
    return graph, {"x": rng.normal(size=(1, 8, 6, 6)).astype(np.float32)}


def _is_power_of_two(v: float) -> bool:
    return v > 0 and math.log2(v) == round(math.log2(v))


def test_vta_scheme_uses_power_of_two_scales_and_one_shift_per_layer():
    graph, feed = _residual_net()
    q = quantize_graph(graph, feed, "minmax", requant="vta")
    assert integer_violations(q) == []
    scales = [float(n.attrs["scale"]) for n in q.nodes if n.op in ("quantize", "dequantize")]
    assert scales and all(_is_power_of_two(s) for s in scales)
    convs = [n for n in q.nodes if n.op in ("conv2d", "dense")]
    requants = [n for n in q.nodes if n.op == "requantize" and n.inputs[0] in convs]
    assert len(requants) == len(convs) == 4
    for rq in requants:
        mult, shift, post = (np.asarray(v.value) for v in rq.inputs[1:4])
        # one shift for every channel, no multiplier: an immediate SHR on the accelerator
        assert set(mult.tolist()) == {1} and set(post.tolist()) == {0}
        assert len(set(shift.tolist())) == 1, rq.name
    (qadd,) = [n for n in q.nodes if n.op == "qadd"]
    a = qadd.attrs
    for m in (a["lhs_multiplier"], a["rhs_multiplier"]):
        # ratios of powers of two: a power of two once the common factors cancel
        assert m > 0 and m & (m - 1) == 0
    # the convolution feeding the add is requantized to the add's own scale: multiplier 1
    assert a["lhs_multiplier"] == 1 << a["shift"]
    # the scheme is exact where it should be: close to the float network
    ref, got = evaluate(graph, feed)[0], evaluate(q, feed)[0]
    assert np.abs(got - ref).max() <= 0.1 * np.abs(ref).max()


def test_vta_weight_scale_is_one_power_of_two_step_below_the_requantization_unit():
    # the largest k >= 0 with unit * 2**-k >= max|w| / 127
    assert tensor_weight_scale(np.array([1.0, 0.5]), np.zeros(2), 0.25) == 2.0**-6  # 1/127 > 2**-7
    assert tensor_weight_scale(np.array([127.0]), np.zeros(1), 0.25) == 0.25  # capped at unit
    # the floor (a bias that needs a coarser scale) wins over the weights' range
    assert tensor_weight_scale(np.array([0.01]), np.array([0.02, 0.1]), 1.0) == 0.125


@pytest.mark.parametrize("preset", ["default", "vta-1x16x16"])
def test_vta_scheme_on_the_simulator_equals_the_integer_reference(preset):
    graph, feed = _residual_net(seed=1)
    net = compile_network(graph, preset, calibration=feed, requant="vta")
    result = net.run(feed)
    np.testing.assert_array_equal(result.outputs[0], net.reference(feed)[0])
    assert net.scheme == quantization_scheme("percentile", "vta")
    epilogues = {
        g.name: [str(s) for s in group_epilogue(g).steps()]
        for g in net.partition.groups
        if g.kind == "conv2d"
    }
    for name, steps in epilogues.items():
        # the bias tile, then one immediate shift for every channel and the clip
        assert steps[0] == "ADD bias" and steps[1].startswith("SHR ") and steps[1] != "SHR shift"
        assert steps[2:4] == (["MAX -128", "MIN 127"] if name == "c2" else ["MAX 0", "MIN 127"])
    # the fused residual: the convolution requantizes straight to the add's scale, which the
    # block's input shares here, so the add is the tile add and the relu
    assert epilogues["c2"][4:] == ["ADD rhs", "MAX 0", "MIN 127"]


@pytest.mark.parametrize(
    ("lhs", "rhs", "shift", "steps"),
    [
        (16384, 16384, 14, ["ADD rhs", "MAX 0", "MIN 127"]),
        (16384, 32768 // 4, 15, ["MUL 2", "ADD rhs", "ADD 2", "SHR 2"]),
        (8, 16, 4, ["MUL@rhs 2", "ADD rhs", "ADD 1", "SHR 1"]),
        (17000, 12000, 15, ["MUL 2125", "MUL@rhs 1500", "ADD rhs", "ADD 2048"]),
    ],
)
def test_qadd_sequence_cancels_common_powers_of_two_with_the_same_bits(lhs, rhs, shift, steps):
    program = add_alu_program(lhs, rhs, shift, 0, 127)
    assert [str(s) for s in program][: len(steps)] == steps
    rng = np.random.default_rng(lhs + rhs)
    a = rng.integers(-128, 128, size=2000).astype(np.int8)
    b = rng.integers(-128, 128, size=2000).astype(np.int8)
    got = _run_alu(program, {"acc": a, "rhs": b})
    np.testing.assert_array_equal(got, add_int(a, b, lhs, rhs, shift, 0, 127).astype(np.int64))


def test_unknown_requantization_names_the_choices():
    from compiler.quantize import QuantizeError

    graph, feed = _residual_net()
    with pytest.raises(QuantizeError, match="multiplier, shift, vta"):
        quantize_graph(graph, feed, requant="power2")
