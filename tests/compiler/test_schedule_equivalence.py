"""Property: every random valid schedule computes what the default schedule computes, and its
printed trace replays to the same lowered IR.

Integer workloads compare exactly (reordering an integer reduction cannot change its result);
the float workload uses a tolerance. The number of schedules per workload is
``VTAC_SCHEDULE_EXAMPLES`` (default 250).
"""

from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, Phase, given, note, settings
from hypothesis import strategies as st

from compiler import te, topi
from compiler.build import build, lower
from compiler.ir.printer import to_text
from compiler.schedule import AttachInline, AttachRoot, create_schedule, replay
from compiler.targets.cpu import CpuTarget
from tests.compiler.schedule_gen import Plan, annotate, attach, transform_loops

EXAMPLES = int(os.environ.get("VTAC_SCHEDULE_EXAMPLES", "250"))
# Shrinking a failing schedule can take long; VTAC_SCHEDULE_NO_SHRINK=1 reports it unshrunk.
PHASES = (
    [Phase.explicit, Phase.reuse, Phase.generate]
    if os.environ.get("VTAC_SCHEDULE_NO_SHRINK")
    else list(Phase)
)
PROPERTY = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    phases=PHASES,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
TARGET = CpuTarget(num_threads=2)


_REFERENCE: dict[tuple, np.ndarray] = {}


def check_equivalent(outputs, args, s, inputs, exact: bool) -> None:
    note(f"schedule:\n{s.trace_text()}")
    if os.environ.get("VTAC_SCHEDULE_SHOW"):
        print(f"\n--- {outputs.name} {outputs.shape}\n{s.trace_text()}")
    key = (outputs.name, tuple(a.shape for a in args), tuple(x.tobytes() for x in inputs))
    ref = _REFERENCE.get(key)
    if ref is None:
        ref = _REFERENCE[key] = build(create_schedule(outputs), args, TARGET)(*inputs)
    got = build(s, args, TARGET)(*inputs)
    if exact:
        np.testing.assert_array_equal(got, ref)
    else:
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
    again = replay(outputs, s.trace_text())
    assert to_text(lower(again, args, target=TARGET)) == to_text(lower(s, args, target=TARGET))


@st.composite
def matmul_shapes(draw: st.DrawFn) -> tuple[int, int, int]:
    return (draw(st.integers(1, 12)), draw(st.integers(1, 12)), draw(st.integers(1, 12)))


@PROPERTY
@given(shape=matmul_shapes(), data=st.data())
def test_matmul_chain_schedules(shape, data):
    """A2 = A*3 + 1 -> C = A2 @ B (int32) -> D = relu(C)."""
    m, k, n = shape
    A = te.placeholder((m, k), "int32", name="A")
    B = te.placeholder((k, n), "int32", name="B")
    A2 = te.compute((m, k), lambda i, j: A[i, j] * 3 + 1, name="A2")
    C = topi.matmul(A2, B, name="C")
    D = topi.relu(C, name="D")
    s = create_schedule(D)
    plan = Plan(s, data)
    consumer_of_a2 = s[C]
    if plan.coin(0.4):
        cl = s.cache_write(C, plan.pick(["local", "global"], "cw scope"))
        consumer_of_a2 = s[cl]
    reader_b = consumer_of_a2
    bl = None
    if plan.coin(0.4):
        bl = s.cache_read(B, plan.pick(["local", "global"], "cr scope"), [reader_b])
    stages = [s[D], s[C], consumer_of_a2, s[A2]] + ([s[bl]] if bl is not None else [])
    unique = list({id(x): x for x in stages}.values())
    for stage in unique:
        transform_loops(plan, stage)
    attach(plan, s[C], s[D])
    if consumer_of_a2 is not s[C]:
        attach(plan, consumer_of_a2, s[C])
    if plan.coin(0.3):
        s[A2].compute_inline()
    else:
        attach(plan, s[A2], consumer_of_a2)
    if bl is not None:
        attach(plan, s[bl], reader_b)
    for stage in unique:
        if not isinstance(stage.attach, AttachInline):
            annotate(plan, stage, root=isinstance(stage.attach, AttachRoot))
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    a = rng.integers(-50, 50, size=(m, k), dtype=np.int32)
    b = rng.integers(-50, 50, size=(k, n), dtype=np.int32)
    check_equivalent(D, [A, B, D], s, [a, b], exact=True)


@PROPERTY
@given(
    hw=st.integers(3, 9),
    stride=st.integers(1, 2),
    pad=st.integers(0, 2),
    data=st.data(),
)
def test_conv_schedules(hw, stride, pad, data):
    """Padded int8 convolution accumulating in int32, then a shift-and-clip requantize."""
    X = te.placeholder((1, 2, hw, hw), "int8", name="X")
    W = te.placeholder((3, 2, 3, 3), "int8", name="W")
    conv = topi.conv2d_nchw(X, W, stride, pad, name="conv")
    out = topi.requantize(conv, shift=2, name="q")
    s = create_schedule(out)
    plan = Plan(s, data)
    padded = [t for t in conv.op.input_tensors() if t.op.tag == "pad"]
    for stage in (s[out], s[conv]) + tuple(s[p] for p in padded):
        transform_loops(plan, stage)
    attach(plan, s[conv], s[out])
    for p in padded:
        if plan.coin(0.3):
            s[p].compute_inline()
        else:
            attach(plan, s[p], s[conv])
    annotate(plan, s[out], root=True)
    rng = np.random.default_rng(hw * 10 + stride + pad)
    x = rng.integers(-128, 128, size=X.shape, dtype=np.int8)
    w = rng.integers(-128, 128, size=W.shape, dtype=np.int8)
    check_equivalent(out, [X, W, out], s, [x, w], exact=True)


@settings(PROPERTY, max_examples=max(EXAMPLES // 3, 1))
@given(rows=st.integers(1, 9), cols=st.integers(1, 40), data=st.data())
def test_float_softmax_schedules(rows, cols, data):
    """Softmax: three reductions/elementwise stages in float32 (compared with a tolerance)."""
    X = te.placeholder((rows, cols), "float32", name="X")
    out = topi.softmax(X)
    s = create_schedule(out)
    plan = Plan(s, data)
    stages = [st_ for st_ in s.stages if not st_.is_placeholder]
    for stage in stages:
        transform_loops(plan, stage)
    annotate(plan, s[out], root=True)
    rng = np.random.default_rng(rows * 100 + cols)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    check_equivalent(out, [X, out], s, [x], exact=False)
