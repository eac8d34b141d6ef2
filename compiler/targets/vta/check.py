"""The static checker run on every emitted stream before it leaves the compiler.

It runs the ISA's stream validator (:func:`isa.validate.check_stream`: opcodes, memory types
and ALU opcodes of the ISA, memory types each instruction may use, no STORE padding, every
dependency flag naming a queue its module has), then walks the stream in program order and
checks:

- on each of the four queues, tokens never underflow (a pop with no token pushed before it in
  the stream) and never exceed ``dep_queue_depth``; at FINISH every queue is balanced (empty);
- every LOAD/STORE range fits its SRAM buffer and its DRAM range fits the image;
- every GEMM/ALU micro-op range fits the uop buffer, and every index it computes (from the
  micro-ops resident at that point, loaded from the DRAM image) fits its buffer;
- the stream ends with FINISH.

Problems raise :class:`StreamCheckError` naming the instruction index.

Example:
    >>> import isa
    >>> prog = isa.Program.build(isa.load_config("default"), [isa.Gemm(pop_prev_dep=True),
    ...                                                      isa.Finish()])
    >>> try:
    ...     check_program(prog)
    ... except StreamCheckError as e:
    ...     print(e)
    instruction 0: pops queue load->compute, which holds no token at this point of the stream
"""

from __future__ import annotations

import numpy as np

from isa import (
    DEP_QUEUES,
    Alu,
    ExecutionError,
    Finish,
    Gemm,
    Insn,
    Load,
    MemType,
    Program,
    Store,
)
from isa.encoding import decode_uops
from isa.insn import DEP_FLAGS
from isa.validate import check_stream

from .errors import StreamCheckError

_SRAM_OF = {
    MemType.INP: "inp",
    MemType.WGT: "wgt",
    MemType.ACC: "acc",
    MemType.ACC8: "acc",
    MemType.UOP: "uop",
}


def check_program(prog: Program) -> dict[str, int]:
    """Check ``prog``'s stream; returns the total tokens pushed per queue."""
    cfg = prog.config
    try:
        check_stream(prog.insn_bytes, cfg)
    except ExecutionError as e:
        raise StreamCheckError(e.what, index=e.index) from None
    insns = prog.instructions()
    tokens = dict.fromkeys(DEP_QUEUES, 0)
    pushed = dict.fromkeys(DEP_QUEUES, 0)
    uops = np.zeros((cfg.uop_depth, 3), np.int64)
    queues: dict[tuple[object, ...], tuple[tuple[str, ...], tuple[str, ...]]] = {}
    for i, insn in enumerate(insns):
        # the queues an instruction pops and pushes follow from its module and its four flags:
        # asked once per combination, not per instruction
        key = (
            type(insn),
            getattr(insn, "memory_type", None),
            *[getattr(insn, f) for f in DEP_FLAGS],
        )
        pops_pushes = queues.get(key)
        if pops_pushes is None:
            pops_pushes = queues[key] = (insn.pops(), insn.pushes())
        pops, pushes = pops_pushes
        for q in pops:
            if tokens[q] == 0:
                raise StreamCheckError(
                    f"pops queue {q}, which holds no token at this point of the stream", index=i
                )
            tokens[q] -= 1
        _check_ranges(prog, insn, i, uops)
        for q in pushes:
            tokens[q] += 1
            pushed[q] += 1
            if tokens[q] > cfg.dep_queue_depth:
                raise StreamCheckError(
                    f"pushes queue {q} past its depth of {cfg.dep_queue_depth} tokens", index=i
                )
        if isinstance(insn, Finish):
            left = {q: n for q, n in tokens.items() if n}
            if left:
                raise StreamCheckError(f"tokens left unbalanced at FINISH: {left}", index=i)
            if i != len(insns) - 1:
                raise StreamCheckError("instructions follow FINISH", index=i)
            return pushed
    raise StreamCheckError("the stream does not end with FINISH", index=len(insns) - 1)


def _check_ranges(prog: Program, insn: Insn, i: int, uops: np.ndarray) -> None:
    cfg = prog.config
    if isinstance(insn, (Load, Store)):
        if insn.x_size == 0:
            return
        if isinstance(insn, Store):  # memory type OUT, no padding: checked by the validator
            buf, entries = "out", insn.y_size * insn.x_size
        else:
            buf, entries = _SRAM_OF[insn.memory_type], insn.rows * insn.row_width
        depth = cfg.depth_of(buf)
        if insn.sram_base + entries > depth:
            raise StreamCheckError(
                f"sram_base: {buf} entries [{insn.sram_base}, {insn.sram_base + entries}) run "
                f"past the {buf} buffer ({depth} entries)",
                index=i,
            )
        elem = cfg.mem_elem_bytes(insn.memory_type)
        if insn.y_size:
            end = (insn.dram_base + (insn.y_size - 1) * insn.x_stride + insn.x_size) * elem
            if end > prog.dram.size:
                raise StreamCheckError(
                    f"dram_base: bytes up to {end} run past the {prog.dram.size}-byte DRAM image",
                    index=i,
                )
            if isinstance(insn, Load) and insn.memory_type == MemType.UOP:
                for y in range(insn.y_size):
                    lo = (insn.dram_base + y * insn.x_stride) * 4
                    words = prog.dram[lo : lo + insn.x_size * 4].view(np.uint32)
                    row = insn.sram_base + (insn.y_pad_0 + y) * insn.row_width + insn.x_pad_0
                    uops[row : row + insn.x_size] = np.stack(decode_uops(words, cfg), 1)
        return
    if isinstance(insn, (Gemm, Alu)):
        if insn.iter_out == 0 or insn.iter_in == 0 or insn.uop_begin == insn.uop_end:
            return
        if insn.uop_begin > insn.uop_end or insn.uop_end > cfg.uop_depth:
            raise StreamCheckError(
                f"uop_end: micro-ops [{insn.uop_begin}, {insn.uop_end}) do not fit the uop "
                f"buffer ({cfg.uop_depth})",
                index=i,
            )
        k = uops[insn.uop_begin : insn.uop_end]
        span = (insn.iter_out - 1, insn.iter_in - 1)
        limits = [("dst", 0, "acc", insn.dst_factor_out, insn.dst_factor_in)]
        if not insn.reset:
            if isinstance(insn, Gemm):
                limits += [
                    ("src", 1, "inp", insn.src_factor_out, insn.src_factor_in),
                    ("wgt", 2, "wgt", insn.wgt_factor_out, insn.wgt_factor_in),
                ]
            elif not insn.use_imm:
                limits.append(("src", 1, "acc", insn.src_factor_out, insn.src_factor_in))
        for name, col, buf, f_out, f_in in limits:
            top = int(k[:, col].max()) + span[0] * f_out + span[1] * f_in
            if top >= cfg.depth_of(buf):
                raise StreamCheckError(
                    f"{name}: micro-op index {top} runs past the {buf} buffer "
                    f"({cfg.depth_of(buf)} entries)",
                    index=i,
                )
