"""Plots of a run (Gantt, utilization, roofline, stall bars), ``vtac sim --plot``, the demo's
chart, and the Chrome/Perfetto trace checked against the trace event format."""

from __future__ import annotations

import json
import math
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_sim_random import Draw, random_config, random_program

import isa
import vta_sim
from isa import Alu, AluOp, Finish, Gemm, Load, MemType, Program, Store
from isa.asm import assemble
from runtime.cli import main as vtac
from vta_sim.plot import (
    LANES,
    STYLES,
    RooflineLayer,
    gantt,
    roofline,
    save_gantt,
    stall_bars,
    trace_intervals,
    utilization_bins,
    utilization_over_time,
)
from vta_sim.result import MODULE_CATEGORIES

CFG = isa.load_config("default")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def example(name: str) -> Program:
    text = resources.files("isa").joinpath(f"examples/{name}.vasm").read_text()
    return assemble(text, source=name)


def long_pipeline(tiles: int, uops: int = 4) -> Program:
    """Double-buffered load -> compute -> store over ``tiles`` tiles, 5 instructions per tile."""
    n = 2 + 5 * tiles + 1
    data = -(-16 * n // 4096) * 4096  # first byte after the instructions
    inp, wgt, out = (
        data // CFG.mem_elem_bytes(mt) for mt in (MemType.INP, MemType.WGT, MemType.OUT)
    )
    insns: list[isa.Insn] = [
        Load(memory_type=MemType.UOP, dram_base=data // 4, x_size=2),
        Load(memory_type=MemType.WGT, dram_base=wgt, x_size=4),
    ]
    for t in range(tiles):
        b = t % 2
        insns += [
            Load(
                memory_type=MemType.INP,
                sram_base=8 * b,
                dram_base=inp,
                x_size=8,
                pop_next_dep=t >= 2,
                push_next_dep=True,
            ),
            Gemm(
                reset=True,
                uop_begin=0,
                uop_end=1,
                iter_out=2,
                dst_factor_out=1,
                pop_next_dep=t >= 2,
            ),
            Gemm(
                uop_begin=1,
                uop_end=2,
                iter_out=uops,
                pop_prev_dep=True,
                push_prev_dep=t + 2 < tiles,
            ),
            Alu(
                alu_opcode=AluOp.SHR,
                uop_begin=0,
                uop_end=1,
                iter_out=2,
                use_imm=True,
                imm=1,
                push_next_dep=True,
            ),
            Store(
                dram_base=out,
                x_size=2,
                pop_prev_dep=True,
                push_prev_dep=t + 2 < tiles or t == tiles - 1,
            ),
        ]
    insns.append(Finish(pop_next_dep=True))
    assert len(insns) == n
    return Program.build(CFG, insns, dram_bytes=data + 4096)


# ---- the intervals behind the pictures add up to the run's statistics ------------------------
def assert_intervals_match_statistics(r: vta_sim.SimResult) -> None:
    iv = trace_intervals(r)
    for lane in LANES[:-1]:
        sel = iv.lane == LANES.index(lane)
        starts, ends = np.sort(iv.start[sel]), np.sort(iv.end[sel])
        assert np.all(starts[1:] >= ends[:-1]), f"overlapping intervals on {lane}"
        cats = MODULE_CATEGORIES[lane]
        got = {c: iv.cycles_in(lane, "wait_token" if c == "wait_queue" else c) for c in cats[:3]}
        assert got == {c: r.modules[lane][c] for c in cats[:3]}, lane
    port = iv.lane == LANES.index("DRAM port")
    held = sum(
        min(p.last + 1, r.cycles) - p.start for p in r.trace.port_intervals() if p.start < r.cycles
    )
    assert int((iv.end[port] - iv.start[port]).sum()) == held


ODD_ENDINGS = {
    # FINISH ends the run while a LOAD transfers, pads, or a STORE waits for the port / a token;
    # instructions after FINISH keep fetch busy
    "load in flight": [
        Load(memory_type=MemType.INP, dram_base=1024, x_size=64, y_size=4, x_stride=64),
        Finish(),
    ],
    "padding at the end": [
        Load(memory_type=MemType.INP, dram_base=1024, x_size=4, x_pad_0=15, y_pad_0=15),
        Finish(),
    ],
    "store waits for the port": [
        Load(memory_type=MemType.INP, dram_base=1024, x_size=64, y_size=4, x_stride=64),
        Store(x_size=64, dram_base=1024),
        Finish(),
    ],
    "store waits for a token": [Store(x_size=1, dram_base=1024, pop_prev_dep=True), Finish()],
    "push back-pressure": [
        Load(memory_type=MemType.INP, dram_base=1024, x_size=1, push_next_dep=True)
        for _ in range(12)
    ]
    + [Gemm(uop_begin=0, uop_end=1, iter_out=20, pop_prev_dep=True) for _ in range(12)]
    + [Finish()],
    "command queue full": [Gemm(uop_begin=0, uop_end=1, iter_out=50) for _ in range(40)]
    + [Finish()],
    "after FINISH": [Finish()] + [Store(x_size=4, dram_base=1024) for _ in range(30)],
}


@pytest.mark.parametrize("name", ["matmul16", "alu_ops", "padded_load"])
def test_intervals_add_up_to_statistics_on_examples(name):
    assert_intervals_match_statistics(vta_sim.simulate(example(name)))


@pytest.mark.parametrize("name", list(ODD_ENDINGS))
def test_intervals_add_up_to_statistics_on_odd_endings(name):
    r = vta_sim.simulate(Program.build(CFG, ODD_ENDINGS[name], dram_bytes=1 << 14))
    assert_intervals_match_statistics(r)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_intervals_add_up_to_statistics_on_random_programs(data):
    d = Draw(data)
    assert_intervals_match_statistics(vta_sim.simulate(random_program(d, random_config(d))))


def test_utilization_bins_conserve_cycles_and_micro_ops():
    r = vta_sim.simulate(long_pipeline(tiles=40, uops=30))
    u = utilization_bins(r, bins=37)  # bins that do not divide the run: a short last bin
    width = np.diff(u.edges)
    assert u.edges[0] == 0 and u.edges[-1] == r.cycles and len(width) <= 37
    for m in vta_sim.engine.MODULES:
        assert np.all((u.busy[m] >= 0) & (u.busy[m] <= 1 + 1e-9))
        assert math.isclose((u.busy[m] * width).sum(), r.modules[m]["busy"])
    assert math.isclose((u.gemm_uops_per_cycle * width).sum(), r.gemm_uops)
    assert u.gemm_uops_per_cycle.max() <= 1 / r.config.gemm_ii + 1e-9


# ---- Gantt chart --------------------------------------------------------------------------
def lane_labels(ax) -> list[str]:
    return [t.get_text() for t in ax.get_yticklabels()]


def test_gantt_png_lanes_and_legend(tmp_path):
    r = vta_sim.simulate(example("matmul16"))
    path = save_gantt(r, tmp_path / "g.png")
    data = path.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 10_000
    ax = gantt(r)
    assert lane_labels(ax) == ["fetch", "load", "compute", "store", "DRAM port"]
    assert ax.get_xlabel() == "cycle" and ax.get_xlim() == (0, r.cycles)
    legend = {t.get_text() for t in ax.get_legend().texts}
    assert {
        "LOAD INP (load)",
        "LOAD WGT (load)",
        "LOAD UOP (compute)",
        "GEMM",
        "ALU",
        "STORE (store)",
        "FINISH",
        "token wait",
        "port wait",
    } <= legend
    assert "binned" not in ax.get_title()


def test_gantt_long_trace_stays_bounded(tmp_path):
    r = vta_sim.simulate(long_pipeline(tiles=4000))
    n = r.program.insn_count
    assert n > 20_000
    max_bars = 500
    ax = gantt(r, max_bars=max_bars)
    assert "binned" in ax.get_title()
    assert lane_labels(ax) == list(LANES)
    # one artist per lane and style, each with at most one rectangle per bin
    assert len(ax.patches) <= len(LANES) * len(STYLES) < n / 100
    rects = sum(len(p.get_path().vertices) // 5 for p in ax.patches)
    assert rects <= len(LANES) * len(STYLES) * max_bars and rects < n / 2
    ax.figure.savefig(tmp_path / "long.png", dpi=80)
    assert (tmp_path / "long.png").read_bytes().startswith(PNG_MAGIC)


def test_gantt_window_and_trace_input():
    r = vta_sim.simulate(long_pipeline(tiles=40))
    ax = gantt(r.trace, window=(100, 600), title="zoom")
    assert ax.get_xlim() == (100, 600) and ax.get_title() == "zoom"
    for patch in ax.patches:
        path = patch.get_path()
        x = path.vertices[path.codes != path.CLOSEPOLY, 0]
        assert x.min() >= 100 and x.max() <= 600
    with pytest.raises(ValueError, match="empty"):
        gantt(r, window=(600, 600))


def test_plots_need_a_trace():
    r = vta_sim.simulate(long_pipeline(tiles=3), trace=False)
    with pytest.raises(ValueError, match="trace=True"):
        gantt(r)


# ---- the other plots ------------------------------------------------------------------------
def test_utilization_over_time_png(tmp_path):
    r = vta_sim.simulate(long_pipeline(tiles=40, uops=30))
    ax = utilization_over_time(r, bins=50)
    assert ax.get_xlabel() == "cycle"
    assert [t.get_text() for t in ax.get_legend().texts] == [
        "fetch busy",
        "load busy",
        "compute busy",
        "store busy",
        "GEMM uops / cycle",
    ]
    ax.figure.savefig(tmp_path / "u.png")
    assert (tmp_path / "u.png").read_bytes().startswith(PNG_MAGIC)


def test_roofline_points_and_roofs(tmp_path):
    r = vta_sim.simulate(example("matmul16"))
    layers = [
        RooflineLayer.from_result("matmul16", r, compulsory_bytes=3 * 256),
        {"name": "synthetic", "macs": 10**6, "dram_bytes": 2 * 10**5, "cycles": 10**5},
    ]
    ax = roofline(CFG, layers)
    peak = 2 * CFG.batch * CFG.block_in * CFG.block_out
    roof = ax.get_lines()[0]
    assert roof.get_ydata().max() == peak
    x, y = roof.get_xdata(), roof.get_ydata()
    slope = y[x < peak / CFG.bus_bytes] / x[x < peak / CFG.bus_bytes]
    assert np.allclose(slope, CFG.bus_bytes)
    points = {
        (float(line.get_xdata()[0]), float(line.get_ydata()[0]))
        for line in ax.get_lines()
        if line.get_marker() == "o"
    }
    ops = 2 * r.macs
    moved = sum(r.dram_bytes.values())
    assert (ops / moved, ops / r.cycles) in points
    assert (ops / 768, ops / r.cycles) in points  # the compulsory-bytes point
    assert (2e6 / 2e5, 2e6 / 1e5) in points
    assert {t.get_text() for t in ax.texts} >= {"matmul16", "synthetic"}
    ax.figure.savefig(tmp_path / "roof.png")
    assert (tmp_path / "roof.png").read_bytes().startswith(PNG_MAGIC)
    with pytest.raises(ValueError, match="macs"):
        roofline(CFG, [{"name": "x", "dram_bytes": 1, "cycles": 1}])


def test_stall_bars_stack_to_one(tmp_path):
    runs = {name: vta_sim.simulate(example(name)) for name in ("matmul16", "alu_ops")}
    ax = stall_bars(runs)
    assert len(ax.patches) == 2 * 4 * 4  # runs x modules x categories
    tops = {}
    for p in ax.patches:
        x = round(p.get_x(), 6)
        tops[x] = max(tops.get(x, 0), p.get_y() + p.get_height())
    assert len(tops) == 8 and all(math.isclose(t, 1.0) for t in tops.values())
    assert [t.get_text() for t in ax.get_xticklabels(minor=True)] == [
        "fetch",
        "load",
        "compute",
        "store",
    ] * 2
    ax.figure.savefig(tmp_path / "s.png")
    assert (tmp_path / "s.png").read_bytes().startswith(PNG_MAGIC)


# ---- command line ---------------------------------------------------------------------------
def test_cli_sim_plot(tmp_path, capsys):
    prog = tmp_path / "p.npz"
    example("matmul16").save(prog)
    png = tmp_path / "gantt.png"
    assert vtac(["sim", str(prog), "--json", "--plot", str(png)]) == 0
    assert json.loads(capsys.readouterr().out)["cycles"] > 0  # stdout stays pure JSON
    assert png.read_bytes().startswith(PNG_MAGIC)


def test_demo_ends_with_a_gantt_chart(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert vtac(["demo"]) == 0
    assert "out/demo_gantt.png" in capsys.readouterr().out
    assert Path("out/demo_gantt.png").read_bytes().startswith(PNG_MAGIC)


# ---- Chrome / Perfetto trace event format -------------------------------------------------
METADATA = {"process_name": "name", "thread_name": "name", "thread_sort_index": "sort_index"}


def _no_constant(name: str):
    raise AssertionError(f"{name} is not JSON")


def assert_trace_event_format(text: str) -> dict:
    """The rules of the Trace Event Format (the JSON that chrome://tracing and Perfetto load)
    for the phases the simulator writes: complete events (X), metadata (M), counters (C)."""
    doc = json.loads(text, parse_constant=_no_constant)  # NaN or Infinity are not JSON
    assert isinstance(doc, dict) and isinstance(doc["traceEvents"], list)
    assert doc.get("displayTimeUnit", "ms") in ("ms", "ns")
    for e in doc["traceEvents"]:
        assert isinstance(e["name"], str) and e["name"]
        assert isinstance(e["pid"], int)
        assert isinstance(e.get("args", {}), dict)
        if e["ph"] == "X":
            assert isinstance(e["tid"], int)
            assert isinstance(e["ts"], int | float) and e["ts"] >= 0
            assert isinstance(e["dur"], int | float) and e["dur"] > 0
        elif e["ph"] == "C":
            assert isinstance(e["ts"], int | float) and e["ts"] >= 0
            assert e["args"] and all(isinstance(v, int | float) for v in e["args"].values())
        elif e["ph"] == "M":
            key = METADATA[e["name"]]
            assert set(e["args"]) == {key}
            assert isinstance(e["args"][key], str if key == "name" else int)
            if e["name"].startswith("thread"):
                assert isinstance(e["tid"], int)
        else:
            raise AssertionError(f"unexpected phase {e['ph']!r}")
    return doc


def test_chrome_trace_follows_the_trace_event_format(tmp_path):
    r = vta_sim.simulate(long_pipeline(tiles=30, uops=12))
    path = tmp_path / "trace.json"
    r.trace.save(path)
    doc = assert_trace_event_format(path.read_text())
    assert_slices_nest(doc)
    events = doc["traceEvents"]
    threads = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert sorted(threads.values()) == sorted([*vta_sim.engine.MODULES, "dram port"])
    # per module track: the wait slices add up to the run's statistics
    for tid, name in threads.items():
        if name in ("load", "compute", "store"):
            dur = {
                k: sum(
                    e["dur"]
                    for e in events
                    if e["ph"] == "X" and e["tid"] == tid and e["name"] == k
                )
                for k in ("wait token", "wait push", "wait port")
            }
            assert dur["wait token"] + dur["wait push"] == r.modules[name]["wait_token"]
            assert dur["wait port"] == r.modules[name]["wait_memory"]
    # one counter per dependency queue, replaying the token counts, starting at 0
    counters: dict[str, list[tuple[int, int]]] = {}
    for e in events:
        if e["ph"] == "C":
            counters.setdefault(e["name"], []).append((e["ts"], e["args"]["tokens"]))
    assert set(counters) == set(isa.DEP_QUEUES)
    for series in counters.values():
        assert series[0] == (0, 0)
        assert [t for t, _ in series] == sorted(t for t, _ in series)
        assert all(0 <= c <= CFG.dep_queue_depth for _, c in series)
    assert sum(len(s) - 1 for s in counters.values()) == len(r.trace.token_events())


def assert_slices_nest(doc: dict) -> None:
    """Slices on one track nest or are disjoint, as the JSON importers require."""
    tracks: dict[int, list[tuple[int, int]]] = {}
    for e in doc["traceEvents"]:
        if e["ph"] == "X":
            tracks.setdefault(e["tid"], []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in tracks.values():
        open_ends: list[int] = []
        for start, end in sorted(spans, key=lambda s: (s[0], -s[1])):
            while open_ends and open_ends[-1] <= start:
                open_ends.pop()
            assert not open_ends or end <= open_ends[-1], (start, end, open_ends)
            open_ends.append(end)


@pytest.mark.parametrize("name", list(ODD_ENDINGS))
def test_chrome_trace_of_odd_endings_is_well_formed(name):
    r = vta_sim.simulate(Program.build(CFG, ODD_ENDINGS[name], dram_bytes=1 << 14))
    assert_slices_nest(assert_trace_event_format(json.dumps(r.trace.to_chrome())))
