"""One SHA-256 per (preset, image size) over everything a cold accelerator compile of ResNet-18
produces: every group's program (its DRAM image: instructions and micro-ops, the instruction
location, the symbols), its packed parameters, knobs, MACs and ALU step counts, and the network's
DRAM image. Speed work on the compiler must leave these digests unchanged: run it before and
after and compare.

    python -m bench.compile_digest [--configs default,vta-1x16x16,4x4x4] [--sizes 64,224]

The compile cache is off (``cache=False``), so every group is compiled in this process.
"""

from __future__ import annotations

import argparse
import hashlib
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import sys  # noqa: E402
import time  # noqa: E402
from typing import Any  # noqa: E402

from isa.report import Column, format_table  # noqa: E402

#: One row per compile: compare the digests of two runs row by row.
COLUMNS = [
    Column("model"),
    Column("size", "int", "input height and width"),
    Column("config"),
    Column("digest", legend="SHA-256 of the compiled network (module docstring)"),
    Column("CPU s", "float", "CPU seconds of the compile"),
]


def _update_array(h: Any, array: Any) -> None:
    import numpy as np

    a = np.ascontiguousarray(array)
    h.update(f"{a.dtype.str}{a.shape}".encode())
    h.update(a.tobytes())


def network_digest(net: Any) -> str:
    """The SHA-256 of ``net``'s groups (in the partition's order) and its DRAM image."""
    h = hashlib.sha256()
    for group in net.partition.groups:
        layer = net.layers[group.name]
        prog = layer.program
        h.update(f"{group.name}|{prog.insn_base}|{prog.insn_count}".encode())
        for name in sorted(prog.symbols):
            h.update(repr(prog.symbols[name]).encode())
        _update_array(h, prog.dram)
        for key in sorted(layer.params):
            h.update(key.encode())
            _update_array(h, layer.params[key])
        h.update(f"{layer.knobs!r}|{layer.macs}|{layer.alu_steps}|{layer.alu_imm_steps}".encode())
    plan = net.dram_plan
    _update_array(h, plan.dram)
    for name in sorted(plan.groups):
        image = plan.groups[name]
        h.update(f"{name}|{image.insn_base}|{image.insn_count}|{image.aliased}".encode())
    return h.hexdigest()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", default="default,vta-1x16x16,4x4x4")
    parser.add_argument("--sizes", default="64,224")
    args = parser.parse_args(argv)

    import numpy as np

    from compiler.frontend.onnx_import import from_onnx
    from compiler.frontend.zoo import load_zoo
    from runtime.vta_target import compile_network

    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        graph = from_onnx(load_zoo("resnet18", batch=1, image_size=size))
        shape = graph.inputs[0].type.shape
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        feed = {graph.inputs[0].name: x}
        for config in args.configs.split(","):
            t0 = time.process_time()
            net = compile_network(graph, config, calibration=feed, cache=False)
            cpu = time.process_time() - t0
            rows.append(("resnet18", size, config, network_digest(net), cpu))
            print(f"compiled resnet18 {size} {config}", file=sys.stderr, flush=True)
    print(format_table(COLUMNS, rows))


if __name__ == "__main__":
    main()
