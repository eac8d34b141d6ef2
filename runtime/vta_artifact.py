"""The accelerator network artifact (``vtac compile MODEL --target vta -o model.vtac``): a
compiled :class:`~runtime.vta_plan.NetworkPlan` in the archive format of
:mod:`runtime.artifact`, format version 7 (``"kind": "vta"``), so the network runs again
without quantizing, partitioning or compiling.

Members:

* ``manifest.json``: format, version and kind; the model's name, inputs and outputs; the
  accelerator config (as ``isa`` writes it); the slots (shape and dtype of every value that
  crosses a step, and its offset in the host arena, -1 where it lies elsewhere) and the
  arena's bytes; the steps in order: per accelerator group where its relocated program lies
  in the DRAM image (instruction base and count, symbols, the pieces moved), what the host
  writes into it and its record's static figures; per host group its kernel (entry symbol,
  arguments) and slots; per concat or slice the DRAM plan does in place (``"kind":
  "in-place"``) its name, operator and reason, for the per-layer table (a reader that predates
  this kind refuses it naming the step); and the SHA-256 of every other member;
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
provides. A fault
is refused in one line naming the member or step and the field.

Example:
    >>> import numpy as np
    >>> from compiler.graph import Constant, Graph, Node, TensorType, Var
    >>> from runtime.vta_plan import plan_network
    >>> from runtime.vta_target import compile_network
    >>> x = Var("x", TensorType((1, 3, 6, 6), "float32", "NCHW"))
    >>> w = Constant(np.ones((8, 3, 3, 3), np.float32), name="w")
    >>> g = Graph.from_outputs([x], [Node("conv2d", (x, w), {}, name="conv")])
    >>> feed = {"x": np.ones((1, 3, 6, 6), np.float32)}
    >>> plan = plan_network(compile_network(g, calibration=feed))
    >>> again = load_vta_artifact(vta_artifact_bytes(plan))
    >>> again.run(feed).total_cycles == plan.run(feed).total_cycles
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

from compiler.model.program import ONNX_TYPE_NAMES, TensorSpec
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
from runtime.vta_plan import (
    AccelStep,
    HostNode,
    HostStep,
    HostWrite,
    InPlaceStep,
    NetworkPlan,
    ReferenceKernel,
    Slot,
    check_host_arena,
)
from runtime.vta_target import LayerRecord

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


def vta_artifact_members(plan: NetworkPlan) -> dict[str, bytes]:
    """Every member of the archive of ``plan``, the manifest last."""
    members: dict[str, bytes] = {"dram.npy": _npy(plan.dram)}
    members["quantization.json"] = json.dumps(plan.quantization, indent=1).encode()
    constants = []
    for slot, arr in sorted(plan.constants.items()):
        member = f"constants/{slot}.npy"
        members[member] = _npy(arr)
        constants.append({"slot": slot, "member": member})
    steps: list[dict[str, Any]] = []
    for k, step in enumerate(plan.steps):
        if isinstance(step, InPlaceStep):
            steps.append({"kind": "in-place", "name": step.name, "op": step.op,
                          "reason": step.reason})  # fmt: skip
            continue
        if isinstance(step, AccelStep):
            if step.program is None:
                raise ArtifactError(f"group {step.name}: the plan holds no program to save")
            member = f"programs/{k}.npz"
            members[member] = _program_file(step.program)
            img = step.image
            steps.append(
                {
                    "kind": "vta",
                    "name": step.name,
                    "program": member,
                    "insn_base": img.insn_base,
                    "insn_count": img.insn_count,
                    "symbols": {n: s.to_dict() for n, s in img.symbols.items()},
                    "aliased": list(img.aliased),
                    "producers": dict(img.producers),
                    "segments": [[s.start, s.end, s.to] for s in img.segments],
                    "writes": [_write_json(w) for w in step.writes],
                    "output": step.output,
                    "record": {f: getattr(step.record, f) for f in RECORD_FIELDS},
                    # the schedule the program was compiled with (tuned or the heuristic's)
                    "knobs": step.record.knobs,
                }
            )
        else:
            if isinstance(step.kernel, ReferenceKernel):
                raise ArtifactError(
                    f"host group {step.name} runs in the reference executor "
                    f"({step.kernel.reason}): an artifact holds compiled kernels only"
                )
            code = step.kernel.llvm_ir.encode()
            member = f"kernels/{_sha256(code)[:24]}.ll"
            members.setdefault(member, code)
            steps.append(
                {
                    "kind": "cpu",
                    "name": step.name,
                    # a compile-failed node's reason as a fourth entry
                    "nodes": [
                        [n.name, n.op, n.rule, *([n.reason] if n.reason else [])]
                        for n in step.nodes
                    ],  # fmt: skip
                    "inputs": list(step.inputs),
                    "outputs": list(step.outputs),
                    "how": step.how,
                    "kernel": {
                        "code": member,
                        "symbol": step.kernel.name,
                        "args": [
                            {
                                "name": a.name,
                                "shape": list(a.shape),
                                "dtype": a.dtype,
                                "is_output": a.is_output,
                            }  # fmt: skip
                            for a in step.kernel.args
                        ],
                    },
                }
            )
    manifest = {
        "format": FORMAT_NAME,
        "version": VTA_FORMAT_VERSION,
        "kind": KIND,
        "name": plan.name,
        "target": "vta",
        "config": json.loads(plan.config.to_json()),
        "inputs": [s.to_json() for s in plan.inputs],
        "outputs": [s.to_json() for s in plan.outputs],
        "input_slots": list(plan.input_slots),
        "output_slots": list(plan.output_slots),
        "slots": [
            {"shape": list(s.shape), "dtype": s.dtype, "offset": s.offset} for s in plan.slots
        ],  # fmt: skip
        "arena_bytes": plan.arena_bytes,
        "arena_naive_bytes": plan.arena_naive_bytes,
        "constants": constants,
        "steps": steps,
        "dram": "dram.npy",
        "quantization": "quantization.json",
        "activation_bytes": plan.activation_bytes,
        "activation_bytes_unshared": plan.activation_bytes_unshared,
        "compile_seconds": round(plan.compile_seconds, 3),
        "scheme": plan.scheme,
        "checksums": {m: _sha256(b) for m, b in sorted(members.items())},
    }
    members[MANIFEST] = json.dumps(manifest, indent=1).encode()
    return members


def _write_json(w: HostWrite) -> dict[str, Any]:
    return {"symbol": w.symbol, "slot": w.slot}


def vta_artifact_bytes(plan: NetworkPlan) -> bytes:
    """The artifact of ``plan`` as bytes (what :func:`save_vta_artifact` writes)."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "model.vtac")
        save_vta_artifact(plan, path)
        with open(path, "rb") as f:
            return f.read()


def save_vta_artifact(plan: NetworkPlan, path: str | os.PathLike) -> None:
    """Write ``plan`` to ``path`` atomically (as :func:`runtime.artifact.save_artifact`)."""
    write_members(vta_artifact_members(plan), path)


def load_vta_artifact(source: str | os.PathLike | bytes) -> NetworkPlan:
    """Read and validate an artifact written by :func:`save_vta_artifact`."""
    return read_artifact(source, {VTA_FORMAT_VERSION: "an accelerator network"}, _load)


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


def _load(manifest: dict[str, Any], read: Callable[[str], bytes], where: str) -> NetworkPlan:
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

    slots = []
    for k, s in enumerate(c.field(manifest, "slots", top, list)):
        offset = c.field(s, "offset", f"slot {k}", int)
        if offset < -1:
            raise c.fail(f"slot {k}", f"field 'offset' is {offset}: an arena offset or -1")
        slots.append(Slot(c.shape(s, "shape", f"slot {k}"), c.dtype(s, "dtype", f"slot {k}"),
                          offset))  # fmt: skip
    n = len(slots)

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

    ready = set(io_slots["input_slots"]) | set(constants)
    steps: list[AccelStep | HostStep | InPlaceStep] = []
    kernels: dict[str, Any] = {}
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
            writes = []
            for w in c.field(s, "writes", place, list):
                writes.append(_read_write(w, symbols, slots, ready, place, c))
            out = c.slot(s.get("output"), n, place, "output")
            if not _holds(symbols["out"], slots[out]):  # the bytes of 'out', as they lie
                sym = symbols["out"]
                raise c.fail(place, f"field 'output': slot {out} is {slots[out].dtype}"
                             f"{list(slots[out].shape)}, which symbol 'out' ({sym.dtype}"
                             f"{list(sym.shape)}) does not hold")  # fmt: skip
            rec = c.field(s, "record", place, dict)
            for f in RECORD_FIELDS:
                if f not in rec:
                    raise c.fail(place, f"field 'record' has no {f!r}")
            at = f"{place}: field 'record'"
            record = LayerRecord(
                c.field(rec, "name", at, str), c.field(rec, "ops", at, str), "vta",
                c.field(rec, "rule", at, str), 0, c.count(rec, "macs", at),
                c.number(rec, "ideal_cycles", at), c.number(rec, "roofline_cycles", at),
                c.number(rec, "alu_roofline_cycles", at), 0, c.count(rec, "compulsory_bytes", at),
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
            steps.append(AccelStep(name, image, tuple(writes), out, record, prog))
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
            args = []
            for a in c.field(kern, "args", place, list):
                args.append(ArgInfo(c.field(a, "name", place, str), c.shape(a, "shape", place),
                                    c.dtype(a, "dtype", place),
                                    bool(c.field(a, "is_output", place, bool))))  # fmt: skip
            arg_in = [a for a in args if not a.is_output]
            arg_out = [a for a in args if a.is_output]
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
            if key not in kernels:
                try:
                    code = read(member).decode()
                except UnicodeDecodeError as e:
                    raise c.fail(f"member {member}", f"not LLVM IR text ({e.reason} at byte "
                                 f"{e.start})") from None  # fmt: skip
                recorded = recorded_signature(
                    code, symbol, f"{where}: {place}: member {member}: kernel {symbol!r}"
                )
                # the function is built on the arguments the code records, never the manifest's
                own = [ArgInfo(a.name, a.shape, a.dtype, a.is_output) for a in recorded]
                kernels[key] = (make_function(symbol, own, code, ""), recorded)
            wrong = argument_mismatch(args, kernels[key][1])
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
            steps.append(HostStep(name, tuple(nodes), ins, outs, kernels[key][0], how))
            ready.update(outs)
        elif kind == "in-place":
            op = c.field(s, "op", place, str)
            if op not in ("concat", "strided_slice"):
                raise c.fail(place, f"field 'op' is {op!r}: only a concat or a slice is done "
                             "in place")  # fmt: skip
            steps.append(InPlaceStep(name, op, c.field(s, "reason", place, str)))
        else:
            raise c.fail(place, f"field 'kind' is {kind!r}, expected 'vta', 'cpu' or 'in-place'")
    for v in io_slots["output_slots"]:
        if v not in ready:
            raise c.fail(top, f"output slot {v} is written by no step")
    arena_bytes = c.count(manifest, "arena_bytes", top)
    if arena_bytes > MAX_TENSOR_BYTES:
        raise c.fail(top, f"field 'arena_bytes' is {arena_bytes}, past the {MAX_TENSOR_BYTES} "
                     "an artifact may declare")  # fmt: skip
    bad = check_host_arena(steps, slots, io_slots["output_slots"], arena_bytes)
    if bad is not None:
        raise c.fail(top, f"host arena: {bad}")
    quant_member = c.field(manifest, "quantization", top, str)
    try:
        quantization = json.loads(read(quant_member))
    except ValueError as e:
        raise c.fail(f"member {quant_member}", f"not valid JSON ({e})") from None
    return NetworkPlan(
        name=c.field(manifest, "name", top, str),
        config=config,
        inputs=inputs,
        outputs=outputs,
        input_slots=io_slots["input_slots"],
        output_slots=io_slots["output_slots"],
        slots=tuple(slots),
        constants=constants,
        steps=tuple(steps),
        dram=dram,
        activation_bytes=c.count(manifest, "activation_bytes", top),
        activation_bytes_unshared=c.count(manifest, "activation_bytes_unshared", top),
        arena_bytes=arena_bytes,
        arena_naive_bytes=c.count(manifest, "arena_naive_bytes", top),
        quantization=quantization,
        compile_seconds=float(c.field(manifest, "compile_seconds", top, (int, float))),
        scheme=str(manifest.get("scheme", "")),
    )


def _knobs_field(step: dict[str, Any], place: str, c: _Check) -> str:
    """A group's knobs as the manifest gives them (artifacts written before they were kept:
    empty)."""
    if "knobs" not in step:
        return ""
    return str(c.field(step, "knobs", place, str))


def _holds(sym: Symbol, slot: Slot) -> bool:
    """Whether slot ``slot`` is exactly the tensor ``sym`` (shape and dtype): what a group's
    ``out`` is copied into, and what a host ``unpack`` node reads."""
    return (tuple(slot.shape), np.dtype(slot.dtype)) == (tuple(sym.shape), np.dtype(sym.dtype))


#: The fields of a host write in the manifest.
WRITE_FIELDS = ("symbol", "slot")


def _read_write(
    w: Any,
    symbols: dict[str, Symbol],
    slots: list[Slot],
    ready: set[int],
    place: str,
    c: _Check,
) -> HostWrite:
    """A host write: the slot (a host group's packed result) must be exactly the symbol's
    tensor, shape and dtype, so that the image takes its bytes as they are."""
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
    return HostWrite(symbol, slot)


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
    "save_vta_artifact",
    "vta_artifact_bytes",
    "vta_artifact_members",
]
