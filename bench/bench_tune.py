"""The tuner against its baselines, on spaces small enough to enumerate, and the measurement
pool's throughput with 1 and 2 workers.

For each enumerable task, every valid point is measured once on the simulator (cycles are
deterministic, so that table *is* what any tuner would measure; tuners then replay it). Then,
over ``--seeds`` seeds, random search and model-guided search (simulated annealing on the
XGBoost rank model) each run ``--trials`` measurements in batches of 8, and the benchmark prints
the medians of:

* the best found within 64 measurements as a fraction of the exhaustive best;
* the measurements each needs to reach 95% of the exhaustive best (model-guided against
  random, as a ratio);
* the heuristic's choice as a fraction of the exhaustive best, for reference.

``--resnet18`` tunes ResNet-18's conv2d layers on ``vta-1x16x16`` (``--layers`` to pick some)
with model-guided search for ``--resnet-trials`` measurements per layer and ``--seeds`` seeds
(at least 3 for medians that mean something), the heuristic's choice measured first, and prints per
layer the heuristic's cycles and share of the roofline, the median tuned cycles (over the seeds)
and their share, the speedup and the seeds' range. A layer still below 90% after tuning is run
once more at its median seed's best point and the resource that holds it is named from the
simulator's module statistics (:func:`limiting_resource`).

``--cpu`` tunes ResNet-18's C2, C6, C9, C12 (fp32, packed ``NCHW1n16c``, one thread) and the
1024x1024x1024 matmul with model-guided search over the CPU templates' spaces (thousands of
points each): ``--cpu-trials`` measurements per task in batches of 8, the strategy's default
measured first. Then, in the same process on the same pinned core, it times the default and
the tuned kernel again (medians of ``--cpu-repeat`` calls) and onnxruntime (one intra-op
thread, sequential) on the same Conv / MatMul as a one-node model (median of as many runs);
ratios above 1 mean the tuned kernel is faster. Our conv kernels take packed data;
onnxruntime's Conv takes NCHW and reorders internally.

``--pool`` measures the same candidates of ResNet-18 layers on ``vta-1x16x16`` (``--pool-layers``,
a seeded sample of ``--pool-candidates`` valid points of each, as the tuner's search draws them)
with a 1-worker and a 2-worker local pool and prints measurements per second of each, in wall
time and per CPU second of the workers (a shared machine inflates the first, hardly the second;
the machine's core count bounds the 2-worker ratio). Each pool first measures one candidate of
each layer per worker, not counted: the worker's imports and the layer's seeded data and numpy
reference, computed once per layer and worker as in a tuning run of many trials. Alone (without
the tuner comparison): ``--pool-only``.

    python -m bench.bench_tune --seeds 3 --trials 96 --pool
    taskset -c 1 python -m bench.bench_tune --pool-only --pool-candidates 12
    python -m bench.bench_tune --resnet18 --layers C5,C8,C11 --resnet-trials 48 --seeds 3
    python -m bench.bench_tune --cpu --cpu-trials 64
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence

from compiler.tune import conv2d_task
from compiler.tune.measure import MeasureResult
from compiler.tune.space import Config
from compiler.tune.task import Task
from compiler.tune.tuner import ModelTuner, RandomTuner
from isa.report import Column, format_table

#: Enumerable tasks: small layers on the default 1x4x4 core (hundreds of valid points each).
TASKS = (
    conv2d_task(4, 4, 16, 16, 3, 1, 1, relu=True, name="c3x3-4x4x16"),
    conv2d_task(8, 8, 16, 16, 1, 1, 0, relu=True, name="c1x1-8x8x16"),
)


class TableRunner:
    """Replays an exhaustive table of measurements (identical to measuring again)."""

    workers = 8

    def __init__(self, table: dict[int, MeasureResult]) -> None:
        self.table = table

    def measure(self, task: Task, indices: Sequence[int]) -> list[MeasureResult]:
        return [self.table[int(i)] for i in indices]


def exhaustive(task: Task, workers: int) -> dict[int, MeasureResult]:
    from runtime.measure import LocalRunner

    idx = [int(i) for i in task.space().valid_indices()]
    with LocalRunner(workers) as runner:
        return dict(zip(idx, runner.measure(task, idx), strict=True))


def to_reach(curve: list[float], target: float) -> float:
    for k, c in enumerate(curve, start=1):
        if c <= target:
            return k
    return float("inf")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--trials", type=int, default=96)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--pool", action="store_true", help="also measure pool throughput")
    ap.add_argument("--pool-only", action="store_true", help="only measure pool throughput")
    ap.add_argument("--pool-layers", default="C2,C5,C9,C12", help="with --pool: ResNet-18 layers")
    ap.add_argument("--pool-candidates", type=int, default=8, help="with --pool: per layer")
    ap.add_argument("--resnet18", action="store_true", help="tune ResNet-18 on vta-1x16x16 only")
    ap.add_argument("--layers", default=None, help="with --resnet18: e.g. C2,C9")
    ap.add_argument("--resnet-trials", type=int, default=64)
    ap.add_argument("--cpu", action="store_true", help="CPU layers against onnxruntime only")
    ap.add_argument("--cpu-trials", type=int, default=64, help="with --cpu: per task")
    ap.add_argument("--cpu-repeat", type=int, default=31, help="with --cpu: timed calls")
    ap.add_argument("--cpu-tasks", default=None, help="with --cpu: e.g. C9,matmul1024")
    args = ap.parse_args(argv)
    if args.cpu:
        return cpu_vs_onnxruntime(args.cpu_trials, args.cpu_repeat, args.cpu_tasks)
    if args.resnet18:
        return resnet18(args)
    if args.pool_only:
        return pool_throughput(args.pool_layers, args.pool_candidates)
    for task in TASKS:
        t0 = time.perf_counter()
        table = exhaustive(task, args.workers)
        ok = {i: r.cost for i, r in table.items() if r.ok and r.cost}
        failed = len(table) - len(ok)
        best = min(ok.values())
        heur = table[task.default_config().index].cost or float("inf")
        print(f"{task.label()}: {len(table)} valid points measured in "
              f"{time.perf_counter() - t0:.0f} s ({failed} failed); exhaustive best {best:.0f} "
              f"cycles, heuristic {best / heur:.1%} of it")  # fmt: skip
        rows: dict[str, dict[str, list[float]]] = {}
        for name, cls in (("random", RandomTuner), ("model", ModelTuner)):
            at64, reach = [], []
            for seed in range(args.seeds):
                st = cls(task, seed=seed).tune(TableRunner(table), args.trials, batch_size=8)
                at64.append(best / min(st.curve[:64]))
                reach.append(to_reach(st.curve, best / 0.95))
            rows[name] = {"at64": at64, "reach": reach}
        columns = [
            Column("tuner"),
            Column("best@64", "pct", "the best within 64 measurements over the exhaustive best"),
            Column("best@64 by seed", legend="best@64 of each seed, as a fraction"),
            Column("to 95%", "float3", "median measurements to reach 95% of the exhaustive best"),
            Column("to 95% by seed", legend="to 95% of each seed"),
        ]
        table = [
            (name, statistics.median(v["at64"]), ", ".join(f"{x:.3f}" for x in v["at64"]),
             statistics.median(v["reach"]), ", ".join(f"{x:g}" for x in v["reach"]))
            for name, v in rows.items()
        ]  # fmt: skip
        print(format_table(columns, table))
        r, m = statistics.median(rows["random"]["reach"]), statistics.median(rows["model"]["reach"])
        print(f"  model-guided needs {m / r:.2f}x the measurements of random to reach 95%")
    if args.pool:
        return pool_throughput(args.pool_layers, args.pool_candidates)
    return 0


def pool_throughput(layers: str, per_layer: int) -> int:
    """Measurements per second of a 1-worker and a 2-worker pool on the same candidates of
    ResNet-18 layers (see the module docstring)."""
    import numpy as np

    from compiler.tune import resnet18_tasks
    from runtime.measure import LocalRunner

    by_name = {t.name: t for t in resnet18_tasks("vta-1x16x16")}
    unknown = [n for n in layers.split(",") if n not in by_name]
    if unknown:
        print(f"--pool-layers: no ResNet-18 layer {', '.join(unknown)} (C1..C12)", file=sys.stderr)
        return 2
    work = []
    for name in layers.split(","):
        task = by_name[name]
        valid = task.space().valid_indices()
        picks = np.random.default_rng(0).choice(len(valid), min(per_layer + 2, len(valid)),
                                                replace=False)  # fmt: skip
        work.append((task, [int(valid[k]) for k in picks]))
    count = sum(len(idx) - 2 for _, idx in work)
    print(f"{count} candidates of {layers} on vta-1x16x16 (seeded sample of valid points)")
    rates: dict[int, float] = {}
    for n in (1, 2):
        with LocalRunner(n) as runner:
            for task, idx in work:  # imports, and each layer's data and reference per worker
                runner.measure(task, idx[:2] if n == 2 else idx[:1])
            cpu0 = _children_cpu()
            t0 = time.perf_counter()
            for task, idx in work:
                results = runner.measure(task, idx[2:])
                bad = [r for r in results if not r.ok]
                if bad:
                    raise SystemExit(f"{task.name}: {bad[0].error}: {bad[0].message}")
            wall = time.perf_counter() - t0
            cpu = _children_cpu() - cpu0
        rates[n] = count / wall
        print(f"pool of {n}: {rates[n]:.2f} measurements/s wall ({rates[n] / n:.2f} per worker); "
              f"{count / cpu:.2f} per CPU second of its workers", flush=True)  # fmt: skip
    print(f"2 workers / 1 worker: {rates[2] / rates[1]:.2f}x")
    return 0


def _children_cpu() -> float:
    """CPU seconds of this process's pool workers (read from /proc while they live)."""
    import multiprocessing
    import os

    total = 0.0
    for child in multiprocessing.active_children():
        try:
            with open(f"/proc/{child.pid}/stat") as f:
                # utime and stime, the 14th and 15th fields (after the parenthesised name)
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def resnet18(args: argparse.Namespace) -> int:
    from compiler.tune import resnet18_tasks
    from runtime.measure import LocalRunner

    tasks = resnet18_tasks("vta-1x16x16")
    if args.layers:
        by_name = {t.name: t for t in tasks}
        unknown = [n for n in args.layers.split(",") if n not in by_name]
        if unknown:
            print(f"--layers: no ResNet-18 layer {', '.join(unknown)} (C1..C12)", file=sys.stderr)
            return 2
        tasks = [by_name[n] for n in args.layers.split(",")]  # in the order given
    print(f"{args.seeds} seeds x {args.resnet_trials} measurements per layer; tuned = median "
          "over the seeds (range in brackets)")  # fmt: skip
    columns = [
        Column("layer"),
        Column("heuristic", "int", "cycles of the heuristic's schedule"),
        Column("heur roof", "pct", "roofline cycles over the heuristic's cycles"),
        Column("tuned", "int", "the median over the seeds of each seed's best cycles"),
        Column("tuned roof", "pct", "roofline cycles over the tuned cycles"),
        Column("speedup", "ratio", "heuristic over tuned"),
        Column("seeds", legend="the range of the seeds' best cycles"),
        Column("tuned knobs", legend="the best point of the median seed"),
    ]
    table = []
    slower = gains_missing = 0
    held: list[str] = []
    with LocalRunner(args.workers) as runner:
        for task in tasks:
            default = task.default_config().index
            states = []
            for seed in range(args.seeds):
                st = ModelTuner(task, seed=seed).tune(runner, args.resnet_trials, batch_size=8,
                                                      initial=[default])  # fmt: skip
                states.append(st)
            base = states[0].records[0].result
            heur = base.cost or float("inf")
            roof = base.extra["roofline_cycles"]
            ranked = sorted(states, key=lambda st: st.best_cost)
            median_state = ranked[(len(ranked) - 1) // 2]
            tuned = statistics.median(st.best_cost for st in states)
            slower += tuned > heur
            gains_missing += roof / heur < 0.9 and tuned >= heur
            best = median_state.best
            knobs = best.config.describe() if best is not None else "-"
            spread = f"[{ranked[0].best_cost:,.0f}..{ranked[-1].best_cost:,.0f}]"
            table.append((task.name, heur, roof / heur, tuned, roof / tuned, heur / tuned,
                          spread, knobs))  # fmt: skip
            print(f"{task.name}: tuned", file=sys.stderr, flush=True)
            if roof / tuned < 0.9 and best is not None:
                held.append(f"{task.name}: {limiting_resource(task, best.config)}")
    print(format_table(columns, table))
    print(f"layers slower than the heuristic: {slower}; layers below 90% of the roofline "
          f"without a gain: {gains_missing}")  # fmt: skip
    if held:
        print("below 90% of the roofline after tuning, held by (module statistics of the median "
              "seed's best point):")  # fmt: skip
        for line in held:
            print(f"  {line}")
    return 0


def limiting_resource(task: Task, config: Config) -> str:
    """Run ``task``'s point once more on the simulator and name the resource that holds it:
    the module with the most busy cycles; for compute, its busy cycles split into GEMM, reset
    and the ALU epilogue, and the floor they set (GEMM + reset + ALU, against the roofline);
    for load, the DRAM bytes moved per memory type against the tensor's own bytes.

    Example (a small 1x1 stride-2 layer, bound by its loads)::

        >>> from compiler.tune import conv2d_task
        >>> t = conv2d_task(8, 8, 64, 64, 1, 2, 0, hw="vta-1x16x16", relu=True)
        >>> limiting_resource(t, t.default_config()).split()[0]
        'load'
    """
    import vta_sim
    from compiler.topi.vta.metrics import compulsory_bytes, roofline_cycles

    built = task.build(config)
    r = vta_sim.simulate(built.program)
    if not built.matches(r.read("out")):
        raise RuntimeError(f"{task.label()}: the re-run of {config} does not match numpy")
    cfg = built.config
    busy = {m: c["busy"] for m, c in r.modules.items() if m != "fetch"}
    module = max(busy, key=lambda m: busy[m])
    share = f"{module} busy {busy[module] / r.cycles:.0%} of {r.cycles} cycles"
    if module == "compute":
        gemm, reset = r.gemm_uops * cfg.gemm_ii, r.gemm_reset_uops * cfg.gemm_ii
        counts = built.program.uop_counts()
        alu = counts["alu"] * cfg.alu_ii + counts["alu_imm"] * cfg.alu_imm_ii
        roof = roofline_cycles(built.macs, compulsory_bytes(built.program), cfg)
        floor = gemm + reset + alu
        return (f"{share} (GEMM {gemm}, reset {reset}, ALU epilogue {alu} cycles): compute's "
                f"floor {floor} cycles = {roof / floor:.0%} of the roofline")  # fmt: skip
    sizes = {name: s.nbytes for name, s in built.program.symbols.items()}
    moved = ", ".join(f"{k} {v} B" for k, v in r.dram_bytes.items() if v and k != "insn")
    return (f"{share}; DRAM {moved} against tensors of "
            f"{', '.join(f'{k} {v} B' for k, v in sizes.items())}")  # fmt: skip


def _ort_call(node: object, inputs: dict[str, object], output: object) -> Callable[[], object]:
    from onnx import TensorProto, helper

    from bench.common import ort_session

    feeds = [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape))
             for k, v in inputs.items()]  # fmt: skip
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, list(output))
    graph = helper.make_graph([node], "g", feeds, [out])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 9
    sess = ort_session(model.SerializeToString(), 1)
    return lambda: sess.run(None, inputs)


def _kernel_call(task: Task, index: int) -> Callable[[], object]:
    """One call of the point's kernel, built here (checked against numpy)."""
    built = task.build(index)
    if not built.matches(built.func(*built.inputs)):
        raise SystemExit(f"{task.label()}: point {index} does not match numpy")
    return lambda: built.func(*built.inputs)


def _interleaved(calls: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """Median time of each call over ``repeat`` rounds that time every call once (a noisy
    shared machine slows them alike)."""
    from bench.common import median_time

    times: dict[str, list[float]] = {k: [] for k in calls}
    for fn in calls.values():
        median_time(fn, 1, warmup=2)
    for _ in range(repeat):
        for k, fn in calls.items():
            times[k].append(median_time(fn, 1, warmup=0))
    return {k: statistics.median(v) for k, v in times.items()}


def cpu_vs_onnxruntime(trials: int, repeat: int, only: str | None) -> int:
    import os

    import numpy as np
    from onnx import helper

    from bench.common import cpu_model
    from compiler.topi.vta import RESNET18
    from compiler.tune.task import cpu_task
    from runtime.measure import LocalRunner

    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    rng = np.random.default_rng(0)
    cases = []
    for name in ("C2", "C6", "C9", "C12"):
        lay = RESNET18[name]
        task = cpu_task("conv2d", h=lay.h, w=lay.w, in_c=lay.in_c, out_c=lay.out_c, k=lay.k,
                        stride=lay.stride, pad=lay.pad, name=name)  # fmt: skip
        x = rng.standard_normal((1, lay.in_c, lay.h, lay.w)).astype(np.float32)
        w = rng.standard_normal((lay.out_c, lay.in_c, lay.k, lay.k)).astype(np.float32)
        node = helper.make_node("Conv", ["x", "w"], ["y"], pads=[lay.pad] * 4,
                                strides=[lay.stride] * 2)  # fmt: skip
        cases.append((task, node, {"x": x, "w": w}, (1, lay.out_c, lay.out_h, lay.out_w)))
    a = rng.standard_normal((1024, 1024)).astype(np.float32)
    mm = cpu_task("matmul", m=1024, k=1024, n=1024, name="matmul1024")
    cases.append((mm, helper.make_node("MatMul", ["a", "b"], ["y"]), {"a": a, "b": a.copy()},
                  (1024, 1024)))  # fmt: skip
    if only:
        cases = [c for c in cases if c[0].name in only.split(",")]
    print(f"CPU: {cpu_model()}, one pinned core; {trials} model-guided measurements per task")
    columns = [
        Column("workload"),
        Column("points", "int", "valid points of the task's space"),
        Column("default ms", "float", "median time of the default schedule", digits=3),
        Column("tuned ms", "float", "median time of the best of the tuner's three best", digits=3),
        Column("ort ms", "float", "median time of onnxruntime on the same operator", digits=3),
        Column("ort/tuned", "ratio", "onnxruntime's time over the tuned time", digits=2),
        Column("gain", "ratio", "the default's time over the tuned time", digits=2),
        Column("tuned knobs", legend="the knobs off their defaults"),
        Column("tune s", "int", "seconds of tuning and timing the task"),
    ]
    table = []
    with LocalRunner(1, timeout_s=600) as runner:
        for task, node, inputs, oshape in cases:
            t0 = time.perf_counter()
            default = task.default_config()
            st = ModelTuner(task, seed=0).tune(runner, trials, batch_size=8,
                                               initial=[default.index])  # fmt: skip
            # the tuner's three best points are timed again beside the default and onnxruntime
            ranked = sorted((r for r in st.records if r.result.ok and r.result.cost),
                            key=lambda r: r.result.cost or 0.0)  # fmt: skip
            top = list(dict.fromkeys(r.config.index for r in ranked))[:3]
            calls = {str(i): _kernel_call(task, i) for i in dict.fromkeys([default.index, *top])}
            calls["ort"] = _ort_call(node, inputs, oshape)
            med = _interleaved(calls, repeat)
            ort_s, base_s = med.pop("ort"), med[str(default.index)]
            best_index = min(med, key=med.__getitem__)
            tuned_s, best = med[best_index], task.space().config(int(best_index))
            moved = " ".join(f"{k}={v}" for k, v in best.values.items()
                             if default.values[k] != v) or "(the default)"  # fmt: skip
            table.append((task.name, task.space().num_valid, base_s * 1e3, tuned_s * 1e3,
                          ort_s * 1e3, ort_s / tuned_s, base_s / tuned_s, moved,
                          time.perf_counter() - t0))  # fmt: skip
            print(f"{task.name}: tuned", file=sys.stderr, flush=True)
    print(format_table(columns, table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
