"""Boxes from the raw outputs of the model folder's YOLO-family detectors, and how two sets of
boxes agree. The compiled networks end where their ONNX files end (raw tensors); turning those
into boxes is the application's part, written here small and plain for the benchmark and the
tests: a decoder per output layout and a greedy per-class NMS.

Layouts (``family`` in the manifest):

* ``yolov8`` (Ultralytics): one output ``(1, 4 + classes, anchors)``, boxes already decoded
  as centre, width, height in input pixels, class scores after the sigmoid;
* ``yolox``: one output ``(1, anchors, 5 + classes)`` of raw offsets over the grids of
  strides 8, 16 and 32 (``(xy + cell) * stride``, ``exp(wh) * stride``), objectness and class
  scores after the sigmoid (a box's score is their product);
* ``picodet`` (PaddleDetection): per stride 8, 16, 32, 64 a ``(1, anchors, classes)`` score
  output, then per stride a ``(1, anchors, 4 * bins)`` distribution of the distances from the
  cell's centre to the four sides (softmax over the bins, expectation times the stride).

Example:
    >>> a = Detections(np.array([[0, 0, 10, 10.0]]), np.array([0.9]), np.array([1]))
    >>> b = Detections(np.array([[1, 0, 10, 10.0]]), np.array([0.8]), np.array([1]))
    >>> agreement(a, b)["matched"], round(agreement(a, b)["mean_iou"], 2)
    (1, 0.9)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

#: A box is kept when its best class score is at least this.
SCORE_THRESHOLD = 0.3
#: NMS drops a box overlapping a better one of its class by more than this IoU; two boxes of
#: different runs match when their IoU is at least this.
IOU_THRESHOLD = 0.5


@dataclass(frozen=True)
class Detections:
    """Boxes ``(N, 4)`` as x1, y1, x2, y2 in input pixels, their scores and class indices."""

    boxes: np.ndarray
    scores: np.ndarray
    classes: np.ndarray

    def __len__(self) -> int:
        return len(self.scores)


def candidates(
    family: str, outputs: list[np.ndarray], size: tuple[int, int]
) -> tuple[np.ndarray, np.ndarray]:
    """Every anchor's box ``(A, 4)`` (x1, y1, x2, y2) and class scores ``(A, classes)`` of the
    first image of ``outputs``, for an input of ``size`` (height, width)."""
    if family == "yolov8":
        t = np.asarray(outputs[0][0], np.float64).T  # (anchors, 4 + classes)
        return _xywh_to_xyxy(t[:, :4]), t[:, 4:]
    if family == "yolox":
        t = np.asarray(outputs[0][0], np.float64)  # (anchors, 5 + classes)
        cells, strides = _grid(size, (8, 16, 32), math.floor, 0.0)
        if len(cells) != len(t):
            raise ValueError(f"yolox: {len(t)} anchors, the grids of {size} have {len(cells)}")
        xy = (t[:, :2] + cells) * strides
        wh = np.exp(t[:, 2:4]) * strides
        return _xywh_to_xyxy(np.concatenate([xy, wh], 1)), t[:, 4:5] * t[:, 5:]
    if family == "picodet":
        half = len(outputs) // 2
        scores = np.concatenate([np.asarray(o[0], np.float64) for o in outputs[:half]])
        dist = np.concatenate([np.asarray(o[0], np.float64) for o in outputs[half:]])
        strides_used = (8, 16, 32, 64)[:half]
        centres, strides = _grid(size, strides_used, math.ceil, 0.5)
        if len(centres) != len(scores):
            raise ValueError(
                f"picodet: {len(scores)} anchors, the grids of {size} have {len(centres)}"
            )
        bins = dist.shape[1] // 4
        p = dist.reshape(len(dist), 4, bins)
        p = np.exp(p - p.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        d = (p * np.arange(bins)).sum(-1) * strides  # (anchors, 4): left, top, right, bottom
        c = centres * strides
        return np.concatenate([c - d[:, :2], c + d[:, 2:]], 1), scores
    raise ValueError(f"unknown detector family {family!r} (yolov8, yolox or picodet)")


def detections(
    family: str,
    outputs: list[np.ndarray],
    size: tuple[int, int],
    score_threshold: float = SCORE_THRESHOLD,
    iou_threshold: float = IOU_THRESHOLD,
) -> Detections:
    """The boxes left after the score threshold and a greedy NMS per class."""
    boxes, scores = candidates(family, outputs, size)
    cls = scores.argmax(1)
    best = scores[np.arange(len(scores)), cls]
    keep = best >= score_threshold
    boxes, best, cls = boxes[keep], best[keep], cls[keep]
    kept: list[int] = []
    for c in np.unique(cls):
        idx = np.flatnonzero(cls == c)
        idx = idx[np.argsort(-best[idx], kind="stable")]
        while len(idx):
            kept.append(int(idx[0]))
            if len(idx) == 1:
                break
            overlap = iou(boxes[idx[:1]], boxes[idx[1:]])[0]
            idx = idx[1:][overlap <= iou_threshold]
    order = sorted(kept, key=lambda k: -best[k])
    return Detections(boxes[order], best[order], cls[order])


def iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The IoU of every box of ``a`` ``(N, 4)`` with every box of ``b`` ``(M, 4)``."""
    lo = np.maximum(a[:, None, :2], b[None, :, :2])
    hi = np.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = np.clip(hi - lo, 0, None).prod(-1)
    area = lambda x: np.clip(x[:, 2:] - x[:, :2], 0, None).prod(-1)  # noqa: E731
    union = area(a)[:, None] + area(b)[None, :] - inter
    return np.where(union > 0, inter / np.maximum(union, 1e-30), 0.0)


def agreement(
    reference: Detections, other: Detections, iou_threshold: float = IOU_THRESHOLD
) -> dict[str, Any]:
    """How ``other``'s boxes agree with ``reference``'s: each reference box, best score first,
    takes the unmatched box of ``other`` of its class with the highest IoU, if that IoU is at
    least ``iou_threshold``. ``matched``, both counts, and the matches' mean IoU (1 when both
    are empty)."""
    free = np.ones(len(other), bool)
    ious: list[float] = []
    overlap = iou(reference.boxes, other.boxes) if len(reference) and len(other) else None
    for k in np.argsort(-reference.scores, kind="stable"):
        if overlap is None:
            break
        row = np.where(free & (other.classes == reference.classes[k]), overlap[k], -1.0)
        j = int(row.argmax())
        if row[j] >= iou_threshold:
            free[j] = False
            ious.append(float(row[j]))
    both_empty = not len(reference) and not len(other)
    return {
        "matched": len(ious),
        "reference": len(reference),
        "other": len(other),
        "mean_iou": 1.0 if both_empty else float(np.mean(ious)) if ious else 0.0,
    }


def _xywh_to_xyxy(b: np.ndarray) -> np.ndarray:
    return np.concatenate([b[:, :2] - b[:, 2:] / 2, b[:, :2] + b[:, 2:] / 2], 1)


def _grid(
    size: tuple[int, int], strides: tuple[int, ...], rounding: Any, offset: float
) -> tuple[np.ndarray, np.ndarray]:
    """Cell coordinates ``(A, 2)`` (x, y, plus ``offset``) of every stride's grid, row-major,
    and each cell's stride ``(A, 1)``."""
    cells, out_strides = [], []
    for s in strides:
        h, w = int(rounding(size[0] / s)), int(rounding(size[1] / s))
        ys, xs = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
        cells.append(np.stack([xs.ravel(), ys.ravel()], 1) + offset)
        out_strides.append(np.full((h * w, 1), float(s)))
    return np.concatenate(cells).astype(np.float64), np.concatenate(out_strides)
