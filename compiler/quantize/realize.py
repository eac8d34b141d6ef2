"""The quantization pass: a float graph becomes an int8 graph with float edges.

:func:`quantize_graph` runs the graph pipeline's first passes (constant folding, batch-norm
folding, dead-node elimination), calibrates every activation on the sample inputs
(:mod:`~compiler.quantize.calibrate`) and rewrites the graph node by node:

* ``conv2d`` / ``dense`` with constant weights: int8 data (per-tensor scale ``s_x``), int8
  weights per output channel (``s_w[c] = max|w[c]| / 127``, values in ``[-127, 127]``, at least
  :func:`weight_scale_floor` so that a dead channel quantizes to zeros and its bias), int32
  bias ``round(b / (s_x s_w[c]))``, int32 accumulation, then ``requantize`` to the output's
  int8 scale ``s_y`` by ``M[c] = s_x s_w[c] / s_y``; a ``relu`` or ``clip`` that is the only
  reader is fused into the requantization (``out_min = 0`` for a relu; a clip's bounds in units
  of ``s_y``, rounded half up and held within int8: a relu6 clips at ``round(6 / s_y)``);
* ``add`` of two activations: ``qadd`` (both rescaled to the output scale in the integer
  domain), with a following ``relu`` or ``clip`` fused the same way;
* ``max_pool2d``, ``relu``, ``reshape``, ``transpose``, ``strided_slice`` and a nearest
  ``resize``: on int8, the scale passes through (each output element is an input element);
  ``clip`` too, its bounds rounded to the input's scale;
* ``concat`` of operands that are all int8: on int8 at one scale, the concat's own. Before
  the walk, an operand that nothing else reads is made that scale where its scale is chosen
  (:func:`share_concat_scales`), so the concat moves bytes alone; an operand whose scale still
  differs (one another operator reads too) is rescaled in the integer domain (``cast`` to
  int32, ``requantize``). A concat with a float operand stays float;
* ``global_avg_pool2d``: ``global_sum_pool2d`` (int32) and ``requantize`` by
  ``s_x / (H W s_y)``;
* ``hard_sigmoid`` / ``hard_swish``: ``qhard_sigmoid`` / ``qhard_swish``, their exact integer
  forms (:mod:`~compiler.quantize.hard`);
* ``multiply`` of two activations of one shape, or of an NCHW activation and a per-channel
  ``(N, C, 1, 1)`` gate (a squeeze-excitation): ``qmul``, ``multiplier / 2**shift`` close to
  ``s_a s_b / s_y``;
* ``matmul`` of two activations (attention's ``Q K^T`` and ``softmax(..) V``; batch axes as the
  graph broadcasts them): both int8 at their per-tensor scales, int32 accumulation, then a
  ``requantize`` by ``s_a s_b / s_y``, one scale for the whole tensor (its parameters repeated
  along axis 1, as a per-channel requantize gives them); a ``relu`` or ``clip`` that alone reads
  it is fused. A matmul by a constant is a ``dense`` layer before this (``matmul_to_dense``);
* anything else (softmax, sigmoid, ...): stays float32, its int8 inputs dequantized and its
  output quantized again where an integer operator reads it;
* ``quantize`` at the float inputs, ``dequantize`` at the outputs.

Then every quantized node's own int8 error is measured against fp32 on the calibration data
(:mod:`~compiler.quantize.sensitivity`); a node over the ``sensitivity`` threshold is left in
float like an operator without an integer form, and the result names it
(:func:`~compiler.quantize.sensitivity.fp32_fallbacks`).

``requant="multiplier"`` (the default) uses 15-bit multipliers
(:func:`~compiler.quantize.requant.choose_requant`); ``requant="shift"`` uses shifts alone,
snapping each weight scale to ``2**-k s_y / s_x`` and each pool output scale so that every
conv/dense/pool requantization is an exact power of two (``qadd`` keeps its multipliers).
``requant="vta"`` is VTA's own scheme (TVM's ``relay.quantize`` for VTA): every activation scale
snapped up to a power of two and one power-of-two weight scale per tensor (``2**-k s_y / s_x``
with one ``k`` for every output channel), so that each conv/dense requantization is one shift
shared by every channel (an immediate ``SHR``) and a ``qadd``'s multipliers are powers of two.

Example:
    >>> from compiler.graph.ir import Constant, Graph, Node, TensorType, Var
    >>> from compiler.graph.reference import evaluate
    >>> rng = np.random.default_rng(0)
    >>> x = Var("x", TensorType((8, 2, 6, 6), "float32", "NCHW"))
    >>> w = Constant(rng.normal(size=(4, 2, 3, 3)).astype(np.float32), name="w")
    >>> y = Node("relu", (Node("conv2d", (x, w), {"padding": (1, 1, 1, 1)}, name="c"),), name="r")
    >>> g = Graph.from_outputs([x], [Node("global_avg_pool2d", (y,), name="gap")])
    >>> feed = {"x": rng.normal(size=(8, 2, 6, 6)).astype(np.float32)}
    >>> q = quantize_graph(g, feed, "minmax")
    >>> [n.op for n in q.nodes]
    ['quantize', 'conv2d', 'requantize', 'global_sum_pool2d', 'requantize', 'dequantize']
    >>> ref, out = evaluate(g, feed)[0], evaluate(q, feed)[0]
    >>> bool(np.abs(out - ref).max() < 0.02 * np.abs(ref).max())
    True
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np

import compiler.quantize.ops  # noqa: F401  (registers the int8 operators)
from compiler.graph.ir import Constant, Graph, Node, Value
from compiler.graph.passes.fold_hard_activations import keeps_type, scalar_operand
from compiler.graph.pipeline import graph_pass, graph_pipeline, run_pipeline
from compiler.passes.pipeline import Pipeline
from compiler.quantize.calibrate import DEFAULT_BINS, Calibrator, calibrate, node_label
from compiler.quantize.hard import choose_hard_sigmoid, choose_hard_swish, fixed_point
from compiler.quantize.requant import (
    QuantizeError,
    RequantParams,
    choose_add,
    choose_requant,
    gate_shape,
)
from compiler.quantize.sensitivity import (
    INT8_COSINE_TARGET,
    MEASURED_OPS,
    Fp32Fallback,
    Measured,
    QuantizedGraph,
    measure_errors,
    sensitivity_thresholds,
)
from compiler.registry import declaration, operators, register, register_unsupported, support

#: Operators at the float edges of a quantized graph.
EDGE_OPS = frozenset({"quantize", "dequantize"})
REQUANT_MODES = ("multiplier", "shift", "vta")
#: Modes whose conv/dense/pool requantizations are shifts alone.
SHIFT_MODES = frozenset({"shift", "vta"})

INT32_LIMIT = 1 << 31
#: Smallest per-channel weight scale, as a fraction of the tensor's largest channel scale. A
#: trained channel whose weights are all (nearly) zero would otherwise get a scale near zero, and
#: its bias in units of ``s_x s_w[c]`` would not fit int32. At ``2**-12`` a channel keeps full
#: precision down to 1/4096 of the largest channel's range, and weights below half a floor step
#: quantize to exactly zero (the channel then gives its bias alone).
WEIGHT_SCALE_FLOOR = 2.0**-12
#: Largest bias magnitude in accumulator units: half the int32 range, leaving the other half to
#: the products of the window (at most ``127 * 128`` per tap) so that the sum cannot wrap.
BIAS_LIMIT = 1 << 30
#: The graph pipeline's passes that run before quantization.
PREPARE_PASSES = (
    "fold_constants",
    "elementwise_before_interleave",
    "fold_batch_norm",
    "fold_bias_add",
    "fold_pad",
    "fold_affine",
    "fold_hard_activations",
    "factor_residual_gate",
    "eliminate_dead_nodes",
)


def weight_scale_floor(absmax: np.ndarray, bias: np.ndarray, sx: float) -> np.ndarray:
    """The smallest weight scale of every output channel: :data:`WEIGHT_SCALE_FLOOR` times the
    largest channel's ``max|w| / 127``, raised where the channel's bias would otherwise exceed
    :data:`BIAS_LIMIT` accumulator units (``s_x s_w[c]``). A channel with (nearly) dead weights
    thus quantizes to zeros and keeps its bias, instead of refusing the model.

    Example:
        >>> absmax = np.array([1.27, 1e-12, 0.0])
        >>> weight_scale_floor(absmax, np.zeros(3), 0.1).tolist() == [0.01 * 2.0**-12] * 3
        True
    """
    top = float(absmax.max()) / 127.0 if absmax.size else 0.0
    return np.maximum(top * WEIGHT_SCALE_FLOOR, np.abs(bias) / (sx * BIAS_LIMIT))


def tensor_weight_scale(absmax: np.ndarray, floor: np.ndarray, unit: float) -> float:
    """The one weight scale of a tensor in the ``vta`` mode: ``unit * 2**-k`` (``unit`` is
    ``s_y / s_x``, the scale whose requantization is 1) with the largest ``k >= 0`` that still
    holds every channel's largest weight within 127 and every channel's floor
    (:func:`weight_scale_floor`). With power-of-two activation scales it is a power of two.

    Example:
        >>> tensor_weight_scale(np.array([0.5, 1.27]), np.zeros(2), 1.0)
        0.015625
        >>> tensor_weight_scale(np.zeros(3), np.zeros(3), 0.25)  # all zero: the requant is 1
        0.25
    """
    need = max(float(absmax.max()) / 127.0 if absmax.size else 0.0, float(floor.max(initial=0)))
    if need <= 0:
        return float(unit)
    k = max(0, math.floor(math.log2(unit / need)))
    return float(unit * 2.0**-k)


def prepare_graph(graph: Graph) -> Graph:
    """The graph pipeline up to dead-node elimination (constant, batch-norm, pad and hard
    activation folding), with linear layers written as matmul made dense
    (:func:`prepare_pipeline`).

    Example:
        >>> from compiler.graph.ir import TensorType, Var
        >>> x = Var("x", TensorType((1, 4), "float32"))
        >>> [n.op for n in prepare_graph(Graph.from_outputs([x], [Node("relu", (x,))])).nodes]
        ['relu']
    """
    return run_pipeline(graph, prepare_pipeline())


def prepare_pipeline() -> Pipeline:
    """The passes before quantization: the graph pipeline's :data:`PREPARE_PASSES`, and
    ``matmul_to_dense`` before the dead nodes go (a matmul by a constant weight has an int8
    form as a dense layer, :mod:`compiler.graph.passes.matmul_to_dense`).

    Example:
        >>> prepare_pipeline().names()[-2:]
        ['matmul_to_dense', 'eliminate_dead_nodes']
    """
    from compiler.graph.passes import matmul_to_dense

    first = [p for p in graph_pipeline().passes if p.name in PREPARE_PASSES]
    return Pipeline((*first[:-1], graph_pass("matmul_to_dense", matmul_to_dense), first[-1]))


def quantize_graph(
    graph: Graph,
    calibration_feeds: Iterable[Any] | Mapping[str, Any],
    calibrator: str | Calibrator = "percentile",
    *,
    requant: str = "multiplier",
    bins: int = DEFAULT_BINS,
    sensitivity: str | float | None = None,
    bias_correction: bool = True,
) -> Graph:
    """Quantize ``graph`` to int8 (see the module docstring), calibrating with ``calibrator``
    (``"percentile"`` at 99.99 %, ``"minmax"``, ``"kl"`` or a calibrator object) on
    ``calibration_feeds`` (one feed mapping or an iterable of them, each matching the graph's
    inputs). ``sensitivity``: the threshold on a node's own int8 error over which it stays
    fp32 (:mod:`~compiler.quantize.sensitivity`; None: its default, ``"off"``: every node
    int8; ``"auto"``: the first of ``AUTO_THRESHOLDS`` whose int8 outputs keep their cosine
    against fp32 on the calibration data at ``INT8_COSINE_TARGET``, which the bias correction
    measures); the result is then a :class:`~compiler.quantize.sensitivity.QuantizedGraph` that
    names those nodes. ``bias_correction``: move each int8 layer's bias so that its mean per
    channel on the calibration data is the float layer's
    (:mod:`~compiler.quantize.bias_correction`). Raises
    :class:`~compiler.quantize.requant.QuantizeError` naming the node at fault.
    """
    _check_mode(requant)
    tries = sensitivity_thresholds(sensitivity)
    feeds = calibration_feeds if isinstance(calibration_feeds, Mapping) else list(calibration_feeds)
    prepared = prepare_graph(graph)
    outputs: list[dict[int, np.ndarray]] = []
    thresholds = calibrate(prepared, feeds, calibrator, bins=bins, outputs=outputs)
    return _realize_sensitive(prepared, thresholds, feeds, requant, tries, outputs, bias_correction)


def _realize_sensitive(
    graph: Graph,
    thresholds: Mapping[int, float],
    feeds: Any,
    requant: str,
    tries: Sequence[float] | None,
    outputs: Sequence[Mapping[int, np.ndarray]] = (),
    bias_correction: bool = True,
) -> Graph:
    """Realize, measure every quantized node's own error, and realize again with the nodes
    over the threshold kept in fp32 (each error is measured in isolation, so keeping one node
    in float does not change another's); then correct the int8 layers' biases
    (``bias_correction``). ``tries``: the thresholds (None: none, every node int8), the first
    whose outputs keep :data:`INT8_COSINE_TARGET` on the calibration data taken, else the last
    (one threshold: taken). ``outputs``: calibration's float values per batch
    (:func:`~compiler.quantize.calibrate.collect_histograms`), not computed again."""
    realizer = _Realizer(graph, thresholds, requant)
    quantized = realizer.run()
    batches = [feeds] if isinstance(feeds, Mapping) else list(feeds)
    if tries is None:
        if not bias_correction:
            return quantized
        return _bias_corrected(graph, realizer, quantized, batches, outputs)
    errors = measure_errors(graph, realizer.measured, batches, outputs)
    result: Graph = quantized
    for k, threshold in enumerate(tries):
        over = [n for n in graph.nodes if errors.get(id(n), 0.0) > threshold]
        kept: tuple[Fp32Fallback, ...] = ()
        if not over:
            tried, q = realizer, quantized  # the graph realized first is this threshold's
        else:
            tried = _Realizer(graph, thresholds, requant, keep_float=frozenset(map(id, over)))
            q = tried.run()
            index = {id(n): j for j, n in enumerate(q.nodes)}
            kept = tuple(
                Fp32Fallback(n.label, n.op, errors[id(n)], threshold, index[id(tried.fv[id(n)])])
                for n in over
            )
        result = QuantizedGraph(
            q.inputs, q.nodes, q.outputs, q.name, fp32_nodes=kept, threshold=threshold
        )
        if bias_correction:
            result = _bias_corrected(graph, tried, result, batches, outputs)
        cosines = getattr(result, "calibration_cosine", ())
        if k == len(tries) - 1 or (cosines and min(cosines) >= INT8_COSINE_TARGET):
            break
    return result


def _bias_corrected(
    graph: Graph,
    realizer: _Realizer,
    quantized: Graph,
    batches: Sequence[Any],
    outputs: Sequence[Mapping[int, np.ndarray]],
) -> Graph:
    """``quantized`` with its int8 layers' biases corrected on the calibration ``batches``
    (``outputs``: the prepared float graph's values per batch that calibration kept)."""
    from compiler.quantize.bias_correction import channel_axis, channel_means, correct_biases
    from compiler.quantize.sensitivity import float_values

    in_graph = {id(n) for n in quantized.nodes}
    layers = [t for t in realizer.layers if id(t[0]) in in_graph]
    if not layers or not batches:
        return quantized
    wanted = [f for _, f, _ in layers]
    means = [np.zeros(1) for _ in wanted]  # the float layers' channel means, batch by batch
    for b, feed in enumerate(batches):
        got = float_values(graph, wanted, feed, outputs[b] if b < len(outputs) else {})
        for k, f in enumerate(wanted):
            means[k] = means[k] + channel_means([got[id(f)]], channel_axis(f)) / len(batches)
    targets = {id(acc): (scale, mean) for (acc, _, scale), mean in zip(layers, means, strict=True)}
    int8_outputs: list[list[np.ndarray]] = []
    corrected = correct_biases(quantized, targets, batches, int8_outputs)
    cosines = [0.0] * len(graph.outputs)  # the mean over the batches, per output
    for b, (feed, int8_out) in enumerate(zip(batches, int8_outputs, strict=True)):
        known = outputs[b] if b < len(outputs) else {}
        want = float_values(graph, list(graph.outputs), feed, known)
        for k, v in enumerate(graph.outputs):
            cosines[k] += _cosine(want[id(v)], int8_out[k]) / len(int8_outputs)
    return QuantizedGraph(
        corrected.inputs, corrected.nodes, corrected.outputs, corrected.name,
        fp32_nodes=getattr(corrected, "fp32_nodes", ()), calibration_cosine=tuple(cosines),
        threshold=getattr(corrected, "threshold", None),
    )  # fmt: skip


def _cosine(a: Any, b: Any) -> float:
    """The cosine between two arrays: 1 where both are all zero, 0 where only one is or where a
    value is not finite."""
    x = np.asarray(a, np.float64).reshape(-1)
    y = np.asarray(b, np.float64).reshape(-1)
    nx, ny = float(np.linalg.norm(x)), float(np.linalg.norm(y))
    if nx == 0 or ny == 0 or not (np.isfinite(nx) and np.isfinite(ny)):
        return 1.0 if nx == ny == 0 else 0.0
    return float(x @ y / (nx * ny))


def quantize_pipeline(
    calibration_feeds: Iterable[Any] | Mapping[str, Any],
    calibrator: str | Calibrator = "percentile",
    *,
    requant: str = "multiplier",
    sensitivity: str | float | None = None,
    bias_correction: bool = True,
) -> Pipeline:
    """A named graph pipeline: the folding passes, then ``quantize``.

    Example:
        >>> quantize_pipeline({}).names()
        ['fold_constants', 'elementwise_before_interleave', 'fold_batch_norm', 'fold_bias_add', \
'fold_pad', 'fold_affine', 'fold_hard_activations', 'factor_residual_gate', 'matmul_to_dense', \
'eliminate_dead_nodes', 'quantize']
    """
    feeds = calibration_feeds if isinstance(calibration_feeds, Mapping) else list(calibration_feeds)
    first = list(prepare_pipeline().passes)
    _check_mode(requant)
    step = partial(
        _calibrate_and_realize,
        feeds=feeds,
        calibrator=calibrator,
        requant=requant,
        tries=sensitivity_thresholds(sensitivity),
        bias_correction=bias_correction,
    )
    return Pipeline((*first, graph_pass("quantize", step)))


def _calibrate_and_realize(
    graph: Graph,
    *,
    feeds: Any,
    calibrator: Any,
    requant: str,
    tries: tuple[float, ...] | None,
    bias_correction: bool = True,
) -> Graph:
    outputs: list[dict[int, np.ndarray]] = []
    thresholds = calibrate(graph, feeds, calibrator, outputs=outputs)
    return _realize_sensitive(graph, thresholds, feeds, requant, tries, outputs, bias_correction)


def realize(graph: Graph, thresholds: Mapping[int, float], *, requant: str = "multiplier") -> Graph:
    """Rewrite a prepared float graph into int8 with the calibrated ``thresholds``
    (``id(value) -> threshold``, from :func:`~compiler.quantize.calibrate.calibrate`).

    Example:
        >>> from compiler.graph.ir import TensorType, Var
        >>> x = Var("x", TensorType((1, 2), "float32"))
        >>> fc = Node("dense", (x, Constant(np.eye(2, dtype=np.float32))), name="fc")
        >>> g = Graph.from_outputs([x], [Node("relu", (fc,), name="act")])
        >>> q = realize(g, {id(x): 1.27, id(fc): 2.54, id(g.nodes[1]): 2.54})
        >>> for n in q.nodes:
        ...     print(n.op, dict(n.attrs))
        quantize {'scale': 0.01}
        dense {}
        requantize {'axis': 1, 'out_max': 127, 'out_min': 0}
        dequantize {'scale': 0.02}
    """
    _check_mode(requant)
    return _Realizer(graph, thresholds, requant).run()


def _check_mode(requant: str) -> None:
    if requant not in REQUANT_MODES:
        raise QuantizeError(
            f"unknown requantization {requant!r}; known: {', '.join(REQUANT_MODES)}"
        )


INT8_MIN, INT8_MAX = -128, 127


def requantize_node(
    acc: Value, params: RequantParams, bounds: tuple[int, int], label: str, axis: int | None = None
) -> Node:
    """``requantize`` of the int32 ``acc`` by ``params`` into ``bounds``, its parameters as
    constants named after ``label`` (``axis``: the operator's default when None)."""
    attrs: dict[str, int] = {"out_min": bounds[0], "out_max": bounds[1]}
    if axis is not None:
        attrs["axis"] = axis
    consts = (
        Constant(params.multiplier, name=f"{label}.multiplier"),
        Constant(params.shift, name=f"{label}.shift"),
        Constant(params.post_shift, name=f"{label}.post_shift"),
    )
    return Node("requantize", (acc, *consts), attrs, name=f"{label}.requantize")


def carries_scale(node: Node) -> bool:
    """Whether ``node``'s int8 form keeps its input's scale: its operator passes int8 through
    (every output element is an input element), or it is a nearest ``resize``."""
    from compiler.registry import declaration

    if node.op == "resize":
        return node.attrs["method"] == "nearest"
    return declaration(node.op).quant == "pass-through"


def _int8_bound(bound: float, scale: float) -> int:
    """``bound`` in int8 units of ``scale``, rounded half up and held within int8."""
    if math.isinf(bound):
        return INT8_MIN if bound < 0 else INT8_MAX
    return int(min(max(math.floor(bound / scale + 0.5), INT8_MIN), INT8_MAX))


class _Realizer:
    def __init__(
        self,
        graph: Graph,
        thresholds: Mapping[int, float],
        requant: str,
        keep_float: frozenset[int] = frozenset(),
    ) -> None:
        self.graph = graph
        thresholds = share_concat_scales(graph, thresholds)
        #: nodes left in fp32 whatever their int8 rule (the sensitivity check's)
        self.keep_float = keep_float
        #: the quantized nodes whose own int8 error can be measured
        self.measured: list[Measured] = []
        self.thresholds = thresholds
        self.requant = requant
        #: the requantization of conv/dense/pool (:func:`choose_requant`'s mode)
        self._mode = "shift" if requant in SHIFT_MODES else "multiplier"
        self.users = graph.users
        self.out_ids = {id(v) for v in graph.outputs}
        self.qv: dict[int, tuple[Value, float]] = {}  # float value -> (int8 value, scale)
        self.fv: dict[int, Value] = {id(v): v for v in graph.inputs}
        self.fused: set[int] = set()
        #: each int8 conv2d / dense: (its int32 node, the float node, the accumulator scale per
        #: output channel), for the bias correction
        self.layers: list[tuple[Node, Node, np.ndarray]] = []

    # ------------------------------------------------------------ scales and domains

    def scale(self, v: Value) -> float:
        th = self.thresholds.get(id(v))
        if th is None:
            raise QuantizeError(f"value {node_label(v)!r} was not calibrated")
        if not math.isfinite(th):
            raise QuantizeError(f"value {node_label(v)!r}: calibrated threshold {th} is not finite")
        # a value that was 0 on every calibration input: any scale represents it
        s = (th if th > 0 else 1.0) / 127.0
        if self.requant == "vta":
            # snapped up (nothing more is clipped): every scale ratio is then a power of two
            return float(2.0 ** math.ceil(math.log2(s)))
        return s

    def as_int8(self, v: Value) -> tuple[Value, float]:
        if id(v) in self.qv:
            return self.qv[id(v)]
        if isinstance(v, Constant):
            raise QuantizeError(f"constant {node_label(v)!r} is not an activation")
        s = self.scale(v)
        q = Node("quantize", (self.fv[id(v)],), {"scale": s}, name=f"{node_label(v)}.quantize")
        self.qv[id(v)] = (q, s)
        return q, s

    def as_float(self, v: Value) -> Value:
        if isinstance(v, Constant):
            return v
        if id(v) not in self.fv:
            q, s = self.qv[id(v)]
            self.fv[id(v)] = Node(
                "dequantize", (q,), {"scale": s}, name=f"{node_label(v)}.dequantize"
            )
        return self.fv[id(v)]

    def is_activation(self, v: Value) -> bool:
        return not isinstance(v, Constant) and v.type.dtype.startswith("float")

    def fusable_activation(self, node: Node) -> Node | None:
        """The ``relu`` or ``clip`` that is ``node``'s only reader (and ``node`` not a graph
        output): the requantize or qadd producing ``node`` clips to its bounds instead."""
        users = self.users.get(id(node), [])
        if len(users) == 1 and users[0].op in ("relu", "clip") and id(node) not in self.out_ids:
            return users[0]
        return None

    def affine_after(self, node: Node) -> tuple[Node, float, float] | None:
        """A ``multiply`` by a positive scalar constant ``a`` and/or an ``add`` of a scalar
        constant ``b`` (:func:`~compiler.graph.passes.fold_hard_activations.scalar_operand`)
        that alone read ``node`` in turn (PP-LCNetV3's ``* a + b``
        after a hard swish; ``node`` no graph output, none kept in fp32): ``(the last of
        them, a, b)``; the hard swish computes them itself (:func:`choose_hard_swish`)."""
        out, times, plus = node, 1.0, 0.0
        for op in ("multiply", "add"):
            users = self.users.get(id(out), [])
            if len(users) != 1 or id(out) in self.out_ids or users[0].op != op:
                continue
            step = users[0]
            found = scalar_operand(step, op)
            if id(step) in self.keep_float or found is None or found[0] is not out:
                break
            if not keeps_type(step, out):  # no constant broadcasts it
                break
            value = found[1]
            if op == "multiply":
                if not value > 0:
                    break
                times = value
            else:
                plus = value
            out = step
        return None if out is node else (out, times, plus)

    def residual_scale(self, node: Node) -> float:
        """The output scale of the ``add`` that is ``node``'s only reader (0 when there is none):
        in the ``vta`` mode a convolution feeding a residual add requantizes straight to it when
        its own scale is finer. VTA adds the residual in the accumulator's domain and rounds
        once; here an int8 tensor sits between, and at the add's scale the add needs no
        rescaling of that operand (no ``MUL``, and no rounding shift when the other operand
        shares the scale). The branch's range is within its own scale's, so nothing more is
        clipped; its rounding step is the add's output step, the one the sum is rounded to.

        Example:
            >>> from compiler.graph.ir import TensorType, Var
            >>> x = Var("x", TensorType((1, 2), "float32"))
            >>> fc = Node("dense", (x, Constant(np.eye(2, dtype=np.float32))), name="fc")
            >>> g = Graph.from_outputs([x], [Node("add", (fc, x), name="add")])
            >>> r = _Realizer(g, {id(x): 1.0, id(fc): 1.0, id(g.nodes[1]): 2.54}, "vta")
            >>> r.residual_scale(fc)
            0.03125
        """
        users = self.users.get(id(node), [])
        if len(users) != 1 or users[0].op != "add" or id(node) in self.out_ids:
            return 0.0
        add = users[0]
        a, b = add.inputs
        if not (self.is_activation(a) and self.is_activation(b)) or a.type.shape != b.type.shape:
            return 0.0
        return self.scale(self.fusable_activation(add) or add)

    @staticmethod
    def int8_bounds(act: Node | None, scale: float) -> tuple[int, int]:
        """The int8 bounds of a fused activation at the output ``scale`` (round half up, as
        ``quantize`` rounds): ``[0, 127]`` for a relu, the clip's bounds within ``[-128, 127]``,
        ``[-128, 127]`` without one."""
        if act is None:
            return INT8_MIN, INT8_MAX
        if act.op == "relu":
            return 0, INT8_MAX
        return _int8_bound(act.attrs["a_min"], scale), _int8_bound(act.attrs["a_max"], scale)

    # ------------------------------------------------------------ the walk

    def run(self) -> Graph:
        for node in self.graph.nodes:
            if id(node) in self.fused:
                continue
            if id(node) in self.keep_float:
                done = False
            else:
                # the operator's int8 rule (registered below from its declaration); an
                # operator without one stays float32
                rule = support("quantize", node.op)
                try:
                    done = rule(self, node) if callable(rule) else False
                except QuantizeError as exc:
                    raise QuantizeError(f"node {node.label!r} ({node.op}): {exc}") from None
                if done and node.op in MEASURED_OPS:
                    self._record(node)
            if not done:
                self._float(node)
        outputs = [self.as_float(v) for v in self.graph.outputs]
        return Graph.from_outputs(self.graph.inputs, outputs, name=self.graph.name)

    def _record(self, node: Node) -> None:
        out = node if id(node) in self.qv else self.fusable_activation(node)
        if out is None:
            fused = self.affine_after(node)
            assert fused is not None
            out = fused[0]
        qout, scale = self.qv[id(out)]
        ins = tuple((v, *self.qv[id(v)]) for v in node.inputs if id(v) in self.qv)
        self.measured.append(Measured(node, out, qout, scale, ins))

    def _float(self, node: Node) -> None:
        ins = tuple(self.as_float(v) for v in node.inputs)
        self.fv[id(node)] = Node(node.op, ins, node.attrs, node.name)

    def _pass_through(self, node: Node) -> bool:
        x = node.inputs[0]
        if id(x) not in self.qv:
            return False
        qx, s = self.qv[id(x)]
        self.qv[id(node)] = (Node(node.op, (qx,), node.attrs, node.name), s)
        return True

    def _resize(self, node: Node) -> bool:
        # nearest neighbour copies input elements: exact on int8 at the input's scale
        return carries_scale(node) and self._pass_through(node)

    def _concat(self, node: Node) -> bool:
        # int8 when every operand already is: quantizing a float operand only to concat it
        # would lose its precision for nothing (a detector's box coordinates and class scores
        # at one scale)
        if not all(self.is_activation(v) and id(v) in self.qv for v in node.inputs):
            return False
        s = self.scale(node)
        operands = []
        for k, v in enumerate(node.inputs):
            q, sv = self.qv[id(v)]
            if not math.isclose(sv, s, rel_tol=1e-9):
                try:  # (shift mode cannot scale up: such a concat stays float)
                    q = self._rescale(q, sv / s, v.type, f"{node.label}.in{k}")
                except QuantizeError:
                    return False
            operands.append(q)
        self.qv[id(node)] = (Node("concat", tuple(operands), node.attrs, node.name), s)
        return True

    def _rescale(self, q: Value, ratio: float, t: Any, label: str) -> Node:
        """int8 ``q`` multiplied by ``ratio`` in the integer domain: ``cast`` to int32, then a
        ``requantize`` (one scale, repeated along axis 1 as a per-channel one takes it)."""
        axis = 1 if t.ndim > 1 else 0
        params = choose_requant(np.full(t.shape[axis] if t.ndim else 1, ratio), mode=self._mode)
        wide = Node("cast", (q,), {"dtype": "int32"}, name=f"{label}.int32")
        return requantize_node(wide, params, (INT8_MIN, INT8_MAX), label, axis)

    def _conv2d(self, node: Node) -> bool:
        a = node.attrs
        if a["data_layout"] != "NCHW" or a["kernel_layout"] != "OIHW":
            return False
        return self._weighted(node)

    def _dense(self, node: Node) -> bool:
        return self._weighted(node)

    def _weighted(self, node: Node) -> bool:
        x, w = node.inputs[0], node.inputs[1]
        bias = node.inputs[2] if len(node.inputs) == 3 else None
        if (
            not self.is_activation(x)
            or not isinstance(w, Constant)
            or not w.type.dtype.startswith("float")
            or (bias is not None and not isinstance(bias, Constant))
        ):
            return False
        qx, sx = self.as_int8(x)
        act = self.fusable_activation(node)
        out = act or node
        sy = self.scale(out)
        if self.requant == "vta":
            sy = max(sy, self.residual_scale(out))
        wv = w.value.astype(np.float64)
        channels = wv.shape[0]
        absmax = np.abs(wv.reshape(channels, -1)).max(axis=1)
        unit = sy / sx  # the weight scale for which the requantization is 1
        b = bias.value.astype(np.float64) if bias is not None else np.zeros(channels)
        floor = weight_scale_floor(absmax, b, sx)
        if self.requant == "vta":
            sw = np.full(channels, tensor_weight_scale(absmax, floor, unit))
        elif self.requant == "shift":
            with np.errstate(divide="ignore"):
                k = np.floor(np.log2(127.0 * unit / np.maximum(absmax, 127.0 * floor)))
            sw = np.where(absmax > 0, unit * np.exp2(-np.maximum(k, 0.0)), unit)
        else:
            sw = np.where(absmax > 0, np.maximum(absmax / 127.0, floor), unit)
        wq = np.clip(np.rint(wv / sw.reshape((-1,) + (1,) * (wv.ndim - 1))), -127, 127)
        bq = np.rint(b / (sx * sw))
        if np.any(np.abs(bq) >= INT32_LIMIT):
            c = int(np.argmax(np.abs(bq)))
            raise QuantizeError(
                f"bias of channel {c} ({b[c]:g}) does not fit int32 at scale {sx * sw[c]:g}"
            )
        consts = (
            Constant(wq.astype(np.int8), name=f"{w.name or node.label}.int8"),
            Constant(bq.astype(np.int32), name=f"{node.label}.bias.int32"),
        )
        acc = Node(node.op, (qx, *consts), node.attrs, node.name)
        self.layers.append((acc, node, sx * sw))
        params = choose_requant(sx * sw / sy, mode=self._mode)
        self._requantize(acc, out, params, self.int8_bounds(act, sy), sy)
        if act is not None:
            self.fused.add(id(act))
        return True

    def _requantize(
        self, acc: Node, out: Node, params: RequantParams, bounds: tuple[int, int], scale: float
    ) -> None:
        self.qv[id(out)] = (requantize_node(acc, params, bounds, node_label(out)), scale)

    def _add(self, node: Node) -> bool:
        a, b = node.inputs
        if isinstance(a, Constant) != isinstance(b, Constant):
            return self._add_constant(node)
        if not (self.is_activation(a) and self.is_activation(b)) or a.type.shape != b.type.shape:
            return False
        qa, sa = self.as_int8(a)
        qb, sb = self.as_int8(b)
        return self._qadd(node, qa, sa, qb, sb)

    def _constant_operand(
        self, node: Node, operand_shape: Any
    ) -> tuple[Value, np.ndarray, float] | None:
        """For a binary ``node`` of a float NCHW or ``(N, C)`` activation and a constant: the
        activation, the constant broadcast to ``operand_shape(activation type)`` as int8 at its
        own scale (``max |value| / 127``) and that scale; None when the node is not that."""
        a, b = node.inputs
        x, c = (b, a) if isinstance(a, Constant) else (a, b)
        assert isinstance(c, Constant)
        t = x.type
        if not self.is_activation(x) or t.ndim not in (2, 4) or node.type.shape != t.shape:
            return None
        shape = operand_shape(t)
        vals = np.asarray(c.value, np.float64)
        try:
            if np.broadcast_shapes(vals.shape, shape) != shape:
                return None
        except ValueError:
            return None
        full = np.broadcast_to(vals, shape)
        if not np.all(np.isfinite(full)):
            return None
        top = float(np.abs(full).max())
        scale = top / 127.0 if top > 0 else 1.0
        return x, np.clip(np.floor(full / scale + 0.5), -127, 127).astype(np.int8), scale

    def _add_constant(self, node: Node) -> bool:
        """An NCHW or ``(N, C)`` activation plus a constant that broadcasts to it (a scalar, one
        value per channel: an affine layer's shift): qadd with the constant, broadcast to the
        activation's shape, as an int8 operand at its own scale (``max |value| / 127``)."""
        found = self._constant_operand(node, lambda t: t.shape)
        if found is None:
            return False
        x, qc, sc = found
        qx, sx = self.as_int8(x)
        act = self.fusable_activation(node)
        if choose_add(sx, sc, self.scale(act or node))[1] == 0:
            # the constant is below half a step of the output: at int8 the add is the
            # identity, and the value keeps its input's int8 form
            self.qv[id(node)] = (qx, sx)
            return True
        return self._qadd(node, qx, sx, Constant(qc, name=f"{node.label}.shift"), sc)

    def _qadd(self, node: Node, qa: Value, sa: float, qb: Value, sb: float) -> bool:
        act = self.fusable_activation(node)
        out = act or node
        so = self.scale(out)
        lm, rm, shift = choose_add(sa, sb, so)
        lo, hi = self.int8_bounds(act, so)
        attrs = {
            "lhs_multiplier": lm,
            "rhs_multiplier": rm,
            "shift": shift,
            "out_min": lo,
            "out_max": hi,
        }
        self.qv[id(out)] = (Node("qadd", (qa, qb), attrs, name=node.name), so)
        if act is not None:
            self.fused.add(id(act))
        return True

    def _clip(self, node: Node) -> bool:
        # on int8 at the input's scale, the bounds rounded to it
        x = node.inputs[0]
        if id(x) not in self.qv:
            return False
        qx, s = self.qv[id(x)]
        lo, hi = self.int8_bounds(node, s)
        clip = Node("clip", (qx,), {"a_min": lo, "a_max": hi}, node.name)
        self.qv[id(node)] = (clip, s)
        return True

    def _minimum(self, node: Node) -> bool:
        return self._bound(node, "a_max")

    def _maximum(self, node: Node) -> bool:
        return self._bound(node, "a_min")

    def _bound(self, node: Node, key: str) -> bool:
        """``minimum`` / ``maximum`` of an int8 value and one scalar constant (a PReLU's
        ``min(x, 0)``): an int8 clip at the input's scale, the bound rounded to it."""
        a, b = node.inputs
        if isinstance(a, Constant):
            a, b = b, a
        if not isinstance(b, Constant) or id(a) not in self.qv or node.type.shape != a.type.shape:
            return False
        vals = np.asarray(b.value, np.float64).reshape(-1)
        if vals.size == 0 or not np.all(vals == vals[0]) or not math.isfinite(vals[0]):
            return False
        qx, s = self.qv[id(a)]
        bound = _int8_bound(float(vals[0]), s)
        attrs = {"a_min": INT8_MIN, "a_max": bound} if key == "a_max" else {
            "a_min": bound, "a_max": INT8_MAX}  # fmt: skip
        self.qv[id(node)] = (Node("clip", (qx,), attrs, node.name), s)
        return True

    def _multiply(self, node: Node) -> bool:
        # two activations of one shape, or an NCHW activation and a per-channel gate (a
        # squeeze-excitation's (N, C, 1, 1)): qmul, the full-size operand first
        a, b = node.inputs
        if isinstance(a, Constant) != isinstance(b, Constant):
            return self._multiply_constant(node)
        if not (self.is_activation(a) and self.is_activation(b)):
            return False
        if a.type.shape != b.type.shape and a.type.ndim == 4 and a.type.shape[2:] == (1, 1):
            a, b = b, a
        t = a.type
        if b.type.shape != t.shape and not (
            t.ndim == 4 and b.type.shape == (t.shape[0], t.shape[1], 1, 1)
        ):
            return False
        sa, sb, so = self.scale(a), self.scale(b), self.scale(node)
        try:
            m, shift = fixed_point(sa * sb / so, 30, "multiply")
        except QuantizeError:
            return False
        if m < 0:
            return False
        qa, _ = self.as_int8(a)
        qb, _ = self.as_int8(b)
        attrs = {"multiplier": m, "shift": shift, "out_min": INT8_MIN, "out_max": INT8_MAX}
        self.qv[id(node)] = (Node("qmul", (qa, qb), attrs, name=node.name), so)
        return True

    def _multiply_constant(self, node: Node) -> bool:
        """An NCHW or ``(N, C)`` activation times a constant of one value per channel (a
        PReLU's slopes, a scale): qmul with the constant as an int8 gate at its own scale
        (``max |value| / 127``), per channel for NCHW, of the tensor's shape for ``(N, C)``."""
        found = self._constant_operand(node, lambda t: gate_shape(t.shape))
        if found is None:
            return False
        x, qgate, sg = found
        sx, so = self.scale(x), self.scale(node)
        try:
            m, shift = fixed_point(sx * sg / so, 30, "multiply")
        except QuantizeError:
            return False
        qx, _ = self.as_int8(x)
        attrs = {"multiplier": m, "shift": shift, "out_min": INT8_MIN, "out_max": INT8_MAX}
        q = Node("qmul", (qx, Constant(qgate, name=f"{node.label}.gate")), attrs, name=node.name)
        self.qv[id(node)] = (q, so)
        return True

    def _matmul(self, node: Node) -> bool:
        """Two activations of rank 2 or more (a matmul by a constant that ``matmul_to_dense``
        did not take, or of a vector, stays float): int8 operands, int32 accumulation and
        one per-tensor requantization, repeated along axis 1."""
        a, b = node.inputs
        if not (self.is_activation(a) and self.is_activation(b)):
            return False
        if a.type.ndim < 2 or b.type.ndim < 2:
            return False
        qa, sa = self.as_int8(a)
        qb, sb = self.as_int8(b)
        act = self.fusable_activation(node)
        out = act or node
        sy = self.scale(out)
        acc = Node("matmul", (qa, qb), {}, node.name)
        params = choose_requant(np.full(node.type.shape[1], sa * sb / sy), mode=self._mode)
        self._requantize(acc, out, params, self.int8_bounds(act, sy), sy)
        if act is not None:
            self.fused.add(id(act))
        return True

    def _hard_sigmoid(self, node: Node) -> bool:
        return self._hard(node, float(node.attrs["alpha"]), float(node.attrs["beta"]))

    def _leaky_relu(self, node: Node) -> bool:
        """``qleaky_relu``: ``max(x, 0)`` and ``min(x, 0)`` of the int8 input, rescaled to the
        output by ``sx / so`` and ``alpha sx / so`` (:func:`choose_add`) and summed, rounded
        once; a slope outside ``(0, 1]`` or a ratio the multipliers cannot hold stays float."""
        x = node.inputs[0]
        alpha = float(node.attrs["alpha"])
        if not self.is_activation(x) or not 0.0 < alpha <= 1.0:
            return False
        sx, so = self.scale(x), self.scale(node)
        try:
            pos, neg, shift = choose_add(sx, alpha * sx, so)
        except QuantizeError:
            return False
        qx, _ = self.as_int8(x)
        attrs = {"pos_multiplier": pos, "neg_multiplier": neg, "shift": shift,
                 "out_min": INT8_MIN, "out_max": INT8_MAX}  # fmt: skip
        self.qv[id(node)] = (Node("qleaky_relu", (qx,), attrs, name=node.name), so)
        return True

    def _hard_swish(self, node: Node) -> bool:
        return self._hard(node, 1.0 / 6.0, 0.5)

    def _hard(self, node: Node, alpha: float, beta: float) -> bool:
        # the integer forms of compiler.quantize.hard; a scale ratio the ALU's immediates
        # cannot hold leaves the node in float
        x = node.inputs[0]
        if not self.is_activation(x):
            return False
        # a constant multiply and add after a hard swish (PP-LCNetV3's ``* a + b`` where no
        # convolution folds it, or the add that fold_affine leaves before a padded one) are
        # its multiplier's factor and its rounding shift's offset: one operator
        fused = self.affine_after(node) if node.op == "hard_swish" else None
        if fused is not None and self._integer_hard(node, alpha, beta, *fused):
            return True
        return self._integer_hard(node, alpha, beta, node, 1.0, 0.0)

    def _integer_hard(
        self, node: Node, alpha: float, beta: float, out: Node, times: float, plus: float
    ) -> bool:
        """``node`` as ``qhard_sigmoid`` / ``qhard_swish`` giving ``out`` (``node``, or the
        multiply by ``times`` and add of ``plus`` that read it) at ``out``'s scale; False where
        the immediates cannot hold its parameters."""
        x = node.inputs[0]
        sx, sy = self.scale(x), self.scale(out)
        try:
            if node.op == "hard_sigmoid":
                p = choose_hard_sigmoid(alpha, beta, sx, sy)
                attrs: dict[str, int] = {
                    "multiplier": p.multiplier,
                    "shift": p.shift,
                    "offset": p.offset,
                    "out_max": p.out_max,
                }
            else:
                w = choose_hard_swish(alpha, beta, sx, sy, plus, times)
                attrs = {
                    "gate_multiplier": w.gate.multiplier,
                    "gate_shift": w.gate.shift,
                    "gate_offset": w.gate.offset,
                    "multiplier": w.multiplier,
                    "shift": w.shift,
                    "out_min": w.out_min,
                    "out_max": w.out_max,
                    "offset": w.offset,
                }
        except QuantizeError:
            return False
        qx, _ = self.as_int8(x)
        self.qv[id(out)] = (Node(f"q{node.op}", (qx,), attrs, name=node.name), sy)
        step: Value = out
        while step is not node:  # the multiply and add it took
            assert isinstance(step, Node)
            self.fused.add(id(step))
            step = next(v for v in step.inputs if not isinstance(v, Constant))
        return True

    def _global_avg_pool2d(self, node: Node) -> bool:
        x = node.inputs[0]
        if node.attrs["layout"] != "NCHW" or not self.is_activation(x):
            return False
        qx, sx = self.as_int8(x)
        n, c, h, w = x.type.shape
        so = self.scale(node)
        if self.requant in SHIFT_MODES:
            k = max(0, math.ceil(math.log2(so * h * w / sx)))
            so = sx * 2.0**k / (h * w)
        total = Node("global_sum_pool2d", (qx,), name=f"{node.label}.sum")
        params = choose_requant(np.full(c, sx / (h * w * so)), mode=self._mode)
        self._requantize(total, node, params, (INT8_MIN, INT8_MAX), so)
        return True


# the int8 rules of the operators declared ``int8`` (compiler.registry's key "quantize"); the
# others by their declaration
for _op, _rule in (
    ("conv2d", _Realizer._conv2d),
    ("dense", _Realizer._dense),
    ("add", _Realizer._add),
    ("clip", _Realizer._clip),
    ("multiply", _Realizer._multiply),
    ("matmul", _Realizer._matmul),
    ("minimum", _Realizer._minimum),
    ("maximum", _Realizer._maximum),
    ("hard_sigmoid", _Realizer._hard_sigmoid),
    ("hard_swish", _Realizer._hard_swish),
    ("leaky_relu", _Realizer._leaky_relu),
    ("global_avg_pool2d", _Realizer._global_avg_pool2d),
    ("resize", _Realizer._resize),
    ("concat", _Realizer._concat),
):
    register("quantize", _op, _rule)
for _op in operators():
    _quant = declaration(_op).quant
    if _quant == "pass-through":
        register("quantize", _op, _Realizer._pass_through)
    elif _quant == "float":
        register_unsupported("quantize", _op, "no integer form: it stays float32")
    elif _quant == "integer":
        register_unsupported("quantize", _op, "already an operator of int8 graphs")


def share_concat_scales(graph: Graph, thresholds: Mapping[int, float]) -> dict[int, float]:
    """``thresholds`` with a ``concat``'s operands at the concat's own threshold where nothing
    else reads them, so that the int8 concat moves bytes alone. The threshold set is that of
    every value from the operand back through pass-through operators to the node that chooses
    its scale (a slice carries its input's scale; a relu its own where the operator before it
    fuses it, its input's where it stands alone), as long as each value has that one reader,
    or its own range is at most a factor two below the concat's (a YOLOv8 C2f block's halves,
    one of which the next convolution reads too): coarser by more would cost another reader
    precision, so such an operand keeps its scale and the concat rescales it. Concats are
    taken last to first, so that a concat of concats gives its scale to the inner ones'
    operands too.

    Example:
        >>> from compiler.graph.ir import TensorType, Var
        >>> x = Var("x", TensorType((1, 2, 4, 4), "float32", "NCHW"))
        >>> a, b = Node("relu", (x,), name="a"), Node("exp", (x,), name="b")
        >>> cat = Node("concat", (Node("strided_slice", (a,), {"begin": (0, 0, 0, 0),
        ...     "end": (1, 1, 4, 4), "strides": (1, 1, 1, 1)}, name="s"), b), {"axis": 1})
        >>> g = Graph.from_outputs([x], [cat])
        >>> t = share_concat_scales(g, {id(x): 1.0, id(a): 1.0, id(b): 3.0, id(cat): 3.0})
        >>> t[id(a)], t[id(b)], t[id(x)]  # x is read by b as well: it keeps its scale
        (3.0, 3.0, 1.0)
    """
    out = dict(thresholds)
    users = graph.users
    outputs = {id(v) for v in graph.outputs}

    def shared(v: Value, t: float) -> bool:
        if len(users.get(id(v), [])) == 1 and id(v) not in outputs:
            return True
        # read elsewhere too: at most one bit coarser for the other readers, never clipped
        own = out.get(id(v))
        return own is not None and own <= t <= 2.0 * own

    for node in reversed(graph.nodes):
        if node.op != "concat" or id(node) not in out:
            continue
        t = out[id(node)]
        for v in node.inputs:
            if isinstance(v, Constant) or not v.type.dtype.startswith("float"):
                continue
            while shared(v, t):
                out[id(v)] = t
                if not (isinstance(v, Node) and carries_scale(v)):
                    break
                v = v.inputs[0]
    return out


def integer_violations(graph: Graph) -> list[Node]:
    """Nodes of a quantized graph that compute on floats inside the integer region: every node
    other than ``quantize`` / ``dequantize`` whose output or an input is a float.

    Example:
        >>> from compiler.graph.ir import TensorType, Var
        >>> x = Var("x", TensorType((1, 4), "float32"))
        >>> [n.op for n in integer_violations(Graph.from_outputs([x], [Node("relu", (x,))]))]
        ['relu']
    """
    bad = []
    for node in graph.nodes:
        if node.op in EDGE_OPS:
            continue
        types = [node.type] + [v.type for v in node.inputs]
        if any(t.dtype.startswith("float") for t in types):
            bad.append(node)
    return bad


def activation_scales(graph: Graph) -> dict[str, float]:
    """``name -> scale`` of every ``quantize`` and ``dequantize`` of a quantized graph.

    Example:
        >>> from compiler.graph.ir import TensorType, Var
        >>> x = Var("x", TensorType((1, 4), "float32"))
        >>> q = Node("quantize", (x,), {"scale": 0.5}, name="x.quantize")
        >>> activation_scales(Graph.from_outputs([x], [q]))
        {'x.quantize': 0.5}
    """
    return {n.label: float(n.attrs["scale"]) for n in graph.nodes if n.op in EDGE_OPS}


__all__ = [
    "EDGE_OPS",
    "REQUANT_MODES",
    "SHIFT_MODES",
    "activation_scales",
    "tensor_weight_scale",
    "weight_scale_floor",
    "integer_violations",
    "prepare_graph",
    "quantize_graph",
    "quantize_pipeline",
    "carries_scale",
    "realize",
    "requantize_node",
    "share_concat_scales",
]
