"""CPU backend against numpy and onnxruntime (fp32, same run, pinned threads).

Workloads: a square matmul (default 1024) and ResNet-18 convolution layers (default C2, C6, C9,
C12) read from ``bench/workloads/resnet18_conv2d.json`` or ``--workloads PATH``.

* ours: the compiler's CPU backend. Convolutions run in the packed NCHW16c layout with
  OIHW16i16o weights (the graph compiler packs layouts once per network); the
  ``ours+layout`` column adds packing the input and unpacking the output with numpy.
* numpy: im2col (``sliding_window_view`` + reshape) followed by one ``matmul`` (BLAS).
* onnxruntime: a one-node Conv / MatMul model in NCHW, weights as initializers.

Every peer is limited to ``--threads`` threads (threadpoolctl for BLAS, ``intra_op_num_threads``
for onnxruntime, ``num_threads`` for our parallel loops). Times are medians of ``--repeat`` runs.
Ratios above 1 mean the compiler's code is faster.

    python -m bench.bench_cpu --threads 1 --layers C2,C6,C9,C12 --matmul 1024
"""

from __future__ import annotations

import os
import sys

# OpenBLAS reads OPENBLAS_CORETYPE when numpy loads it: a forced core type (e.g. a generic
# one) slows numpy down, so this process drops it before importing numpy and reports the BLAS
# kernel actually used below.
_DROPPED_CORETYPE = None
if "numpy" not in sys.modules:
    _DROPPED_CORETYPE = os.environ.pop("OPENBLAS_CORETYPE", None)

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from threadpoolctl import threadpool_info, threadpool_limits  # noqa: E402

from bench.common import median_time, ort_session  # noqa: E402
from isa.report import Column, format_table  # noqa: E402

#: ONNX IR version written into the models (what current onnxruntime releases accept).
ORT_IR_VERSION = 9
DEFAULT_WORKLOADS = Path(__file__).resolve().parent / "workloads" / "resnet18_conv2d.json"


def blas_description() -> str:
    libs = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    if not libs:
        return "no BLAS found by threadpoolctl"
    lib = libs[0]
    return (
        f"{lib.get('internal_api')} {lib.get('version')} kernel={lib.get('architecture')} "
        f"threads={lib.get('num_threads')}"
    )


# Peers -----------------------------------------------------------------------------------------


def onnx_conv(weight: np.ndarray, x_shape: tuple[int, ...], stride: int, pad: int) -> bytes:
    from onnx import TensorProto, helper, numpy_helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    node = helper.make_node(
        "Conv", ["x", "w"], ["y"], strides=[stride, stride], pads=[pad] * 4,
        kernel_shape=list(weight.shape[2:]),
    )  # fmt: skip
    graph = helper.make_graph([node], "conv", [x], [y], [numpy_helper.from_array(weight, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = ORT_IR_VERSION
    return model.SerializeToString()


def onnx_matmul(n: int) -> bytes:
    from onnx import TensorProto, helper

    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [n, n])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, [n, n])
    c = helper.make_tensor_value_info("c", TensorProto.FLOAT, None)
    graph = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["c"])], "mm", [a, b], [c])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = ORT_IR_VERSION
    return model.SerializeToString()


def im2col_conv(x: np.ndarray, w2d: np.ndarray, k: int, stride: int, pad: int) -> np.ndarray:
    n, c, h, _ = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(2, 3))[
        :, :, ::stride, ::stride
    ]
    oh, ow = win.shape[2], win.shape[3]
    cols = win.transpose(0, 1, 4, 5, 2, 3).reshape(n, c * k * k, oh * ow)
    return (w2d @ cols).reshape(n, w2d.shape[0], oh, ow)


# Rows ------------------------------------------------------------------------------------------


def bench_matmul(n: int, threads: int, repeat: int) -> dict:
    from compiler import te, topi
    from compiler.build import build
    from compiler.targets.cpu import CpuTarget
    from compiler.topi.cpu import schedule_matmul

    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    A = te.placeholder((n, n), "float32", name="A")
    B = te.placeholder((n, n), "float32", name="B")
    out = topi.matmul(A, B)
    f = build(
        schedule_matmul(out, parallel=threads > 1), [A, B, out], CpuTarget(num_threads=threads)
    )
    c = np.empty((n, n), np.float32)
    with threadpool_limits(threads):
        ref = a @ b
        ok = np.allclose(f(a, b, c), ref, rtol=1e-3, atol=1e-2)
        t_np = median_time(lambda: a @ b, repeat)
    t_ours = median_time(lambda: f(a, b, c), repeat)
    sess = ort_session(onnx_matmul(n), threads)
    feed = {"a": a, "b": b}
    t_ort = median_time(lambda: sess.run(None, feed), repeat)
    return dict(
        name=f"matmul {n}", flops=2 * n**3, ours=t_ours, layout=None, numpy=t_np, ort=t_ort, ok=ok
    )


def bench_conv(layer: dict, threads: int, repeat: int) -> dict:
    from compiler import te, topi
    from compiler.build import build
    from compiler.targets.cpu import CpuTarget
    from compiler.topi.cpu import schedule_conv2d_nchwc

    c, o, h, k, s, p = (layer[key] for key in ("in_c", "out_c", "h", "k", "stride", "pad"))
    block = 16
    if c % block or o % block:
        raise SystemExit(f"layer {layer['name']}: channels must be multiples of {block}")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, c, h, h), dtype=np.float32)
    w = (rng.standard_normal((o, c, k, k), dtype=np.float32) / np.sqrt(c * k * k)).astype(
        np.float32
    )
    xp = topi.pack_data(x, 1, block)
    wp = topi.pack_kernel(w, block, block, "OIHWio")
    X = te.placeholder(xp.shape, "float32", name="X")
    W = te.placeholder(wp.shape, "float32", name="W")
    out = topi.conv2d_nchwc(X, W, s, p, kernel_layout="OIHWio")
    f = build(
        schedule_conv2d_nchwc(out, parallel=threads > 1),
        [X, W, out],
        CpuTarget(num_threads=threads),
    )
    y = np.empty(out.shape, np.float32)
    w2d = w.reshape(o, -1)
    with threadpool_limits(threads):
        ref = im2col_conv(x, w2d, k, s, p)
        ok = np.allclose(topi.unpack_data(f(xp, wp, y)), ref, rtol=1e-3, atol=1e-3)
        t_np = median_time(lambda: im2col_conv(x, w2d, k, s, p), repeat)
    t_ours = median_time(lambda: f(xp, wp, y), repeat)
    t_layout = median_time(lambda: topi.unpack_data(f(topi.pack_data(x, 1, block), wp, y)), repeat)
    sess = ort_session(onnx_conv(w, x.shape, s, p), threads)
    feed = {"x": x}
    t_ort = median_time(lambda: sess.run(None, feed), repeat)
    return dict(
        name=layer["name"],
        flops=2 * layer["macs"],
        ours=t_ours,
        layout=t_layout,
        numpy=t_np,
        ort=t_ort,
        ok=ok,
    )


#: The table's columns: times are medians of ``--repeat`` runs.
COLUMNS = [
    Column("workload"),
    Column("ours ms", "float", "our kernel on packed data"),
    Column("+layout", "float", "ours with packing the input and unpacking the output"),
    Column("numpy ms", "float", "numpy (im2col and BLAS)"),
    Column("ort ms", "float", "onnxruntime"),
    Column("numpy/ours", "ratio", "numpy's time over ours", digits=2),
    Column("ort/ours", "ratio", "onnxruntime's time over ours", digits=2),
    Column("GFLOP/s", "float1", "ours: 2 x MACs per second"),
    Column("check", legend="ours equals numpy (ok) or not (MISMATCH)"),
]


def print_table(rows: list[dict]) -> None:
    table = [
        (
            r["name"],
            r["ours"] * 1e3,
            "-" if r["layout"] is None else r["layout"] * 1e3,
            r["numpy"] * 1e3,
            r["ort"] * 1e3,
            r["numpy"] / r["ours"],
            r["ort"] / r["ours"],
            r["flops"] / r["ours"] / 1e9,
            "ok" if r["ok"] else "MISMATCH",
        )
        for r in rows
    ]
    print(format_table(COLUMNS, table))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=Path, default=DEFAULT_WORKLOADS, help="workload JSON")
    parser.add_argument("--layers", default="C2,C6,C9,C12", help="comma-separated layer names")
    parser.add_argument("--matmul", type=int, default=1024, help="matmul size (0 to skip)")
    parser.add_argument("--threads", type=int, default=1, help="threads for every peer")
    parser.add_argument("--repeat", type=int, default=15, help="timed runs per measurement")
    args = parser.parse_args(argv)

    import onnxruntime

    layers = {entry["name"]: entry for entry in json.loads(args.workloads.read_text())["layers"]}
    wanted = [name.strip() for name in args.layers.split(",") if name.strip()]
    missing = [name for name in wanted if name not in layers]
    if missing:
        raise SystemExit(f"unknown layers {missing}; {args.workloads} has {sorted(layers)}")

    with threadpool_limits(args.threads):
        blas = blas_description()
    print(f"threads={args.threads}  repeat={args.repeat} (median)", end="  ")
    print(f"onnxruntime {onnxruntime.__version__}")
    print(f"numpy {np.__version__} BLAS: {blas}")
    if _DROPPED_CORETYPE is not None:
        print(f"OPENBLAS_CORETYPE={_DROPPED_CORETYPE} was unset for this process")
    print(f"workloads: {args.workloads.name}\n")
    rows = []
    if args.matmul:
        rows.append(bench_matmul(args.matmul, args.threads, args.repeat))
    for name in wanted:
        rows.append(bench_conv(layers[name], args.threads, args.repeat))
    print_table(rows)
    conv = [r for r in rows if not r["name"].startswith("matmul")]
    if conv:
        worst = min(r["numpy"] / r["ours"] for r in conv)
        gap = statistics.geometric_mean([r["ort"] / r["ours"] for r in conv])
        print(
            f"\nconv layers: slowest numpy/ours = {worst:.2f}; geometric-mean ort/ours = {gap:.2f}"
        )
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
