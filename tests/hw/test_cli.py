"""`vtac rtl PROG.npz`: runs a program file on the RTL and reports the comparison."""

from __future__ import annotations

import json

import pytest

import isa
from hw import programs
from runtime.cli import main
from tests.hw.conftest import require

pytestmark = pytest.mark.rtl


def test_vtac_rtl_json(tmp_path, capsys, build_root):
    require("icarus")
    path = tmp_path / "gemm.npz"
    programs.gemm(isa.load_config("default")).save(path)
    assert main(["rtl", str(path), "--json", "--build-dir", str(build_root)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["match"] is True and out["events_match"] is True
    assert out["rtl_cycles"] > 0
    assert {"match", "rtl_cycles", "sim_cycles", "cycle_ratio"} <= set(out)
    if out["sim_cycles"] is not None:
        assert abs(out["cycle_ratio"] - 1) <= 0.10


def test_vtac_rtl_text(tmp_path, capsys, build_root):
    require("icarus")
    path = tmp_path / "finish.npz"
    programs.finish_only(isa.load_config("default")).save(path)
    assert main(["rtl", str(path), "--build-dir", str(build_root)]) == 0
    out = capsys.readouterr().out
    assert "match        yes" in out and "rtl_cycles   36" in out
    assert "events       equal to count_events" in out


def test_vtac_rtl_shows_the_elapsed_time_with_progress_only(tmp_path, capsys, build_root):
    require("icarus")
    path = tmp_path / "finish.npz"
    programs.finish_only(isa.load_config("default")).save(path)
    assert main(["rtl", str(path), "--build-dir", str(build_root)]) == 0
    assert "running finish.npz" not in capsys.readouterr().err  # stderr is no terminal here
    assert main(["rtl", str(path), "--build-dir", str(build_root), "--progress"]) == 0
    assert "running finish.npz on icarus" in capsys.readouterr().err


def test_vtac_rtl_reports_a_bad_file(tmp_path, capsys):
    assert main(["rtl", str(tmp_path / "missing.npz")]) == 1
    assert "no such file" in capsys.readouterr().err


def test_vtac_rtl_deadlock_reports_both_models(tmp_path, capsys, build_root):
    require("icarus")
    from isa.insn import Finish, Gemm, Load, MemType

    cfg = isa.load_config("default")
    path = tmp_path / "deadlock.npz"
    isa.Program.build(
        cfg,
        [Load(memory_type=MemType.INP, x_size=1, x_stride=1), Gemm(pop_prev_dep=True), Finish()],
    ).save(path)
    assert main(["rtl", str(path), "--build-dir", str(build_root)]) == 1
    err = capsys.readouterr().err
    assert "RTL hang" in err and "The simulator stops too: deadlock" in err
    assert "#1 GEMM (pop_prev_dep) waits for a token in load->compute (0 tokens)" in err
