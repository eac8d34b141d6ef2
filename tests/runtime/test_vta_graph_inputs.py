"""``vtac graph MODEL --target vta`` prints what the host computes before a group as nodes of
the placement table (the -128 padding of a max pool over signed values, a ``pad``; the first
layer's fold, an ``im2col``) and lists, under it, how every accelerator group's inputs get
there: read in place from the group that stored them, or packed by the host into the config's
blocks — the steps the plan really runs."""

import numpy as np
from onnx import helper

from runtime.cli import main
from tests.compiler.frontend.helpers import make_model


def _placed(out: str) -> dict[str, tuple[str, ...]]:
    """Node -> (op, device, group, rule) of the placement table."""
    table = out.split("# what each group reads")[0].splitlines()[3:]
    return {ln.split()[0]: tuple(ln.split()[1:5]) for ln in table if ln.strip()}


def _rows(out: str) -> dict[tuple[str, str], str]:
    table = out.split("# what each group reads")[1].splitlines()[3:]
    rows = {}
    for line in table:
        group, symbol, _value, *how = line.split(maxsplit=3)
        rows[(group, symbol)] = how[0] if how else ""
    return rows


def test_resnet_groups_read_in_place_after_the_first_layers_fold_node(capsys):
    argv = ["graph", "resnet18", "--image-size", "32", "--target", "vta", "--config",
            "vta-1x16x16"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    rows, placed = _rows(out), _placed(out)
    # the fold is a host node before the convolution, which reads its result packed by a host
    # pack node, through the group's unpack
    assert placed["conv1.im2col"] == ("im2col", "cpu", "-", "layout")
    assert placed["conv1.data.pack"] == ("pack", "cpu", "-", "pack")
    assert placed["conv1.data"] == ("unpack", "vta", "conv1", "packed-input")
    assert placed["conv1"][:3] == ("conv2d", "vta", "conv1")
    assert rows[("conv1", "data")] == "packed by host node conv1.data.pack (nchw, 1x16 blocks)"
    assert rows[("maxpool", "data")] == "read in place from group conv1's output"
    assert rows[("layer1.0.conv2", "residual")] == "read in place from group maxpool's output"


def test_a_max_pool_over_signed_values_is_padded_by_a_host_node(tmp_path, capsys):
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node(
            "MaxPool",
            ["c"],
            ["y"],
            kernel_shape=[3, 3],
            strides=[2, 2],
            pads=[1, 1, 1, 1],
            name="pool",
        ),  # fmt: skip
    ]
    inits = {"w": rng.standard_normal((16, 16, 3, 3)).astype(np.float32)}
    model = make_model(nodes, {"x": np.zeros((1, 16, 8, 8), np.float32)}, ["y"], inits)
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    assert main(["graph", str(path), "--target", "vta"]) == 0
    out = capsys.readouterr().out
    rows, placed = _rows(out), _placed(out)
    assert placed["pool.pad"] == ("pad", "cpu", "-", "layout")
    assert placed["pool"][:3] == ("max_pool2d", "vta", "pool")
    assert rows[("pool", "data")] == "packed by host node pool.data.pack (nchw, 1x4 blocks)"
