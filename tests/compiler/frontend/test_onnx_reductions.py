"""Softmax on any axis, ReduceMean/Sum/Max/Min and ArgMax against onnxruntime on random shapes
and attributes: the reference executor and the compiled model on the cpu and gpu targets."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from compiler.frontend.onnx_import import from_onnx
from tests.compiler.frontend.backends import TARGETS, check_on_target
from tests.compiler.frontend.helpers import make_model


def _x(rng: np.random.Generator, rank: int) -> np.ndarray:
    shape = [int(d) for d in rng.integers(1, 6, size=rank)]
    return rng.normal(size=shape).astype(np.float32)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("seed", range(5))
def test_softmax_any_axis(seed, target):
    rng = np.random.default_rng(seed)
    x = _x(rng, [3, 4, 2, 3, 1][seed]) * 3
    axis = int(rng.integers(-x.ndim, x.ndim))
    opset = 11 if seed == 3 else 13  # before 13: the input is coerced to 2-d at ``axis``
    node = helper.make_node("Softmax", ["x"], ["y"], axis=axis)
    check_on_target(make_model([node], {"x": x}, ["y"], opset=opset), {"x": x}, target)


@pytest.mark.parametrize("target", TARGETS)
def test_softmax_of_a_long_row_is_accurate_to_float32(target):
    """An OCR recognizer's output: softmax over 6,625 classes, some steps near a tie. The
    compiled model is within 2e-7 of the largest probability computed in float64 (on the cpu
    its sum in float32 was off by 3e-5 there, onnxruntime's by 3e-6; the gpu's tree of partial
    sums over 1,500 classes met the bound in float32 too, so its case checks the float64 sum's
    kernel, not the fix)."""
    from runtime.session import InferenceSession

    rng = np.random.default_rng(11)
    steps, classes = (6, 6625) if target == "cpu" else (2, 1500)
    z = rng.normal(0, 3, size=(1, steps, classes))
    z[0, :, 5] += 12
    z[0, ::2, 7] = z[0, ::2, 5] + 0.1  # a near tie
    x = z.astype(np.float32)
    node = helper.make_node("Softmax", ["x"], ["y"], axis=2)
    got = InferenceSession(
        make_model([node], {"x": x}, ["y"], opset=13).SerializeToString(), target=target
    ).run(None, {"x": x})[0]
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=2, keepdims=True))
    want = e / e.sum(axis=2, keepdims=True)
    assert np.abs(got - want).max() <= 2e-7 * want.max()


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("op", ["ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"])
@pytest.mark.parametrize("seed", range(3))
def test_reduce(op, seed, target):
    rng = np.random.default_rng(seed * 7 + len(op))
    x = _x(rng, int(rng.integers(2, 5)))
    keepdims = int(rng.integers(0, 2))
    axes = sorted(int(a) for a in rng.choice(x.ndim, size=int(rng.integers(1, 3)), replace=False))
    axes = [a - x.ndim if rng.random() < 0.5 else a for a in axes]
    if seed == 2:  # axes as an input (ReduceSum from opset 13, the others from 18)
        opset = 13 if op == "ReduceSum" else 18
        node = helper.make_node(op, ["x", "axes"], ["y"], keepdims=keepdims)
        model = make_model([node], {"x": x}, ["y"], {"axes": np.array(axes)}, opset=opset)
    elif seed == 1:  # no axes: everything
        node = helper.make_node(op, ["x"], ["y"], keepdims=keepdims)
        model = make_model([node], {"x": x}, ["y"], opset=11)
    else:
        node = helper.make_node(op, ["x"], ["y"], axes=axes, keepdims=keepdims)
        model = make_model([node], {"x": x}, ["y"], opset=11)
    check_on_target(model, {"x": x}, target)


def test_reduce_noop_with_empty_axes_is_the_identity():
    x = np.random.default_rng(0).normal(size=(2, 3)).astype(np.float32)
    nodes = [
        helper.make_node("ReduceSum", ["x", ""], ["s"], noop_with_empty_axes=1),
        helper.make_node("Relu", ["s"], ["y"]),
    ]
    model = make_model(nodes, {"x": x}, ["y"], opset=13)
    assert [n.op for n in from_onnx(model).nodes] == ["relu"]
    check_on_target(model, {"x": x}, "cpu")


@pytest.mark.parametrize("target", TARGETS)
def test_reduce_then_elementwise(target):
    # layer-norm-like arithmetic: mean, subtract, square, mean, sqrt, divide
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 5, 8)).astype(np.float32)
    nodes = [
        helper.make_node("ReduceMean", ["x"], ["m"], axes=[-1]),
        helper.make_node("Sub", ["x", "m"], ["d"]),
        helper.make_node("Mul", ["d", "d"], ["sq"]),
        helper.make_node("ReduceMean", ["sq"], ["v"], axes=[-1]),
        helper.make_node("Sqrt", ["v"], ["s"]),
        helper.make_node("Div", ["d", "s"], ["y"]),
    ]
    check_on_target(make_model(nodes, {"x": x}, ["y"], opset=13), {"x": x}, target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("seed", range(4))
def test_argmax(seed, target):
    rng = np.random.default_rng(seed)
    x = _x(rng, 3)
    x = np.round(x * 2) / 2  # ties, so first and last index differ
    attrs = {
        "axis": int(rng.integers(-3, 3)),
        "keepdims": seed % 2,
        "select_last_index": seed // 2,
    }
    node = helper.make_node("ArgMax", ["x"], ["y"], **attrs)
    check_on_target(make_model([node], {"x": x}, ["y"], opset=13), {"x": x}, target)
