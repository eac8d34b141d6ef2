"""Max pools in ceil mode (MTCNN's) on the accelerator: the rows and columns the last windows
reach past the padding are padded like it (-128 by the host over a signed input, LOAD's zeros
over a non-negative one), bit for bit against the quantized graph's integer reference on every
preset, for sizes where ceil mode adds a window and where it does not."""

import numpy as np
import pytest
from onnx import helper

from compiler.frontend.onnx_import import from_onnx
from runtime.vta_target import compile_network
from tests.compiler.frontend.helpers import make_model


def _model(size: int, k: int, stride: int, pads: list[int], relu: bool):
    rng = np.random.default_rng(size * 7 + k)
    inits = {"w": (rng.standard_normal((8, 4, 3, 3)) * 0.3).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv")]
    src = "c"
    if relu:
        nodes.append(helper.make_node("Relu", ["c"], ["r"], name="relu"))
        src = "r"
    nodes.append(helper.make_node("MaxPool", [src], ["y"], kernel_shape=[k, k],
                                  strides=[stride, stride], pads=pads, ceil_mode=1,
                                  name="pool"))  # fmt: skip
    return make_model(nodes, {"x": np.zeros((1, 4, size, size), np.float32)}, ["y"], inits)


@pytest.mark.parametrize("preset", ["default", "vta-1x16x16", "4x4x4"])
@pytest.mark.parametrize(
    "size,k,stride,pads,relu,extra",
    [(11, 3, 2, [0, 0, 0, 0], False, 0), (10, 3, 2, [0, 0, 0, 0], False, 1),
     (10, 3, 2, [0, 0, 0, 0], True, 1), (8, 3, 2, [1, 1, 1, 1], True, 1),
     (8, 3, 2, [1, 1, 1, 1], False, 1), (13, 2, 3, [0, 0, 0, 0], False, 1)],
)  # fmt: skip
def test_ceil_mode_max_pool_runs_on_the_accelerator_bit_exact(
    preset, size, k, stride, pads, relu, extra
):
    rng = np.random.default_rng(size)
    shape = (1, 4, size, size)
    calib = [{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(2)]
    net = compile_network(from_onnx(_model(size, k, stride, pads, relu)), preset, calibration=calib)
    placed = {p.node: (p.device, p.rule) for p in net.partition.placements}
    assert placed["pool"] == ("vta", "pool-group"), placed
    floor = (size + pads[0] + pads[2] - k) // stride + 1
    assert net.graph.outputs[0].type.shape[2] == floor + extra  # ceil mode adds a window or not
    for seed in (1, 2):
        feed = {"x": np.random.default_rng(seed).standard_normal(shape).astype(np.float32)}
        out = net.run(feed).outputs[0]
        np.testing.assert_array_equal(out, net.reference(feed)[0])
