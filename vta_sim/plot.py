"""Pictures of a run: pipeline Gantt chart, utilization over time, roofline, stall bars.

Every function draws into a given ``ax`` or into a new :class:`matplotlib.figure.Figure` made
without pyplot (no global figure registry, works with any backend, including Agg on a machine
without a display), returns the Axes and never calls ``plt.show()``. Times are in cycles.

The Gantt chart and the utilization curves are computed from the trace's arrays
(:data:`vta_sim.engine.TRACE_COLUMNS`, ``PORT_COLUMNS``) with numpy, never per instruction in
Python, so a trace of 10⁵ instructions over 10⁷ cycles draws in about a second: past
``max_bars`` intervals, time is cut into ``max_bars`` bins and each lane shows, per bin, the share
of cycles spent in each kind of instruction or wait (stacked), one artist per lane and style.

Example:
    >>> import isa, vta_sim
    >>> from vta_sim.plot import gantt
    >>> r = vta_sim.simulate(isa.Program.build(isa.load_config("default"), [isa.Finish()]))
    >>> ax = gantt(r)
    >>> [t.get_text() for t in ax.get_yticklabels()]
    ['fetch', 'load', 'compute', 'store', 'DRAM port']
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch, PathPatch
from matplotlib.path import Path as MplPath
from matplotlib.ticker import EngFormatter, FuncFormatter

import isa.timing
from isa import HwConfig

from . import engine as E
from .result import MODULE_CATEGORIES, SimResult
from .trace import Trace

#: Lanes of the Gantt chart, top to bottom: the four modules, then the DRAM port.
LANES = ("fetch", "load", "compute", "store", "DRAM port")
PORT_LANE = len(LANES) - 1


@dataclasses.dataclass(frozen=True)
class Style:
    """How one kind of interval is drawn, and the statistics category its cycles count in."""

    name: str
    color: str
    hatch: str | None = None
    category: str = "busy"  # docs/timing.md §6; fetch's queue wait is its wait_queue


#: Every interval style, in legend and stacking order: instruction kinds, fetch, then waits.
STYLES: tuple[Style, ...] = (
    Style("LOAD INP", "#1f77b4"),
    Style("LOAD WGT", "#17becf"),
    Style("LOAD UOP", "#9467bd"),
    Style("LOAD ACC", "#8c564b"),
    Style("GEMM", "#2ca02c"),
    Style("ALU", "#bcbd22"),
    Style("STORE", "#ff7f0e"),
    Style("NOP", "#b0b0b0"),
    Style("FINISH", "#000000"),
    Style("fetch burst", "#e377c2"),
    Style("dispatch", "#f7b6d2"),
    Style("token wait", "#e8e8e8", "////", "wait_token"),
    Style("push wait", "#e8e8e8", "\\\\\\\\", "wait_token"),
    Style("port wait", "#fdd0a2", "xxxx", "wait_memory"),
    Style("queue wait", "#e8e8e8", "....", "wait_token"),
)
_S = {s.name: k for k, s in enumerate(STYLES)}
_HATCH_COLOR = {"wait_token": "#707070", "wait_memory": "#d94801"}
#: Each instruction kind's owner is fixed by routing, so the port lane's colours name the owner.
_OWNER = {
    "LOAD INP": "load",
    "LOAD WGT": "load",
    "LOAD UOP": "compute",
    "LOAD ACC": "compute",
    "STORE": "store",
    "fetch burst": "fetch",
}


@dataclasses.dataclass(frozen=True)
class Intervals:
    """Half-open cycle intervals ``[start, end)`` of a trace, each on one lane in one style.

    ``lane`` indexes :data:`LANES`, ``style`` indexes :data:`STYLES`. On a module's lane the
    intervals never overlap and their lengths per statistics category add up to the run's
    statistics (``SimResult.modules``); the DRAM port lane holds the transfers.
    """

    lane: np.ndarray
    style: np.ndarray
    start: np.ndarray
    end: np.ndarray
    cycles: int

    def __len__(self) -> int:
        return int(self.start.size)

    def cycles_in(self, lane: str, category: str) -> int:
        """Cycles of ``lane`` in statistics ``category`` ('busy', 'wait_token', ...).

        >>> import isa, vta_sim
        >>> r = vta_sim.simulate(isa.Program.build(isa.load_config("default"), [isa.Finish()]))
        >>> trace_intervals(r).cycles_in("fetch", "busy") == r.modules["fetch"]["busy"]
        True
        """
        cats = np.array([s.category == category for s in STYLES])
        sel = (self.lane == LANES.index(lane)) & cats[self.style]
        return int((self.end[sel] - self.start[sel]).sum())


@dataclasses.dataclass(frozen=True)
class RooflineLayer:
    """One point of a roofline: a layer's MACs, DRAM bytes moved and cycles.

    ``compulsory_bytes`` (optional) is what the layer must move at least: its inputs, weights
    and outputs once each.
    """

    name: str
    macs: int
    dram_bytes: int
    cycles: int
    compulsory_bytes: int | None = None

    @classmethod
    def from_result(
        cls, name: str, result: SimResult, compulsory_bytes: int | None = None
    ) -> RooflineLayer:
        """The point of a simulated run (all DRAM bytes it moved, instructions included).

        >>> import isa, vta_sim
        >>> r = vta_sim.simulate(isa.Program.build(isa.load_config("default"), [isa.Finish()]))
        >>> RooflineLayer.from_result("nop", r).dram_bytes
        16
        """
        return cls(
            name, result.macs, sum(result.dram_bytes.values()), result.cycles, compulsory_bytes
        )


# ---- from the trace's arrays to intervals -------------------------------------------------
def _as_trace(result_or_trace: SimResult | Trace) -> Trace:
    trace = result_or_trace.trace if isinstance(result_or_trace, SimResult) else result_or_trace
    if not isinstance(trace, Trace):
        raise ValueError("the result has no trace: run vta_sim.simulate(..., trace=True)")
    return trace


def _kind_styles(table: np.ndarray) -> np.ndarray:
    """The style index of each instruction's kind, from the opcode and memory-type columns."""
    op = table[:, E.C_OPCODE]
    mt = table[:, E.C_MEMTYPE]
    nop = ((op == E.OP_LOAD) | (op == E.OP_STORE)) & (table[:, E.C_X] == 0)
    load_styles = np.full(E.MT_ACC8 + 1, _S["LOAD ACC"])
    load_styles[[E.MT_INP, E.MT_WGT, E.MT_UOP]] = [_S["LOAD INP"], _S["LOAD WGT"], _S["LOAD UOP"]]
    return np.select(
        [nop, op == E.OP_LOAD, op == E.OP_STORE, op == E.OP_GEMM, op == E.OP_ALU],
        [_S["NOP"], load_styles[np.clip(mt, 0, E.MT_ACC8)], _S["STORE"], _S["GEMM"], _S["ALU"]],
        _S["FINISH"],
    )


def _uses_port(table: np.ndarray) -> np.ndarray:
    op, x, y = table[:, E.C_OPCODE], table[:, E.C_X], table[:, E.C_Y]
    return (((op == E.OP_LOAD) & (y > 0)) | (op == E.OP_STORE)) & (x > 0)


def _padding(table: np.ndarray) -> np.ndarray:
    t = table
    rows = t[:, E.C_YP0] + t[:, E.C_Y] + t[:, E.C_YP1]
    width = t[:, E.C_XP0] + t[:, E.C_X] + t[:, E.C_XP1]
    return np.where(t[:, E.C_OPCODE] == E.OP_LOAD, rows * width - t[:, E.C_Y] * t[:, E.C_X], 0)


class _Collector:
    def __init__(self, cycles: int) -> None:
        self.cycles = cycles
        self.parts: list[tuple[np.ndarray, ...]] = []

    def add(
        self, lane: np.ndarray | int, style: np.ndarray | int, start: np.ndarray, end: np.ndarray
    ) -> None:
        start = np.minimum(np.asarray(start, np.int64), self.cycles)
        end = np.minimum(np.asarray(end, np.int64), self.cycles)
        keep = end > start
        n = int(keep.sum())
        self.parts.append(
            (
                np.broadcast_to(lane, start.shape)[keep].astype(np.int64),
                np.broadcast_to(style, start.shape)[keep].astype(np.int64),
                start[keep],
                end[keep],
            )
            if n
            else ()
        )

    def result(self) -> Intervals:
        parts = [p for p in self.parts if p]
        cols = [
            np.concatenate([p[k] for p in parts]) if parts else np.zeros(0, np.int64)
            for k in range(4)
        ]
        lane, style, start, end = cols
        return Intervals(lane, style, start, end, self.cycles)


def trace_intervals(result_or_trace: SimResult | Trace) -> Intervals:
    """Every lane's intervals: instructions by kind, token/push/port waits, fetch, the port.

    An instruction still running when FINISH ends the run is drawn to the end of the run
    (busy, or waiting for the port while it has not been granted it).

    >>> import isa, vta_sim
    >>> r = vta_sim.simulate(isa.Program.build(isa.load_config("default"), [isa.Finish()]))
    >>> iv = trace_intervals(r)
    >>> [(LANES[l], STYLES[s].name, a, b) for l, s, a, b in
    ...  zip(iv.lane.tolist(), iv.style.tolist(), iv.start.tolist(), iv.end.tolist())]
    ... # doctest: +NORMALIZE_WHITESPACE
    [('compute', 'FINISH', 35, 36), ('DRAM port', 'fetch burst', 0, 34),
     ('fetch', 'fetch burst', 0, 34), ('fetch', 'dispatch', 34, 35)]
    """
    trace = _as_trace(result_or_trace)
    # the decoded instruction table is the trace's own (package-private) copy
    table = trace._table
    ti = trace.insns
    cycles = int(trace.cycles)
    n = ti.shape[0]
    out = _Collector(cycles)
    kind = _kind_styles(table)
    route = table[:, E.C_ROUTE]
    issue, last, grant = ti[:, E.T_ISSUE], ti[:, E.T_LAST], ti[:, E.T_GRANT]
    dispatch = ti[:, E.T_DISPATCH]
    token_wait, mem_wait = ti[:, E.T_TOKEN_WAIT], ti[:, E.T_MEM_WAIT]
    push_wait = np.maximum(ti[:, E.T_PUSH_WAIT], 0)

    # load, compute, store: token wait | busy | port wait | busy | push wait (docs/timing.md §2)
    ok = issue >= 0
    lane = route[ok]
    i_s, i_k = issue[ok], kind[ok]
    end = np.where(last[ok] >= 0, last[ok] + 1, cycles)
    out.add(lane, _S["token wait"], i_s - token_wait[ok], i_s)
    granted = grant[ok] >= 0
    # a DMA issued but not granted before the end has waited for the port since padding ended
    pending = ~granted & (last[ok] < 0) & _uses_port(table)[ok]
    ask = np.where(
        granted, grant[ok] - mem_wait[ok], np.where(pending, i_s + 1 + _padding(table)[ok], end)
    )
    resume = np.where(granted, grant[ok], end)
    busy_end = end - push_wait[ok]
    out.add(lane, i_k, i_s, np.where(granted | pending, ask, busy_end))
    out.add(lane, _S["port wait"], ask, np.where(pending, end, resume))
    out.add(lane, i_k, resume, np.where(granted, busy_end, resume))
    out.add(lane, _S["push wait"], busy_end, end)
    # an instruction at the head of its queue when the run ended waits for tokens since it
    # became visible and its module free
    for m in (E.LOAD, E.COMPUTE, E.STORE):
        waiting = np.flatnonzero((route == m) & (issue < 0) & (dispatch >= 0))
        if waiting.size:
            i = waiting[0]
            done = np.flatnonzero((route[:i] == m) & (issue[:i] >= 0))
            free = (last[done[-1]] + 1 if last[done[-1]] >= 0 else cycles) if done.size else 0
            start = max(int(dispatch[i]) + 1, int(free))
            out.add(m, _S["token wait"], np.array([start]), np.array([cycles]))

    # the DRAM port: each transfer in its instruction's colour, fetch bursts in fetch's
    port = trace.port
    owner, p_start, p_last, p_insn = (port[:, k] for k in range(4))
    p_style = np.where(owner == E.FETCH, _S["fetch burst"], kind[np.clip(p_insn, 0, n - 1)])
    out.add(PORT_LANE, p_style, p_start, p_last + 1)

    # fetch: port wait | burst | dispatches with queue waits between them (docs/timing.md §5)
    bursts = np.flatnonzero(owner == E.FETCH)
    if bursts.size:
        b_start, b_last, lo = p_start[bursts], p_last[bursts], p_insn[bursts]
        hi = np.append(lo[1:], min(int(lo[-1]) + isa.timing.FETCH_BURST, n))
        out.add(E.FETCH, _S["fetch burst"], b_start, b_last + 1)
        idx = np.arange(int(hi[-1]))
        b_of = np.searchsorted(lo, idx, side="right") - 1
        first = idx == lo[b_of]
        prev_d = np.where(first, -1, dispatch[np.maximum(idx - 1, 0)])
        ready = np.where(first, b_last[b_of] + 1, prev_d + 1)
        # an instruction becomes ready only once its predecessor has been dispatched
        can = first | (prev_d >= 0)
        d = dispatch[idx]
        out.add(E.FETCH, _S["queue wait"], ready[can], np.where(d >= 0, d, cycles)[can])
        dispatched = d >= 0
        out.add(E.FETCH, _S["dispatch"], *_coalesce(d[dispatched], d[dispatched] + 1))
        # fetch asks for a burst at 0, then in the cycle after the last dispatch of the previous
        last_d = dispatch[hi - 1]
        asks = np.concatenate([[0], last_d[:-1] + 1])
        out.add(E.FETCH, _S["port wait"], asks, b_start)
        if hi[-1] < n and last_d[-1] >= 0:  # asking for a burst that the run ended before
            out.add(E.FETCH, _S["port wait"], np.array([last_d[-1] + 1]), np.array([cycles]))
    elif n:
        out.add(E.FETCH, _S["port wait"], np.array([0]), np.array([cycles]))
    return out.result()


def _coalesce(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge sorted, disjoint intervals that touch (one cycle's dispatch after another's)."""
    if start.size == 0:
        return start, end
    brk = np.flatnonzero(start[1:] != end[:-1]) + 1
    heads = np.concatenate([[0], brk])
    tails = np.concatenate([brk - 1, [start.size - 1]])
    return start[heads], end[tails]


# ---- binning ----------------------------------------------------------------------------
def _bin_edges(t0: int, t1: int, bins: int) -> tuple[int, np.ndarray]:
    width = max(1, -(-(t1 - t0) // max(bins, 1)))
    n_bins = max(1, -(-(t1 - t0) // width))
    edges = np.minimum(t0 + width * np.arange(n_bins + 1, dtype=np.int64), t1)
    return width, edges


def _bin_cycles(
    group: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    n_groups: int,
    t0: int,
    width: int,
    n_bins: int,
    weight: np.ndarray | None = None,
) -> np.ndarray:
    """Cycles (times ``weight``) each group's intervals cover in each bin: (n_groups, n_bins).

    Exact for any interval lengths: the first and last bin of an interval get their partial
    share, the bins in between a whole bin each (through a difference array).
    """
    t1 = t0 + width * n_bins
    s = np.clip(start, t0, t1) - t0
    e = np.clip(end, t0, t1) - t0
    keep = e > s
    g, s, e = group[keep], s[keep], e[keep]
    w = np.ones(s.size) if weight is None else np.asarray(weight, float)[keep]
    bs, be = s // width, (e - 1) // width
    cols = n_bins + 1
    same = bs == be
    first_share = np.where(same, e - s, (bs + 1) * width - s)
    flat = np.bincount(g * cols + bs, w * first_share, n_groups * cols)
    tail = ~same
    flat += np.bincount(
        g[tail] * cols + be[tail], w[tail] * (e[tail] - be[tail] * width), n_groups * cols
    )
    diff = np.bincount(g[tail] * cols + bs[tail] + 1, w[tail] * width, n_groups * cols)
    diff -= np.bincount(g[tail] * cols + be[tail], w[tail] * width, n_groups * cols)
    cov = flat.reshape(n_groups, cols) + np.cumsum(diff.reshape(n_groups, cols), axis=1)
    return cov[:, :n_bins]


# ---- Gantt chart --------------------------------------------------------------------------
def _new_axes(ax: Axes | None, size: tuple[float, float]) -> Axes:
    if ax is not None:
        return ax
    return Figure(figsize=size, layout="constrained").add_subplot()


def _patch(verts: np.ndarray, style: Style, edges: bool) -> PathPatch:
    """All rectangles of one lane and style as one compound path: one artist, and Agg fills a
    hatch once per path, so thousands of hatched rectangles cost no more than one."""
    kw: dict[str, Any] = {"facecolor": style.color, "linewidth": 0.0, "edgecolor": "none"}
    if style.hatch:
        # matplotlib draws hatches in the edge colour; zero line width keeps the outline off
        kw.update(hatch=style.hatch, edgecolor=_HATCH_COLOR[style.category])
    elif edges:
        kw.update(edgecolor="white", linewidth=0.6)
    return PathPatch(MplPath.make_compound_path_from_polys(verts), **kw)


def _rects(x0: np.ndarray, x1: np.ndarray, y0: np.ndarray, y1: np.ndarray) -> np.ndarray:
    return np.stack(
        [
            np.stack([x0, y0], 1),
            np.stack([x0, y1], 1),
            np.stack([x1, y1], 1),
            np.stack([x1, y0], 1),
        ],
        1,
    ).astype(float)


def gantt(
    result_or_trace: SimResult | Trace,
    *,
    ax: Axes | None = None,
    title: str | None = None,
    max_bars: int = 1000,
    window: tuple[int, int] | None = None,
) -> Axes:
    """Pipeline Gantt chart: lanes fetch, load, compute, store and the DRAM port over cycles.

    Instructions are coloured by kind; the cycles an instruction waits for a token before it
    issues (and for room to push at its end) are hatched grey, the cycles it waits for the DRAM
    port are hatched orange, fetch's dispatches blocked by a full command queue are dotted. The
    port lane shows each transfer in the colour of its instruction, whose kind names the owner
    (the legend says which module). ``window=(first, end)`` zooms on a range of cycles.

    With at most ``max_bars`` intervals in view every interval is drawn as it is; beyond that,
    time is cut into ``max_bars`` bins and each lane shows per bin the share of its cycles in
    each style, stacked from the lane's bottom (the title says so). Either way there is one
    artist per lane and style.

    >>> import isa, vta_sim
    >>> r = vta_sim.simulate(isa.Program.build(isa.load_config("default"), [isa.Finish()]))
    >>> gantt(r, title="FINISH alone").get_title()
    'FINISH alone'
    """
    trace = _as_trace(result_or_trace)
    iv = trace_intervals(trace)
    t0, t1 = (0, max(iv.cycles, 1)) if window is None else (int(window[0]), int(window[1]))
    if t1 <= t0:
        raise ValueError(f"window {window} is empty")
    inside = (iv.end > t0) & (iv.start < t1)
    lane, style = iv.lane[inside], iv.style[inside]
    start, end = np.maximum(iv.start[inside], t0), np.minimum(iv.end[inside], t1)
    ax = _new_axes(ax, (12, 4.2))
    n_lanes, height = len(LANES), 0.8
    base = (n_lanes - 1 - np.arange(n_lanes)) - height / 2  # fetch on top
    binned = start.size > max_bars
    present: set[int] = set()
    if not binned:
        edges = start.size <= 300  # white separators only while instructions are wide enough
        for key in np.unique(lane * len(STYLES) + style):
            sel = lane * len(STYLES) + style == key
            ln, st = divmod(int(key), len(STYLES))
            y0 = np.full(int(sel.sum()), base[ln])
            verts = _rects(start[sel], end[sel], y0, y0 + height)
            # add_artist, not add_patch: the limits are set below, and add_patch would walk
            # every segment of the compound path in Python to update them
            ax.add_artist(_patch(verts, STYLES[st], edges))
            present.add(st)
        width = 1
    else:
        width, bin_edges = _bin_edges(t0, t1, max_bars)
        n_bins = bin_edges.size - 1
        cov = _bin_cycles(
            lane * len(STYLES) + style, start, end, n_lanes * len(STYLES), t0, width, n_bins
        )
        frac = cov.reshape(n_lanes, len(STYLES), n_bins) / np.diff(bin_edges)
        # quantised so that runs of equal bins merge into one rectangle; far below a pixel
        frac = np.round(np.minimum(frac, 1.0) * 256) / 256
        bottom = np.cumsum(frac, axis=1) - frac
        for ln in range(n_lanes):
            for st in range(len(STYLES)):
                f = frac[ln, st]
                b = np.flatnonzero(f > 0)
                if b.size == 0:
                    continue
                key_h, key_y = f[b], bottom[ln, st, b]
                brk = (np.diff(b) != 1) | (np.diff(key_h) != 0) | (np.diff(key_y) != 0)
                heads = np.concatenate([[0], np.flatnonzero(brk) + 1])
                tails = np.concatenate([heads[1:] - 1, [b.size - 1]])
                y0 = base[ln] + height * key_y[heads]
                verts = _rects(
                    bin_edges[b[heads]], bin_edges[b[tails] + 1], y0, y0 + height * key_h[heads]
                )
                ax.add_artist(_patch(verts, STYLES[st], False))
                present.add(st)
    ax.set_xlim(t0, t1)
    ax.set_ylim(-0.6, n_lanes - 0.4)
    ax.set_yticks(np.arange(n_lanes)[::-1], list(LANES))
    ax.xaxis.set_major_formatter(EngFormatter(sep=""))
    ax.set_xlabel("cycle")
    ax.grid(axis="x", color="#dddddd", linewidth=0.5)
    ax.set_axisbelow(True)
    for y in np.arange(n_lanes - 1) + 0.5:
        ax.axhline(y, color="#cccccc", linewidth=0.5)
    handles = [
        Patch(
            facecolor=s.color,
            hatch=s.hatch,
            edgecolor=_HATCH_COLOR.get(s.category, "none") if s.hatch else "none",
            linewidth=0,
            label=f"{s.name} ({_OWNER[s.name]})" if s.name in _OWNER else s.name,
        )
        for k, s in enumerate(STYLES)
        if k in present
    ]
    ax.legend(
        handles=handles,
        loc="upper left",
        bbox_to_anchor=(1.005, 1.0),
        fontsize="small",
        frameon=False,
        title="kind (port owner)",
        title_fontsize="small",
    )
    if title is None:
        n = trace.insns.shape[0]
        title = f"pipeline: {n:,} instructions, {trace.cycles:,} cycles"
        if window is not None:
            title += f"; cycles {t0:,} to {t1:,}"
        if binned:
            title += f" (binned: {width:,} cycles per bar, stacked share of each bin)"
    ax.set_title(title, fontsize="medium")
    return ax


def save_gantt(
    result_or_trace: SimResult | Trace, path: str | os.PathLike[str], **kwargs: Any
) -> Path:
    """Draw :func:`gantt` (``kwargs`` go to it) and write it to ``path`` (PNG, SVG, PDF...).

    >>> import isa, vta_sim, tempfile, os
    >>> r = vta_sim.simulate(isa.Program.build(isa.load_config("default"), [isa.Finish()]))
    >>> with tempfile.TemporaryDirectory() as d:
    ...     os.path.getsize(save_gantt(r, os.path.join(d, "g.png"))) > 0
    True
    """
    path = Path(path)
    ax = gantt(result_or_trace, **kwargs)
    # an ``ax`` passed in kwargs may sit in a subfigure: the file holds the whole figure
    fig = ax.figure if isinstance(ax.figure, Figure) else ax.figure.figure
    fig.savefig(path, dpi=150)
    return path


# ---- utilization over time ------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class UtilizationBins:
    """Per-bin busy fraction of each module and GEMM micro-ops per cycle.

    ``edges`` are the bins' cycle boundaries (``len(edges) = bins + 1``, the last bin may be
    shorter); ``busy[module]`` the fraction of each bin's cycles the module was busy;
    ``gemm_uops_per_cycle`` the non-reset GEMM micro-ops issued per cycle (1.0: the GEMM core
    took a micro-op every cycle), each GEMM's micro-ops spread evenly over its issue cycles.
    """

    edges: np.ndarray
    busy: dict[str, np.ndarray]
    gemm_uops_per_cycle: np.ndarray


def utilization_bins(result: SimResult, bins: int = 200) -> UtilizationBins:
    """The numbers behind :func:`utilization_over_time`.

    >>> import isa, vta_sim
    >>> r = vta_sim.simulate(isa.Program.build(isa.load_config("default"), [isa.Finish()]))
    >>> u = utilization_bins(r, bins=4)
    >>> u.edges.tolist(), u.busy["compute"].tolist()
    ([0, 9, 18, 27, 36], [0.0, 0.0, 0.0, 0.1111111111111111])
    """
    trace = _as_trace(result)
    iv = trace_intervals(trace)
    width, edges = _bin_edges(0, max(iv.cycles, 1), bins)
    n_bins = edges.size - 1
    busy_style = np.array([s.category == "busy" for s in STYLES])
    sel = busy_style[iv.style] & (iv.lane != PORT_LANE)
    cov = _bin_cycles(iv.lane[sel], iv.start[sel], iv.end[sel], len(E.MODULES), 0, width, n_bins)
    span = np.diff(edges).astype(float)
    busy = {m: cov[k] / span for k, m in enumerate(E.MODULES)}
    # a GEMM takes its micro-ops in cycles issue+1 ... issue+n·ii (docs/timing.md §3)
    table = trace._table
    ti = trace.insns
    uops = (
        table[:, E.C_ITER_OUT]
        * table[:, E.C_ITER_IN]
        * np.maximum(table[:, E.C_UOP_END] - table[:, E.C_UOP_BEGIN], 0)
    )
    gemm = (
        (table[:, E.C_OPCODE] == E.OP_GEMM)
        & (table[:, E.C_RESET] == 0)
        & (uops > 0)
        & (ti[:, E.T_ISSUE] >= 0)
    )
    s = ti[gemm, E.T_ISSUE] + 1
    e = s + uops[gemm] * result.config.gemm_ii
    rate = uops[gemm] / (e - s)
    g = _bin_cycles(np.zeros(s.size, np.int64), s, e, 1, 0, width, n_bins, weight=rate)[0]
    return UtilizationBins(edges, busy, g / span)


_MODULE_COLORS = {"fetch": "#e377c2", "load": "#1f77b4", "compute": "#2ca02c", "store": "#ff7f0e"}


def utilization_over_time(result: SimResult, *, ax: Axes | None = None, bins: int = 200) -> Axes:
    """Each module's busy fraction per bin of cycles, and GEMM micro-ops per cycle.

    >>> import isa, vta_sim
    >>> r = vta_sim.simulate(isa.Program.build(isa.load_config("default"), [isa.Finish()]))
    >>> [t.get_text() for t in utilization_over_time(r, bins=10).get_legend().texts]
    ['fetch busy', 'load busy', 'compute busy', 'store busy', 'GEMM uops / cycle']
    """
    u = utilization_bins(result, bins)
    ax = _new_axes(ax, (12, 3.5))
    for m, frac in u.busy.items():
        ax.stairs(frac, u.edges, label=f"{m} busy", color=_MODULE_COLORS[m], linewidth=1.2)
    ax.stairs(
        u.gemm_uops_per_cycle,
        u.edges,
        label="GEMM uops / cycle",
        color="black",
        linewidth=1.6,
        linestyle="--",
    )
    ax.set_xlim(u.edges[0], u.edges[-1])
    ax.set_ylim(0, 1.05)
    ax.xaxis.set_major_formatter(EngFormatter(sep=""))
    ax.set_xlabel("cycle")
    ax.set_ylabel("fraction of cycles")
    width = int(u.edges[1] - u.edges[0])
    ax.set_title(
        f"utilization over time ({width:,} cycles per bin; overall GEMM "
        f"utilization {result.utilization:.3f})",
        fontsize="medium",
    )
    ax.grid(color="#dddddd", linewidth=0.5)
    ax.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize="small", frameon=False)
    return ax


# ---- roofline -----------------------------------------------------------------------------
def _field(layer: Any, name: str, default: Any = dataclasses.MISSING) -> Any:
    if isinstance(layer, Mapping):
        value = layer.get(name, default)
    else:
        value = getattr(layer, name, default)
    if value is dataclasses.MISSING:
        raise ValueError(f"roofline layer {layer!r} has no {name!r}")
    return value


def roofline(
    config: HwConfig,
    layers: Iterable[Mapping[str, Any] | RooflineLayer | Any],
    *,
    ax: Axes | None = None,
) -> Axes:
    """Roofline of ``layers`` on ``config``: achieved ops/cycle against ops per DRAM byte.

    The compute roof is ``2·batch·block_in·block_out / gemm_ii`` ops per cycle (a MAC is two
    operations), the memory roof ``bus_bytes`` bytes per cycle. Each layer (a dict or object with
    ``name``, ``macs``, ``dram_bytes``, ``cycles`` and optionally ``compulsory_bytes``) is a
    filled point at its moved-bytes intensity and, given compulsory bytes, a hollow point at
    the intensity it would have moving each tensor once.

    >>> import isa
    >>> cfg = isa.load_config("default")
    >>> ax = roofline(cfg, [dict(name="conv", macs=10**6, dram_bytes=10**5, cycles=10**5)])
    >>> ax.get_xscale(), ax.get_yscale()
    ('log', 'log')
    """
    ax = _new_axes(ax, (7, 5))
    peak = 2 * config.macs_per_cycle / config.gemm_ii
    bus = config.bus_bytes
    rows = []
    for layer in layers:
        macs, moved = int(_field(layer, "macs")), int(_field(layer, "dram_bytes"))
        cycles = int(_field(layer, "cycles"))
        if moved <= 0 or cycles <= 0:
            raise ValueError(
                f"roofline layer {_field(layer, 'name')!r} needs dram_bytes > 0 and "
                f"cycles > 0 (got {moved}, {cycles})"
            )
        comp = _field(layer, "compulsory_bytes", None)
        ops = 2 * macs
        rows.append(
            (str(_field(layer, "name")), ops / moved, ops / cycles, ops / comp if comp else None)
        )
    xs = [r[1] for r in rows] + [r[3] for r in rows if r[3]] + [peak / bus]
    lo, hi = min(xs) / 4, max(xs) * 4
    grid = np.geomspace(lo, hi, 256)
    ax.plot(grid, np.minimum(peak, bus * grid), color="black", linewidth=1.5, label="roof")
    ax.axvline(peak / bus, color="#aaaaaa", linewidth=0.8, linestyle=":")  # the ridge point
    ridge = peak / bus
    ax.text(
        ridge * 1.1,
        peak * 1.05,
        f"compute roof {peak:g} ops/cycle",
        ha="left",
        va="bottom",
        fontsize="small",
    )
    # just below the sloped roof, reading rightwards away from it
    ax.annotate(
        f"memory roof {bus:g} B/cycle",
        (lo * 1.5, bus * lo * 1.5),
        textcoords="offset points",
        xytext=(6, -4),
        ha="left",
        va="top",
        fontsize="small",
    )
    labelled_moved = labelled_comp = False
    for name, x, y, xc in rows:
        if xc:
            ax.plot([x, xc], [y, y], color="#1f77b4", linewidth=0.6, linestyle=":")
            ax.plot(
                [xc],
                [y],
                marker="o",
                markerfacecolor="white",
                color="#1f77b4",
                linestyle="none",
                label=None if labelled_comp else "intensity of compulsory bytes",
            )
            labelled_comp = True
        ax.plot(
            [x],
            [y],
            marker="o",
            color="#1f77b4",
            linestyle="none",
            label=None if labelled_moved else "intensity of bytes moved",
        )
        labelled_moved = True
        ax.annotate(name, (x, y), textcoords="offset points", xytext=(4, 4), fontsize="small")
    ax.set_xscale("log")
    ax.set_yscale("log")
    for axis in (ax.xaxis, ax.yaxis):
        # plain numbers; on the minor ticks only 2 and 5 times a power of ten
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        axis.set_minor_formatter(FuncFormatter(_two_five))
    ys = [r[2] for r in rows] or [peak]
    ax.set_ylim(min(min(ys), bus * lo) / 2, peak * 2)
    ax.set_xlim(lo, hi)
    ax.set_xlabel("arithmetic intensity (ops per DRAM byte)")
    ax.set_ylabel("ops per cycle")
    ax.set_title(
        f"roofline: {config.name} ({config.batch}x{config.block_in}x{config.block_out} "
        f"GEMM core, {bus} B/cycle)",
        fontsize="medium",
    )
    ax.grid(which="both", color="#eeeeee", linewidth=0.5)
    ax.legend(loc="lower right", fontsize="small")
    return ax


def _two_five(value: float, _pos: Any = None) -> str:
    lead = value / 10 ** math.floor(math.log10(value)) if value > 0 else 0
    return f"{value:g}" if round(lead, 6) in (2, 5) else ""


# ---- stall bars -----------------------------------------------------------------------------
_CATEGORY_STYLE = {
    "busy": ("busy", "#2ca02c", None),
    "wait_token": ("wait token (fetch: queue full)", "#e8e8e8", "////"),
    "wait_memory": ("wait memory (DRAM port)", "#fdd0a2", "xxxx"),
    "idle": ("idle", "#ffffff", None),
}


def stall_bars(
    results: Mapping[str, SimResult], ax: Axes | None = None, *, modules: Sequence[str] = E.MODULES
) -> Axes:
    """Per run and module, the share of cycles busy / waiting on a token / on memory / idle.

    One group of stacked bars per run (labelled with its cycles), one bar per module: for a
    per-layer comparison of where the cycles went.

    >>> import isa, vta_sim
    >>> r = vta_sim.simulate(isa.Program.build(isa.load_config("default"), [isa.Finish()]))
    >>> ax = stall_bars({"a": r, "b": r})
    >>> len(ax.patches)
    32
    """
    names = list(results)
    if not names:
        raise ValueError("stall_bars needs at least one result")
    for m in modules:
        if m not in MODULE_CATEGORIES:
            raise ValueError(f"unknown module {m!r}; modules are {list(MODULE_CATEGORIES)}")
    ax = _new_axes(ax, (max(5.0, 1.0 + 0.45 * len(names) * (len(modules) + 1)), 4))
    n_mod = len(modules)
    x = np.array([g * (n_mod + 1) + j for g in range(len(names)) for j in range(n_mod)], float)
    bottom = np.zeros(x.size)
    for k, (cat, (label, color, hatch)) in enumerate(_CATEGORY_STYLE.items()):
        h = np.array(
            [
                results[r].modules[m][MODULE_CATEGORIES[m][k]] / max(results[r].cycles, 1)
                for r in names
                for m in modules
            ]
        )
        ax.bar(
            x,
            h,
            bottom=bottom,
            width=0.85,
            color=color,
            hatch=hatch,
            label=label,
            edgecolor=_HATCH_COLOR.get(cat, "#888888"),
            linewidth=0.4,
        )
        bottom += h
    ax.set_xticks(x, [m for _ in names for m in modules], minor=True)
    # tick_params, not set_xticks' text keywords: those reach only the ticks that exist now
    ax.tick_params(axis="x", which="minor", labelsize="x-small", labelrotation=90)
    centers = np.arange(len(names)) * (n_mod + 1) + (n_mod - 1) / 2
    ax.set_xticks(centers, [f"{r}\n{results[r].cycles:,} cycles" for r in names])
    ax.tick_params(axis="x", which="major", length=0, pad=40)
    # a run's label sits at its middle module's position: keep both ticks, not just one
    ax.xaxis.remove_overlapping_locs = False
    ax.set_ylim(0, 1)
    ax.set_ylabel("fraction of cycles")
    ax.set_title("where the cycles went", fontsize="medium")
    ax.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize="small", frameon=False)
    return ax


# ---- a whole network --------------------------------------------------------------------------
def network_stalls(
    layers: Sequence[Any], ax: Axes | None = None, *, module: str = "compute"
) -> Axes:
    """One horizontal bar per layer (top to bottom, in run order): the share of its cycles
    ``module`` spent busy, waiting on a token, on memory, or idle, with the layer's cycles in
    its label. ``layers`` are records with ``name``, ``cycles`` and ``modules`` (the per-module
    category counts of :class:`~vta_sim.result.SimResult`), such as the rows of a network run.

    >>> import isa, vta_sim
    >>> r = vta_sim.simulate(isa.Program.build(isa.load_config("default"), [isa.Finish()]))
    >>> layer = dataclasses.make_dataclass("L", ["name", "cycles", "modules"])
    >>> ax = network_stalls([layer("a", r.cycles, r.modules), layer("b", r.cycles, r.modules)])
    >>> [t.get_text() for t in ax.get_yticklabels()]
    ['1 a (36)', '2 b (36)']
    """
    if not layers:
        raise ValueError("network_stalls needs at least one layer")
    if module not in MODULE_CATEGORIES:
        raise ValueError(f"unknown module {module!r}; modules are {list(MODULE_CATEGORIES)}")
    ax = _new_axes(ax, (7.5, 1.2 + 0.28 * len(layers)))
    y = np.arange(len(layers))
    left = np.zeros(len(layers))
    for k, (cat, (label, color, hatch)) in enumerate(_CATEGORY_STYLE.items()):
        share = np.array(
            [
                layer.modules[module][MODULE_CATEGORIES[module][k]] / max(layer.cycles, 1)
                for layer in layers
            ]
        )
        ax.barh(
            y, share, left=left, height=0.8, color=color, hatch=hatch, label=label,
            edgecolor=_HATCH_COLOR.get(cat, "#888888"), linewidth=0.4,
        )  # fmt: skip
        left += share
    ax.set_yticks(y, [f"{i + 1} {layer.name} ({layer.cycles:,})" for i, layer in
                      enumerate(layers)], fontsize="small")  # fmt: skip
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.0%}"))
    ax.set_xlabel(f"share of the layer's cycles ({module} module)")
    ax.set_title(f"where each layer's cycles went ({module})", fontsize="medium")
    ax.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize="small", frameon=False)
    return ax


def save_network_figure(config: HwConfig, layers: Sequence[Any], path: str | os.PathLike) -> Path:
    """A whole network's picture: per-layer stall bars beside the roofline of every layer
    (points numbered as the bars), written to ``path`` (the format from its suffix)."""
    if not layers:
        raise ValueError("save_network_figure needs at least one accelerator layer")
    height = max(4.5, 1.6 + 0.28 * len(layers))
    fig = Figure(figsize=(15, height), layout="constrained")
    left, right = fig.subplots(1, 2, width_ratios=(1.1, 1))
    network_stalls(layers, left)
    numbered = [
        {"name": str(i + 1), "macs": layer.macs, "dram_bytes": layer.dram_bytes,
         "cycles": layer.cycles, "compulsory_bytes": layer.compulsory_bytes or None}
        for i, layer in enumerate(layers) if layer.macs and layer.dram_bytes
    ]  # fmt: skip
    if numbered:
        roofline(config, numbered, ax=right)
    else:
        right.set_axis_off()
        right.text(0.5, 0.5, "no layer with MACs", ha="center", va="center")
    out = Path(path)
    fig.savefig(out, dpi=110)
    return out
