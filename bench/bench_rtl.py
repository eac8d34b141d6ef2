"""RTL against the simulator: the cycle-agreement table, and a large program on Verilator.

For every co-verification program (hand-assembled for each preset, the assembler examples, and
compiler-produced layers when the compiler can emit them) it runs the RTL and the simulator
and prints rtl_cycles, sim_cycles and their ratio; every program must also match bit for bit.
Then it runs the largest program (a full-size ResNet-18 layer when the compiler can produce
one, otherwise the largest hand-made GEMM) on Verilator and reports the simulation rate.

    python -m bench.bench_rtl [--presets default,4x4x4] [--simulator icarus] [--no-large]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import isa
from hw import programs
from hw.coverify import coverify
from hw.sim import missing_simulator
from isa.asm import assemble

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
    for ex in ("alu_ops", "matmul16", "padded_load"):
        prog = assemble((EXAMPLES / f"{ex}.vasm").read_text(), source=f"{ex}.vasm")
        out.append((f"{ex}.vasm", prog.config.name, prog))
    out += compiler_programs()
    return out


def compiler_programs() -> list[tuple[str, str, isa.Program]]:
    """Scaled-down ResNet-18 layers from ``vtac layer``, when the compiler provides it."""
    tool = shutil.which("vtac")
    if tool is None:
        return []
    probe = subprocess.run([tool, "layer", "--help"], capture_output=True, text=True)
    if probe.returncode != 0:
        print("note: `vtac layer` is not available yet; no compiler-produced programs",
              file=sys.stderr)
        return []
    print("note: `vtac layer` exists but this benchmark does not drive it yet", file=sys.stderr)
    return []


def agreement_table(simulator: str, presets: list[str]) -> bool:
    rows = []
    ok = True
    for name, preset, prog in suite(presets):
        t0 = time.perf_counter()
        r = coverify(prog, simulator=simulator)
        wall = time.perf_counter() - t0
        ratio = r.cycle_ratio
        ok &= r.match and ratio is not None and abs(ratio - 1) <= 0.10
        rows.append((name, preset, r.rtl_cycles, r.sim_cycles, ratio, r.match, wall))
    print(f"\nCycle agreement, RTL ({simulator}) vs simulator (vta_sim): ratio = sim / rtl")
    head = f"{'program':<18} {'preset':<12} {'rtl_cycles':>10} {'sim_cycles':>10} " \
           f"{'ratio':>7} {'bit-exact':>9} {'wall s':>7}"
    print(head)
    print("-" * len(head))
    for name, preset, rc, sc, ratio, match, wall in rows:
        rs = "n/a" if ratio is None else f"{ratio:.4f}"
        print(f"{name:<18} {preset:<12} {rc:>10} {sc if sc is not None else 'n/a':>10} "
              f"{rs:>7} {'yes' if match else 'NO':>9} {wall:>7.1f}")
    exact = sum(1 for r in rows if r[2] == r[3])
    print(f"{len(rows)} programs, {exact} with equal cycle counts, all within 10%: {ok}")
    return ok


def large_run(simulator: str) -> None:
    cfg = isa.load_config("default")
    prog = programs.large_gemm(cfg, m=64, k=32, n=32)
    uops = 64 * 32 * 32
    print(f"\nLarge program on {simulator}: hand-made GEMM 64x32x32 tiles ({uops} micro-ops, "
          "default preset); no compiler-produced full-size ResNet-18 layer is available")
    with tempfile.TemporaryDirectory():
        t0 = time.perf_counter()
        r = coverify(prog, simulator=simulator)
        wall = time.perf_counter() - t0
    rate = r.rtl_cycles / r.run.wall_seconds if r.run.wall_seconds else float("nan")
    print(f"  bit-exact: {r.match}; rtl_cycles {r.rtl_cycles}, sim_cycles {r.sim_cycles}, "
          f"ratio {r.cycle_ratio:.4f}; utilization {uops / r.rtl_cycles:.2f} micro-ops/cycle")
    print(f"  wall {wall:.1f} s (build included), simulation {r.run.wall_seconds:.1f} s, "
          f"{rate:,.0f} cycles/s")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.bench_rtl", description=__doc__)
    ap.add_argument("--presets", default=",".join(isa.preset_names()))
    ap.add_argument("--simulator", default="icarus", choices=("icarus", "verilator"))
    ap.add_argument("--no-large", action="store_true", help="skip the large Verilator run")
    args = ap.parse_args(argv)
    why = missing_simulator(args.simulator)
    if why:
        print(f"skipped: {args.simulator} unavailable: {why}")
        return 0
    ok = agreement_table(args.simulator, [p for p in args.presets.split(",") if p])
    if not args.no_large:
        big = "verilator" if missing_simulator("verilator") is None else args.simulator
        large_run(big)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
