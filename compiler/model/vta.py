"""The whole-model build for the accelerator (``--target vta``): quantize, partition, compile
every accelerator group, lay the programs out in one DRAM image, and compile the host groups.

A float model is quantized to int8 (:func:`compiler.quantize.quantize_graph`, calibrated on the
given data; cached by :func:`compiler.model.group_compile.quantize_cached`), partitioned
(:func:`compiler.partition.partition_graph`: every operator's ``fits`` in the registry decides,
after the host's steps before a group became graph nodes, :mod:`compiler.targets.vta.host_steps`)
and every accelerator group (conv2d or dense with its per-channel requantization and a fused
``qadd``; a max pool; a global sum pool with its requantization; a standalone elementwise
group) is compiled to one program for the config through its registered template
(:mod:`compiler.targets.vta.ops`), with a tuning log's knobs where one applies
(:mod:`compiler.model.tuning`). The programs are laid out in one DRAM image
(:mod:`compiler.targets.vta.link`), where consecutive accelerator groups hand activations over
in the packed layout. The host nodes between accelerator groups are cut into host groups and
compiled once with the CPU backend (:mod:`compiler.model.host_groups`).

A group whose accelerator compile fails all the same (a :class:`compiler.errors.CompilerError`)
is not a failed model: the graph is partitioned again with that group's nodes on the host (rule
``compile-failed``, the error as the reason; :func:`compile_partition`).

The result, a :class:`CompiledNetwork`, holds no simulator: the runtime runs it
(:class:`runtime.vta_target.VtaNetwork`) and saves it as an artifact.

Example:
    >>> import numpy as np
    >>> from compiler.graph import Constant, Graph, Node, TensorType, Var
    >>> x = Var("x", TensorType((1, 3, 6, 6), "float32", "NCHW"))
    >>> w = Constant(np.ones((8, 3, 3, 3), np.float32), name="w")
    >>> g = Graph.from_outputs([x], [Node("conv2d", (x, w), {}, name="conv")])
    >>> net = compile_network(g, calibration={"x": np.ones((1, 3, 6, 6), np.float32)})
    >>> sorted(net.layers), [p.node for p in net.partition.placements if p.device == "cpu"]
    (['conv'], ['x.quantize', 'conv.im2col', 'conv.data.pack', 'conv.read', 'conv.dequantize'])
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from compiler.cache import CompileCache
from compiler.errors import CompilerError, ModelError, QuantizeWarning
from compiler.graph import Graph
from compiler.graph.printer import to_text
from compiler.graph.verify import verify_graph
from compiler.model.group_compile import compile_groups, quantize_cached
from compiler.model.host_groups import HostGroup, compile_host_groups
from compiler.partition import AccelGroup, Partition, partition_graph
from compiler.partition.partition import IN_PLACE, IN_PLACE_REASON
from compiler.passes.pipeline import Pass, PassOptions, Pipeline
from compiler.quantize import INT8_COSINE_TARGET, fp32_fallbacks, sensitivity_thresholds
from compiler.quantize.fuse import fuse_qprelu
from compiler.targets.vta.host_steps import host_steps
from compiler.targets.vta.link import NetworkDram, check_plan, plan_network_dram
from compiler.targets.vta.ops import compile_group as compile_template
from compiler.targets.vta.pack import group_writes, insert_packs
from compiler.topi.vta.qnn import QLayer
from isa import HwConfig, load_config


@dataclass
class CompiledNetwork:
    """A quantized graph, its partition, one compiled program per accelerator group, the DRAM
    image's plan and the compiled host groups: everything a run needs but the device."""

    graph: Graph
    partition: Partition
    config: HwConfig
    layers: dict[str, QLayer] = field(default_factory=dict)
    compile_seconds: float = 0.0
    #: the whole network's DRAM image
    dram_plan: NetworkDram | None = None
    #: the host nodes, cut into groups compiled with the CPU backend (None: not compiled,
    #: ``compile_network(..., host_groups=False)``; such a network does not run)
    host_groups: list[HostGroup] | None = None
    #: the quantization scheme, in words (:func:`quantization_scheme`; empty when the graph
    #: came quantized)
    scheme: str = ""
    #: the tuning records the groups compiled with (:class:`compiler.model.tuning.NetworkTuning`:
    #: which groups were tuned, which fell back and why), or None
    tuning: Any = field(default=None, repr=False, compare=False)


def compile_group(group: AccelGroup, cfg: HwConfig, knobs: Any = None) -> QLayer:
    """One accelerator program for ``group``; a conv2d / dense group with ``knobs`` (a tuning
    record's, :func:`compiler.model.tuning.choose_knobs`; None: the heuristic's). Knobs that fail
    to compile leave the group to the heuristic's, the reason in the layer's ``fallback``."""
    if knobs is None:
        return compile_template(group, cfg, None)
    try:
        return compile_template(group, cfg, knobs)
    except CompilerError as e:
        layer = compile_template(group, cfg, None)
        return replace(layer, fallback=f"the record's knobs fail to compile: {e}")


def _compile_with(knobs: Mapping[str, Any], group: AccelGroup, cfg: HwConfig) -> QLayer:
    """:func:`compile_group` with the knobs chosen for ``group`` by name (picklable as a
    ``partial`` for worker processes)."""
    return compile_group(group, cfg, knobs.get(group.name))


def compile_tuned_groups(
    groups: Sequence[AccelGroup], cfg: HwConfig, tuning: Any, *, jobs: int = 1,
    cache: CompileCache | None = None, progress: bool | None = False, name: str = "",
    failed: dict[str, CompilerError] | None = None,
) -> dict[str, QLayer]:  # fmt: skip
    """Every group compiled (:func:`compiler.model.group_compile.compile_groups`: ``jobs``
    processes, ``cache``), a conv2d / dense group with the knobs of ``tuning``'s best record for
    it. The knobs are chosen here, before any compile, and are part of each group's cache key; what
    each group took (tuned, or the heuristic's and why) is noted in ``tuning`` afterwards, so
    the notes are the same whether a group was compiled here, in a worker or read from the
    cache. ``failed``: where the groups whose compile fails (the heuristic's too, after a
    record's knobs failed) are recorded with their error instead of raising it; they are
    missing from the result and noted nowhere in ``tuning`` (the partition says why)."""
    from functools import partial

    from compiler.model.tuning import choose_knobs

    if tuning is None:
        return compile_groups(groups, cfg, jobs=jobs, cache=cache, progress=progress, name=name,
                              failed=failed)  # fmt: skip
    chosen: dict[str, Any] = {}
    reasons: dict[str, str] = {}
    for group in groups:
        chosen[group.name], reasons[group.name] = choose_knobs(group, cfg, tuning)
    layers = compile_groups(groups, cfg, jobs=jobs, cache=cache,
                            compile_one=partial(_compile_with, chosen),
                            extra=lambda g: chosen[g.name], progress=progress,
                            name=name, failed=failed)  # fmt: skip
    for group in groups:
        if group.name not in layers:  # its compile failed: recorded in ``failed``
            continue
        knobs, layer = chosen[group.name], layers[group.name]
        if knobs is None:
            if reasons[group.name]:
                tuning.fall_back(group.name, reasons[group.name])
        elif layer.fallback:
            tuning.fall_back(group.name, layer.fallback)
        else:
            tuning.use(group.name, knobs)
    return layers


def compile_network_host_groups(graph: Graph, partition: Partition) -> list[HostGroup]:
    """The host nodes of ``partition`` cut into host groups (consecutive host nodes between
    accelerator groups), each compiled once with the CPU backend
    (:func:`compiler.model.host_groups.compile_host_groups`). A node the DRAM plan does in
    place (rule ``in-place``) is no host work.

    Example:
        >>> import numpy as np
        >>> from compiler.graph import Constant, Node, TensorType, Var
        >>> x = Var("x", TensorType((1, 3, 6, 6), "float32", "NCHW"))
        >>> w = Constant(np.ones((8, 3, 3, 3), np.float32), name="w")
        >>> g = Graph.from_outputs([x], [Node("conv2d", (x, w), {}, name="conv")])
        >>> net = compile_network(g, calibration={"x": np.ones((1, 3, 6, 6), np.float32)},
        ...                       host_groups=False)
        >>> [h.how for h in compile_network_host_groups(net.graph, net.partition)]
        ['host (compiled, group x.quantize)', 'host (compiled, group conv.read)']
    """
    in_group = {id(n) for g in partition.groups for n in g.nodes}
    done = {p.node for p in partition.placements if p.rule == IN_PLACE}
    return compile_host_groups(
        graph.nodes, graph.outputs, lambda n: id(n) not in in_group and n.label not in done
    )


def quantization_scheme(
    calibrator: str,
    requant: str,
    sensitivity: str | float | None = None,
    kept: int = 0,
    bias_correction: bool = True,
    chosen: float | None = None,
) -> str:
    """The int8 scheme a network was quantized with, in words (docs/quantization.md), with the
    sensitivity check's threshold (``chosen``: the one ``"auto"`` took) and the number of nodes
    it ``kept`` in fp32.

    >>> quantization_scheme("kl", "shift").split(", ")[0]
    'symmetric int8 activations per tensor (KL-divergence calibration)'
    >>> quantization_scheme("percentile", "vta").split("), ")[1].split(", ")[0]
    'symmetric int8 weights with one power-of-two scale per tensor'
    >>> quantization_scheme("kl", "shift", 0.05, 2).split("; ")[1]
    '2 nodes kept fp32 (own int8 error over 0.05, relative RMS against fp32)'
    """
    tries = sensitivity_thresholds(sensitivity)
    nodes = "node" if kept == 1 else "nodes"
    if tries is None:
        check = "; sensitivity check off: every node int8"
    elif len(tries) > 1:
        at = f"{chosen:g}" if chosen is not None else "?"
        check = (
            f"; {kept} {nodes} kept fp32 (own int8 error over {at}, relative RMS against fp32; "
            f"the threshold chosen automatically: the first of "
            f"{', '.join(f'{t:g}' for t in tries)} whose outputs keep a cosine of "
            f"{INT8_COSINE_TARGET:g} against fp32 on the calibration data)"
        )
    else:
        check = (
            f"; {kept} {nodes} kept fp32 (own int8 error over {tries[0]:g}, relative RMS "
            "against fp32)"
        )
    bias = "int32 bias (corrected on the calibration data)" if bias_correction else "int32 bias"
    calib = {"percentile": "percentile", "minmax": "min/max", "kl": "KL-divergence",
             "mse": "least squared error"}  # fmt: skip
    acts = f"symmetric int8 activations per tensor ({calib.get(calibrator, calibrator)} calibration"
    if requant == "vta":
        return (
            f"{acts}, scales snapped up to powers of two), symmetric int8 weights with one "
            f"power-of-two scale per tensor, {bias} and accumulation, requantization by one "
            f"shift per layer on the ALU (VTA's scheme){check}"
        )
    how = (
        "15-bit multiplier and shift"
        if requant == "multiplier"
        else "power-of-two shift (weight scales snapped)"
    )
    return (
        f"{acts}), symmetric int8 weights per output channel, {bias} and accumulation, "
        f"requantization by {how} on the ALU{check}"
    )


def quantize_partition(
    graph: Graph,
    cfg: HwConfig,
    *,
    calibration: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
    calibrator: str = "percentile",
    requant: str = "multiplier",
    cache: CompileCache | None = None,
    sensitivity: str | float | None = None,
    bias_correction: bool = True,
) -> tuple[Graph, Partition, bool]:
    """The int8 graph (``graph`` quantized on ``calibration`` unless it already is), its
    partition for ``cfg``, and whether ``graph`` was int8 already: the first half of
    :func:`compile_network`, which the tuner's task extraction shares. ``sensitivity``: the
    threshold over which a node's int8 error keeps it fp32 on the host
    (:mod:`compiler.quantize.sensitivity`; None: the default, ``"off"``: none).
    ``bias_correction``: correct the int8 layers' biases on the calibration data
    (:mod:`compiler.quantize.bias_correction`)."""
    quantized = any(n.op == "quantize" for n in graph.nodes)
    pipe = vta_pipeline(calibration=calibration, calibrator=calibrator, requant=requant,
                        cache=cache, sensitivity=sensitivity,
                        bias_correction=bias_correction)  # fmt: skip
    upto = [p.name for p in pipe.passes].index("partition") + 1
    built = run_build(NetworkBuild(graph, cfg), Pipeline(pipe.passes[:upto]))
    assert built.partition is not None
    return built.graph, built.partition, quantized


def warn_if_far_from_fp32(graph: Graph) -> None:
    """A :class:`compiler.errors.QuantizeWarning` when one of the int8 ``graph``'s outputs is
    under ``INT8_COSINE_TARGET`` (:mod:`compiler.quantize.sensitivity`, the target of
    ``--fp32-threshold auto``: cosine against the float graph's, the mean over the calibration
    batches, as quantization measured it), naming the output, the figure and what to try;
    nothing when it was not measured. PP-OCRv6's recognizer at the default threshold (0.85
    over 16 rendered lines) reads under half of the characters; PP-OCRv4's (0.965) reads
    within 2 points of fp32."""
    cosines = getattr(graph, "calibration_cosine", ())
    low = [(k, c) for k, c in enumerate(cosines) if c < INT8_COSINE_TARGET]
    if not low:
        return
    k, c = min(low, key=lambda kc: kc[1])
    # the model's output name (the quantizer names the edge node it ends in ``<name>.dequantize``)
    name = (getattr(graph.outputs[k], "label", "") or f"#{k}").removesuffix(".dequantize")
    kept = len(fp32_fallbacks(graph))
    warnings.warn(
        f"graph {graph.name}: int8 output {name!r} has cosine {c:.3f} against fp32 on its own "
        f"calibration data (under {INT8_COSINE_TARGET}; {kept} node(s) kept fp32): its int8 "
        "results may be far from the float model's; a lower --fp32-threshold (e.g. 0.03, or "
        "auto) keeps more nodes fp32, and more calibration data may help (docs/quantization.md)",
        QuantizeWarning,
        stacklevel=2,
    )


def compile_failure(error: CompilerError) -> str:
    """The ``compile-failed`` placement's reason for a group whose compile raised ``error``:
    one line (the error's first).

    >>> from compiler.errors import ScheduleError
    >>> compile_failure(ScheduleError("conv2d: no tiling fits\\nmore"))
    'the accelerator compile failed: conv2d: no tiling fits'
    """
    lines = str(error).strip().splitlines()
    return f"the accelerator compile failed: {lines[0] if lines else type(error).__name__}"


def compile_partition(
    graph: Graph, cfg: HwConfig, part: Partition, tuning: Any = None, *, jobs: int = 1,
    cache: CompileCache | None = None, progress: bool | None = False,
) -> tuple[Partition, dict[str, QLayer]]:  # fmt: skip
    """Compile the accelerator groups of ``part`` (:func:`compile_tuned_groups`); a group whose
    compile fails with a compiler error goes to the host: ``graph`` is partitioned again with
    its anchor excluded (rule ``compile-failed``, :func:`compile_failure`'s reason) and the
    groups left are compiled again. Excluding a group only takes groups away (the ones left
    are the same nodes under the same names), so the layers already compiled are kept by name
    and only a round's failures are new; the rounds end within the number of groups. Returns
    the final partition and its layers."""
    exclude: dict[str, str] = {}
    layers: dict[str, QLayer] = {}
    for _ in range(len(part.groups) + 1):
        todo = [g for g in part.groups if g.name not in layers]
        failed: dict[str, CompilerError] = {}
        compiled = compile_tuned_groups(
            todo, cfg, tuning, jobs=jobs, cache=cache, progress=progress, name=graph.name,
            failed=failed,
        )  # fmt: skip
        layers.update(compiled)
        if not failed:
            break
        exclude.update({name: compile_failure(e) for name, e in failed.items()})
        part = partition_graph(graph, cfg, exclude)
    kept = {g.name for g in part.groups}
    return part, {name: layer for name, layer in layers.items() if name in kept}


def compile_network(
    graph: Graph,
    config: str | HwConfig = "default",
    *,
    calibration: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
    calibrator: str = "percentile",
    requant: str = "multiplier",
    jobs: int = 1,
    cache: bool | CompileCache = True,
    tuning: Any = None,
    progress: bool | None = False,
    sensitivity: str | float | None = None,
    host_groups: bool = True,
    bias_correction: bool = True,
) -> CompiledNetwork:
    """Quantize (unless ``graph`` is already int8), partition and compile ``graph``.

    ``calibration``: one feed mapping or a list of them (the graph's input shapes); needed for
    a float graph. ``jobs``: worker processes compiling the accelerator groups (the programs
    are the same whatever the number). ``cache``: look the quantized graph and the compiled
    groups up in, and store them into, the compile cache of ``$VTAC_CACHE_DIR``
    (:mod:`compiler.cache`; ``False``: compile everything; or a
    :class:`compiler.cache.CompileCache` to use). ``tuning``: a
    :class:`compiler.model.tuning.NetworkTuning` (the best records of a tuning log) whose knobs
    the conv2d / dense groups compile with; it then says which groups were tuned and why the
    others fell back to the heuristic. ``progress``: a bar of the groups' compiles on stderr
    (None: on a terminal). ``sensitivity``, ``bias_correction``: see
    :func:`quantize_partition`. ``host_groups``:
    compile the host groups too (False: leave them None, for a caller that only shows where
    each node runs and how each group's inputs arrive).
    """
    cfg = load_config(config) if isinstance(config, str) else config
    t0 = time.perf_counter()
    pipe = vta_pipeline(
        calibration=calibration, calibrator=calibrator, requant=requant, jobs=jobs,
        cache=CompileCache.from_env() if cache is True else cache or None, tuning=tuning,
        progress=progress, sensitivity=sensitivity, host_groups=host_groups,
        bias_correction=bias_correction,
    )  # fmt: skip
    built = run_build(NetworkBuild(graph, cfg), pipe)
    assert built.partition is not None and built.dram_plan is not None
    net = CompiledNetwork(built.graph, built.partition, cfg, dict(built.layers))
    net.tuning, net.scheme, net.dram_plan = tuning, built.scheme, built.dram_plan
    net.host_groups = None if built.host_groups is None else list(built.host_groups)
    net.compile_seconds = time.perf_counter() - t0
    return net


@dataclass(frozen=True)
class NetworkBuild:
    """What the accelerator build's passes hand on: the graph (float, then int8), and, pass by
    pass, its partition, each accelerator group's compiled layer, the DRAM image's plan and the
    compiled host groups (None or empty until the pass that makes them has run)."""

    graph: Graph
    config: HwConfig
    partition: Partition | None = None
    layers: Mapping[str, QLayer] = field(default_factory=dict)
    dram_plan: NetworkDram | None = None
    host_groups: tuple[HostGroup, ...] | None = None
    #: the quantization scheme in words (empty when the graph came int8)
    scheme: str = ""
    #: whether the ``pack`` pass has run (every group input read in place or packed by the host)
    packed: bool = False


def vta_pipeline(
    *,
    calibration: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
    calibrator: str = "percentile",
    requant: str = "multiplier",
    jobs: int = 1,
    cache: CompileCache | None = None,
    tuning: Any = None,
    progress: bool | None = False,
    sensitivity: str | float | None = None,
    host_groups: bool = True,
    bias_correction: bool = True,
) -> Pipeline[NetworkBuild]:
    """The accelerator build as named passes (the options of :func:`compile_network`):

    1. ``quantize``: int8 quantization (:func:`compiler.quantize.quantize_graph` through the
       compile cache), unless the graph is int8 already;
    2. ``fuse_qprelu``: each int8 PReLU's four nodes become one ``qprelu``
       (:func:`compiler.quantize.fuse.fuse_qprelu`: one accelerator group instead of four);
    3. ``host_steps``: what the host computes before a group becomes graph nodes: a max
       pool's -128 padding a ``pad``, the first layer's channel fold an ``im2col``
       (:func:`compiler.targets.vta.host_steps.host_steps`);
    4. ``partition``: every node to the accelerator or the host (:func:`partition_graph`);
    5. ``compile_groups``: one program per accelerator group, a group whose compile fails
       sent to the host (:func:`compile_partition`);
    6. ``plan_dram``: the network's one DRAM image (:func:`plan_network_dram`);
    7. ``pack``: each group input the image does not hand over in place becomes a ``pack``
       node on the host and an ``unpack`` in the group that reads it
       (:func:`compiler.targets.vta.pack.insert_packs`);
    8. ``compile_host_groups``: the host groups for the CPU (left out with
       ``host_groups=False``).

    ``VTAC_VERIFY_IR=1`` checks the build after every pass (:func:`verify_build`: the graph,
    that the partition places every node once, that every group has its program, that no two
    live activations share a byte of the image, that every input tensor of a program is read in
    place or written from a host ``pack``); ``VTAC_DUMP_IR=partition,plan_dram`` (or
    ``all``) prints it after those passes (:func:`build_text`), ``VTAC_DUMP_DIR`` writes
    ``vta_NN_<pass>.txt`` files instead.

    Example:
        >>> vta_pipeline().names()
        ['quantize', 'fuse_qprelu', 'host_steps', 'partition', 'compile_groups', 'plan_dram', \
'pack', 'compile_host_groups']
    """

    def quantize(b: NetworkBuild) -> NetworkBuild:
        if any(n.op == "quantize" for n in b.graph.nodes):
            return b  # int8 already: no scheme to name
        if calibration is None:
            raise ModelError(f"graph {b.graph.name}: a float graph needs calibration data")
        batches = [calibration] if isinstance(calibration, Mapping) else list(calibration)
        graph = quantize_cached(b.graph, batches, calibrator=calibrator, requant=requant,
                                cache=cache, sensitivity=sensitivity,
                                bias_correction=bias_correction)  # fmt: skip
        kept = len(fp32_fallbacks(graph))
        scheme = quantization_scheme(calibrator, requant, sensitivity, kept, bias_correction,
                                     chosen=getattr(graph, "threshold", None))  # fmt: skip
        warn_if_far_from_fp32(graph)
        return replace(b, graph=graph, scheme=scheme)

    def fuse(b: NetworkBuild) -> NetworkBuild:
        graph = fuse_qprelu(b.graph)
        return b if graph is b.graph else replace(b, graph=graph)

    def lower_host_steps(b: NetworkBuild) -> NetworkBuild:
        graph = host_steps(b.graph, b.config)
        return b if graph is b.graph else replace(b, graph=graph)

    def partition(b: NetworkBuild) -> NetworkBuild:
        return replace(b, partition=partition_graph(b.graph, b.config))

    def compile_groups(b: NetworkBuild) -> NetworkBuild:
        assert b.partition is not None
        part, layers = compile_partition(b.graph, b.config, b.partition, tuning, jobs=jobs,
                                         cache=cache, progress=progress)  # fmt: skip
        return replace(b, partition=part, layers=layers)

    def plan_dram(b: NetworkBuild) -> NetworkBuild:
        assert b.partition is not None
        plan = plan_network_dram(b)  # type: ignore[arg-type]
        done = set(plan.in_place_nodes)
        placements = tuple(
            replace(p, device="vta", group=None, rule=IN_PLACE, reason=IN_PLACE_REASON[p.op])
            if p.node in done else p
            for p in b.partition.placements
        )  # fmt: skip
        return replace(b, dram_plan=plan, partition=replace(b.partition, placements=placements))

    def pack(b: NetworkBuild) -> NetworkBuild:
        assert b.partition is not None and b.dram_plan is not None
        aliased = {name: g.aliased for name, g in b.dram_plan.groups.items()}
        graph, part = insert_packs(b.graph, b.partition, aliased, b.config)
        packed = replace(b, graph=graph, partition=part, packed=True)
        check_group_writes(packed)  # always: an input left unwritten would run on zeros
        return packed

    def compile_host(b: NetworkBuild) -> NetworkBuild:
        assert b.partition is not None
        return replace(b, host_groups=tuple(compile_network_host_groups(b.graph, b.partition)))

    passes: list[Pass[NetworkBuild]] = [
        Pass("quantize", quantize),
        Pass("fuse_qprelu", fuse),
        Pass("host_steps", lower_host_steps),
        Pass("partition", partition),
        Pass("compile_groups", compile_groups),
        Pass("plan_dram", plan_dram),
        Pass("pack", pack),
    ]
    if host_groups:
        passes.append(Pass("compile_host_groups", compile_host))
    return Pipeline(tuple(passes))


def run_build(
    build: NetworkBuild, pipeline: Pipeline[NetworkBuild], options: PassOptions | None = None
) -> NetworkBuild:
    """Run the accelerator build's ``pipeline`` (:func:`vta_pipeline`) on ``build`` with the
    pass runner's verifier and dumps (:class:`compiler.passes.pipeline.PassOptions`)."""
    return pipeline.run(build, options, verifier=verify_build, printer=build_text,
                        dump_prefix="vta_")  # fmt: skip


def verify_build(b: NetworkBuild) -> None:
    """Raise :class:`compiler.errors.ModelError` (or the graph verifier's error) when the
    build is inconsistent: a malformed graph; a partition of another graph, or one that does
    not place every node exactly once or puts a group's node on the host; a group without its
    program or a program without its group; a DRAM plan whose live activations share a byte;
    after the ``pack`` pass, a program input neither read in place nor packed by the host
    (:func:`check_group_writes`)."""
    verify_graph(b.graph)
    part = b.partition
    if part is None:
        return
    if part.graph is not b.graph:
        raise ModelError(f"graph {b.graph.name}: the partition is of another graph")
    names = [n.name for n in b.graph.nodes]
    placed = [p.node for p in part.placements]
    if sorted(placed) != sorted(names):
        extra = sorted(set(placed) - set(names)) or sorted(set(names) - set(placed))
        raise ModelError(f"graph {b.graph.name}: the partition does not place every node "
                         f"exactly once (first difference: {extra[:3]})")  # fmt: skip
    for g in part.groups:
        for n in g.nodes:
            p = part.placement(n.name)
            if p.device != "vta" or p.group != g.name:
                raise ModelError(f"group {g.name}: node {n.name} is placed on {p.device} "
                                 f"(group {p.group})")  # fmt: skip
    if b.layers:
        groups = {g.name for g in part.groups}
        if set(b.layers) != groups:
            odd = sorted(groups ^ set(b.layers))
            raise ModelError(f"graph {b.graph.name}: groups and compiled programs differ: {odd}")
    if b.dram_plan is not None:
        check_plan(b.dram_plan)
    if b.packed:
        check_group_writes(b)


def check_group_writes(b: NetworkBuild) -> None:
    """Raise :class:`compiler.errors.ModelError` unless, after the ``pack`` pass, every input
    tensor of every group's program is read in place (the DRAM plan) or written by the host
    from a ``pack`` node on the host whose result is exactly that tensor (shape and dtype), and
    a group's ``store`` (the pack of the output the host reads back) is exactly its ``out``."""
    assert b.partition is not None and b.dram_plan is not None
    part = b.partition
    for g in part.groups:
        symbols = b.layers[g.name].program.symbols
        writes = group_writes(g)
        fed = set(b.dram_plan.groups[g.name].aliased) | {symbol for symbol, _ in writes}
        unfed = sorted(n for n, sym in symbols.items() if sym.role == "input" and n not in fed)
        if unfed:
            raise ModelError(f"group {g.name}: input tensor(s) {unfed} of its program are "
                             "neither read in place nor written by the host")  # fmt: skip
        out = symbols["out"]
        if g.store is not None and (g.store.type.shape, g.store.type.dtype) != (
            tuple(out.shape),
            str(out.dtype),
        ):
            raise ModelError(f"group {g.name}: its store {g.store.name} is {g.store.type}, but "
                             f"the program's 'out' is {out.dtype}{list(out.shape)}")  # fmt: skip
        for symbol, pack in writes:
            sym = symbols.get(symbol)
            if sym is None:
                raise ModelError(f"group {g.name}: the host writes {symbol!r}, which is not "
                                 "a symbol of its program")  # fmt: skip
            if part.placement(pack.name).device != "cpu":
                raise ModelError(f"group {g.name}: {symbol!r} is packed by {pack.name}, which "
                                 "is not placed on the host")  # fmt: skip
            if tuple(sym.shape) != pack.type.shape or str(sym.dtype) != pack.type.dtype:
                raise ModelError(
                    f"group {g.name}: {pack.name} gives {pack.type}, but the program's "
                    f"{symbol!r} is {sym.dtype}{list(sym.shape)}"
                )


def build_text(b: NetworkBuild) -> str:
    """The build as text, for ``VTAC_DUMP_IR``: the graph, then what the passes so far made
    (the partition table, each group's program size, the DRAM image's layout, the host
    groups)."""
    parts = [to_text(b.graph)]
    if b.partition is not None:
        parts.append(b.partition.table() + "\n")
    if b.layers:
        lines = [f"{name}: {layer.program.insn_count} instructions, {layer.macs} MACs"
                 for name, layer in b.layers.items()]  # fmt: skip
        parts.append("\n".join(lines) + "\n")
    if b.dram_plan is not None:
        d = b.dram_plan
        parts.append(
            f"DRAM image: {d.dram.nbytes} bytes, static part {d.static_bytes}, "
            f"activations {d.activation_bytes} from byte {d.activation_base}\n"
        )
    if b.host_groups is not None:
        parts.append("\n".join(f"{h.name}: {h.how}" for h in b.host_groups) + "\n")
    return "".join(parts)


__all__ = [
    "CompiledNetwork",
    "NetworkBuild",
    "build_text",
    "check_group_writes",
    "run_build",
    "verify_build",
    "vta_pipeline",
    "compile_failure",
    "compile_group",
    "compile_network",
    "compile_network_host_groups",
    "compile_partition",
    "compile_tuned_groups",
    "quantization_scheme",
    "quantize_partition",
]
