"""Code generation: SRAM allocation and capacity, DRAM symbols, the static checker."""

import dataclasses

import numpy as np
import pytest

import isa
from compiler.errors import CompilerError
from compiler.targets.vta import StreamCheckError, VTATargetError
from compiler.targets.vta.check import check_program
from compiler.topi.vta import Conv2dKnobs, Conv2dLayer
from compiler.topi.vta.testing import build_conv2d

from .helpers import run, small_conv


def test_program_names_its_tensors_and_passes_the_checker():
    built = build_conv2d(Conv2dLayer("t", 6, 6, 8, 8, 3, 1, 1), "default", relu=True)
    prog = built.program
    assert {n: s.role for n, s in prog.symbols.items()} == {
        "data": "input",
        "kernel": "param",
        "out": "output",
    }
    assert prog.symbols["data"].layout == "NCHW1n4c"
    pushed = check_program(prog)
    assert pushed["load->compute"] > 0 and pushed["compute->store"] > 0
    assert built.matches(run(prog).read("out"))


def test_buffer_overflow_names_the_buffer_and_the_stage():
    # one tile larger than the input buffer: found when the stage is lowered
    knobs = Conv2dKnobs(tile_h=28, tile_w=28, tile_ci=16, tile_co=1)
    with pytest.raises(CompilerError, match="stage conv_pad: buffer conv_pad needs .* scope "
                       "local.inp_buffer holds"):  # fmt: skip
        build_conv2d(Conv2dLayer("big", 28, 28, 64, 4, 3, 1, 1), "default", knobs)
    # buffers that fit one by one but not together: found when SRAM is allocated
    knobs = Conv2dKnobs(tile_h=16, tile_w=16, tile_ci=1, tile_co=8)
    with pytest.raises(VTATargetError, match="stage res_acc: buffer res_acc needs 2048 entries "
                       "of local.acc_buffer but 0 of its 2048 are free \\(already allocated: "
                       "conv \\(2048\\)\\)"):  # fmt: skip
        build_conv2d(Conv2dLayer("big", 16, 16, 4, 32, 1), "default", knobs, residual=True)


def test_virtual_threads_need_room_for_their_copies():
    # one thread's accumulator tile fits (1024 of 2048 entries); four copies do not
    knobs = Conv2dKnobs(tile_h=16, tile_w=16, tile_ci=1, tile_co=4, oc_nthread=2, h_nthread=2)
    with pytest.raises(VTATargetError, match="local.acc_buffer"):
        build_conv2d(Conv2dLayer("big", 32, 32, 4, 32, 1), "default", knobs)


def corrupt(prog, index, **fields):
    insns = prog.instructions()
    insns[index] = dataclasses.replace(insns[index], **fields)
    code = isa.encode_stream(insns, prog.config)
    dram = prog.dram.copy()
    dram[prog.insn_base : prog.insn_base + code.size] = code
    return isa.Program(prog.config, dram, prog.insn_base, prog.insn_count, prog.symbols)


def test_the_checker_catches_a_corrupted_stream():
    tgt, s, args = small_conv()
    from compiler.build import lower

    prog = tgt.codegen(lower(s, args, target=tgt))
    insns = prog.instructions()
    # drop the first pop of the compute module's load->compute queue: a token is left over
    k = next(i for i, x in enumerate(insns) if x.module == "compute" and x.pop_prev_dep)
    with pytest.raises(StreamCheckError, match="tokens left unbalanced at FINISH") as e:
        check_program(corrupt(prog, k, pop_prev_dep=False))
    assert e.value.index == len(insns) - 1
    # a pop before any push underflows, at that instruction's index
    flag = "pop_next_dep" if insns[0].module == "load" else "pop_prev_dep"
    with pytest.raises(StreamCheckError, match="instruction 0: pops queue"):
        check_program(corrupt(prog, 0, **{flag: True}))
    first_load = next(i for i, x in enumerate(insns) if x.module == "load")
    # an SRAM range past the buffer
    with pytest.raises(StreamCheckError, match=f"instruction {first_load}: sram_base"):
        check_program(corrupt(prog, first_load, sram_base=prog.config.inp_depth - 1))


def test_in_order_machine_agrees_with_the_simulator():
    built = build_conv2d(Conv2dLayer("t", 5, 5, 4, 8, 3, 2, 1), "default", relu=True)
    from .helpers import run_in_order

    dram = run_in_order(built.program)
    assert built.matches(built.program.read("out", dram))
    np.testing.assert_array_equal(run(built.program).read("out"),
                                  built.program.read("out", dram))  # fmt: skip
