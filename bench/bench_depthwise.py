"""Depthwise conv2d on the accelerator (GEMM on diagonal weight tiles), per preset and shape.

Each layer (one depthwise conv2d + relu, quantized and compiled as ``vtac run --target vta``
builds it) runs on the simulator, bit-exact against the quantized graph's integer reference.
Its cycles are compared with the GEMM floor of the diagonal design: one micro-op per tap and
accumulator entry (``C / block * OH * OW * K * K`` at ``gemm_ii``; the rest is the
requantization on the ALU and the DMA), and with the floor of the design not built, a
multiply-accumulate on the ALU (three tensor-tensor instructions per tap and entry at
``alu_ii``: copy the tap, MUL by the per-channel weight tile, ADD into the sum).

    python -m bench.bench_depthwise [--presets default,vta-1x16x16] [--channels 64] [--size 28]
"""

from __future__ import annotations

import argparse

import numpy as np

from isa.report import Column, format_table


def _layer(c: int, size: int, k: int, stride: int):
    from onnx import helper

    from compiler.frontend.onnx_import import from_onnx
    from tests.compiler.frontend.helpers import make_model

    rng = np.random.default_rng(0)
    pad = (k - 1) // 2
    inits = {
        "wd": (rng.standard_normal((c, 1, k, k)) * 0.3).astype(np.float32),
        "bd": rng.standard_normal(c).astype(np.float32),
    }
    nodes = [
        helper.make_node(
            "Conv",
            ["x", "wd", "bd"],
            ["d"],
            group=c,
            strides=[stride] * 2,
            pads=[pad] * 4,
            name="dw",
        ),  # fmt: skip
        helper.make_node("Relu", ["d"], ["y"], name="act"),
    ]
    x = rng.standard_normal((1, c, size, size)).astype(np.float32)
    return from_onnx(make_model(nodes, {"x": np.zeros_like(x)}, ["y"], inits)), {"x": x}


def main(argv: list[str] | None = None) -> int:
    import isa
    from runtime.vta_target import compile_network

    p = argparse.ArgumentParser(prog="python -m bench.bench_depthwise", description=__doc__)
    p.add_argument("--presets", default="default,vta-1x16x16")
    p.add_argument("--channels", type=int, default=64)
    p.add_argument("--size", type=int, default=28)
    args = p.parse_args(argv)
    ok = True
    columns = [
        Column("preset"),
        Column("layer", legend="channels x height x width, kernel, stride"),
        Column("cycles", "int", "the depthwise group's cycles"),
        Column("GEMM floor", "int", "one GEMM micro-op per tap and accumulator entry, at gemm_ii"),
        Column("cycles/floor", "float", "cycles over the GEMM floor"),
        Column("ALU-MAC floor", "int", "three ALU instructions per tap and entry (not built)"),
        Column("bit-exact", legend="the group's output equals the reference executor's"),
    ]
    rows = []
    for preset in args.presets.split(","):
        cfg = isa.load_config(preset)
        for k, stride in ((3, 1), (3, 2), (5, 1), (5, 2)):
            graph, feed = _layer(args.channels, args.size, k, stride)
            net = compile_network(graph, preset, calibration=[feed])
            run = net.run(feed)
            exact = bool(np.array_equal(run.outputs[0], net.reference(feed)[0]))
            ok &= exact
            cycles = {r.name: r.cycles for r in run.layers}["dw"]
            out = -(-args.size // stride)
            blocks = -(-args.channels // cfg.block_out)
            floor = blocks * out * out * k * k * cfg.gemm_ii
            # the ALU alternative: per tap and entry, copy the tap, MUL by the weight tile,
            # ADD into the sum (three tensor-tensor instructions at alu_ii); not built
            alu = blocks * out * out * k * k * 3 * cfg.alu_ii
            name = f"{args.channels}x{args.size}x{args.size} k{k} s{stride}"
            rows.append((preset, name, cycles, floor, cycles / floor, alu, str(exact)))
    print(format_table(columns, rows))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
