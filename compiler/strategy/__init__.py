"""Operator strategies for the CPU: the tensor expression of every graph operator and the
schedule of a fused group.

A graph runtime turns each fused group into tensor expressions by calling :func:`compute` per
node in topological order (placeholders stand for the group's inputs, constants included),
schedules the group with :func:`schedule` and builds it with
``compiler.build.build(s, args, target="cpu")``. :func:`schedule_group` also returns the
anchor's kind and the knob values chosen.

Example:
    >>> import numpy as np
    >>> from compiler import te
    >>> from compiler.build import build
    >>> x = te.placeholder((2, 16), name="x")
    >>> w = te.placeholder((8, 16), name="w")
    >>> b = te.placeholder((8,), name="b")
    >>> y = compute("dense", [x, w, b], {}, "fc")
    >>> z = compute("relu", [y], {}, "fc_relu")
    >>> f = build(schedule([z], y), [x, w, b, z], target="cpu")
    >>> xv, wv = np.ones((2, 16), "float32"), np.ones((8, 16), "float32")
    >>> f(xv, wv, np.full(8, -20.0, "float32"))[0, :3]
    array([0., 0., 0.], dtype=float32)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from compiler.schedule import Schedule
from compiler.strategy.compute import OPS, StrategyError, compute_op
from compiler.strategy.schedule import KINDS, GroupSchedule, schedule_group
from compiler.te.tensor import Tensor


def compute(op: str, inputs: Sequence[Tensor], attrs: Mapping[str, Any], name: str) -> Tensor:
    """The output of graph node ``name`` running operator ``op`` on ``inputs``.

    Example:
        >>> from compiler import te
        >>> x = te.placeholder((1, 64, 56, 56), name="x")
        >>> compute("max_pool2d", [x], dict(pool_size=(3, 3), strides=(2, 2),
        ...         padding=(1, 1, 1, 1)), "pool").shape
        (1, 64, 28, 28)
    """
    return compute_op(op, inputs, attrs, name)


def schedule(
    outputs: Sequence[Tensor], anchor: Tensor | None, target: str = "cpu", **knobs: Any
) -> Schedule:
    """The CPU schedule of a fused group (``anchor`` is None for purely injective groups).

    Example:
        >>> from compiler import te
        >>> x = te.placeholder((4, 32), name="x")
        >>> y = compute("sigmoid", [x], {}, "act")
        >>> schedule([y], None)["act"].axis_names()
        ['i0', 'i1.outer', 'i1.inner']
    """
    return schedule_group(outputs, anchor, target, knobs).schedule


__all__ = [
    "KINDS",
    "OPS",
    "GroupSchedule",
    "StrategyError",
    "compute",
    "schedule",
    "schedule_group",
]
