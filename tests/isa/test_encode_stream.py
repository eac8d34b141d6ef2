"""The batch encoder (:func:`isa.encoding.encode_stream`, packed per class with numpy) writes the
bytes that encoding one instruction at a time writes, and reports a value that does not fit
as the scalar encoder does."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import isa
from isa.config import load_config, preset_names
from isa.encoding import encode, encode_stream
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


def test_overflow_is_reported_by_instruction_and_field():
    cfg = load_config("default")
    ok = isa.Load(memory_type=isa.MemType.INP, x_size=1, y_size=1, x_stride=1)
    with pytest.raises(EncodingError, match="instruction 2: .*'dram_base' = 4294967296"):
        encode_stream([ok, ok, isa.Load(memory_type=isa.MemType.INP, dram_base=1 << 32)], cfg)
    with pytest.raises(EncodingError, match="instruction 1: .*'imm'"):
        encode_stream([isa.Finish(), isa.Alu(imm=1 << 70)], cfg)
    assert encode_stream([], cfg).size == 0
