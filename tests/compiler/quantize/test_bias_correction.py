"""Empirical bias correction: after it, every int8 layer's accumulator has the float layer's mean
per channel on the calibration data (to half an accumulator step), the mean error that
near-constant channels leave through a network shrinks on inputs it was not calibrated on, and
the corrected graph is still an integer graph the accelerator runs bit-exact."""

from __future__ import annotations

import numpy as np
import pytest

from compiler.graph import Constant, Graph, Node, TensorType, Var, evaluate
from compiler.quantize import integer_violations, quantize_graph
from compiler.quantize.bias_correction import channel_means, correct_biases
from compiler.quantize.calibrate import calibrate
from compiler.quantize.realize import _Realizer, prepare_graph


def _graph() -> Graph:
    """Two convolutions whose first output channels sit near large constants (a bias far above
    the weights' reach, as batch norm leaves them), a relu between them: per-tensor int8 of
    that activation rounds each such channel to about one integer, the same every time."""
    rng = np.random.default_rng(0)
    x = Var("x", TensorType((1, 4, 8, 8), "float32", "NCHW"))
    w1 = (rng.normal(0, 1, (8, 4, 3, 3)) * 0.05).astype(np.float32)
    b1 = np.array([30.3, 0.37, 11.6, 0.9, 21.45, 0.2, 5.55, 0.6], np.float32)
    c1 = Node("conv2d", (x, Constant(w1), Constant(b1)), {"padding": (1, 1, 1, 1)}, name="c1")
    r1 = Node("relu", (c1,), name="r1")
    w2 = (rng.normal(0, 1, (6, 8, 3, 3)) * 0.2).astype(np.float32)
    c2 = Node("conv2d", (r1, Constant(w2)), {"padding": (1, 1, 1, 1)}, name="c2")
    return Graph.from_outputs([x], [c2])


def _feeds(seed: int, count: int) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [{"x": rng.normal(0, 1, (1, 4, 8, 8)).astype(np.float32)} for _ in range(count)]


def _quantized(graph, feeds, corrected: bool) -> Graph:
    return quantize_graph(graph, feeds, "minmax", sensitivity="off", bias_correction=corrected)


def test_each_layer_has_the_float_mean_per_channel_on_the_calibration_data():
    graph = prepare_graph(_graph())
    feeds = _feeds(1, 6)
    thresholds = calibrate(graph, feeds, "minmax")
    realizer = _Realizer(graph, thresholds, "multiplier")
    q = realizer.run()
    floats = {id(f): [evaluate(Graph(graph.inputs, graph.nodes, (f,), "f"), fd)[0]
                      for fd in feeds] for _, f, _ in realizer.layers}  # fmt: skip
    means = [channel_means(floats[id(f)], 1) for _, f, _ in realizer.layers]
    layers = {id(acc): (s, means[k]) for k, (acc, _, s) in enumerate(realizer.layers)}
    fixed = correct_biases(q, layers, feeds)
    accs = {n.name: n for n in fixed.nodes if n.op == "conv2d"}
    before = {n.name: n for n in q.nodes if n.op == "conv2d"}
    assert not np.array_equal(accs["c1"].inputs[2].value, before["c1"].inputs[2].value)
    for k, (acc, _, scale) in enumerate(realizer.layers):
        node = accs[acc.name]
        probe = Graph(fixed.inputs, fixed.nodes, (node,), "probe")
        got = channel_means([evaluate(probe, fd)[0] for fd in feeds], 1) * scale
        # to within half an accumulator step (the bias moves in whole steps)
        assert np.all(np.abs(got - means[k]) <= 0.5 * scale + 1e-9), acc.name


def test_the_mean_error_shrinks_on_other_inputs_and_the_graph_stays_integer():
    graph = _graph()
    calib, held_out = _feeds(1, 6), _feeds(2, 6)
    plain = _quantized(graph, calib, False)
    fixed = _quantized(graph, calib, True)
    assert integer_violations(fixed) == []

    def mean_error(q):
        errs = [evaluate(q, fd)[0] - evaluate(graph, fd)[0] for fd in held_out]
        return float(np.abs(channel_means(errs, 1)).max())

    assert mean_error(fixed) < 0.5 * mean_error(plain), (mean_error(fixed), mean_error(plain))


@pytest.mark.parametrize("preset", ["default", "vta-1x16x16"])
def test_a_corrected_network_runs_bit_exact_on_the_accelerator(preset):
    from runtime.vta_target import compile_network

    net = compile_network(_graph(), preset, calibration=_feeds(1, 6), sensitivity="off")
    assert "int32 bias (corrected on the calibration data)" in net.scheme
    for fd in _feeds(3, 2):
        np.testing.assert_array_equal(net.run(fd).outputs[0], net.reference(fd)[0])
    plain = compile_network(_graph(), preset, calibration=_feeds(1, 6), sensitivity="off",
                            bias_correction=False)  # fmt: skip
    assert "int32 bias and accumulation" in plain.scheme
    biases = [{n.name: n.inputs[2].value.tolist() for n in g.graph.nodes if len(n.inputs) == 3
               and n.op == "conv2d" and n.type.dtype == "int32"} for g in (net, plain)]  # fmt: skip
    assert biases[0]["c1"] != biases[1]["c1"]
