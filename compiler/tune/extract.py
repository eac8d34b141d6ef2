"""Tuning tasks extracted from a model's graph: one task per unique conv2d / dense workload,
weighted by how many nodes share it, and the nodes the accelerator's templates do not cover
(grouped or dilated convolutions), listed with the reason.

Example:
    >>> from compiler.frontend.zoo import load_zoo
    >>> from compiler.frontend.onnx_import import from_onnx
    >>> found = extract_tasks(from_onnx(load_zoo("resnet18", image_size=32)), "vta-1x16x16")
    >>> len(found.tasks), sum(t.weight for t in found.tasks), found.skipped
    (12, 21, [])
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from .task import Task, conv2d_task, dense_task


@dataclass
class Extracted:
    """The unique tasks of a graph and the nodes left out (``(node label, reason)``)."""

    tasks: list[Task] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def extract_tasks(graph: Any, hw: str = "default", target: str = "vta") -> Extracted:
    """The conv2d and dense tasks of ``graph``: for the accelerator the graph IR as imported
    (NCHW / OIHW), for the CPU the graph after the CPU pipeline (packed layouts; matmul too)."""
    found: dict[str, Task] = {}
    out = Extracted()
    kinds = ("conv2d", "dense", "matmul") if target == "cpu" else ("conv2d", "dense")
    for node in graph.nodes:
        if node.op not in kinds:
            continue
        label = getattr(node, "label", None) or node.name
        if target == "cpu":
            task, reason = cpu_task_of_node(node)
        else:
            task, reason = _task_of(node, hw, label)
        if task is None:
            out.skipped.append((label, reason))
            continue
        old = found.get(task.key)
        found[task.key] = task if old is None else _weighted(old, old.weight + 1)
    out.tasks = list(found.values())
    return out


def cpu_task_of_node(node: Any) -> tuple[Task | None, str]:
    """The CPU task a graph node (after the CPU pipeline) compiles as, or why there is none.

    Example:
        >>> cpu_task_of_node(object())
        (None, 'not a conv2d, dense or matmul node')
    """
    from .cpu import channel_block
    from .task import cpu_task

    op = getattr(node, "op", None)
    if op not in ("conv2d", "dense", "matmul"):
        return None, "not a conv2d, dense or matmul node"
    label = getattr(node, "label", None) or node.name
    x, w = node.inputs[0].type.shape, node.inputs[1].type.shape
    if op == "dense":
        return cpu_task("dense", batch=x[0], in_features=x[1], out_features=w[0], name=label), ""
    if op == "matmul":
        if len(x) != 2 or len(w) != 2:
            return None, f"matmul of {len(x)}-d and {len(w)}-d operands"
        return cpu_task("matmul", m=x[0], k=x[1], n=w[1], name=label), ""
    a = node.attrs
    if len(x) != 6 or len(w) != 6 or x[4] != 1:
        return None, f"layout {a['data_layout']}/{a['kernel_layout']}, not packed NCHW1n{{c}}c"
    in_c, out_c = x[1] * x[5], w[0] * w[5]
    depthwise = a["groups"] == in_c == out_c and w[4] == 1 and w[5] == x[5]
    if (a["groups"] != 1 and not depthwise) or tuple(a["dilation"]) != (1, 1):
        return None, f"groups={a['groups']}, dilation {tuple(a['dilation'])}"
    sh, sw = a["strides"]
    pads = tuple(a["padding"])
    if w[2] != w[3] or sh != sw or len(set(pads)) != 1:
        return None, f"kernel {w[2]}x{w[3]}, strides {sh}x{sw}, padding {pads}: not square/even"
    if depthwise:
        if x[5] != channel_block(in_c):
            return None, f"channel block {x[5]} differs from the tuned template's"
        return cpu_task("depthwise", batch=x[0], h=x[2], w=x[3], channels=in_c, k=w[2],
                        stride=sh, pad=pads[0], name=label), ""  # fmt: skip
    if x[5] != channel_block(in_c) or w[5] != channel_block(out_c) or w[4] != x[5]:
        return None, f"channel blocks {x[5]}/{w[5]} differ from the tuned template's"
    return cpu_task("conv2d", batch=x[0], h=x[2], w=x[3], in_c=in_c, out_c=out_c, k=w[2],
                    stride=sh, pad=pads[0], name=label), ""  # fmt: skip


def _weighted(t: Task, weight: int) -> Task:
    return replace(t, weight=weight)


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
    pt, pl, pb, pr = a["padding"]
    _, _, kh, kw = w.shape
    n, c, h, wd = x.shape
    return conv2d_task(h, wd, c, w.shape[0], (kh, kw), (sh, sw), (pt, pl, pb, pr), batch=n,
                       hw=hw, relu=True, name=label), ""  # fmt: skip


__all__ = ["Extracted", "cpu_task_of_node", "extract_tasks"]
