"""Micro-op kernels: folding up to two loops into iter_out/iter_in, merging contiguous loops."""

import isa
from compiler.ir import Buffer, For, ForKind, IntImm, Pragma, PrimFunc, Var, seq, to_text
from compiler.targets.vta import get_vta_target
from compiler.targets.vta.calls import alu_uop, gemm_uop
from compiler.targets.vta.passes.fold_uop import UOP_KERNEL, make_fold_uop_loops

from .helpers import lower_dumps, small_conv

CFG = isa.load_config("default")
SRAM = get_vta_target("default").sram


def kernel_infos(stmt):
    out = []

    def walk(s):
        if isinstance(s, Pragma) and s.key is UOP_KERNEL:
            out.append(s.value)
        for c in s.children():
            if hasattr(c, "children") and not hasattr(c, "dtype"):
                walk(c)

    walk(stmt)
    return out


def loop(v, n, body):
    return For(v, IntImm(0), IntImm(n), ForKind.SERIAL, body)


def fold(body):
    f = PrimFunc("f", (), Pragma("coproc_scope", "compute", body))
    return make_fold_uop_loops(CFG)(f).body


def test_conv_gemm_folds_channels_and_rows_and_unrolls_the_window():
    tgt, s, args = small_conv(h=6, c_blocks=2, o_blocks=4)  # tile: 2 blocks x 6 rows x 6 cols
    text = lower_dumps(tgt, s, args)[1]["fold_uop_loops"]
    line = next(ln for ln in text.splitlines() if "= gemm loops=" in ln)
    # co: dst +36 entries, wgt +9 tiles (one 3x3 block per step); y: dst +6, src +8 (padded)
    assert "gemm loops=((2, 36, 0, 9), (6, 6, 8, 0)) folded=(ob, y)" in line


def test_elementwise_loops_merge_into_one():
    acc = Buffer("acc", (256,), "int32", SRAM.acc)
    a, b, c = Var("a"), Var("b"), Var("c")
    body = loop(a, 2, loop(b, 4, loop(c, 8, alu_uop(isa.AluOp.ADD, acc[(a * 32 + b * 8 + c) * 4],
                                                     3, use_imm=True))))  # fmt: skip
    (info,) = kernel_infos(fold(body))
    assert info.loops == ((64, 1, 0, 0),)
    assert [v.name for v in info.folded[0]] == ["a", "b", "c"]


def test_a_loop_whose_strides_differ_between_micro_ops_is_unrolled():
    acc = Buffer("acc", (256,), "int32", SRAM.acc)
    inp = Buffer("inp", (256,), "int8", SRAM.inp)
    wgt = Buffer("wgt", (256,), "int8", SRAM.wgt)
    i = Var("i")
    body = loop(i, 3, seq(gemm_uop(acc[i * 4], inp[i * 4], wgt[0]),
                          gemm_uop(acc[i * 8], inp[0], wgt[0])))  # fmt: skip
    (info,) = kernel_infos(fold(body))
    assert info.loops == ()


def test_different_instructions_are_separate_kernels():
    acc = Buffer("acc", (256,), "int32", SRAM.acc)
    i = Var("i")
    body = seq(
        loop(i, 4, alu_uop(isa.AluOp.SHR, acc[i * 4], 8, use_imm=True)),
        loop(i, 4, alu_uop(isa.AluOp.MIN, acc[i * 4], 127, use_imm=True)),
    )
    infos = kernel_infos(fold(body))
    assert [repr(k.signature) for k in infos] == ["alu shr imm=8", "alu min imm=127"]
    assert "pragma vta.uop_kernel" in to_text(fold(body))
