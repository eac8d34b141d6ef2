"""The reference convolution's float64 path for integers gives ``einsum``'s results exactly, and
its float path the float64 convolution to float32 rounding."""

from __future__ import annotations

import numpy as np
import pytest

from compiler.graph import reference as R

CASES = [
    ((1, 3, 20, 20), (8, 3, 7, 7), (2, 2), (3, 3, 3, 3), (1, 1), 1),
    ((2, 8, 9, 11), (8, 2, 3, 3), (1, 2), (1, 0, 2, 1), (2, 1), 4),
    ((1, 16, 7, 7), (32, 16, 1, 1), (2, 2), (0, 0, 0, 0), (1, 1), 1),
    ((1, 64, 9, 9), (64, 64, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32"])
def test_integer_convolution_matches_einsum(case, dtype, monkeypatch):
    xs, ws, strides, padding, dilation, groups = case
    rng = np.random.default_rng(0)
    lo = 0 if dtype == "uint8" else -100
    x = rng.integers(lo, 100, xs).astype(dtype)
    w = rng.integers(lo, 100, ws).astype(dtype)
    fast = R.conv2d_nchw(x, w, strides, padding, dilation, groups)
    assert R._exact_in_float64(x, w, np.dtype(fast.dtype), ws[1] * ws[2] * ws[3])
    monkeypatch.setattr(R, "_exact_in_float64", lambda *a: False)
    slow = R.conv2d_nchw(x, w, strides, padding, dilation, groups)
    assert fast.dtype == slow.dtype and np.array_equal(fast, slow)


def test_sums_that_could_wrap_stay_on_einsum():
    x = np.full((1, 64, 4, 4), 2**20, np.int32)
    w = np.full((8, 64, 3, 3), 2**10, np.int32)
    assert not R._exact_in_float64(x, w, np.dtype("int32"), 64 * 9)
    assert not R._exact_in_float64(x.astype(np.float32), w, np.dtype("float32"), 64 * 9)
    assert R._exact_in_float64(x, w, np.dtype("int64"), 64 * 9)


@pytest.mark.parametrize("case", CASES)
def test_float_convolution_matches_float64(case):
    """A float convolution runs as one matrix product per tap (einsum for a depthwise one):
    within float32 rounding of the im2col product in float64 (``_conv2d_float64``, other
    code), grouped, strided, dilated and padded, and depthwise."""
    xs, ws, strides, padding, dilation, groups = case
    rng = np.random.default_rng(1)
    x = rng.standard_normal(xs).astype(np.float32)
    dw = rng.standard_normal((xs[1], 1, 3, 3)).astype(np.float32)
    for w, args in (
        (rng.standard_normal(ws).astype(np.float32), (strides, padding, dilation, groups)),
        (dw, ((1, 1), (1, 1, 1, 1), (1, 1), xs[1])),
    ):
        got = R.conv2d_nchw(x, w, *args)
        (sh, sw), pad, (dh, dwl), _ = args
        oh = (xs[2] + pad[0] + pad[2] - dh * (w.shape[2] - 1) - 1) // sh + 1
        ow = (xs[3] + pad[1] + pad[3] - dwl * (w.shape[3] - 1) - 1) // sw + 1
        want = R._conv2d_float64(x, w, *args[:3], args[3], (oh, ow))
        assert got.dtype == np.float32 and got.shape == want.shape
        assert np.abs(got - want).max() <= 1e-6 * np.abs(want).max()
