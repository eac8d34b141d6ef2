"""ConvTranspose (groups, strides, pads, output_padding, dilations, output_shape, auto_pad)
against onnxruntime on random shapes and attributes: the reference executor and the compiled
model on the cpu and gpu targets."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from tests.compiler.frontend.backends import TARGETS, check_on_target
from tests.compiler.frontend.helpers import make_model


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("seed", range(6))
def test_conv_transpose(seed, target):
    rng = np.random.default_rng(seed)
    groups = int(rng.choice([1, 2]))
    c_in, co_g = groups * int(rng.integers(1, 3)), int(rng.integers(1, 3))
    kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    h, w = int(rng.integers(2, 5)), int(rng.integers(2, 5))
    strides = [int(rng.integers(1, 4)), int(rng.integers(1, 3))]
    dil = [int(rng.integers(1, 3)), 1]
    attrs = {"strides": strides, "dilations": dil, "group": groups}
    if seed == 4:
        attrs["output_shape"] = [h * strides[0] + 1, w * strides[1]]
    elif seed == 5:
        attrs["auto_pad"] = "SAME_UPPER"
    else:
        span = [(kh - 1) * dil[0] + 1, (kw - 1) * dil[1] + 1]
        # pads may exceed the kernel's reach (the convolution then crops)
        attrs["pads"] = [int(rng.integers(0, span[0] + 1)), int(rng.integers(0, span[1] + 1))]
        attrs["pads"] += [int(rng.integers(0, span[0])), int(rng.integers(0, span[1]))]
        attrs["output_padding"] = [int(rng.integers(0, strides[0])), 0]
    x = rng.normal(size=(1, c_in, h, w)).astype(np.float32)
    inits = {"w": rng.normal(size=(c_in, co_g, kh, kw)).astype(np.float32)}
    names = ["x", "w"]
    if seed % 2:
        inits["b"] = rng.normal(size=groups * co_g).astype(np.float32)
        names.append("b")
    node = helper.make_node("ConvTranspose", names, ["y"], **attrs)
    check_on_target(make_model([node], {"x": x}, ["y"], inits, opset=[11, 13, 17][seed % 3]),
                    {"x": x}, target)  # fmt: skip


@pytest.mark.parametrize("target", TARGETS)
def test_db_head_upsampling(target):
    # PP-OCR's DB head: 2x2 stride-2 transposed convolutions after a 3x3 convolution
    rng = np.random.default_rng(9)
    x = rng.normal(size=(1, 4, 4, 4)).astype(np.float32)
    inits = {
        "w1": rng.normal(size=(2, 4, 3, 3)).astype(np.float32) * 0.3,
        "w2": rng.normal(size=(2, 2, 2, 2)).astype(np.float32),
        "b2": rng.normal(size=2).astype(np.float32),
        "w3": rng.normal(size=(2, 1, 2, 2)).astype(np.float32),
    }
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("ConvTranspose", ["r", "w2", "b2"], ["u"], strides=[2, 2]),
        helper.make_node("Relu", ["u"], ["r2"]),
        helper.make_node("ConvTranspose", ["r2", "w3"], ["u2"], strides=[2, 2]),
        helper.make_node("Sigmoid", ["u2"], ["y"]),
    ]
    check_on_target(make_model(nodes, {"x": x}, ["y"], inits), {"x": x}, target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    ("kernel", "bias", "pads"),
    [
        ((2, 2), True, None),
        ((3, 2), False, None),
        ((2, 1), True, None),
        ((2, 2), True, [0, 1, 0, 0]),
    ],
)
def test_a_kernel_equal_to_its_strides_runs_as_one_1x1_convolution(kernel, bias, pads, target):
    # non-overlapping windows (kernel == strides, no padding): a 1x1 convolution to
    # C_out*kh*kw channels interleaved into the output, with no zeros inserted; with padding,
    # the general form (dilate, then convolve)
    from compiler.frontend.onnx_import import from_onnx

    rng = np.random.default_rng(sum(kernel) + 7 * bias)
    x = rng.normal(size=(1, 5, 3, 4)).astype(np.float32)
    inits = {"w": rng.normal(size=(5, 3, *kernel)).astype(np.float32)}
    names = ["x", "w"]
    if bias:
        inits["b"] = rng.normal(size=3).astype(np.float32)
        names.append("b")
    attrs = {"strides": list(kernel)} | ({"pads": pads} if pads else {})
    node = helper.make_node("ConvTranspose", names, ["y"], **attrs)
    model = make_model([node], {"x": x}, ["y"], inits)
    ops = [n.op for n in from_onnx(model).nodes]
    if pads:
        assert "dilate" in ops
    else:
        assert "dilate" not in ops and ops.count("conv2d") == 1 and "transpose" in ops
        conv = next(n for n in from_onnx(model).nodes if n.op == "conv2d")
        assert conv.inputs[1].type.shape == (3 * kernel[0] * kernel[1], 5, 1, 1)
    check_on_target(model, {"x": x}, target)


def test_a_3d_transposed_convolution_is_named_at_the_scan():
    from compiler.errors import FrontendError
    from compiler.frontend.onnx_import import from_onnx

    x = np.zeros((1, 2, 3, 3, 3), np.float32)
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], kernel_shape=[2, 2, 2], name="up3")
    model = make_model([node], {"x": x}, ["y"], {"w": np.zeros((2, 2, 2, 2, 2), np.float32)})
    with pytest.raises(FrontendError, match=r"up3 \(ConvTranspose.*3-d kernel"):
        from_onnx(model)
