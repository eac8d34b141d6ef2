"""Hostile artifacts: manifests mutated (offsets, shapes, dtypes, constants) with their checksums
recomputed, so that the loader's validation, not the checksum, must catch them. Every case runs
in a child process, so that memory corruption fails the test instead of the test run: each case
either runs and gives the original outputs, or is refused with one line naming the fault.
"""

from __future__ import annotations

import io
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import helper

from tests.compiler.frontend.helpers import make_model
from tests.fuzz.harness import ROOT, Manifest, Members, npy_bytes, read_artifact, write_artifact


def _model() -> bytes:
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("GlobalAveragePool", ["r"], ["p"], name="pool"),
        helper.make_node("Flatten", ["p"], ["y"], name="flat"),
    ]
    inits = {"w": rng.normal(size=(8, 3, 3, 3)).astype(np.float32)}
    return make_model(nodes, {"x": np.zeros((1, 3, 8, 8), np.float32)}, ["y"], inits)\
        .SerializeToString()  # fmt: skip


@pytest.fixture(scope="module")
def artifact(tmp_path_factory) -> tuple[Path, Path, np.ndarray]:
    from runtime.session import InferenceSession

    d = tmp_path_factory.mktemp("artifact")
    sess = InferenceSession(_model(), num_threads=1)
    path = d / "m.vtac"
    sess.save(path)
    x = np.random.default_rng(1).normal(size=(1, 3, 8, 8)).astype(np.float32)
    np.save(d / "x.npy", x)
    (y,) = sess.run(None, {"x": x})
    return path, d / "x.npy", y


_RUNNER = """
import sys, numpy as np
from runtime.errors import ArtifactError
from runtime.session import InferenceSession
from compiler.errors import CompilerError
x = np.load(sys.argv[1])
want = np.load(sys.argv[2])
for k, path in enumerate(sys.argv[3:]):
    print(f"{k}: start", flush=True)
    try:
        (y,) = InferenceSession(path).run(None, {"x": x})
    except (ArtifactError, CompilerError) as e:
        assert "\\n" not in str(e), str(e)
        print(f"{k}: refused: {e}", flush=True)
        continue
    print(f"{k}: {'same' if y.shape == want.shape and np.array_equal(y, want) else 'DIFFERENT'}",
          flush=True)
"""


def _run_cases(artifact, paths: list[Path]) -> list[str]:
    """Each mutated artifact loaded and run in one child process; its verdict per case."""
    _, x, y = artifact
    want = x.parent / "want.npy"
    np.save(want, y)
    proc = subprocess.run(
        [sys.executable, "-c", _RUNNER, str(x), str(want), *map(str, paths)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    lines = proc.stdout.splitlines()
    verdicts = [ln.split(": ", 1)[1] for ln in lines if not ln.endswith(": start")]
    if proc.returncode != 0 or len(verdicts) != len(paths):
        last = lines[-1] if lines else "(no case started)"
        pytest.fail(f"the child process died (code {proc.returncode}) at {last}: "
                    f"{proc.stderr.strip()[-800:]}")  # fmt: skip
    return verdicts


def _arena(manifest: Manifest) -> list[str]:
    return [t for t, p in manifest["placements"].items() if p["kind"] == "arena"]


def _first_kind(kind: str) -> Callable[[Manifest], str]:
    return lambda m: next(t for t, p in m["placements"].items() if p["kind"] == kind)


def _set(path: list, value):  # noqa: ANN001, ANN202 - small mutation helpers
    def mutate(m: Manifest, members: Members) -> None:
        node = m
        for key in path[:-1]:
            node = node[key(m) if callable(key) else key]
        last = path[-1]
        node[last(m) if callable(last) else last] = value(node, m) if callable(value) else value

    return mutate


def _constant(transform: Callable[[np.ndarray], np.ndarray]):  # noqa: ANN202
    def mutate(m: Manifest, members: Members) -> None:
        member = m["constants"][0]["member"]
        members[member] = npy_bytes(transform(np.load(io.BytesIO(members[member]))))

    return mutate


def _kernel_arg(field: str, value):  # noqa: ANN001, ANN202
    def mutate(m: Manifest, members: Members) -> None:
        m["kernels"][0]["args"][0][field] = value

    return mutate


def _shrink(tensor: str, shape: list[int], args: list[tuple[int, int]], spec: str | None = None):  # noqa: ANN202
    """``tensor``'s placement, the kernel arguments ``args`` (kernel, argument) bound to it and,
    when given, the model ``inputs`` or ``outputs`` spec (or the constant array) that it stands
    for, all given ``shape``: a manifest consistent in itself that only the shapes recorded in
    the kernels' code can contradict."""

    def mutate(m: Manifest, members: Members) -> None:
        m["placements"][tensor]["shape"] = shape
        for k, a in args:
            m["kernels"][k]["args"][a]["shape"] = shape
        if spec in ("inputs", "outputs"):
            m[spec][0]["shape"] = shape
        elif spec == "constant":
            member = next(c["member"] for c in m["constants"] if c["name"] == tensor)
            arr = np.load(io.BytesIO(members[member]))
            members[member] = npy_bytes(arr.ravel()[: int(np.prod(shape))].reshape(shape))

    return mutate


def _retype(tensor: str, dtype: str, args: list[tuple[int, int]]):  # noqa: ANN202
    def mutate(m: Manifest, members: Members) -> None:
        m["placements"][tensor]["dtype"] = dtype
        for k, a in args:
            m["kernels"][k]["args"][a]["dtype"] = dtype

    return mutate


def _strip_signature(m: Manifest, members: Members) -> None:
    """The first kernel's code without the record of its arguments (as code generated before
    kernels carried one)."""
    member = m["kernels"][0]["code"]
    members[member] = re.sub(rb"@[\w.]+\.signature\.text = [^\n]*\n\ndefine ptr @[\w.]+"
                             rb"\.signature\(\) #0 \{\nentry:\n  ret ptr @[\w.]+\n\}\n",
                             b"", members[member])  # fmt: skip
    assert b".signature" not in members[member]


RECORDED = "the compiled code records"

CASES = {
    "negative arena offset": (
        _set(["placements", lambda m: _arena(m)[0], "offset"], -4096), "is negative"),
    "offset past the arena": (
        _set(["placements", lambda m: _arena(m)[0], "offset"], 1 << 30), "end past the arena"),
    "unaligned offset": (
        _set(["placements", lambda m: _arena(m)[0], "offset"], 8), "not a multiple of 64"),
    "arena shrunk": (_set(["arena_bytes"], 64), "end past the arena"),
    # the conv's packed input moved onto the conv's output, which its kernel writes
    "arena tensors in use at once overlap": (
        _set(["placements", "conv.data_to_NCHW1n3c", "offset"], 0),
        "share bytes while both are in use, at kernel 'conv.conv'"),
    "arena_bytes negative": (_set(["arena_bytes"], -1), "arena_bytes -1"),
    "input shape shrunk": (_set(["inputs", 0, "shape"], [1, 3, 4, 4]), "but input 'x' has 48"),
    "input dtype object": (_set(["inputs", 0, "dtype"], "object"), "dtype 'object'"),
    "input negative dim": (_set(["inputs", 0, "shape"], [1, -3, 8, 8]), "negative dimension"),
    "output dtype float64": (_set(["outputs", 0, "dtype"], "float64"), "elements, but"),
    "constant shrunk": (_constant(lambda a: a.ravel()[:3].copy()), "the placement needs"),
    "constant float64": (_constant(lambda a: a.astype(np.float64)), "the placement needs"),
    "kernel arg shape": (_kernel_arg("shape", [1]), "was compiled for"),
    "kernel writes its input": (
        lambda m, members: m["kernels"][0]["args"][0].update(is_output=True),
        "writes input"),
    "kernel tensor unknown": (
        lambda m, members: m["kernels"][0]["tensors"].__setitem__(0, "nowhere"),
        "unknown tensor 'nowhere'"),
    "placement kind": (_set(["placements", lambda m: _arena(m)[0], "kind"], "heap"), "unknown"),
    "input placed in the arena": (_set(["placements", _first_kind("input"), "kind"], "arena"),
                                  "before any kernel writes it"),
    "huge shape": (_set(["placements", lambda m: _arena(m)[0], "shape"], [1 << 40, 1 << 40]),
                   "too large"),
    # a kernel's argument shapes edited with every placement, spec and constant naming them
    "kernel input shrunk with its input spec": (
        _shrink("x", [1, 3, 4, 4], [(0, 0)], "inputs"), RECORDED),
    "kernel weight shrunk with its constant": (
        _shrink("w.packed", [1, 1, 1, 1, 1, 1], [(1, 1)], "constant"), RECORDED),
    "kernel output shrunk with its output spec": (
        _shrink("flat", [1, 1], [(2, 1)], "outputs"), RECORDED),
    "kernel arena tensor shrunk for writer and reader": (
        _shrink("conv", [1, 1, 8, 8], [(1, 2), (2, 0)]), RECORDED),
    "kernel arena tensor grown for writer and reader": (
        _shrink("conv", [1, 8, 8, 8, 4], [(1, 2), (2, 0)]), "end past the arena"),
    "kernel arena tensor retyped for writer and reader": (
        _retype("conv", "int32", [(1, 2), (2, 0)]), RECORDED),
    "kernel output marked read": (
        lambda m, members: m["kernels"][2]["args"][1].update(is_output=False), RECORDED),
    "kernel arguments renamed": (
        lambda m, members: m["kernels"][0]["args"][0].update(name="other"), RECORDED),
    "kernel code records no shapes": (_strip_signature, "records no argument shapes"),
}  # fmt: skip


def test_every_named_mutation_is_refused_naming_its_field(artifact, tmp_path):
    path, _, _ = artifact
    paths, wants = [], []
    for k, (name, (mutate, want)) in enumerate(CASES.items()):
        manifest, members = read_artifact(path)
        mutate(manifest, members)
        out = tmp_path / f"case{k}.vtac"
        write_artifact(out, manifest, members)
        paths.append(out)
        wants.append((name, want))
    verdicts = _run_cases(artifact, paths)
    wrong = [(name, v) for (name, want), v in zip(wants, verdicts, strict=True)
             if not (v.startswith("refused: ") and want in v)]  # fmt: skip
    assert not wrong, "\n".join(f"{n}: {v}" for n, v in wrong)


_FIELDS = st.sampled_from(["offset", "shape", "dtype", "kind"])


@settings(max_examples=25, derandomize=True)
@given(data=st.data())
def test_random_manifest_mutations_never_corrupt_memory(artifact, tmp_path_factory, data):
    path, _, _ = artifact
    manifest, members = read_artifact(path)
    tensor = data.draw(st.sampled_from(sorted(manifest["placements"])), label="tensor")
    field = data.draw(_FIELDS, label="field")
    placement = manifest["placements"][tensor]
    if field == "offset":
        placement["offset"] = data.draw(st.integers(-(1 << 40), 1 << 40), label="offset")
    elif field == "shape":
        placement["shape"] = data.draw(
            st.lists(st.integers(-4, 64), min_size=0, max_size=6), label="shape")  # fmt: skip
    elif field == "dtype":
        placement["dtype"] = data.draw(
            st.sampled_from(["float64", "int8", "uint8", "bool", "object", "float16", "int64"]),
            label="dtype")  # fmt: skip
    else:
        placement["kind"] = data.draw(st.sampled_from(["input", "constant", "arena", "output"]),
                                      label="kind")  # fmt: skip
    out = tmp_path_factory.mktemp("mut") / "m.vtac"
    write_artifact(out, manifest, members)
    (verdict,) = _run_cases(artifact, [out])
    assert verdict == "same" or verdict.startswith("refused: "), verdict


def _reshape_everywhere(m: Manifest, members: Members, tensor: str, shape: list[int]) -> None:
    """``tensor`` given ``shape`` in its placement, every kernel argument bound to it, and the
    spec or constant it stands for: the consistent edit that only the kernels' code refutes."""
    place = m["placements"][tensor]
    place["shape"] = shape
    for k in m["kernels"]:
        for a, t in zip(k["args"], k["tensors"], strict=True):
            if t == tensor:
                a["shape"] = shape
    if place["kind"] in ("input", "output"):
        for spec in m[f"{place['kind']}s"]:
            if spec["name"] == place["key"]:
                spec["shape"] = shape
    elif place["kind"] == "constant":
        member = next(c["member"] for c in m["constants"] if c["name"] == place["key"])
        arr = np.load(io.BytesIO(members[member]))
        members[member] = npy_bytes(np.resize(arr.ravel(), int(np.prod(shape))).reshape(shape))


#: mutated artifacts per example: one child process runs them all (its start costs more)
BATCH = 4


@settings(max_examples=5, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_consistent_shape_edits_are_refused(artifact, tmp_path_factory, data):
    """A tensor of random new size, edited in every field of the manifest that names it (its
    placement, the kernel arguments bound to it, its spec or constant): each case is refused in
    one line, since no kernel was compiled for it."""
    path, _, _ = artifact
    d = tmp_path_factory.mktemp("consistent")
    paths, edits = [], []
    for k in range(BATCH):
        manifest, members = read_artifact(path)
        tensor = data.draw(st.sampled_from(sorted(manifest["placements"])), label=f"{k}: tensor")
        old = int(np.prod(manifest["placements"][tensor]["shape"]))
        shape = data.draw(
            st.lists(st.integers(1, 40), min_size=1, max_size=6)
            .filter(lambda s, old=old: int(np.prod(s)) != old), label=f"{k}: shape")  # fmt: skip
        _reshape_everywhere(manifest, members, tensor, shape)
        write_artifact(d / f"case{k}.vtac", manifest, members)
        paths.append(d / f"case{k}.vtac")
        edits.append(f"{tensor} {shape}")
    verdicts = _run_cases(artifact, paths)
    wrong = [f"{e}: {v}" for e, v in zip(edits, verdicts, strict=True)
             if not v.startswith("refused: ")]  # fmt: skip
    assert not wrong, "\n".join(wrong)
