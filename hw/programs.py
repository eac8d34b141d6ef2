"""Hand-assembled programs for co-verification, written against ISA.md for any hardware config.

Together they cover every instruction and memory type, padding on every buffer, every ALU op
with tensor and immediate operands (all 32 bits of each result are stored), strided 2-D
transfers, zero-cycle instructions, and token traffic between all modules with back-pressure
on the dependency and command queues. Each program synchronises every conflicting access with
tokens, so its final DRAM is the same as in-order execution (``isa.semantics.Machine``).

Example:
    >>> from isa import load_config
    >>> prog = PROGRAMS["gemm"](load_config("default"))
    >>> prog.instructions()[-1].opcode.name
    'FINISH'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from isa.config import HwConfig
from isa.dram import DramBuilder
from isa.encoding import encode_uops
from isa.insn import Alu, AluOp, Finish, Gemm, Insn, Load, MemType, Store, Uop
from isa.program import Program

#: The least alignment of every tensor in DRAM (isa.dram raises it to a multiple of every
#: element size); 256 keeps these programs' layout as it was when their timings were taken.
ALIGN = 256


class ProgramBuilder:
    """Lays out tensors from DRAM offset 0, then the instructions after them
    (:class:`isa.dram.DramBuilder` with an alignment of at least :data:`ALIGN`).

    >>> from isa import load_config
    >>> b = ProgramBuilder(load_config("default"))
    >>> b.tensor("x", np.arange(4, dtype=np.int8), role="input")
    0
    >>> b.add(Finish()); b.build().insn_base
    256
    """

    def __init__(self, cfg: HwConfig):
        self.cfg = cfg
        self.insns: list[Insn] = []
        self.dram = DramBuilder(cfg, floor=ALIGN)

    def tensor(
        self,
        name: str,
        value: np.ndarray | None = None,
        *,
        shape: Sequence[int] = (),
        dtype: str = "int8",
        role: str = "param",
        layout: str = "",
    ) -> int:
        """Place a tensor (initial ``value``, or zeros of ``shape``); returns its byte offset."""
        arr = np.zeros(tuple(shape), dtype) if value is None else np.ascontiguousarray(value)
        return self.dram.put(name, arr, role=role, layout=layout)

    def uops(self, name: str, uops: Sequence[Uop]) -> int:
        """Place encoded micro-ops; returns their offset in uop elements (4 bytes)."""
        off = self.tensor(
            name, encode_uops(list(uops), self.cfg).view(np.uint32), role="param", layout="uop"
        )
        return off // 4

    def elem(self, offset: int, mt: MemType) -> int:
        """DRAM element index of byte ``offset`` for memory type ``mt``."""
        return self.dram.elem_of(offset, mt)

    def add(self, *insns: Insn) -> None:
        self.insns.extend(insns)

    def build(self) -> Program:
        return self.dram.program(self.insns)


def _row_load(mt: MemType, sram_base: int, dram_base: int, n: int, **flags: bool) -> Load:
    """A LOAD of ``n`` contiguous elements into ``n`` consecutive SRAM entries (one row)."""
    return Load(
        memory_type=mt, sram_base=sram_base, dram_base=dram_base, x_size=n, x_stride=n, **flags
    )


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _i8(
    rng: np.random.Generator, shape: Sequence[int], lo: int = -128, hi: int = 127
) -> np.ndarray:
    return rng.integers(lo, hi + 1, size=tuple(shape)).astype(np.int8)


def _i32(
    rng: np.random.Generator, shape: Sequence[int], lo: int = -(2**31), hi: int = 2**31 - 1
) -> np.ndarray:
    return rng.integers(lo, hi, size=tuple(shape), endpoint=True, dtype=np.int64).astype(np.int32)


# ---- programs -----------------------------------------------------------------------------
def finish_only(cfg: HwConfig) -> Program:
    """A lone FINISH: fetch, dispatch and issue."""
    b = ProgramBuilder(cfg)
    b.add(Finish())
    return b.build()


def gemm(
    cfg: HwConfig, m: int = 4, k: int = 3, n: int = 2, seed: int = 1, requant: bool = True
) -> Program:
    """C = requant(A · Wᵀ) over m×k input tiles and n×k weight tiles.

    Consecutive micro-ops accumulate into the same acc entry (the k loop is innermost), so the
    result depends on the pipeline's forwarding. With ``requant`` the ALU applies SHR, MAX, MIN.
    """
    bt, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
    r = _rng(seed)
    b = ProgramBuilder(cfg)
    a_off = b.tensor("A", _i8(r, (m, k, bt, bi)), role="input", layout="MKbk")
    w_off = b.tensor("W", _i8(r, (n, k, bo, bi)), role="param", layout="NKnk")
    c_off = b.tensor("C", shape=(m, n, bt, bo), role="output", layout="MNbn")
    uops = [Uop(0, 0, 0)] + [Uop(0, kk, kk) for kk in range(k)]
    u_off = b.uops("uops", uops)
    loops = dict(iter_out=m, iter_in=n, dst_factor_out=n, dst_factor_in=1)
    b.add(
        _row_load(MemType.UOP, 0, u_off, len(uops)),
        _row_load(MemType.INP, 0, b.elem(a_off, MemType.INP), m * k),
        _row_load(MemType.WGT, 0, b.elem(w_off, MemType.WGT), n * k, push_next_dep=True),
        Gemm(reset=True, uop_begin=0, uop_end=1, **loops),
        Gemm(
            uop_begin=1,
            uop_end=1 + k,
            src_factor_out=k,
            wgt_factor_in=k,
            pop_prev_dep=True,
            push_next_dep=not requant,
            **loops,
        ),
    )
    if requant:
        b.add(
            Alu(alu_opcode=AluOp.SHR, use_imm=True, imm=6, uop_begin=0, uop_end=1, **loops),
            Alu(alu_opcode=AluOp.MAX, use_imm=True, imm=-100, uop_begin=0, uop_end=1, **loops),
            Alu(
                alu_opcode=AluOp.MIN,
                use_imm=True,
                imm=100,
                uop_begin=0,
                uop_end=1,
                push_next_dep=True,
                **loops,
            ),
        )
    b.add(
        Store(
            sram_base=0,
            dram_base=b.elem(c_off, MemType.OUT),
            x_size=m * n,
            x_stride=m * n,
            pop_prev_dep=True,
            push_prev_dep=True,
        ),
        Finish(pop_next_dep=True),
    )
    return b.build()


def padded(cfg: HwConfig, seed: int = 2) -> Program:
    """Zero padding on inp, wgt, uop and acc loads, a pad-only load, strided rows.

    The padded input block goes through the GEMM core against one weight tile, so every padded
    entry shows up as a zero row of the output; the padded acc block goes out through the ALU.
    """
    bt, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
    r = _rng(seed)
    b = ProgramBuilder(cfg)
    src = b.tensor("X", _i8(r, (4, 7, bt, bi)), role="input", layout="HWbk")
    wsrc = b.tensor("W", _i8(r, (1, bo, bi)), role="param")
    acc_src = b.tensor("Y", _i32(r, (2, 3, bt, bo), -1000, 1000), role="input")
    # inp: rows y_pad_0=1 + 3 + y_pad_1=2, each x_pad_0=2 + 5 + x_pad_1=1 -> 6 x 8 = 48 entries
    rows, width = 6, 8
    n_inp = rows * width
    # pad-only load: 2 zero rows of 3 over entries [n_inp, n_inp + 6) after filling them
    n_all = n_inp + 6
    c_off = b.tensor("C", shape=(n_all, bt, bo), role="output")
    # acc: 1 + 2 + 1 rows of 1 + 3 + 2 -> 4 x 6 = 24 entries at acc[n_all:]
    acc_rows, acc_width = 4, 6
    n_acc = acc_rows * acc_width
    d_off = b.tensor("D", shape=(n_acc, bt, bo), role="output")
    # uop: x_pad_0=1 zero micro-op, then (0, 0, 1): every GEMM below uses wgt tile 1
    u_off = b.uops("uops", [Uop(0, 0, 1), Uop(0, 0, 0), Uop(n_all, 0, 0)])
    b.add(
        Load(
            memory_type=MemType.UOP, sram_base=0, dram_base=u_off, x_size=3, x_stride=3, x_pad_0=1
        ),
        # uop[0] = 0, uop[1] = (0, 0, 1), uop[2] = (0, 0, 0), uop[3] = (n_all, 0, 0)
        Load(
            memory_type=MemType.WGT,
            sram_base=0,
            dram_base=b.elem(wsrc, MemType.WGT),
            x_size=1,
            x_stride=1,
            x_pad_0=1,
            x_pad_1=1,
        ),
        # wgt[0] = 0, wgt[1] = W, wgt[2] = 0
        Load(
            memory_type=MemType.INP,
            sram_base=0,
            dram_base=b.elem(src, MemType.INP) + 7 + 1,
            y_size=3,
            x_size=5,
            x_stride=7,
            y_pad_0=1,
            y_pad_1=2,
            x_pad_0=2,
            x_pad_1=1,
        ),
        Load(
            memory_type=MemType.INP,
            sram_base=n_inp,
            dram_base=b.elem(src, MemType.INP),
            y_size=2,
            x_size=3,
            x_stride=7,
        ),
        Load(
            memory_type=MemType.INP,
            sram_base=n_inp,
            y_size=0,
            x_size=3,
            y_pad_0=1,
            y_pad_1=1,
            push_next_dep=True,
        ),
        Gemm(reset=True, uop_begin=1, uop_end=2, iter_out=n_all, dst_factor_out=1),
        Gemm(
            uop_begin=1,
            uop_end=2,
            iter_out=n_all,
            dst_factor_out=1,
            src_factor_out=1,
            pop_prev_dep=True,
        ),
        Load(
            memory_type=MemType.ACC,
            sram_base=n_all,
            dram_base=b.elem(acc_src, MemType.ACC),
            y_size=2,
            x_size=3,
            x_stride=3,
            y_pad_0=1,
            y_pad_1=1,
            x_pad_0=1,
            x_pad_1=2,
        ),
        Alu(
            alu_opcode=AluOp.ADD,
            use_imm=True,
            imm=1,
            uop_begin=3,
            uop_end=4,
            iter_out=n_acc,
            dst_factor_out=1,
        ),
        Alu(
            alu_opcode=AluOp.SHR,
            use_imm=True,
            imm=2,
            uop_begin=2,
            uop_end=3,
            iter_out=n_all,
            dst_factor_out=1,
            push_next_dep=True,
        ),
        Store(
            sram_base=0,
            dram_base=b.elem(c_off, MemType.OUT),
            x_size=n_all,
            x_stride=n_all,
            pop_prev_dep=True,
        ),
        Store(
            sram_base=n_all,
            dram_base=b.elem(d_off, MemType.OUT),
            x_size=n_acc,
            x_stride=n_acc,
            push_prev_dep=True,
        ),
        Finish(pop_next_dep=True),
    )
    return b.build()


#: ALU cases: (op, operand) with operand "Y" (tensor, full range), "S" (tensor of shift amounts
#: in [-40, 40]) or an immediate; None is a reset.
ALU_CASES: tuple[tuple[AluOp, str | int | None], ...] = (
    (AluOp.MIN, "Y"),
    (AluOp.MAX, "Y"),
    (AluOp.ADD, "Y"),
    (AluOp.SHR, "S"),
    (AluOp.MUL, "Y"),
    (AluOp.MIN, -1234),
    (AluOp.MAX, 77),
    (AluOp.ADD, -32768),
    (AluOp.ADD, 32767),
    (AluOp.SHR, 0),
    (AluOp.SHR, 5),
    (AluOp.SHR, 31),
    (AluOp.SHR, 40),
    (AluOp.SHR, -7),
    (AluOp.SHR, -31),
    (AluOp.SHR, -33),
    (AluOp.MUL, -3),
    (AluOp.MUL, 32767),
    (AluOp.ADD, None),
)


def alu_all(cfg: HwConfig, tiles: int = 3, seed: int = 3) -> Program:
    """Every ALU op with tensor and immediate operands; all four bytes of each result stored.

    Block c of the acc holds a copy of X and gets op_c applied; the four stores write the low
    byte, then (after SHR 8) the next byte, and so on: R[byte, case, tile, b, o].
    """
    bt, bo = cfg.batch, cfg.block_out
    r = _rng(seed)
    b = ProgramBuilder(cfg)
    ncase = len(ALU_CASES)
    x = _i32(r, (tiles, bt, bo))
    x[0, 0, 0], x[0, 0, -1] = -(2**31), 2**31 - 1
    y = _i32(r, (tiles, bt, bo))
    s = r.integers(-40, 41, size=(tiles, bt, bo)).astype(np.int32)
    x_off = b.tensor("X", x, role="input")
    y_off = b.tensor("Y", y, role="input")
    s_off = b.tensor("S", s, role="input")
    r_off = b.tensor("R", shape=(4, ncase, tiles, bt, bo), role="output")
    y_base, s_base, blk = 0, tiles, 2 * tiles
    # uop c: dst = block c, src = Y or S
    uops = []
    for c, (_, operand) in enumerate(ALU_CASES):
        uops.append(Uop(blk + c * tiles, s_base if operand == "S" else y_base, 0))
    uops.append(Uop(blk, 0, 0))  # whole-region SHR 8
    u_off = b.uops("uops", uops)
    b.add(
        _row_load(MemType.UOP, 0, u_off, len(uops)),
        _row_load(MemType.ACC, y_base, b.elem(y_off, MemType.ACC), tiles),
        _row_load(MemType.ACC, s_base, b.elem(s_off, MemType.ACC), tiles),
        # X, once per case: y_size rows re-reading the same DRAM row (x_stride 0)
        Load(
            memory_type=MemType.ACC,
            sram_base=blk,
            dram_base=b.elem(x_off, MemType.ACC),
            y_size=ncase,
            x_size=tiles,
            x_stride=0,
        ),
    )
    for c, (op, operand) in enumerate(ALU_CASES):
        tensor = isinstance(operand, str)
        b.add(
            Alu(
                alu_opcode=op,
                reset=operand is None,
                use_imm=not tensor,
                imm=0 if tensor or operand is None else int(operand),
                uop_begin=c,
                uop_end=c + 1,
                iter_in=tiles,
                dst_factor_in=1,
                src_factor_in=1 if tensor else 0,
            )
        )
    n_res = ncase * tiles
    shr = dict(
        alu_opcode=AluOp.SHR,
        use_imm=True,
        imm=8,
        uop_begin=ncase,
        uop_end=ncase + 1,
        iter_out=n_res,
        dst_factor_out=1,
    )
    for byte in range(4):
        if byte == 0:
            # the last case wrote out[] already; hand it to the store
            b.add(Gemm(uop_begin=0, uop_end=0, push_next_dep=True))
        else:
            b.add(Alu(pop_next_dep=True, push_next_dep=True, **shr))
        b.add(
            Store(
                sram_base=blk,
                dram_base=b.elem(r_off, MemType.OUT) + byte * n_res,
                x_size=n_res,
                x_stride=n_res,
                pop_prev_dep=True,
                push_prev_dep=True,
            )
        )
    b.add(Finish(pop_next_dep=True))
    return b.build()


def acc8(cfg: HwConfig, seed: int = 4) -> Program:
    """LOAD ACC8 (int8 elements sign-extended into acc), with padding, then ALU and STORE."""
    bt, bo = cfg.batch, cfg.block_out
    r = _rng(seed)
    b = ProgramBuilder(cfg)
    v = b.tensor("V", _i8(r, (3, 5, bt, bo)), role="input")
    rows, width = 3 + 1, 1 + 4 + 1
    n = rows * width
    o = b.tensor("O", shape=(4, n, bt, bo), role="output")
    u_off = b.uops("uops", [Uop(0, 0, 0)])
    loops = dict(uop_begin=0, uop_end=1, iter_out=n, dst_factor_out=1)
    b.add(
        Load(memory_type=MemType.UOP, sram_base=0, dram_base=u_off, x_size=1, x_stride=1),
        Load(
            memory_type=MemType.ACC8,
            sram_base=0,
            dram_base=b.elem(v, MemType.ACC8),
            y_size=3,
            x_size=4,
            x_stride=5,
            y_pad_1=1,
            x_pad_0=1,
            x_pad_1=1,
        ),
        Alu(alu_opcode=AluOp.MUL, use_imm=True, imm=-1000, push_next_dep=True, **loops),
    )
    for byte in range(4):
        if byte:
            b.add(
                Alu(
                    alu_opcode=AluOp.SHR,
                    use_imm=True,
                    imm=8,
                    pop_next_dep=True,
                    push_next_dep=True,
                    **loops,
                )
            )
        b.add(
            Store(
                sram_base=0,
                dram_base=b.elem(o, MemType.OUT) + byte * n,
                x_size=n,
                x_stride=n,
                pop_prev_dep=True,
                push_prev_dep=True,
            )
        )
    b.add(Finish(pop_next_dep=True))
    return b.build()


def pingpong(
    cfg: HwConfig, iters: int = 8, m: int = 2, k: int = 2, n: int = 2, seed: int = 5
) -> Program:
    """Two virtual threads: double-buffered load -> compute -> store over ``iters`` blocks.

    Every queue carries tokens both ways: load waits for compute to free an input half,
    compute waits for the load and for the store to drain an output half.
    """
    bt, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
    r = _rng(seed)
    b = ProgramBuilder(cfg)
    a_off = b.tensor("A", _i8(r, (iters, m, k, bt, bi)), role="input")
    w_off = b.tensor("W", _i8(r, (n, k, bo, bi)), role="param")
    c_off = b.tensor("C", shape=(iters, m, n, bt, bo), role="output")
    half_inp, half_acc = m * k, m * n
    uops = []
    for t in range(2):
        uops.append(Uop(t * half_acc, 0, 0))
        uops += [Uop(t * half_acc, t * half_inp + kk, kk) for kk in range(k)]
    u_off = b.uops("uops", uops)
    b.add(
        _row_load(MemType.UOP, 0, u_off, len(uops)),
        _row_load(MemType.WGT, 0, b.elem(w_off, MemType.WGT), n * k),
    )
    loops = dict(iter_out=m, iter_in=n, dst_factor_out=n, dst_factor_in=1)
    a_elem = b.elem(a_off, MemType.INP)
    c_elem = b.elem(c_off, MemType.OUT)
    for t in range(iters):
        h = t % 2
        u0 = h * (1 + k)
        b.add(
            Load(
                memory_type=MemType.INP,
                sram_base=h * half_inp,
                dram_base=a_elem + t * half_inp,
                x_size=half_inp,
                x_stride=half_inp,
                pop_next_dep=t >= 2,
                push_next_dep=True,
            ),
            Gemm(reset=True, uop_begin=u0, uop_end=u0 + 1, pop_next_dep=t >= 2, **loops),
            Gemm(
                uop_begin=u0 + 1,
                uop_end=u0 + 1 + k,
                src_factor_out=k,
                wgt_factor_in=k,
                pop_prev_dep=True,
                push_prev_dep=True,
                **loops,
            ),
            Alu(
                alu_opcode=AluOp.SHR,
                use_imm=True,
                imm=3,
                uop_begin=u0,
                uop_end=u0 + 1,
                push_next_dep=True,
                **loops,
            ),
            Store(
                sram_base=h * half_acc,
                dram_base=c_elem + t * half_acc,
                x_size=half_acc,
                x_stride=half_acc,
                pop_prev_dep=True,
                push_prev_dep=True,
            ),
        )
    # wait for the two stores compute has not waited for yet
    b.add(Load(memory_type=MemType.UOP, pop_next_dep=True), Finish(pop_next_dep=True))
    return b.build()


def token_flood(cfg: HwConfig, count: int = 12, seed: int = 6) -> Program:
    """More tokens than a dependency queue holds: pushes wait for room (back-pressure).

    Load runs ahead of a long first GEMM and fills load->compute; compute then outpaces the
    store and fills compute->store; the store fills store->compute before compute drains it.
    """
    bt, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
    r = _rng(seed)
    b = ProgramBuilder(cfg)
    a_off = b.tensor("A", _i8(r, (count, bt, bi)), role="input")
    w_off = b.tensor("W", _i8(r, (1, bo, bi)), role="param")
    c_off = b.tensor("C", shape=(count, bt, bo), role="output")
    # micro-op i: acc[i] += inp[i] . wgt[0]
    u_off = b.uops("uops", [Uop(i, i, 0) for i in range(count)])
    b.add(
        Load(memory_type=MemType.UOP, sram_base=0, dram_base=u_off, x_size=count, x_stride=count),
        _row_load(MemType.WGT, 0, b.elem(w_off, MemType.WGT), 1),
        # a slow start for compute: 300 reset micro-ops over the acc tiles used below
        Gemm(
            reset=True,
            uop_begin=0,
            uop_end=1,
            iter_out=count,
            iter_in=300 // count,
            dst_factor_out=1,
        ),
    )
    for i in range(count):
        b.add(_row_load(MemType.INP, i, b.elem(a_off, MemType.INP) + i, 1, push_next_dep=True))
    for i in range(count):
        b.add(Gemm(uop_begin=i, uop_end=i + 1, pop_prev_dep=True, push_next_dep=True))
    for i in range(count):
        b.add(
            Store(
                sram_base=i,
                dram_base=b.elem(c_off, MemType.OUT) + i,
                x_size=1,
                x_stride=1,
                pop_prev_dep=True,
                push_prev_dep=True,
            )
        )
    for _ in range(count - 1):
        b.add(Load(memory_type=MemType.UOP, pop_next_dep=True))
    b.add(Finish(pop_next_dep=True))
    return b.build()


def cmdq_full(cfg: HwConfig, extra: int = 24, seed: int = 7) -> Program:
    """A long GEMM followed by many short compute instructions: the compute command queue fills
    and fetch holds, which delays the loads and stores queued behind them."""
    bt, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
    r = _rng(seed)
    b = ProgramBuilder(cfg)
    a_off = b.tensor("A", _i8(r, (1, bt, bi)), role="input")
    w_off = b.tensor("W", _i8(r, (1, bo, bi)), role="param")
    c_off = b.tensor("C", shape=(2, bt, bo), role="output")
    u_off = b.uops("uops", [Uop(0, 0, 0), Uop(1, 0, 0)])
    b.add(
        Load(memory_type=MemType.UOP, sram_base=0, dram_base=u_off, x_size=2, x_stride=2),
        _row_load(MemType.INP, 0, b.elem(a_off, MemType.INP), 1),
        _row_load(MemType.WGT, 0, b.elem(w_off, MemType.WGT), 1, push_next_dep=True),
        Gemm(reset=True, uop_begin=0, uop_end=2),
        # 600 accumulating micro-ops into acc[0] (wraps happily)
        Gemm(uop_begin=0, uop_end=1, iter_out=30, iter_in=20, pop_prev_dep=True),
    )
    for i in range(extra):
        b.add(Alu(alu_opcode=AluOp.ADD, use_imm=True, imm=i - 11, uop_begin=1, uop_end=2))
    b.add(
        Alu(alu_opcode=AluOp.ADD, use_imm=True, imm=0, uop_begin=0, uop_end=2, push_next_dep=True),
        Store(
            sram_base=0,
            dram_base=b.elem(c_off, MemType.OUT),
            x_size=2,
            x_stride=2,
            pop_prev_dep=True,
            push_prev_dep=True,
        ),
        Finish(pop_next_dep=True),
    )
    return b.build()


def strided(cfg: HwConfig, seed: int = 8) -> Program:
    """2-D strided loads and stores; the bytes between stored rows must stay untouched."""
    bt, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
    r = _rng(seed)
    b = ProgramBuilder(cfg)
    a_off = b.tensor("A", _i8(r, (5, 9, bt, bi)), role="input")
    w_off = b.tensor("W", _i8(r, (3, 2, bo, bi)), role="param")
    c_off = b.tensor("C", _i8(r, (4, 7, bt, bo)), role="output")  # pre-filled: gaps must survive
    rows, cols = 4, 3
    u_off = b.uops("uops", [Uop(0, 0, 0), Uop(0, 0, 0), Uop(0, 0, 2)])
    b.add(
        Load(memory_type=MemType.UOP, sram_base=0, dram_base=u_off, x_size=3, x_stride=3),
        Load(
            memory_type=MemType.INP,
            sram_base=0,
            dram_base=b.elem(a_off, MemType.INP) + 9 + 2,
            y_size=rows,
            x_size=cols,
            x_stride=9,
        ),
        # wgt tiles (j, 0) for j < 3: rows of one element, stride 2
        Load(
            memory_type=MemType.WGT,
            sram_base=0,
            dram_base=b.elem(w_off, MemType.WGT),
            y_size=3,
            x_size=1,
            x_stride=2,
            push_next_dep=True,
        ),
        Gemm(reset=True, uop_begin=0, uop_end=1, iter_out=rows * cols, dst_factor_out=1),
        # acc[e] = inp[e] . (wgt[0] + wgt[2]) with two micro-ops into the same entry
        Gemm(
            uop_begin=1,
            uop_end=3,
            iter_out=rows * cols,
            dst_factor_out=1,
            src_factor_out=1,
            pop_prev_dep=True,
            push_next_dep=True,
        ),
        Store(
            sram_base=0,
            dram_base=b.elem(c_off, MemType.OUT) + 1,
            y_size=rows,
            x_size=cols,
            x_stride=7,
            pop_prev_dep=True,
            push_prev_dep=True,
        ),
        Finish(pop_next_dep=True),
    )
    return b.build()


def zero_cycle(cfg: HwConfig, rounds: int = 3) -> Program:
    """Tokens passed around all four queues by zero-cycle instructions (NOP loads and stores,
    a GEMM with no micro-op), a pad-only load (no port), a STORE of no rows (holds the port for
    the latency), and a FINISH that pops."""
    bt, bo = cfg.batch, cfg.block_out
    b = ProgramBuilder(cfg)
    c_off = b.tensor("C", np.full((2, bt, bo), 7, np.int8), role="output")
    b.add(Load(memory_type=MemType.UOP, sram_base=0, y_size=0, x_size=2, y_pad_0=1))
    for _ in range(rounds):
        b.add(
            Load(memory_type=MemType.INP, push_next_dep=True),  # load NOP
            Gemm(uop_begin=0, uop_end=1, iter_out=0, pop_prev_dep=True, push_next_dep=True),
            Store(pop_prev_dep=True, push_prev_dep=True),  # store NOP
            Load(memory_type=MemType.UOP, pop_next_dep=True, push_prev_dep=True),
            Load(
                memory_type=MemType.WGT,
                sram_base=0,
                y_size=0,
                x_size=1,
                y_pad_1=2,
                pop_next_dep=True,
            ),
        )
    b.add(
        Alu(
            alu_opcode=AluOp.ADD,
            use_imm=True,
            imm=3,
            uop_begin=0,
            uop_end=1,
            iter_out=2,
            dst_factor_out=1,
            push_next_dep=True,
        ),
        Store(
            sram_base=0, dram_base=b.elem(c_off, MemType.OUT), y_size=0, x_size=2, pop_prev_dep=True
        ),
        Store(
            sram_base=0,
            dram_base=b.elem(c_off, MemType.OUT),
            x_size=2,
            x_stride=2,
            push_prev_dep=True,
        ),
        Finish(pop_next_dep=True),
    )
    return b.build()


#: The hand-assembled suite: name -> builder(cfg).
PROGRAMS: dict[str, Callable[[HwConfig], Program]] = {
    "finish_only": finish_only,
    "gemm": gemm,
    "padded": padded,
    "alu_all": alu_all,
    "acc8": acc8,
    "pingpong": pingpong,
    "token_flood": token_flood,
    "cmdq_full": cmdq_full,
    "strided": strided,
    "zero_cycle": zero_cycle,
}


# ---- random, token-correct programs ---------------------------------------------------------
#: SRAM entries of each double-buffering slot of the random programs.
_SLOT = {"inp": 16, "wgt": 8, "acc": 16, "uop": 8}


def _shape_2d(r: np.random.Generator, room: int, y_max: int = 3) -> dict:
    """A random 2-D LOAD shape (with padding) whose footprint fits ``room`` entries."""
    while True:
        g = dict(
            y_size=int(r.integers(0, y_max + 1)),
            x_size=int(r.integers(1, 5)),
            y_pad_0=int(r.integers(0, 2)),
            y_pad_1=int(r.integers(0, 2)),
            x_pad_0=int(r.integers(0, 3)),
            x_pad_1=int(r.integers(0, 2)),
        )
        rows = g["y_pad_0"] + g["y_size"] + g["y_pad_1"]
        width = g["x_pad_0"] + g["x_size"] + g["x_pad_1"]
        if rows * width <= room:
            g["x_stride"] = g["x_size"] + int(r.integers(0, 4))
            return g | {"footprint": rows * width}


def random_program(cfg: HwConfig, seed: int, blocks: int | None = None) -> Program:
    """A random software-pipelined program whose tokens order every conflicting access.

    Block ``b`` works in SRAM slot ``b % 2`` (double buffering): its loads fill the slot's inp
    and wgt entries (random 2-D shapes with padding), compute loads micro-ops (and sometimes
    acc, from int32 or int8 data), resets the slot's accumulators and runs random GEMM and
    ALU loops in it, and a store writes a random 2-D block of the slot's out entries to DRAM.
    Load b waits for compute b - 2, compute b for load b and store b - 2, store b for compute
    b; so any timing gives the in-order result while the modules overlap across blocks.
    """
    r = _rng(1000 + seed)
    b = ProgramBuilder(cfg)
    nblk = int(r.integers(3, 7)) if blocks is None else blocks
    inp_dram = b.tensor("data", r.integers(-128, 128, 8192).astype(np.int8), role="input")
    out_bytes = 4096 * max(1, cfg.out_elem_bytes // 4)
    outs = [b.tensor(f"out{k}", shape=(out_bytes,), role="output") for k in range(nblk)]
    uop_tables = []
    for k in range(nblk):
        s = k % 2
        uops = []
        for _ in range(_SLOT["uop"]):
            dst = s * _SLOT["acc"] + int(r.integers(0, 8))
            src = s * _SLOT["inp"] + int(r.integers(0, 8))
            uops.append(Uop(dst, src, s * _SLOT["wgt"] + int(r.integers(0, 4))))
        uop_tables.append(b.uops(f"uops{k}", uops))
    alu_ops = list(AluOp)
    imms = [-40, -32, -31, -8, -1, 0, 1, 3, 8, 31, 32, 40, 1000, -32768, 32767]

    def load_from_data(mt: MemType, region: str, slot: int, **flags) -> Load:
        g = _shape_2d(r, _SLOT[region])
        room = _SLOT[region] - g.pop("footprint")
        base = slot * _SLOT[region] + int(r.integers(0, room + 1))
        eb = cfg.mem_elem_bytes(mt)
        span = (max(g["y_size"] - 1, 0) * g["x_stride"] + g["x_size"]) * eb
        dram = inp_dram // eb + int(r.integers(0, (8192 - span) // eb + 1))
        return Load(memory_type=mt, sram_base=base, dram_base=dram, **g, **flags)

    def loops() -> dict:
        f = [0, 1, 2]
        return dict(
            iter_out=int(r.integers(1, 4)),
            iter_in=int(r.integers(1, 4)),
            dst_factor_out=int(r.choice(f)),
            dst_factor_in=int(r.choice(f)),
            src_factor_out=int(r.choice(f)),
            src_factor_in=int(r.choice(f)),
        )

    for k in range(nblk):
        s = k % 2
        # ---- load: inp and wgt into slot s
        n_loads = int(r.integers(1, 3))
        for j in range(n_loads):
            mt = MemType.INP if (j == 0 or r.random() < 0.5) else MemType.WGT
            b.add(
                load_from_data(
                    mt,
                    "inp" if mt == MemType.INP else "wgt",
                    s,
                    pop_next_dep=(j == 0 and k >= 2),
                    push_next_dep=(j == n_loads - 1),
                )
            )
        # ---- compute: micro-ops, maybe acc data, reset, GEMMs and ALUs in slot s
        body: list[Insn] = [_row_load(MemType.UOP, s * _SLOT["uop"], uop_tables[k], _SLOT["uop"])]
        body.append(
            Gemm(reset=True, uop_begin=s * 8, uop_end=s * 8 + 8, iter_out=2, dst_factor_out=8)
        )
        if r.random() < 0.4:
            mt = MemType.ACC8 if r.random() < 0.5 else MemType.ACC
            body.append(load_from_data(mt, "acc", s))
        for _ in range(int(r.integers(1, 4))):
            u0 = s * 8 + int(r.integers(0, 8))
            u1 = u0 + int(r.integers(0, s * 8 + 8 - u0 + 1))
            lp = loops()
            if r.random() < 0.6:
                body.append(
                    Gemm(
                        uop_begin=u0,
                        uop_end=u1,
                        wgt_factor_out=int(r.integers(0, 2)),
                        wgt_factor_in=int(r.integers(0, 2)),
                        **lp,
                    )
                )
            else:
                tensor = r.random() < 0.4
                body.append(
                    Alu(
                        alu_opcode=alu_ops[int(r.integers(0, len(alu_ops)))],
                        use_imm=not tensor,
                        imm=0 if tensor else int(r.choice(imms)),
                        uop_begin=u0,
                        uop_end=u1,
                        **lp,
                    )
                )
        # first instruction waits for load k (and store k - 2); last one releases both slots
        body[0] = body[0].with_deps(pop_prev_dep=True, pop_next_dep=k >= 2)
        body.append(Gemm(uop_begin=0, uop_end=0, push_prev_dep=True, push_next_dep=True))
        b.add(*body)
        # ---- store: a 2-D block of slot s's out entries
        x = int(r.integers(1, 5))
        y = int(r.integers(1, _SLOT["acc"] // x + 1))
        y = min(y, 4)
        b.add(
            Store(
                sram_base=s * _SLOT["acc"] + int(r.integers(0, _SLOT["acc"] - x * y + 1)),
                dram_base=b.elem(outs[k], MemType.OUT),
                y_size=y,
                x_size=x,
                x_stride=x + int(r.integers(0, 3)),
                pop_prev_dep=True,
                push_prev_dep=True,
            )
        )
    for _ in range(min(nblk, 2) - 1):
        b.add(Load(memory_type=MemType.UOP, pop_next_dep=True))
    b.add(Finish(pop_next_dep=True))
    return b.build()


def tiled_gemm(
    cfg: HwConfig, m: int, k: int, n: int, kt: int, nt: int, seed: int = 12, shift: int = 8
) -> Program:
    """C = clip(A · Wᵀ >> shift) for A of m×k input tiles and W of n×k weight tiles, streamed
    through the buffers in chunks of kt (reduction) by nt (output) tiles, double-buffered.

    Step t (one chunk of k for one chunk of n) loads A[:, kc] and W[nc, kc] into slot t % 2 of
    inp and wgt while compute accumulates the previous step; output chunk nc accumulates in
    acc slot nc % 2 and is requantized and stored while the next chunk accumulates. An
    im2col'ed convolution is this GEMM: ResNet-18 C12 (7x7, 512 -> 512, 3x3) on 1x16x16 is
    m = 49, k = 288, n = 32.
    """
    bt, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
    if k % kt or n % nt:
        raise ValueError("kt must divide k and nt must divide n")
    if 2 * m * kt > cfg.inp_depth or 2 * nt * kt > cfg.wgt_depth or 2 * m * nt > cfg.acc_depth:
        raise ValueError("the chunks do not fit the buffers twice")
    r = _rng(seed)
    b = ProgramBuilder(cfg)
    a_off = b.tensor("A", _i8(r, (m, k, bt, bi), -16, 16), role="input", layout="MKbk")
    w_off = b.tensor("W", _i8(r, (n, k, bo, bi), -16, 16), role="param", layout="NKnk")
    c_off = b.tensor("C", shape=(m, n, bt, bo), role="output", layout="MNbn")
    ins, ws, accs = m * kt, nt * kt, m * nt  # slot sizes
    uops: list[Uop] = []
    reset_at, gemm_at = [], {}
    for a in range(2):
        reset_at.append(len(uops))
        uops.append(Uop(a * accs, 0, 0))
    for a in range(2):
        for sl in range(2):
            gemm_at[a, sl] = len(uops)
            uops += [Uop(a * accs, sl * ins + kk, sl * ws + kk) for kk in range(kt)]
    u_off = b.uops("uops", uops)
    b.add(_row_load(MemType.UOP, 0, u_off, len(uops)))
    a_elem, w_elem = b.elem(a_off, MemType.INP), b.elem(w_off, MemType.WGT)
    c_elem = b.elem(c_off, MemType.OUT)
    acc_loops = dict(iter_out=m, iter_in=nt, dst_factor_out=nt, dst_factor_in=1)
    step = 0
    n_chunks, k_chunks = n // nt, k // kt
    for nc in range(n_chunks):
        a = nc % 2
        b.add(
            Gemm(
                reset=True,
                uop_begin=reset_at[a],
                uop_end=reset_at[a] + 1,
                pop_next_dep=nc >= 2,
                **acc_loops,
            )
        )
        for kc in range(k_chunks):
            sl = step % 2
            b.add(
                Load(
                    memory_type=MemType.INP,
                    sram_base=sl * ins,
                    dram_base=a_elem + kc * kt,
                    y_size=m,
                    x_size=kt,
                    x_stride=k,
                    pop_next_dep=step >= 2,
                ),
                Load(
                    memory_type=MemType.WGT,
                    sram_base=sl * ws,
                    dram_base=w_elem + nc * nt * k + kc * kt,
                    y_size=nt,
                    x_size=kt,
                    x_stride=k,
                    push_next_dep=True,
                ),
                Gemm(
                    uop_begin=gemm_at[a, sl],
                    uop_end=gemm_at[a, sl] + kt,
                    src_factor_out=kt,
                    wgt_factor_in=kt,
                    pop_prev_dep=True,
                    push_prev_dep=True,
                    **acc_loops,
                ),
            )
            step += 1
        ru = dict(uop_begin=reset_at[a], uop_end=reset_at[a] + 1, **acc_loops)
        b.add(
            Alu(alu_opcode=AluOp.SHR, use_imm=True, imm=shift, **ru),
            Alu(alu_opcode=AluOp.MAX, use_imm=True, imm=-128, **ru),
            Alu(alu_opcode=AluOp.MIN, use_imm=True, imm=127, push_next_dep=True, **ru),
            Store(
                sram_base=a * accs,
                dram_base=c_elem + nc * nt,
                y_size=m,
                x_size=nt,
                x_stride=n,
                pop_prev_dep=True,
                push_prev_dep=True,
            ),
        )
    for _ in range(min(n_chunks, 2) - 1):
        b.add(Load(memory_type=MemType.UOP, pop_next_dep=True))
    b.add(Finish(pop_next_dep=True))
    return b.build()


def resnet_c12_gemm(cfg: HwConfig) -> Program:
    """The GEMM of ResNet-18's C12 layer (7x7 output, 512 -> 512 channels, 3x3 kernel) after
    im2col: 49 rows, 4608 reductions, 512 outputs, as batch·block_in·block_out tiles."""
    m = 49 // cfg.batch if 49 % cfg.batch == 0 else -(-49 // cfg.batch)
    k, n = 4608 // cfg.block_in, 512 // cfg.block_out
    kt = 16
    while 2 * m * kt > cfg.inp_depth:
        kt //= 2
    nt = n
    while 2 * nt * kt > cfg.wgt_depth or 2 * m * nt > cfg.acc_depth:
        nt //= 2
    return tiled_gemm(cfg, m, k, n, kt, nt)
