"""CPU tasks: the strategy's float32 schedules for conv2d (packed ``NCHW1n{b}c``), depthwise
conv2d (packed, kernel ``OIHW1i{b}o``), dense and matmul, with their knobs as a space.

The knobs are those ``compiler.strategy.schedule_group`` takes as keyword arguments. The
packed conv2d (``topi.cpu.conv2d.apply_conv2d_nchwc``): the register tile (``oh_block`` rows x
``ow_block`` columns x ``oc_blocks`` channel blocks, ``tile_order``, vector ``lanes``), the
reduction's tiling (``ic_block`` input-channel blocks, ``ic_inner`` channels of a block),
``reduce_order`` (the channel loops among the kernel's rows and columns), ``unroll_kw``,
``unroll_ic`` and ``outer_order``. Depthwise (``apply_depthwise_conv2d_nchwc``):
``ow_block`` columns x ``cb_block`` channel blocks, ``unroll_window``, ``pad_at``. Dense
(``apply_dense_split_k``): ``units_block``, ``unit_groups`` (register groups of a block),
``k_block``, ``unroll_k``, ``lanes``, ``sum_order``, ``unroll_sum``. Matmul
(``apply_matmul``): the ``rows`` x ``cols`` tile, ``lanes``, ``k_block``, ``k_order``,
``unroll_k``, ``pack_b``, ``outer_order``.

A knob added to a template comes first in its space with its default (the value that leaves
the strategy's loops unchanged) as first choice, so the points of the strategy's tile keep
their index and records that name only the tile still load. Measurement is one thread
(``parallel`` off). The rule rejects, naming the knob, tiles that do not divide their axis,
register tiles over :data:`MAX_ACCUMULATORS` vectors, unrolled bodies over
:data:`MAX_UNROLLED` FMAs and knob values that cannot change the loops (a split whose two
loops stay adjacent).

Example:
    >>> from compiler.tune.task import cpu_task
    >>> t = cpu_task("matmul", m=64, k=64, n=64)
    >>> t.space().num_valid, t.knobs(t.default_config())["rows"]
    (2452, 8)
    >>> t.knobs(t.default_config())["k_block"], t.knobs(t.default_config())["pack_b"]
    (64, True)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .space import REQUIRED, ConfigSpace, Knob

#: Channel block of the packed layout (one AVX-512 vector of float32), as in graph compilation.
BLOCK = 16
MATMUL_LANES = 16


def channel_block(c: int) -> int:
    return BLOCK if c % BLOCK == 0 else c


def _divisors(n: int, limit: int) -> tuple[int, ...]:
    return tuple(d for d in range(1, min(n, limit) + 1) if n % d == 0)


#: Vector registers an accumulator tile may take (of AVX-512's 32: the rest hold the
#: broadcast input and the weight vectors).
MAX_ACCUMULATORS = 28
#: Vector FMAs a body unrolled by ``unroll_*`` may hold: compiling 160 takes seconds and 640 a
#: minute, for no more speed than the register tile alone gives.
MAX_UNROLLED = 128


def _others(default: int, choices: tuple[int, ...]) -> tuple[int, ...]:
    """``default`` first (a new knob's default is its first choice, so the points named before
    the knob keep their index), then the other choices."""
    return (default, *(c for c in choices if c != default))


def _lane_choices(block: int) -> tuple[int, ...]:
    return _others(block, tuple(d for d in (16, 8, 4) if d < block and block % d == 0))


def _oc_block_choices(s: Mapping[str, int], n_oc: int) -> tuple[int, ...]:
    """Channel blocks of the register tile: the divisors of the blocks up to 4, and the
    strategy's own choice where it takes more (``register_tile_knobs`` tiles up to 8 blocks
    when the width has no divisor between 4 and 8), so its default is a point of the space
    and the points of the other shapes keep their index."""
    from compiler.topi.cpu.conv2d import register_tile_knobs

    choices = _divisors(n_oc, 4)
    _, out = _operator_cpu("conv2d", tuple(s.items()))
    chosen = register_tile_knobs(out)["oc_blocks"]
    return choices if chosen in choices else (*choices, chosen)


def _conv2d_space(s: Mapping[str, int]) -> ConfigSpace:
    from compiler.topi.cpu.conv2d import (
        OUTER_ORDERS,
        REDUCE_ORDERS,
        TILE_ORDERS,
        default_outer_order,
        register_tile_knobs,
    )

    k = s["k"]
    oh = (s["h"] + 2 * s["pad"] - k) // s["stride"] + 1
    ow = (s["w"] + 2 * s["pad"] - k) // s["stride"] + 1
    b_in, b_out = channel_block(s["in_c"]), channel_block(s["out_c"])
    n_ic, n_oc = s["in_c"] // b_in, s["out_c"] // b_out
    _, out = _operator_cpu("conv2d", tuple(s.items()))
    first = default_outer_order(out, register_tile_knobs(out)["oc_blocks"])
    order = (first, *(o for o in OUTER_ORDERS if o != first))
    knobs = (
        Knob("outer_order", order, default=order[0]),
        Knob("lanes", _lane_choices(b_out), default=b_out),
        Knob("unroll_ic", (False, True), default=False),
        Knob("unroll_kw", (False, True) if k > 1 else (False,), default=False),
        Knob("tile_order", TILE_ORDERS, default=TILE_ORDERS[0]),
        Knob("reduce_order", REDUCE_ORDERS if k > 1 else REDUCE_ORDERS[:1],
             default=REDUCE_ORDERS[0]),
        Knob("ic_inner", _others(b_in, _divisors(b_in, b_in)), default=b_in),
        Knob("ic_block", _others(n_ic, _divisors(n_ic, n_ic)), default=n_ic),
        # default 1: what a record made before the knob means; without records the strategy
        # takes topi.cpu.conv2d.default_oh_block (cpu_default, conv2d_nchwc_default_knobs)
        Knob("oh_block", _divisors(oh, 8), default=1),
        # the strategy's register tile; up to 28 columns: the strategy's own default
        # (topi.cpu.conv2d's default_ow_block) must be a point of the space
        Knob("ow_block", _divisors(ow, 28)),
        Knob("oc_blocks", _oc_block_choices(s, n_oc)),
    )  # fmt: skip

    def rule(v: Mapping[str, Any]) -> str | None:
        tile = v["oh_block"] * v["ow_block"] * v["oc_blocks"]
        vectors = tile * (b_out // v["lanes"])
        if (v["oh_block"] > 1 or v["lanes"] != b_out) and vectors > MAX_ACCUMULATORS:
            knob = "oh_block" if v["oh_block"] > 1 else "lanes"
            return (f"{knob}={v[knob]}: a register tile of {v['oh_block']}x{v['ow_block']}x"
                    f"{v['oc_blocks']} blocks is {vectors} vector accumulators, over "
                    f"{MAX_ACCUMULATORS}")  # fmt: skip
        if v["ic_block"] != n_ic and v["reduce_order"] == "ic_kh_kw":
            return (f"ic_block={v['ic_block']} has no effect with reduce_order=ic_kh_kw (its "
                    "two loops stay adjacent)")  # fmt: skip
        if v["ic_inner"] != b_in and v["reduce_order"] == "kh_kw_ic":
            return (f"ic_inner={v['ic_inner']} has no effect with reduce_order=kh_kw_ic (its "
                    "two loops stay adjacent)")  # fmt: skip
        if v["unroll_ic"] and v["ic_inner"] == 1:
            return "unroll_ic has no effect with ic_inner=1"
        if v["tile_order"] != TILE_ORDERS[0] and (v["oc_blocks"] == 1 or tile == v["oc_blocks"]):
            return (f"tile_order={v['tile_order']} has no effect with a register tile of one "
                    "channel block or one pixel")  # fmt: skip
        unrolled = vectors * (v["ic_inner"] if v["unroll_ic"] else 1) * (k if v["unroll_kw"] else 1)
        if (v["unroll_ic"] or v["unroll_kw"]) and unrolled > MAX_UNROLLED:
            knob = "unroll_ic" if v["unroll_ic"] else "unroll_kw"
            return f"{knob}: the unrolled body has {unrolled} vector FMAs, over {MAX_UNROLLED}"
        return None

    return ConfigSpace(knobs, rule)


def _depthwise_space(s: Mapping[str, int]) -> ConfigSpace:
    """A packed depthwise conv2d (``topi.cpu.conv2d.apply_depthwise_conv2d_nchwc``): the
    register tile of ``ow_block`` columns x ``cb_block`` channel blocks, whether the kernel
    window is unrolled and where the padded input is computed (``pad_at``, the strategy's
    choice first)."""
    from compiler.topi.cpu.conv2d import (
        DEPTHWISE_OW_BLOCK,
        PAD_AT,
        default_ow_block,
        default_pad_at,
    )

    k = s["k"]
    ow = (s["w"] + 2 * s["pad"] - k) // s["stride"] + 1
    blocks = s["channels"] // channel_block(s["channels"])
    _, out = _operator_cpu("depthwise", tuple(s.items()))
    pad_at = default_pad_at(out)
    knobs = (
        Knob(
            "pad_at",
            (pad_at, *(c for c in PAD_AT if c != pad_at)) if s["pad"] else (pad_at,),
            default=pad_at,
        ),
        Knob("unroll_window", (False, True) if k > 1 else (False,), default=False),
        Knob("cb_block", _divisors(blocks, 4), default=1),
        Knob("ow_block", _others(default_ow_block(ow, DEPTHWISE_OW_BLOCK), _divisors(ow, 16))),
    )

    def rule(v: Mapping[str, Any]) -> str | None:
        vectors = v["cb_block"] * v["ow_block"]
        if vectors > MAX_ACCUMULATORS:
            return (f"cb_block={v['cb_block']}: a register tile of {v['cb_block']}x"
                    f"{v['ow_block']} blocks is {vectors} vector accumulators, over "
                    f"{MAX_ACCUMULATORS}")  # fmt: skip
        if v["unroll_window"] and vectors * k * k > MAX_UNROLLED:
            return (f"unroll_window: the unrolled body has {vectors * k * k} vector FMAs, over "
                    f"{MAX_UNROLLED}")  # fmt: skip
        return None

    return ConfigSpace(knobs, rule)


def _k_block_rule(
    v: Mapping[str, Any], whole: int, adjacent: bool, why: str, vectors: int
) -> str | None:
    """Why a point's ``k_block`` / ``unroll_k`` cannot be a choice of its own, or ``None``: a
    split of the reduction whose two loops stay adjacent (``adjacent``, because of ``why``) and
    are not unrolled changes no loop; an unrolled block is at most :data:`MAX_UNROLLED` FMAs."""
    if v["k_block"] != whole and adjacent and not v["unroll_k"]:
        return (f"k_block={v['k_block']} has no effect with {why} and no unroll_k (its two "
                "loops stay adjacent)")  # fmt: skip
    if v["unroll_k"] and v["k_block"] * vectors > MAX_UNROLLED:
        return (f"unroll_k: the unrolled body has {v['k_block'] * vectors} vector FMAs, over "
                f"{MAX_UNROLLED}")  # fmt: skip
    return None


def _dense_space(s: Mapping[str, int]) -> ConfigSpace:
    from compiler.strategy.compute import DENSE_LANES
    from compiler.topi.cpu.dense import SUM_ORDERS

    split = DENSE_LANES
    steps = s["in_features"] // split
    units = _divisors(s["out_features"], 64)
    if s["in_features"] % split:  # not a split-K dense: the strategy's tile only
        return ConfigSpace((Knob("units_block", units),))
    groups = tuple(sorted({g for u in units for g in _divisors(u, u)}))
    knobs = (
        Knob("sum_order", SUM_ORDERS, default=SUM_ORDERS[0]),
        Knob("unroll_sum", (False, True), default=False),
        Knob("lanes", _lane_choices(split), default=split),
        Knob("unroll_k", (False, True), default=False),
        Knob("k_block", _others(steps, _divisors(steps, steps)), default=steps),
        Knob("unit_groups", groups, default=1),
        Knob("units_block", units),
    )

    def rule(v: Mapping[str, Any]) -> str | None:
        block, g = v["units_block"], v["unit_groups"]
        if block % g:
            return f"unit_groups={g} does not divide units_block={block}"
        vectors = block // g * (split // v["lanes"])
        if (g > 1 or v["lanes"] != split) and vectors > MAX_ACCUMULATORS:
            knob = "unit_groups" if g > 1 else "lanes"
            return (f"{knob}={v[knob]}: {block // g} units of {split // v['lanes']} vectors "
                    f"are {vectors} accumulators, over {MAX_ACCUMULATORS}")  # fmt: skip
        return _k_block_rule(v, steps, g == 1, "unit_groups=1", vectors)

    return ConfigSpace(knobs, rule)


def _matmul_space(s: Mapping[str, int]) -> ConfigSpace:
    from compiler.topi.cpu.matmul import COLUMN_PANELS, K_ORDERS, OUTER_ORDERS

    k = s["k"]
    knobs = (
        Knob("outer_order", OUTER_ORDERS, default=OUTER_ORDERS[0]),
        Knob("pack_b", (True, False), default=True),
        Knob("unroll_k", (False, True), default=False),
        Knob("k_order", K_ORDERS, default=K_ORDERS[0]),
        Knob("k_block", _others(k, tuple(d for d in _divisors(k, 256) if d > 1)), default=k),
        Knob("lanes", (MATMUL_LANES, MATMUL_LANES // 2), default=MATMUL_LANES),
        Knob("rows", tuple(range(1, 9))),
        Knob("cols", COLUMN_PANELS),
    )

    def rule(v: Mapping[str, Any]) -> str | None:
        if v["rows"] > s["m"]:
            return f"rows={v['rows']} exceeds the {s['m']} rows of the output"
        vectors = v["rows"] * v["cols"] // v["lanes"]
        if vectors > MAX_ACCUMULATORS:
            return (f"lanes={v['lanes']}: a register tile of {v['rows']} rows x {v['cols']} "
                    f"columns is {vectors} vector accumulators, over "
                    f"{MAX_ACCUMULATORS}")  # fmt: skip
        return _k_block_rule(v, k, v["k_order"] == "k_rows", "k_order=k_rows", vectors)

    return ConfigSpace(knobs, rule)


def cpu_space(kind: str, s: Mapping[str, int]) -> ConfigSpace:
    """The space of a CPU task. Every knob added to a template comes first and has its
    default as first choice, so the index of a point named before it is unchanged; the
    strategy's register-tile knobs come last, with their first choices."""
    if kind == "conv2d":
        return _conv2d_space(s)
    if kind == "dense":
        return _dense_space(s)
    if kind == "depthwise":
        return _depthwise_space(s)
    return _matmul_space(s)


def cpu_default(kind: str, s: Mapping[str, int]) -> dict[str, Any]:
    """The strategy's own knob choices (what compilation uses without records)."""
    from compiler.topi.cpu.conv2d import conv2d_nchwc_default_knobs, default_ow_block

    added = {k.name: k.default for k in cpu_space(kind, s).knobs if k.default is not REQUIRED}
    if kind == "conv2d":
        _, out = _operator_cpu(kind, tuple(s.items()))
        return {**added, **conv2d_nchwc_default_knobs(out)}
    if kind == "dense":
        return {**added, "units_block": default_ow_block(s["out_features"], 8)}
    if kind == "depthwise":
        from compiler.topi.cpu.conv2d import depthwise_conv2d_nchwc_knobs

        _, out = _operator_cpu(kind, tuple(s.items()))
        return {**added, **depthwise_conv2d_nchwc_knobs(out)}
    from compiler.topi.cpu.matmul import default_matmul_rows

    return {**added, "rows": default_matmul_rows(s["m"]), "cols": 32}


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
    elif kind == "depthwise":
        c, cb = s["channels"], channel_block(s["channels"])
        x = te.placeholder((s["batch"], c // cb, s["h"], s["w"], 1, cb), name="x")
        w = te.placeholder((c // cb, 1, s["k"], s["k"], 1, cb), name="w")
        attrs = {
            "strides": (s["stride"],) * 2, "padding": (s["pad"],) * 4, "dilation": (1, 1),
            "groups": c, "data_layout": f"NCHW1n{cb}c", "kernel_layout": f"OIHW1i{cb}o",
        }  # fmt: skip
        out = compute("conv2d", [x, w], attrs, "dw")
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
    elif kind == "depthwise":
        c, cb = s["channels"], channel_block(s["channels"])
        x = rng.standard_normal((s["batch"], c, s["h"], s["w"])).astype(np.float32)
        w = rng.standard_normal((c, 1, s["k"], s["k"])).astype(np.float32)
        ref = _depthwise_ref(x, w, s["stride"], s["pad"])
        inputs = [topi.pack_data(x, 1, cb), topi.pack_kernel(w, cb, 1, "OIHWio")]
        expected = topi.pack_data(ref, 1, cb)
        macs = s["batch"] * ref.shape[2] * ref.shape[3] * c * s["k"] ** 2
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


def _depthwise_ref(x: np.ndarray, w: np.ndarray, stride: int, pad: int) -> np.ndarray:
    k = w.shape[2]
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (x.shape[2] + 2 * pad - k) // stride + 1, (x.shape[3] + 2 * pad - k) // stride + 1
    cols = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(2, 3))
    cols = cols[:, :, ::stride, ::stride][:, :, :oh, :ow]  # n c oh ow k k
    return np.einsum("nchwyx,cyx->nchw", cols, w[:, 0]).astype(np.float32)


__all__ = ["BLOCK", "CpuBuilt", "cpu_build", "cpu_default", "cpu_schedule", "cpu_space"]
