"""Hostile accelerator artifacts (``vtac compile M --target vta``): manifests mutated (offsets,
sizes, shapes, dtypes, symbols, instruction counts, program bytes, the DRAM image, the
quantization table, knobs, host kernels) with their checksums recomputed, so that the loader's
validation, not the checksum, must catch them. Every case runs in a child process, so that
memory corruption or a hang fails the test instead of the test run: each case either runs (with
the original outputs where the mutation changes nothing the run reads) or is refused with one
line naming the member or step and the field.

A host kernel's argument shapes edited together with every slot and spec that names them are
refused too: the kernel's own code records the arguments it was compiled for
(``compiler/targets/cpu/signature.py``), as the accelerator groups' program files record their
symbols.
"""

from __future__ import annotations

import io
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import helper

from isa.encoding import INSN_BYTES
from tests.compiler.frontend.helpers import make_model
from tests.fuzz.harness import (
    ROOT,
    Manifest,
    Members,
    npy_bytes,
    read_artifact,
    run_vtac,
    write_artifact,
    zip_with_flags,
)


def _model() -> bytes:
    """Conv, ReLU, global pool on the accelerator; quantize, the conv's channel fold (3 input
    channels), flatten and softmax on the host."""
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("GlobalAveragePool", ["r"], ["p"], name="pool"),
        helper.make_node("Flatten", ["p"], ["f"], name="flat"),
        helper.make_node("Softmax", ["f"], ["y"], axis=1, name="soft"),
    ]
    inits = {"w": rng.normal(size=(16, 3, 3, 3)).astype(np.float32)}
    return make_model(nodes, {"x": np.zeros((1, 3, 8, 8), np.float32)}, ["y"], inits)\
        .SerializeToString()  # fmt: skip


@pytest.fixture(scope="module")
def artifact(tmp_path_factory) -> tuple[Path, Path]:
    """``vtac compile m.onnx --target vta --calibrate x.npy``, and the feed ``x.npy``."""
    d = tmp_path_factory.mktemp("vta_artifact")
    (d / "m.onnx").write_bytes(_model())
    x = np.random.default_rng(1).normal(size=(1, 3, 8, 8)).astype(np.float32)
    np.save(d / "x.npy", x)
    path = d / "m.vtac"
    argv = ["compile", str(d / "m.onnx"), "--target", "vta", "--calibrate", str(d / "x.npy"),
            "-o", str(path)]  # fmt: skip
    out = run_vtac(argv)
    assert out.code == 0, out.err
    return path, d / "x.npy"


# the child runs the unmutated artifact first: every case is compared with its outputs. An
# error of the package's own (refusals) is one line; anything else is a defect, reported with
# its type so that the remaining cases still run.
_RUNNER = """
import sys, traceback, numpy as np
from compiler.errors import CompilerError
from isa.errors import IsaError
from runtime.session import InferenceSession
x = np.load(sys.argv[1])
(want,) = InferenceSession(sys.argv[2]).run(None, {"x": x})
for k, path in enumerate(sys.argv[3:]):
    print(f"{k}: start", flush=True)
    try:
        (y,) = InferenceSession(path).run(None, {"x": x})
    except (CompilerError, IsaError) as e:
        one = "\\n" not in str(e).strip() and "internal error" not in str(e)
        print(f"{k}: {'refused' if one else 'MULTI-LINE'}: {str(e).strip()!r}", flush=True)
        continue
    except Exception as e:
        last = traceback.format_exc().strip().splitlines()[-3:]
        print(f"{k}: UNCAUGHT {type(e).__name__}: {e!s:.200} {last!r}", flush=True)
        continue
    same = y.shape == want.shape and y.dtype == want.dtype and np.array_equal(y, want)
    print(f"{k}: {'same' if same else 'different'}", flush=True)
"""


def _run_cases(artifact: tuple[Path, Path], paths: list[Path], timeout: int = 300) -> list[str]:
    """Each mutated artifact loaded and run in one child process; its verdict per case."""
    original, x = artifact
    proc = subprocess.run(
        [sys.executable, "-c", _RUNNER, str(x), str(original), *map(str, paths)],
        cwd=ROOT, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    lines = proc.stdout.splitlines()
    verdicts = [ln.split(": ", 1)[1] for ln in lines if not ln.endswith(": start")]
    if proc.returncode != 0 or len(verdicts) != len(paths):
        last = lines[-1] if lines else "(no case started)"
        pytest.fail(f"the child process died (code {proc.returncode}) at {last}: "
                    f"{proc.stderr.strip()[-800:]}")  # fmt: skip
    return verdicts


def _step(kind: str, k: int = 0) -> Callable[[Manifest], int]:
    """The index of the ``k``-th step of ``kind`` (``vta`` or ``cpu``)."""
    return lambda m: [i for i, s in enumerate(m["steps"]) if s["kind"] == kind][k]


def _at(m: Manifest, path: list) -> tuple[Any, Any]:
    node: Any = m
    for key in path[:-1]:
        node = node[key(m) if callable(key) else key]
    last = path[-1]
    return node, last(m) if callable(last) else last


def _set(path: list, value):  # noqa: ANN001, ANN202 - small mutation helpers
    def mutate(m: Manifest, members: Members) -> None:
        node, key = _at(m, path)
        node[key] = value(node[key]) if callable(value) else value

    return mutate


def _del(path: list):  # noqa: ANN001, ANN202
    def mutate(m: Manifest, members: Members) -> None:
        node, key = _at(m, path)
        del node[key]

    return mutate


def _both(*mutations: Callable[[Manifest, Members], None]):  # noqa: ANN202
    def mutate(m: Manifest, members: Members) -> None:
        for one in mutations:
            one(m, members)

    return mutate


def _member(name: Callable[[Manifest], str], transform: Callable[[bytes], bytes]):  # noqa: ANN202
    def mutate(m: Manifest, members: Members) -> None:
        members[name(m)] = transform(members[name(m)])

    return mutate


def _dram(transform: Callable[[np.ndarray], np.ndarray]):  # noqa: ANN202
    return _member(lambda m: m["dram"],
                   lambda b: npy_bytes(transform(np.load(io.BytesIO(b)))))  # fmt: skip


def _first_insn_byte(value: int):  # noqa: ANN202
    def mutate(m: Manifest, members: Members) -> None:
        dram = np.load(io.BytesIO(members[m["dram"]])).copy()
        dram[m["steps"][VTA(m)]["insn_base"]] = value
        members[m["dram"]] = npy_bytes(dram)

    return mutate


def _program(m: Manifest) -> str:
    return m["steps"][_step("vta")(m)]["program"]


def _program_arrays(transform: Callable[[dict], None]):  # noqa: ANN202
    def edit(data: bytes) -> bytes:
        with np.load(io.BytesIO(data)) as z:
            arrays = {k: z[k] for k in z.files}
        transform(arrays)
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        return buf.getvalue()

    return _member(_program, edit)


def _kernel(m: Manifest) -> str:
    return m["steps"][_step("cpu")(m)]["kernel"]["code"]


VTA, CPU, LAST_CPU = _step("vta"), _step("cpu"), _step("cpu", -1)
SYM = ["steps", VTA, "symbols"]
WRITE = ["steps", VTA, "writes", 0]
ARG = ["steps", CPU, "kernel", "args", 0]


def _host_arg(
    step: Callable[[Manifest], int],
    arg: int,
    shape: list[int],
    slots: list[int],
    spec: str | None = None,
):  # noqa: ANN202
    """A host step's argument, the ``slots`` it binds and, when given, the model ``inputs`` or
    ``outputs`` spec of that slot, all given ``shape``: consistent in every field of the
    manifest, refuted only by the shapes recorded in the kernel's code."""

    def mutate(m: Manifest, members: Members) -> None:
        m["steps"][step(m)]["kernel"]["args"][arg]["shape"] = shape
        for v in slots:
            m["slots"][v]["shape"] = shape
        if spec is not None:
            m[spec][0]["shape"] = shape

    return mutate


def _strip_signature(m: Manifest, members: Members) -> None:
    """The first host kernel's code without the record of its arguments (as code generated
    before kernels carried one)."""
    member = _kernel(m)
    members[member] = re.sub(rb"@[\w.]+\.signature\.text = [^\n]*\n\ndefine ptr @[\w.]+"
                             rb"\.signature\(\) #0 \{\nentry:\n  ret ptr @[\w.]+\n\}\n",
                             b"", members[member])  # fmt: skip
    assert b".signature" not in members[member]


RECORDED = "the compiled code records"

# name: (mutation, what the one-line refusal must say)
CASES = {
    # instruction ranges and counts
    "insn_base negative": (_set(["steps", VTA, "insn_base"], -64), "'insn_base' is negative"),
    "insn_base past the image": (_set(["steps", VTA, "insn_base"], 1 << 30), "outside the"),
    "insn_count huge": (_set(["steps", VTA, "insn_count"], 1 << 40), "outside the"),
    "insn_count one less": (_set(["steps", VTA, "insn_count"], lambda v: v - 1),
                            "instructions, the manifest's step says"),
    "insn_count a string": (_set(["steps", VTA, "insn_count"], "86"), "'insn_count' is not int"),
    # symbols
    "symbol offset past the image": (_set([*SYM, "out", "offset"], 1 << 30), "outside the"),
    "symbol offset negative": (_set([*SYM, "data", "offset"], -1), "symbol"),
    "symbol shape grown": (_set([*SYM, "data", "shape"], [1, 7, 8, 8, 1, 1 << 20]), "symbol"),
    "symbol shape wrong rank": (_set([*SYM, "data", "shape"], [7, 8, 8, 4]), "'data'"),
    "symbol shape of zeros": (_set([*SYM, "data", "shape"], [1, 7, 8, 8, 0, 4]), "'data'"),
    "symbol dtype wrong": (_set([*SYM, "data", "dtype"], "int32"), "'data'"),
    "symbol dtype unknown": (_set([*SYM, "data", "dtype"], "complex"), "symbol"),
    "output symbol missing": (_del([*SYM, "out"]), "no 'out'"),
    "output symbol shape": (_set([*SYM, "out", "shape"], [1, 1, 8, 8, 1, 4]), "'output'"),
    "output symbol and slot shrunk together": (_both(
        _set([*SYM, "out", "shape"], [1, 2, 8, 8, 1, 4]),
        _set(["slots", 2, "shape"], [1, 2, 8, 8, 1, 4])), "program programs/"),
    "written symbol unknown": (_set([*WRITE, "symbol"], "nowhere"), "'nowhere'"),
    "aliased unknown": (_set(["steps", VTA, "aliased"], ["nowhere"]), "'aliased'"),
    # the host's writes into the image
    "write slot out of range": (_set([*WRITE, "slot"], 99), "'writes': slot 99"),
    "write slot not ready": (_set([*WRITE, "slot"], 2), "read before"),
    "write slot of another shape": (_set([*WRITE, "slot"], 0), "but symbol 'data' is"),
    # a write copies its slot and nothing else: the fields of a format that also packed,
    # padded and folded are refused (the pack, the pad and the fold are host kernels now),
    # not run without them
    "write with a packing": (_set([*WRITE, "packing"], "nchw"), "unknown field(s) 'packing'"),
    "write with a pad": (_set([*WRITE, "pad"], [1, 1, 1, 1]), "unknown field(s) 'pad'"),
    "write with a fold": (_set([*WRITE, "fold"], {"kind": "im2col"}), "field(s) 'fold'"),
    "write slot missing": (_del([*WRITE, "slot"]), "'writes'"),
    "segments malformed": (_set(["steps", VTA, "segments"], [[0, 1]]), "'segments'"),
    "producers a list": (_set(["steps", VTA, "producers"], ["conv"]), "'producers'"),
    # slots, inputs and outputs
    "slot shape shrunk": (_set(["slots", 1, "shape"], [1, 3, 4, 4]), "slot 1"),
    "slot dtype changed": (_set(["slots", 2, "dtype"], "int32"), "'output'"),
    "slot negative dim": (_set(["slots", 0, "shape"], [1, -3, 8, 8]), "slot 0"),
    "input shape shrunk": (_set(["inputs", 0, "shape"], [1, 3, 4, 4]), "input_slots"),
    "input dtype object": (_set(["inputs", 0, "dtype"], "object"), "'dtype' is not one"),
    "slot dtype object": (_set(["slots", 1, "dtype"], "object"), "'dtype' is not one"),
    "slot shape huge": (_set(["slots", 1, "shape"], [1 << 40, 3, 8, 8]), "slot 1"),
    "output dtype float64": (_set(["outputs", 0, "dtype"], "float64"), "output_slots"),
    "output slot unwritten": (_set(["output_slots", 0], 1), "output_slots"),
    "input slot out of range": (_set(["input_slots", 0], -1), "'input_slots'"),
    # the host arena (slots 1 and 3 are the values the host keeps between steps)
    "arena slot offset misaligned": (_set(["slots", 1, "offset"], 8), "multiple of 64"),
    "arena slot offset past the arena": (_set(["slots", 3, "offset"], 1 << 20), "end past"),
    "arena cut": (_set(["arena_bytes"], 64), "end past the 64-byte arena"),
    "arena huge": (_set(["arena_bytes"], 1 << 40), "'arena_bytes'"),
    # without an offset, a tensor a host kernel makes would be a group's out left in the image
    "arena slot without offset": (_set(["slots", 1, "offset"], -1), "is in the image, but"),
    "input slot given an offset": (_set(["slots", 0, "offset"], 0), "is input 'x', not in the"),
    "output slot given an offset": (_set(["slots", 4, "offset"], 0), "is output 'y', not in the"),
    "slot name missing": (_del(["slots", 1, "name"]), "slot 1: no field 'name'"),
    "slot names repeated": (lambda m, members: m["slots"][2].update(name=m["slots"][1]["name"]),
                            "is slot 1's too"),
    "slot offset below -1": (_set(["slots", 1, "offset"], -7), "'offset' is -7"),
    "slot offset missing": (_del(["slots", 1, "offset"]), "no field 'offset'"),
    # the DRAM image
    "dram truncated": (_dram(lambda a: a[: a.size // 4].copy()), "DRAM image"),
    "dram int32": (_dram(lambda a: a.astype(np.int32)), "not 1-D uint8"),
    "dram 2-D": (_dram(lambda a: a.reshape(1, -1)), "not 1-D uint8"),
    # the first instruction's opcode byte changed: the simulator deadlocks (its diagnosis
    # spans lines; the session refuses in one, naming the group)
    "instruction corrupted": (_first_insn_byte(8), "group conv: deadlock"),
    "dram not npy": (_member(lambda m: m["dram"], lambda b: b"garbage"), "not an npy"),
    # the program members
    "program not npz": (_member(_program, lambda b: b[:100]), "not a program file"),
    "program config other": (_program_arrays(lambda a: a.__setitem__(
        "config", np.array(str(a["config"]).replace('"default"', '"other"')))), "config"),
    "program insn_count cut": (_program_arrays(lambda a: a.__setitem__(
        "insn_count", np.array(int(a["insn_count"]) - 1))), "instructions"),
    # static figures, quantization, knobs and misc fields
    "record field missing": (_del(["steps", VTA, "record", "macs"]), "'record' has no 'macs'"),
    "record macs not a number": (_set(["steps", VTA, "record", "macs"], "many"), "'macs'"),
    "record cycles a list": (_set(["steps", VTA, "record", "ideal_cycles"], [1]),
                             "'ideal_cycles'"),
    "knobs not a string": (_set(["steps", VTA, "knobs"], 7), "'knobs' is not str"),
    "quantization not JSON": (_member(lambda m: m["quantization"], lambda b: b"{"), "not valid"),
    "quantization member missing": (_set(["quantization"], "nowhere.json"), "nowhere.json"),
    "compile_seconds a string": (_set(["compile_seconds"], "x"), "'compile_seconds'"),
    "activation_bytes negative": (_set(["activation_bytes"], -5), "'activation_bytes'"),
    "step kind unknown": (_set(["steps", 0, "kind"], "gpu"), "'kind' is 'gpu'"),
    "steps reordered": (_set(["steps"], lambda s: s[::-1]), "read before"),
    "config block_in changed": (_set(["config", "block_in"], 16), "with block_in=4, the"),
    "config unknown field": (_set(["config", "warp"], 2), "'config'"),
    # host kernels
    "kernel arg shape": (_set([*ARG, "shape"], [1]), "kernel argument"),
    "kernel arg dtype": (_set([*ARG, "dtype"], "float64"), "kernel argument"),
    "kernel writes its input": (_set([*ARG, "is_output"], True), "'inputs'"),
    "kernel symbol unknown": (_set(["steps", CPU, "kernel", "symbol"], "nowhere"), "'nowhere'"),
    "kernel symbol of another": (_set(["steps", LAST_CPU, "kernel", "symbol"], "host_0"),
                                 "host_0"),
    "kernel code garbage": (_member(_kernel, lambda b: b"this is not LLVM IR"), "kernels/"),
    "kernel code not UTF-8": (_member(_kernel, lambda b: b"\xff\xfe" + b), "kernels/"),
    "kernel member missing": (_set(["steps", CPU, "kernel", "code"], "kernels/x.ll"),
                              "kernels/x.ll"),
    "host step input unready": (_set(["steps", LAST_CPU, "inputs"], [4]), "read before"),
    "host nodes malformed": (_set(["steps", CPU, "nodes"], [["a", "b"]]), "'nodes'"),
    # a host kernel's argument shapes edited with every slot and spec naming them
    "host input shrunk with its slot and input spec": (
        _host_arg(CPU, 0, [1, 3, 4, 4], [0], "inputs"), RECORDED),
    "host output shrunk with its slot and output spec": (
        _host_arg(LAST_CPU, 1, [1, 4], [4], "outputs"), RECORDED),
    # a group's output slot is its 'out' tensor as it lies in the image, which the host's
    # read-back (an unpack node of a host kernel) reads: it cannot shrink with its reader
    "accelerator output slot shrunk with its host reader": (
        _host_arg(LAST_CPU, 0, [1, 4, 1, 1], [3]), "which symbol 'out'"),
    "host output grown with its slot and output spec": (
        _host_arg(LAST_CPU, 1, [1, 1 << 16], [4], "outputs"), RECORDED),
    "host kernel argument renamed": (_set([*ARG, "name"], "other"), RECORDED),
    "host kernel code records no shapes": (_strip_signature, "records no argument shapes"),
}  # fmt: skip


def _mutated(path: Path, mutate: Callable[[Manifest, Members], None], out: Path) -> Path:
    manifest, members = read_artifact(path)
    mutate(manifest, members)
    write_artifact(out, manifest, members)
    return out


def test_every_named_mutation_is_refused_naming_its_field(artifact, tmp_path):
    path, _ = artifact
    paths = [_mutated(path, mutate, tmp_path / f"case{k}.vtac")
             for k, (mutate, _) in enumerate(CASES.values())]  # fmt: skip
    verdicts = _run_cases(artifact, paths)
    wrong = [(name, v) for (name, (_, want)), v in zip(CASES.items(), verdicts, strict=True)
             if not (v.startswith("refused: ") and want in v)]  # fmt: skip
    assert not wrong, "\n".join(f"{n}: {v}" for n, v in wrong)


@pytest.mark.parametrize(("flags", "method"), [(1, None), (0, 99)], ids=["encrypted", "method"])
def test_archive_members_flagged_encrypted_or_of_unknown_compression_are_refused(
    artifact, tmp_path, flags, method
):
    """The artifact's members, and a program member's own arrays, flagged as zipfile cannot
    read them (RuntimeError, NotImplementedError there): refused naming the member."""
    from runtime.errors import ArtifactError
    from runtime.session import InferenceSession

    path, _ = artifact
    whole = tmp_path / "whole.vtac"
    whole.write_bytes(zip_with_flags(path.read_bytes(), flags, method))
    with pytest.raises(ArtifactError, match="manifest.json cannot be read"):
        InferenceSession(whole)
    inner = _mutated(path, _member(_program, lambda b: zip_with_flags(b, flags, method)),
                     tmp_path / "inner.vtac")  # fmt: skip
    with pytest.raises(ArtifactError, match="member programs/.*not a program file"):
        InferenceSession(inner)


def test_no_op_mutations_run_as_the_original(artifact, tmp_path):
    """What the run does not read (the quantization table, the static figures, the knobs, a
    name) may change freely: the outputs stay the same."""
    path, _ = artifact
    no_ops = [
        _member(lambda m: m["quantization"], lambda b: b"[]"),
        _set(["steps", VTA, "knobs"], "tile_b=1"),
        _set(["steps", VTA, "record", "roofline_cycles"], 1.5),
        _set(["name"], "renamed"),
        _set(["compile_seconds"], 0),
        _set(["arena_naive_bytes"], 0),
    ]
    paths = [_mutated(path, m, tmp_path / f"noop{k}.vtac") for k, m in enumerate(no_ops)]
    assert _run_cases(artifact, paths) == ["same"] * len(no_ops)


_INTS = st.one_of(st.integers(-(1 << 40), 1 << 40), st.integers(-8, 64),
                  st.sampled_from([0, -1, 1 << 31, (1 << 63) - 1]))  # fmt: skip
_DTYPES = st.sampled_from(["int8", "int32", "float32", "uint8", "object", "int64"])
_VALUES = st.one_of(_INTS, st.none(), st.booleans(), st.floats(allow_nan=True),
                    st.text(max_size=8), st.lists(st.integers(-4, 64), max_size=6),
                    _DTYPES)  # fmt: skip


def _leaves(node: object, path: tuple = ()) -> list[tuple]:
    """Every path to a scalar or a list of scalars in the manifest (the checksums aside)."""
    if isinstance(node, dict):
        return [p for k, v in node.items() if k != "checksums"
                for p in _leaves(v, (*path, k))]  # fmt: skip
    if isinstance(node, list) and any(isinstance(v, (dict, list)) for v in node):
        return [p for k, v in enumerate(node) for p in _leaves(v, (*path, k))]
    return [path]


_HEALTH = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]


#: mutated artifacts per example: one child process runs them all (its start, imports and the
#: original's run cost more than a case)
BATCH = 4


def _random_case(path: Path, data: st.DataObject, k: int) -> tuple[Manifest, Members]:
    manifest, members = read_artifact(path)
    dram = np.load(io.BytesIO(members["dram.npy"])).copy()
    # the instruction ranges, read before a field mutation may break them
    ranges = [(s["insn_base"], s["insn_base"] + s["insn_count"] * INSN_BYTES)
              for s in manifest["steps"] if s["kind"] == "vta"]  # fmt: skip
    leaves = _leaves(manifest)
    for _ in range(data.draw(st.integers(0, 3), label=f"case {k}: fields")):
        *parent, key = data.draw(st.sampled_from(leaves), label=f"case {k}: field")
        node = manifest
        for p in parent:
            node = node[p]
        node[key] = data.draw(_VALUES, label=f"case {k}: {'.'.join(map(str, (*parent, key)))}")
    lo, hi = data.draw(st.sampled_from([(0, dram.size), *ranges]), label=f"case {k}: range")
    where = data.draw(st.lists(st.integers(lo, hi - 1), max_size=16), label=f"case {k}: bytes")
    if where:
        dram[where] = data.draw(st.integers(0, 255), label=f"case {k}: byte")
        members["dram.npy"] = npy_bytes(dram)
    return manifest, members


@settings(max_examples=8, deadline=None, derandomize=True, suppress_health_check=_HEALTH)
@given(data=st.data())
def test_random_mutations_are_run_or_refused_in_one_line(artifact, tmp_path_factory, data):
    """Random fields of the manifest set to random values, and random bytes of the DRAM image
    (anywhere, or in a group's instructions) changed: each case runs (its outputs may differ
    where a weight or an instruction changed) or is refused in one line; never a crash, a hang,
    a traceback."""
    path, _ = artifact
    d = tmp_path_factory.mktemp("random")
    paths = []
    for k in range(BATCH):
        manifest, members = _random_case(path, data, k)
        write_artifact(d / f"case{k}.vtac", manifest, members)
        paths.append(d / f"case{k}.vtac")
    verdicts = _run_cases(artifact, paths, timeout=300)
    wrong = [f"case {k}: {v}" for k, v in enumerate(verdicts)
             if not (v in ("same", "different") or v.startswith("refused: "))]  # fmt: skip
    assert not wrong, "\n".join(wrong)
