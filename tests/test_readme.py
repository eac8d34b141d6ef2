"""The README's examples run as written, from a scratch folder.

The Python blocks run as they are. The `vtac` blocks run line by line, in order, in one scratch
folder (a later line reads what an earlier one wrote), with small stand-ins for the files a
user brings: ``model.onnx`` (a small CNN with one input ``x`` of shape Nx3x32x32, its batch
symbolic), ``cat.jpg``, ``x.npy``, ``feeds.npz`` and ``images/``. A line is what a shell would
run: ``vtac`` and its arguments, then an optional ``# comment``; no shell syntax.
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import ROOT

README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"```python\n(.*?)```", README, re.S)

#: Files the README's commands name as the user's own; the fixture writes a stand-in of each.
USER_FILES = ("model.onnx", "cat.jpg", "x.npy", "feeds.npz", "images/")


def _commands(text: str) -> list[str]:
    """Every `vtac` line of the plain (untagged) fenced blocks, continuation lines joined."""
    lines: list[str] = []
    for block in re.findall(r"```\n(.*?)```", text, re.S):
        pending = ""
        for raw in block.splitlines():
            line = pending + raw.strip()
            if line.endswith("\\"):
                pending = line[:-1] + " "
                continue
            pending = ""
            if line.startswith("vtac "):
                lines.append(line)
    return lines


COMMANDS = _commands(README)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_python_example_runs(index, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exec(compile(BLOCKS[index], f"README.md python block {index}", "exec"), {})  # noqa: S102


def test_the_readme_has_python_examples():
    assert len(BLOCKS) >= 2


def _write_model(path: Path) -> None:
    """A small CNN: conv-relu, strided conv-relu, global pooling, dense; input ``x`` Nx3x32x32."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)

    def weight(name: str, *shape: int) -> onnx.TensorProto:
        scale = (2.0 / float(np.prod(shape[1:]))) ** 0.5
        return numpy_helper.from_array((rng.normal(size=shape) * scale).astype(np.float32), name)

    def zeros(name: str, n: int) -> onnx.TensorProto:
        return numpy_helper.from_array(np.zeros(n, np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "c1.w", "c1.b"], ["a"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["a"], ["b"]),
        helper.make_node("Conv", ["b", "c2.w", "c2.b"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c"], ["d"]),
        helper.make_node("GlobalAveragePool", ["d"], ["e"]),
        helper.make_node("Flatten", ["e"], ["f"]),
        helper.make_node("Gemm", ["f", "fc.w", "fc.b"], ["y"], transB=1),
    ]
    inits = [
        weight("c1.w", 16, 3, 3, 3),
        zeros("c1.b", 16),
        weight("c2.w", 16, 16, 3, 3),
        zeros("c2.b", 16),
        weight("fc.w", 10, 16),
        zeros("fc.b", 10),
    ]
    graph = helper.make_graph(
        nodes,
        "small_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 32, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    onnx.checker.check_model(model)
    onnx.save(model, path)


def _write_jpeg(path: Path, seed: int) -> None:
    from PIL import Image

    pixels = np.random.default_rng(seed).integers(0, 256, size=(40, 48, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(path, "JPEG")


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """The folder every command runs in, holding the user's files' stand-ins and its own
    compile cache (so that `vtac cache clear` empties nothing but this folder's)."""
    root = tmp_path_factory.mktemp("readme")
    _write_model(root / "model.onnx")
    _write_jpeg(root / "cat.jpg", 1)
    (root / "images").mkdir()
    for i in range(3):
        _write_jpeg(root / "images" / f"photo{i}.jpg", 10 + i)
    rng = np.random.default_rng(2)
    np.save(root / "x.npy", rng.normal(size=(1, 3, 32, 32)).astype(np.float32))
    np.savez(root / "feeds.npz", x=rng.normal(size=(1, 3, 32, 32)).astype(np.float32))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VTAC_CACHE_DIR", str(root / ".vtac-cache"))
        yield root


def _simulator_missing(argv: list[str]) -> str | None:
    """Why ``argv`` cannot run here (the HDL simulator it needs is not installed), or None."""
    on_rtl = argv[0] == "rtl" or any(
        a == "--device" and b == "rtl" for a, b in zip(argv, argv[1:], strict=False)
    )
    if not on_rtl:
        return None
    tool = "verilator" if "verilator" in argv else "iverilog"
    return None if shutil.which(tool) else f"{tool} is not installed"


@pytest.mark.parametrize("index", range(len(COMMANDS)), ids=lambda i: f"line{i}")
def test_command_runs_as_written(index, scratch, monkeypatch, capsys):
    from runtime.cli import main

    line = COMMANDS[index]
    argv = shlex.split(line, comments=True)
    assert argv[0] == "vtac", line
    argv = argv[1:]
    shell = [a for a in argv if a in {">", ">>", "<", "|", "&&", "||", ";", "&"}]
    assert not shell, f"README line {line!r}: shell syntax {shell} does not run here"
    reason = _simulator_missing(argv)
    if reason:
        pytest.skip(reason)
    monkeypatch.chdir(scratch)
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 0, f"`{line}` exited {code}: {err.strip()[-2000:]}"


def test_the_readme_covers_every_subcommand():
    """Each subcommand appears on a line that runs, and the user's files are named plainly."""
    from runtime.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    run = {shlex.split(c, comments=True)[1] for c in COMMANDS}
    assert set(sub.choices) <= run, f"no README line runs {sorted(set(sub.choices) - run)}"
    words = {w.rstrip("/") for c in COMMANDS for w in shlex.split(c, comments=True)}
    for name in USER_FILES:
        assert name.rstrip("/") in words, f"no README line uses {name}"
