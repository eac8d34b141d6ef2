"""CPU fp32 latency on 1, 2 and all cores: ours (``num_threads``) and onnxruntime
(``intra_op_num_threads``), each against its own one-thread run.

For ResNet-18 (zoo, seeded weights, 224x224) and, after ``make real-models``,
EfficientNet-Lite0, -Lite1 and -Lite2 (trained weights): one session per thread count and
peer, all in this process; three rounds in which every session in turn runs three untimed and
``--repeat // 3`` timed times (a block, not one run each: both peers' thread pools poll for
work a while after a run, and a run just after the other peer's would meet its threads still
on the cores); medians. The speedup of a thread count is the one-thread median over its own.
BLAS threads are pinned to 1; the process may use every CPU (a busy second CPU shows in the
figures: run it on an otherwise idle machine).

    python -m bench.bench_threads [--repeat 15] [--models resnet18,efficientnet_lite1]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from bench.common import cpu_model, ort_session  # noqa: E402

REAL = {
    "efficientnet_lite0": (1, 3, 224, 224),
    "efficientnet_lite1": (1, 3, 240, 240),
    "efficientnet_lite2": (1, 3, 260, 260),
}


def _models(names: list[str]) -> list[tuple[str, Any, tuple[int, ...]]]:
    """(name, model bytes or zoo name, input shape) of each model that is here."""
    from bench import real_models as rm

    out: list[tuple[str, Any, tuple[int, ...]]] = []
    for name in names:
        if name == "resnet18":
            from compiler.frontend.zoo import load_zoo

            out.append(
                (name, load_zoo("resnet18", image_size=224, batch=1, seed=0), (1, 3, 224, 224))
            )
        elif name in REAL:
            found = rm.models().get(name)
            if found is None or not Path(found.path).is_file():
                print(f"{name}: not built (make real-models); left out")
                continue
            out.append((name, Path(found.path).read_bytes(), REAL[name]))
        else:
            raise SystemExit(f"--models: unknown model {name!r} (resnet18, {', '.join(REAL)})")
    return out


def bench(name: str, model: Any, shape: tuple[int, ...], counts: list[int], repeat: int) -> dict:
    from runtime.session import InferenceSession

    x = np.random.default_rng(0).random(shape, np.float32)
    model_bytes = model if isinstance(model, bytes) else model.SerializeToString()
    import onnx

    iname = onnx.load_from_string(model_bytes).graph.input[0].name
    ours = {
        n: InferenceSession(model_bytes, num_threads=n, input_shapes={iname: shape}) for n in counts
    }
    theirs = {n: ort_session(model_bytes, n) for n in counts}
    oname = theirs[counts[0]].get_inputs()[0].name
    runs = [(("ours", n), lambda s=s: s.run(None, {iname: x})) for n, s in ours.items()]
    runs += [(("ort", n), lambda s=s: s.run(None, {oname: x})) for n, s in theirs.items()]
    times: dict[tuple[str, int], list[float]] = {key: [] for key, _ in runs}
    # blocks of runs, the sessions in turn: both peers' pools poll for work a while after a
    # run, so a run right after the other peer's would meet its threads still on the cores
    block = max(1, repeat // 3)
    for _ in range(3):
        for key, fn in runs:
            for _ in range(3):
                fn()
            for _ in range(block):
                t0 = time.perf_counter()
                fn()
                times[key].append(time.perf_counter() - t0)
    med = {key: statistics.median(v) for key, v in times.items()}
    return {"model": name, "ms": {f"{p}:{n}": med[(p, n)] * 1e3 for p, n in med}, "counts": counts}


def main(argv: list[str] | None = None) -> int:
    from isa.report import Column, format_table

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="rounds (medians)")
    parser.add_argument(
        "--models", default="resnet18,efficientnet_lite0,efficientnet_lite1,efficientnet_lite2"
    )
    args = parser.parse_args(argv)
    cores = len(os.sched_getaffinity(0))
    counts = sorted({1, 2, cores} & set(range(1, cores + 1)))
    print(f"machine: {cpu_model()}, {os.cpu_count()} CPUs ({cores} usable); medians of "
          f"{args.repeat} rounds")  # fmt: skip
    rows = []
    for name, model, shape in _models(args.models.split(",")):
        r = bench(name, model, shape, counts, args.repeat)
        ms = r["ms"]
        for n in counts:
            rows.append([name, n, ms[f"ours:{n}"], ms["ours:1"] / ms[f"ours:{n}"],
                         ms[f"ort:{n}"], ms["ort:1"] / ms[f"ort:{n}"],
                         ms[f"ort:{n}"] / ms[f"ours:{n}"]])  # fmt: skip
    columns = [
        Column("model"),
        Column("threads", "int"),
        Column("ours ms", "float", "our median latency", digits=2),
        Column("ours speedup", "ratio", "our one-thread median over this one"),
        Column("ort ms", "float", "onnxruntime's median latency", digits=2),
        Column("ort speedup", "ratio", "onnxruntime's one-thread median over this one"),
        Column("ort/ours", "ratio", "onnxruntime's latency over ours (above 1: ours faster)"),
    ]
    print(format_table(columns, rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
