"""Running the examples of a Markdown page as written: its `vtac` lines and its Python blocks.

A page's plain (untagged) fenced blocks hold shell lines; each ``vtac`` line among them (with
its ``\\`` continuations joined) runs through :func:`runtime.cli.main` in a scratch folder that
holds small stand-ins for the files a user brings (:func:`write_user_files`). A line is what a
shell would run: ``vtac`` and its arguments, then an optional ``# comment``; no shell syntax.
``python`` blocks run as they are. tests/test_readme.py runs the README this way, and
tests/test_guides.py every page of docs/guide/.
"""

from __future__ import annotations

import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

#: Files the examples name as the user's own; :func:`write_user_files` writes a stand-in of each:
#: ``model.onnx`` (a small CNN, one input ``x`` of shape Nx3x32x32, its batch symbolic),
#: ``cat.jpg``, ``x.npy`` and ``feeds.npz`` (one 1x3x32x32 input) and ``images/`` (3 images).
USER_FILES = ("model.onnx", "cat.jpg", "x.npy", "feeds.npz", "images/")

#: Tokens a shell would interpret; a line holding one does not run as written through `main`.
SHELL_TOKENS = frozenset({">", ">>", "<", "|", "&&", "||", ";", "&"})


@dataclass(frozen=True)
class Step:
    """One example of a page, in the page's order: a ``vtac`` line or a Python block."""

    kind: str  # "vtac" or "python"
    text: str
    line: int  # where it starts in the page (1-based), for failure messages

    def label(self) -> str:
        return f"{self.kind}@{self.line}"


def steps(text: str) -> list[Step]:
    """Every ``vtac`` line of the plain fenced blocks and every ``python`` block, in order."""
    found: list[Step] = []
    for block in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.S | re.M):
        tag, body = block.group(1), block.group(2)
        first = text.count("\n", 0, block.start(2)) + 1
        if tag == "python":
            found.append(Step("python", body, first))
        elif tag == "":
            found += [Step("vtac", line, first + k) for k, line in _vtac_lines(body)]
    return found


def _vtac_lines(block: str) -> list[tuple[int, str]]:
    """The ``vtac`` lines of one shell block with their offset in it, continuations joined."""
    lines: list[tuple[int, str]] = []
    pending, start = "", 0
    for k, raw in enumerate(block.splitlines()):
        if not pending:
            start = k
        line = pending + raw.strip()
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        pending = ""
        if line.startswith("vtac "):
            lines.append((start, line))
    return lines


def commands(text: str) -> list[str]:
    """Every ``vtac`` line of the plain (untagged) fenced blocks, continuation lines joined."""
    return [s.text for s in steps(text) if s.kind == "vtac"]


def python_blocks(text: str) -> list[str]:
    """Every ``python`` fenced block."""
    return [s.text for s in steps(text) if s.kind == "python"]


def argv_of(line: str) -> list[str]:
    """The arguments after ``vtac`` of a line, its comment dropped; raises on shell syntax."""
    argv = shlex.split(line, comments=True)
    if not argv or argv[0] != "vtac":
        raise ValueError(f"{line!r} is not a vtac command")
    shell = [a for a in argv if a in SHELL_TOKENS]
    if shell:
        raise ValueError(f"{line!r}: shell syntax {shell} does not run here")
    return argv[1:]


def simulator_missing(argv: list[str]) -> str | None:
    """Why ``argv`` cannot run here (the HDL simulator it needs is not installed), or None."""
    on_rtl = argv[0] == "rtl" or any(
        a == "--device" and b == "rtl" for a, b in zip(argv, argv[1:], strict=False)
    )
    if not on_rtl:
        return None
    tool = "verilator" if "verilator" in argv else "iverilog"
    return None if shutil.which(tool) else f"{tool} is not installed"


def write_user_files(root: Path) -> None:
    """Stand-ins of :data:`USER_FILES` in ``root``."""
    write_model(root / "model.onnx")
    write_jpeg(root / "cat.jpg", 1)
    (root / "images").mkdir()
    for i in range(3):
        write_jpeg(root / "images" / f"photo{i}.jpg", 10 + i)
    rng = np.random.default_rng(2)
    np.save(root / "x.npy", rng.normal(size=(1, 3, 32, 32)).astype(np.float32))
    np.savez(root / "feeds.npz", x=rng.normal(size=(1, 3, 32, 32)).astype(np.float32))


def write_model(path: Path) -> None:
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


def write_jpeg(path: Path, seed: int) -> None:
    """A 48x40 RGB JPEG of seeded noise."""
    from PIL import Image

    pixels = np.random.default_rng(seed).integers(0, 256, size=(40, 48, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(path, "JPEG")
