"""qmul: the int8 multiply of two activations (or of an NCHW tensor by a per-channel gate),
its ALU sequence equal to the integer form, and the quantizer's rewrite."""

import numpy as np
import pytest

from compiler.errors import ShapeError
from compiler.graph import Graph, Node, TensorType, Var, evaluate
from compiler.quantize import quantize_graph
from compiler.quantize.requant import mul_int
from compiler.topi.vta.qelementwise import qmul_steps

Q = np.arange(-128, 128, dtype=np.int8)


@pytest.mark.parametrize("m,shift", [(32767, 30), (16384, 20), (1, 0), (20000, 14)])
def test_alu_sequence_equals_the_integer_form(m, shift):
    a, b = np.meshgrid(Q, Q)
    want = mul_int(a, b, m, shift, -128, 127)
    steps = qmul_steps(m, shift, -128, 127)
    # every pair of int8 operands, one lane each
    acc = a.astype(np.int64).ravel()
    rhs = b.astype(np.int64).ravel()
    for s in steps:
        f = {"MUL": np.multiply, "ADD": np.add, "MAX": np.maximum, "MIN": np.minimum,
             "SHR": np.right_shift}[s.op]  # fmt: skip
        acc = f(acc, rhs) if s.tensor == "rhs" else f(acc, s.imm)
        assert np.abs(acc).max() < 2**31
    np.testing.assert_array_equal(acc.reshape(a.shape), want)


def test_multiply_by_a_channel_gate_becomes_qmul():
    x = Var("x", TensorType((1, 4, 5, 5), "float32", "NCHW"))
    gap = Node("global_avg_pool2d", (x,), name="gap")
    gate = Node("sigmoid", (gap,), name="gate")
    y = Node("multiply", (gate, x), name="excite")  # the gate first: reordered
    g = Graph.from_outputs([x], [y])
    rng = np.random.default_rng(0)
    feeds = [{"x": rng.standard_normal((1, 4, 5, 5)).astype(np.float32)} for _ in range(3)]
    q = quantize_graph(g, feeds, "minmax")
    mul = next(n for n in q.nodes if n.name == "excite")
    assert mul.op == "qmul" and mul.inputs[1].type.shape == (1, 4, 1, 1)
    out, ref = evaluate(q, feeds[0])[0], evaluate(g, feeds[0])[0]
    assert np.abs(out - ref).max() < 0.03 * np.abs(ref).max()


def test_qmul_refuses_other_broadcasts():
    a = Var("a", TensorType((1, 4, 5, 5), "int8", "NCHW"))
    b = Var("b", TensorType((1, 1, 5, 5), "int8", "NCHW"))
    with pytest.raises(ShapeError, match="input 1: shape"):
        Node("qmul", (a, b), {"multiplier": 1, "shift": 0})
