"""Relocation on the encoded words (:func:`compiler.targets.vta.link.relocate`) gives the
instructions that decoding, moving each LOAD/STORE ``dram_base`` and encoding again gives, on
every preset."""

import dataclasses

import numpy as np
import pytest

import isa
from compiler.quantize import choose_requant
from compiler.targets.vta.errors import LinkError
from compiler.targets.vta.link import Segment, _field, _set_field, grain, relocate
from compiler.topi.vta.qnn import QEpilogue, compile_qconv2d
from isa.encoding import decode_stream, encode_stream
from isa.formats import Field
from isa.insn import Load, Store


def _by_objects(prog, segs):
    """The scalar reference: decode, move each address by its segment, encode."""
    out = []
    for insn in prog.instructions():
        if isinstance(insn, Load | Store):
            elem = prog.config.mem_elem_bytes(int(insn.memory_type))
            addr = insn.dram_base * elem
            for s in segs:
                if s.holds(addr):
                    insn = dataclasses.replace(insn, dram_base=s.move(addr) // elem)
        out.append(insn)
    return encode_stream(out, prog.config)


@pytest.mark.parametrize("preset", ["default", "vta-1x16x16", "4x4x4"])
def test_relocate_equals_decode_move_encode(preset):
    cfg = isa.load_config(preset)
    rng = np.random.default_rng(3)
    w = rng.integers(-127, 128, (16, 8, 3, 3), dtype=np.int8)
    ep = QEpilogue(rng.integers(-99, 99, 16).astype(np.int32),
                   choose_requant(rng.uniform(0.001, 0.01, 16)), 0, 127)  # fmt: skip
    prog = compile_qconv2d("c", cfg, w, ep, in_shape=(cfg.batch, 8, 6, 6), stride=(1, 1),
                           padding=(1, 1, 1, 1)).program  # fmt: skip
    unit = grain(cfg)
    size = -(-prog.dram.size // unit) * unit
    offsets = sorted(s.offset for s in prog.symbols.values())
    cut = offsets[len(offsets) // 2]  # two pieces, split between symbols, moved apart
    segs = [Segment(0, cut, 7 * unit), Segment(cut, size, cut + 1000 * unit)]
    code, symbols = relocate(prog, segs)
    assert code.tobytes() == _by_objects(prog, segs).tobytes()
    assert code.tobytes() != prog.insn_bytes.tobytes()  # addresses in both pieces moved
    assert decode_stream(code, cfg)[-1] == prog.instructions()[-1]
    assert all(symbols[n].offset > s.offset for n, s in prog.symbols.items())


def test_fields_across_the_word_boundary_read_and_write():
    rng = np.random.default_rng(0)
    words = rng.integers(0, 2**63, (5, 2), dtype=np.int64).astype(np.uint64)
    f = Field("x", lsb=58, width=12)
    want = [(int(a) | int(b) << 64) >> 58 & 0xFFF for a, b in words]
    assert _field(words, f).tolist() == want
    before = words.copy()
    _set_field(words, np.array([1, 3]), f, np.array([0xABC, 0x123]))
    assert _field(words, f).tolist() == [want[0], 0xABC, want[2], 0x123, want[4]]
    keep = ~np.uint64(((1 << 6) - 1) << 58)
    assert (words[:, 0] & keep == before[:, 0] & keep).all()
    assert (words[:, 1] >> np.uint64(6) == before[:, 1] >> np.uint64(6)).all()


def test_relocate_refuses_an_address_off_the_element_grid():
    cfg = isa.load_config("default")
    load = isa.Load(memory_type=isa.MemType.INP, dram_base=2, x_size=1, y_size=1, x_stride=1)
    p = isa.Program.build(cfg, [load, isa.Finish()], dram_bytes=64)
    with pytest.raises(LinkError, match="instruction 0: DRAM byte 4099 is not a whole INP"):
        relocate(p, [Segment(0, 64, 4091)])
    far = isa.Load(memory_type=isa.MemType.INP, dram_base=900, x_size=0, y_size=0, x_stride=0)
    nop = isa.Program.build(cfg, [far, isa.Finish()], dram_bytes=64)
    code, _ = relocate(nop, [Segment(0, 64, 4096)])  # a NOP outside every piece stays
    assert code.tobytes() == nop.insn_bytes.tobytes()
