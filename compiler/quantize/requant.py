"""Integer requantization the accelerator's ALU executes: parameters and exact semantics.

The ALU (``ISA.md`` section 3) works lane by lane on int32 accumulators with MIN, MAX, ADD, SHR
(arithmetic, floor) and MUL (low 32 bits), each with a 16-bit signed immediate or a second
accumulator tile as operand; there is no division. A real scale ``M`` (per output channel) is
therefore applied as a 16-bit multiplier and power-of-two shifts:

``requantize(x) = clip(rshift(clamp16(rshift(x, s1)) * m, s2), out_min, out_max)``

with one ``(m, s1, s2)`` per output channel:

* ``rshift(v, s) = floor((v + 2**(s-1)) / 2**s)`` (round half up; ``v`` for ``s == 0``); the
  addition of the first one wraps in int32 like the accumulator (it is an ALU ADD, or part of
  the bias), the second one cannot overflow;
* ``clamp16(t) = min(max(t, -32768), 32767)``, so that ``t * m`` (``0 <= m <= 32767``) always
  fits in 31 bits: the MUL never wraps, whatever the input;
* ``m = round(M * 2**(s1 + s2))`` in ``[2**14, 2**15)``: 15 significant bits of ``M``;
* ``s2 = min(S, 21)`` and ``s1 = S - s2`` split the total shift ``S``: the pre-shift ``s1`` is
  0 (the accumulator is used whole) unless the clamp would otherwise cut values that do not
  saturate, and with ``m >= 2**14`` and ``s2 <= 21`` a clamped ``t`` already saturates the
  int8 output (``32767 * 2**14 / 2**21 > 255``), so the clamp never changes a result. One
  unit of ``t`` is then at most ``2**-6`` of an output step.

:func:`alu_program` lists the ALU instruction sequence of one requantization; the tests run it
lane by lane with :func:`isa.semantics.alu_apply` and compare with :func:`requantize_int`.

Example:
    >>> p = choose_requant(np.array([0.0123, 0.0031, 0.3]))
    >>> p.multiplier.tolist(), p.shift.tolist(), p.post_shift.tolist()
    ([25795, 26005, 19661], [0, 2, 0], [21, 21, 16])
    >>> acc = np.array([[1000, 1000, 10], [-40000, 5000, -300]], np.int32)
    >>> requantize_int(acc, p.multiplier, p.shift, p.post_shift, -128, 127).tolist()
    [[12, 3, 3], [-128, 16, -90]]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from compiler.errors import GraphError

#: Largest multiplier: the ALU's MUL takes a 16-bit signed operand.
MAX_MULTIPLIER = (1 << 15) - 1
#: Clamp bounds of the pre-shifted accumulator (16-bit signed, the MIN/MAX immediates).
CLAMP_MIN, CLAMP_MAX = -(1 << 15), (1 << 15) - 1
#: Largest per-layer post-shift for which the 16-bit clamp is exact (see the module docstring).
MAX_POST_SHIFT = 21
#: Largest pre-shift (a shift by 31 already leaves only the sign).
MAX_PRE_SHIFT = 31
#: A scale from which every int8 requantization saturates: an integer accumulator ``a != 0`` times
#: a scale ``m >= 128.5`` rounds to at least 129 in magnitude, beyond every int8 bound, and
#: ``a = 0`` gives 0 at any scale. Larger scales (a tensor clipped to a range far below its
#: input's) are applied as this one, with the same results, instead of overflowing the 16-bit
#: multiplier.
SATURATING_SCALE = 256.0
#: Width of the rounding immediate: ``2**(b-1)`` with ``b <= 15`` fits a signed 16-bit field.
ROUND_IMM_BITS = 15


class QuantizeError(GraphError):
    """A graph or a scale that the int8 quantizer cannot handle; the message names the node."""


def wrap32(v: np.ndarray) -> np.ndarray:
    """Two's complement wrap of int64 values to the int32 range (kept as int64).

    Example:
        >>> wrap32(np.array([2**31, -2**31 - 1])).tolist()
        [-2147483648, 2147483647]
    """
    v = np.asarray(v, np.int64)
    return ((v + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def round_shift(v: np.ndarray, s: np.ndarray | int) -> np.ndarray:
    """``floor((v + 2**(s-1)) / 2**s)`` on int64 values (``v`` where ``s == 0``), no wrap.

    Example:
        >>> round_shift(np.array([5, 6, -5, -6, 7]), 2).tolist()
        [1, 2, -1, -1, 2]
    """
    v = np.asarray(v, np.int64)
    s = np.asarray(s, np.int64)
    half = np.where(s > 0, np.left_shift(np.int64(1), np.maximum(s - 1, 0)), 0)
    return (v + half) >> s


@dataclass(frozen=True)
class RequantParams:
    """Integer parameters of a per-channel requantization (see the module docstring):
    int32 vectors with one entry per channel: ``multiplier`` (``m``), ``shift`` (the pre-shift
    ``s1``) and ``post_shift`` (``s2``). ``scale`` is the real scale the integers approximate.
    """

    multiplier: np.ndarray
    shift: np.ndarray
    post_shift: np.ndarray
    scale: np.ndarray

    def effective_scale(self) -> np.ndarray:
        """``m / 2**(s1 + s2)``: the scale the integers apply.

        Example:
            >>> choose_requant(np.array([0.25])).effective_scale().tolist()
            [0.25]
        """
        total = self.shift.astype(np.float64) + self.post_shift
        return self.multiplier.astype(np.float64) / np.exp2(total)


def choose_requant(scale: np.ndarray, *, mode: str = "multiplier") -> RequantParams:
    """Integer parameters approximating the real per-channel scales ``scale`` (``>= 0``).

    ``mode="multiplier"``: 15-bit multipliers as in the module docstring. ``mode="shift"``:
    pure shifts (``m = 1``, ``s2 = 0``), ``s1 = round(-log2(scale))``; exact only when the
    scales are powers of two (the quantizer snaps weight scales so that they are).
    A multiplier-mode scale above :data:`SATURATING_SCALE` is applied as that scale: every
    int8 result is the same (saturated), and the 16-bit multiplier holds it. Raises
    :class:`QuantizeError` for a scale the ALU cannot apply (negative or not finite; in shift
    mode, above 1).

    Example:
        >>> p = choose_requant(np.array([2.0**-9, 2.0**-12]), mode="shift")
        >>> p.multiplier.tolist(), p.shift.tolist(), p.post_shift.tolist()
        ([1, 1], [9, 12], [0, 0])
    """
    m_real = np.asarray(scale, np.float64).reshape(-1)
    if not np.all(np.isfinite(m_real)) or np.any(m_real < 0):
        raise QuantizeError(f"requantization scales must be finite and >= 0, got {m_real}")
    n = m_real.size
    zero = np.zeros(n, np.int32)
    if mode == "shift":
        if np.any(m_real > 1.0):
            raise QuantizeError(
                f"shift requantization needs scales <= 1, got {float(m_real.max()):g}"
            )
        with np.errstate(divide="ignore"):
            s = np.where(m_real > 0, np.rint(-np.log2(np.maximum(m_real, 1e-300))), MAX_PRE_SHIFT)
        s = np.minimum(s, MAX_PRE_SHIFT).astype(np.int32)
        mult = np.where(m_real > 0, 1, 0).astype(np.int32)
        return RequantParams(mult, s, zero, m_real)
    if mode != "multiplier":
        raise QuantizeError(f"unknown requantization mode {mode!r} (multiplier or shift)")
    applied = np.minimum(m_real, SATURATING_SCALE)  # the same int8 results (SATURATING_SCALE)
    mult = np.zeros(n, np.int64)
    pre = np.zeros(n, np.int64)
    post = np.zeros(n, np.int64)
    for c in np.flatnonzero(applied > 0):
        total = math.floor(math.log2(MAX_MULTIPLIER / applied[c]))
        if round(applied[c] * 2.0**total) > MAX_MULTIPLIER:
            total -= 1
        post[c] = min(total, MAX_POST_SHIFT)
        # a pre-shift past 31 leaves only the sign: shift by 31, shrink the multiplier instead
        pre[c] = min(total - post[c], MAX_PRE_SHIFT)
        mult[c] = round(applied[c] * 2.0 ** (pre[c] + post[c]))
    return RequantParams(mult.astype(np.int32), pre.astype(np.int32), post.astype(np.int32), m_real)


def _channel_view(v: np.ndarray, ndim: int, axis: int) -> np.ndarray:
    shape = [1] * ndim
    shape[axis] = -1
    return np.asarray(v, np.int64).reshape(shape)


def requantize_int(
    x: np.ndarray,
    multiplier: np.ndarray,
    shift: np.ndarray,
    post_shift: np.ndarray,
    out_min: int,
    out_max: int,
    axis: int = 1,
) -> np.ndarray:
    """The exact integer semantics of the ``requantize`` operator; int8 result.

    ``x`` is int32; ``multiplier``, ``shift`` and ``post_shift`` hold one entry per index of
    ``axis``.

    Example:
        >>> one, two, zero = np.array([1, 1]), np.array([2, 2]), np.array([0, 0])
        >>> requantize_int(np.array([[300, -300]], np.int32), one, two, zero, -128, 127).tolist()
        [[75, -75]]
    """
    x64 = np.asarray(x).astype(np.int64)
    m = _channel_view(multiplier, x64.ndim, axis)
    s1 = _channel_view(shift, x64.ndim, axis)
    s2 = _channel_view(post_shift, x64.ndim, axis)
    half = np.where(s1 > 0, np.left_shift(np.int64(1), np.maximum(s1 - 1, 0)), 0)
    t = wrap32(x64 + half) >> s1
    t = np.clip(t, CLAMP_MIN, CLAMP_MAX) * m
    y = round_shift(t, s2)
    return np.clip(y, out_min, out_max).astype(np.int8)


def choose_add(lhs_scale: float, rhs_scale: float, out_scale: float) -> tuple[int, int, int]:
    """``(lhs_multiplier, rhs_multiplier, shift)`` of an int8 add with rescaling:
    ``lhs_multiplier / 2**shift ~ lhs_scale / out_scale`` (and the same for ``rhs``), the larger
    multiplier in ``[2**14, 2**15)``.

    Example:
        >>> choose_add(0.02, 0.01, 0.04)
        (16384, 8192, 15)
    """
    ratios = (lhs_scale / out_scale, rhs_scale / out_scale)
    if not all(math.isfinite(r) and r > 0 for r in ratios):
        raise QuantizeError(f"add: scales must be positive and finite, got {ratios}")
    big = max(ratios)
    if big >= 1 << 15:
        raise QuantizeError(f"add: input/output scale ratio {big:g} needs more than 16 bits")
    shift = math.floor(math.log2(MAX_MULTIPLIER / big))
    if round(big * 2.0**shift) > MAX_MULTIPLIER:
        shift -= 1
    # products stay below 2**22 and the sum below 2**23: any shift up to 30 is exact
    shift = max(0, min(shift, 30))
    lhs, rhs = (int(round(r * 2.0**shift)) for r in ratios)
    return lhs, rhs, shift


def add_int(
    a: np.ndarray,
    b: np.ndarray,
    lhs_multiplier: int,
    rhs_multiplier: int,
    shift: int,
    out_min: int,
    out_max: int,
) -> np.ndarray:
    """The exact integer semantics of the ``qadd`` operator; int8 result.

    Example:
        >>> add_int(np.array([100], np.int8), np.array([100], np.int8), 16384, 8192, 15,
        ...         -128, 127).tolist()
        [75]
    """
    acc = a.astype(np.int64) * lhs_multiplier + b.astype(np.int64) * rhs_multiplier
    return np.clip(round_shift(acc, shift), out_min, out_max).astype(np.int8)


def mul_int(
    a: np.ndarray, b: np.ndarray, multiplier: int, shift: int, out_min: int, out_max: int
) -> np.ndarray:
    """The exact integer semantics of the ``qmul`` operator (``b`` broadcasts, e.g. a
    squeeze-excitation gate of shape ``(N, C, 1, 1)``); int8 result.

    Example:
        >>> mul_int(np.array([100, -100], np.int8), np.array([64], np.int8), 16384, 20,
        ...         -128, 127).tolist()
        [100, -100]
    """
    acc = a.astype(np.int64) * b.astype(np.int64) * multiplier
    return np.clip(round_shift(acc, shift), out_min, out_max).astype(np.int8)


@dataclass(frozen=True)
class AluStep:
    """One ALU instruction of a requantization: ``op`` (MIN, MAX, ADD, SHR, MUL) with an
    immediate (``imm``) or, when ``tensor`` names one, a per-channel int32 tile of the
    accumulator buffer (the tensor-tensor form). ``dst`` names the tile written when it is not
    the one being requantized (printed as ``OP@dst``)."""

    op: str
    imm: int | None = None
    tensor: str | None = None
    dst: str | None = None

    def __str__(self) -> str:
        head = f"{self.op}@{self.dst}" if self.dst else self.op
        return f"{head} {self.tensor if self.tensor else self.imm}"


#: The step that starts the second tile (``rhs``) as a copy of the value so far: a hard swish
#: fused after a requantization takes its gate from it. The ALU copies with ``MUL 0`` and an
#: ``ADD`` of the source.
COPY = AluStep("COPY", tensor="lhs", dst="rhs")


def channel_tile_names(steps: Sequence[AluStep]) -> list[str]:
    """The per-channel int32 tiles ``steps`` read, by name in order of first use: every tensor
    operand but the second tile (``rhs``) and a :data:`COPY`'s source.

    Example:
        >>> channel_tile_names([AluStep("ADD", tensor="bias"), COPY, AluStep("MUL", tensor="rhs")])
        ['bias']
    """
    return list(dict.fromkeys(s.tensor for s in steps if s.tensor not in (None, "rhs", "lhs")))


def gate_shape(shape: Sequence[int]) -> tuple[int, ...]:
    """The shape of an operand of one value per channel for a tensor of ``shape``: ``(N, C, 1,
    1)`` for an NCHW tensor (a squeeze-excitation's gate, a PReLU's slopes), the shape itself
    for an ``(N, C)`` one.

    Example:
        >>> gate_shape((1, 8, 5, 5)), gate_shape((2, 8))
        ((1, 8, 1, 1), (2, 8))
    """
    shape = tuple(int(d) for d in shape)
    return (shape[0], shape[1], 1, 1) if len(shape) == 4 else shape


def second_tile(steps: Sequence[AluStep]) -> bool:
    """Whether ``steps`` use a second accumulator tile of the output's shape (``rhs``: a
    residual loaded into it, or a copy of the value taken where a step first writes it).

    Example:
        >>> second_tile([AluStep("SHR", imm=8)]), second_tile([AluStep("ADD", tensor="rhs")])
        (False, True)
    """
    return any(s.tensor == "rhs" or s.dst == "rhs" for s in steps)


def reads_residual(steps: Sequence[AluStep]) -> bool:
    """Whether ``steps`` take their second tile from a residual operand: they use one, and do
    not start it with a ``COPY`` of the value so far (:data:`COPY`).

    Example:
        >>> reads_residual([COPY, AluStep("MUL", imm=3, dst="rhs")])
        False
    """
    first = next((s for s in steps if s.tensor == "rhs" or s.dst == "rhs"), None)
    return first is not None and first != COPY


def alu_uops(steps: Sequence[AluStep]) -> tuple[int, int]:
    """The ALU micro-ops a step list issues per accumulator entry, and how many of them have an
    immediate operand: one a step, but a :data:`COPY`'s two (``MUL 0``, then ``ADD`` of the
    source).

    Example:
        >>> alu_uops([COPY, AluStep("MUL", tensor="rhs"), AluStep("SHR", imm=3)])
        (4, 2)
    """
    copies = sum(1 for s in steps if s == COPY)
    return len(steps) + copies, sum(1 for s in steps if s.tensor is None) + copies


def split_round_shift(s: int, offset: int = 0) -> list[AluStep]:
    """ALU steps of ``rshift(v + offset, s)`` with 16-bit immediates: ``SHR s-b; ADD 2**(b-1);
    SHR b`` with ``b = min(s, 15)``; ``floor((floor(v / 2**a) + 2**(b-1)) / 2**b)`` equals
    ``floor((v + 2**(a+b-1)) / 2**(a+b))`` exactly. ``offset`` (a multiple of ``2**a``, see
    :func:`shift_offset`) is ``t = c1 2**b + c0`` units of ``2**a`` with ``0 <= c0 < 2**b``:
    ``ADD c0`` before the last shift, ``ADD c1`` after it (whole output steps).

    Example:
        >>> [str(x) for x in split_round_shift(21)]
        ['SHR 6', 'ADD 16384', 'SHR 15']
        >>> [str(x) for x in split_round_shift(21, -3 * 2**21 + 5 * 2**6)]
        ['SHR 6', 'ADD 16384', 'ADD 5', 'SHR 15', 'ADD -3']
    """
    b = min(s, ROUND_IMM_BITS)
    unit = 1 << (s - b)
    if offset % unit:
        raise QuantizeError(f"offset {offset} is not a multiple of 2**{s - b}")
    c1, c0 = divmod(offset // unit, 1 << b)
    if abs(c1) > (1 << ROUND_IMM_BITS) - 1:
        raise QuantizeError(f"offset {offset} is {c1} output steps, beyond a 16-bit immediate")
    steps = [AluStep("SHR", imm=s - b)] if s > b else []
    if b:
        steps.append(AluStep("ADD", imm=1 << (b - 1)))
    if c0:
        steps.append(AluStep("ADD", imm=c0))
    if b:
        steps.append(AluStep("SHR", imm=b))
    return steps + ([AluStep("ADD", imm=c1)] if c1 else [])


def shift_offset(value: float, s: int) -> int:
    """``value`` (output steps) as the ``offset`` of ``rshift(v + offset, s)`` that
    :func:`split_round_shift` adds exactly: ``round(value * 2**b)`` units of ``2**(s - b)``,
    ``b = min(s, 15)`` (a resolution of ``2**-15`` step at most).

    Example:
        >>> shift_offset(-2.5, 3), shift_offset(0.25, 20) == 2**13 * 2**5
        (-20, True)
    """
    b = min(s, ROUND_IMM_BITS)
    return int(math.floor(value * 2.0**b + 0.5)) << (s - b)


def alu_program(params: RequantParams, out_min: int, out_max: int) -> list[AluStep]:
    """The ALU instructions of one ``requantize``, in order, on the int32 accumulator tile.

    A parameter every channel shares becomes an immediate (a rounding shift past 15 is split so
    that its offset fits 16 bits, see :func:`split_round_shift`); one that differs between
    channels is read from an int32 tile of the accumulator buffer, one entry per lane's channel:
    ``round`` (``2**(s1-1)``, 0 where ``s1 = 0``; the compiler may fold it into the int32 bias),
    ``shift``, ``multiplier``, ``post_round`` (``2**(s2-1)``, 0 where ``s2 = 0``) and
    ``post_shift``. Steps that are the identity for every channel are left out.

    Example:
        >>> p = choose_requant(np.array([0.01, 0.003]))
        >>> print("; ".join(str(s) for s in alu_program(p, 0, 127)[:6]))
        ADD round; SHR shift; MAX -32768; MIN 32767; MUL multiplier; SHR 6
        >>> p = choose_requant(np.full(4, 0.01))
        >>> print("; ".join(str(s) for s in alu_program(p, -128, 127)))
        MAX -32768; MIN 32767; MUL 20972; SHR 6; ADD 16384; SHR 15; MAX -128; MIN 127
        >>> p = choose_requant(np.full(4, 2.0**-7), mode="shift")
        >>> print("; ".join(str(s) for s in alu_program(p, 0, 127)))
        ADD 64; SHR 7; MAX 0; MIN 127
    """

    def shared(v: np.ndarray) -> int | None:
        values = set(np.asarray(v).tolist())
        return values.pop() if len(values) == 1 else None

    m, s1, s2 = shared(params.multiplier), shared(params.shift), shared(params.post_shift)
    steps: list[AluStep] = []
    if s1 is None:
        steps += [AluStep("ADD", tensor="round"), AluStep("SHR", tensor="shift")]
    elif 0 < s1 <= ROUND_IMM_BITS:
        steps += [AluStep("ADD", imm=1 << (s1 - 1)), AluStep("SHR", imm=s1)]
    elif s1 > ROUND_IMM_BITS:
        # the offset does not fit an immediate: a tile of it (or the bias) carries it
        steps += [AluStep("ADD", tensor="round"), AluStep("SHR", imm=s1)]
    if m != 1 or s2 != 0:
        # with m = 1 and no post-shift the final clip to int8 already does the clamp's work
        steps += [AluStep("MAX", imm=CLAMP_MIN), AluStep("MIN", imm=CLAMP_MAX)]
    if m is None:
        steps.append(AluStep("MUL", tensor="multiplier"))
    elif m != 1:
        steps.append(AluStep("MUL", imm=m))
    if s2 is None:
        steps += [AluStep("ADD", tensor="post_round"), AluStep("SHR", tensor="post_shift")]
    else:
        steps += split_round_shift(s2)
    return steps + [AluStep("MAX", imm=out_min), AluStep("MIN", imm=out_max)]


def add_alu_program(
    lhs_multiplier: int, rhs_multiplier: int, shift: int, out_min: int, out_max: int
) -> list[AluStep]:
    """The ALU instructions of one ``qadd``: both int8 operands are loaded into the
    accumulator (ACC8 loads sign-extend them), the left one in the destination tile, the right
    one in the tile named ``rhs``.

    A factor of two common to both multipliers and the shift cancels first
    (``floor((2v + 2**(s-1)) / 2**s) = floor((v + 2**(s-2)) / 2**(s-1))``, and ``2v`` rounded
    by one bit is ``v``), and a multiplier of 1 is no step: the same bits in fewer micro-ops.
    Scales that differ by powers of two (the ``vta`` quantization) thus need no rounding shift
    at all when the output scale is the smaller input's.

    Example:
        >>> [str(s) for s in add_alu_program(16384, 8192, 15, 0, 127)][:4]
        ['MUL 2', 'ADD rhs', 'ADD 2', 'SHR 2']
        >>> [str(s) for s in add_alu_program(17000, 12000, 15, 0, 127)][:4]
        ['MUL 2125', 'MUL@rhs 1500', 'ADD rhs', 'ADD 2048']
        >>> [str(s) for s in add_alu_program(16384, 16384, 14, 0, 127)]
        ['ADD rhs', 'MAX 0', 'MIN 127']
    """
    while shift > 0 and lhs_multiplier % 2 == 0 and rhs_multiplier % 2 == 0:
        lhs_multiplier, rhs_multiplier, shift = lhs_multiplier // 2, rhs_multiplier // 2, shift - 1
    steps = [AluStep("MUL", imm=lhs_multiplier)] if lhs_multiplier != 1 else []
    if rhs_multiplier != 1:
        steps.append(AluStep("MUL", imm=rhs_multiplier, dst="rhs"))
    return [
        *steps,
        AluStep("ADD", tensor="rhs"),
        *split_round_shift(shift),
        AluStep("MAX", imm=out_min),
        AluStep("MIN", imm=out_max),
    ]


__all__ = [
    "COPY",
    "alu_uops",
    "channel_tile_names",
    "gate_shape",
    "reads_residual",
    "second_tile",
    "add_alu_program",
    "AluStep",
    "QuantizeError",
    "RequantParams",
    "add_int",
    "mul_int",
    "alu_program",
    "choose_add",
    "choose_requant",
    "requantize_int",
    "round_shift",
    "split_round_shift",
    "wrap32",
]
