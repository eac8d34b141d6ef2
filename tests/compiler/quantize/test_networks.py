"""Whole networks in the integer reference: the trained digits network's accuracy on its
held-out split, and a random-weight ResNet-18 as a pipeline check."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx", reason="the onnx extra is not installed")

from compiler.frontend.onnx_import import from_onnx  # noqa: E402
from compiler.frontend.zoo import load_zoo  # noqa: E402
from compiler.graph import Constant, Graph, evaluate  # noqa: E402
from compiler.quantize import fp32_fallbacks, integer_violations, quantize_graph  # noqa: E402


def _cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


@pytest.fixture(scope="module")
def digits(digits_split, digits_calibration):
    images, labels = digits_split
    graph = from_onnx(load_zoo("digits", batch=len(images)))
    assert len(digits_calibration) == len(images)  # one batch shape for both
    q = quantize_graph(graph, {"data": digits_calibration})
    return graph, q, images, labels


def test_digits_int8_top1_within_one_point_of_fp32(digits):
    graph, q, images, labels = digits
    assert len(labels) >= 1000
    fp32 = evaluate(graph, {"data": images})[0]
    int8 = evaluate(q, {"data": images})[0]
    acc32 = float((fp32.argmax(1) == labels).mean())
    acc8 = float((int8.argmax(1) == labels).mean())
    cos = float(_cosine(fp32, int8).mean())
    print(f"\ndigits ({len(labels)} held-out images): fp32 top-1 {acc32:.2%}, int8 top-1 "
          f"{acc8:.2%}, mean logit cosine {cos:.5f}")  # fmt: skip
    assert acc8 >= acc32 - 0.01
    assert cos > 0.99


def _same_bits(a: Graph, b: Graph) -> bool:
    """Whether two quantized graphs have the same nodes, attributes and constants."""
    if len(a.nodes) != len(b.nodes):
        return False
    for m, n in zip(a.nodes, b.nodes, strict=True):
        if (m.op, m.name, dict(m.attrs), len(m.inputs)) != (
            n.op,
            n.name,
            dict(n.attrs),
            len(n.inputs),
        ):
            return False
        for u, v in zip(m.inputs, n.inputs, strict=True):
            if isinstance(u, Constant) != isinstance(v, Constant):
                return False
            if isinstance(u, Constant) and (
                u.value.dtype != v.value.dtype or u.value.tobytes() != v.value.tobytes()
            ):
                return False
    return True


def test_digits_sensitivity_check_keeps_every_node_int8(digits, digits_calibration):
    # regression: the default threshold changes nothing on the trained digits network
    graph, q, _, _ = digits
    assert fp32_fallbacks(q) == {}
    off = quantize_graph(graph, {"data": digits_calibration}, sensitivity="off")
    assert _same_bits(q, off)


def test_digits_integer_region_has_no_float_op(digits):
    _, q, _, _ = digits
    assert integer_violations(q) == []
    ops = [n.op for n in q.nodes]
    assert ops.count("quantize") == 1 and ops.count("dequantize") == 1
    assert q.nodes[0].op == "quantize" and q.nodes[-1].op == "dequantize"
    # walk from the input's quantize to the output's dequantize: integers all the way
    seen = {id(q.nodes[0])}
    for node in q.nodes[1:]:
        if any(id(v) in seen for v in node.inputs):
            seen.add(id(node))
            if node.op != "dequantize":
                assert node.type.dtype in ("int8", "int32"), node
    assert id(q.nodes[-1]) in seen


def test_digits_integer_reference_is_bit_exact_and_deterministic(digits, digits_calibration):
    graph, q, images, _ = digits
    a = evaluate(q, {"data": images[:1000]})[0]
    again = quantize_graph(graph, {"data": digits_calibration})
    b = evaluate(again, {"data": images[:1000]})[0]
    assert a.tobytes() == b.tobytes()


def test_resnet18_at_32x32_runs_in_the_integer_reference():
    # random weights: a pipeline check (shapes, operators, integer-only), not an accuracy claim
    batch = 4
    graph = from_onnx(load_zoo("resnet18", image_size=32, batch=batch))
    rng = np.random.default_rng(0)
    feeds = [{"data": rng.normal(size=(batch, 3, 32, 32)).astype(np.float32)} for _ in range(2)]
    q = quantize_graph(graph, feeds)
    assert integer_violations(q) == []
    # regression: the default sensitivity threshold keeps every node int8, bit for bit
    assert fp32_fallbacks(q) == {}
    assert _same_bits(q, quantize_graph(graph, feeds, sensitivity="off"))
    ops = [n.op for n in q.nodes]
    assert ops.count("qadd") == 8 and ops.count("conv2d") == 20
    test = {"data": rng.normal(size=(batch, 3, 32, 32)).astype(np.float32)}
    fp32, int8 = evaluate(graph, test)[0], evaluate(q, test)[0]
    cos = _cosine(fp32, int8)
    agree = float((fp32.argmax(1) == int8.argmax(1)).mean())
    print(f"\nresnet18 32x32 random weights: logit cosine {np.round(cos, 5).tolist()}, "
          f"top-1 agreement {agree:.0%}")  # fmt: skip
    assert cos.min() > 0.99
