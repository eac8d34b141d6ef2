"""Operators on the accelerator, bit-exact on the simulator against numpy.

Every ResNet-18 layer kind C1..C12 at a reduced size (spatial at most 14, channels at most 64,
keeping the kernel, stride, padding and the channel ratios), with 1 and 2 virtual threads (over
output channels and over rows), relu on and off, a residual add; dense; all three presets.
"""

from dataclasses import replace

import numpy as np
import pytest

from compiler.topi.vta import RESNET18_LAYERS, Conv2dKnobs
from compiler.topi.vta.heuristic import conv2d_knobs
from compiler.topi.vta.layer import Conv2dLayer
from compiler.topi.vta.testing import build_conv2d, build_dense

from .helpers import PRESETS, run

SCALED = [layer.scaled(14, 64) for layer in RESNET18_LAYERS]


def check(built):
    result = run(built.program)
    got = built.output_from(result.read("out"))
    np.testing.assert_array_equal(got, built.expected)
    return result


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("layer", SCALED, ids=[layer.name for layer in SCALED])
def test_resnet18_layer_kinds(layer, preset):
    import isa

    batch = isa.load_config(preset).batch
    layer = Conv2dLayer(layer.name, layer.h, layer.w, layer.in_c, layer.out_c, layer.k,
                        layer.stride, layer.pad, batch)  # fmt: skip
    check(build_conv2d(layer, preset, nthreads=1))
    check(build_conv2d(layer, preset, nthreads=2, relu=True, residual=True, seed=1))


@pytest.mark.parametrize("layer", RESNET18_LAYERS, ids=[layer.name for layer in RESNET18_LAYERS])
def test_threads_over_rows(layer):
    # the largest size up to 16 whose output rows split evenly over two threads
    sizes = [layer.scaled(hw, 64) for hw in (14, 16, 12)]
    sizes.append(replace(sizes[0], h=8, w=8))  # C12 is 7x7 at full size
    small = next(c for c in sizes if c.out_h % 2 == 0)
    tile_h = max(t for t in (1, 2, 3, 4) if small.out_h % (2 * t) == 0)
    knobs = Conv2dKnobs(tile_h=tile_h, tile_w=small.out_w, tile_ci=1, tile_co=1, h_nthread=2)
    check(build_conv2d(small, "default", knobs, relu=True))


@pytest.mark.parametrize("name", ["C2", "C3", "C6"])
def test_four_threads_over_channels_and_rows(name):
    layer = next(s for s in SCALED if s.name == name)
    knobs = conv2d_knobs(
        __import__("isa").load_config("default"), ocb=layer.out_c // 4, icb=layer.in_c // 4,
        oh=layer.out_h, ow=layer.out_w, k=layer.k, stride=layer.stride, nthreads=4,
        acc_buffers=2,
    )  # fmt: skip
    assert knobs.oc_nthread == knobs.h_nthread == 2
    check(build_conv2d(layer, "default", knobs, residual=True))


def test_channels_padded_up_to_the_block():
    # 3 input channels (C1) and 10 output channels: both padded to the core's block of 16
    layer = Conv2dLayer("odd", 9, 9, 3, 10, 3, 2, 1)
    built = build_conv2d(layer, "vta-1x16x16", relu=True)
    assert built.program.symbols["data"].shape[-1] == 16
    check(built)


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("threads, residual", [(1, False), (2, True)])
def test_dense(preset, threads, residual):
    import isa

    batch = isa.load_config(preset).batch * 2
    check(build_dense(batch, 96, 40, preset, nthreads=threads, relu=residual,
                      residual=residual))  # fmt: skip


@pytest.mark.parametrize("loop_order", ["h_co", "co_h"])
def test_loop_orders(loop_order):
    layer = Conv2dLayer("t", 8, 8, 8, 16, 3, 1, 1)
    knobs = Conv2dKnobs(tile_h=4, tile_w=8, tile_ci=1, tile_co=2, oc_nthread=2,
                        loop_order=loop_order)  # fmt: skip
    check(build_conv2d(layer, "default", knobs))
