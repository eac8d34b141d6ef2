"""isa.energy: events counted from the instructions alone agree with what the simulator
executes; the pricing follows its table."""

from __future__ import annotations

import doctest
import math

import pytest

import isa
import isa.energy as energy
import vta_sim
from compiler.topi.vta import Conv2dLayer
from compiler.topi.vta.testing import build_conv2d
from isa.energy import (
    BUFFERS,
    EnergyTable,
    EventCounts,
    count_events,
    estimate_area,
    estimate_energy,
)


def test_docstring_example():
    assert doctest.testmod(energy).failed == 0


def test_hand_counted_program():
    cfg = isa.load_config("default")
    prog = isa.Program.build(
        cfg,
        [
            isa.Load(
                memory_type=isa.MemType.INP, y_size=2, x_size=3, x_stride=3, x_pad_0=1, y_pad_1=1
            ),  # fmt: skip
            isa.Gemm(uop_begin=0, uop_end=2, iter_out=3, reset=True),
            isa.Gemm(uop_begin=0, uop_end=2, iter_in=5),
            isa.Alu(
                uop_begin=0, uop_end=1, iter_out=4, use_imm=True, imm=2, alu_opcode=isa.AluOp.SHR
            ),  # fmt: skip
            isa.Alu(uop_begin=0, uop_end=3, alu_opcode=isa.AluOp.ADD),
            isa.Store(y_size=1, x_size=4, x_stride=4),
            isa.Finish(),
            isa.Gemm(uop_begin=0, uop_end=9),  # after FINISH: never runs
        ],
    )
    ev = count_events(prog)
    assert (ev.gemm_uops, ev.gemm_reset_uops) == (10, 6)
    assert dict(ev.alu_uops) == {"add_reg": 3, "shr_imm": 4}
    assert (ev.alu_imm_uops, ev.alu_reg_uops) == (4, 3)
    assert ev.sram_writes["inp"] == 3 * 4  # (0 + 2 + 1) rows of (1 + 3 + 0) entries
    assert ev.sram_reads["uop"] == 10 + 6 + 7
    assert ev.sram_reads["acc"] == 10 + 7 + 3  # GEMM, every ALU, and the register operands
    assert ev.sram_writes["acc"] == ev.sram_writes["out"] == 10 + 6 + 7
    assert ev.sram_reads["out"] == 4
    assert ev.dram_bytes["inp"] == 6 * cfg.inp_elem_bytes
    assert ev.dram_bytes["out"] == 4 * cfg.out_elem_bytes
    assert ev.dram_bytes["insn"] == 7 * 16


@pytest.mark.parametrize("preset", ["default", "vta-1x16x16", "4x4x4"])
def test_counts_agree_with_the_simulator(preset):
    cfg = isa.load_config(preset)
    for layer, threads in [(Conv2dLayer("a", 8, 8, 32, 32, 3, 1, 1), 2),
                           (Conv2dLayer("b", 7, 7, 64, 32, 1, 2, 0), 1)]:  # fmt: skip
        built = build_conv2d(layer, cfg, nthreads=threads)
        res = vta_sim.simulate(built.program)
        ev = count_events(built.program)
        assert ev.gemm_uops == res.gemm_uops
        assert ev.gemm_reset_uops == res.gemm_reset_uops
        assert sum(ev.alu_uops.values()) == res.alu_uops
        assert {k: v for k, v in ev.dram_bytes.items()} == dict(res.dram_bytes)


def test_sram_energy_passes_through_the_table_points_and_grows():
    t = EnergyTable()
    for size, pj in t.sram_points:
        assert math.isclose(t.sram_pj_per_64b(size), pj)
    sizes = [1 << k for k in range(8, 24)]
    values = [t.sram_pj_per_64b(s) for s in sizes]
    assert all(a < b for a, b in zip(values, values[1:], strict=False))


def test_energy_adds_over_runs_and_prices_each_part():
    cfg = isa.load_config("vta-1x16x16")
    a = count_events(isa.Program.build(cfg, [isa.Gemm(uop_begin=0, uop_end=3), isa.Finish()]))
    mul = isa.Alu(uop_begin=0, uop_end=2, use_imm=True, alu_opcode=isa.AluOp.MUL)
    b = count_events(isa.Program.build(cfg, [mul, isa.Finish()]))
    ea, eb = estimate_energy(a, cfg, 0), estimate_energy(b, cfg, 0)
    both = estimate_energy(a + b, cfg, 0)
    assert math.isclose(both.total_pj, ea.total_pj + eb.total_pj)
    assert math.isclose(ea.by_part["mac"], 3 * 256 * (0.2 + 0.1))
    assert math.isclose(eb.by_part["alu"], 2 * 16 * 3.1)  # a 32-bit multiply per lane
    cheap = estimate_energy(a, cfg, 0, EnergyTable(dram_pj_per_byte=1.0))
    assert cheap.by_part["dram"] < ea.by_part["dram"]
    leak = estimate_energy(a, cfg, 1000).by_part["leakage"]
    assert math.isclose(leak, estimate_energy(a, cfg, 2000).by_part["leakage"] / 2)


def test_area_grows_with_the_core_and_the_buffers():
    small, big = isa.load_config("default"), isa.load_config("vta-1x16x16")
    assert estimate_area(big).by_part["mac_array"] == 16 * estimate_area(small).by_part["mac_array"]
    assert estimate_area(big).total_mm2 > estimate_area(small).total_mm2


@pytest.mark.parametrize(
    "changes, what",
    [
        ({"mul8_pj": -1.0}, "mul8_pj must be finite and positive"),
        ({"dram_pj_per_byte": float("nan")}, "dram_pj_per_byte"),
        ({"sram_points": ((1024, 5.0),)}, "two or more"),
        ({"sram_points": ((1024, 5.0), (512, 6.0))}, "growing in both"),
        ({"sram_array_efficiency": 1.5}, "at most 1"),
    ],
)
def test_a_bad_table_is_refused_naming_the_field(changes, what):
    with pytest.raises(ValueError, match=what):
        EnergyTable(**changes)


def test_a_config_file_overrides_the_energy_figures(tmp_path):
    """``"energy"`` in a config file replaces figures of the table its runs are priced with;
    the presets carry none (their JSON is unchanged), a program file keeps the overrides, and
    an unknown name or a bad value is refused naming it."""
    import json

    import isa
    from isa.config import ConfigError

    base = isa.load_config("default")
    assert base.energy == () and "energy" not in base.to_json()
    knobs = {**base.to_dict(), "name": "cheap-dram", "energy": {"dram_pj_per_byte": 24.375}}
    path = tmp_path / "c.json"
    path.write_text(json.dumps(knobs))
    cfg = isa.load_config(str(path))
    assert cfg.energy_table().dram_pj_per_byte == 24.375
    events = EventCounts(0, 0, {}, dict.fromkeys(BUFFERS, 0), dict.fromkeys(BUFFERS, 0),
                         {"inp": 1000})  # fmt: skip
    cheap = estimate_energy(events, cfg, 0).by_part["dram"]
    assert cheap == 24.375 * 1000
    assert estimate_energy(events, base, 0).by_part["dram"] == cheap * 10
    assert isa.HwConfig.from_json(cfg.to_json()) == cfg  # what a program file stores
    for bad, match in (({"dram": 1.0}, "unknown energy figure"),
                       ({"mul8_pj": -1.0}, "mul8_pj must be finite and positive"),
                       ([1, 2], "must be an object")):  # fmt: skip
        with pytest.raises(ConfigError, match=match):
            isa.load_config({**knobs, "energy": bad})
