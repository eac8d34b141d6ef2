"""Run a program: decode it, allocate the machine, drive the event loop, collect the result.

Example:
    >>> import isa
    >>> cfg = isa.load_config("default")
    >>> prog = isa.Program.build(cfg, [isa.Finish()])
    >>> simulate(prog, trace=False).cycles
    36
"""

from __future__ import annotations

import os

import numpy as np

import isa.timing
from isa import HwConfig, Program, as_program
from isa.formats import layout
from isa.semantics import ERRORS

from . import engine as E
from .buffers import Buffers
from .decode import instruction_table
from .diagnose import instruction_error, run_error
from .result import MODULE_CATEGORIES, SimResult
from .trace import Trace

_NO_LIMIT = 1 << 62


def _params(cfg: HwConfig, *, trace: bool, max_cycles: int | None, every_cycle: bool) -> np.ndarray:
    """The event loop's parameter vector. Timing constants are read from isa.timing now."""
    t = isa.timing
    priority = tuple(t.PORT_PRIORITY)
    missing = [m for m in E.MODULES if m not in priority]
    if missing:
        raise ValueError(f"isa.timing.PORT_PRIORITY {priority} lacks {missing}")
    uop = {f.name: f for f in layout("uop", cfg).fields}
    values = {
        "dram_latency": cfg.dram_latency,
        "bus_bytes": cfg.bus_bytes,
        "cmd_queue_depth": cfg.cmd_queue_depth,
        "dep_queue_depth": cfg.dep_queue_depth,
        "gemm_ii": cfg.gemm_ii,
        "alu_ii": cfg.alu_ii,
        "gemm_pipe": t.GEMM_PIPE_LATENCY,
        "alu_pipe": t.ALU_PIPE_LATENCY,
        "fetch_burst": t.FETCH_BURST,
        **{f"rank_{m}": priority.index(m) for m in E.MODULES},
        **{f"eb_{k}": cfg.mem_elem_bytes(mt) for mt, k in enumerate(E.BYTE_KINDS[:6])},
        **{f"uop_{k}_lsb": uop[k].lsb for k in ("dst", "src", "wgt")},
        **{f"uop_{k}_mask": uop[k].mask for k in ("dst", "src", "wgt")},
        "max_cycles": _NO_LIMIT if max_cycles is None else int(max_cycles),
        "trace": int(trace),
        "every_cycle": int(every_cycle),
    }
    return np.array([values[p] for p in E.PARAMS], np.int64)


def simulate(
    program_or_path: Program | str | os.PathLike[str],
    *,
    trace: bool = True,
    max_cycles: int | None = None,
    every_cycle: bool = False,
) -> SimResult:
    """Run a program (object or ``.npz`` path) to FINISH and return its :class:`SimResult`.

    ``trace`` records the per-instruction trace; ``max_cycles`` is a safety limit;
    ``every_cycle`` visits every cycle instead of jumping from event to event (slower, same
    result: it exists to check the event loop).

    The program itself is not modified. Raises :class:`~vta_sim.errors.InstructionError` for an
    instruction that cannot execute, :class:`~vta_sim.errors.DeadlockError`,
    :class:`~vta_sim.errors.NoFinishError` or :class:`~vta_sim.errors.CycleLimitError` for a run
    that stops without FINISH, and :class:`isa.ProgramError` for an unreadable program file.

    >>> import isa
    >>> r = simulate(isa.Program.build(isa.load_config("default"), [isa.Finish()]))
    >>> r.cycles, r.dram_bytes["insn"]
    (36, 16)
    """
    prog = as_program(program_or_path)
    cfg = prog.config
    table = instruction_table(prog)
    n = table.shape[0]
    dram = prog.dram.copy()
    buffers = Buffers(cfg)
    prm = _params(cfg, trace=trace, max_cycles=max_cycles, every_cycle=every_cycle)
    stats = np.zeros(E.N_STATS, np.int64)
    stats[E.S_ERR_DETAIL] = -1
    snap = np.zeros(E.N_SNAP, np.int64)
    if trace:
        bursts = -(-n // max(int(prm[E.P_BURST]), 1))
        ti = np.full((n, len(E.TRACE_COLUMNS)), -1, np.int64)
        tp = np.zeros((n + bursts + 1, len(E.PORT_COLUMNS)), np.int64)
        tt = np.zeros((4 * n + 8, len(E.TOKEN_COLUMNS)), np.int64)
    else:
        ti = np.full((1, len(E.TRACE_COLUMNS)), -1, np.int64)
        tp = np.zeros((1, len(E.PORT_COLUMNS)), np.int64)
        tt = np.zeros((1, len(E.TOKEN_COLUMNS)), np.int64)
    code = E.engine()(table, dram, *buffers.engine_args(), prm, stats, snap, ti, tp, tt)
    if code in ERRORS:
        raise instruction_error(code, stats, table)
    if code != E.DONE:
        raise run_error(
            code, table, snap, cfg.cmd_queue_depth, cfg.dep_queue_depth, int(prm[E.P_MAX_CYCLES])
        )
    cycles = int(stats[E.S_CYCLES])
    modules = {
        name: {c: int(stats[E.S_CAT + 4 * m + k]) for k, c in enumerate(MODULE_CATEGORIES[name])}
        for m, name in enumerate(E.MODULES)
    }
    order = ("uop", "wgt", "inp", "acc", "acc8", "out", "insn")
    dram_bytes = {k: int(stats[E.S_BYTES + E.BYTE_KINDS.index(k)]) for k in order}
    tr = None
    if trace:
        tr = Trace(
            table, ti, tp[: stats[E.S_N_PORT]].copy(), tt[: stats[E.S_N_TOKEN]].copy(), cycles
        )
    return SimResult(
        program=prog,
        cycles=cycles,
        modules=modules,
        gemm_uops=int(stats[E.S_GEMM]),
        gemm_reset_uops=int(stats[E.S_RESET]),
        alu_uops=int(stats[E.S_ALU]),
        dram_bytes=dram_bytes,
        dram=dram,
        finish_index=int(stats[E.S_FINISH]),
        buffers=buffers,
        trace=tr,
    )
