"""The program file (ISA.md §4): the one hand-off between the compiler and its consumers.

A program is a NumPy ``.npz`` archive holding the initial DRAM image (instructions, micro-ops,
weights, inputs and space for outputs), where the instructions are, the hardware config it was
built for, and a symbol table naming the tensors in DRAM. It loads with ``allow_pickle=False``.

Example:
    >>> import numpy as np, tempfile, os
    >>> from isa.config import load_config
    >>> from isa.insn import Finish
    >>> prog = Program.build(load_config("default"), [Finish()], dram_bytes=64)
    >>> path = os.path.join(tempfile.mkdtemp(), "p.npz")
    >>> prog.save(path); load_program(path).insn_count
    1
"""

from __future__ import annotations

import dataclasses
import json
import os
import zipfile
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .config import HwConfig, parse_json
from .encoding import INSN_BYTES, InsnBlock, decode_fields, decode_stream, encode_stream
from .errors import ConfigError, ProgramError
from .insn import Insn
from .outputs import OutputFiles

#: Version of the contract (ISA.md) this package implements.
ISA_VERSION = 1
FORMAT_NAME = "vta-program"
ROLES = ("input", "output", "param")
#: numpy dtype kinds a symbol may have: bool, signed and unsigned integers, floats, complex.
DTYPE_KINDS = "biufc"
#: Most axes a symbol's shape may have (numpy's own limit).
MAX_NDIM = 32
#: Largest DRAM image a program file may hold (bytes, 1 GiB): far above any real program, and
#: a bound on what loading a file may allocate.
MAX_DRAM_BYTES = 1 << 30
#: Most instructions a program may have (4M: a ResNet layer compiles to thousands; every tool
#: holds a row of a few hundred bytes per instruction).
MAX_INSNS = 1 << 22
_KEYS = ("format", "isa_version", "config", "dram", "insn_base", "insn_count", "symbols")


@dataclasses.dataclass(frozen=True)
class Symbol:
    """A named tensor in DRAM: ``offset`` in bytes, numpy ``dtype``, ``shape``, layout, role."""

    name: str
    offset: int
    dtype: str
    shape: tuple[int, ...]
    layout: str = ""
    role: str = "param"

    @property
    def nbytes(self) -> int:
        count = 1
        for dim in self.shape:
            count *= int(dim)
        return count * np.dtype(self.dtype).itemsize

    def check(self) -> None:
        """Raise :class:`ProgramError` naming the symbol when its dtype or shape is unusable.

        A tensor has a fixed-size numeric dtype (bool, integers, floats, complex; no structured,
        string, object or date types) and at most 32 dimensions, each of at least 1.

        >>> Symbol("x", 0, "int8", (2, 0)).check()
        Traceback (most recent call last):
        ...
        isa.errors.ProgramError: symbol 'x': shape (2, 0) has a dimension below 1 (axis 1)
        """
        where = f"symbol {self.name!r}"
        try:
            dt = np.dtype(self.dtype)
        except (TypeError, ValueError):
            raise ProgramError(f"{where}: dtype {self.dtype!r} is not a numpy dtype") from None
        if dt.kind not in DTYPE_KINDS or dt.fields is not None or dt.subdtype is not None:
            raise ProgramError(
                f"{where}: dtype {self.dtype!r} is not a fixed-size numeric dtype "
                "(bool, int, uint, float or complex)"
            )
        if not isinstance(self.offset, int) or isinstance(self.offset, bool):
            raise ProgramError(f"{where}: offset {self.offset!r} is not an integer")
        if len(self.shape) > MAX_NDIM:
            raise ProgramError(f"{where}: shape has {len(self.shape)} axes (at most {MAX_NDIM})")
        for axis, dim in enumerate(self.shape):
            if not isinstance(dim, int) or isinstance(dim, bool):
                raise ProgramError(f"{where}: shape axis {axis} is {dim!r}, not an integer")
            if dim < 1:
                raise ProgramError(
                    f"{where}: shape {self.shape} has a dimension below 1 (axis {axis})"
                )

    def to_dict(self) -> dict[str, Any]:
        return {
            "offset": self.offset,
            "dtype": self.dtype,
            "shape": list(self.shape),
            "layout": self.layout,
            "role": self.role,
        }

    @classmethod
    def from_dict(cls, name: str, d: Mapping[str, Any]) -> Symbol:
        where = f"symbol {name!r}"
        if not isinstance(d, Mapping):
            raise ProgramError(f"{where}: entry must be an object, got {type(d).__name__}")
        for key in ("offset", "dtype", "shape"):
            if key not in d:
                raise ProgramError(f"{where}: missing key {key!r}")
        unknown = sorted(set(d) - {"offset", "dtype", "shape", "layout", "role"})
        if unknown:
            raise ProgramError(f"{where}: unknown key(s) {unknown}")
        shape = d["shape"]
        if not isinstance(shape, (list, tuple)):
            raise ProgramError(f"{where}: shape must be a list of integers, got {shape!r}")
        for key in ("dtype", "layout", "role"):
            if key in d and not isinstance(d[key], str):
                raise ProgramError(f"{where}: {key} must be a string, got {d[key]!r}")
        sym = cls(
            name=name,
            offset=d["offset"],
            dtype=d["dtype"],
            shape=tuple(shape),
            layout=d.get("layout", ""),
            role=d.get("role", "param"),
        )
        sym.check()
        return sym


@dataclasses.dataclass
class Program:
    """An accelerator program: config, DRAM image, instruction location and symbols."""

    config: HwConfig
    dram: np.ndarray
    insn_base: int
    insn_count: int
    symbols: dict[str, Symbol] = dataclasses.field(default_factory=dict)
    isa_version: int = ISA_VERSION

    def __post_init__(self) -> None:
        self.validate()

    # ---- construction -------------------------------------------------------------------
    @classmethod
    def build(
        cls,
        config: HwConfig,
        insns: Sequence[Insn | InsnBlock],
        *,
        dram_bytes: int | None = None,
        insn_base: int = 0,
        data: Mapping[int, np.ndarray] | None = None,
        symbols: Sequence[Symbol] | Mapping[str, Symbol] = (),
    ) -> Program:
        """Lay out a program: instructions at ``insn_base``, raw ``data`` blobs at byte offsets."""
        code = encode_stream(insns, config)
        end = insn_base + code.size
        blobs = {
            int(k): np.ascontiguousarray(v).reshape(-1).view(np.uint8)
            for k, v in (data or {}).items()
        }
        syms = dict(symbols) if isinstance(symbols, Mapping) else {s.name: s for s in symbols}
        need = max(
            [end]
            + [o + b.size for o, b in blobs.items()]
            + [s.offset + s.nbytes for s in syms.values()]
        )
        size = need if dram_bytes is None else dram_bytes
        if size < need:
            raise ProgramError(f"dram_bytes={size} is smaller than the {need} bytes laid out")
        dram = np.zeros(size, np.uint8)
        dram[insn_base:end] = code
        for off, blob in blobs.items():
            dram[off : off + blob.size] = blob
        return cls(config, dram, insn_base, code.size // INSN_BYTES, syms)

    # ---- validation ---------------------------------------------------------------------
    def validate(self) -> None:
        if self.isa_version != ISA_VERSION:
            raise ProgramError(
                f"program built for isa_version {self.isa_version}; this tool supports "
                f"{ISA_VERSION}"
            )
        d = self.dram
        if not isinstance(d, np.ndarray) or d.dtype != np.uint8 or d.ndim != 1:
            raise ProgramError("field 'dram' must be a 1-D uint8 array")
        if d.size > MAX_DRAM_BYTES:
            raise ProgramError(
                f"the DRAM image has {d.size} bytes, more than the maximum of {MAX_DRAM_BYTES}"
            )
        if self.insn_base < 0 or self.insn_base % INSN_BYTES:
            raise ProgramError(f"insn_base={self.insn_base} is not a non-negative multiple of 16")
        if self.insn_count < 0:
            raise ProgramError(f"insn_count={self.insn_count} is negative")
        if self.insn_count > MAX_INSNS:
            raise ProgramError(
                f"insn_count={self.insn_count} is more than the {MAX_INSNS} instructions a "
                "program may have"
            )
        if self.insn_base + self.insn_count * INSN_BYTES > d.size:
            raise ProgramError(
                f"instructions [{self.insn_base}, "
                f"{self.insn_base + self.insn_count * INSN_BYTES}) run past the "
                f"{d.size}-byte DRAM image"
            )
        for name, s in self.symbols.items():
            if s.role not in ROLES:
                raise ProgramError(f"symbol {name!r}: role {s.role!r} is not one of {ROLES}")
            s.check()
            if s.offset < 0 or s.offset + s.nbytes > d.size:
                raise ProgramError(
                    f"symbol {name!r}: bytes [{s.offset}, {s.offset + s.nbytes}) run past the "
                    f"{d.size}-byte DRAM image"
                )

    # ---- access -------------------------------------------------------------------------
    @property
    def insn_bytes(self) -> np.ndarray:
        return self.dram[self.insn_base : self.insn_base + self.insn_count * INSN_BYTES]

    def instructions(self) -> list[Insn]:
        """Decode the instruction stream into objects."""
        return decode_stream(self.insn_bytes, self.config)

    def fields(self) -> dict[str, np.ndarray]:
        """Batch-decode the instruction stream (see :func:`isa.encoding.decode_fields`)."""
        return decode_fields(self.insn_bytes, self.config)

    def run_fields(self) -> dict[str, np.ndarray]:
        """:meth:`fields` as int64, up to and including the first FINISH: the instructions a
        run executes (each once)."""
        from .insn import Opcode

        f = self.fields()
        finish = np.flatnonzero(f["opcode"] == int(Opcode.FINISH))
        end = int(finish[0]) + 1 if finish.size else f["opcode"].size
        return {k: v[:end].astype(np.int64) for k, v in f.items()}

    def uop_counts(self) -> dict[str, int]:
        """Micro-ops the compute module issues, by kind: ``gemm`` (without reset), ``reset``,
        ``alu`` (tensor operand, every ``alu_ii`` cycles) and ``alu_imm`` (immediate operand,
        every ``alu_imm_ii``). Each instruction up to FINISH runs once, so the stream alone
        decides them (:func:`isa.energy.count_events` counts every event of the run).

        Example:
            >>> from isa import Alu, Finish, load_config
            >>> alu = Alu(use_imm=True, uop_begin=0, uop_end=2, iter_out=3, iter_in=1)
            >>> Program.build(load_config("default"), [alu, Finish()]).uop_counts()["alu_imm"]
            6
        """
        from .energy import count_events

        ev = count_events(self)
        return {
            "gemm": ev.gemm_uops,
            "reset": ev.gemm_reset_uops,
            "alu": ev.alu_reg_uops,
            "alu_imm": ev.alu_imm_uops,
        }

    def dram_footprint(self) -> dict[str, int]:
        """Distinct DRAM bytes the stream's transfers touch, each byte counted once however
        often it moves: by LOAD memory type (``uop``, ``wgt``, ``inp``, ``acc``, ``acc8``) and
        ``out`` for STORE. Padding moves nothing and is not counted. Every schedule of the same
        operator moves at least the bytes of its tensors that it reads and writes, so these
        bound the DRAM port's beats (bytes over ``bus_bytes``) from below; ``acc`` and ``acc8``
        (with ``uop``) are the compute module's own transfers (docs/timing.md §5 routing).

        Example:
            >>> from isa import Load, MemType, Finish, load_config
            >>> cfg = load_config("default")
            >>> a = Load(memory_type=MemType.ACC8, dram_base=0, y_size=2, x_size=4, x_stride=4)
            >>> b = Load(memory_type=MemType.ACC8, dram_base=6, y_size=1, x_size=4, x_stride=4)
            >>> fp = Program.build(cfg, [a, b, Finish()]).dram_footprint()
            >>> fp["acc8"] == 10 * cfg.mem_elem_bytes(int(MemType.ACC8))  # elements 0-9 once
            True
        """
        from .insn import MemType, Opcode

        f = self.run_fields()
        op = f["opcode"]
        moves = (f["y_size"] > 0) & (f["x_size"] > 0)
        out: dict[str, int] = {}
        for kind, sel in [
            *((m.name.lower(), (op == int(Opcode.LOAD)) & (f["memory_type"] == int(m)))
              for m in MemType if m is not MemType.OUT),
            ("out", op == int(Opcode.STORE)),
        ]:  # fmt: skip
            sel = sel & moves
            if kind == "out":
                elem = self.config.mem_elem_bytes(int(MemType.OUT))
            else:
                elem = self.config.mem_elem_bytes(int(MemType[kind.upper()]))
            y, x = f["y_size"][sel], f["x_size"][sel]
            rows = np.repeat(np.arange(y.size), y)
            first = np.arange(rows.size) - np.repeat(np.cumsum(y) - y, y)
            start = (f["dram_base"][sel][rows] + first * f["x_stride"][sel][rows]) * elem
            stop = start + x[rows] * elem
            order = np.argsort(start, kind="stable")
            start, stop = start[order], stop[order]
            reach = np.maximum.accumulate(stop)
            before = np.concatenate([[np.iinfo(np.int64).min], reach[:-1]])
            out[kind] = int(np.maximum(stop - np.maximum(start, before), 0).sum())
        return out

    def read(self, name: str, dram: np.ndarray | None = None) -> np.ndarray:
        """Tensor ``name`` from ``dram`` (default: the initial image), as its dtype and shape."""
        s = self._symbol(name)
        image = self.dram if dram is None else dram
        raw = np.asarray(image, np.uint8)[s.offset : s.offset + s.nbytes]
        return raw.view(np.dtype(s.dtype)).reshape(s.shape).copy()

    def write(self, name: str, value: np.ndarray) -> None:
        """Overwrite tensor ``name`` in the DRAM image; shape must match, dtype is cast."""
        s = self._symbol(name)
        arr = np.asarray(value)
        if arr.shape != s.shape:
            raise ProgramError(f"symbol {name!r}: shape {arr.shape} != declared {s.shape}")
        raw = np.ascontiguousarray(arr.astype(s.dtype)).reshape(-1).view(np.uint8)
        self.dram[s.offset : s.offset + s.nbytes] = raw

    def _symbol(self, name: str) -> Symbol:
        try:
            return self.symbols[name]
        except KeyError:
            known = ", ".join(self.symbols) or "none"
            raise ProgramError(f"no symbol {name!r} in the program (symbols: {known})") from None

    def inputs(self) -> list[str]:
        return [n for n, s in self.symbols.items() if s.role == "input"]

    def outputs(self) -> list[str]:
        return [n for n, s in self.symbols.items() if s.role == "output"]

    # ---- files --------------------------------------------------------------------------
    def to_arrays(self) -> dict[str, np.ndarray]:
        syms = {n: s.to_dict() for n, s in self.symbols.items()}
        return {
            "format": np.array(FORMAT_NAME),
            "isa_version": np.array(self.isa_version, dtype=np.int64),
            "config": np.array(self.config.to_json()),
            "dram": self.dram,
            "insn_base": np.array(self.insn_base, dtype=np.int64),
            "insn_count": np.array(self.insn_count, dtype=np.int64),
            "symbols": np.array(json.dumps(syms, sort_keys=True)),
        }

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the program file atomically (a failed write leaves no partial file), with the
        usual permissions; :class:`isa.OutputError` names a path that cannot be written."""
        with OutputFiles() as out:
            self.save_to(out.reserve(path, "program file"))

    def save_to(self, path: str | os.PathLike[str]) -> None:
        """Write the program file to ``path`` as it is (see :class:`isa.outputs.OutputFiles`
        for writing it together with other outputs, all or none)."""
        arrays: dict[str, Any] = self.to_arrays()
        with open(path, "wb") as f:
            np.savez(f, **arrays)

    def copy(self) -> Program:
        return dataclasses.replace(self, dram=self.dram.copy(), symbols=dict(self.symbols))


#: What reading a corrupt .npz raises: zipfile raises RuntimeError for a member flagged as
#: encrypted and NotImplementedError for an unknown compression method, zlib its own error for
#: a broken deflate stream; numpy ValueError, EOFError or UnicodeError for a broken array.
_UNREADABLE = (zipfile.BadZipFile, EOFError, OSError, ValueError, UnicodeError, RuntimeError,
               NotImplementedError, zlib.error)  # fmt: skip


def _scalar(arrays: Mapping[str, np.ndarray], key: str, kind: str, where: str) -> Any:
    a = arrays[key]
    if a.shape != ():
        raise ProgramError(f"{where}: key {key!r} must be a 0-d array, has shape {a.shape}")
    if kind == "str":
        if a.dtype.kind != "U":
            raise ProgramError(f"{where}: key {key!r} must be a string, is {a.dtype}")
        return str(a[()])
    if a.dtype.kind not in "iu":
        raise ProgramError(f"{where}: key {key!r} must be an integer, is {a.dtype}")
    return int(a[()])


def program_from_arrays(arrays: Mapping[str, np.ndarray], where: str = "program") -> Program:
    """Validate the keys of a program archive and build the :class:`Program`."""
    missing = [k for k in _KEYS if k not in arrays]
    if missing:
        raise ProgramError(f"{where}: missing key(s) {missing}")
    fmt = _scalar(arrays, "format", "str", where)
    if fmt != FORMAT_NAME:
        raise ProgramError(f"{where}: format is {fmt!r}, expected {FORMAT_NAME!r}")
    version = _scalar(arrays, "isa_version", "int", where)
    if version != ISA_VERSION:
        raise ProgramError(
            f"{where}: built for isa_version {version}; this tool supports isa_version "
            f"{ISA_VERSION}"
        )
    try:
        config = HwConfig.from_json(_scalar(arrays, "config", "str", where))
    except ConfigError as e:
        raise ProgramError(f"{where}: unsupported config: {e}") from None
    sym_text = _scalar(arrays, "symbols", "str", where)
    sym_json = parse_json(sym_text, f"{where}: key 'symbols'", ProgramError)
    if not isinstance(sym_json, dict):
        raise ProgramError(f"{where}: key 'symbols' must be a JSON object")
    try:
        symbols = {n: Symbol.from_dict(n, d) for n, d in sym_json.items()}
    except ProgramError as e:
        raise ProgramError(f"{where}: {e}") from None
    dram = arrays["dram"]
    if dram.dtype != np.uint8 or dram.ndim != 1:
        raise ProgramError(
            f"{where}: key 'dram' must be a 1-D uint8 array, is {dram.dtype}{list(dram.shape)}"
        )
    try:
        return Program(
            config,
            np.array(dram, np.uint8),
            _scalar(arrays, "insn_base", "int", where),
            _scalar(arrays, "insn_count", "int", where),
            symbols,
            version,
        )
    except ProgramError as e:
        raise ProgramError(f"{where}: {e}") from None


def load_program(path: str | os.PathLike[str]) -> Program:
    """Read and validate a program file; errors name the file and what is wrong with it."""
    where = str(path)
    if Path(path).is_dir():
        raise ProgramError(f"{where}: is a directory, not a program file")
    try:
        with open(path, "rb") as f:
            magic = f.read(6)
    except FileNotFoundError:
        raise ProgramError(f"{where}: no such file") from None
    except OSError as e:
        raise ProgramError(f"{where}: cannot read it ({e.strerror or e})") from None
    if not magic.startswith((b"PK\x03\x04", b"PK\x05\x06", b"\x93NUMPY")):
        raise ProgramError(
            f"{where}: not a program file (a NumPy .npz archive, ISA.md §4); it starts with "
            f"{magic!r}"
        )
    try:
        loaded = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise ProgramError(f"{where}: no such file") from None
    except _UNREADABLE as e:
        raise ProgramError(
            f"{where}: not a readable program file (truncated or corrupt .npz: {e})"
        ) from None
    if not isinstance(loaded, np.lib.npyio.NpzFile):
        raise ProgramError(f"{where}: a single .npy array, not a program archive (.npz, ISA.md §4)")
    with loaded as z:
        members = z.zip.infolist() if z.zip is not None else []
        total = sum(info.file_size for info in members)
        if total > MAX_DRAM_BYTES + (1 << 20):
            raise ProgramError(
                f"{where}: the archive holds {total} bytes uncompressed, more than the "
                f"{MAX_DRAM_BYTES}-byte DRAM image a program may have"
            )
        arrays = {}
        for k in z.files:
            try:
                arrays[k] = z[k]
            except _UNREADABLE as e:
                raise ProgramError(
                    f"{where}: member {k!r} is not a readable array (truncated or corrupt: {e})"
                ) from None
    return program_from_arrays(arrays, where)


def as_program(prog: Program | str | os.PathLike[str]) -> Program:
    """A :class:`Program` from a program object or a path to a program file."""
    return prog if isinstance(prog, Program) else load_program(prog)
