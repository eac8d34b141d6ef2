"""Resize (opset 11+: nearest and linear; half_pixel, pytorch_half_pixel, asymmetric and
align_corners coordinates; round_prefer_floor, round_prefer_ceil, floor and ceil rounding;
scales or sizes) and Upsample (opset 9) against onnxruntime on random shapes: the reference
executor and the compiled model on the cpu and gpu targets."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from compiler.errors import FrontendError
from compiler.frontend.onnx_import import from_onnx
from tests.compiler.frontend.backends import TARGETS, check_on_target
from tests.compiler.frontend.helpers import make_model

COORDS = ["half_pixel", "pytorch_half_pixel", "asymmetric", "align_corners"]
NEAREST = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]


def _case(seed: int) -> tuple[np.ndarray, list[float] | None, list[int] | None]:
    rng = np.random.default_rng(seed)
    n, c, h, w = 1, int(rng.integers(1, 4)), int(rng.integers(1, 6)), int(rng.integers(2, 6))
    x = rng.normal(size=(n, c, h, w)).astype(np.float32)
    if seed % 2:  # sizes, growing or shrinking
        return x, None, [n, c, int(rng.integers(1, 9)), int(rng.integers(1, 9))]
    scale = [float(rng.choice([0.5, 1.5, 2.0, 3.0])), float(rng.choice([0.6, 1.0, 2.0, 2.5]))]
    return x, [1.0, 1.0, *scale], None


def _model(x, scales, sizes, opset=13, **attrs):
    inits = {"roi": np.zeros(0, np.float32)}
    names = ["x", "roi"]
    if scales is not None:
        inits["scales"] = np.array(scales, np.float32)
        names.append("scales")
    else:
        inits["sizes"] = np.array(sizes, np.int64)
        names += ["", "sizes"]
    node = helper.make_node("Resize", names, ["y"], **attrs)
    return make_model([node], {"x": x}, ["y"], inits, opset=opset)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("coord", COORDS)
@pytest.mark.parametrize("seed", range(2))
def test_resize_linear(coord, seed, target):
    x, scales, sizes = _case(seed * 5 + len(coord))
    model = _model(x, scales, sizes, mode="linear", coordinate_transformation_mode=coord)
    check_on_target(model, {"x": x}, target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("coord", COORDS)
@pytest.mark.parametrize("nearest", NEAREST)
def test_resize_nearest(coord, nearest, target):
    x, scales, sizes = _case(len(coord) * 3 + len(nearest))
    attrs = {"coordinate_transformation_mode": coord, "nearest_mode": nearest}
    check_on_target(_model(x, scales, sizes, mode="nearest", **attrs), {"x": x}, target)


@pytest.mark.parametrize("target", TARGETS)
def test_resize_axes_opset_18(target):
    x = np.random.default_rng(0).normal(size=(1, 2, 3, 4)).astype(np.float32)
    inits = {"scales": np.array([2.0, 1.5], np.float32)}
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], axes=[3, 2], mode="linear")
    model = make_model([node], {"x": x}, ["y"], inits, opset=18)
    check_on_target(model, {"x": x}, target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_upsample_opset_9_and_resize_opset_10(mode, target):
    x = np.random.default_rng(1).normal(size=(1, 3, 3, 4)).astype(np.float32)
    scales = np.array([1, 1, 2, 3], np.float32)
    for op, opset in (("Upsample", 9), ("Resize", 10)):
        node = helper.make_node(op, ["x", "scales"], ["y"], mode=mode)
        model = make_model([node], {"x": x}, ["y"], {"scales": scales}, opset=opset)
        check_on_target(model, {"x": x}, target)


def test_unsupported_resize_modes_are_named_at_the_scan():
    x = np.zeros((1, 1, 2, 2), np.float32)
    scales = np.array([1, 1, 2, 2], np.float32)
    nodes = [
        helper.make_node("Resize", ["x", "", "scales"], ["a"], mode="cubic", name="cubic"),
        helper.make_node(
            "Resize",
            ["x", "", "scales"],
            ["b"],
            coordinate_transformation_mode="tf_crop_and_resize",
            name="crop",
        ),
    ]
    model = make_model(nodes, {"x": x}, ["a", "b"], {"scales": scales})
    with pytest.raises(FrontendError, match=r"(?s)2 unsupported.*cubic.*mode 'cubic'.*crop"):
        from_onnx(model)


@pytest.mark.parametrize("target", TARGETS)
def test_fpn_conv_upsample_add(target):
    # a detector's feature pyramid: a 1x1 conv, nearest 2x upsampling, added to the finer map
    rng = np.random.default_rng(5)
    feeds = {
        "coarse": rng.normal(size=(1, 4, 3, 3)).astype(np.float32),
        "fine": rng.normal(size=(1, 2, 6, 6)).astype(np.float32),
    }
    inits = {"w": rng.normal(size=(2, 4, 1, 1)).astype(np.float32), "scales": np.array(
        [1, 1, 2, 2], np.float32)}  # fmt: skip
    nodes = [
        helper.make_node("Conv", ["coarse", "w"], ["c"]),
        helper.make_node("Resize", ["c", "", "scales"], ["u"], mode="nearest"),
        helper.make_node("Add", ["u", "fine"], ["y"]),
    ]
    check_on_target(make_model(nodes, feeds, ["y"], inits), feeds, target)
