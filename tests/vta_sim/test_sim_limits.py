"""Every run is bounded, its cycle arithmetic stays in range, and the timing formulas it runs
are isa.timing's own."""

from __future__ import annotations

import json

import numpy as np
import pytest

import isa
import isa.timing
import vta_sim
from runtime.cli import main
from vta_sim import CycleLimitError
from vta_sim import kernels as K
from vta_sim.simulator import DEFAULT_MAX_CYCLES, MAX_CYCLES_LIMIT

CFG = isa.load_config("default")


def _gemm_program(iter_out: int, iter_in: int, uops: int = 1) -> isa.Program:
    insns = [isa.Gemm(uop_begin=0, uop_end=uops, iter_out=iter_out, iter_in=iter_in), isa.Finish()]
    return isa.Program.build(CFG, insns)


def test_an_instruction_past_the_default_limit_is_refused_before_its_work():
    # 16383 x 16383 x 8192 micro-ops: hours of work if it ran
    prog = _gemm_program(16383, 16383, uops=8192)
    with pytest.raises(CycleLimitError, match="instruction 0 \\(GEMM\\).*default limit") as e:
        vta_sim.simulate(prog)
    assert e.value.cycle > DEFAULT_MAX_CYCLES


def test_a_named_limit_is_honoured_as_the_run_goes():
    step = isa.Gemm(uop_begin=0, uop_end=1, iter_out=100)
    prog = isa.Program.build(CFG, [step] * 50 + [isa.Finish()])
    full = vta_sim.simulate(prog, trace=False).cycles
    assert vta_sim.simulate(prog, max_cycles=full, trace=False).cycles == full
    for limit in (full - 1, full // 2, 10):
        with pytest.raises(CycleLimitError, match=f"max_cycles={limit}[;)]"):
            vta_sim.simulate(prog, max_cycles=limit, trace=False)


@pytest.mark.parametrize("limit", [0, -5, MAX_CYCLES_LIMIT + 1])
def test_limits_out_of_range_are_refused(limit):
    with pytest.raises(CycleLimitError, match="outside"):
        vta_sim.simulate(_gemm_program(1, 1), max_cycles=limit)


def test_largest_knobs_do_not_overflow_the_cycle_count():
    cfg = CFG.replace(name="slow", gemm_ii=isa.config.MAX_KNOB["gemm_ii"])
    most = isa.Gemm(uop_begin=0, uop_end=8192, iter_out=16383, iter_in=16383)
    prog = isa.Program.build(cfg, [most, isa.Finish()])
    with pytest.raises(CycleLimitError) as e:
        vta_sim.simulate(prog, max_cycles=10**15)
    # the end cycle the message names is exact: issue cycle + uops x ii + pipeline latency
    exact = 16383 * 16383 * 8192 * cfg.gemm_ii + isa.timing.GEMM_PIPE_LATENCY
    assert 0 < e.value.cycle - exact < 100 and str(e.value.cycle) in str(e.value)


def test_the_event_loop_runs_isa_timings_own_formulas():
    for name in ("dma_beats", "pad_entries", "uop_exec_cycles", "alu_ii_of", "fetch_beats"):
        compiled = getattr(K, name)
        assert compiled.py_func.__code__ is getattr(isa.timing, name).__code__, name


def test_sim_checks_outputs_before_running_and_writes_none_on_failure(tmp_path, capsys):
    path = tmp_path / "p.npz"
    _gemm_program(2, 2).save(path)
    dram = tmp_path / "d.bin"
    code = main(["sim", str(path), "--dram-out", str(dram), "--plot", str(tmp_path / "g.xyz")])
    err = capsys.readouterr().err
    assert code == 1 and "unsupported chart format '.xyz'" in err and not dram.exists()
    code = main(["sim", str(path), "--dram-out", str(dram), "--trace", str(tmp_path / "no/t.json")])
    assert code == 1 and "does not exist" in capsys.readouterr().err and not dram.exists()
    slow = tmp_path / "slow.npz"
    _gemm_program(1000, 1000).save(slow)
    code = main(["sim", str(slow), "--dram-out", str(dram), "--max-cycles", "1000"])
    assert code == 1 and not dram.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.npz", "slow.npz"]


def test_sim_json_is_strict(tmp_path, capsys):
    path = tmp_path / "p.npz"
    _gemm_program(2, 2).save(path)
    assert main(["sim", str(path), "--json"]) == 0
    json.loads(capsys.readouterr().out, parse_constant=lambda c: pytest.fail(c))


def test_deadlock_report_is_one_line_on_the_command_line(tmp_path, capsys):
    prog = isa.Program.build(CFG, [isa.Gemm(pop_prev_dep=True), isa.Finish()])
    prog.save(tmp_path / "d.npz")
    assert main(["sim", str(tmp_path / "d.npz")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("vtac sim: error: deadlock at cycle")


def test_disasm_bounds_its_micro_op_enumeration():
    from isa.asm import assemble, disassemble

    # a few hundred bytes of instructions that name 65535 x 65535 micro-op indices each
    huge = isa.Load(memory_type=isa.MemType.UOP, y_size=65535, x_size=65535, x_stride=1)
    prog = isa.Program.build(CFG, [huge] * 20 + [isa.Finish()], dram_bytes=4096)
    prog.dram[3000:3004] = 7
    text = disassemble(prog)
    assert "micro-op tables past the first" in text
    assert np.array_equal(assemble(text).dram, prog.dram)


def test_a_fault_past_the_limit_is_still_the_fault():
    bad = isa.Gemm(uop_begin=0, uop_end=1, iter_out=16383, iter_in=16383, dst_factor_out=1)
    with pytest.raises(vta_sim.InstructionError, match=r"instruction 0 \(dst\)"):
        vta_sim.simulate(isa.Program.build(CFG, [bad, isa.Finish()]))
    alu = isa.Alu(uop_begin=0, uop_end=1, iter_out=16383, iter_in=16383, src_factor_in=1)
    with pytest.raises(vta_sim.InstructionError, match=r"instruction 0 \(src\)"):
        vta_sim.simulate(isa.Program.build(CFG, [alu, isa.Finish()]))
