"""The one DRAM layout of a program file: where tensors, micro-ops and instructions go.

The compiler's codegen, the assembler's ``auto`` offsets, the simulator tests and the RTL
test programs all place their regions with :class:`DramBuilder`:

* **alignment** -- every region starts at a multiple of :func:`dram_alignment`, the least
  common multiple of a floor (64 bytes unless the caller asks for more) and every memory
  type's element size, so any tensor can be addressed by a LOAD or STORE of any memory type
  (a ``dram_base`` counts elements);
* **placement** -- regions are placed in the order they are added, each at the first aligned
  offset after the end of the previous one; an empty region still takes one byte, so no two
  regions share an address;
* **order** -- tensors first, then the micro-ops, then the instructions: tensors come before
  code so every DMA knows its DRAM address while the instruction stream is being built;
* **sealing** -- :meth:`DramBuilder.seal` ends the tensor area (it returns where code starts);
  a tensor added after it is an error naming the tensor, as are a name given twice and data of
  the wrong shape.

Example:
    >>> import numpy as np, isa
    >>> b = DramBuilder(isa.load_config("vta-1x16x16"))
    >>> b.align
    256
    >>> b.tensor("x", (4, 4), "int8", role="input", data=np.ones((4, 4), np.int8)).offset
    0
    >>> b.tensor("y", (4, 4), "int8", role="output").offset
    256
    >>> prog = b.program([isa.Finish()])
    >>> prog.insn_base, prog.read("x").sum()
    (512, np.int64(16))
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .config import HwConfig
from .encoding import INSN_BYTES, InsnBlock, encode_stream
from .errors import ProgramError
from .insn import Insn, MemType
from .program import Program, Symbol

#: The smallest alignment of a region, in bytes (a cache line of the DRAM model's bursts).
MIN_ALIGN = 64
#: The kinds of region, in the order they lie in DRAM.
REGION_KINDS = ("tensor", "uops", "insns")


def dram_alignment(cfg: HwConfig, floor: int = MIN_ALIGN) -> int:
    """The byte alignment of every region for ``cfg``: ``floor`` and every element size divide it.

    Example:
        >>> import isa
        >>> cfg = isa.load_config("default")
        >>> dram_alignment(cfg), dram_alignment(cfg, floor=256)
        (64, 256)
    """
    if floor < 1:
        raise ProgramError(f"DRAM alignment floor {floor} is not a positive number of bytes")
    sizes = [cfg.mem_elem_bytes(mt) for mt in MemType]
    return math.lcm(floor, 16, *sizes)  # 16: an instruction word


def align_up(offset: int, align: int) -> int:
    """``offset`` rounded up to a multiple of ``align``.

    Example:
        >>> align_up(65, 64), align_up(128, 64)
        (128, 128)
    """
    return -(-offset // align) * align


@dataclass(frozen=True)
class Region:
    """A placed region: ``nbytes`` bytes at byte ``offset``; ``kind`` is one of REGION_KINDS."""

    name: str
    offset: int
    nbytes: int
    kind: str


class DramBuilder:
    """Places named regions in a DRAM image by the rule of this module and builds the program.

    ``floor`` raises the alignment (see :func:`dram_alignment`) where a test program's
    committed layout needs it.
    """

    def __init__(self, cfg: HwConfig, *, floor: int = MIN_ALIGN):
        self.cfg = cfg
        self.align = dram_alignment(cfg, floor)
        self.regions: dict[str, Region] = {}
        self.symbols: dict[str, Symbol] = {}
        self.data: dict[str, np.ndarray] = {}
        self.end = 0
        self.sealed = False

    # ---- placement ------------------------------------------------------------------------
    def _place(self, name: str, nbytes: int, kind: str) -> int:
        if name in self.regions:
            raise ProgramError(f"DRAM region {name!r} is placed twice")
        last = max((REGION_KINDS.index(r.kind) for r in self.regions.values()), default=0)
        if REGION_KINDS.index(kind) < last:
            raise ProgramError(
                f"DRAM region {name!r}: a {kind} region after the {REGION_KINDS[last]} "
                f"(the order is {', '.join(REGION_KINDS)})"
            )
        offset = align_up(self.end, self.align)
        self.regions[name] = Region(name, offset, nbytes, kind)
        self.end = offset + max(nbytes, 1)
        return offset

    def tensor(
        self,
        name: str,
        shape: Sequence[int],
        dtype: str,
        *,
        layout: str = "",
        role: str = "param",
        data: np.ndarray | None = None,
    ) -> Symbol:
        """Place tensor ``name`` (with its initial ``data``, if given; zeros otherwise).

        Example:
            >>> import isa
            >>> b = DramBuilder(isa.load_config("default"))
            >>> b.tensor("w", (2, 16), "int8").nbytes, b.tensor("x", (4,), "int32").offset
            (32, 64)
        """
        if self.sealed:
            raise ProgramError(f"tensor {name!r}: the DRAM layout is sealed once code begins")
        dims = tuple(int(s) for s in shape)
        nbytes = int(np.prod(dims, dtype=np.int64)) * np.dtype(dtype).itemsize
        if data is not None:
            arr = np.asarray(data)
            if arr.shape != dims:
                raise ProgramError(f"tensor {name!r}: data of shape {arr.shape} for {dims}")
            self.data[name] = np.ascontiguousarray(arr.astype(dtype))
        offset = self._place(name, nbytes, "tensor")
        sym = Symbol(name, offset, str(np.dtype(dtype)), dims, layout, role)
        self.symbols[name] = sym
        return sym

    def put(self, name: str, value: np.ndarray, *, role: str = "param", layout: str = "") -> int:
        """Place tensor ``name`` holding ``value`` (its shape and dtype); returns its byte offset.

        Example:
            >>> import isa
            >>> DramBuilder(isa.load_config("default")).put("x", np.arange(4, dtype=np.int8))
            0
        """
        arr = np.asarray(value)
        return self.tensor(name, arr.shape, str(arr.dtype), layout=layout, role=role,
                           data=arr).offset  # fmt: skip

    def blob(self, name: str, value: np.ndarray) -> int:
        """Place ``value``'s bytes as a tensor region that declares no symbol (scratch space,
        a hand-written program's micro-ops); returns its byte offset.

        Example:
            >>> import isa
            >>> b = DramBuilder(isa.load_config("default"))
            >>> b.blob("scratch", np.zeros(100, np.uint8)), b.blob("more", np.zeros(1, np.uint8))
            (0, 128)
        """
        if self.sealed:
            raise ProgramError(f"region {name!r}: the DRAM layout is sealed once code begins")
        raw = np.ascontiguousarray(value).reshape(-1).view(np.uint8)
        offset = self._place(name, raw.size, "tensor")
        self.data[name] = raw
        return offset

    def elem_base(self, name: str, memory_type: MemType) -> int:
        """Tensor ``name``'s address in elements of ``memory_type`` (a ``dram_base`` field).

        Example:
            >>> import isa
            >>> b = DramBuilder(isa.load_config("default"))
            >>> _ = b.put("a", np.zeros(8, np.int8)); _ = b.put("b", np.zeros(8, np.int8))
            >>> b.elem_base("b", isa.MemType.WGT)
            4
        """
        if name not in self.regions:
            raise ProgramError(f"no tensor {name!r} in the DRAM layout")
        return self.elem_of(self.regions[name].offset, memory_type, what=f"tensor {name!r}")

    def elem_of(self, offset: int, memory_type: MemType, *, what: str = "byte offset") -> int:
        """Byte ``offset`` in elements of ``memory_type``; an error if they do not divide it."""
        elem = self.cfg.mem_elem_bytes(memory_type)
        if offset % elem:
            raise ProgramError(
                f"{what} at byte {offset} is not aligned to {MemType(memory_type).name} "
                f"elements of {elem} bytes"
            )
        return offset // elem

    def seal(self) -> int:
        """End the tensor area; returns where code starts (the micro-ops), in bytes."""
        self.sealed = True
        return align_up(self.end, self.align)

    def uops(self, words: np.ndarray, name: str = "uops") -> int:
        """Place encoded micro-op words (uint32) after the tensors; returns their byte offset."""
        self.seal()
        raw = np.ascontiguousarray(words, dtype=np.uint32).reshape(-1)
        offset = self._place(name, raw.size * 4, "uops")
        self.data[name] = raw
        return offset

    # ---- the program ------------------------------------------------------------------------
    def program(self, insns: Sequence[Insn | InsnBlock], symbols: Sequence[Symbol] = ()) -> Program:
        """The program file: every region's bytes, then ``insns`` after everything placed;
        ``symbols`` are declared besides the tensors'."""
        self.seal()
        code = encode_stream(insns, self.cfg)
        insn_base = self._place("insns", code.size, "insns")
        dram = np.zeros(insn_base + code.size, np.uint8)
        for name, arr in self.data.items():
            r = self.regions[name]
            dram[r.offset : r.offset + r.nbytes] = arr.reshape(-1).view(np.uint8)
        dram[insn_base:] = code
        syms = dict(self.symbols) | {s.name: s for s in symbols}
        return Program(self.cfg, dram, insn_base, code.size // INSN_BYTES, syms)
