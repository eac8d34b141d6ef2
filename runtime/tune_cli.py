"""``vtac tune``: search the schedule space of one operator or of a model's operators,
measuring candidates on the simulator, with a progress bar showing the best so far (on a
terminal, or with ``--progress``; ``--no-progress`` never).

* ``vtac tune conv2d --h H --w W --in-c C --out-c K --k R [--stride S] [--pad P]`` (the shape
  arguments of ``vtac layer``; ``dense`` likewise with ``--in-c``/``--out-c`` as features)
  tunes one operator;
* ``vtac tune resnet18-layers [--layers C2,C9]`` tunes ResNet-18's conv2d layers C1..C12 (the
  benchmark list);
* ``vtac tune MODEL`` (a zoo name such as ``resnet18``, or an ``.onnx`` file; ``--image-size``
  for the zoo, ``--input-shape NAME=D0,D1,...`` for an ONNX file's free dimensions) tunes the
  unique conv2d / dense workloads of the model's graph, each weighted by its count, and lists
  the nodes the templates do not cover. With ``--target vta`` the tasks are the model's
  quantized accelerator groups, epilogue included (:mod:`compiler.model.tuning`), which ``vtac
  compile|run MODEL --target vta --tuning-log LOG`` compiles with the log's best records.

``--target cpu`` tunes ``conv2d``, ``dense`` and ``matmul`` (``--batch`` x ``--in-c`` times
``--in-c`` x ``--out-c``) on the CPU, one thread, in seconds (median of repeated calls on a
pinned core; use ``--workers 1`` so measurements do not share a core).

Common options: ``--target vta|cpu``, ``--config NAME`` (hardware preset), ``--trials N``,
``--tuner model|random|grid``, ``--log FILE`` (JSON lines; a run resumes from the records
already there), ``--workers N`` (local process pool) or ``--dask ADDRESS``
(a Dask scheduler), ``--seed``, ``--batch``, ``--early-stopping N``, ``--timeout S``.
The heuristic's choice is measured first, so every task reports tuned against heuristic.

``vtac explore WHAT`` (the same WHAT and tuning options, accelerator only) sweeps hardware
configurations around ``--base`` (``--gemm 1x8x8,1x16x16``, ``--buffers 0.5,1`` scales of the
buffers' entries, ``--bus 8,16`` bytes), tunes every task on each, and prints each
configuration's weighted total cycles against a relative hardware cost, marking the Pareto
front; ``--plot FILE`` draws it.

Example:
    >>> import argparse
    >>> sub = argparse.ArgumentParser(prog="vtac").add_subparsers()
    >>> add_parser(sub)
    >>> a = sub.choices["tune"].parse_args(["conv2d", "--h", "8", "--trials", "16"])
    >>> a.what, a.trials, a.tuner, a.target
    ('conv2d', 16, 'model', 'vta')
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.inputs import add_input_shape_option

LAYER_LISTS = ("resnet18-layers",)


def _add_common(p: Any) -> None:
    """The arguments ``tune`` and ``explore`` share: what to tune and how."""
    p.add_argument("--h", type=_positive, default=14, help="input height (conv2d)")
    p.add_argument("--w", type=_positive, default=14, help="input width (conv2d)")
    p.add_argument("--in-c", type=_positive, default=16, help="input channels / features")
    p.add_argument("--out-c", type=_positive, default=16, help="output channels / features")
    p.add_argument("--k", type=_positive, default=3, help="kernel size (conv2d)")
    p.add_argument("--stride", type=_positive, default=1, help="stride (conv2d)")
    p.add_argument("--pad", type=_non_negative, default=0, help="zero padding (conv2d)")
    p.add_argument("--batch", type=_positive, default=1, help="batch")
    p.add_argument("--relu", action="store_true", help="clip at 0 instead of -128")
    p.add_argument("--residual", action="store_true", help="add a residual int8 tensor")
    p.add_argument("--layers", default=None,
                   help="resnet18-layers: comma-separated subset, e.g. C2,C9")  # fmt: skip
    p.add_argument("--image-size", type=_positive, default=None, help="zoo model input size")
    p.add_argument("--trials", type=_positive, default=64, help="measurements per task")
    p.add_argument("--tuner", choices=["model", "random", "grid"], default="model",
                   help="explorer (model: annealing on the XGBoost rank model)")  # fmt: skip
    p.add_argument("--log", default=None, metavar="FILE", help="JSON-lines records (resumed)")
    p.add_argument("--workers", type=_positive, default=1, help="local measurement processes")
    p.add_argument("--dask", default=None, metavar="ADDRESS", help="Dask scheduler address")
    p.add_argument("--seed", type=_non_negative, default=0, help="seed of the explorer")
    p.add_argument("--batch-size", type=_positive, default=None,
                   help="candidates per batch (default: 8)")  # fmt: skip
    p.add_argument("--early-stopping", type=_positive, default=None, metavar="N",
                   help="stop a task after N measurements without a better one")  # fmt: skip
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per candidate")


def _positive(text: str) -> int:
    try:
        v = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"{v} must be at least 1")
    return v


def _non_negative(text: str) -> int:
    try:
        v = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"{v} must not be negative")
    return v


def add_parser(subparsers: Any) -> None:
    """Register ``tune`` and ``explore``."""
    from runtime.model_cli import (
        add_calibrator_option,
        add_fp32_threshold_option,
        add_requant_option,
    )

    p = subparsers.add_parser(
        "tune",
        help="search schedule knobs of an operator or a model on the simulator",
        description="Tune one operator (conv2d, dense) or a model's operators: candidates are "
        "built, run on the simulator and checked against numpy; results go to a JSON-lines log.",
    )
    p.add_argument("what", metavar="WHAT",
                   help="conv2d, dense, matmul (cpu), resnet18-layers, a zoo model or an "
                   ".onnx file")  # fmt: skip
    p.add_argument("--target", choices=["vta", "cpu"], default="vta", help="where to measure")
    p.add_argument("--config", default="default", help="hardware preset (default: default)")
    _add_common(p)
    _add_progress(p)
    add_input_shape_option(p)
    add_calibrator_option(p, "a model on --target vta")
    add_requant_option(p, "a model on --target vta (the groups' epilogues are the tasks)")
    add_fp32_threshold_option(p)
    p.set_defaults(run=_tune)

    e = subparsers.add_parser(
        "explore",
        help="sweep hardware configurations, tune each, print the Pareto front",
        description="Hardware/schedule co-exploration: tune WHAT's tasks on every hardware "
        "configuration of the sweep; total cycles against a relative hardware cost.",
    )
    e.add_argument("what", metavar="WHAT",
                   help="conv2d, dense, resnet18-layers, a zoo model or an .onnx file")  # fmt: skip
    _add_common(e)
    e.add_argument("--base", default="vta-1x16x16", help="configuration the sweep varies")
    e.add_argument("--gemm", default="1x8x8,1x16x16,1x32x32", help="BATCHxBLOCK_INxBLOCK_OUT list")
    e.add_argument("--buffers", default="0.5,1", help="scales of the buffers' entries")
    e.add_argument("--bus", default="8,16", help="DRAM bus widths in bytes")
    e.add_argument("--plot", default=None, metavar="FILE.png", help="draw the front")
    _add_progress(e)
    e.set_defaults(run=_explore, target="vta", config="default")


def _add_progress(parser: argparse.ArgumentParser) -> None:
    """``--progress`` / ``--no-progress``: a bar per task, by default only on a terminal (a log
    piped to a file gets no bar lines)."""
    g = parser.add_mutually_exclusive_group()
    g.add_argument(
        "--progress",
        action="store_true",
        help="show a progress bar per task (default: when stderr is a terminal)",
    )
    g.add_argument("--no-progress", action="store_true", help="no progress bar")


def tasks_for(args: argparse.Namespace) -> list[Any]:
    """The tasks the arguments name."""
    from compiler.errors import CompilerError
    from compiler.tune import conv2d_task, dense_task, resnet18_tasks
    from compiler.tune.task import cpu_task

    if args.target == "cpu" and args.what in ("conv2d", "dense", "matmul"):
        if args.what == "conv2d":
            return [cpu_task("conv2d", batch=args.batch, h=args.h, w=args.w, in_c=args.in_c,
                             out_c=args.out_c, k=args.k, stride=args.stride, pad=args.pad,
                             name="conv2d")]  # fmt: skip
        if args.what == "dense":
            return [cpu_task("dense", batch=args.batch, in_features=args.in_c,
                             out_features=args.out_c, name="dense")]  # fmt: skip
        return [cpu_task("matmul", m=args.batch, k=args.in_c, n=args.out_c, name="matmul")]
    if args.target == "cpu" and args.what in LAYER_LISTS:
        raise CompilerError(f"--target cpu tunes operators and models, not {args.what!r}")
    if args.what == "matmul":
        raise CompilerError("matmul is tuned on the CPU only (--target cpu)")
    if args.what == "conv2d":
        return [conv2d_task(args.h, args.w, args.in_c, args.out_c, args.k, args.stride, args.pad,
                            batch=args.batch, hw=args.config, relu=args.relu,
                            residual=args.residual, name="conv2d")]  # fmt: skip
    if args.what == "dense":
        return [dense_task(args.batch, args.in_c, args.out_c, hw=args.config, relu=args.relu,
                           residual=args.residual, name="dense")]  # fmt: skip
    if args.what not in LAYER_LISTS:
        return _model_tasks(args)
    tasks = resnet18_tasks(args.config)
    if args.layers:
        want = [n.strip() for n in args.layers.split(",") if n.strip()]
        names = [t.name for t in tasks]
        unknown = [n for n in want if n not in names]
        if unknown:
            raise CompilerError(f"unknown layers {unknown}; {args.what} has {names}")
        tasks = [t for t in tasks if t.name in want]
    return tasks


def _model_tasks(args: argparse.Namespace) -> list[Any]:
    from pathlib import Path

    from compiler.errors import CompilerError
    from compiler.frontend.zoo import load_zoo, zoo_names
    from compiler.model.cpu import import_onnx
    from compiler.tune.extract import extract_tasks

    if args.what.endswith(".onnx"):
        from runtime.session import load_onnx

        path = Path(args.what)
        if not path.is_file():
            raise CompilerError(f"no model file {path}")
        model = load_onnx(path)  # the one ONNX reader
    elif args.what in zoo_names():
        kw = {"image_size": args.image_size} if args.image_size else {}
        model = load_zoo(args.what, batch=args.batch, **kw)
    else:
        raise CompilerError(
            f"{args.what!r} is neither an operator (conv2d, dense), a layer list "
            f"({', '.join(LAYER_LISTS)}), a zoo model ({', '.join(zoo_names())}) nor an .onnx file"
        )
    shapes = dict(getattr(args, "input_shape", None) or []) or None
    if args.target == "cpu":
        from compiler.model.cpu import optimize

        found = extract_tasks(optimize(model, input_shapes=shapes), target="cpu")
    else:
        from compiler.model.tuning import extract_network_tasks

        # the quantized groups, epilogue included, as `vtac compile|run --target vta` builds
        # them (calibrated on seeded random data, as `vtac compile` without --calibrate)
        found = extract_network_tasks(
            import_onnx(model, shapes), args.config, requant=getattr(args, "requant", None)
            or "multiplier", sensitivity=getattr(args, "fp32_threshold", None),
            calibrator=getattr(args, "calibrator", None) or "percentile",
        )  # fmt: skip
    for label, reason in found.skipped:
        print(f"not tuned: {label} ({reason})")
    if not found.tasks:
        raise CompilerError(f"{args.what}: no conv2d or dense workload to tune")
    what = "operators" if args.target == "cpu" else "accelerator groups"
    print(f"{args.what}: {len(found.tasks)} tasks from "
          f"{sum(t.weight for t in found.tasks)} {what}")  # fmt: skip
    return found.tasks


def _runner(args: argparse.Namespace) -> Any:
    from runtime.measure import DaskRunner, LocalRunner

    if args.dask:
        return DaskRunner(args.dask, timeout_s=args.timeout)
    return LocalRunner(args.workers, timeout_s=args.timeout)


def _tune(args: argparse.Namespace) -> int:
    import isa
    from compiler.errors import CompilerError
    from compiler.tune.tuner import make_tuner

    if args.target == "vta":
        isa.load_config(args.config)  # an unknown preset fails here, naming it
    for option, dest in (
        ("--calibrator", "calibrator"),
        ("--requant", "requant"),
        ("--fp32-threshold", "fp32_threshold"),
    ):
        if getattr(args, dest, None) is not None and (
            args.target != "vta" or args.what in ("conv2d", "dense", "matmul", *LAYER_LISTS)
        ):
            raise CompilerError(f"{option} applies to tuning a model with --target vta")
    _check_outputs(args)
    tasks = tasks_for(args)
    for t in tasks:
        t.space()  # a shape with no valid point fails before any worker starts
    code = 0
    with _runner(args) as runner:
        for task in tasks:
            default = task.default_config()
            tuner = make_tuner(args.tuner, task, args.seed)
            bar = _bar(task, args)
            state = tuner.tune(
                runner, args.trials, batch_size=args.batch_size or 8,
                early_stopping=args.early_stopping, log=args.log,
                progress=bar.update if bar is not None else None, initial=[default.index],
            )  # fmt: skip
            if bar is not None:
                bar.close()
            code |= _report(task, state, default)
    return code


def _list(text: str, what: str, conv: Any) -> list[Any]:
    from compiler.errors import CompilerError

    try:
        out = [conv(t.strip()) for t in text.split(",") if t.strip()]
    except ValueError:
        raise CompilerError(f"--{what}: cannot read {text!r}") from None
    if not out:
        raise CompilerError(f"--{what}: empty list")
    return out


def _gemm(text: str) -> tuple[int, int, int]:
    parts = [int(p) for p in text.lower().split("x")]
    if len(parts) != 3 or min(parts) < 1:
        raise ValueError(text)
    return parts[0], parts[1], parts[2]


def _explore(args: argparse.Namespace) -> int:
    import isa
    from compiler.errors import CompilerError
    from compiler.tune.explore import hardware_grid, pareto_front
    from compiler.tune.task import hw_spec
    from compiler.tune.tuner import make_tuner
    from isa.energy import estimate_area
    from isa.report import Column, format_table

    base = isa.load_config(args.base)
    grid = hardware_grid(
        base, gemm=_list(args.gemm, "gemm", _gemm), buffer_scales=_list(args.buffers, "buffers",
        float), bus=_list(args.bus, "bus", int),
    )  # fmt: skip
    _check_outputs(args)
    for name, reason in grid.rejected:
        print(f"left out {name}: {reason}")
    if not grid.configs:
        raise CompilerError(
            f"explore: every configuration of the sweep was left out ({len(grid.rejected)}); "
            "widen --gemm, --buffers or --bus"
        )
    rows: list[ExploreRow] = []
    with _runner(args) as runner:
        for cfg in grid.configs:
            args.config = hw_spec(cfg)
            cycles = energy = 0.0
            for task in tasks_for(args):
                default = task.default_config()
                tuner = make_tuner(args.tuner, task, args.seed)
                bar = _bar(task, args)
                state = tuner.tune(runner, args.trials, batch_size=args.batch_size or 8,
                                   early_stopping=args.early_stopping, log=args.log,
                                   progress=bar.update if bar is not None else None,
                                   initial=[default.index])  # fmt: skip
                if bar is not None:
                    bar.close()
                cycles += task.weight * state.best_cost
                best = state.best
                extra = best.result.extra if best is not None else {}
                energy += task.weight * float(extra.get("energy_pj", math.inf))
            row = ExploreRow(cfg.name, estimate_area(cfg).total_mm2, energy * 1e-6, cycles)
            rows.append(row)
            print(f"{cfg.name}: {row.area_mm2:.3f} mm2, {row.energy_uj:,.1f} uJ, "
                  f"{cycles:,.0f} cycles", flush=True)  # fmt: skip
    front = set(pareto_front([(r.cycles, r.energy_uj, r.area_mm2) for r in rows]))
    columns = [
        Column("configuration"),
        Column("area mm2", "float3", "MAC array, ALU and SRAMs at 45 nm (docs/energy.md)"),
        Column("energy uJ", "float3", "the tasks' energy with their best schedules"),
        Column("total cycles", "int", "the tasks' cycles with their best schedules"),
        Column(
            "Pareto",
            legend="* on the front: no configuration is as good on all three and better on one",
        ),  # fmt: skip
    ]
    order = sorted(range(len(rows)), key=lambda k: rows[k].area_mm2)
    table = [
        (rows[k].name, rows[k].area_mm2, rows[k].energy_uj, rows[k].cycles, "*" * (k in front))
        for k in order
    ]
    print(format_table(columns, table))
    if args.plot:
        _plot_front(rows, front, args.plot)
        print(f"wrote {args.plot}")
    return 0 if all(math.isfinite(r.cycles) for r in rows) else 1


@dataclass(frozen=True)
class ExploreRow:
    """One swept configuration: its area, and its tasks' energy and cycles once tuned."""

    name: str
    area_mm2: float
    energy_uj: float
    cycles: float


def _check_outputs(args: argparse.Namespace) -> None:
    """The files a command will write, checked before any measurement: the tuning log (not a
    directory, not under a file) and the plot (a writable path, a format matplotlib draws)."""
    from compiler.tune.records import RecordLog

    RecordLog(args.log)
    plot = getattr(args, "plot", None)
    if plot:
        from matplotlib.figure import Figure

        from isa.errors import OutputError
        from isa.outputs import check_output_path

        check_output_path(plot, "--plot")
        formats = Figure().canvas.get_supported_filetypes()
        suffix = Path(plot).suffix.lstrip(".").lower()
        if suffix not in formats:
            raise OutputError(
                f"--plot {plot}: unknown image format {suffix!r} (one of: {', '.join(formats)})"
            )


def _plot_front(rows: list[ExploreRow], front: set[int], path: str) -> None:
    """Cycles against area and against energy, the front's points joined and named (the other
    points unnamed, so that labels do not pile up)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4.5), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    for ax, attr, label in (
        (axes[0], "area_mm2", "area (mm², 45 nm)"),
        (axes[1], "energy_uj", "energy (uJ, 45 nm)"),
    ):
        ax.scatter([getattr(r, attr) for r in rows], [r.cycles for r in rows], color="#bbbbbb",
                   label="swept", zorder=2)  # fmt: skip
        pts = sorted((getattr(rows[k], attr), rows[k].cycles, rows[k].name) for k in front)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o", color="C3", label="Pareto front",
                zorder=3)  # fmt: skip
        for k, (x, y, name) in enumerate(pts):  # alternate sides so neighbours do not collide
            ax.annotate(name, (x, y), fontsize=7, textcoords="offset points",
                        xytext=(5, 6 if k % 2 else -10))  # fmt: skip
        ax.set_xlabel(label)
        ax.set_yscale("log")
        ax.grid(color="#eeeeee", linewidth=0.5)
    axes[0].set_ylabel("total cycles (tuned)")
    axes[0].legend(fontsize="small")
    fig.savefig(path, dpi=120)


class _Bar:
    def __init__(self, task: Any, total: int) -> None:
        from tqdm import tqdm

        self.bar = tqdm(total=total, desc=task.label(), unit="trial", file=sys.stderr,
                        dynamic_ncols=True)  # fmt: skip

    def update(self, state: Any) -> None:
        self.bar.n = state.trials
        best = state.best_cost
        self.bar.set_postfix_str(
            f"best {_cost(state.task, best)}" if best != float("inf") else "no result"
        )

    def close(self) -> None:
        self.bar.close()


def _cost(task: Any, cost: float) -> str:
    return f"{cost * 1e6:.1f} us" if task.target == "cpu" else f"{cost:.0f} cycles"


def _bar(task: Any, args: argparse.Namespace) -> _Bar | None:
    show = not args.no_progress and (args.progress or sys.stderr.isatty())
    return _Bar(task, args.trials) if show else None


def describe_knobs(task: Any, config: Any) -> str:
    """A point's knobs as ``vtac layer`` prints them (the ``Conv2dKnobs`` / ``DenseKnobs``
    field names), with the input fetch where the space has it; the CPU's schedule keywords.

    Example:
        >>> from compiler.tune import conv2d_task
        >>> t = conv2d_task(8, 8, 16, 16, 3, 1, 1)
        >>> describe_knobs(t, t.default_config())
        'tile_b=1 tile_co=1 tile_h=8 tile_w=8 tile_ci=1 oc_nthread=2 h_nthread=1 loop_order=h_co'
    """
    if task.target == "cpu":
        return str(config.describe())
    text = str(task.knobs(config).describe())
    fetch = config.values.get("inp_fetch")
    return text + (f" inp_fetch={fetch}" if fetch not in (None, "window") else "")


def _report(task: Any, state: Any, default: Any) -> int:
    base = next((r for r in state.records if r.config.index == default.index), None)
    best = state.best
    fails = ", ".join(f"{n} {k}" for k, n in sorted(state.failures.items())) or "none"
    print(f"{task.label()} ({task.key}): {state.trials} measurements, failures: {fails}")
    if best is None:
        print("  no candidate ran")
        return 1
    roof = best.result.extra.get("roofline_cycles")
    line = f"  best {_cost(task, best.result.cost)} with {describe_knobs(task, best.config)}"
    if roof:
        line += f" ({roof / best.result.cost:.1%} of the roofline)"
    print(line)
    if base is not None and base.result.ok and base.result.cost:
        print(f"  heuristic {_cost(task, base.result.cost)}: speedup "
              f"{base.result.cost / best.result.cost:.3f}x")  # fmt: skip
    return 0


__all__ = ["add_parser", "describe_knobs", "tasks_for"]
