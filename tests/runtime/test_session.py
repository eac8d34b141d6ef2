"""Whole models compiled for the CPU and run by ``InferenceSession``, checked against
onnxruntime (relative error max|ours - ort| / max|ort| <= 1e-4); feed and model faults."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.errors import CompilerError
from compiler.frontend.zoo import digits_test, load_zoo, wheel_models
from runtime.errors import FeedError, SessionError
from runtime.session import InferenceSession

ort = pytest.importorskip("onnxruntime")

RTOL = 1e-4


def ort_run(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def rel_error(ours: np.ndarray, ref: np.ndarray) -> float:
    assert ours.shape == ref.shape and ours.dtype == ref.dtype
    scale = float(np.max(np.abs(ref)))
    return float(np.max(np.abs(ours - ref))) / (scale if scale else 1.0)


def check_against_ort(model: onnx.ModelProto, sess: InferenceSession, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    feeds = {
        s.name: rng.standard_normal(s.shape).astype(s.dtype) for s in sess.get_inputs()
    }  # fmt: skip
    ours = sess.run(None, feeds)
    ref = ort_run(model, feeds)
    assert len(ours) == len(ref)
    for name, a, b in zip([o.name for o in sess.get_outputs()], ours, ref, strict=True):
        assert np.isfinite(b).all(), f"onnxruntime output {name} is not finite"
        err = rel_error(a, b)
        assert err <= RTOL, f"output {name}: relative error {err:.2e} > {RTOL}"


@pytest.fixture(scope="module")
def resnet18():
    model = load_zoo("resnet18", image_size=32)
    return model, InferenceSession(model, num_threads=1)


@pytest.mark.parametrize(
    "name,size", [("resnet18", 32), ("resnet34", 32), ("resnet50", 32), ("resnet18", 56)]
)
def test_zoo_resnets_match_onnxruntime(name, size, resnet18):
    if (name, size) == ("resnet18", 32):
        model, sess = resnet18
    else:
        model = load_zoo(name, image_size=size)
        sess = InferenceSession(model, num_threads=1)
    check_against_ort(model, sess)


def test_digits_matches_onnxruntime_and_classifies_held_out_digits():
    images, labels = digits_test()
    n = 200
    model = load_zoo("digits", batch=n)
    sess = InferenceSession(model, num_threads=1)
    (logits,) = sess.run(["logits"], {"data": images[:n]})
    (ref,) = ort_run(model, {"data": images[:n]})
    assert rel_error(logits, ref) <= RTOL
    assert np.array_equal(logits.argmax(1), ref.argmax(1))
    assert (logits.argmax(1) == labels[:n]).mean() >= 0.95


def test_session_api_looks_like_onnxruntime(resnet18):
    model, sess = resnet18
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ours_in, ref_in = sess.get_inputs(), ref.get_inputs()
    assert [(i.name, list(i.shape), i.type) for i in ours_in] == [
        (i.name, i.shape, i.type) for i in ref_in
    ]
    assert [o.name for o in sess.get_outputs()] == [o.name for o in ref.get_outputs()]


def test_profile_names_groups_by_their_anchor_nodes(resnet18):
    model, sess = resnet18
    x = np.zeros((1, 3, 32, 32), np.float32)
    sess.run(None, {"data": x})
    prof = sess.profile()
    conv_nodes = [n.name for n in model.graph.node if n.op_type == "Conv"]
    convs = [g for g in prof.groups if g.ops[0] == "conv2d"]
    assert len(convs) == len(conv_nodes)
    # each conv group is named after its anchor, the node the importer made of an ONNX Conv
    named = set()
    for g in convs:
        (onnx_name,) = [n for n in conv_nodes if g.name == n or g.name.startswith(n + ".")]
        named.add(onnx_name)
    assert named == set(conv_nodes)
    assert all(g.target == "cpu" and g.time_us >= 0 for g in prof.groups)
    assert prof.total_us == pytest.approx(sum(g.time_us for g in prof.groups))
    assert any("relu" in g.ops and g.ops[0] == "conv2d" for g in prof.groups)  # fused epilogue
    assert sess.memory.peak_bytes <= sess.memory.naive_bytes / 2


def test_runs_reuse_the_arena_and_return_fresh_outputs(resnet18):
    _, sess = resnet18
    rng = np.random.default_rng(1)
    x1, x2 = (rng.standard_normal((1, 3, 32, 32)).astype(np.float32) for _ in range(2))
    (a1,) = sess.run(None, {"data": x1})
    (a2,) = sess.run(None, {"data": x2})
    (b1,) = sess.run(None, {"data": x1})
    assert a1 is not b1 and np.array_equal(a1, b1) and not np.array_equal(a1, a2)
    # a non-contiguous feed gives the same result
    (c1,) = sess.run(None, {"data": np.asfortranarray(x1)})
    assert np.array_equal(c1, a1)


@pytest.mark.parametrize(
    "feeds,match",
    [
        ({"image": np.zeros((1, 3, 32, 32), np.float32)}, "unknown input 'image'.*data"),
        ({}, "input 'data' is not fed \\(expected float32 of shape \\(1, 3, 32, 32\\)\\)"),
        ({"data": np.zeros((1, 3, 16, 16), np.float32)}, "input 'data' has shape \\(1, 3, 16"),
        ({"data": np.zeros((1, 3, 32, 32), np.float64)}, "input 'data' has dtype float64, exp"),
        ({"data": [[0.0]]}, "input 'data' is a list, expected a numpy array"),
    ],
)
def test_wrong_feeds_are_refused_naming_the_input(resnet18, feeds, match):
    _, sess = resnet18
    with pytest.raises(FeedError, match=match):
        sess.run(None, feeds)


def test_unknown_output_and_profile_before_run_are_named(resnet18):
    model, sess = resnet18
    with pytest.raises(SessionError, match="unknown output 'probs'.*logits"):
        sess.run(["probs"], {"data": np.zeros((1, 3, 32, 32), np.float32)})
    fresh = InferenceSession(model.SerializeToString(), num_threads=1)
    with pytest.raises(SessionError, match="no profile yet"):
        fresh.profile()


def test_session_from_a_saved_artifact_runs_the_same(resnet18, tmp_path):
    model, sess = resnet18
    path = tmp_path / "r18.vtac"
    sess.save(path)
    again = InferenceSession(path)
    assert again.graph is None  # nothing was imported or compiled from ONNX
    x = np.random.default_rng(2).standard_normal((1, 3, 32, 32)).astype(np.float32)
    assert np.array_equal(again.run(None, {"data": x})[0], sess.run(None, {"data": x})[0])
    assert InferenceSession(path.read_bytes()).get_inputs() == sess.get_inputs()
    with pytest.raises(SessionError, match="compiled for 1 thread\\(s\\), not 2"):
        InferenceSession(path, num_threads=2)
    with pytest.raises(SessionError, match="image_size and batch apply to zoo models only"):
        InferenceSession(path, image_size=64)


# Model faults ----------------------------------------------------------------------------------


def _tiny_model(ir_version=8, **kw):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    nodes = kw.get("nodes") or [helper.make_node("Add", ["x", "b"], ["y"], name="add0")]
    inits = kw.get("inits", [numpy_helper.from_array(np.ones(4, np.float32), "b")])
    graph = helper.make_graph(nodes, "tiny", [x], [y], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = ir_version
    return model


def test_a_tiny_model_runs():
    sess = InferenceSession(_tiny_model(), num_threads=1)
    (y,) = sess.run(None, {"x": np.arange(4, dtype=np.float32).reshape(1, 4)})
    assert np.array_equal(y, np.arange(1, 5, dtype=np.float32).reshape(1, 4))


def _cyclic_model():
    return _tiny_model(
        nodes=[
            helper.make_node("Add", ["x", "t2"], ["t1"], name="a1"),
            helper.make_node("Relu", ["t1"], ["t2"], name="a2"),
            helper.make_node("Add", ["t1", "b"], ["y"], name="a3"),
        ]
    ).SerializeToString()


MALFORMED = {
    "truncated": (
        lambda: _tiny_model().SerializeToString()[:-9],
        "bad.onnx: not a valid ONNX protobuf",
    ),
    "empty": (lambda: b"", "bad.onnx: empty file"),
    "ir-version": (
        lambda: _tiny_model(ir_version=99).SerializeToString(),
        "ir_version 99 is not supported",
    ),
    "missing-initializer": (
        lambda: _tiny_model(inits=[]).SerializeToString(),
        "node 'add0' \\(Add\\): input 'b' is not produced",
    ),
    "cyclic": (_cyclic_model, "cycle through nodes \\['a1', 'a2'\\]"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_models_are_refused_naming_the_fault(tmp_path, case):
    make, match = MALFORMED[case]
    path = tmp_path / "bad.onnx"
    path.write_bytes(make())
    with pytest.raises(CompilerError, match=match):
        InferenceSession(path, num_threads=1)


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_models_fail_vtac_run_in_one_line(tmp_path, capsys, case):
    from runtime.cli import main

    make, _ = MALFORMED[case]
    path = tmp_path / "bad.onnx"
    path.write_bytes(make())
    assert main(["run", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("vtac run: error: ") and len(err.strip().splitlines()) == 1


def test_missing_model_names_the_zoo():
    with pytest.raises(SessionError, match="no such file, and not a zoo model \\(resnet18"):
        InferenceSession("resnet19")


# Wheel topologies ------------------------------------------------------------------------------

WHEEL = wheel_models()


@pytest.mark.parametrize(
    "name",
    [
        "bvlc_alexnet",
        "densenet121",
        "inception_v1",
        "inception_v2",
        "resnet50",
        "shufflenet",
        "squeezenet",
        "vgg19",
        "zfnet512",
    ],
)
def test_wheel_topologies_import_and_match_onnxruntime(name):
    if name not in WHEEL:
        pytest.skip(f"the onnx wheel ships no {name} test model")
    model = onnx.load(WHEEL[name])
    sess = InferenceSession(model, num_threads=1)
    check_against_ort(model, sess)


# Small graphs with unusual outputs -------------------------------------------------------------


def _model(nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(nodes, "edge", inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


X = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
Y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
Z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 4])


def test_an_output_that_is_the_input_or_a_constant_is_a_copy():
    sess = InferenceSession(_model([helper.make_node("Identity", ["x"], ["y"])], [X], [Y]))
    x = np.ones((1, 4), np.float32)
    (y,) = sess.run(None, {"x": x})
    assert sess.program.kernels == () and np.array_equal(y, x) and y is not x
    c = numpy_helper.from_array(np.full((1, 4), 3, np.float32), "c")
    nodes = [helper.make_node("Identity", ["c"], ["y"]), helper.make_node("Relu", ["x"], ["z"])]
    sess = InferenceSession(_model(nodes, [X], [Y, Z], [c]))
    y, z = sess.run(None, {"x": -x})
    assert np.array_equal(y, np.full((1, 4), 3, np.float32)) and np.array_equal(z, 0 * x)


def test_an_output_read_by_a_later_group_and_two_inputs():
    nodes = [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Exp", ["y"], ["z"])]
    sess = InferenceSession(_model(nodes, [X], [Y, Z]))
    x = np.array([[-1, 0, 1, 2]], np.float32)
    z, y = sess.run(["z", "y"], {"x": x})
    assert np.array_equal(y, np.maximum(x, 0))
    np.testing.assert_allclose(z, np.exp(np.maximum(x, 0)), rtol=1e-6)
    sess = InferenceSession(_model([helper.make_node("Sub", ["x", "y"], ["z"])], [X, Y], [Z]))
    (z,) = sess.run(None, {"y": x, "x": 2 * x})
    assert np.array_equal(z, x)
