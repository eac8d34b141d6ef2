"""Reference semantics of every instruction (ISA.md §3), written once.

The kernels below are plain loops over numpy arrays and integers, with no Python objects, so the
simulator compiles these very functions with numba while this module, the compiler's intrinsic
checks and the testbench scoreboard run them as they are. The kernels call the small functions
listed in :data:`HELPERS` by global name; a compiler must compile those first and resolve the
kernels' globals to the compiled helpers (``vta_sim/kernels.py`` shows how).
A kernel returns 0, or an error code from :data:`ERRORS` that names the field at fault; the
caller turns it into an :class:`~isa.errors.ExecutionError` carrying the instruction index.

Buffers, as the kernels take them (flat and C-contiguous):

==========  ==========================================  ====================================
buffer      array                                        element
==========  ==========================================  ====================================
inp         int8  (inp_depth, batch, block_in)           one input tile
wgt         int8  (wgt_depth, block_out, block_in)       one weight tile, out-major
acc         int32 (acc_depth, batch, block_out)          one accumulator tile
out         int8  (acc_depth, batch, block_out)          low 8 bits of acc, written with it
uop         int32 (uop_depth, 3)                         decoded (dst, src, wgt)
==========  ==========================================  ====================================

Example (a 1×4·4×4 product through the :class:`Machine`):

    >>> import numpy as np
    >>> from isa.config import load_config
    >>> m = Machine(load_config("default"))
    >>> m.inp[0] = 1; m.wgt[0] = np.arange(16).reshape(4, 4); m.uop[0] = (0, 0, 0)
    >>> m.execute(Gemm(uop_begin=0, uop_end=1))
    >>> m.acc[0].tolist()
    [[6, 22, 38, 54]]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .errors import ExecutionError
from .insn import (
    Alu,
    AluOp,
    Finish,
    Gemm,
    Insn,
    Load,
    MemType,
    Opcode,
    Store,
)

if TYPE_CHECKING:
    from .config import HwConfig

# ---- error codes ------------------------------------------------------------------------
OK = 0
ERR_SRAM_RANGE = 1
ERR_DRAM_RANGE = 2
ERR_UOP_RANGE = 3
ERR_DST_RANGE = 4
ERR_SRC_RANGE = 5
ERR_WGT_RANGE = 6
ERR_MEM_TYPE = 7
ERR_STORE_PAD = 8
ERR_ALU_OP = 9
ERR_OPCODE = 10
ERR_DEP_FLAG = 11
#: Not an error: a GEMM/ALU loop with no micro-op to run (used inside the kernels only).
NOTHING_TO_DO = -1

#: code -> (field at fault, what is wrong)
ERRORS: dict[int, tuple[str, str]] = {
    ERR_SRAM_RANGE: ("sram_base", "the SRAM range runs past the end of its buffer"),
    ERR_DRAM_RANGE: ("dram_base", "the DRAM range runs past the end of the DRAM image"),
    ERR_UOP_RANGE: ("uop_end", "the micro-op range is empty-inverted or past the uop buffer"),
    ERR_DST_RANGE: ("dst", "a micro-op's accumulator index (dst) runs past the acc buffer"),
    ERR_SRC_RANGE: ("src", "a micro-op's source index (src) runs past its buffer"),
    ERR_WGT_RANGE: ("wgt", "a micro-op's weight index (wgt) runs past the wgt buffer"),
    ERR_MEM_TYPE: ("memory_type", "this memory type is not allowed here"),
    ERR_STORE_PAD: ("y_pad_0/y_pad_1/x_pad_0/x_pad_1", "STORE padding must be zero"),
    ERR_ALU_OP: ("alu_opcode", "not an ALU opcode of the ISA"),
    ERR_OPCODE: ("opcode", "not an opcode of the ISA"),
    ERR_DEP_FLAG: ("dependency flags", "a flag names a queue this module does not have"),
}

_INT32_MIN = -(1 << 31)

#: Integer arguments of the lane helpers: Python ints, or numpy scalars inside the kernels.
IntLike = int | np.integer

#: Functions the kernels call by global name (compile these before the kernels).
HELPERS = (
    "wrap32",
    "low8",
    "alu_apply",
    "_max_index",
    "_uop_loop_check",
    "gemm_check",
    "alu_check",
    "load_check",
    "store_check",
)
#: The instruction kernels.
KERNELS = (
    "load_kernel",
    "load_acc8_kernel",
    "decode_uop_kernel",
    "store_kernel",
    "gemm_kernel",
    "alu_kernel",
)


def error_message(code: int, *, index: int | None = None, detail: str = "") -> ExecutionError:
    """Build the :class:`ExecutionError` for kernel error ``code``."""
    field, what = ERRORS.get(code, ("?", f"unknown error code {code}"))
    return ExecutionError(what + (f": {detail}" if detail else ""), index=index, field=field)


# ---- helpers usable from compiled code --------------------------------------------------
def wrap32(v: IntLike) -> int:
    """Two's complement wrap of an integer to int32."""
    return ((v + (1 << 31)) & 0xFFFFFFFF) + _INT32_MIN


def low8(v: IntLike) -> int:
    """The low 8 bits of an integer, as a signed int8 value."""
    return ((v + 128) & 0xFF) - 128


def alu_apply(op: int, x: IntLike, y: IntLike) -> IntLike:
    """One ALU lane: ``op(x, y)`` on int32 values, result wrapped to int32.

    SHR by y ≥ 0 is floor(x / 2**y) (arithmetic); by y < 0 it is x · 2**(−y) wrapped, so a
    shift by 32 or more gives the sign fill (right) or 0 (left).
    """
    if op == 0:  # MIN
        return x if x < y else y
    if op == 1:  # MAX
        return x if x > y else y
    if op == 2:  # ADD
        return wrap32(x + y)
    if op == 3:  # SHR
        if y >= 0:
            return x >> (y if y < 31 else 31)
        s = -y
        if s >= 32:
            return 0
        return wrap32(x << s)
    # MUL
    return wrap32(x * y)


# ---- DMA kernels ------------------------------------------------------------------------
def load_check(
    sram: np.ndarray,
    elem_bytes: int,
    dram: np.ndarray,
    sram_base: int,
    dram_base: int,
    y_size: int,
    x_size: int,
    x_stride: int,
    y_pad_0: int,
    y_pad_1: int,
    x_pad_0: int,
    x_pad_1: int,
) -> int:
    """Every check of :func:`load_kernel`, without its work: ``OK``, :data:`NOTHING_TO_DO`
    (``x_size == 0``, a NOP) or an error code."""
    if x_size == 0:
        return NOTHING_TO_DO
    depth = sram.shape[0] // elem_bytes
    width = x_pad_0 + x_size + x_pad_1
    rows = y_pad_0 + y_size + y_pad_1
    if sram_base + rows * width > depth:
        return ERR_SRAM_RANGE
    if y_size > 0 and (dram_base + (y_size - 1) * x_stride + x_size) * elem_bytes > dram.shape[0]:
        return ERR_DRAM_RANGE
    return OK


def store_check(
    sram: np.ndarray,
    elem_bytes: int,
    dram: np.ndarray,
    sram_base: int,
    dram_base: int,
    y_size: int,
    x_size: int,
    x_stride: int,
    pad_sum: int,
) -> int:
    """Every check of :func:`store_kernel`, without its work: ``OK``, :data:`NOTHING_TO_DO`
    (``x_size == 0``, a NOP) or an error code."""
    if x_size == 0:
        return NOTHING_TO_DO
    if pad_sum != 0:
        return ERR_STORE_PAD
    depth = sram.shape[0] // elem_bytes
    if sram_base + y_size * x_size > depth:
        return ERR_SRAM_RANGE
    if y_size > 0 and (dram_base + (y_size - 1) * x_stride + x_size) * elem_bytes > dram.shape[0]:
        return ERR_DRAM_RANGE
    return OK


def load_kernel(
    sram: np.ndarray,
    elem_bytes: int,
    dram: np.ndarray,
    sram_base: int,
    dram_base: int,
    y_size: int,
    x_size: int,
    x_stride: int,
    y_pad_0: int,
    y_pad_1: int,
    x_pad_0: int,
    x_pad_1: int,
) -> int:
    """LOAD into a buffer viewed as flat bytes (``sram``: uint8, depth × elem_bytes).

    Fills entries from ``sram_base``: ``y_pad_0`` zero rows, ``y_size`` rows of (``x_pad_0``
    zeros, ``x_size`` elements from DRAM element ``dram_base + y·x_stride``, ``x_pad_1`` zeros),
    then ``y_pad_1`` zero rows. ``x_size == 0`` is a NOP.
    """
    code = load_check(sram, elem_bytes, dram, sram_base, dram_base, y_size, x_size, x_stride,
                      y_pad_0, y_pad_1, x_pad_0, x_pad_1)  # fmt: skip
    if code != OK:
        return OK if code == NOTHING_TO_DO else code
    width = x_pad_0 + x_size + x_pad_1
    eb = elem_bytes
    top = sram_base * eb
    sram[top : top + y_pad_0 * width * eb] = 0
    for y in range(y_size):
        row = (sram_base + (y_pad_0 + y) * width) * eb
        sram[row : row + x_pad_0 * eb] = 0
        src = (dram_base + y * x_stride) * eb
        dst = row + x_pad_0 * eb
        sram[dst : dst + x_size * eb] = dram[src : src + x_size * eb]
        sram[dst + x_size * eb : row + width * eb] = 0
    bottom = (sram_base + (y_pad_0 + y_size) * width) * eb
    sram[bottom : bottom + y_pad_1 * width * eb] = 0
    return OK


def load_acc8_kernel(
    acc: np.ndarray,
    lanes: int,
    dram: np.ndarray,
    sram_base: int,
    dram_base: int,
    y_size: int,
    x_size: int,
    x_stride: int,
    y_pad_0: int,
    y_pad_1: int,
    x_pad_0: int,
    x_pad_1: int,
) -> int:
    """LOAD ACC8: int8 DRAM elements of ``lanes`` bytes, sign-extended into the flat int32 acc."""
    if x_size == 0:
        return OK
    depth = acc.shape[0] // lanes
    width = x_pad_0 + x_size + x_pad_1
    rows = y_pad_0 + y_size + y_pad_1
    if sram_base + rows * width > depth:
        return ERR_SRAM_RANGE
    if y_size > 0 and (dram_base + (y_size - 1) * x_stride + x_size) * lanes > dram.shape[0]:
        return ERR_DRAM_RANGE
    acc[sram_base * lanes : (sram_base + rows * width) * lanes] = 0
    for y in range(y_size):
        dst = (sram_base + (y_pad_0 + y) * width + x_pad_0) * lanes
        src = (dram_base + y * x_stride) * lanes
        for i in range(x_size * lanes):
            b = np.int32(dram[src + i])
            acc[dst + i] = b - 256 if b >= 128 else b
    return OK


def decode_uop_kernel(
    words: np.ndarray,
    uop: np.ndarray,
    begin: int,
    end: int,
    dst_lsb: int,
    dst_mask: int,
    src_lsb: int,
    src_mask: int,
    wgt_lsb: int,
    wgt_mask: int,
) -> None:
    """Decode uop words [begin, end) into the (depth, 3) int32 table ``uop``."""
    for i in range(begin, end):
        w = np.int64(words[i]) & 0xFFFFFFFF
        uop[i, 0] = (w >> dst_lsb) & dst_mask
        uop[i, 1] = (w >> src_lsb) & src_mask
        uop[i, 2] = (w >> wgt_lsb) & wgt_mask


def store_kernel(
    sram: np.ndarray,
    elem_bytes: int,
    dram: np.ndarray,
    sram_base: int,
    dram_base: int,
    y_size: int,
    x_size: int,
    x_stride: int,
    pad_sum: int,
) -> int:
    """STORE: out entry ``sram_base + y·x_size + x`` → DRAM ``dram_base + y·x_stride + x``."""
    code = store_check(sram, elem_bytes, dram, sram_base, dram_base, y_size, x_size, x_stride,
                       pad_sum)  # fmt: skip
    if code != OK:
        return OK if code == NOTHING_TO_DO else code
    eb = elem_bytes
    for y in range(y_size):
        src = (sram_base + y * x_size) * eb
        dst = (dram_base + y * x_stride) * eb
        dram[dst : dst + x_size * eb] = sram[src : src + x_size * eb]
    return OK


# ---- compute kernels --------------------------------------------------------------------
def _max_index(
    uop: np.ndarray,
    col: int,
    begin: int,
    end: int,
    iter_out: int,
    iter_in: int,
    f_out: int,
    f_in: int,
) -> int:
    m = 0
    for k in range(begin, end):
        if uop[k, col] > m:
            m = uop[k, col]
    return m + (iter_out - 1) * f_out + (iter_in - 1) * f_in


def _uop_loop_check(
    uop: np.ndarray,
    acc_depth: int,
    uop_begin: int,
    uop_end: int,
    iter_out: int,
    iter_in: int,
    dst_factor_out: int,
    dst_factor_in: int,
) -> int:
    """Checks shared by GEMM and ALU: the micro-op range and every accumulator index.

    Returns :data:`NOTHING_TO_DO` for an empty loop, otherwise ``OK`` or an error code.
    """
    if iter_out == 0 or iter_in == 0:
        return NOTHING_TO_DO
    if uop_begin > uop_end or uop_end > uop.shape[0]:
        return ERR_UOP_RANGE
    if uop_begin == uop_end:
        return NOTHING_TO_DO
    top = _max_index(uop, 0, uop_begin, uop_end, iter_out, iter_in, dst_factor_out, dst_factor_in)
    if top >= acc_depth:
        return ERR_DST_RANGE
    return OK


def gemm_check(
    inp: np.ndarray,
    wgt: np.ndarray,
    acc: np.ndarray,
    uop: np.ndarray,
    reset: int,
    uop_begin: int,
    uop_end: int,
    iter_out: int,
    iter_in: int,
    dst_factor_out: int,
    dst_factor_in: int,
    src_factor_out: int,
    src_factor_in: int,
    wgt_factor_out: int,
    wgt_factor_in: int,
) -> int:
    """Every check of a GEMM, without its work: ``OK``, :data:`NOTHING_TO_DO` or an error code.

    A caller that must not start the work (a run's cycle limit) asks this first, so a fault is
    still reported as the fault.
    """
    code = _uop_loop_check(
        uop, acc.shape[0], uop_begin, uop_end, iter_out, iter_in, dst_factor_out, dst_factor_in
    )
    if code != OK or reset != 0:
        return code
    if (
        _max_index(uop, 1, uop_begin, uop_end, iter_out, iter_in, src_factor_out, src_factor_in)
        >= inp.shape[0]
    ):
        return ERR_SRC_RANGE
    if (
        _max_index(uop, 2, uop_begin, uop_end, iter_out, iter_in, wgt_factor_out, wgt_factor_in)
        >= wgt.shape[0]
    ):
        return ERR_WGT_RANGE
    return OK


def alu_check(
    acc: np.ndarray,
    uop: np.ndarray,
    reset: int,
    uop_begin: int,
    uop_end: int,
    iter_out: int,
    iter_in: int,
    dst_factor_out: int,
    dst_factor_in: int,
    src_factor_out: int,
    src_factor_in: int,
    alu_opcode: int,
    use_imm: int,
) -> int:
    """Every check of an ALU instruction, without its work (as :func:`gemm_check`)."""
    if alu_opcode < 0 or alu_opcode > 4:
        return ERR_ALU_OP
    code = _uop_loop_check(
        uop, acc.shape[0], uop_begin, uop_end, iter_out, iter_in, dst_factor_out, dst_factor_in
    )
    if code != OK:
        return code
    if (
        reset == 0
        and use_imm == 0
        and _max_index(uop, 1, uop_begin, uop_end, iter_out, iter_in, src_factor_out, src_factor_in)
        >= acc.shape[0]
    ):
        return ERR_SRC_RANGE
    return OK


def gemm_kernel(
    inp: np.ndarray,
    wgt: np.ndarray,
    acc: np.ndarray,
    out: np.ndarray,
    uop: np.ndarray,
    reset: int,
    uop_begin: int,
    uop_end: int,
    iter_out: int,
    iter_in: int,
    dst_factor_out: int,
    dst_factor_in: int,
    src_factor_out: int,
    src_factor_in: int,
    wgt_factor_out: int,
    wgt_factor_in: int,
) -> int:
    """GEMM (ISA.md §3): for i, j, k: acc[a] = 0 if reset else acc[a] + inp[x] · wgt[w]ᵀ.

    ``out[a]`` takes the low 8 bits of ``acc[a]`` after every write. Indices are checked
    before anything is written, so a failing instruction leaves the buffers untouched.
    """
    code = gemm_check(
        inp,
        wgt,
        acc,
        uop,
        reset,
        uop_begin,
        uop_end,
        iter_out,
        iter_in,
        dst_factor_out,
        dst_factor_in,
        src_factor_out,
        src_factor_in,
        wgt_factor_out,
        wgt_factor_in,
    )
    if code != OK:
        return OK if code == NOTHING_TO_DO else code
    batch = acc.shape[1]
    block_out = acc.shape[2]
    block_in = inp.shape[2]
    if reset != 0:
        for i in range(iter_out):
            for j in range(iter_in):
                base = i * dst_factor_out + j * dst_factor_in
                for k in range(uop_begin, uop_end):
                    a = uop[k, 0] + base
                    for b in range(batch):
                        for o in range(block_out):
                            acc[a, b, o] = 0
                            out[a, b, o] = 0
        return OK
    for i in range(iter_out):
        for j in range(iter_in):
            da = i * dst_factor_out + j * dst_factor_in
            dx = i * src_factor_out + j * src_factor_in
            dw = i * wgt_factor_out + j * wgt_factor_in
            for k in range(uop_begin, uop_end):
                a = uop[k, 0] + da
                x = uop[k, 1] + dx
                w = uop[k, 2] + dw
                for b in range(batch):
                    for o in range(block_out):
                        s = np.int64(acc[a, b, o])
                        for c in range(block_in):
                            s += np.int64(inp[x, b, c]) * np.int64(wgt[w, o, c])
                        v = wrap32(s)
                        acc[a, b, o] = v
                        out[a, b, o] = low8(v)
    return OK


def alu_kernel(
    acc: np.ndarray,
    out: np.ndarray,
    uop: np.ndarray,
    reset: int,
    uop_begin: int,
    uop_end: int,
    iter_out: int,
    iter_in: int,
    dst_factor_out: int,
    dst_factor_in: int,
    src_factor_out: int,
    src_factor_in: int,
    alu_opcode: int,
    use_imm: int,
    imm: int,
) -> int:
    """ALU (ISA.md §3): acc[a] = op(acc[a], imm if use_imm else acc[x]), lane by lane.

    Micro-ops run in order, so a source written by an earlier micro-op is read updated.
    ``reset`` zeroes acc[a] (and out[a]) instead, as for GEMM.
    """
    code = alu_check(
        acc,
        uop,
        reset,
        uop_begin,
        uop_end,
        iter_out,
        iter_in,
        dst_factor_out,
        dst_factor_in,
        src_factor_out,
        src_factor_in,
        alu_opcode,
        use_imm,
    )
    if code != OK:
        return OK if code == NOTHING_TO_DO else code
    batch = acc.shape[1]
    block_out = acc.shape[2]
    for i in range(iter_out):
        for j in range(iter_in):
            da = i * dst_factor_out + j * dst_factor_in
            dx = i * src_factor_out + j * src_factor_in
            for k in range(uop_begin, uop_end):
                a = uop[k, 0] + da
                x = uop[k, 1] + dx
                for b in range(batch):
                    for o in range(block_out):
                        if reset != 0:
                            v: IntLike = 0
                        else:
                            y = imm if use_imm != 0 else np.int64(acc[x, b, o])
                            v = alu_apply(alu_opcode, np.int64(acc[a, b, o]), y)
                        acc[a, b, o] = v
                        out[a, b, o] = low8(v)
    return OK


# ---- a whole machine, for reference runs ------------------------------------------------
class Machine:
    """On-chip state plus a DRAM image; executes instructions one at a time in order.

    This is the in-order reference: it ignores dependency tokens and timing, so a program that
    synchronises correctly gives the same final DRAM here as on the simulator and the RTL.
    """

    def __init__(self, cfg: HwConfig, dram: np.ndarray | None = None):
        self.cfg = cfg
        self.dram = np.zeros(0, np.uint8) if dram is None else np.ascontiguousarray(dram, np.uint8)
        b, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
        self.inp = np.zeros((cfg.inp_depth, b, bi), np.int8)
        self.wgt = np.zeros((cfg.wgt_depth, bo, bi), np.int8)
        self.acc = np.zeros((cfg.acc_depth, b, bo), np.int32)
        self.out = np.zeros((cfg.acc_depth, b, bo), np.int8)
        self.uop_words = np.zeros(cfg.uop_depth, np.uint32)
        self.uop = np.zeros((cfg.uop_depth, 3), np.int32)
        from .formats import layout

        self._uop_fields = [(f.lsb, f.mask) for f in layout("uop", cfg).fields]

    def _bytes(self, arr: np.ndarray) -> np.ndarray:
        return arr.reshape(-1).view(np.uint8)

    def execute(self, insn: Insn, index: int | None = None) -> None:
        """Execute one instruction; raise :class:`ExecutionError` naming ``index`` on a fault.

        Dependency tokens are not modelled here, but a flag naming a queue the instruction's
        module does not have is still the error ISA.md §3 makes it.
        """
        from .validate import insn_fault  # the stream validator builds on this module

        fault = insn_fault(insn, index)
        if fault is not None:
            raise fault
        code = self._execute(insn)
        if code != OK:
            raise error_message(code, index=index)

    def _execute(self, insn: Insn) -> int:
        op = insn.opcode
        if op == Opcode.FINISH:
            return OK
        if isinstance(insn, Load):
            return self._load(insn)
        if isinstance(insn, Store):
            if insn.memory_type != MemType.OUT and insn.x_size:
                return ERR_MEM_TYPE
            pads = insn.y_pad_0 + insn.y_pad_1 + insn.x_pad_0 + insn.x_pad_1
            return store_kernel(
                self._bytes(self.out),
                self.cfg.out_elem_bytes,
                self.dram,
                insn.sram_base,
                insn.dram_base,
                insn.y_size,
                insn.x_size,
                insn.x_stride,
                pads,
            )
        if isinstance(insn, Gemm):
            return gemm_kernel(
                self.inp,
                self.wgt,
                self.acc,
                self.out,
                self.uop,
                int(insn.reset),
                insn.uop_begin,
                insn.uop_end,
                insn.iter_out,
                insn.iter_in,
                insn.dst_factor_out,
                insn.dst_factor_in,
                insn.src_factor_out,
                insn.src_factor_in,
                insn.wgt_factor_out,
                insn.wgt_factor_in,
            )
        if isinstance(insn, Alu):
            return alu_kernel(
                self.acc,
                self.out,
                self.uop,
                int(insn.reset),
                insn.uop_begin,
                insn.uop_end,
                insn.iter_out,
                insn.iter_in,
                insn.dst_factor_out,
                insn.dst_factor_in,
                insn.src_factor_out,
                insn.src_factor_in,
                int(insn.alu_opcode),
                int(insn.use_imm),
                insn.imm,
            )
        if isinstance(insn, Finish):
            return OK
        return ERR_OPCODE

    def _load(self, insn: Load) -> int:
        mt = insn.memory_type
        args = (
            insn.sram_base,
            insn.dram_base,
            insn.y_size,
            insn.x_size,
            insn.x_stride,
            insn.y_pad_0,
            insn.y_pad_1,
            insn.x_pad_0,
            insn.x_pad_1,
        )
        if mt == MemType.ACC8:
            return load_acc8_kernel(self.acc.reshape(-1), self.cfg.out_elem_bytes, self.dram, *args)
        targets: dict[MemType, np.ndarray] = {
            MemType.INP: self.inp,
            MemType.WGT: self.wgt,
            MemType.ACC: self.acc,
            MemType.UOP: self.uop_words,
        }
        if mt not in targets:
            return OK if insn.x_size == 0 else ERR_MEM_TYPE
        buf = targets[mt]
        code = load_kernel(self._bytes(buf), self.cfg.mem_elem_bytes(mt), self.dram, *args)
        if code == OK and mt == MemType.UOP and insn.x_size:
            end = insn.sram_base + insn.rows * insn.row_width
            (dl, dm), (sl, sm), (wl, wm) = self._uop_fields
            decode_uop_kernel(self.uop_words, self.uop, insn.sram_base, end, dl, dm, sl, sm, wl, wm)
        return code

    def run(self, insns: list[Insn]) -> None:
        """Execute a stream in order up to and including the first FINISH."""
        for i, insn in enumerate(insns):
            self.execute(insn, i)
            if insn.opcode == Opcode.FINISH:
                return


__all__ = [
    "Machine",
    "gemm_kernel",
    "alu_kernel",
    "load_kernel",
    "load_acc8_kernel",
    "store_kernel",
    "decode_uop_kernel",
    "alu_apply",
    "wrap32",
    "low8",
    "ERRORS",
    "error_message",
    "AluOp",
]
