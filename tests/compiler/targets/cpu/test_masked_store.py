"""Regression: a ragged vectorized tail must not write its masked-off lanes.

Found by the schedule-equivalence property test: a requantize stage (int32 → int8 with clip)
vectorized by 4 over a row of 5 left a tail store with one active lane, which LLVM 20's x86
backend turned into a 4-byte store, clobbering the next row's outputs.
"""

import numpy as np

from compiler import te, topi
from compiler.build import build
from compiler.schedule import create_schedule


def test_ragged_int8_tail_keeps_neighbours():
    X = te.placeholder((1, 2, 7, 7), "int8", name="X")
    W = te.placeholder((3, 2, 3, 3), "int8", name="W")
    out = topi.requantize(topi.conv2d_nchw(X, W, 1, 0, name="conv"), shift=2, name="q")
    s = create_schedule(out)
    s["q"].split("i3", factor=4)
    s["q"].reorder("i0", "i2", "i1", "i3.outer", "i3.inner")
    s["q"].vectorize("i3.inner")
    rng = np.random.default_rng(71)
    x = rng.integers(-128, 128, size=X.shape, dtype=np.int8)
    w = rng.integers(-128, 128, size=W.shape, dtype=np.int8)
    ref = build(create_schedule(out), [X, W, out])(x, w)
    np.testing.assert_array_equal(build(s, [X, W, out])(x, w), ref)
