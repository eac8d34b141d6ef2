"""Argument normalisation shared by the operators (pairs, paddings, output sizes).

Example:
    >>> pair(3, "stride")
    (3, 3)
    >>> padding4(1, "padding")
    (1, 1, 1, 1)
    >>> conv_out_size(56, 3, 1, 1, 1, 1, "conv2d", "height")
    56
"""

from __future__ import annotations

from collections.abc import Sequence

from compiler.errors import ShapeError
from compiler.ir.dtype import DType, as_dtype


def pair(value: int | Sequence[int], what: str) -> tuple[int, int]:
    """``v`` or ``(a, b)`` as a pair of positive ints."""
    vals = (value, value) if isinstance(value, int) else tuple(value)
    if len(vals) != 2 or not all(isinstance(v, int) and v > 0 for v in vals):
        raise ShapeError(f"{what} must be a positive int or a pair of them, got {value!r}")
    return vals[0], vals[1]


def padding4(value: int | Sequence[int], what: str) -> tuple[int, int, int, int]:
    """Padding as ``(top, left, bottom, right)`` from an int, ``(h, w)`` or 4 values."""
    if isinstance(value, int):
        vals: tuple[int, ...] = (value,) * 4
    else:
        raw = tuple(value)
        if len(raw) == 2:
            vals = (raw[0], raw[1], raw[0], raw[1])
        elif len(raw) == 4:
            vals = raw
        else:
            raise ShapeError(f"{what} must be an int, (h, w) or (top, left, bottom, right)")
    if not all(isinstance(v, int) and v >= 0 for v in vals):
        raise ShapeError(f"{what} must be non-negative ints, got {value!r}")
    return vals[0], vals[1], vals[2], vals[3]


def conv_out_size(
    size: int, kernel: int, stride: int, pad_lo: int, pad_hi: int, dilation: int, op: str, dim: str
) -> int:
    """Output extent of a sliding window; raises when the window does not fit."""
    span = dilation * (kernel - 1) + 1
    out = (size + pad_lo + pad_hi - span) // stride + 1
    if out < 1:
        raise ShapeError(
            f"{op}: the {dim} window of {span} (kernel {kernel}, dilation {dilation}) does not fit "
            f"the padded input of {size + pad_lo + pad_hi}"
        )
    return out


def accumulate_dtype(dtype: DType, out_dtype: DType | str | None) -> DType:
    """Default accumulation dtype: int32 for integer inputs, the input dtype for floats."""
    if out_dtype is not None:
        return as_dtype(out_dtype)
    return as_dtype("int32") if dtype.is_int else dtype
