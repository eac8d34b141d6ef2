"""A compiled layer's DRAM footprint (:meth:`isa.Program.dram_footprint`): every tensor's bytes
once, however often the schedule moves them, and never more than the simulator moves."""

import pytest

from compiler.topi.vta.layer import Conv2dLayer, compile_conv2d
from vta_sim import simulate


@pytest.mark.parametrize("preset", ["default", "vta-1x16x16"])
def test_a_residual_convs_footprint_is_each_tensor_once(preset):
    layer = Conv2dLayer("t", 14, 14, 32, 32, 3, pad=1)
    program = compile_conv2d(layer, preset, residual=True).program
    fp = program.dram_footprint()
    sym = {name: s.nbytes for name, s in program.symbols.items()}
    # a 3x3 window at stride 1 reads every input element; the schedule reloads halos
    assert fp["inp"] == sym["data"] and fp["wgt"] == sym["kernel"]
    assert fp["acc8"] == sym["residual"] and fp["out"] == sym["out"] and fp["acc"] == 0
    moved = simulate(program, trace=False).dram_bytes
    assert all(fp[k] <= moved[k] for k in fp), (fp, moved)
    assert fp["inp"] < moved["inp"]  # the halo rows move more than once


def test_padding_and_instructions_after_finish_move_nothing():
    import isa

    cfg = isa.load_config("default")
    elem = cfg.mem_elem_bytes(int(isa.MemType.INP))
    pad = isa.Load(
        memory_type=isa.MemType.INP, dram_base=0, y_size=1, x_size=2, x_stride=2,
        y_pad_0=1, x_pad_1=3,
    )  # fmt: skip
    nop = isa.Load(memory_type=isa.MemType.INP, dram_base=100, y_size=0, x_size=0, x_stride=0)
    late = isa.Load(memory_type=isa.MemType.INP, dram_base=50, y_size=1, x_size=4, x_stride=4)
    fp = isa.Program.build(cfg, [pad, nop, isa.Finish(), late]).dram_footprint()
    assert fp["inp"] == 2 * elem and fp["out"] == 0
