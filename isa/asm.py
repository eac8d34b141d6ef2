"""The assembler's text form: write programs by hand, read them back (docs/assembly.md).

``assemble(text)`` builds a :class:`~isa.program.Program`; ``disassemble(program)`` prints one
whose re-assembly gives the same file: the same DRAM image, instruction location, config and
symbols.

Example:
    >>> prog = assemble('''
    ... .config default
    ... .text 0
    ...   load inp sram_base=0 dram_base=@A y_size=1 x_size=4 x_stride=4 push_next
    ...   load uop sram_base=0 dram_base=@K x_size=1 x_stride=1 pop_prev
    ...   finish
    ... .uops auto name=K
    ...   0 0 0
    ... .tensor A input int8 4,4 auto
    ...   random 1
    ... ''')
    >>> [i.opcode.name for i in prog.instructions()]
    ['LOAD', 'LOAD', 'FINISH']
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from typing import Any

import numpy as np

from .config import HwConfig, load_config, preset_names
from .encoding import INSN_BYTES, decode, decode_uops, encode, encode_uops
from .errors import AsmError, ConfigError, EncodingError
from .insn import (
    DEP_FLAGS,
    Alu,
    AluOp,
    Finish,
    Gemm,
    Insn,
    Load,
    MemType,
    Store,
)
from .program import ROLES, Program, Symbol

_ALIGN = 64
_FLAG_WORDS = {f.removesuffix("_dep"): f for f in DEP_FLAGS}
_MEM_NAMES = {m.name.lower(): m for m in MemType}
_ALU_NAMES = {o.name.lower(): o for o in AluOp}
_MEM_FIELDS = (
    "sram_base",
    "dram_base",
    "y_size",
    "x_size",
    "x_stride",
    "y_pad_0",
    "y_pad_1",
    "x_pad_0",
    "x_pad_1",
)
_LOOP_FIELDS = (
    "uop_begin",
    "uop_end",
    "iter_out",
    "iter_in",
    "dst_factor_out",
    "dst_factor_in",
    "src_factor_out",
    "src_factor_in",
)
_GEMM_FIELDS = _LOOP_FIELDS + ("wgt_factor_out", "wgt_factor_in")
_ALU_FIELDS = _LOOP_FIELDS + ("use_imm", "imm")
_DEFAULTS = {"y_size": 1, "iter_out": 1, "iter_in": 1}


# ---- parsing ----------------------------------------------------------------------------
@dataclasses.dataclass
class _Section:
    kind: str  # text | uops | tensor | bytes
    line: int
    offset: int | None  # None = auto
    name: str = ""
    role: str = ""
    dtype: str = ""
    shape: tuple[int, ...] = ()
    layout: str = ""
    body: list[tuple[int, str]] = dataclasses.field(default_factory=list)
    data: np.ndarray | None = None  # bytes once built

    @property
    def at(self) -> int:
        """The byte offset, once placed."""
        assert self.offset is not None, "section not placed yet"
        return self.offset

    @property
    def raw(self) -> np.ndarray:
        """The section's bytes, once built."""
        assert self.data is not None, "section not built yet"
        return self.data


def _lines(text: str) -> Iterator[tuple[int, str]]:
    for no, raw in enumerate(text.splitlines(), start=1):
        line = re.split(r"[;#]", raw, maxsplit=1)[0].strip()
        if line:
            yield no, line


def _int(tok: str, line: int, what: str) -> int:
    try:
        return int(tok, 0)
    except ValueError:
        raise AsmError(f"{what}: {tok!r} is not an integer", line=line) from None


def _offset(tok: str, line: int) -> int | None:
    if tok == "auto":
        return None
    off = _int(tok, line, "offset")
    if off < 0:
        raise AsmError(f"offset {off} is negative", line=line)
    return off


def _parse_directive(no: int, line: str) -> _Section | tuple[str, str]:
    head, _, rest = line.partition(" ")
    rest = rest.strip()
    toks = rest.split()
    if head in (".config", ".dram"):
        if not rest:
            raise AsmError(f"{head} needs an argument", line=no)
        return head, rest
    if head == ".text":
        off = _offset(toks[0], no) if toks else 0
        return _Section("text", no, off)
    if head in (".uops", ".bytes"):
        if not toks:
            raise AsmError(f"{head} needs an offset (a number or 'auto')", line=no)
        sec = _Section(head[1:], no, _offset(toks[0], no))
        for t in toks[1:]:
            if t.startswith("name="):
                sec.name = t[5:]
            else:
                raise AsmError(f"{head}: unexpected {t!r} (only name=LABEL)", line=no)
        return sec
    if head == ".tensor":
        if len(toks) < 5:
            raise AsmError(".tensor needs: NAME ROLE DTYPE SHAPE OFFSET [layout=L]", line=no)
        name, role, dtype, shape_s, off_s = toks[:5]
        if role not in ROLES:
            raise AsmError(f".tensor {name}: role {role!r} is not one of {ROLES}", line=no)
        try:
            np.dtype(dtype)
        except TypeError:
            raise AsmError(f".tensor {name}: {dtype!r} is not a dtype", line=no) from None
        shape = tuple(_int(s, no, f".tensor {name} shape") for s in shape_s.split(",") if s)
        sec = _Section("tensor", no, _offset(off_s, no), name, role, dtype, shape)
        for t in toks[5:]:
            if t.startswith("layout="):
                sec.layout = t[7:]
            else:
                raise AsmError(f".tensor {name}: unexpected {t!r}", line=no)
        return sec
    raise AsmError(f"unknown directive {head!r}", line=no)


def _parse_insn(no: int, line: str, resolve) -> Insn | int:
    toks = line.split()
    op = toks[0].lower()
    args = toks[1:]
    if op == "raw":
        if len(args) != 1:
            raise AsmError("raw takes one 128-bit word: raw 0x<32 hex digits>", line=no)
        word = _int(args[0], no, "raw word")
        if not 0 <= word < 1 << (8 * INSN_BYTES):
            raise AsmError(f"raw word {args[0]} does not fit 128 bits", line=no)
        return word
    kw: dict[str, Any] = {}
    allowed: tuple[str, ...]
    cls: type[Insn]
    if op in ("load", "store"):
        cls = Load if op == "load" else Store
        if args and "=" not in args[0] and args[0] not in _FLAG_WORDS:
            mt = args.pop(0).lower()
            if mt not in _MEM_NAMES:
                raise AsmError(
                    f"{op}: unknown memory type {mt!r} ({', '.join(_MEM_NAMES)})", line=no
                )
            kw["memory_type"] = _MEM_NAMES[mt]
        elif op == "load":
            raise AsmError("load needs a memory type: load inp|wgt|uop|acc|acc8 ...", line=no)
        allowed = _MEM_FIELDS
    elif op == "gemm":
        cls, allowed = Gemm, _GEMM_FIELDS
    elif op == "alu":
        if not args or args[0].lower() not in _ALU_NAMES:
            raise AsmError(f"alu needs an operation: alu {'|'.join(_ALU_NAMES)} ...", line=no)
        cls, allowed = Alu, _ALU_FIELDS
        kw["alu_opcode"] = _ALU_NAMES[args.pop(0).lower()]
    elif op == "finish":
        cls, allowed = Finish, ()
    else:
        raise AsmError(f"unknown instruction {toks[0]!r}", line=no)
    for tok in args:
        key, eq, val = tok.partition("=")
        if not eq:
            if key in _FLAG_WORDS:
                kw[_FLAG_WORDS[key]] = True
            elif key == "reset" and cls in (Gemm, Alu):
                kw["reset"] = True
            elif key == "use_imm" and cls is Alu:
                kw["use_imm"] = True
            else:
                raise AsmError(f"{op}: unknown flag {key!r}", line=no)
            continue
        if key in DEP_FLAGS or key == "reset":
            kw[key] = bool(_int(val, no, key))
        elif key in allowed:
            if val.startswith("@"):
                if key != "dram_base":
                    raise AsmError(f"{op}: only dram_base takes a @symbol", line=no)
                kw[key] = resolve(val, kw.get("memory_type", MemType.OUT), no)
            else:
                kw[key] = _int(val, no, f"{op} field {key}")
        else:
            raise AsmError(f"{op}: unknown field {key!r} (fields: {', '.join(allowed)})", line=no)
    if cls is Alu:
        if "imm" in kw and "use_imm" not in kw:
            kw["use_imm"] = True
        kw["use_imm"] = bool(kw.get("use_imm", False))
    for k, v in _DEFAULTS.items():
        if k in allowed:
            kw.setdefault(k, v)
    return cls(**kw)


def _section_bytes(sec: _Section, cfg: HwConfig) -> np.ndarray:
    if sec.kind == "uops":
        rows = []
        for no, line in sec.body:
            vals = [_int(t, no, "uop") for t in line.split()]
            if len(vals) != 3:
                raise AsmError("a micro-op line is 'dst src wgt'", line=no)
            rows.append(vals)
        try:
            uop_words = encode_uops(np.asarray(rows, np.int64).reshape(-1, 3), cfg)
        except EncodingError as e:
            raise AsmError(str(e), line=sec.line) from None
        return uop_words.view(np.uint8)
    if sec.kind == "bytes":
        vals = [
            _int(t, no, "byte") if t.startswith("0x") else _int("0x" + t, no, "byte")
            for no, line in sec.body
            for t in line.split()
        ]
        if any(not 0 <= v <= 255 for v in vals):
            raise AsmError(".bytes values must be 00..ff", line=sec.line)
        return np.asarray(vals, np.uint8)
    # tensor
    dt = np.dtype(sec.dtype)
    count = int(np.prod(sec.shape, dtype=np.int64))
    words = [t for _, line in sec.body for t in line.split()]
    if not words or words == ["zeros"]:
        arr = np.zeros(count, dt)
    elif words[0] == "random":
        if len(words) not in (2, 4):
            raise AsmError(f".tensor {sec.name}: 'random SEED [LO HI]'", line=sec.line)
        seed = _int(words[1], sec.line, "seed")
        lo, hi = (
            (_int(words[2], sec.line, "lo"), _int(words[3], sec.line, "hi"))
            if len(words) == 4
            else (-128, 127)
        )
        rng = np.random.default_rng(seed)
        if dt.kind == "f":
            arr = rng.uniform(lo, hi, count).astype(dt)
        else:
            arr = rng.integers(lo, hi, count, endpoint=True).astype(dt)
    else:
        if len(words) != count:
            raise AsmError(
                f".tensor {sec.name}: {len(words)} values for shape {sec.shape} ({count})",
                line=sec.line,
            )
        try:
            if dt.kind == "f":
                arr = np.asarray([float(w) for w in words], dt)
            else:
                ints = [int(w, 0) for w in words]
                info = np.iinfo(dt)
                bad = [v for v in ints if not info.min <= v <= info.max]
                if bad:
                    raise AsmError(f".tensor {sec.name}: {bad[0]} does not fit {dt}", line=sec.line)
                arr = np.asarray(ints, dt)
        except ValueError as e:
            raise AsmError(f".tensor {sec.name}: {e}", line=sec.line) from None
    return arr.reshape(-1).view(np.uint8)


def assemble(text: str, *, source: str | None = None, config: HwConfig | None = None) -> Program:
    """Assemble the text form into a :class:`Program` (see docs/assembly.md)."""
    try:
        return _assemble(text, config)
    except AsmError as e:
        if source is not None and e.source is None:
            raise AsmError(e.message, line=e.line, source=source) from None
        raise


def _assemble(text: str, config: HwConfig | None) -> Program:
    cfg = config
    dram_size: int | None = None
    sections: list[_Section] = []
    current: _Section | None = None
    for no, line in _lines(text):
        if line.startswith("."):
            d = _parse_directive(no, line)
            if isinstance(d, tuple):
                head, arg = d
                if head == ".config":
                    try:
                        cfg = HwConfig.from_json(arg) if arg.startswith("{") else load_config(arg)
                    except ConfigError as e:
                        raise AsmError(str(e), line=no) from None
                else:
                    dram_size = _int(arg, no, ".dram")
                current = None
                continue
            sections.append(d)
            current = d
            continue
        if current is None:
            raise AsmError("a line outside any section (.text, .uops, .tensor, .bytes)", line=no)
        current.body.append((no, line))
    if cfg is None:
        raise AsmError("no .config directive (e.g. '.config default')")
    texts = [s for s in sections if s.kind == "text"]
    if len(texts) != 1:
        raise AsmError(f"a program has exactly one .text section, found {len(texts)}")
    text_sec = texts[0]
    names = [s.name for s in sections if s.name]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise AsmError(f"name(s) defined twice: {sorted(dup)}")
    # Build the data sections, then place the ones marked 'auto' after everything placed.
    for s in sections:
        if s.kind != "text":
            s.data = _section_bytes(s, cfg)
    n_insns = len(text_sec.body)
    text_sec.data = np.zeros(n_insns * INSN_BYTES, np.uint8)
    if text_sec.offset is None or text_sec.offset % INSN_BYTES:
        raise AsmError(
            f".text offset {text_sec.offset} is not a multiple of 16", line=text_sec.line
        )
    end = max([s.at + s.raw.size for s in sections if s.offset is not None], default=0)
    for s in sections:
        if s.offset is None:
            s.offset = -(-end // _ALIGN) * _ALIGN
            end = s.at + s.raw.size
    labels = {s.name: s.at for s in sections if s.name}

    def resolve(ref: str, memory_type: MemType, no: int) -> int:
        name, plus, extra = ref[1:].partition("+")
        if name not in labels:
            raise AsmError(f"unknown symbol {ref!r}", line=no)
        elem = cfg.mem_elem_bytes(memory_type)
        if labels[name] % elem:
            raise AsmError(
                f"symbol {name!r} at byte {labels[name]} is not aligned to the "
                f"{memory_type.name} element ({elem} bytes)",
                line=no,
            )
        return labels[name] // elem + (_int(extra, no, "offset") if plus else 0)

    code = []
    for no, line in text_sec.body:
        insn = _parse_insn(no, line, resolve)
        if isinstance(insn, int):
            code.append(insn.to_bytes(INSN_BYTES, "little"))
            continue
        try:
            code.append(encode(insn, cfg))
        except EncodingError as e:
            raise AsmError(str(e), line=no) from None
    text_sec.data = np.frombuffer(b"".join(code), np.uint8)
    size = max(s.at + s.raw.size for s in sections)
    if dram_size is not None:
        if dram_size < size:
            raise AsmError(f".dram {dram_size} is smaller than the {size} bytes laid out")
        size = dram_size
    dram = np.zeros(size, np.uint8)
    owner = np.full(size, -1, np.int32)
    for idx, s in enumerate(sections):
        lo, hi = s.at, s.at + s.raw.size
        clash = owner[lo:hi] >= 0
        if clash.any() and not np.array_equal(dram[lo:hi][clash], s.raw[clash]):
            other = sections[int(owner[lo:hi][clash][0])]
            raise AsmError(
                f"{s.kind} section at byte {lo} overlaps the {other.kind} section of line "
                f"{other.line} with different bytes",
                line=s.line,
            )
        dram[lo:hi] = s.raw
        owner[lo:hi] = idx
    symbols = {
        s.name: Symbol(s.name, s.at, s.dtype, s.shape, s.layout, s.role)
        for s in sections
        if s.kind == "tensor"
    }
    return Program(cfg, dram, text_sec.at, n_insns, symbols)


# ---- disassembly ------------------------------------------------------------------------
def format_insn(insn: Insn) -> str:
    """One instruction in the text form (fields at their defaults are left out)."""
    parts: list[str]
    names: tuple[str, ...]
    if isinstance(insn, (Load, Store)):
        parts = [insn.opcode.name.lower(), insn.memory_type.name.lower()]
        names = _MEM_FIELDS
    elif isinstance(insn, Gemm):
        parts, names = ["gemm"], _GEMM_FIELDS
    elif isinstance(insn, Alu):
        parts, names = ["alu", insn.alu_opcode.name.lower()], _LOOP_FIELDS
    else:
        parts, names = ["finish"], ()
    if getattr(insn, "reset", False):
        parts.append("reset")
    for n in names:
        v = int(getattr(insn, n))
        if v != _DEFAULTS.get(n, 0):
            parts.append(f"{n}={v}")
    if isinstance(insn, Alu):
        if insn.use_imm:
            parts.append(f"imm={insn.imm}")
        elif insn.imm:
            parts.append(f"use_imm=0 imm={insn.imm}")
    for word, flag in _FLAG_WORDS.items():
        if getattr(insn, flag):
            parts.append(word)
    return " ".join(parts)


def _config_line(cfg: HwConfig) -> str:
    if cfg.name in preset_names() and load_config(cfg.name) == cfg:
        return f".config {cfg.name}"
    return f".config {cfg.to_json()}"


def _format_values(arr: np.ndarray, per_line: int = 16) -> list[str]:
    flat = arr.reshape(-1)
    row = arr.shape[-1] if arr.ndim and 0 < arr.shape[-1] <= 64 else per_line
    fmt = repr if flat.dtype.kind == "f" else str
    return [
        "  " + " ".join(fmt(x.item()) for x in flat[i : i + row]) for i in range(0, flat.size, row)
    ]


def disassemble(prog: Program, *, insns_only: bool = False) -> str:
    """The text form of ``prog``; ``assemble`` of it gives back the same program.

    With ``insns_only``, only the instructions (with their indices) are printed.
    """
    cfg = prog.config
    raw = prog.insn_bytes
    lines: list[str] = []
    insns: list[Insn | None] = []
    words: list[str] = []
    for i in range(prog.insn_count):
        word = raw[i * INSN_BYTES : (i + 1) * INSN_BYTES].tobytes()
        try:
            insn = decode(word, cfg, index=i)
        except EncodingError:
            insn = None
        # A word the decoder cannot represent exactly (bad opcode or enum, stray bits in
        # unused positions) is written raw so that re-assembly gives the same bytes.
        if insn is not None and encode(insn, cfg) != word:
            insn = None
        insns.append(insn)
        words.append(
            format_insn(insn)
            if insn is not None
            else f"raw 0x{int.from_bytes(word, 'little'):032x}"
        )
    if insns_only:
        return "\n".join(f"{i:6d}  {w}" for i, w in enumerate(words)) + "\n"
    covered = np.zeros(prog.dram.size, bool)
    lines += [_config_line(cfg), f".dram {prog.dram.size}", f".text {prog.insn_base}"]
    lines += [f"  {w}" for w in words]
    text_lo, text_hi = prog.insn_base, prog.insn_base + prog.insn_count * INSN_BYTES
    covered[text_lo:text_hi] = True
    # Micro-op tables: every DRAM range a LOAD UOP reads.
    uop_idx: set[int] = set()
    for insn in insns:
        if isinstance(insn, Load) and insn.memory_type == MemType.UOP and insn.x_size:
            for y in range(insn.y_size):
                start = insn.dram_base + y * insn.x_stride
                uop_idx.update(range(start, start + insn.x_size))
    max_uop = prog.dram.size // 4
    for start, stop in _runs(sorted(i for i in uop_idx if i < max_uop)):
        lo, hi = start * 4, stop * 4
        if covered[lo:hi].any():
            continue
        d, src, w = decode_uops(prog.dram[lo:hi].view(np.uint32), cfg)
        lines.append(f".uops {lo}")
        lines += [f"  {a} {b} {c}" for a, b, c in zip(d, src, w, strict=True)]
        covered[lo:hi] = True
    for sym in prog.symbols.values():
        arr = prog.read(sym.name)
        layout = f" layout={sym.layout}" if sym.layout else ""
        shape = ",".join(str(x) for x in sym.shape)
        lines.append(f".tensor {sym.name} {sym.role} {sym.dtype} {shape} {sym.offset}{layout}")
        lines += _format_values(arr) if arr.size and arr.any() else ["  zeros"]
        covered[sym.offset : sym.offset + sym.nbytes] = True
    # Whatever else is non-zero.
    rest = prog.dram.copy()
    rest[covered] = 0
    for start, stop in _runs(np.flatnonzero(rest).tolist(), gap=16):
        lines.append(f".bytes {start}")
        chunk = prog.dram[start:stop]
        lines += [
            "  " + " ".join(f"{b:02x}" for b in chunk[i : i + 16]) for i in range(0, chunk.size, 16)
        ]
    return "\n".join(lines) + "\n"


def _runs(idx: list[int], gap: int = 1) -> list[tuple[int, int]]:
    """Group sorted indices into [start, stop) runs, merging holes smaller than ``gap``."""
    runs: list[tuple[int, int]] = []
    for i in idx:
        if runs and i - runs[-1][1] < gap:
            runs[-1] = (runs[-1][0], i + 1)
        else:
            runs.append((i, i + 1))
    return runs


__all__ = ["assemble", "disassemble", "format_insn"]
