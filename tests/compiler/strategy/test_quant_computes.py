"""The CPU computes of the quantized graphs' integer operators (``requantize``, ``qadd``), bit for
bit against ``compiler.quantize.requant`` on random and extreme int32 / int8 inputs."""

import numpy as np
import pytest

import compiler.quantize  # noqa: F401  (registers the quantized operators)
from compiler import te
from compiler.build import build
from compiler.quantize.requant import add_int, requantize_int
from compiler.strategy import StrategyError, compute, schedule

INT32 = np.iinfo(np.int32)


def _requantize_kernel(shape, axis, out_min, out_max):
    c = shape[axis]
    x = te.placeholder(shape, "int32", name="x")
    params = [te.placeholder((c,), "int32", name=n) for n in ("m", "s1", "s2")]
    attrs = {"axis": axis, "out_min": out_min, "out_max": out_max}
    y = compute("requantize", [x, *params], attrs, "rq")
    return build(schedule([y], None), [x, *params, y], target="cpu")


def _extreme_accumulators(rng, shape, axis):
    """Random int32 where every channel (index of ``axis``) also holds every int32 edge: the
    values near 2**31 where the first rounding addition wraps, -2**31, 0, +-1, values around
    the 16-bit clamp; and values small enough not to saturate, so the rounding shows."""
    edges = [INT32.max, INT32.max - 1, INT32.max - (1 << 14), INT32.max - (1 << 29), 1 << 30,
             INT32.min, INT32.min + 1, 0, 1, -1, 32767, 32768, -32768, -32769,
             (1 << 21) - 1, -(1 << 21)]  # fmt: skip
    moved = list(shape)
    moved.append(moved.pop(axis))
    rows = rng.integers(INT32.min, INT32.max, moved, endpoint=True).reshape(-1, shape[axis])
    assert rows.shape[0] >= 2 * len(edges)
    rows[: len(edges)] = np.array(edges)[:, None]
    rows[len(edges) :: 2] = rng.integers(-(1 << 20), 1 << 20, rows[len(edges) :: 2].shape)
    return np.moveaxis(rows.reshape(moved), -1, axis).astype(np.int32)


@pytest.mark.parametrize(
    ("shape", "axis"), [((2, 32, 4, 6), 1), ((40, 22), 1), ((22, 40), 0), ((1, 3, 12, 32), 3)]
)
def test_requantize_equals_the_reference_over_every_shift(shape, axis):
    rng = np.random.default_rng(11)
    c = shape[axis]
    # every pre-shift 0..31 and every post-shift 0..21 along the channels, s1 = 0 included
    s1 = (np.arange(c) % 32).astype(np.int32)
    s2 = ((np.arange(c) * 7) % 22).astype(np.int32)
    m = rng.integers(0, 1 << 15, c).astype(np.int32)
    m[:3] = [0, 1, (1 << 15) - 1]
    x = _extreme_accumulators(rng, shape, axis)
    for out_min, out_max in ((-128, 127), (0, 127), (-5, 9)):
        f = _requantize_kernel(shape, axis, out_min, out_max)
        got = f(x, m, s1, s2)
        want = requantize_int(x, m, s1, s2, out_min, out_max, axis)
        assert got.dtype == np.int8
        np.testing.assert_array_equal(got, want)


def test_requantize_wraps_the_first_rounding_addition_like_the_accumulator():
    # with s1 = 5 an accumulator within 2**4 of 2**31 wraps to the negative side
    x = np.array([[INT32.max, INT32.max - 15, INT32.max - 16, INT32.max - 17]], np.int32)
    c = np.ones(1, np.int32)
    f = _requantize_kernel((1, 4), 0, -128, 127)
    got = f(x, c, np.full(1, 5, np.int32), np.zeros(1, np.int32))
    want = requantize_int(x, c, np.full(1, 5), np.zeros(1), -128, 127, 0)
    np.testing.assert_array_equal(got, want)
    assert got.tolist() == [[-128, -128, 127, 127]]


@pytest.mark.parametrize("shift", [0, 1, 7, 15, 16, 22, 30])
def test_qadd_equals_the_reference(shift):
    rng = np.random.default_rng(12 + shift)
    a = rng.integers(-128, 128, (3, 7, 9), dtype=np.int64).astype(np.int8)
    b = rng.integers(-128, 128, (3, 7, 9), dtype=np.int64).astype(np.int8)
    a[0, 0, :4], b[0, 0, :4] = [-128, 127, -128, 127], [-128, 127, 127, -128]
    for lhs, rhs, lo, hi in ((32767, 32767, -128, 127), (16384, 9000, 0, 127), (0, 1, -3, 3)):
        attrs = {"lhs_multiplier": lhs, "rhs_multiplier": rhs, "shift": shift,
                 "out_min": lo, "out_max": hi}  # fmt: skip
        pa, pb = (
            te.placeholder(a.shape, "int8", name="a"),
            te.placeholder(b.shape, "int8", name="b"),
        )
        y = compute("qadd", [pa, pb], attrs, "add")
        got = build(schedule([y], None), [pa, pb, y], target="cpu")(a, b)
        np.testing.assert_array_equal(got, add_int(a, b, lhs, rhs, shift, lo, hi))


@pytest.mark.parametrize(
    ("op", "shapes", "dtypes", "attrs", "match"),
    [
        ("requantize", [(2, 4), (4,), (4,), (4,)], ["int8"] + ["int32"] * 3, {},
         "requantize node 'n'.*int32 input"),
        ("requantize", [(2, 4), (3,), (4,), (4,)], ["int32"] * 4, {},
         "multiplier m1 must be int32 of shape \\(4,\\)"),
        ("requantize", [(2, 4), (4,), (4,), (4,)], ["int32"] * 4, {"axis": 2},
         "axis=2 must be an int in \\[0, 1\\]"),
        ("requantize", [(2, 4), (4,), (4,), (4,)], ["int32"] * 4,
         {"out_min": 5, "out_max": 4}, "out_min 5 is greater than out_max 4"),
        ("qadd", [(2, 4), (2, 4)], ["int8", "int8"],
         {"lhs_multiplier": 1, "rhs_multiplier": 1, "shift": 31}, "shift=31"),
        ("qadd", [(2, 4), (2, 3)], ["int8", "int8"],
         {"lhs_multiplier": 1, "rhs_multiplier": 1, "shift": 1}, "shapes differ"),
        ("qadd", [(2, 4), (2, 4)], ["int8", "int8"], {"rhs_multiplier": 1, "shift": 1},
         "missing attribute 'lhs_multiplier'"),
    ],
)  # fmt: skip
def test_quantized_computes_name_the_node_and_what_is_wrong(op, shapes, dtypes, attrs, match):
    pairs = enumerate(zip(shapes, dtypes, strict=True))
    inputs = [te.placeholder(s, d, name=f"m{k}") for k, (s, d) in pairs]
    base = {"out_min": -128, "out_max": 127}
    base = {"axis": 1, **base} if op == "requantize" else base
    with pytest.raises(StrategyError, match=match):
        compute(op, inputs, {**base, **attrs}, "n")
