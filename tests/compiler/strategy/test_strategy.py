"""compiler.strategy: every operator's compute with its CPU schedule, built with LLVM and
checked against numpy (onnxruntime for pooling's ceil_mode/dilation rules), and fused groups
(convolution + bias + relu, + residual add, dense + bias, pooling) against numpy."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler import te, topi
from compiler.build import build
from compiler.errors import CompilerError, ScheduleError
from compiler.strategy import OPS, StrategyError, compute, schedule, schedule_group
from tests.compiler import reference

RNG = np.random.default_rng(7)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def ph(arr: np.ndarray, name: str) -> te.Tensor:
    return te.placeholder(arr.shape, arr.dtype.name, name=name)


def run(outputs, anchor, inputs, arrays, **knobs):
    s = schedule(outputs, anchor, **knobs)
    f = build(s, [*inputs, *outputs], target="cpu")
    got = f(*arrays)
    return list(got) if isinstance(got, tuple) else [got]


def close(got, want, tol=1e-4):
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


# Convolution ------------------------------------------------------------------------------------

PACKED = [
    # (C, O, H, W, K, stride, padding, bi, bo, epilogue)
    (3, 16, 13, 11, 3, 2, (1, 1, 1, 1), 3, 16, "bias_relu"),
    (3, 16, 10, 10, 3, 1, (1, 1, 1, 1), 16, 16, "bias_relu"),  # input padded to a block
    (32, 16, 9, 9, 3, 1, (1, 0, 2, 1), 16, 8, "bias_add_relu"),
    (16, 32, 8, 8, 1, 2, (0, 0, 0, 0), 16, 16, "bias"),
    (8, 16, 7, 7, 3, 1, (1, 1, 1, 1), 4, 8, "none"),
    (16, 16, 14, 14, 5, 1, (2, 2, 2, 2), 8, 16, "bias_add_relu"),
]


def conv_group(c, o, h, w, k, stride, padding, bi, bo, epilogue):
    cp = -(-c // bi) * bi
    x, wt = rand(1, c, h, w), rand(o, c, k, k)
    bias = rand(o)
    xp = topi.pack_data(np.pad(x, ((0, 0), (0, cp - c), (0, 0), (0, 0))), 1, bi)
    wp = topi.pack_kernel(np.pad(wt, ((0, 0), (0, cp - c), (0, 0), (0, 0))), bo, bi, "OIHWio")
    X, W = ph(xp, "x"), ph(wp, "w")
    attrs = dict(
        strides=(stride, stride),
        padding=padding,
        dilation=(1, 1),
        groups=1,
        data_layout=f"NCHW1n{bi}c",
        kernel_layout=f"OIHW{bi}i{bo}o",
    )
    conv = compute("conv2d", [X, W], attrs, "conv")
    want = reference.conv2d_nchw(x, wt, (stride,) * 2, padding, (1, 1), 1, np.float32)
    inputs, arrays, y = [X, W], [xp, wp], conv
    if epilogue != "none":
        bp = bias.reshape(1, o // bo, 1, 1, 1, bo)
        B = ph(bp, "b")
        y = compute("add", [y, B], {}, "bias")
        inputs.append(B)
        arrays.append(bp)
        want = want + bias[None, :, None, None]
    if epilogue == "bias_add_relu":
        res = rand(*want.shape)
        R = ph(topi.pack_data(res, 1, bo), "res")
        y = compute("add", [y, R], {}, "residual")
        inputs.append(R)
        arrays.append(topi.pack_data(res, 1, bo))
        want = want + res
    if epilogue.endswith("relu"):
        y = compute("relu", [y], {}, "relu")
        want = np.maximum(want, 0)
    return y, conv, inputs, arrays, want


@pytest.mark.parametrize("case", PACKED)
def test_packed_conv2d_group(case):
    y, conv, inputs, arrays, want = conv_group(*case)
    g = schedule_group([y], conv)
    assert g.kind == "conv2d_packed"
    assert {"ow_block", "oc_blocks", "parallel", "reduce_order", "ic_block"} <= set(g.knobs)
    if y is not conv:  # the epilogue is computed at the convolution's register tile
        assert "local" in str(g.schedule[conv].scope)
    got = build(g.schedule, [*inputs, y], target="cpu")(*arrays)
    close(topi.unpack_data(got), want, 1e-3)


def test_packed_conv2d_knobs_are_replayed():
    y, conv, inputs, arrays, want = conv_group(16, 32, 6, 6, 3, 1, (1, 1, 1, 1), 16, 16, "bias")
    got = run([y], conv, inputs, arrays, ow_block=3, oc_blocks=2, parallel=False)[0]
    close(topi.unpack_data(got), want, 1e-3)
    assert schedule_group([y], conv, knobs={"ow_block": 3}).knobs["ow_block"] == 3
    with pytest.raises(ScheduleError, match="x_block"):
        schedule_group([y], conv, knobs={"x_block": 4})


@settings(max_examples=4)
@given(
    c=st.sampled_from([3, 8, 16]),
    o_blocks=st.integers(1, 2),
    hw=st.integers(5, 12),
    k=st.sampled_from([1, 3]),
    stride=st.integers(1, 2),
    pad=st.integers(0, 2),
)
def test_packed_conv2d_random(c, o_blocks, hw, k, stride, pad):
    y, conv, inputs, arrays, want = conv_group(
        c, 8 * o_blocks, hw, hw, k, stride, (pad,) * 4, c, 8, "bias_add_relu"
    )
    close(topi.unpack_data(run([y], conv, inputs, arrays)[0]), want, 1e-3)


@pytest.mark.parametrize(
    "c,o,hw,k,stride,padding,knobs",
    [
        (32, 24, 10, 1, 1, (0, 0, 0, 0), {}),  # 3 half blocks: a 3x5 register tile
        (16, 40, 9, 3, 2, (1, 1, 1, 1), {}),
        (16, 16, 7, 3, 1, (1, 1, 1, 1), dict(ow_block=7, oc_blocks=1, outer_order="h_oc")),
        (16, 24, 8, 1, 1, (0, 0, 0, 0), dict(oh_block=2, ow_block=4, oc_blocks=3)),
    ],
)
def test_packed_conv2d_with_an_nchw_output(c, o, hw, k, stride, padding, knobs):
    """A convolution whose only reader re-stores it in NCHW (the narrow-block convolutions
    of EfficientNet-Lite2) keeps its register tile local and stores it transposed."""
    y, conv, inputs, arrays, want = conv_group(c, o, hw, hw, k, stride, padding, 16, 8, "none")
    flat = compute(
        "layout_transform", [conv], {"src_layout": "NCHW1n8c", "dst_layout": "NCHW"}, "unpack"
    )
    g = schedule_group([flat], conv, knobs=knobs)
    assert "local" in str(g.schedule[conv].scope)
    assert all(g.knobs[name] == value for name, value in knobs.items())
    close(build(g.schedule, [*inputs, flat], target="cpu")(*arrays), want, 1e-3)


@pytest.mark.parametrize("epilogue", ["bias", "bias_add_relu", "silu"])
def test_packed_conv2d_with_an_epilogue_and_an_nchw_output(epilogue):
    """A convolution whose epilogue (a bias, a residual, a SiLU) is re-stored in NCHW keeps the
    fused register tile: the epilogue runs on the tile, vectorized over the channel block (one
    16-lane ``exp`` for the SiLU, not one per column vector), then the tile is stored
    transposed; nothing of the convolution is written whole."""
    y, conv, inputs, arrays, want = conv_group(
        16, 32, 9, 9, 3, 1, (1, 1, 1, 1), 16, 16, "bias" if epilogue == "silu" else epilogue
    )
    if epilogue == "silu":
        y = compute("multiply", [y, compute("sigmoid", [y], {}, "sig")], {}, "silu")
        want = want / (1 + np.exp(-want))
    flat = compute(
        "layout_transform", [y], {"src_layout": "NCHW1n16c", "dst_layout": "NCHW"}, "unpack"
    )
    g = schedule_group([flat], conv)
    assert "local" in str(g.schedule[conv].scope)
    mod = build(g.schedule, [*inputs, flat], target="cpu")
    close(mod(*arrays), want, 1e-3)
    code = mod.llvm_ir
    assert "@malloc" not in code  # no buffer of the whole convolution
    if epilogue == "silu":  # every exp on a whole channel block
        assert set(re.findall(r"call [^@]*@vtac\.exp\.(\w+)\(", code)) == {"v16f32"}


def test_packed_conv2d_with_an_nchw_epilogue_after_the_transform():
    """A residual added after the transform to NCHW: the group still keeps the register tile
    and computes the right values."""
    y, conv, inputs, arrays, want = conv_group(16, 32, 9, 9, 3, 1, (1, 1, 1, 1), 16, 16, "bias")
    flat = compute(
        "layout_transform", [y], {"src_layout": "NCHW1n16c", "dst_layout": "NCHW"}, "unpack"
    )
    res = rand(*want.shape)
    R = ph(res, "res")
    out = compute("add", [flat, R], {}, "residual")
    g = schedule_group([out], conv)
    assert "local" in str(g.schedule[conv].scope)
    close(build(g.schedule, [*inputs, R, out], target="cpu")(*arrays, res), want + res, 1e-3)


def test_default_register_tile_stacks_rows():
    """A 4x2 register tile (8 accumulators, a width of 52) takes two output rows: 16."""
    x, wt = rand(1, 32, 52, 52), rand(32, 32, 3, 3)
    xp, wp = topi.pack_data(x, 1, 16), topi.pack_kernel(wt, 16, 16, "OIHWio")
    X, W = ph(xp, "x"), ph(wp, "w")
    attrs = dict(strides=(1, 1), padding=(1, 1, 1, 1), dilation=(1, 1), groups=1,
                 data_layout="NCHW1n16c", kernel_layout="OIHW16i16o")  # fmt: skip
    conv = compute("conv2d", [X, W], attrs, "conv")
    g = schedule_group([conv], conv)
    assert (g.knobs["oh_block"], g.knobs["ow_block"], g.knobs["oc_blocks"]) == (2, 4, 2)
    want = reference.conv2d_nchw(x, wt, (1, 1), (1, 1, 1, 1), (1, 1), 1, np.float32)
    close(topi.unpack_data(build(g.schedule, [X, W, conv], target="cpu")(xp, wp)), want, 1e-3)


@pytest.mark.parametrize(
    "n_oc,width,tile",
    [
        (4, 56, (8, 2)),  # ResNet-18's tile: two channel blocks x a width divisor in 4..8
        (32, 7, (7, 2)),
        (3, 65, (5, 3)),  # odd channel blocks: several per tile
        (18, 33, (3, 6)),  # no width divisor in 4..8
        (7, 15, (3, 7)),
        (9, 56, (8, 3)),  # 24 accumulators, channel blocks inside the pixels
        (3, 104, (8, 3)),
        (6, 26, (13, 2)),  # 26, not 13 columns of one block
        (24, 13, (13, 2)),  # a prime width: 13 columns x 2 blocks
        (16, 38, (2, 4)),  # 2 columns x 2 stacked rows, not 19 columns of one block
        (1, 80, (20, 1)),  # one block: at most 21 columns (TILE_VECTORS)
        (80, 9, (3, 8)),  # EfficientNet-Lite2's 9x9 head: 24, channel blocks outside
        (15, 17, (17, 1)),  # a prime width: the widest column block
    ],
)
def test_register_tile_heuristic(n_oc, width, tile):
    from compiler.topi.cpu.conv2d import (
        VECTOR_REGISTERS,
        conv2d_nchwc_default_knobs,
        register_tile_knobs,
        tile_registers,
    )

    x = te.placeholder((1, 4, width, width, 1, 16), name="x")
    w = te.placeholder((n_oc, 4, 1, 1, 16, 16), name="w")
    conv = topi.conv2d_nchwc(x, w, kernel_layout="OIHWio")
    knobs = register_tile_knobs(conv)
    assert (knobs["ow_block"], knobs["oc_blocks"]) == tile
    # the channel blocks outside the pixels whenever the registers fit so, else inside
    chosen = conv2d_nchwc_default_knobs(conv)
    shape = (chosen["oh_block"], chosen["ow_block"], chosen["oc_blocks"])
    outside = tile_registers(*shape, "oc_w") <= VECTOR_REGISTERS
    assert chosen["tile_order"] == ("oc_w" if outside else "w_oc")
    assert tile_registers(*shape, chosen["tile_order"]) <= VECTOR_REGISTERS
    # measured, not derived: the tiles that ran faster with the blocks inside (YOLOX's 13x2 and
    # 8x3), and every other one outside (Lite2's 3x8 head ran 1.3x slower inside)
    inside = {(9, 56), (3, 104), (6, 26), (24, 13)}
    assert chosen["tile_order"] == ("w_oc" if (n_oc, width) in inside else "oc_w")


def test_packed_grouped_conv2d():
    x, wt, b = rand(1, 32, 7, 7), rand(32, 16, 3, 3), rand(32)
    xp, wp = topi.pack_data(x, 1, 16), topi.pack_kernel(wt, 16, 16, "OIHWio")
    bp = b.reshape(1, 2, 1, 1, 1, 16)
    X, W, B = ph(xp, "x"), ph(wp, "w"), ph(bp, "b")
    attrs = dict(
        padding=(1, 1, 1, 1), groups=2, data_layout="NCHW1n16c", kernel_layout="OIHW16i16o"
    )
    conv = compute("conv2d", [X, W], attrs, "gconv")
    y = compute("add", [conv, B], {}, "bias")
    got = run([y], conv, [X, W, B], [xp, wp, bp])[0]
    want = reference.conv2d_nchw(x, wt, (1, 1), (1, 1, 1, 1), (1, 1), 2, np.float32)
    close(topi.unpack_data(got), want + b[None, :, None, None], 1e-3)


NCHW = [
    # (C, O, H, W, K, stride, padding, dilation, groups)
    (4, 6, 9, 10, 3, 1, (1, 1, 1, 1), (1, 1), 2),
    (8, 8, 12, 12, 3, 2, (1, 1, 1, 1), (1, 1), 8),  # depthwise
    (3, 5, 8, 7, 3, 1, (2, 1, 0, 2), (2, 1), 1),
]


@pytest.mark.parametrize("case", NCHW)
def test_nchw_conv2d_group(case):
    c, o, h, w, k, stride, padding, dilation, groups = case
    x, wt, b = rand(1, c, h, w), rand(o, c // groups, k, k), rand(o)
    X, W, B = ph(x, "x"), ph(wt, "w"), ph(b, "b")
    attrs = dict(strides=(stride, stride), padding=padding, dilation=dilation, groups=groups)
    conv = compute("conv2d", [X, W, B], attrs, "conv")
    y = compute("relu", [conv], {}, "relu")
    g = schedule_group([y], conv)
    assert g.kind == "conv2d_nchw"
    got = build(g.schedule, [X, W, B, y], target="cpu")(x, wt, b)
    want = reference.conv2d_nchw(x, wt, (stride,) * 2, padding, dilation, groups, np.float32)
    close(got, np.maximum(want + b[None, :, None, None], 0), 1e-3)


NCHW_TILES = [
    # (C, O, H, W, groups, knobs): 1x1 projections of EfficientNet-Lite2's shapes (output
    # channels that do not divide into packed blocks, widths with no divisor near a vector)
    (48, 88, 17, 17, 1, {}),
    (40, 24, 5, 33, 1, {}),
    (24, 12, 4, 13, 1, {"x_block": 13, "oc_block": 3}),
    (16, 16, 6, 7, 16, {"oc_block": 4}),  # depthwise, channels of a tile in different groups
]


@pytest.mark.parametrize("case", NCHW_TILES)
def test_nchw_conv2d_register_tile(case):
    c, o, h, w, groups, knobs = case
    x, wt, res = rand(1, c, h, w), rand(o, c // groups, 1, 1), rand(1, o, h, w)
    X, W, R = ph(x, "x"), ph(wt, "w"), ph(res, "res")
    conv = compute("conv2d", [X, W], dict(groups=groups), "conv")
    y = compute("add", [conv, R], {}, "residual")
    g = schedule_group([y], conv, knobs=knobs)
    assert g.kind == "conv2d_nchw"
    tile = {k: g.knobs[k] for k in ("x_block", "oc_block")}
    assert w % tile["x_block"] == 0 and o % tile["oc_block"] == 0
    assert tile["x_block"] > 1 and tile["oc_block"] > 1
    for key, value in knobs.items():
        assert tile[key] == value
    got = build(g.schedule, [X, W, R, y], target="cpu")(x, wt, res)
    want = reference.conv2d_nchw(x, wt, (1, 1), (0, 0, 0, 0), (1, 1), groups, np.float32)
    close(got, want + res, 1e-4)
    # the chosen knobs rebuild the same schedule
    again = schedule_group([y], conv, knobs={k: v for k, v in g.knobs.items()})
    assert dict(again.knobs) == dict(g.knobs)


@pytest.mark.parametrize(
    "knobs, match", [({"x_block": 5}, "x_block=5 does not divide the 17 output columns"),
                     ({"oc_block": 7}, "oc_block=7 does not divide the 88 output channels")]
)  # fmt: skip
def test_nchw_conv2d_tile_errors(knobs, match):
    X, W = te.placeholder((1, 48, 17, 17), name="x"), te.placeholder((88, 48, 1, 1), name="w")
    conv = compute("conv2d", [X, W], {}, "conv")
    with pytest.raises(ScheduleError, match=match):
        schedule_group([conv], conv, knobs=knobs)


def test_packed_depthwise_conv2d():
    c, bc = 32, 16
    x, wt = rand(1, c, 9, 9), rand(c, 1, 3, 3)
    xp = topi.pack_data(x, 1, bc)
    wp = np.ascontiguousarray(wt.reshape(c // bc, bc, 1, 3, 3).transpose(0, 2, 3, 4, 1))[
        :, :, :, :, None, :
    ]
    X, W = ph(xp, "x"), ph(np.ascontiguousarray(wp), "w")
    attrs = dict(padding=(1, 1, 1, 1), groups=c, data_layout="NCHW1n16c", kernel_layout="OIHW1i16o")
    conv = compute("conv2d", [X, W], attrs, "dw")
    y = compute("relu", [conv], {}, "relu")
    assert schedule_group([y], conv).kind == "depthwise_conv2d_packed"
    wpc = np.ascontiguousarray(wp)
    want = reference.conv2d_nchw(x, wt, (1, 1), (1, 1, 1, 1), (1, 1), c, np.float32)
    close(topi.unpack_data(run([y], conv, [X, W], [xp, wpc])[0]), np.maximum(want, 0), 1e-3)
    close(topi.unpack_data(run([conv], conv, [X, W], [xp, wpc])[0]), want, 1e-3)


@pytest.mark.parametrize(
    "c, hw, k, stride, knobs",
    [
        (48, 10, 3, 1, {}),
        (48, 10, 3, 1, {"ow_block": 5, "cb_block": 3, "unroll_window": True}),
        (32, 17, 5, 2, {"ow_block": 9, "cb_block": 2}),
        (16, 7, 5, 1, {"unroll_window": True}),
        (32, 9, 3, 1, {"pad_at": "plane", "ow_block": 3}),
        (32, 11, 5, 2, {"pad_at": "row"}),
    ],
)
def test_packed_depthwise_register_tile(c, hw, k, stride, knobs):
    bc, pad = 16, k // 2
    x, wt, b = rand(1, c, hw, hw), rand(c, 1, k, k), rand(c)
    xp = topi.pack_data(x, 1, bc)
    wp = np.ascontiguousarray(
        wt.reshape(c // bc, bc, 1, k, k).transpose(0, 2, 3, 4, 1)[..., None, :]
    )
    bp = b.reshape(1, c // bc, 1, 1, 1, bc)
    X, W, B = ph(xp, "x"), ph(wp, "w"), ph(bp, "b")
    attrs = dict(padding=(pad,) * 4, strides=(stride,) * 2, groups=c,
                 data_layout="NCHW1n16c", kernel_layout="OIHW1i16o")  # fmt: skip
    conv = compute("conv2d", [X, W], attrs, "dw")
    y = compute("clip", [compute("add", [conv, B], {}, "bias")], dict(a_min=0.0, a_max=6.0), "r6")
    g = schedule_group([y], conv, knobs=knobs)
    assert g.kind == "depthwise_conv2d_packed"
    for key, value in knobs.items():
        assert g.knobs[key] == value
    want = reference.conv2d_nchw(x, wt, (stride,) * 2, (pad,) * 4, (1, 1), c, np.float32)
    got = build(g.schedule, [X, W, B, y], target="cpu")(xp, wp, bp)
    close(topi.unpack_data(got), np.clip(want + b[None, :, None, None], 0, 6))
    alone = schedule_group([conv], conv, knobs=knobs)
    close(topi.unpack_data(build(alone.schedule, [X, W, conv], target="cpu")(xp, wp)), want)


@pytest.mark.parametrize("hw,k,where", [(17, 5, "plane"), (17, 3, "row"), (200, 5, "row")])
def test_packed_depthwise_pad_at_default(hw, k, where):
    """The padded plane is computed whole for 5x5 windows when it fits half of L2."""
    x = te.placeholder((1, 2, hw, hw, 1, 16), name="x")
    w = te.placeholder((2, 1, k, k, 1, 16), name="w")
    conv = topi.conv2d_nchwc(x, w, 1, k // 2, groups=32, kernel_layout="OIHWio")
    assert schedule_group([conv], conv).knobs["pad_at"] == where


def test_packed_depthwise_tile_errors():
    X = te.placeholder((1, 3, 10, 10, 1, 16), name="x")
    W = te.placeholder((3, 1, 3, 3, 1, 16), name="w")
    attrs = dict(padding=(1,) * 4, groups=48, data_layout="NCHW1n16c", kernel_layout="OIHW1i16o")
    conv = compute("conv2d", [X, W], attrs, "dw")
    with pytest.raises(ScheduleError, match="ow_block=3 does not divide the 10 output columns"):
        schedule_group([conv], conv, knobs={"ow_block": 3})
    with pytest.raises(ScheduleError, match="cb_block=2 does not divide the 3 channel blocks"):
        schedule_group([conv], conv, knobs={"cb_block": 2})
    with pytest.raises(ScheduleError, match="pad_at='col' is not one of"):
        schedule_group([conv], conv, knobs={"pad_at": "col"})


def test_group_with_a_producer_before_the_anchor():
    """A layout transform feeding the convolution is materialised, not inlined into it."""
    x, wt = rand(1, 16, 6, 6), rand(16, 16, 3, 3)
    X, W = ph(x, "x"), ph(topi.pack_kernel(wt, 16, 16, "OIHWio"), "w")
    packed = compute(
        "layout_transform", [X], {"src_layout": "NCHW", "dst_layout": "NCHW1n16c"}, "pack"
    )
    attrs = dict(padding=(1, 1, 1, 1), data_layout="NCHW1n16c", kernel_layout="OIHW16i16o")
    conv = compute("conv2d", [packed, W], attrs, "conv")
    s = schedule([conv], conv)
    assert type(s["pack"].attach).__name__ == "AttachRoot"
    got = build(s, [X, W, conv], target="cpu")(x, topi.pack_kernel(wt, 16, 16, "OIHWio"))
    want = reference.conv2d_nchw(x, wt, (1, 1), (1, 1, 1, 1), (1, 1), 1, np.float32)
    close(topi.unpack_data(got), want, 1e-3)


def test_an_elementwise_chain_before_a_reduction_is_one_stage():
    """A chain of elementwise producers before a reduction (Magika's GELU before its max) is
    inlined into its last link, which alone is materialised; a producer read twice stays."""
    x = rand(2, 6, 40)
    X = ph(x, "x")
    cube = compute("multiply", [X, X], {}, "sq")  # reads x twice: x is a placeholder anyway
    cube = compute("multiply", [cube, X], {}, "cube")
    act = compute("tanh", [cube], {}, "act")
    red = compute("max", [act], {"axes": (2,), "keepdims": True}, "red")
    s = schedule([red], red)
    assert type(s["sq"].attach).__name__ == "AttachInline"
    assert type(s["cube"].attach).__name__ == "AttachInline"
    assert type(s["act"].attach).__name__ == "AttachRoot"
    got = build(s, [X, red], target="cpu")(x)
    close(got, np.tanh(x * x * x).max(axis=2, keepdims=True), 1e-5)
    # a producer two stages read is computed once, at the root
    both = compute("add", [cube, act], {}, "both")
    red2 = compute("max", [both], {"axes": (2,), "keepdims": True}, "red2")
    s2 = schedule([red2], red2)
    assert type(s2["cube"].attach).__name__ == "AttachRoot"
    close(build(s2, [X, red2], target="cpu")(x), (x**3 + np.tanh(x**3)).max(2, keepdims=True), 1e-4)


# Dense and matmul -------------------------------------------------------------------------------


@pytest.mark.parametrize("n,k,m", [(1, 64, 40), (3, 20, 7)])
def test_dense_bias_relu_group(n, k, m):
    x, w, b = rand(n, k), rand(m, k), rand(m)
    X, W, B = ph(x, "x"), ph(w, "w"), ph(b, "b")
    d = compute("dense", [X, W, B], {}, "fc")
    y = compute("relu", [d], {}, "fc_relu")
    g = schedule_group([y], d)
    assert g.kind == "dense"
    got = build(g.schedule, [X, W, B, y], target="cpu")(x, w, b)
    close(got, np.maximum(x @ w.T + b, 0), 1e-3)
    # Without an epilogue the dense (+ bias) is the group's output.
    close(run([d], d, [X, W, B], [x, w, b])[0], x @ w.T + b, 1e-3)


@pytest.mark.parametrize(
    "sa,sb",
    [((9, 20), (20, 40)), ((2, 1, 5, 8), (3, 8, 4)), ((8,), (2, 8, 3)), ((2, 4, 6), (6,))],
)
def test_matmul(sa, sb):
    a, b = rand(*sa), rand(*sb)
    A, B = ph(a, "a"), ph(b, "b")
    y = compute("matmul", [A, B], {}, "mm")
    z = compute("add", [y, ph(np.zeros(1, np.float32), "zero")], {}, "mm_out")
    got = run([z], y, [A, B, z.op.input_tensors()[1]], [a, b, np.zeros(1, np.float32)])[0]
    close(got, np.matmul(a, b), 1e-3)


# Elementwise ------------------------------------------------------------------------------------


def test_unary_ops_in_one_injective_group():
    x = rand(3, 5, 32) * 4
    X = ph(x, "x")
    cases = {
        "relu": ({}, np.maximum(x, 0)),
        "sigmoid": ({}, 1 / (1 + np.exp(-x))),
        "exp": ({}, np.exp(x)),
        "sqrt": ({}, None),
        "negative": ({}, -x),
        "clip": ({"a_min": -1.0, "a_max": 2.5}, np.clip(x, -1.0, 2.5)),
        "leaky_relu": ({"alpha": 0.1}, np.where(x > 0, x, 0.1 * x)),
        "hard_sigmoid": ({"alpha": 0.2, "beta": 0.5}, np.clip(0.2 * x + 0.5, 0, 1)),
        "hard_swish": ({}, x * np.clip(x / 6 + 0.5, 0, 1)),
    }
    outs, wants = [], []
    for op, (attrs, want) in cases.items():
        if op == "sqrt":
            src = compute("relu", [X], {}, "pos")
            outs.append(compute("sqrt", [src], {}, "sqrt"))
            wants.append(np.sqrt(np.maximum(x, 0)))
            continue
        outs.append(compute(op, [X], attrs, op))
        wants.append(want)
    outs.append(compute("clip", [X], {"a_min": -math.inf, "a_max": 1.0}, "clip_hi"))
    wants.append(np.minimum(x, 1.0))
    outs.append(compute("clip", [X], {"a_min": 0.0, "a_max": math.inf}, "clip_lo"))
    wants.append(np.maximum(x, 0.0))
    g = schedule_group(outs, None)
    assert g.kind == "injective" and g.knobs["vectorized"]
    got = build(g.schedule, [X, *outs], target="cpu")(x)
    for out, have, want in zip(outs, got, wants, strict=True):
        np.testing.assert_allclose(have, want, rtol=2e-5, atol=1e-5, err_msg=out.name)


def test_binary_ops_broadcast():
    a, b = rand(2, 1, 4, 16), np.abs(rand(3, 1, 16)) + 0.5
    A, B = ph(a, "a"), ph(b, "b")
    fns = {
        "add": np.add,
        "subtract": np.subtract,
        "multiply": np.multiply,
        "divide": np.divide,
        "maximum": np.maximum,
        "minimum": np.minimum,
    }
    outs = [compute(op, [A, B], {}, op) for op in fns]
    got = run(outs, None, [A, B], [a, b])
    for (op, fn), have in zip(fns.items(), got, strict=True):
        np.testing.assert_allclose(have, fn(a, b), rtol=1e-6, err_msg=op)


def test_batch_norm_and_cast():
    x = rand(2, 4, 3, 5)
    vecs = [rand(4), rand(4), rand(4), np.abs(rand(4)) + 0.1]
    X = ph(x, "x")
    V = [ph(v, n) for v, n in zip(vecs, ("scale", "bias", "mean", "var"), strict=True)]
    y = compute("batch_norm", [X, *V], {"epsilon": 1e-3}, "bn")
    z = compute("cast", [y], {"dtype": "int32"}, "to_int")
    got_y, got_z = run([y, z], None, [X, *V], [x, *vecs])
    s, b, m, v = (t[None, :, None, None] for t in vecs)
    want = (x - m) / np.sqrt(v + 1e-3) * s + b
    close(got_y, want, 1e-4)
    np.testing.assert_array_equal(got_z, want.astype(np.int32))


# Pooling ----------------------------------------------------------------------------------------


def ort_pool(op: str, x: np.ndarray, **attrs) -> np.ndarray:
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    xi = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))
    yo = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph([helper.make_node(op, ["x"], ["y"], **attrs)], "p", [xi], [yo])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


POOLS = [
    # (op, kernel, stride, pads, dilation, ceil_mode, count_include_pad, packed)
    ("max_pool2d", (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), False, False, True),
    ("max_pool2d", (3, 2), (2, 2), (0, 1, 1, 0), (2, 1), True, False, False),
    ("avg_pool2d", (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), True, True, False),
    ("avg_pool2d", (2, 3), (2, 1), (1, 0, 0, 1), (1, 1), False, False, True),
    ("avg_pool2d", (3, 3), (2, 3), (1, 1, 1, 1), (2, 1), True, False, False),
]


@pytest.mark.parametrize("case", POOLS)
def test_pooling_against_onnxruntime(case):
    op, kernel, stride, pads, dilation, ceil, include, packed = case
    x = rand(1, 16, 11, 10)
    onnx_attrs = dict(
        kernel_shape=list(kernel), strides=list(stride), pads=[pads[0], pads[1], pads[2], pads[3]],
        dilations=list(dilation), ceil_mode=int(ceil),
    )  # fmt: skip
    if op == "avg_pool2d":
        onnx_attrs["count_include_pad"] = int(include)
    want = ort_pool("MaxPool" if op == "max_pool2d" else "AveragePool", x, **onnx_attrs)
    attrs = dict(
        pool_size=kernel,
        strides=stride,
        padding=pads,
        dilation=dilation,
        ceil_mode=ceil,
        layout="NCHW1n8c" if packed else "NCHW",
    )
    if op == "avg_pool2d":
        attrs["count_include_pad"] = include
    arr = topi.pack_data(x, 1, 8) if packed else x
    X = ph(arr, "x")
    pool = compute(op, [X], attrs, "pool")
    y = compute("relu", [pool], {}, "relu")  # a pooling group with an epilogue
    g = schedule_group([y], pool)
    assert g.kind == "pool"
    got = build(g.schedule, [X, y], target="cpu")(arr)
    close(topi.unpack_data(got) if packed else got, np.maximum(want, 0), 1e-5)


@pytest.mark.parametrize("layout", ["NCHW", "NCHW1n16c"])
def test_global_avg_pool(layout):
    x = rand(1, 32, 7, 7)
    arr = x if layout == "NCHW" else topi.pack_data(x, 1, 16)
    X = ph(arr, "x")
    y = compute("global_avg_pool2d", [X], {"layout": layout}, "gap")
    got = run([y], y, [X], [arr])[0]
    got = got if layout == "NCHW" else topi.unpack_data(got)
    close(got, x.mean(axis=(2, 3), keepdims=True), 1e-5)


def test_softmax():
    x = rand(2, 10, 3)
    X = ph(x, "x")
    y = compute("softmax", [X], {"axis": 1}, "sm")
    e = np.exp(x - x.max(axis=1, keepdims=True))
    close(run([y], y, [X], [x])[0], e / e.sum(axis=1, keepdims=True), 1e-5)


# Data movement ----------------------------------------------------------------------------------


def test_data_movement_ops():
    x = rand(2, 3, 4, 5)
    y2 = rand(2, 2, 4, 5)
    X, Y = ph(x, "x"), ph(y2, "y")
    outs = [
        compute("reshape", [X], {"newshape": (6, 20)}, "reshape"),
        compute("transpose", [X], {"axes": (0, 2, 3, 1)}, "transpose"),
        compute("concat", [X, Y, X], {"axis": 1}, "concat"),
        compute(
            "pad", [X], {"pad_width": ((0, 0), (1, 0), (2, 1), (0, 3)), "pad_value": -1.5}, "pad"
        ),
    ]
    wants = [
        x.reshape(6, 20),
        x.transpose(0, 2, 3, 1),
        np.concatenate([x, y2, x], axis=1),
        np.pad(x, ((0, 0), (1, 0), (2, 1), (0, 3)), constant_values=-1.5),
    ]
    got = run(outs, None, [X, Y], [x, y2])
    for out, have, want in zip(outs, got, wants, strict=True):
        np.testing.assert_array_equal(have, want, err_msg=out.name)


def test_layout_transform_round_trip():
    x = rand(2, 32, 3, 5)
    X = ph(x, "x")
    a = compute("layout_transform", [X], {"src_layout": "NCHW", "dst_layout": "NCHW2n16c"}, "a")
    b = compute("layout_transform", [a], {"src_layout": "NCHW2n16c", "dst_layout": "NCHW1n8c"}, "b")
    c = compute("layout_transform", [b], {"src_layout": "NCHW1n8c", "dst_layout": "NCHW"}, "c")
    got_a, got_b, got_c = run([a, b, c], None, [X], [x])
    np.testing.assert_array_equal(got_a, topi.pack_data(x, 2, 16))
    np.testing.assert_array_equal(got_b, topi.pack_data(x, 1, 8))
    np.testing.assert_array_equal(got_c, x)


@pytest.mark.parametrize(
    ("layout", "shape", "blocks"),
    [
        ("nchw", (1, 3, 5, 4), (1, 16)),  # channels padded to a block
        ("nchw", (3, 32, 2, 3), (2, 16)),  # batch padded, channels whole
        ("rows", (3, 10), (4, 4)),
        ("rows", (2, 16), (1, 16)),  # nothing padded: no bound checks
        ("batch_rows", (2, 3, 5, 6), (4, 4)),
        ("batch_rows", (7, 9), (1, 4)),  # one matrix
        ("batch_weight", (2, 3, 6, 5), (4, 4)),
        ("batch_weight", (1, 16, 16), (16, 16)),
    ],
)
def test_pack_and_unpack_compile_to_the_accelerators_block_layouts(layout, shape, blocks):
    from compiler.topi.vta.packing import pack_blocks

    x = RNG.integers(-128, 128, size=shape).astype(np.int8)
    X = ph(x, "x")
    packed = compute("pack", [X], {"layout": layout, "blocks": blocks}, "p")
    (got,) = run([packed], None, [X], [x])
    want = pack_blocks(x, layout, blocks)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    P = ph(want, "pk")
    back = compute("unpack", [P], {"layout": layout, "shape": shape}, "u")
    (again,) = run([back], None, [P], [want])
    np.testing.assert_array_equal(again, x)


def test_pack_refuses_a_value_of_the_wrong_rank_naming_the_node():
    X = te.placeholder((3, 4), "int8", name="x")
    with pytest.raises(CompilerError, match=r"p: block layout nchw packs a value of 4 axes"):
        compute("pack", [X], {"layout": "nchw", "blocks": (1, 4)}, "p")
    P = te.placeholder((1, 1, 4, 4), "int8", name="pk")
    with pytest.raises(CompilerError, match=r"u: pk\(1, 1, 4, 4\) is not \(5, 4\) packed"):
        compute("unpack", [P], {"layout": "rows", "shape": (5, 4)}, "u")


# Errors ------------------------------------------------------------------------------------------


def test_contract_is_covered():
    contract = {
        "conv2d", "dense", "matmul", "add", "subtract", "multiply", "divide", "maximum",
        "minimum", "relu", "sigmoid", "exp", "sqrt", "negative", "clip", "leaky_relu",
        "hard_sigmoid", "hard_swish", "batch_norm", "max_pool2d", "avg_pool2d",
        "global_avg_pool2d", "softmax", "reshape", "transpose", "concat", "pad", "cast",
        "layout_transform", "strided_slice", "take", "broadcast_to", "tile", "dilate", "im2col",
        "resize",
        "sum", "mean", "max", "min", "argmax", "power", "log", "tanh", "erf", "gelu", "equal",
        "less", "greater", "less_equal", "greater_equal", "logical_and", "logical_or",
        "logical_not", "where",
    }  # fmt: skip
    # and the quantized graphs' host operators (compiler.quantize.ops)
    quantized = {
        "quantize", "dequantize", "global_sum_pool2d", "requantize", "qadd", "qmul",
        "qleaky_relu", "qprelu", "qhard_sigmoid", "qhard_swish",
    }  # fmt: skip
    # and the accelerator build's packing of a group's input (compiler.targets.vta.pack)
    packing = {"pack", "unpack"}
    assert set(OPS) == contract | quantized | packing


@pytest.mark.parametrize(
    "op,shape,attrs,match",
    [
        ("fft", (4,), {}, "no CPU strategy"),
        ("relu", (4,), {"alpha": 1.0}, "unsupported attributes \\['alpha'\\]"),
        ("leaky_relu", (4,), {}, "missing attribute 'alpha'"),
        ("max_pool2d", (1, 2, 4, 4), {"pool_size": (2, 2), "layout": "NHWC"}, "NHWC"),
        ("reshape", (2, 3), {"newshape": (-1,)}, "no -1"),
        ("reshape", (2, 3), {"newshape": (5,)}, "cannot reshape"),
        ("softmax", (2, 3), {"axis": 2}, "axis=2"),
        ("layout_transform", (1, 3, 2, 2), {"src_layout": "NCHW", "dst_layout": "NCHW1n2c"}, "pad"),
    ],
)
def test_errors_name_the_node(op, shape, attrs, match):
    X = te.placeholder(shape, name="x")
    with pytest.raises(StrategyError, match=match) as info:
        compute(op, [X], attrs, "node7")
    assert "node7" in str(info.value)
    assert isinstance(info.value, CompilerError)


def test_conv2d_layout_errors():
    X = te.placeholder((1, 2, 4, 4, 1, 8), name="x")
    W = te.placeholder((1, 2, 3, 3, 8, 16), name="w")
    with pytest.raises(StrategyError, match="conv2d node 'c1'.*OIHW"):
        compute("conv2d", [X, W], {"data_layout": "NCHW1n8c", "kernel_layout": "OIHW"}, "c1")
    with pytest.raises(StrategyError, match="input block of 8"):
        compute("conv2d", [X, W], {"data_layout": "NCHW1n8c", "kernel_layout": "OIHW4i16o"}, "c1")


def test_schedule_errors():
    X = te.placeholder((4, 16), name="x")
    y = compute("relu", [X], {}, "r")
    with pytest.raises(ScheduleError, match="'cpu'"):
        schedule([y], None, target="vta")
    with pytest.raises(ScheduleError, match="not computed by the group"):
        schedule([y], compute("exp", [X], {}, "other"))
    d = compute("dense", [X, te.placeholder((8, 16), name="w")], {}, "fc")
    with pytest.raises(ScheduleError, match="reduction but the group has no anchor"):
        schedule([d], None)


def test_epilogue_that_changes_the_shape_and_two_outputs():
    """An epilogue ending in a layout transform cannot be the register tile: the convolution
    keeps its own schedule and the epilogue is inlined into the transform; a group with two
    outputs (the convolution and its relu) computes both."""
    y, conv, inputs, arrays, want = conv_group(16, 16, 6, 6, 3, 1, (1, 1, 1, 1), 16, 16, "bias")
    z = compute("relu", [y], {}, "relu")
    flat = compute(
        "layout_transform", [z], {"src_layout": "NCHW1n16c", "dst_layout": "NCHW"}, "unpack"
    )
    close(run([flat], conv, inputs, arrays)[0], np.maximum(want, 0), 1e-3)
    got_conv, got_relu = run([conv, z], conv, inputs, arrays)
    close(topi.unpack_data(got_relu), np.maximum(want, 0), 1e-3)
    close(topi.unpack_data(got_conv) + arrays[2].reshape(1, 16, 1, 1), want, 1e-3)


def test_int8_packed_conv2d_with_clip_and_cast():
    x = RNG.integers(-8, 8, (1, 32, 6, 6)).astype(np.int8)
    w = RNG.integers(-8, 8, (16, 32, 3, 3)).astype(np.int8)
    xp, wp = topi.pack_data(x, 1, 16), topi.pack_kernel(w, 16, 16, "OIHWio")
    X, W = ph(xp, "x"), ph(wp, "w")
    attrs = dict(padding=(1, 1, 1, 1), data_layout="NCHW1n16c", kernel_layout="OIHW16i16o")
    conv = compute("conv2d", [X, W], attrs, "conv")
    assert conv.dtype.name == "int32"
    y = compute("clip", [conv], {"a_min": -128.0, "a_max": 127.0}, "clip")
    z = compute("cast", [y], {"dtype": "int8"}, "cast")
    got = topi.unpack_data(run([z], conv, [X, W], [xp, wp])[0])
    want = reference.conv2d_nchw(x, w, (1, 1), (1, 1, 1, 1), (1, 1), 1, np.int32)
    np.testing.assert_array_equal(got, np.clip(want, -128, 127).astype(np.int8))
