"""The accelerator network artifact (``vtac compile MODEL --target vta -o model.vtac``): a
compiled :class:`~compiler.model.program.Program` with accelerator groups
(:mod:`compiler.model.vta_program`) in the archive format of :mod:`runtime.artifact`, version 8
(``"kind": "vta"``), so the network runs again without quantizing, partitioning or compiling.

Members:

* ``manifest.json``: format, version and kind; the model's name, inputs and outputs; the
  accelerator config (as ``isa`` writes it); the slots, the program's tensors in order (name,
  shape and dtype, and offset in the host arena, -1 where it lies elsewhere: an input, a
  constant, an output, a group's ``out`` left in the image) and the arena's bytes; the steps,
  the kernels in order: per accelerator group where its relocated program lies in the DRAM
  image (instruction base and count, symbols, the pieces moved), what the host writes into it
  and its record's static figures; per host kernel its code (entry symbol, arguments) and
  slots; per concat or slice the DRAM plan does in place (``"kind": "in-place"``) its name,
  operator and reason, for the per-layer table; and the SHA-256 of every other member;
* ``dram.npy``: the network's initial DRAM image (every relocated program, weights and tiles;
  the activation region zeroed);
* ``programs/<k>.npz``: each accelerator group's own program in the ``isa`` program format
  (ISA.md §4), weights written, before relocation: ``vtac sim`` runs it on its own;
* ``kernels/<hash>.ll``: each host group's kernel as LLVM IR text, with the record of the
  arguments it was compiled for (:mod:`compiler.targets.cpu.signature`; the machine code comes
  from the object cache when the machine and LLVM are the same, else LLVM compiles it again);
* ``constants/<slot>.npy``: the constants the host groups read;
* ``quantization.json``: the scales of every quantize and dequantize and the parameters of
  every requantize and qadd of the quantized graph.

Loading checks more than the checksums: every member name the manifest gives, every slot's
shape and dtype (numeric dtypes only) against the arrays and kernel arguments that use it,
every symbol, write and instruction range inside the DRAM image, that every value a step
makes for a later one has its own bytes of the host arena while it is live, that each host
write's slot (a host group's packed result) is exactly its symbol's tensor, the program files
against the config and each group's symbols, that host kernels parse and that each one's
arguments are the ones its compiled code records (the kernel is built on that record, never on
the manifest's copy), and that every step reads only slots an earlier step (or the caller)
provides. A fault is refused in one line naming the member or step and the field.

Example:
    >>> import numpy as np
    >>> from compiler.graph import Constant, Graph, Node, TensorType, Var
    >>> from compiler.model.vta_program import plan_network
    >>> from runtime.vta_plan import VtaExecutor
    >>> from runtime.vta_target import compile_network
    >>> x = Var("x", TensorType((1, 3, 6, 6), "float32", "NCHW"))
    >>> w = Constant(np.ones((8, 3, 3, 3), np.float32), name="w")
    >>> g = Graph.from_outputs([x], [Node("conv2d", (x, w), {}, name="conv")])
    >>> feed = {"x": np.ones((1, 3, 6, 6), np.float32)}
    >>> program = plan_network(compile_network(g, calibration=feed))
    >>> again = load_vta_artifact(vta_artifact_bytes(program))
    >>> again.kernels == program.kernels and again.placements == program.placements
    True
    >>> VtaExecutor(again).run(feed).total_cycles == VtaExecutor(program).run(feed).total_cycles
    True
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import tempfile
import zipfile
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np

from compiler.model.program import (
    ONNX_TYPE_NAMES,
    AccelKernel,
    AccelModule,
    GroupFigures,
    HostKernel,
    HostNode,
    InPlaceCopy,
    KernelArg,
    KernelSpec,
    MemoryStats,
    Placement,
    Program,
    TensorSpec,
)
from compiler.model.vta_program import ReferenceKernel, check_host_arena, out_of, writes_of
from compiler.targets.vta.link import GroupImage, Segment
from isa import ConfigError, HwConfig, ProgramError
from isa.encoding import INSN_BYTES
from isa.program import Symbol, program_from_arrays
from runtime.artifact import (
    FORMAT_NAME,
    MANIFEST,
    VTA_FORMAT_VERSION,
    argument_mismatch,
    read_artifact,
    recorded_signature,
    write_members,
)
from runtime.errors import ArtifactError
from runtime.program_check import MAX_TENSOR_BYTES

KIND = "vta"
#: The static figures of an accelerator group's record that the manifest keeps.
RECORD_FIELDS = (
    "name", "ops", "rule", "macs", "ideal_cycles", "roofline_cycles", "alu_roofline_cycles",
    "compulsory_bytes",
)  # fmt: skip


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _npy(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.asarray(arr, order="C"), allow_pickle=False)
    return buf.getvalue()


def _program_file(prog: Any) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **prog.to_arrays())
    return buf.getvalue()


def vta_artifact_members(program: Program) -> dict[str, bytes]:
    """Every member of the archive of ``program`` (with accelerator groups), the manifest
    last."""
    accel = program.accel
    if accel is None:
        raise ArtifactError(f"program {program.name}: no accelerator groups (target "
                            f"{program.target}): save it with runtime.artifact")  # fmt: skip
    slot = {t: k for k, t in enumerate(program.placements)}
    members: dict[str, bytes] = {"dram.npy": _npy(accel.dram)}
    members["quantization.json"] = json.dumps(accel.quantization, indent=1).encode()
    constants = []
    for t, p in program.placements.items():
        if p.kind == "constant":
            member = f"constants/{slot[t]}.npy"
            members[member] = _npy(program.constants[p.key])
            constants.append({"slot": slot[t], "member": member})
    steps: list[dict[str, Any]] = []
    for k, (kernel, step) in enumerate(zip(program.kernels, accel.steps, strict=True)):
        if isinstance(step, InPlaceCopy):
            steps.append({"kind": "in-place", "name": kernel.name, "op": kernel.ops[0],
                          "reason": step.reason})  # fmt: skip
            continue
        if isinstance(step, AccelKernel):
            if step.program is None:
                raise ArtifactError(f"group {kernel.name}: the program holds no group program "
                                    "to save")  # fmt: skip
            member = f"programs/{k}.npz"
            members[member] = _program_file(step.program)
            img = step.image
            steps.append(
                {
                    "kind": "vta",
                    "name": kernel.name,
                    "program": member,
                    "insn_base": img.insn_base,
                    "insn_count": img.insn_count,
                    "symbols": {n: s.to_dict() for n, s in img.symbols.items()},
                    "aliased": list(img.aliased),
                    "producers": dict(img.producers),
                    "segments": [[s.start, s.end, s.to] for s in img.segments],
                    "writes": [{"symbol": sym, "slot": slot[t]} for sym, t in writes_of(kernel)],
                    "output": slot[out_of(kernel)],
                    "record": {f: getattr(step.record, f) for f in RECORD_FIELDS},
                    # the schedule the program was compiled with (tuned or the heuristic's)
                    "knobs": step.record.knobs,
                }
            )
            continue
        fn = program.modules.get(kernel.symbol)
        if isinstance(fn, ReferenceKernel) or not kernel.code:
            reason = fn.reason if isinstance(fn, ReferenceKernel) else "no code"
            raise ArtifactError(
                f"host group {kernel.name} runs in the reference executor ({reason}): an "
                "artifact holds compiled kernels only"
            )
        code = kernel.code.encode()
        member = f"kernels/{_sha256(code)[:24]}.ll"
        members.setdefault(member, code)
        pairs = list(zip(kernel.args, kernel.tensors, strict=True))
        steps.append(
            {
                "kind": "cpu",
                "name": kernel.name,
                # a compile-failed node's reason as a fourth entry
                "nodes": [
                    [n.name, n.op, n.rule, *([n.reason] if n.reason else [])] for n in step.nodes
                ],  # fmt: skip
                "inputs": [slot[t] for a, t in pairs if not a.is_output],
                "outputs": [slot[t] for a, t in pairs if a.is_output],
                "how": step.how,
                "kernel": {
                    "code": member,
                    "symbol": kernel.symbol,
                    "args": [
                        {
                            "name": a.name,
                            "shape": list(a.shape),
                            "dtype": a.dtype,
                            "is_output": a.is_output,
                        }
                        for a in kernel.args
                    ],  # fmt: skip
                },
            }
        )
    inputs = {p.key: t for t, p in program.placements.items() if p.kind == "input"}
    manifest = {
        "format": FORMAT_NAME,
        "version": VTA_FORMAT_VERSION,
        "kind": KIND,
        "name": program.name,
        "target": "vta",
        "config": json.loads(accel.config.to_json()),
        "inputs": [s.to_json() for s in program.inputs],
        "outputs": [s.to_json() for s in program.outputs],
        "input_slots": [slot[inputs[s.name]] for s in program.inputs],
        "output_slots": [slot[program.output_tensors[s.name]] for s in program.outputs],
        "slots": [
            {
                "name": t,
                "shape": list(p.shape),
                "dtype": p.dtype,
                "offset": p.offset if p.kind == "arena" else -1,
            }
            for t, p in program.placements.items()
        ],  # fmt: skip
        "arena_bytes": program.arena_bytes,
        "arena_naive_bytes": program.memory.naive_bytes,
        "constants": constants,
        "steps": steps,
        "dram": "dram.npy",
        "quantization": "quantization.json",
        "activation_bytes": accel.activation_bytes,
        "activation_bytes_unshared": accel.activation_bytes_unshared,
        "compile_seconds": round(accel.compile_seconds, 3),
        "scheme": accel.scheme,
        "checksums": {m: _sha256(b) for m, b in sorted(members.items())},
    }
    members[MANIFEST] = json.dumps(manifest, indent=1).encode()
    return members


def vta_artifact_bytes(program: Program) -> bytes:
    """The artifact of ``program`` as bytes (what :func:`save_vta_artifact` writes)."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "model.vtac")
        save_vta_artifact(program, path)
        with open(path, "rb") as f:
            return f.read()


def save_vta_artifact(program: Program, path: str | os.PathLike) -> None:
    """Write ``program`` to ``path`` atomically (as :func:`runtime.artifact.save_artifact`)."""
    write_members(vta_artifact_members(program), path)


def load_vta_artifact(source: str | os.PathLike | bytes) -> Program:
    """Read and validate an artifact written by :func:`save_vta_artifact`."""
    return read_artifact(source, {VTA_FORMAT_VERSION: "an accelerator network"},
                         load_vta_manifest)  # fmt: skip


class _Check:
    """Field checks that raise :class:`ArtifactError` naming the artifact, the place and the
    field."""

    def __init__(self, where: str) -> None:
        self.where = where

    def fail(self, place: str, message: str) -> ArtifactError:
        return ArtifactError(f"{self.where}: {place}: {message}")

    def field(self, d: Any, key: str, place: str, kind: type | tuple[type, ...]) -> Any:
        if not isinstance(d, dict) or key not in d:
            raise self.fail(place, f"no field {key!r}")
        v = d[key]
        if isinstance(v, bool) and kind is not bool or not isinstance(v, kind):
            names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
            raise self.fail(place, f"field {key!r} is not {names} ({v!r:.60})")
        return v

    def count(self, d: Any, key: str, place: str) -> int:
        v = self.field(d, key, place, int)
        if v < 0:
            raise self.fail(place, f"field {key!r} is negative ({v})")
        return int(v)

    def shape(self, d: Any, key: str, place: str) -> tuple[int, ...]:
        v = self.field(d, key, place, list)
        if not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in v):
            raise self.fail(place, f"field {key!r} is not a list of non-negative integers")
        return tuple(v)

    def dtype(self, d: Any, key: str, place: str) -> str:
        # only the numeric dtypes the compiler emits: host kernels take raw buffers, and an
        # ``object`` array (or any other) would hand them pointers instead of numbers
        v = self.field(d, key, place, str)
        if v not in ONNX_TYPE_NAMES:
            raise self.fail(place, f"field {key!r} is not one of the dtypes "
                            f"{', '.join(ONNX_TYPE_NAMES)} ({v!r:.40})")  # fmt: skip
        return v

    def number(self, d: Any, key: str, place: str) -> float:
        return float(self.field(d, key, place, (int, float)))

    def slot(self, v: Any, n: int, place: str, key: str) -> int:
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < n:
            raise self.fail(place, f"field {key!r}: slot {v!r} is not one of the {n} slots")
        return v


def _array(data: bytes, member: str, check: _Check) -> np.ndarray:
    try:
        arr = np.load(io.BytesIO(data), allow_pickle=False)
    except ValueError as e:
        raise check.fail(f"member {member}", f"not an npy array ({e})") from None
    if not isinstance(arr, np.ndarray):
        raise check.fail(f"member {member}", "not one npy array")
    return arr


@dataclasses.dataclass(frozen=True)
class _Slot:
    """A tensor as the manifest gives it: name, shape, dtype, arena offset or -1."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    offset: int


def load_vta_manifest(
    manifest: dict[str, Any], read: Callable[[str], bytes], where: str
) -> Program:
    """The program an accelerator network's manifest describes, checked (the module
    docstring); ``read(member)`` gives a member's bytes once its checksum is verified."""
    from compiler.ir.stmt import ArgInfo
    from compiler.targets.cpu.jit import make_function

    c = _Check(where)
    top = "manifest"
    if manifest.get("kind") != KIND:
        raise c.fail(top, f"field 'kind' is {manifest.get('kind')!r}, expected {KIND!r}")
    try:
        config = HwConfig.from_json(json.dumps(c.field(manifest, "config", top, dict)))
    except ConfigError as e:
        raise c.fail(top, f"field 'config': {e}") from None

    slots: list[_Slot] = []
    for k, s in enumerate(c.field(manifest, "slots", top, list)):
        place = f"slot {k}"
        offset = c.field(s, "offset", place, int)
        if offset < -1:
            raise c.fail(place, f"field 'offset' is {offset}: an arena offset or -1")
        name = c.field(s, "name", place, str)
        slots.append(_Slot(name, c.shape(s, "shape", place), c.dtype(s, "dtype", place), offset))
    n = len(slots)
    seen: dict[str, int] = {}
    for k, sl in enumerate(slots):
        if sl.name in seen:
            raise c.fail(f"slot {k}", f"field 'name' {sl.name!r} is slot {seen[sl.name]}'s too")
        seen[sl.name] = k

    def specs(key: str) -> tuple[TensorSpec, ...]:
        out = []
        for k, s in enumerate(c.field(manifest, key, top, list)):
            place = f"{key}[{k}]"
            out.append(TensorSpec(c.field(s, "name", place, str), c.shape(s, "shape", place),
                                  c.dtype(s, "dtype", place)))  # fmt: skip
        return tuple(out)

    inputs, outputs = specs("inputs"), specs("outputs")
    io_slots = {}
    for key, tensors in (("input_slots", inputs), ("output_slots", outputs)):
        raw = c.field(manifest, key, top, list)
        if len(raw) != len(tensors):
            raise c.fail(top, f"field {key!r} has {len(raw)} entries for {len(tensors)} tensors")
        io_slots[key] = tuple(c.slot(v, n, top, key) for v in raw)
        for spec, slot in zip(tensors, io_slots[key], strict=True):
            if (spec.shape, spec.dtype) != (slots[slot].shape, slots[slot].dtype):
                have = f"{slots[slot].dtype}{list(slots[slot].shape)}"
                raise c.fail(top, f"{key}: {spec.name!r} is {spec.dtype}{list(spec.shape)} but "
                             f"slot {slot} is {have}")  # fmt: skip

    def check_array(arr: np.ndarray, slot: int, member: str) -> None:
        want = slots[slot]
        if tuple(arr.shape) != want.shape or arr.dtype != np.dtype(want.dtype):
            raise c.fail(f"member {member}", f"is {arr.dtype}{list(arr.shape)}, but slot {slot} "
                         f"is {want.dtype}{list(want.shape)}")  # fmt: skip

    constants: dict[int, np.ndarray] = {}
    for k, entry in enumerate(c.field(manifest, "constants", top, list)):
        member = c.field(entry, "member", f"constants[{k}]", str)
        slot = c.slot(entry.get("slot"), n, f"constants[{k}]", "slot")
        arr = _array(read(member), member, c)
        check_array(arr, slot, member)
        constants[slot] = arr

    dram_member = c.field(manifest, "dram", top, str)
    dram = _array(read(dram_member), dram_member, c)
    if dram.dtype != np.uint8 or dram.ndim != 1:
        raise c.fail(f"member {dram_member}", f"is {dram.dtype}{list(dram.shape)}, not 1-D uint8")
    size = int(dram.size)

    def inside(place: str, what: str, lo: int, hi: int) -> None:
        if lo < 0 or hi > size:
            raise c.fail(place, f"{what} at bytes [{lo}, {hi}) lies outside the {size}-byte "
                         "DRAM image")  # fmt: skip

    def arg(sl: _Slot, name: str, is_output: bool) -> KernelArg:
        return KernelArg(name, sl.shape, sl.dtype, is_output)

    ready = set(io_slots["input_slots"]) | set(constants)
    kernels: list[KernelSpec] = []
    steps: list[HostKernel | AccelKernel | InPlaceCopy] = []
    functions: dict[str, tuple[Any, Any]] = {}
    modules: dict[str, Any] = {}
    for k, s in enumerate(c.field(manifest, "steps", top, list)):
        kind = c.field(s, "kind", f"step {k}", str)
        name = c.field(s, "name", f"step {k}", str)
        place = f"step {k} ({name})"
        if kind == "vta":
            base = c.count(s, "insn_base", place)
            count = c.count(s, "insn_count", place)
            inside(place, f"{count} instructions", base, base + count * INSN_BYTES)
            symbols = {}
            for sym, d in c.field(s, "symbols", place, dict).items():
                try:
                    symbols[sym] = Symbol.from_dict(sym, d)
                except ProgramError as e:
                    raise c.fail(place, f"field 'symbols': {e}") from None
                inside(place, f"symbol {sym!r}", symbols[sym].offset,
                       symbols[sym].offset + symbols[sym].nbytes)  # fmt: skip
            if "out" not in symbols:
                raise c.fail(place, "field 'symbols' has no 'out'")
            aliased = tuple(c.field(s, "aliased", place, list))
            for a in aliased:
                if a not in symbols:
                    raise c.fail(place, f"field 'aliased': {a!r} is not a symbol")
            segments = []
            for seg in c.field(s, "segments", place, list):
                if not (isinstance(seg, list) and len(seg) == 3
                        and all(isinstance(v, int) for v in seg)):  # fmt: skip
                    raise c.fail(place, f"field 'segments': {seg!r:.40} is not [start, end, to]")
                segments.append(Segment(*seg))
            group_args: list[KernelArg] = []
            group_tensors: list[str] = []
            for w in c.field(s, "writes", place, list):
                symbol, slot = _read_write(w, symbols, slots, ready, place, c)
                group_args.append(arg(slots[slot], symbol, False))
                group_tensors.append(slots[slot].name)
            out = c.slot(s.get("output"), n, place, "output")
            if not _holds(symbols["out"], slots[out]):  # the bytes of 'out', as they lie
                sym = symbols["out"]
                raise c.fail(place, f"field 'output': slot {out} is {slots[out].dtype}"
                             f"{list(slots[out].shape)}, which symbol 'out' ({sym.dtype}"
                             f"{list(sym.shape)}) does not hold")  # fmt: skip
            group_args.append(arg(slots[out], "out", True))
            group_tensors.append(slots[out].name)
            rec = c.field(s, "record", place, dict)
            for f in RECORD_FIELDS:
                if f not in rec:
                    raise c.fail(place, f"field 'record' has no {f!r}")
            at = f"{place}: field 'record'"
            record = GroupFigures(
                c.field(rec, "name", at, str), c.field(rec, "ops", at, str),
                c.field(rec, "rule", at, str), c.count(rec, "macs", at),
                c.number(rec, "ideal_cycles", at), c.number(rec, "roofline_cycles", at),
                c.number(rec, "alu_roofline_cycles", at), c.count(rec, "compulsory_bytes", at),
                knobs=_knobs_field(s, place, c),
            )  # fmt: skip
            member = c.field(s, "program", place, str)
            prog = _read_program(read(member), member, c)
            if prog.config != config:
                differ = [f.name for f in dataclasses.fields(config)
                          if getattr(prog.config, f.name) != getattr(config, f.name)]  # fmt: skip
                first = differ[0] if differ else "name"
                raise c.fail(f"member {member}", f"built for config {prog.config.name} with "
                             f"{first}={getattr(prog.config, first)!r}, the artifact's config "
                             f"has {first}={getattr(config, first)!r}")  # fmt: skip
            if prog.insn_count != count:
                raise c.fail(f"member {member}", f"{prog.insn_count} instructions, the manifest's "
                             f"step says {count}")  # fmt: skip
            # the program file is the group's own record of its tensors: the manifest's symbols
            # (relocated: other offsets) must have its names, shapes and dtypes, so that a slot
            # and a symbol edited together still disagree with it
            if sorted(prog.symbols) != sorted(symbols):
                raise c.fail(place, f"field 'symbols' names {sorted(symbols)}, program {member} "
                             f"has {sorted(prog.symbols)}")  # fmt: skip
            for sym_name, sym in symbols.items():
                own = prog.symbols[sym_name]
                if (tuple(sym.shape), np.dtype(sym.dtype)) != (tuple(own.shape),
                                                              np.dtype(own.dtype)):  # fmt: skip
                    raise c.fail(place, f"symbol {sym_name!r} is {sym.dtype}{list(sym.shape)}, "
                                 f"program {member} has {own.dtype}{list(own.shape)}")  # fmt: skip
            producers = c.field(s, "producers", place, dict)
            if not all(isinstance(v, str) for v in producers.values()):
                raise c.fail(place, "field 'producers' is not a mapping of symbol to group")
            image = GroupImage(name, base, count, symbols, aliased, tuple(segments),
                               {str(a): str(b) for a, b in producers.items()})  # fmt: skip
            ops = tuple(record.ops.split("+"))
            kernels.append(KernelSpec(name, ops, "vta", name, tuple(group_args),
                                      tuple(group_tensors), ""))  # fmt: skip
            steps.append(AccelKernel(image, record, prog))
            ready.add(out)
        elif kind == "cpu":
            ins = tuple(c.slot(v, n, place, "inputs") for v in c.field(s, "inputs", place, list))
            outs = tuple(c.slot(v, n, place, "outputs") for v in c.field(s, "outputs", place, list))
            for v in ins:
                if v not in ready:
                    raise c.fail(place, f"field 'inputs': slot {v} is read before any step "
                                 "writes it")  # fmt: skip
            kern = c.field(s, "kernel", place, dict)
            member = c.field(kern, "code", place, str)
            symbol = c.field(kern, "symbol", place, str)
            said = []
            for a in c.field(kern, "args", place, list):
                said.append(ArgInfo(c.field(a, "name", place, str), c.shape(a, "shape", place),
                                    c.dtype(a, "dtype", place),
                                    bool(c.field(a, "is_output", place, bool))))  # fmt: skip
            arg_in = [a for a in said if not a.is_output]
            arg_out = [a for a in said if a.is_output]
            for label, slots_of, arg_of in (("inputs", ins, arg_in), ("outputs", outs, arg_out)):
                if len(slots_of) != len(arg_of):
                    raise c.fail(place, f"field '{label}': {len(slots_of)} slots for the "
                                 f"kernel's {len(arg_of)} {label}")  # fmt: skip
                for v, a in zip(slots_of, arg_of, strict=True):
                    if (slots[v].shape, np.dtype(slots[v].dtype)) != (a.shape, np.dtype(a.dtype)):
                        raise c.fail(place, f"kernel argument {a.name} is {a.dtype}"
                                     f"{list(a.shape)} but slot {v} is {slots[v].dtype}"
                                     f"{list(slots[v].shape)}")  # fmt: skip
            key = f"{member}:{symbol}"
            if key not in functions:
                try:
                    code = read(member).decode()
                except UnicodeDecodeError as e:
                    raise c.fail(f"member {member}", f"not LLVM IR text ({e.reason} at byte "
                                 f"{e.start})") from None  # fmt: skip
                recorded = recorded_signature(
                    code, symbol, f"{where}: {place}: member {member}: kernel {symbol!r}"
                )
                if symbol in modules:
                    raise c.fail(place, f"kernel symbol {symbol!r} names two kernels' code")
                # the function is built on the arguments the code records, never the manifest's
                own = [ArgInfo(a.name, a.shape, a.dtype, a.is_output) for a in recorded]
                functions[key] = (make_function(symbol, own, code, ""), recorded)
                modules[symbol] = functions[key][0]
            fn, recorded = functions[key]
            wrong = argument_mismatch(said, recorded)
            if wrong is not None:
                raise c.fail(place, f"kernel {symbol!r}: {wrong}")
            nodes = []
            for row in c.field(s, "nodes", place, list):
                if not (
                    isinstance(row, list)
                    and len(row) in (3, 4)
                    and all(isinstance(x, str) for x in row)
                ):
                    raise c.fail(
                        place, f"field 'nodes': {row!r:.40} is not [name, op, rule(, reason)]"
                    )
                nodes.append(HostNode(*row))
            how = c.field(s, "how", place, str)
            it_in, it_out = iter(ins), iter(outs)
            order = [next(it_out) if a.is_output else next(it_in) for a in fn.args]
            kernels.append(KernelSpec(
                name, tuple(nd.op for nd in nodes), "cpu", symbol,
                tuple(KernelArg(a.name, tuple(a.shape), a.dtype, a.is_output) for a in fn.args),
                tuple(slots[v].name for v in order), fn.llvm_ir,
            ))  # fmt: skip
            steps.append(HostKernel(tuple(nodes), how))
            ready.update(outs)
        elif kind == "in-place":
            op = c.field(s, "op", place, str)
            if op not in ("concat", "strided_slice"):
                raise c.fail(place, f"field 'op' is {op!r}: only a concat or a slice is done "
                             "in place")  # fmt: skip
            kernels.append(KernelSpec(name, (op,), "copy", "", (), (), ""))
            steps.append(InPlaceCopy(c.field(s, "reason", place, str)))
        else:
            raise c.fail(place, f"field 'kind' is {kind!r}, expected 'vta', 'cpu' or 'in-place'")
    for v in io_slots["output_slots"]:
        if v not in ready:
            raise c.fail(top, f"output slot {v} is written by no step")
    arena_bytes = c.count(manifest, "arena_bytes", top)
    if arena_bytes > MAX_TENSOR_BYTES:
        raise c.fail(top, f"field 'arena_bytes' is {arena_bytes}, past the {MAX_TENSOR_BYTES} "
                     "an artifact may declare")  # fmt: skip
    placements: dict[str, Placement] = {}
    kinds: dict[int, tuple[str, str]] = {}
    for slot, spec in zip(io_slots["input_slots"], inputs, strict=True):
        kinds[slot] = ("input", spec.name)
    for slot in constants:
        kinds.setdefault(slot, ("constant", slots[slot].name))
    for slot, spec in zip(io_slots["output_slots"], outputs, strict=True):
        kinds.setdefault(slot, ("output", spec.name))
    for k, sl in enumerate(slots):
        kind, key = kinds.get(k, ("arena" if sl.offset >= 0 else "image", sl.name))
        if kind != "arena" and sl.offset >= 0:
            raise c.fail(f"slot {k}", f"field 'offset' is {sl.offset}, but the slot is {kind} "
                         f"{key!r}, not in the arena")  # fmt: skip
        placements[sl.name] = Placement(kind, key, max(sl.offset, 0), sl.shape, sl.dtype)
    quant_member = c.field(manifest, "quantization", top, str)
    try:
        quantization = json.loads(read(quant_member))
    except ValueError as e:
        raise c.fail(f"member {quant_member}", f"not valid JSON ({e})") from None
    program = Program(
        name=c.field(manifest, "name", top, str),
        target="vta",
        num_threads=1,
        inputs=inputs,
        outputs=outputs,
        placements=placements,
        kernels=tuple(kernels),
        constants={slots[k].name: arr for k, arr in constants.items()},
        arena_bytes=arena_bytes,
        memory=MemoryStats(arena_bytes, c.count(manifest, "arena_naive_bytes", top)),
        output_tensors={spec.name: slots[v].name
                        for spec, v in zip(outputs, io_slots["output_slots"], strict=True)},
        modules=modules,
        accel=AccelModule(
            config=config,
            dram=dram,
            steps=tuple(steps),
            activation_bytes=c.count(manifest, "activation_bytes", top),
            activation_bytes_unshared=c.count(manifest, "activation_bytes_unshared", top),
            quantization=quantization,
            scheme=str(manifest.get("scheme", "")),
            compile_seconds=float(c.field(manifest, "compile_seconds", top, (int, float))),
        ),
    )  # fmt: skip
    bad = check_host_arena(program)
    if bad is not None:
        raise c.fail(top, f"host arena: {bad}")
    return program


def _knobs_field(step: dict[str, Any], place: str, c: _Check) -> str:
    """A group's knobs as the manifest gives them (artifacts written before they were kept:
    empty)."""
    if "knobs" not in step:
        return ""
    return str(c.field(step, "knobs", place, str))


def _holds(sym: Symbol, slot: _Slot) -> bool:
    """Whether slot ``slot`` is exactly the tensor ``sym`` (shape and dtype): what a group's
    ``out`` is copied into, and what a host ``unpack`` node reads."""
    return (tuple(slot.shape), np.dtype(slot.dtype)) == (tuple(sym.shape), np.dtype(sym.dtype))


#: The fields of a host write in the manifest.
WRITE_FIELDS = ("symbol", "slot")


def _read_write(
    w: Any,
    symbols: dict[str, Symbol],
    slots: list[_Slot],
    ready: set[int],
    place: str,
    c: _Check,
) -> tuple[str, int]:
    """A host write (symbol, slot): the slot (a host group's packed result) must be exactly
    the symbol's tensor, shape and dtype, so that the image takes its bytes as they are."""
    symbol = c.field(w, "symbol", place, str)
    if symbol not in symbols:
        raise c.fail(place, f"field 'writes': {symbol!r} is not a symbol of the program")
    unknown = sorted(set(w) - set(WRITE_FIELDS))
    if unknown:
        # a write copies its slot and nothing else (the host groups pack it: a format that
        # packed, padded or folded at the write is refused rather than run without it)
        fields = ", ".join(map(repr, unknown))
        raise c.fail(place, f"field 'writes': {symbol!r} has unknown field(s) {fields}; a "
                     f"write has {', '.join(WRITE_FIELDS)}")  # fmt: skip
    slot = c.slot(w.get("slot"), len(slots), place, "writes")
    if slot not in ready:
        raise c.fail(place, f"field 'writes': slot {slot} is read before any step writes it")
    sym, have = symbols[symbol], slots[slot]
    if not _holds(sym, have):
        raise c.fail(place, f"field 'writes': {symbol!r} from slot {slot} "
                     f"({have.dtype}{list(have.shape)}), but symbol {symbol!r} is "
                     f"{sym.dtype}{list(sym.shape)}")  # fmt: skip
    return symbol, slot


def _read_program(data: bytes, member: str, c: _Check) -> Any:
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, RuntimeError, NotImplementedError,
            zlib.error) as e:  # fmt: skip
        raise c.fail(f"member {member}", f"not a program file ({e})") from None
    try:
        return program_from_arrays(arrays, f"member {member}")
    except ProgramError as e:
        raise ArtifactError(f"{c.where}: {e}") from None


__all__ = [
    "load_vta_artifact",
    "load_vta_manifest",
    "save_vta_artifact",
    "vta_artifact_bytes",
    "vta_artifact_members",
]
