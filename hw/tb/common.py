"""Shared testbench pieces: the config of the build, clock and reset, knobs, bit fields."""

from __future__ import annotations

import json
import os
import random

import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge

from isa.config import HwConfig, load_config

CLOCK_NS = 10


def config() -> HwConfig:
    """The hardware config the model was built for (passed by :func:`hw.sim.run`)."""
    text = os.environ.get("VTA_HW_CONFIG")
    return HwConfig.from_json(text) if text else load_config("default")


def knobs() -> dict:
    """Test knobs passed as JSON in ``VTA_TB_KNOBS`` (back-pressure, idle cycles, seeds)."""
    text = os.environ.get("VTA_TB_KNOBS")
    return json.loads(text) if text else {}


def rng() -> random.Random:
    return random.Random(int(knobs().get("seed", 1)))


def start_clock(clk) -> None:
    Clock(clk, CLOCK_NS, unit="ns").start(start_high=False)


async def reset(dut, cycles: int = 3) -> None:
    """Hold the active-high synchronous reset for ``cycles`` clock edges."""
    dut.rst.value = 1
    for _ in range(cycles):
        await RisingEdge(dut.clk)
    await FallingEdge(dut.clk)
    dut.rst.value = 0


def unpack(word: int, bits: int, count: int, signed: bool = True) -> np.ndarray:
    """Split an integer into ``count`` fields of ``bits`` (element 0 lowest)."""
    mask = (1 << bits) - 1
    vals = [(word >> (i * bits)) & mask for i in range(count)]
    if signed:
        vals = [v - (1 << bits) if v >> (bits - 1) else v for v in vals]
    return np.array(vals, dtype=np.int64)
