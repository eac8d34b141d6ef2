"""Accelerator groups on the RTL, each checked against the simulator (``--device rtl``).

A network run on the RTL runs every accelerator group twice from the same DRAM image: on the
Verilog RTL (:func:`hw.coverify.run_rtl`, Icarus or Verilator) and on the simulator
(``vta_sim``). The group's :class:`GroupCheck` says whether the two final images are equal byte
for byte (the whole image, so a stray write outside the group's output counts too) and the two
cycle counts equal; where they differ it names the first differing byte through the group's
symbols (tensor and element). The network goes on with the RTL's image, so every later group is
checked from what the RTL produced, each against the simulator run from the same image.

The testbench is built once per config and DRAM size (:func:`hw.coverify.build_testbench`),
and every group of the network runs on that one build: the groups share the network's one DRAM
image, so they need the same DRAM size. A Verilator build takes about a minute; Icarus a few
seconds, but it simulates a thousand times slower, so Icarus suits small networks (digits).

Example:
    >>> rtl = RtlDevice("icarus")  # doctest: +SKIP
    >>> result, check = rtl.execute("conv1", program)  # doctest: +SKIP
    >>> check.line()  # doctest: +SKIP
    'conv1: RTL (icarus) ran; equals the simulator: image byte for byte, 1234 cycles'
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from runtime.errors import SessionError

#: HDL simulators the RTL runs on.
SIMULATORS = ("icarus", "verilator")


@dataclass(frozen=True)
class GroupCheck:
    """How one accelerator group's RTL run compares with the simulator's from the same image."""

    name: str
    simulator: str
    rtl_cycles: int
    sim_cycles: int
    #: the RTL's final DRAM image equals the simulator's, byte for byte
    bytes_equal: bool
    #: the first differing byte, named through the group's symbols (None when equal)
    mismatch: str | None
    #: every module's cycles per statistics category equal the simulator's
    stats_equal: bool
    stats_diff: str
    #: wall seconds of the RTL run (the simulator process, the image in and out) and of the
    #: simulator's run of the same program
    rtl_seconds: float
    image_bytes: int
    sim_seconds: float = 0.0
    #: every event counter of the RTL (micro-ops, buffer entries, DRAM bytes) equals
    #: isa.energy.count_events' (docs/energy.md "Cross-check against the RTL")
    events_equal: bool = False
    events_diff: str = ""

    @property
    def equal(self) -> bool:
        """Byte for byte and cycle for cycle."""
        return self.bytes_equal and self.rtl_cycles == self.sim_cycles

    def line(self) -> str:
        """One line: the RTL ran, and whether it equals the simulator (or where it differs)."""
        head = f"{self.name}: RTL ({self.simulator}) ran in {self.rtl_seconds:.1f} s; "
        if self.equal:
            stats = "" if self.stats_equal else f" (module statistics differ: {self.stats_diff})"
            if not self.events_equal:
                stats += f" (event counts differ: {self.events_diff})"
            return (
                f"{head}equals the simulator: image of {self.image_bytes:,} bytes byte for "
                f"byte, {self.rtl_cycles:,} cycles{stats}"
            )
        parts = []
        if not self.bytes_equal:
            parts.append(f"first differing byte: {self.mismatch}")
        cyc = "" if self.rtl_cycles == self.sim_cycles else " (differ)"
        parts.append(f"cycles: RTL {self.rtl_cycles:,}, simulator {self.sim_cycles:,}{cyc}")
        return f"{head}DIFFERS from the simulator: " + "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "group": self.name,
            "simulator": self.simulator,
            "equal": self.equal,
            "bytes_equal": self.bytes_equal,
            "rtl_cycles": self.rtl_cycles,
            "sim_cycles": self.sim_cycles,
            "stats_equal": self.stats_equal,
            "events_equal": self.events_equal,
            "mismatch": self.mismatch,
            "rtl_seconds": round(self.rtl_seconds, 3),
            "sim_seconds": round(self.sim_seconds, 3),
        }


@dataclass(frozen=True)
class RtlGroupResult:
    """The parts of a group's run the network reads (the names of ``vta_sim.SimResult``):
    the RTL's final image, cycles and module statistics; DRAM bytes per memory type are the
    simulator's count (the testbench does not split them)."""

    program: Any
    cycles: int
    modules: dict[str, dict[str, int]]
    dram_bytes: dict[str, int]
    dram: np.ndarray
    trace: Any = None

    def read(self, name: str) -> np.ndarray:
        return self.program.read(name, dram=self.dram)


class RtlDevice:
    """Runs accelerator groups on the RTL under ``simulator``, each checked against the
    simulator; the testbench is built on the first group and reused for the rest."""

    def __init__(self, simulator: str = "icarus", *, build_root: Path | None = None) -> None:
        if simulator not in SIMULATORS:
            raise SessionError(f"simulator {simulator!r}: one of {', '.join(SIMULATORS)}")
        self.simulator = simulator
        self.build_root = build_root
        self.build: Any = None
        #: seconds spent building (0 when an earlier identical build was reused)
        self.build_seconds = 0.0
        self.checks: list[GroupCheck] = []

    def _build_for(self, prog: Any) -> Any:
        from hw.coverify import build_testbench, dram_log_words

        need = dram_log_words(prog)
        b = self.build
        if b is None or b.config != prog.config or b.parameters["DRAM_LOG_WORDS"] < need:
            t0 = time.perf_counter()
            b = build_testbench(prog.config, self.simulator, need, build_root=self.build_root)
            self.build_seconds += time.perf_counter() - t0
            self.build = b
        return b

    def execute(self, name: str, prog: Any) -> tuple[RtlGroupResult, GroupCheck]:
        """Run group ``name``'s program on the RTL and on the simulator from the same image."""
        import vta_sim
        from hw.coverify import event_dict, first_mismatch, run_rtl
        from hw.errors import RtlError
        from isa.energy import count_events

        try:
            run = run_rtl(prog, build=self._build_for(prog))
        except RtlError as e:
            raise SessionError(
                f"group {name}: the RTL ({self.simulator}) could not run: {e}"
            ) from None
        if not run.finished or run.dram is None:
            raise SessionError(
                f"group {name}: the RTL ({self.simulator}) did not finish: {run.hang_report()}"
            )
        t0 = time.perf_counter()
        ref = vta_sim.simulate(prog, trace=False)
        sim_seconds = time.perf_counter() - t0
        ref_stats = {m: {c: int(n) for c, n in cats.items()} for m, cats in ref.modules.items()}
        mism = first_mismatch(prog, np.asarray(ref.dram, np.uint8), run.dram)
        diff = [
            f"{m}.{c}: RTL {n}, simulator {ref_stats.get(m, {}).get(c)}"
            for m, cats in run.stats.items()
            for c, n in cats.items()
            if ref_stats.get(m, {}).get(c) != n
        ]
        ref_events = event_dict(count_events(prog))
        ev_diff = [
            f"{e}: RTL {n}, count_events {ref_events[e]}"
            for e, n in run.events.items()
            if ref_events[e] != n
        ]
        check = GroupCheck(
            name=name,
            simulator=self.simulator,
            rtl_cycles=run.cycles,
            sim_cycles=int(ref.cycles),
            bytes_equal=mism is None,
            mismatch=None if mism is None else mism.message(),
            stats_equal=bool(run.stats) and not diff,
            stats_diff="; ".join(diff) if run.stats else "the RTL reported no statistics",
            rtl_seconds=run.wall_seconds,
            image_bytes=int(prog.dram.size),
            sim_seconds=sim_seconds,
            events_equal=bool(run.events) and not ev_diff,
            events_diff="; ".join(ev_diff) if run.events else "the RTL reported no events",
        )
        self.checks.append(check)
        result = RtlGroupResult(prog, run.cycles, run.stats, dict(ref.dram_bytes), run.dram)
        return result, check


def disagreement(checks: list[GroupCheck]) -> str | None:
    """One message naming every group whose RTL run differs from the simulator (None: all
    agree)."""
    bad = [c for c in checks if not c.equal]
    if not bad:
        return None
    return (
        f"the RTL differs from the simulator in {len(bad)} of {len(checks)} accelerator "
        "groups: " + " | ".join(c.line() for c in bad)
    )


def progress_bar(total: int, desc: str) -> Any:
    """A tqdm bar on stderr counting accelerator groups."""
    import sys

    try:
        from tqdm import tqdm
    except ImportError:
        raise SessionError("--progress needs the tqdm package (pip install tqdm)") from None
    return tqdm(total=total, desc=desc, unit="group", file=sys.stderr, leave=False)


__all__ = [
    "SIMULATORS",
    "GroupCheck",
    "RtlDevice",
    "RtlGroupResult",
    "disagreement",
    "progress_bar",
]
