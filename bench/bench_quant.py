"""int8 quantization of the trained digits network: accuracy against fp32, for each calibrator
and each requantization.

For every calibrator (``percentile`` 99.99 %, ``minmax``, ``kl``, ``mse``) and requantization
(``multiplier``: 15-bit multipliers and shifts; ``shift``: shifts alone; ``vta``: VTA's
power-of-two scales, one shift per layer) the network is
quantized with ``compiler.quantize.quantize_graph``, calibrated on ``--calibration-batches``
batches of 1,000 training images (none of the held-out split), and run in the integer
reference on the held-out split. Printed: fp32 and int8 top-1, their difference, the mean
cosine between the fp32 and int8 logits, the top-1 agreement, and the seconds the calibration
took. With ``--ort``, the same figures for onnxruntime's static int8 quantization (QDQ,
per-channel weights, symmetric activations, the same calibration images and calibrators; it has
no ``mse`` calibrator) as the peer.

    python -m bench.bench_quant [--calibration-batches 1] [--ort] [--json FILE]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from isa.report import Column, format_table  # noqa: E402

#: The table: one row per calibrator and requantization, on the held-out images.
COLUMNS = [
    Column("calibrator"),
    Column("requant"),
    Column("fp32", "pct", "top-1 accuracy of the float model", digits=2),
    Column("int8", "pct", "top-1 accuracy of the quantized model", digits=2),
    Column("drop", "float1", "fp32 minus int8 top-1, percentage points"),
    Column("cosine", "float", "mean cosine of the int8 and fp32 logits", digits=5),
    Column("agree", "pct", "images whose int8 top-1 equals the fp32 top-1"),
    Column("calib s", "float1", "seconds of calibration and quantization"),
]


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Mean cosine between the rows of ``a`` and ``b``."""
    num = (a * b).sum(1)
    den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return float(np.mean(num / np.maximum(den, 1e-30)))


def calibration_images(count: int, held_out: np.ndarray) -> np.ndarray:
    """The first ``count`` training images of the digits network (the held-out split left out)."""
    from compiler.frontend.models.train_digits import load_mnist_5k, to_input

    images, _ = load_mnist_5k()
    seen = {bytes(r) for r in np.rint(held_out[:, 0] * 255).astype(np.uint8)}
    train = [i for i in range(len(images)) if bytes(images[i]) not in seen]
    if count > len(train):
        raise SystemExit(f"--calibration-images: only {len(train)} training images exist")
    return to_input(images[train[:count]])


def ort_rows(
    cal: np.ndarray, images: np.ndarray, labels: np.ndarray, fp32: np.ndarray
) -> list[dict]:
    """onnxruntime's static int8 quantization of the same model, as the peer."""
    import onnx
    import onnxruntime as ort
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    from compiler.frontend.zoo import load_zoo

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.batches = iter([{"data": cal[k : k + 100]} for k in range(0, len(cal), 100)])

        def get_next(self) -> dict | None:
            return next(self.batches, None)

    rows = []
    methods = {
        "percentile": CalibrationMethod.Percentile,
        "minmax": CalibrationMethod.MinMax,
        "kl": CalibrationMethod.Entropy,
    }
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "digits.onnx"
        model = load_zoo("digits", batch=100)
        for value in (model.graph.input[0], model.graph.output[0]):
            value.type.tensor_type.shape.dim[0].dim_param = "N"
        onnx.save(model, src)
        for name, method in methods.items():
            dst = Path(tmp) / f"digits_{name}.onnx"
            t0 = time.perf_counter()
            quantize_static(
                str(src),
                str(dst),
                Reader(),
                quant_format=QuantFormat.QDQ,
                per_channel=True,
                activation_type=QuantType.QInt8,
                weight_type=QuantType.QInt8,
                calibrate_method=method,
                extra_options={"ActivationSymmetric": True, "WeightSymmetric": True},
            )
            secs = time.perf_counter() - t0
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = 1
            sess = ort.InferenceSession(str(dst), opts, providers=["CPUExecutionProvider"])
            out = sess.run(None, {"data": images})[0]
            rows.append(_row(f"onnxruntime {name}", "qdq", fp32, out, labels, secs))
    return rows


def _row(cal: str, requant: str, fp32: np.ndarray, out: np.ndarray, labels: np.ndarray,
         secs: float) -> dict:  # fmt: skip
    acc32 = float((fp32.argmax(1) == labels).mean())
    acc8 = float((out.argmax(1) == labels).mean())
    return {
        "calibrator": cal,
        "requant": requant,
        "fp32_top1": acc32,
        "int8_top1": acc8,
        "drop_points": 100 * (acc32 - acc8),
        "logit_cosine": cosine(fp32, out),
        "top1_agreement": float((fp32.argmax(1) == out.argmax(1)).mean()),
        "calibration_s": secs,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--calibration-batches",
        type=int,
        default=1,
        choices=(1, 2, 3, 4),
        help="training images to calibrate on, in batches of the held-out split's size",
    )
    parser.add_argument("--ort", action="store_true", help="add onnxruntime's int8 as the peer")
    parser.add_argument("--json", type=Path, help="also write the rows to this file")
    args = parser.parse_args(argv)

    from compiler.frontend.onnx_import import from_onnx
    from compiler.frontend.zoo import digits_test, load_zoo
    from compiler.graph import evaluate
    from compiler.quantize import quantize_graph

    images, labels = digits_test()
    batch = len(images)
    cal = calibration_images(args.calibration_batches * batch, images)
    feeds = [{"data": cal[k : k + batch]} for k in range(0, len(cal), batch)]
    graph = from_onnx(load_zoo("digits", batch=batch))
    fp32 = evaluate(graph, {"data": images})[0]
    rows = []
    for calibrator in ("percentile", "minmax", "kl", "mse"):
        for requant in ("multiplier", "shift", "vta"):
            t0 = time.perf_counter()
            q = quantize_graph(graph, feeds, calibrator, requant=requant)
            secs = time.perf_counter() - t0
            out = evaluate(q, {"data": images})[0]
            rows.append(_row(calibrator, requant, fp32, out, labels, secs))
    if args.ort:
        rows += ort_rows(cal, images, labels, fp32)
    print(f"digits: {len(labels)} held-out images, {len(cal)} calibration images")
    keys = (
        "calibrator",
        "requant",
        "fp32_top1",
        "int8_top1",
        "drop_points",
        "logit_cosine",
        "top1_agreement",
        "calibration_s",
    )
    print(format_table(COLUMNS, [tuple(r[k] for k in keys) for r in rows]))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
