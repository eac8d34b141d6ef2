"""The int8 operators (types, errors) and the quantization pass on small graphs."""

from __future__ import annotations

import numpy as np
import pytest

from compiler.errors import DTypeError, GraphError, ShapeError
from compiler.graph import Constant, Graph, Node, TensorType, Var, evaluate
from compiler.graph.pipeline import graph_pipeline, run_pipeline
from compiler.quantize import (
    QuantizeError,
    calibrate,
    integer_violations,
    prepare_graph,
    quantize_graph,
    quantize_pipeline,
    realize,
)
from compiler.quantize.requant import MAX_MULTIPLIER

RNG = np.random.default_rng(3)


def _const(shape, scale=0.5):
    return Constant((RNG.normal(size=shape) * scale).astype(np.float32))


def _i32(values):
    return Constant(np.asarray(values, np.int32))


def test_operator_types():
    x = Var("x", TensorType((2, 3, 4, 4), "float32", "NCHW"))
    q = Node("quantize", (x,), {"scale": 0.1})
    assert (q.type.dtype, q.type.layout) == ("int8", "NCHW")
    s = Node("global_sum_pool2d", (q,))
    assert s.type == TensorType((2, 3, 1, 1), "int32", "NCHW")
    r = Node("requantize", (s, _i32([1, 1, 1]), _i32([0, 0, 0]), _i32([0, 0, 0])))
    assert r.type.dtype == "int8"
    a = Node("qadd", (q, q), {"lhs_multiplier": 1, "rhs_multiplier": 1, "shift": 1})
    assert Node("dequantize", (a,), {"scale": 0.2}).type.dtype == "float32"


def test_operator_errors_name_the_node_and_input():
    x = Var("x", TensorType((2, 3), "int32"))
    ones, zeros = _i32([1, 1, 1]), _i32([0, 0, 0])
    with pytest.raises(ShapeError, match=r"node 'rq' \(requantize\) input 1 \(multiplier\)"):
        Node("requantize", (x, _i32([1, 1]), zeros, zeros), name="rq")
    with pytest.raises(GraphError, match=r"input 2 \(shift\): entries must lie in \[0, 31\]"):
        Node("requantize", (x, ones, _i32([0, 40, 0]), zeros))
    with pytest.raises(GraphError, match=r"input 1 \(multiplier\): entries must lie"):
        Node("requantize", (x, _i32([1, 1, 70000]), zeros, zeros))
    with pytest.raises(GraphError, match=r"input 3 \(post_shift\): entries must lie in \[0, 21\]"):
        Node("requantize", (x, ones, zeros, _i32([0, 22, 0])))
    with pytest.raises(GraphError, match="takes 4 inputs, got 3"):
        Node("requantize", (x, ones, zeros))
    with pytest.raises(GraphError, match="out_min 5 is greater than out_max 0"):
        Node("requantize", (x, ones, zeros, zeros), {"out_min": 5, "out_max": 0})
    with pytest.raises(DTypeError, match=r"node 'q' \(quantize\) input 0: needs float32"):
        Node("quantize", (x,), {"scale": 1.0}, name="q")
    with pytest.raises(GraphError, match="scale must be a positive float"):
        Node("dequantize", (x,), {"scale": 0.0})
    i8 = Var("y", TensorType((2, 4), "int8"))
    with pytest.raises(ShapeError, match=r"\(qadd\) input 1: shape"):
        Node("qadd", (i8, Node("cast", (x,), {"dtype": "int8"})),
             {"lhs_multiplier": 1, "rhs_multiplier": 1, "shift": 0})  # fmt: skip


def test_quantize_and_dequantize_round_trip():
    x = Var("x", TensorType((1, 6), "float32"))
    q = Node("quantize", (x,), {"scale": 0.5})
    g = Graph.from_outputs([x], [q, Node("dequantize", (q,), {"scale": 0.5})])
    data = np.array([[-100.0, -0.75, -0.25, 0.25, 0.74, 100.0]], np.float32)
    qv, back = evaluate(g, {"x": data})
    assert qv.tolist() == [[-128, -1, 0, 1, 1, 127]]
    assert back.tolist() == [[-64.0, -0.5, 0.0, 0.5, 0.5, 63.5]]


def _residual_net(batch: int = 4) -> tuple[Graph, Var]:
    x = Var("data", TensorType((batch, 3, 8, 8), "float32", "NCHW"))
    c1 = Node("conv2d", (x, _const((8, 3, 3, 3)), _const((8,), 0.1)),
              {"padding": (1, 1, 1, 1)}, name="c1")  # fmt: skip
    r1 = Node("relu", (c1,), name="r1")
    c2 = Node("conv2d", (r1, _const((8, 8, 3, 3), 0.2)), {"padding": (1, 1, 1, 1)}, name="c2")
    add = Node("add", (c2, r1), name="add")
    r2 = Node("relu", (add,), name="r2")
    pool = Node("max_pool2d", (r2,), {"pool_size": (2, 2), "strides": (2, 2)}, name="mp")
    gap = Node("global_avg_pool2d", (pool,), name="gap")
    flat = Node("reshape", (gap,), {"newshape": (batch, 8)}, name="flat")
    fc = Node("dense", (flat, _const((5, 8)), _const((5,), 0.1)), name="fc")
    return Graph.from_outputs([x], [fc], name="resid"), x


@pytest.mark.parametrize("requant", ["multiplier", "shift"])
def test_small_residual_network_is_integer_only_and_close(requant):
    g, _ = _residual_net()
    feeds = [{"data": RNG.normal(size=(4, 3, 8, 8)).astype(np.float32)} for _ in range(3)]
    q = quantize_graph(g, feeds, "minmax", requant=requant)
    ops = [n.op for n in q.nodes]
    assert ops[0] == "quantize" and ops[-1] == "dequantize"
    assert ops.count("qadd") == 1 and "relu" not in ops  # both relus are fused
    assert integer_violations(q) == []
    test = {"data": RNG.normal(size=(4, 3, 8, 8)).astype(np.float32)}
    ref, got = evaluate(g, test)[0], evaluate(q, test)[0]
    cos = (ref * got).sum() / np.linalg.norm(ref) / np.linalg.norm(got)
    assert cos > 0.99
    # the integer part is deterministic, bit for bit
    assert np.array_equal(got, evaluate(q, test)[0])


def test_shift_mode_requantizes_by_shifts_alone():
    g, _ = _residual_net()
    feed = {"data": RNG.normal(size=(4, 3, 8, 8)).astype(np.float32)}
    q = quantize_graph(g, feed, "minmax", requant="shift")
    for n in q.nodes:
        if n.op == "requantize":
            assert set(n.inputs[1].value.tolist()) <= {0, 1}
            assert set(n.inputs[3].value.tolist()) == {0}


def test_unquantizable_operators_stay_float_between_dequantize_and_quantize():
    x = Var("data", TensorType((2, 8), "float32"))
    d1 = Node("dense", (x, _const((8, 8))), name="d1")
    sm = Node("softmax", (d1,), {"axis": 1}, name="sm")
    d2 = Node("dense", (sm, _const((4, 8))), name="d2")
    g = Graph.from_outputs([x], [d2])
    feed = {"data": RNG.normal(size=(2, 8)).astype(np.float32)}
    q = quantize_graph(g, feed, "minmax")
    soft = next(n for n in q.nodes if n.op == "softmax")
    assert soft.inputs[0].op == "dequantize"
    users = [n for n in q.nodes if any(v is soft for v in n.inputs)]
    assert [u.op for u in users] == ["quantize"]
    assert integer_violations(q) == [soft]
    assert np.abs(evaluate(q, feed)[0] - evaluate(g, feed)[0]).max() < 0.05


def test_graph_outputs_and_shared_values_are_not_fused():
    x = Var("data", TensorType((2, 8), "float32"))
    d = Node("dense", (x, _const((8, 8))), name="d")
    r = Node("relu", (d,), name="r")
    g = Graph.from_outputs([x], [d, r])  # the dense output is read twice
    feed = {"data": RNG.normal(size=(2, 8)).astype(np.float32)}
    q = quantize_graph(g, feed, "minmax")
    assert [n.op for n in q.nodes].count("relu") == 1
    ref, got = evaluate(g, feed), evaluate(q, feed)
    for a, b in zip(ref, got, strict=True):
        assert np.abs(a - b).max() < 0.1 * np.abs(a).max()


def test_quantize_pipeline_runs_by_name():
    g, _ = _residual_net()
    feed = {"data": RNG.normal(size=(4, 3, 8, 8)).astype(np.float32)}
    pipe = quantize_pipeline(feed, "minmax")
    q = run_pipeline(g, pipe)
    assert integer_violations(q) == []


def test_bad_requant_mode_is_refused():
    g, _ = _residual_net()
    feed = {"data": RNG.normal(size=(4, 3, 8, 8)).astype(np.float32)}
    with pytest.raises(QuantizeError, match="unknown requantization 'float'"):
        quantize_graph(g, feed, requant="float")


@pytest.mark.parametrize("block_c", [None, 4])
def test_quantized_graph_through_the_rest_of_the_graph_pipeline_is_bit_exact(block_c):
    g, _ = _residual_net()
    feed = {"data": RNG.normal(size=(4, 3, 8, 8)).astype(np.float32)}
    q = quantize_graph(g, feed, "minmax")
    fused = run_pipeline(q, graph_pipeline(block_c=block_c))
    assert evaluate(fused, feed)[0].tobytes() == evaluate(q, feed)[0].tobytes()
    if block_c is None:
        groups = [[n.op for n in grp.nodes] for grp in fused.groups]
        assert ["conv2d", "requantize", "qadd"] in groups  # the accelerator's epilogue shape


def test_a_scale_beyond_the_multiplier_saturates_as_the_real_scale_does():
    g, _ = _residual_net()
    prepared = prepare_graph(g)
    feed = {"data": RNG.normal(size=(4, 3, 8, 8)).astype(np.float32)}
    th = calibrate(prepared, feed, "minmax")
    conv = next(n for n in prepared.nodes if n.name == "c2")
    th[id(conv)] = 1e-9  # an output scale 10**9 times too fine: every nonzero sum saturates
    q = realize(prepared, th)
    rq = next(n for n in q.nodes if n.op == "requantize" and n.inputs[0].name == "c2")
    assert rq.inputs[1].value.max() <= MAX_MULTIPLIER
    values = evaluate(Graph.from_outputs(q.inputs, [rq]), feed)[0]
    lo, hi = rq.attrs["out_min"], rq.attrs["out_max"]
    assert set(np.unique(values).tolist()) <= {lo, 0, hi}


def test_a_value_never_seen_nonzero_still_quantizes():
    x = Var("data", TensorType((2, 4), "float32"))
    b = Constant(np.full(4, -100.0, np.float32))
    d = Node("dense", (x, _const((4, 4)), b), name="d")
    g = Graph.from_outputs([x], [Node("relu", (d,), name="r")])
    feed = {"data": RNG.normal(size=(2, 4)).astype(np.float32)}
    q = quantize_graph(g, feed, "minmax")
    assert evaluate(q, feed)[0].tolist() == [[0.0] * 4] * 2


def _clip_net(batch: int = 2) -> Graph:
    # a relu6 after each conv (fused), an add with a clip after it (fused into the qadd), and a
    # clip after a max pool (int8 at the pool's scale)
    x = Var("data", TensorType((batch, 4, 8, 8), "float32", "NCHW"))
    c1 = Node("conv2d", (x, _const((8, 4, 3, 3)), _const((8,), 0.1)),
              {"padding": (1, 1, 1, 1)}, name="c1")  # fmt: skip
    r1 = Node("clip", (c1,), {"a_min": 0.0, "a_max": 6.0}, name="relu6")
    c2 = Node("conv2d", (r1, _const((8, 8, 3, 3), 0.2)), {"padding": (1, 1, 1, 1)}, name="c2")
    add = Node("add", (c2, r1), name="add")
    r2 = Node("clip", (add,), {"a_min": -0.5, "a_max": 0.75}, name="clip_add")
    pool = Node("max_pool2d", (r2,), {"pool_size": (2, 2), "strides": (2, 2)}, name="mp")
    r3 = Node("clip", (pool,), {"a_min": -0.25, "a_max": 0.5}, name="clip_pool")
    return Graph.from_outputs([x], [r3], name="clips")


def test_clips_are_quantized_fused_or_on_int8():
    g = _clip_net()
    feeds = [{"data": (RNG.normal(size=(2, 4, 8, 8)) * 2).astype(np.float32)} for _ in range(3)]
    q = quantize_graph(g, feeds, "minmax")
    assert integer_violations(q) == []
    by_name = {n.name: n for n in q.nodes}
    rq = by_name["relu6.requantize"]
    assert rq.attrs["out_min"] == 0 and rq.attrs["out_max"] <= 127
    qadd = next(n for n in q.nodes if n.op == "qadd")
    scale = next(n for n in q.nodes if n.op == "dequantize").attrs["scale"]
    # the add's clip fused: its bounds in units of the clip's own output scale
    assert qadd.attrs["out_min"] < 0 < qadd.attrs["out_max"] <= 127
    (clip,) = [n for n in q.nodes if n.op == "clip"]
    assert clip.inputs[0].op == "max_pool2d" and clip.type.dtype == "int8"
    assert (clip.attrs["a_min"], clip.attrs["a_max"]) == (
        int(np.floor(-0.25 / scale + 0.5)),
        int(np.floor(0.5 / scale + 0.5)),
    )
    test = {"data": (RNG.normal(size=(2, 4, 8, 8)) * 2).astype(np.float32)}
    ref, got = evaluate(g, test)[0], evaluate(q, test)[0]
    assert got.min() >= -0.25 - scale and got.max() <= 0.5 + scale
    assert np.abs(ref - got).max() <= 0.1
