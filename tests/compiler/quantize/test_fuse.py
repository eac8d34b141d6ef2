"""``fuse_qprelu``: an int8 PReLU's four nodes become one ``qprelu`` with the same integers, and
nothing else is fused."""

import numpy as np
import pytest

from compiler.graph import Constant, Graph, Node, TensorType, Var
from compiler.graph.reference import evaluate
from compiler.quantize.fuse import fuse_qprelu

OUT = {"out_min": -128, "out_max": 127}


def _prelu(x, slope, rng, *, swap=False, neg=(-128, 0), name="p"):
    """The four int8 nodes a PReLU quantizes to, with random multipliers and shifts."""
    clip = Node("clip", (x,), {"a_min": neg[0], "a_max": neg[1]}, name=f"{name}.neg")
    mul = {
        "multiplier": int(rng.integers(1, 1 << 15)),
        "shift": int(rng.integers(8, 24)),
        "out_min": int(rng.integers(-128, -60)),
        "out_max": int(rng.integers(60, 128)),
    }
    scaled = Node("qmul", (clip, slope), mul, name=f"{name}.slope")
    pos = Node("relu", (x,), name=f"{name}.pos")
    add = {"lhs_multiplier": int(rng.integers(0, 1 << 15)),
           "rhs_multiplier": int(rng.integers(0, 1 << 15)),
           "shift": int(rng.integers(10, 20)), **OUT}  # fmt: skip
    operands = (scaled, pos) if swap else (pos, scaled)
    return Node("qadd", operands, add, name=name)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("shape", [(2, 5, 3, 4), (3, 7)])
def test_the_fused_node_computes_the_same_integers(seed, shape):
    rng = np.random.default_rng(seed)
    x = Var("x", TensorType(shape, "int8", "NCHW" if len(shape) == 4 else ""))
    per_channel = (shape[0], shape[1], 1, 1) if len(shape) == 4 else shape
    row = rng.integers(-128, 128, (1, shape[1], *per_channel[2:]))
    slope = Constant(np.broadcast_to(row, per_channel).astype(np.int8), name="slope")
    neg = (-128, int(rng.integers(-5, 6)))
    y = _prelu(x, slope, rng, swap=bool(seed % 2), neg=neg)
    graph = Graph.from_outputs([x], [y])
    fused = fuse_qprelu(graph)
    assert [(n.op, n.name) for n in fused.nodes] == [("qprelu", "p")]
    for k in range(3):
        v = np.random.default_rng(100 + k).integers(-128, 128, shape).astype(np.int8)
        np.testing.assert_array_equal(evaluate(fused, {"x": v})[0], evaluate(graph, {"x": v})[0])


def test_only_a_whole_private_prelu_is_fused():
    rng = np.random.default_rng(0)
    x = Var("x", TensorType((1, 4, 2, 2), "int8", "NCHW"))
    slope = Constant(rng.integers(-9, 9, (1, 4, 1, 1)).astype(np.int8), name="slope")
    y = _prelu(x, slope, rng)
    # the relu read elsewhere too: the match would compute it twice
    pos = y.inputs[0]
    other = Node("qadd", (y, pos), {"lhs_multiplier": 1, "rhs_multiplier": 1, "shift": 0, **OUT})
    g = Graph.from_outputs([x], [other])
    assert fuse_qprelu(g) is g
    # an absorbed node that is a graph output
    g = Graph.from_outputs([x], [y, pos])
    assert fuse_qprelu(g) is g
    # a slope that is not a constant, or differs between batch rows
    s = Var("s", TensorType((1, 4, 1, 1), "int8", "NCHW"))
    g = Graph.from_outputs([x, s], [_prelu(x, s, rng)])
    assert fuse_qprelu(g) is g
    x2 = Var("x2", TensorType((2, 4, 2, 2), "int8", "NCHW"))
    rows = Constant(np.arange(8, dtype=np.int8).reshape(2, 4, 1, 1), name="rows")
    g = Graph.from_outputs([x2], [_prelu(x2, rows, rng)])
    assert fuse_qprelu(g) is g
    # a clip bound that is not a whole number
    g = Graph.from_outputs([x], [_prelu(x, slope, rng, neg=(-128, 0.5))])
    assert fuse_qprelu(g) is g
    # the clip of another value than the relu's
    z = Var("z", TensorType((1, 4, 2, 2), "int8", "NCHW"))
    y = _prelu(x, slope, rng)
    clip = Node("clip", (z,), {"a_min": -128, "a_max": 0}, name="zn")
    scaled = Node("qmul", (clip, slope), dict(y.inputs[1].attrs), name="zs")
    g = Graph.from_outputs([x, z], [Node("qadd", (y.inputs[0], scaled), dict(y.attrs))])
    assert fuse_qprelu(g) is g


def test_two_prelus_in_a_chain_are_both_fused():
    rng = np.random.default_rng(3)
    x = Var("x", TensorType((1, 4, 3, 3), "int8", "NCHW"))
    slope = Constant(rng.integers(-9, 9, (1, 4, 1, 1)).astype(np.int8), name="slope")
    first = _prelu(x, slope, rng, name="a")
    second = _prelu(first, slope, rng, name="b")
    graph = Graph.from_outputs([x], [second])
    fused = fuse_qprelu(graph)
    assert [(n.op, n.name) for n in fused.nodes] == [("qprelu", "a"), ("qprelu", "b")]
    v = rng.integers(-128, 128, (1, 4, 3, 3)).astype(np.int8)
    np.testing.assert_array_equal(evaluate(fused, {"x": v})[0], evaluate(graph, {"x": v})[0])


def test_a_bad_slope_or_attribute_is_named():
    from compiler.errors import GraphError, ShapeError

    x = Var("x", TensorType((1, 4, 2, 2), "int8", "NCHW"))
    attrs = {"neg_min": -128, "neg_max": 0, "slope_multiplier": 1, "slope_shift": 0,
             "slope_min": -128, "slope_max": 127, "pos_multiplier": 1, "neg_multiplier": 1,
             "shift": 0, **OUT}  # fmt: skip
    wrong = Constant(np.ones((1, 4, 2, 2), np.int8))
    with pytest.raises(ShapeError, match="slope must have shape \\(1, 4, 1, 1\\)"):
        Graph.from_outputs([x], [Node("qprelu", (x, wrong), attrs, name="p")])
    good = Constant(np.ones((1, 4, 1, 1), np.int8))
    with pytest.raises(GraphError, match="neg_min 5 is greater than neg_max"):
        Graph.from_outputs([x], [Node("qprelu", (x, good), {**attrs, "neg_min": 5}, name="p")])
    leaky = {"pos_multiplier": 1, "neg_multiplier": 1, "shift": 31, **OUT}
    with pytest.raises(GraphError, match="'l' \\(qleaky_relu\\): attribute shift"):
        Graph.from_outputs([x], [Node("qleaky_relu", (x,), leaky, name="l")])
