"""The compiled-model file (``vtac compile -o model.vtac``): one zip archive holding a
:class:`~compiler.model.program.Program` of any target, so a model runs again without its ONNX
file. :func:`save_artifact` and :func:`load_artifact` write and read both layouts: a cpu
program's (format version 3, below) and an accelerator network's (version 8, with its DRAM
image and group programs: :mod:`runtime.vta_artifact`).

Members of a cpu program's:

* ``manifest.json``: the format name and version, the model's inputs and outputs, the
  placement of every tensor (the static memory plan), the kernels in order (group name, fused
  ops, target, entry symbol, arguments) and the SHA-256 of every other member;
* ``graph.txt``: the optimized graph after all passes, as the graph printer writes it;
* ``kernels/<hash>.ll``: each distinct kernel's LLVM IR text, with the record of the
  arguments it was compiled for (:mod:`compiler.targets.cpu.signature`; the machine code comes
  from the on-disk object cache when the machine and LLVM are the same, else LLVM compiles it
  again);
* ``constants/<index>.npy``: the constants, pre-packed in the layouts the kernels read.

Writing is atomic (a temporary file in the same directory, then ``os.replace``) and the file
gets the usual ``0666 & ~umask`` mode. Reading refuses, naming the fault, a file that is not a
zip archive, a manifest of another format or version (a retired one saying to compile again), a
missing member or one whose checksum does not match; loading then checks the manifest against
the kernels (:func:`runtime.program_check.check_program`) and every kernel's arguments and bound
buffers against the record in its compiled code (:func:`check_signatures`).

Example:
    >>> import os, tempfile
    >>> from compiler.model.program import MemoryStats, Program, TensorSpec
    >>> prog = Program("m", "cpu", 1, (TensorSpec("x", (2,), "float32"),), (), {}, (), {}, 0,
    ...                MemoryStats(0, 0))
    >>> path = os.path.join(tempfile.mkdtemp(), "m.vtac")
    >>> save_artifact(prog, path)
    >>> load_artifact(path).inputs
    (TensorSpec(name='x', shape=(2,), dtype='float32'),)
    >>> is_artifact(path)
    True
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from compiler.model.program import (
    KernelArg,
    KernelSpec,
    MemoryStats,
    Placement,
    Program,
    TensorSpec,
)
from runtime.errors import ArtifactError

if TYPE_CHECKING:  # the compiler is imported only when an artifact's kernels are checked
    from compiler.targets.cpu.signature import ArgSignature

FORMAT_NAME = "vtac-artifact"
#: Bumped whenever the manifest's meaning changes; other versions are refused.
FORMAT_VERSION = 3
#: The version of an accelerator network artifact (:mod:`runtime.vta_artifact`).
VTA_FORMAT_VERSION = 8
#: What each version holds, in words and as the target it runs on.
ARTIFACT_KINDS = {FORMAT_VERSION: "a cpu program", VTA_FORMAT_VERSION: "an accelerator network"}
KIND_OF = {FORMAT_VERSION: "cpu", VTA_FORMAT_VERSION: "vta"}
#: Versions no longer read, and why: their host kernels' code records no argument shapes
#: (:mod:`compiler.targets.cpu.signature`), so nothing the manifest says could be checked.
RETIRED_VERSIONS = {1: "a cpu program", 2: "an accelerator network"}
MANIFEST = "manifest.json"
ZIP_MAGIC = b"PK\x03\x04"
T = TypeVar("T")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _npy_bytes(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.asarray(arr, order="C"), allow_pickle=False)
    return buf.getvalue()


def artifact_members(program: Program) -> dict[str, bytes]:
    """Every member of the archive, the manifest last (it holds the others' checksums).

    Example:
        >>> from compiler.model.program import MemoryStats, Program
        >>> prog = Program("m", "cpu", 1, (), (), {}, (), {}, 0, MemoryStats(0, 0))
        >>> sorted(artifact_members(prog))
        ['graph.txt', 'manifest.json']
    """
    members: dict[str, bytes] = {"graph.txt": program.graph_text.encode()}
    kernels = []
    for k in program.kernels:
        member = f"kernels/{_sha256(k.code.encode())[:24]}.ll"
        members.setdefault(member, k.code.encode())
        kernels.append(
            {
                "name": k.name,
                "ops": list(k.ops),
                "target": k.target,
                "symbol": k.symbol,
                "args": [a.to_json() for a in k.args],
                "tensors": list(k.tensors),
                "code": member,
            }
        )
    constants = []
    for i, (name, arr) in enumerate(program.constants.items()):
        member = f"constants/{i}.npy"
        members[member] = _npy_bytes(arr)
        constants.append({"name": name, "member": member})
    manifest = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "name": program.name,
        "target": program.target,
        "num_threads": program.num_threads,
        "inputs": [s.to_json() for s in program.inputs],
        "outputs": [s.to_json() for s in program.outputs],
        "output_tensors": dict(program.output_tensors),
        "placements": {t: p.to_json() for t, p in program.placements.items()},
        "kernels": kernels,
        "constants": constants,
        "arena_bytes": program.arena_bytes,
        "memory": {
            "peak_bytes": program.memory.peak_bytes,
            "naive_bytes": program.memory.naive_bytes,
        },
        "checksums": {m: _sha256(b) for m, b in sorted(members.items())},
    }
    members[MANIFEST] = json.dumps(manifest, indent=1).encode()
    return members


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def save_artifact(program: Program, path: str | os.PathLike) -> None:
    """Write ``program`` to ``path`` atomically (see the module docstring); a program with
    accelerator groups in the accelerator network's layout
    (:func:`runtime.vta_artifact.vta_artifact_members`)."""
    if program.accel is not None:
        from runtime.vta_artifact import vta_artifact_members

        write_members(vta_artifact_members(program), path)
        return
    write_members(artifact_members(program), path)


#: An array member is deflated when at least this share of its bytes are zero (an accelerator
#: network's DRAM image and its groups' program files, whose activation regions are zeroed);
#: other arrays (weights) hardly compress and are stored.
DEFLATE_ZEROS = 0.25


def _deflates(member: str, data: bytes) -> bool:
    """Whether ``member`` is worth deflating: text always, an array when zeros fill
    :data:`DEFLATE_ZEROS` of it.

    Example:
        >>> _deflates("manifest.json", b"{}"), _deflates("dram.npy", bytes(64) + b"x" * 64)
        (True, True)
        >>> _deflates("constants/w.npy", bytes(range(1, 129)))
        False
    """
    if not member.endswith((".npy", ".npz")):
        return True
    raw = np.frombuffer(data, np.uint8)
    return bool(raw.size) and bool(raw.size - np.count_nonzero(raw) >= DEFLATE_ZEROS * raw.size)


def write_members(members: dict[str, bytes], path: str | os.PathLike) -> None:
    """Write an archive of ``members`` to ``path`` atomically: a temporary file in the same
    directory, then ``os.replace``; text and mostly-zero arrays deflated (level 1, fast), the
    other arrays stored (:func:`_deflates`)."""
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh, zipfile.ZipFile(fh, "w") as zf:
            for member, data in members.items():
                if _deflates(member, data):
                    zf.writestr(member, data, compress_type=zipfile.ZIP_DEFLATED,
                                compresslevel=1)  # fmt: skip
                else:
                    zf.writestr(member, data, compress_type=zipfile.ZIP_STORED)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def is_artifact(source: str | os.PathLike | bytes) -> bool:
    """Whether ``source`` (a path or the file's bytes) starts like a zip archive, which an ONNX
    protobuf never does.

    Example:
        >>> is_artifact(b"\\x08\\x0a\\x12")
        False
    """
    if isinstance(source, bytes):
        return source[:4] == ZIP_MAGIC
    try:
        with open(source, "rb") as fh:
            return fh.read(4) == ZIP_MAGIC
    except OSError:
        return False


def _field(d: dict[str, Any], key: str, where: str) -> Any:
    if key not in d:
        raise ArtifactError(f"{where}: the manifest has no field {key!r}")
    return d[key]


def read_artifact(
    source: str | os.PathLike | bytes, versions: dict[int, str], load: Callable[..., T]
) -> T:
    """Open an artifact, check its format and that its version is one of ``versions``
    (version: what it holds, for the message), and return ``load(manifest, read, where)``:
    ``read(member)`` gives a member's bytes once its checksum is verified, ``where`` names the
    artifact for messages."""
    where = "artifact" if isinstance(source, bytes) else f"artifact {os.fspath(source)}"
    try:
        handle: Any = io.BytesIO(source) if isinstance(source, bytes) else open(source, "rb")  # noqa: SIM115
    except OSError as e:
        raise ArtifactError(f"{where}: cannot open: {e.strerror}") from None
    try:
        with handle, zipfile.ZipFile(handle) as zf:
            names = set(zf.namelist())
            if MANIFEST not in names:
                raise ArtifactError(f"{where}: not a vtac artifact (no {MANIFEST})")
            try:
                manifest = json.loads(_zip_read(zf, MANIFEST, where))
            except ValueError as e:
                raise ArtifactError(f"{where}: {MANIFEST} is not valid JSON ({e})") from None
            if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
                raise ArtifactError(f"{where}: not a vtac artifact (format is not {FORMAT_NAME})")
            version = manifest.get("version")
            if version not in versions:
                if version in ARTIFACT_KINDS:
                    raise ArtifactError(
                        f"{where}: format version {version} holds {ARTIFACT_KINDS[version]}, "
                        f"not {' or '.join(versions.values())}"
                    )
                known = ", ".join(str(v) for v in sorted(ARTIFACT_KINDS))
                if version in RETIRED_VERSIONS:
                    raise ArtifactError(
                        f"{where}: format version {version} ({RETIRED_VERSIONS[version]} whose "
                        f"kernels record no argument shapes) is no longer read; this vtac reads "
                        f"version(s) {known} (compile the model again)"
                    )
                raise ArtifactError(
                    f"{where}: format version {version}, but this vtac reads version(s) "
                    f"{known} (compile the model again)"
                )
            checksums = _field(manifest, "checksums", where)
            if not isinstance(checksums, dict):
                raise ArtifactError(f"{where}: the manifest's checksums are not an object")

            def read(member: str) -> bytes:
                if member not in names or member not in checksums:
                    raise ArtifactError(f"{where}: member {member} is missing")
                data = _zip_read(zf, member, where)
                if _sha256(data) != checksums[member]:
                    raise ArtifactError(f"{where}: member {member} is corrupted (checksum differs)")
                return data

            extra = sorted(names - set(checksums) - {MANIFEST})
            if extra:
                raise ArtifactError(f"{where}: member {extra[0]} is not in the manifest")
            return load(manifest, read, where)
    except zipfile.BadZipFile as e:
        raise ArtifactError(f"{where}: not a readable zip archive ({e})") from None
    except (KeyError, TypeError, ValueError) as e:
        raise ArtifactError(f"{where}: malformed manifest ({type(e).__name__}: {e})") from None


def _zip_read(zf: zipfile.ZipFile, member: str, where: str) -> bytes:
    """A member's bytes; a member flagged as encrypted (RuntimeError), of an unknown compression
    method (NotImplementedError) or whose deflate stream is broken is refused naming it."""
    try:
        return zf.read(member)
    except (RuntimeError, NotImplementedError, EOFError, zlib.error) as e:
        raise ArtifactError(f"{where}: member {member} cannot be read ({e})") from None


def artifact_kind(source: str | os.PathLike | bytes) -> str:
    """What an artifact holds: ``"cpu"`` (a :class:`~compiler.model.program.Program`) or ``"vta"``
    (an accelerator network, :mod:`runtime.vta_artifact`); checks only the manifest."""
    return read_artifact(source, ARTIFACT_KINDS, lambda m, read, where: KIND_OF[m["version"]])


def load_artifact(source: str | os.PathLike | bytes) -> Program:
    """Read an artifact written by :func:`save_artifact` (a path or the file's bytes), of any
    target, and check it before any of its kernels can run: a cpu program's memory plan and
    specs against its kernels (:func:`runtime.program_check.check_program`), an accelerator
    network's as :func:`runtime.vta_artifact.load_vta_artifact` does."""
    from runtime.vta_artifact import load_vta_manifest

    def load(manifest: dict[str, Any], read: Any, where: str) -> Program:
        if manifest["version"] == VTA_FORMAT_VERSION:
            return load_vta_manifest(manifest, read, where)
        return _checked(manifest, read, where)

    return read_artifact(source, ARTIFACT_KINDS, load)


def _checked(manifest: dict[str, Any], read: Any, where: str) -> Program:
    from runtime.program_check import check_program

    prog = _program(manifest, read, where)
    check_program(prog, where)
    check_signatures(prog, where)
    return prog


def check_signatures(prog: Program, where: str) -> None:
    """Refuse ``prog`` unless every cpu kernel's arguments, and every buffer bound to them, are
    exactly what the kernel's compiled code records (:mod:`compiler.targets.cpu.signature`).

    The manifest's copy of the argument shapes is only a description: edited together with the
    placements and specs that name them, it would pass every other check and hand the kernel
    buffers smaller than the extents its code was compiled for. The record inside the code
    cannot be edited without editing the code. Each distinct kernel is compiled here (LLVM or
    the object cache), once per process: the executor then finds it compiled. A placement may
    be a view of another shape (a reshape), so a bound buffer must match the record's dtype and
    byte size, and lie inside its allocation: the arena, the constant's array, the input or
    output of that size.
    """
    records: dict[tuple[str, str], tuple[ArgSignature, ...]] = {}
    for k in prog.kernels:
        if k.target != "cpu":
            continue  # other targets' kernels are not run from an artifact (the executor says so)
        key = (k.symbol, k.code)
        if key not in records:
            records[key] = recorded_signature(k.code, k.symbol, f"{where}: kernel {k.name!r}")
        _check_bindings(prog, k, records[key], where)


def argument_mismatch(said: Sequence[Any], recorded: Sequence[ArgSignature]) -> str | None:
    """How the arguments a manifest gives a host kernel (name, shape, dtype, written or read)
    differ from those its compiled code records, or None."""
    if len(said) != len(recorded):
        return (f"the manifest gives {len(said)} arguments, the compiled code records "
                f"{len(recorded)}")  # fmt: skip
    for arg, rec in zip(said, recorded, strict=True):
        mine = (arg.name, tuple(arg.shape), np.dtype(arg.dtype), arg.is_output)
        if mine != (rec.name, tuple(rec.shape), np.dtype(rec.dtype), rec.is_output):
            use = "written" if arg.is_output else "read"
            return (f"argument {arg.name!r} is {arg.dtype}{list(arg.shape)} ({use}) in the "
                    f"manifest, the compiled code records {rec.name!r} {rec}")  # fmt: skip
    return None


def recorded_signature(code: str, symbol: str, what: str) -> tuple[ArgSignature, ...]:
    """The arguments a host kernel's code records (:mod:`compiler.targets.cpu.signature`),
    compiling it (LLVM or the object cache); code that does not parse, or that records none
    (compiled before kernels carried the record), is refused as ``what``: the one reading of a
    kernel's record for every artifact kind."""
    from compiler.errors import CodegenError
    from compiler.targets.cpu.jit import compiled_signature

    try:
        sig = compiled_signature(code, symbol)
    except CodegenError as e:
        # LLVM's diagnostics span lines (the source line, a caret): the first says it
        first = str(e).strip().splitlines()[0] if str(e).strip() else "invalid"
        raise ArtifactError(f"{what}: {first}") from None
    if sig is None:
        raise ArtifactError(f"{what}: its code ({symbol}) records no argument shapes (compile "
                            "the model again)")  # fmt: skip
    return sig


def _check_bindings(
    prog: Program, k: KernelSpec, sig: tuple[ArgSignature, ...], where: str
) -> None:
    what = f"{where}: kernel {k.name!r}"
    if len(sig) != len(k.tensors):
        raise ArtifactError(
            f"{what}: the manifest gives {len(k.tensors)} tensors, the compiled code records "
            f"{len(sig)} arguments"
        )
    wrong = argument_mismatch(k.args, sig)
    if wrong is not None:
        raise ArtifactError(f"{what}: {wrong}")
    for rec, tensor in zip(sig, k.tensors, strict=True):
        p = prog.placements[tensor]
        dtype = np.dtype(rec.dtype)
        if p.kind == "arena":
            lo, hi, room = p.offset, p.offset + rec.nbytes, f"the {prog.arena_bytes}-byte arena"
            inside = 0 <= lo and hi <= prog.arena_bytes
        elif p.kind == "constant":
            arr = prog.constants[p.key]
            lo, hi, room = 0, rec.nbytes, f"constant {p.key!r} ({arr.dtype}, {arr.nbytes} bytes)"
            inside = arr.dtype == dtype and arr.nbytes == rec.nbytes
        else:
            specs = prog.inputs if p.kind == "input" else prog.outputs
            spec = next(s for s in specs if s.name == p.key)
            lo, hi = 0, rec.nbytes
            room = f"{p.kind} {p.key!r} ({spec.dtype}, {spec.nbytes} bytes)"
            inside = np.dtype(spec.dtype) == dtype and spec.nbytes == rec.nbytes
        if np.dtype(p.dtype) != dtype or p.nbytes != rec.nbytes or not inside:
            raise ArtifactError(
                f"{what}: argument {rec.name!r} was compiled for {rec}, tensor {tensor!r} is "
                f"{p.kind} {p.dtype}{list(p.shape)} ({p.nbytes} bytes) at bytes {lo}..{hi} of "
                f"{room}"
            )


def _program(manifest: dict[str, Any], read: Any, where: str) -> Program:
    codes: dict[str, str] = {}
    kernels = []
    for k in _field(manifest, "kernels", where):
        member = k["code"]
        if member not in codes:
            codes[member] = read(member).decode()
        kernels.append(
            KernelSpec(
                name=str(k["name"]),
                ops=tuple(str(o) for o in k["ops"]),
                target=str(k["target"]),
                symbol=str(k["symbol"]),
                args=tuple(KernelArg.from_json(a) for a in k["args"]),
                tensors=tuple(str(t) for t in k["tensors"]),
                code=codes[member],
            )
        )
    constants: dict[str, np.ndarray] = {}
    for c in _field(manifest, "constants", where):
        data = read(c["member"])
        try:
            constants[str(c["name"])] = np.load(io.BytesIO(data), allow_pickle=False)
        except ValueError as e:
            member = c["member"]
            raise ArtifactError(f"{where}: member {member} is not an npy array ({e})") from None
    memory = _field(manifest, "memory", where)
    return Program(
        name=str(_field(manifest, "name", where)),
        target=str(_field(manifest, "target", where)),
        num_threads=int(_field(manifest, "num_threads", where)),
        inputs=tuple(TensorSpec.from_json(s) for s in _field(manifest, "inputs", where)),
        outputs=tuple(TensorSpec.from_json(s) for s in _field(manifest, "outputs", where)),
        placements={
            str(t): Placement.from_json(p) for t, p in _field(manifest, "placements", where).items()
        },
        kernels=tuple(kernels),
        constants=constants,
        arena_bytes=int(_field(manifest, "arena_bytes", where)),
        memory=MemoryStats(int(memory["peak_bytes"]), int(memory["naive_bytes"])),
        graph_text=read("graph.txt").decode(),
        output_tensors={str(k): str(v) for k, v in manifest.get("output_tensors", {}).items()},
    )
