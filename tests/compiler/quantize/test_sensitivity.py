"""The sensitivity check: a node whose own int8 error is over the threshold stays fp32 on the
host, its neighbours stay int8, and the report says which and why."""

from __future__ import annotations

import numpy as np
import pytest

from compiler.graph import Constant, Graph, Node, TensorType, Var, evaluate
from compiler.graph.pipeline import run_pipeline
from compiler.partition import partition_graph
from compiler.partition.partition import FP32_SENSITIVE
from compiler.quantize import (
    DEFAULT_SENSITIVITY,
    QuantizeError,
    fp32_fallbacks,
    integer_violations,
    parse_sensitivity,
    quantize_graph,
    quantize_pipeline,
)
from compiler.quantize.calibrate import calibrate
from compiler.quantize.realize import _Realizer, prepare_graph
from compiler.quantize.sensitivity import measure_errors
from isa import load_config

N = 4


def hard_graph() -> Graph:
    """A first conv whose input's channel 0 is a thousand times larger than the others while
    its weights read mostly the small channels: per-tensor int8 of the input rounds the small
    channels to zero. The conv, relu, global pool and dense after it are ordinary."""
    rng = np.random.default_rng(0)
    x = Var("x", TensorType((N, 4, 8, 8), "float32", "NCHW"))
    w0 = rng.normal(0, 1, (8, 4, 3, 3)).astype(np.float32)
    w0[:, 0] *= 1e-4
    hard = Node("conv2d", (x, Constant(w0, name="w0")), {"padding": (1, 1, 1, 1)}, name="hard")
    r0 = Node("relu", (hard,), name="r0")
    w1 = (rng.normal(0, 1, (8, 8, 3, 3)) / 8).astype(np.float32)
    mid = Node("conv2d", (r0, Constant(w1, name="w1")), {"padding": (1, 1, 1, 1)}, name="mid")
    gap = Node("global_avg_pool2d", (Node("relu", (mid,), name="r1"),), name="gap")
    flat = Node("reshape", (gap,), {"newshape": (N, 8)}, name="flat")
    w2 = rng.normal(0, 1, (5, 8)).astype(np.float32)
    return Graph.from_outputs([x], [Node("dense", (flat, Constant(w2, name="w2")), name="fc")])


def feed(seed: int) -> dict[str, np.ndarray]:
    x = np.random.default_rng(seed).normal(0, 1, (N, 4, 8, 8)).astype(np.float32)
    x[:, 0] *= 1000
    return {"x": x}


CALIBRATION = [feed(1), feed(2)]


def _node(graph: Graph, name: str) -> Node:
    return next(n for n in graph.nodes if n.name == name)


def _relative(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.linalg.norm(got - want) / np.linalg.norm(want))


@pytest.mark.parametrize("requant", ["multiplier", "shift", "vta"])
def test_hard_conv_stays_fp32_and_its_neighbours_are_int8(requant):
    q = quantize_graph(hard_graph(), CALIBRATION, requant=requant)
    kept = list(fp32_fallbacks(q).values())
    assert [(f.node, f.op) for f in kept] == [("hard", "conv2d")]
    assert kept[0].error > DEFAULT_SENSITIVITY and kept[0].threshold == DEFAULT_SENSITIVITY
    hard = _node(q, "hard")
    assert hard.type.dtype == "float32" and hard.inputs[1].type.dtype == "float32"
    # the float input is read as it is: no quantize before the hard conv
    assert hard.inputs[0] is q.inputs[0]
    for name in ("mid", "fc"):
        n = _node(q, name)
        assert n.inputs[0].type.dtype == "int8" and n.inputs[1].type.dtype == "int8", name
    assert [n.name for n in integer_violations(q)] == ["hard", "r0"]


def test_fallback_brings_the_output_closer_to_fp32():
    graph = hard_graph()
    sensitive = quantize_graph(graph, CALIBRATION)
    everything = quantize_graph(graph, CALIBRATION, sensitivity="off")
    x = feed(9)
    ref = evaluate(graph, x)[0]
    err_on = _relative(evaluate(sensitive, x)[0], ref)
    err_off = _relative(evaluate(everything, x)[0], ref)
    # the bias correction gives back the mean of the rounded-away channels (measured 0.20
    # with it, above 0.5 without), not their variation: only the fallback does that
    plain = quantize_graph(graph, CALIBRATION, sensitivity="off", bias_correction=False)
    err_plain = _relative(evaluate(plain, x)[0], ref)
    assert err_on < 0.05 < 0.15 < err_off < 0.5 < err_plain


def test_off_quantizes_every_node():
    q = quantize_graph(hard_graph(), CALIBRATION, sensitivity="off")
    assert fp32_fallbacks(q) == {}
    assert integer_violations(q) == []


def test_threshold_is_an_option():
    # the hard conv's error is near 1: a threshold above it keeps everything int8, one below
    # the ordinary nodes' errors keeps them fp32 too
    assert fp32_fallbacks(quantize_graph(hard_graph(), CALIBRATION, sensitivity=2.0)) == {}
    tight = fp32_fallbacks(quantize_graph(hard_graph(), CALIBRATION, sensitivity=1e-6))
    assert {f.node for f in tight.values()} == {"hard", "mid", "gap", "fc"}


def test_error_isolates_the_node():
    # the conv after the hard one is measured on fp32 inputs: its error is that of an ordinary
    # layer, not the hard conv's loss carried forward
    graph = prepare_graph(hard_graph())
    thresholds = calibrate(graph, CALIBRATION, "percentile")
    realizer = _Realizer(graph, thresholds, "multiplier")
    realizer.run()
    errors = {m.node.name: e for m in realizer.measured
              for k, e in measure_errors(graph, realizer.measured, CALIBRATION).items()
              if k == id(m.node)}  # fmt: skip
    assert set(errors) == {"hard", "mid", "gap", "fc"}
    assert errors["hard"] > 0.9
    assert max(errors["mid"], errors["gap"], errors["fc"]) < 0.05


def test_partition_places_the_node_on_the_host_and_says_why():
    q = quantize_graph(hard_graph(), CALIBRATION)
    part = partition_graph(q, load_config("default"))
    p = part.placement("hard")
    assert (p.device, p.rule) == ("cpu", FP32_SENSITIVE)
    assert "int8 error 1 > threshold 0.1" in p.reason
    assert part.placement("mid").rule == "conv2d-group"
    assert part.placement("fc").rule == "dense-group"


def test_network_on_the_accelerator_reports_the_fp32_node():
    from runtime.vta_target import compile_network

    graph = hard_graph()
    net = compile_network(graph, calibration=CALIBRATION, cache=False)
    assert "1 node kept fp32 (own int8 error over 0.1" in net.scheme
    x = feed(9)
    run = net.run(x)
    ref = evaluate(graph, x)[0]
    assert _relative(run.outputs[0], ref) < 0.05
    rows = {r.name: r for r in run.layers}
    assert rows["hard"].device == "cpu"
    assert rows["hard"].rule == "fp32-sensitive"
    assert rows["hard"].reason.startswith("int8 error 1 > threshold 0.1")
    off = compile_network(graph, calibration=CALIBRATION, cache=False, sensitivity="off")
    assert "sensitivity check off" in off.scheme
    # every node int8: the bias correction gives back only the lost channels' mean
    assert _relative(off.run(x).outputs[0], ref) > 0.15
    plain = compile_network(graph, calibration=CALIBRATION, cache=False, sensitivity="off",
                            bias_correction=False)  # fmt: skip
    assert _relative(plain.run(x).outputs[0], ref) > 0.5


def test_pipeline_takes_the_threshold():
    graph = hard_graph()
    q = run_pipeline(graph, quantize_pipeline(CALIBRATION))
    assert [f.node for f in fp32_fallbacks(q).values()] == ["hard"]
    q_off = run_pipeline(graph, quantize_pipeline(CALIBRATION, sensitivity="off"))
    assert fp32_fallbacks(q_off) == {}


@pytest.mark.parametrize("bad", ["0", "-1", "nan", "never"])
def test_bad_threshold_is_refused_by_name(bad):
    with pytest.raises(QuantizeError, match="sensitivity threshold"):
        parse_sensitivity(bad)


def test_compile_cache_keeps_the_fp32_nodes_and_tells_thresholds_apart(tmp_path):
    from compiler.cache import CompileCache
    from compiler.model.group_compile import quantize_cached

    cache = CompileCache(tmp_path)
    graph = hard_graph()

    def kept(sensitivity):
        q = quantize_cached(graph, CALIBRATION, calibrator="percentile", requant="multiplier",
                            cache=cache, sensitivity=sensitivity)  # fmt: skip
        return [f.node for f in fp32_fallbacks(q).values()]

    assert kept(None) == ["hard"]
    assert kept(None) == ["hard"]  # read back from the cache
    assert kept("off") == []
    assert kept(None) == ["hard"]
