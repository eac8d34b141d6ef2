"""CPU backend: parallel, vectorize and unroll are honoured (or rejected), semantics match numpy."""

from __future__ import annotations

import numpy as np
import pytest

from compiler import te, topi
from compiler.build import build, lower
from compiler.errors import CodegenError, CompilerError, LoweringError
from compiler.ir import Buffer, BufferStore, For, ForKind, IntImm, PrimFunc, Var
from compiler.passes import vectorize_loops
from compiler.schedule import create_schedule
from compiler.targets.cpu import CpuTarget
from compiler.targets.cpu.codegen import codegen_llvm
from compiler.targets.cpu.passes import make_check_cpu_support
from tests.compiler.test_golden_ir import accelerator_style_conv

RNG = np.random.default_rng(7)


def test_parallel_loop_runs_on_threads_and_is_correct():
    A = te.placeholder((37, 33), name="A")
    B = te.compute((37, 33), lambda i, j: A[i, j] * 3.0 + 1.0, name="B")
    s = create_schedule(B)
    s[B].parallel("i")
    func = lower(s, [A, B], target=CpuTarget(num_threads=3))
    assert "parallel for i in range(37)" in str(func)
    llvm_ir = codegen_llvm(func, num_threads=3)
    assert "@vtac_parallel_run" in llvm_ir and "define internal ptr @main_par1" in llvm_ir
    assert "define internal void @main_par1_body" in llvm_ir and "ptr noalias %cb0" in llvm_ir
    a = RNG.standard_normal((37, 33)).astype(np.float32)
    for threads in (1, 2, 3, 8):
        f = build(s, [A, B], CpuTarget(num_threads=threads))
        np.testing.assert_allclose(f(a), a * 3 + 1, rtol=1e-6, atol=1e-6)  # FMA rounding


def test_parallel_body_with_private_buffers():
    A = te.placeholder((64, 64), name="A")
    B = te.placeholder((64, 64), name="B")
    C = topi.matmul(A, B)
    from compiler.topi.cpu import schedule_matmul

    s = schedule_matmul(C, rows=4, cols=16)
    a, b = (RNG.standard_normal((64, 64)).astype(np.float32) for _ in range(2))
    f = build(s, [A, B, C], CpuTarget(num_threads=2))
    np.testing.assert_allclose(f(a, b), a @ b, rtol=1e-4, atol=1e-4)


def test_nested_parallel_loops_are_rejected():
    A = te.placeholder((8, 8), name="A")
    B = te.compute((8, 8), lambda i, j: A[i, j] + 1.0, name="B")
    s = create_schedule(B)
    s[B].parallel("i")
    s[B].parallel("j")
    with pytest.raises(
        CodegenError, match="parallel loop j is nested inside another parallel loop"
    ):
        build(s, [A, B], CpuTarget(num_threads=2))


def test_vectorize_emits_vector_code_and_masks_ragged_tiles():
    A = te.placeholder((5, 21), name="A")
    B = te.compute((5, 21), lambda i, j: A[i, j] * 2.0, name="B")
    s = create_schedule(B)
    jo, ji = s[B].split("j", factor=8)
    s[B].vectorize(ji)
    func = lower(s, [A, B], target=CpuTarget(num_threads=1))
    text = str(func)
    assert "ramp(" in text and "where ramp(j.outer*8, 1, 8) < broadcast(21, 8)" in text
    llvm_ir = codegen_llvm(func)
    # ragged tail: a masked vector load, and the store guarded lane by lane
    assert "<8 x float>" in llvm_ir and "llvm.masked.load" in llvm_ir
    assert "lane_on" in llvm_ir and "llvm.masked.store" not in llvm_ir
    a = RNG.standard_normal((5, 21)).astype(np.float32)
    np.testing.assert_array_equal(build(s, [A, B], CpuTarget(num_threads=1))(a), a * 2)


def test_vectorized_padding_reads_stay_in_bounds():
    A = te.placeholder((3, 13), name="A")
    P = topi.pad(A, (0, 2), (0, 3))
    s = create_schedule(P)
    s[P].vectorize(s[P].leaf_iter_vars[1])
    a = RNG.standard_normal((3, 13)).astype(np.float32)
    got = build(s, [A, P], CpuTarget(num_threads=1))(a)
    np.testing.assert_array_equal(got, np.pad(a, ((0, 0), (2, 3))))


def test_vectorizing_a_reduction_store_is_an_error_not_a_fallback():
    B = Buffer("B", (4,), "int32")
    i = Var("i")
    body = BufferStore(B, B[IntImm(0)] + i, (IntImm(0),))
    f = PrimFunc("f", (B,), For(i, IntImm(0), IntImm(4), ForKind.VECTORIZED, body))
    with pytest.raises(LoweringError, match="cannot vectorize loop i: every iteration writes"):
        vectorize_loops(f)


def test_unroll_with_symbolic_extent_and_limit():
    A = te.placeholder((10,), name="A")
    B = te.compute((10,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((10,), lambda i: B[i] * 2.0, name="C")
    s = create_schedule(C)
    io, ii = s[C].split("i", factor=4)
    s[B].compute_at(s[C], io)
    s[B].unroll(s[B].leaf_iter_vars[0])
    a = RNG.standard_normal(10).astype(np.float32)
    f = build(s, [A, C], CpuTarget(num_threads=1))
    np.testing.assert_allclose(f(a), (a + 1) * 2, rtol=1e-6)
    big = te.placeholder((2048,), name="big")
    out = te.compute((2048,), lambda i: big[i] + 1.0, name="out")
    s2 = create_schedule(out)
    s2[out].unroll("i")
    with pytest.raises(LoweringError, match="cannot unroll loop i: 2048 iterations exceed"):
        lower(s2, [big, out])


def test_gpu_bindings_and_unknown_pragmas_are_rejected_on_cpu():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
    s = create_schedule(B)
    s[B].bind("i", "threadIdx.x")
    with pytest.raises(LoweringError, match="loop i is bound to threadIdx.x"):
        lower(s, [A, B])
    s = create_schedule(B)
    s[B].pragma("i", "prefetch_everything")
    with pytest.raises(LoweringError, match="does not implement pragma 'prefetch_everything'"):
        lower(s, [A, B])
    check = make_check_cpu_support(["dma_copy"])
    s = create_schedule(B)
    s[B].pragma("i", "dma_copy")
    check(lower(s, [A, B]))


def test_accelerator_style_schedule_runs_on_cpu():
    s, (X, W, out) = accelerator_style_conv()
    x = RNG.integers(-128, 128, size=X.shape, dtype=np.int8)
    w = RNG.integers(-128, 128, size=W.shape, dtype=np.int8)
    got = build(s, [X, W, out], CpuTarget(num_threads=1))(x, w)
    ref = build(create_schedule(out), [X, W, out], CpuTarget(num_threads=1))(x, w)
    np.testing.assert_array_equal(got, ref)


def test_integer_semantics_match_numpy():
    A = te.placeholder((64,), "int8", name="A")
    B = te.compute((64,), lambda i: A[i] + A[i] * 3, name="B")
    D = te.compute(
        (64,),
        lambda i: (A[i].astype("int32") - 5) // 3 * 100 + (A[i].astype("int32") - 5) % 3,
        name="D",
    )
    a = RNG.integers(-128, 128, size=64, dtype=np.int8)
    np.testing.assert_array_equal(build(create_schedule(B), [A, B])(a), a + a * np.int8(3))
    ai = a.astype(np.int32) - 5
    np.testing.assert_array_equal(build(create_schedule(D), [A, D])(a), ai // 3 * 100 + ai % 3)


def test_math_intrinsics_bool_outputs_and_large_buffers():
    X = te.placeholder((3, 40000), name="X")
    E = te.compute(X.shape, lambda i, j: te.exp(X[i, j]) + te.sqrt(X[i, j] * X[i, j]), name="E")
    F = te.compute(X.shape, lambda i, j: E[i, j] * 0.5, name="F")  # E is a 480 KB heap buffer
    G = te.compute(X.shape, lambda i, j: F[i, j] > 1.0, name="G")
    x = RNG.standard_normal(X.shape).astype(np.float32)
    got = build(create_schedule(G), [X, G])(x)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, (np.exp(x) + np.abs(x)) * 0.5 > 1.0)


def test_compiled_function_checks_its_arguments():
    A = te.placeholder((4, 4), name="A")
    B = te.compute((4, 4), lambda i, j: A[i, j] + 1.0, name="B")
    f = build(create_schedule(B), [A, B])
    a = np.zeros((4, 4), np.float32)
    with pytest.raises(CompilerError, match="argument A has dtype float64, expected float32"):
        f(a.astype(np.float64))
    with pytest.raises(CompilerError, match=r"argument A has shape \(4, 5\)"):
        f(np.zeros((4, 5), np.float32))
    with pytest.raises(CompilerError, match="takes 1 inputs or all 2 arguments"):
        f(a, a, a)
    with pytest.raises(CompilerError, match="overlaps"):
        f(a, a)
    out = np.empty((4, 4), np.float32)
    assert f(a, out) is out and (out == 1).all()
    np.testing.assert_array_equal(f(np.asfortranarray(a + 1)), a + 2)


def test_machine_code_is_cached_on_disk(tmp_path, monkeypatch):
    from compiler.targets.cpu import jit

    monkeypatch.setenv("VTAC_CACHE_DIR", str(tmp_path))
    A = te.placeholder((16,), name="A")
    B = te.compute((16,), lambda i: A[i] * 5.0 - 3.0, name="B")
    f = build(create_schedule(B), [A, B], CpuTarget(num_threads=1))
    objects = list(tmp_path.glob("vtac_*.o"))
    assert len(objects) == 1
    monkeypatch.setattr(jit, "_CACHE", {})  # forget the in-process cache: load from disk
    g = build(create_schedule(B), [A, B], CpuTarget(num_threads=1))
    assert g.address != f.address
    a = np.arange(16, dtype=np.float32)
    np.testing.assert_array_equal(g(a), a * 5 - 3)


@pytest.mark.parametrize("stride", [2, 3, 4])
@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_constant_stride_load_is_one_wide_load(stride, dtype):
    """A vector load at a constant stride of 2 to 4 is one wide masked load and a shuffle, not
    a gather; its last lanes end on the buffer's last element (nothing past it is read)."""
    n = 16 * 5
    A = te.placeholder((stride * (n - 1) + 1,), dtype, name="A")
    B = te.compute((n,), lambda i: A[i * stride], name="B")
    s = create_schedule(B)
    _, inner = s[B].split(B.op.axis[0], factor=16)
    s[B].vectorize(inner)
    f = build(s, [A, B])
    assert "masked.gather" not in f.llvm_ir and "shufflevector" in f.llvm_ir
    a = np.arange(A.shape[0]).astype(dtype)
    np.testing.assert_array_equal(f(a), a[::stride])
