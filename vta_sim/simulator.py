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
import threading
from typing import Any

import numpy as np

import isa.timing
from isa import HwConfig, Program, as_program, interrupt
from isa.formats import layout
from isa.semantics import ERRORS

from . import engine as E
from .buffers import Buffers
from .decode import instruction_table
from .diagnose import insn_limit_error, instruction_error, run_error
from .errors import CycleLimitError
from .result import MODULE_CATEGORIES, SimResult
from .trace import Trace

#: The cycle limit of a run when the caller names none. It bounds the work of every run: a
#: micro-op costs at least one cycle and an instruction that would end past the limit is refused
#: before its work is done. ResNet layers run in millions of cycles; a run past a billion is a
#: program that loops, not a workload.
DEFAULT_MAX_CYCLES = 1_000_000_000
#: The largest limit a caller may name (cycle arithmetic stays far inside 64 bits).
MAX_CYCLES_LIMIT = 1 << 60


def _params(cfg: HwConfig, *, trace: bool, max_cycles: int, every_cycle: bool) -> np.ndarray:
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
        "alu_imm_ii": cfg.alu_imm_ii,
        "gemm_pipe": t.GEMM_PIPE_LATENCY,
        "alu_pipe": t.ALU_PIPE_LATENCY,
        "fetch_burst": t.FETCH_BURST,
        **{f"rank_{m}": priority.index(m) for m in E.MODULES},
        **{f"eb_{k}": cfg.mem_elem_bytes(mt) for mt, k in enumerate(E.BYTE_KINDS[:6])},
        **{f"uop_{k}_lsb": uop[k].lsb for k in ("dst", "src", "wgt")},
        **{f"uop_{k}_mask": uop[k].mask for k in ("dst", "src", "wgt")},
        "max_cycles": max_cycles,
        "trace": int(trace),
        "every_cycle": int(every_cycle),
    }
    return np.array([values[p] for p in E.PARAMS], np.int64)


#: Runs whose work (micro-ops plus DMA elements plus instructions) is below this take well under
#: a second: they run in the caller's thread, without a worker thread's start-up cost.
_SMALL_WORK = 2_000_000


def _work(table: np.ndarray) -> float:
    """An upper bound of a run's work: micro-ops, DMA elements and instructions (a float, so
    that no product overflows)."""
    op = table[:, E.C_OPCODE]
    loops = (op == E.OP_GEMM) | (op == E.OP_ALU)
    mem = (op == E.OP_LOAD) | (op == E.OP_STORE)

    def col(c: int, rows: np.ndarray) -> np.ndarray:  # only the columns asked, as floats
        return table[rows, c].astype(np.float64)

    span = np.maximum(col(E.C_UOP_END, loops) - col(E.C_UOP_BEGIN, loops), 0)
    uops = (col(E.C_ITER_OUT, loops) * col(E.C_ITER_IN, loops) * span).sum()
    rows = col(E.C_YP0, mem) + col(E.C_Y, mem) + col(E.C_YP1, mem)
    width = col(E.C_XP0, mem) + col(E.C_X, mem) + col(E.C_XP1, mem)
    return float(uops + (rows * width).sum() + table.shape[0])


def _run_engine(table: np.ndarray, *args: np.ndarray, dense: bool = True) -> int:
    """Run the event loop; a long run goes to a worker thread, so that Ctrl-C reaches this one.

    The loop runs without the GIL and watches a stop flag; on KeyboardInterrupt the flag is
    raised, the loop stops at its next event, and the interrupt goes on to the caller.
    """
    ctl = np.zeros(1, np.int64)
    fn = E.engine(dense)
    interrupt.check()  # asked for while starting up (and perhaps swallowed by a library)
    if _work(table) < _SMALL_WORK:
        return int(fn(table, *args, ctl))
    args = (table, *args)
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["code"] = int(fn(*args, ctl))
        except BaseException as e:  # handed to the caller's thread
            outcome["error"] = e

    worker = threading.Thread(target=work, name="vta_sim-event-loop", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.25)
            interrupt.check()
    except KeyboardInterrupt:
        ctl[0] = 1
        # one instruction's work is not split; the loop stops once it is done (a daemon
        # thread, so an exiting process does not wait for it)
        worker.join(1.0)
        raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome["code"]


def simulate(
    program_or_path: Program | str | os.PathLike[str],
    *,
    trace: bool = True,
    max_cycles: int | None = None,
    every_cycle: bool = False,
    kernels: str = "dense",
    table: np.ndarray | None = None,
    in_place: bool = False,
) -> SimResult:
    """Run a program (object or ``.npz`` path) to FINISH and return its :class:`SimResult`.

    ``trace`` records the per-instruction trace; ``max_cycles`` bounds the run (default
    :data:`DEFAULT_MAX_CYCLES`; an instruction that would end past it stops the run before its
    work is done);
    ``every_cycle`` visits every cycle instead of jumping from event to event (slower, same
    result: it exists to check the event loop); ``kernels="reference"`` runs GEMM and ALU
    through the ISA's reference kernels one micro-op at a time instead of over dense runs of
    micro-ops (:mod:`vta_sim.dense`; same result, slower: it exists to check and measure those).

    ``table``: the program's :func:`~vta_sim.decode.instruction_table`, decoded and checked
    by a caller that runs the same instructions again (a compiled network's plan keeps each
    group's); it is only read. ``in_place``: the run updates the program's DRAM image itself
    (a caller that owns the image and takes the result's) instead of a copy.

    Otherwise the program itself is not modified. Raises
    :class:`~vta_sim.errors.InstructionError` for an instruction that cannot execute,
    :class:`~vta_sim.errors.DeadlockError`, :class:`~vta_sim.errors.NoFinishError` or
    :class:`~vta_sim.errors.CycleLimitError` for a run that stops without FINISH, and
    :class:`isa.ProgramError` for an unreadable program file.

    >>> import isa
    >>> r = simulate(isa.Program.build(isa.load_config("default"), [isa.Finish()]))
    >>> r.cycles, r.dram_bytes["insn"]
    (36, 16)
    """
    default_limit = max_cycles is None
    limit = DEFAULT_MAX_CYCLES if max_cycles is None else max_cycles
    if isinstance(limit, bool) or not isinstance(limit, (int, np.integer)):
        raise ValueError(f"max_cycles must be an integer, got {max_cycles!r}")
    if not 1 <= limit <= MAX_CYCLES_LIMIT:
        raise CycleLimitError(
            f"max_cycles={limit} is outside [1, {MAX_CYCLES_LIMIT}]", cycle=0, report={}
        )
    if kernels not in ("dense", "reference"):
        raise ValueError(f"kernels must be 'dense' or 'reference', got {kernels!r}")
    prog = as_program(program_or_path)
    cfg = prog.config
    if table is None:
        table = instruction_table(prog)
    n = table.shape[0]
    dram = prog.dram if in_place else prog.dram.copy()
    buffers = Buffers(cfg)
    prm = _params(cfg, trace=trace, max_cycles=int(limit), every_cycle=every_cycle)
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
    code = _run_engine(
        table, dram, *buffers.engine_args(), prm, stats, snap, ti, tp, tt, dense=kernels == "dense"
    )
    if code in ERRORS:
        raise instruction_error(code, stats, table)
    if code == E.CYCLE_LIMIT_INSN:
        raise insn_limit_error(stats, table, int(limit), default=default_limit)
    if code != E.DONE:
        raise run_error(
            code,
            table,
            snap,
            cfg.cmd_queue_depth,
            cfg.dep_queue_depth,
            int(limit),
            default=default_limit,
        )
    cycles = int(stats[E.S_CYCLES])
    if (stats[: E.S_FINISH] < 0).any():  # not reachable within the knob and limit bounds
        raise CycleLimitError(f"a cycle counter overflowed (cycles {cycles})", cycle=0, report={})
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
