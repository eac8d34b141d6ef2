"""Elementwise accumulator stages are merged into their input's buffer when it is dead."""

from compiler.ir import (
    Allocate,
    Buffer,
    BufferStore,
    For,
    ForKind,
    IntImm,
    Pragma,
    PrimFunc,
    Var,
    seq,
    to_text,
)
from compiler.ir.pragma import ALU
from compiler.targets.vta import get_vta_target
from compiler.targets.vta.passes.inplace import make_alu_in_place

from .helpers import lower_dumps, small_conv

ACC = get_vta_target("default").sram.acc
alu_in_place = make_alu_in_place(ACC)


def nest(dst, value_of):
    i = Var("i")
    return Pragma(ALU, 1, For(i, IntImm(0), IntImm(4), ForKind.SERIAL,
                                BufferStore(dst, value_of(i), (i,))))  # fmt: skip


def test_conv_shift_and_clip_share_the_convolution_buffer():
    tgt, s, args = small_conv()
    text = lower_dumps(tgt, s, args)[1]["alu_in_place"]
    assert "allocate shr" not in text and "allocate clip" not in text
    assert "conv[0, i1, i2_1, i3_1, 0, i5_1] = conv[0, i1, i2_1, i3_1, 0, i5_1] >> 4" in text
    assert "= min(max(conv[0, i1_1, i2_2, i3_2, 0, i5_2], -128), 127)" in text


def test_a_buffer_read_later_is_not_overwritten():
    A, B, C = (Buffer(n, (4,), "int32", ACC) for n in "ABC")
    body = seq(nest(B, lambda i: A[i] + 1), nest(C, lambda i: A[i] + B[i]))
    f = PrimFunc("f", (), Allocate(A, Allocate(B, Allocate(C, body))))
    text = to_text(alu_in_place(f).body)
    # B cannot take A's place (A is read afterwards); C takes A's (dead after it)
    assert "B[i] = A[i] + 1" in text
    assert "A[i_1] = A[i_1] + B[i_1]" in text


def test_buffers_live_across_loop_iterations_are_kept():
    A, B = (Buffer(n, (4,), "int32", ACC) for n in "AB")
    t = Var("t")
    body = For(t, IntImm(0), IntImm(2), ForKind.SERIAL, nest(B, lambda i: A[i] + 1))
    f = PrimFunc("f", (), Allocate(A, Allocate(B, body)))
    assert "B[i] = A[i] + 1" in to_text(alu_in_place(f).body)
