"""Flatten n-d buffers to 1-d, row-major (TVM's StorageFlatten).

Parameters keep their caller-visible shapes in ``PrimFunc.args``; accesses become
``buf[i*stride_0 + j*stride_1 + ...]``, the form in which accelerator passes read DMA strides
with :func:`compiler.arith.detect_linear_equation`.

Example:
    >>> from compiler.ir import Buffer, BufferStore, PrimFunc, IntImm, to_text
    >>> C = Buffer("C", (4, 8), "float32")
    >>> f = PrimFunc("f", (C,), BufferStore(C, C[1, 2], (IntImm(3), IntImm(5))))
    >>> print(to_text(flatten_buffers(f).body))
    C[29] = C[10]
"""

from __future__ import annotations

from compiler.errors import LoweringError
from compiler.ir import expr as E
from compiler.ir import stmt as S
from compiler.ir.buffer import Buffer
from compiler.ir.expr import Expr, IntImm
from compiler.ir.functor import rewrite
from compiler.ir.node import Node


def flat_index(buf: Buffer, indices: tuple[Expr, ...]) -> Expr:
    """Row-major linear index of ``indices`` into ``buf``."""
    if buf.ndim == 1:
        return indices[0]
    out: Expr = IntImm(0)
    for dim, idx in zip(buf.const_shape, indices, strict=True):
        out = out * dim + idx
    return out


def flatten_buffers(func: S.PrimFunc) -> S.PrimFunc:
    """The ``flatten_buffers`` pass."""
    flat: dict[Buffer, Buffer] = {}

    def flat_of(buf: Buffer) -> Buffer:
        new = flat.get(buf)
        if new is None:
            if buf.ndim == 1:
                new = buf
            else:
                try:
                    size = buf.size
                except Exception as exc:
                    raise LoweringError(f"cannot flatten buffer {buf.name}: {exc}") from None
                new = Buffer(buf.name, (size,), buf.dtype, buf.scope)
            flat[buf] = new
        return new

    def post(n: Node) -> Node | None:
        if isinstance(n, E.BufferLoad):
            return E.BufferLoad(flat_of(n.buffer), (flat_index(n.buffer, n.indices),), n.predicate)
        if isinstance(n, S.BufferStore):
            return S.BufferStore(
                flat_of(n.buffer), n.value, (flat_index(n.buffer, n.indices),), n.predicate
            )
        if isinstance(n, S.Allocate):
            return S.Allocate(flat_of(n.buffer), n.body)
        return None

    params = tuple(flat_of(b) for b in func.params)
    body = rewrite(func.body, post)
    return S.PrimFunc(func.name, params, body, func.args, func.attrs)
