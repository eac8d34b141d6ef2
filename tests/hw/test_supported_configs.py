"""Configs the RTL cannot implement are refused before any build, naming the field."""

import pytest

import isa
from hw.errors import RtlError
from hw.sim import build, check_supported


@pytest.mark.parametrize("preset", isa.preset_names())
def test_presets_are_supported(preset):
    check_supported(isa.load_config(preset))


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"alu_ii": 1}, "alu_ii"),
        ({"cmd_queue_depth": 1}, "cmd_queue_depth"),
        ({"bus_bytes": 64, "uop_buf_bytes": 64}, "uop_buf_bytes"),
    ],
)
def test_unsupported_configs_are_named(changes, field):
    cfg = isa.load_config("default").replace(name="odd", **changes)
    with pytest.raises(RtlError, match=field):
        build("vta_tb_top", cfg, "icarus", testbench=True)
