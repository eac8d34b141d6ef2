"""An accelerator network as a :class:`~compiler.model.program.Program`: the program format
every target shares.

:func:`plan_network` flattens a compiled network (:func:`compiler.model.vta.compile_network`:
quantized, partitioned, its groups compiled and laid out in one DRAM image, its host groups
compiled for the CPU) into the program a session runs and an artifact stores, so that a
network compiled once runs again without quantizing, partitioning or compiling anything:

* **kernels**, in run order, each on one of the targets ``cpu`` (a host group: its compiled
  kernel, LLVM IR; a group the CPU backend cannot compile runs in the numpy reference executor,
  :class:`ReferenceKernel`), ``vta`` (an accelerator group: its arguments are the host tensors
  a host ``pack`` made, written into its program's symbols, and its ``out``, as it lies in the
  image, which a host ``unpack`` reads) or ``copy`` (a concat or slice the DRAM plan does in
  place: nothing runs);
* **placements**: every tensor that crosses kernels: the network's inputs and outputs, the
  host kernels' constants, and the values a kernel makes for a later one, which live in one
  host arena at offsets planned by liveness over the kernels (:func:`plan_host_arena`), so that
  a run allocates only the arrays it returns; a group's ``out`` that no kernel reads stays in
  the image (placement ``image``);
* the accelerator's part (:class:`~compiler.model.program.AccelModule`): the config, the one
  DRAM image, and per kernel what the per-layer table needs (a group's relocated program,
  :class:`compiler.targets.vta.link.GroupImage`, and :class:`GroupFigures`; a host kernel's
  nodes).

``runtime.vta_plan.VtaExecutor`` runs it (the compiler never runs the simulator).

Example:
    >>> import numpy as np
    >>> from compiler.graph import Constant, Graph, Node, TensorType, Var
    >>> from compiler.model.vta import compile_network
    >>> x = Var("x", TensorType((1, 3, 6, 6), "float32", "NCHW"))
    >>> w = Constant(np.random.default_rng(0).normal(size=(8, 3, 3, 3)).astype(np.float32),
    ...              name="w")
    >>> g = Graph.from_outputs([x], [Node("conv2d", (x, w), {"padding": (1, 1, 1, 1)},
    ...                                   name="conv")])
    >>> feed = {"x": np.random.default_rng(1).normal(size=(1, 3, 6, 6)).astype(np.float32)}
    >>> program = plan_network(compile_network(g, "default", calibration=feed))
    >>> [(k.name, k.target, k.ops) for k in program.kernels]  # doctest: +NORMALIZE_WHITESPACE
    [('x.quantize', 'cpu', ('quantize', 'im2col', 'pack')),
     ('conv', 'vta', ('conv2d', 'requantize')),
     ('conv.read', 'cpu', ('unpack', 'dequantize'))]
    >>> {t: p.kind for t, p in program.placements.items()}  # doctest: +NORMALIZE_WHITESPACE
    {'x': 'input', 'conv.data.pack': 'arena', 'conv.out': 'arena', 'conv.dequantize': 'output'}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from compiler.errors import ModelError
from compiler.graph.memory import ALIGNMENT, first_fit, naive_bytes, shared_bytes
from compiler.model.program import (
    AccelKernel,
    AccelModule,
    GroupFigures,
    HostKernel,
    HostNode,
    InPlaceCopy,
    KernelArg,
    KernelSpec,
    MemoryStats,
    Placement,
    Program,
    TensorSpec,
)
from compiler.partition.partition import EXPLAINED_RULES, IN_PLACE
from compiler.partition.partition import Placement as NodePlacement
from compiler.targets.vta.pack import READ_BACK_RULE, group_writes


class ReferenceKernel:
    """A host group run node by node by the numpy reference executor, as the quantized graph's
    integer reference evaluates it: a group the CPU backend cannot compile (one node whose
    operator has no CPU compute, ``reason`` says why), or any group when a check wants the host
    out of the comparison. A program with one runs, but an artifact, which holds compiled
    kernels only, refuses it (naming ``reason``)."""

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


def reference_symbol(k: int) -> str:
    """The symbol of the ``k``-th kernel when it runs in the reference executor (its callable
    lives in ``Program.modules`` only: an artifact refuses it)."""
    return f"reference.{k}"


def accel_kernels(program: Program) -> list[tuple[KernelSpec, AccelKernel]]:
    """The ``vta`` kernels of ``program`` with what each runs, in order."""
    accel = accel_module(program)
    return [(k, s) for k, s in zip(program.kernels, accel.steps, strict=True)
            if isinstance(s, AccelKernel)]  # fmt: skip


def host_kernels(program: Program) -> list[tuple[KernelSpec, HostKernel]]:
    """The ``cpu`` kernels of an accelerator network's ``program`` with their nodes, in order."""
    accel = accel_module(program)
    return [(k, s) for k, s in zip(program.kernels, accel.steps, strict=True)
            if isinstance(s, HostKernel)]  # fmt: skip


def accel_module(program: Program) -> AccelModule:
    """The accelerator's part of ``program``; a program without one is refused."""
    if program.accel is None:
        raise ModelError(f"program {program.name} (target {program.target}) has no "
                         "accelerator groups")  # fmt: skip
    return program.accel


def writes_of(kernel: KernelSpec) -> list[tuple[str, str]]:
    """A ``vta`` kernel's host writes: (its program's symbol, the tensor written into it)."""
    return [(a.name, t) for a, t in zip(kernel.args, kernel.tensors, strict=True)
            if not a.is_output]  # fmt: skip


def out_of(kernel: KernelSpec) -> str:
    """The tensor of a ``vta`` kernel's ``out``: read back into the arena when a later kernel
    reads it, else placed ``image`` (it stays in the DRAM image)."""
    return next(t for a, t in zip(kernel.args, kernel.tensors, strict=True) if a.is_output)


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


def _host_node(p: NodePlacement) -> HostNode:
    """A host node's table entry; a node whose rule the report explains
    (:data:`compiler.partition.partition.EXPLAINED_RULES`: a failed compile's error, a
    measured int8 error) keeps its reason, the other rules speak for themselves."""
    return HostNode(p.node, p.op, p.rule, p.reason if p.rule in EXPLAINED_RULES else "")


def group_figures(group: Any, layer: Any, cfg: Any) -> GroupFigures:
    """What an accelerator group's per-layer row says before any run (MACs, ideal and roofline
    cycles, compulsory bytes, knobs): a compiled network keeps them, and each run adds its
    cycles, DRAM bytes and limiter (``runtime.vta_target.run_record``)."""
    from compiler.registry import lookup
    from compiler.topi.vta.metrics import compulsory_bytes, ideal_cycles, roofline_cycles

    comp = compulsory_bytes(layer.program)
    ideal = ideal_cycles(layer.macs, cfg)
    out = layer.out_shape
    entries = int(np.prod(out[:-2]))  # accumulator entries the epilogue touches
    imm = layer.alu_imm_steps
    alu = entries * (imm * cfg.alu_imm_ii + (layer.alu_steps - imm) * cfg.alu_ii)
    ops = "+".join(n.op for n in group.compute_nodes)
    rule, _ = lookup("vta", group.anchor.op).placement(group.anchor, cfg)  # the partition's
    knobs = layer.knobs.describe() if hasattr(layer.knobs, "describe") else ""
    return GroupFigures(
        group.name, ops, rule, layer.macs, ideal, roofline_cycles(layer.macs, comp, cfg),
        max(ideal + alu, comp / cfg.bus_bytes), comp, knobs,
    )  # fmt: skip


Step = tuple[KernelSpec, HostKernel | AccelKernel | InPlaceCopy]


def plan_network(net: Any, output_names: tuple[str, ...] | None = None) -> Program:
    """The :class:`~compiler.model.program.Program` of a compiled
    :class:`~runtime.vta_target.VtaNetwork`; ``output_names``: the model's names of its outputs
    (default: the quantized graph's, where a dequantize may have renamed them)."""
    from compiler.graph import Constant, Var

    graph, cfg = net.graph, net.config
    missing = [k for k in ("dram_plan", "host_groups") if getattr(net, k) is None]
    if missing:
        raise ModelError(
            f"network {graph.name}: no {' and no '.join(missing)}: build it with "
            "compiler.model.vta.compile_network (host_groups=True) to run it"
        )
    dram_plan = net.dram_plan
    names: dict[int, str] = {}
    taken: set[str] = set()
    types: dict[str, tuple[tuple[int, ...], str]] = {}
    constants: dict[str, np.ndarray] = {}

    def unique(base: str) -> str:
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base}#{n}"
        taken.add(name)
        return name

    def tensor(v: Any) -> str:
        if id(v) not in names:
            base = v.name if isinstance(v, Var) else (getattr(v, "label", "") or v.name)
            t = names[id(v)] = unique(base or "value")
            types[t] = (tuple(int(d) for d in v.type.shape), str(v.type.dtype))
            if isinstance(v, Constant):
                constants[t] = np.asarray(v.value, v.type.dtype, order="C")
        return names[id(v)]

    inputs = [tensor(v) for v in graph.inputs]
    by_anchor = {id(g.anchor): g for g in net.partition.groups}
    host_first = {id(h.nodes[0]): h for h in net.host_groups}
    placement = {p.node: p for p in net.partition.placements}
    steps: list[Step] = []
    modules: dict[str, Any] = {}
    for node in graph.nodes:
        p = placement.get(node.label)
        if p is not None and p.rule == IN_PLACE:
            steps.append((KernelSpec(p.node, (p.op,), "copy", "", (), (), ""),
                          InPlaceCopy(p.reason)))  # fmt: skip
            continue
        group = by_anchor.get(id(node))
        if group is not None:
            image = dram_plan.groups[group.name]
            args, tensors = [], []
            for symbol, pack in group_writes(group):
                sym = image.symbols[symbol]
                args.append(KernelArg(symbol, tuple(sym.shape), str(np.dtype(sym.dtype)), False))
                tensors.append(tensor(pack))
            sym = image.symbols["out"]
            if group.store is not None:
                out = tensor(group.store)
            else:  # read by no host node: it stays in the image
                out = unique(f"{group.name}.out")
                types[out] = (tuple(int(d) for d in sym.shape), str(np.dtype(sym.dtype)))
            args.append(KernelArg("out", tuple(sym.shape), str(np.dtype(sym.dtype)), True))
            tensors.append(out)
            layer = net.layers[group.name]
            own = layer.program.copy()
            for key, array in layer.params.items():
                own.write(key, array)
            record = group_figures(group, layer, cfg)
            ops = tuple(n.op for n in group.compute_nodes)
            kernel = KernelSpec(group.name, ops, "vta", group.name, tuple(args), tuple(tensors), "")
            steps.append((kernel, AccelKernel(image, record, own)))
            continue
        host = host_first.get(id(node))
        if host is None:
            continue
        nodes = tuple(_host_node(placement[n.label]) for n in host.nodes)
        ins = [tensor(v) for v in host.inputs]
        outs = [tensor(v) for v in host.outputs]
        fn = host.kernel if host.kernel is not None else ReferenceKernel(host)
        if isinstance(fn, ReferenceKernel):
            symbol = reference_symbol(len(modules))
            args = [KernelArg(f"in{j}", *types[t], False) for j, t in enumerate(ins)]
            args += [KernelArg(f"out{j}", *types[t], True) for j, t in enumerate(outs)]
            order, code = ins + outs, ""
        else:
            symbol, code = fn.name, fn.llvm_ir
            it_in, it_out = iter(ins), iter(outs)
            args = [KernelArg(a.name, tuple(a.shape), a.dtype, a.is_output) for a in fn.args]
            order = [next(it_out) if a.is_output else next(it_in) for a in fn.args]
        modules[symbol] = fn
        kernel = KernelSpec(host.name, tuple(n.op for n in nodes), "cpu", symbol, tuple(args),
                            tuple(order), code)  # fmt: skip
        steps.append((kernel, HostKernel(nodes, host.how)))

    def output_name(v: Any, k: int) -> str:
        # a group output the host reads back is named as the group's own output
        p = placement.get(getattr(v, "label", ""))
        if p is not None and p.rule == READ_BACK_RULE:
            v = v.inputs[0].inputs[0]
        return getattr(v, "name", "") or f"output{k}"

    out_names = output_names or tuple(output_name(v, k) for k, v in enumerate(graph.outputs))
    if len(out_names) != len(graph.outputs):
        raise ModelError(f"{len(out_names)} output names for {len(graph.outputs)} outputs")
    outputs = tuple(
        TensorSpec(n, tuple(v.type.shape), str(v.type.dtype))
        for n, v in zip(out_names, graph.outputs, strict=True)
    )
    output_tensors = {n: tensor(v) for n, v in zip(out_names, graph.outputs, strict=True)}
    ordered = _in_run_order(steps, {*inputs, *constants}, graph.name)
    kinds: dict[str, tuple[str, str]] = {t: ("input", v.name) for t, v in
                                         zip(inputs, graph.inputs, strict=True)}  # fmt: skip
    kinds.update({t: ("constant", t) for t in constants})
    for n, t in output_tensors.items():
        kinds.setdefault(t, ("output", n))
    offsets, arena_bytes, naive = plan_host_arena([k for k, _ in ordered], types, kinds)
    placements = {}
    for t, (shape, dtype) in types.items():
        kind, key = kinds.get(t, ("arena", t) if t in offsets else ("image", t))
        placements[t] = Placement(kind, key, offsets.get(t, 0), shape, dtype)
    return Program(
        name=graph.name or "model",
        target="vta",
        num_threads=1,
        inputs=tuple(
            TensorSpec(v.name, tuple(v.type.shape), str(v.type.dtype)) for v in graph.inputs
        ),  # fmt: skip
        outputs=outputs,
        placements=placements,
        kernels=tuple(k for k, _ in ordered),
        constants=constants,
        arena_bytes=arena_bytes,
        memory=MemoryStats(arena_bytes, naive),
        output_tensors=output_tensors,
        modules=modules,
        accel=AccelModule(
            config=cfg,
            dram=dram_plan.dram,
            steps=tuple(s for _, s in ordered),
            activation_bytes=dram_plan.activation_bytes,
            activation_bytes_unshared=dram_plan.activation_bytes_unshared,
            quantization=quantization_table(graph),
            scheme=net.scheme,
            compile_seconds=net.compile_seconds,
        ),
    )


def _reads(kernel: KernelSpec) -> list[str]:
    return [t for a, t in zip(kernel.args, kernel.tensors, strict=True) if not a.is_output]


def _makes(kernel: KernelSpec) -> list[str]:
    return [t for a, t in zip(kernel.args, kernel.tensors, strict=True) if a.is_output]


def _in_run_order(steps: list[Step], ready: set[str], name: str) -> list[Step]:
    """``steps`` (a host kernel at its first node, a group at its anchor) with each host kernel
    that makes what a later kernel reads moved before that kernel: a group runs at its anchor,
    and a host ``pack`` of what a later node of the group reads (a residual made after the
    anchor in the graph's order) must run before it. The groups keep their order (the DRAM
    plan's)."""
    producer = {t: k for k, (kernel, _) in enumerate(steps) if kernel.target == "cpu"
                for t in _makes(kernel)}  # fmt: skip
    done: set[int] = set()
    order: list[Step] = []

    def run(k: int, who: str) -> None:
        for t in _reads(steps[k][0]):
            if t in ready:
                continue
            src = producer.get(t)
            if src is None or src in done:
                raise ModelError(f"network {name}: {who} reads tensor {t}, which no earlier "
                                 "kernel makes")  # fmt: skip
            run(src, f"host kernel {steps[src][0].name}")
        if k in done:
            return
        done.add(k)
        order.append(steps[k])
        ready.update(_makes(steps[k][0]))

    for k, (kernel, _) in enumerate(steps):
        if k not in done:
            kind = "group" if kernel.target == "vta" else "host kernel"
            run(k, f"{kind} {kernel.name}")
    return order


def tensor_lifetimes(kernels: Sequence[KernelSpec]) -> dict[str, tuple[int, int, bool]]:
    """Every tensor a kernel makes: the kernel that makes it, the last kernel that reads it (the
    maker when none does) and whether any kernel reads it.

    Example:
        >>> def k(name, reads, makes):
        ...     args = [KernelArg(t, (1,), "int8", False) for t in reads]
        ...     args += [KernelArg(t, (1,), "int8", True) for t in makes]
        ...     return KernelSpec(name, (), "cpu", name, tuple(args), (*reads, *makes), "")
        >>> tensor_lifetimes([k("h", ["x"], ["a"]), k("g", ["a"], ["b"])])
        {'a': (0, 1, True), 'b': (1, 1, False)}
    """
    made: dict[str, int] = {}
    last: dict[str, int] = {}
    for k, kernel in enumerate(kernels):
        for t in _reads(kernel):
            last[t] = k
        for t in _makes(kernel):
            made.setdefault(t, k)
    return {t: (k, max(k, last.get(t, k)), t in last) for t, k in made.items()}


def _in_arena(
    kernels: Sequence[KernelSpec], outside: Mapping[str, Any]
) -> dict[str, tuple[int, int]]:
    """The tensors the host arena holds, with their lifetimes: what a host kernel makes and
    what the host reads back from a group, except those ``outside`` it (inputs, constants and
    the network's outputs, which are each run's own arrays)."""
    hosted = {t for k in kernels if k.target == "cpu" for t in _makes(k)}
    return {
        t: (first, last)
        for t, (first, last, read) in tensor_lifetimes(kernels).items()
        if t not in outside and (t in hosted or read)
    }


def plan_host_arena(
    kernels: Sequence[KernelSpec],
    types: Mapping[str, tuple[tuple[int, ...], str]],
    outside: Mapping[str, Any],
) -> tuple[dict[str, int], int, int]:
    """An arena offset for each tensor a kernel makes for a later one (shapes and dtypes in
    ``types``; those in ``outside`` excepted), by liveness over ``kernels`` in run order
    (:func:`compiler.graph.memory.first_fit`, the planner the cpu target's arena uses); the
    arena's bytes and one buffer per tensor's bytes."""
    lives = _in_arena(kernels, outside)
    order = list(lives)
    sizes = [_nbytes(*types[t]) for t in order]
    offsets, peak = first_fit([(n, *lives[t]) for n, t in zip(sizes, order, strict=True)],
                              ALIGNMENT)  # fmt: skip
    naive = naive_bytes(sizes, ALIGNMENT)
    return dict(zip(order, offsets, strict=True)), peak, naive


def _nbytes(shape: tuple[int, ...], dtype: str) -> int:
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize


def check_host_arena(program: Program) -> str | None:
    """What is wrong with the placements of ``program`` with accelerator groups, or None:
    every tensor a kernel makes for a later one lies in the arena, aligned, inside it, and
    shares no byte with a tensor live at one of its kernels; an ``image`` tensor is a group's
    ``out`` that no kernel reads; no other tensor is in the arena or the image."""
    places = program.placements
    outside = {t for t, p in places.items() if p.kind in ("input", "constant", "output")}
    lives = _in_arena(program.kernels, dict.fromkeys(outside))
    made = tensor_lifetimes(program.kernels)
    for t, p in places.items():
        if p.kind == "image":
            if t not in made or made[t][2] or t in lives:
                return f"tensor {t!r} is in the image, but it is not a group's out read by none"
            continue
        if p.kind != "arena":
            continue
        if t not in lives:
            return f"tensor {t!r} is in the arena, but it is not a value a kernel makes for a " \
                "later one"  # fmt: skip
        if p.offset % ALIGNMENT:
            return f"tensor {t!r}: arena offset {p.offset} is not a multiple of {ALIGNMENT}"
        if p.offset < 0 or p.offset + p.nbytes > program.arena_bytes:
            return (f"tensor {t!r}: arena bytes [{p.offset}, {p.offset + p.nbytes}) end past "
                    f"the {program.arena_bytes}-byte arena")  # fmt: skip
    for t in lives:
        if places[t].kind != "arena":
            return f"tensor {t!r} is made by a kernel for a later one but is not in the arena"
    held = list(lives)
    clash = shared_bytes([(places[t].offset, places[t].nbytes, *lives[t]) for t in held])
    if clash is not None:
        a, b, k = clash
        return (f"tensors {held[a]!r} and {held[b]!r} share arena bytes at kernel "
                f"{program.kernels[k].name!r}, where both live")  # fmt: skip
    return None


def with_fields(program: Program, **fields: Any) -> Program:
    """``program`` with ``fields`` replaced (a name, the compile time)."""
    accel = program.accel
    top = {k: v for k, v in fields.items() if k != "compile_seconds"}
    if "compile_seconds" in fields and accel is not None:
        top["accel"] = replace(accel, compile_seconds=fields["compile_seconds"])
    return replace(program, **top)


__all__ = [
    "ReferenceKernel",
    "accel_kernels",
    "accel_module",
    "check_host_arena",
    "group_figures",
    "host_kernels",
    "out_of",
    "plan_host_arena",
    "plan_network",
    "quantization_table",
    "reference_symbol",
    "tensor_lifetimes",
    "with_fields",
    "writes_of",
]
