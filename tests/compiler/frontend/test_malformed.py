"""Malformed and unsupported ONNX models are refused with the fault named, never a traceback."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import helper

from compiler.errors import FrontendError, FrontendWarning
from compiler.frontend.onnx_import import from_onnx
from tests.compiler.frontend.helpers import make_model


def small_model() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1, 3, 8, 8)).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("GlobalAveragePool", ["r"], ["p"], name="pool"),
        helper.make_node("Flatten", ["p"], ["y"], name="flat"),
    ]
    inits = {"w": rng.normal(size=(16, 3, 3, 3)).astype(np.float32)}
    return make_model(nodes, {"x": x}, ["y"], inits)


def test_small_model_imports():
    assert [n.op for n in from_onnx(small_model()).nodes] == [
        "conv2d", "relu", "global_avg_pool2d", "reshape"
    ]  # fmt: skip


def test_truncated_file_at_every_cut(tmp_path):
    data = small_model().SerializeToString()
    cuts = sorted({*range(0, len(data), max(1, len(data) // 40)), len(data) - 1})
    for cut in cuts:
        path = tmp_path / f"cut{cut}.onnx"
        path.write_bytes(data[:cut])
        with pytest.raises(FrontendError):
            from_onnx(path)
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(FrontendError, match="truncated"):
        from_onnx(path)


def test_not_a_model_and_missing_file(tmp_path):
    with pytest.raises(FrontendError, match="no such file"):
        from_onnx(tmp_path / "absent.onnx")
    with pytest.raises(FrontendError, match="not a regular file"):
        from_onnx(tmp_path)
    (tmp_path / "empty.onnx").write_bytes(b"")
    with pytest.raises(FrontendError, match="empty file"):
        from_onnx(tmp_path / "empty.onnx")
    (tmp_path / "text.onnx").write_text("graph { node: relu }\n")
    with pytest.raises(FrontendError, match="not a valid ONNX protobuf"):
        from_onnx(tmp_path / "text.onnx")


@pytest.mark.parametrize("version", [0, 2, 99])
def test_wrong_ir_version(version):
    m = small_model()
    m.ir_version = version
    with pytest.raises(FrontendError, match=f"ir_version {version} is not supported"):
        from_onnx(m)


@pytest.mark.parametrize("opset", [7, 21])
def test_opset_out_of_range(opset):
    m = small_model()
    m.opset_import[0].version = opset
    with pytest.raises(FrontendError, match=f"opset {opset} is not supported"):
        from_onnx(m)


def test_missing_initializer():
    m = small_model()
    del m.graph.initializer[:]
    with pytest.raises(FrontendError, match=r"node 'conv' \(Conv\): input 'w' is not produced.*"
                       "missing initializer"):  # fmt: skip
        from_onnx(m)


def test_cyclic_graph():
    m = small_model()
    m.graph.node[0].input[0] = "y"  # conv reads the flatten's output: a cycle through all four
    with pytest.raises(FrontendError) as err:
        from_onnx(m)
    assert "cycle through nodes ['conv', 'flat', 'pool', 'relu'] (each reads the next" in str(
        err.value
    )
    m = small_model()
    m.graph.node[2].input[0] = "y"
    with pytest.raises(FrontendError, match=r"cycle through nodes \['pool', 'flat'\]"):
        from_onnx(m)


def test_value_produced_twice():
    m = small_model()
    m.graph.node[1].output[0] = "c"
    with pytest.raises(FrontendError, match="value 'c' is produced twice"):
        from_onnx(m)


def test_every_unsupported_node_listed_at_once():
    x = np.zeros((1, 4, 8, 8), np.float32)
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="ok"),
        helper.make_node("Resize", ["a", "", "scales"], ["b"], mode="cubic", name="up"),
        helper.make_node("Det", ["b"], ["c"], name="det"),
        helper.make_node("NonZero", ["c"], ["d"], name="nz"),
        helper.make_node("Gather", ["c", "d"], ["y"], name="gather_activation"),
        helper.make_node("MyOp", ["y"], ["z"], name="custom", domain="com.example"),
    ]
    inits = {"scales": np.ones(4, np.float32)}
    m = make_model(nodes, {"x": x}, ["z", "d"], inits)
    m.opset_import.append(helper.make_opsetid("com.example", 1))
    with pytest.raises(FrontendError) as err:
        from_onnx(m)
    text = str(err.value)
    assert "5 unsupported node(s)" in text
    for line in (
        "up (Resize, ai.onnx opset 13): mode 'cubic' (supported: nearest, linear)",
        "det (Det, ai.onnx opset 13): operator not supported",
        "nz (NonZero, ai.onnx opset 13)",
        "gather_activation (Gather, ai.onnx opset 13): non-constant shape, axes or bound input",
        "custom (MyOp, com.example opset 1): domain 'com.example'",
    ):
        assert line in text
    # more than three: how many of each operator, on the last line
    assert text.splitlines()[-1] == ("  by operator: Resize 1, Det 1, NonZero 1, Gather 1, MyOp 1")


def test_symbolic_dims_need_input_shapes():
    m = small_model()
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    with pytest.raises(FrontendError, match=r"input 'x': dimension 0 is symbolic \(batch\)"):
        from_onnx(m)
    g = from_onnx(m, input_shapes={"x": (2, 3, 8, 8)})
    assert g.outputs[0].type.shape == (2, 16)
    with pytest.raises(FrontendError, match="unknown input 'data'"):
        from_onnx(m, input_shapes={"data": (2, 3, 8, 8)})


def test_conv_3d_named():
    x = np.zeros((1, 2, 4, 4, 4), np.float32)
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="c3d")
    m = make_model([node], {"x": x}, ["y"], {"w": np.zeros((4, 2, 3, 3, 3), np.float32)})
    with pytest.raises(FrontendError, match=r"node 'c3d' \(Conv\): only 1-d and 2-d convolutions"):
        from_onnx(m)


def test_shape_mismatch_named_by_node():
    m = small_model()
    m.graph.initializer[0].CopyFrom(
        onnx.numpy_helper.from_array(np.zeros((16, 5, 3, 3), np.float32), "w")
    )
    with pytest.raises(FrontendError, match=r"node 'conv' \(Conv\): .*input 1 \(w\)"):
        from_onnx(m, check=False)


def test_cli_refuses_without_traceback(tmp_path):
    path = tmp_path / "bad.onnx"
    path.write_bytes(small_model().SerializeToString()[:50])
    proc = subprocess.run(
        [sys.executable, "-m", "runtime.cli", "graph", str(path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("vtac graph: error: ") and str(path) in proc.stderr


def test_malformed_attributes_named_by_node():
    m = small_model()
    del m.graph.node[0].attribute[:]
    m.graph.node[0].attribute.append(helper.make_attribute("kernel_shape", [5, 5]))
    with pytest.raises(FrontendError, match=r"node 'conv' \(Conv\): kernel_shape \[5, 5\] differs"):
        from_onnx(m)
    x = np.zeros((1, 2, 4, 4), np.float32)
    pool = helper.make_node("MaxPool", ["x"], ["y"], name="pool")  # no kernel_shape
    m = make_model([pool], {"x": x}, ["y"], output_shapes={"y": (1, 2, 4, 4)})
    with pytest.raises(FrontendError, match="onnx.checker refuses it"):
        from_onnx(m)
    with pytest.raises(FrontendError, match=r"node 'pool' \(MaxPool\): malformed node"):
        from_onnx(m, check=False)


def test_declared_output_type_must_match():
    m = small_model()
    m.graph.output[0].type.tensor_type.elem_type = onnx.TensorProto.INT64
    with pytest.raises(FrontendError, match=r"output 'y' is declared with element type 7 "
                       r"\(int64\), the graph computes float32"):  # fmt: skip
        from_onnx(m)


def test_a_wrongly_declared_output_rank_is_a_warning_and_the_computed_shape_is_used():
    # as onnxruntime, which warns and runs such a model (ddddocr's recognizer declares
    # (1, seqlen) for the (seq, 1, classes) it computes)
    m = small_model()
    m.graph.output[0].type.tensor_type.shape.dim.add().dim_value = 1
    with pytest.warns(FrontendWarning, match=r"output 'y' is declared with rank 3, the graph "
                      r"computes shape \[1, 16\]: the computed shape is used"):  # fmt: skip
        g = from_onnx(m, check=False)
    assert g.outputs[0].type.shape == (1, 16)


@pytest.mark.parametrize("check", [True, False])
def test_corrupted_bytes_import_or_are_refused(check):
    """Random byte changes anywhere in a model file: each result imports or is refused with a
    FrontendError, never another exception (with and without onnx.checker)."""
    data = small_model().SerializeToString()
    rng = np.random.default_rng(1 + check)
    for _ in range(400):
        corrupted = bytearray(data)
        for _ in range(int(rng.integers(1, 4))):
            corrupted[int(rng.integers(0, len(corrupted)))] = int(rng.integers(0, 256))
        try:
            from_onnx(bytes(corrupted), check=check)
        except FrontendError:
            pass


def _x() -> dict[str, np.ndarray]:
    return {"x": np.zeros((1, 3, 8, 8), np.float32)}


def _w() -> dict[str, np.ndarray]:
    return {"w": np.ones((4, 3, 3, 3), np.float32)}


@pytest.mark.parametrize(
    "nodes, inits, what",
    [
        ([helper.make_node("LRN", ["x"], ["y"], size=0, name="n")], {}, "size must be at least 1"),
        (
            [helper.make_node("Clip", ["x", "lo", ""], ["y"], name="n")],
            {"lo": np.array(np.nan, np.float32)},
            "Clip.*its min is NaN",
        ),
        (
            [helper.make_node("Clip", ["x", "", "hi"], ["y"], name="n")],
            {"hi": np.array(np.nan, np.float32)},
            "its max is NaN",
        ),
        (
            [helper.make_node("Conv", ["x", "w"], ["y"], auto_pad="SAME_UPPER", pads=[1] * 4)],
            _w(),
            "auto_pad SAME_UPPER and explicit pads cannot be used together",
        ),
        (
            [
                helper.make_node(
                    "MaxPool", ["x"], ["y"], kernel_shape=[2, 2], auto_pad="VALID", pads=[0] * 4
                )
            ],  # fmt: skip
            {},
            "auto_pad VALID and explicit pads",
        ),
    ],
)
def test_attributes_onnx_forbids_are_refused_naming_the_node(nodes, inits, what):
    with pytest.raises(FrontendError, match=what):
        from_onnx(make_model(nodes, _x(), ["y"], inits), check=False)


def test_a_model_without_outputs_is_refused():
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], _x(), ["y"])
    del model.graph.output[:]
    with pytest.raises(FrontendError, match="declares no outputs"):
        from_onnx(model)


def test_an_initializer_that_contradicts_the_input_it_shadows_is_refused():
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], _x(), ["y"])
    model.graph.initializer.append(onnx.numpy_helper.from_array(np.zeros((2, 2), np.float32), "x"))
    with pytest.raises(FrontendError, match=r"initializer 'x' has shape \[2, 2\] but the graph "
                       r"input of that name declares \[1, 3, 8, 8\]"):  # fmt: skip
        from_onnx(model)
    del model.graph.initializer[:]
    model.graph.initializer.append(onnx.numpy_helper.from_array(np.ones((1, 3, 8, 8)), "x"))
    with pytest.raises(FrontendError, match="element type 11 but the graph input"):
        from_onnx(model)
    del model.graph.initializer[:]
    model.graph.initializer.append(
        onnx.numpy_helper.from_array(np.ones((1, 3, 8, 8), np.float32), "x")
    )
    from_onnx(model)  # the same type and shape: the input's default value


def test_a_device_or_a_directory_is_not_a_model(tmp_path):
    with pytest.raises(FrontendError, match="not a regular file"):
        from_onnx("/dev/zero")
    with pytest.raises(FrontendError, match="not a regular file"):
        from_onnx(tmp_path)
