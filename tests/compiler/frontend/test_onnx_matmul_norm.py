"""MatMul between two activations (batched, broadcast batch dims), LayerNormalization (opset
17) and InstanceNormalization against onnxruntime on random shapes and attributes: the
reference executor and the compiled model on the cpu and gpu targets."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from compiler.errors import FrontendError
from compiler.frontend.onnx_import import from_onnx
from tests.compiler.frontend.backends import TARGETS, check_on_target
from tests.compiler.frontend.helpers import make_model

MATMUL_SHAPES = [
    ((2, 3, 4), (2, 4, 5)),
    ((3, 4), (2, 4, 5)),
    ((2, 1, 3, 4), (3, 4, 2)),
    ((4,), (2, 4, 3)),
    ((2, 3, 4), (4,)),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
def test_matmul_of_two_activations(shapes, target):
    rng = np.random.default_rng(len(shapes[0]) * 10 + len(shapes[1]))
    feeds = {"a": rng.normal(size=shapes[0]).astype(np.float32)}
    feeds["b"] = rng.normal(size=shapes[1]).astype(np.float32)
    node = helper.make_node("MatMul", ["a", "b"], ["y"])
    check_on_target(make_model([node], feeds, ["y"]), feeds, target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("seed", range(3))
def test_attention_scores(seed, target):
    # q @ k^T, scaled, softmax over the keys, @ v: the core of a small transformer
    rng = np.random.default_rng(seed)
    b, h, t, d = 1, int(rng.integers(1, 3)), int(rng.integers(2, 6)), 4
    feeds = {k: rng.normal(size=(b, h, t, d)).astype(np.float32) for k in ("q", "k", "v")}
    nodes = [
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "kt"], ["s"]),
        helper.make_node("Mul", ["s", "scale"], ["ss"]),
        helper.make_node("Softmax", ["ss"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "v"], ["y"]),
    ]
    model = make_model(nodes, feeds, ["y"], {"scale": np.array(0.5, np.float32)})
    check_on_target(model, feeds, target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("seed", range(4))
def test_layer_normalization(seed, target):
    rng = np.random.default_rng(seed)
    shape = [int(d) for d in rng.integers(2, 6, size=int(rng.integers(2, 4)))]
    x = rng.normal(size=shape, scale=3).astype(np.float32)
    axis = int(rng.integers(-len(shape), len(shape)))
    norm = shape[axis % len(shape) :]
    inits = {"s": rng.normal(size=norm).astype(np.float32)}
    names = ["x", "s"]
    if seed % 2:
        inits["b"] = rng.normal(size=norm).astype(np.float32)
        names.append("b")
    eps = float(rng.choice([1e-5, 1e-3]))
    node = helper.make_node("LayerNormalization", names, ["y"], axis=axis, epsilon=eps)
    model = make_model([node], {"x": x}, ["y"], inits, opset=17)
    check_on_target(model, {"x": x}, target, atol=2e-5)


def test_layer_normalization_statistics_outputs_are_refused():
    x = np.ones((2, 4), np.float32)
    node = helper.make_node("LayerNormalization", ["x", "s"], ["y", "mean"], name="ln")
    model = make_model([node], {"x": x}, ["y", "mean"], {"s": np.ones(4, np.float32)}, opset=17)
    with pytest.raises(FrontendError, match="ln .*LayerNormalization.*mean or inverse"):
        from_onnx(model)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("seed", range(3))
def test_instance_normalization(seed, target):
    rng = np.random.default_rng(seed)
    shape = [int(rng.integers(1, 3)), int(rng.integers(1, 5))]
    shape += [int(d) for d in rng.integers(2, 6, size=seed + 1)]
    x = rng.normal(size=shape, scale=2).astype(np.float32)
    c = shape[1]
    inits = {"s": rng.normal(size=c).astype(np.float32), "b": rng.normal(size=c).astype(np.float32)}
    node = helper.make_node(
        "InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=float(rng.choice([1e-5, 1e-2]))
    )
    check_on_target(make_model([node], {"x": x}, ["y"], inits), {"x": x}, target, atol=2e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_matmul_then_data_movement(target):
    # a projection followed by the head split of attention: reshape, transpose, slice
    rng = np.random.default_rng(6)
    x = rng.normal(size=(1, 4, 8)).astype(np.float32)
    inits = {
        "w": rng.normal(size=(8, 8)).astype(np.float32),
        "shape": np.array([1, 4, 2, 4]),
        "s": np.array([1]),
        "e": np.array([4]),
        "a": np.array([3]),
    }
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["p"]),
        helper.make_node("Reshape", ["p", "shape"], ["r"]),
        helper.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 1, 3]),
        helper.make_node("Slice", ["t", "s", "e", "a"], ["y"]),
    ]
    check_on_target(make_model(nodes, {"x": x}, ["y"], inits), {"x": x}, target)
