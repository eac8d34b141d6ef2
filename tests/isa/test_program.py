import json
import zipfile

import numpy as np
import pytest

import isa
from isa.config import load_config
from isa.errors import ProgramError
from isa.program import Program, Symbol, load_program


def _prog():
    cfg = load_config("default")
    return Program.build(
        cfg,
        [isa.Load(memory_type=isa.MemType.INP, dram_base=16, x_size=1, x_stride=1), isa.Finish()],
        data={64: np.arange(16, dtype=np.int8)},
        symbols=[
            Symbol("x", 64, "int8", (4, 4), "NC", "input"),
            Symbol("y", 128, "int32", (2,), "", "output"),
        ],
    )


def test_save_load_round_trip(tmp_path):
    prog = _prog()
    path = tmp_path / "p.npz"
    prog.save(path)
    back = load_program(path)
    assert back.config == prog.config
    assert np.array_equal(back.dram, prog.dram)
    assert (back.insn_base, back.insn_count) == (0, 2)
    assert back.symbols == prog.symbols
    assert back.instructions() == prog.instructions()
    assert back.read("x").tolist() == np.arange(16).reshape(4, 4).tolist()
    assert back.inputs() == ["x"] and back.outputs() == ["y"]
    # the file is plain arrays: it loads without pickle, strings as 0-d unicode arrays
    with np.load(path, allow_pickle=False) as z:
        assert str(z["format"]) == "vta-program" and z["format"].shape == ()
        assert int(z["isa_version"]) == isa.ISA_VERSION
        assert json.loads(str(z["config"]))["block_in"] == 4


def test_write_checks_shape():
    prog = _prog()
    prog.write("y", np.array([1, -2]))
    assert prog.read("y").tolist() == [1, -2]
    with pytest.raises(ProgramError, match="'y'.*shape"):
        prog.write("y", np.zeros(3))
    with pytest.raises(ProgramError, match="no symbol 'z'"):
        prog.read("z")


def test_truncated_file(tmp_path):
    path = tmp_path / "p.npz"
    _prog().save(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ProgramError, match="truncated or corrupt"):
        load_program(path)


def test_missing_file(tmp_path):
    with pytest.raises(ProgramError, match="no such file"):
        load_program(tmp_path / "nope.npz")


def _rewrite(tmp_path, **changes):
    arrays = _prog().to_arrays()
    arrays.update(changes)
    for k, v in list(arrays.items()):
        if v is None:
            del arrays[k]
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    return path


def test_wrong_isa_version(tmp_path):
    path = _rewrite(tmp_path, isa_version=np.array(99))
    with pytest.raises(ProgramError, match="isa_version 99"):
        load_program(path)


def test_wrong_format_and_missing_key(tmp_path):
    with pytest.raises(ProgramError, match="format"):
        load_program(_rewrite(tmp_path, format=np.array("something-else")))
    with pytest.raises(ProgramError, match="missing key.*symbols"):
        load_program(_rewrite(tmp_path, symbols=None))


def test_unsupported_config(tmp_path):
    cfg = json.loads(load_config("default").to_json())
    cfg["batch"] = 3
    with pytest.raises(ProgramError, match="unsupported config.*batch"):
        load_program(_rewrite(tmp_path, config=np.array(json.dumps(cfg))))


def test_instructions_past_the_image(tmp_path):
    with pytest.raises(ProgramError, match="run past"):
        load_program(_rewrite(tmp_path, insn_count=np.array(10**6)))
    with pytest.raises(ProgramError, match="multiple of 16"):
        load_program(_rewrite(tmp_path, insn_base=np.array(8)))


def test_symbol_past_the_image():
    cfg = load_config("default")
    with pytest.raises(ProgramError, match="symbol 'big'"):
        Program(cfg, np.zeros(32, np.uint8), 0, 0, {"big": Symbol("big", 16, "int32", (8,))})


def test_save_is_atomic(tmp_path):
    path = tmp_path / "p.npz"
    _prog().save(path)
    before = path.read_bytes()
    bad = _prog()
    bad.symbols = {"x": object()}  # not serialisable: the save must fail without damage
    with pytest.raises(AttributeError):
        bad.save(path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["p.npz"]


def test_zip_is_npz(tmp_path):
    path = tmp_path / "p.npz"
    _prog().save(path)
    assert zipfile.is_zipfile(path)


def test_uop_counts_split_by_kind():
    cfg = load_config("default")
    insns = [
        isa.Gemm(reset=True, uop_begin=0, uop_end=2, iter_out=3, iter_in=1),
        isa.Gemm(uop_begin=1, uop_end=4, iter_out=2, iter_in=5),
        isa.Alu(use_imm=True, imm=3, uop_begin=0, uop_end=1, iter_out=7, iter_in=1),
        isa.Alu(alu_opcode=isa.AluOp.ADD, uop_begin=2, uop_end=4, iter_out=1, iter_in=4),
        isa.Alu(use_imm=True, uop_begin=3, uop_end=3, iter_out=9, iter_in=9),  # no micro-op
        isa.Finish(),
    ]
    counts = Program.build(cfg, insns).uop_counts()
    assert counts == {"gemm": 30, "reset": 6, "alu": 8, "alu_imm": 7}
