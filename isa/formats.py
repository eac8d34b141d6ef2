"""Instruction and micro-op formats, declared once as data.

Each format is an ordered list of ``(field, width)`` where ``width`` is a number of bits or the
name of a width derived from the config (``log_uop``, ``log_uop+1``, ``log_inp``, ``log_wgt``,
``log_acc``, ``log_src``). Bit positions follow the packing rule of ISA.md §2: fields are packed
from bit 0 in the order listed; a field that would cross bit 64 starts at bit 64 instead.

Example:
    >>> from isa.config import load_config
    >>> f = layout("gemm", load_config("default")).field("uop_end")
    >>> (f.lsb, f.msb)
    (21, 34)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from functools import cache
from types import MappingProxyType
from typing import TYPE_CHECKING

from .errors import ConfigError

if TYPE_CHECKING:
    from .config import HwConfig

INSN_BITS = 128
UOP_BITS = 32
#: The packing rule never lets a field straddle a 64-bit word (C bit-fields of uint64_t).
WORD_BITS = 64

WidthSpec = int | str

HEADER: tuple[tuple[str, WidthSpec], ...] = (
    ("opcode", 3),
    ("pop_prev_dep", 1),
    ("pop_next_dep", 1),
    ("push_prev_dep", 1),
    ("push_next_dep", 1),
)

_UOP_LOOP: tuple[tuple[str, WidthSpec], ...] = (
    ("reset", 1),
    ("uop_begin", "log_uop"),
    ("uop_end", "log_uop+1"),
    ("iter_out", 14),
    ("iter_in", 14),
    ("dst_factor_out", "log_acc"),
    ("dst_factor_in", "log_acc"),
)

#: Field lists of every format, in packing order. This is the single declaration of the encoding.
FORMATS: dict[str, tuple[tuple[str, WidthSpec], ...]] = {
    "mem": HEADER
    + (
        ("memory_type", 3),
        ("sram_base", 16),
        ("dram_base", 32),
        ("y_size", 16),
        ("x_size", 16),
        ("x_stride", 16),
        ("y_pad_0", 4),
        ("y_pad_1", 4),
        ("x_pad_0", 4),
        ("x_pad_1", 4),
    ),
    "gemm": HEADER
    + _UOP_LOOP
    + (
        ("src_factor_out", "log_inp"),
        ("src_factor_in", "log_inp"),
        ("wgt_factor_out", "log_wgt"),
        ("wgt_factor_in", "log_wgt"),
    ),
    "alu": HEADER
    + _UOP_LOOP
    + (
        ("src_factor_out", "log_acc"),
        ("src_factor_in", "log_acc"),
        ("alu_opcode", 3),
        ("use_imm", 1),
        ("imm", 16),
    ),
    "finish": HEADER,
    "uop": (("dst", "log_acc"), ("src", "log_src"), ("wgt", "log_wgt")),
}

#: Fields whose value is a two's complement signed integer.
SIGNED_FIELDS = frozenset({("alu", "imm")})


@dataclasses.dataclass(frozen=True)
class Field:
    """One field of a format: ``width`` bits starting at ``lsb``."""

    name: str
    lsb: int
    width: int
    signed: bool = False

    @property
    def msb(self) -> int:
        return self.lsb + self.width - 1

    @property
    def word(self) -> int:
        """Which 64-bit word holds the field (0 or 1)."""
        return self.lsb // WORD_BITS

    @property
    def shift(self) -> int:
        """Bit offset inside its 64-bit word."""
        return self.lsb % WORD_BITS

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1

    @property
    def min_value(self) -> int:
        return -(1 << (self.width - 1)) if self.signed else 0

    @property
    def max_value(self) -> int:
        return (1 << (self.width - 1)) - 1 if self.signed else self.mask


@dataclasses.dataclass(frozen=True)
class Layout:
    """A format with its field positions resolved for one config."""

    name: str
    fields: tuple[Field, ...]
    total_bits: int

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"format {self.name!r} has no field {name!r}")

    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    @property
    def used_bits(self) -> int:
        return max((f.msb + 1 for f in self.fields), default=0)


#: Which config fields set each derived width (for error messages).
_WIDTH_SOURCE = {
    "log_uop": "uop_buf_bytes",
    "log_uop+1": "uop_buf_bytes",
    "log_inp": "inp_buf_bytes and the inp element size",
    "log_wgt": "wgt_buf_bytes and the wgt element size",
    "log_acc": "acc_buf_bytes and the acc element size",
    "log_src": "acc_buf_bytes/inp_buf_bytes and their element sizes",
}


def resolve_width(spec: WidthSpec, cfg: HwConfig) -> int:
    """Turn a width declaration into bits for ``cfg``."""
    if isinstance(spec, int):
        return spec
    widths = {
        "log_uop": cfg.log_uop_depth,
        "log_uop+1": cfg.log_uop_depth + 1,
        "log_inp": cfg.log_inp_depth,
        "log_wgt": cfg.log_wgt_depth,
        "log_acc": cfg.log_acc_depth,
        "log_src": max(cfg.log_acc_depth, cfg.log_inp_depth),
    }
    return widths[spec]


def _pack(name: str, cfg: HwConfig) -> Layout:
    total = UOP_BITS if name == "uop" else INSN_BITS
    pos = 0
    fields = []
    for fname, spec in FORMATS[name]:
        width = resolve_width(spec, cfg)
        if width > WORD_BITS:
            raise ConfigError(f"config {cfg.name!r}: {name} field {fname!r} is {width} bits wide")
        if total > WORD_BITS and pos < WORD_BITS < pos + width:
            pos = WORD_BITS
        if pos + width > total:
            source = _WIDTH_SOURCE.get(spec, "") if isinstance(spec, str) else ""
            raise ConfigError(
                f"config {cfg.name!r}: the {name} format does not fit in {total} bits: field "
                f"{fname!r} ({width} bits{', set by ' + source if source else ''}) would end "
                f"at bit {pos + width - 1}"
            )
        fields.append(Field(fname, pos, width, (name, fname) in SIGNED_FIELDS))
        pos += width
    return Layout(name, tuple(fields), total)


@cache
def _layout_cached(name: str, cfg: HwConfig) -> Layout:
    return _pack(name, cfg)


def layout(name: str, cfg: HwConfig) -> Layout:
    """The resolved layout of format ``name`` ('mem', 'gemm', 'alu', 'finish', 'uop')."""
    if name not in FORMATS:
        raise KeyError(f"unknown format {name!r}; formats: {', '.join(FORMATS)}")
    return _layout_cached(name, cfg)


def check_config_fits(cfg: HwConfig) -> None:
    """Raise :class:`ConfigError` naming the field when a format does not fit its word."""
    for name in FORMATS:
        _pack(name, cfg)


@dataclasses.dataclass(frozen=True)
class Limits:
    """The value range of every instruction and micro-op field for one config.

    Derived from the format declarations (:data:`FORMATS`) and the config's buffer depths, so
    every consumer reads the same numbers instead of retyping them: the compiler's DMA sizes,
    strides and pads (``mem``), micro-op loop extents and factors (``gemm``/``alu``), ALU
    immediates (``alu``, ``imm``, signed) and micro-op indices (``uop``).

    ``ranges[fmt][field]`` is the inclusive ``(min, max)`` a field can encode. What a field
    encodes may still run past the config's buffers (``uop_end`` encodes up to twice the uop
    depth less one, ``sram_base`` any 16-bit value): those are range faults of the instruction,
    found against the buffer depths (:meth:`HwConfig.depth_of`).

    >>> from isa.config import load_config
    >>> lim = limits(load_config("default"))
    >>> lim.max("mem", "x_size"), lim.max("mem", "y_pad_0"), lim.max("gemm", "iter_out")
    (65535, 15, 16383)
    >>> lim.range("alu", "imm")
    (-32768, 32767)
    >>> lim.max("gemm", "uop_end") >= 8192
    True
    """

    config_name: str
    ranges: Mapping[str, Mapping[str, tuple[int, int]]]

    def range(self, fmt: str, field: str) -> tuple[int, int]:
        """Inclusive ``(min, max)`` of ``field`` in format ``fmt``."""
        if fmt not in self.ranges:
            raise KeyError(f"unknown format {fmt!r}; formats: {', '.join(self.ranges)}")
        fields = self.ranges[fmt]
        if field not in fields:
            raise KeyError(f"format {fmt!r} has no field {field!r} (fields: {', '.join(fields)})")
        return fields[field]

    def max(self, fmt: str, field: str) -> int:
        """The largest value ``field`` of format ``fmt`` encodes."""
        return self.range(fmt, field)[1]

    def min(self, fmt: str, field: str) -> int:
        """The smallest value ``field`` of format ``fmt`` encodes (negative only for ``imm``)."""
        return self.range(fmt, field)[0]

    def fields(self, fmt: str) -> tuple[str, ...]:
        """The fields of ``fmt`` in packing order."""
        return tuple(self.ranges[fmt])


@cache
def limits(cfg: HwConfig) -> Limits:
    """Per-field encodable ranges of every format for ``cfg`` (see :class:`Limits`).

    >>> from isa.config import load_config
    >>> limits(load_config("default")).max("mem", "x_stride")
    65535
    """
    ranges = {
        name: MappingProxyType(
            {f.name: (f.min_value, f.max_value) for f in layout(name, cfg).fields}
        )
        for name in FORMATS
    }
    return Limits(cfg.name, MappingProxyType(ranges))
