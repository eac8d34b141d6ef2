"""Matrix multiplication and dense layers.

Example:
    >>> from compiler import te
    >>> A = te.placeholder((8, 16), "int8", name="A")
    >>> W = te.placeholder((4, 16), "int8", name="W")
    >>> dense(A, W).shape, dense(A, W).dtype
    ((8, 4), DType('int32'))
"""

from __future__ import annotations

from compiler.errors import DTypeError, ShapeError
from compiler.ir.dtype import DType
from compiler.ir.expr import Expr
from compiler.te import compute, reduce_axis
from compiler.te import sum as te_sum
from compiler.te.tensor import Tensor
from compiler.topi.utils import accumulate_dtype


def _check(a: Tensor, b: Tensor, name: str) -> None:
    if a.ndim != 2 or b.ndim != 2:
        raise ShapeError(f"{name}: needs 2-d operands, got {a.name}{a.shape} and {b.name}{b.shape}")
    if a.dtype != b.dtype:
        raise DTypeError(f"{name}: operand dtypes differ: {a.name} {a.dtype}, {b.name} {b.dtype}")


def matmul(
    a: Tensor, b: Tensor, out_dtype: DType | str | None = None, name: str = "matmul"
) -> Tensor:
    """``C[i, j] = sum_k A[i, k] * B[k, j]`` (accumulating in ``out_dtype``)."""
    _check(a, b, name)
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2:
        raise ShapeError(f"{name}: inner dimensions differ: {a.name}{a.shape} @ {b.name}{b.shape}")
    acc = accumulate_dtype(a.dtype, out_dtype)
    r = reduce_axis(k, name="k")
    return compute(
        (m, n),
        lambda i, j: te_sum(a[i, r].astype(acc) * b[r, j].astype(acc), axis=r),
        name=name,
        tag="matmul",
    )


def dense(
    data: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    out_dtype: DType | str | None = None,
    name: str = "dense",
) -> Tensor:
    """``out[i, j] = sum_k data[i, k] * weight[j, k] (+ bias[j])``; weight is (units, in)."""
    _check(data, weight, name)
    (n, k), (units, k2) = data.shape, weight.shape
    if k != k2:
        raise ShapeError(
            f"{name}: input features differ: {data.name}{data.shape} vs weight "
            f"{weight.name}{weight.shape}"
        )
    acc = accumulate_dtype(data.dtype, out_dtype)
    r = reduce_axis(k, name="k")
    out = compute(
        (n, units),
        lambda i, j: te_sum(data[i, r].astype(acc) * weight[j, r].astype(acc), axis=r),
        name=name,
        tag="dense",
    )
    if bias is None:
        return out
    if bias.shape != (units,) or bias.dtype != acc:
        raise ShapeError(
            f"{name}: bias must be {acc}[{units}], got {bias.name}: {bias.dtype}{list(bias.shape)}"
        )
    return compute(
        (n, units), lambda i, j: out[i, j] + bias[j], name=f"{name}_bias", tag="bias_add"
    )


def dense_split_k(
    data: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    lanes: int = 16,
    name: str = "dense",
) -> Tensor:
    """``dense`` with its reduction split in two stages so a CPU can vectorize along K (a
    hand-written rfactor): ``{name}_partial[i, j, l]`` sums ``lanes`` interleaved slices of K,
    then ``{name}[i, j]`` adds the ``lanes`` partial sums. Needs float operands and
    ``K % lanes == 0``; the result equals ``dense`` up to float reassociation.

    Example:
        >>> from compiler import te
        >>> x = te.placeholder((1, 512), name="x")
        >>> w = te.placeholder((1000, 512), name="w")
        >>> y = dense_split_k(x, w, lanes=16)
        >>> y.shape, y.op.input_tensors()[0].shape
        ((1, 1000), (1, 1000, 16))
    """
    _check(data, weight, name)
    (n, k), (units, k2) = data.shape, weight.shape
    if k != k2:
        raise ShapeError(
            f"{name}: input features differ: {data.name}{data.shape} vs weight "
            f"{weight.name}{weight.shape}"
        )
    if not data.dtype.is_float or lanes < 1 or k % lanes:
        raise ShapeError(
            f"{name}: split-K dense needs float operands and K={k} a multiple of lanes={lanes}"
        )
    ko = reduce_axis(k // lanes, name="ko")
    partial = compute(
        (n, units, lanes),
        lambda i, j, lane: te_sum(
            data[i, ko * lanes + lane] * weight[j, ko * lanes + lane], axis=ko
        ),
        name=f"{name}_partial",
        tag="dense_partial",
    )
    kl = reduce_axis(lanes, name="kl")
    out = compute(
        (n, units),
        lambda i, j: te_sum(partial[i, j, kl], axis=kl),
        name=name,
        tag="dense",
        attrs={"split_k": lanes},
    )
    if bias is None:
        return out
    if bias.shape != (units,) or bias.dtype != data.dtype:
        raise ShapeError(
            f"{name}: bias must be {data.dtype}[{units}], got {bias.name}: "
            f"{bias.dtype}{list(bias.shape)}"
        )
    return compute(
        (n, units), lambda i, j: out[i, j] + bias[j], name=f"{name}_bias", tag="bias_add"
    )


def batch_matmul(
    a: Tensor, b: Tensor, out_dtype: DType | str | None = None, name: str = "matmul"
) -> Tensor:
    """numpy ``matmul``: 1-d operands are promoted (and the added axis dropped), leading axes
    broadcast. Two 2-d operands give the same tensor as :func:`matmul`.

    Example:
        >>> from compiler import te
        >>> a = te.placeholder((2, 1, 4, 8), name="a")
        >>> b = te.placeholder((3, 8, 5), name="b")
        >>> batch_matmul(a, b).shape
        (2, 3, 4, 5)
        >>> batch_matmul(te.placeholder((8,), name="v"), b).shape
        (3, 5)
    """
    from compiler.topi.elementwise import broadcast_shape

    if a.ndim == 2 and b.ndim == 2:
        return matmul(a, b, out_dtype, name)
    if a.ndim == 0 or b.ndim == 0 or (a.ndim == 1 and b.ndim == 1):
        raise ShapeError(
            f"{name}: {a.name}{a.shape} @ {b.name}{b.shape}: operands need a dimension each and "
            "two 1-d operands give a scalar (use a 2-d matmul and reshape)"
        )
    if a.dtype != b.dtype:
        raise DTypeError(f"{name}: operand dtypes differ: {a.name} {a.dtype}, {b.name} {b.dtype}")
    a_shape = (1,) + a.shape if a.ndim == 1 else a.shape
    b_shape = b.shape + (1,) if b.ndim == 1 else b.shape
    m, k = a_shape[-2:]
    k2, n = b_shape[-2:]
    if k != k2:
        raise ShapeError(f"{name}: inner dimensions differ: {a.name}{a.shape} @ {b.name}{b.shape}")
    batch = broadcast_shape(a_shape[:-2], b_shape[:-2], name)
    acc = accumulate_dtype(a.dtype, out_dtype)
    r = reduce_axis(k, name="k")
    nb = len(batch)

    def read(t: Tensor, shape: tuple[int, ...], bidx: tuple, row: Expr, col: Expr) -> Expr:
        if t.ndim == 1:  # a promoted vector: a as one row, b as one column; r indexes it
            return t[r.var]
        lead = shape[:-2]
        off = nb - len(lead)
        idx = [0 if d == 1 else bidx[off + q] for q, d in enumerate(lead)]
        return t[(*idx, row, col)]

    full = compute(
        (*batch, m, n),
        lambda *i: te_sum(
            read(a, a_shape, i[:nb], i[nb], r.var).astype(acc)
            * read(b, b_shape, i[:nb], r.var, i[nb + 1]).astype(acc),
            axis=r,
        ),
        name=name,
        tag="batch_matmul",
    )
    if a.ndim > 1 and b.ndim > 1:
        return full
    shape = batch + ((m,) if a.ndim > 1 else ()) + ((n,) if b.ndim > 1 else ())

    def squeeze(*i: Expr) -> Expr:
        idx: list[Expr | int] = list(i[:nb])
        rest = list(i[nb:])
        idx.append(rest.pop(0) if a.ndim > 1 else 0)
        idx.append(rest.pop(0) if b.ndim > 1 else 0)
        return full[tuple(idx)]

    return compute(shape, squeeze, name=f"{name}_squeeze", tag="injective")
