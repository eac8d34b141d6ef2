"""Slice, Gather, Split, Expand, Tile and Transpose on activations, against onnxruntime on random
shapes and attributes: the reference executor and the compiled model on the cpu and gpu
targets. On constants the same operators still fold at import (shape subgraphs)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from compiler.errors import FrontendError
from compiler.frontend.onnx_import import from_onnx
from tests.compiler.frontend.backends import TARGETS, check_on_target
from tests.compiler.frontend.helpers import make_model

SEEDS = range(3)


def _x(rng: np.random.Generator, rank: int | None = None) -> np.ndarray:
    rank = rank or int(rng.integers(2, 5))
    shape = [int(d) for d in rng.integers(1, 6, size=rank)]
    return rng.normal(size=shape).astype(np.float32)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("seed", SEEDS)
def test_transpose(seed, target):
    rng = np.random.default_rng(seed)
    x = _x(rng)
    perm = [int(k) for k in rng.permutation(x.ndim)]
    node = helper.make_node("Transpose", ["x"], ["y"], perm=perm)
    check_on_target(make_model([node], {"x": x}, ["y"]), {"x": x}, target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("seed", SEEDS)
def test_concat_of_activations(seed, target):
    rng = np.random.default_rng(seed)
    base = _x(rng)
    axis = int(rng.integers(-base.ndim, base.ndim))
    feeds = {}
    for k in range(int(rng.integers(2, 4))):
        shape = list(base.shape)
        shape[axis] = int(rng.integers(1, 4))
        feeds[f"x{k}"] = rng.normal(size=shape).astype(np.float32)
    node = helper.make_node("Concat", list(feeds), ["y"], axis=axis)
    check_on_target(make_model([node], feeds, ["y"]), feeds, target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("seed", range(4))
def test_slice(seed, target):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(3, 7, 6)).astype(np.float32)
    axes = sorted(int(a) for a in rng.choice(3, size=int(rng.integers(1, 4)), replace=False))
    starts, ends, steps = [], [], []
    for a in axes:
        n = x.shape[a]
        step = int(rng.choice([1, 2, -1, -2]))
        lo, hi = int(rng.integers(0, n // 2)), int(rng.integers(n // 2 + 1, n + 1))
        if step < 0:
            lo, hi = hi - 1, lo - 1 - n  # hi is negative: counted from the end
        starts.append(lo - n if seed % 2 else lo)
        ends.append(hi if step < 0 else (2**62 if seed == 2 else hi))
        steps.append(step)
    if seed == 3:  # opset 9: attributes, unit steps
        node = helper.make_node("Slice", ["x"], ["y"], starts=[0, 1], ends=[2, -1], axes=[0, 2])
        model = make_model([node], {"x": x}, ["y"], opset=9)
    else:
        inits = {"s": np.array(starts), "e": np.array(ends), "a": np.array(axes)}
        inits["st"] = np.array(steps)
        node = helper.make_node("Slice", ["x", "s", "e", "a", "st"], ["y"])
        model = make_model([node], {"x": x}, ["y"], inits)
    check_on_target(model, {"x": x}, target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("seed", range(4))
def test_gather_constant_indices(seed, target):
    rng = np.random.default_rng(seed)
    x = _x(rng, 3)
    axis = int(rng.integers(-3, 3))
    n = x.shape[axis]
    kind = seed % 4
    if kind == 0:
        idx = np.array(int(rng.integers(-n, n)))  # a scalar drops the axis
    elif kind == 1:
        idx = np.arange(n)[::-1].copy()  # evenly stepping: an affine read
    else:
        idx = rng.integers(-n, n, size=(2, 3) if kind == 2 else (4,))
    node = helper.make_node("Gather", ["x", "i"], ["y"], axis=axis)
    model = make_model([node], {"x": x}, ["y"], {"i": idx.astype(np.int64)})
    check_on_target(model, {"x": x}, target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("how", ["input", "attribute", "even", "num_outputs"])
def test_split(how, target):
    rng = np.random.default_rng(len(how))
    x = rng.normal(size=(2, 6, 7)).astype(np.float32)
    inits, opset = {}, 13
    outs = ["a", "b", "c"]
    if how == "input":
        inits = {"sp": np.array([1, 4, 2])}
        node = helper.make_node("Split", ["x", "sp"], outs, axis=-1)
    elif how == "attribute":
        node = helper.make_node("Split", ["x"], outs, axis=2, split=[3, 3, 1])
        opset = 11
    elif how == "even":
        node = helper.make_node("Split", ["x"], outs, axis=1)
    else:
        node = helper.make_node("Split", ["x"], outs, axis=2, num_outputs=3)
        opset = 18
    check_on_target(make_model([node], {"x": x}, outs, inits, opset=opset), {"x": x}, target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("seed", SEEDS)
def test_expand_and_tile(seed, target):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(3, 1, 4)).astype(np.float32)
    shape = [[2, 3, 5, 4], [5, 1], [3, 2, 1]][seed]
    reps = [int(r) for r in rng.integers(1, 4, size=3)]
    nodes = [
        helper.make_node("Expand", ["x", "shape"], ["y"]),
        helper.make_node("Tile", ["x", "reps"], ["z"]),
    ]
    inits = {"shape": np.array(shape), "reps": np.array(reps)}
    check_on_target(make_model(nodes, {"x": x}, ["y", "z"], inits), {"x": x}, target)


def test_data_movement_on_constants_still_folds():
    x = np.ones((2, 3, 4), np.float32)
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Slice", ["s", "b", "e"], ["hw"]),
        helper.make_node("Gather", ["s", "zero"], ["n"]),
        helper.make_node("Tile", ["hw", "two"], ["hw2"]),
        helper.make_node("Expand", ["n", "one"], ["n1"]),
        helper.make_node("Concat", ["n1", "hw2"], ["shape"], axis=0),
        helper.make_node("Split", ["shape"], ["p", "q"], split=[1, 4]),
        helper.make_node("Concat", ["p", "q"], ["shape2"], axis=0),
        helper.make_node("ConstantOfShape", ["shape2"], ["y"]),
    ]
    inits = {
        "b": np.array([1]), "e": np.array([3]), "zero": np.array(0), "two": np.array([2]),
        "one": np.array([1]),
    }  # fmt: skip
    g = from_onnx(make_model(nodes, {"x": x}, ["y"], inits, opset=11))
    assert g.nodes == ()
    assert g.outputs[0].value.shape == (2, 3, 4, 3, 4)


def test_non_constant_indices_are_named_before_any_work():
    x = np.ones((2, 3), np.float32)
    i = np.zeros((2,), np.int64)
    nodes = [
        helper.make_node("Gather", ["x", "i"], ["y"], name="pick"),
        helper.make_node("Tile", ["x", "i"], ["z"], name="rep"),
    ]
    model = make_model(nodes, {"x": x, "i": i}, ["y", "z"])
    with pytest.raises(FrontendError, match=r"(?s)2 unsupported.*pick \(Gather.*\n.*rep \(Tile"):
        from_onnx(model)


def test_empty_slice_is_refused_naming_the_axis():
    x = np.ones((2, 3), np.float32)
    inits = {"s": np.array([2]), "e": np.array([1]), "a": np.array([1])}
    node = helper.make_node("Slice", ["x", "s", "e", "a"], ["y"], name="cut")
    with pytest.raises(FrontendError, match=r"'cut' \(Slice\): axis 1 .* empty"):
        from_onnx(make_model([node], {"x": x}, ["y"], inits))
