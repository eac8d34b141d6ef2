"""The executor and the artifact file, on a hand-built two-kernel program (no graph compiler)."""

import json
import os
import pickle
import zipfile

import numpy as np
import pytest

from compiler import te
from compiler.build import build
from compiler.model.program import (
    KernelArg,
    KernelSpec,
    MemoryStats,
    Placement,
    Program,
    TensorSpec,
)
from compiler.schedule import create_schedule
from runtime.artifact import (
    ARTIFACT_KINDS,
    MANIFEST,
    RETIRED_VERSIONS,
    check_signatures,
    load_artifact,
    save_artifact,
)
from runtime.errors import ArtifactError, SessionError
from runtime.executor import Executor


def _kernel(name, fn, tensors, ops):
    args = tuple(KernelArg(a.name, a.shape, a.dtype, a.is_output) for a in fn.args)
    return KernelSpec(name, ops, "cpu", fn.name, args, tensors, fn.llvm_ir)


@pytest.fixture(scope="module")
def program():
    """y = relu(x * w) + w, through an arena tensor t: two kernels, one constant."""
    X = te.placeholder((2, 8), "float32", name="X")
    W = te.placeholder((2, 8), "float32", name="W")
    T = te.compute((2, 8), lambda i, j: te.max(X[i, j] * W[i, j], 0.0), name="T")
    mul = build(create_schedule(T), [X, W, T], name="mul_relu")
    A = te.placeholder((16,), "float32", name="A")
    B = te.placeholder((16,), "float32", name="B")
    C = te.compute((16,), lambda i: A[i] + B[i], name="C")
    add = build(create_schedule(C), [A, B, C], name="add")
    w = np.linspace(-1, 1, 16, dtype=np.float32).reshape(2, 8)
    places = {
        "x": Placement("input", "x", 0, (2, 8), "float32"),
        "w": Placement("constant", "w", 0, (2, 8), "float32"),
        "t": Placement("arena", "t", 64, (2, 8), "float32"),
        "y": Placement("output", "y", 0, (2, 8), "float32"),
    }
    return Program(
        name="tiny",
        target="cpu",
        num_threads=1,
        inputs=(TensorSpec("x", (2, 8), "float32"),),
        outputs=(TensorSpec("y", (2, 8), "float32"),),
        placements=places,
        kernels=(
            _kernel("mul", mul, ("x", "w", "t"), ("multiply", "relu")),
            # the add kernel sees flat 16-element views of the 2x8 tensors
            _kernel("add", add, ("t", "w", "y"), ("add",)),
        ),
        constants={"w": w},
        arena_bytes=64 + 64,
        memory=MemoryStats(128, 192),
        graph_text="graph tiny\n",
        output_tensors={"y": "y"},
    )


def _expected(x, w):
    return np.maximum(x * w, 0) + w


def test_executor_runs_kernels_in_order_over_the_arena(program):
    x = np.arange(16, dtype=np.float32).reshape(2, 8) - 8
    ex = Executor(program)
    outs, profile = ex.run({"x": x})
    np.testing.assert_array_equal(outs["y"], _expected(x, program.constants["w"]))
    assert [(g.name, g.ops, g.target) for g in profile.groups] == [
        ("mul", ("multiply", "relu"), "cpu"),
        ("add", ("add",), "cpu"),
    ]
    assert all(g.time_us is not None and g.time_us >= 0 for g in profile.groups)
    # a second run returns a fresh output array and leaves the first one alone
    outs2, _ = ex.run({"x": x * 2})
    assert outs2["y"] is not outs["y"]
    np.testing.assert_array_equal(outs["y"], _expected(x, program.constants["w"]))


def test_the_native_driver_runs_as_the_python_loop(program):
    """A cpu program's kernels are called by one native driver (``runtime.cpu_driver``); a run
    with a progress callback calls them one by one from Python: the same outputs and records,
    and the driver's profile is made when it is read."""
    x = np.arange(16, dtype=np.float32).reshape(2, 8) - 3
    ex = Executor(program)
    assert ex._driver is not None
    calls = []
    native, p_native = ex.run({"x": x})
    looped, p_looped = ex.run({"x": x}, progress=lambda: calls.append(1))
    assert len(calls) == len(program.kernels)
    np.testing.assert_array_equal(native["y"], looped["y"])
    np.testing.assert_array_equal(native["y"], _expected(x, program.constants["w"]))
    assert p_native._groups is None  # not built yet
    assert [(g.name, g.ops) for g in p_native.groups] == [(g.name, g.ops) for g in p_looped.groups]
    assert all(g.time_us > 0 for g in p_native.groups)
    # pickled, a deferred profile carries its records
    assert pickle.loads(pickle.dumps(ex.run({"x": x})[1])).groups[0].name == "mul"
    # an unread profile holds its own run's times, not the buffer the next run writes
    _, unread = ex.run({"x": x})
    ex._times[:] = 0
    assert all(g.time_us > 0 for g in unread.groups)


def test_executor_refuses_a_placement_outside_the_arena(program):
    bad = dict(program.placements, t=Placement("arena", "t", 100, (2, 8), "float32"))
    with pytest.raises(SessionError, match="tensor t: bytes \\[100, 164\\) lie outside"):
        Executor(Program(**{**program.__dict__, "placements": bad}))


def test_executor_refuses_a_tensor_of_the_wrong_size(program):
    bad = dict(program.placements, t=Placement("arena", "t", 0, (2, 4), "float32"))
    with pytest.raises(SessionError, match="group mul: argument T is float32"):
        Executor(Program(**{**program.__dict__, "placements": bad}))


def test_artifact_round_trip_runs_the_same(program, tmp_path):
    path = tmp_path / "tiny.vtac"
    save_artifact(program, path)
    loaded = load_artifact(path)
    assert loaded.inputs == program.inputs and loaded.outputs == program.outputs
    assert loaded.placements == program.placements and loaded.memory == program.memory
    assert [k.code for k in loaded.kernels] == [k.code for k in program.kernels]
    x = np.ones((2, 8), np.float32)
    a, _ = Executor(loaded).run({"x": x})
    np.testing.assert_array_equal(a["y"], _expected(x, program.constants["w"]))
    assert load_artifact(path.read_bytes()).graph_text == "graph tiny\n"


def test_artifact_write_is_atomic_and_honours_umask(program, tmp_path):
    old = os.umask(0o027)
    try:
        save_artifact(program, tmp_path / "a.vtac")
    finally:
        os.umask(old)
    assert (tmp_path / "a.vtac").stat().st_mode & 0o777 == 0o640
    assert os.listdir(tmp_path) == ["a.vtac"]  # no temporary file left behind


def _rewrite(src, dst, change):
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for name in zin.namelist():
            data = change(name, zin.read(name))
            if data is not None:
                zout.writestr(name, data)


def test_artifact_faults_are_named(program, tmp_path):
    good = tmp_path / "good.vtac"
    save_artifact(program, good)
    data = good.read_bytes()

    (tmp_path / "trunc.vtac").write_bytes(data[: len(data) // 2])
    with pytest.raises(ArtifactError, match="not a readable zip archive"):
        load_artifact(tmp_path / "trunc.vtac")

    def other_version(name, b):
        if name != MANIFEST:
            return b
        m = json.loads(b)
        m["version"] = unknown
        return json.dumps(m).encode()

    unknown = max(ARTIFACT_KINDS) + 1
    _rewrite(good, tmp_path / "v.vtac", other_version)
    with pytest.raises(ArtifactError, match=f"format version {unknown}, but this vtac"):
        load_artifact(tmp_path / "v.vtac")

    def flip_constant(name, b):
        return b[:-1] + bytes([b[-1] ^ 1]) if name.startswith("constants/") else b

    _rewrite(good, tmp_path / "c.vtac", flip_constant)
    with pytest.raises(ArtifactError, match="member constants/0.npy is corrupted"):
        load_artifact(tmp_path / "c.vtac")

    _rewrite(good, tmp_path / "k.vtac", lambda n, b: None if n.startswith("kernels/") else b)
    with pytest.raises(ArtifactError, match="member kernels/.*\\.ll is missing"):
        load_artifact(tmp_path / "k.vtac")

    _rewrite(good, tmp_path / "m.vtac", lambda n, b: None if n == MANIFEST else b)
    with pytest.raises(ArtifactError, match="not a vtac artifact"):
        load_artifact(tmp_path / "m.vtac")

    with pytest.raises(ArtifactError, match="cannot open"):
        load_artifact(tmp_path / "missing.vtac")


def _edit_manifest(src, dst, edit):
    def change(name, b):
        if name == MANIFEST:
            m = json.loads(b)
            edit(m)
            return json.dumps(m).encode()
        return b

    _rewrite(src, dst, change)


def test_a_retired_format_version_is_refused_saying_to_compile_again(program, tmp_path):
    good = tmp_path / "good.vtac"
    save_artifact(program, good)
    for old in RETIRED_VERSIONS:
        _edit_manifest(good, tmp_path / "old.vtac", lambda m, old=old: m.update(version=old))
        with pytest.raises(ArtifactError, match=f"format version {old} .*record no argument "
                           "shapes.*compile the model again"):  # fmt: skip
            load_artifact(tmp_path / "old.vtac")


def test_arguments_edited_with_their_placements_are_refused_against_the_code(program, tmp_path):
    """The manifest's copy of a kernel's arguments, changed together with the placements, passes
    every check of the manifest alone; the record in the kernel's code refutes it."""
    good = tmp_path / "good.vtac"
    save_artifact(program, good)

    def shrink(m):
        m["placements"]["t"]["shape"] = [1, 8]
        m["kernels"][0]["args"][2]["shape"] = [1, 8]
        m["kernels"][1]["args"][0]["shape"] = [8]

    _edit_manifest(good, tmp_path / "shrunk.vtac", shrink)
    with pytest.raises(
        ArtifactError,
        match=r"kernel 'mul': argument 'T' is float32\[1, 8\] \(written\) in the manifest, the "
        r"compiled code records 'T' float32\[2, 8\] \(64 bytes, written\)",
    ):
        load_artifact(tmp_path / "shrunk.vtac")


def test_a_buffer_unlike_the_record_is_refused_naming_both(program):
    """What check_signatures refuses itself, without the manifest checks before it: a bound
    buffer of other bytes than the kernel's record."""
    small = dict(program.placements, t=Placement("arena", "t", 64, (2, 4), "float32"))
    with pytest.raises(
        ArtifactError,
        match=r"m.vtac: kernel 'mul': argument 'T' was compiled for float32\[2, 8\] \(64 bytes, "
        r"written\), tensor 't' is arena float32\[2, 4\] \(32 bytes\) at bytes 64..128 of the "
        r"128-byte arena",
    ):
        check_signatures(Program(**{**program.__dict__, "placements": small}), "m.vtac")
    late = dict(program.placements, t=Placement("arena", "t", 128, (2, 8), "float32"))
    with pytest.raises(ArtifactError, match=r"at bytes 128..192 of the 128-byte arena"):
        check_signatures(Program(**{**program.__dict__, "placements": late}), "m.vtac")
    w = {"w": program.constants["w"][:1]}
    with pytest.raises(ArtifactError, match=r"constant 'w' \(float32, 32 bytes\)"):
        check_signatures(Program(**{**program.__dict__, "constants": w}), "m.vtac")
