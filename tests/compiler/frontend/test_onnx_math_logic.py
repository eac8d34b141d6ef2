"""Pow, Log, Tanh, Erf, Gelu (opset 20 and the Erf pattern exporters emit), the comparisons,
Not/And/Or on bool tensors and Where, against onnxruntime on random shapes: the reference
executor and the compiled model on the cpu and gpu targets."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from compiler.frontend.onnx_import import from_onnx
from tests.compiler.frontend.backends import TARGETS, check_on_target
from tests.compiler.frontend.helpers import make_model


def _shapes(rng: np.random.Generator) -> tuple[list[int], list[int]]:
    full = [int(d) for d in rng.integers(1, 5, size=int(rng.integers(1, 4)))]
    other = [d if rng.random() < 0.5 else 1 for d in full][int(rng.integers(0, len(full))) :]
    return full, other


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    "op,low,high",
    [("Log", 0.05, 5.0), ("Tanh", -4.0, 4.0), ("Erf", -5.0, 5.0), ("Sqrt", 0, 9), ("Exp", -5, 5)],
)
def test_unary_math(op, low, high, target):
    rng = np.random.default_rng(len(op))
    x = rng.uniform(low, high, size=(2, 3, 5)).astype(np.float32)
    node = helper.make_node(op, ["x"], ["y"])
    check_on_target(make_model([node], {"x": x}, ["y"]), {"x": x}, target, atol=2e-6)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("seed", range(4))
def test_pow_tensor_exponent(seed, target):
    rng = np.random.default_rng(seed)
    full, other = _shapes(rng)
    base = rng.uniform(-3, 3, size=full).astype(np.float32)
    base.reshape(-1)[0] = 0.0
    # integral exponents where the base may be negative; fractional ones on positive bases
    expo = rng.integers(-2, 4, size=other).astype(np.float32)
    if seed % 2:
        base, expo = np.abs(base) + 0.1, rng.uniform(-2, 2, size=other).astype(np.float32)
    node = helper.make_node("Pow", ["a", "b"], ["y"])
    feeds = {"a": base, "b": expo}
    check_on_target(make_model([node], feeds, ["y"]), feeds, target, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("k", [2.0, 3.0, 0.5, 1.0, -1.5])
def test_pow_constant_exponent(k, target):
    x = np.random.default_rng(1).uniform(0.2, 3, size=(2, 4, 3)).astype(np.float32)
    node = helper.make_node("Pow", ["x", "k"], ["y"])
    model = make_model([node], {"x": x}, ["y"], {"k": np.array(k, np.float32)})
    check_on_target(model, {"x": x}, target)
    ops = [n.op for n in from_onnx(model).nodes]
    assert ops == {2.0: ["multiply"], 3.0: ["multiply"] * 2, 0.5: ["sqrt"], 1.0: []}.get(
        k, ["power"]
    )


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_opset_20(approximate, target):
    x = np.random.default_rng(2).normal(size=(3, 8), scale=2).astype(np.float32)
    node = helper.make_node("Gelu", ["x"], ["y"], approximate=approximate)
    model = make_model([node], {"x": x}, ["y"], opset=20)
    check_on_target(model, {"x": x}, target, atol=2e-6)


@pytest.mark.parametrize("target", TARGETS)
def test_gelu_erf_pattern_of_exporters(target):
    # what torch.onnx emits for nn.GELU(): x * 0.5 * (1 + erf(x / sqrt(2)))
    x = np.random.default_rng(3).normal(size=(2, 4, 6), scale=2).astype(np.float32)
    nodes = [
        helper.make_node("Div", ["x", "sqrt2"], ["d"]),
        helper.make_node("Erf", ["d"], ["e"]),
        helper.make_node("Add", ["e", "one"], ["p"]),
        helper.make_node("Mul", ["x", "p"], ["m"]),
        helper.make_node("Mul", ["m", "half"], ["y"]),
    ]
    inits = {
        "sqrt2": np.array(np.sqrt(2), np.float32),
        "one": np.array(1, np.float32),
        "half": np.array(0.5, np.float32),
    }
    check_on_target(make_model(nodes, {"x": x}, ["y"], inits), {"x": x}, target, atol=2e-6)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("seed", range(3))
def test_comparisons_logic_and_where(seed, target):
    rng = np.random.default_rng(seed)
    full, other = _shapes(rng)
    a = np.round(rng.normal(size=full)).astype(np.float32)  # ties, so Equal and <= matter
    b = np.round(rng.normal(size=other)).astype(np.float32)
    ops = ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"]
    nodes = [helper.make_node(op, ["a", "b"], [f"c{k}"]) for k, op in enumerate(ops)]
    nodes += [
        helper.make_node("And", ["c1", "c4"], ["and"]),
        helper.make_node("Or", ["c0", "c2"], ["or"]),
        helper.make_node("Not", ["or"], ["not"]),
        helper.make_node("Where", ["and", "a", "b"], ["w"]),
        helper.make_node("Where", ["not", "b", "a"], ["w2"]),
    ]
    outs = [f"c{k}" for k in range(len(ops))] + ["and", "not", "w", "w2"]
    feeds = {"a": a, "b": b}
    model = make_model(nodes, feeds, outs, opset=[13, 16, 18][seed])
    check_on_target(model, feeds, target)


@pytest.mark.parametrize("target", TARGETS)
def test_bool_graph_input(target):
    rng = np.random.default_rng(4)
    mask = rng.random((3, 4)) < 0.5
    x = rng.normal(size=(3, 4)).astype(np.float32)
    nodes = [
        helper.make_node("Not", ["m"], ["n"]),
        helper.make_node("Where", ["n", "x", "zero"], ["y"]),
    ]
    feeds = {"x": x, "m": mask}
    model = make_model(nodes, feeds, ["y"], {"zero": np.zeros((), np.float32)})
    check_on_target(model, feeds, target)


@pytest.mark.gpu
def test_bool_buffers_compile_to_ptx():
    """numba's CUDA simulator never reads a kernel's signature; the real target compiles each
    kernel for it. A graph with bool inputs, bool intermediates and bool outputs compiles to
    PTX (numba's real CUDA compiler, in a child process without the simulator; no GPU needed)."""
    from compiler.targets.gpu.codegen import module_source
    from compiler.targets.gpu.ptx import PtxUnavailable, compile_ptx
    from runtime.session import InferenceSession

    rng = np.random.default_rng(5)
    a, b = rng.normal(size=(3, 4)).astype(np.float32), rng.normal(size=(4,)).astype(np.float32)
    mask = rng.random((3, 4)) < 0.5
    nodes = [
        helper.make_node("Less", ["a", "b"], ["lt"]),
        helper.make_node("And", ["lt", "m"], ["both"]),
        helper.make_node("Not", ["both"], ["neither"]),
        helper.make_node("Where", ["neither", "a", "b"], ["w"]),
    ]
    feeds = {"a": a, "b": b, "m": mask}
    model = make_model(nodes, feeds, ["neither", "w"])
    modules = InferenceSession(model.SerializeToString(), target="gpu").program.modules.values()
    sources = [src for m in modules for src in m.sources]
    signatures = [s.signature for s in sources]
    assert any("boolean[::1]" in sig for sig in signatures), signatures
    try:
        ptx = compile_ptx(module_source(sources), [(s.name, s.signature) for s in sources])
    except PtxUnavailable as exc:
        pytest.skip(f"no PTX compiler on this machine: {exc}")
    assert set(ptx) == {s.name for s in sources}
    assert all(".entry" in text for text in ptx.values())
