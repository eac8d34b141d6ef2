"""The batch encoder and decoder (:func:`isa.encoding.encode_stream` and
:func:`isa.encoding.decode_stream`, per class with numpy) give what encoding and decoding one
instruction at a time gives, and report a value that does not fit, or an opcode or enum the
ISA does not list, as the scalar ones do."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import isa
from isa.config import load_config, preset_names
from isa.encoding import INSN_BYTES, decode, decode_stream, encode, encode_stream, fields_of
from isa.errors import EncodingError
from tests.isa.test_encoding import instructions


@pytest.mark.parametrize("preset", preset_names())
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_stream_equals_one_at_a_time(preset, data):
    cfg = load_config(preset)
    insns = data.draw(st.lists(instructions(cfg), max_size=24))
    code = encode_stream(insns, cfg)
    assert code.dtype == np.uint8 and code.flags.writeable
    assert code.tobytes() == b"".join(encode(i, cfg) for i in insns)
    assert decode_stream(code, cfg) == insns
    raw = code.tobytes()
    one = [decode(raw[k : k + INSN_BYTES], cfg) for k in range(0, len(raw), INSN_BYTES)]
    assert decode_stream(raw, cfg) == one


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_a_stream_repeating_instruction_objects_equals_one_at_a_time(data):
    cfg = load_config("vta-1x16x16")
    pool = data.draw(st.lists(instructions(cfg), min_size=1, max_size=6))
    # the same objects at many positions, of several classes, interleaved
    picks = data.draw(st.lists(st.integers(0, len(pool) - 1), max_size=40))
    insns = [pool[k] for k in picks]
    assert encode_stream(insns, cfg).tobytes() == b"".join(encode(i, cfg) for i in insns)


def test_overflow_is_reported_by_instruction_and_field():
    cfg = load_config("default")
    ok = isa.Load(memory_type=isa.MemType.INP, x_size=1, y_size=1, x_stride=1)
    with pytest.raises(EncodingError, match="instruction 2: .*'dram_base' = 4294967296"):
        encode_stream([ok, ok, isa.Load(memory_type=isa.MemType.INP, dram_base=1 << 32)], cfg)
    with pytest.raises(EncodingError, match="instruction 1: .*'imm'"):
        encode_stream([isa.Finish(), isa.Alu(imm=1 << 70)], cfg)
    assert encode_stream([], cfg).size == 0


def test_decode_reports_the_first_instruction_outside_the_isa():
    cfg = load_config("default")
    code = encode_stream([isa.Finish(), isa.Finish(), isa.Finish()], cfg)
    code[16] |= 0b111  # opcode 7
    with pytest.raises(EncodingError, match="instruction 1: field 'opcode' = 7"):
        decode_stream(code, cfg)
    alu = encode_stream([isa.Finish(), isa.Alu(alu_opcode=isa.AluOp.ADD)], cfg)
    words = alu.view("<u8").reshape(-1, 2)
    from isa.formats import layout

    f = layout("alu", cfg).field("alu_opcode")
    words[1, f.lsb // 64] |= np.uint64(7 << (f.lsb % 64))
    with pytest.raises(EncodingError, match="instruction 1: field 'alu_opcode' = 7"):
        decode_stream(alu, cfg)


@pytest.mark.parametrize("preset", preset_names())
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_blocks_of_fields_encode_as_their_instructions(preset, data):
    """Runs held as field arrays (InsnBlock) among instruction objects encode as the objects
    they hold, and each row reads back as its object."""
    cfg = load_config(preset)
    insns = data.draw(st.lists(instructions(cfg), min_size=1, max_size=24))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(insns)), max_size=4)))
    items: list = []
    edges = [0, *cuts, len(insns)]
    for k, (a, b) in enumerate(zip(edges, edges[1:], strict=False)):
        part = insns[a:b]
        if k % 2 and part:
            block = isa.InsnBlock(fields_of(part))
            assert [block.insn(r) for r in range(len(block))] == part
            items.append(block)
        else:
            items.extend(part)
    assert isa.stream_length(items) == len(insns)
    assert encode_stream(items, cfg).tobytes() == b"".join(encode(i, cfg) for i in insns)


def test_a_value_past_its_field_in_a_block_names_its_stream_position():
    cfg = load_config("default")
    ok = isa.Load(memory_type=isa.MemType.INP, x_size=1, y_size=1, x_stride=1)
    fields = fields_of([ok, ok, ok])
    fields[2, isa.encoding.all_field_names().index("dram_base")] = 1 << 32
    with pytest.raises(EncodingError, match="instruction 4: field 'dram_base' = 4294967296"):
        encode_stream([ok, ok, isa.InsnBlock(fields), isa.Finish()], cfg)
    with pytest.raises(EncodingError, match="instruction 3: field 'dram_base'"):
        encode_stream([ok, isa.InsnBlock(fields)], cfg)  # one at a time after an overflow
    with pytest.raises(EncodingError, match="one column per field"):
        isa.InsnBlock(fields[:, :3])
