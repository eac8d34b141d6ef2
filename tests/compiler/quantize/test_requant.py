"""Requantization: (m, s) choices against exact rational scaling, and the integer semantics
against the ALU instruction sequence run lane by lane by the ISA's reference semantics."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from compiler.quantize import QuantizeError, add_alu_program, alu_program, choose_add
from compiler.quantize.requant import (
    CLAMP_MAX,
    MAX_MULTIPLIER,
    add_int,
    choose_requant,
    requantize_int,
    split_round_shift,
)
from isa.semantics import alu_apply

OPCODES = {"MIN": 0, "MAX": 1, "ADD": 2, "SHR": 3, "MUL": 4}
RNG = np.random.default_rng(7)
INT32 = np.iinfo(np.int32)


def _run_alu(steps, tiles: dict[str, np.ndarray], dst: str = "acc") -> np.ndarray:
    """Run ALU steps lane by lane with the ISA's one-lane semantics (int32 in and out)."""
    apply = np.vectorize(alu_apply, otypes=[np.int64])
    tiles = {k: np.asarray(v, np.int64) for k, v in tiles.items()}
    for step in steps:
        target = step.dst or dst
        operand = tiles[step.tensor] if step.tensor else np.int64(step.imm)
        a = tiles[target]
        assert step.imm is None or -(1 << 15) <= step.imm < (1 << 15), step  # 16-bit immediate
        tiles[target] = apply(OPCODES[step.op], a, np.broadcast_to(operand, a.shape))
    return tiles[dst]


@pytest.mark.parametrize("seed", range(5))
def test_multiplier_matches_the_real_scale_to_15_bits(seed):
    rng = np.random.default_rng(seed)
    scale = np.exp(rng.uniform(np.log(1e-7), np.log(200.0), size=64))
    p = choose_requant(scale)
    live = p.shift < 31
    assert np.all((p.multiplier[live] >= 1 << 14) & (p.multiplier[live] <= MAX_MULTIPLIER))
    rel = np.abs(p.effective_scale() - scale) / scale
    assert np.all(rel[live] <= 2.0**-15)
    assert np.all((p.post_shift >= 0) & (p.post_shift <= 21)) and np.all(p.shift >= 0)
    # the accumulator is pre-shifted only when the post-shift is at its largest
    assert np.all((p.shift == 0) | (p.post_shift == 21))


def test_one_step_of_t_is_a_small_part_of_an_output_step():
    p = choose_requant(np.exp(np.linspace(np.log(1e-6), np.log(100.0), 200)))
    step = p.multiplier.astype(np.float64) / np.exp2(p.post_shift)  # output units per unit of t
    assert np.all((step <= 2.0**-6) | (p.shift == 0))


@pytest.mark.parametrize("seed", range(4))
def test_requantize_is_within_its_error_bound_of_exact_rational_scaling(seed):
    rng = np.random.default_rng(100 + seed)
    channels = 8
    scale = np.exp(rng.uniform(np.log(1e-5), np.log(0.5), size=channels))
    p = choose_requant(scale)
    acc = rng.integers(-(2**24), 2**24, size=(256, channels)).astype(np.int32)
    got = requantize_int(acc, p.multiplier, p.shift, p.post_shift, -128, 127).astype(np.int64)
    for c in range(channels):
        m_real = Fraction(float(scale[c]))
        for a, y in zip(acc[:, c].tolist(), got[:, c].tolist(), strict=True):
            exact = Fraction(a) * m_real
            want = min(127, max(-128, exact))
            # pre-shift rounding (half a step of 2**s1 accumulator units), multiplier rounding
            # (|a| M 2**-15) and the final rounding to the nearest integer
            bound = 0.5 + 0.5 * float(scale[c]) * 2 ** int(p.shift[c]) + abs(a) * scale[c] / 2**15
            assert abs(float(y - want)) <= bound + 1e-9, (c, a, y, float(exact))


def test_saturation_is_exact_up_to_the_int32_limits():
    p = choose_requant(np.array([3.1e-4, 0.9, 2.0**-20]))
    top = INT32.max - (1 << int(p.shift.max()))  # the rounding offset must not wrap
    acc = np.array([[top] * 3, [INT32.min] * 3, [2**20] * 3, [-(2**20)] * 3], np.int32)
    got = requantize_int(acc, p.multiplier, p.shift, p.post_shift, -128, 127)
    assert got[0].tolist() == [127, 127, 127]
    assert got[1].tolist() == [-128, -128, -128]
    assert got[2].tolist() == [127, 127, 1]
    assert got[3].tolist() == [-128, -128, -1]


def test_the_rounding_offset_wraps_like_the_accumulator():
    # documented: acc + 2**(s1-1) is an int32 ALU add; within 2**(s1-1) of the top it wraps
    m, s1, s2 = np.array([16384]), np.array([4]), np.array([15])
    got = requantize_int(np.array([[INT32.max]], np.int32), m, s1, s2, -128, 127)
    assert got.item() == -128


def test_relu_range():
    p = choose_requant(np.array([0.01]))
    got = requantize_int(np.array([[-5000], [5000]], np.int32), p.multiplier, p.shift,
                         p.post_shift, 0, 127)  # fmt: skip
    assert got.ravel().tolist() == [0, 50]


def test_shift_mode_is_exact_for_powers_of_two():
    scale = 2.0 ** -np.arange(0, 20)
    p = choose_requant(scale, mode="shift")
    assert p.multiplier.tolist() == [1] * 20 and p.post_shift.tolist() == [0] * 20
    np.testing.assert_array_equal(p.effective_scale(), scale)
    acc = RNG.integers(-(2**20), 2**20, size=(64, 20)).astype(np.int32)
    got = requantize_int(acc, p.multiplier, p.shift, p.post_shift, -128, 127).astype(np.int64)
    want = np.clip(np.floor(acc * scale + 0.5), -128, 127)
    np.testing.assert_array_equal(got, want)


def test_scales_beyond_the_multiplier_saturate_exactly():
    """A scale too large for the 16-bit multiplier (an output clipped far below its input's
    range) gives what the real scale gives: every nonzero accumulator saturates."""
    scale = np.array([40000.0, 8.7e9, 300.0, 128.5])
    p = choose_requant(scale)
    assert np.all(p.multiplier <= MAX_MULTIPLIER)
    acc = np.concatenate([np.zeros((1, 4)), RNG.integers(-(2**31), 2**31, size=(256, 4)),
                          np.tile([[1], [-1], [2], [-3]], 4)]).astype(np.int32)  # fmt: skip
    for lo, hi in ((-128, 127), (0, 127), (0, 6)):
        got = requantize_int(acc, p.multiplier, p.shift, p.post_shift, lo, hi).astype(np.int64)
        want = np.clip(np.floor(acc.astype(np.float64) * scale + 0.5), lo, hi)
        np.testing.assert_array_equal(got, want)


def test_bad_scales_are_refused():
    with pytest.raises(QuantizeError, match="finite and >= 0"):
        choose_requant(np.array([-1.0]))
    with pytest.raises(QuantizeError, match="shift requantization needs scales <= 1"):
        choose_requant(np.array([2.0]), mode="shift")
    with pytest.raises(QuantizeError, match="unknown requantization mode"):
        choose_requant(np.array([0.5]), mode="float")


def test_split_round_shift_equals_one_rounding_shift():
    v = np.concatenate([RNG.integers(-(2**30), 2**30, size=2000), [-(2**30), 2**30 - 1, 0, -1]])
    for s in (1, 7, 15, 16, 21, 30):
        got = _run_alu(split_round_shift(s), {"acc": v})
        want = np.floor((v + 2.0 ** (s - 1)) / 2.0**s).astype(np.int64)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("relu", [False, True])
def test_alu_program_equals_the_reference_semantics(relu):
    channels, rows = 4, 300
    scale = np.array([2.3e-3, 4.1e-5, 0.07, 0.6])
    p = choose_requant(scale)
    assert len(set(p.post_shift.tolist())) > 1 and len(set(p.shift.tolist())) > 1
    acc = RNG.integers(-(2**31), 2**31, size=(rows, channels)).astype(np.int64)
    acc[: rows // 2] //= 2**10  # realistic magnitudes as well as extreme ones
    acc[:4] = [[INT32.max] * 4, [INT32.min] * 4, [0] * 4, [-1] * 4]
    lo = 0 if relu else -128
    want = requantize_int(acc.astype(np.int32), p.multiplier, p.shift, p.post_shift, lo, 127)
    tiles = {
        "acc": acc,
        "round": np.where(p.shift > 0, 1 << np.maximum(p.shift - 1, 0), 0),
        "shift": p.shift,
        "multiplier": p.multiplier,
        "post_round": np.where(p.post_shift > 0, 1 << np.maximum(p.post_shift - 1, 0), 0),
        "post_shift": p.post_shift,
    }
    steps = alu_program(p, lo, 127)
    assert {s.tensor for s in steps} == {None, *tiles} - {"acc"}
    got = _run_alu(steps, tiles)
    np.testing.assert_array_equal(got, want.astype(np.int64))


@pytest.mark.parametrize("scale", [0.3, 0.01, 3e-4, 1e-7])
def test_alu_program_with_immediates_equals_the_reference_semantics(scale):
    rows = 500
    acc = RNG.integers(-(2**31), 2**31, size=(rows, 3)).astype(np.int64)
    acc[: rows // 2] //= 2**12
    p = choose_requant(np.full(3, scale))
    want = requantize_int(acc.astype(np.int32), p.multiplier, p.shift, p.post_shift, -128, 127)
    steps = alu_program(p, -128, 127)
    assert all(step.tensor in (None, "round") for step in steps)
    s1 = int(p.shift[0])
    got = _run_alu(steps, {"acc": acc, "round": np.full(3, 1 << max(s1 - 1, 0))})
    np.testing.assert_array_equal(got, want.astype(np.int64))


@pytest.mark.parametrize("k", [0, 1, 9, 15, 17])
def test_shift_only_program_equals_the_reference_semantics(k):
    acc = RNG.integers(-(2**31), 2**31, size=(400, 2)).astype(np.int64)
    acc[:200] //= 2**14
    p = choose_requant(np.full(2, 2.0**-k), mode="shift")
    want = requantize_int(acc.astype(np.int32), p.multiplier, p.shift, p.post_shift, 0, 127)
    steps = alu_program(p, 0, 127)
    assert "MUL" not in [s.op for s in steps] and len(steps) <= 4
    got = _run_alu(steps, {"acc": acc, "round": np.full(2, 1 << max(k - 1, 0))})
    np.testing.assert_array_equal(got, want.astype(np.int64))


def test_per_channel_shifts_alone_take_four_instructions():
    p = choose_requant(np.array([2.0**-3, 2.0**-9]), mode="shift")
    ops = [(s.op, s.tensor) for s in alu_program(p, -128, 127)]
    assert ops == [("ADD", "round"), ("SHR", "shift"), ("MAX", None), ("MIN", None)]


def test_add_rescales_within_its_error_bound():
    sa, sb, so = 0.031, 0.0123, 0.045
    lm, rm, shift = choose_add(sa, sb, so)
    assert max(lm, rm) >= 1 << 14 and max(lm, rm) <= MAX_MULTIPLIER
    a = RNG.integers(-128, 128, size=4000).astype(np.int8)
    b = RNG.integers(-128, 128, size=4000).astype(np.int8)
    got = add_int(a, b, lm, rm, shift, -128, 127).astype(np.float64)
    exact = np.clip((a * sa + b * sb) / so, -128, 127)
    assert np.abs(got - exact).max() <= 0.5 + 2 * 128 * 2.0**-14


def test_add_alu_program_equals_the_reference_semantics():
    lm, rm, shift = choose_add(0.02, 0.05, 0.06)
    a = RNG.integers(-128, 128, size=3000).astype(np.int8)
    b = RNG.integers(-128, 128, size=3000).astype(np.int8)
    want = add_int(a, b, lm, rm, shift, 0, 127)
    got = _run_alu(add_alu_program(lm, rm, shift, 0, 127), {"acc": a, "rhs": b})
    np.testing.assert_array_equal(got, want.astype(np.int64))


def test_clamp_bound_is_the_16_bit_immediate():
    assert CLAMP_MAX == (1 << 15) - 1


@pytest.mark.parametrize("relu", [False, True])
def test_shift_mode_is_the_accelerator_layers_epilogue_with_the_offset_in_the_bias(relu):
    # compiler/topi/vta's layers compute clip(acc >> shift); with the rounding offset added to
    # the accumulator (through the bias) that is exactly the shift-mode requantize
    from compiler.topi.vta.reference import requantize as layer_requantize

    k = 9
    p = choose_requant(np.full(4, 2.0**-k), mode="shift")
    acc = RNG.integers(-(2**24), 2**24, size=(64, 4)).astype(np.int32)
    lo = 0 if relu else -128
    ours = requantize_int(acc, p.multiplier, p.shift, p.post_shift, lo, 127)
    layer = layer_requantize(acc.astype(np.int64) + (1 << (k - 1)), k, relu, None)
    np.testing.assert_array_equal(ours, layer)
