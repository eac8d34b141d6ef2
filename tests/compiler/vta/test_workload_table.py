"""The layer table in compiler/topi/vta/workloads.py agrees with the workload file."""

import json

from compiler.topi.vta import C9_VTA_TUTORIAL_COUNTS, RESNET18_LAYERS
from tests.conftest import ROOT


def test_layers_match_the_workload_file():
    data = json.loads((ROOT / "bench" / "workloads" / "resnet18_conv2d.json").read_text())
    rows = {d["name"]: d for d in data["layers"]}
    assert [layer.name for layer in RESNET18_LAYERS] == list(rows)
    for layer in RESNET18_LAYERS:
        d = rows[layer.name]
        got = (layer.h, layer.w, layer.in_c, layer.out_c, layer.k, layer.stride, layer.pad)
        assert got == (d["h"], d["w"], d["in_c"], d["out_c"], d["k"], d["stride"], d["pad"])
        assert (layer.out_h, layer.macs) == (d["out_hw"], d["macs"])
    ref = data["reference_counts"]["C9_vta_1x16x16"]
    assert C9_VTA_TUTORIAL_COUNTS == ref
