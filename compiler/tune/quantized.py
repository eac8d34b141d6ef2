"""Tasks of quantized accelerator groups: a conv2d or dense group of a quantized network (the
packed GEMM, then its epilogue's ALU steps: bias, requantization, clip, a fused ``qadd``),
compiled through :func:`~compiler.topi.vta.qnn.compile_qconv2d` /
:func:`~compiler.topi.vta.qnn.compile_qdense` as a whole network compiles it.

What changes a group's cycles besides its shapes is the structure of its epilogue: how many ALU
steps run per accumulator entry, which of them read a per-channel tile (a LOAD and an acc
buffer entry per channel block, and the tensor-tensor issue rate), an immediate, or the
residual. :func:`epilogue_structure` writes that structure as a canonical string without the
values (``ADD:t.bias;SHR:i;MAX:i;MIN:i``), which a task keeps; building a candidate compiles
the group with a :class:`StructureEpilogue` of the same steps, placeholder values and seeded
tiles, and checks its output against the heuristic schedule's on the same data (knobs change
the schedule, never the results).

Example:
    >>> from compiler.quantize.requant import AluStep
    >>> text = epilogue_structure([AluStep("ADD", tensor="bias"), AluStep("SHR", imm=9),
    ...                            AluStep("MUL", imm=3, dst="rhs"), AluStep("ADD", tensor="rhs")])
    >>> text
    'ADD:t.bias;SHR:i;MUL@rhs:i;ADD:r'
    >>> [str(s) for s in structure_steps(text)]
    ['ADD bias', 'SHR 2', 'MUL@rhs 3', 'ADD rhs']
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np

from compiler.errors import CompilerError
from compiler.quantize.requant import (
    COPY,
    AluStep,
    RequantParams,
    channel_tile_names,
    reads_residual,
)
from compiler.topi.vta.qnn import QAdd, QEpilogue

if TYPE_CHECKING:
    from .task import Task

#: The ALU operations an epilogue step may run.
OPS = ("ADD", "MUL", "MIN", "MAX", "SHR")
#: Placeholder immediates of a synthetic epilogue (the values never change the cycles; these
#: keep the output varied enough that a wrong schedule shows).
_IMM = {"ADD": 3, "MUL": 3, "MIN": 127, "MAX": -128, "SHR": 2}


def epilogue_structure(steps: Sequence[AluStep]) -> str:
    """The canonical structure of ALU ``steps``: per step its op (``@dst`` when it updates the
    other operand) and what it reads: ``i`` an immediate, ``r`` the residual, ``t.NAME`` the
    per-channel tile ``NAME``; values left out."""
    out = []
    for s in steps:
        head = f"{s.op}@{s.dst}" if s.dst else s.op
        what = "i" if s.tensor is None else ("r" if s.tensor == "rhs" else f"t.{s.tensor}")
        out.append("COPY@rhs:l" if s == COPY else f"{head}:{what}")
    return ";".join(out)


def structure_steps(text: str) -> list[AluStep]:
    """The steps of a structure string, with placeholder immediates; a malformed string is
    refused naming the step at fault."""
    steps = []
    for k, part in enumerate(text.split(";") if text else []):
        if part == "COPY@rhs:l":  # the second tile starts as a copy of the value so far
            steps.append(COPY)
            continue
        head, sep, what = part.partition(":")
        op, _, dst = head.partition("@")
        if not sep or op not in OPS or dst not in ("", "rhs"):
            raise CompilerError(
                f"epilogue structure {text!r}: step {k} {part!r} is not OP[@rhs]:i|r|t.NAME "
                f"with OP one of {OPS}, or COPY@rhs:l"
            )
        if what == "i":
            steps.append(AluStep(op, imm=_IMM[op], dst=dst or None))
        elif what == "r" and not dst:
            steps.append(AluStep(op, tensor="rhs"))
        elif what.startswith("t.") and len(what) > 2 and not dst:
            steps.append(AluStep(op, tensor=what[2:]))
        else:
            raise CompilerError(
                f"epilogue structure {text!r}: step {k} {part!r} reads {what!r}, not i, r or "
                "t.NAME (a step updating the other operand reads an immediate)"
            )
    return steps


def structure_digest(text: str) -> str:
    """A short digest of a structure string for task keys."""
    return hashlib.sha1(text.encode()).hexdigest()[:8]


@dataclass(frozen=True)
class StructureEpilogue(QEpilogue):
    """A :class:`~compiler.topi.vta.qnn.QEpilogue` that runs given ``fixed`` steps, its tiles
    seeded small integers (what a tuning candidate compiles: same steps, other values)."""

    fixed: tuple[AluStep, ...] = ()
    seed: int = 0

    def steps(self) -> list[AluStep]:
        return list(self.fixed)

    def tiles(self) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(self.seed)
        names = channel_tile_names(self.fixed)
        return {n: rng.integers(0, 8, self.channels).astype(np.int32) for n in names}


def synthetic_epilogue(structure: str, channels: int, seed: int = 0) -> StructureEpilogue:
    """A :class:`StructureEpilogue` of ``channels`` output channels for ``structure`` (with a
    fused ``qadd`` when a step reads the residual)."""
    steps = structure_steps(structure)
    ones = np.ones(channels, np.int32)
    zeros = np.zeros(channels, np.int32)
    params = RequantParams(ones, zeros, zeros, ones.astype(np.float64))
    add = QAdd(1, 1, 0, -128, 127) if reads_residual(steps) else None
    return StructureEpilogue(None, params, -128, 127, add, fixed=tuple(steps), seed=seed)


@dataclass
class BuiltGroup:
    """A quantized group's candidate with its inputs written, and what its output must be:
    the heuristic schedule's output on the same data. The compiler does not run programs, so
    it hands over that schedule's bound program (``reference``, compiled once per process and
    workload) and the measuring side sets ``expected`` from running it."""

    name: str
    program: Any
    config: Any
    knobs: Any
    macs: int
    reference: Any
    expected: np.ndarray | None = None

    def matches(self, out: np.ndarray) -> bool:
        if self.expected is None:
            raise CompilerError(f"{self.name}: the reference output has not been computed")
        return bool(np.array_equal(out, self.expected))

    def output_from(self, out: np.ndarray) -> np.ndarray:
        return np.asarray(out)


def compile_task_group(task: Task, knobs: Any | None, seed: int = 0) -> tuple[Any, dict]:
    """Compile ``task``'s group with ``knobs`` (None: the heuristic's) and seeded inputs: the
    :class:`~compiler.topi.vta.qnn.QLayer` and the packed input values to write."""
    from compiler.topi.vta.packing import pack_nchw, pack_rows
    from compiler.topi.vta.qnn import compile_qconv2d, compile_qdense

    cfg, s = task.config_obj, task.sizes
    rng = np.random.default_rng(seed)
    name = "group"
    if task.kind == "conv2d":
        out_c, in_c, (kh, kw) = s["out_c"], s["in_c"], task.kernel
        ep = synthetic_epilogue(task.epilogue, out_c, seed)
        w = rng.integers(-127, 128, (out_c, 1 if task.depthwise else in_c, kh, kw), dtype=np.int8)
        x = rng.integers(-128, 128, (s["batch"], in_c, s["h"], s["w"]), dtype=np.int8)
        layer = compile_qconv2d(
            name, cfg, w, ep, in_shape=x.shape, stride=task.strides,
            padding=task.pads, residual=task.residual, depthwise=task.depthwise,
            knobs=knobs,
        )  # fmt: skip
        writes = {"data": pack_nchw(x, cfg)}
        if task.residual:  # any int8 values of the packed output's shape
            writes["residual"] = rng.integers(-128, 128, layer.out_shape, dtype=np.int8)
    else:
        ep = synthetic_epilogue(task.epilogue, s["out_features"], seed)
        w = rng.integers(-127, 128, (s["out_features"], s["in_features"]), dtype=np.int8)
        x = rng.integers(-128, 128, (s["batch"], s["in_features"]), dtype=np.int8)
        layer = compile_qdense(name, cfg, w, ep, batch=s["batch"], residual=task.residual,
                               knobs=knobs)  # fmt: skip
        writes = {"data": pack_rows(x, cfg)}
        if task.residual:
            writes["residual"] = rng.integers(-128, 128, layer.out_shape, dtype=np.int8)
    return layer, writes


def _bind(layer: Any, writes: dict[str, np.ndarray]) -> Any:
    prog = layer.program.copy()
    for key, value in {**layer.params, **writes}.items():
        prog.write(key, value)
    return prog


@cache
def _reference(task: Task, seed: int) -> Any:
    """The heuristic schedule's program of ``task`` on seeded data (once per process)."""
    layer, writes = compile_task_group(task, None, seed)
    return _bind(layer, writes)


def build_group(task: Task, knobs: Any, seed: int = 0) -> BuiltGroup:
    """``task``'s group compiled with ``knobs``, its inputs written."""
    layer, writes = compile_task_group(task, knobs, seed)
    anonymous = _anonymous(task)
    return BuiltGroup(task.label(), _bind(layer, writes), task.config_obj, layer.knobs,
                      layer.macs, _reference(anonymous, seed))  # fmt: skip


def _anonymous(task: Task) -> Task:
    """``task`` without its name (the cache of expected outputs is by workload)."""
    from dataclasses import replace

    return replace(task, name="", weight=1)


def quantized_operator(task: Task) -> tuple[list[Any], Any]:
    """The tensor expressions (placeholders and output) of ``task``'s group, as
    ``compile_qconv2d`` / ``compile_qdense`` declare them (for the cost model's features)."""
    from compiler import te
    from compiler.topi.vta.qnn import epilogue_tensors, qconv2d_packed, qdense_packed

    cfg, s, p = task.config_obj, task.sizes, task._packed()
    b, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
    if task.kind == "conv2d":
        ep = synthetic_epilogue(task.epilogue, s["out_c"])
        cb = -(-s["in_c"] // bi)
        data = te.placeholder((p["nb"], cb, s["h"], s["w"], b, bi), "int8", name="data")
        kernel = te.placeholder((p["ocb"], p["icb"], *task.kernel, bo, bi), "int8",
                                name="kernel")  # fmt: skip
        tiles, _ = epilogue_tensors(ep, p["ocb"], b, bo, "group")
        oshape = (p["nb"], p["ocb"], p["oh"], p["ow"], b, bo)
        res = te.placeholder(oshape, "int8", name="residual") if task.residual else None
        out = qconv2d_packed(data, kernel, ep, tiles, task.strides, task.pads,
                             groups=cb if task.depthwise else 1, residual=res,
                             name="group")  # fmt: skip
        args = [data, kernel, *tiles.values(), *([res] if res is not None else []), out]
        return args, out
    ep = synthetic_epilogue(task.epilogue, s["out_features"])
    data = te.placeholder((p["nb"], p["kb"], b, bi), "int8", name="data")
    weight = te.placeholder((p["mb"], p["kb"], bo, bi), "int8", name="weight")
    tiles, _ = epilogue_tensors(ep, p["mb"], b, bo, "group")
    res = te.placeholder((p["nb"], p["mb"], b, bo), "int8", name="residual") if task.residual \
        else None  # fmt: skip
    out = qdense_packed(data, weight, ep, tiles, residual=res, name="group")
    return [data, weight, *tiles.values(), *([res] if res is not None else []), out], out


__all__ = [
    "BuiltGroup",
    "StructureEpilogue",
    "build_group",
    "compile_task_group",
    "epilogue_structure",
    "quantized_operator",
    "structure_digest",
    "structure_steps",
    "synthetic_epilogue",
]
