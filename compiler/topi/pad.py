"""Constant padding, written so that accelerator passes can recognise it: an ``if_then_else``
whose condition is the conjunction of per-dimension bounds and whose else branch is the pad
value. The op carries ``tag="pad"`` and its ``pad_before``/``pad_after`` in ``attrs``.

Example:
    >>> from compiler import te
    >>> A = te.placeholder((1, 1, 4, 4), name="A")
    >>> P = pad(A, (0, 0, 1, 1), (0, 0, 1, 1))
    >>> P.shape, P.op.tag, P.op.attrs["pad_before"]
    ((1, 1, 6, 6), 'pad', (0, 0, 1, 1))
"""

from __future__ import annotations

from collections.abc import Sequence

from compiler.errors import ShapeError
from compiler.ir import op
from compiler.ir.expr import Expr
from compiler.te import compute
from compiler.te.tensor import Tensor


def pad(
    data: Tensor,
    pad_before: Sequence[int],
    pad_after: Sequence[int] | None = None,
    pad_value: float | int | Expr = 0,
    name: str = "pad",
) -> Tensor:
    """``data`` surrounded by ``pad_value``; ``pad_after`` defaults to ``pad_before``."""
    before = tuple(pad_before)
    after = tuple(pad_after) if pad_after is not None else before
    if len(before) != data.ndim or len(after) != data.ndim:
        raise ShapeError(
            f"{name}: padding has {len(before)}/{len(after)} entries but {data.name} has "
            f"{data.ndim} dimensions {data.shape}"
        )
    if any(p < 0 for p in before + after):
        raise ShapeError(f"{name}: padding must be non-negative, got {before} / {after}")
    shape = tuple(d + b + a for d, b, a in zip(data.shape, before, after, strict=True))
    value = op.convert(pad_value, data.dtype)

    def fcompute(*idx: Expr) -> Expr:
        conds = []
        src = []
        for i, b, a, d in zip(idx, before, after, data.shape, strict=True):
            if b > 0:
                conds.append(i >= b)
            if a > 0:
                conds.append(i < b + d)
            src.append(i - b)
        if not conds:
            return data(*src)
        return op.if_then_else(op.all_of(*conds), data(*src), value)

    return compute(
        shape,
        fcompute,
        name=name,
        tag="pad",
        attrs={"pad_before": before, "pad_after": after, "pad_value": pad_value},
    )
