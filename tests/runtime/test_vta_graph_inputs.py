"""``vtac graph MODEL --target vta`` lists, under the placements, how every accelerator group's
inputs get there: read in place from the group that stored them, or written by the host with
its steps (the -128 padding of a max pool over signed values, the first layer's fold, the
packing into the config's blocks) — the steps the plan really runs."""

import numpy as np
from onnx import helper

from runtime.cli import main
from tests.compiler.frontend.helpers import make_model


def _rows(out: str) -> dict[tuple[str, str], str]:
    table = out.split("# what each group reads")[1].splitlines()[3:]
    rows = {}
    for line in table:
        group, symbol, _value, *how = line.split(maxsplit=3)
        rows[(group, symbol)] = how[0] if how else ""
    return rows


def test_resnet_groups_read_in_place_after_the_folded_first_layer(capsys):
    argv = ["graph", "resnet18", "--image-size", "32", "--target", "vta", "--config",
            "vta-1x16x16"]  # fmt: skip
    assert main(argv) == 0
    rows = _rows(capsys.readouterr().out)
    assert rows[("conv1", "data")].startswith("fold (")
    assert rows[("conv1", "data")].endswith("pack NCHW into 1x16 blocks")
    assert rows[("maxpool", "data")] == "read in place from group conv1's output"
    assert rows[("layer1.0.conv2", "residual")] == "read in place from group maxpool's output"


def test_a_max_pool_over_signed_values_is_padded_by_the_host(tmp_path, capsys):
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
    rows = _rows(capsys.readouterr().out)
    assert rows[("pool", "data")] == (
        "pad (1, 1, 1, 1) (top, left, bottom, right) with -128, pack NCHW into 1x4 blocks"
    )
