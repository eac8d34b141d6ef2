"""``vtac demo``: the main job on the built-in defaults, in under a minute.

ResNet-18 (the zoo's topology with seeded random weights, at 32x32 so that it runs in seconds)
is quantized to int8 and compiled for VTA's own 1x16x16 core, then run on the simulator. The
demo prints the per-layer table, draws the whole network's pipeline picture (where each layer's
cycles went, beside the roofline of every layer) and the Gantt chart of its slowest layer,
writes one Perfetto trace of the whole run, and checks one layer's program on the Verilog RTL
(byte for byte and cycle for cycle against the simulator). It ends with commands to try next.

Everything it writes goes to ``out/`` under the current directory.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

#: Where the demo writes its pictures and its trace (``/out/`` is ignored by git).
OUT = Path("out")
CONFIG = "vta-1x16x16"
IMAGE_SIZE = 32

NEXT_STEPS = (
    ("the same network at full size, with its per-layer figure",
     "vtac run resnet18 --target vta --config vta-1x16x16 --plot layers.png"),
    ("a real trained model on a photo (after `make real-models`)",
     "vtac run build/real-models/efficientnet_lite1.onnx --target vta --input "
     "build/real-models/photos/chelsea.png --preprocess symmetric --resize short:256,crop:240"),
    ("compile once, run many times", "vtac compile resnet18 --target vta -o r18.vtac && "
     "vtac run r18.vtac"),
    ("one layer, its schedule and its program", "vtac layer conv2d --h 14 --w 14 --in-c 256 "
     "--out-c 256 --k 3 --pad 1 --check --json"),
    ("tune a layer's schedule", "vtac tune conv2d --h 14 --w 14 --in-c 64 --out-c 64 --k 3 "
     "--pad 1 --trials 32 --log t.jsonl"),
    ("explore hardware configurations", "vtac explore resnet18-layers --layers C9 --trials 16 "
     "--plot front.png"),
)  # fmt: skip


def run_demo(args: argparse.Namespace) -> int:
    """The ``vtac demo`` command; returns the exit status."""
    from compiler.model.vta_program import accel_kernels, host_kernels
    from runtime.session import check_feeds
    from runtime.vta_session import VtaInferenceSession
    from vta_sim.plot import save_gantt, save_network_figure

    OUT.mkdir(exist_ok=True)
    t0 = time.perf_counter()
    print(f"== ResNet-18 ({IMAGE_SIZE}x{IMAGE_SIZE}, seeded random weights) quantized to int8 "
          f"and compiled for {CONFIG}", flush=True)  # fmt: skip
    x = np.random.default_rng(0).standard_normal((1, 3, IMAGE_SIZE, IMAGE_SIZE), np.float32)
    sess = VtaInferenceSession(
        "resnet18", "vta", config=CONFIG, image_size=IMAGE_SIZE, calibration=x
    )
    prog = sess.program
    groups = accel_kernels(prog)
    print(f"   {len(groups)} accelerator groups and {len(host_kernels(prog))} host "
          f"groups, compiled in {sess.compile_seconds:.1f} s", flush=True)  # fmt: skip
    run = sess.executor.run(check_feeds(prog.inputs, {prog.inputs[0].name: x}), trace=True)
    print(f"== run on the simulator ({time.perf_counter() - t0:.1f} s so far)\n", flush=True)
    print(run.table(legend=False))

    layers = [r for r in run.layers if r.device == "vta"]
    figure = save_network_figure(run.config, layers, OUT / "demo_network.png")
    slowest = max(layers, key=lambda r: r.cycles)
    trace = next(t for name, _, t in run.traces if name == slowest.name)
    gantt = save_gantt(trace, OUT / "demo_gantt.png")
    run.save_trace(str(OUT / "demo_trace.json"))
    print()
    print(f"pipeline picture (stalls and roofline per layer): {figure}")
    print(f"Gantt chart of the slowest layer, {slowest.name}: {gantt}")
    print(f"Perfetto trace of the whole run (ui.perfetto.dev): {OUT / 'demo_trace.json'}")

    ok = _rtl_check(groups, layers)
    print(f"\n(demo took {time.perf_counter() - t0:.1f} s)")
    print("\nwhat to try next:")
    for what, command in NEXT_STEPS:
        print(f"  # {what}\n  {command}")
    return 0 if ok else 1


def _rtl_check(groups: list[Any], layers: list[Any]) -> bool:
    """Run the program of the network's shortest accelerator layer on the RTL (Icarus), with
    seeded int8 data, and compare it with the simulator; a missing RTL simulator is said, not
    failed."""
    from hw.sim import missing_simulator

    cycles = {r.name: r.cycles for r in layers}
    kernel, step = min(groups, key=lambda g: cycles[g[0].name])
    reason = missing_simulator("icarus")
    if reason is not None:
        print(f"\nRTL check skipped: {reason}")
        return True
    from hw.coverify import coverify

    prog = step.program.copy()
    data = prog.read("data")
    prog.write("data", np.random.default_rng(1).integers(-128, 128, data.shape, data.dtype))
    print(f"\n== layer {kernel.name} on the Verilog RTL (Icarus) against the simulator", flush=True)
    res = coverify(prog, simulator="icarus")
    same_bytes = "equal" if res.match else f"DIFFERENT ({res.mismatch and res.mismatch.message()})"
    same_cycles = "equal" if res.rtl_cycles == res.sim_cycles else "DIFFERENT"
    print(f"   DRAM image {same_bytes}; cycles {same_cycles} (RTL {res.rtl_cycles:,}, "
          f"simulator {res.sim_cycles:,})", file=sys.stdout)  # fmt: skip
    return bool(res.match and res.rtl_cycles == res.sim_cycles)


__all__ = ["run_demo"]
