"""fold_hard_activations: the hard sigmoid / hard swish forms exporters write out become the
declared operators, with the same fp32 results; near misses (other constants, a shared
intermediate, a broadcasting constant) are left as they are; the quantizer then finds one
integer operator per activation."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from compiler.graph import Constant, Graph, Node, TensorType, Var, evaluate
from compiler.graph.passes import eliminate_dead_nodes, fold_hard_activations
from compiler.graph.pipeline import graph_pipeline
from compiler.quantize.realize import PREPARE_PASSES

RNG = np.random.default_rng(0)
SHAPE = (1, 4, 5, 6)


def _x(name: str = "x") -> Var:
    return Var(name, TensorType(SHAPE, "float32", "NCHW"))


def _c(value: float, shape: tuple[int, ...] = (1,)) -> Constant:
    return Constant(np.full(shape, value, np.float32))


def _add(a, b):
    return Node("add", (a, b))


def _mul(a, b):
    return Node("multiply", (a, b))


def _div(a, b):
    return Node("divide", (a, b))


def _clip(v, lo: float = 0.0, hi: float = 6.0):
    return Node("clip", (v,), {"a_min": lo, "a_max": hi})


def _gate(x, b: float = 3.0, c: float = 6.0, swap: bool = False):
    """``clip(x + b, 0, c)`` (the constant first when ``swap``)."""
    return _clip(_add(_c(b), x) if swap else _add(x, _c(b)), 0.0, c)


#: Decomposed forms and the operator each must become.
FORMS: dict[str, tuple[Callable[[Var], Node], str]] = {
    "swish_div": (lambda x: _div(_mul(x, _gate(x)), _c(6.0)), "hard_swish"),
    "swish_swapped": (lambda x: _div(_mul(_gate(x, swap=True), x), _c(6.0)), "hard_swish"),
    "swish_mul_reciprocal": (lambda x: _mul(_c(1 / 6), _mul(x, _gate(x))), "hard_swish"),
    "swish_gate_divided": (lambda x: _mul(x, _div(_gate(x), _c(6.0))), "hard_swish"),
    "swish_gate_scaled": (lambda x: _mul(_mul(_gate(x), _c(0.16666667)), x), "hard_swish"),
    "swish_subtract": (
        lambda x: _div(_mul(x, _clip(Node("subtract", (x, _c(-3.0))))), _c(6.0)),
        "hard_swish",
    ),
    "swish_of_hard_sigmoid": (
        lambda x: _mul(x, Node("hard_sigmoid", (x,), {"alpha": 1 / 6, "beta": 0.5})),
        "hard_swish",
    ),
    "sigmoid_div": (lambda x: _div(_gate(x), _c(6.0)), "hard_sigmoid"),
    "sigmoid_mul": (lambda x: _mul(_c(1 / 6, ()), _gate(x, swap=True)), "hard_sigmoid"),
    "sigmoid_other_range": (lambda x: _div(_gate(x, b=2.5, c=5.0), _c(5.0)), "hard_sigmoid"),
    "sigmoid_onnx_definition": (
        lambda x: _clip(_add(_mul(x, _c(0.2)), _c(0.5)), 0.0, 1.0),
        "hard_sigmoid",
    ),
}

#: Forms whose constants do not make the declared function: left alone.
NEAR_MISSES: dict[str, Callable[[Var], Node]] = {
    "offset_2.9": lambda x: _div(_mul(x, _gate(x, b=2.9)), _c(6.0)),
    "divided_by_5": lambda x: _div(_mul(x, _gate(x)), _c(5.0)),
    "clip_from_half": lambda x: _div(_mul(x, _clip(_add(x, _c(3.0)), 0.5, 6.0)), _c(6.0)),
    "gate_scale_mismatch": lambda x: _div(_gate(x), _c(5.0)),
    "onnx_clip_to_2": lambda x: _clip(_add(_mul(x, _c(0.2)), _c(0.5)), 0.0, 2.0),
    "divisor_first": lambda x: _div(_c(6.0), _gate(x)),
    "offset_per_channel": lambda x: _div(
        _mul(x, _clip(_add(x, Constant(np.array([3, 3, 3, 2.9], np.float32).reshape(4, 1, 1))))),
        _c(6.0),
    ),
    "broadcasting_constant": lambda x: _div(_gate(x), _c(6.0, (2, *SHAPE[1:]))),
}


def _random_x() -> np.ndarray:
    # a range across both knees of the gate (-3 and 3), and exact knees
    x = RNG.uniform(-8, 8, SHAPE).astype(np.float32)
    x.flat[:4] = [-3.0, 3.0, 0.0, -0.0]
    return x


def _assert_same(before: Graph, after: Graph) -> None:
    x = _random_x()
    (want,) = evaluate(before, {"x": x})
    (got,) = evaluate(after, {"x": x})
    assert got.shape == want.shape
    err = float(np.abs(got - want).max()) / float(np.abs(want).max())
    assert err <= 1e-6, f"relative error {err:.2e}"


@pytest.mark.parametrize("form", sorted(FORMS))
def test_decomposed_form_becomes_the_declared_operator(form):
    build, op = FORMS[form]
    x = _x()
    g = Graph.from_outputs([x], [build(x)])
    folded = eliminate_dead_nodes(fold_hard_activations(g))
    assert [n.op for n in folded.nodes] == [op]
    assert folded.nodes[0].inputs[0] is x
    _assert_same(g, folded)


@pytest.mark.parametrize("form", sorted(NEAR_MISSES))
def test_other_constants_are_left_alone(form):
    x = _x()
    g = Graph.from_outputs([x], [NEAR_MISSES[form](x)])
    folded = eliminate_dead_nodes(fold_hard_activations(g))
    assert [n.op for n in folded.nodes] == [n.op for n in g.nodes]


def test_shared_intermediate_is_not_absorbed():
    """A gate another output reads stays; the rewrite would compute it twice."""
    x = _x()
    gate = _gate(x)
    g = Graph.from_outputs([x], [_div(_mul(x, gate), _c(6.0)), Node("relu", (gate,))])
    folded = eliminate_dead_nodes(fold_hard_activations(g))
    assert "hard_swish" not in [n.op for n in folded.nodes]


def test_a_swish_of_another_value_keeps_its_multiply():
    """``y * hard_sigmoid(x)`` (an attention gate) is not a hard swish: only the gate folds."""
    x, y = _x(), _x("y")
    g = Graph.from_outputs([x, y], [_mul(y, _div(_gate(x), _c(6.0)))])
    folded = eliminate_dead_nodes(fold_hard_activations(g))
    assert [n.op for n in folded.nodes] == ["hard_sigmoid", "multiply"]
    feeds = {"x": _random_x(), "y": _random_x()}
    np.testing.assert_allclose(evaluate(folded, feeds)[0], evaluate(g, feeds)[0], rtol=1e-6)


def test_chained_blocks_fold_and_keep_names():
    """conv -> hard swish -> conv -> hard swish (the PP-LCNet block): both fold, named as the
    outer node of each form."""
    x = _x()
    w = Constant(RNG.standard_normal((4, 4, 1, 1)).astype(np.float32))
    a = Node("conv2d", (x, w), name="c1")
    h1 = Node("divide", (_mul(a, _gate(a)), _c(6.0)), name="hs1")
    b = Node("conv2d", (h1, w), name="c2")
    h2 = Node("divide", (_mul(b, _gate(b)), _c(6.0)), name="hs2")
    g = Graph.from_outputs([x], [h2])
    folded = eliminate_dead_nodes(fold_hard_activations(g))
    assert [(n.op, n.name) for n in folded.nodes] == [
        ("conv2d", "c1"),
        ("hard_swish", "hs1"),
        ("conv2d", "c2"),
        ("hard_swish", "hs2"),
    ]
    _assert_same(g, folded)


def test_runs_in_the_graph_pipeline_and_before_quantization():
    assert "fold_hard_activations" in PREPARE_PASSES
    names = graph_pipeline().names()
    assert names.index("fold_hard_activations") < names.index("eliminate_dead_nodes")


def test_quantized_graph_has_one_integer_operator_per_activation():
    from compiler.quantize import quantize_graph

    x = _x()
    w = Constant((RNG.standard_normal((4, 4, 3, 3)) * 0.3).astype(np.float32))
    a = Node("conv2d", (x, w), {"padding": (1, 1, 1, 1)}, name="c1")
    h = Node("divide", (_mul(a, _gate(a)), _c(6.0)), name="hs")
    s = Node("multiply", (_div(_gate(h), _c(6.0)), h), name="gated")  # hard swish again
    g = Graph.from_outputs([x], [Node("conv2d", (s, w), {"padding": (1, 1, 1, 1)}, name="c2")])
    q = quantize_graph(g, [{"x": _random_x()} for _ in range(4)])
    ops = [n.op for n in q.nodes]
    assert ops.count("qhard_swish") == 2, ops
    assert not {"divide", "clip", "add", "multiply"} & set(ops), ops
