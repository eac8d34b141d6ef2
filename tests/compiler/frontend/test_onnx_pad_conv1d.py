"""Pad's reflect, edge and wrap modes (a gather along each padded axis), GlobalMaxPool, 1-d
Conv (a 2-d one of height one) and Gather with many scattered indices, against onnxruntime on
the cpu and gpu targets. Found on silero-VAD (a reflect pad before its STFT convolution, 1-d
convolutions) and Magika (GlobalMaxPool), real models that were refused."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from compiler.errors import FrontendError
from compiler.frontend.onnx_import import from_onnx
from tests.compiler.frontend.backends import TARGETS, check_on_target
from tests.compiler.frontend.helpers import make_model


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    "mode,pads,opset",
    [
        ("reflect", [0, 0, 1, 3, 0, 0, 2, 0], 13),
        ("edge", [0, 1, 2, 0, 0, 0, 0, 4], 13),
        ("wrap", [0, 0, 3, 1, 0, 2, 1, 5], 19),
    ],
)
def test_pad_modes_that_read_the_input(mode, pads, opset, target):
    x = np.random.default_rng(len(mode)).normal(size=(2, 3, 4, 6)).astype(np.float32)
    node = helper.make_node("Pad", ["x", "pads"], ["y"], mode=mode)
    model = make_model([node], {"x": x}, ["y"], {"pads": np.array(pads, np.int64)}, opset=opset)
    check_on_target(model, {"x": x}, target)


@pytest.mark.parametrize("target", TARGETS)
def test_reflect_pad_of_a_signal_on_given_axes(target):
    # silero-VAD's front end: a (batch, samples) signal padded on its last axis, opset 18 axes
    x = np.random.default_rng(1).normal(size=(3, 40)).astype(np.float32)
    node = helper.make_node("Pad", ["x", "pads", "", "axes"], ["y"], mode="reflect")
    inits = {"pads": np.array([16, 16], np.int64), "axes": np.array([-1], np.int64)}
    check_on_target(make_model([node], {"x": x}, ["y"], inits, opset=18), {"x": x}, target)


def test_reflect_pad_wider_than_the_axis_is_refused():
    x = np.zeros((1, 4), np.float32)
    node = helper.make_node("Pad", ["x", "pads"], ["y"], mode="reflect", name="too_wide")
    model = make_model([node], {"x": x}, ["y"], {"pads": np.array([0, 4, 0, 0], np.int64)})
    with pytest.raises(FrontendError, match=r"'too_wide' \(Pad\): a reflect pad of \(4, 0\) on "
                       "axis 1 of size 4"):  # fmt: skip
        from_onnx(model)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("shape", [(2, 5, 7), (1, 3, 4, 6), (2, 2, 3, 2, 4)])
def test_global_max_pool(shape, target):
    x = np.random.default_rng(len(shape)).normal(size=shape).astype(np.float32)
    node = helper.make_node("GlobalMaxPool", ["x"], ["y"])
    check_on_target(make_model([node], {"x": x}, ["y"]), {"x": x}, target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    "attrs",
    [
        {},
        {"pads": [2, 1], "strides": [3]},
        {"dilations": [2], "pads": [1, 1]},
        {"group": 2, "auto_pad": "SAME_UPPER", "strides": [2]},
    ],
    ids=["plain", "pads-strides", "dilation", "groups-same"],
)
def test_conv_1d(attrs, target):
    rng = np.random.default_rng(len(attrs))
    x = rng.normal(size=(2, 4, 17)).astype(np.float32)
    w = rng.normal(size=(6, 4 // attrs.get("group", 1), 3)).astype(np.float32)
    b = rng.normal(size=(6,)).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], **attrs)
    model = make_model([node], {"x": x}, ["y"], {"w": w, "b": b})
    check_on_target(model, {"x": x}, target)


@pytest.mark.parametrize("target", TARGETS)
def test_gather_with_many_scattered_indices(target):
    # a chain of one select per index nested 600 deep and overflowed the lowering's recursion;
    # the indices are now cut into evenly stepping runs picked by a balanced tree of selects
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 50, 3)).astype(np.float32)
    idx = rng.integers(0, 50, size=(600,)).astype(np.int64)
    node = helper.make_node("Gather", ["x", "idx"], ["y"], axis=1)
    check_on_target(make_model([node], {"x": x}, ["y"], {"idx": idx}), {"x": x}, target)
