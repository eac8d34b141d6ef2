"""The RTL build cache's key: a build is reused only by the environment it links against."""

from __future__ import annotations

import pytest

import isa
from hw import sim

pytest.importorskip("cocotb_tools", reason="cocotb is not installed")


def test_a_build_from_another_cocotb_environment_is_not_reused(monkeypatch):
    # a Verilator model's runpath names cocotb's library folder of the environment that built
    # it; reused from another (deleted) one it failed to load libcocotbvpi_verilator.so
    cfg = isa.load_config("vta-1x16x16")
    args = ("vta_tb_top", "verilator", cfg, {}, sim.rtl_sources(), "", [])
    here = sim._key(*args)
    assert sim._key(*args) == here
    monkeypatch.setattr(sim, "_cocotb_libs", lambda: "/elsewhere/cocotb/libs:2.1.0")
    assert sim._key(*args) != here


def _fake_build(root, name, libs):
    d = root / name
    (d / "include").mkdir(parents=True)
    if libs is not None:
        (d / sim.ENVIRONMENT_FILE).write_text(f"{libs}:2.1.0")
    return d


def test_builds_of_another_live_environment_are_not_pruned(tmp_path):
    """Two environments (two clones' CI runs on one machine) keep their builds side by side:
    one pruning the other's deleted a model the other was simulating. An environment's own
    older build, one of an environment that is gone, and one that names none are pruned."""
    kind = "vta_tb_top-default-icarus-"
    mine = sim._environment()
    keep = _fake_build(tmp_path, f"{kind}{mine}-{'a' * 12}", sim._cocotb_libs().rsplit(":", 1)[0])
    live_other = _fake_build(tmp_path, f"{kind}0badc0de-{'b' * 12}", str(tmp_path))
    own_older = _fake_build(tmp_path, f"{kind}{mine}-{'c' * 12}", str(tmp_path))
    gone = _fake_build(tmp_path, f"{kind}deadbeef-{'d' * 12}", str(tmp_path / "deleted-venv"))
    unnamed = _fake_build(tmp_path, f"{kind}{'e' * 12}", None)
    other_params = _fake_build(tmp_path, f"{kind}DRAM_LOG_WORDS12-{'f' * 12}", None)
    sim._prune(tmp_path, kind, f"{kind}{mine}-", keep)
    assert keep.is_dir() and live_other.is_dir() and other_params.is_dir()
    assert not own_older.exists() and not gone.exists() and not unnamed.exists()
