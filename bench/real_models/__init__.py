"""The folder ``make real-models`` builds (see ``build.py``): where it is, what it holds, and
each model's input read from a real image through ``runtime.inputs``, as ``vtac run`` reads it.

The folder is ``$VTAC_REAL_MODELS`` when set, else ``build/real-models`` in the repository.
``manifest.json`` there gives, per model, its file, its input size, its resize and its
preprocessing (a ``runtime.inputs`` mode, or ``offset``/``scale`` for ``(pixel - offset) /
scale`` on 0..255 pixels where a model was trained on neither), ``channels`` (``bgr`` where
the model was trained on OpenCV's order, ``gray`` for one channel), for a detector its
``family`` (how its outputs decode to boxes: ``detect.py``), for a direction classifier its
``classes`` (the clockwise turns, in degrees, that its outputs name) and for a text recognizer
its ``ocr`` options (``ocr.py``: a dictionary file, lines drawn on a canvas of the input size,
no spaces, case folded, the longest line). Models that read no image say so by their kind:
``file-type`` (Magika: bytes of files, its ``config``; ``filetype.py``) and
``voice-activity`` (Silero VAD: chunks of 16 kHz samples; ``vad.py``); :func:`example_feeds`
gives any model one input.

Example:
    >>> folder().name
    'real-models'
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def folder() -> Path:
    """The model folder (it may not exist: :func:`missing` says why a caller should skip)."""
    return Path(os.environ.get("VTAC_REAL_MODELS", ROOT / "build" / "real-models"))


def missing() -> str | None:
    """Why the folder cannot be used (``None`` when it can)."""
    if not (folder() / "manifest.json").is_file():
        return f"{folder()} has no manifest.json: run `make real-models`"
    return None


@dataclass(frozen=True)
class RealModel:
    """One manifest entry."""

    name: str
    path: Path
    kind: str
    size: tuple[int, int]  # (height, width) the model is fed at
    resize: str
    preprocess: str
    offset: float | None
    scale: float | None
    image: Path | None  # the model's own input image (OCR); classifiers take the photos
    channels: str = "rgb"  # "bgr": the channels are reversed after reading; "gray": one
    family: str | None = None  # a detector's output layout (detect.py): yolov8, yolox, picodet
    classes: tuple[str, ...] = ()  # a direction classifier's turns (degrees clockwise), in order
    ocr: dict[str, Any] = field(default_factory=dict)  # a text recognizer's options (ocr.py)
    config: Path | None = None  # the settings a model's own package feeds it with (filetype.py)


def models() -> dict[str, RealModel]:
    """Every model the manifest lists, by name."""
    root = folder()
    entries = json.loads((root / "manifest.json").read_text())
    out = {}
    for name, e in entries.items():
        out[name] = RealModel(
            name=name,
            path=root / e["file"],
            kind=e["kind"],
            size=(int(e["size"][0]), int(e["size"][1])),
            resize=e["resize"],
            preprocess=e.get("preprocess", "unit"),
            offset=e.get("offset"),
            scale=e.get("scale"),
            image=root / e["image"] if "image" in e else None,
            channels=e.get("channels", "rgb"),
            family=e.get("family"),
            classes=tuple(e.get("classes", ())),
            ocr=dict(e.get("ocr", {})),
            config=root / e["config"] if "config" in e else None,
        )
    return out


def photos() -> list[Path]:
    """The real photos, sorted by name."""
    return sorted(p for p in (folder() / "photos").iterdir() if p.suffix in (".jpg", ".png"))


def labels() -> list[str]:
    """The 1,000 ImageNet class names."""
    return (folder() / "imagenet_labels.txt").read_text().splitlines()


def read_input(model: RealModel, image: Path) -> np.ndarray:
    """``image`` as the model's ``(1, 3, H, W)`` float32 input (``(1, 1, H, W)`` for a
    ``gray`` model): read, resized and normalized by ``runtime.inputs.load_image`` (the path of
    ``vtac run --input photo.jpg``)."""
    from runtime.inputs import load_image, parse_resize

    h, w = model.size
    c = 1 if model.channels == "gray" else 3
    x = load_image(
        image, (1, c, h, w), preprocess=model.preprocess, resize=parse_resize(model.resize)
    )
    if model.offset is not None and model.scale is not None:
        # the pixels come back in [0, 1] ("unit"): the model's own affine on 0..255
        x = (x * np.float32(255.0) - np.float32(model.offset)) / np.float32(model.scale)
    if model.channels == "bgr":
        x = x[:, ::-1]
    return np.ascontiguousarray(x, np.float32)


def input_names(model: RealModel) -> list[str]:
    """The model's graph inputs, in order (initializers left out)."""
    import onnx

    from compiler.frontend.shapes import declared_inputs

    proto = onnx.load(str(model.path), load_external_data=False)
    return [d.name for d in declared_inputs(proto)]


def example_feeds(model: RealModel) -> dict[str, np.ndarray]:
    """One input of ``model`` by input name: a file's bytes (``file-type``), a chunk of a
    signal with a zero state (``voice-activity``), else its image or the first photo (a face
    net: the portrait) through :func:`read_input`."""
    names = input_names(model)
    if model.kind == "file-type":
        from bench.real_models import filetype

        path = ROOT / "compiler" / "targets" / "vta" / "codegen.py"
        return {names[0]: filetype.read(model, path)[None]}
    if model.kind == "voice-activity":
        from bench.real_models import vad

        return vad.first_feeds(names)
    image = model.image
    if image is None:
        name = "grace_hopper.jpg" if model.kind == "face" else "chelsea.png"
        image = folder() / "photos" / name
    return {names[0]: read_input(model, image)}
