"""Running one cocotb test module on one RTL block (helpers for the block tests)."""

from __future__ import annotations

import json
from pathlib import Path

import isa
from hw import sim
from tests.hw.conftest import require


def run_block(
    toplevel: str,
    module: str,
    testcase: str,
    build_root: Path,
    *,
    preset: str = "default",
    knobs: dict | None = None,
    simulator: str = "icarus",
) -> None:
    """Build ``toplevel`` for ``preset`` and run ``module.testcase`` with ``knobs``.

    A failing cocotb test makes the runner raise SystemExit, which pytest reports.
    """
    require(simulator)
    b = sim.build(toplevel, isa.load_config(preset), simulator, build_root=build_root)
    results = sim.run(
        b, f"hw.tb.{module}", testcase=testcase, extra_env={"VTA_TB_KNOBS": json.dumps(knobs or {})}
    )
    sim.cleanup_run(results)
