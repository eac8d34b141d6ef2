"""Whole quantized networks on the accelerator (``--target vta``): a compiled network
(:func:`compiler.model.vta.compile_network`: quantized, partitioned, every accelerator group
compiled, one DRAM image planned, the host groups compiled) that runs.

Running the network walks its plan (:mod:`runtime.vta_plan`) in order: an accelerator group runs
its program over the image on the simulator (``vta_sim``) or the RTL; the host groups between
accelerator groups run their CPU kernels (a node without a CPU compute runs in the numpy
reference executor, and the per-layer table says ``host (reference)`` and why) and write what an
accelerator group reads into the image. The result is bit for bit the quantized graph's integer
reference.

Each accelerator group gives a :class:`LayerRecord`: cycles, GEMM utilization, the fraction of
two rooflines reached (GEMM and DRAM only; and one that also counts the ALU work of the
epilogue), DRAM bytes moved against the compulsory bytes, and the module that limited it (the
one with the most busy cycles).

Example:
    >>> import numpy as np
    >>> from compiler.graph import Constant, Graph, Node, TensorType, Var
    >>> x = Var("x", TensorType((1, 3, 6, 6), "float32", "NCHW"))
    >>> w = Constant(np.random.default_rng(0).normal(size=(8, 3, 3, 3)).astype(np.float32),
    ...              name="w")
    >>> g = Graph.from_outputs([x], [Node("conv2d", (x, w), {"padding": (1, 1, 1, 1)},
    ...                                   name="conv")])
    >>> feed = {"x": np.random.default_rng(1).normal(size=(1, 3, 6, 6)).astype(np.float32)}
    >>> net = compile_network(g, "default", calibration=feed)
    >>> result = net.run(feed)
    >>> [(r.name, r.device) for r in result.layers]
    [('x.quantize', 'cpu'), ('conv.im2col', 'cpu'), ('conv.data.pack', 'cpu'), ('conv', 'vta'),
     ('conv.read', 'cpu'), ('conv.dequantize', 'cpu')]
    >>> bool((result.outputs[0] == net.reference(feed)[0]).all())
    True
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from compiler.graph import Graph, evaluate
from compiler.graph.reference import check_feeds
from compiler.model.program import GroupFigures
from compiler.model.vta import CompiledNetwork
from compiler.model.vta import compile_network as build_network
from isa import HwConfig
from runtime.errors import SessionError

#: The device of a per-layer row for a concat or slice that the DRAM plan does in place: it runs
#: on neither the accelerator nor the host.
IN_PLACE_DEVICE = "dram"


@dataclass(frozen=True)
class LayerRecord:
    """One row of the per-layer table: an accelerator group, a host node, or a concat or slice
    done in place (device :data:`IN_PLACE_DEVICE`)."""

    name: str
    ops: str
    device: str
    rule: str
    cycles: int = 0
    macs: int = 0
    ideal_cycles: float = 0.0
    roofline_cycles: float = 0.0
    alu_roofline_cycles: float = 0.0
    dram_bytes: int = 0
    compulsory_bytes: int = 0
    limiter: str = ""
    host_seconds: float = 0.0
    #: cycles per module and category (busy, waiting on a token or memory, idle)
    modules: dict[str, dict[str, int]] = field(default_factory=dict)
    #: how a host node ran: ``host (compiled, group G)`` or ``host (reference): <reason>``
    host: str = ""
    #: the group's energy in pJ and its parts (docs/energy.md), from one run
    energy_pj: float = 0.0
    energy_parts: dict[str, float] = field(default_factory=dict)
    #: the schedule knobs the group's program was compiled with (``describe()``; empty for a
    #: group without knobs): an artifact keeps them
    knobs: str = ""
    #: a host node's placement reason where the report repeats it (rule ``compile-failed``:
    #: the accelerator compile's error), else empty
    reason: str = ""

    @property
    def utilization(self) -> float:
        return self.ideal_cycles / self.cycles if self.cycles else 0.0

    @property
    def roofline_fraction(self) -> float:
        return self.roofline_cycles / self.cycles if self.cycles else 0.0

    @property
    def alu_roofline_fraction(self) -> float:
        return self.alu_roofline_cycles / self.cycles if self.cycles else 0.0

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "ops": self.ops, "device": self.device,
                             "rule": self.rule}  # fmt: skip
        if self.device == "vta":
            d.update(
                cycles=self.cycles,
                macs=self.macs,
                utilization=round(self.utilization, 4),
                roofline_fraction=round(self.roofline_fraction, 4),
                alu_roofline_fraction=round(self.alu_roofline_fraction, 4),
                dram_bytes=self.dram_bytes,
                compulsory_bytes=self.compulsory_bytes,
                limiter=self.limiter,
                modules=self.modules,
                energy_uj=self.energy_pj * 1e-6,
                energy_by_part_uj={k: v * 1e-6 for k, v in self.energy_parts.items()},
            )
        else:
            d["host_seconds"] = round(self.host_seconds, 6)
            d["host"] = self.host
            if self.reason:
                d["reason"] = self.reason
        return d


#: The per-layer table's columns: title, kind (:data:`isa.report.KINDS`) and meaning.
LAYER_COLUMNS = (
    ("layer", "text", ""),
    ("device", "text", ""),
    ("cycles", "int", "accelerator cycles of the group"),
    ("util", "pct", "the GEMM core's MACs over its peak in those cycles (blank: no MACs)"),
    (
        "roof",
        "pct",
        "roofline cycles (peak MACs or compulsory bytes over the bus, whichever "
        "is longer) over the cycles",
    ),
    ("roof+alu", "pct", "the same with the ALU micro-ops of the group's epilogue on compute"),
    ("DRAM B", "int", "bytes moved on the memory port"),
    ("compulsory", "int", "bytes every input, weight and output needs once"),
    ("energy uJ", "float3", "the group's energy at 45 nm (docs/energy.md)"),
    ("limiter", "text", "the accelerator module with the most busy cycles"),
    ("placement", "text", "the partition rule that placed the node, and how a host node ran"),
)


@dataclass
class NetworkRun:
    """Outputs and per-layer records of one run of a :class:`VtaNetwork`."""

    outputs: list[np.ndarray]
    layers: list[LayerRecord]
    config: HwConfig
    batch: int
    device: str = "sim"
    #: bytes of the network's one DRAM image (all programs, weights and activations)
    dram_image_bytes: int = 0
    #: accelerator groups that read an input in place from the group that produced it
    chained_inputs: int = 0
    #: per accelerator group: (name, first cycle on the network's time axis, its sim trace)
    traces: list[tuple[str, int, Any]] = field(default_factory=list)
    #: per host group of a traced run: (name, its ops, first cycle on the network's time axis,
    #: its wall seconds here); on that axis a host group lasts its seconds at the accelerator's
    #: clock, and the accelerator groups after it start that much later
    host_slices: list[tuple[str, str, int, float]] = field(default_factory=list)
    #: bytes of the image's activation region (reused by liveness), and what the activations
    #: would take each at its own place
    activation_bytes: int = 0
    activation_bytes_unshared: int = 0
    #: per accelerator group: host seconds spent packing its inputs into the image and
    #: unpacking its output out of it (recorded by :meth:`runtime.vta_plan.VtaExecutor.run`)
    copy_seconds: dict[str, float] = field(default_factory=dict)
    #: the quantization scheme, in words (:func:`quantization_scheme`)
    scheme: str = ""
    #: ``device="rtl"``: per accelerator group, how its RTL run compares with the simulator
    #: (:class:`runtime.vta_rtl.GroupCheck`), and the HDL simulator that ran it
    rtl_checks: list[Any] = field(default_factory=list)
    simulator: str | None = None

    @property
    def rtl_agrees(self) -> bool:
        """Every accelerator group's RTL run equals the simulator's (True off the RTL)."""
        return all(c.equal for c in self.rtl_checks)

    @property
    def total_cycles(self) -> int:
        return sum(r.cycles for r in self.layers)

    @property
    def images_per_second(self) -> float:
        """At the config's clock, accelerator cycles only (host time not counted)."""
        if not self.total_cycles:
            return 0.0
        return self.batch * self.config.clock_mhz * 1e6 / self.total_cycles

    @property
    def energy_pj(self) -> float:
        """Energy of the accelerator groups (docs/energy.md; host work not counted)."""
        return sum(r.energy_pj for r in self.layers)

    def table(self, legend: bool = True) -> str:
        """The per-layer table with whole-network totals (and the columns' legend)."""
        from isa.report import Column, format_legend, format_table

        columns = [Column(title, kind, legend) for title, kind, legend in LAYER_COLUMNS]
        rows: list[tuple[Any, ...]] = []
        for r in self.layers:
            if r.device == "vta":
                rows.append((
                    r.name, "vta", r.cycles, r.utilization if r.macs else None,
                    r.roofline_fraction, r.alu_roofline_fraction, r.dram_bytes,
                    r.compulsory_bytes, r.energy_pj * 1e-6, r.limiter, r.rule,
                ))  # fmt: skip
            elif r.device == IN_PLACE_DEVICE:
                rows.append((r.name, r.device, None, None, None, None, None, None, None, "",
                             f"{r.rule}: {r.reason}"))  # fmt: skip
            else:
                rule = f"{r.rule}: {r.reason}" if r.reason else r.rule
                rows.append((r.name, "cpu", None, None, None, None, None, None, None, "",
                             f"{rule}; {r.host}"))  # fmt: skip
        vta = [r for r in self.layers if r.device == "vta"]
        host = [r for r in self.layers if r.device == "cpu"]
        in_place = len(self.layers) - len(vta) - len(host)
        moved = sum(r.dram_bytes for r in vta)
        comp = sum(r.compulsory_bytes for r in vta)
        total = ("total", "", self.total_cycles, None, None, None, moved, comp,
                 self.energy_pj * 1e-6, "", "")  # fmt: skip
        macs = sum(r.macs for r in vta)
        per_mac = f", {self.energy_pj / macs:.2f} pJ per MAC" if macs else ""
        summary = (
            f"{self.total_cycles:,} accelerator cycles in {len(vta)} groups "
            f"({len(host)} host nodes"
            + (f", {in_place} concats and slices done in place" if in_place else "")
            + f"), {self.images_per_second:,.1f} "
            f"images/s at {self.config.clock_mhz:g} MHz ({self.config.name}); "
            f"{Column('e', 'float3').cell(self.energy_pj * 1e-6)} uJ{per_mac}; one DRAM image of "
            f"{self.dram_image_bytes:,} bytes (activations {self.activation_bytes:,}, "
            f"{self.activation_bytes_unshared:,} without reuse), {self.chained_inputs} group "
            "inputs read in place from the group that produced them"
        )
        if self.scheme:
            summary += f"\nint8 scheme: {self.scheme}"
        text = format_table(columns, rows, total=total, legend=False) + "\n" + summary
        return text + ("\n\n" + format_legend(columns) if legend else "")

    def save_trace(self, path: str) -> None:
        """One Chrome / Perfetto trace of the whole network: the accelerator groups one after
        the other on one time axis (1 us = 1 cycle), each group a slice named after it on a
        ``network`` track above the modules' tracks, its table row in ``args``; the host groups
        between them as slices on a ``host`` track, each as long as its wall time here at the
        accelerator's clock (the groups after it start that much later)."""
        if not self.traces:
            raise SessionError("no trace was recorded: run the network with trace=True")
        events: list[dict[str, Any]] = []
        seen_meta: set[tuple[Any, ...]] = set()
        layer_tid, host_tid = 99, 98
        rows = {r.name: r for r in self.layers if r.device == "vta"}
        energy_uj = 0.0
        for tid, label, order in ((layer_tid, "network", -2),
                                  (host_tid, "host (wall time here, at the accelerator's clock)",
                                   -1)):  # fmt: skip
            events.append({"ph": "M", "pid": 0, "tid": tid, "name": "thread_name",
                           "args": {"name": label}})  # fmt: skip
            events.append({"ph": "M", "pid": 0, "tid": tid, "name": "thread_sort_index",
                           "args": {"sort_index": order}})  # fmt: skip
        for name, ops, start, seconds in self.host_slices:
            events.append({"ph": "X", "pid": 0, "tid": host_tid, "name": name, "ts": start,
                           "dur": max(1, round(seconds * self.config.clock_mhz * 1e6)),
                           "args": {"ops": ops, "host_us": round(seconds * 1e6, 3)}})  # fmt: skip
        for name, start, trace in self.traces:
            chrome = trace.to_chrome()
            for e in chrome["traceEvents"]:
                if e.get("ph") == "M":
                    key = (e.get("pid"), e.get("tid"), e.get("name"), json.dumps(e.get("args")))
                    if key not in seen_meta:
                        seen_meta.add(key)
                        events.append(e)
                    continue
                e = dict(e)
                if "ts" in e:
                    e["ts"] = e["ts"] + start
                events.append(e)
            cycles = int(chrome.get("otherData", {}).get("cycles", trace.cycles))
            slice_: dict[str, Any] = {"ph": "X", "pid": 0, "tid": layer_tid, "name": name,
                                      "ts": start, "dur": cycles}  # fmt: skip
            record = rows.get(name)
            if record is not None:  # the table's row, to read beside the slice
                slice_["args"] = record.to_json()
                energy_uj += record.energy_pj * 1e-6
                events.append({"ph": "C", "pid": 0, "name": "energy (uJ, cumulative)",
                               "ts": start + cycles, "args": {"uJ": energy_uj}})  # fmt: skip
            events.append(slice_)
        doc = {
            "traceEvents": events,
            "displayTimeUnit": "ns",
            "otherData": {"time_unit": "1 us on the time axis = 1 cycle",
                          "cycles": self.total_cycles, "config": self.config.name},
        }  # fmt: skip
        try:
            with open(path, "w") as f:
                json.dump(doc, f, allow_nan=False)
        except OSError as e:
            raise SessionError(f"--trace {path}: cannot write: {e.strerror}") from None

    def to_json(self) -> dict[str, Any]:
        rtl: dict[str, Any] = {}
        if self.device == "rtl":
            rtl = {
                "simulator": self.simulator,
                "rtl_agrees": self.rtl_agrees,
                "rtl_groups": [c.to_json() for c in self.rtl_checks],
            }
        return {
            "config": self.config.name,
            "device": self.device,
            "dram_image_bytes": self.dram_image_bytes,
            "activation_bytes": self.activation_bytes,
            "activation_bytes_unshared": self.activation_bytes_unshared,
            "chained_inputs": self.chained_inputs,
            "layers": [r.to_json() for r in self.layers],
            "total_cycles": self.total_cycles,
            "images_per_second": round(self.images_per_second, 3),
            "energy_uj": self.energy_pj * 1e-6,
            "quantization": self.scheme,
            **rtl,
        }


@dataclass
class VtaNetwork(CompiledNetwork):
    """A compiled network (:class:`compiler.model.vta.CompiledNetwork`) that runs: on the
    simulator or the RTL, through its plan."""

    #: the network as a program (:func:`compiler.model.vta_program.plan_network`), made on the first
    #: run, and its executor: the one runner of a compiled network, here and in sessions and
    #: artifacts
    plan: Any = field(default=None, repr=False, compare=False)
    executor: Any = field(default=None, repr=False, compare=False)

    @classmethod
    def of(cls, net: CompiledNetwork) -> VtaNetwork:
        """``net`` as a network that runs (the same objects, no copy)."""
        return cls(**{f.name: getattr(net, f.name) for f in fields(CompiledNetwork)})

    def reference(self, feeds: Mapping[str, Any] | Sequence[Any]) -> list[np.ndarray]:
        """The quantized graph's integer reference (the numpy executor)."""
        return evaluate(self.graph, feeds)

    def run(
        self,
        feeds: Mapping[str, Any] | Sequence[Any],
        *,
        trace: bool = False,
        device: str = "sim",
        simulator: str | None = None,
        progress: bool = False,
        rtl: Any = None,
    ) -> NetworkRun:
        """Run every group: accelerator groups on the simulator (``device="sim"``) or on the RTL
        (``"rtl"``: under ``simulator``, Icarus by default, each group checked against the
        simulator, :mod:`runtime.vta_rtl`), host nodes on the host. ``trace`` records each
        group's simulator trace for :meth:`NetworkRun.save_trace`; ``progress`` shows a bar
        of the accelerator groups on stderr; ``rtl``: a :class:`runtime.vta_rtl.RtlDevice` to
        reuse (its build) across runs."""
        from compiler.model.vta_program import plan_network
        from runtime.vta_plan import VtaExecutor

        env = check_feeds(self.graph, feeds)
        if self.plan is None:
            self.plan = plan_network(self)
            self.executor = VtaExecutor(self.plan)
        named = {v.name: env[id(v)] for v in self.graph.inputs}
        return self.executor.run(
            named, trace=trace, device=device, simulator=simulator, progress=progress, rtl=rtl
        )


def rtl_device(device: str, simulator: str | None, trace: bool, rtl: Any = None) -> Any:
    """The :class:`runtime.vta_rtl.RtlDevice` a run on ``device`` uses (None on the
    simulator), after checking the options against each other."""
    from runtime.vta_rtl import RtlDevice

    if device not in ("sim", "rtl"):
        raise SessionError(f"--device {device!r}: sim or rtl")
    if trace and device != "sim":
        raise SessionError("--trace records the simulator's trace: use it with --device sim")
    if device != "rtl":
        if simulator is not None or rtl is not None:
            raise SessionError("--simulator picks the HDL simulator of --device rtl")
        return None
    if rtl is None:
        return RtlDevice(simulator or "icarus")
    if simulator is not None and simulator != rtl.simulator:
        raise SessionError(f"--simulator {simulator}: the RTL device runs {rtl.simulator}")
    rtl.checks = []
    return rtl


def progress_bar(total: int, name: str) -> Any:
    """A bar of ``total`` accelerator groups on stderr."""
    from runtime.vta_rtl import progress_bar as bar

    return bar(total, f"running {name}")


def execute_group(
    prog: Any, device: str, trace: bool, rtl: Any = None, name: str = "", bar: Any = None,
    table: Any = None, in_place: bool = False,
) -> Any:  # fmt: skip
    """Run one group's program on the simulator, or on the RTL checked against it; on the
    simulator with the program's decoded ``table`` when given, updating the program's DRAM
    image ``in_place`` when the caller owns it (:func:`vta_sim.simulate`)."""
    import vta_sim

    if bar is not None:
        bar.set_postfix_str(name, refresh=True)
    if device == "sim":
        res = vta_sim.simulate(prog, trace=trace, table=table, in_place=in_place)
    else:
        res, _ = rtl.execute(name, prog)
    if bar is not None:
        bar.update(1)
    return res


def run_record(static: GroupFigures, res: Any, events: Any = None) -> LayerRecord:
    """A group's row of the per-layer table: its figures before any run (``static``:
    :func:`compiler.model.vta_program.group_figures`) with one run's cycles, DRAM bytes,
    per-module cycles, limiter (the module with the most busy cycles) and energy
    (docs/energy.md); ``events``: the program's :func:`isa.energy.count_events`, when the
    caller has them from an earlier run of the same instructions."""
    from isa.energy import count_events, estimate_energy

    busy = {m: c.get("busy", 0) for m, c in res.modules.items()}
    limiter = max(busy, key=lambda m: busy[m]) if busy else ""
    if events is None:
        events = count_events(res.program)
    energy = estimate_energy(events, res.program.config, res.cycles)
    return LayerRecord(
        static.name, static.ops, "vta", static.rule,
        cycles=res.cycles,
        macs=static.macs,
        ideal_cycles=static.ideal_cycles,
        roofline_cycles=static.roofline_cycles,
        alu_roofline_cycles=static.alu_roofline_cycles,
        dram_bytes=sum(res.dram_bytes.values()),
        compulsory_bytes=static.compulsory_bytes,
        limiter=limiter,
        modules={m: dict(c) for m, c in res.modules.items()},
        energy_pj=energy.total_pj,
        energy_parts=dict(energy.by_part),
        knobs=static.knobs,
    )  # fmt: skip


def compile_network(graph: Graph, config: str | HwConfig = "default", **options: Any) -> VtaNetwork:
    """:func:`compiler.model.vta.compile_network` (quantize, partition, compile every group,
    plan the DRAM image, compile the host groups; the same ``options``), as a network this
    runtime runs (:class:`VtaNetwork`)."""
    return VtaNetwork.of(build_network(graph, config, **options))


__all__ = [
    "IN_PLACE_DEVICE",
    "LayerRecord",
    "NetworkRun",
    "VtaNetwork",
    "compile_network",
    "execute_group",
    "progress_bar",
    "rtl_device",
    "run_record",
]
