"""Tuning whole networks on the accelerator: the tasks of a model's quantized groups, and the
tuned knobs each group compiles with.

A network on ``--target vta`` compiles every conv2d / dense group (the GEMM with its bias,
requantization, clip and fused ``qadd``) through ``compile_qconv2d`` / ``compile_qdense``. The
model is quantized and partitioned as :func:`compiler.model.vta.compile_network` does it
(:func:`~compiler.model.vta.quantize_partition`), and each such group gives a task
(:func:`group_task`): the shapes the template compiles (a first layer run over folded channels
with its folded shapes), stride, padding, depthwise, residual and the structure of its
epilogue's ALU steps (:mod:`compiler.tune.quantized`); groups sharing one are one task of that
weight (:func:`extract_network_tasks`).

Compiling with a tuning log (:func:`load_network_tuning`), :func:`choose_knobs` gives each
group the knobs of its task's best record; a group without one, or whose record's knobs do not
compile, compiles with the heuristic's, and :meth:`NetworkTuning.report` says which groups were
tuned and why the others fell back. A network never fails for its log.

Example:
    >>> from compiler.frontend.onnx_import import from_onnx
    >>> from compiler.frontend.zoo import load_zoo
    >>> found = extract_network_tasks(from_onnx(load_zoo("resnet18", image_size=32)),
    ...                               "vta-1x16x16")
    >>> len(found.tasks), sum(t.weight for t in found.tasks), found.skipped
    (16, 21, [])
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from compiler.errors import ModelError
from compiler.model.program import TensorSpec
from compiler.partition import AccelGroup
from compiler.registry import lookup
from compiler.tune.extract import Extracted
from compiler.tune.records import Record, best_records, load_records
from compiler.tune.task import Task, hw_config, hw_spec
from isa import HwConfig, load_config


def group_task(group: AccelGroup, cfg: HwConfig) -> tuple[Task | None, str]:
    """The task a conv2d / dense accelerator group compiles as, or why there is none: its
    anchor operator's registered template (``compiler.registry``'s ``vta`` key) says."""
    impl = lookup("vta", group.anchor.op)
    task: tuple[Task | None, str] = impl.task(group, cfg)
    return task


def partition_tasks(partition: Any, cfg: HwConfig) -> Extracted:
    """One task per unique conv2d / dense group of ``partition``, weighted by how many groups
    share it (named after the first), and the groups left out with the reason."""
    found: dict[str, Task] = {}
    out = Extracted()
    for group in partition.groups:
        if group.kind not in ("conv2d", "dense"):
            continue
        task, reason = group_task(group, cfg)
        if task is None:
            out.skipped.append((group.name, reason))
            continue
        old = found.get(task.key)
        found[task.key] = task if old is None else _weighted(old, old.weight + 1)
    out.tasks = list(found.values())
    return out


def _weighted(t: Task, weight: int) -> Task:
    from dataclasses import replace

    return replace(t, weight=weight)


def extract_network_tasks(
    graph: Any,
    config: str | HwConfig = "default",
    *,
    calibration: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
    calibrator: str = "percentile",
    requant: str = "multiplier",
    sensitivity: str | float | None = None,
) -> Extracted:
    """The tasks of ``graph``'s quantized groups (see the module docstring); a float graph is
    quantized on ``calibration`` (None: seeded random data, as ``vtac compile`` without
    ``--calibrate``; the epilogue's structure rarely depends on the scales), with ``requant``
    and the fp32 ``sensitivity`` threshold a compile will use (they decide the groups and their
    epilogues)."""
    from compiler.model.calibration import calibration_feeds
    from compiler.model.vta import quantize_partition

    # a preset's name, or a config as JSON (what `vtac explore` sweeps)
    cfg = hw_config(config) if isinstance(config, str) else config
    if calibration is None and not any(n.op == "quantize" for n in graph.nodes):
        specs = [TensorSpec(v.name, tuple(v.type.shape), str(v.type.dtype)) for v in graph.inputs]
        calibration = calibration_feeds(specs, None)
    _, part, _ = quantize_partition(
        graph, cfg, calibration=calibration, calibrator=calibrator, requant=requant,
        sensitivity=sensitivity,
    )  # fmt: skip
    return partition_tasks(part, cfg)


@dataclass
class NetworkTuning:
    """The best records of a tuning log for one accelerator config, and what each group of a
    compiled network took from them.

    ``used``: ``(group, knobs)`` of the groups that compiled with a record's knobs;
    ``fell_back``: ``(group, reason)`` of those that compiled with the heuristic's;
    ``unmatched``: why records of the log can match no group (another target or config, a
    template layer's records), counted once when the log is read.
    """

    config: HwConfig
    best: dict[str, Record]
    unmatched: list[str] = field(default_factory=list)
    used: list[tuple[str, str]] = field(default_factory=list)
    fell_back: list[tuple[str, str]] = field(default_factory=list)

    def knobs(self, group: AccelGroup) -> tuple[Any | None, str]:
        """The record's knobs for ``group`` and ``""``, or None and why there are none."""
        task, reason = group_task(group, self.config)
        if task is None:
            return None, f"not tuned: {reason}"
        rec = self.best.get(task.key)
        if rec is None:
            return None, f"no record for {task.key}"
        return task.knobs(rec.config), ""

    def use(self, group: str, knobs: Any) -> None:
        self.used.append((group, knobs.describe()))

    def fall_back(self, group: str, reason: str) -> None:
        self.fell_back.append((group, reason))

    def report(self) -> str:
        """Which groups compiled with tuned knobs, which with the heuristic's and why."""
        used = ", ".join(g for g, _ in self.used) or "none"
        lines = [f"tuned knobs ({len(self.used)} groups): {used}"]
        for g, reason in self.fell_back:
            lines.append(f"heuristic knobs for {g}: {reason}")
        lines += self.unmatched
        return "\n".join(lines)


def load_network_tuning(
    log: str | os.PathLike | Sequence[Record], config: str | HwConfig
) -> NetworkTuning:
    """The best records of ``log`` (a path or records) that can match the groups of a network
    compiled for ``config``; the others are counted, by why, in ``unmatched``. A log none of
    whose records is for the accelerator is refused, naming the targets it holds."""
    cfg = load_config(config) if isinstance(config, str) else config
    where = os.fspath(log) if isinstance(log, (str, os.PathLike)) else "the records"
    if isinstance(log, (str, os.PathLike)):
        if not os.path.exists(log):
            raise ModelError(f"tuning log {where}: no such file")
        records = load_records(os.fspath(log))
    else:
        records = list(log)
    hw = hw_spec(cfg)
    targets = sorted({r.task.target for r in records})
    if records and "vta" not in targets:
        raise ModelError(
            f"tuning log {where}: its records are for target {', '.join(targets)}, not vta "
            "(tune with --target vta)"
        )
    mine: list[Record] = []
    other: dict[str, int] = {}
    template = 0
    for r in records:
        if r.task.target != "vta" or r.task.hw != hw:
            label = f"{r.task.target}/{r.task.hw_label}"
            other[label] = other.get(label, 0) + 1
        elif not r.task.epilogue:
            template += 1
        else:
            mine.append(r)
    unmatched = []
    if other:
        held = ", ".join(f"{n} for {k}" for k, n in sorted(other.items()))
        unmatched.append(f"tuning log {where}: {held}: records of another target or config do "
                         f"not match {cfg.name}")  # fmt: skip
    if template:
        unmatched.append(
            f"tuning log {where}: {template} records of single template layers (vtac tune "
            "conv2d / dense / resnet18-layers) match no network group: tune the model itself"
        )
    return NetworkTuning(cfg, best_records(mine), unmatched)


def choose_knobs(
    group: AccelGroup, cfg: HwConfig, tuning: NetworkTuning | None
) -> tuple[Any | None, str]:
    """The knobs ``group`` compiles with under ``tuning`` (its task's best record's) and
    ``""``; or None (the heuristic's) and why, empty for a group no tuning applies to."""
    if tuning is None or group.kind not in ("conv2d", "dense"):
        return None, ""
    if tuning.config != cfg:
        raise ModelError(
            f"the tuning log was read for {tuning.config.name}; group {group.name} compiles for "
            f"{cfg.name}"
        )
    return tuning.knobs(group)


__all__ = [
    "NetworkTuning",
    "choose_knobs",
    "extract_network_tasks",
    "group_task",
    "load_network_tuning",
    "partition_tasks",
]
