"""Real trained models (``make real-models``): fp32 on the cpu target against onnxruntime, and
int8 on the accelerator against fp32.

Per model of the folder (``bench/real_models``; EfficientNet-Lite1/2 with trained ImageNet
weights, MTCNN's P-, R- and O-net, PP-OCRv4's detector and recognizer), each input read from a
real image through ``runtime.inputs`` with the model's preprocessing (classifiers and face nets:
the photos of the folder; OCR: its rendered page or text line):

* fp32, cpu target: the largest relative error against onnxruntime over the inputs (max |diff|
  over max |onnxruntime|, per output), and the median latency of one image against
  onnxruntime's, both on ``--threads`` threads (default 1) measured in the same run; ``ort/ours``
  above 1 means the compiled model is faster;
* int8 on the accelerator (each ``--configs`` preset, as ``vtac run --target vta`` builds it:
  ``runtime.vta_target.compile_network``, accelerator groups on the simulator, the rest on the
  host), calibrated on the inputs mirrored left-right (never the evaluated images themselves):
  for classifiers the top-1 agreement with fp32 on the photos where fp32 is confident
  (softmax p >= 0.3); for every model the mean cosine between the fp32 and int8 outputs; the
  share of the float graph's MACs (conv2d, dense, matmul) that the accelerator runs; its cycles
  per image and images/s at the config's clock (accelerator cycles only); and whether the
  first input's output is bit-exact against the quantized graph's integer reference.

A model the compiler refuses is reported with the refusal (the unsupported nodes), as it is.

    python -m bench.bench_real [--models efficientnet_lite1,mtcnn_onet] [--configs default]
        [--photos 8] [--repeat 5] [--threads 1] [--skip-vta] [--json FILE]
"""

from __future__ import annotations

import os
import sys

# Pin every thread pool before numpy, numba or onnxruntime load (see bench/common.py).
_THREADS = "1"
for _i, _a in enumerate(sys.argv):
    if _a == "--threads" and _i + 1 < len(sys.argv):
        _THREADS = sys.argv[_i + 1]
    elif _a.startswith("--threads="):
        _THREADS = _a.split("=", 1)[1]
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, _THREADS)
os.environ.setdefault("VTAC_NUM_THREADS", _THREADS)

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from bench import real_models as rm  # noqa: E402
from bench.common import cpu_model, median_time, ort_session  # noqa: E402

#: fp32 is "confident" on a photo when its softmax top-1 is at least this.
CONFIDENT = 0.3


def graph_macs(graph: Any) -> int:
    """Multiply-accumulates of the graph's conv2d, dense and matmul nodes (batch included)."""
    total = 0
    for node in graph.nodes:
        out = node.type.shape
        if node.op == "conv2d":
            w = node.inputs[1].type.shape  # (K, C / groups, KH, KW)
            total += int(np.prod(out)) * int(np.prod(w[1:]))
        elif node.op in ("dense", "matmul", "batch_matmul"):
            total += int(np.prod(out)) * int(node.inputs[0].type.shape[-1])
    return total


def _inputs(model: rm.RealModel, count: int) -> list[tuple[str, np.ndarray]]:
    images = [model.image] if model.image is not None else rm.photos()[:count]
    return [(p.name, rm.read_input(model, p)) for p in images]


def _relative(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.abs(got - want).max() / max(float(np.abs(want).max()), 1e-30))


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / max(np.linalg.norm(a) * np.linalg.norm(b), 1e-30))


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max())
    return e / e.sum()


def bench_fp32(model: rm.RealModel, inputs, threads: int, repeat: int) -> dict[str, Any]:
    """fp32 on the cpu target against onnxruntime: error and latency, same run."""
    from runtime.session import InferenceSession

    ref = ort_session(model.path.read_bytes(), threads)
    name = ref.get_inputs()[0].name
    t0 = time.perf_counter()
    sess = InferenceSession(
        str(model.path), "cpu", input_shapes={name: inputs[0][1].shape}, num_threads=threads
    )
    compile_s = time.perf_counter() - t0
    outputs, err = [], 0.0
    for _, x in inputs:
        got = sess.run(None, {name: x})
        want = ref.run(None, {name: x})
        err = max([err] + [_relative(g, w) for g, w in zip(got, want, strict=True)])
        outputs.append(got)
    x0 = {name: inputs[0][1]}
    ours = median_time(lambda: sess.run(None, x0), repeat)
    ort = median_time(lambda: ref.run(None, x0), repeat)
    return {
        "max_rel_err": err,
        "ours_ms": ours * 1e3,
        "ort_ms": ort * 1e3,
        "ort_over_ours": ort / ours,
        "compile_s": round(compile_s, 2),
        "input_name": name,
        "outputs": outputs,
    }


def bench_int8(
    model: rm.RealModel, inputs, fp32_outputs, config: str, macs: int, graph: Any
) -> dict[str, Any]:
    """int8 on the accelerator preset ``config`` against the fp32 outputs."""
    from runtime.vta_target import compile_network

    name = graph.inputs[0].name
    calibration = [{name: np.ascontiguousarray(x[..., ::-1])} for _, x in inputs]
    t0 = time.perf_counter()
    net = compile_network(graph, config, calibration=calibration)
    compile_s = time.perf_counter() - t0
    cos, agree, confident, cycles, bit_exact, acc_macs, ips = [], 0, 0, [], None, 0, 0.0
    t0 = time.perf_counter()
    for k, ((_, x), fp32) in enumerate(zip(inputs, fp32_outputs, strict=True)):
        feed = {name: x}
        run = net.run(feed)
        if k == 0:
            bit_exact = all(
                np.array_equal(a, b) for a, b in zip(run.outputs, net.reference(feed), strict=True)
            )
            acc_macs = sum(r.macs for r in run.layers)
            ips = run.images_per_second
        cycles.append(run.total_cycles)
        cos.append(np.mean([_cosine(f, q) for f, q in zip(fp32, run.outputs, strict=True)]))
        if model.kind == "classifier":
            p = _softmax(fp32[0][0])
            if p.max() >= CONFIDENT:
                confident += 1
                agree += int(p.argmax() == run.outputs[0][0].argmax())
    return {
        "config": config,
        "compile_s": round(compile_s, 1),
        "run_s_per_image": round((time.perf_counter() - t0) / len(inputs), 1),
        "logit_cosine": float(np.mean(cos)),
        "confident": confident,
        "top1_agree": agree,
        "mac_share": acc_macs / macs if macs else 0.0,
        "accelerator_groups": len(net.partition.groups),
        "cycles_per_image": float(np.median(cycles)),
        "images_per_s": ips,
        "bit_exact": bit_exact,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.bench_real", description=__doc__)
    p.add_argument("--models", default="", help="comma-separated names (default: all)")
    p.add_argument("--configs", default="default,vta-1x16x16", help="accelerator presets")
    p.add_argument("--photos", type=int, default=8, help="photos per classifier / face net")
    p.add_argument("--repeat", type=int, default=5, help="timed runs per latency (median)")
    p.add_argument("--threads", type=int, default=1, help="threads for ours and onnxruntime")
    p.add_argument("--skip-vta", action="store_true", help="fp32 on cpu only")
    p.add_argument("--json", metavar="FILE", default=None)
    args = p.parse_args(argv)
    why = rm.missing()
    if why:  # like a missing device: ``python -m bench`` goes on with the others
        print(f"bench_real skipped: {why}")
        return 0
    import onnxruntime

    from compiler.errors import CompilerError
    from runtime.errors import SessionError
    from runtime.graph_cli import load

    available = rm.models()
    names = [n.strip() for n in args.models.split(",") if n.strip()] or list(available)
    unknown = [n for n in names if n not in available]
    if unknown:
        raise SystemExit(f"unknown models {unknown}; {rm.folder()} has {sorted(available)}")
    configs = [] if args.skip_vta else [c.strip() for c in args.configs.split(",") if c.strip()]
    print(
        f"{cpu_model()} ({platform.machine()}), threads={args.threads}, repeat={args.repeat} "
        f"(median), onnxruntime {onnxruntime.__version__}, numpy {np.__version__}"
    )
    print(f"models: {rm.folder()}\n", flush=True)
    doc: dict[str, Any] = {}
    for name in names:
        model = available[name]
        inputs = _inputs(model, args.photos)
        entry: dict[str, Any] = {"inputs": [n for n, _ in inputs]}
        doc[name] = entry
        try:
            fp32 = bench_fp32(model, inputs, args.threads, args.repeat)
        except (CompilerError, SessionError) as e:
            entry["error"] = str(e)
            print(f"{name}: fp32 cpu refused: {e}\n", flush=True)
            continue
        outputs = fp32.pop("outputs")
        input_name = fp32.pop("input_name")
        entry["fp32"] = fp32
        print(
            f"{name} ({len(inputs)} input(s), {model.size[0]}x{model.size[1]}): fp32 cpu max "
            f"rel err {fp32['max_rel_err']:.1e}; {fp32['ours_ms']:.1f} ms vs onnxruntime "
            f"{fp32['ort_ms']:.1f} ms (ort/ours {fp32['ort_over_ours']:.2f}); compile "
            f"{fp32['compile_s']} s",
            flush=True,
        )
        if not configs:
            continue
        graph = load(str(model.path), None, 1, {input_name: inputs[0][1].shape})
        macs = graph_macs(graph)
        entry["macs"] = macs
        for config in configs:
            try:
                q = bench_int8(model, inputs, outputs, config, macs, graph)
            except (CompilerError, SessionError) as e:
                entry[config] = {"error": str(e)}
                print(f"  int8 {config}: refused: {e}", flush=True)
                continue
            entry[config] = q
            agree = (
                f"top-1 agreement {q['top1_agree']}/{q['confident']} confident photos, "
                if model.kind == "classifier"
                else ""
            )
            print(
                f"  int8 {config}: {agree}cosine {q['logit_cosine']:.4f}, MACs on the "
                f"accelerator {q['mac_share']:.1%} of {macs / 1e6:.0f} M "
                f"({q['accelerator_groups']} groups), {q['cycles_per_image']:.0f} cycles/image, "
                f"{q['images_per_s']:.1f} images/s, bit-exact {q['bit_exact']}; compile "
                f"{q['compile_s']} s, {q['run_s_per_image']} s/image simulated",
                flush=True,
            )
        print(flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=1, allow_nan=False) + "\n")
    ok = all("fp32" not in e or e["fp32"]["max_rel_err"] <= 1e-4 for e in doc.values())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
