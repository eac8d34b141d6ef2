"""Calibration: the clipping threshold of every activation, from sample inputs.

Every activation is quantized symmetrically per tensor: ``scale = threshold / 127``. The float
graph runs on the calibration feeds in the numpy reference executor; a first pass over the
feeds records each value's largest magnitude, a second its :class:`AbsHistogram` (magnitudes in
``bins`` equal bins from 0 to that maximum). A calibrator turns a histogram into a threshold:

* :class:`MinMaxCalibrator`: the largest magnitude seen (no clipping);
* :class:`PercentileCalibrator`: the magnitude below which ``percentile`` % of the values lie
  (the upper edge of the bin where the cumulative count reaches it);
* :class:`EntropyCalibrator`: TensorRT's entropy calibration. For every candidate ``i`` of
  kept bins (from ``num_quantized_bins`` to ``bins``), the reference distribution ``P`` is the
  first ``i`` bins with the count of every later bin added to bin ``i - 1``; the candidate
  ``Q`` merges the first ``i`` bins (outliers excluded) into ``num_quantized_bins`` groups and
  spreads each group's count evenly over its non-empty bins; the threshold is the centre of the
  last kept bin of the candidate with the smallest ``KL(P || Q)``. One deviation: point
  masses (*atoms*: one exact value taken by at least ``ATOM_FRACTION`` of a tensor's elements,
  such as the zeros after a relu or, on images with a constant background, the value a
  convolution gives on every background window) keep their count in their own bin of ``Q``
  instead of being spread over their group. Quantization maps an atom to one level, an atom
  again, so spreading it misstates what quantization loses; and because an atom holds a large
  share of the mass, the spread costs every candidate with several bins per level a divergence
  that drives the search to the smallest candidate (on the digits network, thresholds 5 times
  below the maximum, and 10% top-1 instead of 98%).
* :class:`MseCalibrator`: the threshold whose int8 quantization has the least mean squared
  error over the histogram: for every candidate threshold ``T`` (a bin's upper edge, from
  ``bins / num_levels`` bins up), every bin's centre is rounded to the grid of step
  ``T / 127`` and clipped at ``T``, and the squared errors are summed over the counts (the
  ``mse`` calibrator of NVIDIA's TensorRT quantization toolkit and of OpenVINO).

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
#: Share of a tensor's elements one exact value must hold to be an atom.
ATOM_FRACTION = 0.01
#: Size of the sample in which atoms are looked for.
ATOM_SAMPLE = 100_000


@dataclass(frozen=True)
class AbsHistogram:
    """Counts of ``|x|`` in ``len(counts)`` equal bins over ``[0, absmax]``.

    ``atoms`` counts, per bin, the elements equal to an atom (see the module docstring); they
    are also in ``counts``.

    Example:
        >>> h = AbsHistogram.of(np.array([-1.0, 0.5, 0.25, 2.0, 0.0, 0.0]), bins=4)
        >>> h.counts.tolist(), h.atoms.tolist(), h.absmax, h.width
        ([3, 1, 1, 1], [2, 0, 0, 0], 2.0, 0.5)
    """

    counts: np.ndarray
    absmax: float
    atoms: np.ndarray

    @property
    def width(self) -> float:
        return self.absmax / len(self.counts) if self.absmax > 0 else 0.0

    @staticmethod
    def of(
        values: np.ndarray, bins: int = DEFAULT_BINS, absmax: float | None = None
    ) -> AbsHistogram:
        """The histogram of ``values`` over ``[0, absmax]`` (default: their largest magnitude;
        larger magnitudes go to the last bin). NaN and infinite values (a float operator's
        result outside its domain, such as a fractional power of a negative number) carry no
        range and are left out."""
        mag = np.abs(np.asarray(values, np.float64)).reshape(-1)
        mag = mag[np.isfinite(mag)]
        top = float(mag.max()) if absmax is None and mag.size else float(absmax or 0.0)
        if top <= 0:
            counts = np.zeros(bins, np.int64)
            counts[0] = mag.size
            return AbsHistogram(counts, 0.0, counts.copy())
        scale = bins / top
        idx = np.minimum((mag * scale).astype(np.int64), bins - 1)
        counts = np.bincount(idx, minlength=bins).astype(np.int64)
        atoms = np.zeros(bins, np.int64)
        for value, n in _atoms(mag):
            atoms[min(int(value * scale), bins - 1)] += n
        return AbsHistogram(counts, top, atoms)

    def merge(self, other: AbsHistogram) -> AbsHistogram:
        """The sum of two histograms over the same range."""
        if other.absmax != self.absmax or len(other.counts) != len(self.counts):
            raise QuantizeError("histograms of different ranges or bin counts cannot be merged")
        return AbsHistogram(self.counts + other.counts, self.absmax, self.atoms + other.atoms)


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
        atoms = hist.atoms.astype(np.float64)
        spread = counts - atoms  # atoms stay where they are in Q (see the module docstring)
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
            q = _expand(spread[:i], nq) + atoms[:i]
            kl = _kl(p, q)
            if kl < best_kl:
                best_i, best_kl = i, kl
        return (best_i - 0.5) * hist.width


def _atoms(mag: np.ndarray) -> list[tuple[float, int]]:
    """``(value, count)`` of every value that at least ``ATOM_FRACTION`` of ``mag`` equals.
    Candidates come from an evenly strided sample (an atom that frequent cannot miss it)."""
    if mag.size == 0:
        return []
    step = max(1, mag.size // ATOM_SAMPLE)
    sample = mag[::step]
    values, counts = np.unique(sample, return_counts=True)
    found = []
    for v in values[counts >= max(2, ATOM_FRACTION * len(sample) / 2)]:
        n = int(np.count_nonzero(mag == v))
        if n >= ATOM_FRACTION * mag.size:
            found.append((float(v), n))
    return found


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


@dataclass(frozen=True)
class MseCalibrator:
    """The threshold of least squared quantization error (see the module docstring).

    Example:
        >>> x = np.random.default_rng(0).laplace(0, 1, 200_000)  # largest magnitude 15.3
        >>> round(MseCalibrator().threshold(AbsHistogram.of(x)), 1)
        10.0
    """

    #: the positive levels of the int8 grid (symmetric: -127..127)
    num_levels: int = 127
    name = "mse"

    def threshold(self, hist: AbsHistogram) -> float:
        counts = hist.counts.astype(np.float64)
        nbins = len(counts)
        if hist.absmax == 0 or counts.sum() == 0:
            return 0.0
        used = np.flatnonzero(counts)
        centre = (used + 0.5) * hist.width
        weight = counts[used]
        # candidates: every bin's upper edge from one bin per level up (below it the grid is
        # finer than the histogram, which can no longer tell the errors apart)
        first = max(1, min(nbins, nbins // self.num_levels))
        best_t, best_err = float(hist.absmax), np.inf
        for lo in range(first, nbins + 1, 256):  # 256 candidates at a time
            t = np.arange(lo, min(lo + 256, nbins + 1), dtype=np.float64)[:, None] * hist.width
            step = t / self.num_levels
            q = np.minimum(np.round(centre / step), self.num_levels) * step
            err = ((q - centre) ** 2) @ weight
            k = int(np.argmin(err))
            if err[k] < best_err:
                best_t, best_err = float(t[k, 0]), float(err[k])
        return best_t


Calibrator = MinMaxCalibrator | PercentileCalibrator | EntropyCalibrator | MseCalibrator

CALIBRATORS = ("kl", "minmax", "mse", "percentile")


def get_calibrator(name: str, **options: Any) -> Calibrator:
    """The calibrator called ``name`` (``kl``, ``minmax``, ``mse`` or ``percentile``).

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
    if name == "mse":
        return MseCalibrator(**options)
    raise QuantizeError(f"unknown calibrator {name!r}; known: {', '.join(CALIBRATORS)}")


def _as_batches(feeds: Any) -> list[Mapping[str, Any] | Sequence[Any]]:
    if isinstance(feeds, Mapping):
        return [feeds]
    batches = list(feeds)
    if not batches:
        raise QuantizeError("calibration needs at least one batch of feeds")
    return batches


#: bytes of calibration outputs kept between the two passes of :func:`collect_histograms`
KEPT_OUTPUT_BYTES = 512 * 2**20


def _finite_absmax(values: np.ndarray) -> float:
    """The largest finite magnitude of ``values`` (0 when there is none; see
    :meth:`AbsHistogram.of`)."""
    mag = np.abs(np.asarray(values, np.float64))
    mag = mag[np.isfinite(mag)]
    return float(mag.max()) if mag.size else 0.0


def observed_values(graph: Graph) -> list[Value]:
    """The values calibration measures: the graph's float inputs and every float node."""
    vals: list[Value] = [v for v in graph.inputs if v.type.dtype.startswith("float")]
    vals += [n for n in graph.nodes if n.type.dtype.startswith("float")]
    return vals


def collect_histograms(
    graph: Graph,
    feeds: Iterable[Any] | Mapping[str, Any],
    bins: int = DEFAULT_BINS,
    outputs: list[dict[int, np.ndarray]] | None = None,
) -> dict[int, AbsHistogram]:
    """``id(value) -> AbsHistogram`` for :func:`observed_values`, over every calibration batch
    (a feed mapping, or an iterable of them).

    The histograms' range is the largest magnitude over all batches, so every batch is seen
    twice; a batch's outputs are kept from the first pass to the second while they fit in
    :data:`KEPT_OUTPUT_BYTES` (the reference executor is the cost of calibration), and run
    again otherwise. ``outputs``, when given, receives per batch the kept outputs by
    ``id(value)`` (empty for a batch that did not fit), for a later pass over the same values.
    """
    batches = _as_batches(feeds)
    values = observed_values(graph)
    probe = Graph(graph.inputs, graph.nodes, tuple(values), graph.name)
    absmax = np.zeros(len(values))
    kept: list[list[np.ndarray] | None] = []
    room = KEPT_OUTPUT_BYTES
    for k, feed in enumerate(batches):
        outs = evaluate(probe, feed)
        for v, o in zip(values, outs, strict=True):
            # the data itself must be finite; a node may produce NaN or Inf on its own (a
            # fractional power of a negative number, masked by a Where later) and is measured
            # on its finite values
            if v in graph.inputs and o.size and not np.isfinite(o).all():
                raise QuantizeError(
                    f"calibration batch {k}: input {node_label(v)!r} has non-finite values "
                    "(NaN or Inf): int8 scales need finite data"
                )
        absmax = np.maximum(absmax, [_finite_absmax(o) for o in outs])
        size = sum(o.nbytes for o in outs)
        if size <= room:
            kept.append(outs)
            room -= size
        else:
            kept.append(None)
    hists: dict[int, AbsHistogram] = {}
    if outputs is not None:
        outputs.extend(
            {} if outs is None else dict(zip(map(id, values), outs, strict=True)) for outs in kept
        )
    for feed, first in zip(batches, kept, strict=True):
        outs = first if first is not None else evaluate(probe, feed)
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
    outputs: list[dict[int, np.ndarray]] | None = None,
) -> dict[int, float]:
    """``id(value) -> threshold`` of every float value of ``graph`` (see
    :func:`observed_values`), from the calibration ``feeds``. ``outputs``: see
    :func:`collect_histograms`.

    Example:
        >>> from compiler.graph.ir import TensorType, Var
        >>> x = Var("x", TensorType((1, 4), "float32"))
        >>> g = Graph.from_outputs([x], [Node("relu", (x,))])
        >>> th = calibrate(g, {"x": np.array([[-3, 1, 2, 0.5]], np.float32)}, "minmax")
        >>> th[id(x)], th[id(g.nodes[0])]
        (3.0, 2.0)
    """
    cal = get_calibrator(calibrator) if isinstance(calibrator, str) else calibrator
    hists = collect_histograms(graph, feeds, bins, outputs)
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
    "MseCalibrator",
    "PercentileCalibrator",
    "calibrate",
    "collect_histograms",
    "get_calibrator",
    "observed_values",
]
