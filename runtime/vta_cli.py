"""The ``vta`` target of ``vtac graph`` and ``vtac run``.

* ``vtac graph MODEL --target vta [--config NAME]`` quantizes the model (calibrated on seeded
  random data: where a node runs does not depend on the scales), partitions it and prints one
  line per node: device, accelerator group, the rule that decided and its limit.
* ``vtac run MODEL --target vta [--config NAME] [--calibrate DATA] [--input FILE]
  [--output OUT.npz] [--json] [--trace FILE] [--device sim|rtl]`` quantizes (calibrated on
  ``--calibrate``, an ``.npy``, an ``.npz`` or a folder of images preprocessed as the input,
  or on the input itself), compiles every accelerator group, runs them on the
  simulator and the rest on the host, and prints the outputs and the per-layer table;
  ``--json`` prints ``{"outputs": ..., "layers": [...], "total_cycles": N, ...}``; ``--trace``
  writes one
  Perfetto trace of the whole network (a slice per accelerator group); ``--device rtl
  [--simulator icarus|verilator]`` runs every accelerator group on the RTL and on the
  simulator, prints per group that the RTL ran and whether it equals the simulator byte for
  byte and cycle for cycle, and exits 1 when a group differs (:mod:`runtime.vta_rtl`).
* ``vtac compile MODEL --target vta [--config NAME] [--calibrate DATA.npy] [--jobs N]
  [--no-cache] -o A`` quantizes
  (calibrated on ``--calibrate``, else on seeded random data, said on stderr), partitions and
  compiles the network once and writes its artifact (:mod:`runtime.vta_artifact`, which keeps
  each group's knobs);
  ``vtac run A`` loads it and runs it, printing the same as ``vtac run MODEL --target vta``,
  without quantizing or compiling.
* ``--jobs N`` compiles the accelerator groups in N worker processes; compiled groups are
  kept in the compile cache (:mod:`compiler.cache`) unless ``--no-cache`` is given (both on
  ``compile`` and ``run``).
* ``--tuning-log LOG`` (``vtac run`` / ``vtac compile`` of a model): the conv2d and dense
  groups compile with the knobs of the best records of a ``vtac tune MODEL --target vta`` log
  (:mod:`compiler.model.tuning`); stderr lists the groups tuned and, with the reason, those left
  to the heuristic (no record, or knobs that fail to compile).
* An option that does not apply to the chosen target is refused by name
  (:func:`check_target_options`).

"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import numpy as np

from runtime.errors import SessionError


def _float_graph(
    args: argparse.Namespace, input_shapes: dict[str, tuple[int, ...]] | None = None
) -> Any:
    """The float graph for ``--input-shape`` and the shapes the feeds gave (``input_shapes``)."""
    from runtime.graph_cli import load

    shapes = {**dict(getattr(args, "input_shape", None) or []), **(input_shapes or {})}
    return load(args.model, args.image_size, args.batch or 1, shapes or None)


def _declared_specs(args: argparse.Namespace) -> list[Any]:
    """The model's inputs before its graph is built: free dimensions not given by
    ``--input-shape`` are ``-1`` (the feeds give them)."""
    from onnx.helper import tensor_dtype_to_np_dtype

    from compiler.frontend.shapes import declared_inputs, resolve_input_shapes
    from compiler.model.program import TensorSpec
    from runtime.session import load_onnx

    proto = load_onnx(args.model, image_size=args.image_size, batch=args.batch)
    given = dict(getattr(args, "input_shape", None) or [])
    shapes = resolve_input_shapes(proto, given, hint="--input-shape", partial=True)
    dtypes = {d.name: d.elem_type for d in declared_inputs(proto)}

    return [
        TensorSpec(n, shape, str(tensor_dtype_to_np_dtype(dtypes[n])))
        for n, shape in shapes.items()
    ]


def graph_command(args: argparse.Namespace) -> int:
    """``vtac graph MODEL --target vta``: the partition table. Its groups are compiled
    (through the compile cache, so a later compile of the model reads them back) because a
    group whose compile fails runs on the host (rule ``compile-failed``): the table shows
    where each node will run, not only where the rules would put it."""
    from compiler.model.program import TensorSpec
    from compiler.model.vta import compile_network
    from isa import load_config
    from runtime.model_cli import random_inputs

    cfg = load_config(args.config or "default")
    graph = _float_graph(args)
    specs = [TensorSpec(v.name, tuple(v.type.shape), str(v.type.dtype)) for v in graph.inputs]
    feed = random_inputs(specs, 0)  # each input's own dtype (an image model may take uint8)
    net = compile_network(graph, cfg, calibration=feed, host_groups=False,
                          calibrator=getattr(args, "calibrator", None) or "percentile",
                          sensitivity=getattr(args, "fp32_threshold", None),
                          progress=getattr(args, "progress", False) or None)  # fmt: skip
    part = net.partition
    print(f"# {graph.name} on {cfg.name}: {len(part.groups)} accelerator groups, "
          f"{len(part.host_nodes())} host nodes")  # fmt: skip
    print(part.table())
    print()
    print("# what each group reads: in place from the group that stored it, or what a host "
          "pack node wrote")  # fmt: skip
    print(_group_inputs_table(net))
    return 0


def _group_inputs_table(net: Any) -> str:
    """Per accelerator group and input (``data``, ``residual``, a matmul's ``weight``): the
    value it reads and how it gets there: read in place from the group that stored it (the
    linker's plan), or written by the host from a ``pack`` node
    (:mod:`compiler.targets.vta.pack`)."""
    from compiler.graph import Node
    from compiler.targets.vta.pack import group_inputs
    from isa.report import Column, format_table

    def _label(v: Any) -> str:
        return str(v.label if isinstance(v, Node) else v.name)

    rows = []
    for g in net.partition.groups:
        image = net.dram_plan.groups[g.name]
        for symbol, value in group_inputs(g):
            pack = value.inputs[0] if isinstance(value, Node) and value.op == "unpack" else None
            if isinstance(pack, Node):
                source = _label(pack.inputs[0])
                b, c = pack.attrs["blocks"]
                how = (f"packed by host node {pack.name} ({pack.attrs['layout']}, {b}x{c} "
                       "blocks)")  # fmt: skip
            else:
                source = _label(value)
                via = image.producers.get(symbol, source)
                # a producing group's name, or the slice or concat of group outputs it reads
                what = via if " " in via else f"group {via}'s output"
                how = f"read in place from {what}"
            rows.append((g.name, symbol, source, how))
    columns = [Column("group"), Column("input"), Column("value"), Column("how")]
    return format_table(columns, rows)


def run_command(args: argparse.Namespace) -> int:
    """``vtac run MODEL --target vta``."""
    from compiler.model.calibration import calibration_feeds
    from compiler.model.program import TensorSpec
    from runtime.model_cli import parse_inputs, random_inputs
    from runtime.vta_target import compile_network

    if args.output and not args.output.endswith(".npz"):
        raise SessionError(f"--output {args.output}: the file must end in .npz")
    tuning = _tuning(args)  # a log that cannot be used is refused before any work
    declared = _declared_specs(args)
    if args.input:
        feeds = parse_inputs(args.input, declared, args)
    else:
        feeds = random_inputs(declared, args.seed)
        if not getattr(args, "quiet", False):
            print(f"vtac run: no --input given: feeding seeded random data (seed {args.seed})",
                  file=sys.stderr)  # fmt: skip
    # free dimensions come from the feeds, as onnxruntime takes them
    free = {s.name for s in declared if -1 in s.shape}
    graph = _float_graph(args, {n: tuple(a.shape) for n, a in feeds.items() if n in free})
    specs = [TensorSpec(v.name, v.type.shape, v.type.dtype) for v in graph.inputs]
    if args.calibrate:
        data = _read_calibration(args, specs)
        calibration: Any = calibration_feeds(specs, data, what="--calibrate")
    else:
        calibration = feeds
    net = compile_network(graph, args.config or "default", calibration=calibration,
                          calibrator=args.calibrator or "percentile",
                          requant=args.requant or "multiplier",
                          sensitivity=args.fp32_threshold,
                          jobs=args.jobs or 1, cache=not args.no_cache,
                          tuning=tuning, progress=args.progress or None)  # fmt: skip
    _tuning_report(args, tuning)
    device = args.device or "sim"
    result = net.run(feeds, trace=args.trace is not None, device=device,
                     simulator=getattr(args, "simulator", None),
                     progress=_progress(args, device))  # fmt: skip
    return _report(args, _output_names(args), result)


def _tuning(args: argparse.Namespace) -> Any:
    """``--tuning-log``'s records for ``--config``
    (:func:`compiler.model.tuning.load_network_tuning`), or None."""
    log = getattr(args, "tuning_log", None)
    if log is None:
        return None
    from compiler.model.tuning import load_network_tuning

    return load_network_tuning(log, args.config or "default")


def _tuning_report(args: argparse.Namespace, tuning: Any) -> None:
    """Which groups compiled with tuned knobs and why the others fell back, on stderr."""
    if tuning is None:
        return
    for line in tuning.report().splitlines():
        print(f"vtac {args.command}: {line}", file=sys.stderr)


def _progress(args: argparse.Namespace, device: str) -> bool:
    """A bar of the accelerator groups of an RTL run: with ``--progress``, or on a terminal."""
    return device == "rtl" and (bool(getattr(args, "progress", False)) or sys.stderr.isatty())


def _output_names(args: argparse.Namespace) -> list[str]:
    """The model's own output names, as onnxruntime and the cpu target give them."""
    from runtime.session import load_onnx

    proto = load_onnx(args.model, image_size=args.image_size, batch=args.batch)
    return [o.name for o in proto.graph.output]


def _report(args: argparse.Namespace, names: list[str], result: Any) -> int:
    """Print (or save) the outputs and the per-layer table of one network run; the trace and
    the outputs file are written together or not at all."""
    from isa.outputs import OutputFiles
    from runtime.model_cli import describe_output, format_output, write_npz

    outs = dict(zip(names, result.outputs, strict=True))
    with OutputFiles() as files:
        if args.trace is not None:
            result.save_trace(str(files.reserve(args.trace, "--trace")))
        if args.output:
            write_npz(files.reserve(args.output, "--output"), outs)
        if getattr(args, "plot", None):
            from vta_sim.plot import save_network_figure

            layers = [r for r in result.layers if r.device == "vta"]
            save_network_figure(result.config, layers, files.reserve(args.plot, "--plot"))
    described = {n: describe_output(a) for n, a in outs.items()}
    status = _rtl_status(result)
    if args.json:
        print(json.dumps({"outputs": described, **result.to_json()}, allow_nan=False))
        return status
    for n, d in described.items():
        print(format_output(n, d))
    print()
    quiet = getattr(args, "quiet", False)
    if result.rtl_checks:
        for check in result.rtl_checks if not quiet else []:
            print(f"rtl  {check.line()}")
        agree = sum(c.equal for c in result.rtl_checks)
        print(f"rtl  {agree} of {len(result.rtl_checks)} accelerator groups equal the simulator "
              "byte for byte and cycle for cycle\n")  # fmt: skip
    if quiet:
        print(f"total: {result.total_cycles:,} accelerator cycles, "
              f"{result.energy_pj * 1e-6:,.1f} uJ at 45 nm ({result.config.name})")  # fmt: skip
        return status
    print(result.table())
    if args.trace is not None:
        print(f"trace written to {args.trace}")
    if args.output:
        print(f"outputs saved to {args.output}")
    if getattr(args, "plot", None):
        print(f"per-layer figure written to {args.plot}")
    return status


def _rtl_status(result: Any) -> int:
    """1 (and a line on stderr naming each differing group) when the RTL differs from the
    simulator, else 0."""
    from runtime.vta_rtl import disagreement

    message = disagreement(result.rtl_checks)
    if message is None:
        return 0
    print(f"vtac run: {message}", file=sys.stderr)
    return 1


def _read_calibration(args: argparse.Namespace, specs: list[Any]) -> np.ndarray:
    """``--calibrate``'s data (an .npy, an .npz or a folder of images, preprocessed as the
    input is) for the model's one input."""
    from runtime.inputs import load_calibration

    if len(specs) != 1:
        raise SessionError("--calibrate: only single-input models are supported")
    return load_calibration(
        args.calibrate,
        specs[0],
        preprocess=getattr(args, "preprocess", "imagenet"),
        resize=getattr(args, "resize", None),
    )


def compile_command(args: argparse.Namespace) -> int:
    """``vtac compile MODEL --target vta [--config C] [--calibrate D.npy] -o A``: quantize,
    partition and compile the network once and write its artifact (:mod:`runtime.vta_artifact`)."""
    from runtime.vta_session import VtaInferenceSession

    _tuning(args)  # a log that cannot be used is refused before any work
    calibration = _read_calibration(args, _declared_specs(args)) if args.calibrate else None
    if calibration is None:
        print("vtac compile: no --calibrate given: calibrating on seeded random data (scales "
              "unrelated to real inputs)", file=sys.stderr)  # fmt: skip
    sess = VtaInferenceSession(
        args.model, "vta", config=args.config, calibration=calibration,
        calibrator=args.calibrator, requant=args.requant, sensitivity=args.fp32_threshold,
        image_size=args.image_size, batch=args.batch,
        input_shapes=dict(getattr(args, "input_shape", None) or []) or None,
        jobs=args.jobs or 1, cache=not args.no_cache,
        tuning_log=getattr(args, "tuning_log", None), progress=args.progress or None,
    )  # fmt: skip
    _tuning_report(args, sess.tuning)
    prog = sess.program
    sess.save(args.output)
    groups = sum(k.target == "vta" for k in prog.kernels)
    hosts = sum(k.target == "cpu" for k in prog.kernels)
    print(
        f"compiled {prog.name} for vta ({sess.config.name}) in {sess.compile_seconds:.2f} s: "
        f"{groups} accelerator groups, {hosts} host groups, DRAM image "
        f"{sess.accel.dram.size / 2**20:.2f} MiB, host arena {prog.arena_bytes / 2**20:.2f} MiB "
        f"(naive {prog.memory.naive_bytes / 2**20:.2f}) -> {args.output}"
    )
    return 0


def run_artifact_command(args: argparse.Namespace) -> int:
    """``vtac run A.vtac`` of an accelerator network: load it (nothing is compiled) and run
    it once, printing what ``vtac run MODEL --target vta`` prints."""
    from runtime.model_cli import parse_inputs, random_inputs
    from runtime.vta_session import VtaInferenceSession

    if args.output and not args.output.endswith(".npz"):
        raise SessionError(f"--output {args.output}: the file must end in .npz")
    sess = VtaInferenceSession(args.model, "vta", config=args.config, device=args.device,
                               simulator=getattr(args, "simulator", None))  # fmt: skip
    specs = sess.get_inputs()
    if args.input:
        feeds = parse_inputs(args.input, specs)
    else:
        feeds = random_inputs(specs, args.seed)
        if not getattr(args, "quiet", False):
            print(f"vtac run: no --input given: feeding seeded random data (seed {args.seed})",
                  file=sys.stderr)  # fmt: skip
    from runtime.session import check_feeds

    result = sess.executor.run(check_feeds(specs, feeds), trace=args.trace is not None,
                               device=sess.device, rtl=sess.rtl,
                               progress=_progress(args, sess.device))  # fmt: skip
    return _report(args, [s.name for s in sess.get_outputs()], result)


#: Options that apply to one target only: option, argparse dest, the targets it applies to.
TARGET_OPTIONS = (
    ("--config", "config", ("vta",)),
    ("--calibrate", "calibrate", ("vta",)),
    ("--calibrator", "calibrator", ("vta",)),
    ("--requant", "requant", ("vta",)),
    ("--fp32-threshold", "fp32_threshold", ("vta",)),
    ("--trace", "trace", ("vta",)),
    ("--device", "device", ("vta",)),
    ("--simulator", "simulator", ("vta",)),
    ("--jobs", "jobs", ("vta",)),
    ("--no-cache", "no_cache", ("vta",)),
    ("--tuning-log", "tuning_log", ("cpu", "vta")),
    ("--threads", "threads", ("cpu", "gpu")),
    ("--repeat", "repeat", ("cpu", "gpu")),
)


def check_target_options(args: argparse.Namespace, target: str, artifact: bool) -> None:
    """Refuse, by name, an option given that does not apply to ``target`` (or to an artifact,
    already compiled)."""
    for option, dest, targets in TARGET_OPTIONS:
        if getattr(args, dest, None) is None:
            continue
        if target not in targets:
            raise SessionError(f"{option} applies to --target {' or '.join(targets)}, not to "
                               f"{target}")  # fmt: skip
    if getattr(args, "simulator", None) is not None and getattr(args, "device", None) != "rtl":
        raise SessionError("--simulator picks the HDL simulator of --device rtl")
    for option, dest in (("--calibrate", "calibrate"), ("--calibrator", "calibrator"),
                         ("--requant", "requant"),
                         ("--fp32-threshold", "fp32_threshold"),
                         ("--jobs", "jobs"), ("--no-cache", "no_cache")):  # fmt: skip
        if artifact and getattr(args, dest, None) is not None:
            raise SessionError(f"{option} applies when a model is compiled, not to an artifact")
    if artifact and getattr(args, "tuning_log", None) is not None:
        raise SessionError("--tuning-log applies when a model is compiled, not to an artifact "
                           "(it keeps the knobs it was compiled with)")  # fmt: skip


__all__ = [
    "check_target_options",
    "compile_command",
    "graph_command",
    "run_artifact_command",
    "run_command",
]
