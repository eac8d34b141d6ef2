"""A whole network on the accelerator before and after tuning: ``vtac tune MODEL --target vta``
then ``vtac run MODEL --target vta --tuning-log`` in one process.

The model (ResNet-18 by default) is quantized on seeded random data and partitioned as
``vtac compile`` does it; each unique conv2d / dense group is a task (its shapes and its
epilogue's ALU step structure, :mod:`compiler.model.tuning`) tuned for ``--trials`` measurements
on the simulator with the heuristic's point measured first. The network is then compiled twice,
with the heuristic's knobs and with the log's best records, and run on the same seeded input:
the benchmark prints per accelerator group the cycles before and after, the totals, and checks
that the two networks' outputs are the same bits (knobs never change results).

    taskset -c 1 python -m bench.bench_network_tune --image-size 56 --trials 16 --seed 0
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from isa.report import Column, format_table

#: The tuning table: one row per task.
TASK_COLUMNS = [
    Column("task"),
    Column("groups", "int", "accelerator groups of the network that share the task"),
    Column("heuristic", "int", "cycles of the heuristic's schedule"),
    Column("best", "int", "cycles of the best measured schedule"),
]

#: The network table: one row per accelerator group, both networks run on the same input.
GROUP_COLUMNS = [
    Column("group"),
    Column("heuristic", "int", "the group's cycles compiled with the heuristic's knobs"),
    Column("tuned", "int", "the group's cycles compiled with the log's best record"),
    Column("speedup", "ratio", "heuristic over tuned"),
    Column(
        "knobs",
        legend="tuned: the log's record; heuristic: none usable; no knobs: a group without "
        "knobs (pools, element-wise)",
    ),
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet18", help="zoo model")
    ap.add_argument("--image-size", type=int, default=56)
    ap.add_argument("--config", default="vta-1x16x16")
    ap.add_argument("--trials", type=int, default=16, help="measurements per task")
    ap.add_argument("--tuner", default="model", choices=["model", "random", "grid"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--log", default=None, help="tuning log (default: a temporary file)")
    args = ap.parse_args(argv)

    import isa
    from compiler.frontend.onnx_import import from_onnx
    from compiler.frontend.zoo import load_zoo
    from compiler.model.calibration import calibration_feeds
    from compiler.model.program import TensorSpec
    from compiler.model.tuning import load_network_tuning, partition_tasks
    from compiler.model.vta import quantize_partition
    from compiler.tune.tuner import make_tuner
    from runtime.measure import LocalRunner
    from runtime.vta_target import compile_network

    graph = from_onnx(load_zoo(args.model, image_size=args.image_size), name=args.model)
    specs = [TensorSpec(v.name, tuple(v.type.shape), str(v.type.dtype)) for v in graph.inputs]
    calibration = calibration_feeds(specs, None)
    cfg_name = args.config
    cfg = isa.load_config(cfg_name)
    _, part, _ = quantize_partition(graph, cfg, calibration=calibration)
    found = partition_tasks(part, cfg)
    log = Path(args.log) if args.log else Path(tempfile.mkdtemp()) / "tune.jsonl"
    print(f"{args.model} at {args.image_size}x{args.image_size} on {cfg_name}: "
          f"{len(found.tasks)} tasks from {sum(t.weight for t in found.tasks)} groups, "
          f"{args.trials} trials each ({args.tuner}, seed {args.seed}), log {log}")  # fmt: skip
    t0 = time.perf_counter()
    task_rows = []
    with LocalRunner(args.workers) as runner:
        for task in found.tasks:
            default = task.default_config()
            tuner = make_tuner(args.tuner, task, args.seed)
            state = tuner.tune(runner, args.trials, batch_size=8, log=str(log),
                               initial=[default.index])  # fmt: skip
            base = next((r for r in state.records if r.config.index == default.index), None)
            before = base.result.cost if base is not None and base.result.ok else float("nan")
            task_rows.append((task.name, task.weight, before, state.best_cost))
            print(f"tuned {task.name} ({len(task_rows)}/{len(found.tasks)})", file=sys.stderr,
                  flush=True)  # fmt: skip
    tune_s = time.perf_counter() - t0
    print(format_table(TASK_COLUMNS, task_rows))

    feeds = {s.name: np.random.default_rng(args.seed).standard_normal(s.shape).astype(np.float32)
             for s in specs}  # fmt: skip
    plain = compile_network(graph, cfg_name, calibration=calibration)
    tuning = load_network_tuning(log, cfg_name)
    tuned = compile_network(graph, cfg_name, calibration=calibration, tuning=tuning)
    a = plain.run(feeds)
    b = tuned.run(feeds)
    same = all(x.tobytes() == y.tobytes() for x, y in zip(a.outputs, b.outputs, strict=True))
    rows = {r.name: r.cycles for r in a.layers if r.device == "vta"}
    tuned_groups = {g for g, _ in tuning.used}
    fell_back = {g for g, _ in tuning.fell_back}
    groups = [
        (r.name, rows[r.name], r.cycles, rows[r.name] / r.cycles,
         "tuned" if r.name in tuned_groups else "heuristic" if r.name in fell_back else "no knobs")
        for r in b.layers
        if r.device == "vta"
    ]  # fmt: skip
    total = ("total", a.total_cycles, b.total_cycles, a.total_cycles / b.total_cycles, "")
    print()
    print(format_table(GROUP_COLUMNS, groups, total=total))
    print(f"tuning took {tune_s:.0f} s; outputs {'bit-identical' if same else 'DIFFER'}")
    for line in tuning.report().splitlines()[1:]:
        print(line)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
