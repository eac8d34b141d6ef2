"""Barrier placement: golden lowered IR, and a barrier exactly where a shared buffer is
written and then read by other threads (or read and then overwritten by the next iteration).
Refresh the golden files with ``pytest --update-golden``."""

from __future__ import annotations

import numpy as np
import pytest

from compiler import te
from compiler.build import build, lower
from compiler.ir import stmt as S
from compiler.ir.functor import visit
from compiler.ir.printer import to_text
from compiler.schedule import create_schedule
from compiler.targets.gpu.intrin import is_barrier
from tests.compiler.targets.gpu.cases import CASES

pytestmark = pytest.mark.gpu


def barriers(func: S.PrimFunc) -> int:
    found: list[S.Stmt] = []
    visit(
        func.body,
        lambda n: found.append(n) if isinstance(n, S.Evaluate) and is_barrier(n) else None,
    )
    return len(found)


def lowered(case_name: str) -> S.PrimFunc:
    case = CASES[case_name]()
    return lower(case.schedule, case.args, target="gpu")


def test_matmul_barriers_golden(gpu_golden):
    func = lowered("matmul")
    gpu_golden("matmul_lowered", to_text(func))
    # one before the tile fill (the previous step's reads must be done), one after it
    assert barriers(func) == 2
    text = to_text(func).splitlines()
    loop = next(k for k, line in enumerate(text) if "for k.outer in range" in line)
    body = [line.strip() for line in text[loop + 1 :] if "allocate" not in line]
    assert body[0] == "syncthreads()"


def test_softmax_barriers_golden(gpu_golden):
    func = lowered("softmax")
    gpu_golden("softmax_lowered", to_text(func))
    # per cross-thread reduction over 16 threads: one after the partial results are stored and
    # one after each of the 4 tree steps; then one before the threads read the shared result
    assert barriers(func) == 2 * (1 + 4 + 1)


def test_elementwise_needs_no_barrier():
    assert barriers(lowered("injective")) == 0


def _reversed_block(reverse: bool):
    """B[i] = A[i] (or A reversed within each block of 32) through a shared copy that every
    thread fills at its own index."""
    n = 64
    a = te.placeholder((n,), name="A")
    if reverse:
        b = te.compute((n,), lambda i: a[(i // 32) * 32 + 31 - i % 32] * 2.0, name="B")
    else:
        b = te.compute((n,), lambda i: a[i] * 2.0, name="B")
    s = create_schedule(b)
    a_s = s.cache_read(a, "shared", [b])
    bx, tx = s[b].split("i", factor=32)
    s[b].bind(bx, "blockIdx.x")
    s[b].bind(tx, "threadIdx.x")
    s[a_s].compute_at(s[b], bx)
    s[a_s].bind(s[a_s].leaf_iter_vars[0], "threadIdx.x")
    return s, [a, b]


def test_own_element_needs_no_barrier(gpu_golden):
    s, args = _reversed_block(reverse=False)
    func = lower(s, args, target="gpu")
    gpu_golden("own_element_lowered", to_text(func))
    assert barriers(func) == 0
    x = np.arange(64, dtype="float32")
    np.testing.assert_allclose(build(s, args, target="gpu")(x), 2 * x)


def test_other_threads_element_needs_a_barrier(gpu_golden):
    s, args = _reversed_block(reverse=True)
    func = lower(s, args, target="gpu")
    gpu_golden("reversed_block_lowered", to_text(func))
    assert barriers(func) == 1
    x = np.arange(64, dtype="float32")
    want = 2 * x.reshape(2, 32)[:, ::-1].reshape(-1)
    np.testing.assert_allclose(build(s, args, target="gpu")(x), want)


def test_kernel_source_golden(gpu_golden):
    case = CASES["matmul"]()
    f = build(case.schedule, case.args, target="gpu")
    gpu_golden("matmul_kernel_source", f.source)
    assert f.source.count("cuda.syncthreads()") == 2
