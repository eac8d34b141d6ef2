"""Encode and decode instructions and micro-ops, one at a time or as whole streams.

Every bit position comes from :mod:`isa.formats`; nothing here knows a field's place.

Example:
    >>> from isa.config import load_config
    >>> from isa.insn import Finish
    >>> cfg = load_config("default")
    >>> raw = encode(Finish(), cfg)
    >>> len(raw), decode(raw, cfg)
    (16, Finish(pop_prev_dep=False, pop_next_dep=False, push_prev_dep=False, push_next_dep=False))
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Sequence
from operator import attrgetter
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import EncodingError
from .formats import FORMATS, INSN_BITS, Layout, layout
from .insn import INSN_CLASSES, OPCODE_FORMAT, AluOp, Insn, MemType, Opcode, Uop

if TYPE_CHECKING:
    from .config import HwConfig

INSN_BYTES = INSN_BITS // 8
UOP_BYTES = 4

_ENUM_FIELDS = {"memory_type": MemType, "alu_opcode": AluOp}
_BOOL_FIELDS = {
    "pop_prev_dep",
    "pop_next_dep",
    "push_prev_dep",
    "push_next_dep",
    "reset",
    "use_imm",
}


def _pack_fields(values: dict[str, int], lay: Layout, what: str) -> int:
    word = 0
    for f in lay.fields:
        v = int(values.get(f.name, 0))
        if not f.min_value <= v <= f.max_value:
            raise EncodingError(
                f"{what}: field {f.name!r} = {v} does not fit {f.width} "
                f"{'signed ' if f.signed else ''}bits [{f.min_value}, {f.max_value}]"
            )
        word |= (v & f.mask) << f.lsb
    return word


def _unpack_field(word: int, f) -> int:
    v = (word >> f.lsb) & f.mask
    if f.signed and v >> (f.width - 1):
        v -= 1 << f.width
    return v


def encode_int(insn: Insn, cfg: HwConfig) -> int:
    """Encode one instruction as a 128-bit integer."""
    lay = layout(insn.fmt, cfg)
    return _pack_fields(insn.field_values(), lay, f"{insn.opcode.name} instruction")


def encode(insn: Insn, cfg: HwConfig) -> bytes:
    """Encode one instruction as 16 little-endian bytes."""
    return encode_int(insn, cfg).to_bytes(INSN_BYTES, "little")


def decode(raw: bytes | int, cfg: HwConfig, *, index: int | None = None) -> Insn:
    """Decode one instruction from 16 bytes or a 128-bit integer.

    Raises :class:`EncodingError` naming the field for an opcode, memory type or ALU opcode
    that the ISA does not list; ``index`` (the stream position) is added to the message.
    """
    where = f"instruction {index}" if index is not None else "instruction"
    if isinstance(raw, (bytes, bytearray, memoryview)):
        if len(raw) != INSN_BYTES:
            raise EncodingError(f"{where}: expected {INSN_BYTES} bytes, got {len(raw)}")
        word = int.from_bytes(raw, "little")
    else:
        word = int(raw)
    opcode = word & 0b111
    if opcode not in OPCODE_FORMAT:
        raise EncodingError(f"{where}: field 'opcode' = {opcode} is not an opcode of the ISA")
    cls = INSN_CLASSES[Opcode(opcode)]
    lay = layout(cls.fmt, cfg)
    kwargs: dict[str, Any] = {}
    names = {f.name for f in dataclasses.fields(cls)}
    for f in lay.fields:
        if f.name == "opcode" or f.name not in names:
            continue
        v = _unpack_field(word, f)
        if f.name in _ENUM_FIELDS:
            enum = _ENUM_FIELDS[f.name]
            try:
                kwargs[f.name] = enum(v)
            except ValueError:
                raise EncodingError(
                    f"{where}: field {f.name!r} = {v} is not a valid {enum.__name__}"
                ) from None
        elif f.name in _BOOL_FIELDS:
            kwargs[f.name] = bool(v)
        else:
            kwargs[f.name] = v
    return cls(**kwargs)


def _encode_one_by_one(items: Sequence[Insn | InsnBlock], cfg: HwConfig) -> np.ndarray:
    chunks = []
    pos = 0
    for item in items:
        if isinstance(item, InsnBlock):
            at = np.arange(pos, pos + len(item))
            chunks.append(encode_fields(item.fields, cfg, rows=at).tobytes())
            pos += len(item)
            continue
        try:
            chunks.append(encode(item, cfg))
        except EncodingError as e:
            raise EncodingError(f"instruction {pos}: {e}") from None
        pos += 1
    return np.frombuffer(b"".join(chunks), dtype=np.uint8).copy()


@dataclasses.dataclass(frozen=True, eq=False)
class InsnBlock:
    """A run of instructions held as an int64 array of fields: one row per instruction, one
    column per name of :func:`all_field_names` (``opcode`` first; a field that a format lacks
    is 0). A code generator that issues the same pattern of instructions many times, with
    fields that step by a constant, builds the run as an array instead of objects;
    :func:`encode_stream` takes it among the instructions.

    Example:
        >>> from isa.config import load_config
        >>> from isa.insn import Finish
        >>> cfg = load_config("default")
        >>> block = InsnBlock(fields_of([Finish(), Finish(pop_prev_dep=True)]))
        >>> len(block), decode_stream(encode_stream([block], cfg), cfg)[1].pop_prev_dep
        (2, True)
    """

    fields: np.ndarray

    def __post_init__(self) -> None:
        f = self.fields
        if f.ndim != 2 or f.shape[1] != len(all_field_names()) or f.dtype != np.int64:
            raise EncodingError(
                f"an instruction block is an int64 array of one column per field "
                f"({len(all_field_names())}), got {f.dtype} {f.shape}"
            )

    def __len__(self) -> int:
        return int(self.fields.shape[0])

    def insn(self, row: int) -> Insn:
        """Row ``row`` as an instruction object."""
        values = dict(zip(all_field_names(), self.fields[row].tolist(), strict=True))
        op = values["opcode"]
        if op not in OPCODE_FORMAT:
            raise EncodingError(f"instruction {row}: field 'opcode' = {op} is not an opcode")
        cls = INSN_CLASSES[Opcode(op)]
        kwargs: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            v = values[f.name]
            if f.name in _ENUM_FIELDS:
                kwargs[f.name] = _ENUM_FIELDS[f.name](v)
            elif f.name in _BOOL_FIELDS:
                kwargs[f.name] = bool(v)
            else:
                kwargs[f.name] = v
        return cls(**kwargs)


_COLUMNS: dict[type[Insn], tuple[Any, np.ndarray]] = {}


def _columns(cls: type[Insn]) -> tuple[Any, np.ndarray]:
    """An instruction class's field getter and the columns of those fields in a block."""
    hit = _COLUMNS.get(cls)
    if hit is None:
        names = [f.name for f in dataclasses.fields(cls)]
        index = _field_index()
        get = attrgetter(*names) if names else None
        hit = _COLUMNS[cls] = (get, np.asarray([index[n] for n in names], dtype=np.int64))
    return hit


def fields_of(items: Sequence[Insn | InsnBlock]) -> np.ndarray:
    """The field array (as :class:`InsnBlock` holds it) of instructions and blocks, in order."""
    n = stream_length(items)
    out = np.zeros((n, len(all_field_names())), dtype=np.int64)
    pos = 0
    rows: dict[type[Insn], tuple[list[int], list[Insn]]] = {}
    for item in items:
        if isinstance(item, InsnBlock):
            k = len(item)
            out[pos : pos + k] = item.fields
            pos += k
            continue
        group = rows.get(type(item))
        if group is None:
            group = rows[type(item)] = ([], [])
        group[0].append(pos)
        group[1].append(item)
        pos += 1
    for cls, (idx, insns) in rows.items():
        where = np.asarray(idx, dtype=np.int64)
        out[where, 0] = int(cls.opcode)
        get, cols = _columns(cls)
        if cols.size:
            values = np.array([get(i) for i in insns], dtype=np.int64).reshape(len(insns), -1)
            out[where[:, None], cols[None, :]] = values
    return out


@functools.cache
def _field_index() -> dict[str, int]:
    """Each field's column in a field array (:class:`InsnBlock`)."""
    return {n: k for k, n in enumerate(all_field_names())}


def _pack(fields: np.ndarray, cfg: HwConfig) -> tuple[np.ndarray, tuple[int, str, int] | None]:
    """The ``(n, 2)`` uint64 words of a field array, and the first row (in order) holding a
    value its field cannot (row, field name, value), or None."""
    index = _field_index()
    opcode = fields[:, 0]
    words = np.zeros((fields.shape[0], 2), dtype=np.uint64)
    first: tuple[int, str, int] | None = None
    for op in np.unique(opcode).tolist():
        sel = np.flatnonzero(opcode == op)
        if op not in OPCODE_FORMAT:
            if first is None or sel[0] < first[0]:
                first = (int(sel[0]), "opcode", op)
            continue
        these = fields[sel]
        packed = np.zeros((sel.size, 2), dtype=np.uint64)
        for f in layout(OPCODE_FORMAT[op], cfg).fields:
            v = these[:, index[f.name]]
            bad = np.flatnonzero((v < f.min_value) | (v > f.max_value))
            if bad.size and (first is None or sel[bad[0]] < first[0]):
                first = (int(sel[bad[0]]), f.name, int(v[bad[0]]))
            u = v.astype(np.uint64) & np.uint64(f.mask)
            word, shift = f.lsb // 64, f.lsb % 64
            packed[:, word] |= u << np.uint64(shift)
            if shift + f.width > 64:  # the field runs on into the next word
                packed[:, word + 1] |= u >> np.uint64(64 - shift)
        words[sel] = packed
    return words, first


def encode_fields(
    fields: np.ndarray, cfg: HwConfig, *, rows: np.ndarray | None = None
) -> np.ndarray:
    """Encode a field array (:class:`InsnBlock`) into ``(n, 2)`` uint64 words; a value that
    does not fit its field raises naming the first such instruction (its position in ``rows``,
    the stream positions of the array's rows, when given) and the field."""
    words, first = _pack(fields, cfg)
    if first is None:
        return words
    k, name, value = first
    at = k if rows is None else int(rows[k])
    if name == "opcode":
        raise EncodingError(
            f"instruction {at}: field 'opcode' = {value} is not an opcode of the ISA"
        )
    f = layout(OPCODE_FORMAT[int(fields[k, 0])], cfg).field(name)
    raise EncodingError(
        f"instruction {at}: field {name!r} = {value} does not fit {f.width} "
        f"{'signed ' if f.signed else ''}bits [{f.min_value}, {f.max_value}]"
    )


def stream_length(items: Iterable[Insn | InsnBlock]) -> int:
    """How many instructions ``items`` hold (a block counts its rows)."""
    return sum(len(x) if isinstance(x, InsnBlock) else 1 for x in items)


def encode_stream(insns: Iterable[Insn | InsnBlock], cfg: HwConfig) -> np.ndarray:
    """Encode instructions (and :class:`InsnBlock` runs) into one uint8 array of 16 bytes each.

    The instructions are packed together with numpy, field by field, per format (a network's
    programs hold hundreds of thousands of instructions); a value that does not fit its field
    is reported by :func:`encode`, naming the instruction and the field, as one at a time.

    Example:
        >>> from isa.config import load_config
        >>> from isa.insn import Finish
        >>> cfg = load_config("default")
        >>> code = encode_stream([Finish(), Finish(push_next_dep=True)], cfg)
        >>> code.shape, decode_stream(code, cfg)[1].push_next_dep
        ((32,), True)
    """
    items = list(insns)
    words = np.zeros((stream_length(items), 2), dtype=np.uint64)
    # the distinct instruction objects (a stream often holds one object many times: a compiler
    # reuses an immutable instruction it issues again), each encoded once, and where each
    # stands; then the blocks' rows; all packed field by field in one call
    distinct: list[Insn] = []
    row_of: dict[int, int] = {}
    at: list[int] = []
    rows: list[int] = []
    blocks: list[tuple[int, np.ndarray]] = []
    pos = 0
    for item in items:
        if isinstance(item, InsnBlock):
            blocks.append((pos, item.fields))
            pos += len(item)
            continue
        row = row_of.get(id(item))
        if row is None:
            row = row_of[id(item)] = len(distinct)
            distinct.append(item)
        at.append(pos)
        rows.append(row)
        pos += 1
    try:
        fields = np.concatenate([fields_of(distinct), *(f for _, f in blocks)])
    except OverflowError:  # beyond 64 bits: certainly beyond its field
        return _encode_one_by_one(items, cfg)
    packed, bad = _pack(fields, cfg)
    if bad is not None:
        return _encode_one_by_one(items, cfg)  # names the first value that does not fit
    words[at] = packed[rows]
    if blocks:
        where = np.concatenate([np.arange(p, p + f.shape[0]) for p, f in blocks])
        words[where] = packed[len(distinct) :]
    return words.astype("<u8").view(np.uint8).reshape(-1).copy()


def _decode_one_by_one(buf: bytes, cfg: HwConfig) -> list[Insn]:
    return [
        decode(buf[i : i + INSN_BYTES], cfg, index=i // INSN_BYTES)
        for i in range(0, len(buf), INSN_BYTES)
    ]


def decode_stream(raw: np.ndarray | bytes, cfg: HwConfig) -> list[Insn]:
    """Decode a byte stream of whole instructions into objects.

    The fields are read with numpy (:func:`decode_fields`) and each instruction built from its
    row; a stream with an opcode, memory type or ALU opcode the ISA does not list is decoded
    one instruction at a time, so the error names the first such instruction and field.

    Example:
        >>> from isa.config import load_config
        >>> from isa.insn import Finish
        >>> cfg = load_config("default")
        >>> decode_stream(encode_stream([Finish(pop_prev_dep=True)], cfg), cfg)[0].pop_prev_dep
        True
    """
    buf = bytes(np.asarray(raw, dtype=np.uint8)) if not isinstance(raw, bytes) else raw
    if len(buf) % INSN_BYTES:
        raise EncodingError(f"instruction stream of {len(buf)} bytes is not a multiple of 16")
    fields = decode_fields(np.frombuffer(buf, dtype=np.uint8), cfg)
    opcode = fields["opcode"]
    out: list[Insn | None] = [None] * opcode.size
    for op in np.unique(opcode).tolist():
        if op not in OPCODE_FORMAT:
            return _decode_one_by_one(buf, cfg)
        cls = INSN_CLASSES[Opcode(op)]
        lay = layout(cls.fmt, cfg)
        if any(f.lsb // 64 != f.msb // 64 for f in lay.fields):  # read across the two words
            return _decode_one_by_one(buf, cfg)
        rows = np.flatnonzero(opcode == op)
        names = {f.name for f in dataclasses.fields(cls)}
        keys, columns = [], []
        for f in lay.fields:
            if f.name == "opcode" or f.name not in names:
                continue
            values = fields[f.name][rows]
            if f.name in _ENUM_FIELDS:
                members = {int(m): m for m in _ENUM_FIELDS[f.name]}
                if not np.isin(values, list(members)).all():
                    return _decode_one_by_one(buf, cfg)
                column: list[Any] = [members[v] for v in values.tolist()]
            elif f.name in _BOOL_FIELDS:
                column = [bool(v) for v in values.tolist()]
            else:
                column = values.tolist()
            keys.append(f.name)
            columns.append(column)
        for k, row in zip(rows.tolist(), zip(*columns, strict=True), strict=True):
            out[k] = cls(**dict(zip(keys, row, strict=True)))
        if not columns:  # a format with no fields of its own
            for k in rows.tolist():
                out[k] = cls()
    return [i for i in out if i is not None]


@functools.cache
def all_field_names() -> tuple[str, ...]:
    """Every field name of every instruction format (the keys of :func:`decode_fields`)."""
    names: list[str] = []
    for fmt, fields in FORMATS.items():
        if fmt == "uop":
            continue
        for name, _ in fields:
            if name not in names:
                names.append(name)
    return tuple(names)


#: The last stream :func:`decode_fields` decoded (a copy), its config and its fields: one
#: program's stream is decoded by the compiler's checker, the validator, the simulator and
#: the energy count in turn.
_LAST_DECODED: list[tuple[np.ndarray, HwConfig, dict[str, np.ndarray]]] = []


def decode_fields(raw: np.ndarray, cfg: HwConfig) -> dict[str, np.ndarray]:
    """Fast batch decode: a uint8 array of n×16 bytes → {field: int64 array of length n}.

    Each instruction's fields are read with its own opcode's layout; a field that its format
    lacks reads as 0. Opcodes outside the ISA decode with every other field 0, so a consumer
    can report them by index. The arrays are read-only: the same stream decoded again (the
    same bytes and config as the last call) returns them without decoding. Example:

    >>> from isa.config import load_config
    >>> from isa.insn import Finish
    >>> cfg = load_config("default")
    >>> f = decode_fields(encode_stream([Finish(), Finish(pop_prev_dep=True)], cfg), cfg)
    >>> f["opcode"].tolist(), f["pop_prev_dep"].tolist()
    ([3, 3], [0, 1])
    """
    raw = np.ascontiguousarray(raw, dtype=np.uint8)
    if raw.size % INSN_BYTES:
        raise EncodingError(f"instruction stream of {raw.size} bytes is not a multiple of 16")
    if _LAST_DECODED:
        last, last_cfg, fields = _LAST_DECODED[0]
        if last.shape == raw.shape and last_cfg == cfg and np.array_equal(last, raw):
            return fields
    words = raw.view("<u8").reshape(-1, 2)
    n = words.shape[0]
    opcode = (words[:, 0] & np.uint64(7)).astype(np.int64)
    out = {name: np.zeros(n, dtype=np.int64) for name in all_field_names()}
    out["opcode"] = opcode
    for op, fmt in OPCODE_FORMAT.items():
        sel = opcode == op
        if not sel.any():
            continue
        w = words[sel]
        for f in layout(fmt, cfg).fields:
            if f.name == "opcode":
                continue
            v = ((w[:, f.word] >> np.uint64(f.shift)) & np.uint64(f.mask)).astype(np.int64)
            if f.signed:
                v = np.where(v >> (f.width - 1), v - (1 << f.width), v)
            out[f.name][sel] = v
    for v in out.values():
        v.flags.writeable = False
    _LAST_DECODED[:] = [(raw.copy(), cfg, out)]
    return out


def encode_uops(uops: Sequence[Uop] | np.ndarray, cfg: HwConfig) -> np.ndarray:
    """Encode micro-ops into a uint32 array. Accepts Uop objects or an (n, 3) int array."""
    lay = layout("uop", cfg)
    arr = (
        np.asarray([(u.dst, u.src, u.wgt) for u in uops], dtype=np.int64).reshape(-1, 3)
        if not isinstance(uops, np.ndarray)
        else np.asarray(uops, dtype=np.int64).reshape(-1, 3)
    )
    word = np.zeros(arr.shape[0], dtype=np.uint64)
    for col, f in enumerate(lay.fields):
        v = arr[:, col]
        bad = (v < 0) | (v > f.mask)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise EncodingError(
                f"micro-op {i}: field {f.name!r} = {int(v[i])} does not fit {f.width} bits"
            )
        word |= v.astype(np.uint64) << np.uint64(f.lsb)
    return word.astype(np.uint32)


def decode_uops(words: np.ndarray, cfg: HwConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Decode uint32 micro-op words into (dst, src, wgt) int64 arrays."""
    w = np.asarray(words).astype(np.uint64)
    dst, src, wgt = (
        ((w >> np.uint64(f.lsb)) & np.uint64(f.mask)).astype(np.int64)
        for f in layout("uop", cfg).fields
    )
    return dst, src, wgt
