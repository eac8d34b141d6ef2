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
from .dram import align_up, dram_alignment
from .encoding import INSN_BYTES, decode, decode_uops, encode, encode_uops
from .errors import AsmError, ConfigError, EncodingError, ExecutionError, ProgramError
from .formats import FORMATS, HEADER
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
from .program import MAX_DRAM_BYTES, ROLES, Program, Symbol
from .validate import check_stream

#: At most this many LOAD UOP rows are enumerated to print micro-op tables (disassembly).
MAX_UOP_ROWS = 1_000_000
_FLAG_WORDS = {f.removesuffix("_dep"): f for f in DEP_FLAGS}
_MEM_NAMES = {m.name.lower(): m for m in MemType}
_ALU_NAMES = {o.name.lower(): o for o in AluOp}
#: Fields written as ``name=value``: each format's fields (isa.formats) less the header, and
#: less those written as words (the memory type, the ALU operation, ``reset``).
_WORD_FIELDS = frozenset(name for name, _ in HEADER) | {"memory_type", "alu_opcode", "reset"}


def _value_fields(fmt: str) -> tuple[str, ...]:
    return tuple(name for name, _ in FORMATS[fmt] if name not in _WORD_FIELDS)


_MEM_FIELDS = _value_fields("mem")
_GEMM_FIELDS = _value_fields("gemm")
_ALU_FIELDS = _value_fields("alu")
#: The micro-op loop fields (what GEMM and ALU share).
_LOOP_FIELDS = tuple(f for f in _GEMM_FIELDS if f in _ALU_FIELDS)
_DEFAULTS = {"y_size": 1, "iter_out": 1, "iter_in": 1}
#: Fields that hold a flag: written 0 or 1 when given a value.
_FLAG_FIELDS = frozenset(DEP_FLAGS) | {"reset", "use_imm"}
#: Largest source text ``vtac asm`` reads (bytes).
MAX_SOURCE_BYTES = 256 << 20
#: What a symbol name, a label or a layout may contain to be written back as one token.
_TOKEN = re.compile(r"[^\s;#@+,=]+")


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
    if not 0 <= off < MAX_DRAM_BYTES:
        raise AsmError(f"offset {off} is outside the DRAM image [0, {MAX_DRAM_BYTES})", line=line)
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
        if len(toks) > 1:
            raise AsmError(f".text: unexpected {toks[1]!r} (only an offset)", line=no)
        if toks and toks[0] == "auto":
            raise AsmError(".text needs a byte offset (a multiple of 16), not 'auto'", line=no)
        off = _offset(toks[0], no) if toks else 0
        return _Section("text", no, off)
    if head in (".uops", ".bytes"):
        if not toks:
            raise AsmError(f"{head} needs an offset (a number or 'auto')", line=no)
        sec = _Section(head[1:], no, _offset(toks[0], no))
        for t in toks[1:]:
            if t.startswith("name=") and _TOKEN.fullmatch(t[5:]):
                sec.name = t[5:]
            else:
                raise AsmError(f"{head}: unexpected {t!r} (only name=LABEL)", line=no)
        return sec
    if head == ".tensor":
        if len(toks) < 5:
            raise AsmError(".tensor needs: NAME ROLE DTYPE SHAPE OFFSET [layout=L]", line=no)
        name, role, dtype, shape_s, off_s = toks[:5]
        if not _TOKEN.fullmatch(name):
            raise AsmError(f".tensor: {name!r} is not a name (no '@', '+', ',' or '=')", line=no)
        if role not in ROLES:
            raise AsmError(f".tensor {name}: role {role!r} is not one of {ROLES}", line=no)
        shape = tuple(_int(s, no, f".tensor {name} shape") for s in shape_s.split(","))
        try:
            probe = Symbol(name, 0, dtype, shape)
            probe.check()
        except ProgramError as e:
            raise AsmError(f".tensor {e}", line=no) from None
        if probe.nbytes > MAX_DRAM_BYTES:
            raise AsmError(
                f".tensor {name}: {probe.nbytes} bytes, more than the {MAX_DRAM_BYTES}-byte "
                "DRAM image a program may have",
                line=no,
            )
        sec = _Section("tensor", no, _offset(off_s, no), name, role, dtype, shape)
        for t in toks[5:]:
            if t.startswith("layout=") and _TOKEN.fullmatch(t[7:]):
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
    flags = set(DEP_FLAGS) | ({"reset"} if cls in (Gemm, Alu) else set())
    seen: set[str] = set()
    for tok in args:
        key, eq, val = tok.partition("=")
        name = _FLAG_WORDS.get(key, key) if not eq else key
        if name in seen:
            raise AsmError(f"{op}: {key!r} is written twice", line=no)
        seen.add(name)
        if not eq:
            if key in _FLAG_WORDS:
                kw[_FLAG_WORDS[key]] = True
            elif key == "reset" and cls in (Gemm, Alu):
                kw["reset"] = True
            elif key == "use_imm" and cls is Alu:
                kw["use_imm"] = True
            else:
                words = ", ".join(sorted(set(_FLAG_WORDS) | (flags - set(DEP_FLAGS))))
                raise AsmError(f"{op}: unknown flag {key!r} (flags: {words})", line=no)
            continue
        if key in flags or (key == "use_imm" and cls is Alu):
            flag = _int(val, no, f"{op} flag {key}")
            if flag not in (0, 1):
                raise AsmError(f"{op}: flag {key} = {flag} must be 0 or 1", line=no)
            kw[key] = bool(flag)
        elif key in allowed:
            if val.startswith("@"):
                if key != "dram_base":
                    raise AsmError(f"{op}: only dram_base takes a @symbol", line=no)
                kw[key] = resolve(val, kw.get("memory_type", MemType.OUT), no)
            else:
                kw[key] = _int(val, no, f"{op} field {key}")
        else:
            fields = ", ".join(allowed) or "none"
            raise AsmError(f"{op}: unknown field {key!r} (fields: {fields})", line=no)
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
            for field, v in zip(("dst", "src", "wgt"), vals, strict=True):
                if not 0 <= v < 1 << 32:
                    raise AsmError(f"micro-op field {field} = {v} does not fit 32 bits", line=no)
            rows.append(vals)
        try:
            uop_words = encode_uops(np.asarray(rows, np.int64).reshape(-1, 3), cfg)
        except EncodingError as e:
            raise AsmError(str(e), line=sec.line) from None
        return uop_words.view(np.uint8)
    if sec.kind == "bytes":
        chunks = []
        for no, line in sec.body:
            toks = line.split()
            if all(len(t) == 2 for t in toks):
                try:  # the common form, as disasm writes it: two hex digits a byte
                    chunks.append(bytes.fromhex(line))
                    continue
                except ValueError:
                    pass
            vals = [
                _int(t, no, "byte") if t.startswith("0x") else _int("0x" + t, no, "byte")
                for t in toks
            ]
            bad = [v for v in vals if not 0 <= v <= 255]
            if bad:
                raise AsmError(f".bytes value {bad[0]} is not a byte (00..ff)", line=no)
            chunks.append(bytes(vals))
        return np.frombuffer(b"".join(chunks), np.uint8).copy()
    return _tensor_bytes(sec)


def _int_range(dt: np.dtype) -> tuple[int, int]:
    if dt.kind == "b":
        return 0, 1
    info = np.iinfo(dt)
    return int(info.min), int(info.max)


def _tensor_bytes(sec: _Section) -> np.ndarray:
    dt = np.dtype(sec.dtype)
    count = Symbol(sec.name, 0, sec.dtype, sec.shape).nbytes // dt.itemsize
    words = [t for _, line in sec.body for t in line.split()]
    where = f".tensor {sec.name}"
    if not words or words == ["zeros"]:
        arr = np.zeros(count, dt)
    elif words[0] == "random":
        if len(words) not in (2, 4):
            raise AsmError(f"{where}: 'random SEED [LO HI]'", line=sec.line)
        seed = _int(words[1], sec.line, "seed")
        if seed < 0:
            raise AsmError(f"{where}: random seed {seed} is negative", line=sec.line)
        if len(words) == 4:
            lo, hi = _int(words[2], sec.line, "lo"), _int(words[3], sec.line, "hi")
        elif dt.kind in "fc":
            lo, hi = -128, 127
        else:  # the int8 range, within the dtype's own
            tlo, thi = _int_range(dt)
            lo, hi = max(-128, tlo), min(127, thi)
        if lo > hi:
            raise AsmError(f"{where}: random range {lo}..{hi} is empty", line=sec.line)
        rng = np.random.default_rng(seed)
        if dt.kind in "fc":
            if not np.isfinite(np.asarray([lo, hi], dtype=dt)).all():
                raise AsmError(f"{where}: random range {lo}..{hi} does not fit {dt}", line=sec.line)
            arr = rng.uniform(lo, hi, count).astype(dt)
        else:
            tlo, thi = _int_range(dt)
            if lo < tlo or hi > thi:
                raise AsmError(
                    f"{where}: random range {lo}..{hi} does not fit {dt} ({tlo}..{thi})",
                    line=sec.line,
                )
            arr = rng.integers(lo, hi, count, endpoint=True, dtype=np.int64).astype(dt)
    elif words[0] == "bits":
        # the values' bit patterns, as unsigned integers of the dtype's width (what disasm
        # writes for floats that decimal text cannot give back bit for bit, such as NaN payloads)
        if len(words) - 1 != count:
            raise AsmError(
                f"{where}: {len(words) - 1} bit patterns for shape {sec.shape} ({count})",
                line=sec.line,
            )
        width = dt.itemsize * 8
        pats = [_int(w, sec.line, "bit pattern") for w in words[1:]]
        bad = [v for v in pats if not 0 <= v < 1 << width]
        if bad:
            raise AsmError(
                f"{where}: bit pattern {bad[0]} does not fit {width} bits", line=sec.line
            )
        raw = b"".join(v.to_bytes(dt.itemsize, "little") for v in pats)
        arr = np.frombuffer(raw, dtype=dt.newbyteorder("<")).astype(dt)
    else:
        if len(words) != count:
            raise AsmError(
                f"{where}: {len(words)} values for shape {sec.shape} ({count})",
                line=sec.line,
            )
        try:
            if dt.kind in "fc":
                parse = float if dt.kind == "f" else complex
                with np.errstate(over="ignore"):  # an overflow is reported below, by value
                    arr = np.asarray([parse(w) for w in words], dt)
            else:
                ints = [int(w, 0) for w in words]
        except (ValueError, OverflowError) as e:
            raise AsmError(f"{where}: {e}", line=sec.line) from None
        if dt.kind not in "fc":
            tlo, thi = _int_range(dt)
            bad = [v for v in ints if not tlo <= v <= thi]
            if bad:
                raise AsmError(f"{where}: {bad[0]} does not fit {dt}", line=sec.line)
            arr = np.asarray(ints, dt)
        if dt.kind in "fc" and np.isfinite(arr).sum() < sum(
            w.lower().lstrip("+-(") not in ("inf", "nan", "infinity") for w in words
        ):
            raise AsmError(f"{where}: a value overflows {dt}", line=sec.line)
    return arr.reshape(-1).view(np.uint8)


def assemble(
    text: str, *, source: str | None = None, config: HwConfig | None = None, check: bool = False
) -> Program:
    """Assemble the text form into a :class:`Program` (see docs/assembly.md).

    With ``check``, the stream must also pass the ISA's stream validator
    (:func:`isa.validate.check_stream`); a fault is reported at its instruction's line.

    >>> assemble(".config default\\n.text\\n store out x_size=1 y_pad_0=1\\n finish", check=True)
    Traceback (most recent call last):
    ...
    isa.errors.AsmError: line 3: instruction 0 (y_pad_0): STORE padding must be zero
    """
    try:
        return _assemble(text, config, check)
    except AsmError as e:
        if source is not None and e.source is None:
            raise AsmError(e.message, line=e.line, source=source) from None
        raise


def _assemble(text: str, config: HwConfig | None, check: bool = False) -> Program:
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
                    if not 0 <= dram_size <= MAX_DRAM_BYTES:
                        raise AsmError(
                            f".dram {dram_size} is outside [0, {MAX_DRAM_BYTES}]", line=no
                        )
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
    align = dram_alignment(cfg)  # isa.dram's rule: every memory type can address the section
    for s in sections:
        if s.offset is None:
            s.offset = align_up(end, align)
            end = s.at + s.raw.size
    for s in sections:
        if s.at + s.raw.size > MAX_DRAM_BYTES:
            raise AsmError(
                f"{s.kind} section ends at byte {s.at + s.raw.size}, past the "
                f"{MAX_DRAM_BYTES}-byte DRAM image a program may have",
                line=s.line,
            )
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
    if check:
        try:
            check_stream(text_sec.data, cfg)
        except ExecutionError as e:
            at = text_sec.body[e.index][0] if e.index is not None else None
            raise AsmError(str(e), line=at) from None
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
    # ';' and '#' start a comment in the text form: inside JSON strings they are escaped
    text = cfg.to_json().replace(";", "\\u003b").replace("#", "\\u0023")
    return f".config {text}"


def _format_values(sym: Symbol, arr: np.ndarray, per_line: int = 16) -> list[str]:
    """The tensor's body: its values, or their bit patterns when text would not give them back."""
    flat = arr.reshape(-1)
    row = arr.shape[-1] if arr.ndim and 0 < arr.shape[-1] <= 64 else per_line
    kind = flat.dtype.kind
    fmt = repr if kind in "fc" else (lambda v: str(int(v)))
    values = [fmt(x.item()) for x in flat]
    if kind in "fc":
        probe = _Section("tensor", 0, 0, sym.name, sym.role, sym.dtype, sym.shape)
        probe.body = [(0, " ".join(values))]
        try:
            same = np.array_equal(_tensor_bytes(probe), flat.view(np.uint8))
        except AsmError:
            same = False
        if not same:
            ubits = np.dtype(f"<u{flat.dtype.itemsize}") if flat.dtype.itemsize <= 8 else None
            if ubits is not None:
                pats = flat.astype(flat.dtype.newbyteorder("<")).view(ubits)
                values = [hex(int(v)) for v in pats]
            else:  # complex128 and wider: two 64-bit halves would not be one pattern
                raise ProgramError(
                    f"symbol {sym.name!r}: its {flat.dtype} values cannot be written in the text "
                    "form bit for bit"
                )
            lines = [f"  {' '.join(values[i : i + row])}" for i in range(0, len(values), row)]
            return ["  bits"] + lines
    return ["  " + " ".join(values[i : i + row]) for i in range(0, len(values), row)]


def _check_writable(prog: Program) -> None:
    """Refuse, naming it, what the text form cannot express (it would not assemble back)."""
    for sym in prog.symbols.values():
        if not _TOKEN.fullmatch(sym.name):
            raise ProgramError(
                f"symbol {sym.name!r}: the name cannot be written in the text form (it needs a "
                "name without spaces, ';', '#', '@', '+', ',' or '=')"
            )
        if sym.layout and not _TOKEN.fullmatch(sym.layout):
            raise ProgramError(
                f"symbol {sym.name!r}: layout {sym.layout!r} cannot be written in the text form"
            )
        if not _TOKEN.fullmatch(sym.dtype):
            raise ProgramError(
                f"symbol {sym.name!r}: dtype {sym.dtype!r} cannot be written in the text form"
            )


def disassemble(prog: Program, *, insns_only: bool = False) -> str:
    """The text form of ``prog``; ``assemble`` of it gives back the same program.

    With ``insns_only``, only the instructions (with their indices) are printed.
    """
    cfg = prog.config
    raw = prog.insn_bytes
    if not insns_only:
        _check_writable(prog)
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
    # Micro-op tables: the DRAM ranges LOAD UOPs read, as 'dst src wgt' lines. This is for
    # reading only (uncovered bytes are written as .bytes, which assembles to the same image),
    # so at most MAX_UOP_ROWS rows are looked at.
    max_uop = prog.dram.size // 4
    marks = np.zeros(max_uop + 1, np.int64)
    rows_left = MAX_UOP_ROWS
    for insn in insns:
        if isinstance(insn, Load) and insn.memory_type == MemType.UOP and insn.x_size:
            n_rows = min(insn.y_size, rows_left)
            rows_left -= n_rows
            starts = insn.dram_base + np.arange(n_rows, dtype=np.int64) * insn.x_stride
            starts = starts[starts < max_uop]
            np.add.at(marks, starts, 1)
            np.add.at(marks, np.minimum(starts + insn.x_size, max_uop), -1)
            if rows_left == 0:
                lines.append(
                    f"; micro-op tables past the first {MAX_UOP_ROWS} LOAD UOP rows are "
                    "written as .bytes"
                )
                break
    uop_idx = np.flatnonzero(np.cumsum(marks[:max_uop]) > 0)
    for start, stop in _runs(uop_idx):
        lo, hi = start * 4, stop * 4
        if covered[lo:hi].any():
            continue
        words_u32 = prog.dram[lo:hi].view(np.uint32)
        d, src, w = decode_uops(words_u32, cfg)
        table = np.stack([d, src, w], axis=1)
        if not np.array_equal(encode_uops(table, cfg), words_u32):
            continue  # bits outside the micro-op fields: left to .bytes, exact
        lines.append(f".uops {lo}")
        lines += [f"  {a} {b} {c}" for a, b, c in zip(d, src, w, strict=True)]
        covered[lo:hi] = True
    for sym in prog.symbols.values():
        arr = prog.read(sym.name)
        layout = f" layout={sym.layout}" if sym.layout else ""
        shape = ",".join(str(x) for x in sym.shape)
        lines.append(f".tensor {sym.name} {sym.role} {sym.dtype} {shape} {sym.offset}{layout}")
        nonzero = bool(prog.dram[sym.offset : sym.offset + sym.nbytes].any())
        lines += _format_values(sym, arr) if nonzero else ["  zeros"]
        covered[sym.offset : sym.offset + sym.nbytes] = True
    # Whatever else is non-zero.
    rest = prog.dram.copy()
    rest[covered] = 0
    for start, stop in _runs(np.flatnonzero(rest), gap=16):
        lines.append(f".bytes {start}")
        chunk = prog.dram[start:stop]
        blob = chunk.tobytes()
        lines += ["  " + blob[i : i + 16].hex(" ") for i in range(0, len(blob), 16)]
    return "\n".join(lines) + "\n"


def _runs(idx: np.ndarray, gap: int = 1) -> list[tuple[int, int]]:
    """Group sorted indices into [start, stop) runs, merging holes smaller than ``gap``.

    >>> _runs(np.array([1, 2, 3, 7, 8, 30]), gap=4)
    [(1, 9), (30, 31)]
    """
    if idx.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(idx) > gap)
    starts = idx[np.concatenate([[0], breaks + 1])]
    stops = idx[np.concatenate([breaks, [idx.size - 1]])] + 1
    return list(zip(starts.tolist(), stops.tolist(), strict=True))


__all__ = ["assemble", "disassemble", "format_insn"]
