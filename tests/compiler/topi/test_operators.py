"""Every operator against numpy, on random shapes, with the default schedule on the CPU."""

from __future__ import annotations

import numpy as np
import pytest

from compiler import te, topi
from compiler.build import build
from compiler.errors import DTypeError, ShapeError
from compiler.schedule import create_schedule
from compiler.topi.utils import padding4, pair
from tests.compiler import reference

RNG = np.random.default_rng(20240611)


def run(inputs: list[te.Tensor], out: te.Tensor, arrays: list[np.ndarray]) -> np.ndarray:
    f = build(create_schedule(out), [*inputs, out])
    return f(*arrays)


def rand(shape, dtype):
    if np.dtype(dtype).kind == "f":
        return RNG.standard_normal(shape).astype(dtype)
    return RNG.integers(-128, 128, size=shape).astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "int8"])
@pytest.mark.parametrize("trial", range(3))
def test_matmul_and_dense(dtype, trial):
    m, k, n = (int(x) for x in RNG.integers(1, 40, size=3))
    A = te.placeholder((m, k), dtype, name="A")
    B = te.placeholder((k, n), dtype, name="B")
    W = te.placeholder((n, k), dtype, name="W")
    a, b, w = rand((m, k), dtype), rand((k, n), dtype), rand((n, k), dtype)
    acc = np.float32 if dtype == "float32" else np.int32
    got = run([A, B], topi.matmul(A, B), [a, b])
    np.testing.assert_allclose(got, a.astype(acc) @ b.astype(acc), rtol=1e-5, atol=1e-4)
    bias = te.placeholder((n,), "float32" if dtype == "float32" else "int32", name="bias")
    bv = rand((n,), bias.dtype.name)
    got = run([A, W, bias], topi.dense(A, W, bias), [a, w, bv])
    np.testing.assert_allclose(got, a.astype(acc) @ w.astype(acc).T + bv, rtol=1e-5, atol=1e-4)


CONV_CASES = [
    # (N, C, H, W, O, K, stride, padding, dilation, groups)
    (1, 3, 9, 11, 4, 3, 1, 1, 1, 1),
    (2, 4, 10, 7, 6, 3, 2, (1, 2), 1, 2),
    (1, 8, 8, 8, 8, 3, 1, 1, 1, 8),
    (1, 4, 12, 12, 4, 5, 3, (2, 1, 0, 3), 1, 1),
    (1, 2, 11, 9, 3, 3, 1, 2, 2, 1),
    (1, 6, 7, 7, 12, 1, 2, 0, 1, 3),
]


@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_conv2d_nchw(case, dtype):
    n, c, h, w, o, k, stride, padding, dilation, groups = case
    X = te.placeholder((n, c, h, w), dtype, name="X")
    K = te.placeholder((o, c // groups, k, k), dtype, name="K")
    out = topi.conv2d_nchw(X, K, stride, padding, dilation, groups)
    x, kk = rand(X.shape, dtype), rand(K.shape, dtype)
    acc = np.float32 if dtype == "float32" else np.int32
    ref = reference.conv2d_nchw(
        x, kk, pair(stride, "s"), padding4(padding, "p"), pair(dilation, "d"), groups, acc
    )
    np.testing.assert_allclose(run([X, K], out, [x, kk]), ref, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize(
    "case,blocks,layout",
    [
        ((1, 32, 8, 8, 32, 3, 1, 1, 1, 1), (1, 16, 16), "OIHWoi"),
        ((2, 16, 9, 9, 32, 3, 2, 1, 1, 1), (2, 8, 16), "OIHWio"),
        ((1, 16, 7, 7, 16, 3, 1, 1, 1, 16), (1, 8, 8), "OIHWoi"),
        ((1, 16, 7, 7, 16, 3, 1, 1, 1, 16), (1, 4, 4), "OIHWio"),
        ((1, 32, 6, 6, 16, 1, 1, 0, 1, 2), (1, 8, 4), "OIHWio"),
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_conv2d_packed(case, blocks, layout, dtype):
    n, c, h, w, o, k, stride, padding, dilation, groups = case
    bn, bc, bo = blocks
    x = rand((n, c, h, w), dtype)
    kk = rand((o, c // groups, k, k), dtype)
    acc = np.float32 if dtype == "float32" else np.int32
    ref = reference.conv2d_nchw(
        x, kk, (stride, stride), (padding,) * 4, (dilation, dilation), groups, acc
    )
    xp = topi.pack_data(x, bn, bc)
    kb_in = 1 if groups == c else bc
    kp = topi.pack_kernel(kk, bo, kb_in, layout)
    X = te.placeholder(xp.shape, dtype, name="X")
    K = te.placeholder(kp.shape, dtype, name="K")
    out = topi.conv2d_nchwc(X, K, stride, padding, dilation, groups, kernel_layout=layout)
    got = topi.unpack_data(run([X, K], out, [xp, kp]))
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("dtype", ["float32", "int8"])
@pytest.mark.parametrize(
    "shape,kernel,stride,padding",
    [((1, 3, 9, 9), 3, 2, 1), ((2, 4, 8, 6), 2, 2, 0), ((1, 2, 7, 7, 1, 4), 3, 1, (1, 0, 1, 2))],
)
def test_pooling(dtype, shape, kernel, stride, padding):
    x = rand(shape, dtype)
    X = te.placeholder(shape, dtype, name="X")
    pads = padding4(padding, "p")
    got = run([X], topi.max_pool2d(X, kernel, stride, padding), [x])
    np.testing.assert_array_equal(
        got, reference.pool2d(x, (kernel,) * 2, (stride,) * 2, pads, "max")
    )
    for include in (True, False):
        got = run([X], topi.avg_pool2d(X, kernel, stride, padding, count_include_pad=include), [x])
        ref = reference.pool2d(x, (kernel,) * 2, (stride,) * 2, pads, "avg", include)
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_global_avg_pool():
    x = rand((2, 5, 6, 7), "float32")
    X = te.placeholder(x.shape, "float32", name="X")
    got = run([X], topi.global_avg_pool2d(X), [x])
    np.testing.assert_allclose(got, x.mean(axis=(2, 3), keepdims=True), rtol=1e-5, atol=1e-6)


def test_elementwise_broadcasting_and_activation():
    a, b = rand((3, 1, 5), "float32"), rand((4, 1), "float32")
    A = te.placeholder(a.shape, "float32", name="A")
    B = te.placeholder(b.shape, "float32", name="B")
    np.testing.assert_allclose(run([A, B], topi.add(A, B), [a, b]), a + b, rtol=1e-6)
    np.testing.assert_allclose(run([A, B], topi.multiply(A, B), [a, b]), a * b, rtol=1e-6)
    np.testing.assert_allclose(run([A], topi.relu(A), [a]), np.maximum(a, 0))
    np.testing.assert_allclose(run([A], topi.clip(A, -0.5, 0.5), [a]), np.clip(a, -0.5, 0.5))
    with pytest.raises(ShapeError, match=r"\(3, 1, 5\) and \(4, 2\)"):
        topi.add(A, te.placeholder((4, 2), "float32", name="C"))


def test_integer_shifts_casts_requantize():
    x = RNG.integers(-(2**20), 2**20, size=(4, 33)).astype(np.int32)
    X = te.placeholder(x.shape, "int32", name="X")
    np.testing.assert_array_equal(run([X], topi.right_shift(X, 5), [x]), x >> 5)
    np.testing.assert_array_equal(run([X], topi.left_shift(X, 3), [x]), x << 3)
    np.testing.assert_array_equal(run([X], topi.cast(X, "int8"), [x]), x.astype(np.int8))
    got = run([X], topi.requantize(X, shift=8), [x])
    np.testing.assert_array_equal(got, np.clip(x >> 8, -128, 127).astype(np.int8))
    got = run([X], topi.requantize(X, shift=12, multiplier=1234, round_half_up=True), [x])
    ref = np.clip((x.astype(np.int64) * 1234 + (1 << 11)) >> 12, -128, 127).astype(np.int8)
    np.testing.assert_array_equal(got, ref)
    f = rand((5, 7), "float32") * 100
    F = te.placeholder(f.shape, "float32", name="F")
    np.testing.assert_array_equal(run([F], topi.cast(F, "int32"), [f]), f.astype(np.int32))
    with pytest.raises(DTypeError, match="int32 accumulator"):
        topi.requantize(F, 4)


@pytest.mark.parametrize("shape,axis", [((3, 17), -1), ((5, 4, 6), 1), ((9,), 0)])
def test_softmax(shape, axis):
    x = rand(shape, "float32") * 4
    X = te.placeholder(shape, "float32", name="X")
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    ref = e / e.sum(axis=axis, keepdims=True)
    np.testing.assert_allclose(run([X], topi.softmax(X, axis), [x]), ref, rtol=1e-5, atol=1e-6)


def test_operator_shape_errors_name_the_operands():
    A = te.placeholder((4, 5), name="A")
    B = te.placeholder((6, 7), name="B")
    with pytest.raises(ShapeError, match=r"A\(4, 5\) @ B\(6, 7\)"):
        topi.matmul(A, B)
    X = te.placeholder((1, 6, 8, 8), name="X")
    K = te.placeholder((4, 4, 3, 3), name="K")
    with pytest.raises(ShapeError, match="groups=2"):
        topi.conv2d_nchw(X, K, groups=2)
    with pytest.raises(ShapeError, match="does not fit"):
        topi.conv2d_nchw(X, te.placeholder((4, 6, 11, 11), name="K2"))
    with pytest.raises(DTypeError, match="int8"):
        topi.conv2d_nchw(X, te.placeholder((4, 6, 3, 3), "int8", name="K3"))


@pytest.mark.parametrize("trial", range(8))
def test_conv2d_random_configurations(trial):
    rng = np.random.default_rng(1000 + trial)
    groups = int(rng.choice([1, 2, 3]))
    c, o = groups * int(rng.integers(1, 4)), groups * int(rng.integers(1, 4))
    k, dil, stride = int(rng.integers(1, 5)), int(rng.integers(1, 3)), int(rng.integers(1, 4))
    pads = tuple(int(p) for p in rng.integers(0, 3, size=4))
    span = dil * (k - 1) + 1
    h = max(span - pads[0] - pads[2], 1) + int(rng.integers(0, 8))
    w = max(span - pads[1] - pads[3], 1) + int(rng.integers(0, 8))
    n = int(rng.integers(1, 3))
    dtype = str(rng.choice(["float32", "int8"]))
    X = te.placeholder((n, c, h, w), dtype, name="X")
    K = te.placeholder((o, c // groups, k, k), dtype, name="K")
    out = topi.conv2d_nchw(X, K, stride, pads, dil, groups)
    x, kk = rand(X.shape, dtype), rand(K.shape, dtype)
    acc = np.float32 if dtype == "float32" else np.int32
    ref = reference.conv2d_nchw(x, kk, (stride,) * 2, pads, (dil,) * 2, groups, acc)
    np.testing.assert_allclose(run([X, K], out, [x, kk]), ref, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("trial", range(6))
def test_pooling_and_broadcast_random_shapes(trial):
    rng = np.random.default_rng(2000 + trial)
    k, s = int(rng.integers(1, 4)), int(rng.integers(1, 3))
    pad = int(rng.integers(0, k))
    shape = (int(rng.integers(1, 3)), int(rng.integers(1, 5))) + tuple(
        int(v) for v in rng.integers(k, 11, size=2)
    )
    x = rand(shape, "float32")
    X = te.placeholder(shape, "float32", name="X")
    pads = (pad,) * 4
    got = run([X], topi.max_pool2d(X, k, s, pad), [x])
    np.testing.assert_array_equal(got, reference.pool2d(x, (k, k), (s, s), pads, "max"))
    got = run([X], topi.avg_pool2d(X, k, s, pad, count_include_pad=False), [x])
    ref = reference.pool2d(x, (k, k), (s, s), pads, "avg", False)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
    other = tuple(1 if rng.random() < 0.5 else d for d in shape[-int(rng.integers(1, 5)) :])
    y = rand(other, "float32")
    Y = te.placeholder(other, "float32", name="Y")
    np.testing.assert_allclose(run([X, Y], topi.subtract(X, Y), [x, y]), x - y, rtol=1e-6)
