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


def strided_slice(
    x: Tensor,
    begin: Sequence[int],
    end: Sequence[int],
    strides: Sequence[int],
    name: str = "strided_slice",
) -> Tensor:
    """``out[i] = x[begin + i * strides]`` per axis, over ``range(begin, end, strides)``
    (resolved bounds: no negative wrap-around, a negative stride walks backwards)."""
    if not len(begin) == len(end) == len(strides) == x.ndim:
        raise ShapeError(f"{name}: begin/end/strides need {x.ndim} entries each for {x.name}")
    shape = tuple(len(range(b, e, s)) for b, e, s in zip(begin, end, strides, strict=True))
    for d, (b, n, s) in enumerate(zip(begin, shape, strides, strict=True)):
        if n < 1 or not 0 <= b < x.shape[d] or not 0 <= b + (n - 1) * s < x.shape[d]:
            raise ShapeError(f"{name}: axis {d} of {x.name}{x.shape} reads outside the tensor")
    return compute(
        shape,
        lambda *i: x(*(b + v * s for v, b, s in zip(i, begin, strides, strict=True))),
        name=name,
        tag="injective",
    )


def take(
    x: Tensor,
    indices: Sequence[int],
    indices_shape: Sequence[int],
    axis: int,
    name: str = "take",
) -> Tensor:
    """numpy's ``take`` with constant, non-negative ``indices`` (flat, of ``indices_shape``).

    Indices that step evenly (a scalar, a range) read ``x`` at an affine position. Others are
    cut into runs that each step evenly (a reflect pad's indices are three: down, up, down),
    and a balanced tree of selects on the flat index position picks the run, so the selects
    nest only ``log2(runs)`` deep; each run's position is clamped to the indices it holds, so
    every read stays in bounds without a data-dependent address.
    """
    idx = [int(k) for k in indices]
    ishape = tuple(int(d) for d in indices_shape)
    if len(idx) != math.prod(ishape) or not idx:
        raise ShapeError(f"{name}: {len(idx)} indices do not fill shape {ishape}")
    if not 0 <= axis < x.ndim or not all(0 <= k < x.shape[axis] for k in idx):
        raise ShapeError(f"{name}: indices {idx} leave axis {axis} of {x.name}{x.shape}")
    rank = len(ishape)
    shape = x.shape[:axis] + ishape + x.shape[axis + 1 :]
    istrides = [math.prod(ishape[k + 1 :]) for k in range(rank)]
    runs = _affine_runs(idx)

    def fcompute(*i: Expr) -> Expr:
        pos: Expr | int = 0
        for v, st, d in zip(i[axis : axis + rank], istrides, ishape, strict=True):
            if d > 1:
                pos = v * st if isinstance(pos, int) and pos == 0 else pos + v * st
        outer, inner = i[:axis], i[axis + rank :]
        if len(runs) == 1:  # evenly stepping: an affine position, in bounds by construction
            _, _, start, stride = runs[0]
            return x(*outer, start + pos * stride if stride else start, *inner)

        def run(r: tuple[int, int, int, int]) -> Expr:
            first, length, start, stride = r
            if stride == 0:  # one index, or one repeated (an edge pad's)
                return x(*outer, start, *inner)
            last = start + (length - 1) * stride
            at = op.add(start, op.mul(op.sub(pos, first), stride))
            at = op.maximum(op.minimum(at, max(start, last)), min(start, last))
            return x(*outer, at, *inner)

        def pick(lo: int, hi: int) -> Expr:  # runs[lo:hi], split at the middle run
            if hi - lo == 1:
                return run(runs[lo])
            mid = (lo + hi) // 2
            return op.if_then_else(op.less(pos, runs[mid][0]), pick(lo, mid), pick(mid, hi))

        return pick(0, len(runs))

    return compute(shape, fcompute, name=name, tag="injective")


def _affine_runs(idx: Sequence[int]) -> list[tuple[int, int, int, int]]:
    """``idx`` cut greedily into runs that step evenly: ``(first position, length, first
    index, step)`` each.

    Example:
        >>> _affine_runs([2, 1, 0, 1, 2, 3, 2, 1])
        [(0, 3, 2, -1), (3, 3, 1, 1), (6, 2, 2, -1)]
        >>> _affine_runs([4, 0, 9])
        [(0, 2, 4, -4), (2, 1, 9, 0)]
    """
    runs = []
    j = 0
    while j < len(idx):
        step = idx[j + 1] - idx[j] if j + 1 < len(idx) else 0
        k = j + 1
        while k < len(idx) and idx[k] == idx[j] + (k - j) * step:
            k += 1
        runs.append((j, k - j, idx[j], step if k - j > 1 else 0))
        j = k
    return runs


def broadcast_to(x: Tensor, shape: Sequence[int], name: str = "broadcast_to") -> Tensor:
    """numpy's ``broadcast_to``: size-1 (and missing leading) axes repeat."""
    out = tuple(int(d) for d in shape)
    lead = len(out) - x.ndim
    if lead < 0 or any(d not in (1, out[lead + k]) for k, d in enumerate(x.shape)):
        raise ShapeError(f"{name}: {x.name}{x.shape} does not broadcast to {out}")
    return compute(
        out,
        lambda *i: x(*(0 if d == 1 else i[lead + k] for k, d in enumerate(x.shape))),
        name=name,
        tag="injective",
    )


def tile(x: Tensor, reps: Sequence[int], name: str = "tile") -> Tensor:
    """numpy's ``tile`` with one repeat count per axis."""
    if len(reps) != x.ndim or min(reps, default=1) < 1:
        raise ShapeError(f"{name}: reps {tuple(reps)} must be {x.ndim} counts >= 1")
    shape = tuple(d * int(r) for d, r in zip(x.shape, reps, strict=True))
    return compute(
        shape,
        lambda *i: x(*(v if r == 1 else v % d for v, d, r in zip(i, x.shape, reps, strict=True))),
        name=name,
        tag="injective",
    )


def im2col(
    x: Tensor,
    window: int,
    stride: int,
    pad_before: Sequence[int],
    out_hw: Sequence[int],
    name: str = "im2col",
) -> Tensor:
    """The ``im2col`` operator (:func:`compiler.graph.reference.im2col`): every output pixel's
    ``window x window`` patch of an NCHW ``x`` as channels, zero outside ``x``.

    Example:
        >>> from compiler import te
        >>> im2col(te.placeholder((1, 3, 8, 8), name="x"), 7, 2, (3, 3), (4, 4)).shape
        (1, 147, 4, 4)
    """
    if x.ndim != 4:
        raise ShapeError(f"{name}: im2col reads an NCHW tensor, got {x.shape}")
    n, c, h, w = x.shape
    top, left = pad_before
    oh, ow = out_hw
    taps = window * window

    def fcompute(b: Expr, i: Expr, y: Expr, xx: Expr) -> Expr:
        row = y * stride + (i // window) % window - top
        col = xx * stride + i % window - left
        inside = op.all_of(row >= 0, row < h, col >= 0, col < w)
        return op.if_then_else(inside, x(b, i // taps, row, col), op.convert(0, x.dtype))

    return compute((n, c * taps, oh, ow), fcompute, name=name, tag="injective")


def _unflatten(i: Expr, dims: Sequence[int]) -> list[Expr | int]:
    """The indices of ``dims`` (row major) whose flat index is ``i``."""
    out: list[Expr | int] = []
    stride = math.prod(dims)
    for d in dims:
        stride //= d
        out.append(0 if d == 1 else (i // stride) % d if stride > 1 else i % d)
    return out


def block_pack(x: Tensor, layout: str, blocks: Sequence[int], name: str = "pack") -> Tensor:
    """The ``pack`` operator (:func:`compiler.graph.ops.block_pack_shape`): ``x`` in block
    layout ``layout`` with ``blocks`` ``(b, c)``, zero past ``x``'s extent on the blocked axes.

    Example:
        >>> from compiler import te
        >>> block_pack(te.placeholder((1, 3, 4, 4), "int8", name="x"), "nchw", (1, 16)).shape
        (1, 1, 4, 4, 1, 16)
    """
    from compiler.graph.ops import block_pack_shape

    b, c = (int(v) for v in blocks)
    try:
        shape = block_pack_shape(tuple(x.shape), layout, (b, c))
    except (ShapeError, ValueError) as e:
        raise ShapeError(f"{name}: {e}") from None
    zero = op.convert(0, x.dtype)

    def guarded(read: Expr, bounds: list[tuple[Expr, int, int]]) -> Expr:
        # a blocked axis whose extent is a whole number of blocks needs no bound check
        inside = [i < extent for i, extent, block in bounds if extent % block]
        return op.if_then_else(op.all_of(*inside), read, zero) if inside else read

    if layout == "nchw":

        def nchw(nb: Expr, cb: Expr, y: Expr, xx: Expr, bi: Expr, ci: Expr) -> Expr:
            n, ch = nb * b + bi, cb * c + ci
            bounds = [(n, x.shape[0], b), (ch, x.shape[1], c)]
            return guarded(x(n, ch, y, xx), bounds)

        return compute(shape, nchw, name=name, tag="injective")
    if layout == "rows":

        def rows(nb: Expr, kb: Expr, bi: Expr, ci: Expr) -> Expr:
            n, k = nb * b + bi, kb * c + ci
            return guarded(x(n, k), [(n, x.shape[0], b), (k, x.shape[1], c)])

        return compute(shape, rows, name=name, tag="injective")
    lead = tuple(x.shape[:-2])
    t_ext, k_ext = x.shape[-2:] if layout == "batch_rows" else x.shape[-2:][::-1]

    def batch(m: Expr, tb: Expr, kb: Expr, bi: Expr, ci: Expr) -> Expr:
        t, k = tb * b + bi, kb * c + ci
        at = _unflatten(m, lead)
        read = x(*at, t, k) if layout == "batch_rows" else x(*at, k, t)
        return guarded(read, [(t, t_ext, b), (k, k_ext, c)])

    return compute(shape, batch, name=name, tag="injective")


def block_unpack(p: Tensor, layout: str, shape: Sequence[int], name: str = "unpack") -> Tensor:
    """The ``unpack`` operator: the value of ``shape`` that :func:`block_pack` packed into
    ``p`` (the padding dropped).

    Example:
        >>> from compiler import te
        >>> p = te.placeholder((2, 2, 2, 4, 4), "int8", name="p")
        >>> block_unpack(p, "batch_weight", (2, 6, 5)).shape
        (2, 6, 5)
    """
    from compiler.graph.ops import block_pack_shape

    out = tuple(int(d) for d in shape)
    b, c = p.shape[-2:]
    try:
        packed = block_pack_shape(out, layout, (b, c))
    except (ShapeError, ValueError) as e:
        raise ShapeError(f"{name}: {e}") from None
    if packed != tuple(p.shape):
        raise ShapeError(f"{name}: {p.name}{p.shape} is not {out} packed in block layout "
                         f"{layout} (that is {packed})")  # fmt: skip
    if layout == "nchw":
        return compute(out, lambda n, ch, y, xx: p(n // b, ch // c, y, xx, n % b, ch % c),
                       name=name, tag="injective")  # fmt: skip
    if layout == "rows":
        return compute(out, lambda n, k: p(n // b, k // c, n % b, k % c), name=name,
                       tag="injective")  # fmt: skip
    lead = out[:-2]

    def batch(*i: Expr) -> Expr:
        flat: Expr | int = 0
        for v, d in zip(i[:-2], lead, strict=True):
            flat = flat * d + v
        t, k = i[-2:] if layout == "batch_rows" else i[-2:][::-1]
        return p(flat, t // b, k // c, t % b, k % c)

    return compute(out, batch, name=name, tag="injective")


def dilate(x: Tensor, strides: Sequence[int], name: str = "dilate") -> Tensor:
    """``strides[k] - 1`` zeros inserted between neighbours along each axis ``k`` (the input
    of a transposed convolution run as a convolution).

    Example:
        >>> from compiler import te
        >>> dilate(te.placeholder((1, 2, 3, 3), name="x"), (1, 1, 2, 2)).shape
        (1, 2, 5, 5)
    """
    if len(strides) != x.ndim or min(strides, default=1) < 1:
        raise ShapeError(f"{name}: strides {tuple(strides)} must be {x.ndim} ints >= 1")
    shape = tuple((d - 1) * s + 1 for d, s in zip(x.shape, strides, strict=True))

    def fcompute(*i: Expr) -> Expr:
        on_grid = [op.equal(v % s, 0) for v, s in zip(i, strides, strict=True) if s > 1]
        value = x(*(v if s == 1 else v // s for v, s in zip(i, strides, strict=True)))
        if not on_grid:
            return value
        return op.if_then_else(op.all_of(*on_grid), value, op.convert(0, x.dtype))

    return compute(shape, fcompute, name=name, tag="injective")
