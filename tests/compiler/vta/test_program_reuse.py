"""Groups of one structure share one compile (``reusing_programs``): each gets a copy of the
program with its own tile symbols, byte for byte what compiling it alone gives."""

import numpy as np

import isa
from compiler.quantize import choose_requant
from compiler.topi.vta import qnn
from compiler.topi.vta.qelementwise import compile_qelementwise, qadd_steps
from compiler.topi.vta.qnn import QEpilogue, compile_qconv2d, compile_qdense, reusing_programs

CFG = isa.load_config("default")


def _ep(seed, channels=8, scale=0.01):
    rng = np.random.default_rng(seed)
    return QEpilogue(rng.integers(-50, 50, channels).astype(np.int32),
                     choose_requant(np.full(channels, scale)), -128, 127)  # fmt: skip


def _conv(name, seed, ep):
    w = np.random.default_rng(seed).integers(-8, 8, (8, 8, 3, 3)).astype(np.int8)
    return compile_qconv2d(name, CFG, w, ep, in_shape=(1, 8, 6, 6), stride=(1, 1),
                           padding=(1, 1, 1, 1))  # fmt: skip


def _same(a, b):
    assert a.program.insn_count == b.program.insn_count
    assert a.program.dram.tobytes() == b.program.dram.tobytes()
    assert a.program.symbols == b.program.symbols
    assert a.program is not b.program and a.program.dram is not b.program.dram


def test_a_second_group_of_one_structure_is_what_its_own_compile_gives():
    alone, third_alone = _conv("second", 2, _ep(2)), _conv("third", 3, _ep(3))
    with reusing_programs():
        first = _conv("first", 1, _ep(1))
        second = _conv("second", 2, _ep(2))
        assert len(qnn._PROGRAMS) == 1
        # writing into one group's program changes neither another's nor the kept copy
        first.program.dram[:] = 1
        third = _conv("third", 3, _ep(3))
    assert not qnn._PROGRAMS  # dropped when the outermost block ends
    _same(second, alone)
    _same(third, third_alone)
    assert "second_bias" in second.program.symbols and "first_bias" in first.program.symbols
    # the parameters are each group's own
    assert not np.array_equal(first.params["kernel"], second.params["kernel"])


def test_groups_that_differ_in_structure_are_compiled_each():
    with reusing_programs():
        _conv("a", 1, _ep(1))
        _conv("b", 1, _ep(1, scale=0.5))  # other immediates in the epilogue
        w = np.ones((8, 16), np.int8)
        d1 = compile_qdense("d1", CFG, w, _ep(3), batch=1)
        d2 = compile_qdense("d2", CFG, w * 2, _ep(4), batch=1)
        steps = qadd_steps(16384, 8192, 15, -128, 127)
        e1 = compile_qelementwise("e1", CFG, steps, shape=(1, 8, 3, 3), binary=True)
        e2 = compile_qelementwise("e2", CFG, steps, shape=(1, 8, 3, 3), binary=True)
        assert len(qnn._PROGRAMS) == 4  # two convolutions, one dense, one elementwise
    _same(d2, compile_qdense("d2", CFG, w * 2, _ep(4), batch=1))
    _same(e1, e2)
    assert d1.program.symbols.keys() != d2.program.symbols.keys()


def test_prelu_groups_share_a_program_and_keep_their_own_slopes():
    from compiler.topi.vta.qelementwise import prelu_steps

    attrs = {"neg_min": -128, "neg_max": 0, "slope_multiplier": 20000, "slope_shift": 21,
             "slope_min": -128, "slope_max": 127, "pos_multiplier": 16384,
             "neg_multiplier": 11000, "shift": 14, "out_min": -128, "out_max": 127}  # fmt: skip

    def prelu(name, slopes):
        return compile_qelementwise(name, CFG, prelu_steps(attrs), shape=(1, 8, 3, 3),
                                    binary=True, channel_tiles={"slope": slopes})  # fmt: skip

    alone = prelu("q", np.arange(8))
    with reusing_programs():
        p = prelu("p", -np.arange(8))
        q = prelu("q", np.arange(8))
        assert len(qnn._PROGRAMS) == 1
    _same(q, alone)
    assert sorted(q.params) == ["q_slope"] and sorted(p.params) == ["p_slope"]
    assert q.params["q_slope"][1, 0].tolist() == [4, 5, 6, 7]
    assert p.params["p_slope"][1, 0].tolist() == [-4, -5, -6, -7]
