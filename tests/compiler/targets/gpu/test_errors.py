"""Each GPU lowering error, raised with a message naming the kernel, stage or loop at fault."""

from __future__ import annotations

import pytest

from compiler import te, topi
from compiler.build import lower
from compiler.errors import LoweringError, ScheduleError
from compiler.schedule import create_schedule
from compiler.topi.gpu import Conv2dGpuKnobs, DenseGpuKnobs, schedule_conv2d_nchw, schedule_dense

pytestmark = pytest.mark.gpu


def test_too_many_threads_per_block():
    a = te.placeholder((2048,), name="A")
    b = te.compute((2048,), lambda i: a[i] + 1.0, name="B")
    s = create_schedule(b)
    s[b].bind("i", "threadIdx.x")
    with pytest.raises(LoweringError, match=r"stage B\) launches 2048 threads per block .*"
                       r"allows at most 1024"):  # fmt: skip
        lower(s, [a, b], target="gpu")


def test_shared_memory_over_the_limit():
    a = te.placeholder((128, 64), name="A")
    w = te.placeholder((128, 64), name="W")
    out = topi.dense(a, w)
    s = schedule_dense(out, DenseGpuKnobs(128, 128, 8, 8, 64))
    want = (
        r"uses 65536 bytes of shared memory per block \(A.shared 32768 B, W.shared 32768 B\); "
        r"the device H100 allows 49152"
    )
    with pytest.raises(LoweringError, match=want):
        lower(s, [a, w, out], target="gpu")


def _row_sum():
    a = te.placeholder((8, 32), name="A")
    k = te.reduce_axis(32, name="k")
    b = te.compute((8,), lambda i: te.sum(a[i, k], axis=k), name="B")
    return a, b, create_schedule(b)


def test_reduction_bound_to_threads_needs_serial_spatial_loops_outside():
    a = te.placeholder((4, 8, 32), name="A")
    k = te.reduce_axis(32, name="k")
    b = te.compute((4, 8), lambda i, j: te.sum(a[i, j, k], axis=k), name="B")
    s = create_schedule(b)
    i, j, _ = s[b].leaf_iter_vars
    ko, ki = s[b].split("k", nparts=16)
    s[b].reorder(i, ko, j, ki)
    s[b].bind(i, "blockIdx.x")
    s[b].bind(ko, "threadIdx.x")
    with pytest.raises(LoweringError, match=r"loop k.outer bound to threadIdx.x accumulates into B "
                       r".*serial loops j .*a reduction bound to threads without a cross-thread "
                       r"reduction"):  # fmt: skip
        lower(s, [a, b], target="gpu")


def test_shared_reduction_run_by_every_thread():
    x = te.placeholder((2, 32), name="x")
    out = topi.softmax(x)
    s = create_schedule(out)
    row, col = s[out].leaf_iter_vars
    s[out].bind(row, "blockIdx.x")
    tx, _ = s[out].split(col, nparts=16)
    s[out].bind(tx, "threadIdx.x")
    s["softmax_exp"].compute_inline()
    for name in ("softmax_max", "softmax_sum"):
        s[name].set_scope("shared")
        s[name].compute_at(s[out], row)
    with pytest.raises(LoweringError, match=r"softmax_max is accumulated by all 16 threads of "
                       r"threadIdx.x at once .*a reduction bound to threads without a "
                       r"cross-thread reduction"):  # fmt: skip
        lower(s, [x, out], target="gpu")


def test_cross_thread_reduction_of_a_row_sum_lowers():
    a, b, s = _row_sum()
    s[b].bind("i", "blockIdx.x")
    ko, _ = s[b].split("k", nparts=16)
    s[b].bind(ko, "threadIdx.x")
    text = str(lower(s, [a, b], target="gpu"))
    assert "B.red" in text and "syncthreads()" in text


def test_reduction_axis_cannot_go_to_blocks():
    a, b, s = _row_sum()
    with pytest.raises(ScheduleError, match="axis k is a reduction axis"):
        s[b].bind("k", "blockIdx.x")


def test_stage_without_bindings():
    a = te.placeholder((16,), name="A")
    b = te.compute((16,), lambda i: a[i] * 2.0, name="B")
    s = create_schedule(b)
    with pytest.raises(LoweringError, match=r"stage B\) has no loop bound to blockIdx.\* or "
                       r"threadIdx.\*"):  # fmt: skip
        lower(s, [a, b], target="gpu")


def test_parallel_is_not_a_gpu_loop():
    a = te.placeholder((16,), name="A")
    b = te.compute((16,), lambda i: a[i] * 2.0, name="B")
    s = create_schedule(b)
    s[b].parallel("i")
    with pytest.raises(LoweringError, match="loop i is parallel"):
        lower(s, [a, b], target="gpu")


def test_barrier_needed_in_divergent_code():
    x = te.placeholder((1, 4, 6, 6), name="x")
    w = te.placeholder((8, 4, 3, 3), name="w")
    out = topi.conv2d_nchw(x, w, 1, 1)
    # 4 threads along a height of 6: the last tile's bounds check encloses the shared fill
    s = schedule_conv2d_nchw(out, Conv2dGpuKnobs(2, 2, 4, 4, 2))
    with pytest.raises(LoweringError, match=r"written and read by different threads where not "
                       r"every thread of the block arrives"):  # fmt: skip
        lower(s, [x, w, out], target="gpu")


def test_local_buffer_split_across_threads():
    a = te.placeholder((64,), name="A")
    b = te.compute((64,), lambda i: a[i] * 2.0, name="B")
    c = te.compute((64,), lambda i: b[i] + 1.0, name="C")
    s = create_schedule(c)
    bx, tx = s[c].split("i", factor=32)
    s[c].bind(bx, "blockIdx.x")
    s[c].bind(tx, "threadIdx.x")
    s[b].set_scope("local")
    s[b].compute_at(s[c], bx)
    s[b].bind(s[b].leaf_iter_vars[0], "threadIdx.x")
    with pytest.raises(LoweringError, match=r"local buffer B is written inside loop i bound to "
                       r"threadIdx.x but allocated outside it"):  # fmt: skip
        lower(s, [a, c], target="gpu")


def test_root_stage_in_shared_memory():
    a = te.placeholder((64,), name="A")
    b = te.compute((64,), lambda i: a[i] * 2.0, name="B")
    c = te.compute((64,), lambda i: b[i] + 1.0, name="C")
    s = create_schedule(c)
    for st in (b, c):
        bx, tx = s[st].split(s[st].leaf_iter_vars[0], factor=32)
        s[st].bind(bx, "blockIdx.x")
        s[st].bind(tx, "threadIdx.x")
    s[b].set_scope("shared")
    with pytest.raises(LoweringError, match="stage B is computed at the root in scope shared"):
        lower(s, [a, c], target="gpu")


def test_block_dimension_limit():
    a = te.placeholder((128,), name="A")
    b = te.compute((128,), lambda i: a[i] + 1.0, name="B")
    s = create_schedule(b)
    s[b].bind("i", "threadIdx.z")
    with pytest.raises(LoweringError, match="threadIdx.z has extent 128; the device H100 allows "
                       "at most 64 threads along it"):  # fmt: skip
        lower(s, [a, b], target="gpu")


def test_block_extents_must_agree():
    a = te.placeholder((64,), name="A")
    b = te.compute((64,), lambda i: a[i] * 2.0, name="B")
    c = te.compute((32,), lambda i: b[2 * i] + b[2 * i + 1], name="C")
    s = create_schedule(c)
    s[b].set_scope("shared")
    bx, tx = s[c].split("i", factor=8)
    s[c].bind(bx, "blockIdx.x")
    s[c].bind(tx, "threadIdx.x")
    s[b].compute_at(s[c], bx)
    s[b].bind(s[b].leaf_iter_vars[0], "blockIdx.x")
    with pytest.raises(LoweringError, match=r"loops bound to blockIdx.x have different extents "
                       r"\[4, 16\]"):  # fmt: skip
        lower(s, [a, c], target="gpu")


def test_numba_cuda_that_cannot_load_beside_numpy_is_named(monkeypatch):
    """numba-cuda 0.30 with numpy 2.5 failed every kernel compile on a GPU with an
    AttributeError deep inside numba; the check names both versions instead."""
    import importlib

    from compiler.errors import CodegenError
    from compiler.targets.gpu.ptx import check_numba_cuda

    real = importlib.import_module

    def fake(name, *args):
        if name == "numba.cuda.np.arrayobj":
            raise AttributeError("module 'numpy' has no attribute 'row_stack'")
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", fake)
    with pytest.raises(CodegenError, match=r"numba-cuda \S+ cannot compile kernels with numpy"):
        check_numba_cuda()
