"""GPU backend: launch configuration, registers, shared memory and occupancy of the ResNet-18
layers on an H100-class device (float32, batch 1, default GPU schedules).

For each conv2d layer C1..C12 (from ``compiler.topi.vta.workloads``) and the final dense layer
the kernel is compiled to PTX for sm_90 and, when the CUDA assembler is installed, assembled
with ``ptxas -v``: its register count feeds the occupancy calculation of
``compiler.targets.gpu.device``. Without ``ptxas`` the register column says ``n/a`` (with the
reason) and occupancy counts threads, blocks and shared memory only. ``waves`` is the number
of rounds of resident blocks the grid needs on the device's SMs; ``smem%`` is the block's
static shared memory over the per-block limit.

    python -m bench.bench_gpu [--layers C2,C9] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

from isa.report import Column, format_table

#: The table: one row per kernel, its launch and the H100's occupancy of it.
COLUMNS = [
    Column("layer"),
    Column("grid", legend="blocks along x, y, z"),
    Column("block", legend="threads along x, y, z"),
    Column("smem B", "int", "shared memory per block, bytes"),
    Column("smem%", "pct", "shared memory per block over the most a block may have"),
    Column("regs", "int", "registers per thread (ptxas -v; n/a without ptxas)"),
    Column("blk/SM", "int", "blocks resident per SM"),
    Column("occ", "pct", "resident warps over the SM's most", digits=0),
    Column("limit", legend="what limits the blocks per SM"),
    Column("waves", "float", "blocks over the blocks resident on all SMs at once"),
    Column("compile s", "float", "seconds to build the kernels"),
]


def layers(names: list[str] | None) -> list:
    from compiler.topi.vta.workloads import RESNET18_LAYERS

    chosen = [l for l in RESNET18_LAYERS if names is None or l.name in names]
    unknown = set(names or ()) - {l.name for l in RESNET18_LAYERS} - {"FC"}
    if unknown:
        raise SystemExit(f"unknown layers {sorted(unknown)}; known: C1..C12, FC")
    return chosen


def build_conv(layer) -> object:  # noqa: ANN001
    from compiler import te, topi
    from compiler.build import build
    from compiler.topi.gpu import schedule_gpu

    x = te.placeholder((layer.batch, layer.in_c, layer.h, layer.w), name="data")
    w = te.placeholder((layer.out_c, layer.in_c, layer.k, layer.k), name="weight")
    out = topi.conv2d_nchw(x, w, layer.stride, layer.pad)
    return build(schedule_gpu([out], anchor=out), [x, w, out], target="gpu", name=layer.name)


def build_fc() -> object:
    from compiler import te, topi
    from compiler.build import build
    from compiler.topi.gpu import schedule_gpu

    x = te.placeholder((1, 512), name="data")
    w = te.placeholder((1000, 512), name="weight")
    out = topi.dense(x, w)
    return build(schedule_gpu([out], anchor=out), [x, w, out], target="gpu", name="FC")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_gpu", description=__doc__)
    parser.add_argument("--layers", default=None, help="comma-separated subset, e.g. C2,C9,FC")
    parser.add_argument("--json", action="store_true", help="one JSON object per layer")
    args = parser.parse_args(argv)
    names = args.layers.split(",") if args.layers else None
    from compiler.targets.gpu import H100
    from compiler.targets.gpu.ptx import ptxas_unavailable_reason

    reason = ptxas_unavailable_reason()
    if not args.json:
        print(f"device {H100.name} ({H100.arch}, {H100.sm_count} SMs); registers from "
              f"{'ptxas -v' if reason is None else 'n/a: ' + reason}")  # fmt: skip
    todo = [(l.name, lambda l=l: build_conv(l)) for l in layers(names)]
    if names is None or "FC" in names:
        todo.append(("FC", build_fc))
    table: list[tuple[object, ...]] = []
    for name, make in todo:
        t0 = time.perf_counter()
        module = make()
        res = module.resources(H100)  # type: ignore[attr-defined]
        seconds = time.perf_counter() - t0
        for r in res:
            occ = r.occupancy
            blocks = math.prod(r.grid)
            waves = blocks / max(1, occ.blocks_per_sm * H100.sm_count)
            smem_pct = r.shared_bytes / H100.shared_bytes_per_block
            row = {
                "layer": name,
                "kernel": r.kernel,
                "grid": list(r.grid),
                "block": list(r.block),
                "shared_bytes": r.shared_bytes,
                "shared_fraction": round(smem_pct, 4),
                "registers": r.registers,
                "registers_source": "ptxas -v" if r.registers is not None else r.unavailable,
                "spill_bytes": None
                if r.ptxas is None
                else r.ptxas.spill_stores + r.ptxas.spill_loads,
                "blocks_per_sm": occ.blocks_per_sm,
                "occupancy": round(occ.occupancy, 4),
                "limited_by": occ.limited_by,
                "waves": round(waves, 2),
                "compile_seconds": round(seconds, 2),
            }
            if args.json:
                print(json.dumps(row))
                continue
            regs = "n/a" if r.registers is None else r.registers
            table.append(
                (
                    name,
                    str(r.grid),
                    str(r.block),
                    r.shared_bytes,
                    smem_pct,
                    regs,
                    occ.blocks_per_sm,
                    occ.occupancy,
                    occ.limited_by,
                    waves,
                    seconds,
                )
            )
    if not args.json:
        print(format_table(COLUMNS, table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
