"""Property: random valid GPU schedules (tile and thread split factors, which inputs go to
shared memory, register tiles or not, automatic or hand-bound cooperative fetching, virtual
threads, fused or separate kernels) compute what the default schedule computes on the CPU.

Examples per property: ``VTAC_GPU_SCHEDULE_EXAMPLES`` (default 8; each runs on the CUDA
simulator).
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from compiler import te, topi
from compiler.build import build
from compiler.schedule import create_schedule
from compiler.targets.cpu import CpuTarget

pytestmark = pytest.mark.gpu

EXAMPLES = int(os.environ.get("VTAC_GPU_SCHEDULE_EXAMPLES", "8"))
PROPERTY = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
CPU = CpuTarget(num_threads=1)
M, N, K = 16, 12, 16


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


@st.composite
def matmul_plans(draw):
    bm = draw(st.sampled_from(_divisors(M)))
    bn = draw(st.sampled_from(_divisors(N)))
    return {
        "bm": bm,
        "bn": bn,
        "tm": draw(st.sampled_from(_divisors(bm))),
        "tn": draw(st.sampled_from(_divisors(bn))),
        "kt": draw(st.sampled_from(_divisors(K))),
        "local": draw(st.booleans()),
        "shared_a": draw(st.booleans()),
        "shared_b": draw(st.booleans()),
        "bind_fetch": draw(st.booleans()),
        "vthread": draw(st.booleans()),
    }


def schedule_matmul(plan):
    a = te.placeholder((M, K), name="A")
    b = te.placeholder((K, N), name="B")
    c = topi.matmul(a, b)
    s = create_schedule(c)
    comp = s[s.cache_write(c, "local")] if plan["local"] else s[c]
    cached = []
    for tensor, flag in ((a, plan["shared_a"]), (b, plan["shared_b"])):
        if flag:
            cached.append(s[s.cache_read(tensor, "shared", [comp])])
    out = s[c]
    i, j = out.leaf_iter_vars[:2]
    by, yi = out.split(i, factor=plan["bm"])
    bx, xi = out.split(j, factor=plan["bn"])
    ty, yr = out.split(yi, nparts=plan["tm"])
    tx, xr = out.split(xi, nparts=plan["tn"])
    outer = [by, bx]
    if plan["vthread"] and (plan["bm"] // plan["tm"]) % 2 == 0:
        # two virtual threads over the register tile's rows: run in turn by each thread
        vy, yr = out.split(yr, nparts=2)
        out.bind(vy, "vthread")
        outer.append(vy)
    if plan["local"]:
        out.reorder(*outer, ty, tx, yr, xr)
        comp.compute_at(out, tx)
        ci, cj, ck = comp.leaf_iter_vars
        ko, ki = comp.split(ck, factor=plan["kt"])
        comp.reorder(ko, ki, ci, cj)
    else:
        (k,) = [iv for iv in out.leaf_iter_vars if iv.is_reduce]
        ko, ki = out.split(k, factor=plan["kt"])
        out.reorder(*outer, ty, tx, ko, ki, yr, xr)
    for name, axis in ((by, "blockIdx.y"), (bx, "blockIdx.x"), (ty, "threadIdx.y"),
                       (tx, "threadIdx.x")):  # fmt: skip
        out.bind(name, axis)
    for stage in cached:
        stage.compute_at(comp, ko)
        if plan["bind_fetch"]:
            fused = stage.fuse(*stage.leaf_iter_vars)
            _, inner = stage.split(fused, factor=plan["tn"])
            stage.bind(inner, "threadIdx.x")
    return s, [a, b, c]


@given(matmul_plans())
@PROPERTY
def test_random_matmul_schedules_match_the_default(plan):
    note(str(plan))
    s, args = schedule_matmul(plan)
    note(s.trace_text())
    rng = np.random.default_rng(0)
    x = rng.integers(-4, 5, (M, K)).astype("float32")
    y = rng.integers(-4, 5, (K, N)).astype("float32")
    a, b, c = args
    want = build(create_schedule(c), args, target=CPU)(x, y)
    got = build(s, args, target="gpu")(x, y)
    np.testing.assert_array_equal(got, want)  # small integers: every order sums exactly


ROWS, COLS = 3, 24


@st.composite
def softmax_plans(draw):
    return {
        "fused": draw(st.booleans()),
        "threads": draw(st.sampled_from([1, 2, 4, 8, 16, 32])),
        "elem_threads": draw(st.sampled_from([8, 16, 32, 64])),
    }


def schedule_softmax(plan):
    x = te.placeholder((ROWS, COLS), name="x")
    out = topi.softmax(x)
    s = create_schedule(out)
    t = plan["threads"]
    if plan["fused"]:
        from compiler.topi.gpu import schedule_softmax as fused

        return fused(out, threads=t), [x, out]
    for stage in s.stages:
        if stage.is_placeholder:
            continue
        axes = stage.leaf_iter_vars
        reduce = [iv for iv in axes if iv.is_reduce]
        if reduce:
            stage.bind(axes[0], "blockIdx.x")
            ko, _ = stage.split(reduce[0], nparts=t)
            stage.bind(ko, "threadIdx.x")
        else:
            fused = stage.fuse(*axes)
            bx, tx = stage.split(fused, factor=plan["elem_threads"])
            stage.bind(bx, "blockIdx.x")
            stage.bind(tx, "threadIdx.x")
    return s, [x, out]


@given(softmax_plans())
@PROPERTY
def test_random_softmax_schedules_match_the_default(plan):
    note(str(plan))
    s, args = schedule_softmax(plan)
    note(s.trace_text())
    xa = np.random.default_rng(1).standard_normal((ROWS, COLS)).astype("float32")
    want = build(create_schedule(args[1]), args, target=CPU)(xa)
    got = build(s, args, target="gpu")(xa)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
