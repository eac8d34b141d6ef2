"""``vtac compile`` and ``vtac run`` end to end (the trained digits model, small ResNets)."""

import json

import numpy as np
import pytest

from runtime.cli import main
from runtime.session import InferenceSession


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    path = tmp_path_factory.mktemp("art") / "digits.vtac"
    assert main(["compile", "digits", "-o", str(path), "--threads", "1"]) == 0
    return path


def test_compile_reports_groups_and_the_memory_plan(tmp_path, capsys):
    out = tmp_path / "r18.vtac"
    code = main(["compile", "resnet18", "--image-size", "32", "-o", str(out), "--threads", "1"])
    text = capsys.readouterr().out
    assert code == 0 and out.stat().st_size > 0
    assert "compiled resnet18" in text and "groups" in text and "naive" in text


def test_run_artifact_with_input_output_and_json(artifact, tmp_path, capsys):
    from compiler.frontend.zoo import digits_test

    images, labels = digits_test()
    x = tmp_path / "x.npy"
    np.save(x, images[:1])
    npz = tmp_path / "out.npz"
    capsys.readouterr()
    code = main(["run", str(artifact), "--input", str(x), "--output", str(npz), "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    doc = json.loads(captured.out)
    assert set(doc) == {"outputs", "groups", "total_us"}
    logits = doc["outputs"]["logits"]
    assert logits["shape"] == [1, 10] and logits["dtype"] == "float32"
    assert logits["top5"][0][0][0] == int(labels[0])  # the trained model gets it right
    assert all({"name", "ops", "target", "time_us"} <= set(g) for g in doc["groups"])
    with np.load(npz) as saved:
        assert sorted(saved.files) == ["logits"]
        ref = InferenceSession(artifact).run(None, {"data": images[:1]})[0]
        assert np.array_equal(saved["logits"], ref)


def test_run_named_input_prints_top5_and_the_profile(artifact, tmp_path, capsys):
    x = tmp_path / "x.npy"
    np.save(x, np.zeros((1, 1, 28, 28), np.float32))
    assert main(["run", str(artifact), "--input", f"data={x}"]) == 0
    out = capsys.readouterr().out
    assert "logits: float32[1,10]" in out and "top-5:" in out
    assert "time (us)" in out and "total" in out


def test_run_without_input_says_it_feeds_random_data(capsys):
    assert main(["run", "resnet18", "--image-size", "32", "--threads", "1"]) == 0
    captured = capsys.readouterr()
    assert "seeded random data (seed 0) to data float32[1, 3, 32, 32]" in captured.err
    assert "logits: float32[1,1000]" in captured.out and "conv2d" in captured.out


def test_a_non_classifier_output_prints_statistics(tmp_path, capsys):
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = tmp_path / "relu.onnx"
    path.write_bytes(model.SerializeToString())
    assert main(["run", str(path), "--threads", "1"]) == 0
    out = capsys.readouterr().out
    assert "y: float32[2,3] min 0 max" in out and "top-5" not in out


@pytest.mark.parametrize(
    "argv,message",
    [
        (["run", "missing.onnx"], "vtac run: error: model missing.onnx: no such file"),
        (["run", "{art}", "--input", "{bad}"], "input 'data' has shape (1, 1, 8, 8)"),
        (["run", "{art}", "--input", "{f64}"], "input 'data' has dtype float64, expected float32"),
        (["run", "{art}", "--input", "nope=x.npy", "--input", "y.npy"], "no such file"),
        (["run", "{broken}"], "vtac run: error: artifact"),
        (["run", "{art}", "--output", "{dir}/o.txt"], "the file must end in .npz"),
    ],
    ids=[
        "missing-model",
        "wrong-shape",
        "wrong-dtype",
        "missing-input-file",
        "broken-artifact",
        "npz-name",
    ],
)
def test_errors_are_one_line_without_traceback(artifact, tmp_path, capsys, argv, message):
    bad = tmp_path / "bad.npy"
    np.save(bad, np.zeros((1, 1, 8, 8), np.float32))
    f64 = tmp_path / "f64.npy"
    np.save(f64, np.zeros((1, 1, 28, 28), np.float64))
    broken = tmp_path / "broken.vtac"
    broken.write_bytes(artifact.read_bytes()[:1000])
    subst = {
        "art": str(artifact),
        "bad": str(bad),
        "f64": str(f64),
        "broken": str(broken),
        "dir": str(tmp_path),
    }
    code = main([a.format(**subst) for a in argv])
    err = capsys.readouterr().err
    assert code == 1
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_progress_bar_on_request(tmp_path, capsys):
    pytest.importorskip("tqdm")
    out = tmp_path / "d.vtac"
    assert main(["compile", "digits", "-o", str(out), "--threads", "1", "--progress"]) == 0
    assert "compiling digits" in capsys.readouterr().err


def test_run_a_two_input_model_with_named_inputs(tmp_path, capsys):
    from onnx import TensorProto, helper

    vi = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 8]) for n in "abc"]
    node = helper.make_node("Mul", ["a", "b"], ["c"], name="mul")
    model = helper.make_model(
        helper.make_graph([node], "g", vi[:2], vi[2:]),
        opset_imports=[helper.make_opsetid("", 13)],
    )
    model.ir_version = 8
    path = tmp_path / "mul.onnx"
    path.write_bytes(model.SerializeToString())
    a, b = np.arange(8, dtype=np.float32).reshape(1, 8), np.full((1, 8), 2, np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    npz = tmp_path / "o.npz"
    argv = ["run", str(path), "--input", f"b={tmp_path / 'b.npy'}", "--output", str(npz)]
    assert main([*argv, "--input", f"a={tmp_path / 'a.npy'}", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["outputs"]["c"]["top5"][0][0] == [7, 14.0]
    with np.load(npz) as saved:
        assert np.array_equal(saved["c"], a * b)
    assert main([*argv, "--input", str(tmp_path / "a.npy")]) == 1
    assert "the model has 2 inputs (a, b): write NAME=FILE" in capsys.readouterr().err
