"""Malformed inputs, faulting instructions and stuck runs fail with errors naming what is wrong."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import isa
import vta_sim
from isa import Alu, Finish, Gemm, Load, MemType, Program, ProgramError, Store
from runtime.cli import main as vtac
from vta_sim import CycleLimitError, DeadlockError, InstructionError, NoFinishError

CFG = isa.load_config("default")
REPO = Path(__file__).resolve().parents[2]


def build(insns, **kw) -> Program:
    return Program.build(CFG, insns, dram_bytes=kw.pop("dram_bytes", 4096), **kw)


def patch_field(prog: Program, index: int, value: int, lsb: int, width: int) -> Program:
    """Overwrite bits [lsb, lsb + width) of instruction ``index`` (fields the encoder refuses)."""
    p = prog.copy()
    word = int.from_bytes(p.dram[p.insn_base + 16 * index :][:16].tobytes(), "little")
    word = (word & ~(((1 << width) - 1) << lsb)) | (value << lsb)
    p.dram[p.insn_base + 16 * index :][:16] = np.frombuffer(word.to_bytes(16, "little"), np.uint8)
    return p


def raises(prog: Program, index: int, field: str) -> InstructionError:
    with pytest.raises(InstructionError) as e:
        vta_sim.simulate(prog)
    assert e.value.index == index and e.value.field == field, str(e.value)
    assert f"instruction {index}" in str(e.value) and field in str(e.value)
    assert isinstance(e.value, isa.ExecutionError)
    return e.value


# ---- faulting instructions ----------------------------------------------------------------
def test_bad_opcode():
    prog = patch_field(build([Gemm(), Gemm(), Finish()]), 1, 6, 0, 3)
    raises(prog, 1, "opcode")
    # reported when it reaches the head of its queue, not as a wait for a token it cannot mean
    prog = patch_field(build([Gemm(pop_prev_dep=True), Finish()]), 0, 5, 0, 3)
    raises(prog, 0, "opcode")


@pytest.mark.parametrize("value", [6, 7])
def test_memory_type_outside_the_isa(value):
    lay = isa.layout("mem", CFG).field("memory_type")
    prog = patch_field(
        build([Load(memory_type=MemType.ACC, x_size=1), Finish()]), 0, value, lay.lsb, lay.width
    )
    raises(prog, 0, "memory_type")


def test_memory_type_not_allowed_here():
    raises(build([Gemm(), Load(memory_type=MemType.OUT, x_size=1), Finish()]), 1, "memory_type")
    raises(build([Store(memory_type=MemType.INP, x_size=1), Finish()]), 0, "memory_type")


def test_alu_opcode_outside_the_isa():
    lay = isa.layout("alu", CFG).field("alu_opcode")
    prog = patch_field(build([Alu(uop_begin=0, uop_end=1), Finish()]), 0, 6, lay.lsb, lay.width)
    raises(prog, 0, "alu_opcode")


def test_sram_index_out_of_range():
    ld = Load(memory_type=MemType.INP, sram_base=CFG.inp_depth - 1, x_size=2, x_stride=2)
    err = raises(build([Finish(pop_prev_dep=True), ld]), 1, "sram_base")
    assert "LOAD INP on load" in str(err)
    raises(
        build([Load(memory_type=MemType.ACC, y_pad_1=1, x_size=CFG.acc_depth), Finish()]),
        0,
        "sram_base",
    )


def test_micro_op_index_out_of_range():
    # uop 0 is (0, 0, 0); the outer loop walks dst past the accumulator
    gemm = Gemm(uop_begin=0, uop_end=1, iter_out=3, dst_factor_out=CFG.acc_depth - 1)
    raises(build([gemm, Finish()]), 0, "dst")
    raises(build([Gemm(uop_begin=5, uop_end=4), Finish()]), 0, "uop_end")


def test_dram_out_of_range():
    ld = Load(memory_type=MemType.INP, dram_base=4096 // 4 - 1, x_size=2)
    raises(build([ld, Finish()]), 0, "dram_base")
    st = Store(dram_base=10_000, x_size=1)
    raises(build([Gemm(), st, Finish()]), 1, "dram_base")


def test_store_padding():
    raises(build([Store(x_size=1, x_pad_1=1), Finish()]), 0, "x_pad_1")


@pytest.mark.parametrize(
    "insn,flag",
    [
        (Load(memory_type=MemType.INP, x_size=1, pop_prev_dep=True), "pop_prev_dep"),
        (Load(memory_type=MemType.WGT, x_size=0, push_prev_dep=True), "push_prev_dep"),
        (Store(x_size=1, pop_next_dep=True), "pop_next_dep"),
        (Store(x_size=0, push_next_dep=True), "push_next_dep"),
    ],
)
def test_illegal_dependency_flag(insn, flag):
    err = raises(build([Gemm(), insn, Finish()]), 1, flag)
    assert "does not have" in str(err)


def test_compute_may_use_every_flag():
    insns = [
        Load(memory_type=MemType.INP, x_size=0, push_next_dep=True),
        Store(x_size=0, push_prev_dep=True),
        Gemm(pop_prev_dep=True, pop_next_dep=True, push_prev_dep=True, push_next_dep=True),
        Load(memory_type=MemType.INP, x_size=0, pop_next_dep=True),
        Store(x_size=0, pop_prev_dep=True, push_prev_dep=True),
        Finish(pop_next_dep=True),
    ]
    assert vta_sim.simulate(build(insns)).finish_index == 5


# ---- runs that stop without FINISH ------------------------------------------------------
DEADLOCK = [
    Load(memory_type=MemType.INP, x_size=1, pop_next_dep=True),
    Gemm(),
    Finish(pop_prev_dep=True),
]


def test_deadlock_reports_every_module_and_queue():
    with pytest.raises(DeadlockError) as e:
        vta_sim.simulate(build(DEADLOCK))
    msg, rep = str(e.value), e.value.report
    assert msg.startswith("deadlock at cycle")
    assert rep["modules"]["load"]["instruction"] == 0
    assert "compute->load" in rep["modules"]["load"]["waits_for"]
    assert rep["modules"]["compute"]["instruction"] == 2
    assert rep["modules"]["compute"]["opcode"] == "FINISH"
    assert "load->compute (0 tokens)" in rep["modules"]["compute"]["waits_for"]
    assert rep["modules"]["store"]["instruction"] is None
    assert rep["dependency_queues"] == dict.fromkeys(isa.DEP_QUEUES, 0)
    assert rep["command_queues"] == {"load": 1, "compute": 1, "store": 0}
    for word in (
        "fetch",
        "load",
        "compute",
        "store",
        "LOAD INP",
        "FINISH",
        "store->compute=0",
        "compute=1",
    ):
        assert word in msg


def test_deadlock_on_a_full_queue_names_the_blocked_push():
    cfg = CFG.replace(name="dep1", dep_queue_depth=1)
    insns = [Load(memory_type=MemType.INP, x_size=0, push_next_dep=True)] * 2 + [
        Finish(pop_next_dep=True)
    ]
    with pytest.raises(DeadlockError) as e:
        vta_sim.simulate(Program.build(cfg, insns))
    rep = e.value.report
    assert rep["modules"]["load"]["instruction"] == 1
    assert "room to push into load->compute (full, 1/1)" in rep["modules"]["load"]["waits_for"]
    assert rep["dependency_queues"]["load->compute"] == 1
    assert "store->compute" in rep["modules"]["compute"]["waits_for"]


def test_deadlock_with_fetch_blocked_on_a_full_command_queue():
    cfg = CFG.replace(name="cmd1", cmd_queue_depth=1)
    insns = [Gemm(pop_prev_dep=True), Gemm(), Finish()]
    with pytest.raises(DeadlockError) as e:
        vta_sim.simulate(Program.build(cfg, insns))
    fetch = e.value.report["modules"]["fetch"]
    assert fetch["instruction"] == 1 and "compute command queue (1/1" in fetch["waits_for"]


def test_stream_without_finish():
    with pytest.raises(NoFinishError, match="without FINISH"):
        vta_sim.simulate(build([Gemm(), Load(memory_type=MemType.INP, x_size=1)]))
    with pytest.raises(NoFinishError):
        vta_sim.simulate(build([]))


def test_max_cycles_limit():
    with pytest.raises(CycleLimitError, match="max_cycles=50"):
        vta_sim.simulate(
            build([Gemm(uop_begin=0, uop_end=1, iter_out=100), Finish()]), max_cycles=50
        )
    assert vta_sim.simulate(build([Finish()]), max_cycles=36).cycles == 36


# ---- malformed program files and the command line ---------------------------------------
@pytest.fixture
def good(tmp_path) -> Path:
    path = tmp_path / "good.npz"
    build([Finish()]).save(path)
    return path


def test_truncated_file(good, tmp_path, capsys):
    bad = tmp_path / "truncated.npz"
    bad.write_bytes(good.read_bytes()[:200])
    with pytest.raises(ProgramError, match="truncated"):
        vta_sim.simulate(bad)
    assert vtac(["sim", str(bad)]) == 1
    assert "truncated" in capsys.readouterr().err


def test_wrong_isa_version(tmp_path, capsys):
    arrays = build([Finish()]).to_arrays()
    arrays["isa_version"] = np.array(isa.ISA_VERSION + 1)
    path = tmp_path / "v2.npz"
    np.savez(path, **arrays)
    with pytest.raises(ProgramError, match="isa_version"):
        vta_sim.simulate(path)
    assert vtac(["sim", str(path)]) == 1
    assert "isa_version" in capsys.readouterr().err


@pytest.mark.parametrize("case", ["opcode", "sram", "flag", "dram"])
def test_cli_exits_nonzero_naming_the_instruction(case, tmp_path, capsys):
    progs = {
        "opcode": patch_field(build([Gemm(), Finish()]), 0, 7, 0, 3),
        "sram": build([Load(memory_type=MemType.WGT, sram_base=CFG.wgt_depth, x_size=1), Finish()]),
        "flag": build([Store(x_size=1, push_next_dep=True), Finish()]),
        "dram": build([Load(memory_type=MemType.UOP, dram_base=1 << 20, x_size=1), Finish()]),
    }
    fields = {"opcode": "opcode", "sram": "sram_base", "flag": "push_next_dep", "dram": "dram_base"}
    path = tmp_path / f"{case}.npz"
    progs[case].save(path)
    assert vtac(["sim", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"instruction 0 ({fields[case]})" in err


def test_cli_deadlock_in_process_and_in_a_subprocess(tmp_path, capsys):
    path = tmp_path / "deadlock.npz"
    build(DEADLOCK).save(path)
    assert vtac(["sim", str(path)]) == 1
    assert "deadlock at cycle" in capsys.readouterr().err
    proc = subprocess.run(
        [sys.executable, "-m", "runtime.cli", "sim", str(path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert "deadlock at cycle" in proc.stderr and "load->compute" in proc.stderr
