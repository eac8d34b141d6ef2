"""Co-verification: run a program file on the RTL and compare it with the reference.

The RTL runs in a testbench (``hw/tb/vta_tb_top.v``) whose DRAM model serves the memory port
with the config's ``dram_latency`` and ``bus_bytes``; cocotb (``hw/tb/cocotb_top.py``) loads
the program's DRAM image, starts the run at ``insn_base``, waits for FINISH within a cycle
limit and dumps the final DRAM image. The image is compared byte for byte with the reference's
(:mod:`hw.reference`); a mismatch names the first differing tensor and element, and a hang names
the last instruction each module issued.

Example:
    >>> import isa
    >>> prog = isa.Program.build(isa.load_config("default"), [isa.Finish()])
    >>> r = coverify(prog)  # doctest: +SKIP
    >>> r.match, r.rtl_cycles, r.sim_cycles  # doctest: +SKIP
    (True, 36, 36)
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from isa import timing
from isa.config import HwConfig
from isa.encoding import decode_fields
from isa.energy import BUFFERS, DRAM_KINDS, EventCounts, count_events
from isa.errors import IsaError
from isa.formats import FORMATS
from isa.insn import AluOp, MemType, Opcode, module_of_fields
from isa.program import Program, as_program

from . import sim
from .errors import RtlError, RtlHang
from .reference import Reference, reference_run

TB_TOP = "vta_tb_top"
TB_MODULE = "hw.tb.cocotb_top"
MODULES = ("load", "compute", "store")
#: Statistics categories per module (docs/timing.md section 6), in the RTL's counter order.
CATEGORIES = {
    "fetch": ("busy", "wait_queue", "wait_memory", "idle"),
    "load": ("busy", "wait_token", "wait_memory", "idle"),
    "compute": ("busy", "wait_token", "wait_memory", "idle"),
    "store": ("busy", "wait_token", "wait_memory", "idle"),
}
#: Opcode values the ALU format can carry (the RTL counts each, listed in the ISA or not).
_ALU_OPCODE_VALUES = 1 << int(dict(FORMATS["alu"])["alu_opcode"])


def _alu_event(value: int, kind: str) -> str:
    name = AluOp(value).name.lower() if value in {int(a) for a in AluOp} else f"op{value}"
    return f"alu_uops.{name}_{kind}"


#: Event counters of vta_stats, in the RTL's order (the numbers ``dbg_event_sel`` takes), named
#: after the fields of :class:`isa.energy.EventCounts` (``<field>.<key>`` for its maps).
EVENTS: tuple[str, ...] = (
    "gemm_uops",
    "gemm_reset_uops",
    *(_alu_event(a, k) for a in range(_ALU_OPCODE_VALUES) for k in ("imm", "reg")),
    *(f"sram_reads.{b}" for b in BUFFERS),
    *(f"sram_writes.{b}" for b in BUFFERS),
    *(f"dram_bytes.{k}" for k in DRAM_KINDS),
)


def event_dict(events: EventCounts) -> dict[str, int]:
    """``events`` under the names of :data:`EVENTS` (zero where it has no such key).

    Raises :class:`RtlError` naming a key of ``events`` that the RTL has no counter for, so
    that a new kind of event cannot go unchecked.
    """
    flat = {"gemm_uops": events.gemm_uops, "gemm_reset_uops": events.gemm_reset_uops}
    for field in ("alu_uops", "sram_reads", "sram_writes", "dram_bytes"):
        for k, v in getattr(events, field).items():
            flat[f"{field}.{k}"] = int(v)
    extra = sorted(set(flat) - set(EVENTS))
    if extra:
        raise RtlError(f"event counts: the RTL has no counter for {', '.join(extra)}")
    return {e: int(flat.get(e, 0)) for e in EVENTS}


QUEUES = ("load->compute", "compute->load", "compute->store", "store->compute")
#: Smallest DRAM the testbench builds (log2 of bus words); sizes round up to powers of two so
#: that programs of similar size share a build.
_MIN_LOG_WORDS = 12


@dataclasses.dataclass
class RtlRun:
    """One run of a program on the RTL."""

    program: Program
    simulator: str
    finished: bool
    cycles: int
    dram: np.ndarray | None
    state: dict[str, Any]
    wall_seconds: float
    max_cycles: int
    #: cycles per module and statistics category, counted by the RTL (vta_stats)
    stats: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)
    #: events of the run (:data:`EVENTS`), counted by the RTL (vta_stats) up to quiescence
    events: dict[str, int] = dataclasses.field(default_factory=dict)

    def hang_report(self) -> str:
        """Where the run stuck: each module's last issued instruction, queues and tokens."""
        return hang_report(self.program, self.state, self.cycles, self.max_cycles)


@dataclasses.dataclass
class Mismatch:
    """The first byte where the RTL's final DRAM differs from the reference's."""

    offset: int
    tensor: str | None
    index: tuple[int, ...] | None
    expected: Any
    actual: Any
    differing_bytes: int

    def message(self) -> str:
        if self.tensor is None:
            where = f"DRAM byte {self.offset} (no symbol covers it)"
        else:
            where = f"tensor {self.tensor!r} element {list(self.index or ())}"
        return (
            f"{where}: expected {self.expected}, RTL has {self.actual} "
            f"({self.differing_bytes} differing bytes in all)"
        )


@dataclasses.dataclass
class CoverifyResult:
    """Outcome of co-verifying one program."""

    match: bool
    rtl_cycles: int
    sim_cycles: int | None
    reference: str
    mismatch: Mismatch | None
    run: RtlRun

    reference_stats: dict[str, dict[str, int]] | None = None
    #: :func:`isa.energy.count_events` of the program, under the names of :data:`EVENTS`
    reference_events: dict[str, int] | None = None

    @property
    def stats_match(self) -> bool | None:
        """Whether every module's cycles per category equal the simulator's (None: unknown)."""
        if self.reference_stats is None or not self.run.stats:
            return None
        return self.run.stats == self.reference_stats

    def stats_diff(self) -> str:
        """The categories where the RTL and the simulator disagree."""
        out = []
        for m, cats in self.run.stats.items():
            for c, n in cats.items():
                ref = (self.reference_stats or {}).get(m, {}).get(c)
                if ref != n:
                    out.append(f"{m}.{c}: RTL {n}, simulator {ref}")
        return "; ".join(out)

    @property
    def events_match(self) -> bool | None:
        """Whether every event counter of the RTL equals count_events' (None: unknown)."""
        if self.reference_events is None or not self.run.events:
            return None
        return self.run.events == self.reference_events

    def events_diff(self, program: str = "the program") -> str:
        """The event counters where the RTL and count_events disagree, naming ``program``."""
        ref = self.reference_events or {}
        return "; ".join(
            f"{program}: {e}: RTL {n}, count_events {ref.get(e)}"
            for e, n in self.run.events.items()
            if ref.get(e) != n
        )

    @property
    def cycle_ratio(self) -> float | None:
        """Simulator cycles / RTL cycles (None without a cycle-accurate reference)."""
        if self.sim_cycles is None or not self.rtl_cycles:
            return None
        return self.sim_cycles / self.rtl_cycles

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "match": self.match,
            "rtl_cycles": self.rtl_cycles,
            "sim_cycles": self.sim_cycles,
            "cycle_ratio": None if self.cycle_ratio is None else round(self.cycle_ratio, 6),
            "stats_match": self.stats_match,
            "events_match": self.events_match,
            "reference": self.reference,
            "simulator": self.run.simulator,
        }
        if self.mismatch is not None:
            d["mismatch"] = self.mismatch.message()
        if self.events_match is False:
            d["events_diff"] = self.events_diff()
        return d


# ---- program analysis ---------------------------------------------------------------------
def routed_indices(program: Program) -> dict[str, list[int]]:
    """Instruction indices each module receives, in order (fetch's routing)."""
    f = program.fields()
    out: dict[str, list[int]] = {m: [] for m in MODULES}
    for i, (op, mt) in enumerate(zip(f["opcode"].tolist(), f["memory_type"].tolist(), strict=True)):
        out[module_of_fields(int(op), int(mt))].append(i)
    return out


def serial_cycles(program: Program) -> int:
    """Cycles of the program with every instruction and fetch burst run one after another.

    An upper bound of any run that does not deadlock (no overlap, no waiting beyond the work
    itself); the hang limit is derived from it.
    """
    cfg = program.config
    f = decode_fields(program.insn_bytes, cfg)
    n = program.insn_count
    lat, bus = cfg.dram_latency, cfg.bus_bytes
    total = 0
    bursts = math.ceil(n / timing.FETCH_BURST)
    total += bursts * (lat + timing.fetch_beats(timing.FETCH_BURST, bus)) + n
    for i in range(n):
        op = int(f["opcode"][i])
        total += 1
        if op in (Opcode.LOAD, Opcode.STORE):
            x, y = int(f["x_size"][i]), int(f["y_size"][i])
            if x == 0:
                continue
            mt = int(f["memory_type"][i])
            eb = cfg.mem_elem_bytes(mt) if mt <= MemType.ACC8 else 1
            pad = timing.pad_entries(
                y,
                x,
                int(f["y_pad_0"][i]),
                int(f["y_pad_1"][i]),
                int(f["x_pad_0"][i]),
                int(f["x_pad_1"][i]),
            )
            total += pad + lat + timing.dma_beats(y, x, eb, bus)
        elif op in (Opcode.GEMM, Opcode.ALU):
            uops = (
                int(f["iter_out"][i])
                * int(f["iter_in"][i])
                * max(0, int(f["uop_end"][i]) - int(f["uop_begin"][i]))
            )
            if op == Opcode.GEMM:
                ii = cfg.gemm_ii
            else:
                ii = timing.alu_ii_of(int(f["use_imm"][i]), cfg.alu_ii, cfg.alu_imm_ii)
            pipe = timing.GEMM_PIPE_LATENCY if op == Opcode.GEMM else timing.ALU_PIPE_LATENCY
            total += timing.uop_exec_cycles(uops, ii, pipe)
    return total


def default_max_cycles(program: Program) -> int:
    """The hang limit: twice the serial cycle count, plus slack."""
    return 2 * serial_cycles(program) + 10_000


# ---- DRAM image files ---------------------------------------------------------------------
def write_hex(dram: np.ndarray, bus_bytes: int, path: Path) -> int:
    """Write ``dram`` as one little-endian ``bus_bytes`` word per line; returns the words."""
    words = -(-dram.size // bus_bytes)
    padded = np.zeros(words * bus_bytes, np.uint8)
    padded[: dram.size] = dram
    rows = padded.reshape(words, bus_bytes)[:, ::-1]
    text = rows.tobytes().hex()
    width = 2 * bus_bytes
    path.write_text("\n".join(text[i : i + width] for i in range(0, len(text), width)) + "\n")
    return words


def read_hex(path: Path, bus_bytes: int, nbytes: int) -> np.ndarray:
    """Read a ``$writememh`` dump back into ``nbytes`` bytes (comments and @addresses allowed).

    A plain dump (one word per line, no comments or addresses: what the DRAM model writes) is
    decoded in one step, since whole-network images run to millions of words.
    """
    text = path.read_text()
    fast = _read_plain_hex(text, bus_bytes, nbytes)
    if fast is not None:
        return fast
    words: dict[int, int] = {}
    addr = 0
    for raw in text.splitlines():
        line = raw.split("//", 1)[0].strip()
        if not line:
            continue
        for tok in line.split():
            if tok.startswith("@"):
                addr = int(tok[1:], 16)
                continue
            if any(c in tok.lower() for c in "xz"):
                raise RtlError(f"DRAM dump has unknown bits at word {addr}: {tok}")
            words[addr] = int(tok, 16)
            addr += 1
    n = -(-nbytes // bus_bytes)
    out = np.zeros(n * bus_bytes, np.uint8)
    for w, v in words.items():
        if w < n:
            out[w * bus_bytes : (w + 1) * bus_bytes] = np.frombuffer(
                v.to_bytes(bus_bytes, "little"), np.uint8
            )
    return out[:nbytes]


def _read_plain_hex(text: str, bus_bytes: int, nbytes: int) -> np.ndarray | None:
    """``text`` as a plain dump of ``bus_bytes`` words, or None when it is not one."""
    if "/" in text or "@" in text:
        return None
    lines = text.split()
    width = 2 * bus_bytes
    if not lines or any(len(w) != width for w in (lines[0], lines[-1])):
        return None
    joined = "".join(lines)
    if len(joined) != width * len(lines):
        return None
    try:
        raw = bytes.fromhex(joined)
    except ValueError:  # unknown bits (x, z) or a malformed word: the general reader says which
        return None
    rows = np.frombuffer(raw, np.uint8).reshape(len(lines), bus_bytes)[:, ::-1]
    n = -(-nbytes // bus_bytes)
    out = np.zeros(n * bus_bytes, np.uint8)
    k = min(n, rows.shape[0])
    out[: k * bus_bytes] = rows[:k].reshape(-1)
    return out[:nbytes]


# ---- running ------------------------------------------------------------------------------
def dram_log_words(program: Program) -> int:
    """log2 of the testbench DRAM size in bus words for ``program`` (a power of two)."""
    words = -(-program.dram.size // program.config.bus_bytes)
    return max(_MIN_LOG_WORDS, max(words - 1, 1).bit_length())


def build_testbench(
    cfg: HwConfig, simulator: str, log_words: int, *, build_root: Path | None = None
) -> sim.Build:
    """The co-verification testbench for ``cfg`` with a DRAM of ``2**log_words`` bus words,
    built once (and reused while its sources are unchanged)."""
    return sim.build(
        TB_TOP,
        cfg,
        simulator,
        parameters={"DRAM_LOG_WORDS": int(log_words)},
        testbench=True,
        build_root=build_root,
    )


def run_rtl(
    program: Program | str | os.PathLike[str],
    *,
    simulator: str = "icarus",
    max_cycles: int | None = None,
    build_root: Path | None = None,
    plusargs: Sequence[str] = (),
    build: sim.Build | None = None,
) -> RtlRun:
    """Run ``program`` on the RTL to FINISH (or to ``max_cycles``) and return the outcome.

    ``plusargs`` reach the testbench DRAM, e.g. ``+DRAM_GAPS=3`` to insert idle cycles between
    beats (functional robustness only: it changes the timing). ``build``: a testbench build
    (:func:`build_testbench`) to run on, so that many programs share one build; by default the
    one for the program's config and DRAM size, built when missing.
    """
    prog = as_program(program)
    cfg = prog.config
    limit = default_max_cycles(prog) if max_cycles is None else int(max_cycles)
    if build is None:
        b = build_testbench(cfg, simulator, dram_log_words(prog), build_root=build_root)
    else:
        b = build
        if b.toplevel != TB_TOP or b.config != cfg:
            raise RtlError(
                f"build {b.build_dir.name} is {b.toplevel} for config {b.config.name!r}; the "
                f"program needs {TB_TOP} for config {cfg.name!r}"
            )
        need = dram_log_words(prog)
        if int(b.parameters.get("DRAM_LOG_WORDS", 0)) < need:
            raise RtlError(
                f"build {b.build_dir.name}: its DRAM holds 2^{b.parameters.get('DRAM_LOG_WORDS')}"
                f" bus words; the program's image needs 2^{need}"
            )
        simulator = b.simulator
    with tempfile.TemporaryDirectory(prefix="vtac-rtl-run-") as tmp:
        tmpd = Path(tmp)
        init = tmpd / "dram_in.hex"
        out = tmpd / "dram_out.hex"
        result = tmpd / "result.json"
        words = write_hex(prog.dram, cfg.bus_bytes, init)
        job = {
            "insn_base": prog.insn_base,
            "insn_count": prog.insn_count,
            "max_cycles": limit,
            "events": len(EVENTS),
            "result": str(result),
        }
        (tmpd / "job.json").write_text(json.dumps(job))
        t0 = time.perf_counter()
        try:
            xml = sim.run(
                b,
                TB_MODULE,
                extra_env={"VTA_RTL_JOB": str(tmpd / "job.json")},
                plusargs=[
                    f"+DRAM_INIT={init}",
                    f"+DRAM_OUT={out}",
                    f"+DRAM_WORDS={words}",
                    *plusargs,
                ],
                log_file="sim.log",
            )
        except (SystemExit, RuntimeError) as e:
            raise RtlError(
                f"the {simulator} simulation of the program failed ({e}):\n{_latest_log(b)}"
            ) from None
        wall = time.perf_counter() - t0
        if not result.exists():
            raise RtlError(f"the {simulator} simulation ended without a result:\n{_latest_log(b)}")
        res = json.loads(result.read_text())
        sim.cleanup_run(xml)
        dram = read_hex(out, cfg.bus_bytes, prog.dram.size) if res["finished"] else None
    counts = res.get("stats", [])
    stats = (
        {
            m: {c: int(counts[4 * k + j]) for j, c in enumerate(cats)}
            for k, (m, cats) in enumerate(CATEGORIES.items())
        }
        if counts
        else {}
    )
    ev = res.get("events", [])
    events = {e: int(ev[k]) for k, e in enumerate(EVENTS)} if ev else {}
    if ev and len(ev) != len(EVENTS):
        raise RtlError(f"the RTL reported {len(ev)} event counters; expected {len(EVENTS)}")
    return RtlRun(
        prog,
        simulator,
        bool(res["finished"]),
        int(res["cycles"]),
        dram,
        res.get("state", {}),
        wall,
        limit,
        stats,
        events,
    )


def _latest_log(b: sim.Build) -> str:
    """The end of the most recent simulator log of build ``b``."""
    logs = sorted((b.build_dir / "runs").glob("*/sim.log"), key=lambda p: p.stat().st_mtime)
    return logs[-1].read_text()[-4000:] if logs else "(no simulator log)"


# ---- reports ------------------------------------------------------------------------------
def _describe(program: Program, index: int) -> str:
    insn = program.instructions()[index]
    name = insn.opcode.name
    mt = getattr(insn, "memory_type", None)
    if mt is not None:
        name += f" {mt.name}"
    flags = [
        f
        for f in ("pop_prev_dep", "pop_next_dep", "push_prev_dep", "push_next_dep")
        if getattr(insn, f)
    ]
    return f"#{index} {name}" + (f" ({', '.join(flags)})" if flags else "")


_FETCH_STATES = {0: None, 1: "the DRAM port", 2: "the end of its transfer"}


def hang_state(program: Program, state: dict[str, Any]) -> dict[str, Any]:
    """Where each module stands, from the testbench's snapshot of the RTL's debug outputs.

    The same shape as the simulator's stop report: per module the instruction it is on (or
    None) and what it waits for (None when idle), and every queue's count.
    """
    cfg = program.config
    insns = program.instructions()
    routed = routed_indices(program)
    tokens = {q: int(t) for q, t in zip(QUEUES, state["tokens"], strict=True)}
    cmds = {m: int(c) for m, c in zip(MODULES, state["cmd_counts"], strict=True)}
    modules: dict[str, dict[str, Any]] = {}
    fetched = int(state["dispatched"])
    fst = int(state.get("fetch_state", 0))
    if fst == 3 and fetched < program.insn_count:
        target = routed_module(program, fetched)
        modules["fetch"] = {
            "instruction": fetched,
            "waits_for": (
                f"room in the {target} command queue ({cmds[target]}/{cfg.cmd_queue_depth} entries)"
            ),
        }
    else:
        modules["fetch"] = {"instruction": None, "waits_for": _FETCH_STATES.get(fst)}
    for k, m in enumerate(MODULES):
        issued = int(state["issued"][k])
        st = int(state["states"][k])
        entry: dict[str, Any] = {
            "instruction": None,
            "waits_for": None,
            "last_issued": routed[m][issued - 1] if issued else None,
        }
        if st == 2:  # holding: its pushes wait for room
            i = routed[m][issued - 1]
            full = [q for q in insns[i].pushes() if tokens[q] >= cfg.dep_queue_depth]
            entry.update(
                instruction=i,
                waits_for="room to push into "
                + ", ".join(
                    f"{q} (full, {cfg.dep_queue_depth}/{cfg.dep_queue_depth})" for q in full
                ),
            )
        elif st == 1:
            entry.update(
                instruction=routed[m][issued - 1],
                waits_for="the DRAM port"
                if state["waiting"][k + 1]
                else "the end of its execution",
            )
        elif cmds[m] and issued < len(routed[m]):
            i = routed[m][issued]
            empty = [q for q in insns[i].pops() if tokens[q] < 1]
            entry.update(
                instruction=i, waits_for="a token in " + ", ".join(f"{q} (0 tokens)" for q in empty)
            )
        modules[m] = entry
    return {"modules": modules, "dependency_queues": tokens, "command_queues": cmds}


def routed_module(program: Program, index: int) -> str:
    f = program.fields()
    return module_of_fields(int(f["opcode"][index]), int(f["memory_type"][index]))


def hang_report(program: Program, state: dict[str, Any], cycles: int, limit: int) -> str:
    """A readable report of where a run stuck: each module's instruction and what it waits
    for, the last instruction each module issued, and every queue's count."""
    hs = hang_state(program, state)
    lines = [f"RTL hang: no FINISH within {limit} cycles (stopped at cycle {cycles})."]
    lines.append(
        f"  fetch: dispatched {int(state['dispatched'])} of {program.insn_count} "
        "instructions" + _waiting(program, hs["modules"]["fetch"])
    )
    for m in MODULES:
        e = hs["modules"][m]
        last = (
            "none issued yet"
            if e["last_issued"] is None
            else "last issued " + _describe(program, e["last_issued"])
        )
        lines.append(
            f"  {m}: {last}"
            + _waiting(program, e)
            + f"; {hs['command_queues'][m]} in its command queue"
        )
    lines.append("  tokens: " + ", ".join(f"{q}={t}" for q, t in hs["dependency_queues"].items()))
    return "\n".join(lines)


def _waiting(program: Program, entry: dict[str, Any]) -> str:
    if entry["waits_for"] is None:
        return "; idle"
    if entry["instruction"] is None:
        return f"; waits for {entry['waits_for']}"
    return f"; {_describe(program, entry['instruction'])} waits for {entry['waits_for']}"


def first_mismatch(program: Program, expected: np.ndarray, actual: np.ndarray) -> Mismatch | None:
    """The first byte where ``actual`` differs from ``expected``, named through the symbols."""
    exp = np.asarray(expected, np.uint8)
    act = np.asarray(actual, np.uint8)
    if exp.shape != act.shape:
        return Mismatch(0, None, None, f"{exp.size} bytes", f"{act.size} bytes", -1)
    diff = np.flatnonzero(exp != act)
    if diff.size == 0:
        return None
    off = int(diff[0])
    for name, s in sorted(program.symbols.items(), key=lambda kv: kv[1].offset):
        if s.offset <= off < s.offset + s.nbytes:
            item = np.dtype(s.dtype).itemsize
            flat = (off - s.offset) // item
            index = tuple(int(i) for i in np.unravel_index(flat, s.shape)) if s.shape else ()
            e = program.read(name, exp).reshape(-1)[flat]
            a = program.read(name, act).reshape(-1)[flat]
            return Mismatch(off, name, index, e.item(), a.item(), int(diff.size))
    return Mismatch(off, None, None, int(exp[off]), int(act[off]), int(diff.size))


def coverify(
    program: Program | str | os.PathLike[str],
    *,
    simulator: str = "icarus",
    max_cycles: int | None = None,
    build_root: Path | None = None,
    reference: Reference | None = None,
    plusargs: Sequence[str] = (),
) -> CoverifyResult:
    """Run ``program`` on the RTL and compare its final DRAM with the reference's.

    Raises :class:`RtlHang` (naming each module's last instruction) when the RTL does not
    reach FINISH, and :class:`RtlError` when the RTL cannot run.
    """
    prog = as_program(program)
    try:
        ref = reference_run(prog) if reference is None else reference
    except IsaError as e:
        if not hasattr(e, "report"):  # an instruction error: the program is wrong
            raise
        # the simulator stopped without FINISH (deadlock, no FINISH): see what the RTL does
        limit = max_cycles if max_cycles is not None else 2 * int(getattr(e, "cycle", 0)) + 1000
        run = run_rtl(
            prog, simulator=simulator, max_cycles=limit, build_root=build_root, plusargs=plusargs
        )
        if run.finished:
            raise RtlError(
                f"the RTL finished in {run.cycles} cycles, but the simulator stopped: {e}"
            ) from None
        raise RtlHang(f"{run.hang_report()}\nThe simulator stops too: {e}") from None
    run = run_rtl(
        prog, simulator=simulator, max_cycles=max_cycles, build_root=build_root, plusargs=plusargs
    )
    if not run.finished:
        raise RtlHang(run.hang_report())
    assert run.dram is not None
    mism = first_mismatch(prog, ref.dram, run.dram)
    return CoverifyResult(
        mism is None,
        run.cycles,
        ref.cycles,
        ref.source,
        mism,
        run,
        ref.modules,
        event_dict(count_events(prog)),
    )
