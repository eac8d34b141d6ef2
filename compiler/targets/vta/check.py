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
from isa.encoding import decode_fields, decode_uops
from isa.insn import DEP_FLAGS, Opcode, queue_of
from isa.validate import check_stream

from .errors import StreamCheckError

_SRAM_OF = {
    MemType.INP: "inp",
    MemType.WGT: "wgt",
    MemType.ACC: "acc",
    MemType.ACC8: "acc",
    MemType.UOP: "uop",
}
_MEM_TYPES = frozenset(int(m) for m in MemType)


def check_program(prog: Program) -> dict[str, int]:
    """Check ``prog``'s stream; returns the total tokens pushed per queue."""
    cfg = prog.config
    try:
        check_stream(prog.insn_bytes, cfg)
    except ExecutionError as e:
        raise StreamCheckError(e.what, index=e.index) from None
    pushed = _pushed_if_valid(prog)
    if pushed is not None:
        return pushed
    return _check_in_order(prog)


def _check_in_order(prog: Program) -> dict[str, int]:
    """The walk of the module docstring, instruction by instruction: it raises at the first
    problem in program order."""
    cfg = prog.config
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


def _pushed_if_valid(prog: Program) -> dict[str, int] | None:
    """The tokens pushed per queue when the stream passes every check, computed on the decoded
    field columns (token counts as running sums, DMA ranges as array comparisons, micro-op
    ranges once per resident kernel and range); None when any check fails, for
    :func:`_check_in_order` to find and name the first problem."""
    cfg = prog.config
    f = decode_fields(prog.insn_bytes, cfg)
    op = f["opcode"]
    n = op.size
    if n == 0 or int(op[-1]) != Opcode.FINISH or int((op == Opcode.FINISH).sum()) != 1:
        return None
    mem = f["memory_type"]
    is_load, is_store = op == Opcode.LOAD, op == Opcode.STORE
    module = {
        "load": is_load & ((mem == MemType.INP) | (mem == MemType.WGT)),
        "store": is_store,
    }
    module["compute"] = ~(module["load"] | is_store)
    pops = {q: np.zeros(n, np.int64) for q in DEP_QUEUES}
    pushes = {q: np.zeros(n, np.int64) for q in DEP_QUEUES}
    for name, rows in module.items():
        for flag in DEP_FLAGS:
            q = queue_of(name, flag)
            if q is not None:
                (pops if flag.startswith("pop") else pushes)[q] += rows & (f[flag] != 0)
    pushed: dict[str, int] = {}
    for q in DEP_QUEUES:
        after_push = np.cumsum(pushes[q])
        after_pop = np.cumsum(pops[q])
        if (after_push - pushes[q] < after_pop).any():  # a pop before its push
            return None
        if (after_push - after_pop > cfg.dep_queue_depth).any() or after_push[-1] != after_pop[-1]:
            return None
        pushed[q] = int(after_push[-1])

    dma = (is_load | is_store) & (f["x_size"] != 0)
    if dma.any():
        depth = np.zeros(n, np.int64)
        elem = np.zeros(n, np.int64)
        for m in np.unique(mem[dma]).tolist():
            rows = dma & (mem == m)
            if m not in _MEM_TYPES:
                return None
            buf = "out" if m == MemType.OUT else _SRAM_OF.get(MemType(m))
            if buf is None or (is_load & rows & (mem == MemType.OUT)).any():
                return None
            depth[rows & is_store] = cfg.depth_of("out")
            depth[rows & is_load] = cfg.depth_of(buf)
            elem[rows] = cfg.mem_elem_bytes(MemType(m))
        y, x = f["y_size"], f["x_size"]
        entries = np.where(
            is_store,
            y * x,
            (f["y_pad_0"] + y + f["y_pad_1"]) * (f["x_pad_0"] + x + f["x_pad_1"]),
        )
        if (dma & (f["sram_base"] + entries > depth)).any():
            return None
        end = (f["dram_base"] + (y - 1) * f["x_stride"] + x) * elem
        if (dma & (y != 0) & (end > prog.dram.size)).any():
            return None

    uop_load = is_load & (mem == MemType.UOP) & (f["x_size"] != 0) & (f["y_size"] != 0)
    loops = ((op == Opcode.GEMM) | (op == Opcode.ALU)) & (f["iter_out"] != 0)
    loops &= (f["iter_in"] != 0) & (f["uop_begin"] != f["uop_end"])
    if not loops.any():
        return pushed
    begin, end = f["uop_begin"], f["uop_end"]
    if ((begin > end) & loops).any() or ((end > cfg.uop_depth) & loops).any():
        return None
    # the uop buffer changes only at a LOAD UOP: between two of them (usually one, at the
    # start) every GEMM and ALU reads the same micro-ops, checked together, with the column
    # maxima of each distinct (begin, end) range computed once
    depths = {b: cfg.depth_of(b) for b in ("acc", "inp", "wgt")}
    uops = np.zeros((cfg.uop_depth, 3), np.int64)
    cuts = [*np.flatnonzero(uop_load).tolist(), n]
    if cuts[0] > 0:
        cuts.insert(0, 0)
    for at, stop in zip(cuts[:-1], cuts[1:], strict=True):
        if uop_load[at]:
            ys, xs = int(f["y_size"][at]), int(f["x_size"][at])
            stride, sram, dram = (
                int(f["x_stride"][at]),
                int(f["sram_base"][at]),
                int(f["dram_base"][at]),
            )
            width = int(f["x_pad_0"][at]) + xs + int(f["x_pad_1"][at])
            for yy in range(ys):
                lo = (dram + yy * stride) * 4
                words = prog.dram[lo : lo + xs * 4].view(np.uint32)
                row = sram + (int(f["y_pad_0"][at]) + yy) * width + int(f["x_pad_0"][at])
                uops[row : row + xs] = np.stack(decode_uops(words, cfg), 1)
        rows = at + np.flatnonzero(loops[at:stop])
        if rows.size == 0:
            continue
        pairs, which = np.unique(begin[rows] * (cfg.uop_depth + 1) + end[rows], return_inverse=True)
        top = np.array(
            [
                uops[p // (cfg.uop_depth + 1) : p % (cfg.uop_depth + 1)].max(axis=0)
                for p in pairs.tolist()
            ]
        )[which.reshape(-1)]
        o, i = f["iter_out"][rows] - 1, f["iter_in"][rows] - 1

        reads = f["reset"][rows] == 0
        gemm = reads & (op[rows] == Opcode.GEMM)
        alu_src = reads & (op[rows] == Opcode.ALU) & (f["use_imm"][rows] == 0)
        for col, factor, buf, sel in (
            (0, "dst", "acc", None), (1, "src", "inp", gemm), (2, "wgt", "wgt", gemm),
            (1, "src", "acc", alu_src),
        ):  # fmt: skip
            reach = top[:, col] + o * f[f"{factor}_factor_out"][rows]
            reach += i * f[f"{factor}_factor_in"][rows]
            over = reach >= depths[buf]
            if (over if sel is None else sel & over).any():
                return None
    return pushed


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
