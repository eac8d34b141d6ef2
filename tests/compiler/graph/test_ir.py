"""The graph IR: construction infers and checks types, names the node and input at fault;
values are immutable; the printer, the verifier and the pipeline switches."""

from __future__ import annotations

import numpy as np
import pytest

from compiler.errors import DTypeError, GraphError, ShapeError
from compiler.graph import (
    Attrs,
    Constant,
    Graph,
    Group,
    Node,
    PatternKind,
    TensorType,
    Var,
    graph_pipeline,
    run_pipeline,
    to_dot,
    to_text,
    verify_graph,
)
from compiler.passes.pipeline import PassOptions


def nchw(shape, name="x"):
    return Var(name, TensorType(shape, "float32", "NCHW"))


def weight(shape, name="w", seed=0):
    return Constant(np.random.default_rng(seed).normal(size=shape).astype(np.float32), name=name)


def test_conv2d_type_inference():
    x = nchw((2, 8, 15, 17))
    y = Node(
        "conv2d",
        (x, weight((4, 2, 3, 3))),
        {"strides": (2, 1), "padding": (1, 0, 0, 2), "dilation": (1, 2), "groups": 4},
        name="c",
    )
    assert y.type == TensorType((2, 4, 7, 15), "float32", "NCHW")


def test_error_names_node_and_input():
    x = nchw((1, 8, 8, 8))
    with pytest.raises(ShapeError, match=r"node 'conv7' \(conv2d\) input 1 \(w\).*4 input"):
        Node("conv2d", (x, weight((16, 4, 3, 3))), name="conv7")
    with pytest.raises(ShapeError, match=r"node 'sum' \(add\) input 1 \(y\)"):
        Node("add", (x, nchw((1, 7, 8, 8), "y")), name="sum")
    with pytest.raises(DTypeError, match=r"node 'mix' \(add\) input 1 \(i\).*int8"):
        Node("add", (x, Var("i", TensorType((1, 8, 8, 8), "int8"))), name="mix")
    with pytest.raises(GraphError, match="unknown operator 'conv3d'"):
        Node("conv3d", (x,), name="n")
    with pytest.raises(GraphError, match=r"node 'p' \(max_pool2d\): missing attribute"):
        Node("max_pool2d", (x,), name="p")
    with pytest.raises(GraphError, match=r"unknown attribute\(s\) \['kernel'\]"):
        Node("relu", (x,), {"kernel": 3}, name="r")
    with pytest.raises(GraphError, match=r"takes 2 inputs, got 1"):
        Node("add", (x,), name="a")


def test_int8_conv_accumulates_in_int32_and_bias_dtype_checked():
    x = Var("x", TensorType((1, 16, 4, 4), "int8", "NCHW"))
    w = Constant(np.ones((16, 16, 1, 1), np.int8))
    assert Node("conv2d", (x, w)).type.dtype == "int32"
    with pytest.raises(DTypeError, match="input 2.*bias dtype float32"):
        Node("conv2d", (x, w, Constant(np.zeros(16, np.float32))), name="c")


def test_packed_conv_checks_blocks():
    x = Var("x", TensorType((1, 2, 8, 8, 1, 16), "float32", "NCHW1n16c"))
    w = Constant(np.zeros((4, 2, 3, 3, 16, 16), np.float32))
    attrs = {"data_layout": "NCHW1n16c", "kernel_layout": "OIHW16i16o", "padding": (1, 1, 1, 1)}
    assert Node("conv2d", (x, w), attrs).type.shape == (1, 4, 8, 8, 1, 16)
    with pytest.raises(ShapeError, match="NCHW1n16c needs shape"):
        Node("conv2d", (nchw((1, 32, 8, 8)), w), attrs, name="bad")


def test_values_are_immutable():
    c = Constant(np.zeros(3, np.float32))
    with pytest.raises(ValueError):
        c.value[0] = 1.0
    n = Node("relu", (nchw((1, 1, 2, 2)),))
    with pytest.raises(AttributeError):
        n.op = "exp"  # type: ignore[misc]
    a = Attrs({"axes": [0, 1]})
    assert a["axes"] == (0, 1) and hash(a) == hash(Attrs({"axes": (0, 1)}))
    with pytest.raises(GraphError, match="not a plain"):
        Attrs({"x": object()})


def test_graph_topology_is_checked():
    x = nchw((1, 4, 2, 2))
    a = Node("relu", (x,), name="a")
    b = Node("exp", (a,), name="b")
    with pytest.raises(GraphError, match=r"node 'b' \(exp\) input 0 \(a\) is a node that is not"):
        Graph((x,), (b, a), (b,))
    with pytest.raises(GraphError, match="graph input that is not declared"):
        Graph((), (a,), (a,))
    g = Graph.from_outputs((x,), (b,))
    assert [n.name for n in g.nodes] == ["a", "b"]
    assert g.users[id(a)] == [b]


def test_printer_and_dot():
    x = nchw((1, 16, 4, 4), "data")
    c = Node("conv2d", (x, weight((16, 16, 3, 3))), {"padding": (1, 1, 1, 1)}, name="conv")
    r = Node("clip", (c,), {"a_min": 0.0, "a_max": 6.0}, name="act")
    g = Graph.from_outputs((x,), (r,), name="net")
    assert to_text(g) == (
        "graph net(%data: float32[1,16,4,4]:NCHW) {\n"
        "  const %w: float32[16,16,3,3]\n"
        "  %conv = conv2d(%data, %w) padding=(1,1,1,1) : float32[1,16,4,4]:NCHW\n"
        "  %act = clip(%conv) a_max=6.0 a_min=0.0 : float32[1,16,4,4]:NCHW\n"
        "  return %act\n"
        "}\n"
    )
    dot = to_dot(run_pipeline(g))
    assert "subgraph cluster_0" in dot and '"conv" -> "act"' in dot


def test_verifier_catches_bad_groups():
    x = nchw((1, 16, 4, 4))
    c = Node("conv2d", (x, weight((16, 16, 1, 1))), name="c1")
    d = Node("conv2d", (c, weight((16, 16, 1, 1), "w2")), name="c2")
    g = Graph.from_outputs((x,), (d,))
    fused = run_pipeline(g, graph_pipeline())
    verify_graph(fused)
    both = Group(0, PatternKind.COMPLEX_OUT_FUSABLE, (c, d), c, (x,), (d,))
    with pytest.raises(GraphError, match="2 non-injective ops"):
        verify_graph(g.with_(groups=(both,), memory_plan=None))
    missing = Group(0, PatternKind.COMPLEX_OUT_FUSABLE, (c,), c, (x,), (c,))
    with pytest.raises(GraphError, match=r"node 'c2' \(conv2d\) is in no fused group"):
        verify_graph(g.with_(groups=(missing,)))


def test_pipeline_dumps_and_verifies_by_pass_name(tmp_path):
    x = nchw((1, 16, 4, 4))
    g = Graph.from_outputs((x,), (Node("relu", (Node("exp", (x,)),)),))
    seen = []
    opts = PassOptions(
        verify=True, dump=frozenset({"fuse_ops"}), on_dump=lambda n, t: seen.append(n)
    )
    run_pipeline(g, options=opts)
    assert seen == ["fuse_ops"]
    run_pipeline(g, options=PassOptions(dump=frozenset({"all"}), dump_dir=tmp_path))
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names[0] == "graph_00_input.txt" and "graph_15_plan_memory.txt" in names
    stopped = run_pipeline(g, stop_after="eliminate_dead_nodes")
    assert stopped.groups is None
    with pytest.raises(GraphError, match="no graph pass named 'fuse'"):
        run_pipeline(g, stop_after="fuse")


def test_pipeline_verify_reports_the_pass():
    x = nchw((1, 16, 4, 4))
    g = Graph.from_outputs((x,), (Node("relu", (x,)),))
    from compiler.passes.pipeline import Pass, Pipeline

    def broken(graph: Graph) -> Graph:
        return graph.with_(groups=())

    with pytest.raises(GraphError, match="after pass broken: node 'relu'"):
        run_pipeline(g, Pipeline((Pass("broken", broken),)), PassOptions(verify=True))


def test_env_switches(monkeypatch, capsys):
    monkeypatch.setenv("VTAC_DUMP_IR", "fold_constants")
    x = nchw((1, 16, 4, 4))
    run_pipeline(Graph.from_outputs((x,), (Node("relu", (x,)),)))
    assert "# ---- after fold_constants ----" in capsys.readouterr().err
