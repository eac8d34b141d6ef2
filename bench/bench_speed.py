"""The tool's own speed in one table: compiling ResNet-18 for the accelerator, simulating it,
the tuner's measurements per second, and CPU latency against onnxruntime on real models.

    python -m bench.bench_speed [--image-size 224] [--configs default,vta-1x16x16]
                                [--tune-measurements 16] [--repeat 11] [--skip-cpu]
                                [--jobs 2] [--skip-tuner]

Every figure is measured in this run, on this machine (printed first), one thread (pin the
process with ``taskset -c 1`` on a shared machine; BLAS threads are pinned here), medians:

* compile: quantize, partition, compile every group and lay out the DRAM image
  (``compile_network``), wall seconds, per preset: without the compile cache (with its CPU
  seconds beside, which a loaded machine inflates less), from it (a fresh cache filled by one
  compile first) and with ``--jobs`` worker processes (they share the CPUs the process may
  run on: pin to two cores, ``taskset -c 0,1``, to see them help);
* simulate: one whole-network run of the compiled program (median of ``--repeat``), simulated
  cycles per second, and the ratio to float32 BLAS doing the network's MACs on this core;
* tuner: measurements per second of one worker on a ResNet-18 layer (C9) of ``vta-1x16x16``,
  and over all 12 of ResNet-18's conv2d tasks (``--tune-measurements`` seeded candidates each);
* CPU: ours against onnxruntime (one thread, interleaved medians) on ResNet-18 (zoo) and, after
  ``make real-models``, EfficientNet-Lite1 and PP-OCRv4's text recognizer.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import statistics  # noqa: E402
import time  # noqa: E402
from typing import Any  # noqa: E402

from bench.common import cpu_model, median_time, ort_session  # noqa: E402


def bench_vta(config: str, image_size: int, repeat: int, jobs: int) -> dict[str, Any]:
    import tempfile
    from pathlib import Path

    import numpy as np

    from compiler.cache import CompileCache
    from compiler.frontend.onnx_import import from_onnx
    from compiler.frontend.zoo import load_zoo
    from compiler.model.vta_program import plan_network
    from runtime.vta_plan import VtaExecutor
    from runtime.vta_target import compile_network

    graph = from_onnx(load_zoo("resnet18", batch=1, image_size=image_size))
    x = np.random.default_rng(0).standard_normal(graph.inputs[0].type.shape).astype(np.float32)
    feed = {graph.inputs[0].name: x}

    def timed(**options: Any) -> tuple[float, Any]:
        t0 = time.perf_counter()
        net = compile_network(graph, config, calibration=feed, **options)
        return time.perf_counter() - t0, net

    timed(cache=False)  # imports, and the host groups' machine code in this process
    cpu0 = time.process_time()
    compile_s, net = timed(cache=False)
    compile_cpu_s = time.process_time() - cpu0
    jobs_s = timed(cache=False, jobs=jobs)[0] if jobs > 1 else None
    with tempfile.TemporaryDirectory() as folder:
        cache = CompileCache(Path(folder))
        timed(cache=cache)  # fills the cache
        cached_s = timed(cache=cache)[0]
    executor = VtaExecutor(plan_network(net))
    run = executor.run(feed)
    sim_s = median_time(lambda: executor.run(feed), repeat, warmup=0)
    macs = sum(r.macs for r in run.layers)
    a = np.random.default_rng(1).standard_normal((3136, 576)).astype(np.float32)
    b = np.random.default_rng(2).standard_normal((576, 64)).astype(np.float32)
    blas = median_time(lambda: a @ b, 7) * macs / (3136 * 576 * 64)
    return {
        "compile_s": compile_s,
        "compile_cpu_s": compile_cpu_s,
        "cached_s": cached_s,
        "jobs_s": jobs_s,
        "sim_s": sim_s,
        "cycles": run.total_cycles,
        "cycles_per_s": run.total_cycles / sim_s,
        "blas_ratio": sim_s / blas,
    }


def bench_tuner(measurements: int) -> float:
    """Measurements per second of one worker on C9 of ResNet-18 on ``vta-1x16x16``."""
    from compiler.tune import conv2d_task
    from runtime.measure import LocalRunner

    task = conv2d_task(14, 14, 256, 256, 3, 1, 1, hw="vta-1x16x16", name="C9")
    import numpy as np

    valid = task.space().valid_indices()
    # a seeded sample across the space, as the tuner's search draws it (the first indices are
    # the smallest tiles, the slowest to build and simulate)
    picks = np.random.default_rng(0).choice(len(valid), size=min(measurements, len(valid)),
                                            replace=False)  # fmt: skip
    indices = [int(valid[k]) for k in picks]
    with LocalRunner(1) as runner:
        runner.measure(task, indices[:1])  # the worker's imports and JIT, not counted
        t0 = time.perf_counter()
        results = runner.measure(task, indices)
        seconds = time.perf_counter() - t0
    bad = [r for r in results if not r.ok]
    if bad:
        raise SystemExit(f"tuner measurement failed: {bad[0].error}: {bad[0].message}")
    return len(indices) / seconds


def bench_tuner_tasks(per_task: int) -> float:
    """Measurements per second of one worker over every conv2d task of ResNet-18 on
    ``vta-1x16x16`` (C1..C12), ``per_task`` seeded candidates each, as the tuner's search draws
    them; each task's first candidate (the worker's imports, the task's data and numpy
    reference) is measured first and not counted."""
    import numpy as np

    from compiler.tune import resnet18_tasks
    from runtime.measure import LocalRunner

    work = []
    for task in resnet18_tasks("vta-1x16x16"):
        valid = task.space().valid_indices()
        picks = np.random.default_rng(0).choice(len(valid), size=min(per_task + 1, len(valid)),
                                                replace=False)  # fmt: skip
        work.append((task, [int(valid[k]) for k in picks]))
    count, seconds = 0, 0.0
    with LocalRunner(1) as runner:
        for task, indices in work:
            runner.measure(task, indices[:1])
            t0 = time.perf_counter()
            results = runner.measure(task, indices[1:])
            seconds += time.perf_counter() - t0
            count += len(results)
            bad = [r for r in results if not r.ok]
            if bad:
                raise SystemExit(f"{task.name}: {bad[0].error}: {bad[0].message}")
    return count / seconds


def bench_cpu(name: str, model: Any, feed: dict[str, Any], repeat: int) -> dict[str, float]:
    from runtime.session import InferenceSession

    data = model if isinstance(model, bytes) else model.read_bytes()
    ref = ort_session(data, 1)
    shapes = {k: v.shape for k, v in feed.items()}
    sess = InferenceSession(data, "cpu", num_threads=1, input_shapes=shapes)
    ours, theirs = [], []
    for _ in range(repeat):  # interleaved, so that load on the machine hits both alike
        ours.append(median_time(lambda: sess.run(None, feed), 1, warmup=1))
        theirs.append(median_time(lambda: ref.run(None, feed), 1, warmup=1))
    return {"ours_ms": statistics.median(ours) * 1e3, "ort_ms": statistics.median(theirs) * 1e3}


def _cpu_models(image_size: int) -> list[tuple[str, Any, dict[str, Any]]]:
    import numpy as np

    from bench.real_models import missing, models
    from runtime.session import load_onnx

    rng = np.random.default_rng(0)
    out: list[tuple[str, Any, dict[str, Any]]] = []
    proto = load_onnx("resnet18", image_size=image_size)
    x = rng.standard_normal((1, 3, image_size, image_size)).astype(np.float32)
    out.append((f"resnet18 {image_size} (zoo)", proto.SerializeToString(), {"data": x}))
    if missing() is None:
        import onnx

        found = models()
        for key in ("efficientnet_lite1", "ppocr_rec"):
            if key in found:
                m = found[key]
                name = onnx.load(m.path).graph.input[0].name
                h, w = m.size
                feed = {name: rng.standard_normal((1, 3, h, w)).astype(np.float32)}
                out.append((f"{key} {h}x{w}", m.path, feed))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--image-size", type=int, default=224)
    ap.add_argument("--configs", default="default,vta-1x16x16")
    ap.add_argument("--tune-measurements", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=11)
    ap.add_argument("--skip-cpu", action="store_true")
    ap.add_argument(
        "--jobs", type=int, default=2, help="worker processes of the parallel compile row (1: none)"
    )
    ap.add_argument("--skip-tuner", action="store_true")
    args = ap.parse_args(argv)
    from isa.report import Column, format_table

    print(f"machine: {cpu_model()}, {os.cpu_count()} CPUs; one thread, medians", flush=True)
    rows: list[tuple[Any, ...]] = []
    for config in args.configs.split(","):
        print(f"[resnet18 {args.image_size} on {config}] compiling and simulating", flush=True)
        r = bench_vta(config, args.image_size, max(3, args.repeat // 3), args.jobs)
        rows += [
            (
                f"compile ResNet-18 for {config}",
                r["compile_s"],
                "s",
                f"no compile cache; {r['compile_cpu_s']:.2f} s CPU",
            ),
            ("  from the compile cache", r["cached_s"], "s",
             f"{r['compile_s'] / r['cached_s']:.1f}x faster"),
        ]  # fmt: skip
        if r["jobs_s"] is not None:
            rows.append((f"  --jobs {args.jobs}, no compile cache", r["jobs_s"], "s",
                         f"{r['compile_s'] / r['jobs_s']:.2f}x the serial compile on "
                         f"{len(os.sched_getaffinity(0))} CPUs"))  # fmt: skip
        rows += [
            (f"simulate it ({r['cycles']:,} cycles)", r["sim_s"], "s",
             f"{r['cycles_per_s']:,.0f} cycles/s; {r['blas_ratio']:.1f}x float32 BLAS"),
        ]  # fmt: skip
    if not args.skip_tuner:
        print("[tuner] measuring", flush=True)
        rate = bench_tuner(args.tune_measurements)
        rows.append(("tuner, one worker, C9 on vta-1x16x16", rate, "measurements/s", ""))
        rate = bench_tuner_tasks(args.tune_measurements)
        rows.append(("tuner, one worker, ResNet-18's 12 tasks", rate, "measurements/s",
                     f"{args.tune_measurements} candidates each, vta-1x16x16"))  # fmt: skip
    if not args.skip_cpu:
        for name, model, feed in _cpu_models(args.image_size):
            print(f"[cpu] {name}", flush=True)
            c = bench_cpu(name, model, feed, args.repeat)
            ratio = c["ours_ms"] / c["ort_ms"]
            peer = f"onnxruntime {c['ort_ms']:.2f} ms; ours/onnxruntime {ratio:.2f}"
            rows.append((f"cpu fp32 {name}", c["ours_ms"], "ms", peer))
    columns = [Column("what"), Column("figure", "float"), Column("unit"), Column("beside it")]
    print(format_table(columns, rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
