"""DRAM layout of a compiled accelerator program: :class:`isa.dram.DramBuilder`'s rule (tensors,
then micro-ops, then instructions, each at the config's alignment) with the compiler's errors.

Tensors are placed before code so that every DMA knows its DRAM address while the stream is
being built; the micro-op area starts right after them (:meth:`DramLayout.uop_dram_base` seals
the tensor area) and the instructions follow the micro-ops once their count is known.

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

from isa import HwConfig, MemType, Program, ProgramError, Symbol
from isa.dram import DramBuilder

from .errors import VTATargetError
from .stream import Stream


class DramLayout:
    """Places named tensors in the DRAM image and assembles the final :class:`Program`."""

    def __init__(self, cfg: HwConfig):
        self.cfg = cfg
        self._dram = DramBuilder(cfg)
        self.align = self._dram.align

    @property
    def symbols(self) -> dict[str, Symbol]:
        return self._dram.symbols

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
        try:
            return self._dram.tensor(name, shape, dtype, layout=layout, role=role, data=data)
        except ProgramError as e:
            raise VTATargetError(str(e)) from None

    def elem_base(self, name: str, memory_type: MemType) -> int:
        """DRAM address of tensor ``name`` in elements of ``memory_type`` (a dram_base field)."""
        try:
            return self._dram.elem_base(name, memory_type)
        except ProgramError as e:
            raise VTATargetError(str(e)) from None

    def uop_dram_base(self) -> int:
        """Where the micro-op area starts, in 4-byte micro-op elements; seals the tensors."""
        return self._dram.seal() // 4

    def finalize(self, stream: Stream) -> Program:
        """The program file contents: tensors, micro-ops, then the instructions."""
        at = self._dram.uops(stream.uop_words)
        if at != stream.uop_dram_base * 4:
            raise VTATargetError(
                f"the stream's micro-ops were addressed at byte {stream.uop_dram_base * 4}, "
                f"but the DRAM layout places them at byte {at}"
            )
        return self._dram.program(stream.insns)
