"""What happened when: per-instruction records, DRAM-port intervals and token counts over time.

The trace's size grows with the number of instructions (one record each, one port interval per
DMA, at most one token change per pop or push), never with micro-ops or cycles. It exports as
Chrome trace JSON (``traceEvents``), which ui.perfetto.dev and chrome://tracing open: one track per
module plus one for the DRAM port, and one counter per dependency queue. Timestamps are cycles:
one microsecond on the trace's time axis is one cycle.

Example:
    >>> import isa, vta_sim
    >>> cfg = isa.load_config("default")
    >>> r = vta_sim.simulate(isa.Program.build(cfg, [isa.Finish()]))
    >>> rec = r.trace.records()[0]
    >>> rec.kind, rec.module, rec.issue
    ('FINISH', 'compute', 35)
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from isa import DEP_QUEUES

from . import engine as E
from .diagnose import describe

_QUEUES = tuple(DEP_QUEUES)
_PORT_TID = len(E.MODULES)


@dataclasses.dataclass(frozen=True)
class InsnRecord:
    """One instruction's life, in cycles; -1 when a step did not happen before the run ended.

    ``issue`` is its issue cycle, ``last`` its last cycle on the module (after any push hold),
    ``token_wait`` the cycles it waited at the head of its queue for tokens before issue,
    ``memory_wait`` the cycles between asking for the DRAM port and ``grant``, ``push_wait`` the
    cycles it held at the end for room in a pushed queue.
    """

    index: int
    module: str
    kind: str
    dispatch: int
    issue: int
    last: int
    token_wait: int
    memory_wait: int
    push_wait: int
    grant: int


@dataclasses.dataclass(frozen=True)
class PortInterval:
    """The DRAM port held by ``owner`` from ``start`` to ``last`` (inclusive) for ``insn``.

    For a fetch burst ``insn`` is the first instruction of the burst.
    """

    owner: str
    start: int
    last: int
    insn: int


class Trace:
    """The trace of one run, stored as arrays (see :data:`vta_sim.engine.TRACE_COLUMNS`)."""

    def __init__(
        self,
        table: np.ndarray,
        insns: np.ndarray,
        port: np.ndarray,
        tokens: np.ndarray,
        cycles: int,
    ):
        self._table = table
        self.insns = insns  # (n, len(TRACE_COLUMNS)) int64
        self.port = port  # (k, len(PORT_COLUMNS)) int64
        self.tokens = tokens  # (m, len(TOKEN_COLUMNS)) int64
        self.cycles = cycles

    def record(self, i: int) -> InsnRecord:
        """The record of instruction ``i``."""
        row = self.insns[i]
        values = {name: int(row[c]) for c, name in enumerate(E.TRACE_COLUMNS)}
        module = E.MODULES[int(self._table[i, E.COLUMNS.index("route")])]
        return InsnRecord(index=i, module=module, kind=describe(self._table, i), **values)

    def records(self) -> list[InsnRecord]:
        """Every instruction's record, in stream order."""
        return [self.record(i) for i in range(self.insns.shape[0])]

    def port_intervals(self) -> list[PortInterval]:
        """Every DRAM-port transfer, in grant order."""
        return [
            PortInterval(E.MODULES[int(o)], int(s), int(last), int(i))
            for o, s, last, i in self.port.tolist()
        ]

    def token_events(self) -> list[tuple[int, str, int]]:
        """(cycle from which visible, queue, token count) for every change of a queue's count."""
        return [(int(c), _QUEUES[int(q)], int(n)) for c, q, n in self.tokens.tolist()]

    # ---- Chrome / Perfetto export -------------------------------------------------------
    def to_chrome(self) -> dict[str, Any]:
        """The trace as a Chrome trace object: ``{"traceEvents": [...], ...}``."""
        ev: list[dict[str, Any]] = [
            {
                "ph": "M",
                "pid": 0,
                "name": "process_name",
                "args": {"name": "accelerator (1 us = 1 cycle)"},
            },
        ]
        for tid, name in enumerate((*E.MODULES, "dram port")):
            ev.append(
                {"ph": "M", "pid": 0, "tid": tid, "name": "thread_name", "args": {"name": name}}
            )
            ev.append(
                {
                    "ph": "M",
                    "pid": 0,
                    "tid": tid,
                    "name": "thread_sort_index",
                    "args": {"sort_index": tid},
                }
            )
        ev += self._insn_events()
        ev += self._port_events()
        ev += self._fetch_events()
        ev += self._counter_events()
        return {
            "traceEvents": ev,
            "displayTimeUnit": "ns",
            "otherData": {"time_unit": "1 us on the time axis = 1 cycle", "cycles": self.cycles},
        }

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the Chrome trace JSON to ``path``."""
        Path(path).write_text(json.dumps(self.to_chrome(), allow_nan=False))

    def _slice(self, tid: int, name: str, start: int, end: int, args: dict | None = None) -> dict:
        e = {"ph": "X", "pid": 0, "tid": tid, "name": name, "ts": start, "dur": end - start}
        if args:
            e["args"] = args
        return e

    def _insn_events(self) -> list[dict[str, Any]]:
        ev = []
        for r in self.records():
            if r.issue < 0:
                continue
            tid = E.MODULES.index(r.module)
            end = (r.last if r.last >= 0 else self.cycles - 1) + 1
            if r.token_wait > 0:
                ev.append(self._slice(tid, "wait token", r.issue - r.token_wait, r.issue))
            args = {
                "index": r.index,
                "dispatch": r.dispatch,
                "token_wait": r.token_wait,
                "memory_wait": r.memory_wait,
                "push_wait": r.push_wait,
                "grant": r.grant,
            }
            ev.append(self._slice(tid, r.kind, r.issue, end, args))
            # children nest inside the instruction's slice
            if r.memory_wait > 0:
                ev.append(self._slice(tid, "wait port", r.grant - r.memory_wait, r.grant))
            if r.push_wait > 0:
                ev.append(self._slice(tid, "wait push", end - r.push_wait, end))
        return ev

    def _port_events(self) -> list[dict[str, Any]]:
        ev = []
        for p in self.port_intervals():
            if p.owner == "fetch":
                name = "fetch burst"
            else:
                name = f"{p.owner}: {describe(self._table, p.insn)}"
            ev.append(
                self._slice(
                    _PORT_TID, name, p.start, p.last + 1, {"owner": p.owner, "insn": p.insn}
                )
            )
        return ev

    def _fetch_events(self) -> list[dict[str, Any]]:
        ev = []
        bursts = [p for p in self.port_intervals() if p.owner == "fetch"]
        n = self.insns.shape[0]
        for b, p in enumerate(bursts):
            hi = bursts[b + 1].insn if b + 1 < len(bursts) else n
            ev.append(self._slice(E.FETCH, f"burst {p.insn}..{hi - 1}", p.start, p.last + 1))
            disp = self.insns[p.insn : hi, E.T_DISPATCH]
            done = disp[disp >= 0]
            if done.size:
                ev.append(
                    self._slice(
                        E.FETCH,
                        "dispatch",
                        int(done.min()),
                        int(done.max()) + 1,
                        {"first": p.insn, "dispatched": int(done.size)},
                    )
                )
        return ev

    def _counter_events(self) -> list[dict[str, Any]]:
        ev = [{"ph": "C", "pid": 0, "name": q, "ts": 0, "args": {"tokens": 0}} for q in _QUEUES]
        for cycle, q, count in self.token_events():
            ev.append({"ph": "C", "pid": 0, "name": q, "ts": cycle, "args": {"tokens": count}})
        return ev
