"""``vtac compile`` and ``vtac run``: whole models on the CPU or the accelerator.

* ``vtac compile MODEL -o ARTIFACT [--target cpu] [--image-size N] [--batch N] [--threads N]
  [--input-shape NAME=D0,D1,...] [--progress]`` compiles an ONNX file or a zoo name
  (``resnet18``, ``digits``, ...) into one artifact file (see :mod:`runtime.artifact`); with
  ``--target vta [--config C] [--calibrate DATA] [--calibrator percentile|minmax|kl|mse]
  [--requant multiplier|shift|vta] [--fp32-threshold X|off] [--jobs N] [--no-cache]`` it
  quantizes, partitions and compiles the network for the accelerator (the groups in ``N``
  processes, through the compile cache unless ``--no-cache``, ``docs/cache.md``) into one
  artifact
  (:mod:`runtime.vta_artifact`, :mod:`runtime.vta_cli`);
* ``vtac run MODEL|ARTIFACT [--input x.npy | --input NAME=x.npy | --input feeds.npz |
  --input IMAGE ...] [--preprocess imagenet|unit|symmetric] [--resize MODE]
  [--input-shape NAME=D0,D1,...] [--target cpu] [--output out.npz] [--json]`` runs it once and
  prints every output (the top-5 classes of a classifier's scores, otherwise shape, dtype,
  min, max and mean) and the per-group profile.
  Without ``--input`` it feeds seeded random data and says so on stderr. ``--output`` saves
  every output under its ONNX name; ``--json`` prints one JSON object
  ``{"outputs": {name: {shape, dtype, top5?, ...}}, "groups": [...], "total_us": ...}``.
  An artifact runs on the target it was compiled for (a vta artifact prints what
  ``vtac run MODEL --target vta`` prints, without quantizing or compiling).

An option that does not apply to the target (``--config``, ``--calibrate``, ``--calibrator``,
``--trace``, ``--device``, ``--requant``, ``--fp32-threshold``, ``--jobs`` or ``--no-cache`` on
cpu or gpu; ``--threads`` on vta; ``--calibrate``, ``--calibrator``, ``--requant``,
``--fp32-threshold``, ``--tuning-log``, ``--jobs`` or ``--no-cache`` with an artifact)
is refused by name, not ignored.

Inputs are read by :mod:`runtime.inputs` (arrays, archives, images). A model's free (symbolic)
input dimensions come from ``--input-shape`` or, for ``run``, from the arrays given.

Errors (a missing file, a malformed model, a feed of the wrong shape) print one line through the
dispatcher: ``vtac run: error: ...``.

Example:
    >>> import argparse
    >>> sub = argparse.ArgumentParser(prog="vtac").add_subparsers()
    >>> add_parser(sub)
    >>> args = sub.choices["run"].parse_args(["m.vtac", "--input", "data=x.npy", "--json"])
    >>> args.model, args.input, args.json, args.target
    ('m.vtac', ['data=x.npy'], True, None)
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from runtime.inputs import add_image_options, add_input_shape_option, free_dims, read_inputs

#: An output is shown as a classifier's scores when it is 2-D with at least this many classes.
TOP_K = 5


def fp32_threshold(text: str) -> str:
    """An ``--fp32-threshold`` value: a positive number, ``off`` or ``auto``, checked here so
    that a bad one is refused before any work."""
    from compiler.quantize import QuantizeError, sensitivity_thresholds

    try:
        sensitivity_thresholds(text)
    except QuantizeError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def add_requant_option(p: argparse.ArgumentParser, what: str) -> None:
    """``--requant multiplier|shift|vta`` (docs/quantization.md); ``what``: where it applies."""
    from compiler.quantize.realize import REQUANT_MODES

    p.add_argument(
        "--requant", default=None, choices=list(REQUANT_MODES),
        help=f"{what}: the requantization (docs/quantization.md): multiplier (the default), "
        "shift, or vta (VTA's scheme: power-of-two scales, one shift per layer)",
    )  # fmt: skip


def add_calibrator_option(p: argparse.ArgumentParser, what: str) -> None:
    """``--calibrator percentile|minmax|kl|mse`` (docs/quantization.md); ``what``: where it
    applies."""
    from compiler.quantize import CALIBRATORS

    p.add_argument(
        "--calibrator", default=None, choices=list(CALIBRATORS),
        help=f"{what}: how each activation's int8 range is chosen from the calibration data "
        "(docs/quantization.md): percentile (99.99 %%, the default), minmax, kl (TensorRT's "
        "entropy) or mse (least squared error)",
    )  # fmt: skip


def add_fp32_threshold_option(p: argparse.ArgumentParser) -> None:
    """``--fp32-threshold X|off`` (docs/quantization.md)."""
    from compiler.quantize import DEFAULT_SENSITIVITY

    p.add_argument(
        "--fp32-threshold", dest="fp32_threshold", type=fp32_threshold, default=None,
        metavar="X|off|auto",
        help="--target vta: a node whose own int8 error (relative RMS against fp32 on the "
        f"calibration data) exceeds X stays fp32 on the host (default {DEFAULT_SENSITIVITY:g}; "
        "off: every node int8; auto: the first of 0.1, 0.05, 0.03, 0.02, 0.01 whose int8 "
        "outputs keep a cosine of 0.9 against fp32 on the calibration data)",
    )  # fmt: skip


def add_parser(subparsers: Any) -> None:
    """Register ``compile`` and ``run``."""
    c = subparsers.add_parser(
        "compile",
        help="compile an ONNX model (or a zoo name) into an artifact file",
        description="Import an ONNX model, optimize the graph, compile every fused group for the "
        "target and write one artifact file that `vtac run` executes without the model.",
    )
    c.add_argument(
        "model", help="an ONNX file or a zoo name (resnet18, resnet34, resnet50, digits)"
    )
    c.add_argument("-o", "--output", required=True, metavar="ARTIFACT", help="the file to write")
    _common(c)
    c.set_defaults(run=_compile)

    r = subparsers.add_parser(
        "run",
        help="run an ONNX model, a zoo name or an artifact once, with its per-group profile",
        description="Compile (unless given an artifact) and run a model once; print its outputs "
        "(top-5 classes for a classifier) and the time of every fused group.",
    )
    r.add_argument("model", help="an artifact, an ONNX file or a zoo name")
    r.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="[NAME=]FILE",
        help="an input: X.npy, an image, or FEEDS.npz (arrays by input name); NAME= may be left "
        "out for a single-input model; repeatable",
    )
    r.add_argument("--output", metavar="OUT.npz", help="save every output under its ONNX name")
    r.add_argument("--json", action="store_true", help="print the outputs and profile as JSON")
    r.add_argument("--seed", type=_seed, default=0,
                   help="seed of the random input (0 to 2**32-1; default 0)")  # fmt: skip
    r.add_argument(
        "--device", choices=["sim", "rtl"], default=None,
        help="--target vta: run accelerator groups on the simulator (default) or on the RTL, "
        "each RTL run checked against the simulator byte for byte and cycle for cycle",
    )  # fmt: skip
    r.add_argument(
        "--simulator", choices=["icarus", "verilator"], default=None,
        help="--device rtl: the HDL simulator (default: icarus; verilator builds once per "
        "config, about a minute, and runs whole networks far faster)",
    )  # fmt: skip
    r.add_argument(
        "--trace", metavar="FILE.json", default=None,
        help="--target vta: write one Perfetto trace of the whole network",
    )  # fmt: skip
    r.add_argument(
        "--plot", metavar="FILE.png", default=None,
        help="draw the per-layer figure (vta: stall bars and roofline; cpu/gpu: group times)",
    )  # fmt: skip
    r.add_argument(
        "--quiet", action="store_true",
        help="print the outputs and one line of totals: no per-group table, legend or notices",
    )  # fmt: skip
    r.add_argument(
        "--repeat", type=_positive_runs, default=None, metavar="N",
        help="cpu/gpu: run N times and report each group's median time (default 1)",
    )  # fmt: skip
    _common(r)
    r.set_defaults(run=_run)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--target", default=None, choices=["cpu", "gpu", "vta"],
        help="where groups run: cpu (LLVM; the default, or an artifact's own target) or gpu "
        "(CUDA through numba; numba's CUDA simulator when NUMBA_ENABLE_CUDASIM=1; `run` only) "
        "or vta (int8 on the accelerator's simulator, the rest on the host)",
    )  # fmt: skip
    p.add_argument(
        "--config", default=None,
        help="--target vta: the accelerator config (default: default)",
    )  # fmt: skip
    p.add_argument(
        "--calibrate", metavar="DATA", default=None,
        help="--target vta: calibration inputs, an .npy, an .npz or a folder of images (a "
        "multiple of the batch; default: the input)",
    )  # fmt: skip
    p.add_argument(
        "--jobs", type=_positive_jobs, default=None, metavar="N",
        help="--target vta: worker processes compiling the accelerator groups (default 1; the "
        "programs are the same whatever N)",
    )  # fmt: skip
    p.add_argument(
        "--no-cache", dest="no_cache", action="store_const", const=True, default=None,
        help="--target vta: compile every accelerator group, neither reading nor writing the "
        "compile cache ($VTAC_CACHE_DIR; `vtac cache info`)",
    )  # fmt: skip
    add_calibrator_option(p, "--target vta")
    add_requant_option(p, "--target vta")
    add_fp32_threshold_option(p)
    add_input_shape_option(p)
    add_image_options(p)
    p.add_argument("--image-size", type=int, default=None, help="zoo models: image height/width")
    p.add_argument("--batch", type=int, default=None, help="zoo models: batch size")
    p.add_argument(
        "--threads", type=int, default=None,
        help="threads of the CPU kernels (default: VTAC_NUM_THREADS or every CPU)",
    )  # fmt: skip
    p.add_argument(
        "--tuning-log", metavar="LOG.jsonl", default=None,
        help="compile with the best records of a `vtac tune` log (--target cpu or vta; tasks "
        "without records keep the default schedule, and are listed)",
    )  # fmt: skip
    p.add_argument(
        "--progress", action="store_true",
        help="show a progress bar while compiling, of the accelerator groups of --device rtl, "
        "and of the kernels of a gpu run on numba's CUDA simulator (default: when stderr is a "
        "terminal)",
    )  # fmt: skip


def _session(args: argparse.Namespace) -> Any:
    from runtime.session import InferenceSession

    if args.target == "gpu":  # decided before anything imports numba.cuda
        from runtime.gpu_layer import select_cuda_backend

        select_cuda_backend(f"vtac {args.command}")

    sess = InferenceSession(
        args.model,
        args.target,
        image_size=args.image_size,
        batch=args.batch,
        num_threads=args.threads,
        progress=True if args.progress else None,
        tuning_log=args.tuning_log,
        input_shapes=dict(args.input_shape) or None,
    )
    if sess.tuning is not None:
        for line in sess.tuning.report().splitlines():
            print(f"vtac {args.command}: {line}", file=sys.stderr)
    return sess


def _mib(n: int) -> str:
    return f"{n / 2**20:.2f} MiB"


def resolve_target(args: argparse.Namespace) -> bool:
    """Set ``args.target`` (an artifact's own target when not given, else cpu) and refuse the
    options that do not apply to it; returns whether ``args.model`` is an artifact."""
    from runtime.artifact import artifact_kind
    from runtime.session import is_artifact_source
    from runtime.vta_cli import check_target_options

    artifact = is_artifact_source(args.model)
    if args.target is None:
        args.target = artifact_kind(args.model) if artifact else "cpu"
    check_target_options(args, args.target, artifact)
    return artifact


def _compile(args: argparse.Namespace) -> int:
    from isa.outputs import check_output_path
    from runtime.errors import SessionError

    resolve_target(args)
    check_output_path(args.output, "-o")  # before any work: a directory, a missing folder
    if args.target == "vta":
        from runtime.vta_cli import compile_command

        return compile_command(args)
    if args.target == "gpu":
        raise SessionError(
            "artifacts hold CPU or accelerator code only; run the model with --target gpu "
            "instead (GPU kernels are compiled for the device in the session that runs them)"
        )
    sess = _session(args)
    free = free_dims(sess.get_inputs())
    if free:
        raise SessionError(
            f"{free[0]} is free (symbolic): give a static shape with --input-shape NAME=D0,D1,..."
        )
    prog = sess.program
    sess.save(args.output)
    consts = sum(a.nbytes for a in prog.constants.values())
    distinct = len({(k.symbol, k.code) for k in prog.kernels})
    print(
        f"compiled {prog.name} for {prog.target} in {sess.compile_seconds:.2f} s: "
        f"{len(prog.kernels)} groups ({distinct} distinct kernels), constants {_mib(consts)}, "
        f"activation arena {_mib(prog.memory.peak_bytes)} "
        f"(naive {_mib(prog.memory.naive_bytes)}) -> {args.output}"
    )
    return 0


def parse_inputs(
    specs: list[str], inputs: list[Any], args: argparse.Namespace | None = None
) -> dict[str, np.ndarray]:
    """Load ``--input`` arguments: ``NAME=FILE``, ``FILE`` for a single-input model, or an
    ``.npz`` of arrays by input name (:func:`runtime.inputs.read_inputs`; images are
    preprocessed as ``args.preprocess`` and ``args.resize`` say).

    Example:
        >>> from compiler.model.program import TensorSpec
        >>> parse_inputs(["nope.npy"], [TensorSpec("a", (1,), "float32"),
        ...                             TensorSpec("b", (1,), "float32")])
        Traceback (most recent call last):
        ...
        runtime.errors.FeedError: --input nope.npy: the model has 2 inputs (a, b): write NAME=FILE
    """
    return read_inputs(
        specs,
        inputs,
        preprocess=getattr(args, "preprocess", "imagenet"),
        resize=getattr(args, "resize", None),
    )


def random_inputs(inputs: list[Any], seed: int) -> dict[str, np.ndarray]:
    """Seeded random feeds: standard normal floats, small non-negative integers.

    Example:
        >>> from compiler.model.program import TensorSpec
        >>> random_inputs([TensorSpec("x", (2, 3), "float32")], 0)["x"].dtype
        dtype('float32')
    """
    from runtime.errors import FeedError

    free = free_dims(inputs)
    if free:
        raise FeedError(
            f"{free[0]} is free (symbolic): give --input FILE or --input-shape NAME=D0,D1,... "
            "for random data"
        )
    rng = np.random.default_rng(seed)
    feeds = {}
    for s in inputs:
        if np.issubdtype(np.dtype(s.dtype), np.floating):
            feeds[s.name] = rng.standard_normal(s.shape).astype(s.dtype)
        elif s.dtype == "bool":
            feeds[s.name] = rng.integers(0, 2, s.shape).astype(bool)
        else:
            feeds[s.name] = rng.integers(0, 10, s.shape).astype(s.dtype)
    return feeds


def describe_output(arr: np.ndarray) -> dict[str, Any]:
    """Shape, dtype, min/max/mean and, for a 2-D output with at least 5 columns, the top-5
    ``[class, score]`` pairs of every row.

    Example:
        >>> d = describe_output(np.array([[0.1, 0.5, 0.2, 0.9, 0.0, 0.3]], np.float32))
        >>> d["top5"][0][:2]
        [[3, 0.9], [1, 0.5]]
    """
    d: dict[str, Any] = {"shape": list(arr.shape), "dtype": str(arr.dtype)}
    if arr.size:
        d.update(
            min=float(arr.min()), max=float(arr.max()), mean=float(arr.astype(np.float64).mean())
        )
    if arr.ndim == 2 and arr.shape[1] >= TOP_K and arr.dtype.kind in "iuf":
        order = np.argsort(-arr.astype(np.float64), axis=1, kind="stable")[:, :TOP_K]
        d["top5"] = [
            [[int(c), round(float(row[c]), 6)] for c in idx]
            for row, idx in zip(arr, order, strict=True)
        ]
    return d


def format_output(name: str, d: dict[str, Any]) -> str:
    shape = ",".join(str(s) for s in d["shape"])
    head = f"{name}: {d['dtype']}[{shape}]"
    if "top5" in d:
        rows = [
            f"  row {i} top-5: " + ", ".join(f"{c} ({s:.4g})" for c, s in top)
            for i, top in enumerate(d["top5"])
        ]
        return "\n".join([head, *rows])
    if "min" in d:
        return f"{head} min {d['min']:.6g} max {d['max']:.6g} mean {d['mean']:.6g}"
    return head


def _run(args: argparse.Namespace) -> int:
    from isa.outputs import OutputFiles

    artifact = resolve_target(args)
    _check_outputs(args)
    if args.target == "vta":
        from runtime.vta_cli import run_artifact_command, run_command

        return run_artifact_command(args) if artifact else run_command(args)
    sess = _session(args)
    inputs = sess.get_inputs()
    if args.input:
        feeds = parse_inputs(args.input, inputs, args)
    else:
        feeds = random_inputs(inputs, args.seed)
        described = ", ".join(f"{s.name} {s.dtype}{list(s.shape)}" for s in inputs)
        if not args.quiet:
            print(
                f"vtac run: no --input given: feeding seeded random data (seed {args.seed}) to "
                f"{described}",
                file=sys.stderr,
            )
    names = [s.name for s in sess.get_outputs()]
    outs = dict(zip(names, sess.run(None, feeds), strict=True))
    profiles = [sess.profile()]
    for _ in range((args.repeat or 1) - 1):
        sess.run(None, feeds)
        profiles.append(sess.profile())
    profile = median_profile(profiles)
    with OutputFiles() as files:
        if args.output:
            write_npz(files.reserve(args.output, "--output"), outs)
        if args.plot:
            save_profile_figure(profile, files.reserve(args.plot, "--plot"))
    described_outs = {n: describe_output(a) for n, a in outs.items()}
    if args.json:
        print(json.dumps({"outputs": described_outs, **profile.to_json()}))
        return 0
    for n, d in described_outs.items():
        print(format_output(n, d))
    print()
    runs = f", medians of {len(profiles)} runs" if len(profiles) > 1 else ""
    if args.quiet:
        print(f"total: {profile.total_us:,.2f} us in {len(profile.groups)} groups{runs}")
        return 0
    if runs:
        print(f"group times{runs.replace(',', ':', 1)}")
    print(profile.table())
    if args.output:
        print(f"outputs saved to {args.output}")
    if args.plot:
        print(f"per-group figure written to {args.plot}")
    return 0


def _check_outputs(args: argparse.Namespace) -> None:
    """The files ``run`` writes (``--output``, ``--trace``), checked before any work."""
    from isa.outputs import check_output_path
    from runtime.errors import SessionError

    if args.output:
        if not args.output.endswith(".npz"):
            raise SessionError(f"--output {args.output}: the file must end in .npz")
        check_output_path(args.output, "--output")
    if getattr(args, "trace", None):
        check_output_path(args.trace, "--trace")
    if getattr(args, "plot", None):
        check_image_path(args.plot, "--plot")


def check_image_path(path: str, what: str) -> None:
    """A writable path whose suffix names an image format matplotlib writes."""
    from matplotlib.figure import Figure

    from isa.errors import OutputError
    from isa.outputs import check_output_path

    check_output_path(path, what)
    formats = Figure().canvas.get_supported_filetypes()
    suffix = Path(path).suffix.lstrip(".").lower()
    if suffix not in formats:
        raise OutputError(
            f"{what} {path}: unknown image format {suffix!r} (one of: {', '.join(formats)})"
        )


def _positive_runs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not 1 <= value <= 10_000:
        raise argparse.ArgumentTypeError(f"{value} is outside 1..10000")
    return value


def median_profile(profiles: Sequence[Any]) -> Any:
    """One profile whose group times are the medians over ``profiles`` (runs of one model)."""
    from dataclasses import replace

    from runtime.profile import Profile

    if len(profiles) == 1:
        return profiles[0]
    first = profiles[0]
    groups = []
    for k, g in enumerate(first.groups):
        times = [p.groups[k].time_us for p in profiles if p.groups[k].time_us is not None]
        groups.append(replace(g, time_us=float(np.median(times)) if times else None))
    return Profile(tuple(groups))


def save_profile_figure(profile: Any, path: Any) -> None:
    """Each group's time as a horizontal bar, in run order."""
    from matplotlib.figure import Figure

    from runtime.profile import compact_ops

    groups = profile.groups
    fig = Figure(figsize=(9, 1.2 + 0.26 * max(len(groups), 1)), layout="constrained")
    ax = fig.add_subplot()
    y = np.arange(len(groups))
    ax.barh(y, [g.time_us or 0.0 for g in groups], color="#1f77b4")
    ax.set_yticks(y, [f"{g.name} ({compact_ops(g.ops, 30)})" for g in groups], fontsize="small")
    ax.invert_yaxis()
    ax.set_xlabel(f"time (us) on {', '.join(sorted({g.device for g in groups}))}")
    ax.set_title("time of each fused group", fontsize="medium")
    fig.savefig(path, dpi=110)


def _positive_jobs(text: str) -> int:
    """``--jobs``: a whole number of worker processes, at least 1."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"--jobs {text}: a number of processes, at least 1")
    return n


def _seed(text: str) -> int:
    """A random seed: an integer from 0 to 2**32-1 (numpy's range)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"{value} is outside 0..{2**32 - 1}")
    return value


def npz_member(name: str) -> str:
    """The ``.npz`` key of output ``name``: the name itself, with ``/``, ``\\``, ``%`` and
    control characters percent-encoded so that no member name is a path.

    >>> npz_member("logits"), npz_member("output:0"), npz_member("../../x")
    ('logits', 'output:0', '..%2F..%2Fx')
    """
    from urllib.parse import quote

    return quote(name, safe=" !#$&'()*+,:;=@[]^_`{}~-.<>?|\"")


def write_npz(path: Any, outs: dict[str, np.ndarray]) -> None:
    """Write ``outs`` to ``path`` as an ``.npz`` archive, one member per output, keyed by
    :func:`npz_member` of its ONNX name."""
    import io
    import zipfile

    from runtime.errors import SessionError

    keys = [npz_member(n) for n in outs]
    if len(set(keys)) != len(keys):
        raise SessionError(f"--output {path}: two outputs have the same archive key")
    with zipfile.ZipFile(path, "w") as zf:
        for key, arr in zip(keys, outs.values(), strict=True):
            buf = io.BytesIO()
            np.save(buf, arr, allow_pickle=False)
            zf.writestr(f"{key}.npy", buf.getvalue())


def _save_npz(path: str, outs: dict[str, np.ndarray]) -> None:
    """:func:`write_npz` all or nothing (:class:`isa.outputs.OutputFiles`)."""
    from isa.outputs import OutputFiles

    with OutputFiles() as files:
        write_npz(files.reserve(path, "--output"), outs)
