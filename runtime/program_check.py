"""Validation of a :class:`~compiler.model.program.Program` before any of its kernels runs.

A compiled artifact carries native code and a memory plan, and the kernels trust the plan: they
read and write the arena at the offsets it gives, with the shapes they were compiled for. An
artifact must come from a trusted source, as a shared library must (``docs/runtime.md``), but a
hand-edited or corrupted manifest whose checksums were recomputed must still not make a kernel
touch memory outside its buffers. :func:`check_program` refuses, naming the tensor or kernel and
the field, every manifest that would:

* a dtype that is not one of the numeric dtypes the compiler emits (never ``object``);
* a negative or overflowing dimension, or a tensor larger than the limit;
* an arena region that starts below 0, is not aligned, or ends past the arena;
* an input, output or constant placement whose dtype or element count differs from the spec or
  the array it stands for (a shrunk constant, a float64 constant, an input of another size);
* a kernel argument that reads an arena tensor no earlier kernel wrote (an input placed in
  the arena: its feed would reach no kernel);
* a kernel argument whose tensor is unknown, or whose placement's dtype or element count differs
  from what the kernel was compiled for; a written argument that is an input or a constant;
* within one kernel, a written region of the arena that overlaps another argument's region;
  across kernels, two arena tensors that share a byte while both are in use (from the first
  kernel that names a tensor to the last).

Example:
    >>> from compiler.model.program import MemoryStats, Placement, Program, TensorSpec
    >>> prog = Program("m", "cpu", 1, (TensorSpec("x", (2,), "float32"),), (),
    ...                {"x": Placement("input", "x", 0, (2,), "float32")}, (), {}, 0,
    ...                MemoryStats(0, 0))
    >>> check_program(prog, "artifact m.vtac")
    >>> bad = Program("m", "cpu", 1, (TensorSpec("x", (2,), "object"),), (), {}, (), {}, 0,
    ...               MemoryStats(0, 0))
    >>> check_program(bad, "artifact m.vtac")
    Traceback (most recent call last):
    ...
    runtime.errors.ArtifactError: artifact m.vtac: input 'x': dtype 'object' is not one of ...
"""

from __future__ import annotations

from typing import Any

import numpy as np

from compiler.graph.memory import shared_bytes
from compiler.model.program import ONNX_TYPE_NAMES, PLACEMENT_KINDS, Program
from runtime.errors import ArtifactError

#: The largest tensor (and arena) an artifact may declare: 16 GiB.
MAX_TENSOR_BYTES = 1 << 34
#: Byte alignment of every arena offset (the memory planner's, compiler/graph/memory.py).
ARENA_ALIGNMENT = 64


def _elements(shape: Any, what: str, where: str) -> int:
    if not isinstance(shape, tuple) or not all(isinstance(d, int) for d in shape):
        raise ArtifactError(f"{where}: {what}: shape {shape!r} is not a tuple of integers")
    if any(d < 0 for d in shape):
        raise ArtifactError(f"{where}: {what}: shape {list(shape)} has a negative dimension")
    n = 1
    for d in shape:
        n *= d
        if n > MAX_TENSOR_BYTES:
            raise ArtifactError(f"{where}: {what}: shape {list(shape)} is too large")
    return n


def _dtype(name: Any, what: str, where: str) -> np.dtype:
    if name not in ONNX_TYPE_NAMES:
        raise ArtifactError(
            f"{where}: {what}: dtype {name!r} is not one of {', '.join(ONNX_TYPE_NAMES)}"
        )
    return np.dtype(name)


def check_program(prog: Program, where: str) -> None:
    """Refuse ``prog`` (see the module docstring) with an :class:`ArtifactError` naming the
    fault; ``where`` names the artifact."""
    arena = prog.arena_bytes
    if not isinstance(arena, int) or not 0 <= arena <= MAX_TENSOR_BYTES:
        raise ArtifactError(f"{where}: arena_bytes {arena!r} is outside 0..{MAX_TENSOR_BYTES}")
    specs = {}
    for kind, group in (("input", prog.inputs), ("output", prog.outputs)):
        for s in group:
            key = (kind, s.name)
            if key in specs:
                raise ArtifactError(f"{where}: {kind} {s.name!r} is declared twice")
            specs[key] = (_elements(s.shape, f"{kind} {s.name!r}", where),
                          _dtype(s.dtype, f"{kind} {s.name!r}", where))  # fmt: skip
    regions: dict[str, tuple[int, int]] = {}
    for tensor, p in prog.placements.items():
        what = f"tensor {tensor!r}"
        if p.kind not in PLACEMENT_KINDS:
            raise ArtifactError(f"{where}: {what}: placement kind {p.kind!r} is unknown")
        n = _elements(p.shape, what, where)
        dt = _dtype(p.dtype, what, where)
        nbytes = n * dt.itemsize
        if p.kind == "arena":
            if not isinstance(p.offset, int) or p.offset < 0:
                raise ArtifactError(f"{where}: {what}: arena offset {p.offset!r} is negative")
            if p.offset % ARENA_ALIGNMENT:
                raise ArtifactError(
                    f"{where}: {what}: arena offset {p.offset} is not a multiple of "
                    f"{ARENA_ALIGNMENT}"
                )
            if p.offset + nbytes > arena:
                raise ArtifactError(
                    f"{where}: {what}: arena bytes {p.offset}..{p.offset + nbytes} end past "
                    f"the arena ({arena} bytes)"
                )
            regions[tensor] = (p.offset, p.offset + nbytes)
        elif p.kind == "constant":
            if p.key not in prog.constants:
                raise ArtifactError(f"{where}: {what}: constant {p.key!r} is not in the artifact")
            arr = prog.constants[p.key]
            if arr.dtype != dt or arr.size != n:
                raise ArtifactError(
                    f"{where}: {what}: constant {p.key!r} is {arr.dtype}{list(arr.shape)}, the "
                    f"placement needs {dt}[{n} elements]"
                )
        else:
            spec = specs.get((p.kind, p.key))
            if spec is None:
                raise ArtifactError(f"{where}: {what}: no model {p.kind} is named {p.key!r}")
            if spec != (n, dt):
                raise ArtifactError(
                    f"{where}: {what}: {n} {dt} elements, but {p.kind} {p.key!r} has "
                    f"{spec[0]} {spec[1]} elements"
                )
    for name, tensor in prog.output_tensors.items():
        if ("output", name) not in specs or tensor not in prog.placements:
            raise ArtifactError(f"{where}: output {name!r} maps to unknown tensor {tensor!r}")
    for s in prog.outputs:
        if s.name not in prog.output_tensors:
            raise ArtifactError(f"{where}: output {s.name!r} has no tensor")
    _check_lifetimes(prog, regions, where)
    written: set[str] = set()
    for k in prog.kernels:
        _check_kernel(prog, k, regions, where)
        for tensor, arg in zip(k.tensors, k.args, strict=True):
            # an arena tensor holds what an earlier kernel wrote there, nothing else (a feed
            # goes only to a placement of kind input): read before, it is garbage
            if not arg.is_output and tensor in regions and tensor not in written:
                raise ArtifactError(
                    f"{where}: kernel {k.name!r}: argument {arg.name!r} reads arena tensor "
                    f"{tensor!r} before any kernel writes it"
                )
        written.update(t for t, a in zip(k.tensors, k.args, strict=True) if a.is_output)


def _check_lifetimes(prog: Program, regions: dict[str, tuple[int, int]], where: str) -> None:
    """No two arena tensors in use at one kernel share a byte (a tensor is in use from the
    first kernel that names it to the last)."""
    use: dict[str, tuple[int, int]] = {}
    for i, k in enumerate(prog.kernels):
        for tensor in k.tensors:
            if tensor in regions:
                use[tensor] = (use.get(tensor, (i, i))[0], i)
    held = sorted(use)
    clash = shared_bytes(
        [(regions[t][0], regions[t][1] - regions[t][0], use[t][0], use[t][1]) for t in held]
    )
    if clash is not None:
        a, b, kernel = (held[clash[0]], held[clash[1]], prog.kernels[clash[2]].name)
        raise ArtifactError(
            f"{where}: arena tensors {a!r} ({regions[a][0]}..{regions[a][1]}) and {b!r} "
            f"({regions[b][0]}..{regions[b][1]}) share bytes while both are in use, at kernel "
            f"{kernel!r}"
        )


def _check_kernel(prog: Program, k: Any, regions: dict[str, tuple[int, int]], where: str) -> None:
    what = f"kernel {k.name!r}"
    if len(k.tensors) != len(k.args):
        raise ArtifactError(
            f"{where}: {what}: {len(k.tensors)} tensors for {len(k.args)} compiled arguments"
        )
    written: list[tuple[str, tuple[int, int]]] = []
    for tensor, arg in zip(k.tensors, k.args, strict=True):
        p = prog.placements.get(tensor)
        if p is None:
            raise ArtifactError(f"{where}: {what}: argument {arg.name!r} names unknown tensor "
                                f"{tensor!r}")  # fmt: skip
        n = _elements(arg.shape, f"{what} argument {arg.name!r}", where)
        dt = _dtype(arg.dtype, f"{what} argument {arg.name!r}", where)
        if np.dtype(p.dtype) != dt or int(np.prod(p.shape, dtype=np.int64)) != n:
            raise ArtifactError(
                f"{where}: {what}: argument {arg.name!r} was compiled for {dt}{list(arg.shape)}, "
                f"tensor {tensor!r} is {p.dtype}{list(p.shape)}"
            )
        if arg.is_output:
            if p.kind in ("input", "constant"):
                raise ArtifactError(
                    f"{where}: {what}: argument {arg.name!r} writes {p.kind} {p.key!r}"
                )
            if tensor in regions:
                written.append((tensor, regions[tensor]))
    for tensor, (lo, hi) in written:
        for other in k.tensors:
            if other == tensor or other not in regions:
                continue
            olo, ohi = regions[other]
            if lo < ohi and olo < hi:
                raise ArtifactError(
                    f"{where}: {what}: written tensor {tensor!r} (arena {lo}..{hi}) overlaps "
                    f"argument tensor {other!r} (arena {olo}..{ohi})"
                )


__all__ = ["ARENA_ALIGNMENT", "MAX_TENSOR_BYTES", "check_program"]
