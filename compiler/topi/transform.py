"""Data movement: reshape, transpose, concatenation and layout transforms between NCHW and
the packed ``NCHW{n}n{c}c`` layout.

Example:
    >>> from compiler import te
    >>> x = te.placeholder((1, 32, 7, 7), name="x")
    >>> layout_transform(x, "NCHW", "NCHW1n16c").shape
    (1, 2, 7, 7, 1, 16)
    >>> reshape(x, (1, 32 * 49)).shape
    (1, 1568)
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from compiler.errors import ShapeError
from compiler.ir import op
from compiler.ir.expr import Expr
from compiler.te import compute
from compiler.te.tensor import Tensor

_PACKED = re.compile(r"^NCHW(\d+)n(\d+)c$")


def parse_layout(layout: str, what: str = "layout") -> tuple[int, int] | None:
    """``None`` for ``"NCHW"``, the ``(n, c)`` blocks for ``"NCHW{n}n{c}c"``.

    Example:
        >>> parse_layout("NCHW"), parse_layout("NCHW1n16c")
        (None, (1, 16))
    """
    if layout == "NCHW":
        return None
    m = _PACKED.match(layout)
    if not m or int(m.group(1)) < 1 or int(m.group(2)) < 1:
        raise ShapeError(f"{what}: {layout!r} is neither 'NCHW' nor 'NCHW{{n}}n{{c}}c'")
    return int(m.group(1)), int(m.group(2))


def logical_shape(shape: Sequence[int], layout: str, what: str = "layout") -> tuple[int, ...]:
    """The NCHW shape of a tensor stored in ``layout``.

    Example:
        >>> logical_shape((1, 4, 7, 7, 1, 16), "NCHW1n16c")
        (1, 64, 7, 7)
    """
    blocks = parse_layout(layout, what)
    if blocks is None:
        if len(shape) != 4:
            raise ShapeError(f"{what}: layout NCHW needs a 4-d shape, got {tuple(shape)}")
        return tuple(shape)
    if len(shape) != 6 or tuple(shape[4:]) != blocks:
        raise ShapeError(
            f"{what}: layout {layout} needs shape (N/{blocks[0]}, C/{blocks[1]}, H, W, "
            f"{blocks[0]}, {blocks[1]}), got {tuple(shape)}"
        )
    nb, cb, h, w, bn, bc = shape
    return (nb * bn, cb * bc, h, w)


def layout_transform(
    x: Tensor, src_layout: str, dst_layout: str, name: str = "layout_transform"
) -> Tensor:
    """Re-store ``x`` from ``src_layout`` in ``dst_layout`` (both NCHW or packed; never pads:
    N and C must divide into the destination blocks)."""
    n, c, h, w = logical_shape(x.shape, src_layout, f"{name} src_layout")
    src = parse_layout(src_layout, f"{name} src_layout")
    dst = parse_layout(dst_layout, f"{name} dst_layout")
    if dst is not None and (n % dst[0] or c % dst[1]):
        raise ShapeError(
            f"{name}: N={n}, C={c} of {x.name} do not divide into the blocks of {dst_layout}; "
            "pad the channels first"
        )

    def read(b: Expr, ch: Expr, y: Expr, xx: Expr) -> Expr:
        if src is None:
            return x[b, ch, y, xx]
        return x[b // src[0], ch // src[1], y, xx, b % src[0], ch % src[1]]

    if dst is None:
        return compute((n, c, h, w), read, name=name, tag="injective")
    bn, bc = dst
    return compute(
        (n // bn, c // bc, h, w, bn, bc),
        lambda nb, cb, y, xx, bi, ci: read(nb * bn + bi, cb * bc + ci, y, xx),
        name=name,
        tag="injective",
    )


def reshape(x: Tensor, newshape: Sequence[int], name: str = "reshape") -> Tensor:
    """Row-major reshape to a fully resolved ``newshape``."""
    shape = tuple(int(d) for d in newshape)
    if any(d < 1 for d in shape) or math.prod(shape) != math.prod(x.shape):
        raise ShapeError(
            f"{name}: cannot reshape {x.name}{x.shape} ({math.prod(x.shape)} elements) to {shape}"
        )
    if shape == x.shape:
        return compute(shape, lambda *i: x(*i), name=name, tag="injective")
    strides_out = [math.prod(shape[k + 1 :]) for k in range(len(shape))]
    strides_in = [math.prod(x.shape[k + 1 :]) for k in range(x.ndim)]

    def fcompute(*i: Expr) -> Expr:
        terms = [v * st for v, st, d in zip(i, strides_out, shape, strict=True) if d > 1]
        if not terms:
            return x(*([0] * x.ndim))
        flat = terms[0]
        for t in terms[1:]:
            flat = flat + t
        return x(
            *(0 if d == 1 else (flat // st) % d for st, d in zip(strides_in, x.shape, strict=True))
        )

    return compute(shape, fcompute, name=name, tag="injective")


def transpose(x: Tensor, axes: Sequence[int], name: str = "transpose") -> Tensor:
    """``out.shape[k] == x.shape[axes[k]]`` (numpy's ``transpose``)."""
    perm = tuple(int(a) for a in axes)
    if sorted(perm) != list(range(x.ndim)):
        raise ShapeError(f"{name}: axes {perm} are not a permutation of {x.ndim} axes of {x.name}")
    shape = tuple(x.shape[a] for a in perm)

    def fcompute(*i: Expr) -> Expr:
        idx: list[Expr | int] = [0] * x.ndim
        for k, a in enumerate(perm):
            idx[a] = i[k]
        return x(*idx)

    return compute(shape, fcompute, name=name, tag="injective")


def concat(xs: Sequence[Tensor], axis: int, name: str = "concat") -> Tensor:
    """Join tensors along ``axis``; the other dimensions and the dtypes must agree."""
    if not xs:
        raise ShapeError(f"{name}: needs at least one input")
    first = xs[0]
    if not 0 <= axis < first.ndim:
        raise ShapeError(f"{name}: axis {axis} is out of range for {first.name}{first.shape}")
    for t in xs[1:]:
        same = t.ndim == first.ndim and all(
            a == b for k, (a, b) in enumerate(zip(t.shape, first.shape, strict=False)) if k != axis
        )
        if not same or t.dtype != first.dtype:
            raise ShapeError(
                f"{name}: {t.name}: {t.dtype}{t.shape} does not match {first.name}: "
                f"{first.dtype}{first.shape} outside axis {axis}"
            )
    offsets = [0]
    for t in xs:
        offsets.append(offsets[-1] + t.shape[axis])
    shape = first.shape[:axis] + (offsets[-1],) + first.shape[axis + 1 :]

    def fcompute(*i: Expr) -> Expr:
        def piece(k: int) -> Expr:
            idx = list(i)
            idx[axis] = i[axis] - offsets[k]
            return xs[k](*idx)

        value = piece(len(xs) - 1)
        for k in range(len(xs) - 2, -1, -1):
            value = op.if_then_else(i[axis] < offsets[k + 1], piece(k), value)
        return value

    return compute(shape, fcompute, name=name, tag="injective")
