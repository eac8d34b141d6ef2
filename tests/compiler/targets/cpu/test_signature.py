"""The argument signature a host kernel's module records for itself, and reading it back from the
compiled code."""

from __future__ import annotations

import numpy as np
import pytest

from compiler import te
from compiler.build import build, lower
from compiler.errors import CodegenError
from compiler.ir import Buffer, BufferStore, For, ForKind, IntImm, PrimFunc, Var
from compiler.ir.stmt import ArgInfo
from compiler.schedule import create_schedule
from compiler.targets.cpu import CpuTarget
from compiler.targets.cpu.codegen import codegen_llvm
from compiler.targets.cpu.jit import compiled_signature
from compiler.targets.cpu.signature import (
    ArgSignature,
    decode_signature,
    encode_signature,
    llvm_signature,
    signature_of,
)


def _scale(n: int, name: str):  # noqa: ANN202
    X = te.placeholder((2, n), "float32", name="X")
    M = te.placeholder((n,), "bool", name="M")
    Y = te.compute((2, n), lambda i, j: te.if_then_else(M[j], X[i, j] * 2.0, X[i, j]), name="Y")
    s = create_schedule(Y)
    return lower(s, [X, M, Y], target=CpuTarget(num_threads=1), name=name), s, (X, M, Y)


def test_signature_comes_from_the_lowered_function():
    func, _, _ = _scale(8, "scale")
    assert signature_of(func) == (
        ArgSignature("X", (2, 8), "float32", 64, False),
        ArgSignature("M", (8,), "bool", 8, False),
        ArgSignature("Y", (2, 8), "float32", 64, True),
    )


def test_without_argument_descriptions_the_buffers_and_stores_decide():
    A, B = Buffer("A", (4,), "int8"), Buffer("B", (4,), "int32")
    i = Var("i")
    body = For(i, IntImm(0), IntImm(4), ForKind.SERIAL, BufferStore(B, i, (i,)))
    assert signature_of(PrimFunc("f", (A, B), body)) == (
        ArgSignature("A", (4,), "int8", 4, False),
        ArgSignature("B", (4,), "int32", 16, True),
    )


def test_an_argument_description_that_its_buffer_cannot_hold_is_refused():
    B = Buffer("B", (4,), "int32")
    i = Var("i")
    body = For(i, IntImm(0), IntImm(4), ForKind.SERIAL, BufferStore(B, i, (i,)))
    bad = PrimFunc("f", (B,), body, (ArgInfo("B", (2, 4), "int32", True),))
    with pytest.raises(CodegenError, match=r"argument B is int32\[2, 4\], its buffer B holds 4"):
        signature_of(bad)


def test_the_compiled_code_returns_its_own_record():
    func, s, tensors = _scale(8, "scale_rec")
    f = build(s, list(tensors), CpuTarget(num_threads=1), name="scale_rec")
    assert "@scale_rec.signature" in f.llvm_ir
    assert compiled_signature(f.llvm_ir, "scale_rec") == signature_of(func)
    x = np.arange(16, dtype=np.float32).reshape(2, 8)
    m = np.arange(8) % 2 == 0
    np.testing.assert_array_equal(f(x, m), np.where(m, x * 2, x))


def test_kernels_of_one_symbol_keep_their_own_records_in_one_process():
    """Two models may each have a kernel ``k0``: the engine renames both, records included."""
    small, _, _ = _scale(8, "k0")
    large, _, _ = _scale(32, "k0")
    a, b = codegen_llvm(small), codegen_llvm(large)
    assert compiled_signature(a, "k0")[0].shape == (2, 8)
    assert compiled_signature(b, "k0")[0].shape == (2, 32)
    assert compiled_signature(a, "k0")[0].shape == (2, 8)


def test_code_without_a_record_reads_as_none():
    assert compiled_signature("define void @old(ptr %a) {\n  ret void\n}\n", "old") is None


def test_a_record_is_escaped_into_the_module_and_read_back():
    sig = (ArgSignature('a "quoted" \\ name', (3,), "uint8", 3, False),)
    ir = (
        "define void @esc(ptr %a) #0 {\n  ret void\n}\n\n"
        + llvm_signature("esc", sig)
        + "\n\nattributes #0 = { nounwind }\n"
    )
    assert compiled_signature(ir, "esc") == sig


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (b"\xff", "not ASCII JSON"),
        (b'{"version": 0, "args": []}', "not of version 1"),
        (b'{"version": 1}', "malformed"),
        (b'{"version": 1, "args": [{"name": "x", "shape": [2], "dtype": "float32", '
         b'"nbytes": 4, "is_output": false}]}', "which its shape does not hold"),
        (b'{"version": 1, "args": [{"name": "x", "shape": [2], "dtype": "object", '
         b'"nbytes": 16, "is_output": false}]}', "dtype 'object'"),
        (b'{"version": 1, "args": [{"name": "x", "shape": ["2"], "dtype": "int8", '
         b'"nbytes": 2, "is_output": false}]}', "malformed"),
    ],
)  # fmt: skip
def test_a_record_that_is_not_one_is_refused(record, message):
    with pytest.raises(ValueError, match=message):
        decode_signature(record)


def test_encode_and_decode_round_trip():
    sig = (ArgSignature("x", (1, 3, 8, 8), "int8", 192, False),
           ArgSignature("y", (), "float64", 8, True))  # fmt: skip
    assert decode_signature(encode_signature(sig).encode()) == sig
