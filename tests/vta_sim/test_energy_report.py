"""The simulator's report carries the run's events, energy and area (docs/energy.md)."""

from __future__ import annotations

import json
import math

import isa
import vta_sim
from isa.energy import count_events, estimate_energy


def test_json_report_has_energy_and_area(tmp_path, capsys):
    from runtime.cli import main

    out = tmp_path / "mm.npz"
    assert main(["asm", isa.__path__[0] + "/examples/matmul16.vasm", "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["sim", str(out), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    res = vta_sim.simulate(str(out))
    want = estimate_energy(count_events(res.program), res.config, res.cycles)
    assert math.isclose(d["energy"]["total_uj"], want.total_pj * 1e-6)
    assert d["events"]["gemm_uops"] == res.gemm_uops
    assert d["area"]["total_mm2"] > 0
    assert "energy" in res.summary() and "pJ/MAC" in res.summary()
