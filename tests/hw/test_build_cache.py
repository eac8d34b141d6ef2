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
