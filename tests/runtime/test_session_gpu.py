"""Whole models on the GPU target (``--target gpu``): every fused group compiled to CUDA kernels
and run, here on numba's CUDA simulator (tests/conftest.py sets ``NUMBA_ENABLE_CUDASIM=1``; with
it unset on a machine with a GPU the same tests run on the device)."""

import json

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the onnx extra is not installed")
ort = pytest.importorskip("onnxruntime", reason="the onnx extra is not installed")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from compiler.targets.gpu.module import cuda_backend  # noqa: E402
from runtime.cli import main  # noqa: E402
from runtime.errors import SessionError  # noqa: E402
from runtime.session import InferenceSession  # noqa: E402

pytestmark = pytest.mark.gpu


def _rel_err(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))


def _small_cnn() -> bytes:
    """conv+BN+relu, max pool, a residual conv, global pool, Gemm, softmax: 8x8 input."""
    rng = np.random.default_rng(7)

    def const(name: str, *shape: int, scale: float = 0.3) -> onnx.TensorProto:
        return numpy_helper.from_array((rng.normal(size=shape) * scale).astype(np.float32), name)

    inits = [
        const("w1", 8, 3, 3, 3),
        const("b1", 8),
        numpy_helper.from_array(rng.uniform(0.5, 1.5, 8).astype(np.float32), "g"),
        const("beta", 8),
        const("mean", 8),
        numpy_helper.from_array(rng.uniform(0.5, 1.5, 8).astype(np.float32), "var"),
        const("w2", 8, 8, 3, 3),
        const("fc_w", 5, 8),
        const("fc_b", 5),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("BatchNormalization", ["c1", "g", "beta", "mean", "var"], ["bn"]),
        helper.make_node("Relu", ["bn"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
        helper.make_node("Add", ["c2", "p1"], ["s"]),
        helper.make_node("Relu", ["s"], ["r2"]),
        helper.make_node("GlobalAveragePool", ["r2"], ["gp"]),
        helper.make_node("Flatten", ["gp"], ["f"]),
        helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["logits"], transB=1, name="fc"),
        helper.make_node("Softmax", ["logits"], ["prob"], axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "small_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [1, 5])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)
    onnx.checker.check_model(model, full_check=True)
    return model.SerializeToString()


def test_small_cnn_on_the_gpu_target_matches_onnxruntime():
    model = _small_cnn()
    x = np.random.default_rng(0).normal(size=(1, 3, 8, 8)).astype(np.float32)
    sess = InferenceSession(model, target="gpu")
    (prob,) = sess.run(None, {"x": x})
    (ref,) = ort.InferenceSession(model).run(None, {"x": x})
    assert _rel_err(prob, ref) <= 1e-4
    groups = sess.profile().groups
    assert groups and {g.target for g in groups} == {"gpu"}


def test_kernels_are_compiled_when_the_session_is_built():
    # a run's time is the kernels' own: numba compiles them before the first run, on a GPU
    # eagerly for each kernel's signature (the CUDA simulator has nothing to compile)
    sess = InferenceSession(_small_cnn(), target="gpu")
    modules = list(sess.program.modules.values())
    assert modules and all(m._jitted for m in modules)
    if cuda_backend() == "cuda":
        assert all(k.overloads for m in modules for k in m._jitted.values())


def test_digits_on_the_gpu_target_matches_onnxruntime():
    from compiler.frontend.zoo import digits_test, load_zoo

    model = load_zoo("digits").SerializeToString()
    images, _ = digits_test()
    sess = InferenceSession(model, target="gpu")
    (logits,) = sess.run(None, {"data": images[:1]})
    (ref,) = ort.InferenceSession(model).run(None, {"data": images[:1]})
    assert _rel_err(logits, ref) <= 1e-4


def test_gpu_programs_are_not_saved_as_artifacts(tmp_path, capsys):
    sess = InferenceSession(_small_cnn(), target="gpu")
    with pytest.raises(SessionError, match="cannot be saved"):
        sess.save(tmp_path / "m.vtac")
    model = tmp_path / "m.onnx"
    model.write_bytes(_small_cnn())
    out = tmp_path / "m.vtac"
    assert main(["compile", str(model), "--target", "gpu", "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "artifacts hold CPU or accelerator code only" in err and "Traceback" not in err
    assert not out.exists()


def test_vtac_run_target_gpu_json(tmp_path, capsys):
    model = tmp_path / "m.onnx"
    model.write_bytes(_small_cnn())
    assert main(["run", str(model), "--target", "gpu", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["outputs"]["prob"]["shape"] == [1, 5]
    assert {g["target"] for g in doc["groups"]} == {"gpu"}
    # the profile names where the kernels ran: numba's CUDA simulator or a GPU
    assert {g["device"] for g in doc["groups"]} == {cuda_backend()}


def test_the_table_labels_simulated_gpu_time(tmp_path, capsys):
    model = tmp_path / "m.onnx"
    model.write_bytes(_small_cnn())
    assert main(["run", str(model), "--target", "gpu"]) == 0
    out = capsys.readouterr().out
    simulated = "cuda-simulator" in out and "not a GPU's" in out
    assert simulated == (cuda_backend() == "cuda-simulator")


def test_a_run_copies_only_its_inputs_in_and_its_outputs_out(monkeypatch):
    # the constants go to the device when the session is built, the arena and a buffer for each
    # input and output stay there: a run copies the feed into its buffer and the output back,
    # allocates nothing on the device, and copies nothing for the groups between them
    from numba import cuda

    sess = InferenceSession(_small_cnn(), target="gpu")
    x = np.random.default_rng(1).normal(size=(1, 3, 8, 8)).astype(np.float32)
    (first,) = sess.run(None, {"x": x})
    device_array = type(cuda.device_array(1, np.float32))
    calls: list[tuple[str, tuple[int, ...]]] = []

    def counting(name, fn):
        def wrapped(*args, **kwargs):
            array = args[1] if name.startswith("copy") else args[0]
            calls.append((name, np.shape(array)))
            return fn(*args, **kwargs)

        return wrapped

    for name in ("to_device", "device_array"):
        monkeypatch.setattr(cuda, name, counting(name, getattr(cuda, name)))
    for name in ("copy_to_device", "copy_to_host"):
        monkeypatch.setattr(device_array, name, counting(name, getattr(device_array, name)))
    for _ in range(2):
        (again,) = sess.run(None, {"x": x})
        np.testing.assert_array_equal(again, first)
    n_out = int(np.prod(first.shape))
    assert calls == [("copy_to_device", (x.size,)), ("copy_to_host", (n_out,))] * 2
    assert len(sess.profile().groups) > 3  # several groups, none of which copied anything


def test_a_launch_is_prepared_only_where_numba_would_only_convert_the_arguments():
    # the prepared launch (arguments converted once) stands in for numba's launch only where
    # that launch does nothing else; otherwise, or where numba-cuda lacks the parts it uses,
    # the overload's own launch is kept (None)
    from types import SimpleNamespace

    from compiler.targets.gpu.module import _prepared_launch

    configured = SimpleNamespace(griddim=(1, 1, 1), blockdim=(32, 1, 1), stream=0, sharedmem=0)
    function = SimpleNamespace(kernel=object())
    plain = dict(
        _codelibrary=SimpleNamespace(get_cufunc=lambda: function),
        argument_types=("t",),
        debug=False,
        cooperative=False,
        extensions=[],
    )

    def overload(prepare, **changes):
        return SimpleNamespace(**{**plain, "_prepare_args": prepare, **changes})

    def pointer(ty, value, stream, writeback, values):
        values.extend([0, 0, 8, 4, 1234])

    def copied_back(ty, value, stream, writeback, values):
        writeback.append(lambda: None)
        values.append(0)

    pytest.importorskip("cuda.core", reason="numba-cuda's cuda.core is not installed")
    launch = _prepared_launch(overload(pointer), configured, ("array",))
    assert launch is not None and launch.args[3:] == (0, 0, 8, 4, 1234)
    assert _prepared_launch(overload(pointer, debug=True), configured, ("a",)) is None
    assert _prepared_launch(overload(pointer, cooperative=True), configured, ("a",)) is None
    assert _prepared_launch(overload(pointer, extensions=[object()]), configured, ("a",)) is None
    assert _prepared_launch(overload(copied_back), configured, ("a",)) is None
    missing = SimpleNamespace(**{k: v for k, v in plain.items() if k != "_codelibrary"})
    assert _prepared_launch(missing, configured, ("a",)) is None
