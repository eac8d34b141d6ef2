"""Small GPU workloads shared by the tests: each builds a schedule, its arguments, inputs and
the numpy result (sizes chosen so the CUDA simulator runs each in about a second)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from compiler import te, topi
from compiler.schedule import Schedule
from compiler.topi.gpu import (
    Conv2dGpuKnobs,
    DenseGpuKnobs,
    schedule_conv2d_nchw,
    schedule_dense,
    schedule_injective,
    schedule_pool,
    schedule_softmax,
)
from tests.compiler.reference import conv2d_nchw, pool2d


@dataclass
class Case:
    name: str
    schedule: Schedule
    args: list
    inputs: list[np.ndarray]
    expected: np.ndarray
    exact: bool = False


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def matmul() -> Case:
    a = te.placeholder((32, 16), name="A")
    b = te.placeholder((16, 24), name="B")
    c = topi.matmul(a, b)
    s = schedule_dense(c, DenseGpuKnobs(16, 16, 4, 4, 8))
    x, y = _rng(0).standard_normal((32, 16)), _rng(1).standard_normal((16, 24))
    x, y = x.astype("float32"), y.astype("float32")
    return Case("matmul", s, [a, b, c], [x, y], x @ y)


def dense_bias_relu() -> Case:
    d = te.placeholder((8, 16), name="data")
    w = te.placeholder((20, 16), name="weight")
    bias = te.placeholder((20,), name="bias")
    out = topi.relu(topi.dense(d, w, bias))
    s = schedule_dense(out, DenseGpuKnobs(8, 8, 4, 4, 4))
    x = _rng(2).standard_normal((8, 16)).astype("float32")
    wt = _rng(3).standard_normal((20, 16)).astype("float32")
    bb = _rng(4).standard_normal(20).astype("float32")
    return Case("dense_bias_relu", s, [d, w, bias, out], [x, wt, bb], np.maximum(x @ wt.T + bb, 0))


def dense_int8() -> Case:
    d = te.placeholder((1, 64), "int8", name="data")
    w = te.placeholder((40, 64), "int8", name="weight")
    out = topi.dense(d, w, out_dtype="int32")
    s = schedule_dense(out)
    x = _rng(5).integers(-128, 128, (1, 64)).astype("int8")
    wt = _rng(6).integers(-128, 128, (40, 64)).astype("int8")
    ref = x.astype("int32") @ wt.astype("int32").T
    return Case("dense_int8", s, [d, w, out], [x, wt], ref, exact=True)


def conv2d() -> Case:
    x = te.placeholder((1, 4, 8, 8), name="x")
    w = te.placeholder((8, 4, 3, 3), name="w")
    out = topi.conv2d_nchw(x, w, 1, 1)
    s = schedule_conv2d_nchw(out, Conv2dGpuKnobs(2, 2, 4, 4, 2))
    xa = _rng(7).standard_normal((1, 4, 8, 8)).astype("float32")
    wa = _rng(8).standard_normal((8, 4, 3, 3)).astype("float32")
    ref = conv2d_nchw(xa, wa, (1, 1), (1, 1, 1, 1), (1, 1), 1, "float32")
    return Case("conv2d", s, [x, w, out], [xa, wa], ref)


def conv2d_stride2_relu() -> Case:
    x = te.placeholder((1, 3, 9, 9), name="x")
    w = te.placeholder((4, 3, 3, 3), name="w")
    out = topi.relu(topi.conv2d_nchw(x, w, 2, 1))
    s = schedule_conv2d_nchw(out, Conv2dGpuKnobs(1, 4, 5, 5, 3))
    xa = _rng(9).standard_normal((1, 3, 9, 9)).astype("float32")
    wa = _rng(10).standard_normal((4, 3, 3, 3)).astype("float32")
    ref = np.maximum(conv2d_nchw(xa, wa, (2, 2), (1, 1, 1, 1), (1, 1), 1, "float32"), 0)
    return Case("conv2d_stride2_relu", s, [x, w, out], [xa, wa], ref)


def injective() -> Case:
    x = te.placeholder((3, 50), name="x")
    out = topi.relu(topi.add(x, x))
    s = schedule_injective(out, threads=32)
    xa = _rng(11).standard_normal((3, 50)).astype("float32")
    return Case("injective", s, [x, out], [xa], np.maximum(2 * xa, 0))


def max_pool() -> Case:
    x = te.placeholder((1, 2, 6, 6), name="x")
    out = topi.max_pool2d(x, 3, 2, 1)
    s = schedule_pool(out, threads=16)
    xa = _rng(12).standard_normal((1, 2, 6, 6)).astype("float32")
    ref = pool2d(xa, (3, 3), (2, 2), (1, 1, 1, 1), "max")
    return Case("max_pool", s, [x, out], [xa], ref)


def avg_pool() -> Case:
    x = te.placeholder((1, 2, 6, 6), name="x")
    out = topi.avg_pool2d(x, 2, 2)
    s = schedule_pool(out, threads=16)
    xa = _rng(13).standard_normal((1, 2, 6, 6)).astype("float32")
    ref = pool2d(xa, (2, 2), (2, 2), (0, 0, 0, 0), "avg")
    return Case("avg_pool", s, [x, out], [xa], ref)


def softmax() -> Case:
    x = te.placeholder((3, 40), name="x")
    out = topi.softmax(x)
    s = schedule_softmax(out, threads=16)
    xa = _rng(14).standard_normal((3, 40)).astype("float32")
    e = np.exp(xa - xa.max(axis=1, keepdims=True))
    return Case("softmax", s, [x, out], [xa], e / e.sum(axis=1, keepdims=True))


CASES: dict[str, Callable[[], Case]] = {
    f.__name__: f
    for f in (
        matmul,
        dense_bias_relu,
        dense_int8,
        conv2d,
        conv2d_stride2_relu,
        injective,
        max_pool,
        avg_pool,
        softmax,
    )
}
