"""A program file written from ISA.md alone, with numpy and json only, runs on every consumer.

Nothing here uses the project's encoder, assembler or program writer: the instruction words are
packed from the bit positions ISA.md §2 lists for the default preset, the config is the knob
table of §1 (which has no name), and the file follows §4 key by key. The simulator and the RTL
must both run it bit-exact.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

# ISA.md §1, the `default` preset's knobs, exactly as the table lists them.
DEFAULT_KNOBS = {
    "batch": 1, "block_in": 4, "block_out": 4,
    "inp_bits": 8, "wgt_bits": 8, "out_bits": 8, "acc_bits": 32,
    "uop_buf_bytes": 32768, "inp_buf_bytes": 8192, "wgt_buf_bytes": 16384,
    "acc_buf_bytes": 32768, "bus_bytes": 8, "dram_latency": 32,
    "cmd_queue_depth": 16, "dep_queue_depth": 8, "gemm_ii": 1, "alu_ii": 2, "alu_imm_ii": 2,
    "clock_mhz": 200,
}  # fmt: skip

LOAD, STORE, GEMM, FINISH = 0, 1, 2, 3
UOP, WGT, INP, OUT = 0, 1, 2, 4


def word(**fields_at: tuple[int, int]) -> bytes:
    """Pack ``name=(lsb, value)`` pairs into a 128-bit little-endian word."""
    w = 0
    for lsb, value in fields_at.values():
        w |= value << lsb
    return w.to_bytes(16, "little")


def header(opcode, pop_prev=0, pop_next=0, push_prev=0, push_next=0):
    return {"opcode": (0, opcode), "pop_prev": (3, pop_prev), "pop_next": (4, pop_next),
            "push_prev": (5, push_prev), "push_next": (6, push_next)}  # fmt: skip


def mem(opcode, memory_type, sram, dram, y, x, stride, **deps):
    return word(
        **header(opcode, **deps), memory_type=(7, memory_type), sram_base=(10, sram),
        dram_base=(26, dram), y_size=(64, y), x_size=(80, x), x_stride=(96, stride),
    )  # fmt: skip


def gemm(reset, uop_begin, uop_end, **deps):
    return word(**header(GEMM, **deps), reset=(7, reset), uop_begin=(8, uop_begin),
                uop_end=(21, uop_end), iter_out=(35, 1), iter_in=(49, 1))  # fmt: skip


def write_program(path):
    rng = np.random.default_rng(5)
    inp = rng.integers(-3, 4, 4).astype(np.int8)  # one 1x4 input tile
    wgt = rng.integers(-3, 4, (4, 4)).astype(np.int8)  # one 4x4 weight tile, out-major
    # DRAM: instructions at 0 (8 of them, 128 bytes), then uop, inp, wgt, out at 128.. (bytes)
    uop_word = (0 << 0) | (0 << 11) | (0 << 22)  # dst [10:0], src [21:11], wgt [31:22]
    code = b"".join([
        mem(LOAD, UOP, 0, 128 // 4, 1, 1, 1),
        mem(LOAD, INP, 0, 144 // 4, 1, 1, 1),
        mem(LOAD, WGT, 0, 160 // 16, 1, 1, 1, push_next=1),
        gemm(1, 0, 1),
        gemm(0, 0, 1, pop_prev=1, push_next=1),
        mem(STORE, OUT, 0, 176 // 4, 1, 1, 1, pop_prev=1, push_prev=1),
        mem(LOAD, UOP, 0, 0, 1, 0, 0, pop_next=1),  # compute NOP: wait for the store
        word(**header(FINISH)),
    ])  # fmt: skip
    dram = np.zeros(192, np.uint8)
    dram[: len(code)] = np.frombuffer(code, np.uint8)
    dram[128:132] = np.array([uop_word], "<u4").view(np.uint8)
    dram[144:148] = inp.view(np.uint8)
    dram[160:176] = wgt.reshape(-1).view(np.uint8)
    symbols = {
        "inp": {"offset": 144, "dtype": "int8", "shape": [4], "layout": "k", "role": "input"},
        "wgt": {"offset": 160, "dtype": "int8", "shape": [4, 4], "layout": "ok", "role": "param"},
        "out": {"offset": 176, "dtype": "int8", "shape": [4], "layout": "o", "role": "output"},
    }
    np.savez(
        path,
        format=np.array("vta-program"),
        isa_version=np.array(1),
        config=np.array(json.dumps(DEFAULT_KNOBS)),
        dram=dram,
        insn_base=np.array(0),
        insn_count=np.array(len(code) // 16),
        symbols=np.array(json.dumps(symbols)),
    )
    expected = (wgt.astype(np.int32) @ inp.astype(np.int32)).astype(np.int8)
    return expected


def _vtac(*args):
    return subprocess.run([sys.executable, "-m", "runtime.cli", *args], capture_output=True,
                          text=True)  # fmt: skip


def test_simulator_runs_a_program_written_from_the_contract(tmp_path):
    expected = write_program(tmp_path / "p.npz")
    out = tmp_path / "dram.npy"
    proc = _vtac("sim", str(tmp_path / "p.npz"), "--json", "--dram-out", str(out))
    assert proc.returncode == 0, proc.stderr
    figures = json.loads(proc.stdout)
    assert figures["gemm_uops"] == 1 and figures["cycles"] > 0
    assert np.array_equal(np.load(out)[176:180].view(np.int8), expected)


@pytest.mark.rtl
def test_rtl_runs_a_program_written_from_the_contract(tmp_path):
    if shutil.which("iverilog") is None:
        pytest.skip("Icarus Verilog (iverilog) is not installed")
    write_program(tmp_path / "p.npz")
    proc = _vtac("rtl", str(tmp_path / "p.npz"), "--json")
    assert proc.returncode == 0, proc.stderr
    figures = json.loads(proc.stdout.strip().splitlines()[-1])
    assert figures["match"] and figures["rtl_cycles"] == figures["sim_cycles"]
