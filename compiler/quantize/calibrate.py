"""Calibration: the clipping threshold of every activation, from sample inputs.

Every activation is quantized symmetrically per tensor: ``scale = threshold / 127``. The float
graph runs on the calibration feeds twice in the numpy reference executor: the first pass
records each value's largest magnitude, the second its :class:`AbsHistogram` (magnitudes in
``bins`` equal bins from 0 to that maximum). A calibrator turns a histogram into a threshold:

* :class:`MinMaxCalibrator`: the largest magnitude seen (no clipping);
* :class:`PercentileCalibrator`: the magnitude below which ``percentile`` % of the values lie
  (the upper edge of the bin where the cumulative count reaches it);
* :class:`EntropyCalibrator`: TensorRT's entropy calibration. For every candidate ``i`` of
  kept bins (from ``num_quantized_bins`` to ``bins``), the reference distribution ``P`` is the
  first ``i`` bins with the count of every later bin added to bin ``i - 1``; the candidate
  ``Q`` merges the first ``i`` bins (outliers excluded) into ``num_quantized_bins`` groups and
  spreads each group's count evenly over its non-empty bins; the threshold is the centre of the
  last kept bin of the candidate with the smallest ``KL(P || Q)``. One deviation: exact zeros
  are left out of the histogram it searches. Every symmetric quantizer represents 0 exactly,
  and after a relu half of the values or more are 0: kept in bin 0, that spike costs every
  candidate with more than one bin per quantized level a large divergence, and the search
  then settles on the smallest candidate (on the digits network: thresholds 5 to 12 times
  below the maximum, and 10% accuracy).

Example:
    >>> rng = np.random.default_rng(0)
    >>> h = AbsHistogram.of(rng.uniform(-1, 1, 100_000), bins=256)
    >>> round(MinMaxCalibrator().threshold(h), 3)
    1.0
    >>> round(PercentileCalibrator(99.0).threshold(h), 2)
    0.99
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from compiler.graph.ir import Graph, Node, Value
from compiler.graph.reference import evaluate
from compiler.quantize.requant import QuantizeError

#: Histogram bins of the entropy calibrator (TensorRT's value).
DEFAULT_BINS = 2048


@dataclass(frozen=True)
class AbsHistogram:
    """Counts of ``|x|`` in ``len(counts)`` equal bins over ``[0, absmax]``.

    ``zeros`` counts the values that are exactly 0 (they are also in ``counts[0]``).

    Example:
        >>> h = AbsHistogram.of(np.array([-1.0, 0.5, 0.25, 2.0, 0.0]), bins=4)
        >>> h.counts.tolist(), h.zeros, h.absmax, h.width
        ([2, 1, 1, 1], 1, 2.0, 0.5)
    """

    counts: np.ndarray
    absmax: float
    zeros: int = 0

    @property
    def width(self) -> float:
        return self.absmax / len(self.counts) if self.absmax > 0 else 0.0

    @staticmethod
    def of(
        values: np.ndarray, bins: int = DEFAULT_BINS, absmax: float | None = None
    ) -> AbsHistogram:
        """The histogram of ``values`` over ``[0, absmax]`` (default: their largest magnitude;
        larger magnitudes go to the last bin)."""
        mag = np.abs(np.asarray(values, np.float64)).reshape(-1)
        top = float(mag.max()) if absmax is None and mag.size else float(absmax or 0.0)
        zeros = int(np.count_nonzero(mag == 0))
        if top <= 0:
            counts = np.zeros(bins, np.int64)
            counts[0] = mag.size
            return AbsHistogram(counts, 0.0, zeros)
        idx = np.minimum((mag * (bins / top)).astype(np.int64), bins - 1)
        return AbsHistogram(np.bincount(idx, minlength=bins).astype(np.int64), top, zeros)

    def merge(self, other: AbsHistogram) -> AbsHistogram:
        """The sum of two histograms over the same range."""
        if other.absmax != self.absmax or len(other.counts) != len(self.counts):
            raise QuantizeError("histograms of different ranges or bin counts cannot be merged")
        return AbsHistogram(self.counts + other.counts, self.absmax, self.zeros + other.zeros)


class MinMaxCalibrator:
    """Threshold = the largest magnitude seen."""

    name = "minmax"

    def threshold(self, hist: AbsHistogram) -> float:
        return float(hist.absmax)


@dataclass(frozen=True)
class PercentileCalibrator:
    """Threshold = the ``percentile`` of the magnitudes (to one bin)."""

    percentile: float = 99.99
    name = "percentile"

    def __post_init__(self) -> None:
        if not 0 < self.percentile <= 100:
            raise QuantizeError(f"percentile must be in (0, 100], got {self.percentile}")

    def threshold(self, hist: AbsHistogram) -> float:
        total = int(hist.counts.sum())
        if total == 0 or hist.absmax == 0:
            return 0.0
        cum = np.cumsum(hist.counts)
        k = int(np.searchsorted(cum, total * self.percentile / 100.0))
        return min(float(hist.absmax), (k + 1) * hist.width)


@dataclass(frozen=True)
class EntropyCalibrator:
    """TensorRT's KL-divergence calibration (see the module docstring).

    Example:
        >>> rng = np.random.default_rng(0)
        >>> x = np.concatenate([rng.normal(0, 1, 200_000), [40.0]])  # one far outlier
        >>> 2.0 < EntropyCalibrator().threshold(AbsHistogram.of(x)) < 8.0
        True
    """

    num_quantized_bins: int = 128
    name = "kl"

    def threshold(self, hist: AbsHistogram) -> float:
        counts = hist.counts.astype(np.float64)
        counts[0] -= hist.zeros  # exact zeros quantize exactly (see the module docstring)
        nbins, nq = len(counts), self.num_quantized_bins
        if hist.absmax == 0 or counts.sum() == 0:
            return 0.0
        if nbins <= nq:
            return float(hist.absmax)
        tail = np.concatenate([np.cumsum(counts[::-1])[::-1], [0.0]])  # tail[i] = sum(c[i:])
        best_i, best_kl = nbins, np.inf
        for i in range(nq, nbins + 1):
            p = counts[:i].copy()
            p[i - 1] += tail[i]
            q = _expand(counts[:i], nq)
            kl = _kl(p, q)
            if kl < best_kl:
                best_i, best_kl = i, kl
        return (best_i - 0.5) * hist.width


def _expand(bins: np.ndarray, nq: int) -> np.ndarray:
    """Merge ``bins`` into ``nq`` groups (the last takes the remainder), then spread each
    group's count evenly over its non-empty bins."""
    n = len(bins)
    per = n // nq
    group = np.minimum(np.arange(n) // per, nq - 1)
    nonzero = bins > 0
    sums = np.bincount(group, weights=bins, minlength=nq)
    counts = np.bincount(group, weights=nonzero, minlength=nq)
    share = np.divide(sums, counts, out=np.zeros(nq), where=counts > 0)
    return np.where(nonzero, share[group], 0.0)


def _kl(p: np.ndarray, q: np.ndarray) -> float:
    ps, qs = p.sum(), q.sum()
    if ps == 0 or qs == 0:
        return np.inf
    p = p / ps
    q = q / qs
    mask = p > 0
    # a bin with reference mass the candidate leaves empty (only the outlier bin can be one)
    q = np.where(mask & (q == 0), 1e-12, q)
    return float(np.sum(p[mask] * np.log(p[mask] / q[mask])))


Calibrator = MinMaxCalibrator | PercentileCalibrator | EntropyCalibrator

CALIBRATORS = ("kl", "minmax", "percentile")


def get_calibrator(name: str, **options: Any) -> Calibrator:
    """The calibrator called ``name`` (``kl``, ``minmax`` or ``percentile``).

    Example:
        >>> get_calibrator("percentile", percentile=99.9)
        PercentileCalibrator(percentile=99.9)
    """
    if name == "minmax":
        return MinMaxCalibrator()
    if name == "percentile":
        return PercentileCalibrator(**options)
    if name == "kl":
        return EntropyCalibrator(**options)
    raise QuantizeError(f"unknown calibrator {name!r}; known: {', '.join(CALIBRATORS)}")


def _as_batches(feeds: Any) -> list[Mapping[str, Any] | Sequence[Any]]:
    if isinstance(feeds, Mapping):
        return [feeds]
    batches = list(feeds)
    if not batches:
        raise QuantizeError("calibration needs at least one batch of feeds")
    return batches


def observed_values(graph: Graph) -> list[Value]:
    """The values calibration measures: the graph's float inputs and every float node."""
    vals: list[Value] = [v for v in graph.inputs if v.type.dtype.startswith("float")]
    vals += [n for n in graph.nodes if n.type.dtype.startswith("float")]
    return vals


def collect_histograms(
    graph: Graph, feeds: Iterable[Any] | Mapping[str, Any], bins: int = DEFAULT_BINS
) -> dict[int, AbsHistogram]:
    """``id(value) -> AbsHistogram`` for :func:`observed_values`, over every calibration batch
    (a feed mapping, or an iterable of them)."""
    batches = _as_batches(feeds)
    values = observed_values(graph)
    probe = Graph(graph.inputs, graph.nodes, tuple(values), graph.name)
    absmax = np.zeros(len(values))
    for feed in batches:
        outs = evaluate(probe, feed)
        absmax = np.maximum(absmax, [float(np.abs(o).max()) if o.size else 0.0 for o in outs])
    hists: dict[int, AbsHistogram] = {}
    for feed in batches:
        outs = evaluate(probe, feed)
        for v, top, o in zip(values, absmax, outs, strict=True):
            h = AbsHistogram.of(o, bins=bins, absmax=float(top))
            hists[id(v)] = hists[id(v)].merge(h) if id(v) in hists else h
    return hists


def calibrate(
    graph: Graph,
    feeds: Iterable[Any] | Mapping[str, Any],
    calibrator: str | Calibrator = "kl",
    *,
    bins: int = DEFAULT_BINS,
) -> dict[int, float]:
    """``id(value) -> threshold`` of every float value of ``graph`` (see
    :func:`observed_values`), from the calibration ``feeds``.

    Example:
        >>> from compiler.graph.ir import TensorType, Var
        >>> x = Var("x", TensorType((1, 4), "float32"))
        >>> g = Graph.from_outputs([x], [Node("relu", (x,))])
        >>> th = calibrate(g, {"x": np.array([[-3, 1, 2, 0.5]], np.float32)}, "minmax")
        >>> th[id(x)], th[id(g.nodes[0])]
        (3.0, 2.0)
    """
    cal = get_calibrator(calibrator) if isinstance(calibrator, str) else calibrator
    hists = collect_histograms(graph, feeds, bins)
    return {k: cal.threshold(h) for k, h in hists.items()}


def node_label(v: Value) -> str:
    """A value's name for messages."""
    return v.label if isinstance(v, Node) else (v.name or "(constant)")


__all__ = [
    "CALIBRATORS",
    "AbsHistogram",
    "Calibrator",
    "EntropyCalibrator",
    "MinMaxCalibrator",
    "PercentileCalibrator",
    "calibrate",
    "collect_histograms",
    "get_calibrator",
    "observed_values",
]
