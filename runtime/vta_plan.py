"""A compiled accelerator network as a flat list of steps, runnable without its graph.

:class:`runtime.vta_target.VtaNetwork` runs by walking the quantized graph. A
:class:`NetworkPlan` is what that walk needs and nothing more, so that a network compiled once
runs again from an artifact (:mod:`runtime.vta_artifact`) without quantizing, partitioning or
compiling anything:

* **slots**: every value that crosses a step (the network's inputs, a host group's results and
  constants, an accelerator group's ``out`` tensor as it lies in the image, which a host
  ``unpack`` node reads), by index, with its shape and dtype; the values a step makes for a
  later one live in one host arena, at offsets planned by liveness over the steps
  (:func:`plan_host_arena`), so that a run allocates only the arrays it returns;
* an :class:`AccelStep` per accelerator group: where its relocated program lies in the one DRAM
  image (:class:`compiler.targets.vta.link.GroupImage`), which slot (a ``pack`` node's result,
  :mod:`compiler.targets.vta.pack`) the host writes into its ``data`` unless it is read in
  place from the producing group, its ``residual`` likewise, the slot of its ``out`` and the
  parts of its per-layer record that do not depend on a run;
* a :class:`HostStep` per host group: its compiled CPU kernel (``CompiledFunction``, rebuilt
  from LLVM IR when loaded), the slots it reads and writes, and its nodes' names, operators
  and partition rules for the per-layer table;
* an :class:`InPlaceStep` per concat or slice the DRAM plan does in place: nothing runs, and
  the per-layer table shows where it went.

:meth:`NetworkPlan.run` does what :meth:`VtaNetwork.run` does, step for step (an output held in
the image is read back only when a later step needs it), and returns the same
:class:`~runtime.vta_target.NetworkRun`: the same outputs, bit for bit, and the same cycles.

Example:
    >>> import numpy as np
    >>> from compiler.graph import Constant, Graph, Node, TensorType, Var
    >>> from runtime.vta_target import compile_network
    >>> x = Var("x", TensorType((1, 3, 6, 6), "float32", "NCHW"))
    >>> w = Constant(np.random.default_rng(0).normal(size=(8, 3, 3, 3)).astype(np.float32),
    ...              name="w")
    >>> g = Graph.from_outputs([x], [Node("conv2d", (x, w), {"padding": (1, 1, 1, 1)},
    ...                                   name="conv")])
    >>> feed = {"x": np.random.default_rng(1).normal(size=(1, 3, 6, 6)).astype(np.float32)}
    >>> net = compile_network(g, "default", calibration=feed)
    >>> plan = plan_network(net)
    >>> [type(s).__name__ for s in plan.steps]
    ['HostStep', 'AccelStep', 'HostStep']
    >>> a, b = plan.run(feed), net.run(feed)
    >>> bool((a.outputs[0] == b.outputs[0]).all()), a.total_cycles == b.total_cycles
    (True, True)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from compiler.graph.memory import ALIGNMENT, first_fit, shared_bytes
from compiler.model.program import MemoryStats, TensorSpec
from compiler.partition.partition import EXPLAINED_RULES, IN_PLACE, Placement
from compiler.targets.vta.link import GroupImage
from compiler.targets.vta.pack import READ_BACK_RULE, group_writes
from isa import HwConfig
from isa.errors import IsaError
from runtime.errors import SessionError
from runtime.executor import aligned_empty
from runtime.vta_target import IN_PLACE_DEVICE, LayerRecord, NetworkRun


@dataclass(frozen=True)
class Slot:
    """A value that crosses steps: its shape and dtype, and where it lives during a run:
    ``offset`` bytes into the plan's host arena, or -1 for a value that is not in the arena
    (a network input, a constant, a network output, which each run allocates and returns,
    or a group's ``out`` that no step reads back)."""

    shape: tuple[int, ...]
    dtype: str
    offset: int = -1

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


@dataclass(frozen=True)
class HostWrite:
    """The host writes the value of slot ``slot`` (packed by a host group) into the tensor
    of symbol ``symbol`` of a group's program."""

    symbol: str
    slot: int


@dataclass(frozen=True)
class AccelStep:
    """One accelerator group (see the module docstring)."""

    name: str
    image: GroupImage
    writes: tuple[HostWrite, ...]
    output: int
    record: LayerRecord
    #: the group's own program (weights and tiles written, before relocation into the image):
    #: what an artifact stores as the group's program file
    program: Any = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class HostNode:
    """One node of a host group, for the per-layer table."""

    name: str
    op: str
    rule: str
    #: the placement's reason where the report repeats it (a ``compile-failed`` node: what
    #: the compiler said), else empty
    reason: str = ""


@dataclass(frozen=True)
class InPlaceStep:
    """A concat or slice that the DRAM plan does in place (rule ``in-place``): nothing runs;
    the per-layer table shows it, with ``reason``, where the graph has it."""

    name: str
    op: str
    reason: str


class ReferenceKernel:
    """A host group run node by node by the numpy reference executor, as the quantized graph's
    integer reference evaluates it: a group the CPU backend cannot compile (one node whose
    operator has no CPU compute, ``reason`` says why), or any group when a check wants the host
    out of the comparison. A plan with one runs, but an artifact, which holds compiled kernels
    only, refuses it (naming ``reason``)."""

    def __init__(self, host: Any) -> None:
        self.nodes = tuple(host.nodes)
        self.inputs = tuple(host.inputs)
        self.outputs = tuple(host.outputs)
        self.reason = host.reason

    def __call__(self, *args: np.ndarray) -> np.ndarray | tuple[np.ndarray, ...]:
        from compiler.graph import Constant
        from compiler.graph.reference import evaluate_node

        values = {id(v): a for v, a in zip(self.inputs, args, strict=True)}
        for node in self.nodes:
            ins = [v.value if isinstance(v, Constant) else values[id(v)] for v in node.inputs]
            values[id(node)] = evaluate_node(node, ins)
        outs = tuple(values[id(o)] for o in self.outputs)
        return outs[0] if len(outs) == 1 else outs


@dataclass(frozen=True)
class HostStep:
    """One host group: ``kernel`` called on the arrays of ``inputs``, giving ``outputs``."""

    name: str
    nodes: tuple[HostNode, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    kernel: Any
    how: str


@dataclass
class NetworkPlan:
    """A compiled accelerator network, runnable without its graph (module docstring)."""

    name: str
    config: HwConfig
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    #: the slot of every input and output, in the order of ``inputs`` and ``outputs``
    input_slots: tuple[int, ...]
    output_slots: tuple[int, ...]
    slots: tuple[Slot, ...]
    #: slots that hold a constant (a host group's weight or table)
    constants: dict[int, np.ndarray]
    steps: tuple[AccelStep | HostStep | InPlaceStep, ...]
    dram: np.ndarray
    activation_bytes: int = 0
    activation_bytes_unshared: int = 0
    #: the host arena: the bytes that hold every value a step makes for a later step (the
    #: slots with an ``offset``), planned by liveness over the steps in order
    #: (:func:`plan_host_arena`), against one buffer per value (``arena_naive_bytes``)
    arena_bytes: int = 0
    arena_naive_bytes: int = 0
    #: the quantized graph's scales and requantization parameters, per node (informative)
    quantization: list[dict[str, Any]] = field(default_factory=list)
    compile_seconds: float = 0.0
    #: the int8 scheme, in words (:func:`compiler.model.vta.quantization_scheme`)
    scheme: str = ""
    #: per accelerator group, its instructions decoded and checked, and their events, from the
    #: first run on the simulator (the instructions lie in the image's static part, which no
    #: run writes: :func:`compiler.targets.vta.link.check_plan`)
    _decoded: dict[str, tuple[Any, Any]] = field(default_factory=dict, repr=False, compare=False)
    #: the host arena and the view of every slot in it, made at the first run and reused (a
    #: run that finds it in use by another thread makes its own)
    _arena: tuple[np.ndarray, dict[int, np.ndarray]] | None = field(
        default=None, repr=False, compare=False
    )
    _arena_lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def memory(self) -> MemoryStats:
        """The host arena's figures: its bytes against one buffer per value it holds (the
        accelerator's activations lie in the DRAM image: ``activation_bytes``)."""
        return MemoryStats(self.arena_bytes, self.arena_naive_bytes)

    def _arena_views(self, arena: np.ndarray) -> dict[int, np.ndarray]:
        return {
            k: np.ndarray(s.shape, s.dtype, buffer=arena, offset=s.offset)
            for k, s in enumerate(self.slots)
            if s.offset >= 0
        }

    @contextmanager
    def _host_arena(self) -> Iterator[dict[int, np.ndarray]]:
        """The views of the arena's slots for one run: the plan's own arena, or a fresh one
        while another thread runs on it."""
        if not self._arena_lock.acquire(blocking=False):
            yield self._arena_views(aligned_empty(self.arena_bytes))
            return
        try:
            if self._arena is None:
                arena = aligned_empty(self.arena_bytes)
                self._arena = (arena, self._arena_views(arena))
            yield self._arena[1]
        finally:
            self._arena_lock.release()

    @property
    def batch(self) -> int:
        return self.inputs[0].shape[0] if self.inputs and self.inputs[0].shape else 1

    @property
    def accel_steps(self) -> list[AccelStep]:
        return [s for s in self.steps if isinstance(s, AccelStep)]

    @property
    def host_steps(self) -> list[HostStep]:
        return [s for s in self.steps if isinstance(s, HostStep)]

    def run(
        self,
        feeds: Mapping[str, np.ndarray],
        *,
        trace: bool = False,
        device: str = "sim",
        simulator: str | None = None,
        progress: bool = False,
        rtl: Any = None,
    ) -> NetworkRun:
        """Run every step on ``feeds`` (by input name; already checked against ``inputs``):
        accelerator groups on the simulator or the RTL (under ``simulator``, each group
        checked against the simulator; ``rtl``: a :class:`runtime.vta_rtl.RtlDevice` whose
        build is reused), host groups on the CPU; ``progress`` shows a bar of the accelerator
        groups on stderr."""
        with self._host_arena() as views:
            return self._run(feeds, views, trace, device, simulator, progress, rtl)

    def _run(
        self,
        feeds: Mapping[str, np.ndarray],
        views: dict[int, np.ndarray],
        trace: bool,
        device: str,
        simulator: str | None,
        progress: bool,
        rtl: Any,
    ) -> NetworkRun:
        from runtime.vta_target import execute_group, progress_bar, rtl_device, run_record

        rtl = rtl_device(device, simulator, trace, rtl)
        bar = progress_bar(len(self.accel_steps), self.name) if progress else None
        cfg = self.config
        env: dict[int, np.ndarray] = dict(self.constants)
        for spec, slot in zip(self.inputs, self.input_slots, strict=True):
            env[slot] = feeds[spec.name]
        in_dram: dict[int, AccelStep] = {}
        dram = self.dram.copy()
        copies: dict[str, float] = {}
        clock = time.perf_counter

        def value(slot: int) -> np.ndarray:
            if slot not in env:
                producer = in_dram.get(slot)
                if producer is None:
                    raise SessionError(f"slot {slot} is read before any step produced it")
                t0 = clock()
                # the group's ``out`` tensor as it lies in the image (its ``store``'s value:
                # a host ``unpack`` node makes the logical value), copied into its slot
                sym = producer.image.symbols["out"]
                raw = dram[sym.offset : sym.offset + sym.nbytes].view(np.dtype(sym.dtype))
                dst = views.get(slot)
                if dst is None:
                    dst = raw.reshape(sym.shape).copy()
                else:
                    dst.reshape(-1)[...] = raw
                env[slot] = dst
                copies[producer.name] = copies.get(producer.name, 0.0) + clock() - t0
            return env[slot]

        fresh: dict[int, np.ndarray] = {}
        records: list[LayerRecord] = []
        traces: list[tuple[str, int, Any]] = []
        host_slices: list[tuple[str, str, int, float]] = []
        cycles_so_far = 0
        host_cycles = 0  # the host groups' wall time so far, at the accelerator's clock
        for step in self.steps:
            if isinstance(step, InPlaceStep):
                records.append(
                    LayerRecord(step.name, step.op, IN_PLACE_DEVICE, IN_PLACE, reason=step.reason)
                )
                continue
            if isinstance(step, AccelStep):
                prog = step.image.program(cfg, dram)
                try:
                    for w in step.writes:
                        x = value(w.slot)
                        t0 = clock()
                        prog.write(w.symbol, x)
                        copies[step.name] = copies.get(step.name, 0.0) + clock() - t0
                    # the run owns ``dram`` (a copy of the plan's image): each group runs on
                    # it in place, with its instructions decoded once per plan
                    static = self._decoded.get(step.name)
                    if static is None and device == "sim":
                        static = self._decoded[step.name] = _decode(prog)
                    res = execute_group(prog, device, trace, rtl, step.name, bar,
                                        table=static[0] if static else None,
                                        in_place=device == "sim")  # fmt: skip
                except IsaError as e:
                    # a program that cannot run (a deadlock, a bad instruction: a corrupted
                    # image) is refused naming its group, in one line (the simulator's
                    # diagnosis spans several: one per module)
                    detail = "; ".join(ln.strip() for ln in str(e).splitlines() if ln.strip())
                    raise SessionError(f"group {step.name}: {detail}") from None
                dram = res.dram
                if trace:
                    traces.append((step.name, cycles_so_far + host_cycles, res.trace))
                cycles_so_far += res.cycles
                in_dram[step.output] = step
                records.append(run_record(step.record, res, static[1] if static else None))
                continue
            # reading an input out of the image counts as its producer's copy, not host time
            args = [np.asarray(value(s), self.slots[s].dtype, order="C") for s in step.inputs]
            if any(n.op == "quantize" for n in step.nodes):
                _check_finite(step, args)
            # each result goes to its slot in the arena, or (a network output) to an array
            # this run returns
            dests = []
            for slot in step.outputs:
                dst = views.get(slot)
                if dst is None:
                    sl = self.slots[slot]
                    dst = fresh[slot] = np.empty(sl.shape, sl.dtype)
                dests.append(dst)
                env[slot] = dst
            t0 = clock()
            _call_host(step.kernel, args, dests)
            seconds = clock() - t0
            if trace:
                ops = "+".join(n.op for n in step.nodes)
                host_slices.append((step.name, ops, cycles_so_far + host_cycles, seconds))
                host_cycles += max(1, round(seconds * cfg.clock_mhz * 1e6))
            for k, n in enumerate(step.nodes):
                records.append(LayerRecord(n.name, n.op, "cpu", n.rule, host=step.how,
                                           host_seconds=seconds if k == 0 else 0.0,
                                           reason=n.reason))  # fmt: skip
        outs: list[np.ndarray] = []
        for s in self.output_slots:
            # a network output a host group wrote is this run's own array; any other (an
            # input, a constant, an output given twice) is copied
            arr = fresh.pop(s, None)
            outs.append(arr if arr is not None else np.array(value(s)))
        chained = sum(len(s.image.aliased) for s in self.accel_steps)
        if bar is not None:
            bar.close()
        return NetworkRun(
            outs, records, cfg, self.batch, device, int(self.dram.size), chained, traces,
            activation_bytes=self.activation_bytes,
            activation_bytes_unshared=self.activation_bytes_unshared, copy_seconds=copies,
            scheme=self.scheme,
            rtl_checks=list(rtl.checks) if rtl is not None else [],
            simulator=rtl.simulator if rtl is not None else None, host_slices=host_slices,
        )  # fmt: skip


def _decode(prog: Any) -> tuple[Any, Any]:
    """A group program's decoded, checked instruction table and its event counts."""
    from isa.energy import count_events
    from vta_sim.decode import instruction_table

    return instruction_table(prog), count_events(prog)


def quantization_table(graph: Any) -> list[dict[str, Any]]:
    """The scales of every quantize/dequantize node and the parameters of every requantize
    and qadd of a quantized graph, in the graph's order."""
    from compiler.graph import Constant

    table: list[dict[str, Any]] = []
    for n in graph.nodes:
        if n.op not in ("quantize", "dequantize", "requantize", "qadd"):
            continue
        entry: dict[str, Any] = {"node": n.label, "op": n.op}
        for k, v in n.attrs.items():
            if isinstance(v, (int, float, str, bool)):
                entry[k] = v
        if n.op == "requantize":
            for key, v in zip(("multiplier", "shift", "post_shift"), n.inputs[1:4], strict=False):
                if isinstance(v, Constant):
                    entry[key] = np.asarray(v.value).reshape(-1).tolist()
        table.append(entry)
    return table


def _host_node(p: Placement) -> HostNode:
    """A host node's table entry; a node whose rule the report explains
    (:data:`compiler.partition.partition.EXPLAINED_RULES`: a failed compile's error, a
    measured int8 error) keeps its reason, the other rules speak for themselves."""
    return HostNode(p.node, p.op, p.rule, p.reason if p.rule in EXPLAINED_RULES else "")


def plan_network(net: Any, output_names: tuple[str, ...] | None = None) -> NetworkPlan:
    """The :class:`NetworkPlan` of a compiled :class:`~runtime.vta_target.VtaNetwork`;
    ``output_names``: the model's names of its outputs (default: the quantized graph's, where
    a dequantize may have renamed them)."""
    from compiler.graph import Constant
    from runtime.vta_target import static_record

    graph, cfg = net.graph, net.config
    missing = [k for k in ("dram_plan", "host_groups") if getattr(net, k) is None]
    if missing:
        raise SessionError(
            f"network {graph.name}: no {' and no '.join(missing)}: build it with "
            "compiler.model.vta.compile_network (host_groups=True) to run it"
        )
    dram_plan = net.dram_plan
    slot_of: dict[int, int] = {}
    slots: list[Slot] = []
    constants: dict[int, np.ndarray] = {}

    def slot(v: Any) -> int:
        if id(v) not in slot_of:
            slot_of[id(v)] = len(slots)
            slots.append(Slot(tuple(int(d) for d in v.type.shape), str(v.type.dtype)))
            if isinstance(v, Constant):
                constants[slot_of[id(v)]] = np.asarray(v.value, v.type.dtype, order="C")
        return slot_of[id(v)]

    input_slots = tuple(slot(v) for v in graph.inputs)
    by_anchor = {id(g.anchor): g for g in net.partition.groups}
    host_first = {id(h.nodes[0]): h for h in net.host_groups}
    placement = {p.node: p for p in net.partition.placements}
    steps: list[AccelStep | HostStep | InPlaceStep] = []
    for node in graph.nodes:
        p = placement.get(node.label)
        if p is not None and p.rule == IN_PLACE:
            steps.append(InPlaceStep(p.node, p.op, p.reason))
            continue
        group = by_anchor.get(id(node))
        if group is not None:
            image = dram_plan.groups[group.name]
            writes = [HostWrite(symbol, slot(pack)) for symbol, pack in group_writes(group)]
            layer = net.layers[group.name]
            own = layer.program.copy()
            for key, array in layer.params.items():
                own.write(key, array)
            record = static_record(group, layer, cfg)
            if group.store is not None:
                out = slot(group.store)
            else:  # read by no host node: a slot of the ``out`` tensor that no step reads
                sym = image.symbols["out"]
                out = len(slots)
                slots.append(Slot(tuple(int(d) for d in sym.shape), str(np.dtype(sym.dtype))))
            steps.append(AccelStep(group.name, image, tuple(writes), out, record, own))
            continue
        host = host_first.get(id(node))
        if host is None:
            continue
        nodes = tuple(_host_node(placement[n.label]) for n in host.nodes)
        steps.append(
            HostStep(
                host.name,
                nodes,
                tuple(slot(v) for v in host.inputs),
                tuple(slot(v) for v in host.outputs),
                host.kernel if host.kernel is not None else ReferenceKernel(host),
                host.how,
            )
        )

    def output_name(v: Any, k: int) -> str:
        # a group output the host reads back is named as the group's own output
        p = placement.get(getattr(v, "label", ""))
        if p is not None and p.rule == READ_BACK_RULE:
            v = v.inputs[0].inputs[0]
        return getattr(v, "name", "") or f"output{k}"

    names = output_names or tuple(output_name(v, k) for k, v in enumerate(graph.outputs))
    if len(names) != len(graph.outputs):
        raise SessionError(f"{len(names)} output names for {len(graph.outputs)} outputs")
    outputs = tuple(
        TensorSpec(n, tuple(v.type.shape), str(v.type.dtype))
        for n, v in zip(names, graph.outputs, strict=True)
    )
    ordered = _in_run_order(steps, {*input_slots, *constants}, net.graph.name)
    output_slots = tuple(slot(v) for v in graph.outputs)
    placed, arena_bytes, naive_bytes = plan_host_arena(ordered, slots, output_slots)
    return NetworkPlan(
        name=graph.name or "model",
        config=cfg,
        inputs=tuple(
            TensorSpec(v.name, tuple(v.type.shape), str(v.type.dtype)) for v in graph.inputs
        ),  # fmt: skip
        outputs=outputs,
        input_slots=input_slots,
        output_slots=output_slots,
        slots=placed,
        constants=constants,
        steps=ordered,
        dram=dram_plan.dram,
        activation_bytes=dram_plan.activation_bytes,
        activation_bytes_unshared=dram_plan.activation_bytes_unshared,
        arena_bytes=arena_bytes,
        arena_naive_bytes=naive_bytes,
        quantization=quantization_table(graph),
        compile_seconds=net.compile_seconds,
        scheme=net.scheme,
    )


def _in_run_order(
    steps: list[AccelStep | HostStep | InPlaceStep], ready: set[int], name: str
) -> tuple[AccelStep | HostStep | InPlaceStep, ...]:
    """``steps`` (a host group at its first node, an accelerator group at its anchor) with
    each host group that makes what a later step reads moved before that step: a group runs at
    its anchor, and a host ``pack`` of what a later node of the group reads (a residual made
    after the anchor in the graph's order) must run before it. The accelerator groups keep
    their order (the DRAM plan's)."""
    producer = {s: k for k, step in enumerate(steps) if isinstance(step, HostStep)
                for s in step.outputs}  # fmt: skip
    done: set[int] = set()
    order: list[AccelStep | HostStep | InPlaceStep] = []

    def run(k: int, need: tuple[int, ...], who: str) -> None:
        for slot in need:
            if slot in ready:
                continue
            src = producer.get(slot)
            if src is None or src in done:
                raise SessionError(f"network {name}: {who} reads slot {slot}, which no earlier "
                                   "step makes")  # fmt: skip
            host = steps[src]
            assert isinstance(host, HostStep)
            run(src, host.inputs, f"host group {host.name}")
        if k in done:
            return
        done.add(k)
        order.append(steps[k])
        step = steps[k]
        if isinstance(step, HostStep):
            ready.update(step.outputs)
        elif isinstance(step, AccelStep):
            ready.add(step.output)

    for k, step in enumerate(steps):
        if k in done:
            continue
        if isinstance(step, AccelStep):
            run(k, tuple(w.slot for w in step.writes), f"group {step.name}")
        elif isinstance(step, HostStep):
            run(k, step.inputs, f"host group {step.name}")
        else:
            run(k, (), step.name)
    return tuple(order)


def slot_lifetimes(
    steps: Sequence[AccelStep | HostStep | InPlaceStep],
) -> dict[int, tuple[int, int, bool]]:
    """Every slot a step makes (a host group's result, a group's ``out``): the step that makes
    it, the last step that reads it (the maker when none does) and whether any step reads it.

    Example:
        >>> h = HostStep("h", (), (0,), (1,), None, "")
        >>> slot_lifetimes([h, HostStep("g", (), (1,), (2,), None, "")])
        {1: (0, 1, True), 2: (1, 1, False)}
    """
    made: dict[int, int] = {}
    last: dict[int, int] = {}
    for k, step in enumerate(steps):
        if isinstance(step, HostStep):
            reads, makes = step.inputs, step.outputs
        elif isinstance(step, AccelStep):
            reads, makes = tuple(w.slot for w in step.writes), (step.output,)
        else:
            continue
        for s in reads:
            last[s] = k
        for s in makes:
            made.setdefault(s, k)
    return {s: (k, max(k, last.get(s, k)), s in last) for s, k in made.items()}


def _in_arena(
    steps: Sequence[AccelStep | HostStep | InPlaceStep], outputs: Sequence[int]
) -> dict[int, tuple[int, int]]:
    """The slots the host arena holds, with their lifetimes: what a host group makes and what
    the host reads back from a group, except the network's outputs (each run's own arrays)."""
    hosted = {s for step in steps if isinstance(step, HostStep) for s in step.outputs}
    return {
        s: (first, last)
        for s, (first, last, read) in slot_lifetimes(steps).items()
        if s not in outputs and (s in hosted or read)
    }


def plan_host_arena(
    steps: Sequence[AccelStep | HostStep | InPlaceStep],
    slots: Sequence[Slot],
    outputs: Sequence[int],
) -> tuple[tuple[Slot, ...], int, int]:
    """``slots`` with an arena ``offset`` for each value a step makes for a later one, by
    liveness over ``steps`` in run order (:func:`compiler.graph.memory.first_fit`, the planner
    the cpu target's arena uses); the arena's bytes and one buffer per value's bytes."""
    lives = _in_arena(steps, outputs)
    order = sorted(lives)
    offsets, peak = first_fit(
        [(slots[s].nbytes, *lives[s]) for s in order], ALIGNMENT
    )  # fmt: skip
    placed = list(slots)
    for s, offset in zip(order, offsets, strict=True):
        placed[s] = replace(slots[s], offset=offset)
    naive = sum(-(-max(slots[s].nbytes, 1) // ALIGNMENT) * ALIGNMENT for s in order)
    return tuple(placed), peak, naive


def check_host_arena(
    steps: Sequence[AccelStep | HostStep | InPlaceStep],
    slots: Sequence[Slot],
    outputs: Sequence[int],
    arena_bytes: int,
) -> str | None:
    """What is wrong with the slots' arena offsets, or None: every value a step makes for a
    later one lies inside the arena, aligned, and shares no byte with a value live at one of
    its steps; no other slot has an offset."""
    lives = _in_arena(steps, outputs)
    for k, sl in enumerate(slots):
        if sl.offset < 0:
            if k in lives:
                return f"slot {k} is made by a step for a later one but has no arena offset"
            continue
        if k not in lives:
            return (f"slot {k} has arena offset {sl.offset}, but it is not a value a step "
                    "makes for a later one")  # fmt: skip
        if sl.offset % ALIGNMENT:
            return f"slot {k}: arena offset {sl.offset} is not a multiple of {ALIGNMENT}"
        if sl.offset + sl.nbytes > arena_bytes:
            return (f"slot {k}: arena bytes [{sl.offset}, {sl.offset + sl.nbytes}) end past "
                    f"the {arena_bytes}-byte arena")  # fmt: skip
    held = sorted(lives)
    clash = shared_bytes([(slots[s].offset, slots[s].nbytes, *lives[s]) for s in held])
    if clash is not None:
        a, b, step = clash
        return f"slots {held[a]} and {held[b]} share arena bytes at step {step}, where both live"
    return None


def _call_host(kernel: Any, args: list[np.ndarray], dests: list[np.ndarray]) -> None:
    """Run a host group's kernel on ``args``, its results written into ``dests``."""
    if isinstance(kernel, ReferenceKernel):
        res = kernel(*args)
        for dst, arr in zip(dests, res if isinstance(res, tuple) else (res,), strict=True):
            dst[...] = arr
        return
    ins, outs = iter(args), iter(dests)
    kernel(*(next(outs) if a.is_output else next(ins) for a in kernel.args))


def _check_finite(step: HostStep, args: list[np.ndarray]) -> None:
    """A value about to be quantized to int8 must be finite: NaN and Inf have no int8 code,
    and rounding them would give confident garbage instead of an error."""
    for arr in args:
        if arr.dtype.kind == "f" and not np.isfinite(arr).all():
            bad = int(np.count_nonzero(~np.isfinite(arr)))
            raise SessionError(
                f"host group {step.name}: {bad} of {arr.size} values to quantize are NaN or "
                "Inf: int8 cannot represent them (the cpu target computes in float)"
            )


__all__ = [
    "AccelStep",
    "HostWrite",
    "HostNode",
    "HostStep",
    "InPlaceStep",
    "NetworkPlan",
    "ReferenceKernel",
    "Slot",
    "check_host_arena",
    "plan_host_arena",
    "plan_network",
    "slot_lifetimes",
    "quantization_table",
]
