"""Integer hard-sigmoid and hard-swish: their exact int8 semantics and their ALU sequences.

``hard_sigmoid(x) = clip(alpha x + beta, 0, 1)`` is a clip of an affine map, and
``hard_swish(x) = x * hard_sigmoid(x)`` (ONNX: ``alpha = 1/6``, ``beta = 1/2``). On an int8
input ``q`` of scale ``s_x`` both are defined in integers alone, so the accelerator's ALU and the
reference agree bit for bit:

* ``qhard_sigmoid`` (:class:`HardSigmoid`: ``multiplier m``, ``shift s``, ``offset t``,
  ``out_max``): ``h = clip(floor((q m + t) / 2**s), 0, out_max)``, with
  ``m / 2**s ~ alpha s_x / s_y`` (``|m| <= 32767``, ``s <= 15``) and
  ``t = round(beta / s_y * 2**s) + 2**(s-1)`` (the rounding offset folded in), at the output
  scale ``s_y``; ``out_max = min(127, round(1 / s_y))``.
* ``qhard_swish`` (:class:`HardSwish`): ``h`` as above at scale ``1 / 127``
  (:data:`GATE_UNITS`), then ``y = clip(rshift(q h m2 + t2, s2), out_min, out_max)`` with
  ``m2 / 2**s2 ~ s_x / (127 s_y)`` (``rshift`` rounds half up, as the requantization does) and
  ``t2`` an offset, 0 unless a constant multiply and add after the hard swish were fused into
  it (``a hard_swish(x) + d``: ``m2 / 2**s2 ~ a s_x / (127 s_y)``, ``t2 / 2**s2 ~ d / s_y``,
  :func:`compiler.quantize.requant.shift_offset`).
  ``|q h m2| <= 128 * 127 * 32767 < 2**31``: the int32 accumulator never wraps.

ALU sequences (16-bit immediates): the offset ``t`` is split as ``t = c1 2**s + c0`` with
``0 <= c0 < 2**s``; ``floor((v + c0) / 2**s) + c1`` equals ``floor((v + t) / 2**s)`` exactly, so
the hard sigmoid is ``MUL m; ADD c0; SHR s; ADD c1; MAX 0; MIN out_max``. The hard swish loads its
input twice (the second copy is ``rhs``), runs that sequence on ``rhs``, then ``MUL rhs`` (the
ALU's tensor-tensor multiply of two accumulator tiles), ``MUL m2``, the rounding shift (the offset
added in its parts, :func:`compiler.quantize.requant.split_round_shift`) and the clip.

Example:
    >>> p = choose_hard_sigmoid(1 / 6, 0.5, 6 / 127, 1 / 127)
    >>> p.multiplier, p.shift, p.out_max
    (16384, 14, 127)
    >>> hard_sigmoid_int(np.array([-128, -64, 0, 32, 64, 127], np.int8), p).tolist()
    [0, 0, 64, 96, 127, 127]
    >>> [str(s) for s in hard_sigmoid_steps(p)]
    ['MUL 16384', 'SHR 14', 'ADD 64', 'MAX 0', 'MIN 127']
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from compiler.quantize.requant import (
    MAX_MULTIPLIER,
    ROUND_IMM_BITS,
    AluStep,
    QuantizeError,
    round_shift,
    shift_offset,
    split_round_shift,
)

INT8_MIN, INT8_MAX = -128, 127
#: The hard swish's gate ``hard_sigmoid(x)`` is computed in units of ``1 / GATE_UNITS``.
GATE_UNITS = 127
#: Largest right shift of the hard swish's product (the product stays below 2**31).
MAX_SWISH_SHIFT = 30
_IMM_MAX = (1 << 15) - 1
#: Largest ``|offset|`` of a hard swish: whole output steps within an immediate, in units of
#: ``2**shift`` (:func:`compiler.quantize.requant.split_round_shift`).
MAX_SWISH_OFFSET = (1 << ROUND_IMM_BITS) << MAX_SWISH_SHIFT


@dataclass(frozen=True)
class HardSigmoid:
    """``clip(floor((q multiplier + offset) / 2**shift), 0, out_max)`` (see the module
    docstring)."""

    multiplier: int
    shift: int
    offset: int
    out_max: int

    def split_offset(self) -> tuple[int, int]:
        """``(c0, c1)`` with ``offset = c1 * 2**shift + c0`` and ``0 <= c0 < 2**shift``."""
        c1 = self.offset >> self.shift
        return self.offset - (c1 << self.shift), c1


@dataclass(frozen=True)
class HardSwish:
    """``clip(rshift(q h multiplier + offset, shift), out_min, out_max)`` with ``h`` the
    ``gate``."""

    gate: HardSigmoid
    multiplier: int
    shift: int
    out_min: int = INT8_MIN
    out_max: int = INT8_MAX
    offset: int = 0


def fixed_point(ratio: float, max_shift: int, what: str) -> tuple[int, int]:
    """``(m, s)`` with ``m / 2**s ~ ratio``, ``|m| <= MAX_MULTIPLIER``, ``s <= max_shift``,
    the largest such ``s`` (the most precise); ``what`` names the operator in the error.

    Example:
        >>> fixed_point(0.75, 15, "x")
        (24576, 15)
    """
    if not math.isfinite(ratio):
        raise QuantizeError(f"{what}: the scale ratio {ratio} is not finite")
    if abs(ratio) > MAX_MULTIPLIER:
        raise QuantizeError(f"{what}: the scale ratio {ratio:g} exceeds {MAX_MULTIPLIER}")
    s = max_shift
    while s > 0 and abs(round(ratio * 2.0**s)) > MAX_MULTIPLIER:
        s -= 1
    return int(round(ratio * 2.0**s)), s


def choose_hard_sigmoid(
    alpha: float, beta: float, scale_in: float, scale_out: float, out_max: int | None = None
) -> HardSigmoid:
    """The integer hard sigmoid from int8 at ``scale_in`` to ``[0, out_max]`` at ``scale_out``
    (``out_max`` defaults to ``round(1 / scale_out)`` held within int8). Raises
    :class:`QuantizeError` when the offset does not fit the ALU's 16-bit immediates."""
    m, s = fixed_point(alpha * scale_in / scale_out, ROUND_IMM_BITS, "hard_sigmoid")
    half = 1 << (s - 1) if s else 0
    offset = int(math.floor(beta / scale_out * 2.0**s + 0.5)) + half
    top = out_max if out_max is not None else min(INT8_MAX, int(math.floor(1 / scale_out + 0.5)))
    p = HardSigmoid(m, s, offset, max(top, 0))
    if abs(p.split_offset()[1]) > _IMM_MAX:
        raise QuantizeError(f"hard_sigmoid: beta / scale = {beta / scale_out:g} exceeds int16")
    return p


def choose_hard_swish(
    alpha: float,
    beta: float,
    scale_in: float,
    scale_out: float,
    plus: float = 0.0,
    times: float = 1.0,
) -> HardSwish:
    """The integer hard swish from int8 at ``scale_in`` to int8 at ``scale_out``, times
    ``times`` (positive) plus ``plus``: a constant multiply and add after it, fused (the
    multiply is a factor of its multiplier, the add its offset). Raises :class:`QuantizeError`
    when ``plus`` is more output steps than an ALU immediate holds.

    Example:
        >>> p = choose_hard_swish(1 / 6, 0.5, 6 / 127, 6 / 127)
        >>> hard_swish_int(np.array([-127, -32, 0, 32, 127], np.int8), p).tolist()
        [0, -8, 0, 24, 127]
        >>> p = choose_hard_swish(1 / 6, 0.5, 6 / 127, 6 / 127, plus=-0.5)
        >>> hard_swish_int(np.array([-127, -32, 0, 32, 127], np.int8), p).tolist()
        [-11, -19, -11, 14, 116]
    """
    if not times > 0:
        raise QuantizeError(f"hard_swish: a factor of {times} after it is not positive")
    gate = choose_hard_sigmoid(alpha, beta, scale_in, 1.0 / GATE_UNITS, GATE_UNITS)
    ratio = scale_in * times / (GATE_UNITS * scale_out)
    m, s = fixed_point(ratio, MAX_SWISH_SHIFT, "hard_swish")
    offset = shift_offset(plus / scale_out, s)
    split_round_shift(s, offset)  # the offset's parts fit the ALU's immediates
    return HardSwish(gate, m, s, offset=offset)


def hard_sigmoid_int(q: np.ndarray, p: HardSigmoid) -> np.ndarray:
    """The exact integer hard sigmoid (int8 result)."""
    v = (np.asarray(q, np.int64) * p.multiplier + p.offset) >> p.shift
    return np.clip(v, 0, p.out_max).astype(np.int8)


def hard_swish_int(q: np.ndarray, p: HardSwish) -> np.ndarray:
    """The exact integer hard swish (int8 result)."""
    x = np.asarray(q, np.int64)
    h = hard_sigmoid_int(x, p.gate).astype(np.int64)
    y = round_shift(x * h * p.multiplier + p.offset, p.shift)
    return np.clip(y, p.out_min, p.out_max).astype(np.int8)


def hard_sigmoid_steps(p: HardSigmoid, dst: str | None = None) -> list[AluStep]:
    """The ALU steps of :func:`hard_sigmoid_int` on one accumulator tile (``dst="rhs"``: on
    the second operand's tile); identity steps are left out."""
    c0, c1 = p.split_offset()
    steps = [AluStep("MUL", imm=p.multiplier, dst=dst)]
    if c0:
        steps.append(AluStep("ADD", imm=c0, dst=dst))
    if p.shift:
        steps.append(AluStep("SHR", imm=p.shift, dst=dst))
    if c1:
        steps.append(AluStep("ADD", imm=c1, dst=dst))
    return steps + [AluStep("MAX", imm=0, dst=dst), AluStep("MIN", imm=p.out_max, dst=dst)]


def hard_swish_steps(p: HardSwish) -> list[AluStep]:
    """The ALU steps of :func:`hard_swish_int`: the gate on ``rhs`` (a second copy of the
    input), the tensor-tensor ``MUL rhs``, the multiplier, the rounding shift and the clip.

    Example:
        >>> p = choose_hard_swish(1 / 6, 0.5, 6 / 127, 6 / 127)
        >>> [str(s) for s in hard_swish_steps(p)][4:]
        ['MIN@rhs 127', 'MUL rhs', 'MUL 16513', 'SHR 6', 'ADD 16384', 'SHR 15', 'MAX -128', \
'MIN 127']
    """
    return [
        *hard_sigmoid_steps(p.gate, dst="rhs"),
        AluStep("MUL", tensor="rhs"),
        AluStep("MUL", imm=p.multiplier),
        *split_round_shift(p.shift, p.offset),
        AluStep("MAX", imm=p.out_min),
        AluStep("MIN", imm=p.out_max),
    ]


__all__ = [
    "GATE_UNITS",
    "MAX_SWISH_OFFSET",
    "HardSigmoid",
    "HardSwish",
    "choose_hard_sigmoid",
    "fixed_point",
    "choose_hard_swish",
    "hard_sigmoid_int",
    "hard_sigmoid_steps",
    "hard_swish_int",
    "hard_swish_steps",
]
