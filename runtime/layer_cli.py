"""``vtac layer``, ``vtac bench`` and ``vtac demo``: layers compiled for the accelerator, run on
the simulator and checked against numpy.

* ``vtac layer conv2d --h H --w W --in-c C --out-c K --k R --stride S --pad P [--config NAME]
  [--vthreads N] [--relu] [--residual] -o PROG.npz [--check] [--json]`` compiles one layer with
  seeded random int8 data (``dense`` likewise);
* ``vtac bench resnet18-layers [--config NAME] [--layers C2,C9] [--progress]`` runs C1..C12 at
  full size with 2 virtual threads and with 1 (the same tiles, no thread split) and prints
  cycles, ideal cycles, the roofline bound, utilization, DRAM traffic against the compulsory
  bytes and the speedup of 2 threads over 1, with a bar of the layers on a terminal;
* ``vtac demo`` is the main job: the benchmark on the default core, the C9 cross-check against
  VTA's published counts, and a pipeline Gantt chart of one layer's run in ``out/``.

This module (with ``runtime/cli.py``) is where the compiler meets the simulator.

Example:
    >>> import argparse
    >>> sub = argparse.ArgumentParser(prog="vtac").add_subparsers()
    >>> add_parser(sub)
    >>> args = sub.choices["layer"].parse_args(["conv2d", "--h", "14", "--w", "14", "--in-c",
    ...     "16", "--out-c", "16", "--k", "3", "--pad", "1", "-o", "p.npz"])
    >>> args.kind, args.vthreads, args.config
    ('conv2d', 2, 'default')
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field, replace
from typing import Any

#: The 3x3 convolutions, whose distance to the roofline the findings report.
THREE_BY_THREE = ("C2", "C4", "C6", "C7", "C9", "C10", "C12")


def add_parser(subparsers: Any) -> None:
    """Register ``layer``, ``bench`` and ``demo``."""
    p = subparsers.add_parser(
        "layer",
        help="compile one layer for the accelerator (and run it on the simulator)",
        description="Compile one int8 layer with seeded random data into a program file; "
        "--check runs it on the simulator against a numpy reference.",
    )
    p.add_argument("kind", choices=["conv2d", "dense"], help="the operator")
    p.add_argument("--h", type=_bounded(1, MAX_SPATIAL), default=14,
                   help="input height (conv2d)")  # fmt: skip
    p.add_argument("--w", type=_bounded(1, MAX_SPATIAL), default=14,
                   help="input width (conv2d)")  # fmt: skip
    p.add_argument("--in-c", type=_bounded(1, MAX_CHANNELS), default=16,
                   help="input channels / features")  # fmt: skip
    p.add_argument("--out-c", type=_bounded(1, MAX_CHANNELS), default=16,
                   help="output channels / features")  # fmt: skip
    p.add_argument("--k", type=_bounded(1, MAX_KERNEL), default=3, help="kernel size (conv2d)")
    p.add_argument("--stride", type=_bounded(1, MAX_KERNEL), default=1, help="stride (conv2d)")
    p.add_argument("--pad", type=_bounded(0, MAX_KERNEL), default=0,
                   help="zero padding on each side (conv2d)")  # fmt: skip
    p.add_argument("--batch", type=_bounded(1, MAX_BATCH), default=None,
                   help="batch, a multiple of the core's (default: the core's batch)")  # fmt: skip
    p.add_argument("--config", default="default", help="hardware preset (default: default)")
    p.add_argument("--vthreads", type=int, default=2, choices=[1, 2, 4],
                   help="virtual threads (2 splits channels or rows, 4 both)")  # fmt: skip
    p.add_argument("--relu", action="store_true", help="clip at 0 instead of -128")
    p.add_argument("--residual", action="store_true", help="add a residual int8 tensor")
    p.add_argument("--shift", type=_bounded(0, 31), default=None,
                   help="requantize shift, 0..31 (default: chosen)")  # fmt: skip
    p.add_argument("--seed", type=_bounded(0, 2**32 - 1), default=0,
                   help="seed of the random data (non-negative)")  # fmt: skip
    p.add_argument("-o", "--output", metavar="PROG.npz", help="write the program file")
    p.add_argument("--check", action="store_true",
                   help="run on the simulator and compare with numpy")  # fmt: skip
    p.add_argument("--json", action="store_true",
                   help="run and print {match, cycles, ideal_cycles, utilization, "
                   "roofline_cycles, dram_bytes} as JSON")  # fmt: skip
    p.add_argument("--target", choices=["vta", "gpu"], default="vta",
                   help="vta: int8 on the accelerator; gpu: float32 CUDA kernels")  # fmt: skip
    p.add_argument("--ptx", metavar="FILE", help="--target gpu: write the kernels' PTX (sm_90)")
    p.add_argument("--progress", action="store_true",
                   help="--target gpu --check: show the elapsed time of the run (default: when "
                   "stderr is a terminal)")  # fmt: skip
    p.set_defaults(run=_layer)

    b = subparsers.add_parser(
        "bench",
        help="benchmark ResNet-18 layers on the simulator",
        description="Run ResNet-18's conv2d layers C1..C12 at full size with 2 virtual threads "
        "and with 1 (same tiles) and print cycles against the ideal and the roofline.",
    )
    b.add_argument("suite", choices=["resnet18-layers"], help="what to run")
    b.add_argument("--config", default="default", help="hardware preset (default: default)")
    b.add_argument("--layers", default=None, help="comma-separated subset, e.g. C2,C9")
    b.add_argument("--json", action="store_true", help="print one JSON object per layer")
    b.add_argument(
        "--progress",
        action="store_true",
        help="show a progress bar of the layers (default: when stderr is a terminal)",
    )
    b.set_defaults(run=_bench)

    d = subparsers.add_parser(
        "demo",
        help="run the main job on the built-in defaults",
        description="ResNet-18 at 32x32 (seeded random weights) in int8 on vta-1x16x16: the "
        "per-layer table, the pipeline picture, a Gantt chart and a Perfetto trace in out/, "
        "and one layer checked on the RTL.",
    )
    d.set_defaults(run=_demo)


# ---- argument bounds -----------------------------------------------------------------------------
#: Bounds of ``vtac layer``'s sizes, far above ResNet's (224 pixels, 2048 channels, 7x7 kernels,
#: batch 4): they keep one command's compilation and run to seconds, not hours.
MAX_SPATIAL = 1024
MAX_CHANNELS = 8192
MAX_KERNEL = 15
MAX_BATCH = 64
#: Most multiply-accumulates one ``vtac layer`` compiles (ResNet-50's largest layer: 231M).
MAX_LAYER_MACS = 1 << 31


def _bounded(lo: int, hi: int) -> Any:
    """An argparse type: a decimal integer in [lo, hi]."""

    def parse(text: str) -> int:
        try:
            value = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{value} is outside [{lo}, {hi}]")
        return value

    parse.__name__ = "integer"
    return parse


def _window_reads_input(size: int, out: int, k: int, stride: int, pad: int) -> bool:
    """Whether any of the ``out`` windows along one axis covers one of its ``size`` inputs.

    >>> _window_reads_input(1, 1, k=1, stride=3, pad=1), _window_reads_input(3, 3, 1, 1, 1)
    (False, True)
    """
    return any(o * stride - pad + k > 0 and o * stride - pad < size for o in range(out))


def _check_layer_size(args: argparse.Namespace, batch: int) -> None:
    """Refuse a layer too large for one command, naming the limit, before compiling it."""
    from compiler.errors import ShapeError

    if args.kind == "conv2d":
        if args.h + 2 * args.pad < args.k or args.w + 2 * args.pad < args.k:
            raise ShapeError(
                f"conv2d: the {args.k}x{args.k} kernel is larger than the padded input "
                f"{args.h + 2 * args.pad}x{args.w + 2 * args.pad} (--h/--w {args.h}x{args.w}, "
                f"--pad {args.pad})"
            )
        oh = (args.h + 2 * args.pad - args.k) // args.stride + 1
        ow = (args.w + 2 * args.pad - args.k) // args.stride + 1
        for axis, size, out in (("rows", args.h, oh), ("columns", args.w, ow)):
            if not _window_reads_input(size, out, args.k, args.stride, args.pad):
                raise ShapeError(
                    f"conv2d: no output pixel reads the input: with --k {args.k} --stride "
                    f"{args.stride} --pad {args.pad}, every window over the {size} input {axis} "
                    "falls in the zero padding, so the layer would compute only zeros"
                )
        macs = batch * oh * ow * args.out_c * args.in_c * args.k * args.k
    else:
        macs = batch * args.in_c * args.out_c
    if macs > MAX_LAYER_MACS:
        raise ShapeError(
            f"{args.kind}: {macs} multiply-accumulates, more than the {MAX_LAYER_MACS} one "
            "vtac layer compiles; use smaller sizes"
        )


# ---- one layer -----------------------------------------------------------------------------------
@dataclass
class LayerRun:
    """A compiled layer run on the simulator."""

    name: str
    config: str
    knobs: str
    match: bool
    cycles: int
    ideal_cycles: float
    roofline_cycles: float
    dram_bytes: dict[str, int]
    compulsory_bytes: int
    gemm_uops: int
    modules: dict[str, dict[str, int]] = field(default_factory=dict)
    result: Any = None

    @property
    def utilization(self) -> float:
        """Useful MACs per cycle over the core's peak."""
        return self.ideal_cycles / self.cycles

    @property
    def roofline_fraction(self) -> float:
        return self.roofline_cycles / self.cycles

    @property
    def moved_bytes(self) -> int:
        return sum(self.dram_bytes.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "layer": self.name,
            "config": self.config,
            "knobs": self.knobs,
            "match": self.match,
            "cycles": self.cycles,
            "ideal_cycles": self.ideal_cycles,
            "utilization": round(self.utilization, 4),
            "roofline_cycles": self.roofline_cycles,
            "dram_bytes": self.dram_bytes,
            "compulsory_bytes": self.compulsory_bytes,
        }


def run_built(built: Any) -> LayerRun:
    """Simulate a compiled layer and compare its output with the numpy reference."""
    import vta_sim
    from compiler.topi.vta.metrics import compulsory_bytes, ideal_cycles, roofline_cycles

    r = vta_sim.simulate(built.program)
    cfg = built.config
    comp = compulsory_bytes(built.program)
    knobs = built.knobs.describe()
    return LayerRun(
        built.name, cfg.name, knobs, built.matches(r.read("out")), r.cycles,
        ideal_cycles(built.macs, cfg), roofline_cycles(built.macs, comp, cfg),
        dict(r.dram_bytes), comp, r.gemm_uops, {m: dict(c) for m, c in r.modules.items()}, r,
    )  # fmt: skip


def _run_gpu_layer(args: argparse.Namespace) -> int:
    from runtime.gpu_layer import run_gpu_layer

    return run_gpu_layer(args)


def _layer(args: argparse.Namespace) -> int:
    if args.progress and not (args.target == "gpu" and args.check):
        from compiler.errors import CompilerError

        raise CompilerError("--progress shows the run of --target gpu --check (the only long one)")
    if args.target == "gpu":  # float32 CUDA kernels: runtime/gpu_layer.py
        return _run_gpu_layer(args)
    import isa
    from compiler.errors import ShapeError
    from isa.outputs import OutputFiles

    cfg = isa.load_config(args.config)
    batch = cfg.batch if args.batch is None else args.batch
    if batch % cfg.batch:
        raise ShapeError(
            f"--batch {batch} is not a multiple of the batch of core {cfg.name!r} ({cfg.batch})"
        )
    _check_layer_size(args, batch)
    with OutputFiles() as out:
        program_out = out.reserve(args.output, "program file") if args.output else None
        return _compile_and_run(args, cfg, batch, program_out)


def _compile_and_run(args: argparse.Namespace, cfg: Any, batch: int, program_out: Any) -> int:
    from compiler.topi.vta import Conv2dLayer
    from compiler.topi.vta.testing import build_conv2d, build_dense

    common = dict(nthreads=args.vthreads, relu=args.relu, residual=args.residual,
                  shift=args.shift, seed=args.seed)  # fmt: skip
    if args.kind == "conv2d":
        layer = Conv2dLayer("conv2d", args.h, args.w, args.in_c, args.out_c, args.k,
                            args.stride, args.pad, batch)  # fmt: skip
        built = build_conv2d(layer, cfg, **common)
        what = layer.describe()
    else:
        built = build_dense(batch, args.in_c, args.out_c, cfg, **common)
        what = f"dense: {batch}x{args.in_c} -> {args.out_c}"
    if program_out is not None:
        built.program.save_to(program_out)
    if not (args.check or args.json):
        print(f"{what} on {cfg.name}: {built.program.insn_count} instructions, "
              f"knobs {built.knobs.describe()}")  # fmt: skip
        if args.output:
            print(f"wrote {args.output}")
        return 0
    run = run_built(built)
    if args.json:
        print(json.dumps(run.to_json(), allow_nan=False))
    else:
        print(f"{what} on {cfg.name} with {built.knobs.describe()}")
        print(run.result.summary())
        print(f"ideal cycles {run.ideal_cycles:.0f}, roofline {run.roofline_cycles:.0f} "
              f"({run.roofline_fraction:.1%} of the roofline)")  # fmt: skip
        print(f"result {'matches' if run.match else 'DOES NOT match'} numpy")
    return 0 if run.match else 1


# ---- the ResNet-18 benchmark ---------------------------------------------------------------------
@dataclass
class BenchRow:
    layer: Any
    two: LayerRun
    one: LayerRun
    seconds: float = 0.0  # wall time of both builds and runs

    @property
    def speedup(self) -> float:
        return self.one.cycles / self.two.cycles

    @property
    def compute_bound(self) -> bool:
        return self.two.roofline_cycles == self.two.ideal_cycles

    def hidden_bound(self) -> float:
        """The best speedup latency hiding could give over the 1-thread run: compute's cycles
        spent waiting for tokens (loads and stores) removed."""
        wait = self.one.modules.get("compute", {}).get("wait_token", 0)
        return self.one.cycles / max(1, self.one.cycles - wait)


def bench_rows(
    config: str, names: list[str] | None = None, progress: bool = False
) -> list[BenchRow]:
    """Run the benchmark (a layer at full size takes seconds to a minute: ``progress`` shows a
    bar of the layers on stderr)."""
    import isa
    from compiler.errors import CompilerError
    from compiler.topi.vta import RESNET18_LAYERS, Conv2dKnobs
    from compiler.topi.vta.testing import build_conv2d

    batch = isa.load_config(config).batch  # a batch-4 core runs 4 images at a time
    todo = [replace(layer, batch=batch) for layer in RESNET18_LAYERS
            if not names or layer.name in names]  # fmt: skip
    bar = _layer_bar(len(todo)) if progress else None
    rows = []
    for layer in todo:
        if bar is not None:
            bar.set_postfix_str(layer.name)
        t0 = time.time()
        try:
            two = build_conv2d(layer, config, nthreads=2, relu=True)
            knobs = two.knobs
            if not isinstance(knobs, Conv2dKnobs):
                raise CompilerError(f"build_conv2d chose {type(knobs).__name__}, not conv2d knobs")
            one = build_conv2d(layer, config, knobs=knobs.single_thread(), relu=True)
        except CompilerError as exc:
            raise CompilerError(f"layer {layer.name} ({layer.describe()}): {exc}") from exc
        rows.append(BenchRow(layer, run_built(two), run_built(one), time.time() - t0))
        if bar is not None:
            bar.update()
    if bar is not None:
        bar.close()
    return rows


def _layer_bar(total: int) -> Any:
    """A tqdm bar on stderr counting the benchmark's layers."""
    from tqdm import tqdm

    return tqdm(total=total, desc="resnet18-layers", unit="layer", file=sys.stderr, leave=False)


def format_table(rows: list[BenchRow], config: Any) -> str:
    """The benchmark table (:func:`isa.report.format_table`), with its legend."""
    from isa.report import Column
    from isa.report import format_table as table

    columns = [
        Column("layer"),
        Column(
            "shape", legend="batch x channels x height x width -> output channels, kernel/stride"
        ),
        Column("cycles 1T", "int", "cycles with one virtual thread"),
        Column("cycles 2T", "int", "cycles with two virtual threads (latency hiding)"),
        Column("ideal", "int", "MACs / MACs per cycle: the GEMM core never idle"),
        Column("roofline", "int", "max(ideal, compulsory DRAM bytes / bytes per cycle)"),
        Column("roof 2T", "pct", "roofline / cycles with two threads"),
        Column("util 2T", "pct", "GEMM micro-ops per cycle over the peak, two threads"),
        Column("DRAM MB", "text", "bytes moved / compulsory bytes (inputs, weights, output once)"),
        Column("2T/1T", "float3", "speed-up of the second virtual thread"),
        Column("match", "text", "both runs bit-exact against numpy"),
        Column("s", "float1", "seconds to build and run both"),
    ]
    body = [
        (
            r.layer.name, r.layer.describe().split(": ", 1)[-1], r.one.cycles, r.two.cycles,
            r.two.ideal_cycles,
            r.two.roofline_cycles, r.two.roofline_fraction, r.two.utilization,
            f"{r.two.moved_bytes / 1e6:.3f}/{r.two.compulsory_bytes / 1e6:.3f}", r.speedup,
            "yes" if r.two.match and r.one.match else "NO", r.seconds,
        )
        for r in rows
    ]  # fmt: skip
    lines = [
        f"ResNet-18 conv2d layers on {config.name}: {config.batch}x{config.block_in}x"
        f"{config.block_out} GEMM core ({config.macs_per_cycle} MACs/cycle), "
        f"{config.bus_bytes} DRAM bytes/cycle; batch {config.batch}, int8, relu epilogue",
        table(columns, body),
    ]
    knobs = [
        Column("layer"),
        Column(
            "knobs 2T",
            legend="the heuristic's for 2 threads; the 1T run uses the same tiles "
            "without the thread split",
        ),
    ]
    lines += ["", table(knobs, [(r.layer.name, r.two.knobs) for r in rows])]
    return "\n".join(lines)


def format_findings(rows: list[BenchRow]) -> str:
    """What the table shows, in figures: bit-exactness, how close the 3x3 layers come to their
    roofline with two threads, and what bounds the second thread's gain where compute limits."""
    lines = ["findings:"]
    bad = [r.layer.name for r in rows if not (r.one.match and r.two.match)]
    lines.append(
        "  every layer bit-exact against numpy"
        if not bad
        else f"  results differ from numpy on {', '.join(bad)}"
    )
    for r in rows:
        if r.layer.name not in THREE_BY_THREE:
            continue
        line = f"  {r.layer.name}: 2T at {r.two.roofline_fraction:.1%} of the roofline"
        if r.compute_bound:
            one = r.one
            busy = one.gemm_uops / one.cycles
            line += (
                f"; 2T/1T {r.speedup:.3f}: with 1 thread GEMM is already busy {busy:.1%} of the "
                f"cycles and compute waits on tokens {1 - 1 / r.hidden_bound():.1%}, so hiding "
                f"every wait gives at most {r.hidden_bound():.3f}"
            )
        lines.append(line)
    return "\n".join(lines)


def _bench(args: argparse.Namespace) -> int:
    import isa
    from compiler.errors import CompilerError
    from compiler.topi.vta import RESNET18_LAYERS

    cfg = isa.load_config(args.config)
    names = [n.strip() for n in args.layers.split(",")] if args.layers else None
    known = [layer.name for layer in RESNET18_LAYERS]
    unknown = [n for n in names or [] if n not in known]
    if unknown or names == []:
        raise CompilerError(
            f"--layers: unknown layer(s) {unknown or [args.layers]}; layers: {', '.join(known)}"
        )
    print(f"running ResNet-18 layers on {cfg.name} (full size, 2 threads then 1)", flush=True)
    rows = bench_rows(args.config, names, progress=args.progress or sys.stderr.isatty())
    if args.json:
        for r in rows:
            print(json.dumps({"two_threads": r.two.to_json(), "one_thread": r.one.to_json(),
                              "speedup": r.speedup}, allow_nan=False))  # fmt: skip
    else:
        print(format_table(rows, cfg))
        print(format_findings(rows))
    return 0 if all(r.one.match and r.two.match for r in rows) else 1


# ---- the demo ------------------------------------------------------------------------------------
def c9_cross_check(out: Any = None) -> bool:
    """C9 under vta-1x16x16 with VTA's tutorial schedule against VTA's published counters."""
    from compiler.topi.vta import C9_VTA_TUTORIAL_COUNTS, RESNET18, Conv2dKnobs
    from compiler.topi.vta.conv2d import LoopOrder
    from compiler.topi.vta.testing import build_conv2d
    from isa.report import Column
    from isa.report import format_table as table

    out = sys.stdout if out is None else out
    knobs = Conv2dKnobs(tile_h=7, tile_w=14, tile_ci=1, tile_co=8, oc_nthread=2,
                        loop_order=LoopOrder.CO_H)  # fmt: skip
    built = build_conv2d(RESNET18["C9"], "vta-1x16x16", knobs, relu=True, shift=8)
    run = run_built(built)
    want = C9_VTA_TUTORIAL_COUNTS
    got = {
        "gemm_uops": run.gemm_uops,
        "alu_uops": run.result.alu_uops,
        "wgt_load_bytes": run.dram_bytes["wgt"],
        "inp_load_bytes": run.dram_bytes["inp"],
        "out_store_bytes": run.dram_bytes["out"],
    }
    print("C9 on vta-1x16x16 with the schedule of VTA's conv2d tutorial "
          f"({built.knobs.describe()}):", file=out)  # fmt: skip
    same = {key: got[key] == value for key, value in want.items()}
    ok = run.match and all(same.values())
    columns = [
        Column("counter"),
        Column("ours", "int", "this simulator's count"),
        Column("VTA", "int", "VTA's published count for the same schedule"),
        Column("check", legend="same, or DIFFERS"),
    ]
    rows = [(k, got[k], v, "same" if same[k] else "DIFFERS") for k, v in want.items()]
    print(table(columns, rows, legend=False), file=out)
    print(f"  result {'matches' if run.match else 'DOES NOT match'} numpy; {run.cycles} cycles",
          file=out)  # fmt: skip
    return ok


def _demo(args: argparse.Namespace) -> int:
    from runtime.demo import run_demo

    return run_demo(args)
