"""DRAM layout of an accelerator program: tensors first, then micro-ops, then instructions.

Tensors are placed before code so that every DMA knows its DRAM address while the stream is
being built; the micro-op area starts right after them and the instructions follow the
micro-ops once their count is known.

Example:
    >>> import numpy as np, isa
    >>> from compiler.targets.vta.stream import StreamBuilder
    >>> cfg = isa.load_config("default")
    >>> dram = DramLayout(cfg)
    >>> _ = dram.alloc("x", (4, 4), "int8", role="input", data=np.ones((4, 4), np.int8))
    >>> b = StreamBuilder(cfg, uop_dram_base=dram.uop_dram_base())
    >>> prog = dram.finalize(b.finish())
    >>> prog.read("x").sum(), prog.insn_count
    (np.int64(16), 4)
"""

from __future__ import annotations

import numpy as np

from isa import HwConfig, MemType, Program, Symbol
from isa.encoding import encode_stream

from .errors import VTATargetError
from .stream import Stream


class DramLayout:
    """Places named tensors in the DRAM image and assembles the final :class:`Program`."""

    def __init__(self, cfg: HwConfig):
        self.cfg = cfg
        # every element size divides this, so any tensor can be addressed as any memory type
        self.align = max(64, cfg.wgt_elem_bytes, cfg.inp_elem_bytes, cfg.acc_elem_bytes)
        self.symbols: dict[str, Symbol] = {}
        self.data: dict[str, np.ndarray] = {}
        self.end = 0
        self._sealed = False

    def alloc(
        self,
        name: str,
        shape: tuple[int, ...],
        dtype: str,
        *,
        layout: str = "",
        role: str = "param",
        data: np.ndarray | None = None,
    ) -> Symbol:
        """Reserve space for tensor ``name`` (and its initial ``data``, if given)."""
        if self._sealed:
            raise VTATargetError(f"tensor {name!r}: the DRAM layout is sealed once code begins")
        if name in self.symbols:
            raise VTATargetError(f"tensor {name!r} is allocated twice")
        offset = -(-self.end // self.align) * self.align
        sym = Symbol(name, offset, str(np.dtype(dtype)), tuple(int(s) for s in shape), layout, role)
        if data is not None:
            arr = np.asarray(data)
            if arr.shape != sym.shape:
                raise VTATargetError(
                    f"tensor {name!r}: data of shape {arr.shape} for declared {sym.shape}"
                )
            self.data[name] = np.ascontiguousarray(arr.astype(sym.dtype))
        self.symbols[name] = sym
        self.end = offset + sym.nbytes
        return sym

    def elem_base(self, name: str, memory_type: MemType) -> int:
        """DRAM address of tensor ``name`` in elements of ``memory_type`` (a dram_base field)."""
        sym = self.symbols[name]
        elem = self.cfg.mem_elem_bytes(memory_type)
        if sym.offset % elem:
            raise VTATargetError(
                f"tensor {name!r} at byte {sym.offset} is not aligned to {memory_type.name} "
                f"elements of {elem} bytes"
            )
        return sym.offset // elem

    def uop_dram_base(self) -> int:
        """Where the micro-op area starts, in 4-byte micro-op elements; seals the tensors."""
        self._sealed = True
        return -(-self.end // self.align) * self.align // 4

    def finalize(self, stream: Stream) -> Program:
        """The program file contents: tensors, micro-ops, then the instructions."""
        uop_lo = stream.uop_dram_base * 4
        uop_hi = uop_lo + stream.uop_words.size * 4
        insn_base = -(-uop_hi // 64) * 64
        code = encode_stream(stream.insns, self.cfg)
        dram = np.zeros(insn_base + code.size, np.uint8)
        for name, arr in self.data.items():
            s = self.symbols[name]
            dram[s.offset : s.offset + s.nbytes] = arr.reshape(-1).view(np.uint8)
        dram[uop_lo:uop_hi] = stream.uop_words.view(np.uint8)
        dram[insn_base:] = code
        return Program(self.cfg, dram, insn_base, len(stream.insns), dict(self.symbols))
