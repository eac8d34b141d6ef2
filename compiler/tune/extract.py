"""Tuning tasks extracted from a model's graph: one task per unique conv2d / dense workload,
weighted by how many nodes share it, and the nodes the accelerator's templates do not cover
(grouped or dilated convolutions, non-square kernels or strides, uneven padding), listed with
the reason.

Example:
    >>> from compiler.frontend.zoo import load_zoo
    >>> from compiler.frontend.onnx_import import from_onnx
    >>> found = extract_tasks(from_onnx(load_zoo("resnet18", image_size=32)), "vta-1x16x16")
    >>> len(found.tasks), sum(t.weight for t in found.tasks), found.skipped
    (12, 21, [])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .task import Task, conv2d_task, dense_task


@dataclass
class Extracted:
    """The unique tasks of a graph and the nodes left out (``(node label, reason)``)."""

    tasks: list[Task] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def extract_tasks(graph: Any, hw: str = "default") -> Extracted:
    """The conv2d and dense tasks of ``graph`` (the graph IR, NCHW / OIHW as imported)."""
    found: dict[str, Task] = {}
    out = Extracted()
    for node in graph.nodes:
        if node.op not in ("conv2d", "dense"):
            continue
        label = getattr(node, "label", None) or node.name
        task, reason = _task_of(node, hw, label)
        if task is None:
            out.skipped.append((label, reason))
            continue
        old = found.get(task.key)
        found[task.key] = task if old is None else _weighted(old, old.weight + 1)
    out.tasks = list(found.values())
    return out


def _weighted(t: Task, weight: int) -> Task:
    return Task(t.kind, t.shape, t.hw, t.target, t.relu, t.residual, t.name, weight)


def _task_of(node: Any, hw: str, label: str) -> tuple[Task | None, str]:
    x = node.inputs[0].type
    w = node.inputs[1].type
    if node.op == "dense":
        return dense_task(x.shape[0], x.shape[1], w.shape[0], hw=hw, name=label), ""
    a = node.attrs
    if a["data_layout"] != "NCHW" or a["kernel_layout"] != "OIHW":
        return None, f"layout {a['data_layout']}/{a['kernel_layout']}, not NCHW/OIHW"
    if a["groups"] != 1:
        return None, f"groups={a['groups']}"
    if tuple(a["dilation"]) != (1, 1):
        return None, f"dilation {tuple(a['dilation'])}"
    sh, sw = a["strides"]
    pads = tuple(a["padding"])
    _, _, kh, kw = w.shape
    if kh != kw or sh != sw or len(set(pads)) != 1:
        return None, f"kernel {kh}x{kw}, strides {sh}x{sw}, padding {pads}: not square/even"
    n, c, h, wd = x.shape
    return conv2d_task(h, wd, c, w.shape[0], kh, sh, pads[0], batch=n, hw=hw, relu=True,
                       name=label), ""  # fmt: skip


__all__ = ["Extracted", "extract_tasks"]
