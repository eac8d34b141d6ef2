"""CPU-specific passes: run virtual threads one after another, and reject what the CPU cannot
run (GPU thread bindings, pragmas it does not know, tensorize regions left unlowered).

Example:
    >>> from compiler.ir import For, ForKind, IntImm, PrimFunc, ThreadAxis, Var, NOP, to_text
    >>> from compiler.ir import Buffer, BufferStore
    >>> B = Buffer("B", (2,), "int32")
    >>> t = Var("t")
    >>> f = PrimFunc("f", (B,), For(t, IntImm(0), IntImm(2), ForKind.THREAD_BINDING,
    ...     BufferStore(B, t, (t,)), ThreadAxis("cthread")))
    >>> print(to_text(serialize_virtual_threads(f).body))
    for t in range(2):  # virtual_thread=cthread
      B[t] = t
"""

from __future__ import annotations

from collections.abc import Iterable

from compiler.errors import LoweringError
from compiler.ir import stmt as S
from compiler.ir.functor import rewrite, visit
from compiler.ir.node import Node
from compiler.ir.pragma import PragmaKey, pragma_key


def serialize_virtual_threads(func: S.PrimFunc) -> S.PrimFunc:
    """Virtual threads are interleavings of one instruction stream; on a CPU running them in
    sequence is a valid interleaving. The loop keeps a ``virtual_thread`` annotation."""

    def post(n: Node) -> Node | None:
        if isinstance(n, S.For) and n.thread is not None and n.thread.is_virtual:
            return S.For(
                n.var,
                n.min,
                n.extent,
                S.ForKind.SERIAL,
                n.body,
                None,
                n.annotations + (("virtual_thread", n.thread.tag),),
            )
        return None

    return func.with_body(rewrite(func.body, post))


def make_check_cpu_support(accepted_pragmas: Iterable[PragmaKey | str]):  # noqa: ANN201
    """A pass that raises on constructs the CPU backend cannot honour."""
    accepted = frozenset(pragma_key(k) for k in accepted_pragmas)

    def check_cpu_support(func: S.PrimFunc) -> S.PrimFunc:
        def fn(n: Node) -> None:
            if isinstance(n, S.For) and n.thread is not None:
                raise LoweringError(
                    f"{func.name}: loop {n.var.name} is bound to {n.thread.tag}; the CPU target "
                    "runs no GPU threads (bind it on a GPU target or remove the binding)"
                )
            if isinstance(n, S.Pragma) and n.key not in accepted:
                raise LoweringError(
                    f"{func.name}: the CPU target does not implement pragma {n.key!r} "
                    f"(accepted: {sorted(accepted)})"
                )
            if isinstance(n, S.Tensorize):
                raise LoweringError(
                    f"{func.name}: tensorize region {n.intrin.name} at stage {n.stage} was not "
                    "lowered"
                )

        visit(func.body, fn)
        return func

    return check_cpu_support
