"""Tensorize: a scheduled nest matched against the GEMM declaration, and why one does not."""

import pytest

from compiler import te, topi
from compiler.build import lower
from compiler.errors import LoweringError
from compiler.schedule import create_schedule
from compiler.targets.vta import VTATargetError, get_vta_target
from compiler.targets.vta.intrin import gemm_intrinsic

from .helpers import lower_dumps, small_conv


def manual_conv(block_in=4, block_out=4, cache_weights=True, axis="bi", body=None):
    """A packed conv scheduled by hand with one tensorize, for mismatch messages."""
    tgt = get_vta_target("default")
    x = te.placeholder((1, 2, 4, 4, 1, block_in), "int8", name="X")
    w = te.placeholder((2, 2, 1, 1, block_out, block_in), "int8", name="W")
    if body is None:
        conv = topi.conv2d_nchwc(x, w, 1, 0, out_dtype="int32", name="conv")
    else:
        rc = te.reduce_axis(2, "rcb")
        ri = te.reduce_axis(block_in, "rci")
        conv = te.compute(
            (1, 2, 4, 4, 1, block_out),
            lambda n, ob, y, xx, bi, oi: te.sum(
                body(x[n, rc, y, xx, bi, ri], w[ob, rc, 0, 0, oi, ri]), axis=[rc, ri]
            ),
            name="conv",
            axis_names=("n", "ob", "y", "x", "bi", "oi"),
        )
    out = topi.cast(conv, "int8", name="out")
    s = create_schedule(out)
    s[conv].set_scope(tgt.sram.acc)
    xl = s.cache_read(x, tgt.sram.inp, [conv])
    stages = [xl]
    if cache_weights:
        stages.append(s.cache_read(w, tgt.sram.wgt, [conv]))
    s[conv].compute_at(s[out], s[out].leaf_iter_vars[0])
    names = ["rcb", "n", "ob", "y", "x", "ry", "rx", "bi", "oi", "rci"]
    by_name = {s[conv].axis_name(v): v for v in s[conv].leaf_iter_vars}
    s[conv].reorder(*(by_name[n] for n in names if n in by_name))
    rcb = by_name["rcb"]
    for st in stages:
        s[st].compute_at(s[conv], rcb)
        s[st].pragma(s[st].leaf_iter_vars[0], "dma_copy")
    s[conv].tensorize(axis, gemm_intrinsic(tgt.config))
    s[out].pragma(s[out].leaf_iter_vars[1], "dma_copy")
    return tgt, s, [x, w, out]


def test_matched_nests_become_gemm_and_reset_micro_ops():
    tgt, s, args = small_conv()
    _, dumps = lower_dumps(tgt, s, args)
    text = dumps["vta_tensorize"]
    assert "tensorize" not in text
    assert "vta.uop_gemm(address_of(conv[" in text
    assert "vta.uop_gemm_reset(address_of(conv[" in text
    # the micro-op addresses the tile's first element: tile indices are zero
    assert ", 0, 0]), address_of(conv_pad[" in text


def test_reduction_extent_mismatch_is_named():
    tgt, s, args = manual_conv(block_in=8)
    with pytest.raises(VTATargetError, match="loop rci has extent 8 but the intrinsic's "
                       "reduction k is 4"):  # fmt: skip
        lower(s, args, target=tgt)


def test_output_extent_mismatch_is_named():
    tgt, s, args = manual_conv(block_out=8)
    with pytest.raises(VTATargetError, match="loop oi has extent 8 but the intrinsic's axis j"):
        lower(s, args, target=tgt)


def test_operand_in_the_wrong_scope_is_named():
    tgt, s, args = manual_conv(cache_weights=False)
    with pytest.raises(VTATargetError, match="operand 'wgt' \\(W\\) is in scope global, the "
                       "intrinsic needs local.wgt_buffer"):  # fmt: skip
        lower(s, args, target=tgt)


def test_tensorizing_too_few_loops_is_not_element_aligned():
    tgt, s, args = manual_conv(axis="oi")
    with pytest.raises(VTATargetError, match="tile dimension 0"):
        lower(s, args, target=tgt)


def test_a_different_body_is_reported():
    def added(a, b):
        return a.astype("int32") + b.astype("int32")

    tgt, s, args = manual_conv(body=added)
    with pytest.raises(VTATargetError, match="the intrinsic computes"):
        lower(s, args, target=tgt)


def test_operands_may_be_swapped():
    def swapped(a, b):
        return b.astype("int32") * a.astype("int32")

    tgt, s, args = manual_conv(body=swapped)
    assert "vta.uop_gemm(" in lower_dumps(tgt, s, args)[1]["vta_tensorize"]


def test_intrinsic_of_another_core_is_rejected():
    big = get_vta_target("vta-1x16x16")
    tgt, s, args = small_conv("default")
    # the schedule's buffers belong to the default configuration: refused by name
    with pytest.raises(LoweringError, match="stage conv_pad: scope local.inp_buffer was made "
                       "for another configuration"):  # fmt: skip
        lower(s, args, target=big)
