"""isa.dram: the one DRAM layout rule, shared by the compiler, the assembler and the tests."""

import numpy as np
import pytest

import isa
from isa.asm import assemble
from isa.dram import DramBuilder, align_up, dram_alignment

PRESETS = ("default", "vta-1x16x16", "4x4x4")


@pytest.mark.parametrize("preset", PRESETS)
def test_alignment_is_a_multiple_of_every_element_size(preset):
    cfg = isa.load_config(preset)
    align = dram_alignment(cfg)
    assert align % 64 == 0
    for mt in isa.MemType:
        assert align % cfg.mem_elem_bytes(mt) == 0, mt
    assert dram_alignment(cfg, floor=4096) == 4096


def test_regions_in_order_each_aligned_and_distinct():
    cfg = isa.load_config("vta-1x16x16")
    b = DramBuilder(cfg)
    a = b.put("a", np.arange(300, dtype=np.int8), role="input")
    e = b.blob("empty", np.zeros(0, np.uint8))
    c = b.tensor("c", (2, 16), "int32", role="output")
    assert (a, e, c.offset) == (0, 512, 768)
    uops = b.uops(np.arange(3, dtype=np.uint32))
    assert uops == 1024
    prog = b.program([isa.Finish()])
    assert prog.insn_base == 1280 and prog.insn_count == 1
    assert prog.read("a").tolist() == list(np.arange(300, dtype=np.int8))
    assert prog.dram[1024:1036].view(np.uint32).tolist() == [0, 1, 2]
    assert b.elem_base("c", isa.MemType.WGT) == 3


def test_errors_name_the_tensor():
    cfg = isa.load_config("default")
    b = DramBuilder(cfg)
    b.put("x", np.zeros(4, np.int8))
    with pytest.raises(isa.ProgramError, match="'x' is placed twice"):
        b.put("x", np.zeros(4, np.int8))
    with pytest.raises(isa.ProgramError, match=r"tensor 'y': data of shape \(3,\)"):
        b.tensor("y", (4,), "int8", data=np.zeros(3, np.int8))
    with pytest.raises(isa.ProgramError, match="no tensor 'z'"):
        b.elem_base("z", isa.MemType.INP)
    b.uops(np.zeros(1, np.uint32))
    with pytest.raises(isa.ProgramError, match="tensor 'late'.*sealed"):
        b.tensor("late", (4,), "int8")
    with pytest.raises(isa.ProgramError, match="'scratch'.*sealed"):
        b.blob("scratch", np.zeros(4, np.uint8))
    with pytest.raises(isa.ProgramError, match="floor 0"):
        dram_alignment(cfg, floor=0)


def test_odd_offsets_are_refused_for_the_memory_type():
    b = DramBuilder(isa.load_config("vta-1x16x16"))
    with pytest.raises(isa.ProgramError, match="byte 64 is not aligned to WGT elements of 256"):
        b.elem_of(64, isa.MemType.WGT)


def test_assembler_auto_offsets_follow_the_rule():
    """On vta-1x16x16 a weight element is 256 bytes: an 'auto' tensor after 16 bytes of
    instructions lands at 256 and can be loaded as weights."""
    prog = assemble(
        """
.config vta-1x16x16
.text 0
  load wgt sram_base=0 dram_base=@W y_size=1 x_size=1 x_stride=1
.tensor W param int8 16,16 auto
  random 3
"""
    )
    cfg = prog.config
    assert prog.symbols["W"].offset == align_up(16, dram_alignment(cfg)) == 256
    assert prog.instructions()[0].dram_base == 1
