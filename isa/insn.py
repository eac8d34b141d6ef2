"""Instructions and micro-ops as typed, immutable Python objects (ISA.md §2, §3).

Example:
    >>> ld = Load(memory_type=MemType.INP, sram_base=0, dram_base=16, y_size=1, x_size=4,
    ...           x_stride=4, push_next_dep=True)
    >>> module_of(ld), ld.pushes()
    ('load', ('load->compute',))
"""

from __future__ import annotations

import dataclasses
from enum import IntEnum
from typing import ClassVar


class Opcode(IntEnum):
    LOAD = 0
    STORE = 1
    GEMM = 2
    FINISH = 3
    ALU = 4


class MemType(IntEnum):
    UOP = 0
    WGT = 1
    INP = 2
    ACC = 3
    OUT = 4
    ACC8 = 5


class AluOp(IntEnum):
    MIN = 0
    MAX = 1
    ADD = 2
    SHR = 3
    MUL = 4


#: Module names, in pipeline order; "prev"/"next" in the dependency flags are relative to it.
MODULES = ("load", "compute", "store")

#: The four dependency queues: name -> (producer module, consumer module).
DEP_QUEUES: dict[str, tuple[str, str]] = {
    "load->compute": ("load", "compute"),
    "compute->load": ("compute", "load"),
    "compute->store": ("compute", "store"),
    "store->compute": ("store", "compute"),
}

_PREV = {"compute": "load", "store": "compute"}
_NEXT = {"load": "compute", "compute": "store"}

DEP_FLAGS = ("pop_prev_dep", "pop_next_dep", "push_prev_dep", "push_next_dep")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Insn:
    """Fields common to every instruction: the four dependency flags."""

    pop_prev_dep: bool = False
    pop_next_dep: bool = False
    push_prev_dep: bool = False
    push_next_dep: bool = False

    opcode: ClassVar[Opcode]
    fmt: ClassVar[str]

    def field_values(self) -> dict[str, int]:
        """Every field of the instruction's format, as integers, opcode included."""
        values = {"opcode": int(self.opcode)}
        for f in dataclasses.fields(self):
            values[f.name] = int(getattr(self, f.name))
        return values

    @property
    def module(self) -> str:
        return module_of(self)

    def pops(self) -> tuple[str, ...]:
        """Names of the dependency queues this instruction pops, for its module."""
        return tuple(q for flag, q in _queue_flags(self) if flag.startswith("pop"))

    def pushes(self) -> tuple[str, ...]:
        """Names of the dependency queues this instruction pushes, for its module."""
        return tuple(q for flag, q in _queue_flags(self) if flag.startswith("push"))

    def with_deps(self, **flags: bool) -> Insn:
        """A copy with some dependency flags changed."""
        return dataclasses.replace(self, **flags)


@dataclasses.dataclass(frozen=True, kw_only=True)
class _MemInsn(Insn):
    memory_type: MemType
    sram_base: int = 0
    dram_base: int = 0
    y_size: int = 1
    x_size: int = 0
    x_stride: int = 0
    y_pad_0: int = 0
    y_pad_1: int = 0
    x_pad_0: int = 0
    x_pad_1: int = 0

    fmt: ClassVar[str] = "mem"

    @property
    def is_nop(self) -> bool:
        """``x_size == 0`` makes a LOAD or STORE a NOP that only handles its flags."""
        return self.x_size == 0

    @property
    def rows(self) -> int:
        """Rows written to SRAM, padding included."""
        return self.y_pad_0 + self.y_size + self.y_pad_1

    @property
    def row_width(self) -> int:
        """SRAM entries per row, padding included."""
        return self.x_pad_0 + self.x_size + self.x_pad_1


@dataclasses.dataclass(frozen=True, kw_only=True)
class Load(_MemInsn):
    """LOAD: DRAM → SRAM, 2-D strided with zero padding."""

    opcode: ClassVar[Opcode] = Opcode.LOAD


@dataclasses.dataclass(frozen=True, kw_only=True)
class Store(_MemInsn):
    """STORE: out buffer → DRAM, 2-D strided. memory_type must be OUT."""

    memory_type: MemType = MemType.OUT
    opcode: ClassVar[Opcode] = Opcode.STORE


@dataclasses.dataclass(frozen=True, kw_only=True)
class _UopLoopInsn(Insn):
    reset: bool = False
    uop_begin: int = 0
    uop_end: int = 0
    iter_out: int = 1
    iter_in: int = 1
    dst_factor_out: int = 0
    dst_factor_in: int = 0
    src_factor_out: int = 0
    src_factor_in: int = 0

    @property
    def uop_count(self) -> int:
        """Micro-ops the instruction executes: iter_out × iter_in × (uop_end − uop_begin)."""
        return self.iter_out * self.iter_in * max(0, self.uop_end - self.uop_begin)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Gemm(_UopLoopInsn):
    """GEMM: acc[dst] += inp[src] · wgt[wgt]ᵀ over a two-level micro-op loop (or reset)."""

    wgt_factor_out: int = 0
    wgt_factor_in: int = 0

    opcode: ClassVar[Opcode] = Opcode.GEMM
    fmt: ClassVar[str] = "gemm"


@dataclasses.dataclass(frozen=True, kw_only=True)
class Alu(_UopLoopInsn):
    """ALU: acc[dst] = op(acc[dst], imm or acc[src]), lane by lane."""

    alu_opcode: AluOp = AluOp.ADD
    use_imm: bool = False
    imm: int = 0

    opcode: ClassVar[Opcode] = Opcode.ALU
    fmt: ClassVar[str] = "alu"


@dataclasses.dataclass(frozen=True, kw_only=True)
class Finish(Insn):
    """FINISH: ends the run when compute executes it."""

    opcode: ClassVar[Opcode] = Opcode.FINISH
    fmt: ClassVar[str] = "finish"


@dataclasses.dataclass(frozen=True)
class Uop:
    """A micro-op: acc index ``dst``, source ``src`` (inp for GEMM, acc for ALU), weight ``wgt``."""

    dst: int
    src: int = 0
    wgt: int = 0


INSN_CLASSES: dict[Opcode, type[Insn]] = {
    Opcode.LOAD: Load,
    Opcode.STORE: Store,
    Opcode.GEMM: Gemm,
    Opcode.FINISH: Finish,
    Opcode.ALU: Alu,
}

#: Format name of each opcode.
OPCODE_FORMAT: dict[int, str] = {int(op): cls.fmt for op, cls in INSN_CLASSES.items()}


def module_of_fields(opcode: int, memory_type: int = 0) -> str:
    """Which module executes an instruction (ISA.md §3 routing)."""
    if opcode == Opcode.STORE:
        return "store"
    if opcode == Opcode.LOAD and memory_type in (MemType.INP, MemType.WGT):
        return "load"
    return "compute"


def module_of(insn: Insn) -> str:
    """Which module executes ``insn``: STORE → store, LOAD INP/WGT → load, else compute
    (:func:`module_of_fields` on an instruction object, without converting its fields: a code
    generator asks for every dependency push)."""
    if isinstance(insn, Store):
        return "store"
    if isinstance(insn, Load) and insn.memory_type in (MemType.INP, MemType.WGT):
        return "load"
    return "compute"


def queue_of(module: str, flag: str) -> str | None:
    """The dependency queue that ``flag`` names for ``module``, or None if it names none.

    >>> queue_of("compute", "pop_prev_dep"), queue_of("load", "pop_prev_dep")
    ('load->compute', None)
    """
    direction = "prev" if "prev" in flag else "next"
    other = (_PREV if direction == "prev" else _NEXT).get(module)
    if other is None:
        return None
    if flag.startswith("pop"):
        return f"{other}->{module}"
    return f"{module}->{other}"


def _queue_flags(insn: Insn) -> list[tuple[str, str]]:
    mod = module_of(insn)
    out = []
    for flag in DEP_FLAGS:
        if getattr(insn, flag):
            q = queue_of(mod, flag)
            if q is not None:
                out.append((flag, q))
    return out
