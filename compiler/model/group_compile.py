"""Compile a network's accelerator groups: each from the compile cache when an earlier compile
left it there (:mod:`compiler.cache`), the rest in this process or in a pool of ``jobs``
worker processes, in the partition's order whatever finishes first. And quantize a float graph
through the same cache (:func:`quantize_cached`): its key is the float graph (structure, names,
attributes, every constant's bytes), the calibration batches, the calibrator, the requantization
mode and the compiler's source.

A group's key is everything :func:`compiler.model.vta.compile_group` reads: the group's name
and kind; per node its op, attributes and output type; per input either which node of the group
feeds it, the type of an outside value, or a constant's dtype, shape and bytes (so weights,
bias and requantization parameters are part of the key and the cached program carries its
packed parameters); the config; ``extra`` (for instance the knobs a tuning log
picks); and the source of the compiler (this module included) and of ``isa``
(:func:`compiler.cache.source_version`). The cached value is the whole
:class:`compiler.topi.vta.qnn.QLayer` (program, packed parameters, knobs, figures), pickled
into a checksummed entry.

A group whose compile raises a :class:`compiler.errors.CompilerError` (a shape whose tiles fit
no buffer, a schedule that cannot be built) is a per-group failure when the caller asks for them
(``failed``): the group is left out of the result and its error is recorded, here or in a
worker (which returns the error instead of raising it, so the pool goes on with the other
groups). Any other exception is a bug and propagates.

Workers are forked where the platform allows it, so they inherit the groups (a group's nodes
reach the whole graph above them, which would otherwise be pickled per task); each returns its
:class:`QLayer`. Compiling is deterministic, so the programs are byte for byte those of a
serial compile. The pool never sends a worker a signal (a first error cancels the groups not
yet started and waits for the ones being compiled), and a worker that dies anyway (killed from
outside, out of memory) is an error naming the groups left, not a wait.

Example:
    >>> import numpy as np
    >>> from compiler.graph import Constant, Graph, Node, TensorType, Var
    >>> from compiler.model.vta import compile_network
    >>> x = Var("x", TensorType((1, 3, 6, 6), "float32", "NCHW"))
    >>> w = Constant(np.ones((8, 3, 3, 3), np.float32), name="w")
    >>> g = Graph.from_outputs([x], [Node("conv2d", (x, w), {}, name="conv")])
    >>> feed = {"x": np.ones((1, 3, 6, 6), np.float32)}
    >>> net = compile_network(g, calibration=feed, jobs=2, cache=False)
    >>> sorted(net.layers)
    ['conv']
"""

from __future__ import annotations

import concurrent.futures as cf
import copyreg
import gc
import multiprocessing
import pickle
from collections.abc import Callable, Generator, Iterator, Sequence
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from typing import Any

from compiler.cache import CompileCache, fingerprint, source_version
from compiler.errors import CompilerError, ModelError
from compiler.graph import Constant, Graph
from compiler.graph.ir import Attrs
from compiler.partition import AccelGroup
from compiler.topi.vta.qnn import QLayer, reuse_programs_from_now, reusing_programs
from isa import HwConfig

#: The modules whose source decides a group's program (a change to any makes new keys).
VERSION_MODULES = ("compiler", "isa")

#: compile_one(group, cfg) -> QLayer
GroupCompiler = Callable[[AccelGroup, HwConfig], QLayer]

# What forked workers inherit: the groups, the config and the compile function.
_WORK: dict[str, Any] = {}


def group_key(group: AccelGroup, cfg: HwConfig, extra: Any = None) -> str:
    """The cache key of ``group`` on ``cfg`` (see the module docstring)."""
    index = {id(n): k for k, n in enumerate(group.compute_nodes)}
    nodes = []
    for n in group.compute_nodes:
        inputs: list[Any] = []
        for v in n.inputs:
            if id(v) in index:
                inputs.append(("node", index[id(v)]))
            elif isinstance(v, Constant):
                inputs.append(("constant", v.value))
            else:
                inputs.append(("value", v.type.shape, str(v.type.dtype), v.type.layout))
        t = n.type
        nodes.append((n.op, dict(n.attrs), inputs, t.shape, str(t.dtype), t.layout))
    residual = group.residual
    parts = {
        "name": group.name,
        "kind": group.kind,
        "nodes": nodes,
        "roles": [
            index.get(id(n)) if n is not None else None
            for n in (group.anchor, group.requantize, group.qadd, group.post)
        ],  # fmt: skip
        "residual": None if residual is None else (residual.type.shape, str(residual.type.dtype)),
        "config": cfg.to_json(),
        "extra": extra,
        "version": source_version(*VERSION_MODULES),
    }
    return fingerprint(parts)


def _value_parts(v: Any, index: dict[int, int]) -> Any:
    """An input of a node: which value of the graph (by position) or a constant's bytes."""
    if id(v) in index:
        return ("value", index[id(v)])
    if isinstance(v, Constant):
        return ("constant", v.value, v.name, v.layout)
    raise TypeError(f"a value outside the graph: {type(v).__name__}")


def graph_parts(graph: Graph) -> Any:
    """Everything of ``graph`` that quantizing it reads, in plain values for
    :func:`compiler.cache.fingerprint`: inputs, nodes (op, name, attributes, inputs by position
    or constant bytes), outputs. Raises TypeError for a graph it cannot spell (already fused or
    planned)."""
    if graph.groups is not None or graph.memory_plan is not None:
        raise TypeError("a fused or planned graph")
    index = {id(v): k for k, v in enumerate((*graph.inputs, *graph.nodes))}
    t = [(v.name, v.type.shape, str(v.type.dtype), v.type.layout) for v in graph.inputs]
    nodes = [(n.op, n.name, dict(n.attrs), [_value_parts(v, index) for v in n.inputs])
             for n in graph.nodes]  # fmt: skip
    return (graph.name, t, nodes, [_value_parts(v, index) for v in graph.outputs])


def quantize_cached(
    graph: Graph,
    batches: list[Any],
    *,
    calibrator: str,
    requant: str,
    cache: CompileCache | None,
    sensitivity: str | float | None = None,
    bias_correction: bool = True,
) -> Graph:
    """``quantize_graph(graph, batches, ...)``, from the cache when the same float graph was
    quantized on the same calibration data with the same options by the same compiler.
    Calibration runs the float model on every batch, the larger part of a compile whose
    groups come from the cache. The quantized graph is stored pickled (:data:`Attrs` are
    pickled as their dict)."""
    from compiler.quantize import quantize_graph

    def run() -> Graph:
        return quantize_graph(
            graph, batches, calibrator=calibrator, requant=requant, sensitivity=sensitivity,
            bias_correction=bias_correction,
        )  # fmt: skip

    if cache is None:
        return run()
    try:
        key = fingerprint("quantize", graph_parts(graph), batches, calibrator, requant,
                          str(sensitivity), bias_correction,
                          source_version(*VERSION_MODULES))  # fmt: skip
    except TypeError:  # a graph or feed the key cannot spell: quantized, not cached
        return run()
    payload = cache.get(key)
    if payload is not None:
        try:
            cached = pickle.loads(payload)
        except Exception:  # an entry of classes that changed shape: quantize again
            cached = None
        if isinstance(cached, Graph):
            return cached
    quantized = run()
    try:
        cache.put(key, pickle.dumps(quantized, protocol=pickle.HIGHEST_PROTOCOL))
    except RecursionError:  # a graph too deep to pickle: only not cached
        pass
    return quantized


def _attrs_reduce(a: Attrs) -> tuple[Any, ...]:
    return (Attrs, (dict(a),))


# Attrs is immutable with slots: pickled as the mapping it is built from.
copyreg.pickle(Attrs, _attrs_reduce)


def _default_compiler() -> GroupCompiler:
    from compiler.model.vta import compile_group

    return compile_group


def _attempt(
    compile_one: GroupCompiler, group: AccelGroup, cfg: HwConfig
) -> QLayer | CompilerError:
    """``compile_one(group, cfg)``, or the compiler's error it raised: returned, not raised, so
    a worker hands it back as the group's result and the pool goes on with the others."""
    try:
        return compile_one(group, cfg)
    except CompilerError as e:
        return e


def _compile_at(k: int) -> QLayer | CompilerError:
    """A worker's task: group ``k`` of the inherited work."""
    reuse_programs_from_now()
    return _attempt(_WORK["compile"], _WORK["groups"][k], _WORK["config"])


def _compile_pair(task: tuple[AccelGroup, HwConfig, GroupCompiler]) -> QLayer | CompilerError:
    """A task where workers are spawned (no fork): the group travels pickled."""
    group, cfg, compile_one = task
    reuse_programs_from_now()
    return _attempt(compile_one, group, cfg)


def _load(cache: CompileCache, key: str, group: AccelGroup) -> QLayer | None:
    payload = cache.get(key)
    if payload is None:
        return None
    try:
        layer = pickle.loads(payload)
    except Exception:  # an entry of classes that changed shape: compile again
        return None
    return layer if isinstance(layer, QLayer) and layer.name == group.name else None


def compile_groups(
    groups: Sequence[AccelGroup],
    cfg: HwConfig,
    *,
    jobs: int = 1,
    cache: CompileCache | None = None,
    compile_one: GroupCompiler | None = None,
    extra: Callable[[AccelGroup], Any] | None = None,
    progress: bool | None = None,
    name: str = "",
    failed: dict[str, CompilerError] | None = None,
) -> dict[str, QLayer]:
    """One :class:`QLayer` per group, by name, in the order of ``groups``.

    ``jobs``: worker processes for the groups the cache does not hold (1: this process).
    ``cache``: where compiled groups are looked up and stored (None: no cache).
    ``compile_one``: the group compiler (default :func:`compiler.model.vta.compile_group`).
    ``extra``: per group, more of its key (what ``compile_one`` reads beyond the group and
    the config, such as the knobs a tuning log gives it). ``progress``: a bar of the groups on
    stderr (None: on a terminal), named after the network ``name``. ``failed``: where a
    group's :class:`CompilerError` is recorded by group name (the group is then missing from
    the result, and nothing is cached for it); None: the first such error is raised.
    """
    if jobs < 1:
        raise ModelError(f"--jobs {jobs}: the number of worker processes must be at least 1")
    compile_one = compile_one or _default_compiler()
    layers: dict[str, QLayer | None] = {}
    keys: dict[str, str] = {}
    todo: list[int] = []
    for k, group in enumerate(groups):
        layer = None
        if cache is not None:
            try:
                keys[group.name] = group_key(group, cfg, extra(group) if extra else None)
            except TypeError:  # an attribute the key cannot spell: compiled, not cached
                pass
            else:
                layer = _load(cache, keys[group.name], group)
        layers[group.name] = layer
        if layer is None:
            todo.append(k)
    from compiler.model.cpu import compile_progress_bar

    bar = compile_progress_bar(len(groups), name or "groups", progress) if todo else None
    if bar is not None:
        bar.update(len(groups) - len(todo))  # read from the cache
    done = _compile(groups, todo, cfg, jobs, compile_one)
    try:
        for k, result in zip(todo, done, strict=True):
            gname = groups[k].name
            if isinstance(result, CompilerError):
                if failed is None:
                    raise result
                failed[gname] = result
                if bar is not None:
                    bar.update(1)
                continue
            layers[gname] = result
            if cache is not None and gname in keys:
                cache.put(keys[gname], pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
            if bar is not None:
                bar.update(1)
    finally:
        # closed now, not when collected: a pool left open by a raised error would otherwise
        # clear the work of the next compile's workers whenever it is collected
        done.close()
        if bar is not None:
            bar.close()
    return {gname: layer for gname, layer in layers.items() if layer is not None}


@contextmanager
def _old_objects_frozen() -> Iterator[None]:
    """The objects alive before the group compiles (the graph, its weights, the modules) left
    out of the collector's full collections while they run: compiling makes and drops many IR
    nodes, and each full collection would otherwise scan everything alive again. Left as it
    is when objects were frozen already (by whoever froze them)."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _compile(
    groups: Sequence[AccelGroup], todo: list[int], cfg: HwConfig, jobs: int,
    compile_one: GroupCompiler,
) -> Generator[QLayer | CompilerError, None, None]:  # fmt: skip
    """The groups at ``todo`` compiled here (``jobs`` 1 or one group) or in a pool, in
    order, each as it is done (a group whose compile fails as its :class:`CompilerError`).

    The pool never sends a worker a signal: when the caller stops early (a raised error, an
    interrupt), the groups not yet started are cancelled and the ones being compiled finish, so
    no worker is killed while it holds a queue's lock or is half way through writing its result
    (which could leave the pool's own threads waiting for ever). A worker that dies anyway
    (killed from outside, out of memory) is an error naming the groups left, never a wait.
    """
    workers = min(jobs, len(todo))
    if workers <= 1:
        with _old_objects_frozen(), reusing_programs():
            for k in todo:
                yield _attempt(compile_one, groups[k], cfg)
        return
    fork = "fork" in multiprocessing.get_all_start_methods()
    if fork:
        _WORK.update(groups=groups, config=cfg, compile=compile_one)
    try:
        ctx = multiprocessing.get_context("fork" if fork else "spawn")
        pool = cf.ProcessPoolExecutor(workers, mp_context=ctx)
        try:
            # one group a task: groups differ a lot in cost, so the pool balances them (with
            # fork, every worker starts at the first submit, from this thread)
            futures = [
                pool.submit(_compile_at, k) if fork
                else pool.submit(_compile_pair, (groups[k], cfg, compile_one))
                for k in todo
            ]  # fmt: skip
            for n, future in enumerate(futures):
                try:
                    result = future.result()
                except BrokenProcessPool as e:
                    left = ", ".join(repr(groups[j].name) for j in todo[n:])
                    raise ModelError(
                        f"a compile worker process died (killed, or out of memory) while one "
                        f"of the groups {left} was compiling; none of them is compiled. "
                        "Compile with one job (--jobs 1) to see which group fails and why"
                    ) from e
                yield result
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    finally:
        _WORK.clear()


__all__ = ["VERSION_MODULES", "compile_groups", "graph_parts", "group_key", "quantize_cached"]
