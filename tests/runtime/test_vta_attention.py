"""Attention's matmuls of two activations on the accelerator: ``Q K^T`` and ``softmax(..) V``
of a small multi-head block (as PP-OCRv4's recognizer writes it in ONNX: MatMul by weights,
Reshape and Transpose into heads, a scaling Mul, Softmax on the host). Both matmuls run as
``matmul-group``s, bit for bit against the quantized graph's integer reference; the network's
artifact runs the same bytes; the limits that keep a matmul on the host are named."""

import io
import json
import zipfile

import numpy as np
import pytest
from onnx import helper

import isa
from compiler.frontend.onnx_import import from_onnx
from compiler.graph import Constant, Graph, Node, TensorType, Var, evaluate
from compiler.quantize import quantize_graph
from compiler.registry import lookup
from compiler.targets.vta.pack import group_writes
from runtime.artifact import MANIFEST
from runtime.errors import ArtifactError
from runtime.vta_target import compile_network
from tests.compiler.frontend.helpers import make_model

HEADS, T, D = 2, 6, 5
C = HEADS * D


def _model():
    rng = np.random.default_rng(0)
    inits = {
        "wqkv": (rng.standard_normal((C, 3 * C)) * 0.4).astype(np.float32),
        "wo": (rng.standard_normal((C, C)) * 0.4).astype(np.float32),
        "shape": np.array([1, T, 3, HEADS, D], np.int64),
        "merged": np.array([1, T, C], np.int64),
        "scale": np.array(D**-0.5, np.float32),
    }
    nodes = [
        helper.make_node("MatMul", ["x", "wqkv"], ["qkv"], name="qkv"),
        helper.make_node("Reshape", ["qkv", "shape"], ["qkv5"], name="split_heads"),
        helper.make_node("Transpose", ["qkv5"], ["qkvt"], perm=[2, 0, 3, 1, 4], name="heads"),
        helper.make_node("Gather", ["qkvt", "i0"], ["q"], axis=0, name="q"),
        helper.make_node("Gather", ["qkvt", "i1"], ["k"], axis=0, name="k"),
        helper.make_node("Gather", ["qkvt", "i2"], ["v"], axis=0, name="v"),
        helper.make_node("Mul", ["q", "scale"], ["qs"], name="q_scale"),
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2], name="k_t"),
        helper.make_node("MatMul", ["qs", "kt"], ["s"], name="qk"),
        helper.make_node("Softmax", ["s"], ["p"], axis=-1, name="softmax"),
        helper.make_node("MatMul", ["p", "v"], ["o"], name="pv"),
        helper.make_node("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3], name="merge"),
        helper.make_node("Reshape", ["ot", "merged"], ["om"], name="merge_heads"),
        helper.make_node("MatMul", ["om", "wo"], ["y"], name="proj"),
    ]
    for k in range(3):
        inits[f"i{k}"] = np.array(k, np.int64)
    return make_model(nodes, {"x": np.zeros((1, T, C), np.float32)}, ["y"], inits, opset=13)


def _feeds(seed, count):
    rng = np.random.default_rng(seed)
    return [{"x": rng.standard_normal((1, T, C)).astype(np.float32)} for _ in range(count)]


@pytest.fixture(scope="module")
def graph():
    return from_onnx(_model())


@pytest.fixture(scope="module")
def networks(graph):
    return {p: compile_network(graph, p, calibration=_feeds(1, 4), cache=False)
            for p in ("default", "vta-1x16x16")}  # fmt: skip


@pytest.mark.parametrize("preset", ["default", "vta-1x16x16"])
def test_both_attention_matmuls_run_on_the_accelerator_bit_exact(graph, networks, preset):
    net = networks[preset]
    placed = {p.node: (p.op, p.device, p.rule) for p in net.partition.placements}
    assert placed["qk"] == ("matmul", "vta", "matmul-group"), placed
    assert placed["pv"] == ("matmul", "vta", "matmul-group"), placed
    kinds = sorted(g.kind for g in net.partition.groups)
    assert kinds.count("matmul") == 2
    for name in ("qk", "pv"):
        group = next(g for g in net.partition.groups if g.name == name)
        assert group.requantize is not None  # fused: the group stores int8
        # both operands are activations the host packs (pack nodes), the right one transposed
        # into the weight layout
        packs = {symbol: pack.attrs["layout"] for symbol, pack in group_writes(group)}
        assert packs == {"data": "batch_rows", "weight": "batch_weight"}
        assert all(net.partition.placement(p.name).device == "cpu"
                   for _, p in group_writes(group))  # fmt: skip
        assert net.layers[name].program.symbols["weight"].role == "input"
    for feed in _feeds(2, 2):
        np.testing.assert_array_equal(net.run(feed).outputs[0], net.reference(feed)[0])
    feed = _feeds(1, 1)[0]
    got, ref = net.run(feed).outputs[0], evaluate(graph, feed)[0]
    assert np.abs(got - ref).max() < 0.1 * np.abs(ref).max()


def test_an_artifact_of_the_block_runs_the_same_bytes(networks, tmp_path):
    from compiler.model.vta_program import accel_kernels, host_kernels, writes_of
    from runtime.vta_artifact import load_vta_artifact, save_vta_artifact
    from runtime.vta_plan import VtaExecutor

    net = networks["default"]
    feed = _feeds(5, 1)[0]
    expected = net.run(feed)
    save_vta_artifact(net.plan, tmp_path / "attention.vtac")
    loaded = load_vta_artifact(tmp_path / "attention.vtac")
    got = VtaExecutor(loaded).run(feed)
    np.testing.assert_array_equal(got.outputs[0], expected.outputs[0])
    assert got.total_cycles == expected.total_cycles
    # the host writes both operands from the tensors of the host kernels' pack nodes, each
    # exactly its symbol's tensor
    groups = {k.name: (k, s) for k, s in accel_kernels(loaded)}
    kernel, step = groups["qk"]
    writes = {symbol: loaded.placements[t] for symbol, t in writes_of(kernel)}
    symbols = step.image.symbols
    assert sorted(writes) == ["data", "weight"]
    assert all(writes[k].shape == tuple(symbols[k].shape) for k in writes)
    packs = {n.name: n.op for _, h in host_kernels(loaded) for n in h.nodes if n.op == "pack"}
    assert set(packs) >= {"qk.data.pack", "qk.weight.pack"}, packs


def _tampered(data, edit):
    """The artifact ``data`` with ``edit`` applied to the writes of group ``qk``."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    manifest = json.loads(members[MANIFEST])
    step = next(s for s in manifest["steps"] if s.get("name") == "qk")
    edit({w["symbol"]: w for w in step["writes"]})
    members[MANIFEST] = json.dumps(manifest).encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for n, b in members.items():
            zf.writestr(n, b)
    return buf.getvalue()


def _data_for_weight(writes):
    writes["weight"]["slot"] = writes["data"]["slot"]


def _packing_field(writes):
    writes["weight"]["packing"] = "batch_weight"


def _slot_out_of_range(writes):
    writes["weight"]["slot"] = 10_000


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            _data_for_weight,
            r"'weight' from slot \d+ \(int8\[2, 6, 2, 1, 4\]\), but symbol 'weight' is "
            r"int8\[2, 2, 2, 4, 4\]",
        ),
        (
            _packing_field,
            r"'weight' has unknown field\(s\) 'packing'; a write has symbol, slot",
        ),
        (_slot_out_of_range, r"field 'writes': slot 10000 is not one of the \d+ slots"),
    ],
    ids=lambda v: v.__name__.strip("_") if callable(v) else "",
)
def test_an_artifact_whose_matmul_writes_are_tampered_is_refused(networks, edit, message):
    from runtime.vta_artifact import load_vta_artifact, vta_artifact_bytes

    bad = _tampered(vta_artifact_bytes(networks["default"].plan), edit)
    with pytest.raises(ArtifactError, match=message) as info:
        load_vta_artifact(bad)
    assert "\n" not in str(info.value)


def _matmul(a_shape, b_shape, dtype="int8", constant=False):
    a = Var("a", TensorType(a_shape, dtype))
    if constant:
        b = Constant(np.ones(b_shape, dtype))
    else:
        b = Var("b", TensorType(b_shape, dtype))
    return Node("matmul", (a, b), name="mm")


@pytest.mark.parametrize(
    ("a", "b", "kwargs", "rule"),
    [
        ((2, 4, 8), (2, 8, 4), {"dtype": "float32"}, "matmul-dtype"),
        ((2, 4, 8), (1, 8, 4), {}, "matmul-broadcast"),
        ((8,), (8, 4), {}, "matmul-rank"),
        ((2, 4, 8), (2, 8, 4), {"constant": True}, "matmul-weights"),
    ],
)
def test_the_limits_that_keep_a_matmul_on_the_host_are_named(a, b, kwargs, rule):
    node = _matmul(a, b, **kwargs)
    limit = lookup("vta", "matmul").fits(node, isa.load_config("default"))
    assert limit is not None and limit[0] == rule, limit


def test_a_matmul_of_two_activations_quantizes_to_int8_with_one_requantize():
    x = Var("x", TensorType((2, 4, 6), "float32"))
    y = Var("y", TensorType((2, 6, 3), "float32"))
    g = Graph.from_outputs([x, y], [Node("matmul", (x, y), name="mm")])
    rng = np.random.default_rng(0)
    feeds = [
        {"x": rng.standard_normal((2, 4, 6)).astype(np.float32),
         "y": rng.standard_normal((2, 6, 3)).astype(np.float32)}
        for _ in range(3)
    ]  # fmt: skip
    q = quantize_graph(g, feeds, "minmax", sensitivity="off")
    assert [n.op for n in q.nodes] == [
        "quantize", "quantize", "matmul", "requantize", "dequantize"]  # fmt: skip
    mm, rq = q.nodes[2], q.nodes[3]
    assert [v.type.dtype for v in mm.inputs] == ["int8", "int8"] and mm.type.dtype == "int32"
    assert rq.attrs["axis"] == 1
    assert all(np.unique(v.value).size == 1 for v in rq.inputs[1:4])  # one scale
    got, ref = evaluate(q, feeds[0])[0], evaluate(g, feeds[0])[0]
    assert np.abs(got - ref).max() < 0.05 * np.abs(ref).max()
