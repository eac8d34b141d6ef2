from pathlib import Path

import numpy as np
import pytest

import isa
from isa.asm import assemble, disassemble
from isa.errors import AsmError
from isa.program import load_program
from runtime.cli import main as vtac

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "isa" / "examples").glob("*.vasm"))


def _same(a: isa.Program, b: isa.Program) -> None:
    assert a.config == b.config
    assert np.array_equal(a.dram, b.dram)
    assert (a.insn_base, a.insn_count) == (b.insn_base, b.insn_count)
    assert a.symbols == b.symbols


def test_examples_exist():
    assert {p.stem for p in EXAMPLES} >= {"matmul16", "alu_ops", "padded_load", "deadlock"}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_round_trip(path):
    prog = assemble(path.read_text())
    text = disassemble(prog)
    again = assemble(text)
    _same(prog, again)
    assert disassemble(again) == text


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_cli_round_trip(path, tmp_path, capsys):
    out = tmp_path / "p.npz"
    assert vtac(["asm", str(path), "-o", str(out)]) == 0
    text_file = tmp_path / "p.vasm"
    assert vtac(["disasm", str(out), "-o", str(text_file)]) == 0
    assert vtac(["asm", str(text_file), "-o", str(tmp_path / "q.npz")]) == 0
    _same(load_program(out), load_program(tmp_path / "q.npz"))
    capsys.readouterr()
    assert vtac(["disasm", "--insns-only", str(out)]) == 0
    assert "finish" in capsys.readouterr().out


def test_other_preset_and_inline_config_round_trip():
    cfg = isa.load_config("default").replace(name="slow-dram", dram_latency=100)
    prog = isa.Program.build(
        cfg,
        [isa.Gemm(uop_end=3, iter_in=2), isa.Finish()],
        data={200: np.arange(7, dtype=np.uint8)},
    )
    text = disassemble(prog)
    assert text.startswith(".config {")
    _same(prog, assemble(text))


def test_raw_words_keep_undecodable_instructions():
    cfg = isa.load_config("default")
    prog = isa.Program.build(cfg, [isa.Finish()], dram_bytes=64)
    prog.dram[0] = 7  # opcode 7 is not an instruction
    prog.dram[15] = 0x80  # and a stray bit in an unused position of another word
    text = disassemble(prog)
    assert "raw 0x" in text
    _same(prog, assemble(text))


@pytest.mark.parametrize(
    "text, match",
    [
        (".text 0\n finish", "no .config"),
        (".config default\n.text 0\n jump", "line 3: unknown instruction 'jump'"),
        (".config default\n.text 0\n load inp x_sise=3", "line 3: .*unknown field 'x_sise'"),
        (".config default\n.text 0\n load foo", "line 3: .*unknown memory type 'foo'"),
        (".config default\n.text 0\n gemm uop_begin=99999", "line 3: .*uop_begin"),
        (".config default\n.text 0\n load inp dram_base=@nope", "line 3: unknown symbol"),
        (".config default\n.text 8\n finish", ".text offset 8"),
        (
            ".config default\n.text 0\n finish\n.tensor A input int8 2,2 0\n 1 2 3",
            r"3 values for shape \(2, 2\)",
        ),
        (".config default\n.text 0\n finish\n.tensor A input int8 1 0\n 300", "does not fit"),
        (".config nonesuch\n.text 0\n finish", "line 1: unknown config"),
        (".config default\n finish", "line 2: a line outside any section"),
    ],
)
def test_errors_name_the_line(text, match):
    with pytest.raises(AsmError, match=match):
        assemble(text)


def test_cli_error_exit_code(tmp_path, capsys):
    src = tmp_path / "bad.vasm"
    src.write_text(".config default\n.text 0\n  gemm bogus\n")
    assert vtac(["asm", str(src), "-o", str(tmp_path / "o.npz")]) == 1
    err = capsys.readouterr().err
    assert "bad.vasm:3" in err and "bogus" in err
    assert not (tmp_path / "o.npz").exists()
    assert vtac(["disasm", str(tmp_path / "missing.npz")]) == 1


def test_symbol_reference_in_elements():
    prog = assemble(
        ".config default\n.text 0\n load inp dram_base=@A+2 x_size=1 x_stride=1\n finish\n"
        ".tensor A input int8 8,4 128\n random 1\n"
    )
    assert prog.instructions()[0].dram_base == 128 // 4 + 2
