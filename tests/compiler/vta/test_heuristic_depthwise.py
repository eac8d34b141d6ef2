"""The heuristic for a depthwise conv2d (a grouped convolution of one channel block per group):
every output block reads an input block of its own, so the input tile grows with tile_co."""

from __future__ import annotations

import pytest

import isa
from compiler.topi.vta.conv2d import Conv2dKnobs
from compiler.topi.vta.heuristic import conv2d_knobs, estimate_conv2d


@pytest.mark.parametrize("preset", ["default", "vta-1x16x16"])
@pytest.mark.parametrize("k,stride", [(3, 1), (5, 2)])
def test_depthwise_input_tile_counts_every_output_block(preset, k, stride):
    cfg = isa.load_config(preset)
    ocb = 1152 // cfg.block_out
    oh = 56 // stride
    kn = conv2d_knobs(cfg, nb=1, ocb=ocb, icb=1, oh=oh, ow=oh, k=k, stride=stride,
                      depthwise=True)  # fmt: skip
    in_h, in_w = (kn.tile_h - 1) * stride + k, (kn.tile_w - 1) * stride + k
    assert kn.tile_b * kn.tile_co * in_h * in_w <= cfg.inp_depth // kn.nthreads, kn


def test_depthwise_estimate_loads_one_input_block_per_output_block():
    cfg = isa.load_config("default")
    shape = {"nb": 1, "ocb": 8, "icb": 1, "oh": 8, "ow": 8, "k": 3, "stride": 1}
    knobs = Conv2dKnobs(tile_h=8, tile_w=8, tile_ci=1, tile_co=4, oc_nthread=2)
    dense = estimate_conv2d(cfg, knobs, **shape)
    dw = estimate_conv2d(cfg, knobs, **shape, depthwise=True)
    assert dw.compute == dense.compute
    # the three extra input blocks per step: bytes and one DMA latency each
    extra = 3 * 10 * 10 * cfg.inp_elem_bytes / cfg.bus_bytes + 3 * cfg.dram_latency
    tiles = 2  # two tiles of 4 output blocks
    assert dw.dram - dense.dram == pytest.approx(tiles * extra)
