"""Small models in the shape of a YOLO-style detector head, a transformer block and a text
recognizer's tail, built from the operators they export to, against onnxruntime on the cpu and
gpu targets: the operators together, fused as the pipeline fuses them."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from tests.compiler.frontend.backends import TARGETS, check_on_target
from tests.compiler.frontend.helpers import make_model


def _w(rng: np.random.Generator, *shape: int, scale: float = 0.3) -> np.ndarray:
    return (rng.normal(size=shape) * scale).astype(np.float32)


@pytest.mark.parametrize("target", TARGETS)
def test_yolo_style_head(target):
    # SiLU conv, a split into box and class branches, an upsampled coarser level concatenated,
    # and the box decode: sigmoid, (2s)^2 via Pow, grid offsets, a reshape and transpose
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1, 4, 4, 4)).astype(np.float32)
    inits = {
        "w1": _w(rng, 8, 4, 3, 3), "w2": _w(rng, 8, 8, 1, 1), "scales": np.array(
            [1, 1, 2, 2], np.float32), "sp": np.array([4, 4]), "two": np.array(2, np.float32),
        "grid": rng.integers(0, 4, size=(1, 4, 4, 4)).astype(np.float32),
        "shape": np.array([1, 3, 4, 16]),
        "s0": np.array([0]), "e0": np.array([2]), "a0": np.array([2]),
    }  # fmt: skip
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Sigmoid", ["c1"], ["s1"]),
        helper.make_node("Mul", ["c1", "s1"], ["silu"]),
        helper.make_node("Resize", ["silu", "", "scales"], ["up"], mode="nearest"),
        helper.make_node("Conv", ["up", "w2"], ["c2"]),
        helper.make_node("Split", ["c2", "sp"], ["box", "cls"], axis=1),
        helper.make_node("Sigmoid", ["box"], ["sb"]),
        helper.make_node("Mul", ["sb", "two"], ["sb2"]),
        helper.make_node("Pow", ["sb2", "two"], ["wh"]),
        helper.make_node("Add", ["sb2", "grid"], ["xy"]),
        helper.make_node("Sigmoid", ["cls"], ["sc"]),
        helper.make_node("Concat", ["xy", "wh", "sc"], ["cat"], axis=1),
        helper.make_node("Reshape", ["cat", "shape"], ["r"]),
        helper.make_node("Transpose", ["r"], ["t"], perm=[0, 1, 3, 2]),
        helper.make_node("Slice", ["t", "s0", "e0", "a0"], ["first"]),
        helper.make_node("ReduceMax", ["t"], ["best"], axes=[3], keepdims=0),
        helper.make_node("ArgMax", ["t"], ["which"], axis=3, keepdims=0),
    ]
    model = make_model(nodes, {"x": x}, ["first", "best", "which"], inits)
    check_on_target(model, {"x": x}, target)


@pytest.mark.parametrize("target", TARGETS)
def test_transformer_block(target):
    rng = np.random.default_rng(1)
    t, d, heads = 5, 8, 2
    x = rng.normal(size=(1, t, d)).astype(np.float32)
    inits = {
        "g1": 1 + _w(rng, d), "b1": _w(rng, d), "wq": _w(rng, d, d), "wk": _w(rng, d, d),
        "wv": _w(rng, d, d), "wo": _w(rng, d, d), "g2": 1 + _w(rng, d), "b2": _w(rng, d),
        "w_up": _w(rng, d, 2 * d), "w_down": _w(rng, 2 * d, d),
        "split_heads": np.array([1, t, heads, d // heads]), "merge": np.array([1, t, d]),
        "scale": np.array(1 / np.sqrt(d // heads), np.float32),
        "sqrt2": np.array(np.sqrt(2), np.float32), "one": np.array(1, np.float32),
        "half": np.array(0.5, np.float32),
    }  # fmt: skip

    def heads_of(src: str, dst: str) -> list:
        return [
            helper.make_node("Reshape", [src, "split_heads"], [f"{dst}_r"]),
            helper.make_node("Transpose", [f"{dst}_r"], [dst], perm=[0, 2, 1, 3]),
        ]

    nodes = [
        helper.make_node("LayerNormalization", ["x", "g1", "b1"], ["n1"], axis=-1),
        helper.make_node("MatMul", ["n1", "wq"], ["q0"]),
        helper.make_node("MatMul", ["n1", "wk"], ["k0"]),
        helper.make_node("MatMul", ["n1", "wv"], ["v0"]),
        *heads_of("q0", "q"), *heads_of("k0", "k"), *heads_of("v0", "v"),
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "kt"], ["s"]),
        helper.make_node("Mul", ["s", "scale"], ["ss"]),
        helper.make_node("Softmax", ["ss"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "v"], ["o"]),
        helper.make_node("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ot", "merge"], ["om"]),
        helper.make_node("MatMul", ["om", "wo"], ["proj"]),
        helper.make_node("Add", ["x", "proj"], ["h"]),
        helper.make_node("LayerNormalization", ["h", "g2", "b2"], ["n2"], axis=-1),
        helper.make_node("MatMul", ["n2", "w_up"], ["u"]),
        helper.make_node("Div", ["u", "sqrt2"], ["ud"]),
        helper.make_node("Erf", ["ud"], ["ue"]),
        helper.make_node("Add", ["ue", "one"], ["ua"]),
        helper.make_node("Mul", ["u", "ua"], ["um"]),
        helper.make_node("Mul", ["um", "half"], ["gelu"]),
        helper.make_node("MatMul", ["gelu", "w_down"], ["down"]),
        helper.make_node("Add", ["h", "down"], ["y"]),
    ]  # fmt: skip
    model = make_model(nodes, {"x": x}, ["y"], inits, opset=17)
    check_on_target(model, {"x": x}, target, atol=3e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_text_recognizer_tail(target):
    # a CRNN-style tail: squeeze the height, sequence-major transpose, a linear layer, softmax
    # over the characters and the greedy decode's argmax
    rng = np.random.default_rng(2)
    x = rng.normal(size=(1, 6, 1, 7)).astype(np.float32)
    inits = {"axes": np.array([2]), "w": _w(rng, 6, 9), "b": _w(rng, 9)}
    nodes = [
        helper.make_node("Squeeze", ["x", "axes"], ["sq"]),
        helper.make_node("Transpose", ["sq"], ["t"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["t", "w"], ["m"]),
        helper.make_node("Add", ["m", "b"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["prob"], axis=2),
        helper.make_node("ArgMax", ["prob"], ["chars"], axis=2, keepdims=0),
        helper.make_node("ReduceMax", ["prob"], ["conf"], axes=[2], keepdims=0),
    ]
    model = make_model(nodes, {"x": x}, ["chars", "conf"], inits)
    check_on_target(model, {"x": x}, target)
