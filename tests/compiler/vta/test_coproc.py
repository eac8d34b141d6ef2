"""Coproc scopes and dependency tokens (VTA's CoProcInstDepDetector) on small programs."""

import pytest

import isa
from compiler.ir import Allocate, Buffer, For, ForKind, IntImm, PrimFunc, Var, seq, to_text
from compiler.targets.vta import get_vta_target
from compiler.targets.vta.calls import (
    alu_uop,
    dma_load,
    dma_store,
    gemm_reset_uop,
    gemm_uop,
)
from compiler.targets.vta.passes.coproc import annotate_coproc_scopes, inject_coproc_sync
from compiler.topi.vta import Conv2dKnobs

from .helpers import lower_dumps, small_conv

SRAM = get_vta_target("default").sram


def _buffers() -> tuple[Buffer, ...]:
    """DRAM ``A`` (inputs and weights) and ``O``, and the inp, wgt and acc tiles."""
    return (
        Buffer("A", (64,), "int8"),
        Buffer("O", (16,), "int8"),
        Buffer("inp", (16,), "int8", SRAM.inp),
        Buffer("wgt", (16,), "int8", SRAM.wgt),
        Buffer("acc", (16,), "int32", SRAM.acc),
    )


def matmul_like():
    """reset; for ko: load, gemm; store -- the shape of VTA's matrix-multiply example."""
    A, O, inp, wgt, acc = _buffers()
    ko = Var("ko")
    body = seq(
        gemm_reset_uop(acc[0]),
        For(ko, IntImm(0), IntImm(4), ForKind.SERIAL, seq(
            dma_load(isa.MemType.INP, inp[0], A[ko * 16], 1, 4, 4),
            dma_load(isa.MemType.WGT, wgt[0], A[ko * 16], 1, 1, 1),
            gemm_uop(acc[0], inp[0], wgt[0]),
        )),
        dma_store(acc[0], O[0], 1, 4, 4),
    )  # fmt: skip
    body = Allocate(inp, Allocate(wgt, Allocate(acc, body)))
    return PrimFunc("f", (A, O), body)


def test_blocks_are_scoped_and_same_module_neighbours_share_one():
    text = to_text(annotate_coproc_scopes(matmul_like()).body)
    assert text.count("pragma coproc_scope = 'load':") == 1  # both loads in one block
    assert text.count("pragma coproc_scope = 'compute':") == 2
    assert text.count("pragma coproc_scope = 'store':") == 1


def tokens(text):
    return [ln.strip() for ln in text.splitlines() if "dep_" in ln or "coproc_scope" in ln
            or ln.strip().startswith("for ")]  # fmt: skip


def test_push_after_pop_before_loop_carried_precharge_and_drain():
    f = inject_coproc_sync(annotate_coproc_scopes(matmul_like()))
    assert tokens(to_text(f.body)) == [
        "pragma coproc_scope = 'compute':",  # the reset: no buffer of the load module
        "vta.dep_push(2, 1)",  # pre-charges the loop's compute->load pair
        "for ko in range(4):",
        "pragma coproc_scope = 'load':",
        "vta.dep_pop(2, 1)",
        "vta.dep_push(1, 2)",
        "pragma coproc_scope = 'compute':",
        "vta.dep_pop(1, 2)",
        "vta.dep_push(2, 1)",  # loop-carried
        "vta.dep_pop(2, 1)",  # drains the last loop-carried token
        "vta.dep_push(2, 3)",
        "pragma coproc_scope = 'store':",
        "vta.dep_pop(2, 3)",
    ]


def test_each_virtual_thread_carries_its_own_tokens():
    knobs = Conv2dKnobs(tile_h=3, tile_w=6, tile_ci=1, tile_co=2, oc_nthread=2)
    tgt, s, args = small_conv(knobs=knobs)  # 2 threads on output channels, 2 row tiles
    dumps = lower_dumps(tgt, s, args)[1]
    before = dumps["coproc_sync"]
    after = dumps["expand_virtual_threads"]
    # per thread: one pre-charge of store->compute for the loop over row tiles
    assert before.count("vta.dep_push(3, 2)") == 2  # pre-charge + loop-carried
    assert after.count("vta.dep_push(3, 2)") == 4
    for pair in ("(1, 2)", "(2, 1)", "(2, 3)", "(3, 2)"):
        assert after.count("dep_push" + pair) == 2 * before.count("dep_push" + pair)
        assert after.count("dep_pop" + pair) == 2 * before.count("dep_pop" + pair)


def test_virtual_threads_must_enclose_the_program():
    from compiler import te, topi
    from compiler.build import lower
    from compiler.schedule import create_schedule
    from compiler.targets.vta import VTATargetError

    tgt = get_vta_target("default")
    A = te.placeholder((4, 4, 4), "int32", name="A")
    a_acc = te.compute(A.shape, lambda i, j, k: A[i, j, k], name="A_acc")
    out = topi.cast(a_acc, "int8", name="out")
    s = create_schedule(out)
    s[a_acc].set_scope(tgt.sram.acc)
    i, j, k = s[out].leaf_iter_vars
    jo, ji = s[out].split(j, factor=2)
    s[out].bind(jo, "cthread")  # inside the serial loop i
    s[a_acc].compute_at(s[out], ji)
    s[a_acc].pragma(s[a_acc].leaf_iter_vars[0], "dma_copy")
    s[out].pragma(k, "dma_copy")
    msg = "virtual thread loop i1.outer \\(cthread\\) is inside the loop i0"
    with pytest.raises(VTATargetError, match=msg):
        lower(s, [A, out], target=tgt)


def rounds_like(out_is_input: bool = False):
    """for round: reset; for ko: load, gemm; epilogue (ALU); store -- a conv's rounds of
    tiles. With ``out_is_input`` the store writes the buffer the loads read."""
    A = Buffer("A", (256,), "int8")
    O = A if out_is_input else Buffer("O", (64,), "int8")
    inp = Buffer("inp", (16,), "int8", SRAM.inp)
    wgt = Buffer("wgt", (16,), "int8", SRAM.wgt)
    acc = Buffer("acc", (16,), "int32", SRAM.acc)
    r, ko = Var("r"), Var("ko")
    body = For(r, IntImm(0), IntImm(3), ForKind.SERIAL, seq(
        gemm_reset_uop(acc[0]),
        For(ko, IntImm(0), IntImm(4), ForKind.SERIAL, seq(
            dma_load(isa.MemType.INP, inp[0], A[r * 64 + ko * 16], 1, 4, 4),
            dma_load(isa.MemType.WGT, wgt[0], A[ko * 16], 1, 1, 1),
            gemm_uop(acc[0], inp[0], wgt[0]),
        )),
        alu_uop(isa.AluOp.SHR, acc[0], 4, use_imm=True),
        dma_store(acc[0], O[r * 16 + 128], 1, 4, 4),
    ))  # fmt: skip
    body = Allocate(inp, Allocate(wgt, Allocate(acc, body)))
    return PrimFunc("f", (A,) if out_is_input else (A, O), body)


def test_next_round_first_load_waits_for_the_last_gemm_not_the_epilogue():
    text = to_text(inject_coproc_sync(annotate_coproc_scopes(rounds_like())).body)
    # the round loop carries compute->load from the last GEMM to the next round's first load:
    # pre-charged once before it and drained once after it, never inside a round
    assert tokens(text) == [
        "vta.dep_push(2, 1)",
        "vta.dep_push(3, 2)",
        "for r in range(3):",
        "pragma coproc_scope = 'compute':",  # reset
        "vta.dep_pop(3, 2)",
        "for ko in range(4):",
        "pragma coproc_scope = 'load':",
        "vta.dep_pop(2, 1)",
        "vta.dep_push(1, 2)",
        "pragma coproc_scope = 'compute':",
        "vta.dep_pop(1, 2)",
        "vta.dep_push(2, 1)",
        "pragma coproc_scope = 'compute':",  # the epilogue: no compute<->load token
        "vta.dep_push(2, 3)",
        "pragma coproc_scope = 'store':",
        "vta.dep_pop(2, 3)",
        "vta.dep_push(3, 2)",
        "vta.dep_pop(2, 1)",
        "vta.dep_pop(3, 2)",
    ]


def test_store_into_a_loaded_buffer_keeps_one_chain_through_compute():
    text = to_text(inject_coproc_sync(annotate_coproc_scopes(rounds_like(True))).body)
    # the next round's load may read what the store wrote: it waits for the reset, which
    # waits for the store (there is no store->load queue)
    toks = tokens(text)
    reset = toks.index("pragma coproc_scope = 'compute':")
    assert toks[reset + 1 : reset + 3] == ["vta.dep_pop(3, 2)", "vta.dep_push(2, 1)"]
    assert toks.count("vta.dep_pop(2, 1)") == 2  # the loop's own and the drain after it


def test_compute_load_tokens_guard_the_gemm_inside_a_block():
    """A reset in the same block as the GEMM runs before the block's load token is popped."""
    A, O, inp, wgt, acc = _buffers()
    body = seq(
        dma_load(isa.MemType.INP, inp[0], A[0], 1, 4, 4),
        dma_load(isa.MemType.WGT, wgt[0], A[16], 1, 1, 1),
        gemm_reset_uop(acc[0]),
        gemm_uop(acc[0], inp[0], wgt[0]),
        alu_uop(isa.AluOp.SHR, acc[0], 4, use_imm=True),
        dma_store(acc[0], O[0], 1, 4, 4),
    )
    func = PrimFunc("f", (A, O), Allocate(inp, Allocate(wgt, Allocate(acc, body))))
    lines = [ln.strip() for ln in to_text(inject_coproc_sync(annotate_coproc_scopes(func)).body)
             .splitlines()]  # fmt: skip
    calls = [ln.split("(address_of")[0] for ln in lines if ln.startswith("vta.")]
    start = calls.index("vta.uop_gemm_reset")
    assert calls[start : start + 4] == [
        "vta.uop_gemm_reset", "vta.dep_pop(1, 2)", "vta.uop_gemm", "vta.uop_alu_shr_imm"
    ]  # fmt: skip
