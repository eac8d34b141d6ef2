"""Sensitivity: each quantized node's own int8 error against fp32, and the fp32 fallback.

After the scales are chosen, every node that got an int8 rule and computes something of its
own (``conv2d``, ``dense``, ``add``, ``multiply``, ``hard_sigmoid``, ``hard_swish``,
``global_avg_pool2d``, each with the ``relu`` or ``clip`` fused into it) is measured in
isolation on the calibration batches: its fp32 inputs, taken from the float graph, are
quantized at their int8 scales and fed to the node's int8 form alone (the ``quantize`` of each
input, the integer operator, its requantization, a ``dequantize`` at the output scale). The
error is the relative RMS error of that output against the node's fp32 output::

    error = sqrt(sum((y_int8 - y_fp32) ** 2) / sum(y_fp32 ** 2))

summed over every element of every batch. Feeding fp32 inputs keeps the error of earlier nodes
out: the measure is what this node's int8 form alone loses (its inputs' rounding and clipping,
its weights' rounding, its output's rounding and clipping). The pass-through operators
(``max_pool2d``, ``relu``, ``reshape``, ``transpose``, a lone ``clip``) are exact on int8 and
are not measured.

A node whose error exceeds the threshold (:data:`DEFAULT_SENSITIVITY`, or ``sensitivity=`` of
:func:`~compiler.quantize.realize.quantize_graph`) stays fp32: its inputs are dequantized, it
computes in float on the host, and its output is quantized again where an integer operator
reads it. The quantized graph records those nodes (:func:`fp32_fallbacks`) for the partition
and the report.

Example:
    >>> parse_sensitivity("off") is None, parse_sensitivity("0.2"), parse_sensitivity(None)
    (True, 0.2, 0.1)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from compiler.graph.ir import Constant, Graph, Node, TensorType, Value, Var
from compiler.graph.reference import evaluate
from compiler.quantize.requant import QuantizeError

#: The default threshold on a node's relative RMS int8 error. The nodes of the digits network,
#: ResNet-18 and the EfficientNet-Lite models measure under 0.05 with percentile calibration
#: (docs/quantization.md); a node at 0.1 loses a tenth of its signal's energy to rounding and
#: clipping, the level at which one layer visibly moves a network's output.
DEFAULT_SENSITIVITY = 0.1
#: The operators whose int8 form is measured (their own arithmetic can lose precision).
MEASURED_OPS = frozenset(
    {
        "conv2d",
        "dense",
        "add",
        "multiply",
        "matmul",
        "hard_sigmoid",
        "hard_swish",
        "global_avg_pool2d",
    }
)
#: The option value that turns the fallback off.
OFF = "off"
#: The option value that chooses the threshold: the first of :data:`AUTO_THRESHOLDS` whose
#: int8 network keeps every output's cosine against fp32, on the calibration data, at
#: :data:`INT8_COSINE_TARGET` or above (the last if none does).
AUTO = "auto"
AUTO_THRESHOLDS = (0.1, 0.05, 0.03, 0.02, 0.01)
#: The cosine between an int8 output and the float one, on the calibration data, that ``auto``
#: asks for and under which a build warns (``compiler.model.vta.warn_if_far_from_fp32``).
INT8_COSINE_TARGET = 0.9


def sensitivity_thresholds(value: str | float | None) -> tuple[float, ...] | None:
    """The thresholds a ``sensitivity`` option tries, in order: :data:`AUTO_THRESHOLDS` for
    ``"auto"``, else the one :func:`parse_sensitivity` gives (None for ``"off"``).

    >>> sensitivity_thresholds("auto")[:2], sensitivity_thresholds(0.2)
    ((0.1, 0.05), (0.2,))
    >>> sensitivity_thresholds("off") is None
    True
    """
    if isinstance(value, str) and value.strip().lower() == AUTO:
        return AUTO_THRESHOLDS
    th = parse_sensitivity(value)
    return None if th is None else (th,)


def parse_sensitivity(value: str | float | None) -> float | None:
    """The threshold of a ``sensitivity`` option: None (not given) is
    :data:`DEFAULT_SENSITIVITY`, ``"off"`` is None (every node quantized), else a positive
    number."""
    if value is None:
        return DEFAULT_SENSITIVITY
    if isinstance(value, str):
        if value.strip().lower() == OFF:
            return None
        if value.strip().lower() == AUTO:
            raise QuantizeError(f"{AUTO!r} is a choice of thresholds (sensitivity_thresholds)")
        try:
            value = float(value)
        except ValueError:
            raise QuantizeError(
                f"sensitivity threshold {value!r} is neither a number nor {OFF!r} or {AUTO!r}"
            ) from None
    th = float(value)
    if not (th > 0 and math.isfinite(th)):
        raise QuantizeError(f"sensitivity threshold must be a positive number or {OFF!r}, got {th}")
    return th


@dataclass(frozen=True)
class Fp32Fallback:
    """A node kept in fp32: its name, operator, measured int8 error, the threshold, and its
    position in the quantized graph's node list (names need not be unique)."""

    node: str
    op: str
    error: float
    threshold: float
    index: int

    @property
    def reason(self) -> str:
        """The report's words."""
        return (
            f"int8 error {self.error:.3g} > threshold {self.threshold:g} (relative RMS against "
            "fp32 on the calibration data): kept fp32 on the host"
        )


@dataclass(frozen=True)
class QuantizedGraph(Graph):
    """A quantized graph with the nodes the sensitivity check kept in fp32, and per graph output
    the mean cosine between its int8 and its float values over the calibration batches
    (``calibration_cosine``; empty where it was not measured: without bias correction, whose
    walk of the calibration data measures it)."""

    fp32_nodes: tuple[Fp32Fallback, ...] = ()
    calibration_cosine: tuple[float, ...] = ()
    #: the threshold the nodes were kept fp32 at (the one ``auto`` chose); None: not checked
    threshold: float | None = None


def fp32_fallbacks(graph: Graph) -> dict[int, Fp32Fallback]:
    """``id(node) -> Fp32Fallback`` of the nodes ``graph``'s quantization kept in fp32 (none for a
    graph that was not quantized with the sensitivity check).

    Example:
        >>> from compiler.graph.ir import TensorType, Var
        >>> x = Var("x", TensorType((1, 4), "float32"))
        >>> fp32_fallbacks(Graph.from_outputs([x], [Node("relu", (x,))]))
        {}
    """
    return {id(graph.nodes[f.index]): f for f in getattr(graph, "fp32_nodes", ())}


@dataclass(frozen=True)
class Measured:
    """One quantized node: the float ``node``, the float value ``out`` its int8 form produces
    (``node`` or the relu / clip fused into it), and that int8 form's output and scale, with
    the int8 value and scale that stands for each float input."""

    node: Node
    out: Value
    qout: Value
    scale: float
    inputs: tuple[tuple[Value, Value, float], ...]


def _isolated(m: Measured) -> tuple[Graph, list[Value]]:
    """The int8 form of ``m`` alone: a ``quantize`` of a fresh float input for every float
    input, the integer nodes between them and the output, and a ``dequantize``. Also the float
    values whose data feeds the inputs, in order."""
    subst: dict[int, Node] = {}
    ins: list[Var] = []
    sources: list[Value] = []
    for k, (v, q, s) in enumerate(m.inputs):
        if id(q) in subst:
            continue
        var = Var(f"in{k}", TensorType(v.type.shape, v.type.dtype, v.type.layout))
        ins.append(var)
        sources.append(v)
        subst[id(q)] = Node("quantize", (var,), {"scale": s}, name=f"{m.node.label}.in{k}")
    memo: dict[int, Value] = {}

    def copy(v: Value) -> Value:
        if isinstance(v, Constant):
            return v
        if id(v) in subst:
            return subst[id(v)]
        if id(v) not in memo:
            if not isinstance(v, Node):
                raise QuantizeError(f"node {m.node.label!r}: int8 form reads a float input")
            memo[id(v)] = Node(v.op, tuple(copy(i) for i in v.inputs), v.attrs, v.name)
        return memo[id(v)]

    out = Node("dequantize", (copy(m.qout),), {"scale": m.scale}, name=f"{m.node.label}.out")
    return Graph.from_outputs(ins, [out], name=m.node.label), sources


def measure_errors(
    graph: Graph,
    measured: Sequence[Measured],
    batches: Sequence[Any],
    known: Sequence[Mapping[int, np.ndarray]] = (),
) -> dict[int, float]:
    """``id(node) -> error`` (see the module docstring) of every measured node of the prepared
    float ``graph`` over the calibration ``batches``. ``known``: per batch, float values of
    ``graph`` already computed on it by ``id(value)`` (calibration's outputs), which the
    reference executor then does not compute again."""
    if not measured:
        return {}
    forms = [_isolated(m) for m in measured]
    wanted: dict[int, Value] = {}
    for m, (_, sources) in zip(measured, forms, strict=True):
        for v in (*sources, m.out):
            wanted.setdefault(id(v), v)
    probe_outs = [v for v in wanted.values() if not isinstance(v, Var)]
    num = np.zeros(len(measured))
    den = np.zeros(len(measured))
    for b, feed in enumerate(batches):
        got = float_values(graph, probe_outs, feed, known[b] if b < len(known) else {})
        for i, v in enumerate(graph.inputs):
            got[id(v)] = np.asarray(feed[v.name] if isinstance(feed, Mapping) else feed[i])
        for k, (m, (sub, sources)) in enumerate(zip(measured, forms, strict=True)):
            feed_k = {var.name: got[id(s)] for var, s in zip(sub.inputs, sources, strict=True)}
            y_q = evaluate(sub, feed_k)[0].astype(np.float64)
            y_f = np.asarray(got[id(m.out)], np.float64)
            num[k] += float(np.sum((y_q - y_f) ** 2))
            den[k] += float(np.sum(y_f**2))
    errors = {}
    for k, m in enumerate(measured):
        if den[k] > 0:
            errors[id(m.node)] = math.sqrt(num[k] / den[k])
        else:  # fp32 output identically zero: exact unless int8 gives something else
            errors[id(m.node)] = 0.0 if num[k] == 0 else math.inf
    return errors


def float_values(
    graph: Graph, values: Sequence[Value], feed: Any, known: Mapping[int, np.ndarray]
) -> dict[int, np.ndarray]:
    """``id(value) -> array`` of ``values`` of the float ``graph`` on ``feed``: from ``known``
    (calibration's values of that batch) where there, the rest by the reference executor."""
    got = {id(v): known[id(v)] for v in values if id(v) in known}
    missing = [v for v in values if id(v) not in known]
    if missing:
        probe = Graph(graph.inputs, graph.nodes, tuple(missing), graph.name)
        got.update(zip(map(id, missing), evaluate(probe, feed), strict=True))
    return got


__all__ = [
    "AUTO",
    "AUTO_THRESHOLDS",
    "DEFAULT_SENSITIVITY",
    "INT8_COSINE_TARGET",
    "MEASURED_OPS",
    "OFF",
    "Fp32Fallback",
    "Measured",
    "QuantizedGraph",
    "float_values",
    "fp32_fallbacks",
    "measure_errors",
    "parse_sensitivity",
    "sensitivity_thresholds",
]
