"""Virtual-thread expansion: private buffer copies and interleaved blocks."""

import re

from compiler.topi.vta import Conv2dKnobs

from .helpers import lower_dumps, small_conv


def test_buffers_get_a_private_copy_per_thread():
    tgt, s, args = small_conv()
    dumps = lower_dumps(tgt, s, args)[1]
    sizes = dict(re.findall(r"allocate (\w+): int\d+\[(\d+)\]", dumps["coproc_sync"]))
    grown = dict(re.findall(r"allocate (\w+): int\d+\[(\d+)\]", dumps["expand_virtual_threads"]))
    assert grown == {k: str(2 * int(v)) for k, v in sizes.items()}
    text = dumps["expand_virtual_threads"]
    assert "bind cthread" not in text
    # thread 1 addresses the second half of each buffer
    half = int(sizes["conv_pad"])
    assert f"address_of(conv_pad[{half}])" in text


def test_blocks_are_replicated_in_thread_order():
    tgt, s, args = small_conv()
    text = lower_dumps(tgt, s, args)[1]["expand_virtual_threads"]
    loads = [ln for ln in text.splitlines() if "vta.load_inp" in ln]
    assert len(loads) == 2 and "conv_pad[0]" in loads[0] and "conv_pad[0]" not in loads[1]


def test_two_thread_axes_make_four_threads():
    knobs = Conv2dKnobs(tile_h=4, tile_w=8, tile_ci=1, tile_co=1, oc_nthread=2, h_nthread=2)
    tgt, s, args = small_conv(h=8, o_blocks=2, knobs=knobs)
    dumps = lower_dumps(tgt, s, args)[1]
    sizes = dict(re.findall(r"allocate (\w+): int\d+\[(\d+)\]", dumps["coproc_sync"]))
    grown = dict(re.findall(r"allocate (\w+): int\d+\[(\d+)\]", dumps["expand_virtual_threads"]))
    assert grown == {k: str(4 * int(v)) for k, v in sizes.items()}
    assert dumps["expand_virtual_threads"].count("vta.load_wgt") == 4
