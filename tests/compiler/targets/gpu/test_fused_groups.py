"""``schedule_gpu`` on the fused groups a ResNet graph produces (float32, small sizes):
conv2d with a folded batch norm, residual add and relu; pooling; the classifier."""

from __future__ import annotations

import numpy as np
import pytest

from compiler import te, topi
from compiler.build import build
from compiler.topi.gpu import schedule_gpu
from tests.compiler.reference import conv2d_nchw, pool2d

pytestmark = pytest.mark.gpu

RNG = np.random.default_rng(42)


def rand(*shape):
    return RNG.standard_normal(shape).astype("float32")


def run(out, anchor, params, inputs):
    f = build(schedule_gpu([out], anchor=anchor), params + [out], target="gpu")
    return f(*inputs)


def test_conv_batch_norm_residual_relu():
    x = te.placeholder((1, 4, 8, 8), name="x")
    w = te.placeholder((8, 4, 3, 3), name="w")
    vecs = [te.placeholder((8,), name=n) for n in ("scale", "bias", "mean", "var")]
    res = te.placeholder((1, 8, 8, 8), name="res")
    conv = topi.conv2d_nchw(x, w, 1, 1)
    out = topi.relu(topi.add(topi.batch_norm(conv, *vecs), res))
    xa, wa, ra = rand(1, 4, 8, 8), rand(8, 4, 3, 3), rand(1, 8, 8, 8)
    scale, bias, mean = rand(8), rand(8), rand(8)
    var = np.abs(rand(8)) + 0.5
    got = run(out, conv, [x, w, *vecs, res], [xa, wa, scale, bias, mean, var, ra])
    c = conv2d_nchw(xa, wa, (1, 1), (1, 1, 1, 1), (1, 1), 1, "float32")
    bn = (c - mean[:, None, None]) / np.sqrt(var[:, None, None] + 1e-5) * scale[:, None, None]
    want = np.maximum(bn + bias[:, None, None] + ra, 0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_max_pool_with_padding():
    x = te.placeholder((1, 4, 8, 8), name="x")
    out = topi.max_pool2d(x, 3, 2, 1)
    xa = rand(1, 4, 8, 8)
    got = run(out, out, [x], [xa])
    np.testing.assert_allclose(got, pool2d(xa, (3, 3), (2, 2), (1, 1, 1, 1), "max"))


def test_global_avg_pool_then_dense_bias():
    x = te.placeholder((1, 16, 4, 4), name="x")
    pooled = topi.global_avg_pool2d(x)
    xa = rand(1, 16, 4, 4)
    got = run(pooled, pooled, [x], [xa])
    np.testing.assert_allclose(got, xa.mean(axis=(2, 3), keepdims=True), rtol=1e-5)

    feat = te.placeholder((1, 16), name="feat")
    w = te.placeholder((10, 16), name="w")
    b = te.placeholder((10,), name="b")
    dense = topi.dense(feat, w, b)
    fa, wa, ba = rand(1, 16), rand(10, 16), rand(10)
    got = run(dense, dense.op.input_tensors()[0], [feat, w, b], [fa, wa, ba])
    np.testing.assert_allclose(got, fa @ wa.T + ba, rtol=1e-5, atol=1e-5)


def test_injective_group():
    a = te.placeholder((2, 8, 5, 5), name="a")
    b = te.placeholder((2, 8, 5, 5), name="b")
    out = topi.relu(topi.add(a, b))
    aa, ba = rand(2, 8, 5, 5), rand(2, 8, 5, 5)
    np.testing.assert_allclose(run(out, None, [a, b], [aa, ba]), np.maximum(aa + ba, 0))


def test_strategy_groups_with_the_gpu_schedule():
    from compiler.strategy import compute

    x = te.placeholder((2, 32), name="x")
    w = te.placeholder((8, 32), name="w")
    b = te.placeholder((8,), name="b")
    y = compute("dense", [x, w, b], {}, "fc")  # the CPU strategy's split-K dense
    z = compute("relu", [y], {}, "fc_relu")
    xa, wa, ba = rand(2, 32), rand(8, 32), rand(8)
    got = run(z, y, [x, w, b], [xa, wa, ba])
    np.testing.assert_allclose(got, np.maximum(xa @ wa.T + ba, 0), rtol=1e-5, atol=1e-5)
