"""CPU tasks: the strategy's float32 schedules for conv2d (packed ``NCHW1n{b}c``), dense and
matmul, with their knobs as a space.

The knobs are those ``compiler.strategy.schedule_group`` takes as keyword arguments: the
register tile of the packed conv2d (``ow_block`` output columns by ``oc_blocks`` channel
blocks), dense's ``units_block`` and matmul's ``rows`` x ``cols`` tile. Measurement is one
thread (``parallel`` off); tiles that do not divide their axis are invalid points.

Example:
    >>> from compiler.tune.task import cpu_task
    >>> t = cpu_task("matmul", m=64, k=64, n=64)
    >>> t.space().num_valid, t.knobs(t.default_config())
    (24, {'rows': 6, 'cols': 32, 'parallel': False})
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .space import ConfigSpace, Knob

#: Channel block of the packed layout (one AVX-512 vector of float32), as in graph compilation.
BLOCK = 16
MATMUL_LANES = 16


def channel_block(c: int) -> int:
    return BLOCK if c % BLOCK == 0 else c


def _divisors(n: int, limit: int) -> tuple[int, ...]:
    return tuple(d for d in range(1, min(n, limit) + 1) if n % d == 0)


def cpu_space(kind: str, s: Mapping[str, int]) -> ConfigSpace:
    if kind == "conv2d":
        ow = (s["w"] + 2 * s["pad"] - s["k"]) // s["stride"] + 1
        ocb = s["out_c"] // channel_block(s["out_c"])
        return ConfigSpace(
            # up to 28 columns: the strategy's own default (topi.cpu.conv2d's default_ow_block)
            # must be a point of the space
            (Knob("ow_block", _divisors(ow, 28)), Knob("oc_blocks", _divisors(ocb, 4)))
        )
    if kind == "dense":
        return ConfigSpace((Knob("units_block", _divisors(s["out_features"], 64)),))
    rows = tuple(range(1, 9))
    cols = (16, 32, 48)

    def rule(v: Mapping[str, Any]) -> str | None:
        if v["rows"] > s["m"]:
            return f"rows={v['rows']} exceeds the {s['m']} rows of the output"
        return None

    return ConfigSpace((Knob("rows", rows), Knob("cols", cols)), rule)


def cpu_default(kind: str, s: Mapping[str, int]) -> dict[str, Any]:
    """The strategy's own knob choices (what compilation uses without records)."""
    from compiler.topi.cpu.conv2d import default_ow_block, register_tile_knobs

    if kind == "conv2d":
        _, out = _operator_cpu(kind, tuple(s.items()))
        return dict(register_tile_knobs(out))
    if kind == "dense":
        return {"units_block": default_ow_block(s["out_features"], 8)}
    return {"rows": 6, "cols": 32}


@dataclass
class CpuBuilt:
    """A compiled CPU kernel with its seeded inputs and the numpy reference output."""

    func: Any
    inputs: list[np.ndarray]
    expected: np.ndarray
    macs: int

    def matches(self, got: np.ndarray) -> bool:
        return bool(np.allclose(got, self.expected, rtol=1e-3, atol=1e-3))


_OPERATORS: dict[tuple[str, tuple[tuple[str, int], ...]], tuple[list[Any], Any]] = {}


def _operator_cpu(kind: str, shape: tuple[tuple[str, int], ...]) -> tuple[list[Any], Any]:
    key = (kind, shape)
    if key in _OPERATORS:
        return _OPERATORS[key]
    from compiler import te
    from compiler.strategy import compute

    s = dict(shape)
    if kind == "conv2d":
        bi, bo = channel_block(s["in_c"]), channel_block(s["out_c"])
        x = te.placeholder((s["batch"], s["in_c"] // bi, s["h"], s["w"], 1, bi), name="x")
        w = te.placeholder((s["out_c"] // bo, s["in_c"] // bi, s["k"], s["k"], bi, bo), name="w")
        attrs = {
            "strides": (s["stride"],) * 2, "padding": (s["pad"],) * 4, "dilation": (1, 1),
            "groups": 1, "data_layout": f"NCHW1n{bi}c", "kernel_layout": f"OIHW{bi}i{bo}o",
        }  # fmt: skip
        out = compute("conv2d", [x, w], attrs, "conv")
        args = [x, w]
    elif kind == "dense":
        x = te.placeholder((s["batch"], s["in_features"]), name="x")
        w = te.placeholder((s["out_features"], s["in_features"]), name="w")
        out = compute("dense", [x, w], {}, "fc")
        args = [x, w]
    else:
        a = te.placeholder((s["m"], s["k"]), name="a")
        b = te.placeholder((s["k"], s["n"]), name="b")
        out = compute("matmul", [a, b], {}, "mm")
        args = [a, b]
    _OPERATORS[key] = (args + [out], out)
    return _OPERATORS[key]


def cpu_schedule(kind: str, shape: tuple[tuple[str, int], ...], knobs: Mapping[str, Any]) -> Any:
    from compiler.strategy import schedule

    args, out = _operator_cpu(kind, shape)
    return schedule([out], out, "cpu", **knobs), args


def cpu_build(
    kind: str, shape: tuple[tuple[str, int], ...], knobs: Mapping[str, Any], seed: int = 0
) -> CpuBuilt:
    from compiler import topi
    from compiler.build import build

    s = dict(shape)
    sched, args = cpu_schedule(kind, shape, knobs)
    func = build(sched, args, target="cpu")
    rng = np.random.default_rng(seed)
    if kind == "conv2d":
        bi, bo = channel_block(s["in_c"]), channel_block(s["out_c"])
        x = rng.standard_normal((s["batch"], s["in_c"], s["h"], s["w"])).astype(np.float32)
        w = rng.standard_normal((s["out_c"], s["in_c"], s["k"], s["k"])).astype(np.float32)
        ref = _conv_ref(x, w, s["stride"], s["pad"])
        inputs = [topi.pack_data(x, 1, bi), topi.pack_kernel(w, bo, bi, "OIHWio")]
        expected = topi.pack_data(ref, 1, bo)
        oh = ref.shape[2]
        macs = s["batch"] * oh * ref.shape[3] * s["in_c"] * s["out_c"] * s["k"] ** 2
    elif kind == "dense":
        x = rng.standard_normal((s["batch"], s["in_features"])).astype(np.float32)
        w = rng.standard_normal((s["out_features"], s["in_features"])).astype(np.float32)
        inputs, expected = [x, w], x @ w.T
        macs = s["batch"] * s["in_features"] * s["out_features"]
    else:
        a = rng.standard_normal((s["m"], s["k"])).astype(np.float32)
        b = rng.standard_normal((s["k"], s["n"])).astype(np.float32)
        inputs, expected = [a, b], a @ b
        macs = s["m"] * s["k"] * s["n"]
    return CpuBuilt(func, inputs, expected, macs)


def _conv_ref(x: np.ndarray, w: np.ndarray, stride: int, pad: int) -> np.ndarray:
    n, c, h, wd = x.shape
    o, _, k, _ = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - k) // stride + 1, (wd + 2 * pad - k) // stride + 1
    cols = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(2, 3))
    cols = cols[:, :, ::stride, ::stride][:, :, :oh, :ow]  # n c oh ow k k
    return np.einsum("nchwyx,ocyx->nohw", cols, w, optimize=True).astype(np.float32)


__all__ = ["BLOCK", "CpuBuilt", "cpu_build", "cpu_default", "cpu_schedule", "cpu_space"]
