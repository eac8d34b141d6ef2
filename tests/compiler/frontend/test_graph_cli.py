"""``vtac graph MODEL [--after PASS] [--dot FILE]`` on zoo names and files."""

from __future__ import annotations

import pytest

from runtime.cli import main
from tests.compiler.frontend.test_malformed import small_model


def run(capsys, *argv):
    rc = main(["graph", *argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_zoo_model_whole_pipeline(capsys):
    rc, out, err = run(capsys, "resnet18", "--image-size", "32")
    assert rc == 0 and err == ""
    assert out.startswith("graph resnet18(%data: float32[1,3,32,32]:NCHW) {")
    assert "  group 0 complex-out-fusable anchor=%conv1 {" in out
    assert "# memory plan: peak" in out


def test_after_a_pass_and_import(capsys):
    rc, out, _ = run(capsys, "resnet18", "--image-size", "32", "--after", "import")
    assert rc == 0 and "batch_norm(" in out and "group" not in out
    rc, out, _ = run(capsys, "resnet18", "--image-size", "32", "--after", "fold_batch_norm")
    assert rc == 0 and "batch_norm(" not in out and "group" not in out
    rc, out, _ = run(capsys, "resnet18", "--image-size", "32", "--block-c", "16",
                     "--after", "fuse_ops")  # fmt: skip
    assert rc == 0 and "NCHW1n16c" in out and "group" in out and "memory plan" not in out


def test_file_and_dot(capsys, tmp_path):
    path = tmp_path / "small.onnx"
    path.write_bytes(small_model().SerializeToString())
    dot = tmp_path / "small.dot"
    rc, out, _ = run(capsys, str(path), "--dot", str(dot))
    assert rc == 0 and "conv2d(%x, %w)" in out
    text = dot.read_text()
    assert text.startswith("digraph test {") and "subgraph cluster_0" in text
    assert '"conv" -> "relu"' in text and text.rstrip().endswith("}")


def test_list_passes(capsys):
    rc, out, _ = run(capsys, "--list-passes", "--block-c", "16")
    assert rc == 0 and out.split() == [
        "import", "fold_constants", "elementwise_before_interleave", "fold_batch_norm",
        "fold_bias_add", "fold_pad", "fold_affine",
        "fold_hard_activations", "factor_residual_gate", "conv_columns_to_rows", "dense_to_matmul",
        "flatten_matmul_rows",
        "eliminate_dead_nodes",
        "pad_channels",
        "pack_layout",
        "fold_layout_constants", "eliminate_dead_nodes_final", "fuse_ops", "plan_memory",
    ]  # fmt: skip


@pytest.mark.parametrize(
    "argv,message",
    [
        (["resnet18", "--after", "fusion"], "no graph pass named 'fusion'"),
        (["nosuch-model"], "nosuch-model: no such file, and not a zoo model"),
        ([], "give a MODEL"),
    ],
)
def test_errors_are_one_line(capsys, argv, message):
    rc, out, err = run(capsys, *argv)
    assert rc == 1 and out == ""
    assert err.startswith("vtac graph: error: ") and message in err and "Traceback" not in err


def test_docstring_examples():
    import doctest

    import runtime.graph_cli

    assert doctest.testmod(runtime.graph_cli, optionflags=doctest.ELLIPSIS).failed == 0
