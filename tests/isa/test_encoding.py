import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import isa
from isa.config import load_config, preset_names
from isa.encoding import decode, decode_fields, encode, encode_int, encode_stream
from isa.errors import EncodingError
from isa.formats import layout
from isa.insn import INSN_CLASSES

PRESETS = preset_names()


def _value(f, draw):
    if f.name == "opcode":
        return None
    if f.name == "memory_type":
        return isa.MemType(draw(st.integers(0, 5)))
    if f.name == "alu_opcode":
        return isa.AluOp(draw(st.integers(0, 4)))
    if f.width == 1:
        return draw(st.booleans())
    return draw(st.integers(f.min_value, f.max_value))


@st.composite
def instructions(draw, cfg):
    cls = draw(st.sampled_from(list(INSN_CLASSES.values())))
    names = {f.name for f in dataclasses.fields(cls)}
    kwargs = {}
    for f in layout(cls.fmt, cfg).fields:
        if f.name in names:
            kwargs[f.name] = _value(f, draw)
    return cls(**kwargs)


@pytest.mark.parametrize("preset", PRESETS)
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_round_trip_every_format(preset, data):
    cfg = load_config(preset)
    insn = data.draw(instructions(cfg))
    raw = encode(insn, cfg)
    assert len(raw) == 16
    assert decode(raw, cfg) == insn
    assert decode(encode_int(insn, cfg), cfg) == insn
    # the batch decoder reads the same fields
    fields = decode_fields(np.frombuffer(raw, np.uint8), cfg)
    for name, value in insn.field_values().items():
        assert fields[name][0] == value, name


@pytest.mark.parametrize("preset", PRESETS)
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_uop_round_trip(preset, data):
    cfg = load_config(preset)
    lay = layout("uop", cfg)
    n = data.draw(st.integers(1, 20))
    arr = np.array(
        [[data.draw(st.integers(0, f.mask)) for f in lay.fields] for _ in range(n)], np.int64
    )
    words = isa.encode_uops(arr, cfg)
    assert words.dtype == np.uint32
    d, s, w = isa.decode_uops(words, cfg)
    assert np.array_equal(np.stack([d, s, w], 1), arr)


def test_known_bit_positions_default():
    """Hand-computed from ISA.md §2 for the default preset (VTA's own layout)."""
    cfg = load_config("default")
    g = isa.Gemm(
        pop_prev_dep=True,
        push_next_dep=True,
        reset=True,
        uop_begin=3,
        uop_end=5,
        iter_out=7,
        iter_in=9,
        dst_factor_out=1,
        dst_factor_in=2,
        src_factor_out=3,
        src_factor_in=4,
        wgt_factor_out=5,
        wgt_factor_in=6,
    )
    expect = (
        2
        | 1 << 3
        | 1 << 6
        | 1 << 7
        | 3 << 8
        | 5 << 21
        | 7 << 35
        | 9 << 49
        | 1 << 64
        | 2 << 75
        | 3 << 86
        | 4 << 97
        | 5 << 108
        | 6 << 118
    )
    assert encode_int(g, cfg) == expect
    ld = isa.Load(
        memory_type=isa.MemType.INP,
        sram_base=0x1234,
        dram_base=0xDEADBEEF,
        y_size=2,
        x_size=3,
        x_stride=4,
        y_pad_0=1,
        y_pad_1=2,
        x_pad_0=3,
        x_pad_1=15,
    )
    expect = (
        0
        | 2 << 7
        | 0x1234 << 10
        | 0xDEADBEEF << 26
        | 2 << 64
        | 3 << 80
        | 4 << 96
        | 1 << 112
        | 2 << 116
        | 3 << 120
        | 15 << 124
    )
    assert encode_int(ld, cfg) == expect
    alu = isa.Alu(alu_opcode=isa.AluOp.SHR, use_imm=True, imm=-1, uop_end=1)
    word = encode_int(alu, cfg)
    assert word >> 112 == 0xFFFF and (word >> 108) & 7 == 3 and (word >> 111) & 1 == 1
    assert decode(word, cfg).imm == -1


def test_field_overflow_names_the_field():
    cfg = load_config("default")
    with pytest.raises(EncodingError, match="uop_begin"):
        encode(isa.Gemm(uop_begin=1 << 13), cfg)
    with pytest.raises(EncodingError, match="imm"):
        encode(isa.Alu(imm=40000), cfg)
    with pytest.raises(EncodingError, match="instruction 1.*x_size"):
        encode_stream([isa.Finish(), isa.Load(memory_type=isa.MemType.INP, x_size=-1)], cfg)


def test_bad_opcode_and_enum_are_reported():
    cfg = load_config("default")
    with pytest.raises(EncodingError, match="instruction 4.*opcode.*7"):
        decode((7).to_bytes(16, "little"), cfg, index=4)
    with pytest.raises(EncodingError, match="memory_type"):
        decode((0 | 7 << 7).to_bytes(16, "little"), cfg)
    with pytest.raises(EncodingError, match="alu_opcode"):
        decode((4 | 6 << 108).to_bytes(16, "little"), cfg)


def test_batch_decode_of_mixed_stream():
    cfg = load_config("vta-1x16x16")
    insns = [
        isa.Load(memory_type=isa.MemType.WGT, sram_base=5, dram_base=77, x_size=3, x_stride=3),
        isa.Gemm(uop_end=4, iter_in=2, src_factor_in=16, wgt_factor_in=1),
        isa.Alu(alu_opcode=isa.AluOp.MUL, imm=-7, use_imm=True, src_factor_out=3),
        isa.Store(sram_base=9, dram_base=1, x_size=2, x_stride=2, pop_prev_dep=True),
        isa.Finish(),
    ]
    f = decode_fields(encode_stream(insns, cfg), cfg)
    assert f["opcode"].tolist() == [0, 2, 4, 1, 3]
    assert f["memory_type"].tolist() == [1, 0, 0, 4, 0]
    assert f["imm"].tolist() == [0, 0, -7, 0, 0]
    assert f["src_factor_in"].tolist() == [0, 16, 0, 0, 0]
    assert f["src_factor_out"].tolist() == [0, 0, 3, 0, 0]
    assert f["pop_prev_dep"].tolist() == [0, 0, 0, 1, 0]


def test_routing_and_queues():
    assert isa.module_of(isa.Load(memory_type=isa.MemType.INP)) == "load"
    assert isa.module_of(isa.Load(memory_type=isa.MemType.ACC8)) == "compute"
    assert isa.module_of(isa.Store()) == "store"
    # module_of (a type test, for speed) states the rule of module_of_fields (on decoded
    # fields) a second time: they agree on every class and memory type
    from isa.insn import module_of_fields

    for mem in isa.MemType:
        for insn in (isa.Load(memory_type=mem), isa.Store(), isa.Gemm(), isa.Alu(), isa.Finish()):
            want = module_of_fields(int(insn.opcode), int(getattr(insn, "memory_type", 0)))
            assert isa.module_of(insn) == want, insn
    g = isa.Gemm(pop_prev_dep=True, pop_next_dep=True, push_prev_dep=True, push_next_dep=True)
    assert g.pops() == ("load->compute", "store->compute")
    assert g.pushes() == ("compute->load", "compute->store")
    assert isa.queue_of("load", "push_prev_dep") is None
    assert isa.queue_of("store", "pop_next_dep") is None
