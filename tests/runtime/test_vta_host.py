"""Host nodes of accelerator networks: host groups compiled with the CPU backend, bit for bit
against the numpy reference executor, and the reference fallback named in the table."""

import numpy as np
import pytest

import compiler.quantize  # noqa: F401  (registers the quantized operators)
from compiler import te
from compiler.build import build
from compiler.frontend.onnx_import import from_onnx
from compiler.frontend.zoo import load_zoo
from compiler.graph import Constant, Graph, Node, TensorType, Var, evaluate
from compiler.graph.reference import evaluate_op
from compiler.model.host_groups import compile_host_groups, run_host_group, split_runs
from compiler.strategy import StrategyError, compute, schedule
from runtime.vta_target import compile_network


def _kernel(op, shape, dtype, attrs):
    x = te.placeholder(shape, dtype, name="x")
    y = compute(op, [x], attrs, "y")
    return build(schedule([y], y if op == "global_sum_pool2d" else None), [x, y], target="cpu")


@pytest.mark.parametrize("scale", [0.25, 0.0123, 3.0e-5])
def test_quantize_kernel_equals_the_reference_with_ties_and_extremes(scale):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((3, 200)) * 64 * scale).astype(np.float32)
    # exact ties (k + 1/2) * scale where representable, both signs, and values past the range
    x[0, :64] = ((np.arange(64) - 32 + 0.5) * scale).astype(np.float32)
    x[1, :10] = [1e30, -1e30, np.inf, -np.inf, 127.5 * scale, -128.5 * scale, 126.5 * scale,
                 -127.5 * scale, -0.5 * scale, 0.5 * scale]  # fmt: skip
    x[2, :4] = [np.finfo(np.float32).max, np.finfo(np.float32).min, 1e-45, -1e-45]
    ref = evaluate_op("quantize", [x], {"scale": scale}, TensorType(x.shape, "int8"))
    got = _kernel("quantize", x.shape, "float32", {"scale": scale})(x)
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, ref)
    assert {-128, 127} <= set(got.ravel().tolist())


@pytest.mark.parametrize("dtype", ["int8", "int32"])
def test_dequantize_kernel_equals_the_reference(dtype):
    info = np.iinfo(dtype)
    x = np.random.default_rng(2).integers(info.min, info.max, (4, 100), endpoint=True)
    x = x.astype(dtype)
    x[0, :2] = [info.min, info.max]
    scale = 0.0071
    ref = evaluate_op("dequantize", [x], {"scale": scale}, TensorType(x.shape, "float32"))
    np.testing.assert_array_equal(_kernel("dequantize", x.shape, dtype, {"scale": scale})(x), ref)


def test_global_sum_pool_kernel_equals_the_reference():
    x = np.random.default_rng(3).integers(-128, 127, (2, 5, 7, 7), endpoint=True).astype(np.int8)
    x[0, 0] = -128
    x[1, 4] = 127
    ref = evaluate_op("global_sum_pool2d", [x], {}, TensorType((2, 5, 1, 1), "int32"))
    np.testing.assert_array_equal(_kernel("global_sum_pool2d", x.shape, "int8", {})(x), ref)


def test_quantize_compute_names_the_node_for_a_bad_scale():
    x = te.placeholder((4,), "float32", name="x")
    with pytest.raises(StrategyError, match="quantize node 'q'.*scale"):
        compute("quantize", [x], {"scale": -1.0}, "q")


def test_digits_host_nodes_run_as_compiled_cpu_kernels():
    from compiler.frontend.zoo import digits_test

    graph = from_onnx(load_zoo("digits", batch=2))
    images, _ = digits_test()
    feed = {graph.inputs[0].name: images[:2]}
    net = compile_network(graph, "default", calibration=feed)
    assert net.host_groups is not None and all(h.compiled for h in net.host_groups)
    result = net.run(feed)
    np.testing.assert_array_equal(result.outputs[0], net.reference(feed)[0])
    host = {r.ops: r for r in result.layers if r.device == "cpu"}
    # one row per host node: the folded image and the flattened features are packed in the
    # kernels that make them, the pool's and the classifier's outputs unpacked in the kernels
    # that read them
    assert set(host) == {"quantize", "im2col", "pack", "unpack", "reshape", "dequantize"}
    assert all(r.host.startswith("host (compiled") for r in host.values())
    table = result.table()
    # the first layer's fold and its packing run in the quantize's group (one kernel), the
    # flatten and the classifier's packing in the pool's read-back's
    groups = {"data.quantize": "data.quantize", "conv1.im2col": "data.quantize",
              "conv1.data.pack": "data.quantize", "flatten": "avgpool.sum.read",
              "fc.data.pack": "avgpool.sum.read", "fc.dequantize": "fc.read"}  # fmt: skip
    for name, group in groups.items():
        line = next(ln for ln in table.splitlines() if ln.startswith(name))
        assert f"host (compiled, group {group})" in line
    assert "host (reference)" not in table
    assert result.to_json()["layers"][0]["host"] == "host (compiled, group data.quantize)"


def test_softmax_on_the_host_is_compiled_with_its_dequantize():
    x = Var("x", TensorType((2, 3, 6, 6), "float32", "NCHW"))
    w = Constant(np.random.default_rng(0).normal(size=(8, 3, 3, 3)).astype(np.float32), name="w")
    conv = Node("conv2d", (x, w), {"padding": (1, 1, 1, 1)}, name="conv")
    prob = Node("softmax", (conv,), {"axis": 1}, name="prob")
    graph = Graph.from_outputs([x], [prob])
    feed = {"x": np.random.default_rng(4).standard_normal((2, 3, 6, 6)).astype(np.float32)}
    net = compile_network(graph, "default", calibration=feed)
    (after,) = [h for h in net.host_groups if "prob" in [n.name for n in h.nodes]]
    # the read-back of the conv's output, its dequantize and the softmax: one kernel
    assert [n.op for n in after.nodes] == ["unpack", "dequantize", "softmax"] and after.compiled
    result = net.run(feed)
    ref = net.reference(feed)[0]
    # float64 inside, rounded once to float32, as the reference: equal up to an ulp of exp
    np.testing.assert_allclose(result.outputs[0], ref, rtol=1e-6, atol=0)
    np.testing.assert_allclose(result.outputs[0].sum(axis=1), 1.0, rtol=1e-5)
    rows = {r.name: r for r in result.layers}
    assert rows["prob"].host == "host (compiled, group conv.read)"


def test_a_host_qadd_is_compiled_and_equals_the_reference():
    x = Var("x", TensorType((1, 4, 4, 4), "float32", "NCHW"))
    q = Node("quantize", (x,), {"scale": 0.05}, name="q")
    attrs = {"lhs_multiplier": 3, "rhs_multiplier": 5, "shift": 3, "out_min": -128, "out_max": 127}
    add = Node("qadd", (q, q), attrs, name="add")
    d = Node("dequantize", (add,), {"scale": 0.1}, name="d")
    graph = Graph.from_outputs([x], [d])
    net = compile_network(graph, "default")  # already quantized: no calibration
    assert all(h.compiled for h in net.host_groups)
    feed = {"x": np.random.default_rng(5).standard_normal((1, 4, 4, 4)).astype(np.float32)}
    feed["x"][0, 0, 0, :2] = [1e6, -1e6]  # saturating the quantize and the add
    result = net.run(feed)
    np.testing.assert_array_equal(result.outputs[0], net.reference(feed)[0])
    table = result.table()
    assert "host (reference)" not in table
    rows = {r.name: r for r in result.layers}
    if rows["add"].device == "cpu":
        assert rows["add"].host.startswith("host (compiled, group ")


def _grouped_convs_then_add():
    """Two grouped convolutions (the accelerator takes groups=1 only), so their int32 results,
    their requantizes and the qadd of the two are host values; a convolution on the
    accelerator follows."""
    rng = np.random.default_rng(7)
    x = Var("x", TensorType((1, 8, 6, 6), "float32", "NCHW"))
    w1 = Constant(rng.normal(size=(8, 4, 3, 3)).astype(np.float32), name="w1")
    w2 = Constant(rng.normal(size=(8, 2, 3, 3)).astype(np.float32), name="w2")
    w3 = Constant(rng.normal(size=(8, 8, 3, 3)).astype(np.float32), name="w3")
    pad = {"padding": (1, 1, 1, 1)}
    g1 = Node("conv2d", (x, w1), {**pad, "groups": 2}, name="g1")
    g2 = Node("conv2d", (x, w2), {**pad, "groups": 4}, name="g2")
    relu = Node("relu", (Node("add", (g1, g2), name="add"),), name="relu")
    conv = Node("conv2d", (relu, w3), pad, name="conv")
    return Graph.from_outputs([x], [conv])


def test_host_requantize_and_qadd_of_host_values_run_compiled_and_bit_exact():
    graph = _grouped_convs_then_add()
    rng = np.random.default_rng(8)
    calib = {"x": rng.standard_normal((1, 8, 6, 6)).astype(np.float32)}
    net = compile_network(graph, "default", calibration=calib)
    place = {p.node: p for p in net.partition.placements}
    assert place["g1.requantize"].rule == "requantize-host"
    assert place["g2.requantize"].rule == "requantize-host"
    for seed in range(3):
        # beyond the calibrated range too: the requantizes and the qadd saturate
        feed = {"x": (rng.standard_normal((1, 8, 6, 6)) * (1 + 4 * seed)).astype(np.float32)}
        result = net.run(feed)
        np.testing.assert_array_equal(result.outputs[0], net.reference(feed)[0])
    rows = {r.name: r for r in result.layers}
    for name in ("g1.requantize", "g2.requantize"):
        assert rows[name].device == "cpu" and rows[name].host.startswith("host (compiled, group ")
    host = [r for r in result.layers if r.device == "cpu"]
    assert {r.ops for r in host} >= {"requantize", "conv2d", "quantize", "dequantize"}
    assert all(r.host.startswith("host (compiled, group ") for r in host)
    assert "host (reference)" not in result.table()


@pytest.fixture
def opaque_op(monkeypatch):
    """An int8 operator the graph and the reference executor know and the CPU strategy does
    not (removed again after the test)."""
    from compiler import registry
    from compiler.graph import ops
    from compiler.graph.ir import PatternKind

    def infer(node):
        return node.inputs[0].type

    name = "test_bit_reverse"
    monkeypatch.setitem(ops.OPS, name, ops.OpDef(name, PatternKind.INJECTIVE, 1, 1, {}, infer))
    registry.register("reference", name, lambda args, attrs, t: ~args[0])
    yield name
    registry.unregister("reference", name)


def test_a_host_op_without_a_cpu_compute_falls_back_to_the_reference_and_says_why(
    opaque_op, tmp_path
):
    x = Var("x", TensorType((1, 4, 4, 4), "float32", "NCHW"))
    q = Node("quantize", (x,), {"scale": 0.05}, name="q")
    odd = Node(opaque_op, (q,), name="odd")
    attrs = {"lhs_multiplier": 3, "rhs_multiplier": 5, "shift": 3, "out_min": -128, "out_max": 127}
    add = Node("qadd", (odd, q), attrs, name="add")
    d = Node("dequantize", (add,), {"scale": 0.1}, name="d")
    graph = Graph.from_outputs([x], [d])
    net = compile_network(graph, "default")
    by_node = {n.name: h for h in net.host_groups for n in h.nodes}
    assert not by_node["odd"].compiled and by_node["q"].compiled and by_node["d"].compiled
    feed = {"x": np.random.default_rng(5).standard_normal((1, 4, 4, 4)).astype(np.float32)}
    result = net.run(feed)
    np.testing.assert_array_equal(result.outputs[0], net.reference(feed)[0])
    line = next(ln for ln in result.table().splitlines() if ln.startswith("odd "))
    assert f"host (reference): operator '{opaque_op}' has no CPU compute" in line
    # the network runs, but an artifact holds compiled kernels only
    from runtime.errors import ArtifactError
    from runtime.vta_artifact import save_vta_artifact

    with pytest.raises(ArtifactError, match="host group odd runs in the reference executor"):
        save_vta_artifact(net.plan, tmp_path / "a.vtac")
    assert not (tmp_path / "a.vtac").exists()


def test_host_runs_keep_one_reduction_each_and_outputs_leave_the_group():
    x = Var("x", TensorType((2, 8), "float32"))
    a = Node("softmax", (x,), {"axis": 1}, name="a")
    b = Node("exp", (a,), name="b")
    c = Node("softmax", (b,), {"axis": 1}, name="c")
    graph = Graph.from_outputs([x], [c, a])
    runs = split_runs(graph.nodes, lambda n: True)
    assert [[n.name for n in r] for r in runs] == [["a", "b"], ["c"]]
    groups = compile_host_groups(graph.nodes, graph.outputs)
    assert [h.compiled for h in groups] == [True, True]
    assert [n.name for n in groups[0].outputs] == ["a", "b"]  # a is a graph output, b read by c
    feed = np.random.default_rng(6).standard_normal((2, 8)).astype(np.float32)
    values = {id(x): feed}
    for h in groups:
        values.update(run_host_group(h, values))
    want = evaluate(graph, {"x": feed})
    np.testing.assert_allclose(values[id(c)], want[0], rtol=1e-6)
    np.testing.assert_allclose(values[id(a)], want[1], rtol=1e-6)
