"""The accelerator target on ResNet-18's conv2d layers, for every hardware preset.

For each preset the layers C1..C12 run at full size (at the core's batch) on the simulator,
bit-exact against numpy, with the heuristic's tiles and 2 virtual threads, and against the same
tiles without the thread split, the peer measured in the same run: the ratio is the speedup
latency hiding gives. Cycles are also compared with the ideal (MACs over the core's MACs per
cycle) and with the roofline bound (the larger of the ideal and the compulsory DRAM bytes over
the bus width). The C9 cross-check compares the compiler's counts under VTA's tutorial schedule
with those VTA's own functional simulator published.

    python -m bench.bench_vta [--presets default,vta-1x16x16] [--layers C2,C9]
"""

from __future__ import annotations

import argparse
import sys

import isa
from runtime.layer_cli import bench_rows, c9_cross_check, format_findings, format_table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_vta", description=__doc__)
    parser.add_argument("--presets", default="default,vta-1x16x16,4x4x4")
    parser.add_argument("--layers", default=None, help="comma-separated subset, e.g. C2,C9")
    args = parser.parse_args(argv)
    names = args.layers.split(",") if args.layers else None
    ok = True
    for preset in args.presets.split(","):
        cfg = isa.load_config(preset)
        print(f"== {preset}", flush=True)
        rows = bench_rows(preset, names, progress=sys.stderr.isatty())
        print(format_table(rows, cfg))
        print(format_findings(rows))
        speedups = [r.speedup for r in rows]
        lo, hi = min(speedups), max(speedups)
        print(f"2 threads / 1 thread: geometric mean {_gmean(speedups):.3f}, {lo:.3f}..{hi:.3f}\n")
        ok &= all(r.one.match and r.two.match for r in rows)
    ok &= c9_cross_check()
    return 0 if ok else 1


def _gmean(values: list[float]) -> float:
    prod = 1.0
    for v in values:
        prod *= v
    return prod ** (1 / len(values)) if values else float("nan")


if __name__ == "__main__":
    sys.exit(main())
