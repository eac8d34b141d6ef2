"""The requantize epilogue of accelerator layers: shift, optional residual add, clip, cast.

Every stage runs on the accelerator's ALU in the accumulator (the residual is loaded there by
an ACC8 DMA: int8 sign-extended to int32).

Example:
    >>> from compiler import te
    >>> acc = te.placeholder((1, 2, 1, 4), "int32", name="acc")
    >>> out = requantize_epilogue(acc, shift=8, relu=True)
    >>> [t.name for t in (out, out.op.input_tensors()[0])]
    ['out', 'clip']
"""

from __future__ import annotations

from compiler import te, topi
from compiler.errors import ShapeError
from compiler.te.tensor import Tensor


def requantize_epilogue(
    acc: Tensor, *, shift: int = 0, relu: bool = False, residual: Tensor | None = None
) -> Tensor:
    """``int8(clip((acc >> shift) [+ residual], 0 if relu else -128, 127))``."""
    if acc.dtype.name != "int32":
        raise ShapeError(
            f"the epilogue requantizes an int32 accumulator, {acc.name} is {acc.dtype}"
        )
    if not 0 <= shift <= 31:
        raise ShapeError(f"{acc.name}: shift must be in [0, 31], got {shift}")
    out = topi.right_shift(acc, shift, name="shr") if shift else acc
    if residual is not None:
        if residual.shape != acc.shape or residual.dtype.name != "int8":
            raise ShapeError(
                f"{acc.name}: the residual must be int8 of the output's shape {acc.shape}, got "
                f"{residual.name}: {residual.dtype}{list(residual.shape)}"
            )
        res_acc = te.compute(
            acc.shape, lambda *i: residual(*i).astype("int32"), name="res_acc", tag="elemwise"
        )
        out = topi.add(out, res_acc, name="add")
    clip = topi.clip(out, 0 if relu else -128, 127, name="clip")
    return topi.cast(clip, "int8", name="out")
