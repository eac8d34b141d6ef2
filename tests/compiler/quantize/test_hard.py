"""The integer hard sigmoid and hard swish: within one output step of float for every int8
input, the ALU sequence equal to the integer form, and the quantizer's rewrite."""

import numpy as np
import pytest

from compiler.graph import Constant, Graph, Node, TensorType, Var, evaluate
from compiler.quantize import quantize_graph
from compiler.quantize.hard import (
    GATE_UNITS,
    choose_hard_sigmoid,
    choose_hard_swish,
    hard_sigmoid_int,
    hard_sigmoid_steps,
    hard_swish_int,
    hard_swish_steps,
)

Q = np.arange(-128, 128, dtype=np.int8)
OPS = {
    "MUL": np.multiply,
    "ADD": np.add,
    "MAX": np.maximum,
    "MIN": np.minimum,
    "SHR": np.right_shift,
}


def _run_steps(steps, q):
    """The ALU's int32 lanes (no wrap happens at these magnitudes: checked)."""
    acc = q.astype(np.int64)
    rhs = q.astype(np.int64)
    for s in steps:
        f = OPS[s.op]
        if s.dst == "rhs":
            rhs = f(rhs, s.imm)
        elif s.tensor == "rhs":
            acc = f(acc, rhs)
        else:
            acc = f(acc, s.imm)
        assert np.abs(acc).max() < 2**31 and np.abs(rhs).max() < 2**31
        assert s.imm is None or -(2**15) <= s.imm < 2**15, s
    return acc


@pytest.mark.parametrize("sx", [0.01, 6 / 127, 0.2])
@pytest.mark.parametrize("alpha,beta", [(0.2, 0.5), (1 / 6, 0.5), (0.5, 0.25)])
def test_hard_sigmoid_within_one_step_and_alu_exact(sx, alpha, beta):
    sy = 1 / 127
    p = choose_hard_sigmoid(alpha, beta, sx, sy)
    got = hard_sigmoid_int(Q, p)
    ref = np.clip(alpha * sx * Q.astype(np.float64) + beta, 0, 1) / sy
    assert (
        np.abs(got - ref).max()
        <= 0.5 + 1e-6 + abs(p.multiplier / 2**p.shift - alpha * sx / sy) * 128
    )
    np.testing.assert_array_equal(_run_steps(hard_sigmoid_steps(p), Q), got)


@pytest.mark.parametrize("sx,sy", [(6 / 127, 6 / 127), (0.02, 0.015), (0.1, 0.05)])
def test_hard_swish_close_to_float_and_alu_exact(sx, sy):
    p = choose_hard_swish(1 / 6, 0.5, sx, sy)
    got = hard_swish_int(Q, p)
    x = Q.astype(np.float64) * sx
    ref = np.clip(x * np.clip(x / 6 + 0.5, 0, 1) / sy, -128, 127)
    # the gate's step (1/127) times |x| / sy, plus the output's rounding
    bound = 0.5 + np.abs(x).max() / sy / GATE_UNITS + 0.01
    assert np.abs(got - ref).max() <= bound
    np.testing.assert_array_equal(_run_steps(hard_swish_steps(p), Q), got)


def test_quantizer_rewrites_hard_activations_to_integer_ops():
    x = Var("x", TensorType((1, 4, 5, 5), "float32", "NCHW"))
    hs = Node("hard_swish", (x,), name="hs")
    hg = Node("hard_sigmoid", (hs,), {"alpha": 0.2, "beta": 0.5}, name="hg")
    g = Graph.from_outputs([x], [hg])
    rng = np.random.default_rng(0)
    feeds = [{"x": (rng.standard_normal((1, 4, 5, 5)) * 3).astype(np.float32)} for _ in range(3)]
    q = quantize_graph(g, feeds, "minmax")
    assert [n.op for n in q.nodes] == ["quantize", "qhard_swish", "qhard_sigmoid", "dequantize"]
    out, ref = evaluate(q, feeds[0])[0], evaluate(g, feeds[0])[0]
    assert np.abs(out - ref).max() < 0.02


@pytest.mark.parametrize("sx,sy", [(6 / 127, 6 / 127), (0.02, 0.015), (0.1, 0.05), (0.4, 1e-3)])
@pytest.mark.parametrize("plus", [-7.3, -0.004, 0.25, 3.0])
@pytest.mark.parametrize("times", [1.0, 0.03, 2.5])
def test_hard_swish_times_plus_a_constant_close_to_float_and_alu_exact(sx, sy, plus, times):
    # a constant multiply fused as a factor of the multiplier, an add as the rounding shift's
    # offset: its whole output steps after the shift, the fraction before it (the shift split
    # past 15 bits where sy is fine)
    p = choose_hard_swish(1 / 6, 0.5, sx, sy, plus, times)
    got = hard_swish_int(Q, p)
    x = Q.astype(np.float64) * sx
    ref = np.clip((times * x * np.clip(x / 6 + 0.5, 0, 1) + plus) / sy, -128, 127)
    bound = 0.5 + times * np.abs(x).max() / sy / GATE_UNITS + 0.01
    assert np.abs(got - ref).max() <= bound
    np.testing.assert_array_equal(_run_steps(hard_swish_steps(p), Q), got)
    assert p.offset != 0


def test_hard_swish_plus_more_steps_than_an_immediate_is_refused():
    from compiler.quantize.requant import QuantizeError

    with pytest.raises(QuantizeError, match="output steps"):
        choose_hard_swish(1 / 6, 0.5, 0.01, 1e-6, plus=1.0)
    with pytest.raises(QuantizeError, match="not positive"):
        choose_hard_swish(1 / 6, 0.5, 0.01, 0.01, times=-0.5)


@pytest.mark.parametrize("times", [None, 0.4])
def test_quantizer_fuses_a_constant_multiply_and_add_after_a_hard_swish(times):
    x = Var("x", TensorType((1, 4, 5, 5), "float32", "NCHW"))
    hs = Node("hard_swish", (x,), name="hs")
    scaled = hs if times is None else Node("multiply", (Constant(np.float32([times])), hs))
    shifted = Node("add", (scaled, Constant(np.float32([-0.6]))), name="lab")
    y = Node("relu", (Node("add", (shifted, x), name="res"),), name="r")
    g = Graph.from_outputs([x], [y])
    rng = np.random.default_rng(1)
    feeds = [{"x": (rng.standard_normal((1, 4, 5, 5)) * 3).astype(np.float32)} for _ in range(3)]
    q = quantize_graph(g, feeds, "minmax")
    ops = [n.op for n in q.nodes]
    assert ops.count("qadd") == 1 and ops.count("qhard_swish") == 1, ops
    (swish,) = [n for n in q.nodes if n.op == "qhard_swish"]
    assert swish.attrs["offset"] < 0
    out, ref = evaluate(q, feeds[0])[0], evaluate(g, feeds[0])[0]
    # within two steps of the output (the hard swish's and the residual add's rounding)
    assert np.abs(out - ref).max() <= 2 * np.abs(ref).max() / 127
    # not fused where the hard swish has another reader
    g2 = Graph.from_outputs([x], [shifted, hs])
    ops2 = [n.op for n in quantize_graph(g2, feeds, "minmax").nodes]
    assert ops2.count("qadd") == 1 and ops2.count("qhard_swish") == 1, ops2
    assert ops2.count("qmul") == (times is not None), ops2
    assert all(n.attrs["offset"] == 0 for n in quantize_graph(g2, feeds, "minmax").nodes
               if n.op == "qhard_swish")  # fmt: skip
