"""Exported models with free (symbolic) input dimensions through ``InferenceSession`` and
``vtac compile``/``run``: shapes from the feeds or from ``--input-shape``, contradictions
refused naming the input and the dimension."""

from __future__ import annotations

import json

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from PIL import Image

from runtime.cli import main
from runtime.errors import FeedError
from runtime.session import InferenceSession

RNG = np.random.default_rng(7)
W = (RNG.normal(size=(8, 3, 3, 3)) * 0.3).astype(np.float32)
FC = (RNG.normal(size=(8, 5)) * 0.3).astype(np.float32)


def _classifier_model():
    """A classifier exported as ``x: [-1, 3, ?, ?]``: conv, relu, global pool, matmul."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [-1, 3, None, None])
    x.type.tensor_type.shape.dim[0].ClearField("dim_value")  # -1: no value at all
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("GlobalAveragePool", ["r"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flat"),
        helper.make_node("MatMul", ["f", "fc"], ["y"], name="fc"),
    ]
    inits = [numpy_helper.from_array(W, "w"), numpy_helper.from_array(FC, "fc")]
    graph = helper.make_graph(nodes, "classifier", [x], [y], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def _reference(x):
    n, _, h, w = x.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    c = np.zeros((n, 8, h, w))
    for ky in range(3):
        for kx in range(3):
            c += np.einsum("nchw,oc->nohw", xp[:, :, ky : ky + h, kx : kx + w], W[:, :, ky, kx])
    return np.maximum(c, 0).mean((2, 3)) @ FC


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    import onnx

    path = tmp_path_factory.mktemp("m") / "classifier.onnx"
    onnx.save(_classifier_model(), str(path))
    return path


def test_session_builds_for_the_feeds_and_again_for_new_shapes(model_path):
    sess = InferenceSession(model_path, num_threads=1)
    assert [(i.name, i.shape) for i in sess.get_inputs()] == [("x", (-1, 3, -1, -1))]
    assert [(o.name, o.shape) for o in sess.get_outputs()] == [("y", (-1, 5))]
    with pytest.raises(Exception, match=r"input 'x': dimension 0 is symbolic \(\?\)"):
        sess.program  # noqa: B018 - nothing is compiled before the shapes are known
    for shape in ((2, 3, 8, 8), (1, 3, 5, 7), (2, 3, 8, 8)):
        x = RNG.normal(size=shape).astype(np.float32)
        (y,) = sess.run(None, {"x": x})
        np.testing.assert_allclose(y, _reference(x), rtol=1e-4, atol=1e-4)
        assert sess.get_inputs()[0].shape == shape
    assert len(sess._built) == 2  # the third run reuses the first build
    with pytest.raises(FeedError, match=r"input 'x': dimension 1 is 3 in the model, given 2"):
        sess.run(None, {"x": np.zeros((1, 2, 8, 8), np.float32)})
    with pytest.raises(FeedError, match=r"input 'x': the model declares rank 4"):
        sess.run(None, {"x": np.zeros((3, 8, 8), np.float32)})


def test_session_input_shapes_compile_at_once_and_are_checked(model_path):
    sess = InferenceSession(model_path, num_threads=1, input_shapes={"x": (1, 3, 6, 6)})
    assert sess.get_inputs()[0].shape == (1, 3, 6, 6) and sess.program.inputs[0].shape == (
        1,
        3,
        6,
        6,
    )
    with pytest.raises(FeedError, match=r"input 'x' has shape \(1, 3, 7, 7\), expected"):
        sess.run(None, {"x": np.zeros((1, 3, 7, 7), np.float32)})
    with pytest.raises(Exception, match=r"input 'x': dimension 1 is 3 in the model, given 1"):
        InferenceSession(model_path, input_shapes={"x": (1, 1, 6, 6)})


def test_vtac_run_takes_the_shape_from_the_npy(model_path, tmp_path, capsys):
    x = RNG.normal(size=(2, 3, 9, 9)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    assert main(["run", str(model_path), "--input", str(tmp_path / "x.npy"), "--threads", "1",
                 "--json", "--output", str(tmp_path / "o.npz")]) == 0  # fmt: skip
    doc = json.loads(capsys.readouterr().out)
    assert doc["outputs"]["y"]["shape"] == [2, 5]
    with np.load(tmp_path / "o.npz") as saved:
        np.testing.assert_allclose(saved["y"], _reference(x), rtol=1e-4, atol=1e-4)


def test_vtac_compile_and_run_with_input_shape(model_path, tmp_path, capsys):
    art = tmp_path / "m.vtac"
    assert main(["compile", str(model_path), "-o", str(art), "--threads", "1",
                 "--input-shape", "x=1,3,12,12"]) == 0  # fmt: skip
    assert main(["run", str(art), "--threads", "1"]) == 0
    assert "y: float32[1,5]" in capsys.readouterr().out
    assert main(["run", str(model_path), "--threads", "1", "--input-shape", "x=1,3,4,4"]) == 0


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["compile", "-o", "m.vtac"],
            r"input 'x' dimension 0 is free \(symbolic\): give a static shape with --input-shape",
        ),
        (
            ["run"],
            r"input 'x' dimension 0 is free \(symbolic\): give --input FILE or --input-shape",
        ),
        (
            ["run", "--input-shape", "x=1,4,8,8"],
            r"input 'x': dimension 1 is 3 in the model, given 4",
        ),
        (
            ["run", "--input-shape", "x=1,3,8"],
            r"input 'x': the model declares rank 4 \[\?, 3, \?, \?\], given rank 3",
        ),
        (
            ["run", "--input-shape", "data=1,3,8,8"],
            r"names unknown input 'data' \(the model's inputs: x\)",
        ),
        (["run", "--input-shape", "x=1,3,8,8", "--target", "vta"], None),
    ],
)
def test_contradicting_or_missing_shapes_are_refused_in_one_line(
    model_path, tmp_path, capsys, monkeypatch, argv, message
):
    monkeypatch.chdir(tmp_path)
    cmd, *rest = argv
    threads = [] if "vta" in rest else ["--threads", "1"]  # vta runs no CPU thread pool
    code = main([cmd, str(model_path), *threads, *rest])
    err = capsys.readouterr().err
    if message is None:
        assert code == 0, err
        return
    assert code != 0
    (line,) = err.strip().splitlines()
    assert line.startswith(f"vtac {cmd}: error: ")
    import re

    assert re.search(message, line), line


def test_npz_feeds_and_an_image_through_vtac_run(model_path, tmp_path, capsys):
    x = RNG.normal(size=(1, 3, 6, 6)).astype(np.float32)
    np.savez(tmp_path / "feeds.npz", x=x)
    assert main(["run", str(model_path), "--input", str(tmp_path / "feeds.npz"), "--json",
                 "--threads", "1"]) == 0  # fmt: skip
    assert json.loads(capsys.readouterr().out)["outputs"]["y"]["shape"] == [1, 5]
    np.savez(tmp_path / "bad.npz", x=x, z=x)
    assert main(["run", str(model_path), "--input", str(tmp_path / "bad.npz")]) != 0
    assert "arrays 'z' name no input" in capsys.readouterr().err
    pixels = RNG.integers(0, 256, (20, 30, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(tmp_path / "cat.png")
    out = tmp_path / "o.npz"
    assert main(["run", str(model_path), "--input", str(tmp_path / "cat.png"), "--resize",
                 "short:10,crop:8", "--preprocess", "unit", "--output", str(out),
                 "--threads", "1"]) == 0  # fmt: skip
    small = np.asarray(Image.fromarray(pixels).resize((15, 10), Image.Resampling.BILINEAR))
    want = _reference(small[1:9, 3:11].astype(np.float32).transpose(2, 0, 1)[None] / 255)
    with np.load(out) as saved:
        np.testing.assert_allclose(saved["y"], want, rtol=1e-4, atol=1e-4)


def test_vta_run_calibrates_on_a_folder_of_images(model_path, tmp_path, capsys):
    folder = tmp_path / "calib"
    folder.mkdir()
    for k in range(3):
        Image.fromarray(RNG.integers(0, 256, (8, 8, 3), dtype=np.uint8)).save(folder / f"{k}.png")
    Image.fromarray(RNG.integers(0, 256, (8, 8, 3), dtype=np.uint8)).save(tmp_path / "in.png")
    code = main(["run", str(model_path), "--target", "vta", "--input", str(tmp_path / "in.png"),
                 "--calibrate", str(folder), "--json"])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    doc = json.loads(captured.out)
    assert [o["shape"] for o in doc["outputs"].values()] == [[1, 5]]
    assert any(layer["device"] == "vta" for layer in doc["layers"])


def test_an_artifact_takes_only_its_own_shapes(model_path, tmp_path):
    art = tmp_path / "m.vtac"
    InferenceSession(model_path, num_threads=1, input_shapes={"x": (1, 3, 4, 4)}).save(art)
    sess = InferenceSession(art, input_shapes={"x": (1, 3, 4, 4)})
    assert sess.get_inputs()[0].shape == (1, 3, 4, 4)
    with pytest.raises(
        Exception, match=r"input 'x': the artifact was compiled for shape \[1, 3, 4, 4\]"
    ):
        InferenceSession(art, input_shapes={"x": (1, 3, 8, 8)})


def test_vtac_graph_takes_input_shape_and_refuses_a_contradiction(model_path, capsys):
    assert main(["graph", str(model_path), "--after", "import", "--input-shape", "x=2,3,6,6"]) == 0
    assert "graph classifier(%x: float32[2,3,6,6]:NCHW)" in capsys.readouterr().out
    assert main(["graph", str(model_path), "--input-shape", "x=2,3,6"]) != 0
    assert "input 'x': the model declares rank 4" in capsys.readouterr().err
