"""From an ONNX model to a :class:`~compiler.model.program.Program`: import, graph passes, and one
compiled kernel per fused group.

:func:`optimize` imports the model into the graph IR and runs the graph pipeline for the CPU
(constant and batch-norm folding, dead-node elimination, packing to ``NCHW1n{c}c`` with
pre-packed weights, fusion by pattern kind, static memory planning).

:func:`compile_graph` turns every fused group into tensor expressions (``compiler.strategy``'s
``compute`` per node, in order, on placeholders for the group's inputs, constants included),
schedules them with the group's CPU schedule and compiles them with LLVM. Groups that are the
same computation (same operators, attributes, shapes and wiring; the weights differ) share one
kernel: tensor names inside a kernel are positional, so their LLVM IR text is identical and
compiles once. Tensors get their places from the memory plan: group outputs in the arena,
graph inputs fed at run time, constants bound once, graph outputs written straight into the
arrays a run returns.

Example:
    >>> from compiler.frontend.zoo import load_zoo
    >>> g = optimize(load_zoo("digits"))                          # doctest: +SKIP
    >>> prog = compile_graph(g, num_threads=1)                    # doctest: +SKIP
    >>> prog.inputs, len(prog.kernels) > 3                        # doctest: +SKIP
    ((TensorSpec(name='data', shape=(1, 1, 28, 28), dtype='float32'),), True)
"""

from __future__ import annotations

import sys
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from compiler.errors import CompilerError, ModelError
from compiler.model.program import (
    KernelArg,
    KernelSpec,
    MemoryStats,
    Placement,
    Program,
    TensorSpec,
)

#: Channel block of the packed activation layout on the CPU (one AVX-512 vector of float32).
CPU_BLOCK_C = 16
#: The packed channel block each target asks the graph pipeline for (None: NCHW throughout;
#: the GPU's schedules bind NCHW axes to threads).
BLOCK_C = {"cpu": CPU_BLOCK_C, "gpu": None}


def import_onnx(model: Any, input_shapes: Mapping[str, Sequence[int]] | None = None) -> Any:
    """The graph IR of an ``onnx.ModelProto`` (the ONNX frontend); ``input_shapes``: static
    shapes of inputs with symbolic dimensions."""
    from compiler.frontend.onnx_import import from_onnx

    return from_onnx(model, input_shapes=input_shapes)


def optimize(
    model: Any,
    block_c: int | None = CPU_BLOCK_C,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    *,
    dense_as_matmul: bool = True,
) -> Any:
    """Import ``model`` (an ``onnx.ModelProto``) and run the graph pipeline (``block_c``: the
    packed layout's channel block, None for NCHW; see :data:`BLOCK_C`; ``dense_as_matmul``:
    the cpu target's matmul for a dense layer of several rows, which the gpu target leaves
    out)."""
    from compiler.graph.pipeline import graph_pipeline, run_pipeline

    graph = import_onnx(model, input_shapes)
    return run_pipeline(graph, graph_pipeline(block_c=block_c, dense_as_matmul=dense_as_matmul))


def _signature(group: Any) -> Hashable:
    """What makes two groups the same kernel: the ops, attributes and wiring of their nodes
    and the types of their inputs (not the values of their constants)."""
    pos = {id(v): ("in", k) for k, v in enumerate(group.inputs)}
    nodes = []
    for j, node in enumerate(group.nodes):
        missing = [k for k, v in enumerate(node.inputs) if id(v) not in pos]
        if missing:
            raise ModelError(
                f"group {_group_name(group)}: node {node.label!r} input {missing[0]} is neither "
                "a group input nor an earlier node of the group"
            )
        refs = tuple(pos[id(v)] for v in node.inputs)
        nodes.append((node.op, node.attrs, refs, node.type))
        pos[id(node)] = ("node", j)
    ins = tuple(v.type for v in group.inputs)
    outs = tuple(pos[id(n)] for n in group.outputs)
    anchor = pos[id(group.anchor)] if group.anchor is not None else None
    return (tuple(nodes), ins, outs, anchor)


def _group_name(group: Any) -> str:
    node = group.anchor if group.anchor is not None else group.nodes[0]
    return node.label


def build_group(group: Any, symbol: str, target: Any) -> Any:
    """Compile one fused group; returns the target's compiled function (for the GPU a
    :class:`~compiler.targets.gpu.module.GpuModule`).

    Kernel arguments are the group's inputs in order, then its outputs.
    """
    from compiler import te
    from compiler.build import build
    from compiler.strategy import compute, schedule

    tensors: dict[int, Any] = {}
    params = []
    for k, v in enumerate(group.inputs):
        t = te.placeholder(v.type.shape, v.type.dtype, name=f"in{k}")
        tensors[id(v)] = t
        params.append(t)
    anchor = None
    for j, node in enumerate(group.nodes):
        args = [tensors[id(v)] for v in node.inputs]
        try:
            out = compute(node.op, args, dict(node.attrs), f"{node.op}{j}")
        except CompilerError as e:
            raise type(e)(
                f"group {_group_name(group)}: node {node.label!r} ({node.op}): {e}"
            ) from None
        tensors[id(node)] = out
        if node is group.anchor:
            anchor = out
    outs = [tensors[id(n)] for n in group.outputs]
    try:
        if target.name == "gpu":
            from compiler.topi.gpu import schedule_gpu

            sched = schedule_gpu(outs, anchor)
        else:
            from compiler.tune.records import current_best

            # Tuned knobs where an apply_best(log) context holds a record for this group's
            # task (it notes the groups that fall back to the strategy's own choice).
            best = current_best()
            knobs = best.group_knobs(group.anchor) if best and group.anchor is not None else {}
            sched = schedule(outs, anchor, target="cpu", **knobs)
        return build(sched, params + outs, target, name=symbol)
    except CompilerError as e:
        raise type(e)(f"group {_group_name(group)}: {e}") from None


def compile_progress_bar(total: int, name: str, progress: bool | None) -> Any:
    """A tqdm bar on stderr counting compiled groups: with ``progress``, or on a terminal when
    it is None; None when there is none to show."""
    show = sys.stderr.isatty() if progress is None else progress
    if not show:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        raise ModelError("--progress needs the tqdm package (pip install tqdm)") from None
    return tqdm(total=total, desc=f"compiling {name}", unit="group", file=sys.stderr, leave=False)


def compile_graph(
    graph: Any,
    target: str = "cpu",
    *,
    num_threads: int | None = None,
    progress: bool | None = None,
    name: str | None = None,
    output_names: tuple[str, ...] | None = None,
) -> Program:
    """Compile an optimized graph (fused, memory-planned) into a program for ``target``.

    ``output_names`` name the graph's outputs (the ONNX output names); by default each output
    value's own name.
    """
    from compiler.graph.ir import Constant, Node, Var
    from compiler.graph.printer import Namer, to_text
    from compiler.targets import get_target
    from compiler.targets.cpu import CpuTarget

    if target not in BLOCK_C:
        raise ModelError(f"unknown target {target!r} (known: {', '.join(BLOCK_C)})")
    if graph.groups is None or graph.memory_plan is None:
        raise ModelError(f"graph {graph.name} is not fused and memory-planned")
    if target == "gpu" and num_threads is not None:
        raise ModelError("num_threads applies to the cpu target only")
    tgt = CpuTarget(num_threads=num_threads) if target == "cpu" else get_target(target)
    namer = Namer(graph)
    plan = graph.memory_plan

    outputs = tuple(graph.outputs)
    if output_names is None:
        output_names = tuple(namer(v) for v in outputs)
    if len(output_names) != len(outputs):
        raise ModelError(
            f"graph {graph.name}: {len(outputs)} outputs but {len(output_names)} output names"
        )
    out_of: dict[int, str] = {}
    for v, oname in zip(outputs, output_names, strict=True):
        out_of.setdefault(id(v), oname)

    placements: dict[str, Placement] = {}
    constants: dict[str, Any] = {}

    def place(v: Any) -> str:
        tname = namer(v)
        if tname in placements:
            return tname
        shape, dtype = v.type.shape, v.type.dtype
        if isinstance(v, Var):
            placements[tname] = Placement("input", v.name, 0, shape, dtype)
        elif isinstance(v, Constant):
            constants[tname] = v.value
            placements[tname] = Placement("constant", tname, 0, shape, dtype)
        elif id(v) in out_of and isinstance(v, Node):
            placements[tname] = Placement("output", out_of[id(v)], 0, shape, dtype)
        else:
            alloc = plan.get(v)
            if alloc is None:
                raise ModelError(
                    f"graph {graph.name}: node {v.label!r} is read across groups but has no "
                    "place in the memory plan"
                )
            placements[tname] = Placement("arena", tname, alloc.offset, shape, dtype)
        return tname

    kernels: list[KernelSpec] = []
    built: dict[Hashable, tuple[str, Any]] = {}
    modules: dict[str, Any] = {}
    model = name or graph.name
    bar = compile_progress_bar(len(graph.groups), model, progress)
    try:
        for group in graph.groups:
            sig = _signature(group)
            if sig not in built:
                symbol = f"k{len(built)}_{group.anchor.op if group.anchor else group.nodes[0].op}"
                built[sig] = (symbol, build_group(group, symbol, tgt))
            symbol, fn = built[sig]
            tensors = tuple(place(v) for v in (*group.inputs, *group.outputs))
            if target == "gpu":
                modules[fn.name] = fn
            kernels.append(
                KernelSpec(
                    name=_group_name(group),
                    ops=tuple(n.op for n in group.nodes),
                    target=target,
                    symbol=fn.name,
                    args=tuple(KernelArg(a.name, a.shape, a.dtype, a.is_output) for a in fn.args),
                    tensors=tensors,
                    code=fn.source if target == "gpu" else fn.llvm_ir,
                )
            )
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()

    output_tensors = {}
    for v, oname in zip(outputs, output_names, strict=True):
        output_tensors[oname] = place(v)
    return Program(
        name=model,
        target=target,
        num_threads=getattr(tgt, "num_threads", 1),
        inputs=tuple(TensorSpec(v.name, v.type.shape, v.type.dtype) for v in graph.inputs),
        outputs=tuple(
            TensorSpec(n, v.type.shape, v.type.dtype)
            for v, n in zip(outputs, output_names, strict=True)
        ),
        placements=placements,
        kernels=tuple(kernels),
        constants=constants,
        arena_bytes=plan.peak_bytes,
        memory=MemoryStats(plan.peak_bytes, plan.naive_bytes),
        graph_text=to_text(graph),
        output_tensors=output_tensors,
        modules=modules,
    )
