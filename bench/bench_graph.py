"""Whole networks on the CPU against onnxruntime (fp32, same run, pinned threads).

* ResNet-18 (zoo, seeded weights) at ``--image-size`` (224) with batch 1: the latency of our
  compiled session and of onnxruntime (``intra_op_num_threads=--threads``, sequential
  execution, every graph optimization), medians of ``--repeat`` runs after warm-up (the two
  peers take turns in every round, so a change of load falls on both), their ratio
  and the outputs' relative error (max|ours - ort| / max|ort|);
* ResNet-18's static memory plan: the arena's peak bytes against the naive sum of one buffer per
  materialized tensor;
* ResNet-50's whole compile time (import, graph passes, every group lowered and compiled), cold
  (an empty ``VTAC_CACHE_DIR``) and warm (the same directory again, machine code from disk),
  each in a fresh process so no in-process cache helps.

The process is pinned to ``--threads`` CPUs (``sched_setaffinity``) and ``VTAC_NUM_THREADS``,
``OMP_NUM_THREADS`` and ``OPENBLAS_NUM_THREADS`` are set before anything is imported, so both
peers run on the same cores.

    python -m bench.bench_graph --threads 1 --repeat 20
"""

from __future__ import annotations

import os
import sys


def _pin(threads: int) -> list[int]:
    for var in ("VTAC_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(threads)
    cpus = sorted(os.sched_getaffinity(0))[:threads]
    os.sched_setaffinity(0, cpus)
    return cpus


def _threads_arg(argv: list[str]) -> int:
    for k, a in enumerate(argv):
        if a == "--threads" and k + 1 < len(argv):
            return int(argv[k + 1])
        if a.startswith("--threads="):
            return int(a.split("=", 1)[1])
    return 1


# Pin before numpy, llvmlite or onnxruntime start any thread pool.
if __name__ == "__main__":
    _PINNED = _pin(_threads_arg(sys.argv[1:]))

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402

import numpy as np  # noqa: E402

from bench.common import cpu_model, ort_session  # noqa: E402
from isa.report import Column, format_table  # noqa: E402


def median_times(fns: list[Callable[[], object]], repeat: int, warmup: int = 3) -> list[float]:
    """Median wall time of each function; the functions take turns in every round, so a change
    in the machine's load falls on all of them alike."""
    for _ in range(warmup):
        for fn in fns:
            fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, ts in zip(fns, times, strict=True):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
    return [statistics.median(ts) for ts in times]


def machine() -> str:
    cpu = cpu_model()
    import llvmlite.binding as llvm
    import onnxruntime

    return (
        f"{cpu}, {os.cpu_count()} CPUs, affinity {sorted(os.sched_getaffinity(0))}; "
        f"python {platform.python_version()}, numpy {np.__version__}, "
        f"LLVM {'.'.join(map(str, llvm.llvm_version_info))} ({llvm.get_host_cpu_name()}), "
        f"onnxruntime {onnxruntime.__version__}"
    )


def bench_resnet18(image_size: int, threads: int, repeat: int) -> dict:
    from compiler.frontend.zoo import load_zoo
    from runtime.session import InferenceSession

    model = load_zoo("resnet18", image_size=image_size, batch=1, seed=0)
    x = np.random.default_rng(0).standard_normal((1, 3, image_size, image_size), np.float32)
    t0 = time.perf_counter()
    ours = InferenceSession(model, num_threads=threads)
    compile_s = time.perf_counter() - t0
    ort = ort_session(model.SerializeToString(), threads)
    name = ours.get_inputs()[0].name
    (a,) = ours.run(None, {name: x})
    (b,) = ort.run(None, {name: x})
    rel = float(np.max(np.abs(a - b)) / np.max(np.abs(b)))
    t_ours, t_ort = median_times(
        [lambda: ours.run(None, {name: x}), lambda: ort.run(None, {name: x})], repeat
    )
    profile = ours.profile()
    by_op: dict[str, float] = {}
    for g in profile.groups:
        key = g.ops[0] if g.ops[0] in ("conv2d", "dense") else "+".join(g.ops)
        if g.ops[0] == "conv2d":
            key = "conv2d (+fused)"
        by_op[key] = by_op.get(key, 0.0) + (g.time_us or 0.0)
    return dict(
        ours=t_ours,
        ort=t_ort,
        rel=rel,
        compile_s=compile_s,
        groups=len(profile.groups),
        kernels=len({k.code for k in ours.program.kernels}),
        peak=ours.memory.peak_bytes,
        naive=ours.memory.naive_bytes,
        by_op=sorted(by_op.items(), key=lambda kv: -kv[1])[:6],
    )


_COMPILE_CHILD = """
import json, sys, time
t0 = time.perf_counter()
from compiler.frontend.zoo import load_zoo
from runtime.session import InferenceSession
model = load_zoo("resnet50", image_size={size}, batch=1, seed=0)
t1 = time.perf_counter()
sess = InferenceSession(model, num_threads={threads})
t2 = time.perf_counter()
print(json.dumps(dict(build_model=t1 - t0, compile=t2 - t1, groups=len(sess.program.kernels),
                      kernels=len({{k.code for k in sess.program.kernels}}))))
"""


def bench_resnet50_compile(image_size: int, threads: int) -> dict:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = _COMPILE_CHILD.format(size=image_size, threads=threads)
    result = {}
    with tempfile.TemporaryDirectory(prefix="vtac-cache-") as cache:
        env = dict(os.environ, VTAC_CACHE_DIR=cache)
        for label in ("cold", "warm"):
            out = subprocess.run(
                [sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True
            )
            if out.returncode != 0:
                raise SystemExit(f"ResNet-50 compile ({label}) failed:\n{out.stderr}")
            result[label] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="threads for both peers")
    parser.add_argument("--repeat", type=int, default=20, help="timed runs per measurement")
    parser.add_argument("--image-size", type=int, default=224, help="ResNet input height/width")
    parser.add_argument("--skip-resnet50", action="store_true", help="skip the compile timing")
    args = parser.parse_args(argv)

    print(machine())
    print(f"threads={args.threads} repeat={args.repeat} (median), batch 1, fp32\n")
    r = bench_resnet18(args.image_size, args.threads, args.repeat)
    print(f"ResNet-18 {args.image_size}x{args.image_size}:")
    peers = [Column("peer"), Column("ms", "float", "median time of one ResNet-18 run")]
    print(
        format_table(
            peers, [("ours", r["ours"] * 1e3), ("onnxruntime", r["ort"] * 1e3)], legend=False
        )
    )
    print(f"  ours: {r['groups']} groups, {r['kernels']} distinct kernels, compiled in "
          f"{r['compile_s']:.1f} s with the machine-code cache as found")  # fmt: skip
    print(f"  ours / onnxruntime = {r['ours'] / r['ort']:.2f}")
    print(f"  relative error max|ours-ort|/max|ort| = {r['rel']:.2e}")
    print("  time by group kind (one run): " + ", ".join(
        f"{k} {v / 1e3:.2f} ms" for k, v in r["by_op"]))  # fmt: skip
    print(f"  memory plan: peak {r['peak'] / 2**20:.2f} MiB, naive {r['naive'] / 2**20:.2f} MiB, "
          f"peak/naive = {r['peak'] / r['naive']:.3f}")  # fmt: skip
    if not args.skip_resnet50:
        c = bench_resnet50_compile(args.image_size, args.threads)
        cold = c["cold"]
        print(f"\nResNet-50 {args.image_size}x{args.image_size} whole compile "
              f"({cold['groups']} groups, {cold['kernels']} distinct kernels):")  # fmt: skip
        columns = [
            Column("cache", legend="cold: an empty machine-code cache; warm: the cold run's"),
            Column("compile s", "float", "seconds of the whole compile"),
            Column("build model s", "float", "of which building the ONNX model"),
        ]
        rows = [(label, c[label]["compile"], c[label]["build_model"]) for label in ("cold", "warm")]
        print(format_table(columns, rows))
    ok = r["rel"] <= 1e-4
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
