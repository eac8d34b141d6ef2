"""Generated files are derived from isa/ and must be committed up to date."""

import shutil

from isa.config import load_config
from isa.gen import generated_files, rtl_header, write_generated
from runtime.cli import main as vtac
from tests.conftest import ROOT


def test_committed_generated_files_are_fresh():
    stale = [
        str(p.relative_to(ROOT))
        for p, text in generated_files(ROOT).items()
        if not p.exists() or p.read_text() != text.rstrip("\n") + "\n"
    ]
    assert not stale, f"stale generated files (run `vtac generate`): {stale}"


def test_check_fails_when_the_config_changes(tmp_path, monkeypatch):
    """A config change makes the committed header stale, and `vtac generate --check` says so."""
    for p in generated_files(ROOT):
        dst = tmp_path / p.relative_to(ROOT)
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(p, dst)
    assert vtac(["generate", "--check", "--root", str(tmp_path)]) == 0
    changed = load_config("default").replace(dram_latency=64)
    monkeypatch.setattr("isa.gen.load_config", lambda name="default": changed)
    assert vtac(["generate", "--check", "--root", str(tmp_path)]) == 1
    assert write_generated(tmp_path)
    assert "DRAM_LATENCY = 64;" in (tmp_path / "hw/rtl/generated/vta_params.vh").read_text()


def test_header_has_every_field_position():
    text = rtl_header(load_config("vta-1x16x16"))
    for line in (
        "localparam integer MEM_DRAM_BASE_LSB = 26;",
        "localparam integer MEM_Y_SIZE_LSB = 64;",
        "localparam integer GEMM_WGT_FACTOR_IN_LSB = 118;",
        "localparam integer ALU_IMM_LSB = 112;",
        "localparam integer UOP_WGT_LSB = 22;",
        "localparam integer WGT_ELEM_BYTES = 256;",
        "localparam integer OPCODE_FINISH = 3;",
    ):
        assert line in text


def test_a_named_root_outside_a_checkout_receives_the_files(tmp_path, monkeypatch, capsys):
    """`vtac generate --root DIR` writes hw/ and docs/ into any folder; only the implicit root
    (the current directory) must be a checkout, so a stray `vtac generate` writes nothing."""
    monkeypatch.chdir(tmp_path)
    assert vtac(["generate"]) == 1
    assert "not a checkout" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
    assert vtac(["generate", "--root", "gen", "--check"]) == 1
    assert "run `vtac generate --root gen`" in capsys.readouterr().out
    assert vtac(["generate", "--root", "gen"]) == 0
    assert vtac(["generate", "--root", "gen", "--check"]) == 0
    for p, text in generated_files(tmp_path / "gen").items():
        assert p.read_text() == text.rstrip("\n") + "\n"
    (tmp_path / "afile").write_text("")
    assert vtac(["generate", "--root", "afile"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("vtac generate: error: --root afile: cannot write")
    assert err.count("\n") == 1
