"""The event loop: fetch, load, compute and store on one DRAM port, cycle-exact to docs/timing.md.

One compiled function runs the whole program over the decoded instruction table. It visits only
the cycles in which something can happen: a cycle right after any change of state (a dispatch, an
issue, a token, a grant, a push), and otherwise the next scheduled end (of a transfer, of padding,
of an execution). Every decision in cycle ``t`` reads the registered state at the start of ``t``
(docs/timing.md §1): token and command-queue counts change through per-cycle deltas applied at the
end of the cycle. Between two visited cycles nothing changes, so each module's category of the
visited cycle covers the whole gap (docs/timing.md §6).

An instruction's functional effect is applied when it issues (docs/timing.md §7) by the ISA's own
kernels (:mod:`vta_sim.kernels`), GEMM and ALU over runs of micro-ops (:mod:`vta_sim.dense`, the
same results); a micro-op costs the kernel's loop body and nothing else.

The loop returns a code: :data:`DONE`, an ISA error code (``isa.semantics.ERRORS``) or one of
:data:`DEADLOCK`, :data:`NO_FINISH`, :data:`CYCLE_LIMIT`; :mod:`vta_sim.simulator` turns codes
into exceptions.

Example (the loop is normally driven by :func:`vta_sim.simulate`):
    >>> COLUMNS.index("opcode"), MODULES
    (0, ('fetch', 'load', 'compute', 'store'))
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from isa.encoding import all_field_names
from isa.insn import MemType, Opcode
from isa.semantics import ERR_MEM_TYPE, ERR_OPCODE

from . import dense as _d
from . import kernels as _k

# ---- vocabulary -------------------------------------------------------------------------
#: Module ids, also the order of statistics and trace tracks.
MODULES = ("fetch", "load", "compute", "store")
FETCH, LOAD, COMPUTE, STORE = 0, 1, 2, 3

#: Statistics categories (docs/timing.md §6); fetch's WAIT_TOKEN is its "wait_queue".
CATEGORIES = ("busy", "wait_token", "wait_memory", "idle")
BUSY, WAIT_TOKEN, WAIT_MEMORY, IDLE = 0, 1, 2, 3

#: Dependency queues, in the order of ``isa.DEP_QUEUES``; bit ``q`` of a pop/push mask is queue q.
N_QUEUES = 4

#: Columns of the instruction table: every field of the ISA's instruction formats, in the order
#: of their declaration (:data:`isa.formats.FORMATS`), then what :mod:`vta_sim.decode` derives:
#: the executing module, bit masks of popped/pushed queues, and a fault found by decoding alone
#: (an ISA error code, 0 if none) with the column of the field at fault.
COLUMNS = all_field_names() + ("route", "pops", "pushes", "fault", "fault_field")
C_OPCODE = COLUMNS.index("opcode")
C_POP_PREV = COLUMNS.index("pop_prev_dep")
C_POP_NEXT = COLUMNS.index("pop_next_dep")
C_PUSH_PREV = COLUMNS.index("push_prev_dep")
C_PUSH_NEXT = COLUMNS.index("push_next_dep")
C_MEMTYPE = COLUMNS.index("memory_type")
C_SRAM = COLUMNS.index("sram_base")
C_DRAM = COLUMNS.index("dram_base")
C_Y = COLUMNS.index("y_size")
C_X = COLUMNS.index("x_size")
C_STRIDE = COLUMNS.index("x_stride")
C_YP0 = COLUMNS.index("y_pad_0")
C_YP1 = COLUMNS.index("y_pad_1")
C_XP0 = COLUMNS.index("x_pad_0")
C_XP1 = COLUMNS.index("x_pad_1")
C_RESET = COLUMNS.index("reset")
C_UOP_BEGIN = COLUMNS.index("uop_begin")
C_UOP_END = COLUMNS.index("uop_end")
C_ITER_OUT = COLUMNS.index("iter_out")
C_ITER_IN = COLUMNS.index("iter_in")
C_DST_FO = COLUMNS.index("dst_factor_out")
C_DST_FI = COLUMNS.index("dst_factor_in")
C_SRC_FO = COLUMNS.index("src_factor_out")
C_SRC_FI = COLUMNS.index("src_factor_in")
C_WGT_FO = COLUMNS.index("wgt_factor_out")
C_WGT_FI = COLUMNS.index("wgt_factor_in")
C_ALU_OP = COLUMNS.index("alu_opcode")
C_USE_IMM = COLUMNS.index("use_imm")
C_IMM = COLUMNS.index("imm")
C_ROUTE = COLUMNS.index("route")
C_POPS = COLUMNS.index("pops")
C_PUSHES = COLUMNS.index("pushes")
C_FAULT = COLUMNS.index("fault")
C_FAULT_FIELD = COLUMNS.index("fault_field")

OP_LOAD, OP_STORE, OP_GEMM, OP_FINISH, OP_ALU = (
    int(Opcode.LOAD),
    int(Opcode.STORE),
    int(Opcode.GEMM),
    int(Opcode.FINISH),
    int(Opcode.ALU),
)
MT_UOP, MT_WGT, MT_INP, MT_ACC, MT_OUT, MT_ACC8 = (int(m) for m in MemType)

# ---- parameters (int64 vector) ----------------------------------------------------------
PARAMS = (
    "dram_latency",
    "bus_bytes",
    "cmd_queue_depth",
    "dep_queue_depth",
    "gemm_ii",
    "alu_ii",
    "gemm_pipe",
    "alu_pipe",
    "fetch_burst",
    "rank_fetch",
    "rank_load",
    "rank_compute",
    "rank_store",
    "eb_uop",
    "eb_wgt",
    "eb_inp",
    "eb_acc",
    "eb_out",
    "eb_acc8",
    "uop_dst_lsb",
    "uop_dst_mask",
    "uop_src_lsb",
    "uop_src_mask",
    "uop_wgt_lsb",
    "uop_wgt_mask",
    "max_cycles",
    "trace",
    "every_cycle",
    "alu_imm_ii",
)
(
    P_LATENCY,
    P_BUS,
    P_CMD_DEPTH,
    P_DEP_DEPTH,
    P_GEMM_II,
    P_ALU_II,
    P_GEMM_PIPE,
    P_ALU_PIPE,
    P_BURST,
    P_RANK,
    _P_RANK1,
    _P_RANK2,
    _P_RANK3,
    P_EB,
    _P_EB1,
    _P_EB2,
    _P_EB3,
    _P_EB4,
    _P_EB5,
    P_UOP_DST_LSB,
    P_UOP_DST_MASK,
    P_UOP_SRC_LSB,
    P_UOP_SRC_MASK,
    P_UOP_WGT_LSB,
    P_UOP_WGT_MASK,
    P_MAX_CYCLES,
    P_TRACE,
    P_EVERY_CYCLE,
    P_ALU_IMM_II,
) = range(len(PARAMS))

# ---- statistics (int64 vector) ----------------------------------------------------------
#: DRAM byte counters: the six memory types (by MemType value), then instructions.
BYTE_KINDS = ("uop", "wgt", "inp", "acc", "out", "acc8", "insn")
S_CYCLES = 0
S_CAT = 1  # 4 modules x 4 categories, module-major
S_GEMM = S_CAT + 16
S_RESET = S_GEMM + 1
S_ALU = S_RESET + 1
S_BYTES = S_ALU + 1
S_N_PORT = S_BYTES + len(BYTE_KINDS)
S_N_TOKEN = S_N_PORT + 1
S_FINISH = S_N_TOKEN + 1  # index of the FINISH that ended the run
S_ERR_INDEX = S_FINISH + 1  # instruction at fault
S_ERR_DETAIL = S_ERR_INDEX + 1  # column of the field at fault, when decoding found it
S_STAMP = S_ERR_DETAIL + 1
N_STATS = S_STAMP + 1

# ---- state snapshot at the stop (int64 vector), for deadlock reports ----------------------
SN_CYCLE = 0
SN_STATE = 1  # 4 entries: fetch state, then each module's state
SN_INSN = 5  # 4 entries: the instruction each module holds or faces (-1: none)
SN_TOKENS = 9  # 4 dependency queues
SN_CMD = 13  # 4 entries: command queue counts (entry 0 unused)
SN_FETCHED = 17  # instructions read by fetch so far
N_SNAP = 18

#: Fetch states.
F_REQ, F_XFER, F_DISP, F_DONE = 0, 1, 2, 3
#: Load/compute/store states: free (may issue), padding or asking for the port, executing,
#: holding to push.
M_FREE, M_REQ, M_EXEC, M_PUSHW = 0, 1, 2, 3

# ---- per-instruction trace columns (int64, -1 when it did not happen) ---------------------
TRACE_COLUMNS = ("dispatch", "issue", "last", "token_wait", "memory_wait", "push_wait", "grant")
T_DISPATCH, T_ISSUE, T_LAST, T_TOKEN_WAIT, T_MEM_WAIT, T_PUSH_WAIT, T_GRANT = range(7)
#: Port intervals: owner module, first cycle, last cycle, instruction (first of a fetch burst).
PORT_COLUMNS = ("owner", "start", "last", "insn")
#: Token changes: cycle from which the count is visible, queue, count.
TOKEN_COLUMNS = ("cycle", "queue", "count")

# ---- return codes beyond the ISA's error codes ------------------------------------------
DONE = 0
DEADLOCK = 100
NO_FINISH = 101
CYCLE_LIMIT = 102
#: An instruction about to issue would end past ``max_cycles``: stopped before doing its work
#: (``S_ERR_INDEX`` names it, ``S_ERR_DETAIL`` holds the cycle its execution would end).
CYCLE_LIMIT_INSN = 103
#: The caller raised the stop flag (``ctl[0] != 0``), e.g. on Ctrl-C.
INTERRUPTED = 104

_NEVER = np.int64(1) << np.int64(62)


@numba.njit
def _execute(
    i,
    F,
    dram,
    inp3,
    inp_b,
    wgt3,
    wgt_b,
    acc3,
    acc_b,
    acc_flat,
    out3,
    out_b,
    uopw,
    uopw_b,
    uop_tab,
    prm,
    stats,
    dense,
):
    """Apply instruction ``i``'s functional effect; return 0 or an ISA error code.

    ``dense`` runs GEMM and ALU through :mod:`vta_sim.dense` (the same results, computed over
    runs of micro-ops), and LOAD and STORE through its flat copies; otherwise through the
    reference kernels, one micro-op and one array view at a time.
    """
    op = F[i, C_OPCODE]
    if op == OP_LOAD or op == OP_STORE:
        mt = F[i, C_MEMTYPE]
        x = F[i, C_X]
        y = F[i, C_Y]
        if mt < 0 or mt > MT_ACC8:
            return ERR_MEM_TYPE  # not a memory type of the ISA, even on a NOP
        if op == OP_STORE:
            if mt != MT_OUT and x != 0:
                return ERR_MEM_TYPE
            pads = F[i, C_YP0] + F[i, C_YP1] + F[i, C_XP0] + F[i, C_XP1]
            sb, db, st = F[i, C_SRAM], F[i, C_DRAM], F[i, C_STRIDE]
            eb = prm[P_EB + MT_OUT]
            if dense:
                code = _d.store(out_b, eb, dram, sb, db, y, x, st, pads)
            else:
                code = _k.store(out_b, eb, dram, sb, db, y, x, st, pads)
        elif mt == MT_ACC8:
            code = _k.load_acc8(
                acc_flat,
                prm[P_EB + MT_ACC8],
                dram,
                F[i, C_SRAM],
                F[i, C_DRAM],
                y,
                x,
                F[i, C_STRIDE],
                F[i, C_YP0],
                F[i, C_YP1],
                F[i, C_XP0],
                F[i, C_XP1],
            )
        elif mt == MT_OUT:
            code = 0 if x == 0 else ERR_MEM_TYPE
        else:
            if mt == MT_UOP:
                sram = uopw_b
            elif mt == MT_WGT:
                sram = wgt_b
            elif mt == MT_INP:
                sram = inp_b
            else:
                sram = acc_b
            sb, db, st, eb = F[i, C_SRAM], F[i, C_DRAM], F[i, C_STRIDE], prm[P_EB + mt]
            yp0, yp1, xp0, xp1 = F[i, C_YP0], F[i, C_YP1], F[i, C_XP0], F[i, C_XP1]
            if dense:
                code = _d.load(sram, eb, dram, sb, db, y, x, st, yp0, yp1, xp0, xp1)
            else:
                code = _k.load(sram, eb, dram, sb, db, y, x, st, yp0, yp1, xp0, xp1)
            if code == 0 and mt == MT_UOP and x != 0:
                rows = F[i, C_YP0] + y + F[i, C_YP1]
                width = F[i, C_XP0] + x + F[i, C_XP1]
                _k.decode_uops(
                    uopw,
                    uop_tab,
                    F[i, C_SRAM],
                    F[i, C_SRAM] + rows * width,
                    prm[P_UOP_DST_LSB],
                    prm[P_UOP_DST_MASK],
                    prm[P_UOP_SRC_LSB],
                    prm[P_UOP_SRC_MASK],
                    prm[P_UOP_WGT_LSB],
                    prm[P_UOP_WGT_MASK],
                )
        if code == 0:
            stats[S_BYTES + mt] += y * x * prm[P_EB + mt]
        return code
    if op == OP_GEMM:
        if dense:
            code = _d.gemm(
                inp3,
                wgt3,
                acc3,
                out3,
                uop_tab,
                F[i, C_RESET],
                F[i, C_UOP_BEGIN],
                F[i, C_UOP_END],
                F[i, C_ITER_OUT],
                F[i, C_ITER_IN],
                F[i, C_DST_FO],
                F[i, C_DST_FI],
                F[i, C_SRC_FO],
                F[i, C_SRC_FI],
                F[i, C_WGT_FO],
                F[i, C_WGT_FI],
            )
        else:
            code = _k.gemm(
                inp3,
                wgt3,
                acc3,
                out3,
                uop_tab,
                F[i, C_RESET],
                F[i, C_UOP_BEGIN],
                F[i, C_UOP_END],
                F[i, C_ITER_OUT],
                F[i, C_ITER_IN],
                F[i, C_DST_FO],
                F[i, C_DST_FI],
                F[i, C_SRC_FO],
                F[i, C_SRC_FI],
                F[i, C_WGT_FO],
                F[i, C_WGT_FI],
            )
        if code == 0:
            n = _uop_count(F, i)
            if F[i, C_RESET] != 0:
                stats[S_RESET] += n
            else:
                stats[S_GEMM] += n
        return code
    if op == OP_ALU:
        if dense:
            code = _d.alu(
                acc3,
                out3,
                uop_tab,
                F[i, C_RESET],
                F[i, C_UOP_BEGIN],
                F[i, C_UOP_END],
                F[i, C_ITER_OUT],
                F[i, C_ITER_IN],
                F[i, C_DST_FO],
                F[i, C_DST_FI],
                F[i, C_SRC_FO],
                F[i, C_SRC_FI],
                F[i, C_ALU_OP],
                F[i, C_USE_IMM],
                F[i, C_IMM],
            )
        else:
            code = _k.alu(
                acc3,
                out3,
                uop_tab,
                F[i, C_RESET],
                F[i, C_UOP_BEGIN],
                F[i, C_UOP_END],
                F[i, C_ITER_OUT],
                F[i, C_ITER_IN],
                F[i, C_DST_FO],
                F[i, C_DST_FI],
                F[i, C_SRC_FO],
                F[i, C_SRC_FI],
                F[i, C_ALU_OP],
                F[i, C_USE_IMM],
                F[i, C_IMM],
            )
        if code == 0:
            stats[S_ALU] += _uop_count(F, i)
        return code
    if op == OP_FINISH:
        return 0
    return ERR_OPCODE


@numba.njit
def _uop_count(F, i):
    span = F[i, C_UOP_END] - F[i, C_UOP_BEGIN]
    if span < 0:
        span = 0
    return F[i, C_ITER_OUT] * F[i, C_ITER_IN] * span


@numba.njit
def _has_room(mask, tok, depth):
    for q in range(N_QUEUES):
        if (mask >> q) & 1 and tok[q] >= depth:
            return False
    return True


@numba.njit
def _has_tokens(mask, tok):
    for q in range(N_QUEUES):
        if (mask >> q) & 1 and tok[q] < 1:
            return False
    return True


def _build(stamp: int, dense: bool) -> Any:
    # ``stamp`` is a closure variable so that numba's cache key (which hashes closure contents)
    # changes whenever the kernels' sources change; see vta_sim.dense.SOURCE_STAMP. ``dense``
    # picks the GEMM/ALU kernels (see _execute); each choice is its own compiled loop.
    def run(
        F,
        dram,
        inp3,
        inp_b,
        wgt3,
        wgt_b,
        acc3,
        acc_b,
        acc_flat,
        out3,
        out_b,
        uopw,
        uopw_b,
        uop_tab,
        prm,
        stats,
        snap,
        ti,
        tp,
        tt,
        ctl,
    ):
        stats[S_STAMP] = stamp
        n = F.shape[0]
        lat = prm[P_LATENCY]
        bus = prm[P_BUS]
        cmd_depth = prm[P_CMD_DEPTH]
        dep_depth = prm[P_DEP_DEPTH]
        burst = prm[P_BURST]
        max_cycles = prm[P_MAX_CYCLES]
        tracing = prm[P_TRACE] != 0
        every_cycle = prm[P_EVERY_CYCLE] != 0
        n_port = 0
        n_tok = 0

        # fetch: state, when it asks, next instruction to read, buffered range, next dispatch
        f_state = F_REQ if n > 0 else F_DONE
        f_ask = 0
        f_next = 0
        f_hi = 0
        f_disp = 0
        f_from = 0
        # command queues: rings of instruction index and dispatch cycle, registered counts
        cq_idx = np.zeros((4, cmd_depth), np.int64)
        cq_t = np.zeros((4, cmd_depth), np.int64)
        cq_head = np.zeros(4, np.int64)
        cq_tail = np.zeros(4, np.int64)
        cq_cnt = np.zeros(4, np.int64)
        d_cmd = np.zeros(4, np.int64)
        tok = np.zeros(N_QUEUES, np.int64)
        d_tok = np.zeros(N_QUEUES, np.int64)
        # modules
        m_state = np.zeros(4, np.int64)
        m_insn = np.full(4, -1, np.int64)
        m_ask = np.zeros(4, np.int64)
        m_end = np.zeros(4, np.int64)
        m_beats = np.zeros(4, np.int64)
        m_free = np.zeros(4, np.int64)  # first cycle the module is free to issue
        cat = np.zeros(4, np.int64)
        port_free_at = 0
        rank = prm[P_RANK : P_RANK + 4]

        t = 0
        code = DONE
        while True:
            if t >= max_cycles:
                code = CYCLE_LIMIT
                break
            if ctl[0] != 0:  # the caller asks to stop (the loop runs without the GIL)
                code = INTERRUPTED
                break
            changed = False
            finished = False

            # -- port arbitration among those asking at the start of t (timing.md §4)
            winner = -1
            if port_free_at <= t:
                best = 1 << 30
                if f_state == F_REQ and t >= f_ask:
                    winner = FETCH
                    best = rank[FETCH]
                for m in range(1, 4):
                    if m_state[m] == M_REQ and t >= m_ask[m] and rank[m] < best:
                        winner = m
                        best = rank[m]

            # -- fetch (timing.md §5)
            if f_state == F_REQ:
                if winner == FETCH:
                    k = min(burst, n - f_next)
                    last = t + lat + _k.fetch_beats(k, bus) - 1
                    port_free_at = last + 1
                    f_from = last + 1
                    f_disp = f_next
                    f_hi = f_next + k
                    f_next += k
                    f_state = F_XFER
                    stats[S_BYTES + 6] += 16 * k
                    if tracing:
                        tp[n_port, 0] = FETCH
                        tp[n_port, 1] = t
                        tp[n_port, 2] = last
                        tp[n_port, 3] = f_disp
                    n_port += 1
                    cat[FETCH] = BUSY
                    changed = True
                else:
                    cat[FETCH] = WAIT_MEMORY
            elif f_state == F_XFER:
                if t < f_from:
                    cat[FETCH] = BUSY
                else:
                    f_state = F_DISP
            if f_state == F_DISP:
                i = f_disp
                m = F[i, C_ROUTE]
                if cq_cnt[m] < cmd_depth:
                    slot = cq_tail[m] % cmd_depth
                    cq_idx[m, slot] = i
                    cq_t[m, slot] = t
                    cq_tail[m] += 1
                    d_cmd[m] += 1
                    if tracing:
                        ti[i, T_DISPATCH] = t
                    f_disp += 1
                    if f_disp == f_hi:
                        if f_next < n:
                            f_state = F_REQ
                            f_ask = t + 1
                        else:
                            f_state = F_DONE
                    cat[FETCH] = BUSY
                    changed = True
                else:
                    cat[FETCH] = WAIT_TOKEN
            elif f_state == F_DONE:
                cat[FETCH] = IDLE

            # -- load, compute, store (timing.md §2-§4)
            for m in range(1, 4):
                st = m_state[m]
                if st == M_FREE:
                    if cq_cnt[m] >= 1:
                        slot = cq_head[m] % cmd_depth
                        i = cq_idx[m, slot]
                        # a malformed instruction fails at the head of its queue, before it
                        # waits for tokens that its flags may not even mean
                        if F[i, C_FAULT] != 0:
                            stats[S_ERR_INDEX] = i
                            stats[S_ERR_DETAIL] = F[i, C_FAULT_FIELD]
                            code = F[i, C_FAULT]
                            break
                        pops = F[i, C_POPS]
                        if _has_tokens(pops, tok):
                            # an execution that would end past the limit stops the run before
                            # its work is done: FINISH, on compute, could only follow it
                            op = F[i, C_OPCODE]
                            if op == OP_GEMM or op == OP_ALU:
                                nu = _uop_count(F, i)
                                if nu > 0:
                                    if op == OP_GEMM:
                                        e = _k.uop_exec_cycles(nu, prm[P_GEMM_II], prm[P_GEMM_PIPE])
                                    else:
                                        ii = _k.alu_ii_of(
                                            F[i, C_USE_IMM], prm[P_ALU_II], prm[P_ALU_IMM_II]
                                        )
                                        e = _k.uop_exec_cycles(nu, ii, prm[P_ALU_PIPE])
                                    e_end = t + e
                                    if e_end >= max_cycles:
                                        # a fault is still reported as the fault
                                        if op == OP_GEMM:
                                            err = _k.gemm_check(
                                                inp3,
                                                wgt3,
                                                acc3,
                                                uop_tab,
                                                F[i, C_RESET],
                                                F[i, C_UOP_BEGIN],
                                                F[i, C_UOP_END],
                                                F[i, C_ITER_OUT],
                                                F[i, C_ITER_IN],
                                                F[i, C_DST_FO],
                                                F[i, C_DST_FI],
                                                F[i, C_SRC_FO],
                                                F[i, C_SRC_FI],
                                                F[i, C_WGT_FO],
                                                F[i, C_WGT_FI],
                                            )
                                        else:
                                            err = _k.alu_check(
                                                acc3,
                                                uop_tab,
                                                F[i, C_RESET],
                                                F[i, C_UOP_BEGIN],
                                                F[i, C_UOP_END],
                                                F[i, C_ITER_OUT],
                                                F[i, C_ITER_IN],
                                                F[i, C_DST_FO],
                                                F[i, C_DST_FI],
                                                F[i, C_SRC_FO],
                                                F[i, C_SRC_FI],
                                                F[i, C_ALU_OP],
                                                F[i, C_USE_IMM],
                                            )
                                        if err > 0:
                                            stats[S_ERR_INDEX] = i
                                            code = err
                                            break
                                        stats[S_ERR_INDEX] = i
                                        stats[S_ERR_DETAIL] = e_end
                                        code = CYCLE_LIMIT_INSN
                                        break
                            for q in range(N_QUEUES):
                                if (pops >> q) & 1:
                                    d_tok[q] -= 1
                            cq_head[m] += 1
                            d_cmd[m] -= 1
                            err = _execute(
                                i,
                                F,
                                dram,
                                inp3,
                                inp_b,
                                wgt3,
                                wgt_b,
                                acc3,
                                acc_b,
                                acc_flat,
                                out3,
                                out_b,
                                uopw,
                                uopw_b,
                                uop_tab,
                                prm,
                                stats,
                                dense,
                            )
                            if err != 0:
                                stats[S_ERR_INDEX] = i
                                code = err
                                break
                            if tracing:
                                ti[i, T_ISSUE] = t
                                ti[i, T_TOKEN_WAIT] = t - max(cq_t[m, slot] + 1, m_free[m])
                            m_insn[m] = i
                            cat[m] = BUSY
                            changed = True
                            op = F[i, C_OPCODE]
                            # execution time E (timing.md §3); E = 0 ends in the issue cycle
                            m_state[m] = M_EXEC
                            m_end[m] = t
                            if op == OP_GEMM or op == OP_ALU:
                                nu = _uop_count(F, i)
                                if op == OP_GEMM:
                                    m_end[m] = t + _k.uop_exec_cycles(
                                        nu, prm[P_GEMM_II], prm[P_GEMM_PIPE]
                                    )
                                else:
                                    ii = _k.alu_ii_of(
                                        F[i, C_USE_IMM], prm[P_ALU_II], prm[P_ALU_IMM_II]
                                    )
                                    m_end[m] = t + _k.uop_exec_cycles(nu, ii, prm[P_ALU_PIPE])
                            elif op == OP_LOAD or op == OP_STORE:
                                x = F[i, C_X]
                                y = F[i, C_Y]
                                if x > 0:
                                    pad = 0
                                    if op == OP_LOAD:
                                        pad = _k.pad_entries(
                                            y, x, F[i, C_YP0], F[i, C_YP1], F[i, C_XP0], F[i, C_XP1]
                                        )
                                    if op == OP_LOAD and y == 0:
                                        m_end[m] = t + pad
                                    else:
                                        eb = prm[P_EB + F[i, C_MEMTYPE]]
                                        m_state[m] = M_REQ
                                        m_ask[m] = t + 1 + pad
                                        m_beats[m] = _k.dma_beats(y, x, eb, bus)
                            elif op == OP_FINISH:
                                finished = True
                                stats[S_FINISH] = i
                        else:
                            cat[m] = WAIT_TOKEN
                    else:
                        cat[m] = IDLE
                elif st == M_REQ:
                    if winner == m:
                        i = m_insn[m]
                        m_state[m] = M_EXEC
                        m_end[m] = t + lat + m_beats[m] - 1
                        port_free_at = t + lat + m_beats[m]
                        if tracing:
                            ti[i, T_GRANT] = t
                            ti[i, T_MEM_WAIT] = t - m_ask[m]
                            tp[n_port, 0] = m
                            tp[n_port, 1] = t
                            tp[n_port, 2] = m_end[m]
                            tp[n_port, 3] = i
                        n_port += 1
                        cat[m] = BUSY
                        changed = True
                    elif t < m_ask[m]:
                        cat[m] = BUSY
                    else:
                        cat[m] = WAIT_MEMORY
                elif st == M_EXEC:
                    cat[m] = BUSY
                else:
                    cat[m] = WAIT_TOKEN

                # push in the last cycle, or hold until every pushed queue has room
                if (m_state[m] == M_EXEC and m_end[m] == t) or st == M_PUSHW:
                    i = m_insn[m]
                    pushes = F[i, C_PUSHES]
                    if _has_room(pushes, tok, dep_depth):
                        for q in range(N_QUEUES):
                            if (pushes >> q) & 1:
                                d_tok[q] += 1
                        m_state[m] = M_FREE
                        m_free[m] = t + 1
                        if tracing:
                            ti[i, T_LAST] = t
                            ti[i, T_PUSH_WAIT] = t - m_end[m]
                        changed = True
                    elif st != M_PUSHW:
                        m_state[m] = M_PUSHW
                        changed = True
            if code != DONE:
                break

            # -- end of cycle: what changed becomes visible from t + 1
            for q in range(N_QUEUES):
                if d_tok[q] != 0:
                    tok[q] += d_tok[q]
                    d_tok[q] = 0
                    if tracing and n_tok < tt.shape[0]:
                        tt[n_tok, 0] = t + 1
                        tt[n_tok, 1] = q
                        tt[n_tok, 2] = tok[q]
                        n_tok += 1
            for m in range(4):
                cq_cnt[m] += d_cmd[m]
                d_cmd[m] = 0
            if finished:
                for m in range(4):
                    stats[S_CAT + 4 * m + cat[m]] += 1
                t += 1
                break

            # -- the next cycle in which something can happen
            if changed:
                t_next = t + 1
            else:
                t_next = _NEVER
                if f_state == F_XFER:
                    t_next = min(t_next, f_from)
                elif f_state == F_REQ:
                    t_next = min(t_next, f_ask if t < f_ask else port_free_at)
                for m in range(1, 4):
                    if m_state[m] == M_REQ:
                        # padding ends (busy turns into waiting for the port), then the port
                        # frees: each is a change of category or of state
                        t_next = min(t_next, m_ask[m] if t < m_ask[m] else port_free_at)
                    elif m_state[m] == M_EXEC:
                        t_next = min(t_next, m_end[m])
                if t_next == _NEVER:
                    idle = f_state == F_DONE
                    for m in range(1, 4):
                        if m_state[m] != M_FREE or cq_cnt[m] != 0:
                            idle = False
                    code = NO_FINISH if idle else DEADLOCK
                    for m in range(4):
                        stats[S_CAT + 4 * m + cat[m]] += 1
                    t += 1
                    break
                if every_cycle:
                    t_next = t + 1  # no jumps: a check that jumping skips nothing
                if t_next > max_cycles:
                    t_next = max_cycles
            for m in range(4):
                stats[S_CAT + 4 * m + cat[m]] += t_next - t
            t = t_next

        # -- the state at the stop, for results and reports
        stats[S_CYCLES] = t
        stats[S_N_PORT] = n_port
        stats[S_N_TOKEN] = n_tok
        snap[SN_CYCLE] = t
        snap[SN_STATE + FETCH] = f_state
        snap[SN_INSN + FETCH] = f_disp if f_state == F_DISP else -1
        for m in range(1, 4):
            snap[SN_STATE + m] = m_state[m]
            if m_state[m] != M_FREE:
                snap[SN_INSN + m] = m_insn[m]
            elif cq_cnt[m] >= 1:
                snap[SN_INSN + m] = cq_idx[m, cq_head[m] % cmd_depth]
            else:
                snap[SN_INSN + m] = -1
            snap[SN_CMD + m] = cq_cnt[m]
        for q in range(N_QUEUES):
            snap[SN_TOKENS + q] = tok[q]
        snap[SN_FETCHED] = f_next
        return code

    return run


_ENGINES: dict[bool, Any] = {}


def engine(dense: bool = True) -> Any:
    """The compiled event loop (compiled, or loaded from numba's cache, on first use).

    It runs without the GIL, so a caller can run it in a worker thread and stay responsive
    (Ctrl-C) while it runs; raising ``ctl[0]`` makes it stop with :data:`INTERRUPTED`.
    ``dense=False`` gives the loop that runs GEMM and ALU through the reference kernels one
    micro-op at a time (same results and cycles; kept to check and measure the dense one).
    """
    if dense not in _ENGINES:
        _ENGINES[dense] = numba.njit(cache=True, nogil=True)(_build(_d.SOURCE_STAMP, dense))
    return _ENGINES[dense]
