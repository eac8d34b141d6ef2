"""On-chip buffers in the shapes the ISA kernels take, plus the flat views the DMA kernels take.

The typed views (``inp``, ``wgt``, ``acc``, ``out``, ``uop``) and the byte views share memory, so a
LOAD through a byte view is seen by GEMM through the typed one, as in :class:`isa.Machine`.

Example:
    >>> import isa
    >>> b = Buffers(isa.load_config("default"))
    >>> b.inp.shape, b.inp_bytes.size, b.acc_flat.size
    ((2048, 1, 4), 8192, 8192)
"""

from __future__ import annotations

import numpy as np

from isa import HwConfig


class Buffers:
    """Zeroed SRAMs of ``cfg``: inp, wgt, acc, out, micro-op words and the decoded uop table."""

    def __init__(self, cfg: HwConfig):
        b, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
        self.inp = np.zeros((cfg.inp_depth, b, bi), np.int8)
        self.wgt = np.zeros((cfg.wgt_depth, bo, bi), np.int8)
        self.acc = np.zeros((cfg.acc_depth, b, bo), np.int32)
        self.out = np.zeros((cfg.out_depth, b, bo), np.int8)
        self.uop_words = np.zeros(cfg.uop_depth, np.uint32)
        self.uop = np.zeros((cfg.uop_depth, 3), np.int32)
        self.inp_bytes = _bytes(self.inp)
        self.wgt_bytes = _bytes(self.wgt)
        self.acc_bytes = _bytes(self.acc)
        self.acc_flat = self.acc.reshape(-1)
        self.out_bytes = _bytes(self.out)
        self.uop_bytes = _bytes(self.uop_words)

    def engine_args(self) -> tuple[np.ndarray, ...]:
        """The buffers in the event loop's argument order (after the table and DRAM)."""
        return (
            self.inp,
            self.inp_bytes,
            self.wgt,
            self.wgt_bytes,
            self.acc,
            self.acc_bytes,
            self.acc_flat,
            self.out,
            self.out_bytes,
            self.uop_words,
            self.uop_bytes,
            self.uop,
        )


def _bytes(arr: np.ndarray) -> np.ndarray:
    return arr.reshape(-1).view(np.uint8)
