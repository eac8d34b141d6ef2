"""Valid models at the edges of what a graph can be: scalar tensors, constant outputs."""

from __future__ import annotations

import numpy as np
from onnx import helper

from runtime.session import InferenceSession
from tests.compiler.frontend.helpers import check_against_onnxruntime, make_model


def test_a_rank_0_input_and_output_run_on_the_cpu():
    model = make_model([helper.make_node("Relu", ["s"], ["y"])], {"s": np.float32(0)}, ["y"])
    for v in (-1.5, 2.25):
        (y,) = InferenceSession(model.SerializeToString()).run(None, {"s": np.array(v, np.float32)})
        assert y.shape == () and y == max(v, 0.0)
    check_against_onnxruntime(model, {"s": np.array(3.5, np.float32)})


def test_output_names_are_archive_keys_never_paths(tmp_path, monkeypatch, capsys):
    import zipfile

    from runtime.cli import main

    model = make_model(
        [helper.make_node("Relu", ["x"], ["../../x"]), helper.make_node("Neg", ["x"], ["a/b"])],
        {"x": np.zeros((1, 4), np.float32)},
        ["../../x", "a/b"],
    )
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert main(["run", str(path), "--output", "out.npz"]) == 0
    names = zipfile.ZipFile(work / "out.npz").namelist()
    assert sorted(names) == ["..%2F..%2Fx.npy", "a%2Fb.npy"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx", "work"]
    capsys.readouterr()
    # a file that cannot be written is refused in one line, and nothing is left behind
    assert main(["run", str(path), "--output", "no/such/dir/out.npz"]) == 1
    assert capsys.readouterr().err.count("\n") == 1
    assert sorted(p.name for p in work.iterdir()) == ["out.npz"]


def test_a_scalar_constant_survives_the_vta_artifact(tmp_path):
    """A 0-d host constant (PRelu's shared slope) keeps its shape through save and load."""
    rng = np.random.default_rng(0)
    model = make_model(
        [
            helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("PRelu", ["c", "slope"], ["y"]),
        ],
        {"x": np.zeros((1, 3, 8, 8), np.float32)},
        ["y"],
        {"w": rng.normal(size=(8, 3, 3, 3)).astype(np.float32), "slope": np.float32(0.25)},
    )
    x = rng.normal(size=(1, 3, 8, 8)).astype(np.float32)
    sess = InferenceSession(model.SerializeToString(), target="vta", calibration=x)
    (a,) = sess.run(None, {"x": x})
    sess.save(tmp_path / "m.vtac")
    (b,) = InferenceSession(tmp_path / "m.vtac").run(None, {"x": x})
    assert a.tobytes() == b.tobytes()


def test_compile_checks_its_output_before_any_work(tmp_path, capsys):
    from runtime.cli import main

    (tmp_path / "file").write_text("")
    for out, what in [
        (tmp_path, "is a directory"),
        (tmp_path / "file" / "m.vtac", "not a directory"),
    ]:
        for target in ("cpu", "vta"):
            assert main(["compile", "digits", "--target", target, "-o", str(out)]) == 1
            err = capsys.readouterr().err
            assert err.startswith("vtac compile: error: -o ") and what in err, err
            assert err.count("\n") == 1


def test_a_boolean_output_of_many_columns_is_described(tmp_path, capsys):
    from runtime.cli import main

    model = make_model(
        [helper.make_node("Greater", ["x", "z"], ["y"])],
        {"x": np.zeros((1, 7), np.float32)},
        ["y"],
        {"z": np.zeros((1, 7), np.float32)},
    )
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    assert main(["run", str(path), "--json"]) == 0
    assert "top5" not in capsys.readouterr().out  # a ranking of booleans means nothing


def test_graph_on_the_accelerator_takes_a_uint8_input(tmp_path, capsys):
    from onnx import TensorProto

    from runtime.cli import main

    rng = np.random.default_rng(0)
    model = make_model(
        [
            helper.make_node("Cast", ["x"], ["f"], to=TensorProto.FLOAT),
            helper.make_node("Conv", ["f", "w"], ["y"], pads=[1, 1, 1, 1]),
        ],
        {"x": np.zeros((1, 3, 8, 8), np.uint8)},
        ["y"],
        {"w": rng.normal(size=(4, 3, 3, 3)).astype(np.float32)},
    )
    path = tmp_path / "u8.onnx"
    path.write_bytes(model.SerializeToString())
    assert main(["graph", str(path), "--target", "vta"]) == 0
    assert "conv2d-group" in capsys.readouterr().out
