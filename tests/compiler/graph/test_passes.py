"""Each graph pass alone, on small hand-built graphs: what it rewrites, what it leaves, and that
the reference executor gives the same results before and after."""

from __future__ import annotations

import numpy as np
import pytest

from compiler.errors import GraphError
from compiler.graph import (
    Constant,
    Graph,
    Node,
    PatternKind,
    TensorType,
    Var,
    evaluate,
    graph_pipeline,
    run_pipeline,
    verify_graph,
)
from compiler.graph.memory import Allocation, MemoryPlan, check_plan, plan_memory
from compiler.graph.passes import (
    eliminate_dead_nodes,
    fold_batch_norm,
    fold_bias_add,
    fold_constants,
    fuse_ops,
    pack_layout,
)
from compiler.passes.pipeline import PassOptions

RNG = np.random.default_rng(0)
VERIFY = PassOptions(verify=True, dump=frozenset())


def const(*shape, name="", low=-1.0, high=1.0):
    return Constant(RNG.uniform(low, high, size=shape).astype(np.float32), name=name)


def nchw(shape, name="x"):
    return Var(name, TensorType(shape, "float32", "NCHW"))


def feed(graph):
    return {v.name: RNG.normal(size=v.type.shape).astype(v.type.dtype) for v in graph.inputs}


def assert_same_results(before, after, feeds=None, atol=1e-5):
    verify_graph(after)
    feeds = feeds or feed(before)
    for a, b in zip(evaluate(before, feeds), evaluate(after, feeds), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=atol)


def conv(x, cout, k=3, name="", bias=True, **attrs):
    cin = x.type.shape[1] // attrs.get("groups", 1)
    ins = [x, const(cout, cin, k, k, name=f"{name}.w")]
    if bias:
        ins.append(const(cout, name=f"{name}.b"))
    attrs.setdefault("padding", (k // 2,) * 4)
    return Node("conv2d", tuple(ins), attrs, name=name)


def bn(x, name):
    c = x.type.shape[1]
    params = [const(c), const(c), const(c), const(c, low=0.2, high=2.0)]
    return Node("batch_norm", (x, *params), {"epsilon": 1e-3}, name=name)


# ---------------------------------------------------------------- fold_constants


def test_fold_constants_evaluates_constant_subgraphs():
    x = nchw((1, 4, 3, 3))
    scale = Node("exp", (const(4, 1, 1),), name="scale")
    shift = Node("add", (Node("negative", (const(4, 1, 1),)), const(1)), name="shift")
    y = Node("add", (Node("multiply", (x, scale), name="mul"), shift), name="y")
    g = Graph.from_outputs([x], [y])
    folded = fold_constants(g)
    assert [n.op for n in folded.nodes] == ["multiply", "add"]
    assert folded.nodes[0].inputs[1].name == "scale"
    assert_same_results(g, folded)


def test_fold_constants_leaves_a_graph_without_constants_alone():
    x = nchw((1, 4, 3, 3))
    g = Graph.from_outputs([x], [Node("relu", (x,))])
    assert fold_constants(g).nodes == g.nodes


# ---------------------------------------------------------------- fold_batch_norm


@pytest.mark.parametrize("bias", [True, False])
def test_batch_norm_folds_into_the_conv(bias):
    x = nchw((2, 3, 6, 6))
    y = Node("relu", (bn(conv(x, 8, name="c", bias=bias), "bn"),), name="r")
    g = Graph.from_outputs([x], [y])
    folded = eliminate_dead_nodes(fold_batch_norm(g))
    assert [n.op for n in folded.nodes] == ["conv2d", "relu"]
    assert len(folded.nodes[0].inputs) == 3
    assert_same_results(g, folded)


def test_batch_norm_after_a_bias_add_folds_into_the_conv():
    # Paddle's export: conv2d, then its bias as an add, then a batch norm
    x = nchw((1, 3, 5, 5))
    b = Constant(np.arange(8, dtype=np.float32).reshape(1, 8, 1, 1), name="b")
    y = Node("relu", (bn(Node("add", (conv(x, 8, name="c"), b), name="bias"), "bn"),), name="r")
    g = Graph.from_outputs([x], [y])
    folded = eliminate_dead_nodes(fold_batch_norm(g))
    assert [n.op for n in folded.nodes] == ["conv2d", "relu"]
    assert_same_results(g, folded)


def test_batch_norm_alone_becomes_multiply_add():
    x = nchw((2, 5, 4, 4))
    c = conv(x, 5, name="c")
    # the conv has a second reader: folding into it would change that reader's value
    y = Node("add", (bn(c, "bn"), c), name="y")
    z = bn(Node("relu", (x,), name="r"), "bn2")
    g = Graph.from_outputs([x], [y, z])
    folded = eliminate_dead_nodes(fold_batch_norm(g))
    assert [n.op for n in folded.nodes].count("batch_norm") == 0
    assert [n.op for n in folded.nodes].count("multiply") == 2
    assert_same_results(g, folded)


def test_batch_norm_with_non_positive_variance_is_refused():
    x = nchw((1, 2, 3, 3))
    var = Constant(np.array([1.0, -2.0], np.float32))
    y = Node("batch_norm", (x, const(2), const(2), const(2), var), name="bn")
    with pytest.raises(GraphError, match=r"node 'bn' \(batch_norm\): variance \+ epsilon is "
                       r"-1.99.* at channel 1"):  # fmt: skip
        fold_batch_norm(Graph.from_outputs([x], [y]))


def test_batch_norm_with_non_constant_parameters_stays():
    x = nchw((1, 2, 3, 3))
    s = Var("s", TensorType((2,), "float32"))
    y = Node("batch_norm", (x, s, const(2), const(2), const(2, low=0.5)), name="bn")
    g = Graph.from_outputs([x, s], [y])
    assert fold_batch_norm(g).nodes == g.nodes


# ---------------------------------------------------------------- fold_bias_add


@pytest.mark.parametrize("shape", [(1, 6, 1, 1), (6, 1, 1), (1,), ()])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("first", [True, False])
def test_a_per_channel_add_after_a_conv_becomes_its_bias(shape, bias, first):
    # Paddle's export of a convolution with a bias: Add(Conv(x, w), Reshape(b, [1, K, 1, 1]))
    x = nchw((2, 3, 5, 5))
    c, b = conv(x, 6, name="c", bias=bias), const(*shape, name="b")
    y = Node("relu", (Node("add", (c, b) if first else (b, c), name="a"),), name="r")
    g = Graph.from_outputs([x], [y])
    folded = eliminate_dead_nodes(fold_bias_add(g))
    assert [n.op for n in folded.nodes] == ["conv2d", "relu"]
    assert folded.nodes[0].inputs[2].type.shape == (6,)
    assert_same_results(g, folded)


def test_a_per_channel_add_after_a_dense_layer_becomes_its_bias():
    x = Var("x", TensorType((3, 8), "float32"))
    d = Node("dense", (x, const(5, 8)), name="d")
    g = Graph.from_outputs([x], [Node("add", (d, const(1, 5)), name="a")])
    folded = eliminate_dead_nodes(fold_bias_add(g))
    assert [n.op for n in folded.nodes] == ["dense"] and len(folded.nodes[0].inputs) == 3
    assert_same_results(g, folded)


def test_adds_that_are_not_a_bias_stay():
    x = nchw((1, 4, 3, 3))
    c = conv(x, 4, name="c")
    cases = [
        Node("add", (conv(x, 4, name="s"), const(1, 1, 3, 3)), name="spatial"),  # per position
        Node("add", (conv(x, 4, name="v"), Node("relu", (x,))), name="activation"),
        Node("add", (conv(x, 1, name="w"), const(1, 4, 1, 1)), name="broadcast"),  # widens
    ]
    # the conv read by another node keeps its own value (hard-swish's x + 3 is such an add)
    shared = Node("multiply", (Node("add", (c, const(1, 4, 1, 1)), name="x3"), c), name="m")
    for y in [*cases, shared]:
        g = Graph.from_outputs([x], [y])
        assert [n.op for n in fold_bias_add(g).nodes] == [n.op for n in g.nodes], y.name
    out = Graph.from_outputs([x], [c, Node("add", (c, const(4, 1, 1)), name="o")])
    assert fold_bias_add(out).nodes == out.nodes  # the conv is a graph output


# ---------------------------------------------------------------- eliminate_dead_nodes


def test_dead_nodes_are_dropped_and_order_kept():
    x = nchw((1, 2, 3, 3))
    a = Node("relu", (x,), name="a")
    dead1 = Node("exp", (a,), name="dead1")
    dead2 = Node("sigmoid", (dead1,), name="dead2")
    b = Node("negative", (a,), name="b")
    g = Graph((x,), (a, dead1, b, dead2), (b,))
    out = eliminate_dead_nodes(g)
    assert [n.name for n in out.nodes] == ["a", "b"]
    assert eliminate_dead_nodes(out) is out


# ---------------------------------------------------------------- fuse_ops


def groups_of(graph):
    return [(str(g.pattern), [n.name for n in g.nodes]) for g in graph.groups]


def test_fusion_conv_bias_activation_and_residual():
    x = nchw((1, 8, 6, 6))
    c1 = conv(x, 8, name="c1", bias=False)
    a1 = Node("add", (c1, const(8, 1, 1, name="bias")), name="a1")
    r1 = Node("relu", (a1,), name="r1")
    c2 = conv(r1, 8, name="c2")
    add = Node("add", (c2, x), name="add")
    r2 = Node("relu", (add,), name="r2")
    g = fuse_ops(Graph.from_outputs([x], [r2]))
    assert groups_of(g) == [
        ("complex-out-fusable", ["c1", "a1", "r1"]),
        ("complex-out-fusable", ["c2", "add", "r2"]),
    ]
    second = g.groups[1]
    assert second.anchor.name == "c2" and [v.name for v in second.inputs][0] == "r1"
    assert x in second.inputs and second.outputs == (r2,)
    verify_graph(g)


def test_fusion_stops_at_a_value_with_two_readers_and_at_opaque_ops():
    x = nchw((1, 8, 4, 4))
    c = conv(x, 8, name="c")
    r = Node("relu", (c,), name="r")
    s = Node("sigmoid", (r,), name="s")
    t = Node("exp", (r,), name="t")
    sm = Node("softmax", (Node("add", (s, t), name="st"),), {"axis": 1}, name="sm")
    after = Node("negative", (sm,), name="neg")
    g = fuse_ops(Graph.from_outputs([x], [after]))
    assert groups_of(g) == [
        ("complex-out-fusable", ["c", "r"]),
        ("injective", ["s", "st"]),
        ("injective", ["t"]),
        ("opaque", ["sm"]),
        ("injective", ["neg"]),
    ] or groups_of(g) == [
        ("complex-out-fusable", ["c", "r"]),
        ("injective", ["t"]),
        ("injective", ["s", "st"]),
        ("opaque", ["sm"]),
        ("injective", ["neg"]),
    ]
    verify_graph(g)


def test_a_diamond_that_closes_on_the_tail_fuses_silu_and_hard_swish():
    # SiLU: c -> sigmoid -> multiply(c, sigmoid); hard-swish: h -> add 3 -> clip -> multiply(h,
    # clip) -> divide by 6; each closes on its tail, so the group keeps one output
    x = nchw((1, 8, 6, 6))
    c = conv(x, 8, name="c")
    silu = Node("multiply", (c, Node("sigmoid", (c,), name="sg")), name="silu")
    h = conv(silu, 8, name="h")
    clip = Node("clip", (Node("add", (h, const(1, name="three")), name="p3"),),
                {"a_min": 0.0, "a_max": 6.0}, name="r6")  # fmt: skip
    hs = Node("divide", (Node("multiply", (h, clip), name="hm"), const(1, name="six")), name="hs")
    g = fuse_ops(Graph.from_outputs([x], [hs]))
    assert groups_of(g) == [
        ("complex-out-fusable", ["c", "sg", "silu"]),
        ("complex-out-fusable", ["h", "p3", "r6", "hm", "hs"]),
    ]
    assert [grp.outputs for grp in g.groups] == [(silu,), (hs,)]
    verify_graph(g)


def test_a_diamond_whose_chain_escapes_or_whose_end_reads_more_is_not_fused():
    x = nchw((1, 8, 6, 6))
    # the end of the diamond may be followed by ops reading other values, as a tail may
    c = conv(x, 8, name="c")
    s = Node("sigmoid", (c,), name="s")
    end = Node("add", (Node("multiply", (c, s), name="m"), x), name="end")
    assert groups_of(fuse_ops(Graph.from_outputs([x], [end]))) == [
        ("complex-out-fusable", ["c", "s", "m", "end"])
    ]
    # the chain's sigmoid is also a graph output: fusing it would give the group two outputs
    s2 = Node("sigmoid", (c,), name="s2")
    m2 = Node("multiply", (c, s2), name="m2")
    assert groups_of(fuse_ops(Graph.from_outputs([x], [m2, s2]))) == [
        ("complex-out-fusable", ["c"]),
        ("injective", ["s2"]),
        ("injective", ["m2"]),
    ]
    # the tail's readers do not close on it: the sigmoid meets another value first
    s3 = Node("sigmoid", (c,), name="s3")
    m3 = Node("add", (Node("multiply", (c, x), name="cx"), s3), name="m3")
    g = fuse_ops(Graph.from_outputs([x], [m3]))
    assert all(len(grp.outputs) == 1 for grp in g.groups)
    assert ["c"] in [nodes for _, nodes in groups_of(g)]
    verify_graph(g)


@pytest.mark.parametrize("target", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_a_fused_silu_runs_as_onnxruntime_does(target):
    import onnxruntime as ort
    from onnx import helper

    from runtime.session import InferenceSession
    from tests.compiler.frontend.helpers import make_model

    rng = np.random.default_rng(0)
    x = rng.normal(size=(1, 16, 6, 6)).astype(np.float32) * 4
    w = rng.normal(size=(16, 16, 3, 3)).astype(np.float32) * 0.2
    b = rng.normal(size=16).astype(np.float32)
    nodes = [  # conv -> SiLU -> conv, as in YOLOv8's blocks
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Sigmoid", ["c"], ["s"]),
        helper.make_node("Mul", ["c", "s"], ["m"]),
        helper.make_node("Conv", ["m", "w", "b"], ["y"], pads=[1, 1, 1, 1]),
    ]
    model = make_model(nodes, {"x": x}, ["y"], {"w": w, "b": b}).SerializeToString()
    sess = InferenceSession(model, target=target)
    (got,) = sess.run(None, {"x": x})
    (want,) = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    fused = [g.ops for g in sess.profile().groups if "sigmoid" in g.ops]
    assert len(fused) == 1 and {"conv2d", "sigmoid", "multiply"} <= set(fused[0])


def test_reduction_joins_injective_producers_but_not_an_anchor_group():
    x = nchw((1, 8, 8, 8))
    p = Node("max_pool2d", (Node("relu", (x,), name="r"),), {"pool_size": (2, 2),
             "strides": (2, 2)}, name="p")  # fmt: skip
    q = Node("global_avg_pool2d", (Node("relu", (conv(p, 8, name="c"),), name="cr"),), name="q")
    flat = Node("reshape", (q,), {"newshape": (1, 8)}, name="flat")
    g = fuse_ops(Graph.from_outputs([x], [flat]))
    assert groups_of(g) == [
        ("reduction", ["r", "p"]),
        ("complex-out-fusable", ["c", "cr"]),
        ("reduction", ["q", "flat"]),
    ]
    assert g.groups[0].anchor.name == "p"
    verify_graph(g)


def test_a_graph_output_is_not_fused_over():
    x = nchw((1, 8, 4, 4))
    c = conv(x, 8, name="c")
    r = Node("relu", (c,), name="r")
    g = fuse_ops(Graph.from_outputs([x], [c, r]))
    assert groups_of(g) == [("complex-out-fusable", ["c"]), ("injective", ["r"])]


def test_groups_come_in_dependency_order():
    # the add is fused into the first conv's group, which must then run after the second conv
    x = nchw((1, 8, 4, 4))
    c1 = conv(x, 8, name="c1")
    c2 = conv(x, 8, name="c2")
    add = Node("add", (c1, c2), name="add")
    g = fuse_ops(Graph((x,), (c1, c2, add), (add,)))
    assert groups_of(g) == [("complex-out-fusable", ["c2"]), ("complex-out-fusable", ["c1", "add"])]
    verify_graph(g)
    assert_same_results(Graph((x,), (c1, c2, add), (add,)), g)


# ---------------------------------------------------------------- pack_layout


def packed_pipeline_graph(graph, block_c=16):
    return run_pipeline(graph, graph_pipeline(block_c=block_c), VERIFY)


def test_pack_layout_packs_convs_and_their_neighbours():
    x = nchw((1, 3, 8, 8))
    c1 = Node("relu", (conv(x, 16, name="c1"),), name="r1")  # 3 channels in: one block of 3
    c2 = conv(c1, 32, name="c2", strides=(2, 2))
    # after a relu: a per-channel constant fold_affine leaves for the packing to pre-pack
    r2 = Node("relu", (c2,), name="r2")
    m = Node("multiply", (r2, const(32, 1, 1, name="scale")), name="m")
    p = Node("max_pool2d", (m,), {"pool_size": (2, 2), "strides": (2, 2)}, name="p")
    cat = Node("concat", (p, Node("relu", (p,), name="rp")), {"axis": 1}, name="cat")
    dw = conv(cat, 64, name="dw", groups=64)  # depthwise: packed, one channel per group
    gap = Node("global_avg_pool2d", (dw,), name="gap")
    g = Graph.from_outputs([x], [gap])
    packed = pack_layout(g, block_c=16)
    verify_graph(packed)
    ops = {n.name: n for n in packed.nodes}
    assert ops["c1.conv"].attrs["data_layout"] == "NCHW1n3c" and ops["c1"].op == "add"
    assert ops["c1.conv"].attrs["kernel_layout"] == "OIHW3i16o"
    assert ops["c1.conv"].type.layout == "NCHW1n16c"
    assert "c1.pad_channels" not in ops
    assert ops["p"].attrs["layout"] == "NCHW1n16c"
    assert ops["cat"].type.layout == "NCHW1n16c"
    assert ops["dw.conv"].attrs["data_layout"] == "NCHW1n16c" and ops["dw"].op == "add"
    assert ops["dw.conv"].attrs["kernel_layout"] == "OIHW1i16o"
    assert ops["gap"].attrs["layout"] == "NCHW1n16c"
    assert_same_results(g, packed)
    full = packed_pipeline_graph(g)
    # after constant folding only activations are transformed: once into the packed region
    # (as one block of the 3 input channels), once out of it
    boundaries = [
        (n.attrs["src_layout"], n.attrs["dst_layout"])
        for n in full.nodes
        if n.op == "layout_transform"
    ]
    assert boundaries == [("NCHW", "NCHW1n3c"), ("NCHW1n16c", "NCHW")]
    consts = {c.name: c for c in full.constants()}
    assert consts["scale.to_NCHW1n16c"].type.shape == (1, 2, 1, 1, 1, 16)
    assert consts["c2.w.packed"].type.shape == (2, 1, 3, 3, 16, 16)
    assert consts["c1.w.packed"].type.shape == (1, 1, 3, 3, 3, 16)
    assert_same_results(g, full)


def test_pack_layout_slices_whole_channel_blocks_and_resizes_packed():
    """YOLOv8's C2f Split and its FPN's nearest upsampling stay in the packed layout: a slice
    of whole channel blocks (any rows and columns) and a resize of the rows and columns run on
    the blocks, with no transform to NCHW between the convolutions."""
    x = nchw((1, 8, 6, 6))
    c1 = conv(x, 48, name="c1")
    half = _slice(c1, 16, 48, name="half")  # channels 16..47: whole blocks
    c2 = conv(half, 16, name="c2")
    rows = _slice(c2, 0, 16, rows=(0, 6, 2), name="rows")  # every other row
    up = Node("resize", (c2,), {"sizes": (1, 16, 12, 12), "scales": (1.0, 1.0, 2.0, 2.0),
                                "method": "nearest", "coordinate_transformation_mode":
                                "asymmetric", "nearest_mode": "floor"}, name="up")  # fmt: skip
    odd = _slice(c1, 8, 24, name="odd")  # not whole blocks: read in NCHW
    cat = Node("concat", (up, conv(up, 16, name="c3")), {"axis": 1}, name="cat")
    g = Graph.from_outputs([x], [cat, rows, conv(odd, 16, name="c4")])
    packed = pack_layout(g, block_c=16)
    verify_graph(packed)
    ops = {n.name: n for n in packed.nodes}
    assert ops["half"].type.layout == ops["up"].type.layout == ops["rows"].type.layout
    assert ops["half"].type.layout == "NCHW1n16c" and ops["half"].type.shape == (1, 2, 6, 6, 1, 16)
    assert ops["up"].type.shape == (1, 1, 12, 12, 1, 16)
    assert ops["cat"].type.layout == "NCHW1n16c"
    assert ops["odd"].inputs[0].op == "layout_transform"  # channels 8..23 are not blocks
    assert_same_results(g, packed)
    assert_same_results(g, packed_pipeline_graph(g))


def _slice(x, c0, c1, rows=None, name=""):
    n, _, h, w = x.type.shape
    r0, r1, rs = rows or (0, h, 1)
    attrs = {"begin": (0, c0, r0, 0), "end": (n, c1, r1, w), "strides": (1, 1, rs, 1)}
    return Node("strided_slice", (x,), attrs, name=name)


def test_pack_layout_pads_input_channels_that_do_not_divide_a_block():
    x = nchw((1, 20, 6, 6))
    c = Node("relu", (conv(x, 16, name="c"),), name="r")  # 20 = 16 + 4: padded to 32
    g = Graph.from_outputs([x], [c])
    packed = pack_layout(g, block_c=16)
    verify_graph(packed)
    ops = {n.name: n for n in packed.nodes}
    assert ops["c.pad_channels"].attrs["pad_width"][1] == (0, 12)
    assert ops["c.conv"].attrs["data_layout"] == "NCHW1n16c"
    assert ops["c.conv"].attrs["kernel_layout"] == "OIHW16i16o"
    assert_same_results(g, packed)
    assert_same_results(g, packed_pipeline_graph(g))


def test_pack_layout_keeps_indivisible_and_unpackable_ops_in_nchw():
    x = nchw((1, 8, 4, 4))
    c = conv(x, 12, name="c")  # 12 output channels do not divide into 16
    d = Node("dense", (Node("reshape", (c,), {"newshape": (1, 192)}, name="f"),
                       const(10, 192)), name="d")  # fmt: skip
    g = Graph.from_outputs([x], [d])
    packed = pack_layout(g, block_c=16)
    assert not any(n.op == "layout_transform" for n in packed.nodes)
    assert_same_results(g, packed)


@pytest.mark.parametrize("block_c,block_n", [(4, 1), (8, 2)])
def test_pack_layout_other_blocks(block_c, block_n):
    x = nchw((2, 8, 5, 5))
    y = Node("relu", (Node("add", (conv(x, 8, name="c"), x), name="a"),), name="r")
    g = Graph.from_outputs([x], [y])
    out = run_pipeline(g, graph_pipeline(block_c=block_c, block_n=block_n), VERIFY)
    layout = f"NCHW{block_n}n{block_c}c"
    assert any(n.attrs.get("data_layout") == layout for n in out.nodes if n.op == "conv2d")
    assert_same_results(g, out)


# ---------------------------------------------------------------- plan_memory


def test_memory_plan_reuses_dead_buffers():
    x = nchw((1, 16, 8, 8))
    a = conv(x, 16, name="a")
    b = conv(a, 16, name="b")
    c = conv(b, 16, name="c")
    d = Node("add", (conv(c, 16, name="d"), a), name="res")  # keeps a live to the end
    g = plan_memory(fuse_ops(Graph.from_outputs([x], [d])))
    plan = g.memory_plan
    size = 16 * 8 * 8 * 4
    assert plan.naive_bytes == 4 * size
    assert plan.peak_bytes == 3 * size
    offsets = {a.node.name: a.offset for a in plan.allocations}
    assert offsets["c"] == offsets["a"] + size or offsets["c"] != offsets["b"]
    check_plan(g, plan)


def test_check_plan_catches_overlap():
    x = nchw((1, 16, 8, 8))
    a = Node("relu", (x,), name="a")
    b = Node("exp", (a,), name="b")
    g = Graph.from_outputs([x], [b])
    bad = MemoryPlan(
        (Allocation(a, 0, a.type.nbytes, 0, 1), Allocation(b, 64, b.type.nbytes, 1, 2)),
        peak_bytes=2 * a.type.nbytes, naive_bytes=2 * a.type.nbytes,
    )  # fmt: skip
    with pytest.raises(GraphError, match="'a' and 'b' are live at the same time"):
        check_plan(g, bad)


# ---------------------------------------------------------------- random graphs, whole pipeline


def random_graph(seed):
    rng = np.random.default_rng(seed)
    x = nchw((1, int(rng.choice([3, 8, 16])), 8, 8))
    values = [x]
    for k in range(int(rng.integers(4, 10))):
        v = values[int(rng.integers(0, len(values)))]
        choice = int(rng.integers(0, 7))
        c = v.type.shape[1]
        if choice == 0:
            v = conv(v, int(rng.choice([8, 16, 32])), k=int(rng.choice([1, 3])), name=f"c{k}",
                     bias=bool(rng.integers(0, 2)))  # fmt: skip
        elif choice == 1:
            v = bn(v, f"bn{k}")
        elif choice == 2:
            v = Node(str(rng.choice(["relu", "sigmoid", "hard_swish"])), (v,), name=f"u{k}")
        elif choice == 3:
            same = [w for w in values if w.type.shape == v.type.shape and w is not v]
            other = same[0] if same else const(c, 1, 1, name=f"k{k}")
            v = Node("add", (v, other), name=f"a{k}")
        elif choice == 4 and v.type.shape[2] >= 4:
            v = Node("max_pool2d", (v,), {"pool_size": (2, 2), "strides": (2, 2)}, name=f"p{k}")
        elif choice == 5:
            v = Node("concat", (v, Node("relu", (v,), name=f"r{k}")), {"axis": 1}, name=f"cat{k}")
        else:
            v = Node("clip", (v,), {"a_min": -0.5, "a_max": 0.5}, name=f"clip{k}")
        values.append(v)
    outs = [values[-1]] + ([values[len(values) // 2]] if len(values) > 3 else [])
    return Graph.from_outputs([x], outs, name=f"random{seed}")


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("block_c", [None, 8, 16])
def test_pipeline_preserves_results_on_random_graphs(seed, block_c):
    g = random_graph(seed)
    out = run_pipeline(g, graph_pipeline(block_c=block_c), VERIFY)
    assert all(n.op != "batch_norm" for n in out.nodes)
    assert out.memory_plan.peak_bytes <= out.memory_plan.naive_bytes
    for grp in out.groups:  # layout conversions only at group boundaries
        assert all(n.op != "layout_transform" for n in grp.nodes[:-1]), grp.gid
    assert_same_results(g, out, atol=1e-4)


def test_fused_groups_have_their_pattern():
    g = run_pipeline(random_graph(3), graph_pipeline(block_c=16), VERIFY)
    for grp in g.groups:
        kinds = {n.op for n in grp.nodes if n is not grp.anchor}
        if grp.anchor is None:
            assert grp.pattern is PatternKind.INJECTIVE
        assert all(k not in ("conv2d", "dense", "softmax") for k in kinds)


def test_pack_layout_depthwise_packs_only_whole_blocks():
    # 24 channels do not divide into blocks of 16: the depthwise conv stays NCHW; 32 do, and
    # the packed one computes what the NCHW graph does (stride 2, a 5x5 window, bias)
    for c, layout in ((24, "NCHW"), (32, "NCHW1n16c")):
        x = nchw((1, c, 9, 9))
        dw = conv(x, c, k=5, name="dw", groups=c, strides=(2, 2))
        g = Graph.from_outputs([x], [Node("relu", (dw,), name="r")])
        packed = pack_layout(g, block_c=16)
        verify_graph(packed)
        convs = [n for n in packed.nodes if n.op == "conv2d"]
        assert [n.attrs["data_layout"] for n in convs] == [layout]
        assert_same_results(g, packed)
        assert_same_results(g, packed_pipeline_graph(g))


def test_packed_grouped_conv_is_refused_by_type_inference():
    x = Var("x", TensorType((1, 2, 8, 8, 1, 16), "float32", "NCHW1n16c"))
    w = Constant(np.ones((2, 1, 3, 3, 1, 16), np.float32), name="w")
    with pytest.raises(GraphError, match="groups=2"):
        Node("conv2d", (x, w), {"groups": 2, "data_layout": "NCHW1n16c",
                                "kernel_layout": "OIHW1i16o"}, name="g")  # fmt: skip


def test_pack_layout_narrow_output_blocks():
    # 24 output channels fill half blocks: packed with blocks of 8 out, transformed to NCHW at
    # once (bias added there); 20 fill neither and stay NCHW
    x = nchw((1, 32, 7, 7))
    for o, bias, layout in ((24, True, "OIHW16i8o"), (24, False, "OIHW16i8o"), (20, True, "OIHW")):
        c = conv(x, o, k=1, name="proj", bias=bias)
        g = Graph.from_outputs([x], [Node("add", (c, c), name="res")])
        packed = pack_layout(g, block_c=16)
        verify_graph(packed)
        ops = {n.name: n for n in packed.nodes}
        conv_node = next(n for n in packed.nodes if n.op == "conv2d")
        assert conv_node.attrs["kernel_layout"] == layout
        assert ops["proj"].type.shape == (1, o, 7, 7) and ops["proj"].type.layout == "NCHW"
        if layout != "OIHW":
            assert conv_node.type.layout == "NCHW1n8c"
            assert ops["res"].inputs[0].type.layout == "NCHW"  # the add runs NCHW
        assert_same_results(g, packed)
        assert_same_results(g, packed_pipeline_graph(g))


def test_fold_pad_into_the_conv_it_feeds():
    from compiler.graph.passes import fold_pad

    x = nchw((1, 16, 9, 9))
    pw = ((0, 0), (0, 0), (0, 1), (1, 1))
    p = Node("pad", (x,), {"pad_width": pw}, name="p")
    c = conv(p, 16, name="dw", groups=16, strides=(2, 2), padding=(0, 0, 0, 0))
    other = Node("pad", (x,), {"pad_width": pw, "pad_value": 1.0}, name="ones")
    c2 = conv(other, 16, k=1, name="c2", padding=(0, 0, 0, 0))
    g = Graph.from_outputs([x], [c, c2])
    folded = fold_pad(g)
    verify_graph(folded)
    convs = {n.name: n for n in folded.nodes if n.op == "conv2d"}
    assert convs["dw"].inputs[0] is x and convs["dw"].attrs["padding"] == (0, 1, 1, 1)
    assert convs["c2"].inputs[0].name == "ones"  # a pad of ones is not a conv's padding
    assert_same_results(g, folded)
    assert_same_results(g, packed_pipeline_graph(g))
    # a pad another node reads too stays, and the conv keeps reading it
    shared = Graph.from_outputs([x], [c, Node("relu", (p,), name="reads_the_pad")])
    kept = fold_pad(shared)
    assert next(n for n in kept.nodes if n.name == "dw").inputs[0].name == "p"
    assert_same_results(shared, kept)
