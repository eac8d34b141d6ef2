import json

import pytest

import isa
from isa.config import HwConfig, load_config, preset_names
from isa.errors import ConfigError


def test_presets_ship():
    assert set(preset_names()) >= {"default", "vta-1x16x16", "4x4x4"}


@pytest.mark.parametrize(
    "name, shape, depths, elem",
    [
        ("default", (1, 4, 4), (8192, 2048, 1024, 2048), (4, 16, 16, 4)),
        ("vta-1x16x16", (1, 16, 16), (8192, 2048, 1024, 2048), (16, 256, 64, 16)),
        ("4x4x4", (4, 4, 4), (8192, 2048, 1024, 2048), (16, 16, 64, 16)),
    ],
)
def test_derived_sizes(name, shape, depths, elem):
    cfg = load_config(name)
    assert (cfg.batch, cfg.block_in, cfg.block_out) == shape
    assert (cfg.uop_depth, cfg.inp_depth, cfg.wgt_depth, cfg.acc_depth) == depths
    assert cfg.out_depth == cfg.acc_depth
    assert (cfg.inp_elem_bytes, cfg.wgt_elem_bytes, cfg.acc_elem_bytes, cfg.out_elem_bytes) == elem
    assert cfg.log_acc_depth == 11 and cfg.log_wgt_depth == 10 and cfg.log_uop_depth == 13


def test_config_is_frozen_and_hashable():
    cfg = load_config("default")
    with pytest.raises(AttributeError):
        cfg.batch = 2  # type: ignore[misc]
    assert hash(cfg) == hash(load_config("default"))


def test_json_round_trip(tmp_path):
    cfg = load_config("vta-1x16x16")
    assert HwConfig.from_json(cfg.to_json()) == cfg
    path = tmp_path / "custom.json"
    path.write_text(cfg.replace(name="custom", dram_latency=10).to_json())
    assert load_config(path).dram_latency == 10


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"batch": 3}, "batch"),
        ({"block_in": 0}, "block_in"),
        ({"inp_bits": 4}, "inp_bits"),
        ({"acc_bits": 16}, "acc_bits"),
        ({"inp_buf_bytes": 8192 + 4}, "inp_buf_bytes"),
        ({"bus_bytes": 6}, "bus_bytes"),
        ({"gemm_ii": 1.5}, "gemm_ii"),
        ({"alu_imm_ii": 0}, "alu_imm_ii"),
        ({"alu_imm_ii": 1025}, "alu_imm_ii"),
        ({"clock_mhz": -1}, "clock_mhz"),
    ],
)
def test_invalid_fields_are_named(changes, field):
    with pytest.raises(ConfigError, match=field):
        load_config("default").replace(**changes)


def test_config_that_does_not_fit_the_formats_is_rejected():
    # VTA's warning case: 4x4x4 with a 256 KiB weight buffer makes wgt indices 14 bits wide,
    # so the GEMM word and the micro-op (11 + 11 + 14 bits) no longer fit.
    with pytest.raises(ConfigError, match=r"'wgt_factor_in'.*wgt_buf_bytes"):
        load_config("4x4x4").replace(name="too-big", wgt_buf_bytes=262144)


def test_unknown_and_missing_fields():
    d = load_config("default").to_dict()
    with pytest.raises(ConfigError, match="unknown field"):
        HwConfig.from_dict({**d, "blockin": 4})
    del d["bus_bytes"]
    with pytest.raises(ConfigError, match="bus_bytes"):
        HwConfig.from_dict(d)
    with pytest.raises(ConfigError, match="unknown config"):
        load_config("no-such-preset")
    with pytest.raises(ConfigError, match="not valid JSON"):
        HwConfig.from_json("{")
    assert json.loads(load_config("default").to_json())["name"] == "default"


def test_mem_elem_bytes():
    cfg = load_config("4x4x4")
    assert cfg.mem_elem_bytes(isa.MemType.ACC8) == cfg.out_elem_bytes == 16
    assert cfg.mem_elem_bytes(isa.MemType.UOP) == 4


def test_alu_imm_ii_per_preset():
    """VTA's ALU issues immediate-operand micro-ops every cycle; the other presets keep 2."""
    got = {n: (load_config(n).alu_ii, load_config(n).alu_imm_ii) for n in preset_names()}
    assert got["vta-1x16x16"] == (2, 1)
    assert got["default"] == got["4x4x4"] == (2, 2)
    knobs = load_config("vta-1x16x16").to_dict()
    del knobs["alu_imm_ii"]
    with pytest.raises(ConfigError, match="alu_imm_ii"):
        HwConfig.from_dict(knobs)
