"""Virtual-thread expansion: ``cthread`` loops become one interleaved instruction stream.

A loop bound to ``cthread`` describes ``n`` threads running the same program on their own data.
The accelerator runs one stream, so the threads are interleaved block by block (TVM's
InjectVirtualThread with ``allow_share = false``):

* every buffer allocated inside the thread loop gets one private copy per thread: the
  allocation grows ``n``-fold and thread ``t`` indexes its own region (``i + t*size``), so
  loads of one thread can fill its buffers while another thread computes on its own;
* loops, branches and lets that do not depend on the thread index stay shared; every other
  statement (a coproc block with its tokens, a token outside a block) is replicated once per
  thread, in thread order. Nested thread loops (threads on two axes) expand one after the other.

Run after synchronisation insertion, so each thread carries its own tokens; because every
block is replicated in the same thread order, the k-th token of a queue always belongs to the
same thread.

Before / after (2 threads)::

    for t in range(2) bind cthread:         allocate A: int8[2*64] @local.inp_buffer
      allocate A: int8[64] @local.inp_buffer for ko in range(4):
      for ko in range(4):                     pragma coproc_scope = 'load':  ...A[0 + ...]...
        pragma coproc_scope = 'load':         pragma coproc_scope = 'load':  ...A[64 + ...]...
          ...A[...]...                        pragma coproc_scope = 'compute': ... (thread 0)
        pragma coproc_scope = 'compute': ...  pragma coproc_scope = 'compute': ... (thread 1)

Example:
    >>> from compiler.ir import PrimFunc, NOP
    >>> expand_virtual_threads(PrimFunc("f", (), NOP)).body == NOP
    True
"""

from __future__ import annotations

from compiler.ir.buffer import Buffer
from compiler.ir.expr import BufferLoad, IntImm, Var
from compiler.ir.functor import rewrite, substitute, uses_var, visit
from compiler.ir.node import Node
from compiler.ir.stmt import (
    Allocate,
    BufferStore,
    For,
    If,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Stmt,
    seq,
)

from ..errors import VTATargetError


class _Injector:
    def __init__(self, var: Var, nthreads: int) -> None:
        self.var = var
        self.n = nthreads
        self.remap: dict[Buffer, tuple[Buffer, int]] = {}

    def stmt(self, s: Stmt) -> Stmt:
        if isinstance(s, Allocate):
            if s.buffer.ndim != 1:
                raise VTATargetError(
                    f"virtual threads: buffer {s.buffer.name} must be flattened before expansion"
                )
            size = s.buffer.size
            new = Buffer(s.buffer.name, (size * self.n,), s.buffer.dtype, s.buffer.scope)
            self.remap[s.buffer] = (new, size)
            return Allocate(new, self.stmt(s.body))
        if isinstance(s, SeqStmt):
            return seq(*(self.stmt(x) for x in s.stmts))
        if isinstance(s, For):
            if uses_var(s.min, self.var) or uses_var(s.extent, self.var):
                return self.replicate(s)
            return s.replace(body=self.stmt(s.body))
        if isinstance(s, If):
            if uses_var(s.cond, self.var):
                return self.replicate(s)
            other = None if s.else_body is None else self.stmt(s.else_body)
            return If(s.cond, self.stmt(s.then_body), other)
        if isinstance(s, LetStmt):
            if uses_var(s.value, self.var):
                return self.replicate(s)
            return s.replace(body=self.stmt(s.body))
        return self.replicate(s)

    def replicate(self, s: Stmt) -> Stmt:
        remap = self.remap
        var = self.var

        def post(n: Node) -> Node | None:
            if isinstance(n, BufferLoad | BufferStore) and n.buffer in remap:
                new, size = remap[n.buffer]
                idx = (n.indices[0] + var * size,)
                if isinstance(n, BufferLoad):
                    return BufferLoad(new, idx, n.predicate)
                return BufferStore(new, n.value, idx, n.predicate)
            return None

        body = rewrite(s, post)
        return seq(*(substitute(body, {var: IntImm(t)}) for t in range(self.n)))


def refuse_gpu_bindings(func: PrimFunc) -> PrimFunc:
    """The ``check_thread_bindings`` pass: a loop bound to a GPU thread axis has no meaning on
    the accelerator (it would run serially); refuse it, naming the stage and the loop.

    Example:
        >>> from compiler.ir import NOP
        >>> refuse_gpu_bindings(PrimFunc("f", (), NOP)).body == NOP
        True
    """

    def check(n: Node) -> None:
        if isinstance(n, For) and n.thread is not None and n.thread.is_gpu:
            stores: list[str] = []
            visit(
                n.body,
                lambda m: stores.append(m.buffer.name) if isinstance(m, BufferStore) else None,
            )
            stage = f"stage {stores[0]}: " if stores else ""
            raise VTATargetError(
                f"{stage}loop {n.var.name} is bound to the GPU axis {n.thread.tag}; the "
                "accelerator has no GPU threads (bind 'cthread' for virtual threads, or compile "
                "for a GPU target)"
            )

    visit(func.body, check)
    return func


def expand_virtual_threads(func: PrimFunc) -> PrimFunc:
    """The ``expand_virtual_threads`` pass."""

    def post(n: Node) -> Node | None:
        if isinstance(n, For) and n.thread is not None and n.thread.is_virtual:
            if not (isinstance(n.min, IntImm) and n.min.value == 0) or not isinstance(
                n.extent, IntImm
            ):
                raise VTATargetError(
                    f"virtual thread loop {n.var.name} needs a constant extent starting at 0"
                )
            return _Injector(n.var, n.extent.value).stmt(n.body)
        return None

    return func.with_body(rewrite(func.body, post))
