"""The accelerator build as named passes (:func:`compiler.model.vta.vta_pipeline`): the debug
switches see every pass, and the verifier catches an inconsistent build."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from compiler.errors import ModelError
from compiler.graph import Constant, Graph, Node, TensorType, Var
from compiler.model.vta import NetworkBuild, compile_network, run_build, verify_build, vta_pipeline
from compiler.passes.pipeline import PassOptions
from compiler.targets.vta.pack import group_writes
from isa import load_config


def _graph() -> tuple[Graph, dict[str, np.ndarray]]:
    rng = np.random.default_rng(0)
    x = Var("x", TensorType((1, 3, 6, 6), "float32", "NCHW"))
    w1 = Constant(rng.normal(size=(8, 3, 3, 3)).astype(np.float32), name="w1")
    w2 = Constant(rng.normal(size=(8, 8, 1, 1)).astype(np.float32), name="w2")
    a = Node("conv2d", (x, w1), {"padding": (1, 1, 1, 1)}, name="a")
    b = Node("conv2d", (Node("relu", (a,), name="r"), w2), {}, name="b")
    feed = {"x": rng.normal(size=(1, 3, 6, 6)).astype(np.float32)}
    return Graph.from_outputs([x], [b]), feed


def test_every_pass_is_verified_and_dumped_by_name():
    graph, feed = _graph()
    dumps: dict[str, str] = {}
    opts = PassOptions(verify=True, dump=frozenset({"all"}),
                       on_dump=lambda name, text: dumps.__setitem__(name, text))  # fmt: skip
    built = run_build(
        NetworkBuild(graph, load_config("default")),
        vta_pipeline(calibration=feed, cache=None),
        opts,
    )
    assert list(dumps) == ["input", "quantize", "fuse_qprelu", "host_steps", "partition",
                           "compile_groups", "plan_dram", "pack",
                           "compile_host_groups"]  # fmt: skip
    assert "quantize" not in dumps["input"] and "quantize" in dumps["quantize"]
    assert "conv2d-group" in dumps["partition"] and "DRAM image" not in dumps["partition"]
    assert "instructions" in dumps["compile_groups"]
    assert "DRAM image:" in dumps["plan_dram"]
    # the first conv's fold is a host node (an im2col the host_steps pass adds); its result
    # is packed by the host (a pack node, which the group reads through an unpack), and the
    # second conv reads the first's output in place
    assert "im2col" not in dumps["fuse_qprelu"] and "= im2col(" in dumps["host_steps"]
    assert "= pack(" not in dumps["plan_dram"] and "%a.data.pack = pack(" in dumps["pack"]
    assert "%a.data = unpack(%a.data.pack)" in dumps["pack"] and "b.data" not in dumps["pack"]
    groups = {g.name: g for g in built.partition.groups}
    assert [(s, p.name) for s, p in group_writes(groups["a"])] == [("data", "a.data.pack")]
    assert not group_writes(groups["b"])
    assert built.partition.placement("a.data.pack").device == "cpu"
    assert built.partition.placement("a.data").group == "a"
    assert "host (compiled" in dumps["compile_host_groups"]
    assert set(built.layers) == {g.name for g in built.partition.groups}


def test_compile_network_runs_the_pipeline_under_the_environment_switches(monkeypatch, capsys):
    graph, feed = _graph()
    monkeypatch.setenv("VTAC_VERIFY_IR", "1")
    monkeypatch.setenv("VTAC_DUMP_IR", "partition")
    net = compile_network(graph, "default", calibration=feed, cache=False)
    err = capsys.readouterr().err
    assert "# ---- after partition ----" in err and "after plan_dram" not in err
    assert net.dram_plan is not None and net.host_groups is not None


def test_the_verifier_names_what_is_inconsistent():
    graph, feed = _graph()
    cfg = load_config("default")
    built = run_build(NetworkBuild(graph, cfg), vta_pipeline(calibration=feed, cache=None))
    verify_build(built)
    part = built.partition
    dropped = replace(part, placements=part.placements[1:])
    with pytest.raises(ModelError, match="does not place every node exactly once"):
        verify_build(replace(built, partition=dropped))
    name = part.groups[0].name
    layers = {k: v for k, v in built.layers.items() if k != name}
    with pytest.raises(ModelError, match=f"groups and compiled programs differ: \\['{name}'\\]"):
        verify_build(replace(built, layers=layers))
    moved = tuple(replace(p, device="cpu") if p.group == name else p for p in part.placements)
    with pytest.raises(ModelError, match=f"group {name}: node .* is placed on cpu"):
        verify_build(replace(built, partition=replace(part, placements=moved)))


def test_a_float_graph_without_calibration_is_refused_by_the_quantize_pass():
    graph, _ = _graph()
    with pytest.raises(ModelError, match="a float graph needs calibration data"):
        compile_network(graph, "default", cache=False)
