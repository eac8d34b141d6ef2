"""A group whose accelerator compile fails runs on the host (rule ``compile-failed``), never a
failed model.

The failure is real: on a config whose input buffer holds 16 entries, a 5x5 convolution's
smallest input tile (one 5x5 window of one channel block, 25 entries) fits no tiling, while the
partition's limits accept the layer (they check the window against the weight buffer: 25 of
1024 entries). The 3x3 convolutions beside it (9 entries) compile. The same int8 graph
compiled on the default config, where every group compiles, gives the bits to compare with.
"""

import numpy as np
import pytest

import compiler.model.group_compile as group_compile
import isa
from compiler.errors import ScheduleError
from compiler.graph import Constant, Graph, Node, TensorType, Var
from compiler.model.group_compile import compile_groups
from compiler.partition import partition_graph
from runtime.vta_target import compile_network

#: a config that the partition's limits do not tell apart from the default for these layers
SMALL_INP = isa.load_config("default").replace(name="small-inp", inp_buf_bytes=16 * 4)


def _graph() -> Graph:
    """conv 3x3 -> relu -> conv 5x5 (+ the first conv's output: a fused qadd) -> conv 3x3."""
    rng = np.random.default_rng(0)
    x = Var("x", TensorType((1, 8, 8, 8), "float32", "NCHW"))

    def weight(name: str, k: int) -> Constant:
        return Constant(rng.normal(size=(8, 8, k, k)).astype(np.float32) * 0.3, name=name)

    c1 = Node("conv2d", (x, weight("w1", 3)), {"padding": (1, 1, 1, 1)}, name="c1")
    r1 = Node("relu", (c1,), {}, name="r1")
    c2 = Node("conv2d", (r1, weight("w2", 5)), {"padding": (2, 2, 2, 2)}, name="c2")
    add = Node("add", (c2, r1), {}, name="add")
    c3 = Node("conv2d", (add, weight("w3", 3)), {"padding": (1, 1, 1, 1)}, name="c3")
    return Graph.from_outputs([x], [c3])


def _feed(seed: int) -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(seed).normal(size=(1, 8, 8, 8)).astype(np.float32)}


@pytest.fixture(scope="module")
def quantized() -> Graph:
    """The int8 graph, quantized once so every compile below starts from the same bits."""
    return compile_network(_graph(), "default", calibration=_feed(1), cache=False).graph


@pytest.fixture(scope="module")
def healthy(quantized):
    """The same int8 graph on the default config: every group on the accelerator."""
    return compile_network(quantized, "default", cache=False)


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_group_that_fails_to_compile_runs_on_the_host_bit_exact(quantized, healthy, jobs):
    net = compile_network(quantized, SMALL_INP, jobs=jobs, cache=False)
    part = net.partition
    failed = [p for p in part.placements if p.rule == "compile-failed"]
    # the 5x5 conv with its requantize and the qadd fused into its group
    assert [p.op for p in failed] == ["conv2d", "requantize", "qadd"], part.table()
    for p in failed:
        assert p.device == "cpu" and p.group is None
        assert p.reason.startswith("the accelerator compile failed: conv2d: no tiling of")
        assert "small-inp" in p.reason and "\n" not in p.reason
    assert sorted(net.layers) == sorted(g.name for g in part.groups) == ["c1", "c3"]
    assert sorted(healthy.layers) == ["c1", "c2", "c3"]
    for seed in (2, 3):
        feed = _feed(seed)
        result = net.run(feed)
        np.testing.assert_array_equal(result.outputs[0], healthy.run(feed).outputs[0])
        np.testing.assert_array_equal(result.outputs[0], net.reference(feed)[0])
    rows = {r.name: r for r in result.layers}
    assert rows["c2"].device == "cpu" and rows["c2"].host.startswith("host (compiled")
    assert rows["c1"].device == rows["c3"].device == "vta"


def test_the_report_gives_the_rule_and_the_reason(quantized):
    net = compile_network(quantized, SMALL_INP, cache=False)
    result = net.run(_feed(2))
    reason = net.partition.placement("c2").reason
    line = next(line for line in result.table(legend=False).splitlines() if line.startswith("c2 "))
    assert f"compile-failed: {reason}; host (compiled" in line
    layers = {d["name"]: d for d in result.to_json()["layers"]}
    assert (layers["c2"]["rule"], layers["c2"]["reason"]) == ("compile-failed", reason)
    # other host rules keep their short form: the rule names the limit
    assert "reason" not in layers["x.quantize"]
    assert layers["c1"]["rule"] == "conv2d-group"


def test_an_artifact_keeps_the_host_group_and_its_reason(quantized, tmp_path):
    from runtime.vta_artifact import load_vta_artifact, save_vta_artifact
    from runtime.vta_plan import VtaExecutor

    net = compile_network(quantized, SMALL_INP, cache=False)
    feed = _feed(4)
    expected = net.run(feed)
    save_vta_artifact(net.plan, tmp_path / "a.vtac")
    loaded = load_vta_artifact(tmp_path / "a.vtac")
    got = VtaExecutor(loaded).run(feed)
    np.testing.assert_array_equal(got.outputs[0], expected.outputs[0])
    row = next(r for r in got.layers if r.name == "c2")
    assert (row.rule, row.reason) == ("compile-failed", net.partition.placement("c2").reason)


def test_compiles_read_from_the_cache_fall_back_the_same(quantized, tmp_path):
    from compiler.cache import CompileCache

    store = CompileCache(tmp_path)
    first = compile_network(quantized, SMALL_INP, cache=store)
    again = compile_network(quantized, SMALL_INP, cache=store)
    assert again.partition.placements == first.partition.placements
    assert store.hits >= 2  # c1 and c3; the failed group is never stored
    feed = _feed(5)
    np.testing.assert_array_equal(again.run(feed).outputs[0], first.run(feed).outputs[0])


@pytest.mark.parametrize("jobs", [1, 2])
def test_compile_groups_raises_or_records_a_group_failure(quantized, jobs):
    groups = partition_graph(quantized, SMALL_INP).groups
    with pytest.raises(ScheduleError, match="no tiling"):
        compile_groups(groups, SMALL_INP, jobs=jobs)
    failed: dict = {}
    layers = compile_groups(groups, SMALL_INP, jobs=jobs, failed=failed)
    assert sorted(layers) == ["c1", "c3"] and list(failed) == ["c2"]
    assert isinstance(failed["c2"], ScheduleError)


@pytest.mark.parametrize("jobs", [1, 2])
def test_an_error_that_is_not_the_compilers_still_surfaces(quantized, jobs, monkeypatch):
    """A bug in a group's compile (here a RuntimeError raised for group c3) is not a fallback:
    it propagates, from a worker too."""
    from compiler.model.vta import compile_group

    def buggy(group, cfg):
        if group.name == "c3":
            raise RuntimeError("a bug in c3's compile")
        return compile_group(group, cfg)

    monkeypatch.setattr(group_compile, "_default_compiler", lambda: buggy)
    with pytest.raises(RuntimeError, match="a bug in c3"):
        compile_network(quantized, "default", jobs=jobs, cache=False)


def test_a_raised_group_error_leaves_no_worker_behind(quantized):
    """The first group error ends the pool: the groups not started are cancelled, the ones
    being compiled finish, and every worker has exited when the error reaches the caller."""
    import multiprocessing

    groups = partition_graph(quantized, SMALL_INP).groups
    for _ in range(3):
        with pytest.raises(ScheduleError, match="no tiling"):
            compile_groups(groups, SMALL_INP, jobs=2)
        assert multiprocessing.active_children() == []


@pytest.mark.skipif(
    "fork" not in __import__("multiprocessing").get_all_start_methods(),
    reason="the dying compile function reaches workers only by fork",
)
def test_a_worker_that_dies_is_an_error_naming_its_group(quantized, monkeypatch):
    """A worker killed while it compiles (here it kills itself on group c2) is an error that
    names the groups left, never a wait for a result that cannot come."""
    import os
    import signal

    from compiler.errors import ModelError
    from compiler.model.vta import compile_group

    def dying(group, cfg):
        if group.name == "c2":
            os.kill(os.getpid(), signal.SIGKILL)
        return compile_group(group, cfg)

    cfg = isa.load_config("default")
    groups = partition_graph(quantized, cfg).groups
    with pytest.raises(ModelError, match="a compile worker process died") as raised:
        compile_groups(groups, cfg, jobs=2, compile_one=dying)
    assert "'c2'" in str(raised.value) and "--jobs 1" in str(raised.value)
    assert __import__("multiprocessing").active_children() == []


@pytest.mark.parametrize("jobs", [1, 2])
def test_with_tuning_a_heuristic_compile_that_fails_falls_back_to_the_host(
    quantized, healthy, jobs
):
    """A tuning without a record for these groups: each compiles with the heuristic's knobs,
    and the one whose heuristic compile fails goes to the host, noted in the partition, not
    in the tuning's notes."""
    from compiler.model.tuning import NetworkTuning

    tuning = NetworkTuning(SMALL_INP, {})
    net = compile_network(quantized, SMALL_INP, tuning=tuning, jobs=jobs, cache=False)
    assert net.partition.placement("c2").rule == "compile-failed"
    assert sorted(g for g, _ in tuning.fell_back) == ["c1", "c3"] and tuning.used == []
    feed = _feed(6)
    np.testing.assert_array_equal(net.run(feed).outputs[0], healthy.run(feed).outputs[0])


def test_vtac_graph_and_run_show_the_rule_and_the_reason(tmp_path, capsys):
    import json

    import onnx
    from onnx import helper

    from runtime.cli import main
    from tests.compiler.frontend.helpers import make_model

    rng = np.random.default_rng(0)
    inits = {
        "w1": (rng.standard_normal((8, 8, 3, 3)) * 0.3).astype(np.float32),
        "w2": (rng.standard_normal((8, 8, 5, 5)) * 0.3).astype(np.float32),
    }
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2"], ["out"], pads=[2, 2, 2, 2], name="conv2"),
    ]
    model = tmp_path / "m.onnx"
    onnx.save(make_model(nodes, {"x": np.zeros((1, 8, 8, 8), np.float32)}, ["out"], inits), model)
    config = tmp_path / "small-inp.json"
    config.write_text(SMALL_INP.to_json())
    assert main(["graph", str(model), "--target", "vta", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("conv2 "))
    assert "cpu" in line and "compile-failed" in line
    assert "the accelerator compile failed: conv2d: no tiling of" in line
    args = ["run", str(model), "--target", "vta", "--config", str(config), "--json", "--quiet"]
    assert main(args) == 0
    layers = {d["name"]: d for d in json.loads(capsys.readouterr().out)["layers"]}
    assert layers["conv2"]["rule"] == "compile-failed"
    assert layers["conv2"]["reason"].startswith("the accelerator compile failed: conv2d:")
    assert layers["conv1"]["device"] == "vta"


def _dense_graph() -> Graph:
    """dense -> relu -> dense (+ the relu: a qadd fused into the second dense's group)."""
    rng = np.random.default_rng(7)
    x = Var("x", TensorType((1, 32), "float32"))
    w1 = Constant(rng.normal(size=(16, 32)).astype(np.float32) * 0.3, name="fc1_w")
    w2 = Constant(rng.normal(size=(16, 16)).astype(np.float32) * 0.3, name="fc2_w")
    b2 = Constant(rng.normal(size=(16,)).astype(np.float32) * 0.1, name="fc2_b")
    r1 = Node("relu", (Node("dense", (x, w1), {}, name="fc1"),), {}, name="r1")
    fc2 = Node("dense", (r1, w2, b2), {}, name="fc2")
    return Graph.from_outputs([x], [Node("add", (fc2, r1), {}, name="add")])


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_dense_group_that_fails_runs_on_the_host_bit_exact(monkeypatch, jobs):
    """No config makes a dense compile fail while its neighbours compile (the dense tiling's
    smallest tile is one entry of each buffer), so group ``fc2`` alone is made to fail: its
    compile raises the ScheduleError a tiling that fits nothing raises. The dense with its
    bias, requantize and fused qadd then runs on the host, bit for bit the accelerator's."""
    import compiler.model.vta as vta_build

    rng = np.random.default_rng(8)
    feeds = [{"x": rng.normal(size=(1, 32)).astype(np.float32)} for _ in range(3)]
    graph = compile_network(_dense_graph(), "default", calibration=feeds[0], cache=False).graph
    healthy = compile_network(graph, "default", cache=False)
    compile_group = vta_build.compile_group

    def fc2_fails(group, cfg, knobs=None):
        if group.name == "fc2":
            raise ScheduleError(f"dense: no tiling of group {group.name} fits {cfg.name}")
        return compile_group(group, cfg, knobs)

    monkeypatch.setattr(vta_build, "compile_group", fc2_fails)
    net = compile_network(graph, "default", jobs=jobs, cache=False)
    failed = [p for p in net.partition.placements if p.rule == "compile-failed"]
    assert [p.op for p in failed] == ["dense", "requantize", "qadd"]
    assert (
        failed[0].reason
        == "the accelerator compile failed: dense: no tiling of group fc2 fits default"
    )
    assert sorted(net.layers) == ["fc1"]
    # where fc2 compiles, the same three nodes run as one accelerator group
    assert [healthy.partition.placement(p.node).group for p in failed] == ["fc2"] * 3
    for feed in feeds[1:]:
        result = net.run(feed)
        np.testing.assert_array_equal(result.outputs[0], healthy.run(feed).outputs[0])
        np.testing.assert_array_equal(result.outputs[0], net.reference(feed)[0])
