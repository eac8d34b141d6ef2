"""ResNet-18 on the accelerator (``--target vta``): compiling once against running an artifact.

* compile: ``InferenceSession(model, target="vta", cache=False)`` (import, int8 quantization
  calibrated on one seeded image, partition, every accelerator group compiled and laid out in
  one DRAM image, host groups compiled for the CPU; the compile cache left out, so every
  compile is a cold one), median of ``--compile-repeat``;
* save: the artifact written (its size), and load: ``InferenceSession(artifact)`` (checksums,
  validation, host kernels rebuilt from LLVM IR through the machine-code cache);
* run: the first run of the loaded session, and the median of ``--repeat`` further runs (the
  simulator over the network's DRAM image and the host groups); the compiling session's runs
  alongside, in the same rounds, and both must give the same bytes and cycles;
* the ratios: a second run and load + first run, each against the compile.

The process is pinned to one CPU (``sched_setaffinity``) with ``VTAC_NUM_THREADS``,
``OMP_NUM_THREADS`` and ``OPENBLAS_NUM_THREADS`` set to 1 before anything is imported.

    python -m bench.bench_vta_artifact [--image-size 64] [--config default] [--repeat 5]
        [--compile-repeat 1] [--json FILE]
"""

from __future__ import annotations

import os
import sys


def _pin() -> list[int]:
    for var in ("VTAC_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"
    cpus = sorted(os.sched_getaffinity(0))[:1]
    os.sched_setaffinity(0, cpus)
    return cpus


# Pin before numpy or llvmlite start any thread pool.
if __name__ == "__main__":
    _pin()

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from bench.common import cpu_model  # noqa: E402


def machine() -> str:
    import llvmlite.binding as llvm

    return (
        f"{cpu_model()}, {os.cpu_count()} CPUs, affinity {sorted(os.sched_getaffinity(0))}; "
        f"python {platform.python_version()}, numpy {np.__version__}, "
        f"LLVM {'.'.join(map(str, llvm.llvm_version_info))}"
    )


def _timed(fn):  # noqa: ANN001, ANN202
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def bench(image_size: int, config: str, repeat: int, compile_repeat: int) -> dict:
    from compiler.frontend.zoo import load_zoo
    from runtime.session import InferenceSession

    model = load_zoo("resnet18", image_size=image_size, batch=1, seed=0)
    x = np.random.default_rng(0).standard_normal((1, 3, image_size, image_size), np.float32)
    compile_times = []
    for _ in range(compile_repeat):
        sess, seconds = _timed(
            lambda: InferenceSession(model, target="vta", config=config, calibration=x, cache=False)
        )
        compile_times.append(seconds)
    name = sess.get_inputs()[0].name
    with tempfile.TemporaryDirectory(prefix="vtac-bench-") as d:
        path = os.path.join(d, "resnet18.vtac")
        _, save_s = _timed(lambda: sess.save(path))
        size = os.path.getsize(path)
        loaded, load_s = _timed(lambda: InferenceSession(path))
    (first,), first_s = _timed(lambda: loaded.run(None, {name: x}))
    (direct,) = sess.run(None, {name: x})
    same = first.tobytes() == direct.tobytes()
    cycles = loaded.last_run.total_cycles
    same = same and cycles == sess.last_run.total_cycles
    runs: list[float] = []
    direct_runs: list[float] = []
    for _ in range(repeat):  # the two sessions take turns, so a change of load hits both
        _, t = _timed(lambda: loaded.run(None, {name: x}))
        runs.append(t)
        _, t = _timed(lambda: sess.run(None, {name: x}))
        direct_runs.append(t)
    compile_s = statistics.median(compile_times)
    run_s = statistics.median(runs)
    prof = loaded.profile()
    by_device: dict[str, float] = {}
    for g in prof.groups:  # accelerator groups have cycles, no wall time of their own
        if g.time_us is not None:
            by_device[g.device] = by_device.get(g.device, 0.0) + g.time_us / 1e6
    return {
        "image_size": image_size,
        "config": config,
        "compile_s": compile_s,
        "save_s": save_s,
        "artifact_bytes": size,
        "load_s": load_s,
        "first_run_s": first_s,
        "run_s": run_s,
        "direct_run_s": statistics.median(direct_runs),
        "host_s_by_device": by_device,
        "cycles": cycles,
        "same_bytes_and_cycles": same,
        "run_over_compile": run_s / compile_s,
        "load_and_first_run_over_compile": (load_s + first_s) / compile_s,
        "accel_groups": sum(k.target == "vta" for k in loaded.program.kernels),
        "host_groups": sum(k.target == "cpu" for k in loaded.program.kernels),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image-size", type=int, default=64, help="ResNet-18 height/width")
    parser.add_argument("--config", default="default", help="accelerator config")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs (median)")
    parser.add_argument("--compile-repeat", type=int, default=1, help="timed compiles (median)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args(argv)

    print(machine())
    size = f"{args.image_size}x{args.image_size}"
    print(f"ResNet-18 {size}, batch 1, config {args.config}, 1 thread; medians of "
          f"{args.repeat} runs, {args.compile_repeat} compile(s)\n")  # fmt: skip
    r = bench(args.image_size, args.config, args.repeat, args.compile_repeat)
    mib = r["artifact_bytes"] / 2**20
    print(f"  compile (quantize, partition, {r['accel_groups']} accelerator + "
          f"{r['host_groups']} host groups)  {r['compile_s']:8.2f} s")  # fmt: skip
    print(f"  save artifact ({mib:.2f} MiB)            {r['save_s']:8.3f} s")
    print(f"  load artifact                           {r['load_s']:8.3f} s")
    print(f"  first run of the loaded artifact        {r['first_run_s']:8.3f} s")
    print(f"  second+ run of the loaded artifact      {r['run_s']:8.3f} s  "
          f"(the compiling session: {r['direct_run_s']:.3f} s)")  # fmt: skip
    host = ", ".join(f"{d} {s * 1e3:.2f} ms" for d, s in sorted(r["host_s_by_device"].items()))
    rest_ms = (r["run_s"] - sum(r["host_s_by_device"].values())) * 1e3
    print(
        f"    of which the host groups (the profile's wall time): {host}; the rest, "
        f"{rest_ms:.0f} ms, the simulator's {r['cycles']} accelerator cycles and the run's own "
        "bookkeeping"
    )
    print(f"  run / compile                  {r['run_over_compile']:8.1%}")
    print(f"  (load + first run) / compile   {r['load_and_first_run_over_compile']:8.1%}")
    print(f"  loaded artifact == compiled session (bytes and cycles): "
          f"{r['same_bytes_and_cycles']}")  # fmt: skip
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": machine(), **r}, f, indent=1)
    return 0 if r["same_bytes_and_cycles"] else 1


if __name__ == "__main__":
    sys.exit(main())
