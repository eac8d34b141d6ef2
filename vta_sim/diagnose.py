"""Turn the event loop's stop codes and final state into exceptions with readable messages.

Example:
    >>> import numpy as np
    >>> from vta_sim.engine import COLUMNS
    >>> row = np.zeros((1, len(COLUMNS)), np.int64); row[0, COLUMNS.index("opcode")] = 6
    >>> describe(row, 0)
    'opcode 6'
"""

from __future__ import annotations

from typing import Any

import numpy as np

from isa import DEP_QUEUES, AluOp, MemType, Opcode
from isa.formats import FORMATS, HEADER
from isa.semantics import ERR_DEP_FLAG, ERRORS

from . import engine as E
from .errors import CycleLimitError, DeadlockError, InstructionError, NoFinishError

_QUEUES = tuple(DEP_QUEUES)
_HEADER = {name for name, _ in HEADER}
_MEM_FIELDS = tuple(name for name, _ in FORMATS["mem"] if name not in _HEADER)
_GEMM_FIELDS = tuple(name for name, _ in FORMATS["gemm"] if name not in _HEADER)
_ALU_FIELDS = tuple(name for name, _ in FORMATS["alu"] if name not in _HEADER)


def _col(name: str) -> int:
    return E.COLUMNS.index(name)


def describe(table: np.ndarray, i: int) -> str:
    """A short name of instruction ``i``: 'LOAD INP', 'GEMM', 'ALU ADD', 'STORE', ..."""
    op = int(table[i, _col("opcode")])
    if op not in Opcode._value2member_map_:
        return f"opcode {op}"
    name = Opcode(op).name
    if op in (Opcode.LOAD, Opcode.STORE):
        mt = int(table[i, _col("memory_type")])
        kind = MemType(mt).name if mt in MemType._value2member_map_ else f"memory_type {mt}"
        return f"{name} {kind}"
    if op == Opcode.ALU:
        aop = int(table[i, _col("alu_opcode")])
        return f"ALU {AluOp(aop).name}" if aop in AluOp._value2member_map_ else "ALU ?"
    return name


def _fields(table: np.ndarray, i: int) -> str:
    op = int(table[i, _col("opcode")])
    names: tuple[str, ...] = ()
    if op in (Opcode.LOAD, Opcode.STORE):
        names = _MEM_FIELDS
    elif op == Opcode.GEMM:
        names = _GEMM_FIELDS
    elif op == Opcode.ALU:
        names = _ALU_FIELDS
    return ", ".join(f"{f}={int(table[i, _col(f)])}" for f in names)


def instruction_error(code: int, stats: np.ndarray, table: np.ndarray) -> InstructionError:
    """The exception for ISA error ``code`` raised by the instruction the loop stopped at."""
    i = int(stats[E.S_ERR_INDEX])
    field, what = ERRORS.get(code, ("?", f"unknown error code {code}"))
    module = E.MODULES[int(table[i, _col("route")])]
    if stats[E.S_ERR_DETAIL] >= 0:  # decoding named the very field
        field = E.COLUMNS[int(stats[E.S_ERR_DETAIL])]
    if code == ERR_DEP_FLAG:
        what = f"{field} names a queue the {module} module does not have"
    detail = _fields(table, i)
    message = f"{what} ({describe(table, i)} on {module}" + (f": {detail})" if detail else ")")
    return InstructionError(message, index=i, field=field)


def _waits(table: np.ndarray, snap: np.ndarray, m: int, cmd_depth: int, dep_depth: int) -> dict:
    """What module ``m`` is doing or waiting for at the stop (``waits_for`` None: idle)."""
    state = int(snap[E.SN_STATE + m])
    i = int(snap[E.SN_INSN + m])
    tokens = snap[E.SN_TOKENS : E.SN_TOKENS + E.N_QUEUES]
    entry: dict[str, Any] = {"instruction": i if i >= 0 else None}
    if i >= 0:
        entry["opcode"] = describe(table, i)
    if m == E.FETCH:
        if state == E.F_DISP:
            target = E.MODULES[int(table[i, _col("route")])]
            count = int(snap[E.SN_CMD + E.MODULES.index(target)])
            entry["waits_for"] = f"room in the {target} command queue ({count}/{cmd_depth} entries)"
        elif state == E.F_DONE:
            entry["waits_for"] = None
            entry["idle"] = f"all {int(snap[E.SN_FETCHED])} instructions fetched and dispatched"
        else:
            entry["waits_for"] = "the DRAM port"
        return entry
    if state == E.M_FREE and i >= 0:
        pops = int(table[i, _col("pops")])
        empty = [_QUEUES[q] for q in range(E.N_QUEUES) if pops >> q & 1 and tokens[q] < 1]
        entry["waits_for"] = "a token in " + ", ".join(f"{q} (0 tokens)" for q in empty)
    elif state == E.M_FREE:
        entry["waits_for"] = None
        entry["idle"] = "its command queue is empty"
    elif state == E.M_PUSHW:
        pushes = int(table[i, _col("pushes")])
        full = [_QUEUES[q] for q in range(E.N_QUEUES) if pushes >> q & 1 and tokens[q] >= dep_depth]
        entry["waits_for"] = "room to push into " + ", ".join(
            f"{q} (full, {dep_depth}/{dep_depth})" for q in full
        )
    elif state == E.M_REQ:
        entry["waits_for"] = "the DRAM port"
    else:
        entry["waits_for"] = "the end of its execution"
    return entry


def stop_report(table: np.ndarray, snap: np.ndarray, cmd_depth: int, dep_depth: int) -> dict:
    """Every module's instruction and wait, and every queue's count, at the stop."""
    return {
        "cycle": int(snap[E.SN_CYCLE]),
        "modules": {
            name: _waits(table, snap, m, cmd_depth, dep_depth) for m, name in enumerate(E.MODULES)
        },
        "dependency_queues": {q: int(snap[E.SN_TOKENS + k]) for k, q in enumerate(_QUEUES)},
        "command_queues": {
            name: int(snap[E.SN_CMD + m]) for m, name in enumerate(E.MODULES) if m != E.FETCH
        },
    }


def format_report(report: dict) -> str:
    lines = []
    for name, entry in report["modules"].items():
        if entry["waits_for"] is None:
            what = f"idle: {entry['idle']}"
        elif entry["instruction"] is not None:
            what = (
                f"instruction {entry['instruction']} ({entry['opcode']}) waits for "
                + (entry["waits_for"])
            )
        else:
            what = f"waits for {entry['waits_for']}"
        lines.append(f"  {name:8s} {what}")
    deps = ", ".join(f"{q}={c}" for q, c in report["dependency_queues"].items())
    cmds = ", ".join(f"{q}={c}" for q, c in report["command_queues"].items())
    lines.append(f"  dependency queue tokens: {deps}")
    lines.append(f"  command queue entries: {cmds}")
    return "\n".join(lines)


def _limit_name(max_cycles: int, default: bool) -> str:
    if default:
        return f"max_cycles={max_cycles} (the default limit; name another with --max-cycles)"
    return f"max_cycles={max_cycles}"


def insn_limit_error(
    stats: np.ndarray, table: np.ndarray, max_cycles: int, *, default: bool = False
) -> CycleLimitError:
    """The exception for an instruction whose execution alone would end past the limit."""
    i = int(stats[E.S_ERR_INDEX])
    end = int(stats[E.S_ERR_DETAIL])
    loops = ", ".join(
        f"{f}={int(table[i, _col(f)])}" for f in ("uop_begin", "uop_end", "iter_out", "iter_in")
    )
    return CycleLimitError(
        f"instruction {i} ({describe(table, i)}) would execute until cycle {end}, past "
        f"{_limit_name(max_cycles, default)}; stopped before running its micro-ops ({loops})",
        cycle=end,
        report={"instruction": i},
    )


def run_error(
    code: int,
    table: np.ndarray,
    snap: np.ndarray,
    cmd_depth: int,
    dep_depth: int,
    max_cycles: int,
    *,
    default: bool = False,
) -> Exception:
    """The exception for a run that stopped without FINISH (deadlock, end of stream, limit)."""
    report = stop_report(table, snap, cmd_depth, dep_depth)
    cycle = report["cycle"]
    body = format_report(report)
    if code == E.DEADLOCK:
        return DeadlockError(
            f"deadlock at cycle {cycle}: no module can make progress and FINISH has not run\n"
            + body,
            cycle=cycle,
            report=report,
        )
    if code == E.NO_FINISH:
        return NoFinishError(
            f"the instruction stream ended without FINISH (cycle {cycle}: every instruction "
            f"fetched and executed, all modules idle)\n" + body,
            cycle=cycle,
            report=report,
        )
    if code == E.INTERRUPTED:
        raise KeyboardInterrupt
    return CycleLimitError(
        f"no FINISH within {_limit_name(max_cycles, default)}; state at the limit:\n" + body,
        cycle=cycle,
        report=report,
    )
