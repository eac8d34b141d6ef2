"""Calibrators on distributions whose answer is known."""

from __future__ import annotations

import numpy as np
import pytest

from compiler.graph import Graph, Node, TensorType, Var
from compiler.quantize import (
    AbsHistogram,
    EntropyCalibrator,
    MinMaxCalibrator,
    MseCalibrator,
    PercentileCalibrator,
    QuantizeError,
    calibrate,
    get_calibrator,
)

RNG = np.random.default_rng(1234)
NORMAL = RNG.normal(size=400_000)
UNIFORM = RNG.uniform(-2.0, 2.0, size=400_000)
LAPLACE = RNG.laplace(size=400_000)


def test_minmax_is_the_largest_magnitude():
    x = np.array([-7.5, 3.0, 0.25, 6.0])
    assert MinMaxCalibrator().threshold(AbsHistogram.of(x)) == 7.5


@pytest.mark.parametrize("pct", [90.0, 99.0, 99.9])
def test_percentile_matches_the_exact_quantile_to_one_bin(pct):
    h = AbsHistogram.of(NORMAL)
    exact = np.percentile(np.abs(NORMAL), pct)
    assert abs(PercentileCalibrator(pct).threshold(h) - exact) <= 2 * h.width


def test_percentile_on_a_uniform_distribution():
    h = AbsHistogram.of(UNIFORM)
    assert PercentileCalibrator(50.0).threshold(h) == pytest.approx(1.0, abs=2 * h.width)


def test_entropy_keeps_a_uniform_range_whole():
    # nothing to gain from clipping a flat distribution: KL keeps (nearly) all of it
    h = AbsHistogram.of(UNIFORM)
    assert EntropyCalibrator().threshold(h) >= 0.97 * h.absmax


@pytest.mark.parametrize("data", [NORMAL, LAPLACE], ids=["normal", "laplace"])
def test_entropy_clips_the_tails_of_peaked_distributions(data):
    h = AbsHistogram.of(data)
    th = EntropyCalibrator().threshold(h)
    sigma = float(np.std(data))
    assert 2.5 * sigma < th < h.absmax


def test_entropy_ignores_a_far_outlier():
    x = np.concatenate([NORMAL, [60.0]])
    th = EntropyCalibrator().threshold(AbsHistogram.of(x))
    assert 2.5 < th < 8.0
    assert MinMaxCalibrator().threshold(AbsHistogram.of(x)) == 60.0


@pytest.mark.parametrize("atom", [0.0, 0.3, 1.1])
def test_entropy_is_not_drawn_to_point_masses(atom):
    # a relu's zeros, or the value a convolution gives on a constant background: one exact
    # value holding a large share of the elements must not pull the threshold down
    x = np.concatenate([NORMAL, np.full(len(NORMAL) // 2, atom)])
    h = AbsHistogram.of(x)
    assert h.atoms.sum() == len(NORMAL) // 2 + np.count_nonzero(np.abs(NORMAL) == atom)
    assert 2.5 < EntropyCalibrator().threshold(h) < h.absmax


def test_atoms_are_only_frequent_exact_values():
    assert AbsHistogram.of(NORMAL).atoms.sum() == 0
    rare = np.concatenate([NORMAL, np.full(100, 0.5)])  # 0.025 %: not an atom
    assert AbsHistogram.of(rare).atoms.sum() == 0


def _int8_mse(x: np.ndarray, threshold: float) -> float:
    """The mean squared error of quantizing ``x`` to int8 at ``threshold``, element by element."""
    step = threshold / 127
    return float(np.mean((np.clip(np.round(x / step), -127, 127) * step - x) ** 2))


@pytest.mark.parametrize(
    "data",
    [NORMAL, UNIFORM, LAPLACE, np.maximum(NORMAL, 0.0), np.concatenate([NORMAL, [60.0]])],
    ids=["normal", "uniform", "laplace", "relu", "outlier"],
)
def test_mse_finds_the_threshold_of_least_squared_error(data):
    # against the error of every element quantized, over a fine sweep of thresholds
    h = AbsHistogram.of(data)
    th = MseCalibrator().threshold(h)
    sweep = np.linspace(h.absmax / 100, h.absmax, 500)
    best = min(_int8_mse(data, t) for t in sweep)
    assert _int8_mse(data, th) <= 1.01 * best
    assert 0 < th <= h.absmax


def test_mse_clips_peaked_tails_and_keeps_a_uniform_range():
    assert MseCalibrator().threshold(AbsHistogram.of(UNIFORM)) >= 0.99 * 2.0
    h = AbsHistogram.of(LAPLACE)
    assert 5.0 < MseCalibrator().threshold(h) < 0.8 * h.absmax


def test_histograms_merge_over_batches():
    a, b = NORMAL[:1000], NORMAL[1000:3000]
    top = float(np.abs(NORMAL[:3000]).max())
    merged = AbsHistogram.of(a, absmax=top).merge(AbsHistogram.of(b, absmax=top))
    whole = AbsHistogram.of(NORMAL[:3000])
    assert merged.counts.tolist() == whole.counts.tolist()
    with pytest.raises(QuantizeError, match="different ranges"):
        AbsHistogram.of(a).merge(AbsHistogram.of(b))


def test_all_zero_tensor_gives_zero_threshold():
    h = AbsHistogram.of(np.zeros(100))
    for cal in (MinMaxCalibrator(), PercentileCalibrator(), EntropyCalibrator(), MseCalibrator()):
        assert cal.threshold(h) == 0.0


def test_calibrate_measures_every_float_value_over_batches():
    x = Var("x", TensorType((2, 3), "float32"))
    r = Node("relu", (x,), name="r")
    g = Graph.from_outputs([x], [Node("exp", (r,), name="e")])
    feeds = [
        {"x": np.array([[-4, 1, 2], [0, 0, 1]], np.float32)},
        {"x": np.array([[3, -1, 0], [0, 0, 0]], np.float32)},
    ]
    th = calibrate(g, feeds, "minmax")
    assert th[id(x)] == 4.0
    assert th[id(r)] == 3.0
    assert th[id(g.nodes[1])] == pytest.approx(np.exp(3.0))


def test_unknown_calibrators_and_bad_options_are_refused():
    with pytest.raises(QuantizeError, match="unknown calibrator 'max'.*known: kl, minmax, mse"):
        get_calibrator("max")
    with pytest.raises(QuantizeError, match="percentile must be in"):
        PercentileCalibrator(0.0)
    x = Var("x", TensorType((1,), "float32"))
    g = Graph.from_outputs([x], [Node("relu", (x,))])
    with pytest.raises(QuantizeError, match="at least one batch"):
        calibrate(g, [], "minmax")
