"""An affine layer (PP-LCNet's learnable scale and shift: ``x * a + b`` with scalar or
per-channel constants) that no convolution takes (here after an activation; after a
convolution ``fold_affine`` folds it into the weights) quantizes to int8 groups the
accelerator runs: the multiply to a ``qmul`` with an int8 gate constant, the add to a ``qadd``
with the constant broadcast as an int8 operand; a shift below half an output step is the
identity at int8 and keeps its input's int8 form. Bit for bit against the integer reference,
close to float."""

import numpy as np
import pytest

from compiler.graph import Constant, Graph, Node, TensorType, Var, evaluate
from runtime.vta_target import compile_network


def _graph(scale, shift):
    rng = np.random.default_rng(0)
    x = Var("x", TensorType((1, 8, 6, 6), "float32", "NCHW"))
    w = Constant((rng.standard_normal((16, 8, 3, 3)) * 0.3).astype(np.float32), name="w")
    c = Node("conv2d", (x, w), {"padding": (1, 1, 1, 1)}, name="conv")
    r = Node("clip", (c,), {"a_min": -1.0, "a_max": 6.0}, name="clip")
    m = Node("multiply", (r, Constant(np.asarray(scale, np.float32))), name="scale")
    a = Node("add", (Constant(np.asarray(shift, np.float32)), m), name="shift")
    return Graph.from_outputs([x], [Node("relu", (a,), name="act")])


@pytest.mark.parametrize("preset", ["default", "vta-1x16x16"])
@pytest.mark.parametrize(
    "scale,shift",
    [(0.75, 0.5), (np.linspace(0.2, 2.0, 16).reshape(16, 1, 1),
                   np.linspace(-1.0, 1.0, 16).reshape(1, 16, 1, 1))],
)  # fmt: skip
def test_scale_and_shift_run_on_the_accelerator(preset, scale, shift):
    g = _graph(scale, shift)
    rng = np.random.default_rng(1)
    calib = [{"x": rng.standard_normal((1, 8, 6, 6)).astype(np.float32)} for _ in range(3)]
    net = compile_network(g, preset, calibration=calib, sensitivity="off")
    rules = {p.node: (p.device, p.rule) for p in net.partition.placements}
    assert rules["scale"] == ("vta", "qmul-group"), rules
    assert rules["shift"] == ("vta", "qadd-group"), rules
    feed = {"x": np.random.default_rng(2).standard_normal((1, 8, 6, 6)).astype(np.float32)}
    out = net.run(feed).outputs[0]
    np.testing.assert_array_equal(out, net.reference(feed)[0])
    want = evaluate(g, feed)[0]
    assert np.abs(out - want).max() < 0.05 * np.abs(want).max()


def test_a_negligible_shift_is_the_identity_at_int8():
    g = _graph(1.0, 1e-9)
    calib = {"x": np.random.default_rng(1).standard_normal((1, 8, 6, 6)).astype(np.float32)}
    net = compile_network(g, "default", calibration=calib, sensitivity="off")
    assert "qadd" not in {n.op for n in net.graph.nodes}
    np.testing.assert_array_equal(net.run(calib).outputs[0], net.reference(calib)[0])
