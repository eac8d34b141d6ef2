"""Edges of the ISA layer: field limits, config and program-file validation, safe outputs, the
stream validator, and the assembler's refusals (each naming what is at fault)."""

from __future__ import annotations

import json
import os
import stat

import numpy as np
import pytest

import isa
from isa import AsmError, ConfigError, ExecutionError, OutputError, ProgramError
from isa.asm import assemble
from isa.config import MAX_JSON_DEPTH, MAX_KNOB, parse_json
from isa.outputs import OutputFiles
from isa.program import Symbol
from isa.validate import FIELD_NAMES, check_stream, stream_faults

CFG = isa.load_config("default")


# ---- limits ---------------------------------------------------------------------------------
@pytest.mark.parametrize("preset", isa.preset_names())
def test_limits_are_the_layouts_field_ranges(preset):
    cfg = isa.load_config(preset)
    lim = isa.limits(cfg)
    for fmt in isa.FORMATS:
        for f in isa.layout(fmt, cfg).fields:
            assert lim.range(fmt, f.name) == (f.min_value, f.max_value)
    assert lim.max("mem", "x_size") == 2**16 - 1 and lim.max("mem", "x_pad_1") == 15
    assert lim.range("alu", "imm") == (-(2**15), 2**15 - 1)
    assert lim.max("gemm", "uop_end") >= cfg.uop_depth  # log_uop+1 bits hold the depth itself
    with pytest.raises(KeyError, match="no field 'nope'"):
        lim.max("mem", "nope")


# ---- config ---------------------------------------------------------------------------------
@pytest.mark.parametrize("knob", sorted(MAX_KNOB))
def test_every_bounded_knob_refuses_past_its_maximum(knob):
    knobs = CFG.to_dict() | {knob: MAX_KNOB[knob] * 2}
    with pytest.raises(ConfigError, match=knob):
        isa.HwConfig.from_dict(knobs)


@pytest.mark.parametrize("clock", [float("nan"), float("inf"), -1.0, 0, True, "200", 10**400])
def test_clock_must_be_finite_and_positive(clock):
    with pytest.raises(ConfigError, match="clock_mhz"):
        CFG.replace(clock_mhz=clock)


@pytest.mark.parametrize(
    "text, match",
    [
        ('{"a": NaN}', "NaN"),
        ('{"a": Infinity}', "Infinity"),
        ("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1), "deeper"),
        ('{"a": "[[[[[[["}', None),  # brackets inside strings do not count
    ],
)
def test_json_is_strict_and_shallow(text, match):
    if match is None:
        assert parse_json(text, "x") == {"a": "[[[[[[["}
    else:
        with pytest.raises(ConfigError, match=match):
            parse_json(text, "x")


# ---- program files ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "dtype, shape, match",
    [
        ("int8", (0,), "below 1"),
        ("int8", (2, -1), "below 1 \\(axis 1\\)"),
        ("V0", (4,), "fixed-size numeric"),
        ("U3", (4,), "fixed-size numeric"),
        ("O", (4,), "fixed-size numeric"),
        ("int8,int8", (4,), "fixed-size numeric"),
        ("(2,)i4", (4,), "fixed-size numeric"),
        ("datetime64", (4,), "fixed-size numeric"),
        ("nonsense", (4,), "not a numpy dtype"),
    ],
)
def test_symbols_need_a_numeric_dtype_and_positive_shape(dtype, shape, match):
    with pytest.raises(ProgramError, match=match):
        Symbol("x", 0, dtype, shape).check()


def test_symbol_sizes_do_not_overflow():
    sym = Symbol("x", 0, "int32", (2**40, 2**40))
    assert sym.nbytes == 4 * 2**80
    with pytest.raises(ProgramError, match="run past"):
        isa.Program(CFG, np.zeros(64, np.uint8), 0, 0, {"x": sym})


def test_a_plain_npy_is_not_a_program(tmp_path):
    np.save(tmp_path / "a.npy", np.arange(3))
    with pytest.raises(ProgramError, match="single .npy array"):
        isa.load_program(tmp_path / "a.npy")
    with pytest.raises(ProgramError, match="is a directory"):
        isa.load_program(tmp_path)


def test_symbol_entries_are_typed(tmp_path):
    arrays = isa.Program.build(CFG, [isa.Finish()]).to_arrays()
    for entry, match in [
        ({"offset": "0", "dtype": "int8", "shape": [1]}, "offset '0' is not an integer"),
        ({"offset": 0, "dtype": "int8", "shape": [1.5]}, "axis 0 is 1.5"),
        ({"offset": 0, "dtype": "int8", "shape": 3}, "list of integers"),
        ({"offset": 0, "dtype": "int8"}, "missing key 'shape'"),
        ({"offset": 0, "dtype": "int8", "shape": [1], "x": 1}, "unknown key"),
        ([1, 2], "must be an object"),
    ]:
        arrays["symbols"] = np.array(json.dumps({"s": entry}))
        np.savez(tmp_path / "p.npz", **arrays)
        with pytest.raises(ProgramError, match=match):
            isa.load_program(tmp_path / "p.npz")


# ---- outputs ----------------------------------------------------------------------------------
def test_program_files_get_the_usual_permissions(tmp_path):
    mask = os.umask(0o022)
    try:
        isa.Program.build(CFG, [isa.Finish()]).save(tmp_path / "p.npz")
    finally:
        os.umask(mask)
    assert stat.S_IMODE((tmp_path / "p.npz").stat().st_mode) == 0o644


def test_outputs_name_missing_directories_and_directories(tmp_path):
    prog = isa.Program.build(CFG, [isa.Finish()])
    with pytest.raises(OutputError, match="does not exist"):
        prog.save(tmp_path / "missing" / "p.npz")
    with pytest.raises(OutputError, match="is a directory"):
        prog.save(tmp_path)
    assert os.listdir(tmp_path) == []


def test_outputs_are_all_or_none(tmp_path):
    with pytest.raises(RuntimeError), OutputFiles() as out:
        out.reserve(tmp_path / "a.bin").write_bytes(b"a")
        out.reserve(tmp_path / "b.bin").write_bytes(b"b")
        raise RuntimeError("failed after writing")
    assert os.listdir(tmp_path) == []
    with OutputFiles() as out:
        out.reserve(tmp_path / "a.bin").write_bytes(b"a")
    assert os.listdir(tmp_path) == ["a.bin"]


# ---- the stream validator -------------------------------------------------------------------
def test_validator_names_index_and_field_by_precedence():
    insns = [
        isa.Finish(),
        isa.Store(x_size=1, x_pad_0=1, push_next_dep=True),  # pad beats the flag
        isa.Load(memory_type=isa.MemType.OUT, x_size=1, pop_prev_dep=True),
    ]
    raw = isa.encode_stream(insns, CFG)
    codes, where = stream_faults(isa.decode_fields(raw, CFG))
    assert codes[0] == 0
    assert FIELD_NAMES[where[1]] == "x_pad_0" and FIELD_NAMES[where[2]] == "memory_type"
    with pytest.raises(ExecutionError, match=r"instruction 1 \(x_pad_0\)"):
        check_stream(raw, CFG)
    bad_opcode = raw.copy()
    bad_opcode[0] = 7
    with pytest.raises(ExecutionError, match=r"instruction 0 \(opcode\)"):
        check_stream(bad_opcode, CFG)


def test_machine_and_validator_agree():
    m = isa.Machine(CFG)
    with pytest.raises(ExecutionError, match=r"instruction 3 \(pop_prev_dep\).*load module"):
        m.execute(isa.Load(memory_type=isa.MemType.WGT, pop_prev_dep=True), index=3)


# ---- the assembler ----------------------------------------------------------------------------
def _asm(body: str, **kw):
    return assemble(".config default\n.text 0\n" + body + "\n  finish\n", **kw)


@pytest.mark.parametrize(
    "line, match",
    [
        ("load inp reset=1 x_size=1", "unknown field 'reset'"),
        ("load inp reset", "unknown flag 'reset'"),
        ("finish sram_base=1", "unknown field 'sram_base' \\(fields: none\\)"),
        ("gemm iter_out=2 iter_out=3", "'iter_out' is written twice"),
        ("gemm pop_prev pop_prev_dep=1", "written twice"),
        ("gemm pop_prev_dep=2", "must be 0 or 1"),
        ("alu add use_imm=7", "must be 0 or 1"),
        ("load inp x_size=65536", "x_size.*does not fit"),
        ("alu add imm=32768", "imm.*does not fit"),
        ("gemm iter_out=-1", "iter_out.*does not fit"),
    ],
)
def test_instruction_faults_name_the_line(line, match):
    with pytest.raises(AsmError, match="line 3: .*" + match):
        _asm("  " + line)


@pytest.mark.parametrize(
    "section, match",
    [
        (
            ".tensor A input int8 4 auto\n  random 1 0 1000",
            "random range 0..1000 does not fit int8",
        ),
        (".tensor A input int8 4 auto\n  random 1 5 2", "empty"),
        (".tensor A input int8 4 auto\n  random -3", "seed -3 is negative"),
        (".tensor A input int8 2 auto\n  1 300", "300 does not fit int8"),
        (".tensor A input float16 1 auto\n  1e10", "overflows"),
        (".tensor A input int8 -4 auto", "below 1"),
        (".tensor A input int8 0 auto", "below 1"),
        (".tensor A input O 4 auto", "fixed-size numeric"),
        (".tensor A input int8 1099511627776,1099511627776 auto", "more than"),
        (".bytes 99999999999\n  ff", "outside the DRAM image"),
        (".uops auto\n  18446744073709551616 0 0", "does not fit 32 bits"),
    ],
)
def test_data_section_faults(section, match):
    with pytest.raises(AsmError, match=match):
        assemble(".config default\n.text 0\n  finish\n" + section + "\n")


def test_default_random_range_fits_the_dtype():
    prog = assemble(
        ".config default\n.text 0\n  finish\n.tensor A input uint8 64 auto\n  random 1\n"
    )
    values = prog.read("A")
    assert values.min() >= 0 and values.max() <= 127


def test_check_refuses_faults_at_their_line():
    _asm("  load out x_size=1")  # assembles: the text form can express run-time faults
    with pytest.raises(AsmError, match=r"line 3: instruction 0 \(memory_type\)"):
        _asm("  load out x_size=1", check=True)
