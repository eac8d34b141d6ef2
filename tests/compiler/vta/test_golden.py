"""Golden text of a small conv2d through the accelerator pipeline (``pytest --update-golden``):
DMA calls with padding, micro-op kernels with folded loops, tokens, two virtual threads."""

from compiler.ir import to_text
from compiler.topi.vta import Conv2dKnobs

from .helpers import lower_dumps, small_conv


def test_golden_small_conv_lowered_for_the_accelerator(golden):
    knobs = Conv2dKnobs(tile_h=3, tile_w=6, tile_ci=1, tile_co=2, oc_nthread=2)
    tgt, s, args = small_conv(knobs=knobs)
    func, dumps = lower_dumps(tgt, s, args)
    golden("conv_vta_trace", s.trace_text() + "\n")
    golden("conv_vta_lowered", to_text(func))
