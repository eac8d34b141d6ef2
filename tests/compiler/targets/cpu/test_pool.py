"""The CPU kernels' thread pool (compiler.targets.cpu.pool): every chunk of every parallel loop
runs exactly once, whatever the loop's extent and thread count, from several Python threads at
once, and in a forked child, which starts its own workers."""

from __future__ import annotations

import multiprocessing
import threading

import numpy as np
import pytest

from compiler import te
from compiler.build import build
from compiler.schedule import create_schedule
from compiler.targets.cpu import CpuTarget


def _kernel(rows: int, threads: int):
    a = te.placeholder((rows, 24), name="A")
    b = te.compute((rows, 24), lambda i, j: a[i, j] * 2.0 + 1.0, name="B")
    s = create_schedule(b)
    s[b].parallel(b.op.axis[0])
    return build(s, [a, b], CpuTarget(num_threads=threads))


@pytest.mark.parametrize("threads", [2, 3, 5])
def test_every_chunk_runs_once_for_any_extent(threads):
    for rows in (1, 2, 3, 4, 7, 64):
        f = _kernel(rows, threads)
        a = np.arange(rows * 24, dtype=np.float32).reshape(rows, 24)
        for _ in range(50):  # back to back: the workers are still polling for the next loop
            np.testing.assert_array_equal(f(a), a * 2 + 1)


def test_loops_from_several_python_threads_take_turns():
    kernels = [_kernel(33, 2), _kernel(40, 3), _kernel(9, 4)]
    errors: list[BaseException] = []

    def work(k: int) -> None:
        f = kernels[k % len(kernels)]
        rows = (33, 40, 9)[k % 3]
        a = np.random.default_rng(k).standard_normal((rows, 24)).astype(np.float32)
        try:
            for _ in range(200):
                np.testing.assert_allclose(f(a), a * 2 + 1, rtol=1e-6, atol=1e-6)
        except BaseException as e:  # reported by the test's thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a parallel loop never returned"
    assert errors == []


def _child(conn) -> None:
    f = _kernel(31, 3)
    a = np.ones((31, 24), np.float32)
    conn.send(bool((f(a) == 3).all()))


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork")
def test_a_forked_child_starts_its_own_workers():
    f = _kernel(31, 3)
    f(np.ones((31, 24), np.float32))  # this process's workers are running
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe()
    p = ctx.Process(target=_child, args=(child,))
    p.start()
    assert parent.poll(60), "the child's parallel loop never returned"
    assert parent.recv() is True
    p.join(30)
    assert p.exitcode == 0
